"""The firmware object from Debian 13's CPython 3.13, built and run in a
Debian 13 root (tests/debian_root.py), and the Python-host guest there.

The root is tests/firmware13.py's (the project copied in, a virtualenv of
Debian 13's python3 with this machine's cffi and dnspython), and ``python -m
shim firmware`` freezes libpython3.13-pic.a there.  In the root:

* the C test program linked with the object alone prints, byte for byte,
  what the ordinary library built here prints, over the vectors, the
  malformed cases and the odd but valid ones, in two option sets;
* the object defines only the API as globals and no symbol of the root's C
  library; traced (strace), a run opens nothing of Python's, no shared object
  but the C library's, and writes nothing;
* a --types build reads the kept types as the full build does and the rest
  opaquely (test_firmware's comparison);
* memory_limit.c: the host's allocator sees every allocation of a parse, the
  limit fails the big response alone, a late allocator is refused;
* Debian's python3 (3.13) with Debian's python3-dnspython 2.7.0 and
  python3-pycares imported loads libdnsshim built by the virtualenv's 3.13:
  its answers are the C program's, its dns stays Debian's, pycares and
  sys.path untouched (test_python_host's program and checks);
* cross-built for arm64 from Debian 13's multiarch packages, the C test
  program runs under this machine's qemu-aarch64 (the root as its sysroot)
  and prints what the library prints natively;
* the worker image linked from the object: four threads over two instances
  print what one prints, with the library's statuses and detail.

Needs root (debootstrap, chroot): without it these tests skip, under CI=true
they fail.  The base is cached per release with firmware13.PACKAGES (the
first run debootstraps).
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import firmware13
from conftest import require_program, require_tool, split_log, write_messages
from pool_output import library_verdicts, pool_lines, verdicts


#: the Python host's own packages, installed with apt in the root (debootstrap
#: cannot configure python3-pycares in a base)
HOST_PACKAGES = ("python3-dnspython", "python3-pycares")
LIBS = "-lm -lpthread -ldl -lutil"
SIP = "A,AAAA,CNAME,SRV,NAPTR"


@pytest.fixture(scope="module")
def root13(tmp_path_factory):
    why = firmware13.unavailable()
    if why:
        require_tool(why[0], why[1] or "(root, x86-64)", False)
    try:
        firmware13.wheels()
    except RuntimeError as e:
        require_tool(str(e), "python3-pip (and a reachable package index)", False)
    with firmware13.debian13_root(tmp_path_factory.mktemp("debian13")) as root:
        yield root


def _compile(root13, source, out, obj, extra=""):
    """A program linked with the object alone, the .pc file's way, in the root."""
    root13.run(f"gcc -O2 -g -Wall -I/root/fw/include -I/root/dnsshim/csrc/tools -I/root/kinds "
               f"{extra} {source} -o {out} {obj} {LIBS}")
    return out


@pytest.fixture(scope="module")
def fw13(root13):
    """The two firmware builds, the library, and the C programs, in the root."""
    python = firmware13.PYTHON
    firmware13.build_firmware(root13, "/root/fw")
    firmware13.build_firmware(root13, "/root/fw-sip", "--types", SIP)
    # the table of kinds the test program includes (pipeline.compile_program's)
    root13.run(f"mkdir /root/kinds && cd /root/dnsshim && {python} -c 'from dnsshim_build import pipeline; "
               f"pipeline.kinds_header(\"/root/kinds\")' && "
               f"{python} build_ffi.py --out /root/lib")
    c = "/root/dnsshim/tests/c"
    _compile(root13, f"{c}/dnsshim_test.c", "/root/fw_test", "/root/fw/lib/libdnsshim_fw.o")
    _compile(root13, f"{c}/dnsshim_test.c", "/root/sip_test", "/root/fw-sip/lib/libdnsshim_fw.o")
    _compile(root13, f"{c}/memory_limit.c", "/root/memory_limit", "/root/fw/lib/libdnsshim_fw.o")
    root13.run(f"gcc -O2 -g -Wall -I/root/dnsshim/csrc -I/root/dnsshim/csrc/tools -I/root/kinds "
               f"{c}/dnsshim_test.c -o /root/lib_test -L/root/lib -ldnsshim "
               f"-Wl,-rpath,/root/lib -pthread -ldl")
    return root13


