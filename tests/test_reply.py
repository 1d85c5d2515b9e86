"""ABI 1.1: a response checked against its query, and the EDNS options.

Every case of :mod:`mismatch` (one per kind of mismatch, the matches beside
them, the order of the checks) with its exact status through each layer: the
decoder (shim.decode with shim.match.Expected), the C glue (glue.process
with a dns_shim_query), the library's ABI (dns_shim_process_reply), the C test
program (dnsshim_test --expect-*) and the Python API (parse_response(expect=)).
Then what on_edns_option gets, field by field, and when.
"""

import subprocess

import pytest

import malformed
import mismatch
import reference
import vectors
from conftest import run_test_prog, split_log
from recorder import Recorder
from shim import api, glue
from shim.decode import decode
from shim.match import MATCH_CASE, Expected
from shim.status import DnsShimError, Status
from wire import option, with_options


def query_of(changes):
    return dict(mismatch.QUERY, **changes)


def c_query(ffi, q):
    """A dns_shim_query for q, and what keeps its pointers alive."""
    qname = ffi.new("char[]", q["qname"].encode("utf-8"))
    cookie = ffi.new("uint8_t[8]", q["cookie_client"]) if q["cookie_client"] else ffi.NULL
    struct = ffi.new("dns_shim_query *", {
        "struct_size": ffi.sizeof("dns_shim_query"), "id": q["id"], "qname": qname,
        "qtype": q["qtype"], "qclass": q["qclass"],
        "flags": MATCH_CASE if q["match_case"] else 0, "cookie_client": cookie})
    return struct, (qname, cookie)


def expected_lines(wire, status):
    if status == Status.OK:
        return reference.expected_log(wire)
    return None


def decoder_status(wire, q):
    try:
        decode(wire, Expected(q["id"], q["qname"], q["qtype"], q["qclass"],
                              MATCH_CASE if q["match_case"] else 0, q["cookie_client"]))
        return Status.OK
    except DnsShimError as e:
        return e.status


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_decoder(case):
    wire, changes, status = mismatch.CASES[case]
    assert decoder_status(wire, query_of(changes)) == status


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_glue(header_ffi, case):
    wire, changes, status = mismatch.CASES[case]
    query, keep = c_query(header_ffi, query_of(changes))
    rec = Recorder(header_ffi)
    buf = header_ffi.new("uint8_t[]", wire)
    assert glue.process(header_ffi, buf, len(wire), rec.struct, query) == status
    if status == Status.OK:
        assert rec.lines + ["status 0 success"] == reference.expected_log(wire)
    else:
        assert rec.calls == []


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_library(abi, case):
    ffi, lib = abi
    wire, changes, status = mismatch.CASES[case]
    query, keep = c_query(ffi, query_of(changes))
    rec = Recorder(ffi)
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == status
    if status == Status.OK:
        assert rec.lines + ["status 0 success"] == reference.expected_log(wire)
    else:
        assert rec.calls == []
    # NULL callbacks: the registered set.
    registered = Recorder(ffi)
    assert lib.dns_shim_register_callbacks(registered.struct) == Status.OK
    try:
        assert lib.dns_shim_process_reply(wire, len(wire), query, ffi.NULL) == status
    finally:
        lib.dns_shim_register_callbacks(ffi.NULL)
    assert registered.lines == rec.lines


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_python_api(case):
    wire, changes, status = mismatch.CASES[case]
    query = api.Query(**query_of(changes))
    if status == Status.OK:
        assert api.parse_response(wire, expect=query).header.id == query.id
        return
    with pytest.raises(DnsShimError) as info:
        api.parse_response(wire, expect=query)
    assert info.value.status == status


def _c_args(q):
    args = ["--expect-id", str(q["id"]), "--expect-name", q["qname"],
            "--expect-type", str(q["qtype"]), "--expect-class", str(q["qclass"])]
    if q["match_case"]:
        args.append("--match-case")
    if q["cookie_client"]:
        args += ["--expect-cookie", q["cookie_client"].hex()]
    return args


