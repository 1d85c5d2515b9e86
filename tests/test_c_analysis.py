"""Every shipped C file compiled with -Wall -Wextra and through gcc's static
analyser (-fanalyzer), without a finding.

A unit compiles on its own, with -Werror, against what a reader has: the
public header and csrc/ (-I csrc, -I csrc/tools), Python's headers, and the
generated headers the build writes (pipeline.generated_headers:
dns_shim_generated.h and dns_shim_kinds.h).

A bridge (BRIDGES: each library's cffi preamble, Library.source) sees
cffi's runtime and generated code, so it compiles only inside the unit
pipeline.emit writes, which includes it by its path (pipeline.preamble):
that unit is compiled as the build compiles it, and no diagnostic may be
located in any file but cffi's own emitted <module>.cffi.c.  cffi's code is
not this project's: its diagnostics there (an unused parameter of its
runtime, say) are ignored, by their location alone.
"""

import re
import shutil
import subprocess
import sysconfig

import pytest

from dnsshim_build import pipeline
from conftest import ROOT, require_program

#: Each library's bridge, by path: compiled in its emitted unit.
BRIDGES = {str(library.source.relative_to(ROOT)): library for library in pipeline.LIBRARIES}

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


def test_every_shipped_c_file_is_a_unit_or_a_bridge():
    assert set(BRIDGES) == {"csrc/lib/dns_shim.c", "csrc/ares/dnsshim_ares.c"}
    assert set(BRIDGES) <= set(SHIPPED), "a library's bridge is not among the files found"
    assert set(UNITS) >= {"csrc/lib/api.c", "csrc/lib/dispatch.c", "csrc/lib/failure.c",
                          "csrc/lib/guest.c", "csrc/lib/memory.c", "csrc/lib/runtime.c",
                          "csrc/ares/check.c", "csrc/ares/free.c", "csrc/ares/memory.c",
                          "csrc/ares/owned.c",
                          "csrc/ares/parsers.c", "csrc/ares/structures.c",
                          "csrc/tools/dnsshim-dump.c", "csrc/tools/dnsshim_probe.c",
                          "csrc/firmware/contextvars.c", "csrc/firmware/crc32.c"}
    for library in pipeline.LIBRARIES:
        # what a library compiles beside its bridge is what is analysed here
        assert {str(unit.relative_to(ROOT)) for unit in library.units} == {
            path for path in UNITS if path.startswith(str(library.source.parent.relative_to(ROOT)))}


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


def test_the_pool_of_a_firmware_object_with_its_copies(generated, tmp_path):
    """pool.c as python -m shim firmware --parallelism compiles it (its
    interpreters the copies linked in), and the table of the copies the
    build writes (firmware.pool_table), each on its own."""
    from dnsshim_build import firmware

    table = firmware.pool_table(3, tmp_path / "pool-table.c")
    for path in ("csrc/lib/pool.c", str(table)):
        result = _compile(path, generated, "-fanalyzer", "-DDNS_SHIM__POOL_LINKED=3",
                          mode=pipeline.Mode.FIRMWARE)
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


# ---------------------------------------------------------------------------
# The bridges, in the unit cffi's code is compiled in


@pytest.fixture(scope="module")
def emitted(tmp_path_factory):
    """{bridge path: the library's emitted unit} (pipeline.emit)."""
    return {path: pipeline.emit(library, tmp_path_factory.mktemp(library.name))
            for path, library in BRIDGES.items()}


_DIAGNOSTIC = re.compile(r"^(?P<file>[^ :][^:]*):\d+:\d+: (?:fatal )?(?:warning|error): .*$",
                         re.M)


def _findings(stderr: str, unit) -> list:
    """The diagnostics (their first lines) not located in cffi's emitted
    file, <module>.cffi.c beside the unit: the bridge's, a header's."""
    cffi_file = str(unit.with_suffix(".cffi.c"))
    return [m.group(0) for m in _DIAGNOSTIC.finditer(stderr) if m.group("file") != cffi_file]


