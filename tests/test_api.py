"""The Python API (shim.parse_response) and python -m shim dump.

parse_response gives, field for field, what the C callbacks get (compared
with reference.expected_log, dnspython's own parse); python -m shim dump
prints what the C dnsshim-dump prints, byte for byte.
"""

import dataclasses
import inspect
import ipaddress
import json
import shutil
import subprocess
import sys
import typing

import dns.message
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
            lines.append(f"a {base} address={'.'.join(map(str, r.address.packed))}")
        elif isinstance(r, api.AAAA):
            lines.append(f"aaaa {base} address={r.address.packed.hex()}")
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
    assert shim.parse_response(bytearray(malformed.GOOD)).records[0].address.packed == bytes(
        [192, 0, 2, 1])
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


def test_addresses_are_ipaddress_objects():
    response = shim.parse_response(vectors.wire("every_type"))
    a = next(r for r in response.answer if isinstance(r, api.A))
    aaaa = next(r for r in response.answer if isinstance(r, api.AAAA))
    assert type(a.address) is ipaddress.IPv4Address and str(a.address) == "192.0.2.1"
    assert a.address.packed == bytes([192, 0, 2, 1])
    assert type(aaaa.address) is ipaddress.IPv6Address and str(aaaa.address) == "2001:db8::1"
    assert aaaa.address.packed == bytes.fromhex("20010db8000000000000000000000001")
    assert "address=IPv4Address('192.0.2.1')" in repr(a)
    assert "address=IPv6Address('2001:db8::1')" in repr(aaaa)
    forms = shim.parse_response(AAAA_FORMS_WIRE)
    assert [str(r.address) for r in forms.answer][:3] == ["2001:db8:15::1", "::1", "::"]


def _documented(obj) -> bool:
    doc = inspect.getdoc(obj) or ""
    # a dataclass without a docstring gets its signature as __doc__
    return bool(doc) and not doc.startswith(getattr(obj, "__name__", "?") + "(")


def _fully_annotated(function) -> bool:
    hints = typing.get_type_hints(function)
    params = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
    return "return" in hints and all(p in hints for p in params)


@pytest.mark.parametrize("name", api.__all__)
def test_every_public_name_has_a_docstring_and_type_hints(name):
    obj = getattr(api, name)
    assert _documented(obj), name
    if inspect.isfunction(obj):
        assert _fully_annotated(obj), name
    elif dataclasses.is_dataclass(obj):
        hints = typing.get_type_hints(obj)
        assert all(f.name in hints for f in dataclasses.fields(obj)), name
        for attr, member in vars(obj).items():
            if attr.startswith("_"):
                continue
            function = member.fget if isinstance(member, property) else member
            if inspect.isfunction(function):
                assert _documented(function) and _fully_annotated(function), f"{name}.{attr}"
    assert getattr(shim, name) is obj  # and it is the name shim gives


def test_import_shim_is_light():
    out = subprocess.run([sys.executable, "-c", "import sys, shim; print('dns' in sys.modules)"],
                         capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "False"


# ---- python -m shim dump == dnsshim-dump -------------------------------------


# AAAA addresses and the text both dump tools give them: RFC 5952, as
# inet_ntop and dig write it (v4-mapped and v4-compatible with a dotted tail).
AAAA_FORMS = [
    ("2001:db8:15:0:0:0:0:1", "2001:db8:15::1"),
    ("0:0:0:0:0:0:0:1", "::1"),
    ("0:0:0:0:0:0:0:0", "::"),
    ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),      # the first of two equal runs
    ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),             # the longest run
    ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),    # one zero field stays
    ("2001:DB8:0:0:0:0:0:ABCD", "2001:db8::abcd"),       # lower case
    ("fe80:0:0:0:0:0:0:0", "fe80::"),
    ("0:0:0:0:0:ffff:c000:201", "::ffff:192.0.2.1"),    # IPv4-mapped
    ("0:0:0:0:0:ffff:0:0", "::ffff:0.0.0.0"),
    ("0:0:0:0:0:0:c000:201", "::192.0.2.1"),            # IPv4-compatible
    ("0:0:0:0:0:0:0:102", "::102"),
    ("0:0:0:0:ffff:0:c000:201", "::ffff:0:c000:201"),   # not mapped
    ("64:ff9b:0:0:0:0:c000:201", "64:ff9b::c000:201"),
]
AAAA_FORMS_WIRE = dns.message.from_text(
    "id 7\nflags QR\n;QUESTION\nv6.example. IN AAAA\n;ANSWER\n"
    + "".join(f"v6-{i}.example. 60 IN AAAA {full}\n" for i, (full, _) in enumerate(AAAA_FORMS))
).to_wire()


