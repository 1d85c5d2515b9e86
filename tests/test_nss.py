"""libnss_dnsshim, glibc's NSS hosts module, through glibc as programs use it.

Every test runs its programs in a network and mount namespace of its own
(tests/nss_env.py): a private /etc whose nsswitch.conf says ``hosts: files
dns`` or ``hosts: files dnsshim``, a resolv.conf naming the responder on
127.0.0.1, and an ld.so.cache that finds the built module by its soname, as
glibc's dlopen() looks for it (RTLD_LOCAL), in a setuid program too.

- Well-formed replies: what getent (hosts, ahosts, ahostsv4, ahostsv6, by
  address) and Debian's python3 (getaddrinfo, gethostbyname_ex,
  gethostbyaddr) print, and their exit status, are byte for byte those of
  glibc's own dns module: CNAME chains, several addresses, one family,
  NXDOMAIN, NODATA, SERVFAIL, the search list and ndots, TCP after a
  truncated reply, reverse lookups through an RFC 2317 CNAME.
- Malformed replies: each class that glibc's dns module reads an address
  from is refused by the module: no address, getaddrinfo's EAI_AGAIN,
  nothing on stdout or stderr; its diagnostic line where DNS_SHIM_NSS_LOG
  sends it.
- The entry points called as glibc calls them (tests/c/nss_calls.c), the
  module's beside dns's (glibc's _nss_dns_*) in the same namespace: the
  NSS status, errno, h_errnop and the thread's h_errno for every status,
  every small buffer size (ERANGE), gethostbyaddr's special addresses and
  lengths, ``options no-aaaa``, replies near 64 KiB, the memory limit.
- Any process: threads and fork (tests/c/nss_lookups.c), valgrind on getent,
  a setuid program run by an unprivileged user with hostile DNS_SHIM_*
  variables, a runtime that cannot start (NSS_STATUS_UNAVAIL: the next
  source answers).
"""

import json
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import cprograms
import nss_env
from conftest import HOSTILE_ENV, ROOT, require_program, require_tool, setuid_root_copy
from dnsshim_build import pipeline
from nss_env import getent, records, raw, reply_wire

DNS = "hosts: files dns\n"
DNSSHIM = "hosts: files dnsshim\n"

#: The zone every comparison answers from.
ZONE = {
    **nss_env.SAMPLE_ZONE,
    ("v4.example.test", "A"): ["v4.example.test. 300 IN A 192.0.2.9"],
    ("v6.example.test", "AAAA"): ["v6.example.test. 300 IN AAAA 2001:db8::9"],
    ("nodata.example.test", "TXT"): ['nodata.example.test. 300 IN TXT "x"'],
    ("fail.example.test", "A"): records(rcode="SERVFAIL"),
    ("fail.example.test", "AAAA"): records(rcode="SERVFAIL"),
    ("big.example.test", "A"): records([f"big.example.test. 300 IN A 192.0.2.{i}"
                                        for i in range(10, 50)], tc_udp=True),
    ("big.example.test", "AAAA"): records(tc_udp=True),
    ("9.2.0.192.in-addr.arpa", "PTR"): [
        "9.2.0.192.in-addr.arpa. 300 IN CNAME 9.0/25.2.0.192.in-addr.arpa.",
        "9.0/25.2.0.192.in-addr.arpa. 300 IN PTR v4.example.test."],
    ("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa", "PTR"): [
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa. 300 IN PTR "
        "www.example.test."],
}

#: resolv.conf of the comparisons: the responder, a search list.
RESOLV = "nameserver 127.0.0.1\nsearch sub.example.test example.test\noptions timeout:1 attempts:1\n"

#: Debian's python3 resolving as a program does: each call's result or its error.
PYTHON = r"""
import json, socket, sys
out = []
for call, arg in json.loads(sys.argv[1]):
    try:
        if call == "getaddrinfo":
            r = [(f, a[0]) for f, _, _, _, a in socket.getaddrinfo(arg, None, 0,
                                                                   socket.SOCK_STREAM)]
        elif call == "gethostbyname_ex":
            r = socket.gethostbyname_ex(arg)
        else:
            r = socket.gethostbyaddr(arg)
        out.append([call, arg, "ok", repr(r)])
    except OSError as e:
        out.append([call, arg, type(e).__name__, e.errno, str(e)])
print(json.dumps(out))
"""

LOOKUPS = [("hosts", "www.example.test"), ("ahosts", "www.example.test"),
           ("ahostsv4", "www.example.test"), ("ahostsv6", "www.example.test"),
           ("hosts", "alias.example.test"), ("ahosts", "alias.example.test"),
           ("ahostsv4", "alias"), ("hosts", "v4.example.test"), ("ahosts", "v4"),
           ("ahosts", "v6.example.test"), ("hosts", "v6.example.test"),
           ("ahosts", "nodata.example.test"), ("hosts", "nodata.example.test"),
           ("ahosts", "missing.example.test"), ("hosts", "missing"),
           ("ahosts", "fail.example.test"), ("ahosts", "big.example.test"),
           ("hosts", "www.example.test."), ("ahosts", "www"),
           ("hosts", "192.0.2.1"), ("hosts", "192.0.2.9"), ("hosts", "2001:db8::1"),
           ("hosts", "192.0.2.77")]

PYTHON_CALLS = [("getaddrinfo", "www.example.test"), ("getaddrinfo", "alias"),
                ("getaddrinfo", "missing.example.test"), ("getaddrinfo", "nodata.example.test"),
                ("getaddrinfo", "fail.example.test"), ("gethostbyname_ex", "alias.example.test"),
                ("gethostbyname_ex", "v6.example.test"), ("gethostbyaddr", "192.0.2.1"),
                ("gethostbyaddr", "192.0.2.9"), ("gethostbyaddr", "2001:db8::1")]


@pytest.fixture(scope="module")
def module_dir(built):
    """The build's folder: libnss_dnsshim.so.2 beside libdnsshim.so.1."""
    assert (built.dir / "libnss_dnsshim.so.2").is_file()
    require_program("unshare", "util-linux")
    return built.dir


def _python3():
    return require_program("/usr/bin/python3", "python3")


def _commands(python=True):
    cmds = [getent(*args) for args in LOOKUPS]
    if python:
        cmds.append(nss_env.command([_python3(), "-c", PYTHON, json.dumps(PYTHON_CALLS)]))
    return cmds


def _outputs(result):
    return [(c.argv[1:3], c.returncode, c.stdout, c.stderr) for c in result.commands]


@pytest.fixture(scope="module")
def compared(module_dir, built, tmp_path_factory):
    """The same lookups with dns, with dnsshim, and with dnsshim while the
    parse service runs: (dns's run, dnsshim's run, the service's run)."""
    runs = []
    for nsswitch, service in ((DNS, None), (DNSSHIM, None), (DNSSHIM, built.service_prog)):
        runs.append(nss_env.run(tmp_path_factory.mktemp("nss"), ZONE, _commands(),
                                nsswitch=nsswitch, resolv=RESOLV,
                                library_dirs=[module_dir], timeout=240, service=service))
    return runs


def test_every_lookup_prints_what_glibc_s_dns_module_prints(compared):
    """getent's and python3's stdout, stderr and exit status, command by
    command, are dns's."""
    dns, dnsshim, _ = compared
    for ours, theirs in zip(_outputs(dnsshim), _outputs(dns)):
        assert ours == theirs


def test_through_the_parse_service_every_lookup_prints_what_dns_prints(compared):
    """The same with dnsshimd on its default socket: each reply parsed by
    the service, the programs' output dns's, command by command; the
    service answered and stopped cleanly."""
    dns, _, through = compared
    for ours, theirs in zip(_outputs(through), _outputs(dns)):
        assert ours == theirs
    assert "serving /run/dnsshim/parse.sock" in through.service_log
    assert through.service_log.rstrip().endswith("dnsshimd: stopped")


def test_the_answers_are_the_zone_s(compared):
    """What the comparison compares is real: the addresses, the canonical
    name at the end of the CNAME chain with the earlier names as aliases,
    the statuses of a missing name, NODATA and SERVFAIL, a reverse name."""
    _, dnsshim, _ = compared
    out = {tuple(c.argv[1:3]): c for c in dnsshim.commands}
    assert out[("hosts", "www.example.test")].stdout == "2001:db8::1     www.example.test\n"
    assert out[("ahostsv4", "www.example.test")].stdout == (
        "192.0.2.1       STREAM www.example.test\n192.0.2.1       DGRAM  \n"
        "192.0.2.1       RAW    \n192.0.2.2       STREAM \n192.0.2.2       DGRAM  \n"
        "192.0.2.2       RAW    \n")
    assert out[("hosts", "alias.example.test")].stdout == (
        "2001:db8::1     www.example.test alias.example.test mid.example.test\n")
    assert out[("ahostsv4", "alias")].stdout.splitlines()[0] == (
        "192.0.2.1       STREAM www.example.test")
    assert out[("hosts", "v4.example.test")].stdout == "192.0.2.9       v4.example.test\n"
    assert out[("hosts", "192.0.2.9")].stdout == "192.0.2.9       v4.example.test\n"
    assert out[("hosts", "2001:db8::1")].stdout == "2001:db8::1     www.example.test\n"
    assert len(out[("ahosts", "big.example.test")].stdout.splitlines()) == 3 * 40
    for missing in (("ahosts", "missing.example.test"), ("ahosts", "nodata.example.test"),
                    ("ahosts", "fail.example.test"), ("hosts", "192.0.2.77")):
        assert (out[missing].returncode, out[missing].stdout) == (2, ""), missing
    python = json.loads(dnsshim.commands[-1].stdout)
    by_call = {(entry[0], entry[1]): entry[2:] for entry in python}
    assert by_call[("getaddrinfo", "missing.example.test")][:2] == ["gaierror", -2]
    assert by_call[("getaddrinfo", "nodata.example.test")][:2] == ["gaierror", -5]
    assert by_call[("getaddrinfo", "fail.example.test")][:2] == ["gaierror", -3]
    assert by_call[("gethostbyname_ex", "alias.example.test")] == [
        "ok", repr(("www.example.test", ["alias.example.test", "mid.example.test"],
                    ["192.0.2.1"]))]
    assert by_call[("gethostbyaddr", "192.0.2.9")] == [
        "ok", repr(("v4.example.test", [], ["192.0.2.9"]))]


