"""python -m shim firmware DIR: the whole parser as one object file that a
firmware's C build links in, with no Python on the device.

    python -m shim firmware DIR [--types A,AAAA,CNAME,SRV,NAPTR,...]
                                [--target aarch64-linux-gnu] [--optimize N]
                                [--python 3.11|3.13] [--parallelism N]

writes::

    DIR/lib/libdnsshim_fw.o          one relocatable object (ld -r): libdnsshim,
                                     CPython (Debian's libpython3.X-pic.a, the
                                     built-in modules a parse needs), cffi's
                                     backend, libffi, and every Python module a
                                     parse can need, frozen in
    DIR/lib/libdnsshim_fw.a          an archive holding it
    DIR/lib/pkgconfig/dnsshim-fw.pc  the exact link line
    DIR/include/dns_shim.h
    DIR/share/dnsshim/firmware.json  the manifest: sizes by part, the CPython,
                                     dnspython and cffi versions, what is frozen
    DIR/share/dnsshim/libdnsshim.supp
    DIR/share/licenses/{CPython,dnspython,cffi,libffi}/

A program links it alone: ``cc -I DIR/include prog.c DIR/lib/libdnsshim_fw.o
-lm -lpthread -ldl -lutil`` (the header's folder, then the C library's parts;
glibc 2.34 and newer has them all in libc but libm).  The object defines only the public API as global symbols:
CPython's, cffi's, libffi's and the library's own names are local, and it
defines no symbol of the C library, so it links beside anything, a program
with its own CPython or a second copy of the object (its API renamed)
included, and the program's own malloc, memcpy... are the ones it calls.

Its interpreter starts isolated with every path preset to a place that is
nowhere: it reads no file (the C library's own reads aside: the time zone,
and /etc/protocols when a WKS record arrives), loads no shared object, and
writes nothing.  Its memory comes from the host's allocator when one is set
(dns_shim_set_allocator), and cffi's backend takes the memory of the
callbacks' structs from there too.

The build, in named steps:

1. :class:`Toolchain`: the target's compiler and binutils, Debian's static
   CPython for it (libpython3.X-pic.a, its config.c) and libffi_pic.a, and
   Debian's /usr/bin/python3.X, whose marshal the frozen bytecode must be.
   3.X is --python, by default the version of Debian's python3: 3.11 on
   Debian 12, 3.13 on Debian 13 (VERSIONS: what differs between them).  A
   missing piece, a version without data, or a static library compiled
   without -fPIC stops the build with one line naming what it found and
   the Debian package it needs.
2. :func:`discover`: a discovery build of the same runtime (native, every
   built-in module, modules read from Debian's standard library and a staging
   folder of dnspython and the shim package, no shared modules, so that what
   would import one takes its fallback as on the device) runs the bundler's
   probe messages, imports every RDATA module of the chosen types, and says
   which modules its interpreter loaded: the frozen ones and the built-in ones.
3. :func:`freeze`: those modules' bytecode as a C table
   (dnsshim_build/firmware_freeze.py, run by Debian's python3.X), with the
   stand-ins of the version's modules whose code the -pic.a lacks
   (csrc/firmware/sha2.py for 3.13's _sha2).
4. :func:`inittab`: the object's own table of built-in modules (so that
   Debian's config.o, naming every module it has, stays out): those the
   discovery saw, the interpreter's core, ``_contextvars`` (re-done over
   libpython's own types: csrc/firmware/contextvars.c) and ``_cffi_backend``.
5. :func:`link_object`: every object (the library's module, cffi's backend
   compiled from cffi's source distribution, the tables, zlib's crc32 for
   binascii) and what they need of libpython3.X-pic.a and libffi_pic.a, as
   one object (``ld -r``); then every global but the API made local, and
   SystemTap's probe sections dropped (a COMDAT group, which a second copy of
   the object in one link would discard with what its notes point to).
   With --parallelism N, :func:`link_parallel` then links N copies of that
   object, their API renamed, beside the same units, but for csrc/lib/pool.c
   compiled to take its interpreters from the copies (:func:`pool_table`)
   instead of loading the worker image: dns_shim_set_parallelism up to N,
   with no file loaded.
6. :func:`write_folder` and :func:`verify`: the folder, and, natively, a
   program linked with the object alone parsing a response as the ordinary
   library does, with one interpreter and with N.

The frozen bytecode is the same for every CPU: a cross build takes the
module list of a native discovery.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dnsshim_build import pipeline

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The CPythons the object can embed: Debian's, whose static library it
#: links, by version: the release that ships it, the built-in modules that
#: version's interpreter imports on an error path beside CORE_BUILTINS,
#: those its config.c names whose code the -pic.a lacks (left out of the
#: discovery build, which would not link with them), and the modules of
#: this project's that stand in for them (Python, frozen in as the others).
VERSIONS = {
    "3.11": {"debian": "12", "core": frozenset(), "absent": frozenset(), "stand-ins": {}},
    "3.13": {"debian": "13",
             # traceback's "Did you mean" (a NameError's or AttributeError's report)
             "core": frozenset({"_suggestions"}),
             # Debian 13's libpython3.13-pic.a has no HACL* SHA-2 objects, and
             # hashlib (dns.tsig at import) needs SHA-2's constructors
             "absent": frozenset({"_sha2"}),
             "stand-ins": {"_sha2": "sha2.py"}},
}

#: The entry points beside the API that the pool's front (csrc/lib/pool.c)
#: calls in an interpreter it starts: the instance's memory counted in the
#: pool's account, and its fork handler, which the front runs.  Visible to the object's link, which keeps it local; made
#: global again where a front calls it (the worker image, worker.py; the
#: copies of --parallelism, :func:`link_parallel`).
POOL_PRIVATE = ("dns_shim__pool_account", "dns_shim__instance_fork")
#: The most interpreters --parallelism links: csrc/dns_shim.h's
#: DNS_SHIM_PARALLELISM_MAX, the most the library's front runs.
PARALLELISM_MAX = pipeline.header_defines(pipeline.HEADER, "DNS_SHIM_PARALLELISM_MAX")[
    "DNS_SHIM_PARALLELISM_MAX"]

#: Non-position-independent relocations by CPU, in a static library that
#: was compiled without -fPIC (libpython3.X.a beside Debian's -pic.a); for
#: other CPUs a static library is not looked into.
NON_PIC_RELOCATIONS = {"x86_64": ("R_X86_64_32", "R_X86_64_32S")}


def supported() -> str:
    """The CPythons the build has data for, as a sentence's words."""
    return " and ".join(f"{v} (Debian {d['debian']})" for v, d in VERSIONS.items())