def test_aaaa_text_is_rfc5952_in_both_tools(built, tmp_path):
    f = tmp_path / "aaaa_forms.bin"
    f.write_bytes(AAAA_FORMS_WIRE)
    for tool in ([str(built.dump_prog)], [sys.executable, "-m", "shim", "dump"]):
        text = subprocess.run([*tool, str(f)], capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout
        assert [line.rsplit("\t", 1)[1] for line in text.splitlines()
                if "\tAAAA\t" in line and not line.startswith(";")] == [
            want for _, want in AAAA_FORMS], tool
        out = subprocess.run([*tool, "--json", str(f)], capture_output=True, text=True,
                             check=True, cwd=ROOT).stdout
        assert [r["address"] for r in json.loads(out)["records"]] == [
            want for _, want in AAAA_FORMS], tool


def test_ipv6_text_agrees_with_inet_ntop():
    """python -m shim dump's IPv6 text is the C library's inet_ntop's (what
    dnsshim-dump prints), over addresses made of zero and non-zero fields."""
    import random
    import socket

    from shim.dump import _ipv6
    rng = random.Random(5952)
    fields = [0, 0, 0, 1, 0xffff, 0xc000, 0x201, 0xdb8]
    for _ in range(20000):
        packed = b"".join(rng.choice(fields).to_bytes(2, "big") for _ in range(8))
        address = ipaddress.IPv6Address(packed)
        assert _ipv6(packed) == socket.inet_ntop(socket.AF_INET6, packed), address


def _dump_files(tmp_path):
    files = [tmp_path / "aaaa_forms.bin"]
    files[0].write_bytes(AAAA_FORMS_WIRE)
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


# ---- dnsshim-dump's command line: the C program and its Python fallback ------------

#: dnsshim-dump's usage, as both forms print it (the program's name, never its path).
DUMP_USAGE = (
    "usage: dnsshim-dump [-x] [--sections answer,authority,additional] [--json]\n"
    "       [--expect-id N --expect-name NAME [--expect-type T] [--expect-class C]\n"
    "        [--match-case] [--expect-cookie HEX16]] FILE...\n"
    "       dnsshim-dump --check\n"
    '       ("-" reads standard input)\n')


@pytest.fixture(scope="module")
def fallback(tmp_path_factory):
    """The dnsshim-dump command where the package holds no C program (the
    console script's shim.__main__.dnsshim_dump, its Python form): a copy of
    the shim package without bin/, lib/ and include/. Returns the command's
    start, to which the arguments are added."""
    where = tmp_path_factory.mktemp("fallback")
    shutil.copytree(ROOT / "shim", where / "shim",
                    ignore=shutil.ignore_patterns("bin", "lib", "include", "__pycache__"))
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(where)!r}); "
            "from shim.__main__ import dnsshim_dump; sys.exit(dnsshim_dump())"]


def _both(built, fallback, args, cwd, stderr=subprocess.PIPE):
    """(exit status, stdout, stderr) of the C program and of its fallback."""
    out = []
    for command in ([str(built.dump_prog)], fallback):
        r = subprocess.run([*command, *args], stdout=subprocess.PIPE, stderr=stderr, text=True,
                           cwd=cwd, stdin=subprocess.DEVNULL)
        out.append((r.returncode, r.stdout, r.stderr))
    return out


@pytest.mark.parametrize("args, why", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--bogus", "good.bin"], "unknown option '--bogus'"),
    (["--expect-id", "5", "good.bin"], "--expect-id needs --expect-name"),
    (["--expect-name", "example.com", "good.bin"], "--expect-name needs --expect-id"),
    (["--match-case", "good.bin"], "--match-case needs --expect-id and --expect-name"),
    (["--expect-type", "AAAA", "--expect-id", "5", "good.bin"],
     "--expect-type needs --expect-name"),
    (["--expect-id"], "--expect-id needs a value"),
    (["--expect-id", "65536", "--expect-name", "x", "good.bin"],
     "--expect-id: '65536' is not a number from 0 to 65535 (decimal or 0x hex)"),
    (["--expect-type", "BOGUS", "good.bin"],
     "--expect-type: 'BOGUS' is not a type (a number, a mnemonic or TYPEnnn)"),
    (["--expect-class", "CLASS", "good.bin"],
     "--expect-class: 'CLASS' is not a class (a number, a mnemonic or CLASSnnn)"),
    (["--expect-cookie", "0102", "good.bin"], "--expect-cookie: '0102' is not 16 hex digits"),
    (["--sections", "bogus", "good.bin"],
     "--sections: 'bogus' is not a list of answer, authority and additional"),
    (["--sections=,", "good.bin"], "--sections: ',' is not a list of answer, authority and "
                                   "additional"),
    (["--check", "good.bin"], "--check goes alone"),
    (["--help", "good.bin"], "--help goes alone"),
    ([], "no FILE given"),
    (["-x", "--json"], "no FILE given"),
])
def test_dump_usage_error_names_what_is_wrong(built, fallback, tmp_path, args, why):
    """One line naming the error, then the usage under the program's name,
    exit status 2: the C program and its Python form alike; python -m shim
    dump says the same under its own name."""
    (tmp_path / "good.bin").write_bytes(malformed.GOOD)
    expected = (2, "", f"dnsshim-dump: {why}\n{DUMP_USAGE}")
    assert _both(built, fallback, args, tmp_path) == [expected, expected]
    module = subprocess.run([sys.executable, "-m", "shim", "dump", *args], capture_output=True,
                            text=True, cwd=ROOT, stdin=subprocess.DEVNULL)
    assert (module.returncode, module.stdout, module.stderr) == (
        2, "", f"python -m shim dump: {why}\n"
               + DUMP_USAGE.replace("dnsshim-dump", "python -m shim dump"))


