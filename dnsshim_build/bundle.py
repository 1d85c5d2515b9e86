"""python -m shim bundle DIR: a self-contained runtime for devices.

    python -m shim bundle DIR [--strip] [--optimize N] [--extra-module M ...]

writes one relocatable folder that a C program runs against with no Python
installation on the machine::

    DIR/lib/libdnsshim.so.1, libdnsshim.so     the library (run path $ORIGIN)
    DIR/lib/libpython3.X.so.1.0                the interpreter
    DIR/lib/python3.X/                         the compiled modules it imports
    DIR/lib/python3.X/lib-dynload/             the extension modules they need
    DIR/lib/pkgconfig/dnsshim.pc               prefix=${pcfiledir}/../..
    DIR/include/dns_shim.h
    DIR/share/licenses/{CPython,dnspython,cffi,...}/

It is made in four steps, each a function below:

1. :func:`stage_library`: build_ffi.py builds the library in its bundle mode
   (csrc/lib/dns_shim.c, DNS_SHIM_BUNDLE: it finds the folder from its own
   path and starts the interpreter with that folder as its home and its only
   module path, no site, no bytecode writes), into a staging folder that sees
   this Python's whole library, with the probe (csrc/tools/dnsshim_probe.c)
   built against it;
2. :func:`record_imports`: the probe runs the library over messages that
   reach every callback and error path (shim.sample.probe_messages) and
   records every module its interpreter loads; every module of
   ``dns.rdtypes`` is imported too, since which of them a message needs
   depends on the message, and so is each ``--extra-module`` (a package with
   all its submodules);
3. :func:`write_folder`: each module as a sourceless ``.pyc`` (plain files: a
   zip was measured slower) of the chosen optimisation level (``--optimize 1``
   or ``2`` also removes dnspython's ``assert`` statements, so the default is
   0), the extension modules, libpython and the library (their run paths
   removed: dnsshim_build/elf.py), the header, the .pc file, the licenses;
4. :func:`verify`: the finished folder, alone, runs every message as the
   staging folder did.

It needs the source tree (build_ffi.py, csrc/) beside the package, a C
compiler, and a CPython with its shared libpython; ``--strip`` needs
binutils' strip.
"""

import argparse
import dataclasses
import json
import os
import py_compile
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from dnsshim_build import pipeline
from dnsshim_build.elf import drop_runpath

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = sysconfig.get_python_version()
PYDIR = f"python{TAG}"
#: Where each part of the folder goes.
FORM = pipeline.Mode.BUNDLE.form

#: Modules the library may import only when something goes wrong (a report
#: with its traceback), and the floors a guest in a Python program checks
#: (shim/guest.py): always in the bundle.
ALWAYS = ("traceback", "warnings", "shim.requirements")

#: Extension modules the staging folder hides, so that what imports them
#: takes its fallback: hashlib then uses CPython's own hash modules, and the
#: bundle does not need OpenSSL's libcrypto on the device.
WITHOUT = ("_hashlib", "_ssl")

# Run in the library's interpreter after the messages: imports what must be
# importable too, then writes every file the interpreter opened (the probe's
# audit hook: importlib reads each module's source or compiled file through
# io.open_code) and each extension module's file (loaded by dlopen, not
# opened).  The script imports nothing new.
PROBE_SCRIPT = """
import sys
for _name in {imports!r}:
    __import__(_name)
with open(OUT, "w") as _out:
    for _path in OPENED or ():
        if isinstance(_path, str):
            _out.write(f"open\\t{{_path}}\\n")
    for _name, _module in sorted(sys.modules.items()):
        _file = getattr(getattr(_module, "__spec__", None), "origin", None)
        if isinstance(_file, str) and _file.endswith(".so"):
            _out.write(f"extension\\t{{_file}}\\n")
"""


class BundleError(Exception):
    pass


@dataclasses.dataclass
class Staging:
    """The library built for a bundle, in a folder that sees this Python's
    whole library: ``lib`` holds the library and a link to libpython,
    ``modules`` is its lib/pythonX.Y; ``probe`` runs it over ``messages``
    (``good``: the names of those that must parse)."""

    lib: Path
    modules: Path
    probe: Path
    messages: list
    good: list


def run_probe(staging: Staging, lib: Path, out: Path, script: str = "") -> str:
    """Runs the probe with the library of ``lib`` (the staging folder's or a
    bundle's) over the messages, then ``script`` in its interpreter; returns
    what it printed: one line of statuses per message."""
    result = subprocess.run([str(staging.probe), str(out), script, *map(str, staging.messages)],
                            capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(lib)})
    if result.returncode != 0:
        raise BundleError(f"the library of {lib} did not run every message:\n"
                          f"{result.stdout}{result.stderr}")
    return result.stdout