def test_the_module_asks_what_glibc_asks(compared):
    """The same questions for the search list, ndots and a final dot, and
    TCP after the truncated reply: the set of (transport, name, type) asked
    is dns's (glibc's dns sends A and AAAA together; the order may differ)."""
    dns, dnsshim, through = compared
    assert set(dnsshim.queries) == set(dns.queries)
    assert set(through.queries) == set(dns.queries)
    assert nss_env.Query("tcp", "big.example.test", "A") in dnsshim.queries
    assert nss_env.Query("udp", "www.sub.example.test", "A") in dnsshim.queries


# ---- malformed replies ----------------------------------------------------------------

def _www(answer=("www.example.test. 300 IN A 192.0.2.1",), additional=(), authority=()):
    return reply_wire("www.example.test", "A", answer=answer, additional=additional,
                      authority=authority)


def _with_bad_additional_a() -> bytes:
    wire = bytearray(_www(additional=["ns.example.test. 300 IN A 192.0.2.53"]))
    # the additional A record's RDLENGTH 4 -> 5, one octet more at the end
    wire[-6:-4] = (5).to_bytes(2, "big")
    return bytes(wire) + b"\x00"


def _with_bad_authority_name() -> bytes:
    wire = bytearray(_www(authority=["example.test. 300 IN NS ns.example.test."]))
    # the NS target's compression pointer turned forward, past the end
    wire[-2:] = b"\xc0\xff"
    return bytes(wire)


def _with_bad_txt_in_answer() -> bytes:
    wire = bytearray(reply_wire("www.example.test", "A",
                                answer=['www.example.test. 300 IN TXT "abc"',
                                        "www.example.test. 300 IN A 192.0.2.1"]))
    txt = wire.index(b"\x03abc")
    wire[txt] = 9  # a string length past its RDATA
    return bytes(wire)


def _with_two_opts() -> bytes:
    wire = bytearray(_www())
    opt = b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"
    wire[11] = 2  # ARCOUNT
    return bytes(wire) + 2 * opt


def _count(wire: bytearray, index: int, add: int) -> None:
    """A header count (0 QD, 1 AN, 2 NS, 3 AR) changed by add."""
    at = 4 + 2 * index
    wire[at:at + 2] = (int.from_bytes(wire[at:at + 2], "big") + add).to_bytes(2, "big")


def _with_long_a_beside_a_good_one() -> bytes:
    wire = bytearray(_www(answer=["www.example.test. 300 IN A 192.0.2.1",
                                  "www.example.test. 300 IN A 192.0.2.3"]))
    wire[-6:-4] = (5).to_bytes(2, "big")  # the second A's RDLENGTH: 5
    return bytes(wire) + b"\x00"


def _with_opt_in_the_answer() -> bytes:
    wire = bytearray(_www())
    _count(wire, 1, 1)
    return bytes(wire) + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x00"


def _with_pointer_loop_in_additional() -> bytes:
    wire = bytearray(_www())
    _count(wire, 3, 1)
    at = len(wire)
    return bytes(wire) + bytes([0xC0 | at >> 8, at & 0xFF]) + \
        b"\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04\xc0\x00\x02\x35"


def _with_option_past_its_opt() -> bytes:
    wire = bytearray(_www())
    _count(wire, 3, 1)
    # an OPT whose one option (COOKIE, 20 octets) runs past its 4-octet RDATA
    return bytes(wire) + b"\x00\x00\x29\x04\xd0\x00\x00\x00\x00\x00\x04\x00\x0a\x00\x14"


def _with_more_additional_records_than_bytes() -> bytes:
    wire = bytearray(_www(additional=["ns.example.test. 300 IN A 192.0.2.53"]))
    _count(wire, 3, 1)
    return bytes(wire)


#: Each class of malformed reply glibc's dns module reads an address from:
#: the reply's bytes (the ID is the query's), and the library's status.
MALFORMED = {
    "trailing octets after the last record": (_www() + b"\x00\x00", "DNS_SHIM_ERR_TRAILING_DATA"),
    "an additional record whose RDATA is too long for its type": (
        _with_bad_additional_a(), "DNS_SHIM_ERR_BAD_RDATA"),
    "an authority record whose name points past the end": (
        _with_bad_authority_name(), "DNS_SHIM_ERR_BAD_NAME"),
    "a record of another type in the answer section, malformed": (
        _with_bad_txt_in_answer(), "DNS_SHIM_ERR_BAD_RDATA"),
    "two OPT records": (_with_two_opts(), "DNS_SHIM_ERR_BAD_EDNS"),
    "an A record of five octets beside a good one": (
        _with_long_a_beside_a_good_one(), "DNS_SHIM_ERR_BAD_RDATA"),
    "an OPT record in the answer section": (_with_opt_in_the_answer(), "DNS_SHIM_ERR_BAD_EDNS"),
    "a compression pointer to itself in the additional section": (
        _with_pointer_loop_in_additional(), "DNS_SHIM_ERR_BAD_NAME"),
    "an EDNS option longer than its OPT record": (
        _with_option_past_its_opt(), "DNS_SHIM_ERR_BAD_EDNS"),
    "more additional records counted than the message holds": (
        _with_more_additional_records_than_bytes(), "DNS_SHIM_ERR_TRUNCATED"),
}


#: The malformed replies' third run: dnsshim with the parse service.
SERVICE = "service"


@pytest.fixture(scope="module")
def malformed(module_dir, built, tmp_path_factory):
    """For each class: getent ahostsv4 and hosts with dns, then with dnsshim,
    then with dnsshim and the parse service (SERVICE), and python3's
    getaddrinfo, with DNS_SHIM_NSS_LOG=stderr for the last."""
    out = {}
    for label, (wire, _) in MALFORMED.items():
        zone = {("www.example.test", "A"): raw(wire), ("www.example.test", "AAAA"): []}
        runs = {}
        for key, nsswitch, service in ((DNS, DNS, None), (DNSSHIM, DNSSHIM, None),
                                       (SERVICE, DNSSHIM, built.service_prog)):
            cmds = [getent("ahostsv4", "www.example.test"),
                    getent("hosts", "www.example.test"),
                    nss_env.command([_python3(), "-c", PYTHON,
                                     json.dumps([["getaddrinfo", "www.example.test"]])]),
                    getent("ahostsv4", "www.example.test",
                           env={**nss_env.ENV, "DNS_SHIM_NSS_LOG": "stderr"})]
            runs[key] = nss_env.run(tmp_path_factory.mktemp("nss-bad"), zone, cmds,
                                    nsswitch=nsswitch, library_dirs=[module_dir],
                                    timeout=120, service=service)
        out[label] = runs
    return out


@pytest.mark.parametrize("label", sorted(MALFORMED))
def test_glibc_s_dns_module_reads_an_address_from_it(malformed, label):
    """The reply is one that glibc 2.36's dns module accepts."""
    dns = malformed[label][DNS].commands
    assert (dns[0].returncode, dns[0].stdout.splitlines()[0]) == (
        0, "192.0.2.1       STREAM www.example.test")


@pytest.mark.parametrize("label", sorted(MALFORMED))
def test_through_the_parse_service_the_module_refuses_it_the_same(malformed, label):
    """The parse service's verdict is the library's: every command's output,
    the diagnostic line included, is the module's without the service."""
    alone, through = malformed[label][DNSSHIM], malformed[label][SERVICE]
    assert _outputs(through) == _outputs(alone)
    assert "stopped" in through.service_log


@pytest.mark.parametrize("label", sorted(MALFORMED))
def test_the_module_refuses_it(malformed, label):
    """No address, exit status 2, nothing on stdout or stderr; getaddrinfo
    says EAI_AGAIN (the refusal may be a forged or damaged datagram that
    the next try does not meet); with DNS_SHIM_NSS_LOG=stderr, one line
    naming the question and the library's status."""
    ours = malformed[label][DNSSHIM].commands
    for c in ours[:2]:
        assert (c.returncode, c.stdout, c.stderr) == (2, "", "")
    python = json.loads(ours[2].stdout)
    assert python[0][2:4] == ["gaierror", -3]
    assert ours[2].stderr == ""
    lines = ours[3].stderr.splitlines()
    status = MALFORMED[label][1]
    assert lines and all(line.startswith(
        f"libnss_dnsshim: www.example.test A: reply refused: {status}: ") for line in lines), lines
    assert ours[3].stdout == ""


# ---- any process ----------------------------------------------------------------------

def test_threads_and_a_fork_get_the_same_answers(module_dir, built, tmp_path):
    """Eight threads looking up at once, 25 times each, then the child of a
    fork taken after them: every answer the first."""
    program = built.dir / "nss_lookups"
    result = nss_env.run(tmp_path, ZONE, [nss_env.command([program, "www.example.test", 8, 25])],
                         nsswitch=DNSSHIM, library_dirs=[module_dir], timeout=180)
    c = result.commands[0]
    assert c.returncode == 0, (c.returncode, c.timed_out, c.seconds, c.stdout, c.stderr,
                               result.queries[-10:])
    lines = c.stdout.splitlines()
    assert lines[0] == "answer 2001:db8::1 192.0.2.1 192.0.2.2"
    assert lines[1:] == ["threads 200 same", "child same"]
    assert c.stderr == ""


def _plain_program(tmp_path_factory, name):
    """tests/c/NAME.c, built as nss_lookups is: it links nothing of ours
    (glibc's dns is in libc, the module is dlopen()ed by glibc)."""
    where = tmp_path_factory.mktemp(name.replace("_", "-"))
    program = pipeline.compile_program([ROOT / "tests" / "c" / f"{name}.c"], where / name,
                                       libraries=(), cflags=cprograms.STRICT)
    os.chmod(where, 0o755)
    return program


@pytest.fixture(scope="module")
def nss_cancel(tmp_path_factory):
    return _plain_program(tmp_path_factory, "nss_cancel")


