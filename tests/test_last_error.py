"""dns_shim_last_error: the reason for a failure, from C.

What a C program reads after each kind of failure is checked to the letter:
for every malformed message and every kind of mismatch it is exactly what
the Python API's exception says for the same bytes (``str(exc)``); for the
arguments C checks itself it names what was wrong; a callback's failure
names the callback and the record; after a success it is empty; and it
belongs to the calling thread.  The dump tools print it.
"""

import subprocess

import pytest

import malformed
import mismatch
import shim
from conftest import require_program, run_test_prog, split_log
from shim.status import DnsShimError, Status, reason_of, strerror


def _detail_logs(built, tmp_path, cases, *options):
    files = []
    for name, wire in cases.items():
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(wire)
    result = run_test_prog(built, "--detail", *options, *files)
    assert result.returncode == 0, result.stderr
    return {path.stem: lines for path, lines in zip(files, split_log(result.stdout).values())}


def _python_text(wire, expect=None) -> str:
    try:
        shim.parse_response(wire, expect=expect)
    except DnsShimError as e:
        return str(e)
    return ""


def test_every_malformed_message_says_what_python_says(built, tmp_path):
    logs = _detail_logs(built, tmp_path, {n: w for n, (w, _) in malformed.CASES.items()})
    for name, (wire, status) in malformed.CASES.items():
        status_line, detail = logs[name][-2:]
        assert status_line.startswith(f"status {int(status)} "), name
        text = _python_text(wire)
        assert text.startswith(f"{status.c_name}"), name
        assert detail == f"detail {text}", name


def test_every_accepted_message_leaves_it_empty(built, tmp_path):
    logs = _detail_logs(built, tmp_path, dict(malformed.ACCEPTED))
    for name, lines in logs.items():
        assert lines[-2:] == ["status 0 success", "detail "], name


def test_every_mismatch_says_what_python_says(built, tmp_path):
    q = mismatch.QUERY
    for name, (wire, changes, status) in mismatch.CASES.items():
        query = {**q, **changes}
        options = ["--expect-id", str(query["id"]), "--expect-name", query["qname"],
                   "--expect-type", str(query["qtype"]), "--expect-class", str(query["qclass"])]
        if query["match_case"]:
            options.append("--match-case")
        if query["cookie_client"] is not None:
            options += ["--expect-cookie", query["cookie_client"].hex()]
        logs = _detail_logs(built, tmp_path, {name: wire}, *options)
        expect = shim.Query(query["id"], query["qname"], query["qtype"], query["qclass"],
                            query["match_case"], query["cookie_client"])
        text = _python_text(wire, expect)
        assert logs[name][-2] .startswith(f"status {int(status)} "), name
        assert logs[name][-1] == f"detail {text}", name


def test_a_callback_that_stops_is_named_with_its_record(built, tmp_path):
    logs = _detail_logs(built, tmp_path, {"good": malformed.GOOD}, "--stop-at", "2")
    assert logs["good"][-2:] == [
        f"status -11 {strerror(Status.ERR_CALLBACK)}",
        "detail DNS_SHIM_ERR_CALLBACK: on_a returned 1 for record 0 of the answer section "
        "(example.com, type 1)"]


