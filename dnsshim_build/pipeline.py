"""Build libdnsshim and libdnsshim_ares with cffi's embedding mode (run
through build_ffi.py, the entry point).

Each library is a cffi module embedded in a shared object (libX.so.N, its
libX.so link, and libX.a for static links) with a pkg-config file.  One
pipeline builds every library of :data:`LIBRARIES` the same way: emit cffi's
C, compile, link with the library's export file, archive, write the ``.pc``
file from its template.  ``pip install .`` runs it into the installed package
(setup.py, through install.package_tree); the bundle in its bundle mode
(dnsshim_build/bundle.py), the firmware object its own way (firmware.py).

The sources of truth are files, not this script: ``csrc/dns_shim.h`` (the
ABI: its declarations are what cffi is given, and the sizes of its
versioned structs in each release what the library accepts; it is read by
dnsshim_build/header.py), ``csrc/lib/libdnsshim.map``
and ``csrc/ares/libdnsshim_ares.map`` (what each library exports, in which
symbol-version node), ``csrc/lib/dnsshim.pc.in`` and
``csrc/ares/dnsshim-ares.pc.in`` (the pkg-config files).  Before anything is
generated the build checks what must agree with them: the status table and
the version in ``shim/``, the c-ares layer's constants in
``shim/ares_glue.py``, a version node for every function of the header.

The libraries are linked by hand rather than through setuptools so that they
get exactly the flags a C library should have: hidden visibility, a version
script that exports the library's own names only, a run path to libpython,
and the Python installation they were built with pinned in.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import cffi

from dnsshim_build import header
from shim import layout

#: The source tree: csrc/, shim/, cmake/ beside this package.
ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
#: The public header: the ABI, written down once.
HEADER = CSRC / "dns_shim.h"
#: The c-ares layer's internal header: c-ares's structs and the data Python hands C.
ARES_HEADER = CSRC / "ares" / "dnsshim_ares.h"
#: The helpers the command-line programs share (reading a message, hex, RSS).
TOOLS = CSRC / "tools"
#: dnsshimd, the parse service: a program like dnsshim-dump (compile_program,
#: -ldnsshim), installed beside it (shim/layout.py's ``sbin`` part).
SERVICE = CSRC / "service" / "dnsshimd.c"
#: valgrind's suppressions for a program using the library: installed as
#: share/dnsshim/libdnsshim.supp beside lib/ (the .pc file's valgrind_suppressions).
SUPPRESSIONS = CSRC / "lib" / "libdnsshim.supp"
#: The example C programs a user copies, with their Makefile and CMakeLists.txt.
EXAMPLES = ROOT / "examples"

# ---------------------------------------------------------------------------
# What cffi is given: a header's declarations, as dnsshim_build.header reads
# them (its preprocessor lines dropped but for integer #defines, and the
# markers that only mean something to a C compiler; csrc/ares/dnsshim_ares.h
# marks its Python side's functions DNSSHIM_ARES_PYTHON, read as extern
# "Python").


def header_cdef(path: Path = HEADER) -> str:
    """A header's declarations in the form cffi's cdef() takes."""
    return header.read(path).cdef()


# libdnsshim's internal entry points (csrc/lib/dns_shim.c says how they are
# used): not ABI, so not in the header.
_INTERNAL_CDEF = """
#define DNS_SHIM__PY_DONE ...
typedef struct dns_shim__step {
    size_t member;
    const void *arg;
} dns_shim__step;
extern "Python" int32_t dns_shim__py_process(const uint8_t *buf, int32_t len,
                                             const dns_shim_query *query,
                                             const dns_shim_callbacks *callbacks,
                                             const uint64_t *done, size_t n_done,
                                             dns_shim__step **steps, size_t *count,
                                             uint64_t *token);
extern "Python" void dns_shim__py_release(uint64_t token);
const char *dns_shim__package_root(void);
int32_t dns_shim__owns_interpreter(void);
void dns_shim__report_start_failure(const char *why, const char *traceback);
void dns_shim__log_level(int32_t level, const char *message);
void dns_shim__set_error(const char *text);
int32_t dns_shim__memory_accounted(void);
int32_t dns_shim__memory_limited(void);
int32_t dns_shim__memory_enforce(int32_t on);
int32_t dns_shim__memory_refusing(void);
void *dns_shim__cdata_alloc(size_t n);
void dns_shim__cdata_free(void *p);
const char *dns_shim__firmware_types(void);
"""

# libdnsshim's init code, which cffi runs once the interpreter is up: make the
# shim package importable, import it, attach the extern "Python" functions.  A
# failure is reported to the C side (which logs it and returns
# DNS_SHIM_ERR_INIT from then on) instead of raised, so that it takes the
# program's log handler.
INIT_CODE = """\
from _dnsshim_cffi import ffi, lib
def _start():
    import sys
    root = ffi.string(lib.dns_shim__package_root()).decode()
    # In a Python program (an interpreter the library did not start) this
    # runs with the guest's builtins: the import below is the library's own
    # private copy (shim/guest.py), and sys.path is the program's, untouched.
    if root and root not in sys.path and lib.dns_shim__owns_interpreter():
        sys.path.insert(0, root)
    import shim.embedded
    shim.embedded.attach()
try:
    _start()
except BaseException as e:
    import traceback
    lib.dns_shim__report_start_failure(
        f"the parser could not be loaded ({type(e).__name__}: {e})".encode("utf-8", "replace"),
        traceback.format_exc().rstrip().encode("utf-8", "replace"))
"""

# libdnsshim_ares's init code: libdnsshim has started the interpreter and put
# the shim package on sys.path (dns_shim_init); attach this library's module.
ARES_INIT_CODE = """\
from _dnsshim_ares_cffi import ffi, lib
try:
    import shim.ares_embedded
    shim.ares_embedded.attach()
except BaseException as e:
    import traceback
    why = (f"cannot start the c-ares layer: its parser could not be loaded "
           f"({type(e).__name__}: {e}); every parse returns ARES_ENOTINITIALIZED")
    logged = 0
    try:
        from shim import embedded, glue
        log = embedded.runtime().log
        log(glue.LOG_ERROR, why)
        log(glue.LOG_DEBUG, traceback.format_exc().rstrip())
        logged = 1
    except BaseException:
        pass
    lib.dnsshim_ares__report_start_failure(why.encode("utf-8", "replace"), logged)
