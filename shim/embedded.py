"""The entry point of libdnsshim.so; used by the library's init code only.

The init code runs ``import shim.embedded; shim.embedded.attach()`` once,
when the runtime starts.  ``_dnsshim_cffi`` is the module that cffi has just
created for that library; :func:`attach` gives its one ``extern "Python"``
function, which the C wrappers of ``csrc/lib/dns_shim.c`` call, its body.  It is
a function, not import-time code, so that a second library loaded into the
same Python process gets its own attachment.  All the work is in
:mod:`shim.glue`: ``dns_shim__py_process`` first frees the plans C has
finished with, then returns the plan of callbacks that C is to call; the
rare plan C cannot queue it hands to ``dns_shim__py_release``.

The C side reads a return of 0 as "cffi could not run this function", so a
success is returned as ``DNS_SHIM__PY_DONE`` (1) and the C side turns it back
into ``DNS_SHIM_OK``.  An exception escaping ``glue.plan`` (it catches
everything, so this is the last line of defence) returns
``DNS_SHIM_ERR_INTERNAL`` and is reported, never 0.

The glue reads how it reaches the C side from the :class:`shim.glue.Runtime`
:func:`attach` builds and passes to every call: reports go to the C side's
log (the program's handler, or stderr), a failure's reason to the calling
thread's ``dns_shim_last_error``, and where the library counts its
interpreter's memory, each parse runs under :func:`limited`.

In an interpreter the library started itself, :func:`answer_feature_checks`
first spares the start-up ``importlib.metadata`` (see there), and the cyclic
garbage collector waits until the parser is loaded, then freezes what was.
"""

import sys

from shim.status import Status


def attach():
    from _dnsshim_cffi import ffi, lib

    owns = lib.dns_shim__owns_interpreter()
    types = ffi.string(lib.dns_shim__firmware_types()).decode()
    if owns:
        # Start-up creates tens of thousands of objects and no garbage worth a
        # collection: the cyclic collector waits (4% of the start-up's
        # instructions), then leaves those objects out of every later pass.
        import gc

        gc.disable()
        try:
            answer_feature_checks()
            from shim import glue, rdtable

            if types:
                rdtable.keep_only(types.split(","))
            # hashlib (dns.tsig's, for TSIG and TKEY records) on CPython's
            # own digests, as in the firmware: OpenSSL's would allocate
            # thousands of blocks around the host's allocator and the
            # runtime's account.  This interpreter is the library's alone.
            sys.modules.setdefault("_hashlib", None)
            # Every parser module now, none on first use: what the runtime
            # holds once started is then all a parse ever keeps, so a memory
            # limit's budget of that plus a message's needs holds for good,
            # whatever came before (a refused parse imported nothing that
            # would stay, and whether a message parses under a limit never
            # depends on which types earlier messages had).
            rdtable.load_all()
            gc.freeze()
        finally:
            gc.enable()
    elif types:
        from shim import rdtable

        rdtable.keep_only(types.split(","))
    from shim import glue

    done = lib.DNS_SHIM__PY_DONE
    use_host_allocator(ffi)
    refusing, log_level, error = lib.dns_shim__memory_refusing, lib.dns_shim__log_level, glue.LOG_ERROR

    def log(level, text):
        # An unexpected failure after the host's allocator refused memory in
        # this call (an error return without an exception, say) is that
        # refusal: C says so (DNS_SHIM_ERR_NO_MEMORY), and nothing is logged.
        if level != error or not refusing():
            log_level(level, text.encode("utf-8", "replace"))

    runtime = glue.Runtime(
        log=log,
        failure=lambda text: lib.dns_shim__set_error(text.encode("utf-8", "replace")),
        memory_limit=limited(ffi, lib) if lib.dns_shim__memory_accounted() else None)
    _attached.append(runtime)
    if owns:
        install_log_hooks(runtime.log)
    runtime.log(glue.LOG_INFO, describe_runtime())

    def report_unraisable(exc_type, exc, tb):
        glue.report_unraisable(exc_type, exc, tb, runtime)

    @ffi.def_extern(error=int(Status.ERR_INTERNAL), onerror=report_unraisable)
    def dns_shim__py_process(buf, length, query, callbacks, finished, n_finished, steps, count,
                             token):
        glue.release_all(finished, n_finished)
        return glue.plan(ffi, buf, length, callbacks, steps, count, token, query, runtime) or done

    @ffi.def_extern(onerror=report_unraisable)
    def dns_shim__py_release(token):
        glue.release(token)


