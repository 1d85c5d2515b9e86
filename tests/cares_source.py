"""The real c-ares 1.34, built from source, for the tests that need a newer
c-ares than the system's (Debian 12's libc-ares-dev is 1.18): ``ares_dns_parse``
and the DNS record API, c-ares's own test suite (``arestest``) and its fuzz
inputs.

    cares = library()       # Cares: .lib (libcares.so.2's folder), .include, .source
    program = arestest()    # c-ares's test suite, with its own libcares.so.2 beside it
    site = pycares()        # pycares from the same sdist, on library()'s libcares.so.2

    python tests/cares_source.py [--arestest] [--pycares]   the same from a shell: prints the paths

The source is c-ares as pycares's source distribution carries it
(``deps/c-ares``): the version and the sha256 of that file are pinned in one
place, ``tests/cares_source.toml``, and a download whose hash differs is
refused.  Everything is cached under ``${XDG_CACHE_HOME:-~/.cache}/dnsshim/``
(the project's own cache, as tests/debian_root.py's): the sdist, and in a
folder keyed by c-ares's version and the sdist's hash, its source tree and
each build, keyed by the build's options too.  Each is made in a temporary
folder beside its place and renamed into place whole, so an interrupted or
concurrent run never leaves a half-made one there.

A build needs cmake and a C compiler; arestest also needs a C++ compiler and
GoogleTest with GoogleMock (Debian: libgtest-dev, libgmock-dev); pycares
needs pip and its build requirements (setuptools, wheel, cffi) from PyPI.
The download needs PyPI (pip, as configured here): where the sdist is neither
cached nor downloadable, :class:`Unavailable` says why.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "cares_source.toml"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dnsshim"

#: The library's build: shared only, no tools, no tests.
LIBRARY_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DCARES_SHARED=ON", "-DCARES_STATIC=OFF",
                   "-DCARES_BUILD_TOOLS=OFF", "-DCARES_BUILD_TESTS=OFF", "-DCARES_INSTALL=ON",
                   "-DCMAKE_INSTALL_LIBDIR=lib")
#: arestest's build: the same library, with c-ares's tests, found at run time
#: beside the program (its run path only $ORIGIN/../lib, none of the build
#: folder's), so that the folder can be renamed.
ARESTEST_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DCARES_SHARED=ON", "-DCARES_STATIC=OFF",
                    "-DCARES_BUILD_TOOLS=OFF", "-DCARES_BUILD_TESTS=ON", "-DCARES_INSTALL=OFF",
                    "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON", "-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib")


class Unavailable(Exception):
    """Why c-ares cannot be had here (PyPI unreachable and nothing cached)."""


@dataclasses.dataclass(frozen=True)
class Cares:
    """A c-ares build: its prefix, ``lib`` (libcares.so.2), ``include``
    (ares.h and the rest), ``source`` (c-ares's source tree: ``test/``,
    ``test/fuzzinput/``) and ``version``."""

    prefix: Path
    source: Path
    version: str

    @property
    def lib(self) -> Path:
        return self.prefix / "lib"

    @property
    def include(self) -> Path:
        return self.prefix / "include"

    @property
    def fuzzinput(self) -> Path:
        return self.source / "test" / "fuzzinput"


@functools.lru_cache(maxsize=None)
def lock() -> dict:
    """tests/cares_source.toml: ``sdist`` (package, version, file, sha256)
    and ``cares`` (version, path inside the sdist)."""
    with open(LOCK, "rb") as f:
        return tomllib.load(f)


def home() -> Path:
    """The cache folder of this version and hash of the source."""
    pinned = lock()
    return CACHE / f"c-ares-{pinned['cares']['version']}-{pinned['sdist']['sha256'][:12]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _into_place(final: Path, make) -> Path:
    """final, made by make(folder) -> the path to rename into place, in a
    temporary folder beside it; where another run got there first, its copy
    is kept."""
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{final.name}-", dir=final.parent) as tmp:
        made = make(Path(tmp))
        try:
            os.rename(made, final)
        except OSError:
            if not final.exists():
                raise
    return final


def sdist() -> Path:
    """The pinned sdist, from the cache or downloaded by pip into it, its
    sha256 checked either way."""
    pinned = lock()["sdist"]
    path = CACHE / pinned["file"]

    def download(tmp: Path) -> Path:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--timeout", "30", "--retries", "1",
             "--dest", str(tmp), f"{pinned['package']}=={pinned['version']}"],
            capture_output=True, text=True, timeout=600)
        got = tmp / pinned["file"]
        if result.returncode != 0 or not got.is_file():
            last = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise Unavailable(f"pip could not download {pinned['package']}=={pinned['version']}"
                              f" from PyPI: {last}")
        return got

    _into_place(path, download)
    actual = _sha256(path)
    if actual != pinned["sha256"]:
        raise RuntimeError(f"{path} has sha256 {actual}, {LOCK.name} pins {pinned['sha256']}:"
                           " delete it to download it again")
    return path


def source() -> Path:
    """c-ares's source tree, unpacked from the sdist."""
    inside = f"{lock()['sdist']['file'].removesuffix('.tar.gz')}/{lock()['cares']['path']}/"

    def unpack(tmp: Path) -> Path:
        with tarfile.open(sdist()) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(inside)]
            if not members:
                raise RuntimeError(f"{sdist()} has no {inside}")
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp, members=members, filter="data")
            else:
                # CPython before 3.11.4 (Debian 12's 3.11.2) has no filters:
                # the same refusals by hand, for what this sdist holds
                for m in members:
                    if not (m.isfile() or m.isdir()) or m.name.startswith("/") \
                            or ".." in Path(m.name).parts:
                        raise RuntimeError(f"{sdist()}: refusing to unpack {m.name!r}")
                tar.extractall(tmp, members=members)
        return tmp / inside

    return _into_place(home() / "source", unpack)