@pytest.fixture(scope="module")
def messages13(fw13, tmp_path_factory):
    """The vectors, malformed and accepted cases, as names in /root/messages."""
    folder = fw13.path("/root/messages")
    folder.mkdir()
    return [p.name for p in write_messages(folder, accepted=True)]


def _in_messages(root13, program, *args, check=True):
    return root13.run(f"cd /root/messages && {program} {' '.join(args)}", check=check)


@pytest.mark.parametrize("options", [[], ["--detail"]], ids=["default", "detail"])
def test_the_object_gives_what_the_library_gives(fw13, messages13, options):
    ours = _in_messages(fw13, "/root/fw_test", *options, *messages13)
    theirs = _in_messages(fw13, "/root/lib_test", *options, *messages13)
    assert ours.stdout == theirs.stdout
    assert len(split_log(ours.stdout)) == len(messages13)
    assert sum(any(line.startswith("status 0 ") for line in lines)
               for lines in split_log(ours.stdout).values()) > 20


def test_the_object_gives_what_the_3_11_library_gives(fw13, messages13, built):
    """And what this machine's library (Debian 12's CPython) prints."""
    ours = _in_messages(fw13, "/root/fw_test", *messages13).stdout
    theirs = subprocess.run([str(built.test_prog), *messages13], capture_output=True, text=True,
                            cwd=fw13.path("/root/messages"), timeout=600).stdout
    assert ours == theirs


def test_the_manifest_names_3_13(fw13):
    manifest = json.loads(fw13.path("/root/fw/share/dnsshim/firmware.json").read_text())
    assert manifest["versions"]["CPython"].startswith("3.13.")
    assert "_sha2" in manifest["frozen"] and "_suggestions" in manifest["builtin"]
    assert manifest["target"] == "x86_64-linux-gnu"


def _symbols(root13, *args):
    return {line.split()[-1] for line in
            root13.run(f"nm {' '.join(args)}").stdout.splitlines() if line.split()}


def test_only_the_api_is_global(fw13):
    from dnsshim_build import pipeline

    obj = "/root/fw/lib/libdnsshim_fw.o"
    defined = _symbols(fw13, "-g", "--defined-only", obj)
    assert defined == pipeline.header_functions()
    libc = _symbols(fw13, "-D", "--defined-only", "/lib/x86_64-linux-gnu/libc.so.6")
    assert len(libc) > 1000 and not (defined & libc)
    assert {"malloc", "free", "memcpy", "memset"} <= _symbols(fw13, "-u", obj)


def test_no_file_opened(fw13, messages13):
    """Traced: nothing of Python's opened (the root has Debian's 3.13 and the
    virtualenv in place, for the object to find if it looked), no shared
    object but the C library's, nothing written."""
    run = _in_messages(fw13, "strace -f -qq -e trace=open,openat,execve -o /root/trace.txt "
                       "/root/fw_test", *messages13)
    assert run.stdout == _in_messages(fw13, "/root/lib_test", *messages13).stdout
    lines = fw13.path("/root/trace.txt").read_text().splitlines()
    opened = [m.group(2) for m in (re.search(r'\b(open|openat|execve)\((?:AT_FDCWD, )?"([^"]*)"',
                                             line) for line in lines) if m]
    assert "/root/fw_test" in opened and len(opened) >= len(messages13)
    assert [p for p in opened if "python" in p.lower() or p.startswith("/root/")
            and p != "/root/fw_test"] == []
    shared = {Path(p).name for p in opened if re.search(r"\.so(\.\d|$)", p)}
    assert {s for s in shared if not s.startswith("libnss_")} <= {"libc.so.6", "libm.so.6"}
    assert [line for line in lines if re.search(r"O_WRONLY|O_RDWR|O_CREAT", line)] == []


