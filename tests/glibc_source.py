"""glibc's own resolver tests (resolv/tst-resolv-*.c and the others of
resolv/ that call the NSS host functions), built from Debian's source
package of the glibc this machine runs, against that glibc, so that
tests/test_glibc_resolv.py can run each against libnss_dnsshim as well as
against dns.

    python tests/glibc_source.py build     builds (or finds) them, prints the folder

What :func:`tests` does, once per glibc version (cached under
``${XDG_CACHE_HOME:-~/.cache}/dnsshim/``, as tests/cares_source.py caches
c-ares):

1. downloads the source package of the installed ``libc6`` (its .dsc, the
   upstream tarball and Debian's) from deb.debian.org, or from the security
   archive, and checks both tarballs against the .dsc's SHA-256 sums;
2. unpacks it with ``dpkg-source -x`` (Debian's patches applied: the tests
   of the glibc Debian ships, not upstream's);
3. compiles glibc's test support library (``support/``: the test driver,
   ``resolv_test.c``'s servers in a network namespace of their own, the
   checks of hostent and addrinfo) with the machine's gcc against the
   installed headers, each unit that builds outside glibc's own tree;
4. links each test of :data:`TESTS` with it and with
   tests/c/glibc_nss_select.c, which lets ``DNSSHIM_TEST_HOSTS`` name the
   module the test's hosts lookups go to (the harness itself names dns).

A test binary is run as glibc's ``make check`` runs it: it forks, enters
namespaces of its own (user, network, mount), starts its servers on
127.0.0.1 and points the thread's ``_res`` at them, so it needs root or
unprivileged user namespaces.  It exits 0 when every check passed, 1 with
each failure printed, 77 when the machine cannot run it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cares_source import CACHE, _into_place, _sha256  # noqa: E402

#: The tests of resolv/ that call the NSS host functions (getaddrinfo,
#: gethostbyname*, gethostbyaddr*), each with what it covers.  Left out:
#: tst-resolv-rotate, which hangs against dns itself in most runs here
#: (glibc 2.36: it passes under strace, so a race of its own; the module's
#: rotate is compared with dns's in test_nss); tst-resolv-threads, which
#: includes glibc's internal resolv-internal.h; tst-resolv-ai_idn*, which
#: need a UTF-8 and a Latin-1 locale; tst-leaks2 and
#: tst-res_hconf_reorder, whose subject is not the lookup.
TESTS = {
    "tst-resolv-basic": "A, AAAA, CNAME, NXDOMAIN, NODATA, TCP fallback, a long name, "
                        "every buffer size (ERANGE), gethostbyname*, getaddrinfo",
    "tst-resolv-search": "the search list, ndots, SERVFAIL and NXDOMAIN on the way, "
                         "large RRsets over TCP after truncation, a server that fails",
    "tst-resolv-canonname": "AI_CANONNAME with CNAME chains",
    "tst-resolv-edns": "EDNS in the queries (options edns0) and the replies",
    "tst-resolv-trailing": "replies with trailing data, or cut short",
    "tst-resolv-noaaaa": "options no-aaaa in every entry point",
    "tst-resolv-nondecimal": "names that look like numbers but are not addresses",
    "tst-resolv-res_init-multi": "_res re-read across threads",
    "tst-bug18665": "a pair over UDP: the second reply larger than the buffer",
    "tst-bug18665-tcp": "the pair over TCP after truncation, servers that answer in part",
}

#: support/ units that are programs or need glibc's own build tree.
_NOT_LIBRARY = re.compile(r"^(tst-|test-|shell-container|echo-container|true-container|"
                          r"links-dso-program)")

#: What support/ and the tests need defined outside glibc's tree.
_DEFINES = ("-D_GNU_SOURCE", "-DTIMEOUTFACTOR=1", '-DSRCDIR_PATH="/nonexistent"',
            '-DOBJDIR_PATH="/nonexistent"', '-DOBJDIR_ELF_LDSO_PATH="/nonexistent"',
            '-DINSTDIR_PATH="/"', '-DLIBDIR_PATH="/usr/lib"', '-DBINDIR_PATH="/usr/bin"',
            '-DSBINDIR_PATH="/usr/sbin"', '-DSLIBDIR_PATH="/lib"', '-DROOTSBINDIR_PATH="/sbin"',
            '-DCOMPLOCALEDIR_PATH="/usr/lib/locale"', "-include", "limits.h")
#: glibc-internal headers support/ includes, copied from the tree's include/.
_INTERNAL_HEADERS = ("intprops.h", "array_length.h")

ARCHIVES = ("http://deb.debian.org/debian/pool/main/g/glibc/",
            "http://security.debian.org/debian-security/pool/updates/main/g/glibc/")


class Unavailable(Exception):
    """Why glibc's tests cannot be had here (not Debian, no source
    reachable, no dpkg-source)."""


@dataclasses.dataclass(frozen=True)
class Built:
    """The folder of the built tests, and the glibc version they are of."""

    folder: Path
    version: str

    def program(self, name: str) -> Path:
        return self.folder / name


def libc_version() -> str:
    """The installed libc6's Debian version (2.36-9+deb12u14)."""
    try:
        arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True,
                              text=True).stdout.strip()
        # libc6 of this architecture: multiarch may have others (arm64's)
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", f"libc6:{arch}"],
                             capture_output=True, text=True)
    except FileNotFoundError:
        raise Unavailable("no dpkg-query: glibc's tests are built from Debian's source package")
    if out.returncode != 0 or not out.stdout.strip():
        raise Unavailable(f"libc6 is not a Debian package here: {out.stderr.strip()}")
    return out.stdout.strip()


