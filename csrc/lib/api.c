/*
** api.c: the public entry points that take a message (process_dns_response,
** dns_shim_process, dns_shim_process_reply), the registered callback set
** (dns_shim_register_callbacks), the checks of every argument that crosses
** from the program, and dns_shim_strerror: a unit of libdnsshim's C
** compiled on its own.  A checked call goes on to the bridge (dns_shim.c:
** dns_shim__run), which asks the Python side for the plan.
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status texts: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The sizes of dns_shim_callbacks and dns_shim_query this library accepts,
** and their releases: when a struct grows, the older sizes stay known, so
** older callers still work (dns_shim_internal.h says where they come from). */
static const uint32_t dns_shim__known_sizes[] = {
    DNS_SHIM__SIZES_dns_shim_callbacks(DNS_SHIM__SIZE)
};
static const char *const dns_shim__known_size_releases[] = {
    DNS_SHIM__SIZES_dns_shim_callbacks(DNS_SHIM__RELEASE)
};
static const uint32_t dns_shim__known_query_sizes[] = {
    DNS_SHIM__SIZES_dns_shim_query(DNS_SHIM__SIZE)
};
static const char *const dns_shim__known_query_releases[] = {
    DNS_SHIM__SIZES_dns_shim_query(DNS_SHIM__RELEASE)
};

static const uint32_t dns_shim__known_allocator_sizes[] = {
    DNS_SHIM__SIZES_dns_shim_allocator(DNS_SHIM__SIZE)
};
static const char *const dns_shim__known_allocator_releases[] = {
    DNS_SHIM__SIZES_dns_shim_allocator(DNS_SHIM__RELEASE)
};

#define DNS_SHIM__KNOWN_QUERY_FLAGS DNS_SHIM_MATCH_CASE

/* ------------------------------------------------------------------ */
/* Struct sizes                                                         */

int dns_shim__size_known(uint32_t size, const uint32_t *known, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (size == known[i])
            return 1;
    return 0;
}

int32_t dns_shim__unknown_size(const char *what, uint32_t size, const uint32_t *known,
                               const char *const *releases, size_t n)
{
    char text[256];
    size_t i;
    int used = 0;

    text[0] = '\0';
    for (i = 0; i < n && used >= 0 && (size_t)used < sizeof text; i++) {
        if (n == 1)
            used += snprintf(text + used, sizeof text - (size_t)used, "%u", (unsigned)known[i]);
        else
            used += snprintf(text + used, sizeof text - (size_t)used, "%s%u for %s%s",
                             i ? ", " : "", (unsigned)known[i], releases[i],
                             i + 1 == n ? " and later" : "");
    }
    return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT,
                          "the %s's struct_size is %u, not one this library knows (%s)", what,
                          (unsigned)size, text);
}

/* DNS_SHIM_OK when size is one of table's, else what dns_shim__unknown_size says. */
#define DNS_SHIM__CHECK_SIZE(what, size, table, releases)                                 \
    (dns_shim__size_known((size), (table), DNS_SHIM__COUNT(table)) ? DNS_SHIM_OK            \
     : dns_shim__unknown_size((what), (size), (table), (releases), DNS_SHIM__COUNT(table)))

/* ------------------------------------------------------------------ */
/* Callback sets                                                        */

/* Copies *in into *out, normalised to the full current struct (members the
** caller's older header does not know are zeroed, and never read from the
** caller's memory).  Returns a status (and says why it failed). */
static int32_t dns_shim__copy_callbacks(const dns_shim_callbacks *in, dns_shim_callbacks *out)
{
    uint32_t size;
    int32_t status;

    if (in == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the callbacks set is NULL");
    /* Read once: the caller's memory may change while we look (another
    ** thread), and the size checked must be the size copied. */
    size = *(const volatile uint32_t *)&in->struct_size;
    status = DNS_SHIM__CHECK_SIZE("callbacks set", size, dns_shim__known_sizes,
                                  dns_shim__known_size_releases);
    if (status != DNS_SHIM_OK)
        return status;
    memset(out, 0, sizeof(*out));
    memcpy(out, in, size);
    out->struct_size = (uint32_t)sizeof(*out);
    if (out->sections & ~(uint32_t)DNS_SHIM__ALL_SECTIONS)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT,
                              "the callbacks set's sections mask 0x%x has bits other than "
                              "DNS_SHIM_SECTION_ANSWER, _AUTHORITY and _ADDITIONAL (0x%x)",
                              (unsigned)out->sections, (unsigned)DNS_SHIM__ALL_SECTIONS);
    return DNS_SHIM_OK;
}

