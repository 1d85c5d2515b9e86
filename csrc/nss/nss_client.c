/*
** nss_client.c: what libdnsshim's service client (csrc/lib/service.c and
** dispatch.c, compiled into libnss_dnsshim.so.2 with hidden visibility)
** needs from the rest of the library, for the module alone: the failure
** detail of the calling thread, the environment (secure_getenv), the
** module's diagnostics, and libc's allocator.
**
** The module asks the parse service itself, so that a program whose
** lookups the service parses loads neither libdnsshim nor libpython; it
** loads libdnsshim (csrc/nss/nss_dnsshim.c: nss_library) only for a reply
** it must parse in the process.  These copies are the module's own: every
** name here is hidden, and the module exports its _nss_dnsshim_* functions
** alone (libnss_dnsshim.map).
*/
#define _GNU_SOURCE 1
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status names: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the module's diagnostics go (nss_dnsshim.c). */
DNS_SHIM__HIDDEN void nss_dnsshim__library_log(void *ctx, int32_t level, const char *message);

__thread char dns_shim__error[DNS_SHIM__ERROR_SIZE];

const char *dns_shim__getenv(const char *name)
{
    return secure_getenv(name);
}

void dns_shim__log_level(int32_t level, const char *message)
{
    nss_dnsshim__library_log(NULL, level, message);
}

void dns_shim__log(const char *message)
{
    dns_shim__log_level(DNS_SHIM_LOG_ERROR, message);
}

static const char *status_name(int32_t status)
{
    switch (status) {
    DNS_SHIM__STATUS_NAME_CASES
    }
    return "DNS_SHIM_ERR_UNKNOWN";
}

int32_t dns_shim__ok(void)
{
    dns_shim__error[0] = '\0';
    return DNS_SHIM_OK;
}

int32_t dns_shim__fail(int32_t status, const char *fmt, ...)
{
    char text[DNS_SHIM__ERROR_SIZE];
    size_t n;
    va_list ap;
    n = (size_t)snprintf(text, sizeof text, "%s: ", status_name(status));
    if (n < sizeof text) {
        va_start(ap, fmt);
        vsnprintf(text + n, sizeof text - n, fmt, ap);
        va_end(ap);
    }
    memcpy(dns_shim__error, text, sizeof text);
    return status;
}

const char *dns_shim__reason(const char *detail)
{
    const char *colon = strstr(detail, ": ");
    if (strncmp(detail, "DNS_SHIM_", sizeof "DNS_SHIM_" - 1) == 0 && colon != NULL)
        return colon + 2;
    return detail;
}

void dns_shim__set_error(const char *text)
{
    snprintf(dns_shim__error, sizeof dns_shim__error, "%s", text);
}

/* The module sets no allocator: libc's. */
int dns_shim__memory_host(dns_shim_allocator *out)
{
    (void)out;
    return 0;
}
