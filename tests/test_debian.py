"""The Debian packages (debian/), for Debian 12 and for Debian 13 from the
same tree: built from the project's files with dpkg-buildpackage on that
release, checked by that release's lintian, then installed with apt into a
fresh root of that release (tests/debian_root.py) and used there as a C
developer uses them, and purged without a trace.

* the build: the five packages (and their debug symbols), each with
  exactly its files, linked against the release's default CPython (3.11 on
  12, 3.13 on 13) and depending on exactly it, the staged library's own
  check in the build log;
* lintian: no error, and exactly the warnings this packaging is known to
  give on that release;
* in the root: apt pulls only Debian's packages beside the five;
  dnsshim-dump --check; the manual found by man; dnsshim_test built with
  pkg-config, and with CMake's find_package(dnsshim 1.2), prints for the
  test vectors and the malformed messages exactly what the host's build
  prints; ares_sip_locate (c-ares's classic API, libdnsshim_ares linked
  before -lcares) the same; on Debian 13, whose c-ares (1.34) has its own
  ares_dns_parse, a program of that modern API (tests/c/ares_dnsrec.c)
  linked with libdnsshim_ares before -lcares, and one linked with -lcares
  alone run with LD_PRELOAD of the installed libdnsshim_ares.so.1, print
  what the host's driver prints through the host's build, where c-ares
  alone prints another answer; dnsshim-config answers as pkg-config does;
  the release's python3, with Debian's dnspython imported, loads the
  package's library with ctypes as a guest (tests/guest_host.py): its
  sys.path and modules as they were, the C driver in its process printing
  what the host's build prints;
  libnss-dnsshim's module is in the multiarch libdir and in ld.so's cache,
  its dependencies found, and neither its install nor its purge touches
  /etc/nsswitch.conf (turning it on is the administrator's line);
  dnsshimd runs, its socket unit enabled by the package (dh_installsystemd);
  apt-get purge leaves no file of the packages and none the postinst
  compiled.

Every test runs once per release (ids debian12, debian13): one package
build and one root per release and session.  Debian 12's packages are built
on this machine when it is Debian 12 (CI's), else, as Debian 13's always
are, in a root of that release holding the Build-Depends (and lintian),
cached with its base.  Needs dpkg-dev, debhelper and lintian for a build
here; a root needs root and debootstrap (or its cached base, see
tests/debian_root.py), and reaches the Debian mirror and PyPI (the build
downloads dnspython unless debian/vendor/ holds its wheel).  Without them
these tests skip, naming what is missing; under CI=true they fail.
"""

import gzip
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath

import pytest

from dnsshim_build import pipeline
from shim import requirements
import debian_root
import forms_matrix
import malformed
from conftest import (BUILD_MODULES, ROOT, require_cares, require_program, require_tool, split_log,
                      write_messages)


PACKAGES = ("libdnsshim1", "libdnsshim-dev", "dnsshim-tools", "libnss-dnsshim", "dnsshimd")
#: apt-get install's arguments for them, in the root (the .debs in /root)
DEBS = " ".join(f"./{package}_*.deb" for package in PACKAGES)
RELEASES = ("12", "13")


class Release:
    """What the packages built on a Debian release run on: its default
    CPython (python, e.g. "3.11"), the least libpython version its symbols
    file asks for (libpython_min: the shlibs dependency) and Debian's cffi
    backend (cffi, its version)."""

    def __init__(self, number: str, python: str, libpython_min: str, cffi: str):
        self.number = number
        self.python = python
        self.libpython_min = libpython_min
        self.cffi = cffi

    @property
    def tag(self) -> str:
        """CPython's cache tag's digits: "311"."""
        return self.python.replace(".", "")

    @property
    def dependencies(self) -> tuple:
        """The Debian packages of that CPython the packages depend on."""
        v = self.python
        return (f"python{v}", f"libpython{v}", f"libpython{v}-stdlib", "python3-cffi-backend",
                f"libpython{v}-dev")

    def cffi_backend(self) -> str:
        return f"/usr/lib/python3/dist-packages/_cffi_backend.cpython-{self.tag}-{TRIPLET}.so"


#: bookworm: python3 3.11.2, python3-cffi-backend 1.15.1; trixie: 3.13.5, 1.17.1
RELEASE = {"12": Release("12", "3.11", "3.11.0", "1.15.1"),
           "13": Release("13", "3.13", "3.13.0~rc3", "1.17.1")}


def _changelog_version() -> str:
    first = (ROOT / "debian" / "changelog").read_text(encoding="utf-8").splitlines()[0]
    return re.match(r"dnsshim \((\S+)\) ", first).group(1)


VERSION = _changelog_version()
#: Debian 12 on amd64 (the machine CI runs on); read from dpkg where there is one
ARCH = (subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True)
        .stdout.strip() if shutil.which("dpkg") else "amd64")
TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}.get(ARCH, ARCH)
LIBDIR = f"/usr/lib/{TRIPLET}"
PRIVATE = f"{LIBDIR}/dnsshim/python"
#: libnss-dnsshim's module, where glibc's NSS finds "dnsshim" of nsswitch.conf
NSS_MODULE = f"{LIBDIR}/libnss_dnsshim.so.2"
#: the environment of the package build: nothing of this process's Python
#: (a virtualenv, pyenv's shims) but what reaches the network
BUILD_ENV_KEPT = ("HOME", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                  "NO_PROXY", "SSL_CERT_FILE")


def _in_ci() -> bool:
    return bool(os.environ.get("CI"))


def test_changelog_names_the_project_version():
    assert VERSION == f"{pipeline.package_version()}-1"


def test_the_readme_s_build_line_names_every_build_dependency():
    """README.md's apt-get line before dpkg-buildpackage installs what
    debian/control's Build-Depends names (debhelper-compat: debhelper),
    with dpkg-dev; python3-cffi brings python3-cffi-backend."""
    readme = (ROOT / "README.md").read_text()
    line = next(l for l in readme.splitlines()
                if l.startswith("apt-get install dpkg-dev "))
    named = set(line.split()[2:])
    assert "dpkg-dev" in named
    assert set(build_depends()) - {"python3-cffi-backend"} <= named, \
        set(build_depends()) - named


