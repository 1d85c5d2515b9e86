"""python build_ffi.py --prefix: an installation that stands alone.

From a copy of this checkout and a fresh virtualenv holding only cffi and
dnspython: the install refuses in one line while dnspython is missing;
installed into a prefix that already holds other files, the copy and the
virtualenv are deleted, and then a C program built with the prefix's
pkg-config file gives, on the vectors, the malformed cases and the corpus,
what it gives built against this tree's library; dnsshim-config answers
what pkg-config answers, for both libraries; the manual is there;
sbin/dnsshimd, the parse service, runs and is in the manifest;
``--uninstall`` (build_ffi.py's, and the prefix's own dnsshim-config's
without the sources) leaves the prefix exactly as it was, a moved one too.  A staged install
(--destdir) works once moved into place, and one whose Python side was
removed says so in one line.  (CMake's find_package from each
installation: test_cmake.py.)
"""

import json
import pickle
import os
import re
import shutil
import subprocess
import sys

import pytest

from dnsshim_build import pipeline
from conftest import ROOT, build_code_in, built_once, require_program, write_messages
from test_install import source_copy
import cprograms

MINIMAL_ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}


def _snapshot(root):
    """Every path under root with its type and content (files)."""
    out = {}
    for here, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(here, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                out[rel] = ("dir", None)
            else:
                with open(path, "rb") as f:
                    out[rel] = ("file", f.read())
    return out


def _venv(where):
    """A virtualenv of this CPython with what the runtime needs, at the
    versions this one has (pip's cache makes it quick)."""
    import cffi
    import dns.version

    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q",
           "--disable-pip-version-check"]
    subprocess.run([*pip, f"cffi=={cffi.__version__}"], check=True, capture_output=True,
                   timeout=600)
    return pip, f"dnspython=={dns.version.version}"


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """(prefix, what the prefix held before, the refusal, the venv's path):
    installed from a copy of the checkout and a virtualenv, both deleted
    since; once per session, whichever worker asks first (tests that change
    it work on a copy)."""
    def make(d):
        clone = source_copy(d / "clone")
        venv = d / "venv"
        pip, dnspython = _venv(venv)
        prefix = d / "prefix"
        (prefix / "lib").mkdir(parents=True)
        (prefix / "lib" / "other.so.1").write_bytes(b"another library's file")
        (prefix / "share" / "doc").mkdir(parents=True)
        (prefix / "share" / "doc" / "README").write_text("another package's")
        (d / "before.pickle").write_bytes(pickle.dumps(_snapshot(prefix)))
        install = [str(venv / "bin" / "python"), str(clone / "build_ffi.py"), "--prefix",
                   str(prefix)]
        refused = subprocess.run(install, capture_output=True, text=True, cwd=d)
        (d / "refused.json").write_text(json.dumps([refused.returncode, refused.stdout,
                                                    refused.stderr]))
        subprocess.run([*pip, dnspython], check=True, capture_output=True, timeout=600)
        result = subprocess.run(install, capture_output=True, text=True, cwd=d)
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout == f"{prefix}/lib/libdnsshim.so.1\n"
        shutil.rmtree(clone)
        shutil.rmtree(venv)

    d = built_once(tmp_path_factory, "standalone", make)
    code, out, err = json.loads((d / "refused.json").read_text())
    refused = subprocess.CompletedProcess([], code, out, err)
    return d / "prefix", pickle.loads((d / "before.pickle").read_bytes()), refused, d / "venv"


def test_the_python_side_holds_no_build_code(standalone):
    prefix = standalone[0]
    private = prefix / "lib" / "dnsshim" / "python"
    assert (private / "shim" / "glue.py").is_file()
    assert build_code_in(prefix) == []


