"""glibc's own resolver tests against libnss_dnsshim: the tests of resolv/
that call the NSS host functions (tests/glibc_source.py: TESTS, what each
covers), built from Debian's source package of the glibc this machine runs.

Each runs as glibc's ``make check`` runs it (its own namespaces, its servers
on 127.0.0.1, the thread's ``_res`` pointed at them, every check of its
own), in nss_env's namespace, where the build's folder is the first the
private ld.so.cache lists:

* against dns, as glibc runs it: it must pass, or the machine cannot be the
  judge (the test fails, saying so);
* against libnss_dnsshim (DNSSHIM_TEST_HOSTS=dnsshim, which
  tests/c/glibc_nss_select.c puts where the harness names dns), the reply
  parsed in the process;
* the same with dnsshimd parsing.

Every check the test makes must pass against the module as against dns: a
failure prints the test's own report (each failed comparison, expected
against actual).  A machine that cannot run them (no namespaces: a chroot)
gets exit status 77 from each and the test skips, naming why; where glibc's
source cannot be had (not Debian, no network), the tests skip too, and fail
under CI=true.
"""

import os
import subprocess

import pytest

import glibc_source
import nss_env
from conftest import require_download, require_program
from test_nss import module_dir  # noqa: F401 (fixture)

#: What glibc's test driver exits with when the machine cannot run a test.
UNSUPPORTED = 77


@pytest.fixture(scope="session")
def glibc_tests():
    """The built tests (glibc_source.tests()), where this machine can run
    them: root and namespaces first (nss_env's rule), so that a chroot
    builds nothing it cannot run."""
    require_program("gcc", "gcc")
    require_program("unshare", "util-linux")
    if os.geteuid() != 0 or subprocess.run(["unshare", "--net", "--mount", "true"],
                                           capture_output=True).returncode != 0:
        nss_env._unavailable("root and network and mount namespaces")
    try:
        return glibc_source.tests()
    except glibc_source.Unavailable as why:
        require_download(str(why))
    except RuntimeError as why:
        # another glibc's support/ that does not build outside its tree:
        # said here, a failure in CI (Debian 12's builds)
        if os.environ.get("CI"):
            raise
        pytest.skip(f"glibc's resolver tests do not build against this glibc: {why}")


def _run(tmp_path, module_dir, program, hosts=None, service=None):  # noqa: F811
    """program run in nss_env's namespace; hosts: the module its hosts
    lookups go to (None: dns, the harness's own choice); service:
    dnsshimd's path, for the module's parse."""
    # glibc's driver kills a test after 20 s times TIMEOUTFACTOR, its knob
    # for a slow machine: tst-resolv-search's thousands of records through
    # the service take longer than 20 s on a loaded 2-core one
    env = {**nss_env.ENV, "TIMEOUTFACTOR": "10"}
    if hosts is not None:
        env["DNSSHIM_TEST_HOSTS"] = hosts
        if service is None:
            env["DNS_SHIM_SERVICE"] = "none"
    where = tmp_path / (hosts or "dns") / ("service" if service else "process")
    result = nss_env.run(where, {}, [nss_env.command([program], env=env, timeout=240)],
                         library_dirs=[module_dir], timeout=300, service=service)
    return result.commands[0], result


@pytest.mark.parametrize("name", list(glibc_source.TESTS))
def test_glibc_s_resolver_test_passes_against_the_module(name, glibc_tests, built, module_dir,
                                                         tmp_path):  # noqa: F811
    """The test against dns passes (else this machine cannot judge), and
    against libnss_dnsshim, parsing in the process and through dnsshimd,
    it passes too: exit status 0, every check of its own."""
    program = glibc_tests.program(name)
    reference, _ = _run(tmp_path, module_dir, program)
    if reference.returncode == UNSUPPORTED:
        pytest.skip(f"glibc's {name} cannot run on this machine: {reference.stdout[-300:]}")
    assert reference.returncode == 0, (
        f"glibc {glibc_tests.version}'s {name} fails against dns itself here, so it cannot "
        f"judge the module:\n{reference.stdout[-3000:]}{reference.stderr[-2000:]}")
    for through, service in (("process", None), ("service", built.service_prog)):
        mine, run = _run(tmp_path, module_dir, program, "dnsshim", service)
        assert mine.returncode == 0, (
            f"glibc {glibc_tests.version}'s {name} ({glibc_source.TESTS[name]}) against "
            f"libnss_dnsshim, parsed in the {through}: exit status {mine.returncode}\n"
            f"{mine.stdout[-6000:]}{mine.stderr[-2000:]}")
        if service is not None:
            assert "serving /run/dnsshim/parse.sock" in run.service_log, run.service_log
