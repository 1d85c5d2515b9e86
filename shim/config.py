"""dnsshim-config: what a C build needs to use the installed libdnsshim.

    dnsshim-config [--cflags] [--libs] [--static-libs] [--pkgconfig-dir] [--prefix]
                   [--includedir] [--libdir] [--valgrind-suppressions] [--version] [--help]
    dnsshim-config --check
    dnsshim-config bundle DIR [--strip] [--optimize N] [--extra-module M ...]
    dnsshim-config firmware DIR [--types A,AAAA,...] [--target TRIPLET] [--optimize N]

The convention of curl-config and pkg-config: ``cc app.c $(dnsshim-config
--cflags --libs)``, or ``PKG_CONFIG_PATH=$(dnsshim-config --pkgconfig-dir)
pkg-config --cflags --libs dnsshim``.  Several options print their answers
on one line, in the order given.

It answers for the libdnsshim that ``pip install .`` built into this Python
installation's ``shim`` package (or ``pip install -e .`` into the source
tree's), whatever the current directory.  ``python -m shim`` takes the same
options; run from the project's clone, where Python imports the source
tree's ``shim/`` instead of the installed package, it answers for the
installed one when the source tree holds no library.  Where there is none
it says exactly why (the source tree alone, an editable install without its
library, an incomplete installation) and exits 1.  Answering for an editable
install (``pip install -e .``), whose library depends on the clone, it says
so on stderr.

``--check`` starts the runtime the way a C program does (the installation's
``dnsshim-dump --check``) and prints what it runs on, each part with where
it comes from, and whether a sample response parses: exit status 0 when it
works, else 1 with the one line that says why and what to do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

HERE = Path(__file__).resolve().parent

OPTIONS = (
    ("cflags", "compiler flags: -I for dns_shim.h"),
    ("libs", "linker flags for the shared library (with its rpath)"),
    ("static-libs", "linker flags for libdnsshim.a and the libpython it needs"),
    ("pkgconfig-dir", "the directory of dnsshim.pc, for PKG_CONFIG_PATH"),
    ("prefix", "the directory holding lib/, include/ and bin/"),
    ("includedir", "the directory of dns_shim.h"),
    ("libdir", "the directory of the libraries"),
    ("valgrind-suppressions", "the valgrind suppressions file for a program using the library"),
    ("version", "the library's version"),
)


class NotInstalled(Exception):
    """No built libdnsshim for this Python; the message says why and what to run."""


class Installation:
    """A ``shim`` package directory that holds the built library.

    :param package: the package directory (``.../site-packages/shim``), the
        prefix of its ``lib/``, ``include/`` and ``bin/``.
    """

    def __init__(self, package: Path) -> None:
        self.prefix: Path = package
        self.libdir: Path = package / "lib"
        self.includedir: Path = package / "include"
        self.pkgconfig_dir: Path = self.libdir / "pkgconfig"

    def _pc_field(self, field: str) -> str:
        text = (self.pkgconfig_dir / "dnsshim.pc").read_text(encoding="utf-8")
        return next(line.split(":", 1)[1].strip() for line in text.splitlines()
                    if line.startswith(field + ":"))

    def value(self, option: str) -> str:
        """What ``--<option>`` prints (option as in :data:`OPTIONS`)."""
        if option == "cflags":
            return f"-I{self.includedir}"
        if option == "libs":
            return f"-L{self.libdir} -Wl,-rpath,{self.libdir} -ldnsshim"
        if option == "static-libs":
            # The .pc file's Libs.private: libpython and what it needs.
            return f"{self.libdir / 'libdnsshim.a'} {self._pc_field('Libs.private')}"
        if option == "version":
            return self._pc_field("Version")
        return str({"pkgconfig-dir": self.pkgconfig_dir, "prefix": self.prefix,
                    "includedir": self.includedir, "libdir": self.libdir,
                    "valgrind-suppressions": self.suppressions}[option])

    @property
    def suppressions(self) -> Path:
        return self.prefix / "share" / "dnsshim" / "libdnsshim.supp"

    def check(self) -> int:
        """Runs the installation's ``dnsshim-dump --check``; its exit status."""
        import subprocess

        program = self.prefix / "bin" / "dnsshim-dump"
        if not program.is_file():
            print(f"check: {program} is missing: this installation is incomplete; reinstall it",
                  file=sys.stderr)
            return 1
        sys.stdout.flush()
        return subprocess.run([str(program), "--check"]).returncode


def _has_library(package: Path) -> bool:
    return (package / "lib" / "libdnsshim.so").exists()


def _source_root(package: Path) -> Path | None:
    """The project's clone, if package is its source tree's shim/."""
    root = package.parent
    if (root / "build_ffi.py").is_file() and (root / "csrc" / "dns_shim.h").is_file():
        return root
    return None


