"""Safe in any process: the library inside processes it does not choose.

- A setuid program run by an unprivileged user: no DNS_SHIM_* variable is
  read (the library's secure-execution rule, glibc's secure_getenv), for
  libdnsshim and for libdnsshim_ares; the same program without the setuid
  bit reads them, so the test shows the rule, not an absent variable.
- libdnsshim_ares in /etc/ld.so.preload, in a setuid program written for
  c-ares alone: the same rule, every program of the namespace preloaded.
- Any loader: libdnsshim and libdnsshim_ares dlopen()ed RTLD_LOCAL (a plugin
  host, glibc's NSS) start and parse; a backend whose file does not load is
  never reported as a package to install.
- The pool's interleavings, each pinned or forced rather than hoped for
  (tests/c/any_process.c): threads calling dns_shim_init at once do not
  deadlock; two threads setting the memory limit at once leave one limit;
  parallelism raised between a c-ares parse's routing and the start of the
  interpreter it was routed to neither leaves the c-ares layer unstarted nor
  lets an interpreter start without the isolated configuration; a worker
  image gone before the first call is named whole in the detail.
- fork() while another thread holds each lock a call takes in libdnsshim
  and libdnsshim_ares, pinned: the child's calls return.
"""

import os
import shutil
import subprocess
from pathlib import Path

import dns.message
import dns.rrset
import pytest

from dnsshim_build import pipeline, worker
from conftest import (HOSTILE_ENV, NOBODY, ROOT, as_user, require_cares, require_program,
                      setuid_root_copy)
import cprograms
from cprograms import STRICT
from test_parallelism import _library_copy, front  # noqa: F401 (fixture)
from test_worker import image  # noqa: F401 (fixture)

ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}
ADDRESS = "192.0.2.7"


@pytest.fixture(scope="module")
def answer(tmp_path_factory) -> Path:
    """A reply with one A record: www.example.test. 300 IN A 192.0.2.7."""
    query = dns.message.make_query("www.example.test.", "A")
    reply = dns.message.make_response(query)
    reply.answer.append(dns.rrset.from_text("www.example.test.", 300, "IN", "A", ADDRESS))
    path = tmp_path_factory.mktemp("any-process") / "a.bin"
    path.write_bytes(reply.to_wire())
    return path


@pytest.fixture(scope="module")
def any_process(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("any-process-prog") / "any_process"
    return pipeline.compile_program([ROOT / "tests" / "c" / "any_process.c"], out,
                                    libraries=(), cflags=STRICT)


def _run(*args, env=None, timeout=600, user=None):
    cmd = [str(a) for a in args]
    if user is not None:
        cmd = as_user(user, *cmd)
    result = subprocess.run(cmd, capture_output=True, text=True, env={**ENV, **(env or {})},
                            timeout=timeout)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-4000:])
    return result


LIBRARY_OK = ["status 0", "detail "]
ARES_OK = ["status 0", "name www.example.test", f"address {ADDRESS}"]

# ------------------------------------------------------------------ any loader


@pytest.mark.parametrize("mode, library, expected", [
    ("local", "libdnsshim.so.1", LIBRARY_OK),
    ("local-ares", pipeline.DNSSHIM_ARES.soname, ARES_OK),
])
def test_dlopened_rtld_local_it_starts_and_parses(built, any_process, answer, mode, library,
                                                  expected):
    """A host that dlopen()s the library RTLD_LOCAL, as a plugin host or
    glibc's NSS does (libdnsshim_ares: libdnsshim then comes in as its
    dependency, in the same local scope): libpython's symbols reach cffi's
    backend as in a python process, and nothing is logged."""
    result = _run(any_process, mode, built.dir / library, answer)
    assert result.stdout.splitlines() == expected
    assert result.stderr == ""


