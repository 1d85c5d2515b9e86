"""A private machine for a glibc NSS ``hosts`` module: commands run in a
network and mount namespace of their own, with a private /etc and a DNS
responder on 127.0.0.1 port 53 that answers from a zone the test gives.

    result = nss_env.run(tmp_path, {("www.example.test", "A"):
                                    ["www.example.test. 300 IN A 192.0.2.1"]},
                         [nss_env.getent("hosts", "www.example.test")])
    result.commands[0].stdout      # what getent printed
    result.queries                 # [Query("udp", "www.example.test", "AAAA"), ...]

What ``run()`` sets up, as root, with ``unshare --net --mount --uts``:

- the loopback interface up (127.0.0.1 and ::1), the only one up, and on
  it ``addresses`` (default ADDRESSES: one IPv4 and one IPv6 address
  that are not loopback, with no route beyond them), so that getaddrinfo's
  AI_ADDRCONFIG (getent ahosts, ahostsv4, ahostsv6 use it) sees IPv4 and
  IPv6 configured, as on a dual-stack machine, and asks for A and AAAA: on
  a machine with loopback alone it asks nothing for AF_INET or AF_INET6;
- the host name ``nss-env`` (no dot: glibc's default search domain, taken
  from the host name when resolv.conf names none, is empty);
- a copy of this machine's /etc (made in the namespace, on a tmpfs of its
  own), bind-mounted over /etc for every process in the namespace, with
  ``nsswitch.conf``, ``resolv.conf``, ``hosts`` (and ``gai.conf``,
  ``host.conf``, any ``etc_files``) written as the test gives them; with
  ``library_dirs``, an ``ld.so.cache`` made by ldconfig over those folders
  first, then the copy's own ld.so.conf, so that dlopen of a library by its
  bare soname finds it there, in a setuid program too (which ignores
  LD_LIBRARY_PATH); neither the machine's /etc nor ldconfig's auxiliary
  cache (/var/cache/ldconfig) is ever written;
- an empty directory over /run/nscd and /var/run/nscd, where they exist, so
  that no nscd of the machine answers;
- the responder (this file run as a program, by the Python running pytest,
  which then runs the commands as its children), on 127.0.0.1 and ::1,
  port 53, UDP and TCP, which logs every query;

then runs the commands one after another and returns what each printed and
its exit status, with the responder's log.

The zone: a mapping from ``(qname, qtype)`` to an entry.  qname is
case-insensitive, with or without its final dot; qtype is a type's text
("A", "AAAA", "PTR") or number.  An entry is one of:

- ``records(answer=..., authority=..., additional=..., rcode=..., aa=...,
  tc_udp=...)`` (a dict of those keys; a plain list of lines is the answer
  alone): a reply dnspython builds from the query (``make_response``): the
  query's ID, question and RD, QR and RA set, AA as ``aa`` (default true),
  the rcode (default NOERROR), and the records, each a line in zone-file
  form (``"www.example.test. 300 IN A 192.0.2.1"``; the TTL and class may
  be left out, TTL 0 then; names are absolute whether or not they end in a
  dot), in the order given, each record its own RRset.  A query with EDNS
  gets an OPT record back (dnspython's).  Over UDP a reply longer than the
  query allows (512 octets, or the EDNS payload size) is sent truncated:
  header and question with TC set, as ``tc_udp`` does;
- ``raw(wire, tc_udp=...)``: those octets as they are, the first two (the
  ID) replaced by the query's; over TCP with the two-octet length before
  them;
- ``DROP``: no reply, over either transport.

With ``tc_udp`` true, the UDP reply is the header and the question only
(and an OPT record when the query had one), with TC set; the TCP reply is
the entry's.

A query the zone has no entry for gets what a server authoritative for
``apex`` (default ``example.test``) gives: NODATA (NOERROR, no answer) when
its name owns an entry of another type, is an ancestor of one, or is the
apex; else NXDOMAIN; either with the apex's SOA in the authority section
when the name is at or under the apex, else the root's SOA.  The apex's SOA
query is answered with that SOA.

The log, ``Result.queries``: each query as it was read, in order, as
``Query(transport, qname, qtype)``: "udp" or "tcp", the name lowercased
without its final dot ("." for the root), the type's text ("A", "AAAA",
"TYPE65280"); a query dnspython cannot read is logged with qname and qtype
"" and answered FORMERR.  ``Result.received`` has, for each, the server
address it reached, its octets (its flags, ID, EDNS) and the reply's.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import NamedTuple

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype

#: The environment of a command that gives none (``command(env=...)`` replaces it whole).
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

#: The addresses the namespace's loopback interface has beside 127.0.0.1 and
#: ::1 (documentation prefixes, apart from the 192.0.2.0/24 and 2001:db8::/48
#: that tests answer with).
ADDRESSES = ("198.51.100.1/24", "2001:db8:ff::1/64")

#: The zone apex the default replies speak for.
APEX = "example.test"

#: Files of the private /etc written unless ``etc_files`` says otherwise:
#: glibc's default address sorting (no gai.conf rule of this machine's) and
#: Debian's host.conf, so that results do not depend on the machine.
ETC_DEFAULTS = {"gai.conf": "", "host.conf": "multi on\n"}

#: The host name inside the namespace.
HOSTNAME = "nss-env"

#: An entry: no reply at all, over UDP or TCP.
DROP = {"drop": True}

#: Well-formed answers the NSS tests share: www with two A records and an
#: AAAA record, alias -> mid -> www (a CNAME chain, for A and AAAA), and
#: www's first address's PTR record.
SAMPLE_ZONE = {
    ("www.example.test", "A"): ["www.example.test. 300 IN A 192.0.2.1",
                                "www.example.test. 300 IN A 192.0.2.2"],
    ("www.example.test", "AAAA"): ["www.example.test. 300 IN AAAA 2001:db8::1"],
    ("alias.example.test", "A"): ["alias.example.test. 60 IN CNAME mid.example.test.",
                                  "mid.example.test. 60 IN CNAME www.example.test.",
                                  "www.example.test. 300 IN A 192.0.2.1"],
    ("alias.example.test", "AAAA"): ["alias.example.test. 60 IN CNAME mid.example.test.",
                                     "mid.example.test. 60 IN CNAME www.example.test.",
                                     "www.example.test. 300 IN AAAA 2001:db8::1"],
    ("1.2.0.192.in-addr.arpa", "PTR"): ["1.2.0.192.in-addr.arpa. 300 IN PTR www.example.test."],
}

_SOA = "{apex}. 3600 IN SOA ns.{apex}. hostmaster.{apex}. 1 3600 600 86400 60"
_ROOT_SOA = ". 86400 IN SOA a.root-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400"
_RECORD_KEYS = {"answer", "authority", "additional", "rcode", "aa", "tc_udp", "delay_udp"}


class Query(NamedTuple):
    """One query the responder read: "udp" or "tcp", the name lowercased
    without its final dot, the type's text."""
    transport: str
    qname: str
    qtype: str