def test_symbols_file_is_the_export_lists():
    result = subprocess.run([sys.executable, str(ROOT / "debian" / "gensymbols.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    symbols = (ROOT / "debian" / "libdnsshim1.symbols").read_text()
    for node, names in pipeline.version_nodes(pipeline.DNSSHIM).items():
        # the private node: the release that added its names
        since = "1.3.0" if node == "DNSSHIM_PRIVATE" else node.split("_")[1] + ".0"
        assert f" {node}@{node} {since}\n" in symbols
        for name in names:
            assert f" {name}@{node} {since}\n" in symbols
    # c-ares's unversioned names: the release the c-ares layer first shipped
    # in, and ares_dns_parse the one that added it.
    assert " ares_parse_a_reply@Base 1.1.0\n" in symbols
    assert " ares_dns_parse@Base 1.3.0\n" in symbols


# ---- the build ---------------------------------------------------------------------


class PackageBuild:
    """out: the .deb, .changes and build.log; source: the source tree built
    (as this machine sees it); inside: its path as the build saw it (the
    same, unless built in a root: then root)."""

    def __init__(self, out: Path, source: Path, log: str, inside: str | None = None,
                 root: debian_root.DebianRoot | None = None):
        self.out = out
        self.source = source
        self.log = log
        self.inside = inside or str(source)
        self.root = root

    def deb(self, package: str) -> Path:
        return self.out / f"{package}_{VERSION}_{ARCH}.deb"

    @property
    def changes(self) -> Path:
        return self.out / f"dnsshim_{VERSION}_{ARCH}.changes"

    def _data(self, package: str) -> tarfile.TarFile:
        data = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(self.deb(package))],
                              capture_output=True, check=True).stdout
        return tarfile.open(fileobj=io.BytesIO(data))

    def contents(self, package: str) -> dict:
        """{path: link target or "" for a file}, directories left out."""
        with self._data(package) as tar:
            return {m.name[1:]: (m.linkname if m.issym() else "") for m in tar.getmembers()
                    if not m.isdir()}

    def read(self, package: str, path: str) -> bytes:
        with self._data(package) as tar:
            return tar.extractfile("." + path).read()

    def field(self, package: str, name: str) -> str:
        return subprocess.run(["dpkg-deb", "-f", str(self.deb(package)), name],
                              capture_output=True, text=True, check=True).stdout.strip()

    def control(self, package: str) -> dict:
        """The control archive's files: {name: text}."""
        data = subprocess.run(["dpkg-deb", "--ctrl-tarfile", str(self.deb(package))],
                              capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            return {m.name.lstrip("./"): tar.extractfile(m).read().decode()
                    for m in tar.getmembers() if m.isfile()}


def copy_project(dest: Path) -> None:
    """The project's tracked files and its untracked ones that git does not
    ignore, as they are in the work tree."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for name in sorted(set(names.decode().split("\0")) - {""}):
        source = ROOT / name
        if not os.path.lexists(source):  # deleted in the work tree, not yet in the index
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def _host_release() -> str | None:
    """This machine's Debian release ("12"), if it is Debian."""
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return None
    if not re.search(r'^ID="?debian"?$', text, re.M):
        return None
    m = re.search(r'^VERSION_ID="?(\d+)"?$', text, re.M)
    return m.group(1) if m else None


def build_depends() -> list:
    """debian/control's Build-Depends as packages to install:
    each relation's first alternative, without its version;
    debhelper-compat (a virtual package) as debhelper, which provides it."""
    control = (ROOT / "debian" / "control").read_text(encoding="utf-8")
    field = re.search(r"^Build-Depends:(.*(?:\n[ \t].*)*)", control, re.M).group(1)
    names = []
    for relation in field.split(","):
        if relation.strip():
            name = relation.split("|")[0].split()[0].split(":")[0]
            names.append("debhelper" if name == "debhelper-compat" else name)
    return names


#: A build root: the Build-Depends, what dpkg-buildpackage needs beside them
#: (build-essential, dpkg-dev), and lintian; installed with apt-get in the
#: base (debootstrap's --include follows no virtual package, and Debian 13's
#: lintian and python3-cffi need some), all cached with it.
BUILD_ROOT = tuple(sorted({"build-essential", "dpkg-dev", "lintian", *build_depends()}))


@pytest.fixture(scope="session", params=RELEASES, ids=lambda number: f"debian{number}")
def release(request) -> Release:
    return RELEASE[request.param]


def _new_root(where: Path, packages, release: Release, apt=()) -> debian_root.DebianRoot:
    """A fresh root of that release with those packages (and those apt
    installs in its base), or the test skips (fails under CI=true) naming
    what is missing."""
    why = debian_root.unavailable(packages, release.number, apt)
    if why:
        reason, package = why
        if package:
            require_tool(reason, package, False)  # skips, or fails under CI=true
        if _in_ci():
            pytest.fail(f"{reason}: required in CI")
        pytest.skip(reason)
    return debian_root.DebianRoot.create(where / "root", packages, log=where / "debootstrap.log",
                                         release=release.number, apt=apt)


def _build_here(out: Path) -> PackageBuild:
    """dpkg-buildpackage -b -us -uc in a copy of the project, on this machine."""
    require_program("git", "git")
    require_program("dpkg-buildpackage", "dpkg-dev")
    require_program("dh", "debhelper")
    source = out / f"dnsshim-{VERSION.rsplit('-', 1)[0]}"
    copy_project(source)
    env = {k: os.environ[k] for k in BUILD_ENV_KEPT if k in os.environ}
    env.update(PATH="/usr/sbin:/usr/bin:/sbin:/bin", LANG="C.UTF-8")
    result = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"], cwd=source, env=env,
                            capture_output=True, text=True, errors="replace", timeout=1800)
    log = result.stdout + result.stderr
    (out / "build.log").write_text(log)
    assert result.returncode == 0, log[-5000:]
    return PackageBuild(out, source, log)


def _build_in_root(root: debian_root.DebianRoot, out: Path) -> PackageBuild:
    """dpkg-buildpackage -b -us -uc in a copy of the project in the root
    (which holds the Build-Depends); the results copied to out."""
    require_program("git", "git")
    inside = f"/root/src/dnsshim-{VERSION.rsplit('-', 1)[0]}"
    copy_project(root.path(inside))
    result = root.run("dpkg-buildpackage -b -us -uc", cwd=inside, check=False, timeout=1800)
    log = result.stdout + result.stderr
    (out / "build.log").write_text(log)
    assert result.returncode == 0, log[-5000:]
    for made in root.path("/root/src").iterdir():
        if made.is_file():
            shutil.copy(made, out)
    return PackageBuild(out, root.path(inside), log, inside, root)


@pytest.fixture(scope="session")
def package_build(release, tmp_path_factory) -> PackageBuild:
    """The packages of that release, built once: here when this machine is
    that release, else in a root of it."""
    out = tmp_path_factory.mktemp(f"debian{release.number}-build")
    if _host_release() == release.number:
        yield _build_here(out)
        return
    root = _new_root(tmp_path_factory.mktemp(f"debian{release.number}-build-root"), (), release,
                     apt=BUILD_ROOT)
    try:
        yield _build_in_root(root, out)
    finally:
        root.remove()


def test_build_gives_the_packages_and_their_debug_symbols(package_build, release):
    debs = sorted(p.name for p in package_build.out.glob("*.deb"))
    assert debs == sorted(f"{p}_{VERSION}_{ARCH}.deb" for p in
                          (*PACKAGES, "libdnsshim1-dbgsym", "dnsshim-tools-dbgsym",
                           "libnss-dnsshim-dbgsym", "dnsshimd-dbgsym"))
    # the staged library checked itself in the build (debian/rules), from
    # its own path, Debian's CPython and cffi backend, the copied dnspython
    staged = f"{package_build.inside}/debian/tmp{PRIVATE}"
    assert "check: ok: a sample response parsed (www.example.com A 192.0.2.1)\n" in \
        package_build.log
    runtime = re.search(r"^info: runtime: (.*)$", package_build.log, re.M).group(1)
    assert f"dnspython 2.9.2 ({staged}/dns)" in runtime
    assert f"shim {pipeline.package_version()} ({staged}/shim)" in runtime
    assert re.search(rf"^CPython {re.escape(release.python)}\.\d+ \(/usr\), ", runtime)
    assert f"cffi {release.cffi} ({release.cffi_backend()})" in runtime
    # the fronts a program links carry no Python; their runtimes, in the
    # private folder, are linked against that CPython's libpython, and no
    # other
    staged_lib = package_build.source / "debian" / "tmp" / LIBDIR.lstrip("/")
    for library in pipeline.LIBRARIES:
        for path, libpython in ((staged_lib / library.soname, []),
                                (staged_lib / "dnsshim" / library.runtime_soname,
                                 [f"libpython{release.python}.so.1.0"])):
            needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                                    check=True).stdout
            assert re.findall(r"Shared library: \[(libpython[^]]*)\]", needed) == libpython, path


def _docs(package):
    doc = f"/usr/share/doc/{package}"
    return {f"{doc}/changelog.Debian.gz": "", f"{doc}/changelog.gz": "", f"{doc}/copyright": ""}