def _download(name: str, into: Path) -> Path:
    """name from the first archive that has it."""
    why = []
    for base in ARCHIVES:
        try:
            with urllib.request.urlopen(base + name, timeout=60) as r, \
                    open(into / name, "wb") as f:
                shutil.copyfileobj(r, f)
            return into / name
        except OSError as error:
            why.append(f"{base}{name}: {error}")
    raise Unavailable("cannot download glibc's source: " + "; ".join(why))


def _source(tmp: Path, version: str) -> Path:
    """Debian's glibc source of version, downloaded, checked and unpacked."""
    if shutil.which("dpkg-source") is None:
        raise Unavailable("no dpkg-source (Debian: dpkg-dev)")
    plain = version.split(":")[-1]
    dsc = _download(f"glibc_{plain}.dsc", tmp)
    text = dsc.read_text(encoding="utf-8", errors="replace")
    sums = re.search(r"^Checksums-Sha256:\n((?: .*\n)+)", text, re.M)
    if sums is None:
        raise Unavailable(f"{dsc.name} has no Checksums-Sha256")
    for line in sums.group(1).splitlines():
        digest, _, name = line.split()
        path = _download(name, tmp)
        if _sha256(path) != digest:
            raise Unavailable(f"{name}: its SHA-256 is not the one {dsc.name} gives")
    out = subprocess.run(["dpkg-source", "--no-check", "-x", str(dsc), str(tmp / "src")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"dpkg-source -x {dsc.name} failed:\n{out.stderr[-3000:]}")
    return tmp / "src"


def _compile(args) -> str | None:
    """One unit (gcc's argv); None, or why it did not build."""
    out = subprocess.run(args, capture_output=True, text=True)
    return None if out.returncode == 0 else out.stderr[-500:]


def _build(tmp: Path, version: str) -> Path:
    src = _source(tmp, version)
    # <support/...> and <resolv/...> from the tree, and the two internal
    # headers, but not the tree's root (its generic bits/ would come before
    # the installed ones)
    include = tmp / "include"
    include.mkdir()
    for folder in ("support", "resolv"):
        (include / folder).symlink_to(src / folder)
    for header in _INTERNAL_HEADERS:
        shutil.copy(src / "include" / header, include / header)
    flags = ["-O1", "-w", f"-I{include}", f"-I{src / 'support'}", *_DEFINES]
    objects = tmp / "support-objects"
    objects.mkdir()
    units = sorted(p for p in (src / "support").glob("*.c") if not _NOT_LIBRARY.match(p.name))
    jobs = [["gcc", "-c", *flags, str(u), "-o", str(objects / (u.stem + ".o"))] for u in units]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        # a unit that needs glibc's tree is left out
        why = dict(zip((u.stem for u in units), pool.map(_compile, jobs)))
    if why.get("resolv_test", "") is not None:
        raise RuntimeError("support/resolv_test.c did not build:\n"
                           + why.get("resolv_test", "there is no such file"))
    built = sorted(str(p) for p in objects.glob("*.o"))
    subprocess.run(["ar", "rcs", str(tmp / "libsupport.a"), *built], check=True)
    out_dir = tmp / "tests"
    out_dir.mkdir()
    for name in TESTS:
        cmd = ["gcc", *flags, str(src / "resolv" / f"{name}.c"),
               str(HERE / "c" / "glibc_nss_select.c"), "-o", str(out_dir / name),
               str(tmp / "libsupport.a"), "-lresolv", "-lpthread", "-ldl"]
        why = _compile(cmd)
        if why is not None:
            raise RuntimeError(f"{name} did not build against this glibc:\n{why}")
    (out_dir / "VERSION").write_text(version + "\n", encoding="utf-8")
    return out_dir


def tests() -> Built:
    """The built tests of the installed glibc, from the cache or built
    into it."""
    version = libc_version()
    import hashlib

    # the folder's name changes with what is built into it
    digest = hashlib.sha256(((HERE / "c" / "glibc_nss_select.c").read_bytes()
                             + " ".join(sorted(TESTS)).encode())).hexdigest()[:8]
    key = re.sub(r"[^A-Za-z0-9.+-]", "_", version)
    folder = _into_place(CACHE / f"glibc-resolv-tests-{key}-{digest}",
                         lambda tmp: _build(tmp, version))
    return Built(folder, version)


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        print(__doc__)
        sys.exit(2)
    try:
        print(tests().folder)
    except Unavailable as why:
        print(f"unavailable: {why}", file=sys.stderr)
        sys.exit(1)
