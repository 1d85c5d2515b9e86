/*
** fuzz_plan: libFuzzer harness of libdnsshim's C side of the plan, without
** the decoder in front: csrc/lib/dispatch.c (dns_shim__check_plan,
** dns_shim__call, dns_shim__callback_failed) and failure.c, compiled into
** the harness from the library's own sources with its internal header
** (lib/dns_shim_internal.h) and the build's generated headers.  No Python
** runs: the input is a plan, as the Python side could hand one over
** (csrc/lib/dns_shim.c: dns_shim__run), built from the input's octets:
**
**   the callbacks' struct_size (1.0's or 1.1's: what api.c lets through),
**   which callbacks are NULL; the count of steps (0 to 40, or more than a
**   message can plan, or steps/callbacks NULL); each step's member (a
**   callback's offset, or any number) and its struct (NULL, or one of the
**   member's type: the types are the C side's, which a plan cannot change), every field of it from
**   the input: owner and names (NULL, terminated texts of 0 to 1100
**   octets, 1025 octets without a NUL), sections (any number), byte strings
**   (data NULL, len above 65,535, data[len] a NUL or not), TXT string
**   counts and arrays; and what each callback returns.
**
** Every pointer of a plan points into a block of exactly its size (the
** Python side never hands over memory that is not there: what the check
** must find is a plan whose contents are wrong).
**
** Beyond "no crash" (ASan: the check reads nothing past a block, and only
** as far as the plan says), for each input:
**   - dns_shim__check_plan's verdict is the harness's own, written from the
**     rules dispatch.c's comments and dns_shim.h give (steps within
**     65,536; a callback named within struct_size and set; its struct not
**     NULL; a record's owner a text terminated within 1,024 octets and its
**     section one DNS_SHIM_SECTION_* bit; each name field a text so, NULL
**     allowed for on_header's qname only; each byte string data not NULL,
**     len at most 65,535 and a NUL at data[len]; a TXT count 1 to 65,535
**     with its array): DNS_SHIM_OK exactly when the plan is good, else
**     DNS_SHIM_ERR_INTERNAL with a detail naming it;
**   - a good plan then runs as dns_shim__run runs it: dns_shim__call
**     reaches, for each step in order, the callback its member names with
**     the ctx and that very struct, and each callback finds what the
**     header promises (texts terminated within 1,024, byte strings with
**     their NUL, the section one bit); the first non-zero return stops the
**     plan, and dns_shim__callback_failed's status is DNS_SHIM_ERR_CALLBACK
**     with a detail naming the callback.
**
** Reproduce: fuzz_plan FILE...
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include "fuzz_common.h"
#include "fuzz_input.h"

/* failure.c's locks register the library's fork handler first (dns_shim.c,
** not in this harness): no fork here. */
void dns_shim__fork_watch(void) {}

/* The callbacks: their offsets, and one struct size each. */
#define MEMBERS(X)                                                         \
    X(on_header, dns_shim_header)                                          \
    X(on_a, dns_shim_a) X(on_aaaa, dns_shim_aaaa) X(on_cname, dns_shim_target) \
    X(on_ns, dns_shim_target) X(on_ptr, dns_shim_target)                   \
    X(on_dname, dns_shim_target) X(on_mx, dns_shim_mx) X(on_txt, dns_shim_txt) \
    X(on_srv, dns_shim_srv) X(on_naptr, dns_shim_naptr) X(on_soa, dns_shim_soa) \
    X(on_other, dns_shim_raw) X(on_edns_option, dns_shim_edns_option)
#define OFFSET(m, t) offsetof(dns_shim_callbacks, m),
#define SIZE(m, t) sizeof(t),
#define NAME(m, t) #m,
static const size_t offsets[] = {MEMBERS(OFFSET)};
static const size_t sizes[] = {MEMBERS(SIZE)};
static const char *const member_names[] = {MEMBERS(NAME)};
#define NMEMBERS (sizeof offsets / sizeof offsets[0])
enum { HEADER = 0, OTHER = 12, EDNS = 13 };

static int member_index(size_t member)
{
    size_t i;
    for (i = 0; i < NMEMBERS; i++)
        if (offsets[i] == member)
            return (int)i;
    return -1;
}

/* The plan being run: which step is next, what each returns. */
static struct {
    const dns_shim__step *steps;
    size_t count, next;
    int32_t returns[64];
    void *ctx;
} run;

static int text_ok(const char *s, size_t len)
{
    return s != NULL && len <= 1024;
}