def test_each_package_holds_exactly_its_files(package_build):
    lib = package_build.contents("libdnsshim1")
    python_side = {p for p in lib if p.startswith(PRIVATE + "/")}
    assert {p: t for p, t in lib.items() if p not in python_side} == {
        f"{LIBDIR}/libdnsshim.so.1": "", f"{LIBDIR}/libdnsshim_ares.so.1": "",
        f"{LIBDIR}/dnsshim/libdnsshim_runtime.so.1": "",
        f"{LIBDIR}/dnsshim/libdnsshim_ares_runtime.so.1": "",
        f"{LIBDIR}/dnsshim/libdnsshim_worker.so": "",
        "/usr/share/lintian/overrides/libdnsshim1": "",
        **_docs("libdnsshim1")}
    # the shim package as the project has it (its files, from the copy built)
    source = package_build.source / "shim"
    shim = {p[len(PRIVATE) + 6:] for p in python_side if p.startswith(f"{PRIVATE}/shim/")}
    assert shim == {str(p.relative_to(source)) for p in source.rglob("*") if p.is_file()}
    assert f"{PRIVATE}/dns/__init__.py" in python_side
    assert f"{PRIVATE}/dns/message.py" in python_side
    # no bytecode (the postinst compiles it), no cffi backend (Debian's),
    # of dnspython's dist-info the METADATA only
    assert not [p for p in python_side if "__pycache__" in p or p.endswith((".pyc", ".so"))]
    assert sorted(p for p in python_side if ".dist-info/" in p) == [
        f"{PRIVATE}/dnspython-2.9.2.dist-info/METADATA"]
    assert not [p for p in python_side if not p.startswith(
        (f"{PRIVATE}/shim/", f"{PRIVATE}/dns/", f"{PRIVATE}/dnspython-2.9.2.dist-info/"))]

    man3 = {f"/usr/share/man/man3/{f}.3.gz": "" for f in
            (*pipeline.header_functions(), "dnsshim_ares")}
    assert package_build.contents("libdnsshim-dev") == {
        "/usr/include/dns_shim.h": "",
        f"{LIBDIR}/libdnsshim.so": "libdnsshim.so.1",
        f"{LIBDIR}/libdnsshim_ares.so": "libdnsshim_ares.so.1",
        f"{LIBDIR}/libdnsshim.a": "", f"{LIBDIR}/libdnsshim_ares.a": "",
        f"{LIBDIR}/pkgconfig/dnsshim.pc": "", f"{LIBDIR}/pkgconfig/dnsshim-ares.pc": "",
        f"{LIBDIR}/cmake/dnsshim/dnsshimConfig.cmake": "",
        f"{LIBDIR}/cmake/dnsshim/dnsshimConfigVersion.cmake": "",
        "/usr/share/dnsshim/libdnsshim.supp": "", "/usr/share/man/man7/dnsshim.7.gz": "",
        **man3, **_docs("libdnsshim-dev"),
        # examples/, uncompressed (test_the_shipped_examples_build_and_run)
        **{f"/usr/share/doc/libdnsshim-dev/examples/{p.name}": ""
           for p in (ROOT / "examples").iterdir()}}
    assert package_build.contents("dnsshim-tools") == {
        "/usr/bin/dnsshim-dump": "", "/usr/bin/dnsshim-config": "",
        "/usr/share/man/man1/dnsshim-dump.1.gz": "",
        "/usr/share/man/man1/dnsshim-config.1.gz": "",
        "/usr/share/lintian/overrides/dnsshim-tools": "", **_docs("dnsshim-tools")}
    # the NSS module alone (no link, no archive: nothing links it; glibc
    # dlopen()s it by its name), its page, and how to turn it on
    assert package_build.contents("libnss-dnsshim") == {
        NSS_MODULE: "", "/usr/share/man/man8/libnss_dnsshim.8.gz": "",
        "/usr/share/lintian/overrides/libnss-dnsshim": "",
        "/usr/share/doc/libnss-dnsshim/README.Debian": "", **_docs("libnss-dnsshim")}
    readme = package_build.read("libnss-dnsshim",
                                "/usr/share/doc/libnss-dnsshim/README.Debian").decode()
    assert "hosts:          files dnsshim\n" in readme
    # the parse service, its page, and its systemd units as debian/ has them
    # (dh_installsystemd: /lib/systemd/system on Debian 12, /usr/lib on 13)
    service = package_build.contents("dnsshimd")
    units = sorted(p for p in service if p.endswith((".socket", ".service")))
    assert units in ([f"{d}/dnsshimd.service", f"{d}/dnsshimd.socket"]
                     for d in ("/lib/systemd/system", "/usr/lib/systemd/system")), units
    assert service == {
        "/usr/sbin/dnsshimd": "", "/usr/share/man/man8/dnsshimd.8.gz": "",
        **{unit: "" for unit in units}, **_docs("dnsshimd")}
    for unit in units:
        assert package_build.read("dnsshimd", unit) == \
            (ROOT / "debian" / PurePosixPath(unit).name).read_bytes(), unit


def test_no_package_holds_build_code(package_build):
    """The runtime package's private Python side is the runtime alone."""
    for package in PACKAGES:
        wrong = [path for path in package_build.contents(package)
                 if "/dnsshim_build/" in path or "/build_ffi." in path
                 or ("/shim/" in path and Path(path).name.split(".")[0] in BUILD_MODULES)]
        assert wrong == [], package
    assert any(path.endswith("/shim/glue.py") for path in package_build.contents("libdnsshim1"))


def test_news_is_each_package_upstream_changelog(package_build):
    news = (ROOT / "NEWS").read_bytes()
    for package in PACKAGES:
        assert gzip.decompress(package_build.read(
            package, f"/usr/share/doc/{package}/changelog.gz")) == news, package


def _relations(text: str) -> set:
    return {r.strip() for r in text.split(",")}


def test_dependencies(package_build, release):
    v = release.python
    depends = _relations(package_build.field("libdnsshim1", "Depends"))
    # cffi's backend from the floor the runtime has on that CPython
    floor = requirements.cffi_floor(v)
    assert {f"libpython{v}-stdlib", f"python3-cffi-backend (>= {floor})", f"python{v}"} <= depends
    assert {r for r in depends if r.startswith(f"libpython{v} ")} == {
        f"libpython{v} (>= {release.libpython_min})"}
    # exactly that CPython: no other python3.X, and no substvar left unset
    assert {r.split()[0] for r in depends if re.match(r"(lib)?python3\.\d", r)} == {
        f"libpython{v}", f"libpython{v}-stdlib", f"python{v}"}
    assert not [r for r in depends if "minimal" in r]
    assert _relations(package_build.field("libdnsshim-dev", "Depends")) == {
        f"libdnsshim1 (= {VERSION})", f"libpython{v}-dev"}
    tools = _relations(package_build.field("dnsshim-tools", "Depends"))
    assert {f"libdnsshim1 (= {VERSION})", f"python{v}"} <= tools
    assert {r.split()[0] for r in tools if re.match(r"(lib)?python3", r)} == {f"python{v}"}
    for package in PACKAGES:
        assert "${" not in package_build.field(package, "Depends"), package
        assert not re.search(r"3\.1\d", package_build.field(package, "Description")), package
    assert package_build.field("libdnsshim1", "Multi-Arch") == "same"
    # the symbols file, not a shlibs file, with libdnsshim-dev as the
    # Build-Depends-Package
    control = package_build.control("libdnsshim1")
    symbols, postinst = control["symbols"], control["postinst"]
    assert {"symbols", "postinst", "prerm", "triggers", "md5sums"} <= set(control)
    assert symbols.startswith("libdnsshim.so.1 libdnsshim1 #MINVER#\n"
                              "* Build-Depends-Package: libdnsshim-dev\n")
    assert " dns_shim_last_error@DNSSHIM_1.2 1.2.0\n" in symbols
    assert f"/usr/lib/{TRIPLET}/dnsshim/python" in postinst
    assert f"\tpython{v} -m compileall " in postinst