/* The same for a query: NULL, an unknown size, unknown flags or no qname are
** DNS_SHIM_ERR_BAD_ARGUMENT.  The qname's syntax is checked in Python. */
static int32_t dns_shim__copy_query(const dns_shim_query *in, dns_shim_query *out)
{
    uint32_t size;
    int32_t status;

    if (in == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the query is NULL");
    size = *(const volatile uint32_t *)&in->struct_size; /* read once, as for callbacks */
    status = DNS_SHIM__CHECK_SIZE("query", size, dns_shim__known_query_sizes,
                                  dns_shim__known_query_releases);
    if (status != DNS_SHIM_OK)
        return status;
    memset(out, 0, sizeof(*out));
    memcpy(out, in, size);
    out->struct_size = (uint32_t)sizeof(*out);
    if (out->flags & ~(uint32_t)DNS_SHIM__KNOWN_QUERY_FLAGS)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT,
                              "the query's flags 0x%x have bits other than DNS_SHIM_MATCH_CASE",
                              (unsigned)out->flags);
    if (out->qname == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the query's qname is NULL");
    return DNS_SHIM_OK;
}

/* An allocator checked and copied, normalised to the whole current struct
** (dns_shim_set_allocator's checks, for the runtime's memory.c and the
** shared library's front.c): its size known, malloc, realloc and free set.
** Each member is read once: what is checked is what is used, whatever the
** caller's memory does meanwhile.  NULL: DNS_SHIM_OK, *out zeroed. */
int32_t dns_shim__copy_allocator(const dns_shim_allocator *in, dns_shim_allocator *out)
{
    uint32_t size;
    int32_t status;

    memset(out, 0, sizeof *out);
    if (in == NULL)
        return DNS_SHIM_OK;
    size = *(const volatile uint32_t *)&in->struct_size;
    status = DNS_SHIM__CHECK_SIZE("allocator", size, dns_shim__known_allocator_sizes,
                                  dns_shim__known_allocator_releases);
    if (status != DNS_SHIM_OK)
        return status;
    memcpy(out, (const void *)in, size);
    out->struct_size = (uint32_t)sizeof *out;
    if (out->malloc == NULL || out->realloc == NULL || out->free == NULL)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the allocator's malloc, realloc and "
                              "free are required (calloc may be NULL)");
    return DNS_SHIM_OK;
}

static pthread_mutex_t dns_shim__registered_lock = PTHREAD_MUTEX_INITIALIZER;
static dns_shim_callbacks dns_shim__registered;
static int dns_shim__have_registered = 0;

/* The registered set's part of the fork handler (dns_shim_internal.h). */
void dns_shim__callbacks_fork(int phase)
{
    dns_shim__fork_mutex(&dns_shim__registered_lock, phase);
}

DNS_SHIM_API int32_t dns_shim_register_callbacks(const dns_shim_callbacks *callbacks)
{
    dns_shim_callbacks copy;

    if (callbacks != NULL) {
        int32_t status = dns_shim__copy_callbacks(callbacks, &copy);
        if (status != DNS_SHIM_OK)
            return status;
    }
    dns_shim__lock(&dns_shim__registered_lock);
    if (callbacks != NULL)
        dns_shim__registered = copy;
    dns_shim__have_registered = callbacks != NULL;
    pthread_mutex_unlock(&dns_shim__registered_lock);
    return dns_shim__ok();
}

