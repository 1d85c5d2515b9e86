/*
** fuzz_process: libFuzzer harness of process_dns_response (the registered
** callbacks, every section) and dns_shim_process (the same callbacks for
** one call), each input one message.
**
** Beyond "no crash", for each input:
**   - the status is 0 or one of the statuses a message can get
**     (dns_shim.h): SHORT_HEADER, TRUNCATED, TRAILING_DATA, BAD_NAME,
**     BAD_RDATA, NOT_RESPONSE, BAD_EDNS, FORMAT; never INTERNAL, INIT,
**     NO_MEMORY (no limit is set), CALLBACK (the callbacks return 0) or a
**     value outside the enum; under 12 octets SHORT_HEADER, QR clear
**     NOT_RESPONSE; dns_shim_last_error() "" after 0, naming the status
**     otherwise;
**   - all or nothing: a failed message reached no callback;
**   - on 0: on_header first and once, its fields those of the wire header
**     (ID, flags, opcode, the four counts, the rcode's low 4 bits, qname
**     NULL exactly when QDCOUNT is 0, the EDNS fields' consistency); the
**     options after it and before any record; then one record per RR of
**     each section (the OPT record taking none), in section order, each
**     index its position; each record's section one bit, its TTL below
**     2^31, each typed callback's type and class IN; every name a valid
**     presentation name, every byte string NUL-terminated at data[len]
**     (every octet read: ASan sees an overrun); EDNS options' decoded
**     fields as documented;
**   - the message buffer is unchanged, and dns_shim_process delivers
**     exactly what process_dns_response did (a digest of every field).
**
** Reproduce: fuzz_process FILE... (libFuzzer runs each file once).
*/
#include "dns_shim.h"
#include "fuzz_common.h"

static struct {
    int calls;        /* callbacks this message */
    int headers;
    int records[3];   /* per section */
    int last_section; /* 0 before the first record */
    int options;
    dns_shim_header h;
} st;

static int section_slot(uint32_t section)
{
    FUZZ_CHECK(section == 1 || section == 2 || section == 4, "a record's section is %u", section);
    return section == 1 ? 0 : section == 2 ? 1 : 2;
}

static void check_rr(const dns_shim_rr *rr, const char *cb, int type)
{
    int slot = section_slot(rr->section);
    st.calls++;
    FUZZ_CHECK(st.headers == 1, "%s before on_header", cb);
    FUZZ_CHECK(rr->section >= (uint32_t)st.last_section, "%s: section %u after section %d", cb,
               rr->section, st.last_section);
    st.last_section = (int)rr->section;
    FUZZ_CHECK(rr->index == (uint32_t)st.records[slot], "%s: index %u, expected %d", cb,
               rr->index, st.records[slot]);
    st.records[slot]++;
    fuzz_check_name("owner", rr->owner);
    FUZZ_CHECK(rr->ttl < 0x80000000u, "%s: ttl %u has its top bit set", cb, rr->ttl);
    if (type >= 0) {
        FUZZ_CHECK(rr->type == type, "%s for type %u", cb, rr->type);
        FUZZ_CHECK(rr->rclass == 1, "%s for class %u", cb, rr->rclass);
    }
    FUZZ_MIX(rr->type);
    FUZZ_MIX(rr->rclass);
    FUZZ_MIX(rr->ttl);
    FUZZ_MIX(rr->section);
}

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    FUZZ_CHECK(st.calls == 0, "on_header after %d calls", st.calls);
    st.calls++;
    st.headers++;
    st.h = *h;
    if (h->qname != NULL)
        fuzz_check_name("qname", h->qname);
    FUZZ_MIX(h->id);
    FUZZ_MIX(h->flags);
    FUZZ_MIX(h->rcode);
    FUZZ_MIX(h->qtype);
    FUZZ_MIX(h->qclass);
    FUZZ_MIX(h->edns_version);
    FUZZ_MIX(h->edns_payload);
    FUZZ_MIX(h->edns_flags);
    return 0;
}

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_a", 1);
    FUZZ_MIX(r->address);
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_aaaa", 28);
    FUZZ_MIX(r->address);
    return 0;
}

