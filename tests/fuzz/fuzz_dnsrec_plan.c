/*
** fuzz_dnsrec_plan: libFuzzer harness of libdnsshim_ares's ares_dns_parse
** on plans, without the decoder in front: csrc/ares/dnsrec.c (its plan
** check, dnsshim_ares__check_message, then the record built with c-ares
** 1.34's builders), with the other units of libdnsshim_ares but the bridge
** (pipeline.DNSSHIM_ARES.units), compiled into the harness from the
** library's sources and linked with c-ares 1.34 (the cares134 fixture).  The bridge's
** dnsshim_ares__message (dnsshim_ares.c, which calls the Python side) is
** replaced by this file's: it hands over a plan built from the input.  No
** Python runs.
**
** The input gives the message's length (the octets are never read), then
** the plan: its status (mostly success, any code, any number), the
** header's values (some past their range), the question (its name a text
** with or without its NUL, with a NUL inside), the records (a count, some
** more than the message holds; each its section, type among those c-ares
** knows and RAW_RR, class, TTL, name, and fields: a key of its type or any,
** a datatype, a number, octets as fuzz_input.h makes them).
**
** Beyond "no crash" (ASan: nothing read past a block; c-ares is not
** instrumented, but a crash in it is one), for each input:
**   - the plan check's verdict is the harness's, written from dnsrec.c's
**     rules (a status ares_dns_parse returns; the header's ranges; the
**     question's name a C string of its length, type and class 16 bits;
**     at most one record per 11 octets, the array there; each record's
**     section 1 to 3, type at most RAW_RR, class 16 bits, name a C string,
**     its fields at most one per octet and there, each field's datatype
**     its key's (c-ares's ares_dns_rr_key_datatype) and its value as the
**     datatype needs): a plan refused is ARES_EBADRESP and no record;
**   - a plan taken whose status is a failure gives that status, no record;
**   - a plan taken and successful gives ARES_SUCCESS with a record holding
**     the plan (the ID, one question of that name, each section's records
**     in order with their names, types and classes), or a code of c-ares's
**     builders and no record;
**   - every record is destroyed (LeakSanitizer: the layer freed what the
**     builders refused).
**
** Reproduce: fuzz_dnsrec_plan FILE...
*/
#include <ares.h>

#include "ares/dnsshim_ares_internal.h"

/* No parse service: every result is this file's (fuzz_common.h). */
#define FUZZ_NO_SERVICE 1
#include "fuzz_common.h"
#include "fuzz_input.h"

static fuzz_input in;
static int want_valid, computed;
static dnsshim_ares_message made;

/* A text: a C string of its length (NUL at [len], none before), or not. */
static int text(dnsshim_ares_bytes *b)
{
    uint8_t c = fuzz_u8(&in);
    size_t i, n;
    uint8_t *d;
    if (c == 0) {
        b->data = NULL;
        b->len = 0;
        return 0;
    }
    n = c % 24;
    d = fuzz_block(n + 1);
    for (i = 0; i < n; i++) {
        uint8_t o = fuzz_u8(&in);
        d[i] = o == 0 && c < 250 ? 'a' : o; /* a NUL inside now and then */
    }
    d[n] = c >= 245 && c < 250 ? 'x' : 0;
    if (c < 3) {
        static const char *const names[] = {"", ".", "example.com"};
        d = fuzz_block(strlen(names[c]) + 1);
        memcpy(d, names[c], strlen(names[c]) + 1);
        n = strlen(names[c]);
    }
    b->data = d;
    b->len = n;
    return memchr(d, 0, n) == NULL && d[n] == 0;
}

static const uint32_t types[] = {1, 2, 5, 6, 12, 13, 15, 16, 28, 33, 35, 41, 52, 64, 65, 256, 257,
                                 65536, 99};

