"""Malformed responses, one per class of defect, each with its exact status.

Every message is built field group by field group (see :mod:`wire`), with a
comment saying what is wrong.  ``GOOD`` is the well-formed message most cases
start from: a response with the question "example.com IN A" (its name at
offset 12) and one A record whose owner points back to it.
"""

import struct

from shim.status import Status
from wire import (AT_QNAME, QR, RD_RA, TC, header, name, opt, option, pointer, question, rr,
                  with_options)

S = Status
A_RDATA = bytes([192, 0, 2, 1])

GOOD = header(qd=1, an=1) + question() + rr(AT_QNAME, 1, A_RDATA)


def _tsig_rdata() -> bytes:
    """A well-formed TSIG RDATA (RFC 8945): algorithm, time, fudge, MAC,
    original ID, error, other data."""
    return (name("hmac-sha256") + (1700000000).to_bytes(6, "big") + struct.pack("!HH", 300, 4)
            + b"\x01\x02\x03\x04" + struct.pack("!HHH", 0x1234, 0, 0))


TSIG = _tsig_rdata()


def pointer_chain(hops: int) -> bytes:
    """A response whose only record's owner is reached through `hops`
    compression pointers: the first record's RDATA (of a private type, never
    read as names) holds pointers each pointing to the one before, the first
    to the question's name; the second record's owner points to the last."""
    base = 12 + 13 + 4 + 2 + 10  # header, question, owner pointer, fixed fields
    chain = pointer(12)
    for i in range(1, hops - 1):
        chain += pointer(base + 2 * (i - 1))
    owner = pointer(base + 2 * (hops - 2))
    return (header(qd=1, an=2) + question()
            + rr(AT_QNAME, 65280, chain)           # RR 1: the chain, as opaque RDATA
            + rr(owner, 1, A_RDATA))               # RR 2: owner = the chain's last pointer


def _long_labels(n: int) -> list:
    return ["x" * 63] * n


