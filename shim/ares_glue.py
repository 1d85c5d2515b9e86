"""The glue of libdnsshim_ares: c-ares 1.18's classic reply parsers, computed
from a decoded message.

libdnsshim_ares (csrc/ares/dnsshim_ares.c) exports ``ares_parse_a_reply`` and its
siblings.  For each call it hands the message here; :func:`compute` decodes
it with :func:`shim.decode.decode` (dnspython reads every byte, exactly as
for ``process_dns_response``) and works out what the c-ares function returns:
its status and the values of its output, as plain Python (:class:`Result`);
:func:`fill` turns that into the plain C data of ``csrc/ares/dnsshim_ares.h``,
which the C side copies into c-ares's own structures with malloc.  No byte of
the message is read here or in C.

The semantics are those of c-ares 1.18.1's parsers (src/lib/ares_parse_*.c,
ares__parse_into_addrinfo.c, ares__addrinfo2hostent.c, ares_expand_name.c):

* every parser needs exactly one question (else ``ARES_EBADRESP``) and reads
  the answer section only;
* A and AAAA follow the CNAME chain from the question in answer order (each
  CNAME of class IN replaces the name that addresses must be owned by); the
  hostent's name is the first CNAME's target (the question when there is
  none), its aliases the CNAMEs' owners, its addresses those of the family;
  each ``ares_addrttl`` TTL is the address's, capped by the smallest CNAME
  TTL; ``ARES_ENODATA`` when neither an address of the family nor a CNAME
  answers;
* NS, PTR, CNAME targets in those parsers must be host names
  (``[A-Za-z0-9-_/]`` in labels), else ``ARES_EBADRESP``;
* MX, SRV, TXT, NAPTR, CAA and URI give ``ARES_ENODATA`` for an empty answer
  section and an empty list (``ARES_SUCCESS``, NULL) when answers of other
  types only; SOA gives ``ARES_EBADRESP`` where no SOA answers;
* names are c-ares's text: no final dot, the root is "", ``"().;\\@$``
  escaped with a backslash, bytes outside 0x20-0x7E as ``\\DDD``.

Where the message is malformed, the status is ``ARES_EBADRESP``, or
``ARES_EBADNAME`` for a bad name in the parsers that c-ares reads names with
``ares_expand_name`` (MX, SRV, TXT, NAPTR, CAA, URI).  The decoder is stricter
than c-ares 1.18 (it reads and checks the whole message, every RDATA by its
type, and allows only backward compression pointers): dnsshim_ares(3) lists every
kind of message c-ares accepts and this layer rejects.
"""

import itertools
import re
import struct

# The C module, not socket.py: a tenth of the import time.
from _socket import AF_INET as _AF_INET
from _socket import AF_INET6 as _AF_INET6
from _socket import inet_pton as _inet_pton

import dns.rdataclass
import dns.rdatatype

from shim.cdata import new_for
from shim.decode import Section, decode, decode_name, decode_string
from shim.status import BadNameError, DnsShimError, TruncatedError

from shim.ares_codes import CODES, KINDS, WANT_HOST  # noqa: F401 - WANT_HOST is the C side's flag

SUCCESS, ENODATA, EBADNAME, EBADRESP, ENOMEM, EBADSTR = (
    CODES[name] for name in ("SUCCESS", "ENODATA", "EBADNAME", "EBADRESP", "ENOMEM", "EBADSTR"))
(A, AAAA, NS, PTR, MX, TXT, TXT_EXT, SRV, NAPTR, SOA, CAA, URI, EXPAND_NAME,
 EXPAND_STRING) = (KINDS[name] for name in (
    "A", "AAAA", "NS", "PTR", "MX", "TXT", "TXT_EXT", "SRV", "NAPTR", "SOA", "CAA", "URI",
    "EXPAND_NAME", "EXPAND_STRING"))

_IN = dns.rdataclass.IN
_CH = dns.rdataclass.CH
_T_A = dns.rdatatype.A
_T_AAAA = dns.rdatatype.AAAA
_T_CNAME = dns.rdatatype.CNAME
_INT_MAX = 0x7FFFFFFF
_QR = 0x80


