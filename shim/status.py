"""The status table: every failure the library can report, in one place.

The values are the ABI of ``csrc/dns_shim.h`` (``enum dns_shim_status``);
``build_ffi.py`` refuses to build when the two disagree.  The text of each
code is here (``TEXTS``), and ``build_ffi.py`` writes it into the library's
``dns_shim_strerror``; each code has the exception class that the decoding
layer raises for it.
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
    ERR_MISMATCH = -16
    ERR_UNSUPPORTED = -17

    @property
    def c_name(self) -> str:
        """The enumerator's name in the C header, e.g. ``DNS_SHIM_ERR_TRUNCATED``."""
        return "DNS_SHIM_" + self.name


#: What dns_shim_strerror() says for each status (build_ffi.py writes these
#: into the library), and for a code the library does not know.
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
UNKNOWN_TEXT = "unknown dnsshim status"


def strerror(status: int) -> str:
    """The text of a status, as dns_shim_strerror() gives it."""
    try:
        return TEXTS[Status(status)]
    except ValueError:
        return UNKNOWN_TEXT


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

    @property
    def reason(self) -> str:
        """What was wrong and where, without the status's name: the detail
        the dump tools print after the status (``dns_shim_last_error``'s
        text is ``str(exc)``, the name first)."""
        return reason_of(str(self))


def reason_of(text: str) -> str:
    """A failure's text (``dns_shim_last_error``'s, ``str(exc)``) without
    the status's name it starts with."""
    name, _, rest = text.partition(" ")
    if name.endswith(":"):
        return rest
    return text[len(name):].strip() if name.startswith("DNS_SHIM_") else text


class BadLengthError(DnsShimError):
    """A length below 0 or over 65535 (the Python API: over 65535)."""

    status = Status.ERR_BAD_LENGTH


class BadArgumentError(DnsShimError):
    """A callbacks struct the library cannot use (unknown sections bits)."""

    status = Status.ERR_BAD_ARGUMENT


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
    """An OPT record misplaced, repeated or not owned by the root, or
    malformed option data inside it."""

    status = Status.ERR_BAD_EDNS


class FormatError(DnsShimError):
    """Any other structural violation (TSIG placement, UPDATE rules)."""

    status = Status.ERR_FORMAT


class MismatchError(DnsShimError):
    """A response that does not answer the query it was checked against
    (dns_shim_process_reply, ``parse_response(wire, expect=...)``): its ID,
    its question (none, several, another name, type or class) or its
    COOKIE."""

    status = Status.ERR_MISMATCH


#: Every exception class by its status, for the callers that map back.
ERROR_CLASSES = {
    cls.status: cls
    for cls in (
        BadLengthError,
        BadArgumentError,
        ShortHeaderError,
        TruncatedError,
        TrailingDataError,
        BadNameError,
        BadRdataError,
        NotResponseError,
        BadEdnsError,
        FormatError,
        MismatchError,
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
