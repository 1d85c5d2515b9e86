"""Results from a fresh process for every message: the history-free reference.

    python tests/fresh_reference.py KIND [--jobs N] STREAM > RESULTS

STREAM holds messages, each preceded by its length as 4 octets, big-endian
(the format of ``dnsshim_test --stream``).  This process imports what KIND
needs and parses nothing itself; for each message it forks a child that
computes KIND's result for that message alone and exits.  So each result is
what a process that has parsed nothing before gives, whatever the others
are: a differential that shared one process with the code under test would
share its poison (dnspython's own registry is changed by what it
parses).  RESULTS is one JSON value per line, in the order of STREAM.

KINDs:

* ``reference``: dnspython's verdict, :func:`reference.verdict`
  (``dns.message.from_wire``);
* ``api``: the Python API's, :func:`api_result` (``shim.parse_response``).

The C library has the same reference built in: ``dnsshim_test --stream
--fresh`` forks a child per message after starting the runtime.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]


def frame(wires) -> bytes:
    """The STREAM form of a list of messages."""
    return b"".join(struct.pack("!I", len(w)) + w for w in wires)


def unframe(data: bytes) -> list:
    out, p = [], 0
    while p < len(data):
        (size,) = struct.unpack_from("!I", data, p)
        out.append(data[p + 4:p + 4 + size])
        p += 4 + size
    return out


def api_result(wire: bytes) -> str:
    """``shim.parse_response(wire)`` as text: the response's repr (every
    field of every record), the status it raised, or (a bug) whatever else
    it raised."""
    import shim
    try:
        return repr(shim.parse_response(wire))
    except shim.DnsShimError as e:
        return f"{type(e).__name__}({int(e.status)}): {e}"
    except Exception as e:  # noqa: BLE001 - a result to compare, not to hide
        return f"unexpected {type(e).__name__}: {e}"


def _import_rdata_modules():
    """Imports every dnspython RDATA module, as a child would on first use:
    importing one registers nothing (dnspython's registry is filled by
    lookups, not imports; the forks still start with it as it is now,
    empty), so this only saves each child the import time."""
    import importlib

    from shim import rdtable
    for package, names in (("IN", rdtable.IN_MODULES), ("CH", rdtable.CH_MODULES),
                           ("ANY", rdtable.ANY_MODULES)):
        for name in names:
            importlib.import_module(f"dns.rdtypes.{package}.{name}")


def _kind(name):
    _import_rdata_modules()
    if name == "reference":
        import reference
        return reference.verdict
    if name == "api":
        import shim.api  # noqa: F401 - imported before the forks, as a fresh process would
        return api_result
    raise SystemExit(f"unknown kind {name!r}")


def _child(compute, wire, path):
    try:
        result = compute(wire)
    except BaseException as e:  # noqa: B902 - reported, not raised in a fork
        result = {"crash": f"{type(e).__name__}: {e}"}
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(result))


def run(compute, wires, jobs=2):
    """compute(wire) for each wire, each in its own forked child, up to
    `jobs` at a time; the results in order."""
    import tempfile
    results = [None] * len(wires)
    running = {}  # pid -> index
    with tempfile.TemporaryDirectory(prefix="dnsshim-fresh-") as tmp:
        def reap():
            pid, status = os.wait()
            index = running.pop(pid)
            path = os.path.join(tmp, str(index))
            if status != 0 or not os.path.exists(path):
                raise RuntimeError(f"the child for message {index} ended with status {status}")
            with open(path, encoding="utf-8") as f:
                results[index] = json.load(f)
            os.remove(path)

        for index, wire in enumerate(wires):
            while len(running) >= jobs:
                reap()
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    _child(compute, wire, os.path.join(tmp, str(index)))
                finally:
                    os._exit(0)
            running[pid] = index
        while running:
            reap()
    return results


#: Where results(cache=True) keeps what it computed.
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dnsshim" \
    / "fresh-reference"
#: The entries kept there: the most recently used.
CACHE_KEEP = 4


def cache_key(kind: str, stream: bytes) -> str:
    """What a kind's results for a stream are a function of: the messages,
    the interpreter's version, dnspython's code, and this project's code
    that computes them (this file, reference.py, and the shim package,
    whose rdtable lists the modules and whose API is the ``api`` kind);
    not where any of them is, so that another clone or virtualenv of the
    same finds them."""
    import hashlib

    import dns

    digest = hashlib.sha256()
    digest.update(f"{kind}\0{sys.version}\0".encode())
    dnspython = Path(dns.__file__).parent
    for source in [HERE / "fresh_reference.py", HERE / "reference.py",
                   *sorted((HERE.parent / "shim").glob("*.py")),
                   *sorted(dnspython.rglob("*.py"))]:
        name = source.relative_to(dnspython) if source.is_relative_to(dnspython) else source.name
        digest.update(f"{name}\0".encode() + source.read_bytes())
    digest.update(stream)
    return digest.hexdigest()


def results(kind: str, wires, jobs=2, cache=False) -> list:
    """Runs this file in a new interpreter (one that has parsed nothing) and
    returns its results for `wires`.  With cache, the results are kept under
    CACHE by cache_key() (the same messages, interpreter, dnspython and code
    give the same fresh verdicts) and taken from there the next time."""
    import tempfile
    stream = frame(wires)
    path = CACHE / f"{kind}-{cache_key(kind, stream)}.json" if cache else None
    if path is not None and path.is_file():
        try:
            kept = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            kept = None
        if isinstance(kept, list) and len(kept) == len(wires):
            os.utime(path)
            return kept
    with tempfile.NamedTemporaryFile(prefix="dnsshim-fresh-", suffix=".stream") as f:
        f.write(stream)
        f.flush()
        out = subprocess.run([sys.executable, str(Path(__file__)), kind, "--jobs", str(jobs),
                              f.name], capture_output=True, text=True, check=True)
    found = [json.loads(line) for line in out.stdout.splitlines()]
    if path is not None and len(found) == len(wires):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(found), encoding="utf-8")
        os.replace(tmp, path)
        entries = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-CACHE_KEEP]:
            old.unlink(missing_ok=True)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("reference", "api"))
    parser.add_argument("stream", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    compute = _kind(args.kind)
    import gc
    gc.freeze()  # the children share the parent's objects without copying them
    for result in run(compute, unframe(args.stream.read_bytes()), args.jobs):
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