@pytest.mark.parametrize("through", ["process", "service"])
def test_threads_cancelled_inside_lookups_hang_nothing_and_leak_nothing(
        module_dir, built, nss_cancel, tmp_path, through):
    """getaddrinfo is a cancellation point.  Four threads looping over
    lookups, cancelled and joined, 300 rounds: every round joins.  Forty
    threads each waiting for a reply that never comes (a name with its
    final dot: no search list, whose replies would be parsed), cancelled:
    each is joined within resolv.conf's time bound, and the process holds no
    descriptor and no more heap than with glibc's dns module, which the
    same run measures.  In the process (the runtime's lock is never left
    held by a cancelled thread) and through the parse service."""
    zone = dict(ZONE)
    zone[("silent.example.test", "A")] = nss_env.DROP
    zone[("silent.example.test", "AAAA")] = nss_env.DROP
    cmds = [nss_env.command([nss_cancel, "storm", "www.example.test", 4, 300], timeout=400),
            nss_env.command([nss_cancel, "waiting", "silent.example.test.", 40], timeout=200)]
    service = built.service_prog if through == "service" else None
    runs = {name: nss_env.run(tmp_path / name, zone, cmds, nsswitch=conf, resolv=RESOLV,
                              library_dirs=[module_dir], timeout=700,
                              service=service if name == "dnsshim" else None)
            for name, conf in (("dns", DNS), ("dnsshim", DNSSHIM))}
    outcome = {}
    for name, run in runs.items():
        storm, waiting = run.commands
        assert (storm.returncode, storm.stdout) == (0, "storm: 300 rounds\n"), \
            (name, storm.stdout, storm.stderr[-2000:])
        assert waiting.returncode == 0, (name, waiting.stdout, waiting.stderr[-2000:])
        m = re.fullmatch(r"waiting: 40 joined, descriptors ([+-]\d+), heap ([+-]\d+)\n",
                         waiting.stdout)
        assert m, (name, waiting.stdout)
        outcome[name] = int(m.group(1)), int(m.group(2))
    assert outcome["dnsshim"][0] == 0 == outcome["dns"][0], outcome
    assert outcome["dnsshim"][1] <= max(outcome["dns"][1], 0) + 16 * 1024, outcome


def test_getent_is_valgrind_clean(module_dir, tmp_path):
    """getent ahosts through the module under valgrind: no error, no
    definite or indirect leak, with the library's suppressions."""
    valgrind = require_program("valgrind", "valgrind")
    supp = ROOT / "csrc" / "lib" / "libdnsshim.supp"
    cmd = [valgrind, "--error-exitcode=99", "--leak-check=full",
           "--errors-for-leak-kinds=definite,indirect", f"--suppressions={supp}",
           "getent", "ahosts", "alias.example.test"]
    result = nss_env.run(tmp_path, ZONE, [nss_env.command(cmd)], nsswitch=DNSSHIM,
                         library_dirs=[module_dir], timeout=300)
    c = result.commands[0]
    assert c.returncode == 0, c.stderr[-3000:]
    assert c.stdout.splitlines()[0] == "2001:db8::1     STREAM www.example.test"
    assert "ERROR SUMMARY: 0 errors" in c.stderr


def test_a_setuid_program_reads_no_variable(module_dir, tmp_path):
    """A setuid-root getent run by nobody, with every DNS_SHIM_* variable
    hostile and DNS_SHIM_NSS_LOG=stderr: the answer root gets without them,
    and nothing on stderr, for a good reply and for a refused one."""
    getent_path = Path(shutil.which("getent"))
    hostile = {**nss_env.ENV, **HOSTILE_ENV, "DNS_SHIM_NSS_LOG": "stderr"}
    zone = dict(ZONE)
    zone[("bad.example.test", "A")] = raw(reply_wire(
        "bad.example.test", "A", answer=["bad.example.test. 300 IN A 192.0.2.66"]) + b"\x00")
    with setuid_root_copy(getent_path) as setuid:
        os.chmod(tmp_path, 0o755)
        cmds = [nss_env.command([setuid, "ahosts", "www.example.test"], env=hostile,
                                user=65534),
                nss_env.command([setuid, "ahostsv4", "bad.example.test"], env=hostile,
                                user=65534),
                getent("ahosts", "www.example.test"),
                nss_env.command([getent_path, "ahostsv4", "bad.example.test"], env=hostile)]
        result = nss_env.run(tmp_path, zone, cmds, nsswitch=DNSSHIM,
                             library_dirs=[module_dir], timeout=180)
    good, bad, root, root_bad = result.commands
    assert (good.returncode, good.stdout, good.stderr) == (0, root.stdout, "")
    assert root.stdout.splitlines()[0] == "2001:db8::1     STREAM www.example.test"
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "")
    # root, not in secure-execution mode, reads the variables: the library's
    # lines come where the module sends its diagnostics
    lines = root_bad.stderr.splitlines()
    assert (root_bad.returncode, root_bad.stdout) == (2, "")
    assert lines[0] == ("libnss_dnsshim: DNS_SHIM_PARALLELISM=hostile is not a number from 0 "
                        "to 64: parallelism stays 1")
    assert lines[1].startswith("libnss_dnsshim: cannot start: the python "
                               f"{HOSTILE_ENV['DNS_SHIM_PYTHON']} (from DNS_SHIM_PYTHON)")


#: The fallback the manual gives: dns answers only when the module is unavailable.
FALLBACK = "hosts: files dnsshim [!UNAVAIL=return] dns\n"


def test_a_runtime_that_cannot_start_is_unavail_and_the_next_source_answers(module_dir,
                                                                            tmp_path):
    """DNS_SHIM_PYTHON naming no python: the runtime does not start, the
    module answers NSS_STATUS_UNAVAIL, and with ``dnsshim [!UNAVAIL=return]
    dns`` glibc's dns answers; alone, no address; the reason on stderr only
    where DNS_SHIM_NSS_LOG sends it, one line naming what was tried and the
    fix.  With the runtime up, the same line refuses a reply with trailing
    octets and does not pass it on to dns; a missing name is not asked of
    dns again."""
    env = {**nss_env.ENV, "DNS_SHIM_PYTHON": "/nonexistent/bin/python3"}
    logged = {**env, "DNS_SHIM_NSS_LOG": "stderr"}
    zone = dict(ZONE)
    zone[("bad.example.test", "A")] = raw(reply_wire(
        "bad.example.test", "A", answer=["bad.example.test. 300 IN A 192.0.2.66"]) + b"\x00")
    cmds = [getent("ahostsv4", "www.example.test", env=env),
            getent("ahostsv4", "www.example.test", env=logged),
            getent("ahostsv4", "bad.example.test"), getent("ahostsv4", "missing.example.test")]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    then_dns = nss_env.run(tmp_path / "a", zone, cmds, nsswitch=FALLBACK,
                           library_dirs=[module_dir], timeout=120)
    alone = nss_env.run(tmp_path / "b", ZONE, cmds[:1], nsswitch=DNSSHIM,
                        library_dirs=[module_dir], timeout=120)
    quiet, loud, bad, missing = then_dns.commands
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert [q for q in then_dns.queries if q.qname == "bad.example.test"] == [
        nss_env.Query("udp", "bad.example.test", "A")]
    # asked once, by the module (ahostsv4: A alone), not again by dns
    assert [q.qname for q in then_dns.queries].count("missing.example.test") == 1
    assert (quiet.returncode, quiet.stderr) == (0, "")
    assert quiet.stdout.splitlines()[0] == "192.0.2.1       STREAM www.example.test"
    assert loud.stdout == quiet.stdout
    assert loud.stderr.splitlines() == [
        "libnss_dnsshim: cannot start: the python /nonexistent/bin/python3 (from "
        "DNS_SHIM_PYTHON) does not exist (moved or removed): set DNS_SHIM_PYTHON to the "
        f"python executable of a CPython {sysconfig.get_python_version()} installation, "
        "or unset it"]
    c = alone.commands[0]
    assert (c.returncode, c.stdout, c.stderr) == (2, "", "")


# ---- the README's lines ---------------------------------------------------------------

def _readme_lines() -> list:
    """The README's shell block that turns the module on, line by line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", readme, re.S)
              if "/etc/nsswitch.conf" in b and "ldconfig" in b]
    assert len(blocks) == 1
    return blocks[0].splitlines()


def test_the_readme_s_lines_turn_it_on_from_a_system_install(installed, tmp_path):
    """The README's lines, as written, in a clone with the virtualenv of
    `pip install .`, run as root in a namespace whose /etc starts with
    ``hosts: files dns`` and whose /usr/local is empty: the prefix install
    into /usr/local, ldconfig, the fallback line in nsswitch.conf; then the
    clone and the virtualenv go, and getent resolves through the module from
    /usr/local (a reply with trailing octets, which dns answers from, gives
    nothing: the module's refusal is not UNAVAIL, so dns is not asked)."""
    from test_install import source_copy

    lines = _readme_lines()
    assert lines[0].startswith(".venv/bin/python build_ffi.py --prefix /usr/local")
    assert lines[-1].startswith("getent ahosts example.org")
    clone = source_copy(tmp_path / "clone")
    # (ldconfig writes its aux-cache outside /etc: a folder of the namespace's)
    script = "\n".join(["set -e", "mount -t tmpfs nss-env-usr-local /usr/local",
                        "mount --bind \"$(mktemp -d)\" /var/cache/ldconfig", f"cd {clone}",
                        f"ln -s {installed} .venv", *lines[:-1], f"rm -r {clone}"])
    zone = dict(ZONE)
    zone[("bad.example.test", "A")] = raw(reply_wire(
        "bad.example.test", "A", answer=["bad.example.test. 300 IN A 192.0.2.66"]) + b"\x00")
    cmds = [nss_env.command(["sh", "-c", script]), getent("ahosts", "www.example.test"),
            getent("ahostsv4", "bad.example.test"),
            nss_env.command(["sh", "-c", "grep ^hosts: /etc/nsswitch.conf"]),
            nss_env.command(["sh", "-c", "ldconfig -p | grep libnss_dnsshim"])]
    (tmp_path / "run").mkdir()
    result = nss_env.run(tmp_path / "run", zone, cmds, timeout=900)
    turn_on, good, bad, line, cache = result.commands
    assert turn_on.returncode == 0, turn_on.stderr[-3000:]
    assert turn_on.stdout.splitlines()[-1] == "/usr/local/lib/libdnsshim.so.1"
    assert line.stdout == "hosts: files dnsshim [!UNAVAIL=return] dns\n"
    assert "=> /usr/local/lib/libnss_dnsshim.so.2" in cache.stdout
    assert good.returncode == 0
    assert good.stdout.splitlines()[0] == "2001:db8::1     STREAM www.example.test"
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "")
    assert [q.qname for q in result.queries].count("bad.example.test") == 1


# ---- a real server ----------------------------------------------------------------------

BIND_ZONE = """\
$TTL 300
@        IN SOA ns.example.test. hostmaster.example.test. 2026120601 3600 900 604800 300
@        IN NS  ns.example.test.
ns       IN A   127.0.0.2
www      IN A   192.0.2.1
www      IN A   192.0.2.2
www      IN AAAA 2001:db8::1
alias    IN CNAME mid
mid      IN CNAME www
v4       IN A   192.0.2.9
text     IN TXT "no address here"
"""

