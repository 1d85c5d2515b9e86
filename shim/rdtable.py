"""Which dnspython class parses the RDATA of a (class, type) pair: a fixed table.

dnspython's own lookup, ``dns.rdata.get_rdata_class``, is a process-wide
registry that it fills as it goes, and what it stores depends on what it was
asked before: asked for a type under a class with no module of its own
(ANY, NONE, an unassigned class) it stores ``GenericRdata`` under
``(ANY, type)``, and from then on that entry answers for ``(IN, type)`` too.
One response with a class ANY SRV record would make every later IN SRV record
generic, in dnspython (``dns.message.from_wire``) and in anything that asks
its registry.  A host program's own dnspython may have done that already, or
registered types of its own.

So this module never reads or writes that registry.  Which class parses a
pair is decided here from the two values alone, the way dnspython decides it
in a fresh process:

1. class IN: the module ``dns.rdtypes.IN.<TYPE>`` when dnspython has one;
   class CH: ``dns.rdtypes.CH.<TYPE>`` likewise (only CH A exists);
2. any class: else the class-independent module ``dns.rdtypes.ANY.<TYPE>``;
3. else ``dns.rdata.GenericRdata``: the RDATA is kept as opaque bytes.

The modules are named below (dnspython 2.9's; a test checks the lists against
the installed dnspython's own files, so an upgrade that adds one is noticed)
and imported on first use, each once, or all at once (:func:`load_all`, which
an interpreter the library starts runs at start-up): importing more of them
only makes the next lookup cheaper, never different.  The table is the same whatever was
parsed before and whatever the host's dnspython registry holds.
"""

import importlib

import dns.rdata
import dns.rdataclass
import dns.rdatatype

__all__ = ["IN_MODULES", "CH_MODULES", "ANY_MODULES", "implementation", "parser", "keep_only",
           "has_module", "load_all"]

#: dnspython's RDATA modules for class IN only (dns/rdtypes/IN/).
IN_MODULES = ("A", "AAAA", "APL", "DHCID", "HTTPS", "IPSECKEY", "KX", "NAPTR", "NSAP",
              "NSAP_PTR", "PX", "SRV", "SVCB", "WKS")
#: ... for class CH only (dns/rdtypes/CH/).
CH_MODULES = ("A",)
#: ... for every class (dns/rdtypes/ANY/).
ANY_MODULES = ("AFSDB", "AMTRELAY", "AVC", "BRID", "CAA", "CDNSKEY", "CDS", "CERT", "CNAME",
               "CSYNC", "DLV", "DNAME", "DNSKEY", "DS", "DSYNC", "EUI48", "EUI64", "GPOS", "HHIT",
               "HINFO", "HIP", "ISDN", "KEY", "L32", "L64", "LOC", "LP", "MX", "NID", "NINFO",
               "NS", "NSEC", "NSEC3", "NSEC3PARAM", "OPENPGPKEY", "OPT", "PTR", "RESINFO", "RP",
               "RRSIG", "RT", "SIG", "SMIMEA", "SOA", "SPF", "SSHFP", "TKEY", "TLSA", "TSIG",
               "TXT", "URI", "WALLET", "X25", "ZONEMD")


def _by_type(package, names):
    """{type value: (module path, class name)}: a module's name is its type's
    mnemonic with "-" written "_", and so is the class it defines."""
    return {int(dns.rdatatype.RdataType[name]): (f"dns.rdtypes.{package}.{name}", name)
            for name in names}


_IN = int(dns.rdataclass.IN)
_CH = int(dns.rdataclass.CH)
#: class -> {type -> module}: the modules of one class; then every class's.
_CLASS_MODULES = {_IN: _by_type("IN", IN_MODULES), _CH: _by_type("CH", CH_MODULES)}
_ANY_BY_TYPE = _by_type("ANY", ANY_MODULES)
_NO_MODULES = {}

# Resolved implementations, by module path: at most one entry per module
# named above (a bounded set), each the class that module defines.
_LOADED = {}
# Parse entries of pairs of known values: at most |known classes| x |known
# types| (6 x 86 with dnspython 2.9).  Pairs with an unknown value are
# resolved each time, so that hostile values cannot grow it.
_KNOWN_TYPES = frozenset(int(t) for t in dns.rdatatype.RdataType)
_KNOWN_CLASSES = frozenset(int(c) for c in dns.rdataclass.RdataClass)
_PARSERS = {}


def keep_only(types) -> None:
    """From now on only ``types`` (mnemonics: "A", "NSAP-PTR"...) get
    dnspython's parsers; every other type is read as dnspython reads a type
    it has no module for: ``GenericRdata``, its RDATA opaque, which the glue
    hands to ``on_other`` as sent.  For a firmware built with ``--types``,
    whose other RDATA modules are not there; called once, at start-up,
    before the first message.  A kept type's result never changes."""
    keep = {str(t).upper().replace("-", "_") for t in types}
    for table in (*_CLASS_MODULES.values(), _ANY_BY_TYPE):
        for rdtype in [t for t, (_, name) in table.items() if name not in keep]:
            del table[rdtype]
    _PARSERS.clear()


def load_all() -> None:
    """Imports every module the table names (those keep_only() kept) and
    makes the parse entry of every pair of known values, so that no later
    parse imports or adds anything: what a memory limit needs, since a parse
    it refuses would otherwise keep what it imported before the refusal, and
    the next refused parse would import more (shim.embedded.limited)."""
    for rdclass in _KNOWN_CLASSES:
        for rdtype in _KNOWN_TYPES:
            parser(rdclass, rdtype)


def has_module(rdclass: int, rdtype: int) -> bool:
    """Whether a module of dnspython parses this (class, type): False for
    an unknown type, and for one that keep_only() left out."""
    return (rdtype in _CLASS_MODULES.get(rdclass, _NO_MODULES)) or rdtype in _ANY_BY_TYPE


def implementation(rdclass: int, rdtype: int) -> type:
    """The dnspython Rdata class that parses RDATA of this class and type
    (wire values, 0 to 65535), importing its module on first use."""
    where = _CLASS_MODULES.get(rdclass, _NO_MODULES).get(rdtype) or _ANY_BY_TYPE.get(rdtype)
    if where is None:
        return dns.rdata.GenericRdata
    cls = _LOADED.get(where)
    if cls is None:
        path, name = where
        cls = _LOADED[where] = getattr(importlib.import_module(path), name)
    return cls


def parser(rdclass: int, rdtype: int) -> tuple:
    """(parse function, RdataClass, RdataType) for a pair of wire values: the
    function is the class's ``from_wire_parser(rdclass, rdtype, parser, origin)``."""
    key = (rdclass, rdtype)
    entry = _PARSERS.get(key)
    if entry is None:
        entry = (implementation(rdclass, rdtype).from_wire_parser,
                 dns.rdataclass.RdataClass.make(rdclass), dns.rdatatype.RdataType.make(rdtype))
        if rdtype in _KNOWN_TYPES and rdclass in _KNOWN_CLASSES:
            _PARSERS[key] = entry
    return entry
