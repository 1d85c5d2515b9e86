"""c-ares's own test suite, ``arestest``, built from the same c-ares 1.34.9
source as the ``cares134`` fixture with its tests enabled
(tests/cares_source.py; GoogleTest and GoogleMock from Debian's libgtest-dev
and libgmock-dev), run against c-ares alone: everything but the live tests
(they query the Internet) and the container tests (not built):
``cares_source.ARESTEST_FILTER``.  That is c-ares's parser tests, its mock
DNS server tests (a server of its own on loopback, at an ephemeral port),
getaddrinfo, the event thread, the cache, the channel's options.

Measured on the project's test machine (2 cores, shared): its 1199 tests
take about 100 s in one process, mostly waiting on the mock server's
timeouts; split over eight processes at once (cares_source.ARESTEST_SHARDS,
GoogleTest's sharding) a run takes about 20 s.  Building arestest the first
time takes about 2.5 minutes (then it is cached beside the library: nothing
to build).

The same run against another ``ares_dns_parse``, whose calls from inside
libcares.so.2 go through its PLT and so reach an LD_PRELOADed definition:

    run = cares_source.run_arestest(arestest, preload=".../libdnsshim_ares.so.1")
"""

import os
import re
import subprocess

import cares_source


#: The tests the filter leaves, and how many it leaves out (the live ones).
EXPECTED_TESTS = 1199
LIVE_TESTS = 109


def _listed(program, gtest_filter):
    out = subprocess.run([str(program), "--gtest_list_tests", f"--gtest_filter={gtest_filter}"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("  ")]


def test_arestest_is_built_against_its_own_cares(arestest):
    lib = arestest.parent.parent / "lib"
    dynamic = subprocess.run(["readelf", "-dW", str(arestest)], capture_output=True, text=True,
                             check=True).stdout
    assert re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", dynamic) == ["$ORIGIN/../lib"]
    ldd = subprocess.run(["ldd", str(arestest)], capture_output=True, text=True,
                         check=True).stdout
    found = re.search(r"libcares\.so\.2 => (\S+) ", ldd)
    assert found and os.path.realpath(found.group(1)) == os.path.realpath(lib / "libcares.so.2")
    # the filter leaves out exactly the live tests, and nothing else
    everything = _listed(arestest, "*")
    kept = _listed(arestest, cares_source.ARESTEST_FILTER)
    assert len(kept) == EXPECTED_TESTS and len(everything) == EXPECTED_TESTS + LIVE_TESTS
    assert not [t for t in kept if t.startswith("Live") or "Container" in t]
    # c-ares resolves ares_dns_parse through its PLT: a preloaded one is called
    relocations = subprocess.run(["readelf", "-rW", str(lib / "libcares.so.2")],
                                 capture_output=True, text=True, check=True).stdout
    assert re.search(r"R_X86_64_JUMP_SLOT\s+\S+\s+ares_dns_parse \+ 0", relocations) \
        or "x86_64" not in subprocess.run(["uname", "-m"], capture_output=True,
                                          text=True).stdout


def test_arestest_passes_against_cares_alone(arestest):
    run = cares_source.run_arestest(arestest)
    assert (run.returncode, run.failed) == (0, []), run.output[-6000:]
    assert run.passed == EXPECTED_TESTS
    assert re.search(r"^\[ RUN      \] \S*MockChannelTest\.", run.output, re.M)
    assert not re.search(r"^\[ RUN      \] \S*\.Live", run.output, re.M)


#: A few of arestest's tests that reach ares_dns_parse from inside libcares:
#: two legacy parsers, and a query through the resolver to the mock server.
THROUGH_CARES = ("LibraryTest.ParseAReplyOK", "LibraryTest.ParseAaaaReplyOK",
                 "AddressFamilies/MockChannelTest.SockCallback/ipv4_DefaultUDP")


def test_a_preloaded_parser_is_called_from_inside_cares(arestest, cares134, tmp_path,
                                                        monkeypatch):
    refusing = cares_source.build_refusing_parser(cares134, tmp_path)
    passing = cares_source.run_arestest(arestest, preload=refusing,
                                        gtest_filter=":".join(THROUGH_CARES))
    assert (passing.returncode, passing.passed, passing.failed) == (0, 3, []), \
        passing.output[-4000:]
    monkeypatch.setenv("ARES_REFUSE_ID", "any")
    refused = cares_source.run_arestest(arestest, preload=refusing,
                                        gtest_filter=":".join(THROUGH_CARES))
    assert refused.returncode != 0 and refused.passed == 0
    assert refused.failed == sorted(THROUGH_CARES), refused.output[-4000:]


#: The tests of arestest that fail with libdnsshim_ares's ares_dns_parse
#: preloaded, each with the decision it meets (dnsshim_ares(3), "ares_dns_parse").
#: Every other test passes: the resolver, getaddrinfo, the event thread, the
#: cache, every parser test, through dnspython.
FAILS_WITH_DNSSHIM = {
    # The answer's name is 4 labels of 63 octets: 257 octets on the wire,
    # where RFC 1035 3.1 allows 255; c-ares counts its text form.
    "LibraryTest.ParseAcceptsMaxLengthName": "a name over 255 octets",
    # Both refuse a compressed SVCB target (RFC 9460 2.2): c-ares says
    # ARES_EBADNAME, dnspython's refusal of the RDATA ARES_EBADRESP.
    "LibraryTest.ParseSvcbRejectsCompressedTarget": "both refuse, another code",
    # The record written has SVCB parameters out of increasing key order,
    # which RFC 9460 2.2 makes a malformed RR: refused.
    "LibraryTest.DNSRecord": "SVCB keys out of order",
    # A reply whose COOKIE is 33 octets (RFC 7873 4: at most 40 with the
    # client's 8, a server part of 8 to 32) is malformed: the resolver retries
    # at once (a connection error) where c-ares would take the reply, drop it
    # for its cookie and wait for the timeout; the query succeeds either way.
    "AddressFamilies/MockUDPChannelTest.DNSCookieBadLen/ipv4": "a malformed cookie",
    "AddressFamilies/MockUDPChannelTest.DNSCookieBadLen/ipv6": "a malformed cookie",
}


def test_arestest_with_libdnsshim_ares_preloaded(arestest, built):
    """c-ares's own suite with every ares_dns_parse answered by dnspython
    (and the classic parsers passing to c-ares's own over it): all pass but
    FAILS_WITH_DNSSHIM, which fail as their decisions say."""
    from dnsshim_build import pipeline

    run = cares_source.run_arestest(arestest, preload=built.dir / pipeline.DNSSHIM_ARES.soname)
    assert run.failed == sorted(FAILS_WITH_DNSSHIM), run.output[-6000:]
    assert run.passed == EXPECTED_TESTS - len(FAILS_WITH_DNSSHIM)
    assert "dnsshim_ares: " not in run.output  # nothing refused for want of a c-ares
