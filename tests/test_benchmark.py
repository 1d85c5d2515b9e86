"""The benchmark in smoke mode: a few iterations of everything, only to keep
it working (numbers are the benchmark's business, never a test's)."""

import json
import os
import struct
import subprocess
import sys

import pytest

import cprograms
from conftest import ROOT, require_cares
from test_firmware import firmware, sip  # noqa: F401 (fixtures)
from test_parallelism import parallel_firmware  # noqa: F401 (fixture)
from test_worker import image  # noqa: F401 (fixture)


@pytest.fixture(scope="module")
def smoke(built, tmp_path_factory, request):
    """The benchmark's JSON and its printed table, from one smoke run (with
    the firmware folders test_firmware.py and test_parallelism.py build and
    test_worker.py's worker image, where they can be built: the session's
    own, not built again)."""
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    firmware = []
    try:
        firmware = ["--firmware", str(request.getfixturevalue("firmware")),
                    "--firmware-sip", str(request.getfixturevalue("sip")),
                    "--firmware-parallel", str(request.getfixturevalue("parallel_firmware")),
                    "--worker-image", str(request.getfixturevalue("image"))]
    except pytest.skip.Exception:
        if os.environ.get("CI"):
            raise
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "benchmark.py"), "--smoke",
                             "--build", str(built.dir), "--json", str(out), *firmware],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text()), result.stdout


def test_benchmark_smoke(smoke):
    data, stdout = smoke
    assert set(data["messages"]) == {"A", "CNAME+4A", "IMS NAPTR/SRV/AAAA", "DNSSEC ~2KB",
                                     "NXDOMAIN+SOA", "64 KiB, 4094 A"}
    for name, entry in data["messages"].items():
        assert entry["median_us"]["shim"] > 0 and entry["median_us"]["from_wire"] > 0
        assert entry["shim/from_wire"] > 0
        if "c-ares" in entry["median_us"]:
            assert entry["median_us"]["dnsshim_ares"] > 0 and entry["dnsshim_ares/c-ares"] > 0
    assert set(data["threads_calls_per_second"]) == {"1", "2", "4"}
    assert data["cold"]["first_call_ms"] > 0
    # The pool of worker instances, where the firmware object can be built.
    pool = data["pool"]
    if "not measured" not in pool or os.environ.get("CI"):
        calls = pool["calls_per_second"]
        # libdnsshim_ares in the same pool, where c-ares's headers are
        ares = ({"ares 1x1", "ares 2x1", "ares 2x2"} if cprograms.cares_flags() is not None
                else set())
        assert set(calls) == {f"{how}{t}x{i}" for how in ("", "library ") for t in (1, 2, 4)
                              for i in (1, 2, 4)} | {"firmware 1x1", "firmware 2x1",
                                                     "firmware 2x2"} | ares
        assert ("libdnsshim_ares (ares_parse_a_reply) in the same pool: 2 threads with "
                "parallelism 2 / 1 thread = " in stdout) == bool(ares)
        per_copy = pool["firmware program growth per copy MiB"]
        assert per_copy["stripped"] > 1 and per_copy["xz -9"] > 0
        assert min(calls.values()) > 0 and set(pool["rss_mib"]) == {"1", "2", "4"}
        assert pool["rss_mib_per_extra_instance"] > 1 and pool["instance_start_ms"] > 0
        assert "pool of private interpreters (CNAME+4A)" in stdout
        assert "through the library (dns_shim_set_parallelism): 2 threads with parallelism 2" \
            in stdout
        assert "the firmware object of --parallelism 2: 2 threads with parallelism 2" in stdout
    assert data["cold_bundle"]["first_call_ms"] > 0 and data["cold_bundle"]["bundle_mib"] > 1
    # The parse service, at parallelism 2 too where the pool's image was built.
    _check_service(data["service"], stdout)
    if "not measured" not in pool:
        assert data["service"]["parallelism 2"] == "measured"
    assert "shim/from_wire" in stdout and "cold start from the bundle" in stdout
    # The instruction counts (valgrind is required in CI), one message and
    # one held-out shape in smoke mode.
    if data["instructions"] or os.environ.get("CI"):
        assert set(data["instructions"]) == set(data["instructions_bundle"]) == {"A",
                                                                                 "TXT x40 small"}
        for entry in [*data["instructions"].values(), *data["instructions_bundle"].values()]:
            assert entry["shim"] > 10000 and entry["floor"] > 10000
            assert entry["shim/floor"] == entry["shim"] / entry["floor"]
        assert "shim/floor" in stdout
        for cold in (data["cold"], data["cold_bundle"]):
            assert cold["first_call_instructions"] > cold["start_instructions"] > 1e6


