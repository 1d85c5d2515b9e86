"""Both libraries and the C programs under AddressSanitizer (with
LeakSanitizer) and UndefinedBehaviorSanitizer (tests/sanitizers.py builds
them, the ``sanitized_build`` fixture of conftest.py): the argument contract,
the good vectors, every malformed case with its exact status, the shared
corpus, mutants, the stream and fork modes, every stress mode, the dump tool,
the library in an uninstrumented Python host, and the c-ares layer's programs
on the vectors, the malformed cases, the corpus and the mutants, each run
clean: a sanitizer's report fails the test with the report in its message.
That such a report is caught is shown first, with programs that read out of
bounds, overflow and leak on purpose.
"""

import subprocess
import sys

import pytest

import ares_diff
import malformed
import reference
import sanitizers
import vectors
from conftest import ROOT, require_cares, require_corpus, split_log, write_messages
from shim.status import Status, strerror
from test_ares import CASES as ARES_CASES
from test_ares import _ims_messages
from test_stress import mix  # noqa: F401 - the stress tests' messages, a fixture


@pytest.fixture(scope="module")
def san(sanitized_build):
    return sanitized_build


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    """name -> file: the vectors, the malformed cases and the accepted odd ones."""
    written = write_messages(tmp_path_factory.mktemp("san-messages"), accepted=True)
    return {path.stem.split("_", 1)[1]: path for path in written}  # vector_, bad_, ok_


def status_line(status) -> list:
    return [f"status {int(status)} {strerror(status)}"]


def expected_logs(messages) -> dict:
    """file -> dnsshim_test's lines: dnspython's parse of each vector and
    accepted case; the exact status alone for each malformed case."""
    expected = {messages[name]: reference.expected_log(vectors.wire(name))
                for name in vectors.NAMES}
    expected.update({messages[name]: status_line(status)
                     for name, (_, status) in malformed.CASES.items()})
    expected.update({messages[name]: reference.expected_log(wire)
                     for name, wire in malformed.ACCEPTED.items()})
    return expected


def test_everything_is_instrumented(san):
    """Both libraries (each a front and its runtime), the NSS module and
    every program call ASan's checks and UBSan's handlers, only the halting
    ones (-fno-sanitize-recover): the flags reached every compiler
    command."""
    objects = sorted(san.dir.glob("lib*.so.*"))
    assert {p.name.split(".so")[0] for p in objects} == {
        "libdnsshim", "libdnsshim_runtime", "libdnsshim_ares", "libdnsshim_ares_runtime",
        "libnss_dnsshim"}
    for path in [*objects, *san.programs.values()]:
        nm = subprocess.run(["nm", "-D", "--undefined-only", str(path)], capture_output=True,
                            text=True, check=True).stdout.split()
        assert any(name.startswith("__asan_report_load") for name in nm), path
        ubsan = [name for name in nm if name.startswith("__ubsan_handle_")]
        assert ubsan and all(name.endswith("_abort") for name in ubsan), (path, ubsan)


# ---- the harness fails when it must ---------------------------------------------------

FAULTY = r"""
#include "dns_shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* faulty MODE FILE: the message, copied into a block of exactly its size, */
/* given to the library one octet too long ("oob"); a signed overflow ("ub"); */
/* a block lost before a good call ("leak"); or a good call ("ok"). */
__attribute__((noinline)) static void lose(void)
{
    char *p = malloc(77);
    snprintf(p, 77, "lost");
    puts(p);
}

int main(int argc, char **argv)
{
    static unsigned char tmp[65536];
    FILE *f = fopen(argv[2], "rb");
    size_t n = fread(tmp, 1, sizeof tmp, f);
    uint8_t *buf = malloc(n);
    int32_t len = (int32_t)n;
    fclose(f);
    memcpy(buf, tmp, n);
    if (strcmp(argv[1], "oob") == 0)
        len += 1;
    else if (strcmp(argv[1], "ub") == 0)
        len = (int32_t)(argc + 0x7ffffffe);
    else if (strcmp(argv[1], "leak") == 0)
        lose();
    printf("status %d\n", (int)process_dns_response(buf, len));
    free(buf);
    return 0;
}
"""


