"""The differential of libdnsshim_ares against the real c-ares.

tests/c/ares_every_parser.c, built once against Debian's libcares and once
against libdnsshim_ares, prints every parser's return code and output for
each message; this module runs both on the same messages, pairs the lines
and names the kind of every difference (:func:`classify`).  Whether a
message is malformed is the reference's verdict (dnspython, which shares no
code with shim: :func:`wire_defects`), never the decoder's under test.  The
kinds are the rows of dnsshim_ares(3)'s table of differences
(csrc/ares/dnsshim_ares.3.md); tests/test_ares.py pins how many of each there are.

    python tests/ares_diff.py BUILD_DIR [--mutants N] [--seed S]

prints the agreement numbers dnsshim_ares(3) reports.
"""

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import dns.exception  # noqa: E402
import dns.name  # noqa: E402

import fresh_reference  # noqa: E402

#: Which malformation the reference (dnspython, sharing no code with shim)
#: names, by its exception class: the X of "accepts:X".  A class not in this
#: table gives its own name as X, a kind KINDS does not list, so the tests
#: fail until it is named here and in dnsshim_ares(3).
DEFECTS = {
    "BadPointer": "BadName",         # a pointer forward or into itself
    "PointerChainTooLong": "BadName",
    "DecompressionForbidden": "BadName",  # a pointer in a name its RDATA type says is never compressed
    "NameTooLong": "BadName",        # over 255 octets
    "LabelTooLong": "BadName",
    "BadLabelType": "BadName",       # label types 01 and 10
    "EmptyLabel": "BadName",
    "ShortHeader": "ShortHeader",    # under 12 octets
    "TrailingJunk": "TrailingData",  # octets after the last record the counts announce
    "BadEDNS": "BadEdns",            # OPT misplaced, twice or not owned by the root
    "BadTSIG": "BadTsig",            # TSIG not last or not of class ANY
    "FormError": "FormError",        # cut short, an RDATA that contradicts its type, ...
}

#: The kinds of difference dnsshim_ares(3) lists, by the id its table gives them.
#: "accepts:X": c-ares 1.18 returns a result for a message (or, for
#: ares_expand_name, a name) that the reference rejects, naming defect X
#: (:data:`DEFECTS`), where we give that parser's error code;
#: "code": the reference rejects the message, c-ares and we both return an
#: error, with different codes (where c-ares's reading derails decides which
#: it gives);
#: "ttl": a message the reference accepts, where the only difference is a
#: TTL of 2^31 or more, which c-ares hands on as a negative int and we as 0.
#: Anything else is unexplained: in particular, a message the reference
#: accepts that we reject, or one it rejects that we give a result for.
KINDS = (
    "accepts:BadName",
    "accepts:TrailingData",
    "accepts:BadEdns",
    "accepts:BadTsig",
    "accepts:FormError",
    "code",
    "ttl",
)


def messages_from_seeds(mutants: int = 0, seed: int = 1) -> list:
    """The test vectors, the malformed cases, the corpus (mutator.seeds) and
    ``mutants`` mutants of them (tests/mutator.py), as bytes."""
    import mutator

    base = mutator.seeds()
    out = list(base)
    if mutants:
        m = mutator.Mutator(seed)
        where = [mutator.positions(w) for w in base]
        small = [k for k, w in enumerate(base) if len(w) <= mutator.BIG]
        for i in range(mutants):
            k = small[i % len(small)]
            out.append(m.mutate(base[k], where[k]))
    return out


# Names for random_responses: case variants, escaped bytes, characters c-ares
# refuses in host names, the root.
_NAMES = [
    (b"www", b"example", b"com", b""), (b"WWW", b"Example", b"COM", b""),
    (b"web", b"example", b"com", b""), (b"srv", b"example", b"com", b""),
    (b"a b", b"example", b""), (b"a.b", b"example", b""), (b"*", b"example", b""),
    (b"_sip", b"_udp", b"example", b""), (b"1/25", b"2", b"0", b"192", b"in-addr", b"arpa", b""),
    (b"x\x00y", b"example", b""), (b"\x00", b"example", b""), (b"\xc1", b"example", b""),
    (b"",),
]
_EDGE_TTLS = (0, 1, 60, 300, 3600, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)


