"""Parallelism (dns_shim_set_parallelism, DNS_SHIM_PARALLELISM): the library
parsing in a pool of private interpreters, instances of the worker image
beside it (csrc/lib/pool.c).

Through the library's own entry points, from C (tests/c/pool_instances.c
--library, and the library's other test programs):

- four threads over a parallelism of two print, message for message, what
  one thread with the library's own interpreter prints: statuses, failure
  detail, every record (the vectors, the malformed and accepted cases, the
  corpus);
- history independence across the pool: the first interpreter parses the
  history poison and is refused every message under a 1-byte limit, then is
  held by a call while the victims go to the second, which answers them as a
  fresh process does;
- a child forked after the pool started keeps a working pool;
- the stress mix of dnsshim_stress with four threads, parallelism two;
- valgrind with the shipped suppressions, four threads over two;
- the memory limit counts the whole pool, not each interpreter;
- set in a program that is loaded into a Python program: it answers and
  adds no module;
- libdnsshim_ares's parsers from four threads over a parallelism of two
  print what they print in one interpreter (tests/c/ares_threads.c: every
  classic parser on every message), and so does ares_dns_parse
  (tests/c/ares_dnsrec.c against c-ares 1.34), valgrind clean; an image
  without libdnsshim_ares's module refuses its parses naming the fix;
- what cannot be: no image (DNS_SHIM_ERR_UNSUPPORTED, with the path and the
  fix), above the most (DNS_SHIM_ERR_BAD_ARGUMENT), an image that does not
  load (DNS_SHIM_ERR_INIT on every call, the first log line naming it), and
  a DNS_SHIM_PARALLELISM the library cannot take (a warning, one
  interpreter).

The image is made from the firmware object (test_worker.py, test_firmware.py):
without what that build needs these tests skip naming the package; under
CI=true they fail.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from shim import layout
from dnsshim_build import pipeline, worker
import cares_source
import cprograms
from conftest import ROOT, require_cares, require_program, split_log
from cprograms import STRICT
from pool_output import verdicts
from test_firmware import _firmware, _link, firmware  # noqa: F401 (fixture)
from test_stress import mix  # noqa: F401 (fixture)
from test_worker import history_sets, image, messages, pool  # noqa: F401 (fixtures)


ENV = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}


def _library_copy(built, where: Path, image_bytes: bytes | None) -> Path:
    """The built libraries copied into where (libdnsshim_ares finds
    libdnsshim beside it), with image_bytes as the worker image beside them
    (None: no image).  Returns libdnsshim's path."""
    where.mkdir(parents=True, exist_ok=True)
    lib = where / "libdnsshim.so.1"
    shutil.copyfile(built.dir / "libdnsshim.so.1", lib)
    # the runtime the library's front loads, beside it in a source tree's build
    shutil.copyfile(built.dir / layout.RUNTIME_LIBRARY, where / layout.RUNTIME_LIBRARY)
    shutil.copyfile(built.dir / layout.ARES_RUNTIME_LIBRARY, where / layout.ARES_RUNTIME_LIBRARY)
    shutil.copyfile(built.dir / pipeline.DNSSHIM_ARES.soname,
                    where / pipeline.DNSSHIM_ARES.soname)
    if image_bytes is not None:
        (where / worker.NAME).write_bytes(image_bytes)
    return lib


@pytest.fixture(scope="module")
def front(built, image, tmp_path_factory):
    """The library with its worker image beside it."""
    return _library_copy(built, tmp_path_factory.mktemp("front"), image.read_bytes())


@pytest.fixture(scope="module")
def parallel_firmware(tmp_path_factory):
    """The firmware object built with --parallelism 2: two copies linked in."""
    return _firmware(tmp_path_factory, "firmware-parallel", "--parallelism", "2")


@pytest.fixture(scope="module")
def firmware_front(parallel_firmware, tmp_path_factory):
    """That object linked alone as a shared object, for the programs that
    load a library: the same code, its pool the copies linked in."""
    return worker.link(parallel_firmware / "lib" / "libdnsshim_fw.o",
                       tmp_path_factory.mktemp("firmware-front") / "libdnsshim_fw.so")


