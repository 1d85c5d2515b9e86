"""c-ares 1.34's own DNS record parser (``ares_dns_parse``, which its resolver
calls on every reply) through tests/c/ares_dnsrec.c, built against the real
c-ares 1.34.9 from source (tests/cares_source.py, the ``cares134`` fixture).

This is the reference side of a differential: the same driver run with
``LD_PRELOAD`` naming another ``ares_dns_parse`` gives lines to compare one
by one (``cares_source.run_driver(driver, files, preload=...)``).  What c-ares
itself makes of the corpus is pinned here:

* every ``good/`` message parses (status 0), and what ``ares_dns_write``
  gives back is the same message for dnspython (it differs in bytes only in
  name compression);
* ``bad/``: each message's exact status, by c-ares's own names; two are
  accepted, because c-ares does not look where their defect is:
  ``zeek_loc_rdlen15`` (c-ares has no LOC parser: its RDATA is kept opaque,
  any length) and ``zeek_svcb_alpn_len_too_long`` (SvcParam values are kept
  as opaque bytes: the ALPN list's inner lengths are never read);
* the captures, c-ares's fuzz corpus (the shared copy, and the one its source
  ships): how many parse, and that writing what was parsed and parsing that
  again is a fixed point;
* where c-ares and dnspython disagree on the corpus, by name, with why (an
  mDNS response has no question; c-ares keeps LOC and SvcParam values
  opaque; ...);
* the flags reach the parser (ARES_DNS_PARSE_*_RAW: rejections that go away,
  writes that then fail);
* the driver is valgrind-clean;
* a parser given by LD_PRELOAD is the one the driver calls: the comparison
  of two runs, as the one with libdnsshim_ares will be made.
"""

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import dns.message
import pytest

import cares_source
from conftest import available_corpus, require_corpus, require_program


VALGRIND = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect"]

#: ares_dns_parse_flags_t: every section's base and extended types as raw RRs.
ALL_RAW = 0x3f


@pytest.fixture(scope="module")
def statuses(cares134):
    """ares_status_t's names and values, from c-ares 1.34's own ares.h."""
    text = (cares134.include / "ares.h").read_text()
    found = {name: int(value) for name, value in re.findall(r"^\s*(ARES_\w+)\s*=\s*(\d+),",
                                                             text, re.M)}
    assert found["ARES_SUCCESS"] == 0 and found["ARES_EBADRESP"] == 10
    return found


def _by_name(results):
    return {p.name: v for p, v in results.items()}


# ---- the fixture -------------------------------------------------------------------


def test_cares134_is_the_pinned_source_built_shared(cares134, ares_dnsrec):
    pinned = cares_source.lock()
    assert cares134.version == pinned["cares"]["version"] == "1.34.9"
    version_h = (cares134.include / "ares_version.h").read_text()
    assert '#define ARES_VERSION_STR   "1.34.9"' in version_h
    # shared only: the library and its soname link, no static archive, no tools
    assert (cares134.lib / "libcares.so.2").is_file()
    assert not list(cares134.prefix.rglob("*.a")) and not (cares134.prefix / "bin").exists()
    pc = (cares134.lib / "pkgconfig" / "libcares.pc").read_text()
    assert f"prefix={cares134.prefix}\n" in pc
    # the cache's sdist is the pinned file, and the folder is keyed by it
    assert cares_source._sha256(cares_source.sdist()) == pinned["sdist"]["sha256"]
    assert cares134.prefix.parent.name == f"c-ares-1.34.9-{pinned['sdist']['sha256'][:12]}"
    assert (cares134.fuzzinput / "answer_a").is_file()
    # the driver runs against that library, not the system's (1.18)
    ldd = subprocess.run(["ldd", str(ares_dnsrec)], capture_output=True, text=True,
                         check=True).stdout
    assert re.search(rf"libcares\.so\.2 => {re.escape(str(cares134.lib))}/libcares\.so\.2 ",
                     ldd), ldd
    # built once: a second call is the cache
    assert cares_source.library() == cares134


