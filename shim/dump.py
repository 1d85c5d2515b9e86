"""``python -m shim dump``: what dnsshim-dump prints, through the Python API.

    python -m shim dump [-x] [--sections answer,authority,additional] [--json]
                        [--expect-id N --expect-name NAME [--expect-type T] [--expect-class C]
                         [--match-case] [--expect-cookie HEX16]] FILE...

The output is the C tool's, byte for byte (the tests compare them), from
:func:`shim.parse_response`: no C, no cffi.  With ``--expect-*`` each
message must answer that query (``parse_response(wire, expect=Query(...))``,
dns_shim_process_reply in C), or is rejected with ERR_MISMATCH.

EDNS options are printed in the OPT PSEUDOSECTION as dig prints them
(``; EDE: 18 (Prohibited): (text)``, ``; COOKIE: <client><server>``,
``; CLIENT-SUBNET: 192.0.2.0/24/0``, ``; PAD: (N bytes)``, ``; NSID: <hex>
("text")``, ``; OPT=N: <hex> ("text")``).  dig adds `` (good)`` to COOKIE
after comparing it with the cookie it sent; these tools know the sent cookie
only from ``--expect-cookie``: then a response that is printed has echoed it
(else it is rejected) and gets `` (good)``; without it, no verdict is printed.
"""

import argparse
import json
import re
import sys
from ipaddress import IPv4Address, IPv6Address

from shim.api import Query, Raw, parse_response
from shim.decode import Section
from shim.kinds import BY_TYPE
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
SECTION_WORDS = {"answer": Section.ANSWER, "authority": Section.AUTHORITY,
                 "additional": Section.ADDITIONAL}
#: RFC 8914's INFO-CODEs (the IANA registry), as dig names them.
EDE_NAMES = ["Other", "Unsupported DNSKEY Algorithm", "Unsupported DS Digest Type",
             "Stale Answer", "Forged Answer", "DNSSEC Indeterminate", "DNSSEC Bogus",
             "Signature Expired", "Signature Not Yet Valid", "DNSKEY Missing", "RRSIGs Missing",
             "No Zone Key Bit Set", "NSEC Missing", "Cached Error", "Not Ready", "Blocked",
             "Censored", "Filtered", "Prohibited", "Stale NXDOMAIN Answer", "Not Authoritative",
             "Not Supported", "No Reachable Authority", "Network Error", "Invalid Data",
             "Signature Expired before Valid", "Too Early", "Unsupported NSEC3 Iterations Value",
             "Unable to conform to policy", "Synthesized", "Invalid Query Type"]


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


def _ipv6(packed: bytes) -> str:
    """RFC 5952 text as inet_ntop writes it (glibc, and BIND's, so dig's):
    the longest run of two or more zero fields compressed, the first of equal
    runs; an IPv4-mapped address (::ffff:0:0/96), or an IPv4-compatible one
    (::/96 with a non-zero seventh field: ::1 stays ::1), with its last 32
    bits dotted."""
    address = IPv6Address(packed)
    if address.ipv4_mapped is not None:
        return f"::ffff:{address.ipv4_mapped}"
    if packed[:12] == bytes(12) and packed[12:14] != b"\0\0":
        return f"::{IPv4Address(packed[12:])}"
    return address.compressed


def _ecs_address(o) -> str:
    if o.ecs_family == 1:
        return ".".join(str(b) for b in o.ecs_address.ljust(4, b"\0"))
    return _ipv6(o.ecs_address.ljust(16, b"\0"))


def _printable(data: bytes) -> str:
    return "".join(chr(c) if 0x20 <= c <= 0x7E else "." for c in data)


def _escaped(data: bytes) -> str:
    """Bytes as _string escapes them, unquoted."""
    return _string(data)[1:-1]


def option_text(o, cookie_checked: bool) -> str:
    """One option of the OPT PSEUDOSECTION, as dig prints it."""
    if o.code == 15:
        name = EDE_NAMES[o.ede_info_code] if o.ede_info_code < len(EDE_NAMES) else None
        return (f"; EDE: {o.ede_info_code}" + (f" ({name})" if name else "")
                + (f": ({_escaped(o.ede_text)})" if o.ede_text else ""))
    if o.code == 10:
        return (f"; COOKIE: {o.cookie_client.hex()}{o.cookie_server.hex()}"
                + (" (good)" if cookie_checked else ""))
    if o.code == 8:
        return f"; CLIENT-SUBNET: {_ecs_address(o)}/{o.ecs_source_prefix}/{o.ecs_scope_prefix}"
    if o.code == 12:
        return f"; PAD: ({len(o.data)} bytes)"
    label = "NSID" if o.code == 3 else f"OPT={o.code}"
    return f"; {label}" + (f": {o.data.hex()} (\"{_printable(o.data)}\")" if o.data else "")


def _option_json(o) -> dict:
    out = {"code": o.code, "data": o.data.hex()}
    if o.code == 15:
        out.update(kind="ede", info_code=o.ede_info_code, text=o.ede_text.decode("utf-8"))
    elif o.code == 10:
        out.update(kind="cookie", client=o.cookie_client.hex(), server=o.cookie_server.hex())
    elif o.code == 8:
        out.update(kind="ecs", family=o.ecs_family, source_prefix=o.ecs_source_prefix,
                   scope_prefix=o.ecs_scope_prefix, address=_ecs_address(o))
    else:
        out.update(kind="other")
    return out


def _bytes_text(data: bytes) -> str:
    return data.decode("latin-1")  # one code point per byte, as the C tool escapes it


