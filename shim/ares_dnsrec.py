"""The glue of libdnsshim_ares's ``ares_dns_parse``: a whole message, read by
dnspython, as the calls of c-ares's record builders that make it.

c-ares 1.22 and later parse every message with ``ares_dns_parse`` (c-ares's
``src/lib/record/ares_dns_parse.c``) into an ``ares_dns_record_t``: its
resolver on each reply, ``ares_send`` on the program's own query,
``ares_dns_record_duplicate`` on a copy.  libdnsshim_ares defines that
function (csrc/ares/dnsrec.c): :func:`plan` decodes the message with
:func:`shim.decode.decode` (``any_message``: queries too) and says which
builder calls make the record (:class:`Message`), and the C side makes them
on the c-ares library loaded in the process (``ares_dns_record_create``,
``ares_dns_record_query_add``, ``ares_dns_record_rr_add`` and the
``ares_dns_rr_set_*`` / ``ares_dns_rr_add_abin`` setters), so that the
record is c-ares's own: the program, and c-ares itself, use it, write it and
free it as ever.  The builders check what c-ares's parser has them check
(the opcode, the rcode, each class and type), so those answers are c-ares's.

What c-ares's parser decides itself, this module decides the same way:

* an opcode it does not know is ``ARES_EFORMERR``, before anything else;
  then exactly one question, else ``ARES_EBADRESP``;
* a name it cannot read is ``ARES_EBADNAME``;
* a record of a type it knows (not kept as octets) whose class is not IN,
  CH, HS or NONE (ANY only for SIG) is ``ARES_EFORMERR``, its builder's
  refusal, before its RDATA is read; in the classes it takes, each such
  type's fields are read as class IN's (dnspython reads A, AAAA, SRV, NAPTR,
  SVCB and HTTPS by their IN grammar only, CH A as RFC 1035's Chaosnet
  address); a record of type ANY is ``ARES_EBADRESP``;
* a type c-ares does not know (and, under the ``ARES_DNS_PARSE_*_RAW``
  flags, the known ones of a section: base types, those RFC 1035 defines,
  and the others apart) is a RAW_RR of the type and the RDATA octets;
* the OPT record's class is its UDP size, its TTL the extended RCODE (above
  the header's four bits), version and flags; it goes in as class IN, TTL 0;
* an RCODE c-ares does not know becomes SERVFAIL;
* names as c-ares writes them (:func:`name_text`);
* HINFO, NAPTR and CAA-tag strings must be printable (``ARES_EBADSTR``);
  a CAA tag, a CAA value, a URI target, a SIG signature and TLSA data must
  not be empty, and a URI target must be printable (``ARES_EBADRESP``);
* octets after the last record are left unread.

Everything else malformed is ``ARES_EBADRESP``: dnspython reads and checks
every RDATA by its type, where c-ares reads only the fields it keeps, so
this parser refuses some messages c-ares accepts.  dnsshim_ares(3) lists each
class of them with its RFC.
"""

from __future__ import annotations

import io
import itertools
import struct

# The C module, not socket.py: a tenth of the import time.
from _socket import AF_INET as _AF_INET
from _socket import AF_INET6 as _AF_INET6
from _socket import inet_pton as _inet_pton

from shim.ares_codes import CODES
from shim.ares_glue import label_text
from shim.cdata import new_for
from shim.decode import Section, decode
from shim.status import BadNameError, DnsShimError

SUCCESS, EFORMERR, EBADNAME, EBADRESP, ENOMEM, EBADSTR = (
    CODES[name] for name in ("SUCCESS", "EFORMERR", "EBADNAME", "EBADRESP", "ENOMEM", "EBADSTR"))

#: ares_dns_datatype_t: which builder sets a field (ares_dns_record.h).
INADDR, INADDR6, U8, U16, U32, NAME, STR, BIN, BINP, OPT, ABINP = range(1, 12)

#: ares_dns_rec_type_t's RAW_RR: a record c-ares keeps as its type and octets.
RAW_RR = 65536

#: ares_dns_section_t, by the decoder's sections.
_SECTIONS = {Section.ANSWER: 1, Section.AUTHORITY: 2, Section.ADDITIONAL: 3}