def test_the_nss_module_package_is_packaged_as_debian_s_nss_modules(package_build):
    """libnss-dnsshim as Debian packages its NSS modules (libnss-resolve,
    libnss-myhostname, libnss-mdns): Section admin, Multi-Arch same, the
    ldconfig trigger, dh_makeshlibs's own shlibs line and no symbols file
    (nothing links an NSS module: glibc dlopen()s it); and, unlike those,
    no maintainer script at all: nothing edits /etc/nsswitch.conf."""
    package = "libnss-dnsshim"
    assert package_build.field(package, "Section") == "admin"
    assert package_build.field(package, "Multi-Arch") == "same"
    depends = _relations(package_build.field(package, "Depends"))
    # libdnsshim1 of this very build (the module dlopen()s it and calls its
    # private entries, DNSSHIM_PRIVATE: no shlibs dependency can say so); and
    # glibc (libresolv, libc)
    assert {r.split()[0] for r in depends} == {"libdnsshim1", "libc6"}
    assert {r for r in depends if r.startswith("libdnsshim1 ")} == {f"libdnsshim1 (= {VERSION})"}
    control = package_build.control(package)
    assert set(control) == {"control", "md5sums", "shlibs", "triggers"}
    assert re.search(r"^activate-noawait ldconfig$", control["triggers"], re.M)
    assert control["shlibs"] == \
        f"libnss_dnsshim 2 {package} (>= {pipeline.package_version()})\n"
    for text in (package_build.field(package, "Description"),
                 package_build.read(package, f"/usr/share/doc/{package}/README.Debian").decode()):
        assert "/etc/nsswitch.conf" in text and "files dnsshim" in text


def test_the_service_package_enables_its_socket(package_build):
    """dnsshimd's maintainer scripts are dh_installsystemd's: the postinst
    enables dnsshimd.socket (the service's Also=), the postrm forgets it on
    purge; no user is made (the unit's DynamicUser=).  It runs on
    libdnsshim1 of this very build."""
    package = "dnsshimd"
    assert package_build.field(package, "Section") == "net"
    depends = _relations(package_build.field(package, "Depends"))
    assert {r for r in depends if r.startswith("libdnsshim1 ")} == {f"libdnsshim1 (= {VERSION})"}
    assert not [r for r in depends if re.match(r"(lib)?python3", r)]
    control = package_build.control(package)
    assert {"postinst", "postrm"} <= set(control), sorted(control)
    assert "deb-systemd-helper" in control["postinst"]
    assert "dnsshimd.socket" in control["postinst"]
    assert "deb-systemd-helper purge" in control["postrm"]
    assert not [name for name, text in control.items() if "adduser" in text or "useradd" in text]


#: What each release's lintian (2.116 on Debian 12, 2.122 on Debian 13) says
#: of this packaging, and why it stays: no ITP bug to close, on both; and, on
#: Debian 12 only (2.117 removed the tag as obsolete), dnsshimd's service has
#: no init.d script: a socket-activated dynamic user in systemd's sandbox has
#: no sysvinit equivalent.
LINTIAN_KNOWN = {release: sorted(
    [f"W: {p}: initial-upload-closes-no-bugs [usr/share/doc/{p}/changelog.Debian.gz:1]"
     for p in PACKAGES]
    + (["I: dnsshimd: package-supports-alternative-init-but-no-init.d-script "
        "[lib/systemd/system/dnsshimd.service]"] if release == "12" else []))
    for release in RELEASES}


def test_lintian(package_build, release):
    """The lintian of the release the packages were built on: this
    machine's, or the build root's."""
    command = ["lintian", "--fail-on", "error", "-I", "--tag-display-limit", "0"]
    if package_build.root is None:
        require_program("lintian", "lintian")
        result = subprocess.run([*command, str(package_build.changes)], capture_output=True,
                                text=True, timeout=900)
    else:
        result = package_build.root.run(
            " ".join(command) + f" /root/src/{package_build.changes.name}", check=False,
            timeout=900)
    tags = sorted(line for line in result.stdout.splitlines() if re.match(r"[EWIXP]: ", line))
    assert not [t for t in tags if t.startswith("E: ")], result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert tags == LINTIAN_KNOWN[release.number]


# ---- a fresh root of the release ----------------------------------------------------------------

#: What the root needs to build and run the test programs (and man to find a page).
TOOLS = ("gcc", "libc6-dev", "make", "pkg-config", "cmake", "libc-ares-dev", "man-db")


class Installed:
    def __init__(self, root: debian_root.DebianRoot, release: Release, before: dict, after: dict,
                 nsswitch: bytes):
        self.root = root
        self.release = release
        self.before = before  # {package: version} installed, before the packages
        self.after = after
        self.nsswitch = nsswitch  # /etc/nsswitch.conf before the packages

    def run(self, script: str, **kw) -> subprocess.CompletedProcess:
        return self.root.run(script, **kw)


def _dpkg_packages(root) -> dict:
    out = root.run("dpkg-query -W -f '${db:Status-Status} ${Package} ${Version}\\n'").stdout
    return {name: version for status, name, version in
            (line.split() for line in out.splitlines()) if status == "installed"}


@pytest.fixture(scope="session")
def installed(package_build, release, tmp_path_factory) -> Installed:
    """A fresh root of the release the packages were built for, the build
    tools installed, then the packages with apt-get install ./*.deb."""
    root = _new_root(tmp_path_factory.mktemp(f"debian{release.number}-root"), TOOLS, release)
    try:
        for package in PACKAGES:
            shutil.copy(package_build.deb(package), root.path("/root"))
        root.run("apt-get update -q")
        # (already in the cached base: a no-op that checks they are there)
        root.run(f"apt-get install -y -q --no-install-recommends {' '.join(TOOLS)}")
        before = _dpkg_packages(root)
        nsswitch = root.path("/etc/nsswitch.conf").read_bytes()
        root.run(f"apt-get install -y {DEBS}")
        yield Installed(root, release, before, _dpkg_packages(root), nsswitch)
    finally:
        root.remove()


def test_apt_pulls_only_debian_packages(installed):
    new = {name: v for name, v in installed.after.items() if installed.before.get(name) != v}
    assert {name: new[name] for name in PACKAGES} == {name: VERSION for name in PACKAGES}
    for name in installed.release.dependencies:
        assert name in installed.after
    # each other package new in the root, and each dependency, at a version
    # that apt has from an archive whose Release says Origin: Debian (not
    # only from dpkg's status file)
    names = sorted((set(new) - set(PACKAGES)) | set(installed.release.dependencies))
    origins = _archive_origins(installed)
    policy = installed.run(f"apt-cache policy {' '.join(names)}").stdout
    found = {}
    for block in re.split(r"^(?=\S)", policy, flags=re.M):
        if not block.strip():
            continue
        name = block.split(":")[0]
        m = re.search(r"^ \*\*\* (\S+) \d+\n((?:^ {8}.*\n)+)", block, re.M)
        assert m and m.group(1) == installed.after[name], block
        where = [line.split()[1:3] for line in m.group(2).splitlines()]
        found[name] = sorted({origins.get(tuple(w), w[0]) for w in where})
    assert found == {name: ["/var/lib/dpkg/status", "Debian"] for name in names}


