"""The self-contained bundle (python -m shim bundle, dnsshim_build/bundle.py).

A bundle is built once, copied to a new place, and the C test program is
built against the copy with the copy's pkg-config file.  Then the program
runs the whole comparison (the test vectors, the malformed cases, the
corpus, the API contract) in a mount namespace where the Python
installation the bundle came from, the virtualenv, pyenv, this source tree
and the original bundle are empty folders and the copy is read-only, with
every file it opens traced (none for writing):
its output must be byte for byte that of the program built against the
ordinary library (which tests/test_c_programs.py compares with dnspython's
own parse), and it must open nothing outside the bundle, the C runtime's
libraries and its own inputs.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from dnsshim_build import pipeline
import malformed
import reference
import vectors
from conftest import ROOT, build_code_in, built_once, require_program, split_log, write_messages

TAG = sysconfig.get_python_version()


@pytest.fixture(scope="session")
def bundle(tmp_path_factory):
    """(original folder, its summary): a stripped bundle of the default level."""
    def make(folder):
        result = subprocess.run([sys.executable, "-m", "shim", "bundle", str(folder / "dnsshim"),
                                 "--strip"], capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert result.returncode == 0, result.stderr
    where = built_once(tmp_path_factory, "bundle", make) / "dnsshim"
    summary = json.loads((where / "share" / "dnsshim" / "bundle.json").read_text())
    return where, summary


@pytest.fixture(scope="module")
def moved(bundle, tmp_path_factory):
    """The bundle copied elsewhere, and dnsshim_test built against the copy
    through its own pkg-config file."""
    place = tmp_path_factory.mktemp("device") / "opt" / "dnsshim"
    shutil.copytree(bundle[0], place, symlinks=True)
    env = {**os.environ, "PKG_CONFIG_PATH": str(place / "lib" / "pkgconfig")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    program = place.parent / "dnsshim_test"
    pipeline.compile_program([ROOT / "tests" / "c" / "dnsshim_test.c"], program, flags=flags,
                              cflags=("-Werror",))
    return place, program


@pytest.fixture(scope="module")
def message_files(tmp_path_factory):
    return write_messages(tmp_path_factory.mktemp("bundle-messages"), accepted=True,
                         corpus=("good", "bad", "captures", "cares-fuzzinput"))


def _hidden_paths(bundle_dir):
    """Every place a Python installation (or this project) could be found."""
    paths = {sys.base_prefix, sys.prefix, sys.exec_prefix, str(ROOT), str(bundle_dir)}
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    paths.add(pyenv)
    for base in ("/usr/lib", "/usr/local/lib", "/usr/lib64"):
        if os.path.isdir(base):
            paths.update(os.path.join(base, d) for d in os.listdir(base)
                         if re.fullmatch(r"python3(\.\d+)?", d))
    paths = sorted(os.path.realpath(p) for p in paths if os.path.isdir(p))
    # The outermost ones: a folder inside a hidden one is hidden with it.
    return [p for p in paths if p != "/" and not any(p.startswith(q + "/") for q in paths)]


def _require_isolation():
    for tool, package in (("unshare", "util-linux"), ("strace", "strace"),
                          ("pkg-config", "pkg-config")):
        require_program(tool, package)
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        why = "unshare -m is not permitted here (needs root)"
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the bundle without Python: {why}")
        pytest.skip(why)


def run_without_python(moved, bundle_dir, args, trace):
    """dnsshim_test args, in a mount namespace where no Python is, traced."""
    _require_isolation()
    place, program = moved
    hide = " && ".join(f"mount -t tmpfs none '{p}'" for p in _hidden_paths(bundle_dir))
    # The bundle read-only, as in a firmware image.
    read_only = f"mount --bind '{place}' '{place}' && mount -o remount,bind,ro '{place}'"
    command = [str(program), *map(str, args)]
    script = (f"{hide} && {read_only} && exec strace -f -qq -e trace=open,openat,execve "
              f"-o '{trace}' " + " ".join(f"'{c}'" for c in command))
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                            text=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                            cwd="/", timeout=900)
    return result


# The C runtime's libraries and configuration and the kernel's files: what
# any C program may open (time zone: the time module's tzset; protocols:
# dnspython's WKS module asks getprotobyname).
SYSTEM = ("/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime", "/etc/nsswitch.conf",
          "/etc/protocols", "/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/",
          "/proc/", "/dev/", "/sys/")


def opened_for_writing(trace):
    """The paths the trace opened for writing: the library writes nothing."""
    return sorted(re.search(r'"([^"]*)"', line).group(1)
                  for line in Path(trace).read_text().splitlines()
                  if re.search(r"\bopen(at)?\(", line) and re.search(r"O_WRONLY|O_RDWR|O_CREAT", line))


def opened_outside(trace, allowed_dirs, allowed_files):
    """The paths of the trace's open, openat and execve calls (succeeded or
    not) that are neither in the bundle, nor the C runtime's, nor inputs."""
    outside = set()
    for line in Path(trace).read_text().splitlines():
        m = re.search(r'\b(open|openat|execve)\((?:AT_FDCWD, )?"([^"]*)"', line)
        if not m:
            continue
        path = m.group(2)
        if path in allowed_files or any(path.startswith(d) for d in allowed_dirs):
            continue
        if path.startswith(SYSTEM) and "python" not in path:
            continue
        outside.add(path)
    return sorted(outside)


