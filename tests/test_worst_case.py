"""Work is bounded: no input makes the library do more than a fixed amount
of parsing per octet, and the most expensive 64 KiB message parses fully.

The work is counted, not timed (timings are the benchmark's business, see
the README): every read the parsers make goes through the decoder's
_Parser.get_bytes, so counting its calls counts the work.
"""

import pytest

import malformed
import reference
from shim import decode as decode_module
from shim.decode import decode
from shim.status import DnsShimError

#: Reads per message octet that no input may exceed.  The worst case below
#: needs 24 (a 12-octet record whose owner is 127 labels and 16 hops).
MAX_READS_PER_OCTET = 25


@pytest.fixture
def reads(monkeypatch):
    count = [0]
    original = decode_module._Parser.get_bytes

    def counting(self, size):
        count[0] += 1
        return original(self, size)
    monkeypatch.setattr(decode_module._Parser, "get_bytes", counting)
    return count


def parse_counting(wire, reads):
    reads[0] = 0
    try:
        decode(wire)
    except DnsShimError:
        pass
    return reads[0]


def test_worst_case_parses_and_agrees_with_dnspython(reads):
    wire = malformed.worst_case_64k()
    assert len(wire) <= 65535
    response = decode(wire)
    assert len(response.records) > 5400
    assert all(len(r.name.to_wire()) == 255 for r in response.records)
    assert [r.name for r in response.records] == [rrset.name for rrset in reference.parse(wire).answer]
    assert parse_counting(wire, reads) <= MAX_READS_PER_OCTET * len(wire)


def test_huge_count_in_a_small_message_fails_at_once(reads):
    wire, status = malformed.CASES["ancount_65535_in_30_bytes"]
    assert parse_counting(wire, reads) <= 10


@pytest.mark.parametrize("case", sorted(malformed.CASES))
def test_malformed_work_per_octet(reads, case):
    wire = malformed.CASES[case][0]
    assert parse_counting(wire, reads) <= MAX_READS_PER_OCTET * max(len(wire), 12)


def test_mutants_work_per_octet(reads):
    import mutator
    m = mutator.Mutator(99)
    base = [malformed.worst_case_64k()[:4096]] + mutator.seeds()
    worst = 0.0
    for i in range(3000):
        seed = base[i % len(base)]
        wire = m.mutate(seed, mutator.positions(seed))
        if wire:
            worst = max(worst, parse_counting(wire, reads) / len(wire))
    assert worst <= MAX_READS_PER_OCTET