def test_the_worker_image_is_in_the_private_folder(standalone):
    """Parallelism's image (where this machine builds it, else the note
    saying why) in lib/dnsshim/, beside the Python side, not among the
    public libraries: it has no SONAME, and nothing links it."""
    from dnsshim_build import worker

    prefix = standalone[0]
    private = prefix / "lib" / "dnsshim"
    assert not (prefix / "lib" / worker.NAME).exists()
    assert not (prefix / "lib" / worker.NOTE).exists()
    why = worker.unavailable()
    check = subprocess.run([str(prefix / "bin" / "dnsshim-dump"), "--check"],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert check.returncode == 0, check.stderr
    line = next(l for l in check.stdout.splitlines() if l.startswith("parallelism: "))
    if not why:
        assert (private / worker.NAME).is_file() and not (private / worker.NOTE).exists()
        assert line == f"parallelism: available (worker image {private / worker.NAME})"
    else:
        assert (private / worker.NOTE).read_text() == why + "\n"
        assert line == (f"parallelism: unavailable: DNS_SHIM_ERR_UNSUPPORTED: parallelism "
                        f"above 1 needs the worker image {private / worker.NAME}, which the "
                        f"install could not build: {why}")


def test_refuses_without_what_the_runtime_needs(standalone):
    prefix, before, refused, venv = standalone
    assert refused.returncode == 1
    lines = refused.stderr.splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith(
        f"build_ffi.py --prefix: cannot install: the Python side is copied from the Python that "
        f"builds, and dnspython is not installed for {venv}/bin/python: searched ")
    assert lines[0].endswith(f"; install it: {venv}/bin/python -m pip install "
                             f"'dnspython>=2.9.1'")


def _pkg_config(prefix, *args):
    return subprocess.run(["pkg-config", *args], capture_output=True, text=True, check=True,
                          env={**MINIMAL_ENV, "PKG_CONFIG_PATH": str(prefix / "lib" /
                                                                     "pkgconfig")}).stdout.split()


def test_a_program_runs_with_the_clone_and_venv_gone(standalone, built, tmp_path):
    require_program("pkg-config", "pkg-config")
    prefix = standalone[0]
    program = pipeline.compile_program([ROOT / "tests" / "c" / "dnsshim_test.c"],
                                        tmp_path / "dnsshim_test",
                                        flags=_pkg_config(prefix, "--cflags", "--libs",
                                                          "dnsshim"))
    files = write_messages(tmp_path, corpus=("good", "bad", "captures"))
    ours = subprocess.run([str(program), *map(str, files)], capture_output=True, text=True,
                          env=MINIMAL_ENV, cwd="/", timeout=1200)
    theirs = subprocess.run([str(built.test_prog), *map(str, files)], capture_output=True,
                            text=True, env=MINIMAL_ENV, cwd="/", timeout=1200)
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == theirs.stdout
    dump = subprocess.run([str(prefix / "bin" / "dnsshim-dump"), "--check"], capture_output=True,
                          text=True, env=MINIMAL_ENV, cwd="/")
    assert dump.returncode == 0, dump.stderr
    private = prefix / "lib" / "dnsshim" / "python"
    assert f"dnspython {vectors_dnspython()} ({private}/dns)" in dump.stdout
    assert f"shim {pipeline.package_version()} ({private}/shim)" in dump.stdout


def vectors_dnspython():
    import dns.version

    return dns.version.version


def test_dnsshim_config_answers_what_pkg_config_answers(standalone):
    require_program("pkg-config", "pkg-config")
    prefix = standalone[0]

    def config(*args):
        result = subprocess.run([str(prefix / "bin" / "dnsshim-config"), *args],
                                capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
        assert result.returncode == 0 and result.stderr == "", result.stderr
        return result.stdout.split()

    assert config("--cflags", "--libs") == _pkg_config(prefix, "--cflags", "--libs", "dnsshim")
    assert config("--ares", "--libs") == _pkg_config(prefix, "--libs", "dnsshim-ares")
    assert config("--ares", "--cflags") == _pkg_config(prefix, "--cflags", "dnsshim-ares")
    assert config("--static-libs") == [str(prefix / "lib" / "libdnsshim.a"),
                                       *_pkg_config(prefix, "--libs-only-other", "--libs-only-L",
                                                    "--libs-only-l", "--static", "dnsshim")[3:]]
    assert config("--prefix", "--libdir", "--includedir", "--version") == [
        str(prefix), str(prefix / "lib"), str(prefix / "include"), pipeline.package_version()]
    assert config("--valgrind-suppressions") == [
        str(prefix / "share" / "dnsshim" / "libdnsshim.supp")]
    assert (prefix / "share" / "dnsshim" / "libdnsshim.supp").read_bytes() == \
        pipeline.SUPPRESSIONS.read_bytes()
    check = subprocess.run([str(prefix / "bin" / "dnsshim-config"), "--check"],
                           capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
    assert check.returncode == 0
    assert check.stdout.splitlines()[-1] == "check: ok: a sample response parsed " \
                                            "(www.example.com A 192.0.2.1)"


def test_libdir_holds_the_c_ares_layer_for_ld_preload(standalone, tmp_path):
    """The prefix's dnsshim-config --libdir is the folder of
    libdnsshim_ares.so.1: README.md's preload line works with it."""
    from test_install import PRELOADED, preload_from_libdir

    prefix = standalone[0]
    result = preload_from_libdir(prefix / "bin", tmp_path)
    assert (result.returncode, result.stdout.splitlines(), result.stderr) == (0, PRELOADED, "")


def test_the_manual_is_installed(standalone):
    require_program("man", "man-db")
    prefix = standalone[0]
    for name, section in [*((f, "3") for f in sorted(pipeline.header_functions())),
                          ("dnsshim_ares", "3"), ("dnsshim", "7"), ("dnsshim-dump", "1"),
                          ("dnsshim-config", "1")]:
        where = subprocess.run(["man", "-M", str(prefix / "share" / "man"), "-w", section, name],
                               capture_output=True, text=True, env=MINIMAL_ENV)
        assert where.stdout.strip() == str(prefix / "share" / "man" / f"man{section}" /
                                           f"{name}.{section}"), (name, where.stderr)
    assert (prefix / "share" / "doc" / "dnsshim" / "NEWS").read_bytes() == \
        (ROOT / "NEWS").read_bytes()


def test_the_nss_module_is_installed_beside_the_library_and_resolves(standalone, tmp_path):
    """lib/libnss_dnsshim.so.2, named by dnsshim-config --nss-module and by
    the manifest (so that uninstall removes it), loads the prefix's
    libdnsshim from beside it; its page is in the manual; and, found by glibc
    through an ld.so.cache that lists lib/ (as the README's ld.so.conf.d
    line makes one), getent resolves through it in a namespace of its own
    (tests/nss_env.py)."""
    import nss_env

    prefix = standalone[0]
    module = prefix / "lib" / "libnss_dnsshim.so.2"
    named = subprocess.run([str(prefix / "bin" / "dnsshim-config"), "--nss-module"],
                           capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
    assert (named.returncode, named.stdout) == (0, f"{module}\n")
    manifest = json.loads((prefix / "share" / "dnsshim" / "install-manifest").read_text())
    assert str(module) in manifest["files"]
    dynamic = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True,
                             check=True).stdout
    # libdnsshim is not linked but dlopen()ed, by its SONAME, beside the
    # module ($ORIGIN), for a reply parsed in the process (getent's below)
    assert "Shared library: [libdnsshim.so.1]" not in dynamic and "[$ORIGIN]" in dynamic
    where = subprocess.run(["man", "-M", str(prefix / "share" / "man"), "-w", "8",
                            "libnss_dnsshim"], capture_output=True, text=True, env=MINIMAL_ENV)
    assert where.stdout.strip() == str(prefix / "share" / "man" / "man8" / "libnss_dnsshim.8")
    zone = {("www.example.test", "A"): ["www.example.test. 300 IN A 192.0.2.1"],
            ("www.example.test", "AAAA"): []}
    result = nss_env.run(tmp_path, zone, [nss_env.getent("ahostsv4", "www.example.test")],
                         nsswitch="hosts: files dnsshim\n", library_dirs=[prefix / "lib"])
    c = result.commands[0]
    assert (c.returncode, c.stdout.splitlines()[0], c.stderr) == (
        0, "192.0.2.1       STREAM www.example.test", "")


def test_dnsshimd_is_installed_in_sbin(standalone):
    """sbin/dnsshimd, the parse service, built as bin/dnsshim-dump is: it
    finds the prefix's libdnsshim from its own path (no LD_LIBRARY_PATH),
    --version prints the package's version, the manifest names it (so that
    --uninstall removes it) and its page is in the manual."""
    prefix = standalone[0]
    program = prefix / "sbin" / "dnsshimd"
    result = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                            env=MINIMAL_ENV, cwd="/", timeout=120)
    assert result.returncode == 0, result.stderr
    assert pipeline.package_version() in result.stdout
    manifest = json.loads((prefix / "share" / "dnsshim" / "install-manifest").read_text())
    assert str(program) in manifest["files"]
    assert str(prefix / "sbin") in manifest["dirs"]
    dynamic = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                             check=True).stdout
    assert "Shared library: [libdnsshim.so.1]" in dynamic and "[$ORIGIN/../lib]" in dynamic
    ldd = subprocess.run(["ldd", str(program)], capture_output=True, text=True,
                         env=MINIMAL_ENV).stdout
    found = re.search(r"^\s*libdnsshim\.so\.1 => (\S+) ", ldd, re.M)
    assert found and os.path.realpath(found.group(1)) == str(prefix / "lib" / "libdnsshim.so.1"), \
        ldd
    assert (prefix / "share" / "man" / "man8" / "dnsshimd.8").is_file()
    require_program("man", "man-db")
    where = subprocess.run(["man", "-M", str(prefix / "share" / "man"), "-w", "8", "dnsshimd"],
                           capture_output=True, text=True, env=MINIMAL_ENV)
    assert where.stdout.strip() == str(prefix / "share" / "man" / "man8" / "dnsshimd.8")


def test_a_removed_python_side_says_so(standalone, tmp_path):
    """A copy of the installation without its Python side: the one line
    that says what is missing and the fix (dnsshim-dump --check logs it at
    error level, and the runtime does not start)."""
    copy = tmp_path / "copy"
    shutil.copytree(standalone[0], copy, symlinks=True)
    shutil.rmtree(copy / "lib" / "dnsshim" / "python" / "shim")
    result = subprocess.run([str(copy / "bin" / "dnsshim-dump"), "--check"], capture_output=True,
                            text=True, env=MINIMAL_ENV, cwd="/")
    why = (f"cannot start: the shim package is not in {copy}/lib/dnsshim/python, the "
           "installation's own Python side (it was removed or the installation is incomplete): "
           "install the library again (python build_ffi.py --prefix)")
    assert result.returncode == 1
    assert result.stdout.splitlines()[1:] == [f"error: {why}",
                                             f"check: the runtime does not start: {why}"]


def test_the_c_ares_layer_links_static_from_dnsshim_config(standalone, built, tmp_path):
    """The README's static c-ares line: $(dnsshim-config --ares --static-libs) -lcares."""
    from test_ares import _ims_messages
    from conftest import require_cares

    require_cares()
    prefix = standalone[0]
    flags = subprocess.run([str(prefix / "bin" / "dnsshim-config"), "--ares", "--cflags",
                            "--static-libs"], capture_output=True, text=True, check=True,
                           env=MINIMAL_ENV).stdout.split()
    assert flags[1:3] == [str(prefix / "lib" / "libdnsshim_ares.a"),
                          str(prefix / "lib" / "libdnsshim.a")]
    cares = [*cprograms.cares_flags()[0], *cprograms.cares_flags()[1]]  # as the build found it
    program = pipeline.compile_program([ROOT / "tests" / "c" / "ares_sip_locate.c"],
                                        tmp_path / "ares_sip_locate", flags=[*flags, *cares])
    dynamic = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                             check=True).stdout
    assert "libdnsshim" not in dynamic, dynamic
    messages = _ims_messages(tmp_path)
    ours = subprocess.run([str(program), *map(str, messages)], capture_output=True, text=True,
                          env=MINIMAL_ENV, cwd="/")
    theirs = subprocess.run([str(built.dir / "ares_sip_locate"), *map(str, messages)],
                            capture_output=True, text=True)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout and theirs.stdout