def _other_packages() -> list[Path]:
    """``shim`` packages on sys.path other than this one: the installed one
    that the current directory hides from ``python -m shim``."""
    found = []
    for entry in sys.path:
        try:
            package = (Path(entry or os.curdir) / "shim").resolve()
        except OSError:
            continue
        if package != HERE and package not in found and (package / "__init__.py").is_file():
            found.append(package)
    return found


def _editable_sources() -> list[Path]:
    """The source trees of this Python's editable installs of dnsshim."""
    import importlib.metadata

    roots = []
    for dist in importlib.metadata.distributions(name="dnsshim"):
        text = dist.read_text("direct_url.json")
        if not text:
            continue
        info = json.loads(text)
        if info.get("dir_info", {}).get("editable"):
            roots.append(Path(unquote(urlparse(info["url"]).path)).resolve())
    return roots


def _why_not() -> str:
    root = _source_root(HERE)
    others = [p for p in _other_packages() if _source_root(p) is None]
    if root is None:
        return (f"{HERE} holds no lib/libdnsshim.so: this installation is incomplete; "
                f"reinstall it with `{sys.executable} -m pip install --force-reinstall dnsshim` "
                "from the project's clone")
    if root in _editable_sources():
        return (f"{HERE} is the source tree at {root}, installed in editable mode "
                f"(pip install -e), but it holds no library ({HERE / 'lib'} is missing): "
                "`pip install -e .` in the clone builds it there again, `pip install .` into "
                "the installed package")
    where = (f"; the installed one at {others[0]} has no lib/libdnsshim.so either (reinstall it)"
             if others else f"; {sys.executable} has no installed dnsshim (`pip install .` "
             "in the clone installs it)")
    return (f"{HERE} is the source tree at {root} (Python imports shim from the current "
            f"directory first), not an installed package, and it holds no library{where}")


def find_installation() -> Installation:
    """The installation whose library a C build should use.

    This package when it is installed and holds the library (``pip install
    .``); else an installed ``shim`` package on ``sys.path`` that holds one
    (the one ``python -m shim`` in the clone hides); else this source tree's
    own in-place library (``pip install -e .``).

    :raises NotInstalled: with the exact reason there is none.
    """
    in_source_tree = _source_root(HERE) is not None
    if _has_library(HERE) and not in_source_tree:
        return Installation(HERE)
    for package in _other_packages():
        if _has_library(package) and _source_root(package) is None:
            return Installation(package)
    if _has_library(HERE):
        return Installation(HERE)
    raise NotInstalled(_why_not())


def parser(prog: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """The options of dnsshim-config (``python -m shim`` adds its dump)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0], epilog=epilog)
    for name, text in OPTIONS:
        p.add_argument(f"--{name}", action="append_const", const=name, dest="what", help=text)
    p.add_argument("--check", action="store_true",
                   help="start the runtime as a C program does and say what it runs on and "
                        "whether it works (exit status 0 or 1)")
    return p


def run(args: argparse.Namespace, p: argparse.ArgumentParser) -> int:
    """Print the answers to the options given, on one line (or --check)."""
    if not args.what and not args.check:
        p.print_usage(sys.stderr)
        print(f"{p.prog}: give at least one option (--help lists them)", file=sys.stderr)
        return 2
    if args.what and args.check:
        p.print_usage(sys.stderr)
        print(f"{p.prog}: --check goes alone", file=sys.stderr)
        return 2
    try:
        installation = find_installation()
    except NotInstalled as e:
        if args.what == ["version"]:
            from shim import __version__
            print(__version__)
            return 0
        print(f"{p.prog}: {e}", file=sys.stderr)
        return 1
    root = _source_root(installation.prefix)
    if root is not None:
        print(f"{p.prog}: answering for the editable install at {root} (pip install -e): its "
              "library runs the clone's shim package; `pip install .` makes one that does not "
              "need the clone", file=sys.stderr)
    if args.check:
        return installation.check()
    print(" ".join(installation.value(w) for w in args.what))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The dnsshim-config command (``bundle``: the self-contained folder of
    shim/bundle.py, as ``python -m shim bundle``)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "bundle":
        from shim.bundle import main as bundle_main
        return bundle_main(argv[1:], prog="dnsshim-config bundle")
    if argv and argv[0] == "firmware":
        from shim.firmware import main as firmware_main
        return firmware_main(argv[1:], prog="dnsshim-config firmware")
    p = parser("dnsshim-config", epilog="dnsshim-config bundle --help: the bundle; "
               "dnsshim-config firmware --help: the firmware object")
    return run(p.parse_args(argv), p)


if __name__ == "__main__":
    sys.exit(main())
