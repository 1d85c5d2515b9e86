"""Build libdnsshim.so with cffi's embedding mode.

    python build_ffi.py [--out DIR]      libraries into DIR (default: build/)
    python build_ffi.py --prefix DIR     lib/, include/, lib/pkgconfig/ under DIR

builds libdnsshim.so.N (and the libdnsshim.so link) and libdnsshim.a, and
beside them libdnsshim_ares.so.1 and libdnsshim_ares.a (c-ares's classic
reply parsers, from ``csrc/dnsshim_ares.h`` and ``csrc/dnsshim_ares.c`` in
the same way: see build_ares()).  A ``pip install .`` builds them into the
installed package (setup.py).  Both first check what the build needs (a C
compiler, Python.h, a shared libpython) and stop with one line naming what
is missing and the Debian package that brings it.

``csrc/dns_shim.h`` is the one place the ABI is written down: its
declarations, with preprocessor lines (other than integer ``#define``\\s) and
the export markers dropped, are what cffi is given.  The public functions are
implemented in C (``csrc/dns_shim.c``, the module's preamble) around one
internal ``extern "Python"`` function, attached at start-up by the init code,
which only imports :mod:`shim.embedded` and calls its ``attach()``.

The library is linked by hand rather than through setuptools so that it gets
exactly the flags a C library should have: hidden visibility, a version
script that exports our names only, an rpath to libpython, and the Python
installation it was built with pinned in (``DNS_SHIM_PYTHON`` overrides it at
run time).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile

import cffi

ROOT = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(ROOT, "csrc")
HEADER = os.path.join(CSRC, "dns_shim.h")
MODULE = "_dnsshim_cffi"
LIBNAME = "libdnsshim.so"

# Markers that only mean something to a C compiler.
_MARKERS = re.compile(r"\b(DNS_SHIM_API|DNS_SHIM_BEGIN_DECLS|DNS_SHIM_END_DECLS"
                      r"|DNSSHIM_ARES_INTERNAL)\b")
# csrc/dnsshim_ares.h marks the Python side's functions for cffi this way.
_PYTHON_MARKER = re.compile(r"\bDNSSHIM_ARES_PYTHON\b")
_INT_DEFINE = re.compile(r"^#\s*define\s+(DNS_SHIM|DNSSHIM_ARES)_\w+\s+-?\d+\s*$")

# The internal entry points (csrc/dns_shim.c says how they are used): not ABI,
# so not in the header.
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
void dns_shim__report_start_failure(const char *why);
void dns_shim__log_level(int32_t level, const char *message);
"""

# The init code cffi runs once the interpreter is up: make the shim package
# importable, import it, attach the extern "Python" functions.  A failure is
# reported to the C side (which logs it and returns DNS_SHIM_ERR_INIT from
# then on) instead of raised, so that it takes the program's log handler.
INIT_CODE = """\
from _dnsshim_cffi import ffi, lib
def _start():
    import sys
    root = ffi.string(lib.dns_shim__package_root()).decode()
    if root and root not in sys.path:
        sys.path.insert(0, root)
    import shim.embedded
    shim.embedded.attach()
try:
    _start()
except BaseException:
    import traceback
    lib.dns_shim__report_start_failure(
        ("the parser could not be loaded:\\n" + traceback.format_exc()).encode("utf-8", "replace"))
"""


def header_cdef(path: str = HEADER) -> str:
    """The header's declarations in the form cffi's cdef() takes."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("#") and not _INT_DEFINE.match(stripped):
                continue
            lines.append(_PYTHON_MARKER.sub('extern "Python"', _MARKERS.sub("", line)))
    return "".join(lines)


def header_statuses(path: str = HEADER) -> dict:
    """``{enumerator: value}`` of ``enum dns_shim_status`` in the header."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"enum dns_shim_status\s*\{(.*?)\}", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    return {name: int(value) for name, value in re.findall(r"(DNS_SHIM_\w+)\s*=\s*(-?\d+)", body)}


