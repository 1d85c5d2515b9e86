"""libdnsshim_ares's ``ares_dns_parse`` against c-ares 1.34.9's own, from C.

The same driver (tests/c/ares_dnsrec.c, built against the real c-ares 1.34,
the ``cares134`` fixture) runs twice on every message: plainly (c-ares
parses) and with ``LD_PRELOAD=libdnsshim_ares.so.1`` (dnspython parses, and
c-ares's own builders make the record).  The yardstick: for every message
both accept, ``ares_dns_write`` of our record is byte for byte c-ares's.
Every other difference is one of the kinds listed here by message, each a
decision dnsshim_ares(3) names:

* ``STRICTER``: c-ares accepts, dnspython finds the RDATA malformed for its
  type, ``ARES_EBADRESP``;
* ``OTHER_CODE``: both reject, with another code, because each stops at a
  different defect (c-ares at a later record's class its builder refuses,
  ``ARES_EFORMERR``; dnspython at the first defect in wire order).

Also: the ``ARES_DNS_PARSE_*_RAW`` flags, queries and other messages c-ares
parses that are not replies, the classic parsers passing to c-ares's own
(which then run this ``ares_dns_parse``), ``ARES_ENOTIMP`` with Debian 12's
c-ares 1.18, the same result in a fresh process, a plugin loaded where an
unloaded one was (linked against another c-ares) given its own c-ares,
valgrind; every type under every kind of class (a class c-ares's builder
refuses is ``ARES_EFORMERR``, nothing logged), and every name's text as
c-ares's own ``ares_parse_ptr_reply`` gives it; a plugin loaded RTLD_LOCAL
(as CPython loads pycares's extension), its c-ares in no global scope: its
classic parsers, free functions and ``ares_strerror`` are that c-ares's,
as without the preload (tests/c/ares_plugin_parsers.c).
"""

import struct
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
from wire import header as wire_header
from wire import name as wire_name
from wire import pointer as wire_pointer
from wire import question as wire_question
from wire import rr as wire_rr

EFORMERR, ENOTIMP, EBADNAME, EBADRESP = 2, 5, 8, 10

#: c-ares accepts, dnspython refuses the RDATA for its type (dnsshim_ares(3),
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
    "clusterfuzz-5683497160671232", "clusterfuzz-5695341573177344",
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


# ---- a plugin loaded where an unloaded one was -----------------------------------------


@pytest.fixture(scope="module")
def plugin_reload(cares134, tmp_path_factory):
    """tests/c/ares_plugin_reload.c: (folder, host, plugin A, plugin B)."""
    where = tmp_path_factory.mktemp("plugin_reload")
    return (where, *cares_source.build_plugin_reload(cares134, where))


def _reload_run(plugin_reload, ours, wrapper=()):
    where, host, a, b = plugin_reload
    result = subprocess.run([*wrapper, str(host), str(a), str(b)], capture_output=True,
                            text=True, timeout=120, env=cares_source._preloaded(ours))
    lines = result.stdout.splitlines()
    made = lines[2].split()[4] if len(lines) > 2 and lines[2].startswith("A status 0 made ") \
        else "?"
    expected = [
        f"A c-ares {where}/cares1/libcares.so.2", f"A parser {ours}",
        f"A status 0 made {made} live 0 foreign 0 answers 1", "A unloaded",
        "B at A's address",
        f"B c-ares {where}/cares2/libcarez.so.2", f"B parser {ours}",
        f"B status 0 made {made} live 0 foreign 0 answers 1"]
    assert (result.returncode, lines) == (0, expected), \
        f"exit {result.returncode}\n{result.stdout}{result.stderr[-4000:]}"
    assert int(made) > 0


def test_a_plugin_loaded_where_an_unloaded_one_was_gets_its_own_c_ares(plugin_reload, ours):
    """Plugin A (linked against one copy of c-ares 1.34) parses with this
    ares_dns_parse, and is dlclosed; plugin B, the same code linked against
    another copy, is loaded at A's old address (the program checks it) and
    parses too.  B's record is made by B's c-ares, with the allocator B gave
    it, as many blocks as A's, and B's c-ares frees them all: none is A's
    c-ares's (which stays loaded), as it was when the c-ares found for A's
    address answered for B's call."""
    _reload_run(plugin_reload, ours)


def test_a_plugin_loaded_where_an_unloaded_one_was_valgrind_clean(plugin_reload, ours):
    """The same under valgrind: no block freed by a c-ares that did not make
    it (the counting allocator reads no header it did not write)."""
    require_program("valgrind", "valgrind")
    _reload_run(plugin_reload, ours, wrapper=[
        "valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
        "--errors-for-leak-kinds=definite,indirect", f"--suppressions={pipeline.SUPPRESSIONS}"])


