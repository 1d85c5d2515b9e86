/*
** fuzz_service: libFuzzer harness of libdnsshim's reader of the parse
** service's answer (csrc/lib/service.c: dns_shim__service_read), the
** untrusted input of a call made through dnsshimd.  service.c, dispatch.c
** (the plan check and the calls) and failure.c are compiled into the
** harness from the library's own sources with its internal header and the
** build's generated headers; no Python, no socket, no memory.c: this file
** defines dns_shim__memory_host (the host's allocator: none, libc's, or a
** counting one that can refuse) and dns_shim__fork_watch (dns_shim.c's).
**
** The input, in order (each octet 0 once the input is used up):
**   config   bits 0-1: the frame (0: the rest of the input, as it is; 1: a
**            well-formed answer's head, then the rest of the input: magic,
**            version, kind 0, status 0, detail length 0 and a step count
**            from an octet; 2, 3: an answer the harness builds from the
**            input's choices, step by step, well-formed but for a few
**            choices: a code that is none, a name past 1,024 octets, a byte
**            string past the end, a TXT count of 0 or 65,536, a section of
**            no bit, has_qname 2); bit 2: the callbacks' struct_size is
**            1.0's (up to on_other), else the whole struct; bit 3: a u16
**            mask follows, whose bits 0-13 make those callbacks NULL
**            (on_header, on_a ... on_other, on_edns_option) and bit 14
**            passes no callbacks set at all; bits 4-5: the allocator (0:
**            dns_shim__memory_host returns 0, libc's; 1, 2: counting; 3:
**            counting, refusing after N blocks, N from an octet, 0 to 2);
**            bit 6: a callback fails (two octets: at which call, 0 to 255,
**            and what it returns); bit 7 with frame 0: the op is
**            DNS_SHIM__WIRE_OP_PING, else _PARSE
**   sections the set's sections (the low 3 bits)
**   ...      the octets the bits above ask for, then the frame's octets or
**            choices.  The frame (without its 4-octet length) is handed
**            over in a block of exactly its size.
**
** Beyond "no crash" (ASan, UBSan), for each input:
**   - the reader's verdict (1: the call made; 0: the call falls back) is the
**     harness's own, written from service_wire.h's format and dispatch.c's
**     plan rules: the magic and version, a detail of at most 2,047 octets
**     without a NUL, the fixed fields whole; a fault, another kind, a
**     status that is not a verdict (dns_shim__wire_verdict), steps or
**     octets after a failure's fixed fields, more than 65,536 steps, steps
**     without a callbacks set, a ping with anything but 0 and nothing are
**     refused; a parse's steps each a known code and its struct whole (a
**     name at most 1,024 octets without a NUL, bytes at most 65,535, TXT
**     counts 1 to 65,535, has_qname 0 or 1), nothing after the last step,
**     each step's callback within struct_size and set, each record's
**     section one DNS_SHIM_SECTION_* bit; an allocator that refuses the
**     reader's block makes it fall back;
**   - on 0: no callback ran; `why` is a non-empty text, NUL-terminated
**     within its 512 octets;
**   - on 1 for a ping: status 0, no callback; for a failure verdict: that
**     status, no callback, dns_shim_last_error() the detail sent; for a
**     parse: the callbacks called in the order of the steps, each one that
**     is set in the set, each struct what the step carries, field by field,
**     with every string NUL-terminated within 1,024 octets, every
**     dns_shim_bytes with data not NULL, len at most 65,535 and data[len]
**     a NUL, TXT counts 1 to 65,535, sections one bit; a callback's
**     non-zero return stops the calls there, with DNS_SHIM_ERR_CALLBACK and
**     a detail naming it; else status 0, every step called, no detail;
**   - with the counting allocator, every block the reader took is given
**     back (to it) when the call returns; with libc's, LeakSanitizer.
** The order is checked too: on_header first and once, the EDNS options
** before the records, each record of a section the set asked for (0: the
** answer), records in wire order (section, then index, rising); and a
** failure's detail is never empty.  Beyond these, what the answer says is
** the service's word.
**
** The stats line's "good": the inputs whose call reached a callback.
**
** Reproduce: fuzz_service FILE...
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"
#include "lib/service_wire.h"

#include "fuzz_common.h"
#include "fuzz_input.h"

/* failure.c's locks register the library's fork handler first (dns_shim.c,
** not in this harness): no fork here. */
void dns_shim__fork_watch(void) {}