"""


def _shim():
    """This source tree's shim package (only its dependency-free modules are
    imported at build time: pip's build environment has no dnspython).  The
    tree's root is on sys.path wherever dnsshim_build is imported from it
    (build_ffi.py puts it there)."""
    import shim

    if Path(shim.__file__).resolve().parent != ROOT / "shim":
        raise SourcesDisagree(f"the shim package imported is {shim.__file__}, not this source "
                              f"tree's {ROOT / 'shim'}: run build_ffi.py from the tree")
    return shim


def generated_defines(path: Path = HEADER) -> str:
    """What libdnsshim's C takes from the Python side, as the text of
    GENERATED_HEADER: the table of typed record kinds (it includes
    KINDS_HEADER), dns_shim_strerror's cases and each status's name, from
    the one table of statuses (shim.status), the sizes of the versioned
    structs of the header at path (struct_sizes), and the texts of
    shim/requirements.py, which the library runs before anything else, and
    of shim/guest.py."""
    _shim()
    from shim.status import TEXTS, UNKNOWN_TEXT

    cases = " ".join(f"case {status.c_name}: return {_c_string(text)};"
                     for status, text in TEXTS.items())
    names = " ".join(f"case {status.c_name}: return {_c_string(status.c_name)};"
                     for status in TEXTS)
    return ("/* What libdnsshim's C takes from the Python side: generated by the build\n"
            "** (dnsshim_build.pipeline.generated_defines) from shim/status.py, shim/requirements.py\n"
            "** and shim/guest.py; and the sizes of csrc/dns_shim.h's versioned structs. */\n"
            "#ifndef DNS_SHIM_GENERATED_H\n#define DNS_SHIM_GENERATED_H\n"
            f'#include "{KINDS_HEADER}"\n'
            f"#define DNS_SHIM__STRERROR_CASES {cases}\n"
            f"#define DNS_SHIM__STRERROR_UNKNOWN {_c_string(UNKNOWN_TEXT)}\n"
            f"#define DNS_SHIM__STATUS_NAME_CASES {names}\n"
            + struct_sizes(path)
            + _c_text("DNS_SHIM__REQUIREMENTS", ROOT / "shim" / "requirements.py")
            + _c_text("DNS_SHIM__GUEST_CODE", ROOT / "shim" / "guest.py")
            + "#endif\n")


def struct_sizes(path: Path = HEADER) -> str:
    """The sizes each versioned struct of a header (dns_shim_callbacks,
    dns_shim_query...: those whose first member is struct_size) has had, as
    C: ``DNS_SHIM__SIZES_<struct>(X)`` expands to ``X(size, "release")``
    for each release that made it, oldest first (Header.struct_releases:
    the header names, in a comment before them, the release that appended
    members).  A size is what the compiler computes, never a number: the
    offset of the first member the next release appended, or, for the last
    release, the struct's sizeof.  The library accepts those sizes
    (csrc/lib/api.c)."""
    read = header.read(path)
    lines = []
    for struct in read.versioned_structs():
        entries = [f"X({f'offsetof({struct}, {until})' if until else f'sizeof({struct})'}, "
                   f"{_c_string(release)})" for release, until in read.struct_releases(struct)]
        lines.append(f"#define DNS_SHIM__SIZES_{struct}(X) {' '.join(entries)}\n")
    return "".join(lines)


#: The file name of generated_defines() on the library's include path.
GENERATED_HEADER = "dns_shim_generated.h"


def generated_headers(library, directory) -> Path:
    """A library's generated headers (GENERATED_HEADER and the KINDS_HEADER
    it includes; none for a library without) written into directory, which
    is returned: the C of the library includes them from there."""
    directory = Path(directory)
    text = library.generated()
    if text:
        directory.mkdir(parents=True, exist_ok=True)
        kinds_header(directory)
        (directory / GENERATED_HEADER).write_text(text, encoding="utf-8")
    return directory


#: The file name of kinds_header() on the C programs' include path.
KINDS_HEADER = "dns_shim_kinds.h"


def kinds_header(directory=None) -> str:
    """The table of typed record kinds (shim/kinds.py) as C X-macros
    (DNS_SHIM__KINDS...): the library's C includes it (generated_headers);
    given a directory, it is also written there as KINDS_HEADER, for the C
    programs that include it (dnsshim-dump, through compile_program)."""
    _shim()
    from shim.kinds import c_header

    text = c_header()
    if directory is not None:
        (Path(directory) / KINDS_HEADER).write_text(text, encoding="utf-8")
    return text


def _c_text(name: str, path: Path) -> str:
    """A define of a file's text as one C string (the library runs it)."""
    lines = path.read_text(encoding="utf-8").splitlines(True)
    return f"#define {name} \\\n" + " \\\n".join(_c_string(line) for line in lines) + "\n"


def _c_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped + '"'


# ---------------------------------------------------------------------------
# The libraries


@dataclasses.dataclass(frozen=True)
class Library:
    """One shared library of this project, as the pipeline builds it."""

    #: libNAME.so.MAJOR, libNAME.so, libNAME.a
    name: str
    #: its pkg-config module (NAME.pc)
    pc_name: str
    #: the cffi module embedded in it
    module: str
    #: () -> the declarations cffi is given
    cdef: object
    #: the bridge: the C that sees cffi's code, included by cffi's preamble
    #: (preamble())
    source: Path
    #: () -> the text of its GENERATED_HEADER (generated from the Python
    #: side), "" for none
    generated: object
    #: the Python code cffi runs once the interpreter is up
    init_code: str
    #: the ABI's major version: the SONAME's number
    major: str
    #: the linker's version script: what it exports, in which node
    exports: Path
    #: the .pc file's template
    pc_template: Path
    #: libraries of this table it links against
    links: tuple = ()
    #: whether it starts the runtime itself (and so takes the build mode's defines)
    starts_runtime: bool = False
    #: the prefix of the two functions its module's C defines for a guest in
    #: a Python program (GUEST_HEADER)
    guest_prefix: str = ""
    #: the C units compiled on their own beside cffi's unit (compiles();
    #: dnsshim_build/firmware.py)
    units: tuple = ()
    #: the shared library as two objects (csrc/lib/front.c): the units of its
    #: front, the object a program links, which carries no Python (none: one
    #: object)...
    front: tuple = ()
    #: ... and its runtime's file, in the form's worker folder: the whole
    #: library as one object, which the front loads for a parse it must
    #: compute in the process, what that object exports, and the C it alone
    #: links beside the library's objects (compiled in its link)
    runtime_soname: str = ""
    runtime_exports: Path | None = None
    runtime_units: tuple = ()

    @property
    def soname(self) -> str:
        return f"lib{self.name}.so.{self.major}"

    @property
    def link_name(self) -> str:
        """The development link, libNAME.so -> SONAME."""
        return f"lib{self.name}.so"

    @property
    def archive(self) -> str:
        return f"lib{self.name}.a"


