"""``python -m shim dump``: what dnsshim-dump prints, through the Python API.

    python -m shim dump [-x] [--sections answer,authority,additional] [--json] FILE...

The output is the C tool's, byte for byte (the tests compare them), from
:func:`shim.parse_response`: no C, no cffi.
"""

import argparse
import json
import re
import sys
from ipaddress import IPv4Address, IPv6Address

from shim.api import AAAA, MX, NAPTR, SOA, SRV, TXT, A, Raw, Target, parse_response
from shim.decode import Section
from shim.status import DnsShimError, strerror

TYPE_NAMES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 13: "HINFO", 15: "MX", 16: "TXT",
              28: "AAAA", 29: "LOC", 33: "SRV", 35: "NAPTR", 39: "DNAME", 41: "OPT", 43: "DS",
              46: "RRSIG", 47: "NSEC", 48: "DNSKEY", 50: "NSEC3", 52: "TLSA", 64: "SVCB",
              65: "HTTPS", 99: "SPF", 249: "TKEY", 250: "TSIG", 255: "ANY", 256: "URI",
              257: "CAA"}
CLASS_NAMES = {1: "IN", 3: "CH", 4: "HS", 254: "NONE", 255: "ANY"}
RCODE_NAMES = ["NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN",
               "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE"]
OPCODES = ["QUERY", "IQUERY", "STATUS", "OPCODE3", "NOTIFY", "UPDATE"]
FLAGS = [(0x8000, "qr"), (0x0400, "aa"), (0x0200, "tc"), (0x0100, "rd"), (0x0080, "ra"),
         (0x0020, "ad"), (0x0010, "cd")]
TARGET_KINDS = {5: "cname", 2: "ns", 12: "ptr", 39: "dname"}
SECTION_WORDS = {"answer": Section.ANSWER, "authority": Section.AUTHORITY,
                 "additional": Section.ADDITIONAL}


def _type(t):
    return TYPE_NAMES.get(t, f"TYPE{t}")


def _class(c):
    return CLASS_NAMES.get(c, f"CLASS{c}")


def _rcode(r):
    if r < len(RCODE_NAMES):
        return RCODE_NAMES[r]
    return {16: "BADVERS", 23: "BADCOOKIE"}.get(r, "RCODE?")


def _fqdn(name):
    return name if name == "." else name + "."


def _string(data: bytes) -> str:
    out = []
    for c in data:
        if c in (0x22, 0x5C):
            out.append("\\" + chr(c))
        elif c < 0x20 or c > 0x7E:
            out.append(f"\\{c:03d}")
        else:
            out.append(chr(c))
    return '"' + "".join(out) + '"'


def _ipv6(address: IPv6Address) -> str:
    """RFC 5952 text as inet_ntop writes it (glibc, and BIND's, so dig's):
    the longest run of two or more zero fields compressed, the first of equal
    runs; an IPv4-mapped address (::ffff:0:0/96), or an IPv4-compatible one
    (::/96 with a non-zero seventh field: ::1 stays ::1), with its last 32
    bits dotted."""
    packed = address.packed
    if address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    if packed[:12] == bytes(12) and packed[12:14] != b"\0\0":
        return f"::{IPv4Address(packed[12:])}"
    return address.compressed


def _bytes_text(data: bytes) -> str:
    return data.decode("latin-1")  # one code point per byte, as the C tool escapes it


def _rdata_text(rec) -> str:
    if isinstance(rec, A):
        return str(rec.address)
    if isinstance(rec, AAAA):
        return _ipv6(rec.address)
    if isinstance(rec, Target):
        return _fqdn(rec.target)
    if isinstance(rec, MX):
        return f"{rec.preference} {_fqdn(rec.exchange)}"
    if isinstance(rec, TXT):
        return " ".join(_string(s) for s in rec.strings)
    if isinstance(rec, SRV):
        return f"{rec.priority} {rec.weight} {rec.port} {_fqdn(rec.target)}"
    if isinstance(rec, NAPTR):
        return (f"{rec.order} {rec.preference} {_string(rec.flags)} {_string(rec.services)} "
                f"{_string(rec.regexp)} {_fqdn(rec.replacement)}")
    if isinstance(rec, SOA):
        return (f"{_fqdn(rec.mname)} {_fqdn(rec.rname)} {rec.serial} {rec.refresh} {rec.retry} "
                f"{rec.expire} {rec.minimum}")
    return f"\\# {len(rec.rdata)}" + (f" {rec.rdata.hex()}" if rec.rdata else "")


