"""A real c-ares 1.34 program resolving through a real server, with and
without libdnsshim_ares: pycares 5, BIND 9.

* pycares 5.2.1 is built from the same pinned sdist as the ``cares134``
  fixture's c-ares (tests/cares_source.py, :func:`cares_source.pycares`),
  against that c-ares 1.34.9 as a shared library, not the static copy
  pycares builds by default: its extension needs libcares.so.2 and finds
  the cached one through its run path, and defines no ``ares_*`` function.
* named (tests/test_bind.py's :func:`test_bind.serving`) serves ZONE on
  loopback: addresses, MX, TXT, SRV, NAPTR, a CNAME chain, CAA, URI, HTTPS,
  TLSA, PTR, NS, SOA, a name that does not exist and a type a name does not
  have.
* PROGRAM, run by the Python running the tests, asks it every question of
  QUERIES over UDP and over TCP (a channel each, c-ares's event thread, as
  pycares runs it by default) and prints every record of every answer,
  every section, one per line, sorted.  It is run plainly and with
  libdnsshim_ares preloaded: the lines are the same, and they are the
  zone's (EXPECTED).
* In the preloaded run, every message c-ares parses goes through
  libdnsshim_ares's ``ares_dns_parse``, that is through dnspython in
  libdnsshim's guest in the program's interpreter (shim/guest.py): PROGRAM
  wraps the guest's private ``shim.ares_dnsrec.run`` (reached as
  ``_dnsshim_cffi.__dnsshim_guest__.modules``) and the test checks that it
  was handed named's reply to every question over both transports, each
  parsed with status 0.  In the plain run the guest is not there at all.

The preload is ``LD_PRELOAD="libdnsshim_ares.so.1 <cares134>/libcares.so.2"``:
CPython loads an extension module with RTLD_LOCAL, so the libcares.so.2
that pycares's extension needs is not in the process's global scope;
libdnsshim_ares finds the c-ares its caller reaches all the same, and with
libdnsshim_ares alone the answers are the same (:func:`test_preloaded_alone`).
Preloading the same file pycares's extension needs puts it in the global
scope; the extension's NEEDED entry is then that library, loaded once.

pycares 5 calls no classic parser itself, but ``ares_strerror``: with
libdnsshim_ares alone its texts are still c-ares's own
(:func:`test_preloaded_alone_strerror_is_its_c_ares`).  pycares 4 (Debian's
python3-pycares) calls ``ares_parse_*_reply`` and the free functions itself:
made to load cares134's libcares.so.2, RTLD_LOCAL as ever, it gets c-ares's
answers with libdnsshim_ares preloaded, names holding "@" included
(:func:`test_debian_pycares_4_on_c_ares_134_gets_c_ares_answers`, the finding
from Debian 13's pycares 4.4).

Measured on the project's test machine (2 cores, shared), with c-ares 1.34
already built and cached by the ``cares134`` fixture: about 12 s the first
time (5 s of it building pycares: pip fetches setuptools, wheel and cffi
into an isolated build environment), then about 7 s (the library's build
for the ``built`` fixture and named's start included).
"""

import collections
import json
import os
import re
import subprocess
import sys

import dns.message
import pytest

import cares_source
from conftest import require_download, require_tool
from test_bind import serving


ZONE = r"""$TTL 300
@          IN SOA   ns.example.test. hostmaster.example.test. 2026120401 3600 900 604800 300
@          IN NS    ns.example.test.
@          IN MX    10 mail.example.test.
@          IN MX    20 backup.example.test.
@          IN CAA   0 issue "ca.example.net"
@          IN CAA   128 iodef "mailto:security@example.test"
ns         IN A     127.0.0.1
www        IN A     192.0.2.1
www        IN A     192.0.2.2
www        IN AAAA  2001:db8::1
www        IN AAAA  2001:db8::53
mail       IN A     192.0.2.25
backup     IN A     192.0.2.26
sip        IN A     192.0.2.60
sip2       IN A     192.0.2.61
txt        IN TXT   "v=spf1 -all"
txt        IN TXT   "two" "strings"
txt        IN TXT   "quote \" semicolon \; octet \255"
_sip._udp  IN SRV   10 60 5060 sip.example.test.
_sip._udp  IN SRV   20 0 5061 sip2.example.test.
naptr      IN NAPTR 100 10 "S" "SIP+D2U" "" _sip._udp.example.test.
naptr      IN NAPTR 102 10 "U" "E2U+sip" "!^.*$!sip:info@example.test!" .
alias1     IN CNAME alias2
alias2     IN CNAME www
_http._tcp IN URI   10 1 "https://www.example.test/"
svc        IN HTTPS 1 . alpn="h2,h3" port=8443 ipv4hint=192.0.2.1
_443._tcp.www IN TLSA 3 1 1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ptr        IN PTR   www.example.test.
"""