def _archive_origins(installed) -> dict:
    """{(URI, suite/component): the Origin of its Release file}, from apt-cache policy."""
    policy = installed.run("apt-cache policy").stdout
    return {(uri, dist): origin for uri, dist, origin in re.findall(
        r"^ *-?\d+ (\S+) (\S+) \S+ Packages\n *release .*?\bo=([^,\n]*)", policy, re.M)}


def test_dnsshim_dump_check(installed):
    installed.run("touch /root/before-check")
    result = installed.run("dnsshim-dump --check")
    out = result.stdout + result.stderr
    assert "check: ok: a sample response parsed (www.example.com A 192.0.2.1)\n" in out
    assert re.search(rf"^library: (/usr)?/lib/{TRIPLET}/libdnsshim\.so\.1, "
                     rf"{re.escape(pipeline.package_version())} "
                     rf"\(CPython {re.escape(installed.release.python)}\)$", out, re.M)
    runtime = re.search(r"^info: runtime: (.*)$", out, re.M).group(1)
    assert runtime.startswith(f"CPython {installed.release.python}.")
    assert f"dnspython 2.9.2 ({PRIVATE}/dns)" in runtime
    assert f"shim {pipeline.package_version()} ({PRIVATE}/shim)" in runtime
    assert f"cffi {installed.release.cffi} ({installed.release.cffi_backend()})" in runtime
    # run as root, it wrote nothing into its Python side
    assert installed.run(f"find {LIBDIR}/dnsshim -newer /root/before-check").stdout == ""


def test_dnsshimd_runs_and_its_socket_is_enabled(installed):
    """/usr/sbin/dnsshimd runs (--version: the package's), and the postinst enabled its socket unit: sockets.target wants
    it (deb-systemd-helper, with no systemd running in the root)."""
    _installed_again(installed)
    result = installed.run("/usr/sbin/dnsshimd --version")
    assert pipeline.package_version() in result.stdout, result.stdout
    wants = installed.root.path("/etc/systemd/system/sockets.target.wants/dnsshimd.socket")
    assert os.path.islink(wants)
    assert os.readlink(wants).endswith("/systemd/system/dnsshimd.socket")


def test_a_program_the_installed_service_answers_maps_no_libpython(installed, tmp_path):
    """The packages' dnsshimd on a socket of its own in the root, and the
    installed dnsshim-dump (linked with libdnsshim.so.1) parsing a message
    through it: the dynamic linker loads no libpython (LD_DEBUG=files),
    where the same call parsing in the process loads it."""
    _installed_again(installed)
    message = tmp_path / "good.bin"
    message.write_bytes(malformed.GOOD)
    _copy_in(installed, [message], "/root/svc")
    loads = ("LD_DEBUG=files /usr/bin/dnsshim-dump /root/svc/good.bin 2>&1 >/dev/null | "
             "grep 'file=libpython' | grep -c 'generating link map' || true")
    # (": ;" first: run() puts "cd DIR &&" before the script, which would
    # take the service's "&" for the whole list)
    result = installed.run(
        ": ; /usr/sbin/dnsshimd --socket /root/svc/parse.sock >/root/svc/log 2>&1 </dev/null & "
        "pid=$!; "
        "for i in $(seq 100); do [ -S /root/svc/parse.sock ] && break; sleep 0.1; done; "
        f"DNS_SHIM_SERVICE=/root/svc/parse.sock DNS_SHIM_SERVICE_FALLBACK=no {loads}; "
        f"DNS_SHIM_SERVICE=/root/svc/parse.sock DNS_SHIM_SERVICE_FALLBACK=no "
        "/usr/bin/dnsshim-dump /root/svc/good.bin; echo status $?; "
        f"DNS_SHIM_SERVICE=none {loads}; kill $pid; wait $pid; echo stopped $?")
    lines = result.stdout.splitlines()
    assert lines[0] == "0" and lines[-2:] == ["1", "stopped 0"], (result.stdout, result.stderr)
    assert "status 0" in lines and "192.0.2.1" in result.stdout, result.stdout


def _installed_again(installed) -> None:
    """The packages installed again from the same .debs where a test before
    (test_purge_leaves_nothing, in the same root) purged them."""
    states = installed.run("dpkg-query -W -f '${db:Status-Status}\\n' " + " ".join(PACKAGES),
                           check=False).stdout.split()
    if states != ["installed"] * len(PACKAGES):
        installed.run(f"apt-get install -y {DEBS}")


def _ld_cache_lists_the_nss_module(installed) -> bool:
    cache = installed.run("ldconfig -p").stdout
    return bool(re.search(rf"^\s+libnss_dnsshim\.so\.2 \([^)]*\) => (/usr)?/lib/{TRIPLET}/"
                          r"libnss_dnsshim\.so\.2$", cache, re.M))


def test_the_nss_module_package_leaves_nsswitch_conf_alone(installed):
    """libnss-dnsshim puts libnss_dnsshim.so.2 where glibc's NSS finds the
    module of the word "dnsshim": the multiarch libdir, in ld.so's cache (its
    ldconfig trigger), its libraries found and its symbols bound; and
    /etc/nsswitch.conf is byte for byte what it was before the install,
    after it, after the package's purge (which takes the module out of the
    cache) and after its install again: turning the module on is the
    administrator's line ("hosts: files dnsshim"), never the package's."""
    _installed_again(installed)
    conf = installed.root.path("/etc/nsswitch.conf")
    assert b"dnsshim" not in installed.nsswitch
    assert conf.read_bytes() == installed.nsswitch
    assert installed.run(f"dpkg-query -S {NSS_MODULE}").stdout == \
        f"libnss-dnsshim:{ARCH}: {NSS_MODULE}\n"
    assert _ld_cache_lists_the_nss_module(installed)
    # a system library: no run path; libdnsshim not linked (a lookup the
    # parse service parses loads no Python) but dlopen()ed by its SONAME, which
    # ld.so.cache finds, for a reply parsed in the process; every symbol of
    # the module and its libraries bound
    dynamic = installed.run(f"readelf -d {NSS_MODULE}").stdout
    assert "Library soname: [libnss_dnsshim.so.2]" in dynamic
    assert "Shared library: [libdnsshim.so.1]" not in dynamic
    assert "RUNPATH" not in dynamic and "RPATH" not in dynamic
    assert re.search(rf"^\s+libdnsshim\.so\.1 \([^)]*\) => (/usr)?/lib/{TRIPLET}/"
                     r"libdnsshim\.so\.1$", installed.run("ldconfig -p").stdout, re.M)
    ldd = installed.run(f"ldd -r {NSS_MODULE}")
    assert "not found" not in ldd.stdout + ldd.stderr
    assert "undefined symbol" not in ldd.stdout + ldd.stderr

    installed.run("apt-get purge -y libnss-dnsshim")
    assert installed.run("dpkg-query -W -f '${db:Status-Status}' libnss-dnsshim",
                         check=False).stdout in ("not-installed", "")
    assert not os.path.lexists(installed.root.path(NSS_MODULE))
    assert not _ld_cache_lists_the_nss_module(installed)
    assert conf.read_bytes() == installed.nsswitch
    installed.run("apt-get install -y ./libnss-dnsshim_*.deb")
    assert _ld_cache_lists_the_nss_module(installed)
    assert conf.read_bytes() == installed.nsswitch


#: The release's lookups through glibc's dns and through the package's module,
#: answered from tests/nss_env.py's SAMPLE_ZONE.
NSS_LOOKUPS = ["ahosts www.example.test", "hosts alias.example.test", "ahostsv4 alias",
               "ahosts missing.example.test", "hosts 192.0.2.1", "ahostsv4 bad.example.test"]


