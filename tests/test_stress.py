"""Hostile and careless callers, from C (tests/c/dnsshim_stress.c): threads,
the first call from 16 threads at once, registration races, re-entry,
re-registration inside a callback, fork, callback return values; a soak for
memory growth; and a short threaded run under valgrind.
"""

import subprocess

import pytest

import malformed
import vectors
from conftest import available_corpus, loops
from test_c_programs import VALGRIND, _require_valgrind


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    """Good and bad messages: the vectors, some malformed cases, the corpus's
    good responses when present."""
    d = tmp_path_factory.mktemp("mix")
    files = []
    for name in ("ims", "every_type", "nxdomain", "odd_names", "duplicates", "badvers"):
        files.append(d / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    for name in ("pointer_loop_of_two", "a_rdlength_5", "trailing_one_byte", "qr_clear",
                 "two_opt_records", "ancount_65535_in_30_bytes"):
        files.append(d / f"{name}.bin")
        files[-1].write_bytes(malformed.CASES[name][0])
    return files + available_corpus("good")


def stress(built, mode, files, *options, timeout=900):
    result = subprocess.run([str(built.stress_prog), mode, *map(str, options), *map(str, files)],
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "FAIL" not in result.stdout
    return result.stdout


def test_eight_threads_twenty_thousand_calls_each(built, mix):
    calls = loops(20_000, 2_000)
    out = stress(built, "threads", mix, "--threads", "8", "--calls", calls)
    assert f"ok threads: 8 threads x {calls} calls" in out and ", 0 wrong" in out


def test_first_call_from_sixteen_threads(built, mix):
    assert "ok first-call: 16 threads, status 0" in stress(built, "first-call", mix)


def test_register_while_dispatching(built, mix):
    assert ", 0 wrong, while the set changed" in stress(built, "register", mix, "--calls", "3000")


def test_reentry_from_a_callback(built, mix):
    # The outer call's message is the IMS sample, the inner one every_type.
    assert "ok reentry: outer 0, inner 0" in stress(built, "reentry", mix)


def test_reregister_inside_a_callback(built, mix):
    assert "ok reregister: status 0" in stress(built, "reregister", mix)


def test_fork_after_start(built, mix):
    out = stress(built, "fork", mix)
    assert "ok fork: child" in out and "ok fork: parent" in out


def test_callback_return_values(built, mix):
    out = stress(built, "retvals", mix)
    for value in (1, -1, -2147483648, 2147483647):
        assert f"ok callback returning {value} stops after 2 calls: -11" in out


def test_soak_memory(built, mix):
    calls = loops(200_000, 20_000)
    out = stress(built, "soak", mix, "--calls", calls, timeout=1800)
    assert f"ok soak: {calls} calls" in out


def test_valgrind_short_threaded_run(built, mix):
    _require_valgrind()
    for mode, options in (("threads", ["--threads", "4", "--calls", "50"]),
                          ("register", ["--calls", "50"]), ("reentry", []), ("reregister", []),
                          ("fork", [])):
        # --fair-sched: valgrind runs one thread at a time; fair scheduling
        # hands the turn round in order, so no thread is starved.
        result = subprocess.run([*VALGRIND, "--fair-sched=yes", str(built.dir / "dnsshim_stress"),
                                 mode, *options, *map(str, mix[:8])],
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (mode, result.stdout[-2000:], result.stderr[:6000])
        assert "FAIL" not in result.stdout
