"""The NSS test harness (nss_env.py) with glibc's own ``dns`` module
(``hosts: files dns``): what getent prints from the responder's zone, the
queries glibc makes (search list, TCP after a truncated reply), the forms
of a zone entry, the commands' own results, a private ld.so.cache that
dlopen by bare name reads, in a setuid program too, and this machine's /etc
left as it was."""

import sys
from pathlib import Path

import dns.flags
import dns.message
import dns.rcode
import pytest

import nss_env
from conftest import NOBODY, require_program, setuid_root_copy
from dnsshim_build import pipeline
from nss_env import Query, getent

WWW = {("www.example.test", "A"): ["www.example.test. 300 IN A 192.0.2.1"]}

#: The probe library's soname, and what its function returns.
PROBE = "libnssenvprobe.so.2"
ANSWER = 42


def _udp(*queries):
    return [Query("udp", qname, qtype) for qname, qtype in queries]


def test_getent_hosts_prints_the_address_and_the_name(tmp_path):
    """gethostbyname2 asks AAAA first (NODATA here: the name owns an A),
    then A, and getent prints the address padded to 15 columns, a space, the
    name."""
    result = nss_env.run(tmp_path, WWW, [getent("hosts", "www.example.test")])
    [done] = result.commands
    assert (done.returncode, done.stdout, done.stderr) == (
        0, "192.0.2.1       www.example.test\n", "")
    assert result.queries == _udp(("www.example.test", "AAAA"), ("www.example.test", "A"))


def test_getent_ahostsv4_prints_two_addresses_in_the_answers_order(tmp_path):
    """Two A records, the higher address first: getaddrinfo keeps that
    order (no route to either), each address once per socket type, the
    canonical name on the first line only; one A query."""
    zone = {("two.example.test", "A"): ["two.example.test. 300 IN A 192.0.2.2",
                                        "two.example.test. 300 IN A 192.0.2.1"]}
    result = nss_env.run(tmp_path, zone, [getent("ahostsv4", "two.example.test")])
    [done] = result.commands
    assert done.returncode == 0
    assert done.stdout == ("192.0.2.2       STREAM two.example.test\n"
                           "192.0.2.2       DGRAM  \n"
                           "192.0.2.2       RAW    \n"
                           "192.0.2.1       STREAM \n"
                           "192.0.2.1       DGRAM  \n"
                           "192.0.2.1       RAW    \n")
    assert result.queries == _udp(("two.example.test", "A"))


def test_a_cname_chain_names_its_last_target(tmp_path):
    """www -> a -> b, b's A: the hostent's name is b, its aliases the
    asked name then a, in that order."""
    zone = {("www.example.test", "A"): ["www.example.test. 300 IN CNAME a.example.test.",
                                        "a.example.test. 300 IN CNAME b.example.test.",
                                        "b.example.test. 300 IN A 192.0.2.7"]}
    result = nss_env.run(tmp_path, zone, [getent("hosts", "www.example.test")])
    [done] = result.commands
    assert (done.returncode, done.stdout) == (
        0, "192.0.2.7       b.example.test www.example.test a.example.test\n")


def test_nxdomain_is_status_2_and_nothing_printed(tmp_path):
    """A name the zone does not have: NXDOMAIN with the apex's SOA, for
    AAAA then A; getent prints nothing and exits 2."""
    result = nss_env.run(tmp_path, WWW, [getent("hosts", "nothere.example.test")])
    [done] = result.commands
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "")
    assert result.queries == _udp(("nothere.example.test", "AAAA"),
                                  ("nothere.example.test", "A"))
    nxdomain = dns.message.from_wire(result.received[-1].reply)
    assert nxdomain.rcode() == dns.rcode.NXDOMAIN
    assert [rrset.to_text() for rrset in nxdomain.authority] == [
        "example.test. 3600 IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 60"]