def default_version() -> str:
    """The CPython to embed when none is named: Debian's python3's (the
    release's own), else the newest one whose static library is installed."""
    target = Path("/usr/bin/python3")
    if target.exists():
        m = re.fullmatch(r"python(\d+\.\d+)", os.path.basename(os.path.realpath(target)))
        if m:
            return m.group(1)
    for version in sorted(VERSIONS, key=lambda v: tuple(map(int, v.split("."))), reverse=True):
        if Toolchain.debian(native_triplet(), version).libpython.is_file():
            return version
    return max(VERSIONS, key=lambda v: tuple(map(int, v.split("."))))


#: Built-in modules the interpreter itself imports or may import on an error
#: path: kept whatever the discovery saw.
CORE_BUILTINS = frozenset({
    "builtins", "sys", "marshal", "_imp", "_warnings", "gc", "_string", "posix", "_io",
    "_thread", "_weakref", "_abc", "_codecs", "_collections", "_functools", "_operator",
    "_signal", "_sre", "_stat", "errno", "itertools", "time", "atexit", "_tracemalloc",
    "faulthandler"})

#: Modules the library imports only when something goes wrong (a report with
#: its traceback): always frozen.
ALWAYS = ("traceback", "warnings")

#: The C library's parts a program links beside the object.
LIBS = "-lm -lpthread -ldl -lutil"

#: What ``--help`` says the command does: the docstring's first sentence, whole.
DESCRIPTION = ("Write the whole parser as one object file that a firmware's C build links in, "
               "with no Python on the device: DIR/lib/libdnsshim_fw.o, DIR/include/dns_shim.h, "
               "and the link line (DIR/lib/pkgconfig/dnsshim-fw.pc).")


def link_line(dest: Path) -> str:
    """The complete line that compiles and links prog.c with the object: the
    header's folder, the object, the C library's parts."""
    return f"cc -I {pipeline.Mode.FIRMWARE.form.path('include', dest)} prog.c {object_path(dest)} {LIBS}"


def object_path(dest: Path) -> Path:
    """The object's path in a firmware folder (shim/layout.py's form)."""
    return pipeline.Mode.FIRMWARE.form.path("lib", dest) / "libdnsshim_fw.o"


#: SystemTap's probe notes in Debian's libpython.
STAPSDT = (".note.stapsdt", ".rela.note.stapsdt", ".stapsdt.base")

# Run in the discovery build's interpreter after the messages: imports what
# must be there too, exercises a report's traceback and a warning's text,
# and writes every loaded module with where it came from.
DISCOVER_SCRIPT = """
import sys
for _name in {imports!r}:
    __import__(_name)
import traceback, warnings
try:
    raise ValueError("x")
except ValueError:
    traceback.format_exc()
warnings.formatwarning("m", UserWarning, "f", 1)
with open(OUT, "w") as _out:
    for _name, _module in sorted(sys.modules.items()):
        _spec = getattr(_module, "__spec__", None)
        _origin = getattr(_spec, "origin", None)
        _package = getattr(_spec, "submodule_search_locations", None) is not None
        _out.write(f"{{_name}}\\t{{_origin}}\\t{{int(_package)}}\\n")
"""


class FirmwareError(Exception):
    pass


