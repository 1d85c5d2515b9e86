"""libdnsshim.so through its C ABI, from this process.

The library is loaded with cffi's ABI mode (ffi.dlopen of the built .so,
declarations from the header) and fed messages through process_dns_response
and dns_shim_process; callbacks are ffi.callback functions.  Inside, the
library runs its Python half in this same interpreter, as a guest with its
own copy of it (shim/guest.py), which the fault tests below reach through
the ``library_modules`` fixture to inject failures into it.
"""

import sys
from pathlib import Path

import pytest

import malformed
import reference
import vectors
from recorder import Recorder
from shim.status import Status

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def process(abi, wire, recorder, length=None):
    ffi, lib = abi
    return lib.dns_shim_process(wire, len(wire) if length is None else length,
                                recorder.struct if recorder else ffi.NULL)


@pytest.fixture
def glue(library_modules):
    """The glue the library runs in this process (its own copy): faults are
    injected there."""
    return library_modules["shim.glue"]


@pytest.fixture
def registered(abi):
    """process_dns_response with a Recorder registered; cleared afterwards."""
    ffi, lib = abi
    rec = Recorder(ffi)
    assert lib.dns_shim_register_callbacks(rec.struct) == Status.OK
    yield rec
    assert lib.dns_shim_register_callbacks(ffi.NULL) == Status.OK


@pytest.mark.parametrize("name", vectors.NAMES)
def test_vectors_field_by_field(abi, name):
    wire = vectors.wire(name)
    rec = Recorder(abi[0])
    status = process(abi, wire, rec)
    assert rec.lines + [f"status {status} success"] == reference.expected_log(wire)


@pytest.mark.parametrize("name", vectors.NAMES)
def test_vectors_through_registered_callbacks(abi, registered, name):
    wire = vectors.wire(name)
    status = abi[1].process_dns_response(wire, len(wire))
    assert registered.lines + [f"status {status} success"] == reference.expected_log(wire)


@pytest.mark.parametrize("case", sorted(malformed.CASES))
def test_malformed_exact_status_and_no_callback(abi, registered, case):
    wire, status = malformed.CASES[case]
    rec = Recorder(abi[0])
    assert process(abi, wire, rec) == status
    assert abi[1].process_dns_response(wire, len(wire)) == status
    assert rec.calls == [] and registered.calls == []


@pytest.mark.parametrize("case", sorted(malformed.ACCEPTED))
def test_accepted_controls(abi, case):
    wire = malformed.ACCEPTED[case]
    rec = Recorder(abi[0])
    assert process(abi, wire, rec) == Status.OK
    assert rec.lines + ["status 0 success"] == reference.expected_log(wire)


def test_nothing_registered_still_parses_and_checks(abi):
    ffi, lib = abi
    assert lib.dns_shim_register_callbacks(ffi.NULL) == Status.OK
    assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD)) == Status.OK
    bad, status = malformed.CASES["a_rdlength_5"]
    assert lib.process_dns_response(bad, len(bad)) == status


@pytest.mark.parametrize("length", [-1, INT32_MIN, 65536, 70000, INT32_MAX])
def test_bad_length(abi, registered, length):
    ffi, lib = abi
    assert lib.process_dns_response(malformed.GOOD, length) == Status.ERR_BAD_LENGTH
    assert lib.process_dns_response(ffi.NULL, length) == Status.ERR_BAD_LENGTH
    assert process(abi, malformed.GOOD, Recorder(ffi), length) == Status.ERR_BAD_LENGTH
    assert registered.calls == []


def test_null_buffer(abi, registered):
    ffi, lib = abi
    assert lib.process_dns_response(ffi.NULL, 12) == Status.ERR_NULL_BUFFER
    assert lib.dns_shim_process(ffi.NULL, 1, Recorder(ffi).struct) == Status.ERR_NULL_BUFFER
    # NULL with length 0 is an empty message: too short for a header.
    assert lib.process_dns_response(ffi.NULL, 0) == Status.ERR_SHORT_HEADER
    assert registered.calls == []


