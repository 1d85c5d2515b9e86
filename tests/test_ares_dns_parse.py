"""libdnsshim_ares's ``ares_dns_parse`` against c-ares 1.34.9's own, from C.

The same driver (tests/c/ares_dnsrec.c, built against the real c-ares 1.34,
the ``cares134`` fixture) runs twice on every message: plainly (c-ares
parses) and with ``LD_PRELOAD=libdnsshim_ares.so.1`` (dnspython parses, and
c-ares's own builders make the record).  The yardstick: for every message
both accept, ``ares_dns_write`` of our record is byte for byte c-ares's.
Every other difference is one of the kinds listed here by message, each a
decision README.md names:

* ``STRICTER``: c-ares accepts, dnspython finds the RDATA malformed for its
  type, ``ARES_EBADRESP``;
* ``OTHER_CODE``: both reject, with another code, because each stops at a
  different defect (c-ares at a later record's class its builder refuses,
  ``ARES_EFORMERR``; dnspython at the first defect in wire order).

Also: the ``ARES_DNS_PARSE_*_RAW`` flags, queries and other messages c-ares
parses that are not replies, the classic parsers passing to c-ares's own
(which then run this ``ares_dns_parse``), ``ARES_ENOTIMP`` with Debian 12's
c-ares 1.18, the same result in a fresh process, and valgrind.
"""

import subprocess

import dns.message
import dns.name
import dns.opcode
import dns.rdatatype
import dns.rrset
import pytest

import cares_source
import cprograms
from conftest import available_corpus, require_program, write_messages
from dnsshim_build import pipeline

EFORMERR, ENOTIMP, EBADNAME, EBADRESP = 2, 5, 8, 10

#: c-ares accepts, dnspython refuses the RDATA for its type (README.md,
#: "ares_dns_parse": stricter where dnspython is).
STRICTER = {
    # LOC of 15 octets: RFC 1876 2 gives it 16; c-ares keeps LOC as octets.
    "zeek_loc_rdlen15.bin": "LOC length",
    "loc-invalid-length-0-6c62ae07ae6c.bin": "LOC length",
    # SVCB/HTTPS parameter values that do not parse for their key (RFC 9460
    # 7.1 ALPN lengths, 7.2 port of 2 octets); c-ares keeps them as octets.
    "zeek_svcb_alpn_len_too_long.bin": "SVCB parameter",
    "svcb-alpn-malformed-len-too-long-1-2784cc0703d8.bin": "SVCB parameter",
    "svcb-alpn-malformed-len-too-short-1-36c3b11b9699.bin": "SVCB parameter",
    "svcb-port-malformed-1-a8cc825c7ec1.bin": "SVCB parameter",
}

#: Both refuse; c-ares's code is ARES_EFORMERR (a record's class its builder
#: refuses, after the defect it does not check), dnspython's EBADRESP or
#: EBADNAME for the earlier defect it finds.
OTHER_CODE = {
    "cares_clusterfuzz_5650695891451904.bin", "dns-edns-ecs-bad-0-e6783d6c6a43.bin",
    "dns-edns-ecs-bad-1-fdb89e815bb1.bin", "dns-edns-ecs-bad-2-d6fd581d25b4.bin",
    "dns-edns-ecs-bad-3-e9220cf1c728.bin", "clusterfuzz-5650695891451904",
    "clusterfuzz-5674462260756480", "clusterfuzz-5683497160671232",
    "clusterfuzz-5687310655422464", "clusterfuzz-5695341573177344",
    "clusterfuzz-5697835103682560", "clusterfuzz-5728518081609728",
    "clusterfuzz-5680630672654336",
}

@pytest.fixture(scope="module")
def ours(built):
    return built.dir / pipeline.DNSSHIM_ARES.soname


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    """The vectors, the malformed set, the corpus and c-ares's fuzz seeds."""
    where = tmp_path_factory.mktemp("messages")
    return write_messages(where, accepted=True,
                          corpus=("good", "bad", "captures", "cares-fuzzinput"))


