"""The C glue: decoded records to the structs of ``csrc/dns_shim.h``, then to
the program's callbacks.

Every function takes the cffi ``ffi`` it works with, so the same code runs
inside ``libdnsshim.so`` (:mod:`shim.embedded` passes the library's own) and
in tests (an ABI-mode ``ffi`` built from the same header).

:func:`process` is the whole job of one call: decode, convert every record
that will be dispatched (all of them, before the first callback: a failure
while converting must not leave the program half updated), then call the
callbacks in order.  It never raises: every outcome is a :class:`Status`.
"""

import sys
import traceback

import dns.ipv4
import dns.ipv6
import dns.rdataclass
import dns.rdatatype

from shim.decode import Section, decode
from shim.status import DnsShimError, Status, status_of

_IN = dns.rdataclass.IN
_ALL_SECTIONS = Section.ANSWER | Section.AUTHORITY | Section.ADDITIONAL


class _Converter:
    """Builds the C structs of one message and owns their memory.

    Every cdata it creates is kept alive by this object, which lives until the
    last callback of the message has returned: that is the lifetime the header
    promises for pointers handed to callbacks.
    """

    def __init__(self, ffi):
        self.ffi = ffi
        self.keep = []
        # Each distinct name is converted once.  Keyed by the labels, not by
        # the Name: Names compare without case, and the case must be kept.
        self.names = {}  # labels tuple -> char[]

    def name(self, name):
        text = self.names.get(name.labels)
        if text is None:
            text = self.ffi.new("char[]", name.to_text(omit_final_dot=True).encode("ascii"))
            self.names[name.labels] = text
        return text

    def bytes(self, data):
        """A dns_shim_bytes initialiser; data[len] is a NUL (char[] adds it)."""
        buf = self.ffi.new("char[]", data)
        self.keep.append(buf)
        return {"data": self.ffi.cast("const uint8_t *", buf), "len": len(data)}

    def rr(self, record):
        return {
            "owner": self.name(record.name),
            "type": record.rdtype,
            "rclass": record.rdclass,
            "ttl": record.ttl,
            "section": record.section,
            "index": record.index,
        }

    def new(self, ctype, init):
        obj = self.ffi.new(ctype, init)
        self.keep.append(obj)
        return obj

    def header(self, header):
        return self.new("dns_shim_header *", {
            "id": header.id,
            "flags": header.flags,
            "opcode": header.opcode,
            "rcode": header.rcode,
            "qdcount": header.qdcount,
            "ancount": header.ancount,
            "nscount": header.nscount,
            "arcount": header.arcount,
            "qname": self.name(header.qname) if header.qname is not None else self.ffi.NULL,
            "qtype": header.qtype,
            "qclass": header.qclass,
            "edns_version": header.edns_version,
            "edns_payload": header.edns_payload,
            "edns_do": 1 if header.edns_do else 0,
            "edns_flags": header.edns_flags,
        })

    # One method per typed struct: (record) -> cdata pointer.

    def a(self, rec):
        return self.new("dns_shim_a *", {
            "rr": self.rr(rec), "address": list(dns.ipv4.inet_aton(rec.rdata.address))})

    def aaaa(self, rec):
        return self.new("dns_shim_aaaa *", {
            "rr": self.rr(rec), "address": list(dns.ipv6.inet_aton(rec.rdata.address))})

    def target(self, rec):
        return self.new("dns_shim_target *", {
            "rr": self.rr(rec), "target": self.name(rec.rdata.target)})

    def mx(self, rec):
        rd = rec.rdata
        return self.new("dns_shim_mx *", {
            "rr": self.rr(rec), "preference": rd.preference, "exchange": self.name(rd.exchange)})

    def txt(self, rec):
        strings = self.new("dns_shim_bytes[]", [self.bytes(s) for s in rec.rdata.strings])
        return self.new("dns_shim_txt *", {
            "rr": self.rr(rec), "count": len(strings), "strings": strings})

    def srv(self, rec):
        rd = rec.rdata
        return self.new("dns_shim_srv *", {
            "rr": self.rr(rec), "priority": rd.priority, "weight": rd.weight,
            "port": rd.port, "target": self.name(rd.target)})

    def naptr(self, rec):
        rd = rec.rdata
        return self.new("dns_shim_naptr *", {
            "rr": self.rr(rec), "order": rd.order, "preference": rd.preference,
            "flags": self.bytes(rd.flags), "services": self.bytes(rd.service),
            "regexp": self.bytes(rd.regexp), "replacement": self.name(rd.replacement)})

    def soa(self, rec):
        rd = rec.rdata
        return self.new("dns_shim_soa *", {
            "rr": self.rr(rec), "mname": self.name(rd.mname), "rname": self.name(rd.rname),
            "serial": rd.serial, "refresh": rd.refresh, "retry": rd.retry,
            "expire": rd.expire, "minimum": rd.minimum})

    def raw(self, rec):
        wire = rec.rdata.to_wire() if rec.rdata is not None else b""
        return self.new("dns_shim_raw *", {"rr": self.rr(rec), "rdata": self.bytes(wire)})