class Received(NamedTuple):
    """One query's transport, the server address it reached ("127.0.0.1"
    or "::1"), its octets as read, the reply's as sent (over TCP without
    the length; None: no reply), and the client's port it came from (one
    socket's questions share it)."""
    transport: str
    server: str
    wire: bytes
    reply: bytes | None
    port: int


@dataclasses.dataclass
class CommandResult:
    """What one command did: its argv as given (without setpriv's words
    for a user), its exit status (negative: the signal that ended it;
    None: it was killed at its timeout), its output, its time."""
    argv: list
    returncode: int | None
    stdout_bytes: bytes
    stderr_bytes: bytes
    timed_out: bool
    seconds: float

    @property
    def stdout(self) -> str:
        """stdout as UTF-8 text (an octet that is not, as a surrogate escape)."""
        return self.stdout_bytes.decode("utf-8", "surrogateescape")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "surrogateescape")


@dataclasses.dataclass
class Result:
    """The commands' results in the order given, the responder's log, and
    where the time went (seconds): ``copy_etc`` (copying /etc, in the
    namespace), ``setup`` (from run()'s start until the first command
    started), ``total``; with a service, its log."""
    commands: list
    queries: list
    received: list
    timings: dict
    service_log: str = ""


# ---- building commands and replies -----------------------------------------------------