@pytest.mark.parametrize("case", sorted(mismatch.CASES))
def test_c_program(built, tmp_path, abi, case):
    ffi, lib = abi
    wire, changes, status = mismatch.CASES[case]
    path = tmp_path / f"{case}.bin"
    path.write_bytes(wire)
    for mode in ([], ["--registered"]):
        result = run_test_prog(built, *mode, *_c_args(query_of(changes)), path)
        assert result.returncode == 0, result.stderr
        text = ffi.string(lib.dns_shim_strerror(status)).decode()
        lines = split_log(result.stdout)[str(path)]
        if status == Status.OK:
            assert lines == reference.expected_log(wire)
        else:
            assert lines == [f"status {int(status)} {text}"]


@pytest.mark.parametrize("case", sorted(mismatch.BAD_QUERIES))
def test_bad_query_is_bad_argument_before_the_message(abi, case):
    ffi, lib = abi
    q = query_of(mismatch.BAD_QUERIES[case])
    with pytest.raises(DnsShimError) as info:
        api.parse_response(b"", expect=api.Query(**q))  # the query wins over a short header
    assert info.value.status == Status.ERR_BAD_ARGUMENT
    query, keep = c_query(ffi, q)
    rec = Recorder(ffi)
    assert lib.dns_shim_process_reply(b"", 0, query, rec.struct) == Status.ERR_BAD_ARGUMENT
    assert lib.dns_shim_process_reply(mismatch.GOOD, len(mismatch.GOOD), query, rec.struct) == \
        Status.ERR_BAD_ARGUMENT
    assert rec.calls == []


def test_query_argument_checks(abi):
    ffi, lib = abi
    wire = mismatch.GOOD
    query, keep = c_query(ffi, mismatch.QUERY)
    rec = Recorder(ffi)
    assert lib.dns_shim_process_reply(wire, len(wire), ffi.NULL, rec.struct) == \
        Status.ERR_BAD_ARGUMENT
    size = ffi.sizeof("dns_shim_query")
    for wrong in (0, 4, size - 8, size + 8):
        query.struct_size = wrong
        assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == \
            Status.ERR_BAD_ARGUMENT
    query.struct_size = size
    for flags in (2, 0x80000000):
        query.flags = flags
        assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == \
            Status.ERR_BAD_ARGUMENT
    query.flags = 0
    saved, query.qname = query.qname, ffi.NULL
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == \
        Status.ERR_BAD_ARGUMENT
    query.qname = saved
    # Length and buffer come first, the callbacks before the query.
    assert lib.dns_shim_process_reply(wire, -1, ffi.NULL, ffi.NULL) == Status.ERR_BAD_LENGTH
    assert lib.dns_shim_process_reply(ffi.NULL, 5, ffi.NULL, ffi.NULL) == Status.ERR_NULL_BUFFER
    rec.struct.sections = 8
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == \
        Status.ERR_BAD_ARGUMENT
    assert rec.calls == []
    rec.struct.sections = 7
    assert lib.dns_shim_process_reply(wire, len(wire), query, rec.struct) == Status.OK


@pytest.mark.parametrize("cookie", [b"", b"1234567", b"123456789"])
def test_python_cookie_must_be_8_octets(cookie):
    with pytest.raises(DnsShimError) as info:
        api.parse_response(mismatch.GOOD, expect=api.Query(**query_of({"cookie_client": cookie})))
    assert info.value.status == Status.ERR_BAD_ARGUMENT


@pytest.mark.parametrize("bad", [{"id": -1}, {"id": 65536}, {"qtype": 70000}, {"qclass": -1},
                                 {"qname": None}, {"qname": 5}])
def test_python_query_values(bad):
    with pytest.raises(DnsShimError) as info:
        api.parse_response(mismatch.GOOD, expect=api.Query(**query_of(bad)))
    assert info.value.status == Status.ERR_BAD_ARGUMENT