/* ------------------------------------------------------------------ */
/* The host's allocator (memory.c's dns_shim__memory_host, replaced)    */

#define LIVE_MAX 64
static struct {
    int mode;          /* 0 libc, else counting */
    long refuse_after; /* -1: never */
    unsigned long taken, refused;
    void *live[LIVE_MAX];
    size_t nlive;
} host;

static void live_add(void *p)
{
    FUZZ_CHECK(host.nlive < LIVE_MAX, "more than %d blocks held at once", LIVE_MAX);
    host.live[host.nlive++] = p;
}

static void live_remove(void *p, const char *what)
{
    size_t i;
    for (i = 0; i < host.nlive; i++)
        if (host.live[i] == p) {
            host.live[i] = host.live[--host.nlive];
            return;
        }
    FUZZ_CHECK(0, "%s of %p, a block the host's allocator did not give", what, p);
}

static int host_refuses(void)
{
    if (host.refuse_after >= 0 && host.taken >= (unsigned long)host.refuse_after) {
        host.refused++;
        return 1;
    }
    host.taken++;
    return 0;
}

static void *host_malloc(void *ctx, size_t n)
{
    void *p;
    FUZZ_CHECK(ctx == &host, "the allocator's ctx is not its own");
    if (host_refuses())
        return NULL;
    p = malloc(n ? n : 1);
    FUZZ_CHECK(p != NULL, "libc refused %zu octets", n);
    live_add(p);
    return p;
}

static void *host_calloc(void *ctx, size_t k, size_t n)
{
    void *p;
    FUZZ_CHECK(ctx == &host, "the allocator's ctx is not its own");
    if (host_refuses())
        return NULL;
    p = calloc(k ? k : 1, n ? n : 1);
    FUZZ_CHECK(p != NULL, "libc refused %zu x %zu octets", k, n);
    live_add(p);
    return p;
}

static void *host_realloc(void *ctx, void *old, size_t n)
{
    void *p;
    FUZZ_CHECK(ctx == &host, "the allocator's ctx is not its own");
    if (host_refuses())
        return NULL;
    if (old != NULL)
        live_remove(old, "realloc");
    p = realloc(old, n ? n : 1);
    FUZZ_CHECK(p != NULL, "libc refused %zu octets", n);
    live_add(p);
    return p;
}

static void host_free(void *ctx, void *p)
{
    FUZZ_CHECK(ctx == &host, "the allocator's ctx is not its own");
    if (p == NULL)
        return;
    live_remove(p, "free");
    free(p);
}

int dns_shim__memory_host(dns_shim_allocator *out)
{
    if (host.mode == 0)
        return 0;
    out->struct_size = sizeof *out;
    out->ctx = &host;
    out->malloc = host_malloc;
    out->calloc = host_calloc;
    out->realloc = host_realloc;
    out->free = host_free;
    return 1;
}

/* ------------------------------------------------------------------ */
/* The callbacks, and what each step carries                            */

#define MEMBERS(X)                                                              \
    X(on_header, dns_shim_header, DNS_SHIM__WIRE_HEADER, "22222222Q224222")       \
    X(on_a, dns_shim_a, 1, "Rv")                                                  \
    X(on_aaaa, dns_shim_aaaa, 28, "Rw")                                           \
    X(on_cname, dns_shim_target, 5, "RN")                                         \
    X(on_ns, dns_shim_target, 2, "RN")                                            \
    X(on_ptr, dns_shim_target, 12, "RN")                                          \
    X(on_dname, dns_shim_target, 39, "RN")                                        \
    X(on_mx, dns_shim_mx, 15, "R2N")                                              \
    X(on_txt, dns_shim_txt, 16, "RS")                                             \
    X(on_srv, dns_shim_srv, 33, "R222N")                                          \
    X(on_naptr, dns_shim_naptr, 35, "R22BBBN")                                    \
    X(on_soa, dns_shim_soa, 6, "RNN44444")                                        \
    X(on_other, dns_shim_raw, DNS_SHIM__WIRE_OTHER, "RB")                         \
    X(on_edns_option, dns_shim_edns_option, DNS_SHIM__WIRE_EDNS_OPTION, "2B4BBB211B")