def test_length_zero_and_exact_length(abi):
    ffi, lib = abi
    assert lib.process_dns_response(malformed.GOOD, 0) == Status.ERR_SHORT_HEADER
    # Only `length` bytes are read: one byte short is a cut message.
    assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD) - 1) == Status.ERR_TRUNCATED


def test_callbacks_argument(abi):
    ffi, lib = abi
    assert process(abi, malformed.GOOD, None) == Status.ERR_BAD_ARGUMENT
    rec = Recorder(ffi)
    size = ffi.sizeof("dns_shim_callbacks")
    size_1_0 = ffi.offsetof("dns_shim_callbacks", "on_edns_option")
    for wrong in (0, 4, size_1_0 - 8, size_1_0 + 4, size - 1, size + 8, 0xFFFFFFFF):
        rec.struct.struct_size = wrong
        assert process(abi, malformed.GOOD, rec) == Status.ERR_BAD_ARGUMENT
        assert lib.dns_shim_register_callbacks(rec.struct) == Status.ERR_BAD_ARGUMENT
    rec.struct.struct_size = size
    for bits in (8, 0x80000000):
        rec.struct.sections = bits
        assert process(abi, malformed.GOOD, rec) == Status.ERR_BAD_ARGUMENT
    assert rec.calls == []
    # The argument check wins over a malformed message.
    assert process(abi, b"\x00", None) == Status.ERR_BAD_ARGUMENT


@pytest.mark.parametrize("result", [1, -1, INT32_MIN, INT32_MAX])
def test_callback_stops_dispatch(abi, result):
    wire = vectors.wire("every_type")
    rec = Recorder(abi[0], stop_at=3, result=result)
    assert process(abi, wire, rec) == Status.ERR_CALLBACK
    assert rec.lines + ["status -11 a callback stopped processing"] == \
        reference.expected_log(wire, stop_at=3)


def test_sections_and_fallback(abi):
    wire = vectors.wire("every_type")
    rec = Recorder(abi[0], sections=2, only={"on_header", "on_other"})
    assert process(abi, wire, rec) == Status.OK
    assert rec.lines + ["status 0 success"] == \
        reference.expected_log(wire, sections=2, typed=False)


# ---- failures inside the library ------------------------------------------------


def test_unexpected_exception_is_internal(abi, glue, monkeypatch, capfd):
    def broken(wire, expect=None):
        raise RuntimeError("injected: decoder bug")
    monkeypatch.setattr(glue, "decode", broken)
    rec = Recorder(abi[0])
    assert process(abi, malformed.GOOD, rec) == Status.ERR_INTERNAL
    assert rec.calls == []
    err = capfd.readouterr().err
    assert "DNS_SHIM_ERR_INTERNAL" in err and "injected: decoder bug" in err and "Traceback" in err


def test_memory_error_is_no_memory(abi, glue, monkeypatch, capfd):
    def oom(wire, expect=None):
        raise MemoryError
    monkeypatch.setattr(glue, "decode", oom)
    ffi, lib = abi
    assert process(abi, malformed.GOOD, Recorder(ffi)) == Status.ERR_NO_MEMORY
    assert ffi.string(lib.dns_shim_last_error()) == \
        b"DNS_SHIM_ERR_NO_MEMORY: memory ran out inside the library"
    # No traceback is formatted, and nothing logged, where memory ran out.
    assert capfd.readouterr().err == ""


def test_exception_escaping_the_glue_is_internal_not_zero(abi, glue, monkeypatch, capfd):
    # glue.plan never raises; if it did, cffi's default would be 0.
    def escaping(*args):
        raise RuntimeError("injected: escaped the glue")
    monkeypatch.setattr(glue, "plan", escaping)
    ffi, lib = abi
    assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD)) == Status.ERR_INTERNAL
    assert "injected: escaped the glue" in capfd.readouterr().err


def test_out_of_range_python_result_is_internal(abi, glue, monkeypatch):
    # The C side passes on only the library's own codes.
    monkeypatch.setattr(glue, "plan", lambda *args: 7)
    ffi, lib = abi
    assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD)) == Status.ERR_INTERNAL


