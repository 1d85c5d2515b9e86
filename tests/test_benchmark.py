"""The benchmark in smoke mode: a few iterations of everything, only to keep
it working (numbers are the benchmark's business, never a test's)."""

import json
import os
import subprocess
import sys

from conftest import ROOT


def test_benchmark_smoke(built, tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "benchmark.py"), "--smoke",
                             "--build", str(built.dir), "--json", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert set(data["messages"]) == {"A", "CNAME+4A", "IMS NAPTR/SRV/AAAA", "DNSSEC ~2KB",
                                     "NXDOMAIN+SOA", "64 KiB, 4094 A"}
    for name, entry in data["messages"].items():
        assert entry["median_us"]["shim"] > 0 and entry["median_us"]["from_wire"] > 0
        assert entry["shim/from_wire"] > 0
        if "c-ares" in entry["median_us"]:
            assert entry["median_us"]["dnsshim_ares"] > 0 and entry["dnsshim_ares/c-ares"] > 0
    assert set(data["threads_calls_per_second"]) == {"1", "2", "4"}
    assert data["cold"]["first_call_ms"] > 0
    assert data["cold_bundle"]["first_call_ms"] > 0 and data["cold_bundle"]["bundle_mib"] > 1
    assert "shim/from_wire" in result.stdout and "cold start from the bundle" in result.stdout
    # The instruction counts (valgrind is required in CI), one message and
    # one held-out shape in smoke mode.
    if data["instructions"] or os.environ.get("CI"):
        assert set(data["instructions"]) == set(data["instructions_bundle"]) == {"A",
                                                                                 "TXT x40 small"}
        for entry in [*data["instructions"].values(), *data["instructions_bundle"].values()]:
            assert entry["shim"] > 10000 and entry["floor"] > 10000
            assert entry["shim/floor"] == entry["shim"] / entry["floor"]
        assert "shim/floor" in result.stdout
        for cold in (data["cold"], data["cold_bundle"]):
            assert cold["first_call_instructions"] > cold["start_instructions"] > 1e6
