/*
** fuzz_dnsrec: libFuzzer harness of libdnsshim_ares's ares_dns_parse (c-ares
** 1.22's parser of whole messages) against c-ares 1.34's own, in one
** process: linked -ldnsshim_ares before c-ares 1.34's -lcares (the cares134
** fixture), so that ares_dns_parse is the layer's, which builds c-ares's
** record with that c-ares's builders; c-ares's own ares_dns_parse is
** reached by dlsym in libcares.so.2 itself.
**
** Each input is one message, parsed with no flags and with the raw flags
** its last octet's low 6 bits give (ARES_DNS_PARSE_*_RAW).  Beyond "no
** crash", for each parse:
**   - the layer's code is ARES_SUCCESS or one its plan check lets through
**     (ARES_EFORMERR, ARES_EBADRESP, ARES_EBADNAME, ARES_EBADSTR); never
**     ARES_ENOTIMP (c-ares 1.34 is loaded), ARES_ENOMEM or another; on a
**     failure *dnsrec is NULL;
**   - never more lenient than c-ares: a message the layer accepts, c-ares's
**     own ares_dns_parse accepts too (with the same flags), and both
**     records write back (ares_dns_write) the same status and octets
**     (tests/test_ares_dns_parse.py's two properties, on every input);
**   - on ARES_SUCCESS the record has one question, the message's ID, and
**     each section at most the records the header counts;
**   - every record is destroyed (ares_dns_record_destroy) and every written
**     buffer freed (ares_free_string): LeakSanitizer reports the rest.
**
** Reproduce: fuzz_dnsrec FILE...
*/
#define _GNU_SOURCE 1
#include <ares.h>
#include <dlfcn.h>

#include "fuzz_common.h"

typedef ares_status_t (*parse_fn)(const unsigned char *, size_t, unsigned int,
                                  ares_dns_record_t **);
static parse_fn cares_parse;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    void *handle = dlopen("libcares.so.2", RTLD_NOW | RTLD_NOLOAD);
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_dnsrec");
    FUZZ_CHECK(handle != NULL, "libcares.so.2 is not loaded: %s", dlerror());
    cares_parse = (parse_fn)dlsym(handle, "ares_dns_parse");
    FUZZ_CHECK(cares_parse != NULL && (void *)cares_parse != (void *)ares_dns_parse,
               "c-ares's own ares_dns_parse not found apart from the layer's");
    return 0;
}

static int layer_code(ares_status_t rc)
{
    return rc == ARES_SUCCESS || rc == ARES_EFORMERR || rc == ARES_EBADRESP ||
           rc == ARES_EBADNAME || rc == ARES_EBADSTR;
}

static void one(const unsigned char *m, size_t n, unsigned int flags)
{
    ares_dns_record_t *ours = NULL, *theirs = NULL;
    unsigned char *w1 = NULL, *w2 = NULL;
    size_t l1 = 0, l2 = 0;
    ares_status_t rc = ares_dns_parse(m, n, flags, &ours), rc2, s1, s2;

    FUZZ_CHECK(layer_code(rc), "ares_dns_parse (flags %u): code %d (%s)", flags, (int)rc,
               ares_strerror((int)rc));
    if (rc != ARES_SUCCESS) {
        FUZZ_CHECK(ours == NULL, "code %d with a record", (int)rc);
        return;
    }
    FUZZ_CHECK(ours != NULL, "ARES_SUCCESS without a record");
    fuzz_stat_good++;
    FUZZ_CHECK(n >= 12, "a record from %zu octets", n);
    FUZZ_CHECK(ares_dns_record_get_id(ours) == (m[0] << 8 | m[1]), "another ID");
    FUZZ_CHECK(ares_dns_record_query_cnt(ours) == 1, "%zu questions",
               ares_dns_record_query_cnt(ours));
    FUZZ_CHECK(ares_dns_record_rr_cnt(ours, ARES_SECTION_ANSWER) <= (size_t)(m[6] << 8 | m[7]) &&
                   ares_dns_record_rr_cnt(ours, ARES_SECTION_AUTHORITY) <=
                       (size_t)(m[8] << 8 | m[9]) &&
                   ares_dns_record_rr_cnt(ours, ARES_SECTION_ADDITIONAL) <=
                       (size_t)(m[10] << 8 | m[11]),
               "more records than the header counts");

    rc2 = cares_parse(m, n, flags, &theirs);
    FUZZ_CHECK(rc2 == ARES_SUCCESS, "the layer accepts (flags %u) what c-ares refuses with %d (%s)",
               flags, (int)rc2, ares_strerror((int)rc2));
    s1 = ares_dns_write(ours, &w1, &l1);
    s2 = ares_dns_write(theirs, &w2, &l2);
    FUZZ_CHECK(s1 == s2, "ares_dns_write: %d for the layer's record, %d for c-ares's", (int)s1,
               (int)s2);
    if (s1 == ARES_SUCCESS)
        FUZZ_CHECK(l1 == l2 && memcmp(w1, w2, l1) == 0,
                   "written differently (flags %u): %zu octets from the layer's record, %zu from "
                   "c-ares's", flags, l1, l2);
    ares_free_string(w1);
    ares_free_string(w2);
    ares_dns_record_destroy(ours);
    ares_dns_record_destroy(theirs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *m;
    if (size == 0 || size > 65535)
        return 0;
    fuzz_stat_inputs++;
    m = malloc(size);
    memcpy(m, data, size);
    one(m, size, 0);
    if (data[size - 1] & 63)
        one(m, size, data[size - 1] & 63);
    FUZZ_CHECK(memcmp(m, data, size) == 0, "ares_dns_parse wrote into the message");
    free(m);
    return 0;
}
