"""End to end with a real server: BIND 9's named, started by the test.

named (Debian's bind9) runs on 127.0.0.1 at a free high port, from its own
temporary directory (configuration, zone, pid file), authoritative for
example.test and for closed.test (whose allow-query refuses everyone: BIND
answers REFUSED with EDE 18, Prohibited), with recursion off.  The test sends
its queries from a UDP socket on loopback only, with a client cookie and a
client subnet, bounded in time, and stops named at the end.  Every response
is a real server's bytes: checked with dns_shim_process_reply through the C
ABI, the C test program and the Python API; printed by both dump tools and
compared with what dig prints for the same server.

Skipped where named is not installed, except in CI (.ci/run installs bind9).
"""

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time

import dns.edns
import dns.message
import pytest

from conftest import ROOT, require_program, require_tool, run_test_prog, split_log
from recorder import Recorder
from shim import api
from shim.status import Status

LOOPBACK = "127.0.0.1"
CLIENT = bytes.fromhex("5a5b5c5d5e5f6061")
ZONE = """\
$TTL 300
@    IN SOA ns.example.test. hostmaster.example.test. 2026120301 3600 900 604800 300
@    IN NS  ns.example.test.
ns   IN A   127.0.0.1
www  IN A   192.0.2.1
"""


def _named():
    path = shutil.which("named") or ("/usr/sbin/named" if os.access("/usr/sbin/named", os.X_OK)
                                     else None)
    require_tool("BIND's named", "bind9", path is not None)
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def exchange(port, query: dns.message.Message, timeout=2.0) -> bytes:
    """One query to named on loopback; its response's bytes."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.connect((LOOPBACK, port))
        s.send(query.to_wire())
        return s.recv(65535)


def make_query(name, rdtype="A", qid=0x4242):
    q = dns.message.make_query(name, rdtype, use_edns=0, want_dnssec=False, options=[
        dns.edns.CookieOption(CLIENT, b""), dns.edns.ECSOption("192.0.2.0", 24)])
    q.id = qid
    q.flags &= ~dns.flags.RD
    return q


def _named_conf(d, port) -> str:
    return f"""\