#: What the --api run reads after each call (tests/c/dnsshim_test.c, run_last_error).
API_TEXTS = {
    "after dns_shim_init": "",
    "length -1": "DNS_SHIM_ERR_BAD_LENGTH: the length is -1, not 0 to 65535",
    "length 70000": "DNS_SHIM_ERR_BAD_LENGTH: the length is 70000, not 0 to 65535",
    "buffer NULL": "DNS_SHIM_ERR_NULL_BUFFER: the buffer is NULL and the length 19",
    "callbacks NULL": "DNS_SHIM_ERR_BAD_ARGUMENT: the callbacks set is NULL",
    "struct_size 7": "DNS_SHIM_ERR_BAD_ARGUMENT: the callbacks set's struct_size is 7, not one "
                     "this library knows (120 for 1.0, 128 for 1.1 and later)",
    "register sections 8": "DNS_SHIM_ERR_BAD_ARGUMENT: the callbacks set's sections mask 0x8 "
                           "has bits other than DNS_SHIM_SECTION_ANSWER, _AUTHORITY and "
                           "_ADDITIONAL (0x7)",
    "register NULL": "",
    "query NULL": "DNS_SHIM_ERR_BAD_ARGUMENT: the query is NULL",
    "query struct_size 4": "DNS_SHIM_ERR_BAD_ARGUMENT: the query's struct_size is 4, not one "
                           "this library knows (32)",
    "query flags 6": "DNS_SHIM_ERR_BAD_ARGUMENT: the query's flags 0x6 have bits other than "
                     "DNS_SHIM_MATCH_CASE",
    "qname NULL": "DNS_SHIM_ERR_BAD_ARGUMENT: the query's qname is NULL",
    "qname a..b": "DNS_SHIM_ERR_BAD_ARGUMENT: qname b'a..b': A DNS label is empty.",
    "other id": "DNS_SHIM_ERR_MISMATCH: ID 4660, the query's is 4661 (at offset 0)",
    "matching reply": "",
    "11 octets": "DNS_SHIM_ERR_SHORT_HEADER: 11 octets, fewer than the 12 of the header",
    "on_header returns 5": "DNS_SHIM_ERR_CALLBACK: on_header returned 5",
    "success": "",
    "other thread before its call": "",
    "other thread after its call": "",
    "this thread after the other's success": "DNS_SHIM_ERR_BAD_LENGTH: the length is -1, not 0 "
                                             "to 65535",
}


def test_api_texts(built):
    result = run_test_prog(built, "--api")
    assert result.returncode == 0, result.stdout
    texts = dict(line[len("text "):].split(" = ", 1) if " = " in line else (line[5:-2], "")
                 for line in result.stdout.splitlines() if line.startswith("text "))
    assert texts == API_TEXTS


def test_python_api_says_the_same_for_its_own_argument_checks():
    with pytest.raises(DnsShimError) as info:
        shim.parse_response(malformed.GOOD, expect=shim.Query(0x1234, "a..b"))
    assert str(info.value) == API_TEXTS["qname a..b"]
    with pytest.raises(DnsShimError) as info:
        shim.parse_response(b"\0" * 70000)
    assert str(info.value) == API_TEXTS["length 70000"]


def test_strerror_of_bad_argument_is_true_for_every_function_that_returns_it():
    """Not only the parsing calls return it (dns_shim_set_parallelism(65)
    does): the text points to the detail, which names the argument."""
    assert strerror(Status.ERR_BAD_ARGUMENT) == ("invalid argument or call (dns_shim_last_error "
                                                 "says which)")


@pytest.mark.parametrize("json", [False, True])
def test_dump_tools_print_the_reason(built, tmp_path, json):
    path = tmp_path / "pointer_loop.bin"
    wire, status = malformed.CASES["pointer_loop_of_two"]
    path.write_bytes(wire)
    options = ["--json"] if json else []
    c = subprocess.run([str(built.dump_prog), *options, str(path)], capture_output=True, text=True)
    py = subprocess.run([__import__("sys").executable, "-m", "shim", "dump", *options, str(path)],
                        capture_output=True, text=True)
    assert (c.returncode, c.stdout, c.stderr) == (py.returncode, py.stdout, py.stderr)
    reason = reason_of(_python_text(wire))
    assert reason and reason.endswith("(at offset 12)")
    line = f"{strerror(status)} ({int(status)}): {reason}"
    assert c.stderr == f"{path}: {line}\n"
    if json:
        assert f'"detail": "{reason}"' in c.stdout
    else:
        assert f";; rejected: {line}\n" in c.stdout


#: What the C program reads for counts of one and of more, written out by hand
#: (not taken from the Python side that makes them): one octet is singular.
COUNTED = {
    "one trailing": (malformed.GOOD + b"\0",
                     "DNS_SHIM_ERR_TRAILING_DATA: 1 octet (at offset 45)"),
    "two trailing": (malformed.GOOD + b"\0\0",
                     "DNS_SHIM_ERR_TRAILING_DATA: 2 octets (at offset 45)"),
    "one octet": (b"\0", "DNS_SHIM_ERR_SHORT_HEADER: 1 octet, fewer than the 12 of the header"),
    "eleven octets": (b"\0" * 11,
                      "DNS_SHIM_ERR_SHORT_HEADER: 11 octets, fewer than the 12 of the header"),
}


