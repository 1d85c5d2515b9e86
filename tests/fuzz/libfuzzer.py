"""The libFuzzer harnesses of tests/fuzz/: how they are built and run.

    python tests/fuzz/libfuzzer.py build OUT         both libraries and every harness into OUT
    python tests/fuzz/libfuzzer.py seeds OUT         the seed folders, OUT/seeds/<harness>/

The libraries are built by ``build_ffi.py`` with clang and
``-fsanitize=address,undefined,fuzzer-no-link`` (libFuzzer's coverage of
their C: the bridges, cffi's module, every unit), the harnesses through
``pipeline.compile_program`` with ``-fsanitize=fuzzer,address,undefined``.
A library built with clang's ASan leaves the runtime's symbols to the
program (clang links the runtime into executables only), so its link gets
``-Wl,-z,undefs`` after the build's ``--no-undefined``.  The embedded
CPython is not instrumented: libFuzzer sees the C side's coverage only (the
Python decoder's own coverage-guided fuzzing is tests/fuzz.py, atheris).

HARNESSES says what each one is; tests/test_libfuzzer.py runs each for a
bounded time and replays tests/regressions/ through them; tests/README.md
("libFuzzer") has the commands of long runs.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
ROOT = TESTS.parent
for _path in (str(TESTS), str(ROOT)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from dnsshim_build import pipeline  # noqa: E402
import sanitizers  # noqa: E402

#: The compiler, and the sanitizers every harness and library are built with.
CC = "clang"
SANITIZE = ("-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
LIBRARY_CFLAGS = ("-fsanitize=address,undefined,fuzzer-no-link", *SANITIZE)
LIBRARY_LDFLAGS = ("-fsanitize=address,undefined", "-Wl,-z,undefs")
HARNESS_CFLAGS = ("-fsanitize=fuzzer,address,undefined", *SANITIZE, "-Wextra", "-Werror")
#: The Debian packages that bring them (Debian 12).
PACKAGES = {"clang": "clang", "libFuzzer's runtime (libclang_rt.fuzzer)": "libclang-rt-14-dev"}

#: The shared corpus's folders each message harness is seeded with.
CORPUS_FOLDERS = ("good", "bad", "captures", "cares-fuzzinput")
#: Where the findings are kept: a message alone in REGRESSIONS/*.bin (also
#: replayed by tests/test_fuzz.py through the Python side), any other input
#: in REGRESSIONS/libfuzzer/<harness>/.
REGRESSIONS = TESTS / "regressions"


@dataclasses.dataclass(frozen=True)
class Harness:
    """One harness: its source, the units of the libraries compiled into it
    (the plan harnesses) or the libraries it links, whether it needs c-ares
    1.34 (the cares134 fixture), what its input is, and its CI budget."""

    name: str
    what: str
    units: tuple = ()
    libraries: tuple = ()
    cares: bool = False
    #: "message": a DNS message; "ares": a function-choosing octet, then a
    #: message; "plan": a plan built from the octets (no seeds)
    input: str = "message"
    #: seconds of fuzzing in tests/test_libfuzzer.py
    seconds: int = 15
    #: the environment its reproduce mode needs to take a message alone
    raw_env: tuple = ()
    #: with ``cares``, linked with c-ares 1.34's libcares too (else its headers only)
    link_cares: bool = False

    @property
    def source(self) -> Path:
        return HERE / f"{self.name}.c"

    def regression_runs(self) -> list:
        """[(files, environment)]: the runs of its reproduce mode over the
        findings it replays: its own (REGRESSIONS/libfuzzer/<name>/), and,
        for a harness that reads messages, every message of REGRESSIONS
        (fuzz_ares in its every-function mode, raw_env)."""
        own = sorted(p for p in (REGRESSIONS / "libfuzzer" / self.name).glob("*")
                     if p.is_file())
        messages = sorted(REGRESSIONS.glob("*.bin"))
        if self.input == "plan":
            return [(own, {})]
        if self.input == "ares":
            return [(own, {}), (messages, dict(self.raw_env))]
        return [(own + messages, {})]


_LIB = pipeline.CSRC / "lib"
#: libdnsshim_ares's units but its bridge (which calls Python): the plan
#: harnesses link them all and replace the bridge's four functions.
_ARES_UNITS = tuple(pipeline.DNSSHIM_ARES.units)

HARNESSES = {h.name: h for h in (
    Harness("fuzz_process", "process_dns_response and dns_shim_process: statuses, all or "
            "nothing, every callback field against the wire header and the header's promises",
            libraries=("dnsshim",)),
    Harness("fuzz_reply", "dns_shim_process_reply with a query made from the message: the "
            "status the order of the checks gives, the same callbacks as dns_shim_process",
            libraries=("dnsshim",)),
    Harness("fuzz_ares", "libdnsshim_ares's classic parsers and expand functions: codes, "
            "every output field, the right free function (leaks)",
            libraries=("dnsshim_ares",), cares=True, input="ares",
            raw_env=(("DNSSHIM_FUZZ_EVERY_KIND", "1"),)),
    Harness("fuzz_dnsrec", "libdnsshim_ares's ares_dns_parse against c-ares 1.34's own: "
            "never more lenient, written back the same, records destroyed",
            libraries=("dnsshim_ares",), cares=True, link_cares=True),
    Harness("fuzz_plan", "dispatch.c's plan check and dispatch, no Python: its verdict "
            "against the harness's, callbacks reached as planned",
            units=(_LIB / "dispatch.c", _LIB / "failure.c"), input="plan", seconds=10),
    Harness("fuzz_ares_plan", "check.c's result check and the parsers' copies (parsers.c, "
            "structures.c, free.c...: every unit but the bridge), no Python: verdict, codes, "
            "copies, frees",
            units=_ARES_UNITS, input="plan", seconds=10),
    Harness("fuzz_dnsrec_plan", "dnsrec.c's plan check and record building with c-ares 1.34's "
            "builders, no Python: its verdict against the harness's, the record the plan",
            units=_ARES_UNITS, cares=True, link_cares=True, input="plan", seconds=10),
)}


def missing() -> dict:
    """{what: Debian package} of what a build needs and this machine lacks."""
    gone = {}
    if shutil.which(CC) is None:
        return dict(PACKAGES)
    runtime = subprocess.run([CC, "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
                             capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(runtime) or not os.path.exists(runtime):
        gone["libFuzzer's runtime (libclang_rt.fuzzer)"] = PACKAGES[
            "libFuzzer's runtime (libclang_rt.fuzzer)"]
    return gone


def build_libraries(out: Path) -> Path:
    """Both libraries, instrumented, into out (build_ffi.py --out, CC=clang)."""
    out = Path(out)
    env = {**os.environ, "CC": CC, "CFLAGS": " ".join(LIBRARY_CFLAGS),
           "LDFLAGS": " ".join(LIBRARY_LDFLAGS)}
    done = subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--out", str(out)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"the libFuzzer build of the libraries failed:\n"
                           f"{done.stdout[-3000:]}{done.stderr[-5000:]}")
    return out


def build_harness(harness: Harness, out: Path, cares=None) -> Path:
    """One harness into out (against the libraries built there); cares: the
    cares134 fixture's c-ares, for the harnesses that need it."""
    out = Path(out)
    cflags = list(HARNESS_CFLAGS)
    flags = []
    if harness.units:
        generated = pipeline.generated_headers(pipeline.DNSSHIM, out / "generated")
        cflags.append(f"-I{generated}")
    if harness.cares:
        if cares is None:
            raise ValueError(f"{harness.name} needs c-ares 1.34 (cares_source.library())")
        cflags += [f"-I{cares.include}", "-Wno-deprecated-declarations"]
        if harness.link_cares:
            flags = [f"-L{cares.lib}", "-lcares", f"-Wl,-rpath,{cares.lib}"]
    return pipeline.compile_program(
        [harness.source, *harness.units], out / harness.name,
        against=out if harness.libraries else None, libraries=harness.libraries,
        cflags=tuple(cflags), flags=tuple(flags), cc=CC)


