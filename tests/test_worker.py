"""The worker image (dnsshim_build/worker.py): the firmware object as a shared
object that can be loaded many times in one process, each load a private
interpreter, for a pool that parses on several cores.

What it exports is the library's API, in the library's version nodes, and
the entry points the libraries' pool calls (its own node): the memory
account, and libdnsshim_ares's bridge;
it needs the C library and nothing else, binds every reference to itself and
resolves everything when loaded.  Two instances loaded from memfds of one
image are two interpreters: four threads sharing two give, message for
message, what a fresh process with one instance and one thread gives
(statuses, failure detail, every record), and that is what the ordinary
library gives.  One instance fed test_history.py's poison (every type under
every kind of class) and then every victim, then put under a 1-byte memory
limit with a callback set registered, refuses every message, while the other
answers the victims (the history differential's messages, the tests' and the
corpus) as a fresh process does.  A child forked after every instance started
and parsed gets instances that answer as a fresh process does.  Loaded into a
Python program (Debian's python3.11, whose own libpython is in the process),
an instance answers and adds no module to the program.  valgrind finds no
error and no leak with four threads over two instances.

The image is made from the firmware object, so it needs what that build
needs (test_firmware.py): without it these tests skip naming the package;
under CI=true they fail.  (Calls per second by threads and instances, and the
memory each instance adds: tests/bench/benchmark.py.)
"""

import os
import subprocess
import time

import pytest

from dnsshim_build import pipeline, worker
from conftest import ROOT, built_once, require_program, write_messages
from cprograms import STRICT
from pool_output import library_verdicts, pool_lines, verdicts
from test_firmware import _require_debian_python


#: What the image may leave for the C library and the loader to define: weak
#: hooks of gcc's start files that nothing provides in a normal process.
WEAK_UNDEFINED = {"_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable", "__gmon_start__"}


@pytest.fixture(scope="session")
def image(tmp_path_factory):
    """The image as the install builds it (worker.build): the firmware
    object with libdnsshim_ares's module, linked."""
    _require_debian_python()
    return built_once(tmp_path_factory, "worker", _image) / worker.NAME


def _image(folder):
    """The image the test command's editable install built, when its inputs
    are this tree's (worker.reuse), else one built here."""
    if not worker.reuse(ROOT / "shim" / "lib", folder / worker.NAME):
        worker.build(folder / worker.NAME)


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    out = tmp_path_factory.mktemp("pool") / "pool_instances"
    return pipeline.compile_program([ROOT / "tests" / "c" / "pool_instances.c"], out,
                                    libraries=(), cflags=STRICT)


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    return write_messages(tmp_path_factory.mktemp("worker-messages"), accepted=True,
                          corpus=("good", "bad", "captures", "cares-fuzzinput"))


def _run(*args, timeout=1800):
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, timeout=timeout)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


@pytest.fixture(scope="module")
def alone(image, pool, messages):
    """The messages' lines from a fresh process with one instance and one
    thread: what every other arrangement must print."""
    lines = pool_lines(_run(pool, image, 1, 1, *messages), 1)
    assert len(lines) == len(messages)
    return lines


def test_it_exports_the_api_in_the_librarys_version_nodes_and_its_private_entries(image):
    defined, _ = worker.dynamic_symbols(image)
    api = pipeline.header_functions()
    expected = {f"{name}@@{node}" for node, names in pipeline.version_nodes().items()
                for name in names if name in api}
    assert {name.split("@")[0] for name in expected} == api
    assert worker.PRIVATE == ("dns_shim__pool_account", "dns_shim__instance_fork",
                              "dnsshim_ares__compute",
                              "dnsshim_ares__done", "dnsshim_ares__message",
                              "dnsshim_ares__message_done")
    assert defined == expected | {f"{name}@@DNSSHIM_WORKER_PRIVATE" for name in worker.PRIVATE}


