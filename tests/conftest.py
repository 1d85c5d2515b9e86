"""Shared fixtures: the built library and C programs, the corpus, the ABI.

The library and the C programs are built once per session into a temporary
directory, from this checkout, exactly as a developer builds them
(``python build_ffi.py`` then ``python tests/cprograms.py``).
"""

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import cffi
import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT))

from dnsshim_build import pipeline  # noqa: E402
import cprograms  # noqa: E402


import tiers  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--loops", choices=("full", "short"),
                     default=os.environ.get("DNSSHIM_TEST_LOOPS") or "full",
                     help="the long loops' sizes (mutants, history, threads, soak): full (the "
                          "default, and CI's) or short, a tenth or less; "
                          "$DNSSHIM_TEST_LOOPS sets the default")


#: The setting of the long loops' sizes (--loops), read by loops().
_LOOPS = {"size": os.environ.get("DNSSHIM_TEST_LOOPS") or "full"}


def pytest_configure(config):
    _LOOPS["size"] = config.getoption("--loops")
    # Every program the tests run parses in its own process unless its test
    # names a parse service (test_service*.py, test_nss.py, the benchmark):
    # what a test of the process's runtime sees must not depend on whether
    # the machine runs dnsshimd.  The modules that build an environment from
    # nothing say the same in theirs.
    os.environ["DNS_SHIM_SERVICE"] = "none"


def loops(full: int, short: int) -> int:
    """A long loop's size: ``full`` (the default, and CI's), or ``short``
    under --loops short.  Read when a test module is imported, after the
    option is parsed.  A count asserted exactly is asserted at full size
    only (full_loops())."""
    return full if full_loops() else short


def full_loops() -> bool:
    return _LOOPS["size"] == "full"


def pytest_collection_modifyitems(config, items):
    """The tiers of tests/tiers.py, as markers: ``quick`` for the quick
    tier's modules, ``cpython`` for the tests whose subject depends on the
    CPython running pytest (their module's, less those marked
    python_independent)."""
    for item in items:
        if Path(item.path).parent != Path(__file__).parent:
            continue  # a test a test writes and runs, with this file as a plugin
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module in tiers.QUICK:
            item.add_marker(pytest.mark.quick)
        depends = tiers.CPYTHON.get(module)
        if depends is None:
            raise pytest.UsageError(f"{module} is not in tests/tiers.py's CPYTHON: say whether "
                                    "its subject depends on the CPython running pytest")
        if depends[0] and item.get_closest_marker("python_independent") is None:
            item.add_marker(pytest.mark.cpython)


class Built:
    def __init__(self, out: Path):
        self.dir = out
        self.lib = out / "libdnsshim.so"
        self.test_prog = out / "dnsshim_test"
        self.stress_prog = out / "dnsshim_stress"
        self.dump_prog = out / "dnsshim-dump"
        self.service_prog = out / "dnsshimd"


def built_once(tmp_path_factory, name: str, make) -> Path:
    """A folder ``make(folder)`` fills, once per test session: in a run of
    several workers (pytest-xdist), the first worker to ask makes it under
    the run's shared temporary folder while the others wait for it, and
    every worker gets that folder; alone, it is made in the session's own.
    The form a fixture builds is then built once, whichever worker's tests
    need it.  A folder that failed is made again by the next to ask, and
    fails there too: the failure is reported where it happens."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        where = tmp_path_factory.mktemp(name)
        make(where)
        return where
    shared = tmp_path_factory.getbasetemp().parent
    where, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            make(where)
            done.touch()
    return where


def _build(out: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--out", str(out)],
                   check=True, capture_output=True, text=True)
    cprograms.build(out)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Built:
    """Both libraries and the C programs, built once per session."""
    return Built(built_once(tmp_path_factory, "build", _build))


@pytest.fixture(scope="session")
def abi(built):
    """The library loaded into this process through its C ABI (cffi ABI mode)."""
    ffi = cffi.FFI()
    ffi.cdef(pipeline.header_cdef())
    lib = ffi.dlopen(str(built.lib))
    return ffi, lib


@pytest.fixture(scope="session")
def library_modules(abi):
    """The library's Python side as it runs in this process: its own private
    copy (shim/guest.py), since this process is a Python program that loads
    it; ``library_modules["shim.glue"]`` is the glue its calls go through."""
    abi[1].dns_shim_init()
    own = sys.modules["_dnsshim_cffi"]
    return own.__dnsshim_guest__.modules


@pytest.fixture(scope="session")
def header_ffi():
    """An ABI-mode ffi with the header's types, for the glue layer alone."""
    ffi = cffi.FFI()
    ffi.cdef(pipeline.header_cdef())
    return ffi