def test_counts_of_octets_read_as_english(built, tmp_path):
    logs = _detail_logs(built, tmp_path, {name: wire for name, (wire, _) in COUNTED.items()})
    assert {name: lines[-1] for name, lines in logs.items()} == {
        name: f"detail {text}" for name, (_, text) in COUNTED.items()}


# ---- in this process, through the C ABI ------------------------------------------


def _detail(abi) -> bytes:
    ffi, lib = abi
    return ffi.string(lib.dns_shim_last_error())


@pytest.mark.parametrize("char", ["é", "€", "😀"])
@pytest.mark.parametrize("pad", [0, 1, 2, 3])
def test_a_detail_cut_at_its_size_keeps_whole_characters(abi, library_modules, monkeypatch,
                                                        char, pad):
    """2,047 octets at most, cut before a character that does not fit."""
    glue = library_modules["shim.glue"]
    text = "x" * pad + char * 2100

    def failing(ffi, buf, length, callbacks, out_steps, out_count, out_token, query=None,
                runtime=None):
        runtime.failure(text)
        return Status.ERR_BAD_NAME
    monkeypatch.setattr(glue, "plan", failing)
    ffi, lib = abi
    assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD)) == Status.ERR_BAD_NAME
    detail = _detail(abi)
    width = len(char.encode())
    whole = (2047 - pad) // width
    assert detail == ("x" * pad + char * whole).encode()
    assert 2047 - width < len(detail) <= 2047


def test_a_callback_that_reenters_and_fails_leaves_no_detail_after_success(abi):
    """The outer call returned 0: its detail is "", whatever a call made from
    one of its callbacks said."""
    ffi, lib = abi
    inner = []

    @ffi.callback("int32_t(void *, const dns_shim_a *)")
    def on_a(ctx, rec):
        inner.append(lib.dns_shim_process(malformed.GOOD, -1, ffi.NULL))
        inner.append(_detail(abi))
        return 0
    cb = ffi.new("dns_shim_callbacks *", {"struct_size": ffi.sizeof("dns_shim_callbacks"),
                                          "sections": 7, "on_a": on_a})
    assert lib.dns_shim_process(malformed.GOOD, len(malformed.GOOD), cb) == Status.OK
    assert inner == [Status.ERR_BAD_LENGTH,
                     b"DNS_SHIM_ERR_BAD_LENGTH: the length is -1, not 0 to 65535"]
    assert _detail(abi) == b""


def test_a_callback_that_reenters_and_succeeds_leaves_the_outer_failure(abi):
    ffi, lib = abi

    @ffi.callback("int32_t(void *, const dns_shim_a *)")
    def on_a(ctx, rec):
        assert lib.process_dns_response(malformed.GOOD, len(malformed.GOOD)) == 0
        return 3
    cb = ffi.new("dns_shim_callbacks *", {"struct_size": ffi.sizeof("dns_shim_callbacks"),
                                          "sections": 7, "on_a": on_a})
    assert lib.dns_shim_process(malformed.GOOD, len(malformed.GOOD), cb) == Status.ERR_CALLBACK
    assert _detail(abi) == (b"DNS_SHIM_ERR_CALLBACK: on_a returned 3 for record 0 of the "
                            b"answer section (example.com, type 1)")


def test_six_threads_each_read_their_own_detail_under_valgrind(built):
    """Six threads fail at once, each with its own length: each reads its
    own text, and another call on one thread changes only that thread's."""
    require_program("valgrind", "valgrind")
    result = subprocess.run(["valgrind", "-q", "--error-exitcode=99",
                             str(built.dir / "audit_edges"), "threads"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    assert result.stdout.splitlines() == [f"thread {i}: its own detail" for i in range(6)]
