"""The host's allocator and the memory limit (dns_shim_set_allocator,
dns_shim_set_memory_limit), in every build: the shared library, the
bundle's and the firmware object, each driven by tests/c/memory_limit.c.

The counting allocator set before the start sees the runtime's allocations,
and the program, which defines the C library's malloc itself, counts the
calls that went around it: in the firmware object none while a message is
parsed, and at start-up only CPython's own few (its runtime locks and path
configuration, which it allocates with libc's malloc on purpose) and the C
library's (tzset reading /etc/localtime, qsort).  In the shared library and
the bundle, a parse's are counted by where they come from, and none is
CPython's or the library's: a few of cffi's backend (the structs handed to
callbacks), and, in a parse that imports a dnspython module from the file
system, the C library's own (opendir's, and strerror's for each file name
the import looks for in vain, which glibc 2.41 allocates).  A limit below
what a 64 KiB response needs fails that response with DNS_SHIM_ERR_NO_MEMORY
and no callback, round after round, while each small one parses and the
memory held does not grow; a limit set once the runtime runs holds at once,
and 0 lifts it; an allocator once the runtime runs is refused.
"""

import importlib.machinery
import re
import subprocess

import pytest

from dnsshim_build import pipeline
from conftest import ROOT
from test_bundle import bundle  # noqa: F401 (fixture)
from test_firmware import _link, firmware  # noqa: F401 (fixture)

SOURCE = ROOT / "tests" / "c" / "memory_limit.c"


@pytest.fixture(scope="module", params=[
    "library", "bundle", pytest.param("firmware", marks=pytest.mark.python_independent)])
def program(request, built, tmp_path_factory):
    """(build, memory_limit linked with it)."""
    if request.param == "library":
        return "library", built.dir / "memory_limit"
    where = tmp_path_factory.mktemp(f"memory-{request.param}")
    if request.param == "bundle":
        root = request.getfixturevalue("bundle")[0]
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"],
                               env={"PATH": "/usr/bin:/bin",
                                    "PKG_CONFIG_PATH": str(root / "lib" / "pkgconfig")},
                               capture_output=True, text=True, check=True).stdout.split()
        return "bundle", pipeline.compile_program([SOURCE], where / "memory_limit",
                                                   flags=flags)
    return "firmware", _link(request.getfixturevalue("firmware"), SOURCE,
                             where / "memory_limit")


@pytest.fixture(scope="module")
def big_and_small(tmp_path_factory):
    return write_big_and_small(tmp_path_factory.mktemp("memory-messages"))


def write_big_and_small(d):
    """A 64 KiB response (4,094 A records) and a one-record one, in d."""
    head = bytes.fromhex("123481800001000000000000076578616d706c6503636f6d0000010001")
    record = bytes.fromhex("c00c0001000100000e100004c0000201")
    n = (65535 - len(head)) // len(record)
    big, small = d / "big.bin", d / "small.bin"
    big.write_bytes(head[:6] + n.to_bytes(2, "big") + head[8:] + record * n)
    small.write_bytes(head[:6] + b"\x00\x01" + head[8:] + record)
    return big, small


def _run(program, *args, check=True):
    """The program run in this source tree, whose shim/*.py a build must
    never read (the first parse under a limit formats a traceback)."""
    result = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=600)
    assert result.returncode == 0 or not check, result.stdout + result.stderr[-3000:]
    return result.stdout.splitlines()


#: The packages the first small message's parse imports from the file
#: system: its A record's class is dnspython's dns.rdtypes.IN.A, imported on
#: first use (shim/rdtable.py), and nothing imports dns.rdtypes or
#: dns.rdtypes.IN before it.
FIRST_PARSE_PACKAGES = 2


def _init_misses(build):
    """How many file names the path finder stats in vain for a package's
    __init__ before the one that is there: one per extension-module suffix
    of this CPython (3 in Debian 12's 3.11, 4 in Debian 13's 3.13), then, in
    the bundle, whose modules are sourceless .pyc files, the source one."""
    misses = len(importlib.machinery.EXTENSION_SUFFIXES)
    if build == "bundle":
        misses += len(importlib.machinery.SOURCE_SUFFIXES)
    return misses


def test_the_hosts_allocator_sees_the_runtimes_allocations(program, big_and_small):
    """What goes around the host's allocator while a message is parsed,
    by where memory_limit.c finds it comes from, each source bounded."""
    build, path = program
    big, small = big_and_small
    lines = _run(path, "count", small, big, small)
    assert lines[:2] == ["set_allocator 0", "init 0"]
    start = re.fullmatch(r"start-up: (\d+) allocations, (\d+) bytes held, (\d+) around it",
                         lines[2])
    assert start, lines[2]
    assert int(start.group(1)) > 10000 and int(start.group(2)) > 1_000_000
    for first, line, message in zip((True, False, False), lines[3:], (small, big, small),
                                    strict=True):
        m = re.fullmatch(rf"{message}: status 0, (\d+) allocations, (\d+) around it "
                         r"\(cffi (\d+), strerror (\d+), libc (\d+), other (\d+)\)", line)
        assert m and int(m.group(1)) > 0, line
        around, cffi, strerror, libc, other = map(int, m.groups()[1:])
        assert around == cffi + strerror + libc + other, line
        if build == "firmware":
            # cffi's backend is compiled in with its allocations routed too,
            # and the modules are frozen: nothing is read from files
            assert around == 0, line
            continue
        # nothing of CPython's own or of the library's
        assert other == 0, line
        # the ffi.new() structs of cffi's own backend: libc's (dns_shim.h)
        assert 1 <= cffi <= 10, line
        if first:
            # the imports (FIRST_PARSE_PACKAGES): the C library's opendir
            # allocates a DIR for each package's directory the path finder
            # lists; each name it stats in vain raises an OSError whose text
            # is strerror's, for which glibc 2.41 (Debian 13) allocates two
            # blocks in __dcigettext and glibc 2.36 (Debian 12) none
            assert libc == FIRST_PARSE_PACKAGES, line
            assert strerror in (0, 2 * FIRST_PARSE_PACKAGES * _init_misses(build)), line
        else:
            # the same types again: no import, nothing of the C library's
            assert libc == strerror == 0, line
    if build == "firmware":
        # CPython's runtime locks (3) and path configuration strings (7),
        # and the C library's tzset and qsort: nothing of a parse
        assert int(start.group(3)) <= 20, lines[2]


