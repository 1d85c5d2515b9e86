/*
 * forms_probe: which of 1.3's features an installation of the library has,
 * seen from C, built against that installation as a user builds against it
 * (its pkg-config file; tests/test_forms.py, tests/test_debian.py).  One
 * line per feature, with the exact values:
 *
 *   forms_probe --good GOOD --big BIG --small SMALL --loc LOC MESSAGE...
 *
 *   version 1.3.0 (CPython 3.11)
 *   memory limit: held+1088 KiB: big -13 (0 records: DETAIL), small 0
 *       (1 record), no limit: big 0 (4094 records)
 *                                 a counting allocator from the start, the
 *                                 limit what the runtime holds once started
 *                                 plus 1 MiB and 64 KiB (tests/test_memory.py:
 *                                 the budget), the number in DETAIL written
 *                                 LIMIT when it is that limit
 *   parallelism 2: same answers (N messages, 2 threads x R rounds)
 *   parallelism 2: STATUS DETAIL  dns_shim_set_parallelism(2) refused
 *   c-ares VERSION: ares_parse_a_reply 0 (192.0.2.1); ares_dns_parse 0 (id
 *       0x1234, 1 answer, A 192.0.2.1); a LOC of 15 octets: 10 ARES_EBADRESP
 *                                 (built with -DFORMS_PROBE_ARES, linked with
 *                                 libdnsshim_ares before c-ares: GOOD through
 *                                 the classic parser and ares_dns_parse, and
 *                                 LOC, which c-ares itself accepts and
 *                                 dnspython refuses: proof of whose
 *                                 ares_dns_parse answered)
 *
 * GOOD: example.com A 192.0.2.1, ID 0x1234 (tests/malformed.py's GOOD);
 * BIG: a 64 KiB response of 4,094 A records; SMALL: one A record
 * (tests/test_memory.py's write_big_and_small); MESSAGE...: the messages
 * the threads parse, good and malformed, whose every callback, status and
 * failure detail one interpreter's parse is compared with.
 *
 * Only <dns_shim.h> (and <ares.h>) and the C library: it compiles as a
 * user's program does, wherever the installation is.  Exit 0 once every
 * line is printed, whatever they say; 1 when dns_shim_set_allocator
 * refuses (the line says why); 2 on a usage error or an unreadable file.
 */
#include <dns_shim.h>
/* The message reader of the tools and test drivers (csrc/tools/), beside this
 * file where a test copies it to build it as a user would. */
#include "tool_util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FORMS_PROBE_ARES
#include <arpa/inet.h>
#include <ares.h>
#include <netdb.h>
/* c-ares 1.34 declares the classic parsers deprecated for ares_dns_parse:
 * the probe calls one on purpose. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#if ARES_VERSION < 0x011600
/* c-ares before 1.22 has no record API, so no declaration of it: the
 * symbol is libdnsshim_ares's (tests/test_ares_dns_parse.py's OLD). */
int ares_dns_parse(const unsigned char *buf, size_t buf_len, unsigned int flags, void **dnsrec);
#endif
#endif

#define THREADS 2
#define ROUNDS 2
/* what the limit leaves above what the runtime holds once started */
#define HEADROOM ((size_t)(1 << 20) + (64 << 10))

typedef struct {
    uint8_t *data;
    int32_t len;
} message;

/* A message file, whole (tool_util.h's reader), or exit 2. */
static message load_message(const char *path)
{
    message m = {NULL, 0};
    long len = 0;
    m.data = read_message(path, 0, &len);
    if (m.data == NULL)
        exit(2);
    if (len > 65535) {
        fprintf(stderr, "forms_probe: %s is over 65535 octets\n", path);
        exit(2);
    }
    m.len = (int32_t)len;
    return m;
}

/* ---- the host's allocator: libc's, counting what the runtime holds -------- */

#define HEADER 16 /* keeps malloc's 16-octet alignment */
static size_t held = 0;