def test_a_download_with_another_hash_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(cares_source, "CACHE", tmp_path)
    (tmp_path / cares_source.lock()["sdist"]["file"]).write_bytes(b"not the pinned file")
    with pytest.raises(RuntimeError, match="has sha256 .* pins 3e89edc5"):
        cares_source.sdist()


def test_no_index_is_unavailable_not_an_error(tmp_path, monkeypatch):
    # what the fixture turns into a skip (a failure in CI): pip cannot reach
    # any index, and nothing is cached
    monkeypatch.setattr(cares_source, "CACHE", tmp_path)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(cares_source.Unavailable, match="pip could not download pycares==5.2.1"):
        cares_source.sdist()
    assert not list(tmp_path.iterdir())  # nothing half-made left behind


NEEDS_CARES134 = """
def test_needs_it(cares134):
    pass
"""


@pytest.mark.parametrize("ci", [False, True])
def test_fixture_unreachable_pypi_skips_or_fails_in_ci(tmp_path, ci):
    # The fixture asks for cmake before it downloads: without cmake, that
    # is the reason it gives, not the download's.
    require_program("cmake", "cmake")
    (tmp_path / "test_it.py").write_text(NEEDS_CARES134)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PIP_NO_INDEX="1", PIP_FIND_LINKS="",
               PYTHONPATH=str(Path(cares_source.HERE)))
    if ci:
        env["CI"] = "true"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "conftest",
                             "-p", "no:cacheprovider", str(tmp_path / "test_it.py")],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    why = "pip could not download pycares==5.2.1 from PyPI"
    if ci:
        # failed in the fixture: an error of the test that needs it
        assert result.returncode == 1 and "1 error" in result.stdout, result.stdout
        assert f"CI must be able to download it: {why}" in result.stdout
    else:
        assert result.returncode == 0 and "1 skipped" in result.stdout, result.stdout
        assert why in result.stdout
    assert not list((tmp_path / "cache").rglob("*.tar.gz"))


# ---- the driver's contract ---------------------------------------------------------


def test_driver_usage_and_unreadable_files(ares_dnsrec, statuses, tmp_path):
    for args in ([], ["--flags"], ["--flags", "x", "f"], ["--flags", "-1", "f"],
                 ["--flags", "0x100000000", "f"]):
        result = subprocess.run([str(ares_dnsrec), *args], capture_output=True, text=True)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr.startswith("usage: ares_dnsrec"), args
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    missing = tmp_path / "missing.bin"
    result = subprocess.run([str(ares_dnsrec), str(missing), str(empty)], capture_output=True,
                            text=True)
    # the unreadable one named on stderr, the others still done; exit 1
    assert result.returncode == 1
    assert result.stderr == f"ares_dnsrec: {missing}: No such file or directory\n"
    assert result.stdout == f"{empty} status {statuses['ARES_EFORMERR']}\n"  # no header


def test_run_driver_gives_the_written_bytes(ares_dnsrec, cares134):
    answer_a = cares134.fuzzinput / "answer_a"
    got = cares_source.run_driver(ares_dnsrec, [answer_a])
    status, written = got[answer_a]
    assert status == 0
    # c-ares compresses the answer's owner name, which the file spells out:
    # the header and question as they came, then the answer with c00c
    original = answer_a.read_bytes()
    assert len(original) == 62
    assert bytes.fromhex(written) == original[:32] + bytes.fromhex(
        "c00c0001000100000100000401020304")


# ---- what c-ares makes of the corpus -----------------------------------------------


def test_every_good_message_parses_and_writes_back_the_same_message(ares_dnsrec):
    files = require_corpus("good")
    got = cares_source.run_driver(ares_dnsrec, files)
    assert {p.name: s for p, (s, _) in got.items()} == {p.name: 0 for p in files}
    identical = set()
    for path, (_, written) in got.items():
        out = bytes.fromhex(written)
        original = dns.message.from_wire(path.read_bytes())
        rewritten = dns.message.from_wire(out)
        assert rewritten.to_text() == original.to_text(), path.name
        if out == path.read_bytes():
            identical.add(path.name)
    # the others differ only in name compression (c-ares's is its own)
    assert identical == {"cares_aaaa_www_google.bin", "cares_nxdomain_localhost_aaaa.bin",
                         "cares_srv_imap_gmail.bin", "tcpdump_uri.bin",
                         "zeek_naptr_rcs_telephony_goog.bin"}


