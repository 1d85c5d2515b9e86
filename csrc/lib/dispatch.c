/*
** dispatch.c: a plan's calls to the program's callbacks (dns_shim__call)
** and the failure a callback's non-zero return makes
** (dns_shim__callback_failed), a unit of libdnsshim's C compiled on its
** own.  The plan comes from the Python side through the bridge
** (dns_shim.c: dns_shim__run).
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The record kinds: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <inttypes.h>
#include <stddef.h>
#include <string.h>

/* A callback's name by its member's offset, and whether its struct starts
** with a dns_shim_rr (every record's does).  The typed kinds' cases come
** from the one table of kinds (shim/kinds.py): the build writes
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

/* A checked plan's calls, in order, each callback's return looked at: the
** call's status (the detail set after the callbacks: one that called into
** the library on this thread left that call's detail behind).  The plan
** comes from the Python side (dns_shim.c) or from the parse service's
** answer (service.c). */
int32_t dns_shim__dispatch(const dns_shim_callbacks *callbacks, const dns_shim__step *steps,
                           size_t count)
{
    size_t i;
    for (i = 0; i < count; i++) {
        int32_t result = 0;
        if (dns_shim__call(callbacks, &steps[i], &result) != 0) {
            dns_shim__log("the parser planned a call to no callback; returning DNS_SHIM_ERR_INTERNAL");
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned a call to no callback");
        }
        if (result != 0)
            return dns_shim__callback_failed(&steps[i], result);
    }
    return dns_shim__ok();
}

/* The longest text a name can have (255 octets, each label octet escaped
** as \DDD, and the dots), and the most steps one message can plan (a
** record takes at least 11 octets of its 65,535, an EDNS option 4). */
#define DNS_SHIM__NAME_TEXT_MAX 1024
#define DNS_SHIM__STEPS_MAX 65536

/* A string of the plan: not NULL, NUL-terminated within the longest name. */
static int32_t dns_shim__check_text(size_t i, const char *what, const char *text)
{
    if (text == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose %s is NULL",
                              i, what);
    if (strnlen(text, DNS_SHIM__NAME_TEXT_MAX + 1) > DNS_SHIM__NAME_TEXT_MAX)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose %s is not "
                              "NUL-terminated within %d bytes", i, what, DNS_SHIM__NAME_TEXT_MAX);
    return DNS_SHIM_OK;
}

/* A byte string of the plan: data not NULL, len within a message's 65,535,
** and the NUL the header promises at data[len]. */
static int32_t dns_shim__check_bytes(size_t i, const char *what, const dns_shim_bytes *b)
{
    if (b->data == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose %s is NULL",
                              i, what);
    if (b->len > 65535)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose %s has "
                              "%zu bytes, more than a message holds", i, what, b->len);
    if (b->data[b->len] != '\0')
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose %s has "
                              "no NUL at data[len]", i, what);
    return DNS_SHIM_OK;
}

/* A list of byte strings (a TXT record's): 1 to 65,535 of them, the array
** there, each one whole. */
static int32_t dns_shim__check_strings(size_t i, size_t count, const dns_shim_bytes *strings)
{
    size_t k;
    int32_t rc = DNS_SHIM_OK;
    if (count == 0 || count > 65535)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose "
                              "strings count is %zu, not 1 to 65535", i, count);
    if (strings == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose "
                              "strings are NULL", i);
    for (k = 0; k < count && rc == DNS_SHIM_OK; k++)
        rc = dns_shim__check_bytes(i, "string", &strings[k]);
    return rc;
}