def test_types_read_as_the_full_build_reads_them(fw13, messages13):
    from test_firmware import compare_types

    subset = split_log(_in_messages(fw13, "/root/sip_test", *messages13).stdout)
    full = split_log(_in_messages(fw13, "/root/fw_test", *messages13).stdout)
    compare_types(subset, full, {m: fw13.path("/root/messages") / m for m in messages13})
    manifest = json.loads(fw13.path("/root/fw-sip/share/dnsshim/firmware.json").read_text())
    assert manifest["types"] == ["A", "AAAA", "CNAME", "NAPTR", "SRV"]
    assert "dns.rdtypes.ANY.SOA" not in manifest["frozen"]


# ---- the host's allocator and the memory limit (test_memory.py's checks) ------------------


@pytest.fixture(scope="module")
def big_small13(fw13):
    from test_memory import write_big_and_small

    folder = fw13.path("/root/memory")
    folder.mkdir()
    big, small = write_big_and_small(folder)
    return f"/root/memory/{big.name}", f"/root/memory/{small.name}"


def _memory(root13, *args, check=True):
    result = root13.run(f"cd /root/memory && /root/memory_limit {' '.join(map(str, args))}",
                        check=False)
    assert result.returncode == 0 or not check, result.stdout + result.stderr[-3000:]
    return result.stdout.splitlines()


def test_the_hosts_allocator_sees_every_allocation_of_a_parse(fw13, big_small13):
    big, small = big_small13
    lines = _memory(fw13, "count", small, big, small)
    assert lines[:2] == ["set_allocator 0", "init 0"]
    start = re.fullmatch(r"start-up: (\d+) allocations, (\d+) bytes held, (\d+) around it "
                         r"\(loader \d+, libc \d+, python \d+, cffi \d+, other \d+\)", lines[2])
    assert start and int(start.group(1)) > 10000 and int(start.group(2)) > 1_000_000, lines[2]
    # CPython 3.13's own, which it allocates with libc's malloc on purpose
    # (path configuration: 7; its runtime's hash tables and the copy of the
    # built-in module table: 9, where 3.11 had 3 locks), and the C
    # library's: tzset and qsort, and what the modules every parser type
    # needs take once, at their import at start-up (the time zone datetime
    # reads, random's seed): 46 here, as 3.11's 40 with 6 more of CPython's
    # own; nothing of a parse (below)
    assert int(start.group(3)) <= 56, lines[2]
    for line, message in zip(lines[3:], (small, big, small), strict=True):
        m = re.fullmatch(rf"{message}: status 0, (\d+) allocations, 0 around it "
                         r"\(cffi 0, strerror 0, libc 0, other 0\)", line)
        assert m and int(m.group(1)) > 0, line


def test_a_memory_limit_fails_the_big_response_alone(fw13, big_small13):
    big, small = big_small13

    def small_parses(limit):
        return any(re.match(r"(round 0: )?small 0 \(1 callbacks\)", line)
                   for line in _memory(fw13, "limit", limit, big, small, 4, check=False))

    low, high = 1_000_000, 64_000_000
    assert small_parses(high)
    while high - low > 100_000:
        middle = (low + high) // 2
        low, high = (low, middle) if small_parses(middle) else (middle, high)
    high += 64 * 1024  # what a runtime holds varies by a few KiB between processes
    lines = _memory(fw13, "limit", high, big, small, 4)
    rounds = [line for line in lines if line.startswith("round ")]
    assert lines[:2] == ["set_allocator 0", "set_memory_limit 0"] and len(rounds) == 8
    for line in rounds[0::2]:
        assert line.endswith(f"big -13 (0 callbacks): DNS_SHIM_ERR_NO_MEMORY: parsing the "
                             f"message would take the runtime above its memory limit of "
                             f"{high} bytes (dns_shim_set_memory_limit)"), line
    for line in rounds[1::2]:
        m = re.fullmatch(r"round \d: small 0 \(1 callbacks\), held ([+-]\d+) bytes since round 0",
                         line)
        assert m and int(m.group(1)) <= 0, line
    assert _memory(fw13, "late", 64_000_000, big, small)[:2] == [
        "init 0",
        "set_allocator -12: DNS_SHIM_ERR_BAD_ARGUMENT: the runtime has started: an allocator is "
        "set before the first call that starts it"]