#: bad/: c-ares's verdict on each (see the module's docstring for the two
#: it accepts).
BAD = {
    "cares_aaaa_rdlen4.bin": "ARES_EBADRESP",
    "cares_clusterfuzz_5637790584012800.bin": "ARES_EFORMERR",
    "cares_clusterfuzz_5650695891451904.bin": "ARES_EFORMERR",
    "cares_multi_indir.bin": "ARES_EBADNAME",
    "cares_naptr_rdlen1_short.bin": "ARES_EBADRESP",
    "tcpdump_badlabel_name_too_long.bin": "ARES_EFORMERR",
    "tcpdump_fwdptr.bin": "ARES_EFORMERR",
    "tcpdump_snaplen_truncated_counts_exceed.bin": "ARES_EBADRESP",
    "tcpdump_zlip1_self_pointer_query.bin": "ARES_EBADNAME",
    "tcpdump_zlip3_label_then_pointer_loop_query.bin": "ARES_EBADNAME",
    "zeek_edns_opt_rdlen1.bin": "ARES_EBADRESP",
    "zeek_loc_rdlen15.bin": "ARES_SUCCESS",
    "zeek_svcb_alpn_len_too_long.bin": "ARES_SUCCESS",
    "zeek_svcb_rdlen2.bin": "ARES_EBADRESP",
}


def test_bad_messages_exact_statuses(ares_dnsrec, statuses):
    files = require_corpus("bad")
    got = cares_source.run_driver(ares_dnsrec, files)
    assert {p.name: s for p, (s, _) in got.items()} == \
        {name: statuses[status] for name, status in BAD.items()}
    # the two accepted: each message's one answer, last in it, written back
    # with its defect verbatim (RDLENGTH and RDATA: LOC's 15 opaque bytes;
    # SVCB's 13, the ALPN value's inner length 8 running past its 6)
    for name, rdlength in (("zeek_loc_rdlen15.bin", 15), ("zeek_svcb_alpn_len_too_long.bin", 13)):
        path = next(p for p in files if p.name == name)
        original, out = path.read_bytes(), bytes.fromhex(got[path][1])
        assert int.from_bytes(original[-rdlength - 2:-rdlength], "big") == rdlength
        assert out[-rdlength - 2:] == original[-rdlength - 2:], name


def _fixed_point(driver, got, tmp_path):
    """Write every parsed message's rewrite to a file, parse those: each
    parses and writes to the same bytes again."""
    again = {}
    for i, (path, (status, written)) in enumerate(got.items()):
        if status == 0:
            out = tmp_path / f"{i}.bin"
            out.write_bytes(bytes.fromhex(written))
            again[out] = (path, written)
    second = cares_source.run_driver(driver, again)
    for out, (path, written) in again.items():
        assert second[out] == (0, written), path


#: How many of each folder c-ares parses, and its statuses for the rest.
COUNTS = {
    "captures": {"ARES_SUCCESS": 76, "ARES_EBADRESP": 14, "ARES_EFORMERR": 6},
    "cares-fuzzinput": {"ARES_SUCCESS": 60, "ARES_EFORMERR": 11, "ARES_EBADRESP": 2,
                        "ARES_EBADNAME": 1},
}


@pytest.mark.parametrize("folder", sorted(COUNTS))
def test_corpus_folder_statuses_and_fixed_point(ares_dnsrec, statuses, folder, tmp_path):
    files = require_corpus(folder)
    got = cares_source.run_driver(ares_dnsrec, files)
    counts = collections.Counter(s for s, _ in got.values())
    assert counts == {statuses[name]: n for name, n in COUNTS[folder].items()}
    assert not [p for p, (_, w) in got.items() if isinstance(w, int)]  # every write succeeds
    _fixed_point(ares_dnsrec, got, tmp_path)


