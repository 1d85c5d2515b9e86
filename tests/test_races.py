"""Races searched, not hoped for: both libraries built with ThreadSanitizer
(gcc's -fsanitize=thread, as tests/sanitizers.py builds the ASan one:
build_ffi.py with $CFLAGS and $LDFLAGS), the worker image beside them, and
tests/c/race_mix.c, instrumented too, mixing from several threads at once,
for a bounded time: dns_shim_init, dns_shim_set_parallelism (0, 1, 2: the
library's own interpreter and the pool), dns_shim_set_memory_limit (0, and
1 to 4096 bytes, which refuse), dns_shim_register_callbacks,
process_dns_response, dns_shim_process, dns_shim_process_reply,
libdnsshim_ares's classic parsers, and fork() (a child that parses and
exits).  Every call's status is one that call can give: a parse's is the
message's own (from a run alone, before the threads start), or
DNS_SHIM_ERR_NO_MEMORY (ARES_ENOMEM) only where a refusing limit was set at
some moment of the call; a setter's is 0; a child must exit 0 within 20 s.
The run must end (SIGALRM) and TSan must report nothing.

What TSan cannot see: the embedded CPython, cffi's backend and the worker
image's instances are not instrumented, so only their calls into
intercepted functions (pthread_*, malloc, libc) take part; the library's own
C, cffi's generated module and the driver are (test_everything_is_instrumented).
tests/sanitizers/tsan.supp has no entry and says why.  That a race is
reported, with the library's frames in it, is shown first, with a callback
that races on purpose.

Without ThreadSanitizer's runtime (Debian: libtsan2, which gcc-12 brings)
these tests skip naming it; under CI=true they fail.  The image is built as
test_worker.py's fixture builds it (its requirements skip likewise).
"""

import os
import re
import shutil
import subprocess

import pytest

from dnsshim_build import pipeline, worker
import cprograms
from conftest import ROOT, require_cares, require_tool
from cprograms import STRICT
from test_stress import mix  # noqa: F401 (fixture)
from test_worker import image  # noqa: F401 (fixture)


#: How the libraries and the programs are compiled and linked.
FLAGS = ("-fsanitize=thread", "-fno-omit-frame-pointer", "-g")
SUPPRESSIONS = ROOT / "tests" / "sanitizers" / "tsan.supp"
#: The exit status of a process TSan reported in (no program here uses it).
EXITCODE = 66
#: second_deadlock_stack: both stacks of a lock-order inversion;
#: history_size: more of the earlier access's stack kept (no "[failed to
#: restore the stack]").
TSAN_OPTIONS = (f"suppressions={SUPPRESSIONS}:exitcode={EXITCODE}:halt_on_error=0:"
                "second_deadlock_stack=1:history_size=4")
ENV = {"PATH": "/usr/bin:/bin", "TSAN_OPTIONS": TSAN_OPTIONS, "DNS_SHIM_SERVICE": "none"}
REPORT = "WARNING: ThreadSanitizer"

#: The mix: threads and seconds (2 cores shared in CI: about 15 s of it).
THREADS, SECONDS = 3, 12
#: Each operation race_mix.c counts, in the order it prints them.
OPERATIONS = ("process", "registered", "reply", "ares", "parallelism", "init", "register",
              "limit", "fork")


def _require_tsan(tmp_path):
    """Skips (fails in CI) where a program cannot be built with
    -fsanitize=thread and run: gcc's runtime is Debian's libtsan2."""
    probe = tmp_path / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    done = subprocess.run([pipeline.compiler(), *FLAGS, str(probe), "-o", str(tmp_path / "probe")],
                          capture_output=True, text=True)
    works = done.returncode == 0 and subprocess.run(
        [str(tmp_path / "probe")], capture_output=True).returncode == 0
    require_tool("ThreadSanitizer's runtime (cc -fsanitize=thread)", "libtsan2", works)