def _options_key(options) -> str:
    return hashlib.sha256("\0".join(options).encode()).hexdigest()[:8]


def _run(cmd, log: Path, cwd=None) -> None:
    with open(log, "a") as out:
        out.write("$ " + " ".join(map(str, cmd)) + "\n")
        out.flush()
        result = subprocess.run(list(map(str, cmd)), stdout=out, stderr=subprocess.STDOUT,
                                cwd=cwd, timeout=3600)
    if result.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"c-ares build failed ({' '.join(map(str, cmd[:2]))} ...):\n{tail}")


def _jobs() -> str:
    return str(max(1, min(len(os.sched_getaffinity(0)), 4)))


def library() -> Cares:
    """c-ares as a shared library: libcares.so.2 and its headers, installed
    into the cache (Release, shared only, no tools)."""
    src = source()
    final = home() / f"shared-{_options_key(LIBRARY_OPTIONS)}"

    def build(tmp: Path) -> Path:
        log = tmp / "build.log"
        _run(["cmake", "-S", src, "-B", tmp / "build", *LIBRARY_OPTIONS,
              f"-DCMAKE_INSTALL_PREFIX={final}"], log)
        _run(["cmake", "--build", tmp / "build", "-j", _jobs()], log)
        # installed for its final place (the .pc's prefix), into a staging root
        env = {**os.environ, "DESTDIR": str(tmp / "root")}
        with open(log, "a") as out:
            subprocess.run(["cmake", "--install", str(tmp / "build")], env=env, check=True,
                           stdout=out, stderr=subprocess.STDOUT)
        staged = tmp / "root" / str(final).lstrip("/")
        shutil.rmtree(staged / "share", ignore_errors=True)  # the manual pages
        return staged

    prefix = _into_place(final, build)
    return Cares(prefix, src, lock()["cares"]["version"])


