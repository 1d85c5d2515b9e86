"""A build without what it needs stops first, with one line naming the
missing piece and the Debian command that installs it: no C compiler,
Python.h missing, a Python without a shared libpython.

Each case is simulated: $CC or PATH for the compiler, and for the others a
sitecustomize.py that makes sysconfig answer as such a Python would (an
include directory without Python.h, Py_ENABLE_SHARED 0, a LIBDIR without
libpython), in the process that builds (build_ffi.py, or pip's build
backend), never in pip itself.
"""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT

PREFIX = "dnsshim: cannot build libdnsshim: "
VER = f"{sys.version_info.major}.{sys.version_info.minor}"
DEV = r"apt-get install python3(\.\d+)?-dev"


def _sitecustomize(tmp_path, paths=None, config_vars=None):
    """A directory for PYTHONPATH whose sitecustomize overrides sysconfig."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""\
        import os, sys, sysconfig
        if os.path.basename(sys.argv[0]) in ("build_ffi.py", "_in_process.py"):
            _paths, _vars = {paths or {}!r}, {config_vars or {}!r}
            _get_paths, _get_var = sysconfig.get_paths, sysconfig.get_config_var
            sysconfig.get_paths = lambda *a, **k: dict(_get_paths(*a, **k), **_paths)
            sysconfig.get_config_var = lambda name: _vars.get(name, _get_var(name))
        """))
    return site


def _empty(tmp_path):
    d = tmp_path / "empty"
    d.mkdir(exist_ok=True)
    return d


# (missing piece, how to simulate it, the one line expected as a regex)
CASES = {
    "python_h": (lambda t: ({"PYTHONPATH": str(_sitecustomize(t, paths={"include": str(_empty(t))}))}),
                 lambda t: rf"Python\.h is not in {_empty(t)} \(the C headers of .*\); on Debian: "
                           + DEV),
    "not_shared": (lambda t: {"PYTHONPATH": str(_sitecustomize(
                       t, config_vars={"Py_ENABLE_SHARED": 0}))},
                   lambda t: r".* has no shared libpython \(it was built without --enable-shared\)"
                             r"; on Debian: apt-get install python3-dev and use Debian's "
                             r"/usr/bin/python3, or rebuild this Python with --enable-shared "
                             rf"\(pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {VER}\)"),
    "no_libpython": (lambda t: {"PYTHONPATH": str(_sitecustomize(
                         t, config_vars={"LIBDIR": str(_empty(t))}))},
                     lambda t: rf"the shared libpython libpython{VER}\S*\.so is not in {_empty(t)}"
                               "; on Debian: " + DEV),
    "cc_from_env": (lambda t: {"CC": "/nonexistent"},
                    lambda t: r"the C compiler /nonexistent \(from \$CC\) is not found; on Debian: "
                              r"apt-get install gcc, or set CC to a C compiler"),
    "no_compiler": (lambda t: {"CC": "", "PATH": str(_empty(t)), "PYTHONPATH": str(
                        _sitecustomize(t, config_vars={"CC": "no-such-gcc -pthread"}))},
                    lambda t: r"no C compiler \(no-such-gcc or cc on PATH\); on Debian: "
                              r"apt-get install gcc"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_build_ffi_stops_with_one_line(tmp_path, case):
    simulate, expected = CASES[case]
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--out", str(out)],
                            capture_output=True, text=True, env=dict(os.environ, **simulate(tmp_path)),
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(PREFIX)
    assert re.fullmatch(expected(tmp_path), lines[0][len(PREFIX):]), lines[0]
    assert not out.exists()  # stopped before anything was generated or compiled


@pytest.fixture(scope="module")
def build_venv(tmp_path_factory):
    """A virtualenv with the build requirements, for `pip install
    --no-build-isolation .` (an isolated build would not see PYTHONPATH)."""
    venv = tmp_path_factory.mktemp("build-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "setuptools>=77",
                             "cffi>=1.17"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


def _pip_stops_early(result, expected):
    output = result.stdout + result.stderr
    assert result.returncode != 0
    found = [line.strip() for line in output.splitlines() if PREFIX in line]
    assert len(found) == 1, output[-3000:]
    assert re.fullmatch(expected, found[0].split(PREFIX, 1)[1]), found[0]
    assert "_dnsshim_cffi.c" not in output  # nothing generated, nothing compiled


@pytest.mark.parametrize("case", sorted(CASES))
def test_pip_install_stops_with_one_line(build_venv, tmp_path, case):
    simulate, expected = CASES[case]
    env = dict(os.environ, **simulate(tmp_path))
    if "PATH" in simulate(tmp_path):
        env["PATH"] = f"{build_venv / 'bin'}:{env['PATH']}"  # pip's own, nothing else
    result = subprocess.run([str(build_venv / "bin" / "pip"), "install", "--no-deps",
                             "--no-build-isolation", str(ROOT)], capture_output=True,
                            text=True, env=env, timeout=600)
    _pip_stops_early(result, expected(tmp_path))


def test_pip_install_as_the_readme_runs_it_stops_without_a_compiler(tmp_path):
    """The README's own form (an isolated build) with CC=/nonexistent."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", str(ROOT)],
                            capture_output=True, text=True, timeout=900,
                            env=dict(os.environ, CC="/nonexistent"))
    _pip_stops_early(result, CASES["cc_from_env"][1](tmp_path))