/* The whole plan, before its first call: every step names a callback
** member within the set's struct_size whose pointer is set, and every
** struct it hands over is whole (strings terminated, counts and lengths
** within what a message can hold).  A plan that is not is a bug on the
** Python side: DNS_SHIM_ERR_INTERNAL, no callback runs. */
int32_t dns_shim__check_plan(const dns_shim_callbacks *cb, const dns_shim__step *steps,
                                    size_t count)
{
    size_t i;
    int32_t rc = DNS_SHIM_OK;

    if (count > DNS_SHIM__STEPS_MAX)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned %zu calls, more than a "
                              "message can hold", count);
    if (count > 0 && (steps == NULL || cb == NULL))
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned %zu calls without %s",
                              count, steps == NULL ? "steps" : "callbacks");
    for (i = 0; i < count && rc == DNS_SHIM_OK; i++) {
        const dns_shim__step *step = &steps[i];
        const void *arg = step->arg;
        void (*fn)(void);
        int is_record = 0;
        const char *name = dns_shim__callback_name(step->member, &is_record);

        if (name == NULL || step->member > cb->struct_size - sizeof fn)
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu to no "
                                  "callback (offset %zu)", i, step->member);
        memcpy(&fn, (const char *)cb + step->member, sizeof fn);
        if (fn == NULL)
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu to %s, "
                                  "which is NULL", i, name);
        if (arg == NULL)
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu to %s "
                                  "with a NULL struct", i, name);
        if (is_record) {
            const dns_shim_rr *rr = (const dns_shim_rr *)arg;
            rc = dns_shim__check_text(i, "owner", rr->owner);
            if (rc == DNS_SHIM_OK && (rr->section == 0 || rr->section > DNS_SHIM__ALL_SECTIONS ||
                                      (rr->section & (rr->section - 1)) != 0))
                return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned step %zu whose "
                                      "section is %" PRIu32 ", no DNS_SHIM_SECTION_* value", i,
                                      rr->section);
        }
        if (rc != DNS_SHIM_OK)
            break;
        switch (step->member) {
        case offsetof(dns_shim_callbacks, on_header): {
            const dns_shim_header *h = arg;
            if (h->qname != NULL)
                rc = dns_shim__check_text(i, "qname", h->qname);
            break;
        }
        /* The typed kinds: each field by its style, from the table of kinds
        ** (numbers and addresses have nothing to check). */
#define DNS_SHIM__CHECK_IPV4(k, field)
#define DNS_SHIM__CHECK_IPV6(k, field)
#define DNS_SHIM__CHECK_U16(k, field)
#define DNS_SHIM__CHECK_U32(k, field)
#define DNS_SHIM__CHECK_NAME(k, field) \
            if (rc == DNS_SHIM_OK) rc = dns_shim__check_text(i, #field, k->field);
#define DNS_SHIM__CHECK_BYTES(k, field) \
            if (rc == DNS_SHIM_OK) rc = dns_shim__check_bytes(i, #field, &k->field);
#define DNS_SHIM__CHECK_STRINGS(k, field) \
            if (rc == DNS_SHIM_OK) rc = dns_shim__check_strings(i, k->count, k->field);
#define DNS_SHIM__CHECK_FIELD(type, field, style) DNS_SHIM__CHECK_##style(k, field)
#define DNS_SHIM__CHECK_KIND(rdtype, member, type, kind)              \
        case offsetof(dns_shim_callbacks, member): {                  \
            const type *k = arg;                                      \
            (void)k;                                                  \
            DNS_SHIM__KIND_FIELDS_##member(DNS_SHIM__CHECK_FIELD)     \
            break;                                                    \
        }
        DNS_SHIM__KINDS(DNS_SHIM__CHECK_KIND)
#undef DNS_SHIM__CHECK_KIND
#undef DNS_SHIM__CHECK_FIELD
#undef DNS_SHIM__CHECK_STRINGS
#undef DNS_SHIM__CHECK_BYTES
#undef DNS_SHIM__CHECK_NAME
#undef DNS_SHIM__CHECK_U32
#undef DNS_SHIM__CHECK_U16
#undef DNS_SHIM__CHECK_IPV6
#undef DNS_SHIM__CHECK_IPV4
        case offsetof(dns_shim_callbacks, on_other):
            rc = dns_shim__check_bytes(i, "rdata", &((const dns_shim_raw *)arg)->rdata);
            break;
        case offsetof(dns_shim_callbacks, on_edns_option): {
            const dns_shim_edns_option *o = arg;
            rc = dns_shim__check_bytes(i, "option data", &o->data);
            if (rc == DNS_SHIM_OK)
                rc = dns_shim__check_bytes(i, "EDE text", &o->ede_text);
            if (rc == DNS_SHIM_OK)
                rc = dns_shim__check_bytes(i, "client cookie", &o->cookie_client);
            if (rc == DNS_SHIM_OK)
                rc = dns_shim__check_bytes(i, "server cookie", &o->cookie_server);
            if (rc == DNS_SHIM_OK)
                rc = dns_shim__check_bytes(i, "ECS address", &o->ecs_address);
            break;
        }
        }
    }
    return rc;
}