int dnsshim_ares__message(const unsigned char *buf, int len, unsigned int flags,
                          dnsshim_ares_message *m, uint64_t *token)
{
    static const int32_t statuses[] = {DNSSHIM_ARES_SUCCESS, DNSSHIM_ARES_SUCCESS,
                                       DNSSHIM_ARES_SUCCESS, DNSSHIM_ARES_SUCCESS,
                                       DNSSHIM_ARES_EFORMERR, DNSSHIM_ARES_EBADRESP,
                                       DNSSHIM_ARES_EBADNAME, DNSSHIM_ARES_EBADSTR,
                                       DNSSHIM_ARES_ENOMEM, DNSSHIM_ARES_ENODATA,
                                       DNSSHIM_ARES_ENOTIMP, 12345};
    uint8_t c;
    size_t i, j, fields = 0;
    int ok = 1;
    dnsshim_ares_rr *rrs = NULL;
    (void)buf;
    (void)flags;
    computed = 1;
    *token = 9;
    memset(&made, 0, sizeof made);
    c = fuzz_u8(&in);
    made.status = statuses[c % 12];
    if (made.status != DNSSHIM_ARES_SUCCESS) {
        ok = made.status == DNSSHIM_ARES_EFORMERR || made.status == DNSSHIM_ARES_EBADRESP ||
             made.status == DNSSHIM_ARES_EBADNAME || made.status == DNSSHIM_ARES_EBADSTR ||
             made.status == DNSSHIM_ARES_ENOMEM;
        want_valid = ok;
        *m = made;
        return DNSSHIM_ARES_SUCCESS;
    }
    c = fuzz_u8(&in);
    made.id = c == 255 ? 0x10000u + fuzz_u8(&in) : fuzz_u16(&in);
    made.flags = c == 254 ? 0x80u + fuzz_u8(&in) : fuzz_u8(&in) & 0x7f;
    made.opcode = c == 253 ? 16 : fuzz_u8(&in) % 16;
    made.rcode = c == 252 ? 0x1000 : fuzz_u16(&in) % 24;
    ok &= c < 252;
    ok &= text(&made.qname);
    c = fuzz_u8(&in);
    made.qtype = c == 255 ? 0x10000 : types[c % 18];
    made.qclass = c == 254 ? 0x10000 : 1;
    ok &= c < 254;
    c = fuzz_u8(&in);
    if (c == 255) {
        made.nrrs = (size_t)len / 11 + 1;
        rrs = fuzz_block(sizeof *rrs); /* never read: too many */
        ok = 0;
    } else if (c == 254) {
        made.nrrs = 1;
        ok = 0;
    } else {
        made.nrrs = c % 5 <= (size_t)len / 11 ? c % 5 : 0;
        rrs = made.nrrs ? fuzz_block(made.nrrs * sizeof *rrs) : NULL;
        for (i = 0; i < made.nrrs; i++) {
            dnsshim_ares_rr *r = &rrs[i];
            dnsshim_ares_field *f;
            uint8_t s = fuzz_u8(&in), t = fuzz_u8(&in);
            r->section = s < 240 ? 1 + s % 3 : s % 5;
            r->type = t == 255 ? 65537 : types[t % 19];
            r->rclass = t == 254 ? 0x10000 : (t & 1 ? 1 : 254);
            r->ttl = fuzz_u32(&in);
            ok &= r->section >= 1 && r->section <= 3 && t < 254;
            ok &= text(&r->name);
            c = fuzz_u8(&in);
            if (c == 255) {
                r->nfields = 1;
                r->fields = NULL;
                ok = 0;
                continue;
            }
            r->nfields = c % 4;
            if (c == 254) {
                r->nfields = (size_t)len + 1;
                r->fields = fuzz_block(sizeof *f);
                ok = 0;
                continue;
            }
            fields += r->nfields;
            if (fields > (size_t)len)
                ok = 0;
            f = r->nfields ? fuzz_block(r->nfields * sizeof *f) : NULL;
            r->fields = f;
            for (j = 0; j < r->nfields; j++) {
                uint8_t k = fuzz_u8(&in), d = fuzz_u8(&in);
                int expected;
                f[j].key = k < 250 ? (r->type == 65536 ? 65536u * 100 : r->type * 100) + k % 12
                                   : fuzz_u32(&in);
                expected = ares_dns_rr_key_datatype((ares_dns_rr_key_t)f[j].key);
                f[j].datatype = d < 230 ? (uint32_t)expected : d % 13;
                f[j].number = fuzz_u8(&in) < 240 ? fuzz_u16(&in) % 300 : fuzz_u32(&in);
                if (f[j].datatype < 1 || f[j].datatype > 11 || (int)f[j].datatype != expected) {
                    ok = 0;
                    f[j].bytes.data = NULL;
                    continue;
                }
                switch (f[j].datatype) {
                case 1: case 2: {
                    size_t want = f[j].datatype == 1 ? 4 : 16;
                    uint8_t shape = fuzz_u8(&in);
                    size_t n = shape < 240 ? want : shape % 20;
                    f[j].bytes.data = shape == 255 ? NULL : fuzz_block(n);
                    f[j].bytes.len = n;
                    ok &= f[j].bytes.data != NULL && n == want;
                    break;
                }
                case 3:
                    ok &= f[j].number <= 0xff;
                    break;
                case 4:
                    ok &= f[j].number <= 0xffff;
                    break;
                case 5:
                    break;
                case 6: case 7:
                    ok &= text(&f[j].bytes);
                    break;
                default: {
                    int good = fuzz_bytes(&in, &f[j].bytes.data, &f[j].bytes.len);
                    (void)good; /* data[len] is not read for octets */
                    ok &= (f[j].bytes.data != NULL || f[j].bytes.len == 0) &&
                          f[j].bytes.len < 65536;
                    if (f[j].datatype == 10)
                        ok &= f[j].number <= 0xffff;
                    break;
                }
                }
            }
        }
    }
    made.rrs = rrs;
    want_valid = ok;
    *m = made;
    return DNSSHIM_ARES_SUCCESS;
}

