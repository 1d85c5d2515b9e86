"""The firmware object (python -m shim firmware, dnsshim_build/firmware.py): the whole
parser as one object file, no Python on the device.

The C test program linked with ``libdnsshim_fw.o`` alone (the .pc file's link
line) gives, byte for byte, what it gives linked with the ordinary library,
over the vectors, the malformed cases and the corpus, in several option sets;
again with every Python installation, the virtualenv, pyenv and this source
tree hidden (a mount namespace) and every file it opens traced; under
threads, fork and valgrind; setuid, run by an unprivileged user, it reads
none of the library's variables.  Its symbols: the API alone global, no symbol of
the C library defined, so that a program's own malloc and memcpy are called,
and it links beside a program's own CPython and beside a second copy.  A
--types build reads the kept types as the full one does and every other
opaquely, and answers every message, rejected ones included, with the full
build's status, but the named few whose only defect is a dropped type's
RDATA.  Cross-built for arm64, it runs the same under qemu.  A CPython
the build cannot use (no data for its version, no -pic.a, a static library
compiled without -fPIC) is refused in one line.  (The host's allocator and
the memory limit, in this build and the others: test_memory.py; the object
from Debian 13's CPython 3.13: test_firmware_debian13.py.)

The builds need Debian's libpython3.11-dev, python3.11 and libffi-dev (the
arm64 ones and gcc-aarch64-linux-gnu and qemu-user for the cross build):
without them these tests skip naming the package; under CI=true they fail.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dnsshim_build import firmware as firmware_build, pipeline
from conftest import (BUILD_MODULES, HOSTILE_ENV, NOBODY, ROOT, as_user, available_corpus,
                      built_once, require_program, require_tool, setuid_root_copy, split_log,
                      write_messages)
from test_bundle import _hidden_paths, _require_isolation, opened_for_writing, opened_outside
from test_stress import mix  # noqa: F401 (fixture)


LIBS = ["-lm", "-lpthread", "-ldl", "-lutil"]
ARM64 = "aarch64-linux-gnu"


def _require_debian_python(triplet="x86_64-linux-gnu"):
    arch = "" if triplet.startswith(os.uname().machine) else ":arm64"
    config = Path(f"/usr/lib/python3.11/config-3.11-{triplet}")
    require_tool(f"Debian's static CPython 3.11 for {triplet}", f"libpython3.11-dev{arch}",
                 (config / "libpython3.11-pic.a").is_file())
    require_tool(f"libffi_pic.a for {triplet}", f"libffi-dev{arch}",
                 Path(f"/usr/lib/{triplet}/libffi_pic.a").is_file())
    require_tool("Debian's /usr/bin/python3.11", "python3.11", Path("/usr/bin/python3.11").exists())


def _firmware(tmp_path_factory, name, *options):
    """The firmware object built with options, once per session (named)."""
    _require_debian_python()

    def make(folder):
        where = folder / "fw"
        result = subprocess.run([sys.executable, "-m", "shim", "firmware", str(where), *options],
                                capture_output=True, text=True, cwd=ROOT, timeout=1800)
        assert result.returncode == 0, result.stderr[-4000:]
        assert result.stdout.startswith(f"{where}/lib/libdnsshim_fw.o: ")
        (folder / "stdout").write_text(result.stdout)
    return built_once(tmp_path_factory, name, make) / "fw"


@pytest.fixture(scope="session")
def firmware(tmp_path_factory):
    return _firmware(tmp_path_factory, "firmware")


@pytest.fixture(scope="session")
def sip(tmp_path_factory):
    return _firmware(tmp_path_factory, "firmware-sip", "--types", "A,AAAA,CNAME,SRV,NAPTR")


#: The subsets a device would build: the README's example set, and the SIP
#: client's (the sip fixture's).
SUBSETS = {"default": "A,AAAA,CNAME,SRV,NAPTR,TXT,SOA,PTR,NS,MX", "sip": "A,AAAA,CNAME,SRV,NAPTR"}


@pytest.fixture(scope="session")
def default_subset(tmp_path_factory):
    return _firmware(tmp_path_factory, "firmware-default-subset", "--types", SUBSETS["default"])


def _link(firmware_dir, source, out, cc=None, extra=()):
    """A program linked with the object alone, the .pc file's way."""
    pc = (firmware_dir / "lib" / "pkgconfig" / "dnsshim-fw.pc").read_text()
    libs = pc.split("\nLibs: ", 1)[1].split("\n", 1)[0].split()
    assert libs[0] == "${libdir}/libdnsshim_fw.o" and libs[1:] == LIBS
    return pipeline.compile_program(
        [source], out, libraries=(), cc=cc,
        flags=[*extra, firmware_dir / "lib" / "libdnsshim_fw.o", *LIBS])


