"""The libFuzzer harnesses of tests/fuzz/: how they are built and run.

    python tests/fuzz/libfuzzer.py build OUT         both libraries and every harness into OUT
    python tests/fuzz/libfuzzer.py seeds OUT         the seed folders, OUT/seeds/<harness>/

The libraries are built by ``build_ffi.py`` with clang and
``-fsanitize=address,undefined,fuzzer-no-link`` (libFuzzer's coverage of
their C: the bridges, cffi's module, every unit), the harnesses through
``pipeline.compile_program`` with ``-fsanitize=fuzzer,address,undefined``.
A library built with clang's ASan leaves the runtime's symbols to the
program (clang links the runtime into executables only), so its link gets
``-Wl,-z,undefs`` after the build's ``--no-undefined``.  The harnesses of
the libraries' own units (fuzz_plan, fuzz_ares_plan, fuzz_dnsrec_plan,
fuzz_service, fuzz_service_ares: Harness.units) compile those units into themselves and link
neither library.  The embedded CPython is not instrumented: libFuzzer sees
the C side's coverage only (the Python decoder's own coverage-guided
fuzzing is tests/fuzz.py, atheris).

HARNESSES says what each one is; tests/test_libfuzzer.py runs each for a
bounded time and replays tests/regressions/ through them; tests/README.md
("libFuzzer") has the commands of long runs.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
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
    #: message; "plan": a plan built from the octets (no seeds); "service":
    #: a call's choices, then dnsshimd's answer (seeds: service_seeds());
    #: "ares-service": a c-ares call's choices, then dnsshimd's answer to it
    #: (seeds: ares_service_seeds()); "nss": an NSS call's choices, then the
    #: replies to its queries (seeds: nss_seeds())
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
        if self.input in ("plan", "service", "ares-service", "nss"):
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
    Harness("fuzz_service", "service.c's reader of dnsshimd's answer (with dispatch.c and "
            "failure.c), no Python, no socket: its verdict against the harness's, the calls "
            "the steps, every struct what the answer carries, the host's blocks given back",
            units=(_LIB / "service.c", _LIB / "dispatch.c", _LIB / "failure.c"),
            input="service", seconds=10),
    Harness("fuzz_service_ares", "libdnsshim_ares's reader of dnsshimd's answer (every unit "
            "but the bridge), no Python, no socket: what it takes is a parse's status, passes "
            "check.c and is written again octet for octet; nothing held when it refuses",
            units=_ARES_UNITS, input="ares-service", seconds=10),
    Harness("fuzz_nss", "libnss_dnsshim's own C (search list, pair and TCP transport, replies "
            "matched, the answer's assembly into the caller's buffer, ERANGE) with the replies "
            "a name server of the harness's gives: statuses, errno and h_errno, every pointer "
            "inside the buffer", libraries=("dnsshim",), input="nss"),
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
    written under out; for fuzz_service, service_seeds() under out; none
    for the plan harnesses."""
    if harness.input == "plan":
        return []
    if harness.input == "service":
        return [service_seeds(Path(out) / f"seeds-{harness.name}")]
    if harness.input == "ares-service":
        return [ares_service_seeds(Path(out) / f"seeds-{harness.name}")]
    if harness.input == "nss":
        return [nss_seeds(Path(out) / f"seeds-{harness.name}")]
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


# ---------------------------------------------------------------------------
# fuzz_service's seeds: answers of dnsshimd (csrc/lib/service_wire.h) encoded
# here, each behind the harness's choices (tests/fuzz/fuzz_service.c).

#: The response's magic and version; a verdict, a fault; the wire codes of
#: on_header, on_other and on_edns_option (service_wire.h).
_MAGIC, _VERSION, _VERDICT, _FAULT = 0x44535231, 1, 0, 1
_HEADER, _OTHER, _EDNS = 0xFFF0, 0xFFF1, 0xFFF2


def _w_name(text: bytes) -> bytes:
    return struct.pack(">H", len(text)) + text