#: (name, type) PROGRAM asks, over UDP and over TCP.
QUERIES = [
    ("www.example.test", "A"), ("www.example.test", "AAAA"), ("example.test", "MX"),
    ("txt.example.test", "TXT"), ("_sip._udp.example.test", "SRV"),
    ("naptr.example.test", "NAPTR"), ("alias1.example.test", "A"),
    ("alias1.example.test", "CNAME"), ("example.test", "CAA"),
    ("_http._tcp.example.test", "URI"), ("svc.example.test", "HTTPS"),
    ("_443._tcp.www.example.test", "TLSA"), ("ptr.example.test", "PTR"),
    ("example.test", "NS"), ("example.test", "SOA"),
    ("nothing.example.test", "A"),   # NXDOMAIN
    ("txt.example.test", "AAAA"),    # the name is there, the type is not
]

#: Lines PROGRAM must print over both transports: the zone's values as
#: pycares gives them (its record classes' fields), at least these.
EXPECTED = [
    "www.example.test A | answer www.example.test A 300 addr='192.0.2.1'",
    "www.example.test A | answer www.example.test A 300 addr='192.0.2.2'",
    "www.example.test AAAA | answer www.example.test AAAA 300 addr='2001:db8::53'",
    "example.test MX | answer example.test MX 300 priority=20 exchange='backup.example.test'",
    "example.test MX | additional mail.example.test A 300 addr='192.0.2.25'",
    "txt.example.test TXT | answer txt.example.test TXT 300 data=b'v=spf1 -all'",
    "txt.example.test TXT | answer txt.example.test TXT 300 data=b'twostrings'",
    "txt.example.test TXT | answer txt.example.test TXT 300 "
    "data=b'quote \" semicolon ; octet \\xff'",
    "_sip._udp.example.test SRV | answer _sip._udp.example.test SRV 300 priority=10 weight=60 "
    "port=5060 target='sip.example.test'",
    "naptr.example.test NAPTR | answer naptr.example.test NAPTR 300 order=102 preference=10 "
    "flags='U' service='E2U+sip' regexp='!^.*$!sip:info@example.test!' replacement=''",
    "alias1.example.test A | answer alias1.example.test CNAME 300 cname='alias2.example.test'",
    "alias1.example.test A | answer alias2.example.test CNAME 300 cname='www.example.test'",
    "alias1.example.test A | answer www.example.test A 300 addr='192.0.2.2'",
    "example.test CAA | answer example.test CAA 300 critical=128 tag='iodef' "
    "value='mailto:security@example.test'",
    "_http._tcp.example.test URI | answer _http._tcp.example.test URI 300 priority=10 weight=1 "
    "target='https://www.example.test/'",
    "_443._tcp.www.example.test TLSA | answer _443._tcp.www.example.test TLSA 300 cert_usage=3 "
    "selector=1 matching_type=1 cert_association_data=b'\\x01#Eg\\x89\\xab\\xcd\\xef\\x01#Eg"
    "\\x89\\xab\\xcd\\xef\\x01#Eg\\x89\\xab\\xcd\\xef\\x01#Eg\\x89\\xab\\xcd\\xef'",
    "svc.example.test HTTPS | answer svc.example.test HTTPS 300 priority=1 target='' "
    "params=[(1, b'\\x02h2\\x02h3'), (3, b' \\xfb'), (4, b'\\xc0\\x00\\x02\\x01')]",
    "example.test NS | answer example.test NS 300 nsdname='ns.example.test'",
    "ptr.example.test PTR | answer ptr.example.test PTR 300 dname='www.example.test'",
    "example.test SOA | answer example.test SOA 300 mname='ns.example.test' "
    "rname='hostmaster.example.test' serial=2026120401 refresh=3600 retry=900 expire=604800 "
    "minimum=300",
    "nothing.example.test A | error ARES_ENOTFOUND",
    "txt.example.test AAAA | error ARES_ENODATA",
]

