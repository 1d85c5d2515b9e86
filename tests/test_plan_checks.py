"""C checks everything the Python side hands it before using any of it.

A library built from a copy of the source tree whose shim package corrupts
its plans (tests/plan_corruption.py: never in a shipped build) must answer
each corruption with DNS_SHIM_ERR_INTERNAL and its exact detail, call no
callback, and read nothing it should not: the whole set also runs under
valgrind memcheck with 0 errors.

The same for libdnsshim_ares: a result (hostent data, addrttls, reply
lists, expanded names) that the corrupting shim package damages is refused
whole, answered as the README says for an unexpected failure (ARES_EBADRESP;
ARES_EBADNAME, ARES_EBADSTR for the expand functions) and logged with what
is wrong, and nothing of it is copied (ares_every_parser prints no field).

``corrupting_build(where)`` builds those libraries, dnsshim_test and
(with c-ares's headers) ares_every_parser into ``where``; the same cases
run against another build of the same copy (``corrupting_clone``) with
``check_all(out, files, runner, extra_env)`` and ``check_all_ares``:
test_every_corruption_under_asan_and_ubsan does so with the ASan/UBSan build
of tests/sanitizers.py.
"""

import subprocess
import sys

import dns.message
import pytest

import cprograms
import malformed
import plan_corruption
import sanitizers
import vectors
from conftest import require_cares, require_program
from dnsshim_build import pipeline
from test_install import source_copy

INTERNAL = "status -15 internal error in the DNS shim"
PLANNED = "DNS_SHIM_ERR_INTERNAL: the parser planned "

#: kind -> the detail after "DNS_SHIM_ERR_INTERNAL: the parser planned ", for
#: vectors' every_type run with --no-other (step 0 is on_header, then the
#: answer section's records in order: A, AAAA, CNAME, ...).
EVERY_TYPE = {
    "no_callback": "step 0 to no callback (offset 8)",
    "beyond": "step 0 to no callback (offset 4096)",
    "null_callback": "step 1 to on_other, which is NULL",
    "null_struct": "step 0 to on_header with a NULL struct",
    "no_steps": "34 calls without steps",
    "too_many": "65537 calls, more than a message can hold",
    "null_owner": "step 1 whose owner is NULL",
    "unterminated_owner": "step 2 whose owner is not NUL-terminated within 1024 bytes",
    "bad_section": "step 1 whose section is 3, no DNS_SHIM_SECTION_* value",
    "unterminated_qname": "step 0 whose qname is not NUL-terminated within 1024 bytes",
    "null_target": "step 3 whose target is NULL",
    "null_exchange": "step 7 whose exchange is NULL",
    "null_rname": "step 11 whose rname is NULL",
    "txt_count_zero": "step 8 whose strings count is 0, not 1 to 65535",
    "txt_strings_null": "step 8 whose strings are NULL",
    "txt_string_no_nul": "step 8 whose string has no NUL at data[len]",
    "txt_string_null": "step 8 whose string is NULL",
    "txt_string_too_long": "step 8 whose string has 70000 bytes, more than a message holds",
    "naptr_regexp_too_long": "step 10 whose regexp has 65536 bytes, more than a message "
                             "holds",
}
#: The same for vectors' edns_options (step 0 on_header, then its options).
EDNS_OPTIONS = {
    "edns_data_null": "step 1 whose option data is NULL",
}


#: One answer of every type the c-ares parsers read, at the question's name.
ARES_MESSAGE = """\
id 1
opcode QUERY
rcode NOERROR
flags QR RD RA
;QUESTION
x.example. IN A
;ANSWER
x.example. 300 IN A 192.0.2.1
x.example. 300 IN AAAA 2001:db8::1
x.example. 300 IN MX 10 mail.example.
x.example. 300 IN TXT "hello"
x.example. 300 IN SRV 1 2 3 sip.example.
x.example. 300 IN NAPTR 100 10 "u" "E2U+sip" "!^.*$!sip:x@example.com!" .
x.example. 300 IN CAA 0 issue "ca.example.net"
x.example. 300 IN URI 10 1 "https://example.com/"
x.example. 300 IN NS ns.example.
"""