#: ARES_DNS_PARSE_*_RAW: (base types raw, other types raw), by section.
_RAW_FLAGS = {1: (1 << 0, 1 << 3), 2: (1 << 1, 1 << 4), 3: (1 << 2, 1 << 5)}

#: The types RFC 1035 defines of those c-ares knows: its "base" types, the
#: ones whose RDATA may hold compressed names (ares_dns_rec_allow_name_comp).
_BASE = frozenset((1, 2, 5, 6, 12, 13, 15, 16))

_OPT_TYPE = 41
_ANY_TYPE = 255
_SIG_TYPE = 24
_IN = 1
#: The classes c-ares takes for a record of a type it knows
#: (ares_dns_class_isvalid: ANY for SIG only).
_CLASSES = frozenset((1, 3, 4, 254))
_ANY_CLASS = 255
#: The types c-ares knows that dnspython reads by a grammar of class IN only
#: (shim.rdtable.IN_MODULES): c-ares reads their fields alike in every class.
_IN_GRAMMAR = frozenset((1, 28, 33, 35, 64, 65))
#: The opcodes c-ares knows (ares_dns_opcode_isvalid).
_OPCODES = frozenset((0, 1, 2, 4, 5))
#: The RCODEs c-ares knows (ares_dns_rcode_isvalid); any other is SERVFAIL.
_RCODES = frozenset((*range(0, 12), *range(16, 24)))
_SERVFAIL = 2

#: The header's flag bits, as ares_dns_flags_t has them.
_FLAGS = ((0x8000, 1 << 0), (0x0400, 1 << 1), (0x0200, 1 << 2), (0x0100, 1 << 3),
          (0x0080, 1 << 4), (0x0020, 1 << 5), (0x0010, 1 << 6))

_HEADER = struct.Struct("!HHHHHH")


class Failed(Exception):
    """The message is refused with c-ares's code ``status``."""

    def __init__(self, status: int, why: str = "") -> None:
        super().__init__(why)
        self.status = status


def _printable(data: bytes) -> bool:
    return all(0x20 <= b <= 0x7E for b in data)


def _string(data: bytes) -> tuple:
    """A character-string c-ares reads as text: printable, else EBADSTR."""
    if not _printable(data):
        raise Failed(EBADSTR, "a string that is not printable")
    return (STR, data)


def _nonempty(data: bytes, what: str) -> bytes:
    if not data:
        raise Failed(EBADRESP, f"an empty {what}")
    return data


def name_text(name) -> bytes:
    """A dnspython Name as c-ares 1.34's ares_dns_name_parse writes it: no
    final dot, the root "", ``"().;\\@$`` escaped with a backslash, every
    octet outside 0x20-0x7E as ``\\DDD`` (c-ares 1.18's ares_expand_name
    kept a label of one NUL as it is: shim.ares_glue.name_text)."""
    return b".".join(label_text(label, lone_nul=False) for label in name.labels if label)


def _name(name) -> tuple:
    return (NAME, name_text(name))


def _params(rd) -> list:
    """SVCB/HTTPS parameters: each key with its value's octets, in wire order."""
    out = []
    for key in sorted(rd.params):
        value = rd.params[key]
        data = io.BytesIO()
        if value is not None:
            value.to_wire(data)
        out.append((OPT, (int(key), data.getvalue())))
    return out


