/*
** fuzz_ares: libFuzzer harness of libdnsshim_ares's classic c-ares parsers,
** ares_expand_name and ares_expand_string, written against c-ares's own
** <ares.h> and linked with -ldnsshim_ares alone.
**
** The first octet chooses the function (its low 4 bits: A with a hostent,
** AAAA with a hostent, NS, PTR, MX, TXT, TXT_EXT, SRV, NAPTR, CAA, URI,
** SOA, expand_name, expand_string, A and AAAA without a hostent) and a
** number (its high 4 bits: the addrttls capacity of A/AAAA, 0 to 15; the
** offset's octet for the expand functions, with the second octet); the
** rest is the message.
**
** Beyond "no crash", for each input:
**   - the code is one the function gives for a message (ARES_SUCCESS,
**     ARES_ENODATA, ARES_EBADRESP, ARES_EBADNAME; for ares_expand_name
**     ARES_SUCCESS or ARES_EBADNAME, for ares_expand_string ARES_SUCCESS or
**     ARES_EBADSTR); never ARES_ENOMEM, ARES_ENOTINITIALIZED, or another;
**   - on a failure, the output pointer is still NULL and the addrttls
**     count 0 (nothing handed out, nothing to free), but for A/AAAA's
**     ARES_ENODATA, which may carry a hostent as c-ares 1.18's does;
**   - on ARES_SUCCESS every output field is read whole (ASan sees an
**     overrun): a hostent's name, its NULL-terminated aliases and address
**     list, the family and length of the parser's (AF_INET/4 for A,
**     AF_INET6/16 for AAAA; PTR's address list the address asked for);
**     addrttls at most the capacity, each address one of the hostent's, in
**     order, its TTL not negative; each list's strings (TXT and CAA octets
**     with c-ares's NUL at [length]), at least one element and at most one
**     for each 11 octets, or each octet for TXT strings (an empty list,
**     ARES_SUCCESS and NULL, only where the answers are of other types:
**     not for SOA), SOA's names, an expand's encoded length within the
**     message past the offset;
**   - then everything is freed with the function c-ares says
**     (ares_free_hostent, ares_free_data, ares_free_string): LeakSanitizer
**     reports whatever the layer allocated and a free function missed.
**
** Reproduce: fuzz_ares FILE... (a file of tests/regressions/, a message
** alone: DNSSHIM_FUZZ_EVERY_KIND=1 fuzz_ares FILE..., every function on it)
*/
#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>

#include "fuzz_common.h"

enum { A, AAAA, NS, PTR, MX, TXT, TXT_EXT, SRV, NAPTR, CAA, URI, SOA, EXPAND_NAME,
       EXPAND_STRING, A_NO_HOST, AAAA_NO_HOST };

static const char *const names[] = {"a", "aaaa", "ns", "ptr", "mx", "txt", "txt_ext", "srv",
                                    "naptr", "caa", "uri", "soa", "expand_name",
                                    "expand_string", "a (no host)", "aaaa (no host)"};

static int parser_code(int rc)
{
    return rc == ARES_SUCCESS || rc == ARES_ENODATA || rc == ARES_EBADRESP ||
           rc == ARES_EBADNAME;
}

/* Every field of a hostent read; its number of addresses. */
static int check_hostent(const char *what, const struct hostent *h, int family, int length)
{
    int i;
    FUZZ_CHECK(h != NULL, "%s: ARES_SUCCESS without a hostent", what);
    fuzz_check_cstring("h_name", h->h_name);
    FUZZ_CHECK(h->h_aliases != NULL, "%s: h_aliases NULL", what);
    for (i = 0; h->h_aliases[i] != NULL; i++) {
        FUZZ_CHECK(i < 65536, "%s: aliases without an end", what);
        fuzz_check_cstring("alias", h->h_aliases[i]);
    }
    FUZZ_CHECK(h->h_addrtype == family && h->h_length == length,
               "%s: addrtype %d length %d, expected %d %d", what, h->h_addrtype, h->h_length,
               family, length);
    FUZZ_CHECK(h->h_addr_list != NULL, "%s: h_addr_list NULL", what);
    for (i = 0; h->h_addr_list[i] != NULL; i++) {
        FUZZ_CHECK(i < 65536, "%s: addresses without an end", what);
        fuzz_mix(h->h_addr_list[i], (size_t)length);
    }
    return i;
}

