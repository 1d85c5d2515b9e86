"""libdnsshim in a Python program: a guest, not a tenant.

Loaded into a process that already runs Python, the library runs in that
interpreter with its own copy of its Python side (shim/guest.py): the
program's sys.path and sys.modules stay as they were, and whatever
dnspython the program has imported (or none) the results are those of a C
program.  The host here is Debian's own /usr/bin/python3 (3.11.2), with
Debian's python3-dnspython 2.3.0, python3-pycares 4.3.0 and
python3-cffi-backend 1.15.1; the library is built by this checkout's Python
(cffi 2.1.1, dnspython 2.9) as a user builds it.

* a ctypes program calls process_dns_response and dns_shim_process on every
  test message, and runs the C test driver (tests/c/dnsshim_test.c, compiled as
  a shared object) in its own process: every field and status is what the
  same driver prints in a C program;
* the same with Debian's dnspython imported first, and in a host where no
  cffi backend is importable at all (python3 -S);
* pycares with libdnsshim_ares in LD_PRELOAD looks names up from a DNS
  server on 127.0.0.1 run by the test: the results c-ares's own parsers give,
  no ARES_ETIMEOUT; and c-ares's classic parsers (the differential driver,
  tests/c/ares_every_parser.c) print in that host what they print in a C one;
* each host's sys.path, sys.meta_path, its modules (none replaced, none of
  dns*, shim*, _cffi_backend added: only the standard library and the
  library's own cffi modules) and dns.__version__, before and after;
* what cannot be coped with is refused once, with one line: a host of another
  CPython minor version, an installation the library cannot load from.

Debian's python3 of the build's minor version is needed (and pycares for its
tests, c-ares's headers for the ares driver): without them these tests skip,
under CI=true they fail.
"""

import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import dns.message
import dns.rdatatype
import dns.rrset
import dns.version
import pytest

from dnsshim_build import pipeline
import cprograms
import malformed
import vectors
from conftest import ROOT, require_cares, require_tool
from guest_host import HOST_PROGRAM, OWN_MODULES, assert_guest, c_statuses

DEBIAN_PYTHON = "/usr/bin/python3"
MINOR = sysconfig.get_python_version()
TESTS_C = ROOT / "tests" / "c"


def _python_minor(python):
    result = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True, timeout=60)
    return result.stdout.strip() if result.returncode == 0 else None


def _has_module(python, name, *flags):
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is None)"
    return subprocess.run([python, *flags, "-c", code], capture_output=True,
                          timeout=60).returncode == 0


@pytest.fixture(scope="module")
def host():
    """Debian's python3, of the minor version the library embeds."""
    found = os.path.exists(DEBIAN_PYTHON) and _python_minor(DEBIAN_PYTHON) == MINOR
    if os.path.exists(DEBIAN_PYTHON) and not found:
        pytest.skip(f"{DEBIAN_PYTHON} is not CPython {MINOR} (the library embeds {MINOR}; "
                    "test_another_minor_is_refused_once covers that host)")
    require_tool(f"Debian's python3 (CPython {MINOR})", "python3", found)
    require_tool("Debian's dnspython", "python3-dnspython", _has_module(DEBIAN_PYTHON, "dns"))
    return DEBIAN_PYTHON


def _driver(built, source, name, libs, extra=()):
    """A C test program compiled as a shared object whose main() is
    dnsshim_driver_main(), to run inside a Python program."""
    out = built.dir / name
    if not out.exists():
        pipeline.compile_program([source], out, against=built.dir, libraries=libs,
                                  cflags=("-shared", "-fPIC", "-Dmain=dnsshim_driver_main", *extra))
    return out


@pytest.fixture(scope="module")
def messages(tmp_path_factory):
    """Every test message as a file: the vectors, then the malformed cases."""
    folder = tmp_path_factory.mktemp("messages")
    files = {}
    for name in vectors.NAMES:
        files[f"vector-{name}"] = vectors.wire(name)
    for name, (wire, _) in sorted(malformed.CASES.items()):
        files[f"malformed-{name}"] = wire
    paths = []
    for name, wire in files.items():
        path = folder / f"{name}.bin"
        path.write_bytes(wire)
        paths.append(str(path))
    return paths


