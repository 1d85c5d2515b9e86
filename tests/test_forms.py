"""What each install form has of 1.3's features: one matrix (forms_matrix.py's
EXPECTED, which README.md's table under "### What each form has" repeats),
observed from C and from Python for every form this machine builds: the
virtualenv of ``pip install .`` (conftest's ``installed``), the prefix install
(test_prefix_install.py's ``standalone``), the bundle (test_bundle.py's
``bundle``) and the firmware object (test_firmware.py's ``firmware``, and for
parallelism test_parallelism.py's ``parallel_firmware``, built with
``--parallelism 2``).  The Debian packages' rows: test_debian.py's
test_the_packages_have_what_the_forms_matrix_says, on the same data.

For each form, tests/c/forms_probe.c is built as a user builds against it
(the form's pkg-config file; with libdnsshim_ares and c-ares 1.34, the
``cares134`` fixture, where the form has the c-ares layer) and run: its
lines on parallelism, the c-ares layer and the memory limit; a Python program
loads the form's library with ctypes (guest mode); the manual is looked for
where the form puts it.  Each form's row of what it has must be EXPECTED's
exactly, and what it lacks must be the exact refusal or absence
(forms_matrix.ABSENT): the bundle's DNS_SHIM_ERR_UNSUPPORTED naming the worker
image, no libdnsshim_ares and no manual in a bundle or a firmware object's
folder, a firmware object with no shared object and no global Py* symbol that,
linked into one and loaded into a Python program, parses in its own
interpreter.  The forms are the session's (conftest.built_once): nothing is
built here but the probe (and the firmware object linked as a shared object).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dnsshim_build import firmware as firmware_build, pipeline
import cprograms
import forms_matrix as fm
from conftest import ROOT, require_program, require_tool
from test_bundle import bundle  # noqa: F401 (fixture)
from test_firmware import LIBS, firmware  # noqa: F401 (fixture)
from test_parallelism import parallel_firmware  # noqa: F401 (fixture)
from test_prefix_install import standalone  # noqa: F401 (fixture)

ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}
VERSION = pipeline.package_version()
#: The Python program the guest runs in, where the form's own is not a
#: virtualenv's: the CPython this one is based on (the one the libraries
#: were built with, the bundle's).
HOST_PYTHON = sys._base_executable


@pytest.fixture(scope="module")
def probe_messages(tmp_path_factory):
    """(folder, the probe's arguments, relative to it)."""
    where = tmp_path_factory.mktemp("forms-messages")
    return where, fm.write_probe_messages(where)


def _pkg_config(pc_dir, *args):
    require_program("pkg-config", "pkg-config")
    return subprocess.run(["pkg-config", *args], capture_output=True, text=True, check=True,
                          env={**ENV, "PKG_CONFIG_PATH": str(pc_dir)}).stdout.split()


def _build_probe(out: Path, flags, ares: bool) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    return pipeline.compile_program(
        [fm.PROBE_SOURCE], out, flags=flags,
        cflags=(*cprograms.STRICT, *(("-DFORMS_PROBE_ARES",) if ares else ())))


def _run_probe(program: Path, probe_messages) -> dict:
    where, args = probe_messages
    result = subprocess.run([str(program), *args], capture_output=True, text=True, cwd=where,
                            env=ENV, timeout=600)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout + result.stderr[-3000:]
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"version {VERSION} (CPython 3."), first
    return fm.probe_lines(result.stdout)


def _cares_flags(cares) -> list:
    """c-ares 1.34 (cares134), linked after libdnsshim_ares."""
    return [f"-I{cares.include}", f"-L{cares.lib}", f"-Wl,-rpath,{cares.lib}", "-lcares"]


def _guest(python, lib, probe_messages) -> str:
    result = subprocess.run([str(python), "-I", "-c", fm.GUEST_PROGRAM, str(lib), "good.bin"],
                            capture_output=True, text=True, cwd=probe_messages[0], env=ENV,
                            timeout=600)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout + result.stderr[-3000:]
    return result.stdout.strip()


def _man(mandir: Path) -> str:
    """The man line of a form whose manual is in mandir: man -w where man-db
    is installed (in CI it must be)."""
    found = None
    if shutil.which("man") or os.environ.get("CI"):
        require_program("man", "man-db")
        found = subprocess.run(["man", "-M", str(mandir), "-w", *fm.MAN_ASKED],
                               capture_output=True, text=True, env=ENV).stdout.strip()
    return fm.man_line(str(mandir), fm.pages_under(mandir), found)


