"""``python -m shim dump``: what dnsshim-dump prints, through the Python API.

    python -m shim dump [-x] [--sections answer,authority,additional] [--json]
                        [--expect-id N --expect-name NAME [--expect-type T] [--expect-class C]
                         [--match-case] [--expect-cookie HEX16]] FILE...
    python -m shim dump --check

The output is the C tool's, byte for byte (the tests compare them), from
:func:`shim.parse_response`: no C, no cffi.  With ``--expect-*`` each
message must answer that query (``parse_response(wire, expect=Query(...))``,
dns_shim_process_reply in C), or is rejected with ERR_MISMATCH.

The command line is the C tool's too, word for word: its usage errors (one
line naming the error, then the usage), --help, and exit statuses (0; 1
when a message was rejected; 2 on a usage error or a FILE that cannot be
read, or with -x is no hex text).  The ``dnsshim-dump`` command runs this
module under that name where the package holds no C program.  --check is
the C program's (it starts the library's runtime): run when the package
holds it.

EDNS options are printed in the OPT PSEUDOSECTION as dig prints them
(``; EDE: 18 (Prohibited): (text)``, ``; COOKIE: <client><server>``,
``; CLIENT-SUBNET: 192.0.2.0/24/0``, ``; PAD: (N bytes)``, ``; NSID: <hex>
("text")``, ``; OPT=N: <hex> ("text")``).  dig adds `` (good)`` to COOKIE
after comparing it with the cookie it sent; these tools know the sent cookie
only from ``--expect-cookie``: then a response that is printed has echoed it
(else it is rejected) and gets `` (good)``; without it, no verdict is printed.
"""

import json
import os
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


class _Unreadable(Exception):
    """A FILE that gives no message: the line after "PATH: " (the C tool's
    read_message, tool_util.h, says the same)."""


_HEX_DIGITS = frozenset(b"0123456789abcdefABCDEF")


def _hex(data: bytes) -> bytes:
    """The octets hex text spells: hex digits, white space and "#" comments
    to the end of the line, as the C tool reads it."""
    out, half, comment = bytearray(), None, False
    for c in data:
        if comment:
            comment = c != 0x0A
        elif c == 0x23:
            comment = True
        elif c in _HEX_DIGITS:
            if half is None:
                half = int(chr(c), 16)
            else:
                out.append(half * 16 + int(chr(c), 16))
                half = None
        elif c not in b" \t\n\v\f\r":
            raise _Unreadable(f"not hex: '{chr(c)}'" if 0x21 <= c <= 0x7E
                              else f"not hex: octet 0x{c:02x}")
    if half is not None:
        raise _Unreadable("odd number of hex digits")
    return bytes(out)


def _read(path: str, hex_text: bool) -> bytes:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as e:
        raise _Unreadable(e.strerror or str(e)) from None
    return _hex(data) if hex_text else data


def _mnemonic(table: dict, prefix: str):
    """A parser of a type (or class): a number, a mnemonic of the table (any
    case), or the generic TYPEnnn (CLASSnnn) form, as the C tool reads it;
    None if the text is none of them."""
    def parse(text: str):
        upper = text.upper() if text.isascii() else text
        for number, name in table.items():
            if name == upper:
                return number
        digits = text[len(prefix):] if upper.startswith(prefix) else text
        if re.fullmatch(r"[0-9]+", digits) and int(digits) <= 0xFFFF:
            return int(digits)
        return None
    return parse


_rrtype = _mnemonic(TYPE_NAMES, "TYPE")
_rrclass = _mnemonic(CLASS_NAMES, "CLASS")


def _u16(text: str):
    """A 16-bit number, decimal or 0x hex, as the C tool reads it; None if not."""
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", text):
        value = int(text, 16)
    elif re.fullmatch(r"[0-9]+", text):
        value = int(text, 10)
    else:
        return None
    return value if value <= 0xFFFF else None


def _cookie(text: str):
    return bytes.fromhex(text) if re.fullmatch(r"[0-9a-fA-F]{16}", text) else None


def _sections(text: str):
    """--sections' list, as the C tool reads it: words separated by commas
    (empty ones ignored), at least one; the mask, or None."""
    mask = 0
    for word in text.split(","):
        if word and word not in SECTION_WORDS:
            return None
        mask |= SECTION_WORDS[word] if word else 0
    return mask or None


def usage_text(prog: str) -> str:
    """The usage, the C tool's (prog: the command's name)."""
    return (f"usage: {prog} [-x] [--sections answer,authority,additional] [--json]\n"
            "       [--expect-id N --expect-name NAME [--expect-type T] [--expect-class C]\n"
            "        [--match-case] [--expect-cookie HEX16]] FILE...\n"
            f"       {prog} --check\n"
            '       ("-" reads standard input)\n')


#: --help after the usage: the C tool's text.
HELP = """
Print DNS responses as libdnsshim parses them: dig-like text, or one JSON
object per message with --json.

  -x                  the files hold hex text (whitespace and # comments allowed)
  --sections LIST     which sections to print (default: all three)
  --json              one JSON object per message, per line
  --expect-id N       each message must answer the query with this ID...
  --expect-name NAME  ...and this name (both required with any --expect-*)
  --expect-type T     its type: a number, a mnemonic or TYPEnnn (default A)
  --expect-class C    its class (default IN)
  --match-case        compare the name octet for octet (DNS 0x20)
  --expect-cookie HEX the 8-octet client cookie sent, as 16 hex digits
  --check             start the runtime, say what it runs on, whether
                      parallelism is available, and parse a sample
  --help              this text

A rejected message's reason is on stdout, and on stderr unless stderr is
where stdout goes (a terminal, 2>&1).

Exit status: 0 when every message parsed; 1 when a message was rejected, or
--check found that the runtime does not work; 2 on a usage error or a FILE
that cannot be read (or, with -x, is no hex text), whatever the other files
gave.
"""