def test_dump_help_documents_the_exit_statuses(built, fallback, tmp_path):
    c, py = _both(built, fallback, ["--help"], tmp_path)
    assert c == py
    assert c[0] == 0 and c[1].startswith(DUMP_USAGE) and c[2] == ""
    assert c[1].endswith(
        "\n\nExit status: 0 when every message parsed; 1 when a message was rejected, or\n"
        "--check found that the runtime does not work; 2 on a usage error or a FILE\n"
        "that cannot be read (or, with -x, is no hex text), whatever the other files\n"
        "gave.\n")


def _rejected(wire: bytes) -> str:
    """What both dump tools say of a message the library rejects."""
    from shim.dump import rejection
    from shim.status import DnsShimError

    with pytest.raises(DnsShimError) as e:
        shim.parse_response(wire)
    return rejection(int(e.value.status), e.value.reason)


def test_dump_exit_status_tells_an_unreadable_file_from_a_rejected_message(
        built, fallback, tmp_path):
    """0: every message parsed; 1: a message rejected; 2: a FILE that
    cannot be read, or, with -x, is no hex text, whatever the others gave."""
    (tmp_path / "good.bin").write_bytes(malformed.GOOD)
    bad = malformed.CASES["pointer_loop_of_two"][0]
    (tmp_path / "bad.bin").write_bytes(bad)
    (tmp_path / "folder").mkdir()
    (tmp_path / "z.hex").write_text("12 34 zz\n")
    (tmp_path / "odd.hex").write_text("# a comment: zz\n123\n")
    rejected = f"bad.bin: {_rejected(bad)}\n"
    for args, status, stderr in (
            (["good.bin"], 0, ""),
            (["bad.bin"], 1, rejected),
            (["missing.bin"], 2, "missing.bin: No such file or directory\n"),
            (["folder"], 2, "folder: Is a directory\n"),
            (["-x", "z.hex"], 2, "z.hex: not hex: 'z'\n"),
            (["-x", "odd.hex"], 2, "odd.hex: odd number of hex digits\n"),
            (["good.bin", "bad.bin", "missing.bin"], 2,
             rejected + "missing.bin: No such file or directory\n"),
            (["missing.bin", "good.bin", "bad.bin"], 2,
             "missing.bin: No such file or directory\n" + rejected)):
        c, py = _both(built, fallback, args, tmp_path)
        assert c == py, args
        assert (c[0], c[2]) == (status, stderr), args


def test_dump_prints_an_empty_files_reason_once(built, fallback, tmp_path):
    """Where stderr is stdout (a terminal, 2>&1) the reason on stdout is
    not repeated on stderr; apart, stderr has it too."""
    (tmp_path / "empty.bin").write_bytes(b"")
    line = _rejected(b"")
    assert line.startswith("message shorter than the 12-byte DNS header (-3): 0 octets")
    block = f";; empty.bin, 0 bytes\n;; rejected: {line}\n\n"
    together = _both(built, fallback, ["empty.bin"], tmp_path, stderr=subprocess.STDOUT)
    assert together == [(1, block, None)] * 2
    apart = _both(built, fallback, ["empty.bin"], tmp_path)
    assert apart == [(1, block, f"empty.bin: {line}\n")] * 2
    as_json = _both(built, fallback, ["--json", "empty.bin"], tmp_path, stderr=subprocess.STDOUT)
    assert as_json[0] == as_json[1] and as_json[0][1].count("0 octets") == 1
    assert json.loads(as_json[0][1])["detail"].startswith("0 octets")


def test_dump_check_says_whether_parallelism_is_available(built):
    """--check's parallelism line: the build's folder holds no worker image
    (build_ffi.py --out builds none), which is no failure: exit status 0."""
    result = subprocess.run([str(built.dump_prog), "--check"], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    parallelism = [line for line in lines if line.startswith("parallelism: ")]
    assert len(parallelism) == 1 and lines[-2] == parallelism[0], lines
    assert parallelism[0].startswith("parallelism: unavailable: ")
    assert lines[-1] == "check: ok: a sample response parsed (www.example.com A 192.0.2.1)"
