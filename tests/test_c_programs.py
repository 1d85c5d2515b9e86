"""The C programs: what a C program linked with -ldnsshim really sees.

dnsshim_test prints every field of every callback; these tests compare its
output with reference.expected_log (dnspython's own parse of the same bytes),
over the test vectors, the malformed cases and the real corpus; run it under
valgrind; in a minimal environment; and with a runtime that cannot start.
"""

import os
import re
import subprocess
import sys

import pytest

import cprograms
import expected_status
import malformed
import reference
import vectors
from conftest import (ROOT, available_corpus, require_corpus, require_program, run_test_prog,
                      split_log)
from shim.status import Status
from test_status import TEXTS

STRERROR_OK = "status 0 success"


@pytest.fixture(scope="module")
def vector_files(tmp_path_factory):
    """The vectors, the malformed cases and the accepted controls as files."""
    d = tmp_path_factory.mktemp("messages")
    files = {}
    for name in vectors.NAMES:
        files[name] = d / f"vector_{name}.bin"
        files[name].write_bytes(vectors.wire(name))
    for name, (wire, _) in malformed.CASES.items():
        files[name] = d / f"bad_{name}.bin"
        files[name].write_bytes(wire)
    for name, wire in malformed.ACCEPTED.items():
        files[name] = d / f"ok_{name}.bin"
        files[name].write_bytes(wire)
    return files


def check_logs(stdout, files):
    """Each file's log equals what dnspython says, or, for a message the
    library rejects, is only the expected status line: no callback ran."""
    logs = split_log(stdout)
    assert len(logs) == len(files)
    for path, expected in files:
        assert logs[str(path)] == expected, path


def expected_for(wire, status=None):
    if status is None:
        return reference.expected_log(wire)
    return [f"status {int(status)} {STRERROR[status]}"]


#: the texts the C side prints, written out by hand (test_status.TEXTS), not
#: read from the library under test
STRERROR = dict(TEXTS)


def test_api_contract_from_c(built):
    result = run_test_prog(built, "--api")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "api: 0 failed" in result.stdout
    assert "FAIL" not in result.stdout


@pytest.mark.parametrize("mode", [[], ["--registered"]], ids=["dns_shim_process", "registered"])
def test_vectors_and_malformed_from_c(built, vector_files, mode):
    files = []
    for name in vectors.NAMES:
        files.append((vector_files[name], expected_for(vectors.wire(name))))
    for name, (wire, status) in malformed.CASES.items():
        files.append((vector_files[name], expected_for(wire, status)))
    for name, wire in malformed.ACCEPTED.items():
        files.append((vector_files[name], expected_for(wire)))
    result = run_test_prog(built, *mode, *[f for f, _ in files])
    assert result.returncode == 0, result.stderr
    check_logs(result.stdout, files)


@pytest.mark.parametrize("options, kwargs", [
    (["--sections", "0"], {"sections": 0}),
    (["--sections", "6"], {"sections": 6}),
    (["--no-typed"], {"typed": False}),
    (["--no-typed", "--no-other"], {"typed": False, "other": False}),
    (["--stop-at", "1"], {"stop_at": 1}),
    (["--stop-at", "20"], {"stop_at": 20}),
])
def test_options_from_c(built, vector_files, options, kwargs):
    wire = vectors.wire("every_type")
    result = run_test_prog(built, *options, vector_files["every_type"])
    assert result.returncode == 0, result.stderr
    check_logs(result.stdout, [(vector_files["every_type"], reference.expected_log(wire, **kwargs))])


# FormError does not say which rule: the shim is finer (rdlength overrun,
# RDATA for its type, OPT placement). expected_status.formerror_status walks
# the framing to name the rule; each folder's split is pinned too, so a
# message moving between these statuses fails until named.
FORMERROR_SPLIT = {
    "bad": {Status.ERR_TRUNCATED: 1, Status.ERR_BAD_RDATA: 4, Status.ERR_BAD_EDNS: 1},
    "captures": {Status.ERR_TRUNCATED: 2, Status.ERR_BAD_RDATA: 8, Status.ERR_BAD_EDNS: 1},
    "cares-fuzzinput": {Status.ERR_BAD_RDATA: 1},
    "good": {},
}


def _rejected_status(path, formerror):
    """The exact status line a message dnspython rejects must show."""
    wire = path.read_bytes()
    error = reference.verdict(wire)["error"]
    status = expected_status.rejected_status(wire, error)
    assert status is not None, (path, error, wire.hex())
    if error == "FormError":
        formerror[status] = formerror.get(status, 0) + 1
    return expected_for(b"", status)