@pytest.fixture(scope="module")
def faulty(san, tmp_path_factory):
    d = tmp_path_factory.mktemp("faulty")
    (d / "faulty.c").write_text(FAULTY)
    return sanitizers.compile_program([d / "faulty.c"], d / "faulty", against=san.dir)


def test_a_good_call_is_clean(san, faulty, messages):
    result = san.run(faulty, "ok", messages["ims"])
    assert (result.returncode, result.stdout) == (0, "status 0\n")


@pytest.mark.parametrize("mode, words", [
    # The over-long read happens inside the library's call: its frames are in the report.
    ("oob", ["AddressSanitizer: heap-buffer-overflow", "process_dns_response", "faulty.c"]),
    ("ub", ["runtime error: signed integer overflow", "faulty.c"]),
    ("leak", ["LeakSanitizer: detected memory leaks", "Direct leak of 77 byte(s)", "lose"]),
])
def test_a_fault_is_reported(san, faulty, messages, mode, words):
    with pytest.raises(sanitizers.SanitizerReport) as caught:
        san.run(faulty, mode, messages["ims"])
    for word in words:
        assert word in str(caught.value)


def test_a_callback_that_leaks_is_reported(san, messages):
    """dnsshim_test --leak: on_header drops a block, called from the
    library's dispatch: LeakSanitizer finds it, with the callback's frame."""
    with pytest.raises(sanitizers.SanitizerReport) as caught:
        san.run("dnsshim_test", "--leak", messages["ims"])
    assert "Direct leak" in str(caught.value) and "on_header" in str(caught.value)


def test_a_report_without_the_exit_status_is_caught():
    """A report in stderr fails the run even where the process exited 0."""
    report = ("==1==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x1\n"
              "SUMMARY: AddressSanitizer: stack-buffer-overflow x.c:1 in f\n")
    for stderr in (report, "x.c:3:5: runtime error: load of misaligned address\n"):
        with pytest.raises(sanitizers.SanitizerReport, match="sanitizer report"):
            sanitizers.check(subprocess.CompletedProcess([], 0, "", stderr))
    sanitizers.check(subprocess.CompletedProcess([], 0, "", "dnsshim: a log line\n"))


LIBRARY_NAMES = ("dns_shim", "dnsshim", "_dnsshim", "ares_", "libdnsshim", "_cffi")


def test_no_suppression_can_hide_the_library():
    """Every entry of lsan.supp is a kind LeakSanitizer knows, follows a
    comment, and names none of the libraries' frames."""
    lines = sanitizers.LSAN_SUPPRESSIONS.read_text().splitlines()
    assert lines[0].startswith("#")
    for i, line in enumerate(lines):
        if not line.strip() or line.startswith("#"):
            continue
        kind, _, pattern = line.partition(":")
        assert kind == "leak" and pattern, line
        assert lines[i - 1].startswith("#"), f"{line}: no comment says why"
        for name in LIBRARY_NAMES:
            assert name not in pattern.lower() and pattern.strip("*") not in name, line


# ---- libdnsshim ---------------------------------------------------------------------------

def test_api_contract(san):
    result = san.run("dnsshim_test", "--api")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "api: 0 failed" in result.stdout and "FAIL" not in result.stdout


@pytest.mark.parametrize("mode", [[], ["--registered"], ["--detail", "--log"]],
                         ids=["dns_shim_process", "registered", "detail-log"])
def test_vectors_and_malformed_exact(san, messages, mode):
    expected = expected_logs(messages)
    result = san.run("dnsshim_test", *mode, *expected)
    assert result.returncode == 0, result.stderr
    logs = split_log(result.stdout)
    assert len(logs) == len(expected)
    for path, lines in expected.items():
        log = logs[str(path)]
        if "--detail" in mode:
            # After each status line, what dns_shim_last_error says: empty after success.
            details = [line for line in log if line.startswith("detail")]
            assert len(details) == 1, (path, log)
            assert (details[0] == "detail ") == (lines[-1] == "status 0 success"), (path, log)
            log = [line for line in log if not line.startswith(("detail", "log "))]
        assert log == lines, path


