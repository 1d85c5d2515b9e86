"""Every way an installation can be wrong: its exact status and its exact
first log line, which names what was tried and the fix.

Each case runs the C test driver (``dnsshim_test --log --detail``) in a
minimal environment over one good message: the first log line (through the
program's log handler), the status (DNS_SHIM_ERR_INIT, never 0) and
``dns_shim_last_error`` (that line after the status's name) are checked to
the letter.  The c-ares layer answers ARES_ENOTINITIALIZED with the same
line; ``dnsshim-dump --check`` says it and exits 1.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from dnsshim_build import pipeline
import cares_source
import cprograms
import malformed
from conftest import PYENV_ROOT, ROOT, require_cares
from test_install import source_copy
from shim import requirements

TAG = sysconfig.get_python_version()
INIT = "status -14 the embedded Python runtime could not start"
ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}


@pytest.fixture(scope="module")
def message(tmp_path_factory):
    path = tmp_path_factory.mktemp("startup") / "good.bin"
    path.write_bytes(malformed.GOOD)
    return path


def run(program, *args, env=None):
    return subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=300)


def refusal(built_dir, message, env=None, stderr="") -> str:
    """The first log line of a library that cannot start, after checking
    the status, that nothing went to stderr (but what CPython itself writes
    there, starting with ``stderr``), and that dns_shim_last_error says the
    same."""
    result = run(built_dir / "dnsshim_test", "--log", "--detail", message, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(stderr) and (stderr or result.stderr == ""), \
        "with a handler, nothing of the library's goes to stderr"
    lines = result.stdout.splitlines()
    assert lines[0] == f"# {message}"
    logs = [line for line in lines if line.startswith("log ")]
    errors = [line for line in logs if line.startswith("log 3: ")]
    assert len(errors) == 1, logs
    assert lines[-2:] == [INIT, f"detail DNS_SHIM_ERR_INIT: {errors[0][len('log 3: '):]}"]
    return logs[0]


#: The old dnspython wheels the floor tests install: fetched once, then kept
#: (the project's own cache, as tests/cares_source.py's).
WHEELS = cares_source.CACHE / "wheels"


def dnspython_wheel(version: str) -> Path:
    """dnspython's wheel of that release, from the cache (downloaded from
    PyPI the first time)."""
    found = sorted(WHEELS.glob(f"dnspython-{version}-*.whl"))
    if found:
        return found[0]
    WHEELS.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                             "--only-binary", ":all:", "--dest", str(WHEELS),
                             f"dnspython=={version}"],
                            capture_output=True, text=True, timeout=600)
    found = sorted(WHEELS.glob(f"dnspython-{version}-*.whl"))
    if result.returncode != 0 or not found:
        if os.environ.get("CI") == "true":
            pytest.fail(f"dnspython {version}'s wheel could not be fetched: "
                        f"{result.stderr.strip()[-500:]}")
        pytest.skip(f"dnspython {version}'s wheel is not cached in {WHEELS} and PyPI cannot "
                    "be reached")
    return found[0]


def bare_venv(path, with_cffi=False, with_dnspython=None):
    """A virtualenv without pip; with the running Python's cffi backend
    copied in, and dnspython of a given version installed (pip --target,
    from its cached wheel, with no index)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = path / "lib" / f"python{TAG}" / "site-packages"
    if with_cffi:
        import _cffi_backend
        shutil.copy(_cffi_backend.__file__, site)
    if with_dnspython:
        wheel = dnspython_wheel(with_dnspython)
        result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                                 "--no-index", "--target", str(site), str(wheel)],
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
    return path / "bin" / "python"


def searched(python) -> str:
    """The sys.path the library's interpreter has with this python: the
    folder of the shim package the test build uses (the clone) first, then
    that python's own."""
    own = subprocess.run([str(python), "-I", "-c",
                          "import sys; print(', '.join(p or '.' for p in sys.path))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return f"{ROOT}, {own}"


FIX_ENV = (f"set DNS_SHIM_PYTHON to the python executable of a CPython {TAG} installation, or "
           "unset it")
FIX_BUILD = (f"rebuild the library with a CPython {TAG} that stays where it is (pip install . in "
             "a virtualenv of it, or python build_ffi.py), or set DNS_SHIM_PYTHON to one")


def test_dns_shim_python_that_does_not_exist(built, message):
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": "/nonexistent/bin/python3"})
    assert line == ("log 3: cannot start: the python /nonexistent/bin/python3 (from "
                    f"DNS_SHIM_PYTHON) does not exist (moved or removed): {FIX_ENV}")


def _without_dac_override(built_dir, message, env):
    """dnsshim_test's log, run by root without the capabilities that let it
    past a folder's permissions (setpriv drops them from the bounding set
    before exec): a user who cannot read what the library names."""
    from conftest import require_program
    require_program("setpriv", "util-linux")
    if os.geteuid() != 0:
        pytest.skip("dropping root's capabilities needs root")
    result = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search",
                             str(built_dir / "dnsshim_test"), "--log", "--detail", str(message)],
                            capture_output=True, text=True, env={**ENV, **env}, timeout=300)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.startswith("log 3: ")]


