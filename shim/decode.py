"""Decoding: DNS wire bytes to records, pure Python over dnspython.

:func:`decode` reads a whole response and returns a :class:`Response`, or
raises the :class:`shim.status.DnsShimError` subclass that names the first
defect met in wire order.  No cffi here: this layer knows nothing of C.

dnspython parses every byte: names with ``dns.name.from_wire_parser``, every
RDATA with the ``from_wire_parser`` of the dnspython class that
:mod:`shim.rdtable` names for its class and type (never through dnspython's
mutable registry, so that no message changes how a later one parses).  What this module writes itself is
the message-level loop of ``dns.message.from_wire``, so that it can

* make every check that ``from_wire`` makes (OPT and TSIG placement, the
  UPDATE rules, trailing bytes, RDATA that must be empty);
* keep each resource record on its own, in wire order, duplicates kept,
  which is what ``from_wire(wire, one_rr_per_rrset=True)`` does, without
  building the RRsets, hashes and de-duplication the C side never sees;
* know what it was reading when a parser failed, so that the status names
  the defect's class where dnspython raises a generic ``FormError``.

Where it differs from ``from_wire`` on purpose: a message with the QR bit
clear is rejected (``ERR_NOT_RESPONSE``); a TSIG record is not verified (there
are no keys) but is checked for its place and handed on like any record,
where ``from_wire`` without a keyring raises ``UnknownTSIGKey``.

The OPT record's options are read here too (:func:`_read_options`): each is
parsed by dnspython's own option class (``dns.edns``), after the checks of
RFC 7871, 7873 and 8914 that this library promises whatever dnspython's
version accepts; a defect in them is ``ERR_BAD_EDNS``.  Given the query the
response must answer (:class:`shim.match.Expected`), :func:`decode` checks it
in the documented order: the header, QR, the ID before any other work, then
the whole message, then the question and the COOKIE.
"""

import enum
import struct

import dns.edns
import dns.exception
import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.wire

from shim.rdtable import parser as rdata_parser
from shim.status import (
    BadEdnsError,
    BadNameError,
    BadRdataError,
    FormatError,
    NotResponseError,
    ShortHeaderError,
    TrailingDataError,
    TruncatedError,
)

__all__ = ["Section", "Header", "EdnsOption", "Record", "Response", "decode"]


def octets(n: int) -> str:
    """A count of octets as the failure detail says it: "1 octet", "2 octets"."""
    return f"{n} octet" if n == 1 else f"{n} octets"


class Section(enum.IntEnum):
    """The sections, with the values of ``DNS_SHIM_SECTION_*``."""

    ANSWER = 1
    AUTHORITY = 2
    ADDITIONAL = 4


_SECTIONS = (Section.ANSWER, Section.AUTHORITY, Section.ADDITIONAL)

_QR = 0x8000
_OPCODE_UPDATE = 5
_OPT = dns.rdatatype.OPT
_TSIG = dns.rdatatype.TSIG
_SOA = dns.rdatatype.SOA
_ANY = dns.rdataclass.ANY
_NONE = dns.rdataclass.NONE

_HEADER = struct.Struct("!6H")
_QUESTION_FIELDS = struct.Struct("!HH")
_RR_FIELDS = struct.Struct("!HHIH")

_NAME_ERRORS = (
    dns.name.BadPointer,
    dns.name.BadLabelType,
    dns.name.NameTooLong,
    dns.name.PointerChainTooLong,
    dns.name.LabelTooLong,
    dns.name.EmptyLabel,
)


