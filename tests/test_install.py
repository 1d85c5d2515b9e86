"""Installing libdnsshim as a C developer would use it: pip install into a
fresh virtualenv (warning-free), then dnsshim-config, python -m shim,
pkg-config, CMake and static builds of a C program in another directory,
run with no LD_LIBRARY_PATH, from the clone's root and from elsewhere; an
editable install and the bare source tree, which say why they have no
library; dnsshimd, the parse service, run through the console script; the
symbols the shared object exports."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import pytest

from shim import layout
from dnsshim_build import pipeline
import malformed
from conftest import ROOT, build_code_in, require_cares, require_program
from shim import requirements

VERSION = pipeline.package_version()

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
MINIMAL_ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}


# (the installed fixture, one `pip install .` per session: conftest.py)


def site_packages(venv):
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def backend_output(log: str) -> list:
    """The lines the build backend printed, from `pip install -v`'s log: the
    indented lines after each "Running command" that is not pip's own
    subprocess installing the build dependencies."""
    lines, inside = [], False
    for line in log.splitlines():
        if line.startswith("  Running command "):
            inside = "pip subprocess" not in line
        elif line.strip() and not line.startswith("  "):
            inside = False
        elif inside:
            lines.append(line)
    return lines


def test_build_backend_prints_no_warning(installed):
    output = backend_output((installed.parent / "pip-install.log").read_text())
    assert any("running build_py" in line for line in output)  # the backend's output is there
    warnings = [line for line in output if "warn" in line.lower() or line.strip() == "!!"]
    assert warnings == []


def test_package_ships_types_and_license(installed):
    package = site_packages(installed) / "shim"
    assert (package / "py.typed").is_file()
    dist_info = site_packages(installed) / f"dnsshim-{VERSION}.dist-info"
    metadata = (dist_info / "METADATA").read_text()
    assert "License-Expression: MIT" in metadata.splitlines()
    assert (dist_info / "licenses" / "LICENSE").read_text().startswith("MIT License")


def test_the_package_has_the_worker_image_where_this_machine_builds_it(installed):
    """Beside the library where the firmware build can run here (parallelism
    above 1 then works), from an empty cache: pip's isolated build downloads
    cffi's source itself.  Else one line in the build's output saying why,
    and the same line beside the library, which the library quotes."""
    from dnsshim_build import worker

    lib = site_packages(installed) / "shim" / "lib"
    why = worker.unavailable()
    if not why:
        assert (lib / worker.NAME).is_file()
        assert not (lib / worker.NOTE).exists()
        defined, _ = worker.dynamic_symbols(lib / worker.NAME)
        assert "dns_shim_set_parallelism@@DNSSHIM_1.3" in defined
        assert list((installed.parent / "cache" / "dnsshim").glob("cffi-*.tar.gz"))
    else:
        assert not (lib / worker.NAME).exists()
        assert (lib / worker.NOTE).read_text() == why + "\n"
        output = backend_output((installed.parent / "pip-install.log").read_text())
        assert any(line.strip() == "dnsshim: no worker image, parallelism above 1 will be "
                   f"refused (DNS_SHIM_ERR_UNSUPPORTED): {why}" for line in output), output


def test_the_package_holds_no_build_code(installed):
    """pip install . installs the runtime and its tools, not the build."""
    assert (site_packages(installed) / "shim" / "glue.py").is_file()
    assert build_code_in(site_packages(installed)) == []


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("app")
    (d / "app.c").write_text(APP)
    (d / "good.bin").write_bytes(malformed.GOOD)
    return d


def shim_flags(venv, *options, cwd="/"):
    return subprocess.run([str(venv / "bin" / "python"), "-m", "shim", *options],
                          capture_output=True, text=True, check=True, cwd=cwd).stdout.strip()


def config(venv, *options, cwd="/"):
    """dnsshim-config OPTIONS, run in cwd."""
    return subprocess.run([str(venv / "bin" / "dnsshim-config"), *options], capture_output=True,
                          text=True, cwd=cwd)


def run_app(program, app_dir):
    result = subprocess.run([str(program), str(app_dir / "good.bin")], capture_output=True,
                            text=True, env=MINIMAL_ENV, cwd="/", timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith(f"version {VERSION} (CPython ")
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


CONFIG_OPTIONS = ["--cflags", "--libs", "--static-libs", "--pkgconfig-dir", "--prefix",
                  "--includedir", "--libdir", "--version"]


@pytest.mark.parametrize("where", ["clone root", "its shim/", "elsewhere"])
def test_dnsshim_config_and_python_m_shim_wherever_run(installed, tmp_path, where):
    cwd = {"clone root": ROOT, "its shim/": ROOT / "shim", "elsewhere": tmp_path}[where]
    package = site_packages(installed) / "shim"
    lib, include = package / "lib", package / "include"
    expected = {"--cflags": f"-I{include}", "--libs": f"-L{lib} -Wl,-rpath,{lib} -ldnsshim",
                "--pkgconfig-dir": str(lib / "pkgconfig"), "--prefix": str(package),
                "--includedir": str(include), "--libdir": str(lib), "--version": VERSION}
    for option, value in expected.items():
        result = config(installed, option, cwd=cwd)
        assert (result.returncode, result.stdout, result.stderr) == (0, value + "\n", ""), option
    static = config(installed, "--static-libs", cwd=cwd).stdout.split()
    assert static[0] == str(lib / "libdnsshim.a") and any(f.startswith("-lpython3") for f in static)
    # Several options: one line, in the order given; python -m shim says the same.
    together = config(installed, *CONFIG_OPTIONS, cwd=cwd).stdout
    assert together.count("\n") == 1 and together.startswith(expected["--cflags"] + " -L")
    assert shim_flags(installed, *CONFIG_OPTIONS, cwd=cwd) == together.strip()


def test_dnsshim_config_help_and_usage(installed):
    help_text = config(installed, "--help")
    assert help_text.returncode == 0
    for option in CONFIG_OPTIONS:
        assert option in help_text.stdout
    bare = config(installed)
    assert bare.returncode == 2 and bare.stdout == "" and "usage: dnsshim-config" in bare.stderr
    assert config(installed, "--bogus").returncode == 2
    # The bundle and the firmware object are the build's: an installed package
    # carries no build code, and says where to run them, in one line.
    assert "dnsshim-config bundle --help" in help_text.stdout
    package = site_packages(installed) / "shim"
    for form in ("bundle", "firmware"):
        refused = config(installed, form, "--help")
        assert (refused.returncode, refused.stdout) == (2, "")
        assert refused.stderr == (
            f"dnsshim-config {form}: the {form} is built from the sources, and {package} is an "
            "installed package, which carries no build code: run it in a source checkout "
            f"(python build_ffi.py {form}, or dnsshim-config {form} after pip install -e .)\n")


def test_dnsshim_config_bundle_in_a_source_checkout(editable):
    """An editable install is a source checkout: dnsshim-config bundle runs
    build_ffi.py's, under its own name."""
    venv, _ = editable
    bundle_help = config(venv, "bundle", "--help")
    assert bundle_help.returncode == 0 and "usage: dnsshim-config bundle" in bundle_help.stdout
    for option in ("--strip", "--optimize", "--extra-module"):
        assert option in bundle_help.stdout


