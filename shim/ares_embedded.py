"""The entry point of libdnsshim_ares.so; used by that library's init code only.

The init code runs ``import shim.ares_embedded; shim.ares_embedded.attach()``
once, when the library first needs Python (libdnsshim, which it links, has
started the interpreter by then).  ``_dnsshim_ares_cffi`` is the module cffi
has created for this library, beside libdnsshim's ``_dnsshim_cffi`` in the
same interpreter: :func:`attach` gives its two ``extern "Python"`` functions
their bodies, which are :func:`shim.ares_glue.run` and
:func:`shim.ares_glue.release` (the classic parsers), :func:`shim.ares_dnsrec.run`
and :func:`shim.ares_dnsrec.release` (``ares_dns_parse``); both report through libdnsshim's
:class:`shim.glue.Runtime` (:func:`shim.embedded.runtime`), its log.

The C side reads a return of 0 as "cffi could not run this function": a
finished call returns ``DNSSHIM_ARES__PY_DONE`` (1), whatever the status in
the result; an exception escaping it (:func:`shim.ares_glue.run` catches
everything, so this is the last line of defence) returns
``DNSSHIM_ARES__PY_FAILED``, reported with its traceback.
"""

from shim import ares_dnsrec, ares_glue, embedded, glue


def attach():
    from _dnsshim_ares_cffi import ffi, lib

    done = lib.DNSSHIM_ARES__PY_DONE
    runtime = embedded.runtime()
    embedded.use_host_allocator(ffi)
    guarded = _limit()

    def report_unraisable(exc_type, exc, tb):
        glue.report_unraisable(exc_type, exc, tb, runtime)

    @ffi.def_extern(error=lib.DNSSHIM_ARES__PY_FAILED, onerror=report_unraisable)
    def dnsshim_ares__py_parse(kind, buf, length, offset, flags, out, token):
        if guarded is None:
            ares_glue.run(ffi, kind, buf, length, offset, flags, out, token, runtime)
            return done

        def drop():
            if token[0]:
                ares_glue.release(token[0])
                token[0] = 0
            out.have_host = out.naliases = out.naddrs = out.nitems = 0

        refused, _ = guarded(
            lambda: ares_glue.run(ffi, kind, buf, length, offset, flags, out, token, runtime),
            drop)
        if refused:
            out.status = ares_glue.ENOMEM
            out.have_host = out.naliases = out.naddrs = out.nitems = 0
        return done

    @ffi.def_extern(onerror=report_unraisable)
    def dnsshim_ares__py_release(token):
        ares_glue.release(token)

    @ffi.def_extern(error=lib.DNSSHIM_ARES__PY_FAILED, onerror=report_unraisable)
    def dnsshim_ares__py_message(buf, length, flags, out, token):
        if guarded is None:
            ares_dnsrec.run(ffi, buf, length, flags, out, token, runtime)
            return done

        def drop():
            if token[0]:
                ares_dnsrec.release(token[0])
                token[0] = 0
            out.nrrs = 0

        refused, _ = guarded(
            lambda: ares_dnsrec.run(ffi, buf, length, flags, out, token, runtime), drop)
        if refused:
            out.status = ares_dnsrec.ENOMEM
            out.nrrs = 0
        return done

    @ffi.def_extern(onerror=report_unraisable)
    def dnsshim_ares__py_message_release(token):
        ares_dnsrec.release(token)


def _limit():
    """libdnsshim's memory limit over this layer's parses (shim.embedded.guard),
    where libdnsshim counts the runtime's memory; else None.  A parse the
    limit refuses is ARES_ENOMEM, with nothing handed out."""
    from _dnsshim_cffi import lib

    return embedded.guard(lib) if lib.dns_shim__memory_accounted() else None
