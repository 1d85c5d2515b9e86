"""A throwaway Debian 12 or 13 root, as /work/shared/tools/fresh-debian makes one:
debootstrap's minbase (with ca-certificates and what the caller needs),
built once and cached as a tar, unpacked afresh for each use; it reaches what this machine reaches (its
apt sources and configuration, CA bundle, resolv.conf), and each command
runs chrooted in it with a clean environment.

    root = DebianRoot.create(directory, ["gcc"])  # Debian 12, unpacked and configured
    root = DebianRoot.create(directory, ["gcc"], release="13")  # Debian 13
    root.run("apt-get update")                     # bash -c, as root, in the root
    root.path("/usr/bin/x")                        # that file, seen from here
    root.remove()

proc, sys and dev are mounted for each command in a mount namespace of its
own (unshare): they go when the command ends, nothing is left mounted on
this machine, and removing the root (rm --one-file-system) cannot reach
through a mount into the host's /dev.

The base tar: ~/.cache/dnsshim/debian<release>-minbase-<packages>.tar, minbase
with ca-certificates and the packages a caller asks for (a test's compiler
and tools: cached with the base, they cost nothing on later runs), else
built here with debootstrap.  The cache is the project's own: no other
tool's (fresh-debian's among them) is read or written.
Everything needs root (debootstrap, chroot, mounts): :func:`unavailable`
says why not.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

#: Debian's releases a root can be, by number, and their suite names
SUITES = {"12": "bookworm", "13": "trixie"}
#: the machine's own release (CI's): its apt sources name this suite
HOST_SUITE = "bookworm"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dnsshim"
INCLUDE = ("ca-certificates",)
DEFAULT_MIRROR = "http://deb.debian.org/debian"

#: The environment of every command in the root: nothing of this process's.
ENV = ("HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
       "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive",
       "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")


def _suite(release: str) -> str:
    try:
        return SUITES[str(release)]
    except KeyError:
        raise ValueError(f"Debian release {release!r}: one of {', '.join(SUITES)}") from None


def base_tar(packages=(), release: str = "12", apt=()) -> Path:
    """Where the base of that release with those packages (and those apt
    installed after debootstrap) is cached."""
    _suite(release)
    text = " ".join(sorted({*INCLUDE, *packages}))
    if apt:
        text += " apt: " + " ".join(sorted(set(apt)))
    key = hashlib.sha256(text.encode()).hexdigest()[:12]
    return CACHE / f"debian{release}-minbase-{key}.tar"


def cached_base(packages=(), release: str = "12", apt=()) -> Path | None:
    """The base tar to unpack, if one is there."""
    tar = base_tar(packages, release, apt)
    return tar if tar.is_file() and tar.stat().st_size > 0 else None


def unavailable(packages=(), release: str = "12", apt=()) -> tuple[str, str] | None:
    """None when a root can be made here; else (the program missing, its
    Debian package) or (why not, "")."""
    if os.geteuid() != 0:
        return "a Debian root needs root (debootstrap, chroot, mounts)", ""
    for program, package in (("chroot", "coreutils"), ("unshare", "util-linux"),
                             ("mount", "mount"), ("tar", "tar")):
        if shutil.which(program) is None:
            return program, package
    if cached_base(packages, release, apt) is None and shutil.which("debootstrap") is None:
        return f"debootstrap (no cached base at {base_tar(packages, release, apt)})", \
            "debootstrap"
    return None


def host_mirror() -> str:
    """The Debian mirror this machine's apt uses (as fresh-debian finds it)."""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        m = re.search(r"^URIs:\s*(\S+/debian)\s*$", Path(path).read_text(), re.M)
        if m:
            return m.group(1)
    if os.path.isfile("/etc/apt/sources.list"):
        m = re.search(rf"^deb\s+(\S+)\s+{HOST_SUITE}\s", Path("/etc/apt/sources.list").read_text(),
                      re.M)
        if m:
            return m.group(1)
    return DEFAULT_MIRROR


