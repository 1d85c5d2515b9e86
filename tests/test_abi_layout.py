"""The ABI's layout, recorded: a change to the size or a member offset of a
public struct fails here, so that it is never made by accident (append
members only, and only where the header's versioning rule allows)."""

import pytest

# On LP64 Linux (x86_64, aarch64): pointers and size_t of 8 octets.
LAYOUT = {
    "dns_shim_header": (40, {"id": 0, "flags": 2, "opcode": 4, "rcode": 6, "qdcount": 8,
                             "ancount": 10, "nscount": 12, "arcount": 14, "qname": 16,
                             "qtype": 24, "qclass": 26, "edns_version": 28, "edns_payload": 32,
                             "edns_do": 34, "edns_flags": 36}),
    "dns_shim_rr": (24, {"owner": 0, "type": 8, "rclass": 10, "ttl": 12, "section": 16,
                         "index": 20}),
    "dns_shim_bytes": (16, {"data": 0, "len": 8}),
    "dns_shim_a": (32, {"rr": 0, "address": 24}),
    "dns_shim_aaaa": (40, {"rr": 0, "address": 24}),
    "dns_shim_target": (32, {"rr": 0, "target": 24}),
    "dns_shim_mx": (40, {"rr": 0, "preference": 24, "exchange": 32}),
    "dns_shim_txt": (40, {"rr": 0, "count": 24, "strings": 32}),
    "dns_shim_srv": (40, {"rr": 0, "priority": 24, "weight": 26, "port": 28, "target": 32}),
    "dns_shim_naptr": (88, {"rr": 0, "order": 24, "preference": 26, "flags": 32,
                            "services": 48, "regexp": 64, "replacement": 80}),
    "dns_shim_soa": (64, {"rr": 0, "mname": 24, "rname": 32, "serial": 40, "refresh": 44,
                          "retry": 48, "expire": 52, "minimum": 56}),
    "dns_shim_raw": (40, {"rr": 0, "rdata": 24}),
    # 1.0's struct was 120 octets, up to on_other; 1.1 appended on_edns_option.
    "dns_shim_callbacks": (128, {"struct_size": 0, "sections": 4, "ctx": 8, "on_header": 16,
                                 "on_a": 24, "on_aaaa": 32, "on_cname": 40, "on_ns": 48,
                                 "on_ptr": 56, "on_dname": 64, "on_mx": 72, "on_txt": 80,
                                 "on_srv": 88, "on_naptr": 96, "on_soa": 104, "on_other": 112,
                                 "on_edns_option": 120}),
    # 1.1
    "dns_shim_edns_option": (104, {"code": 0, "data": 8, "ede_info_code": 24, "ede_text": 32,
                                   "cookie_client": 48, "cookie_server": 64, "ecs_family": 80,
                                   "ecs_source_prefix": 82, "ecs_scope_prefix": 83,
                                   "ecs_address": 88}),
    "dns_shim_query": (32, {"struct_size": 0, "id": 4, "qname": 8, "qtype": 16, "qclass": 18,
                            "flags": 20, "cookie_client": 24}),
    "dns_shim_allocator": (48, {"struct_size": 0, "ctx": 8, "malloc": 16, "calloc": 24,
                                "realloc": 32, "free": 40}),
}

#: What each release's structs were: a struct's size in a release is where
#: the first member a later release appended starts.
SIZE_IN_1_0 = {"dns_shim_callbacks": 120}


@pytest.mark.parametrize("struct", sorted(LAYOUT))
def test_layout(header_ffi, struct):
    if header_ffi.sizeof("void *") != 8:
        pytest.skip("the layout is recorded for LP64")
    size, offsets = LAYOUT[struct]
    ctype = header_ffi.typeof(struct)
    assert [name for name, _ in ctype.fields] == list(offsets), "members, in order"
    assert {name: header_ffi.offsetof(struct, name) for name in offsets} == offsets
    assert header_ffi.sizeof(struct) == size


def test_every_public_struct_is_recorded(header_ffi):
    import re
    from dnsshim_build import pipeline
    declared = set(re.findall(r"typedef struct (dns_shim_[a-z_]+) \{", pipeline.header_cdef()))
    assert declared == set(LAYOUT)


def test_version_macros(abi):
    import re
    from dnsshim_build import pipeline
    import shim
    assert pipeline.header_version() == shim.__version__
    ffi, lib = abi
    major, minor, patch = (int(x) for x in shim.__version__.split("."))
    assert (lib.DNS_SHIM_VERSION_MAJOR, lib.DNS_SHIM_VERSION_MINOR,
            lib.DNS_SHIM_VERSION_PATCH) == (major, minor, patch)
    header = open(pipeline.HEADER).read()
    packed = re.search(r"#define DNS_SHIM_VERSION_NUMBER (.*)", header).group(1)
    assert eval(packed.replace("DNS_SHIM_VERSION_", "")  # noqa: S307 - our own header
                .replace("MAJOR", str(major)).replace("MINOR", str(minor))
                .replace("PATCH", str(patch))) == (major << 16) | (minor << 8) | patch
    assert ffi.string(lib.dns_shim_version()).decode().startswith(shim.__version__ + " (CPython ")
    assert pipeline.DNSSHIM.soname == f"libdnsshim.so.{major}"


def test_1_0_sizes_are_what_1_0_declared(header_ffi):
    """1.0's size of each grown struct is the offset of the first member 1.1
    appended: the library's table of known sizes is built that way."""
    if header_ffi.sizeof("void *") != 8:
        pytest.skip("the layout is recorded for LP64")
    assert header_ffi.offsetof("dns_shim_callbacks", "on_edns_option") == \
        SIZE_IN_1_0["dns_shim_callbacks"]