def package_version() -> str:
    """shim.__version__, read without importing the package."""
    text = (ROOT / "shim" / "__init__.py").read_text(encoding="utf-8")
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


#: libdnsshim: process_dns_response() and the dns_shim_* functions.
DNSSHIM = Library(
    name="dnsshim", pc_name="dnsshim", module="_dnsshim_cffi",
    cdef=lambda: header_cdef(HEADER) + _INTERNAL_CDEF,
    source=CSRC / "lib" / "dns_shim.c", generated=generated_defines, init_code=INIT_CODE,
    major=package_version().split(".")[0], exports=CSRC / "lib" / "libdnsshim.map",
    pc_template=CSRC / "lib" / "dnsshim.pc.in", starts_runtime=True, guest_prefix="dns_shim",
    units=(CSRC / "lib" / "api.c", CSRC / "lib" / "dispatch.c",
           CSRC / "lib" / "failure.c", CSRC / "lib" / "guest.c", CSRC / "lib" / "memory.c",
           CSRC / "lib" / "pool.c", CSRC / "lib" / "runtime.c", CSRC / "lib" / "service.c"),
    front=(CSRC / "lib" / "api.c", CSRC / "lib" / "dispatch.c", CSRC / "lib" / "failure.c",
           CSRC / "lib" / "service.c", CSRC / "lib" / "front.c"),
    runtime_soname=layout.RUNTIME_LIBRARY, runtime_exports=CSRC / "lib" / "libdnsshim.map")

#: libdnsshim.so's two objects (csrc/lib/front.c says why): the front, the
#: shared object a program links (DNSSHIM.soname), which carries no Python,
#: made of FRONT_UNITS; and the runtime beside it (RUNTIME_SONAME), the whole
#: library as one object (DNSSHIM's cffi module and units), which the front
#: loads for a call that must parse in the process, in the form's worker
#: folder.  Both export the library's list (the front drives the runtime's
#: fork handler through its private dns_shim__runtime_fork).  The static
#: archive and the bundle are the whole library, without a front.
FRONT_UNITS = DNSSHIM.front
RUNTIME_SONAME = DNSSHIM.runtime_soname

#: libdnsshim_ares: c-ares's classic reply parsers, on libdnsshim's runtime.
#: c-ares's classic parse API is fixed (1.18, 1.19): its major stays 1.  Its
#: shared object is two objects too (csrc/ares/front.c): the front, every
#: unit but cffi's, on libdnsshim's front; the runtime, the whole library,
#: exporting the table of the bridge's four calls alone (runtime_entries.c,
#: libdnsshim_ares_runtime.map).
DNSSHIM_ARES = Library(
    name="dnsshim_ares", pc_name="dnsshim-ares", module="_dnsshim_ares_cffi",
    cdef=lambda: header_cdef(ARES_HEADER), source=CSRC / "ares" / "dnsshim_ares.c",
    generated=lambda: "", init_code=ARES_INIT_CODE, major="1",
    exports=CSRC / "ares" / "libdnsshim_ares.map",
    pc_template=CSRC / "ares" / "dnsshim-ares.pc.in", links=("dnsshim",),
    guest_prefix="dnsshim_ares",
    units=(CSRC / "ares" / "check.c", CSRC / "ares" / "dnsrec.c", CSRC / "ares" / "free.c", CSRC / "ares" / "memory.c",
           CSRC / "ares" / "owned.c",
           CSRC / "ares" / "parsers.c", CSRC / "ares" / "service.c",
           CSRC / "ares" / "structures.c"),
    front=(CSRC / "ares" / "check.c", CSRC / "ares" / "dnsrec.c", CSRC / "ares" / "free.c",
           CSRC / "ares" / "memory.c", CSRC / "ares" / "owned.c", CSRC / "ares" / "parsers.c",
           CSRC / "ares" / "service.c", CSRC / "ares" / "structures.c",
           CSRC / "ares" / "front.c"),
    runtime_soname=layout.ARES_RUNTIME_LIBRARY,
    runtime_exports=CSRC / "ares" / "libdnsshim_ares_runtime.map",
    runtime_units=(CSRC / "ares" / "runtime_entries.c",))

#: Every library, in the order they are built (a library after those it links).
LIBRARIES = (DNSSHIM, DNSSHIM_ARES)

#: libnss_dnsshim: glibc's NSS "hosts" module on libdnsshim, plain C (no cffi
#: module of its own).  Its SONAME is the one glibc dlopen()s for the word
#: "dnsshim" in nsswitch.conf: libnss_<service>.so.2 (the NSS interface
#: version, not this project's).
NSS_MODULE = layout.NSS_MODULE
NSS_SOURCE = CSRC / "nss" / "nss_dnsshim.c"
NSS_EXPORTS = CSRC / "nss" / "libnss_dnsshim.map"
#: Compiled into the module beside it: libdnsshim's client of the parse
#: service, its plan's check and calls, and what they need of the rest of the
#: library (nss_client.c), so that a lookup the service parses loads no
#: libdnsshim; the module dlopen()s libdnsshim only to parse in the process.
NSS_UNITS = (CSRC / "lib" / "service.c", CSRC / "lib" / "dispatch.c", CSRC / "lib" / "failure.c",
             CSRC / "nss" / "nss_client.c")


def preamble(library: Library) -> str:
    """cffi's preamble for a library: its bridge, included by its path under
    csrc/ (on the include path of every compile of the unit), so that the
    compiler sees the bridge as itself and its diagnostics name the bridge's
    own file and lines."""
    return f'#include "{library.source.relative_to(CSRC).as_posix()}"\n'


