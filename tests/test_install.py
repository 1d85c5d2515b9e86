"""Installing libdnsshim as a C developer would use it: pip install into a
fresh virtualenv, then pkg-config, CMake and static builds of a C program in
another directory, run with no LD_LIBRARY_PATH; the prefix install; the
symbols the shared object exports."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import malformed
from conftest import ROOT

APP = r"""
#include <dns_shim.h>
#include <stdio.h>
#include <string.h>

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    (void)ctx;
    printf("%s A %u.%u.%u.%u\n", r->rr.owner, r->address[0], r->address[1], r->address[2],
           r->address[3]);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned char buf[512];
    size_t n;
    FILE *f = fopen(argv[1], "rb");
    dns_shim_callbacks cb;
    (void)argc;
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.on_a = on_a;
    printf("version %s number %d\n", dns_shim_version(), DNS_SHIM_VERSION_NUMBER);
    printf("status %d\n", dns_shim_process(buf, (int32_t)n, &cb));
    return 0;
}
"""

EXPECTED = "example.com A 192.0.2.1\nstatus 0\n"
MINIMAL_ENV = {"PATH": "/usr/bin:/bin"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A virtualenv with `pip install .` of this checkout."""
    d = tmp_path_factory.mktemp("installed")
    venv = d / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("app")
    (d / "app.c").write_text(APP)
    (d / "good.bin").write_bytes(malformed.GOOD)
    return d


def shim_flags(venv, *options):
    return subprocess.run([str(venv / "bin" / "python"), "-m", "shim", *options],
                          capture_output=True, text=True, check=True, cwd="/").stdout.strip()


def run_app(program, app_dir):
    result = subprocess.run([str(program), str(app_dir / "good.bin")], capture_output=True,
                            text=True, env=MINIMAL_ENV, cwd="/", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("version 1.1.0 (CPython ")
    assert result.stdout.split("\n", 1)[1] == EXPECTED
    return result


def test_python_m_shim_paths(installed):
    libdir = shim_flags(installed, "--libdir")
    assert libdir.endswith("site-packages/shim/lib")
    assert os.path.isfile(os.path.join(libdir, "libdnsshim.so.1"))
    assert os.path.isfile(os.path.join(shim_flags(installed, "--includedir"), "dns_shim.h"))
    assert os.path.isfile(os.path.join(shim_flags(installed, "--pkgconfig-dir"), "dnsshim.pc"))
    assert shim_flags(installed, "--cflags", "--libs") == (
        f"-I{shim_flags(installed, '--includedir')} -L{libdir} -Wl,-rpath,{libdir} -ldnsshim")


def test_pkg_config_build(installed, app_dir):
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert subprocess.run(["pkg-config", "--modversion", "dnsshim"], env=env, capture_output=True,
                          text=True, check=True).stdout.strip() == "1.1.0"
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(app_dir / "app")],
                   check=True, cwd=app_dir)
    run_app(app_dir / "app", app_dir)


def test_python_m_shim_flags_build(installed, app_dir):
    flags = shim_flags(installed, "--cflags", "--libs").split()
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(app_dir / "app2")],
                   check=True)
    run_app(app_dir / "app2", app_dir)


def test_static_build(installed, app_dir):
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))
    cflags = subprocess.run(["pkg-config", "--cflags", "dnsshim"], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    static = subprocess.run(["pkg-config", "--static", "--libs", "dnsshim"], env=env,
                            capture_output=True, text=True, check=True).stdout.split()
    assert any(flag.startswith("-lpython3") for flag in static)
    program = app_dir / "app_static"
    subprocess.run(["cc", str(app_dir / "app.c"), *cflags, "-Wl,--as-needed",
                    "-Wl,-Bstatic", "-ldnsshim", "-Wl,-Bdynamic", *static, "-o", str(program)],
                   check=True)
    needed = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                            check=True).stdout
    assert "libdnsshim" not in needed and "libpython3" in needed
    run_app(program, app_dir)
    # python -m shim --static-libs says the same.
    program2 = app_dir / "app_static2"
    subprocess.run(["cc", str(app_dir / "app.c"), *cflags,
                    *shim_flags(installed, "--static-libs").split(), "-o", str(program2)],
                   check=True)
    run_app(program2, app_dir)


