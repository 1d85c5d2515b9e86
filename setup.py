"""Builds libdnsshim into the package at install time.

``pip install .`` (or building a wheel) runs build_ffi.py's install() into the
package's build directory: shim/lib/libdnsshim.so.N (and libdnsshim.so),
shim/lib/libdnsshim.a, libdnsshim_ares.so.1 and .a beside them,
shim/lib/pkgconfig/dnsshim.pc and dnsshim-ares.pc, and
shim/include/dns_shim.h, found again by ``python -m shim --cflags --libs``.
An editable install (pip install -e .) skips it: the tests and build_ffi.py
build their own copies from the source tree.
"""

import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import build_ffi

        build_ffi.install(os.path.join(self.build_lib, "shim"), in_package=True)


class BinaryDistribution(Distribution):
    """The wheel holds a shared object: it is specific to a platform and a
    CPython version."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibrary}, distclass=BinaryDistribution)