def _w_bytes(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _w_rr(owner: bytes, rtype: int, section=1, index=0, ttl=300, rclass=1) -> bytes:
    return _w_name(owner) + struct.pack(">HHIII", rtype, rclass, ttl, section, index)


def _w_header(qname=b"example.com", qtype=1, ancount=1, nscount=0, arcount=0,
              edns=True) -> bytes:
    has = struct.pack(">B", 1) + _w_name(qname) if qname is not None else b"\0"
    return (struct.pack(">HHHHHHHHH", _HEADER, 0x1234, 0x8180, 0, 0,
                        1 if qname is not None else 0, ancount, nscount, arcount + edns)
            + has + struct.pack(">HHiHHH", qtype if qname else 0, 1 if qname else 0,
                                0 if edns else -1, 1232 if edns else 0, 0, 0))


def _w_edns(code=15, data=b"\0\x12blocked", info=18, text=b"blocked", client=b"",
            server=b"", family=0, source=0, scope=0, address=b"") -> bytes:
    return (struct.pack(">HH", _EDNS, code) + _w_bytes(data) + struct.pack(">i", info)
            + _w_bytes(text) + _w_bytes(client) + _w_bytes(server)
            + struct.pack(">HBB", family, source, scope) + _w_bytes(address))


def _w_answer(steps=(), status=0, detail=b"", kind=_VERDICT) -> bytes:
    """An answer's frame, without its 4-octet length."""
    return (struct.pack(">IHHiH", _MAGIC, _VERSION, kind, status, len(detail)) + detail
            + struct.pack(">I", len(steps)) + b"".join(steps))


def service_answers() -> dict:
    """{name: answer frame}: what dnsshimd answers, hand-encoded: a header
    and an A record, every typed kind, an EDNS option of each decoded
    code, a verdict with its detail, a fault, a ping's answer."""
    a = struct.pack(">H", 1) + _w_rr(b"example.com", 1) + bytes([192, 0, 2, 1])
    aaaa = struct.pack(">H", 28) + _w_rr(b"example.com", 28, 1, 1) + bytes(range(16))
    txt = (struct.pack(">H", 16) + _w_rr(b"example.com", 16, 1, 2) + struct.pack(">I", 3)
           + _w_bytes(b"v=spf1 -all") + _w_bytes(b"") + _w_bytes(b"a\0b"))
    cname = struct.pack(">H", 5) + _w_rr(b"www.example.com", 5) + _w_name(b"example.com")
    ns = struct.pack(">H", 2) + _w_rr(b"example.com", 2, 2, 0) + _w_name(b"ns1.example.com")
    ptr = struct.pack(">H", 12) + _w_rr(b"1.2.0.192.in-addr.arpa", 12) + _w_name(b"host.")
    dname = struct.pack(">H", 39) + _w_rr(b"example.com", 39) + _w_name(b"example.net")
    mx = (struct.pack(">H", 15) + _w_rr(b"example.com", 15) + struct.pack(">H", 10)
          + _w_name(b"mail.example.com"))
    srv = (struct.pack(">H", 33) + _w_rr(b"_sip._udp.example.com", 33, 1, 3)
           + struct.pack(">HHH", 10, 60, 5060) + _w_name(b"sip.example.com"))
    naptr = (struct.pack(">H", 35) + _w_rr(b"example.com", 35, 1, 4) + struct.pack(">HH", 100, 10)
             + _w_bytes(b"S") + _w_bytes(b"SIP+D2U") + _w_bytes(b"")
             + _w_name(b"_sip._udp.example.com"))
    soa = (struct.pack(">H", 6) + _w_rr(b"example.com", 6, 2, 0) + _w_name(b"ns1.example.com")
           + _w_name(b"hostmaster.example.com") + struct.pack(">IIIII", 2024010101, 7200,
                                                                3600, 1209600, 300))
    other = struct.pack(">H", _OTHER) + _w_rr(b"example.com", 257, 4, 0) \
        + _w_bytes(b"\0\x05issueletsencrypt.org")
    cookie = _w_edns(10, bytes(range(24)), -1, b"", bytes(range(8)), bytes(range(8, 24)))
    ecs = _w_edns(8, b"\0\x01\x18\x00\xc0\x00\x02", -1, b"", family=1, source=24,
                  address=b"\xc0\x00\x02")
    return {
        "a": _w_answer([_w_header(), _w_edns(), a]),
        "every-kind": _w_answer([_w_header(ancount=9, nscount=2, arcount=1), cookie, ecs, a,
                                 aaaa, txt, cname, dname, mx, srv, naptr, ptr, ns, soa, other]),
        "txt": _w_answer([_w_header(qtype=16, edns=False), txt]),
        "no-question": _w_answer([_w_header(qname=None, ancount=0)]),
        "verdict": _w_answer(status=-4, detail=b"DNS_SHIM_ERR_TRUNCATED: the message ends "
                                                b"inside the answer section's record 0"),
        "mismatch": _w_answer(status=-16, detail=b"DNS_SHIM_ERR_MISMATCH: the ID is 0x1234, "
                                                 b"the query's 0x4321"),
        "fault": _w_answer(kind=_FAULT, status=-13, detail=b"DNS_SHIM_ERR_NO_MEMORY: the "
                                                           b"service's memory limit"),
        "ping": _w_answer(),
    }


def service_seeds(where: Path) -> Path:
    """fuzz_service's seed folder: each answer of service_answers() behind
    several choices of the harness (its config octet: the whole set, 1.0's
    size, a counting allocator, one that refuses, a callback that fails, a
    ping), written into where."""
    where = Path(where)
    where.mkdir(parents=True, exist_ok=True)
    choices = {
        "libc": bytes([0x00, 7]),
        "size-1.0": bytes([0x04, 7]),
        "counting": bytes([0x10, 7]),
        "refusing-after-1": bytes([0x30, 7, 1]),
        "refusing": bytes([0x30, 3, 0]),
        "no-edns-callback": bytes([0x08, 7, 0x20, 0x00]),
        "callback-fails": bytes([0x50, 7, 2, 1]),
        "ping": bytes([0x80, 0]),
    }
    for name, frame in service_answers().items():
        for how, prefix in choices.items():
            if (how == "ping") != (name in ("ping", "fault")):
                continue
            (where / f"{name}-{how}").write_bytes(prefix + frame)
    # Frame 1, the harness's head: the step count's octet, then the steps.
    every = service_answers()["every-kind"]
    (where / "every-kind-head").write_bytes(bytes([0x01, 7, every[17]]) + every[18:])
    # Frame 2, an answer the harness builds from choices: a step to each
    # member, its fields from small choices (every one well-formed).
    choices = b"".join(bytes([m]) + bytes([3]) * 60 for m in range(14))
    (where / "built-counting").write_bytes(bytes([0x12, 7, 14]) + choices)
    (where / "built-fails").write_bytes(bytes([0x42, 7, 9, 1, 14]) + choices)
    return where


# fuzz_service_ares's seeds: libdnsshim_ares's answers (csrc/ares/service.c)
# behind the harness's choices: kind, length, offset, status.

def _a_str(data) -> bytes:
    return b"\0" if data is None else b"\1" + struct.pack(">I", len(data)) + data


def _a_item(nums=(0, 0, 0, 0, 0), strs=(None, None, None, None)) -> bytes:
    return struct.pack(">5q", *nums) + b"".join(map(_a_str, strs))


def _a_result(host=False, name=None, aliases=(), addrs=(), ttls=(), items=()) -> bytes:
    addrlen = len(addrs[0]) if addrs else 0
    return (bytes([host]) + _a_str(name) + struct.pack(">I", len(aliases))
            + b"".join(map(_a_str, aliases)) + struct.pack(">II", len(addrs), addrlen)
            + b"".join(addrs) + b"".join(struct.pack(">i", t) for t in ttls)
            + struct.pack(">I", len(items)) + b"".join(items))


def _a_plan(rrs=()) -> bytes:
    out = struct.pack(">IIIII", 0, 0x1234, 0x8180 & 0, 0, 0) + _a_str(b"example.com")
    out += struct.pack(">III", 1, 1, len(rrs))
    for section, rtype, name, fields in rrs:
        out += struct.pack(">IIII", section, rtype, 1, 300) + _a_str(name)
        out += struct.pack(">I", len(fields))
        for key, datatype, number, data in fields:
            out += struct.pack(">III", key, datatype, number) + _a_str(data)
    return out


def ares_service_seeds(where: Path) -> Path:
    """fuzz_service_ares's seed folder: an answer for each kind of call,
    as dnsshimd writes it, behind the harness's choices."""
    where = Path(where)
    where.mkdir(parents=True, exist_ok=True)
    a4, a6 = bytes([192, 0, 2, 1]), bytes(range(16))
    answers = {
        "a": (1, 0, _a_result(True, b"example.com", [b"www.example.com"], [a4, a4], [300, -1])),
        "aaaa": (2, 0, _a_result(True, b"example.com", (), [a6], [60])),
        "a-nodata": (1, 1, _a_result()),
        "ns": (3, 0, _a_result(True, b"example.com", [b"ns1.example.com", b"ns2.example.com"])),
        "mx": (5, 0, _a_result(items=[_a_item((10, 0, 0, 0, 0), (b"mail.example.com", None,
                                                                  None, None))])),
        "txt": (7, 0, _a_result(items=[_a_item((1, 0, 0, 0, 0), (b"v=spf1", None, None, None)),
                                       _a_item((0, 0, 0, 0, 0), (b"", None, None, None))])),
        "naptr": (9, 0, _a_result(items=[_a_item((100, 10, 0, 0, 0),
                                                 (b"S", b"SIP+D2U", b"", b"_sip._udp."))])),
        "soa": (10, 0, _a_result(items=[_a_item((1, 2, 3, 4, 5), (b"ns1.", b"host.", None,
                                                                   None))])),
        "expand": (13, 0, _a_result(items=[_a_item((13, 0, 0, 0, 0),
                                                   (b"example.com", None, None, None))])),
        "badresp": (4, 10, _a_result()),
        "plan": (0, 0, _a_plan([(1, 1, b"example.com", [(101, 1, 0, a4)]),
                                (3, 41, b"", [(4102, 10, 15, b"\0\x12")])])),
        "plan-refused": (0, 10, b""),
    }
    for name, (kind, status, payload) in answers.items():
        (where / name).write_bytes(struct.pack(">BHHi", kind, 512, 12, status) + payload)
    return where


# ---------------------------------------------------------------------------
# fuzz_nss's seeds: lookups and the replies to them (tests/fuzz/fuzz_nss.c's
# input: the choices, the buffer's size, each reply behind its flags).

#: The choices' entry points (bits 0-2) and names (bits 3-4).
_BYNAME4, _BYNAME3_V4, _BYNAME3_V6, _BYADDR_V4, _BYADDR_V6, _BYNAME, _BYADDR_MAPPED = 0, 1, 2, 3, 4, 5, 6
_WWW, _SHORT = 0, 1 << 3
_NO_SEARCH = 0x80


def _nss_reply(name, rdtype, records=(), rcode=0, tc=False) -> bytes:
    import dns.flags
    import dns.message
    import dns.rrset

    query = dns.message.make_query(name, rdtype, use_edns=False)
    reply = dns.message.make_response(query)
    reply.set_rcode(rcode)
    reply.flags |= dns.flags.RA  # a recursive server's: not lame (glibc drops a lame reply)
    if tc:
        reply.flags |= dns.flags.TC
    for owner, kind, text in records:
        reply.answer.append(dns.rrset.from_text(owner, 300, "IN", kind, text))
    return reply.to_wire()


def nss_seeds(where: Path) -> Path:
    """fuzz_nss's seeds, written into where: each entry point with answers,
    a CNAME chain, the search list past an NXDOMAIN, a truncated reply and
    its TCP retry, an answer too big for the buffer, and the errors."""
    where.mkdir(parents=True, exist_ok=True)
    www = "www.example.test."
    a = _nss_reply(www, "A", [(www, "A", "192.0.2.1"), (www, "A", "192.0.2.2")])
    aaaa = _nss_reply(www, "AAAA", [(www, "AAAA", "2001:db8::1")])
    chain = _nss_reply(www, "A", [(www, "CNAME", "host.example.test."),
                                  ("host.example.test.", "A", "192.0.2.3")])
    many = _nss_reply(www, "AAAA", [(www, "AAAA", f"2001:db8::{i:x}") for i in range(1, 41)])
    ptr4 = _nss_reply("7.2.0.192.in-addr.arpa.", "PTR",
                      [("7.2.0.192.in-addr.arpa.", "PTR", "host.example.test.")])
    v6 = "7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa."
    ptr6 = _nss_reply(v6, "PTR", [(v6, "PTR", "host.example.test.")])
    seeds = {
        "byname4": (_BYNAME4 | _WWW, 1024, [a, aaaa]),
        "byname4-erange": (_BYNAME4 | _WWW, 200, [a, many]),
        "byname4-search": (_BYNAME4 | _SHORT, 1024, [a, aaaa]),
        "byname4-nxdomain": (_BYNAME4 | _WWW | _NO_SEARCH, 1024,
                             [_nss_reply(www, "A", rcode=3), _nss_reply(www, "AAAA", rcode=3)]),
        "byname3-chain": (_BYNAME3_V4 | _WWW, 1024, [chain]),
        "byname3-v6": (_BYNAME3_V6 | _WWW, 1024, [aaaa]),
        "byname3-v6-erange": (_BYNAME3_V6 | _WWW, 300, [many]),
        "byname3-tcp": (_BYNAME3_V4 | _WWW, 1024, [_nss_reply(www, "A", tc=True), a]),
        "byname3-servfail": (_BYNAME3_V4 | _WWW, 1024, [_nss_reply(www, "A", rcode=2)]),
        "byname": (_BYNAME | _WWW, 1024, [a]),
        "byaddr-v4": (_BYADDR_V4, 1024, [ptr4]),
        "byaddr-v6": (_BYADDR_V6, 1024, [ptr6]),
        "byaddr-mapped": (_BYADDR_MAPPED, 1024, [ptr4]),
        "byaddr-small": (_BYADDR_V4, 16, [ptr4]),
    }
    for name, (choices, size, replies) in seeds.items():
        data = struct.pack(">BH", choices, size)
        for wire in replies:
            data += struct.pack(">BH", 3, len(wire)) + wire
        (where / name).write_bytes(data)
    return where


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
