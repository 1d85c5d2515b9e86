"""The worker image: one private interpreter, to be instantiated many times in
one process.

A pool of interpreters needs a runtime that shares nothing with another copy
of itself, nor with the host: not CPython's globals, not its GIL, not a
symbol.  The firmware object (``firmware.py``) is that runtime already: its
own CPython, dnspython and cffi's backend frozen in, every symbol local but
the API.  Linked as a shared object with

- the library's export list (``csrc/lib/libdnsshim.map``): the API alone is
  dynamic, in its version nodes, nothing of CPython's;
- ``-Bsymbolic``: every reference binds inside the image, so no symbol of
  the host nor of another instance interposes;
- ``-z now``: resolved when loaded, nothing lazily later under a lock;

it becomes an image that can be loaded n times: copied into a memfd and
``dlopen``ed ``RTLD_NOW | RTLD_LOCAL`` by the memfd's ``/proc/self/fd`` path,
each load is a separate copy of every page of data, so a separate
interpreter with its own GIL.  The memfd must stay open while the instance
lives: the dynamic loader matches a path it has loaded before by its name,
and a closed memfd's number comes back.

The image leaves libc, libm and libpthread undefined, as the object does, so
the host's own are called.  Beside the API it exports private entry points
(``libdnsshim_worker.map``): one through which the library's front
(``csrc/lib/pool.c``) counts every instance's memory in one account, and
libdnsshim_ares's bridge (``ARES_ENTRIES``), so that libdnsshim_ares's
parses run in the pool too: the image is built with that library's module
and Python side (``firmware(..., ares=True)``).

``pip install .`` and ``build_ffi.py --prefix`` build the image beside the
library (``build_into``) where the firmware build can run for the system's
CPython (Debian's python3, ``firmware.default_version``; the image is
self-contained, so it need not be the CPython the library embeds): Debian's
libpython3.X-pic.a (libpython3.X-dev) and libffi_pic.a (libffi-dev), and
cffi's source distribution, downloaded once.
Where it cannot, they say why in one line, write the same line beside the
library (``NOTE``), and the library keeps one interpreter
(``dns_shim_set_parallelism`` says DNS_SHIM_ERR_UNSUPPORTED, quoting the
note).  The Debian packages build it too (``--system``), from cffi's source
that debian/rules puts in the cache, offline.
``tests/test_worker.py`` checks the image, ``tests/test_parallelism.py`` the
library's front; ``tests/c/pool_instances.c`` is a pool of the image's own
used by the tests and the benchmark.

An editable install (the tests' ``pip install -e``) writes beside its image
the digest of everything the image is made from (``STAMP``,
``inputs_digest``): the tests take that image (``reuse``) rather than build
the same one again, and build their own where any input differs.

Every install but a distribution's keeps the image it built in the user's
cache (``$XDG_CACHE_HOME/dnsshim/worker/DIGEST/``, else ``~/.cache``), by
the digest of its inputs wherever the source tree is (``cache_key``), and
takes it from there when the same inputs come again: a second ``pip
install`` of the same sources, or a copy of the tree, does not spend half
a minute building the same image.  Only an entry the installing user owns,
that no one else can write, in a folder of the same kind, is taken
(``cached``); the last ``CACHE_KEEP`` used are kept.  A distribution's
build (``required``) never reads nor writes it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from dnsshim_build import pipeline
from shim import layout as forms
from dnsshim_build.firmware import (LIBS, POOL_PRIVATE, FirmwareError, Toolchain, _run,
                                    default_version, firmware, native_triplet, nm_symbols,
                                    object_path)

#: The image's file name (csrc/lib/dns_shim_internal.h's DNS_SHIM_WORKER_IMAGE),
#: beside the library or in its form's worker folder (shim/layout.py's
#: Form.worker_from_lib, DNS_SHIM_WORKER_DIR), where the library's front looks.
NAME = forms.WORKER_IMAGE
#: Where the image is not, beside the library: why it was not built, one line
#: (csrc/lib/dns_shim_internal.h's DNS_SHIM_WORKER_NOTE), which the
#: library's refusal of parallelism above 1 quotes.
NOTE = "libdnsshim_worker.unavailable"
#: Beside an editable install's image: the digest of its inputs (inputs_digest).
STAMP = "libdnsshim_worker.inputs"
#: The cache's entries kept: the most recently used.
CACHE_KEEP = 3


#: The image's own export list, beside the library's: the entry points the
#: pool's front calls that are not API.
EXPORTS = pipeline.CSRC / "lib" / "libdnsshim_worker.map"
#: libdnsshim_ares's bridge in an interpreter (csrc/ares/dnsshim_ares.c):
#: libdnsshim_ares's parses in the pool run there.
ARES_ENTRIES = ("dnsshim_ares__compute", "dnsshim_ares__done", "dnsshim_ares__message",
                "dnsshim_ares__message_done")
#: ... those entry points, local in the firmware object like every symbol
#: not API, made global again for the image's link.
PRIVATE = (*POOL_PRIVATE, *ARES_ENTRIES)


def link(fw_object: Path, out: Path, cc: str = "gcc", verbose: bool = False,
         objcopy: str = "objcopy", debug: bool = False) -> Path:
    """The worker image from a firmware object (``python -m shim firmware``);
    its debugging information kept with debug (a distribution's build,
    whose tools move it into a debug package), else left out."""
    fw_object, out = Path(fw_object), Path(out)
    opened = out.with_name(out.name + ".o")
    _run([objcopy, *[f"--globalize-symbol={name}" for name in PRIVATE], fw_object, opened],
         verbose)
    try:
        _run([cc, "-shared", "-o", out, "-Wl,--whole-archive", opened,
              "-Wl,--no-whole-archive", *([] if debug else ["-Wl,--strip-debug"]),
              "-Wl,-Bsymbolic", "-Wl,-z,now", "-Wl,-z,noexecstack",
              f"-Wl,--version-script={pipeline.DNSSHIM.exports}",
              f"-Wl,--version-script={EXPORTS}", *LIBS.split()], verbose)
    finally:
        opened.unlink(missing_ok=True)
    return out


def dynamic_symbols(image: Path) -> tuple:
    """(the symbols the image defines for others, "NAME@@NODE" each; the
    symbols it needs from others).  The version nodes themselves (nm's
    absolute symbols) are neither."""
    return nm_symbols("nm", image, "-D", "--with-symbol-versions", skip_kinds=("A",))


def unavailable(version: str = "") -> str:
    """Why this machine cannot build the image embedding CPython version
    (default: the system's), in one line; "" when it can."""
    tc = Toolchain.debian(native_triplet(), version or default_version())
    try:
        tc.check()
    except FirmwareError as e:
        return str(e)
    return ""


#: The source tree's parts an image is made from (the build code, the C, the
#: Python side), and the files at its top the build reads.
_SOURCES = ("csrc", "dnsshim_build", "shim")
_TOP = ("build_ffi.py", "setup.py", "pyproject.toml")
#: What an editable install writes into shim/ (.gitignore's list): not inputs.
_BUILT = {"shim/lib", "shim/include", "shim/bin", "shim/share"}
#: Debian's packages whose files the image is built from: the compiler and
#: binutils, the static CPython and its standard library, libffi.
_PACKAGES = ("gcc", "binutils", "libpython{v}-dev", "libpython{v}-stdlib",
             "python{v}-minimal", "libffi-dev")


def inputs_digest(version: str = "", tree: bool = True) -> str:
    """A digest of everything build() reads for an image embedding Debian's
    CPython version (default: the system's): every file of the source
    tree's build code, C and Python side; the dnspython it freezes in (each
    file's name and content); the versions of the Debian packages it links
    and compiles with, of the running Python and of its cffi (whose source
    is compiled in); the environment's compiler variables; with tree, the
    tree's own path too.  "" where one cannot be read (no reuse then)."""
    from dnsshim_build.firmware import dnspython_site

    version = version or default_version()
    h = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data)

    root = pipeline.ROOT
    # (label, file): the tree's files by their path in it (and the tree's
    # own path), dnspython's by theirs in its package, wherever it is
    # installed (pip's build environment, or the tests' venv)
    files = [(name, root / name) for name in _TOP]
    for part in _SOURCES:
        for folder, dirs, names in os.walk(root / part):
            rel = Path(folder).relative_to(root).as_posix()
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and f"{rel}/{d}" not in _BUILT)
            files += [(f"{rel}/{n}", Path(folder) / n) for n in sorted(names)
                      if not n.endswith(".pyc")]
    dns = dnspython_site() / "dns"
    for folder, dirs, names in os.walk(dns):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = Path(folder).relative_to(dns).as_posix()
        files += [(f"dns:{rel}/{n}", Path(folder) / n) for n in sorted(names)
                  if n.endswith(".py")]
    if tree:
        add("tree", str(root).encode())
    try:
        for label, f in files:
            add(label, f.read_bytes())
        packages = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package} ${Version}\n",
             *[p.format(v=version) for p in _PACKAGES]],
            capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    add("packages", packages.encode())
    import cffi  # its source distribution of this version is compiled in

    add("python", f"{sys.version} {version} cffi {cffi.__version__}".encode())
    for name in ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "SOURCE_DATE_EPOCH"):
        add(name, os.environ.get(name, "").encode())
    return h.hexdigest()