def arestest() -> Path:
    """c-ares's own test suite built from the same source (its tests
    enabled), as ``bin/arestest`` with the libcares.so.2 of that build in
    ``lib/`` beside it; returns the program's path."""
    src = source()
    final = home() / f"arestest-{_options_key(ARESTEST_OPTIONS)}"

    def build(tmp: Path) -> Path:
        log = tmp / "build.log"
        _run(["cmake", "-S", src, "-B", tmp / "build", *ARESTEST_OPTIONS], log)
        _run(["cmake", "--build", tmp / "build", "-j", _jobs(), "--target", "arestest"], log)
        out = tmp / "out"
        (out / "bin").mkdir(parents=True)
        shutil.copy2(tmp / "build" / "bin" / "arestest", out / "bin")
        shutil.copytree(tmp / "build" / "lib", out / "lib", symlinks=True)
        return out

    return _into_place(final, build) / "bin" / "arestest"


def pycares(python=None) -> Path:
    """pycares from the pinned sdist, its extension linked against
    :func:`library`'s libcares.so.2 (``PYCARES_USE_SYSTEM_LIB=1``, with that
    c-ares's headers, ``-L`` and a run path to its lib) rather than the
    static c-ares it builds by default, installed by pip (``--target``) into
    the cache, keyed by the Python it was built with (its version and
    cffi's: cffi's generated C is built for them); returns the folder to put
    on ``PYTHONPATH``.  It runs with that Python's cffi."""
    python = str(python or sys.executable)
    cares = library()
    tag = subprocess.run(
        [python, "-c", "import sys, cffi; print(sys.implementation.cache_tag, cffi.__version__)"],
        capture_output=True, text=True, check=True).stdout.split()
    pinned = lock()["sdist"]
    final = home() / f"{pinned['package']}-{pinned['version']}-{tag[0]}-cffi{tag[1]}-" \
                     f"{_options_key((str(cares.prefix), *LIBRARY_OPTIONS))}"

    def build(tmp: Path) -> Path:
        log = tmp / "build.log"
        env = {**os.environ, "PYCARES_USE_SYSTEM_LIB": "1",
               "CFLAGS": f"-I{cares.include}",
               "LDFLAGS": f"-L{cares.lib} -Wl,-rpath,{cares.lib}"}
        cmd = [python, "-m", "pip", "install", "--no-deps", "--no-cache-dir",
               "--disable-pip-version-check", "--target", str(tmp / "site"), str(sdist())]
        with open(log, "a") as out:
            out.write("$ " + " ".join(cmd) + "\n")
            out.flush()
            result = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    timeout=1800)
        if result.returncode != 0:
            text = log.read_text(errors="replace")
            tail = "\n".join(text.splitlines()[-30:])
            if "No matching distribution found" in text:
                raise Unavailable(f"pip could not install pycares's build requirements:\n{tail}")
            raise RuntimeError(f"pycares build failed:\n{tail}")
        return tmp / "site"

    return _into_place(final, build)


def gtest_found() -> bool:
    """GoogleTest and GoogleMock's headers and CMake package, as arestest's
    build looks for them."""
    return all(Path("/usr/include", h).is_file() for h in ("gtest/gtest.h", "gmock/gmock.h")) \
        and any(Path("/usr/lib").glob("*/cmake/GTest/GTestConfig.cmake"))


def cache_size() -> int:
    """Bytes under this source's cache folder and the sdist."""
    total = sum(p.lstat().st_size for p in home().rglob("*") if not p.is_dir())
    sd = CACHE / lock()["sdist"]["file"]
    return total + (sd.stat().st_size if sd.is_file() else 0)


# ---- running what was built --------------------------------------------------------


def build_driver(cares: Cares, out: Path) -> Path:
    """tests/c/ares_dnsrec.c built against that c-ares (its headers, -L and
    run path to its lib), as every test program is built
    (pipeline.compile_program, warnings as errors), into out."""
    import cprograms
    from dnsshim_build import pipeline

    return pipeline.compile_program(
        [HERE / "c" / "ares_dnsrec.c"], Path(out) / "ares_dnsrec", against=cares.lib,
        libraries=("cares",), flags=(f"-I{cares.include}",), cflags=cprograms.STRICT)