def _corpus(folder: str):
    """The files of ../shared/corpus/<folder>, or None where it is absent.

    A user's clone has no ../shared: the tests that read it are skipped there
    with a reason; CI (CI=true) always has it, so there a missing corpus fails.
    """
    path = CORPUS / folder
    if not path.is_dir():
        if os.environ.get("CI"):
            raise RuntimeError(f"CI must have the corpus at {path}")
        return None
    return sorted(p for p in path.iterdir() if p.is_file() and p.suffix not in (".txt", ".tsv"))


def _no_corpus_reason(folder: str) -> str:
    return f"no corpus at {CORPUS / folder} (it is beside the project in CI)"


def corpus_files(folder: str) -> list:
    """The corpus files of a folder, for parametrize (one skipped case where absent)."""
    files = _corpus(folder)
    if files is None:
        return [pytest.param(None, marks=pytest.mark.skip(reason=_no_corpus_reason(folder)))]
    return files


def require_corpus(folder: str) -> list:
    """The corpus files of a folder, inside a test: skips the test where absent."""
    files = _corpus(folder)
    if files is None:
        pytest.skip(_no_corpus_reason(folder))
    return files


def available_corpus(*folders) -> list:
    """The files of those folders that are present (all of them in CI)."""
    return [p for folder in folders for p in (_corpus(folder) or [])]


def write_messages(where: Path, accepted: bool = False, corpus=()) -> list:
    """The test vectors (vector_NAME.bin) and the malformed cases
    (bad_NAME.bin) written into where, with accepted the odd but valid ones
    too (ok_NAME.bin), then the files of the corpus folders present."""
    import malformed
    import vectors

    messages = [(f"vector_{name}", vectors.wire(name)) for name in vectors.NAMES]
    messages += [(f"bad_{name}", wire) for name, (wire, _) in malformed.CASES.items()]
    if accepted:
        messages += [(f"ok_{name}", wire) for name, wire in malformed.ACCEPTED.items()]
    files = []
    for name, wire in messages:
        files.append(Path(where) / f"{name}.bin")
        files[-1].write_bytes(wire)
    return files + available_corpus(*corpus)



# A user's shell: byte-compiling on (pip's build otherwise warns that it is off).
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """A virtualenv with `pip install .` of this checkout, once per session
    (test_install, test_cmake): pip's verbose output, the build backend's
    included, is in pip-install.log beside it.  Tests only read it."""
    def make(d):
        # An empty cache, as on a fresh machine: the install's isolated build
        # downloads cffi's source for the worker image itself (and whether
        # the package holds an image does not depend on what ran before).
        (d / "cache").mkdir()
        venv = d / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        result = subprocess.run([str(venv / "bin" / "pip"), "install", "-v", str(ROOT)],
                                capture_output=True, text=True, timeout=900,
                                env={**USER_ENV, "XDG_CACHE_HOME": str(d / "cache")})
        (d / "pip-install.log").write_text(result.stdout + result.stderr)
        assert result.returncode == 0, result.stderr[-3000:]
    return built_once(tmp_path_factory, "installed", make) / "venv"


#: pyenv's root, where the tests look for other CPython installations: $PYENV_ROOT, as
#: pyenv itself takes it, else its default.
PYENV_ROOT = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")

# ---- optional tools --------------------------------------------------------------
# A user's machine may lack a tool that only some tests need; those tests skip
# there, naming the Debian package that brings it.  CI (CI=true) installs them
# all (.ci/run), so there a missing one fails, as a missing corpus does.


def require_tool(what: str, package: str, found: bool) -> None:
    """Skip the test unless found (fail instead under CI=true)."""
    if found:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI (.ci/run installs the Debian package {package})")
    pytest.skip(f"{what}: not installed (Debian: apt-get install {package})")


def require_program(program: str, package: str) -> str:
    """The path of an optional program; skips the test where it is absent."""
    path = shutil.which(program)
    require_tool(program, package, path is not None)
    return path


#: The unprivileged user the setuid tests run their programs as.
NOBODY = 65534

#: What an unprivileged user would set to take over the library in a
#: privileged program: a Python of their choosing, a pool of their size.
HOSTILE_ENV = {"DNS_SHIM_PYTHON": "/nonexistent/dnsshim-hostile/bin/python3",
               "DNS_SHIM_PARALLELISM": "hostile"}