def test_benchmark_firmware_column(smoke):
    data, stdout = smoke
    f = data["cold_firmware"]
    if "not measured" in f:
        assert not os.environ.get("CI"), f
        pytest.skip(f"firmware not built: {f['not measured']}")
    assert f["first_call_ms"] > 0 and f["first_call_ms/bundle"] > 0
    assert f["growth_full"]["stripped"] > f["growth_sip"]["stripped"] > 1
    assert f["growth_full"]["xz -9"] > f["growth_sip"]["xz -9"] > 0.5
    if "first_call_instructions" in data["cold_bundle"]:
        assert f["first_call_instructions"] > f["start_instructions"] > 1e6
        assert f["first_call_instructions/bundle"] == \
            f["first_call_instructions"] / data["cold_bundle"]["first_call_instructions"]
    assert "cold start from the firmware object" in stdout


def test_benchmark_compares_with_cares(smoke):
    """With c-ares's headers the benchmark has its column, where c-ares has a parser."""
    require_cares()
    data, _ = smoke
    with_cares = {name for name, entry in data["messages"].items()
                  if entry["median_us"].get("c-ares", 0) > 0 and entry["shim/c-ares"] > 0}
    assert with_cares == {"A", "CNAME+4A", "IMS NAPTR/SRV/AAAA", "64 KiB, 4094 A"}


def test_benchmark_compares_ares_dns_parse(smoke):
    """ares_dns_parse, c-ares 1.34's and libdnsshim_ares's preloaded, on every
    message, with the ratio to c-ares's and to process_dns_response."""
    data, stdout = smoke
    if data["dnsrec"] != "measured":
        assert not os.environ.get("CI"), data["dnsrec"]
        pytest.skip(f"ares_dns_parse: {data['dnsrec']['not measured']}")
    for name, entry in data["messages"].items():
        m = entry["median_us"]
        assert m["c-ares 1.34 dnsrec"] > 0 and m["dnsshim dnsrec"] > 0, name
        assert entry["dnsrec/c-ares dnsrec"] == m["dnsshim dnsrec"] / m["c-ares 1.34 dnsrec"]
        assert entry["dnsrec/shim"] == m["dnsshim dnsrec"] / m["shim"]
    assert "ares_dns_parse" in stdout and "dnsshim/c-ares" in stdout


NSS_CONFIGS = {"dns", "dnsshim", "dnsshim service", "dns single-request"}


def _check_nss(n: dict, stdout: str):
    """The NSS part's numbers, where the harness runs (tests/nss_env.py:
    root, namespaces): every configuration's, dnsshim's ratios, the table's
    lines."""
    if "not measured" in n:
        assert not os.environ.get("CI"), n
        pytest.skip(f"NSS module: {n['not measured']}")
    for key in ("first_lookup_ms", "rss_added_mib", "steady_us_per_lookup",
                "steady_cpu_us_per_lookup", "queries_per_lookup"):
        assert set(n[key]) == NSS_CONFIGS, key
    for key in ("first_lookup_ms", "steady_us_per_lookup", "steady_cpu_us_per_lookup"):
        assert min(n[key].values()) > 0, key
    # the module's runtime is in the process after its first lookup
    assert n["rss_added_mib"]["dnsshim"] > 1
    # an A and an AAAA query per getaddrinfo, whichever module asks
    assert n["queries_per_lookup"] == {name: 2 for name in NSS_CONFIGS}
    first, steady, cpu = (n["first_lookup_ms"], n["steady_us_per_lookup"],
                          n["steady_cpu_us_per_lookup"])
    assert n["first_lookup dnsshim/dns"] == first["dnsshim"] / first["dns"]
    assert n["steady dnsshim/dns"] == steady["dnsshim"] / steady["dns"]
    assert n["steady dnsshim/dns single-request"] == (steady["dnsshim"]
                                                      / steady["dns single-request"])
    assert n["steady cpu dnsshim/dns"] == cpu["dnsshim"] / cpu["dns"]
    # through the service: no runtime in the process, the ratios the targets name
    rss = n["rss_added_mib"]
    assert rss["dnsshim service"] < rss["dnsshim"] / 4, rss
    assert n["service"] == {
        "first_lookup service/dns": first["dnsshim service"] / first["dns"],
        "rss_added_mib": rss["dnsshim service"],
        "steady cpu service/dns": cpu["dnsshim service"] / cpu["dns"],
        "steady wall service - dns (ms)": (steady["dnsshim service"] - steady["dns"]) / 1000}
    assert "  through dnsshimd: first lookup " in stdout
    assert "NSS module (getaddrinfo AF_UNSPEC of www.example.test" in stdout
    assert "first lookup in a fresh process" in stdout and "dnsshim/dns" in stdout


