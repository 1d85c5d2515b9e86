"""dnsshim-config: what a C build needs to use the installed libdnsshim.

    dnsshim-config [--ares] [--cflags] [--libs] [--static-libs] [--pkgconfig-dir] [--prefix]
                   [--includedir] [--libdir] [--valgrind-suppressions] [--nss-module]
                   [--version] [--help]
    dnsshim-config --check
    dnsshim-config bundle DIR [--strip] [--optimize N] [--extra-module M ...]
    dnsshim-config firmware DIR [--types A,AAAA,...] [--target TRIPLET] [--optimize N]
                                [--python X.Y] [--parallelism N]

The convention of curl-config and pkg-config: ``cc app.c $(dnsshim-config
--cflags --libs)``, or ``PKG_CONFIG_PATH=$(dnsshim-config --pkgconfig-dir)
pkg-config --cflags --libs dnsshim``.  Several options print their answers
on one line, in the order given.  ``--ares`` makes --cflags, --libs and
--static-libs answer for libdnsshim_ares (the c-ares layer, pkg-config's
``dnsshim-ares``) instead; alone it says so (the other answers are the
same for both libraries: ``--libdir`` is the folder of
``libdnsshim_ares.so.1`` too).  The answers are the .pc files' own.

Installed by ``python build_ffi.py --prefix`` (and the Debian package), it
answers for that installation.  Otherwise it answers for the libdnsshim
that ``pip install .`` built into this Python installation's ``shim``
package (or ``pip install -e .`` into the source tree's), whatever the
current directory.  ``python -m shim`` takes the same
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

from shim import layout

HERE = Path(__file__).resolve().parent

OPTIONS = (
    ("cflags", "compiler flags: -I for dns_shim.h"),
    ("libs", "linker flags for the shared library (with its run path, outside the system's "
             "directories)"),
    ("static-libs", "linker flags for the static archive and the libpython it needs"),
    ("pkgconfig-dir", "the directory of dnsshim.pc, for PKG_CONFIG_PATH"),
    ("prefix", "the directory holding lib/, include/ and bin/"),
    ("includedir", "the directory of dns_shim.h"),
    ("libdir", "the directory of the libraries"),
    ("valgrind-suppressions", "the valgrind suppressions file for a program using the library"),
    ("nss-module", "the path of libnss_dnsshim.so.2, glibc's NSS hosts module (nsswitch.conf: "
                   "hosts: files dnsshim)"),
    ("version", "the library's version"),
)


#: The options --ares changes: they answer for libdnsshim_ares instead.
ARES_OPTIONS = ("cflags", "libs", "static-libs")


def system_dirs() -> tuple:
    """The -I and -L flags pkg-config leaves out of its answers: the
    directories the compiler and the linker search anyway (/usr/include;
    /usr/lib, /lib and their multiarch directories)."""
    import sysconfig

    arch = sysconfig.get_config_var("MULTIARCH")
    libs = ["/usr/lib", "/lib", *((f"/usr/lib/{arch}", f"/lib/{arch}") if arch else ())]
    return ("-I/usr/include", *(f"-L{d}" for d in libs))


def without_system_dirs(flags: str) -> str:
    """flags less the -I and -L of :func:`system_dirs`, as pkg-config gives them."""
    system = system_dirs()
    return " ".join(f for f in flags.split()
                    if not (f[:2] in ("-I", "-L") and f[:2] + os.path.normpath(f[2:]) in system))


class NotInstalled(Exception):
    """No built libdnsshim for this Python; the message says why and what to run."""


class Installation:
    """An installation of the built libraries: a ``shim`` package directory
    that holds them (``pip install .``), or a prefix (``python build_ffi.py
    --prefix``, the Debian package).

    :param prefix: the directory of ``include/``, ``bin/`` and ``share/``
        (for a package: the package directory, ``.../site-packages/shim``).
    :param libdir: the directory of the libraries (default: ``prefix/lib``).
    """

    def __init__(self, prefix: Path, libdir: Path | None = None,
                 form: layout.Form = layout.PACKAGE) -> None:
        self.form = form
        self.prefix: Path = Path(prefix)
        self.libdir: Path = Path(libdir) if libdir is not None else form.path("lib", prefix)
        self.includedir: Path = form.path("include", prefix)
        self.pkgconfig_dir: Path = form.path("pkgconfig", prefix, libdir=self.libdir)

    def pc(self, module: str) -> dict:
        """A .pc file's variables and fields, ${...} expanded, as pkg-config
        reads them."""
        import re

        path = self.pkgconfig_dir / f"{module}.pc"
        values = {"pcfiledir": str(path.parent)}

        def expand(text: str) -> str:
            return re.sub(r"\$\{(\w+)\}", lambda m: values.get(m.group(1), ""), text)

        for line in path.read_text(encoding="utf-8").splitlines():
            name, sep, rest = line.partition("=")
            if sep and name.strip().isidentifier() and ":" not in name:
                value = expand(rest.strip())
                values[name.strip()] = os.path.normpath(value) if value.startswith("/") else value
                continue
            name, sep, rest = line.partition(":")
            if sep and name.strip() and " " not in name.strip():
                values[name.strip()] = expand(rest.strip())
        return values

    def value(self, option: str, ares: bool = False) -> str:
        """What ``--<option>`` prints (option as in :data:`OPTIONS`); with
        ares, --cflags, --libs and --static-libs for libdnsshim_ares."""
        main = self.pc("dnsshim")
        if option == "cflags":
            return without_system_dirs(main["Cflags"])
        if option == "libs":
            return without_system_dirs(self.pc("dnsshim-ares")["Libs"] if ares else main["Libs"])
        if option == "static-libs":
            # The archive, and the .pc files' Libs.private: libpython and
            # what it needs (for the c-ares layer, libdnsshim's first).
            archives = [self.libdir / "libdnsshim.a"]
            if ares:
                archives.insert(0, self.libdir / "libdnsshim_ares.a")
            extra = " -ldl" if ares else ""
            return (" ".join(map(str, archives)) + extra + " "
                    + without_system_dirs(main["Libs.private"]))
        if option == "version":
            return main["Version"]
        return str({"pkgconfig-dir": self.pkgconfig_dir, "prefix": self.prefix,
                    "includedir": self.includedir, "libdir": self.libdir,
                    "valgrind-suppressions": self.suppressions,
                    "nss-module": self.libdir / layout.NSS_MODULE}[option])

    @property
    def suppressions(self) -> Path:
        return self.form.path("data", self.prefix) / "libdnsshim.supp"

    def uninstall(self) -> int:
        """Removes this prefix install (what its manifest lists, then the
        folders it made, once empty), with no need of the sources or the
        virtualenv it was made with; its exit status."""
        from shim import manifest

        if self.form is not layout.PREFIX:
            print(f"dnsshim-config --uninstall: {self.prefix} is a package installed by pip, "
                  "not a prefix install: remove it with pip uninstall dnsshim", file=sys.stderr)
            return 1
        try:
            removed = manifest.remove(manifest.path(self.prefix))
        except manifest.ManifestError as e:
            print(f"dnsshim-config --uninstall: {e}; a package manager's install (the Debian "
                  "packages) is removed with that package manager", file=sys.stderr)
            return 1
        print(manifest.words(removed))
        return 0

    def check(self) -> int:
        """Runs the installation's ``dnsshim-dump --check``; its exit status."""
        import subprocess

        program = self.form.path("bin", self.prefix) / "dnsshim-dump"
        if not program.is_file():
            print(f"check: {program} is missing: this installation is incomplete; reinstall it",
                  file=sys.stderr)
            return 1
        sys.stdout.flush()
        return subprocess.run([str(program), "--check"]).returncode