def make_ffi(library: Library = DNSSHIM) -> cffi.FFI:
    """The cffi.FFI that generates a library's embedded module."""
    ffi = cffi.FFI()
    ffi.cdef(library.cdef())
    ffi.set_source(library.module, preamble(library))
    ffi.embedding_init_code(library.init_code)
    return ffi


# ---------------------------------------------------------------------------
# What must agree with the sources of truth, checked before anything is built


def header_statuses(path: Path = HEADER) -> dict:
    """``{enumerator: value}`` of ``enum dns_shim_status`` in the header."""
    return header.read(path).enum("dns_shim_status")


def header_functions(path: Path = HEADER) -> set:
    """The functions the header exports (DNS_SHIM_API)."""
    return set(header.read(path).function_names())


def header_version(path: Path = HEADER) -> str:
    """The header's version, "MAJOR.MINOR.PATCH"."""
    return header.read(path).version()


def header_defines(path: Path, prefix: str) -> dict:
    """``{name: value}`` of a header's integer ``#define PREFIX...`` lines."""
    return header.read(path).defines(prefix)


def version_nodes(library: Library = DNSSHIM) -> dict:
    """``{node: [function, ...]}`` of a library's export file, in its order;
    an export list without nodes (c-ares's names) is the node ``""``."""
    return export_nodes(library.exports.read_text(encoding="utf-8"))


def export_nodes(text: str) -> dict:
    """version_nodes() of an export file's text (dnsshim_build/man.py reads a given
    tree's files)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    nodes = {}
    for node, body in re.findall(r"([\w.]*)\s*\{(.*?)\}[^;]*;", text, re.S):
        exported = body.split("local:")[0].replace("global:", "")
        nodes[node] = [name.strip() for name in exported.split(";") if name.strip()]
    return nodes


def private_export(name: str) -> bool:
    """Whether an exported name is private: a library's own entry for
    another of this project's objects (libdnsshim's DNSSHIM_PRIVATE node,
    libdnsshim_ares's dnsshim_ares__serve for dnsshimd), with the double
    underscore of the project's internal names (cffi's module init,
    PyInit_ and the module's name, is cffi's); no program calls it and no
    page documents it."""
    return "__" in name and not name.startswith("PyInit_")


def exported_names(library: Library) -> set:
    """Every function a library exports, by its export file."""
    return {name for names in version_nodes(library).values() for name in names}


class SourcesDisagree(SystemExit):
    """Two sources of the same fact disagree: one line saying which and how."""


def check_sources() -> str:
    """Refuse to build when what the Python side, the header and the export
    files each say of the same thing disagree.  Returns the version."""
    _shim()
    from shim import ares_codes, requirements
    from shim.status import Status

    version = package_version()
    if header_version() != version:
        raise SourcesDisagree(f"shim.__version__ is {version} but csrc/dns_shim.h says "
                              f"{header_version()}: change both together")
    in_python = {s.c_name: s.value for s in Status}
    in_header = header_statuses()
    if in_header != in_python:
        raise SourcesDisagree(f"status codes differ between csrc/dns_shim.h {in_header} "
                              f"and shim/status.py {in_python}")
    missing = header_functions() - exported_names(DNSSHIM)
    if missing:
        raise SourcesDisagree(f"{DNSSHIM.exports.relative_to(ROOT)} does not list "
                              f"{sorted(missing)}: add them to the node of the release "
                              "that adds them")
    in_header = {name: value for name, value in header_defines(ARES_HEADER, "DNSSHIM_ARES_").items()
                 if name.startswith("DNSSHIM_ARES_KIND_") or name[13:] in ares_codes.CODES
                 or name == "DNSSHIM_ARES_WANT_HOST"}
    in_python = {f"DNSSHIM_ARES_KIND_{name}": value for name, value in ares_codes.KINDS.items()}
    in_python.update({f"DNSSHIM_ARES_{name}": value for name, value in ares_codes.CODES.items()})
    in_python["DNSSHIM_ARES_WANT_HOST"] = ares_codes.WANT_HOST
    if in_header != in_python:
        differ = {name: (in_header.get(name), in_python.get(name))
                  for name in sorted(in_header.keys() | in_python.keys())
                  if in_header.get(name) != in_python.get(name)}
        raise SourcesDisagree(f"the c-ares layer's constants differ between "
                              f"{ARES_HEADER.relative_to(ROOT)} and shim/ares_codes.py "
                              f"(header, Python): {differ}")
    declared = pyproject_dependencies()
    floors = requirement_lines(requirements)
    if declared != floors:
        raise SourcesDisagree(f"pyproject.toml's dependencies {declared} are not the floors of "
                              f"shim/requirements.py {floors}: change both together")
    return version


def pyproject_dependencies() -> list:
    """pyproject.toml's run-time dependencies, as written."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


def requirement_lines(requirements) -> list:
    """The dependency lines shim/requirements.py's floors make: cffi's by
    the CPython minor version, then dnspython's."""
    minors = sorted(requirements.CFFI, key=lambda v: tuple(map(int, v.split("."))))
    lines = []
    for i, minor in enumerate(minors):
        marker = ("<" if i == 0 else ">=" if i == len(minors) - 1 else "==")
        bound = minors[1] if i == 0 else minor
        lines.append(f"cffi>={requirements.CFFI[minor]}; python_version {marker} '{bound}'")
    return lines + [f"dnspython>={requirements.DNSPYTHON}"]


# ---------------------------------------------------------------------------
# Build prerequisites
#
# Checked before anything is generated or compiled, by build() and by
# setup.py (pip install .), so that a missing piece ends the build with one
# line naming it and the Debian command that installs it, not a compiler
# error.


class MissingPrerequisite(SystemExit):
    """What the build needs and does not have: one line, naming the fix."""

    def __init__(self, what: str, fix: str):
        super().__init__(f"dnsshim: cannot build libdnsshim: {what}; {fix}")


def _dev_package() -> str:
    """The Debian package with this CPython's headers and libpython link."""
    ver = sysconfig.get_python_version()
    default = os.path.basename(os.path.realpath("/usr/bin/python3"))
    return "python3-dev" if default == f"python{ver}" else f"python{ver}-dev"


def _debian_fix(package: str) -> str:
    return f"on Debian: apt-get install {package}"


def _require_python_headers() -> None:
    include = sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(include, "Python.h")):
        raise MissingPrerequisite(
            f"Python.h is not in {include} (the C headers of {sys.executable})",
            _debian_fix(_dev_package()))