def test_the_release_s_glibc_resolves_through_the_module_as_through_dns(installed, tmp_path):
    """In the release's root (glibc 2.36 on Debian 12, 2.41 on 13), getent
    with ``hosts: files dns`` and then with ``hosts: files dnsshim`` (the
    package's module, found where it installed it), against the same
    responder on loopback: the same output and exit status for every
    well-formed reply; a reply with trailing octets, which dns answers
    from, gives no address through the module."""
    import nss_env

    zone = dict(nss_env.SAMPLE_ZONE)
    zone[("bad.example.test", "A")] = nss_env.raw(nss_env.reply_wire(
        "bad.example.test", "A", answer=["bad.example.test. 300 IN A 192.0.2.66"]) + b"\x00")
    root = installed.root.dir
    saved = {name: installed.root.path(f"/etc/{name}").read_bytes()
             for name in ("nsswitch.conf", "resolv.conf")}
    script = [f"mount -t proc proc {root}/proc", f"mount --bind /dev {root}/dev",
              f"printf 'nameserver 127.0.0.1\\nsearch example.test\\n' > {root}/etc/resolv.conf"]
    for module in ("dns", "dnsshim"):
        script.append(f"printf 'hosts: files {module}\\n' > {root}/etc/nsswitch.conf")
        for lookup in NSS_LOOKUPS:
            script.append(f"echo '== {module} {lookup}'; chroot {root} /usr/bin/env -i "
                          f"PATH=/usr/bin:/bin getent {lookup} 2>&1; echo \"rc=$?\"")
    try:
        result = nss_env.run(tmp_path, zone, [nss_env.command(["sh", "-c", "\n".join(script)])],
                             timeout=300)
    finally:
        for name, text in saved.items():
            installed.root.path(f"/etc/{name}").write_bytes(text)
    out = result.commands[0].stdout
    dns, dnsshim = (dict(re.findall(rf"^== {m} (.*)\n((?:(?!== ).*\n)*)", out, re.M))
                    for m in ("dns", "dnsshim"))
    assert sorted(dns) == sorted(dnsshim) == sorted(NSS_LOOKUPS), out
    bad = "ahostsv4 bad.example.test"
    for lookup in NSS_LOOKUPS:
        if lookup != bad:
            assert dnsshim[lookup] == dns[lookup], lookup
    assert dns["ahosts www.example.test"].splitlines()[0] == (
        "2001:db8::1     STREAM www.example.test")
    assert dns["hosts alias.example.test"] == (
        "2001:db8::1     www.example.test alias.example.test mid.example.test\nrc=0\n")
    assert dns["ahosts missing.example.test"] == "rc=2\n"
    assert dns[bad].startswith("192.0.2.66      STREAM bad.example.test\n")
    assert dnsshim[bad] == "rc=2\n"


def test_manual_pages_found_by_man(installed):
    result = installed.run("man -w dns_shim_process_reply; man -w 7 dnsshim; man -w dnsshim-dump;"
                           " man -w dnsshim_ares; man -w libnss_dnsshim; man -w dnsshimd")
    assert result.stdout.splitlines() == [
        "/usr/share/man/man3/dns_shim_process_reply.3.gz", "/usr/share/man/man7/dnsshim.7.gz",
        "/usr/share/man/man1/dnsshim-dump.1.gz", "/usr/share/man/man3/dnsshim_ares.3.gz",
        "/usr/share/man/man8/libnss_dnsshim.8.gz", "/usr/share/man/man8/dnsshimd.8.gz"]


# ---- C programs in the root against the host's build -------------------------------------


class Messages:
    def __init__(self, directory: Path, names: list, host_stdout: str):
        self.dir = directory
        self.names = names
        self.host_stdout = host_stdout


@pytest.fixture(scope="module")
def messages(built, tmp_path_factory) -> Messages:
    """The test vectors and the malformed messages, one file each, and what
    the host's dnsshim_test prints for them (run where they are, by name)."""
    d = tmp_path_factory.mktemp("debian-messages")
    names = [path.name for path in write_messages(d)]
    host = subprocess.run([str(built.test_prog), *names], cwd=d, capture_output=True,
                          text=True, errors="replace", timeout=600)
    assert host.returncode == 0, host.stderr[-3000:]
    logs = split_log(host.stdout)
    assert sorted(logs) == sorted(names)
    for name, (_wire, status) in malformed.CASES.items():
        assert logs[f"bad_{name}.bin"][-1].startswith(f"status {int(status)} "), name
    return Messages(d, names, host.stdout)


def _copy_in(installed, files, where: str) -> None:
    target = installed.root.path(where)
    target.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, target)


@pytest.fixture(scope="module")
def root_messages(installed, messages) -> str:
    _copy_in(installed, [messages.dir / n for n in messages.names], "/root/messages")
    _copy_in(installed, [ROOT / "tests" / "c" / "dnsshim_test.c",
                         pipeline.TOOLS / "tool_util.h"], "/root/prog")
    return " ".join(messages.names)


def test_c_program_built_with_pkg_config_prints_what_the_host_build_prints(installed, messages,
                                                                          root_messages):
    installed.run("cc -O2 -g -Wall -Wextra -Werror -o dnsshim_test dnsshim_test.c "
                  "$(pkg-config --cflags --libs dnsshim)", cwd="/root/prog")
    result = installed.run(f"/root/prog/dnsshim_test {root_messages}", cwd="/root/messages")
    assert result.stdout == messages.host_stdout
    needed = installed.run("readelf -d /root/prog/dnsshim_test").stdout
    assert "Shared library: [libdnsshim.so.1]" in needed
    assert "RUNPATH" not in needed and "RPATH" not in needed


CMAKELISTS = """\
cmake_minimum_required(VERSION 3.13)
project(dnsshim_test C)
find_package(dnsshim 1.2 REQUIRED)
add_executable(dnsshim_test dnsshim_test.c)
target_compile_options(dnsshim_test PRIVATE -Wall -Wextra -Werror)
target_link_libraries(dnsshim_test PRIVATE dnsshim::dnsshim)
"""


def test_c_program_built_with_cmake_prints_what_the_host_build_prints(installed, messages,
                                                                      root_messages):
    installed.root.path("/root/prog/CMakeLists.txt").write_text(CMAKELISTS)
    installed.run("cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >cmake.log && "
                  "cmake --build build >>cmake.log", cwd="/root/prog")
    result = installed.run(f"/root/prog/build/dnsshim_test {root_messages}",
                           cwd="/root/messages")
    assert result.stdout == messages.host_stdout


def test_the_shipped_examples_build_and_run(installed, tmp_path):
    """libdnsshim-dev's examples (/usr/share/doc/libdnsshim-dev/examples),
    exactly examples/ and uncompressed, copied and built as a user does:
    make with the system's pkg-config (ares_classic with Debian's
    libc-ares-dev) and CMake's find_package with no prefix given; each
    program prints what test_examples pins (parallel: two interpreters,
    libdnsshim1's worker image, with the answers of one)."""
    import test_examples

    shipped = "/usr/share/doc/libdnsshim-dev/examples"
    names = installed.run(f"ls {shipped}").stdout.split()
    assert sorted(names) == sorted(p.name for p in (ROOT / "examples").iterdir())
    for name in names:
        assert installed.root.path(f"{shipped}/{name}").read_bytes() == \
            (ROOT / "examples" / name).read_bytes(), name
    for name, wire in test_examples.MESSAGES.items():
        target = installed.root.path(f"/root/example-messages/{name}.bin")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(wire)
    installed.run(f"rm -rf /root/ex && cp -r {shipped} /root/ex && make -C /root/ex all "
                  "ares_classic >/root/ex/make.log 2>&1 && cmake -S /root/ex -B /root/ex/b "
                  ">/root/ex/cmake.log && cmake --build /root/ex/b >>/root/ex/cmake.log",
                  cwd="/root")
    assert "warning" not in installed.root.path("/root/ex/make.log").read_text()
    def in_root(command, stdin):
        installed.root.path("/root/example-stdin.bin").write_bytes(stdin)
        result = installed.run(f"{shlex.join(command)} </root/example-stdin.bin", check=False)
        return result.returncode, result.stdout, result.stderr

    for where in ("/root/ex", "/root/ex/b"):
        test_examples.check_runs(PurePosixPath(where), PurePosixPath("/root/example-messages"),
                                 test_examples.PROGRAMS + ["ares_classic"], run=in_root)


