"""Agreement with dnspython on 20,000 seeded mutants of every test message
and of the shared corpus (tests/mutator.py), each through the built
libdnsshim.so from C: ``dnsshim_test --registered --stream -`` passes every
mutant to process_dns_response in one process and prints what its
registered callbacks receive and the status.

* accepted by dnspython (its verdict taken in a fresh process per mutant,
  tests/fresh_reference.py): the log is ``reference.expected_log``, line for
  line, ``status 0 success`` included;
* rejected: the one status line that dnspython's verdict names, decided
  without shim (tests/expected_status.py): before dnspython, a length over
  65535 or QR clear; else dnspython's exception class through a hand-written
  table, and for its bare ``FormError`` a walk of the framing that names the
  first defect.

With the corpus (seed 20240601) the split is pinned: 1,273 accepted; of
the 7,799 bare FormErrors, 5,789 ERR_TRUNCATED, 1,480 ERR_BAD_RDATA, 233
ERR_BAD_NAME, 215 ERR_BAD_EDNS and 82 ERR_FORMAT; the walk names every one of
them exactly.  The C run takes about a second; dnspython's fresh verdicts
about a minute on a busy 2-core machine (a fork per mutant), once: they are
kept under ${XDG_CACHE_HOME:-~/.cache}/dnsshim/fresh-reference/, keyed by
the mutants, the interpreter, dnspython and the code that computes them
(fresh_reference.cache_key), and taken from there while none changes.

The same mutants through the decoder (``mutator.disagreement``, exact
statuses too) guard what C does not see: the records, header and EDNS
options the Python API builds on.

The long run: ``python tests/mutator.py --mutants 1000000 --seed N
[--driver build/dnsshim_test]``.
"""

import collections
import subprocess
from pathlib import Path

import pytest

import expected_status
from conftest import full_loops, loops
import fresh_reference as fresh
import mutator
from shim.status import Status

SEED, COUNT = 20240601, loops(20_000, 2_000)

#: With the corpus: mutants accepted by both, and the status of each bare
#: FormError (a change moves a count and fails until it is named here).
ACCEPTED = 1273
FORMERROR_SPLIT = {Status.ERR_TRUNCATED: 5789, Status.ERR_BAD_RDATA: 1480,
                   Status.ERR_BAD_NAME: 233, Status.ERR_BAD_EDNS: 215, Status.ERR_FORMAT: 82}


@pytest.fixture(scope="module")
def verdicts():
    """The mutants and dnspython's verdict on each, from fresh processes."""
    wires = mutator.mutants(COUNT, seed=SEED)
    return wires, fresh.results("reference", wires, jobs=2, cache=True)


def test_twenty_thousand_mutants_through_the_library_from_c(built, verdicts):
    wires, refs = verdicts
    logs, code, errors = mutator.run_driver(built.test_prog, wires)
    assert code == 0, errors
    assert len(logs) == len(wires)
    found = [(w.hex(), problem) for w, ref, log in zip(wires, refs, logs)
             if (problem := mutator.c_disagreement(w, ref, log)) is not None]
    assert found == [], found[:5]
    accepted = sum(log == ref.get("log") for log, ref in zip(logs, refs))
    split = collections.Counter(
        expected_status.rejected_status(w, "FormError") for w, ref in zip(wires, refs)
        if ref.get("error") == "FormError" and expected_status.before_dnspython(w) is None)
    if mutator.corpus_present() and full_loops():
        assert accepted == ACCEPTED
        assert dict(split) == FORMERROR_SPLIT
    else:
        # The test messages alone, or fewer mutants: about 2.5% of them parse.
        assert accepted > COUNT // 50, accepted
        assert set(split) <= set(FORMERROR_SPLIT), split


def test_twenty_thousand_mutants_through_the_decoder(verdicts):
    wires, refs = verdicts
    found = [(w.hex(), problem) for w, ref in zip(wires, refs)
             if (problem := mutator.disagreement(w, ref)) is not None]
    assert found == [], found[:5]


def test_a_wrong_status_is_a_disagreement(verdicts):
    """Both rejecting is not enough: one mutant of each rejected kind, with
    its status line changed, is reported."""
    wires, refs = verdicts
    seen = set()
    for wire, ref in zip(wires, refs):
        want = mutator.expected_log(wire, ref)
        if want is None or want[-1] == mutator.status_line(Status.OK) or want[-1] in seen:
            continue
        seen.add(want[-1])
        wrong = mutator.status_line(Status.ERR_INTERNAL)
        assert mutator.c_disagreement(wire, ref, [wrong]) is not None
        assert mutator.c_disagreement(wire, ref, want) is None
    # With the corpus: every status from ERR_BAD_LENGTH to ERR_FORMAT.
    assert len(seen) == 9 if mutator.corpus_present() else len(seen) >= 5, seen


def test_the_driver_refuses_a_cut_frame(built):
    """Exit 0 only when every framed message was read: a frame that
    promises more than the stream holds is an error, after the messages
    before it were processed."""
    import malformed
    stream = fresh.frame([malformed.GOOD]) + fresh.frame([malformed.GOOD])[:-1]
    result = subprocess.run([str(built.test_prog), "--registered", "--stream", "-"],
                            input=stream, capture_output=True, timeout=120)
    assert result.returncode == 1
    assert b"a message is cut at octet" in result.stderr
    assert result.stdout.decode().splitlines()[0] == "# 0"
    assert result.stdout.decode().splitlines()[-1] == mutator.status_line(Status.OK)