def test_a_backend_that_does_not_load_is_not_called_missing(tmp_path):
    """A _cffi_backend whose file is found but does not load (an undefined
    symbol, as when libpython's are out of its reach) is reported as that,
    with dlopen's reason, never as a package to install."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    import sysconfig
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    source = tmp_path / "backend.c"
    source.write_text("extern int dnsshim_no_such_symbol(void);\n"
                      "int PyInit__cffi_backend(void) { return dnsshim_no_such_symbol(); }\n")
    backend = tmp_path / f"_cffi_backend{suffix}"
    subprocess.run([cc, "-shared", "-fPIC", str(source), "-o", str(backend)], check=True)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]);"
            "from shim import requirements; print(requirements.problem('/x/python3', 'test'))")
    out = subprocess.run([os.sys.executable, "-I", "-c", code, str(tmp_path), str(ROOT)],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out.startswith(f"cffi's backend {backend} is installed for /x/python3 (test) but "
                          f"does not load ("), out
    assert "undefined symbol: dnsshim_no_such_symbol" in out
    assert "is not installed" not in out


# ------------------------------------------------------------------ privileged


HOSTILE = HOSTILE_ENV


@pytest.fixture(scope="module")
def setuid_program(any_process):
    """any_process, setuid root, in a folder an unprivileged user can reach."""
    with setuid_root_copy(any_process) as program:
        yield program


@pytest.mark.parametrize("mode, library, expected", [
    ("local", "libdnsshim.so.1", LIBRARY_OK),
    ("local-ares", pipeline.DNSSHIM_ARES.soname, ARES_OK),
])
def test_a_setuid_program_reads_no_variable_of_the_library(built, setuid_program, answer,
                                                           mode, library, expected):
    """An unprivileged user runs a setuid-root program with DNS_SHIM_PYTHON
    naming a Python of their choosing and DNS_SHIM_PARALLELISM set: the
    library starts from its own installation, as if neither were set, and
    logs nothing.  The same program run by root, whose process is not in
    secure-execution mode, does read them: the parallelism is refused as a
    value and DNS_SHIM_PYTHON's python is tried and refused by name."""
    lib = built.dir / library
    result = _run(setuid_program, mode, lib, answer, env=HOSTILE, user=NOBODY)
    assert result.stdout.splitlines() == expected
    assert result.stderr == ""
    plain = _run(setuid_program.parent / "any_process", mode, lib, answer, env=HOSTILE)
    assert plain.stderr.splitlines()[0] == (
        "dnsshim: DNS_SHIM_PARALLELISM=hostile is not a number from 0 to 64: parallelism "
        "stays 1")
    assert (f"the python {HOSTILE['DNS_SHIM_PYTHON']} (from DNS_SHIM_PYTHON) does not exist"
            in plain.stderr)


@pytest.fixture(scope="module")
def preloaded_host(tmp_path_factory):
    """tests/c/preloaded_host.c: a program linked with -lcares alone,
    setuid root."""
    require_cares()
    cflags, libs = cprograms.cares_flags()
    out = tmp_path_factory.mktemp("preloaded-host") / "preloaded_host"
    program = pipeline.compile_program([ROOT / "tests" / "c" / "preloaded_host.c"], out,
                                       libraries=(), cflags=(*STRICT, *cflags), flags=libs)
    with setuid_root_copy(program) as setuid:
        yield setuid


def _with_system_preload(library: Path, tmp_path: Path, *cmd) -> list:
    """cmd in a mount namespace of its own whose /etc is a copy of this
    machine's with an /etc/ld.so.preload naming ``library``: every program
    started there, setpriv and the shell included, loads it, as on a
    machine where README.md's line was run; this machine's /etc is never
    touched."""
    require_program("unshare", "util-linux")
    etc = tmp_path / "etc"
    shutil.copytree("/etc", etc, symlinks=True)
    (etc / "ld.so.preload").write_text(f"{library}\n")
    return ["unshare", "--mount", "sh", "-c", 'mount --bind "$0" /etc && exec "$@"', str(etc),
            *map(str, cmd)]


