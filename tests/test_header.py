"""The one reader of the C headers (dnsshim_build/header.py) against
oracles that do not share its parsing: cffi's own parse of the declarations
it hands cffi, the compiler's values of the defines, the version scripts,
and the header's text for the release each versioned struct grew in."""

import re

import pytest

from dnsshim_build import header, pipeline

HEADER_TEXT = pipeline.HEADER.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def read():
    return header.read(pipeline.HEADER)


def test_every_struct_has_the_members_cffi_parses(read, header_ffi):
    structs = [(name, d) for d in read.declarations if d.kind == "struct" for name in d.names]
    assert len(structs) == 16
    for name, d in structs:
        assert [m.name for m in d.members] == [f for f, _ in header_ffi.typeof(name).fields], name


def test_the_enums_have_the_values_cffi_parses(read, header_ffi):
    enums = [name for d in read.declarations if d.kind == "enum" for name in d.names]
    assert enums == ["dns_shim_status", "dns_shim_section", "dns_shim_log_level"]
    for name in enums:
        assert read.enum(name) == dict(header_ffi.typeof(name).relements), name
    assert read.enum("dns_shim_status")["DNS_SHIM_ERR_MISMATCH"] == -16


def test_the_functions_are_the_version_scripts(read):
    exported = {name for names in pipeline.version_nodes().values() for name in names}
    private = set(pipeline.version_nodes()["DNSSHIM_PRIVATE"])
    assert private == {"dns_shim__pool_ares_take", "dns_shim__pool_ares_give",
                       "dns_shim__own_init", "dns_shim__own_start",
                       "dns_shim__set_default_log_handler", "dns_shim__service_off",
                       "dns_shim__process_reply_local", "dns_shim__runtime_fork",
                       "dns_shim__service_exchange"}
    assert set(read.function_names()) == exported - {"PyInit__dnsshim_cffi"} - private
    assert read.function_names()[:2] == ["process_dns_response", "dns_shim_register_callbacks"]
    assert [d.names[0] for d in read.functions()] == read.function_names()


def test_the_defines_and_the_version(read, header_ffi):
    defines = read.defines("DNS_SHIM_")
    assert defines == {"DNS_SHIM_VERSION_MAJOR": 1, "DNS_SHIM_VERSION_MINOR": 3,
                       "DNS_SHIM_VERSION_PATCH": 0, "DNS_SHIM_MATCH_CASE": 1,
                       "DNS_SHIM_PARALLELISM_MAX": 64}
    lib = header_ffi.dlopen(None)    # the constants only: no symbol of the library is used
    assert {k: getattr(lib, k) for k in defines} == defines
    assert read.version() == "1.3.0"
    ares = header.read(pipeline.ARES_HEADER).defines("DNSSHIM_ARES_")
    assert ares["DNSSHIM_ARES_EBADRESP"] == 10 and ares["DNSSHIM_ARES_WANT_HOST"] == 1


def test_each_versioned_struct_by_release(read):
    assert read.versioned_structs() == ["dns_shim_callbacks", "dns_shim_query",
                                        "dns_shim_allocator"]
    assert read.struct_releases("dns_shim_callbacks") == [("1.0", "on_edns_option"),
                                                          ("1.1", None)]
    assert read.struct_releases("dns_shim_query") == [("1.1", None)]
    assert read.struct_releases("dns_shim_allocator") == [("1.2", None)]
    # the oracle: the header's text marks 1.1's first member of the callbacks
    assert re.search(r"/\* 1\.1 \*/\s*dns_shim_edns_option_cb on_edns_option;", HEADER_TEXT)


def test_a_release_marked_out_of_order_is_refused():
    broken = HEADER_TEXT.replace("    /* 1.1 */\n    dns_shim_edns_option_cb on_edns_option;",
                                 "    /* 0.9 */\n    dns_shim_edns_option_cb on_edns_option;")
    assert broken != HEADER_TEXT
    with pytest.raises(ValueError, match="marked 0.9, not a release after 1.0"):
        header.parse(broken).struct_releases("dns_shim_callbacks")


def test_the_cdef_is_the_header_without_what_cffi_cannot_read(read):
    cdef = read.cdef()
    directives = [line.strip() for line in cdef.splitlines() if line.strip().startswith("#")]
    assert directives == [f"#define {k} {v}" for k, v in read.defines("DNS_SHIM_").items()]
    assert not re.search(r"\bDNS_SHIM_(API|BEGIN_DECLS|END_DECLS)\b", cdef)
    assert "#define DNS_SHIM_MATCH_CASE 1\n" in cdef
    ares = header.read(pipeline.ARES_HEADER).cdef()
    assert 'extern "Python" int32_t dnsshim_ares__py_parse(' in ares
    assert "DNSSHIM_ARES_PYTHON" not in ares and "DNSSHIM_ARES_INTERNAL" not in ares