def _diff(ares_dnsrec, files, ours, flags=None):
    """{kind: [file names]} of every difference between the two runs."""
    theirs = cares_source.run_driver(ares_dnsrec, files, flags=flags)
    mine = cares_source.run_driver(ares_dnsrec, files, preload=ours, flags=flags)
    kinds = {}
    for f in files:
        (ts, tw), (ms, mw) = theirs[f], mine[f]
        if (ts, tw) == (ms, mw):
            kind = "same accepted" if ts == 0 else "same rejected"
        elif ts == 0 and ms == 0:
            kind = "written differently"
        elif ts == 0:
            kind = f"stricter {ms}"
        elif ms == 0:
            kind = f"more lenient than {ts}"
        else:
            kind = f"codes {ts} {ms}"
        kinds.setdefault(kind, []).append(f.name)
    return kinds


def test_every_message_both_accept_is_written_the_same(ares_dnsrec, ours, messages):
    kinds = _diff(ares_dnsrec, messages, ours)
    assert "written differently" not in kinds, kinds["written differently"]
    assert not [k for k in kinds if k.startswith("more lenient")], kinds
    assert len(kinds["same accepted"]) >= 100 + len(available_corpus("good", "captures")) // 2
    corpus = {p.name for p in available_corpus("good", "bad", "captures", "cares-fuzzinput")}
    # Stricter: ARES_EBADRESP for an RDATA, ARES_EBADNAME for a name (over
    # 255 octets, a pointer chain past the decoder's limit); the corpus's by
    # name, the others malformed cases (tests/malformed.py names each defect).
    stricter = {k: set(names) for k, names in kinds.items() if k.startswith("stricter")}
    assert set(stricter) <= {f"stricter {EBADRESP}", f"stricter {EBADNAME}"}, stricter
    refused = set().union(*stricter.values())
    assert refused >= {n for n in STRICTER if n in corpus}
    assert {n for n in refused if n not in STRICTER and not n.startswith("bad_")} == set()
    # Both refuse, with other codes: c-ares's EFORMERR (a builder's refusal
    # after a defect it does not check) or EBADNAME (a name read across a
    # record's end), ours the first defect in wire order.
    for kind, names in kinds.items():
        if kind.startswith("codes"):
            theirs, mine = map(int, kind.split()[1:])
            assert theirs in (EFORMERR, EBADNAME) and mine in (EBADRESP, EBADNAME), kind
            assert {n for n in names if not n.startswith(("bad_", "ok_"))} <= OTHER_CODE, names


@pytest.mark.parametrize("flags", [1, 2, 4, 8, 16, 32, 63])
def test_the_raw_flags(ares_dnsrec, ours, messages, flags):
    """ARES_DNS_PARSE_{AN,NS,AR}_{BASE,EXT}_RAW: the records c-ares keeps as
    octets are kept so here too, written the same.  c-ares then no longer
    reads what it keeps as octets, and so misses defects there that dnspython
    still finds: each message refused here and accepted by c-ares under the
    flags is one c-ares refuses without them, or one of STRICTER."""
    corpus = [f for f in messages if not f.name.startswith("bad_")]
    kinds = _diff(ares_dnsrec, corpus, ours, flags)
    assert "written differently" not in kinds, kinds["written differently"]
    assert not [k for k in kinds if k.startswith("more lenient")], kinds
    plain = {f.name: status for f, (status, _) in
             cares_source.run_driver(ares_dnsrec, corpus).items()}
    stricter = set(kinds.get(f"stricter {EBADRESP}", ()))
    assert {n for n in stricter if plain[n] == 0} <= set(STRICTER), stricter
    assert len(kinds["same accepted"]) >= 100


def _write(tmp_path, name, wire) -> object:
    path = tmp_path / name
    path.write_bytes(wire)
    return path