def test_plan_naming_no_callback_is_internal(abi, glue, monkeypatch, capfd):
    kept = []

    def bad_plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query=None,
                 runtime=None):
        steps = ffi.new("dns_shim__step[]", [(3, ffi.NULL)])  # offset 3: no member
        kept.append(steps)
        out_steps[0], out_count[0], out_token[0] = steps, 1, 0
        return Status.OK
    monkeypatch.setattr(glue, "plan", bad_plan)
    rec = Recorder(abi[0])
    assert process(abi, malformed.GOOD, rec) == Status.ERR_INTERNAL
    assert rec.calls == []
    assert capfd.readouterr().err == ("dnsshim: DNS_SHIM_ERR_INTERNAL: the parser planned step 0 "
                                      "to no callback (offset 3)\n")
    assert abi[0].string(abi[1].dns_shim_last_error()) == (
        b"DNS_SHIM_ERR_INTERNAL: the parser planned step 0 to no "
        b"callback (offset 3)")


@pytest.mark.parametrize("stop_at", [0, 1, 3])
def test_every_plan_is_released(abi, glue, stop_at):
    # A plan's memory is freed by the next call into the library, whichever
    # thread makes it: so at most the last one is still held.
    for _ in range(5):
        rec = Recorder(abi[0], stop_at=stop_at)
        status = process(abi, vectors.wire("every_type"), rec)
        assert status == (Status.ERR_CALLBACK if stop_at else Status.OK)
        assert len(glue._PENDING) <= 1
    last = set(glue._PENDING)
    assert process(abi, malformed.CASES["qr_clear"][0], None) == Status.ERR_BAD_ARGUMENT
    assert abi[1].process_dns_response(b"\x00", 1) == Status.ERR_SHORT_HEADER
    assert not last & set(glue._PENDING), "released by the next call, even a failing one"


def test_internal_error_goes_to_the_log_handler(abi, glue, monkeypatch, capfd):
    ffi, lib = abi
    got = []

    @ffi.callback("void(void *, int32_t, const char *)")
    def handler(ctx, level, message):
        got.append((ctx, level, ffi.string(message).decode()))

    marker = ffi.new("int *")

    def broken(wire, expect=None):
        raise RuntimeError("injected: for the log")
    monkeypatch.setattr(glue, "decode", broken)
    lib.dns_shim_set_log_handler(handler, marker)
    try:
        assert process(abi, malformed.GOOD, Recorder(ffi)) == Status.ERR_INTERNAL
    finally:
        lib.dns_shim_set_log_handler(ffi.NULL, ffi.NULL)
    assert len(got) == 1
    ctx, level, message = got[0]
    assert ctx == marker and level == 3  # DNS_SHIM_LOG_ERROR
    assert message.startswith("DNS_SHIM_ERR_INTERNAL: unexpected error in the parser:\nTraceback")
    assert message.endswith("RuntimeError: injected: for the log")
    assert capfd.readouterr().err == ""
    # NULL restored stderr.
    assert process(abi, malformed.GOOD, Recorder(ffi)) == Status.ERR_INTERNAL
    assert "dnsshim: DNS_SHIM_ERR_INTERNAL: unexpected error" in capfd.readouterr().err


def test_set_log_handler_waits_for_the_old_handlers_calls(abi, library_modules):
    """Once dns_shim_set_log_handler returns, the handler it replaced has
    finished every call it had started and gets no other."""
    import threading
    ffi, lib = abi
    log, LOG_ERROR = library_modules["shim.embedded"].runtime().log, 3
    events, entered, release = [], threading.Event(), threading.Event()

    @ffi.callback("void(void *, int32_t, const char *)")
    def slow(ctx, level, message):
        events.append(("slow", ffi.string(message).decode()))
        entered.set()
        release.wait(10)
        events.append("slow returns")

    @ffi.callback("void(void *, int32_t, const char *)")
    def fast(ctx, level, message):
        events.append(("fast", ffi.string(message).decode()))

    lib.dns_shim_set_log_handler(slow, ffi.NULL)
    try:
        logger = threading.Thread(target=log, args=(LOG_ERROR, "in flight"))
        logger.start()
        assert entered.wait(10)

        def replace():
            lib.dns_shim_set_log_handler(fast, ffi.NULL)
            events.append("set returns")
        setter = threading.Thread(target=replace)
        setter.start()
        setter.join(0.5)
        assert setter.is_alive(), "it returned while the old handler ran"
        release.set()
        setter.join(10)
        logger.join(10)
        log(LOG_ERROR, "after")
    finally:
        release.set()
        lib.dns_shim_set_log_handler(ffi.NULL, ffi.NULL)
    assert events == [("slow", "in flight"), "slow returns", "set returns", ("fast", "after")]