def command(argv, *, env=None, user=None, stdin=None, timeout=None) -> dict:
    """A command for run(): argv; env, the whole environment (default: ENV);
    user, a uid to run it as (uid and gid, no supplementary groups, through
    setpriv); stdin, text or bytes (default: none, /dev/null); timeout in
    seconds (default: what is left of run()'s)."""
    return {"argv": [str(a) for a in argv], "env": env, "user": user, "stdin": stdin,
            "timeout": timeout}


def getent(*args, **options) -> dict:
    """``getent ARGS...`` as a command (options as command()'s)."""
    return command(["getent", *args], **options)


def records(answer=(), authority=(), additional=(), *, rcode="NOERROR", aa=True,
            tc_udp=False, delay_udp=0.0) -> dict:
    """A zone entry answered with these records (lines in zone-file form);
    over UDP after ``delay_udp`` seconds, later queries answered
    meanwhile."""
    return {"answer": list(answer), "authority": list(authority),
            "additional": list(additional), "rcode": rcode, "aa": aa, "tc_udp": tc_udp,
            "delay_udp": delay_udp}


def raw(wire: bytes, *, tc_udp: bool = False) -> dict:
    """A zone entry answered with these octets, the query's ID written over
    the first two."""
    return {"wire": bytes(wire), "tc_udp": tc_udp}


def reply_wire(qname, qtype, answer=(), authority=(), additional=(), rcode="NOERROR", id=0,
               *, aa=True, rd=True, ra=True, tc=False) -> bytes:
    """A well-formed reply's octets, as dnspython writes it: the question
    (qname, qtype, IN), ID ``id``, QR set, AA, RD, RA and TC as given, the
    rcode, and the records (lines as a records() entry's), for a test to
    corrupt and hand over as a raw() entry."""
    query = dns.message.make_query(qname, qtype)
    query.id = id
    query.flags = dns.flags.RD if rd else 0
    reply = dns.message.make_response(query)
    _fill(reply, {"answer": answer, "authority": authority, "additional": additional,
                  "rcode": rcode, "aa": aa})
    if not ra:
        reply.flags &= ~dns.flags.RA
    if tc:
        reply.flags |= dns.flags.TC
    return reply.to_wire()


def _rrsets(lines) -> list:
    """RR lines in zone-file form as RRsets of one record each, in order;
    names absolute (the origin is the root)."""
    if not lines:
        return []
    message = dns.message.from_text(";ANSWER\n" + "\n".join(lines) + "\n",
                                    one_rr_per_rrset=True, origin=dns.name.root,
                                    relativize=False)
    return list(message.answer)


def _fill(reply, entry: dict) -> None:
    """A records entry into a reply made by make_response: flags, rcode, sections."""
    reply.flags |= dns.flags.RA
    if entry.get("aa", True):
        reply.flags |= dns.flags.AA
    rcode = entry.get("rcode", "NOERROR")
    reply.set_rcode(dns.rcode.from_text(rcode) if isinstance(rcode, str) else int(rcode))
    reply.answer = _rrsets(entry.get("answer", ()))
    reply.authority = _rrsets(entry.get("authority", ()))
    reply.additional = _rrsets(entry.get("additional", ()))