#define OFFSET(m, t, c, s) offsetof(dns_shim_callbacks, m),
#define CODE(m, t, c, s) (uint16_t)(c),
#define SPEC(m, t, c, s) s,
#define NAME(m, t, c, s) #m,
static const size_t offsets[] = {MEMBERS(OFFSET)};
static const uint16_t codes[] = {MEMBERS(CODE)};
/* Each step's fields in wire order (service_wire.h): 1/2/4 an integer of
** that many octets; v, w 4 and 16 raw octets; N a name; B bytes; S a TXT
** record's strings (u32 count, then count bytes); Q has_qname and its
** name; R a record's dns_shim_rr (owner, type, rclass, ttl, section,
** index). */
static const char *const specs[] = {MEMBERS(SPEC)};
static const char *const member_names[] = {MEMBERS(NAME)};
#define NMEMBERS (sizeof offsets / sizeof offsets[0])
enum { HEADER = 0, OTHER = 12, EDNS = 13 };

/* One field's value: a number, a text (p NULL: none), bytes, raw octets. */
enum { V_NUM, V_TEXT, V_BYTES, V_RAW };
typedef struct val {
    int kind;
    uint32_t num;
    const uint8_t *p;
    size_t len;
} val;

typedef struct vec {
    val *v;
    size_t n, cap;
} vec;

static void push(vec *x, int kind, uint32_t num, const uint8_t *p, size_t len)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 64;
        x->v = realloc(x->v, x->cap * sizeof *x->v);
        FUZZ_CHECK(x->v != NULL, "no memory for the harness");
    }
    x->v[x->n].kind = kind;
    x->v[x->n].num = num;
    x->v[x->n].p = p;
    x->v[x->n].len = len;
    x->n++;
}

/* The steps the harness reads in the answer: each one's member and its
** values (expected.v[first[i] .. first[i + 1]]). */
static struct {
    int accept;                /* the harness's verdict */
    size_t count;              /* steps decoded */
    int *member;
    size_t *first;             /* count + 1 entries */
    size_t cap;
    vec expected;
} plan;

static void plan_add_step(int member)
{
    if (plan.count + 1 >= plan.cap) {
        plan.cap = plan.cap ? 2 * plan.cap : 64;
        plan.member = realloc(plan.member, plan.cap * sizeof *plan.member);
        plan.first = realloc(plan.first, (plan.cap + 1) * sizeof *plan.first);
        FUZZ_CHECK(plan.member && plan.first, "no memory for the harness");
    }
    plan.member[plan.count] = member;
    plan.first[plan.count] = plan.expected.n;
    plan.count++;
}

/* The wire read the harness's way: a cursor and a failed flag. */
typedef struct cur {
    const uint8_t *p;
    size_t left;
    int bad;
} cur;

static const uint8_t *take(cur *c, size_t n)
{
    const uint8_t *p;
    if (c->bad || n > c->left) {
        c->bad = 1;
        return NULL;
    }
    p = c->p;
    c->p += n;
    c->left -= n;
    return p;
}

