"""A call through dnsshimd, the parse service, gives what the same call gives
in the process: the same status, the same callbacks with the same values in
the same order, the same dns_shim_last_error.  Checked from C (the test
driver, tests/c/dnsshim_test.c), each result compared with a run of the same
driver with DNS_SHIM_SERVICE=none, over every test message, the shared
corpus, the agreement mutants and the history generator's messages, with
every way of setting the callbacks; and with a query (dns_shim_process_reply)
over every match and mismatch.

Through the service the client has no fallback (DNS_SHIM_SERVICE_FALLBACK=no):
an answer that did not come from the service fails the comparison.

Then the client's rules: where the service is absent it parses in the
process and says so once; with the fallback turned off it fails with
DNS_SHIM_ERR_INIT naming the service; a socket or directory that others
could have made or replaced is never used; a setuid program reads no
DNS_SHIM_SERVICE and uses root's service alone; a call through the service
starts no interpreter.  The fault and load tests: test_service_faults.py.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

import fresh_reference as fresh
import history
import malformed
import mismatch
import mutator
import vectors
from conftest import NOBODY, as_user, loops, require_corpus, require_program, setuid_root_copy
from service_env import Service

SEED = 20261207
MUTANTS = loops(10_000, 1_000)

#: The driver's ways of setting the callbacks: each a list of its options.
MODES = {
    "given": [],
    "registered": ["--registered"],
    "every_section": ["--sections", "7"],
    "authority_only": ["--sections", "2"],
    "no_typed": ["--no-typed"],
    "no_other": ["--no-other", "--sections", "4"],
    "stop_at_2": ["--stop-at", "2"],
    "size_1_0": ["--size-1.0"],
}


@pytest.fixture(scope="module")
def service(built, tmp_path_factory):
    svc = Service(built.service_prog, tmp_path_factory.mktemp("service") / "run").start()
    yield svc
    assert svc.stop() == 0, svc.log()


def _drive(built, env, args, stream: bytes, timeout=900):
    result = subprocess.run([str(built.test_prog), "--detail", *args, "--stream", "-"],
                            input=stream, capture_output=True, env=env, timeout=timeout)
    return result.returncode, result.stdout.decode("utf-8", "replace"), result.stderr


def _local_env():
    env = dict(os.environ)
    env["DNS_SHIM_SERVICE"] = "none"
    return env


def _same(built, service, wires, args=()):
    """The driver's output through the service equals its output in the
    process, byte for byte; returns the lines."""
    stream = fresh.frame(wires)
    local = _drive(built, _local_env(), list(args), stream)
    through = _drive(built, service.client_env(), list(args), stream)
    assert through[0] == local[0], through[2][-2000:]
    if through[1] != local[1]:
        a, b = local[1].splitlines(), through[1].splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise AssertionError(f"line {first}: in the process {a[first:first + 3]!r}, through "
                             f"the service {b[first:first + 3]!r}")
    assert through[2] == local[2]
    lines = local[1].splitlines()
    assert sum(line.startswith("status ") for line in lines) == len(wires)
    return lines


def _test_messages() -> list:
    out = [vectors.wire(n) for n in vectors.NAMES]
    out += [w for w, _ in malformed.CASES.values()] + list(malformed.ACCEPTED.values())
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_test_message_gives_the_same_calls_through_the_service(built, service, mode):
    lines = _same(built, service, _test_messages(), MODES[mode])
    statuses = [line for line in lines if line.startswith("status ")]
    # The comparison holds real values: good messages and every class of bad one.
    assert "status 0 success" in statuses
    assert any(line.startswith("status -6 ") for line in statuses)
    assert any(line.startswith("status -7 ") for line in statuses)
    if mode == "stop_at_2":
        assert any(line.startswith("status -11 ") for line in statuses)


def test_the_shared_corpus_gives_the_same_calls_through_the_service(built, service):
    wires = [p.read_bytes() for folder in ("good", "bad", "captures", "cares-fuzzinput")
             for p in require_corpus(folder)]
    assert len(wires) > 150
    for mode in ("given", "registered", "no_typed", "stop_at_2"):
        _same(built, service, wires, MODES[mode])


def test_the_agreement_mutants_give_the_same_calls_through_the_service(built, service):
    wires = mutator.mutants(MUTANTS, SEED)
    lines = _same(built, service, wires, ["--registered"])
    assert sum(line.startswith("status 0 ") for line in lines) > MUTANTS // 100


def test_the_history_generators_messages_give_the_same_calls_through_the_service(built,
                                                                                service):
    """Every type under every class, first met away from IN, and the
    bounded-state messages: the service's runtime has parsed everything
    before, the process nothing."""
    wires = history.differential_messages(SEED, mutants=loops(1500, 300))
    wires += history.bounded_messages(loops(4000, 400), 50)
    _same(built, service, wires, ["--no-typed"])
    _same(built, service, wires, [])


def _query_args(changes: dict) -> list:
    q = {**mismatch.QUERY, **changes}
    args = ["--expect-id", str(q["id"]), "--expect-name", q["qname"],
            "--expect-type", str(q["qtype"]), "--expect-class", str(q["qclass"])]
    if q.get("match_case"):
        args.append("--match-case")
    if q.get("cookie_client"):
        args += ["--expect-cookie", q["cookie_client"].hex()]
    return args


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_a_reply_checked_against_its_query_gives_the_same_through_the_service(built, service,
                                                                              case):
    wire, changes, status = mismatch.CASES[case]
    lines = _same(built, service, [wire], _query_args(changes))
    assert f"status {int(status)} " in "\n".join(lines) + " "
    lines = _same(built, service, [wire], ["--registered", *_query_args(changes)])


@pytest.mark.parametrize("case", sorted(mismatch.BAD_QUERIES))
def test_a_query_the_library_refuses_is_refused_the_same_through_the_service(built, service,
                                                                             case):
    lines = _same(built, service, [mismatch.GOOD], _query_args(mismatch.BAD_QUERIES[case]))
    assert any(line.startswith("status -12 ") for line in lines)


# ------------------------------------------------------------------ the client's rules


def _one(built, env, wire, *args, tmp_path):
    path = tmp_path / "m.bin"
    path.write_bytes(wire)
    return subprocess.run([str(built.test_prog), "--detail", "--log", *args, str(path)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_call_through_the_service_starts_no_interpreter(built, service, tmp_path):
    """The driver's log handler sees every message of the library, the
    runtime's start line ("runtime: CPython ...") included: through the
    service there is none, and the records are there."""
    result = _one(built, service.client_env(), vectors.wire(vectors.NAMES[0]), tmp_path=tmp_path)
    assert result.returncode == 0
    assert "runtime:" not in result.stdout
    assert "status 0 success" in result.stdout
    local = _one(built, _local_env(), vectors.wire(vectors.NAMES[0]), tmp_path=tmp_path)
    assert "log 6: runtime: CPython" in local.stdout


def test_where_there_is_no_service_the_call_parses_in_the_process_and_says_so_once(
        built, tmp_path):
    env = dict(os.environ, DNS_SHIM_SERVICE=str(tmp_path / "none" / "parse.sock"))
    wire = vectors.wire(vectors.NAMES[0])
    (tmp_path / "a.bin").write_bytes(wire)
    (tmp_path / "b.bin").write_bytes(wire)
    result = subprocess.run([str(built.test_prog), "--detail", "--log", str(tmp_path / "a.bin"),
                             str(tmp_path / "b.bin")], capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0
    logs = [line for line in result.stdout.splitlines() if "parse service" in line]
    assert logs == [f"log 6: the parse service at {tmp_path}/none/parse.sock is not used: its "
                    "directory: No such file or directory; messages are parsed in this process "
                    "(dnsshimd(8))"]
    assert result.stdout.count("status 0 success") == 2
    assert result.stderr == ""


def test_with_the_fallback_off_a_call_without_a_service_fails_with_init(built, tmp_path):
    env = dict(os.environ, DNS_SHIM_SERVICE=str(tmp_path / "parse.sock"),
               DNS_SHIM_SERVICE_FALLBACK="no")
    result = _one(built, env, vectors.wire(vectors.NAMES[0]), tmp_path=tmp_path)
    assert "status -14 the embedded Python runtime could not start" in result.stdout
    assert (f"detail DNS_SHIM_ERR_INIT: the parse service at {tmp_path}/parse.sock cannot "
            "parse: No such file or directory; DNS_SHIM_SERVICE_FALLBACK=no forbids parsing in "
            "this process") in result.stdout
    assert "runtime:" not in result.stdout


class _Listener:
    """A socket that only counts who connects: the service a client must not use."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