def test_c_ares_program_prints_what_the_host_build_prints(installed, built, tmp_path):
    require_cares()
    from test_ares import _ims_messages

    paths = _ims_messages(tmp_path)
    names = [p.name for p in paths]
    host = subprocess.run([str(built.dir / "ares_sip_locate"), *names], cwd=tmp_path,
                          capture_output=True, text=True, errors="replace", timeout=600)
    assert host.returncode == 0, host.stdout + host.stderr
    _copy_in(installed, paths, "/root/ares")
    _copy_in(installed, [ROOT / "tests" / "c" / "ares_sip_locate.c",
                         pipeline.TOOLS / "tool_util.h"], "/root/ares")
    # (c-ares 1.34, Debian 13's, declares the classic parsers deprecated for
    # ares_dns_parse: the warning is the API's age, not a defect here)
    installed.run("cc -O2 -g -Wall -Wextra -Werror -Wno-deprecated-declarations "
                  "$(pkg-config --cflags libcares) "
                  "-o ares_sip_locate ares_sip_locate.c $(pkg-config --libs dnsshim-ares) "
                  "$(pkg-config --libs libcares)", cwd="/root/ares")
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]",
                        installed.run("readelf -d ares_sip_locate", cwd="/root/ares").stdout)
    # every c-ares function it calls comes from libdnsshim_ares, linked
    # first: -lcares is left out (--as-needed), as in the host's build
    assert needed == ["libdnsshim_ares.so.1", "libc.so.6"]
    result = installed.run(f"./ares_sip_locate {' '.join(names)}", cwd="/root/ares")
    assert result.stdout == host.stdout
    assert result.stdout.startswith("NAPTR 10 50 SIP+D2T -> _sip._tcp.ims.mnc001.mcc001.")


def _dnsrec_lines(stdout: str) -> dict:
    """tests/c/ares_dnsrec.c's output as {file: the rest of its line}."""
    lines = {}
    for line in stdout.splitlines():
        name, rest = line.split(" status ", 1)
        lines[name] = rest
    return lines


def test_c_ares_own_ares_dns_parse_goes_through_dnsshim(installed, built, ares_dnsrec,
                                                       tmp_path):
    """Debian 13's c-ares (1.34) has its own ares_dns_parse, the parser its
    resolver runs on every reply: a program of that API linked with
    libdnsshim_ares before -lcares (pkg-config dnsshim-ares), and one linked
    with -lcares alone run with LD_PRELOAD of the installed
    libdnsshim_ares.so.1, get this library's answers: what the host's driver
    (c-ares 1.34 from source) prints with the host's libdnsshim_ares
    preloaded, message for message, and not what c-ares alone prints."""
    version = installed.run("pkg-config --modversion libcares").stdout.strip()
    if tuple(map(int, version.split(".")[:2])) < (1, 22):
        # Debian 12's c-ares 1.18: no ares_dns_parse, no record API to
        # build against (tests/test_ares_dns_parse.py's ENOTIMP test covers that case)
        assert installed.release.number == "12"
        pytest.skip(f"Debian {installed.release.number}'s c-ares {version} has no ares_dns_parse")
    assert installed.release.number != "12"
    paths = write_messages(tmp_path)
    (tmp_path / "loc_rdlen15.bin").write_bytes(forms_matrix.LOC_15)
    names = [p.name for p in paths] + ["loc_rdlen15.bin"]

    def host(preload=None):
        env = dict(os.environ, **({"LD_PRELOAD": str(preload)} if preload else {}))
        result = subprocess.run([str(ares_dnsrec), "--", *names], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        return result.stdout

    ours = host(built.dir / pipeline.DNSSHIM_ARES.soname)
    theirs = host()
    assert _dnsrec_lines(ours)["loc_rdlen15.bin"] == "10"
    assert _dnsrec_lines(theirs)["loc_rdlen15.bin"].startswith("0 write ")

    _copy_in(installed, [tmp_path / n for n in names], "/root/dnsrec")
    _copy_in(installed, [ROOT / "tests" / "c" / "ares_dnsrec.c"], "/root/dnsrec")
    strict = "cc -O2 -g -Wall -Wextra -Werror $(pkg-config --cflags libcares)"
    installed.run(f"{strict} -o linked ares_dnsrec.c $(pkg-config --libs dnsshim-ares) "
                  f"$(pkg-config --libs libcares) && "
                  f"{strict} -o plain ares_dnsrec.c $(pkg-config --libs libcares)",
                  cwd="/root/dnsrec")
    needed = {prog: re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", installed.run(
        f"readelf -d {prog}", cwd="/root/dnsrec").stdout) for prog in ("linked", "plain")}
    # linked first, libdnsshim_ares's ares_dns_parse is the one bound; the
    # record API (ares_dns_write, ares_dns_record_destroy) is c-ares's
    assert needed["linked"] == ["libdnsshim_ares.so.1", "libcares.so.2", "libc.so.6"]
    assert needed["plain"] == ["libcares.so.2", "libc.so.6"]
    files = " ".join(names)
    linked = installed.run(f"./linked -- {files}", cwd="/root/dnsrec")
    preloaded = installed.run(f"LD_PRELOAD={LIBDIR}/libdnsshim_ares.so.1 ./plain -- {files}",
                              cwd="/root/dnsrec")
    alone = installed.run(f"./plain -- {files}", cwd="/root/dnsrec")
    assert linked.stdout == ours
    assert preloaded.stdout == ours
    assert linked.stderr == preloaded.stderr == ""
    # c-ares alone: the LOC parsed, as c-ares from source parses it
    assert _dnsrec_lines(alone.stdout)["loc_rdlen15.bin"] == \
        _dnsrec_lines(theirs)["loc_rdlen15.bin"]
    assert alone.stdout != ours


def test_dnsshim_config_answers_as_pkg_config(installed):
    def out(command):
        return installed.run(command).stdout.split()

    assert out("dnsshim-config --cflags --libs") == out("pkg-config --cflags --libs dnsshim")
    assert out("dnsshim-config --ares --libs") == out("pkg-config --libs dnsshim-ares")
    assert out("dnsshim-config --libs") == ["-ldnsshim"]
    assert out("dnsshim-config --version") == [pipeline.package_version()]
    # README.md's LD_PRELOAD=$(dnsshim-config --libdir)/libdnsshim_ares.so.1 (the preload
    # test uses that folder)
    assert out("dnsshim-config --libdir") == [LIBDIR]


# ---- a Python program in the root as the library's host ---------------------------------

#: The release's own Python host: its python3 and its dnspython (2.3.0 on 12,
#: 2.7.0 on 13), which the program imports before it loads the library.
HOST_PACKAGES = ("python3", "python3-dnspython")


