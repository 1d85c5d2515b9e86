"""The Python host program of the guest tests, shared by every form the
library ships in (test_python_host.py: the venv build, the bundle, a prefix
install; test_debian.py: the Debian package; test_firmware_debian13.py: the
library built on Debian 13), and what a guest must leave as it was.

HOST_PROGRAM runs in the host's python with one argument, a JSON object:
import_dns / import_pycares (the program's own, imported first), lib (the
library to load with ctypes), statuses (message files: both call modes on
each), threads, driver and driver_args (a C test program compiled as a
shared object whose main() is dnsshim_driver_main, run in the program's
process), report (where the JSON report goes).
"""

# The Python program: loads libdnsshim with ctypes, calls it on every
# message, runs a C driver in this process, and reports what it saw of its
# own import state before and after.  Prints nothing itself: fd 1 is the
# driver's.
HOST_PROGRAM = r'''
import ctypes, importlib.util, json, sys, sysconfig
args = json.loads(sys.argv[1])
if args.get("import_dns"):
    import dns.version  # the program's own dnspython (Debian's)
if args.get("import_pycares"):
    import pycares  # the program's own (Debian's)

WATCHED = ("dns", "shim", "_cffi_backend", "cffi")

def spec_origin(name):
    try:
        spec = importlib.util.find_spec(name)
    except Exception as exc:
        return f"error {type(exc).__name__}"
    return spec.origin if spec is not None else None

def dns_version():
    module = sys.modules.get("dns.version")
    return None if module is None else [module.version, module.__file__]

STDLIB = sysconfig.get_paths()["stdlib"]

def snapshot():
    specs = {name: spec_origin(name) for name in WATCHED}
    return {
        "path": list(sys.path),
        "meta_path": [repr(f) for f in sys.meta_path],
        "path_hooks": [repr(h) for h in sys.path_hooks],
        # less the standard library's packages, which are cached as imported
        "importer_cache": sorted(p for p in sys.path_importer_cache
                                 if not p.startswith(STDLIB + "/")),
        "specs": specs,
        "dns": dns_version(),
        "backend": getattr(sys.modules.get("_cffi_backend"), "__version__", None),
        "pycares": [getattr(sys.modules.get("pycares"), "__version__", None),
                    getattr(sys.modules.get("pycares"), "__file__", None)],
    }

before, modules = snapshot(), dict(sys.modules)
statuses = {}
if args.get("lib"):
    lib = ctypes.CDLL(args["lib"])

    class Callbacks(ctypes.Structure):  # dns_shim_callbacks, every callback NULL
        _fields_ = [("struct_size", ctypes.c_uint32), ("sections", ctypes.c_uint32),
                    ("ctx", ctypes.c_void_p)] + [(f"cb{i}", ctypes.c_void_p) for i in range(14)]

    callbacks = Callbacks(ctypes.sizeof(Callbacks), 7)
    for fn in (lib.process_dns_response, lib.dns_shim_process):
        fn.restype = ctypes.c_int32
    def call_all(into):
        for path in args.get("statuses", []):
            wire = open(path, "rb").read()
            into[path] = [lib.process_dns_response(wire, len(wire)),
                          lib.dns_shim_process(wire, len(wire), ctypes.byref(callbacks))]
    if args.get("threads"):  # the first calls made together, from every thread
        import threading
        barrier, seen = threading.Barrier(args["threads"]), []
        def worker():
            into = {}
            barrier.wait()
            call_all(into)
            seen.append(into)
        threads = [threading.Thread(target=worker) for _ in range(args["threads"])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        statuses["threads agree"] = all(into == seen[0] for into in seen) and len(seen)
        statuses.update(seen[0])
    else:
        call_all(statuses)
if args.get("driver"):
    driver = ctypes.CDLL(args["driver"])
    argv = [b"driver"] + [a.encode() for a in args["driver_args"]]
    rc = driver.dnsshim_driver_main(len(argv), (ctypes.c_char_p * len(argv))(*argv))
    ctypes.CDLL(None).fflush(None)
    statuses["driver rc"] = rc
after = snapshot()
report = {
    "version": sys.version.split()[0],
    "statuses": statuses,
    "before": before,
    "after": after,
    "added": sorted(set(sys.modules) - set(modules)),
    "replaced": sorted(n for n in modules if sys.modules.get(n) is not modules[n]),
    "stdlib": sorted(sys.stdlib_module_names),
}
with open(args["report"], "w") as f:
    json.dump(report, f)
'''


#: The library's own modules in the program's sys.modules: cffi registers the
#: modules it builds (the library's, by their own names).
OWN_MODULES = {"_dnsshim_cffi", "_dnsshim_cffi.lib", "_dnsshim_ares_cffi",
               "_dnsshim_ares_cffi.lib"}


def assert_guest(report):
    """The program's import state is as it was, but for standard modules and
    the library's own cffi modules."""
    before, after = report["before"], report["after"]
    for key in ("path", "meta_path", "path_hooks", "importer_cache", "specs", "dns", "backend",
                "pycares"):
        assert after[key] == before[key], key
    assert report["replaced"] == []
    stdlib = set(report["stdlib"])
    foreign = [n for n in report["added"] if n.partition(".")[0] not in stdlib]
    assert set(foreign) <= OWN_MODULES, foreign
    assert not [n for n in report["added"]
                if n.partition(".")[0] in ("dns", "shim", "_cffi_backend", "cffi")
                or n.startswith("_dnsshim_guest")]


def c_statuses(stdout: str) -> list:
    """The statuses a C test driver (tests/c/dnsshim_test.c) printed, in order."""
    return [line.split()[1] for line in stdout.splitlines() if line.startswith("status ")]
