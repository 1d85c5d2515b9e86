"""The Python API: ``shim.parse_response(wire)`` for Python programs.

The same parser and the same semantics as the C ABI, without C or cffi:
typed records for class IN (the C callbacks' structs, as frozen dataclasses),
:class:`Raw` for everything else, all sections in wire order, and the same
statuses, raised as :class:`shim.status.DnsShimError` subclasses that carry
the code (``exc.status``)::

    try:
        response = shim.parse_response(wire)
    except shim.DnsShimError as e:
        print(e.status, e)          # e.g. Status.ERR_BAD_NAME
    for rec in response.answer:
        if isinstance(rec, shim.SRV):
            print(rec.target, rec.port)

The OPT record's options are ``response.options`` (:class:`EdnsOption`, the
C ``dns_shim_edns_option``).  Given ``expect=shim.Query(...)``, the query the
response must answer, ``parse_response`` checks it as
``dns_shim_process_reply`` does, in the same order, and raises
:class:`shim.status.MismatchError` when the response does not answer it::

    query = shim.Query(id=0x1234, qname="example.com", qtype=1, cookie_client=cookie)
    response = shim.parse_response(wire, expect=query)
    for option in response.options:
        if option.code == 15:
            print(option.ede_info_code, option.ede_text.decode())
"""

from __future__ import annotations

import dataclasses
from ipaddress import IPv4Address, IPv6Address

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype

from shim import kinds
from shim.decode import Section, decode
from shim.match import MATCH_CASE, Expected
from shim.status import BadLengthError

__all__ = ["parse_response", "Response", "Header", "Record", *kinds.api_classes(), "Raw",
           "Section", "EdnsOption", "Query"]


def _text(name: dns.name.Name) -> str:
    return name.to_text(omit_final_dot=True)


@dataclasses.dataclass(frozen=True)
class Header:
    """dns_shim_header: the header, the first question, the OPT fields.

    ``qname`` is None when the message has no question; ``edns_version`` is
    -1 when it has no OPT record (then the other ``edns_*`` fields are 0).
    """

    id: int
    flags: int
    opcode: int
    rcode: int
    qdcount: int
    ancount: int
    nscount: int
    arcount: int
    qname: str | None
    qtype: int
    qclass: int
    edns_version: int
    edns_payload: int
    edns_do: bool
    edns_flags: int


@dataclasses.dataclass(frozen=True)
class Record:
    """dns_shim_rr: what every record carries.

    ``owner`` is the name's presentation text without the final dot (the
    root is ``"."``); ``index`` counts the records of its section from 0.
    """

    owner: str
    type: int
    rclass: int
    ttl: int
    section: Section
    index: int


#: A field's Python type and its value from the dnspython rdata's attribute,
#: by style (shim.kinds.STYLES).
_STYLES = {
    "ipv4": (IPv4Address, IPv4Address),
    "ipv6": (IPv6Address, IPv6Address),
    "name": (str, _text),
    "u16": (int, None),
    "u32": (int, None),
    "bytes": (bytes, None),
    "strings": (tuple[bytes, ...], tuple),
}


