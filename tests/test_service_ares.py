"""libdnsshim_ares through dnsshimd: the classic parsers, the expand
functions and ``ares_dns_parse`` give in a c-ares program exactly what they
give parsing in the process, and the program starts no Python.

Every comparison runs the same program twice on the same messages, once
with ``DNS_SHIM_SERVICE=none`` (in the process) and once through a service
of the test's own with ``DNS_SHIM_SERVICE_FALLBACK=no`` (a call the service
cannot answer fails instead of parsing in the process), and asks for the
same output, byte for byte.  The service's side of a c-ares call is
libdnsshim_ares itself, loaded by dnsshimd; the client's reader of its
answer is fuzzed by tests/fuzz/fuzz_service_ares.c.
"""

import os
import socket
import struct
import subprocess

import pytest

import cares_source
import mutator
from conftest import loops, require_cares, require_corpus, write_messages
from dnsshim_build import pipeline
from service_env import Service

import service_env

SEED = 20261207


@pytest.fixture(scope="module")
def progs(built):
    require_cares()
    return built.dir


@pytest.fixture(scope="module")
def service(built, tmp_path_factory):
    svc = Service(built.service_prog, tmp_path_factory.mktemp("service-ares") / "run").start()
    yield svc
    assert svc.stop() == 0, svc.log()


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    """The vectors, the malformed and accepted cases, and the mutants; no
    file over 65,535 octets (which no transport carries: such a buffer is
    judged in the process)."""
    where = tmp_path_factory.mktemp("ares-service-messages")
    files = write_messages(where, accepted=True)
    for i, wire in enumerate(mutator.mutants(loops(3000, 300), SEED)):
        files.append(where / f"mutant_{i}.bin")
        files[-1].write_bytes(wire)
    return files


def _local_env(**extra):
    return dict(os.environ, DNS_SHIM_SERVICE="none", **extra)


def _every_parser(prog, files, env):
    result = subprocess.run([str(prog), "-"], input="".join(f"{p}\n" for p in files),
                            capture_output=True, text=True, errors="replace", env=env,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, result.stderr


def _same_every_parser(progs, service, files, **extra):
    prog = progs / "ares_every_parser"
    local = _every_parser(prog, files, _local_env())
    through = _every_parser(prog, files, service.client_env(**extra))
    if through[0] != local[0]:
        a, b = local[0].splitlines(), through[0].splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise AssertionError(f"line {first}: in the process {a[first - 1:first + 2]!r}, "
                             f"through the service {b[first - 1:first + 2]!r}")
    assert through[1] == local[1] == ""
    return local[0]


def test_every_classic_parser_gives_the_same_through_the_service(progs, service, messages):
    out = _same_every_parser(progs, service, messages)
    # Real values on both sides: results, NODATA and every class of refusal.
    assert "a host=1 ttls=8 rc=0 name=" in out
    for code in (1, 10, 8):
        assert f" rc={code}" in out
    assert "expand_name @12 rc=0 len=" in out
    for parser in ("mx", "srv", "txt", "naptr", "caa", "uri", "soa"):
        assert f"\n{parser} rc=0" in out, parser


def test_the_shared_corpus_gives_the_same_through_the_service(progs, service):
    files = [p for folder in ("good", "bad", "captures", "cares-fuzzinput")
             for p in require_corpus(folder) if p.stat().st_size <= 65535]
    assert len(files) > 150
    _same_every_parser(progs, service, files)


def test_a_c_ares_program_through_the_service_starts_no_python(progs, service, messages,
                                                               tmp_path):
    """With no Python to start (DNS_SHIM_PYTHON names none, which makes
    every parse in the process ARES_ENOTINITIALIZED) the answers are still
    the same, and the process opens neither runtime (libdnsshim's, the
    c-ares layer's), nor libpython, nor a file of Python's."""
    files = messages[:200]
    prog = progs / "ares_every_parser"
    local = _every_parser(prog, files, _local_env())
    trace = tmp_path / "trace"
    env = service.client_env(DNS_SHIM_PYTHON="/nonexistent/python3")
    result = subprocess.run(["strace", "-f", "-e", "trace=openat,clone,clone3", "-o", str(trace),
                             str(prog), "-"], input="".join(f"{p}\n" for p in files),
                            capture_output=True, text=True, errors="replace", env=env,
                            timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == local[0]
    opened = trace.read_text(errors="replace")
    assert pipeline.RUNTIME_SONAME not in opened
    assert pipeline.DNSSHIM_ARES.runtime_soname not in opened
    assert "libpython" not in opened
    assert ".pyc" not in opened and "encodings" not in opened
    assert "clone" not in opened, "a thread was made"


def test_ares_dns_parse_gives_the_same_through_the_service(ares_dnsrec, built, service,
                                                           tmp_path):
    """ares_dns_parse (tests/c/ares_dnsrec.c against c-ares 1.34, our
    library preloaded): the same status and the same record written, under
    no flag and under every raw flag."""
    files = write_messages(tmp_path, accepted=True,
                           corpus=("good", "bad", "captures", "cares-fuzzinput"))
    files = [f for f in files if f.stat().st_size <= 65535]
    ours = built.dir / pipeline.DNSSHIM_ARES.soname
    for flags in (None, 63):
        local = cares_source.run_driver(ares_dnsrec, files, preload=ours, flags=flags,
                                        env=_local_env())
        through = cares_source.run_driver(ares_dnsrec, files, preload=ours, flags=flags,
                                          env=service.client_env())
        diff = [f.name for f in files if local[f] != through[f]]
        assert not diff, (diff[:5], [(local[f], through[f]) for f in files
                                     if f.name in diff[:2]])
        assert sum(status == 0 for status, _ in local.values()) > 100


def _ask(path, body: bytes) -> bytes:
    """One c-ares request's answer, without its 4-octet length."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        req = struct.pack(">IHH", service_env.REQUEST_MAGIC, service_env.VERSION, 3) + body
        s.sendall(struct.pack(">I", len(req)) + req)
        head = s.recv(4, socket.MSG_WAITALL)
        (n,) = struct.unpack(">I", head)
        return s.recv(n, socket.MSG_WAITALL)


@pytest.mark.parametrize("body, why", [
    (b"", "no body"),
    (struct.pack(">HIII", 15, 0, 0, 0), "kind 15, which is none"),
    (struct.pack(">HIII", 1, 2, 0, 0), "a flag a parser has not"),
    (struct.pack(">HIII", 1, 0, 4, 12) + bytes(12), "an offset for a parser"),
    (struct.pack(">HIII", 13, 0, 12, 12) + bytes(12), "an offset past the message"),
    (struct.pack(">HIII", 1, 0, 0, 13) + bytes(12), "a message shorter than its length"),
    (struct.pack(">HIII", 1, 0, 0, 11) + bytes(12), "an octet after the message"),
])
def test_a_malformed_c_ares_request_is_a_fault_and_the_service_goes_on(service, body, why):
    answer = _ask(service.path, body)
    magic, version, kind, status, detlen = struct.unpack(">IHHiH", answer[:14])
    assert (magic, kind) == (service_env.RESPONSE_MAGIC, service_env.FAULT), why
    assert answer[14:14 + detlen] == b"a malformed request"
    # The next client is served.
    good = _ask(service.path, struct.pack(">HIII", 1, 1, 0, 12) + bytes.fromhex(
        "123481800000000000000000"))
    assert struct.unpack(">HH", good[4:8]) == (service_env.VERSION, service_env.VERDICT)