@pytest.mark.parametrize("options, kwargs", [
    (["--sections", "6"], {"sections": 6}),
    (["--no-typed", "--no-other"], {"typed": False, "other": False}),
    (["--stop-at", "3"], {"stop_at": 3}),
])
def test_options(san, messages, options, kwargs):
    result = san.run("dnsshim_test", *options, messages["every_type"])
    assert split_log(result.stdout) == {
        str(messages["every_type"]): reference.expected_log(vectors.wire("every_type"), **kwargs)}


def corpus_expectation(path):
    """dnsshim_test's lines for a corpus file (as test_c_programs judges
    them): None where dnspython rejects it (then: a negative status alone)."""
    wire = path.read_bytes()
    if len(wire) > 65535:
        return status_line(Status.ERR_BAD_LENGTH)
    if len(wire) >= 12 and not wire[2] & 0x80:
        return status_line(Status.ERR_NOT_RESPONSE)
    try:
        return reference.expected_log(wire)
    except Exception:  # noqa: BLE001 - dnspython rejects it: so must we
        return None


@pytest.mark.parametrize("folder", ["good", "bad", "captures", "cares-fuzzinput"])
def test_corpus(san, folder):
    paths = require_corpus(folder)
    result = san.run("dnsshim_test", "--registered", *paths)
    logs = split_log(result.stdout)
    assert len(logs) == len(paths)
    for path in paths:
        expected = None if folder == "bad" else corpus_expectation(path)
        log = logs[str(path)]
        if expected is None:
            assert len(log) == 1 and log[0].startswith("status -"), (path, log)
        else:
            assert log == expected, path


MUTANTS = 6000


@pytest.fixture(scope="module")
def mutants(tmp_path_factory):
    """(wires, files): mutants of the vectors, the malformed cases and the
    corpus (tests/mutator.py, as test_ares's differential makes them)."""
    wires = ares_diff.messages_from_seeds(MUTANTS)
    wires = wires[len(wires) - MUTANTS:]
    return wires, ares_diff.write_messages(tmp_path_factory.mktemp("san-mutants"), wires)


def test_mutants(san, mutants):
    """Mutants are where the C glue meets the oddest input: every one gets
    a whole log ending in its status, and the run is clean."""
    _, paths = mutants
    result = san.run("dnsshim_test", "--registered", "--detail", *paths, timeout=900)
    logs = split_log(result.stdout)
    assert list(logs) == list(map(str, paths))
    statuses = [int(log[-2].split()[1]) for log in logs.values()]
    assert all(log[-2].startswith("status ") and log[-1].startswith("detail")
               for log in logs.values())
    assert all(s <= 0 for s in statuses) and 0 < statuses.count(0) < len(statuses)


def test_stream_and_a_child_per_message(san, messages, tmp_path):
    """--stream (one process, message after message) and --fresh (a child
    forked for each after the start) agree, message by message."""
    stream = tmp_path / "all.stream"
    wires = [p.read_bytes() for p in messages.values()]
    stream.write_bytes(b"".join(len(w).to_bytes(4, "big") + w for w in wires))
    one = san.run("dnsshim_test", "--stream", stream)
    fresh = san.run("dnsshim_test", "--stream", "--fresh", stream)
    assert one.returncode == fresh.returncode == 0, one.stderr + fresh.stderr
    assert one.stdout == fresh.stdout
    assert one.stdout.count("status 0 success") == len(vectors.NAMES) + len(malformed.ACCEPTED)
    assert len(split_log(one.stdout)) == len(wires)


def test_not_started_is_init_failure(san, messages):
    """The runtime cannot start (its CPython is gone): the status, and the path is clean."""
    result = san.run("dnsshim_test", messages["ims"], env={"DNS_SHIM_PYTHON": "/nonexistent/py"})
    assert split_log(result.stdout)[str(messages["ims"])] == status_line(Status.ERR_INIT)


