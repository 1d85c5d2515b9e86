"""The benchmark: libdnsshim against what a user would use instead, in one run.

    python tests/bench/benchmark.py [--rounds N] [--json FILE] [--smoke] [--only nss|service]

For each message of a fixed set it measures, interleaved round by round (the
order of the methods shuffled each round, so machine noise hits all alike):

* ``shim``: ``process_dns_response`` called from C (tests/bench/dnsshim_bench.c),
  with registered callbacks that copy every field;
* ``from_wire``: ``dns.message.from_wire`` in Python on the same bytes;
* ``dnslib``: ``dnslib.DNSRecord.parse`` in Python;
* ``c-ares``: c-ares's ``ares_parse_*_reply`` in C, where one applies (when
  the benchmark was built with Debian's libc-ares-dev);
* ``dnsshim_ares``: the same C calls answered by libdnsshim_ares (the same
  program linked with -ldnsshim_ares before -lcares), beside c-ares;
* ``c-ares 1.34 dnsrec`` and ``dnsshim dnsrec``: ``ares_dns_parse`` and
  ``ares_dns_record_destroy`` (tests/bench/ares_dnsrec_bench.c, built against
  c-ares 1.34 from tests/cares_source.py), c-ares's own and libdnsshim_ares's
  preloaded into the same program: the second against the first, and against
  ``shim`` (what ``process_dns_response`` costs on the same message);

then the bare call (a call rejected before parsing, length -1; and a
header-only response), the cold start (the first call in a fresh process,
and the resident memory the runtime adds), for the library of build/, for
a stripped bundle (python -m shim bundle, built into a temporary folder)
and for the firmware object (python -m shim firmware, with every type and
with the SIP/IMS set; given with --firmware and --firmware-sip, or built
into a temporary folder where Debian's static CPython is installed), beside
it the object from Debian 13's CPython 3.13 (built and timed in a Debian 13
root, tests/firmware13.py, where one can be made; not in smoke mode), and
thread scaling (aggregate calls per second from 1, 2 and 4 C threads).
Sizes: the bundle's folder (stripped, and as one xz -9 tar), and what the
object adds to a program (the manifest's "program growth": stripped, and
xz -9).

Then the per-call price in instructions, which noise does not move:
callgrind's count of one ``process_dns_response`` (tests/bench/dnsshim_callgrind.c)
on each message of the set and on held-out shapes, against the floor,
dnspython's own name and RDATA parsers alone on the same bytes in the same
interpreter (tests/bench/floor.py); reported as shim/floor (when valgrind and its
callgrind.h are installed).

Then the NSS module (libnss_dnsshim.so.2): getaddrinfo(AF_UNSPEC,
SOCK_STREAM) of a name the responder of tests/nss_env.py answers with 2 A
and 1 AAAA records (on loopback, in a namespace of its own), through glibc's
NSS with ``hosts: files dnsshim`` against ``hosts: files dns``, and against
``dns`` with ``options single-request`` in resolv.conf (glibc's parser, the
A and AAAA queries sent one after the other, where dns and the module send
both at once):
the first lookup in a fresh process and the resident memory it adds, and
the steady lookup (tests/bench/nss_bench.c), one harness run per
configuration, interleaved round by round (needs root and namespaces; the
JSON says why it was not measured otherwise).  ``--only nss`` runs that
part alone.

Then the parse service (dnsshimd, on a socket of the benchmark's own, run
by tests/service_env.py) against parsing in the process (DNS_SHIM_SERVICE=
none; every other column parses in the process too), the same program
either way (tests/bench/service_bench.c): the first call in a fresh process
(the call, the time from the spawn to its return, the resident memory it
adds; medians of at least 15 processes each), the warm call on every
message of the set, and the calls per second of 8 client processes against
a service at --parallelism 1 and at 2 (which needs the worker image:
--worker-image, build's, an editable install's, or one built here; not in
smoke mode).  Every answer is checked against the in-process one.
``--only service`` runs that part alone.

It prints one table of medians and ratios and can write everything as JSON.
``--smoke`` runs a couple of iterations of everything, only to keep the
benchmark working (the test suite does that); its numbers mean nothing.

It builds the library and the C programs into build/ first if they are not
there (python build_ffi.py; python tests/cprograms.py).
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(ROOT)]

import dns.message  # noqa: E402
import dns.rrset  # noqa: E402
import dns.version  # noqa: E402

from dnsshim_build import pipeline  # noqa: E402
import cprograms  # noqa: E402
from shim.sample import ims_wire  # noqa: E402
from wire import AT_QNAME, header, question, rr  # noqa: E402

try:
    import dnslib
except ImportError:  # a benchmark dependency: the column is left out without it
    dnslib = None


def _response(qname, qtype, answer=(), authority=(), additional=(), rcode=0, edns=False,
              want_dnssec=False):
    query = dns.message.make_query(qname, qtype, use_edns=0 if edns else None,
                                   want_dnssec=want_dnssec)
    query.id = 0x2A2A
    resp = dns.message.make_response(query)
    resp.set_rcode(rcode)
    for section, records in ((resp.answer, answer), (resp.authority, authority),
                             (resp.additional, additional)):
        for name, ttl, rdtype, text in records:
            section.append(dns.rrset.from_text(name, ttl, "IN", rdtype, text))
    return resp.to_wire(max_size=65535)


_SIG = ("A" * 86 + "==")  # a 64-octet signature (ECDSA P-256 size), base64
_KEY = ("B" * 86 + "==")


def messages():
    """name -> (wire, c-ares parser or None)."""
    www = "www.example.com."
    out = {
        "A": (_response(www, "A", [(www, 300, "A", "192.0.2.1")]), "cares_a"),
        "CNAME+4A": (_response(www, "A", [(www, 300, "CNAME", "cdn.example.net.")]
                               + [("cdn.example.net.", 60, "A", f"198.51.100.{i}")
                                  for i in range(1, 5)]), "cares_a"),
        "IMS NAPTR/SRV/AAAA": (ims_wire(), "cares_naptr"),
        "DNSSEC ~2KB": (_response(
            "example.com.", "DNSKEY",
            [("example.com.", 3600, "DNSKEY", f"{flags} 3 13 {_KEY}")
             for flags in (256, 256, 257, 257)]
            + [("example.com.", 3600, "RRSIG",
                f"DNSKEY 13 2 3600 20300101000000 20250101000000 {tag} example.com. {_SIG}")
               for tag in (1111, 2222, 3333, 4444, 5555, 6666, 7777, 8888)],
            authority=[("example.com.", 3600, "NS", f"ns{i}.example.com.") for i in (1, 2)]
            + [("example.com.", 3600, "RRSIG",
                f"NS 13 2 3600 20300101000000 20250101000000 1111 example.com. {_SIG}")],
            additional=[(f"ns{i}.example.com.", 3600, "A", f"192.0.2.{i}") for i in (1, 2)]
            + [(f"ns{i}.example.com.", 3600, "RRSIG",
                f"A 13 3 3600 20300101000000 20250101000000 1111 example.com. {_SIG}")
               for i in (1, 2)],
            edns=True, want_dnssec=True), None),
        "NXDOMAIN+SOA": (_response(
            "nope.example.com.", "A",
            authority=[("example.com.", 900, "SOA",
                        "ns1.example.com. hostmaster.example.com. 2024010101 7200 3600 "
                        "1209600 300")], rcode=3), None),
    }
    # As many records as fit in 64 KiB: A records of 16 octets, owners compressed.
    count = (65535 - 12 - 17) // 16
    wire = header(qd=1, an=count) + question() + rr(AT_QNAME, 1, bytes([192, 0, 2, 1])) * count
    out[f"64 KiB, {count} A"] = (wire, "cares_a")
    return out


def held_out():
    """name -> wire: shapes outside the timed set, for the instruction counts."""
    zone = "example.org."
    nsec3 = "1 0 0 - 2t7b4g4vsa5smi47k61mv5bv1a22bojr A RRSIG"
    return {
        "TXT x40 small": _response(zone, "TXT", [(zone, 300, "TXT", f'"v=spf1 {i}" "k{i}"')
                                                for i in range(40)]),
        "NSEC3 denial": _response(
            f"nope.{zone}", "A", rcode=3, edns=True, want_dnssec=True,
            authority=[(zone, 900, "SOA", f"ns1.{zone} h.{zone} 1 7200 3600 1209600 300"),
                       (zone, 900, "RRSIG", f"SOA 13 2 900 20300101000000 20250101000000 1 "
                        f"{zone} {_SIG}")]
            + [(f"{h}.{zone}", 900, "NSEC3", nsec3) for h in
               ("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom", "2vptu5timamqttgl4luu9kg21e0aor3s")]
            + [(f"{h}.{zone}", 900, "RRSIG", f"NSEC3 13 3 900 20300101000000 20250101000000 1 "
                f"{zone} {_SIG}") for h in
               ("0p9mhaveqvm6t7vbl5lop2u3t2rp3tom", "2vptu5timamqttgl4luu9kg21e0aor3s")]),
        "unknown types x8": _response(zone, "TYPE65280", [
            (zone, 60, f"TYPE{65280 + i}", rf"\# 8 {i:016x}") for i in range(8)]),
        "HTTPS+SVCB": _response(zone, "HTTPS", [
            (zone, 300, "HTTPS", f'1 . alpn="h2,h3" ipv4hint=192.0.2.{i}') for i in (1, 2)]
            + [(f"_dns.{zone}", 300, "SVCB", '1 dns.example.org. alpn="dot" port=853')]),
    }


class CBench:
    """The long-lived C process that times the C methods on request."""

    def __init__(self, program, files, preload=None):
        env = {**os.environ, "LD_PRELOAD": str(preload)} if preload else None
        self.proc = subprocess.Popen([str(program), "serve", *map(str, files)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)

    def time(self, method, index, iterations):
        self.proc.stdin.write(f"{method} {index} {iterations}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().split()
        if not answer or answer[0] == "error":
            return None
        return int(answer[0]) / 1e9

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def py_time(fn, wire, iterations):
    t0 = time.perf_counter()
    for _ in range(iterations):
        fn(wire)
    return time.perf_counter() - t0


def ensure_built(build: Path, programs=None):
    """The libraries (and the NSS module) where missing, and the C programs
    named (default: every one)."""
    if not (build / "libdnsshim.so").exists() or not (build / pipeline.NSS_MODULE).exists():
        subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--out", str(build)],
                       check=True, stdout=subprocess.DEVNULL)
    cprograms.build(build, programs)


def run(build: Path, rounds: int, smoke: bool, firmware_dirs=(None, None), worker_image=None,
        firmware_parallel=None):
    msgs = messages()
    names = list(msgs)
    tmp = Path(tempfile.mkdtemp(prefix="dnsshim-bench-"))
    files = []
    for i, name in enumerate(names):
        files.append(tmp / f"{i}.bin")
        files[-1].write_bytes(msgs[name][0])
    header_only = tmp / "header_only.bin"
    header_only.write_bytes(header())
    files.append(header_only)
    cbench = CBench(build / "dnsshim_bench", files)
    # The same C methods with libdnsshim_ares answering c-ares's calls.
    ares_prog = build / "dnsshim_bench_ares"
    cbench_ares = CBench(ares_prog, files) if ares_prog.exists() else None
    # ares_dns_parse (c-ares 1.28 and later): c-ares 1.34's own, and
    # libdnsshim_ares's preloaded into the same program.
    dnsrec_prog, dnsrec_missing = dnsrec_program(build)
    dnsrec = {}
    if dnsrec_prog is not None:
        dnsrec = {"c-ares 1.34 dnsrec": CBench(dnsrec_prog, files),
                  "dnsshim dnsrec": CBench(dnsrec_prog, files,
                                           preload=build / "libdnsshim_ares.so.1")}

    py_methods = {"from_wire": dns.message.from_wire}
    if dnslib is not None:
        py_methods["dnslib"] = dnslib.DNSRecord.parse

    # Iterations per batch: about 20 ms of from_wire per batch.
    iterations = {}
    for name in names:
        wire = msgs[name][0]
        once = py_time(dns.message.from_wire, wire, 3) / 3
        iterations[name] = 2 if smoke else max(3, int(0.02 / once))

    samples = {name: {} for name in names}
    bare = {"reject (length -1)": [], "header-only response": []}
    for _ in range(rounds):
        for index, name in enumerate(names):
            wire, cares = msgs[name]
            n = iterations[name]
            methods = ["shim"] + list(py_methods) + (["c-ares"] if cares else [])
            if cares and cbench_ares is not None:
                methods.append("dnsshim_ares")
            methods += list(dnsrec)
            random.shuffle(methods)
            for method in methods:
                if method == "shim":
                    elapsed = cbench.time("shim", index, n)
                elif method == "c-ares":
                    elapsed = cbench.time(cares, index, n)
                elif method == "dnsshim_ares":
                    elapsed = cbench_ares.time(cares, index, n)
                elif method in dnsrec:
                    elapsed = dnsrec[method].time("dnsrec", index, n)
                else:
                    elapsed = py_time(py_methods[method], wire, n)
                if elapsed is not None:
                    samples[name].setdefault(method, []).append(elapsed / n)
        n = 2 if smoke else 200000
        bare["reject (length -1)"].append(cbench.time("reject", 0, n) / n)
        n = 2 if smoke else 2000
        bare["header-only response"].append(cbench.time("shim", len(names), n) / n)
    cbench.close()
    if cbench_ares is not None:
        cbench_ares.close()
    for bench in dnsrec.values():
        bench.close()

    bundle_dir, bundle_bench = build_bundle(tmp)
    fw_dirs, fw_bench, fw_missing = firmware_programs(tmp, firmware_dirs)
    cold = {"first_call_ms": [], "rss_added_mib": []}
    cold_bundle = {"first_call_ms": [], "rss_added_mib": []}
    cold_fw = {"first_call_ms": [], "rss_added_mib": []}
    for _ in range(2 if smoke else 7):  # interleaved too
        cold_start(build / "dnsshim_bench", files[2], cold)
        cold_start(bundle_bench, files[2], cold_bundle)
        if fw_bench is not None:
            cold_start(fw_bench, files[2], cold_fw)

    # Thread scaling, interleaved too: 1, 2 and 4 threads in turn, a second
    # each (0.2 s in smoke mode), medians of the rounds.
    runs = {1: [], 2: [], 4: []}
    for _ in range(1 if smoke else 5):
        for threads in runs:
            out = subprocess.run([str(build / "dnsshim_bench"), "threads", str(threads),
                                  "0.2" if smoke else "1", str(files[1])],
                                 capture_output=True, text=True, check=True).stdout.split()
            runs[threads].append(float(out[out.index("calls_per_second") + 1]))
    scaling = {threads: statistics.median(values) for threads, values in runs.items()}

    result = {"messages": {}, "bare_us": {}, "cold": {}, "threads_calls_per_second": scaling,
              "rounds": rounds, "python": sys.version.split()[0],
              "dnspython": dns.version.version,
              "dnslib": getattr(dnslib, "version", None) if dnslib else None}
    for name in names:
        medians = {m: statistics.median(v) * 1e6 for m, v in samples[name].items()}
        entry = {"bytes": len(msgs[name][0]), "median_us": medians}
        shim = medians["shim"]
        for peer in ("from_wire", "dnslib", "c-ares"):
            if peer in medians:
                entry[f"shim/{peer}"] = shim / medians[peer]
        if "dnsshim_ares" in medians and "c-ares" in medians:
            entry["dnsshim_ares/c-ares"] = medians["dnsshim_ares"] / medians["c-ares"]
        if "dnsshim dnsrec" in medians:
            entry["dnsrec/c-ares dnsrec"] = (medians["dnsshim dnsrec"]
                                             / medians["c-ares 1.34 dnsrec"])
            entry["dnsrec/shim"] = medians["dnsshim dnsrec"] / shim
        result["messages"][name] = entry
    result["dnsrec"] = "measured" if dnsrec else {"not measured": dnsrec_missing}
    result["bare_us"] = {k: statistics.median(v) * 1e6 for k, v in bare.items()}
    result["cold"] = {k: statistics.median(v) for k, v in cold.items()}
    result["cold_bundle"] = {k: statistics.median(v) for k, v in cold_bundle.items()}
    result["cold"].update(cold_instructions(build / "dnsshim_bench", files[2]))
    result["cold_bundle"].update(cold_instructions(bundle_bench, files[2]))
    summary = json.loads((bundle_dir / "share" / "dnsshim" / "bundle.json").read_text())
    result["cold_bundle"]["bundle_mib"] = summary["bytes"] / 2**20
    result["cold_bundle"]["bundle_xz_mib"] = xz_size(bundle_dir) / 2**20
    if fw_bench is not None:
        result["cold_firmware"] = {k: statistics.median(v) for k, v in cold_fw.items()}
        result["cold_firmware"].update(cold_instructions(fw_bench, files[2]))
        for key, where in zip(("full", "sip"), fw_dirs):
            manifest = json.loads((where / "share" / "dnsshim" / "firmware.json").read_text())
            result["cold_firmware"][f"growth_{key}"] = {
                k: v / 2**20 for k, v in manifest["program growth"].items()}
        ours, theirs = result["cold_firmware"], result["cold_bundle"]
        for key in ("first_call_instructions", "first_call_ms", "rss_added_mib"):
            if key in ours and key in theirs:
                ours[f"{key}/bundle"] = ours[key] / theirs[key]
    else:
        result["cold_firmware"] = {"not measured": fw_missing}
    result["cold_firmware_313"] = firmware_313(files[2], smoke)
    result["pool"] = pool_scaling(tmp, fw_dirs[0] if fw_bench is not None else None, files[1],
                                  smoke, fw_missing, build, worker_image, firmware_parallel)
    result["nss"] = nss_module(build, rounds, smoke)
    from dnsshim_build import worker

    pool_image = tmp / "front" / worker.NAME  # pool_scaling's, where it built one
    result["service"] = service_part(build, rounds, smoke, worker_image or (
        pool_image if pool_image.is_file() else None))
    result["instructions"] = instructions(build, {n: msgs[n][0] for n in names}, smoke)
    result["instructions_bundle"] = instructions(bundle_dir / "lib", {n: msgs[n][0] for n in names},
                                                 smoke, bundle_dir / "lib")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)  # the messages and the bundle
    return result


def copy_library(build: Path, front: Path) -> Path:
    """A copy of build's libdnsshim.so.1 in front, with the runtime it loads
    from beside itself where the build has one (pipeline.RUNTIME_SONAME),
    so that what the library looks for beside itself (the worker image) is
    looked for in front; the copy's path."""
    import shutil

    for name in ("libdnsshim.so.1", getattr(pipeline, "RUNTIME_SONAME", None)):
        if name is not None and (build / name).exists():
            shutil.copyfile(build / name, front / name)
    return front / "libdnsshim.so.1"


