"""The table of typed record kinds (shim/kinds.py) against its oracles: the
public header (csrc/dns_shim.h: every typed callback member, its callback's
struct and that struct's members) and dnspython (each type's number and the
attributes its rdata class has), then what the table names on the Python
side (the glue's converter, the API's class).

The checks are functions of a table and a header's text, so that the tests
at the end can show that each fails on a broken table or header: a row
missing, a row naming another struct, a field missing, a typed member added
to the header without its row."""

import dataclasses
import re

import dns.message
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from dnsshim_build import header as header_reader
from shim import api, glue, kinds
from shim.decode import decode
from shim.kinds import Field, Kind

from conftest import ROOT

HEADER = (ROOT / "csrc" / "dns_shim.h").read_text(encoding="utf-8")

#: The callbacks of dns_shim_callbacks that take no typed record.
NOT_TYPED = {"on_header", "on_other", "on_edns_option"}

#: Each style's C declarations, as (type, member) with the member's name
#: standing for the field's.
C_DECLARATIONS = {
    "ipv4": [("uint8_t", "{}[4]")],
    "ipv6": [("uint8_t", "{}[16]")],
    "name": [("const char *", "{}")],
    "u16": [("uint16_t", "{}")],
    "u32": [("uint32_t", "{}")],
    "bytes": [("dns_shim_bytes", "{}")],
    "strings": [("size_t", "count"), ("const dns_shim_bytes *", "{}")],
}


def struct_members(header_text, struct):
    """[(type, member)] of ``typedef struct <struct> {...} <struct>;``, as the
    build's reader (dnsshim_build.header) reads the header's text."""
    read = header_reader.parse(header_text)
    assert getattr(read.declaration(struct), "kind", "") == "struct", \
        f"{struct} is not in the header"
    members = []
    for m in read.struct(struct):
        d = re.fullmatch(r"(.*?)\s*(\w+(?:\[\d+\])?)", m.decl)
        members.append((d.group(1), d.group(2)))
    return members


def typed_members(header):
    """[(callback type, member)] of dns_shim_callbacks's typed callbacks, in order."""
    return [(t, m) for t, m in struct_members(header, "dns_shim_callbacks")
            if m.startswith("on_") and m not in NOT_TYPED]


def callback_struct(header_text, cb_type):
    """The struct a callback typedef's record argument points to."""
    d = header_reader.parse(header_text).declaration(cb_type)
    assert d is not None and d.kind == "typedef", f"no typedef of {cb_type}"
    m = re.search(rf"typedef int32_t \(\*{cb_type}\)\(void \*ctx, const (\w+) \*\w+\);", d.code)
    assert m, f"{cb_type} is not a callback of one record"
    return m.group(1)


def check_against_header(table, header):
    members = typed_members(header)
    assert [m for _, m in members] == [k.member for k in table], \
        "the typed callback members of dns_shim_callbacks, in order, are the rows'"
    for (cb_type, member), kind in zip(members, table):
        assert callback_struct(header, cb_type) == kind.struct, member
        want = [("dns_shim_rr", "rr")]
        for f in kind.fields:
            want += [(t, m.format(f.name)) for t, m in C_DECLARATIONS[f.style]]
        assert struct_members(header, kind.struct) == want, kind.member


def check_against_dnspython(table):
    assert len({k.rdtype for k in table}) == len(table)
    for kind in table:
        assert dns.rdatatype.from_text(kind.mnemonic) == kind.rdtype
        assert dns.rdatatype.to_text(kind.rdtype) == kind.mnemonic
        cls = dns.rdata.get_rdata_class(dns.rdataclass.IN, kind.rdtype)
        slots = {s for c in cls.__mro__ for s in getattr(c, "__slots__", ())}
        for f in kind.fields:
            assert f.attribute in slots, (kind.mnemonic, f.attribute)