def _run(cmd, verbose=False, **kwargs):
    cmd = [str(c) for c in cmd]
    if verbose:
        print(" ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, check=True, **kwargs)


# ---------------------------------------------------------------- 1. toolchain


@dataclasses.dataclass
class Toolchain:
    """A compiler and binutils for the target, and Debian's static CPython
    and libffi built for it."""

    triplet: str
    cc: str
    ld: str
    objcopy: str
    ar: str
    nm: str
    strip: str
    libpython: Path
    config_c: Path
    libffi: Path
    includes: list
    #: the CPython's version ("3.11") and Debian's interpreter of it, whose
    #: marshal the frozen bytecode must be
    version: str
    python: str

    @property
    def native(self) -> bool:
        return self.triplet == native_triplet()

    @classmethod
    def debian(cls, triplet: str, version: str) -> "Toolchain":
        prefix = "" if triplet == native_triplet() else f"{triplet}-"
        config = Path(f"/usr/lib/python{version}/config-{version}-{triplet}")
        return cls(triplet=triplet, cc=prefix + "gcc", ld=prefix + "ld",
                   objcopy=prefix + "objcopy", ar=prefix + "ar", nm=prefix + "nm",
                   strip=prefix + "strip", libpython=config / f"libpython{version}-pic.a",
                   config_c=config / "config.c",
                   libffi=Path(f"/usr/lib/{triplet}/libffi_pic.a"),
                   includes=[f"/usr/include/python{version}", f"/usr/include/{triplet}"],
                   version=version, python=f"/usr/bin/python{version}")

    @property
    def core_builtins(self) -> frozenset:
        return CORE_BUILTINS | VERSIONS[self.version]["core"]

    def check(self) -> None:
        """One line naming what is missing or unusable and the Debian
        package that brings what the build needs."""
        v = self.version
        if v not in VERSIONS:
            raise FirmwareError(f"CPython {v}: the firmware build knows Debian's CPython "
                                f"{supported()} only: pass --python with one of them")
        arch = "" if self.native else ":" + debian_arch(self.triplet)
        gcc = "gcc" if self.native else f"gcc-{self.triplet}"
        for tool in (self.cc, self.ld, self.objcopy, self.ar, self.nm, self.strip):
            if shutil.which(tool) is None:
                raise FirmwareError(f"{tool} is not installed: apt-get install {gcc}")
        debian = Toolchain.debian(self.triplet, v)
        for path, package, needed in (
                (self.libpython, f"libpython{v}-dev{arch}", debian.libpython.name),
                (self.libffi, f"libffi-dev{arch}", debian.libffi.name)):
            if not path.is_file():
                raise FirmwareError(f"{path}, the static library the object links, is not "
                                    f"installed: apt-get install {package}")
            relocation = self.non_pic_relocation(path)
            if relocation:
                raise FirmwareError(f"{path} was compiled without -fPIC ({relocation}): the "
                                    f"object needs the position-independent {needed}: "
                                    f"apt-get install {package}")
        if not Path(self.python).is_file():
            raise FirmwareError(f"{self.python}, Debian's CPython {v}, whose bytecode the "
                                f"object freezes, is not installed: apt-get install python{v}")

    def non_pic_relocation(self, archive: Path) -> str:
        """"member: relocation" of the first relocation in archive that only
        code compiled without -fPIC has, or "" (NON_PIC_RELOCATIONS)."""
        kinds = NON_PIC_RELOCATIONS.get(self.triplet.split("-")[0])
        readelf = self.nm[:-2] + "readelf"
        if not kinds or shutil.which(readelf) is None:
            return ""
        pattern = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+(" + "|".join(kinds) + r")\s")
        member = ""
        with subprocess.Popen([readelf, "-rW", str(archive)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, errors="replace") as p:
            for line in p.stdout:
                m = re.match(r"^File: .*\((.*)\)$", line.strip())
                if m:
                    member = m.group(1)
                m = pattern.match(line)
                if m:
                    p.kill()
                    return f"{member}: {m.group(1)}"
        return ""


def native_triplet() -> str:
    return f"{os.uname().machine}-linux-gnu"


def debian_arch(triplet: str) -> str:
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(triplet.split("-")[0], triplet)


# ------------------------------------------------------------ the sources


def backend_source(cffi_src: Path) -> Path:
    """_cffi_backend.c in cffi's unpacked source: src/c/ since cffi 1.16,
    c/ before (Debian 12's python3-cffi is 1.15.1)."""
    for where in (cffi_src / "src" / "c", cffi_src / "c"):
        if (where / "_cffi_backend.c").is_file():
            return where / "_cffi_backend.c"
    return cffi_src / "src" / "c" / "_cffi_backend.c"


def cffi_source(cache: Path) -> Path:
    """cffi's source distribution of the running cffi's version (its
    _cffi_backend.c becomes a built-in module of the object), downloaded
    once into cache; returns the unpacked folder."""
    import cffi
    import tarfile

    folder = cache / f"cffi-{cffi.__version__}"
    if backend_source(folder).is_file():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    # A distribution's build puts the (checked) archive there itself: no network.
    sdists = sorted(cache.glob(f"cffi-{cffi.__version__}.tar.gz"))
    if not sdists:
        result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                                 "--no-binary", ":all:", "-d", str(cache),
                                 f"cffi=={cffi.__version__}"], capture_output=True, text=True)
        sdists = sorted(cache.glob(f"cffi-{cffi.__version__}.tar.gz"))
    if not sdists:
        raise FirmwareError(f"cffi {cffi.__version__}'s source distribution could not be "
                            f"downloaded (pip download cffi=={cffi.__version__} --no-binary "
                            f":all:): {(result.stderr.strip().splitlines() or [''])[-1]}")
    with tarfile.open(sdists[0]) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(cache, filter="data")
        else:  # CPython before 3.11.4 (Debian 12's 3.11.2): the same refusals by hand
            root = cache.resolve()
            for member in tar.getmembers():
                target = (root / member.name).resolve()
                if not (member.isfile() or member.isdir()) or not target.is_relative_to(root):
                    raise FirmwareError(f"{sdists[0]}: {member.name} is not a plain file or "
                                        f"folder inside the archive's folder; delete it and "
                                        f"run again")
            tar.extractall(cache)
    return folder