def test_benchmark_measures_the_nss_module(smoke):
    """The NSS module against glibc's dns module (and with single-request),
    in the process and through dnsshimd: the first lookup, the memory it
    adds, the steady lookup."""
    data, stdout = smoke
    _check_nss(data["nss"], stdout)


def test_benchmark_runs_the_nss_part_alone(built, tmp_path):
    """--only nss: that part alone, its lines and its JSON."""
    out = tmp_path / "nss.json"
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "benchmark.py"),
                             "--smoke", "--only", "nss", "--build", str(built.dir), "--json",
                             str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert set(data) == {"nss", "rounds", "python", "dnspython"}
    assert "shim/from_wire" not in result.stdout
    _check_nss(data["nss"], result.stdout)


def _records(wire: bytes) -> int:
    """The records of a message's three sections, its OPT record aside:
    what the copying callbacks of tests/bench/copying_callbacks.h are given."""
    import dns.message

    an, ns, ar = struct.unpack(">HHH", wire[6:12])
    return an + ns + ar - (dns.message.from_wire(wire).opt is not None)


def _check_service(s: dict, stdout: str):
    """The parse service part's numbers: every message's answer (the
    benchmark itself fails on a call whose status or record count differs
    from the in-process one, or that started an interpreter in a client the
    service answered), each the message's real count; the ratios as the
    numbers give them; the table's lines."""
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    import benchmark

    msgs = benchmark.messages()
    assert set(s["warm"]) == set(msgs)
    for name, e in s["warm"].items():
        assert (e["status"], e["records"]) == (0, _records(msgs[name][0])), name
        us = e["us"]
        assert min(us.values()) > 0 and min(e["cpu_us"].values()) > 0, name
        assert e["service/in process"] == us["service"] / us["in process"]
        assert e["difference_us"] == us["service"] - us["in process"]
        assert e["service_cpu_us"] >= 0 and e["cpu (service + client)/in process"] == (
            (e["service_cpu_us"] + e["cpu_us"]["service"]) / e["cpu_us"]["in process"])
        assert e["target_met"] == (us["service"] <= max(1.2 * us["in process"],
                                                        us["in process"] + 30))
    first, fresh = s["first_call"], s["first_call_message"]
    assert s["first_call_answer"] == [0, _records(msgs[fresh][0])] and s["fresh_processes"] >= 2
    for peer in ("service", "in process"):
        assert first[peer]["call_ms"] > 0
        assert first[peer]["since_exec_ms"] > first[peer]["call_ms"]
    # the process that parses itself starts its interpreter in that call
    assert first["in process"]["rss_added_mib"] > 1
    assert first["service/in process"]["call_ms"] == (first["service"]["call_ms"]
                                                      / first["in process"]["call_ms"])
    assert set(s["scaling"]) == set(benchmark.SERVICE_LOADS)
    configs = {"parallelism 1", "in process"}
    if s["parallelism 2"] == "measured":
        configs.add("parallelism 2")
    else:
        assert s["parallelism 2"]["not measured"]
    for load, e in s["scaling"].items():
        calls = e["calls_per_second"]
        assert set(calls) == configs and min(calls.values()) > 0, load
        used = e["cores_used"]
        assert set(used) == configs and all(set(used[c]) == {"clients", "service"}
                                            for c in configs - {"in process"})
        assert used["in process"]["clients"] > 0 and "service" not in used["in process"]
        if "parallelism 2" in configs:
            assert e["p2/p1"] == calls["parallelism 2"] / calls["parallelism 1"]
    assert "parse service (dnsshimd, --parallelism 1) against parsing in the process" in stdout
    assert "first call in a fresh process" in stdout and "8 client processes" in stdout


def test_benchmark_runs_the_service_part_alone(built, tmp_path):
    """--only service: the parse service against parsing in the process, its
    lines and its JSON, in seconds (parallelism 2 only where a worker image
    is at hand: smoke mode builds none)."""
    out = tmp_path / "service.json"
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "bench" / "benchmark.py"),
                             "--smoke", "--only", "service", "--build", str(built.dir), "--json",
                             str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert set(data) == {"service", "rounds", "python", "dnspython"}
    assert "shim/from_wire" not in result.stdout and "NSS module" not in result.stdout
    _check_service(data["service"], result.stdout)


def test_benchmark_says_why_the_3_13_object_is_not_measured(smoke):
    """The 3.13 object is measured in a Debian 13 root, never in smoke mode:
    the table says so."""
    data, stdout = smoke
    assert data["cold_firmware_313"] == {"not measured": "smoke mode (it builds a Debian 13 "
                                         "root)"}
    assert ("firmware object from Debian 13's CPython 3.13: not measured (smoke mode (it "
            "builds a Debian 13 root))") in stdout