def check_python_side(table):
    by_class = {}
    for kind in table:
        assert kind.member.startswith("on_")
        assert all(f.style in kinds.STYLES for f in kind.fields)
        assert kind.converter == "" or callable(getattr(glue._Converter, kind.converter, None)), \
            kind.converter
        cls = getattr(api, kind.api_class, None)
        assert isinstance(cls, type) and issubclass(cls, api.Record), kind.api_class
        record_fields = [f.name for f in dataclasses.fields(api.Record)]
        assert [f.name for f in dataclasses.fields(cls)] == \
            record_fields + [f.name for f in kind.fields]
        first = by_class.setdefault(kind.api_class, kind)
        assert (first.struct, first.fields, first.converter) == \
            (kind.struct, kind.fields, kind.converter), "one API class, one struct"
        assert first.doc


def test_the_table_is_the_headers_typed_callbacks():
    check_against_header(kinds.KINDS, HEADER)


def test_the_table_agrees_with_dnspython():
    check_against_dnspython(kinds.KINDS)


def test_the_table_names_existing_python_parts():
    check_python_side(kinds.KINDS)


def test_the_glue_and_the_api_follow_the_table():
    assert {t: m for t, (m, _) in glue.TYPED.items()} == {
        dns.rdatatype.A: "on_a", dns.rdatatype.AAAA: "on_aaaa", dns.rdatatype.CNAME: "on_cname",
        dns.rdatatype.NS: "on_ns", dns.rdatatype.PTR: "on_ptr", dns.rdatatype.DNAME: "on_dname",
        dns.rdatatype.MX: "on_mx", dns.rdatatype.TXT: "on_txt", dns.rdatatype.SRV: "on_srv",
        dns.rdatatype.NAPTR: "on_naptr", dns.rdatatype.SOA: "on_soa"}
    assert set(api.__all__) >= {"A", "AAAA", "Target", "MX", "TXT", "SRV", "NAPTR", "SOA"}


def test_the_c_header_has_every_row_and_field():
    text = kinds.c_header()
    for kind in kinds.KINDS:
        assert f'X({kind.rdtype}, {kind.member}, {kind.struct}, "{kind.json_kind}")' in text
        fields = re.search(rf"^#define DNS_SHIM__KIND_FIELDS_{kind.member}\(F\) (.*)$", text,
                           re.M).group(1)
        assert re.findall(r"F\((\w+), (\w+), (\w+)\)", fields) == [
            (kind.struct, f.name, f.style.upper()) for f in kind.fields]


# A row without a converter: its fields alone fill the struct.

#: Records of every typed kind with awkward values: several strings, empty
#: ones and bytes outside ASCII, names with escapes, the largest numbers.
SAMPLES = {
    "A": ["192.0.2.1", "255.255.255.255"],
    "AAAA": ["2001:db8::1", "::ffff:192.0.2.1"],
    "CNAME": ["a\\.b.example."], "NS": ["ns.example."], "PTR": ["."], "DNAME": ["x.example."],
    "MX": ["0 .", "65535 mx.example."],
    "TXT": ['"a" "" "\\000\\255"', '""'],
    "SRV": ["65535 0 5060 sip.example."],
    "NAPTR": ['100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" .', '0 0 "" "" "" x.'],
    "SOA": ["ns. host.\\@x. 4294967295 1 2 3 4"],
}


def _records():
    message = dns.message.make_response(dns.message.make_query("example.", "A"))
    for mnemonic, texts in SAMPLES.items():
        message.answer.append(dns.rrset.from_text_list("r.example.", 60, "IN", mnemonic, texts))
    return decode(message.to_wire()).records


def _read(ffi, struct, kind):
    """A typed struct's values, back as Python values."""
    values = [ffi.string(struct.rr.owner), struct.rr.type, struct.rr.rclass, struct.rr.ttl,
              struct.rr.section, struct.rr.index]
    for f in kind.fields:
        v = getattr(struct, f.name)
        if f.style == "name":
            values.append(ffi.string(v))
        elif f.style == "bytes":
            values.append(ffi.buffer(v.data, v.len + 1)[:])
        elif f.style in ("ipv4", "ipv6"):
            values.append(bytes(ffi.buffer(v)))
        elif f.style == "strings":
            values.append([ffi.buffer(v[i].data, v[i].len + 1)[:] for i in range(struct.count)])
        else:
            values.append(int(v))
    return values


