"""The C glue alone: records to the header's structs to callbacks.

These tests drive shim.glue.process with an ABI-mode ffi built from the same
header and callbacks made with ffi.callback, without the library: what the
glue hands to C, and how it turns every failure into a status.
"""

import pytest

import malformed
import reference
import vectors
from recorder import Recorder
from shim import decode as decode_module
from shim import glue, rdtable
from shim.status import Status


def run(ffi, wire, recorder, runtime=None):
    buf = ffi.new("uint8_t[]", wire) if wire else ffi.new("uint8_t[1]")
    return glue.process(ffi, buf, len(wire), recorder.struct if recorder else ffi.NULL,
                        runtime=runtime)


def test_order_and_sections(header_ffi):
    wire = vectors.wire("every_type")
    rec = Recorder(header_ffi, sections=0)  # 0 means the answer section only
    assert run(header_ffi, wire, rec) == Status.OK
    assert rec.calls[0][0] == "on_header"
    assert [line.split()[1:3] for line in rec.lines[1:]] == [
        ["sec=1", f"idx={i}"] for i in range(13)]
    rec = Recorder(header_ffi, sections=4 | 2)
    assert run(header_ffi, wire, rec) == Status.OK
    assert [line.split()[1] for line in rec.lines[1:]] == ["sec=2"] * 13 + ["sec=4"] * 13


def test_null_typed_callback_falls_back_to_on_other(header_ffi):
    rec = Recorder(header_ffi, only={"on_a", "on_other"})
    assert run(header_ffi, vectors.wire("every_type"), rec) == Status.OK
    members = [m for m, _ in rec.calls]
    assert members.count("on_a") == 3 and members.count("on_other") == 36


def test_other_rdata_is_nul_terminated_wire_form(header_ffi):
    rec = Recorder(header_ffi, only={"on_other"})
    assert run(header_ffi, malformed.GOOD, rec) == Status.OK
    assert rec.lines == ["other sec=1 idx=0 owner=example.com type=1 class=1 ttl=300 rdata=c0000201"]


def test_nothing_called_without_callbacks_or_with_all_null(header_ffi):
    assert run(header_ffi, malformed.GOOD, None) == Status.OK
    rec = Recorder(header_ffi, only=set())
    assert run(header_ffi, malformed.GOOD, rec) == Status.OK and rec.calls == []


@pytest.mark.parametrize("name", vectors.NAMES)
def test_vectors_field_by_field(header_ffi, name):
    wire = vectors.wire(name)
    rec = Recorder(header_ffi)
    status = run(header_ffi, wire, rec)
    assert rec.lines + [f"status {int(status)} success"] == reference.expected_log(wire)


@pytest.mark.parametrize("result", [1, -1, -(2**31), 2**31 - 1])
def test_nonzero_callback_result_stops_dispatch(header_ffi, result):
    rec = Recorder(header_ffi, stop_at=2, result=result)
    assert run(header_ffi, vectors.wire("every_type"), rec) == Status.ERR_CALLBACK
    assert len(rec.calls) == 2


@pytest.mark.parametrize("case", sorted(malformed.CASES))
def test_malformed_calls_nothing(header_ffi, case):
    wire, status = malformed.CASES[case]
    rec = Recorder(header_ffi)
    assert run(header_ffi, wire, rec) == status
    assert rec.calls == []


def test_unknown_section_bits(header_ffi):
    rec = Recorder(header_ffi, sections=8)
    assert run(header_ffi, malformed.GOOD, rec) == Status.ERR_BAD_ARGUMENT
    assert rec.calls == []


def test_unexpected_exception_is_internal_and_reported(header_ffi, monkeypatch, capfd):
    def broken(*args):
        raise RuntimeError("injected fault in the C glue")
    monkeypatch.setitem(glue.TYPED, 1, ("on_a", broken))  # type 1: A
    rec = Recorder(header_ffi)
    assert run(header_ffi, malformed.GOOD, rec) == Status.ERR_INTERNAL
    assert rec.calls == [], "the fault came before the first callback"
    err = capfd.readouterr().err
    assert "DNS_SHIM_ERR_INTERNAL" in err and "injected fault in the C glue" in err
    assert "Traceback" in err


def test_memory_error_while_converting_is_no_memory(header_ffi, monkeypatch, capfd):
    real_init = glue._Converter.__init__
    count = [0]

    def init(self, ffi):
        real_init(self, ffi)
        real_new = self.new

        def failing_new(ctype, init):
            count[0] += 1
            if count[0] == 3:
                raise MemoryError
            return real_new(ctype, init)
        self.new = failing_new
    monkeypatch.setattr(glue._Converter, "__init__", init)
    failures = []
    rec = Recorder(header_ffi)
    assert run(header_ffi, vectors.wire("every_type"), rec,
               glue.Runtime(failure=failures.append)) == Status.ERR_NO_MEMORY
    assert count[0] == 3
    assert rec.calls == [], "all or nothing: no callback before every struct is built"
    assert failures == ["DNS_SHIM_ERR_NO_MEMORY: memory ran out inside the library"]
    # no traceback is formatted, nor anything logged, where memory ran out
    assert capfd.readouterr().err == ""


def test_memory_error_inside_dnspython_rdata_parser_is_no_memory(header_ffi, monkeypatch):
    import dns.rdtypes.IN.A

    def oom(*args, **kwargs):
        raise MemoryError
    # dnspython wraps any exception of an rdata parser in FormError: the
    # decoder must not report that as malformed RDATA.
    monkeypatch.setattr(dns.rdtypes.IN.A.A, "from_wire_parser", classmethod(oom))
    monkeypatch.setattr(rdtable, "_PARSERS", {})  # forget the real one
    assert run(header_ffi, malformed.GOOD, Recorder(header_ffi)) == Status.ERR_NO_MEMORY


