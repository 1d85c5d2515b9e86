"""Well-formed responses, written in dnspython's text form and turned into
wire bytes by dnspython's own builder (``dns.message.from_text`` then
``to_wire``): each test message is readable here and exact on the wire.

Together they reach every typed callback and on_other in every section,
EDNS (version, payload, DO, an extended rcode), NXDOMAIN, a message without
a question, TC with every record present, escaped and upper-case names, TXT
with several strings and NUL bytes, NAPTR with an empty regexp, duplicates,
a class other than IN, and TTLs with the top bit set.
"""

import dns.edns
import dns.message
import dns.rcode
import dns.rrset

from shim.sample import ims_wire

_EVERY_TYPE = """\
{o}a.example. 300 IN A 192.0.2.1
{o}aaaa.example. 301 IN AAAA 2001:db8::1
{o}cname.example. 302 IN CNAME target.example.
{o}ns.example. 303 IN NS ns1.example.
{o}ptr.example. 304 IN PTR host.example.
{o}dname.example. 305 IN DNAME other.example.
{o}mx.example. 306 IN MX 10 mail.example.
{o}txt.example. 307 IN TXT "v=spf1 -all"
{o}srv.example. 308 IN SRV 1 2 5060 sip.example.
{o}naptr.example. 309 IN NAPTR 100 10 "u" "E2U+sip" "!^.*$!sip:info@example.com!" .
{o}soa.example. 310 IN SOA ns1.example. hostmaster.example. 2024010101 7200 3600 1209600 300
{o}caa.example. 311 IN CAA 0 issue "ca.example.net"
{o}uri.example. 312 IN URI 10 1 "https://example.com/"
"""

TEXT = {
    # Every type in every section, then EDNS with the DO bit.
    "every_type": f"""\
id 4660
opcode QUERY
rcode NOERROR
flags QR AA RD RA
edns 0
payload 4096
eflags DO
;QUESTION
example. IN ANY
;ANSWER
{_EVERY_TYPE.format(o="an-").rstrip()}
;AUTHORITY
{_EVERY_TYPE.format(o="ns-").rstrip()}
;ADDITIONAL
{_EVERY_TYPE.format(o="ar-").rstrip()}
""",
    # Extended rcode: BADVERS is 16, the OPT's upper 8 bits hold 1.
    "badvers": """\
id 1
opcode QUERY
rcode BADVERS
flags QR
edns 1
payload 512
;QUESTION
example.com. IN A
;ANSWER
;AUTHORITY
;ADDITIONAL
""",
    "nxdomain": """\
id 2
opcode QUERY
rcode NXDOMAIN
flags QR AA RD RA
;QUESTION
nope.example.com. IN AAAA
;ANSWER
;AUTHORITY
example.com. 900 IN SOA ns1.example.com. dns-admin.example.com. 1 900 900 1800 60
;ADDITIONAL
""",
    "no_question": """\
id 3
opcode QUERY
rcode NOERROR
flags QR
;QUESTION
;ANSWER
example.com. 60 IN A 192.0.2.7
;AUTHORITY
;ADDITIONAL
""",
    # TC set, but every record the counts announce is there: a good message.
    "tc_complete": """\
id 4
opcode QUERY
rcode NOERROR
flags QR TC RD RA
;QUESTION
example.com. IN A
;ANSWER
example.com. 60 IN A 192.0.2.8
;AUTHORITY
;ADDITIONAL
""",
    # Names with escaped bytes and upper case; TXT with NULs and an empty
    # string; a CH-class TXT (not IN: goes to on_other).
    "odd_names": r"""
id 5
opcode QUERY
rcode NOERROR
flags QR RD RA
;QUESTION
Foo\.Bar.EXAMPLE.com. IN A
;ANSWER
Foo\.Bar.EXAMPLE.com. 300 IN A 192.0.2.1
a\032b\000c.example. 300 IN TXT "a" "b\000c" ""
version.bind. 0 CH TXT "9.18"
x\"y\\z.example. 300 IN CNAME UPPER.Case.
;AUTHORITY
;ADDITIONAL
""",
}


def message(name: str) -> dns.message.Message:
    return dns.message.from_text(TEXT[name].strip() + "\n")


def duplicates() -> dns.message.Message:
    """The same A record three times, each in its own RRset (the text form
    would merge them), with TTLs 2^32-1 and 2^31 (top bit set: read as 0)
    and 2^31-1 (kept)."""
    m = dns.message.from_text(TEXT["no_question"].strip() + "\n")
    m.answer = []
    for ttl in (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF):
        rrset = dns.rrset.from_text("dup.example.", 0, "IN", "A", "192.0.2.9")
        rrset.ttl = ttl
        m.answer.append(rrset)
    return m


#: The client and server cookies of the EDNS vectors (RFC 7873: 8, and 8 to 32 octets).
CLIENT_COOKIE = bytes.fromhex("24a1b2c3d4e5f607")
SERVER_COOKIE = bytes.fromhex("0100000069e1a2b35f3c9d8e7a6b5c4d")


def edns_query():
    """The query the EDNS vectors answer: www.example.com A, ID 0x5c5c, with
    a client cookie and a client subnet (dnspython's builder)."""
    q = dns.message.make_query("www.example.com", "A", use_edns=0, options=[
        dns.edns.CookieOption(CLIENT_COOKIE, b""), dns.edns.ECSOption("198.51.100.0", 24)])
    q.id = 0x5C5C
    return q


def edns_options() -> dns.message.Message:
    """An answer with every option the library decodes, in this order: COOKIE
    (echoed client, server part), ECS for IPv4 (scope 24) and IPv6 (a /56,
    scope 48), EDE 3 Stale Answer with EXTRA-TEXT, padding, an unknown code."""
    r = dns.message.make_response(edns_query())
    r.answer.append(dns.rrset.from_text("www.example.com.", 300, "IN", "A", "192.0.2.80"))
    r.use_edns(0, payload=1232, options=[
        dns.edns.CookieOption(CLIENT_COOKIE, SERVER_COOKIE),
        dns.edns.ECSOption("198.51.100.0", 24, 24),
        dns.edns.ECSOption("2001:db8:aa00::", 56, 48),
        dns.edns.EDEOption(dns.edns.EDECode.STALE_ANSWER, "served stale: upstream timed out"),
        dns.edns.GenericOption(dns.edns.OptionType.PADDING, bytes(11)),
        dns.edns.GenericOption(65001, b"\x01private"),
    ])
    return r


def ede_blocked() -> dns.message.Message:
    """A filtering resolver's NXDOMAIN: EDE 15 Blocked with UTF-8 text, the
    SOA in the authority section."""
    q = dns.message.make_query("ads.example.net", "AAAA", use_edns=0)
    q.id = 0x0F0F
    r = dns.message.make_response(q)
    r.set_rcode(dns.rcode.NXDOMAIN)
    r.authority.append(dns.rrset.from_text(
        "example.net.", 60, "IN", "SOA", "ns.example.net. hostmaster.example.net. 1 2 3 4 5"))
    r.use_edns(0, options=[dns.edns.EDEOption(dns.edns.EDECode.BLOCKED, "bloqué par la politique")])
    return r


BUILT = {"ims": ims_wire, "duplicates": lambda: duplicates().to_wire(),
         "edns_options": lambda: edns_options().to_wire(),
         "ede_blocked": lambda: ede_blocked().to_wire()}


def wire(name: str) -> bytes:
    if name in BUILT:
        return BUILT[name]()
    return message(name).to_wire()


NAMES = sorted(TEXT) + sorted(BUILT)
