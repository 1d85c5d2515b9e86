"""Agreement with dnspython on 20,000 seeded mutants of every test message
and of the shared corpus: the shim accepts exactly what
``dns.message.from_wire`` accepts (bar the documented differences in
tests/mutator.py), and for accepted mutants the records its C glue
dispatches are exactly dnspython's, field by field.

The long run: ``python tests/mutator.py --mutants 1000000 --seed N``.
"""

import pytest

import mutator
from recorder import Recorder
from shim import glue


def test_twenty_thousand_mutants_agree(header_ffi):
    ffi = header_ffi

    def dispatch(wire):
        rec = Recorder(ffi)
        buf = ffi.new("uint8_t[]", wire)
        status = glue.process(ffi, buf, len(wire), rec.struct)
        return rec.lines + [f"status {int(status)} success"]

    found, accepted = mutator.run(20_000, seed=20240601, report=lambda line: None,
                                  dispatch=dispatch)
    assert found == [], found[:5]
    # Enough mutants parse for the comparison of records to mean something
    # (about 7% of them with the corpus, 2.5% from the test messages alone).
    assert accepted > (1000 if mutator.corpus_present() else 400), accepted


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