def _record_class(kind: kinds.Kind) -> type:
    """The frozen dataclass of a row of shim.kinds: a Record plus its fields."""
    cls = dataclasses.make_dataclass(
        kind.api_class, [(f.name, _STYLES[f.style][0]) for f in kind.fields],
        bases=(Record,), frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = kind.doc
    return cls


#: The typed record classes (A, AAAA, Target, MX, TXT, SRV, NAPTR, SOA), one
#: per API class of shim.kinds, in its order.
TYPED_CLASSES = {name: _record_class(kind) for name, kind in kinds.api_classes().items()}
globals().update(TYPED_CLASSES)


@dataclasses.dataclass(frozen=True)
class Raw(Record):
    """Any other record (other types, other classes): its RDATA as dnspython
    re-encodes it, names expanded."""

    rdata: bytes


@dataclasses.dataclass(frozen=True)
class EdnsOption:
    """dns_shim_edns_option: one option of the OPT record, in wire order.

    ``code`` and ``data`` (the octets as sent) always; the decoded forms of
    EDE (15), COOKIE (10) and ECS (8), and -1, 0 or ``b""`` for every other
    code (see csrc/dns_shim.h)."""

    code: int
    data: bytes
    ede_info_code: int = -1
    ede_text: bytes = b""        # UTF-8
    cookie_client: bytes = b""   # 8 octets
    cookie_server: bytes = b""   # 8 to 32 octets, or empty
    ecs_family: int = 0          # 1 IPv4, 2 IPv6
    ecs_source_prefix: int = 0
    ecs_scope_prefix: int = 0
    ecs_address: bytes = b""     # the prefix's octets, as sent


@dataclasses.dataclass(frozen=True)
class Query:
    """The query a response must answer (``dns_shim_query``), for
    ``parse_response(wire, expect=Query(...))``.

    ``qname`` in the presentation form the library delivers (a final dot
    optional), compared without case unless ``match_case`` (for DNS 0x20);
    ``cookie_client``: the 8 octets of client cookie sent, which the
    response's COOKIE option must echo, or None.  Values that cannot be a
    query raise :class:`shim.status.BadArgumentError` when used."""

    id: int
    qname: str
    qtype: int = 1
    qclass: int = 1
    match_case: bool = False
    cookie_client: bytes | None = None

    def expected(self) -> Expected:
        """The form shim.match checks a response against."""
        return Expected(self.id, self.qname, self.qtype, self.qclass,
                        MATCH_CASE if self.match_case else 0, self.cookie_client)


@dataclasses.dataclass(frozen=True)
class Response:
    """A parsed response: the header, every record in wire order (the OPT
    record is not a record: its fields are in the header) and the OPT
    record's options, in wire order."""

    header: Header
    records: list[Record]
    options: tuple[EdnsOption, ...] = ()

    def section(self, section: Section) -> list[Record]:
        """The records of one section, in wire order."""
        return [r for r in self.records if r.section == section]

    @property
    def answer(self) -> list[Record]:
        """The answer section's records."""
        return self.section(Section.ANSWER)

    @property
    def authority(self) -> list[Record]:
        """The authority section's records."""
        return self.section(Section.AUTHORITY)

    @property
    def additional(self) -> list[Record]:
        """The additional section's records (without the OPT record)."""
        return self.section(Section.ADDITIONAL)


#: type -> (API class, ((rdata attribute, conversion or None), ...)).
_MAKERS = {k.rdtype: (TYPED_CLASSES[k.api_class],
                      tuple((f.attribute, _STYLES[f.style][1]) for f in k.fields))
           for k in kinds.KINDS}


def _typed(rr: tuple, rd: dns.rdata.Rdata) -> Record | None:
    maker = _MAKERS.get(rr[1])
    if maker is None:
        return None
    cls, fields = maker
    values = (getattr(rd, attribute) for attribute, _ in fields)
    return cls(*rr, *(value if convert is None else convert(value)
                      for value, (_, convert) in zip(values, fields)))


def parse_response(wire: bytes | bytearray | memoryview,
                   expect: Query | None = None) -> Response:
    """Parse a whole DNS response (bytes-like, without a TCP length prefix).

    :param expect: the :class:`Query` the response must answer, checked as
        ``dns_shim_process_reply`` checks it: the query's values first
        (:class:`BadArgumentError`), the header, QR, the ID, the whole
        message, then the question and the COOKIE
        (:class:`MismatchError`).
    :raises shim.status.DnsShimError: the subclass for the first defect, with
        ``.status`` the code the C ABI returns for the same bytes (a length
        over 65535 is :class:`BadLengthError`).
    :raises TypeError: if ``wire`` is not bytes-like.
    """
    expected = expect.expected() if expect is not None else None
    wire = bytes(memoryview(wire))
    if len(wire) > 65535:
        raise BadLengthError(f"the length is {len(wire)}, not 0 to 65535")
    decoded = decode(wire, expected)
    h = decoded.header
    header = Header(h.id, h.flags, h.opcode, h.rcode, h.qdcount, h.ancount, h.nscount,
                    h.arcount, _text(h.qname) if h.qname is not None else None, h.qtype,
                    h.qclass, h.edns_version, h.edns_payload, h.edns_do, h.edns_flags)
    records = []
    for rec in decoded.records:
        rr = (_text(rec.name), rec.rdtype, rec.rdclass, rec.ttl, Section(rec.section), rec.index)
        typed = None
        if rec.rdclass == dns.rdataclass.IN and rec.rdata is not None:
            typed = _typed(rr, rec.rdata)
        if typed is None:
            typed = Raw(*rr, rec.rdata.to_wire() if rec.rdata is not None else b"")
        records.append(typed)
    options = tuple(EdnsOption(o.code, o.data, o.ede_info_code, o.ede_text, o.cookie_client,
                               o.cookie_server, o.ecs_family, o.ecs_source_prefix,
                               o.ecs_scope_prefix, o.ecs_address) for o in h.options)
    return Response(header, records, options)