def test_dns_shim_python_the_user_cannot_read_says_so(built, message, tmp_path):
    """A CPython under a folder closed to the user (one under /root, run by
    another user): "cannot be read", never "does not exist"."""
    closed = tmp_path / "closed"
    (closed / "bin").mkdir(parents=True)
    python = closed / "bin" / "python3"
    python.symlink_to(sys.executable)
    closed.chmod(0)
    try:
        lines = _without_dac_override(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    finally:
        closed.chmod(0o755)
    assert lines == [f"log 3: cannot start: the python {python} (from DNS_SHIM_PYTHON) cannot "
                     "be read by this process's user (uid 0): a folder on its path is closed to "
                     "it (Permission denied); every user of the library must be able to read its "
                     f"CPython: {FIX_ENV}"]


def test_dns_shim_python_the_user_cannot_run_says_so(built, message, tmp_path):
    python = tmp_path / "python3"
    shutil.copyfile(sys.executable, python)
    python.chmod(0o700)
    os.chown(python, 65534, 65534)
    lines = _without_dac_override(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    assert lines == [f"log 3: cannot start: the python {python} (from DNS_SHIM_PYTHON) cannot "
                     "be run by this process's user (uid 0): Permission denied; every user of the "
                     f"library must be able to run its CPython: {FIX_ENV}"]


def test_dns_shim_python_that_is_a_directory(built, message, tmp_path):
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(tmp_path)})
    assert line == (f"log 3: cannot start: the python {tmp_path} (from DNS_SHIM_PYTHON) is not "
                    f"an executable file: {FIX_ENV}")


def test_dns_shim_python_that_is_not_a_path(built, message):
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": "python3"})
    assert line == ("log 3: cannot start: the python python3 (from DNS_SHIM_PYTHON) is not an "
                    f"absolute path: {FIX_ENV}")


def test_dns_shim_python_of_another_minor_version(built, message):
    others = sorted(p for p in glob.glob(os.path.join(PYENV_ROOT, "versions/3.*/bin/python3.*"))
                    if not p.endswith(f"python{TAG}") and p[-1].isdigit())
    if not others:
        pytest.skip("no other CPython minor version on this machine")
    other = others[-1]
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": other})
    assert line == (f"log 3: this library embeds CPython {TAG} but the Python it was given, "
                    f"{other}, is CPython {other.rsplit('python', 1)[1]}: rebuild the library "
                    f"with that Python, or set DNS_SHIM_PYTHON to a CPython {TAG}")


@pytest.mark.parametrize("program", ["/bin/true", "/bin/sh"])
def test_dns_shim_python_that_is_another_program(built, message, program):
    """An executable that is no python (it may well sit where a CPython's
    standard library is found from it: /bin is /usr/bin here)."""
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": program})
    assert line == (f"log 3: cannot start: the python {program} (from DNS_SHIM_PYTHON) is not a "
                    "python executable (its name, and its target's, does not start with "
                    f"\"python\", and no pyvenv.cfg is beside it): {FIX_ENV}")