def pool_scaling(tmp: Path, fw_dir, message: Path, smoke: bool, missing: str,
                 build: Path, image=None, parallel_dir=None) -> dict:
    """Calls per second by threads (1, 2, 4) and private interpreters (1, 2,
    4), each interpreter an instance of the worker image made from the
    firmware object (dnsshim_build/worker.py, tests/c/pool_instances.c), and
    the same through the library's own front (``library TxP``: T threads,
    dns_shim_set_parallelism(P), the image beside a copy of the library;
    P = 1 is the library's own interpreter, today's default), interleaved,
    medians of the rounds; the resident memory each instance after the first
    adds, started and warm; and the time an instance takes to load, start and
    make its first call.  Then a firmware object built with --parallelism 2,
    linked alone as a shared object, through its front (``firmware TxP``, T
    threads over P of its copies; 1x1 its own interpreter), and what each
    copy adds to a program (its manifest's growth beside fw_dir's).  The image
    and the --parallelism 2 object are built here unless given (image: a
    worker image file; parallel_dir: that object's firmware folder).  Where
    c-ares's headers are installed, libdnsshim_ares beside the same library
    and image (``ares TxP``: tests/c/ares_threads.c --bench, T threads calling
    ares_parse_a_reply, DNS_SHIM_PARALLELISM=P)."""
    if fw_dir is None:
        return {"not measured": missing}
    import shutil
    from dnsshim_build import firmware, worker

    front = tmp / "front"
    front.mkdir()
    if image is not None:
        image = Path(shutil.copyfile(image, front / worker.NAME))
    else:
        image = worker.build(front / worker.NAME)  # as the install builds it
    library = copy_library(build, front)
    shutil.copyfile(build / pipeline.DNSSHIM_ARES.soname, front / pipeline.DNSSHIM_ARES.soname)
    ares = None
    if cprograms.cares_flags() is not None:
        cflags, libs = cprograms.cares_flags()
        ares = pipeline.compile_program(
            [ROOT / "tests" / "c" / "ares_threads.c"], tmp / "ares_threads", against=build,
            libraries=("dnsshim_ares",), rpath=str(front), cflags=cflags,
            flags=tuple(f for f in libs if not f.startswith("-l")))
    program = pipeline.compile_program([ROOT / "tests" / "c" / "pool_instances.c"],
                                       tmp / "pool_instances", libraries=())
    linked = Path(parallel_dir) if parallel_dir is not None else tmp / "firmware-parallel"
    if parallel_dir is None:
        firmware.firmware(linked, parallelism=2)
    linked_lib = worker.link(linked / "lib" / "libdnsshim_fw.o", tmp / "libdnsshim_fw.so")
    runs, rss, start = {}, {}, []
    for _ in range(1 if smoke else 5):
        for threads in (1, 2, 4):
            for instances in (1, 2, 4):
                hows = [(f"{threads}x{instances}", [str(image)]),
                        (f"library {threads}x{instances}", ["--library", str(library)])]
                if (threads, instances) in ((1, 1), (2, 1), (2, 2)):
                    hows.append((f"firmware {threads}x{instances}", ["--library", str(linked_lib)]))
                if ares is not None and (threads, instances) in ((1, 1), (2, 1), (2, 2)):
                    out = subprocess.run([str(ares), "--bench", "0.2" if smoke else "1",
                                          str(threads), str(message)], capture_output=True,
                                         text=True, check=True,
                                         env={**os.environ,
                                              "DNS_SHIM_PARALLELISM": str(instances)}).stdout
                    runs.setdefault(f"ares {threads}x{instances}", []).append(
                        float(out.split()[out.split().index("calls/s") + 1]))
                for key, how in hows:
                    out = subprocess.run([str(program), *how, str(instances), str(threads),
                                          "--bench", "0.2" if smoke else "1", str(message)],
                                         capture_output=True, text=True,
                                         check=True).stdout.split()
                    runs.setdefault(key, []).append(float(out[out.index("calls/s") + 1]))
                    if threads == instances and how[0] != "--library":
                        added = int(out[out.index("rss_kib") + 1]) - int(
                            out[out.index("start_rss_kib") + 1])
                        rss.setdefault(instances, []).append(added / 1024)
                        start.append(float(out[out.index("start_ms") + 1]))
    calls = {key: statistics.median(v) for key, v in runs.items()}
    mib = {n: statistics.median(v) for n, v in rss.items()}
    grown = [json.loads((where / "share" / "dnsshim" / "firmware.json").read_text())[
        "program growth"] for where in (fw_dir, linked)]
    ares_ratio = ({"ares 2 threads parallelism 2 / 1 thread parallelism 1":
                       calls["ares 2x2"] / calls["ares 1x1"],
                   "ares 2 threads parallelism 1 / 1 thread parallelism 1":
                       calls["ares 2x1"] / calls["ares 1x1"]} if ares is not None else {})
    return {"calls_per_second": calls, **ares_ratio,
            "firmware 2 threads parallelism 2 / 1 thread parallelism 1":
                calls["firmware 2x2"] / calls["firmware 1x1"],
            "firmware program growth per copy MiB": {
                k: (grown[1][k] - grown[0][k]) / 2 / 2**20 for k in grown[0]},
            "2 threads 2 instances / 1 thread": calls["2x2"] / calls["1x1"],
            "2 threads 1 instance / 1 thread": calls["2x1"] / calls["1x1"],
            "library 2 threads parallelism 2 / 1 thread parallelism 1":
                calls["library 2x2"] / calls["library 1x1"],
            "library 2 threads parallelism 1 / 1 thread parallelism 1":
                calls["library 2x1"] / calls["library 1x1"],
            "rss_mib": mib, "rss_mib_per_extra_instance": (mib[4] - mib[1]) / 3,
            "instance_start_ms": statistics.median(start)}