BIND_REVERSE = """\
$TTL 300
@        IN SOA ns.example.test. hostmaster.example.test. 2026120601 3600 900 604800 300
@        IN NS  ns.example.test.
1        IN PTR www.example.test.
9        IN CNAME 9.0/25
9.0/25   IN PTR v4.example.test.
"""

BIND_LOOKUPS = ["hosts www.example.test", "ahosts www.example.test", "ahostsv6 alias",
                "hosts alias.example.test", "ahostsv4 v4", "ahosts text.example.test",
                "ahosts missing.example.test", "hosts 192.0.2.1", "hosts 192.0.2.9",
                "ahosts big.example.test"]


def _unordered(text: str) -> tuple:
    """getent's lines as a set, ahosts' canonical name (on whichever line is
    first) apart."""
    lines = text.splitlines()
    names = {m.group(1) for m in re.finditer(r"STREAM (\S+)", text)}
    return sorted(re.sub(r"STREAM.*", "STREAM", line) for line in lines), names


def test_bind_s_replies_read_as_dns_reads_them(module_dir, tmp_path):
    """BIND 9's named, authoritative on 127.0.0.2 in the namespace, with EDNS
    asked (``options edns0``): its replies carry the authority and
    additional sections, an OPT record and a COOKIE; a big RRset goes to TCP.
    getent prints the same through the module as through dns."""
    named = shutil.which("named") or "/usr/sbin/named"
    require_tool("BIND's named", "bind9", os.access(named, os.X_OK))
    d = tmp_path / "named"
    d.mkdir()
    big = "".join(f"big      IN A   192.0.2.{i}\n" for i in range(10, 60))
    (d / "example.test.db").write_text(BIND_ZONE + big)
    (d / "reverse.db").write_text(BIND_REVERSE)
    (d / "named.conf").write_text(f"""\
options {{
    directory "{d}";
    pid-file "{d}/named.pid";
    session-keyfile "{d}/session.key";
    managed-keys-directory "{d}";
    listen-on port 53 {{ 127.0.0.2; }};
    listen-on-v6 {{ none; }};
    recursion no;
    dnssec-validation no;
    notify no;
}};
controls {{ }};
zone "example.test" {{ type primary; file "{d}/example.test.db"; }};
zone "2.0.192.in-addr.arpa" {{ type primary; file "{d}/reverse.db"; }};
""")
    script = [f"{named} -g -n 1 -c {d}/named.conf > {d}/named.log 2>&1 & named=$!",
              "for i in $(seq 100); do grep -q 'running$' "
              f"{d}/named.log && break; sleep 0.1; done"]
    for module in ("dns", "dnsshim"):
        script.append(f"printf 'hosts: files {module}\\n' > /etc/nsswitch.conf")
        for lookup in BIND_LOOKUPS:
            script.append(f"echo '== {module} {lookup}'; getent {lookup} 2>&1; echo \"rc=$?\"")
    script.append('kill "$named"; wait "$named" || true')  # stopped, and waited for
    result = nss_env.run(tmp_path, {}, [nss_env.command(["sh", "-c", "\n".join(script)])],
                         resolv="nameserver 127.0.0.2\nsearch example.test\noptions edns0\n",
                         addresses=(*nss_env.ADDRESSES, "127.0.0.2/8"),
                         library_dirs=[module_dir], timeout=300)
    out = result.commands[0].stdout
    dns, dnsshim = (dict(re.findall(rf"^== {m} (.*)\n((?:(?!== ).*\n)*)", out, re.M))
                    for m in ("dns", "dnsshim"))
    assert sorted(dns) == sorted(BIND_LOOKUPS), (out, (d / "named.log").read_text()[-2000:])
    # named rotates an RRset's records from one reply to the next (its
    # rrset-order is cyclic): the order within one is compared with the
    # tests' own responder above, here the lines as a set
    for lookup in BIND_LOOKUPS:
        assert _unordered(dnsshim[lookup]) == _unordered(dns[lookup]), lookup
    assert dns["hosts www.example.test"] == "2001:db8::1     www.example.test\nrc=0\n"
    assert dns["hosts alias.example.test"] == (
        "2001:db8::1     www.example.test alias.example.test mid.example.test\nrc=0\n")
    assert dns["hosts 192.0.2.9"] == "192.0.2.9       v4.example.test\nrc=0\n"
    assert dns["ahosts text.example.test"] == dns["ahosts missing.example.test"] == "rc=2\n"
    assert len(dns["ahosts big.example.test"].splitlines()) == 3 * 50 + 1
    assert result.queries == []  # the harness's responder was not asked


# ---- loading is not starting ------------------------------------------------------------

_LOADED = r"""
#include <dlfcn.h>
#include <dirent.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>

/* What this process holds: libdnsshim and libpython mapped or not, the
** interpreter started or not, its threads. */
static void state(const char *when, const char *libpython)
{
    void *lib = dlopen("libdnsshim.so.1", RTLD_LAZY | RTLD_NOLOAD);
    void *python = dlopen(libpython, RTLD_LAZY | RTLD_NOLOAD);
    int (*initialized)(void) = python ? (int (*)(void))dlsym(python, "Py_IsInitialized") : NULL;
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    if (d != NULL) {
        while (readdir(d) != NULL)
            threads++;
        closedir(d);
    }
    printf("%s: libdnsshim %d, libpython %d, initialized %d, threads %d\n", when, lib != NULL,
           python != NULL, initialized ? initialized() : -1, threads - 2);
}

/* argv[1]: libpython's soname; then "load" (dlopen the module, as glibc
** does when nsswitch.conf names it) or "lookup NAME" (getaddrinfo). */
int main(int argc, char **argv)
{
    state("before", argv[1]);
    if (argc == 3 && strcmp(argv[2], "load") == 0) {
        if (dlopen("libnss_dnsshim.so.2", RTLD_NOW | RTLD_LOCAL) == NULL) {
            printf("dlopen: %s\n", dlerror());
            return 1;
        }
        state("loaded", argv[1]);
    } else if (argc == 4 && strcmp(argv[2], "lookup") == 0) {
        struct addrinfo hints, *res;
        char text[64];
        int rc;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_INET;
        hints.ai_socktype = SOCK_STREAM;
        rc = getaddrinfo(argv[3], NULL, &hints, &res);
        if (rc != 0) {
            printf("getaddrinfo: %d\n", rc);
            return 1;
        }
        inet_ntop(AF_INET, &((struct sockaddr_in *)res->ai_addr)->sin_addr, text, sizeof text);
        printf("address %s\n", text);
        freeaddrinfo(res);
        state("looked up", argv[1]);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def loaded_program(tmp_path_factory):
    gcc = require_program("gcc", "gcc")
    where = tmp_path_factory.mktemp("nss-loaded")
    source, program = where / "loaded.c", where / "loaded"
    source.write_text(_LOADED)
    subprocess.run([gcc, "-Wall", "-Werror", str(source), "-o", str(program), "-ldl"],
                   check=True)
    os.chmod(where, 0o755)
    return program


def test_loading_the_module_starts_nothing(module_dir, loaded_program):
    """glibc dlopen()s the module when nsswitch.conf names it: that maps
    neither libdnsshim nor libpython, and starts no thread."""
    libpython = sysconfig.get_config_var("INSTSONAME")
    result = subprocess.run([str(loaded_program), libpython, "load"], capture_output=True,
                            text=True,
                            env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(module_dir)})
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "before: libdnsshim 0, libpython 0, initialized -1, threads 1\n"
           "loaded: libdnsshim 0, libpython 0, initialized -1, threads 1\n", "")


def test_a_lookup_the_service_parses_maps_no_python(module_dir, built, loaded_program,
                                                     tmp_path):
    """A program's getaddrinfo, its reply parsed by dnsshimd: the address,
    and the process has mapped neither libdnsshim nor libpython and made no
    thread.  Without the service the same lookup loads libdnsshim and starts
    its interpreter (the control)."""
    libpython = sysconfig.get_config_var("INSTSONAME")
    cmds = [nss_env.command([loaded_program, libpython, "lookup", "www.example.test"])]
    runs = [nss_env.run(tmp_path / name, ZONE, cmds, nsswitch=DNSSHIM, resolv=RESOLV,
                        library_dirs=[module_dir], timeout=120, service=service)
            for name, service in (("service", built.service_prog), ("alone", None))]
    through, alone = (run.commands[0] for run in runs)
    assert (through.returncode, through.stderr) == (0, "")
    assert through.stdout.splitlines() == [
        "before: libdnsshim 0, libpython 0, initialized -1, threads 1",
        "address 192.0.2.1",
        "looked up: libdnsshim 0, libpython 0, initialized -1, threads 1"]
    assert alone.stdout.splitlines()[1:] == [
        "address 192.0.2.1",
        "looked up: libdnsshim 1, libpython 1, initialized 1, threads 1"]


def test_the_pair_s_two_replies_are_in_the_service_at_once(module_dir, built, tmp_path):
    """getaddrinfo's A and AAAA replies through dnsshimd: both requests are
    sent, each on a connection of its own, before the first answer is read
    (so that the service parses the second while the first comes back),
    and the lookup gives dns's addresses."""
    require_program("strace", "strace")
    trace = tmp_path / "trace"
    cmds = [nss_env.command(["strace", "-f", "-e", "trace=connect,sendto,recvfrom", "-o",
                             trace, "getent", "ahosts", "www.example.test"])]
    run = nss_env.run(tmp_path / "run", ZONE, cmds, nsswitch=DNSSHIM, resolv=RESOLV,
                      library_dirs=[module_dir], timeout=120, service=built.service_prog)
    assert run.commands[0].returncode == 0, run.commands[0].stderr
    assert "192.0.2.1" in run.commands[0].stdout
    unix, events = set(), []
    for line in trace.read_text().splitlines():
        found = re.match(r"\d+\s+(connect|sendto|recvfrom)\((\d+), (.*)", line)
        if not found:
            continue
        call, fd, rest = found.group(1), int(found.group(2)), found.group(3)
        if call == "connect" and "parse.sock" in rest:
            unix.add(fd)
        if fd in unix and not rest.startswith("[{nlmsg"):
            events.append((call, fd))
    assert [call for call, _ in events[:4]] == ["connect", "sendto", "connect", "sendto"], events
    assert events[1][1] != events[3][1] and events[4][0] == "recvfrom", events
    assert sum(call == "sendto" for call, _ in events) == 2, events


