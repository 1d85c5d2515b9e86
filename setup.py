"""Builds libdnsshim into the package at install time.

``pip install .`` (or building a wheel) runs dnsshim_build.install.package_tree() into the
package's build directory: shim/lib/libdnsshim.so.N (and libdnsshim.so),
shim/lib/libdnsshim.a, libdnsshim_ares.so.1 and .a beside them,
shim/lib/pkgconfig/dnsshim.pc and dnsshim-ares.pc, and
shim/include/dns_shim.h, found again by ``python -m shim --cflags --libs``.
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
            install.package_tree(os.path.join(HERE, "shim"), pipeline.Mode.SOURCE_TREE)
        else:
            install.package_tree(os.path.join(self.build_lib, "shim"), pipeline.Mode.PACKAGE)


class BinaryDistribution(Distribution):
    """The wheel holds a shared object: it is specific to a platform and a
    CPython version."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