def test_bundle_runs_the_whole_comparison_with_no_python(built, bundle, moved, message_files,
                                                         tmp_path):
    place, program = moved
    trace = tmp_path / "trace.txt"
    result = run_without_python(moved, bundle[0], message_files, trace)
    assert result.returncode == 0, result.stderr[-3000:]
    # The same bytes as the library of the virtualenv, for every file.
    ordinary = subprocess.run([str(built.test_prog), *map(str, message_files)],
                              capture_output=True, text=True, timeout=900)
    assert ordinary.returncode == 0, ordinary.stderr
    assert result.stdout == ordinary.stdout
    assert result.stderr == ""
    logs = split_log(result.stdout)
    assert len(logs) == len(message_files)
    for name in vectors.NAMES:  # and dnspython's own reading, directly
        path = next(f for f in message_files if f.name == f"vector_{name}.bin")
        assert logs[str(path)] == reference.expected_log(vectors.wire(name)), name
    assert sum(log[-1] == "status 0 success" for log in logs.values()) > len(vectors.NAMES)
    outside = opened_outside(trace, [str(place) + "/"],
                             {str(program), *map(str, message_files)})
    assert outside == [], outside
    assert opened_for_writing(trace) == []


def test_bundle_api_contract_with_no_python(bundle, moved, tmp_path):
    trace = tmp_path / "trace.txt"
    result = run_without_python(moved, bundle[0], ["--api"], trace)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "api: 0 failed" in result.stdout
    assert opened_outside(trace, [str(moved[0]) + "/"], {str(moved[1])}) == []