def test_it_needs_the_c_library_alone_and_binds_to_itself(image):
    _, undefined = worker.dynamic_symbols(image)
    assert {name for name in undefined if "@GLIBC_" not in name} == WEAK_UNDEFINED
    dynamic = subprocess.run(["readelf", "-dW", str(image)], capture_output=True, text=True,
                             check=True).stdout
    needed = {line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line}
    assert needed <= {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}
    flags = next(line for line in dynamic.splitlines() if "(FLAGS)" in line)
    assert "SYMBOLIC" in flags and "BIND_NOW" in flags
    assert "TEXTREL" not in dynamic


def test_threads_sharing_instances_give_what_one_fresh_instance_gives(image, pool, messages,
                                                                     alone):
    assert pool_lines(_run(pool, image, 2, 4, *messages), 2) == alone


def test_one_instance_gives_the_librarys_statuses_and_detail(built, messages, alone):
    ours = verdicts(alone)
    assert ours == library_verdicts(_run(built.test_prog, "--detail", *messages), messages)
    statuses = [verdict.split(" ")[1] for verdict in ours]
    assert statuses.count("0") > 0 and len(statuses) - statuses.count("0") > 0


@pytest.fixture(scope="module")
def history_sets(tmp_path_factory):
    """test_history.py's poison (every type under every kind of class, each
    type first under a class other than IN) and its victims (the same
    shuffled with mutants biased to the class and type fields), as files."""
    import history

    where = tmp_path_factory.mktemp("history")
    sets = {}
    for kind, wires in (("poison", history.biased_messages()),
                        ("victim", history.differential_messages(seed=29, mutants=300))):
        sets[kind] = []
        for i, wire in enumerate(wires):
            sets[kind].append(where / f"{kind}_{i:05d}.bin")
            sets[kind][-1].write_bytes(wire)
    return sets


def test_a_poisoned_instance_leaves_the_other_as_a_fresh_one(image, pool, messages,
                                                             history_sets):
    victims = [*history_sets["victim"], *messages]
    alone = pool_lines(_run(pool, image, 1, 1, *victims), 1)
    after_poison = pool_lines(_run(pool, image, 2, 2, "--poison", len(history_sets["poison"]),
                               *history_sets["poison"], *victims), 2)
    assert len(alone) == len(victims)
    assert after_poison == alone


def test_a_forked_child_gets_working_instances(image, pool, messages, alone):
    assert pool_lines(_run(pool, image, 2, 4, "--fork", *messages), 2) == alone


HOST = """
import ctypes, sys
before = set(sys.modules)
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
lib.process_dns_response.argtypes = [ctypes.c_char_p, ctypes.c_int32]
lib.dns_shim_last_error.restype = ctypes.c_char_p
lib.dns_shim_version.restype = ctypes.c_char_p
wire = bytes.fromhex(sys.argv[2])
print(lib.process_dns_response(wire, len(wire)), lib.process_dns_response(wire[:20], 20))
print(lib.dns_shim_last_error().decode())
print(lib.dns_shim_version().decode())
print(sorted(set(sys.modules) - before - {"ctypes", "_ctypes", "ctypes._endian", "struct",
                                          "_struct"}))
"""

#: www.example.com A 93.184.216.34
ANSWER = "12348180000100010000000003777777076578616d706c6503636f6d0000010001" \
         "c00c000100010000012c00045db8d822"


