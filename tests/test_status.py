"""The status table: one set of codes in the header, shim.status and
dns_shim_strerror."""

import pytest

from dnsshim_build import pipeline
from shim import status as st
from shim.status import Status


def test_header_and_python_table_agree():
    assert pipeline.header_statuses() == {s.c_name: s.value for s in Status}


def test_values_are_the_abi():
    # These numbers are promised to C programs: they never change.
    assert [(s.name, s.value) for s in Status] == [
        ("OK", 0), ("ERR_NULL_BUFFER", -1), ("ERR_BAD_LENGTH", -2), ("ERR_SHORT_HEADER", -3),
        ("ERR_TRUNCATED", -4), ("ERR_TRAILING_DATA", -5), ("ERR_BAD_NAME", -6),
        ("ERR_BAD_RDATA", -7), ("ERR_NOT_RESPONSE", -8), ("ERR_BAD_EDNS", -9),
        ("ERR_FORMAT", -10), ("ERR_CALLBACK", -11), ("ERR_BAD_ARGUMENT", -12),
        ("ERR_NO_MEMORY", -13), ("ERR_INIT", -14), ("ERR_INTERNAL", -15),
        ("ERR_MISMATCH", -16), ("ERR_UNSUPPORTED", -17)]


def test_every_error_class_has_its_own_status():
    classes = list(st.ERROR_CLASSES.values())
    assert len({c.status for c in classes}) == len(classes)
    for status, cls in st.ERROR_CLASSES.items():
        assert cls.status == status and issubclass(cls, st.DnsShimError)


@pytest.mark.parametrize("exc, status", [
    (st.BadNameError("x"), Status.ERR_BAD_NAME),
    (MemoryError(), Status.ERR_NO_MEMORY),
    (RuntimeError("bug"), Status.ERR_INTERNAL),
    (KeyboardInterrupt(), Status.ERR_INTERNAL),
])
def test_status_of(exc, status):
    assert st.status_of(exc) == status


#: dns_shim_strerror's texts, written out here (not read from shim.status or
#: the library): what programs print and log, changed only on purpose.
TEXTS = {
    Status.OK: "success",
    Status.ERR_NULL_BUFFER: "buffer pointer is NULL",
    Status.ERR_BAD_LENGTH: "length is negative or over 65535",
    Status.ERR_SHORT_HEADER: "message shorter than the 12-byte DNS header",
    Status.ERR_TRUNCATED: "message ends inside a question or record",
    Status.ERR_TRAILING_DATA: "bytes after the last record",
    Status.ERR_BAD_NAME: "malformed domain name or compression pointer",
    Status.ERR_BAD_RDATA: "record data malformed for its type",
    Status.ERR_NOT_RESPONSE: "message is not a response (QR bit clear)",
    Status.ERR_BAD_EDNS: "malformed, misplaced or repeated OPT record",
    Status.ERR_FORMAT: "malformed message structure",
    Status.ERR_CALLBACK: "a callback stopped processing",
    Status.ERR_BAD_ARGUMENT: "invalid argument or call (dns_shim_last_error says which)",
    Status.ERR_NO_MEMORY: "out of memory",
    Status.ERR_INIT: "the embedded Python runtime could not start",
    Status.ERR_INTERNAL: "internal error in the DNS shim",
    Status.ERR_MISMATCH: "response does not match the query",
    Status.ERR_UNSUPPORTED: "not supported by this installation",
}

#: The header's names and values, written out here.
NAMES = {
    "DNS_SHIM_OK": 0, "DNS_SHIM_ERR_NULL_BUFFER": -1, "DNS_SHIM_ERR_BAD_LENGTH": -2,
    "DNS_SHIM_ERR_SHORT_HEADER": -3, "DNS_SHIM_ERR_TRUNCATED": -4,
    "DNS_SHIM_ERR_TRAILING_DATA": -5, "DNS_SHIM_ERR_BAD_NAME": -6, "DNS_SHIM_ERR_BAD_RDATA": -7,
    "DNS_SHIM_ERR_NOT_RESPONSE": -8, "DNS_SHIM_ERR_BAD_EDNS": -9, "DNS_SHIM_ERR_FORMAT": -10,
    "DNS_SHIM_ERR_CALLBACK": -11, "DNS_SHIM_ERR_BAD_ARGUMENT": -12,
    "DNS_SHIM_ERR_NO_MEMORY": -13, "DNS_SHIM_ERR_INIT": -14, "DNS_SHIM_ERR_INTERNAL": -15,
    "DNS_SHIM_ERR_MISMATCH": -16, "DNS_SHIM_ERR_UNSUPPORTED": -17,
}


def test_the_c_library_says_the_texts_written_here(abi):
    ffi, lib = abi
    assert {s: ffi.string(lib.dns_shim_strerror(int(s))).decode() for s in Status} == TEXTS


def test_the_header_names_the_values_written_here(tmp_path):
    """The names and values as a C compiler reads them from the header."""
    import subprocess

    src = tmp_path / "names.c"
    src.write_text('#include <stdio.h>\n#include "dns_shim.h"\nint main(void) {\n'
                   + "".join(f'    printf("{n} %d\\n", (int){n});\n' for n in NAMES)
                   + "    return 0;\n}\n")
    program = pipeline.compile_program([src], tmp_path / "names", libraries=())
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    assert dict((n, int(v)) for n, v in (line.split() for line in out.splitlines())) == NAMES


def test_strerror_from_c_is_the_python_table(abi):
    ffi, lib = abi
    texts = {s: ffi.string(lib.dns_shim_strerror(s)).decode() for s in Status}
    assert texts == st.TEXTS
    assert len(set(texts.values())) == len(texts), "each status has its own text"
    assert texts[Status.OK] == "success"
    assert texts[Status.ERR_TRUNCATED] == "message ends inside a question or record"
    for unknown in (1, -18, 1000, -(2**31), 2**31 - 1):
        assert ffi.string(lib.dns_shim_strerror(unknown)) == b"unknown dnsshim status"
        assert st.strerror(unknown) == "unknown dnsshim status"


def test_version_from_c(abi):
    ffi, lib = abi
    import shim
    import sys
    assert ffi.string(lib.dns_shim_version()).decode() == (
        f"{shim.__version__} (CPython {sys.version_info.major}.{sys.version_info.minor})")