def test_cmake_build(installed, app_dir, tmp_path):
    if shutil.which("cmake") is None:
        if os.environ.get("CI"):
            pytest.fail("cmake is required in CI")
        pytest.skip("cmake is not installed")
    project = tmp_path / "cmake-app"
    project.mkdir()
    shutil.copy(app_dir / "app.c", project / "app.c")
    (project / "CMakeLists.txt").write_text(textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.13)
        project(app C)
        find_package(PkgConfig REQUIRED)
        pkg_check_modules(DNSSHIM REQUIRED IMPORTED_TARGET dnsshim)
        add_executable(app app.c)
        target_link_libraries(app PkgConfig::DNSSHIM)
        """))
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))
    build = project / "build"
    for cmd in (["cmake", "-S", str(project), "-B", str(build)], ["cmake", "--build", str(build)]):
        result = subprocess.run(cmd, env=env, capture_output=True, text=True)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    run_app(build / "app", app_dir)


def test_installed_dump_command(installed, tmp_path):
    sample = tmp_path / "ims.bin"
    subprocess.run([str(installed / "bin" / "python"), "-m", "shim.sample", str(sample)],
                   check=True, cwd="/")
    out = subprocess.run([str(installed / "bin" / "dnsshim-dump"), str(sample)],
                         capture_output=True, text=True, check=True, env=MINIMAL_ENV).stdout
    assert "IN\tNAPTR\t10 50 \"s\" \"SIP+D2T\" \"\" _sip._tcp.ims.mnc001" in out
    py = subprocess.run([str(installed / "bin" / "python"), "-c",
                         "import shim, sys; r = shim.parse_response(open(sys.argv[1], 'rb').read());"
                         "print(r.answer[0].services, r.additional[0].port)", str(sample)],
                        capture_output=True, text=True, check=True, cwd="/").stdout
    assert py.strip() == "b'SIP+D2T' 5060"


def test_prefix_install(tmp_path, app_dir):
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(prefix)],
                   check=True, capture_output=True)
    assert (prefix / "include" / "dns_shim.h").is_file()
    assert os.readlink(prefix / "lib" / "libdnsshim.so") == "libdnsshim.so.1"
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(tmp_path / "app")], check=True)
    run_app(tmp_path / "app", app_dir)
    out = subprocess.run([str(prefix / "bin" / "dnsshim-dump"), str(app_dir / "good.bin")],
                         capture_output=True, text=True, env=MINIMAL_ENV, check=True).stdout
    assert "example.com.\t300\tIN\tA\t192.0.2.1" in out


# ---- symbols and SONAME ----------------------------------------------------------

#: Every exported symbol with its symbol version: the node of the release
#: that added it (written out here, not read from build_ffi.SYMBOL_VERSIONS).
ALLOWED = {"process_dns_response": "DNSSHIM_1.0", "dns_shim_init": "DNSSHIM_1.0",
           "dns_shim_process": "DNSSHIM_1.0", "dns_shim_register_callbacks": "DNSSHIM_1.0",
           "dns_shim_set_log_handler": "DNSSHIM_1.0", "dns_shim_strerror": "DNSSHIM_1.0",
           "dns_shim_version": "DNSSHIM_1.0", "PyInit__dnsshim_cffi": "DNSSHIM_1.0",
           "dns_shim_process_reply": "DNSSHIM_1.1"}


@pytest.mark.parametrize("where", ["build", "installed"])
def test_only_our_symbols_are_exported(built, installed, where):
    lib = (built.lib if where == "build"
           else installed / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
           / "site-packages" / "shim" / "lib" / "libdnsshim.so.1")
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(lib)],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    # The version nodes themselves are absolute symbols ("A DNSSHIM_1.0").
    assert {row[-1] for row in rows if row[1] == "A"} == {"DNSSHIM_1.0", "DNSSHIM_1.1"}
    functions = [row[-1] for row in rows if row[1] != "A"]
    assert all("@@" in f for f in functions), "every function has its default version"
    exported = dict(f.split("@@") for f in functions)
    assert exported == ALLOWED
    # DNSSHIM_1.1 inherits DNSSHIM_1.0 (readelf -V: "Parent 1: DNSSHIM_1.0").
    defs = subprocess.run(["readelf", "-V", "-W", str(lib)], capture_output=True, text=True,
                          check=True).stdout
    assert "Name: DNSSHIM_1.1" in defs and "Parent 1: DNSSHIM_1.0" in defs
    for libc_name in ("memcpy", "memset", "malloc", "free", "strlen"):
        assert libc_name not in exported
    soname = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                            check=True).stdout
    assert "Library soname: [libdnsshim.so.1]" in soname


@pytest.mark.parametrize("compiler, flags", [
    ("cc", ["-x", "c", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
    ("c++", ["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
])
def test_header_compiles_on_its_own(tmp_path, compiler, flags):
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler}")
    source = tmp_path / "use.c"
    source.write_text('#include "dns_shim.h"\n'
                      'int main(void) { return dns_shim_strerror(DNS_SHIM_OK) == 0 '
                      '&& DNS_SHIM_VERSION_NUMBER > 0; }\n')
    subprocess.run([compiler, *flags, f"-I{ROOT / 'csrc'}", "-fsyntax-only", str(source)],
                   check=True)


def test_dnsshim_ares_pkg_config_builds(installed, tmp_path):
    """libdnsshim_ares as a c-ares user links it: dnsshim-ares.pc, shared and
    static, the program written against c-ares's own <ares.h>."""
    if subprocess.run(["pkg-config", "--exists", "libcares"]).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("CI must have c-ares's headers (.ci/run installs libc-ares-dev)")
        pytest.skip("needs c-ares's headers: apt-get install libc-ares-dev")
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))

    def pc(*args):
        return subprocess.run(["pkg-config", *args, "dnsshim-ares"], env=env, capture_output=True,
                              text=True, check=True).stdout.split()

    source = ROOT / "csrc" / "dnsshim_ares_ims.c"
    includes = [f"-I{ROOT / 'csrc'}", *pc("--cflags")]  # file_util.h; <ares.h> is the system's
    shared, static = tmp_path / "ims", tmp_path / "ims_static"
    subprocess.run(["cc", str(source), *includes, *pc("--libs"), "-o", str(shared)], check=True)
    subprocess.run(["cc", str(source), *includes, "-Wl,--as-needed", "-Wl,-Bstatic",
                    "-ldnsshim_ares", "-ldnsshim", "-Wl,-Bdynamic", *pc("--static", "--libs"),
                    "-o", str(static)], check=True)
    assert "libdnsshim" not in subprocess.run(["readelf", "-d", str(static)], capture_output=True,
                                              text=True, check=True).stdout
    from test_ares import _ims_messages
    messages = _ims_messages(tmp_path)
    outputs = []
    for program in (shared, static):
        result = subprocess.run([str(program), *map(str, messages)], capture_output=True,
                                text=True, env=MINIMAL_ENV, cwd="/", timeout=120)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("NAPTR 10 50 SIP+D2T -> _sip._tcp.ims.")
