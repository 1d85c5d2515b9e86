"""CMake's find_package(dnsshim), from each installation: the package pip
installed (shim/lib/cmake/dnsshim/, found through dnsshim-config --prefix)
and a prefix install (python build_ffi.py --prefix: test_prefix_install's, shared); the Debian package's
in test_debian.py.

A project asking for ``find_package(dnsshim 1.2 REQUIRED)`` builds the C
test program against dnsshim::dnsshim and against dnsshim::dnsshim_static,
and the c-ares SIP locator against dnsshim::dnsshim_ares with c-ares's
headers; each runs from the build tree with no LD_LIBRARY_PATH, and after
``cmake --install`` from the installed place, and prints what the same
program prints built against this tree's library.  The version file
accepts 1.0, 1.2 and 1.0...<2.0 and refuses 1.3, 2.0 and 0.9, with CMake's
own message.
"""

import os
import subprocess
import textwrap

import pytest

from dnsshim_build import pipeline
import vectors
from conftest import ROOT, require_cares, require_program
from test_install import site_packages
from test_prefix_install import standalone  # noqa: F401 (fixture: the prefix install)

VERSION = pipeline.package_version()
ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
       "DNS_SHIM_SERVICE": "none"}

PROJECT = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.13)
    project(consumer C)
    find_package(dnsshim 1.2 REQUIRED)
    # the installed programs keep their run path to the libraries
    set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
    add_executable(dnsshim_test dnsshim_test.c)
    target_include_directories(dnsshim_test PRIVATE ${TOOLS})
    target_link_libraries(dnsshim_test PRIVATE dnsshim::dnsshim)
    add_executable(dnsshim_test_static dnsshim_test.c)
    target_include_directories(dnsshim_test_static PRIVATE ${TOOLS})
    target_link_libraries(dnsshim_test_static PRIVATE dnsshim::dnsshim_static)
    set(programs dnsshim_test dnsshim_test_static)
    if(WITH_ARES)
      find_package(PkgConfig REQUIRED)
      pkg_check_modules(CARES REQUIRED IMPORTED_TARGET libcares)
      add_executable(ares_sip_locate ares_sip_locate.c)
      target_include_directories(ares_sip_locate PRIVATE ${TOOLS})
      # ours before c-ares: its parsers answer c-ares's calls
      target_link_libraries(ares_sip_locate PRIVATE dnsshim::dnsshim_ares PkgConfig::CARES)
      list(APPEND programs ares_sip_locate)
    endif()
    install(TARGETS ${programs} DESTINATION bin)
    """)

VERSION_ONLY = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.19)
    project(v NONE)
    find_package(dnsshim ${REQ} REQUIRED)
    message(STATUS "found dnsshim ${dnsshim_VERSION}")
    """)


def _run(cmd, **kw):
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, env=ENV, **kw)


@pytest.fixture(scope="module", params=["package", "prefix"])
def installation(request):
    """The CMake prefix to search: the pip-installed package's directory (as
    dnsshim-config --prefix says it), or the prefix."""
    if request.param == "prefix":
        return request.getfixturevalue("standalone")[0]
    venv = request.getfixturevalue("installed")
    answer = _run([venv / "bin" / "dnsshim-config", "--prefix"], cwd="/")
    assert answer.returncode == 0, answer.stderr
    assert answer.stdout.strip() == str(site_packages(venv) / "shim")
    return answer.stdout.strip()


def test_programs_build_and_run(installation, built, tmp_path):
    require_program("cmake", "cmake")
    try:
        require_cares()
        with_ares = True
    except pytest.skip.Exception:
        if os.environ.get("CI"):
            raise
        with_ares = False
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(PROJECT)
    for name in ("dnsshim_test.c", "ares_sip_locate.c"):
        (source / name).write_bytes((ROOT / "tests" / "c" / name).read_bytes())
    build, dest = tmp_path / "build", tmp_path / "installed"
    for cmd in (["cmake", "-S", source, "-B", build, f"-DCMAKE_PREFIX_PATH={installation}",
                 f"-DTOOLS={pipeline.TOOLS}", f"-DWITH_ARES={'ON' if with_ares else 'OFF'}",
                 f"-DCMAKE_INSTALL_PREFIX={dest}"],
                ["cmake", "--build", build], ["cmake", "--install", build]):
        result = _run(cmd)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    files = []
    for name in vectors.NAMES:
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    expected = _run([built.test_prog, *files]).stdout
    assert expected.count("status 0") >= len(vectors.NAMES) - 2
    for where in (build, dest / "bin"):
        for program in ("dnsshim_test", "dnsshim_test_static"):
            result = _run([where / program, *files], cwd="/")
            assert result.returncode == 0, result.stderr[-2000:]
            assert result.stdout == expected, (where, program)
    if with_ares:
        from test_ares import _ims_messages

        messages = _ims_messages(tmp_path)
        theirs = _run([built.dir / "ares_sip_locate", *messages])
        assert theirs.returncode == 0 and theirs.stdout
        for where in (build, dest / "bin"):
            ours = _run([where / "ares_sip_locate", *messages], cwd="/")
            assert ours.returncode == 0, ours.stderr
            assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("request_, found", [
    ("1.0", True), ("1.2", True), ("1.3", True), (VERSION, True), ("1", True),
    ("1.0...<2.0", True), ("1.4", False), ("2.0", False), ("0.9", False), ("1.4...<2.0", False)])
def test_version_requests(installation, tmp_path, request_, found):
    require_program("cmake", "cmake")
    (tmp_path / "CMakeLists.txt").write_text(VERSION_ONLY.replace("${REQ}", request_))
    result = _run(["cmake", "-S", tmp_path, "-B", tmp_path / "build",
                   f"-DCMAKE_PREFIX_PATH={installation}"])
    if found:
        assert result.returncode == 0, result.stderr[-2000:]
        assert f"-- found dnsshim {VERSION}" in result.stdout
    else:
        assert result.returncode != 0
        text = " ".join(result.stderr.split())
        assert "but it set dnsshim_FOUND to FALSE" not in text
        assert f"version: {VERSION}" in text and "compatible with requested version" in text, \
            text[-1500:]