def text(response, sections) -> str:
    h = response.header
    lines = [f";; ->>HEADER<<- opcode: {OPCODES[h.opcode] if h.opcode < 6 else 'OPCODE?'}, "
             f"status: {_rcode(h.rcode)}, id: {h.id}",
             ";; flags:" + "".join(f" {name}" for bit, name in FLAGS if h.flags & bit)
             + f"; QUERY: {h.qdcount}, ANSWER: {h.ancount}, AUTHORITY: {h.nscount}, "
             f"ADDITIONAL: {h.arcount}"]
    if h.edns_version >= 0:
        lines += ["", ";; OPT PSEUDOSECTION:",
                  f"; EDNS: version: {h.edns_version}, flags:{' do' if h.edns_do else ''}; "
                  f"udp: {h.edns_payload}"]
    if h.qname is not None:
        lines += ["", ";; QUESTION SECTION:",
                  f";{_fqdn(h.qname)}\t\t{_class(h.qclass)}\t{_type(h.qtype)}"]
    current = None
    for rec in response.records:
        if not rec.section & sections:
            continue
        if rec.section != current:
            current = rec.section
            lines += ["", f";; {current.name} SECTION:"]
        lines.append(f"{_fqdn(rec.owner)}\t{rec.ttl}\t{_class(rec.rclass)}\t{_type(rec.type)}\t"
                     + _rdata_text(rec))
    return "\n".join(lines) + "\n"


def _record_json(rec) -> dict:
    out = {"section": rec.section.name.lower(), "index": rec.index, "owner": rec.owner,
           "type": rec.type, "class": rec.rclass, "ttl": rec.ttl}
    if isinstance(rec, A):
        out.update(kind="a", address=_rdata_text(rec))
    elif isinstance(rec, AAAA):
        out.update(kind="aaaa", address=_rdata_text(rec))
    elif isinstance(rec, Target):
        out.update(kind=TARGET_KINDS[rec.type], target=rec.target)
    elif isinstance(rec, MX):
        out.update(kind="mx", preference=rec.preference, exchange=rec.exchange)
    elif isinstance(rec, TXT):
        out.update(kind="txt", strings=[_bytes_text(s) for s in rec.strings])
    elif isinstance(rec, SRV):
        out.update(kind="srv", priority=rec.priority, weight=rec.weight, port=rec.port,
                   target=rec.target)
    elif isinstance(rec, NAPTR):
        out.update(kind="naptr", order=rec.order, preference=rec.preference,
                   flags=_bytes_text(rec.flags), services=_bytes_text(rec.services),
                   regexp=_bytes_text(rec.regexp), replacement=rec.replacement)
    elif isinstance(rec, SOA):
        out.update(kind="soa", mname=rec.mname, rname=rec.rname, serial=rec.serial,
                   refresh=rec.refresh, retry=rec.retry, expire=rec.expire, minimum=rec.minimum)
    else:
        assert isinstance(rec, Raw)
        out.update(kind="other", rdata=rec.rdata.hex())
    return out


def as_json(name, response, status, sections) -> str:
    obj = {"file": name, "header": None, "records": []}
    if response is not None:
        h = response.header
        obj["header"] = {k: getattr(h, k) for k in (
            "id", "flags", "opcode", "rcode", "qdcount", "ancount", "nscount", "arcount",
            "qname", "qtype", "qclass", "edns_version", "edns_payload", "edns_do", "edns_flags")}
        obj["records"] = [_record_json(r) for r in response.records if r.section & sections]
    obj["status"] = int(status)
    obj["error"] = strerror(status) if status else None
    return json.dumps(obj) + "\n"


def _read(path: str, hex_text: bool) -> bytes:
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    if hex_text:
        text_ = re.sub(rb"#[^\n]*", b"", data)
        data = bytes.fromhex(re.sub(rb"\s+", b"", text_).decode("ascii"))
    return data


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shim dump", description=__doc__.splitlines()[0])
    parser.add_argument("-x", dest="hex", action="store_true", help="the files hold hex text")
    parser.add_argument("--sections", default="answer,authority,additional")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        sections = 0
        for word in args.sections.split(","):
            sections |= SECTION_WORDS[word]
    except KeyError:
        parser.error(f"--sections: {args.sections!r}")
    failed = 0
    out = sys.stdout
    for path in args.files:
        try:
            wire = _read(path, args.hex)
        except (OSError, ValueError) as e:
            print(f"{path}: {e}", file=sys.stderr)
            failed = 1
            continue
        try:
            response, status = parse_response(wire), 0
        except DnsShimError as e:
            response, status = None, int(e.status)
        if args.json:
            out.write(as_json(path, response, status, sections))
        else:
            out.write(f";; {path}, {len(wire)} bytes\n")
            if response is not None:
                out.write(text(response, sections))
            else:
                out.write(f";; rejected: {strerror(status)} ({status})\n")
            out.write("\n")
        if status:
            print(f"{path}: {strerror(status)} ({status})", file=sys.stderr)
            failed = 1
    out.flush()
    return failed