class Result:
    """What a c-ares function gives: its status and output.

    ``host``: whether a hostent is made (hostent kinds) from ``name``,
    ``aliases`` and ``addrs`` (packed addresses), ``ttls`` the addrttl TTLs;
    ``items``: the list elements (or the SOA, or the expanded name), each a
    ``(numbers, byte strings)`` pair in the order csrc/ares/dnsshim_ares.h gives.
    """

    __slots__ = ("status", "host", "name", "aliases", "addrs", "ttls", "items")

    def __init__(self, status, host=False, name=None, aliases=(), addrs=(), ttls=(), items=()):
        self.status = status
        self.host = host
        self.name = name
        self.aliases = list(aliases)
        self.addrs = list(addrs)
        self.ttls = list(ttls)
        self.items = list(items)

    def __repr__(self):
        return "Result(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


# ---------------------------------------------------------------- names

_RESERVED = frozenset(b'".;\\()@$')
_HOSTNAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_/")


#: Octets a label keeps as they are in c-ares's text of a name: printable,
#: not one of those it escapes with a backslash.
_ESCAPED = re.compile(rb'[^\x20-\x7e]|["().;\\@$]')


def label_text(label: bytes, lone_nul: bool = True) -> bytes:
    """A label as c-ares writes it in a name's text: ``"().;\\@$`` escaped
    with a backslash, octets outside 0x20-0x7E as ``\\DDD``.  lone_nul:
    a label of one NUL is kept as it is, as c-ares 1.18's ares_expand_name
    keeps it (1.34's ares_dns_name_parse escapes it too)."""
    if not _ESCAPED.search(label) or (lone_nul and label == b"\0"):
        return label
    out = bytearray()
    for b in label:
        if not 0x20 <= b <= 0x7E:
            out += b"\\%03d" % b
        elif b in _RESERVED:
            out += b"\\" + bytes((b,))
        else:
            out.append(b)
    return bytes(out)


def name_text(name) -> bytes:
    """A dnspython Name as c-ares's ares_expand_name writes it."""
    return b".".join(label_text(label) for label in name.labels if label)


def is_hostname(name) -> bool:
    """What c-ares 1.18 accepts where it expects a host name."""
    return all(b in _HOSTNAME for label in name.labels for b in label)


def _same(a: bytes, b: bytes) -> bool:
    """strcasecmp() of two c-ares name texts (which stops at a NUL)."""
    return a.split(b"\0", 1)[0].lower() == b.split(b"\0", 1)[0].lower()


# ---------------------------------------------------------------- the parsers

#: The parsers that read names with ares_expand_name (EBADNAME for a bad
#: one); the others use the variant that says EBADRESP.
_NAME_ERRORS_ARE_EBADNAME = frozenset((MX, TXT, TXT_EXT, SRV, NAPTR, CAA, URI))


def _failure(kind, exc) -> int:
    if kind in _NAME_ERRORS_ARE_EBADNAME:
        if isinstance(exc, BadNameError):
            return EBADNAME
        if isinstance(exc, TruncatedError) and exc.detail.startswith("name "):
            return EBADNAME
    return EBADRESP


def _answers(response):
    return [r for r in response.records if r.section == Section.ANSWER and r.rdata is not None]


def _addresses(kind, response, flags):
    """ares_parse_a_reply and ares_parse_aaaa_reply."""
    question = name_text(response.header.qname)
    hostname = question
    got_address = False
    nodes = []   # (rdtype, packed address, ttl), in answer order
    cnames = []  # (owner text, target text, ttl)
    for r in _answers(response):
        if r.rdclass != _IN:
            continue
        if r.rdtype in (_T_A, _T_AAAA):
            if _same(name_text(r.name), hostname):
                got_address = True
                family = _AF_INET if r.rdtype == _T_A else _AF_INET6
                nodes.append((r.rdtype, _inet_pton(family, r.rdata.address), r.ttl))
        elif r.rdtype == _T_CNAME:
            target = r.rdata.target
            if not is_hostname(target):
                return Result(EBADRESP)
            hostname = name_text(target)
            cnames.append((name_text(r.name), hostname, r.ttl))
    if not got_address and not cnames:
        status = ENODATA
        nodes, cnames = [], []
    else:
        status = SUCCESS
    want = _T_A if kind == A else _T_AAAA
    addrs = [packed for rdtype, packed, _ in nodes if rdtype == want]
    cname_ttl = min((ttl for _, _, ttl in cnames), default=_INT_MAX)
    ttls = [min(ttl, cname_ttl) for rdtype, _, ttl in nodes if rdtype == want]
    host = False
    if flags & WANT_HOST:
        if addrs or cnames:
            host = True
            status = SUCCESS
        else:
            status = ENODATA
    name = cnames[0][1] if cnames else question
    return Result(status, host, name, [alias for alias, _, _ in cnames], addrs, ttls)