def test_uninstall_leaves_the_prefix_as_it_was(standalone, tmp_path):
    """build_ffi.py --prefix P --uninstall, on a copy of the install (a
    prefix moves whole): the copy is left as the prefix was before, and the
    install itself is untouched, so that the other tests may run after."""
    prefix, before = standalone[0], standalone[1]
    installed = _snapshot(prefix)
    copy = tmp_path / "copy"
    shutil.copytree(prefix, copy, symlinks=True)
    result = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(copy),
                             "--uninstall"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("removed ") and result.stdout.endswith(
        " of the install's files and folders\n")
    assert _snapshot(copy) == before
    assert _snapshot(prefix) == installed
    again = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(copy),
                            "--uninstall"], capture_output=True, text=True)
    assert again.returncode == 1
    assert again.stderr == (f"build_ffi.py --prefix: {copy}/share/dnsshim/install-manifest "
                            f"does not exist: nothing was installed under {copy} by "
                            "build_ffi.py --prefix (or it was uninstalled)\n")


def test_dnsshim_config_uninstalls_without_the_sources(standalone, tmp_path):
    """The prefix's own dnsshim-config --uninstall, the clone and the
    virtualenv it was installed from gone, run with a minimal environment:
    what the install wrote goes, the prefix's other files stay."""
    prefix, before = standalone[0], standalone[1]
    installed = _snapshot(prefix)
    copy = tmp_path / "moved" / "prefix"
    shutil.copytree(prefix, copy, symlinks=True)
    result = subprocess.run([str(copy / "bin" / "dnsshim-config"), "--uninstall"],
                            capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
    assert (result.returncode, result.stderr) == (0, "")
    assert re.fullmatch(r"removed [1-9]\d* of the install's files and folders\n", result.stdout)
    assert _snapshot(copy) == before
    assert _snapshot(prefix) == installed
    again = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(copy),
                            "--uninstall"], capture_output=True, text=True)
    assert again.returncode == 1


