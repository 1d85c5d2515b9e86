/*
** fuzz_service_ares: libFuzzer harness of libdnsshim_ares's reader of the
** parse service's answer (csrc/ares/service.c: dnsshim_ares__read), the
** untrusted input of a c-ares call made through dnsshimd.  Every unit of
** libdnsshim_ares but the bridge is compiled into the harness from the
** library's own sources (pipeline.DNSSHIM_ARES.units); no Python, no
** socket: this file replaces the bridge's four calls (never reached) and
** libdnsshim's dns_shim__service_exchange (no service).
**
** The input, in order (each octet 0 once the input is used up):
**   kind     its low 4 bits: 0 an ares_dns_parse plan, 1 to 14 that
**            DNSSHIM_ARES_KIND_* (a classic parser or an expand function),
**            15 kind 15, which is none
**   len      u16, the message's length the call had (the result's check
**            holds an expansion's length to it)
**   offset   u16, the expand functions' offset
**   status   i32, the answer's status
**   ...      the answer's payload: the rest of the input, handed over in a
**            block of exactly its size.
**
** Beyond "no crash" (ASan, UBSan) and no leak (LeakSanitizer), for each
** input:
**   - on 0 (the answer refused): `why` is a non-empty text, NUL-terminated
**     within its 512 octets, and nothing is held;
**   - on 1 (taken): the status is one a parse gives (ARES_SUCCESS,
**     ENODATA, EFORMERR, ENOTIMP, EBADQUERY, EBADNAME, EBADRESP, EBADSTR:
**     never ENOMEM nor ENOTINITIALIZED, the service's faults) and is the
**     call's; a classic kind's result passes check.c's check; every byte
**     string's data[len] is its NUL; the result or plan written again by
**     the service's own writer is the payload, octet for octet (nothing
**     read was lost, added or changed; a plan only with ARES_SUCCESS, no
**     payload otherwise);
**   - the payload cut by its last octet, or with one more, is refused (the
**     reader takes exactly the answer).
**
** The stats line's "good": the inputs whose answer was taken.
**
** Reproduce: fuzz_service_ares FILE...
*/
#include "ares/dnsshim_ares_internal.h"
#include "dns_shim.h"
#include "lib/service_wire.h"

#define FUZZ_NO_SERVICE 1
#include "fuzz_common.h"
#include "fuzz_input.h"

/* ------------------------------------------------------------------ */
/* The bridge and the client, replaced: never reached                   */

int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                          dnsshim_ares_result *r, uint64_t *token)
{
    (void)kind, (void)buf, (void)len, (void)offset, (void)flags, (void)r, (void)token;
    FUZZ_CHECK(0, "the bridge called");
    return DNSSHIM_ARES_ENOTINITIALIZED;
}

void dnsshim_ares__done(uint64_t token)
{
    (void)token;
}

int dnsshim_ares__message(const unsigned char *buf, int len, unsigned int flags,
                          dnsshim_ares_message *m, uint64_t *token)
{
    (void)buf, (void)len, (void)flags, (void)m, (void)token;
    FUZZ_CHECK(0, "the bridge called");
    return DNSSHIM_ARES_ENOTINITIALIZED;
}

void dnsshim_ares__message_done(uint64_t token)
{
    (void)token;
}


/* ------------------------------------------------------------------ */
/* The checks                                                           */

static void *wr_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

static void check_bytes(const dnsshim_ares_bytes *b)
{
    FUZZ_CHECK(b->data != NULL || b->len == 0, "a NULL string with length %zu", b->len);
    if (b->data != NULL)
        FUZZ_CHECK(b->len <= 65535 && b->data[b->len] == '\0', "a string of %zu without its NUL",
                   b->len);
}

static void check_strings(const dnsshim_ares__call *call)
{
    size_t i, k;
    if (call->result != NULL) {
        const dnsshim_ares_result *r = call->result;
        check_bytes(&r->name);
        for (i = 0; i < r->naliases; i++)
            check_bytes(&r->aliases[i]);
        for (i = 0; i < r->nitems; i++)
            for (k = 0; k < 4; k++)
                check_bytes(&r->items[i].str[k]);
        return;
    }
    check_bytes(&call->message->qname);
    for (i = 0; i < call->message->nrrs; i++) {
        check_bytes(&call->message->rrs[i].name);
        for (k = 0; k < call->message->rrs[i].nfields; k++)
            check_bytes(&call->message->rrs[i].fields[k].bytes);
    }
}