def test_installation_without_a_compiled_module_of_the_standard_library(tmp_path):
    """An installation that has no file for a compiled module the parser
    needs, where the library's own installation has none either: one line,
    naming the module and the fix (requirements.on_another_installation,
    which the library runs at start-up on an installation other than its
    own, in a Python where _socket is unimportable)."""
    code = ("import sys; sys.modules['_socket'] = None; sys.modules.pop('socket', None);"
            "from shim import requirements;"
            "print(requirements.on_another_installation('/nonexistent', '/opt/py/bin/python3',"
            " 'from DNS_SHIM_PYTHON'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.strip()
    assert out == (f"the CPython installation at {sys.base_prefix} of /opt/py/bin/python3 (from "
                   f"DNS_SHIM_PYTHON) has no module _socket (needed by socket), and the "
                   f"library's own CPython {sys.version.split()[0]} has no file for it either: "
                   f"set DNS_SHIM_PYTHON to a complete CPython {TAG} installation, or rebuild "
                   "the library with one")


def test_python_without_cffi(built, message, tmp_path):
    python = bare_venv(tmp_path / "venv")
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    assert line == (f"log 3: cannot start: cffi's backend (_cffi_backend) is not installed for "
                    f"{python} (from DNS_SHIM_PYTHON): searched {searched(python)}; install it: "
                    f"{python} -m pip install 'cffi>={requirements.cffi_floor()}'")


def test_python_without_dnspython(built, message, tmp_path):
    python = bare_venv(tmp_path / "venv", with_cffi=True)
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    assert line == (f"log 3: cannot start: dnspython is not installed for {python} (from "
                    f"DNS_SHIM_PYTHON): searched {searched(python)}; install it: {python} -m pip "
                    f"install 'dnspython>={requirements.DNSPYTHON}'")


@pytest.mark.parametrize("version", ["2.9.0", "2.8.0"])
def test_dnspython_below_the_floor(built, message, tmp_path, version):
    """The releases below the floor, installed for real: 2.9.0 lacks the
    decompress argument the decoder passes, 2.8.0 the newest RDATA types."""
    python = bare_venv(tmp_path / "venv", with_cffi=True, with_dnspython=version)
    site = python.parent.parent / "lib" / f"python{TAG}" / "site-packages"
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    assert line == (f"log 3: cannot start: dnspython {version} ({site / 'dns'}) is older than "
                    f"{requirements.DNSPYTHON}, the oldest this library works with: upgrade it: "
                    f"{python} -m pip install 'dnspython>={requirements.DNSPYTHON}'")


def test_dnspython_below_the_floor_through_the_c_ares_layer(built, message, tmp_path):
    require_cares()
    python = bare_venv(tmp_path / "venv", with_cffi=True, with_dnspython="2.9.0")
    result = run(built.dir / "ares_every_parser", message, env={"DNS_SHIM_PYTHON": str(python)})
    assert result.returncode == 0
    assert "srv rc=21\n" in result.stdout and "a rc=21" in result.stdout  # ENOTINITIALIZED
    assert result.stderr.splitlines()[0].startswith(
        "dnsshim: cannot start: dnspython 2.9.0 (")  # the default handler: stderr


def test_cffi_below_the_floor(built, message, tmp_path):
    """An older cffi backend, stood in for by a module that says its version."""
    python = bare_venv(tmp_path / "venv")
    site = python.parent.parent / "lib" / f"python{TAG}" / "site-packages"
    (site / "_cffi_backend.py").write_text('__version__ = "1.14.6"\n')
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(python)})
    floor = requirements.cffi_floor()
    assert line == (f"log 3: cannot start: cffi 1.14.6 ({site / '_cffi_backend.py'}) is older "
                    f"than {floor}, the oldest this library works with on CPython {TAG}: "
                    f"upgrade it: {python} -m pip install 'cffi>={floor}'")


def test_interpreter_that_cannot_start(built, message, tmp_path):
    """An installation whose standard library is broken: CPython's own
    start fails, and says how."""
    python = tmp_path / "py" / "bin" / f"python{TAG}"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    stdlib = tmp_path / "py" / "lib" / f"python{TAG}"
    (stdlib / "encodings").mkdir(parents=True)
    (stdlib / "os.py").write_text("")
    (stdlib / "encodings" / "__init__.py").write_text("raise ImportError('broken')\n")
    # CPython's own words: before 3.13 it also writes its path configuration
    # to stderr; 3.13 writes nothing there.
    if sys.version_info < (3, 13):
        stderr = "Python path configuration:\n"
        why = "init_fs_encoding: failed to get the Python codec of the filesystem encoding"
    else:
        stderr, why = "", "Failed to import encodings module"
    line = refusal(built.dir, message, {"DNS_SHIM_PYTHON": str(python)}, stderr=stderr)
    assert line == (f"log 3: cannot start: the embedded CPython {TAG} of {python} (from "
                    f"DNS_SHIM_PYTHON) did not start ({why}): its installation is incomplete or "
                    f"moved; {FIX_ENV}")


def _linked_venv(path):
    """A virtualenv that sees this Python's packages (cffi, dnspython) by a
    .pth file: what a build needs, without a download."""
    python = bare_venv(path)
    site = path / "lib" / f"python{TAG}" / "site-packages"
    (site / "outer.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")))
    return python