def _name(text) -> str:
    """A name as the zone's keys and the log spell it: lowercased, without
    its final dot ("." for the root)."""
    name = dns.name.from_text(str(text)) if not isinstance(text, dns.name.Name) else text
    out = name.canonicalize().to_text()
    return out if out == "." else out.rstrip(".")


def _type(qtype) -> str:
    if isinstance(qtype, str):
        qtype = dns.rdatatype.from_text(qtype)
    return dns.rdatatype.to_text(dns.rdatatype.RdataType.make(int(qtype)))


def _zone_spec(zone) -> list:
    """The zone as JSON-ready entries, each checked (records parsed) here,
    where a mistake fails the test that made it."""
    entries = []
    for (qname, qtype), entry in zone.items():
        if isinstance(entry, (list, tuple)):
            entry = records(answer=entry)
        entry = dict(entry)
        if entry.get("drop"):
            if set(entry) != {"drop"}:
                raise ValueError(f"zone entry {qname} {qtype}: drop takes no other key: {entry}")
            form = {"drop": True}
        elif "wire" in entry:
            if set(entry) - {"wire", "tc_udp"}:
                raise ValueError(f"zone entry {qname} {qtype}: a raw entry has wire and "
                                 f"tc_udp only: {sorted(entry)}")
            form = {"wire": bytes(entry["wire"]).hex(), "tc_udp": bool(entry.get("tc_udp"))}
        else:
            unknown = set(entry) - _RECORD_KEYS
            if unknown:
                raise ValueError(f"zone entry {qname} {qtype}: unknown keys {sorted(unknown)}")
            form = {key: list(entry.get(key, ())) for key in ("answer", "authority",
                                                             "additional")}
            form.update(rcode=entry.get("rcode", "NOERROR"), aa=bool(entry.get("aa", True)),
                        tc_udp=bool(entry.get("tc_udp")),
                        delay_udp=float(entry.get("delay_udp", 0.0)))
            try:
                reply = dns.message.make_response(dns.message.make_query(str(qname),
                                                                         _type(qtype)))
                _fill(reply, form)
                reply.to_wire()
            except Exception as error:
                raise ValueError(f"zone entry {qname} {qtype}: {type(error).__name__}: "
                                 f"{error} in {form}") from error
        entries.append({"qname": _name(qname), "qtype": _type(qtype), **form})
    return entries


# ---- run --------------------------------------------------------------------------------


def _unavailable(reason: str) -> None:
    """Skip the test (fail instead under CI=true, where the machine has
    what the harness needs)."""
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"the NSS test harness needs {reason}, which CI must have")
    pytest.skip(f"the NSS test harness needs {reason}")


