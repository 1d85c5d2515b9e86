"""The suite's tiers, by module: the quick tier, and the modules whose
subject depends on the CPython that runs pytest (the second CPython's pass).

    python -m pytest -m quick       the quick tier (tests/README.md: what it
                                    touches, and its time)
    python -m pytest -m cpython     what the newest CPython's pass of .ci/run
                                    runs again
    python -m pytest                everything

conftest.py marks every test from these two tables (``quick`` and
``cpython``); test_layout.py checks that every module is in CPYTHON with its
reason, so a new module says whether its subject depends on the CPython.
A test inside a ``cpython`` module that runs another Python (Debian's
python3, a firmware object's frozen 3.11) is marked ``python_independent``
and left out of that pass.
"""

#: module -> (whether its subject depends on the CPython running pytest, why).
#: The libraries the session builds embed that CPython, so every test of the
#: library touches it; a module is in when the CPython is what it is about:
#: the embedded runtime's start, imports, memory, threads and fork, the
#: Python API and the decoder on that CPython, guest mode, the bundle and the
#: installs made with it.  Out: what C, the build's tables or another
#: CPython decide, and the long searches whose subject is dnspython's
#: verdicts or the C side (run once, on the oldest CPython).
CPYTHON = {
    "test_abi_layout": (False, "struct sizes and offsets: the C compiler's"),
    "test_agreement": (False, "agreement with dnspython's verdicts: the decoder's logic, "
                              "which test_decode and test_c_programs run on each CPython"),
    "test_any_process": (True, "the embedded runtime started in processes it does not "
                               "choose: libpython's scope, its start under a refusing "
                               "allocator"),
    "test_api": (True, "the Python API runs in the CPython that imports it"),
    "test_ares": (False, "libdnsshim_ares's C layer against c-ares 1.18"),
    "test_ares_dns_parse": (False, "ares_dns_parse's C records against c-ares 1.34"),
    "test_ares_dnsrec": (False, "c-ares 1.34's own parser"),
    "test_arestest": (False, "c-ares's own test suite"),
    "test_benchmark": (False, "the benchmark's harness, in smoke mode"),
    "test_bind": (False, "a real server's replies through the C tool"),
    "test_build_prerequisites": (False, "the build's one-line refusals, simulated"),
    "test_bundle": (True, "the bundle carries the CPython that built it"),
    "test_c_analysis": (False, "gcc's warnings and analyser on the C"),
    "test_c_programs": (True, "what a C program sees from the runtime of that CPython: "
                              "every field of every message, a minimal environment"),
    "test_cmake": (False, "CMake's find_package over the installed files"),
    "test_debian": (False, "Debian's own python3 in Debian's packages"),
    "test_decode": (True, "the decoder runs on the CPython that runs it"),
    "test_examples": (False, "the examples' C, built as a user builds them"),
    "test_firmware": (False, "Debian's python3.11 frozen, whatever runs the build"),
    "test_firmware_debian13": (False, "Debian 13's python3.13, in its own root"),
    "test_fuzz": (False, "coverage-guided search of the decoder: its logic, once"),
    "test_glibc_resolv": (False, "glibc's own resolver tests against the NSS module's C"),
    "test_forms": (True, "what each form made with that CPython has (the virtualenv, the prefix "
                          "install, the bundle), guest mode in it"),
    "test_glue": (True, "the glue runs in the CPython that imports it"),
    "test_header": (False, "the C headers' one reader against its oracles"),
    "test_history": (False, "history independence: the decoder's design, searched once"),
    "test_install": (True, "pip install into a virtualenv of that CPython"),
    "test_install_layout": (True, "where each installer puts the files of that CPython's "
                                  "build"),
    "test_kinds": (False, "the table of kinds against the header"),
    "test_last_error": (True, "the failure details the runtime of that CPython writes"),
    "test_layout": (False, "the tree's layout and imports"),
    "test_libfuzzer": (False, "the C side under libFuzzer"),
    "test_library": (True, "the C ABI in a process that runs that CPython: the guest"),
    "test_man": (False, "the manual pages, from the header"),
    "test_memory": (True, "the runtime's memory on the host's allocator: that CPython's "
                          "allocations"),
    "test_nss": (False, "glibc's NSS module through glibc: the C side and glibc's resolver; "
                        "Debian's python3 as a host"),
    "test_nss_sanitizers": (False, "the NSS module's C under ASan, UBSan and TSan"),
    "test_nss_env": (False, "the NSS test harness: namespaces, private /etc, a responder"),
    "test_optional_tools": (False, "skips and CI's requirements"),
    "test_parallelism": (False, "the pool of worker images: Debian's python3.11 frozen"),
    "test_plan_checks": (False, "the C checks of what Python hands it"),
    "test_prefix_install": (True, "a prefix install copies that CPython's Python side"),
    "test_pycares": (False, "pycares 5 and c-ares 1.34 with libdnsshim_ares"),
    "test_python_host": (True, "the library as a guest of that CPython"),
    "test_races": (False, "the C side under ThreadSanitizer"),
    "test_rdtable": (False, "the parser table against dnspython's modules"),
    "test_readme": (False, "the README's two commands"),
    "test_reply": (True, "the reply check through the runtime of that CPython"),
    "test_sanitizers": (False, "the C side under ASan and UBSan"),
    "test_service_faults": (False, "dnsshimd's C under faulty clients: its loop, limits and "
                                   "memory; the parse it serves is test_c_programs'"),
    "test_service_units": (False, "dnsshimd's systemd units: their text and systemd-analyze's "
                                  "rating"),
    "test_startup": (True, "what the embedded interpreter of that CPython imports at start"),
    "test_startup_failures": (True, "how an installation of that CPython can be wrong"),
    "test_status": (False, "the status table"),
    "test_stress": (True, "threads and fork against that CPython's runtime"),
    "test_valgrind_user": (False, "valgrind's suppressions for the library's C"),
    "test_versioning": (False, "1.0 against 1.1: the C ABI"),
    "test_worker": (False, "the worker image: Debian's python3.11 frozen"),
    "test_worst_case": (False, "the bound on work per octet: the decoder's design"),
    "test_service": (False, "a call through the parse service against the same call in the "
                            "process: the wire format and the client's C, on one CPython"),
    "test_service_ares": (False, "libdnsshim_ares through the parse service against the "
                                 "same call in the process: the wire format and the C, on one "
                                 "CPython"),
}

#: The quick tier: each module whole.  Together they touch every area of
#: the library: the decoder, the glue, the tables, the header, the layout,
#: the statuses, the C ABI on the vectors and the malformed set through one
#: build (test_library), the failure details, the Python API and what the
#: runtime imports at start.
QUICK = frozenset({
    "test_abi_layout", "test_api", "test_decode", "test_glue", "test_header", "test_kinds",
    "test_last_error", "test_layout", "test_library", "test_rdtable", "test_startup",
    "test_status",
})
