"""python -m shim: what a C build needs to use the installed libdnsshim, and a
dump of DNS responses.

    python -m shim --cflags | --libs | --static-libs | --pkgconfig-dir | --prefix | --version ...
    python -m shim dump [-x] [--sections answer,authority,additional] [--json]
                        [--expect-id N --expect-name NAME [--expect-type T]
                         [--expect-class C] [--match-case] [--expect-cookie HEX16]] FILE...
    python -m shim bundle DIR [--strip] [--optimize N] [--extra-module M ...]
    python -m shim firmware DIR [--types A,AAAA,...] [--target TRIPLET] [--optimize N]
                               [--python X.Y] [--parallelism N]

The first form is ``dnsshim-config`` (:mod:`shim.config`): for example
``cc app.c $(python -m shim --cflags --libs)``, or
``PKG_CONFIG_PATH=$(python -m shim --pkgconfig-dir) pkg-config --cflags --libs dnsshim``.
Run from the project's clone, where ``python -m`` imports the source tree's
``shim/``, it answers for the installed package, or says exactly why there
is none.  The second form prints responses as dnsshim-dump does, with the
Python API (shim.parse_response): no C, no cffi.  The third writes a
self-contained folder for a device, the fourth the whole parser as one
object file for a firmware image: both are the build's (build_ffi.py's
subcommands, from a source checkout).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shim import config


def dnsshim_dump() -> int:
    """The dnsshim-dump command: the C program installed in the package, or,
    where it is not (the source tree without a built library), the same from
    Python under the same name: its output, usage errors and exit statuses
    (--check then says the C program is missing)."""
    program = Path(__file__).resolve().parent / "bin" / "dnsshim-dump"
    if program.exists():
        os.execv(program, [str(program), *sys.argv[1:]])
    from shim.dump import main as dump_main
    return dump_main(sys.argv[1:], prog="dnsshim-dump")


def dnsshimd() -> int:
    """The dnsshimd command: the parse service, the C program installed in
    the package.  It has no Python form: where the package holds no such
    program (the source tree without a built library), one line says so and
    the exit status is 1."""
    program = Path(__file__).resolve().parent / "bin" / "dnsshimd"
    if program.exists():
        os.execv(program, [str(program), *sys.argv[1:]])
    print(f"dnsshimd: the package at {program.parent.parent} holds no dnsshimd program "
          f"({program} is missing): install the package again (pip install .)", file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """python -m shim [options] | python -m shim dump ..."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "dump":
        from shim.dump import main as dump_main
        return dump_main(argv[1:])
    if argv and argv[0] in ("bundle", "firmware"):
        return config.build_command(argv[0], argv[1:], f"python -m shim {argv[0]}")
    parser = config.parser("python -m shim", epilog="python -m shim dump --help: the dump; "
                           "python -m shim bundle --help: the bundle; python -m shim firmware "
                           "--help: the firmware object")
    return config.run(parser.parse_args(argv), parser)


if __name__ == "__main__":
    sys.exit(main())
