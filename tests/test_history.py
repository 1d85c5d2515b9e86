"""No message may change how a later one parses: history independence.

A daemon lives for months: the same bytes must get the same result whatever
came before.  dnspython's own RDATA registry is history-dependent (one class
ANY SRV record makes every later IN SRV record generic in
``dns.message.from_wire``); a library that asked it would turn every
later IN SRV, A, NAPTR... into DNS_SHIM_ERR_INTERNAL after one such packet,
for the life of the process.  A comparison that shares a process with the code
under test shares its poison, so every result here is compared with the
same message parsed first in a fresh process:

* the C ABI: ``dnsshim_test --stream`` (one process, every message in turn)
  against ``--stream --fresh`` (a child forked for each message after
  dns_shim_init, itself checked against a new process per message);
* the Python API in a host whose own dnspython parsed every message with
  ``from_wire`` first, against tests/fresh_reference.py (a fork per message);
* regressions named after the defect: every IN-only type after a record of
  each odd class, in one process;
* bounded state: 200,000 messages (``DNSSHIM_STATE_MESSAGES`` for more)
  with distinct owner names and every type and class value, fixed probes
  interleaved: the probes' results never change and memory stays flat.
"""

import os
import subprocess
import sys

import dns.rdataclass
import dns.rdatatype
import pytest

import fresh_reference as fresh
import history
import reference
from conftest import ROOT, loops, run_test_prog, split_log

SEED = 20261203


@pytest.fixture(scope="module")
def messages():
    return history.differential_messages(SEED)


@pytest.fixture(scope="module")
def stream(messages, tmp_path_factory):
    path = tmp_path_factory.mktemp("history") / "differential.stream"
    path.write_bytes(fresh.frame(messages))
    return path


def stream_logs(built, path, *options) -> list:
    """dnsshim_test --stream's output: one list of lines per message, in order."""
    result = run_test_prog(built, "--stream", *options, path)
    assert result.returncode == 0, result.stderr[-2000:]
    logs = split_log(result.stdout)
    return [logs[str(i)] for i in range(len(logs))]


def first_differences(got, want, messages, limit=3):
    return [(i, messages[i].hex(), got[i], want[i])
            for i in range(len(want)) if got[i] != want[i]][:limit]


@pytest.fixture(scope="module")
def fresh_c_logs(built, stream):
    return stream_logs(built, stream, "--fresh")


def test_c_long_lived_process_gets_what_a_fresh_process_gets(built, stream, messages,
                                                             fresh_c_logs):
    long_lived = stream_logs(built, stream)
    assert len(long_lived) == len(fresh_c_logs) == len(messages)
    assert first_differences(long_lived, fresh_c_logs, messages) == []
    # The comparison means something: many messages dispatch, every typed
    # callback is reached, and records of every kind of class are delivered.
    kinds = {line.split()[0] for log in long_lived for line in log}
    assert {"header", "a", "aaaa", "cname", "ns", "ptr", "dname", "mx", "txt", "srv", "naptr",
            "soa", "other"} <= kinds
    ok = sum(log[-1] == "status 0 success" for log in long_lived)
    assert ok > len(messages) // 3, ok
    classes = {int(part[6:]) for log in long_lived for line in log
               for part in line.split() if part.startswith("class=")}
    assert set(history.CLASSES) <= classes


def test_c_registered_callbacks_long_lived_get_what_a_fresh_process_gets(built, stream,
                                                                          messages, fresh_c_logs):
    assert first_differences(stream_logs(built, stream, "--registered"), fresh_c_logs,
                             messages) == []


