/*
** fuzz_reply: libFuzzer harness of dns_shim_process_reply, each input one
** message and a query made from it.
**
** The message is read first with dns_shim_process (callbacks for on_header
** and on_edns_option only): its status, its question, its COOKIE options.
** The query is then the message's own ID, question name, type and class
** (the header's qname, which a name the library delivers must always be
** usable as), and from the last octet's bits: the ID changed (bit 0), the
** name's letters in the other case (bit 1), DNS_SHIM_MATCH_CASE (bit 2), a
** client cookie (bit 3: the message's own COOKIE's client part when it has
** one, else its last 8 octets), another qtype (bit 4).  The status must be
** the one the checks' order gives (dns_shim.h, dns_shim_process_reply):
**   - another ID: SHORT_HEADER, NOT_RESPONSE or MISMATCH as the header
**     says, before anything else;
**   - the ID right: the first read's status when that was a failure;
**     otherwise MISMATCH when QDCOUNT is not 1, the type differs, the case
**     differs under MATCH_CASE, or the cookie is not exactly one COOKIE
**     option with that client part; else OK, with the same callbacks'
**     data as the first read (a digest) and none called on a failure.
**   - never BAD_ARGUMENT, INTERNAL, INIT, NO_MEMORY or CALLBACK.
**
** Reproduce: fuzz_reply FILE...
*/
#include <ctype.h>

#include "dns_shim.h"
#include "fuzz_common.h"

static struct {
    int calls;
    int have_question;
    char qname[1100];
    uint16_t qdcount, qtype, qclass;
    int cookies;
    uint8_t client[8];
} st;

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    st.calls++;
    st.qdcount = h->qdcount;
    if (h->qname != NULL) {
        fuzz_check_name("qname", h->qname);
        FUZZ_CHECK(strlen(h->qname) < sizeof st.qname, "a qname of %zu", strlen(h->qname));
        strcpy(st.qname, h->qname);
        st.have_question = 1;
        st.qtype = h->qtype;
        st.qclass = h->qclass;
    }
    FUZZ_MIX(h->id);
    FUZZ_MIX(h->flags);
    FUZZ_MIX(h->rcode);
    FUZZ_MIX(h->edns_version);
    FUZZ_MIX(h->edns_flags);
    return 0;
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    (void)ctx;
    st.calls++;
    fuzz_check_bytes("option data", o->data.data, o->data.len);
    FUZZ_MIX(o->code);
    if (o->code == 10) {
        FUZZ_CHECK(o->cookie_client.len == 8, "client cookie of %zu", o->cookie_client.len);
        if (st.cookies++ == 0)
            memcpy(st.client, o->cookie_client.data, 8);
    }
    return 0;
}

static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    (void)ctx;
    st.calls++;
    fuzz_check_name("owner", r->rr.owner);
    fuzz_check_bytes("rdata", r->rdata.data, r->rdata.len);
    FUZZ_MIX(r->rr.type);
    return 0;
}

/* Every record to on_other (no typed callback set): all of them read. */
static const dns_shim_callbacks callbacks = {
    .struct_size = sizeof(dns_shim_callbacks),
    .sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                DNS_SHIM_SECTION_ADDITIONAL,
    .on_header = on_header, .on_other = on_other, .on_edns_option = on_edns_option,
};

static void quiet(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    if (level <= DNS_SHIM_LOG_WARNING)
        fprintf(stderr, "dnsshim log %d: %s\n", level, message);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    int32_t rc;
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_reply");
    dns_shim_set_log_handler(quiet, NULL);
    rc = dns_shim_init();
    FUZZ_CHECK(rc == DNS_SHIM_OK, "dns_shim_init: %d %s", rc, dns_shim_last_error());
    return 0;
}

