"""Build libdnsshim and libdnsshim_ares, install them, or make a device's form.

    python build_ffi.py [--out DIR]             both libraries into DIR (default: build/)
    python build_ffi.py --prefix DIR [...]      a system install: lib/, include/, bin/ under DIR
    python build_ffi.py bundle DEST [...]       the self-contained folder for devices
    python build_ffi.py firmware DEST [...]     the firmware object

This file is the entry point only.  The build lives in ``dnsshim_build/``
beside the runtime package ``shim/``, never installed and never imported by
it: ``pipeline.py`` (the sources of truth read and checked, the toolchain,
the pipeline over the table of libraries), ``header.py`` (the one reader of
the C headers), ``install.py`` (the package's tree
and a prefix install), ``bundle.py`` and ``elf.py``, ``firmware.py`` and
``firmware_freeze.py``, ``worker.py``, ``man.py`` with ``man_roff.py`` and
``man_markdown.py``.  ``python -m shim bundle|firmware`` and
``dnsshim-config bundle|firmware`` run this file's subcommands in a source
checkout.  ``pip install .`` runs :func:`dnsshim_build.install.package_tree`
(setup.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
# The one place the build puts the source tree on sys.path: dnsshim_build and
# the dependency-free modules of shim it reads (the status table, the
# requirements, the kinds) come from this tree, before anything installed.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: The subcommands that make a device's form: the module that does it and the
#: name its usage line gives when run from here.
DEVICE_FORMS = {"bundle": "dnsshim_build.bundle", "firmware": "dnsshim_build.firmware"}


def device_form(argv: list) -> int:
    """``bundle ...`` or ``firmware ...``; ``--prog NAME`` first says which
    command the user typed (python -m shim and dnsshim-config pass theirs)."""
    import importlib

    prog = None
    if argv[:1] == ["--prog"] and len(argv) > 1:
        prog, argv = argv[1], argv[2:]
    name, rest = argv[0], argv[1:]
    module = importlib.import_module(DEVICE_FORMS[name])
    return module.main(rest, prog=prog or f"python build_ffi.py {name}")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    first = argv[2] if argv[:1] == ["--prog"] and len(argv) > 2 else (argv[0] if argv else "")
    if first in DEVICE_FORMS:
        return device_form(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", help="directory for the libraries (default: build/)")
    where.add_argument("--prefix", help="install the libraries, the header, the tools, the "
                                        "manual and their Python side under PREFIX, standing "
                                        "alone (dnsshim_build/install.py)")
    parser.add_argument("--libdir", help="with --prefix: the libraries' directory (default: "
                                         "PREFIX/lib)")
    parser.add_argument("--destdir", help="with --prefix: a staging root prepended to every "
                                          "path written (default: $DESTDIR)")
    parser.add_argument("--system", action="store_true",
                        help="with --prefix: a distribution's install (no run path to a system "
                             "directory, no manifest, the distribution's cffi backend)")
    parser.add_argument("--uninstall", action="store_true",
                        help="with --prefix: remove what the install's manifest lists")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.prefix:
        from dnsshim_build import install

        return install.main(args)
    if args.libdir or args.destdir or args.system or args.uninstall:
        parser.error("--libdir, --destdir, --system and --uninstall go with --prefix")
    from dnsshim_build import pipeline

    print(pipeline.build(Path(args.out or ROOT / "build").resolve(), verbose=args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