def run_host(python, tmp_path, args, flags=(), env=None, name="report"):
    """Runs HOST_PROGRAM in ``python``; returns (stdout, stderr, report)."""
    args = dict(args, report=str(tmp_path / f"{name}.json"))
    result = subprocess.run([python, *flags, "-c", HOST_PROGRAM, json.dumps(args)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path,
                            env=dict(os.environ if env is None else env))
    assert result.returncode == 0, result.stderr[-3000:]
    with open(args["report"], encoding="utf-8") as f:
        return result.stdout, result.stderr, json.load(f)


# ---- a ctypes program ---------------------------------------------------------------


@pytest.fixture(scope="module")
def test_driver(built):
    return _driver(built, TESTS_C / "dnsshim_test.c", "libdnsshim_test_driver.so", ["dnsshim"])


@pytest.fixture(scope="module")
def c_host_output(built, messages):
    """What the C test driver prints in a C program (the library's own
    interpreter), per mode."""
    out = {}
    for mode in ([], ["--registered"]):
        result = subprocess.run([str(built.test_prog), *mode, *messages], capture_output=True,
                                text=True, timeout=600)
        assert result.stderr == ""
        out[tuple(mode)] = result.stdout
    return out


@pytest.mark.parametrize("import_dns", [False, True], ids=["no-dns", "debian-dns-first"])
@pytest.mark.parametrize("mode", [[], ["--registered"]], ids=["dns_shim_process", "registered"])
@pytest.mark.python_independent
def test_ctypes_program_same_as_c_host(host, built, messages, test_driver, c_host_output,
                                       tmp_path, import_dns, mode):
    stdout, stderr, report = run_host(host, tmp_path, {
        "import_dns": import_dns, "lib": str(built.dir / build_soname()),
        "statuses": messages, "driver": str(test_driver), "driver_args": [*mode, *messages]})
    assert stderr == ""
    assert report["version"].startswith(MINOR + ".")
    # Every field of every message, through the C ABI, as in a C program.
    assert stdout == c_host_output[tuple(mode)]
    assert report["statuses"]["driver rc"] == 0
    # The direct calls: the statuses the C driver printed (no callbacks to
    # stop them) and the ones the malformed cases expect.
    expected = dict(zip(messages, map(int, c_statuses(c_host_output[()]))))
    calls = {k: v for k, v in report["statuses"].items() if k != "driver rc"}
    assert len(calls) == len(messages)
    for path, (registered, process) in calls.items():
        assert registered == process == expected[path], path
        name = Path(path).stem
        if name.startswith("malformed-"):
            assert process == malformed.CASES[name[len("malformed-"):]][1]
    assert_guest(report)
    if import_dns:
        assert report["after"]["dns"][0] == report["before"]["dns"][0] != vectors_dns_version()


def build_soname():
    from dnsshim_build import pipeline

    return pipeline.DNSSHIM.soname


def vectors_dns_version():
    return dns.version.version


@pytest.mark.python_independent
def test_host_without_any_cffi_backend(host, built, messages, test_driver, c_host_output,
                                       tmp_path):
    """python3 -S: no site-packages, so no _cffi_backend (nor dnspython) is
    importable in the program; the library brings its own."""
    assert not _has_module(host, "_cffi_backend", "-S")
    stdout, stderr, report = run_host(host, tmp_path, {
        "lib": str(built.dir / build_soname()), "statuses": messages,
        "driver": str(test_driver), "driver_args": messages}, flags=["-S"])
    assert stderr == ""
    assert stdout == c_host_output[()]
    assert report["before"]["specs"]["_cffi_backend"] is None
    assert_guest(report)


@pytest.mark.python_independent
def test_threads_start_it_together(host, built, messages, c_host_output, tmp_path):
    """Eight threads of the program make their first calls at once: the
    runtime starts once, the private imports at call time (dnspython's
    RDATA modules) are made once, every thread gets the C host's statuses."""
    _, stderr, report = run_host(host, tmp_path, {
        "import_dns": True, "lib": str(built.dir / build_soname()), "statuses": messages,
        "threads": 8})
    assert stderr == ""
    assert report["statuses"].pop("threads agree") == 8
    expected = dict(zip(messages, map(int, c_statuses(c_host_output[()]))))
    assert {path: pair[0] for path, pair in report["statuses"].items()} == expected
    assert all(a == b for a, b in report["statuses"].values())
    assert_guest(report)


def _guest_answers_as_the_c_host(host, lib, messages, c_host_output, tmp_path):
    """The library at lib, loaded into the program (which imported its own
    dns first): both call modes give the C host's statuses, and it is a
    guest (assert_guest)."""
    _, stderr, report = run_host(host, tmp_path, {
        "import_dns": True, "lib": str(lib), "statuses": messages})
    assert stderr == ""
    expected = dict(zip(messages, map(int, c_statuses(c_host_output[()]))))
    assert {path: pair for path, pair in report["statuses"].items()} == \
        {path: [status, status] for path, status in expected.items()}
    assert_guest(report)


@pytest.mark.python_independent
def test_a_bundles_library_is_a_guest_too(host, messages, c_host_output, tmp_path_factory,
                                          tmp_path):
    """The library of a bundle (python -m shim bundle) loaded into the
    program: its own copy comes from the bundle's folder (.pyc files only)."""
    where = tmp_path_factory.mktemp("bundle") / "dnsshim"
    subprocess.run([sys.executable, "-m", "shim", "bundle", str(where)], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    _guest_answers_as_the_c_host(host, where / "lib" / build_soname(), messages, c_host_output,
                                 tmp_path)


@pytest.mark.python_independent
def test_a_prefix_installs_library_is_a_guest_too(host, messages, c_host_output,
                                                  tmp_path_factory, tmp_path):
    """The library of a prefix install (build_ffi.py --prefix) loaded into the
    program: its own copy of its Python side comes from the prefix's
    lib/dnsshim/python, and the program's path and modules stay as they were."""
    where = tmp_path_factory.mktemp("prefix") / "usr"
    subprocess.run([sys.executable, str(ROOT / "build_ffi.py"), "--prefix", str(where)],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    _guest_answers_as_the_c_host(host, where / "lib" / build_soname(), messages, c_host_output,
                                 tmp_path)


@pytest.mark.python_independent
def test_the_program_imports_what_it_imported_before(host, built, tmp_path):
    """After the library ran, the program's own imports find what they found
    before: Debian's dnspython, no cffi, no shim."""
    _, stderr, report = run_host(host, tmp_path, {
        "lib": str(built.dir / build_soname()), "statuses": [str(_good(tmp_path))]})
    assert stderr == ""
    specs = report["after"]["specs"]
    assert specs == report["before"]["specs"]
    assert specs["dns"].startswith("/usr/lib/python3/dist-packages/")
    assert specs["shim"] is None
    # cffi: Debian's python3-cffi, where it is installed; never the library's.
    assert specs["cffi"] is None or specs["cffi"].startswith("/usr/lib/python3/")
    assert list(report["statuses"].values()) == [[0, 0]]


def _good(tmp_path):
    path = tmp_path / "good.bin"
    path.write_bytes(malformed.GOOD)
    return path


# ---- pycares, with libdnsshim_ares in place of c-ares's parsers -----------------------

#: (name, type): the answers the test's DNS server gives.
ZONE = {
    ("a.example.", "A"): ["192.0.2.1", "192.0.2.2"],
    ("a.example.", "AAAA"): ["2001:db8::1"],
    ("mx.example.", "MX"): ["10 mail.example.", "20 mail2.example."],
    ("txt.example.", "TXT"): ['"v=spf1 -all"', '"two" "strings"'],
    ("srv.example.", "SRV"): ["1 2 5060 sip.example."],
    ("naptr.example.", "NAPTR"): ['100 10 "s" "SIP+D2U" "" _sip._udp.example.'],
    ("ns.example.", "NS"): ["ns1.example.", "ns2.example."],
    ("cname.example.", "CNAME"): ["target.example."],
    ("1.2.0.192.in-addr.arpa.", "PTR"): ["host.example."],
    ("soa.example.", "SOA"): ["ns1.example. hostmaster.example. 2024010101 7200 3600 1209600 300"],
    ("caa.example.", "CAA"): ['0 issue "ca.example.net"'],
}
#: What pycares asks: every name of the zone, and one with no data.
QUERIES = [(name.rstrip("."), rdtype) for name, rdtype in ZONE] + [("nothing.example", "A")]


def answer(query: dns.message.Message) -> dns.message.Message:
    response = dns.message.make_response(query)
    question = query.question[0]
    key = (question.name.to_text(), dns.rdatatype.to_text(question.rdtype))
    if key in ZONE:
        response.answer.append(dns.rrset.from_text_list(question.name, 300, "IN", key[1],
                                                        ZONE[key]))
    return response


@pytest.fixture(scope="module")
def dns_server():
    """A DNS server on 127.0.0.1 answering from ZONE, for this module's tests:
    (port, the responses it sent)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.2)
    stop, sent = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                data, peer = sock.recvfrom(4096)
            except socket.timeout:
                continue
            try:
                wire = answer(dns.message.from_wire(data)).to_wire()
            except Exception:
                continue
            sent.append(wire)
            sock.sendto(wire, peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1], sent
    stop.set()
    thread.join(5)
    sock.close()


PYCARES_PROGRAM = r'''
import json, select, sys
args = json.loads(sys.argv[1])
if args["import_dns"]:
    import dns.version
import pycares

def state():
    return {"path": list(sys.path), "modules": {n: id(m) for n, m in sys.modules.items()},
            "dns": getattr(sys.modules.get("dns.version"), "version", None),
            "backend": [sys.modules["_cffi_backend"].__version__,
                        sys.modules["_cffi_backend"].__file__]}

def canon(r):
    slots = sorted({s for c in type(r).__mro__ for s in getattr(c, "__slots__", ())})
    return {s: getattr(r, s).hex() if isinstance(getattr(r, s), bytes) else getattr(r, s)
            for s in slots}

before = state()
channel = pycares.Channel(servers=["127.0.0.1"], udp_port=args["port"], tcp_port=args["port"],
                          timeout=args["timeout"], tries=1)
results = {}
def done(key):
    def callback(result, error):
        if error is not None:
            results[key] = ["error", pycares.errno.errorcode.get(error, error)]
        elif isinstance(result, list):
            results[key] = sorted((canon(r) for r in result), key=repr)
        else:
            results[key] = canon(result)
    return callback
for name, rdtype in args["queries"]:
    channel.query(name, getattr(pycares, "QUERY_TYPE_" + rdtype), done(f"{name} {rdtype}"))
while True:
    read, write = channel.getsock()
    if not read and not write:
        break
    r, w, _ = select.select(read, write, [], channel.timeout() or 1.0)
    if not r and not w:
        channel.process_fd(pycares.ARES_SOCKET_BAD, pycares.ARES_SOCKET_BAD)
    for fd in r:
        channel.process_fd(fd, pycares.ARES_SOCKET_BAD)
    for fd in w:
        channel.process_fd(pycares.ARES_SOCKET_BAD, fd)
after = state()
added = sorted(set(after["modules"]) - set(before["modules"]))
print(json.dumps({
    "results": results,
    "path_same": before["path"] == after["path"],
    "replaced": sorted(n for n, m in before["modules"].items() if after["modules"].get(n) != m),
    "foreign": [n for n in added if n.partition(".")[0] not in sys.stdlib_module_names],
    "dns": [before["dns"], after["dns"]], "backend": [before["backend"], after["backend"]],
}))
'''

TIMEOUT = 3.0


def run_pycares(host, port, preload=None, import_dns=False):
    env = dict(os.environ)
    if preload:
        env["LD_PRELOAD"] = str(preload)
    result = subprocess.run([host, "-c", PYCARES_PROGRAM, json.dumps({
        "port": port, "timeout": TIMEOUT, "queries": QUERIES, "import_dns": import_dns})],
        capture_output=True, text=True, timeout=120, env=env, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr, json.loads(result.stdout)


@pytest.fixture(scope="module")
def pycares_host(host):
    require_tool("Debian's pycares", "python3-pycares", _has_module(host, "pycares"))
    return host


@pytest.fixture(scope="module")
def cares_reference(pycares_host, dns_server):
    """pycares on c-ares's own parsers (Debian's libcares, no preload)."""
    stderr, out = run_pycares(pycares_host, dns_server[0])
    assert stderr == ""
    assert set(out["results"]) == {f"{n} {t}" for n, t in QUERIES}
    assert out["results"]["nothing.example A"] == ["error", "ARES_ENODATA"]
    assert not [k for k, v in out["results"].items()
                if isinstance(v, list) and v[:1] == ["error"] and k != "nothing.example A"]
    return out


@pytest.mark.parametrize("import_dns", [False, True], ids=["no-dns", "debian-dns-first"])
@pytest.mark.python_independent
def test_pycares_with_the_c_ares_layer_preloaded(pycares_host, built, dns_server,
                                                 cares_reference, import_dns):
    stderr, out = run_pycares(pycares_host, dns_server[0], built.dir / "libdnsshim_ares.so.1",
                              import_dns)
    assert stderr == ""
    assert out["results"] == cares_reference["results"]
    # An answer the layer failed to read would be dropped by c-ares's own
    # resolver, and its lookup would end in ARES_ETIMEOUT (one try): the
    # results above are the reference's, with no timeout among them.
    assert not [k for k, v in out["results"].items() if v == ["error", "ARES_ETIMEOUT"]]
    assert out["path_same"] and out["replaced"] == []
    assert set(out["foreign"]) <= OWN_MODULES
    assert out["dns"][0] == out["dns"][1]
    assert (out["dns"][0] is not None) == import_dns and out["dns"][0] != dns.version.version
    assert out["backend"][0] == out["backend"][1]  # pycares's own _cffi_backend, Debian's


@pytest.fixture(scope="module")
def ares_driver(built):
    require_cares()
    cflags = list(cprograms.cares_flags()[0])  # as the build found it
    return _driver(built, TESTS_C / "ares_every_parser.c", "libares_every_parser_driver.so",
                   ["dnsshim_ares"], cflags)


@pytest.mark.parametrize("import_dns", [False, True], ids=["no-dns", "debian-dns-first"])
@pytest.mark.python_independent
def test_ares_parsers_in_python_host_same_as_c_host(host, built, ares_driver, dns_server,
                                                    tmp_path, import_dns):
    """Every classic parser on every answer of the server, from c-ares's own
    differential driver: in Debian's python3 as in a C program."""
    folder = tmp_path / "answers"
    folder.mkdir()
    files = []
    for i, (name, rdtype) in enumerate(QUERIES):
        query = dns.message.make_query(name, rdtype)
        query.id = i + 1
        path = folder / f"{i:02d}-{name}-{rdtype}.bin"
        path.write_bytes(answer(query).to_wire())
        files.append(str(path))
    c_host = subprocess.run([str(built.dir / "ares_every_parser"), *files], capture_output=True,
                            text=True, timeout=600)
    assert c_host.returncode == 0 and c_host.stderr == ""
    stdout, stderr, report = run_host(host, tmp_path, {
        "import_dns": import_dns, "driver": str(ares_driver), "driver_args": files})
    assert stderr == ""
    assert stdout == c_host.stdout
    assert_guest(report)


# ---- what is refused, once --------------------------------------------------------------


def _other_minor_python():
    """A CPython of another minor version with its symbols exported (Debian's
    python3, or a pyenv one built shared), or None."""
    candidates = [DEBIAN_PYTHON]
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if root.is_dir():
        candidates += [str(p / "bin" / "python3") for p in sorted(root.iterdir())]
    for python in candidates:
        minor = os.path.exists(python) and _python_minor(python)
        if minor and minor != MINOR and tuple(map(int, minor.split("."))) >= (3, 8):
            return python
    return None


REFUSAL_PROGRAM = r'''
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
wire = bytes.fromhex(sys.argv[2])
print([lib.process_dns_response(wire, len(wire)) for _ in range(5)])
'''


def _refused(python, built, env=None):
    result = subprocess.run([python, "-c", REFUSAL_PROGRAM, str(built.dir / build_soname()),
                             malformed.GOOD.hex()], capture_output=True, text=True, timeout=120,
                            env=env, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["[-14,", "-14,", "-14,", "-14,", "-14]"]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_another_minor_is_refused_once(built):
    python = _other_minor_python()
    if python is None:
        pytest.skip(f"no CPython of a minor version other than {MINOR} on this machine")
    line = _refused(python, built)
    minor = _python_minor(python)
    assert re.fullmatch(rf"dnsshim: cannot start: loaded into a program that runs CPython "
                        rf"{re.escape(minor)}\.\d+, but this library embeds CPython {MINOR} and "
                        r"cannot use that interpreter: load a libdnsshim built with a CPython of "
                        r"the program's minor version", line), line


@pytest.mark.python_independent
def test_installation_without_its_packages_is_refused_once(host, built, tmp_path):
    """DNS_SHIM_PYTHON names a Python whose site-packages has neither cffi's
    backend nor dnspython: the library says so, once."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True,
                   capture_output=True, timeout=300)
    env = dict(os.environ, DNS_SHIM_PYTHON=str(bare / "bin" / "python"))
    line = _refused(host, built, env)
    path = f"{ROOT}:{bare}/lib/python{MINOR}/site-packages"
    assert re.fullmatch(rf"dnsshim: cannot start: loaded into a Python program \(CPython "
                        rf"{MINOR}\.\d+\), the library cannot load its own Python side: its cffi "
                        rf"backend cannot be loaded from its own installation \({re.escape(path)}\):"
                        rf" ModuleNotFoundError: No module named '_cffi_backend' in the library's "
                        rf"own installation \({re.escape(path)}\)", line), line


# ---- the loader itself, in this process ---------------------------------------------------


def test_loader_keeps_this_process_as_it_was(tmp_path):
    """shim.guest loads a private copy of shim.glue here too (this interpreter
    already has shim and dns imported): nothing of sys.modules changes, and
    imports at call time inside it resolve to the private copies."""
    from shim import guest

    path = guest.private_path(str(ROOT), sys.executable, MINOR)
    modules, sys_path = dict(sys.modules), list(sys.path)
    g = guest.Guest(path)
    glue = g.import_module("shim.glue")
    rdtable = g.import_module("shim.rdtable")
    assert dict(sys.modules) == modules and sys.path == sys_path
    assert glue is not sys.modules.get("shim.glue")
    assert glue.__name__ == "_dnsshim_guest.shim.glue"
    assert glue.decode.__module__ == "_dnsshim_guest.shim.decode"
    # rdtable's importlib.import_module, at call time: the private dnspython.
    cls = rdtable.implementation(1, 1)
    assert cls.__module__ == "_dnsshim_guest.dns.rdtypes.IN.A"
    assert g.modules["dns.rdtypes.IN.A"].A is cls
    assert "dns.rdtypes.IN.A" not in sys.modules or sys.modules["dns.rdtypes.IN.A"].A is not cls
    # A function-level import inside a private module.
    namespace = {"__builtins__": g.builtins, "__name__": "_dnsshim_guest.probe"}
    exec("def f():\n    import dns.rdata\n    return dns.rdata", namespace)
    assert namespace["f"]() is g.modules["dns.rdata"]
    # dnspython's feature checks ask the private path.
    assert g.version("dnspython") == dns.version.version
    with pytest.raises(ModuleNotFoundError):
        g.version("no-such-distribution")
    assert dict(sys.modules) == modules


#: What a python's own site module puts on sys.path in an isolated
#: interpreter, less the standard library's entries.
SITE_PATH = """
import json, sys, sysconfig
std = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
print(json.dumps([p for p in sys.path
                  if p not in std and not p.endswith((".zip", "/lib-dynload"))]))
"""


def _pythons(tmp_path):
    """{what: python}: Debian's python3.X, plain and in virtual environments
    with and without its site-packages; this checkout's own python and its
    base installation."""
    pythons = {"this": sys.executable}
    if sys.base_prefix != sys.prefix:
        pythons["this base"] = os.path.join(sys.base_prefix, "bin", f"python{MINOR}")
    debian = f"/usr/bin/python{MINOR}"
    if os.path.exists(debian):
        pythons["debian"] = debian
        for name, flags in (("debian venv", []), ("debian venv system", ["--system-site-packages"])):
            where = tmp_path / name.replace(" ", "-")
            subprocess.run([debian, "-m", "venv", "--without-pip", *flags, str(where)],
                           check=True, capture_output=True, timeout=120)
            pythons[name] = str(where / "bin" / "python")
    return pythons


@pytest.mark.python_independent
def test_the_guest_finds_what_its_pythons_site_finds(tmp_path):
    """The guest's private path (shim.guest.site_dirs) holds, in order, the
    directories the library's python's own site module puts on sys.path in
    an isolated interpreter: as a C program's runtime finds its cffi backend
    there (Debian's python3-cffi-backend, in /usr/lib/python3/dist-packages
    for a Debian package's library), a Python program's guest finds it too."""
    from shim import guest

    pythons = _pythons(tmp_path)
    require_tool(f"Debian's python{MINOR}", f"python{MINOR}", "debian" in pythons)
    for what, python in pythons.items():
        result = subprocess.run([python, "-I", "-c", SITE_PATH], capture_output=True, text=True,
                                timeout=120, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert guest.site_dirs(python, MINOR) == json.loads(result.stdout), what
    debian = guest.site_dirs(pythons["debian"], MINOR)
    assert "/usr/lib/python3/dist-packages" in debian
    assert "/usr/lib/python3/dist-packages" in guest.site_dirs(pythons["debian venv system"],
                                                               MINOR)
    assert "/usr/lib/python3/dist-packages" not in guest.site_dirs(pythons["debian venv"], MINOR)