def test_uninstall_of_a_moved_prefix_that_also_wrote_outside_it_refuses(standalone, tmp_path):
    """An install whose libdir was outside its prefix, moved: which files
    are its own elsewhere cannot be known, so nothing is removed."""
    prefix = standalone[0]
    copy = tmp_path / "copy"
    shutil.copytree(prefix, copy, symlinks=True)
    path = copy / "share" / "dnsshim" / "install-manifest"
    recorded = json.loads(path.read_text())
    recorded["files"].append("/opt/elsewhere/lib/libdnsshim.so.1")
    path.write_text(json.dumps(recorded))
    held = _snapshot(copy)
    result = subprocess.run([str(copy / "bin" / "dnsshim-config"), "--uninstall"],
                            capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
    assert result.returncode == 1
    assert result.stderr == (
        f"dnsshim-config --uninstall: the install was made under {prefix} and is now under "
        f"{copy}, but it also wrote /opt/elsewhere/lib/libdnsshim.so.1, outside that prefix: "
        f"remove it from where it was installed ({prefix}); a package manager's install (the "
        "Debian packages) is removed with that package manager\n")
    assert _snapshot(copy) == held


def test_a_staged_install_works_in_place(tmp_path):
    """--destdir STAGE --prefix P writes STAGE/P; moved to P, it runs."""
    stage, prefix = tmp_path / "stage", tmp_path / "final" / "dnsshim"
    result = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(prefix),
                             "--libdir", str(prefix / "lib64"), "--destdir", str(stage)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not prefix.exists()
    shutil.move(str(stage / str(prefix).lstrip("/")), str(prefix))
    check = subprocess.run([str(prefix / "bin" / "dnsshim-dump"), "--check"],
                           capture_output=True, text=True, env=MINIMAL_ENV, cwd="/")
    assert check.returncode == 0, check.stderr
    service = subprocess.run([str(prefix / "sbin" / "dnsshimd"), "--version"],
                             capture_output=True, text=True, env=MINIMAL_ENV, cwd="/", timeout=120)
    assert service.returncode == 0 and pipeline.package_version() in service.stdout, \
        service.stderr
    pc = (prefix / "lib64" / "pkgconfig" / "dnsshim.pc").read_text()
    assert pc.startswith(f"prefix={prefix}\nlibdir=${{prefix}}/lib64\n")
    assert str(stage) not in pc
    manifest = (prefix / "share" / "dnsshim" / "install-manifest").read_text()
    assert str(stage) not in manifest and f'"{prefix}/lib64/libdnsshim.so.1"' in manifest