#: Class IN types with a typed callback: type -> (callback member, converter).
TYPED = {
    dns.rdatatype.A: ("on_a", _Converter.a),
    dns.rdatatype.AAAA: ("on_aaaa", _Converter.aaaa),
    dns.rdatatype.CNAME: ("on_cname", _Converter.target),
    dns.rdatatype.NS: ("on_ns", _Converter.target),
    dns.rdatatype.PTR: ("on_ptr", _Converter.target),
    dns.rdatatype.DNAME: ("on_dname", _Converter.target),
    dns.rdatatype.MX: ("on_mx", _Converter.mx),
    dns.rdatatype.TXT: ("on_txt", _Converter.txt),
    dns.rdatatype.SRV: ("on_srv", _Converter.srv),
    dns.rdatatype.NAPTR: ("on_naptr", _Converter.naptr),
    dns.rdatatype.SOA: ("on_soa", _Converter.soa),
}


def prepare(ffi, response, callbacks):
    """Every (callback, argument) pair of a message, in order, and the
    converter that owns the arguments.  Records whose callback is NULL (with
    no on_other to fall back on) or whose section is not asked for are left
    out; nothing is called yet."""
    conv = _Converter(ffi)
    null = ffi.NULL
    calls = []
    if callbacks.on_header != null:
        calls.append((callbacks.on_header, conv.header(response.header)))
    wanted = callbacks.sections or Section.ANSWER
    on_other = callbacks.on_other
    chosen = {}  # rdtype -> (callback, converter), for class IN
    for rec in response.records:
        if not rec.section & wanted:
            continue
        if rec.rdclass == _IN and rec.rdata is not None:
            pick = chosen.get(rec.rdtype)
            if pick is None:
                member, convert = TYPED.get(rec.rdtype, (None, None))
                fn = getattr(callbacks, member) if member else null
                pick = (fn, convert) if fn != null else (on_other, _Converter.raw)
                chosen[rec.rdtype] = pick
            fn, convert = pick
        else:
            fn, convert = on_other, _Converter.raw
        if fn != null:
            calls.append((fn, convert(conv, rec)))
    return conv, calls


def dispatch(ffi, response, callbacks) -> Status:
    """Convert everything, then call the callbacks in order.  The converter
    stays alive until this returns, so every pointer a callback got is valid
    for as long as that callback runs."""
    conv, calls = prepare(ffi, response, callbacks)
    ctx = callbacks.ctx
    for fn, arg in calls:
        if fn(ctx, arg) != 0:
            return Status.ERR_CALLBACK
    return Status.OK


def process(ffi, buf, length, callbacks) -> Status:
    """One call of the library: ``length`` bytes at ``buf`` (a cdata
    pointer), with ``callbacks`` (a ``dns_shim_callbacks *`` or NULL: parse
    and check only).  Never raises."""
    try:
        if callbacks != ffi.NULL and callbacks.sections & ~_ALL_SECTIONS:
            return Status.ERR_BAD_ARGUMENT
        response = decode(ffi.buffer(buf, length)[:])
        if callbacks == ffi.NULL:
            return Status.OK
        return dispatch(ffi, response, callbacks)
    except DnsShimError as e:
        return e.status
    except BaseException as e:  # noqa: B902 - nothing may escape into C
        status = status_of(e)
        report(status, e)
        return status


def report(status, exc) -> None:
    """Write an unexpected failure, with its traceback, to stderr, flushed."""
    try:
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        message = f"dnsshim: {status.c_name}: unexpected error in the parser:\n{text}"
        stream = sys.stderr if sys.stderr is not None else sys.__stderr__
        stream.write(message)
        stream.flush()
    except BaseException:  # noqa: B902 - the report itself must not fail the call
        pass


def report_unraisable(exc_type, exc, tb) -> None:
    """cffi's onerror hook, the last line of defence around process()."""
    report(Status.ERR_INTERNAL, exc if exc is not None else exc_type())