def _require_shared_libpython() -> None:
    ver = sysconfig.get_python_version()
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise MissingPrerequisite(
            f"{sys.executable} has no shared libpython (it was built without --enable-shared)",
            f"{_debian_fix('python3-dev')} and use Debian's /usr/bin/python3, or rebuild this "
            f"Python with --enable-shared (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared "
            f"pyenv install {ver})")
    libdir = sysconfig.get_config_var("LIBDIR")
    name = sysconfig.get_config_var("LDLIBRARY") or f"libpython{ver}.so"
    if not os.path.exists(os.path.join(libdir, name)):
        raise MissingPrerequisite(f"the shared libpython {name} is not in {libdir}",
                                  _debian_fix(_dev_package()))


def compiler() -> str:
    """The C compiler to run: $CC if set, else the one this Python was built
    with (sysconfig's CC), else cc.  Stops with one line when there is none."""
    if os.environ.get("CC"):
        cc = os.environ["CC"]
        if shutil.which(cc.split()[0]) is None:
            raise MissingPrerequisite(f"the C compiler {cc} (from $CC) is not found",
                                      _debian_fix("gcc") + ", or set CC to a C compiler")
        return cc
    names = (sysconfig.get_config_var("CC") or "").split()[:1] + ["cc"]
    for name in names:
        if shutil.which(name):
            return name
    raise MissingPrerequisite(f"no C compiler ({' or '.join(names)} on PATH)",
                              _debian_fix("gcc"))


def check_prerequisites() -> None:
    """Stop with one line naming what is missing: a C compiler, Python.h, a
    shared libpython (in the order a build needs them)."""
    compiler()
    _require_python_headers()
    _require_shared_libpython()


def python_library() -> tuple:
    """(directory, -l name) of this interpreter's shared libpython."""
    _require_shared_libpython()
    ver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
    return sysconfig.get_config_var("LIBDIR"), f"python{ver}"


def system_library_dir(path) -> bool:
    """Whether the dynamic linker searches path by default (/usr/lib,
    /lib, their multiarch directories): a run path to it is never written."""
    path = os.path.normpath(str(path))
    arch = sysconfig.get_config_var("MULTIARCH") or ""
    return path in {"/lib", "/usr/lib", "/lib64", "/usr/lib64", f"/lib/{arch}",
                    f"/usr/lib/{arch}"}


def python_link_flags(rpath: str | None = None) -> list:
    """-L, the run path (default: libpython's own directory, none when that
    is a system one) and -l of libpython."""
    libdir, name = python_library()
    run_path = rpath or ("" if system_library_dir(libdir) else libdir)
    return [f"-L{libdir}", *([f"-Wl,-rpath,{run_path}"] if run_path else []), f"-l{name}"]


def base_python() -> str:
    """The python executable of the CPython installation this one runs on:
    a virtualenv's base (an installed library must not need the venv)."""
    versioned = Path(sys.base_prefix) / "bin" / f"python{sysconfig.get_python_version()}"
    if versioned.is_file():
        return str(versioned)
    return getattr(sys, "_base_executable", None) or sys.executable


# ---------------------------------------------------------------------------
# The pipeline


class _Mode(enum.Enum):
    @property
    def form(self) -> layout.Form:
        return layout.FORMS[self.value]


#: Which install form a build is for: one member per form of shim/layout.py
#: that is built in its own way (Mode.SOURCE_TREE, PACKAGE, PREFIX, BUNDLE,
#: FIRMWARE; the Debian packages are a prefix build), the one description of
#: where each file goes and of how a library of each form finds the CPython
#: it runs and the shim package (Form.finds), which its C is told
#: (runtime_defines).
Mode = _Mode("Mode", [(name.upper().replace(" ", "_"), name)
                      for name, form in layout.FORMS.items() if not form.built_as])


#: Where a prefix install keeps its Python side, relative to its libdir.
PRIVATE_DIR = layout.PREFIX.python_from_lib()


def _run(cmd: list, verbose: bool) -> None:
    if verbose:
        print(" ".join(map(str, cmd)))
    subprocess.run(list(map(str, cmd)), check=True)


def env_flags(*names) -> list:
    """The flags in those environment variables (CPPFLAGS, CFLAGS, LDFLAGS:
    a packager's, such as dpkg's hardening flags), after this build's own."""
    import shlex

    return [flag for name in names for flag in shlex.split(os.environ.get(name, ""))]


def _library_flags() -> list:
    """How a library's C is compiled: position independent, hidden unless
    exported; then $CPPFLAGS and $CFLAGS."""
    return ["-fPIC", "-O2", "-g", "-Wall", "-fvisibility=hidden", f"-I{CSRC}",
            f"-I{sysconfig.get_paths()['include']}", "-pthread", *env_flags("CPPFLAGS", "CFLAGS")]


def runtime_defines(mode: Mode, shared: bool = True, optimize: int = 0, types=(),
                    tag: str = "", private: str = "") -> list:
    """What csrc/lib/dns_shim.c is told of where its Python is (its header
    comment lists them); a firmware's --types, the CPython minor version it
    embeds (``tag``; default: the one building), a prefix install's Python
    side (``private``: its installed path)."""
    form = mode.form
    finds = form.finds
    python = "" if finds in (layout.Finds.BUNDLE, layout.Finds.FROZEN) else sys.executable
    root = str(ROOT) if finds is layout.Finds.PINNED else ""
    if finds is layout.Finds.PRIVATE:
        python, root = base_python(), private
    defines = [f'-DDNS_SHIM_DEFAULT_PYTHON="{python}"', f'-DDNS_SHIM_DEFAULT_ROOT="{root}"',
               f'-DDNS_SHIM_PYTHON_TAG="{tag or sysconfig.get_python_version()}"',
               f'-DDNS_SHIM_BUILD_PREFIX="{os.path.realpath(sys.base_prefix)}"',
               *(f"-D{name}={value}" for name, value in form.c_defines(shared).items())]
    if finds in (layout.Finds.BUNDLE, layout.Finds.FROZEN):
        defines.append(f"-DDNS_SHIM_BUNDLE_OPTIMIZE={optimize}")
    if finds is layout.Finds.FROZEN:
        defines.append(f'-DDNS_SHIM_FIRMWARE_TYPES="{",".join(types)}"')
    return defines


