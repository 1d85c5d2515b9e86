"""Coverage-guided fuzzing of the C side with libFuzzer, bounded for CI
(tests/fuzz/: the harnesses, libfuzzer.py: their build and runs).

Each harness is built once per session (both libraries built with clang,
ASan, UBSan and libFuzzer's coverage; the harness with
-fsanitize=fuzzer,address,undefined), then:

* fuzzed for its budget (Harness.seconds: 15 s for those that go through the
  embedded interpreter, 10 s for the plan harnesses and fuzz_service; 115 s
  in all, one job), seeded with the shared corpus and c-ares's own fuzz
  inputs (fuzz_service: answers of dnsshimd encoded by libfuzzer.py;
  fuzz_nss: lookups and their replies, libfuzzer.nss_seeds); any
  crash, leak, timeout, out-of-memory, sanitizer report or failed harness
  check fails the test, which prints the input (hex and base64), the
  report and the command that reproduces it;
* its reproduce mode (the binary given files) runs on the findings kept in
  tests/regressions/: every message there (*.bin, which tests/test_fuzz.py
  replays through the Python side too) through the harnesses that read
  messages, and each harness's own inputs in tests/regressions/libfuzzer/<harness>/.

A harness that fails shows its finding's file under the run's artifacts:
a message found by fuzz_process, fuzz_reply or fuzz_dnsrec goes into
tests/regressions/ as <property>.bin; any other harness's input into
tests/regressions/libfuzzer/<harness>/<property>.

clang and libFuzzer's runtime are optional tools (Debian: clang,
libclang-rt-14-dev): absent, the tests skip naming them; under CI=true they
fail.  The harnesses of libdnsshim_ares need c-ares 1.34 (the cares134
fixture) and the message harnesses the shared corpus (skipped where absent,
required in CI).
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CORPUS, require_corpus, require_tool

sys.path.insert(0, str(Path(__file__).resolve().parent / "fuzz"))
import libfuzzer  # noqa: E402
import sanitizers  # noqa: E402


#: What libFuzzer names the files of its findings.
FINDINGS = ("crash-", "leak-", "timeout-", "oom-")


@pytest.fixture(scope="session")
def libfuzzer_build(tmp_path_factory):
    """Both libraries built for libFuzzer (libfuzzer.build_libraries): the
    folder, where the harnesses are built too."""
    for what, package in libfuzzer.missing().items():
        require_tool(what, package, False)
    return libfuzzer.build_libraries(tmp_path_factory.mktemp("libfuzzer"))


@pytest.fixture(scope="session")
def harness_binaries(libfuzzer_build):
    """name, cares -> the harness's binary, built once per session."""
    built = {}

    def get(name, cares=None):
        if name not in built:
            built[name] = libfuzzer.build_harness(libfuzzer.HARNESSES[name], libfuzzer_build,
                                                  cares)
        return built[name]
    return get


def _cares(request, harness):
    return request.getfixturevalue("cares134") if harness.cares else None


def _findings(artifacts: Path) -> list:
    return sorted(p for p in artifacts.iterdir() if p.name.startswith(FINDINGS))


def _explain(harness, binary: Path, result, found: list, env_extra=None) -> str:
    """What a failed run says: each finding's input, the report, how to
    reproduce it and where it goes once fixed."""
    lines = [f"{harness.name} (exit status {result.returncode}):"]
    for path in found:
        data = path.read_bytes()
        lines += [f"  finding {path} ({len(data)} octets)",
                  f"    hex:    {data.hex()[:4000]}",
                  f"    base64: {base64.b64encode(data).decode()[:4000]}"]
    env = " ".join(f"{k}={v}" for k, v in (env_extra or {}).items())
    target = ("tests/regressions/<property>.bin" if harness.input == "message"
              else f"tests/regressions/libfuzzer/{harness.name}/<property>")
    lines += [f"  {line}" for line in result.stderr.splitlines()
              if line.startswith("FUZZ FINDING")]
    lines += [f"  reproduce: {env + ' ' if env else ''}{binary} FILE",
              f"  keep it: copy the file to {target} (replayed by test_regressions_replayed)",
              "  report:", sanitizers.reports(result.stderr)[:12000]
              or result.stderr[-8000:]]
    return "\n".join(lines)


