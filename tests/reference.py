"""What a C program should see, computed from dnspython alone.

:func:`expected_log` parses a message with
``dns.message.from_wire(wire, keyring=False, one_rr_per_rrset=True)`` (the
reference the header promises) and writes the lines that ``dnsshim_test``
prints for it, field for field.  It shares no code with ``shim``: a mistake
in the library cannot be copied into what it is checked against.

dnspython's choice of RDATA class depends on what it parsed before: its
registry, ``dns.rdata._rdata_classes``, is filled as it goes, and a record
of class ANY (or NONE, or an unassigned class) stores GenericRdata under
``(ANY, type)``, which then answers for IN records of that type, later in the
same message too.  So this module loads every type first, with dnspython's
own ``dns.rdata.load_all_types(disable_dynamic_load=False)``: every real
implementation is then registered under its own class, and what a lookup
adds later cannot hide one.  :func:`parse` also puts the registry back to
that state before each message.  The agreement tests still take
dnspython's verdict from a fresh process for every message
(tests/fresh_reference.py, :func:`verdict`).
"""

import struct

import dns.ipv6
import dns.message
import dns.rdata
import dns.rdataclass
import dns.rdatatype as T

dns.rdata.load_all_types(disable_dynamic_load=False)
_LOADED_REGISTRY = dict(dns.rdata._rdata_classes)

TARGET_KINDS = {T.CNAME: "cname", T.NS: "ns", T.PTR: "ptr", T.DNAME: "dname"}


def _name(n) -> str:
    return n.to_text(omit_final_dot=True)


def _hex(b: bytes) -> str:
    return b.hex()


def header_line(wire: bytes, m) -> str:
    id_, flags, qd, an, ns, ar = struct.unpack_from("!6H", wire)
    assert id_ == m.id and flags == int(m.flags)
    if m.question:
        q = m.question[0]
        qname, qtype, qclass = _name(q.name), int(q.rdtype), int(q.rdclass)
    else:
        qname, qtype, qclass = "<NULL>", 0, 0
    eflags = m.ednsflags & 0xFFFF
    return (f"header id={m.id} flags={int(m.flags)} opcode={int(m.opcode())} rcode={int(m.rcode())} "
            f"qd={qd} an={an} ns={ns} ar={ar} qname={qname} qtype={qtype} qclass={qclass} "
            f"edns={m.edns} payload={m.payload if m.opt else 0} do={1 if eflags & 0x8000 else 0} "
            f"eflags={eflags}")


def option_line(o) -> str:
    """The line for one EDNS option, from dnspython's Option object (its
    to_wire() is the data as sent for every option the tests send: an EDE
    EXTRA-TEXT with a final NUL is checked on its own)."""
    import dns.edns
    ede, ede_text, client, server = -1, b"", b"", b""
    family = source = scope = 0
    address = b""
    if isinstance(o, dns.edns.EDEOption):
        ede, ede_text = int(o.code), (o.text or "").encode()
    elif isinstance(o, dns.edns.CookieOption):
        client, server = o.client, o.server
    elif isinstance(o, dns.edns.ECSOption):
        family, source, scope, address = o.family, o.srclen, o.scopelen, o.addrdata
    return (f"edns_option code={int(o.otype)} data={_hex(o.to_wire())} ede={ede} "
            f"ede_text={_hex(ede_text)} cookie_client={_hex(client)} "
            f"cookie_server={_hex(server)} ecs_family={family} ecs_source={source} "
            f"ecs_scope={scope} ecs_address={_hex(address)}")


def option_view(o) -> list:
    """What the agreement check compares of an EDNS option: its code and
    data (hex), or for EDE, whose EXTRA-TEXT dnspython keeps without a final
    NUL, its code, INFO-CODE and text."""
    if int(o.otype) == 15:
        return [15, int(o.code), (o.text or "").encode().hex()]
    return [int(o.otype), o.to_wire().hex()]


def records(m):
    """(section bit, index, rrset) for every record, in wire order."""
    out = []
    for bit, section in ((1, m.sections[1]), (2, m.sections[2]), (4, m.sections[3])):
        for index, rrset in enumerate(section):
            out.append((bit, index, rrset))
    if m.tsig is not None:
        out.append((4, len(m.sections[3]), m.tsig))
    return out


