"""A test-only corruption of the plans the Python side hands to C.

``tweak(clone)`` appends HOOK to the shim/glue.py of a copy of the source
tree (test_install.source_copy): the library built from that copy is the
only one with it; no shipped build has it.  The tweaked ``glue.plan``
corrupts the n-th plan it makes with the n-th kind named in
DNS_SHIM_TEST_CORRUPT (comma-separated; "none" leaves a plan alone), in
the memory Python keeps alive for that plan, so that C alone must find it.
"""

HOOK = r'''

# ---- test-only: plan corruption (tests/plan_corruption.py) ----
import os as _os

_CORRUPT_KINDS = [k for k in _os.environ.get("DNS_SHIM_TEST_CORRUPT", "").split(",") if k]
_CORRUPT_KEEP = []
_real_plan = plan


def _corrupt_first(ffi, steps, count, member, ctype, change):
    """A copy of the struct of the first step to member, changed."""
    offset = _types(ffi).member_offset[member]
    for i in range(count):
        if steps[i].member == offset:
            copy = ffi.new(ctype + " *", ffi.cast(ctype + " *", steps[i].arg)[0])
            change(ffi, copy)
            _CORRUPT_KEEP.append(copy)
            steps[i].arg = copy
            return
    raise AssertionError(f"no step to {member}")


def _keep(ffi, obj):
    _CORRUPT_KEEP.append(obj)
    return obj


def _set(field, value):
    def change(ffi, copy):
        obj = copy
        *path, last = field.split(".")
        for p in path:
            obj = getattr(obj, p)
        setattr(obj, last, value(ffi) if isinstance(value, type(_set)) else value)
    return change


def _txt_strings(kind):
    def change(ffi, copy):
        strings = _keep(ffi, ffi.new("dns_shim_bytes[]", copy.count))
        for k in range(copy.count):
            strings[k] = copy.strings[k]
        if kind == "no_nul":
            data = _keep(ffi, ffi.new("uint8_t[]", b"abcd"))  # data[3] is "d", not NUL
            strings[0].data, strings[0].len = data, 3
        elif kind == "null":
            strings[0].data = ffi.NULL
        else:
            strings[0].len = 70000
        copy.strings = strings
    return change


_UNTERMINATED = lambda ffi: _keep(ffi, ffi.new("char[]", b"a" * 2000))  # noqa: E731

_KINDS = {
    "no_callback": lambda ffi, steps, count, out: setattr(steps[0], "member", 8),
    "beyond": lambda ffi, steps, count, out: setattr(steps[0], "member", 4096),
    "null_callback": lambda ffi, steps, count, out: setattr(
        steps[1], "member", _types(ffi).member_offset["on_other"]),
    "null_struct": lambda ffi, steps, count, out: setattr(steps[0], "arg", ffi.NULL),
    "no_steps": lambda ffi, steps, count, out: out.__setitem__(0, ffi.NULL),
    "too_many": lambda ffi, steps, count, out: out.__setitem__(1, 65537),
    "null_owner": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_a", "dns_shim_a", _set("rr.owner", ffi.NULL)),
    "unterminated_owner": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_aaaa", "dns_shim_aaaa", _set("rr.owner", _UNTERMINATED)),
    "bad_section": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_a", "dns_shim_a", _set("rr.section", 3)),
    "unterminated_qname": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_header", "dns_shim_header", _set("qname", _UNTERMINATED)),
    "null_target": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_cname", "dns_shim_target", _set("target", ffi.NULL)),
    "null_exchange": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_mx", "dns_shim_mx", _set("exchange", ffi.NULL)),
    "null_rname": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_soa", "dns_shim_soa", _set("rname", ffi.NULL)),
    "txt_count_zero": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_txt", "dns_shim_txt", _set("count", 0)),
    "txt_strings_null": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_txt", "dns_shim_txt", _set("strings", ffi.NULL)),
    "txt_string_no_nul": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_txt", "dns_shim_txt", _txt_strings("no_nul")),
    "txt_string_null": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_txt", "dns_shim_txt", _txt_strings("null")),
    "txt_string_too_long": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_txt", "dns_shim_txt", _txt_strings("long")),
    "naptr_regexp_too_long": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_naptr", "dns_shim_naptr", _set("regexp.len", 65536)),
    "edns_data_null": lambda ffi, steps, count, out: _corrupt_first(
        ffi, steps, count, "on_edns_option", "dns_shim_edns_option", _set("data.data", ffi.NULL)),
}


def plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query=None,
         runtime=None):
    status = _real_plan(ffi, buf, length, callbacks, out_steps, out_count, out_token, query,
                        runtime)
    kind = _CORRUPT_KINDS.pop(0) if _CORRUPT_KINDS else "none"
    if status == Status.OK and kind != "none":
        out = [out_steps[0], out_count[0]]
        _KINDS[kind](ffi, out_steps[0], out_count[0], out)
        out_steps[0], out_count[0] = out
    return status
'''