def test_a_truncated_udp_reply_is_asked_again_over_tcp(tmp_path):
    """tc_udp: the A query over UDP gets the header and question with TC
    set, glibc asks again over TCP and prints the TCP reply's address."""
    zone = {("www.example.test", "A"): nss_env.records(
        ["www.example.test. 300 IN A 192.0.2.1"], tc_udp=True)}
    result = nss_env.run(tmp_path, zone, [getent("hosts", "www.example.test")])
    [done] = result.commands
    assert (done.returncode, done.stdout) == (0, "192.0.2.1       www.example.test\n")
    assert result.queries == [Query("udp", "www.example.test", "AAAA"),
                              Query("udp", "www.example.test", "A"),
                              Query("tcp", "www.example.test", "A")]
    truncated = dns.message.from_wire(result.received[1].reply)
    assert truncated.flags & dns.flags.TC and not truncated.answer
    assert [str(q.name) for q in truncated.question] == ["www.example.test."]


def test_the_search_list_is_tried_before_the_name_as_it_is(tmp_path):
    """``search example.test`` and a name without a dot (fewer than ndots
    1): for AAAA, www.example.test (NODATA) then www itself (NXDOMAIN);
    then for A, www.example.test, which answers."""
    result = nss_env.run(tmp_path, WWW, [getent("hosts", "www")],
                         resolv="search example.test\nnameserver 127.0.0.1\n")
    [done] = result.commands
    assert (done.returncode, done.stdout) == (0, "192.0.2.1       www.example.test\n")
    assert result.queries == _udp(("www.example.test", "AAAA"), ("www", "AAAA"),
                                  ("www.example.test", "A"))


def test_raw_and_dropped_entries_and_edns(tmp_path):
    """A raw reply (built with ID 0) goes out with the query's ID and is
    taken; a dropped query gets nothing, and glibc gives up after its
    timeout; with ``options edns0`` the queries carry OPT and the records
    reply has one too."""
    wire = nss_env.reply_wire("raw.example.test", "A", ["raw.example.test. 60 IN A 192.0.2.3"])
    zone = {**WWW, ("raw.example.test", "A"): nss_env.raw(wire),
            ("drop.example.test", "A"): nss_env.DROP}
    result = nss_env.run(tmp_path, zone, [getent("ahostsv4", "raw.example.test"),
                                          getent("ahostsv4", "drop.example.test"),
                                          getent("ahostsv4", "www.example.test")],
                         resolv="nameserver 127.0.0.1\noptions edns0 timeout:1 attempts:1\n")
    raw, dropped, www = result.commands
    assert (raw.returncode, raw.stdout.splitlines()[0]) == (
        0, "192.0.2.3       STREAM raw.example.test")
    assert (dropped.returncode, dropped.stdout) == (2, "")
    assert 1 <= dropped.seconds < 5
    assert (www.returncode, www.stdout.splitlines()[0]) == (
        0, "192.0.2.1       STREAM www.example.test")
    assert result.queries == _udp(("raw.example.test", "A"), ("drop.example.test", "A"),
                                  ("www.example.test", "A"))
    queries = [dns.message.from_wire(r.wire) for r in result.received]
    assert [(q.edns, q.payload) for q in queries] == [(0, 1200)] * 3
    raw_reply, dropped_reply, www_reply = (r.reply for r in result.received)
    assert raw_reply == queries[0].id.to_bytes(2, "big") + wire[2:]
    assert dropped_reply is None
    assert dns.message.from_wire(www_reply).edns == 0


def test_commands_get_their_stdin_environment_user_and_timeout(tmp_path):
    """Each command's own stdin, environment and uid; a command past its
    timeout is killed and says so; the host name has no dot."""
    sh = "/bin/sh"
    result = nss_env.run(tmp_path, {}, [
        nss_env.command(["cat"], stdin="fed\n"),
        nss_env.command([sh, "-c", "echo $NSS_ENV_X; id -u; id -G; exit 3"], user=NOBODY,
                        env={**nss_env.ENV, "NSS_ENV_X": "x"}),
        nss_env.command(["sleep", "10"], timeout=0.2),
        nss_env.command(["hostname"]),
        nss_env.command(["/nonexistent/nss-env"]),
    ])
    fed, user, slept, hostname, missing = result.commands
    assert (fed.returncode, fed.stdout) == (0, "fed\n")
    assert (user.returncode, user.stdout) == (3, f"x\n{NOBODY}\n{NOBODY}\n")
    assert (slept.returncode, slept.timed_out) == (None, True)
    assert hostname.stdout == "nss-env\n"
    assert missing.returncode == 127
    assert result.queries == []