#: ares_dns_rr_key_t: each field's key (ares_dns_record.h: the type times
#: 100 plus a number that is not always the field's place).
KEYS = {
    "A_ADDR": 101, "NS_NSDNAME": 201, "CNAME_CNAME": 501,
    "SOA_MNAME": 601, "SOA_RNAME": 602, "SOA_SERIAL": 603, "SOA_REFRESH": 604,
    "SOA_RETRY": 605, "SOA_EXPIRE": 606, "SOA_MINIMUM": 607,
    "PTR_DNAME": 1201, "HINFO_CPU": 1301, "HINFO_OS": 1302,
    "MX_PREFERENCE": 1501, "MX_EXCHANGE": 1502, "TXT_DATA": 1601,
    "SIG_TYPE_COVERED": 2401, "SIG_ALGORITHM": 2402, "SIG_LABELS": 2403,
    "SIG_ORIGINAL_TTL": 2404, "SIG_EXPIRATION": 2405, "SIG_INCEPTION": 2406,
    "SIG_KEY_TAG": 2407, "SIG_SIGNERS_NAME": 2408, "SIG_SIGNATURE": 2409,
    "AAAA_ADDR": 2801,
    "SRV_PRIORITY": 3302, "SRV_WEIGHT": 3303, "SRV_PORT": 3304, "SRV_TARGET": 3305,
    "NAPTR_ORDER": 3501, "NAPTR_PREFERENCE": 3502, "NAPTR_FLAGS": 3503,
    "NAPTR_SERVICES": 3504, "NAPTR_REGEXP": 3505, "NAPTR_REPLACEMENT": 3506,
    "OPT_UDP_SIZE": 4101, "OPT_VERSION": 4103, "OPT_FLAGS": 4104, "OPT_OPTIONS": 4105,
    "TLSA_CERT_USAGE": 5201, "TLSA_SELECTOR": 5202, "TLSA_MATCH": 5203, "TLSA_DATA": 5204,
    "SVCB_PRIORITY": 6401, "SVCB_TARGET": 6402, "SVCB_PARAMS": 6403,
    "HTTPS_PRIORITY": 6501, "HTTPS_TARGET": 6502, "HTTPS_PARAMS": 6503,
    "URI_PRIORITY": 25601, "URI_WEIGHT": 25602, "URI_TARGET": 25603,
    "CAA_CRITICAL": 25701, "CAA_TAG": 25702, "CAA_VALUE": 25703,
    "RAW_RR_TYPE": 6553601, "RAW_RR_DATA": 6553602,
}
K = KEYS


def _fields(rdtype: int, rd) -> list:
    """The (key, (datatype, value)) of each field c-ares keeps, in the order
    its parser sets them."""
    if rdtype == 1:
        return [(K["A_ADDR"], (INADDR, _inet_pton(_AF_INET, rd.address)))]
    if rdtype == 28:
        return [(K["AAAA_ADDR"], (INADDR6, _inet_pton(_AF_INET6, rd.address)))]
    if rdtype == 2:
        return [(K["NS_NSDNAME"], _name(rd.target))]
    if rdtype == 5:
        return [(K["CNAME_CNAME"], _name(rd.target))]
    if rdtype == 12:
        return [(K["PTR_DNAME"], _name(rd.target))]
    if rdtype == 6:
        return [(K["SOA_MNAME"], _name(rd.mname)), (K["SOA_RNAME"], _name(rd.rname)),
                (K["SOA_SERIAL"], (U32, rd.serial)), (K["SOA_REFRESH"], (U32, rd.refresh)),
                (K["SOA_RETRY"], (U32, rd.retry)), (K["SOA_EXPIRE"], (U32, rd.expire)),
                (K["SOA_MINIMUM"], (U32, rd.minimum))]
    if rdtype == 13:
        return [(K["HINFO_CPU"], _string(rd.cpu)), (K["HINFO_OS"], _string(rd.os))]
    if rdtype == 15:
        return [(K["MX_PREFERENCE"], (U16, rd.preference)),
                (K["MX_EXCHANGE"], _name(rd.exchange))]
    if rdtype == 16:
        if not rd.strings:
            raise Failed(EBADRESP, "TXT without a string")
        return [(K["TXT_DATA"], (ABINP, s)) for s in rd.strings]
    if rdtype == 24:
        return [(K["SIG_TYPE_COVERED"], (U16, rd.type_covered)),
                (K["SIG_ALGORITHM"], (U8, rd.algorithm)), (K["SIG_LABELS"], (U8, rd.labels)),
                (K["SIG_ORIGINAL_TTL"], (U32, rd.original_ttl)),
                (K["SIG_EXPIRATION"], (U32, rd.expiration)),
                (K["SIG_INCEPTION"], (U32, rd.inception)), (K["SIG_KEY_TAG"], (U16, rd.key_tag)),
                (K["SIG_SIGNERS_NAME"], _name(rd.signer)),
                (K["SIG_SIGNATURE"], (BIN, _nonempty(rd.signature, "SIG signature")))]
    if rdtype == 33:
        return [(K["SRV_PRIORITY"], (U16, rd.priority)), (K["SRV_WEIGHT"], (U16, rd.weight)),
                (K["SRV_PORT"], (U16, rd.port)), (K["SRV_TARGET"], _name(rd.target))]
    if rdtype == 35:
        return [(K["NAPTR_ORDER"], (U16, rd.order)), (K["NAPTR_PREFERENCE"], (U16, rd.preference)),
                (K["NAPTR_FLAGS"], _string(rd.flags)), (K["NAPTR_SERVICES"], _string(rd.service)),
                (K["NAPTR_REGEXP"], _string(rd.regexp)),
                (K["NAPTR_REPLACEMENT"], _name(rd.replacement))]
    if rdtype == 52:
        return [(K["TLSA_CERT_USAGE"], (U8, rd.usage)), (K["TLSA_SELECTOR"], (U8, rd.selector)),
                (K["TLSA_MATCH"], (U8, rd.mtype)),
                (K["TLSA_DATA"], (BIN, _nonempty(rd.cert, "TLSA certificate association data")))]
    if rdtype in (64, 65):
        kind = "SVCB" if rdtype == 64 else "HTTPS"
        return [(K[f"{kind}_PRIORITY"], (U16, rd.priority)), (K[f"{kind}_TARGET"], _name(rd.target)),
                *((K[f"{kind}_PARAMS"], p) for p in _params(rd))]
    if rdtype == 256:
        target = _nonempty(rd.target, "URI target")
        if not _printable(target):
            raise Failed(EBADRESP, "a URI target that is not printable")
        return [(K["URI_PRIORITY"], (U16, rd.priority)), (K["URI_WEIGHT"], (U16, rd.weight)),
                (K["URI_TARGET"], (NAME, target))]
    if rdtype == 257:
        tag = _nonempty(rd.tag, "CAA tag")
        return [(K["CAA_CRITICAL"], (U8, rd.flags)), (K["CAA_TAG"], _string(tag)),
                (K["CAA_VALUE"], (BINP, _nonempty(rd.value, "CAA value")))]
    raise AssertionError(f"no fields for type {rdtype}")