static void *count_malloc(void *ctx, size_t size)
{
    unsigned char *p;
    (void)ctx;
    if (size > SIZE_MAX - HEADER || (p = malloc(size + HEADER)) == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    __atomic_add_fetch(&held, size, __ATOMIC_RELAXED);
    return p + HEADER;
}

static void *count_calloc(void *ctx, size_t nelem, size_t elsize)
{
    unsigned char *p;
    size_t size;
    (void)ctx;
    if (elsize != 0 && nelem > (SIZE_MAX - HEADER) / elsize)
        return NULL;
    size = nelem * elsize;
    if ((p = calloc(1, size + HEADER)) == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    __atomic_add_fetch(&held, size, __ATOMIC_RELAXED);
    return p + HEADER;
}

static void *count_realloc(void *ctx, void *ptr, size_t size)
{
    unsigned char *p, *base;
    size_t old;
    if (ptr == NULL)
        return count_malloc(ctx, size);
    if (size > SIZE_MAX - HEADER)
        return NULL;
    base = (unsigned char *)ptr - HEADER;
    memcpy(&old, base, sizeof old);
    if ((p = realloc(base, size + HEADER)) == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    __atomic_sub_fetch(&held, old, __ATOMIC_RELAXED);
    __atomic_add_fetch(&held, size, __ATOMIC_RELAXED);
    return p + HEADER;
}

static void count_free(void *ctx, void *ptr)
{
    unsigned char *base;
    size_t old;
    (void)ctx;
    if (ptr == NULL)
        return;
    base = (unsigned char *)ptr - HEADER;
    memcpy(&old, base, sizeof old);
    __atomic_sub_fetch(&held, old, __ATOMIC_RELAXED);
    free(base);
}

/* ---- one parse as a digest of everything the program is told -------------- */

typedef struct {
    uint64_t hash;     /* FNV-1a over every callback's every field */
    unsigned records;  /* record callbacks (not on_header, not options) */
} digest;

static void mix(digest *d, const void *bytes, size_t n)
{
    const unsigned char *b = bytes;
    size_t i;
    for (i = 0; i < n; i++) {
        d->hash ^= b[i];
        d->hash *= 0x100000001b3ULL;
    }
}

static void mix_u(digest *d, uint64_t v)
{
    mix(d, &v, sizeof v);
}

static void mix_s(digest *d, const char *s)
{
    if (s == NULL)
        mix_u(d, UINT64_MAX);
    else
        mix(d, s, strlen(s) + 1);
}

static void mix_b(digest *d, dns_shim_bytes b)
{
    mix_u(d, b.len);
    mix(d, b.data, b.len);
}

static void mix_rr(digest *d, unsigned kind, const dns_shim_rr *rr)
{
    d->records++;
    mix_u(d, kind);
    mix_s(d, rr->owner);
    mix_u(d, rr->type);
    mix_u(d, rr->rclass);
    mix_u(d, rr->ttl);
    mix_u(d, rr->section);
    mix_u(d, rr->index);
}

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    digest *d = ctx;
    const uint64_t fields[] = {h->id, h->flags, h->opcode, h->rcode, h->qdcount, h->ancount,
                               h->nscount, h->arcount, h->qtype, h->qclass,
                               (uint64_t)(int64_t)h->edns_version, h->edns_payload,
                               h->edns_do, h->edns_flags};
    mix(d, fields, sizeof fields);
    mix_s(d, h->qname);
    return 0;
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    digest *d = ctx;
    mix_u(d, 100 + o->code);
    mix_b(d, o->data);
    mix_u(d, (uint64_t)(int64_t)o->ede_info_code);
    mix_b(d, o->ede_text);
    mix_b(d, o->cookie_client);
    mix_b(d, o->cookie_server);
    mix_u(d, o->ecs_family);
    mix_u(d, o->ecs_source_prefix);
    mix_u(d, o->ecs_scope_prefix);
    mix_b(d, o->ecs_address);
    return 0;
}

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    mix_rr(ctx, 1, &r->rr);
    mix(ctx, r->address, sizeof r->address);
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    mix_rr(ctx, 2, &r->rr);
    mix(ctx, r->address, sizeof r->address);
    return 0;
}

#define TARGET_CALLBACK(name, kind)                                                  \
    static int32_t name(void *ctx, const dns_shim_target *r)                         \
    {                                                                                \
        mix_rr(ctx, kind, &r->rr);                                                   \
        mix_s(ctx, r->target);                                                       \
        return 0;                                                                    \
    }
TARGET_CALLBACK(on_cname, 3)
TARGET_CALLBACK(on_ns, 4)
TARGET_CALLBACK(on_ptr, 5)
TARGET_CALLBACK(on_dname, 6)

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    mix_rr(ctx, 7, &r->rr);
    mix_u(ctx, r->preference);
    mix_s(ctx, r->exchange);
    return 0;
}