def stage_library(pipeline, python, tmp: Path, optimize: int, verbose: bool) -> Staging:
    """Step 1: the library built for a bundle, libpython beside it, a
    staging lib/pythonX.Y that sees every module of this Python (by symbolic
    links, the first of each name winning: the shim package of this tree
    first, this Python's lib-dynload but WITHOUT), the probe, the messages."""
    lib = tmp / "stage" / "lib"
    pipeline.build(lib, pipeline.Mode.BUNDLE, optimize=optimize, verbose=verbose)
    (lib / python.libpython.name).symlink_to(python.libpython)
    modules = lib / PYDIR
    modules.mkdir(parents=True)
    (modules / "shim").symlink_to(ROOT / "shim")
    (modules / "lib-dynload").mkdir()
    for item in sorted(python.dynload.iterdir()):
        if item.name.split(".")[0] not in WITHOUT:
            (modules / "lib-dynload" / item.name).symlink_to(item)
    search = [python.stdlib] + [Path(p) for p in sys.path[1:] if p and Path(p).resolve()
                                not in (ROOT, python.dynload.resolve(), python.stdlib.resolve())]
    for directory in search:
        if not directory.is_dir():
            continue
        for item in sorted(directory.iterdir()):
            name = item.name
            if name in ("site-packages", "__pycache__") or name.endswith((".dist-info", ".pth")):
                continue
            if not os.path.lexists(modules / name):
                (modules / name).symlink_to(item)
    probe = pipeline.compile_program([pipeline.TOOLS / "dnsshim_probe.c"], tmp / "dnsshim_probe",
                                      against=lib, rpath="", embed_python=True, verbose=verbose)
    from shim.sample import probe_messages

    good, bad = probe_messages()
    (tmp / "messages").mkdir()
    messages = []
    for name, wire in {**good, **bad}.items():
        messages.append(tmp / "messages" / f"{name}.bin")
        messages[-1].write_bytes(wire)
    return Staging(lib, modules, probe, sorted(messages),
                   [tmp / "messages" / f"{name}.bin" for name in good])


def _module_names_under(package_dir: Path, prefix: str):
    names = [prefix]
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if "__pycache__" in rel.parts:
            continue
        names.append(".".join([prefix, *parts]) if parts else prefix)
    return sorted(set(names))


def _find_package(modules: Path, name: str) -> Path:
    path = modules / name
    if not path.is_dir():
        raise BundleError(f"no {name} package on this Python's path")
    return path.resolve()


def record_imports(staging: Staging, extra_modules, tmp: Path) -> tuple:
    """Step 2: (sources, extensions): the paths, relative to the staging
    lib/pythonX.Y, of the Python source of every module the library's
    interpreter loaded over the messages, with every module of dns.rdtypes,
    ALWAYS and the extra modules imported too; and of every extension module."""
    import importlib.util

    imports = [*ALWAYS, *_module_names_under(_find_package(staging.modules, "dns") / "rdtypes",
                                             "dns.rdtypes")]
    for name in extra_modules:
        top = staging.modules / name.replace(".", "/")
        imports += _module_names_under(top, name) if top.is_dir() else [name]
    out = tmp / "modules.txt"
    run_probe(staging, staging.lib, out, PROBE_SCRIPT.format(imports=imports))
    sources, extensions = set(), set()
    for line in out.read_text().splitlines():
        kind, path = line.split("\t", 1)
        try:
            rel = Path(path).relative_to(staging.modules)
        except ValueError:
            continue  # the script's own output, or a file that is no module
        if kind == "extension":
            extensions.add(rel)
        elif rel.suffix == ".py":
            sources.add(rel)
        elif rel.suffix == ".pyc" and "__pycache__" in rel.parts:
            sources.add(Path(importlib.util.source_from_cache(str(rel))))
        else:
            raise BundleError(f"the interpreter read {path}, neither a module's source nor its "
                              "compiled file")
    return sources, extensions


def _strip(path: Path):
    subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)


