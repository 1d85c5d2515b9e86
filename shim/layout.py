"""Where every file of an installation goes, for each form the libraries are
installed in: the one description that the installers, the Debian packaging,
dnsshim-config and the C runtime's location all follow.

Each :class:`Form` names the directory of each part of an installation,
relative to its root (a path template: ``{libdir}`` is the form's library
directory, which a prefix install may move with ``--libdir``, ``{tag}`` the
CPython minor version), and how a shared library of that form finds its
Python side (:class:`Finds`).  Who reads it:

- the installers (``dnsshim_build/install.py`` for the package tree that
  ``pip install .`` builds and for ``build_ffi.py --prefix``,
  ``dnsshim_build/bundle.py``, ``dnsshim_build/firmware.py``) write each
  part where its form says;
- the C runtime is compiled with its form's location
  (``dnsshim_build/pipeline.runtime_defines``: :meth:`Form.c_defines`);
- ``dnsshim-config`` (``shim/config.py``) answers from it;
- the Debian packages' ``debian/*.install`` lists are checked against
  :func:`debian_install_lines`.

A new form is one new entry of :data:`FORMS` (and, if its library finds its
Python in a new way, one new :class:`Finds`).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path


class Finds(enum.Enum):
    """How a shared library of a form finds the Python side it runs."""

    #: The building Python and this source tree, pinned in at build time.
    PINNED = "pinned"
    #: From its own path: it is ``<site-packages>/shim/<lib>/``, so the
    #: package is the directory above and the Python installation the one
    #: that site-packages belongs to.
    PACKAGE = "package"
    #: From its own path: its Python side is the form's ``python`` part,
    #: beside it in the library directory (the prefix may move whole).
    PRIVATE = "private"
    #: From its own path: it is ``<bundle>/<lib>/``, and the bundle's folder,
    #: with its ``modules`` part, is all it runs.
    BUNDLE = "bundle"
    #: Nothing on disk: CPython and every module are linked in.
    FROZEN = "frozen"


#: The parts of an installation and where they usually go, relative to its
#: root.  A form takes these unless it says otherwise, and has only the parts
#: it lists.
STANDARD = {
    "include": "include",                  # dns_shim.h (and dnsshim_ares.h)
    "lib": "{libdir}",                     # the shared objects, archives, object
    "pkgconfig": "{libdir}/pkgconfig",     # dnsshim.pc, dnsshim-ares.pc
    "cmake": "{libdir}/cmake/dnsshim",     # dnsshimConfig.cmake
    "python": "{libdir}/dnsshim/python",   # the Python side: shim, dnspython, cffi's backend
    "worker": "{libdir}/dnsshim",          # libdnsshim_worker.so, private to the libraries
    "modules": "{libdir}/python{tag}",     # a bundle's compiled modules
    "bin": "bin",                          # dnsshim-dump, dnsshim-config
    "sbin": "sbin",                        # dnsshimd, the parse service
    "data": "share/dnsshim",               # libdnsshim.supp, a manifest or report
    "man": "share/man",                    # man1, man3, man7
    "doc": "share/doc/dnsshim",            # NEWS
    "examples": "share/doc/dnsshim/examples",  # example C programs, Makefile, CMakeLists.txt
    "licenses": "share/licenses",          # a bundle's or firmware's licenses
}


@dataclass(frozen=True)
class Form:
    """One install form: its parts and how its library finds its Python."""

    name: str
    finds: Finds
    #: the parts it has (names of :data:`STANDARD`)
    parts: tuple
    #: the library directory, relative to the root (a template)
    libdir: str = "lib"
    #: parts that go elsewhere than :data:`STANDARD` says
    moved: dict = field(default_factory=dict)
    #: the form whose build it installs, when it has none of its own
    built_as: str = ""

    def has(self, part: str) -> bool:
        return part in self.parts

    def relative(self, part: str, tag: str = "", libdir: str | None = None) -> str:
        """The part's directory relative to the root.

        :raises KeyError: when the form has no such part.
        """
        if part not in self.parts:
            raise KeyError(f"the {self.name} form has no {part} part")
        template = self.moved.get(part, STANDARD[part])
        path = template.format(libdir=self.libdir if libdir is None else libdir, tag=tag)
        return os.path.normpath(path)

    def path(self, part: str, root, libdir=None, tag: str = "") -> Path:
        """The part's directory under root; libdir: an absolute library
        directory that replaces the form's (``--libdir``)."""
        if libdir is not None and STANDARD[part].startswith("{libdir}") \
                and part not in self.moved:
            return Path(libdir) / self.relative(part, tag, libdir=".")
        return Path(root) / self.relative(part, tag)

    def python_from_lib(self, tag: str = "") -> str:
        """Where the library finds its Python side, relative to its own
        directory ("" when it does not look from there)."""
        if self.finds is Finds.PACKAGE:
            return os.path.relpath(".", self.relative("lib"))  # the package itself
        if self.finds is Finds.PRIVATE:
            return os.path.relpath(self.relative("python"), self.relative("lib"))
        if self.finds is Finds.BUNDLE:
            return os.path.relpath(self.relative("modules", tag), self.relative("lib"))
        return ""

    def worker_from_lib(self) -> str:
        """Where the library looks for the worker image (parallelism above 1),
        relative to its own directory: "" (beside it) unless the form has a
        ``worker`` part, a private folder (an image has no SONAME, and a
        distribution keeps such objects out of the public library
        directory)."""
        if not self.has("worker"):
            return ""
        return os.path.relpath(self.relative("worker"), self.relative("lib"))

    def c_defines(self, shared: bool = True) -> dict:
        """What the C runtime is told of this form's layout
        (csrc/lib/dns_shim_runtime.h lists the names): how its shared
        library finds its Python side, and the directories it finds it by.
        A static archive has no path of its own, so it finds nothing from
        one."""
        finds = self.finds if shared or self.finds is Finds.FROZEN else Finds.PINNED
        defines = {"DNS_SHIM_IN_PACKAGE": int(finds is Finds.PACKAGE),
                   "DNS_SHIM_BUNDLE": int(finds is Finds.BUNDLE),
                   "DNS_SHIM_FIRMWARE": int(finds is Finds.FROZEN)}
        if finds is Finds.PACKAGE:
            # The library's directory as it ends: <site-packages>/shim/lib.
            defines["DNS_SHIM_PACKAGE_LIBDIR"] = f'"{PACKAGE_NAME}/{self.relative("lib")}"'
        if finds is Finds.PRIVATE:
            defines["DNS_SHIM_PRIVATE_DIR"] = f'"{self.python_from_lib()}"'
        if shared and self.has("worker"):
            defines["DNS_SHIM_WORKER_DIR"] = f'"{self.worker_from_lib()}"'
        if finds is Finds.BUNDLE:
            defines["DNS_SHIM_BUNDLE_LIBDIR"] = f'"{self.relative("lib")}"'
        return defines