def _corpus_expectation(path):
    wire = path.read_bytes()
    if len(wire) > 65535:  # dnsshim_test passes the real length: no DNS message is that long
        return expected_for(wire, Status.ERR_BAD_LENGTH)
    if len(wire) >= 12 and not wire[2] & 0x80:
        return expected_for(wire, Status.ERR_NOT_RESPONSE)
    try:
        return reference.expected_log(wire)
    except Exception:  # noqa: BLE001 - dnspython rejects it: so must we
        return None


@pytest.mark.parametrize("folder", ["good", "captures", "cares-fuzzinput"])
def test_corpus_from_c(built, folder):
    paths = require_corpus(folder)
    result = run_test_prog(built, *paths)
    assert result.returncode == 0, result.stderr
    logs = split_log(result.stdout)
    accepted, formerror = 0, {}
    for path in paths:
        expected = _corpus_expectation(path)
        log = logs[str(path)]
        if expected is None:
            expected = _rejected_status(path, formerror)
        assert log == expected, (path, path.read_bytes().hex())
        accepted += expected[-1] == STRERROR_OK
    assert accepted > 0
    assert formerror == FORMERROR_SPLIT[folder]


def test_bad_corpus_all_rejected_from_c(built):
    paths = require_corpus("bad")
    result = run_test_prog(built, *paths)
    # every message read: exit 0 although each one is rejected
    assert result.returncode == 0, result.stderr
    logs, formerror = split_log(result.stdout), {}
    assert len(logs) == len(paths)
    for path in paths:
        expected = _corpus_expectation(path)
        if expected is None:
            expected = _rejected_status(path, formerror)
        assert expected[-1] != STRERROR_OK, path
        assert logs[str(path)] == expected, (path, path.read_bytes().hex())
    assert formerror == FORMERROR_SPLIT["bad"]


# ---- valgrind ----------------------------------------------------------------

VALGRIND = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect"]


def _require_valgrind():
    require_program("valgrind", "valgrind")