def _copy_binary(source: Path, target: Path, strip: bool) -> None:
    """An ELF file into the bundle: stripped if asked, its run path removed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    os.chmod(target, 0o755)
    if strip:
        _strip(target)
    drop_runpath(target)


def write_folder(dest: Path, pipeline, python, staging: Staging, sources, extensions,
                 strip: bool, optimize: int) -> list:
    """Step 3: the folder itself.  Returns the licenses written."""
    lib = FORM.path("lib", dest)
    py_dir = FORM.path("modules", dest, tag=TAG)
    (py_dir / "lib-dynload").mkdir(parents=True)
    for rel in sorted(sources):
        target = py_dir / rel.with_suffix(".pyc")
        target.parent.mkdir(parents=True, exist_ok=True)
        # The name a traceback shows: <dnsshim shim/glue.py>, which no
        # traceback looks for as a file (a relative one would be looked up
        # in the current directory, and read there).
        py_compile.compile(str((staging.modules / rel).resolve()), cfile=str(target),
                           dfile=f"<dnsshim {rel}>", doraise=True, optimize=optimize,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    for rel in sorted(extensions):
        _copy_binary((staging.modules / rel).resolve(), py_dir / rel, strip)
    library = pipeline.DNSSHIM
    shutil.copyfile(staging.lib / library.soname, lib / library.soname)
    if strip:
        _strip(lib / library.soname)
    os.symlink(library.soname, lib / library.link_name)
    _copy_binary(python.libpython, lib / python.libpython.name, strip)
    modules = {".".join(rel.with_suffix("").parts) for rel in sources | extensions}
    _dist_metadata(py_dir, modules)
    FORM.path("include", dest).mkdir()
    shutil.copyfile(pipeline.HEADER, FORM.path("include", dest) / pipeline.HEADER.name)
    FORM.path("data", dest).mkdir(parents=True)
    shutil.copyfile(pipeline.SUPPRESSIONS, FORM.path("data", dest) / pipeline.SUPPRESSIONS.name)
    pc_dir = FORM.path("pkgconfig", dest)
    pipeline.write_pkgconfig(pc_dir, "${pcfiledir}/" + os.path.relpath(dest, pc_dir),
                             pipeline.Mode.BUNDLE, (library,))
    return _licenses(FORM.path("licenses", dest), modules)


def verify(staging: Staging, dest: Path, tmp: Path) -> None:
    """Step 4: the finished folder, alone, runs every message as the staging
    folder did, and parses the good ones."""
    expected = run_probe(staging, staging.lib, tmp / "staged.txt")
    got = run_probe(staging, FORM.path("lib", dest), tmp / "bundled.txt")
    if got != expected:
        raise BundleError(f"the bundle does not run as the staging folder did:\n{got}")
    for path in staging.good:
        if not any(line.startswith(f"{path} 0 0 ") for line in got.splitlines()):
            raise BundleError(f"the bundle rejects the good message {path.stem}:\n{got}")


def _licenses(dest: Path, modules):
    """CPython's license, and those of the distributions whose code is in."""
    import importlib.metadata

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    written = []
    for name in ("LICENSE.txt", "LICENSE"):
        if (stdlib / name).is_file():
            (dest / "CPython").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stdlib / name, dest / "CPython" / "LICENSE")
            written.append("CPython")
            break
    top = {m.split(".")[0] for m in modules}
    dists = {}
    for package, names in importlib.metadata.packages_distributions().items():
        if package in top:
            for dist_name in names:
                dists[dist_name] = package
    for dist_name, package in sorted(dists.items()):
        dist = importlib.metadata.distribution(dist_name)
        for f in dist.files or ():
            if "licen" in f.name.lower() or "copying" in f.name.lower():
                target = dest / dist.metadata["Name"] / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f.locate(), target)
                if dist.metadata["Name"] not in written:
                    written.append(dist.metadata["Name"])
    return written


def _dist_metadata(py_dir: Path, modules):
    """Each included distribution's METADATA, so that importlib.metadata (and
    dnspython's optional-feature checks) see what the bundle holds."""
    import importlib.metadata

    top = {m.split(".")[0] for m in modules}
    for package, names in importlib.metadata.packages_distributions().items():
        if package not in top:
            continue
        for dist_name in names:
            dist = importlib.metadata.distribution(dist_name)
            name = dist.metadata["Name"].replace("-", "_")
            info = py_dir / f"{name}-{dist.version}.dist-info"
            text = dist.read_text("METADATA")
            if text:
                info.mkdir(exist_ok=True)
                (info / "METADATA").write_text(text)