#: c-ares's timeout for a question's first try (seconds), and how many
#: tries it gets.  c-ares 1.34 times a question out from what the server's
#: answers took so far (five times their average, at least 250 ms), and a
#: reply read after that is dropped, however well formed; on a loaded machine
#: a reply can wait that long for the parse, so a question is asked again,
#: each try waiting twice as long as the last.  A reply the layer drops is
#: dropped at every try, and its question still ends in ARES_ETIMEOUT; every
#: reply read is checked to have parsed (test_preloaded_replies_went_through_dnspython).
TIMEOUT = 4.0
TRIES = 5

PROGRAM = r'''
import dataclasses, json, sys
import pycares

args = json.loads(sys.argv[1])
TYPES = {getattr(pycares, n): n[len("QUERY_TYPE_"):] for n in dir(pycares)
         if n.startswith("QUERY_TYPE_")}
ERRORS = {v: k for k, v in vars(pycares.errno).items() if k.startswith("ARES_")}


def record(section, rr):
    fields = " ".join(f"{f.name}={getattr(rr.data, f.name)!r}"
                      for f in dataclasses.fields(rr.data))
    return f"{section} {rr.name} {TYPES.get(rr.type, rr.type)} {rr.ttl} {fields}".rstrip()


def ask(flags, queries):
    """Every query on a channel of its own (c-ares's event thread): the
    lines of its answers."""
    channel = pycares.Channel(servers=[f"127.0.0.1:{args['port']}"], timeout=args["timeout"],
                              tries=args["tries"], flags=flags)
    lines = []

    def done(key):
        def callback(result, error):
            if error is not None:
                lines.append(f"{key} | error {ERRORS.get(error, error)}")
                return
            for section in ("answer", "authority", "additional"):
                for rr in getattr(result, section):
                    lines.append(f"{key} | {record(section, rr)}")
        return callback

    for name, rdtype in queries:
        channel.query(name, getattr(pycares, "QUERY_TYPE_" + rdtype),
                      callback=done(f"{name} {rdtype}"))
    finished = channel.wait(args["timeout"] * 2 ** args["tries"])
    channel.close()
    assert finished, "queries still pending"
    return sorted(lines)


def guest_parser():
    """libdnsshim's private shim.ares_dnsrec, where libdnsshim_ares runs
    (None where it was not loaded)."""
    own = sys.modules.get("_dnsshim_cffi")
    guest = getattr(own, "__dnsshim_guest__", None)
    return None if guest is None else guest.modules["shim.ares_dnsrec"]


# One question first: libdnsshim_ares starts its runtime at the first parse.
ask(0, [("ns.example.test", "A")])
parser = guest_parser()
seen = []
if parser is not None:
    run = parser.run

    def observed(ffi, buf, length, flags, out, out_token, runtime=None):
        wire = bytes(ffi.buffer(buf, length)) if length > 0 else b""
        run(ffi, buf, length, flags, out, out_token, runtime)
        seen.append([wire.hex(), out.status])

    parser.run = observed
lines = {"udp": ask(0, args["queries"]), "tcp": ask(pycares.ARES_FLAG_USEVC, args["queries"])}
if parser is not None:
    parser.run = run
maps = open("/proc/self/maps").read().split()
print(json.dumps({
    "lines": lines, "seen": seen, "guest": parser is not None,
    "version": [pycares.__version__, pycares.ARES_VERSION],
    "libcares": sorted({p for p in maps if "libcares.so" in p}),
}))
'''


@pytest.fixture(scope="module")
def pycares_site(cares134):
    """pycares 5 on cares134's libcares.so.2: the folder for PYTHONPATH."""
    try:
        return cares_source.pycares()
    except cares_source.Unavailable as why:
        require_download(str(why))