static uint32_t num(cur *c, size_t n)
{
    const uint8_t *p = take(c, n);
    uint32_t v = 0;
    size_t i;
    for (i = 0; p != NULL && i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static void w_name(cur *c, vec *x)
{
    size_t n = num(c, 2);
    const uint8_t *p;
    if (c->bad || n > 1024) {
        c->bad = 1;
        return;
    }
    p = take(c, n);
    if (p == NULL || memchr(p, 0, n) != NULL) {
        c->bad = 1;
        return;
    }
    push(x, V_TEXT, 0, p, n);
}

static void w_bytes(cur *c, vec *x)
{
    uint32_t n = num(c, 4);
    const uint8_t *p;
    if (c->bad || n > 65535) {
        c->bad = 1;
        return;
    }
    p = take(c, n);
    if (p != NULL)
        push(x, V_BYTES, 0, p, n);
}

/* One step's fields by its spec; 0 when they are not all there or not
** each well-formed. */
static int w_fields(cur *c, const char *spec, vec *x)
{
    for (; *spec && !c->bad; spec++) {
        switch (*spec) {
        case '1': case '2': case '4': {
            uint32_t v = num(c, (size_t)(*spec - '0'));
            if (!c->bad)
                push(x, V_NUM, v, NULL, 0);
            break;
        }
        case 'v': case 'w': {
            size_t n = *spec == 'v' ? 4 : 16;
            const uint8_t *p = take(c, n);
            if (p != NULL)
                push(x, V_RAW, 0, p, n);
            break;
        }
        case 'N':
            w_name(c, x);
            break;
        case 'B':
            w_bytes(c, x);
            break;
        case 'S': {
            uint32_t k, count = num(c, 4);
            if (c->bad || count == 0 || count > 65535) {
                c->bad = 1;
                break;
            }
            push(x, V_NUM, count, NULL, 0);
            for (k = 0; k < count && !c->bad; k++)
                w_bytes(c, x);
            break;
        }
        case 'Q': {
            uint32_t has = num(c, 1);
            if (c->bad || has > 1)
                c->bad = 1;
            else if (has == 0)
                push(x, V_TEXT, 0, NULL, 0);
            else
                w_name(c, x);
            break;
        }
        case 'R':
            if (!w_fields(c, "N22444", x))
                return 0;
            break;
        }
    }
    return !c->bad;
}

/* The harness's verdict on the steps of a parse's answer whose status is 0,
** for this callbacks set: 1 when the reader must make the calls. */
static int w_steps(cur *c, uint32_t count, const dns_shim_callbacks *cb)
{
    uint32_t i, last_section = 0, last_index = 0;
    int records = 0;
    for (i = 0; i < count; i++) {
        uint16_t code = (uint16_t)num(c, 2);
        size_t m, at;
        void (*fn)(void);
        if (c->bad)
            return 0;
        for (m = 0; m < NMEMBERS && codes[m] != code; m++)
            ;
        if (m == NMEMBERS)
            return 0;
        plan_add_step((int)m);
        at = plan.expected.n;
        if (!w_fields(c, specs[m], &plan.expected))
            return 0;
        /* The plan check: a callback within struct_size and set; a record's
        ** section one bit. */
        if (cb == NULL || offsets[m] + sizeof fn > cb->struct_size)
            return 0;
        memcpy(&fn, (const char *)cb + offsets[m], sizeof fn);
        if (fn == NULL)
            return 0;
        if (m != HEADER && m != EDNS) {
            uint32_t s = plan.expected.v[at + 4].num, index = plan.expected.v[at + 5].num;
            uint32_t asked = cb->sections ? cb->sections : 1;
            if (s != 1 && s != 2 && s != 4)
                return 0;
            /* The order and sections the call asked for (service.c's
            ** check_order, from dns_shim.h's "Order of calls"). */
            if (!(s & asked))
                return 0;
            if (records && (s < last_section || (s == last_section && index <= last_index)))
                return 0;
            records = 1;
            last_section = s;
            last_index = index;
        } else if (m == HEADER ? i != 0 : records) {
            return 0;
        }
    }
    plan.first[plan.count] = plan.expected.n;
    return c->left == 0;
}

/* ------------------------------------------------------------------ */
/* What each callback finds                                             */

static struct {
    const void *ctx;
    size_t called;
    long fail_at; /* -1: none fails */
    int32_t fail_with;
    vec actual;
} run;

static void a_num(uint32_t v)
{
    push(&run.actual, V_NUM, v, NULL, 0);
}

/* A text the header promises: not NULL (but a header's qname), a NUL
** within 1,024 octets (strnlen reads no further: ASan sees an overrun). */
static void a_text(const char *what, const char *s, int may_be_null)
{
    size_t n;
    if (s == NULL) {
        FUZZ_CHECK(may_be_null, "%s is NULL", what);
        push(&run.actual, V_TEXT, 0, NULL, 0);
        return;
    }
    n = strnlen(s, 1025);
    FUZZ_CHECK(n <= 1024, "%s is not NUL-terminated within 1024 octets", what);
    push(&run.actual, V_TEXT, 0, (const uint8_t *)s, n);
}

static void a_bytes(const char *what, const dns_shim_bytes *b)
{
    FUZZ_CHECK(b->data != NULL, "%s.data is NULL", what);
    FUZZ_CHECK(b->len <= 65535, "%s.len is %zu", what, b->len);
    FUZZ_CHECK(b->data[b->len] == '\0', "%s has no NUL at data[len]", what);
    push(&run.actual, V_BYTES, 0, b->data, b->len);
}

static void a_rr(const dns_shim_rr *rr)
{
    a_text("owner", rr->owner, 0);
    FUZZ_CHECK(rr->section == 1 || rr->section == 2 || rr->section == 4,
               "a record's section is %u", (unsigned)rr->section);
    a_num(rr->type);
    a_num(rr->rclass);
    a_num(rr->ttl);
    a_num(rr->section);
    a_num(rr->index);
}

/* The struct member m got, as values in wire order. */
static void a_struct(int m, const void *arg)
{
    switch (m) {
    case HEADER: {
        const dns_shim_header *h = arg;
        a_num(h->id), a_num(h->flags), a_num(h->opcode), a_num(h->rcode);
        a_num(h->qdcount), a_num(h->ancount), a_num(h->nscount), a_num(h->arcount);
        a_text("qname", h->qname, 1);
        a_num(h->qtype), a_num(h->qclass), a_num((uint32_t)h->edns_version);
        a_num(h->edns_payload), a_num(h->edns_do), a_num(h->edns_flags);
        return;
    }
    case EDNS: {
        const dns_shim_edns_option *o = arg;
        a_num(o->code);
        a_bytes("data", &o->data);
        a_num((uint32_t)o->ede_info_code);
        a_bytes("ede_text", &o->ede_text);
        a_bytes("cookie_client", &o->cookie_client);
        a_bytes("cookie_server", &o->cookie_server);
        a_num(o->ecs_family), a_num(o->ecs_source_prefix), a_num(o->ecs_scope_prefix);
        a_bytes("ecs_address", &o->ecs_address);
        return;
    }
    }
    a_rr(arg);
    switch (m) {
    case 1:
        push(&run.actual, V_RAW, 0, ((const dns_shim_a *)arg)->address, 4);
        break;
    case 2:
        push(&run.actual, V_RAW, 0, ((const dns_shim_aaaa *)arg)->address, 16);
        break;
    case 3: case 4: case 5: case 6:
        a_text("target", ((const dns_shim_target *)arg)->target, 0);
        break;
    case 7: {
        const dns_shim_mx *k = arg;
        a_num(k->preference);
        a_text("exchange", k->exchange, 0);
        break;
    }
    case 8: {
        const dns_shim_txt *k = arg;
        size_t i;
        FUZZ_CHECK(k->count >= 1 && k->count <= 65535, "a TXT record's count is %zu", k->count);
        FUZZ_CHECK(k->strings != NULL, "a TXT record's strings are NULL");
        a_num((uint32_t)k->count);
        for (i = 0; i < k->count; i++)
            a_bytes("string", &k->strings[i]);
        break;
    }
    case 9: {
        const dns_shim_srv *k = arg;
        a_num(k->priority), a_num(k->weight), a_num(k->port);
        a_text("target", k->target, 0);
        break;
    }
    case 10: {
        const dns_shim_naptr *k = arg;
        a_num(k->order), a_num(k->preference);
        a_bytes("flags", &k->flags);
        a_bytes("services", &k->services);
        a_bytes("regexp", &k->regexp);
        a_text("replacement", k->replacement, 0);
        break;
    }
    case 11: {
        const dns_shim_soa *k = arg;
        a_text("mname", k->mname, 0);
        a_text("rname", k->rname, 0);
        a_num(k->serial), a_num(k->refresh), a_num(k->retry), a_num(k->expire);
        a_num(k->minimum);
        break;
    }
    case OTHER:
        a_bytes("rdata", &((const dns_shim_raw *)arg)->rdata);
        break;
    }
}

static int32_t reached(const void *ctx, int m, const void *arg)
{
    size_t i = run.called, k, first, n;
    FUZZ_CHECK(plan.accept, "%s called for an answer the harness refuses", member_names[m]);
    FUZZ_CHECK(ctx == run.ctx, "%s got another ctx", member_names[m]);
    FUZZ_CHECK(i < plan.count, "%s called after the answer's %zu steps", member_names[m],
               plan.count);
    FUZZ_CHECK(plan.member[i] == m, "step %zu is to %s, %s called", i,
               member_names[plan.member[i]], member_names[m]);
    FUZZ_CHECK(run.fail_at < 0 || i <= (size_t)run.fail_at,
               "%s called after a callback returned %d", member_names[m], (int)run.fail_with);
    run.actual.n = 0;
    a_struct(m, arg);
    first = plan.first[i];
    n = plan.first[i + 1] - first;
    FUZZ_CHECK(run.actual.n == n, "step %zu (%s): %zu values, the answer has %zu", i,
               member_names[m], run.actual.n, n);
    for (k = 0; k < n; k++) {
        const val *a = &run.actual.v[k], *e = &plan.expected.v[first + k];
        FUZZ_CHECK(a->kind == e->kind, "step %zu (%s): value %zu's kind", i, member_names[m], k);
        if (a->kind == V_NUM)
            FUZZ_CHECK(a->num == e->num, "step %zu (%s): value %zu is %u, the answer has %u", i,
                       member_names[m], k, (unsigned)a->num, (unsigned)e->num);
        else
            FUZZ_CHECK((a->p == NULL) == (e->p == NULL) && a->len == e->len &&
                           (a->len == 0 || memcmp(a->p, e->p, a->len) == 0),
                       "step %zu (%s): value %zu (%zu octets) is not the answer's (%zu)", i,
                       member_names[m], k, a->len, e->len);
    }
    run.called++;
    return (long)i == run.fail_at ? run.fail_with : 0;
}

#define CALLBACK(m, t, c, s)                                                \
    static int32_t cb_##m(void *ctx, const t *arg)                          \
    {                                                                       \
        return reached(ctx, m##_index, arg);                                \
    }
/* Each member's index, for its callback. */
enum {
#define INDEX(m, t, c, s) m##_index,
    MEMBERS(INDEX)
#undef INDEX
};
MEMBERS(CALLBACK)

/* ------------------------------------------------------------------ */
/* An answer built from the input's choices (frame 2, 3)                */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n)
{
    if (b->cap - b->n < n) {
        while (b->cap - b->n < n)
            b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
        FUZZ_CHECK(b->p != NULL, "no memory for the harness");
    }
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_u(buf *b, uint32_t v, size_t n)
{
    uint8_t o[4];
    size_t i;
    for (i = 0; i < n; i++)
        o[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    put(b, o, n);
}

/* n octets of the input (0 once it is used up), NUL an 'a' when no_nul. */
static void put_input(buf *b, fuzz_input *in, size_t n, int no_nul)
{
    size_t i;
    for (i = 0; i < n; i++) {
        uint8_t c = fuzz_u8(in);
        if (c == 0 && no_nul)
            c = 'a';
        put(b, &c, 1);
    }
}

/* A name: mostly 0 to 47 octets; 1,020 to 1,029 (past 1,024: refused);
** one with a NUL inside (refused). */
static void build_name(buf *b, fuzz_input *in)
{
    uint8_t o = fuzz_u8(in);
    size_t n = o < 240 ? o % 48 : o < 250 ? 1020 + (size_t)(o - 240) : 1024;
    put_u(b, (uint32_t)n, 2);
    put_input(b, in, n, o != 239);
}

/* Bytes: 0 to 39 octets; a length past the end (refused). */
static void build_bytes(buf *b, fuzz_input *in)
{
    uint8_t o = fuzz_u8(in);
    if (o >= 252) {
        put_u(b, o == 255 ? 65536 : 65535, 4);
        return;
    }
    put_u(b, o % 40, 4);
    put_input(b, in, o % 40, 0);
}

static void build_fields(buf *b, fuzz_input *in, const char *spec)
{
    for (; *spec; spec++) {
        switch (*spec) {
        case '1': case '2': case '4':
            put_input(b, in, (size_t)(*spec - '0'), 0);
            break;
        case 'v': case 'w':
            put_input(b, in, *spec == 'v' ? 4 : 16, 0);
            break;
        case 'N':
            build_name(b, in);
            break;
        case 'B':
            build_bytes(b, in);
            break;
        case 'S': {
            uint8_t o = fuzz_u8(in);
            uint32_t k, count = o == 250 ? 0 : o == 251 ? 65536 : 1 + o % 4u;
            put_u(b, count, 4);
            for (k = 0; k < count && k < 4; k++)
                build_bytes(b, in);
            break;
        }
        case 'Q': {
            uint8_t o = fuzz_u8(in);
            put_u(b, o == 255 ? 2 : o & 1u, 1);
            if (o != 255 && (o & 1))
                build_name(b, in);
            break;
        }
        case 'R': {
            uint8_t o;
            build_name(b, in);                    /* owner */
            put_input(b, in, 8, 0);               /* type, rclass, ttl */
            o = fuzz_u8(in);                      /* section: mostly one bit */
            put_u(b, o < 250 ? 1u << (o % 3) : o == 255 ? fuzz_u32(in) : o % 9u, 4);
            put_input(b, in, 4, 0);               /* index */
            break;
        }
        }
    }
}

/* Frame 2, 3: a verdict of status 0 and its steps, each from an octet (its
** member, mostly; else any code), then its fields. */
static void build_answer(buf *b, fuzz_input *in)
{
    uint32_t count = fuzz_u8(in) % 32u, i;
    put_u(b, DNS_SHIM__WIRE_RESPONSE_MAGIC, 4);
    put_u(b, DNS_SHIM__WIRE_VERSION, 2);
    put_u(b, DNS_SHIM__WIRE_VERDICT, 2);
    put_u(b, 0, 4);
    put_u(b, 0, 2);
    put_u(b, count, 4);
    for (i = 0; i < count; i++) {
        uint8_t o = fuzz_u8(in);
        if (o >= 252) {
            put_u(b, fuzz_u16(in), 2);
            continue;
        }
        put_u(b, codes[o % NMEMBERS], 2);
        build_fields(b, in, specs[o % NMEMBERS]);
    }
}

/* ------------------------------------------------------------------ */
/* One input                                                            */

#define WHYLEN 512

/* The harness's verdict on the whole answer (the head, then the steps). */
static int verdict_of(const uint8_t *frame, size_t n, int op, const dns_shim_callbacks *cb,
                      int32_t *status, const uint8_t **detail, size_t *detlen)
{
    cur c = {frame, n, 0};
    uint32_t magic = num(&c, 4), version = num(&c, 2), kind = num(&c, 2), count;
    *status = (int32_t)num(&c, 4);
    *detlen = num(&c, 2);
    if (c.bad || magic != DNS_SHIM__WIRE_RESPONSE_MAGIC || version != DNS_SHIM__WIRE_VERSION ||
        *detlen > DNS_SHIM__WIRE_DETAIL_MAX)
        return 0;
    *detail = take(&c, *detlen);
    if (*detail == NULL || memchr(*detail, 0, *detlen) != NULL)
        return 0;
    count = num(&c, 4);
    if (c.bad || kind != DNS_SHIM__WIRE_VERDICT || !dns_shim__wire_verdict(*status))
        return 0;
    if (op == DNS_SHIM__WIRE_OP_PING)
        return *status == 0 && count == 0 && c.left == 0;
    if (*status != 0)
        return count == 0 && c.left == 0 && *detlen > 0;
    if (count > DNS_SHIM__WIRE_STEPS_MAX || (count > 0 && cb == NULL))
        return 0;
    return w_steps(&c, count, cb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int32_t fail_values[8] = {1, -1, 2, 7, -11, 100, INT32_MAX, INT32_MIN};
    static int ctx_mark;
    fuzz_input in = {data, size};
    dns_shim_callbacks full, *cb = NULL;
    uint8_t config, mode;
    buf built = {NULL, 0, 0};
    uint16_t mask = 0;
    int op, rc, alloc_mode;
    size_t i, n, detlen = 0;
    uint8_t *frame;
    char *why;
    int32_t status = 12345, expected_status = 0;
    const uint8_t *detail = NULL;

    fuzz_stats_start("fuzz_service");
    fuzz_stat_inputs++;
    config = fuzz_u8(&in);
    mode = config & 3;
    memset(&full, 0, sizeof full);
#define SET(m, t, c, s) full.m = cb_##m;
    MEMBERS(SET)
#undef SET
    full.struct_size = config & 4 ? offsetof(dns_shim_callbacks, on_edns_option)
                                  : sizeof(dns_shim_callbacks);
    full.sections = fuzz_u8(&in) & 7;
    full.ctx = &ctx_mark;
    if (config & 8) {
        mask = fuzz_u16(&in);
        for (i = 0; i < NMEMBERS; i++)
            if (mask & (1u << i))
                memset((char *)&full + offsets[i], 0, sizeof(void (*)(void)));
    }
    op = mode == 0 && (config & 128) ? DNS_SHIM__WIRE_OP_PING : DNS_SHIM__WIRE_OP_PARSE;
    alloc_mode = (config >> 4) & 3;
    host.mode = alloc_mode;
    host.refuse_after = alloc_mode == 3 ? fuzz_u8(&in) % 3 : -1;
    host.taken = host.refused = 0;
    host.nlive = 0;
    run.fail_at = -1;
    if (config & 64) {
        run.fail_at = fuzz_u8(&in);
        run.fail_with = fail_values[fuzz_u8(&in) & 7];
    }
    run.called = 0;
    run.ctx = &ctx_mark;
    if (mode == 1) {
        put_u(&built, DNS_SHIM__WIRE_RESPONSE_MAGIC, 4);
        put_u(&built, DNS_SHIM__WIRE_VERSION, 2);
        put_u(&built, DNS_SHIM__WIRE_VERDICT, 2);
        put_u(&built, 0, 4);
        put_u(&built, 0, 2);
        put_u(&built, fuzz_u8(&in), 4);
    }
    if (mode >= 2)
        build_answer(&built, &in);
    else
        put(&built, in.p, in.n);

    /* The callbacks set in a block of exactly its struct_size (a 1.0
    ** caller's has nothing after on_other), or none. */
    if (!(mask & (1u << 14))) {
        cb = malloc(full.struct_size);
        FUZZ_CHECK(cb != NULL, "no memory for the harness");
        memcpy(cb, &full, full.struct_size);
    }
    n = built.n;
    frame = malloc(n ? n : 1);
    why = malloc(WHYLEN);
    FUZZ_CHECK(frame != NULL && why != NULL, "no memory for the harness");
    if (n)
        memcpy(frame, built.p, n);
    free(built.p);
    memset(why, 0x55, WHYLEN);

    if (plan.cap == 0)
        plan_add_step(0); /* the arrays made once */
    plan.count = 0;
    plan.expected.n = 0;
    plan.accept = verdict_of(frame, n, op, cb, &expected_status, &detail, &detlen);

    dns_shim__error[0] = '\0';
    rc = dns_shim__service_read(frame, n, op, cb, &status, why, WHYLEN);

    FUZZ_CHECK(host.nlive == 0, "%zu blocks of the host's allocator held after the call",
               host.nlive);
    FUZZ_CHECK(rc == 0 || rc == 1, "dns_shim__service_read returned %d", rc);
    if (rc == 0) {
        size_t wl = strnlen(why, WHYLEN);
        FUZZ_CHECK(run.called == 0, "%zu callbacks ran for an answer not used", run.called);
        FUZZ_CHECK(wl > 0 && wl < WHYLEN, "why is %s", wl ? "not NUL-terminated" : "empty");
        FUZZ_CHECK(!plan.accept || host.refused > 0,
                   "an answer the harness takes refused: %s", why);
        goto done;
    }
    FUZZ_CHECK(host.refused == 0, "the allocator refused and the answer was used");
    FUZZ_CHECK(plan.accept, "an answer the harness refuses was used (status %d)", (int)status);
    FUZZ_CHECK(status == 0 || status == DNS_SHIM_ERR_CALLBACK || dns_shim__wire_verdict(status),
               "status %d is neither a verdict nor a callback's", (int)status);
    if (op == DNS_SHIM__WIRE_OP_PING || expected_status != 0) {
        size_t got = strlen(dns_shim_last_error());
        FUZZ_CHECK(run.called == 0, "%zu callbacks ran for a %s", run.called,
                   op == DNS_SHIM__WIRE_OP_PING ? "ping" : "failure verdict");
        FUZZ_CHECK(status == expected_status, "status %d, the answer says %d", (int)status,
                   (int)expected_status);
        /* The detail sent, whole (failure.c may drop a UTF-8 character
        ** left incomplete at the 2,047th octet). */
        if (op == DNS_SHIM__WIRE_OP_PING)
            FUZZ_CHECK(got == 0, "a ping left the detail \"%s\"", dns_shim_last_error());
        else
            FUZZ_CHECK((got == detlen || (detlen == DNS_SHIM__WIRE_DETAIL_MAX &&
                                          got + 3 >= detlen && got <= detlen)) &&
                           memcmp(dns_shim_last_error(), detail, got) == 0,
                       "the detail is \"%s\", not the %zu octets sent", dns_shim_last_error(),
                       detlen);
        goto done;
    }
    fuzz_stat_good += run.called > 0;
    if (run.fail_at >= 0 && (size_t)run.fail_at < plan.count) {
        const char *name = member_names[plan.member[run.fail_at]];
        FUZZ_CHECK(run.called == (size_t)run.fail_at + 1,
                   "%zu callbacks called, the one at %ld failed", run.called, run.fail_at);
        FUZZ_CHECK(status == DNS_SHIM_ERR_CALLBACK, "status %d after %s returned %d",
                   (int)status, name, (int)run.fail_with);
        FUZZ_CHECK(strncmp(dns_shim_last_error(), "DNS_SHIM_ERR_CALLBACK: ", 23) == 0 &&
                       strstr(dns_shim_last_error(), name) != NULL,
                   "the detail \"%s\" does not name %s", dns_shim_last_error(), name);
    } else {
        FUZZ_CHECK(status == 0, "status %d, no callback failed", (int)status);
        FUZZ_CHECK(run.called == plan.count, "%zu of %zu steps called", run.called, plan.count);
        FUZZ_CHECK(dns_shim_last_error()[0] == '\0', "a success left the detail \"%s\"",
                   dns_shim_last_error());
    }
done:
    free(frame);
    free(why);
    free(cb);
    return 0;
}