@pytest.fixture(scope="module", params=["image", "firmware"])
def pooled(request):
    """A library whose pool has two interpreters: the worker image's
    instances, or the copies of a firmware object built with --parallelism 2."""
    return request.getfixturevalue("front" if request.param == "image" else "firmware_front")


@pytest.fixture(scope="module")
def broken(built, tmp_path_factory):
    """The library beside a worker image that is not one."""
    return _library_copy(built, tmp_path_factory.mktemp("broken"), b"not an ELF file\n")


def _run(*args, env=None, code=0, timeout=1800):
    """The program's result; its exit status must be code (None: any)."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                            env={**ENV, **(env or {})}, timeout=timeout)
    assert code is None or result.returncode == code, result.stderr[-4000:]
    return result


def _lines(stdout: str, parallelism: int) -> list:
    *lines, last = stdout.splitlines()
    assert last == f"library parallelism {parallelism}"
    return lines


@pytest.fixture(scope="module")
def one(front, pool, messages):
    """Every message's line from one thread and the library's own interpreter."""
    lines = _lines(_run(pool, "--library", front, 1, 1, *messages).stdout, 1)
    assert len(lines) == len(messages)
    statuses = [verdict.split(" ")[1] for verdict in verdicts(lines)]
    assert statuses.count("0") > 0 and len(statuses) - statuses.count("0") > 0
    return lines


def test_four_threads_over_two_interpreters_give_what_one_interpreter_gives(pooled, pool,
                                                                            messages, one):
    assert _lines(_run(pool, "--library", pooled, 2, 4, *messages).stdout, 2) == one


def test_a_poisoned_interpreter_leaves_the_other_as_a_fresh_one(front, pooled, pool, messages,
                                                                history_sets):
    victims = [*history_sets["victim"], *messages]
    alone = _lines(_run(pool, "--library", front, 1, 1, *victims).stdout, 1)
    after = _lines(_run(pool, "--library", pooled, 2, 2, "--poison",
                        len(history_sets["poison"]), *history_sets["poison"],
                        *victims).stdout, 2)
    assert len(alone) == len(victims)
    assert after == alone


def test_a_forked_child_keeps_a_working_pool(pooled, pool, messages, one):
    assert _lines(_run(pool, "--library", pooled, 2, 4, "--fork", *messages).stdout, 2) == one


def test_the_stress_mix_with_four_threads_and_parallelism_two(built, front, mix):
    """dnsshim_stress's threaded mix (dns_shim_process with a context per
    thread, process_dns_response with the registered set; test_stress.py's
    messages) through the pool, set by the environment (which
    test_an_image_that_does_not_load_... shows sends the calls to the pool)."""
    out = _run(built.stress_prog, "threads", "--threads", "4", "--calls", "2000", *mix,
               env={"DNS_SHIM_PARALLELISM": "2", "LD_LIBRARY_PATH": str(front.parent)}).stdout
    assert "ok threads: 4 threads x 2000 calls" in out and ", 0 wrong" in out
    assert "FAIL" not in out


def test_valgrind_with_four_threads_over_two_interpreters(pooled, pool, messages):
    from test_c_programs import VALGRIND, _require_valgrind

    _require_valgrind()
    some = [m for m in messages if m.name.startswith(("vector_", "bad_"))]
    result = _run(*VALGRIND, f"--suppressions={pipeline.SUPPRESSIONS}", pool, "--library",
                  pooled, 2, 4, *some)
    assert _lines(result.stdout, 2)
    assert "ERROR SUMMARY" not in result.stderr


def test_the_library_looks_for_the_file_the_install_writes():
    assert f'#define DNS_SHIM_WORKER_IMAGE "{worker.NAME}"\n' in \
        (pipeline.CSRC / "lib" / "dns_shim_internal.h").read_text()


def test_without_the_image_more_than_one_is_refused_with_the_path_and_the_fix(built, pool,
                                                                              messages):
    lib = Path(os.path.realpath(built.dir / "libdnsshim.so.1"))
    result = _run(pool, "--library", lib, 2, 1, messages[0], code=1)
    assert result.stderr.splitlines()[-1] == (
        f"FAIL dns_shim_set_parallelism(2): DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 "
        f"needs the worker image {lib.parent}/{worker.NAME}, which this installation does "
        f"not have: pip install . and build_ffi.py --prefix build it where Debian's "
        f"python3-dev and libffi-dev are installed")


@pytest.mark.parametrize("note, quoted", [
    ("cffi 2.1.1's source distribution could not be downloaded\n",
     "cffi 2.1.1's source distribution could not be downloaded"),
    # its first line only, every octet not printable ASCII made '?'
    ("libffi_pic.a \x1b[31mis not\tinstalled \xc3\xa9\nsecond line\n",
     "libffi_pic.a ?[31mis not?installed ??"),
])
def test_without_the_image_the_refusal_quotes_why_the_install_built_none(built, pool, messages,
                                                                          tmp_path, note,
                                                                          quoted):
    """Where the install could not build the image it leaves its reason
    beside the library (worker.NOTE); the refusal says it instead of the
    general advice."""
    lib = Path(os.path.realpath(_library_copy(built, tmp_path, None)))
    assert f'#define DNS_SHIM_WORKER_NOTE "{worker.NOTE}"\n' in \
        (pipeline.CSRC / "lib" / "dns_shim_internal.h").read_text()
    (tmp_path / worker.NOTE).write_bytes(note.encode("latin-1"))
    result = _run(pool, "--library", lib, 2, 1, messages[0], code=1)
    assert result.stderr.splitlines()[-1] == (
        f"FAIL dns_shim_set_parallelism(2): DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 "
        f"needs the worker image {lib.parent}/{worker.NAME}, which the install could not "
        f"build: {quoted}")
    # an empty note is none: the general advice
    (tmp_path / worker.NOTE).write_bytes(b"")
    result = _run(pool, "--library", lib, 2, 1, messages[0], code=1)
    assert result.stderr.splitlines()[-1].endswith("which this installation does not have: "
                                                   "pip install . and build_ffi.py --prefix "
                                                   "build it where Debian's python3-dev and "
                                                   "libffi-dev are installed")


def test_more_than_the_most_is_a_bad_argument_and_changes_nothing(abi):
    ffi, lib = abi
    assert "#define DNS_SHIM_PARALLELISM_MAX 64\n" in pipeline.HEADER.read_text()
    assert lib.dns_shim_set_parallelism(65) == -12
    assert ffi.string(lib.dns_shim_last_error()).decode() == (
        "DNS_SHIM_ERR_BAD_ARGUMENT: parallelism 65 is above 64, the most this library runs")
    for n in (0, 1):
        assert lib.dns_shim_set_parallelism(n) == 0
        assert ffi.string(lib.dns_shim_last_error()) == b""


FD = r"/proc/self/fd/\d+"


def test_an_image_that_does_not_load_fails_every_call_naming_it(built, broken, pool,
                                                                 messages):
    lib = Path(os.path.realpath(broken))
    image_path = f"{lib.parent}/{worker.NAME}"
    why = (f"cannot start interpreter 1 of 2: the worker image {image_path} does not load "
           f"\\({FD}: file too short\\): install the library again")
    result = _run(pool, "--library", lib, 2, 1, messages[0], code=1)
    first, *_ = result.stderr.splitlines()
    assert re.fullmatch(f"dnsshim: DNS_SHIM_ERR_INIT: {why}", first), first
    assert re.fullmatch(f"FAIL dns_shim_init: DNS_SHIM_ERR_INIT: {why}",
                        result.stderr.splitlines()[-1])
    # Every call, through the environment's parallelism: -14 and why, the
    # first two trying an interpreter each, the third none left to try.
    out = _run(built.test_prog, "--detail", *messages[:3], code=None,
               env={"DNS_SHIM_PARALLELISM": "2", "LD_LIBRARY_PATH": str(lib.parent)})
    log = split_log(out.stdout)
    second = why.replace("interpreter 1 of", "interpreter 2 of")
    for path, expected in zip(map(str, messages[:3]), (
            why, second, f"no interpreter of the 2 could start; the last: {second}")):
        assert next(line for line in log[path] if line.startswith("status ")).split()[1] \
            == "-14"
        detail = next(line for line in log[path] if line.startswith("detail "))
        assert re.fullmatch(f"detail DNS_SHIM_ERR_INIT: {expected}", detail), detail


@pytest.mark.parametrize("value, warning", [
    ("x", "DNS_SHIM_PARALLELISM=x is not a number from 0 to 64: parallelism stays 1"),
    ("65", "DNS_SHIM_PARALLELISM=65 is not a number from 0 to 64: parallelism stays 1"),
    ("-2", "DNS_SHIM_PARALLELISM=-2 is not a number from 0 to 64: parallelism stays 1"),
    ("2", "DNS_SHIM_PARALLELISM=2 is not taken, parallelism stays 1: "
          "DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 needs the worker image {lib}/"
          "libdnsshim_worker.so, which this installation does not have: pip install . and "
          "build_ffi.py --prefix build it where Debian's python3-dev and libffi-dev are "
          "installed"),
])
def test_an_environment_value_it_cannot_take_is_logged_and_one_interpreter_parses(
        built, messages, value, warning):
    lib = Path(os.path.realpath(built.dir / "libdnsshim.so.1")).parent
    result = _run(built.test_prog, "--detail", messages[0],
                  env={"DNS_SHIM_PARALLELISM": value})
    assert result.stderr.splitlines()[0] == "dnsshim: " + warning.format(lib=lib)
    assert "status 0" in result.stdout


def test_a_firmware_object_runs_the_stress_mix_on_its_copies(parallel_firmware, mix):
    """dnsshim_stress linked with the object of --parallelism 2 alone, four
    threads over its two copies (the environment sets the parallelism)."""
    program = _link(parallel_firmware, ROOT / "tests" / "c" / "dnsshim_stress.c",
                    parallel_firmware / "dnsshim_stress")
    out = _run(program, "threads", "--threads", "4", "--calls", "2000", *mix,
               env={"DNS_SHIM_PARALLELISM": "2"}).stdout
    assert "ok threads: 4 threads x 2000 calls" in out and ", 0 wrong" in out
    assert "FAIL" not in out


def test_a_firmware_object_refuses_more_than_its_copies_naming_the_build(firmware_front,
                                                                         parallel_firmware,
                                                                         pool, messages):
    manifest = (parallel_firmware / "share" / "dnsshim" / "firmware.json").read_text()
    assert '"parallelism": 2,' in manifest
    result = _run(pool, "--library", firmware_front, 3, 1, messages[0], code=1)
    assert result.stderr.splitlines()[-1] == (
        "FAIL dns_shim_set_parallelism(3): DNS_SHIM_ERR_UNSUPPORTED: parallelism 3 needs 3 "
        "interpreters, and this firmware object has 2: build it with python -m shim firmware "
        "--parallelism 3")


def test_a_firmware_object_without_parallelism_refuses_it_naming_the_image(firmware, pool,
                                                                          messages, tmp_path):
    """The object of one interpreter keeps the library's pool: it looks for
    the worker image beside the program (here, the shared object)."""
    out = worker.link(firmware / "lib" / "libdnsshim_fw.o", tmp_path / "libdnsshim_fw.so")
    result = _run(pool, "--library", out, 2, 1, messages[0], code=1)
    assert result.stderr.splitlines()[-1] == (
        f"FAIL dns_shim_set_parallelism(2): DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 "
        f"needs the worker image {os.path.realpath(tmp_path)}/{worker.NAME}, which this "
        f"installation does "
        f"not have: pip install . and build_ffi.py --prefix build it where Debian's "
        f"python3-dev and libffi-dev are installed")


@pytest.fixture(scope="module")
def pool_limit(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool-limit") / "pool_limit"
    return pipeline.compile_program([ROOT / "tests" / "c" / "pool_limit.c"], out,
                                    libraries=(), cflags=STRICT)


def test_the_memory_limit_counts_every_interpreter_of_the_pool(pooled, pool_limit, messages):
    """The smallest limit (to 64 KiB) under which a pool with one started
    interpreter parses a message refuses it once both run; twice that
    and more parses it."""
    answer = next(m for m in messages if m.name == "vector_ims.bin")

    def status(started, limit):
        out = _run(pool_limit, pooled, started, limit, answer).stdout
        return int(out.split(" ", 1)[0]), out.rstrip("\n")

    low, high = 1 << 20, 256 << 20  # refused at low, parsed at high
    assert status(1, low)[0] == -13 and status(1, high)[0] == 0
    while high - low > 64 << 10:
        middle = (low + high) // 2
        if status(1, middle)[0] == 0:
            high = middle
        else:
            low = middle
    assert status(2, high) == (-13, f"-13 DNS_SHIM_ERR_NO_MEMORY: parsing the message would "
                                    f"take the runtime above its memory limit of {high} bytes "
                                    f"(dns_shim_set_memory_limit)")
    assert status(2, 2 * high + (2 << 20)) == (0, "0 ")


HOST = """
import ctypes, sys
before = set(sys.modules)
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
lib.process_dns_response.argtypes = [ctypes.c_char_p, ctypes.c_int32]
lib.dns_shim_set_parallelism.argtypes = [ctypes.c_uint32]
lib.dns_shim_last_error.restype = ctypes.c_char_p
wire = bytes.fromhex(sys.argv[2])
print(lib.dns_shim_set_parallelism(2), lib.dns_shim_init())
print(lib.process_dns_response(wire, len(wire)), lib.process_dns_response(wire[:20], 20))
print(lib.dns_shim_last_error().decode())
print(sorted(set(sys.modules) - before - {"ctypes", "_ctypes", "ctypes._endian", "struct",
                                          "_struct"}))