CASES = {
    # ---- header ---------------------------------------------------------
    "empty": (b"", S.ERR_SHORT_HEADER),
    "header_11_bytes": (header()[:11], S.ERR_SHORT_HEADER),
    "qr_clear": (header(flags=RD_RA, qd=1) + question(), S.ERR_NOT_RESPONSE),
    # QR is checked before anything after the header.
    "qr_clear_then_garbage": (header(flags=0, qd=1) + b"\xff", S.ERR_NOT_RESPONSE),

    # ---- the message ends too soon ----------------------------------------
    "qdcount_past_end": (header(qd=2) + question(), S.ERR_TRUNCATED),
    "ancount_past_end": (header(qd=1, an=1) + question(), S.ERR_TRUNCATED),
    # 30 bytes that announce 65535 answers: fails at the first, builds nothing.
    "ancount_65535_in_30_bytes": (header(qd=1, an=65535) + question() + b"\x00",
                                  S.ERR_TRUNCATED),
    "qname_without_final_zero": (header(qd=1) + b"\x07example\x03com", S.ERR_TRUNCATED),
    "label_runs_past_end": (header(qd=1) + b"\x20abc", S.ERR_TRUNCATED),
    "question_fields_cut": (header(qd=1) + name("example", "com") + b"\x00\x01", S.ERR_TRUNCATED),
    "record_fields_cut": (header(qd=1, an=1) + question() + AT_QNAME + b"\x00\x01\x00",
                          S.ERR_TRUNCATED),
    "rdlength_past_end": (header(qd=1, an=1) + question()
                          + rr(AT_QNAME, 1, A_RDATA[:3], rdlength=4), S.ERR_TRUNCATED),
    "tc_with_records_cut": (header(flags=QR | TC | RD_RA, qd=1, an=2) + question()
                            + rr(AT_QNAME, 1, A_RDATA), S.ERR_TRUNCATED),

    # ---- bytes left over ------------------------------------------------------
    "trailing_one_byte": (GOOD + b"\x00", S.ERR_TRAILING_DATA),
    "trailing_many_bytes": (GOOD + b"junk" * 100, S.ERR_TRAILING_DATA),

    # ---- names ------------------------------------------------------------------
    "pointer_to_itself": (header(qd=1) + pointer(12) + b"\x00\x01\x00\x01", S.ERR_BAD_NAME),
    "pointer_forward": (header(qd=1) + pointer(14) + name("a") + b"\x00\x01\x00\x01",
                        S.ERR_BAD_NAME),
    "pointer_past_end": (header(qd=1) + pointer(0x3FFF) + b"\x00\x01\x00\x01", S.ERR_BAD_NAME),
    # at 12: pointer to 14 (forward); at 14: pointer back to 12.
    "pointer_loop_of_two": (header(qd=1) + pointer(14) + pointer(12) + b"\x00\x01\x00\x01",
                            S.ERR_BAD_NAME),
    # at 12: pointer to 16; at 14: pointer to 12; at 16: pointer to 14.
    "pointer_loop_of_three": (header(qd=1) + pointer(16) + pointer(12) + pointer(14)
                              + b"\x00\x01\x00\x01", S.ERR_BAD_NAME),
    # at 12: label "a", then a pointer back to 12: the name would never end.
    "label_then_pointer_loop": (header(qd=1) + b"\x01a" + pointer(12) + b"\x00\x01\x00\x01",
                                S.ERR_BAD_NAME),
    "pointer_chain_17_hops": (pointer_chain(17), S.ERR_BAD_NAME),
    "label_type_0x40": (header(qd=1) + b"\x41" + b"a" * 65 + b"\x00\x00\x01\x00\x01",
                        S.ERR_BAD_NAME),
    # length octet 64 (0x40): over 63, and the reserved "extended label" type.
    "label_of_64": (header(qd=1) + b"\x40" + b"a" * 64 + b"\x00\x00\x01\x00\x01", S.ERR_BAD_NAME),
    "label_type_0x80": (header(qd=1) + b"\x81a\x00\x00\x01\x00\x01", S.ERR_BAD_NAME),
    "name_of_256_octets": (header(qd=1) + question(name(*_long_labels(4))), S.ERR_BAD_NAME),
    # 2 labels of 63 in the owner, then the question's 3 labels of 63: 321.
    "name_over_255_through_pointers": (
        header(qd=1, an=1) + question(name(*_long_labels(3)))
        + rr(b"\x3f" + b"y" * 63 + b"\x3f" + b"z" * 63 + pointer(12), 1, A_RDATA),
        S.ERR_BAD_NAME),
    "bad_pointer_inside_rdata": (header(qd=1, an=1) + question()
                                 + rr(AT_QNAME, 5, pointer(0x3000)), S.ERR_BAD_NAME),

    # ---- RDATA ----------------------------------------------------------------
    "a_rdlength_3": (header(qd=1, an=1) + question() + rr(AT_QNAME, 1, A_RDATA[:3]),
                     S.ERR_BAD_RDATA),
    "a_rdlength_5": (header(qd=1, an=1) + question() + rr(AT_QNAME, 1, A_RDATA + b"\x00"),
                     S.ERR_BAD_RDATA),
    # NSEC: next domain name, then the type bitmap (window 0, 1 octet: A).  RFC
    # 4034 forbids compressing the next name: a pointer there is malformed RDATA
    # for NSEC (dnspython refuses to decompress it), not a malformed name.
    "nsec_next_name_compressed": (header(qd=1, an=1) + question()
                                  + rr(AT_QNAME, 47, AT_QNAME + b"\x00\x01\x40"),
                                  S.ERR_BAD_RDATA),
    "aaaa_rdlength_4": (header(qd=1, an=1) + question() + rr(AT_QNAME, 28, bytes(4)),
                        S.ERR_BAD_RDATA),
    "aaaa_rdlength_15": (header(qd=1, an=1) + question() + rr(AT_QNAME, 28, bytes(15)),
                         S.ERR_BAD_RDATA),
    # priority, weight, port and no target at all.
    "srv_rdlength_6": (header(qd=1, an=1) + question() + rr(AT_QNAME, 33, bytes(6)),
                       S.ERR_BAD_RDATA),
    # order, preference, and two of the three length octets (CVE-2017-1000381).
    "naptr_rdlength_6": (header(qd=1, an=1) + question() + rr(AT_QNAME, 35, bytes(6)),
                         S.ERR_BAD_RDATA),
    "naptr_rdlength_1": (header(qd=1, an=1) + question() + rr(AT_QNAME, 35, bytes(1)),
                         S.ERR_BAD_RDATA),
    "mx_rdlength_2": (header(qd=1, an=1) + question() + rr(AT_QNAME, 15, b"\x00\x0a"),
                      S.ERR_BAD_RDATA),
    # mname and rname, then 10 of the 20 octets of numbers.
    "soa_cut": (header(qd=1, an=1) + question() + rr(AT_QNAME, 6, b"\x00\x00" + bytes(10)),
                S.ERR_BAD_RDATA),
    # a character-string that claims 10 octets and has 3.
    "txt_string_overruns": (header(qd=1, an=1) + question() + rr(AT_QNAME, 16, b"\x0aabc"),
                            S.ERR_BAD_RDATA),
    # flags "s", services claims 200 octets.
    "naptr_services_overruns": (header(qd=1, an=1) + question()
                                + rr(AT_QNAME, 35, b"\x00\x0a\x00\x0a\x01s\xc8SIP"),
                                S.ERR_BAD_RDATA),
    "naptr_flags_overrun": (header(qd=1, an=1) + question()
                            + rr(AT_QNAME, 35, b"\x00\x0a\x00\x0a\x05s"), S.ERR_BAD_RDATA),
    # flags "s", services "SIP", regexp claims 100 octets.
    "naptr_regexp_overruns": (header(qd=1, an=1) + question()
                              + rr(AT_QNAME, 35, b"\x00\x0a\x00\x0a\x01s\x03SIP\x64!^"),
                              S.ERR_BAD_RDATA),
    # MX: RDLENGTH says 10, the preference and the name "m" take 5.
    "rdata_shorter_than_rdlength": (header(qd=1, an=1) + question()
                                    + rr(AT_QNAME, 15, b"\x00\x0a" + name("m") + bytes(5)),
                                    S.ERR_BAD_RDATA),
    # a CNAME target, then one octet more than the target needs.
    "rdata_longer_than_content": (header(qd=1, an=1) + question()
                                  + rr(AT_QNAME, 5, name("t") + b"\x00"), S.ERR_BAD_RDATA),
    # a CNAME target whose label runs to the end of the RDATA, not of the name.
    "rdata_name_unterminated": (header(qd=1, an=1) + question() + rr(AT_QNAME, 5, b"\x03abc"),
                                S.ERR_BAD_RDATA),

    # ---- EDNS -------------------------------------------------------------------
    "two_opt_records": (header(qd=1, ar=2) + question() + opt() + opt(), S.ERR_BAD_EDNS),
    "opt_in_answer": (header(qd=1, an=1) + question() + opt(), S.ERR_BAD_EDNS),
    "opt_in_authority": (header(qd=1, ns=1) + question() + opt(), S.ERR_BAD_EDNS),
    "opt_owner_not_root": (header(qd=1, ar=1) + question() + opt(owner=AT_QNAME), S.ERR_BAD_EDNS),
    # One octet of OPT RDATA: an option's code and length need 4 (1.0 said
    # ERR_BAD_RDATA; since 1.1 every defect of the options is ERR_BAD_EDNS).
    "opt_rdlength_1": (header(qd=1, ar=1) + question() + opt(rdata=b"\x00"), S.ERR_BAD_EDNS),

    # ---- EDNS options (RFC 6891, 8914, 7873, 7871): all ERR_BAD_EDNS ---------
    # OPTION-LENGTH 10, 2 octets of data left in the OPT RDATA.
    "option_overruns_opt_rdata": (with_options(option(15, b"\x00\x12", length=10)),
                                  S.ERR_BAD_EDNS),
    # a good COOKIE, then 3 octets: not an option's code and length.
    "option_header_cut": (with_options(option(10, bytes(8)), b"\x00\x0f\x00"), S.ERR_BAD_EDNS),
    # EDE: INFO-CODE needs 2 octets.
    "ede_0_octets": (with_options(option(15)), S.ERR_BAD_EDNS),
    "ede_1_octet": (with_options(option(15, b"\x12")), S.ERR_BAD_EDNS),
    # EXTRA-TEXT must be UTF-8 (dnspython's rule, kept).
    "ede_text_not_utf8": (with_options(option(15, b"\x00\x12\xff\xfe")), S.ERR_BAD_EDNS),
    # COOKIE: client cookie 8 octets, server cookie 8 to 32 or none.
    "cookie_empty": (with_options(option(10)), S.ERR_BAD_EDNS),
    "cookie_client_7": (with_options(option(10, bytes(7))), S.ERR_BAD_EDNS),
    "cookie_server_7": (with_options(option(10, bytes(8) + bytes(7))), S.ERR_BAD_EDNS),
    "cookie_server_33": (with_options(option(10, bytes(8) + bytes(33))), S.ERR_BAD_EDNS),
    # ECS: FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH, ADDRESS.
    "ecs_fields_cut": (with_options(option(8, b"\x00\x01\x18")), S.ERR_BAD_EDNS),
    "ecs_family_0": (with_options(option(8, b"\x00\x00\x18\x00" + b"\xc0\x00\x02")),
                     S.ERR_BAD_EDNS),
    "ecs_family_3": (with_options(option(8, b"\x00\x03\x18\x00" + b"\xc0\x00\x02")),
                     S.ERR_BAD_EDNS),
    "ecs_source_33_ipv4": (with_options(option(8, b"\x00\x01\x21\x00" + bytes(5))),
                           S.ERR_BAD_EDNS),
    "ecs_source_129_ipv6": (with_options(option(8, b"\x00\x02\x81\x00" + bytes(17))),
                            S.ERR_BAD_EDNS),
    "ecs_scope_33_ipv4": (with_options(option(8, b"\x00\x01\x18\x21" + b"\xc0\x00\x02")),
                          S.ERR_BAD_EDNS),
    # a /24 needs 3 octets of address: 4 sent, then 2.
    "ecs_address_beyond_prefix": (with_options(option(8, b"\x00\x01\x18\x00" + bytes(
        [192, 0, 2, 0]))), S.ERR_BAD_EDNS),
    "ecs_address_short_of_prefix": (with_options(option(8, b"\x00\x01\x18\x00\xc0\x00")),
                                    S.ERR_BAD_EDNS),
    # a /23: the last bit of the third octet is past the prefix, and set.
    "ecs_bits_past_prefix": (with_options(option(8, b"\x00\x01\x17\x00\xc0\x00\x03")),
                             S.ERR_BAD_EDNS),
    # an EDE of 1 octet with an option after it (1.0 said ERR_BAD_NAME here).
    "ede_1_octet_then_padding": (with_options(option(15, b"\x12"), option(12)), S.ERR_BAD_EDNS),
    # a good EDE, then the bad option: all or nothing, no callback at all.
    "good_option_then_bad": (with_options(option(15, b"\x00\x12"), option(10, bytes(7))),
                             S.ERR_BAD_EDNS),
    # REPORT-CHANNEL's agent domain must be a name (dnspython's rule, kept).
    "report_channel_not_a_name": (with_options(option(18, b"\x05ab")), S.ERR_BAD_EDNS),

    # ---- structure ----------------------------------------------------------------
    "tsig_not_last": (header(qd=1, ar=2) + question() + rr(name("key"), 250, TSIG, rclass=255, ttl=0)
                      + rr(AT_QNAME, 1, A_RDATA), S.ERR_FORMAT),
    "tsig_in_answer": (header(qd=1, an=1) + question() + rr(name("key"), 250, TSIG, rclass=255),
                       S.ERR_FORMAT),
    "tsig_class_in": (header(qd=1, ar=1) + question() + rr(name("key"), 250, TSIG, rclass=1),
                      S.ERR_FORMAT),
    # opcode UPDATE: the zone section must be one SOA "question".
    "update_zone_not_soa": (header(flags=QR | (5 << 11), qd=1) + question(qtype=1), S.ERR_FORMAT),
}