def cache_key(version: str = "") -> str:
    """The cache's key for an image of these inputs: their digest without
    the tree's path (the image holds none: a copy of the tree makes the
    same image), "" where it cannot be read (no cache then)."""
    return inputs_digest(version, tree=False)


def cache_dir() -> Path:
    """The folder of the cache's entries, one folder each by its key."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dnsshim" / "worker"


def _owned(path: Path) -> bool:
    """Whether path is no link, belongs to this process's user and can be
    written by no one else."""
    st = os.lstat(path)
    return (not stat.S_ISLNK(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def cached(key: str, out: Path) -> bool:
    """Copies the cache's image for key to out: True, or False, copying
    nothing, where there is none or it is not the user's own (the cache's
    folder, the entry's and the file, each owned by this process's user and
    written by no one else: no one else can put an image there)."""
    if not key:
        return False
    entry = cache_dir() / key
    try:
        if not all(_owned(p) for p in (cache_dir(), entry, entry / NAME)):
            return False
        shutil.copyfile(entry / NAME, out)
        os.chmod(out, 0o755)
        os.utime(entry)  # used now: kept over older entries
    except OSError:
        Path(out).unlink(missing_ok=True)
        return False
    return True


def keep(key: str, image: Path) -> None:
    """Puts a copy of image in the cache under key, and removes all but the
    CACHE_KEEP entries used last; a cache that cannot be written is left
    alone (the image is built, which is what counts)."""
    if not key:
        return
    where = cache_dir()
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _owned(where):
            return
        fresh = Path(tempfile.mkdtemp(prefix=".new-", dir=where))
        shutil.copyfile(image, fresh / NAME)
        os.chmod(fresh / NAME, 0o755)
        try:
            os.rename(fresh, where / key)
        except OSError:  # another build of the same inputs put it there first
            shutil.rmtree(fresh, ignore_errors=True)
        entries = sorted((p for p in where.iterdir() if not p.name.startswith(".")),
                         key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[CACHE_KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass


def reuse(lib: Path, out: Path) -> bool:
    """Copies the image an editable install left in lib to out when its
    stamp is this tree's inputs_digest() (the same inputs make the same
    image); False, copying nothing, otherwise."""
    lib = Path(lib)
    try:
        stamp = (lib / STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        return False
    if not stamp or not (lib / NAME).is_file() or stamp != inputs_digest():
        return False
    shutil.copyfile(lib / NAME, out)
    return True


def build(out: Path, version: str = "", verbose: bool = False, debug: bool = False) -> Path:
    """The image embedding Debian's CPython version (default: the
    system's), written to out: the firmware object with libdnsshim_ares's
    module (firmware(..., ares=True)), linked.  Raises FirmwareError."""
    with tempfile.TemporaryDirectory(prefix="dnsshim-worker-") as tmp:
        firmware(Path(tmp) / "firmware", python=version or default_version(), verbose=verbose,
                 ares=True)
        return link(object_path(Path(tmp) / "firmware"), Path(out), verbose=verbose,
                    debug=debug)


def build_into(lib: Path, verbose: bool = False, required: bool = False,
               stamp: bool = False) -> Path | None:
    """The image embedding the system's CPython, written into lib (beside the
    library, where its front looks); None, with one line on stderr saying
    why, and the same line in lib's NOTE, where it cannot be built (or, when
    required, a distribution's build: FirmwareError; its image keeps its
    debugging information for the distribution's debug package).

    An image or note an earlier build left in lib (a build folder that pip
    or setuptools reuses) is removed first: an image is never shipped that
    was not made of this build's inputs.  But for a distribution's build
    (required), the image comes from the user's cache when it holds one of
    the same inputs (``cached``), and one built goes there (``keep``).
    With stamp (an editable install), the digest of the image's inputs is
    written beside it (STAMP).  Both digests are taken before the build, so
    that a source changed meanwhile never matches."""
    lib = Path(lib)
    lib.mkdir(parents=True, exist_ok=True)
    for name in (NAME, NOTE, STAMP):
        (lib / name).unlink(missing_ok=True)
    version = default_version()
    why = unavailable(version)
    if not why:
        try:
            digest = inputs_digest(version) if stamp else ""
            key = "" if required else cache_key(version)
            if cached(key, lib / NAME):
                image = lib / NAME
                if verbose:
                    print(f"dnsshim: the worker image of these inputs, from {cache_dir() / key}",
                          file=sys.stderr)
            else:
                image = build(lib / NAME, version, verbose, debug=required)
                keep(key, image)
            if digest:
                (lib / STAMP).write_text(digest + "\n", encoding="utf-8")
            return image
        except FirmwareError as e:
            why = str(e)
        except (subprocess.CalledProcessError, OSError) as e:
            # a step that should not fail here: said, not hidden (-v shows
            # the step's own output)
            why = f"the image's build failed: {e}"
    why = " ".join(why.split())
    (lib / NAME).unlink(missing_ok=True)  # a link that failed halfway
    if required:
        raise FirmwareError(f"the worker image, which this build must ship: {why}")
    (lib / NOTE).write_text(why + "\n", encoding="utf-8")
    print(f"dnsshim: no worker image, parallelism above 1 will be refused "
          f"(DNS_SHIM_ERR_UNSUPPORTED): {why}", file=sys.stderr)
    return None