"""


def test_set_by_a_program_loaded_into_a_python_program_it_answers_and_adds_no_module(
        front, built, tmp_path):
    """Debian's python3.11 (whose own libpython is in the process) loads the
    library, which sets parallelism 2: the pool parses, apart from the
    program's interpreter."""
    from test_worker import ANSWER

    python = require_program("/usr/bin/python3.11", "python3.11")
    out = _run(python, "-I", "-c", HOST, front, ANSWER, timeout=600)
    started, statuses, detail, added = out.stdout.splitlines()
    assert started == "0 0"
    assert statuses == "0 -4"
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(bytes.fromhex(ANSWER)[:20])
    library = _run(built.test_prog, "--detail", truncated, code=None).stdout.splitlines()
    assert library[-1] == f"detail {detail}"
    assert added == "[]"


# ---- libdnsshim_ares in the pool ---------------------------------------------------------

#: c-ares's ARES_ENOTINITIALIZED.
ENOTINITIALIZED = 21


def _ares_program(built, where: Path, name: str, source: Path) -> Path:
    """A program written against <ares.h>, linked with libdnsshim_ares, its
    run path the folder ``where`` (a front: the libraries and an image)."""
    require_cares()
    cflags, libs = cprograms.cares_flags()
    return pipeline.compile_program(
        [source], where.parent / f"{where.name}-{name}", against=built.dir,
        libraries=("dnsshim_ares",), rpath=str(where),
        cflags=(*STRICT, *cflags), flags=tuple(f for f in libs if not f.startswith("-l")))


