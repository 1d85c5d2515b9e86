"""The typed record kinds: one row each, the one table both languages read.

A row says everything the project needs of a class IN type that has a typed
callback: its callback member of ``dns_shim_callbacks``, the C struct that
callback gets, the :class:`shim.glue._Converter` method that builds that
struct, the :mod:`shim.api` class, and its fields, in the order of the C
struct's members after ``rr``, each with its style (how it is typed in Python
and printed by both dump tools) and the dnspython attribute it comes from.

What follows from the table:

* :mod:`shim.glue`: ``TYPED`` (type -> callback member and converter) and the
  C types it builds;
* :mod:`shim.api`: the record classes (frozen dataclasses over
  :class:`shim.api.Record`, one per ``api_class``) and how each is filled;
* ``shim/dump.py`` and ``csrc/tools/dnsshim-dump.c``: each kind's text and
  JSON;
* ``csrc/lib/dns_shim.c``: the callbacks it calls, by member, with their
  struct.  The build writes the table as C X-macros (``DNS_SHIM__KINDS``,
  ``DNS_SHIM__KIND_FIELDS_<member>``: :func:`c_header`), prepended to the
  library's C and, as ``dns_shim_kinds.h``, on the include path of the C
  programs build_ffi.compile_program compiles.

Adding a typed kind is one row here plus its struct, callback typedef and
member in ``csrc/dns_shim.h`` (appended, after a comment naming the release
that appends it: the ABI only grows, and the build derives the struct sizes
the library accepts from those comments).  The row's converter may be left
empty (its fields then say how the struct is filled) or name a method
written in ``shim/glue.py``.  tests/test_kinds.py checks every row against the header
and dnspython.

This module imports only collections: ``import shim`` reads it, and the
build reads it where dnspython is absent.
"""

from collections import namedtuple

#: How a field is typed and printed: its C member's type, its Python API
#: type, its dig-like text and its JSON value.
#:   ipv4: uint8_t[4], ipaddress.IPv4Address, dotted quad, a string
#:   ipv6: uint8_t[16], ipaddress.IPv6Address, inet_ntop's text, a string
#:   name: const char *, str, the name with its final dot, the name as is
#:   u16, u32: uint16_t, uint32_t, int, decimal, a number
#:   bytes: dns_shim_bytes, bytes, a quoted escaped string, one code point a byte
#:   strings: size_t count then const dns_shim_bytes *strings, tuple[bytes, ...],
#:     quoted strings separated by spaces, a list
STYLES = ("ipv4", "ipv6", "name", "u16", "u32", "bytes", "strings")


class Field(namedtuple("Field", "name style source", defaults=("",))):
    """One member after rr: ``name`` is the C struct's member, the API
    attribute and the JSON key; ``style`` one of STYLES; ``source`` the
    dnspython rdata attribute it comes from when not ``name``.  (A
    collections.namedtuple, not typing's: ``import shim`` reads this module
    and stays light.)"""

    __slots__ = ()

    @property
    def attribute(self) -> str:
        return self.source or self.name


class Kind(namedtuple("Kind", "rdtype mnemonic member struct converter api_class fields doc",
                      defaults=("",))):
    """One row:

    rdtype, mnemonic: the RR type (class IN) and its name, as dnspython
    spells it; member: the callback member of dns_shim_callbacks (without
    "on_", the JSON "kind"); struct: the C struct the callback gets (it
    starts with a dns_shim_rr rr); converter: the shim.glue._Converter
    method that builds the struct, or "" for one made from the fields
    (shim.glue.row_converter), which suffices unless a value needs more than
    its style's conversion; api_class: the shim.api class (several kinds may
    share one: same struct, same fields); fields: the members after rr, in
    the C struct's order (Field); doc: the API class's docstring (on the
    first row of that class)."""

    __slots__ = ()

    @property
    def json_kind(self) -> str:
        return self.member[len("on_"):]