#: The glue.Runtime attach() built: the library's log, reasons and limit.
_attached = []


def runtime():
    """The :class:`shim.glue.Runtime` of libdnsshim in this interpreter (what
    libdnsshim_ares, which runs on it, reports through): the one attach()
    built, else the standalone one."""
    from shim import glue

    return _attached[-1] if _attached else glue.STANDALONE


def use_host_allocator(ffi):
    """Where the runtime's memory is counted, the C data the glue makes with
    ``ffi`` (libdnsshim's or libdnsshim_ares's) from the host's allocator,
    through the runtime's account and memory limit (libdnsshim's
    dns_shim__cdata_alloc and dns_shim__cdata_free), instead of cffi's
    backend's malloc (shim.cdata)."""
    from _dnsshim_cffi import lib

    from shim import cdata

    if lib.dns_shim__memory_accounted():
        cdata.use_allocator(ffi, ffi.new_allocator(alloc=lib.dns_shim__cdata_alloc,
                                                   free=lib.dns_shim__cdata_free,
                                                   should_clear_after_alloc=False))


def limited(ffi, lib):
    """The memory limit (dns_shim_set_memory_limit) of an interpreter whose
    memory the library counts, as a glue.Runtime's ``memory_limit``: while a
    limit is set, it holds in the parsing thread while the message is
    parsed, and a call it refused an allocation to fails with
    ERR_NO_MEMORY, its plan, if one was made within the reserve the
    unwinding gets, dropped (:func:`guard` says what else it gives back).
    None of this runs for a call that parsed: its cost is the limit's check
    only."""
    from shim import glue
    from shim.status import Status

    limited_now = lib.dns_shim__memory_limited
    guarded = guard(lib)
    name_cache = glue.name_cache
    no_memory = int(Status.ERR_NO_MEMORY)

    def memory_limit(plan, ffi, buf, length, callbacks, steps, count, token, query, runtime):
        if not limited_now():
            return plan(ffi, buf, length, callbacks, steps, count, token, query, runtime)

        def drop():
            if token[0]:
                glue.release(token[0])
                token[0] = 0
                count[0] = 0

        refused, status = guarded(
            lambda: plan(ffi, buf, length, callbacks, steps, count, token, query, runtime),
            drop, name_cache(ffi))
        return no_memory if refused else status

    return memory_limit


def guard(lib):
    """``guarded(call, drop, names=None) -> (refused, value)``: ``call()`` under the
    memory limit of libdnsshim's ``lib`` (an interpreter whose memory it
    counts), for every parse of the runtime, libdnsshim_ares's too
    (shim.ares_embedded).  While a limit is set it holds in the calling
    thread during the call; a call made while the runtime holds its limit or
    more is refused before it runs.  A refused call gives back what it took
    before it returns: ``drop()`` drops its result; an exception that
    escaped it (a MemoryError raised again while the first one was handled)
    is dropped with its traceback and frames, not reported (the caller says
    why the call failed); the names it added to ``names`` (libdnsshim's glue's
    name cache) are taken out again; dnspython's record-under-construction marker (a
    context variable its immutable records set while they are built) is
    cleared if the unwinding could not reset it; and the cyclic collector
    runs, so that what the failed call left in cycles goes too.  The modules
    a parse may import were all imported at start-up (attach), so it keeps
    none."""
    import gc

    limited_now, enforce = lib.dns_shim__memory_limited, lib.dns_shim__memory_enforce
    collect = gc.collect

    def guarded(call, drop, names=None):
        if not limited_now():
            return False, call()
        if names is None:
            names = {}
        cached = len(names)
        if enforce(1):  # the runtime holds its limit already: refused unrun
            return True, None
        value = None
        try:
            try:
                value = call()
            finally:
                tripped = enforce(0)
        except BaseException:  # noqa: B902 - only a refused call's is dropped
            if not tripped:
                raise
        if not tripped:
            return False, value
        drop()
        forget(names, cached)
        collect()
        return True, None

    return guarded


def forget(names, cached):
    """After a refused call: the names it added to the glue's name cache
    (a dict, in insertion order, that held ``cached`` entries before it; if
    the call emptied it, every entry is the call's), and dnspython's
    marker of the record being built, if the unwinding left it set."""
    if len(names) != cached:
        for key in list(names)[cached if len(names) > cached else 0:]:
            del names[key]
    immutable = sys.modules.get("dns._immutable_ctx")
    marker = getattr(immutable, "_in__init__", None)
    if marker is not None and marker.get() is not False:
        marker.set(False)