@pytest.mark.parametrize("case", ["dir_writable_by_others", "dir_of_another_user",
                                  "socket_of_another_user", "not_a_socket", "relative_path"])
def test_a_service_others_could_have_put_there_is_never_used(built, tmp_path, case):
    """Each case with a listener that counts connections: none; the call
    parses in the process, and the first such fallback is a warning (on
    stderr, where the program set no handler) naming why."""
    d = tmp_path / "svc"
    d.mkdir(mode=0o700)
    path = d / "parse.sock"
    listener = None
    if case == "not_a_socket":
        path.write_text("")
    else:
        listener = _Listener(path)
    why = {
        "dir_writable_by_others": f"the directory {d} can be written by others (mode 0777)",
        "dir_of_another_user": f"the directory {d} belongs to uid 12345, neither root nor this "
                               "process's user",
        "socket_of_another_user": "the socket belongs to uid 12345, neither root nor this "
                                  "process's user",
        "not_a_socket": "it is not a socket",
        "relative_path": "the path is not an absolute path to a socket",
    }[case]
    if case == "dir_writable_by_others":
        os.chmod(d, 0o777)
    elif case == "dir_of_another_user":
        os.chown(d, 12345, 12345)
    elif case == "socket_of_another_user":
        os.chown(path, 12345, 12345)
    named = "svc/parse.sock" if case == "relative_path" else str(path)
    env = dict(os.environ, DNS_SHIM_SERVICE=named)
    wire = vectors.wire(vectors.NAMES[0])
    (tmp_path / "m.bin").write_bytes(wire)
    try:
        result = subprocess.run([str(built.test_prog), "--detail", "m.bin"], cwd=tmp_path,
                                capture_output=True, text=True, env=env, timeout=120)
    finally:
        if listener is not None:
            listener.close()
    assert result.returncode == 0
    assert "status 0 success" in result.stdout
    assert result.stderr.splitlines()[0] == (
        f"dnsshim: the parse service at {named} is not used: {why}; messages are parsed in "
        "this process (dnsshimd(8))")
    assert listener is None or listener.connections == 0


