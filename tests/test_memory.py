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
CPython's, the library's or cffi's backend's (the structs handed to
callbacks come from the host's allocator too): only, in a parse that
imports a dnspython module from the file system, the C library's own (opendir's, and strerror's for each file name
the import looks for in vain, which glibc 2.41 allocates).  A limit below
what a 64 KiB response needs fails that response with DNS_SHIM_ERR_NO_MEMORY
and no callback, round after round, while each small one parses and the
memory held does not grow; a limit set once the runtime runs holds at once,
and 0 lifts it; an allocator once the runtime runs is refused.
"""

import re
import subprocess
import sys

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
    never read."""
    result = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, cwd=ROOT, timeout=600)
    assert result.returncode == 0 or not check, result.stdout + result.stderr[-3000:]
    return result.stdout.splitlines()


def test_the_hosts_allocator_sees_the_runtimes_allocations(program, big_and_small):
    """What goes around the host's allocator while a message is parsed,
    by where memory_limit.c finds it comes from, each source bounded."""
    build, path = program
    big, small = big_and_small
    lines = _run(path, "count", small, big, small)
    assert lines[:2] == ["set_allocator 0", "init 0"]
    start = re.fullmatch(r"start-up: (\d+) allocations, (\d+) bytes held, (\d+) around it "
                         r"\(loader (\d+), libc (\d+), python (\d+), cffi (\d+), other (\d+)\)",
                         lines[2])
    assert start, lines[2]
    loader, libc, python, cffi, other = map(int, start.groups()[3:])
    assert loader + libc + python + cffi + other == int(start.group(3)), lines[2]
    if build != "firmware":
        # At start-up, what goes around the host is the dynamic loader's
        # (loading the runtime's compiled modules), the C library's
        # (opendir, stdio, tzset) and CPython's own few, which it keeps out of any allocator
        # on purpose (its runtime locks and path configuration strings):
        # nothing of cffi's backend, the library's or this program's
        # (CPython 3.13.5, Debian 13's, keeps 15 or 16 out: its path
        # configuration has more strings)
        assert cffi == other == 0 and python <= (10 if sys.version_info < (3, 13) else 16), \
            lines[2]
    assert int(start.group(1)) > 10000 and int(start.group(2)) > 1_000_000
    for line, message in zip(lines[3:], (small, big, small),
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
        # nothing of CPython's own, of the library's, or of cffi's backend
        # (the structs handed to callbacks come from the host's allocator)
        assert other == cffi == 0, line
        # no import, the first parse's included (every parser module was
        # imported at start-up), so nothing of the C library's
        assert libc == strerror == 0, line
    if build == "firmware":
        # CPython's runtime locks (3) and path configuration strings (7),
        # and the C library's: tzset and qsort, and what the modules every
        # parser type needs take once, at their import at start-up (the
        # time zone datetime reads, random's seed): 40 here, nothing of a
        # parse (above)
        assert int(start.group(3)) <= 48, lines[2]


#: Added to a lowest limit found by bisection before it is used again: what
#: a runtime holds varies by a few KiB from one process to the next (its
#: string hashes are seeded per process, so its dicts differ), and the
#: lowest limit of one run can be a few KiB short for the next.
SLACK = 64 * 1024


def _lowest(program, mode, big, small, *more):
    """The lowest limit from 1 MB (to 10 KB, by bisection) at which a small
    response parses, plus SLACK: there the 64 KiB one still does not,
    whatever the build's runtime holds."""
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
    return high + SLACK, _run(program, mode, high + SLACK, big, small, *more)


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
    runtime holds after the second round is at most MARGIN more than after
    the first (what a first refusal loads), and does not grow from the
    second round to the third; a small response that
    parses under one limit parses under every higher one; and the 64 KiB one
    parses once the limit is out of the way."""
    big, small = big_and_small
    program = built.dir / "memory_limit"
    limits = [1, 2**10, 2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24, 2**26]
    small_parsed = []
    for limit in limits:
        lines = _run(program, "limit", limit, big, small, 3, check=False)
        assert lines[:3] == ["set_allocator 0", "set_memory_limit 0", "init 0"], lines
        calls = [re.fullmatch(r"round \d: (big|small) (-?\d+) \((\d+) callbacks\)(.*)", line)
                 for line in lines[3:]]
        assert len(calls) == 6 and all(calls), lines
        held = []
        for m in calls:
            status, seen = int(m.group(2)), int(m.group(3))
            assert (status, seen) in ((0, 1), (-13, 0)), (limit, m.group(0))
            if m.group(1) == "small":
                assert re.fullmatch(r", held [+-]\d+ bytes since round 0", m.group(4))
                held.append(int(m.group(4).split()[2]))
        assert held[0] == 0 and held[1] <= MARGIN and held[2] <= held[1], (limit, lines)
        smalls = {int(m.group(2)) for m in calls if m.group(1) == "small"}
        assert len(smalls) == 1, (limit, lines)   # the same in every round
        small_parsed.append(smalls == {0})
    assert small_parsed == sorted(small_parsed), list(zip(limits, small_parsed))
    assert small_parsed[-1]
    lines = _run(program, "limit", 0, big, small, 1)
    assert re.fullmatch(r"round 0: big 0 \(1 callbacks\)", lines[3]), lines


#: What a refused call may leave behind, as the header says
#: (dns_shim_set_memory_limit): at most MARGIN more than before it, and, when
#: the limit left room for one, one wholly free ARENA of pymalloc's that
#: CPython keeps for the next parse; never more than the limit and MARGIN.
MARGIN = 64 * 1024
#: What the bytes held after a call may differ by between two windows of
#: pairs without anything kept: CPython's free lists and dict resizes.
GROWTH_NOISE = 4096
ARENA = 1 << 20


def _small_text(small):
    """What memory_limit.c prints of the small response's callbacks: every
    field the C side receives, from dnspython's own reading of the message."""
    import dns.message

    m = dns.message.from_wire(small.read_bytes())
    q, (rrset,) = m.question[0], m.answer
    (rdata,) = rrset
    flags = m.flags | (m.opcode() << 11) | (m.rcode() & 0xF)
    return (f"header id {m.id} flags 0x{flags:04x} opcode {m.opcode()} rcode {m.rcode()} "
            f"qd 1 an 1 ns 0 ar 0 qname {q.name.to_text(omit_final_dot=True)} "
            f"qtype {q.rdtype} qclass {q.rdclass} edns -1; "
            f"a {rrset.name.to_text(omit_final_dot=True)} type {rrset.rdtype} "
            f"class {rrset.rdclass} ttl {rrset.ttl} section 1 index 0 {rdata.address}")


def _budget(path, headroom, big, small, pairs):
    """memory_limit budget: (held before, limit, [(call, status, callbacks,
    rest, held)]), the limit the bytes held once started plus headroom."""
    result = subprocess.run([str(path), "budget", *map(str, (headroom, big, small, pairs))],
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                            cwd=ROOT, timeout=600)
    lines = result.stdout.splitlines()
    assert lines[:2] == ["set_allocator 0", "init 0"], (result.returncode, lines[:3],
                                                        result.stderr[-3000:])
    m = re.fullmatch(r"set_memory_limit 0: held (\d+), limit (-?\d+)", lines[2])
    assert m, lines[2]
    calls = []
    for line in lines[3:]:
        c = re.fullmatch(r"(first big|pair \d+: big|pair \d+: small) (-?\d+) \((\d+) "
                         r"callbacks(?:: (.*))?\)(?:: (.*))?, held (\d+)", line)
        assert c, line
        calls.append((c.group(1), int(c.group(2)), int(c.group(3)), c.group(4) or c.group(5),
                      int(c.group(6))))
    assert len(calls) == 1 + 2 * pairs, lines[-3:]
    return int(m.group(1)), int(m.group(2)), calls


def _lowest_headroom(path, big, small):
    """The lowest limit, as bytes above or below what the runtime holds once
    started (to 4 KiB, by bisection from -2 MiB to +256 KiB), at which the
    small response parses, twice, after a refused 64 KiB one, plus SLACK."""
    def small_parses(headroom):
        calls = _budget(path, headroom, big, small, 2)[2]
        return all(status == 0 for call, status, *_ in calls if call.endswith("small"))

    low, high = -2 * ARENA, 256 * 1024
    assert small_parses(high) and not small_parses(low)
    while high - low > 4096:
        middle = (low + high) // 2
        low, high = (low, middle) if small_parses(middle) else (middle, high)
    return high + SLACK


@pytest.mark.parametrize("headroom", [ARENA + MARGIN, 256 * 1024, "lowest"])
def test_a_refused_call_gives_back_what_it_took(program, big_and_small, headroom):
    """The integrator's budget: the host's allocator from the start, the
    limit what the runtime holds once started plus 1 MiB and 64 KiB (a
    small parse may need a new arena of 1 MiB, and a refused call may leave
    up to 64 KiB: at exactly 1 MiB the small one parses or not by a few
    hundred bytes of the runtime's own layout), plus 256 KiB, or the least
    at which a small response parses.  The 64 KiB response (4,094
    A records) is refused, then again in each of 100 pairs with a small one,
    which parses with its callbacks' every field as dnspython reads it.
    After each refusal the runtime holds at most the documented margin more
    than before the first, and at most the limit and that margin; from the
    10th pair to the 100th nothing grows (pairs 90-99 hold at most
    GROWTH_NOISE more than pairs 10-19 at most)."""
    big, small = big_and_small
    path = program[1]
    if headroom == "lowest":
        headroom = _lowest_headroom(path, big, small)
    before, limit, calls = _budget(path, headroom, big, small, 100)
    assert limit == before + headroom
    refused = ("DNS_SHIM_ERR_NO_MEMORY: parsing the message would take the runtime above its "
               f"memory limit of {limit} bytes (dns_shim_set_memory_limit)")
    expected = _small_text(small)
    # one arena kept at most, and only where the limit had room for it
    kept = ARENA if headroom >= ARENA else 0
    for call, status, seen, rest, held in calls:
        if call.endswith("big"):
            assert (status, seen, rest) == (-13, 0, refused), (call, status, seen, rest)
            assert held - before <= MARGIN + kept, (call, held, before, limit)
            assert held <= limit + MARGIN, (call, held, before, limit)
        else:
            assert (status, seen, rest) == (0, 2, expected), (call, status, seen, rest)
    held = {call: held for call, *_, held in calls}
    for what in ("big", "small"):
        # CPython's free lists and dict resizes move the figure by a few
        # hundred bytes either way; a leak of even 100 bytes a call would
        # add 16 KiB over these 80 pairs
        early = max(held[f"pair {i}: {what}"] for i in range(10, 20))
        late = max(held[f"pair {i}: {what}"] for i in range(90, 100))
        assert late <= early + GROWTH_NOISE, (what, early, late)


def test_a_limit_below_the_start_up(program, big_and_small):
    """Set before the first call at a limit below what start-up takes: the
    start-up is never refused (CPython cannot start on memory it is
    refused), so the first call starts the runtime and fails with
    DNS_SHIM_ERR_NO_MEMORY with no callback; with the limit lifted the same
    message parses with every field, and so does the 64 KiB one."""
    big, small = big_and_small
    for limit in (1, 1_000_000):
        lines = _run(program[1], "startup", limit, big, small)
        assert lines[:2] == ["set_allocator 0", "set_memory_limit 0"], lines
        assert re.fullmatch(
            r"first small -13 \(0 callbacks\): DNS_SHIM_ERR_NO_MEMORY: parsing the message would "
            rf"take the runtime above its memory limit of {limit} bytes "
            r"\(dns_shim_set_memory_limit\), held \d+", lines[2]), lines[2]
        assert lines[3] == "set_memory_limit 0"
        assert re.fullmatch(rf"small 0 \(2 callbacks: {re.escape(_small_text(small))}\), "
                            r"held \d+", lines[4]), lines[4]
        assert re.fullmatch(r"big 0 \(4095 callbacks\), held \d+", lines[5]), lines[5]
        assert len(lines) == 6, lines


def _every_type_records():
    import history
    from shim import rdtable

    types = sorted({t for t in history.EVERY_TYPE if rdtable.has_module(1, t)})
    return history, [(t, 1, history.rdata_of(t)) for t in types]


@pytest.fixture(scope="module", params=["once", "60k"])
def every_type(request, tmp_path_factory):
    """A response with a record of every type dnspython has a module for,
    under IN (each with its sample RDATA): once, or over and over to about
    60 KiB.  Its parse needs every parser module, the most a refused call
    could have imported and left behind."""
    history, records = _every_type_records()
    if request.param == "60k":
        one = len(history.response(*records)) - len(history.response())
        records = records * (60_000 // one)
    path = tmp_path_factory.mktemp("memory-every-type") / f"every-type-{request.param}.bin"
    path.write_bytes(history.response(*records))
    return path


def test_the_same_message_a_hundred_times_at_the_tightest_limit_adds_nothing(
        built, big_and_small, every_type):
    """At the tightest limit at which the small response parses after the
    message of every type, that message comes 100 times more, each time
    followed by the small one: it is refused with DNS_SHIM_ERR_NO_MEMORY
    every time or parsed every time, the small one parses every time, and
    what the runtime holds never passes the limit and MARGIN and does not
    grow.  A refused call keeps no module it imported: every parser module
    is imported at start-up, so none comes in under a limit, and a refused
    parse of every type cannot ratchet the runtime over its limit."""
    path = built.dir / "memory_limit"
    small = big_and_small[1]
    headroom = _lowest_headroom(path, every_type, small)
    before, limit, calls = _budget(path, headroom, every_type, small, 100)
    refused = ("DNS_SHIM_ERR_NO_MEMORY: parsing the message would take the runtime above its "
               f"memory limit of {limit} bytes (dns_shim_set_memory_limit)")
    verdicts = {(status, seen, rest) for call, status, seen, rest, _ in calls
                if call.endswith("big")}
    assert len(verdicts) == 1, verdicts
    status, seen, rest = verdicts.pop()
    assert (status, seen, rest) == (-13, 0, refused) or (status, rest) == (0, None), \
        (status, seen, rest)
    for call, status, seen, rest, held in calls:
        if call.endswith("small"):
            assert status == 0 and seen == 2, (call, status, seen, rest)
        assert held <= limit + MARGIN, (call, held, limit)
    if status == 0:
        # Parsed every time: what each parse leaves in reference cycles
        # waits for the cyclic collector (a few hundred bytes a pair, until
        # its next pass), within the limit and MARGIN as checked above.
        return
    held = {call: held for call, *_, held in calls}
    for what in ("big", "small"):
        early = max(held[f"pair {i}: {what}"] for i in range(0, 10))
        late = max(held[f"pair {i}: {what}"] for i in range(90, 100))
        assert late <= early + GROWTH_NOISE, (what, early, late)