/* One callback's view: the step it is, its struct, what it promises. */
static int32_t reached(void *ctx, size_t member, const void *arg)
{
    const dns_shim__step *step;
    int i = member_index(member);
    FUZZ_CHECK(ctx == run.ctx, "a callback got another ctx");
    FUZZ_CHECK(run.next < run.count, "a callback after the plan's last step");
    step = &run.steps[run.next];
    FUZZ_CHECK(step->member == member && step->arg == arg,
               "step %zu (%s) reached %s with another struct", run.next,
               member_names[member_index(step->member)], member_names[i]);
    if (i != HEADER && i != EDNS) {
        const dns_shim_rr *rr = arg;
        FUZZ_CHECK(rr->owner != NULL && strnlen(rr->owner, 1025) <= 1024, "an owner unchecked");
        FUZZ_CHECK(rr->section == 1 || rr->section == 2 || rr->section == 4,
                   "section %u reached %s", rr->section, member_names[i]);
    }
    return run.returns[run.next++ % 64];
}

#define CALLBACK(m, t)                                       \
    static int32_t cb_##m(void *ctx, const t *arg)           \
    {                                                        \
        return reached(ctx, offsetof(dns_shim_callbacks, m), arg); \
    }
MEMBERS(CALLBACK)

/* A byte string field, built from the input; whether it is good. */
static int bytes_field(fuzz_input *in, dns_shim_bytes *b)
{
    return fuzz_bytes(in, &b->data, &b->len);
}

static int name_field(fuzz_input *in, const char **field)
{
    size_t len;
    *field = fuzz_text(in, &len);
    return text_ok(*field, len);
}