class Header:
    """The header of a response, with the first question and the OPT fields."""

    __slots__ = (
        "id", "flags", "opcode", "rcode", "qdcount", "ancount", "nscount", "arcount",
        "qname", "qtype", "qclass", "edns_version", "edns_payload", "edns_flags",
        "options", "opt_position", "opt_ttl", "opt_rdata", "end",
    )

    def __init__(self, id, flags, qdcount, ancount, nscount, arcount):
        self.id = id
        self.flags = flags
        self.opcode = (flags >> 11) & 0xF
        self.rcode = flags & 0xF
        self.qdcount = qdcount
        self.ancount = ancount
        self.nscount = nscount
        self.arcount = arcount
        self.qname = None  # dns.name.Name of the first question
        self.qtype = 0
        self.qclass = 0
        self.edns_version = -1
        self.edns_payload = 0
        self.edns_flags = 0
        self.options = []  # the OPT record's EdnsOptions, in wire order
        self.opt_position = -1  # the OPT's place among the additional records
        self.opt_ttl = 0  # the OPT's TTL field as it stood (extended RCODE, version, flags)
        self.opt_rdata = (0, 0)  # where the OPT's RDATA stood: (start, end)
        self.end = 0  # where the last record ended

    @property
    def edns_do(self) -> bool:
        return bool(self.edns_flags & 0x8000)

    def __repr__(self):
        return "Header(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class EdnsOption:
    """One option of the OPT record (RFC 6891): ``code``, ``data`` (its octets
    as sent), ``parsed`` (dnspython's Option), and the decoded forms of the
    options this library knows, zero or empty for every other code:

    * EDE (15, RFC 8914): ``ede_info_code`` (-1 for other codes) and
      ``ede_text`` (UTF-8 octets, one final NUL dropped as dnspython drops
      it; empty when absent);
    * COOKIE (10, RFC 7873): ``cookie_client`` (8 octets), ``cookie_server``
      (8 to 32, or empty);
    * ECS (8, RFC 7871): ``ecs_family`` (1 or 2), ``ecs_source_prefix``,
      ``ecs_scope_prefix``, ``ecs_address`` (the prefix's octets as sent).
    """

    __slots__ = ("code", "data", "parsed", "ede_info_code", "ede_text", "cookie_client",
                 "cookie_server", "ecs_family", "ecs_source_prefix", "ecs_scope_prefix",
                 "ecs_address")

    def __init__(self, code, data, parsed):
        self.code = code
        self.data = data
        self.parsed = parsed
        self.ede_info_code = -1
        self.ede_text = self.cookie_client = self.cookie_server = self.ecs_address = b""
        self.ecs_family = self.ecs_source_prefix = self.ecs_scope_prefix = 0
        if code == _EDE:
            self.ede_info_code = int(parsed.code)
            self.ede_text = parsed.text.encode("utf-8") if parsed.text is not None else b""
        elif code == _COOKIE:
            self.cookie_client = parsed.client
            self.cookie_server = parsed.server
        elif code == _ECS:
            self.ecs_family = parsed.family
            self.ecs_source_prefix = parsed.srclen
            self.ecs_scope_prefix = parsed.scopelen
            self.ecs_address = parsed.addrdata

    def __repr__(self):
        return f"EdnsOption({self.code}, {self.data.hex()})"


class Record:
    """One resource record as it stood on the wire.

    ``rdata`` is the dnspython Rdata, or None for the RDATA-less records of
    an UPDATE message (class ANY, or a prerequisite of class NONE).
    ``rdata_wire`` is the RDATA as it stood on the wire when no name inside it
    was compressed (else None).  ``wire_ttl`` is the TTL field as it stood
    (``ttl`` is 0 where RFC 2181 or dnspython say so), ``rdata_span`` where
    the RDATA stood in the message: ``(start, end)``.
    """

    __slots__ = ("section", "index", "name", "rdtype", "rdclass", "ttl", "rdata", "rdata_wire",
                 "wire_ttl", "rdata_span")

    def __init__(self, section, index, name, rdtype, rdclass, ttl, rdata, rdata_wire=None):
        self.section = section
        self.index = index
        self.name = name
        self.rdtype = rdtype
        self.rdclass = rdclass
        self.ttl = ttl
        self.rdata = rdata
        self.rdata_wire = rdata_wire
        self.wire_ttl = ttl
        self.rdata_span = (0, 0)

    def __repr__(self):
        return (f"Record({self.section.name}#{self.index} {self.name} "
                f"{dns.rdataclass.to_text(self.rdclass)} {dns.rdatatype.to_text(self.rdtype)} "
                f"ttl={self.ttl} {self.rdata})")


class Response:
    """A decoded response: its header and every record, in wire order."""

    __slots__ = ("header", "records")

    def __init__(self, header, records):
        self.header = header
        self.records = records


class _Overrun(dns.exception.FormError):
    """A read past the parser's current end; ``limit`` is that end, and
    ``name`` whether name decompression set it."""

    def __init__(self, limit, name=False):
        super().__init__()
        self.limit = limit
        self.name = name