def _has_library(package: Path) -> bool:
    return (layout.PACKAGE.path("lib", package) / "libdnsshim.so").exists()


def _source_root(package: Path) -> Path | None:
    """The project's clone, if package is its source tree's shim/."""
    root = package.parent
    if (root / "build_ffi.py").is_file() and (root / "csrc" / "dns_shim.h").is_file():
        return root
    return None


def build_command(name: str, argv: list, prog: str) -> int:
    """``bundle`` or ``firmware``: build_ffi.py's subcommand of that name, run
    from the source tree this package sits in (the build code is there, never
    in the installed package); exits with its status.  Outside a source
    checkout, one line saying where to run it."""
    root = _source_root(HERE)
    if root is None or not (root / "dnsshim_build").is_dir():
        print(f"{prog}: the {name} is built from the sources, and {HERE} is an installed "
              f"package, which carries no build code: run it in a source checkout (python "
              f"build_ffi.py {name}, or {prog} after pip install -e .)", file=sys.stderr)
        return 2
    import subprocess

    sys.stdout.flush()
    return subprocess.run([sys.executable, str(root / "build_ffi.py"), "--prog", prog, name,
                           *argv]).returncode


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
    p.add_argument("--ares", action="store_true",
                   help="--cflags, --libs and --static-libs for libdnsshim_ares, the c-ares "
                        "layer (pkg-config's dnsshim-ares), instead of libdnsshim")
    p.add_argument("--check", action="store_true",
                   help="start the runtime as a C program does and say what it runs on and "
                        "whether it works (exit status 0 or 1)")
    p.add_argument("--uninstall", action="store_true",
                   help="remove this prefix install: what its manifest lists, with no need "
                        "of the sources or the virtualenv it was installed from")
    return p


def run(args: argparse.Namespace, p: argparse.ArgumentParser,
        installation: Installation | None = None) -> int:
    """Print the answers to the options given, on one line (or --check), for
    installation (default: the one :func:`find_installation` finds)."""
    alone = [name for name in ("check", "uninstall") if getattr(args, name, False)]
    if alone and (args.what or args.ares or len(alone) > 1):
        p.print_usage(sys.stderr)
        print(f"{p.prog}: --{alone[0]} goes alone", file=sys.stderr)
        return 2
    if args.ares and not args.what and not alone:
        p.print_usage(sys.stderr)
        print(f"{p.prog}: --ares needs {', '.join(f'--{o}' for o in ARES_OPTIONS[:-1])} or "
              f"--{ARES_OPTIONS[-1]}: it makes them answer for libdnsshim_ares, the c-ares "
              "layer", file=sys.stderr)
        return 2
    if not args.what and not alone:
        p.print_usage(sys.stderr)
        print(f"{p.prog}: give at least one option (--help lists them)", file=sys.stderr)
        return 2
    try:
        installation = installation or find_installation()
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
    if getattr(args, "uninstall", False):
        return installation.uninstall()
    print(" ".join(filter(None, (installation.value(w, args.ares) for w in args.what))))
    return 0


def main(argv: list[str] | None = None, installation: Installation | None = None) -> int:
    """The dnsshim-config command (``bundle``: the self-contained folder of
    dnsshim_build/bundle.py, as ``python -m shim bundle``).  installation: the one it
    answers for (a prefix install's dnsshim-config gives its own)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("bundle", "firmware"):
        return build_command(argv[0], argv[1:], f"dnsshim-config {argv[0]}")
    p = parser("dnsshim-config", epilog=EPILOG)
    return run(p.parse_args(argv), p, installation)


EPILOG = ("dnsshim-config bundle --help: the bundle; dnsshim-config firmware --help: the "
          "firmware object (both from a source checkout)")


if __name__ == "__main__":
    sys.exit(main())