/* ------------------------------------------------------------------ */
/* Processing                                                           */

/* A checked call: the parse service's, where there is one (service.c), or
** this process's (the runtime's dns_shim.c, or the shared library's front,
** front.c, which loads the runtime). */
int32_t dns_shim__run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                      const dns_shim_callbacks *callbacks)
{
    int32_t rc;
    if (dns_shim__service_run(buf, len, query, callbacks, &rc))
        return rc;
    return dns_shim__run_here(buf, len, query, callbacks);
}

static int32_t dns_shim__check_buffer(const uint8_t *buf, int32_t len)
{
    if (len < 0 || len > 65535)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_LENGTH, "the length is %" PRId32
                              ", not 0 to 65535", len);
    if (buf == NULL && len > 0)
        return dns_shim__fail(DNS_SHIM_ERR_NULL_BUFFER, "the buffer is NULL and the length %"
                              PRId32, len);
    return DNS_SHIM_OK;
}

DNS_SHIM_API int32_t dns_shim_process(const uint8_t *dns_response, int32_t response_len,
                                      const dns_shim_callbacks *callbacks)
{
    dns_shim_callbacks copy;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    status = dns_shim__copy_callbacks(callbacks, &copy);
    if (status != DNS_SHIM_OK)
        return status;
    return dns_shim__run(dns_response, response_len, NULL, &copy);
}

/* The registered set, one whole set, old or new, taken at the start of the
** call: returns copy, or NULL when none is registered. */
static const dns_shim_callbacks *dns_shim__take_registered(dns_shim_callbacks *copy)
{
    int have;
    dns_shim__lock(&dns_shim__registered_lock);
    have = dns_shim__have_registered;
    if (have)
        *copy = dns_shim__registered;
    pthread_mutex_unlock(&dns_shim__registered_lock);
    return have ? copy : NULL;
}

DNS_SHIM_API int32_t process_dns_response(uint8_t *dns_response, int32_t response_len)
{
    dns_shim_callbacks copy;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    return dns_shim__run(dns_response, response_len, NULL, dns_shim__take_registered(&copy));
}

/* dns_shim_process_reply, through the service (dns_shim__run) or here. */
static int32_t dns_shim__process_reply(const uint8_t *dns_response, int32_t response_len,
                                       const dns_shim_query *query,
                                       const dns_shim_callbacks *callbacks, int here)
{
    dns_shim_callbacks copy;
    dns_shim_query query_copy;
    const dns_shim_callbacks *use;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    if (callbacks != NULL) {
        status = dns_shim__copy_callbacks(callbacks, &copy);
        if (status != DNS_SHIM_OK)
            return status;
        use = &copy;
    } else {
        use = dns_shim__take_registered(&copy);
    }
    status = dns_shim__copy_query(query, &query_copy);
    if (status != DNS_SHIM_OK)
        return status;
    if (here)
        return dns_shim__run_here(dns_response, response_len, &query_copy, use);
    return dns_shim__run(dns_response, response_len, &query_copy, use);
}

DNS_SHIM_API int32_t dns_shim_process_reply(const uint8_t *dns_response, int32_t response_len,
                                            const dns_shim_query *query,
                                            const dns_shim_callbacks *callbacks)
{
    return dns_shim__process_reply(dns_response, response_len, query, callbacks, 0);
}

DNS_SHIM__PRIVATE_API int32_t dns_shim__process_reply_local(const uint8_t *dns_response,
                                                            int32_t response_len,
                                                            const dns_shim_query *query,
                                                            const dns_shim_callbacks *callbacks)
{
    return dns_shim__process_reply(dns_response, response_len, query, callbacks, 1);
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

/* The texts are shim/status.py's TEXTS, the one table of them:
** the build writes the cases here (DNS_SHIM__STRERROR_CASES). */
DNS_SHIM_API const char *dns_shim_strerror(int32_t status)
{
    switch (status) {
    DNS_SHIM__STRERROR_CASES
    }
    return DNS_SHIM__STRERROR_UNKNOWN;
}