def test_an_instance_in_a_python_program_answers_and_adds_no_module(built, image, tmp_path):
    python = require_program("/usr/bin/python3.11", "python3.11")
    out = subprocess.run([python, "-I", "-c", HOST, str(image), ANSWER], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    statuses, detail, version, added = out.stdout.splitlines()
    assert statuses == "0 -4"
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(bytes.fromhex(ANSWER)[:20])
    library = _run(built.test_prog, "--detail", truncated).splitlines()
    assert library[-2].startswith("status -4 ")
    assert detail and library[-1] == f"detail {detail}"
    assert version.startswith(pipeline.header_version() + " (CPython 3.11")
    assert added == "[]"


def test_valgrind_with_four_threads_over_two_instances(image, pool, messages):
    from test_c_programs import VALGRIND, _require_valgrind

    _require_valgrind()
    some = [m for m in messages if m.name.startswith(("vector_", "bad_"))]
    result = subprocess.run([*VALGRIND, str(pool), str(image), "2", "4", *map(str, some)],
                            capture_output=True, text=True, timeout=1800,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.splitlines()[-1] == "instances 2 distinct 2"


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory, monkeypatch):
    """Each test its own empty user's cache: an image the machine's installs
    kept is never taken by a test that replaces the build."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def _counting_build(calls):
    def build(out, version="", verbose=False, debug=False):
        calls.append(debug)
        out.write_bytes(f"image {len(calls)}".encode())
        return out
    return build


def test_an_install_takes_the_image_of_the_same_inputs_from_the_cache(tmp_path, monkeypatch,
                                                                      own_cache):
    """build_into keeps the image it built in the user's cache by its
    inputs' digest, and takes it from there for the same inputs (another
    install, another copy of the tree) instead of building it again; other
    inputs build anew; the three used last are kept."""
    calls, key = [], ["k1"]
    monkeypatch.setattr(worker, "unavailable", lambda version="": "")
    monkeypatch.setattr(worker, "build", _counting_build(calls))
    monkeypatch.setattr(worker, "cache_key", lambda version="": key[0])
    assert worker.build_into(tmp_path / "a") == tmp_path / "a" / worker.NAME
    assert worker.build_into(tmp_path / "b") == tmp_path / "b" / worker.NAME
    assert calls == [False]
    assert (tmp_path / "b" / worker.NAME).read_bytes() == b"image 1"
    assert os.stat(tmp_path / "b" / worker.NAME).st_mode & 0o777 == 0o755
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [worker.NAME]
    entry = own_cache / "dnsshim" / "worker" / "k1"
    assert (entry / worker.NAME).read_bytes() == b"image 1"
    assert os.stat(own_cache / "dnsshim" / "worker").st_mode & 0o777 == 0o700
    for n, k in enumerate(("k2", "k3", "k4"), 2):
        key[0] = k
        worker.build_into(tmp_path / k)
        assert (tmp_path / k / worker.NAME).read_bytes() == f"image {n}".encode()
        time.sleep(0.01)  # each entry's use later than the last's
    assert sorted(p.name for p in (own_cache / "dnsshim" / "worker").iterdir()) == \
        ["k2", "k3", "k4"]


@pytest.mark.parametrize("whose", ["another user's file", "a file others can write",
                                   "a folder others can write", "a link"])
def test_an_image_in_the_cache_not_the_users_own_is_not_taken(tmp_path, monkeypatch, own_cache,
                                                               whose):
    """An entry that another user owns, or anyone else can write (or
    change: its folder), or a link, is not taken: the image is built."""
    calls = []
    monkeypatch.setattr(worker, "unavailable", lambda version="": "")
    monkeypatch.setattr(worker, "build", _counting_build(calls))
    monkeypatch.setattr(worker, "cache_key", lambda version="": "k")
    worker.build_into(tmp_path / "a")
    entry = own_cache / "dnsshim" / "worker" / "k"
    image = entry / worker.NAME
    if whose == "another user's file":
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        os.chown(image, 65534, 65534)
    elif whose == "a file others can write":
        os.chmod(image, 0o757)
    elif whose == "a folder others can write":
        os.chmod(entry, 0o777)
    else:
        (tmp_path / "elsewhere").mkdir()
        os.rename(entry, tmp_path / "elsewhere" / "k")
        os.symlink(tmp_path / "elsewhere" / "k", entry)
    assert worker.build_into(tmp_path / "b") == tmp_path / "b" / worker.NAME
    assert calls == [False, False]
    assert (tmp_path / "b" / worker.NAME).read_bytes() == b"image 2"


def test_a_distribution_s_build_neither_reads_nor_writes_the_cache(tmp_path, monkeypatch,
                                                                   own_cache):
    """required (a distribution's build, its image with its debugging
    information): built every time, nothing kept."""
    calls = []
    monkeypatch.setattr(worker, "unavailable", lambda version="": "")
    monkeypatch.setattr(worker, "build", _counting_build(calls))
    monkeypatch.setattr(worker, "cache_key", lambda version="": "k")
    worker.build_into(tmp_path / "a")
    worker.build_into(tmp_path / "b", required=True)
    worker.build_into(tmp_path / "c", required=True)
    assert calls == [False, True, True]
    assert (tmp_path / "c" / worker.NAME).read_bytes() == b"image 3"
    assert (own_cache / "dnsshim" / "worker" / "k" / worker.NAME).read_bytes() == b"image 1"


def test_the_cache_key_is_the_inputs_wherever_the_tree_is(tmp_path, monkeypatch):
    """cache_key: the inputs' digest without the tree's path (a copy of the
    tree makes the same image), which inputs_digest has."""
    _require_debian_python()
    for where in ("one", "two"):
        _tree(tmp_path / where)
    monkeypatch.setattr(worker.pipeline, "ROOT", tmp_path / "one")
    one, one_stamp = worker.cache_key(), worker.inputs_digest()
    monkeypatch.setattr(worker.pipeline, "ROOT", tmp_path / "two")
    assert worker.cache_key() == one and len(one) == 64
    assert worker.inputs_digest() != one_stamp
    (tmp_path / "two" / "csrc" / "lib" / "a.c").write_text("int b;")
    assert worker.cache_key() != one


def test_an_install_that_cannot_build_the_image_leaves_none_and_says_why(tmp_path, monkeypatch,
                                                                        capsys):
    """build_into, where the build cannot run: an image an earlier build left
    in the folder (a reused build/ directory) is removed, never shipped, and
    the reason is printed in one line and written beside the library, where
    the library's refusal quotes it (test_parallelism)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / worker.NAME).write_bytes(b"an older version's image")
    monkeypatch.setattr(worker, "unavailable", lambda version="": "libffi_pic.a is not\n  there")
    assert worker.build_into(lib) is None
    assert sorted(p.name for p in lib.iterdir()) == [worker.NOTE]
    assert (lib / worker.NOTE).read_text() == "libffi_pic.a is not there\n"
    assert capsys.readouterr().err == ("dnsshim: no worker image, parallelism above 1 will be "
                                       "refused (DNS_SHIM_ERR_UNSUPPORTED): libffi_pic.a is "
                                       "not there\n")


