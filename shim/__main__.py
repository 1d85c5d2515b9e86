"""python -m shim: what a C build needs to use the installed libdnsshim, and a
dump of DNS responses.

    python -m shim --cflags | --libs | --static-libs | --pkgconfig-dir | --includedir | --libdir
    python -m shim dump [-x] [--sections answer,authority,additional] [--json]
                        [--expect-id N --expect-name NAME [--expect-type T]
                         [--expect-class C] [--match-case] [--expect-cookie HEX16]] FILE...
    python -m shim bundle DIR [--strip] [--optimize N] [--extra-module M ...]

The first form prints paths and flags (like pybind11's --includes): for
example ``cc app.c $(python -m shim --cflags --libs)``, or
``PKG_CONFIG_PATH=$(python -m shim --pkgconfig-dir) pkg-config --cflags --libs dnsshim``.
The second prints responses as dnsshim-dump does, with the Python API
(shim.parse_response): no C, no cffi.  The third writes a self-contained
folder for a device (shim/bundle.py).
"""

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIBDIR = HERE / "lib"
INCLUDEDIR = HERE / "include"


def _require_installed():
    if not (LIBDIR / "libdnsshim.so").exists():
        sys.exit("python -m shim: libdnsshim is not installed in this package "
                 f"({LIBDIR} has no libdnsshim.so): install it with `pip install .`, or build "
                 "it with `python build_ffi.py` (build/) or `python build_ffi.py --prefix DIR`")


def flags(option: str) -> str:
    _require_installed()
    if option == "cflags":
        return f"-I{INCLUDEDIR}"
    if option == "libs":
        return f"-L{LIBDIR} -Wl,-rpath,{LIBDIR} -ldnsshim"
    if option == "static_libs":
        # The .pc file's Libs.private: libpython and what it needs.
        text = (LIBDIR / "pkgconfig" / "dnsshim.pc").read_text()
        private = next(line.split(":", 1)[1].strip() for line in text.splitlines()
                       if line.startswith("Libs.private:"))
        return f"{LIBDIR / 'libdnsshim.a'} {private}"
    return str({"pkgconfig_dir": LIBDIR / "pkgconfig", "includedir": INCLUDEDIR,
                "libdir": LIBDIR}[option])


def dnsshim_dump() -> int:
    """The dnsshim-dump command: the C program installed in the package, or,
    where it is not (an editable install), the same output from Python."""
    import os

    program = HERE / "bin" / "dnsshim-dump"
    if program.exists():
        os.execv(program, [str(program), *sys.argv[1:]])
    from shim.dump import main as dump_main
    return dump_main(sys.argv[1:])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "dump":
        from shim.dump import main as dump_main
        return dump_main(argv[1:])
    if argv and argv[0] == "bundle":
        from shim.bundle import main as bundle_main
        return bundle_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m shim", description=__doc__.splitlines()[0])
    for name, text in (("cflags", "compiler flags"), ("libs", "linker flags (shared library)"),
                       ("static-libs", "linker flags for libdnsshim.a"),
                       ("pkgconfig-dir", "the directory of dnsshim.pc, for PKG_CONFIG_PATH"),
                       ("includedir", "the directory of dns_shim.h"),
                       ("libdir", "the directory of the libraries")):
        parser.add_argument(f"--{name}", action="append_const", const=name.replace("-", "_"),
                            dest="what", help=text)
    args = parser.parse_args(argv)
    if not args.what:
        parser.print_help()
        return 2
    print(" ".join(flags(w) for w in args.what))
    return 0


if __name__ == "__main__":
    sys.exit(main())
