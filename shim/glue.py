"""The C glue: decoded records to the structs of ``csrc/dns_shim.h``, then to
the program's callbacks.

Every function takes the cffi ``ffi`` it works with, so the same code runs
inside ``libdnsshim.so`` (:mod:`shim.embedded` passes the library's own) and
in tests (an ABI-mode ``ffi`` built from the same header).

:func:`plan` is the library's job for one call: decode, convert every record
that will be dispatched (all of them, before the first callback: a failure
while converting must not leave the program half updated), and give C the
ordered list of callbacks to call with their arguments; C calls them, then
:func:`release` frees the memory.  :func:`process` does the same and calls
the callbacks itself, for tests and tools.  Neither raises: every outcome
is a :class:`Status`.
"""

import itertools
import sys

# The C module, not socket.py: a tenth of the import time.
from _socket import AF_INET as _AF_INET
from _socket import AF_INET6 as _AF_INET6
from _socket import inet_pton as _inet_pton

import dns.rdataclass
import dns.rdatatype

from shim.cdata import new_for
from shim.decode import Section, decode
from shim.kinds import KINDS
from shim.match import Expected
from shim.rdtable import has_module
from shim.status import BadArgumentError, DnsShimError, Status, status_of

_IN = dns.rdataclass.IN
_ALL_SECTIONS = Section.ANSWER | Section.AUTHORITY | Section.ADDITIONAL


#: How many distinct names keep their C text between messages.  Responses
#: repeat names (the same servers, the same domains), and converting a name
#: to text is a large part of the glue's work; the texts are immutable and
#: owned by the cache, so a callback sees the same bytes either way.  The
#: cache is emptied when full: its memory is bounded.
NAME_CACHE_SIZE = 2048


class _Types:
    """What the glue needs of one ffi, resolved once: the C types of the
    header's structs and the name cache."""

    def __init__(self, ffi):
        self.ffi = ffi
        t = ffi.typeof
        self.header = t("dns_shim_header *")
        # Each typed kind's struct by its callback member; under its
        # converter's name (self.a, ...) too, for the converters written as code.
        self.kind = {}
        for kind in KINDS:
            self.kind[kind.member] = t(f"{kind.struct} *")
            if kind.converter:
                setattr(self, kind.converter, self.kind[kind.member])
        self.raw = t("dns_shim_raw *")
        self.edns_option = t("dns_shim_edns_option *")
        self.bytes_array = t("dns_shim_bytes[]")
        self.u8_array = t("uint8_t[]")
        self.char_array = t("char[]")
        self.names = {}  # labels tuple -> char[]
        # Each callback member by its offset in dns_shim_callbacks: how a plan
        # names the callback C is to call (the struct is the one source).
        self.member_offset = {
            name: ffi.offsetof("dns_shim_callbacks", name)
            for name, _ in ffi.typeof("dns_shim_callbacks").fields if name.startswith("on_")}


_TYPES = {}  # id(ffi) -> _Types: the library's ffi, a test's


def _types(ffi):
    types = _TYPES.get(id(ffi))
    if types is None or types.ffi is not ffi:
        types = _TYPES[id(ffi)] = _Types(ffi)
    return types


def name_cache(ffi):
    """The name cache of ``ffi`` (a dict, labels -> char[], kept in
    insertion order and only ever emptied, never replaced): what
    shim.embedded takes back out after a call the memory limit refused."""
    return _types(ffi).names


