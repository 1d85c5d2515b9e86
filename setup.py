"""Builds libdnsshim into the package at install time.

``pip install .`` (or building a wheel) runs dnsshim_build.install.package_tree() into the
package's build directory: shim/lib/libdnsshim.so.N (and libdnsshim.so),
shim/lib/libdnsshim.a, libdnsshim_ares.so.1 and .a beside them,
shim/lib/pkgconfig/dnsshim.pc and dnsshim-ares.pc, and
shim/include/dns_shim.h, found again by ``python -m shim --cflags --libs``;
shim/bin/dnsshim-dump and shim/bin/dnsshimd (the parse service), which the
console scripts of the same names run;
and the manual, installed into the environment's share/man (man1, man3, man7, man8).
An editable install (pip install -e .) builds the same tree into the source
tree's shim/ instead, in place, as setuptools builds C extensions for one:
pinned to the installing Python and importing shim from the source tree, so
that ``dnsshim-config`` and ``python -m shim`` answer there too (the tests
and build_ffi.py build their own copies).
"""

import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution


HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithLibrary(build_py):
    def run(self):
        # build_ffi.py, loaded by its path, puts this tree first on sys.path.
        spec = importlib.util.spec_from_file_location("build_ffi",
                                                      os.path.join(HERE, "build_ffi.py"))
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        from dnsshim_build import install, pipeline

        # A missing compiler, Python.h or libpython stops the build here,
        # with one line saying what to install, before anything runs.
        pipeline.check_prerequisites()
        super().run()
        if getattr(self, "editable_mode", False):
            package, mode = os.path.join(HERE, "shim"), pipeline.Mode.SOURCE_TREE
        else:
            package, mode = os.path.join(self.build_lib, "shim"), pipeline.Mode.PACKAGE
        install.package_tree(package, mode)
        # The manual, into the environment's share/man (pip installs a
        # wheel's data files under the virtualenv): man -M .venv/share/man.
        mandir = os.path.join("build", "man")
        pages = install.write_manual(os.path.join(HERE, mandir),
                                     os.path.join(package, "bin", "dnsshim-dump"),
                                     os.path.join(package, "lib"))
        sections = {}
        for page in pages:
            section = os.path.basename(os.path.dirname(page))
            sections.setdefault(f"share/man/{section}", []).append(
                os.path.join(mandir, section, os.path.basename(page)))
        self.distribution.data_files = sorted(sections.items())


class BinaryDistribution(Distribution):
    """The wheel holds a shared object: it is specific to a platform and a
    CPython version."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