_TARGET = (Field("target", "name"),)
_TARGET_DOC = "CNAME, NS, PTR and DNAME."

#: Every typed kind, in the order of their members in dns_shim_callbacks.
KINDS = (
    Kind(1, "A", "on_a", "dns_shim_a", "a", "A", (Field("address", "ipv4"),),
         "An A record of class IN: ``address.packed`` is the 4 octets in network\n"
         "order, ``str(address)`` the dotted text."),
    Kind(28, "AAAA", "on_aaaa", "dns_shim_aaaa", "aaaa", "AAAA", (Field("address", "ipv6"),),
         "An AAAA record of class IN: ``address.packed`` is the 16 octets in\n"
         "network order, ``str(address)`` the RFC 5952 text."),
    Kind(5, "CNAME", "on_cname", "dns_shim_target", "target", "Target", _TARGET, _TARGET_DOC),
    Kind(2, "NS", "on_ns", "dns_shim_target", "target", "Target", _TARGET),
    Kind(12, "PTR", "on_ptr", "dns_shim_target", "target", "Target", _TARGET),
    Kind(39, "DNAME", "on_dname", "dns_shim_target", "target", "Target", _TARGET),
    Kind(15, "MX", "on_mx", "dns_shim_mx", "mx", "MX",
         (Field("preference", "u16"), Field("exchange", "name")),
         "An MX record of class IN."),
    Kind(16, "TXT", "on_txt", "dns_shim_txt", "txt", "TXT", (Field("strings", "strings"),),
         "A TXT record of class IN: its <character-string>s, binary safe."),
    Kind(33, "SRV", "on_srv", "dns_shim_srv", "srv", "SRV",
         (Field("priority", "u16"), Field("weight", "u16"), Field("port", "u16"),
          Field("target", "name")),
         "An SRV record of class IN."),
    Kind(35, "NAPTR", "on_naptr", "dns_shim_naptr", "naptr", "NAPTR",
         (Field("order", "u16"), Field("preference", "u16"), Field("flags", "bytes"),
          Field("services", "bytes", "service"), Field("regexp", "bytes"),
          Field("replacement", "name")),
         "A NAPTR record of class IN: flags, services and regexp as bytes."),
    Kind(6, "SOA", "on_soa", "dns_shim_soa", "soa", "SOA",
         (Field("mname", "name"), Field("rname", "name"), Field("serial", "u32"),
          Field("refresh", "u32"), Field("retry", "u32"), Field("expire", "u32"),
          Field("minimum", "u32")),
         "An SOA record of class IN."),
)

#: rdtype -> Kind
BY_TYPE = {k.rdtype: k for k in KINDS}


def api_classes() -> dict:
    """{API class name: its first row}, in table order."""
    classes = {}
    for k in KINDS:
        classes.setdefault(k.api_class, k)
    return classes


def c_header() -> str:
    """The table as C X-macros, for csrc/lib/dns_shim.c and dnsshim-dump.c:

    ``DNS_SHIM__KINDS(X)`` calls ``X(rdtype, member, struct, "json kind")``
    once per row, in order; ``DNS_SHIM__KIND_FIELDS_<member>(F)`` calls
    ``F(struct, field, STYLE)`` once per field (STYLE in capitals)."""
    lines = ["/* The typed record kinds: generated by the build from shim/kinds.py. */",
             "#ifndef DNS_SHIM_KINDS_H", "#define DNS_SHIM_KINDS_H",
             "#define DNS_SHIM__KINDS(X) \\"]
    lines += [f'    X({k.rdtype}, {k.member}, {k.struct}, "{k.json_kind}") \\' for k in KINDS]
    lines.append("")
    for k in KINDS:
        fields = " ".join(f"F({k.struct}, {f.name}, {f.style.upper()})" for f in k.fields)
        lines.append(f"#define DNS_SHIM__KIND_FIELDS_{k.member}(F) {fields}")
    lines += ["#endif", ""]
    return "\n".join(lines)