@pytest.mark.parametrize("mode", [[], ["--registered"]], ids=["dns_shim_process", "registered"])
def test_python_program_loads_the_package_as_a_guest(installed, built, messages, root_messages,
                                                       mode):
    """The package's libdnsshim.so.1 loaded with ctypes into a program run by
    the release's own python3, after it imported Debian's dnspython: the
    library runs as a guest, with its own copy of its Python side from the
    package's private folder, and leaves the program's sys.path, import
    machinery and modules as they were (guest_host.assert_guest); the C test
    driver run in that process prints every field of every message as the
    host's build prints it in a C program, and both call modes give its
    statuses."""
    from guest_host import HOST_PROGRAM, assert_guest, c_statuses

    installed.run(f"apt-get install -y -q --no-install-recommends {' '.join(HOST_PACKAGES)}")
    installed.run("cc -O2 -g -Wall -Wextra -Werror -shared -fPIC -Dmain=dnsshim_driver_main "
                  "-o /root/prog/driver.so dnsshim_test.c $(pkg-config --cflags --libs dnsshim)",
                  cwd="/root/prog")
    names = messages.names
    args = {"import_dns": True, "lib": f"{LIBDIR}/libdnsshim.so.1", "statuses": names,
            "driver": "/root/prog/driver.so", "driver_args": [*mode, *names],
            "report": "/root/guest-report.json"}
    installed.root.path("/root/host.py").write_text(HOST_PROGRAM)
    installed.root.path("/root/host-args.json").write_text(json.dumps(args))
    result = installed.run('/usr/bin/python3 /root/host.py "$(cat /root/host-args.json)"',
                           cwd="/root/messages")
    assert result.stderr == ""
    report = json.loads(installed.root.path("/root/guest-report.json").read_text())
    assert report["version"].startswith(installed.release.python + ".")
    assert report["statuses"].pop("driver rc") == 0
    host = subprocess.run([str(built.test_prog), *mode, *names], cwd=messages.dir,
                          capture_output=True, text=True, errors="replace", timeout=600)
    assert host.returncode == 0 and host.stdout.count("\nstatus ") == len(names)
    assert result.stdout == host.stdout
    # the direct calls: the statuses the C driver printed, in both modes
    statuses = map(int, c_statuses(messages.host_stdout))
    assert report["statuses"] == {name: [status, status]
                                  for name, status in zip(names, statuses, strict=True)}
    assert_guest(report)
    # the program's dnspython is Debian's, before and after, not the library's
    dns_version, dns_file = report["after"]["dns"]
    assert dns_version == {"12": "2.3.0", "13": "2.7.0"}[installed.release.number]
    assert dns_file == "/usr/lib/python3/dist-packages/dns/version.py"
    assert report["after"]["specs"]["shim"] is None
    assert not [p for p in report["after"]["path"] if p.startswith(f"{LIBDIR}/dnsshim")]


# ---- last: the purge ---------------------------------------------------------------------


def test_purge_leaves_nothing(installed):
    root = installed.root
    listed = root.run(f"dpkg -L {' '.join(PACKAGES)}").stdout.split("\n")
    listed = sorted({p for p in listed if p.startswith("/") and p != "/."})
    # a directory, or the root's own link to one (merged /usr: /lib, where
    # Debian 12's debhelper puts systemd units), is not a file of ours
    directories = [p for p in listed if root.path(p).is_dir()]
    files = [p for p in listed if p not in directories]
    assert f"{LIBDIR}/libdnsshim.so.1" in files and "/usr/bin/dnsshim-dump" in files
    assert NSS_MODULE in files
    # the postinst compiled the private side (checked-hash .pyc files: flags 3)
    pyc = sorted(root.path(f"{PRIVATE}/shim/__pycache__").glob("*.pyc"))
    assert [p.name for p in pyc if p.name.startswith("__init__.")] == [
        f"__init__.cpython-{installed.release.tag}.pyc"]
    assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in pyc} == {3}

    root.run(f"apt-get purge -y {' '.join(PACKAGES)}")
    states = root.run("dpkg-query -W -f '${Package} ${db:Status-Status}\\n' " + " ".join(PACKAGES),
                      check=False).stdout.splitlines()
    assert [s for s in states if not s.endswith(" not-installed")] == []
    assert [p for p in files if os.path.lexists(root.path(p))] == []
    # a directory left is another package's
    left = [d for d in directories if root.path(d).is_dir() and not root.path(d).is_symlink()]
    unowned = root.run("for d in " + " ".join(f"'{d}'" for d in left) +
                       "; do dpkg-query -S \"$d\" >/dev/null 2>&1 || echo \"$d\"; done").stdout
    assert unowned == ""
    for gone in (f"{LIBDIR}/dnsshim", f"{LIBDIR}/cmake/dnsshim", "/usr/share/dnsshim",
                 "/usr/share/doc/libdnsshim1", NSS_MODULE, "/usr/share/doc/libnss-dnsshim",
                 "/usr/sbin/dnsshimd", "/etc/systemd/system/sockets.target.wants/dnsshimd.socket"):
        assert not os.path.lexists(root.path(gone)), gone
    assert root.path("/etc/nsswitch.conf").read_bytes() == installed.nsswitch


# ---- what the packages have of 1.3's features (tests/forms_matrix.py) ----------------------


def test_the_packages_have_what_the_forms_matrix_says(installed):
    """The release's column of forms_matrix.EXPECTED (README.md's "What each
    form has"), observed in the root as test_forms.py observes the other
    forms: tests/c/forms_probe.c built there with the system's pkg-config
    (dnsshim-ares and dnsshim linked before the release's c-ares,
    libc-ares-dev) and run (parallelism 2, the c-ares layer's ares_dns_parse,
    the memory limit); the release's python3.X loading libdnsshim.so.1 with
    ctypes (guest mode); man -w.  On Debian 12, whose c-ares 1.18 has no record
    API, ares_dns_parse is ARES_ENOTIMP with its one log line.  Last in this
    file: test_purge_leaves_nothing has purged the packages, so they are
    installed again first, from the same .debs (a no-op when it did not run)."""
    _installed_again(installed)
    form = f"debian{installed.release.number}"
    args = forms_matrix.write_probe_messages(installed.root.path("/root/forms"))
    shutil.copy(forms_matrix.PROBE_SOURCE, installed.root.path("/root/forms"))
    shutil.copy(pipeline.TOOLS / "tool_util.h", installed.root.path("/root/forms"))
    installed.run("cc -O2 -g -Wall -Wextra -Werror -DFORMS_PROBE_ARES -o forms_probe "
                  "forms_probe.c $(pkg-config --cflags --libs dnsshim-ares dnsshim libcares) "
                  "-pthread", cwd="/root/forms")
    probe = installed.run("./forms_probe " + " ".join(args), cwd="/root/forms")
    assert probe.stdout.startswith(f"version {pipeline.package_version()} "
                                   f"(CPython {installed.release.python})\n"), probe.stdout
    lines = forms_matrix.probe_lines(probe.stdout)
    installed.root.path("/root/forms/guest.py").write_text(forms_matrix.GUEST_PROGRAM)
    guest = installed.run(f"/usr/bin/python{installed.release.python} -I guest.py "
                          f"{LIBDIR}/libdnsshim.so.1 good.bin", cwd="/root/forms")
    assert guest.stderr == ""
    lines["guest"] = guest.stdout.strip()
    found = installed.run(f"man -w {' '.join(forms_matrix.MAN_ASKED)}").stdout.strip()
    pages = forms_matrix.pages_under(installed.root.path("/usr/share/man"), ".gz")
    lines["man"] = forms_matrix.man_line("/usr/share/man", pages, found)
    forms_matrix.assert_row(form, lines, forms_matrix.message_count(args))
    # where the release's c-ares has no record API, the layer says so once
    assert probe.stderr.splitlines() == ([] if forms_matrix.EXPECTED[form]["c-ares"][0] else
                                         [forms_matrix.ENOTIMP_LOG])