@pytest.fixture(scope="module")
def bind(tmp_path_factory):
    """named serving ZONE on loopback, checked first: its port."""
    d = tmp_path_factory.mktemp("named")
    (d / "zone").write_text(ZONE)
    check = subprocess.run(["named-checkzone", "-k", "fail", "-n", "fail", "example.test",
                            str(d / "zone")], capture_output=True, text=True)
    assert check.returncode == 0 and "has no address records" not in check.stdout, check.stdout
    with serving(d, ZONE) as port:
        yield port


def _run(site, port, preload=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(preload)
    return subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(
        {"port": port, "timeout": TIMEOUT, "tries": TRIES, "queries": QUERIES})],
        capture_output=True, text=True, timeout=3 * TIMEOUT * 2 ** TRIES + 60, env=env, cwd="/")


def run_program(site, port, preload=None) -> dict:
    """PROGRAM's report: it exited 0 and said nothing on stderr."""
    result = _run(site, port, preload)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stderr == ""
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def plain(pycares_site, bind):
    return run_program(pycares_site, bind)


@pytest.fixture(scope="module")
def preloaded(pycares_site, bind, built, cares134):
    """The program with libdnsshim_ares preloaded, and cares134's
    libcares.so.2 after it (see :func:`test_preloaded_alone`): the very
    file pycares's extension needs, loaded once."""
    return run_program(pycares_site, bind,
                       f"{built.dir / 'libdnsshim_ares.so.1'} {cares134.lib / 'libcares.so.2'}")