#: The types c-ares parses into fields (ares_dns_rec_type_isvalid, ANY and
#: OPT apart).
KNOWN = frozenset((1, 2, 5, 6, 12, 13, 15, 16, 24, 28, 33, 35, 52, 64, 65, 256, 257))


class Record:
    """One ares_dns_record_rr_add call and its fields."""

    __slots__ = ("section", "name", "rdtype", "rdclass", "ttl", "fields")

    def __init__(self, section, name, rdtype, rdclass, ttl, fields):
        self.section = section
        self.name = name
        self.rdtype = rdtype
        self.rdclass = rdclass
        self.ttl = ttl
        self.fields = fields

    def __repr__(self):
        return (f"Record({self.section} {self.name!r} {self.rdtype} {self.rdclass} "
                f"{self.ttl} {self.fields!r})")


class Message:
    """The builder calls of one message: ``ares_dns_record_create`` with id,
    flags, opcode and rcode; one question; the records in wire order."""

    __slots__ = ("id", "flags", "opcode", "rcode", "qname", "qtype", "qclass", "records")

    def __init__(self, id, flags, opcode, rcode, qname, qtype, qclass, records):
        self.id, self.flags, self.opcode, self.rcode = id, flags, opcode, rcode
        self.qname, self.qtype, self.qclass = qname, qtype, qclass
        self.records = records


def _raw(rdtype, wire, span) -> list:
    """A RAW_RR's fields: the type, and the RDATA's octets (none when empty)."""
    data = bytes(wire[span[0]:span[1]])
    return [(K["RAW_RR_TYPE"], (U16, rdtype)), *([(K["RAW_RR_DATA"], (BIN, data))] if data else [])]


def _raw_type(section: int, rdtype: int, flags: int) -> bool:
    """Whether c-ares keeps a record of this type as a RAW_RR: a type it
    does not know (ANY is one it knows), or one the flags name."""
    if rdtype == _ANY_TYPE:
        return bool(flags & _RAW_FLAGS[section][1])
    return rdtype not in KNOWN or bool(flags & _RAW_FLAGS[section][rdtype not in _BASE])