def random_responses(count: int, seed: int = 1) -> list:
    """``count`` well-formed responses, built with dnspython's builders, that
    mix what the parsers look at: CNAME chains in any order, A and AAAA of
    the question's name and of others, every type the parsers read (TXT and
    CAA in class CH too), names with escapes and case variants, TTLs at the
    edges, several questions now and then.  The differential on them checks
    the semantics where the decoder accepts everything."""
    import random

    import dns.message
    import dns.name
    import dns.rdata
    import dns.rdataclass
    import dns.rdatatype
    import dns.rrset

    rng = random.Random(seed)

    def name():
        return dns.name.Name(rng.choice(_NAMES))

    def text(n):
        return n.to_text()

    def string():
        return '"' + rng.choice(["", "v=spf1 -all", "a\\000b", "s", "SIP+D2U", "x" * 40]) + '"'

    makers = {
        "A": lambda: f"192.0.2.{rng.randrange(256)}",
        "AAAA": lambda: f"2001:db8::{rng.randrange(65536):x}",
        "CNAME": lambda: text(name()),
        "NS": lambda: text(name()),
        "PTR": lambda: text(name()),
        "MX": lambda: f"{rng.randrange(65536)} {text(name())}",
        "TXT": lambda: " ".join(string() for _ in range(rng.randint(1, 3))),
        "SRV": lambda: f"{rng.randrange(65536)} {rng.randrange(65536)} {rng.randrange(65536)} "
                       f"{text(name())}",
        "NAPTR": lambda: f"{rng.randrange(65536)} {rng.randrange(65536)} {string()} {string()} "
                         f"{string()} {text(name())}",
        "CAA": lambda: f"{rng.choice((0, 128, 255))} {rng.choice(('issue', 'iodef', 'tbs'))} "
                       f"{string()}",
        "URI": lambda: f"{rng.randrange(65536)} {rng.randrange(65536)} \"https://example.com/\"",
        "SOA": lambda: f"{text(name())} {text(name())} {rng.randrange(1 << 32)} 7200 3600 "
                       f"1209600 {rng.randrange(1 << 32)}",
    }
    weighted = ["A"] * 4 + ["AAAA"] * 2 + ["CNAME"] * 4 + list(makers)
    out = []
    for _ in range(count):
        qname = name()
        q = dns.message.make_query(qname, rng.choice(list(makers)))
        q.id = rng.randrange(65536)
        if rng.random() < 0.05:  # two questions: c-ares's EBADRESP
            q.question.append(dns.rrset.RRset(name(), dns.rdataclass.IN, dns.rdatatype.A))
        m = dns.message.make_response(q)
        for _ in range(rng.randint(0, 7)):
            rdtype = rng.choice(weighted)
            owner = qname if rng.random() < 0.5 else name()
            rdclass = ("CH" if rdtype in ("TXT", "CAA") and rng.random() < 0.2 else "IN")
            rd = dns.rdata.from_text(rdclass, rdtype, makers[rdtype]())
            rrset = dns.rrset.from_rdata(owner, 0, rd)
            rrset.ttl = rng.choice(_EDGE_TTLS)
            m.answer.append(rrset)
        out.append(m.to_wire())
    return out


def write_messages(directory: Path, messages) -> list:
    paths = []
    for i, wire in enumerate(messages):
        p = Path(directory) / f"m{i:06d}.bin"
        p.write_bytes(wire)
        paths.append(p)
    return paths