# ---- the entry points, called as glibc calls them ----------------------------------------

@pytest.fixture(scope="module")
def nss_calls(tmp_path_factory):
    return _plain_program(tmp_path_factory, "nss_calls")


def _calls(module_dir, program, tmp_path, zone, lines, *, resolv=RESOLV, extra=(),
           env=None, timeout=120, service=None):
    """nss_calls's lines (MODULE written ``{m}``) run with ``hosts: files dns``
    and dns's entry points, then with ``hosts: files dnsshim`` and the
    module's, each in a namespace of its own with the same zone and
    resolv.conf, then the ``extra`` commands; with service, the module's
    run has the parse service (nss_env.run's).  Returns {"dns": (outcomes,
    result), "dnsshim": ...}: each line's outcome (what nss_calls printed
    after " -> "), in order, and the run."""
    out = {}
    for module, nsswitch in (("dns", DNS), ("dnsshim", DNSSHIM)):
        text = "".join(line.format(m=module) + "\n" for line in lines)
        cmds = [nss_env.command([program], stdin=text, env=env), *extra]
        (tmp_path / module).mkdir(parents=True, exist_ok=True)
        result = nss_env.run(tmp_path / module, zone, cmds, nsswitch=nsswitch, resolv=resolv,
                             library_dirs=[module_dir], timeout=timeout,
                             service=service if module == "dnsshim" else None)
        c = result.commands[0]
        assert (c.returncode, c.stderr) == (0, ""), (module, c.returncode, c.stderr[-2000:],
                                                     c.stdout[-2000:])
        printed = c.stdout.splitlines()
        assert len(printed) == len(lines), (module, printed[-5:])
        outcomes = []
        for line, got in zip(lines, printed):
            asked, _, outcome = got.partition(" -> ")
            assert asked == line.format(m=module)
            outcomes.append(outcome)
        out[module] = (outcomes, result)
    return out


def _same_outcomes(runs, lines) -> dict:
    """Asserts that every line gave dnsshim what it gave dns; returns
    {line: dns's outcome}."""
    dns, dnsshim = runs["dns"][0], runs["dnsshim"][0]
    differ = [(line, theirs, ours) for line, theirs, ours in zip(lines, dns, dnsshim)
              if theirs != ours]
    assert differ == []
    return dict(zip(lines, dns))


#: Replies beside ZONE's for the comparisons of the entry points: a reply
#: refused by the server, an answer without an address, a missing PTR, a
#: SERVFAIL, a REFUSED, a NODATA and an answer without a PTR for reverse
#: names, ::1's PTR and 0.0.0.1's (which ::1 must not ask), 10 A and 40
#: AAAA records.
CALLS_ZONE = {
    **ZONE,
    ("refused.example.test", "A"): records(rcode="REFUSED"),
    ("refused.example.test", "AAAA"): records(rcode="REFUSED"),
    ("cname.example.test", "A"): ["cname.example.test. 60 IN CNAME nowhere.example.test."],
    ("cname.example.test", "AAAA"): ["cname.example.test. 60 IN CNAME nowhere.example.test."],
    ("5.2.0.192.in-addr.arpa", "PTR"): records(rcode="SERVFAIL"),
    ("6.2.0.192.in-addr.arpa", "PTR"): records(rcode="REFUSED"),
    ("7.2.0.192.in-addr.arpa", "TXT"): ['7.2.0.192.in-addr.arpa. 60 IN TXT "no name"'],
    ("8.2.0.192.in-addr.arpa", "PTR"): [
        "8.2.0.192.in-addr.arpa. 60 IN CNAME 8.0/25.2.0.192.in-addr.arpa."],
    ("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa", "PTR"): [
        "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa. 300 IN PTR "
        "localhost6.example.test."],
    ("1.0.0.0.in-addr.arpa", "PTR"): ["1.0.0.0.in-addr.arpa. 300 IN PTR wrong.example.test."],
    ("0.0.0.0.in-addr.arpa", "PTR"): ["0.0.0.0.in-addr.arpa. 300 IN PTR zero.example.test."],
    ("many.example.test", "A"): [f"many.example.test. 300 IN A 192.0.2.{i}"
                                 for i in range(10, 20)],
    ("many.example.test", "AAAA"): [f"many.example.test. 300 IN AAAA 2001:db8::{i:x}"
                                    for i in range(100, 140)],
}

#: Python's resolver calls in the order given, in one process, each with
#: its error: gethostbyaddr's herror is the thread's h_errno, as the module
#: left it (CPython reads h_errno, not the h_errnop it passed).
PYTHON_FAMILIES = r"""
import json, socket, sys
out = []
for call, arg, family in json.loads(sys.argv[1]):
    try:
        if call == "getaddrinfo":
            r = [a[0] for _, _, _, _, a in socket.getaddrinfo(arg, 80, family,
                                                               socket.SOCK_STREAM)]
        elif call == "gethostbyname_ex":
            r = socket.gethostbyname_ex(arg)
        else:
            r = socket.gethostbyaddr(arg)
        out.append([call, arg, family, "ok", repr(r)])
    except OSError as e:
        out.append([call, arg, family, type(e).__name__, e.errno, str(e)])
print(json.dumps(out))
"""


def _python_families(calls):
    return nss_env.command([_python3(), "-c", PYTHON_FAMILIES, json.dumps(calls)])


def test_hostaliases_names_what_a_single_label_stands_for_as_dns_reads_it(module_dir,
                                                                          tmp_path):
    """HOSTALIASES (a user's file of "alias name" lines), read for a name of
    one label as glibc's res_hostalias reads it: the alias matched without
    case, its name's final dot kept or not, a line of one word passed
    over, the last line of one word (no newline) ending the file, a longer
    name and one not in the file searched as usual.
    getent's output and the queries asked are dns's; the module links
    nothing of libresolv where glibc has its resolver in libc."""
    aliases = ("short www.example.test\nALIAS2 v4.example.test.\n"
               "lonely\nafter v6.example.test\nend")
    env = {**nss_env.ENV, "HOSTALIASES": "/etc/hostaliases"}
    names = ["short", "Short", "alias2", "after", "end", "nothere", "short.example.test"]
    cmds = [getent("ahosts", name, env=env) for name in names]
    runs = []
    for nsswitch in (DNS, DNSSHIM):
        (tmp_path / str(len(runs))).mkdir()
        runs.append(nss_env.run(tmp_path / str(len(runs)), ZONE, cmds, nsswitch=nsswitch,
                                resolv=RESOLV, library_dirs=[module_dir],
                                etc_files={"hostaliases": aliases}))
    dns, dnsshim = runs
    assert _outputs(dnsshim) == _outputs(dns)
    assert dnsshim.queries == dns.queries
    out = {c.argv[2]: c for c in dnsshim.commands}
    assert out["Short"].stdout.splitlines()[0] == "2001:db8::1     STREAM www.example.test"
    assert out["alias2"].stdout.splitlines()[0] == "192.0.2.9       STREAM v4.example.test"
    assert out["after"].stdout.splitlines()[0] == "2001:db8::9     STREAM v6.example.test"
    assert out["end"].returncode == 2  # the last line, no name and no newline: not an alias
    needed = subprocess.run(["readelf", "-d", str(module_dir / "libnss_dnsshim.so.2")],
                            capture_output=True, text=True, check=True).stdout
    libc = subprocess.run(["gcc", "-print-file-name=libc.so.6"], capture_output=True,
                          text=True).stdout.strip()
    libc_symbols = subprocess.run(["nm", "-D", "--defined-only", libc], capture_output=True,
                                  text=True).stdout
    if " res_nsend@@GLIBC_2.34" in libc_symbols:  # glibc's resolver in libc
        assert "libresolv" not in needed, needed


#: The A and AAAA pair's cases: the AAAA reply first (the A one held back),
#: an error reply beside an answer, the first reply to come deciding the
#: verdict on an empty pair (AAAA's FORMERR before A's NXDOMAIN), the A
#: question lost while the AAAA one is answered, a truncated reply (the
#: pair again over TCP).
PAIR_ZONE = {
    **ZONE,
    ("late.example.test", "A"): records(["late.example.test. 300 IN A 192.0.2.30"],
                                        delay_udp=0.3),
    ("late.example.test", "AAAA"): ["late.example.test. 300 IN AAAA 2001:db8::30"],
    ("half.example.test", "A"): ["half.example.test. 300 IN A 192.0.2.31"],
    ("half.example.test", "AAAA"): records(rcode="SERVFAIL"),
    ("halfv6.example.test", "A"): records(rcode="REFUSED"),
    ("halfv6.example.test", "AAAA"): records(["halfv6.example.test. 300 IN AAAA 2001:db8::31"],
                                             delay_udp=0.2),
    ("order.example.test", "A"): records(rcode="NXDOMAIN", delay_udp=0.3),
    ("order.example.test", "AAAA"): records(rcode="FORMERR"),
    ("lost.example.test", "A"): nss_env.DROP,
    ("lost.example.test", "AAAA"): ["lost.example.test. 300 IN AAAA 2001:db8::32"],
}


def _port_pattern(result) -> list:
    """Each UDP query's client port as the index of the first query from
    that port: which questions shared a socket.  (Over TCP dns sends the
    pair on one connection, the module on one each.)"""
    first = {}
    return [first.setdefault(r.port, i)
            for i, r in enumerate(r for r in result.received if r.transport == "udp")]


