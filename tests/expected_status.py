"""The status a message dnspython rejects must get, decided without shim.

Both the corpus tests (tests/test_c_programs.py) and the agreement tests
(tests/test_agreement.py, tests/mutator.py) judge the library's status for a
message dnspython rejects by what is here, not by the library's own mapping:

* :data:`REFERENCE_STATUS`: dnspython's exception class -> the documented
  status, written by hand, for every class that names its defect;
* :func:`before_dnspython`: what the library decides before dnspython sees
  the message (a length over 65535, QR clear);
* :func:`formerror_status`: for dnspython's generic ``FormError``, which
  names no rule (and for any class raised from the OPT record's options), a walk of the message's framing with ``struct`` (header
  counts, names with their pointers, fixed fields, RDLENGTH) that finds the
  first defect in wire order, judging each RDATA with dnspython's own
  ``dns.rdata.from_wire`` (and in RDATA it rejects, the names at fixed
  places of the common types: a compression target that runs into its name
  is ERR_BAD_NAME there too).

The ``Status`` enumeration only names the numbers of csrc/dns_shim.h
(build_ffi.py refuses a build where the two differ).
"""

import struct

import dns.rdata

import reference
from shim.status import Status

#: dnspython's exception class -> the documented status, where the class
#: names the defect (csrc/dns_shim.h's text for each status says why).
REFERENCE_STATUS = {
    "BadPointer": Status.ERR_BAD_NAME, "NameTooLong": Status.ERR_BAD_NAME,
    "BadLabelType": Status.ERR_BAD_NAME, "LabelTooLong": Status.ERR_BAD_NAME,
    "EmptyLabel": Status.ERR_BAD_NAME, "PointerChainTooLong": Status.ERR_BAD_NAME,
    "ShortHeader": Status.ERR_SHORT_HEADER, "TrailingJunk": Status.ERR_TRAILING_DATA,
    "BadEDNS": Status.ERR_BAD_EDNS, "BadTSIG": Status.ERR_FORMAT,
    "DecompressionForbidden": Status.ERR_BAD_RDATA,
}

_OPT, _TSIG, _SOA = 41, 250, 6
_ANY, _NONE = 255, 254
_UPDATE = 5


def before_dnspython(wire: bytes):
    """The status the library gives before any parsing, or None: a length
    over 65535 (the C boundary), fewer than 12 octets, QR clear."""
    if len(wire) > 65535:
        return Status.ERR_BAD_LENGTH
    if len(wire) < 12:
        return Status.ERR_SHORT_HEADER
    if not wire[2] & 0x80:
        return Status.ERR_NOT_RESPONSE
    return None


class _Defect(Exception):
    def __init__(self, status):
        super().__init__(status)
        self.status = status


def _name(wire, p, end_of_data=None):
    """(offset after the name in place, whether it is the root).  Labels in
    place that run past the end: ERR_TRUNCATED.  A pointer must point before
    the name it is read for and before every earlier target (dnspython's
    rule), and the labels at a target must end before the place it was
    pointed from or the name's start, whichever comes first; else
    ERR_BAD_NAME."""
    end, first, jumped, start = None, True, False, p
    limit = len(wire) if end_of_data is None else end_of_data
    while True:
        if p >= limit:
            raise _Defect(Status.ERR_BAD_NAME if jumped else Status.ERR_TRUNCATED)
        n = wire[p]
        if n >= 0xC0:
            if p + 1 >= limit:
                raise _Defect(Status.ERR_BAD_NAME if jumped else Status.ERR_TRUNCATED)
            target = (n & 0x3F) << 8 | wire[p + 1]
            if end is None:
                end = p + 2
            if target >= min(p, start):
                raise _Defect(Status.ERR_BAD_NAME)
            limit, p, jumped = min(p, start), target, True
            start = target
            continue
        if n & 0xC0:
            raise _Defect(Status.ERR_BAD_NAME)
        if n == 0:
            return (p + 1 if end is None else end), first
        first = False
        p += n + 1


