"""Responses checked against their query (dns_shim_process_reply), one per
kind of mismatch, each with its exact status, beside the ones that match.

The query is :func:`vectors.edns_query` (www.example.com A, ID 0x5c5c, a
client cookie); ``QUERY`` is what the caller passes for it.  Each case is
(response wire, changes to ``QUERY``, status).  Responses are built with
dnspython's builders from that query, or field group by field group
(:mod:`wire`) where no builder makes them (two questions).
"""

import dns.edns
import dns.message
import dns.name
import dns.rcode
import dns.rrset

import vectors
from shim.status import Status
from wire import header, name, opt, option, question

S = Status
CLIENT = vectors.CLIENT_COOKIE
SERVER = vectors.SERVER_COOKIE

#: The dns_shim_query / shim.Query fields of the query sent.
QUERY = {"id": 0x5C5C, "qname": "www.example.com", "qtype": 1, "qclass": 1, "match_case": False,
         "cookie_client": CLIENT}


def answer(query=None, cookies=((CLIENT, SERVER),), rcode=None, question_too=True):
    """A response to `query` (default: vectors.edns_query()) with one A
    record (none with an rcode) and these COOKIE options."""
    q = query or vectors.edns_query()
    r = dns.message.make_response(q)
    if rcode is not None:
        r.set_rcode(rcode)
    else:
        r.answer.append(dns.rrset.from_text(q.question[0].name, 300, "IN", "A", "192.0.2.80"))
    if not question_too:
        r.question = []
    r.use_edns(0, options=[dns.edns.CookieOption(c, s) for c, s in cookies])
    return r.to_wire()


def _renamed(text):
    q = vectors.edns_query()
    q.question[0].name = dns.name.from_text(text)
    return q


def _retyped(rdtype=1, rdclass=1):
    q = dns.message.make_query("www.example.com", rdtype, rdclass, use_edns=0,
                               options=[dns.edns.CookieOption(CLIENT, b"")])
    q.id = 0x5C5C
    return q


GOOD = answer()
WWW = name("www", "example", "com")
# Two questions, the first the query's (dnspython's builder keeps one).
TWO_QUESTIONS = header(id=0x5C5C, qd=2) + question(WWW) + question(WWW, qtype=28)
# The query's question and a COOKIE option whose client part is 7 octets.
BAD_COOKIE = header(id=0x5C5C, qd=1, ar=1) + question(WWW) + opt(rdata=option(10, bytes(7)))

CASES = {
    # ---- matches ------------------------------------------------------------
    "match": (GOOD, {}, S.OK),
    "match_final_dot": (GOOD, {"qname": "www.example.com."}, S.OK),
    # Without DNS_SHIM_MATCH_CASE, names compare as DNS compares them.
    "match_other_case_without_0x20": (GOOD, {"qname": "WWW.Example.COM"}, S.OK),
    # A query sent with 0x20 case: the response keeps its case, octet for octet.
    "match_case_0x20": (answer(_renamed("wWw.ExAmple.cOm")),
                        {"qname": "wWw.ExAmple.cOm", "match_case": True}, S.OK),
    "match_no_cookie_asked": (GOOD, {"cookie_client": None}, S.OK),
    "match_cookie_without_server_part": (answer(cookies=((CLIENT, b""),)), {}, S.OK),

    # ---- mismatches, in the order they are checked ---------------------------
    "id_differs": (GOOD, {"id": 0x5C5D}, S.ERR_MISMATCH),
    "name_differs": (GOOD, {"qname": "www.example.org"}, S.ERR_MISMATCH),
    "name_is_a_subdomain": (GOOD, {"qname": "a.www.example.com"}, S.ERR_MISMATCH),
    "name_case_differs_with_0x20": (answer(_renamed("www.example.com")),
                                    {"qname": "wWw.ExAmple.cOm", "match_case": True},
                                    S.ERR_MISMATCH),
    "type_differs": (answer(_retyped(rdtype=28)), {}, S.ERR_MISMATCH),
    "class_differs": (answer(_retyped(rdclass=3)), {}, S.ERR_MISMATCH),
    # Some servers answer FORMERR (or NOTIMP) without the question.
    "no_question": (answer(rcode=dns.rcode.FORMERR, question_too=False), {}, S.ERR_MISMATCH),
    "two_questions": (TWO_QUESTIONS, {"cookie_client": None}, S.ERR_MISMATCH),
    "cookie_absent": (answer(cookies=()), {}, S.ERR_MISMATCH),
    "cookie_other_client": (answer(cookies=((bytes(8), SERVER),)), {}, S.ERR_MISMATCH),
    "cookie_twice": (answer(cookies=((CLIENT, SERVER), (CLIENT, SERVER))), {}, S.ERR_MISMATCH),

    # ---- the order of the checks ------------------------------------------------
    # A malformed response with the query's ID gets its malformation status...
    "malformed_same_id": (GOOD + b"\x00", {}, S.ERR_TRAILING_DATA),
    "bad_option_same_id": (BAD_COOKIE, {}, S.ERR_BAD_EDNS),
    # ...and one with another ID is a mismatch before anything else is read.
    "malformed_other_id": (b"\x5c\x5d" + GOOD[2:] + b"\x00", {}, S.ERR_MISMATCH),
    "cut_other_id": (b"\x5c\x5d" + GOOD[2:14], {}, S.ERR_MISMATCH),
    # The header and QR come before the ID.
    "short_header": (GOOD[:11], {"id": 1}, S.ERR_SHORT_HEADER),
    "qr_clear_other_id": (b"\x5c\x5d\x01" + GOOD[3:], {}, S.ERR_NOT_RESPONSE),
    # The question before the cookie: both mismatches, the name is reported.
    "name_and_cookie_differ": (answer(cookies=()), {"qname": "x.example"}, S.ERR_MISMATCH),
}

#: Queries the library refuses before reading the message: (changes, status).
BAD_QUERIES = {
    "qname_empty": {"qname": ""},
    "qname_at": {"qname": "@"},
    "qname_empty_label": {"qname": "www..example.com"},
    "qname_label_64": {"qname": "x" * 64 + ".example"},
    "qname_over_255": {"qname": ".".join(["x" * 63] * 4)},
    "qname_not_ascii": {"qname": "bücher.example"},
    "qname_space": {"qname": "a b.example"},
}