def test_what_c_ares_parses_that_is_no_reply(ares_dnsrec, ours, tmp_path):
    """Queries (QR clear), other opcodes, names with octets c-ares escapes (a
    label of one NUL among them), trailing octets, an opcode c-ares does not
    know, no question, two questions: as c-ares parses them."""
    query = dns.message.make_query("www.example.org.", "AAAA", use_edns=0, want_dnssec=True)
    notify = dns.message.make_query("example.org.", "SOA")
    notify.set_opcode(dns.opcode.NOTIFY)
    response = dns.message.make_response(query)
    wire = response.to_wire()
    opcode3 = bytearray(wire)
    opcode3[2] = (opcode3[2] & 0x87) | (3 << 3)
    no_question = bytearray(wire[:12])
    no_question[4:6] = b"\0\0"
    two = bytearray(wire)
    two[5] = 2
    odd = dns.message.make_response(dns.message.make_query("odd.example.", "A"))
    owner = dns.name.Name([b"\0", b"a.b", b'"q"', b"\xff", b"example", b""])
    odd.answer.append(dns.rrset.from_text(owner, 60, "IN", "A", "192.0.2.7"))
    files = [_write(tmp_path, "query", query.to_wire()), _write(tmp_path, "notify", notify.to_wire()),
             _write(tmp_path, "odd_names", odd.to_wire()),
             _write(tmp_path, "response", wire), _write(tmp_path, "trailing", wire + b"\0\1\2"),
             _write(tmp_path, "opcode3", bytes(opcode3)),
             _write(tmp_path, "no_question", bytes(no_question)),
             _write(tmp_path, "two_questions", bytes(two))]
    theirs = cares_source.run_driver(ares_dnsrec, files)
    mine = cares_source.run_driver(ares_dnsrec, files, preload=ours)
    assert mine == theirs
    statuses = [mine[f][0] for f in files]
    assert statuses == [0, 0, 0, 0, 0, EFORMERR, EBADRESP, EBADRESP]


def test_same_result_in_a_fresh_process(ares_dnsrec, ours, messages):
    """Each message alone in a new process gives what it gave among all the
    others in one process (nothing a message leaves changes the next)."""
    sample = messages[::7]
    together = cares_source.run_driver(ares_dnsrec, sample, preload=ours)
    for f in sample:
        assert cares_source.run_driver(ares_dnsrec, [f], preload=ours) == {f: together[f]}, f


def test_valgrind_clean(ares_dnsrec, ours, messages):
    require_program("valgrind", "valgrind")
    sample = messages[::5]
    supp = pipeline.SUPPRESSIONS
    wrapper = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
               "--errors-for-leak-kinds=definite,indirect", f"--suppressions={supp}"]
    result = cares_source.run_driver(ares_dnsrec, sample, preload=ours, wrapper=wrapper)
    assert result == cares_source.run_driver(ares_dnsrec, sample, preload=ours)


# ---- the classic parsers on c-ares 1.34 ------------------------------------------------

CLASSIC = r'''
#include <ares.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    int i;
    for (i = 1; i < argc; i++) {
        unsigned char buf[65536];
        FILE *f = fopen(argv[i], "rb");
        int n, st, nt = 8;
        struct hostent *h = NULL;
        struct ares_addrttl t[8];
        struct ares_txt_ext *txt = NULL;
        if (f == NULL)
            return 1;
        n = (int)fread(buf, 1, sizeof buf, f);
        fclose(f);
        st = ares_parse_a_reply(buf, n, &h, t, &nt);
        printf("%d %d %s", st, nt, h != NULL ? h->h_name : "-");
        if (h != NULL)
            ares_free_hostent(h);
        st = ares_parse_txt_reply_ext(buf, n, &txt);
        printf(" %d %s\n", st, txt != NULL ? (const char *)txt->txt : "-");
        if (txt != NULL)
            ares_free_data(txt);
    }
    return 0;
}
'''