def test_dnsshim_config_build_from_the_clone_root(installed, app_dir):
    """The README's `cc app.c $(dnsshim-config --cflags --libs)`, run in the
    clone, where Python would see the source tree's shim/ first."""
    flags = config(installed, "--cflags", "--libs", cwd=ROOT).stdout.split()
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(app_dir / "app_config")],
                   check=True, cwd=ROOT)
    run_app(app_dir / "app_config", app_dir)


# What is not the project's source: virtualenvs, build output, and what an
# editable install builds in place.
_NOT_SOURCE = {".git", ".venv", "build", ".pytest_cache", "__pycache__", "ims.bin"}
_IN_PLACE = {"lib", "include", "bin"}


def source_copy(dst):
    """A copy of this checkout's source tree, as a fresh clone has it."""
    def ignore(directory, names):
        in_package = os.path.abspath(directory) == str(ROOT / "shim")
        return [n for n in names if n in _NOT_SOURCE or n.startswith(".venv")
                or n.endswith(".egg-info") or (in_package and n in _IN_PLACE)]
    shutil.copytree(ROOT, dst, ignore=ignore, symlinks=True)
    return dst


@pytest.fixture(scope="module")
def editable(tmp_path_factory):
    """(venv, clone): `pip install -e .` in a copy of the source tree, which
    builds the library into the clone's shim/."""
    d = tmp_path_factory.mktemp("editable")
    clone, venv = source_copy(d / "clone"), d / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", str(clone)],
                            capture_output=True, text=True, timeout=900, cwd=clone)
    assert result.returncode == 0, result.stderr[-3000:]
    return venv, clone


