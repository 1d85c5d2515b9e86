"""libnss_dnsshim under the sanitizers: the module's own C (the transport to
the servers, the replies matched to their questions, the answer's assembly
into the caller's buffer and ERANGE, the search list, the parse service's
client and its reader of the service's answers) built with AddressSanitizer
and UndefinedBehaviorSanitizer (the sanitized build, tests/sanitizers.py)
and with ThreadSanitizer (test_races.py's build), and loaded by glibc, as
every program loads it, into programs that are not instrumented (getent,
python3, tests/c/nss_calls.c) with the sanitizers' runtimes preloaded, or
into one that is (tests/c/nss_lookups.c, built with -fsanitize=thread).
Each run is made with the reply parsed in the process (the module loads the
sanitized libdnsshim.so.1 beside it) and through the parse service (the
module loads nothing more).

Every output is dns's, as test_nss.py compares the plain module's: a run
under a sanitizer that gave anything else, or printed any report, fails.
LeakSanitizer is left off in the uninstrumented hosts, as
sanitizers.Sanitized.python_host_env leaves it (their own allocations are
not this project's); test_nss.py's valgrind run checks the module's leaks.
"""

import subprocess

import pytest

import nss_env
import sanitizers
from cprograms import STRICT
from dnsshim_build import pipeline
from test_nss import (CALLS_ZONE, DNS, DNSSHIM, LOOKUPS, PYTHON_CALLS, RESOLV, _calls,
                      _commands, _outputs, _same_outcomes, nss_calls)  # noqa: F401 (fixture)
from test_races import FLAGS as TSAN_FLAGS, REPORT as TSAN_REPORT, TSAN_OPTIONS, tsan  # noqa: F401
from test_worker import image  # noqa: F401 (fixture of tsan)
from conftest import ROOT, require_program


@pytest.fixture(scope="module")
def asan_module(sanitized_build):
    """The sanitized build's folder: libnss_dnsshim.so.2 beside libdnsshim.so.1
    and its runtime, all instrumented."""
    require_program("unshare", "util-linux")
    for name in ("libnss_dnsshim.so.2", "libdnsshim.so.1"):
        assert (sanitized_build.dir / name).is_file(), name
    needed = subprocess.run(["readelf", "-d", str(sanitized_build.dir / "libnss_dnsshim.so.2")],
                            capture_output=True, text=True, check=True).stdout
    assert "libasan" in needed and "libubsan" in needed
    return sanitized_build.dir


def _asan_env(sanitized) -> dict:
    """A host's environment: nss_env's, with the sanitizers' part of an
    uninstrumented host's (Sanitized.python_host_env: the options, the
    runtimes preloaded, no leak check; the module's docstring says why)."""
    host = sanitized.python_host_env()
    return {**nss_env.ENV, **{k: host[k] for k in (*sanitizers.options(), "LD_PRELOAD")}}


def _clean(result, what):
    for c in result.commands:
        report = sanitizers.reports(c.stderr)
        assert not report and c.returncode != sanitizers.EXITCODE, \
            f"{what}: {c.argv}: sanitizer report:\n{report[:8000] or c.stderr[-3000:]}"


#: A lookup, then the files mapped into the process that made it.
MAPPED = r"""
import socket
socket.getaddrinfo("www.example.test", None)
print("\n".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "/" in l})))
"""


@pytest.mark.parametrize("through", ["process", "service"])
def test_every_lookup_under_asan_and_ubsan_prints_what_dns_prints(asan_module, sanitized_build,
                                                                  built, tmp_path, through):
    """getent's lookups and python3's calls (test_nss.py's comparison) with
    the sanitized module: no report, and each command's output, status and
    stderr dns's."""
    env = _asan_env(sanitized_build)
    cmds = [dict(c, env=env) for c in _commands()]
    cmds.append(nss_env.command(["/usr/bin/python3", "-c", MAPPED], env=env))
    service = built.service_prog if through == "service" else None
    dns = nss_env.run(tmp_path / "dns", CALLS_ZONE, _commands(), nsswitch=DNS, resolv=RESOLV,
                      timeout=240)
    ours = nss_env.run(tmp_path / "dnsshim", CALLS_ZONE, cmds, nsswitch=DNSSHIM, resolv=RESOLV,
                       library_dirs=[asan_module], timeout=600, service=service)
    _clean(ours, through)
    assert len(ours.commands) == len(LOOKUPS) + 2
    for mine, theirs in zip(_outputs(ours)[:-1], _outputs(dns)):
        assert mine == theirs
    assert '"ok"' in ours.commands[-2].stdout and len(PYTHON_CALLS) > 5
    # what ran is the instrumented module, with its runtimes, and (in the
    # process) the instrumented library it parses with
    mapped = set(ours.commands[-1].stdout.split())
    assert str(asan_module / "libnss_dnsshim.so.2") in mapped, mapped
    assert any("libasan.so" in m for m in mapped) and any("libubsan.so" in m for m in mapped)
    assert (str(asan_module / "libdnsshim.so.1") in mapped) == (through == "process"), mapped
    if service is not None:
        assert "serving /run/dnsshim/parse.sock" in ours.service_log