def test_classic_parsers_pass_to_c_ares_own_over_this_parser(cares134, ours, messages, tmp_path):
    """With c-ares 1.34 after this library, ares_parse_a_reply and the others
    are c-ares's own wrappers, which call this ares_dns_parse: the same
    results as c-ares alone, but where dnspython is stricter."""
    src = tmp_path / "classic.c"
    src.write_text(CLASSIC)
    prog = pipeline.compile_program([src], tmp_path / "classic", against=cares134.lib,
                                    libraries=("cares",), flags=(f"-I{cares134.include}",),
                                    cflags=("-Wno-deprecated-declarations",))
    files = [f for f in messages if not f.name.startswith("bad_")]

    def run(preload=None):
        env = cares_source._preloaded(preload)
        out = subprocess.run([str(prog), *map(str, files)], capture_output=True, text=True,
                             env=env, timeout=600, check=True).stdout.splitlines()
        return dict(zip((f.name for f in files), out))

    theirs, mine = run(), run(ours)
    differ = {n for n in theirs if theirs[n] != mine[n]}
    corpus = {p.name for p in available_corpus("bad", "captures")}
    # The differences are those of ares_dns_parse itself: a message it refuses
    # where c-ares's does not (STRICTER), or with another code (OTHER_CODE,
    # and the malformed set's accepted UPDATE without RDATA, which c-ares
    # refuses as EBADNAME and this parser as EBADRESP).
    assert differ <= set(STRICTER) | OTHER_CODE | {"ok_update_rdataless_ttl.bin"}, differ
    if "zeek_loc_rdlen15.bin" in corpus:
        # c-ares alone: no A record (ENODATA); through this parser: refused.
        assert theirs["zeek_loc_rdlen15.bin"].split()[0] == "1"
        assert mine["zeek_loc_rdlen15.bin"].split()[0] == str(EBADRESP)
    assert sum(1 for n in theirs if theirs[n] == mine[n] and theirs[n].startswith("0 ")) >= 5


# ---- an older c-ares ------------------------------------------------------------------

OLD = r'''
#include <stddef.h>
#include <stdio.h>
int ares_dns_parse(const unsigned char *buf, size_t len, unsigned int flags, void **rec);
int ares_parse_a_reply(const unsigned char *abuf, int alen, void **host, void *ttls, int *n);
void ares_free_hostent(void *host);
int main(void)
{
    /* A response: www.example.org A 192.0.2.1. */
    static const unsigned char msg[] = {
        0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
        3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'o', 'r', 'g', 0, 0, 1, 0, 1,
        0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1};
    void *rec = NULL, *host = NULL;
    int a = ares_dns_parse(msg, sizeof msg, 0, &rec);
    int b = ares_dns_parse(msg, sizeof msg, 0, &rec);
    int c = ares_parse_a_reply(msg, (int)sizeof msg, &host, NULL, NULL);
    printf("%d %d %d %s\n", a, b, c, rec == NULL ? "null" : "set");
    if (host != NULL)
        ares_free_hostent(host);
    return 0;
}
'''


def test_an_older_c_ares_gets_enotimp_and_one_log_line(built, tmp_path):
    """Debian 12's c-ares 1.18 has no record builders: ares_dns_parse is
    ARES_ENOTIMP with one line naming why, the classic parsers are this
    library's own and work."""
    if cprograms.cares_flags() is None:  # as the build found it
        pytest.skip("no libc-ares-dev: the system's c-ares is what this test runs on")
    version = subprocess.run(["pkg-config", "--modversion", "libcares"], capture_output=True,
                             text=True).stdout.strip()
    if tuple(map(int, version.split(".")[:2])) >= (1, 22):
        pytest.skip(f"the system's c-ares is {version}: this test needs one older than 1.22")
    src = tmp_path / "old.c"
    src.write_text(OLD)
    prog = pipeline.compile_program([src], tmp_path / "old", against=built.dir,
                                    libraries=("dnsshim_ares", "cares"))
    result = subprocess.run([str(prog)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{ENOTIMP} {ENOTIMP} 0 null\n"
    assert result.stderr.splitlines() == [
        "dnsshim_ares: ares_dns_parse: no c-ares 1.22 or later is loaded in this process (no "
        "ares_dns_record_create); returning ARES_ENOTIMP: link the program with c-ares "
        "1.28.0 or later"]
