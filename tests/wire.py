"""Hand-built DNS wire messages for the malformed-input tests.

Each helper returns the bytes of one field group, so a test reads like the
message it builds:

    msg = header(qd=1) + question(b"\\xc0\\x0c")    # QNAME: pointer to itself
"""

import struct

QR = 0x8000
TC = 0x0200
RD_RA = 0x0180


def header(id=0x1234, flags=QR | RD_RA, qd=0, an=0, ns=0, ar=0) -> bytes:
    """The 12 header octets: ID, flags, QDCOUNT, ANCOUNT, NSCOUNT, ARCOUNT."""
    return struct.pack("!6H", id, flags, qd, an, ns, ar)


def name(*labels) -> bytes:
    """An uncompressed name: length-prefixed labels, then the root's 0."""
    out = b""
    for label in labels:
        label = label.encode() if isinstance(label, str) else label
        out += bytes([len(label)]) + label
    return out + b"\x00"


def pointer(offset: int) -> bytes:
    """A compression pointer to `offset` (the two octets 11xxxxxx xxxxxxxx)."""
    return struct.pack("!H", 0xC000 | offset)


def question(qname=None, qtype=1, qclass=1) -> bytes:
    """QNAME, QTYPE, QCLASS."""
    return (qname if qname is not None else name("example", "com")) + struct.pack("!HH", qtype, qclass)


def rr(owner, rtype, rdata=b"", rclass=1, ttl=300, rdlength=None) -> bytes:
    """NAME, TYPE, CLASS, TTL, RDLENGTH (the real one unless given), RDATA."""
    if rdlength is None:
        rdlength = len(rdata)
    return owner + struct.pack("!HHIH", rtype, rclass, ttl, rdlength) + rdata


# The name of the question above, "example.com", sits at offset 12.
AT_QNAME = pointer(12)


def opt(owner=b"\x00", payload=1232, ext_rcode=0, version=0, flags=0, rdata=b"") -> bytes:
    """An OPT pseudo-record: CLASS is the payload, TTL packs rcode/version/flags."""
    ttl = (ext_rcode << 24) | (version << 16) | flags
    return rr(owner, 41, rdata, rclass=payload, ttl=ttl)


def option(code: int, data: bytes = b"", length=None) -> bytes:
    """One EDNS option of an OPT RDATA: OPTION-CODE, OPTION-LENGTH (the real
    one unless given), OPTION-DATA."""
    return struct.pack("!HH", code, len(data) if length is None else length) + data


def with_options(*options: bytes) -> bytes:
    """The GOOD message of malformed.py (example.com A 192.0.2.1) with an
    OPT record carrying these options."""
    return (header(qd=1, an=1, ar=1) + question() + rr(AT_QNAME, 1, bytes([192, 0, 2, 1]))
            + opt(rdata=b"".join(options)))
