/*
** dispatch.c: a plan's calls to the program's callbacks (dns_shim__call)
** and the failure a callback's non-zero return makes
** (dns_shim__callback_failed), a unit of libdnsshim's C compiled on its
** own.  The plan comes from the Python side through the bridge
** (dns_shim.c: dns_shim__run).
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The record kinds: written by the build (build_ffi.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <inttypes.h>
#include <stddef.h>

/* A callback's name by its member's offset, and whether its struct starts
** with a dns_shim_rr (every record's does).  The typed kinds' cases come
** from the one table of kinds (shim/kinds.py): build_ffi.py writes
** DNS_SHIM__KINDS. */
static const char *dns_shim__callback_name(size_t member, int *is_record)
{
#define DNS_SHIM__NAME(m, record) \
    case offsetof(dns_shim_callbacks, m): *is_record = record; return #m;
    switch (member) {
    DNS_SHIM__NAME(on_header, 0)
#define DNS_SHIM__KIND_NAME(rdtype, member, type, kind) DNS_SHIM__NAME(member, 1)
    DNS_SHIM__KINDS(DNS_SHIM__KIND_NAME)
#undef DNS_SHIM__KIND_NAME
    DNS_SHIM__NAME(on_other, 1)
    DNS_SHIM__NAME(on_edns_option, 0)
    }
#undef DNS_SHIM__NAME
    *is_record = 0;
    return NULL;
}

/* One step of a plan: calls the callback the member offset names, with its
** struct (the typed kinds' from DNS_SHIM__KINDS), and stores what it
** returned in *result.  Returns 0, or -1 for an
** offset that names no callback (a bug). */
int dns_shim__call(const dns_shim_callbacks *cb, const dns_shim__step *step,
                          int32_t *result)
{
#define DNS_SHIM__CASE(member, type)                                \
    case offsetof(dns_shim_callbacks, member):                      \
        *result = cb->member(cb->ctx, (const type *)step->arg);     \
        return 0;
    switch (step->member) {
    DNS_SHIM__CASE(on_header, dns_shim_header)
#define DNS_SHIM__KIND_CASE(rdtype, member, type, kind) DNS_SHIM__CASE(member, type)
    DNS_SHIM__KINDS(DNS_SHIM__KIND_CASE)
#undef DNS_SHIM__KIND_CASE
    DNS_SHIM__CASE(on_other, dns_shim_raw)
    DNS_SHIM__CASE(on_edns_option, dns_shim_edns_option)
    }
#undef DNS_SHIM__CASE
    return -1;
}

/* A callback stopped dispatch: which, and at which record. */
int32_t dns_shim__callback_failed(const dns_shim__step *step, int32_t result)
{
    static const char *const sections[] = {"", "answer", "authority", "", "additional"};
    int is_record = 0;
    const char *name = dns_shim__callback_name(step->member, &is_record);
    if (is_record) {
        const dns_shim_rr *rr = (const dns_shim_rr *)step->arg;
        return dns_shim__fail(DNS_SHIM_ERR_CALLBACK, "%s returned %" PRId32 " for record %"
                              PRIu32 " of the %s section (%s, type %u)", name, result,
                              rr->index, rr->section < 5 ? sections[rr->section] : "?",
                              rr->owner, (unsigned)rr->type);
    }
    return dns_shim__fail(DNS_SHIM_ERR_CALLBACK, "%s returned %" PRId32, name, result);
}