def run(tmp_path, zone, commands, *, nsswitch="hosts: files dns\n",
        resolv="nameserver 127.0.0.1\n", hosts="127.0.0.1 localhost\n", library_dirs=(),
        etc_files=None, apex=APEX, addresses=ADDRESSES, timeout=60, service=None) -> Result:
    """The commands run one after another in a namespace of their own (the
    module's docstring says what it holds), the responder answering from
    ``zone``; returns their results and the responder's log.

    tmp_path: a folder (made if missing) for the run's files, a folder of
    their own in it for each run.  commands: command()'s dicts (getent()'s),
    or dataclasses with the same fields.  nsswitch, resolv, hosts: the
    private /etc's nsswitch.conf, resolv.conf and hosts.  library_dirs:
    folders whose libraries the private ld.so.cache lists first, in that
    order (a soname in two: the first folder's is loaded); name each
    library file by its soname (ldconfig runs with -X and makes no link).
    etc_files: other files of the private /etc, {name: text or bytes}, over
    ETC_DEFAULTS.  apex: the zone apex of the default replies.  addresses:
    the loopback interface's other addresses (CIDR).  timeout: seconds for
    all the commands together (a command's own timeout is within it).
    service: dnsshimd's path (or [path, option...]): /run is then a tmpfs of
    the namespace's own, and root starts the service on its default socket
    (/run/dnsshim/parse.sock) before the first command and stops it
    (SIGTERM) after the last; its log is the result's ``service_log``.

    Needs root, unshare, ip, mount and a tmpfs (and setpriv for a command with a
    user, ldconfig with library_dirs); without them, or where namespaces
    are refused, the test is skipped (under CI=true it fails).  A runner
    that fails otherwise raises RuntimeError with its output."""
    from conftest import require_program

    started = time.monotonic()
    commands = [dict(c) if not dataclasses.is_dataclass(c) else dataclasses.asdict(c)
                for c in commands]
    if os.geteuid() != 0:
        _unavailable("root (namespaces, mount --bind, a responder on port 53)")
    for program, package in (("unshare", "util-linux"), ("mount", "mount"), ("ip", "iproute2")):
        require_program(program, package)
    if any(c.get("user") is not None for c in commands):
        require_program("setpriv", "util-linux")
    if library_dirs:
        require_program("ldconfig", "libc-bin")

    Path(tmp_path).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="nss-env-", dir=tmp_path))
    (work / "private").mkdir()
    files = {**ETC_DEFAULTS, **(etc_files or {}), "nsswitch.conf": nsswitch,
             "resolv.conf": resolv, "hosts": hosts}
    spec = {
        "private": str(work / "private"),
        "etc_files": {name: (content.encode() if isinstance(content, str) else bytes(content))
                      .hex() for name, content in files.items()},
        "ld_conf": None,
        "addresses": list(addresses),
        "zone": _zone_spec(zone or {}),
        "apex": _name(apex),
        "timeout": timeout,
        "service": None if service is None else [str(a) for a in (
            [service] if isinstance(service, (str, os.PathLike)) else service)],
        "started": time.time() - (time.monotonic() - started),
        "result": str(work / "result.json"),
        "commands": [{
            "argv": [str(a) for a in c["argv"]],
            "env": dict(ENV if c.get("env") is None else c["env"]),
            "user": c.get("user"),
            "stdin": None if c.get("stdin") is None else (
                c["stdin"].encode() if isinstance(c["stdin"], str) else bytes(c["stdin"])).hex(),
            "timeout": c.get("timeout"),
        } for c in commands],
    }
    if library_dirs:
        conf = work / "ld.so.conf"
        conf.write_text("".join(f"{Path(d).resolve()}\n" for d in library_dirs)
                        + "include /etc/ld.so.conf\n")
        spec["ld_conf"] = str(conf)
    (work / "spec.json").write_text(json.dumps(spec))

    runner = subprocess.run(
        ["unshare", "--net", "--mount", "--uts", "--propagation", "private",
         sys.executable, "-I", str(Path(__file__).resolve()), str(work / "spec.json")],
        capture_output=True, text=True, env=dict(ENV), timeout=timeout + 30)
    result = work / "result.json"
    if not result.exists():
        if runner.stderr.startswith("unshare:"):
            _unavailable(f"new network, mount and UTS namespaces: {runner.stderr.strip()}")
        raise RuntimeError(f"the NSS test harness's runner failed (status {runner.returncode}):"
                           f"\n{runner.stdout}{runner.stderr}")
    out = json.loads(result.read_text())
    if out["errors"]:
        raise RuntimeError("the NSS test harness's responder failed:\n" + "\n".join(out["errors"]))
    return Result(
        commands=[CommandResult(argv=c["argv"], returncode=c["returncode"],
                                stdout_bytes=bytes.fromhex(c["stdout"]),
                                stderr_bytes=bytes.fromhex(c["stderr"]),
                                timed_out=c["timed_out"], seconds=c["seconds"])
                  for c in out["commands"]],
        queries=[Query(*q) for q in out["queries"]],
        received=[Received(t, server, bytes.fromhex(w), None if r is None else bytes.fromhex(r),
                           port)
                  for t, server, w, r, port in out["received"]],
        timings={"copy_etc": out["copy_etc"],
                 "setup": out["first_command"] - spec["started"],
                 "total": time.monotonic() - started},
        service_log=out.get("service_log", ""))


