"""Work is bounded: no input makes the library do more than a fixed amount
of parsing per octet, and the most expensive 64 KiB message parses fully.

The work is counted, not timed (timings are the benchmark's business, see
the README): every read the parsers make goes through the decoder's
_Parser.get_bytes or get_uint8, so counting their calls counts the work.
"""

import pytest

import malformed
import reference
from shim import decode as decode_module
from shim.decode import decode
from shim.status import DnsShimError

#: Reads per message octet that no input may exceed.  The worst case below
#: needs 20.6 (a 14-octet record whose owner is 127 labels and 16 hops).
MAX_READS_PER_OCTET = 25


@pytest.fixture
def reads(monkeypatch):
    count = [0]
    get_bytes = decode_module._Parser.get_bytes
    get_uint8 = decode_module._Parser.get_uint8

    def counting_bytes(self, size):
        count[0] += 1
        return get_bytes(self, size)

    def counting_uint8(self):
        count[0] += 1
        return get_uint8(self)
    monkeypatch.setattr(decode_module._Parser, "get_bytes", counting_bytes)
    monkeypatch.setattr(decode_module._Parser, "get_uint8", counting_uint8)
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
    assert len(response.records) > 4600
    assert all(len(r.name.to_wire()) == 255 for r in response.records[1:])
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