@pytest.mark.parametrize("through", ["process", "service"])
def test_every_entry_point_and_buffer_size_under_asan_and_ubsan_is_dns_s(  # noqa: F811
        asan_module, sanitized_build, built, nss_calls, tmp_path, through):
    """The module's entry points called directly with every buffer size from
    0 to 127 octets (each buffer allocated to its size: a write or read past
    it is ASan's), and the 50 addresses that need 2,048 octets: every
    outcome dns's, ERANGE where dns says it, no report."""
    lines = ["name4 {m} many.example.test 1024", "name4 {m} many.example.test 2048",
             "getaddrinfo many.example.test unspec", "getaddrinfo alias unspec",
             "api_addr 192.0.2.9 inet 4 1024", "addr {m} ::1 inet6 16 1024"]
    for size in range(128):
        lines += [f"name4 {{m}} alias.example.test {size}",
                  f"name3 {{m}} alias.example.test inet {size}",
                  f"name2 {{m}} www.example.test inet6 {size}",
                  f"addr2 {{m}} 192.0.2.1 inet 4 {size}"]
    service = built.service_prog if through == "service" else None
    runs = _calls(asan_module, nss_calls, tmp_path, CALLS_ZONE, lines,
                  env=_asan_env(sanitized_build),
                  timeout=600, service=service)
    for name in ("dns", "dnsshim"):
        _clean(runs[name][1], name)
    got = _same_outcomes(runs, lines)
    many = got["name4 {m} many.example.test 2048"]
    assert many.startswith("SUCCESS ") and many.count("(inet6 ") == 40
    assert got["name4 {m} alias.example.test 0"].startswith("TRYAGAIN errno=ERANGE ")


# ---- ThreadSanitizer ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tsan_lookups(tsan):  # noqa: F811 - tsan is the fixture
    """nss_lookups built with -fsanitize=thread beside test_races.py's TSan
    build (whose libnss_dnsshim.so.2 is instrumented too)."""
    assert (tsan / "libnss_dnsshim.so.2").is_file()
    return pipeline.compile_program([ROOT / "tests" / "c" / "nss_lookups.c"],
                                    tsan / "nss_lookups", libraries=(),
                                    cflags=(*STRICT, *TSAN_FLAGS))


@pytest.mark.parametrize("through", ["process", "service"])
def test_threads_looking_up_at_once_under_tsan_race_on_nothing(tsan, tsan_lookups, built,
                                                                tmp_path, through):
    """Eight threads looking up at once through the TSan-built module, 10
    times each, then the child of a fork: every answer the first, and
    ThreadSanitizer reports nothing."""
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(tsan / "libnss_dnsshim.so.2")],
                               capture_output=True, text=True, check=True).stdout
    assert "__tsan_func_entry" in undefined  # the module's own C is instrumented
    env = {**nss_env.ENV, "TSAN_OPTIONS": TSAN_OPTIONS}
    service = built.service_prog if through == "service" else None
    result = nss_env.run(tmp_path, CALLS_ZONE,
                         [nss_env.command([tsan_lookups, "www.example.test", 8, 10], env=env)],
                         nsswitch=DNSSHIM, resolv=RESOLV, library_dirs=[tsan], timeout=600,
                         service=service)
    c = result.commands[0]
    assert TSAN_REPORT not in c.stderr, c.stderr[-8000:]
    assert c.returncode == 0, (c.returncode, c.stdout, c.stderr[-3000:])
    assert c.stdout.splitlines() == ["answer 2001:db8::1 192.0.2.1 192.0.2.2",
                                     "threads 80 same", "child same"]
    assert c.stderr == ""