@pytest.mark.parametrize("where", ["clone root", "elsewhere"])
def test_editable_install_finds_its_library(editable, app_dir, tmp_path, where):
    venv, clone = editable
    cwd = clone if where == "clone root" else tmp_path
    lib = clone / "shim" / "lib"
    expected = f"-I{clone / 'shim' / 'include'} -L{lib} -Wl,-rpath,{lib} -ldnsshim"
    assert config(venv, "--cflags", "--libs", cwd=cwd).stdout.strip() == expected
    assert shim_flags(venv, "--cflags", "--libs", cwd=cwd) == expected
    program = tmp_path / "app_editable"
    subprocess.run(["cc", str(app_dir / "app.c"), *expected.split(), "-o", str(program)],
                   check=True, cwd=cwd)
    run_app(program, app_dir)
    dump = subprocess.run([str(venv / "bin" / "dnsshim-dump"), str(app_dir / "good.bin")],
                          capture_output=True, text=True, env=MINIMAL_ENV, cwd=cwd)
    assert "example.com.\t300\tIN\tA\t192.0.2.1" in dump.stdout
    service = subprocess.run([str(venv / "bin" / "dnsshimd"), "--version"], capture_output=True,
                             text=True, env=MINIMAL_ENV, cwd=cwd, timeout=120)
    assert service.returncode == 0 and VERSION in service.stdout, service.stderr
    assert (clone / "shim" / "bin" / "dnsshimd").is_file()


def _refusal(command, cwd, env=None):
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_editable_install_without_its_library_says_why(tmp_path):
    clone, venv = source_copy(tmp_path / "clone"), tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "-e", str(clone)],
                   capture_output=True, check=True, timeout=900, cwd=clone)
    shutil.rmtree(clone / "shim" / "lib")
    for command in ([str(venv / "bin" / "python"), "-m", "shim", "--cflags"],
                    [str(venv / "bin" / "dnsshim-config"), "--libs"]):
        why = _refusal(command, clone)
        assert (f"{clone / 'shim'} is the source tree at {clone}, installed in editable mode "
                f"(pip install -e), but it holds no library ({clone / 'shim' / 'lib'} is "
                "missing): `pip install -e .` in the clone builds it there again") in why
    version = subprocess.run([str(venv / "bin" / "dnsshim-config"), "--version"],
                             capture_output=True, text=True, cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, VERSION + "\n")


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A virtualenv with nothing installed."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


def test_source_tree_says_it_is_not_installed(bare_venv, tmp_path):
    clone = source_copy(tmp_path / "clone")
    python = bare_venv / "bin" / "python"
    why = _refusal([str(python), "-m", "shim", "--pkgconfig-dir"], clone)
    assert why == (f"python -m shim: {clone / 'shim'} is the source tree at {clone} (Python "
                   "imports shim from the current directory first), not an installed package, "
                   f"and it holds no library; {python} has no installed dnsshim (`pip install .` "
                   "in the clone installs it)")


def test_incomplete_installation_says_so(bare_venv, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(ROOT / "shim", site / "shim",
                    ignore=shutil.ignore_patterns("__pycache__", *_IN_PLACE))
    why = _refusal([str(bare_venv / "bin" / "python"), "-m", "shim", "--libs"], tmp_path,
                   env=dict(os.environ, PYTHONPATH=str(site)))
    assert f"{site / 'shim'} holds no lib/libdnsshim.so: this installation is incomplete" in why


def test_pkg_config_build(installed, app_dir):
    require_program("pkg-config", "pkg-config")
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert subprocess.run(["pkg-config", "--modversion", "dnsshim"], env=env, capture_output=True,
                          text=True, check=True).stdout.strip() == VERSION
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(app_dir / "app")],
                   check=True, cwd=app_dir)
    run_app(app_dir / "app", app_dir)


def test_python_m_shim_flags_build(installed, app_dir):
    flags = shim_flags(installed, "--cflags", "--libs").split()
    subprocess.run(["cc", str(app_dir / "app.c"), *flags, "-o", str(app_dir / "app2")],
                   check=True)
    run_app(app_dir / "app2", app_dir)


def test_static_build(installed, app_dir):
    require_program("pkg-config", "pkg-config")
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


def test_static_build_with_dnsshim_config(installed, app_dir):
    program = app_dir / "app_static2"
    subprocess.run(["cc", str(app_dir / "app.c"), *config(installed, "--cflags").stdout.split(),
                    *config(installed, "--static-libs").stdout.split(), "-o", str(program)],
                   check=True)
    needed = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                            check=True).stdout
    assert "libdnsshim" not in needed and "libpython3" in needed
    run_app(program, app_dir)


def test_cmake_build(installed, app_dir, tmp_path):
    require_program("cmake", "cmake")
    require_program("pkg-config", "pkg-config")
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