def test_a_service_of_ones_own_is_used(built, tmp_path):
    """The control of the test above: the same listener, trusted, is
    connected to (it answers nothing, so the call then parses in the process)."""
    d = tmp_path / "svc"
    d.mkdir(mode=0o700)
    listener = _Listener(d / "parse.sock")
    (tmp_path / "m.bin").write_bytes(vectors.wire(vectors.NAMES[0]))
    try:
        result = subprocess.run([str(built.test_prog), "--detail", "m.bin"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, DNS_SHIM_SERVICE=str(d / "parse.sock")))
    finally:
        listener.close()
    assert listener.connections == 1
    assert "status 0 success" in result.stdout
    # The listener closes at once: during the request or before the answer.
    assert re.search(r": it closed the connection before (taking the request|its answer was "
                     r"whole); messages are parsed in this process \(dnsshimd\(8\)\)\n$",
                     result.stderr), result.stderr


def _namespace_script(built, client: list) -> str:
    """A shell script for a private mount namespace: /run on a tmpfs of its
    own, root's dnsshimd on the default socket, the client; then the service
    stopped, and the client again."""
    run = " ".join(f"'{c}'" for c in client)
    return f"""
set -e
mount -t tmpfs -o mode=0755 tmpfs /run
'{built.service_prog}' > /run/dnsshimd.log 2>&1 &
pid=$!
for i in $(seq 1 600); do grep -q serving /run/dnsshimd.log && break; sleep 0.05; done
echo '== with the service'
{run}
kill -TERM $pid
wait $pid
echo '== without it'
{run}
"""