#: (kind, corruption, ares_every_parser's line for that call, what is logged),
#: in the order ares_every_parser calls them.
ARES = [
    ("A", "addrlen", "a host=1 ttls=8 rc=10 naddrttls=0 []",
     "an address length that is not its family's; returning ARES_EBADRESP"),
    ("A", "addrs_null", "a host=0 ttls=1 rc=10 naddrttls=0 []",
     "an address count without its addresses; returning ARES_EBADRESP"),
    ("AAAA", "ttls_null", "aaaa host=1 ttls=8 rc=10 naddrttls=0 []",
     "an address count without its addresses; returning ARES_EBADRESP"),
    ("AAAA", "name_no_nul", "aaaa host=0 ttls=1 rc=10 naddrttls=0 []",
     "a string without its NUL at data[len]; returning ARES_EBADRESP"),
    ("NS", "addrs_for_other_kind", "ns rc=10",
     "addresses for a kind without any; returning ARES_EBADRESP"),
    ("PTR", "name_no_nul", "ptr rc=10",
     "a string without its NUL at data[len]; returning ARES_EBADRESP"),
    ("MX", "item_string_too_long", "mx rc=10",
     "a string longer than a message; returning ARES_EBADRESP"),
    ("SRV", "items_too_many", "srv rc=10",
     "an item count without its items; returning ARES_EBADRESP"),
    ("TXT", "item_string_no_nul", "txt rc=10",
     "a string without its NUL at data[len]; returning ARES_EBADRESP"),
    ("TXT_EXT", "aliases_null", "txt_ext rc=10",
     "an alias count without its aliases; returning ARES_EBADRESP"),
    ("NAPTR", "item_string_no_nul", "naptr rc=10",
     "a string without its NUL at data[len]; returning ARES_EBADRESP"),
    ("CAA", "items_too_many", "caa rc=10",
     "an item count without its items; returning ARES_EBADRESP"),
    ("URI", "item_string_too_long", "uri rc=10",
     "a string longer than a message; returning ARES_EBADRESP"),
    ("EXPAND_NAME", "enclen", "expand_name @12 rc=8",
     "an encoding length beyond the message; returning ARES_EBADNAME"),
    ("EXPAND_STRING", "enclen", "expand_string @12 rc=17",
     "an encoding length beyond the message; returning ARES_EBADSTR"),
]


def corrupting_clone(where):
    """A copy of the source tree, in where/clone, whose shim package corrupts
    plans and c-ares results."""
    return plan_corruption.tweak_dnsrec(plan_corruption.tweak_ares(
        plan_corruption.tweak(source_copy(where / "clone"))))