def _ns(kind, response, flags):
    servers = []
    for r in _answers(response):
        if r.rdclass == _IN and r.rdtype == dns.rdatatype.NS:
            if not is_hostname(r.rdata.target):
                return Result(EBADRESP)
            servers.append(name_text(r.rdata.target))
    if not servers:
        return Result(ENODATA)
    return Result(SUCCESS, True, name_text(response.header.qname), servers)


def _ptr(kind, response, flags):
    ptrname = name_text(response.header.qname)
    names = []
    for r in _answers(response):
        if r.rdclass != _IN:
            continue
        if r.rdtype == dns.rdatatype.PTR and _same(name_text(r.name), ptrname):
            if not is_hostname(r.rdata.target):
                return Result(EBADRESP)
            names.append(name_text(r.rdata.target))
        elif r.rdtype == _T_CNAME:
            if not is_hostname(r.rdata.target):
                return Result(EBADRESP)
            ptrname = name_text(r.rdata.target)
    if not names:
        return Result(ENODATA)
    return Result(SUCCESS, True, names[-1], names)


def _mx(rd, rec):
    return (rd.preference,), (name_text(rd.exchange),)


def _srv(rd, rec):
    return (rd.priority, rd.weight, rd.port), (name_text(rd.target),)


def _naptr(rd, rec):
    return (rd.order, rd.preference), (rd.flags, rd.service, rd.regexp, name_text(rd.replacement))


def _caa(rd, rec):
    if not rd.value:
        return None  # c-ares 1.18 rejects an empty value
    return (rd.flags,), (rd.tag, rd.value)


def _uri(rd, rec):
    return (rd.priority, rd.weight, rec.ttl), (rd.target,)


#: The list parsers: kind -> (record type, classes, item maker).
_LISTS = {
    MX: (dns.rdatatype.MX, (_IN,), _mx),
    SRV: (dns.rdatatype.SRV, (_IN,), _srv),
    NAPTR: (dns.rdatatype.NAPTR, (_IN,), _naptr),
    CAA: (dns.rdatatype.CAA, (_IN, _CH), _caa),
    URI: (dns.rdatatype.URI, (_IN,), _uri),
}


def _list(kind, response, flags):
    if response.header.ancount == 0:
        return Result(ENODATA)
    rdtype, classes, make = _LISTS[kind]
    items = []
    for r in _answers(response):
        if r.rdtype == rdtype and r.rdclass in classes:
            item = make(r.rdata, r)
            if item is None:
                return Result(EBADRESP)
            items.append(item)
    return Result(SUCCESS, items=items)


def _txt(kind, response, flags):
    if response.header.ancount == 0:
        return Result(ENODATA)
    items = []
    for r in _answers(response):
        if r.rdtype == dns.rdatatype.TXT and r.rdclass in (_IN, _CH):
            for i, s in enumerate(r.rdata.strings):
                items.append(((1 if i == 0 else 0,), (s,)))
    return Result(SUCCESS, items=items)


def _soa(kind, response, flags):
    h = response.header
    if h.ancount == 0 or (h.qtype == dns.rdatatype.SOA and h.ancount > 1):
        return Result(EBADRESP)
    for r in _answers(response):
        if r.rdclass == _IN and r.rdtype == dns.rdatatype.SOA:
            rd = r.rdata
            return Result(SUCCESS, items=[((rd.serial, rd.refresh, rd.retry, rd.expire,
                                            rd.minimum),
                                           (name_text(rd.mname), name_text(rd.rname)))])
    return Result(EBADRESP)


_PARSERS = {A: _addresses, AAAA: _addresses, NS: _ns, PTR: _ptr, MX: _list, TXT: _txt,
            TXT_EXT: _txt, SRV: _list, NAPTR: _list, SOA: _soa, CAA: _list, URI: _list}

_QDCOUNT = struct.Struct("!H")


def parse(kind, wire, flags=WANT_HOST) -> Result:
    """What the ares_parse_* function of ``kind`` gives for ``wire``."""
    wire = bytes(wire)
    if len(wire) < 12 or _QDCOUNT.unpack_from(wire, 4)[0] != 1:
        return Result(EBADRESP)
    # c-ares's reply parsers do not look at the QR bit: the message is
    # decoded as the response it is handed as.
    if not wire[2] & _QR:
        wire = wire[:2] + bytes((wire[2] | _QR,)) + wire[3:]
    try:
        response = decode(wire)
    except DnsShimError as e:
        return Result(_failure(kind, e))
    return _PARSERS[kind](kind, response, flags)