def _check_class(rdtype: int, rdclass: int) -> None:
    """ares_dns_record_rr_add's refusal of a class for a type it knows, then
    ares_dns_parse_rr_data's of type ANY."""
    if rdclass not in _CLASSES and not (rdclass == _ANY_CLASS and rdtype == _SIG_TYPE):
        raise Failed(EFORMERR, f"class {rdclass} for type {rdtype}")
    if rdtype == _ANY_TYPE:
        raise Failed(EBADRESP, "a record of type ANY")


def _rdata_reader(flags: int):
    """decode's rdata_class: a record as c-ares takes it, before its RDATA
    is read (ares_dns_parse_rr: the section's flags, then the builder's
    class check, then the fields)."""

    def rdata_class(section, rdclass, parse_class, rdtype):
        if not _raw_type(_SECTIONS[section], rdtype, flags):
            _check_class(rdtype, rdclass)
        # The same grammar whether the record is kept as octets or not:
        # dnspython checks the RDATA of those too.
        return _IN if rdtype in _IN_GRAMMAR and rdclass in _CLASSES else parse_class

    return rdata_class


def plan(wire, flags: int = 0) -> Message:
    """The builder calls that make ``wire`` into c-ares's record under the
    ``ARES_DNS_PARSE_*`` ``flags``.

    :raises Failed: with c-ares's code for a message it cannot be.
    """
    wire = bytes(wire)
    if len(wire) < 12:
        raise Failed(EBADRESP, "shorter than a header")
    id_, hflags, qdcount = _HEADER.unpack_from(wire)[:3]
    # c-ares creates the record from the header before it counts questions:
    # an opcode it does not know is ares_dns_record_create's EFORMERR.
    if (hflags >> 11) & 0xF not in _OPCODES:
        raise Failed(EFORMERR, "an opcode c-ares does not know")
    if qdcount != 1:
        raise Failed(EBADRESP, f"{qdcount} questions")
    try:
        response = decode(wire, any_message=True, rdata_class=_rdata_reader(flags))
    except BadNameError as e:
        # c-ares says EBADNAME for any name it cannot read.
        raise Failed(EBADNAME, str(e)) from None
    except DnsShimError as e:
        raise Failed(EBADRESP, str(e)) from None
    header = response.header
    rcode = header.rcode & 0xF
    records = []
    owners = {}  # this message's owner names' texts, by their exact labels
    opt = None  # the OPT record, where it stood among the additional ones
    additional = 0
    for record in response.records:
        section = _SECTIONS[record.section]
        if section == 3:
            if additional == header.opt_position:
                opt = _opt(header, wire, flags)
                records.append(opt)
            additional += 1
        rdtype = record.rdtype
        raw = _raw_type(section, rdtype, flags)
        if not raw:
            _check_class(rdtype, record.rdclass)  # decode's check, but where no RDATA was read
        if record.rdata is None and not raw:
            # An UPDATE record without RDATA (RFC 2136 2.5.2-2.5.4): c-ares
            # reads its fields from the octets that follow, and fails.
            raise Failed(EBADRESP, "a record of a type with fields, without RDATA")
        fields = _raw(rdtype, wire, record.rdata_span) if raw else _fields(rdtype, record.rdata)
        owner = owners.get(record.name.labels)
        if owner is None:
            owner = owners[record.name.labels] = name_text(record.name)
        records.append(Record(section, owner, RAW_RR if raw else rdtype,
                              record.rdclass, record.wire_ttl, fields))
    if header.opt_position >= 0 and opt is None:  # the last additional record
        opt = _opt(header, wire, flags)
        records.append(opt)
    if opt is not None and opt.rdtype == _OPT_TYPE:  # a raw OPT says no RCODE
        rcode |= (header.opt_ttl >> 20) & 0xFF0
    flag_bits = 0
    for bit, ares in _FLAGS:
        if hflags & bit:
            flag_bits |= ares
    return Message(id_, flag_bits, header.opcode, rcode if rcode in _RCODES else _SERVFAIL,
                   name_text(header.qname), header.qtype, header.qclass, records)