def check_status_table() -> None:
    """Refuse to build when shim.status and the header disagree."""
    sys.path.insert(0, ROOT)
    from shim.status import Status

    in_python = {s.c_name: s.value for s in Status}
    in_header = header_statuses()
    if in_header != in_python:
        raise SystemExit(f"status codes differ between csrc/dns_shim.h {in_header} "
                         f"and shim/status.py {in_python}")


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def strerror_defines() -> str:
    """dns_shim_strerror's cases, from the one table of texts (shim.status)."""
    sys.path.insert(0, ROOT)
    from shim.status import TEXTS, UNKNOWN_TEXT

    cases = " ".join(f"case {status.c_name}: return {_c_string(text)};"
                     for status, text in TEXTS.items())
    return (f"#define DNS_SHIM__STRERROR_CASES {cases}\n"
            f"#define DNS_SHIM__STRERROR_UNKNOWN {_c_string(UNKNOWN_TEXT)}\n")


def make_ffi() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(header_cdef())
    ffi.cdef(_INTERNAL_CDEF)
    with open(os.path.join(CSRC, "dns_shim.c"), encoding="utf-8") as f:
        ffi.set_source(MODULE, strerror_defines() + f.read())
    ffi.embedding_init_code(INIT_CODE)
    return ffi


# ---- build prerequisites ------------------------------------------------------
# Checked before anything is generated or compiled, by build() and by setup.py
# (pip install .), so that a missing piece ends the build with one line naming
# it and the Debian command that installs it, not a compiler error.


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


def _require_compiler() -> str:
    """The C compiler to run: $CC if set, else sysconfig's CC, else cc."""
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
    _require_compiler()
    _require_python_headers()
    _require_shared_libpython()


def _python_lib() -> tuple:
    """(libdir, -l name) of this interpreter's shared libpython."""
    _require_shared_libpython()
    ver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
    return sysconfig.get_config_var("LIBDIR"), f"python{ver}"


def _python_link_flags(rpath: str = None) -> list:
    libdir, name = _python_lib()
    return [f"-L{libdir}", f"-Wl,-rpath,{rpath or libdir}", f"-l{name}"]


