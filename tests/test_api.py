"""The Python API (shim.parse_response) and python -m shim dump.

parse_response gives, field for field, what the C callbacks get (compared
with reference.expected_log, dnspython's own parse); python -m shim dump
prints what the C dnsshim-dump prints, byte for byte.
"""

import subprocess
import sys

import pytest

import malformed
import reference
import vectors
from conftest import ROOT, available_corpus
import shim
from shim import api
from shim.status import Status


def log_lines(response):
    """parse_response's result in dnsshim_test's line format."""
    h = response.header
    lines = [f"header id={h.id} flags={h.flags} opcode={h.opcode} rcode={h.rcode} "
             f"qd={h.qdcount} an={h.ancount} ns={h.nscount} ar={h.arcount} "
             f"qname={h.qname if h.qname is not None else '<NULL>'} qtype={h.qtype} "
             f"qclass={h.qclass} edns={h.edns_version} payload={h.edns_payload} "
             f"do={int(h.edns_do)} eflags={h.edns_flags}"]
    for o in response.options:
        lines.append(f"edns_option code={o.code} data={o.data.hex()} ede={o.ede_info_code} "
                     f"ede_text={o.ede_text.hex()} cookie_client={o.cookie_client.hex()} "
                     f"cookie_server={o.cookie_server.hex()} ecs_family={o.ecs_family} "
                     f"ecs_source={o.ecs_source_prefix} ecs_scope={o.ecs_scope_prefix} "
                     f"ecs_address={o.ecs_address.hex()}")
    kinds = {5: "cname", 2: "ns", 12: "ptr", 39: "dname"}
    for r in response.records:
        base = (f"sec={int(r.section)} idx={r.index} owner={r.owner} type={r.type} "
                f"class={r.rclass} ttl={r.ttl}")
        if isinstance(r, api.A):
            lines.append(f"a {base} address={'.'.join(map(str, r.address))}")
        elif isinstance(r, api.AAAA):
            lines.append(f"aaaa {base} address={r.address.hex()}")
        elif isinstance(r, api.Target):
            lines.append(f"{kinds[r.type]} {base} target={r.target}")
        elif isinstance(r, api.MX):
            lines.append(f"mx {base} preference={r.preference} exchange={r.exchange}")
        elif isinstance(r, api.TXT):
            lines.append(f"txt {base} count={len(r.strings)}"
                         + "".join(f" string={s.hex()}" for s in r.strings))
        elif isinstance(r, api.SRV):
            lines.append(f"srv {base} priority={r.priority} weight={r.weight} port={r.port} "
                         f"target={r.target}")
        elif isinstance(r, api.NAPTR):
            lines.append(f"naptr {base} order={r.order} preference={r.preference} "
                         f"flags={r.flags.hex()} services={r.services.hex()} "
                         f"regexp={r.regexp.hex()} replacement={r.replacement}")
        elif isinstance(r, api.SOA):
            lines.append(f"soa {base} mname={r.mname} rname={r.rname} serial={r.serial} "
                         f"refresh={r.refresh} retry={r.retry} expire={r.expire} "
                         f"minimum={r.minimum}")
        else:
            lines.append(f"other {base} rdata={r.rdata.hex()}")
    return lines + ["status 0 success"]


@pytest.mark.parametrize("name", vectors.NAMES)
def test_vectors_field_by_field(name):
    wire = vectors.wire(name)
    assert log_lines(shim.parse_response(wire)) == reference.expected_log(wire)


def test_corpus_field_by_field():
    checked = 0
    for path in available_corpus("good", "captures"):
        wire = path.read_bytes()
        if not wire[2] & 0x80:
            continue
        try:
            expected = reference.expected_log(wire)
        except Exception:  # noqa: BLE001 - dnspython rejects it: so must we
            with pytest.raises(shim.DnsShimError):
                shim.parse_response(wire)
            continue
        assert log_lines(shim.parse_response(wire)) == expected, path
        checked += 1
    if not checked:
        pytest.skip("no corpus here")


@pytest.mark.parametrize("case", sorted(malformed.CASES))
def test_malformed_raise_their_status(case):
    wire, status = malformed.CASES[case]
    with pytest.raises(shim.DnsShimError) as info:
        shim.parse_response(wire)
    assert info.value.status == status
    assert type(info.value).status == status  # the exception class carries the code


