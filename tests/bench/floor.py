"""The floor of the instruction benchmark: dnspython's own name and RDATA
parsers alone on a response's bytes.

:func:`parse` reads the header, each question's name and fields, and each
record's owner name, fixed fields and RDATA with dnspython's parsers
(``dns.name.from_wire_parser``, the RDATA class's ``from_wire_parser`` on a
``dns.wire.Parser``), and nothing more: no checks of its own, no records
kept, no structs, no callbacks.  What libdnsshim spends on a message beyond
this is what the shim adds (tests/bench/benchmark.py reports shim/floor).  It
shares no code with ``shim``.
"""

import struct

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.wire

_COUNTS = struct.Struct("!4H")
_CLASSES = {}  # (class, type) -> (Rdata class, RdataClass, RdataType)


def _rdata_class(rdclass, rdtype):
    entry = _CLASSES.get((rdclass, rdtype))
    if entry is None:
        rc = dns.rdataclass.RdataClass.make(rdclass)
        rt = dns.rdatatype.RdataType.make(rdtype)
        entry = _CLASSES[(rdclass, rdtype)] = (dns.rdata.get_rdata_class(rc, rt), rc, rt)
    return entry


def parse(wire):
    qd, an, ns, ar = _COUNTS.unpack_from(wire, 4)
    parser = dns.wire.Parser(wire, 12)
    from_wire_parser = dns.name.from_wire_parser
    for _ in range(qd):
        from_wire_parser(parser)
        parser.get_struct("!HH")
    for _ in range(an + ns + ar):
        from_wire_parser(parser)
        rdtype, rdclass, _ttl, rdlen = parser.get_struct("!HHIH")
        cls, rc, rt = _rdata_class(rdclass, rdtype)
        with parser.restrict_to(rdlen):
            cls.from_wire_parser(rc, rt, parser, None)