def test_dnsshimd_runs_from_the_package(installed):
    """.venv/bin/dnsshimd (the console script) runs the parse service, the C
    program in the package's bin/ beside dnsshim-dump, which finds the
    package's libdnsshim from its own path: --version prints the package's
    version, as the program itself prints it."""
    program = site_packages(installed) / "shim" / "bin" / "dnsshimd"
    assert program.is_file() and os.access(program, os.X_OK)
    script = subprocess.run([str(installed / "bin" / "dnsshimd"), "--version"],
                            capture_output=True, text=True, env=MINIMAL_ENV, cwd="/", timeout=120)
    assert script.returncode == 0, script.stderr
    assert VERSION in script.stdout
    direct = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                            env=MINIMAL_ENV, cwd="/", timeout=120)
    assert (direct.returncode, direct.stdout) == (0, script.stdout)
    dynamic = subprocess.run(["readelf", "-d", str(program)], capture_output=True, text=True,
                             check=True).stdout
    assert "Shared library: [libdnsshim.so.1]" in dynamic and "[$ORIGIN/../lib]" in dynamic


def test_dnsshimd_without_its_program_says_so(tmp_path):
    """The dnsshimd command where the package holds no C program (the source
    tree without a built library): no Python form, one line and exit 1."""
    shutil.copytree(ROOT / "shim", tmp_path / "shim",
                    ignore=shutil.ignore_patterns("bin", "lib", "include", "__pycache__"))
    result = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, "
                             f"{str(tmp_path)!r}); from shim.__main__ import dnsshimd; "
                             "sys.exit(dnsshimd())", "--version"], capture_output=True,
                            text=True, cwd="/")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"dnsshimd: the package at {tmp_path / 'shim'} holds no dnsshimd program "
        f"({tmp_path / 'shim' / 'bin' / 'dnsshimd'} is missing): install the package again "
        "(pip install .)\n")


def test_another_installation_of_the_same_minor_version_runs_the_installed_library(
        installed, tmp_path):
    """DNS_SHIM_PYTHON naming Debian's own CPython of the library's minor
    version beside the one it was built with (a pyenv build): the library's
    private dnspython and cffi backend load with it, and the compiled modules
    Debian builds into its own libpython (_socket, _struct...), which the
    library's libpython looks for as files, come from the library's own
    installation. The answer is the one the library gives on its own."""
    debian = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.path.exists(debian):
        pytest.skip(f"no {debian} on this machine")
    if os.path.realpath(sys.base_prefix) == "/usr":
        pytest.skip(f"the library is built with {debian}'s installation: there is no other")
    sample = tmp_path / "ims.bin"
    subprocess.run([str(installed / "bin" / "python"), "-m", "shim.sample", str(sample)],
                   check=True, cwd="/")
    dump = [str(installed / "bin" / "dnsshim-dump"), str(sample)]
    own = subprocess.run(dump, capture_output=True, text=True, env=MINIMAL_ENV)
    other = subprocess.run(dump, capture_output=True, text=True,
                           env={**MINIMAL_ENV, "DNS_SHIM_PYTHON": debian})
    assert own.returncode == 0 and other.returncode == 0, other.stderr
    assert other.stdout == own.stdout
    assert "IN\tNAPTR\t10 50" in other.stdout
    assert other.stderr.startswith(f"dnsshim: runs on the CPython installation at /usr with "
                                   f"libpython {sys.version.split()[0]} (")
    assert len(other.stderr.splitlines()) == 1, other.stderr
    check = subprocess.run([str(installed / "bin" / "dnsshim-config"), "--check"],
                           capture_output=True, text=True,
                           env={**MINIMAL_ENV, "DNS_SHIM_PYTHON": debian})
    assert check.returncode == 0, check.stdout + check.stderr
    assert "check: ok: a sample response parsed (www.example.com A 192.0.2.1)" in check.stdout


def test_the_installation_found_from_the_package_is_named_plainly(installed, tmp_path):
    """The package copied into a virtualenv that lacks dnspython: the
    refusal names that virtualenv's python as <venv>/bin/pythonX.Y, not
    through site-packages/../../.."""
    tag = f"{sys.version_info.major}.{sys.version_info.minor}"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{tag}" / "site-packages"
    import _cffi_backend
    shutil.copy(_cffi_backend.__file__, site)
    shutil.copytree(site_packages(installed) / "shim", site / "shim", symlinks=True)
    result = subprocess.run([str(site / "shim" / "bin" / "dnsshim-dump"), "--check"],
                            capture_output=True, text=True, env=MINIMAL_ENV)
    assert result.returncode != 0
    python = venv / "bin" / f"python{tag}"
    error = [line for line in result.stdout.splitlines() if line.startswith("error: ")]
    assert error and error[0].startswith(
        f"error: cannot start: dnspython is not installed for {python} (the installation the "
        "shim package sits in): searched "), result.stdout + result.stderr
    assert error[0].endswith(f"install it: {python} -m pip install "
                             f"'dnspython>={requirements.DNSPYTHON}'")
    assert "/../" not in result.stdout + result.stderr