#: The NSS part's name and zone: what the harness's responder answers it with.
NSS_NAME = "www.example.test"
NSS_ZONE = {(NSS_NAME, "A"): [f"{NSS_NAME}. 300 IN A 192.0.2.1", f"{NSS_NAME}. 300 IN A 192.0.2.2"],
            (NSS_NAME, "AAAA"): [f"{NSS_NAME}. 300 IN AAAA 2001:db8::1"]}
NSS_ANSWER = "2001:db8::1 192.0.2.1 192.0.2.2"

#: name -> (nsswitch.conf, resolv.conf): the module, glibc's dns module, and
#: glibc's with its A and AAAA queries one after the other, as the module
#: sends them (res_nsend each), so that the difference is the parsing.
NSS_CONFIGS = {
    "dns": ("hosts: files dns\n", "nameserver 127.0.0.1\n"),
    "dnsshim": ("hosts: files dnsshim\n", "nameserver 127.0.0.1\n"),
    "dnsshim service": ("hosts: files dnsshim\n", "nameserver 127.0.0.1\n"),
    "dns single-request": ("hosts: files dns\n",
                           "nameserver 127.0.0.1\noptions single-request\n"),
}
#: The configurations whose module parses through dnsshimd (started by root
#: in the namespace, on its default socket); the others have no service.
NSS_THROUGH_SERVICE = {"dnsshim service"}


def nss_unavailable(build: Path):
    """Why the NSS part cannot run here, or None."""
    import shutil

    if os.geteuid() != 0:
        return "not root (it runs in network and mount namespaces of its own, tests/nss_env.py)"
    for program in ("unshare", "ip", "mount", "ldconfig"):
        if shutil.which(program) is None:
            return f"no {program} (tests/nss_env.py needs it)"
    for name in (pipeline.NSS_MODULE, "nss_bench"):
        if not (build / name).exists():
            return f"no {build / name}"
    return None


