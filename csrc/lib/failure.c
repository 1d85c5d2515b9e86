/*
** failure.c: the program's log handler (dns_shim_set_log_handler) and the
** reason for the last failure, per thread (dns_shim_last_error), a unit of
** libdnsshim's C compiled on its own.  Every other unit fails a call
** through dns_shim__fail and logs through dns_shim__log_level
** (dns_shim_internal.h); the Python side does both through the bridge.
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status names: written by the build (build_ffi.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

/* ------------------------------------------------------------------ */
/* Logging                                                              */

static pthread_mutex_t dns_shim__log_lock = PTHREAD_MUTEX_INITIALIZER;
static dns_shim_log_handler dns_shim__log_handler = NULL;
static void *dns_shim__log_ctx = NULL;

DNS_SHIM_API void dns_shim_set_log_handler(dns_shim_log_handler handler, void *ctx)
{
    pthread_mutex_lock(&dns_shim__log_lock);
    dns_shim__log_handler = handler;
    dns_shim__log_ctx = handler ? ctx : NULL;
    pthread_mutex_unlock(&dns_shim__log_lock);
}

/* Sends one message to the handler, or to stderr (the default handler
** writes warnings and errors only).  The Python side (shim/embedded.py)
** logs through it too. */
void dns_shim__log_level(int32_t level, const char *message)
{
    dns_shim_log_handler handler;
    void *ctx;
    pthread_mutex_lock(&dns_shim__log_lock);
    handler = dns_shim__log_handler;
    ctx = dns_shim__log_ctx;
    pthread_mutex_unlock(&dns_shim__log_lock);
    if (handler != NULL) {
        handler(ctx, level, message);
    } else if (level <= DNS_SHIM_LOG_WARNING) {
        fprintf(stderr, "dnsshim: %s\n", message);
        fflush(stderr);
    }
}

void dns_shim__log(const char *message)
{
    dns_shim__log_level(DNS_SHIM_LOG_ERROR, message);
}

/* ------------------------------------------------------------------ */
/* The reason for the last failure, per thread (dns_shim_last_error)    */

__thread char dns_shim__error[DNS_SHIM__ERROR_SIZE];

/* The enumerator's name of a status ("DNS_SHIM_ERR_TRUNCATED"), from the
** one table of statuses: build_ffi.py writes the cases. */
static const char *dns_shim__status_name(int32_t status)
{
    switch (status) {
    DNS_SHIM__STATUS_NAME_CASES
    }
    return "DNS_SHIM_ERR_UNKNOWN";
}

DNS_SHIM_API const char *dns_shim_last_error(void)
{
    return dns_shim__error;
}

/* A call succeeded: nothing to say. */
int32_t dns_shim__ok(void)
{
    dns_shim__error[0] = '\0';
    return DNS_SHIM_OK;
}

/* A call fails with status: "<its name>: <detail>" for this thread.
** Returns status. */
int32_t dns_shim__fail(int32_t status, const char *fmt, ...)
{
    size_t n;
    va_list ap;
    n = (size_t)snprintf(dns_shim__error, sizeof dns_shim__error, "%s: ",
                         dns_shim__status_name(status));
    if (n >= sizeof dns_shim__error)
        return status;
    va_start(ap, fmt);
    vsnprintf(dns_shim__error + n, sizeof dns_shim__error - n, fmt, ap);
    va_end(ap);
    return status;
}

/* For the Python side: the whole text of a failure it reports. */
void dns_shim__set_error(const char *text)
{
    snprintf(dns_shim__error, sizeof dns_shim__error, "%s", text);
}