def dnspython_site() -> Path:
    """The folder holding the dnspython the build runs with."""
    import dns

    return Path(dns.__file__).resolve().parent.parent


def rdata_modules(types) -> list:
    """The dns.rdtypes modules of these types (mnemonics), or of every type."""
    from shim import rdtable

    chosen = []
    for package, names in (("IN", rdtable.IN_MODULES), ("CH", rdtable.CH_MODULES),
                           ("ANY", rdtable.ANY_MODULES)):
        chosen += [f"dns.rdtypes.{package}.{n}" for n in names if types is None or n in types]
    return chosen


def parse_types(text: str) -> list:
    """--types's mnemonics, checked against the parser table's modules."""
    from shim import rdtable

    known = set(rdtable.IN_MODULES) | set(rdtable.CH_MODULES) | set(rdtable.ANY_MODULES)
    types = [t.strip().upper().replace("-", "_") for t in text.split(",") if t.strip()]
    unknown = [t for t in types if t not in known]
    if unknown:
        raise FirmwareError(f"--types: dnspython has no RDATA module for {', '.join(unknown)} "
                            f"(the modules: {', '.join(sorted(known))})")
    return sorted(set(types))


# ------------------------------------------------------------------- compiling


def library_flags(tc: Toolchain) -> list:
    return ["-fPIC", "-O2", "-g", "-Wall", "-fvisibility=hidden", "-pthread",
            "-fno-semantic-interposition", f"-I{pipeline.CSRC}", *[f"-I{d}" for d in tc.includes]]


def _compile(tc: Toolchain, c_file: Path, obj: Path, flags: list, verbose: bool) -> Path:
    _run([tc.cc, "-c", *flags, c_file, "-o", obj], verbose)
    return obj


def unit_flags(pipeline, tc: Toolchain, types, optimize: int, search_path: str = "") -> list:
    """How the library's units are compiled for the object."""
    defines = pipeline.runtime_defines(pipeline.Mode.FIRMWARE, optimize=optimize,
                                        types=types or (), tag=tc.version)
    if search_path:
        defines.append(f'-DDNS_SHIM_FIRMWARE_PATH="{search_path}"')
    # The worker image's entry point beside the API (dns_shim_internal.h):
    # visible to the link, which keeps it local in the object (link_object).
    return library_flags(tc) + defines + ["-DDNS_SHIM__WORKER_ENTRY_VISIBLE=1"]


def runtime_objects(pipeline, tc: Toolchain, cffi_src: Path, work: Path, types, optimize: int,
                    verbose: bool, search_path: str = "", ares: bool = False) -> list:
    """The objects every firmware build links: the library's cffi module in
    firmware mode, _contextvars, zlib's crc32, and cffi's backend (its
    malloc and free turned into CPython's raw domain: csrc/firmware/
    cffi_alloc.h, so that the host's allocator and the limit see them).
    With ares, libdnsshim_ares's module too, its bridge and the unit that
    checks what its Python side hands over (ARES_UNITS), for the worker
    image: libdnsshim_ares's parses in the pool run there."""
    firmware = pipeline.CSRC / "firmware"
    flags = unit_flags(pipeline, tc, types, optimize, search_path)
    module = pipeline.emit(pipeline.DNSSHIM, work, verbose)
    backend_c = backend_source(cffi_src)
    backend_flags = ["-fPIC", "-O2", "-g", "-fvisibility=hidden", "-pthread", "-DFFI_BUILDING=1",
                     "-DUSE__THREAD", "-DHAVE_SYNC_SYNCHRONIZE", "-w",
                     "-include", str(firmware / "cffi_alloc.h"), *[f"-I{d}" for d in tc.includes]]
    units = [_compile(tc, unit, work / f"unit-{unit.stem}.o", [*flags, f"-I{work}"], verbose)
             for unit in pipeline.DNSSHIM.units]
    if ares:
        ares_module = pipeline.emit(pipeline.DNSSHIM_ARES, work, verbose)
        units += [_compile(tc, ares_module, work / "ares-module.o", [*flags, f"-I{work}"],
                           verbose),
                  *[_compile(tc, unit, work / f"ares-{unit.stem}.o", flags, verbose)
                    for unit in ARES_UNITS]]
    return [_compile(tc, module, work / "module.o", [*flags, f"-I{work}"], verbose), *units,
            _compile(tc, firmware / "contextvars.c", work / "contextvars.o", flags, verbose),
            _compile(tc, firmware / "crc32.c", work / "crc32.o", flags, verbose),
            _compile(tc, backend_c, work / "_cffi_backend.o", backend_flags, verbose)]


#: libdnsshim_ares's units an interpreter of the pool needs beside its
#: module (runtime_objects with ares): what its bridge calls.  The rest are
#: c-ares's API and the copies into c-ares's structures, which run in the
#: front.
ARES_UNITS = (pipeline.CSRC / "ares" / "check.c",)
#: The Python side of libdnsshim_ares, which its module's init code imports.
ARES_IMPORTS = ("shim.ares_embedded",)


# --------------------------------------------------------------------- 4. inittab