def test_preloaded_from_etc_into_a_setuid_program_it_reads_no_variable(
        built, preloaded_host, answer, tmp_path):
    """libdnsshim_ares in /etc/ld.so.preload, the README's every-program
    line, and a setuid-root c-ares program run by an unprivileged user with
    DNS_SHIM_PYTHON and DNS_SHIM_PARALLELISM set: the program's
    ares_parse_a_reply is the library's, an interpreter ran in the process,
    the answer is c-ares's, and nothing is logged.  Run by root (no
    secure-execution mode), the same preload reads both variables: the
    parallelism is refused as a value and DNS_SHIM_PYTHON's python is tried,
    by name, and the c-ares layer cannot start (ARES_ENOTINITIALIZED)."""
    lib = built.dir / pipeline.DNSSHIM_ARES.soname
    user = _run(*_with_system_preload(lib, tmp_path, *as_user(NOBODY, preloaded_host, answer)),
                env=HOSTILE)
    assert user.stdout.splitlines() == ["status 0", f"address {ADDRESS}",
                                        f"parser {pipeline.DNSSHIM_ARES.soname}", "python 1"]
    assert user.stderr == ""
    root = _run(*_with_system_preload(lib, tmp_path / "root", preloaded_host, answer),
                env=HOSTILE)
    assert root.stdout.splitlines() == ["status 21", f"parser {pipeline.DNSSHIM_ARES.soname}",
                                        "python 0"]
    assert root.stderr.splitlines()[0] == (
        "dnsshim: DNS_SHIM_PARALLELISM=hostile is not a number from 0 to 64: parallelism "
        "stays 1")
    assert (f"the python {HOSTILE['DNS_SHIM_PYTHON']} (from DNS_SHIM_PYTHON) does not exist"
            in root.stderr)


# ------------------------------------------------------------------ the pool


@pytest.mark.python_independent
def test_threads_calling_init_at_once_all_start_the_pool(front, any_process):
    """Parallelism 2, then 2 and 4 threads call dns_shim_init() at once: each
    thread starts an interpreter no one started, and waits only for starts,
    never holding one: every call returns 0, none hangs."""
    for threads in (2, 4):
        result = _run(any_process, "init", front, threads)
        assert result.stdout.splitlines() == ["init" + " 0" * threads], result.stdout
        assert result.stderr == ""


@pytest.mark.python_independent
def test_two_threads_setting_the_limit_leave_one_limit(front, any_process, answer):
    """Thread A sets 1000 bytes and is held inside the library at its second
    lock, while thread B sets 2000 bytes whole: the pool's interpreters and
    the library's own then refuse the message under one and the same limit.
    (The shared library's front keeps a limit set before its runtime is
    loaded and gives it to the runtime then, so which of the two is kept
    depends on where A was held.)"""
    result = _run(any_process, "limit", front, answer)
    lines = result.stdout.splitlines()
    refused = ("DNS_SHIM_ERR_NO_MEMORY: parsing the message would take the runtime above its "
               "memory limit of {} bytes (dns_shim_set_memory_limit)")
    assert lines in ([f"pool {refused.format(n)}", f"own {refused.format(n)}"]
                     for n in (1000, 2000)), lines


@pytest.mark.python_independent
def test_parallelism_raised_before_the_first_c_ares_parse_starts(front, any_process, answer,
                                                                tmp_path):
    """The first ares_parse_a_reply is routed to the library's own
    interpreter, and parallelism is raised to 2 before that interpreter
    starts: the parse still answers, from the library's own interpreter,
    started isolated: a shim/ares_embedded.py on PYTHONPATH (which a
    non-isolated start would import) is never run."""
    planted = tmp_path / "planted"
    (planted / "shim").mkdir(parents=True)
    witness = tmp_path / "imported"
    (planted / "shim" / "__init__.py").write_text("")
    (planted / "shim" / "ares_embedded.py").write_text(
        f"open({str(witness)!r}, 'w').close()\n")
    result = _run(any_process, "ares-first", front.parent / pipeline.DNSSHIM_ARES.soname, front,
                  answer, env={"PYTHONPATH": str(planted)})
    assert result.stdout.splitlines() == ARES_OK
    assert result.stderr == ""
    assert not witness.exists()