def header_version(path: str = HEADER) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    parts = [re.search(rf"#define DNS_SHIM_VERSION_{p}\s+(\d+)", text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def package_version() -> str:
    """shim.__version__, read without importing the package."""
    with open(os.path.join(ROOT, "shim", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def check_version() -> str:
    """The version, in one place (shim/__init__.py), checked against the header."""
    version = package_version()
    if header_version() != version:
        raise SystemExit(f"shim.__version__ is {version} but csrc/dns_shim.h says "
                         f"{header_version()}: change both together")
    return version


SONAME = "libdnsshim.so." + package_version().split(".")[0]


def _cc() -> str:
    """The C compiler: $CC, else the one this Python was built with, else cc."""
    return _require_compiler()


def _defines(python: str, root: str, in_package: bool) -> list:
    return [
        f'-DDNS_SHIM_DEFAULT_PYTHON="{python}"',
        f'-DDNS_SHIM_DEFAULT_ROOT="{root}"',
        f'-DDNS_SHIM_PYTHON_TAG="{sysconfig.get_python_version()}"',
        f"-DDNS_SHIM_IN_PACKAGE={1 if in_package else 0}",
    ]


def _run(cmd, verbose):
    if verbose:
        print(" ".join(cmd))
    subprocess.run(cmd, check=True)


def _common_flags() -> list:
    return ["-fPIC", "-O2", "-g", "-Wall", "-fvisibility=hidden", f"-I{CSRC}",
            f"-I{sysconfig.get_paths()['include']}", "-pthread"]


def _link_shared(c_file: str, shared: str, soname: str, version_script: str, flags: list,
                 libs: list, tmp: str, verbose: bool, python_rpath: str = None) -> None:
    """c_file linked as the shared object ``shared`` (written atomically),
    exporting what the text of ``version_script`` says; libpython found
    through python_rpath (default: its own directory).

    -z nodelete: once called, the library's cffi module lives on in the
    interpreter (and its extern "Python" functions in the library), so a
    dlclose() (a host Python's ctypes or cffi dropping the handle, a plugin
    loader) must not unmap it."""
    script = os.path.join(tmp, soname + ".map")
    with open(script, "w", encoding="utf-8") as f:
        f.write(version_script)
    _run([_cc(), "-shared", *_common_flags(), *flags, c_file, "-o", shared + ".tmp",
          f"-Wl,--version-script={script}", f"-Wl,-soname,{soname}", "-Wl,--no-undefined",
          "-Wl,-z,nodelete", *libs, *_python_link_flags(python_rpath)], verbose)
    os.replace(shared + ".tmp", shared)


def _link_name(out_dir: str, libname: str, soname: str) -> None:
    """The development link libX.so -> libX.so.N."""
    link = os.path.join(out_dir, libname)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(soname, link)


def _archive(c_file: str, static: str, flags: list, tmp: str, verbose: bool) -> None:
    """c_file compiled into the static archive ``static``."""
    obj = os.path.join(tmp, os.path.basename(static) + ".o")
    _run([_cc(), "-c", *_common_flags(), *flags, c_file, "-o", obj], verbose)
    if os.path.exists(static):
        os.remove(static)
    _run(["ar", "rcs", static, obj], verbose)


def build(out_dir: str, verbose: bool = False, in_package: bool = False,
          python: str = None, root: str = None, bundle_optimize: int = None) -> str:
    """Generate, compile and link the library into out_dir:

    * libdnsshim.so.N (SONAME libdnsshim.so.N, N the ABI's major version)
      and the link libdnsshim.so -> libdnsshim.so.N;
    * libdnsshim.a, the same code for static linking;
    * libdnsshim_ares.so.1 and libdnsshim_ares.a (build_ares()).

    python: the interpreter to pin (default: the one running this);
    root: the directory holding the shim package to import (default: this
    source tree; "" when that Python finds it on its own sys.path);
    in_package: the shared object is installed as shim/lib/ inside the
    package and finds the package and its Python from its own path;
    bundle_optimize: not None for the library of a self-contained folder
    (shim/bundle.py): it runs the interpreter found beside it ($ORIGIN)
    from the folder alone, with .pyc files of that optimisation level; no
    static archive (it could not find the folder).
    Returns the shared object's path."""
    check_prerequisites()
    ffi = make_ffi()
    check_status_table()
    check_version()
    bundle = bundle_optimize is not None
    python = "" if bundle else python or sys.executable
    root = "" if bundle else ROOT if root is None else root
    bundle_flags = ["-DDNS_SHIM_BUNDLE=1", f"-DDNS_SHIM_BUNDLE_OPTIMIZE={bundle_optimize}"] \
        if bundle else []
    os.makedirs(out_dir, exist_ok=True)
    shared = os.path.join(out_dir, SONAME)
    with tempfile.TemporaryDirectory(prefix="dnsshim-build-") as tmp:
        c_file = os.path.join(tmp, MODULE + ".c")
        ffi.emit_c_code(c_file)
        _link_shared(c_file, shared, SONAME, version_script_text(),
                     _defines(python, root, in_package) + bundle_flags, [], tmp, verbose,
                     python_rpath="$ORIGIN" if bundle else None)
        _link_name(out_dir, LIBNAME, SONAME)
        if bundle:  # the library of a bundle, alone
            return shared
        # The static archive cannot find itself: it uses the pinned Python
        # and, inside the package, that Python's own sys.path.
        _archive(c_file, os.path.join(out_dir, "libdnsshim.a"),
                 _defines(python, "" if in_package else root, False), tmp, verbose)
    build_ares(out_dir, verbose)
    return shared


# ---------------------------------------------------------------- libdnsshim_ares

ARES_HEADER = os.path.join(CSRC, "dnsshim_ares.h")
ARES_MODULE = "_dnsshim_ares_cffi"
ARES_LIBNAME = "libdnsshim_ares.so"
# c-ares's classic parse API is fixed (1.18, 1.19): the major stays 1.
ARES_SONAME = ARES_LIBNAME + ".1"
#: What libdnsshim_ares exports: c-ares's classic parse API, exactly.
ARES_EXPORTS = [
    "ares_parse_a_reply", "ares_parse_aaaa_reply", "ares_parse_ns_reply",
    "ares_parse_ptr_reply", "ares_parse_mx_reply", "ares_parse_txt_reply",
    "ares_parse_txt_reply_ext", "ares_parse_srv_reply", "ares_parse_naptr_reply",
    "ares_parse_soa_reply", "ares_parse_caa_reply", "ares_parse_uri_reply",
    "ares_free_hostent", "ares_free_data", "ares_free_string", "ares_expand_name",
    "ares_expand_string", "ares_strerror",
]

# The init code of libdnsshim_ares: libdnsshim has started the interpreter
# and put the shim package on sys.path (dns_shim_init); attach our module.
ARES_INIT_CODE = """\
from _dnsshim_ares_cffi import ffi, lib
try:
    import shim.ares_embedded
    shim.ares_embedded.attach()
except BaseException:
    import traceback
    lib.dnsshim_ares__report_start_failure(
        ("the parser could not be loaded:\\n" + traceback.format_exc()).encode("utf-8", "replace"))
"""


def make_ares_ffi() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(header_cdef(ARES_HEADER))
    with open(os.path.join(CSRC, "dnsshim_ares.c"), encoding="utf-8") as f:
        ffi.set_source(ARES_MODULE, f.read())
    ffi.embedding_init_code(ARES_INIT_CODE)
    return ffi


def build_ares(out_dir: str, verbose: bool = False) -> str:
    """libdnsshim_ares.so.1 (and its link) and libdnsshim_ares.a into out_dir,
    beside libdnsshim, whose runtime it uses: the shared object needs
    libdnsshim.so.N, found beside itself ($ORIGIN).  Returns its path."""
    ffi = make_ares_ffi()
    shared = os.path.join(out_dir, ARES_SONAME)
    with tempfile.TemporaryDirectory(prefix="dnsshim-ares-build-") as tmp:
        c_file = os.path.join(tmp, ARES_MODULE + ".c")
        ffi.emit_c_code(c_file)
        # c-ares's own symbols carry no version: neither do ours.
        exports = "".join(f"    {name};\n" for name in ARES_EXPORTS)
        _link_shared(c_file, shared, ARES_SONAME,
                     f"{{\n  global:\n{exports}  local:\n    *;\n}};\n", [],
                     [f"-L{out_dir}", "-ldnsshim", "-Wl,-rpath,$ORIGIN", "-ldl"], tmp, verbose)
        _link_name(out_dir, ARES_LIBNAME, ARES_SONAME)
        _archive(c_file, os.path.join(out_dir, "libdnsshim_ares.a"), [], tmp, verbose)
    return shared


#: The exported functions by the symbol-version node of the release that
#: added them (libcurl's and glibc's way: one node per minor release, each
#: inheriting the one before).  Nodes are only ever appended, and a function
#: never moves.  cffi's module init goes with 1.0.
SYMBOL_VERSIONS = {
    "DNSSHIM_1.0": ["process_dns_response", "dns_shim_register_callbacks", "dns_shim_process",
                    "dns_shim_init", "dns_shim_strerror", "dns_shim_version",
                    "dns_shim_set_log_handler", f"PyInit_{MODULE}"],
    "DNSSHIM_1.1": ["dns_shim_process_reply"],
}


def header_functions(path: str = HEADER) -> set:
    """The functions the header exports (DNS_SHIM_API)."""
    with open(path, encoding="utf-8") as f:
        return set(re.findall(r"^DNS_SHIM_API\s[^;(]*?\b(\w+)\s*\(", f.read(), re.M))


def version_script_text() -> str:
    """The linker's version script: every exported name in its node, all
    else local.  Refuses when the header exports a function no node lists."""
    listed = {name for names in SYMBOL_VERSIONS.values() for name in names}
    missing = header_functions() - listed
    if missing:
        raise SystemExit(f"build_ffi.SYMBOL_VERSIONS does not list {sorted(missing)}: add "
                         "them to the node of the release that adds them")
    text, previous = "", None
    for node, names in SYMBOL_VERSIONS.items():
        body = "".join(f"    {name};\n" for name in names)
        local = "  local:\n    *;\n" if previous is None else ""
        text += f"{node} {{\n  global:\n{body}{local}}}{' ' + previous if previous else ''};\n"
        previous = node
    return text


def pkgconfig_text(version: str, prefix: str) -> str:
    """dnsshim.pc: -ldnsshim with an rpath, and libpython for static links."""
    libdir, pylib = _python_lib()
    return (f"prefix={prefix}\n"
            "libdir=${prefix}/lib\n"
            "includedir=${prefix}/include\n\n"
            "Name: dnsshim\n"
            "Description: DNS response parsing for C programs, done by dnspython in an "
            "embedded CPython\n"
            f"Version: {version}\n"
            "Cflags: -I${includedir}\n"
            "Libs: -L${libdir} -Wl,-rpath,${libdir} -ldnsshim\n"
            f"Libs.private: -L{libdir} -Wl,-rpath,{libdir} -l{pylib} -lpthread -ldl -lm\n")


def ares_pkgconfig_text(version: str, prefix: str) -> str:
    """dnsshim-ares.pc: -ldnsshim_ares with an rpath; the header is c-ares's
    own <ares.h>; a static link needs libdnsshim and its libpython too."""
    return (f"prefix={prefix}\n"
            "libdir=${prefix}/lib\n\n"
            "Name: dnsshim-ares\n"
            "Description: c-ares's classic reply parsers (ares_parse_*_reply), with dnspython "
            "reading every byte\n"
            f"Version: {version}\n"
            "Requires.private: dnsshim\n"
            "Libs: -L${libdir} -Wl,-rpath,${libdir} -ldnsshim_ares\n"
            "Libs.private: -ldnsshim -ldl\n")


def install(prefix: str, verbose: bool = False, in_package: bool = False) -> str:
    """A complete tree under prefix: lib/ (the libraries), include/dns_shim.h,
    lib/pkgconfig/dnsshim.pc and dnsshim-ares.pc, bin/dnsshim-dump.  Inside the package (in_package), prefix is the
    shim/ directory itself and the .pc file finds it relative to itself."""
    version = check_version()
    lib = os.path.join(prefix, "lib")
    shared = build(lib, verbose, in_package=in_package,
                   root=("" if in_package else None))
    include = os.path.join(prefix, "include")
    os.makedirs(include, exist_ok=True)
    shutil.copyfile(HEADER, os.path.join(include, "dns_shim.h"))
    # dnsshim-dump, finding the library beside it wherever the tree is moved.
    bindir = os.path.join(prefix, "bin")
    os.makedirs(bindir, exist_ok=True)
    _run([_cc(), "-O2", "-Wall", f"-I{CSRC}", os.path.join(CSRC, "dnsshim-dump.c"),
          "-o", os.path.join(bindir, "dnsshim-dump"), f"-L{lib}", "-ldnsshim",
          "-Wl,-rpath,$ORIGIN/../lib"], verbose)
    pkgconfig = os.path.join(lib, "pkgconfig")
    os.makedirs(pkgconfig, exist_ok=True)
    with open(os.path.join(pkgconfig, "dnsshim.pc"), "w", encoding="utf-8") as f:
        f.write(pkgconfig_text(version, "${pcfiledir}/../.." if in_package
                               else os.path.abspath(prefix)))
    with open(os.path.join(pkgconfig, "dnsshim-ares.pc"), "w", encoding="utf-8") as f:
        f.write(ares_pkgconfig_text(version, "${pcfiledir}/../.." if in_package
                                    else os.path.abspath(prefix)))
    return shared


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", help="directory for the libraries (default: build/)")
    where.add_argument("--prefix", help="install lib/, include/ and lib/pkgconfig/ under PREFIX "
                                        "for system-wide use")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.prefix:
        print(install(os.path.abspath(args.prefix), args.verbose))
    else:
        print(build(os.path.abspath(args.out or os.path.join(ROOT, "build")), args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