class _Parser(dns.wire.Parser):
    """dnspython's parser, telling which end a failed read ran into.

    The message's end means the message is cut; the end of an RDATA, or of
    a field inside it (``restrict_to``: an SVCB parameter's value), means
    the RDATA is malformed; an end that name decompression set
    (``restrict_end``: a pointer target may not run into the name that
    points to it) means the name is.

    The read primitives are re-implemented with the same semantics (bounds
    checked against ``end``, ``furthest`` kept) for speed; dnspython's name
    and RDATA parsers, which call them, are unchanged.
    """

    def get_bytes(self, size):
        start = self.current
        stop = start + size
        if stop > self.end:
            raise _Overrun(self.end, self.end == self.name_end)
        self.current = stop
        if stop > self.furthest:
            self.furthest = stop
        return self.wire[start:stop]

    def get_uint8(self):
        start = self.current
        if start >= self.end:
            raise _Overrun(self.end, self.end == self.name_end)
        self.current = start + 1
        if start >= self.furthest:
            self.furthest = start + 1
        return self.wire[start]

    def get_uint16(self):
        return _U16.unpack(self.get_bytes(2))[0]

    def get_uint32(self):
        return _U32.unpack(self.get_bytes(4))[0]

    def get_struct(self, format):
        fields = _STRUCTS.get(format)
        if fields is None:
            fields = struct.Struct(format)
            if len(_STRUCTS) < 64:
                _STRUCTS[format] = fields
        return fields.unpack(self.get_bytes(fields.size))

    def get_counted_bytes(self, length_size=1):
        if length_size == 1:
            return self.get_bytes(self.get_uint8())
        return self.get_bytes(int.from_bytes(self.get_bytes(length_size), "big"))

    def restore_furthest(self):
        return _RestoreFurthest(self)

    name_end = -1  # the end name decompression set, while a name is read

    def restrict_end(self, end):
        super().restrict_end(end)
        self.name_end = end

    compressed = False  # whether a name read since it was last cleared used a pointer

    def get_name(self, origin=None, decompress=False):
        name = self.read_name(decompress)
        if origin:
            name = name.relativize(origin)
        return name

    def read_name(self, decompress=True):
        """``dns.name.from_wire_parser``, remembering names that are a lone
        compression pointer.

        Responses point to the same few names again and again.  When the name
        at the current position is one pointer to an offset whose name a
        pointer earlier in the message already led to, or where a name
        without any pointer was read, dnspython's parse of it would read the
        same bytes, under looser limits (the pointer is further on, so the
        target still lies strictly before it and inside the part of the
        message before it) and with the same number of hops: it would give
        the same Name, which is reused.  Every other name, and the first of
        each, is parsed by dnspython.
        """
        p = self.current
        wire = self.wire
        if not decompress or p + 2 > self.end or wire[p] < 0xC0:
            name = dns.name.from_wire_parser(self, decompress)
            labels = name.labels
            if self.current - p == len(labels) + sum(map(len, labels)):
                # No pointer in it: a pointer to it later is one hop, and the
                # name lies before that pointer.  Remembered as if a pointer
                # at its last octet had led to it.
                self.pointed[p] = (name, self.current - 1)
            else:
                self.compressed = True
            return name
        self.compressed = True
        target = ((wire[p] & 0x3F) << 8) | wire[p + 1]
        seen = self.pointed.get(target)
        if seen is not None and seen[1] < p:
            self.current = p + 2
            if p + 2 > self.furthest:
                self.furthest = p + 2
            return seen[0]
        name = dns.name.from_wire_parser(self, decompress)
        self.pointed[target] = (name, p)
        return name


class _RestoreFurthest:
    """``Parser.restore_furthest`` as a plain context manager (no generator)."""

    __slots__ = ("parser", "end")

    def __init__(self, parser):
        self.parser = parser
        self.end = parser.end

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        self.parser.current = self.parser.furthest
        self.parser.end = self.end
        self.parser.name_end = -1
        return False


_U16 = struct.Struct("!H")
_U32 = struct.Struct("!I")
_STRUCTS = {}  # struct format -> Struct: the formats of dnspython's own parsers, at most 64


def _read_name(parser, wire_end):
    """A name outside RDATA: cut by the message's end is TRUNCATED."""
    start = parser.current
    try:
        return parser.read_name()
    except _Overrun as e:
        if e.limit == wire_end:
            raise TruncatedError("name runs past the end of the message", start) from None
        raise BadNameError("compression target runs into the name", start) from None
    except _NAME_ERRORS as e:
        raise BadNameError(f"{type(e).__name__}: {e}", start) from None


def _fixed(parser, fields, what):
    try:
        return fields.unpack(parser.get_bytes(fields.size))
    except _Overrun:
        raise TruncatedError(f"message ends inside {what}", parser.current) from None