def test_the_manual_is_installed_where_man_finds_it(installed):
    """pip install . puts the pages in the virtualenv's share/man: man -M
    finds them, and so does man with the virtualenv's bin first on PATH
    (man-db derives share/man from it), as the README says."""
    require_program("man", "man-db")
    mandir = installed / "share" / "man"
    for section, page in (("1", "dnsshim-dump"), ("1", "dnsshim-config"),
                          ("3", "dns_shim_process_reply"), ("3", "process_dns_response"),
                          ("7", "dnsshim")):
        assert (mandir / f"man{section}" / f"{page}.{section}").is_file(), page
    found = subprocess.run(["man", "-M", str(mandir), "-w", "dns_shim_process_reply"],
                           capture_output=True, text=True)
    assert found.stdout.strip() == str(mandir / "man3" / "dns_shim_process_reply.3")
    active = subprocess.run(["man", "-w", "7", "dnsshim"], capture_output=True, text=True,
                            env={"PATH": f"{installed / 'bin'}:/usr/bin:/bin"})
    assert active.stdout.strip() == str(mandir / "man7" / "dnsshim.7"), active.stderr
    text = subprocess.run(["man", "-M", str(mandir), "-P", "cat", "dns_shim_process_reply"],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                               "MANWIDTH": "80"}).stdout
    assert "dns_shim_process_reply" in text and "DESCRIPTION" in text


def test_uninstall_is_for_a_prefix_install(installed):
    result = subprocess.run([str(installed / "bin" / "dnsshim-config"), "--uninstall"],
                            capture_output=True, text=True, env=MINIMAL_ENV)
    assert result.returncode == 1
    assert result.stderr == (f"dnsshim-config --uninstall: {site_packages(installed) / 'shim'} "
                             "is a package installed by pip, not a prefix install: remove it "
                             "with pip uninstall dnsshim\n")


def test_check_refuses_a_dns_shim_python_that_is_another_program(installed):
    """dnsshim-config --check says the start-up's line, never "ok"."""
    check = subprocess.run([str(installed / "bin" / "dnsshim-config"), "--check"],
                           capture_output=True, text=True,
                           env={**MINIMAL_ENV, "DNS_SHIM_PYTHON": "/bin/true"})
    assert check.returncode != 0
    assert check.stdout.splitlines()[-1] == (
        "check: the runtime does not start: cannot start: the python /bin/true (from "
        "DNS_SHIM_PYTHON) is not a python executable (its name, and its target's, does not "
        "start with \"python\", and no pyvenv.cfg is beside it): set DNS_SHIM_PYTHON to the "
        f"python executable of a CPython {sys.version_info.major}.{sys.version_info.minor} "
        "installation, or unset it"), check.stdout + check.stderr


# ---- symbols and SONAME ----------------------------------------------------------

#: Every exported symbol with its symbol version: the node of the release
#: that added it (written out here, not read from pipeline.SYMBOL_VERSIONS).
ALLOWED = {"process_dns_response": "DNSSHIM_1.0", "dns_shim_init": "DNSSHIM_1.0",
           "dns_shim_process": "DNSSHIM_1.0", "dns_shim_register_callbacks": "DNSSHIM_1.0",
           "dns_shim_set_log_handler": "DNSSHIM_1.0", "dns_shim_strerror": "DNSSHIM_1.0",
           "dns_shim_version": "DNSSHIM_1.0", "PyInit__dnsshim_cffi": "DNSSHIM_1.0",
           "dns_shim_process_reply": "DNSSHIM_1.1", "dns_shim_last_error": "DNSSHIM_1.2",
           "dns_shim_set_allocator": "DNSSHIM_1.2", "dns_shim_set_memory_limit": "DNSSHIM_1.2",
           "dns_shim_set_parallelism": "DNSSHIM_1.3",
           # libdnsshim_ares's entry into the pool: no release's, no header's
           "dns_shim__pool_ares_take": "DNSSHIM_PRIVATE",
           "dns_shim__pool_ares_give": "DNSSHIM_PRIVATE",
           "dns_shim__own_init": "DNSSHIM_PRIVATE",
           "dns_shim__own_start": "DNSSHIM_PRIVATE",
           # libnss_dnsshim's default log handler
           "dns_shim__set_default_log_handler": "DNSSHIM_PRIVATE",
           "dns_shim__service_off": "DNSSHIM_PRIVATE",
           "dns_shim__process_reply_local": "DNSSHIM_PRIVATE",
           "dns_shim__runtime_fork": "DNSSHIM_PRIVATE",
           "dns_shim__service_exchange": "DNSSHIM_PRIVATE"}


