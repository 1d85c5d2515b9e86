"""Coverage-guided fuzzing, bounded for CI, and the regressions it (or the
mutator) ever found.

The long runs are documented in tests/fuzz.py and the README.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mutator
from conftest import CORPUS, ROOT
from recorder import Recorder
from shim import glue
from shim.decode import decode
from shim.status import DnsShimError, Status

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.bin"))


@pytest.mark.parametrize("target, runs", [("decode", 20000), ("glue", 10000), ("reply", 5000)])
def test_fuzz_bounded(target, runs, tmp_path):
    import importlib.util

    # atheris is a test dependency (pyproject's test extra); a machine whose
    # pip could not build it skips here, CI fails.
    if importlib.util.find_spec("atheris") is None:
        if os.environ.get("CI"):
            pytest.fail("atheris is required in CI: pip install -e '.[test]' installs it")
        pytest.skip("atheris is not installed (pip install -e '.[test]')")
    seeds = [str(CORPUS / f) for f in ("good", "bad", "captures", "cares-fuzzinput")
             if (CORPUS / f).is_dir()]
    if not seeds and os.environ.get("CI"):
        pytest.fail("CI must seed the fuzzer with the shared corpus")
    new = tmp_path / "new"
    new.mkdir()
    result = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz.py"), target, f"-runs={runs}", "-timeout=10",
         "-seed=12345", f"-artifact_prefix={tmp_path}/", str(new), *seeds],
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    assert f"Done {runs} runs" in result.stderr
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("timeout-*"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.name)
def test_regression(path, header_ffi):
    wire = path.read_bytes()
    assert mutator.disagreement(wire) is None
    try:
        decode(wire)
    except DnsShimError:
        pass
    rec = Recorder(header_ffi)
    status = glue.process(header_ffi, header_ffi.new("uint8_t[]", wire), len(wire), rec.struct)
    assert status not in (Status.ERR_INTERNAL, Status.ERR_NO_MEMORY)


def test_there_are_regressions():
    assert REGRESSIONS, "tests/regressions holds what fuzzing and the mutator found"