def emit(library: Library, tmp: Path, verbose: bool = False) -> Path:
    """The C unit of a library's cffi module, into tmp (cffi says
    "generating ..." only when verbose): cffi's emitted code, untouched, in
    <module>.cffi.c, and the unit compiled, <module>.c, which defines the
    library's guest prefix, includes GUEST_HEADER and then cffi's code
    (guest_unit); beside them the library's generated headers, which its C
    includes (generated_headers).  The firmware compiles the unit with its
    own toolchain."""
    import io

    emitted = tmp / f"{library.module}.cffi.c"
    with contextlib.redirect_stdout(sys.stdout if verbose else io.StringIO()):
        make_ffi(library).emit_c_code(str(emitted))
    check_for_guest(emitted, library)
    generated_headers(library, tmp)
    c_file = tmp / f"{library.module}.c"
    c_file.write_text(guest_unit(library, emitted.name), encoding="utf-8")
    return c_file


# A guest in a Python program: loaded into a process that already runs
# Python, the library loads its own Python side privately (shim/guest.py says
# how), and two calls of cffi's runtime are pointed at that guest: the
# backend _cffi_init imports, and the builtins the init code runs with.
# GUEST_HEADER says how, in C: it comes before cffi's runtime and turns the
# two calls into macros; each library's C defines the two functions (doing
# what cffi does in the library's own interpreter), #undefs the macros, and
# refuses to compile without the header.

#: The header each library's cffi unit includes before cffi's code.
GUEST_HEADER = CSRC / "lib" / "dns_shim_cffi_guest.h"

#: What cffi's runtime (the emitted text before the preamble) must call,
#: exactly once each, for GUEST_HEADER to point it at the guest.
_GUEST_CALLS = ('PyImport_ImportModule("_cffi_backend")', "PyEval_GetBuiltins()")

#: The line of each library's bridge that ends GUEST_HEADER's macros.
_GUEST_END = "#undef PyImport_ImportModule\n"


def check_for_guest(c_file: Path, library: Library) -> None:
    """Refuses (one line) a cffi whose emitted runtime does not make the
    calls of _GUEST_CALLS exactly once each before the preamble (the
    library's bridge, preamble()), and a bridge that does not end
    GUEST_HEADER's macros.  Reads cffi's text; nothing edits it."""
    text = Path(c_file).read_text(encoding="utf-8")
    where = text.find(preamble(library))
    runtime = text[:where] if where >= 0 else ""
    for call in _GUEST_CALLS:
        if runtime.count(call) != 1:
            raise SystemExit(f"{c_file}: cffi's runtime has {runtime.count(call)} of {call!r} "
                             f"before the preamble, not one: this cffi is not one "
                             f"{GUEST_HEADER.name} knows")
    if _GUEST_END not in library.source.read_text(encoding="utf-8"):
        raise SystemExit(f"{library.source}: the bridge does not end {GUEST_HEADER.name}'s "
                         f"macros ({_GUEST_END.strip()})")


def guest_unit(library: Library, emitted: str) -> str:
    """The C unit compiled for a library's cffi module (emit): its guest
    prefix, GUEST_HEADER, then cffi's emitted file (beside it)."""
    return (f"/* {library.module}: cffi's module for lib{library.name}, with its guest"
            f" (dnsshim_build.pipeline.emit). */\n"
            f"#define DNS_SHIM__GUEST_PREFIX {library.guest_prefix}\n"
            f'#include "{GUEST_HEADER}"\n'
            f'#include "{emitted}"\n')


#: The products of a library whose C is compiled: its shared object and its
#: static archive (a bundle's library has the shared object alone).
SHARED, STATIC = "shared", "static"

#: The folder of a source-tree build's out_dir (Mode.SOURCE_TREE) that holds
#: what its C was compiled from and into: each library's emitted cffi units
#: (emit), the generated headers (generated_headers), the objects (one
#: folder per library) and COMPILE_COMMANDS.  An installed tree gets none of
#: it: its build compiles in a temporary folder.
STAGED = "staged"

#: The compilation database (clang's JSON format) in STAGED: each unit of
#: each library with the real command of each product, for clangd, an
#: analyser, a reader's cc.
COMPILE_COMMANDS = "compile_commands.json"


@dataclasses.dataclass(frozen=True)
class Compile:
    """One C unit of a library compiled for one of its products (SHARED,
    STATIC) into an object: the object is shared by every product whose
    command for the unit is the same (compiles())."""

    library: Library
    product: str
    source: Path
    #: the compiler and its arguments, up to the source (no -o)
    command: tuple
    output: Path

    @property
    def arguments(self) -> list:
        return [*self.command, "-o", str(self.output)]

    def entry(self, directory) -> dict:
        """The compile as an entry of COMPILE_COMMANDS."""
        return {"directory": str(directory), "arguments": self.arguments,
                "file": str(self.source), "output": str(self.output)}


def compiles(library: Library, c_file: Path, defines: dict, objects: Path) -> list:
    """Every compile of a library's C (cffi's unit c_file, from emit, then
    library.units) for each product of ``defines`` ({product: the defines
    its C is told, runtime_defines}), in that order, product by product:
    position independent, hidden unless exported, $CPPFLAGS and $CFLAGS
    (_library_flags).  A unit whose command is the same for every product
    has one object, objects/<library>/<unit>.o, which all of them link; one
    whose commands differ has one per product, <unit>.<product>.o."""
    head = (compiler(), "-c", *_library_flags(), f"-I{c_file.parent}")
    sources = (Path(c_file), *library.units)
    commands = {product: [(*head, *product_defines, str(source)) for source in sources]
                for product, product_defines in defines.items()}
    folder = Path(objects) / library.name
    result = []
    for product in defines:
        for i, source in enumerate(sources):
            agree = len({commands[other][i] for other in defines}) == 1
            name = source.stem if agree else f"{source.stem}.{product}"
            result.append(Compile(library, product, source, commands[product][i],
                                  folder / f"{name}.o"))
    return result


def _compile_objects(units: list, verbose: bool) -> None:
    """Each distinct object of ``units`` (Compile) compiled once."""
    done = set()
    for unit in units:
        if unit.output not in done:
            unit.output.parent.mkdir(parents=True, exist_ok=True)
            _run(unit.arguments, verbose)
            done.add(unit.output)


def _objects(units: list, product: str) -> list:
    return [unit.output for unit in units if unit.product == product]


