"""valgrind on the user's own program, with the suppressions the library
ships (csrc/lib/libdnsshim.supp; installed as share/dnsshim/libdnsshim.supp,
named by ``pkg-config --variable=valgrind_suppressions dnsshim`` and
``dnsshim-config --valgrind-suppressions``).

The README's command, every leak kind an error, over the vectors, the
malformed cases and the corpus: exit 0 and nothing left unsuppressed.  And
the suppressions hide nothing of the program's: a callback that leaks on
purpose (a block it keeps, a block it drops) is still reported, and no entry
could match an allocation of the library's own C code.
"""

import re
import subprocess

import pytest

from dnsshim_build import pipeline
import malformed
from conftest import require_program, write_messages

#: The README's command, but for the program and the suppressions' path.
VALGRIND = ["valgrind", "--leak-check=full", "--show-leak-kinds=all",
            "--errors-for-leak-kinds=all", "--error-exitcode=1"]


def _valgrind(program, *args):
    require_program("valgrind", "valgrind")
    return subprocess.run([*VALGRIND, f"--suppressions={pipeline.SUPPRESSIONS}", str(program),
                           *map(str, args)], capture_output=True, text=True, timeout=1800)


def _summary(stderr) -> dict:
    kinds = {}
    for kind in ("definitely lost", "indirectly lost", "possibly lost", "still reachable"):
        found = re.search(rf"{kind}: ([\d,]+) bytes in ([\d,]+) blocks", stderr)
        kinds[kind] = (int(found.group(1).replace(",", "")), int(found.group(2).replace(",", "")))\
            if found else (0, 0)
    return kinds


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    return write_messages(tmp_path_factory.mktemp("valgrind-user"),
                         corpus=("good", "bad", "captures", "cares-fuzzinput"))


def test_a_user_program_is_clean_with_the_shipped_suppressions(built, messages):
    result = _valgrind(built.test_prog, *messages)
    assert result.returncode == 0, result.stderr[-5000:]
    assert "ERROR SUMMARY: 0 errors from 0 contexts" in result.stderr
    assert all(v == (0, 0) for v in _summary(result.stderr).values()), _summary(result.stderr)
    assert "suppressed: " in result.stderr  # the runtime's blocks are there, and named


def test_a_leaking_callback_is_still_reported(built):
    path = built.dir / "leak-good.bin"
    path.write_bytes(malformed.GOOD)
    result = _valgrind(built.test_prog, "--leak", path)
    assert result.returncode == 1
    summary = _summary(result.stderr)
    assert summary["definitely lost"] == (32, 1)   # the block the callback dropped
    assert summary["still reachable"] == (64, 1)   # the block it kept a pointer to
    assert "ERROR SUMMARY: 2 errors from 2 contexts" in result.stderr


def test_no_suppression_could_match_the_librarys_own_code():
    """Each entry: reachable or possibly lost only; its allocation site a
    function of CPython, cffi's backend or an object of the system (the
    loader, libcrypto), or the library's accounting allocators, which
    CPython alone calls (through the hooks it is given: no other line of the
    library's C names them); never another frame of libdnsshim or of the
    program.  The one entry that is not a leak's is a read inside the
    dynamic loader, by two of its own functions."""
    text = pipeline.SUPPRESSIONS.read_text()
    entries = re.findall(r"\{\n(.*?)\n\}", text, re.S)
    assert len(entries) >= 10
    for entry in entries:
        lines = [line.strip() for line in entry.splitlines()]
        if lines[1] != "Memcheck:Leak":
            assert lines == ["dnsshim-loader-run-path", "Memcheck:Addr8", "fun:strncmp",
                             "fun:is_dst"], lines
            continue
        name, kind, kinds, frames = lines[0], lines[1], lines[2], lines[3:]
        assert name.startswith("dnsshim-") and kind == "Memcheck:Leak", name
        assert set(kinds.split(": ")[1].split(",")) <= {"reachable", "possible"}, name
        assert frames[0] == "fun:malloc" or frames[0].endswith("alloc"), name
        if name == "dnsshim-cpython-accounted":
            assert frames == ["fun:*alloc", "...", "fun:dns_shim__*alloc"]
            continue
        assert not any("dns_shim" in f or "dnsshim" in f for f in frames), name
        if "..." in frames:
            after = frames[frames.index("...") + 1:]
            assert len(after) == 1 and after[0] in ("obj:*/ld-linux*.so*", "obj:*/libcrypto.so*"), \
                name
        else:
            assert len(frames) == 2 and frames[1].startswith("fun:") and "*" not in frames[1][4:5], \
                name


def test_the_accounting_allocators_are_called_by_cpython_alone():
    """What the dnsshim-cpython-accounted suppression relies on: each
    dns_shim__*alloc function of the library is named only where it is
    defined, in the allocator tables handed to CPython, for the host's libc
    stand-ins where those are installed, and, for the runtime's C data
    (dns_shim__cdata_alloc, which cffi's backend calls for the glue), in
    the one function that defines it."""
    sources = [pipeline.CSRC / "lib" / "memory.c", pipeline.CSRC / "lib" / "dns_shim.c"]
    uses = {}
    for source in sources:
        for line in source.read_text().splitlines():
            if line.strip().startswith(("/*", "**", "*/", "//")):
                continue  # a comment names them, it does not call them
            for name in re.findall(r"\bdns_shim__\w*alloc\b", line):
                uses.setdefault(name, []).append(line.strip())
    assert set(uses) == {"dns_shim__malloc", "dns_shim__calloc", "dns_shim__realloc",
                         "dns_shim__arena_alloc", "dns_shim__libc_malloc",
                         "dns_shim__libc_calloc", "dns_shim__libc_realloc",
                         "dns_shim__cdata_alloc"}
    for name, lines in uses.items():
        for line in lines:
            assert (line.startswith(f"static void *{name}(") or
                    line.startswith(("PyMemAllocatorEx domain =", "PyObjectArenaAllocator arenas =",
                                     "dns_shim__host.")) or
                    line.startswith(f"return {name}(ctx, n);") and name == "dns_shim__malloc" or
                    line == "void *dns_shim__cdata_alloc(size_t n)" or
                    line == "return dns_shim__calloc(NULL, 1, n);"), \
                (name, line)