def test_pycares_is_built_on_cares134(pycares_site, cares134, plain):
    [extension] = (pycares_site / "pycares").glob("_cares*.so")
    ldd = subprocess.run(["ldd", str(extension)], capture_output=True, text=True,
                         check=True).stdout
    found = re.search(r"libcares\.so\.2 => (\S+) ", ldd)
    assert found and os.path.realpath(found.group(1)) == \
        os.path.realpath(cares134.lib / "libcares.so.2"), ldd
    # no c-ares of its own inside: every ares_ function comes from libcares.so.2
    symbols = subprocess.run(["nm", "-D", str(extension)], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    ares = [line.split() for line in symbols if line.split()[-1].startswith("ares_")]
    assert ares and all(fields[0] == "U" for fields in ares), ares
    # and at run time: c-ares 1.34.9, the cached one, in the program
    assert plain["version"] == [cares_source.lock()["sdist"]["version"],
                                cares134.version] == ["5.2.1", "1.34.9"]
    assert [os.path.realpath(p) for p in plain["libcares"]] == \
        [os.path.realpath(cares134.lib / "libcares.so.2")]


@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_plain_answers_are_the_zones(plain, transport):
    lines = plain["lines"][transport]
    missing = [line for line in EXPECTED if line not in lines]
    assert not missing, "\n".join(lines)
    # every question was answered, none timed out
    asked = {line.split(" | ")[0] for line in lines}
    assert asked == {f"{name} {rdtype}" for name, rdtype in QUERIES}
    assert not [line for line in lines if "ARES_ETIMEOUT" in line or "ARES_ECONNREFUSED" in line]
    assert plain["guest"] is False and plain["seen"] == []


def test_preloaded_answers_are_the_same(plain, preloaded):
    assert preloaded["lines"] == plain["lines"]
    assert preloaded["version"] == plain["version"]
    assert preloaded["libcares"] == plain["libcares"]
    # the same lines: none timed out (a reply the layer failed to read is
    # dropped by c-ares's resolver, and its question ends in ARES_ETIMEOUT)


def test_preloaded_replies_went_through_dnspython(preloaded):
    """Every reply c-ares read in the preloaded run (each question, over
    UDP and over TCP) was parsed by libdnsshim's shim.ares_dnsrec, with
    status 0 (ARES_SUCCESS)."""
    assert preloaded["guest"] is True
    replies = [(dns.message.from_wire(bytes.fromhex(wire)), status)
               for wire, status in preloaded["seen"]
               if dns.message.from_wire(bytes.fromhex(wire)).flags & dns.flags.QR]
    assert len(replies) >= 2 * len(QUERIES)
    assert all(status == 0 for _, status in replies)
    answered = collections.Counter(f"{m.question[0].name.to_text(omit_final_dot=True)} "
                                   f"{dns.rdatatype.to_text(m.question[0].rdtype)}"
                                   for m, _ in replies)
    assert set(answered) == {f"{name} {rdtype}" for name, rdtype in QUERIES}
    assert min(answered.values()) >= 2  # over UDP and over TCP
    # named's own replies: the NXDOMAIN ones with the zone's SOA
    nxdomain = [m for m, _ in replies if m.question[0].name.to_text() == "nothing.example.test."]
    assert nxdomain and all(m.rcode() == dns.rcode.NXDOMAIN and m.flags & dns.flags.AA
                            and [r.rdtype for r in m.authority] == [dns.rdatatype.SOA]
                            for m in nxdomain)
    # c-ares parses its own queries too (copying them): every parse succeeded
    assert [status for _, status in preloaded["seen"]] == [0] * len(preloaded["seen"])


def test_preloaded_alone(pycares_site, bind, built, plain):
    """With only libdnsshim_ares in LD_PRELOAD, as README.md says to turn it
    on, pycares gets the same answers, though CPython loads its extension,
    and so its libcares.so.2, RTLD_LOCAL, out of the process's global scope:
    libdnsshim_ares finds the c-ares that called it, not one in that scope."""
    result = _run(pycares_site, bind, built.dir / "libdnsshim_ares.so.1")
    assert result.returncode == 0 and result.stderr == "", result.stderr[-4000:]
    alone = json.loads(result.stdout)
    assert alone["lines"] == plain["lines"] and alone["guest"] is True


STRERROR = ("import json, pycares.errno as e; "
            "print(json.dumps([e.strerror(c) for c in range(-1, 31)]))")


def test_preloaded_alone_strerror_is_its_c_ares(pycares_site, built):
    """pycares.errno.strerror calls ares_strerror itself; preloaded, that is
    libdnsshim_ares's, which passes the codes beyond c-ares 1.18's table
    (ARES_ESERVICE, ARES_ENOSERVER) to the c-ares its caller reaches:
    pycares's libcares.so.2, loaded RTLD_LOCAL, in no global scope.  Every
    text is c-ares's own, as without the preload."""
    def texts(preload=None):
        env = {**os.environ, "PYTHONPATH": str(pycares_site)}
        env.pop("LD_PRELOAD", None)
        if preload:
            env["LD_PRELOAD"] = str(preload)
        result = subprocess.run([sys.executable, "-c", STRERROR], capture_output=True,
                                text=True, timeout=60, env=env, cwd="/")
        assert result.returncode == 0 and result.stderr == "", result.stderr[-4000:]
        return json.loads(result.stdout)

    plain = texts()
    assert plain[1 + 25:1 + 27] == ["Invalid service name or number",
                                    "No DNS servers were configured"]
    assert texts(built.dir / "libdnsshim_ares.so.1") == plain


# ---- Debian's pycares 4, which calls c-ares's classic parsers itself -----------------

DEBIAN_PYTHON = "/usr/bin/python3"

#: pycares 4's query() on each (name, type) of argv[2] at 127.0.0.1:argv[1]:
#: its callback's result (pycares 4 parses the reply with ares_parse_*_reply
#: itself and frees it with ares_free_hostent or ares_free_data), as JSON.
PYCARES4 = r'''
import json, select, sys
import pycares
port, queries = int(sys.argv[1]), json.loads(sys.argv[2])
out = {}
ch = pycares.Channel(servers=["127.0.0.1"], udp_port=port, tcp_port=port, timeout=5, tries=1)
def done(key):
    def cb(result, error):
        if error is not None:
            out[key] = ["error", error]
        elif isinstance(result, list):
            out[key] = sorted(repr(sorted((k, repr(v)) for k, v in
                                          ((s, getattr(r, s)) for s in type(r).__slots__)))
                              for r in result)
        else:
            out[key] = repr(sorted((s, repr(getattr(result, s))) for s in type(result).__slots__))
    return cb
for name, rdtype in queries:
    ch.query(name, getattr(pycares, "QUERY_TYPE_" + rdtype), done(name + " " + rdtype))
while len(out) < len(queries):
    r, w = ch.getsock()
    if not r and not w:
        break
    rr, ww, _ = select.select(r, w, [], ch.timeout() or 1)
    for fd in rr:
        ch.process_fd(fd, pycares.ARES_SOCKET_BAD)
    for fd in ww:
        ch.process_fd(pycares.ARES_SOCKET_BAD, fd)
print(json.dumps({"version": pycares.__version__, "results": out}))
'''


@pytest.fixture(scope="module")
def at_server():
    """A DNS server on 127.0.0.1 whose every name holds an "@": a PTR to
    bad@name.realclient.test, an A through a CNAME to it, an SRV to it, a
    TXT and an MX of an ordinary name; its port."""
    import socket
    import threading

    import dns.exception
    import dns.name
    import dns.rdatatype
    import dns.rrset

    bad = dns.name.Name([b"bad@name", b"realclient", b"test", b""])
    answers = {
        dns.rdatatype.PTR: [("PTR", bad.to_text())],
        dns.rdatatype.A: [("CNAME", bad.to_text())],
        dns.rdatatype.SRV: [("SRV", f"10 60 5060 {bad.to_text()}"),
                            ("SRV", "20 0 5061 sip2.example.test.")],
        dns.rdatatype.MX: [("MX", "10 mail.example.test.")],
        dns.rdatatype.TXT: [("TXT", '"v=spf1 -all"')],
    }
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop = threading.Event()

    def reply(data):
        query = dns.message.from_wire(data)
        response = dns.message.make_response(query)
        q = query.question[0]
        for rdtype, text in answers.get(q.rdtype, []):
            response.answer.append(dns.rrset.from_text(q.name, 300, "IN", rdtype, text))
        if q.rdtype == dns.rdatatype.A:
            response.answer.append(dns.rrset.from_text(bad, 60, "IN", "A", "192.0.2.1"))
        return response.to_wire()

    def serve():
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(4096)
                sock.sendto(reply(data), peer)
            except (socket.timeout, dns.exception.DNSException):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1]
    stop.set()
    thread.join(5)
    sock.close()


