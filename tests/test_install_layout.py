"""The one description of where each file goes (shim/layout.py), and that
the installers, dnsshim-config, the Debian packaging and the C runtime's
location follow it.

The installed trees themselves are checked with literal paths, independently
of the model, by the tests of each form (test_install, test_prefix_install,
test_bundle, test_firmware, test_debian); here: that every reader takes its
paths from the model, so that a moved part moves everywhere at once.
"""

import dataclasses
import subprocess
import sysconfig
from pathlib import Path

import pytest

from conftest import ROOT, require_program
from dnsshim_build import install, pipeline
from shim import config, layout

TAG = sysconfig.get_python_version()


def _libraries():
    return [(lib.name, lib.soname, lib.link_name, lib.archive) for lib in pipeline.LIBRARIES]


def _install_lines(package: str) -> list:
    text = (ROOT / "debian" / f"{package}.install").read_text(encoding="utf-8")
    return sorted(line.strip() for line in text.splitlines()
                  if line.strip() and not line.startswith("#"))


def _model_lines(**changes) -> dict:
    return layout.debian_install_lines(_libraries(), pc_names=[l.pc_name for l in pipeline.LIBRARIES],
                                       **changes)


@pytest.mark.python_independent
@pytest.mark.parametrize("package", sorted(layout.DEBIAN_PACKAGES))
def test_each_debian_install_list_is_what_the_model_places(package):
    assert _install_lines(package) == sorted(_model_lines()[package])


@pytest.mark.python_independent
def test_the_debian_check_fails_when_a_part_moves(monkeypatch):
    """The comparison above can fail: the suppressions moved in the model
    no longer match debian/libdnsshim-dev.install."""
    moved = dataclasses.replace(layout.DEBIAN, moved={"data": "share/valgrind"})
    monkeypatch.setattr(layout, "DEBIAN", moved)
    assert _install_lines("libdnsshim-dev") != sorted(_model_lines()["libdnsshim-dev"])
    assert "usr/share/valgrind/libdnsshim.supp" in _model_lines()["libdnsshim-dev"]


@pytest.mark.python_independent
def test_every_form_has_a_build_mode_or_names_the_one_it_installs():
    built = {mode.value for mode in pipeline.Mode}
    for name, form in layout.FORMS.items():
        assert (form.built_as or name) in built, name
    assert layout.DEBIAN.built_as == "prefix"


@pytest.mark.python_independent
def test_every_part_stays_under_the_root_but_a_package_s_python_side():
    for form in layout.FORMS.values():
        for part in form.parts:
            assert not form.relative(part, TAG).startswith(".."), (form.name, part)
    assert layout.PACKAGE.python_from_lib() == ".."  # the package is the lib's parent


@pytest.mark.python_independent
@pytest.mark.parametrize("mode", list(pipeline.Mode), ids=lambda m: m.value)
def test_the_c_runtime_is_told_its_form_s_layout(mode):
    """runtime_defines carries exactly the form's C defines (for the shared
    object; a static archive finds nothing from a path of its own)."""
    shared = pipeline.runtime_defines(mode, True)
    static = pipeline.runtime_defines(mode, False)
    for name, value in mode.form.c_defines(True).items():
        assert f"-D{name}={value}" in shared
    for name, value in mode.form.c_defines(False).items():
        assert f"-D{name}={value}" in static
    expected = {
        "source tree": {"DNS_SHIM_IN_PACKAGE": 0, "DNS_SHIM_BUNDLE": 0, "DNS_SHIM_FIRMWARE": 0},
        "package": {"DNS_SHIM_IN_PACKAGE": 1, "DNS_SHIM_BUNDLE": 0, "DNS_SHIM_FIRMWARE": 0,
                    "DNS_SHIM_PACKAGE_LIBDIR": '"shim/lib"'},
        "prefix": {"DNS_SHIM_IN_PACKAGE": 0, "DNS_SHIM_BUNDLE": 0, "DNS_SHIM_FIRMWARE": 0,
                   "DNS_SHIM_PRIVATE_DIR": '"dnsshim/python"', "DNS_SHIM_WORKER_DIR": '"dnsshim"'},
        "bundle": {"DNS_SHIM_IN_PACKAGE": 0, "DNS_SHIM_BUNDLE": 1, "DNS_SHIM_FIRMWARE": 0,
                   "DNS_SHIM_BUNDLE_LIBDIR": '"lib"'},
        "firmware": {"DNS_SHIM_IN_PACKAGE": 0, "DNS_SHIM_BUNDLE": 0, "DNS_SHIM_FIRMWARE": 1},
    }[mode.value]
    assert mode.form.c_defines(True) == expected


