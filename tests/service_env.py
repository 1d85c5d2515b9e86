"""dnsshimd, the parse service, as the tests run it: started on a socket of
the test's own, waited for, stopped, its log read; and the wire format
(csrc/lib/service_wire.h) spoken from Python, to send what no library sends.

    with running(built.service_prog, tmp_path) as svc:
        env = svc.client_env()      # DNS_SHIM_SERVICE=<its socket>, no fallback
        subprocess.run([built.test_prog, ...], env=env)
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

REQUEST_MAGIC = 0x44535131
RESPONSE_MAGIC = 0x44535231
VERSION = 1
OP_PARSE, OP_PING = 1, 2
QUERY, CALLBACKS, MATCH_CASE, COOKIE = 0x1, 0x2, 0x4, 0x8
VERDICT, FAULT = 0, 1
HEADER, OTHER, EDNS_OPTION = 0xFFF0, 0xFFF1, 0xFFF2
REQUEST_MAX = 65535 + 1024 + 2 * 64 + 64


class Service:
    """One dnsshimd on ``socket_dir/parse.sock``."""

    def __init__(self, program, socket_dir, args=(), env=None):
        self.program = Path(program)
        self.dir = Path(socket_dir)
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self.path = self.dir / "parse.sock"
        self.args = list(args)
        self.env = dict(os.environ if env is None else env)
        self.env.pop("DNS_SHIM_SERVICE", None)
        self.log_path = self.dir / "dnsshimd.log"
        self.log_from = 0
        self.proc = None

    def start(self, timeout=60.0):
        self.log_from = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(self.program), "--socket", str(self.path), *self.args],
                                     stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=self.log_file, env=self.env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dnsshimd exited {self.proc.returncode}: {self.log()}")
            if "serving" in self.log()[self.log_from:]:
                return self
            time.sleep(0.02)
        raise RuntimeError(f"dnsshimd did not start within {timeout} s: {self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=30.0) -> int:
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.log_file.close()
        return rc

    def kill(self) -> int:
        return self.stop(signal.SIGKILL)

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def client_env(self, fallback=False, **extra) -> dict:
        """A client's environment: this service, and (unless fallback) a call
        that cannot be parsed by it fails instead of parsing in the process."""
        env = dict(os.environ)
        env["DNS_SHIM_SERVICE"] = str(self.path)
        if fallback:
            env.pop("DNS_SHIM_SERVICE_FALLBACK", None)
        else:
            env["DNS_SHIM_SERVICE_FALLBACK"] = "no"
        env.update(extra)
        return env

    def connect(self, timeout=10.0) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(str(self.path))
        return s


@contextlib.contextmanager
def running(program, socket_dir, args=(), env=None):
    svc = Service(program, socket_dir, args, env).start()
    try:
        yield svc
    finally:
        svc.stop()


# ---------------------------------------------------------------------------
# The wire format, from Python


def request(message: bytes, *, op=OP_PARSE, codes=None, sections=0, query=None,
            magic=REQUEST_MAGIC, version=VERSION) -> bytes:
    """A request frame.  codes: the callbacks' wire codes (None: no callback
    set); query: (id, qtype, qclass, qname bytes, cookie or None, match_case)."""
    body = struct.pack(">IHH", magic, version, op)
    if op == OP_PARSE:
        flags = 0
        if codes is not None:
            flags |= CALLBACKS
        tail = b""
        if query is not None:
            qid, qtype, qclass, qname, cookie, match_case = query
            flags |= QUERY | (COOKIE if cookie else 0) | (MATCH_CASE if match_case else 0)
            tail = struct.pack(">HHHH", qid, qtype, qclass, len(qname)) + qname + (cookie or b"")
        codes = list(codes or [])
        body += struct.pack(">HIH", flags, sections, len(codes))
        body += b"".join(struct.pack(">H", c) for c in codes) + tail
        body += struct.pack(">I", len(message)) + message
    return struct.pack(">I", len(body)) + body


def read_response(sock: socket.socket) -> dict:
    """One response frame: {kind, status, detail, steps (the count), body}."""
    head = _recv(sock, 4)
    (length,) = struct.unpack(">I", head)
    body = _recv(sock, length)
    magic, version, kind, status, detlen = struct.unpack(">IHHiH", body[:14])
    assert (magic, version) == (RESPONSE_MAGIC, VERSION)
    detail = body[14:14 + detlen].decode("utf-8", "replace")
    (steps,) = struct.unpack(">I", body[14 + detlen:18 + detlen])
    return {"kind": kind, "status": status, "detail": detail, "steps": steps, "body": body}


def _recv(sock, n) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} octets")
        data += chunk
    return data