static int32_t on_txt(void *ctx, const dns_shim_txt *r)
{
    size_t i;
    mix_rr(ctx, 8, &r->rr);
    mix_u(ctx, r->count);
    for (i = 0; i < r->count; i++)
        mix_b(ctx, r->strings[i]);
    return 0;
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    mix_rr(ctx, 9, &r->rr);
    mix_u(ctx, r->priority);
    mix_u(ctx, r->weight);
    mix_u(ctx, r->port);
    mix_s(ctx, r->target);
    return 0;
}

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    mix_rr(ctx, 10, &r->rr);
    mix_u(ctx, r->order);
    mix_u(ctx, r->preference);
    mix_b(ctx, r->flags);
    mix_b(ctx, r->services);
    mix_b(ctx, r->regexp);
    mix_s(ctx, r->replacement);
    return 0;
}

static int32_t on_soa(void *ctx, const dns_shim_soa *r)
{
    const uint64_t numbers[] = {r->serial, r->refresh, r->retry, r->expire, r->minimum};
    mix_rr(ctx, 11, &r->rr);
    mix_s(ctx, r->mname);
    mix_s(ctx, r->rname);
    mix(ctx, numbers, sizeof numbers);
    return 0;
}

static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    mix_rr(ctx, 12, &r->rr);
    mix_b(ctx, r->rdata);
    return 0;
}

typedef struct {
    int32_t status;
    uint64_t hash;     /* the callbacks', then the status and the failure detail */
    unsigned records;
    char detail[512];
} answer;

/* One parse with every callback and every section, as the calling thread
 * sees it. */
static answer parse(const message *m)
{
    digest d = {0xcbf29ce484222325ULL, 0};
    dns_shim_callbacks cb;
    answer a;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                  DNS_SHIM_SECTION_ADDITIONAL;
    cb.ctx = &d;
    cb.on_header = on_header;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    cb.on_cname = on_cname;
    cb.on_ns = on_ns;
    cb.on_ptr = on_ptr;
    cb.on_dname = on_dname;
    cb.on_mx = on_mx;
    cb.on_txt = on_txt;
    cb.on_srv = on_srv;
    cb.on_naptr = on_naptr;
    cb.on_soa = on_soa;
    cb.on_other = on_other;
    cb.on_edns_option = on_edns_option;
    a.status = dns_shim_process(m->data, m->len, &cb);
    snprintf(a.detail, sizeof a.detail, "%s", dns_shim_last_error());
    mix_u(&d, (uint64_t)(int64_t)a.status);
    mix_s(&d, a.detail);
    a.hash = d.hash;
    a.records = d.records;
    return a;
}

/* ---- the memory limit ------------------------------------------------------ */

/* detail with the decimal number limit written LIMIT (where it is there). */
static void limit_named(char *detail, size_t size, size_t limit)
{
    char number[32], rest[512], *at;
    snprintf(number, sizeof number, "%zu", limit);
    at = strstr(detail, number);
    if (at == NULL || at[strlen(number)] == '_' ||
        (at[strlen(number)] >= '0' && at[strlen(number)] <= '9'))
        return;
    snprintf(rest, sizeof rest, "%s", at + strlen(number));
    *at = '\0';
    if (strlen(detail) + 5 + strlen(rest) < size)
        strcat(strcat(detail, "LIMIT"), rest);
}