class _Converter:
    """Builds the C structs of one message and owns their memory.

    Every cdata it creates is kept alive by this object, which lives until the
    last callback of the message has returned: that is the lifetime the header
    promises for pointers handed to callbacks.

    The structs are initialised positionally, in the order of their members
    in csrc/dns_shim.h (members are only ever appended, and those a tuple
    leaves out are zero); each method names the members it fills.
    """

    def __init__(self, ffi):
        self.ffi = ffi
        self.t = _types(ffi)
        self.new = new_for(ffi)
        self.names = self.t.names
        self.keep = []

    def name(self, name):
        # Keyed by the labels, not by the Name: Names compare without case,
        # and each record must keep its own.
        text = self.names.get(name.labels)
        if text is None:
            text = self.new(self.t.char_array, name.to_text(omit_final_dot=True).encode("ascii"))
            if len(self.names) >= NAME_CACHE_SIZE:
                self.names.clear()
            self.names[name.labels] = text
        # The cache may be emptied (by this message, or by another thread's
        # or a re-entrant call's) while C still reads this text: the message
        # holds it too.
        self.keep.append(text)
        return text

    def bytes(self, data):
        """A dns_shim_bytes {data, len}; data[len] is a NUL."""
        buf = self.new(self.t.u8_array, data + b"\0")
        self.keep.append(buf)
        return (buf, len(data))

    def rr(self, rec):
        """dns_shim_rr {owner, type, rclass, ttl, section, index}"""
        return (self.name(rec.name), rec.rdtype, rec.rdclass, rec.ttl, rec.section, rec.index)

    def header(self, h):
        """dns_shim_header {id, flags, opcode, rcode, qdcount, ancount, nscount,
        arcount, qname, qtype, qclass, edns_version, edns_payload, edns_do,
        edns_flags}"""
        qname = self.name(h.qname) if h.qname is not None else self.ffi.NULL
        return self.new(self.t.header, (
            h.id, h.flags, h.opcode, h.rcode, h.qdcount, h.ancount, h.nscount, h.arcount,
            qname, h.qtype, h.qclass, h.edns_version, h.edns_payload, 1 if h.edns_do else 0,
            h.edns_flags))

    def edns_option(self, o):
        """dns_shim_edns_option {code, data, ede_info_code, ede_text, cookie_client,
        cookie_server, ecs_family, ecs_source_prefix, ecs_scope_prefix,
        ecs_address}: a decode.EdnsOption, its forms decoded there."""
        b = self.bytes
        return self.new(self.t.edns_option, (
            o.code, b(o.data), o.ede_info_code, b(o.ede_text), b(o.cookie_client),
            b(o.cookie_server), o.ecs_family, o.ecs_source_prefix, o.ecs_scope_prefix,
            b(o.ecs_address)))

    # One method per typed struct (shim.kinds names it): (record) -> cdata pointer.

    def a(self, rec):
        """dns_shim_a {rr, address[4]}"""
        return self.new(self.t.a, (self.rr(rec), _inet_pton(_AF_INET, rec.rdata.address)))

    def aaaa(self, rec):
        """dns_shim_aaaa {rr, address[16]}"""
        return self.new(self.t.aaaa, (self.rr(rec), _inet_pton(_AF_INET6, rec.rdata.address)))

    def target(self, rec):
        """dns_shim_target {rr, target}: CNAME, NS, PTR, DNAME"""
        return self.new(self.t.target, (self.rr(rec), self.name(rec.rdata.target)))

    def mx(self, rec):
        """dns_shim_mx {rr, preference, exchange}"""
        rd = rec.rdata
        return self.new(self.t.mx, (self.rr(rec), rd.preference, self.name(rd.exchange)))

    def txt(self, rec):
        """dns_shim_txt {rr, count, strings}"""
        strings = self.new(self.t.bytes_array, [self.bytes(s) for s in rec.rdata.strings])
        self.keep.append(strings)
        return self.new(self.t.txt, (self.rr(rec), len(strings), strings))

    def srv(self, rec):
        """dns_shim_srv {rr, priority, weight, port, target}"""
        rd = rec.rdata
        return self.new(self.t.srv, (self.rr(rec), rd.priority, rd.weight, rd.port,
                                     self.name(rd.target)))

    def naptr(self, rec):
        """dns_shim_naptr {rr, order, preference, flags, services, regexp, replacement}"""
        rd = rec.rdata
        return self.new(self.t.naptr, (self.rr(rec), rd.order, rd.preference, self.bytes(rd.flags),
                                       self.bytes(rd.service), self.bytes(rd.regexp),
                                       self.name(rd.replacement)))

    def soa(self, rec):
        """dns_shim_soa {rr, mname, rname, serial, refresh, retry, expire, minimum}"""
        rd = rec.rdata
        return self.new(self.t.soa, (self.rr(rec), self.name(rd.mname), self.name(rd.rname),
                                     rd.serial, rd.refresh, rd.retry, rd.expire, rd.minimum))

    def raw(self, rec):
        """dns_shim_raw {rr, rdata}: the RDATA as dnspython re-encodes it."""
        rd = rec.rdata
        if rd is None:
            wire = b""
        elif rec.rdata_wire is not None and isinstance(rd, _verbatim_types()):
            wire = rec.rdata_wire
        else:
            wire = rd.to_wire()
        return self.new(self.t.raw, (self.rr(rec), self.bytes(wire)))