def run_program(program, paths, valgrind=()) -> str:
    result = subprocess.run([*valgrind, str(program), "-"], input="".join(f"{p}\n" for p in paths),
                            capture_output=True, text=True, errors="replace", timeout=1800)
    if result.returncode != 0:
        raise RuntimeError(f"{program} failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


def parse_output(text: str) -> dict:
    """{path: {call: line}}; a call is the line up to " rc="."""
    out, current = {}, None
    for line in text.splitlines():
        if line.startswith("# "):
            current = out.setdefault(line[2:], {})
        elif current is not None and " rc=" in line:
            current[line.split(" rc=")[0]] = line
    return out


_RC = re.compile(r" rc=(\d+)")
# Where the program prints TTLs: "/ttl" after an addrttl address, and the
# third number of a URI element.
_TTLS = re.compile(r"(?<=/)-?\d+|(?<=\{)(\d+ \d+ )(-?\d+)")


def _rc(line):
    return int(_RC.search(line).group(1))


def _as_response(wire: bytes) -> bytes:
    """The message with its QR bit set: a c-ares parser does not look at it,
    no more than libdnsshim_ares does."""
    if len(wire) > 2 and not wire[2] & 0x80:
        wire = wire[:2] + bytes((wire[2] | 0x80,)) + wire[3:]
    return wire


def _defect(error: str) -> str:
    return DEFECTS.get(error, error)


def wire_defects(wires) -> list:
    """The reference's verdict on each message handed to a c-ares parser:
    None when ``dns.message.from_wire(wire, keyring=False,
    one_rr_per_rrset=True)`` accepts it (QR forced), else the defect it
    names (:data:`DEFECTS`).  Each verdict comes from a process that has
    parsed nothing before (tests/fresh_reference.py): dnspython's choice of
    RDATA class depends on what it parsed before, and whether an RDATA is
    accepted depends on that class."""
    verdicts = fresh_reference.results("reference", [_as_response(w) for w in wires])
    out = []
    for v in verdicts:
        if "crash" in v:
            raise RuntimeError(f"the reference crashed: {v['crash']}")
        out.append(_defect(v["error"]) if "error" in v else None)
    return out


def _name_defect(wire: bytes, offset: int):
    """The reference's verdict on the name at `offset` (an ares_expand_name
    call): ``dns.name.from_wire``, which reads a name only, so no registry
    of RDATA classes is involved and in-process is history-free."""
    try:
        dns.name.from_wire(wire, offset)
        return None
    except Exception as e:  # noqa: BLE001 - every rejection counts; an unknown class, an unknown kind
        return _defect(type(e).__name__)


def _negative_ttls_as_zero(line: str) -> str:
    def repl(m):
        if m.group(2) is not None:
            return m.group(1) + ("0" if m.group(2).startswith("-") else m.group(2))
        return "0" if m.group(0).startswith("-") else m.group(0)
    return _TTLS.sub(repl, line)


def classify(wire: bytes, call: str, cares: str, ours: str, wire_defect):
    """The kind (one of KINDS) of a difference between the two lines of a
    call, or None when it is no known kind (a bug); `wire_defect` is the
    reference's verdict on the whole message (:func:`wire_defects`)."""
    if call.startswith("expand_"):
        defect = _name_defect(wire, int(call.split("@")[1])) if call.startswith(
            "expand_name") else None
    else:
        defect = wire_defect
    if defect is not None:
        # The reference says the message is malformed: we must reject it with the error code of
        # that parser, where c-ares gives a result.
        if _rc(ours) not in (8, 10, 17):
            return None
        if _rc(cares) in (0, 1):
            return f"accepts:{defect}"
        return "code"
    if _negative_ttls_as_zero(cares) == ours and cares != ours:
        return "ttl"
    return None


class Comparison:
    """The two outputs on the same messages, compared call by call."""

    def __init__(self, messages, paths, cares_out, ours_out):
        self.cares = parse_output(cares_out)
        self.ours = parse_output(ours_out)
        self.messages = dict(zip(map(str, paths), messages))
        self.calls = 0
        self.same = 0
        self.kinds = collections.Counter()
        self.unexplained = []
        self.examples = {}
        self.defects = dict(zip(self.messages, wire_defects(list(self.messages.values()))))
        for path, wire in self.messages.items():
            mine = self.ours.get(path, {})
            theirs = self.cares.get(path, {})
            for call in sorted(set(mine) | set(theirs)):
                self.calls += 1
                a, b = theirs.get(call), mine.get(call)
                if a == b:
                    self.same += 1
                    continue
                kind = classify(wire, call, a, b, self.defects[path]) if a and b else None
                if kind is None:
                    self.unexplained.append((path, wire.hex(), a, b))
                else:
                    self.kinds[kind] += 1
                    self.examples.setdefault(kind, (path, a, b))
        self.messages_agreeing = sum(
            1 for path in self.messages if self.ours.get(path) == self.cares.get(path))
        # On the messages the reference accepts: every call the same, but for
        # the TTLs of 2^31 and more.
        good = [path for path, defect in self.defects.items() if defect is None]
        self.good_messages = len(good)
        self.good_calls = sum(len(self.cares.get(path, {})) for path in good)
        self.good_same = sum(1 for path in good for call, line in self.cares.get(path, {}).items()
                             if self.ours.get(path, {}).get(call) == line)

    def summary(self) -> str:
        lines = [f"{len(self.messages)} messages, {self.messages_agreeing} with every call the "
                 f"same; {self.calls} calls, {self.same} the same "
                 f"({100.0 * self.same / max(self.calls, 1):.2f}%); of them "
                 f"{self.good_messages} messages the reference accepts, {self.good_calls} calls, "
                 f"{self.good_same} the same"]
        for kind, n in self.kinds.most_common():
            lines.append(f"  {n:6d} {kind}")
        if self.unexplained:
            lines.append(f"  {len(self.unexplained):6d} UNEXPLAINED")
        return "\n".join(lines)


def compare(cares_prog, ours_prog, messages, valgrind=()) -> Comparison:
    with tempfile.TemporaryDirectory(prefix="ares-diff-") as tmp:
        paths = write_messages(Path(tmp), messages)
        return Comparison(messages, paths, run_program(cares_prog, paths),
                          run_program(ours_prog, paths, valgrind))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path, help="directory with ares_every_parser_cares "
                                                 "and ares_every_parser")
    parser.add_argument("--mutants", type=int, default=10000)
    parser.add_argument("--random", type=int, default=10000,
                        help="how many random well-formed responses")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    parser_random = args.random
    seeds = messages_from_seeds()
    mutants = messages_from_seeds(args.mutants, args.seed)[len(seeds):]
    for label, msgs in (("seeds (vectors, malformed cases, corpus)", seeds),
                        (f"{args.mutants} mutants (seed {args.seed})", mutants),
                        (f"{parser_random} random responses (seed {args.seed})",
                         random_responses(parser_random, args.seed))):
        c = compare(args.build / "ares_every_parser_cares", args.build / "ares_every_parser", msgs)
        print(f"{label}: {c.summary()}")
        if args.verbose:
            for kind, (path, a, b) in c.examples.items():
                print(f"    {kind}: {path}\n      c-ares: {a[:200]}\n      ours:   {b[:200]}")
        for path, hexwire, a, b in c.unexplained[:20]:
            print(f"UNEXPLAINED {hexwire}\n  c-ares: {a}\n  ours:   {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