def exactly_65535() -> bytes:
    """A valid response of exactly 65535 octets: A records, then one TXT
    record whose strings fill what is left."""
    base = header(qd=1) + question()
    a_record = rr(AT_QNAME, 1, A_RDATA)                  # 16 octets
    count = (65535 - len(base) - 12 - 300) // len(a_record)
    used = len(base) + count * len(a_record) + 12        # + the TXT's owner and fields
    room = 65535 - used
    strings = b""
    while room > 0:
        take = min(room - 1, 255)
        strings += bytes([take]) + b"x" * take
        room -= take + 1
    body = b"".join([a_record] * count) + rr(AT_QNAME, 16, strings)
    msg = header(qd=1, an=count + 1) + question() + body
    assert len(msg) == 65535, len(msg)
    return msg


#: Well-formed controls next to the malformed: each must parse.
ACCEPTED = {
    "good": GOOD,
    "pointer_chain_16_hops": pointer_chain(16),
    "tsig_last": header(qd=1, an=1, ar=1) + question() + rr(AT_QNAME, 1, A_RDATA)
                 + rr(name("key"), 250, TSIG, rclass=255, ttl=0),
    "name_of_255_octets": header(qd=1) + question(name(*_long_labels(3), "x" * 61)),
    "update_response": header(flags=QR | (5 << 11), qd=1) + question(qtype=6),
    # RFC 2782 and RFC 3403 say SRV targets and NAPTR replacements are not
    # compressed; dnspython decompresses them anyway, and so does the shim
    # (decided: be liberal, the pointer is checked like any other).
    "srv_target_compressed": header(qd=1, an=1) + question()
                             + rr(AT_QNAME, 33, b"\x00\x01\x00\x02\x13\xc4" + AT_QNAME),
    "naptr_replacement_compressed": header(qd=1, an=1) + question()
                                    + rr(AT_QNAME, 35, b"\x00\x0a\x00\x0a\x01s\x00\x00" + AT_QNAME),
    "exactly_65535_octets": exactly_65535(),
    # One name in two cases, uncompressed: each record keeps its own case
    # (found by the mutator: the glue once shared the text of equal names).
    "same_name_two_cases": header(qd=1, an=2) + question(name("Example", "COM"))
                           + rr(name("example", "com"), 1, A_RDATA) + rr(AT_QNAME, 1, A_RDATA),
    # An UPDATE prerequisite of class NONE has no RDATA; its wire TTL is not
    # 0, yet dnspython (and so the shim) reports 0. Found by the mutator.
    "update_rdataless_ttl": header(flags=QR | (5 << 11), qd=1, an=1) + question(qtype=6)
                            + rr(AT_QNAME, 5, b"", rclass=254, ttl=16384),
    # EDNS options at the edges of their rules.
    "ede_code_only": with_options(option(15, b"\x00\x16")),           # 22, no EXTRA-TEXT
    "cookie_client_only": with_options(option(10, bytes(range(8)))),
    "cookie_server_8": with_options(option(10, bytes(16))),
    "cookie_server_32": with_options(option(10, bytes(40))),
    "ecs_source_0": with_options(option(8, b"\x00\x01\x00\x00")),   # no address at all
    "ecs_ipv6_source_128": with_options(option(8, b"\x00\x02\x80\x00" + bytes(range(16)))),
    "ecs_source_23": with_options(option(8, b"\x00\x01\x17\x00\xc0\x00\x02")),
    "unknown_option_empty": with_options(option(65001)),
    "padding": with_options(option(12, bytes(37))),
    # the same option twice is not a defect (dnspython keeps both too).
    "two_cookies": with_options(option(10, bytes(8)), option(10, bytes(range(8)))),
}