def test_dump_tool_equals_python_dump(san, messages):
    files = [messages[name] for name in vectors.NAMES]
    for options in ([], ["--json"]):
        c = san.run("dnsshim-dump", *options, *files)
        py = subprocess.run([sys.executable, "-m", "shim", "dump", *options, *map(str, files)],
                            capture_output=True, text=True, cwd=ROOT)
        assert c.returncode == py.returncode == 0, c.stderr + py.stderr
        assert c.stdout == py.stdout


_HOST = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.process_dns_response.argtypes = [ctypes.c_char_p, ctypes.c_int32]
for path in sys.argv[3:]:
    with open(path, "rb") as f:
        wire = f.read()
    buf = (ctypes.c_char * len(wire)).from_buffer_copy(wire)  # exactly its size
    print(path, lib.process_dns_response(buf, len(wire) + int(sys.argv[2])))
"""


def run_python_host(san, *args):
    result = subprocess.run([sys.executable, "-c", _HOST, str(san.dir / "libdnsshim.so"),
                             *map(str, args)], capture_output=True, text=True, timeout=600,
                            env=san.python_host_env())
    sanitizers.check(result, "the Python host")
    return result


def test_python_host(san, messages):
    """The library as a guest in a Python program (its private copy of its
    Python side, shim/guest.py), called through ctypes from an uninstrumented
    python: the exact status of every vector and malformed case, clean."""
    expected = {str(path): lines[-1].split()[1] for path, lines in expected_logs(messages).items()}
    result = run_python_host(san, 0, *expected)
    assert result.returncode == 0, result.stderr[-3000:]
    assert dict(line.rsplit(" ", 1) for line in result.stdout.splitlines()) == expected


def test_python_host_fault_is_reported(san, messages):
    with pytest.raises(sanitizers.SanitizerReport) as caught:
        run_python_host(san, 1, messages["ims"])
    assert "heap-buffer-overflow" in str(caught.value)
    assert "process_dns_response" in str(caught.value)


# ---- the stress modes (tests/test_stress.py's, fewer calls) --------------------------------

@pytest.mark.parametrize("mode, options, line", [
    ("threads", ["--threads", "8", "--calls", "2000"], ", 0 wrong"),
    ("first-call", [], "ok first-call: 16 threads, status 0"),
    ("register", ["--calls", "2000"], ", 0 wrong, while the set changed"),
    ("reentry", [], "ok reentry: outer 0, inner 0"),
    ("reregister", [], "ok reregister: status 0"),
    ("fork", [], "ok fork: child"),
    ("retvals", [], "ok callback returning -2147483648 stops after 2 calls: -11"),
])
def test_stress(san, mix, mode, options, line):  # noqa: F811 - mix is the fixture
    result = san.run("dnsshim_stress", mode, *options, *mix)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert line in result.stdout and "FAIL" not in result.stdout


def test_stress_soak(san, mix):  # noqa: F811
    """The soak's bound on resident memory, with what ASan itself keeps
    growing turned off: its quarantine of freed blocks (held on purpose, up to
    256 MiB) and the fake stacks of detect_stack_use_after_return (mapped as
    frames are first used); what the soak measures is then the library's, as
    in the uninstrumented soak."""
    env = {"ASAN_OPTIONS": san.env["ASAN_OPTIONS"].replace(
        "detect_stack_use_after_return=1", "detect_stack_use_after_return=0")
        + ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"}
    result = san.run("dnsshim_stress", "soak", "--calls", "20000", *mix, env=env)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "ok soak: 20000 calls" in result.stdout


# ---- libdnsshim_ares ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ares(san):
    require_cares()
    return san


def test_ares_every_parser_agrees_with_c_ares(ares, tmp_path):
    """Every parser on the vectors, the malformed cases and the corpus
    (ares_diff's seeds), sanitized, against the real c-ares: every
    difference one of the kinds dnsshim_ares(3) lists."""
    seeds = ares_diff.messages_from_seeds()
    paths = ares_diff.write_messages(tmp_path, seeds)
    listing = "".join(f"{p}\n" for p in paths)
    outs = []
    for program in ("ares_every_parser_cares", "ares_every_parser"):
        result = ares.run(program, "-", input=listing, timeout=900)
        assert result.returncode == 0, result.stderr[-3000:]
        outs.append(result.stdout)
    c = ares_diff.Comparison(seeds, paths, *outs)
    assert not c.unexplained, c.unexplained[:5]
    assert len(c.ours) == len(seeds) == len(c.cares)
    if len(seeds) == 300:  # with the whole corpus: the counts of the build without sanitizers
        assert c.kinds == {"accepts:FormError": 805, "accepts:BadName": 168,
                           "accepts:BadEdns": 52, "accepts:BadTsig": 39,
                           "accepts:TrailingData": 26, "code": 4, "ttl": 3}
        assert (c.calls, c.same) == (5984, 4887)
    assert c.same > 0.8 * c.calls and " rc=0 " in outs[1]


def test_ares_mutants_agree_with_c_ares(ares, mutants):
    wires, paths = mutants
    listing = "".join(f"{p}\n" for p in paths)
    outs = [ares.run(program, "-", input=listing, timeout=900).stdout
            for program in ("ares_every_parser_cares", "ares_every_parser")]
    c = ares_diff.Comparison(wires, paths, *outs)
    assert not c.unexplained, c.unexplained[:5]
    assert len(c.ours) == len(c.cares) == MUTANTS and c.same > 0.75 * c.calls


def test_ares_cases_as_c_ares_gives_them(ares, tmp_path):
    paths = ares_diff.write_messages(tmp_path, [wire for wire, _ in ARES_CASES.values()])
    result = ares.run("ares_every_parser", *paths)
    assert result.returncode == 0, result.stderr[-3000:]
    ours = ares_diff.parse_output(result.stdout)
    for path, (_, lines) in zip(paths, ARES_CASES.values()):
        for call, line in lines.items():
            assert ours[str(path)][call] == line, (path, call)


def test_ares_sip_locate(ares, tmp_path):
    paths = _ims_messages(tmp_path)
    ours = ares.run("ares_sip_locate", *paths)
    theirs = ares.run("ares_sip_locate_cares", *paths)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout and "SRV 10 60 " in ours.stdout


def test_both_libraries_threads(ares):
    result = ares.run("both_libraries", "--threads", "8")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "ok 8 threads x 50 parses, 0 different" in result.stdout
    assert result.stdout.rstrip().endswith("0 failed")


def test_ares_dns_parse_against_c_ares_134(san, built, cares134, ares_dnsrec, mutants, tmp_path):
    """libdnsshim_ares's ares_dns_parse, sanitized, preloaded into the record
    driver (tests/c/ares_dnsrec.c, sanitized too) built against the real
    c-ares 1.34: the corpus, the malformed cases and the mutants give the
    statuses and records of the plain build, with no report."""
    import cares_source
    from dnsshim_build import pipeline

    driver = pipeline.compile_program(
        [ROOT / "tests" / "c" / "ares_dnsrec.c"], tmp_path / "ares_dnsrec", against=cares134.lib,
        libraries=("cares",), flags=(f"-I{cares134.include}",), cflags=sanitizers.FLAGS)
    (tmp_path / "messages").mkdir()
    files = write_messages(tmp_path / "messages", accepted=True,
                           corpus=("good", "bad", "captures", "cares-fuzzinput"))
    files += list(mutants[1])[:2000]
    result = subprocess.run([str(driver), "--", *map(str, files)], capture_output=True,
                            text=True, errors="replace", timeout=1800,
                            env={**san.env, "LD_PRELOAD": sanitizers.preload()["LD_PRELOAD"]
                                 + " " + str(san.dir / "libdnsshim_ares.so.1")})
    sanitizers.check(result, "ares_dnsrec")
    assert result.returncode == 0, result.stderr[-3000:]
    plain = cares_source.run_driver(ares_dnsrec, files,
                                    preload=built.dir / pipeline.DNSSHIM_ARES.soname)
    assert result.stdout.splitlines() == [
        f"{f} status {s}" + ("" if w is None else f" write_status {w}" if isinstance(w, int)
                             else f" write {w}") for f, (s, w) in plain.items()]
    assert result.stdout.count(" status 0 write ") >= 100
