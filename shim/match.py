"""Matching a response to its query (RFC 5452, RFC 7873): the decoding layer.

:class:`Expected` is the query as it was sent (``dns_shim_query`` in C,
``shim.Query`` in Python), checked once as an argument; :func:`shim.decode.decode`
calls its :meth:`Expected.check_id` as soon as the header is read (a spoofed
datagram costs the least work) and its :meth:`Expected.check` once the whole
message has parsed.  Every failure is a :class:`shim.status.MismatchError`;
an unusable query is a :class:`shim.status.BadArgumentError`.  Pure Python,
no cffi.
"""

import dns.exception
import dns.name

from shim.status import BadArgumentError, MismatchError

__all__ = ["MATCH_CASE", "Expected"]

#: ``DNS_SHIM_MATCH_CASE``: compare the question's name octet for octet (for
#: DNS 0x20 case randomisation) instead of case-insensitively.
MATCH_CASE = 1
KNOWN_FLAGS = MATCH_CASE

_COOKIE = 10


def _name(qname) -> dns.name.Name:
    """The query's name, in the presentation form the library delivers
    (escapes as dnspython writes them, a final dot optional): ASCII only,
    not empty, not the zone-file shorthand "@"."""
    if isinstance(qname, str):
        try:
            qname = qname.encode("ascii")
        except UnicodeEncodeError:
            raise BadArgumentError("qname is not ASCII presentation form (use \\DDD escapes, "
                                   "or the xn-- form of an IDN)") from None
    if not isinstance(qname, (bytes, bytearray)):
        raise BadArgumentError(f"qname must be text, not {type(qname).__name__}")
    qname = bytes(qname)
    if qname in (b"", b"@") or any(c < 0x21 or c > 0x7E for c in qname):
        raise BadArgumentError(f"qname {qname!r} is not a name in presentation form")
    try:
        return dns.name.from_text(qname)
    except dns.exception.DNSException as e:
        raise BadArgumentError(f"qname {qname!r}: {e}") from None


def _u16(value, what) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFF:
        raise BadArgumentError(f"{what} {value!r} is not a 16-bit value")
    return int(value)


class Expected:
    """The query a response must answer: ``id``, ``qname`` (a
    ``dns.name.Name``), ``qtype``, ``qclass``, ``match_case`` and
    ``cookie_client`` (8 octets or None)."""

    __slots__ = ("id", "qname", "qtype", "qclass", "match_case", "cookie_client")

    def __init__(self, id, qname, qtype, qclass, flags=0, cookie_client=None):
        self.id = _u16(id, "id")
        self.qname = _name(qname)
        self.qtype = _u16(qtype, "qtype")
        self.qclass = _u16(qclass, "qclass")
        if isinstance(flags, bool) or not isinstance(flags, int) or flags & ~KNOWN_FLAGS \
                or flags < 0:
            raise BadArgumentError(f"unknown bits in the query flags {flags!r}")
        self.match_case = bool(flags & MATCH_CASE)
        if cookie_client is not None:
            cookie_client = bytes(cookie_client)
            if len(cookie_client) != 8:
                raise BadArgumentError(f"a client cookie has 8 octets, not {len(cookie_client)}")
        self.cookie_client = cookie_client

    def check_id(self, id_) -> None:
        """The first check, on the header alone."""
        if id_ != self.id:
            raise MismatchError(f"ID {id_}, the query's is {self.id}", 0)

    def check(self, response) -> None:
        """The question (exactly one, the query's name, type and class),
        then the COOKIE, of a response that has parsed fully."""
        h = response.header
        if h.qdcount != 1:
            raise MismatchError("no question" if h.qdcount == 0
                                else f"{h.qdcount} questions, not one", 4)
        if self.match_case:
            same = h.qname.labels == self.qname.labels
        else:
            same = h.qname == self.qname
        if not same:
            raise MismatchError(f"question name {h.qname}, the query's is {self.qname}"
                                + (" (case compared)" if self.match_case else ""), 12)
        if h.qtype != self.qtype:
            raise MismatchError(f"question type {h.qtype}, the query's is {self.qtype}", 12)
        if h.qclass != self.qclass:
            raise MismatchError(f"question class {h.qclass}, the query's is {self.qclass}", 12)
        if self.cookie_client is not None:
            cookies = [o for o in h.options if o.code == _COOKIE]
            if not cookies:
                raise MismatchError("the response has no COOKIE option")
            if len(cookies) > 1:
                raise MismatchError(f"the response has {len(cookies)} COOKIE options")
            if cookies[0].cookie_client != self.cookie_client:
                raise MismatchError(f"the response's client cookie is "
                                    f"{cookies[0].cookie_client.hex()}, the query's "
                                    f"{self.cookie_client.hex()}")