# ---- classes c-ares refuses, and types it reads alike in every class ----------------

def _run_logged(ares_dnsrec, files, preload=None, flags=None):
    """The driver's {file: (status, written)} and its stderr (the log)."""
    cmd = [str(ares_dnsrec), *([] if flags is None else ["--flags", str(flags)]), "--",
           *map(str, files)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                            env=cares_source._preloaded(preload))
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) == len(files), result.stderr[-4000:]
    found = {}
    for f, line in zip(files, lines):
        fields = line[len(f"{f} status "):].split(" ")
        found[f.name] = (int(fields[0]), fields[2] if len(fields) == 3 else None)
    return found, result.stderr


#: SIG (RFC 2535 4.1): type covered, algorithm, labels, original TTL,
#: expiration, inception, key tag, the signer (the root), one octet of signature.
_SIG = struct.pack("!HBBIIIH", 1, 5, 2, 60, 2, 1, 7) + b"\0" + b"\x01"


@pytest.mark.parametrize("flags", [None, 63])
def test_a_record_class_c_ares_refuses_is_eformerr_without_a_log(ares_dnsrec, ours, tmp_path,
                                                                 flags):
    """A record whose class c-ares's builder refuses for its type (anything
    but IN, CH, HS and NONE; ANY for SIG alone) is ARES_EFORMERR, as in
    c-ares, and nothing is logged; in the classes it takes, every type it
    knows is read as c-ares reads it (CH A as an IPv4 address).  Every type
    dnspython knows under every kind of class (history.py's), and the few
    c-ares reads, with well-formed RDATA: the same status and the same
    record written back, with the ARES_DNS_PARSE_*_RAW flags too."""
    import history

    wires = {f"biased{i}": w for i, w in enumerate(history.biased_messages())}
    checked = {}
    for rdtype, rdata in ((1, bytes([192, 0, 2, 1])), (28, bytes(range(16))),
                          (33, b"\0\1\0\2\0\3" + wire_name("srv", "example")),
                          (35, b"\0\1\0\2\1S\3SIP\0" + wire_name("naptr", "example")),
                          (15, b"\0\1" + wire_name("mx", "example")), (24, _SIG),
                          (255, b""), (65280, b"\1\2")):
        for rdclass in (0, 1, 2, 3, 4, 254, 255, 0x8001, 0xFF00, 0xFFFF):
            name = f"type{rdtype}_class{rdclass}"
            wires[name] = history.response((rdtype, rdclass, rdata), qtype=1)
            checked[name] = (rdtype, rdclass)
    files = [_write(tmp_path, name, w) for name, w in wires.items()]
    theirs, their_log = _run_logged(ares_dnsrec, files, flags=flags)
    mine, my_log = _run_logged(ares_dnsrec, files, preload=ours, flags=flags)
    assert their_log == "" and my_log == ""
    # One difference: CH A in RFC 1035's Chaosnet form (a name and a 16-bit
    # address, 14 octets here), whose first 4 octets c-ares reads as an IPv4
    # address; read as c-ares reads A, it is an A of the wrong length, which
    # dnspython refuses as in class IN (STRICTER's kind).
    chaosnet = {n for n, w in wires.items() if history.CH_A in w}
    assert chaosnet and {n: theirs[n][0] for n in chaosnet} == dict.fromkeys(chaosnet, 0)
    assert {n: mine[n] for n in mine if mine[n] != theirs[n]} == dict.fromkeys(
        chaosnet, (EBADRESP, None))
    for name, (rdtype, rdclass) in checked.items():
        if flags is None and rdtype != 65280 and rdclass in (0, 2, 255, 0x8001, 0xFF00, 0xFFFF) \
                and (rdtype, rdclass) != (24, 255):
            assert mine[name][0] == EFORMERR, name
    if flags is None:
        assert {mine[f"type1_class{c}"][0] for c in (1, 3, 4, 254)} == {0}
        assert mine["type255_class1"][0] == EBADRESP


# ---- names: exactly c-ares's text ------------------------------------------------------