def _read_rdata(parser, rdclass, rdtype, rdlen):
    start = parser.current
    end = start + rdlen
    saved_end = parser.end
    parse, rc, rt = rdata_parser(rdclass, rdtype)
    parser.end = end
    parser.compressed = False
    try:
        try:
            rdata = parse(rc, rt, parser, None)
        except dns.exception.FormError:
            raise
        except Exception as e:  # what dns.rdata.from_wire_parser does: any failure is FormError
            raise dns.exception.FormError(str(e)) from e
        if parser.current != end:
            raise BadRdataError(
                f"{dns.rdatatype.to_text(rdtype)} RDATA is {octets(rdlen)}, "
                f"its content {parser.current - start}", start)
        return rdata, None if parser.compressed else parser.wire[start:end]
    except BadRdataError:
        raise
    except _Overrun as e:
        if e.limit == end:
            raise BadRdataError(
                f"{dns.rdatatype.to_text(rdtype)} RDATA content runs past its "
                f"RDLENGTH of {rdlen}", start) from None
        if not e.name:
            raise BadRdataError(
                f"{dns.rdatatype.to_text(rdtype)} RDATA: a field runs past its own "
                f"length, inside the RDATA", start) from None
        raise BadNameError("compression target runs into the name", start) from None
    except _NAME_ERRORS as e:
        raise BadNameError(f"{type(e).__name__}: {e}", start) from None
    except dns.exception.FormError as e:
        cause = e.__cause__
        if isinstance(cause, MemoryError):
            raise cause from None
        raise BadRdataError(
            f"{dns.rdatatype.to_text(rdtype)} RDATA rejected: {e or type(e).__name__}",
            start) from None
    finally:
        parser.end = saved_end


_EDE = dns.edns.OptionType.EDE
_COOKIE = dns.edns.OptionType.COOKIE
_ECS = dns.edns.OptionType.ECS
_OPTION_HEADER = struct.Struct("!HH")
_ECS_FIELDS = struct.Struct("!HBB")
_ECS_BITS = {1: 32, 2: 128}


def _check_option(code, data, at):
    """The rules of RFC 8914, 7873 and 7871 for EDE, COOKIE and ECS data,
    checked here rather than left to dnspython, whose classes enforce most
    of them in 2.9.2 but not all in every version this package accepts
    (the zero padding bits of ECS, for one)."""
    n = len(data)
    if code == _EDE:
        if n < 2:
            raise BadEdnsError(f"EDE option of {octets(n)}: the INFO-CODE needs 2", at)
    elif code == _COOKIE:
        if n < 8:
            raise BadEdnsError(f"COOKIE option of {octets(n)}: the client cookie needs 8", at)
        if n != 8 and not 16 <= n <= 40:
            raise BadEdnsError(f"COOKIE server cookie of {octets(n - 8)}: 8 to 32 allowed", at)
    elif code == _ECS:
        if n < 4:
            raise BadEdnsError(f"ECS option of {octets(n)}: its fixed fields need 4", at)
        family, source, scope = _ECS_FIELDS.unpack_from(data)
        bits = _ECS_BITS.get(family)
        if bits is None:
            raise BadEdnsError(f"ECS family {family}: 1 (IPv4) or 2 (IPv6) only", at)
        if source > bits or scope > bits:
            raise BadEdnsError(f"ECS prefix /{source} scope /{scope}: over {bits} bits", at)
        need = (source + 7) // 8
        if n - 4 != need:
            raise BadEdnsError(f"ECS address of {octets(n - 4)}: a /{source} needs {need}", at)
        if source % 8 and data[-1] & (0xFF >> (source % 8)):
            raise BadEdnsError(f"ECS address has bits set past its /{source} prefix", at)


#: Which dnspython class parses an option's data: a fixed table, like
#: shim.rdtable's for RDATA, never dnspython's registry (dns.edns.register_type
#: lets a host program change what dns.edns.get_option_class answers).  Every
#: other code is a GenericOption: its data, kept as sent.
_OPTION_CLASSES = {
    int(dns.edns.OptionType[code]): getattr(dns.edns, name)
    for code, name in (("NSID", "NSIDOption"), ("ECS", "ECSOption"), ("COOKIE", "CookieOption"),
                       ("EDE", "EDEOption"), ("REPORTCHANNEL", "ReportChannelOption"),
                       ("EDE_EXTRA_TEXT_LANGUAGE", "EDEExtraTextLanguageOption"),
                       ("FILTERING_CONTACT", "FilteringContactOption"),
                       ("FILTERING_ORGANIZATION", "FilteringOrganizationOption"),
                       ("FILTERING_DB", "FilteringDBOption"))
    if code in dns.edns.OptionType.__members__ and hasattr(dns.edns, name)
}