def build_refusing_parser(cares: Cares, out: Path) -> Path:
    """tests/c/ares_parse_refusing.c as a shared library for LD_PRELOAD: an
    ares_dns_parse that refuses the messages $ARES_REFUSE_ID names and
    passes the rest to c-ares's own."""
    import cprograms
    from dnsshim_build import pipeline

    return pipeline.compile_program(
        [HERE / "c" / "ares_parse_refusing.c"], Path(out) / "libares_parse_refusing.so",
        against=None, flags=(f"-I{cares.include}",),
        cflags=(*cprograms.STRICT, "-shared", "-fPIC"))


def build_plugin_reload(cares: Cares, out: Path) -> tuple:
    """tests/c/ares_plugin_reload.c: (host, plugin A, plugin B), the plugins
    the same code, A linked against one copy of that c-ares
    (``cares1/libcares.so.2``), B against another (``cares2/libcarez.so.2``:
    the same file under another soname, so that the loader does not take the
    copy already loaded for A).  Both folders and both plugins' paths are of
    the same length: B's file is laid out as A's, the same size."""
    import cprograms
    from dnsshim_build import pipeline

    out = Path(out)
    source = HERE / "c" / "ares_plugin_reload.c"
    original = (cares.lib / "libcares.so.2").read_bytes()
    copies = {"cares1": ("libcares.so.2", original)}
    # The soname, same length, in .dynstr: the only place the string is.
    assert original.count(b"\0libcares.so.2\0") == 1
    copies["cares2"] = ("libcarez.so.2",
                        original.replace(b"\0libcares.so.2\0", b"\0libcarez.so.2\0"))
    plugins = []
    for folder, plugin in (("cares1", "a"), ("cares2", "b")):
        name, data = copies[folder]
        (out / folder).mkdir(parents=True, exist_ok=True)
        (out / folder / name).write_bytes(data)
        (out / plugin).mkdir(parents=True, exist_ok=True)
        plugins.append(pipeline.compile_program(
            [source], out / plugin / "libplugin.so", against=None,
            flags=(f"-I{cares.include}", f"-L{out / folder}", f"-l:{name}",
                   f"-Wl,-rpath,{out / folder}"),
            cflags=(*cprograms.STRICT, "-DARES_PLUGIN", "-shared", "-fPIC")))
    host = pipeline.compile_program([source], out / "ares_plugin_reload", against=None,
                                    cflags=cprograms.STRICT)
    return host, *plugins


def _preloaded(preload, env=None) -> dict:
    env = dict(os.environ if env is None else env)
    if preload:
        env["LD_PRELOAD"] = str(preload)
    return env


def run_driver(driver: Path, files, *, preload=None, flags: int | None = None,
               wrapper=(), env=None, timeout: float = 600) -> dict:
    """The driver on those message files: {file: (status, written)}, in the
    order given, file being each item of files as given.  status:
    ares_dns_parse's; written: ares_dns_write's bytes in hex where the parse
    succeeded (its status, an int, where the write failed), else None.
    preload: a library for LD_PRELOAD (libdnsshim_ares.so.1, to compare its
    ares_dns_parse with c-ares's own); wrapper: a command to run the driver
    under (valgrind ...).  Fails unless the driver exits 0 with one line per
    file."""
    files = list(files)
    cmd = [*map(str, wrapper), str(driver),
           *([] if flags is None else ["--flags", str(flags)]), "--", *map(str, files)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                            env=_preloaded(preload, env))
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != len(files):
        raise AssertionError(f"ares_dnsrec exit {result.returncode}, {len(lines)} lines for "
                             f"{len(files)} files\n{result.stderr[-4000:]}")
    found = {}
    for file, line in zip(files, lines):
        head = f"{file} status "
        if not line.startswith(head):
            raise AssertionError(f"ares_dnsrec: {line!r} is not {file}'s line")
        fields = line[len(head):].split(" ")
        status = int(fields[0])
        if fields[1:2] == ["write"] and len(fields) == 3:
            written = fields[2]
        elif fields[1:2] == ["write_status"] and len(fields) == 3:
            written = int(fields[2])
        elif len(fields) == 1:
            written = None
        else:
            raise AssertionError(f"ares_dnsrec: cannot read {line!r}")
        if (status == 0) != (written is not None):
            raise AssertionError(f"ares_dnsrec: {line!r}: a write exactly when parsed")
        found[file] = (status, written)
    return found


