"""Messages for the history-independence tests (tests/test_history.py).

    python tests/history.py host STREAM         the Python API in a host that
                                                poisoned its own dnspython first
    python tests/history.py bounded [--messages N] [--out STREAM]

What any message does must not change what a later one gets.  The
differential feeds one long-lived process a few thousand messages in a
shuffled order and compares each result with the same message parsed first
in a fresh process; the bounded-state run feeds 200,000 (a million on
demand) messages with every type and class value and checks that a fixed
set of probes always gets the same result and that memory stays flat.

The messages lean on what broke before: records of every type dnspython
knows under every kind of class (reserved 0, IN, CH, HS, NONE, ANY, an
unassigned class, private use), each type seen first under a class other
than IN, and mutants of those biased towards the class and type fields.
"""

import argparse
import random
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import dns.rdatatype  # noqa: E402

import fresh_reference as fresh  # noqa: E402
import rdata_samples  # noqa: E402
from wire import AT_QNAME, header, name, question, rr  # noqa: E402

IN = 1
#: Every kind of class: reserved 0, IN, CH, HS, NONE, ANY, unassigned, private use.
CLASSES = (0, 1, 3, 4, 254, 255, 11264, 65280, 65535)
ODD_CLASSES = tuple(c for c in CLASSES if c != IN)
#: The types dnspython implements for class IN only: what the defect broke.
IN_ONLY = tuple(int(dns.rdatatype.RdataType[n]) for n in
                ("A", "AAAA", "APL", "DHCID", "HTTPS", "IPSECKEY", "KX", "NAPTR", "NSAP",
                 "NSAP_PTR", "PX", "SRV", "SVCB", "WKS"))
#: Every type value dnspython knows (the query-only ones with any octets).
EVERY_TYPE = tuple(sorted(int(t) for t in dns.rdatatype.RdataType
                          if t not in (dns.rdatatype.OPT, dns.rdatatype.TSIG)))
_SAMPLES = {}  # filled on first use: dnspython's text parser fills its registry,
# and `history.py host` must not touch that registry before it poisons it


def _samples() -> dict:
    if not _SAMPLES:
        _SAMPLES.update(rdata_samples.every_type())
    return _SAMPLES


#: CH A (RFC 1035's Chaosnet address): a domain and a 16-bit address.
CH_A = name("ch", "example") + struct.pack("!H", 0o1234)


def rdata_of(rdtype: int, rdclass: int = IN) -> bytes:
    """The sample RDATA of a type (under CH, CH A's own form)."""
    if (rdtype, rdclass) == (1, 3):
        return CH_A
    return _samples().get(rdtype, b"\x00\x01\x02\x03")


def response(*records, qtype=1, id=0x1234) -> bytes:
    """A response to "example.com IN <qtype>" whose answer holds `records`,
    each (type, class, RDATA), owned by the question's name."""
    return (header(id=id, qd=1, an=len(records)) + question(qtype=qtype)
            + b"".join(rr(AT_QNAME, t, d, rclass=c) for t, c, d in records))


def typed_response(rdtype: int, rdclass: int) -> bytes:
    """One record of `rdtype` and `rdclass` with that type's sample RDATA."""
    return response((rdtype, rdclass, rdata_of(rdtype, rdclass)), qtype=rdtype)


def biased_messages() -> list:
    """Every known type under every class; every IN-only type under each odd
    class and then IN in one message."""
    out = [typed_response(t, c) for t in EVERY_TYPE for c in CLASSES]
    for c in ODD_CLASSES:
        out += [response((t, c, rdata_of(t, c)), (t, IN, rdata_of(t)), qtype=t)
                for t in IN_ONLY]
    out.append(response((1, 3, rdata_of(1)), qtype=1))  # IN A's RDATA under CH: malformed
    return out