void dnsshim_ares__message_done(uint64_t token)
{
    FUZZ_CHECK(token == 0 || token == 9, "message_done with token %llu",
               (unsigned long long)token);
}

/* The classic parsers' half of the bridge: never called here. */
int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                          dnsshim_ares_result *r, uint64_t *token)
{
    (void)kind, (void)buf, (void)len, (void)offset, (void)flags, (void)r, (void)token;
    FUZZ_CHECK(0, "a classic parser called");
    return DNSSHIM_ARES_ENOTIMP;
}

void dnsshim_ares__done(uint64_t token)
{
    (void)token;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_dnsrec_plan");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char msg[600];
    ares_dns_record_t *rec = NULL;
    ares_status_t rc;
    size_t len;
    in.p = data;
    in.n = size;
    fuzz_stat_inputs++;
    len = 12 + fuzz_u16(&in) % 500;
    memset(msg, 0, sizeof msg);
    computed = 0;
    rc = ares_dns_parse(msg, len, 0, &rec);
    FUZZ_CHECK(computed, "ares_dns_parse gave %d without asking for a plan", (int)rc);
    if (!want_valid) {
        FUZZ_CHECK(rc == ARES_EBADRESP && rec == NULL,
                   "a plan that is not good gave %d (%s)%s", (int)rc, ares_strerror((int)rc),
                   rec ? " and a record" : "");
    } else if (made.status != DNSSHIM_ARES_SUCCESS) {
        FUZZ_CHECK(rc == (ares_status_t)made.status && rec == NULL,
                   "a plan of status %d gave %d", made.status, (int)rc);
    } else if (rc != ARES_SUCCESS) {
        FUZZ_CHECK(rec == NULL, "code %d with a record", (int)rc);
    } else {
        size_t i, n[4] = {0, 0, 0, 0};
        const char *name = NULL;
        ares_dns_rec_type_t qtype;
        ares_dns_class_t qclass;
        FUZZ_CHECK(rec != NULL, "ARES_SUCCESS without a record");
        fuzz_stat_good++;
        FUZZ_CHECK(ares_dns_record_get_id(rec) == made.id, "another ID");
        FUZZ_CHECK(ares_dns_record_query_cnt(rec) == 1 &&
                       ares_dns_record_query_get(rec, 0, &name, &qtype, &qclass) == ARES_SUCCESS,
                   "not one question");
        for (i = 0; i < made.nrrs; i++) {
            const dnsshim_ares_rr *r = &made.rrs[i];
            ares_dns_rr_t *got = ares_dns_record_rr_get(rec, (ares_dns_section_t)r->section,
                                                        n[r->section]++);
            FUZZ_CHECK(got != NULL, "record %zu missing", i);
            FUZZ_CHECK((uint32_t)ares_dns_rr_get_type(got) == r->type &&
                           (uint32_t)ares_dns_rr_get_class(got) == r->rclass,
                       "record %zu: type %d class %d, planned %u %u", i,
                       (int)ares_dns_rr_get_type(got), (int)ares_dns_rr_get_class(got), r->type,
                       r->rclass);
        }
        for (i = 1; i <= 3; i++)
            FUZZ_CHECK(ares_dns_record_rr_cnt(rec, (ares_dns_section_t)i) == n[i],
                       "section %zu: %zu records, planned %zu", i,
                       ares_dns_record_rr_cnt(rec, (ares_dns_section_t)i), n[i]);
        ares_dns_record_destroy(rec);
    }
    fuzz_free_blocks();
    return 0;
}