def _link_front(library: Library, out_dir: Path, work: Path, defines: list, verbose: bool,
                system: bool = False) -> Path:
    """A split library's front (Library.front: libdnsshim.so.1,
    libdnsshim_ares.so.1) and its development link: compiled and linked in
    one step, hidden unless exported, the library's export list, libc
    (-ldl) and the fronts it links alone, -z nodelete (the runtime it
    loaded keeps pointers into it)."""
    shared = out_dir / library.soname
    needs = [flag for name in library.links for flag in (f"-L{out_dir}", f"-l{name}")]
    if library.links and not system:
        needs.append("-Wl,-rpath,$ORIGIN")
    _run([compiler(), "-shared", *_library_flags(), f"-I{work}", *defines,
          *map(str, library.front), "-o", f"{shared}.tmp",
          f"-Wl,--version-script={library.exports}", f"-Wl,-soname,{library.soname}",
          "-Wl,--no-undefined", "-Wl,-z,nodelete", *needs, "-ldl", *env_flags("LDFLAGS")],
         verbose)
    os.replace(f"{shared}.tmp", shared)
    link = out_dir / library.link_name
    if os.path.lexists(link):
        link.unlink()
    link.symlink_to(library.soname)
    return shared


def _link_shared(library: Library, objects: list, out_dir: Path, mode: Mode,
                 verbose: bool, system: bool = False, runtime: bool = False) -> Path:
    """The shared object, linked from its objects (compiles()), written
    atomically, and its development link.

    -z nodelete: once called, the library's cffi module lives on in the
    interpreter (and its extern "Python" functions in the library), so a
    dlclose() (a host Python's ctypes or cffi dropping the handle, a plugin
    loader) must not unmap it.  A library that links another of this project
    finds it beside itself ($ORIGIN: none in a system directory, where the
    dynamic linker looks anyway); a bundle's finds libpython there too.  The
    link has the compile's flags too ($CFLAGS: a sanitizer, LTO), then
    $LDFLAGS."""
    soname, exports = library.soname, library.exports
    if runtime:
        # a split library's runtime (Library.front): its own file and export
        # list, in the form's worker folder (csrc/lib/front.c)
        soname, exports = library.runtime_soname, library.runtime_exports
        shared = out_dir / mode.form.worker_from_lib() / soname
        shared.parent.mkdir(parents=True, exist_ok=True)
    else:
        shared = out_dir / soname
    # a library of this project it links is beside the library, above a
    # runtime in a worker folder
    origin = "$ORIGIN"
    if runtime and mode.form.worker_from_lib():
        origin += "/" + os.path.relpath(".", mode.form.worker_from_lib())
    needs = [flag for name in library.links for flag in (f"-L{out_dir}", f"-l{name}")]
    if library.links:
        needs += [*([] if system else [f"-Wl,-rpath,{origin}"]), "-ldl"]
    # the runtime's own calls of the API bind to its own functions, never
    # to the front's of the same names (which the program's scope finds first)
    symbolic = ["-Wl,-Bsymbolic"] if runtime else []
    extra = [str(unit) for unit in library.runtime_units] if runtime else []
    _run([compiler(), "-shared", *_library_flags(), *objects, *extra, "-o", f"{shared}.tmp",
          f"-Wl,--version-script={exports}", f"-Wl,-soname,{soname}",
          "-Wl,--no-undefined", "-Wl,-z,nodelete", *symbolic, *needs,
          *python_link_flags("$ORIGIN" if mode is Mode.BUNDLE else None), *env_flags("LDFLAGS")],
         verbose)
    os.replace(f"{shared}.tmp", shared)
    if runtime:
        return shared
    link = out_dir / library.link_name
    if os.path.lexists(link):
        link.unlink()
    link.symlink_to(library.soname)
    return shared


def _link_nss_module(out_dir: Path, generated: Path, verbose: bool,
                     system: bool = False) -> Path:
    """libnss_dnsshim.so.2 (NSS_MODULE) into out_dir, beside the libdnsshim it
    loads: compiled and linked in one step with NSS_UNITS (``generated``:
    the library's generated headers), exporting only the _nss_dnsshim_*
    functions (NSS_EXPORTS), with glibc's resolver (libc's own from glibc
    2.34, libresolv before: -lresolv as needed) and nothing of this
    project's: libdnsshim is dlopen()ed by its SONAME for a reply the
    parse service does not parse, found beside the module ($ORIGIN) or, in
    a system directory, where the dynamic linker looks anyway; in a setuid
    program, where glibc ignores $ORIGIN, by ld.so.cache like any system
    library.  No -z nodelete: glibc never unloads an NSS module."""
    module = out_dir / NSS_MODULE
    _run([compiler(), "-shared", *_library_flags(), f"-I{generated}", str(NSS_SOURCE),
          *map(str, NSS_UNITS), "-o", f"{module}.tmp",
          f"-Wl,--version-script={NSS_EXPORTS}", f"-Wl,-soname,{NSS_MODULE}",
          "-Wl,--no-undefined", *([] if system else ["-Wl,-rpath,$ORIGIN"]),
          "-Wl,--as-needed", "-lresolv", "-Wl,--no-as-needed",
          "-ldl", *env_flags("LDFLAGS")],
         verbose)
    os.replace(f"{module}.tmp", module)
    return module


def _archive(library: Library, objects: list, out_dir: Path, tmp: Path, verbose: bool) -> Path:
    """The static archive, the same code for static linking: its objects
    (compiles()) linked into one object (ld -r) whose hidden symbols (what
    crosses the units: csrc/lib/dns_shim_internal.h) are made local, so that
    a static link gets no global name but the API's."""
    static = out_dir / library.archive
    obj = tmp / library.name / f"{library.archive}.o"
    _run(["ld", "-r", "-o", obj, *objects], verbose)
    _run(["objcopy", "--localize-hidden", obj], verbose)
    if static.exists():
        static.unlink()
    _run(["ar", "rcs", static, obj], verbose)
    return static