def test_debian_pycares_4_on_c_ares_134_gets_c_ares_answers(cares134, built, at_server):
    """The finding from Debian 13 (pycares 4.4 on c-ares 1.34), here with
    Debian's own python3-pycares 4 made to load cares134's libcares.so.2
    (LD_LIBRARY_PATH: the same soname as its own): CPython loads pycares's
    extension, and so that c-ares, RTLD_LOCAL.  pycares 4 calls
    ares_parse_ptr_reply, ares_parse_a_reply, ares_parse_srv_reply itself;
    with libdnsshim_ares preloaded they are the layer's, which hand each call
    to that c-ares's own parser: the answers are c-ares's, the PTR's name
    "bad\\@name.realclient.test", not ARES_EBADRESP."""
    found = os.path.exists(DEBIAN_PYTHON) and subprocess.run(
        [DEBIAN_PYTHON, "-c", "import sys, pycares; "
         "sys.exit(sys.version_info[:2] != (%d, %d) or not pycares.__version__.startswith('4.'))"
         % sys.version_info[:2]], capture_output=True, timeout=60).returncode == 0
    if not found:
        require_tool(f"Debian's python3 {sys.version_info[0]}.{sys.version_info[1]} with "
                     "pycares 4", "python3-pycares", False)
    queries = [["1.2.0.192.in-addr.arpa", "PTR"], ["www.example.test", "A"],
               ["_sip._udp.example.test", "SRV"], ["example.test", "MX"],
               ["example.test", "TXT"]]

    def run(preload=None):
        env = {**os.environ, "LD_LIBRARY_PATH": str(cares134.lib)}
        env.pop("LD_PRELOAD", None)
        env.pop("PYTHONPATH", None)
        if preload:
            env["LD_PRELOAD"] = str(preload)
        result = subprocess.run([DEBIAN_PYTHON, "-c", PYCARES4, str(at_server),
                                 json.dumps(queries)], capture_output=True, text=True,
                                timeout=120, env=env, cwd="/")
        assert result.returncode == 0 and result.stderr == "", result.stderr[-4000:]
        return json.loads(result.stdout)

    plain = run()
    assert len(plain["results"]) == len(queries)
    assert "'bad\\\\\\\\@name.realclient.test'" in plain["results"]["1.2.0.192.in-addr.arpa PTR"]
    assert run(built.dir / "libdnsshim_ares.so.1") == plain