_NO_QUESTION = "an mDNS response, with no question: c-ares wants exactly one (ARES_EBADRESP)"
_SVCB = "a SvcParam value that contradicts its key: c-ares keeps the values as opaque bytes"

#: The corpus's messages on which c-ares and dnspython (the decoder's
#: reference) disagree, each with why: where libdnsshim_ares answers
#: ares_dns_parse from dnspython's verdict, these are the differences to
#: expect.  c-ares refuses, dnspython accepts:
CARES_REFUSES = {
    "captures/dynamic-update-3-9f5f81fdcc9d.bin":
        "an UPDATE (RFC 2136): prerequisite and update RRs with empty RDATA and class"
        " NONE or ANY, which c-ares reads as ordinary records (ARES_EBADRESP)",
    **{f"captures/{name}.bin": _NO_QUESTION for name in (
        "mdns-18-a37bd7c419ce", "mdns-19-0e71633e7f94", "mdns-2-e53fcc8dd35b",
        "mdns-22-f751b2d95fa1", "mdns-23-452bcc568feb", "mdns-3-ba82371519ac",
        "mdns-no-assoc-2-3dac29863b18", "mdns-no-assoc-3-778849cb0cf4",
        "mdns-no-assoc-5-ab0f329c9c92")},
    "cares-fuzzinput/clusterfuzz-5651369832218624":
        "QTYPE 0, which c-ares refuses in a question (ARES_EFORMERR)",
}
#: c-ares accepts, dnspython refuses:
CARES_ACCEPTS = {
    "captures/loc-invalid-length-0-6c62ae07ae6c.bin":
        "a LOC of the wrong length: c-ares has no LOC parser, its RDATA is kept opaque",
    "captures/svcb-alpn-malformed-len-too-long-1-2784cc0703d8.bin": _SVCB,
    "captures/svcb-alpn-malformed-len-too-short-1-36c3b11b9699.bin": _SVCB,
    "captures/svcb-port-malformed-1-a8cc825c7ec1.bin": _SVCB,
    "captures/tkey-7-0f73f09c65a1.bin":
        "a TSIG-signed message: dnspython wants the key to check it (UnknownTSIGKey),"
        " c-ares keeps the TSIG RR as it came",
    "bad/zeek_loc_rdlen15.bin": "as loc-invalid-length above",
    "bad/zeek_svcb_alpn_len_too_long.bin": _SVCB,
}


def test_where_cares_and_dnspython_disagree(ares_dnsrec):
    folders = ("good", "bad", "captures", "cares-fuzzinput")
    refuses, accepts = set(), set()
    for folder in folders:
        files = require_corpus(folder)
        for path, (status, _) in cares_source.run_driver(ares_dnsrec, files).items():
            try:
                dns.message.from_wire(path.read_bytes())
                dnspython = True
            except Exception:
                dnspython = False
            if dnspython and status != 0:
                refuses.add(f"{folder}/{path.name}")
            elif status == 0 and not dnspython:
                accepts.add(f"{folder}/{path.name}")
    assert (sorted(refuses), sorted(accepts)) == (sorted(CARES_REFUSES), sorted(CARES_ACCEPTS))


def test_cares_own_fuzzinput_is_the_shared_copy(cares134, ares_dnsrec):
    """c-ares 1.34.9's test/fuzzinput holds the same messages as the shared
    corpus's cares-fuzzinput/, with the same verdicts."""
    shared = {p.read_bytes(): p for p in require_corpus("cares-fuzzinput")}
    own = sorted(p for p in cares134.fuzzinput.iterdir() if p.is_file())
    assert len(own) == 74 and {p.read_bytes() for p in own} == set(shared)
    mine = cares_source.run_driver(ares_dnsrec, own)
    theirs = cares_source.run_driver(ares_dnsrec, shared.values())
    assert {p.read_bytes(): v for p, v in mine.items()} == \
        {p.read_bytes(): v for p, v in theirs.items()}


