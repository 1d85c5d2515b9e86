"""Coverage-guided fuzzing with atheris (libFuzzer for Python).

    python tests/fuzz.py decode|glue [libFuzzer options] NEW_INPUTS_DIR [SEED_DIR...]

Targets:

* ``decode``: the decoding layer (shim.decode.decode) alone;
* ``glue``: the C glue (shim.glue.process) with an ABI-mode ffi and
  callbacks that read every field, i.e. records to structs to callbacks.

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

import build_ffi  # noqa: E402
from shim.status import DnsShimError, Status  # noqa: E402

ALLOWED_FROM_GLUE = {s for s in Status if s not in (Status.ERR_INTERNAL, Status.ERR_NO_MEMORY)}


def decode_target(data: bytes) -> None:
    try:
        shim.decode.decode(data)
    except DnsShimError:
        pass


def make_glue_target():
    sys.path.insert(0, str(HERE))
    from recorder import Recorder

    ffi = cffi.FFI()
    ffi.cdef(build_ffi.header_cdef())
    recorder = Recorder(ffi)

    def glue_target(data: bytes) -> None:
        recorder.calls.clear()
        buf = ffi.new("uint8_t[]", data) if data else ffi.new("uint8_t[1]")
        status = shim.glue.process(ffi, buf, len(data), recorder.struct)
        if status not in ALLOWED_FROM_GLUE:
            raise AssertionError(f"glue.process gave {status!r} for {data.hex()}")
    return glue_target


def main(argv):
    if len(argv) < 2 or argv[1] not in ("decode", "glue"):
        print(__doc__)
        return 2
    target = decode_target if argv[1] == "decode" else make_glue_target()
    atheris.Setup([argv[0]] + argv[2:], target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