_BIG = exactly_65535()
# The same 65535 octets announcing one answer more than they hold.
CASES["exactly_65535_octets_one_count_too_many"] = (
    _BIG[:6] + struct.pack("!H", struct.unpack_from("!H", _BIG, 6)[0] + 1) + _BIG[8:],
    S.ERR_TRUNCATED)


def worst_case_64k() -> bytes:
    """The most expensive valid message of at most 64 KiB we know how to build:
    as many records as fit (14 octets each: an owner of one label and a
    pointer, the fixed fields, empty RDATA of a private type), each owner a
    255-octet name of 127 labels reached through 16 compression pointer hops
    (the most dnspython allows).  The owner is a label before the pointer, not
    a lone pointer, so each one is decompressed anew."""
    qname = b"\x01a" * 126 + b"\x00"                      # 253 octets at offset 12
    qsection = qname + struct.pack("!HH", 1, 1)
    chain_at = 12 + len(qsection) + 2 + 10                  # RDATA of the first record
    chain = pointer(12) + b"".join(pointer(chain_at + 2 * (i - 1)) for i in range(1, 15))
    first = rr(pointer(12), 65280, chain)                   # 15 pointers, as opaque RDATA
    small = rr(b"\x01b" + pointer(chain_at + 2 * 14), 65280, b"")  # 16 hops, 255 octets
    count = (65535 - 12 - len(qsection) - len(first)) // len(small)
    return header(qd=1, an=1 + count) + qsection + first + small * count