def corrupting_build(where):
    """The library with the corrupting shim package, and dnsshim_test, in
    where/out; returns that folder."""
    clone = corrupting_clone(where)
    out = where / "out"
    subprocess.run([sys.executable, str(clone / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True)
    cprograms.build(out, ["dnsshim_test"])
    if cprograms.cares_flags() is not None:
        cprograms.build(out, ["ares_every_parser"])
    return out


@pytest.fixture(scope="module")
def corrupting(tmp_path_factory):
    return corrupting_build(tmp_path_factory.mktemp("plan-checks"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("plan-messages")
    paths = {}
    for name in ("every_type", "edns_options"):
        paths[name] = d / f"{name}.bin"
        paths[name].write_bytes(vectors.wire(name))
    paths["ares"] = d / "ares.bin"
    paths["ares"].write_bytes(dns.message.from_text(ARES_MESSAGE).to_wire())
    return paths


def check_all(out, files, runner=(), extra_env=None):
    """Every corruption, one message each, in one run of dnsshim_test (under
    runner, e.g. valgrind): a good plan first and last, which must pass."""
    cases = [("none", files["every_type"], None)]
    cases += [(k, files["every_type"], d) for k, d in EVERY_TYPE.items()]
    cases += [(k, files["edns_options"], d) for k, d in EDNS_OPTIONS.items()]
    cases += [("none", files["every_type"], None)]
    env = {"PATH": "/usr/bin:/bin", **(extra_env or {}),
           "DNS_SHIM_TEST_CORRUPT": ",".join(kind for kind, _, _ in cases)}
    result = subprocess.run([*runner, str(out / "dnsshim_test"), "--no-other", "--detail",
                             *(str(path) for _, path, _ in cases)],
                            capture_output=True, text=True, env=env, timeout=1800)
    assert result.returncode == 0, result.stderr[-5000:]
    blocks = result.stdout.split("# ")[1:]
    assert len(blocks) == len(cases)
    for (kind, path, detail), block in zip(cases, blocks):
        lines = block.splitlines()
        assert lines[0] == str(path)
        if detail is None:
            assert lines[-2:] == ["status 0 success", "detail "], kind
            assert len(lines) > 10, kind
        else:
            # all or nothing: no callback ran, not even on_header
            assert lines == [str(path), INTERNAL, "detail " + PLANNED + detail], kind
    logged = [line for line in result.stderr.splitlines() if line.startswith("dnsshim: ")]
    assert logged == [f"dnsshim: {PLANNED}{detail}" for _, _, detail in cases[1:-1]]
    return result


def test_every_corruption_is_internal_with_its_detail_and_no_callback(corrupting, files):
    check_all(corrupting, files)


def test_every_corruption_under_valgrind_memcheck(corrupting, files):
    require_program("valgrind", "valgrind")
    result = check_all(corrupting, files, ["valgrind", "--error-exitcode=99", "--leak-check=no"])
    assert "ERROR SUMMARY: 0 errors from 0 contexts" in result.stderr


def test_shipped_build_has_no_corruption_hook():
    """The hook exists in the tweaked copy only."""
    import shim.glue
    assert not hasattr(shim.glue, "_CORRUPT_KINDS")
    assert "DNS_SHIM_TEST_CORRUPT" not in open(shim.glue.__file__).read()


def check_all_ares(out, files, runner=(), extra_env=None):
    """Every corruption of a c-ares result, each on its own call, in one run
    of ares_every_parser (under runner)."""
    env = {"PATH": "/usr/bin:/bin", **(extra_env or {}),
           "DNS_SHIM_TEST_CORRUPT_ARES": ",".join(f"{k}:{c}" for k, c, _, _ in ARES)}
    clean = subprocess.run([str(out / "ares_every_parser"), str(files["ares"])],
                           capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", **(extra_env or {})}, timeout=300)
    result = subprocess.run([*runner, str(out / "ares_every_parser"), str(files["ares"])],
                            capture_output=True, text=True, env=env, timeout=1800)
    assert clean.returncode == 0 and result.returncode == 0, result.stderr[-5000:]
    lines, good = result.stdout.splitlines(), clean.stdout.splitlines()
    assert len(lines) == len(good)
    expected = {line for _, _, line, _ in ARES}
    assert expected <= set(lines) and not expected & set(good)
    for line, before in zip(lines, good):
        if line not in expected:
            assert line == before   # every other call is untouched
    assert [line[len("dnsshim_ares: "):] for line in result.stderr.splitlines()
            if line.startswith("dnsshim_ares: ")] == \
        [f"the parser's result has {why}" for _, _, _, why in ARES]
    return result


def test_every_ares_corruption_is_refused_whole_and_logged(corrupting, files):
    require_cares()
    check_all_ares(corrupting, files)


def test_every_ares_corruption_under_valgrind_memcheck(corrupting, files):
    require_cares()
    require_program("valgrind", "valgrind")
    result = check_all_ares(corrupting, files,
                            ["valgrind", "--error-exitcode=99", "--leak-check=full",
                             "--errors-for-leak-kinds=definite,indirect"])
    assert "ERROR SUMMARY: 0 errors from 0 contexts" in result.stderr


#: Each corruption of an ares_dns_parse plan and what C logs refusing it.
DNSREC = {
    "status": "a status ares_dns_parse does not return",
    "opcode": "a header field out of its range",
    "qname_no_nul": "a question that is not one",
    "rrs_too_many": "more records than the message holds",
    "rrs_null": "more records than the message holds",
    "section": "a record out of range",
    "name_no_nul": "a record's name that is not a C string",
    "fields_null": "more fields than the message holds",
    "datatype": "a field whose datatype is not its key's",
    "addr_len": "an IPv4 address not of 4 octets",
    "u16": "a 16-bit field above 65535",
}


def check_all_dnsrec(out, driver, tmp_path, runner=()):
    """Every corruption of an ares_dns_parse plan, one message each, in one
    run of tests/c/ares_dnsrec.c against c-ares 1.34 with the corrupting
    libdnsshim_ares preloaded; a good plan first and last."""
    wire = dns.message.from_text(ARES_MESSAGE)
    wire.use_edns(0)
    wire = wire.to_wire()
    kinds = ["none", *DNSREC, "none"]
    files = []
    for i, kind in enumerate(kinds):
        files.append(tmp_path / f"{i:02d}_{kind}.bin")
        files[-1].write_bytes(wire)
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_TEST_CORRUPT_DNSREC": ",".join(kinds)}
    result = subprocess.run([*runner, str(driver), "--", *map(str, files)], capture_output=True,
                            text=True, timeout=1800,
                            env={**env, "LD_PRELOAD": str(out / "libdnsshim_ares.so.1")})
    assert result.returncode == 0, result.stderr[-5000:]
    lines = result.stdout.splitlines()
    assert [line.split(" ")[2] for line in lines] == ["0", *["10"] * len(DNSREC), "0"]
    assert lines[0].split(" ")[3:] == lines[-1].split(" ")[3:]  # the same record written
    assert [line for line in result.stderr.splitlines() if line.startswith("dnsshim_ares: ")] == [
        f"dnsshim_ares: ares_dns_parse: the parser's plan has {why}; returning ARES_EBADRESP"
        for why in DNSREC.values()]
    return result


def test_every_dnsrec_corruption_is_refused_before_a_builder_runs(corrupting, ares_dnsrec,
                                                                   tmp_path):
    check_all_dnsrec(corrupting, ares_dnsrec, tmp_path)


def test_every_dnsrec_corruption_under_valgrind_memcheck(corrupting, ares_dnsrec, tmp_path):
    require_program("valgrind", "valgrind")
    result = check_all_dnsrec(corrupting, ares_dnsrec, tmp_path,
                              ["valgrind", "--error-exitcode=99", "--leak-check=full",
                               "--errors-for-leak-kinds=definite,indirect",
                               f"--suppressions={pipeline.SUPPRESSIONS}"])
    assert "ERROR SUMMARY: 0 errors from 0 contexts" in result.stderr


@pytest.fixture(scope="module")
def sanitized_corrupting(tmp_path_factory):
    """The corrupting libraries, dnsshim_test and (with c-ares's headers)
    ares_every_parser built as every sanitized build is (tests/sanitizers.py:
    ASan and UBSan, the same flags and options as conftest's
    sanitized_build)."""
    where = tmp_path_factory.mktemp("plan-checks-asan")
    names = ["dnsshim_test"] + (["ares_every_parser"] if cprograms.cares_flags() is not None
                                else [])
    return sanitizers.build(where / "out", names, root=corrupting_clone(where))


def test_every_corruption_under_asan_and_ubsan(sanitized_corrupting, files):
    result = check_all(sanitized_corrupting.dir, files, extra_env=sanitizers.options())
    sanitizers.check(result, "dnsshim_test")
    if cprograms.cares_flags() is not None:
        result = check_all_ares(sanitized_corrupting.dir, files, extra_env=sanitizers.options())
        sanitizers.check(result, "ares_every_parser")


def test_struct_size_flips_and_exact_size_structs_under_asan(sanitized_build, tmp_path):
    """audit_edges (tests/test_c_programs.py) on the ASan/UBSan build: the
    callbacks' struct_size read once while another thread flips it; 1.0's
    struct and the query in exact-size heap blocks."""
    program = cprograms.build(tmp_path, ["audit_edges"], against=sanitized_build.dir,
                              cflags=sanitizers.FLAGS)["audit_edges"]
    good = tmp_path / "good.bin"
    good.write_bytes(malformed.GOOD)
    for args in (["flip", "1000000"], ["sizes", str(good)]):
        result = sanitized_build.run(program, *args, env={"PATH": "/usr/bin:/bin"})
        assert result.returncode == 0, result.stdout + result.stderr[-5000:]
