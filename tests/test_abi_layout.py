"""The ABI's layout, recorded: a change to the size or a member offset of a
public struct fails here, so that it is never made by accident (append
members only, and only where the header's versioning rule allows)."""

import re
import subprocess

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


def test_layout_as_the_c_compiler_lays_it_out(tmp_path):
    """Every size and offset above, from sizeof and offsetof in a program the
    C compiler builds with the header (not from cffi's reading of it)."""
    from dnsshim_build import pipeline

    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "dns_shim.h"',
             "int main(void) {", '    if (sizeof(void *) != 8) { puts("not LP64"); return 0; }']
    for struct, (_, offsets) in sorted(LAYOUT.items()):
        lines.append(f'    printf("{struct} %zu\\n", sizeof({struct}));')
        lines += [f'    printf("{struct}.{m} %zu\\n", offsetof({struct}, {m}));'
                  for m in offsets]
    lines += ["    return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    program = pipeline.compile_program([src], tmp_path / "layout", libraries=())
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    if out == "not LP64\n":
        pytest.skip("the layout is recorded for LP64")
    measured = dict(line.split() for line in out.splitlines())
    expected = {}
    for struct, (size, offsets) in LAYOUT.items():
        expected[struct] = str(size)
        expected.update({f"{struct}.{m}": str(o) for m, o in offsets.items()})
    assert measured == expected


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
    from dnsshim_build import header, pipeline
    declared = {name for d in header.read(pipeline.HEADER).declarations if d.kind == "struct"
                for name in d.names}
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


# ---- the sizes the library accepts, from the header ---------------------------------

#: What a test program defines in place of the library's other units, so that
#: csrc/lib/api.c (the checks of every struct that crosses from the program)
#: can be compiled alone against a header copy: a failure prints its text.
SIZE_PROBE = r"""
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char last[512];
int32_t dns_shim__ok(void) { last[0] = '\0'; return DNS_SHIM_OK; }
int32_t dns_shim__fail(int32_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last, sizeof last, fmt, ap);
    va_end(ap);
    return status;
}
int dns_shim__service_run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                          const dns_shim_callbacks *callbacks, int32_t *status)
{
    (void)buf; (void)len; (void)query; (void)callbacks; (void)status;
    return 0;
}
int32_t dns_shim__run_here(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                           const dns_shim_callbacks *callbacks)
{
    (void)buf; (void)len; (void)query; (void)callbacks;
    return DNS_SHIM_OK;
}
void dns_shim__fork_watch(void) {}

int main(void)
{
    static const uint8_t message[12];
    dns_shim_callbacks cb;
    dns_shim_query query;
    uint32_t size;

    for (size = 0; size < 4096; size++) {
        memset(&cb, 0, sizeof cb);
        cb.struct_size = size;
        if (dns_shim_register_callbacks(&cb) == DNS_SHIM_OK)
            printf("callbacks %u\n", (unsigned)size);
        memset(&query, 0, sizeof query);
        query.struct_size = size;
        query.qname = "example.com";
        if (dns_shim_process_reply(message, 12, &query, NULL) == DNS_SHIM_OK)
            printf("query %u\n", (unsigned)size);
    }
    cb.struct_size = 7;
    printf("%d %s\n", (int)dns_shim_register_callbacks(&cb), last);
    query.struct_size = 7;
    printf("%d %s\n", (int)dns_shim_process_reply(message, 12, &query, NULL), last);
    return 0;
}
"""


def accepted_sizes(header_text: str, where) -> list:
    """What csrc/lib/api.c, compiled against a header with that text and
    the sizes the build generates from it, accepts and says: the lines of
    SIZE_PROBE's output."""
    from dnsshim_build import pipeline

    include = where / "include"
    include.mkdir()
    (include / "dns_shim.h").write_text(header_text, encoding="utf-8")
    pipeline.kinds_header(include)
    (include / pipeline.GENERATED_HEADER).write_text(
        pipeline.generated_defines(include / "dns_shim.h"), encoding="utf-8")
    probe = where / "probe.c"
    probe.write_text(SIZE_PROBE, encoding="utf-8")
    program = pipeline.compile_program([probe, pipeline.CSRC / "lib" / "api.c"], where / "probe",
                                       flags=[f"-I{include}"], cflags=["-Werror"])
    return subprocess.run([str(program)], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def _grow(text: str, struct: str, last: str, release: str, member: str) -> str:
    """The header's text with a member appended to a struct by a release
    (last: the struct's last line as written)."""
    end = f"    {last}\n}} {struct};"
    assert text.count(end) == 1, f"{struct} does not end with {last}"
    return text.replace(end, f"    {last}\n    /* {release} */\n    {member};\n}} {struct};")


def test_the_sizes_accepted_are_the_headers(tmp_path, header_ffi):
    """api.c accepts, for dns_shim_callbacks and dns_shim_query, exactly each
    release's size (computed by the compiler from the header), and says
    which they are when it refuses another."""
    if header_ffi.sizeof("void *") != 8:
        pytest.skip("the layout is recorded for LP64")
    from dnsshim_build import pipeline

    assert accepted_sizes(pipeline.HEADER.read_text(encoding="utf-8"), tmp_path) == [
        "query 32", "callbacks 120", "callbacks 128",
        "-12 the callbacks set's struct_size is 7, not one this library knows "
        "(120 for 1.0, 128 for 1.1 and later)",
        "-12 the query's struct_size is 7, not one this library knows (32)"]


def test_a_member_appended_by_a_release_is_one_more_size(tmp_path, header_ffi):
    """A header copy where a new release appends a member to each versioned
    struct (a comment naming the release before it, as the header does for
    1.1's on_edns_option): the library built from it accepts one more size
    of each, that release's, with no edit anywhere else."""
    if header_ffi.sizeof("void *") != 8:
        pytest.skip("the layout is recorded for LP64")
    from dnsshim_build import header, pipeline

    text = pipeline.HEADER.read_text(encoding="utf-8")
    grown = _grow(text, "dns_shim_callbacks", "dns_shim_edns_option_cb on_edns_option;", "1.3",
                  "dns_shim_raw_cb on_future")
    grown = _grow(grown, "dns_shim_query", "const uint8_t *cookie_client;  /* 8 octets, or NULL */",
                  "1.3", "uint32_t future")
    assert header.parse(grown).struct_releases("dns_shim_callbacks") == [
        ("1.0", "on_edns_option"), ("1.1", "on_future"), ("1.3", None)]
    assert accepted_sizes(grown, tmp_path) == [
        "query 32", "query 40", "callbacks 120", "callbacks 128", "callbacks 136",
        "-12 the callbacks set's struct_size is 7, not one this library knows "
        "(120 for 1.0, 128 for 1.1, 136 for 1.3 and later)",
        "-12 the query's struct_size is 7, not one this library knows "
        "(32 for 1.1, 40 for 1.3 and later)"]


def test_no_size_of_a_versioned_struct_is_written_by_hand():
    """The library's C has no size of a versioned struct of its own: no
    sizeof of one, every table of sizes comes from the generated
    DNS_SHIM__SIZES_<struct> (a number or a sizeof there would be a size
    that a release's new member does not update), and each versioned struct
    has its table."""
    from dnsshim_build import header, pipeline

    structs = header.read(pipeline.HEADER).versioned_structs()
    assert {"dns_shim_callbacks", "dns_shim_query", "dns_shim_allocator"} <= set(structs)
    tables = []
    for path in sorted((pipeline.CSRC / "lib").glob("*.[ch]")):
        code = re.sub(r"/\*.*?\*/", " ", path.read_text(encoding="utf-8"), flags=re.S)
        for struct in structs:
            assert not re.search(rf"\bsizeof\s*\(?\s*{struct}\b", code), (path.name, struct)
        for name, body in re.findall(r"\buint32_t\s+(\w+)\s*\[\s*\]\s*=\s*\{(.*?)\};", code, re.S):
            table = re.fullmatch(r"\s*DNS_SHIM__SIZES_(\w+)\(DNS_SHIM__SIZE\)\s*", body)
            assert table, (path.name, name, body)
            tables.append(table.group(1))
    assert sorted(tables) == sorted(structs)
