"""A seeded mutator of DNS messages, and the agreement check with dnspython.

    python tests/mutator.py [--mutants N] [--seed S] [--corpus DIR] [--driver PROGRAM]

runs N mutants (default 1,000,000) of every seed message and reports any
disagreement between the shim and ``dns.message.from_wire``; the test suite
runs a bounded number of them (tests/test_agreement.py).  With ``--driver
DIR/dnsshim_test`` (``python tests/cprograms.py DIR`` builds it against the
library in DIR) every mutant goes through libdnsshim.so from C, else through
the decoder.  Agreement is exact: a message both accept has the same records
(from C: the same callback lines, ``reference.expected_log``); a message
both reject has the status that dnspython's verdict names
(tests/expected_status.py), not merely some rejection.  dnspython's verdict
on each mutant comes from a fresh process (tests/fresh_reference.py): dnspython's
registry remembers what it parsed, so a reference sharing one process with
many inputs would be judged by its history.

Mutations: bit flips, byte inserts and deletes, truncation, header count
edits, label length edits, compression pointer rewrites and RDLENGTH edits;
one to three per mutant.  The structural ones use the positions of labels,
pointers and RDLENGTH fields found by walking the seed.

Documented differences (the shim is meant to differ here):

* QR clear: the shim rejects every query with ERR_NOT_RESPONSE;
* TSIG: the shim does not verify it (dnspython without a keyring raises
  UnknownTSIGKey); the reference is ``from_wire(keyring=False)``;
* length over 65535: ERR_BAD_LENGTH at the C boundary (the decoder itself
  does not look at the length).
"""

import argparse
import os
import random
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import expected_status  # noqa: E402
import reference  # noqa: E402
from shim.decode import decode  # noqa: E402
from shim.status import DnsShimError, Status  # noqa: E402


def _walk_name(wire, p, labels, pointers):
    while p < len(wire):
        n = wire[p]
        if n >= 0xC0:
            pointers.append(p)
            return p + 2
        labels.append(p)
        if n == 0:
            return p + 1
        p += n + 1
    return p


def positions(wire):
    """(label length offsets, pointer offsets, RDLENGTH offsets) of a message
    that parses (best effort: stops at the first thing it cannot walk)."""
    labels, pointers, rdlengths = [], [], []
    try:
        counts = struct.unpack_from("!4H", wire, 4)
        p = 12
        for _ in range(counts[0]):
            p = _walk_name(wire, p, labels, pointers) + 4
        for _ in range(sum(counts[1:])):
            p = _walk_name(wire, p, labels, pointers) + 8
            rdlengths.append(p)
            p += 2 + struct.unpack_from("!H", wire, p)[0]
    except struct.error:
        pass
    return labels, pointers, rdlengths