options {{
    directory "{d}";
    pid-file "{d}/named.pid";
    session-keyfile "{d}/session.key";
    managed-keys-directory "{d}";
    listen-on port {port} {{ {LOOPBACK}; }};
    listen-on-v6 {{ none; }};
    recursion no;
    dnssec-validation no;
    notify no;
    answer-cookie yes;
}};
controls {{ }};
zone "example.test" {{ type primary; file "{d}/example.test.db"; }};
zone "closed.test" {{ type primary; file "{d}/example.test.db"; allow-query {{ none; }}; }};
"""


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


@contextlib.contextmanager
def serving(d, zone: str = ZONE):
    """named on 127.0.0.1:<port> from the folder d (configuration, log, pid
    file), authoritative for example.test and closed.test, both from the
    text zone (origin-relative names), stopped on exit; yields the port.

    named cannot be asked for port 0 and say which it got, so a free port is
    found and handed over; another process may take it in between, and then
    named exits at once: a new port is tried, up to five times."""
    program = _named()
    (d / "example.test.db").write_text(zone)
    for attempt in range(5):
        port = _free_port()
        (d / "named.conf").write_text(_named_conf(d, port))
        with open(d / "named.log", "w") as log:
            proc = subprocess.Popen([program, "-g", "-n", "1", "-c", str(d / "named.conf")],
                                    stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                exchange(port, make_query("www.example.test"), timeout=0.5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
        if proc.poll() is None and time.monotonic() <= deadline:
            break
        _stop(proc)
        text = (d / "named.log").read_text()
        if "address in use" not in text or attempt == 4:
            pytest.fail("named did not start:\n" + text[-3000:])
    try:
        yield port
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """named serving ZONE (:func:`serving`); yields the port."""
    with serving(tmp_path_factory.mktemp("named")) as port:
        yield port


@pytest.fixture(scope="module")
def responses(named):
    """(query, response bytes) from named: an answer, and a refusal."""
    out = {}
    for key, name, qid in (("answer", "www.example.test", 0x4242),
                           ("refused", "www.closed.test", 0x4343)):
        q = make_query(name, qid=qid)
        out[key] = (q, exchange(named, q))
    return out


def _c_query(ffi, q, cookie=CLIENT):
    keep = (ffi.new("char[]", q.question[0].name.to_text().encode()),
            ffi.new("uint8_t[8]", cookie))
    query = ffi.new("dns_shim_query *", {
        "struct_size": ffi.sizeof("dns_shim_query"), "id": q.id, "qname": keep[0],
        "qtype": q.question[0].rdtype, "qclass": q.question[0].rdclass,
        "cookie_client": keep[1]})
    return query, keep


def _checked(abi, responses, key):
    """named's response to `key` through dns_shim_process_reply with its
    query: (query, wire, the Recorder's lines)."""
    ffi, lib = abi
    q, wire = responses[key]
    query, keep = _c_query(ffi, q)
    rec = Recorder(ffi)
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == Status.OK
    return q, wire, rec.lines


def test_answer_with_cookie_and_subnet(abi, responses):
    q, wire, lines = _checked(abi, responses, "answer")
    options = {line.split()[1]: line for line in lines if line.startswith("edns_option")}
    cookie = options["code=10"]
    assert f"cookie_client={CLIENT.hex()} " in cookie
    server = cookie.split("cookie_server=")[1].split()[0]
    assert 8 <= len(server) // 2 <= 32  # BIND's server cookie: 16 octets
    assert "ecs_family=1 ecs_source=24 ecs_scope=0 ecs_address=c00002" in options["code=8"]
    assert any("address=192.0.2.1" in line for line in lines)
    response = api.parse_response(wire, expect=api.Query(q.id, "www.example.test",
                                                         cookie_client=CLIENT))
    assert sorted(o.code for o in response.options) == [8, 10]
    assert next(o for o in response.options if o.code == 10).cookie_client == CLIENT


def test_refusal_with_extended_error(abi, responses):
    q, wire, lines = _checked(abi, responses, "refused")
    assert lines[0].split()[4] == "rcode=5"  # REFUSED
    ede = [line for line in lines if line.startswith("edns_option code=15 ")]
    assert len(ede) == 1 and " ede=18 " in ede[0]  # Prohibited


@pytest.mark.parametrize("change", ["id", "name", "type", "cookie"])
def test_real_response_mismatched(abi, responses, change):
    ffi, lib = abi
    q, wire = responses["answer"]
    query, keep = _c_query(ffi, q, cookie=bytes(8) if change == "cookie" else CLIENT)
    if change == "id":
        query.id = q.id ^ 1
    elif change == "name":
        other = ffi.new("char[]", b"www.example.tesu")
        keep += (other,)
        query.qname = other
    elif change == "type":
        query.qtype = 28
    rec = Recorder(ffi)
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == Status.ERR_MISMATCH
    assert rec.calls == []


def test_c_program_and_dump_tools(built, responses, tmp_path):
    for key, (q, wire) in responses.items():
        path = tmp_path / f"{key}.bin"
        path.write_bytes(wire)
        args = ["--expect-id", str(q.id), "--expect-name", q.question[0].name.to_text(),
                "--expect-cookie", CLIENT.hex()]
        result = run_test_prog(built, *args, path)
        assert split_log(result.stdout)[str(path)][-1] == "status 0 success", result.stdout
        for extra in ([], ["--json"]):
            c = subprocess.run([str(built.dump_prog), *args, *extra, str(path)],
                               capture_output=True)
            py = subprocess.run([sys.executable, "-m", "shim", "dump", *args, *extra, str(path)],
                                capture_output=True, cwd=ROOT)
            assert c.returncode == py.returncode == 0, c.stderr
            assert c.stdout == py.stdout


def _option_lines(text):
    return [line for line in text.splitlines()
            if line.startswith(("; EDE:", "; COOKIE:", "; CLIENT-SUBNET:"))]


def test_options_printed_as_dig_prints_them(built, named, responses, tmp_path):
    """dig asks named the same questions: its option lines and the dump's
    are the same, the cookies' values aside (each query has its own)."""
    require_program("dig", "bind9-dnsutils")
    for key, (q, wire) in responses.items():
        name = q.question[0].name.to_text()
        dig = subprocess.run(["dig", f"@{LOOPBACK}", "-p", str(named), name, "A", "+norec",
                              f"+cookie={CLIENT.hex()}", "+subnet=192.0.2.0/24", "+tries=1",
                              "+time=2"], capture_output=True, text=True, timeout=30).stdout
        path = tmp_path / f"{key}.bin"
        path.write_bytes(wire)
        dump = subprocess.run([str(built.dump_prog), "--expect-id", str(q.id), "--expect-name",
                               name, "--expect-cookie", CLIENT.hex(), str(path)],
                              capture_output=True, text=True).stdout

        def masked(lines):
            return sorted(line[:len("; COOKIE: ") + 16] + "<server> (good)"
                          if line.startswith("; COOKIE:") else line for line in lines)
        assert _option_lines(dig), dig
        assert masked(_option_lines(dump)) == masked(_option_lines(dig))
