"""The README's two commands, as /work/shared/tools/fresh-debian and a new
user take them (the first two fenced shell blocks that make a virtualenv):
the install, then the test suite.

* they use two virtualenvs: the second, an editable install, leaves the
  first's `.venv` (and every C program built with its dnsshim-config) as it
  was;
* CI runs the test command exactly as written;
* what the first writes into the clone (its sample) is named in the README
  and ignored by git;
* run in order in a copy of the clone (the second without its last step,
  pytest, which is this suite), a C program built with the first's
  dnsshim-config, as the README shows, runs the same after the second.

And the README as a manual: at most 600 lines (the reference is the manual
pages'), its sample output of the project's own version, and commands that
work for the install it describes.
"""

import re
import subprocess

import pytest

import shim
from conftest import USER_ENV, ROOT, require_program
from test_install import source_copy


README = (ROOT / "README.md").read_text(encoding="utf-8")


def _commands() -> list:
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    return [b.strip() for b in blocks if "venv" in b][:2]


def _venvs(command: str) -> set:
    return set(re.findall(r"python3 -m venv (\S+)", command))


def test_the_two_commands_are_the_install_and_the_test_suite():
    install, test = _commands()
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install . ")
    assert test.endswith("/bin/python -m pytest")
    assert "pip install -e '.[test]'" in test


def test_the_test_command_leaves_the_install_commands_virtualenv_alone():
    install, test = _commands()
    assert _venvs(install) == {".venv"}
    (own,) = _venvs(test)
    assert own != ".venv"
    # every path of the test command is under its own virtualenv
    assert re.findall(r"(\S+)/bin/", test) == [own, own]
    assert not re.search(r"(^|\s)\.venv/", test)


def test_ci_runs_the_test_command_as_written():
    _, test = _commands()
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test in lines


def test_what_the_install_command_writes_is_named_and_ignored():
    install, _ = _commands()
    written = re.findall(r"-m shim\.sample (\S+)", install)
    assert written == ["ims.bin"]
    assert "written to `ims.bin` in the current folder" in " ".join(README.split())
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "ims.bin"])
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    assert ignored.returncode == 0


def _shell(command: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=1200, env=USER_ENV)


def test_a_program_built_after_the_install_command_runs_after_the_test_command(tmp_path):
    require_program("cc", "gcc")
    clone = source_copy(tmp_path / "clone")
    install, test = _commands()
    first = _shell(install, clone)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "IN\tNAPTR\t10 50" in first.stdout
    app = tmp_path / "app.c"
    app.write_text("#include <dns_shim.h>\n#include <stdio.h>\n"
                   "int main(void) { printf(\"%s\\n\", dns_shim_version());"
                   " return dns_shim_init() != 0; }\n")
    build = _shell(f"cc {app} $(.venv/bin/dnsshim-config --cflags --libs) -o {tmp_path}/app",
                   clone)
    assert build.returncode == 0, build.stderr
    before = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"})
    assert before.returncode == 0, before.stderr
    setup = test.rsplit(" && ", 1)[0]  # the venv and the editable install, not pytest
    assert setup != test and setup.endswith("pip install -e '.[test]'")
    second = _shell(setup, clone)
    assert second.returncode == 0, second.stderr[-3000:]
    after = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
    assert (after.returncode, after.stdout, after.stderr) == (0, before.stdout, before.stderr)


def _release_packages(release: str) -> set:
    """The packages the README's apt-get install lines name for a Debian
    release, read as /work/shared/tools/fresh-debian reads them: a line
    whose own text or the three lines before name "Debian 12" or "Debian 13"
    is for that release only, any other for both."""
    lines = README.splitlines()
    out = set()
    for i, line in enumerate(lines):
        for m in re.finditer(r"apt-get install([^`]*)", line):
            named = set(re.findall(r"Debian (1[23])\b", " ".join(lines[max(0, i - 3):i + 1])))
            if named and release not in named:
                continue
            out |= {w for w in m.group(1).split()
                    if not w.startswith("-") and re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", w)}
    return out


def test_each_release_is_named_only_its_own_cpython_packages():
    """Debian 12 has no python3.13 and Debian 13 no python3.11: a package of
    the other release on a line read as for both stops a new user's apt-get."""
    assert {"python3.11", "libpython3.11-dev"} <= _release_packages("12")
    assert {"python3.13", "libpython3.13-dev"} <= _release_packages("13")
    assert not {p for p in _release_packages("12") if "3.13" in p}
    assert not {p for p in _release_packages("13") if "3.11" in p}


# ---- the README as a manual ------------------------------------------------------

#: The README is the manual's overview; the reference is the manual pages'.
MAX_LINES = 600


def _shell_blocks() -> list:
    return re.findall(r"```sh\n(.*?)```", README, re.S)


def test_the_readme_is_at_most_600_lines():
    assert len(README.splitlines()) <= MAX_LINES


def test_check_sample_shows_the_current_version():
    """The troubleshooting section's dnsshim-config --check output is of
    this release: the library's version and the shim package's."""
    section = README.split("## Troubleshooting", 1)[1]
    sample = re.search(r"```\n(library: .*?)```", section, re.S).group(1)
    library = re.search(r"^library: \S+, (\d+\.\d+\.\d+) \(CPython", sample, re.M).group(1)
    package = re.search(r"\bshim (\d+\.\d+\.\d+) \(", sample).group(1)
    assert library == package == shim.__version__
    # and every dns_shim_version() the README shows
    assert set(re.findall(r"\b\d+\.\d+\.\d+ \(CPython", README)) == {f"{shim.__version__} (CPython"}


def test_preload_works_for_the_install_the_readme_makes():
    """ld.so takes a bare LD_PRELOAD name only from its search path: the
    README's commands preload libdnsshim_ares by the path its virtualenv's
    dnsshim-config prints, and the bare name is said to be for a system
    install only."""
    lines = [l for b in _shell_blocks() for l in b.splitlines() if "LD_PRELOAD=" in l]
    assert lines
    for line in lines:
        assert re.search(r"LD_PRELOAD=\$\(\.venv/bin/dnsshim-config --libdir\)/libdnsshim_ares\.so\.1 ",
                         line), line
    flat = " ".join(README.split())
    for m in re.finditer(r"LD_PRELOAD=libdnsshim_ares", flat):
        assert "system install" in flat[m.start():m.start() + 200], flat[m.start():][:200]


def test_examples_are_copied_out_of_the_clone():
    """The README's commands run in the clone, whose examples/ is the tracked
    source: the installed examples go to a folder outside it."""
    copies = [l for b in _shell_blocks() for l in b.splitlines() if l.startswith("cp ")]
    assert copies
    for line in copies:
        target = line.split("#")[0].split("&&")[0].split()[-1]
        assert target.startswith(("~/", "/")) and "examples" in target, line