def test_mismatch_costs_no_parse(monkeypatch):
    """A response with another ID is refused on its header: no name or
    record of it is read."""
    import shim.decode as decode_module
    monkeypatch.setattr(decode_module, "_read_name", None)  # any read would fail
    wire, changes, status = mismatch.CASES["malformed_other_id"]
    assert decoder_status(wire, query_of(changes)) == Status.ERR_MISMATCH


# ---- EDNS options ----------------------------------------------------------------


def test_options_come_after_the_header_before_the_records(abi):
    ffi, lib = abi
    wire = vectors.wire("edns_options")
    for sections in (1, 2, 4):  # sections never filters the options
        rec = Recorder(ffi, sections=sections)
        assert lib.dns_shim_process(wire, len(wire), rec.struct) == Status.OK
        members = [m for m, _ in rec.calls]
        assert members[:7] == ["on_header"] + ["on_edns_option"] * 6
        assert members[7:] == (["on_a"] if sections == 1 else [])
    rec = Recorder(ffi, only={"on_edns_option"}, sections=2)
    assert lib.dns_shim_process(wire, len(wire), rec.struct) == Status.OK
    assert [line.split()[1] for line in rec.lines] == [
        "code=10", "code=8", "code=8", "code=15", "code=12", "code=65001"]


def test_option_fields_from_c(abi):
    ffi, lib = abi
    got = []

    @ffi.callback("int32_t(void *, const dns_shim_edns_option *)")
    def on_option(ctx, o):
        def b(x):
            assert x.data != ffi.NULL and ffi.buffer(x.data, x.len + 1)[x.len:] == b"\0"
            return ffi.buffer(x.data, x.len)[:]
        got.append((o.code, b(o.data), o.ede_info_code, b(o.ede_text), b(o.cookie_client),
                    b(o.cookie_server), o.ecs_family, o.ecs_source_prefix, o.ecs_scope_prefix,
                    b(o.ecs_address)))
        return 0

    cb = ffi.new("dns_shim_callbacks *", {"struct_size": ffi.sizeof("dns_shim_callbacks"),
                                          "on_edns_option": on_option})
    wire = vectors.wire("edns_options")
    assert lib.dns_shim_process(wire, len(wire), cb) == Status.OK
    c, s = vectors.CLIENT_COOKIE, vectors.SERVER_COOKIE
    text = b"served stale: upstream timed out"
    assert got == [
        (10, c + s, -1, b"", c, s, 0, 0, 0, b""),
        (8, b"\x00\x01\x18\x18\xc6\x33\x64", -1, b"", b"", b"", 1, 24, 24, b"\xc6\x33\x64"),
        (8, b"\x00\x02\x38\x30\x20\x01\x0d\xb8\xaa\x00\x00", -1, b"", b"", b"", 2, 56, 48,
         b"\x20\x01\x0d\xb8\xaa\x00\x00"),
        (15, b"\x00\x03" + text, 3, text, b"", b"", 0, 0, 0, b""),
        (12, bytes(11), -1, b"", b"", b"", 0, 0, 0, b""),
        (65001, b"\x01private", -1, b"", b"", b"", 0, 0, 0, b""),
    ]


def test_ede_text_final_nul_is_in_data_not_in_text(abi):
    """RFC 8914: EXTRA-TEXT may end in a NUL, which is not text."""
    ffi, lib = abi
    wire = with_options(option(15, b"\x00\x12no\x00"))
    rec = Recorder(ffi, only={"on_edns_option"})
    assert lib.dns_shim_process(wire, len(wire), rec.struct) == Status.OK
    assert rec.lines[0].startswith("edns_option code=15 data=00126e6f00 ede=18 ede_text=6e6f ")
    option_ = api.parse_response(wire).options[0]
    assert (option_.data, option_.ede_text) == (b"\x00\x12no\x00", b"no")


