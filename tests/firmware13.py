"""A Debian 13 root for the firmware object from Debian 13's CPython 3.13
(tests/test_firmware_debian13.py, tests/bench/benchmark.py): the object built
there links only there (it needs glibc 2.38's C23 entry points, __isoc23_*).

    with debian13_root(where) as root:   # the project in /root/dnsshim, a venv
        build_firmware(root, "/root/fw")  # python -m shim firmware there

The root is debian_root's, with PACKAGES in its cached base; the virtualenv
of Debian 13's python3 gets this machine's cffi and dnspython (their cp313
wheels, downloaded once into the project's cache) and cffi's source
distribution the firmware build compiles.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
from pathlib import Path

import debian_root

RELEASE = "13"
#: the base's packages (cached with it): the compiler, Debian 13's CPython
#: and its static library, libffi_pic.a, venv and strace
PACKAGES = ("gcc", "libc6-dev", "libffi-dev", "python3", "python3-dev", "libpython3.13-dev",
            "python3-venv", "strace")
PYTHON = "/root/venv/bin/python"


def unavailable() -> tuple[str, str] | None:
    """None when a Debian 13 root can be made here, else debian_root's why."""
    if not Path("/lib/x86_64-linux-gnu").is_dir():
        return "the Debian 13 root is made for x86-64", ""
    return debian_root.unavailable(PACKAGES, RELEASE)


def wheels() -> Path:
    """cp313 wheels of the cffi and dnspython this machine builds with (and
    what building needs), downloaded once into the project's cache."""
    import cffi
    import dns.version

    folder = debian_root.CACHE / "wheels-cp313"
    wanted = [f"cffi=={cffi.__version__}", f"dnspython=={dns.version.version}", "pycparser",
              "setuptools"]
    stamp = folder / "wanted.txt"
    if stamp.is_file() and stamp.read_text() == " ".join(wanted):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary",
                             ":all:", "--python-version", "3.13", "--implementation", "cp",
                             "--abi", "cp313", "--platform", "manylinux2014_x86_64",
                             "--platform", "manylinux_2_17_x86_64", "--platform", "any",
                             "-d", str(folder), *wanted], capture_output=True, text=True,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"pip download of the cp313 wheels failed: {result.stderr[-500:]}")
    stamp.write_text(" ".join(wanted))
    return folder


@contextlib.contextmanager
def debian13_root(where: Path):
    """The root in where/root, removed on leaving."""
    import cffi

    from dnsshim_build import firmware
    from test_debian import copy_project

    folder = wheels()
    cffi_src = firmware.cffi_source(debian_root.CACHE)
    root = debian_root.DebianRoot.create(where / "root", PACKAGES,
                                         log=where / "debootstrap.log", release=RELEASE)
    try:
        copy_project(root.path("/root/dnsshim"))
        shutil.copytree(folder, root.path("/root/wheels"))
        assert cffi_src.name == f"cffi-{cffi.__version__}"
        shutil.copytree(cffi_src, root.path(f"/root/.cache/dnsshim/{cffi_src.name}"))
        root.run("python3 -m venv /root/venv && /root/venv/bin/pip install -q --no-index "
                 "--find-links /root/wheels cffi dnspython setuptools")
        yield root
    finally:
        root.remove()


def build_firmware(root, dest: str, *options: str) -> str:
    """python -m shim firmware dest in the root; its one line."""
    out = root.run(f"cd /root/dnsshim && {PYTHON} -m shim firmware {dest} "
                   f"{' '.join(options)}", timeout=1800).stdout
    assert out.startswith(f"{dest}/lib/libdnsshim_fw.o: "), out
    return out