class _UsageError(Exception):
    """What is wrong with the command line, in the C tool's words."""


#: The options that take a value (the next argument).
_TAKES = ("--expect-id", "--expect-name", "--expect-type", "--expect-class", "--expect-cookie",
          "--sections")


def _options(argv: list) -> tuple:
    """(the options, the FILEs) of a command line, as the C tool reads it:
    options before the first FILE ("-" is a FILE), each error named.

    :raises _UsageError: with the C tool's line."""
    opts = {"hex": False, "json": False, "sections": _sections("answer,authority,additional"),
            "id": None,
            "name": None, "type": 1, "class": 1, "match_case": False, "cookie": None}
    expecting = None  # the first --expect-* option (or --match-case)
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        option = argv[i]
        takes = option in _TAKES
        if takes and i + 1 >= len(argv):
            raise _UsageError(f"{option} needs a value")
        arg = argv[i + 1] if takes else None
        i += 2 if takes else 1
        if (option.startswith("--expect-") or option == "--match-case") and expecting is None:
            expecting = option
        if option == "-x":
            opts["hex"] = True
        elif option == "--json":
            opts["json"] = True
        elif option == "--expect-id":
            opts["id"] = _u16(arg)
            if opts["id"] is None:
                raise _UsageError(f"--expect-id: '{arg}' is not a number from 0 to 65535 "
                                  "(decimal or 0x hex)")
        elif option == "--expect-name":
            opts["name"] = arg
        elif option == "--expect-type":
            opts["type"] = _rrtype(arg)
            if opts["type"] is None:
                raise _UsageError(f"--expect-type: '{arg}' is not a type (a number, a mnemonic "
                                  "or TYPEnnn)")
        elif option == "--expect-class":
            opts["class"] = _rrclass(arg)
            if opts["class"] is None:
                raise _UsageError(f"--expect-class: '{arg}' is not a class (a number, a "
                                  "mnemonic or CLASSnnn)")
        elif option == "--match-case":
            opts["match_case"] = True
        elif option == "--expect-cookie":
            opts["cookie"] = _cookie(arg)
            if opts["cookie"] is None:
                raise _UsageError(f"--expect-cookie: '{arg}' is not 16 hex digits")
        elif option == "--sections" or option.startswith("--sections="):
            words = arg if takes else option[len("--sections="):]
            opts["sections"] = _sections(words)
            if opts["sections"] is None:
                raise _UsageError(f"--sections: '{words}' is not a list of answer, authority "
                                  "and additional")
        elif option in ("--help", "--check"):
            raise _UsageError(f"{option} goes alone")
        else:
            raise _UsageError(f"unknown option '{option}'")
    if expecting is not None and (opts["id"] is None or opts["name"] is None):
        missing = ("--expect-name" if opts["id"] is not None else "--expect-id"
                   if opts["name"] is not None else "--expect-id and --expect-name")
        raise _UsageError(f"{expecting} needs {missing}")
    if i >= len(argv):
        raise _UsageError("no FILE given")
    opts["query"] = None if expecting is None else Query(
        opts["id"], opts["name"], opts["type"], opts["class"], opts["match_case"], opts["cookie"])
    return opts, argv[i:]


def _stderr_is_stdout() -> bool:
    """Whether stderr goes where stdout goes (the same terminal, file or
    pipe: 2>&1): a rejection's reason, already in stdout, is then not
    repeated on stderr."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def check() -> int:
    """--check: the C program's (it starts the library's runtime, which this
    form does not use), run when the package holds it; its exit status."""
    import subprocess
    from pathlib import Path

    program = Path(__file__).resolve().parent / "bin" / "dnsshim-dump"
    if not program.is_file():
        print(f"check: {program} is missing: this installation is incomplete; reinstall it")
        return 1
    sys.stdout.flush()
    return subprocess.run([str(program), "--check"]).returncode


def main(argv=None, prog: str = "python -m shim dump") -> int:
    """The dump: the C tool's output, usage errors and exit statuses (0; 1,
    a message rejected; 2, a usage error or a FILE that cannot be read).
    prog: the name its usage shows (dnsshim-dump where it stands in for the
    C program)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--help"]:
        sys.stdout.write(usage_text(prog) + HELP)
        return 0
    if argv == ["--check"]:
        return check()
    try:
        opts, files = _options(argv)
    except _UsageError as e:
        sys.stderr.write(f"{prog}: {e}\n" + usage_text(prog))
        return 2
    status = 0
    once = _stderr_is_stdout()
    out = sys.stdout
    for path in files:
        try:
            wire = _read(path, opts["hex"])
        except _Unreadable as e:  # a file, not a message
            print(f"{path}: {e}", file=sys.stderr)
            status = 2
            continue
        try:
            response, rc, reason = parse_response(wire, expect=opts["query"]), 0, ""
        except DnsShimError as e:
            response, rc, reason = None, int(e.status), e.reason
        if opts["json"]:
            out.write(as_json(path, response, rc, opts["sections"], reason))
        else:
            out.write(f";; {path}, {len(wire)} byte{'' if len(wire) == 1 else 's'}\n")
            if response is not None:
                out.write(text(response, opts["sections"], opts["cookie"] is not None))
            else:
                out.write(f";; rejected: {rejection(rc, reason)}\n")
            out.write("\n")
        if rc:
            if not once:
                print(f"{path}: {rejection(rc, reason)}", file=sys.stderr)
            status = status or 1
    out.flush()
    return status