def builtin_table(config_c: Path) -> list:
    """[(name, init function or None)] of Debian's config.c, in its order."""
    text = config_c.read_text()
    body = text[text.index("_PyImport_Inittab[]"):]
    return [(n, None if f == "NULL" else f) for n, f in re.findall(r'\{"(\w+)",\s*(\w+)\}', body)]


def inittab(config_c: Path, keep, out_c: Path) -> list:
    """The object's own _PyImport_Inittab: the built-in modules of keep,
    _contextvars and _cffi_backend.  Returns their names."""
    rows = [(n, f) for n, f in builtin_table(config_c) if n in keep]
    rows += [("_contextvars", "dns_shim__firmware_contextvars"),
             ("_cffi_backend", "PyInit__cffi_backend")]
    lines = ["/* The firmware object's built-in modules: generated by dnsshim_build/firmware.py. */",
             "#include <Python.h>"]
    lines += [f"extern PyObject *{f}(void);" for _, f in rows if f]
    lines += ["struct _inittab _PyImport_Inittab[] = {",
              *[f'    {{"{n}", {f or "NULL"}}},' for n, f in rows], "    {0, 0}", "};", ""]
    out_c.write_text("\n".join(lines))
    return [n for n, _ in rows]


# ------------------------------------------------------------------- 2. discover