def _parse_option(code, wire, start, length):
    """dnspython's parse of one option's data, with the class of the table."""
    cls = _OPTION_CLASSES.get(code, dns.edns.GenericOption)
    parser = dns.wire.Parser(wire, start)
    with parser.restrict_to(length):
        return cls.from_wire_parser(dns.edns.OptionType.make(code), parser)


def _read_options(wire, start, end):
    """The options of the OPT RDATA at wire[start:end], in wire order, each
    parsed by dnspython's class for its code (``dns.edns``, chosen by
    ``_OPTION_CLASSES``) after :func:`_check_option`.  Anything wrong in them is ``ERR_BAD_EDNS``: an
    option (its code and length, or its data) running past the RDATA, data
    that breaks its RFC's rules, or that dnspython rejects (EDE EXTRA-TEXT
    that is not UTF-8, say)."""
    options = []
    p = start
    while p < end:
        if end - p < 4:
            raise BadEdnsError(f"option header cut: {octets(end - p)} left in the OPT RDATA", p)
        code, length = _OPTION_HEADER.unpack_from(wire, p)
        if length > end - p - 4:
            raise BadEdnsError(f"option {code} of {octets(length)} runs past the OPT RDATA", p)
        data = wire[p + 4:p + 4 + length]
        _check_option(code, data, p)
        try:
            parsed = _parse_option(code, wire, p + 4, length)
        except MemoryError:
            raise
        except Exception as e:  # dnspython's classes raise FormError, ValueError...
            raise BadEdnsError(f"option {code} rejected: {e or type(e).__name__}", p) from None
        options.append(EdnsOption(code, data, parsed))
        p += 4 + length
    return options