def _lowest(program, mode, big, small, *more):
    """The lowest limit from 1 MB (to 10 KB, by bisection) at which a small
    response parses: there the 64 KiB one still does not, whatever the
    build's runtime holds.  (Below what the runtime holds, a small parse
    still succeeds when it needs no block the allocator does not have yet.)"""
    def small_parses(limit):
        lines = _run(program, mode, limit, big, small, *more, check=False)
        return any(re.match(r"(round 0: )?small 0 \(1 callbacks\)", line) for line in lines)

    low, high = 1_000_000, 64_000_000
    assert small_parses(high)
    if small_parses(low):
        high = low
    while high - low > 10_000:
        middle = (low + high) // 2
        low, high = (low, middle) if small_parses(middle) else (middle, high)
    return high, _run(program, mode, high, big, small, *more)


def test_a_memory_limit_fails_one_call_not_the_library(program, big_and_small):
    """Set before the start: a 64 KiB response gets DNS_SHIM_ERR_NO_MEMORY
    with no callback, round after round; each next small one parses; the
    memory the runtime holds does not grow."""
    limit, lines = _lowest(program[1], "limit", *big_and_small, 4)
    assert lines[:2] == ["set_allocator 0", "set_memory_limit 0"]
    rounds = [line for line in lines if line.startswith("round ")]
    assert len(rounds) == 8
    for line in rounds[0::2]:
        assert re.fullmatch(r"round \d: big -13 \(0 callbacks\): DNS_SHIM_ERR_NO_MEMORY: parsing "
                            rf"the message would take the runtime above its memory limit of "
                            rf"{limit} bytes \(dns_shim_set_memory_limit\)", line), line
    for line in rounds[1::2]:
        m = re.fullmatch(r"round \d: small 0 \(1 callbacks\), held ([+-]\d+) bytes since round 0",
                         line)
        assert m and int(m.group(1)) <= 0, line


def test_once_started_a_limit_holds_and_an_allocator_is_refused(program, big_and_small):
    limit, lines = _lowest(program[1], "late", *big_and_small)
    assert lines == [
        "init 0",
        "set_allocator -12: DNS_SHIM_ERR_BAD_ARGUMENT: the runtime has started: an allocator is "
        "set before the first call that starts it",
        "set_memory_limit 0",
        f"big -13 (0 callbacks): DNS_SHIM_ERR_NO_MEMORY: parsing the message would take the "
        f"runtime above its memory limit of {limit} bytes (dns_shim_set_memory_limit)",
        "small 0 (1 callbacks)",
        "set_memory_limit 0",
        "big 0 (1 callbacks)"]


def test_the_allocators_arguments(program):
    """struct_size and the required functions are checked, with nothing
    changed by a refusal; NULL, before the start, puts libc's back."""
    assert _run(program[1], "args") == [
        "struct_size-1 -12: DNS_SHIM_ERR_BAD_ARGUMENT: the allocator's struct_size is 47, not "
        "one this library knows (48)",
        "no free -12: DNS_SHIM_ERR_BAD_ARGUMENT: the allocator's malloc, realloc and free are "
        "required (calloc may be NULL)",
        "no calloc 0: ",
        "NULL 0: ",
        "init 0",
        "allocations seen no"]


def test_a_sweep_of_limits_from_one_byte_to_64_mb(built, big_and_small):
    """At every limit, each call either parses whole (status 0, its callback
    made) or fails with DNS_SHIM_ERR_NO_MEMORY having made none; what the
    runtime holds does not grow from round to round; a small response that
    parses under one limit parses under every higher one; and the 64 KiB one
    parses once the limit is out of the way."""
    big, small = big_and_small
    program = built.dir / "memory_limit"
    limits = [1, 2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26]
    small_parsed = []
    for limit in limits:
        lines = _run(program, "limit", limit, big, small, 2, check=False)
        assert lines[:3] == ["set_allocator 0", "set_memory_limit 0", "init 0"], lines
        calls = [re.fullmatch(r"round \d: (big|small) (-?\d+) \((\d+) callbacks\)(.*)", line)
                 for line in lines[3:]]
        assert len(calls) == 4 and all(calls), lines
        for m in calls:
            status, seen = int(m.group(2)), int(m.group(3))
            assert (status, seen) in ((0, 1), (-13, 0)), (limit, m.group(0))
            if m.group(1) == "small":
                assert re.fullmatch(r", held [+-]\d+ bytes since round 0", m.group(4))
                assert int(m.group(4).split()[2]) <= 0, (limit, m.group(0))
        smalls = {int(m.group(2)) for m in calls if m.group(1) == "small"}
        assert len(smalls) == 1, (limit, lines)   # the same in both rounds
        small_parsed.append(smalls == {0})
    assert small_parsed == sorted(small_parsed), list(zip(limits, small_parsed))
    assert small_parsed[-1]
    lines = _run(program, "limit", 0, big, small, 1)
    assert re.fullmatch(r"round 0: big 0 \(1 callbacks\)", lines[3]), lines
