"""What each install form has of 1.3's features: the expected matrix, written
once (EXPECTED), and how what a form has is observed, shared by
tests/test_forms.py (the virtualenv, the prefix install, the bundle, the
firmware object) and tests/test_debian.py (the Debian packages, in a root of
each release); README.md's table (HEADING) is rendered from it
(readme_table) and test_forms.py checks that the README says the same.

The features, each observed as one line:

- ``parallelism``: tests/c/forms_probe.c, built against the form as a user
  builds (its pkg-config file), sets dns_shim_set_parallelism(2) and has two
  threads parse the messages one interpreter parsed first: every callback's
  every field, status and failure detail the same; or the refusal, with
  its status and detail;
- ``c-ares``: the same program built with -DFORMS_PROBE_ARES and linked with
  libdnsshim_ares before a c-ares of the record API (1.28 or later):
  ares_parse_a_reply and ares_dns_parse on a reply, and a LOC of 15 octets
  that c-ares itself accepts and only dnspython refuses (the proof that
  libdnsshim_ares's ares_dns_parse answered); where the form has no c-ares
  layer, what the test finds in its files;
- ``memory limit``: the same program: a counting allocator from the start, a
  limit of what the runtime then holds plus 1 MiB and 64 KiB, a 64 KiB
  response refused with DNS_SHIM_ERR_NO_MEMORY and its detail, a small one
  parsed under the same limit, and the 64 KiB one once it is lifted;
- ``guest``: a Python program (GUEST_PROGRAM, ctypes) loads the form's
  library and parses: the library's cffi module and its private copy of
  shim.glue are in that program's interpreter, and a memory limit is refused
  (DNS_SHIM_ERR_BAD_ARGUMENT: the program's memory is not the library's);
- ``man``: the manual's pages where the form installs them, and what
  ``man -w`` finds (where man-db is installed; CI has it).

A False cell is observed as the exact refusal or absence ABSENT gives for
it, never merely as "not the line of a form that has it".
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE_SOURCE = HERE / "c" / "forms_probe.c"

#: README.md's heading of the table (the table follows it).
HEADING = "### What each form has"

#: feature -> what it is, as the README's first column says it.
FEATURES = {
    "parallelism": "parallelism: `dns_shim_set_parallelism(2)`, two threads, one "
                   "interpreter's answers",
    "c-ares": "libdnsshim_ares, `ares_dns_parse` included",
    "memory limit": "`dns_shim_set_memory_limit`: `DNS_SHIM_ERR_NO_MEMORY`, then the next "
                    "message parses",
    "guest": "guest mode: in a Python program, that program's interpreter parses",
    "man": "the manual, where `man -w` finds it",
}

#: form -> its column's title in the README (and the order of the columns).
FORMS = {
    "venv": "`pip install .`",
    "prefix": "`build_ffi.py --prefix`",
    "debian12": "Debian 12 packages",
    "debian13": "Debian 13 packages",
    "bundle": "bundle",
    "firmware": "firmware object",
}

_NO_IMAGE = "no worker image: `DNS_SHIM_ERR_UNSUPPORTED`"
_POOL = "over the embedded CPython and its pool"

#: form -> feature -> (whether it has it, why).  The firmware column is the
#: object built with --parallelism 2 for parallelism (the option is the
#: form's way to it; the default object's refusal is checked too) and the
#: default object for the rest.
EXPECTED = {
    "venv": {
        "parallelism": (True, "the worker image beside the library"),
        "c-ares": (True, "`dnsshim-ares.pc`; `ares_dns_parse` with c-ares 1.28 or later"),
        "memory limit": (True, _POOL),
        "guest": (True, "in the virtualenv's `python`"),
        "man": (True, "`.venv/share/man`"),
    },
    "prefix": {
        "parallelism": (True, "the worker image in `lib/dnsshim/`"),
        "c-ares": (True, "`dnsshim-ares.pc`; `ares_dns_parse` with c-ares 1.28 or later"),
        "memory limit": (True, _POOL),
        "guest": (True, "in a program of its CPython's version"),
        "man": (True, "`PREFIX/share/man`"),
    },
    "debian12": {
        "parallelism": (True, "`libdnsshim1`'s worker image"),
        "c-ares": (False, "Debian 12's c-ares is 1.18: `ares_dns_parse` is `ARES_ENOTIMP`, "
                          "the classic parsers work"),
        "memory limit": (True, _POOL),
        "guest": (True, "in the release's `python3`"),
        "man": (True, "`/usr/share/man`"),
    },
    "debian13": {
        "parallelism": (True, "`libdnsshim1`'s worker image"),
        "c-ares": (True, "with Debian 13's c-ares 1.34"),
        "memory limit": (True, _POOL),
        "guest": (True, "in the release's `python3`"),
        "man": (True, "`/usr/share/man`"),
    },
    "bundle": {
        "parallelism": (False, _NO_IMAGE),
        "c-ares": (False, "libdnsshim_ares is not in a bundle"),
        "memory limit": (True, "over the bundle's CPython"),
        "guest": (True, "in a program of the bundle's CPython version"),
        "man": (False, "not in a bundle"),
    },
    "firmware": {
        "parallelism": (True, "built with `--parallelism N`; without it, "
                              "`DNS_SHIM_ERR_UNSUPPORTED`"),
        "c-ares": (False, "the object is libdnsshim alone"),
        "memory limit": (True, "over the object's interpreters"),
        "guest": (False, "no shared object; its CPython is its own, linked in"),
        "man": (False, "not in the object's folder"),
    },
}


def readme_table() -> str:
    """The Markdown table README.md has under HEADING: a row per feature, a
    column per form, each cell "yes" or "no" and why."""
    def row(cells):
        return "| " + " | ".join(cells) + " |"

    lines = [row(["feature", *FORMS.values()]), row(["---"] * (1 + len(FORMS)))]
    for feature, label in FEATURES.items():
        lines.append(row([label, *(f"{'yes' if has else 'no'}: {why}"
                                   for has, why in (EXPECTED[form][feature] for form in FORMS))]))
    return "\n".join(lines) + "\n"


# ---- the messages the probe reads -------------------------------------------------------

#: A reply c-ares accepts and dnspython refuses: a LOC record of 15 octets
#: (RFC 1876 gives it 16; c-ares keeps LOC's RDATA as octets): libdnsshim_ares's
#: ares_dns_parse says ARES_EBADRESP (10), c-ares's own 0; only a run that went
#: through libdnsshim_ares's ares_dns_parse prints status 10 for it (the probe's
#: and test_debian.py's).
LOC_15 = (bytes([0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0])
          + b"\x07example\x03org\x00\x00\x1d\x00\x01"
          + b"\xc0\x0c\x00\x1d\x00\x01\x00\x00\x00\x3c\x00\x0f"
          + bytes([0, 0x12, 0x16, 0x13, 0x89, 0x17, 0x2d, 0xd0, 0x70, 0xbe, 0x15, 0xf0,
                   0x00, 0x98, 0x8d]))


def write_probe_messages(where: Path) -> list:
    """The probe's messages written into where; returns its arguments, the
    files named relative to where (run it there): GOOD (example.com A
    192.0.2.1, ID 0x1234), the 64 KiB and one-record responses of
    test_memory.py, LOC_15, then the threads' messages: the test vectors and
    the malformed cases (86: small, so that the module stays quick)."""
    import malformed
    from conftest import write_messages
    from test_memory import write_big_and_small

    where = Path(where)
    where.mkdir(parents=True, exist_ok=True)
    (where / "good.bin").write_bytes(malformed.GOOD)
    write_big_and_small(where)
    (where / "loc15.bin").write_bytes(LOC_15)
    threads = [p.name for p in write_messages(where)]
    return ["--good", "good.bin", "--big", "big.bin", "--small", "small.bin", "--loc",
            "loc15.bin", *threads]


def message_count(args) -> int:
    return len(args) - 8


# ---- the guest ---------------------------------------------------------------------------

#: Run by a Python program's interpreter with the library's path and GOOD's:
#: prints the guest line.
GUEST_PROGRAM = r'''
import ctypes, sys
watched = ("dns", "shim", "_cffi_backend")
before = {name for name in watched if name in sys.modules}
lib = ctypes.CDLL(sys.argv[1])
lib.process_dns_response.restype = ctypes.c_int32
lib.dns_shim_set_memory_limit.restype = ctypes.c_int32
lib.dns_shim_set_memory_limit.argtypes = [ctypes.c_size_t]
lib.dns_shim_last_error.restype = ctypes.c_char_p
wire = open(sys.argv[2], "rb").read()
status = lib.process_dns_response(wire, len(wire))
limit = lib.dns_shim_set_memory_limit(1 << 30)
detail = lib.dns_shim_last_error().decode()
own = sys.modules.get("_dnsshim_cffi")
guest = getattr(own, "__dnsshim_guest__", None)
if own is None:
    runs = "no _dnsshim_cffi in its sys.modules"
elif guest is not None and "shim.glue" in guest.modules:
    runs = "_dnsshim_cffi in its sys.modules, with the library's private shim.glue"
else:
    runs = "_dnsshim_cffi in its sys.modules, without a private shim.glue"
added = sorted(name for name in watched if name in sys.modules and name not in before)
print(f"guest: in a CPython {sys.version.split()[0]} program: status {status}; {runs}; "
      f"{'added ' + ', '.join(added) if added else 'no dns, shim or _cffi_backend added'}; "
      f"a memory limit: {limit}{' ' + detail if detail else ''}")
'''

GUEST_REFUSED_LIMIT = ("DNS_SHIM_ERR_BAD_ARGUMENT: the runtime is the interpreter of the Python "
                       "program the library is loaded into: its memory is that program's, and "
                       "has no limit of the library's")


# ---- the manual --------------------------------------------------------------------------

#: The page man -w is asked for.
MAN_ASKED = ("3", "dns_shim_set_parallelism")
def manual_pages() -> list:
    """Every page an installation of the manual holds: (section, name)."""
    from dnsshim_build import pipeline

    return sorted([*(("3", f) for f in pipeline.header_functions()), ("3", "dnsshim_ares"),
                   ("7", "dnsshim"), ("1", "dnsshim-dump"), ("1", "dnsshim-config")])


def man_line(mandir: str, present: set, found: str | None, suffix: str = "") -> str:
    """The man line of a form with a share/man: present, the (section, name)
    pages there (their files: man<section>/<name>.<section><suffix>); found,
    what ``man -w`` said for MAN_ASKED, or None where man-db is not installed."""
    pages = manual_pages()
    missing = [f"{name}({section})" for section, name in pages if (section, name) not in present]
    line = (f"man: the {len(pages)} pages in {mandir}" if not missing else
            f"man: {len(pages) - len(missing)} of {len(pages)} pages in {mandir}, missing "
            + ", ".join(missing))
    if found is None:
        return line + "; no man-db here"
    return line + f"; man -w {' '.join(MAN_ASKED)}: {found or 'nothing'}"


def pages_under(mandir: Path, suffix: str = "") -> set:
    """The (section, name) of every page file under mandir."""
    found = set()
    for section in ("1", "3", "7"):
        for page in (Path(mandir) / f"man{section}").glob(f"*.{section}{suffix}"):
            found.add((section, page.name[:-len(f".{section}{suffix}")]))
    return found


def no_manual(root: Path) -> str:
    """The man line of a folder without the manual (a bundle, a firmware
    object's), or what of it is there: a share/man, a man<N> folder, a file
    named as a page of the manual is (gzipped or not)."""
    names = {f"{name}.{section}{gz}" for section, name in manual_pages() for gz in ("", ".gz")}
    pages = sorted(str(p.relative_to(root)) for p in Path(root).rglob("*")
                   if p.name in names or re.fullmatch(r"man\d", p.parent.name))
    mandir = Path(root) / "share" / "man"
    if mandir.exists() or pages:
        return f"man: {'share/man; ' if mandir.exists() else ''}pages: {', '.join(pages) or 'none'}"
    return NO_MANUAL


NO_MANUAL = "man: none: no share/man, no page in the folder"


# ---- what a form has, from its lines -----------------------------------------------------

MEMORY_LIMIT_LINE = (
    "memory limit: held+1088 KiB: big -13 (0 records: DNS_SHIM_ERR_NO_MEMORY: parsing the "
    "message would take the runtime above its memory limit of LIMIT bytes "
    "(dns_shim_set_memory_limit)), small 0 (1 record), no limit: big 0 (4094 records)")

NO_IMAGE_REFUSAL = (
    "parallelism 2: -17 DNS_SHIM_ERR_UNSUPPORTED: parallelism above 1 needs the worker image "
    "{libdir}/libdnsshim_worker.so, which this installation does not have: pip install . and "
    "build_ffi.py --prefix build it where Debian's python3-dev and libffi-dev are installed")

#: The firmware object built without --parallelism: the library's pool,
#: which looks for a worker image beside the object's program
#: (test_parallelism.py's test_a_firmware_object_without_parallelism_...).
FIRMWARE_WITHOUT_OPTION = "without --parallelism: " + NO_IMAGE_REFUSAL

ENOTIMP_LOG = ("dnsshim_ares: ares_dns_parse: no c-ares 1.22 or later is loaded in this "
               "process (no ares_dns_record_create); returning ARES_ENOTIMP: link the program "
               "with c-ares 1.28.0 or later")

#: form -> feature -> the exact line of a feature the form does not have
#: (formatted with the run's context: libdir, python).
ABSENT = {
    "debian12": {
        "c-ares": "c-ares 1.18.1: ares_parse_a_reply 0 (192.0.2.1); ares_dns_parse 5 "
                  "ARES_ENOTIMP (no record); a LOC of 15 octets: 5 ARES_ENOTIMP",
    },
    "bundle": {
        "parallelism": NO_IMAGE_REFUSAL,
        "c-ares": "c-ares: none: no libdnsshim_ares in lib/, no dnsshim-ares.pc",
        "man": NO_MANUAL,
    },
    "firmware": {
        "c-ares": "c-ares: none: the object defines libdnsshim's API alone (no ares_* "
                  "symbol), no dnsshim-ares.pc",
        "guest": "guest: none: no shared object in the folder, no Py* symbol global or "
                 "needed; linked into one: in a CPython {python} program: status 0; no "
                 "_dnsshim_cffi in its sys.modules; no dns, shim or _cffi_backend added; a "
                 "memory limit: 0",
        "man": NO_MANUAL,
    },
}

_CARES = re.compile(r"c-ares (\d+)\.(\d+)\.(\d+): ares_parse_a_reply 0 \(192\.0\.2\.1\); "
                    r"ares_dns_parse 0 \(id 0x1234, 1 answer, A 192\.0\.2\.1\); "
                    r"a LOC of 15 octets: 10 ARES_EBADRESP")
_GUEST = re.compile(r"guest: in a CPython 3\.\d+\.\d+ program: status 0; _dnsshim_cffi in its "
                    r"sys\.modules, with the library's private shim\.glue; no dns, shim or "
                    r"_cffi_backend added; a memory limit: -12 " + re.escape(GUEST_REFUSED_LIMIT))
_MAN = re.compile(r"man: the (\d+) pages in (\S+)(?:; no man-db here|; man -w 3 "
                  r"dns_shim_set_parallelism: (\S+))")


def has(feature: str, line: str, messages: int) -> bool:
    """Whether the line is that of a form that has the feature."""
    if feature == "parallelism":
        return line == (f"parallelism 2: same answers ({messages} messages, 2 threads x 2 "
                        "rounds)")
    if feature == "c-ares":
        m = _CARES.fullmatch(line)
        return bool(m) and tuple(map(int, m.groups()[:2])) >= (1, 28)
    if feature == "memory limit":
        return line == MEMORY_LIMIT_LINE
    if feature == "guest":
        return bool(_GUEST.fullmatch(line))
    if feature == "man":
        m = _MAN.fullmatch(line)
        return bool(m) and int(m.group(1)) == len(manual_pages()) and (
            m.group(3) is None or re.fullmatch(re.escape(m.group(2)) + r"/man3/"
                                               r"dns_shim_set_parallelism\.3(\.gz)?",
                                               m.group(3)) is not None)
    raise KeyError(feature)


def observed(form: str, lines: dict, messages: int, **context) -> dict:
    """feature -> True (the line of a form that has it), False (exactly the
    line ABSENT gives for the form), or the line itself (neither: what no
    expected matrix holds)."""
    out = {}
    for feature in FEATURES:
        line = lines[feature]
        absent = ABSENT.get(form, {}).get(feature)
        if has(feature, line, messages):
            out[feature] = True
        elif absent is not None and line == absent.format(**context):
            out[feature] = False
        else:
            out[feature] = line
    return out


def expected_row(form: str) -> dict:
    return {feature: has for feature, (has, _why) in EXPECTED[form].items()}


def probe_lines(stdout: str) -> dict:
    """The probe's lines by feature (c-ares only when built with it)."""
    lines = {}
    for line in stdout.splitlines():
        for feature, prefix in (("parallelism", "parallelism 2: "), ("c-ares", "c-ares "),
                                ("memory limit", "memory limit: ")):
            if line.startswith(prefix):
                assert feature not in lines, stdout
                lines[feature] = line
    return lines


def assert_row(form: str, lines: dict, messages: int, **context) -> None:
    """The form's observed row is EXPECTED's, exactly."""
    seen = observed(form, lines, messages, **context)
    report = "\n".join(f"  {feature}: {lines[feature]}" for feature in FEATURES)
    assert seen == expected_row(form), f"{form}'s lines:\n{report}"