def discover(pipeline, cffi_src: Path, types, work: Path, verbose: bool,
             version: str, ares: bool = False) -> dict:
    """Which modules a parse needs: {"frozen": [[name, source, is_package]],
    "builtin": [names]} (see the module's docstring, step 2)."""
    from shim.sample import probe_messages

    tc = Toolchain.debian(native_triplet(), version)
    tc.check()
    work.mkdir(parents=True)
    stage = work / "stage"
    stage.mkdir()
    site = dnspython_site()
    (stage / "dns").symlink_to(site / "dns")
    (stage / "shim").symlink_to(ROOT / "shim")
    for name, source in VERSIONS[version]["stand-ins"].items():
        (stage / f"{name}.py").symlink_to(pipeline.CSRC / "firmware" / source)
    stdlib = Path(f"/usr/lib/python{version}")
    objs = runtime_objects(pipeline, tc, cffi_src, work, types, 0, verbose,
                           search_path=f"{stdlib}:{stage}")
    every = {n for n, _ in builtin_table(tc.config_c)} - VERSIONS[version]["absent"]
    inittab(tc.config_c, every, work / "inittab.c")
    (work / "frozen.c").write_text("#include <Python.h>\nconst struct _frozen "
                                   "dns_shim__firmware_frozen[] = {{0}};\n")
    flags = library_flags(tc)
    objs += [_compile(tc, work / "inittab.c", work / "inittab.o", flags, verbose),
             _compile(tc, work / "frozen.c", work / "frozen.o", flags, verbose)]
    probe = pipeline.compile_program(
        [pipeline.TOOLS / "dnsshim_probe.c"], work / "dnsshim_probe", libraries=(),
        cflags=[f"-I{d}" for d in tc.includes],
        flags=[*objs, tc.libpython, tc.libffi, "-lexpat", "-lz", "-lm", "-lutil"],
        verbose=verbose)
    good, bad = probe_messages()
    messages = []
    for name, wire in {**good, **bad}.items():
        messages.append(work / f"{name}.bin")
        messages[-1].write_bytes(wire)
    out = work / "modules.txt"
    script = DISCOVER_SCRIPT.format(imports=[*ALWAYS, *rdata_modules(types),
                                             *(ARES_IMPORTS if ares else ())])
    result = subprocess.run([str(probe), str(out), script, *map(str, messages)],
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    if result.returncode != 0:
        raise FirmwareError(f"the discovery run failed:\n{result.stdout}{result.stderr}")
    frozen, builtin = [], []
    for line in out.read_text().splitlines():
        name, origin, package = line.split("\t")
        if origin == "built-in":
            builtin.append(name)
        elif origin.endswith(".py"):
            frozen.append([name, origin, package == "1"])
        elif origin.endswith(".so"):
            raise FirmwareError(f"the parser imported the shared module {name} ({origin}): a "
                                "firmware cannot load it")
    return {"frozen": frozen, "builtin": builtin}


# --------------------------------------------------------------------- 3. freeze


def freeze(modules, out_c: Path, optimize: int, verbose: bool, python: str) -> dict:
    """The frozen-module table, marshalled by Debian's CPython (python, the
    interpreter of the static library linked); returns {name: bytes}."""
    spec = out_c.with_suffix(".json")
    spec.write_text(json.dumps({"optimize": optimize, "modules": modules}))
    result = _run([python, "-I", "-S", HERE / "firmware_freeze.py", spec, out_c],
                  verbose, capture_output=True, text=True)
    return {name: int(size) for name, size in
            (line.split() for line in result.stdout.splitlines() if line.strip())}


# ------------------------------------------------------------------------ 5. link


def link_object(tc: Toolchain, objs: list, out: Path, api: list, work: Path,
                verbose: bool) -> Path:
    """One localised object (see the module's docstring, step 5)."""
    combined = work / "combined.o"
    _run([tc.ld, "-r", "-d", "-o", combined, *objs, "--start-group", tc.libpython, tc.libffi,
          "--end-group"], verbose)
    keep = work / "api.txt"
    keep.write_text("\n".join(api) + "\n")
    _run([tc.objcopy, f"--keep-global-symbols={keep}",
          *[f"--remove-section={s}" for s in STAPSDT], combined, out], verbose)
    return out


#: The pool's table of the copies' entry points (csrc/lib/dns_shim_internal.h's
#: dns_shim__pool_entries, member for entry point, in its order).
POOL_ENTRIES = (("process", "process_dns_response"), ("process_with", "dns_shim_process"),
                ("process_reply", "dns_shim_process_reply"), ("init", "dns_shim_init"),
                ("last_error", "dns_shim_last_error"),
                ("set_memory_limit", "dns_shim_set_memory_limit"),
                ("set_parallelism", "dns_shim_set_parallelism"),
                ("set_log_handler", "dns_shim_set_log_handler"),
                ("set_allocator", "dns_shim_set_allocator"),
                ("account", "dns_shim__pool_account"), ("fork", "dns_shim__instance_fork"))


def copy_name(index: int, name: str) -> str:
    """Copy number index's name for an entry point of the object."""
    return f"dns_shim__fw{index}_{name}"


def pool_table(n: int, out_c: Path) -> Path:
    """The C unit of the front's table: copy i's entry points as instance i."""
    names = sorted({name for _, name in POOL_ENTRIES})
    lines = ["/* Written by dnsshim_build/firmware.py (--parallelism): the entry points",
             "** of the copies linked into this object, one interpreter each. */",
             '#include "dns_shim.h"', '#include "dns_shim_generated.h"',
             '#include "lib/dns_shim_internal.h"', ""]
    # Each copy's entry point has the type of the one it is a copy of, which
    # the headers declare.
    for i in range(1, n + 1):
        lines += [f"DNS_SHIM__HIDDEN extern __typeof__({name}) {copy_name(i, name)};"
                  for name in names]
    lines += ["", "const dns_shim__pool_entries dns_shim__pool_linked[DNS_SHIM__POOL_LINKED] = {"]
    for i in range(1, n + 1):
        members = ", ".join(f".{member} = {copy_name(i, name)}" for member, name in POOL_ENTRIES)
        lines.append(f"    {{{members}}},")
    lines.append("};")
    out_c.write_text("\n".join(lines) + "\n")
    return out_c


def link_parallel(pipeline, tc: Toolchain, objs: list, single: Path, n: int, out: Path,
                  api: list, work: Path, flags: list, generated: Path, verbose: bool) -> Path:
    """The object of --parallelism n: n copies of the single object
    (``single``, link_object's), their API and POOL_PRIVATE renamed
    (copy_name) and every other symbol already local, linked beside a front
    that is the single object's own units but for csrc/lib/pool.c, which is
    compiled with DNS_SHIM__POOL_LINKED=n and takes its interpreters from
    the copies (pool_table) instead of loading the worker image.  generated:
    the folder of the build's generated headers (runtime_objects's work)."""
    work.mkdir()
    names = sorted({*api, *POOL_PRIVATE})
    renames = work / "renames.txt"
    copies = []
    for i in range(1, n + 1):
        renames.write_text("".join(f"{name} {copy_name(i, name)}\n" for name in names))
        copy = work / f"copy{i}.o"
        _run([tc.objcopy, *[f"--globalize-symbol={name}" for name in POOL_PRIVATE], single,
              copy], verbose)
        _run([tc.objcopy, f"--redefine-syms={renames}", copy], verbose)
        copies.append(copy)
    pool = pipeline.CSRC / "lib" / "pool.c"
    linked = [f"-DDNS_SHIM__POOL_LINKED={n}", f"-I{generated}"]
    front = [o for o in objs if o.name != f"unit-{pool.stem}.o"]
    if len(front) != len(objs) - 1:
        raise FirmwareError(f"the build has no unit-{pool.stem}.o to replace")
    front += [_compile(tc, pool, work / "pool-linked.o", [*flags, *linked], verbose),
              _compile(tc, pool_table(n, work / "pool-table.c"), work / "pool-table.o",
                       [*flags, *linked], verbose)]
    return link_object(tc, front + copies, out, api, work, verbose)


def object_symbols(tc: Toolchain, obj: Path) -> tuple:
    """(the globals it defines, the symbols it leaves undefined)."""
    return nm_symbols(tc.nm, obj, "-g")


def nm_symbols(nm: str, path: Path, *options: str, skip_kinds: tuple = ()) -> tuple:
    """(the symbols ``nm OPTIONS path`` lists as defined, but those of
    ``skip_kinds``; those it lists as undefined or weak undefined)."""
    out = subprocess.run([nm, *options, str(path)], capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w"):
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in skip_kinds:
            defined.add(parts[2])
    return defined, undefined


# ----------------------------------------------------------------- 6. the folder


def _licenses(dest: Path, cffi_src: Path, version: str) -> list:
    import importlib.metadata

    written = []
    for name, source in (("CPython", Path(f"/usr/lib/python{version}/LICENSE.txt")),
                         ("cffi", cffi_src / "LICENSE"),
                         ("libffi", Path("/usr/share/doc/libffi-dev/copyright"))):
        if source.is_file():
            (dest / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest / name / source.name)
            written.append(name)
    dist = importlib.metadata.distribution("dnspython")
    for f in dist.files or ():
        if "licen" in f.name.lower():
            (dest / "dnspython").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.locate(), dest / "dnspython" / f.name)
            if "dnspython" not in written:
                written.append("dnspython")
    return written


def write_folder(pipeline, dest: Path, tc: Toolchain, obj: Path, manifest: dict,
                 cffi_src: Path) -> None:
    form = pipeline.Mode.FIRMWARE.form
    lib = form.path("lib", dest)
    _run([tc.ar, "rcs", lib / "libdnsshim_fw.a", obj])
    form.path("include", dest).mkdir()
    shutil.copyfile(pipeline.HEADER, form.path("include", dest) / pipeline.HEADER.name)
    pc = form.path("pkgconfig", dest)
    pc.mkdir()
    template = (pipeline.CSRC / "firmware" / "dnsshim-fw.pc.in").read_text()
    values = {"VERSION": pipeline.package_version(), "LIBS": LIBS, "TARGET": tc.triplet}
    (pc / "dnsshim-fw.pc").write_text(re.sub(r"@(\w+)@", lambda m: values[m.group(1)], template))
    share = form.path("data", dest)
    share.mkdir(parents=True)
    shutil.copyfile(pipeline.SUPPRESSIONS, share / pipeline.SUPPRESSIONS.name)
    manifest["licenses"] = _licenses(form.path("licenses", dest), cffi_src, tc.version)
    (share / "firmware.json").write_text(json.dumps(manifest, indent=1) + "\n")


VERIFY_C = r"""
#include <dns_shim.h>
#include <stdio.h>
int main(void)
{
    static const unsigned char m[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 1, 'a', 0,
                                      0, 1, 0, 1, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4,
                                      192, 0, 2, 1};
    int rc = process_dns_response((unsigned char *)m, (int)sizeof m);
    printf("%d %s\n", rc, dns_shim_last_error());
    return rc != 0;
}
"""


# The same program without the library: the two functions it calls, doing
# nothing.
STUB_C = r"""
#include <dns_shim.h>
int32_t process_dns_response(uint8_t *buf, int32_t len) { (void)buf; return len; }
const char *dns_shim_last_error(void) { return ""; }
"""


def growth(pipeline, tc: Toolchain, obj: Path, work: Path, verbose: bool) -> dict:
    """What the object adds to a program, for the target: the stripped size
    and the xz -9 size of a small program (VERIFY_C) linked with it, minus
    the same program linked with a stub of the two functions it calls."""
    import lzma

    (work / "verify.c").write_text(VERIFY_C)
    (work / "stub.c").write_text(STUB_C)
    sizes = {}
    for name, extra in (("with", [obj, *LIBS.split()]), ("without", [work / "stub.c"])):
        program = pipeline.compile_program([work / "verify.c"], work / f"growth-{name}",
                                            libraries=(), flags=extra, cc=tc.cc,
                                            verbose=verbose)
        _run([tc.strip, program], verbose)
        data = program.read_bytes()
        sizes[name] = (len(data), len(lzma.compress(data, preset=9)))
    return {"stripped": sizes["with"][0] - sizes["without"][0],
            "xz -9": sizes["with"][1] - sizes["without"][1]}


def verify(pipeline, dest: Path, work: Path, verbose: bool, parallelism: int = 1) -> None:
    """A program linked with the object alone parses a response (native),
    with one interpreter and, where it has them, with the pool's."""
    (work / "verify.c").write_text(VERIFY_C)
    program = pipeline.compile_program(
        [work / "verify.c"], work / "verify", libraries=(),
        flags=[object_path(dest), *LIBS.split()], verbose=verbose)
    for n in sorted({1, parallelism}):
        result = subprocess.run([str(program)], capture_output=True, text=True,
                                env={"PATH": "/usr/bin:/bin", "DNS_SHIM_PARALLELISM": str(n)})
        if result.returncode != 0 or (n > 1 and result.stderr):
            raise FirmwareError(f"a program linked with the object does not parse with "
                                f"parallelism {n}: {result.stdout}{result.stderr}")


# ------------------------------------------------------------------- the build


def firmware(dest, types=None, target=None, optimize=0, cache=None, verbose=False,
             python=None, parallelism=1, ares=False) -> dict:
    """Writes the firmware folder into dest (absent or empty), embedding
    Debian's CPython python ("3.11", "3.13"; default: default_version());
    with parallelism n > 1, n more interpreters linked in for
    dns_shim_set_parallelism (link_parallel); with ares, libdnsshim_ares's
    module and its Python side too (the worker image's: worker.py).
    Returns its manifest.  On failure dest is left as it was found."""
    dest = Path(dest).resolve()
    if dest.exists() and any(dest.iterdir()):
        raise FirmwareError(f"{dest} is not empty")
    if optimize not in (0, 1, 2):
        raise FirmwareError("--optimize is 0, 1 or 2")
    if not 1 <= parallelism <= PARALLELISM_MAX:
        raise FirmwareError(f"--parallelism is from 1 to {PARALLELISM_MAX}")
    existed = dest.exists()
    try:
        return _firmware(dest, types, target or native_triplet(), optimize, cache, verbose,
                         python, parallelism, ares)
    except BaseException:
        if existed:
            for item in dest.iterdir():
                shutil.rmtree(item) if item.is_dir() else item.unlink()
        else:
            shutil.rmtree(dest, ignore_errors=True)
        raise


def _firmware(dest: Path, types, triplet: str, optimize: int, cache, verbose: bool,
              version, parallelism: int = 1, ares: bool = False) -> dict:
    pipeline.check_sources()
    tc = Toolchain.debian(triplet, version or default_version())
    tc.check()
    cache = Path(cache or os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dnsshim"
    cffi_src = cffi_source(cache)
    with tempfile.TemporaryDirectory(prefix="dnsshim-firmware-") as tmp_name:
        work = Path(tmp_name)
        found = discover(pipeline, cffi_src, types, work / "discover", verbose, tc.version,
                         ares)
        sizes = freeze(found["frozen"], work / "frozen.c", optimize, verbose, tc.python)
        builtins = inittab(tc.config_c, tc.core_builtins | set(found["builtin"]),
                           work / "inittab.c")
        build = work / "build"
        build.mkdir()
        objs = runtime_objects(pipeline, tc, cffi_src, build, types, optimize, verbose,
                               ares=ares)
        flags = library_flags(tc)
        objs += [_compile(tc, work / "inittab.c", build / "inittab.o", flags, verbose),
                 _compile(tc, work / "frozen.c", build / "frozen.o", flags, verbose)]
        api = sorted(pipeline.header_functions())
        object_path(dest).parent.mkdir(parents=True)
        if parallelism > 1:
            single = link_object(tc, objs, build / "single.o", api, build, verbose)
            obj = link_parallel(pipeline, tc, objs, single, parallelism, object_path(dest), api,
                                work / "parallel", unit_flags(pipeline, tc, types, optimize),
                                build, verbose)
        else:
            obj = link_object(tc, objs, object_path(dest), api, build, verbose)
        defined, undefined = object_symbols(tc, obj)
        if defined != set(api):
            raise FirmwareError(f"the object's globals are not the API: "
                                f"{sorted(defined ^ set(api))[:20]}")
        parts = {
            "frozen stdlib": sum(v for n, v in sizes.items() if n.split(".")[0] not in
                                 ("dns", "shim")),
            "frozen dnspython": sum(v for n, v in sizes.items() if n.split(".")[0] == "dns"),
            "frozen shim": sum(v for n, v in sizes.items() if n.split(".")[0] == "shim"),
        }
        manifest = {
            "target": triplet, "types": types, "optimize": optimize,
            "parallelism": parallelism, "c-ares layer": ares,
            "versions": {"CPython": _debian_python_version(tc.python), "dnspython": _dnspython_version(),
                         "cffi": cffi_src.name.split("-", 1)[1],
                         "dnsshim": pipeline.package_version()},
            "bytes": {"object": obj.stat().st_size, **parts},
            "frozen": {n: sizes.get(n, 0) for n, _, _ in found["frozen"]},
            "builtin": builtins, "api": api, "undefined": sorted(undefined),
            "link": link_line(dest),
        }
        manifest["program growth"] = growth(pipeline, tc, obj, work, verbose)
        write_folder(pipeline, dest, tc, obj, manifest, cffi_src)
        if tc.native:
            verify(pipeline, dest, work, verbose, parallelism)
    return manifest


def _debian_python_version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def _dnspython_version() -> str:
    import dns.version

    return dns.version.version


def _interpreters(parallelism: int) -> str:
    return ("1 interpreter" if parallelism == 1 else
            f"1 + {parallelism} interpreters (parallelism up to {parallelism})")


def main(argv=None, prog="python -m shim firmware") -> int:
    """The firmware command: ``python -m shim firmware``, ``dnsshim-config firmware``."""
    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    parser.add_argument("dir", help="the folder to write (absent or empty)")
    parser.add_argument("--types", help="only these RDATA types get dnspython's parsers (e.g. "
                        "A,AAAA,CNAME,SRV,NAPTR); every other type reaches on_other opaque")
    parser.add_argument("--target", help="the GNU triplet to build for, e.g. aarch64-linux-gnu "
                        "(default: this machine's)")
    parser.add_argument("--optimize", type=int, default=0, choices=(0, 1, 2),
                        help="optimisation level of the frozen bytecode (1 and 2 drop asserts)")
    parser.add_argument("--python", metavar="X.Y", help="the Debian CPython to embed: "
                        f"{supported()} (default: Debian's python3's version)")
    parser.add_argument("--parallelism", type=int, default=1, metavar="N",
                        help="link N more interpreters in, so that up to N calls parse at once "
                        "(dns_shim_set_parallelism; each adds the runtime's size to the object, "
                        f"from 2 to {PARALLELISM_MAX}; default: 1, one interpreter)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    try:
        types = parse_types(args.types) if args.types else None
        manifest = firmware(args.dir, types, args.target, args.optimize, verbose=args.verbose,
                            python=args.python, parallelism=args.parallelism)
    except (FirmwareError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", None) or ""
        print(f"{prog}: {e}\n{detail}".rstrip(), file=sys.stderr)
        return 1
    mib, grown = 1024 * 1024, manifest["program growth"]
    print(f"{Path(args.dir).resolve()}/lib/libdnsshim_fw.o: "
          f"{manifest['bytes']['object'] / mib:.1f} MiB, {len(manifest['frozen'])} frozen "
          f"modules, {len(manifest['builtin'])} built-in, "
          f"{_interpreters(manifest['parallelism'])} ({manifest['target']}); a program "
          f"grows by {grown['stripped'] / mib:.2f} MiB stripped, {grown['xz -9'] / mib:.2f} MiB "
          f"with xz -9; link it with: {manifest['link']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