#: The worker image's file name (dnsshim_build/worker.py's NAME; the library
#: looks for it in its form's worker folder, Form.worker_from_lib).
WORKER_IMAGE = "libdnsshim_worker.so"
#: libdnsshim's runtime, in the form's worker folder (csrc/lib/front.c): the
#: shared library's front loads it for a call that must parse in the process.
RUNTIME_LIBRARY = "libdnsshim_runtime.so.1"
#: libdnsshim_ares's runtime, beside it (csrc/ares/front.c): the c-ares layer's
#: front loads it for a parse it must compute in the process.
ARES_RUNTIME_LIBRARY = "libdnsshim_ares_runtime.so.1"

#: The Python package's name: a package install's root is its directory.
PACKAGE_NAME = "shim"

#: What the libraries' own build (``build_ffi.py --out DIR``) and an
#: editable install (``pip install -e .``, the source tree's shim/) make:
#: pinned to the building Python and this source tree.
SOURCE_TREE = Form("source tree", Finds.PINNED,
                   ("include", "lib", "pkgconfig", "cmake", "bin", "sbin", "data"),
                   moved={"sbin": "bin"})

#: ``pip install .``: the root is the installed package's directory,
#: ``<site-packages>/shim``; its programs, dnsshimd too, are in its bin/
#: (the console scripts of the virtualenv's bin/ run them).
PACKAGE = Form("package", Finds.PACKAGE,
               ("include", "lib", "pkgconfig", "cmake", "bin", "sbin", "data", "examples"),
               moved={"sbin": "bin"})