def _all_accepted_messages():
    from conftest import available_corpus
    out = [vectors.wire(n) for n in vectors.NAMES] + list(malformed.ACCEPTED.values())
    for path in available_corpus("good", "captures", "cares-fuzzinput"):
        out.append(path.read_bytes())
    return out


def test_verbatim_rdata_is_what_dnspython_re_encodes():
    from shim.decode import decode
    from shim.status import DnsShimError
    checked = 0
    for wire in _all_accepted_messages():
        try:
            records = decode(wire).records
        except DnsShimError:
            continue
        for rec in records:
            if rec.rdata is not None and rec.rdata_wire is not None \
                    and isinstance(rec.rdata, glue._verbatim_types()):
                assert rec.rdata_wire == rec.rdata.to_wire(), rec
                checked += 1
    from conftest import available_corpus
    assert checked >= (30 if available_corpus("good") else 10)


def test_rdata_with_a_compressed_name_has_no_wire_copy():
    from shim.decode import decode
    cname = decode(malformed.ACCEPTED["srv_target_compressed"]).records[0]
    assert cname.rdata_wire is None
    a = decode(malformed.GOOD).records[0]
    assert a.rdata_wire == bytes([192, 0, 2, 1])


@pytest.mark.parametrize("size", [1, 2, 3])
def test_name_cache_overflow_keeps_every_text_alive(header_ffi, monkeypatch, size):
    # The cache is emptied when full, even in the middle of a message: the
    # texts a message already handed out must stay alive until it is done.
    import gc
    monkeypatch.setattr(glue, "NAME_CACHE_SIZE", size)
    wire = vectors.wire("every_type")
    for _ in range(3):
        rec = Recorder(header_ffi)
        buf = header_ffi.new("uint8_t[]", wire)
        conv, calls = glue.prepare(header_ffi, decode_module.decode(wire), rec.struct)
        gc.collect()
        # Scribble over freed memory by allocating many strings of other names.
        junk = [header_ffi.new("char[]", b"X" * 40) for _ in range(2000)]
        for member, arg in calls:
            getattr(rec.struct, member)(rec.struct.ctx, arg)
        del junk
        assert rec.lines + ["status 0 success"] == reference.expected_log(wire)
        assert buf


def test_svcb_and_https_verbatim_on_every_accepted_mutant():
    """SVCB and HTTPS RDATA go to on_other as read: for the parameter kinds
    dnspython knows (ech aside: it must be a valid ECHConfigList, kept as
    bytes), and for every seeded mutant of them it accepts, the bytes read
    are the bytes it re-encodes."""
    import random

    import dns.message
    import dns.rdtypes.svcbbase
    import dns.rrset

    from shim.decode import decode
    from shim.status import DnsShimError

    query = dns.message.make_query("example.org.", "HTTPS")
    response = dns.message.make_response(query)
    for rdtype, text in (
            ("HTTPS", "0 Alias.Example.org."),
            ("HTTPS", '1 . mandatory="alpn,ipv4hint" alpn="h2,h3" no-default-alpn port=8443 '
                      'ipv4hint=192.0.2.1,192.0.2.2 ipv6hint=2001:db8::1 '
                      'key65000="x\\001y"'),
            ("SVCB", '2 Svc.Example.org. alpn="dot" port=853 ohttp docpath="/dns-query{?dns}"'),
            ("SVCB", "3 . key7=\"\" key65535")):
        response.answer.append(dns.rrset.from_text("example.org.", 60, "IN", rdtype, text))
    wire = bytearray(response.to_wire())
    rng = random.Random(11)
    checked = 0
    for n in range(3000):
        mutant = bytearray(wire)
        if n:
            for _ in range(rng.randint(1, 3)):
                i = rng.randrange(12, len(mutant))
                mutant[i] = rng.choice([mutant[i] ^ (1 << rng.randrange(8)), rng.randrange(256)])
        try:
            records = decode(bytes(mutant)).records
        except DnsShimError:
            continue
        for rec in records:
            if isinstance(rec.rdata, dns.rdtypes.svcbbase.SVCBBase) and rec.rdata_wire is not None:
                assert isinstance(rec.rdata, glue._verbatim_types())
                assert rec.rdata_wire == rec.rdata.to_wire(), (n, rec)
                checked += 1
    assert checked > 1000


def test_unexpected_failure_goes_to_the_runtime_passed_in(header_ffi, monkeypatch, capfd):
    def broken(wire, expect=None):
        raise RuntimeError("injected: for the runtime")
    monkeypatch.setattr(glue, "decode", broken)
    logged, failures = [], []
    runtime = glue.Runtime(log=lambda level, text: logged.append((level, text)),
                           failure=failures.append)
    assert run(header_ffi, vectors.wire("every_type"), Recorder(header_ffi),
               runtime) == Status.ERR_INTERNAL
    assert [level for level, _ in logged] == [glue.LOG_ERROR]
    assert "injected: for the runtime" in logged[0][1] and "Traceback" in logged[0][1]
    assert failures == ["DNS_SHIM_ERR_INTERNAL: RuntimeError: injected: for the runtime "
                        "(the traceback is logged)"]
    assert capfd.readouterr().err == "", "the runtime's log, not the standalone stderr"
    # Without a runtime: the standalone one, stderr and no reason kept.
    assert run(header_ffi, vectors.wire("every_type"), Recorder(header_ffi)) == \
        Status.ERR_INTERNAL
    assert "injected: for the runtime" in capfd.readouterr().err
    assert len(failures) == 1