def test_an_install_that_builds_the_image_leaves_no_note(tmp_path, monkeypatch):
    """... and where it can, an earlier build's note goes (the build itself
    replaced by a stub that writes the image: the real build is image's)."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / worker.NOTE).write_text("an earlier build's reason\n")
    (lib / worker.NAME).write_bytes(b"an older version's image")
    seen = []

    def build(out, version="", verbose=False, debug=False):
        seen.append(out.exists())
        out.write_bytes(b"this build's image")
        return out

    monkeypatch.setattr(worker, "unavailable", lambda version="": "")
    monkeypatch.setattr(worker, "build", build)
    assert worker.build_into(lib) == lib / worker.NAME
    assert seen == [False]  # the old image was gone before the build
    assert sorted(p.name for p in lib.iterdir()) == [worker.NAME]
    assert (lib / worker.NAME).read_bytes() == b"this build's image"


# ---- the editable install's image, taken by the tests ------------------------------


def _tree(root):
    """A source tree with one file of each kind inputs_digest reads or skips."""
    for rel, text in {"build_ffi.py": "", "setup.py": "", "pyproject.toml": "",
                      "csrc/lib/a.c": "int a;", "dnsshim_build/b.py": "", "shim/c.py": "",
                      "shim/lib/libdnsshim.so.1": "built", "shim/__pycache__/c.pyc": "x",
                      "csrc/lib/__pycache__/d.pyc": "x"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_inputs_digest_follows_the_sources_and_nothing_built(tmp_path, monkeypatch):
    """inputs_digest: a byte changed in the C, the build code or the Python
    side, or a file added, changes it; what an editable install builds into
    shim/ and Python's caches do not."""
    _require_debian_python()
    monkeypatch.setattr(worker.pipeline, "ROOT", tmp_path)
    _tree(tmp_path)
    first = worker.inputs_digest()
    assert len(first) == 64 and worker.inputs_digest() == first
    (tmp_path / "shim" / "lib" / "libdnsshim.so.1").write_text("built again")
    (tmp_path / "shim" / "__pycache__" / "c.pyc").write_text("y")
    (tmp_path / "shim" / "lib" / worker.STAMP).write_text("stamp")
    assert worker.inputs_digest() == first
    for rel in ("csrc/lib/a.c", "dnsshim_build/b.py", "shim/c.py", "setup.py"):
        before = (tmp_path / rel).read_text()
        (tmp_path / rel).write_text(before + " ")
        assert worker.inputs_digest() != first, rel
        (tmp_path / rel).write_text(before)
    (tmp_path / "csrc" / "new.h").write_text("")
    assert worker.inputs_digest() != first
    monkeypatch.setenv("CFLAGS", "-O0")
    (tmp_path / "csrc" / "new.h").unlink()
    assert worker.inputs_digest() != first