static void probe_memory_limit(const message *big, const message *small)
{
    size_t limit = __atomic_load_n(&held, __ATOMIC_RELAXED) + HEADROOM;
    int32_t set = dns_shim_set_memory_limit(limit);
    answer refused, after, lifted;
    if (set != DNS_SHIM_OK) {
        printf("memory limit: dns_shim_set_memory_limit %d %s\n", set, dns_shim_last_error());
        return;
    }
    refused = parse(big);
    after = parse(small);
    set = dns_shim_set_memory_limit(0);
    lifted = parse(big);
    limit_named(refused.detail, sizeof refused.detail, limit);
    printf("memory limit: held+%zu KiB: big %d (%u records%s%s), small %d (%u record%s%s%s)",
           HEADROOM >> 10, refused.status, refused.records, refused.detail[0] ? ": " : "",
           refused.detail, after.status, after.records, after.records == 1 ? "" : "s",
           after.detail[0] ? ": " : "", after.detail);
    if (set != DNS_SHIM_OK)
        printf(", dns_shim_set_memory_limit(0) %d\n", set);
    else
        printf(", no limit: big %d (%u records%s%s)\n", lifted.status, lifted.records,
               lifted.detail[0] ? ": " : "", lifted.detail);
}

/* ---- parallelism ----------------------------------------------------------- */

static message *messages;
static answer *reference;
static int count;
static pthread_barrier_t start;

typedef struct {
    int differ;  /* parses whose answer was not the reference's */
    int first;   /* the first such message, or -1 */
} tally;

static void *parse_all(void *arg)
{
    tally *t = arg;
    int round, i;
    pthread_barrier_wait(&start);
    for (round = 0; round < ROUNDS; round++)
        for (i = 0; i < count; i++) {
            answer a = parse(&messages[i]);
            if (a.status != reference[i].status || a.hash != reference[i].hash ||
                strcmp(a.detail, reference[i].detail) != 0) {
                if (t->differ++ == 0)
                    t->first = i;
            }
        }
    return NULL;
}

static void probe_parallelism(char **names)
{
    pthread_t threads[THREADS];
    tally tallies[THREADS];
    int32_t status = dns_shim_set_parallelism(2);
    int t, differ = 0, first = -1;
    if (status != DNS_SHIM_OK) {
        printf("parallelism 2: %d %s\n", status, dns_shim_last_error());
        return;
    }
    if ((status = dns_shim_init()) != DNS_SHIM_OK) {
        printf("parallelism 2: dns_shim_init %d %s\n", status, dns_shim_last_error());
        return;
    }
    pthread_barrier_init(&start, NULL, THREADS);
    for (t = 0; t < THREADS; t++) {
        tallies[t].differ = 0;
        tallies[t].first = -1;
        pthread_create(&threads[t], NULL, parse_all, &tallies[t]);
    }
    for (t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        differ += tallies[t].differ;
        if (first < 0)
            first = tallies[t].first;
    }
    pthread_barrier_destroy(&start);
    if (differ == 0)
        printf("parallelism 2: same answers (%d messages, %d threads x %d rounds)\n", count,
               THREADS, ROUNDS);
    else
        printf("parallelism 2: %d of %d answers differ (first: %s)\n", differ,
               THREADS * ROUNDS * count, names[first]);
}

/* ---- the c-ares layer ------------------------------------------------------ */

#ifdef FORMS_PROBE_ARES
static const char *ares_name(int status)
{
    switch (status) {
    case ARES_SUCCESS: return "ARES_SUCCESS";
    case ARES_ENOTIMP: return "ARES_ENOTIMP";
    case ARES_EBADRESP: return "ARES_EBADRESP";
    case ARES_EFORMERR: return "ARES_EFORMERR";
    case ARES_ENOTINITIALIZED: return "ARES_ENOTINITIALIZED";
    default: return "another code";
    }
}