def record_line(bit, index, rrset, typed=True, other=True):
    """The line for one record, or None when no callback gets it."""
    rd = rrset[0] if len(rrset) else None
    rclass = int(rrset.deleting) if getattr(rrset, "deleting", None) else int(rrset.rdclass)
    rtype = int(rrset.rdtype)
    base = (f"sec={bit} idx={index} owner={_name(rrset.name)} type={rtype} class={rclass} "
            f"ttl={rrset.ttl}")
    if typed and rclass == dns.rdataclass.IN and rd is not None:
        if rtype == T.A:
            return f"a {base} address={rd.address}"
        if rtype == T.AAAA:
            return f"aaaa {base} address={_hex(dns.ipv6.inet_aton(rd.address))}"
        if rtype in TARGET_KINDS:
            return f"{TARGET_KINDS[rtype]} {base} target={_name(rd.target)}"
        if rtype == T.MX:
            return f"mx {base} preference={rd.preference} exchange={_name(rd.exchange)}"
        if rtype == T.TXT:
            strings = "".join(f" string={_hex(s)}" for s in rd.strings)
            return f"txt {base} count={len(rd.strings)}{strings}"
        if rtype == T.SRV:
            return (f"srv {base} priority={rd.priority} weight={rd.weight} port={rd.port} "
                    f"target={_name(rd.target)}")
        if rtype == T.NAPTR:
            return (f"naptr {base} order={rd.order} preference={rd.preference} "
                    f"flags={_hex(rd.flags)} services={_hex(rd.service)} regexp={_hex(rd.regexp)} "
                    f"replacement={_name(rd.replacement)}")
        if rtype == T.SOA:
            return (f"soa {base} mname={_name(rd.mname)} rname={_name(rd.rname)} "
                    f"serial={rd.serial} refresh={rd.refresh} retry={rd.retry} "
                    f"expire={rd.expire} minimum={rd.minimum}")
    if not other:
        return None
    return f"other {base} rdata={_hex(rd.to_wire() if rd is not None else b'')}"


def reset_registry():
    """dnspython's RDATA registry as it stood after every type was loaded."""
    registry = dns.rdata._rdata_classes
    registry.clear()
    registry.update(_LOADED_REGISTRY)


def parse(wire: bytes):
    reset_registry()
    return dns.message.from_wire(wire, keyring=False, one_rr_per_rrset=True)


def expected_log(wire: bytes, sections=7, typed=True, other=True, stop_at=0, m=None,
                 options=True) -> list:
    """The callback lines and the final status line dnsshim_test prints
    (``m``: the message already parsed from ``wire``; options: whether
    on_edns_option is set, as it is by default)."""
    m = parse(wire) if m is None else m
    lines = [header_line(wire, m)]
    if options:
        lines += [option_line(o) for o in m.options]
    for bit, index, rrset in records(m):
        if bit & (sections or 1):
            line = record_line(bit, index, rrset, typed, other)
            if line is not None:
                lines.append(line)
    if stop_at and stop_at <= len(lines):
        return lines[:stop_at] + ["status -11 a callback stopped processing"]
    return lines + ["status 0 success"]



def record_tuples(m) -> list:
    """(section, index, owner, type, wire class, ttl, rdata wire) for every
    record dnspython parsed, in wire order."""
    out = []
    for bit, index, rrset in records(m):
        rd = rrset[0] if len(rrset) else None
        rclass = int(rrset.deleting) if getattr(rrset, "deleting", None) else int(rrset.rdclass)
        out.append((bit, index, _name(rrset.name), int(rrset.rdtype), rclass, rrset.ttl,
                    rd.to_wire() if rd is not None else b""))
    return out


def verdict(wire: bytes) -> dict:
    """dnspython's whole verdict on a message, as plain data (JSON):
    ``{"error": "ExceptionClass"}`` when from_wire rejects it, else its
    records (:func:`record_tuples`, RDATA in hex), the header's rcode, EDNS
    version and flags, and :func:`expected_log`."""
    try:
        m = parse(wire)
    except Exception as e:  # noqa: BLE001 - every rejection counts
        return {"error": type(e).__name__}
    return {"records": [[*t[:6], t[6].hex()] for t in record_tuples(m)],
            "header": [int(m.rcode()), m.edns, m.ednsflags & 0xFFFF],
            "options": [option_view(o) for o in m.options],
            "log": expected_log(wire, m=m)}