def decode(wire, expect=None, *, any_message=False, rdata_class=None) -> Response:
    """Decode a whole DNS response.

    :param wire: the message, without a TCP length prefix (bytes-like).
    :param expect: a :class:`shim.match.Expected`, the query this response
        must answer, or None.  Its checks come in this order: the 12-octet
        header, QR, then the ID (before any other work), then the whole
        message (a malformed message with the right ID gets its malformation
        status), then the question and the COOKIE.
    :param any_message: read any message as c-ares's ``ares_dns_parse``
        reads it (shim/ares_dnsrec.py): a query too (QR clear), octets after
        the last record left unread.
    :param rdata_class: None, or a function ``(section, class, parse_class,
        type)`` called for each record whose RDATA is read (the OPT and
        RDATA-less UPDATE records apart), after its fixed fields and RDLENGTH
        are checked: it returns the class whose dnspython grammar reads the
        RDATA (``parse_class``: the record's, an UPDATE's zone class for
        ANY and NONE), or raises, which stops decoding there (c-ares's
        ``ares_dns_parse``, whose record builder refuses a class there and
        reads the fields of a type it knows alike in every class).
    :returns: the :class:`Response`.
    :raises shim.status.DnsShimError: the subclass for the first defect
        (``MismatchError`` when the response does not answer ``expect``).
    """
    wire = bytes(wire)
    wire_end = len(wire)
    if wire_end < 12:
        raise ShortHeaderError(f"{octets(wire_end)}, fewer than the 12 of the header")
    id_, flags, qdcount, ancount, nscount, arcount = _HEADER.unpack_from(wire)
    if not flags & _QR and not any_message:
        raise NotResponseError("the QR bit is clear: a query, not a response", 2)
    if expect is not None:
        expect.check_id(id_)
    header = Header(id_, flags, qdcount, ancount, nscount, arcount)
    update = header.opcode == _OPCODE_UPDATE
    zone_class = None  # UPDATE: the class of the zone (question) section

    parser = _Parser(wire)
    parser.pointed = {}  # target offset -> (Name, offset of the pointer): see read_name
    parser.current = 12
    for i in range(qdcount):
        start = parser.current
        qname = _read_name(parser, wire_end)
        qtype, qclass = _fixed(parser, _QUESTION_FIELDS, "a question")
        if update:
            if (zone_class is not None or dns.rdataclass.is_metaclass(qclass)
                    or qtype != _SOA):
                raise FormatError("UPDATE zone section must be one SOA question", start)
            zone_class = qclass
        if i == 0:
            header.qname = qname
            header.qtype = qtype
            header.qclass = qclass

    records = []
    have_opt = False
    for section, count in zip(_SECTIONS, (ancount, nscount, arcount)):
        index = 0  # the position among real records: the OPT takes none
        for position in range(count):
            start = parser.current
            name = _read_name(parser, wire_end)
            rdtype, rdclass, ttl, rdlen = _fixed(parser, _RR_FIELDS, "a record's fixed fields")
            empty = False
            wire_class = rdclass
            if rdtype == _OPT:
                if section != Section.ADDITIONAL or have_opt or name != dns.name.root:
                    raise BadEdnsError(
                        "OPT outside the additional section" if section != Section.ADDITIONAL
                        else "second OPT" if have_opt else "OPT owner is not the root",
                        start)
            elif rdtype == _TSIG:
                if section != Section.ADDITIONAL or rdclass != _ANY or position != count - 1:
                    raise FormatError("TSIG must be the last record, of class ANY", start)
            elif update:
                if zone_class is None:
                    raise FormatError("UPDATE record without a zone", start)
                if rdclass in (_ANY, _NONE):
                    empty = rdclass == _ANY or section == Section.ANSWER
                    rdclass = zone_class
            if empty:
                if rdlen:
                    raise FormatError("UPDATE record of this class must have no RDATA", start)
                rdata = rdata_wire = None
            else:
                if rdlen > wire_end - parser.current:
                    raise TruncatedError(
                        f"RDLENGTH {rdlen} runs past the end of the message", start)
                rdata_start = parser.current
                if rdtype == _OPT:
                    parser.current = rdata_start + rdlen
                    parser.furthest = max(parser.furthest, parser.current)
                    header.options = _read_options(wire, rdata_start, parser.current)
                    header.opt_rdata = (rdata_start, parser.current)
                else:
                    if rdata_class is not None:
                        rdclass = rdata_class(section, wire_class, rdclass, rdtype)
                    rdata, rdata_wire = _read_rdata(parser, rdclass, rdtype, rdlen)
            if rdtype == _OPT:
                have_opt = True
                header.opt_position = index
                header.opt_ttl = ttl
                header.edns_payload = wire_class
                header.edns_version = (ttl >> 16) & 0xFF
                header.edns_flags = ttl & 0xFFFF
                header.rcode |= (ttl >> 24) << 4
                continue
            wire_ttl = ttl
            if rdtype == _TSIG or rdata is None:
                ttl = 0  # as dnspython keeps TSIG and RDATA-less UPDATE records
            elif ttl > 0x7FFFFFFF:
                ttl = 0  # RFC 2181, section 8
            record = Record(section, index, name, rdtype, wire_class, ttl, rdata, rdata_wire)
            record.wire_ttl = wire_ttl
            if rdata is not None:
                record.rdata_span = (rdata_start, rdata_start + rdlen)
            records.append(record)
            index += 1

    header.end = parser.current
    if parser.current != wire_end and not any_message:
        raise TrailingDataError(octets(wire_end - parser.current), parser.current)
    response = Response(header, records)
    if expect is not None:
        expect.check(response)
    return response


def decode_name(wire, offset):
    """The name at ``offset`` of a message, as dnspython reads it there:
    ``(Name, offset just past its encoding)``.  For callers that are given
    one name's position (c-ares's ares_expand_name); the same name reader
    and errors as :func:`decode`: :class:`BadNameError`, or
    :class:`TruncatedError` for a name cut by the message's end."""
    wire = bytes(wire)
    if not 0 <= offset < len(wire):
        raise TruncatedError("name runs past the end of the message", offset)
    parser = _Parser(wire)
    parser.pointed = {}
    parser.current = offset
    name = _read_name(parser, len(wire))
    return name, parser.current


def decode_string(wire, offset):
    """The character-string (a length octet, then that many octets) at
    ``offset``: ``(bytes, offset just past it)``, or :class:`TruncatedError`."""
    wire = bytes(wire)
    parser = _Parser(wire)
    parser.current = offset
    if not 0 <= offset <= len(wire):
        raise TruncatedError("string outside the message", offset)
    try:
        return parser.get_counted_bytes(), parser.current
    except _Overrun:
        raise TruncatedError("string runs past the end of the message", offset) from None