#: ``python build_ffi.py --prefix PREFIX [--libdir DIR]``: a C library's
#: install, standing alone; its Python side is private to it.
PREFIX = Form("prefix", Finds.PRIVATE,
              ("include", "lib", "pkgconfig", "cmake", "python", "worker", "bin", "sbin", "data",
               "man", "doc", "examples"))

#: The Debian packages (debian/rules): the prefix install into /usr, the
#: libraries in the multiarch directory, split by :data:`DEBIAN_PACKAGES`.
DEBIAN = Form("debian", Finds.PRIVATE,
              ("include", "lib", "pkgconfig", "cmake", "python", "worker", "bin", "sbin", "data",
               "man"),
              libdir="lib/${DEB_HOST_MULTIARCH}", built_as="prefix")

#: ``python -m shim bundle DIR``: a relocatable folder with its own CPython.
BUNDLE = Form("bundle", Finds.BUNDLE,
              ("include", "lib", "pkgconfig", "modules", "data", "licenses"))

#: ``python -m shim firmware DIR``: one object with everything linked in.
FIRMWARE = Form("firmware", Finds.FROZEN,
                ("include", "lib", "pkgconfig", "data", "licenses"))

#: Every form, by name.
FORMS = {form.name: form for form in (SOURCE_TREE, PACKAGE, PREFIX, DEBIAN, BUNDLE, FIRMWARE)}

#: The Debian binary packages: each part (or, for ``lib``, each kind of file
#: there) in the one package that ships it.  ``soname``: the shared objects
#: (libNAME.so.MAJOR); ``runtime``: their runtimes, in the worker folder;
#: ``link``: the development links (libNAME.so); ``archive``: the static
#: archives; man pages by section.
DEBIAN_PACKAGES = {
    "libdnsshim1": ("soname", "runtime", "worker", "python"),
    "libdnsshim-dev": ("include", "link", "archive", "pkgconfig", "cmake", "data", "man3", "man7"),
    "dnsshim-tools": ("bin", "man1"),
    "libnss-dnsshim": ("nss", "man8"),
    "dnsshimd": ("sbin", "sbin-man8"),
}

#: glibc's NSS module, beside the libraries in every form but the bundle and
#: the firmware object (dnsshim_build/pipeline.py NSS_MODULE).
NSS_MODULE = "libnss_dnsshim.so.2"


#: The programs of the ``sbin`` part: the parse service (csrc/service/).
SERVICES = ("dnsshimd",)


def debian_install_lines(libraries, headers=("dns_shim.h",), tools=("dnsshim-dump", "dnsshim-config"),
                         pc_names=None, services=SERVICES,
                         runtimes=(RUNTIME_LIBRARY, ARES_RUNTIME_LIBRARY)) -> dict:
    """The lines of each debian/<package>.install, as :data:`DEBIAN` and
    :data:`DEBIAN_PACKAGES` place the files: libraries is a list of
    (name, soname, link, archive) of the libraries built, runtimes the
    files of their runtimes (in the worker folder, beside the image)."""
    root = "usr"
    form = DEBIAN

    def under(part: str, name: str = "") -> str:
        path = f"{root}/{form.relative(part)}"
        return f"{path}/{name}" if name else path

    files = {
        "soname": [under("lib", soname) for _, soname, _, _ in libraries],
        "link": [under("lib", link) for _, _, link, _ in libraries],
        "archive": [under("lib", archive) for _, _, _, archive in libraries],
        "python": [under("python")],
        "runtime": [under("worker", name) for name in runtimes],
        "worker": [under("worker", WORKER_IMAGE)],
        "nss": [under("lib", NSS_MODULE)],
        "include": [under("include", h) for h in headers],
        "pkgconfig": [under("pkgconfig", f"{pc}.pc") for pc in (pc_names or ())],
        "cmake": [under("cmake")],
        "data": [under("data", "libdnsshim.supp")],
        "bin": [under("bin", t) for t in tools],
        "sbin": [under("sbin", s) for s in services],
        "man1": [under("man", f"man1/{t}.1") for t in tools],
        "man3": [under("man", "man3")],
        "man7": [under("man", "man7")],
        "man8": [under("man", "man8/libnss_dnsshim.8")],
        "sbin-man8": [under("man", f"man8/{s}.8") for s in services],
    }
    return {package: [line for kind in kinds for line in files[kind]]
            for package, kinds in DEBIAN_PACKAGES.items()}