def seeds(harness: Harness, out: Path, cares=None, corpus=None) -> list:
    """The seed folders of a harness: the shared corpus's folders present
    (conftest.available_corpus's rule is the caller's) and c-ares's own fuzz
    inputs; for fuzz_ares each message once for every function (its first
    octet: the function in the low 4 bits, a capacity or offset above),
    written under out; none for the plan harnesses."""
    if harness.input == "plan":
        return []
    folders = [Path(p) for p in (corpus or ())]
    if cares is not None:
        folders.append(Path(cares.fuzzinput))
    if harness.input == "message":
        return folders
    where = Path(out) / f"seeds-{harness.name}"
    where.mkdir(parents=True, exist_ok=True)
    n = 0
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix in (".txt", ".tsv"):
                continue
            wire = path.read_bytes()
            if len(wire) > 65535:
                continue
            for kind in range(16):
                (where / f"{kind:x}-{folder.name}-{path.name}").write_bytes(
                    bytes([kind | (n % 16) << 4]) + wire)
            n += 1
    return [where]


def environment(base=None) -> dict:
    """The sanitizers' options of every run (tests/sanitizers.py's, the same
    LeakSanitizer suppressions); libFuzzer's own exit codes then say what
    happened."""
    env = sanitizers.environment(base)
    return env


def fuzz_command(binary: Path, corpus_dir: Path, seed_dirs, artifacts: Path, seconds: int,
                 extra=()) -> list:
    """A bounded run: one job, -max_total_time, a per-input timeout, the
    findings written under artifacts."""
    return [str(binary), f"-max_total_time={seconds}", "-timeout=10", "-rss_limit_mb=4096",
            "-max_len=4096", "-seed=1", "-print_final_stats=1",
            f"-artifact_prefix={artifacts}/", *extra, str(corpus_dir), *map(str, seed_dirs)]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("build", "seeds"):
        print(__doc__)
        return 2
    out = Path(argv[1]).resolve()
    gone = missing()
    if gone:
        print("missing: " + ", ".join(f"{w} (apt-get install {p})" for w, p in gone.items()))
        return 1
    import cares_source

    try:
        cares = cares_source.library()
    except cares_source.Unavailable as why:
        print(f"c-ares 1.34 unavailable ({why}): building the harnesses that do not need it")
        cares = None
    corpus = [ROOT.parent / "shared" / "corpus" / f for f in CORPUS_FOLDERS
              if (ROOT.parent / "shared" / "corpus" / f).is_dir()]
    if argv[0] == "build":
        build_libraries(out)
    for harness in HARNESSES.values():
        if harness.cares and cares is None:
            continue
        if argv[0] == "build":
            print(build_harness(harness, out, cares))
        else:
            for folder in seeds(harness, out / "seeds", cares, corpus):
                print(harness.name, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
