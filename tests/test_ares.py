"""libdnsshim_ares: c-ares's classic reply parsers, checked against the real
c-ares 1.18 (Debian's libcares) from C.

* the struct layouts and codes of csrc/ares/dnsshim_ares.h against <ares.h>;
* exactly the classic API exported, SONAME libdnsshim_ares.so.1;
* c-ares's expectations, case by case: the values a C program sees, the same
  from both libraries;
* the differential (tests/ares_diff.py) on every test message, the corpus and
  mutants: every difference of a kind dnsshim_ares(3) lists;
* valgrind on good and malformed messages; a program linked with both
  libraries freeing the allocations of each; threads;
* the sample IMS program, built both ways, printing the same;
* both cffi modules in one Python process.

The programs need c-ares's headers and library (Debian: libc-ares-dev):
without them these tests skip, under CI=true they fail.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import dns.message
import dns.rrset
import pytest

import ares_diff
from dnsshim_build import header, pipeline
import malformed
import vectors
from conftest import ROOT, available_corpus, require_cares
from shim import ares_glue
from test_c_programs import VALGRIND, _require_valgrind


@pytest.fixture(scope="module")
def progs(built):
    """The build directory, with the programs built against both libraries."""
    require_cares()
    return built.dir


def run(prog, *args, env=None):
    result = subprocess.run([str(prog), *map(str, args)], capture_output=True, text=True,
                            errors="replace", timeout=600, env=env)
    return result


# ---- the ABI --------------------------------------------------------------------

#: (c-ares's type, ours): the members whose offsets must agree.
STRUCTS = {
    ("struct hostent", "dnsshim_ares_hostent"):
        ["h_name", "h_aliases", "h_addrtype", "h_length", "h_addr_list"],
    ("struct ares_addrttl", "dnsshim_ares_addrttl"): ["ipaddr", "ttl"],
    ("struct ares_addr6ttl", "dnsshim_ares_addr6ttl"): ["ip6addr", "ttl"],
    ("struct ares_caa_reply", "dnsshim_ares_caa_reply"):
        ["next", "critical", "property", "plength", "value", "length"],
    ("struct ares_srv_reply", "dnsshim_ares_srv_reply"):
        ["next", "host", "priority", "weight", "port"],
    ("struct ares_mx_reply", "dnsshim_ares_mx_reply"): ["next", "host", "priority"],
    ("struct ares_txt_reply", "dnsshim_ares_txt_reply"): ["next", "txt", "length"],
    ("struct ares_txt_ext", "dnsshim_ares_txt_ext"): ["next", "txt", "length", "record_start"],
    ("struct ares_naptr_reply", "dnsshim_ares_naptr_reply"):
        ["next", "flags", "service", "regexp", "replacement", "order", "preference"],
    ("struct ares_soa_reply", "dnsshim_ares_soa_reply"):
        ["nsname", "hostmaster", "serial", "refresh", "retry", "expire", "minttl"],
    ("struct ares_uri_reply", "dnsshim_ares_uri_reply"):
        ["next", "priority", "weight", "uri", "ttl"],
}


def _header_defines(prefix):
    """{name after the prefix: value} of the c-ares header's integer defines,
    as the build reads them."""
    return {name[len(prefix):]: value
            for name, value in pipeline.header_defines(pipeline.ARES_HEADER, prefix).items()}


def test_layout_and_codes_match_ares_h(progs, tmp_path):
    """Every struct of csrc/ares/dnsshim_ares.h has the size and member offsets of
    c-ares's, and every code and address family its value: checked by the
    compiler, against the system's <ares.h>."""
    lines = ["#include <ares.h>", "#include <netdb.h>", "#include <sys/socket.h>",
             "#include <stddef.h>", '#include "ares/dnsshim_ares.h"']
    for (theirs, ours), members in STRUCTS.items():
        lines.append(f"_Static_assert(sizeof({theirs}) == sizeof({ours}), \"{ours} size\");")
        for m in members:
            lines.append(f"_Static_assert(offsetof({theirs}, {m}) == offsetof({ours}, {m}), "
                         f"\"{ours}.{m}\");")
            lines.append(f"_Static_assert(sizeof((({theirs} *)0)->{m}) == "
                         f"sizeof((({ours} *)0)->{m}), \"{ours}.{m} size\");")
    codes = {k: v for k, v in _header_defines("DNSSHIM_ARES_").items()
             if not k.startswith(("KIND_", "WANT_", "_"))}
    assert {"SUCCESS", "ENODATA", "EBADNAME", "EBADRESP", "ENOMEM", "EBADSTR"} <= set(codes)
    for name in codes:
        theirs = name if name.startswith("AF_") else "ARES_" + name
        lines.append(f"_Static_assert(DNSSHIM_ARES_{name} == {theirs}, \"{name}\");")
    lines.append("int main(void) { return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    pipeline.compile_program([src], tmp_path / "layout", cflags=("-std=gnu11", "-Werror"))
    declared = [d for d in header.read(pipeline.ARES_HEADER).declarations if d.kind == "struct"]
    assert len(STRUCTS) == len(declared) - 6, \
        "every c-ares struct of the header is checked (the 6 others are the Python-to-C data: " \
        "bytes, item, result; field, rr, message)"


def test_python_constants_match_the_header():
    defines = _header_defines("DNSSHIM_ARES_")
    for name in ("SUCCESS", "ENODATA", "EBADNAME", "EBADRESP", "ENOMEM", "EBADSTR"):
        assert getattr(ares_glue, name) == defines[name], name
    for name, value in defines.items():
        if name.startswith("KIND_"):
            assert getattr(ares_glue, name[5:]) == value, name
    assert ares_glue.WANT_HOST == defines["WANT_HOST"]


def test_exports_exactly_the_classic_api(built):
    shared = built.dir / pipeline.DNSSHIM_ARES.soname
    out = subprocess.run(["nm", "-D", "--defined-only", str(shared)], capture_output=True,
                         text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()[1] in "TDBR"}
    assert exported == pipeline.exported_names(pipeline.DNSSHIM_ARES)
    dyn = subprocess.run(["readelf", "-d", str(shared)], capture_output=True, text=True,
                         check=True).stdout
    assert "Library soname: [libdnsshim_ares.so.1]" in dyn
    assert "[libdnsshim.so.1]" in dyn  # the runtime is libdnsshim's
    assert "NODELETE" in dyn  # its Python module outlives any dlclose()
    assert os.readlink(built.dir / "libdnsshim_ares.so") == "libdnsshim_ares.so.1"
    assert (built.dir / "libdnsshim_ares.a").is_file()


# ---- c-ares's expectations ---------------------------------------------------------

def _msg(question, answers=(), qtype="A", authority=(), qid=0x1234):
    """A response built with dnspython: answers are (name, ttl, type, rdata text)."""
    q = dns.message.make_query(question, qtype)
    q.id = qid
    r = dns.message.make_response(q)
    for section, records in ((r.answer, answers), (r.authority, authority)):
        for name, ttl, rdtype, text in records:
            section.append(dns.rrset.from_text(name, ttl, "IN", rdtype, text))
    return r.to_wire()


#: name -> (message, {call: expected line}): what c-ares 1.18 gives, from C.
CASES = {
    "a_cname_chain_ttl_capped": (
        _msg("www.example.com.", [("www.example.com.", 600, "CNAME", "web.example.com."),
                                  ("web.example.com.", 100, "CNAME", "srv.example.com."),
                                  ("srv.example.com.", 300, "A", "192.0.2.1"),
                                  ("srv.example.com.", 50, "A", "192.0.2.2"),
                                  ("other.example.com.", 300, "A", "192.0.2.3")]),
        {"a host=1 ttls=8": 'a host=1 ttls=8 rc=0 name="web.example.com" addrtype=2 length=4 '
                            'aliases=["www.example.com","web.example.com"] '
                            'addrs=[192.0.2.1,192.0.2.2] naddrttls=2 '
                            '[192.0.2.1/100,192.0.2.2/50]',
         "a host=0 ttls=1": "a host=0 ttls=1 rc=0 naddrttls=1 [192.0.2.1/100]",
         "aaaa host=1 ttls=8": 'aaaa host=1 ttls=8 rc=0 name="web.example.com" addrtype=10 '
                               'length=16 aliases=["www.example.com","web.example.com"] addrs=[] '
                               'naddrttls=0 []'}),
    "aaaa_only_to_a_parser": (
        _msg("v6.example.", [("v6.example.", 300, "AAAA", "2001:db8::1")], qtype="AAAA"),
        {"a host=1 ttls=8": "a host=1 ttls=8 rc=1 naddrttls=0 []",
         "a host=0 ttls=1": "a host=0 ttls=1 rc=0 naddrttls=0 []",
         "aaaa host=1 ttls=8": 'aaaa host=1 ttls=8 rc=0 name="v6.example" addrtype=10 length=16 '
                               'aliases=[] addrs=[2001:db8::1] naddrttls=1 [2001:db8::1/300]'}),
    "no_answer": (
        _msg("none.example.", [], authority=[("example.", 60, "SOA",
                                               "ns.example. h.example. 1 2 3 4 5")]),
        {"a host=1 ttls=8": "a host=1 ttls=8 rc=1 naddrttls=0 []",
         "mx": "mx rc=1", "srv": "srv rc=1", "txt": "txt rc=1", "ns": "ns rc=1",
         "ptr": "ptr rc=1", "soa": "soa rc=10", "naptr": "naptr rc=1"}),
    "answers_of_another_type": (
        _msg("mx.example.", [("mx.example.", 300, "MX", "10 mail.example.")], qtype="MX"),
        {"mx": 'mx rc=0 {10 "mail.example"}', "srv": "srv rc=0", "txt": "txt rc=0",
         "a host=1 ttls=8": "a host=1 ttls=8 rc=1 naddrttls=0 []", "soa": "soa rc=10"}),
    "ns_and_ptr": (
        _msg("1.2.0.192.in-addr.arpa.",
             [("1.2.0.192.in-addr.arpa.", 300, "CNAME", "1.0-25.2.0.192.in-addr.arpa."),
              ("1.0-25.2.0.192.in-addr.arpa.", 300, "PTR", "host.example."),
              ("1.0-25.2.0.192.in-addr.arpa.", 300, "PTR", "alias.example."),
              ("1.2.0.192.in-addr.arpa.", 300, "NS", "ns1.example.")], qtype="PTR"),
        {"ptr": 'ptr rc=0 name="alias.example" addrtype=2 length=4 '
                'aliases=["host.example","alias.example"] addrs=[192.0.2.1]',
         "ns": 'ns rc=0 name="1.2.0.192.in-addr.arpa" addrtype=2 length=4 '
               'aliases=["ns1.example"] addrs=[]'}),
    "txt_strings_and_records": (
        _msg("t.example.", [("t.example.", 300, "TXT", '"v=spf1" "-all"'),
                            ("t.example.", 300, "TXT", '"a\\000b"')], qtype="TXT"),
        {"txt": 'txt rc=0 {6 "v=spf1"} {4 "-all"} {3 "a\\x00b"}',
         "txt_ext": 'txt_ext rc=0 {1 6 "v=spf1"} {0 4 "-all"} {1 3 "a\\x00b"}'}),
    "srv_naptr_caa_uri_soa": (
        _msg("x.example.", [("x.example.", 300, "SRV", "10 60 5060 sip.example."),
                            ("x.example.", 300, "NAPTR",
                             '100 10 "S" "SIP+D2U" "" _sip._udp.example.'),
                            ("x.example.", 300, "CAA", '128 issue "ca.example.net"'),
                            ("x.example.", 77, "URI", '10 1 "https://example.com/"'),
                            ("x.example.", 300, "SOA",
                             "ns1.example. hostmaster.example. 2024 7200 3600 1209600 300")],
             qtype="ANY"),
        {"srv": 'srv rc=0 {10 60 5060 "sip.example"}',
         "naptr": 'naptr rc=0 {100 10 "S" "SIP+D2U" "" "_sip._udp.example"}',
         "caa": 'caa rc=0 {128 5 "issue" 14 "ca.example.net"}',
         "uri": 'uri rc=0 {10 1 77 "https://example.com/"}',
         "soa": 'soa rc=0 "ns1.example" "hostmaster.example" 2024 7200 3600 1209600 300'}),
    "escaped_names": (
        _msg("a\\.b\\032c.example.", [("a\\.b\\032c.example.", 300, "MX", "1 m\\\\x.example."),
                                       ("a\\.b\\032c.example.", 300, "CNAME", "bad\\032host.")],
             qtype="MX"),
        {"mx": 'mx rc=0 {1 "m\\x5c\\x5cx.example"}',
         "expand_name @12": 'expand_name @12 rc=0 len=15 "a\\x5c.b\\x20c.example"',
         # A CNAME target that is not a host name: c-ares says EBADRESP.
         "a host=1 ttls=8": "a host=1 ttls=8 rc=10 naddrttls=0 []"}),
    "two_questions": (
        bytes.fromhex("1234818000020000000000000178000001000101790000010001"),
        {"a host=1 ttls=8": "a host=1 ttls=8 rc=10 naddrttls=0 []", "mx": "mx rc=10",
         "soa": "soa rc=10"}),
    "short": (bytes.fromhex("12348180000100"),
              {"a host=1 ttls=8": "a host=1 ttls=8 rc=10 naddrttls=0 []", "mx": "mx rc=10"}),
}


@pytest.fixture(scope="module")
def case_outputs(progs, tmp_path_factory):
    d = tmp_path_factory.mktemp("ares-cases")
    paths = []
    for name, (wire, _) in CASES.items():
        p = d / f"{name}.bin"
        p.write_bytes(wire)
        paths.append(p)
    outs = []
    for prog in ("ares_every_parser", "ares_every_parser_cares"):
        result = run(progs / prog, *paths)
        assert result.returncode == 0, result.stderr
        outs.append(ares_diff.parse_output(result.stdout))
    return {name: (outs[0][str(p)], outs[1][str(p)]) for name, p in zip(CASES, paths)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_c_ares_expectations(case_outputs, case):
    ours, theirs = case_outputs[case]
    for call, line in CASES[case][1].items():
        assert theirs[call] == line, f"c-ares: {call}"
        assert ours[call] == line, call
    assert ours == theirs, "every other call agrees too"


def test_not_started_is_enotinitialized(progs, tmp_path):
    p = tmp_path / "m.bin"
    p.write_bytes(CASES["srv_naptr_caa_uri_soa"][0])
    result = run(progs / "ares_every_parser", p,
                 env={"PATH": "/usr/bin:/bin", "DNS_SHIM_PYTHON": "/nonexistent/python3"})
    assert result.returncode == 0
    assert "srv rc=21\n" in result.stdout  # ARES_ENOTINITIALIZED, never a made-up result
    # libdnsshim says why, once (the default handler: stderr), and nothing else.
    assert result.stderr.splitlines() == [
        "dnsshim: cannot start: the python /nonexistent/python3 (from DNS_SHIM_PYTHON) does not "
        "exist (moved or removed): set DNS_SHIM_PYTHON to the python executable of a CPython "
        f"{sys.version_info.major}.{sys.version_info.minor} installation, or unset it"]


# ---- the differential ------------------------------------------------------------

MUTANTS = 3000


def _manual_kinds():
    """The kinds of dnsshim_ares(3)'s table of differences from c-ares 1.18.1."""
    text = open(ROOT / "csrc" / "ares" / "dnsshim_ares.3.md", encoding="utf-8").read()
    section = text.split("### Differences from c-ares 1.18.1", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `([a-z]+(?::\w+)?)` \|", section, re.M))


def test_manual_lists_every_kind():
    assert _manual_kinds() == set(ares_diff.KINDS)


@pytest.fixture(scope="module")
def comparison(progs):
    seeds = ares_diff.messages_from_seeds(MUTANTS)
    return ares_diff.compare(progs / "ares_every_parser_cares", progs / "ares_every_parser", seeds)


#: The differences on the seeds and MUTANTS mutants (seed 1), with the whole
#: corpus, counted by kind (ares_diff.KINDS says what each means): a new
#: difference, even of a known kind, fails until it is counted here.
#: "accepts:X" is a call where c-ares gives a result for a message the
#: reference (dnspython) rejects with defect X and we give the parser's error
#: code; "code" one where both give an error, with different codes; "ttl" a
#: message the reference accepts that differs only in a TTL of 2^31 or more.
SEED_KINDS = {
    "accepts:FormError": 7125,
    "accepts:BadName": 3518,
    "accepts:TrailingData": 989,
    "accepts:BadEdns": 378,
    "accepts:BadTsig": 234,
    "code": 499,
    "ttl": 5,
}


def test_oracle_is_the_reference_not_the_decoder():
    """The verdict on malformed comes from dnspython, named by ares_diff's
    table: a well-formed vector is accepted, each defect names its kind,
    and the name at an offset is read by dns.name alone."""
    cases = {name: wire for name, (wire, _) in malformed.CASES.items()}
    wires = [vectors.wire(vectors.NAMES[0]), cases["trailing_one_byte"],
             cases["pointer_forward"], cases["opt_in_answer"], cases["tsig_not_last"],
             cases["question_fields_cut"]]
    assert ares_diff.wire_defects(wires) == [
        None, "TrailingData", "BadName", "BadEdns", "BadTsig", "FormError"]
    name = b"\x03www\x07example\x00"
    assert ares_diff._name_defect(name, 0) is None
    assert ares_diff._name_defect(b"\xc0\x02\x00", 0) == "BadName"  # a forward pointer
    assert ares_diff._name_defect(name, 4) is None  # "example", mid-name
    assert ares_diff._name_defect(b"\x05ab", 0) == "FormError"  # runs off the end


def test_unexplained_where_the_reference_and_we_disagree():
    """A message the reference accepts that we reject, or one it rejects
    that we give a result for, is no kind: classify says None."""
    good = ' rc=0 naddrttls=1 [1.2.3.4/256]'
    assert ares_diff.classify(b"", "a host=0", "a" + good, "a rc=10", None) is None
    assert ares_diff.classify(b"", "a host=0", "a" + good, "a rc=0 naddrttls=0 []",
                              "FormError") is None
    assert ares_diff.classify(b"", "a host=0", "a" + good, "a rc=10",
                              "FormError") == "accepts:FormError"
    assert ares_diff.classify(b"", "a host=0", "a rc=8", "a rc=10", "BadName") == "code"
    assert ares_diff.classify(b"", "a host=0", "a rc=0 [1.2.3.4/-1]", "a rc=0 [1.2.3.4/0]",
                              None) == "ttl"


def test_differential_every_difference_is_listed(comparison):
    assert not comparison.unexplained, "\n".join(
        f"{hexwire}\n  c-ares: {a}\n  ours:   {b}" for _, hexwire, a, b in
        comparison.unexplained[:10])
    assert set(comparison.kinds) <= set(ares_diff.KINDS)


def test_differential_counts_are_pinned(comparison):
    """Every difference counted, by kind, and the calls and messages: the
    corpus is part of the seeds, so the numbers hold with all of it."""
    if len(comparison.messages) != 3300:
        pytest.skip("the counts are those of the whole corpus (300 seeds, 3000 mutants)")
    assert comparison.kinds == SEED_KINDS
    assert (comparison.calls, comparison.same, comparison.good_messages) == (64852, 52104, 374)


def test_differential_covers_results(comparison):
    """The comparison is not vacuous: many calls succeed with output, on both."""
    with_output = sum(1 for path, calls in comparison.ours.items()
                      for call, line in calls.items()
                      if " rc=0 " in line and ("{" in line or 'name="' in line)
                      and comparison.cares[path][call] == line)
    # Without the corpus the seeds are the test messages only.
    corpus = len(available_corpus("good", "bad", "captures", "cares-fuzzinput"))
    assert with_output > (200 if corpus else 20)
    assert comparison.same > 0.75 * comparison.calls
    assert len(comparison.messages) >= MUTANTS + corpus


def test_differential_on_random_well_formed_responses(progs):
    """Responses the decoder accepts whole, built to mix what the parsers look
    at (CNAME chains in any order, case, escapes, every type, edge TTLs): every
    call the same as c-ares's, but for the TTLs of 2^31 and more, and the
    names ares_expand_name is pointed at mid-message that only c-ares reads."""
    c = ares_diff.compare(progs / "ares_every_parser_cares", progs / "ares_every_parser",
                          ares_diff.random_responses(2000, seed=5))
    assert c.good_messages == 2000
    assert not c.unexplained, c.unexplained[:5]
    # "accepts:BadName": ares_expand_name pointed mid-record at what only
    # c-ares reads as a name.
    assert c.kinds == {"ttl": 485, "accepts:BadName": 7}
    assert (c.calls, c.same) == (40000, 39508)
    assert c.same > 0.97 * c.calls
    assert sum(1 for calls in c.ours.values() for line in calls.values()
               if " rc=0 " in line and ("{" in line or 'name="' in line)) > 2000


def test_valgrind_good_and_malformed(progs, tmp_path):
    _require_valgrind()
    # A bounded set (each message is 25 calls under valgrind): the corpus's
    # good and bad messages, every class of malformed message, the cases.
    messages = [vectors.wire("every_type"), vectors.wire("ims")]
    messages += [w for w, _ in malformed.CASES.values()] + [w for w, _ in CASES.values()]
    paths = ares_diff.write_messages(tmp_path, messages)
    paths += available_corpus("good", "bad")
    result = subprocess.run([*VALGRIND, str(progs / "ares_every_parser"), *paths],
                            capture_output=True, text=True, errors="replace", timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    assert result.stdout.count("# ") == len(paths)
    assert " rc=0 " in result.stdout and " rc=10" in result.stdout


def test_valgrind_addrttls_capacities_from_int_max_to_int_min(progs, tmp_path):
    """Each addrttls array in a heap block of exactly its capacity (none for
    0 and below): min(capacity, addresses) entries are written, none beyond,
    and a capacity of 0 or less is 0 entries."""
    _require_valgrind()
    a = tmp_path / "a.bin"
    a.write_bytes(_msg("x.example.", [("x.example.", 300, "A", "192.0.2.1"),
                                      ("x.example.", 300, "A", "192.0.2.2")]))
    aaaa = tmp_path / "aaaa.bin"
    aaaa.write_bytes(_msg("x.example.", [("x.example.", 300, "AAAA", "2001:db8::1"),
                                         ("x.example.", 300, "AAAA", "2001:db8::2")], "AAAA"))
    result = subprocess.run([*VALGRIND, str(progs / "ares_addrttls"), a, aaaa],
                            capture_output=True, text=True, errors="replace", timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]
    expected = []
    for cap in (2**31 - 1, 3, 2, 1, 0, -1, -2, -2**31 + 1, -2**31):
        for fn in ("a", "aaaa"):
            expected.append(f"{fn} capacity {cap}: rc=0 naddrttls={min(max(cap, 0), 2)}")
    assert result.stdout.splitlines() == expected


# ---- living beside c-ares; threads ---------------------------------------------------

def test_both_libraries_in_one_program_under_valgrind(progs):
    _require_valgrind()
    result = subprocess.run([*VALGRIND, str(progs / "both_libraries"), "--threads", "2"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    assert "ok ares_get_servers gives the two servers" in result.stdout
    assert "ok every block c-ares allocated went back to c-ares's free" in result.stdout
    assert "ok libdnsshim's dns_shim_process in the same program" in result.stdout
    assert result.stdout.rstrip().endswith("0 failed")


@pytest.mark.parametrize("program", ["ares_allocators", "ares_allocators_alone"],
                         ids=["beside-c-ares", "alone"])
def test_each_block_goes_back_to_the_allocator_it_came_from(progs, tmp_path, program):
    """ares_library_init_mem's allocator takes what the layer allocates for
    the caller (hostents, strings, ares_free_data's chains), and c-ares's
    free functions give it back; libdnsshim's own allocator
    (dns_shim_set_allocator) takes the runtime's memory; no block crosses
    over; after ares_library_cleanup the layer is on malloc again; and once
    the runtime has started, nothing of cffi's backend goes around both
    allocators (the arrays the layer hands C come from libdnsshim's).
    Beside the real c-ares (-ldnsshim_ares -lcares) and with no c-ares at
    all."""
    files = []
    for name in vectors.NAMES:
        files.append(tmp_path / f"{name}.bin")
        files[-1].write_bytes(vectors.wire(name))
    result = subprocess.run([*VALGRIND, str(progs / program), *map(str, files)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr[-5000:]
    lines = result.stdout.splitlines()
    held = {}
    for line in lines[:len(files)]:
        m = re.fullmatch(r"(\S+): held (\d+) back", line)
        assert m, line
        held[Path(m.group(1)).stem] = int(m.group(2))
    assert set(held) == set(vectors.NAMES)
    # a message with records: the results held are blocks of c-ares's allocator
    assert held["ims"] > 0 and held["odd_names"] > 0
    assert lines[len(files):] == ["after cleanup held 0", "cares foreign 0", "dnsshim foreign 0",
                                  "dnsshim blocks some", "cares live 0", "cffi around 0"]


def test_threads(progs):
    result = run(progs / "both_libraries", "--threads", "8")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ok 8 threads x 50 parses, 0 different" in result.stdout


_TWO_MODULES = r"""
import re, sys
sys.path.insert(0, sys.argv[1])
import cffi
from dnsshim_build import pipeline
lib_dir, wire = sys.argv[2], bytes.fromhex(sys.argv[3])
ffi = cffi.FFI()
ffi.cdef(pipeline.header_cdef())
lib = ffi.dlopen(lib_dir + "/libdnsshim.so")
print("dnsshim", lib.process_dns_response(wire, len(wire)))
aresffi = cffi.FFI()
aresffi.cdef(re.sub(r'extern "Python"[^;]*;', "", pipeline.header_cdef(pipeline.ARES_HEADER)))
aresffi.cdef("int ares_parse_srv_reply(const unsigned char *, int, dnsshim_ares_srv_reply **);"
             "void ares_free_data(void *);")
ares = aresffi.dlopen(lib_dir + "/" + pipeline.DNSSHIM_ARES.soname)
out = aresffi.new("dnsshim_ares_srv_reply **")
rc = ares.ares_parse_srv_reply(wire, len(wire), out)
srv = out[0]
print("srv", rc, srv.priority, srv.weight, srv.port, aresffi.string(srv.host).decode(),
      srv.next == aresffi.NULL)
ares.ares_free_data(srv)
del ares, aresffi, out, srv  # a dlclose(): the library must stay mapped (-z nodelete)
import gc; gc.collect()
print("dnsshim", lib.process_dns_response(wire, len(wire)))
print("modules", sorted(m for m in sys.modules if m.endswith("_cffi")))
# The module's type tables live in the library: read them.
print("type", sys.modules["_dnsshim_ares_cffi"].ffi.sizeof("dnsshim_ares_result"))
"""


def test_both_cffi_modules_in_one_python_process(built):
    """libdnsshim and libdnsshim_ares loaded into a Python process (in a
    child, so that this one's state is left alone): each attaches its own
    module to the running interpreter, and dropping the ares library keeps
    it working."""
    wire = CASES["srv_naptr_caa_uri_soa"][0]
    result = subprocess.run([sys.executable, "-c", _TWO_MODULES, str(ROOT), str(built.dir),
                             wire.hex()], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == [
        "dnsshim 0", "srv 0 10 60 5060 sip.example True", "dnsshim 0",
        "modules ['_dnsshim_ares_cffi', '_dnsshim_cffi']", "type 88"]


# ---- the sample legacy program ----------------------------------------------------------

IMS = "ims.mnc001.mcc001.3gppnetwork.org."


def _ims_messages(tmp_path):
    naptr = _msg(IMS, [(IMS, 300, "NAPTR", f'20 50 "s" "SIP+D2U" "" _sip._udp.{IMS}'),
                       (IMS, 300, "NAPTR", f'10 50 "s" "SIP+D2T" "" _sip._tcp.{IMS}'),
                       (IMS, 300, "NAPTR", '5 50 "u" "E2U+sip" "!^.*$!sip:x@y!" .'),
                       (IMS, 300, "NAPTR", f'1 50 "s" "SIP+D2W" "" _sips._tcp.{IMS}')],
                 qtype="NAPTR")
    srv = _msg(f"_sip._tcp.{IMS}", [(f"_sip._tcp.{IMS}", 300, "SRV", f"20 40 5060 pcscf2.{IMS}"),
                                    (f"_sip._tcp.{IMS}", 300, "SRV", f"10 60 5060 pcscf1.{IMS}"),
                                    (f"_sip._tcp.{IMS}", 300, "SRV", f"10 90 5062 pcscf3.{IMS}")],
               qtype="SRV")
    a = _msg(f"pcscf1.{IMS}", [(f"pcscf1.{IMS}", 3600, "CNAME", f"node7.{IMS}"),
                               (f"node7.{IMS}", 600, "A", "192.0.2.10"),
                               (f"node7.{IMS}", 600, "A", "192.0.2.11")])
    aaaa = _msg(f"pcscf1.{IMS}", [(f"pcscf1.{IMS}", 60, "AAAA", "2001:db8:1::10")], qtype="AAAA")
    paths = []
    for name, wire in (("naptr", naptr), ("srv", srv), ("a", a), ("aaaa", aaaa)):
        p = tmp_path / f"{name}.bin"
        p.write_bytes(wire)
        paths.append(p)
    return paths


def test_ims_sample_program_same_both_ways(progs, tmp_path):
    paths = _ims_messages(tmp_path)
    ours = run(progs / "ares_sip_locate", *paths)
    theirs = run(progs / "ares_sip_locate_cares", *paths)
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert ours.stdout == theirs.stdout
    d = IMS.rstrip(".")
    assert ours.stdout.splitlines()[:6] == [
        f"NAPTR 10 50 SIP+D2T -> _sip._tcp.{d}",
        f"NAPTR 20 50 SIP+D2U -> _sip._udp.{d}",
        f"SRV 10 90 pcscf3.{d}:5062 (SIP+D2T)",
        "    A: answer is for node7.ims.mnc001.mcc001.3gppnetwork.org, not "
        f"pcscf3.{d}",
        "    AAAA: answer is for pcscf1.ims.mnc001.mcc001.3gppnetwork.org, not "
        f"pcscf3.{d}",
        f"SRV 10 60 pcscf1.{d}:5060 (SIP+D2T)",
    ]
    assert "    A 192.0.2.10 ttl 600\n    A 192.0.2.11 ttl 600\n" in ours.stdout
    assert "    AAAA 2001:db8:1::10 ttl 60\n" in ours.stdout


def test_ims_sample_program_under_valgrind(progs, tmp_path):
    _require_valgrind()
    result = subprocess.run([*VALGRIND, str(progs / "ares_sip_locate"), *_ims_messages(tmp_path)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-5000:]


# ---- the glue, in Python -----------------------------------------------------------------

@pytest.mark.parametrize("labels, text", [
    ((b"www", b"example", b""), b"www.example"),
    ((b"",), b""),
    ((b"a.b", b"c d", b""), b"a\\.b.c d"),
    ((b'q"();@$\\', b""), b'q\\"\\(\\)\\;\\@\\$\\\\'),
    ((b"\x00", b"x\x00", b"\x7f\xff", b""), b"\x00.x\\000.\\127\\255"),
])
def test_names_as_c_ares_writes_them(labels, text):
    import dns.name
    assert ares_glue.name_text(dns.name.Name(labels)) == text


@pytest.mark.parametrize("name, ok", [("a-b_c/d.example.", True), (".", True),
                                      ("a b.example.", False), ("*.example.", False),
                                      ("a\\.b.example.", False)])
def test_host_names_as_c_ares_accepts_them(name, ok):
    import dns.name
    assert ares_glue.is_hostname(dns.name.from_text(name)) is ok


def test_compute_never_raises_on_any_kind():
    for kind in range(0, 20):
        for wire in (b"", b"\x00" * 11, malformed.GOOD, b"\xff" * 40):
            result = ares_glue.compute(kind, wire, offset=12)
            assert result.status in (0, 1, 8, 10, 17), (kind, wire)