@pytest.fixture(scope="module")
def tsan(image, tmp_path_factory):  # noqa: F811 - image is the fixture
    """Both libraries built with TSan, with the worker image beside them:
    the folder (programs get it as their run path)."""
    probe = tmp_path_factory.mktemp("tsan-probe")
    _require_tsan(probe)
    out = tmp_path_factory.mktemp("tsan")
    flags = " ".join(FLAGS)
    env = {**os.environ, "CFLAGS": f"{os.environ.get('CFLAGS', '')} {flags}".strip(),
           "LDFLAGS": f"{os.environ.get('LDFLAGS', '')} {flags}".strip()}
    done = subprocess.run([os.sys.executable, str(ROOT / "build_ffi.py"), "--out", str(out)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shutil.copyfile(image, out / worker.NAME)
    return out


def _program(tsan, source, name, libraries=("dnsshim",), cares=False):
    cflags, flags = (), ()
    if cares:
        require_cares()
        cflags, libs = cprograms.cares_flags()
        flags = tuple(f for f in libs if not f.startswith("-l"))
    return pipeline.compile_program([source], tsan / name, against=tsan, libraries=libraries,
                                    cflags=(*STRICT, *FLAGS, *cflags), flags=flags)


@pytest.fixture(scope="module")
def race_mix(tsan):
    return _program(tsan, ROOT / "tests" / "c" / "race_mix.c", "race_mix",
                    ("dnsshim_ares", "dnsshim"), cares=True)


def _run(*args, timeout=600):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          errors="replace", env=ENV, timeout=timeout)


def _reports(stderr: str) -> str:
    found = stderr.find("=" * 18 + "\n" + REPORT)
    return stderr[found:] if found >= 0 else ("" if REPORT not in stderr else stderr)


def test_everything_is_instrumented(tsan, race_mix):
    """Both libraries and the driver call TSan's checks: the flags reached
    every compiler command (cffi's generated module is in libdnsshim)."""
    for path in (tsan / "libdnsshim.so.1", tsan / pipeline.DNSSHIM_ARES.soname, race_mix):
        nm = subprocess.run(["nm", "-D", "--undefined-only", str(path)], capture_output=True,
                            text=True, check=True).stdout.split()
        assert any(name.startswith("__tsan_read") for name in nm), path
        assert any(name.startswith("__tsan_func_entry") for name in nm), path


RACY = r"""
#include "dns_shim.h"
#include "tool_util.h"
#include <pthread.h>

/* racy FILE: two threads parse FILE 200 times each through the registered
** set, whose on_header adds to a global without a lock. */
static long headers;
static unsigned char *wire;
static long len;

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    (void)h;
    headers++;
    return 0;
}

static void *parse(void *arg)
{
    int i;
    (void)arg;
    for (i = 0; i < 200; i++)
        process_dns_response(wire, (int32_t)len);
    return NULL;
}

int main(int argc, char **argv)
{
    dns_shim_callbacks cb;
    pthread_t a, b;
    (void)argc;
    wire = read_message(argv[1], 0, &len);
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.on_header = on_header;
    dns_shim_register_callbacks(&cb);
    pthread_create(&a, NULL, parse, NULL);
    pthread_create(&b, NULL, parse, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%ld\n", headers);
    return 0;
}
"""


def test_a_race_in_a_callback_is_reported_with_the_librarys_frames(tsan, mix,  # noqa: F811
                                                                  tmp_path):
    """Callbacks run without the library's lock: one that adds to a global
    from two threads races, and TSan says so, the library's dispatch in the
    stacks: the suppressions hide nothing of it."""
    (tmp_path / "racy.c").write_text(RACY)
    racy = _program(tsan, tmp_path / "racy.c", "racy")
    result = _run(racy, mix[0])
    assert result.returncode == EXITCODE, result.stderr[-3000:]
    report = _reports(result.stderr)
    assert "WARNING: ThreadSanitizer: data race" in report
    assert "on_header" in report and "libdnsshim.so" in report, report[:6000]


def test_no_suppression_can_hide_the_library():
    """Every entry of tsan.supp suppresses by an uninstrumented library,
    follows a comment, and names none of this project's code."""
    lines = SUPPRESSIONS.read_text().splitlines()
    assert lines[0].startswith("#")
    for i, line in enumerate(lines):
        if not line.strip() or line.startswith("#"):
            continue
        kind, _, pattern = line.partition(":")
        assert kind == "called_from_lib" and pattern, line
        assert lines[i - 1].startswith("#"), f"{line}: no comment says why"
        for name in ("dns_shim", "dnsshim", "_dnsshim", "ares", "race_mix", "csrc", "tests/c",
                     "/proc/self/fd"):
            assert name not in pattern, line


def test_the_mix_from_several_threads_at_once(race_mix, mix):  # noqa: F811
    """THREADS threads for SECONDS seconds: every call's status exact, every
    forked child exits 0, the run ends, TSan reports nothing."""
    result = _run(race_mix, THREADS, SECONDS, *mix, timeout=SECONDS * 4 + 120)
    report = _reports(result.stderr)
    assert not report and result.returncode == 0, (
        f"exit status {result.returncode}\n{result.stdout[-4000:]}\n"
        f"{report[:20000] or result.stderr[-4000:]}")
    last = result.stdout.splitlines()[-1]
    found = re.fullmatch(
        rf"ok race_mix: {THREADS} threads, {SECONDS} s, {len(mix)} messages: "
        + " ".join(rf"{op} (\d+)" for op in OPERATIONS)
        + r", (\d+) refused under a limit, 0 wrong", last)
    assert found, last
    counts = dict(zip(OPERATIONS, map(int, found.groups())))
    # Every operation ran, and each refusing limit refused its own call.
    assert all(counts.values()), counts
    assert int(found.groups()[-1]) == counts["limit"]


# ---- what the mix found, each alone ----------------------------------------------------

SEQUENCES = r"""
#include "dns_shim.h"
#include "tool_util.h"
#include <ares.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

/* sequences MODE PARALLELISM FILE
**   ares-refused  dns_shim_init (every interpreter started, none has
**                 parsed; ares-refused-after-parse: process_dns_response
**                 instead, its status), a limit of 100 bytes, ares_parse_a_reply (its status), the
**                 limit back to 0, process_dns_response (its status and
**                 detail)
**   fork          a thread parses FILE without end; the main thread forks
**                 five times, each child parses FILE once and exits 0 on
**                 success: "child N exited S", or "child N hung" (5 s, then
**                 killed; no more forks after one) */
static unsigned char *wire;
static long len;

static void *parse_forever(void *arg)
{
    (void)arg;
    for (;;)
        process_dns_response(wire, (int32_t)len);
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argc;
    wire = read_message(argv[3], 0, &len);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("parallelism %d\n", (int)dns_shim_set_parallelism((uint32_t)atoi(argv[2])));
    if (strncmp(argv[1], "ares-refused", 12) == 0) {
        struct hostent *host = NULL;
        int rc;
        if (strcmp(argv[1], "ares-refused-after-parse") == 0)
            printf("first %d\n", (int)process_dns_response(wire, (int32_t)len));
        else
            printf("init %d\n", (int)dns_shim_init());
        printf("limit %d\n", (int)dns_shim_set_memory_limit(100));
        rc = ares_parse_a_reply(wire, (int)len, &host, NULL, NULL);
        printf("ares %d\n", rc);
        if (host != NULL)
            ares_free_hostent(host);
        printf("limit %d\n", (int)dns_shim_set_memory_limit(0));
        printf("next %d [%s]\n", (int)process_dns_response(wire, (int32_t)len),
               dns_shim_last_error());
    } else {
        pthread_t t;
        int i;
        printf("first %d\n", (int)process_dns_response(wire, (int32_t)len));
        pthread_create(&t, NULL, parse_forever, NULL);
        for (i = 0; i < 5; i++) {
            int st = 0, waited = 0;
            pid_t got, pid = fork();
            if (pid == 0)
                _exit(process_dns_response(wire, (int32_t)len) == 0 ? 0 : 1);
            while ((got = waitpid(pid, &st, WNOHANG)) == 0 && waited++ < 500)
                usleep(10000);
            if (got == 0) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
                printf("child %d hung\n", i);
                break;
            }
            printf("child %d exited %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
    }
    fflush(stdout);
    _exit(0);
}
"""


@pytest.fixture(scope="module")
def sequences(tsan, tmp_path_factory):
    source = tmp_path_factory.mktemp("sequences") / "sequences.c"
    source.write_text(SEQUENCES)
    return _program(tsan, source, "sequences", ("dnsshim_ares", "dnsshim"), cares=True)


@pytest.fixture(scope="module")
def answer(mix):  # noqa: F811
    return next(path for path in mix if path.name == "ims.bin")


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("mode, start", [("ares-refused", "init 0"),
                                         ("ares-refused-after-parse", "first 0")])
def test_a_c_ares_parse_refused_by_the_limit_is_enomem_and_leaves_the_next_call_alone(
        sequences, answer, parallelism, mode, start):
    """The first ares_parse_a_reply of started interpreters (that have
    parsed nothing, or one message through libdnsshim), under a limit of 100
    bytes, is ARES_ENOMEM (15), in the library's own interpreter and in the
    pool, and logs nothing; with the limit back to 0, the same thread's next
    parse succeeds with no detail."""
    result = _run(sequences, mode, parallelism, answer)
    assert result.stderr == "", result.stderr[-6000:]
    assert result.stdout.splitlines() == [
        "parallelism 0", start, "limit 0", "ares 15", "limit 0", "next 0 []"], \
        result.stdout + result.stderr[-3000:]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_child_forked_while_another_thread_parses_gets_its_answer(sequences, answer,
                                                                    parallelism):
    """A thread parses without end while the main thread forks five
    times: each child's call answers (within 5 s) and it exits 0."""
    result = _run(sequences, "fork", parallelism, answer)
    assert not _reports(result.stderr), result.stderr[-6000:]
    assert result.stdout.splitlines() == [
        "parallelism 0", "first 0", *(f"child {i} exited 0" for i in range(5))], result.stdout