static void probe_ares(const message *good, const message *loc)
{
    struct hostent *host = NULL;
    char address[INET6_ADDRSTRLEN] = "none";
    int classic = ares_parse_a_reply(good->data, good->len, &host, NULL, NULL);
    if (classic == ARES_SUCCESS && host != NULL && host->h_addr_list[0] != NULL)
        inet_ntop(host->h_addrtype, host->h_addr_list[0], address, sizeof address);
    if (host != NULL)
        ares_free_hostent(host);
    printf("c-ares %s: ares_parse_a_reply %d (%s); ", ares_version(NULL), classic, address);
#if ARES_VERSION >= 0x011600
    {
        ares_dns_record_t *rec = NULL;
        int parsed = (int)ares_dns_parse(good->data, (size_t)good->len, 0, &rec);
        int refused;
        if (parsed == ARES_SUCCESS) {
            size_t answers = ares_dns_record_rr_cnt(rec, ARES_SECTION_ANSWER);
            const ares_dns_rr_t *rr = ares_dns_record_rr_get(rec, ARES_SECTION_ANSWER, 0);
            const struct in_addr *a = NULL;
            char text[INET_ADDRSTRLEN] = "none";
            if (rr != NULL && ares_dns_rr_get_type(rr) == ARES_REC_TYPE_A)
                a = ares_dns_rr_get_addr(rr, ARES_RR_A_ADDR);
            if (a != NULL)
                inet_ntop(AF_INET, a, text, sizeof text);
            printf("ares_dns_parse 0 (id 0x%04x, %zu answer%s, %s %s)",
                   (unsigned)ares_dns_record_get_id(rec), answers, answers == 1 ? "" : "s",
                   rr == NULL ? "none" : ares_dns_rec_type_tostr(ares_dns_rr_get_type(rr)),
                   text);
        } else {
            printf("ares_dns_parse %d %s (%s)", parsed, ares_name(parsed),
                   rec == NULL ? "no record" : "a record");
        }
        ares_dns_record_destroy(rec);
        rec = NULL;
        refused = (int)ares_dns_parse(loc->data, (size_t)loc->len, 0, &rec);
        printf("; a LOC of 15 octets: %d %s\n", refused, ares_name(refused));
        ares_dns_record_destroy(rec);
    }
#else
    {
        void *rec = NULL;
        int parsed = ares_dns_parse(good->data, (size_t)good->len, 0, &rec);
        int refused;
        printf("ares_dns_parse %d %s (%s)", parsed, ares_name(parsed),
               rec == NULL ? "no record" : "a record");
        rec = NULL;
        refused = ares_dns_parse(loc->data, (size_t)loc->len, 0, &rec);
        printf("; a LOC of 15 octets: %d %s\n", refused, ares_name(refused));
    }
#endif
}
#endif

/* ---- main ------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr, "usage: forms_probe --good GOOD --big BIG --small SMALL --loc LOC "
                    "MESSAGE...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *paths[4] = {NULL, NULL, NULL, NULL};
    static const char *const options[4] = {"--good", "--big", "--small", "--loc"};
    message good, big, small, loc;
    dns_shim_allocator counting;
    int i = 1, o;
    int32_t status;

    for (; i + 1 < argc; i += 2) {
        for (o = 0; o < 4 && strcmp(argv[i], options[o]) != 0; o++)
            ;
        if (o == 4)
            break;
        paths[o] = argv[i + 1];
    }
    for (o = 0; o < 4; o++)
        if (paths[o] == NULL)
            return usage();
    if (i >= argc)
        return usage();
    good = load_message(paths[0]);
    big = load_message(paths[1]);
    small = load_message(paths[2]);
    loc = load_message(paths[3]);
    count = argc - i;
    messages = calloc((size_t)count, sizeof *messages);
    reference = calloc((size_t)count, sizeof *reference);
    if (messages == NULL || reference == NULL)
        return 2;
    for (o = 0; o < count; o++)
        messages[o] = load_message(argv[i + o]);

    printf("version %s\n", dns_shim_version());
    /* The host's allocator before the runtime starts: what it holds, for
     * the limit. */
    memset(&counting, 0, sizeof counting);
    counting.struct_size = sizeof counting;
    counting.malloc = count_malloc;
    counting.calloc = count_calloc;
    counting.realloc = count_realloc;
    counting.free = count_free;
    status = dns_shim_set_allocator(&counting);
    if (status != DNS_SHIM_OK) {
        printf("dns_shim_set_allocator %d %s\n", status, dns_shim_last_error());
        return 1;
    }
    /* One interpreter's answers: the reference (this starts the runtime). */
    for (o = 0; o < count; o++)
        reference[o] = parse(&messages[o]);
    probe_memory_limit(&big, &small);
    probe_parallelism(argv + i);
#ifdef FORMS_PROBE_ARES
    probe_ares(&good, &loc);
#else
    (void)good;
    (void)loc;
#endif
    return fflush(stdout) == 0 ? 0 : 2;
}