def build_base(packages=(), log: Path | None = None, release: str = "12", apt=()) -> Path:
    """debootstrap minbase of that release with INCLUDE and packages into a
    temporary folder, then apt-get install of apt in it (debootstrap's
    --include follows no virtual package: Debian 13's build tools need
    apt's resolver), then its tar, atomically (base_tar(packages, release,
    apt))."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tar = base_tar(packages, release, apt)
    with tempfile.TemporaryDirectory(prefix=f"debian{release}-base-", dir=CACHE) as tmp:
        target = Path(tmp) / "root"
        include = ",".join(sorted({*INCLUDE, *packages}))
        # in a mount namespace of its own: a failed debootstrap leaves no
        # mount of proc, sys or dev behind for the clean-up to walk into
        result = subprocess.run(["unshare", "--mount", "--propagation", "private",
                                 "debootstrap", "--variant=minbase", f"--include={include}",
                                 _suite(release), str(target), host_mirror()],
                                capture_output=True, text=True, timeout=1800)
        if log:
            log.write_text(result.stdout + result.stderr)
        if result.returncode != 0:
            raise RuntimeError("debootstrap failed: " + " ".join(result.stderr.splitlines()[-2:]))
        if apt:
            root = DebianRoot(target, release)
            root.configure()
            done = root.run("apt-get update -q && apt-get install -y -q --no-install-recommends "
                            + " ".join(sorted(set(apt))) + " && apt-get clean && "
                            "rm -rf /var/lib/apt/lists/*", check=False)
            if log:
                with open(log, "a") as f:
                    f.write(done.stdout + done.stderr)
            if done.returncode != 0:
                raise RuntimeError("apt-get install in the base failed: "
                                   + " ".join(done.stderr.splitlines()[-2:]))
        partial = tar.with_suffix(".tar.tmp")
        subprocess.run(["tar", "-C", str(target), "-cf", str(partial), "."], check=True)
        os.replace(partial, tar)
        subprocess.run(["rm", "-rf", "--one-file-system", str(target)], check=True)
    return tar


class DebianRoot:
    def __init__(self, directory: Path, release: str = "12"):
        self.dir = Path(directory)
        self.release = str(release)

    @classmethod
    def create(cls, directory: Path, packages=(), log: Path | None = None,
               release: str = "12", apt=()) -> "DebianRoot":
        """The base of that release unpacked into directory (which must not
        exist yet) and given this machine's apt sources (for the root's own
        suite), CA bundle and resolv.conf; packages: what the base should hold
        beside minbase (debootstrap's --include, cached with it); apt: what
        apt-get installs in the base after debootstrap (cached with it)."""
        base = cached_base(packages, release, apt) or build_base(packages, log, release, apt)
        root = cls(directory, release)
        root.dir.mkdir(parents=True)
        subprocess.run(["tar", "-C", str(root.dir), "-xf", str(base)], check=True)
        root.configure()
        return root

    def configure(self) -> None:
        """This machine's apt sources (naming the root's own suite), apt
        configuration, CA bundle and resolv.conf, into the root."""
        suite = _suite(self.release)
        etc = self.dir / "etc"
        (etc / "apt" / "sources.list").unlink(missing_ok=True)
        # the host's sources name its own suite; the root's name the root's
        def own_suite(text: str) -> str:
            return re.sub(rf"\b{HOST_SUITE}\b", suite, text)
        for f in glob.glob("/etc/apt/sources.list.d/*.sources"):
            (etc / "apt" / "sources.list.d" / os.path.basename(f)).write_text(
                own_suite(Path(f).read_text()))
        if os.path.isfile("/etc/apt/sources.list"):
            (etc / "apt" / "sources.list").write_text(
                own_suite(Path("/etc/apt/sources.list").read_text()))
        for f in glob.glob("/etc/apt/apt.conf.d/99*"):
            if os.path.isfile(f):
                shutil.copy(f, etc / "apt" / "apt.conf.d")
        if os.path.isfile("/etc/ssl/certs/ca-certificates.crt"):
            (etc / "ssl" / "certs").mkdir(parents=True, exist_ok=True)
            shutil.copy("/etc/ssl/certs/ca-certificates.crt", etc / "ssl" / "certs")
        resolv = etc / "resolv.conf"
        if resolv.is_symlink() or resolv.exists():
            resolv.unlink()
        if os.path.isfile("/etc/resolv.conf"):
            shutil.copy("/etc/resolv.conf", resolv)

    def path(self, inside: str) -> Path:
        """A path of the root, as this machine sees it (no symlink followed
        that would lead out of it: use lexists/lstat on it)."""
        return self.dir / str(inside).lstrip("/")

    def run(self, script: str, *, cwd: str = "/root", check: bool = True,
            timeout: float = 1800) -> subprocess.CompletedProcess:
        """bash -c script, as root in the root, in cwd, with ENV only;
        stdout and stderr captured as text."""
        r = str(self.dir)
        mounts = (f"mount -t proc proc '{r}/proc' && mount --bind /sys '{r}/sys' && "
                  f"mount --bind /dev '{r}/dev' && mount --bind /dev/pts '{r}/dev/pts'")
        inner = f'cd "$0" && {script}'
        command = f'{mounts} && exec chroot "$1" /usr/bin/env -i {" ".join(ENV)} ' \
                  f'/bin/bash -c "$2" "$3"'
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                 command, "sh", r, inner, cwd],
                                capture_output=True, text=True, errors="replace",
                                timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"in the Debian root, exit {result.returncode}: {script}\n"
                                 f"--- stdout\n{result.stdout[-4000:]}\n"
                                 f"--- stderr\n{result.stderr[-4000:]}")
        return result

    def remove(self) -> None:
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.dir)], check=False)