def expand_name(wire, offset) -> Result:
    """ares_expand_name: the name at ``offset``, and the octets it takes."""
    try:
        name, end = decode_name(wire, offset)
    except DnsShimError:
        return Result(EBADNAME)
    return Result(SUCCESS, items=[((end - offset,), (name_text(name),))])


def expand_string(wire, offset) -> Result:
    """ares_expand_string: the character-string at ``offset``."""
    try:
        data, end = decode_string(wire, offset)
    except DnsShimError:
        return Result(EBADSTR)
    return Result(SUCCESS, items=[((end - offset,), (data,))])


def compute(kind, wire, offset=0, flags=WANT_HOST) -> Result:
    """Any call: never raises for any input (a MemoryError is ENOMEM)."""
    try:
        if kind == EXPAND_NAME:
            return expand_name(wire, offset)
        if kind == EXPAND_STRING:
            return expand_string(wire, offset)
        if kind not in _PARSERS:
            return Result(EBADRESP)
        return parse(kind, wire, flags)
    except MemoryError:
        return Result(ENOMEM)


# ---------------------------------------------------------------- to C

class _Filler:
    """Builds the C data of one result and keeps it alive."""

    def __init__(self, ffi):
        self.ffi = ffi
        self.new = new_for(ffi)
        self.keep = []

    def bytes(self, data):
        if data is None:
            return (self.ffi.NULL, 0)
        buf = self.new("uint8_t[]", data + b"\0")
        self.keep.append(buf)
        return (buf, len(data))

    def array(self, ctype, values):
        arr = self.new(ctype, values)
        self.keep.append(arr)
        return arr


def fill(ffi, result, out):
    """Writes ``result`` into ``out`` (a ``dnsshim_ares_result *``); returns
    what keeps the memory it points to alive."""
    f = _Filler(ffi)
    out.status = result.status
    out.have_host = 1 if result.host else 0
    out.name = f.bytes(result.name)
    out.naliases = len(result.aliases)
    out.aliases = f.array("dnsshim_ares_bytes[]", [f.bytes(a) for a in result.aliases])
    out.naddrs = len(result.addrs)
    out.addrlen = len(result.addrs[0]) if result.addrs else 0
    out.addrs = f.array("uint8_t[]", b"".join(result.addrs))
    out.ttls = f.array("int32_t[]", result.ttls)
    out.nitems = len(result.items)
    out.items = f.array("dnsshim_ares_item[]", [
        (list(nums), [f.bytes(s) for s in strs]) for nums, strs in result.items])
    return f


# Results handed to C and not yet released: token -> their memory.
_PENDING = {}
_TOKENS = itertools.count(1)


#: What a call returns when the parser failed unexpectedly (a bug, logged
#: with its traceback): c-ares's code for a reply, a name or a string it could
#: not read.  Only memory running out is ENOMEM.
_UNREADABLE = {EXPAND_NAME: EBADNAME, EXPAND_STRING: EBADSTR}


def run(ffi, kind, buf, length, offset, flags, out, out_token, runtime=None) -> None:
    """The library's call: the result of ``kind`` on ``length`` bytes at
    ``buf``, into ``*out``; ``*out_token`` names its memory until
    :func:`release`.  An unexpected failure is reported to the log of
    ``runtime`` (a :class:`shim.glue.Runtime`; None: the standalone one).
    Never raises."""
    out_token[0] = 0
    try:
        wire = ffi.buffer(buf, length)[:] if length > 0 else b""
        keep = fill(ffi, compute(kind, wire, offset, flags), out)
        token = next(_TOKENS)
        _PENDING[token] = keep
        out_token[0] = token
    except BaseException as e:  # noqa: B902 - nothing may escape into C
        # Nothing half-filled reaches C: its memory is gone with the filler.
        out.status = ENOMEM if isinstance(e, MemoryError) else _UNREADABLE.get(kind, EBADRESP)
        out.have_host = out.naliases = out.naddrs = out.nitems = 0
        if not isinstance(e, MemoryError):
            from shim import glue

            glue.report(glue.Status.ERR_INTERNAL, e, runtime)


def release(token) -> None:
    """C has copied the result of ``token``."""
    _PENDING.pop(token, None)