def test_a_handler_that_replaces_itself_does_not_wait_for_itself(abi, library_modules):
    """A handler may set the handler: its own call is not waited for (that
    would never end), and the messages after it go to the new one."""
    import threading
    ffi, lib = abi
    log, LOG_ERROR = library_modules["shim.embedded"].runtime().log, 3
    events = []

    @ffi.callback("void(void *, int32_t, const char *)")
    def second(ctx, level, message):
        events.append(("second", ffi.string(message).decode()))

    @ffi.callback("void(void *, int32_t, const char *)")
    def first(ctx, level, message):
        events.append(("first", ffi.string(message).decode()))
        lib.dns_shim_set_log_handler(second, ffi.NULL)
        events.append("replaced")

    lib.dns_shim_set_log_handler(first, ffi.NULL)
    try:
        logger = threading.Thread(target=lambda: (log(LOG_ERROR, "one"), log(LOG_ERROR, "two")))
        logger.start()
        logger.join(10)
        assert not logger.is_alive(), "the handler that set the handler never returned"
    finally:
        lib.dns_shim_set_log_handler(ffi.NULL, ffi.NULL)
    assert events == [("first", "one"), "replaced", ("second", "two")]


def test_warnings_and_unraisable_hooks():
    import gc
    import warnings
    from shim import embedded
    logged = []
    saved = (warnings.showwarning, sys.unraisablehook)
    try:
        embedded.install_log_hooks(lambda level, text: logged.append((level, text)))
        warnings.warn("injected warning", RuntimeWarning)

        class Noisy:
            def __del__(self):
                raise ValueError("injected from __del__")
        Noisy()
        gc.collect()
    finally:
        warnings.showwarning, sys.unraisablehook = saved
    assert logged[0][0] == 4 and "RuntimeWarning: injected warning" in logged[0][1]
    assert logged[1][0] == 3 and "ValueError: injected from __del__" in logged[1][1]


_DLCLOSE_CHILD = """
import gc, sys
import cffi
sys.path[:0] = [sys.argv[2], sys.argv[2] + "/tests"]
import malformed
from dnsshim_build import pipeline
ffi = cffi.FFI()
ffi.cdef(pipeline.header_cdef())
lib = ffi.dlopen(sys.argv[1])
wire = ffi.new("uint8_t[]", malformed.GOOD)
print("first", lib.process_dns_response(wire, len(malformed.GOOD)))
del lib, ffi  # the handle is dropped: dlclose()
gc.collect()
# The module the first call created, whose type tables live in the library:
module = sys.modules["_dnsshim_cffi"]
print("after", module.ffi.sizeof("dns_shim_header"),
      module.lib.process_dns_response(wire, len(malformed.GOOD)))
"""


def test_library_outlives_a_dlclose_in_a_host_python(built, header_ffi):
    """A host Python that loads the library, calls it and drops the handle:
    the cffi module the call created (and its functions, in the library)
    live on in the interpreter, so the library must stay mapped (linked
    -z nodelete); without it this child crashes."""
    import subprocess
    dyn = subprocess.run(["readelf", "-d", str(built.lib)], capture_output=True, text=True,
                         check=True).stdout
    assert "NODELETE" in dyn
    result = subprocess.run([sys.executable, "-c", _DLCLOSE_CHILD, str(built.lib),
                             str(Path(__file__).resolve().parent.parent)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "first 0", f"after {header_ffi.sizeof('dns_shim_header')} 0"]