REGRESSIONS = Path(__file__).resolve().parent / "regressions"

#: Mutants of long runs (seed 2) whose status only the framing walk names:
#: dnspython raises a name's exception (BadLabelType) from a REPORT-CHANNEL
#: option (18) whose agent domain is not a name, which the header documents
#: as ERR_BAD_EDNS; and its bare FormError for an NS record whose name points
#: to a target that runs into that name, ERR_BAD_NAME as anywhere else.
NAMED_BY_THE_WALK = {
    "report_channel_not_a_name": (bytes.fromhex(
        "123481800001000100007753076578616d706c6503636f6d0000010001c00c000100010000012c0004c0"
        "00020100002904d000000000000700120003016162"), "BadLabelType", Status.ERR_BAD_EDNS),
    "rdata_name_pointer_into_itself": (
        (REGRESSIONS / "mutator-rdata-name-pointer-into-itself-is-bad-name.bin").read_bytes(),
        "FormError", Status.ERR_BAD_NAME),
}


@pytest.mark.parametrize("name", NAMED_BY_THE_WALK)
def test_a_status_the_walk_names(built, name):
    wire, error, status = NAMED_BY_THE_WALK[name]
    [ref] = fresh.results("reference", [wire])
    assert ref == {"error": error}
    assert mutator.expected_log(wire, ref) == [mutator.status_line(status)]
    logs, code, errors = mutator.run_driver(built.test_prog, [wire])
    assert code == 0, errors
    assert logs == [[mutator.status_line(status)]]


#: An HTTPS record (type 65) whose ALPN parameter (key 1, 24 octets) holds an
#: ALPN string whose length octet runs past the parameter but not past the
#: RDATA (a mutant of seed 3): dnspython raises its bare FormError from inside
#: the RDATA, a length octet overrunning its field, which the header documents
#: as ERR_BAD_RDATA.  An overrun of a limit inside the RDATA is a name's only
#: where name decompression set that limit.
SVCB_PARAMETER_OVERRUN = bytes.fromhex(
    "f29f818000010001000000010a636c6f7564666c61726503636f6d0000410001c00c0041000100000081004f"
    "000100000100180268330568332d3239332d32380568332d323702683200040008681084e5681085e5000600"
    "20260647000000000000000000681084e5260647000000000000000000681085e50000291000000000000000")


def test_an_overrun_inside_an_svcb_parameter_is_bad_rdata(built):
    wire = SVCB_PARAMETER_OVERRUN
    [ref] = fresh.results("reference", [wire])
    assert ref == {"error": "FormError"}
    assert mutator.expected_log(wire, ref) == [mutator.status_line(Status.ERR_BAD_RDATA)]
    logs, code, errors = mutator.run_driver(built.test_prog, [wire])
    assert code == 0, errors
    assert mutator.c_disagreement(wire, ref, logs[0]) is None, logs[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutator_is_deterministic(seed):
    m1, m2 = mutator.Mutator(seed), mutator.Mutator(seed)
    wire = mutator.seeds()[0]
    where = mutator.positions(wire)
    assert [m1.mutate(wire, where) for _ in range(50)] == [m2.mutate(wire, where) for _ in range(50)]


def test_positions_of_a_known_message():
    import malformed
    labels, pointers, rdlengths = mutator.positions(malformed.GOOD)
    # "example.com": length octets at 12, 20 and the root at 24; the answer's
    # owner is a pointer at 29; its RDLENGTH at 39.
    assert (labels, pointers, rdlengths) == ([12, 20, 24], [29], [39])


def test_fresh_verdicts_are_kept_for_the_same_messages_and_code_only(tmp_path, monkeypatch):
    """fresh_reference.results(cache=True): the second call for the same
    messages takes the kept verdicts (no interpreter runs: one that did
    would fail here) and they are the fresh ones; other messages are
    computed again; an entry that is not a list of the right length is
    not taken."""
    import malformed

    monkeypatch.setattr(fresh, "CACHE", tmp_path / "fresh")
    wires = [malformed.GOOD, malformed.GOOD[:5]]
    first = fresh.results("reference", wires, cache=True)
    [kept] = list((tmp_path / "fresh").glob("reference-*.json"))
    assert kept.name == f"reference-{fresh.cache_key('reference', fresh.frame(wires))}.json"

    def no_interpreter(*args, **kwargs):
        raise AssertionError("the kept verdicts were not taken")

    with monkeypatch.context() as m:
        m.setattr(fresh.subprocess, "run", no_interpreter)
        assert fresh.results("reference", wires, cache=True) == first
        with pytest.raises(AssertionError, match="not taken"):
            fresh.results("reference", wires[:1], cache=True)
    assert first == fresh.results("reference", wires)  # what a fresh run gives
    assert first[0] != first[1]
    kept.write_text("[1]", encoding="utf-8")
    assert fresh.results("reference", wires, cache=True) == first