class ClassTypeMutator:
    """Rewrites the TYPE and CLASS fields of a one-record response (and
    sometimes its RDATA), towards the values that matter here."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def mutate(self, rdtype, rdclass) -> bytes:
        rng = self.rng
        if rng.random() < 0.5:
            rdtype = rng.choice(EVERY_TYPE + (rng.randrange(65536),))
        if rng.random() < 0.7:
            rdclass = rng.choice(CLASSES + (rng.randrange(65536), rng.randrange(65280, 65536)))
        rdata = rdata_of(rng.choice(EVERY_TYPE)) if rng.random() < 0.3 else rdata_of(rdtype)
        return response((rdtype, rdclass, rdata), qtype=rdtype)


def differential_messages(seed: int, mutants: int = 1500) -> list:
    """The differential's messages, in its order: first one message of
    every known type under an odd class (so that each type is met first
    away from IN), then, shuffled, every test message, the corpus, every
    type under every class and `mutants` mutants (class/type-biased and of
    the general mutator)."""
    import mutator
    rng = random.Random(seed)
    first = [typed_response(t, rng.choice(ODD_CLASSES)) for t in EVERY_TYPE]
    rng.shuffle(first)
    rest = mutator.seeds() + biased_messages()
    ct = ClassTypeMutator(seed)
    rest += [ct.mutate(rng.choice(EVERY_TYPE), rng.choice(CLASSES)) for _ in range(mutants // 2)]
    rest += mutator.mutants(mutants - mutants // 2, seed)
    rng.shuffle(rest)
    return first + rest


def use_dnspython_registry():
    """Makes shim.rdtable ask dnspython's registry, the history-dependent
    lookup the fixed table replaces: only for showing that the differential
    catches it."""
    import dns.rdata
    import dns.rdataclass

    from shim import rdtable

    def implementation(rdclass, rdtype):
        if rdtype not in rdtable._KNOWN_TYPES:
            return dns.rdata.GenericRdata
        if rdclass not in rdtable._KNOWN_CLASSES:
            return dns.rdata.get_rdata_class(dns.rdataclass.ANY, rdtype)
        return dns.rdata.get_rdata_class(rdclass, rdtype)
    rdtable.implementation = implementation


def host_results(wires) -> list:
    """The Python API in a host interpreter whose own dnspython has parsed
    every message first with ``dns.message.from_wire`` (its registry then
    holds GenericRdata for every type met under a class without a module),
    then shim.parse_response on each, in order."""
    import dns.message
    for wire in wires:
        try:
            dns.message.from_wire(wire, keyring=False)
        except Exception:  # noqa: BLE001 - only the side effects matter here
            pass
    return [fresh.api_result(w) for w in wires]


# ---- the bounded-state run -------------------------------------------------

#: A fixed set of probes interleaved with the random messages: every typed
#: callback, and IN-only types a poisoned table would turn generic.
PROBE_TYPES = ("A", "AAAA", "SRV", "NAPTR", "MX", "TXT", "CNAME", "SOA", "HTTPS", "SVCB", "KX",
               "CAA")


def probes() -> list:
    return [typed_response(int(dns.rdatatype.RdataType[n]), IN) for n in PROBE_TYPES]


def _random_owner(rng, i) -> bytes:
    """A name no other message has: the message's number and random labels."""
    labels = [b"m%d" % i] + [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789-")
                                   for _ in range(rng.randint(1, 12)))
                             for _ in range(rng.randint(1, 4))]
    return b"".join(bytes([len(x)]) + x for x in labels) + b"\x00"


def bounded_messages(count: int, every: int, seed: int = 9):
    """(messages, probe count): `count` messages, where message k*every is
    the next probe (in turn) and every other one a record with a distinct
    random owner name, its type and class walking all 65,536 values each
    (type i mod 65536, class 7919 i mod 65536, so that every pair differs),
    with the sample RDATA of its type or random octets."""
    rng = random.Random(seed)
    probe_set = probes()
    out = []
    for i in range(count):
        if i % every == 0:
            out.append(probe_set[(i // every) % len(probe_set)])
            continue
        rdtype, rdclass = i % 65536, (7919 * i) % 65536
        rdata = (rdata_of(rdtype) if rng.random() < 0.5
                 else bytes(rng.randrange(256) for _ in range(rng.randrange(16))))
        out.append(header(id=i & 0xFFFF, qd=1, an=1) + question(qtype=rdtype)
                   + rr(_random_owner(rng, i), rdtype, rdata, rclass=rdclass))
    return out


def first_record(wire: bytes) -> tuple:
    """(owner octets, type, class) of the first answer record of a message
    built here (one question, an uncompressed or pointer owner)."""
    p = 12
    while wire[p]:
        p += wire[p] + 1
    p += 5  # the question's root label, QTYPE, QCLASS
    start = p
    if wire[p] >= 0xC0:
        p += 2
    else:
        while wire[p]:
            p += wire[p] + 1
        p += 1
    rdtype, rdclass = struct.unpack_from("!HH", wire, p)
    return wire[start:p], rdtype, rdclass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    host = sub.add_parser("host", help="the Python API in a poisoned host: results as JSON lines")
    host.add_argument("stream", type=Path)
    host.add_argument("--dnspython-registry", action="store_true",
                      help="the pre-fix lookup (to show that the differential catches it)")
    bounded = sub.add_parser("bounded", help="write the bounded-state run's STREAM")
    bounded.add_argument("--messages", type=int, default=200_000)
    bounded.add_argument("--every", type=int, default=1000)
    bounded.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "host":
        import json
        if args.dnspython_registry:
            use_dnspython_registry()
        for result in host_results(fresh.unframe(args.stream.read_bytes())):
            print(json.dumps(result))
    else:
        args.out.write_bytes(fresh.frame(bounded_messages(args.messages, args.every)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