PTR = r'''
#include <ares.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
/* ptr STREAM: each message of STREAM (a 2-octet length, then the message)
** through ares_parse_ptr_reply; one line each: the status, the name and
** every alias, tab-separated (c-ares writes a name's tab as \009). */
int main(int argc, char **argv)
{
    static unsigned char buf[65536];
    unsigned char len[2];
    const unsigned char addr[4] = {192, 0, 2, 1};
    FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
    if (f == NULL)
        return 1;
    while (fread(len, 1, 2, f) == 2) {
        int n = (len[0] << 8) | len[1], st, i;
        struct hostent *h = NULL;
        if (fread(buf, 1, (size_t)n, f) != (size_t)n)
            return 1;
        st = ares_parse_ptr_reply(buf, n, addr, 4, AF_INET, &h);
        printf("%d", st);
        if (h != NULL) {
            printf("\t%s", h->h_name);
            for (i = 0; h->h_aliases[i] != NULL; i++)
                printf("\t%s", h->h_aliases[i]);
            ares_free_hostent(h);
        }
        printf("\n");
    }
    fclose(f);
    return 0;
}
'''


def _names_of(wires) -> set:
    """Every name dnspython reads in those messages (the question's, each
    owner's, each in an RDATA), as label tuples; the question's name alone
    where the rest does not parse."""
    names = set()
    for w in wires:
        try:
            names.add(dns.name.from_wire(w, 12)[0].labels)
            message = dns.message.from_wire(w, ignore_trailing=True, continue_on_error=True,
                                            keyring=False)
        except Exception:  # noqa: B902 - a malformed message: its question's name, if any
            continue
        for section in (message.question, message.answer, message.authority,
                        message.additional):
            for rrset in section:
                names.add(rrset.name.labels)
                for rd in rrset:
                    for cls in type(rd).__mro__:
                        for slot in getattr(cls, "__slots__", ()):
                            value = getattr(rd, slot, None)
                            if isinstance(value, dns.name.Name):
                                names.add(value.labels)
    return names


def _crafted_names() -> set:
    """Each octet value in a label, alone and between letters (c-ares's
    reserved "().;\\@$ among them); a label of 63 octets; names of 255
    octets, and of 256 and 257, which c-ares takes (it caps a name's text,
    labels and dots, at 255) and RFC 1035 3.1 does not."""
    names = {(b"bad@name", b"realclient", b"test", b"")}
    for octet in range(256):
        names.add((bytes([octet]), b"example", b""))
        names.add((b"a" + bytes([octet]) + b"b", b"example", b""))
    names.add((b"x" * 63, b"@" * 63, b"\\" * 63, b""))
    for last in (61, 62, 63):  # 255, 256, 257 octets
        names.add((b"a" * 63, b"b" * 63, b"c" * 63, b"d" * last, b""))
    names.add((b"\xff" * 63, b".(" * 31 + b"$", b""))
    return names


def _ptr_reply(labels) -> bytes:
    """A reply to 1.2.0.192.in-addr.arpa PTR: a PTR to alias.example, then
    one to the name (the hostent's name, the last PTR's)."""
    target = b"".join(bytes([len(label)]) + label for label in labels)
    return (wire_header(qd=1, an=2) + wire_question(wire_name("1", "2", "0", "192", "in-addr",
                                                              "arpa"), qtype=12)
            + wire_rr(wire_pointer(12), 12, wire_name("alias", "example"))
            + wire_rr(wire_pointer(12), 12, target))


def test_every_name_handed_to_c_ares_is_its_own_text(cares134, ours, tmp_path):
    """c-ares's own ares_parse_ptr_reply over this ares_dns_parse gives the
    name and aliases c-ares alone gives, for every name of the corpus, of
    history.py's messages and one of each octet value: each name's text is
    c-ares's (reserved characters escaped with a backslash, others outside
    0x20-0x7E as \\DDD)."""
    import history

    src = tmp_path / "ptr.c"
    src.write_text(PTR)
    prog = pipeline.compile_program([src], tmp_path / "ptr", against=cares134.lib,
                                    libraries=("cares",), flags=(f"-I{cares134.include}",),
                                    cflags=("-Wno-deprecated-declarations",))
    wires = [p.read_bytes() for p in available_corpus("good", "bad", "captures",
                                                      "cares-fuzzinput")]
    wires += history.biased_messages() + list(history.bounded_messages(2000, 100))
    names = sorted(_names_of(wires) | _crafted_names())
    replies = [_ptr_reply(labels) for labels in names if labels and not labels[-1]]
    stream = tmp_path / "replies"
    stream.write_bytes(b"".join(struct.pack("!H", len(r)) + r for r in replies))

    def run(preload=None):
        result = subprocess.run([str(prog), str(stream)], capture_output=True, timeout=600,
                                env=cares_source._preloaded(preload))
        assert result.returncode == 0 and result.stderr == b"", result.stderr[-4000:]
        lines = result.stdout.split(b"\n")[:-1]
        assert len(lines) == len(replies)
        return lines

    theirs, mine = run(), run(ours)
    differ = {names[i]: (theirs[i][:1], mine[i]) for i in range(len(replies))
              if theirs[i] != mine[i]}
    # The one difference: a name over 255 octets (dnsshim_ares(3): stricter),
    # refused (ARES_EBADNAME, which ares_parse_ptr_reply makes EBADRESP).
    assert differ == {labels: (b"0", b"%d" % EBADRESP) for labels in names
                      if sum(len(label) + 1 for label in labels) > 255}
    assert len(differ) == 2
    assert theirs[names.index((b"bad@name", b"realclient", b"test", b""))] == (
        b"0\tbad\\@name.realclient.test\talias.example\tbad\\@name.realclient.test")
    assert len(replies) >= 700 + len(wires) // 10


