"""examples/: the C programs a user copies, built as a user builds them.

From where each installation puts them (the package pip installed:
shim/share/doc/dnsshim/examples, found beside dnsshim-config --prefix; a
prefix install: PREFIX/share/doc/dnsshim/examples), a copy of the folder is
built with its Makefile (pkg-config) and with its CMakeLists.txt
(find_package(dnsshim 1.3)), and every program prints, on real messages
(tests/vectors.py, tests/malformed.py), exactly what is written here.  The
firmware example is linked with the line its comment gives.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import malformed
import vectors
from conftest import ROOT, require_program
from test_prefix_install import standalone  # noqa: F401 (fixture)
from test_firmware import firmware  # noqa: F401 (fixture)

ENV = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
       "DNS_SHIM_SERVICE": "none"}
IMS = "ims.mnc001.mcc001.3gppnetwork.org"
PROGRAMS = ["resolver", "sip_locate", "per_call", "reply_check", "startup", "parallel"]

# (program, arguments after the message's file, message, exit status, stdout)
RUNS = [
    ("resolver", [], "ims", 0, "".join(
        f"{o}.{IMS} {t}\n" for o, t in [
            ("_sip._tcp", f"300 SRV 10 60 5060 pcscf1.{IMS}"),
            ("_sip._tcp", f"300 SRV 20 40 5060 pcscf2.{IMS}"),
            ("_sip._udp", f"300 SRV 10 100 5060 pcscf1.{IMS}"),
            ("pcscf1", "3600 AAAA 2001:db8:1::10"), ("pcscf1", "3600 AAAA 2001:db8:1::11"),
            ("pcscf2", "3600 AAAA 2001:db8:2::10"), ("pcscf1", "3600 A 192.0.2.10")])),
    ("resolver", [], "every_type", 0, "".join(
        f"{s}-{line}\n" for s in ("an", "ar") for line in (
            "a.example 300 A 192.0.2.1", "aaaa.example 301 AAAA 2001:db8::1",
            "mx.example 306 MX 10 mail.example", "srv.example 308 SRV 1 2 5060 sip.example"))),
    ("resolver", [], "pointer_loop", 1,
     "error -6: malformed domain name or compression pointer\n"),
    ("sip_locate", [], "ims", 0,
     "SIP+D2T order 10 priority 10: [2001:db8:1::10]:5060\n"
     "SIP+D2T order 10 priority 10: [2001:db8:1::11]:5060\n"
     "SIP+D2T order 10 priority 20: [2001:db8:2::10]:5060\n"
     "SIP+D2U order 20 priority 10: [2001:db8:1::10]:5060\n"
     "SIP+D2U order 20 priority 10: [2001:db8:1::11]:5060\n"),
    ("per_call", [], "good", 0,
     "id 4660 rcode 0 question example.com\nexample.com type 1, 4 octets\n1 records\n"),
    ("per_call", [], "pointer_loop", 1,
     "refused (0 callbacks ran): malformed domain name or compression pointer\n"
     "why: DNS_SHIM_ERR_BAD_NAME: BadPointer: A DNS compression pointer points forward "
     "instead of backward. (at offset 12)\n"),
    ("reply_check", ["20033", IMS, "35"], "ims", 0, "accepted: 2 answers, 8 additional\n"),
    ("reply_check", ["20034", IMS, "35"], "ims", 1,
     "not our answer: DNS_SHIM_ERR_MISMATCH: ID 20033, the query's is 20034 (at offset 0)\n"),
    ("reply_check", ["4660", "example.com", "1"], "pointer_loop", 1,
     "malformed: malformed domain name or compression pointer\n"),
    ("startup", [], None, 0, "started, the memory from the program's allocator: yes\n"),
    ("parallel", ["2"], "ims", 0, "parallel"),
    ("ares_classic", [], "every_type", 0, "SRV 1 2 5060 sip.example\n"),
    ("ares_classic", [], "pointer_loop", 1, "error: Misformatted domain name\n"),
    # every record of any reply, all three sections; a line when no address came
    ("firmware", [], "ims", 0, "".join(f"{o}{IMS} {t}\n" for o, t in [
        ("", "TYPE35, 60 octets"), ("", "TYPE35, 60 octets"),
        ("_sip._tcp.", "TYPE33, 48 octets"), ("_sip._tcp.", "TYPE33, 48 octets"),
        ("_sip._udp.", "TYPE33, 48 octets"), ("pcscf1.", "AAAA 2001:db8:1::10"),
        ("pcscf1.", "AAAA 2001:db8:1::11"), ("pcscf2.", "AAAA 2001:db8:2::10"),
        ("pcscf1.", "A 192.0.2.10")])),
    ("firmware", [], "nxdomain", 0,
     "example.com TYPE6, 60 octets\nno address: the reply has no A or AAAA record\n"),
    ("firmware", [], "pointer_loop", 1,
     "error: malformed domain name or compression pointer\n"),
]

MESSAGES = {"ims": vectors.wire("ims"), "every_type": vectors.wire("every_type"),
            "nxdomain": vectors.wire("nxdomain"), "good": malformed.GOOD,
            "pointer_loop": malformed.CASES["pointer_loop_of_two"][0]}


def _has_cares():
    """c-ares's headers, as the build of the C programs found them."""
    import cprograms

    return cprograms.cares_flags() is not None


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    d = tmp_path_factory.mktemp("example-messages")
    for name, wire in MESSAGES.items():
        (d / f"{name}.bin").write_bytes(wire)
    return d