@pytest.mark.parametrize("where", ["build", "installed"])
def test_only_our_symbols_are_exported(built, installed, where):
    lib = (built.lib if where == "build"
           else site_packages(installed) / "shim" / "lib" / "libdnsshim.so.1")
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(lib)],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines() if line.strip()]
    # The version nodes themselves are absolute symbols ("A DNSSHIM_1.0").
    assert {row[-1] for row in rows if row[1] == "A"} == {"DNSSHIM_1.0", "DNSSHIM_1.1",
                                                          "DNSSHIM_1.2", "DNSSHIM_1.3",
                                                          "DNSSHIM_PRIVATE"}
    functions = [row[-1] for row in rows if row[1] != "A"]
    assert all("@@" in f for f in functions), "every function has its default version"
    exported = dict(f.split("@@") for f in functions)
    assert exported == ALLOWED
    # DNSSHIM_1.1 inherits DNSSHIM_1.0 (readelf -V: "Parent 1: DNSSHIM_1.0").
    defs = subprocess.run(["readelf", "-V", "-W", str(lib)], capture_output=True, text=True,
                          check=True).stdout
    assert "Name: DNSSHIM_1.1" in defs and "Parent 1: DNSSHIM_1.0" in defs
    assert "Name: DNSSHIM_1.2" in defs and "Parent 1: DNSSHIM_1.1" in defs
    for libc_name in ("memcpy", "memset", "malloc", "free", "strlen"):
        assert libc_name not in exported
    soname = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                            check=True).stdout
    assert "Library soname: [libdnsshim.so.1]" in soname
    # the front a program links carries no Python; its runtime, beside it in
    # a build, exports the same list and links libpython
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", soname)
    assert not any(name.startswith("libpython") for name in needed), needed


def test_the_runtime_exports_what_the_front_does(built):
    runtime = built.dir / layout.RUNTIME_LIBRARY
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(runtime)],
                         capture_output=True, text=True, check=True).stdout
    functions = [row.split()[-1] for row in out.splitlines() if row.split()[1:2] != ["A"]]
    assert dict(f.split("@@") for f in functions) == ALLOWED
    dynamic = subprocess.run(["readelf", "-d", str(runtime)], capture_output=True, text=True,
                             check=True).stdout
    assert f"Library soname: [{layout.RUNTIME_LIBRARY}]" in dynamic
    assert "(SYMBOLIC)" in dynamic or "SYMBOLIC" in dynamic
    assert re.search(r"Shared library: \[libpython3", dynamic)


def test_the_c_ares_layer_s_front_carries_no_python_and_its_runtime_exports_one_table(built):
    """libdnsshim_ares.so.1, what a c-ares program links or preloads, needs
    libdnsshim's front and libc alone; its runtime beside it links libpython
    and exports one name, the table of the bridge's calls, in a private
    node, and nothing else (loaded RTLD_LOCAL, it stands in for no name of
    c-ares's)."""
    front = subprocess.run(["readelf", "-d", str(built.dir / pipeline.DNSSHIM_ARES.soname)],
                           capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", front)
    assert needed[0] == "libdnsshim.so.1" and not any(n.startswith("libpython") for n in needed)
    runtime = built.dir / pipeline.DNSSHIM_ARES.runtime_soname
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(runtime)],
                         capture_output=True, text=True, check=True).stdout
    defined = [row.split()[1:] for row in out.splitlines() if row.split()[1:2] != ["A"]]
    assert defined == [["D", "dnsshim_ares__runtime_entries@@DNSSHIM_ARES_RUNTIME_PRIVATE"]]
    dynamic = subprocess.run(["readelf", "-d", str(runtime)], capture_output=True, text=True,
                             check=True).stdout
    assert f"Library soname: [{pipeline.DNSSHIM_ARES.runtime_soname}]" in dynamic
    assert "SYMBOLIC" in dynamic and re.search(r"Shared library: \[libpython3", dynamic)