/* The struct of a step: a block of the size of member kind's struct, its
** fields from the input; whether the check must take it (as `member`'s
** struct: the fields the check reads are those of the member's type). */
static const void *make_arg(fuzz_input *in, int kind, int *good)
{
    uint8_t *arg = fuzz_block(sizes[kind]);
    *good = 1;
    if (arg == NULL) {
        *good = 0;
        return NULL;
    }
    if (kind == HEADER) {
        dns_shim_header *h = (dns_shim_header *)arg;
        size_t len;
        h->qname = fuzz_text(in, &len);
        *good = h->qname == NULL || len <= 1024;
        h->qdcount = fuzz_u16(in);
        return arg;
    }
    if (kind == EDNS) {
        dns_shim_edns_option *o = (dns_shim_edns_option *)arg;
        o->code = fuzz_u16(in);
        *good &= bytes_field(in, &o->data);
        *good &= bytes_field(in, &o->ede_text);
        *good &= bytes_field(in, &o->cookie_client);
        *good &= bytes_field(in, &o->cookie_server);
        *good &= bytes_field(in, &o->ecs_address);
        return arg;
    }
    {
        dns_shim_rr *rr = (dns_shim_rr *)arg;
        uint8_t s = fuzz_u8(in);
        *good &= name_field(in, &rr->owner);
        rr->section = s < 240 ? 1u << (s % 3) : (s == 255 ? fuzz_u32(in) : (uint32_t)s % 9);
        *good &= rr->section == 1 || rr->section == 2 || rr->section == 4;
        rr->type = fuzz_u16(in);
        rr->index = fuzz_u32(in);
    }
    if (kind == 1)
        memcpy(((dns_shim_a *)arg)->address, "\300\0\2\1", 4);
    switch (kind) {
    case 1: case 2: /* on_a, on_aaaa: the address only */
        break;
    case 3: case 4: case 5: case 6:
        *good &= name_field(in, &((dns_shim_target *)arg)->target);
        break;
    case 7:
        *good &= name_field(in, &((dns_shim_mx *)arg)->exchange);
        break;
    case 8: {
        dns_shim_txt *t = (dns_shim_txt *)arg;
        uint8_t c = fuzz_u8(in);
        if (c == 0) {
            t->count = 0;
            t->strings = NULL;
            *good = 0;
        } else if (c == 1) {
            t->count = 65536 + fuzz_u8(in);
            t->strings = fuzz_block(sizeof(dns_shim_bytes));
            *good = 0;
        } else if (c == 2) {
            t->count = 1 + fuzz_u8(in);
            t->strings = NULL;
            *good = 0;
        } else {
            size_t k, n = 1 + c % 5;
            dns_shim_bytes *strings = fuzz_block(n * sizeof *strings);
            if (strings == NULL) {
                *good = 0;
                break;
            }
            for (k = 0; k < n; k++)
                *good &= bytes_field(in, &strings[k]);
            t->count = n;
            t->strings = strings;
        }
        break;
    }
    case 9:
        *good &= name_field(in, &((dns_shim_srv *)arg)->target);
        break;
    case 10: {
        dns_shim_naptr *n = (dns_shim_naptr *)arg;
        *good &= bytes_field(in, &n->flags);
        *good &= bytes_field(in, &n->services);
        *good &= bytes_field(in, &n->regexp);
        *good &= name_field(in, &n->replacement);
        break;
    }
    case 11: {
        dns_shim_soa *s = (dns_shim_soa *)arg;
        *good &= name_field(in, &s->mname);
        *good &= name_field(in, &s->rname);
        break;
    }
    case OTHER:
        *good &= bytes_field(in, &((dns_shim_raw *)arg)->rdata);
        break;
    }
    return arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    dns_shim_callbacks cb;
    dns_shim_callbacks *cbp = &cb;
    dns_shim__step *steps = NULL;
    size_t count, i;
    int good = 1; /* the harness's verdict */
    uint16_t nulls;
    uint8_t shape;
    int32_t rc;
    static int ctx_mark;

    fuzz_stats_start("fuzz_plan");
    fuzz_stat_inputs++;
    memset(&cb, 0, sizeof cb);
#define SET(m, t) cb.m = cb_##m;
    MEMBERS(SET)
    nulls = fuzz_u16(&in);
    for (i = 0; i < NMEMBERS; i++)
        if (nulls & (1u << i) && (nulls & 0x8000))
            memset((char *)&cb + offsets[i], 0, sizeof(void (*)(void)));
    cb.struct_size = fuzz_u8(&in) & 1 ? offsetof(dns_shim_callbacks, on_edns_option)
                                      : sizeof(dns_shim_callbacks);
    cb.sections = 7;
    cb.ctx = &ctx_mark;

    shape = fuzz_u8(&in);
    count = shape % 41;
    if (shape == 250) {
        /* More steps than a message can plan: refused before any is read. */
        count = 65537 + fuzz_u8(&in);
        steps = fuzz_block(sizeof *steps);
        good = 0;
    } else if (shape == 251 || shape == 252) {
        count = 1 + count;
        if (shape == 251)
            steps = NULL;
        else {
            steps = fuzz_block(count * sizeof *steps);
            cbp = NULL;
        }
        good = 0;
    } else {
        steps = count ? fuzz_block(count * sizeof *steps) : NULL;
        if (count && steps == NULL)
            return 0;
        for (i = 0; i < count; i++) {
            uint8_t which = fuzz_u8(&in), as;
            int kind, arg_good;
            if (which < 224) {
                kind = which % NMEMBERS;
                steps[i].member = offsets[kind];
            } else {
                steps[i].member = which == 255 ? fuzz_u32(&in) : fuzz_u8(&in);
                kind = member_index(steps[i].member);
            }
            if (kind < 0) {
                good = 0;
                steps[i].arg = fuzz_block(8);
                continue;
            }
            if (steps[i].member + sizeof(void (*)(void)) > cb.struct_size)
                good = 0;
            {
                void (*fn)(void);
                memcpy(&fn, (char *)&cb + steps[i].member, sizeof fn);
                if (fn == NULL)
                    good = 0;
            }
            as = fuzz_u8(&in);
            if (as == 0) {
                steps[i].arg = NULL;
                good = 0;
            } else {
                steps[i].arg = make_arg(&in, kind, &arg_good);
                good &= arg_good;
            }
        }
    }
    for (i = 0; i < 64; i++) {
        uint8_t r = fuzz_u8(&in);
        run.returns[i] = r >= 248 ? (int32_t)(r - 251) : 0; /* -3 to 4, 1 in 32 */
    }

    dns_shim__error[0] = '\0';
    rc = dns_shim__check_plan(cbp, steps, count);
    FUZZ_CHECK(rc == DNS_SHIM_OK || rc == DNS_SHIM_ERR_INTERNAL, "check_plan: %d", rc);
    FUZZ_CHECK((rc == DNS_SHIM_OK) == (good == 1),
                   "check_plan says %d (%s) for a plan that is %s", rc, dns_shim_last_error(),
                   good ? "good" : "not good");
    if (rc != DNS_SHIM_OK) {
        FUZZ_CHECK(strncmp(dns_shim_last_error(), "DNS_SHIM_ERR_INTERNAL: ", 23) == 0,
                   "a refusal's detail: \"%s\"", dns_shim_last_error());
        fuzz_free_blocks();
        return 0;
    }
    fuzz_stat_good += count > 0;
    run.steps = steps;
    run.count = count;
    run.next = 0;
    run.ctx = &ctx_mark;
    for (i = 0; i < count; i++) {
        int32_t result = 0;
        size_t before = run.next;
        FUZZ_CHECK(dns_shim__call(&cb, &steps[i], &result) == 0,
                   "dns_shim__call refused step %zu, which the check took", i);
        FUZZ_CHECK(run.next == before + 1, "step %zu reached no callback", i);
        if (result != 0) {
            int32_t failed = dns_shim__callback_failed(&steps[i], result);
            const char *name = member_names[member_index(steps[i].member)];
            FUZZ_CHECK(failed == DNS_SHIM_ERR_CALLBACK, "callback_failed: %d", failed);
            FUZZ_CHECK(strstr(dns_shim_last_error(), name) != NULL,
                       "the detail \"%s\" does not name %s", dns_shim_last_error(), name);
            break;
        }
    }
    fuzz_free_blocks();
    return 0;
}
