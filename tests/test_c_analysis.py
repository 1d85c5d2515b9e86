"""Every shipped C file compiled on its own with -Wall -Wextra -Werror, and
through gcc's static analyser (-fanalyzer), with warnings as errors.

A unit compiles against what a reader has: the public header and csrc/
(-I csrc, -I csrc/tools), Python's headers, and the generated headers the
build writes (pipeline.generated_headers: dns_shim_generated.h and
dns_shim_kinds.h).  The two cffi preambles (BRIDGES) are compiled only as
part of cffi's emitted unit, after cffi's runtime, and are not covered
here: each is named, so that a new C file is either analysed or listed.
"""

import subprocess
import sysconfig

import pytest

from dnsshim_build import pipeline
from conftest import ROOT, require_program

#: cffi's preambles: they see cffi's runtime and generated code, and
#: compile only inside pipeline.emit's unit.
BRIDGES = {"csrc/lib/dns_shim.c", "csrc/ares/dnsshim_ares.c"}

SHIPPED = sorted(str(path.relative_to(ROOT))
                 for folder in ("lib", "ares", "tools", "firmware")
                 for path in (ROOT / "csrc" / folder).glob("*.c"))
UNITS = [path for path in SHIPPED if path not in BRIDGES]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return pipeline.generated_headers(pipeline.DNSSHIM, tmp_path_factory.mktemp("generated"))


def _compile(path: str, generated, *flags, mode=pipeline.Mode.SOURCE_TREE):
    """gcc on one file; libdnsshim's units get the runtime defines of a
    build mode (pipeline.runtime_defines), as the build gives them."""
    gcc = require_program("gcc", "gcc")
    defines = pipeline.runtime_defines(mode) if path.startswith("csrc/lib/") else []
    cmd = [gcc, "-c", "-o", "/dev/null", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
           "-fvisibility=hidden", "-pthread", *defines, *flags, f"-I{pipeline.CSRC}",
           f"-I{pipeline.TOOLS}", f"-I{generated}",
           f"-I{sysconfig.get_paths()['include']}", str(ROOT / path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_every_shipped_c_file_is_analysed_or_a_named_bridge():
    assert set(UNITS) >= {"csrc/lib/api.c", "csrc/lib/dispatch.c", "csrc/lib/failure.c",
                          "csrc/lib/guest.c", "csrc/lib/memory.c", "csrc/lib/runtime.c",
                          "csrc/tools/dnsshim-dump.c", "csrc/tools/dnsshim_probe.c",
                          "csrc/firmware/contextvars.c", "csrc/firmware/crc32.c"}
    assert BRIDGES <= set(SHIPPED), "a bridge named here is no longer shipped"


@pytest.mark.parametrize("path", UNITS)
def test_compiles_on_its_own_without_a_warning(path, generated):
    result = _compile(path, generated)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize("path", UNITS)
def test_the_static_analyser_finds_nothing(path, generated):
    result = _compile(path, generated, "-fanalyzer")
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr and "error" not in result.stderr, result.stderr


@pytest.mark.parametrize("mode", [pipeline.Mode.PACKAGE, pipeline.Mode.BUNDLE,
                                  pipeline.Mode.PREFIX])
def test_the_runtime_in_every_installed_layout(mode, generated):
    """runtime.c's code differs by layout (where its Python is)."""
    result = _compile("csrc/lib/runtime.c", generated, "-fanalyzer", mode=mode)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_analyser_does_fail_on_a_finding(tmp_path, generated):
    """The check above can fail: a leak the analyser must report."""
    leak = tmp_path / "leak.c"
    leak.write_text("#include <stdlib.h>\nint f(int n) { char *p = malloc(4);"
                    " if (!p) return 0; if (n) return 1; free(p); return 0; }\n")
    result = _compile(str(leak), generated, "-fanalyzer")
    assert result.returncode != 0
    assert "-Wanalyzer-malloc-leak" in result.stderr or "malloc-leak" in result.stderr