def test_options_stop_dispatch_like_any_callback(abi):
    ffi, lib = abi
    wire = vectors.wire("edns_options")
    rec = Recorder(ffi, stop_at=3)
    assert lib.dns_shim_process(wire, len(wire), rec.struct) == Status.ERR_CALLBACK
    assert rec.lines + ["status -11 a callback stopped processing"] == \
        reference.expected_log(wire, stop_at=3)


def test_struct_size_1_0_never_calls_on_edns_option(abi):
    """A caller passing 1.0's struct_size gets 1.0's behaviour, even with
    the member after on_other set (the library must not read it)."""
    ffi, lib = abi
    wire = vectors.wire("edns_options")
    rec = Recorder(ffi)
    rec.struct.struct_size = ffi.offsetof("dns_shim_callbacks", "on_edns_option")
    assert lib.dns_shim_process(wire, len(wire), rec.struct) == Status.OK
    assert rec.lines + ["status 0 success"] == reference.expected_log(wire, options=False)
    assert lib.dns_shim_register_callbacks(rec.struct) == Status.OK
    try:
        rec.calls.clear()
        assert lib.process_dns_response(wire, len(wire)) == Status.OK
        assert rec.lines + ["status 0 success"] == reference.expected_log(wire, options=False)
    finally:
        lib.dns_shim_register_callbacks(ffi.NULL)


def test_struct_size_1_0_from_c(built, tmp_path):
    """The same from a C program: dnsshim_test --size-1.0 sets on_edns_option
    and passes 1.0's size; its output is a 1.0 program's."""
    files = []
    for name in ("edns_options", "ede_blocked"):
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    result = run_test_prog(built, "--size-1.0", *files)
    assert result.returncode == 0, result.stderr
    logs = split_log(result.stdout)
    for path, name in zip(files, ("edns_options", "ede_blocked")):
        assert logs[str(path)] == reference.expected_log(vectors.wire(name), options=False)
    assert not any(line.startswith("edns_option") for line in result.stdout.splitlines())


def test_python_options():
    response = api.parse_response(vectors.wire("ede_blocked"))
    (ede,) = response.options
    assert (ede.code, ede.ede_info_code, ede.ede_text.decode()) == (15, 15,
                                                                    "bloqué par la politique")
    assert (ede.cookie_client, ede.ecs_family) == (b"", 0)
    assert api.parse_response(malformed.GOOD).options == ()


def test_dump_with_expectations(built, tmp_path):
    import sys
    from conftest import ROOT
    path = tmp_path / "good.bin"
    path.write_bytes(mismatch.GOOD)
    args = ["--expect-id", str(0x5C5C), "--expect-name", "WWW.example.com", "--expect-type", "A",
            "--expect-class", "IN", "--expect-cookie", vectors.CLIENT_COOKIE.hex()]
    for extra in ([], ["--json"]):
        c = subprocess.run([str(built.dump_prog), *args, *extra, str(path)], capture_output=True)
        py = subprocess.run([sys.executable, "-m", "shim", "dump", *args, *extra, str(path)],
                            capture_output=True, cwd=ROOT)
        assert c.returncode == py.returncode == 0, c.stderr
        assert c.stdout == py.stdout
    out = subprocess.run([str(built.dump_prog), *args, str(path)], capture_output=True,
                         text=True).stdout
    assert f"; COOKIE: {vectors.CLIENT_COOKIE.hex()}{vectors.SERVER_COOKIE.hex()} (good)" in out
    for wrong in (["--expect-id", "1"], ["--expect-type", "AAAA"], ["--match-case"],
                  ["--expect-cookie", "00" * 8]):
        c = subprocess.run([str(built.dump_prog), *args, *wrong, str(path)], capture_output=True,
                           text=True)
        py = subprocess.run([sys.executable, "-m", "shim", "dump", *args, *wrong, str(path)],
                            capture_output=True, text=True, cwd=ROOT)
        assert c.returncode == py.returncode == 1
        assert c.stdout == py.stdout
        assert ";; rejected: response does not match the query (-16)" in c.stdout
    # Without a query, no verdict on the cookie.
    out = subprocess.run([str(built.dump_prog), str(path)], capture_output=True, text=True).stdout
    assert f"; COOKIE: {vectors.CLIENT_COOKIE.hex()}{vectors.SERVER_COOKIE.hex()}\n" in out
    # --expect-id and --expect-name go together.
    for partial in (["--expect-id", "1"], ["--expect-name", "x"], ["--match-case"]):
        assert subprocess.run([str(built.dump_prog), *partial, str(path)],
                              capture_output=True).returncode == 2
        assert subprocess.run([sys.executable, "-m", "shim", "dump", *partial, str(path)],
                              capture_output=True, cwd=ROOT).returncode == 2