@contextlib.contextmanager
def setuid_root_copy(program: Path):
    """A setuid-root copy of ``program`` in a folder an unprivileged user can
    reach (pytest's own are root's alone); skips where that needs a root
    this test does not have, or setpriv is absent."""
    if os.geteuid() != 0:
        pytest.skip("making a setuid-root program needs root")
    require_program("setpriv", "util-linux")
    where = Path(tempfile.mkdtemp(prefix="dnsshim-setuid-"))
    try:
        os.chmod(where, 0o755)
        copy = where / program.name
        shutil.copyfile(program, copy)
        os.chown(copy, 0, 0)
        os.chmod(copy, 0o4755)
        yield copy
    finally:
        shutil.rmtree(where)


def as_user(user: int, *cmd) -> list:
    """cmd run as ``user`` (uid and gid), with no supplementary groups."""
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *map(str, cmd)]


def require_cares() -> None:
    """c-ares's headers and library, as the build of the C programs found
    them (cprograms.cares_flags: asked once per run, so that every test
    agrees with what was built, whatever is installed meanwhile)."""
    require_program("pkg-config", "pkg-config")
    require_tool("c-ares's headers (libcares.pc)", "libc-ares-dev",
                 cprograms.cares_flags() is not None)


def run_test_prog(built: Built, *args, env=None, cwd=None):
    return subprocess.run([str(built.test_prog), *map(str, args)], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


def split_log(stdout: str) -> dict:
    """dnsshim_test's output as {file: [lines]}."""
    logs, current = {}, None
    for line in stdout.splitlines():
        if line.startswith("# "):
            current = logs.setdefault(line[2:], [])
        else:
            current.append(line)
    return logs


# ---- the sanitizers ---------------------------------------------------------------


@pytest.fixture(scope="session")
def sanitized_build(tmp_path_factory):
    """Both libraries and the C programs built with ASan and UBSan
    (tests/sanitizers.py): ``.dir``, ``.programs`` (name -> path), ``.env``
    (the sanitizers' options) and ``.run(name, *args)``, which fails on any
    sanitizer report."""
    import sanitizers

    return sanitizers.built(built_once(tmp_path_factory, "sanitized", sanitizers.build))


# ---- the build's code, which no installed form carries ----------------------------

#: The build's modules (dnsshim_build/ and build_ffi.py), by the names they
#: had or could be given in a shipped tree: written out here, not read from
#: the tree, so that a build module moved back into shim/ is caught.
BUILD_MODULES = frozenset({"build_ffi", "pipeline", "header", "bundle", "elf", "firmware",
                           "firmware_freeze", "install", "man", "man_roff", "man_markdown",
                           "worker"})


def build_code_in(tree) -> list:
    """The files or folders of the build's code under tree: dnsshim_build/
    anywhere, build_ffi.py, or a build module in a shim package (as .py or
    .pyc)."""
    found = []
    for path in Path(tree).rglob("*"):
        if path.name == "dnsshim_build" or path.name.startswith("build_ffi."):
            found.append(path)
        elif path.suffix in (".py", ".pyc") and path.name.split(".")[0] in BUILD_MODULES \
                and "shim" in path.relative_to(tree).parts[:-1]:
            found.append(path)
    return sorted(found)



# ---- the real c-ares 1.34, built from source -------------------------------------------


def require_download(why: str) -> None:
    """Skip the test: what it needs could not be downloaded (why); fail
    instead under CI=true, where the network is at hand."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must be able to download it: {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def cares134():
    """c-ares 1.34 as a shared library (tests/cares_source.py), built once and
    cached: ``.lib`` (libcares.so.2's folder), ``.include``, ``.source``
    (c-ares's source tree), ``.fuzzinput``.  Skips where cmake is missing or
    PyPI cannot be reached with nothing cached (fails instead in CI)."""
    import cares_source

    require_program("cmake", "cmake")
    try:
        return cares_source.library()
    except cares_source.Unavailable as why:
        require_download(str(why))


@pytest.fixture(scope="session")
def arestest(cares134):
    """c-ares's own test suite, built from the same source with its tests
    enabled (cached beside the library): the program's path."""
    import cares_source

    require_program("g++", "g++")
    require_tool("GoogleTest and GoogleMock", "libgtest-dev libgmock-dev",
                 cares_source.gtest_found())
    return cares_source.arestest()


@pytest.fixture(scope="session")
def ares_dnsrec(cares134, tmp_path_factory):
    """tests/c/ares_dnsrec.c built against c-ares 1.34: the program's path."""
    import cares_source

    return cares_source.build_driver(cares134, tmp_path_factory.mktemp("ares_dnsrec"))
