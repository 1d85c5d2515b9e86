"""The C programs the tests and the benchmark run, built against a build of
the libraries through pipeline.compile_program, the one way this project
compiles a C program.

    python tests/cprograms.py [DIR]     every program into DIR (default: build/,
                                        where `python build_ffi.py` puts the libraries)

The programs written against c-ares's ``<ares.h>`` are built only where its
headers are installed (Debian: libc-ares-dev), each twice: with
libdnsshim_ares and with the real c-ares (the ``_cares`` twin); without them
the benchmark builds without its c-ares column.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dnsshim_build import pipeline  # noqa: E402

#: What every test program is compiled with (warnings are errors).
STRICT = ("-Wextra", "-Werror")


@dataclasses.dataclass(frozen=True)
class Program:
    """One C program: its source, the libraries of the build it links, and
    whether it needs c-ares's headers (``cares``: True) or c-ares itself
    instead of this project's libraries (``libraries`` empty)."""

    source: Path
    libraries: tuple = ("dnsshim",)
    cares: bool = False
    cflags: tuple = ()
    #: with ``cares``, whether it links c-ares too (else its headers only)
    link_cares: bool = True


@functools.lru_cache(maxsize=None)
def cares_flags() -> tuple | None:
    """(compiler flags, link flags) of c-ares, from pkg-config, or None where
    its headers are not installed."""
    found = subprocess.run(["pkg-config", "--exists", "libcares"], capture_output=True)
    if found.returncode != 0:
        return None

    def pc(option):
        return tuple(subprocess.run(["pkg-config", option, "libcares"], capture_output=True,
                                    text=True, check=True).stdout.split())
    return pc("--cflags"), pc("--libs")


_BENCH_CARES = ("-DHAVE_CARES", "-Wno-deprecated-declarations")


def programs() -> dict:
    """name -> Program: those this machine can build."""
    c, bench = HERE / "c", HERE / "bench"
    found = {
        "dnsshim-dump": Program(pipeline.TOOLS / "dnsshim-dump.c"),
        "dnsshimd": Program(pipeline.CSRC / "service" / "dnsshimd.c"),
        "dnsshim_test": Program(c / "dnsshim_test.c"),
        "dnsshim_stress": Program(c / "dnsshim_stress.c"),
        "dnsshim_bench": Program(bench / "dnsshim_bench.c"),
        "memory_limit": Program(c / "memory_limit.c"),
        "audit_edges": Program(c / "audit_edges.c"),
        # glibc's NSS loads the module: the program links nothing of ours
        "nss_lookups": Program(c / "nss_lookups.c", libraries=()),
        "nss_bench": Program(bench / "nss_bench.c", libraries=()),
    }
    if cares_flags() is not None:
        found["dnsshim_bench"] = Program(bench / "dnsshim_bench.c", cares=True,
                                         cflags=_BENCH_CARES)
        # The benchmark again, its c-ares functions answered by libdnsshim_ares
        # (linked before -lcares): its libdnsshim_ares column.
        found["dnsshim_bench_ares"] = Program(bench / "dnsshim_bench.c",
                                              ("dnsshim_ares", "dnsshim"), True, _BENCH_CARES)
        for name in ("ares_every_parser", "ares_sip_locate", "ares_addrttls"):
            found[name] = Program(c / f"{name}.c", ("dnsshim_ares",), True)
            found[f"{name}_cares"] = Program(c / f"{name}.c", (), True)
        # Both libraries in one program, ours first so that its definitions win.
        found["both_libraries"] = Program(c / "both_libraries.c", ("dnsshim_ares", "dnsshim"),
                                          True)
        # The allocators given to c-ares and to libdnsshim: beside the real
        # c-ares, and with libdnsshim_ares alone.
        found["ares_allocators"] = Program(c / "ares_allocators.c", ("dnsshim_ares", "dnsshim"),
                                           True)
        found["ares_allocators_alone"] = Program(c / "ares_allocators.c",
                                                 ("dnsshim_ares", "dnsshim"), True,
                                                 link_cares=False)
    return found


def build(out: Path, names=None, *, against: Path | None = None, cflags=()) -> dict:
    """The programs named (default: every one this machine can build) into
    out, linked against the libraries in ``against`` (default: out), each
    compiled and linked with ``cflags`` too (the sanitizers' flags,
    tests/sanitizers.py).  Returns name -> path."""
    out = Path(out)
    against = Path(against or out)
    table = programs()
    built = {}
    for name in names or table:
        program = table[name]
        cares_cflags, libs = cares_flags() if program.cares else ((), ())
        if not program.link_cares:
            libs = tuple(flag for flag in libs if not flag.startswith("-l"))
        built[name] = pipeline.compile_program(
            [program.source], out / name, against=against if program.libraries else None,
            libraries=program.libraries, cflags=(*STRICT, *program.cflags, *cares_cflags, *cflags),
            flags=libs)
    return built


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else ROOT / "build").resolve()
    for name, path in build(out).items():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
