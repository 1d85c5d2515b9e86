"""A build of both libraries and of the C programs with AddressSanitizer and
UndefinedBehaviorSanitizer, and the way to run a program under it.

    build(out)  -> Sanitized: the build directory, the programs, the environment

The libraries are built by ``python build_ffi.py --out`` with the flags in
$CFLAGS and $LDFLAGS (pipeline.env_flags), the programs by tests/cprograms.py
with the same flags, so that every line of this project's C (the libraries'
own C, cffi's generated module, the test drivers) is instrumented.  The
embedded CPython, cffi's backend and c-ares are not: what they do is checked
only where it goes through an intercepted call (malloc, memcpy, ...).

Every program links the sanitizers' runtimes itself (gcc puts libasan first
in its DT_NEEDED), so no LD_PRELOAD is needed for them; ``preload`` gives
what a host that is not instrumented (a Python process) would need.

A run is clean when it prints no sanitizer report: UBSan halts on the first
error (halt_on_error, -fno-sanitize-recover=all), ASan and LeakSanitizer exit
with EXITCODE, and ``Sanitized.run`` raises SanitizerReport with the report
in its message for any of them.  LeakSanitizer reads the suppressions of
tests/sanitizers/lsan.supp, which has no entry and says why (and what an
entry would have to show).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import cprograms  # noqa: E402

#: How every sanitized object and program is compiled and linked.
FLAGS = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
#: LeakSanitizer's suppressions: CPython's own allocations, never this project's.
LSAN_SUPPRESSIONS = HERE / "sanitizers" / "lsan.supp"
#: The exit status of a process a sanitizer stopped (no program of this
#: project exits with it).
EXITCODE = 86

#: The C programs run under the sanitizers (tests/cprograms.py's names).
PROGRAMS = ("dnsshim_test", "dnsshim_stress", "dnsshim-dump")
#: Those written against <ares.h>, where c-ares's headers are installed: the
#: c-ares layer's programs and their twins linked with the real c-ares.
ARES_PROGRAMS = ("ares_every_parser", "ares_every_parser_cares", "ares_sip_locate",
                 "ares_sip_locate_cares", "both_libraries")

#: The start of a sanitizer's report in a program's stderr.
REPORT = re.compile(r"^==\d+==(ERROR|WARNING): \w+Sanitizer|^\S+:\d+:\d+: runtime error: "
                    r"|^SUMMARY: \w+Sanitizer", re.MULTILINE)


def options() -> dict:
    """ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS of every sanitized run."""
    common = f"exitcode={EXITCODE}:print_summary=1"
    return {
        # detect_stack_use_after_return: frames of returned functions stay
        # poisoned; the initialisation-order checks; memcmp/strchr and the
        # like read their whole arguments.
        "ASAN_OPTIONS": f"{common}:halt_on_error=1:detect_leaks=1:"
                        "detect_stack_use_after_return=1:check_initialization_order=1:"
                        "strict_init_order=1:strict_string_checks=1",
        "UBSAN_OPTIONS": f"{common}:halt_on_error=1:print_stacktrace=1",
        "LSAN_OPTIONS": f"{common}:suppressions={LSAN_SUPPRESSIONS}:print_suppressions=0",
    }


def preload() -> dict:
    """LD_PRELOAD for a host that is not instrumented (a Python process
    loading the sanitized library): the sanitizers' runtimes, which must come
    before everything else in the process (Sanitized.python_host_env)."""
    libs = []
    for name in ("libasan.so", "libubsan.so"):
        path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                              text=True, check=True).stdout.strip()
        libs.append(os.path.realpath(path))
    return {"LD_PRELOAD": " ".join(libs)}


class SanitizerReport(AssertionError):
    """A sanitizer reported an error: the message holds the report."""


def reports(stderr: str) -> str:
    """The sanitizer reports in a program's stderr, from the first one on
    ("" when there is none)."""
    found = REPORT.search(stderr)
    return stderr[found.start():] if found else ""


@dataclasses.dataclass
class Sanitized:
    """A sanitized build: its directory (the libraries and the programs),
    the programs by name, and the environment to run them in."""

    dir: Path
    programs: dict
    env: dict

    def run(self, program, *args, env=None, input=None, timeout=600,
            **kwargs) -> subprocess.CompletedProcess:
        """Runs a program of the build (a name of ``programs``, or a path)
        with the sanitizers' options (``env``: more variables, overriding
        them).  Raises SanitizerReport when a sanitizer reported anything or
        the process ended with EXITCODE; otherwise returns the result, whatever
        its status (the test judges that)."""
        path = self.programs.get(program, program)
        result = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True,
                                errors="replace", input=input, timeout=timeout,
                                env={**self.env, **(env or {})}, **kwargs)
        check(result, path)
        return result

    def python_host_env(self) -> dict:
        """The environment of an uninstrumented Python host (python itself,
        loading the build's libraries through ctypes or cffi): the runtimes
        preloaded, and no leak check, since the host tears its interpreter
        down at exit and leaves its objects unreachable (lsan.supp says why
        that is not suppressed instead).  Run it with subprocess and check()."""
        asan = self.env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        return {**self.env, **preload(), "ASAN_OPTIONS": asan}


def check(result: subprocess.CompletedProcess, what="the program") -> None:
    """Raises SanitizerReport when a run's stderr holds a report or it
    ended with the sanitizers' exit status."""
    report = reports(result.stderr)
    if report or result.returncode == EXITCODE:
        raise SanitizerReport(f"{what} (exit status {result.returncode}): sanitizer report:\n"
                              f"{report[:20000] or result.stderr[-5000:]}")


def environment(base=None) -> dict:
    """The environment of a sanitized run: ``base`` (default: this
    process's) with the sanitizers' options."""
    return {**(os.environ if base is None else base), **options()}


def build(out: Path, names=None, root: Path = ROOT) -> Sanitized:
    """Both libraries and the programs (default: PROGRAMS, and ARES_PROGRAMS
    where c-ares's headers are installed) into out, instrumented; the
    libraries of the source tree root (default: this one; a copy whose
    Python side a test changed, say)."""
    out = Path(out)
    flags = " ".join(FLAGS)
    env = {**os.environ, "CFLAGS": f"{os.environ.get('CFLAGS', '')} {flags}".strip(),
           "LDFLAGS": f"{os.environ.get('LDFLAGS', '')} {flags}".strip()}
    done = subprocess.run([sys.executable, str(Path(root) / "build_ffi.py"), "--out", str(out)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the sanitized build failed:\n{done.stdout}{done.stderr}")
    programs = cprograms.build(out, names or default_programs(), cflags=FLAGS)
    return Sanitized(out, programs, environment())


def default_programs() -> tuple:
    """The programs build() makes by default: PROGRAMS, and ARES_PROGRAMS
    where c-ares's headers are installed."""
    return PROGRAMS + (ARES_PROGRAMS if cprograms.cares_flags() is not None else ())


def built(out: Path) -> Sanitized:
    """A default build() already in out (made by another test worker)."""
    return Sanitized(Path(out), {name: Path(out) / name for name in default_programs()},
                     environment())


def compile_program(sources, output, against: Path, **kwargs) -> Path:
    """A program of one's own (a test's) compiled and linked against a
    sanitized build with the same flags."""
    cflags = (*FLAGS, *kwargs.pop("cflags", ()))
    return cprograms.pipeline.compile_program(sources, output, against=against, cflags=cflags,
                                               **kwargs)
