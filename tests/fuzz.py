"""Coverage-guided fuzzing with atheris (libFuzzer for Python).

    python tests/fuzz.py decode|glue|reply [libFuzzer options] NEW_INPUTS_DIR [SEED_DIR...]

Targets:

* ``decode``: the decoding layer (shim.decode.decode) alone;
* ``glue``: the C glue (shim.glue.process) with an ABI-mode ffi and
  callbacks that read every field, i.e. records to structs to callbacks;
* ``reply``: the decoder checking each input against a query that has the
  input's own ID (so that every input gets past the ID check), a name, type
  and class from the input's first question when it has one, the case flag
  and a client cookie from its last octets: the matching path of
  dns_shim_process_reply.

The only allowed outcome is a status: decode may raise DnsShimError and
nothing else; glue.process must return a status that names a message
defect, OK or ERR_CALLBACK, never ERR_INTERNAL or ERR_NO_MEMORY.  Anything
else (another exception, ERR_INTERNAL, a crash, a per-input time over
-timeout) is a finding: libFuzzer writes the input to crash-*/timeout-*;
copy it into tests/regressions/ and it becomes a test.

Seed it with the shared corpus; libFuzzer writes new inputs into the first
directory, so give a writable one first:

    mkdir -p /tmp/fuzz-new
    python tests/fuzz.py glue -max_total_time=14400 -timeout=5 /tmp/fuzz-new \\
        ../shared/corpus/good ../shared/corpus/bad ../shared/corpus/captures \\
        ../shared/corpus/cares-fuzzinput

The test suite runs each target for a bounded number of inputs
(tests/test_fuzz.py).
"""

import sys
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

with atheris.instrument_imports():
    import dns.message  # noqa: F401  (instrument all of dnspython's parsing)
    import shim.decode
    import shim.glue

import cffi  # noqa: E402

from dnsshim_build import pipeline  # noqa: E402
from shim.status import DnsShimError, Status  # noqa: E402

ALLOWED_FROM_GLUE = {s for s in Status if s not in (Status.ERR_INTERNAL, Status.ERR_NO_MEMORY)}


def decode_target(data: bytes) -> None:
    try:
        shim.decode.decode(data)
    except DnsShimError:
        pass


def reply_target(data: bytes) -> None:
    import shim.match
    qname, qtype, qclass = "example.com", 1, 1
    try:
        h = shim.decode.decode(data).header
        if h.qname is not None:
            qname, qtype, qclass = h.qname.to_text(), h.qtype, h.qclass
    except DnsShimError:
        pass
    flags = data[-1] & 1 if data else 0
    cookie = data[-8:] if len(data) >= 20 and data[-9] & 1 else None
    # Outside the try: a name the library delivers must always be a valid qname.
    expected = shim.match.Expected(int.from_bytes(data[:2].ljust(2, b"\0"), "big"), qname,
                                   qtype, qclass, flags, cookie)
    try:
        shim.decode.decode(data, expected)
    except DnsShimError:
        pass


def make_glue_target():
    sys.path.insert(0, str(HERE))
    from recorder import Recorder

    ffi = cffi.FFI()
    ffi.cdef(pipeline.header_cdef())
    recorder = Recorder(ffi)

    def glue_target(data: bytes) -> None:
        recorder.calls.clear()
        buf = ffi.new("uint8_t[]", data) if data else ffi.new("uint8_t[1]")
        status = shim.glue.process(ffi, buf, len(data), recorder.struct)
        if status not in ALLOWED_FROM_GLUE:
            raise AssertionError(f"glue.process gave {status!r} for {data.hex()}")
    return glue_target


def main(argv):
    if len(argv) < 2 or argv[1] not in ("decode", "glue", "reply"):
        print(__doc__)
        return 2
    target = {"decode": decode_target, "reply": reply_target}.get(argv[1]) or make_glue_target()
    atheris.Setup([argv[0]] + argv[2:], target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
