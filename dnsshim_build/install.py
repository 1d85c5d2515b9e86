"""python build_ffi.py --prefix PREFIX: libdnsshim installed the way C
libraries are, standing alone.

    python build_ffi.py --prefix PREFIX [--libdir DIR] [--destdir DIR] [--system]
    python build_ffi.py --prefix PREFIX [--destdir DIR] --uninstall

installs, under PREFIX (DIR for the libraries, default PREFIX/lib), where
shim/layout.py's prefix form places each part::

    DIR/libdnsshim.so.1, libdnsshim.so, libdnsshim.a      the library
    DIR/libdnsshim_ares.so.1, libdnsshim_ares.so, .a       the c-ares layer
    DIR/dnsshim/libdnsshim_worker.so                       the worker image
        (parallelism above 1, dnsshim_build/worker.py), or, where it could
        not be built, DIR/dnsshim/libdnsshim_worker.unavailable saying why
    DIR/pkgconfig/dnsshim.pc, dnsshim-ares.pc
    DIR/cmake/dnsshim/dnsshimConfig.cmake, dnsshimConfigVersion.cmake
    DIR/dnsshim/python/                                    the Python side: the
        shim package, dnspython and cffi's backend, compiled; the libraries
        find it from their own path (the static archives: from where it was
        installed)
    PREFIX/include/dns_shim.h
    PREFIX/bin/dnsshim-dump, dnsshim-config
    PREFIX/sbin/dnsshimd                                   the parse service
    PREFIX/share/man/man1, man3, man7, man8/               the manual
    PREFIX/share/dnsshim/libdnsshim.supp                  valgrind suppressions
    PREFIX/share/doc/dnsshim/NEWS
    PREFIX/share/dnsshim/install-manifest                 what was installed

so that the clone and the virtualenv that built it may go: the libraries
run the CPython installation that the building Python is based on (a
virtualenv's base), and nothing else of the machine's Python.  The building
Python must import what the runtime needs (cffi's backend and dnspython at
their floors, shim/requirements.py): it is copied from there, and the
install refuses, in one line, when it cannot.

``--destdir`` (or ``DESTDIR`` in the environment) is prepended to every path
written, for packagers: the files work once moved to their place.
``--system`` is a distribution's install (the Debian package, debian/rules):
no run path to a system directory, no manifest (the package manager keeps
one), nothing compiled in the Python side (the package's scripts compile it)
and no private copy of cffi's backend (the distribution's is a dependency;
the worker image has its own inside, built from the cffi source that the
distribution's build provides, debian/rules).

``--uninstall`` removes exactly what the manifest lists, then the folders
the installs created, once empty.  Everything is built in a staging folder
first: a failed install leaves the prefix as it was.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dnsshim_build import pipeline, worker
from shim import layout as forms



class InstallError(SystemExit):
    """One line: why the install (or uninstall) cannot be done."""

    def __init__(self, message: str) -> None:
        super().__init__(f"build_ffi.py --prefix: {message}")


@dataclass(frozen=True)
class Layout:
    """Where each part goes (shim/layout.py's prefix form, its libdir
    possibly moved): final paths (as programs will see them) and the staging
    root prepended to them when writing (DESTDIR)."""

    prefix: Path
    libdir: Path
    destdir: str = ""
    system: bool = False
    form: forms.Form = forms.PREFIX

    @classmethod
    def of(cls, prefix, libdir=None, destdir: str = "", system: bool = False,
           form: forms.Form = forms.PREFIX) -> "Layout":
        prefix = Path(os.path.abspath(prefix))
        libdir = Path(os.path.abspath(libdir)) if libdir else form.path("lib", prefix)
        return cls(prefix, libdir, destdir.rstrip("/"), system, form)

    def part(self, name: str) -> Path:
        """The directory of a part of the form (shim/layout.py's names)."""
        return self.form.path(name, self.prefix, libdir=self.libdir)

    @property
    def includedir(self) -> Path:
        return self.part("include")

    @property
    def bindir(self) -> Path:
        return self.part("bin")

    @property
    def sbindir(self) -> Path:
        return self.part("sbin")

    @property
    def datadir(self) -> Path:
        return self.part("data")

    @property
    def private(self) -> Path:
        return self.part("python")

    @property
    def manifest(self) -> Path:
        from shim import manifest

        return manifest.path(self.prefix)

    def staged(self, path: Path, root: str | None = None) -> Path:
        """path under the staging root (default: the destdir)."""
        return Path((self.destdir if root is None else root) + str(path))


def check_runtime_needs(system: bool) -> None:
    """The building Python must import what the runtime needs, at its
    floors: the Python side is copied from it."""
    from shim import requirements

    why = requirements.problem()
    if why:
        raise InstallError(f"cannot install: the Python side is copied from the Python that "
                           f"builds, and {why}")


# ------------------------------------------------------------------- the parts


#: The folders a package install's parts add to the shim package (lib/,
#: include/, bin/, share/): built files, not the Python side's.
_PACKAGE_PARTS = {Path(forms.PACKAGE.relative(part)).parts[0] for part in forms.PACKAGE.parts}


def _ignore(directory, names):
    return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".so", ".a"))
            or n in _PACKAGE_PARTS and Path(directory).name == forms.PACKAGE_NAME]