def test_pinned_python_moved(message, tmp_path):
    """The virtualenv the library was built with is moved away."""
    python = _linked_venv(tmp_path / "venv")
    out = tmp_path / "out"
    subprocess.run([str(python), str(ROOT / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True)
    cprograms.build(out, ["dnsshim_test"])
    (tmp_path / "venv").rename(tmp_path / "elsewhere")
    line = refusal(out, message)
    assert line == (f"log 3: cannot start: the python {python} (pinned when the library was "
                    f"built) does not exist (moved or removed): {FIX_BUILD}")


def test_source_tree_moved(message, tmp_path):
    """A library built from a clone (build/, a prefix install) whose clone's
    shim package is gone."""
    clone = source_copy(tmp_path / "clone")
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(clone / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True)
    cprograms.build(out, ["dnsshim_test"])
    shutil.rmtree(clone / "shim")
    line = refusal(out, message)
    assert line == (f"log 3: cannot start: the shim package is not in {clone}, the source tree "
                    "the library was built from (it moved or was removed): rebuild the library "
                    "where its Python side stays (pip install ., or python build_ffi.py from "
                    "the clone)")


def test_broken_shim_package_logs_its_traceback_at_debug_level(message, tmp_path):
    clone = source_copy(tmp_path / "clone")
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(clone / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True)
    cprograms.build(out, ["dnsshim_test"])
    with open(clone / "shim" / "embedded.py", "a") as f:
        f.write("\nraise RuntimeError('broken on purpose')\n")
    result = run(out / "dnsshim_test", "--log", "--detail", message)
    logs = [line for line in result.stdout.splitlines() if line.startswith("log ")]
    assert logs[0] == ("log 3: cannot start: the parser could not be loaded (RuntimeError: "
                       "broken on purpose)")
    assert logs[1] == "log 7: Traceback (most recent call last):"
    assert result.stdout.splitlines()[-2] == INIT


def test_another_installation_of_the_same_minor_is_said_and_used(built, message):
    """Debian's own CPython of the library's minor version, given by
    DNS_SHIM_PYTHON: the same ABI, so the library goes on, with a warning
    naming both installations first; then what that installation lacks."""
    debian = f"/usr/bin/python{TAG}"
    if not os.path.exists(debian):
        pytest.skip(f"no {debian} on this machine")
    if os.path.realpath(sys.base_prefix) == "/usr":
        pytest.skip(f"the library is built with {debian}'s installation: there is no other")
    result = run(built.dir / "dnsshim_test", "--log", message, env={"DNS_SHIM_PYTHON": debian})
    logs = [line for line in result.stdout.splitlines() if line.startswith("log ")]
    libpython = os.path.realpath(os.path.join(sysconfig.get_config_var("LIBDIR"),
                                              sysconfig.get_config_var("INSTSONAME")))
    assert re.fullmatch(
        rf"log 4: runs on the CPython installation at /usr with libpython "
        rf"{re.escape(sys.version.split()[0])} \(\S*libpython{TAG}\.so\.1\.0\), not on the one "
        rf"it was built with, {re.escape(os.path.realpath(sys.base_prefix))} with "
        rf"{re.escape(sys.version.split()[0])}: the same minor version, so it goes on; rebuild "
        r"the library with this Python to silence this", logs[0]), logs[0]
    assert os.path.exists(libpython)


def test_an_installation_path_that_is_not_utf8_reaches_the_log_handler_as_text(built, message,
                                                                              tmp_path):
    """The warning naming another installation under a directory whose name
    is not UTF-8 (q\\xff): the handler gets UTF-8 text with the octet written
    \\xff, never NULL (it was a SIGSEGV); so do the start-up failure's line
    and dns_shim_last_error."""
    debian = f"/usr/bin/python{TAG}"
    if not os.path.exists(debian):
        pytest.skip(f"no {debian} on this machine")
    if os.path.realpath(sys.base_prefix) == "/usr":
        pytest.skip(f"the library is built with {debian}'s installation: there is no other")
    home = os.path.join(os.fsencode(tmp_path), b"q\xff")
    os.makedirs(os.path.join(home, b"bin"))
    os.makedirs(os.path.join(home, b"lib"))
    python = os.path.join(home, b"bin", os.fsencode(f"python{TAG}"))
    shutil.copy(debian, python)  # a copy: a symlink's installation is the target's
    os.symlink(os.fsencode(f"/usr/lib/python{TAG}"), os.path.join(home, b"lib",
                                                                  os.fsencode(f"python{TAG}")))
    result = subprocess.run([str(built.dir / "dnsshim_test"), "--log", "--detail", str(message)],
                            capture_output=True, env={**ENV, "DNS_SHIM_PYTHON": python},
                            timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode("utf-8").splitlines()  # strict: all of it is UTF-8
    logs = [line for line in lines if line.startswith("log ")]
    shown = f"{tmp_path}/q\\xff"
    # What the runtime then says of that installation names its python the
    # same way, in the log and in dns_shim_last_error.
    errors = [line for line in logs if line.startswith("log 3: ")]
    assert len(errors) == 1 and f"{shown}/bin/python{TAG} (from DNS_SHIM_PYTHON)" in errors[0]
    assert lines[-1] == f"detail DNS_SHIM_ERR_INIT: {errors[0][len('log 3: '):]}"
    assert logs[0] == (
        f"log 4: runs on the CPython installation at {shown} with libpython "
        f"{sys.version.split()[0]} ({os.path.realpath(_libpython())}), not on the one it was "
        f"built with, {os.path.realpath(sys.base_prefix)} with {sys.version.split()[0]}: the "
        "same minor version, so it goes on; rebuild the library with this Python to silence "
        "this")


def _libpython() -> str:
    return os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME"))


def test_dump_check_says_it_works(built):
    result = run(built.dump_prog, "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"library: {built.dir / 'libdnsshim.so.1'}, {pipeline.package_version()} " \
                       f"(CPython {TAG})"
    import _cffi_backend
    import dns.version
    assert lines[1].startswith(f"info: runtime: CPython {sys.version.split()[0]} (")
    assert f"dnspython {dns.version.version} (" in lines[1]
    assert f"cffi {_cffi_backend.__version__} ({_cffi_backend.__file__})" in lines[1]
    assert f"shim {pipeline.package_version()} ({ROOT / 'shim'})" in lines[1]
    assert lines[-1] == "check: ok: a sample response parsed (www.example.com A 192.0.2.1)"


def test_dump_check_says_why_not(built):
    result = run(built.dump_prog, "--check", env={"DNS_SHIM_PYTHON": "/nonexistent/bin/python3"})
    assert result.returncode == 1
    why = ("cannot start: the python /nonexistent/bin/python3 (from DNS_SHIM_PYTHON) does not "
           f"exist (moved or removed): {FIX_ENV}")
    assert result.stdout.splitlines()[1:] == [f"error: {why}",
                                              f"check: the runtime does not start: {why}"]


def _fronts_alone(built, where: Path, names) -> Path:
    """The two libraries' fronts (libdnsshim.so.1, libdnsshim_ares.so.1)
    copied into where without their runtimes, as an install that lost them
    leaves them, and the programs named linked against them."""
    where.mkdir()
    for library in pipeline.LIBRARIES:
        shutil.copyfile(built.dir / library.soname, where / library.soname)
        (where / library.link_name).symlink_to(library.soname)
    cprograms.build(where, names)
    return where


def test_the_library_s_runtime_missing(built, message, tmp_path):
    """libdnsshim.so.1 whose runtime (libdnsshim_runtime.so.1) is gone: a
    call the service does not answer cannot parse, and says which file and
    the fix."""
    lib = _fronts_alone(built, tmp_path / "lib", ["dnsshim_test"])
    runtime = lib / pipeline.RUNTIME_SONAME
    line = refusal(lib, message)
    assert line == (f"log 3: cannot load the runtime: {runtime}: cannot open shared object file: "
                    "No such file or directory; reinstall the library (its runtime is installed "
                    "beside it)")


def test_the_c_ares_layer_s_runtime_missing(built, message, tmp_path):
    """libdnsshim_ares.so.1 whose runtime (libdnsshim_ares_runtime.so.1) is
    gone: every parse the service does not answer is ARES_ENOTINITIALIZED,
    and the first line on stderr names the file and the fix, once."""
    require_cares()
    lib = _fronts_alone(built, tmp_path / "lib", ["ares_every_parser"])
    runtime = lib / pipeline.DNSSHIM_ARES.runtime_soname
    result = run(lib / "ares_every_parser", message, message)
    assert result.returncode == 0, result.stderr
    assert "a rc=21" in result.stdout and "srv rc=21\n" in result.stdout  # ENOTINITIALIZED
    assert "rc=0" not in result.stdout
    lines = result.stderr.splitlines()
    assert lines == [f"dnsshim_ares: cannot load the c-ares layer's runtime: {runtime}: cannot "
                     "open shared object file: No such file or directory; every parse the "
                     "service does not answer returns ARES_ENOTINITIALIZED; reinstall the "
                     "library (its runtime is installed with it)"]