@pytest.fixture(scope="module")
def programs(firmware):
    c = ROOT / "tests" / "c"
    return {name: _link(firmware, c / f"{name}.c", firmware / name)
            for name in ("dnsshim_test", "dnsshim_stress")}


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    return write_messages(tmp_path_factory.mktemp("fw-messages"), accepted=True,
                         corpus=("good", "bad", "captures", "cares-fuzzinput"))


def _run(program, *args, env=None):
    return subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                          env=env or {"PATH": "/usr/bin:/bin"}, timeout=1800)


OPTION_SETS = [[], ["--registered"], ["--no-typed"], ["--no-other"], ["--sections", "1"],
               ["--stop-at", "3"], ["--size-1.0"], ["--detail"],
               ["--expect-id", "0x5c5c", "--expect-name", "www.example.com", "--detail"]]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: " ".join(o) or "default")
def test_the_object_gives_what_the_library_gives(built, programs, messages, options):
    ours = _run(programs["dnsshim_test"], *options, *messages)
    theirs = _run(built.test_prog, *options, *messages)
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert len(split_log(ours.stdout)) == len(messages)


def test_no_build_module_is_frozen_in(firmware):
    manifest = json.loads((firmware / "share" / "dnsshim" / "firmware.json").read_text())
    frozen = list(manifest["frozen"])  # {module: bytes}
    assert "shim.glue" in frozen
    assert [name for name in frozen if name.split(".")[0] in ("dnsshim_build", "build_ffi")
            or (name.startswith("shim.") and name.split(".")[1] in BUILD_MODULES)] == []


def test_api_contract(programs):
    result = _run(programs["dnsshim_test"], "--api")
    assert result.returncode == 0, result.stdout
    assert "api: 0 failed" in result.stdout
    # The interpreter's names are the object's own: a program cannot see them.
    assert "skip runtime started by dns_shim_init" in result.stdout


def test_no_python_on_the_disk(built, firmware, programs, messages, tmp_path):
    """Every Python installation, the virtualenv, pyenv and this tree hidden:
    the same output, and nothing opened but the C library's own files, the
    program and its messages; nothing written."""
    _require_isolation()
    program = tmp_path / "dnsshim_test"
    shutil.copy(programs["dnsshim_test"], program)
    trace = tmp_path / "trace.txt"
    hide = " && ".join(f"mount -t tmpfs none '{p}'" for p in _hidden_paths(firmware))
    script = (f"{hide} && exec strace -f -qq -e trace=open,openat,execve -o '{trace}' "
              f"'{program}' " + " ".join(f"'{m}'" for m in messages))
    result = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                            text=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, cwd="/",
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == _run(built.test_prog, *messages).stdout
    assert opened_outside(trace, [], {str(program), *map(str, messages)}) == []
    assert opened_for_writing(trace) == []
    opened = {re.search(r'"([^"]*)"', line).group(1)
              for line in trace.read_text().splitlines()
              if re.search(r'\b(open|openat|execve)\(', line)}
    # The C library's own: the loader's cache, libm, and the name-service
    # modules getprotobyname loads when a WKS record arrives.
    shared = {os.path.basename(p) for p in opened if re.search(r"\.so(\.\d|$)", p)}
    assert {s for s in shared if not s.startswith("libnss_")} <= {"libc.so.6", "libm.so.6"}, \
        shared
    assert not [p for p in opened if "python" in p.lower() and not p.startswith(str(tmp_path))]


@pytest.mark.parametrize("mode", ["threads", "first-call", "register", "reentry", "reregister",
                                  "fork", "retvals"])