static int message_status(int32_t rc)
{
    switch (rc) {
    case DNS_SHIM_OK: case DNS_SHIM_ERR_SHORT_HEADER: case DNS_SHIM_ERR_TRUNCATED:
    case DNS_SHIM_ERR_TRAILING_DATA: case DNS_SHIM_ERR_BAD_NAME: case DNS_SHIM_ERR_BAD_RDATA:
    case DNS_SHIM_ERR_NOT_RESPONSE: case DNS_SHIM_ERR_BAD_EDNS: case DNS_SHIM_ERR_FORMAT:
    case DNS_SHIM_ERR_MISMATCH:
        return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf;
    int32_t first, rc;
    uint64_t first_digest;
    uint8_t knobs = size ? data[size - 1] : 0;
    uint8_t cookie[8];
    char qname[1100];
    int case_changed = 0;
    int32_t expected;
    dns_shim_query q;

    if (size > 65535)
        return 0;
    buf = malloc(size ? size : 1);
    memcpy(buf, data, size);

    memset(&st, 0, sizeof st);
    fuzz_digest = 14695981039346656037ull;
    first = dns_shim_process(buf, (int32_t)size, &callbacks);
    FUZZ_CHECK(message_status(first) && first != DNS_SHIM_ERR_MISMATCH, "dns_shim_process: %d %s",
               first, dns_shim_last_error());
    first_digest = fuzz_digest;

    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
    if (knobs & 1)
        q.id ^= 0x5a5a;
    strcpy(qname, st.have_question ? st.qname : "example.com");
    if (knobs & 2) {
        char *p;
        for (p = qname; *p; p++)
            if (isalpha((unsigned char)*p)) {
                *p ^= 0x20;
                case_changed = 1;
            }
    }
    q.qname = qname;
    q.qtype = st.have_question ? st.qtype : 1;
    q.qclass = st.have_question ? st.qclass : 1;
    if (knobs & 16)
        q.qtype ^= 1;
    q.flags = knobs & 4 ? DNS_SHIM_MATCH_CASE : 0;
    if (knobs & 8) {
        if (st.cookies > 0)
            memcpy(cookie, st.client, 8);
        else
            memcpy(cookie, size >= 8 ? data + size - 8 : (const uint8_t *)"12345678", 8);
        q.cookie_client = cookie;
    }

    /* What the order of the checks gives. */
    if (size < 12)
        expected = DNS_SHIM_ERR_SHORT_HEADER;
    else if (!(data[2] & 0x80))
        expected = DNS_SHIM_ERR_NOT_RESPONSE;
    else if (knobs & 1)
        expected = DNS_SHIM_ERR_MISMATCH;
    else if (first != DNS_SHIM_OK)
        expected = first;
    else if (st.qdcount != 1 || (knobs & 16) || (case_changed && (knobs & 4)))
        expected = DNS_SHIM_ERR_MISMATCH;
    else if ((knobs & 8) && (st.cookies != 1 || memcmp(cookie, st.client, 8) != 0))
        expected = DNS_SHIM_ERR_MISMATCH;
    else
        expected = DNS_SHIM_OK;

    st.calls = 0;
    fuzz_digest = 14695981039346656037ull;
    rc = dns_shim_process_reply(buf, (int32_t)size, &q, &callbacks);
    FUZZ_CHECK(message_status(rc), "dns_shim_process_reply: %d %s", rc, dns_shim_last_error());
    FUZZ_CHECK(rc == expected, "dns_shim_process_reply gave %d (%s), expected %d; first read %d, "
               "qdcount %u, knobs %02x, qname \"%s\"", rc, dns_shim_last_error(), expected,
               first, st.qdcount, knobs, qname);
    FUZZ_CHECK(memcmp(buf, data, size) == 0, "the library wrote into the message");
    fuzz_stat_inputs++;
    fuzz_stat_good += rc == DNS_SHIM_OK;
    if (rc == DNS_SHIM_OK)
        FUZZ_CHECK(fuzz_digest == first_digest, "the reply delivered other data");
    else
        FUZZ_CHECK(st.calls == 0, "status %d after %d callbacks", rc, st.calls);
    free(buf);
    return 0;
}