def _opt(header, wire, flags) -> Record:
    """The OPT record: its fields, or its octets under ARES_DNS_PARSE_AR_EXT_RAW."""
    if flags & _RAW_FLAGS[3][1]:
        return Record(3, b"", RAW_RR, header.edns_payload, header.opt_ttl,
                      _raw(_OPT_TYPE, wire, header.opt_rdata))
    ttl = header.opt_ttl
    return Record(3, b"", _OPT_TYPE, 1, 0, [
        (K["OPT_UDP_SIZE"], (U16, header.edns_payload)),
        (K["OPT_VERSION"], (U8, (ttl >> 16) & 0xFF)), (K["OPT_FLAGS"], (U16, ttl & 0xFFFF)),
        *((K["OPT_OPTIONS"], (OPT, (option.code, bytes(option.data))))
          for option in header.options)])


def compute(wire, flags: int = 0):
    """(status, Message or None): never raises (a MemoryError is ENOMEM)."""
    try:
        return SUCCESS, plan(wire, flags)
    except Failed as e:
        return e.status, None
    except MemoryError:
        return ENOMEM, None


# ---------------------------------------------------------------- to C

def fill(ffi, status, message, out):
    """Writes the plan into ``out`` (a ``dnsshim_ares_message *``); returns
    what keeps the memory it points to alive: every text and octet string
    in one buffer (each followed by a NUL), every field in one array."""
    out.status = status
    if message is None:
        out.nrrs = 0
        out.rrs = ffi.NULL
        return None
    blob = bytearray()
    places = []  # (offset, length) of each string, in the order put

    def put(value):
        places.append((len(blob), len(value)))
        blob.extend(value)
        blob.append(0)

    put(message.qname)
    numbers = []
    for record in message.records:
        put(record.name)
        for _, (datatype, value) in record.fields:
            if datatype in (U8, U16, U32):
                numbers.append(value)
                places.append(None)
            elif datatype == OPT:
                numbers.append(value[0])
                put(value[1])
            else:
                numbers.append(0)
                put(value)
    new = new_for(ffi)
    buf = new("uint8_t[]", bytes(blob) or b"\0")
    null = (ffi.NULL, 0)
    where = iter(places)

    def bytes_of(place):
        return null if place is None else (buf + place[0], place[1])

    out.id, out.flags, out.opcode, out.rcode = (message.id, message.flags, message.opcode,
                                                message.rcode)
    out.qname = bytes_of(next(where))
    out.qtype, out.qclass = message.qtype, message.qclass
    count = sum(len(r.fields) for r in message.records)
    numbers = iter(numbers)
    rr_init, field_init, starts = [], [], []
    for record in message.records:
        name = bytes_of(next(where))
        starts.append(len(field_init))
        for key, (datatype, _) in record.fields:
            field_init.append((key, datatype, next(numbers), bytes_of(next(where))))
        rr_init.append([record.section, record.rdtype, record.rdclass, record.ttl, name,
                        len(record.fields)])
    fields = new("dnsshim_ares_field[]", field_init) if count else ffi.NULL
    for init, start in zip(rr_init, starts):
        init.append(fields + start if init[5] else ffi.NULL)
    rrs = new("dnsshim_ares_rr[]", rr_init) if rr_init else ffi.NULL
    out.nrrs = len(rr_init)
    out.rrs = rrs
    return [buf, fields, rrs]


# Plans handed to C and not yet released: token -> their memory.
_PENDING = {}
_TOKENS = itertools.count(1)


def run(ffi, buf, length, flags, out, out_token, runtime=None) -> None:
    """The library's call: the plan of ``length`` bytes at ``buf`` into
    ``*out``; ``*out_token`` names its memory until :func:`release`.  An
    unexpected failure is reported to the log of ``runtime`` and is
    ``ARES_EBADRESP``.  Never raises."""
    out_token[0] = 0
    try:
        wire = ffi.buffer(buf, length)[:] if length > 0 else b""
        status, message = compute(wire, flags)
        keep = fill(ffi, status, message, out)
        token = next(_TOKENS)
        _PENDING[token] = keep
        out_token[0] = token
    except BaseException as e:  # noqa: B902 - nothing may escape into C
        out.status = ENOMEM if isinstance(e, MemoryError) else EBADRESP
        out.nrrs = 0
        if not isinstance(e, MemoryError):
            from shim import glue

            glue.report(glue.Status.ERR_INTERNAL, e, runtime)


def release(token) -> None:
    """C has built the record of ``token``."""
    _PENDING.pop(token, None)