@pytest.fixture(scope="module")
def ares_threads(built, front):
    return _ares_program(built, front.parent, "ares_threads", ROOT / "tests" / "c" /
                         "ares_threads.c")


@pytest.fixture(scope="module")
def ares_one(ares_threads, messages):
    """ares_threads's output with one thread and the library's own interpreter."""
    result = _run(ares_threads, 1, *messages)
    assert result.stderr == ""
    assert result.stdout.count("\n# ") + 1 == len(messages)
    return result.stdout


def test_c_ares_parsers_from_four_threads_over_two_interpreters_print_what_one_prints(
        ares_threads, ares_one, messages):
    result = _run(ares_threads, 4, *messages, env={"DNS_SHIM_PARALLELISM": "2"})
    assert result.stderr == ""
    assert result.stdout == ares_one
    assert re.search(r"^a host=1 ttls=8 rc=0 name=.* naddrttls=[1-9]", ares_one, re.M)
    assert re.search(r"^mx rc=0 \{", ares_one, re.M)
    assert re.search(r"^soa rc=10$", ares_one, re.M)  # ARES_EBADRESP


def test_ares_dns_parse_in_the_pool_gives_what_one_interpreter_gives(ares_dnsrec, front,
                                                                       messages):
    ours = front.parent / pipeline.DNSSHIM_ARES.soname
    one = cares_source.run_driver(ares_dnsrec, messages, preload=ours)
    pooled = cares_source.run_driver(ares_dnsrec, messages, preload=ours,
                                     env={"DNS_SHIM_PARALLELISM": "2"})
    assert pooled == one
    statuses = [status for status, _ in one.values()]
    assert statuses.count(0) > 0 and len(statuses) - statuses.count(0) > 0


