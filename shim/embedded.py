"""The entry point of libdnsshim.so; used by the library's init code only.

The init code runs ``import shim.embedded; shim.embedded.attach()`` once,
when the runtime starts.  ``_dnsshim_cffi`` is the module that cffi has just
created for that library; :func:`attach` gives its one ``extern "Python"``
function, which the C wrappers of ``csrc/dns_shim.c`` call, its body.  It is
a function, not import-time code, so that a second library loaded into the
same Python process gets its own attachment.  All the work is in
:mod:`shim.glue`: ``dns_shim__py_process`` first frees the plans C has
finished with, then returns the plan of callbacks that C is to call; the
rare plan C cannot queue it hands to ``dns_shim__py_release``.

The C side reads a return of 0 as "cffi could not run this function", so a
success is returned as ``DNS_SHIM__PY_DONE`` (1) and the C side turns it back
into ``DNS_SHIM_OK``.  An exception escaping ``glue.process`` (it catches
everything, so this is the last line of defence) returns
``DNS_SHIM_ERR_INTERNAL`` and is reported, never 0.

Reports go to the C side's log: the program's handler, or stderr.
"""

import sys

from shim import glue
from shim.status import Status


def attach():
    from _dnsshim_cffi import ffi, lib

    done = lib.DNS_SHIM__PY_DONE

    def log(level, text):
        lib.dns_shim__log_level(level, text.encode("utf-8", "replace"))

    glue.log = log
    if lib.dns_shim__owns_interpreter():
        install_log_hooks(log)

    @ffi.def_extern(error=int(Status.ERR_INTERNAL), onerror=glue.report_unraisable)
    def dns_shim__py_process(buf, length, query, callbacks, finished, n_finished, steps, count,
                             token):
        glue.release_all(finished, n_finished)
        return glue.plan(ffi, buf, length, callbacks, steps, count, token, query) or done

    @ffi.def_extern(onerror=glue.report_unraisable)
    def dns_shim__py_release(token):
        glue.release(token)


def install_log_hooks(log):
    """In an interpreter the library started itself (and only there: a host
    Python's hooks are its own), Python's warnings and unraisable exceptions
    go to the library's log too."""
    import warnings

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