@pytest.mark.python_independent
def test_an_image_gone_before_the_first_call_is_named_whole(built, image, any_process, answer,
                                                            tmp_path):
    """The worker image removed after parallelism 2 was set: the first call
    fails with the instance's reason quoted whole (the detail is written
    from a reason that was this thread's detail: never over itself)."""
    lib = _library_copy(built, tmp_path / "lib", image.read_bytes())
    real = Path(os.path.realpath(lib))
    result = _run(any_process, "image-gone", lib, real.parent / worker.NAME, answer)
    assert result.stdout.splitlines() == [
        "status -14",
        f"detail DNS_SHIM_ERR_INIT: cannot start interpreter 1 of 2: parallelism above 1 needs "
        f"the worker image {real.parent}/{worker.NAME}, which this installation does not "
        f"have: pip install . and build_ffi.py --prefix build it where Debian's python3-dev "
        f"and libffi-dev are installed"]


# ------------------------------------------------------------------ fork


def _fork_held(built, any_process, answer, action, most=15):
    """any_process fork-held for K = 1, 2, ... until the action takes no K-th
    lock (or K is most): the lines of the K it took."""
    lines = []
    for k in range(1, most + 1):
        result = _run(any_process, "fork-held", built.dir / "libdnsshim.so.1",
                      built.dir / pipeline.DNSSHIM_ARES.soname, answer, action, k, timeout=120)
        line = result.stdout.strip()
        if line.startswith(f"lock {k} not taken"):
            return lines
        lines.append(line)
    if most < 15:
        return lines
    raise AssertionError(f"{action} took more than 15 locks: {lines}")


@pytest.mark.parametrize("action, locks, child", [
    # the registered callbacks, the queue of finished plans taken, then given
    ("reply", 3, "0, process 0"),
    # the shared library's front: its settings' lock; the runtime's: the
    # allocator's and limit's lock, then the pool's; the front's settings'
    # again, to keep the limit for a runtime loaded anew
    ("limit", 4, "0, process 0"),
    # the log handler's lock
    ("handler", 1, "0, process 0"),
    # libdnsshim_ares's table of c-ares libraries; cffi's start-up lock of its
    # module (the first parse starts it, under libdnsshim's start lock, which
    # the fork waits for); its set of the pointers it handed out, when the
    # hostent is handed out and when ares_free_hostent takes it back; and
    # the front's loader's, whose first call loads the runtime
    ("ares", 5, "0, process 0"),
])
def test_a_fork_while_another_thread_holds_a_lock_of_the_library(built, any_process, answer,
                                                                  action, locks, child):
    """Each lock a call takes in the library, held by one thread (pinned just
    after it took it) while another thread forks: the fork waits for it
    (the library's fork handler takes every lock of its own before the
    fork), and the child's call and parse return, where a lock copied held
    would hang them for ever."""
    lines = _fork_held(built, any_process, answer, action)
    assert lines == [f"lock {k} held at the fork; the child: {action} {child}"
                     for k in range(1, len(lines) + 1)]
    assert len(lines) == locks, lines


def test_a_fork_while_another_thread_starts_the_runtime(built, any_process, answer):
    """The process's first call, in one thread, held just after it took the
    start lock, then just after its next lock inside the start, while another
    thread forks: the fork waits for the whole start, and the child has the
    runtime started, once (where a start copied half-made would hang its
    first call, or run the start a second time)."""
    lines = _fork_held(built, any_process, answer, "start", most=2)
    assert lines == [f"lock {k} held at the fork; the child: start 0, process 0"
                     for k in (1, 2)]