def test_valgrind_whole_corpus(built, vector_files):
    _require_valgrind()
    files = list(vector_files.values()) + available_corpus("good", "bad", "captures",
                                                           "cares-fuzzinput")
    result = subprocess.run([*VALGRIND, str(built.test_prog), "--registered", *files],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    assert len(split_log(result.stdout)) == len(files)
    assert "status 0 success" in result.stdout


def test_valgrind_api_and_stop(built, vector_files):
    _require_valgrind()
    result = subprocess.run([*VALGRIND, str(built.test_prog), "--api"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]
    result = subprocess.run([*VALGRIND, str(built.test_prog), "--stop-at", "5",
                             vector_files["every_type"], vector_files["ims"]],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.count("status -11 ") == 2


# ---- environments --------------------------------------------------------------


def test_minimal_environment(built, vector_files, tmp_path):
    """No PYTHONPATH, no PYTHONHOME, no venv on PATH, no LD_LIBRARY_PATH,
    another working directory: the pinned installation is found anyway."""
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}
    result = run_test_prog(built, vector_files["ims"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    check_logs(result.stdout, [(vector_files["ims"], reference.expected_log(vectors.wire("ims")))])


def test_hostile_python_environment_is_ignored(built, vector_files, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none",
           "PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent",
           "PYTHONSTARTUP": "/nonexistent", "PYTHONNOUSERSITE": "0"}
    result = run_test_prog(built, vector_files["good"], env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == STRERROR_OK


@pytest.fixture(scope="module")
def venv_without_dnspython(tmp_path_factory):
    d = tmp_path_factory.mktemp("venv") / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True)
    return d / "bin" / "python"


def test_init_failure_from_c_is_init_never_zero(built, vector_files, venv_without_dnspython):
    """A Python where dnspython cannot be imported: every call is
    DNS_SHIM_ERR_INIT, no callback runs, and stderr says why."""
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none",
           "DNS_SHIM_PYTHON": str(venv_without_dnspython)}
    files = [vector_files["good"], vector_files["ims"], vector_files["a_rdlength_3"]]
    result = run_test_prog(built, *files, env=env)
    logs = split_log(result.stdout)
    for f in files:
        assert logs[str(f)] == [f"status -14 {STRERROR[Status.ERR_INIT]}"]
    # The bare virtualenv has neither cffi's backend nor dnspython: one line
    # (tests/test_startup_failures.py checks each such line to the letter).
    assert result.stderr.startswith(
        "dnsshim: cannot start: cffi's backend (_cffi_backend) is not installed for ")
    assert result.stderr.count("\n") == 1


def test_init_failure_goes_to_the_log_handler(built, vector_files, venv_without_dnspython):
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none",
           "DNS_SHIM_PYTHON": str(venv_without_dnspython)}
    result = run_test_prog(built, "--log", vector_files["good"], vector_files["ims"], env=env)
    assert result.stderr == "", "with a handler, nothing goes to stderr"
    logs = [line for line in result.stdout.splitlines() if line.startswith("log ")]
    assert len(logs) == 1 and logs[0].startswith(
        "log 3: cannot start: cffi's backend (_cffi_backend) is not installed for ")
    assert result.stdout.count("status -14 ") == 2
    assert "log with a wrong ctx" not in result.stdout


def test_init_failure_from_c_api_mode(built, venv_without_dnspython):
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none",
           "DNS_SHIM_PYTHON": str(venv_without_dnspython)}
    result = run_test_prog(built, "--api", env=env)
    assert "ok process_dns_response(NULL, 19) = -1" in result.stdout  # no runtime needed
    assert "FAIL dns_shim_init() = -14" in result.stdout
    assert result.returncode == 1


INIT_FAILURE_SCRIPT = """
import sys, cffi
sys.modules["dns"] = None          # dnspython cannot be imported
sys.path.insert(0, {root!r})
from dnsshim_build import pipeline
ffi = cffi.FFI()
ffi.cdef(pipeline.header_cdef())
lib = ffi.dlopen({lib!r})
msg = bytes.fromhex({msg!r})
print(lib.process_dns_response(ffi.NULL, -1))
print(lib.process_dns_response(msg, len(msg)))
print(lib.dns_shim_init())
print(lib.process_dns_response(msg, len(msg)))
"""


def _python_host(script, env=None):
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result


def test_python_host_state_does_not_reach_the_library(built):
    """A Python program in which dnspython cannot be imported (sys.modules
    says so): the library, a guest there with its own copy of its Python
    side (shim/guest.py), works all the same, and leaves that entry alone."""
    script = INIT_FAILURE_SCRIPT.format(root=str(ROOT), lib=str(built.lib),
                                        msg=malformed.GOOD.hex())
    result = _python_host(script + "print(sys.modules['dns'])\n")
    assert result.stdout.split() == ["-2", "0", "0", "0", "None"]
    assert result.stderr == ""


def test_init_failure_in_a_python_host(built, venv_without_dnspython):
    """In a Python program, a library whose installation has neither cffi's
    backend nor dnspython (DNS_SHIM_PYTHON: a bare virtualenv) refuses once,
    with one line saying so."""
    script = INIT_FAILURE_SCRIPT.format(root=str(ROOT), lib=str(built.lib),
                                        msg=malformed.GOOD.hex())
    result = _python_host(script, env=dict(os.environ,
                                           DNS_SHIM_PYTHON=str(venv_without_dnspython)))
    assert result.stdout.split() == ["-2", "-14", "-14", "-14"]
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert "cannot load its own Python side: its cffi backend cannot be loaded from its own " \
        "installation" in result.stderr
    assert "No module named '_cffi_backend'" in result.stderr
    assert result.stderr.startswith("dnsshim: cannot start: loaded into a Python program")


# A .pth line run by the site module of the library's own interpreter: a
# shim.embedded whose attach() does nothing.
NOT_ATTACHED_PTH = ("import sys, types; sys.modules['shim'] = types.ModuleType('shim'); "
                    "sys.modules['shim'].__path__ = []; "
                    "fake = sys.modules['shim.embedded'] = types.ModuleType('shim.embedded'); "
                    "fake.attach = lambda: None; sys.modules['shim'].embedded = fake\n")


def test_an_installations_pth_import_lines_never_run_in_the_runtime(built, vector_files,
                                                                    tmp_path):
    """The runtime's Python runs no site module: the site directories of its
    installation are on its path (this one's .pth path line is followed),
    but no .pth import line runs in it (this one would replace the shim
    package with one whose parser is never attached), nor sitecustomize (this
    one would exit the program)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / \
        "site-packages"
    import sysconfig
    (site / "build.pth").write_text(sysconfig.get_paths()["purelib"] + "\n" + NOT_ATTACHED_PTH)
    (site / "sitecustomize.py").write_text("import os\nos._exit(3)\n")
    env = {"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none",
           "DNS_SHIM_PYTHON": str(venv / "bin" / "python")}
    result = run_test_prog(built, vector_files["good"], env=env)
    assert result.returncode == 0, result.stderr
    assert split_log(result.stdout)[str(vector_files["good"])][-1] == "status 0 success"
    # the virtualenv is the runtime's sys.prefix, as site would make it
    check = subprocess.run([str(built.dump_prog), "--check"], capture_output=True, text=True,
                           env=env, timeout=600)
    assert check.returncode == 0, check.stderr
    runtime = re.search(r"^info: runtime: CPython \S+ \((.*?)\), ", check.stdout + check.stderr,
                        re.M)
    assert runtime and runtime.group(1) == str(venv)


def test_unattached_entry_point_is_init_never_zero(vector_files, tmp_path):
    """cffi returns 0 from an extern "Python" function with no body: the
    library must not read that as success.  (A library built from a copy of
    the tree whose shim.embedded.attach gives the parser no body: no
    installation can reach into the runtime to do that.)"""
    from test_install import source_copy

    clone = source_copy(tmp_path / "clone")
    with open(clone / "shim" / "embedded.py", "a", encoding="utf-8") as f:
        f.write("\n\ndef attach():  # this test's copy only: the parser gets no body\n"
                "    return None\n")
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(clone / "build_ffi.py"), "--out", str(out)], check=True,
                   capture_output=True, timeout=600)
    program = cprograms.build(out, ["dnsshim_test"])["dnsshim_test"]
    result = subprocess.run([str(program), str(vector_files["good"])], capture_output=True,
                            text=True, timeout=600)
    assert split_log(result.stdout)[str(vector_files["good"])] == [
        f"status -14 {STRERROR[Status.ERR_INIT]}"]
    assert "the parser is not attached" in result.stderr
    assert "could not be loaded" not in result.stderr


def test_dump_prints_the_ims_sample(built, tmp_path):
    sample = tmp_path / "ims.bin"
    subprocess.run([sys.executable, "-m", "shim.sample", str(sample)], check=True, cwd=ROOT)
    result = subprocess.run([str(built.dump_prog), str(sample)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "status: NOERROR" in out and "QUERY: 1, ANSWER: 2, AUTHORITY: 0, ADDITIONAL: 8" in out
    assert ('ims.mnc001.mcc001.3gppnetwork.org.\t300\tIN\tNAPTR\t10 50 "s" "SIP+D2T" "" '
            '_sip._tcp.ims.mnc001.mcc001.3gppnetwork.org.') in out
    assert ("_sip._tcp.ims.mnc001.mcc001.3gppnetwork.org.\t300\tIN\tSRV\t10 60 5060 "
            "pcscf1.ims.mnc001.mcc001.3gppnetwork.org.") in out
    assert "pcscf2.ims.mnc001.mcc001.3gppnetwork.org.\t3600\tIN\tAAAA\t2001:db8:2::10" in out
    assert "; EDNS: version: 0, flags:; udp: 1232" in out


def test_the_sample_writer_says_why_it_cannot_write(tmp_path):
    """A path it cannot write: one line naming the path and why, exit 1,
    no traceback."""
    result = subprocess.run([sys.executable, "-m", "shim.sample", str(tmp_path / "no" / "x.bin")],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 1
    assert result.stderr == (f"python -m shim.sample: cannot write {tmp_path}/no/x.bin: "
                             "No such file or directory\n")
    assert result.stdout == ""


@pytest.mark.parametrize("size, said", [(1, "1 byte"), (2, "2 bytes")])
def test_dump_says_a_files_size_in_words(built, tmp_path, size, said):
    path = tmp_path / "short.bin"
    path.write_bytes(b"\0" * size)
    result = subprocess.run([str(built.dump_prog), str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == f";; {path}, {said}"


def test_dump_rejects_malformed_with_strerror(built, vector_files):
    result = subprocess.run([str(built.dump_prog), str(vector_files["pointer_loop_of_two"])],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert f"{STRERROR[Status.ERR_BAD_NAME]} (-6)" in result.stderr


def test_valgrind_1_0_callbacks_and_the_query_in_exact_size_heap_blocks(built, tmp_path):
    """A program built against 1.0's header: its callbacks struct ends at
    on_other, and the library reads nothing past it (nor past the query)."""
    _require_valgrind()
    path = tmp_path / "good.bin"
    path.write_bytes(malformed.GOOD)
    result = subprocess.run([*VALGRIND, str(built.dir / "audit_edges"), "sizes", str(path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    size10 = 15 * 8  # struct_size, sections, ctx and 13 callbacks on LP64
    assert result.stdout.splitlines() == [
        f"1.0 callbacks in {size10} bytes: 0, 1 callbacks",
        "registered: 0, 1 callbacks",
        "query in 32 bytes: 0, 1 callbacks"]


def test_struct_size_flipped_by_another_thread_is_taken_once(built):
    """Another thread flips the callbacks set's struct_size between its size
    and 65536 while it is registered: each call reads it once, so it either
    takes the set (0) or refuses it; it never copies the 65536 bytes it
    refused (test_plan_checks runs this under ASan too)."""
    result = subprocess.run([str(built.dir / "audit_edges"), "flip", "1000000"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert result.stdout == "flip: each call 0 or refused\n"