def test_bundle_valgrind(moved, message_files):
    """The bundle's own start-up code (csrc/lib/dns_shim.c's bundle mode) under
    memcheck: 0 errors, no definite or indirect leak."""
    from test_c_programs import VALGRIND, _require_valgrind

    _require_valgrind()
    vectors_only = [f for f in message_files if f.name.startswith("vector_")]
    result = subprocess.run([*VALGRIND, str(moved[1]), "--registered", *vectors_only],
                            capture_output=True, text=True, timeout=900,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.count("status 0 success") >= len(vectors.NAMES) - 1


def test_bundle_layout(bundle):
    where, summary = bundle
    lib = where / "lib"
    assert os.readlink(lib / "libdnsshim.so") == "libdnsshim.so.1"
    dynamic = subprocess.run(["readelf", "-d", str(lib / "libdnsshim.so.1")], capture_output=True,
                             text=True, check=True).stdout
    assert "[$ORIGIN]" in dynamic and f"[libpython{TAG}.so.1.0]" in dynamic
    assert (lib / f"libpython{TAG}.so.1.0").is_file()
    assert (where / "include" / "dns_shim.h").read_bytes() == \
        (ROOT / "csrc" / "dns_shim.h").read_bytes()
    pc = (lib / "pkgconfig" / "dnsshim.pc").read_text()
    assert pc.startswith("prefix=${pcfiledir}/../..\n")
    for name in ("CPython", "dnspython", "cffi"):
        assert (where / "share" / "licenses" / name / "LICENSE").is_file(), name
    py = lib / f"python{TAG}"
    assert not list(py.rglob("*.py")), "compiled modules only, no sources"
    assert not list(py.rglob("__pycache__"))
    assert b"DNS Names." in (py / "dns" / "name.pyc").read_bytes()  # level 0 keeps docstrings
    # Every RDATA module of dnspython, whichever a message needs.
    import dns.rdtypes

    source = Path(dns.rdtypes.__file__).parent
    for module in source.rglob("*.py"):
        assert (py / "dns" / "rdtypes" / module.relative_to(source).with_suffix(".pyc")).is_file()
    assert (py / f"_cffi_backend{sysconfig.get_config_var('EXT_SUFFIX')}").is_file()
    assert (py / "shim" / "embedded.pyc").is_file() and (py / "shim" / "glue.pyc").is_file()
    # What the library's interpreter never imports is not there: the Python
    # API, importlib.metadata (shim/embedded.py answers dns._features), and
    # OpenSSL's hashlib backend (hashlib takes CPython's own).
    for absent in ("shim/api.pyc", "shim/dump.pyc", "importlib/metadata",
                   "zipfile.pyc", "email", f"lib-dynload/_hashlib{sysconfig.get_config_var('EXT_SUFFIX')}"):
        assert not (py / absent).exists(), absent
    # Stripped: no symbol table left in the shared objects.
    for so in [lib / "libdnsshim.so.1", lib / f"libpython{TAG}.so.1.0", *py.rglob("*.so")]:
        sections = subprocess.run(["readelf", "-S", str(so)], capture_output=True, text=True,
                                  check=True).stdout
        assert ".symtab" not in sections, so
    assert summary["bytes"] == sum(p.stat().st_size for p in where.rglob("*")
                                   if p.is_file() and not p.is_symlink() and
                                   p.name != "bundle.json")
    assert "libc.so.6" in summary["system_libraries"]


def test_bundle_holds_no_build_code(bundle):
    where, _ = bundle
    assert list(where.rglob("glue.pyc")), "the bundle has no shim package to look in"
    assert build_code_in(where) == []


def test_bundle_tracebacks_name_no_file(bundle):
    """Each compiled module's code is named <dnsshim REL>, a name no traceback
    looks for as a file: a relative one would be looked up, and read, in the
    program's current directory whenever a failure is reported."""
    import marshal

    py = bundle[0] / "lib" / f"python{TAG}"
    names = {}
    for pyc in py.rglob("*.pyc"):
        code = marshal.loads(pyc.read_bytes()[16:])
        names[pyc.relative_to(py)] = code.co_filename
    assert len(names) > 100
    for rel, name in names.items():
        assert name == f"<dnsshim {rel.with_suffix('.py')}>", (rel, name)


def test_bundle_options_and_refusals(tmp_path):
    where = tmp_path / "opt2"
    result = subprocess.run([sys.executable, "-m", "shim", "bundle", str(where), "--optimize", "2",
                             "--extra-module", "json"], capture_output=True, text=True, cwd=ROOT,
                            timeout=600)
    assert result.returncode == 0, result.stderr
    py = where / "lib" / f"python{TAG}"
    assert (py / "json" / "__init__.pyc").is_file() and (py / "json" / "tool.pyc").is_file()
    # Level 2 drops docstrings: dns/name.py's module docstring is not in its .pyc.
    assert b"DNS Names." not in (py / "dns" / "name.pyc").read_bytes()
    again = subprocess.run([sys.executable, "-m", "shim", "bundle", str(where)],
                           capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 1 and "is not empty" in again.stderr
    missing = subprocess.run([sys.executable, "-m", "shim", "bundle", str(tmp_path / "none"),
                              "--extra-module", "no_such_module_here"], capture_output=True,
                             text=True, cwd=ROOT, timeout=600)
    assert missing.returncode == 1 and "no_such_module_here" in missing.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("folder", ["elsewhere", "other/lib"])
def test_bundle_library_outside_its_bundle_refuses_to_start(built, bundle, tmp_path, folder):
    """A bundle's library copied out of its bundle (into a folder not named
    lib, or a lib/ with no python3.X beside it, as a distribution's /usr/lib
    might be) finds no bundle there: it refuses with DNS_SHIM_ERR_INIT and
    says why, rather than start some other Python it finds around it."""
    import shutil
    where = bundle[0]
    place = tmp_path / folder
    place.mkdir(parents=True)
    for so in (where / "lib").glob("lib*.so*"):
        shutil.copy(so, place / so.name, follow_symlinks=True)
    message = tmp_path / "good.bin"
    message.write_bytes(malformed.GOOD)
    result = subprocess.run([str(built.test_prog), str(message)], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(place)},
                            timeout=120)
    assert "status -14 " in result.stdout, result.stdout + result.stderr
    assert "is not the lib/ of a bundle" in result.stderr