#define TARGET_CB(name, type)                                   \
    static int32_t name(void *ctx, const dns_shim_target *r)   \
    {                                                           \
        (void)ctx;                                              \
        check_rr(&r->rr, #name, type);                          \
        fuzz_check_name(#name " target", r->target);            \
        return 0;                                               \
    }
TARGET_CB(on_cname, 5)
TARGET_CB(on_ns, 2)
TARGET_CB(on_ptr, 12)
TARGET_CB(on_dname, 39)

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_mx", 15);
    FUZZ_MIX(r->preference);
    fuzz_check_name("exchange", r->exchange);
    return 0;
}

static int32_t on_txt(void *ctx, const dns_shim_txt *r)
{
    size_t i;
    (void)ctx;
    check_rr(&r->rr, "on_txt", 16);
    FUZZ_CHECK(r->count >= 1 && r->count <= 65535, "TXT count %zu", r->count);
    FUZZ_CHECK(r->strings != NULL, "TXT strings NULL");
    for (i = 0; i < r->count; i++)
        fuzz_check_bytes("TXT string", r->strings[i].data, r->strings[i].len);
    return 0;
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_srv", 33);
    FUZZ_MIX(r->priority);
    FUZZ_MIX(r->weight);
    FUZZ_MIX(r->port);
    fuzz_check_name("SRV target", r->target);
    return 0;
}

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_naptr", 35);
    FUZZ_MIX(r->order);
    FUZZ_MIX(r->preference);
    fuzz_check_bytes("NAPTR flags", r->flags.data, r->flags.len);
    fuzz_check_bytes("NAPTR services", r->services.data, r->services.len);
    fuzz_check_bytes("NAPTR regexp", r->regexp.data, r->regexp.len);
    fuzz_check_name("NAPTR replacement", r->replacement);
    return 0;
}

static int32_t on_soa(void *ctx, const dns_shim_soa *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_soa", 6);
    fuzz_check_name("mname", r->mname);
    fuzz_check_name("rname", r->rname);
    FUZZ_MIX(r->serial);
    FUZZ_MIX(r->minimum);
    return 0;
}

static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    (void)ctx;
    check_rr(&r->rr, "on_other", -1);
    FUZZ_CHECK(r->rr.type != 41, "an OPT record reached on_other");
    fuzz_check_bytes("rdata", r->rdata.data, r->rdata.len);
    return 0;
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    (void)ctx;
    st.calls++;
    st.options++;
    FUZZ_CHECK(st.headers == 1 && st.last_section == 0, "an option after a record or no header");
    FUZZ_CHECK(st.h.edns_version >= 0, "an option without an OPT record");
    FUZZ_MIX(o->code);
    fuzz_check_bytes("option data", o->data.data, o->data.len);
    fuzz_check_bytes("EDE text", o->ede_text.data, o->ede_text.len);
    fuzz_check_bytes("client cookie", o->cookie_client.data, o->cookie_client.len);
    fuzz_check_bytes("server cookie", o->cookie_server.data, o->cookie_server.len);
    fuzz_check_bytes("ECS address", o->ecs_address.data, o->ecs_address.len);
    if (o->code == 15) {
        FUZZ_CHECK(o->ede_info_code >= 0 && o->ede_info_code <= 65535, "EDE info %d",
                   o->ede_info_code);
        FUZZ_CHECK(o->data.len >= 2, "an EDE of %zu octets", o->data.len);
    } else {
        FUZZ_CHECK(o->ede_info_code == -1 && o->ede_text.len == 0, "EDE fields for code %u",
                   o->code);
    }
    if (o->code == 10) {
        FUZZ_CHECK(o->cookie_client.len == 8, "client cookie of %zu", o->cookie_client.len);
        FUZZ_CHECK(o->cookie_server.len == 0 ||
                       (o->cookie_server.len >= 8 && o->cookie_server.len <= 32),
                   "server cookie of %zu", o->cookie_server.len);
        FUZZ_CHECK(o->data.len == 8 + o->cookie_server.len, "COOKIE data of %zu", o->data.len);
    } else {
        FUZZ_CHECK(o->cookie_client.len == 0 && o->cookie_server.len == 0,
                   "cookie fields for code %u", o->code);
    }
    if (o->code == 8) {
        FUZZ_CHECK(o->ecs_family == 1 || o->ecs_family == 2, "ECS family %u", o->ecs_family);
        FUZZ_CHECK(o->ecs_source_prefix <= (o->ecs_family == 1 ? 32 : 128) &&
                       o->ecs_scope_prefix <= (o->ecs_family == 1 ? 32 : 128),
                   "ECS prefixes %u %u", o->ecs_source_prefix, o->ecs_scope_prefix);
        FUZZ_CHECK(o->ecs_address.len == (size_t)(o->ecs_source_prefix + 7) / 8,
                   "ECS address of %zu octets for a /%u", o->ecs_address.len,
                   o->ecs_source_prefix);
    } else {
        FUZZ_CHECK(o->ecs_family == 0 && o->ecs_address.len == 0, "ECS fields for code %u",
                   o->code);
    }
    return 0;
}