def test_a_setuid_program_uses_roots_service_and_never_a_users(built, tmp_path):
    """An unprivileged user runs a setuid-root program with DNS_SHIM_SERVICE
    naming a socket of their own (a listener counts connections to it) and
    DNS_SHIM_SERVICE_FALLBACK=no.  The program never connects to that socket
    and reads neither variable: it parses through root's service on the
    default socket (no interpreter starts in it), and, that service stopped,
    in the process (the fallback the variable would have forbidden): the
    service, stopped, has removed its socket although it had given up root."""
    require_program("unshare", "util-linux")
    require_program("setpriv", "util-linux")
    if os.geteuid() != 0:
        pytest.skip("a mount namespace and a setuid program need root")
    user_dir = Path("/tmp") / f"dnsshim-user-{os.getpid()}"
    user_dir.mkdir(mode=0o700)
    try:
        os.chown(user_dir, NOBODY, NOBODY)
        user_sock = user_dir / "parse.sock"
        listener = _Listener(user_sock)
        os.chown(user_sock, NOBODY, NOBODY)
        message = user_dir / "m.bin"
        message.write_bytes(vectors.wire(vectors.NAMES[0]))
        os.chmod(message, 0o644)
        hostile = {"DNS_SHIM_SERVICE": str(user_sock), "DNS_SHIM_SERVICE_FALLBACK": "no",
                   "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
        try:
            with setuid_root_copy(built.test_prog) as program:
                client = as_user(NOBODY, program, "--detail", "--log", message)
                result = subprocess.run(["unshare", "--mount", "--propagation", "private",
                                         "sh", "-c", _namespace_script(built, client)],
                                        capture_output=True, text=True, env=hostile,
                                        timeout=300)
        finally:
            listener.close()
    finally:
        shutil.rmtree(user_dir, ignore_errors=True)
    if result.returncode != 0 and result.stderr.startswith("unshare:"):
        import nss_env
        nss_env._unavailable(f"a mount namespace: {result.stderr.strip()}")
    assert result.returncode == 0, (result.stdout, result.stderr)
    with_service, without = result.stdout.split("== without it\n")
    assert "status 0 success" in with_service
    assert "runtime:" not in with_service
    assert "status 0 success" in without
    assert "log 6: runtime: CPython" in without
    assert "parse service" not in with_service
    assert [line for line in without.splitlines() if "parse service" in line] == [
        "log 6: the parse service at /run/dnsshim/parse.sock is not used: No such file or "
        "directory; messages are parsed in this process (dnsshimd(8))"]
    assert str(user_sock) not in result.stdout + result.stderr
    assert listener.connections == 0


# ------------------------------------------------------------------ the README's line


def test_the_readme_s_line_starts_the_service_for_the_pip_install(installed, tmp_path):
    """The README's line that starts the service, as written, for the
    virtualenv of `pip install .`, run by root in a namespace whose /run is
    its own (sudo, which a root shell does not need, is the command itself
    there): the service serves /run/dnsshim/parse.sock, and a program's
    check then finds it answering and starts no runtime of its own."""
    import nss_env
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", readme, re.S) if "dnsshimd" in b]
    [line] = [l for l in block.splitlines() if l.strip()]
    assert line.startswith("sudo .venv/bin/dnsshimd") and line.endswith("&")
    (tmp_path / "run").mkdir()
    script = "\n".join([
        "set -e", "mount -t tmpfs nss-env-run /run", f"cd {tmp_path}",
        f"ln -s {installed} .venv", 'sudo() { exec "$@"; }', line, "service=$!",
        "for i in $(seq 600); do [ -S /run/dnsshim/parse.sock ] && break; sleep 0.1; done",
        "stat -c '%U %a' /run/dnsshim /run/dnsshim/parse.sock",
        "DNS_SHIM_SERVICE_FALLBACK=no .venv/bin/dnsshim-config --check",
        'kill -TERM "$service"', 'wait "$service"', "echo stopped $?",
        "[ ! -e /run/dnsshim/parse.sock ] && echo removed"])
    result = nss_env.run(tmp_path / "run", {}, [nss_env.command(["bash", "-c", script])],
                         timeout=300)
    [c] = result.commands
    assert c.returncode == 0, c.stderr[-3000:]
    out = c.stdout.splitlines()
    assert out[:2] == ["root 755", "root 666"], c.stdout
    assert "service: the parse service answered: programs parse there and start no " \
           "interpreter, whatever CPython they run" in out
    assert not any(l.startswith("info: runtime:") for l in out), c.stdout
    assert out[-2:] == ["stopped 0", "removed"], c.stdout
    assert out[-3] == "check: ok: a sample response parsed (www.example.com A 192.0.2.1)"