def test_the_image_is_taken_only_with_its_inputs_stamp(tmp_path, monkeypatch):
    """reuse: the editable install's image is copied when its stamp is the
    digest of this tree's inputs; with another stamp, none, or no image,
    nothing is copied (the tests build their own)."""
    lib, out = tmp_path / "lib", tmp_path / "out.so"
    lib.mkdir()
    monkeypatch.setattr(worker, "inputs_digest", lambda version="": "d" * 64)
    assert not worker.reuse(lib, out)
    (lib / worker.NAME).write_bytes(b"the editable install's image")
    assert not worker.reuse(lib, out)
    (lib / worker.STAMP).write_text("e" * 64 + "\n")
    assert not worker.reuse(lib, out) and not out.exists()
    (lib / worker.STAMP).write_text("d" * 64 + "\n")
    assert worker.reuse(lib, out)
    assert out.read_bytes() == b"the editable install's image"
    monkeypatch.setattr(worker, "inputs_digest", lambda version="": "")
    assert not worker.reuse(lib, tmp_path / "again.so")


def test_an_editable_build_stamps_its_image_with_the_digest_taken_before(tmp_path, monkeypatch):
    """build_into(stamp=True) writes the digest beside the image, taken
    before the build (a source changed during the build never matches);
    without stamp (every form that ships) no stamp, and an earlier one goes."""
    calls = []

    def build(out, version="", verbose=False, debug=False):
        calls.append("build")
        out.write_bytes(b"image")
        return out

    def digest(version=""):
        calls.append("digest")
        return "f" * 64

    monkeypatch.setattr(worker, "unavailable", lambda version="": "")
    monkeypatch.setattr(worker, "build", build)
    monkeypatch.setattr(worker, "inputs_digest", digest)
    monkeypatch.setattr(worker, "cache_key", lambda version="": "")  # no cache
    lib = tmp_path / "lib"
    assert worker.build_into(lib, stamp=True) == lib / worker.NAME
    assert calls == ["digest", "build"]
    assert (lib / worker.STAMP).read_text() == "f" * 64 + "\n"
    assert worker.build_into(lib) == lib / worker.NAME
    assert sorted(p.name for p in lib.iterdir()) == [worker.NAME]


def test_the_suite_takes_the_test_commands_image(image):
    """The README's test command installs the tree editable, which builds and
    stamps an image: the suite's image is that one, byte for byte, not a
    second build (where the tree was installed so; CI always is)."""
    lib = ROOT / "shim" / "lib"
    if not (lib / worker.STAMP).is_file():
        if os.environ.get("CI"):
            pytest.fail(f"no {worker.STAMP} in {lib}: CI runs the README's test command, "
                        "whose editable install stamps its image")
        pytest.skip("this tree has no editable install's image")
    if (lib / worker.STAMP).read_text().strip() != worker.inputs_digest():
        if os.environ.get("CI"):
            pytest.fail("the editable install's image was stamped with other inputs than "
                        "this tree's, in CI, where nothing changes after the install")
        pytest.skip("the tree changed since its editable install: the suite built its own image")
    assert image.read_bytes() == (lib / worker.NAME).read_bytes()