_VERBATIM = None


def _verbatim_types():
    """The dnspython RDATA classes whose re-encoding is, by their code, the
    bytes they were parsed from when no name in them was compressed: each
    parses fixed fields, counted strings or the remaining bytes and writes
    the same back (GenericRdata: the bytes themselves; RRSIG and SIG: fixed
    fields, a signer name dnspython never decompresses, the signature;
    DNSKEY, CDNSKEY, DS, CDS, DLV: fixed fields and the key or digest; CAA;
    TXT-like: counted strings; SVCB and HTTPS: the priority, the target
    written as read, then the parameters, whose keys the parser requires in
    strictly increasing order and which it writes back in that order, each
    value as read: bytes, counted strings, 16-bit numbers or keys, addresses
    of 4 or 16 octets).  For them the wire bytes are used rather than
    re-encoding the record; the agreement tests compare the two on every
    mutant."""
    global _VERBATIM
    if _VERBATIM is None:
        import importlib

        import dns.rdata

        found = [dns.rdata.GenericRdata]
        for module, name in (("dns.rdtypes.rrsigbase", "RRSIGBase"),
                             ("dns.rdtypes.dnskeybase", "DNSKEYBase"),
                             ("dns.rdtypes.dsbase", "DSBase"), ("dns.rdtypes.ANY.CAA", "CAA"),
                             ("dns.rdtypes.txtbase", "TXTBase"),
                             ("dns.rdtypes.svcbbase", "SVCBBase")):
            try:
                found.append(getattr(importlib.import_module(module), name))
            except ModuleNotFoundError:
                # A firmware built with --types holds only the modules of its
                # types (shim.rdtable.keep_only): no record is of this class.
                pass
        _VERBATIM = tuple(found)
    return _VERBATIM


def _field_value(conv, style, value):
    """One field of a typed struct from its dnspython value, by its style
    (shim.kinds.STYLES); "strings" gives two members, count and strings."""
    if style == "name":
        return (conv.name(value),)
    if style in ("u16", "u32"):
        return (value,)
    if style == "bytes":
        return (conv.bytes(value),)
    if style == "ipv4":
        return (_inet_pton(_AF_INET, value),)
    if style == "ipv6":
        return (_inet_pton(_AF_INET6, value),)
    if style == "strings":
        strings = conv.new(conv.t.bytes_array, [conv.bytes(v) for v in value])
        conv.keep.append(strings)
        return (len(strings), strings)
    raise ValueError(f"no style {style!r}")


def row_converter(kind):
    """The converter of a row that names none: its struct filled from its
    fields alone, each from the rdata's attribute, as its style says."""
    member = kind.member
    fields = tuple((f.style, f.attribute) for f in kind.fields)

    def convert(conv, rec):
        rd = rec.rdata
        values = [conv.rr(rec)]
        for style, attribute in fields:
            values += _field_value(conv, style, getattr(rd, attribute))
        return conv.new(conv.t.kind[member], tuple(values))

    convert.__name__ = f"convert_{member}"
    return convert


def typed(table) -> dict:
    """type -> (callback member, converter) of a table of kinds: the
    _Converter method a row names, else one made from its fields."""
    return {kind.rdtype: (kind.member, getattr(_Converter, kind.converter) if kind.converter
                          else row_converter(kind)) for kind in table}


#: Class IN types with a typed callback, from the table of kinds (shim.kinds).
TYPED = typed(KINDS)