def test_the_samples_cover_every_kind():
    assert {r.rdtype for r in _records()} == {k.rdtype for k in kinds.KINDS}


def test_a_row_made_converter_fills_the_struct_as_the_written_one(header_ffi):
    conv = glue._Converter(header_ffi)
    for rec in _records():
        kind = kinds.BY_TYPE[rec.rdtype]
        if not kind.converter:
            continue  # no written converter to compare with
        written = getattr(glue._Converter, kind.converter)(conv, rec)
        made = glue.row_converter(kind)(conv, rec)
        assert header_ffi.typeof(made) is header_ffi.typeof(written)
        assert _read(header_ffi, made, kind) == _read(header_ffi, written, kind), rec


def test_a_row_without_a_converter_gets_one(header_ffi):
    table = tuple(k._replace(converter="") if k.rdtype == dns.rdatatype.NAPTR else k
                  for k in kinds.KINDS)
    member, convert = glue.typed(table)[dns.rdatatype.NAPTR]
    assert member == "on_naptr" and convert.__name__ == "convert_on_naptr"
    for rec in _records():
        if rec.rdtype == dns.rdatatype.NAPTR:
            struct = convert(glue._Converter(header_ffi), rec)
            assert header_ffi.typeof(struct) is header_ffi.typeof("dns_shim_naptr *")
            assert header_ffi.string(struct.replacement).decode() == \
                rec.rdata.replacement.to_text(omit_final_dot=True)
            assert header_ffi.buffer(struct.services.data, struct.services.len)[:] == \
                rec.rdata.service


# The checks fail on what they are there to catch.

MX = kinds.BY_TYPE[dns.rdatatype.MX]


def _without(table, kind):
    return tuple(k for k in table if k is not kind)


@pytest.mark.parametrize("table", [
    _without(kinds.KINDS, MX),
    tuple(k._replace(struct="dns_shim_srv") if k is MX else k for k in kinds.KINDS),
    tuple(k._replace(fields=k.fields[:1]) if k is MX else k for k in kinds.KINDS),
    tuple(k._replace(fields=(k.fields[1], k.fields[0])) if k is MX else k for k in kinds.KINDS),
    tuple(k._replace(fields=(Field("preference", "u32"), k.fields[1])) if k is MX else k
          for k in kinds.KINDS),
], ids=["row missing", "other struct", "field missing", "fields out of order", "wrong style"])
def test_a_broken_row_fails_the_header_check(table):
    with pytest.raises(AssertionError):
        check_against_header(table, HEADER)


def test_a_typed_member_without_a_row_fails_the_header_check():
    header = HEADER.replace(
        "    dns_shim_soa_cb on_soa;\n",
        "    dns_shim_soa_cb on_soa;\n    dns_shim_target_cb on_cname2;\n")
    assert header != HEADER
    with pytest.raises(AssertionError):
        check_against_header(kinds.KINDS, header)


@pytest.mark.parametrize("kind", [
    Kind(15, "MXX", "on_mx", "dns_shim_mx", "mx", "MX", MX.fields, MX.doc),
    Kind(15, "MX", "on_mx", "dns_shim_mx", "mx", "MX",
         (Field("preference", "u16"), Field("exchanger", "name")), MX.doc),
])
def test_a_row_dnspython_does_not_know_fails(kind):
    with pytest.raises((AssertionError, dns.rdatatype.UnknownRdatatype)):
        check_against_dnspython((kind,))


@pytest.mark.parametrize("kind", [
    MX._replace(converter="mx2"),
    MX._replace(api_class="MX2"),
    MX._replace(fields=MX.fields + (Field("extra", "u16"),)),
    MX._replace(doc=""),
    MX._replace(fields=(Field("preference", "u8"), MX.fields[1])),
])
def test_an_incomplete_row_fails_the_python_check(kind):
    with pytest.raises(AssertionError):
        check_python_side((kind,))