def test_lengths_and_types():
    with pytest.raises(shim.DnsShimError) as info:
        shim.parse_response(malformed.GOOD + bytes(65536))
    assert info.value.status == Status.ERR_BAD_LENGTH
    with pytest.raises(TypeError):
        shim.parse_response("not bytes")
    assert shim.parse_response(bytearray(malformed.GOOD)).records[0].address == bytes([192, 0, 2, 1])
    assert shim.parse_response(memoryview(malformed.GOOD)).header.id == 0x1234


def test_sections_and_typed_set():
    response = shim.parse_response(vectors.wire("ims"))
    assert [type(r).__name__ for r in response.answer] == ["NAPTR", "NAPTR"]
    assert [type(r).__name__ for r in response.additional] == ["SRV", "SRV", "SRV", "AAAA",
                                                                "AAAA", "AAAA", "A"]
    assert response.authority == []
    # The same types are typed in C and in Python.
    from shim import glue
    records = shim.parse_response(vectors.wire("every_type")).records
    assert {r.type for r in records if not isinstance(r, api.Raw)} == set(glue.TYPED)
    assert {r.type for r in records if isinstance(r, api.Raw)} == {257, 256}  # CAA, URI


def test_import_shim_is_light():
    out = subprocess.run([sys.executable, "-c", "import sys, shim; print('dns' in sys.modules)"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "False"


# ---- python -m shim dump == dnsshim-dump -------------------------------------


def _dump_files(tmp_path):
    files = []
    for name in vectors.NAMES:
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    for name in ("pointer_loop_of_two", "a_rdlength_5", "qr_clear", "empty"):
        files.append(tmp_path / f"bad_{name}.bin")
        files[-1].write_bytes(malformed.CASES[name][0])
    return files + available_corpus("good", "captures", "bad")


@pytest.mark.parametrize("options", [[], ["--json"], ["--sections", "authority,additional"],
                                     ["--json", "--sections", "answer"]])
def test_python_dump_equals_c_dump(built, tmp_path, options):
    files = [str(f) for f in _dump_files(tmp_path)]
    c = subprocess.run([str(built.dump_prog), *options, *files], capture_output=True)
    py = subprocess.run([sys.executable, "-m", "shim", "dump", *options, *files],
                        capture_output=True, cwd=ROOT)
    assert c.returncode == py.returncode == 1  # some are malformed
    assert c.stdout == py.stdout
    assert c.stderr == py.stderr
    assert b"ims.mnc001.mcc001.3gppnetwork.org" in c.stdout


def test_dump_json_is_valid_and_escaped(built, tmp_path):
    import json
    f = tmp_path / "odd.bin"
    f.write_bytes(vectors.wire("odd_names"))
    out = subprocess.run([str(built.dump_prog), "--json", str(f)], capture_output=True,
                         text=True, check=True).stdout
    obj = json.loads(out)
    assert obj["status"] == 0 and obj["error"] is None
    txt = next(r for r in obj["records"] if r["kind"] == "txt")
    assert txt["strings"] == ["a", "b\x00c", ""]
    cname = next(r for r in obj["records"] if r["kind"] == "cname")
    assert cname["owner"] == 'x\\"y\\\\z.example' and cname["target"] == "UPPER.Case"


def test_dump_hex_and_stdin(built):
    hex_text = "# the GOOD message\n" + " ".join(f"{b:02x}" for b in malformed.GOOD) + "\n"
    c = subprocess.run([str(built.dump_prog), "-x", "-"], input=hex_text.encode(),
                       capture_output=True, check=True)
    py = subprocess.run([sys.executable, "-m", "shim", "dump", "-x", "-"], input=hex_text.encode(),
                        capture_output=True, check=True, cwd=ROOT)
    assert c.stdout == py.stdout
    assert b"example.com.\t300\tIN\tA\t192.0.2.1" in c.stdout


def test_dump_usage_errors(built):
    assert subprocess.run([str(built.dump_prog)], capture_output=True).returncode == 2
    assert subprocess.run([str(built.dump_prog), "--sections", "bogus", "x"],
                          capture_output=True).returncode == 2
