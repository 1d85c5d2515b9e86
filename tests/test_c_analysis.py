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

The build's own compile commands: a source-tree build (build_ffi.py --out)
writes, in its staged folder (pipeline.STAGED), the emitted units, the
generated headers, the objects and compile_commands.json, every unit of
every library with its real command for each product (the shared object,
the static archive); a command run again makes the object the build linked;
a unit whose commands agree is compiled once (counted through a logging
$CC); the archive made from the shared objects still exports only the API.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from dnsshim_build import pipeline
from conftest import ROOT, require_program

#: Each library's bridge, by path: compiled in its emitted unit.
BRIDGES = {str(library.source.relative_to(ROOT)): library for library in pipeline.LIBRARIES}

SHIPPED = sorted(str(path.relative_to(ROOT))
                 for folder in ("lib", "ares", "tools", "firmware", "nss", "service")
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
        # what a library compiles beside its bridge is what is analysed here;
        # a shared library's front (csrc/lib/front.c, csrc/ares/front.c) is
        # made of its units and front.c, and its runtime of the library's
        # objects and its own units (csrc/ares/runtime_entries.c)
        assert library.front and {"front.c"} == {unit.name for unit in library.front} - {
            unit.name for unit in library.units}
        assert {str(unit.relative_to(ROOT))
                for unit in (*library.units, *library.front, *library.runtime_units)} == {
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


# ---------------------------------------------------------------------------
# The build's compile commands (pipeline.compiles): each unit compiled once
# for the products whose command for it agrees, and a source-tree build's
# staged folder (pipeline.STAGED) with the emitted units, the generated
# headers, the objects and compile_commands.json, which an analyser reads.

#: A compiler that logs each of its invocations (its arguments, one line,
#: tab-separated) into $DNSSHIM_CC_LOG, then runs gcc.
_LOGGING_CC = """#!/bin/sh
if [ -n "$DNSSHIM_CC_LOG" ]; then
    (IFS="$(printf '\\t')"; printf '%s\\n' "$*") >> "$DNSSHIM_CC_LOG"
fi
exec {gcc} "$@"
"""


class StagedBuild:
    """A build's folder, its staged folder, the entries of its compilation
    database and its compiler's invocations (each a list of arguments)."""

    def __init__(self, out, log):
        self.out = out
        self.staged = out / pipeline.STAGED
        self.entries = json.loads((self.staged / pipeline.COMPILE_COMMANDS).read_text())
        self.invocations = [line.split("\t") for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def staged_build(tmp_path_factory):
    """python build_ffi.py --out DIR (a source-tree build), with $CC a
    compiler that logs its invocations."""
    gcc = require_program("gcc", "gcc")
    where = tmp_path_factory.mktemp("staged-build")
    cc, log = where / "logging-cc", where / "cc.log"
    cc.write_text(_LOGGING_CC.format(gcc=gcc))
    cc.chmod(0o755)
    log.touch()
    result = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--out",
                             str(where / "out")], capture_output=True, text=True, timeout=900,
                            env=dict(os.environ, CC=str(cc), DNSSHIM_CC_LOG=str(log)))
    assert result.returncode == 0, result.stderr[-3000:]
    return StagedBuild(where / "out", log)


def _sources(library, staged) -> list:
    """What the build compiles for a library: its emitted cffi unit, in the
    staged folder, then its units."""
    return [str(staged / f"{library.module}.c"), *map(str, library.units)]


def test_the_compile_commands_list_every_unit_of_each_library_for_each_product(staged_build):
    """For each library, its units with the shared object's command, then
    with the static archive's: each command the compile of its file into
    its output, with the product's defines, position independent, and the
    staged folder (the emitted units and the generated headers) on the
    include path."""
    staged, entries = staged_build.staged, staged_build.entries
    expected = [source for library in pipeline.LIBRARIES
                for source in 2 * _sources(library, staged)]
    assert [entry["file"] for entry in entries] == expected
    assert {pipeline.GENERATED_HEADER, pipeline.KINDS_HEADER} <= {
        path.name for path in staged.iterdir()}
    position = 0
    for library in pipeline.LIBRARIES:
        count = len(_sources(library, staged))
        for product in (pipeline.SHARED, pipeline.STATIC):
            defines = (pipeline.runtime_defines(pipeline.Mode.SOURCE_TREE,
                                                product == pipeline.SHARED)
                       if library.starts_runtime else [])
            for entry in entries[position:position + count]:
                arguments = entry["arguments"]
                assert set(entry) == {"directory", "arguments", "file", "output"}
                assert os.path.isdir(entry["directory"])
                assert os.path.isfile(entry["file"]) and os.path.isfile(entry["output"])
                assert arguments[-3:] == [entry["file"], "-o", entry["output"]]
                assert "-c" in arguments and "-fPIC" in arguments
                assert f"-I{staged}" in arguments and f"-I{pipeline.CSRC}" in arguments
                assert all(define in arguments for define in defines), (product, entry)
                assert Path(entry["output"]).parent == staged / library.name
            position += count


def _text(obj) -> bytes:
    """The code of an object: its .text section's bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "text.bin"
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.text", str(obj), str(out)],
                       check=True)
        return out.read_bytes()


@pytest.mark.parametrize("library", pipeline.LIBRARIES, ids=lambda library: library.name)
def test_an_entry_run_again_makes_the_object_the_build_linked(staged_build, library, tmp_path):
    """The emitted cffi unit's and the first unit's commands, run again as
    the database says (but for their output): the code is the build's."""
    require_program("objcopy", "binutils")
    for source in _sources(library, staged_build.staged)[:2]:
        entry = next(e for e in staged_build.entries if e["file"] == source)
        again = tmp_path / Path(entry["output"]).name
        arguments = [*entry["arguments"][:-1], str(again)]
        subprocess.run(arguments, cwd=entry["directory"], check=True, timeout=600,
                       env=dict(os.environ, DNSSHIM_CC_LOG=""))
        code = _text(entry["output"])
        assert code and _text(again) == code, source


def test_a_unit_whose_commands_agree_is_compiled_once(staged_build):
    """A source-tree build's shared object and archive are told the same
    (runtime_defines): each unit's two commands agree, so it has one object,
    compiled once (the compiler's log: one invocation with -c per unit), and
    both products are made from it (two invocations without: the links)."""
    staged, entries = staged_build.staged, staged_build.entries
    for library in pipeline.LIBRARIES:
        for source in _sources(library, staged):
            both = [e for e in entries if e["file"] == source]
            assert len(both) == 2 and both[0] == both[1], source
    compiled = [args[-3] for args in staged_build.invocations if "-c" in args]
    sources = [source for library in pipeline.LIBRARIES
               for source in _sources(library, staged)]
    assert sorted(compiled) == sorted(sources)
    links = [args for args in staged_build.invocations if "-c" not in args]
    # the NSS module and each library's front (plain C) are each compiled
    # and linked in one step
    nss = [args for args in links if str(pipeline.NSS_SOURCE) in args]
    assert len(nss) == 1 and "-shared" in nss[0]
    fronts = [args for args in links if any(str(library.front[-1]) in args
                                           for library in pipeline.LIBRARIES)]
    assert len(fronts) == len(pipeline.LIBRARIES) and all("-shared" in a for a in fronts)
    links = [args for args in links if args not in nss and args not in fronts]
    assert len(links) == len(pipeline.LIBRARIES) and all("-shared" in args for args in links)


def test_commands_that_differ_get_an_object_each():
    """An installed form's shared object and archive are told different
    things (a static archive finds nothing from a path of its own): each of
    libdnsshim's units has an object per product; libdnsshim_ares's, told
    nothing, one object for both."""
    for library in pipeline.LIBRARIES:
        defines = {product: (pipeline.runtime_defines(pipeline.Mode.PACKAGE,
                                                      product == pipeline.SHARED)
                             if library.starts_runtime else [])
                   for product in (pipeline.SHARED, pipeline.STATIC)}
        c_file = Path("/work") / f"{library.module}.c"
        units = pipeline.compiles(library, c_file, defines, Path("/objects"))
        shared = [u for u in units if u.product == pipeline.SHARED]
        static = [u for u in units if u.product == pipeline.STATIC]
        assert [u.source for u in shared] == [u.source for u in static] == [
            c_file, *library.units]
        for one, other in zip(shared, static):
            if library.starts_runtime:
                assert one.command != other.command and one.output != other.output
                assert one.output.name.endswith(".shared.o")
            else:
                assert (one.command, one.output) == (other.command, other.output)


@pytest.mark.parametrize("library", pipeline.LIBRARIES, ids=lambda library: library.name)
def test_the_static_archive_exports_only_the_api(staged_build, library):
    """Made from the objects the shared object links, the archive's hidden
    symbols are still made local: its global names are its export file's
    and its cffi module's init (PyMODINIT_FUNC is visible: no version
    script hides it in a static link, as libdnsshim_ares.map does in the
    shared object)."""
    require_program("nm", "binutils")
    out = subprocess.run(["nm", "-g", "--defined-only", str(staged_build.out / library.archive)],
                         capture_output=True, text=True, check=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if len(line.split()) == 3}
    assert defined == pipeline.exported_names(library) | {f"PyInit_{library.module}"}