def nss_module(build: Path, rounds: int, smoke: bool) -> dict:
    """The NSS module against glibc's dns module, through getaddrinfo in
    tests/nss_env.py's namespace (tests/bench/nss_bench.c): each round, one
    harness run per configuration of NSS_CONFIGS, in an order shuffled each
    round, each run a few fresh processes making one lookup (its wall time,
    the VmRSS it adds) and one process making a warm-up lookup then a run of
    lookups (wall and CPU µs per lookup: the CPU time is the process's own
    work, without the wait for the responder); medians over the rounds (the
    fresh processes of every round together), with dnsshim's ratios to
    dns's.  {"not measured": why} where the harness cannot run."""
    why = nss_unavailable(build)
    if why:
        return {"not measured": why}
    import shutil
    import pytest  # nss_env skips (or fails, under CI=true) through pytest
    import nss_env

    firsts, steady_n = (1, 5) if smoke else (3, 200)
    program = build / "nss_bench"
    commands = ([nss_env.command([program, "first", NSS_NAME])] * firsts
                + [nss_env.command([program, "steady", NSS_NAME, steady_n])])
    first_ms = {name: [] for name in NSS_CONFIGS}
    rss_mib = {name: [] for name in NSS_CONFIGS}
    steady_us = {name: [] for name in NSS_CONFIGS}
    steady_cpu_us = {name: [] for name in NSS_CONFIGS}
    queries = {name: [] for name in NSS_CONFIGS}
    tmp = Path(tempfile.mkdtemp(prefix="dnsshim-bench-nss-"))
    try:
        daemon = pipeline.compile_program([pipeline.CSRC / "service" / "dnsshimd.c"],
                                          tmp / "dnsshimd", against=build)
        for _ in range(1 if smoke else rounds):
            order = list(NSS_CONFIGS)
            random.shuffle(order)
            for name in order:
                nsswitch, resolv = NSS_CONFIGS[name]
                try:
                    run = nss_env.run(tmp, NSS_ZONE, commands, nsswitch=nsswitch, resolv=resolv,
                                      library_dirs=[build], timeout=120,
                                      service=daemon if name in NSS_THROUGH_SERVICE else None)
                except (pytest.skip.Exception, pytest.fail.Exception) as e:
                    return {"not measured": str(e)}
                for c in run.commands:
                    fields = c.stdout.split()
                    if (c.returncode != 0 or c.stderr or "answer" not in fields
                            or " ".join(fields[fields.index("answer") + 1:]) != NSS_ANSWER):
                        raise RuntimeError(f"nss_bench with {name} ({' '.join(c.argv[1:])}): "
                                           f"status {c.returncode}\n{c.stdout}{c.stderr}")
                    out = dict(zip(fields[:fields.index("answer"):2],
                                   fields[1:fields.index("answer"):2]))
                    if c.argv[1] == "steady":
                        steady_us[name].append(float(out["us_per_lookup"]))
                        steady_cpu_us[name].append(float(out["cpu_us_per_lookup"]))
                        continue
                    ours = name.startswith("dnsshim")
                    if out["dnsshim_loaded"] != ("1" if ours else "0"):
                        raise RuntimeError(f"nss_bench with {name}: libnss_dnsshim "
                                           f"{'not ' if ours else ''}loaded")
                    first_ms[name].append(float(out["first_lookup_us"]) / 1000)
                    rss_mib[name].append((int(out["rss_after_kib"])
                                          - int(out["rss_before_kib"])) / 1024)
                queries[name].append(len(run.queries) / (firsts + 1 + steady_n))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = {"name": NSS_NAME, "answer": NSS_ANSWER, "rounds": 1 if smoke else rounds,
              "fresh_processes": len(first_ms["dns"]), "steady_lookups": steady_n,
              "first_lookup_ms": {k: statistics.median(v) for k, v in first_ms.items()},
              "rss_added_mib": {k: statistics.median(v) for k, v in rss_mib.items()},
              "steady_us_per_lookup": {k: statistics.median(v) for k, v in steady_us.items()},
              "steady_cpu_us_per_lookup": {k: statistics.median(v)
                                           for k, v in steady_cpu_us.items()},
              "queries_per_lookup": {k: statistics.median(v) for k, v in queries.items()}}
    first, steady = result["first_lookup_ms"], result["steady_us_per_lookup"]
    result["first_lookup dnsshim/dns"] = first["dnsshim"] / first["dns"]
    result["steady dnsshim/dns"] = steady["dnsshim"] / steady["dns"]
    result["steady dnsshim/dns single-request"] = steady["dnsshim"] / steady["dns single-request"]
    cpu = result["steady_cpu_us_per_lookup"]
    result["steady cpu dnsshim/dns"] = cpu["dnsshim"] / cpu["dns"]
    rss = result["rss_added_mib"]
    result["service"] = {
        "first_lookup service/dns": first["dnsshim service"] / first["dns"],
        "rss_added_mib": rss["dnsshim service"],
        "steady cpu service/dns": cpu["dnsshim service"] / cpu["dns"],
        "steady wall service - dns (ms)": (steady["dnsshim service"] - steady["dns"]) / 1000,
    }
    return result


def nss_lines(n: dict) -> list:
    """The NSS part's lines of the table."""
    if "not measured" in n:
        return [f"NSS module: not measured ({n['not measured']})"]
    f, r, s = n["first_lookup_ms"], n["rss_added_mib"], n["steady_us_per_lookup"]
    c = n["steady_cpu_us_per_lookup"]
    return [
        f"NSS module (getaddrinfo AF_UNSPEC of {n['name']}: 2 A, 1 AAAA, from the harness's "
        f"responder on loopback; {n['rounds']} rounds):",
        f"  first lookup in a fresh process (median of {n['fresh_processes']}): dns "
        f"{f['dns']:.1f} ms, dnsshim {f['dnsshim']:.1f} ms, dnsshim/dns "
        f"{n['first_lookup dnsshim/dns']:.1f}; resident memory added: dns {r['dns']:.2f} MiB, "
        f"dnsshim {r['dnsshim']:.1f} MiB",
        f"  steady ({n['steady_lookups']} lookups): dns {s['dns']:.0f} µs, dns single-request "
        f"{s['dns single-request']:.0f} µs, dnsshim {s['dnsshim']:.0f} µs per lookup; "
        f"dnsshim/dns {n['steady dnsshim/dns']:.2f}, dnsshim/dns single-request "
        f"{n['steady dnsshim/dns single-request']:.2f}",
        f"  the process's CPU time per steady lookup: dns {c['dns']:.0f} µs, dns single-request "
        f"{c['dns single-request']:.0f} µs, dnsshim {c['dnsshim']:.0f} µs; dnsshim/dns "
        f"{n['steady cpu dnsshim/dns']:.1f}",
        f"  through dnsshimd: first lookup {f['dnsshim service']:.2f} ms "
        f"({n['service']['first_lookup service/dns']:.2f}x dns; target at most 2x), resident "
        f"memory added {r['dnsshim service']:.2f} MiB (target at most 1 MiB); steady "
        f"{s['dnsshim service']:.0f} µs per lookup, {n['service']['steady wall service - dns (ms)']:+.3f}"
        f" ms against dns (target at most +0.2 ms), CPU {c['dnsshim service']:.0f} µs "
        f"({n['service']['steady cpu service/dns']:.2f}x dns; target at most 2x)",
    ]


# ---------------------------------------------------------------------------
# The parse service

#: The message of the first call in a fresh process (the cold start's).
SERVICE_FIRST = "IMS NAPTR/SRV/AAAA"
#: Client processes of the scaling runs.
SERVICE_CLIENTS = 8
#: The scaling runs' loads: name -> (service_bench method, message).  The
#: second has the clients' own work small beside the service's: a 2 KB
#: DNSSEC answer parsed and checked with no callback set, its answer a
#: status alone.
SERVICE_LOADS = {"CNAME+4A, copying callbacks": ("shim", "CNAME+4A"),
                 "DNSSEC ~2KB, no callback set": ("validate", "DNSSEC ~2KB")}
#: The targets: the first call through the service at most 2 ms and 1 MiB;
#: a warm call at most 1.2 times the same call in the process or 30 µs more,
#: whichever is larger; parallelism 2 at least 1.8 times parallelism 1.
SERVICE_TARGETS = {"first_call_ms": 2.0, "rss_added_mib": 1.0, "warm_ratio": 1.2,
                   "warm_difference_us": 30.0, "p2/p1": 1.8}