def python_side(dest: Path, system: bool) -> None:
    """The shim package, dnspython (with its dist-info's METADATA, which the
    shim reads to answer dnspython's optional-feature checks) and, unless
    system, cffi's backend, from the building Python."""
    import importlib.metadata

    import _cffi_backend
    import dns

    import shim

    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(shim.__file__).parent, dest / "shim", ignore=_ignore)
    shutil.copytree(Path(dns.__file__).parent, dest / "dns",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = importlib.metadata.distribution("dnspython")
    info = dest / f"dnspython-{dist.version}.dist-info"
    info.mkdir()
    for f in dist.files or ():
        if f.parent.name.endswith(".dist-info") and (f.name == "METADATA" or
                                                     "licen" in str(f).lower()):
            target = info / f.relative_to(f.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.locate(), target)
    if not system:
        backend = Path(_cffi_backend.__file__)
        shutil.copy2(backend, dest / backend.name)
        libs = backend.parent / "cffi.libs"  # a wheel's own libffi, if it has one
        if libs.is_dir():
            shutil.copytree(libs, dest / libs.name)
        compileall.compile_dir(str(dest), quiet=1, workers=1)


LAUNCHER = '''\
#!{python} -IB
"""dnsshim-config of the libdnsshim installed under this prefix."""
import sys
from pathlib import Path

prefix = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(prefix / {private!r}))
from shim import config, layout

sys.exit(config.main(installation=config.Installation(prefix, prefix / {libdir!r},
                                                        layout.PREFIX)))
'''


def _relative(path: Path, start: Path) -> str:
    return os.path.relpath(path, start)


def cmake_files(pipeline, layout: Layout, dest: Path) -> None:
    """dnsshimConfig.cmake and dnsshimConfigVersion.cmake, from cmake/'s
    templates: every path relative to the files' own folder."""
    import re

    cmakedir = layout.part("cmake")
    libdir, name = pipeline.python_library()
    libpython = (f"-l{name}" if pipeline.system_library_dir(libdir)
                 else str(Path(libdir) / sysconfig.get_config_var("LDLIBRARY")))
    version = pipeline.package_version()
    values = {
        "DNSSHIM_VERSION": version, "DNSSHIM_VERSION_MAJOR": version.split(".")[0],
        "DNSSHIM_SOVERSION": pipeline.DNSSHIM.soname.rsplit(".", 1)[1],
        "DNSSHIM_ARES_SOVERSION": pipeline.DNSSHIM_ARES.soname.rsplit(".", 1)[1],
        "DNSSHIM_CMAKEDIR": str(cmakedir),
        "DNSSHIM_LIBDIR_FROM_CMAKEDIR": _relative(layout.libdir, cmakedir),
        "DNSSHIM_INCLUDEDIR_FROM_CMAKEDIR": _relative(layout.includedir, cmakedir),
        "DNSSHIM_SUPP_FROM_CMAKEDIR": _relative(
            layout.datadir / pipeline.SUPPRESSIONS.name, cmakedir),
        "DNSSHIM_STATIC_LINK_LIBRARIES": ";".join([libpython, "-lpthread", "-ldl", "-lm"]),
        "DNSSHIM_SIZEOF_VOID_P": str(sysconfig.get_config_var("SIZEOF_VOID_P") or 8),
    }
    dest.mkdir(parents=True, exist_ok=True)
    for template in sorted((pipeline.ROOT / "cmake").glob("*.cmake.in")):
        text = re.sub(r"@(\w+)@", lambda m: values[m.group(1)], template.read_text())
        (dest / template.name[:-3]).write_text(text, encoding="utf-8")


def tool_help(program: Path, libdir: Path) -> str:
    import subprocess

    result = subprocess.run([str(program), "--help"], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(libdir)})
    if result.returncode != 0 or not result.stdout:
        raise InstallError(f"{program} --help failed: {result.stderr.strip()[-300:]}")
    return result.stdout.replace(str(program), program.name)


def _run_path(libdir: Path, directory: Path) -> str:
    """The run path of a program installed in directory that finds the
    libraries in libdir wherever the tree is moved ("" for a system library
    directory, where the dynamic linker looks anyway)."""
    if pipeline.system_library_dir(libdir):
        return ""
    return f"$ORIGIN/{_relative(libdir, directory)}"