# ------------------------------------------------------------------ the limit


def test_the_memory_limit_holds_for_the_c_ares_layer_too(built, any_process, tmp_path):
    """At the tightest limit at which a one-record reply parses through both
    libraries after a 64 KiB one was refused: the 64 KiB reply is refused by
    ares_parse_a_reply too (ARES_ENOMEM), as by process_dns_response
    (DNS_SHIM_ERR_NO_MEMORY), and the small one parses through both, round
    after round: the c-ares layer's parses neither escape the limit nor
    leave the runtime above it."""
    from test_memory import SLACK, write_big_and_small

    big, small = write_big_and_small(tmp_path)
    ares = built.dir / pipeline.DNSSHIM_ARES.soname

    def rounds(limit, n):
        out = _run(any_process, "ares-limit", ares, built.dir / "libdnsshim.so.1", limit, big,
                   small, n).stdout.splitlines()
        assert len(out) == n, out
        return [tuple(map(int, line.split(": ")[1].split())) for line in out]

    def small_parses(limit):
        return all(r[2:] == (0, 0) for r in rounds(limit, 2))

    low, high = 1_000_000, 64_000_000
    assert small_parses(high)
    while high - low > 10_000:
        middle = (low + high) // 2
        low, high = (low, middle) if small_parses(middle) else (middle, high)
    assert rounds(high + SLACK, 20) == [(-13, 15, 0, 0)] * 20


def test_the_c_ares_layer_s_start_is_start_up_not_a_parse(built, any_process, tmp_path):
    """A limit set before the start, 8 and 16 KiB above the smallest at
    which a one-record reply parses through process_dns_response in a fresh
    process; the process's first call is ares_parse_a_reply, which starts
    the c-ares layer (its modules imported): every process_dns_response
    after it parses.  What the layer's start adds is start-up, which the
    limit makes room for; counted as a parse, it left the runtime above its
    limit for good."""
    from test_memory import write_big_and_small

    small = write_big_and_small(tmp_path)[1]
    ares = built.dir / pipeline.DNSSHIM_ARES.soname

    def first(limit, with_ares, calls=5):
        out = _run(any_process, "limit-first", ares, built.dir / "libdnsshim.so.1", limit,
                   small, calls, int(with_ares)).stdout.splitlines()
        return out

    low, high = 1_000_000, 64_000_000
    # Every process of the test on the same installation: the modules both
    # paths import compiled once, here, where the tree may have no .pyc yet
    # (a runtime that compiles a module from its source holds some 60 KiB
    # more once started under a limit, and the budget below is measured on
    # the compiled ones).
    assert first(high, True, 1) == ["ares 0", "process 0"]
    while high - low > 1024:
        middle = (low + high) // 2
        low, high = (low, middle) if first(middle, False, 1) == ["process 0"] else (middle, high)
    # The smallest limit that parses in three fresh processes, not in one.
    while any(first(high, False, 1) != ["process 0"] for _ in range(3)):
        high += 1024
    for headroom in (8 * 1024, 16 * 1024):
        out = first(high + headroom, True)
        assert out[0] in ("ares 0", "ares 15"), (headroom, out)
        assert out[1] == "process 0 0 0 0 0", (headroom, out)


START_REFUSED = (r"cannot start: the host's allocator \(dns_shim_set_allocator\) refused \d+ of "
                 r"the runtime's allocations while it started \(taken from the C library "
                 r"instead, so that the process goes on\): give the runtime more memory")
PARSE_REFUSED = ("DNS_SHIM_ERR_NO_MEMORY: the host's allocator (dns_shim_set_allocator) refused "
                 "memory while the message was parsed")