@pytest.mark.parametrize("name", list(libfuzzer.HARNESSES))
def test_fuzz_bounded(name, harness_binaries, request, tmp_path):
    harness = libfuzzer.HARNESSES[name]
    corpus = []
    if harness.input in ("message", "ares"):
        for folder in libfuzzer.CORPUS_FOLDERS:
            require_corpus(folder)
        corpus = [CORPUS / f for f in libfuzzer.CORPUS_FOLDERS]
    cares = _cares(request, harness)
    binary = harness_binaries(name, cares)
    seeds = libfuzzer.seeds(harness, tmp_path, cares, corpus)
    work, artifacts = tmp_path / "corpus", tmp_path / "artifacts"
    work.mkdir()
    artifacts.mkdir()
    result = subprocess.run(
        libfuzzer.fuzz_command(binary, work, seeds, artifacts, harness.seconds),
        capture_output=True, text=True, errors="replace", env=libfuzzer.environment(),
        timeout=harness.seconds + 300)
    found = _findings(artifacts)
    assert result.returncode == 0 and not found and not sanitizers.reports(result.stderr), \
        _explain(harness, binary, result, found)
    stats = dict(line.split(": ", 1) for line in result.stderr.splitlines()
                 if line.startswith("stat::") and ": " in line)
    runs = int(stats.get("stat::number_of_executed_units", "0"))
    # Far below what each does in its budget on a loaded 2-core machine
    # (hundreds per second through the interpreter, thousands to tens of
    # thousands for the plan harnesses and fuzz_service, which run no
    # Python): a harness that stopped fuzzing fails.
    no_python = harness.input in ("plan", "service", "ares-service")
    assert runs >= (5000 if no_python else 500), (runs, result.stderr[-3000:])
    # The harness's own count (its line at exit): inputs that reached the
    # success path, where most of its checks are (status 0 and callbacks; a
    # parser's result; a plan taken and run; an answer's calls made).
    [line] = [l for l in result.stderr.splitlines() if l.startswith(f"{name} stats: ")]
    inputs, good = (int(w) for w in line.split()[3::2])
    assert inputs >= runs // 2 and good >= inputs // 100, line


def _regression_cases():
    cases = []
    for harness in libfuzzer.HARNESSES.values():
        for i, (files, env) in enumerate(harness.regression_runs()):
            if files:
                cases.append(pytest.param(harness.name, i, id=f"{harness.name}-{i}"))
    return cases


@pytest.mark.parametrize("name, run", _regression_cases())
def test_regressions_replayed(name, run, harness_binaries, request, tmp_path):
    """The findings kept in tests/regressions/, through the harness's
    reproduce mode (each file run once): clean."""
    harness = libfuzzer.HARNESSES[name]
    files, env_extra = harness.regression_runs()[run]
    binary = harness_binaries(name, _cares(request, harness))
    result = subprocess.run([str(binary), f"-artifact_prefix={tmp_path}/", *map(str, files)],
                            capture_output=True, text=True, errors="replace", timeout=600,
                            env={**libfuzzer.environment(), **env_extra})
    found = _findings(tmp_path)
    assert result.returncode == 0 and not found and not sanitizers.reports(result.stderr), \
        _explain(harness, binary, result, found, env_extra)
    assert result.stderr.count("Executed ") == len(files), result.stderr[-3000:]


@pytest.mark.parametrize("kind, report", [
    ("o", "AddressSanitizer: heap-buffer-overflow"),
    ("l", "LeakSanitizer: detected memory leaks"),
    ("u", "runtime error: signed integer overflow"),
    ("c", "FUZZ FINDING"),
])
def test_a_finding_fails(kind, report, libfuzzer_build, tmp_path):
    """The proof that a report fails a bounded run and that its input is
    printed: tests/fuzz/fuzz_planted.c, built and run the same way, with a
    seed that overruns the library's buffer, loses a block, overflows an
    int, or fails a harness check."""
    planted = libfuzzer.Harness("fuzz_planted", "defects planted on purpose",
                                libraries=("dnsshim",), seconds=30)
    binary = libfuzzer.build_harness(planted, libfuzzer_build)
    seed, work, artifacts = tmp_path / "seed", tmp_path / "corpus", tmp_path / "artifacts"
    for d in (seed, work, artifacts):
        d.mkdir()
    wire = kind.encode() + bytes.fromhex("818000000000000000000000")
    (seed / "planted").write_bytes(wire)
    result = subprocess.run(libfuzzer.fuzz_command(binary, work, [seed], artifacts, 30),
                            capture_output=True, text=True, errors="replace",
                            env=libfuzzer.environment(), timeout=300)
    found = _findings(artifacts)
    assert result.returncode != 0 and found, result.stderr[-3000:]
    message = _explain(planted, binary, result, found)
    assert report in message
    assert wire.hex() in message
    assert "tests/regressions/<property>.bin" in message
