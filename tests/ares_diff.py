"""The differential of libdnsshim_ares against the real c-ares.

csrc/dnsshim_ares_diff.c, built once against Debian's libcares and once
against libdnsshim_ares, prints every parser's return code and output for
each message; this module runs both on the same messages, pairs the lines
and names the kind of every difference (:func:`classify`).  The kinds are
the rows of README.md's table of differences ("libdnsshim_ares: for c-ares
users"); tests/test_ares.py asserts that every difference is of one of them.

    python tests/ares_diff.py BUILD_DIR [--mutants N] [--seed S]

prints the agreement numbers the README reports.
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

from shim.decode import decode, decode_name  # noqa: E402
from shim.status import DnsShimError  # noqa: E402

#: The kinds of difference README.md lists, by the id its table gives them.
#: "accepts:X": c-ares 1.18 returns a result for a message (or, for
#: ares_expand_name, a name) that the decoder rejects with X;
#: "code": both reject a malformed message, with different codes (where
#: c-ares's reading derails decides which it gives);
#: "ttl": a TTL of 2^31 or more, which c-ares hands on as a negative int.
KINDS = (
    "accepts:BadRdataError",
    "accepts:TruncatedError",
    "accepts:BadNameError",
    "accepts:TrailingDataError",
    "accepts:BadEdnsError",
    "accepts:FormatError",
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


def _wire_defect(wire: bytes):
    """The decoder's verdict on a message handed to a c-ares parser (which
    does not look at the QR bit, no more than libdnsshim_ares does)."""
    if len(wire) > 2 and not wire[2] & 0x80:
        wire = wire[:2] + bytes((wire[2] | 0x80,)) + wire[3:]
    try:
        decode(wire)
        return None
    except DnsShimError as e:
        return type(e).__name__


def _name_defect(wire: bytes, offset: int):
    try:
        decode_name(wire, offset)
        return None
    except DnsShimError as e:
        return type(e).__name__


def _negative_ttls_as_zero(line: str) -> str:
    def repl(m):
        if m.group(2) is not None:
            return m.group(1) + ("0" if m.group(2).startswith("-") else m.group(2))
        return "0" if m.group(0).startswith("-") else m.group(0)
    return _TTLS.sub(repl, line)


def classify(wire: bytes, call: str, cares: str, ours: str):
    """The kind (one of KINDS) of a difference between the two lines of a
    call, or None when it is no known kind (a bug)."""
    if call.startswith("expand_"):
        defect = _name_defect(wire, int(call.split("@")[1])) if call.startswith(
            "expand_name") else None
    else:
        defect = _wire_defect(wire)
    if defect is not None:
        # The message is malformed: we must reject it with the error code of
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
        for path, wire in self.messages.items():
            mine = self.ours.get(path, {})
            theirs = self.cares.get(path, {})
            for call in sorted(set(mine) | set(theirs)):
                self.calls += 1
                a, b = theirs.get(call), mine.get(call)
                if a == b:
                    self.same += 1
                    continue
                kind = classify(wire, call, a, b) if a and b else None
                if kind is None:
                    self.unexplained.append((path, wire.hex(), a, b))
                else:
                    self.kinds[kind] += 1
                    self.examples.setdefault(kind, (path, a, b))
        self.messages_agreeing = sum(
            1 for path in self.messages if self.ours.get(path) == self.cares.get(path))
        # On the messages the decoder accepts: every call the same, but for
        # the TTLs of 2^31 and more.
        good = [path for path, wire in self.messages.items() if _wire_defect(wire) is None]
        self.good_messages = len(good)
        self.good_calls = sum(len(self.cares.get(path, {})) for path in good)
        self.good_same = sum(1 for path in good for call, line in self.cares.get(path, {}).items()
                             if self.ours.get(path, {}).get(call) == line)

    def summary(self) -> str:
        lines = [f"{len(self.messages)} messages, {self.messages_agreeing} with every call the "
                 f"same; {self.calls} calls, {self.same} the same "
                 f"({100.0 * self.same / max(self.calls, 1):.2f}%); of them "
                 f"{self.good_messages} messages the decoder accepts, {self.good_calls} calls, "
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
    parser.add_argument("build", type=Path, help="directory with dnsshim_ares_diff_cares "
                                                 "and dnsshim_ares_diff")
    parser.add_argument("--mutants", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    seeds = messages_from_seeds()
    mutants = messages_from_seeds(args.mutants, args.seed)[len(seeds):]
    for label, msgs in (("seeds (vectors, malformed cases, corpus)", seeds),
                        (f"{args.mutants} mutants (seed {args.seed})", mutants)):
        c = compare(args.build / "dnsshim_ares_diff_cares", args.build / "dnsshim_ares_diff", msgs)
        print(f"{label}: {c.summary()}")
        if args.verbose:
            for kind, (path, a, b) in c.examples.items():
                print(f"    {kind}: {path}\n      c-ares: {a[:200]}\n      ours:   {b[:200]}")
        for path, hexwire, a, b in c.unexplained[:20]:
            print(f"UNEXPLAINED {hexwire}\n  c-ares: {a}\n  ours:   {b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