# ---- the Python-host guest (test_python_host.py's program and checks) ---------------------


@pytest.fixture(scope="module")
def host13(fw13):
    """Debian 13's python3 with Debian's dnspython and pycares, and the C
    test driver as a shared object against the library built by the
    virtualenv's 3.13."""
    fw13.run(f"apt-get update -qq && apt-get install -y -qq {' '.join(HOST_PACKAGES)}",
             timeout=1800)
    fw13.run("gcc -O2 -g -Wall -shared -fPIC -Dmain=dnsshim_driver_main -I/root/dnsshim/csrc "
             "-I/root/dnsshim/csrc/tools -I/root/kinds /root/dnsshim/tests/c/dnsshim_test.c "
             "-o /root/driver.so -L/root/lib -ldnsshim -Wl,-rpath,/root/lib -pthread -ldl")
    versions = fw13.run("/usr/bin/python3 -c 'import sys, dns.version, pycares; "
                        "print(sys.version.split()[0], dns.version.version, "
                        "pycares.__version__)'").stdout.split()
    return fw13, versions


@pytest.mark.parametrize("mode", [[], ["--registered"]], ids=["dns_shim_process", "registered"])
def test_python_host_keeps_its_dnspython_and_pycares(host13, messages13, mode):
    from dnsshim_build import pipeline
    from guest_host import HOST_PROGRAM, assert_guest, c_statuses

    root, (python, dns_version, pycares_version) = host13
    assert python.startswith("3.13.") and dns_version == "2.7.0"
    args = {"import_dns": True, "import_pycares": True,
            "lib": f"/root/lib/{pipeline.DNSSHIM.soname}",
            "statuses": [f"/root/messages/{m}" for m in messages13],
            "driver": "/root/driver.so",
            "driver_args": [*mode, *messages13], "report": "/root/report.json"}
    root.path("/root/host.py").write_text(HOST_PROGRAM)
    root.path("/root/args.json").write_text(json.dumps(args))
    result = root.run("cd /root/messages && /usr/bin/python3 /root/host.py "
                      "\"$(cat /root/args.json)\"")
    assert result.stderr == ""
    # every field of every message, as the C program prints it
    assert result.stdout == _in_messages(root, "/root/lib_test", *mode, *messages13).stdout
    report = json.loads(root.path("/root/report.json").read_text())
    assert report["version"] == python and report["statuses"]["driver rc"] == 0
    statuses = c_statuses(_in_messages(root, "/root/lib_test", *messages13).stdout)
    for path, status in zip(args["statuses"], statuses, strict=True):
        assert report["statuses"][path] == [int(status), int(status)], path
    assert_guest(report)
    assert report["after"]["dns"][0] == report["before"]["dns"][0] == "2.7.0"
    assert report["after"]["pycares"] == report["before"]["pycares"]
    assert report["before"]["pycares"][0] == pycares_version
    # the host's own sys.path (Debian's, its dnspython's folder), unchanged
    assert "/usr/lib/python3/dist-packages" in report["after"]["path"]
    assert report["after"]["specs"]["dns"] == "/usr/lib/python3/dist-packages/dns/__init__.py"


# ---- arm64, cross-built in the root and run under this machine's qemu ---------------------