def tweak(clone):
    """Gives the copy's shim package the corrupting plan."""
    with open(clone / "shim" / "glue.py", "a") as f:
        f.write(HOOK)
    return clone


ARES_HOOK = r'''

# ---- test-only: result corruption (tests/plan_corruption.py) ----
import os as _os

from shim.ares_codes import KINDS as _KINDS_BY_NAME

_CORRUPT_ARES = {}
for _entry in _os.environ.get("DNS_SHIM_TEST_CORRUPT_ARES", "").split(","):
    if _entry:
        _k, _c = _entry.split(":")
        _CORRUPT_ARES.setdefault(_KINDS_BY_NAME[_k], []).append(_c)
_CORRUPT_ARES_KEEP = []
_real_fill = fill


def _ares_corrupt(ffi, how, out):
    keep = _CORRUPT_ARES_KEEP.append
    if how == "addrlen":
        out.addrlen = out.addrlen + 1
    elif how == "addrs_null":
        out.addrs = ffi.NULL
    elif how == "ttls_null":
        out.ttls = ffi.NULL
    elif how == "addrs_for_other_kind":
        addrs = ffi.new("uint8_t[]", 4)
        keep(addrs)
        out.naddrs, out.addrlen, out.addrs = 1, 4, addrs
    elif how == "name_no_nul":
        data = ffi.new("uint8_t[]", b"abcd")
        keep(data)
        out.name = (data, 3)
    elif how == "name_null":
        out.name.data = ffi.NULL
    elif how == "aliases_null":
        out.naliases, out.aliases = 1, ffi.NULL
    elif how == "items_too_many":
        out.nitems = 70000
    elif how == "item_string_too_long":
        out.items[0].str[0].len = 70000
    elif how == "item_string_no_nul":
        data = ffi.new("uint8_t[]", b"abcd")
        keep(data)
        out.items[0].str[0] = (data, 3)
    elif how == "enclen":
        out.items[0].num[0] = 70000
    else:
        raise AssertionError(how)


def fill(ffi, result, out):
    keep = _real_fill(ffi, result, out)
    kind = _ares_kind[0]
    if _CORRUPT_ARES.get(kind):
        _ares_corrupt(ffi, _CORRUPT_ARES[kind].pop(0), out)
    return keep


_ares_kind = [0]
_real_compute = compute


def compute(kind, wire, offset=0, flags=WANT_HOST):
    _ares_kind[0] = kind
    return _real_compute(kind, wire, offset, flags)
'''


def tweak_ares(clone):
    """Gives the copy's shim package the corrupting result filler."""
    with open(clone / "shim" / "ares_glue.py", "a") as f:
        f.write(ARES_HOOK)
    return clone


DNSREC_HOOK = r'''

# ---- test-only: plan corruption (tests/plan_corruption.py) ----
import os as _os

_CORRUPT_DNSREC = [k for k in _os.environ.get("DNS_SHIM_TEST_CORRUPT_DNSREC", "").split(",")
                   if k]
_real_dnsrec_fill = fill


def fill(ffi, status, message, out):
    keep = _real_dnsrec_fill(ffi, status, message, out)
    if not _CORRUPT_DNSREC or status != SUCCESS:
        return keep
    how = _CORRUPT_DNSREC.pop(0)
    no_nul = ffi.new("uint8_t[]", b"abcd")  # data[3] is "d", not NUL
    keep.append(no_nul)
    if how == "status":
        out.status = 99
    elif how == "opcode":
        out.opcode = 16
    elif how == "qname_no_nul":
        out.qname = (no_nul, 3)
    elif how == "rrs_too_many":
        out.nrrs = 70000
    elif how == "rrs_null":
        out.rrs = ffi.NULL
    elif how == "section":
        out.rrs[0].section = 4
    elif how == "name_no_nul":
        out.rrs[0].name = (no_nul, 3)
    elif how == "fields_null":
        out.rrs[0].fields = ffi.NULL
    elif how == "datatype":
        out.rrs[0].fields[0].datatype = 7  # the A record's address, as a string
    elif how == "addr_len":
        out.rrs[0].fields[0].bytes.len = 3
    elif how == "u16":
        out.rrs[2].fields[0].number = 70000  # the MX record's preference
    elif how != "none":
        raise AssertionError(how)
    return keep
'''


def tweak_dnsrec(clone):
    """Gives the copy's shim package the corrupting ares_dns_parse plans:
    the n-th successful plan gets the n-th kind named in
    DNS_SHIM_TEST_CORRUPT_DNSREC."""
    with open(clone / "shim" / "ares_dnsrec.py", "a") as f:
        f.write(DNSREC_HOOK)
    return clone