def _copy(shipped, where):
    """The user's copy of the shipped folder: exactly the files of examples/."""
    assert sorted(p.name for p in shipped.iterdir()) == \
        sorted(p.name for p in (ROOT / "examples").iterdir())
    for p in shipped.iterdir():
        assert p.read_bytes() == (ROOT / "examples" / p.name).read_bytes(), p.name
    return shutil.copytree(shipped, where)


def _run_here(command, stdin: bytes) -> tuple:
    """(exit status, stdout, stderr) of command run on this machine."""
    result = subprocess.run(command, input=stdin, capture_output=True,
                            env={"PATH": "/usr/bin:/bin"}, cwd="/", timeout=120)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def parallel_output(no_image_in=None) -> str:
    """What ``parallel ims.bin 2`` prints: with the worker image beside the
    library, or, where no_image_in (the library's folder) has none, with one
    interpreter and the reason the install left there."""
    from dnsshim_build import worker

    first = "parallelism 2\n" if no_image_in is None else (
        "one interpreter: not supported by this installation\n"
        f"(DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 needs the worker image "
        f"{no_image_in}/libdnsshim_worker.so, which the install could not build: "
        f"{worker.unavailable()})\n")
    return first + "2 threads, 200 calls each: 4 addresses every time\n"


def check_runs(bin_dir, messages, programs, run=_run_here, no_image_in=None):
    """Every RUNS line of the programs built in bin_dir, on the message
    files in messages (paths as run sees them): its exit status and output.
    run(command, stdin) -> (status, stdout, stderr) runs one command (the
    Debian tests run it in their root).  no_image_in: the library's folder,
    when the installation has no worker image (parallel_output)."""
    ran = set()
    for program, args, message, status, stdout in RUNS:
        if program not in programs:
            continue
        if program == "parallel":
            stdout = parallel_output(no_image_in)
        # a file argument, and (but for reply_check) the same bytes on stdin
        commands = [[str(bin_dir / program), str(messages / f"{message}.bin"), *args]]
        if not args:
            commands.append([str(bin_dir / program)])
        if message is None:
            commands = [[str(bin_dir / program)]]
        for command in commands:
            code, out, err = run(command, MESSAGES.get(message, b""))
            assert (code, out) == (status, stdout), (command, err[-2000:])
            ran.add(program)
    assert ran == set(programs)


def _make(folder, pkgconfig_dir, *targets):
    result = subprocess.run(["make", "-C", str(folder), *targets], capture_output=True,
                            text=True, env={**ENV, "PKG_CONFIG_PATH": str(pkgconfig_dir)},
                            timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "warning" not in result.stderr, result.stderr


def _cmake(folder, prefix):
    require_program("cmake", "cmake")
    build = folder / "build"
    for command in (["cmake", "-S", str(folder), "-B", str(build),
                     f"-DCMAKE_PREFIX_PATH={prefix}"],
                    ["cmake", "--build", str(build)]):
        result = subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=600)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return build


def _no_image_in(lib: Path):
    """None where this machine builds the worker image (pip install . and
    build_ffi.py --prefix put it in lib), else lib."""
    from dnsshim_build import worker

    return None if not worker.unavailable() else lib


def _programs():
    return PROGRAMS + (["ares_classic"] if _has_cares() else [])


def _package_examples(venv):
    prefix = subprocess.run([str(venv / "bin" / "dnsshim-config"), "--prefix"],
                            capture_output=True, text=True, check=True).stdout.strip()
    pc = subprocess.run([str(venv / "bin" / "dnsshim-config"), "--pkgconfig-dir"],
                        capture_output=True, text=True, check=True).stdout.strip()
    return prefix, pc, os.path.join(prefix, "share", "doc", "dnsshim", "examples")


@pytest.mark.parametrize("tool", ["make", "cmake"])
def test_examples_from_the_package(installed, messages, tmp_path, tool):
    require_program("pkg-config", "pkg-config")
    prefix, pc, shipped = _package_examples(installed)
    folder = _copy(Path(shipped), tmp_path / "examples")
    programs = _programs()
    missing = _no_image_in(Path(prefix) / "lib")
    if tool == "make":
        _make(folder, pc, *programs)
        check_runs(folder, messages, programs, no_image_in=missing)
    else:
        check_runs(_cmake(folder, prefix), messages, programs, no_image_in=missing)


@pytest.mark.parametrize("tool", ["make", "cmake"])
def test_examples_from_a_prefix_install(standalone, messages, tmp_path, tool):
    require_program("pkg-config", "pkg-config")
    prefix = standalone[0]
    folder = _copy(prefix / "share" / "doc" / "dnsshim" / "examples", tmp_path / "examples")
    programs = _programs()
    missing = _no_image_in(prefix / "lib" / "dnsshim")
    if tool == "make":
        _make(folder, prefix / "lib" / "pkgconfig", *programs)
        check_runs(folder, messages, programs, no_image_in=missing)
    else:
        check_runs(_cmake(folder, prefix), messages, programs, no_image_in=missing)


def test_firmware_example_links_as_its_comment_says(firmware, messages, tmp_path):
    """firmware.c with the Makefile's firmware target, which is the line in
    the program's comment, against the object python -m shim firmware wrote."""
    comment = (ROOT / "examples" / "firmware.c").read_text()
    assert "cc -I DIR/include firmware.c DIR/lib/libdnsshim_fw.o -lm -lpthread -ldl -lutil" \
        in comment
    folder = shutil.copytree(ROOT / "examples", tmp_path / "examples")
    result = subprocess.run(["make", "-C", str(folder), "firmware", f"FW={firmware}"],
                            capture_output=True, text=True, env=ENV, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    check_runs(folder, messages, ["firmware"])