def _write_json(path: Path, value) -> None:
    """value as JSON into path, written atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def build(out_dir, mode: Mode = Mode.SOURCE_TREE, optimize: int = 0,
          verbose: bool = False, private: str = "", system: bool = False) -> Path:
    """Every library of :data:`LIBRARIES` into out_dir, in `mode`: for each,
    libNAME.so.MAJOR (SONAME libNAME.so.MAJOR, MAJOR the ABI's major version),
    the link libNAME.so and libNAME.a, then the NSS module (NSS_MODULE); a bundle (Mode.BUNDLE) gets libdnsshim's
    shared object alone, with .pyc files of the optimisation level `optimize`.
    Mode.PREFIX: ``private`` is the installed path of the Python side, and
    ``system`` says the libraries go to a system directory (no run path to
    it).

    Each unit is compiled once for every product whose command for it is the
    same (compiles(): the shared object's and the archive's defines may
    differ, runtime_defines), and both products are made from the objects.
    A source-tree build (Mode.SOURCE_TREE) keeps it all in out_dir/staged/
    (STAGED), for a reader and an analyser: the emitted cffi units, the
    generated headers the C includes (generated_headers), the objects, and
    out_dir/staged/compile_commands.json (COMPILE_COMMANDS: every unit of
    every library with its real command for each product; clangd takes it
    with --compile-commands-dir=out_dir/staged).  An installed tree has a
    fixed layout and gets none of it: its build compiles in a temporary
    folder.  Returns libdnsshim's shared object."""
    check_prerequisites()
    check_sources()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    libraries = (DNSSHIM,) if mode is Mode.BUNDLE else LIBRARIES
    with contextlib.ExitStack() as stack:
        if mode is Mode.SOURCE_TREE:
            work = out_dir.absolute() / STAGED
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
        else:
            work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dnsshim-build-")))
        entries = []
        for library in libraries:
            c_file = emit(library, work, verbose)
            products = (SHARED,) if mode is Mode.BUNDLE else (SHARED, STATIC)
            defines = {product: (runtime_defines(mode, product == SHARED, optimize,
                                                 private=private)
                                 if library.starts_runtime else [])
                       for product in products}
            split = bool(library.front) and mode is not Mode.BUNDLE
            # the front finds the runtime in the form's worker folder
            front_defines = (defines[SHARED] if library.starts_runtime else
                             [f'-DDNS_SHIM_WORKER_DIR="{mode.form.worker_from_lib()}"'])
            units = compiles(library, c_file, defines, work)
            _compile_objects(units, verbose)
            _link_shared(library, _objects(units, SHARED), out_dir, mode, verbose, system,
                         runtime=split)
            if split:
                _link_front(library, out_dir, work, front_defines, verbose, system)
            if STATIC in products:
                _archive(library, _objects(units, STATIC), out_dir, work, verbose)
            entries += [unit.entry(os.getcwd()) for unit in units]
        if mode is not Mode.BUNDLE:
            _link_nss_module(out_dir, work, verbose, system)
        if mode is Mode.SOURCE_TREE:
            _write_json(work / COMPILE_COMMANDS, entries)
    return out_dir / DNSSHIM.soname


def pkgconfig_text(library: Library, prefix: str, mode: Mode = Mode.SOURCE_TREE,
                   libdir: str = "${prefix}/lib", rpath: bool = True) -> str:
    """A library's .pc file, from its template.  prefix: the directory of its
    lib/ and include/ (``${pcfiledir}/../..`` for a tree that may move);
    libdir: that of the libraries; rpath: whether a program gets a run path
    to it (not to a system directory).  libpython, which only a static link
    needs, is not named in a bundle's (a bundle has no static archive)."""
    python_libs = ""
    if mode is not Mode.BUNDLE:
        python_libs = " ".join([*python_link_flags(), "-lpthread", "-ldl", "-lm"])
    values = {"PREFIX": prefix, "VERSION": package_version(), "PYTHON_LIBS": python_libs,
              "LIBDIR": libdir, "RPATH": "-Wl,-rpath,${libdir} " if rpath else ""}
    text = library.pc_template.read_text(encoding="utf-8")
    text = re.sub(r"@(\w+)@", lambda m: values[m.group(1)], text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def write_pkgconfig(pc_dir: Path, prefix: str, mode: Mode, libraries=LIBRARIES,
                    **where) -> Path:
    """Each library's .pc file into pc_dir, its form's pkgconfig part
    (``where``: libdir and rpath, as pkgconfig_text takes them); returns
    that directory."""
    pc_dir = Path(pc_dir)
    pc_dir.mkdir(parents=True, exist_ok=True)
    for library in libraries:
        text = pkgconfig_text(library, prefix, mode, **where)
        (pc_dir / f"{library.pc_name}.pc").write_text(text, encoding="utf-8")
    return pc_dir


def compile_program(sources, output, *, against=None, libraries=("dnsshim",), rpath=None,
                    flags=(), cflags=(), embed_python=False, cc=None, verbose=False) -> Path:
    """The one way to compile a C program against a build of the libraries:
    the installed tool, the bundler's probe, the test drivers and benchmark
    harnesses all come through here.

    against: the directory of the libraries (-L); ``libraries`` are linked
    from it, in that order, with the run path ``rpath`` (default: that
    directory; "" for none: the program then runs with LD_LIBRARY_PATH).
    flags: compiler and link flags given as they are (a .pc file's, another
    library's), after those, beside or instead of ``against``; their -I
    come before this tree's.  cflags: compiler flags (defines, warnings).
    embed_python: the program calls libpython itself (its headers and -l).
    cc: another compiler (a cross compiler, for the firmware's target).
    The public header, csrc/tools/'s helpers and the table of kinds
    (KINDS_HEADER) are on the include path."""
    cmd = [cc or compiler(), "-O2", "-g", "-Wall", *cflags,
           *([] if cc else env_flags("CPPFLAGS", "CFLAGS")), *sources, "-o", output]
    if against is not None:
        cmd += [f"-L{against}", *(f"-l{name}" for name in libraries)]
        run_path = against if rpath is None else rpath
        if run_path:
            cmd.append(f"-Wl,-rpath,{run_path}")
    cmd += [*flags, f"-I{CSRC}", f"-I{TOOLS}"]
    if embed_python:
        libdir, name = python_library()
        cmd += [f"-I{sysconfig.get_paths()['include']}", f"-L{libdir}", f"-l{name}"]
    cmd += ["-pthread", "-ldl", *([] if cc else env_flags("LDFLAGS"))]
    with tempfile.TemporaryDirectory(prefix="dnsshim-kinds-") as generated:
        kinds_header(generated)
        _run([*cmd, f"-I{generated}"], verbose)
    return Path(output)