# ---- inside the namespace: the runner and the responder --------------------------------


class _Responder:
    """The zone's server on 127.0.0.1 and ::1, port 53, UDP and TCP: one
    thread, one selector, so that the log is in the order queries were
    read."""

    def __init__(self, zone: list, apex: str):
        self.entries = {(e["qname"], e["qtype"]): e for e in zone}
        self.apex = apex
        self.names = {apex}
        for qname, _ in self.entries:
            labels = qname.split(".")
            self.names.update(".".join(labels[i:]) for i in range(len(labels)))
        self.queries, self.received, self.errors = [], [], []
        # Replies made from the zone, by transport and query less its ID: a
        # 64 KiB reply takes dnspython a second or more to make, and a
        # caller growing its buffer (ERANGE) asks the same question again.
        self.made = {}
        # UDP replies held back (delay_udp): [due, socket, reply, peer]
        self.held = []
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        for family, address in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
            try:
                udp = socket.socket(family, socket.SOCK_DGRAM)
                tcp = socket.socket(family, socket.SOCK_STREAM)
                for s in (udp, tcp):
                    if family == socket.AF_INET6:
                        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind((address, 53))
            except OSError:
                if family == socket.AF_INET:
                    raise
                continue  # no IPv6 in this kernel: 127.0.0.1 only
            tcp.listen(16)
            self.selector.register(udp, selectors.EVENT_READ, ("udp", address))
            self.selector.register(tcp, selectors.EVENT_READ, ("listen", address))
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        """Returns once every query sent so far is read and answered."""
        self.stopping.set()
        self.thread.join()

    def _loop(self):
        try:
            self._serve()
        except Exception:
            self.errors.append(traceback.format_exc())

    def _serve(self):
        while True:
            stopping = self.stopping.is_set()
            events = self.selector.select(0 if stopping else 0.01 if self.held else 0.05)
            now = time.monotonic()
            for due, sock, reply, peer in [h for h in self.held if h[0] <= now or stopping]:
                sock.sendto(reply, peer)
            self.held = [h for h in self.held if h[0] > now and not stopping]
            if not events and stopping:
                return
            for key, _ in events:
                kind, address = key.data[0], key.data[1]
                if kind == "udp":
                    wire, peer = key.fileobj.recvfrom(65535)
                    reply, delay = self._answer("udp", address, wire, peer[1])
                    if reply is not None and delay > 0:
                        self.held.append([time.monotonic() + delay, key.fileobj, reply, peer])
                    elif reply is not None:
                        key.fileobj.sendto(reply, peer)
                elif kind == "listen":
                    conn, peer = key.fileobj.accept()
                    self.selector.register(conn, selectors.EVENT_READ,
                                           ("tcp", address, bytearray(), peer[1]))
                else:
                    self._tcp(key)

    def _tcp(self, key):
        conn, (_, address, buffer, port) = key.fileobj, key.data
        try:
            data = conn.recv(65535)
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(conn)
            conn.close()
            return
        buffer += data
        while len(buffer) >= 2 and len(buffer) >= 2 + int.from_bytes(buffer[:2], "big"):
            size = int.from_bytes(buffer[:2], "big")
            wire = bytes(buffer[2:2 + size])
            del buffer[:2 + size]
            reply, _ = self._answer("tcp", address, wire, port)
            if reply is not None:
                try:
                    conn.sendall(len(reply).to_bytes(2, "big") + reply)
                except OSError:
                    pass  # the client has gone

    def _answer(self, transport: str, address: str, wire: bytes, port: int):
        """The reply's octets to a query, or None for none, and the seconds
        its zone entry holds a UDP reply back (delay_udp, else 0); logs the
        query and the reply.  A failure is kept in ``errors`` (run() raises
        it) and the query gets no reply."""
        entry = None
        try:
            reply, entry = self._reply(transport, wire)
        except Exception:
            self.errors.append(traceback.format_exc())
            reply = None
        self.received.append((transport, address, wire.hex(),
                              None if reply is None else reply.hex(), port))
        return reply, float(entry.get("delay_udp", 0.0)) if entry is not None else 0.0

    def _reply(self, transport: str, wire: bytes):
        """The reply to a query (None for none) and the zone's entry for its
        question (None for none)."""
        try:
            query = dns.message.from_wire(wire)
            question = query.question[0]
        except Exception:  # anything dnspython refuses: FORMERR, the ID and opcode kept
            self.queries.append((transport, "", ""))
            if len(wire) < 3:
                return None, None
            return wire[:2] + bytes([0x80 | (wire[2] & 0x79), 0x80 | 1]) + bytes(8), None
        qname, qtype = _name(question.name), _type(question.rdtype)
        self.queries.append((transport, qname, qtype))
        entry = self.entries.get((qname, qtype))
        if entry is not None and entry.get("drop"):
            return None, entry
        if entry is not None and entry.get("tc_udp") and transport == "udp":
            return self._truncated(query, entry.get("aa", True)), entry
        if entry is not None and "wire" in entry:
            reply = bytes.fromhex(entry["wire"])
            return (query.id.to_bytes(2, "big") + reply[2:] if len(reply) >= 2 else reply), entry
        made = self.made.get((transport, wire[2:]))
        if made is None:
            made = self.made[(transport, wire[2:])] = self._make(transport, query, entry, qname,
                                                                 qtype)
        return wire[:2] + made[2:], entry

    def _make(self, transport, query, entry, qname, qtype) -> bytes:
        """The reply to a query the zone answers."""
        reply = dns.message.make_response(query, recursion_available=True)
        _fill(reply, entry if entry is not None else self._default(qname, qtype))
        if transport == "udp":
            limit = max(512, query.payload) if query.edns >= 0 else 512
            try:
                return reply.to_wire(max_size=limit)
            except dns.exception.TooBig:
                return self._truncated(query, reply.flags & dns.flags.AA)
        return reply.to_wire()

    def _truncated(self, query, aa) -> bytes:
        """The header and question (and OPT, for a query with EDNS), TC set."""
        reply = dns.message.make_response(query, recursion_available=True)
        reply.flags |= dns.flags.TC | (dns.flags.AA if aa else 0)
        return reply.to_wire()

    def _default(self, qname: str, qtype: str) -> dict:
        """NODATA or NXDOMAIN, with the SOA of the apex or of the root."""
        under = qname == self.apex or qname.endswith("." + self.apex)
        soa = _SOA.format(apex=self.apex) if under else _ROOT_SOA
        if qname == self.apex and qtype == "SOA":
            return {"answer": [soa]}
        return {"authority": [soa], "rcode": "NOERROR" if qname in self.names else "NXDOMAIN",
                "aa": under}