static void addresses(int kind, const unsigned char *m, int n, int cap)
{
    struct hostent *host = NULL;
    struct ares_addrttl ttls[16];
    struct ares_addr6ttl ttls6[16];
    int count = cap, i, naddrs = 0, rc;
    int with_host = kind == A || kind == AAAA;
    int v4 = kind == A || kind == A_NO_HOST;

    if (v4)
        rc = ares_parse_a_reply(m, n, with_host ? &host : NULL, ttls, &count);
    else
        rc = ares_parse_aaaa_reply(m, n, with_host ? &host : NULL, ttls6, &count);
    FUZZ_CHECK(parser_code(rc) && rc != ARES_EBADNAME, "%s: code %d (%s)", names[kind], rc,
               ares_strerror(rc));
    if (rc != ARES_SUCCESS) {
        /* c-ares 1.18's ARES_ENODATA may come with a hostent (a CNAME and
        ** no address): the caller frees it. */
        if (rc == ARES_ENODATA && host != NULL) {
            check_hostent(names[kind], host, v4 ? AF_INET : AF_INET6, v4 ? 4 : 16);
            ares_free_hostent(host);
            host = NULL;
        }
        FUZZ_CHECK(host == NULL, "%s: code %d with a hostent", names[kind], rc);
        FUZZ_CHECK(count == 0, "%s: code %d with %d addrttls", names[kind], rc, count);
        return;
    }
    fuzz_stat_good++;
    if (with_host)
        naddrs = check_hostent(names[kind], host, v4 ? AF_INET : AF_INET6, v4 ? 4 : 16);
    FUZZ_CHECK(count >= 0 && count <= cap, "%s: %d addrttls for %d", names[kind], count, cap);
    if (with_host)
        FUZZ_CHECK(count == (naddrs < cap ? naddrs : cap), "%s: %d addrttls, %d addresses, cap %d",
                   names[kind], count, naddrs, cap);
    for (i = 0; i < count; i++) {
        const void *addr = v4 ? (const void *)&ttls[i].ipaddr : (const void *)&ttls6[i].ip6addr;
        int ttl = v4 ? ttls[i].ttl : ttls6[i].ttl;
        FUZZ_CHECK(ttl >= 0, "%s: TTL %d", names[kind], ttl);
        if (with_host)
            FUZZ_CHECK(memcmp(addr, host->h_addr_list[i], v4 ? 4 : 16) == 0,
                       "%s: addrttl %d is not the hostent's address %d", names[kind], i, i);
    }
    if (host != NULL)
        ares_free_hostent(host);
}

static void hostent_kind(int kind, const unsigned char *m, int n)
{
    struct hostent *host = NULL;
    static const unsigned char addr[4] = {192, 0, 2, 1};
    int rc = kind == NS ? ares_parse_ns_reply(m, n, &host)
                        : ares_parse_ptr_reply(m, n, addr, 4, AF_INET, &host);
    FUZZ_CHECK(parser_code(rc), "%s: code %d (%s)", names[kind], rc, ares_strerror(rc));
    if (rc != ARES_SUCCESS) {
        FUZZ_CHECK(host == NULL, "%s: code %d with a hostent", names[kind], rc);
        return;
    }
    fuzz_stat_good++;
    if (kind == PTR) {
        int naddrs = check_hostent("ptr", host, AF_INET, 4);
        FUZZ_CHECK(naddrs == 1 && memcmp(host->h_addr_list[0], addr, 4) == 0,
                   "ptr: %d addresses, not the one asked for", naddrs);
    } else {
        check_hostent("ns", host, AF_INET, 4);
    }
    ares_free_hostent(host);
}

/* A list kind: every element read; freed with ares_free_data. */
static void list_kind(int kind, const unsigned char *m, int n)
{
    void *out = NULL;
    int rc, count = 0;
    switch (kind) {
    case MX: rc = ares_parse_mx_reply(m, n, (struct ares_mx_reply **)&out); break;
    case TXT: rc = ares_parse_txt_reply(m, n, (struct ares_txt_reply **)&out); break;
    case TXT_EXT: rc = ares_parse_txt_reply_ext(m, n, (struct ares_txt_ext **)&out); break;
    case SRV: rc = ares_parse_srv_reply(m, n, (struct ares_srv_reply **)&out); break;
    case NAPTR: rc = ares_parse_naptr_reply(m, n, (struct ares_naptr_reply **)&out); break;
    case CAA: rc = ares_parse_caa_reply(m, n, (struct ares_caa_reply **)&out); break;
    case URI: rc = ares_parse_uri_reply(m, n, (struct ares_uri_reply **)&out); break;
    default: rc = ares_parse_soa_reply(m, n, (struct ares_soa_reply **)&out); break;
    }
    FUZZ_CHECK(parser_code(rc), "%s: code %d (%s)", names[kind], rc, ares_strerror(rc));
    if (rc != ARES_SUCCESS) {
        FUZZ_CHECK(out == NULL, "%s: code %d with a result", names[kind], rc);
        return;
    }
    /* An empty list (answers of other types only) is ARES_SUCCESS and NULL;
    ** SOA's ARES_SUCCESS always has its record. */
    FUZZ_CHECK(out != NULL || kind != SOA, "soa: ARES_SUCCESS without a result");
    fuzz_stat_good++;
    if (out == NULL)
        return;
    switch (kind) {
    case MX: {
        struct ares_mx_reply *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_cstring("mx host", r->host);
            FUZZ_MIX(r->priority);
        }
        break;
    }
    case TXT: {
        struct ares_txt_reply *r;
        for (r = out; r; r = r->next, count++)
            fuzz_check_bytes("txt", r->txt, r->length);
        break;
    }
    case TXT_EXT: {
        struct ares_txt_ext *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_bytes("txt_ext", r->txt, r->length);
            FUZZ_CHECK(r->record_start <= 1, "record_start %u", r->record_start);
        }
        FUZZ_CHECK(((struct ares_txt_ext *)out)->record_start == 1,
                   "the first TXT string does not start a record");
        break;
    }
    case SRV: {
        struct ares_srv_reply *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_cstring("srv host", r->host);
            FUZZ_MIX(r->port);
        }
        break;
    }
    case NAPTR: {
        struct ares_naptr_reply *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_cstring("naptr flags", (const char *)r->flags);
            fuzz_check_cstring("naptr service", (const char *)r->service);
            fuzz_check_cstring("naptr regexp", (const char *)r->regexp);
            fuzz_check_cstring("naptr replacement", r->replacement);
        }
        break;
    }
    case CAA: {
        struct ares_caa_reply *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_bytes("caa property", r->property, r->plength);
            fuzz_check_bytes("caa value", r->value, r->length);
            FUZZ_CHECK(r->critical >= 0 && r->critical <= 255, "caa critical %d", r->critical);
        }
        break;
    }
    case URI: {
        struct ares_uri_reply *r;
        for (r = out; r; r = r->next, count++) {
            fuzz_check_cstring("uri", r->uri);
            FUZZ_CHECK(r->ttl >= 0, "uri ttl %d", r->ttl);
        }
        break;
    }
    default: {
        struct ares_soa_reply *r = out;
        fuzz_check_cstring("soa nsname", r->nsname);
        fuzz_check_cstring("soa hostmaster", r->hostmaster);
        count = 1;
        break;
    }
    }
    /* Each element takes a record's 11 octets at least; a TXT element is
    ** one string of a record, its length octet at least. */
    FUZZ_CHECK(count >= 1 && count <= (kind == TXT || kind == TXT_EXT ? n : n / 11),
               "%s: %d elements from %d octets", names[kind], count, n);
    ares_free_data(out);
}

