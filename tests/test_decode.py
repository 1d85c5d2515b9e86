"""The decoding layer alone: wire bytes to records, pure Python, no C.

Every malformed class raises its exact status; every accepted message gives
exactly the records ``dns.message.from_wire(wire, one_rr_per_rrset=True)``
gives, in the same order; and on the real corpus the decoder accepts exactly
what dnspython accepts (QR-clear messages aside, which it rejects on purpose).
"""

import dns.message
import pytest

import malformed
import reference
import vectors
from conftest import corpus_files
from shim.decode import Section, decode
from shim.status import DnsShimError, Status


def decoded_tuples(response) -> list:
    return [(int(r.section), r.index, r.name.to_text(omit_final_dot=True), r.rdtype, r.rdclass,
             r.ttl, r.rdata.to_wire() if r.rdata is not None else b"")
            for r in response.records]


def assert_same_as_dnspython(wire: bytes):
    m = reference.parse(wire)
    response = decode(wire)
    assert decoded_tuples(response) == reference.record_tuples(m)
    h = response.header
    assert (h.id, h.flags, h.opcode, h.rcode) == (m.id, int(m.flags), int(m.opcode()), int(m.rcode()))
    assert h.edns_version == m.edns
    assert h.edns_flags == m.ednsflags & 0xFFFF
    assert h.edns_payload == (m.payload if m.opt else 0)
    if m.question:
        assert (h.qname, h.qtype, h.qclass) == (m.question[0].name, m.question[0].rdtype,
                                                m.question[0].rdclass)
    else:
        assert h.qname is None and h.qtype == 0
    return response


@pytest.mark.parametrize("case", sorted(malformed.CASES))
def test_malformed_status(case):
    wire, status = malformed.CASES[case]
    with pytest.raises(DnsShimError) as info:
        decode(wire)
    assert info.value.status == status, str(info.value)


@pytest.mark.parametrize("case", sorted(malformed.ACCEPTED))
def test_accepted_controls(case):
    assert_same_as_dnspython(malformed.ACCEPTED[case])


@pytest.mark.parametrize("name", vectors.NAMES)
def test_vectors_match_dnspython(name):
    response = assert_same_as_dnspython(vectors.wire(name))
    assert response.records or name == "badvers"


def test_every_type_in_every_section():
    response = decode(vectors.wire("every_type"))
    by_section = {s: [r.rdtype for r in response.records if r.section == s] for s in Section}
    assert by_section[Section.ANSWER] == by_section[Section.AUTHORITY] == by_section[Section.ADDITIONAL]
    assert [r.index for r in response.records if r.section == Section.ADDITIONAL] == list(range(13))
    assert response.header.arcount == 14  # 13 records and the OPT, which takes no index


def test_opt_fills_the_header_and_is_no_record():
    h = decode(vectors.wire("badvers")).header
    assert (h.edns_version, h.edns_payload, h.rcode) == (1, 512, 16)
    h = decode(vectors.wire("every_type")).header
    assert (h.edns_version, h.edns_payload, h.edns_do, h.edns_flags) == (0, 4096, True, 0x8000)


def test_top_bit_ttl_reads_as_zero_and_duplicates_are_kept():
    records = decode(vectors.wire("duplicates")).records
    assert [(r.ttl, r.rdata.address) for r in records] == [
        (0, "192.0.2.9"), (0, "192.0.2.9"), (0x7FFFFFFF, "192.0.2.9")]


def test_tsig_is_a_record_with_ttl_zero_not_verified():
    records = decode(malformed.ACCEPTED["tsig_last"]).records
    assert [(r.section, r.index, r.rdtype, r.rdclass, r.ttl) for r in records] == [
        (Section.ANSWER, 0, 1, 1, 300), (Section.ADDITIONAL, 0, 250, 255, 0)]
    with pytest.raises(dns.message.UnknownTSIGKey):  # what from_wire does without keys
        dns.message.from_wire(malformed.ACCEPTED["tsig_last"])


def test_error_carries_offset_and_detail():
    with pytest.raises(DnsShimError) as info:
        decode(malformed.CASES["trailing_many_bytes"][0])
    assert info.value.offset == len(malformed.GOOD)
    assert "400 octets" in str(info.value)


# ---- the real corpus ------------------------------------------------------------


def _from_wire_verdict(wire):
    try:
        reference.parse(wire)
        return "accept"
    except Exception as e:  # noqa: BLE001 - any rejection counts
        return type(e).__name__


@pytest.mark.parametrize("path", corpus_files("good") + corpus_files("captures")
                         + corpus_files("cares-fuzzinput"), ids=lambda p: p and p.name)
def test_corpus_agrees_with_dnspython(path):
    wire = path.read_bytes()
    verdict = _from_wire_verdict(wire)
    if len(wire) >= 12 and not wire[2] & 0x80:
        with pytest.raises(DnsShimError) as info:
            decode(wire)
        assert info.value.status == Status.ERR_NOT_RESPONSE
    elif verdict == "accept":
        assert_same_as_dnspython(wire)
    else:
        with pytest.raises(DnsShimError):
            decode(wire)


# What each message of bad/ is rejected with; and, for those that are queries
# (QR clear, which wins), what their defect gives once QR is set.
BAD_CORPUS = {
    "cares_aaaa_rdlen4.bin": (Status.ERR_BAD_RDATA, None),
    "cares_clusterfuzz_5637790584012800.bin": (Status.ERR_BAD_NAME, None),
    "cares_clusterfuzz_5650695891451904.bin": (Status.ERR_NOT_RESPONSE, Status.ERR_TRUNCATED),
    "cares_multi_indir.bin": (Status.ERR_NOT_RESPONSE, Status.ERR_BAD_NAME),
    "cares_naptr_rdlen1_short.bin": (Status.ERR_NOT_RESPONSE, Status.ERR_BAD_RDATA),
    "tcpdump_badlabel_name_too_long.bin": (Status.ERR_BAD_NAME, None),
    "tcpdump_fwdptr.bin": (Status.ERR_BAD_NAME, None),
    "tcpdump_snaplen_truncated_counts_exceed.bin": (Status.ERR_TRUNCATED, None),
    "tcpdump_zlip1_self_pointer_query.bin": (Status.ERR_NOT_RESPONSE, Status.ERR_BAD_NAME),
    "tcpdump_zlip3_label_then_pointer_loop_query.bin": (Status.ERR_NOT_RESPONSE, Status.ERR_BAD_NAME),
    "zeek_edns_opt_rdlen1.bin": (Status.ERR_BAD_EDNS, None),  # 1.0: ERR_BAD_RDATA
    "zeek_loc_rdlen15.bin": (Status.ERR_BAD_RDATA, None),
    "zeek_svcb_alpn_len_too_long.bin": (Status.ERR_BAD_RDATA, None),
    "zeek_svcb_rdlen2.bin": (Status.ERR_BAD_RDATA, None),
}


@pytest.mark.parametrize("path", corpus_files("bad"), ids=lambda p: p and p.name)
def test_bad_corpus_exact_status(path):
    status, with_qr = BAD_CORPUS[path.name]
    wire = path.read_bytes()
    with pytest.raises(DnsShimError) as info:
        decode(wire)
    assert info.value.status == status
    if with_qr is not None:
        as_response = wire[:2] + bytes([wire[2] | 0x80]) + wire[3:]
        with pytest.raises(DnsShimError) as info:
            decode(as_response)
        assert info.value.status == with_qr