def _needed(elf_files):
    """(system libraries the ELF files need, newest GLIBC_ version they use)."""
    libs, glibc = set(), (0, 0)
    for path in elf_files:
        out = subprocess.run(["readelf", "-dW", "--dyn-syms", str(path)], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            if "(NEEDED)" in line:
                libs.add(line.split("[", 1)[1].rstrip("]"))
            if "@GLIBC_" in line:
                version = line.split("@GLIBC_", 1)[1].split()[0].split("(")[0]
                try:
                    glibc = max(glibc, tuple(int(x) for x in version.split(".")[:2]))
                except ValueError:
                    pass
    return libs, glibc


def _tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


@dataclasses.dataclass
class _Python:
    """What of this CPython installation a bundle takes."""

    libpython: Path
    stdlib: Path
    dynload: Path

    @classmethod
    def this(cls, pipeline) -> "_Python":
        libdir, _ = pipeline.python_library()
        libpython = Path(libdir) / sysconfig.get_config_var("INSTSONAME")
        if not libpython.is_file():
            raise BundleError(f"{libpython} is missing: a bundle needs the shared libpython")
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")
        return cls(libpython, stdlib, dynload)


def bundle(dest, strip=False, optimize=0, extra_modules=(), verbose=False) -> dict:
    """Writes the bundle into dest (absent or empty); returns its summary.
    On failure dest is left as it was found."""
    dest = Path(dest).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise BundleError(f"{dest} is not empty")
    if optimize not in (0, 1, 2):
        raise BundleError("--optimize is 0, 1 or 2")
    import importlib.util

    for name in extra_modules:
        if importlib.util.find_spec(name) is None:
            raise BundleError(f"--extra-module {name}: this Python has no such module")
    existed = dest.exists()
    try:
        return _bundle(dest, strip, optimize, extra_modules, verbose)
    except BaseException:
        if existed:
            for item in dest.iterdir():
                shutil.rmtree(item) if item.is_dir() and not item.is_symlink() else item.unlink()
        else:
            shutil.rmtree(dest, ignore_errors=True)
        raise


def _bundle(dest: Path, strip, optimize, extra_modules, verbose) -> dict:
    python = _Python.this(pipeline)
    with tempfile.TemporaryDirectory(prefix="dnsshim-bundle-") as tmp_name:
        tmp = Path(tmp_name)
        staging = stage_library(pipeline, python, tmp, optimize, verbose)
        sources, extensions = record_imports(staging, extra_modules, tmp)
        licenses = write_folder(dest, pipeline, python, staging, sources, extensions, strip,
                                optimize)
        verify(staging, dest, tmp)
    lib, py_dir = FORM.path("lib", dest), FORM.path("modules", dest, tag=TAG)
    elf = [p for p in lib.rglob("*.so*") if p.is_file() and not p.is_symlink()]
    needed, glibc = _needed(elf)
    summary = {
        "dir": str(dest), "python": TAG, "optimize": optimize, "stripped": strip,
        "modules": len(sources), "extension_modules": len(extensions),
        "bytes": _tree_size(dest),
        "bytes_libpython": (lib / python.libpython.name).stat().st_size,
        "bytes_modules": sum(p.stat().st_size for p in py_dir.rglob("*.pyc")),
        "bytes_extensions": sum((py_dir / rel).stat().st_size for rel in extensions),
        "system_libraries": sorted(needed - {p.name for p in elf}),
        "glibc": ".".join(map(str, glibc)),
        "licenses": licenses,
    }
    share = FORM.path("data", dest)
    (share / "bundle.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def main(argv=None, prog="python -m shim bundle") -> int:
    """The bundle command: ``python -m shim bundle`` and ``dnsshim-config bundle``."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the folder to write (absent or empty)")
    parser.add_argument("--strip", action="store_true",
                        help="strip the shared objects (strip --strip-unneeded)")
    parser.add_argument("--optimize", type=int, default=0, choices=(0, 1, 2),
                        help="optimisation level of the .pyc files (1 and 2 drop asserts)")
    parser.add_argument("--extra-module", action="append", default=[], metavar="M",
                        help="also include module M (a package: with its submodules)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        summary = bundle(args.dir, args.strip, args.optimize, args.extra_module, args.verbose)
    except (BundleError, subprocess.CalledProcessError, py_compile.PyCompileError) as e:
        detail = getattr(e, "stderr", None) or ""
        print(f"{prog}: {e}\n{detail}".rstrip(), file=sys.stderr)
        return 1
    mib = 1024 * 1024
    print(f"{summary['dir']}: {summary['bytes'] / mib:.1f} MiB "
          f"(libpython {summary['bytes_libpython'] / mib:.1f}, {summary['modules']} modules "
          f"{summary['bytes_modules'] / mib:.1f}, {summary['extension_modules']} extension "
          f"modules {summary['bytes_extensions'] / mib:.1f}); needs "
          f"{', '.join(summary['system_libraries'])} (glibc {summary['glibc']} or newer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