class ServiceBench:
    """tests/bench/service_bench.c serve: a long-lived client timing calls on
    request, through the service or in the process (its environment says
    which), with each batch's answer (status, records) and whether every
    call of it got the same."""

    def __init__(self, program, files, env):
        self.proc = subprocess.Popen([str(program), "serve", *map(str, files)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)

    def time(self, method, index, iterations) -> dict:
        self.proc.stdin.write(f"{method} {index} {iterations}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        fields = line.split()
        if len(fields) != 6:
            raise RuntimeError(f"service_bench serve: {line!r} (exit {self.proc.poll()})")
        ns, cpu, status, records, same, runtime = map(int, fields)
        return {"s": ns / 1e9, "cpu": cpu / 1e9, "answer": (status, records),
                "same": bool(same), "runtime": runtime}

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _cpu_ticks(pid: int) -> int:
    """A process's CPU time, user and system, all its threads, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _checked(what: str, got: dict, want, runtime: int) -> dict:
    """got, when its answer is want, every call of it the same, and this
    process's interpreter running or not as runtime says (0: the service
    parsed, so nothing started here)."""
    if got["answer"] != tuple(want) or not got.get("same", True) or got["runtime"] != runtime:
        raise RuntimeError(f"{what}: answer {got['answer']} (every call the same: "
                           f"{got.get('same', True)}), interpreter running {got['runtime']}; "
                           f"expected {tuple(want)}, running {runtime}")
    return got


def service_image(front: Path, build: Path, smoke: bool, given=None):
    """The worker image dnsshimd --parallelism 2 needs beside its library,
    put in front: the one given, build's, the editable install's when its
    inputs are this tree's (worker.reuse), else (not in smoke mode) one
    built here.  None, or why there is none."""
    import shutil
    from dnsshim_build import firmware, worker

    out = front / worker.NAME
    for candidate in (given, build / worker.NAME):
        if candidate is not None and Path(candidate).is_file():
            shutil.copyfile(candidate, out)
            return None
    if worker.reuse(ROOT / "shim" / "lib", out):
        return None
    if smoke:
        return (f"no worker image at hand ({build / worker.NAME}, or an editable install's), and "
                "smoke mode builds none")
    why = worker.unavailable()
    if why:
        return f"the worker image cannot be built here: {why}"
    try:
        worker.build(out)
    except firmware.FirmwareError as e:
        return f"the worker image cannot be built here: {e}"
    return None


def service_part(build: Path, rounds: int, smoke: bool, image=None) -> dict:
    """The parse service (dnsshimd, csrc/service/dnsshimd.c) against parsing
    in the process, side by side in one run (tests/bench/service_bench.c,
    the same program either way, DNS_SHIM_SERVICE its socket with no
    fallback or ``none``): the first call in a fresh process (its wall
    time, the time from the spawn to its return, the resident memory it
    adds; medians of at least 15 fresh processes each, interleaved), the
    warm call on every message of the set (interleaved round by round, the
    order shuffled), and calls per second from SERVICE_CLIENTS client
    processes against a service at --parallelism 1 and at 2 (and, for
    scale, the same processes each parsing in its own interpreter).  Every
    answer is checked: each call's status and record count equal the
    in-process ones, and no interpreter started in a process the service
    answered.  {"not measured": why} without dnsshimd's library."""
    import shutil

    if not (build / "libdnsshim.so.1").exists():
        return {"not measured": f"no {build / 'libdnsshim.so.1'}"}
    tmp = Path(tempfile.mkdtemp(prefix="dnsshim-bench-service-"))
    services = []
    try:
        return _service_part(build, rounds, smoke, image, tmp, services)
    finally:
        for svc in services:
            svc.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def _service_part(build, rounds, smoke, image, tmp, services) -> dict:
    from service_env import Service

    msgs = messages()
    names = list(msgs)
    files = []
    for i, name in enumerate(names):
        files.append(tmp / f"{i}.bin")
        files[-1].write_bytes(msgs[name][0])
    program = pipeline.compile_program([HERE / "service_bench.c"], tmp / "service_bench",
                                       against=build, cflags=cprograms.STRICT)
    # dnsshimd with its library in front/, where --parallelism 2 finds the
    # worker image (beside the library); the same program at parallelism 1.
    front = tmp / "front"
    front.mkdir()
    copy_library(build, front)
    no_image = service_image(front, build, smoke, image)
    daemon = pipeline.compile_program([pipeline.CSRC / "service" / "dnsshimd.c"], tmp / "dnsshimd",
                                      against=build, rpath=str(front), cflags=cprograms.STRICT)
    local_env = {**os.environ, "DNS_SHIM_SERVICE": "none"}
    envs = {}
    for parallelism in (1, 2):
        if parallelism == 2 and no_image:
            continue
        services.append(Service(daemon, tmp / f"p{parallelism}",
                                ["--parallelism", str(parallelism)], env=local_env).start())
        envs[f"parallelism {parallelism}"] = services[-1].client_env(fallback=False)
    envs["service"] = envs["parallelism 1"]
    envs["in process"] = local_env

    # 3 first, to learn each message's answer in the process (and warm both).
    benches = {peer: ServiceBench(program, files, envs[peer]) for peer in ("service", "in process")}
    want, iterations = {}, {}
    samples = {name: {"service": [], "in process": []} for name in names}
    cpu = {name: {"service": [], "in process": []} for name in names}
    # the service's own CPU time over every warm batch of a message: ticks, calls
    service_cpu = {name: [0, 0] for name in names}
    service_pid = services[0].proc.pid
    try:
        for index, name in enumerate(names):
            benches["in process"].time("shim", index, 1)  # the runtime, the modules of the shape
            local = benches["in process"].time("shim", index, 3)
            want[name] = local["answer"]
            _checked(f"{name} in the process", local, want[name], 1)
            through = _checked(f"{name} through the service",
                               benches["service"].time("shim", index, 3), want[name], 0)
            slower = max(local["s"], through["s"]) / 3
            iterations[name] = 2 if smoke else max(3, int(0.02 / slower))
        for method, name in SERVICE_LOADS.values():
            if method != "shim":
                index = names.index(name)
                local = benches["in process"].time(method, index, 3)
                want[f"{method} {name}"] = local["answer"]
                _checked(f"{method} {name} in the process", local, local["answer"], 1)
                _checked(f"{method} {name} through the service",
                         benches["service"].time(method, index, 3), want[f"{method} {name}"], 0)
        for _ in range(rounds):
            for index, name in enumerate(names):
                order = ["service", "in process"]
                random.shuffle(order)
                for peer in order:
                    ticks = _cpu_ticks(service_pid)
                    got = _checked(f"{name} {peer}",
                                   benches[peer].time("shim", index, iterations[name]),
                                   want[name], 1 if peer == "in process" else 0)
                    if peer == "service":
                        service_cpu[name][0] += _cpu_ticks(service_pid) - ticks
                        service_cpu[name][1] += iterations[name]
                    samples[name][peer].append(got["s"] / iterations[name])
                    cpu[name][peer].append(got["cpu"] / iterations[name])
    finally:
        for bench in benches.values():
            bench.close()

    # 1 and 2: the first call in fresh processes, interleaved.
    first_file = files[names.index(SERVICE_FIRST)]
    fresh = {peer: {"call_ms": [], "since_exec_ms": [], "rss_added_mib": []}
             for peer in ("service", "in process")}
    n_fresh = 2 if smoke else max(15, rounds)
    for _ in range(n_fresh):
        order = list(fresh)
        random.shuffle(order)
        for peer in order:
            run = subprocess.run([str(program), "fresh", str(first_file)], env=envs[peer],
                                 capture_output=True, text=True, timeout=300)
            fields = run.stdout.split()
            out = dict(zip(fields[::2], fields[1::2]))
            if run.returncode != 0 or "status" not in out:
                raise RuntimeError(f"service_bench fresh ({peer}): exit {run.returncode}\n"
                                   f"{run.stdout}{run.stderr}")
            _checked(f"the first call {peer}", {"answer": (int(out["status"]),
                                                           int(out["records"])),
                                                "runtime": int(out["runtime"])},
                     want[SERVICE_FIRST], 1 if peer == "in process" else 0)
            fresh[peer]["call_ms"].append(float(out["call_us"]) / 1000)
            fresh[peer]["since_exec_ms"].append(float(out["since_exec_us"]) / 1000)
            fresh[peer]["rss_added_mib"].append(
                (int(out["rss_after_kib"]) - int(out["rss_before_kib"])) / 1024)

    # 4: many client processes against parallelism 1 and 2, interleaved.
    seconds = 0.3 if smoke else 1.0
    configs = [c for c in ("parallelism 1", "parallelism 2") if c in envs] + ["in process"]
    runs = {load: {config: [] for config in configs} for load in SERVICE_LOADS}
    # cores used during a run: the clients' (their CPU time over the run's
    # wall time) and the service's
    cores = {load: {config: {"clients": [], "service": []} for config in configs}
             for load in SERVICE_LOADS}
    pids = {f"parallelism {i + 1}": svc.proc.pid for i, svc in enumerate(services)}
    for _ in range(1 if smoke else max(3, rounds // 3)):
        order = [(load, config) for load in SERVICE_LOADS for config in configs]
        random.shuffle(order)
        for load, config in order:
            method, name = SERVICE_LOADS[load]
            key = name if method == "shim" else f"{method} {name}"
            status, records = want[key]
            ticks = _cpu_ticks(pids[config]) if config in pids else 0
            run = subprocess.run([str(program), "clients", str(SERVICE_CLIENTS), str(seconds),
                                  method, str(files[names.index(name)]), str(status),
                                  str(records)], env=envs[config], capture_output=True, text=True,
                                 timeout=300)
            fields = run.stdout.split()
            out = dict(zip(fields[::2], fields[1::2]))
            running = SERVICE_CLIENTS if config == "in process" else 0
            if (run.returncode != 0 or out.get("mismatches") != "0"
                    or out.get("runtime") != str(running) or int(out.get("calls", 0)) < 1):
                raise RuntimeError(f"service_bench clients ({load}, {config}): exit "
                                   f"{run.returncode}\n{run.stdout}{run.stderr}")
            runs[load][config].append(float(out["calls_per_second"]))
            wall = float(out["seconds"])
            cores[load][config]["clients"].append(float(out["clients_cpu_s"]) / wall)
            if config in pids:
                cores[load][config]["service"].append(
                    (_cpu_ticks(pids[config]) - ticks) / os.sysconf("SC_CLK_TCK") / wall)

    t = SERVICE_TARGETS
    first = {peer: {k: statistics.median(v) for k, v in values.items()}
             for peer, values in fresh.items()}
    first["service/in process"] = {k: first["service"][k] / first["in process"][k]
                                   for k in first["service"]}
    warm = {}
    for name in names:
        us = {peer: statistics.median(v) * 1e6 for peer, v in samples[name].items()}
        entry = {"bytes": len(msgs[name][0]), "status": want[name][0], "records": want[name][1],
                 "iterations": iterations[name], "us": us,
                 "cpu_us": {peer: statistics.median(v) * 1e6 for peer, v in cpu[name].items()},
                 "service/in process": us["service"] / us["in process"],
                 "difference_us": us["service"] - us["in process"]}
        # CPU time per call, which the machine's load moves less than the
        # wall time: the client's (median of the batches) and the service's
        # (its ticks over every batch), against the process that parses itself
        ticks, calls = service_cpu[name]
        entry["service_cpu_us"] = ticks / os.sysconf("SC_CLK_TCK") / calls * 1e6
        entry["cpu (service + client)/in process"] = (
            (entry["service_cpu_us"] + entry["cpu_us"]["service"]) / entry["cpu_us"]["in process"])
        entry["target_met"] = us["service"] <= max(t["warm_ratio"] * us["in process"],
                                                   us["in process"] + t["warm_difference_us"])
        warm[name] = entry
    scaling = {}
    for load, values in runs.items():
        calls = {config: statistics.median(v) for config, v in values.items()}
        entry = {"calls_per_second": calls,
                 "cores_used": {config: {who: statistics.median(v) for who, v in used.items() if v}
                                for config, used in cores[load].items()}}
        if "parallelism 2" in calls:
            entry["p2/p1"] = calls["parallelism 2"] / calls["parallelism 1"]
            entry["target_met"] = entry["p2/p1"] >= t["p2/p1"]
        scaling[load] = entry
    return {"first_call_message": SERVICE_FIRST, "first_call_answer": list(want[SERVICE_FIRST]),
            "fresh_processes": n_fresh, "first_call": first,
            "first_call_target_met": first["service"]["call_ms"] <= t["first_call_ms"],
            "rss_target_met": first["service"]["rss_added_mib"] <= t["rss_added_mib"],
            "rounds": rounds, "warm": warm, "clients": SERVICE_CLIENTS,
            "client_seconds": seconds, "scaling": scaling,
            "parallelism 2": "measured" if "parallelism 2" in envs else {"not measured": no_image},
            "targets": t, "load_average": list(os.getloadavg()), "cores": os.cpu_count()}


def service_lines(s: dict) -> list:
    """The parse service's lines of the table."""
    if "not measured" in s:
        return [f"parse service: not measured ({s['not measured']})"]
    t, f = s["targets"], s["first_call"]
    sv, lo, r = f["service"], f["in process"], f["service/in process"]

    def met(ok):
        return "met" if ok else "missed"
    lines = [
        f"parse service (dnsshimd, --parallelism 1) against parsing in the process "
        f"(DNS_SHIM_SERVICE=none); load average {s['load_average'][0]:.1f} on "
        f"{s['cores']} cores:",
        f"  first call in a fresh process ({s['first_call_message']}, median of "
        f"{s['fresh_processes']}): the call {sv['call_ms']:.2f} ms through the service, "
        f"{lo['call_ms']:.1f} ms in the process (service/in process {r['call_ms']:.3f}; target "
        f"at most {t['first_call_ms']:g} ms: {met(s['first_call_target_met'])}); from the spawn "
        f"to its return {sv['since_exec_ms']:.2f} ms against {lo['since_exec_ms']:.1f} ms "
        f"({r['since_exec_ms']:.3f})",
        f"  resident memory the first call adds: {sv['rss_added_mib']:.2f} MiB through the "
        f"service, {lo['rss_added_mib']:.1f} MiB in the process (target at most "
        f"{t['rss_added_mib']:g} MiB: {met(s['rss_target_met'])})",
        f"  {'warm call':<22}{'service µs':>12}{'in process µs':>15}{'service/in':>12}"
        f"{'difference µs':>15}  {'target':<8}{'CPU µs: client':>15}{'service':>9}"
        f"{'in process':>12}{'(s+c)/in':>10}",
    ]
    for name, e in s["warm"].items():
        c = e["cpu_us"]
        lines.append(f"  {name:<22}{e['us']['service']:>12.1f}{e['us']['in process']:>15.1f}"
                     f"{e['service/in process']:>12.2f}{e['difference_us']:>15.1f}  "
                     f"{met(e['target_met']):<8}{c['service']:>15.1f}{e['service_cpu_us']:>9.1f}"
                     f"{c['in process']:>12.1f}{e['cpu (service + client)/in process']:>10.2f}")
    for load, e in s["scaling"].items():
        c = e["calls_per_second"]
        text = f"  {s['clients']} client processes, {load}: "
        if "p2/p1" in e:
            text += (f"parallelism 1 {c['parallelism 1']:.0f} calls/s, parallelism 2 "
                     f"{c['parallelism 2']:.0f}, p2/p1 {e['p2/p1']:.2f} (target at least "
                     f"{t['p2/p1']:g}: {met(e['target_met'])})")
        else:
            text += (f"parallelism 1 {c['parallelism 1']:.0f} calls/s; parallelism 2 not "
                     f"measured ({s['parallelism 2']['not measured']})")
        lines.append(text + f"; each parsing in its own process {c['in process']:.0f}")
        lines.append("    cores used (of " + str(s["cores"]) + "): " + "; ".join(
            f"{config}: " + ", ".join(f"{who} {v:.2f}" for who, v in used.items())
            for config, used in e["cores_used"].items()))
    return lines


def dnsrec_program(build: Path):
    """tests/bench/ares_dnsrec_bench.c built against c-ares 1.34
    (tests/cares_source.py: built once from its pinned source, cached):
    (program, None), or (None, why) where that c-ares cannot be had."""
    import cares_source
    from dnsshim_build import pipeline

    try:
        cares = cares_source.library()
    except Exception as e:  # no index to download it from, no cmake...
        return None, f"c-ares 1.34 cannot be built here: {e}"
    return pipeline.compile_program([HERE / "ares_dnsrec_bench.c"], build / "ares_dnsrec_bench",
                                    against=cares.lib, libraries=("cares",),
                                    flags=(f"-I{cares.include}",)), None


def xz_size(folder: Path) -> int:
    """The folder as one tar (its symbolic links as links), compressed with
    xz -9: what shipping it costs."""
    import io
    import lzma
    import tarfile

    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        tar.add(folder, arcname=folder.name)
    return len(lzma.compress(data.getvalue(), preset=9))


def firmware_programs(tmp: Path, given):
    """The firmware folders (every type, the SIP/IMS set), given or built
    here, and dnsshim_bench linked with the full one the .pc file's way;
    (None, None, why) when they cannot be built on this machine."""
    from dnsshim_build import firmware

    dirs = []
    for where, types in zip(given, (None, ["A", "AAAA", "CNAME", "SRV", "NAPTR"])):
        if where is None:
            where = tmp / ("firmware" if types is None else "firmware-sip")
            try:
                firmware.firmware(where, types)
            except firmware.FirmwareError as e:
                return None, None, str(e)
        dirs.append(Path(where))
    obj = dirs[0] / "lib" / "libdnsshim_fw.o"
    program = pipeline.compile_program([HERE / "dnsshim_bench.c"], tmp / "dnsshim_bench-firmware",
                                        libraries=(), flags=[obj, *firmware.LIBS.split()])
    return dirs, program, None


def firmware_313(message: Path, smoke: bool, root=None) -> dict:
    """The firmware object from Debian 13's CPython 3.13, beside the 3.11
    one: built, and its first call timed, in a Debian 13 root
    (tests/firmware13.py), where alone it links (glibc 2.38's __isoc23_*);
    the same machine and kernel, no callgrind there.  {"not measured": why}
    in smoke mode or where no root can be made.  A root given has both
    objects built already (/root/fw, and /root/fw-sip with the SIP client's
    types) and the table of kinds in /root/kinds: tests/test_firmware_debian13.py's."""
    if root is not None:
        return _measure_313(message, root)
    if smoke:
        return {"not measured": "smoke mode (it builds a Debian 13 root)"}
    import firmware13

    why = firmware13.unavailable()
    if why:
        return {"not measured": f"no Debian 13 root here: {why[0]}"}
    try:
        return _firmware_313(message, firmware13)
    except (RuntimeError, AssertionError, subprocess.CalledProcessError) as e:
        return {"not measured": f"the Debian 13 root failed: {str(e).splitlines()[0]}"}


def _firmware_313(message: Path, firmware13) -> dict:
    with tempfile.TemporaryDirectory(prefix="dnsshim-bench-13-") as tmp:
        with firmware13.debian13_root(Path(tmp)) as root:
            firmware13.build_firmware(root, "/root/fw")
            firmware13.build_firmware(root, "/root/fw-sip", "--types", "A,AAAA,CNAME,SRV,NAPTR")
            root.run(f"mkdir /root/kinds && {firmware13.PYTHON} -c 'import sys; "
                     f"sys.path.insert(0, \"/root/dnsshim\"); from dnsshim_build import "
                     f"pipeline; pipeline.kinds_header(\"/root/kinds\")'")
            return _measure_313(message, root)


def _measure_313(message: Path, root) -> dict:
    """firmware_313's figures from a root whose objects are built."""
    result = {"first_call_ms": [], "rss_added_mib": []}
    root.path("/root/message.bin").write_bytes(message.read_bytes())
    root.run("gcc -O2 -g -I/root/fw/include -I/root/dnsshim/csrc/tools -I/root/kinds "
             "/root/dnsshim/tests/bench/dnsshim_bench.c -o /root/bench "
             "/root/fw/lib/libdnsshim_fw.o -lm -lpthread -ldl -lutil")
    for _ in range(7):
        out = root.run("env -i PATH=/usr/bin:/bin /root/bench cold "
                       "/root/message.bin").stdout.split()
        fields = dict(zip(out[::2], out[1::2]))
        result["first_call_ms"].append(float(fields["first_call_us"]) / 1000)
        result["rss_added_mib"].append(
            (int(fields["rss_after_kib"]) - int(fields["rss_before_kib"])) / 1024)
    result = {k: statistics.median(v) for k, v in result.items()}
    for key, where in (("full", "/root/fw"), ("sip", "/root/fw-sip")):
        manifest = json.loads(root.path(f"{where}/share/dnsshim/firmware.json").read_text())
        result[f"growth_{key}"] = {k: v / 2**20 for k, v in manifest["program growth"].items()}
        result["python"] = manifest["versions"]["CPython"]
    return result


def cold_start(program: Path, message: Path, into: dict):
    """One first call in a fresh process (an empty environment): its time
    and the resident memory it added, appended to into's lists."""
    out = subprocess.run([str(program), "cold", str(message)], capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"}
                         ).stdout.split()
    fields = dict(zip(out[::2], out[1::2]))
    into["first_call_ms"].append(float(fields["first_call_us"]) / 1000)
    into["rss_added_mib"].append((int(fields["rss_after_kib"]) - int(fields["rss_before_kib"]))
                                 / 1024)


def cold_instructions(program: Path, message: Path) -> dict:
    """The first call in a fresh process in instructions (callgrind), which
    the machine's load does not change: the whole call, and the part of it
    that starts the interpreter (Py_InitializeFromConfig); {} without
    valgrind."""
    import shutil

    if shutil.which("valgrind") is None:
        return {}
    out = {}
    with tempfile.TemporaryDirectory(prefix="dnsshim-cold-") as tmp:
        def collected(function: str) -> Path:
            dump = Path(tmp) / f"{function}.out"
            subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                            f"--toggle-collect={function}", f"--callgrind-out-file={dump}", "-q",
                            str(program), "cold", str(message)], check=True, capture_output=True,
                           env={"PATH": "/usr/bin:/bin", "DNS_SHIM_SERVICE": "none"})
            return dump

        dump = collected("process_dns_response")
        out["first_call_instructions"] = int(dump.read_text().split("\ntotals: ", 1)[1].split()[0])
        # The start's share: Py_InitializeFromConfig's inclusive cost in the
        # same run (it is called inside the first call), as callgrind_annotate
        # reads it; a run of its own where that cannot be read.
        found = None
        if shutil.which("callgrind_annotate") is not None:
            listing = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--auto=no",
                                      "--threshold=100", str(dump)], capture_output=True,
                                     text=True).stdout
            found = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*:Py_InitializeFromConfig \[",
                              listing, re.M)
        if found is not None:
            out["start_instructions"] = int(found.group(1).replace(",", ""))
        else:
            dump = collected("Py_InitializeFromConfig")
            out["start_instructions"] = int(dump.read_text().split("\ntotals: ", 1)[1].split()[0])
    return out