ARM64 = "aarch64-linux-gnu"
#: Debian 13's multiarch packages for the cross build
ARM64_PACKAGES = ("gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross", "libpython3.13-dev:arm64",
                  "libffi-dev:arm64")


def test_worker_image_instances_answer_as_one(fw13, messages13):
    """The worker image (dnsshim_build/worker.py) from the 3.13 object,
    linked in the root: four threads over two instances print what one
    instance prints, and that instance gives the library's statuses and
    failure detail (test_worker.py's checks, on Debian 13's CPython)."""
    fw13.run(f"cd /root/dnsshim && {firmware13.PYTHON} -c 'from dnsshim_build import worker; "
             f"worker.link(\"/root/fw/lib/libdnsshim_fw.o\", \"/root/worker.so\")' && "
             "gcc -O2 -g -Wall -Wextra -Werror -I/root/dnsshim/csrc -I/root/dnsshim/csrc/tools "
             "/root/dnsshim/tests/c/pool_instances.c -o /root/pool_instances -ldl -pthread")
    one = pool_lines(_in_messages(fw13, "/root/pool_instances /root/worker.so 1 1",
                                   *messages13).stdout, 1)
    shared = pool_lines(_in_messages(fw13, "/root/pool_instances /root/worker.so 2 4",
                                      *messages13).stdout, 2)
    assert len(one) == len(messages13) and shared == one
    assert verdicts(one) == library_verdicts(
        _in_messages(fw13, "/root/lib_test", "--detail", *messages13).stdout, messages13)


def test_arm64_under_qemu(fw13, messages13):
    """The object cross-built from Debian 13's arm64 libpython3.13-pic.a: the
    C test program for arm64, run by qemu-aarch64 with the root as its
    sysroot, prints what the library prints natively."""
    require_program("qemu-aarch64", "qemu-user")
    fw13.run("dpkg --add-architecture arm64 && apt-get update -qq && apt-get install -y -qq "
             f"--no-install-recommends {' '.join(ARM64_PACKAGES)}", timeout=1800)
    firmware13.build_firmware(fw13, "/root/fw-arm64", "--target", ARM64)
    fw13.run(f"{ARM64}-gcc -O2 -g -Wall -I/root/fw-arm64/include -I/root/dnsshim/csrc/tools "
             f"-I/root/kinds /root/dnsshim/tests/c/dnsshim_test.c -o /root/arm64_test "
             f"/root/fw-arm64/lib/libdnsshim_fw.o {LIBS}")
    assert re.search(r"Machine:\s+AArch64", fw13.run("readelf -h /root/arm64_test").stdout)
    ours = subprocess.run(["qemu-aarch64", "-L", str(fw13.dir), str(fw13.path("/root/arm64_test")),
                           *messages13], capture_output=True, text=True, timeout=1800,
                          cwd=fw13.path("/root/messages"), env={"PATH": "/usr/bin:/bin"})
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == _in_messages(fw13, "/root/lib_test", *messages13).stdout
    manifest = json.loads(fw13.path("/root/fw-arm64/share/dnsshim/firmware.json").read_text())
    assert manifest["target"] == ARM64 and manifest["versions"]["CPython"].startswith("3.13.")


def test_the_benchmark_measures_the_3_13_object_in_the_root(fw13, tmp_path):
    """The benchmark's firmware_313 on this root's two objects (the full
    build and the SIP client's): the first call's time and memory, and each
    object's growth, read from the root."""
    sys.path.insert(0, str(Path(__file__).resolve().parent / "bench"))
    import benchmark

    message = tmp_path / "m.bin"
    message.write_bytes(benchmark.messages()["CNAME+4A"][0])
    f = benchmark.firmware_313(message, smoke=False, root=fw13)
    assert "not measured" not in f, f
    assert f["python"].startswith("3.13.")
    assert 0 < f["first_call_ms"] < 10_000 and f["rss_added_mib"] > 1
    assert f["growth_full"]["stripped"] > f["growth_sip"]["stripped"] > 1