#: A field's dig-like text and its JSON value, by style (shim.kinds.STYLES).
_FIELD_TEXT = {
    "ipv4": str,
    "ipv6": lambda address: _ipv6(address.packed),
    "name": _fqdn,
    "u16": str,
    "u32": str,
    "bytes": _string,
    "strings": lambda strings: " ".join(_string(s) for s in strings),
}
_FIELD_JSON = {
    "ipv4": str,
    "ipv6": lambda address: _ipv6(address.packed),
    "name": str,
    "u16": int,
    "u32": int,
    "bytes": _bytes_text,
    "strings": lambda strings: [_bytes_text(s) for s in strings],
}


def _rdata_text(rec) -> str:
    if isinstance(rec, Raw):
        return f"\\# {len(rec.rdata)}" + (f" {rec.rdata.hex()}" if rec.rdata else "")
    return " ".join(_FIELD_TEXT[f.style](getattr(rec, f.name)) for f in BY_TYPE[rec.type].fields)


def text(response, sections, cookie_checked=False) -> str:
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
        lines += [option_text(o, cookie_checked) for o in response.options]
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
    if isinstance(rec, Raw):
        out.update(kind="other", rdata=rec.rdata.hex())
        return out
    kind = BY_TYPE[rec.type]
    out["kind"] = kind.json_kind
    out.update((f.name, _FIELD_JSON[f.style](getattr(rec, f.name))) for f in kind.fields)
    return out


def rejection(status, reason) -> str:
    """How the dump tools say a message was rejected: the status's text and
    code, then what was wrong and where."""
    return f"{strerror(status)} ({status})" + (f": {reason}" if reason else "")


def as_json(name, response, status, sections, reason="") -> str:
    obj = {"file": name, "header": None, "options": [], "records": []}
    if response is not None:
        h = response.header
        obj["header"] = {k: getattr(h, k) for k in (
            "id", "flags", "opcode", "rcode", "qdcount", "ancount", "nscount", "arcount",
            "qname", "qtype", "qclass", "edns_version", "edns_payload", "edns_do", "edns_flags")}
        obj["options"] = [_option_json(o) for o in response.options]
        obj["records"] = [_record_json(r) for r in response.records if r.section & sections]
    obj["status"] = int(status)
    obj["error"] = strerror(status) if status else None
    obj["detail"] = reason if status else None
    return json.dumps(obj) + "\n"


def _read(path: str, hex_text: bool) -> bytes:
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    if hex_text:
        text_ = re.sub(rb"#[^\n]*", b"", data)
        data = bytes.fromhex(re.sub(rb"\s+", b"", text_).decode("ascii"))
    return data


def _mnemonic(table: dict, prefix: str):
    """A parser of a type (or class): a number, a mnemonic of the table, or
    the generic TYPEnnn (CLASSnnn) form, as the C tool reads it."""
    def parse(text: str) -> int:
        for number, name in table.items():
            if name == text.upper():
                return number
        digits = text[len(prefix):] if text.upper().startswith(prefix) else text
        if digits.isdigit() and int(digits) <= 0xFFFF:
            return int(digits)
        raise ValueError(text)
    return parse


_rrtype = _mnemonic(TYPE_NAMES, "TYPE")
_rrclass = _mnemonic(CLASS_NAMES, "CLASS")


def _u16(text: str) -> int:
    """A 16-bit number, decimal or 0x hex, as the C tool reads it."""
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
        value = int(text, 16)
    elif re.fullmatch(r"[0-9]+", text):
        value = int(text, 10)
    else:
        raise ValueError(text)
    if value > 0xFFFF:
        raise ValueError(text)
    return value


def _cookie(text: str) -> bytes:
    if not re.fullmatch(r"[0-9a-fA-F]{16}", text):
        raise ValueError(text)
    return bytes.fromhex(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shim dump", description=__doc__.splitlines()[0])
    parser.add_argument("-x", dest="hex", action="store_true", help="the files hold hex text")
    parser.add_argument("--sections", default="answer,authority,additional")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--expect-id", type=_u16, help="the query's ID (with --expect-name)")
    parser.add_argument("--expect-name", help="the query's name (with --expect-id)")
    parser.add_argument("--expect-type", type=_rrtype, help="the query's type (default A)")
    parser.add_argument("--expect-class", type=_rrclass, help="the query's class (default IN)")
    parser.add_argument("--match-case", action="store_true", help="compare the name's case too")
    parser.add_argument("--expect-cookie", type=_cookie, help="the client cookie sent (16 hex)")
    parser.add_argument("files", nargs="+", metavar="FILE")
    args = parser.parse_args(argv)
    try:
        sections = 0
        for word in args.sections.split(","):
            sections |= SECTION_WORDS[word]
    except KeyError:
        parser.error(f"--sections: {args.sections!r}")
    query = None
    if args.match_case or any(v is not None for v in (
            args.expect_id, args.expect_name, args.expect_type, args.expect_class,
            args.expect_cookie)):
        if args.expect_id is None or args.expect_name is None:
            parser.error("--expect-id and --expect-name are required with any --expect- option")
        query = Query(args.expect_id, args.expect_name,
                      1 if args.expect_type is None else args.expect_type,
                      1 if args.expect_class is None else args.expect_class,
                      args.match_case, args.expect_cookie)
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
            response, status, reason = parse_response(wire, expect=query), 0, ""
        except DnsShimError as e:
            response, status, reason = None, int(e.status), e.reason
        if args.json:
            out.write(as_json(path, response, status, sections, reason))
        else:
            out.write(f";; {path}, {len(wire)} bytes\n")
            if response is not None:
                out.write(text(response, sections, args.expect_cookie is not None))
            else:
                out.write(f";; rejected: {rejection(status, reason)}\n")
            out.write("\n")
        if status:
            print(f"{path}: {rejection(status, reason)}", file=sys.stderr)
            failed = 1
    out.flush()
    return failed