#: arestest's tests that need what a test machine may not have: the live
#: ones query the Internet (c-ares's test/README.md), the container ones need
#: user namespaces (built only with CARES_BUILD_CONTAINER_TESTS, which this
#: build leaves off: the pattern keeps them out should that change).
ARESTEST_FILTER = "-*.Live*:*Container*"


@dataclasses.dataclass
class ArestestRun:
    """One run of arestest: its exit status, the number of tests gtest
    reported passed, the names of those it reported failed, its output and
    how long it took."""

    returncode: int
    passed: int
    failed: list
    output: str
    seconds: float


#: How many processes one run of arestest is split over (GoogleTest's
#: sharding): its tests mostly wait on the mock server's timeouts, a few per
#: cent of a core, so the shards run at once and the run takes about the
#: longest shard's time.
ARESTEST_SHARDS = 8


def run_arestest(program: Path, *, preload=None, gtest_filter: str = ARESTEST_FILTER,
                 extra=(), env=None, timeout: float = 1800,
                 shards: int = ARESTEST_SHARDS) -> ArestestRun:
    """arestest with that filter (default: everything but the live and the
    container tests), each process on a mock server of its own at an
    ephemeral port, split over ``shards`` processes at once (GTEST_SHARD_INDEX
    of GTEST_TOTAL_SHARDS; every test in exactly one): the exit status is
    the worst shard's, the passed count their sum, the failed names their
    union, the output theirs one after another; preload: a library for
    LD_PRELOAD."""
    started = time.monotonic()
    base = _preloaded(preload, env)
    cmd = [str(program), f"--gtest_filter={gtest_filter}", *map(str, extra)]
    procs = []
    for index in range(shards):
        out = tempfile.TemporaryFile()
        shard = {**base, "GTEST_TOTAL_SHARDS": str(shards), "GTEST_SHARD_INDEX": str(index)}
        procs.append((subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=shard), out))
    codes, outputs = [], []
    for proc, out in procs:
        try:
            codes.append(proc.wait(timeout=max(1.0, timeout - (time.monotonic() - started))))
        except subprocess.TimeoutExpired:
            for other, _ in procs:
                other.kill()
            raise
        out.seek(0)
        outputs.append(out.read().decode(errors="replace"))
        out.close()
    seconds = time.monotonic() - started
    output = "".join(outputs)
    passed = [int(n) for n in re.findall(r"^\[  PASSED  \] (\d+) tests?\.", output, re.M)]
    failed = re.findall(r"^\[  FAILED  \] (\S+)(?: \(\d+ ms\)|,.*)?$", output, re.M)
    worst = max(codes, key=lambda code: (code != 0, abs(code)))
    return ArestestRun(worst, sum(passed), sorted(set(failed)), output, seconds)


def main() -> None:
    built = library()
    print(built.lib, built.include, built.source, sep="\n")
    if "--arestest" in sys.argv[1:]:
        print(arestest())
    if "--pycares" in sys.argv[1:]:
        print(pycares())
    print(f"cache: {cache_size() / 1e6:.1f} MB under {home()}", file=sys.stderr)


if __name__ == "__main__":
    main()
