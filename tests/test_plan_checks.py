"""C checks every plan the Python side hands it before the first callback.

A library built from a copy of the source tree whose shim package corrupts
its plans (tests/plan_corruption.py: never in a shipped build) must answer
each corruption with DNS_SHIM_ERR_INTERNAL and its exact detail, call no
callback, and read nothing it should not: the whole set also runs under
valgrind memcheck with 0 errors.

``corrupting_build(where, env)`` builds that library and dnsshim_test into
``where`` (env: e.g. CFLAGS/LDFLAGS for an ASan/UBSan build, which
build_ffi.py honours), so the same cases can run against another build
(``check_all(out, files, runner)``).
"""

import os
import subprocess
import sys

import pytest

import cprograms
import plan_corruption
import vectors
from conftest import require_program
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
    "txt_count_zero": "step 8 whose TXT has 0 strings, not 1 to 65535",
    "txt_strings_null": "step 8 whose TXT strings are NULL",
    "txt_string_no_nul": "step 8 whose TXT string has no NUL at data[len]",
    "txt_string_null": "step 8 whose TXT string is NULL",
    "txt_string_too_long": "step 8 whose TXT string has 70000 bytes, more than a message holds",
    "naptr_regexp_too_long": "step 10 whose NAPTR regexp has 65536 bytes, more than a message "
                             "holds",
}
#: The same for vectors' edns_options (step 0 on_header, then its options).
EDNS_OPTIONS = {
    "edns_data_null": "step 1 whose option data is NULL",
}


def corrupting_build(where, env=None):
    """The library with the corrupting shim package, and dnsshim_test, in
    where/out; returns that folder."""
    clone = plan_corruption.tweak(source_copy(where / "clone"))
    out = where / "out"
    subprocess.run([sys.executable, str(clone / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True, env={**os.environ, **(env or {})})
    cprograms.build(out, ["dnsshim_test"])
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
    return paths


def check_all(out, files, runner=()):
    """Every corruption, one message each, in one run of dnsshim_test (under
    runner, e.g. valgrind): a good plan first and last, which must pass."""
    cases = [("none", files["every_type"], None)]
    cases += [(k, files["every_type"], d) for k, d in EVERY_TYPE.items()]
    cases += [(k, files["edns_options"], d) for k, d in EDNS_OPTIONS.items()]
    cases += [("none", files["every_type"], None)]
    env = {"PATH": "/usr/bin:/bin",
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