static int parse_status(int32_t s)
{
    return s == DNSSHIM_ARES_SUCCESS || s == DNSSHIM_ARES_ENODATA || s == DNSSHIM_ARES_EFORMERR ||
           s == DNSSHIM_ARES_ENOTIMP || s == DNSSHIM_ARES_EBADQUERY ||
           s == DNSSHIM_ARES_EBADNAME || s == DNSSHIM_ARES_EBADRESP || s == DNSSHIM_ARES_EBADSTR;
}

/* One read of the payload; 1 when taken (the call's blocks then freed
** here, after the checks). */
static int read_once(int32_t kind, int len, int offset, int32_t status, const uint8_t *data,
                     size_t n, int check)
{
    dnsshim_ares_result result;
    dnsshim_ares_message message;
    dnsshim_ares__call call;
    char why[512];
    uint8_t *payload = malloc(n ? n : 1);
    int taken;

    FUZZ_CHECK(payload != NULL, "no memory");
    memcpy(payload, data, n);
    memset(&call, 0, sizeof call);
    call.kind = kind;
    call.len = len;
    call.offset = offset;
    if (kind == 0)
        call.message = &message;
    else
        call.result = &result;
    memset(why, 0x55, sizeof why);
    taken = dnsshim_ares__read(&call, status, payload, n, why, sizeof why);
    if (!taken) {
        FUZZ_CHECK(memchr(why, '\0', sizeof why) != NULL && why[0] != '\0',
                   "refused without a reason");
        FUZZ_CHECK(call.blocks == NULL, "a refused answer holds blocks");
    } else if (check) {
        dns_shim__wr w;
        FUZZ_CHECK(parse_status(status), "status %d taken", (int)status);
        FUZZ_CHECK(call.status == status, "status %d taken as %d", (int)status, call.status);
        if (kind != 0) {
            const char *wrong = dnsshim_ares__check_result(kind, &result, len, offset);
            FUZZ_CHECK(wrong == NULL, "a result taken that check.c refuses: %s", wrong);
            FUZZ_CHECK(result.status == status, "the result's status is not the answer's");
        }
        check_strings(&call);
        memset(&w, 0, sizeof w);
        w.realloc_fn = wr_realloc;
        w.max = DNS_SHIM__WIRE_RESPONSE_MAX;
        if (kind != 0)
            dnsshim_ares__write_result(&w, &result);
        else if (status == DNSSHIM_ARES_SUCCESS)
            dnsshim_ares__write_message(&w, &message);
        FUZZ_CHECK(!w.bad, "the writer failed");
        FUZZ_CHECK(w.len == n && (n == 0 || memcmp(w.buf, data, n) == 0),
                   "written again, %zu octets are not the %zu read", w.len, n);
        free(w.buf);
    }
    dnsshim_ares__blocks_free(call.blocks);
    free(payload);
    return taken;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size};
    int32_t kind = fuzz_u8(&in) & 0x0F;
    int len = fuzz_u16(&in);
    int offset = fuzz_u16(&in);
    int32_t status = (int32_t)fuzz_u32(&in);

    fuzz_stats_start("fuzz_service_ares");
    fuzz_stat_inputs++;
    if (read_once(kind, len, offset, status, in.p, in.n, 1)) {
        uint8_t *longer = malloc(in.n + 1);
        fuzz_stat_good++;
        if (in.n > 0)
            FUZZ_CHECK(!read_once(kind, len, offset, status, in.p, in.n - 1, 0),
                       "the answer cut by an octet taken");
        FUZZ_CHECK(longer != NULL, "no memory");
        memcpy(longer, in.p, in.n);
        longer[in.n] = 0;
        FUZZ_CHECK(!read_once(kind, len, offset, status, longer, in.n + 1, 0),
                   "the answer with an octet more taken");
        free(longer);
    }
    return 0;
}