# ---- the private ld.so.cache -------------------------------------------------------------


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """The probe library (``libnssenvprobe.so.2``, whose
    nssenvprobe_answer() returns 42) in a folder of its own, and a C
    program that dlopens it by that bare name: (folder, program)."""
    where = tmp_path_factory.mktemp("probe")
    (where / "lib").mkdir()
    (where / "probe.c").write_text(f"int nssenvprobe_answer(void) {{ return {ANSWER}; }}\n")
    pipeline.compile_program([where / "probe.c"], where / "lib" / PROBE, libraries=(),
                             flags=("-shared", "-fPIC", f"-Wl,-soname,{PROBE}"))
    (where / "dlopen.c").write_text(
        "#include <dlfcn.h>\n#include <stdio.h>\n"
        "int main(void) {\n"
        f'    void *h = dlopen("{PROBE}", RTLD_NOW);\n'
        '    if (!h) { printf("%s\\n", dlerror()); return 1; }\n'
        '    int (*f)(void) = (int (*)(void))dlsym(h, "nssenvprobe_answer");\n'
        '    printf("%d\\n", f());\n'
        "    return 0;\n}\n")
    program = pipeline.compile_program([where / "dlopen.c"], where / "dlopen", libraries=())
    return where / "lib", program


def _system_files():
    return {path: Path(path).read_bytes()
            for path in ("/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/hosts",
                         "/etc/ld.so.cache", "/var/cache/ldconfig/aux-cache")
            if Path(path).exists()}


def test_a_private_ld_so_cache_is_what_dlopen_by_name_reads(probe, tmp_path):
    """With library_dirs, Python's ctypes.CDLL(bare soname) loads the probe
    from the private cache; without, it is not found.  The machine's /etc
    (nsswitch.conf, resolv.conf, hosts, ld.so.cache) and ldconfig's
    auxiliary cache are byte for byte what they were."""
    lib, _ = probe
    before = _system_files()
    assert "/etc/nsswitch.conf" in before and "/etc/resolv.conf" in before
    load = nss_env.command([sys.executable, "-I", "-c",
                            f"import ctypes; print(ctypes.CDLL({PROBE!r}).nssenvprobe_answer())"])
    found = nss_env.run(tmp_path, WWW, [load, getent("hosts", "www.example.test")],
                        library_dirs=[lib])
    assert [(c.returncode, c.stdout) for c in found.commands] == [
        (0, f"{ANSWER}\n"), (0, "192.0.2.1       www.example.test\n")]
    [missing] = nss_env.run(tmp_path, WWW, [load]).commands
    assert missing.returncode == 1
    assert f"OSError: {PROBE}: cannot open shared object file" in missing.stderr
    assert _system_files() == before


def test_a_setuid_program_finds_the_library_through_the_private_cache(probe, tmp_path):
    """A setuid-root program that dlopens the probe by name: run by root,
    LD_LIBRARY_PATH finds it; run by an unprivileged user (secure
    execution) LD_LIBRARY_PATH is ignored and it is not found, and the
    private cache of library_dirs finds it."""
    require_program("setpriv", "util-linux")
    lib, program = probe
    env = {**nss_env.ENV, "LD_LIBRARY_PATH": str(lib)}
    with setuid_root_copy(program) as setuid:
        without = nss_env.run(tmp_path, {}, [nss_env.command([setuid], env=env),
                                             nss_env.command([setuid], env=env, user=NOBODY)])
        [cached] = nss_env.run(tmp_path, {}, [nss_env.command([setuid], user=NOBODY)],
                               library_dirs=[lib]).commands
    root, user = without.commands
    assert (root.returncode, root.stdout) == (0, f"{ANSWER}\n")
    assert (user.returncode, user.stdout) == (
        1, f"{PROBE}: cannot open shared object file: No such file or directory\n")
    assert (cached.returncode, cached.stdout) == (0, f"{ANSWER}\n")