# ---- a plugin loaded RTLD_LOCAL: the classic parsers and free functions ----------------


@pytest.fixture(scope="module")
def plugin_parsers(cares134, tmp_path_factory):
    """tests/c/ares_plugin_parsers.c: (host, plugin), the plugin linked
    against cares134's libcares.so.2 (found through its run path), the host
    linked against no c-ares; and the stream of messages: each of
    _crafted_names() but those over 255 octets as a PTR target, as the target
    of a CNAME with its A record, and as an SRV target; ordinary replies,
    replies without the type asked, an NXDOMAIN and damaged ones; last, the
    proof: a PTR to a name of 256 octets (c-ares takes it, dnspython does
    not)."""
    where = tmp_path_factory.mktemp("plugin_parsers")
    source = cprograms.HERE / "c" / "ares_plugin_parsers.c"
    plugin = pipeline.compile_program(
        [source], where / "libplugin.so", against=None,
        flags=(f"-I{cares134.include}", f"-L{cares134.lib}", "-lcares",
               f"-Wl,-rpath,{cares134.lib}"),
        cflags=(*cprograms.STRICT, "-DARES_PLUGIN", "-shared", "-fPIC",
                "-Wno-deprecated-declarations"))
    host = pipeline.compile_program([source], where / "ares_plugin_parsers", against=None,
                                    cflags=cprograms.STRICT)
    names = sorted(labels for labels in _crafted_names()
                   if sum(len(label) + 1 for label in labels) <= 255)
    www, sip = wire_name("www", "example"), wire_name("_sip", "_udp", "example")
    ordinary = wire_name("host", "example", "org")

    def target(labels):
        return b"".join(bytes([len(label)]) + label for label in labels)

    def a_reply(labels):
        t = target(labels)
        return (wire_header(qd=1, an=3) + wire_question(www, qtype=1)
                + wire_rr(wire_pointer(12), 5, t)
                + wire_rr(t, 1, bytes([192, 0, 2, 1]), ttl=60)
                + wire_rr(t, 1, bytes([192, 0, 2, 2]), ttl=70))

    def srv_reply(labels):
        return (wire_header(qd=1, an=2) + wire_question(sip, qtype=33)
                + wire_rr(wire_pointer(12), 33, struct.pack("!HHH", 10, 60, 5060) + target(labels))
                + wire_rr(wire_pointer(12), 33, struct.pack("!HHH", 20, 0, 5061)
                          + wire_name("sip2", "example")))

    ptr_q = wire_question(wire_name("1", "2", "0", "192", "in-addr", "arpa"), qtype=12)
    stream = []
    for labels in names:
        stream += [(b"P", _ptr_reply(labels)), (b"A", a_reply(labels)),
                   (b"S", srv_reply(labels))]
    stream += [
        (b"A", wire_header(qd=1, an=1) + wire_question(ordinary, qtype=1)
         + wire_rr(wire_pointer(12), 1, bytes([192, 0, 2, 9]))),
        # answers, none of the type asked: c-ares's PTR parser frees the
        # hostent it began (ares_free_hostent, from inside libcares)
        (b"P", wire_header(qd=1, an=1) + ptr_q + wire_rr(wire_pointer(12), 5, ordinary)),
        (b"A", wire_header(qd=1, an=1) + wire_question(www, qtype=1)
         + wire_rr(wire_pointer(12), 5, ordinary)),
        (b"S", wire_header(qd=1, an=1) + wire_question(sip, qtype=33)
         + wire_rr(wire_pointer(12), 5, ordinary)),
        (b"P", wire_header(qd=1) + ptr_q),
        (b"A", wire_header(qd=1, flags=0x8183) + wire_question(www, qtype=1)),
        # damaged: a record cut short
        (b"P", (wire_header(qd=1, an=1) + ptr_q + wire_rr(wire_pointer(12), 12, ordinary))[:-3]),
        (b"A", wire_header(qd=1, an=1) + wire_question(www, qtype=1) + b"\xc0\x0c\x00"),
        (b"S", wire_header(qd=1, an=1) + wire_question(sip, qtype=33)
         + wire_rr(wire_pointer(12), 33, b"\x00\x0a")),
        # the proof that a parse went through dnspython
        (b"P", _ptr_reply((b"a" * 63, b"b" * 63, b"c" * 63, b"d" * 62, b""))),
    ]
    path = where / "stream"
    path.write_bytes(b"".join(kind + struct.pack("!H", len(m)) + m for kind, m in stream))
    return host, plugin, path, len(stream)