static void expand(int kind, const unsigned char *m, int n, int offset)
{
    unsigned char *s = NULL;
    long enclen = -1;
    int rc;
    if (offset > n)
        offset = n;
    if (kind == EXPAND_NAME)
        rc = ares_expand_name(m + offset, m, n, (char **)&s, &enclen);
    else
        rc = ares_expand_string(m + offset, m, n, &s, &enclen);
    FUZZ_CHECK(rc == ARES_SUCCESS || rc == (kind == EXPAND_NAME ? ARES_EBADNAME : ARES_EBADSTR),
               "%s at %d: code %d (%s)", names[kind], offset, rc, ares_strerror(rc));
    if (rc != ARES_SUCCESS) {
        FUZZ_CHECK(s == NULL, "%s: code %d with a string", names[kind], rc);
        return;
    }
    FUZZ_CHECK(s != NULL, "%s: ARES_SUCCESS without a string", names[kind]);
    fuzz_stat_good++;
    FUZZ_CHECK(enclen >= 1 && enclen <= n - offset, "%s at %d: enclen %ld of %d octets",
               names[kind], offset, enclen, n);
    fuzz_check_cstring(names[kind], (const char *)s);
    ares_free_string(s);
}

/* DNSSHIM_FUZZ_EVERY_KIND=1: each input is a message alone (a file of
** tests/regressions/), given to every function (capacity 15, the expand
** functions at offset 12, the question). */
static int every_kind;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *e = getenv("DNSSHIM_FUZZ_EVERY_KIND");
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_ares");
    every_kind = e != NULL && strcmp(e, "1") == 0;
    return 0;
}

static void one(int kind, int knob, const uint8_t *message, int n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int kind;
    if (every_kind) {
        if (size > 65535)
            return 0;
        for (kind = 0; kind < 16; kind++)
            one(kind, kind >= EXPAND_NAME && kind <= EXPAND_STRING ? 0 : 15, data, (int)size);
        return 0;
    }
    if (size < 1 || size > 65536)
        return 0;
    one(data[0] & 15, data[0] >> 4, data + 1, (int)size - 1);
    return 0;
}

static void one(int kind, int knob, const uint8_t *message, int n)
{
    unsigned char *m;
    /* The message alone, in a block of its size: an overrun is ASan's. */
    m = malloc(n ? (size_t)n : 1);
    memcpy(m, message, (size_t)n);
    fuzz_stat_inputs++;
    switch (kind) {
    case A: case AAAA: case A_NO_HOST: case AAAA_NO_HOST:
        addresses(kind, m, n, knob);
        break;
    case NS: case PTR:
        hostent_kind(kind, m, n);
        break;
    case EXPAND_NAME: case EXPAND_STRING:
        if (every_kind)
            expand(kind, m, n, n > 12 ? 12 : n);
        else
            expand(kind, m, n, n > 0 ? (knob << 8 | m[0]) % (n + 1) : 0);
        break;
    default:
        list_kind(kind, m, n);
        break;
    }
    FUZZ_CHECK(memcmp(m, message, (size_t)n) == 0, "%s wrote into the message", names[kind]);
    free(m);
}