def _compile_unit(path: str, unit, *flags, include=()):
    """gcc on a bridge's emitted unit, as the build compiles it (a library
    that starts the runtime gets a build mode's defines), with -Wall
    -Wextra but not -Werror: cffi's code may warn.  include: directories
    searched before csrc/ (a planted copy of a bridge)."""
    gcc = require_program("gcc", "gcc")
    library = BRIDGES[path]
    defines = (pipeline.runtime_defines(pipeline.Mode.SOURCE_TREE)
               if library.starts_runtime else [])
    cmd = [gcc, "-c", "-o", "/dev/null", "-std=gnu11", "-Wall", "-Wextra",
           "-fvisibility=hidden", "-pthread", *defines, *flags,
           *(f"-I{d}" for d in include), f"-I{pipeline.CSRC}", f"-I{unit.parent}",
           f"-I{sysconfig.get_paths()['include']}", str(unit)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("path", sorted(BRIDGES))
def test_the_emitted_unit_includes_the_bridge_itself(path, emitted):
    """The preamble cffi is given is the bridge's own file, so that the
    compiler (and so the checks below) sees it as itself."""
    cffi_text = emitted[path].with_suffix(".cffi.c").read_text(encoding="utf-8")
    assert cffi_text.count(f'#include "{path[len("csrc/"):]}"\n') == 1


@pytest.mark.parametrize("path", sorted(BRIDGES))
def test_the_bridge_compiles_without_a_warning(path, emitted):
    result = _compile_unit(path, emitted[path])
    assert result.returncode == 0, result.stderr
    assert _findings(result.stderr, emitted[path]) == [], result.stderr


@pytest.mark.parametrize("path", sorted(BRIDGES))
def test_the_static_analyser_finds_nothing_in_the_bridge(path, emitted):
    result = _compile_unit(path, emitted[path], "-fanalyzer")
    assert result.returncode == 0, result.stderr
    assert _findings(result.stderr, emitted[path]) == [], result.stderr


def test_the_bridge_check_does_fail_on_a_finding(tmp_path, emitted):
    """The checks above can fail: a copy of the c-ares bridge with a planted
    warning and a planted leak, found first on the include path, is the
    bridge compiled, and both are reported in it."""
    path = "csrc/ares/dnsshim_ares.c"
    planted = tmp_path / "ares" / "dnsshim_ares.c"
    planted.parent.mkdir()
    shutil.copyfile(ROOT / path, planted)
    with open(planted, "a", encoding="utf-8") as f:
        f.write("#include <stdlib.h>\n"
                "int dnsshim_ares__planted_compare(int a) { unsigned u = 1; return a < u; }\n"
                "int dnsshim_ares__planted_leak(int n) { char *p = malloc(4);"
                " if (!p) return 0; if (n) return 1; free(p); return 0; }\n")
    result = _compile_unit(path, emitted[path], "-fanalyzer", include=[tmp_path])
    found = [line for line in _findings(result.stderr, emitted[path])
             if line.startswith(f"{planted}:")]
    assert any("-Wsign-compare" in line for line in found), result.stderr
    assert any("-Wanalyzer-malloc-leak" in line for line in found), result.stderr


@pytest.mark.parametrize("path", sorted(BRIDGES))
def test_the_guest_check_reads_cffi_runtime_before_the_bridge(path, emitted, tmp_path):
    """pipeline.check_for_guest finds cffi's runtime as the text before the
    bridge's #include: it accepts cffi's file as emitted, and refuses one
    whose bridge comes before the runtime's two guest calls."""
    library = BRIDGES[path]
    cffi_file = emitted[path].with_suffix(".cffi.c")
    pipeline.check_for_guest(cffi_file, library)
    text = cffi_file.read_text(encoding="utf-8")
    include = pipeline.preamble(library)
    moved = tmp_path / cffi_file.name
    moved.write_text(include + text.replace(include, ""), encoding="utf-8")
    with pytest.raises(SystemExit, match="before the preamble, not one"):
        pipeline.check_for_guest(moved, library)
