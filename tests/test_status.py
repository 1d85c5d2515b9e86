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
        ("ERR_MISMATCH", -16)]


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


def test_strerror_from_c_is_the_python_table(abi):
    ffi, lib = abi
    texts = {s: ffi.string(lib.dns_shim_strerror(s)).decode() for s in Status}
    assert texts == st.TEXTS
    assert len(set(texts.values())) == len(texts), "each status has its own text"
    assert texts[Status.OK] == "success"
    assert texts[Status.ERR_TRUNCATED] == "message ends inside a question or record"
    for unknown in (1, -17, 1000, -(2**31), 2**31 - 1):
        assert ffi.string(lib.dns_shim_strerror(unknown)) == b"unknown dnsshim status"
        assert st.strerror(unknown) == "unknown dnsshim status"


def test_version_from_c(abi):
    ffi, lib = abi
    import shim
    import sys
    assert ffi.string(lib.dns_shim_version()).decode() == (
        f"{shim.__version__} (CPython {sys.version_info.major}.{sys.version_info.minor})")