class Mutator:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def mutate(self, wire: bytes, where) -> bytes:
        out = bytearray(wire)
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.randrange(8)
            getattr(self, ("flip", "insert", "delete", "truncate", "count", "label", "pointer",
                           "rdlength")[op])(out, where)
        return bytes(out)

    def _pos(self, out, extra=0):
        return self.rng.randrange(len(out) + extra) if len(out) + extra else 0

    def flip(self, out, where):
        if out:
            out[self._pos(out)] ^= 1 << self.rng.randrange(8)

    def insert(self, out, where):
        p = self._pos(out, 1)
        out[p:p] = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 4)))

    def delete(self, out, where):
        if out:
            p = self._pos(out)
            del out[p:p + self.rng.randint(1, 4)]

    def truncate(self, out, where):
        del out[self._pos(out, 1):]

    def count(self, out, where):
        if len(out) >= 12:
            p = 4 + 2 * self.rng.randrange(4)
            old = struct.unpack_from("!H", out, p)[0]
            new = self.rng.choice((0, 1, old + 1, max(old - 1, 0), 65535, self.rng.randrange(65536)))
            struct.pack_into("!H", out, p, new & 0xFFFF)

    def label(self, out, where):
        offsets = [p for p in where[0] if p < len(out)]
        if offsets:
            p = self.rng.choice(offsets)
            out[p] = self.rng.choice((0, 1, 63, 64, 0x40 | self.rng.randrange(64),
                                      0x80 | self.rng.randrange(64), (out[p] + 1) & 0xFF,
                                      max(out[p] - 1, 0), self.rng.randrange(256)))

    def pointer(self, out, where):
        offsets = [p for p in where[1] if p + 1 < len(out)]
        if offsets:
            p = self.rng.choice(offsets)
            target = self.rng.choice((p, p + 2, p - 1, 12, len(out), self.rng.randrange(0x4000),
                                      max(((out[p] & 0x3F) << 8 | out[p + 1]) - 1, 0)))
            struct.pack_into("!H", out, p, 0xC000 | (target & 0x3FFF))

    def rdlength(self, out, where):
        offsets = [p for p in where[2] if p + 1 < len(out)]
        if offsets:
            p = self.rng.choice(offsets)
            old = struct.unpack_from("!H", out, p)[0]
            new = self.rng.choice((0, old + 1, max(old - 1, 0), old + 16, 65535, old // 2))
            struct.pack_into("!H", out, p, new & 0xFFFF)


def expected_status_of(wire, ref, c_boundary=True):
    """The status a message must get from the reference's verdict alone
    (tests/expected_status.py): 0 when dnspython accepts it and nothing is
    decided before dnspython; None when dnspython rejects it with a
    ``FormError`` whose rule the framing walk does not find.  c_boundary:
    whether the length is checked (process_dns_response's ERR_BAD_LENGTH; the
    decoder itself does not look at the length)."""
    status = expected_status.before_dnspython(wire)
    if status == Status.ERR_BAD_LENGTH and not c_boundary:
        status = expected_status.before_dnspython(wire[:12]) if len(wire) >= 12 else None
    if status is not None:
        return status
    if "error" not in ref:
        return Status.OK
    return expected_status.rejected_status(wire, ref["error"])


def status_line(status) -> str:
    """The status line dnsshim_test prints, its text written by hand
    (tests/test_status.py), not read from the library."""
    from test_status import TEXTS
    return f"status {int(status)} {TEXTS[status]}"


def expected_log(wire, ref):
    """What ``dnsshim_test --registered`` prints for `wire` (without its
    "# N" line): the reference's log when the message is accepted, else the
    one status line; None when no rule names the status."""
    status = expected_status_of(wire, ref)
    if status is None:
        return None
    return ref["log"] if status == Status.OK else [status_line(status)]


def c_disagreement(wire, ref, log):
    """None when `log`, the lines the C driver printed for `wire` through
    libdnsshim.so, is exactly what the reference's verdict `ref` says, else
    a description."""
    if "crash" in ref:
        return f"the reference crashed: {ref['crash']}"
    want = expected_log(wire, ref)
    got = log[-1] if log else "no status line"
    if want is None:
        return f"dnspython's {ref['error']} names no rule to check {got!r} against"
    if log == want:
        return None
    if want[-1] != got:
        return f"C {got!r} vs expected {want[-1]!r} (dnspython {ref.get('error', 'accepted')})"
    return "dispatched records differ"


def disagreement(wire, ref=None):
    """None when the shim's decoder and dnspython agree on `wire`, else a
    description: both accept it with the same records, header and EDNS
    options, or both reject it and the decoder's status is the one the
    reference's verdict names (:func:`expected_status_of`).

    ref: dnspython's verdict on `wire` (:func:`reference.verdict`), from a
    fresh process; computed here when not given.
    """
    if ref is None:
        ref = reference.verdict(wire)
    if "crash" in ref:
        return f"the reference crashed: {ref['crash']}"
    try:
        mine = decode(wire)
    except DnsShimError as e:
        mine = e
    want = expected_status_of(wire, ref, c_boundary=False)
    if want is None:
        return f"dnspython's {ref['error']} names no rule to check {mine!r} against"
    if want != Status.OK or isinstance(mine, Exception):
        if isinstance(mine, DnsShimError) and int(mine.status) == int(want):
            return None
        return f"shim {mine!r} vs expected {Status(want).name} (dnspython {ref.get('error', 'accepted')})"
    mine_tuples = [[int(r.section), r.index, r.name.to_text(omit_final_dot=True), r.rdtype,
                    r.rdclass, r.ttl, (r.rdata.to_wire() if r.rdata is not None else b"").hex()]
                   for r in mine.records]
    if mine_tuples != ref["records"]:
        return "records differ"
    h = mine.header
    if [h.rcode, h.edns_version, h.edns_flags] != ref["header"]:
        return "header differs"
    mine_options = [[15, o.ede_info_code, o.ede_text.hex()] if o.code == 15
                    else [o.code, o.data.hex()] for o in h.options]
    if "options" in ref and mine_options != ref["options"]:
        return "EDNS options differ"
    return None


def run_driver(driver, wires, timeout=900):
    """The wires through ``dnsshim_test --registered --stream -`` (`driver`,
    tests/c/dnsshim_test.c, built against the library under test): each
    message passed to process_dns_response, the registered callbacks
    printing what they receive.  Returns (one list of lines per message, in
    order; the driver's exit status; its stderr)."""
    import subprocess

    import fresh_reference as fresh
    result = subprocess.run([str(driver), "--registered", "--stream", "-"],
                            input=fresh.frame(wires), capture_output=True, timeout=timeout)
    logs = []
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("# "):
            if int(line[2:]) != len(logs):
                raise RuntimeError(f"the driver printed {line!r} after {len(logs)} messages")
            logs.append([])
        elif logs:
            logs[-1].append(line)
        else:
            raise RuntimeError(f"the driver printed {line!r} before its first message")
    return logs, result.returncode, result.stderr.decode("utf-8", "replace")


DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus"


def corpus_present(corpus: Path = None) -> bool:
    return (corpus or DEFAULT_CORPUS).is_dir()


def seeds(corpus: Path = None):
    """The seed messages: the test vectors, the malformed-input cases and
    accepted controls, and the shared corpus when present."""
    import malformed
    import vectors
    out = [vectors.wire(n) for n in vectors.NAMES]
    out += [w for w, _ in malformed.CASES.values()] + list(malformed.ACCEPTED.values())
    corpus = corpus or DEFAULT_CORPUS
    for folder in ("good", "bad", "captures", "cares-fuzzinput"):
        d = corpus / folder
        if d.is_dir():
            out += [p.read_bytes() for p in sorted(d.iterdir())
                    if p.is_file() and p.suffix not in (".txt", ".tsv")]
    return [w for w in out if len(w) <= 65535]


BIG = 16384


def mutants(count: int, seed: int, corpus: Path = None) -> list:
    """`count` mutants of the seeds, round-robin (those over 16 KiB, slow to
    parse, once every 20 rounds)."""
    mutator = Mutator(seed)
    base = seeds(corpus)
    where = [positions(w) for w in base]
    small = [k for k, w in enumerate(base) if len(w) <= BIG]
    schedule = small * 20 + [k for k, w in enumerate(base) if len(w) > BIG]
    return [mutator.mutate(base[k], where[k])
            for k in (schedule[i % len(schedule)] for i in range(count))]


def run(count: int, seed: int, corpus: Path = None, report=print, jobs=2, batch=50_000,
        driver=None):
    """Compare the shim with dnspython (in fresh processes, `jobs` at a time)
    on `count` mutants; return (disagreements, count accepted by both).
    With `driver` (a dnsshim_test built against the library), each mutant
    goes through libdnsshim.so from C (:func:`c_disagreement`); else through
    the decoder (:func:`disagreement`)."""
    import fresh_reference as fresh
    found, accepted = [], 0
    wires = mutants(count, seed, corpus)
    for start in range(0, len(wires), batch):
        chunk = wires[start:start + batch]
        refs = fresh.results("reference", chunk, jobs)
        if driver is not None:
            logs, code, errors = run_driver(driver, chunk)
            if code != 0 or len(logs) != len(chunk):
                problem = f"the driver exited {code} after {len(logs)} of {len(chunk)}: {errors}"
                found.append((b"", problem))
                report(f"DRIVER {problem}")
                logs += [[]] * (len(chunk) - len(logs))
        for k, (wire, ref) in enumerate(zip(chunk, refs)):
            if driver is not None:
                problem = c_disagreement(wire, ref, logs[k])
                ok = not problem and logs[k][-1] == status_line(Status.OK)
            else:
                problem = disagreement(wire, ref)
                ok = not problem and "error" not in ref and _accepted(wire)
            if problem is not None:
                found.append((wire, problem))
                report(f"DISAGREE {problem}: {wire.hex()}")
            accepted += ok
    return found, accepted


def _accepted(wire) -> bool:
    try:
        decode(wire)
        return True
    except DnsShimError:
        return False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                        help="fresh reference processes at a time")
    parser.add_argument("--driver", type=Path,
                        help="dnsshim_test built against the library (python tests/cprograms.py "
                             "DIR): every mutant through libdnsshim.so from C; without it, "
                             "through the decoder")
    args = parser.parse_args(argv)
    found, accepted = run(args.mutants, args.seed, args.corpus, jobs=args.jobs,
                          driver=args.driver)
    print(f"{args.mutants} mutants, {accepted} accepted by both, {len(found)} disagreements")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