#: Where the names of the RDATA of a few types stand: (octets before the
#: first, how many names follow one another).
_RDATA_NAMES = {2: (0, 1), 3: (0, 1), 4: (0, 1), 5: (0, 1), 7: (0, 1), 8: (0, 1), 9: (0, 1),
                12: (0, 1), 39: (0, 1), 6: (0, 2), 14: (0, 2), 17: (0, 2), 15: (2, 1),
                18: (2, 1), 21: (2, 1), 36: (2, 1), 33: (6, 1)}


def _names_in_rdata(wire, rdtype, p, end):
    """For RDATA dnspython rejects: a name in it whose compression target
    runs into it (or points forward) is ERR_BAD_NAME, as everywhere; a name
    in place that runs past the RDATA is the RDATA's defect (the caller's
    ERR_BAD_RDATA)."""
    skip, count = _RDATA_NAMES.get(rdtype, (0, 0))
    p += skip
    for _ in range(count):
        if p >= end:
            return
        try:
            p, _root = _name(wire, p, end)
        except _Defect as d:
            if d.status == Status.ERR_BAD_NAME:
                raise
            return


def _need(wire, p, size):
    if p + size > len(wire):
        raise _Defect(Status.ERR_TRUNCATED)


def _walk(wire):
    qd, an, ns, ar = struct.unpack_from("!4H", wire, 4)
    update = (wire[2] >> 3) & 0xF == _UPDATE
    zone = None
    p = 12
    for _ in range(qd):
        p, _root = _name(wire, p)
        _need(wire, p, 4)
        qtype, qclass = struct.unpack_from("!HH", wire, p)
        p += 4
        if update:
            if zone is not None or qclass in (_ANY, _NONE) or qtype != _SOA:
                raise _Defect(Status.ERR_FORMAT)
            zone = qclass
    have_opt = False
    for section, count in ((1, an), (2, ns), (3, ar)):
        for position in range(count):
            p, root = _name(wire, p)
            _need(wire, p, 10)
            rdtype, rdclass, _ttl, rdlen = struct.unpack_from("!HHIH", wire, p)
            p += 10
            empty = False
            if rdtype == _OPT:
                if section != 3 or have_opt or not root:
                    raise _Defect(Status.ERR_BAD_EDNS)
                have_opt = True
            elif rdtype == _TSIG:
                if section != 3 or rdclass != _ANY or position != count - 1:
                    raise _Defect(Status.ERR_FORMAT)
            elif update:
                if zone is None:
                    raise _Defect(Status.ERR_FORMAT)
                if rdclass in (_ANY, _NONE):
                    empty = rdclass == _ANY or section == 1
                    rdclass = zone
            if empty:
                if rdlen:
                    raise _Defect(Status.ERR_FORMAT)
                continue
            _need(wire, p, rdlen)
            try:
                dns.rdata.from_wire(rdclass, rdtype, wire, p, rdlen)
            except Exception as e:  # noqa: BLE001 - dnspython rejects this RDATA
                if rdtype == _OPT:
                    raise _Defect(Status.ERR_BAD_EDNS) from e
                _names_in_rdata(wire, rdtype, p, p + rdlen)
                raise _Defect(Status.ERR_BAD_RDATA) from e
            p += rdlen
    return None


def formerror_status(wire: bytes):
    """The status of the first defect the framing walk finds in a message
    dnspython rejects with a bare ``FormError``, or None when the walk finds
    none (then the rule is one the walk does not know)."""
    reference.reset_registry()
    try:
        return _walk(wire)
    except _Defect as d:
        return d.status


def rejected_status(wire: bytes, error: str):
    """The status for a message that dnspython rejects with the exception
    class named `error` (after :func:`before_dnspython` said nothing), or
    None when neither the table nor the walk decides.  A defect the walk
    finds in the OPT record first is ERR_BAD_EDNS whatever the class."""
    walked = formerror_status(wire)
    if walked == Status.ERR_BAD_EDNS:
        # The OPT's option data, whatever dnspython raised for it (a
        # REPORT-CHANNEL agent domain that is not a name raises a name's
        # exception): the header documents ERR_BAD_EDNS.
        return walked
    if error in REFERENCE_STATUS:
        return REFERENCE_STATUS[error]
    if error == "FormError":
        return walked
    return None