def test_options_ignore_dnspythons_registry(monkeypatch):
    """A host's dns.edns.register_type cannot change how options parse: the
    decoder's table is fixed (as shim.rdtable's is for RDATA)."""
    import dns.edns

    class Hostile(dns.edns.GenericOption):
        @classmethod
        def from_wire_parser(cls, otype, parser):
            raise ValueError("a host's own option class")
    monkeypatch.setitem(dns.edns._type_to_class, dns.edns.OptionType.EDE, Hostile)
    monkeypatch.setitem(dns.edns._type_to_class, dns.edns.OptionType.PADDING, Hostile)
    wire = vectors.wire("edns_options")
    assert [o.code for o in decode(wire).header.options] == [10, 8, 8, 15, 12, 65001]
    assert decode(wire).header.options[3].ede_info_code == 3


def test_valgrind_reply_options_and_dump(built, tmp_path):
    """valgrind: 0 errors, no definite or indirect leak, for the new paths:
    dns_shim_process_reply (matches and mismatches), on_edns_option, the
    1.0 struct_size, and dnsshim-dump printing options with --expect-*."""
    from test_c_programs import VALGRIND, _require_valgrind
    _require_valgrind()
    files = []
    for name, (wire, _, _) in mismatch.CASES.items():
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(wire)
    for name in ("edns_options", "ede_blocked"):
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    for name, (wire, status) in malformed.CASES.items():
        if status == Status.ERR_BAD_EDNS:
            files.append(tmp_path / f"bad_{name}.bin")
            files[-1].write_bytes(wire)
    runs = [
        [str(built.test_prog), *_c_args(mismatch.QUERY), *files],
        [str(built.test_prog), "--registered", "--match-case", *_c_args(mismatch.QUERY), *files],
        [str(built.test_prog), "--size-1.0", *files],
        [str(built.dump_prog), "--json", *files],
        [str(built.dump_prog), *_c_args(mismatch.QUERY), *files],
    ]
    for cmd in runs:
        result = subprocess.run([*VALGRIND, *cmd], capture_output=True, text=True, timeout=900)
        assert result.returncode in (0, 1), result.stderr[-5000:]  # dump: 1 = some rejected
        assert "ERROR SUMMARY" not in result.stderr and "definitely lost" not in result.stderr, \
            result.stderr[-5000:]
    assert "status -16 " in subprocess.run(runs[0], capture_output=True, text=True).stdout


def test_threads_each_get_their_own_verdict(abi):
    """dns_shim_process_reply from several threads at once: each call's
    status is its own query's (the query is per call, never shared)."""
    import threading
    ffi, lib = abi
    wire = mismatch.GOOD
    results, errors = [], []

    def worker(k):
        q = query_of({"id": 0x5C5C if k % 2 == 0 else 0x5C5D})
        query, keep = c_query(ffi, q)
        want = Status.OK if k % 2 == 0 else Status.ERR_MISMATCH
        for _ in range(150):
            rec = Recorder(ffi, only={"on_edns_option"})
            got = lib.dns_shim_process_reply(wire, len(wire), query, rec.struct)
            if got != want or len(rec.calls) != (1 if want == Status.OK else 0):
                errors.append((k, got, rec.lines))
        results.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(results) == [0, 1, 2, 3] and errors == []