@pytest.mark.parametrize("seed", range(1, 7))
def test_an_allocator_that_fails_at_start_up_gets_no_memory_never_an_abort(
        built, any_process, answer, seed):
    """A host allocator that refuses about one call in 50 from the start:
    the process goes on (CPython would end it on an allocation that fails
    before its exception types exist), and every call, the first included,
    is DNS_SHIM_ERR_NO_MEMORY naming the host's allocator, never
    DNS_SHIM_ERR_INIT with advice to reinstall; the first log line says the
    same."""
    import re

    result = _run(any_process, "failing-allocator", built.dir / "libdnsshim.so.1", seed, 50, 20,
                  answer, "start")
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[1] == "calls 20", lines
    assert re.fullmatch(f"status -13 detail DNS_SHIM_ERR_NO_MEMORY: {START_REFUSED}", lines[0]), \
        lines[0]
    assert re.fullmatch(f"dnsshim: {START_REFUSED}", result.stderr.splitlines()[0])


def test_an_allocator_that_fails_later_gets_no_memory_or_the_answer(built, any_process,
                                                                    answer):
    """The same allocator once the runtime runs: over 6 seeds of 200 calls
    each, every call parses (0) or is DNS_SHIM_ERR_NO_MEMORY naming the host's
    allocator, never another status (an error return without an exception
    was DNS_SHIM_ERR_INTERNAL), and nothing is logged."""
    seen = set()
    for seed in range(1, 7):
        result = _run(any_process, "failing-allocator", built.dir / "libdnsshim.so.1", seed, 50,
                      200, answer, "later")
        lines = result.stdout.splitlines()
        assert lines[0] == "init 0" and lines[-1] == "calls 200", lines
        for line in lines[1:-1]:
            assert line in ("status 0 detail ", f"status -13 detail {PARSE_REFUSED}"), line
            seen.add(line)
        assert result.stderr == ""
    assert len(seen) == 2, seen


def test_every_variable_the_library_reads_is_read_securely_and_documented():
    """The library's C reads the environment through dns_shim__getenv alone
    (secure_getenv: nothing in a setuid, setgid or setcap process); the NSS
    module, a library of its own, reads its one variable and glibc's
    HOSTALIASES with secure_getenv too; and the header's Environment paragraph, which dnsshim(7)'s
    ENVIRONMENT is made from, names each variable and the secure-execution
    rule."""
    import re

    sources = {p: p.read_text() for p in sorted((ROOT / "csrc").rglob("*.c"))
               if "tools" not in p.parts and "service" not in p.parts}
    for path, text in sources.items():
        plain = re.findall(r"(?<![\w_])(?:secure_)?getenv\s*\(", text)
        if path.name == "failure.c":
            # the library's one reader (the NSS module compiles it in too)
            assert plain == ["secure_getenv("], plain
        elif path.name == "nss_dnsshim.c":
            # its own variable, and glibc's HOSTALIASES, read as res_hostalias
            # reads it
            assert plain == ["secure_getenv(", "secure_getenv("], plain
            assert re.findall(r'secure_getenv\("(\w+)"\)', text) == ["DNS_SHIM_NSS_LOG",
                                                                       "HOSTALIASES"]
        else:
            assert plain == [], (path, plain)
    read = sorted({name for text in sources.values()
                   for name in re.findall(r'dns_shim__getenv\("(\w+)"\)', text)})
    assert read == ["DNS_SHIM_PARALLELISM", "DNS_SHIM_PYTHON", "DNS_SHIM_SERVICE",
                    "DNS_SHIM_SERVICE_FALLBACK"]
    header = (ROOT / "csrc" / "dns_shim.h").read_text()
    paragraph = header[header.index("**   Environment."):header.index("**   fork().")]
    flat = " ".join(line.lstrip("* ").strip() for line in paragraph.splitlines())
    for name in [*read, "DNS_SHIM_NSS_LOG"]:
        assert name in flat, name
    assert "It reads the first four variables below, and no other" in flat and \
        "secure-execution mode (AT_SECURE" in flat