def describe_runtime() -> str:
    """One line: what the library runs on and where each part comes from
    (logged at info level once it has started; ``dnsshim-config --check``
    prints it)."""
    import _cffi_backend
    import dns
    import dns.version

    import shim

    def where(module):
        path = getattr(module, "__file__", None)
        if not path:
            return "built in"  # the firmware's frozen and built-in modules
        return path[:-len("/__init__.py")] if path.endswith("/__init__.py") else path

    return (f"runtime: CPython {sys.version.split()[0]} ({sys.prefix}), "
            f"dnspython {dns.version.version} ({where(dns)}), "
            f"cffi {_cffi_backend.__version__} ({where(_cffi_backend)}), "
            f"shim {shim.__version__} ({where(shim)})")


def install_log_hooks(log):
    """In an interpreter the library started itself (and only there: a host
    Python's hooks are its own), Python's warnings and unraisable exceptions
    go to the library's log too."""
    import warnings

    from shim import glue

    def showwarning(message, category, filename, lineno, file=None, line=None):
        log(glue.LOG_WARNING, warnings.formatwarning(message, category, filename, lineno,
                                                     line).rstrip())

    def unraisablehook(unraisable):
        import traceback

        text = "".join(traceback.format_exception(unraisable.exc_type, unraisable.exc_value,
                                                  unraisable.exc_traceback)).rstrip()
        what = unraisable.err_msg or "Exception ignored in"
        log(glue.LOG_ERROR, f"{what}: {unraisable.object!r}\n{text}")

    warnings.showwarning = showwarning
    sys.unraisablehook = unraisablehook


def answer_feature_checks():
    """Lets dnspython's ``dns._features`` ask for the versions of optional
    packages without importing ``importlib.metadata``.

    ``dns._features`` imports it when dnspython is imported, only so that
    ``dns.name`` can ask whether ``idna`` is installed: in a fresh interpreter
    that import (zipfile, email, pathlib, csv, ...) is a third of the start-up
    time and 4.5 MiB.  Until ``dns._features`` is imported, ``importlib.metadata``
    is a stand-in whose ``version(name)`` answers the way importlib.metadata's
    own path finder does for the usual case, from the ``NAME-VERSION.dist-info``
    folders of the directories on ``sys.path`` (a bundle holds the dist-info of
    every distribution it carries); where it cannot be sure (an ``.egg-info``,
    a zip on the path, a finder that knows distributions of its own), and for
    any other use of the module, it imports the real module and defers to it.
    dnspython itself is unchanged.  Only in an interpreter the library started:
    a host Python's modules are its own.
    """
    if "dns._features" in sys.modules or "importlib.metadata" in sys.modules:
        return
    import importlib
    import os
    import types

    stand_in = types.ModuleType("importlib.metadata", answer_feature_checks.__doc__)

    class PackageNotFoundError(ModuleNotFoundError):
        """Raised by the stand-in's version() for a distribution it knows is absent."""

    def real():
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]
            if getattr(importlib, "metadata", None) is stand_in:
                del importlib.metadata
        __import__("importlib.metadata")
        return sys.modules["importlib.metadata"]

    def normal(name):
        return name.lower().replace("-", "_").replace(".", "_")

    def version(name):
        wanted = normal(name)
        standard = {"BuiltinImporter", "FrozenImporter", "PathFinder"}
        if any(getattr(f, "__name__", type(f).__name__) not in standard
               and hasattr(f, "find_distributions") for f in sys.meta_path):
            return real().version(name)
        for entry in sys.path:
            try:
                names = os.listdir(entry or ".")
            except NotADirectoryError:
                return real().version(name)  # a zip: the real finder reads it
            except OSError:
                continue
            for item in names:
                stem, dot, suffix = item.rpartition(".")
                if suffix not in ("dist-info", "egg-info"):
                    continue
                dist, _, found = stem.partition("-")
                if normal(dist) == wanted:
                    if suffix != "dist-info" or not found:
                        return real().version(name)
                    return found
        raise PackageNotFoundError(name)

    stand_in.version = version
    stand_in.PackageNotFoundError = PackageNotFoundError
    def __getattr__(attr):
        if attr.startswith("__"):  # what repr() and tools look for: not a use
            raise AttributeError(attr)
        return getattr(real(), attr)

    stand_in.__getattr__ = __getattr__
    sys.modules["importlib.metadata"] = stand_in
    importlib.metadata = stand_in
    # dns._features keeps asking through importlib.metadata, which stays the
    # stand-in until something wants more of it than version().
    import dns._features  # noqa: F401