def test_fresh_fork_is_a_new_process(built, tmp_path, messages, fresh_c_logs):
    """The --fresh reference (a fork of a process that has started the
    runtime and parsed nothing) gives what a new process gives."""
    sample = list(range(0, len(messages), len(messages) // 25))
    for i in sample:
        path = tmp_path / f"{i}.bin"
        path.write_bytes(messages[i])
        result = run_test_prog(built, path)
        assert result.returncode == 0, result.stderr
        assert split_log(result.stdout)[str(path)] == fresh_c_logs[i], i


def host(stream, *options) -> list:
    import json
    out = subprocess.run([sys.executable, str(ROOT / "tests" / "history.py"), "host", *options,
                          str(stream)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.fixture(scope="module")
def fresh_api_results(messages):
    return fresh.results("api", messages)


def test_python_api_in_a_poisoned_host_gets_what_a_fresh_process_gets(stream, messages,
                                                                        fresh_api_results):
    got = host(stream)
    assert len(got) == len(fresh_api_results) == len(messages)
    assert first_differences(got, fresh_api_results, messages) == []
    assert sum(r.startswith("Response(") for r in got) > len(messages) // 3


def test_the_differential_catches_a_registry_lookup(stream, messages, fresh_api_results):
    """The same differential, run against the lookup the decoder used before
    the fix (dnspython's registry): it must find the defect, or it proves
    nothing."""
    got = host(stream, "--dnspython-registry")
    assert len(got) == len(messages)
    differ = [i for i in range(len(messages)) if got[i] != fresh_api_results[i]]
    assert len(differ) > 10, differ


# ---- regressions: every IN-only type after each kind of odd class -----------

def _class_id(rdclass):
    return dns.rdataclass.to_text(rdclass)


def _in_only_sequence(rdclass) -> list:
    """A record of every IN-only type under `rdclass`, then each type
    under IN alone, then both in one message (odd class first)."""
    poison = history.response(*[(t, rdclass, history.rdata_of(t, rdclass))
                                for t in history.IN_ONLY])
    return ([poison] + [history.typed_response(t, history.IN) for t in history.IN_ONLY]
            + [history.response((t, rdclass, history.rdata_of(t, rdclass)),
                                (t, history.IN, history.rdata_of(t)), qtype=t)
               for t in history.IN_ONLY])


@pytest.mark.parametrize("rdclass", history.ODD_CLASSES, ids=_class_id)
def test_odd_class_record_does_not_turn_in_records_generic(built, tmp_path, rdclass):
    """After one record of an IN-only type under a class with no module of
    its own (what makes dnspython's registry answer generic for that type
    from then on), every later IN record of that type still gets its typed
    callback (A, AAAA, SRV, NAPTR) or its RDATA parsed by the IN module, in
    the same process."""
    wires = _in_only_sequence(rdclass)
    path = tmp_path / "sequence.stream"
    path.write_bytes(fresh.frame(wires))
    logs = stream_logs(built, path)
    assert logs[0] == reference.expected_log(wires[0])  # every record of the odd class dispatched
    for wire, log in zip(wires[1:], logs[1:]):
        assert log == reference.expected_log(wire)
        assert log[-1] == "status 0 success"
    typed = {"A": "a", "AAAA": "aaaa", "SRV": "srv", "NAPTR": "naptr"}
    for t, log in zip(history.IN_ONLY, logs[1:]):
        assert log[1].split()[0] == typed.get(dns.rdatatype.to_text(t).replace("-", "_"),
                                              "other")


@pytest.mark.parametrize("rdclass", history.ODD_CLASSES, ids=_class_id)
def test_odd_class_record_does_not_turn_in_records_generic_in_python(tmp_path, rdclass):
    """The same through shim.parse_response, in a host whose dnspython has
    parsed the same messages with from_wire first."""
    import shim
    wires = _in_only_sequence(rdclass)
    path = tmp_path / "sequence.stream"
    path.write_bytes(fresh.frame(wires))
    got = host(path)
    typed = {1: shim.A, 28: shim.AAAA, 33: shim.SRV, 35: shim.NAPTR}
    for t, result in zip(history.IN_ONLY, got[1:]):
        assert result.startswith("Response("), result
        assert f"{typed.get(t, shim.Raw).__name__}(owner='example.com', type={t}, rclass=1" \
            in result


HISTORY_REGRESSIONS = sorted((ROOT / "tests" / "regressions").glob("history-*.bin"))


@pytest.mark.parametrize("path", HISTORY_REGRESSIONS, ids=lambda p: p.stem)
def test_history_regression_in_a_new_process(built, path):
    """tests/regressions/history-*.bin: one message, every IN-only type under
    an odd class, then under IN.  Each needs a process of its own (in the
    test's process, the reference has already loaded every type): the IN
    records get their typed callback or the IN module's parse."""
    wire = path.read_bytes()
    log = split_log(run_test_prog(built, path).stdout)[str(path)]
    assert log == reference.expected_log(wire)
    assert log[-1] == "status 0 success"
    assert [line.split()[0] for line in log[-5:-1]] == ["other", "srv", "other", "other"]


def test_class9_a_then_in_a_in_one_message(built, tmp_path):
    """One message, a CLASS9 A record then an IN A record: in a new
    process, the second is still an A record."""
    wire = history.response((1, 9, bytes([192, 0, 2, 9])), (1, 1, bytes([192, 0, 2, 1])))
    path = tmp_path / "class9.bin"
    path.write_bytes(wire)
    log = split_log(run_test_prog(built, path).stdout)[str(path)]
    assert log[1] == ("other sec=1 idx=0 owner=example.com type=1 class=9 ttl=300 "
                      "rdata=c0000209")
    assert log[2] == "a sec=1 idx=1 owner=example.com type=1 class=1 ttl=300 address=192.0.2.1"
    assert log[3] == "status 0 success"


# ---- bounded state ---------------------------------------------------------

def test_bounded_state_probes_never_change_and_memory_stays_flat(built, tmp_path):
    count = int(os.environ.get("DNSSHIM_STATE_MESSAGES") or loops(200_000, 20_000))
    every = 1000
    wires = history.bounded_messages(count, every)
    path = tmp_path / "bounded.stream"
    path.write_bytes(fresh.frame(wires))
    result = run_test_prog(built, "--stream", "--every", every, "--rss", path)
    assert result.returncode == 0, result.stderr[-2000:]
    logs, rss = {}, []
    for block in result.stdout.split("# ")[1:]:
        lines = block.splitlines()
        logs[int(lines[0])] = lines[1:-1]
        rss.append(int(lines[-1].split()[1]))
    assert sorted(logs) == list(range(0, count, every))
    probes = history.probes()
    for i, log in logs.items():
        probe = probes[(i // every) % len(probes)]
        assert log == reference.expected_log(probe), i
    # Memory: after a warm-up of a tenth of the run (the name cache fills
    # and empties many times in it), resident memory grows by under 1 MiB.
    warm = len(rss) // 10
    assert max(rss[warm:]) - rss[warm] < 1024, (rss[warm], max(rss[warm:]), rss[-1])


def test_bounded_run_covers_every_type_and_class_value_with_distinct_owners():
    wires = history.bounded_messages(200_000, 1000)
    fields = [history.first_record(w) for w in wires]
    assert {t for _, t, _ in fields} == {c for _, _, c in fields} == set(range(65536))
    owners = [o for o, _, _ in fields]
    assert len(set(owners)) == len(owners) - 199  # the probes share "example.com"


def test_stream_modes_under_valgrind(built, tmp_path, messages):
    """The C program's --stream paths (one process; a fork per message;
    output discarded between probes) are valgrind clean too."""
    from test_c_programs import VALGRIND, _require_valgrind
    _require_valgrind()
    path = tmp_path / "sample.stream"
    sample = messages[:: len(messages) // 20]
    path.write_bytes(fresh.frame(sample))
    for options, printed in (([], len(sample)), (["--fresh"], len(sample)),
                             (["--every", "3", "--rss"], (len(sample) + 2) // 3)):
        result = subprocess.run([*VALGRIND, str(built.test_prog), "--stream", *options, str(path)],
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, (options, result.stderr[-5000:])
        assert result.stdout.count("\nstatus ") + result.stdout.startswith("status ") == printed