@pytest.mark.python_independent
def test_a_new_form_is_one_entry():
    """A form with its libraries in lib64 and its Python side elsewhere:
    the prefix installer, dnsshim-config and the C defines all follow."""
    form = layout.Form("lib64", layout.Finds.PRIVATE, layout.PREFIX.parts, libdir="lib64",
                       moved={"python": "{libdir}/dnsshim-private",
                              "worker": "{libdir}/dnsshim-private/image"})
    where = install.Layout.of("/opt/x", form=form)
    assert where.libdir == Path("/opt/x/lib64")
    assert where.private == Path("/opt/x/lib64/dnsshim-private")
    assert where.part("pkgconfig") == Path("/opt/x/lib64/pkgconfig")
    assert where.manifest == Path("/opt/x/share/dnsshim/install-manifest")
    assert form.c_defines() == {"DNS_SHIM_IN_PACKAGE": 0, "DNS_SHIM_BUNDLE": 0,
                                "DNS_SHIM_FIRMWARE": 0,
                                "DNS_SHIM_PRIVATE_DIR": '"dnsshim-private"',
                                "DNS_SHIM_WORKER_DIR": '"dnsshim-private/image"'}
    assert where.part("worker") == Path("/opt/x/lib64/dnsshim-private/image")
    found = config.Installation(Path("/opt/x"), form=form)
    assert (found.libdir, found.pkgconfig_dir, found.includedir, found.suppressions) == (
        Path("/opt/x/lib64"), Path("/opt/x/lib64/pkgconfig"), Path("/opt/x/include"),
        Path("/opt/x/share/dnsshim/libdnsshim.supp"))


@pytest.mark.python_independent
def test_a_moved_libdir_moves_the_parts_under_it():
    """--libdir: the libraries' parts follow it, the others stay under the
    prefix; the installer and dnsshim-config agree."""
    where = install.Layout.of("/usr", libdir="/usr/lib/x86_64-linux-gnu")
    assert where.private == Path("/usr/lib/x86_64-linux-gnu/dnsshim/python")
    assert where.part("cmake") == Path("/usr/lib/x86_64-linux-gnu/cmake/dnsshim")
    assert where.includedir == Path("/usr/include")
    found = config.Installation(Path("/usr"), Path("/usr/lib/x86_64-linux-gnu"), layout.PREFIX)
    assert found.pkgconfig_dir == where.part("pkgconfig")
    assert found.suppressions == where.datadir / "libdnsshim.supp"


def test_the_runtime_finds_its_package_by_the_model_s_directory(tmp_path):
    """The C compares its own directory with the form's: compiled with
    another package libdir, runtime.c's locator looks for that one (the
    define reaches the code, it is not a comment)."""
    gcc = require_program("gcc", "gcc")
    generated = pipeline.generated_headers(pipeline.DNSSHIM, tmp_path / "generated")
    defines = [d for d in pipeline.runtime_defines(pipeline.Mode.PACKAGE)
               if not d.startswith("-DDNS_SHIM_PACKAGE_LIBDIR=")]
    out = tmp_path / "runtime.s"
    subprocess.run([gcc, "-S", "-o", str(out), "-std=gnu11", "-fvisibility=hidden", "-pthread",
                    *defines, '-DDNS_SHIM_PACKAGE_LIBDIR="pkg/libs64"', f"-I{pipeline.CSRC}",
                    f"-I{generated}", f"-I{sysconfig.get_paths()['include']}",
                    str(ROOT / "csrc" / "lib" / "runtime.c")], check=True, timeout=300)
    assembly = out.read_text()
    assert "/pkg/libs64" in assembly and "/shim/lib" not in assembly