def prepare(ffi, response, callbacks):
    """Every (callback member, argument) pair of a message, in order, and
    the converter that owns the arguments.  Records whose callback is NULL
    (with no on_other to fall back on) or whose section is not asked for are
    left out; nothing is called yet: every struct is built first.  The OPT
    record's options go to on_edns_option after on_header, whatever the
    sections (the C side zeroes that member for a 1.0 caller's struct)."""
    conv = _Converter(ffi)
    null = ffi.NULL
    calls = []
    if callbacks.on_header != null:
        calls.append(("on_header", conv.header(response.header)))
    if callbacks.on_edns_option != null:
        for option in response.header.options:
            calls.append(("on_edns_option", conv.edns_option(option)))
    wanted = callbacks.sections or Section.ANSWER
    other = "on_other" if callbacks.on_other != null else None
    chosen = {}  # rdtype -> (member, converter), for class IN
    for rec in response.records:
        if not rec.section & wanted:
            continue
        if rec.rdclass == _IN and rec.rdata is not None:
            pick = chosen.get(rec.rdtype)
            if pick is None:
                member, convert = TYPED.get(rec.rdtype, (None, None))
                if (member is None or getattr(callbacks, member) == null
                        or not has_module(_IN, rec.rdtype)):
                    member, convert = other, _Converter.raw
                pick = chosen[rec.rdtype] = (member, convert)
            member, convert = pick
        else:
            member, convert = other, _Converter.raw
        if member is not None:
            calls.append((member, convert(conv, rec)))
    return conv, calls


def expected(ffi, query) -> Expected:
    """A dns_shim_query (C has checked its struct_size, flags and that qname
    is not NULL) as the decoding layer's Expected; its qname's syntax is
    checked there (BadArgumentError)."""
    cookie = query.cookie_client
    return Expected(query.id, ffi.string(query.qname), query.qtype, query.qclass, query.flags,
                    None if cookie == ffi.NULL else ffi.buffer(cookie, 8)[:])


def _decode_for(ffi, buf, length, callbacks, query):
    """The checks and the decoding both paths below start with: the
    arguments, then the message (checked against the query, if any)."""
    if callbacks != ffi.NULL and callbacks.sections & ~_ALL_SECTIONS:
        raise BadArgumentError("unknown bits in the sections mask")
    expect = None if query == ffi.NULL else expected(ffi, query)
    return decode(ffi.buffer(buf, length)[:], expect)


def failure_text(status, exc) -> str:
    """The reason for a failure, as ``dns_shim_last_error`` says it: a
    :class:`DnsShimError`'s own text (its status, what was found, the
    offset), else what went wrong unexpectedly."""
    if isinstance(exc, DnsShimError):
        return str(exc)
    if isinstance(exc, MemoryError):
        return f"{status.c_name}: memory ran out inside the library"
    return f"{status.c_name}: {type(exc).__name__}: {exc} (the traceback is logged)"


def _status_of_failure(exc, runtime) -> Status:
    status = status_of(exc)
    if not isinstance(exc, (DnsShimError, MemoryError)):
        report(status, exc, runtime)
    if runtime.failure is not None:
        try:
            runtime.failure(failure_text(status, exc))
        except BaseException:  # noqa: B902 - the reason must not fail the call
            pass
    return status


def process(ffi, buf, length, callbacks, query=None, runtime=None) -> Status:
    """A whole call, driven from Python: ``length`` bytes at ``buf`` (a
    cdata pointer), with ``callbacks`` (a ``dns_shim_callbacks *``, or NULL
    to parse and check only) and ``query`` (a ``dns_shim_query *`` the
    response must answer, or None/NULL); the callbacks are called from here.
    ``runtime``: where failures are reported (:class:`Runtime`; None: the
    standalone one).
    This is the glue on its own, for tests and tools; the library uses plan()
    and calls the callbacks from C.  Never raises."""
    try:
        response = _decode_for(ffi, buf, length, callbacks,
                               ffi.NULL if query is None else query)
        if callbacks == ffi.NULL:
            return Status.OK
        conv, calls = prepare(ffi, response, callbacks)
        ctx = callbacks.ctx
        for member, arg in calls:
            if getattr(callbacks, member)(ctx, arg) != 0:
                return Status.ERR_CALLBACK
        return Status.OK
    except BaseException as e:  # noqa: B902 - nothing may escape into C
        return _status_of_failure(e, runtime or STANDALONE)


# Plans handed to C and not yet released: token -> what their pointers point to.
_PENDING = {}
_TOKENS = itertools.count(1)


def plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query=None,
         runtime=None) -> Status:
    """The library's call: decode, convert, and hand C the list of calls to
    make, so that C calls the callbacks without holding the interpreter's
    lock (one lock hand-over per message rather than one per callback, and
    threads do not convoy).

    On OK, ``*out_steps`` points to ``*out_count`` dns_shim__step
    {member offset, argument}; everything they point to stays alive until C
    calls release(``*out_token``) (0: nothing to release).  ``query``: the
    ``dns_shim_query *`` of dns_shim_process_reply, or NULL.  ``runtime``
    (:class:`Runtime`; None: the standalone one): where failures are
    reported, and the memory limit the call runs under, if any.  Never
    raises."""
    runtime = runtime or STANDALONE
    if runtime.memory_limit is not None:
        return runtime.memory_limit(unlimited_plan, ffi, buf, length, callbacks, out_steps,
                                    out_count, out_token, query, runtime)
    return unlimited_plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query,
                          runtime)


def unlimited_plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query,
                   runtime) -> Status:
    """plan() itself, whatever the runtime's memory limit.  Never raises."""
    try:
        response = _decode_for(ffi, buf, length, callbacks,
                               ffi.NULL if query is None else query)
        out_count[0] = 0
        out_token[0] = 0
        if callbacks == ffi.NULL:
            return Status.OK
        conv, calls = prepare(ffi, response, callbacks)
        if calls:
            offset = _types(ffi).member_offset
            steps = conv.new("dns_shim__step[]", [(offset[m], arg) for m, arg in calls])
            token = next(_TOKENS)
            _PENDING[token] = (conv, calls, steps)
            out_steps[0] = steps
            out_count[0] = len(calls)
            out_token[0] = token
        return Status.OK
    except BaseException as e:  # noqa: B902 - nothing may escape into C
        return _status_of_failure(e, runtime)


def release(token) -> None:
    """C is done with the plan of ``token``: its memory may go."""
    _PENDING.pop(token, None)


def release_all(tokens, count) -> None:
    """C is done with these ``count`` plans (a ``uint64_t *``).  Never raises."""
    for i in range(count):
        _PENDING.pop(tokens[i], None)


LOG_ERROR = 3    # DNS_SHIM_LOG_ERROR
LOG_WARNING = 4  # DNS_SHIM_LOG_WARNING
LOG_INFO = 6     # DNS_SHIM_LOG_INFO
LOG_DEBUG = 7    # DNS_SHIM_LOG_DEBUG


def _log_to_stderr(level, text) -> None:
    if level > LOG_WARNING:
        return
    stream = sys.stderr if sys.stderr is not None else sys.__stderr__
    stream.write(f"dnsshim: {text}\n")
    stream.flush()


class Runtime:
    """The host the glue serves, handed explicitly to :func:`plan`,
    :func:`process` and :func:`report` (never patched into this module):

    ``log``: where reports go, ``(level, text) -> None``;
    ``failure``: where the reason for a failed call goes, as the text
    ``dns_shim_last_error`` gives, ``(text) -> None``, or None (nowhere);
    ``memory_limit``: None, or ``(unlimited_plan, *its arguments) -> Status``,
    which runs the parse under the library's memory limit.

    :data:`STANDALONE` (stderr, no reason kept, no limit) serves tests and
    tools; inside the library :func:`shim.embedded.attach` builds the one that
    reaches the C side (its log, its per-thread reason, its limit).  A plain
    class, not a dataclass: the library's start-up does not import
    ``dataclasses``."""

    __slots__ = ("log", "failure", "memory_limit")

    def __init__(self, log=_log_to_stderr, failure=None, memory_limit=None):
        self.log = log
        self.failure = failure
        self.memory_limit = memory_limit


STANDALONE = Runtime()


def report(status, exc, runtime=None) -> None:
    """Log an unexpected failure, with its traceback (without it when even
    the formatting fails: the line still says what failed), to the log of
    ``runtime`` (None: the standalone one)."""
    log = (runtime or STANDALONE).log
    head = f"{status.c_name}: unexpected error in the parser"
    try:
        import traceback  # only when something went wrong: keeps start-up light

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        log(LOG_ERROR, f"{head}:\n{text.rstrip()}")
    except BaseException:  # noqa: B902 - the report itself must not fail the call
        try:
            log(LOG_ERROR, f"{head}: {type(exc).__name__}: {exc} (no traceback: formatting it "
                           "failed)")
        except BaseException:  # noqa: B902
            pass


def report_unraisable(exc_type, exc, tb, runtime=None) -> None:
    """cffi's onerror hook, the last line of defence around plan(): reported
    to the log of ``runtime`` (None: the standalone one)."""
    report(Status.ERR_INTERNAL, exc if exc is not None else exc_type(), runtime)