def test_threads_and_fork(programs, mix, mode):
    """The stress program's modes, on test_stress.py's mix (the IMS answer
    first: retvals stops at a second record)."""
    result = _run(programs["dnsshim_stress"], mode, "--calls", "2000", *mix[:20])
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_valgrind(programs, messages):
    from test_c_programs import VALGRIND, _require_valgrind

    _require_valgrind()
    some = [m for m in messages if m.name.startswith(("vector_", "bad_"))]
    result = subprocess.run([*VALGRIND, str(programs["dnsshim_test"]), *some],
                            capture_output=True, text=True, timeout=1800,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-5000:]


def test_a_setuid_program_reads_no_variable_of_the_object(programs, messages):
    """The C test program linked with the object, setuid root, run by an
    unprivileged user with DNS_SHIM_PARALLELISM and DNS_SHIM_PYTHON set and
    CPython's own variables pointing at a folder of the user's: the same
    output as root's run without them, and nothing logged.  Run by root (no
    secure-execution mode), the object does read DNS_SHIM_PARALLELISM and
    refuses the value by name, so the test shows the rule, not an absent
    variable."""
    some = [m for m in messages if m.name.startswith(("vector_", "bad_"))][:40]
    hostile = {**HOSTILE_ENV, "PYTHONPATH": "/tmp", "PYTHONHOME": "/tmp",
               "PYTHONSTARTUP": "/tmp/x.py", "PYTHONINSPECT": "1"}
    expected = _run(programs["dnsshim_test"], *some)
    assert expected.returncode == 0 and expected.stderr == "", expected.stderr[-2000:]
    with setuid_root_copy(programs["dnsshim_test"]) as program:
        user = subprocess.run(as_user(NOBODY, program, *some), capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin", **hostile}, timeout=1800)
        assert (user.returncode, user.stderr) == (0, "")
        assert user.stdout == expected.stdout
        root = _run(program, *some, env={"PATH": "/usr/bin:/bin", **hostile})
    assert root.returncode == 0, root.stderr[-2000:]
    assert root.stderr.splitlines()[0] == (
        "dnsshim: DNS_SHIM_PARALLELISM=hostile is not a number from 0 to 64: parallelism "
        "stays 1")


# ---- symbols -------------------------------------------------------------------------


def _nm(*args):
    return subprocess.run(["nm", *map(str, args)], capture_output=True, text=True,
                          check=True).stdout


def test_only_the_api_is_global(firmware):
    obj = firmware / "lib" / "libdnsshim_fw.o"
    defined = {line.split()[-1] for line in _nm("-g", "--defined-only", obj).splitlines()}
    assert defined == pipeline.header_functions()
    assert not any(name.startswith(("Py", "_Py", "ffi_", "PyInit")) for name in defined)
    libc = {line.split()[-1] for line in _nm("-D", "--defined-only",
                                             "/lib/x86_64-linux-gnu/libc.so.6").splitlines()
            if line.split()}
    undefined = {line.split()[-1] for line in _nm("-u", obj).splitlines()}
    assert {"malloc", "free", "memcpy", "memset"} <= undefined  # the program's are called
    assert not (defined & libc)
    manifest = json.loads((firmware / "share" / "dnsshim" / "firmware.json").read_text())
    assert manifest["api"] == sorted(defined)


COUNTING = r"""
#include <dns_shim.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
extern void *__libc_malloc(size_t), *__libc_realloc(void *, size_t), *__libc_calloc(size_t, size_t);
extern void __libc_free(void *);
static unsigned long mallocs, frees, copies, sets;
void *malloc(size_t n) { mallocs++; return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { mallocs++; return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { mallocs++; return __libc_realloc(p, n); }
void free(void *p) { if (p) frees++; __libc_free(p); }
void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *a = d; const unsigned char *b = s;
    copies++;
    while (n--) *a++ = *b++;
    return d;
}
void *memset(void *d, int c, size_t n)
{
    unsigned char *a = d;
    sets++;
    while (n--) *a++ = (unsigned char)c;
    return d;
}
int main(void)
{
    static unsigned char m[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 1, 'a', 0, 0, 1,
                                0, 1, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1};
    int rc = process_dns_response(m, (int)sizeof m);
    printf("%d %lu %lu %lu %lu\n", rc, mallocs, frees, copies, sets);
    return 0;
}
"""


def test_the_programs_own_libc_functions_are_called(firmware, tmp_path):
    (tmp_path / "counting.c").write_text(COUNTING)
    program = _link(firmware, tmp_path / "counting.c", tmp_path / "counting",
                    extra=["-fno-builtin"])
    rc, mallocs, frees, copies, sets = map(int, _run(program).stdout.split())
    assert rc == 0
    assert mallocs > 1000 and frees > 1000 and copies > 1000 and sets > 10


BESIDE_CPYTHON = r"""
#include <Python.h>
#include <dns_shim.h>
int main(void)
{
    static unsigned char m[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 1,
                                0, 1};
    int before, after;
    Py_Initialize();             /* the program's own CPython */
    PyRun_SimpleString("import sys; sys.modules['dns'] = 'the program own'");
    before = process_dns_response(m, (int)sizeof m);
    after = PyRun_SimpleString("import sys; assert sys.modules['dns'] == 'the program own'");
    printf("%d %d\n", before, after);
    return Py_FinalizeEx() < 0;
}
"""


def test_links_beside_the_programs_own_cpython(firmware, tmp_path):
    """A program that embeds Debian's static CPython itself: no duplicate
    symbol, two interpreters, neither sees the other's modules."""
    (tmp_path / "beside.c").write_text(BESIDE_CPYTHON)
    config = Path("/usr/lib/python3.11/config-3.11-x86_64-linux-gnu")
    program = _link(firmware, tmp_path / "beside.c", tmp_path / "beside",
                    extra=["-I/usr/include/python3.11", config / "libpython3.11-pic.a",
                           "-lexpat", "-lz"])
    result = _run(program)
    assert result.stdout.split() == ["0", "0"], result.stdout + result.stderr


TWO_COPIES = r"""
#include <dns_shim.h>
#include <stdio.h>
int32_t fw2_process_dns_response(uint8_t *, int32_t);
int main(void)
{
    static unsigned char m[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 1,
                                0, 1};
    printf("%d %d\n", process_dns_response(m, (int)sizeof m),
           fw2_process_dns_response(m, (int)sizeof m));
    return 0;
}
"""


def test_two_copies_in_one_program(firmware, tmp_path):
    """A second copy, its API renamed (as two parsers in one firmware must
    be): everything else is local, so the two link and both parse."""
    copy = tmp_path / "second.o"
    renames = tmp_path / "renames.txt"
    renames.write_text("".join(f"{n} fw2_{n}\n" for n in sorted(pipeline.header_functions())))
    subprocess.run(["objcopy", f"--redefine-syms={renames}",
                    str(firmware / "lib" / "libdnsshim_fw.o"), str(copy)], check=True)
    (tmp_path / "two.c").write_text(TWO_COPIES)
    program = _link(firmware, tmp_path / "two.c", tmp_path / "two", extra=[copy])
    assert _run(program).stdout.split() == ["0", "0"]


# ---- --types -------------------------------------------------------------------------

KEPT = {1, 28, 5, 33, 35}  # A, AAAA, CNAME, SRV, NAPTR


def _raw_records(wire):
    """{(section, index): (type, RDATA as sent)} of a message that parses."""
    import struct

    def skip(p):
        while True:
            n = wire[p]
            if n & 0xC0 == 0xC0:
                return p + 2
            if n == 0:
                return p + 1
            p += 1 + n
    qd, an, ns, ar = struct.unpack_from(">4H", wire, 4)
    p = 12
    for _ in range(qd):
        p = skip(p) + 4
    out = {}
    for section, count in ((1, an), (2, ns), (4, ar)):
        index = 0
        for _ in range(count):
            p = skip(p)
            rdtype, _, _, rdlen = struct.unpack_from(">HHIH", wire, p)
            p += 10
            if rdtype != 41:
                out[(section, index)] = (rdtype, wire[p:p + rdlen])
                index += 1
            p += rdlen
    return out


#: The messages a subset answers otherwise than the full build, all for the
#: one reason a subset has: a malformed record of a type it does not keep,
#: whose RDATA it hands on opaque, unread (the full build rejects it).  Each
#: is named, so that another difference fails until it is understood.
DROPPED_TYPE_DIFFERENCES = {
    "default": {"zeek_loc_rdlen15", "zeek_svcb_alpn_len_too_long", "zeek_svcb_rdlen2",
                "dns-edns-ecs-bad-0", "dns-edns-ecs-bad-1", "dns-edns-ecs-bad-2",
                "dns-svcb-rdlength-mismatch-0", "loc-invalid-length-0",
                "svcb-alpn-malformed-len-too-long-1", "svcb-alpn-malformed-len-too-short-1",
                "svcb-port-malformed-1", "bad_nsec_next_name_compressed"},
    "sip": {"bad_soa_cut", "bad_txt_string_overruns", "bad_rdata_shorter_than_rdlength",
            "bad_mx_rdlength_2"},
}
DROPPED_TYPE_DIFFERENCES["sip"] |= DROPPED_TYPE_DIFFERENCES["default"]


def _stem(path) -> str:
    """A message's name without its content hash (the corpus's -<hash>)."""
    return re.sub(r"-[0-9a-f]{12}$", "", Path(path).stem)


@pytest.fixture(scope="module")
def every_type(tmp_path_factory):
    """A response with one record of every type dnspython knows under every
    kind of class (tests/history.py's generator: reserved 0, IN, CH, HS,
    NONE, ANY, unassigned, private use), and each IN-only type under an odd
    class then IN in one message: the corpus holds no record of a class
    other than IN and mDNS's."""
    import history

    where = tmp_path_factory.mktemp("fw-every-type")
    files = []
    for i, wire in enumerate(history.biased_messages()):
        files.append(where / f"every_type_{i:04d}.bin")
        files[-1].write_bytes(wire)
    return files


#: The default subset's types by number, and the classes other than IN a
#: record may come under: reserved 0, CH, HS, an unassigned one, a private
#: one, NONE and ANY.
SUBSET_TYPES = {"A": 1, "NS": 2, "CNAME": 5, "SOA": 6, "PTR": 12, "MX": 15, "TXT": 16,
                "AAAA": 28, "SRV": 33, "NAPTR": 35}
ODD_CLASSES = (0, 3, 4, 42, 0xFF00, 254, 255)
#: RDATA no kept type reads: none at all, a label that overruns, one octet.
MALFORMED_RDATA = (b"", b"\x05ab", b"\xff")


@pytest.fixture(scope="module")
def malformed_odd_class(tmp_path_factory):
    """A response of one record for each kept type under each class other
    than IN, with each RDATA of MALFORMED_RDATA: where dnspython reads the
    type under that class (its ANY modules under every class, CH's A under
    CH) the full build rejects it, and a subset that left that module out
    would take it as opaque and answer 0."""
    where = tmp_path_factory.mktemp("fw-malformed-odd-class")
    question = b"\x07example\x04test\x00\x00\x01\x00\x01"
    files = []  # (path, type, class)
    for name, rrtype in SUBSET_TYPES.items():
        for rrclass in ODD_CLASSES:
            for i, rdata in enumerate(MALFORMED_RDATA):
                record = (b"\xc0\x0c" + rrtype.to_bytes(2, "big") + rrclass.to_bytes(2, "big")
                          + (300).to_bytes(4, "big") + len(rdata).to_bytes(2, "big") + rdata)
                wire = bytes.fromhex("123481800001000100000000") + question + record
                path = where / f"malformed_odd_class_{name}_{rrclass}_{i}.bin"
                path.write_bytes(wire)
                files.append((path, name, rrclass))
    return files


@pytest.mark.parametrize("subset", sorted(SUBSETS))
def test_a_subset_answers_every_message_as_the_full_build(request, built, messages, every_type,
                                                          malformed_odd_class, tmp_path, subset):
    """Every message, rejected ones included, every type under every class,
    and a malformed record of each kept type under each class other than
    IN: the same status as the full build, but where the full build
    rejects the RDATA of a record of a type the subset drops (its detail
    names that type), and those are named."""
    firmware = request.getfixturevalue("sip" if subset == "sip" else "default_subset")
    kept = set(SUBSETS[subset].split(","))
    odd_class = [(p, t, c) for p, t, c in malformed_odd_class if t in kept]
    messages = [*messages, *every_type, *(p for p, _, _ in odd_class)]
    program = _link(firmware, ROOT / "tests" / "c" / "dnsshim_test.c", tmp_path / "dnsshim_test")
    ours = split_log(_run(program, *messages).stdout)
    full = split_log(_run(built.test_prog, "--detail", *messages).stdout)
    differ = set()
    for path in messages:
        mine = ours[str(path)][-1]
        theirs = [line for line in full[str(path)] if line.startswith("status ")][-1]
        if mine == theirs:
            continue
        detail = [line for line in full[str(path)] if line.startswith("detail ")]
        m = re.match(r"detail DNS_SHIM_ERR_BAD_RDATA: (\S+) RDATA ", detail[0] if detail else "")
        assert m and m.group(1) not in kept, (path, mine, theirs, detail)
        differ.add(_stem(path))
    # The full build rejects a kept type's malformed record where dnspython
    # reads the type under that class (its ANY modules under every class,
    # CH's A under CH) and takes the others as opaque; the subset, compared
    # above, answers each the same, so a subset that left a class's module
    # out (an A of CH's taken as opaque) fails here.
    def status(path):
        return [line for line in full[str(path)] if line.startswith("status ")][-1]

    rejected = {(t, c) for p, t, c in odd_class if status(p) != "status 0 success"}
    assert rejected == {(t, c) for t in kept & {"NS", "CNAME", "SOA", "PTR", "MX", "TXT"}
                        for c in ODD_CLASSES} | ({("A", 3)} if "A" in kept else set()), \
        sorted(rejected)
    if available_corpus("good", "bad", "captures", "cares-fuzzinput"):
        assert differ == DROPPED_TYPE_DIFFERENCES[subset]
    else:  # the project's own messages only
        assert differ == {n for n in DROPPED_TYPE_DIFFERENCES[subset]
                          if n.startswith(("bad_", "ok_", "vector_"))}


def compare_types(subset: dict, full: dict, files: dict) -> int:
    """A --types build's log (split_log's) against a full build's, over
    files ({log key: message path}): headers, options and the kept IN types
    the same, every other record opaque with its RDATA as sent.  Returns how
    many records of a class other than IN were compared."""
    compared = opaque = odd_class = 0
    for key, path in files.items():
        ours, theirs = subset[key], full[key]
        if theirs[-1] != "status 0 success":
            continue  # a rejected message may be read further when a type is opaque
        assert ours[-1] == "status 0 success", path
        raw = _raw_records(Path(path).read_bytes())
        assert len(ours) == len(theirs), path
        for mine, line in zip(ours, theirs):
            m = re.match(r"(\w+) sec=(\d+) idx=(\d+) .* type=(\d+) class=(\d+)", line)
            odd_class += m is not None and m.group(5) != "1"
            if m is None or int(m.group(4)) in KEPT and m.group(5) == "1":
                assert mine == line, path  # header, options, kept IN types: the same
                compared += 1
                continue
            rdtype, rdata = raw[(int(m.group(2)), int(m.group(3)))]
            if rdtype in KEPT:
                assert mine == line, path
                continue
            assert mine.startswith("other ") and mine.endswith(f" rdata={rdata.hex()}"), path
            # the same record: section, index, owner, type, class and TTL
            rr = re.compile(r"\w+ (sec=\d+ idx=\d+ .* type=\d+ class=\d+ ttl=\d+)")
            assert rr.match(mine).group(1) == rr.match(line).group(1), path
            opaque += 1
    assert compared > 100 and opaque > 20
    return odd_class


def test_types_read_as_the_full_build_reads_them(built, sip, messages, every_type, tmp_path):
    """The corpus and every type under every class, through the SIP subset:
    what the full build reads the same, every other record opaque."""
    messages = [*messages, *every_type]
    program = _link(sip, ROOT / "tests" / "c" / "dnsshim_test.c", tmp_path / "dnsshim_test")
    subset = split_log(_run(program, *messages).stdout)
    full = split_log(_run(built.test_prog, *messages).stdout)
    odd_class = compare_types(subset, full, {str(path): path for path in messages})
    # every known type under each of the 8 classes other than IN, less the
    # messages the full build rejects
    assert odd_class > 8 * 50, odd_class
    manifest = json.loads((sip / "share" / "dnsshim" / "firmware.json").read_text())
    assert manifest["types"] == ["A", "AAAA", "CNAME", "NAPTR", "SRV"]
    assert "dns.rdtypes.ANY.SOA" not in manifest["frozen"]


# ---- refusals: a CPython whose static library the build cannot use -------------------


def _refusal(tmp_path, *options):
    """The first line of the build's refusal; it says it in one line and
    writes nothing."""
    where = tmp_path / "fw"
    result = subprocess.run([sys.executable, "-m", "shim", "firmware", str(where), *options],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert not where.exists()
    return result.stderr.splitlines()[0]


def test_refuses_a_cpython_it_has_no_data_for(tmp_path):
    assert _refusal(tmp_path, "--python", "3.12") == (
        "python -m shim firmware: CPython 3.12: the firmware build knows Debian's CPython "
        "3.11 (Debian 12) and 3.13 (Debian 13) only: pass --python with one of them")


def test_refuses_without_the_static_library(tmp_path):
    from dnsshim_build import firmware as fw

    triplet = fw.native_triplet()
    missing = [v for v in fw.VERSIONS if not fw.Toolchain.debian(triplet, v).libpython.exists()]
    if not missing:
        pytest.skip("every CPython the build knows has its static library here")
    v = missing[0]
    assert _refusal(tmp_path, "--python", v) == (
        f"python -m shim firmware: /usr/lib/python{v}/config-{v}-{triplet}/libpython{v}-pic.a, "
        f"the static library the object links, is not installed: apt-get install "
        f"libpython{v}-dev")


def test_refuses_a_static_library_built_without_fpic():
    """Debian ships libpython3.X.a, compiled without -fPIC, beside the -pic.a
    the object needs: given that one, the build says so."""
    import dataclasses

    from dnsshim_build import firmware as fw

    _require_debian_python()
    tc = fw.Toolchain.debian("x86_64-linux-gnu", "3.11")
    tc = dataclasses.replace(tc, libpython=tc.libpython.with_name("libpython3.11.a"))
    assert tc.libpython.is_file()
    with pytest.raises(fw.FirmwareError) as refusal:
        tc.check()
    assert str(refusal.value) == (
        "/usr/lib/python3.11/config-3.11-x86_64-linux-gnu/libpython3.11.a was compiled without "
        "-fPIC (getbuildinfo.o: R_X86_64_32): the object needs the position-independent "
        "libpython3.11-pic.a: apt-get install libpython3.11-dev")
    assert fw.Toolchain.debian("x86_64-linux-gnu", "3.11").non_pic_relocation(
        fw.Toolchain.debian("x86_64-linux-gnu", "3.11").libpython) == ""


def test_the_sha2_stand_in_is_fips_180_4():
    """csrc/firmware/sha2.py, the 3.13 object's _sha2: hashlib's digests at
    every padding boundary, fed whole and in pieces, copies included."""
    import hashlib
    import importlib.util

    spec = importlib.util.spec_from_file_location("_sha2_stand_in",
                                                  ROOT / "csrc" / "firmware" / "sha2.py")
    sha2 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sha2)
    data = bytes(range(256)) * 5
    for name in ("sha224", "sha256", "sha384", "sha512"):
        new = getattr(sha2, name)
        assert (new().name, new().digest_size, new().block_size) == \
            (name, hashlib.new(name).digest_size, hashlib.new(name).block_size)
        for size in (0, 1, 55, 56, 63, 64, 65, 111, 112, 127, 128, 129, 1000):
            assert new(data[:size]).hexdigest() == hashlib.new(name, data[:size]).hexdigest()
            h = new(string=data[:size // 3])
            copy = h.copy()
            h.update(memoryview(data[size // 3:size]))
            assert h.digest() == hashlib.new(name, data[:size]).digest()
            assert copy.digest() == hashlib.new(name, data[:size // 3]).digest()
        with pytest.raises(TypeError):
            new("text")


# ---- arm64 ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def arm64(tmp_path_factory):
    require_program(f"{ARM64}-gcc", "gcc-aarch64-linux-gnu")
    require_program("qemu-aarch64", "qemu-user")
    _require_debian_python(ARM64)
    return _firmware(tmp_path_factory, "firmware-arm64", "--target", ARM64)


def test_arm64_under_qemu(built, arm64, tmp_path):
    """The same object cross-built: the C test program for arm64 gives, under
    qemu-aarch64, what the ordinary library gives natively."""
    program = _link(arm64, ROOT / "tests" / "c" / "dnsshim_test.c", tmp_path / "dnsshim_test",
                    cc=f"{ARM64}-gcc")
    header = subprocess.run(["readelf", "-h", str(program)], capture_output=True, text=True,
                            check=True).stdout
    assert re.search(r"Machine:\s+AArch64", header)
    files = write_messages(tmp_path)
    ours = subprocess.run(["qemu-aarch64", "-L", f"/usr/{ARM64}", str(program), *map(str, files)],
                          capture_output=True, text=True, timeout=1800,
                          env={"PATH": "/usr/bin:/bin"})
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stdout == _run(built.test_prog, *files).stdout
    manifest = json.loads((arm64 / "share" / "dnsshim" / "firmware.json").read_text())
    assert manifest["target"] == ARM64


def test_arm64_with_its_interpreters_linked_in_under_qemu(built, tmp_path_factory, tmp_path):
    """--parallelism 2 cross-built: under qemu-aarch64 with parallelism 2 (a
    copy parses each call) the C test program gives what the ordinary library
    gives natively, and a third interpreter is refused naming the option."""
    require_program(f"{ARM64}-gcc", "gcc-aarch64-linux-gnu")
    require_program("qemu-aarch64", "qemu-user")
    _require_debian_python(ARM64)
    where = _firmware(tmp_path_factory, "firmware-arm64-parallel", "--target", ARM64,
                      "--parallelism", "2")
    program = _link(where, ROOT / "tests" / "c" / "dnsshim_test.c", tmp_path / "dnsshim_test",
                    cc=f"{ARM64}-gcc")
    files = write_messages(tmp_path)
    qemu = ["qemu-aarch64", "-L", f"/usr/{ARM64}", str(program)]
    ours = subprocess.run([*qemu, *map(str, files)], capture_output=True, text=True,
                          timeout=1800, env={"PATH": "/usr/bin:/bin", "DNS_SHIM_PARALLELISM": "2"})
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert ours.stderr == ""
    assert ours.stdout == _run(built.test_prog, *files).stdout
    third = subprocess.run([*qemu, files[0]], capture_output=True, text=True, timeout=600,
                           env={"PATH": "/usr/bin:/bin", "DNS_SHIM_PARALLELISM": "3"})
    assert third.stderr.splitlines()[0] == (
        "dnsshim: DNS_SHIM_PARALLELISM=3 is not taken, parallelism stays 1: "
        "DNS_SHIM_ERR_UNSUPPORTED: parallelism 3 needs 3 interpreters, and this firmware "
        "object has 2: build it with python -m shim firmware --parallelism 3")


LINK_PROGRAM = r"""
#include <stdio.h>
#include <dns_shim.h>

int main(void)
{
    uint8_t header[12] = {0x12, 0x34, 0x81, 0x80};
    printf("%d %s\n", (int)process_dns_response(header, 12), dns_shim_version());
    return 0;
}
"""


def _link_as_written(line, firmware_dir, work):
    """Run a documented link line as a user types it, in a folder with prog.c."""
    (work / "prog.c").write_text(LINK_PROGRAM)
    result = subprocess.run(f"{line} -o prog", shell=True, cwd=work, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, (line, result.stderr[-2000:])
    run = _run(work / "prog")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("0 "), run.stdout


def test_link_lines_work_as_written(firmware, tmp_path):
    """The README's line, the tool's printed hint and the manifest's link each
    compile and link a program including dns_shim.h as written (the header's
    folder given with -I): only the folder's name differs from the README's."""
    manifest = json.loads((firmware / "share" / "dnsshim" / "firmware.json").read_text())
    hint = (firmware.parent / "stdout").read_text().rstrip("\n").split("link it with: ", 1)[1]
    readme = (ROOT / "README.md").read_text()
    line = re.search(r"^(cc .*libdnsshim_fw\.o[^#\n]*?)\s*#", readme, re.M).group(1)
    readme_line = line.replace("/tmp/fw", str(firmware)).replace("app.c", "prog.c")
    assert hint == manifest["link"]
    assert manifest["link"] == f"cc -I {firmware}/include prog.c " \
        f"{firmware}/lib/libdnsshim_fw.o {' '.join(LIBS)}"
    for n, written in enumerate((readme_line, hint, manifest["link"])):
        work = tmp_path / str(n)
        work.mkdir()
        _link_as_written(written, firmware, work)


def test_help_reads_whole():
    """firmware --help's description is whole sentences, not a docstring's cut first line."""
    result = subprocess.run([sys.executable, "-m", "shim", "firmware", "--help"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    description = " ".join(result.stdout.split("\n\n", 1)[1].split("\n\n", 1)[0].split())
    assert description == firmware_build.DESCRIPTION
    assert description.endswith(".") and "DIR/include/dns_shim.h" in description