def compile_service(sbindir: Path, lib: Path, rpath: str, verbose: bool, cflags=()) -> Path:
    """dnsshimd, the parse service, into sbindir: built as dnsshim-dump is
    (-ldnsshim from lib, the run path rpath, "" for none), beside it."""
    sbindir.mkdir(parents=True, exist_ok=True)
    return pipeline.compile_program([pipeline.SERVICE], sbindir / "dnsshimd", against=lib,
                                    rpath=rpath, verbose=verbose, cflags=cflags)


def stage(pipeline, layout: Layout, root: str, verbose: bool) -> None:
    """Every file, under the staging root."""
    lib = layout.staged(layout.libdir, root)
    pipeline.build(lib, pipeline.Mode.PREFIX, verbose=verbose, private=str(layout.private),
                    system=layout.system)
    # A distribution's packages must have it (its build puts cffi's source in
    # the cache first, debian/rules); elsewhere, where it cannot be built,
    # the install says why and goes on.
    try:
        worker.build_into(layout.staged(layout.part("worker"), root), verbose,
                          required=layout.system)
    except worker.FirmwareError as e:
        raise InstallError(f"cannot install: {e}") from None
    include = layout.staged(layout.includedir, root)
    include.mkdir(parents=True)
    shutil.copyfile(pipeline.HEADER, include / pipeline.HEADER.name)
    bindir = layout.staged(layout.bindir, root)
    bindir.mkdir(parents=True)
    # (told where the form keeps the worker image, for --check's line)
    worker_dir = [f'-DDNS_SHIM_WORKER_DIR="{layout.form.worker_from_lib()}"']
    dump = pipeline.compile_program([pipeline.TOOLS / "dnsshim-dump.c"], bindir / "dnsshim-dump",
                                     against=lib, rpath=_run_path(layout.libdir, layout.bindir),
                                     verbose=verbose, cflags=worker_dir)
    compile_service(layout.staged(layout.sbindir, root), lib,
                    _run_path(layout.libdir, layout.sbindir), verbose, cflags=worker_dir)
    launcher = bindir / "dnsshim-config"
    launcher.write_text(LAUNCHER.format(
        python=pipeline.base_python(), private=_relative(layout.private, layout.prefix),
        libdir=_relative(layout.libdir, layout.prefix)), encoding="utf-8")
    launcher.chmod(0o755)
    data = layout.staged(layout.datadir, root)
    data.mkdir(parents=True)
    shutil.copyfile(pipeline.SUPPRESSIONS, data / pipeline.SUPPRESSIONS.name)
    if not layout.system:  # a distribution installs its own documentation
        doc = layout.staged(layout.part("doc"), root)
        doc.mkdir(parents=True)
        shutil.copyfile(pipeline.ROOT / "NEWS", doc / "NEWS")
        copy_examples(layout.staged(layout.part("examples"), root))
    under = layout.libdir.relative_to(layout.prefix) if layout.libdir.is_relative_to(
        layout.prefix) else None
    pipeline.write_pkgconfig(layout.staged(layout.part("pkgconfig"), root), str(layout.prefix),
                             pipeline.Mode.PREFIX,
                             libdir=f"${{prefix}}/{under}" if under else str(layout.libdir),
                             rpath=not pipeline.system_library_dir(layout.libdir))
    cmake_files(pipeline, layout, layout.staged(layout.part("cmake"), root))
    write_manual(layout.staged(layout.part("man"), root), dump, lib)
    python_side(layout.staged(layout.private, root), layout.system)


def write_manual(mandir: Path, dump: Path, lib: Path) -> list:
    """The manual (man1, man3, man7, man8 under mandir), with the pages of the
    built dnsshim-dump (its --help, run against lib) and dnsshim-config;
    returns the pages written.  The prefix install and pip's package (into
    the virtualenv's share/man, setup.py) both write it."""
    from dnsshim_build import man
    from shim import config

    tools = {"dnsshim-dump": tool_help(Path(dump), Path(lib)),
             "dnsshim-config": config.parser("dnsshim-config", epilog=config.EPILOG)
             .format_help()}
    return man.write_pages(Path(mandir), tools)


# ----------------------------------------------------------- install, uninstall


