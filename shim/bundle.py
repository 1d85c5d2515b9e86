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

The library is built by build_ffi.py in its bundle mode (csrc/dns_shim.c,
DNS_SHIM_BUNDLE): it finds the folder from its own path and starts the
interpreter with that folder as its home and its only module path, no site,
no bytecode writes.  The modules are exactly those the library's interpreter
imports: the bundler builds the library, runs it (csrc/dnsshim_probe.c) over
a set of messages with every callback, in a staging folder that sees this
Python's whole library, and records ``sys.modules``; every module of
``dns.rdtypes`` is imported too, since which of them a message needs depends
on the message, and so is each ``--extra-module`` (a package with all its
submodules).  Each is written as a sourceless ``.pyc`` (plain files: a zip
was measured slower) of the chosen optimisation level; ``--optimize 1`` or
``2`` also removes dnspython's ``assert`` statements, so the default is 0.
The finished folder is run once more, alone, as a check.

It needs the source tree (build_ffi.py, csrc/) beside the package, a C
compiler, and a CPython with its shared libpython; ``--strip`` needs
binutils' strip.
"""

import argparse
import json
import os
import py_compile
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = sysconfig.get_python_version()
PYDIR = f"python{TAG}"

#: Modules the library may import only when something goes wrong (a report
#: with its traceback): always in the bundle.
ALWAYS = ("traceback", "warnings")

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


def _source_tree():
    if not (ROOT / "build_ffi.py").is_file() or not (ROOT / "csrc" / "dns_shim.c").is_file():
        raise BundleError(f"python -m shim bundle builds the library from its sources, and "
                          f"{ROOT} has no build_ffi.py and csrc/: run it from a source checkout "
                          "(pip install -e .)")
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))  # after the rest: it must not shadow installed modules
    import build_ffi

    return build_ffi


def _cc():
    return os.environ.get("CC") or (sysconfig.get_config_var("CC") or "cc").split()[0]


def probe_messages() -> dict:
    """name -> wire: responses that reach every typed converter, OPT, TSIG,
    an unknown type, another class, and malformed ones (the error paths)."""
    import dns.message
    import dns.rcode
    import dns.rrset
    import dns.tsig
    import dns.tsigkeyring

    from shim.sample import ims_wire

    def response(records, **kw):
        query = dns.message.make_query("example.com.", "A", use_edns=0)
        resp = dns.message.make_response(query)
        for section, rdclass, rdtype, text in records:
            getattr(resp, section).append(
                dns.rrset.from_text("example.com.", 300, rdclass, rdtype, text))
        return resp.to_wire(**kw)

    typed = [("answer", "IN", "A", "192.0.2.1"), ("answer", "IN", "AAAA", "2001:db8::1"),
             ("answer", "IN", "CNAME", "a.example."), ("answer", "IN", "DNAME", "d.example."),
             ("answer", "IN", "PTR", "p.example."), ("answer", "IN", "MX", "10 mx.example."),
             ("answer", "IN", "TXT", '"a" "b"'), ("answer", "IN", "CAA", '0 issue "ca"'),
             ("answer", "IN", "SRV", "1 2 3 s.example."),
             ("answer", "IN", "NAPTR", '1 2 "s" "SIP+D2U" "" _sip.example.'),
             ("answer", "IN", "TYPE65280", r"\# 2 abcd"), ("answer", "CH", "TXT", '"ch"'),
             ("answer", "IN", "DS", "1 13 2 " + "ab" * 32),
             ("authority", "IN", "NS", "ns.example."),
             ("authority", "IN", "SOA", "ns.example. h.example. 1 2 3 4 5")]
    keyring = dns.tsigkeyring.from_text({"key.": "c2VjcmV0"})
    query = dns.message.make_query("example.com.", "A")
    query.use_tsig(keyring, keyname="key.")
    signed = dns.message.make_response(query)
    signed.use_tsig(keyring, keyname="key.")
    import dns.edns

    options = dns.message.make_response(dns.message.make_query("example.com.", "A"))
    options.use_edns(0, options=[dns.edns.ECSOption("192.0.2.0", 24),
                                 dns.edns.CookieOption(bytes(range(1, 9)), bytes(8)),
                                 dns.edns.EDEOption(dns.edns.EDECode.PROHIBITED, "x"),
                                 dns.edns.GenericOption(12, b"\0\0")])
    good = {"ims": ims_wire(), "typed": response(typed), "tsig": signed.to_wire(),
            "options": options.to_wire(),
            "nxdomain": dns.message.make_response(dns.message.make_query("x.", "A")).to_wire()}
    bad = {"short": b"\x00" * 5, "pointer_loop": good["typed"][:12] + b"\xc0\x0c",
           "rdlength": good["typed"][:-1]}
    return good, bad


def _record_modules(staging_py: Path, imports, messages_dir: Path, probe: Path,
                    tmp: Path) -> tuple:
    """Runs the library from the staging folder over every message, imports
    `imports` in its interpreter; returns (sources, extensions): the paths,
    relative to the staging lib/pythonX.Y, of the Python source of every
    module it loaded and of every extension module."""
    import importlib.util

    out = tmp / "modules.txt"
    files = sorted(messages_dir.iterdir())
    result = subprocess.run([str(probe), str(out), PROBE_SCRIPT.format(imports=list(imports)),
                             *map(str, files)], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin",
                                 "LD_LIBRARY_PATH": str(staging_py.parent)})
    if result.returncode != 0:
        raise BundleError(f"the library did not run from the staging folder:\n{result.stderr}")
    sources, extensions = set(), set()
    for line in out.read_text().splitlines():
        kind, path = line.split("\t", 1)
        try:
            rel = Path(path).relative_to(staging_py)
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


def _build_probe(build_ffi, lib_dir: Path, out: Path):
    libdir, pylib = build_ffi._python_lib()
    subprocess.run([_cc(), "-O1", "-Wall", f"-I{build_ffi.CSRC}",
                    f"-I{sysconfig.get_paths()['include']}",
                    str(Path(build_ffi.CSRC) / "dnsshim_probe.c"), "-o", str(out),
                    f"-L{lib_dir}", "-ldnsshim", f"-L{libdir}", f"-l{pylib}"],
                   check=True, capture_output=True, text=True)


def _stage(staging: Path, dynload: Path, search_path):
    """A staging lib/pythonX.Y that sees every module of search_path (by
    symbolic links, the first of each name winning), the shim package of
    this tree first, and this Python's lib-dynload but WITHOUT."""
    staging.mkdir(parents=True)
    (staging / "shim").symlink_to(HERE)
    (staging / "lib-dynload").mkdir()
    for item in sorted(dynload.iterdir()):
        if item.name.split(".")[0] not in WITHOUT:
            (staging / "lib-dynload" / item.name).symlink_to(item)
    for entry in search_path:
        d = Path(entry)
        if not d.is_dir():
            continue
        for item in sorted(d.iterdir()):
            name = item.name
            if name in ("site-packages", "__pycache__") or name.endswith((".dist-info", ".pth")):
                continue
            if not os.path.lexists(staging / name):
                (staging / name).symlink_to(item)


