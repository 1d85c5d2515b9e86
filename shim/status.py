"""The status table: every failure the library can report, in one place.

The values are the ABI of ``csrc/dns_shim.h`` (``enum dns_shim_status``);
``build_ffi.py`` refuses to build when the two disagree.  The text of each
code lives in C (``dns_shim_strerror``); here each code has the exception
class that the decoding layer raises for it.
"""

import enum


class Status(enum.IntEnum):
    OK = 0
    ERR_NULL_BUFFER = -1
    ERR_BAD_LENGTH = -2
    ERR_SHORT_HEADER = -3
    ERR_TRUNCATED = -4
    ERR_TRAILING_DATA = -5
    ERR_BAD_NAME = -6
    ERR_BAD_RDATA = -7
    ERR_NOT_RESPONSE = -8
    ERR_BAD_EDNS = -9
    ERR_FORMAT = -10
    ERR_CALLBACK = -11
    ERR_BAD_ARGUMENT = -12
    ERR_NO_MEMORY = -13
    ERR_INIT = -14
    ERR_INTERNAL = -15

    @property
    def c_name(self) -> str:
        """The enumerator's name in the C header, e.g. ``DNS_SHIM_ERR_TRUNCATED``."""
        return "DNS_SHIM_" + self.name


class DnsShimError(Exception):
    """A message the library rejects; ``status`` is its negative code."""

    status = Status.ERR_INTERNAL

    def __init__(self, detail: str = "", offset: int | None = None):
        self.detail = detail
        self.offset = offset
        text = f"{self.status.c_name}"
        if detail:
            text += f": {detail}"
        if offset is not None:
            text += f" (at offset {offset})"
        super().__init__(text)


class ShortHeaderError(DnsShimError):
    """Fewer than the 12 header bytes."""

    status = Status.ERR_SHORT_HEADER


class TruncatedError(DnsShimError):
    """The message ends inside a question or a record, or an RDLENGTH runs past it."""

    status = Status.ERR_TRUNCATED


class TrailingDataError(DnsShimError):
    """Bytes after the last record the counts announce."""

    status = Status.ERR_TRAILING_DATA


class BadNameError(DnsShimError):
    """A malformed name: label type, length, pointer, loop."""

    status = Status.ERR_BAD_NAME


class BadRdataError(DnsShimError):
    """RDATA malformed for its type."""

    status = Status.ERR_BAD_RDATA


class NotResponseError(DnsShimError):
    """The QR bit is clear."""

    status = Status.ERR_NOT_RESPONSE


class BadEdnsError(DnsShimError):
    """An OPT record misplaced, repeated or not owned by the root."""

    status = Status.ERR_BAD_EDNS


class FormatError(DnsShimError):
    """Any other structural violation (TSIG placement, UPDATE rules)."""

    status = Status.ERR_FORMAT


#: Every exception class by its status, for the callers that map back.
ERROR_CLASSES = {
    cls.status: cls
    for cls in (
        ShortHeaderError,
        TruncatedError,
        TrailingDataError,
        BadNameError,
        BadRdataError,
        NotResponseError,
        BadEdnsError,
        FormatError,
    )
}


def status_of(exc: BaseException) -> Status:
    """The status an exception escaping the library maps to.

    A :class:`DnsShimError` carries its own; running out of memory is
    ``ERR_NO_MEMORY``; anything else is a bug, ``ERR_INTERNAL``.
    """
    if isinstance(exc, DnsShimError):
        return exc.status
    if isinstance(exc, MemoryError):
        return Status.ERR_NO_MEMORY
    return Status.ERR_INTERNAL
