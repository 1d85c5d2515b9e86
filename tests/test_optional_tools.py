"""The tests that need an optional tool (pkg-config, cmake, valgrind, g++,
c-ares's headers) skip where it is absent, naming the Debian package, and
fail under CI=true, which installs them all (conftest.require_tool)."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT

NEEDS_A_MISSING_TOOL = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from conftest import require_program

def test_needs_it():
    require_program("no-such-tool-dnsshim", "no-such-package")
"""


@pytest.mark.parametrize("ci", [False, True])
def test_missing_tool_skips_with_its_package_or_fails_in_ci(tmp_path, ci):
    (tmp_path / "test_it.py").write_text(NEEDS_A_MISSING_TOOL)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                             str(tmp_path / "test_it.py")], capture_output=True, text=True,
                            cwd=tmp_path, env=env, timeout=300)
    if ci:
        assert result.returncode == 1 and "1 failed" in result.stdout
        assert ("no-such-tool-dnsshim is required in CI (.ci/run installs the Debian package "
                "no-such-package)") in result.stdout
    else:
        assert result.returncode == 0 and "1 skipped" in result.stdout
        assert ("no-such-tool-dnsshim: not installed (Debian: apt-get install no-such-package)"
                in result.stdout)