def commit(layout: Layout, staging: Path) -> dict:
    """Moves the staged tree into place (destdir), recording each file and
    each folder it creates; returns the manifest (merged with an earlier
    install's, whose folders it keeps)."""
    from shim import manifest as recorded

    old = recorded.read(layout.staged(layout.manifest))
    files, dirs = [], list(old["dirs"])
    for here, subdirs, names in os.walk(staging):
        rel = Path(here).relative_to(staging)
        final = Path("/") / rel
        target = layout.staged(final)
        if not target.is_dir():
            target.mkdir()
            dirs.append(str(final))
        for name in sorted(names) + sorted(d for d in subdirs
                                           if (Path(here) / d).is_symlink()):
            source, dest = Path(here) / name, target / name
            if dest.is_symlink() or dest.is_file():
                dest.unlink()
            if source.is_symlink():
                dest.symlink_to(os.readlink(source))
            else:
                shutil.copy2(source, dest)
            files.append(str(final / name))
    manifest = {"version": None, "files": sorted(set(files) | set(old["files"])),
                "dirs": sorted(set(dirs))}
    return manifest


def package_tree(prefix, mode=None, verbose: bool = False) -> Path:
    """A complete tree of the package form (shim/layout.py) under prefix:
    the libraries with their .pc and CMake files, dns_shim.h, dnsshim-dump and
    dnsshimd, the valgrind suppressions (python build_ffi.py --prefix installs more:
    install()).  In pipeline.Mode.PACKAGE prefix is the installed package's
    shim/ directory, and the .pc files find it relative to themselves; in
    Mode.SOURCE_TREE (an editable install) it is the source tree's.  Returns
    libdnsshim's shared object."""
    mode = mode or pipeline.Mode.SOURCE_TREE
    layout = Layout.of(prefix, form=mode.form)
    lib = layout.libdir
    shared = pipeline.build(lib, mode, verbose=verbose)
    # an editable install's image is stamped, for the tests to take
    worker.build_into(lib, verbose, stamp=mode is pipeline.Mode.SOURCE_TREE)
    layout.includedir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pipeline.HEADER, layout.includedir / pipeline.HEADER.name)
    # dnsshim-dump and dnsshimd, finding the library wherever the tree is moved.
    layout.bindir.mkdir(parents=True, exist_ok=True)
    pipeline.compile_program([pipeline.TOOLS / "dnsshim-dump.c"], layout.bindir / "dnsshim-dump",
                             against=lib, rpath=_run_path(lib, layout.bindir), verbose=verbose)
    compile_service(layout.sbindir, lib, _run_path(lib, layout.sbindir), verbose)
    layout.datadir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pipeline.SUPPRESSIONS, layout.datadir / pipeline.SUPPRESSIONS.name)
    pc_dir = layout.part("pkgconfig")
    pipeline.write_pkgconfig(pc_dir, "${pcfiledir}/" + _relative(layout.prefix, pc_dir)
                             if mode is pipeline.Mode.PACKAGE else str(layout.prefix), mode)
    cmake_files(pipeline, layout, layout.part("cmake"))  # relative paths
    if mode.form.has("examples"):
        copy_examples(layout.part("examples"))
    return shared


def copy_examples(dest: Path) -> None:
    """The example programs (examples/ of the source tree), as a user copies them."""
    dest.mkdir(parents=True, exist_ok=True)
    for source in sorted(pipeline.EXAMPLES.iterdir()):
        if source.is_file():
            shutil.copyfile(source, dest / source.name)


def install(prefix, libdir=None, destdir: str = "", system: bool = False,
            verbose: bool = False) -> Layout:
    """The whole installation (see the module's docstring)."""
    pipeline.check_prerequisites()
    check_runtime_needs(system)
    layout = Layout.of(prefix, libdir, destdir, system)
    with tempfile.TemporaryDirectory(prefix="dnsshim-install-") as tmp:
        stage(pipeline, layout, tmp, verbose)
        manifest = commit(layout, Path(tmp))
    if not system:
        manifest["version"] = pipeline.package_version()
        manifest["files"] = sorted(set(manifest["files"]) | {str(layout.manifest)})
        path = layout.staged(layout.manifest)
        path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return layout


def uninstall(prefix, destdir: str = "") -> list:
    """Removes what the manifest lists, then the folders the installs made,
    once empty; returns what it removed (shim/manifest.py, which the
    prefix's own dnsshim-config --uninstall runs too)."""
    from shim import manifest

    layout = Layout.of(prefix, destdir=destdir)
    try:
        return manifest.remove(layout.manifest, layout.destdir)
    except manifest.ManifestError as e:
        raise InstallError(str(e)) from None


def main(args: argparse.Namespace) -> int:
    """build_ffi.py's --prefix (its command line parsed there)."""
    destdir = args.destdir if args.destdir is not None else os.environ.get("DESTDIR", "")
    if args.uninstall:
        from shim import manifest

        print(manifest.words(uninstall(args.prefix, destdir)))
        return 0
    layout = install(args.prefix, args.libdir, destdir, args.system, args.verbose)
    print(layout.staged(layout.libdir / "libdnsshim.so.1"))
    return 0