def test_valgrind_with_c_ares_parsers_on_four_threads_over_two_interpreters(ares_threads,
                                                                           ares_one, messages):
    from test_c_programs import VALGRIND, _require_valgrind

    _require_valgrind()
    some = messages[::6]
    result = _run(*VALGRIND, f"--suppressions={pipeline.SUPPRESSIONS}", ares_threads, 4, *some,
                  env={"DNS_SHIM_PARALLELISM": "2"})
    assert "ERROR SUMMARY" not in result.stderr
    assert result.stdout.split("\n# ")[0].startswith(f"# {some[0]}\n")


def test_an_image_without_the_c_ares_layer_refuses_its_parses_naming_the_fix(
        built, firmware, messages, tmp_path):
    """An image linked from a firmware object built without libdnsshim_ares's
    module: libdnsshim's own calls still parse in the pool (the pool tests
    above run on such copies too); libdnsshim_ares's return
    ARES_ENOTINITIALIZED, each logging why."""
    where = tmp_path / "plain"
    where.mkdir()
    image = worker.link(firmware / "lib" / "libdnsshim_fw.o", tmp_path / worker.NAME)
    _library_copy(built, where, image.read_bytes())
    program = _ares_program(built, where, "ares_threads", ROOT / "tests" / "c" / "ares_threads.c")
    result = _run(program, 1, messages[0], env={"DNS_SHIM_PARALLELISM": "2"})
    lines = result.stdout.splitlines()
    assert lines[0] == f"# {messages[0]}"
    assert lines[1].startswith(f"a host=1 ttls=8 rc={ENOTINITIALIZED} ")
    assert {line.split(" rc=")[1].split(" ")[0] for line in lines[1:-1]} == {
        str(ENOTINITIALIZED)}
    assert result.stderr.splitlines()[0] == (
        "dnsshim_ares: no interpreter of the pool can parse (DNS_SHIM_ERR_UNSUPPORTED: the "
        "pool's interpreters have no c-ares layer: the worker image beside the library was "
        "built without it; install the library again); returning ARES_ENOTINITIALIZED")


def test_an_image_that_does_not_load_fails_c_ares_parses_naming_it(built, broken, messages):
    """libdnsshim logs why the interpreter did not start, as for its own
    calls; each c-ares parse then says it found none and returns
    ARES_ENOTINITIALIZED."""
    where = Path(os.path.realpath(broken)).parent
    program = _ares_program(built, where, "ares_threads", ROOT / "tests" / "c" / "ares_threads.c")
    result = _run(program, 1, messages[0], env={"DNS_SHIM_PARALLELISM": "2"})
    why = (f"cannot start interpreter 1 of 2: the worker image {where}/{worker.NAME} does not "
           f"load \\({FD}: file too short\\): install the library again")
    first, second, *_ = result.stderr.splitlines()
    assert re.fullmatch(f"dnsshim: DNS_SHIM_ERR_INIT: {why}", first), first
    assert re.fullmatch(f"dnsshim_ares: no interpreter of the pool can parse "
                        f"\\(DNS_SHIM_ERR_INIT: {why}\\); returning ARES_ENOTINITIALIZED",
                        second), second
    lines = result.stdout.splitlines()
    assert {line.split(" rc=")[1].split(" ")[0] for line in lines[1:-1]} == {
        str(ENOTINITIALIZED)}