def test_flags_reach_the_parser(ares_dnsrec, statuses):
    files = {p.name: p for p in require_corpus("good") + require_corpus("bad")}
    names = ["cares_aaaa_rdlen4.bin", "zeek_edns_opt_rdlen1.bin", "zeek_svcb_rdlen2.bin",
             "tcpdump_a_with_additional_edns.bin", "tcpdump_uri.bin", "cares_mx_google.bin"]
    paths = [files[n] for n in names]
    plain = _by_name(cares_source.run_driver(ares_dnsrec, paths))
    raw = _by_name(cares_source.run_driver(ares_dnsrec, paths, flags=ALL_RAW))
    bad, formerr = statuses["ARES_EBADRESP"], statuses["ARES_EFORMERR"]
    # RDATA kept raw: the length checks of AAAA, OPT and SVCB are not made
    assert [plain[n][0] for n in names[:3]] == [bad, bad, bad]
    assert raw["cares_aaaa_rdlen4.bin"][0] == 0
    # an OPT kept raw parses, and ares_dns_write refuses it: the write's status
    assert raw["zeek_edns_opt_rdlen1.bin"][0] == 0
    for name in ("zeek_svcb_rdlen2.bin", "tcpdump_a_with_additional_edns.bin",
                 "tcpdump_uri.bin"):
        assert raw[name] == (0, formerr), name
    assert plain["tcpdump_uri.bin"][0] == 0 and isinstance(plain["tcpdump_uri.bin"][1], str)
    # MX kept raw writes back uncompressed-as-received: still the same message
    assert raw["cares_mx_google.bin"][0] == 0
    assert dns.message.from_wire(bytes.fromhex(raw["cares_mx_google.bin"][1])).to_text() == \
        dns.message.from_wire(files["cares_mx_google.bin"].read_bytes()).to_text()


def test_driver_valgrind_clean(ares_dnsrec, cares134, tmp_path):
    require_program("valgrind", "valgrind")
    # a sample: the good and bad corpus, a few of c-ares's fuzz inputs, every
    # path through the driver (a write, no write, a failed write, an empty file)
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    files = available_corpus("good", "bad") + sorted(cares134.fuzzinput.iterdir())[:12] + [empty]
    for flags in (None, ALL_RAW):
        result = subprocess.run([*VALGRIND, str(ares_dnsrec),
                                 *([] if flags is None else ["--flags", str(flags)]),
                                 *map(str, files)],
                                capture_output=True, text=True, errors="replace", timeout=900)
        assert result.returncode == 0, result.stderr[-5000:]
        assert result.stdout.count("\n") == len(files)
        assert " write " in result.stdout


@pytest.fixture(scope="module")
def refusing(cares134, tmp_path_factory):
    """tests/c/ares_parse_refusing.c: an LD_PRELOAD ares_dns_parse that
    refuses the ID in $ARES_REFUSE_ID and passes the rest to c-ares's."""
    return cares_source.build_refusing_parser(cares134, tmp_path_factory.mktemp("refusing"))


def test_a_preloaded_parser_is_the_one_the_driver_calls(ares_dnsrec, refusing, statuses,
                                                        monkeypatch):
    files = require_corpus("good")
    own = cares_source.run_driver(ares_dnsrec, files)
    # passing every call through: the same lines
    assert cares_source.run_driver(ares_dnsrec, files, preload=refusing) == own
    # refusing one ID: exactly that message differs, as the stub says
    monkeypatch.setenv("ARES_REFUSE_ID", "2020")
    preloaded = cares_source.run_driver(ares_dnsrec, files, preload=refusing)
    differ = {p.name: (own[p], preloaded[p]) for p in files if own[p] != preloaded[p]}
    a = next(p for p in files if p.name == "cares_a_www_google.bin")
    assert differ == {a.name: (own[a], (statuses["ARES_EBADRESP"], None))}
    assert own[a][0] == 0 and a.read_bytes()[:2] == b"\x20\x20"
