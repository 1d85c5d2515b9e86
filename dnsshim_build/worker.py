"""The worker image: one private interpreter, to be instantiated many times in
one process.

A pool of interpreters needs a runtime that shares nothing with another copy
of itself, nor with the host: not CPython's globals, not its GIL, not a
symbol.  The firmware object (``firmware.py``) is that runtime already: its
own CPython, dnspython and cffi's backend frozen in, every symbol local but
the API.  Linked as a shared object with

- the library's export list (``csrc/lib/libdnsshim.map``): the API alone is
  dynamic, in its version nodes, nothing of CPython's;
- ``-Bsymbolic``: every reference binds inside the image, so no symbol of
  the host nor of another instance interposes;
- ``-z now``: resolved when loaded, nothing lazily later under a lock;

it becomes an image that can be loaded n times: copied into a memfd and
``dlopen``ed ``RTLD_NOW | RTLD_LOCAL`` by the memfd's ``/proc/self/fd`` path,
each load is a separate copy of every page of data, so a separate
interpreter with its own GIL.  The memfd must stay open while the instance
lives: the dynamic loader matches a path it has loaded before by its name,
and a closed memfd's number comes back.

The image leaves libc, libm and libpthread undefined, as the object does, so
the host's own are called.  ``tests/test_worker.py`` checks all of this;
``tests/c/pool_instances.c`` is the pool used by the tests and the
benchmark.
"""

from __future__ import annotations

from pathlib import Path

from dnsshim_build import pipeline
from dnsshim_build.firmware import LIBS, _run, nm_symbols

#: The file the image is written to, under a firmware folder's lib/.
NAME = "libdnsshim_worker.so"


def link(fw_object: Path, out: Path, cc: str = "gcc", verbose: bool = False) -> Path:
    """The worker image from a firmware object (``python -m shim firmware``)."""
    fw_object, out = Path(fw_object), Path(out)
    _run([cc, "-shared", "-o", out, "-Wl,--whole-archive", fw_object,
          "-Wl,--no-whole-archive", "-Wl,-Bsymbolic", "-Wl,-z,now", "-Wl,-z,noexecstack",
          f"-Wl,--version-script={pipeline.DNSSHIM.exports}", *LIBS.split()], verbose)
    return out


def dynamic_symbols(image: Path) -> tuple:
    """(the symbols the image defines for others, "NAME@@NODE" each; the
    symbols it needs from others).  The version nodes themselves (nm's
    absolute symbols) are neither."""
    return nm_symbols("nm", image, "-D", "--with-symbol-versions", skip_kinds=("A",))