static const dns_shim_callbacks callbacks = {
    .struct_size = sizeof(dns_shim_callbacks),
    .sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                DNS_SHIM_SECTION_ADDITIONAL,
    .on_header = on_header, .on_a = on_a, .on_aaaa = on_aaaa, .on_cname = on_cname,
    .on_ns = on_ns, .on_ptr = on_ptr, .on_dname = on_dname, .on_mx = on_mx, .on_txt = on_txt,
    .on_srv = on_srv, .on_naptr = on_naptr, .on_soa = on_soa, .on_other = on_other,
    .on_edns_option = on_edns_option,
};

static void quiet(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    /* An internal error is a finding: its traceback is worth seeing. */
    if (level <= DNS_SHIM_LOG_WARNING)
        fprintf(stderr, "dnsshim log %d: %s\n", level, message);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int32_t rc;
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_process");
    dns_shim_set_log_handler(quiet, NULL);
    rc = dns_shim_init();
    FUZZ_CHECK(rc == DNS_SHIM_OK, "dns_shim_init: %d %s", rc, dns_shim_last_error());
    rc = dns_shim_register_callbacks(&callbacks);
    FUZZ_CHECK(rc == DNS_SHIM_OK, "register: %d", rc);
    return 0;
}

static int message_status(int32_t rc)
{
    switch (rc) {
    case DNS_SHIM_OK: case DNS_SHIM_ERR_SHORT_HEADER: case DNS_SHIM_ERR_TRUNCATED:
    case DNS_SHIM_ERR_TRAILING_DATA: case DNS_SHIM_ERR_BAD_NAME: case DNS_SHIM_ERR_BAD_RDATA:
    case DNS_SHIM_ERR_NOT_RESPONSE: case DNS_SHIM_ERR_BAD_EDNS: case DNS_SHIM_ERR_FORMAT:
        return 1;
    }
    return 0;
}

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* One run: the status, every check on what was delivered; the digest. */
static int32_t run(const uint8_t *data, size_t size, uint8_t *buf, int per_call,
                   uint64_t *digest)
{
    int32_t rc;
    const char *detail;
    memset(&st, 0, sizeof st);
    fuzz_digest = 14695981039346656037ull;
    rc = per_call ? dns_shim_process(buf, (int32_t)size, &callbacks)
                  : process_dns_response(buf, (int32_t)size);
    detail = dns_shim_last_error();
    FUZZ_CHECK(message_status(rc), "status %d (%s): %s", rc, dns_shim_strerror(rc), detail);
    FUZZ_CHECK(memcmp(buf, data, size) == 0, "the library wrote into the message");
    if (size < 12)
        FUZZ_CHECK(rc == DNS_SHIM_ERR_SHORT_HEADER, "%zu octets gave %d", size, rc);
    else if (!(data[2] & 0x80))
        FUZZ_CHECK(rc == DNS_SHIM_ERR_NOT_RESPONSE, "QR clear gave %d", rc);
    if (rc != DNS_SHIM_OK) {
        FUZZ_CHECK(st.calls == 0, "status %d after %d callbacks", rc, st.calls);
        FUZZ_CHECK(detail != NULL && *detail != '\0', "status %d without a detail", rc);
        *digest = 0;
        return rc;
    }
    FUZZ_CHECK(detail != NULL && *detail == '\0', "OK with a detail: %s", detail);
    FUZZ_CHECK(st.headers == 1, "OK with %d headers", st.headers);
    {
        const dns_shim_header *h = &st.h;
        int opt = h->edns_version >= 0;
        FUZZ_CHECK(h->id == be16(data) && h->flags == be16(data + 2), "id/flags");
        FUZZ_CHECK(h->opcode == ((h->flags >> 11) & 0xF), "opcode %u", h->opcode);
        FUZZ_CHECK((h->rcode & 0xF) == (h->flags & 0xF), "rcode %u, flags %04x", h->rcode,
                   h->flags);
        FUZZ_CHECK(opt || h->rcode < 16, "an extended rcode %u without OPT", h->rcode);
        FUZZ_CHECK(h->qdcount == be16(data + 4) && h->ancount == be16(data + 6) &&
                       h->nscount == be16(data + 8) && h->arcount == be16(data + 10),
                   "counts");
        FUZZ_CHECK((h->qname == NULL) == (h->qdcount == 0), "qname %s with qdcount %u",
                   h->qname ? h->qname : "NULL", h->qdcount);
        FUZZ_CHECK(h->qdcount != 0 || (h->qtype == 0 && h->qclass == 0), "qtype without qname");
        FUZZ_CHECK(h->edns_version >= -1 && h->edns_version <= 255, "edns version %d",
                   h->edns_version);
        FUZZ_CHECK(opt || (h->edns_payload == 0 && h->edns_do == 0 && h->edns_flags == 0 &&
                           st.options == 0), "EDNS fields without OPT");
        FUZZ_CHECK(h->edns_do == (h->edns_flags >> 15), "edns_do %u flags %04x", h->edns_do,
                   h->edns_flags);
        FUZZ_CHECK(st.records[0] == h->ancount && st.records[1] == h->nscount &&
                       st.records[2] == h->arcount - opt,
                   "records delivered %d/%d/%d for counts %u/%u/%u (OPT %d)", st.records[0],
                   st.records[1], st.records[2], h->ancount, h->nscount, h->arcount, opt);
    }
    *digest = fuzz_digest;
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf;
    uint64_t registered, per_call;
    int32_t a, b;
    if (size > 65535) {
        FUZZ_CHECK(process_dns_response((uint8_t *)data, 65536) == DNS_SHIM_ERR_BAD_LENGTH,
                   "65536 octets");
        return 0;
    }
    /* A copy of exactly the message's size (libFuzzer's data is one too):
    ** a read past the end is ASan's. */
    buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    fuzz_stat_inputs++;
    a = run(data, size, buf, 0, &registered);
    b = run(data, size, buf, 1, &per_call);
    FUZZ_CHECK(a == b && registered == per_call,
               "process_dns_response gave %d, dns_shim_process %d (digests %llx %llx)", a, b,
               (unsigned long long)registered, (unsigned long long)per_call);
    fuzz_stat_good += a == DNS_SHIM_OK;
    free(buf);
    return 0;
}