def _check(*argv):
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def _setup(spec: dict) -> float:
    """The namespace's machine: host name, loopback and its addresses,
    private /etc, no nscd, the private ld.so.cache.  Returns the seconds
    the copy of /etc took."""
    socket.sethostname(HOSTNAME)
    _check("ip", "link", "set", "lo", "up")
    for address in spec["addresses"]:
        _check("ip", "address", "add", address, "dev", "lo",
               *(["nodad"] if ":" in address else []))
    _check("mount", "--make-rprivate", "/")
    if spec.get("service"):
        _check("mount", "-t", "tmpfs", "-o", "mode=755", "nss-env-run", "/run")
    # Copied onto a tmpfs: a tenth of the time of a copy onto a disk, and
    # gone with the namespace.
    private = Path(spec["private"])
    _check("mount", "-t", "tmpfs", "-o", "mode=700", "nss-env", private)
    start = time.monotonic()
    shutil.copytree("/etc", private / "etc", symlinks=True)
    copied = time.monotonic() - start
    for name, content in spec["etc_files"].items():
        path = private / "etc" / name
        if path.is_symlink() or path.exists():
            path.unlink()  # a symlink (resolv.conf's often is) replaced, not followed
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes.fromhex(content))
    _check("mount", "--bind", private / "etc", "/etc")
    (private / "empty").mkdir()
    done = set()
    for nscd in ("/run/nscd", "/var/run/nscd"):
        if os.path.isdir(nscd) and os.path.realpath(nscd) not in done:
            done.add(os.path.realpath(nscd))
            _check("mount", "--bind", private / "empty", nscd)
    if spec["ld_conf"]:
        # ldconfig writes its auxiliary cache (/var/cache/ldconfig/aux-cache,
        # making the folder if need be) whatever -C says: into an empty folder
        # over the nearest that exists, for ldconfig's run alone.
        aux = private / "ldconfig-aux"
        aux.mkdir(mode=0o700)
        over = next(p for p in ("/var/cache/ldconfig", "/var/cache", "/var") if os.path.isdir(p))
        _check("mount", "--bind", aux, over)
        _check("ldconfig", "-X", "-C", "/etc/ld.so.cache", "-f", spec["ld_conf"])
        _check("umount", over)
    return copied


