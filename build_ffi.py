"""Build libdnsshim.so with cffi's embedding mode.

    python build_ffi.py [--out DIR]

writes DIR/libdnsshim.so (default: build/ beside this file).

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
_MARKERS = re.compile(r"\b(DNS_SHIM_API|DNS_SHIM_BEGIN_DECLS|DNS_SHIM_END_DECLS)\b")
_INT_DEFINE = re.compile(r"^#\s*define\s+DNS_SHIM_\w+\s+-?\d+\s*$")

# The internal entry points (csrc/dns_shim.c says how they are used): not ABI,
# so not in the header.
_INTERNAL_CDEF = """
#define DNS_SHIM__PY_DONE ...
typedef struct dns_shim__step {
    size_t member;
    const void *arg;
} dns_shim__step;
extern "Python" int32_t dns_shim__py_process(const uint8_t *buf, int32_t len,
                                             const dns_shim_callbacks *callbacks,
                                             const uint64_t *done, size_t n_done,
                                             dns_shim__step **steps, size_t *count,
                                             uint64_t *token);
extern "Python" void dns_shim__py_release(uint64_t token);
"""

INIT_CODE = """\
import sys
if {root!r} not in sys.path:
    sys.path.insert(0, {root!r})
import shim.embedded
shim.embedded.attach()
"""


def header_cdef(path: str = HEADER) -> str:
    """The header's declarations in the form cffi's cdef() takes."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("#") and not _INT_DEFINE.match(stripped):
                continue
            lines.append(_MARKERS.sub("", line))
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


def make_ffi() -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(header_cdef())
    ffi.cdef(_INTERNAL_CDEF)
    with open(os.path.join(CSRC, "dns_shim.c"), encoding="utf-8") as f:
        ffi.set_source(MODULE, f.read())
    ffi.embedding_init_code(INIT_CODE.format(root=ROOT))
    return ffi


def _python_link_flags() -> list:
    libdir = sysconfig.get_config_var("LIBDIR")
    ver = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        raise SystemExit(f"{sys.executable} has no shared libpython: libdnsshim needs one "
                         "(build CPython with --enable-shared)")
    return [f"-L{libdir}", f"-Wl,-rpath,{libdir}", f"-lpython{ver}"]


def build(out_dir: str, verbose: bool = False) -> str:
    """Generate, compile and link the library; return its path."""
    ffi = make_ffi()
    check_status_table()
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, LIBNAME)
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC").split()[0] or "cc"
    tag = sysconfig.get_python_version()
    with tempfile.TemporaryDirectory(prefix="dnsshim-build-") as tmp:
        c_file = os.path.join(tmp, MODULE + ".c")
        ffi.emit_c_code(c_file)
        version_script = os.path.join(tmp, "libdnsshim.map")
        with open(version_script, "w", encoding="utf-8") as f:
            f.write("{\n  global:\n    process_dns_response;\n    dns_shim_*;\n"
                    f"    PyInit_{MODULE};\n  local:\n    *;\n}};\n")
        cmd = [
            cc, "-shared", "-fPIC", "-O2", "-g", "-Wall", "-fvisibility=hidden",
            f"-I{CSRC}", f"-I{sysconfig.get_paths()['include']}",
            f'-DDNS_SHIM_DEFAULT_PYTHON="{sys.executable}"',
            f'-DDNS_SHIM_PYTHON_TAG="{tag}"',
            c_file, "-o", target + ".tmp",
            f"-Wl,--version-script={version_script}", f"-Wl,-soname,{LIBNAME}",
            "-Wl,--no-undefined", "-pthread",
        ] + _python_link_flags()
        if verbose:
            print(" ".join(cmd))
        subprocess.run(cmd, check=True)
        os.replace(target + ".tmp", target)
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build"),
                        help="directory for libdnsshim.so (default: build/)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    print(build(os.path.abspath(args.out), args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