def build_bundle(tmp: Path):
    """A stripped bundle in tmp, and dnsshim_bench built against it through
    its pkg-config file."""
    from dnsshim_build.bundle import bundle

    where = tmp / "bundle"
    bundle(where, strip=True)
    env = {**os.environ, "PKG_CONFIG_PATH": str(where / "lib" / "pkgconfig")}
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "dnsshim"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    program = tmp / "dnsshim_bench-bundle"
    pipeline.compile_program([HERE / "dnsshim_bench.c"], program, flags=flags)
    return where, program


def instructions(build: Path, messages: dict, smoke: bool, libpython_dir: Path = None) -> dict:
    """name -> {shim, floor, shim/floor}: callgrind's instruction counts of
    one call of each (warm), with the library of build (a bundle's lib/, its
    libpython there too), or {} without valgrind or its callgrind.h."""
    import shutil
    import sysconfig

    if shutil.which("valgrind") is None or not Path("/usr/include/valgrind/callgrind.h").exists():
        return {}
    messages = {**messages, **held_out()}
    if smoke:
        messages = {name: messages[name] for name in ("A", "TXT x40 small")}
    libdir = libpython_dir or sysconfig.get_config_var("LIBDIR")
    with tempfile.TemporaryDirectory(prefix="dnsshim-callgrind-") as tmp_name:
        tmp = Path(tmp_name)
        program = tmp / "dnsshim_callgrind"
        # Linked against the installation's libpython (a bundle's lib/ has only
        # libpythonX.Y.so.1.0, no libpythonX.Y.so); run with libdir's.
        pipeline.compile_program([HERE / "dnsshim_callgrind.c"], program, against=build,
                                  flags=[f"-Wl,-rpath,{libdir}"], embed_python=True)
        files = []
        for i, wire in enumerate(messages.values()):
            files.append(tmp / f"{i}.bin")
            files[-1].write_bytes(wire)
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "-q",
                        f"--callgrind-out-file={tmp / 'cg.out'}", str(program), str(HERE), "floor",
                        "parse", "1" if smoke else "5", *map(str, files)],
                       check=True, capture_output=True, text=True)
        counts = {}
        for dump in tmp.glob("cg.out.*"):
            text = dump.read_text()
            label = text.split("desc: Trigger: Client Request: ", 1)[1].split("\n", 1)[0]
            counts[label] = int(text.split("\ntotals: ", 1)[1].split()[0])
    out = {}
    for i, name in enumerate(messages):
        shim, floor = counts[f"shim {i}"], counts[f"floor {i}"]
        out[name] = {"bytes": len(messages[name]), "shim": shim, "floor": floor,
                     "shim/floor": shim / floor}
    return out