def _module_names_under(package_dir: Path, prefix: str):
    names = [prefix]
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if "__pycache__" in rel.parts:
            continue
        names.append(".".join([prefix, *parts]) if parts else prefix)
    return sorted(set(names))


def drop_runpath(path: Path) -> bool:
    """Removes an ELF file's DT_RUNPATH and DT_RPATH entries in place (as
    ``chrpath -d`` does: the later entries of the dynamic section move up, a
    DT_NULL fills the end), so that nothing in the bundle looks for libraries
    in the build machine's Python: its libpython and extension modules carry
    that installation's lib/ and need nothing from it (libpython is loaded
    by then, their other libraries are the system's).  Returns whether there
    was one."""
    import struct

    data = bytearray(path.read_bytes())
    if data[:4] != b"\x7fELF":
        raise BundleError(f"{path} is not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
        header, entry_format = order + "IIQQQQ", order + "qQ"
    else:
        phoff, = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
        header, entry_format = order + "IIIIII", order + "iI"
    size = struct.calcsize(entry_format)
    for i in range(phnum):
        fields = struct.unpack_from(header, data, phoff + i * phentsize)
        if fields[0] != 2:  # PT_DYNAMIC
            continue
        offset, filesz = (fields[2], fields[5]) if wide else (fields[1], fields[4])
        entries = [struct.unpack_from(entry_format, data, o)
                   for o in range(offset, offset + filesz - size + 1, size)]
        kept = [e for e in entries if e[0] not in (15, 29)]  # DT_RPATH, DT_RUNPATH
        if len(kept) == len(entries):
            return False
        kept += [(0, 0)] * (len(entries) - len(kept))
        for n, (tag, value) in enumerate(kept):
            struct.pack_into(entry_format, data, offset + n * size, tag, value)
        path.write_bytes(bytes(data))
        return True
    return False


def _strip(path: Path):
    subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)


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
    build_ffi = _source_tree()
    libdir, pylib = build_ffi._python_lib()
    soname = sysconfig.get_config_var("INSTSONAME")
    libpython = Path(libdir) / soname
    if not libpython.is_file():
        raise BundleError(f"{libpython} is missing: a bundle needs the shared libpython")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    dynload = Path(sysconfig.get_config_var("DESTSHARED") or stdlib / "lib-dynload")

    lib = dest / "lib"
    py_dir = lib / PYDIR
    with tempfile.TemporaryDirectory(prefix="dnsshim-bundle-") as tmp_name:
        tmp = Path(tmp_name)
        # 1. The library, built for a bundle, and a staging folder around it.
        stage_lib = tmp / "stage" / "lib"
        build_ffi.build(str(stage_lib), verbose=verbose, bundle_optimize=optimize)
        (stage_lib / soname).symlink_to(libpython)
        search = [str(stdlib)] + [p for p in sys.path[1:] if p and Path(p).resolve()
                                  not in (ROOT, dynload.resolve(), stdlib.resolve())]
        _stage(stage_lib / PYDIR, dynload, search)
        probe = tmp / "dnsshim_probe"
        _build_probe(build_ffi, stage_lib, probe)
        messages = tmp / "messages"
        messages.mkdir()
        good, bad = probe_messages()
        for name, wire in {**good, **bad}.items():
            (messages / f"{name}.bin").write_bytes(wire)

        # 2. What the library's interpreter imports.
        rdtypes = _module_names_under(_find_package(stage_lib / PYDIR, "dns") / "rdtypes",
                                      "dns.rdtypes")
        extras = []
        for name in extra_modules:
            top = stage_lib / PYDIR / name.replace(".", "/")
            extras += _module_names_under(top, name) if top.is_dir() else [name]
        staging_py = stage_lib / PYDIR
        sources, extensions = _record_modules(staging_py, [*ALWAYS, *rdtypes, *extras],
                                              messages, probe, tmp)

        # 3. The folder.
        py_dir.mkdir(parents=True)
        (py_dir / "lib-dynload").mkdir()
        for rel in sorted(sources):
            target = py_dir / rel.with_suffix(".pyc")
            target.parent.mkdir(parents=True, exist_ok=True)
            py_compile.compile(str((staging_py / rel).resolve()), cfile=str(target),
                               dfile=str(rel), doraise=True, optimize=optimize,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        for rel in sorted(extensions):
            target = py_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile((staging_py / rel).resolve(), target)
            if strip:
                _strip(target)
            drop_runpath(target)
        modules = {".".join(rel.with_suffix("").parts) for rel in sources | extensions}
        shutil.copyfile(stage_lib / build_ffi.SONAME, lib / build_ffi.SONAME)
        os.symlink(build_ffi.SONAME, lib / build_ffi.LIBNAME)
        shutil.copyfile(libpython, lib / soname)
        os.chmod(lib / soname, 0o755)
        if strip:
            _strip(lib / soname)
            _strip(lib / build_ffi.SONAME)
        drop_runpath(lib / soname)
        _dist_metadata(py_dir, modules)
        include = dest / "include"
        include.mkdir()
        shutil.copyfile(build_ffi.HEADER, include / "dns_shim.h")
        pc = lib / "pkgconfig"
        pc.mkdir()
        (pc / "dnsshim.pc").write_text(_pc_text(build_ffi))
        licenses = _licenses(dest / "share" / "licenses", modules)

        # 4. The folder alone runs every message as the staging folder did.
        expected = subprocess.run([str(probe), str(tmp / "a.txt"), "",
                                   *map(str, sorted(messages.iterdir()))],
                                  capture_output=True, text=True,
                                  env={"PATH": "/usr/bin:/bin",
                                       "LD_LIBRARY_PATH": str(stage_lib)}).stdout
        check = subprocess.run([str(probe), str(tmp / "b.txt"), "",
                                *map(str, sorted(messages.iterdir()))],
                               capture_output=True, text=True,
                               env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(lib)})
        if check.returncode != 0 or check.stdout != expected:
            raise BundleError(f"the bundle does not run as the staging folder did:\n"
                              f"{check.stdout}{check.stderr}")
        for name in good:
            if not any(line.startswith(f"{messages / name}.bin 0 0 ")
                       for line in check.stdout.splitlines()):
                raise BundleError(f"the bundle rejects the good message {name}:\n{check.stdout}")

    elf = [p for p in lib.rglob("*.so*") if p.is_file() and not p.is_symlink()]
    needed, glibc = _needed(elf)
    inside = {p.name for p in elf}
    summary = {
        "dir": str(dest), "python": TAG, "optimize": optimize, "stripped": strip,
        "modules": len(sources), "extension_modules": len(extensions),
        "bytes": _tree_size(dest),
        "bytes_libpython": (lib / soname).stat().st_size,
        "bytes_modules": sum(p.stat().st_size for p in py_dir.rglob("*.pyc")),
        "bytes_extensions": sum((py_dir / rel).stat().st_size for rel in extensions),
        "system_libraries": sorted(needed - inside),
        "glibc": ".".join(map(str, glibc)),
        "licenses": licenses,
    }
    share = dest / "share" / "dnsshim"
    share.mkdir(parents=True)
    (share / "bundle.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _find_package(staging_py: Path, name: str) -> Path:
    path = staging_py / name
    if not path.is_dir():
        raise BundleError(f"no {name} package on this Python's path")
    return path.resolve()


def _pc_text(build_ffi) -> str:
    return ("prefix=${pcfiledir}/../..\n"
            "libdir=${prefix}/lib\n"
            "includedir=${prefix}/include\n\n"
            "Name: dnsshim\n"
            "Description: DNS response parsing for C programs, done by dnspython in an "
            "embedded CPython (self-contained bundle)\n"
            f"Version: {build_ffi.check_version()}\n"
            "Cflags: -I${includedir}\n"
            "Libs: -L${libdir} -Wl,-rpath,${libdir} -ldnsshim\n")


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