def _run_command(c: dict, deadline: float) -> dict:
    """One command run, as run()'s result records it (its argv as given)."""
    argv = c["argv"]
    if c["user"] is not None:
        user = int(c["user"])
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    left = max(deadline - time.monotonic(), 0.001)
    limit = left if c["timeout"] is None else min(float(c["timeout"]), left)
    stdin = None if c["stdin"] is None else bytes.fromhex(c["stdin"])
    start = time.monotonic()
    try:
        done = subprocess.run(argv, env=c["env"], cwd="/", capture_output=True, timeout=limit,
                              input=stdin, stdin=subprocess.DEVNULL if stdin is None else None)
        out = (done.returncode, done.stdout, done.stderr, False)
    except subprocess.TimeoutExpired as expired:
        out = (None, expired.stdout or b"", expired.stderr or b"", True)
    except OSError as error:  # not found, not executable: as a shell would say it
        out = (127 if isinstance(error, FileNotFoundError) else 126, b"",
               f"{argv[0]}: {error.strerror}\n".encode(), False)
    return {"argv": c["argv"], "returncode": out[0], "stdout": out[1].hex(),
            "stderr": out[2].hex(), "timed_out": out[3], "seconds": time.monotonic() - start}


def _main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    deadline = time.monotonic() + spec["timeout"]
    copied = _setup(spec)
    responder = _Responder(spec["zone"], spec["apex"])
    responder.start()
    service = _start_service(spec["service"]) if spec.get("service") else None
    first = time.time()
    results = [_run_command(c, deadline) for c in spec["commands"]]
    service_log = ""
    if service is not None:
        service.terminate()
        service.wait(timeout=30)
        service_log = Path("/run/dnsshimd.log").read_text(errors="replace")
    responder.stop()
    Path(spec["result"]).write_text(json.dumps({
        "commands": results, "queries": responder.queries, "received": responder.received,
        "errors": responder.errors, "first_command": first, "copy_etc": copied,
        "service_log": service_log}))


def _start_service(argv):
    """dnsshimd, started by root on its default socket; waited for."""
    log = open("/run/dnsshimd.log", "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                            env={"PATH": "/usr/bin:/bin"})
    for _ in range(1200):
        text = Path("/run/dnsshimd.log").read_text(errors="replace")
        if "serving" in text:
            return proc
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("dnsshimd did not start: " + Path("/run/dnsshimd.log").read_text())


if __name__ == "__main__":
    _main(sys.argv[1])