@pytest.mark.parametrize("compiler, flags", [
    ("cc", ["-x", "c", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
    ("c++", ["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-pedantic", "-Werror"]),
])
def test_header_compiles_on_its_own(tmp_path, compiler, flags):
    require_program(compiler, {"cc": "gcc", "c++": "g++"}[compiler])
    source = tmp_path / "use.c"
    source.write_text('#include "dns_shim.h"\n'
                      'int main(void) { return dns_shim_strerror(DNS_SHIM_OK) == 0 '
                      '&& DNS_SHIM_VERSION_NUMBER > 0; }\n')
    subprocess.run([compiler, *flags, f"-I{ROOT / 'csrc'}", "-fsyntax-only", str(source)],
                   check=True)


def test_dnsshim_ares_pkg_config_builds(installed, tmp_path):
    """libdnsshim_ares as a c-ares user links it: dnsshim-ares.pc, shared and
    static, the program written against c-ares's own <ares.h>."""
    require_cares()
    env = dict(os.environ, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))

    def pc(*args):
        return subprocess.run(["pkg-config", *args, "dnsshim-ares"], env=env, capture_output=True,
                              text=True, check=True).stdout.split()

    source = ROOT / "tests" / "c" / "ares_sip_locate.c"
    includes = [f"-I{ROOT / 'csrc' / 'tools'}", *pc("--cflags")]  # tool_util.h; <ares.h>: the system's
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


def test_dnsshim_config_answers_for_the_c_ares_layer(installed):
    """--ares: the flags of dnsshim-ares.pc, as pkg-config gives them (its
    ${pcfiledir}/../.. paths normalised)."""
    require_program("pkg-config", "pkg-config")

    def normal(flags):
        out = []
        for flag in flags:
            head = next((h for h in ("-L", "-I", "-Wl,-rpath,") if flag.startswith(h)), "")
            out.append(head + os.path.normpath(flag[len(head):]) if head else flag)
        return out

    env = dict(MINIMAL_ENV, PKG_CONFIG_PATH=shim_flags(installed, "--pkgconfig-dir"))
    for options, pc in ((["--ares", "--libs"], ["--libs", "dnsshim-ares"]),
                        (["--ares", "--cflags"], ["--cflags", "dnsshim-ares"]),
                        (["--cflags", "--libs"], ["--cflags", "--libs", "dnsshim"])):
        ours = config(installed, *options)
        assert ours.returncode == 0, ours.stderr
        theirs = subprocess.run(["pkg-config", *pc], capture_output=True, text=True, env=env,
                                check=True).stdout.split()
        assert ours.stdout.split() == normal(theirs), options
    lib = site_packages(installed) / "shim" / "lib"
    assert config(installed, "--ares", "--static-libs").stdout.split()[:3] == [
        str(lib / "libdnsshim_ares.a"), str(lib / "libdnsshim.a"), "-ldl"]


def test_dnsshim_config_ares_alone_says_what_it_needs(installed):
    """--ares changes --cflags, --libs and --static-libs: alone it says so
    (python -m shim too, wherever run), and it does not go with --check."""
    need = ("--ares needs --cflags, --libs or --static-libs: it makes them answer for "
            "libdnsshim_ares, the c-ares layer")
    for command, prog in (([str(installed / "bin" / "dnsshim-config")], "dnsshim-config"),
                          ([str(installed / "bin" / "python"), "-m", "shim"], "python -m shim")):
        for options, why in ((["--ares"], need), (["--ares", "--check"], "--check goes alone")):
            result = subprocess.run([*command, *options], capture_output=True, text=True,
                                    cwd="/", env=MINIMAL_ENV)
            assert (result.returncode, result.stdout) == (2, ""), options
            assert result.stderr.startswith(f"usage: {prog} "), result.stderr
            assert result.stderr.splitlines()[-1] == f"{prog}: {why}", result.stderr
    assert config(installed, "--ares", "--libdir").stdout == config(installed, "--libdir").stdout


def test_dnsshim_config_check_says_whether_parallelism_is_available(installed):
    """--check (the installation's dnsshim-dump --check) has a line on
    parallelism: the worker image beside the library where the install built
    one, else the library's reason; either way the installation works."""
    from dnsshim_build import worker

    lib = site_packages(installed) / "shim" / "lib"
    check = subprocess.run([str(installed / "bin" / "dnsshim-config"), "--check"],
                           capture_output=True, text=True, env=MINIMAL_ENV, cwd="/", timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    lines = check.stdout.splitlines()
    assert lines[-1] == "check: ok: a sample response parsed (www.example.com A 192.0.2.1)"
    assert [line for line in lines if line.startswith("parallelism: ")] == [lines[-2]]
    if not worker.unavailable():
        assert lines[-2] == f"parallelism: available (worker image {lib / worker.NAME})"
    else:
        assert lines[-2].startswith("parallelism: unavailable: ")


#: preloaded_host's lines for malformed.GOOD (example.com A 192.0.2.1) when
#: libdnsshim_ares answered its c-ares calls.
PRELOADED = ["status 0", "address 192.0.2.1", f"parser {pipeline.DNSSHIM_ARES.soname}",
             "python 1"]


def preload_from_libdir(bin_dir, where):
    """tests/c/preloaded_host.c (a program linked with -lcares alone) built
    in where and run there on malformed.GOOD as README.md says,
    ``LD_PRELOAD=$(dnsshim-config --libdir)/libdnsshim_ares.so.1 ./app``, with
    bin_dir (the installation's dnsshim-config) first on PATH; the result."""
    import cprograms
    from cprograms import STRICT

    require_cares()
    cflags, libs = cprograms.cares_flags()
    pipeline.compile_program([ROOT / "tests" / "c" / "preloaded_host.c"], where / "app",
                             libraries=(), cflags=(*STRICT, *cflags), flags=libs)
    (where / "good.bin").write_bytes(malformed.GOOD)
    alone = subprocess.run(["./app", "good.bin"], capture_output=True, text=True, cwd=where,
                           env=MINIMAL_ENV, timeout=120)
    assert alone.stdout.splitlines()[2:] == ["parser libcares.so.2", "python none"], alone
    return subprocess.run(
        ["sh", "-c", "LD_PRELOAD=$(dnsshim-config --libdir)/libdnsshim_ares.so.1 ./app good.bin"],
        capture_output=True, text=True, cwd=where, timeout=120,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"})


def test_libdir_holds_the_c_ares_layer_for_ld_preload(installed, tmp_path):
    """pip install .: dnsshim-config --libdir is the folder of
    libdnsshim_ares.so.1, and the README's preload line makes a c-ares
    program's parser the library's."""
    libdir = config(installed, "--libdir").stdout.strip()
    assert libdir == str(site_packages(installed) / "shim" / "lib")
    assert os.path.isfile(os.path.join(libdir, pipeline.DNSSHIM_ARES.soname))
    result = preload_from_libdir(installed / "bin", tmp_path)
    assert (result.returncode, result.stdout.splitlines(), result.stderr) == (0, PRELOADED, "")


def test_libdir_of_an_editable_install_holds_the_c_ares_layer(editable, tmp_path):
    venv, clone = editable
    assert config(venv, "--libdir").stdout.strip() == str(clone / "shim" / "lib")
    result = preload_from_libdir(venv / "bin", tmp_path)
    assert (result.returncode, result.stdout.splitlines()) == (0, PRELOADED), result.stderr


def _check_samples() -> dict:
    """The --check outputs the documentation shows: the README's
    troubleshooting sample and dnsshim-config(1)'s (its EXAMPLES), as lines."""
    import re

    samples = {}
    for name, path in (("README", ROOT / "README.md"),
                       ("dnsshim-config(1)", ROOT / "csrc" / "tools" / "dnsshim-config.1.md")):
        block = next(b for b in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(), re.S)
                     if "check: ok" in b)
        samples[name] = [l for l in block.splitlines() if not l.startswith("$ ")]
    return samples


def test_the_check_samples_are_what_check_prints(installed):
    """Each sample has the lines --check prints, in its order; its
    service, parallelism and check lines are the venv's but for the venv's
    path (no service answers it: a program of another CPython cannot parse,
    and the line says so)."""
    import re

    result = subprocess.run([str(installed / "bin" / "dnsshim-config"), "--check"],
                            capture_output=True, text=True, env=MINIMAL_ENV)
    assert result.returncode == 0, result.stderr
    real = result.stdout.splitlines()
    site = str(site_packages(installed))
    for name, sample in _check_samples().items():
        assert [l.split(":")[0] for l in sample] == [l.split(":")[0] for l in real], name
        assert sample[-1] == real[-1], name
        tag = sysconfig.get_python_version()
        assert sample[-3] == real[-3].replace(f"other than {tag} ", "other than 3.11 "), name
        assert real[-3].startswith("service: none answered: ") and \
            f"other than {tag} cannot" in real[-3]
        assert re.sub(r"/home/me/\.venv/lib/python3\.\d+/site-packages", "SITE", sample[-2]) == \
            real[-2].replace(site, "SITE"), name