def test_a_and_aaaa_are_asked_at_once_as_dns_asks_them(module_dir, nss_calls, tmp_path):
    """getaddrinfo and gethostbyname4_r ask the A and AAAA questions at
    once, as dns does (glibc's send_dg): both datagrams from one socket
    before either reply, the replies taken in the order they come.  The
    same queries in the same order from the same sockets as dns (the module
    used to ask A, wait for its reply, then ask AAAA from a new socket), and
    the same outcome in each case of PAIR_ZONE: the AAAA reply first, an
    error reply beside an answer, the first reply deciding an empty pair's
    verdict, a lost A question (dns then asks one question at a time, and
    fails the lookup: it does not give the AAAA address alone), a
    truncated reply (both again over TCP)."""
    names = ["www.example.test", "late.example.test", "half.example.test",
             "halfv6.example.test", "order.example.test", "lost.example.test",
             "big.example.test"]
    lines = []
    for name in names:
        lines += [f"name4 {{m}} {name} 4096", f"getaddrinfo {name} unspec"]
    runs = _calls(module_dir, nss_calls, tmp_path, PAIR_ZONE, lines)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    assert dnsshim.queries == dns.queries
    assert _port_pattern(dnsshim) == _port_pattern(dns)
    # each lookup's pair from one socket: www's A and AAAA share a port
    www = [r.port for r in dnsshim.received if dns_name(r.wire) == "www.example.test"]
    assert www == [www[0], www[0], www[2], www[2]] and www[0] != www[2]
    # what dns gives, and the module now
    assert got["getaddrinfo late.example.test unspec"] == (
        "2 canon=late.example.test [2001:db8::30,192.0.2.30]")
    assert got["getaddrinfo half.example.test unspec"] == (
        "1 canon=half.example.test [192.0.2.31]")
    assert got["getaddrinfo halfv6.example.test unspec"] == (
        "1 canon=halfv6.example.test [2001:db8::31]")
    assert got["name4 {m} order.example.test 4096"].startswith("NOTFOUND ")
    assert "h_errnop=3 " in got["name4 {m} order.example.test 4096"]  # NO_RECOVERY
    assert got["name4 {m} lost.example.test 4096"] == "NOTFOUND errno=EAGAIN h_errnop=2 h_errno=2"
    # the lost question taught the thread one question at a time, as it
    # taught dns: the truncated A reply's AAAA question was then not sent
    # over UDP
    big = [(q.transport, q.qtype) for q in dnsshim.queries if q.qname == "big.example.test"]
    assert len(big) >= 6 and big == [("udp", "A"), ("tcp", "A"), ("tcp", "AAAA")] * (len(big) // 3)


@pytest.mark.parametrize("servers", [
    "nameserver 127.0.0.9\nnameserver ::1\n",
    "nameserver ::1\nnameserver 127.0.0.1\noptions rotate\n",
], ids=["refused_then_ipv6", "rotate"])
def test_the_pair_goes_to_the_servers_as_dns_sends_it(module_dir, nss_calls, tmp_path,
                                                      servers):
    """The pair's own transport over resolv.conf's servers: a server that
    refuses (no one listens on 127.0.0.9: the ICMP error ends its turn at
    once) then an IPv6 server, and two servers with rotate: the outcomes
    are dns's, and so are the servers asked (with rotate, the set)."""
    lines = []
    for name in ("www.example.test", "missing.example.test", "fail.example.test"):
        lines += [f"name4 {{m}} {name} 4096", f"getaddrinfo {name} unspec"]
    resolv = servers + "search example.test\noptions timeout:1 attempts:1\n"
    runs = _calls(module_dir, nss_calls, tmp_path, ZONE, lines, resolv=resolv)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    assert got["getaddrinfo www.example.test unspec"] == (
        "3 canon=www.example.test [2001:db8::1,192.0.2.1,192.0.2.2]")
    if "rotate" in servers:
        assert {r.server for r in dnsshim.received} == {r.server for r in dns.received}
        assert sorted(dnsshim.queries) == sorted(dns.queries)
    else:
        assert [r.server for r in dnsshim.received] == [r.server for r in dns.received]
        assert {r.server for r in dnsshim.received} == {"::1"}
        assert dnsshim.queries == dns.queries


def test_the_name_server_a_program_set_in_res_is_asked_as_dns_asks_it(module_dir, nss_calls,
                                                                       tmp_path):
    """A program that sets its own name server in the thread's _res after
    res_init (as glibc's own resolver tests do, support/resolv_test.c):
    resolv.conf names one where no one listens (127.0.0.9), the program the
    responder's (127.0.0.1).  Before, every lookup fails as dns's fails;
    after, each entry point and getaddrinfo give what dns gives, asked of
    the program's server alone (the module used to read resolv.conf for
    each lookup and never see it)."""
    before = ["name4 {m} alias.example.test 4096", "getaddrinfo alias.example.test unspec"]
    after = ["name4 {m} www.example.test 4096", "name3 {m} alias.example.test inet 1024",
             "name2 {m} www.example.test inet6 1024", "addr2 {m} 192.0.2.1 inet 4 1024",
             "getaddrinfo www.example.test unspec", "getaddrinfo missing.example.test unspec"]
    lines = [*before, "server 127.0.0.1", *after]
    resolv = "nameserver 127.0.0.9\nsearch example.test\noptions timeout:1 attempts:1\n"
    runs = _calls(module_dir, nss_calls, tmp_path, ZONE, lines, resolv=resolv)
    got = _same_outcomes(runs, lines)
    assert got["server 127.0.0.1"] == "0"
    assert got["name4 {m} alias.example.test 4096"].startswith("UNAVAIL ")
    assert got["getaddrinfo www.example.test unspec"] == (
        "3 canon=www.example.test [2001:db8::1,192.0.2.1,192.0.2.2]")
    assert got["addr2 {m} 192.0.2.1 inet 4 1024"].startswith("SUCCESS ")
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    assert {r.server for r in dnsshim.received} == {"127.0.0.1"} == \
        {r.server for r in dns.received}
    assert dnsshim.queries == dns.queries


def dns_name(wire: bytes) -> str:
    """The question's name of a query's octets, lowercased, no final dot."""
    import dns.message
    return nss_env._name(dns.message.from_wire(wire).question[0].name)


def test_no_aaaa_asks_an_aaaa_question_as_dns_does(module_dir, nss_calls, tmp_path):
    """``options no-aaaa``: an AF_INET6 lookup (getent hosts, ahostsv6,
    Python's getaddrinfo for AF_INET6 and AF_UNSPEC, gethostbyname2_r,
    gethostbyname3_r, gethostbyname4_r) goes on, and gives what dns gives:
    the AAAA question asked as an A question without EDNS whose reply
    stands for the AAAA one with its RCODE and no record (glibc's
    __res_handle_no_aaaa), NODATA for a name with addresses, NXDOMAIN for a
    missing one, NODATA for no reply at all; the same queries, octet for
    octet but the ID.  (The module used to hand the AAAA question to
    res_nsend, whose no-aaaa path keeps the thread's resolver context: the
    program died on glibc's assertion in __resolv_context_put.)"""
    zone = {**CALLS_ZONE, ("drop.example.test", "A"): nss_env.DROP}
    names = ["www.example.test", "v6.example.test", "missing.example.test", "fail.example.test",
             "alias", "cname.example.test"]
    lines = []
    for name in names:
        lines += [f"name4 {{m}} {name} 1024", f"name3 {{m}} {name} inet6 1024",
                  f"name2 {{m}} {name} inet6 1024", f"api_name2 {name} inet6 1024",
                  f"getaddrinfo {name} inet6", f"getaddrinfo {name} unspec"]
    lines.append("name2 {m} drop.example.test inet6 1024")
    extra = [getent(*args) for args in (
        ("hosts", "www.example.test"), ("ahosts", "www.example.test"),
        ("ahostsv6", "www.example.test"), ("hosts", "v6.example.test"),
        ("ahostsv6", "alias.example.test"), ("hosts", "missing.example.test"))]
    extra.append(_python_families([["getaddrinfo", "www.example.test", 10],
                                   ["getaddrinfo", "www.example.test", 0],
                                   ["getaddrinfo", "v6.example.test", 10],
                                   ["gethostbyname_ex", "alias.example.test", 0]]))
    resolv = RESOLV + "options no-aaaa edns0\n"
    runs = _calls(module_dir, nss_calls, tmp_path, zone, lines, resolv=resolv, extra=extra)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    for ours, theirs in zip(dnsshim.commands[1:], dns.commands[1:]):
        assert (ours.returncode, ours.stdout, ours.stderr) == (
            theirs.returncode, theirs.stdout, theirs.stderr), ours.argv
    assert dnsshim.queries == dns.queries
    assert [r.wire[2:] for r in dnsshim.received] == [r.wire[2:] for r in dns.received]
    # what dns gives, and the module now
    assert got["name2 {m} www.example.test inet6 1024"] == (
        "NOTFOUND errno=EDOM h_errnop=4 h_errno=4")
    assert got["name2 {m} missing.example.test inet6 1024"] == (
        "NOTFOUND errno=EDOM h_errnop=1 h_errno=1")
    assert got["name2 {m} drop.example.test inet6 1024"] == (
        "NOTFOUND errno=EDOM h_errnop=4 h_errno=4")
    assert got["name4 {m} www.example.test 1024"].startswith(
        "SUCCESS errno=0 h_errnop=0 h_errno=1 ttl=300 tuples=[(inet 192.0.2.1 "
        "www.example.test),(inet 192.0.2.2 -)]")
    assert got["getaddrinfo www.example.test unspec"] == (
        "2 canon=www.example.test [192.0.2.1,192.0.2.2]")
    assert got["getaddrinfo v6.example.test inet6"].startswith("error -5 ")
    out = {tuple(c.argv[1:3]): c for c in dnsshim.commands[1:-1]}
    assert (out[("hosts", "www.example.test")].returncode,
            out[("hosts", "www.example.test")].stdout) == (
        0, "192.0.2.1       www.example.test\n192.0.2.2       www.example.test\n")
    assert out[("ahostsv6", "www.example.test")].stdout.splitlines()[0] == (
        "::ffff:192.0.2.1 STREAM www.example.test")
    assert (out[("hosts", "v6.example.test")].returncode,
            out[("hosts", "v6.example.test")].stdout) == (2, "")
    # no AAAA question was asked; an A question stood for each
    assert {q.qtype for q in dnsshim.queries} == {"A"}


def test_a_buffer_too_small_is_erange_as_dns_gives_it(module_dir, nss_calls, tmp_path):
    """Every entry point with every buffer size from 0 to 319 octets, and
    gethostbyname4_r with 10 A and 40 AAAA records in 1,024 and 2,048
    octets: the status, errno, h_errno and result dns gives (the caller's
    buffer is taken in nss_dns's order, so that a size too small for dns is
    too small for the module and no other).  An answer that does not fit,
    the first or the second, is ERANGE with TRYAGAIN and NETDB_INTERNAL,
    never a part of the addresses with SUCCESS (the module used to give 25
    of the 50 addresses); getaddrinfo then grows its buffer and gets them
    all."""
    lines = ["name4 {m} many.example.test 1024", "name4 {m} many.example.test 2048",
             "getaddrinfo many.example.test unspec"]
    for size in range(320):
        lines += [f"name4 {{m}} alias.example.test {size}",
                  f"name3 {{m}} alias.example.test inet {size}",
                  f"name2 {{m}} www.example.test inet6 {size}",
                  f"addr2 {{m}} 192.0.2.1 inet 4 {size}",
                  f"addr {{m}} ::1 inet6 17 {size}",
                  f"api_name2 alias.example.test inet {size}"]
    runs = _calls(module_dir, nss_calls, tmp_path, CALLS_ZONE, lines, timeout=240)
    got = _same_outcomes(runs, lines)
    erange = "TRYAGAIN errno=ERANGE h_errnop=-1 h_errno=1"
    assert got["name4 {m} many.example.test 1024"] == erange
    many = got["name4 {m} many.example.test 2048"]
    assert many.startswith("SUCCESS ") and many.count("(inet ") == 10 and \
        many.count("(inet6 ") == 40
    assert got["getaddrinfo many.example.test unspec"].startswith("50 canon=many.example.test [")
    # the smallest buffer each entry point answers in, dns's and the module's
    first = {}
    for line, outcome in got.items():
        call = line.rsplit(" ", 1)[0]
        if "{m} many" in line or line.startswith("getaddrinfo"):
            continue
        if outcome.startswith(("SUCCESS", "rc=0 ")) and call not in first:
            first[call] = int(line.rsplit(" ", 1)[1])
        elif call not in first:
            assert outcome.startswith(("TRYAGAIN errno=ERANGE h_errnop=-1 ",
                                       "rc=ERANGE errno=ERANGE h_errnop=-1 ")), (line, outcome)
    assert first == {"name4 {m} alias.example.test": 104,
                     "name3 {m} alias.example.test inet": 104,
                     "name2 {m} www.example.test inet6": 64,
                     "addr2 {m} 192.0.2.1 inet 4": 40,
                     "addr {m} ::1 inet6 17": 57,
                     "api_name2 alias.example.test inet": 104}, first
    assert got["addr {m} ::1 inet6 17 319"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=localhost6.example.test aliases=[] af=10 "
        "len=17 addrs=[0000000000000000000000000000000100]")


def test_replies_up_to_64_kib_give_every_address(module_dir, nss_calls, tmp_path):
    """3,000 A and 2,000 AAAA records, each reply near 64 KiB and over TCP:
    getaddrinfo (getent ahosts, nss_calls) gives all 5,000 addresses,
    gethostbyname2 (getent hosts) the 2,000 AAAA, and the 3,000 A of a
    name without AAAA, as dns gives them: the module answers ERANGE until
    the caller's buffer holds them all (it used to keep 3,276 of the 5,000
    and say SUCCESS)."""
    zone = {
        **ZONE,
        ("huge.example.test", "A"): [f"huge.example.test. 300 IN A 10.0.{i // 256}.{i % 256}"
                                     for i in range(3000)],
        ("huge.example.test", "AAAA"): [f"huge.example.test. 300 IN AAAA 2001:db8::{i:x}"
                                        for i in range(2000)],
        ("huge4.example.test", "A"): [f"huge4.example.test. 300 IN A 10.1.{i // 256}.{i % 256}"
                                      for i in range(3000)],
    }
    lines = ["getaddrinfo huge.example.test unspec", "api_name2 huge4.example.test inet 1024",
             "name2 {m} huge4.example.test inet 1024"]
    extra = [getent("ahosts", "huge.example.test"), getent("hosts", "huge.example.test"),
             getent("hosts", "huge4.example.test")]
    # The responder makes each 64 KiB reply in Python: on a loaded machine
    # that takes more than RESOLV's one second, for dns and the module alike.
    slow = RESOLV.replace("timeout:1 attempts:1", "timeout:15 attempts:2")
    runs = _calls(module_dir, nss_calls, tmp_path, zone, lines, extra=extra, timeout=600,
                  resolv=slow)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    for ours, theirs in zip(dnsshim.commands[1:], dns.commands[1:]):
        assert (ours.returncode, ours.stdout, ours.stderr) == (
            theirs.returncode, theirs.stdout, theirs.stderr), ours.argv
    assert got["getaddrinfo huge.example.test unspec"].startswith(
        "5000 canon=huge.example.test [2001:db8::,2001:db8::1,")
    assert got["api_name2 huge4.example.test inet 1024"] == (
        "rc=ERANGE errno=ERANGE h_errnop=-1 h_errno=1 result=NULL")
    assert got["name2 {m} huge4.example.test inet 1024"] == (
        "TRYAGAIN errno=ERANGE h_errnop=-1 h_errno=1")
    ahosts, hosts, hosts4 = dnsshim.commands[1:]
    assert ahosts.returncode == 0 and len(ahosts.stdout.splitlines()) == 3 * 5000
    assert len({line.split()[0] for line in ahosts.stdout.splitlines()}) == 5000
    assert hosts.returncode == 0 and len(hosts.stdout.splitlines()) == 2000
    assert hosts4.returncode == 0 and len(hosts4.stdout.splitlines()) == 3000
    assert hosts4.stdout.splitlines()[-1] == "10.1.11.183     huge4.example.test"
    assert nss_env.Query("tcp", "huge.example.test", "AAAA") in dnsshim.queries
    assert max(len(r.reply) for r in dnsshim.received if r.reply) > 56000


def test_a_lookup_by_address_maps_what_dns_maps(module_dir, nss_calls, tmp_path):
    """gethostbyaddr's special addresses, as dns's gethostbyaddr2_r treats
    them: an IPv4-mapped address (::ffff:a.b.c.d) and an IPv4-compatible
    one (::a.b.c.d) are looked up as the IPv4 address; ::1 (::0.0.0.1) is
    not (the module used to ask 1.0.0.0.in-addr.arpa for it), :: is, at
    the module's entry point (0.0.0.0; the public gethostbyaddr refuses it
    before any module); a length other than 16 maps nothing.  The same
    queries, the same answers, through getent, Python and the entry
    points."""
    ip6_loopback = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa"
    lines = ["addr2 {m} ::1 inet6 16 1024", "addr2 {m} :: inet6 16 1024",
             "addr2 {m} ::ffff:192.0.2.9 inet6 16 1024", "addr2 {m} ::192.0.2.9 inet6 16 1024",
             "addr2 {m} ::0.0.0.2 inet6 16 1024", "addr2 {m} ::ffff:192.0.2.9 inet6 17 1024",
             "addr {m} ::1 inet6 16 1024", "api_addr ::1 inet6 16 1024",
             "api_addr :: inet6 16 1024", "api_addr ::ffff:192.0.2.9 inet6 16 1024"]
    extra = [getent("hosts", "::1"), getent("hosts", "::ffff:192.0.2.9"),
             getent("hosts", "::192.0.2.9"),
             _python_families([["gethostbyaddr", "::1", 0]])]
    runs = _calls(module_dir, nss_calls, tmp_path, CALLS_ZONE, lines, extra=extra)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    for ours, theirs in zip(dnsshim.commands[1:], dns.commands[1:]):
        assert (ours.returncode, ours.stdout, ours.stderr) == (
            theirs.returncode, theirs.stdout, theirs.stderr), ours.argv
    assert dnsshim.queries == dns.queries
    ptr = [q.qname for q in dnsshim.queries]
    assert ptr == [ip6_loopback, "0.0.0.0.in-addr.arpa", "9.2.0.192.in-addr.arpa",
                   "9.2.0.192.in-addr.arpa", "2.0.0.0.in-addr.arpa",
                   "9.0.2.0.0.0.0.c.f.f.f.f.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa",
                   ip6_loopback, ip6_loopback, "9.2.0.192.in-addr.arpa",
                   ip6_loopback, "9.2.0.192.in-addr.arpa", "9.2.0.192.in-addr.arpa",
                   ip6_loopback]
    assert "1.0.0.0.in-addr.arpa" not in ptr
    assert got["addr2 {m} ::1 inet6 16 1024"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=localhost6.example.test aliases=[] af=10 "
        "len=16 addrs=[::1] ttl=300")
    assert got["addr2 {m} :: inet6 16 1024"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=zero.example.test aliases=[] af=2 len=4 "
        "addrs=[0.0.0.0] ttl=300")
    assert got["addr2 {m} ::192.0.2.9 inet6 16 1024"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=v4.example.test aliases=[] af=2 len=4 "
        "addrs=[192.0.2.9] ttl=300")
    assert got["api_addr :: inet6 16 1024"] == (
        "rc=ENOENT errno=EDOM h_errnop=1 h_errno=-7 result=NULL")
    hosts = dnsshim.commands[1:4]
    assert [(c.returncode, c.stdout) for c in hosts] == [
        (0, "::1             localhost6.example.test\n"),
        (0, "192.0.2.9       v4.example.test\n"), (0, "192.0.2.9       v4.example.test\n")]
    assert json.loads(dnsshim.commands[4].stdout) == [
        ["gethostbyaddr", "::1", 0, "ok", repr(("localhost6.example.test", [], ["::1"]))]]


def test_an_address_longer_than_its_family_s_is_read_as_dns_reads_it(module_dir, nss_calls,
                                                                     tmp_path):
    """gethostbyaddr_r and gethostbyaddr2_r with lengths 3, 4, 5, 16 and 17
    for AF_INET and AF_INET6: a length shorter than the family's address is
    UNAVAIL with EAFNOSUPPORT and NETDB_INTERNAL, no query sent; a longer
    one is looked up by its first 4 or 16 octets and the result has the
    length given (the module used to refuse it, EINVAL, no query)."""
    lines = []
    for call in ("addr2 {m}", "addr {m}", "api_addr"):
        for length in (4, 5, 16, 17, 3):
            lines += [f"{call} 192.0.2.1 inet {length} 1024",
                      f"{call} 2001:db8::1 inet6 {length} 1024"]
    runs = _calls(module_dir, nss_calls, tmp_path, CALLS_ZONE, lines)
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    assert dnsshim.queries == dns.queries
    v4 = "1.2.0.192.in-addr.arpa"
    v6 = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa"
    assert [q.qname for q in dnsshim.queries] == 3 * [v4, v4, v4, v6, v4, v6]
    assert got["addr2 {m} 192.0.2.1 inet 5 1024"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=www.example.test aliases=[] af=2 len=5 "
        "addrs=[c000020100] ttl=300")
    assert got["addr {m} 2001:db8::1 inet6 17 1024"] == (
        "SUCCESS errno=0 h_errnop=0 h_errno=-7 name=www.example.test aliases=[] af=10 len=17 "
        "addrs=[20010db800000000000000000000000100]")
    for short in ("addr2 {m} 192.0.2.1 inet 3 1024", "addr {m} 2001:db8::1 inet6 5 1024",
                  "addr2 {m} 2001:db8::1 inet6 4 1024"):
        assert got[short] == "UNAVAIL errno=EAFNOSUPPORT h_errnop=-1 h_errno=-7", short
    assert got["api_addr 192.0.2.1 inet 17 1024"] == (
        "rc=0 errno=0 h_errnop=0 h_errno=-7 result=yes name=www.example.test aliases=[] af=2 "
        "len=17 addrs=[c000020100000000000000000000000000]")


#: The names and addresses of the status comparison: an answer, NXDOMAIN,
#: NODATA, SERVFAIL, REFUSED, an answer without an address or PTR, and
#: (names) the search list and a name that is not a host name.
STATUS_NAMES = ["www.example.test", "missing.example.test", "nodata.example.test",
                "fail.example.test", "refused.example.test", "cname.example.test", "www",
                "not_a_host!"]
STATUS_ADDRESSES = ["192.0.2.1", "192.0.2.77", "192.0.2.7", "192.0.2.5", "192.0.2.6",
                    "192.0.2.8"]


def _status_lines():
    lines = []
    for name in STATUS_NAMES:
        lines += [f"name4 {{m}} {name} 1024", f"name3 {{m}} {name} inet 1024",
                  f"name3 {{m}} {name} inet6 1024", f"name2 {{m}} {name} inet6 1024",
                  f"name {{m}} {name} 1024", f"api_name2 {name} inet 1024"]
    for address in STATUS_ADDRESSES:
        lines += [f"addr2 {{m}} {address} inet 4 1024", f"addr {{m}} {address} inet 4 1024",
                  f"api_addr {address} inet 4 1024"]
    return lines


@pytest.mark.parametrize("server", ["responder", "none"])
def test_every_entry_point_leaves_h_errno_as_dns_does(module_dir, nss_calls, tmp_path,
                                                      server):
    """Each entry point (gethostbyname4_r, 3_r for either family, 2_r,
    gethostbyname_r, gethostbyaddr2_r, gethostbyaddr_r) and the public
    gethostbyname2_r and gethostbyaddr_r, for an answer, NXDOMAIN, NODATA,
    SERVFAIL, REFUSED and an answer without an address, and with no server
    at all (nothing listens where resolv.conf points): the status, errno,
    *h_errnop and the thread's h_errno dns gives, h_errno set where glibc's
    resolver sets it and left where it leaves it.  Python's gethostbyaddr,
    which reports h_errno, says what it says with dns (the module used to
    leave h_errno alone: "herror 0 Resolver Error 0 (no error)" where dns
    gives "herror 1 Unknown host")."""
    lines = _status_lines()
    python = _python_families([["gethostbyaddr", address, 0] for address in
                               ("192.0.2.77", "192.0.2.1", "192.0.2.8", "192.0.2.5",
                                "192.0.2.77")])
    resolv = RESOLV if server == "responder" else RESOLV.replace("127.0.0.1", "127.0.0.9")
    runs = _calls(module_dir, nss_calls, tmp_path, CALLS_ZONE, lines, resolv=resolv,
                  extra=[python])
    got = _same_outcomes(runs, lines)
    dns, dnsshim = runs["dns"][1], runs["dnsshim"][1]
    assert dnsshim.commands[1].stdout == dns.commands[1].stdout
    if server == "none":
        assert dnsshim.queries == dns.queries == []
    else:
        assert set(dnsshim.queries) == set(dns.queries)
    python = [entry[2:] for entry in json.loads(dnsshim.commands[1].stdout)]
    if server == "none":
        assert got["name4 {m} www.example.test 1024"] == (
            "UNAVAIL errno=EAGAIN h_errnop=2 h_errno=2")
        assert got["addr2 {m} 192.0.2.1 inet 4 1024"] == (
            "NOTFOUND errno=EDOM h_errnop=2 h_errno=2")
        assert got["api_name2 www.example.test inet 1024"] == (
            "rc=EAGAIN errno=EAGAIN h_errnop=2 h_errno=2 result=NULL")
        assert python == 5 * [[0, "herror", 2, "[Errno 2] Host name lookup failure"]]
        return
    assert got["addr2 {m} 192.0.2.77 inet 4 1024"] == "NOTFOUND errno=EDOM h_errnop=1 h_errno=1"
    assert got["addr {m} 192.0.2.7 inet 4 1024"] == "NOTFOUND errno=EDOM h_errnop=4 h_errno=4"
    assert got["addr {m} 192.0.2.5 inet 4 1024"] == "NOTFOUND errno=EDOM h_errnop=2 h_errno=2"
    assert got["addr {m} 192.0.2.6 inet 4 1024"] == "NOTFOUND errno=EDOM h_errnop=2 h_errno=2"
    assert got["addr {m} 192.0.2.8 inet 4 1024"] == (
        "TRYAGAIN errno=ENOENT h_errnop=3 h_errno=-7")
    assert got["api_addr 192.0.2.77 inet 4 1024"] == (
        "rc=0 errno=0 h_errnop=1 h_errno=1 result=NULL")
    assert got["name4 {m} missing.example.test 1024"] == (
        "NOTFOUND errno=EDOM h_errnop=1 h_errno=1")
    assert got["name3 {m} nodata.example.test inet6 1024"] == (
        "NOTFOUND errno=EDOM h_errnop=4 h_errno=4")
    assert got["name2 {m} fail.example.test inet6 1024"] == (
        "NOTFOUND errno=EAGAIN h_errnop=2 h_errno=2")
    assert got["api_name2 refused.example.test inet 1024"] == (
        "rc=0 errno=0 h_errnop=2 h_errno=2 result=NULL")
    assert got["api_name2 cname.example.test inet 1024"] == (
        "rc=EAGAIN errno=EAGAIN h_errnop=3 h_errno=1 result=NULL")
    assert got["name {m} cname.example.test 1024"] == (
        "TRYAGAIN errno=ENOENT h_errnop=3 h_errno=1")
    assert got["name4 {m} not_a_host! 1024"] == "NOTFOUND errno=EDOM h_errnop=1 h_errno=-7"
    assert got["name4 {m} www 1024"].startswith("SUCCESS errno=0 h_errnop=0 h_errno=1 ")
    assert python == [[0, "herror", 1, "[Errno 1] Unknown host"],
                      [0, "ok", repr(("www.example.test", [], ["192.0.2.1"]))],
                      [0, "herror", 1, "[Errno 1] Unknown host"],
                      [0, "herror", 2, "[Errno 2] Host name lookup failure"],
                      [0, "herror", 1, "[Errno 1] Unknown host"]]


def test_the_memory_limit_is_unavail_and_the_next_source_answers(module_dir, nss_calls,
                                                                 tmp_path):
    """A program that uses libdnsshim itself and sets its memory limit
    (dns_shim_set_memory_limit, 1 octet, below what the runtime holds once
    started) resolves through the module, which loads the same library (one
    soname, one object): the library refuses the parse
    (DNS_SHIM_ERR_NO_MEMORY), and every entry point answers
    NSS_STATUS_UNAVAIL with errno ENOMEM and h_errno NO_RECOVERY, its line
    where DNS_SHIM_NSS_LOG sends it.  With ``dnsshim [!UNAVAIL=return]
    dns``, getaddrinfo and gethostbyname2_r get dns's answer (the module
    asked once, dns again); with the module alone, no address.  The limit
    lifted, the module answers again (the library went on)."""
    env = {**nss_env.ENV, "DNS_SHIM_NSS_LOG": "stderr", "DNS_SHIM_SERVICE": "none"}
    text = "".join(line + "\n" for line in [
        "limit 1", "name4 dnsshim www.example.test 1024",
        "name2 dnsshim www.example.test inet 1024", "addr dnsshim 192.0.2.1 inet 4 1024",
        "getaddrinfo www.example.test unspec", "api_name2 www.example.test inet 1024",
        "limit 0", "name4 dnsshim www.example.test 1024"])
    cmds = [nss_env.command([nss_calls], stdin=text, env=env)]
    (tmp_path / "fallback").mkdir()
    (tmp_path / "alone").mkdir()
    fallback = nss_env.run(tmp_path / "fallback", ZONE, cmds, nsswitch=FALLBACK, resolv=RESOLV,
                           library_dirs=[module_dir], timeout=120)
    alone = nss_env.run(tmp_path / "alone", ZONE, cmds, nsswitch=DNSSHIM, resolv=RESOLV,
                        library_dirs=[module_dir], timeout=120)
    unavail = "UNAVAIL errno=ENOMEM h_errnop=3 h_errno=3"
    for run, gai, api in (
            (fallback, "3 canon=www.example.test [2001:db8::1,192.0.2.1,192.0.2.2]",
             "rc=0 errno=0 h_errnop=0 h_errno=1 result=yes name=www.example.test aliases=[] "
             "af=2 len=4 addrs=[192.0.2.1,192.0.2.2]"),
            (alone, "error -2 (Name or service not known)",
             "rc=ENOMEM errno=ENOMEM h_errnop=3 h_errno=3 result=NULL")):
        c = run.commands[0]
        assert c.returncode == 0, c.stderr
        assert [line.partition(" -> ")[2] for line in c.stdout.splitlines()] == [
            "0", unavail, unavail, unavail, gai, api, "0",
            "SUCCESS errno=0 h_errnop=0 h_errno=1 ttl=300 tuples=[(inet 192.0.2.1 "
            "www.example.test),(inet 192.0.2.2 -),(inet6 2001:db8::1 -)]"]
        reason = ("cannot parse: DNS_SHIM_ERR_NO_MEMORY: parsing the message would take the "
                  "runtime above its memory limit of 1 bytes (dns_shim_set_memory_limit)")
        assert c.stderr.splitlines() == [
            f"libnss_dnsshim: www.example.test A: {reason}",
            f"libnss_dnsshim: www.example.test A: {reason}",
            f"libnss_dnsshim: 1.2.0.192.in-addr.arpa PTR: {reason}",
            f"libnss_dnsshim: www.example.test A: {reason}",
            f"libnss_dnsshim: www.example.test A: {reason}"]
    # the module asks A and AAAA at once, as dns does; getaddrinfo and
    # gethostbyname2_r: the module's questions, then dns's
    www = "www.example.test"
    assert [(q.qname, q.qtype) for q in fallback.queries] == [
        (www, "A"), (www, "AAAA"), (www, "A"), ("1.2.0.192.in-addr.arpa", "PTR"),
        (www, "A"), (www, "AAAA"), (www, "A"), (www, "AAAA"), (www, "A"), (www, "A"),
        (www, "A"), (www, "AAAA")]