def _plugin_parsers_run(plugin_parsers, preload=None, threads=None, wrapper=()):
    host, plugin, stream, count = plugin_parsers
    result = subprocess.run(
        [*wrapper, str(host), *(["--threads", str(threads)] if threads else []), str(plugin),
         str(stream)], capture_output=True, timeout=300, env=cares_source._preloaded(preload))
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-4000:]
    lines = result.stdout.split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    # parser, c-ares, one line per message, 28 strerror, [threads], live
    assert len(lines) == 2 + count + 28 + (1 if threads else 0) + 1, len(lines)
    return lines, result.stderr


def test_a_plugin_loaded_rtld_local_gets_its_c_ares_classic_parsers(cares134, ours,
                                                                   plugin_parsers):
    """A host dlopens, RTLD_LOCAL, a plugin linked against c-ares 1.34, as
    CPython loads pycares's extension: that c-ares is in no global scope.
    With libdnsshim_ares preloaded the plugin's ares_parse_ptr_reply,
    ares_parse_a_reply and ares_parse_srv_reply are libdnsshim_ares's, which
    hand the call to the plugin's own c-ares's parser (over this
    ares_dns_parse), and its ares_free_hostent, ares_free_data and
    ares_strerror pass what is not theirs to that c-ares: every line is what
    the plugin prints without the preload (a PTR target holding "@" is
    c-ares's "bad\\@name.realclient.test", not ARES_EBADRESP), every block
    the plugin's c-ares made went back to it, none it did not make; and the
    one name dnspython refuses shows the parse went through it."""
    plain, plain_err = _plugin_parsers_run(plugin_parsers)
    mine, mine_err = _plugin_parsers_run(plugin_parsers, preload=ours)
    assert plain_err == b"" and mine_err == b"", mine_err.decode(errors="replace")[-4000:]
    assert plain[0] == f"parser {cares134.lib}/libcares.so.2".encode()
    assert mine[0] == f"parser {ours}".encode()
    assert plain[1] == mine[1] == b"c-ares 1.34.9"
    assert plain[-1] == mine[-1] == b"live 0 foreign 0"
    proof = 2 + plugin_parsers[3] - 1
    assert plain[proof].startswith(b"ptr 0\t") and mine[proof] == b"ptr %d" % EBADRESP
    differ = [(i, plain[i], mine[i]) for i in range(1, len(plain))
              if i != proof and plain[i] != mine[i]]
    assert differ == [], differ[:10]
    assert (b"ptr 0\tbad\\@name.realclient.test\talias.example\tbad\\@name.realclient.test"
            b"\t|\t192.0.2.1") in plain
    assert (b"a 0\tbad\\@name.realclient.test\twww.example\t|\t192.0.2.1\t192.0.2.2"
            b"\t|\t192.0.2.1 60\t192.0.2.2 70") in plain
    assert b"srv 0\t10 60 5060 bad\\@name.realclient.test\t20 0 5061 sip2.example" in plain
    assert b"strerror 25 Invalid service name or number" in plain


def test_a_plugin_loaded_rtld_local_from_four_threads(ours, plugin_parsers):
    """The same from four threads at once, preloaded: each thread's lines
    are the plain run's."""
    plain, _ = _plugin_parsers_run(plugin_parsers)
    mine, err = _plugin_parsers_run(plugin_parsers, preload=ours, threads=4)
    assert err == b"", err.decode(errors="replace")[-4000:]
    proof = 2 + plugin_parsers[3] - 1
    assert mine[-2:] == [b"threads 4 same", b"live 0 foreign 0"]
    assert [line for i, line in enumerate(mine[1:-2], 1) if i != proof] == \
        [line for i, line in enumerate(plain[1:-1], 1) if i != proof]