def table(result) -> str:
    lines = []
    head = (f"{'message':<22}{'bytes':>7}{'shim µs':>10}{'from_wire':>11}{'dnslib':>9}"
            f"{'c-ares':>9}{'shim/from_wire':>16}{'shim/dnslib':>13}{'shim/c-ares':>13}"
            f"{'dnsshim_ares':>14}{'ares/c-ares':>13}")
    lines.append(head)
    lines.append("-" * len(head))
    for name, e in result["messages"].items():
        m = e["median_us"]

        def cell(key, width, fmt="{:.1f}", d=m):
            return (fmt.format(d[key]) if key in d else "n/a").rjust(width)
        lines.append(f"{name:<22}{e['bytes']:>7}{cell('shim', 10)}{cell('from_wire', 11)}"
                     f"{cell('dnslib', 9)}{cell('c-ares', 9, '{:.2f}')}"
                     f"{cell('shim/from_wire', 16, '{:.2f}', e)}{cell('shim/dnslib', 13, '{:.2f}', e)}"
                     f"{cell('shim/c-ares', 13, '{:.0f}', e)}"
                     f"{cell('dnsshim_ares', 14)}{cell('dnsshim_ares/c-ares', 13, '{:.0f}', e)}")
    if result.get("dnsrec") == "measured":
        lines.append("")
        lines.append(f"{'ares_dns_parse':<22}{'c-ares 1.34 µs':>16}{'dnsshim µs':>12}"
                     f"{'dnsshim/c-ares':>16}{'dnsshim/shim':>14}")
        for name, e in result["messages"].items():
            m = e["median_us"]
            lines.append(f"{name:<22}{m['c-ares 1.34 dnsrec']:>16.2f}{m['dnsshim dnsrec']:>12.1f}"
                         f"{e['dnsrec/c-ares dnsrec']:>16.0f}{e['dnsrec/shim']:>14.2f}")
    else:
        lines.append(f"ares_dns_parse: not measured ({result['dnsrec']['not measured']})")
    b = result["bare_us"]
    lines.append("")
    lines.append(f"bare call, rejected before parsing (length -1): {b['reject (length -1)']:.3f} µs")
    lines.append(f"header-only response:                          {b['header-only response']:.1f} µs")
    c = result["cold"]

    def instructions_text(c):
        if "first_call_instructions" not in c:
            return ""
        return (f" ({c['first_call_instructions'] / 1e6:.1f} M instructions, "
                f"{c['start_instructions'] / 1e6:.1f} M of them starting the interpreter)")
    lines.append(f"cold start: first call {c['first_call_ms']:.1f} ms{instructions_text(c)}, "
                 f"resident memory added by the runtime {c['rss_added_mib']:.1f} MiB")
    c = result["cold_bundle"]
    lines.append(f"cold start from the bundle ({c['bundle_mib']:.1f} MiB stripped, "
                 f"{c['bundle_xz_mib']:.1f} MiB as one xz -9 tar): first call "
                 f"{c['first_call_ms']:.1f} ms{instructions_text(c)}, resident memory added "
                 f"{c['rss_added_mib']:.1f} MiB")
    f = result["cold_firmware"]
    if "not measured" in f:
        lines.append(f"firmware object: not measured ({f['not measured']})")
    else:
        g, sip = f["growth_full"], f["growth_sip"]
        ratio = (f"; against the bundle: {f['first_call_instructions/bundle']:.2f} of its "
                 f"instructions, " if "first_call_instructions/bundle" in f else "; against the "
                 "bundle: ")
        lines.append(f"cold start from the firmware object: first call {f['first_call_ms']:.1f} ms"
                     f"{instructions_text(f)}, resident memory added {f['rss_added_mib']:.1f} MiB"
                     f"{ratio}{f['first_call_ms/bundle']:.2f} of its time, "
                     f"{f['rss_added_mib/bundle']:.2f} of its memory")
        lines.append(f"firmware object, what it adds to a program: every type {g['stripped']:.2f} "
                     f"MiB stripped, {g['xz -9']:.2f} MiB xz -9; SIP/IMS set "
                     f"{sip['stripped']:.2f} MiB stripped, {sip['xz -9']:.2f} MiB xz -9")
    f = result["cold_firmware_313"]
    if "not measured" in f:
        lines.append(f"firmware object from Debian 13's CPython 3.13: not measured "
                     f"({f['not measured']})")
    else:
        g, sip = f["growth_full"], f["growth_sip"]
        lines.append(f"firmware object from Debian 13's CPython {f['python']} (in a Debian 13 "
                     f"root): first call {f['first_call_ms']:.1f} ms, resident memory added "
                     f"{f['rss_added_mib']:.1f} MiB; what it adds to a program: every type "
                     f"{g['stripped']:.2f} MiB stripped, {g['xz -9']:.2f} MiB xz -9; SIP/IMS set "
                     f"{sip['stripped']:.2f} MiB stripped, {sip['xz -9']:.2f} MiB xz -9")
    s = result["threads_calls_per_second"]
    lines.append("threads (CNAME+4A): " + ", ".join(f"{k}: {v:.0f} calls/s" for k, v in s.items())
                 + f"; 2 threads / 1 thread = {s[2] / s[1]:.2f}")
    p = result["pool"]
    if "not measured" in p:
        lines.append(f"pool of private interpreters: not measured ({p['not measured']})")
    else:
        c = p["calls_per_second"]
        lines.append("pool of private interpreters (CNAME+4A), calls/s by threads x instances: "
                     + ", ".join(f"{k}: {v:.0f}" for k, v in c.items())
                     + f"; 2 threads on 2 / 1 thread = {p['2 threads 2 instances / 1 thread']:.2f}"
                     f" (on 1: {p['2 threads 1 instance / 1 thread']:.2f}); each instance after "
                     f"the first adds {p['rss_mib_per_extra_instance']:.1f} MiB resident and "
                     f"starts in {p['instance_start_ms']:.0f} ms")
        lines.append("through the library (dns_shim_set_parallelism): 2 threads with parallelism "
                     f"2 / 1 thread = "
                     f"{p['library 2 threads parallelism 2 / 1 thread parallelism 1']:.2f} "
                     f"(parallelism 1, one interpreter: "
                     f"{p['library 2 threads parallelism 1 / 1 thread parallelism 1']:.2f})")
        if "ares 2 threads parallelism 2 / 1 thread parallelism 1" in p:
            lines.append("libdnsshim_ares (ares_parse_a_reply) in the same pool: 2 threads with "
                         "parallelism 2 / 1 thread = "
                         f"{p['ares 2 threads parallelism 2 / 1 thread parallelism 1']:.2f} "
                         "(parallelism 1, one interpreter: "
                         f"{p['ares 2 threads parallelism 1 / 1 thread parallelism 1']:.2f})")
        per_copy = p["firmware program growth per copy MiB"]
        lines.append("the firmware object of --parallelism 2: 2 threads with parallelism 2 / 1 "
                     f"thread = {p['firmware 2 threads parallelism 2 / 1 thread parallelism 1']:.2f}"
                     f"; each copy adds {per_copy['stripped']:.2f} MiB stripped, "
                     f"{per_copy['xz -9']:.2f} MiB with xz -9, to a program")
    lines.extend(nss_lines(result["nss"]))
    lines.extend(service_lines(result["service"]))
    if result["instructions"]:
        bundled = result.get("instructions_bundle") or {}
        lines.append("")
        lines.append(f"{'instructions (callgrind)':<26}{'bytes':>7}{'shim':>12}{'floor':>12}"
                     f"{'shim/floor':>12}{'bundle shim/floor':>19}")
        for name, e in result["instructions"].items():
            other = f"{bundled[name]['shim/floor']:.2f}" if name in bundled else "n/a"
            lines.append(f"{name:<26}{e['bytes']:>7}{e['shim']:>12}{e['floor']:>12}"
                         f"{e['shim/floor']:>12.2f}{other:>19}")
    else:
        lines.append("instructions: not measured (needs valgrind and valgrind/callgrind.h)")
    lines.append(f"(medians of {result['rounds']} interleaved rounds; CPython {result['python']}, "
                 f"dnspython {result['dnspython']}, dnslib {result['dnslib']})")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--smoke", action="store_true", help="a few iterations: keeps it working")
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("--firmware", type=Path, help="a firmware folder with every type "
                        "(python -m shim firmware DIR); default: built here")
    parser.add_argument("--firmware-sip", type=Path, help="one of the SIP/IMS set (--types "
                        "A,AAAA,CNAME,SRV,NAPTR); default: built here")
    parser.add_argument("--worker-image", type=Path, help="the worker image for the pool "
                        "and for the parse service at --parallelism 2 (default: built here for "
                        "the pool; for the service alone, build's, an editable install's or "
                        "one built here, not in smoke mode)")
    parser.add_argument("--firmware-parallel", type=Path, help="a firmware folder built with "
                        "--parallelism 2 (python -m shim firmware DIR --parallelism 2); "
                        "default: built here")
    parser.add_argument("--only", choices=["nss", "service"], help="run one part alone: nss, "
                        "the NSS module against glibc's dns module (needs root); service, the "
                        "parse service (dnsshimd) against parsing in the process")
    args = parser.parse_args(argv)
    rounds = 2 if args.smoke else args.rounds
    # Every in-process column parses in the process, even on a machine where
    # a parse service runs: the service part sets its clients' own.
    os.environ["DNS_SHIM_SERVICE"] = "none"
    if args.only == "service":
        ensure_built(args.build, ["dnsshimd"])
        result = {"service": service_part(args.build, rounds, args.smoke, args.worker_image),
                  "rounds": rounds, "python": sys.version.split()[0],
                  "dnspython": dns.version.version}
        print("\n".join(service_lines(result["service"])))
    elif args.only == "nss":
        ensure_built(args.build, ["nss_bench"])
        result = {"nss": nss_module(args.build, rounds, args.smoke), "rounds": rounds,
                  "python": sys.version.split()[0], "dnspython": dns.version.version}
        print("\n".join(nss_lines(result["nss"])))
    else:
        ensure_built(args.build)
        result = run(args.build, rounds, args.smoke, (args.firmware, args.firmware_sip),
                     args.worker_image, args.firmware_parallel)
        print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