def _no_cares_in(root: Path) -> str:
    """The c-ares line of a folder without the layer (a bundle), or what
    of it is there."""
    libs = sorted(p.name for p in (root / "lib").glob("libdnsshim_ares*"))
    pcs = sorted(p.name for p in (root / "lib" / "pkgconfig").glob("dnsshim-ares*"))
    if libs or pcs:
        return f"c-ares: {', '.join(libs + pcs)}"
    return "c-ares: none: no libdnsshim_ares in lib/, no dnsshim-ares.pc"


def _require_worker_image() -> None:
    """The virtualenv's and the prefix's worker image, which their install
    builds where this machine can (Debian's python3-dev and libffi-dev):
    without it they have no parallelism, and their rows are not asserted
    (CI has it)."""
    from dnsshim_build import worker

    why = worker.unavailable()
    require_tool(f"the worker image's build ({why})", "python3-dev libffi-dev", not why)


def _python_version(python) -> str:
    return subprocess.run([str(python), "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()


# ---- each form's lines ---------------------------------------------------------------------


def _venv(request, tmp_path, probe_messages):
    _require_worker_image()
    venv = request.getfixturevalue("installed")
    cares = request.getfixturevalue("cares134")

    def config(*options):
        return subprocess.run([str(venv / "bin" / "dnsshim-config"), *options],
                              capture_output=True, text=True, check=True, env=ENV,
                              cwd="/").stdout.strip()

    flags = _pkg_config(config("--pkgconfig-dir"), "--cflags", "--libs", "dnsshim-ares",
                        "dnsshim")
    program = _build_probe(tmp_path / "venv" / "forms_probe", [*flags, *_cares_flags(cares)],
                           ares=True)
    lines = _run_probe(program, probe_messages)
    lines["guest"] = _guest(venv / "bin" / "python", Path(config("--libdir")) / "libdnsshim.so.1",
                            probe_messages)
    lines["man"] = _man(venv / "share" / "man")
    return lines, {}


def _prefix(request, tmp_path, probe_messages):
    _require_worker_image()
    prefix = request.getfixturevalue("standalone")[0]
    cares = request.getfixturevalue("cares134")
    flags = _pkg_config(prefix / "lib" / "pkgconfig", "--cflags", "--libs", "dnsshim-ares",
                        "dnsshim")
    program = _build_probe(tmp_path / "prefix" / "forms_probe", [*flags, *_cares_flags(cares)],
                           ares=True)
    lines = _run_probe(program, probe_messages)
    lines["guest"] = _guest(HOST_PYTHON, prefix / "lib" / "libdnsshim.so.1", probe_messages)
    lines["man"] = _man(prefix / "share" / "man")
    return lines, {}


def _bundle(request, tmp_path, probe_messages):
    root = request.getfixturevalue("bundle")[0]
    flags = _pkg_config(root / "lib" / "pkgconfig", "--cflags", "--libs", "dnsshim")
    program = _build_probe(tmp_path / "bundle" / "forms_probe", flags, ares=False)
    lines = _run_probe(program, probe_messages)
    lines["c-ares"] = _no_cares_in(root)
    lines["guest"] = _guest(HOST_PYTHON, root / "lib" / "libdnsshim.so.1", probe_messages)
    lines["man"] = fm.no_manual(root)
    return lines, {"libdir": os.path.realpath(root / "lib")}


def _firmware(request, tmp_path, probe_messages):
    """The object of --parallelism 2 for parallelism; the default object for
    everything else, and its refusal of parallelism checked here."""
    default = request.getfixturevalue("firmware")
    parallel = request.getfixturevalue("parallel_firmware")

    def probe(fw, name):
        flags = _pkg_config(fw / "lib" / "pkgconfig", "--cflags", "--libs", "dnsshim-fw")
        program = _build_probe(tmp_path / name / "forms_probe", flags, ares=False)
        return program, _run_probe(program, probe_messages)

    program, lines = probe(default, "firmware")
    _, with_option = probe(parallel, "firmware-parallel")
    # Without the option: the library's refusal, naming a worker image beside
    # the program (test_parallelism.py's test_a_firmware_object_without_...).
    assert lines["parallelism"] == fm.NO_IMAGE_REFUSAL.format(
        libdir=os.path.realpath(program.parent))
    assert with_option["memory limit"] == lines["memory limit"]
    lines["parallelism"] = with_option["parallelism"]

    obj = default / "lib" / "libdnsshim_fw.o"
    defined, undefined = firmware_build.nm_symbols("nm", obj, "-g")
    pcs = sorted(p.name for p in (default / "lib" / "pkgconfig").iterdir())
    manifest = json.loads((default / "share" / "dnsshim" / "firmware.json").read_text())
    if defined == set(pipeline.header_functions()) and pcs == ["dnsshim-fw.pc"] \
            and manifest["c-ares layer"] is False:
        lines["c-ares"] = fm.ABSENT["firmware"]["c-ares"]
    else:
        lines["c-ares"] = (f"c-ares: the object defines {sorted(defined)}; .pc files {pcs}; "
                           f"the manifest's c-ares layer: {manifest['c-ares layer']}")

    # Guest mode: no shared object to load, no interpreter of a program's to
    # take (every Py* symbol is the object's own); linked into a shared
    # object all the same and loaded into a Python program, it parses in its
    # own interpreter, which the program's sys.modules and the limit show.
    shared = [str(p.relative_to(default)) for p in default.rglob("*.so*")]
    python_symbols = sorted(n for n in defined | undefined if n.startswith(("Py", "_Py")))
    so = tmp_path / "firmware-shared" / "libdnsshim_fw.so"
    so.parent.mkdir()
    subprocess.run([pipeline.compiler(), "-shared", "-o", str(so), "-Wl,--whole-archive",
                    str(obj), "-Wl,--no-whole-archive", *LIBS], check=True)
    loaded = _guest(HOST_PYTHON, so, probe_messages).removeprefix("guest: ")
    if shared or python_symbols:
        lines["guest"] = f"guest: shared objects {shared}, Py* symbols {python_symbols}; {loaded}"
    else:
        lines["guest"] = ("guest: none: no shared object in the folder, no Py* symbol global or "
                          f"needed; linked into one: {loaded}")
    lines["man"] = fm.no_manual(default)
    return lines, {"python": _python_version(HOST_PYTHON)}


OBSERVE = {"venv": _venv, "prefix": _prefix, "bundle": _bundle, "firmware": _firmware}


@pytest.mark.parametrize("form", ["venv", "prefix", "bundle",
                                  pytest.param("firmware",
                                               marks=pytest.mark.python_independent)])
def test_the_form_has_what_the_matrix_says(request, form, tmp_path, probe_messages):
    lines, context = OBSERVE[form](request, tmp_path, probe_messages)
    fm.assert_row(form, lines, fm.message_count(probe_messages[1]), **context)


# ---- the matrix itself and the README's table ---------------------------------------------------


def test_the_matrix_is_whole():
    """Every form has every feature's cell with a reason; a form lacking a
    feature has its exact refusal or absence, and only those."""
    assert set(fm.EXPECTED) == set(fm.FORMS)
    for form, row in fm.EXPECTED.items():
        assert list(row) == list(fm.FEATURES), form
        assert all(isinstance(has, bool) and why for has, why in row.values()), form
        lacks = {feature for feature, (has, _) in row.items() if not has}
        assert set(fm.ABSENT.get(form, {})) == lacks, form
    assert set(fm.ABSENT) <= set(fm.FORMS)


def test_the_columns_follow_the_layouts_parts():
    """The columns without the manual, libdnsshim_ares or a worker image are
    the forms shim/layout.py gives no such part."""
    from shim import layout

    forms = {"venv": layout.PACKAGE, "prefix": layout.PREFIX, "debian12": layout.DEBIAN,
             "debian13": layout.DEBIAN, "bundle": layout.BUNDLE, "firmware": layout.FIRMWARE}
    for form, shape in forms.items():
        # the package pip installs puts the manual in the virtualenv's
        # share/man, outside its root (setup.py's data files)
        assert fm.EXPECTED[form]["man"][0] == (shape.has("man") or form == "venv"), form
        assert fm.EXPECTED[form]["guest"][0] == (shape.finds is not layout.Finds.FROZEN), form


def _readme_table(text: str) -> str | None:
    """The Markdown table after HEADING in text, or None without the heading."""
    lines = text.splitlines()
    if fm.HEADING not in lines:
        return None
    after = lines[lines.index(fm.HEADING) + 1:]
    start = next((i for i, line in enumerate(after) if line.startswith("|")), None)
    if start is None or any(line.startswith("#") for line in after[:start]):
        return ""
    table = []
    for line in after[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table) + "\n"


def test_the_readme_table_is_the_matrix():
    table = _readme_table((ROOT / "README.md").read_text())
    insert = f"{fm.HEADING}\n\n{fm.readme_table()}"
    assert table is not None, f"README.md has no {fm.HEADING!r}: insert\n\n{insert}"
    assert table == fm.readme_table(), f"README.md's table is not the matrix's:\n\n{insert}"
