/*
** nss_client.c: what libdnsshim's service client needs beside the units
** libnss_dnsshim.so.2 compiles in with it (csrc/lib/service.c, dispatch.c
** and failure.c, all hidden: dnsshim_build.pipeline.NSS_UNITS), for the
** module alone: its fork handler, the allocator (libc's: the module sets
** none), and where the client's messages go (the module's own
** diagnostics, nss_dnsshim.c, set as failure.c's default handler before
** the first call).
**
** The module asks the parse service itself, so that a program whose
** lookups the service parses loads neither libdnsshim nor libpython; it
** loads libdnsshim (csrc/nss/nss_dnsshim.c: nss_library_get) only for a
** reply it must parse in the process.  These copies are the module's own:
** the module exports its _nss_dnsshim_* functions alone
** (libnss_dnsshim.map).
*/
#define _GNU_SOURCE 1
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"

#include <pthread.h>

/* Where the module's diagnostics go (nss_dnsshim.c). */
DNS_SHIM__HIDDEN void nss_dnsshim__library_log(void *ctx, int32_t level, const char *message);

/* failure.c's lock, taken before a fork and given back on both sides, as
** the library does (dns_shim_internal.h). */
static void nss_fork_prepare(void)
{
    dns_shim__log_fork(DNS_SHIM__FORK_PREPARE);
}

static void nss_fork_parent(void)
{
    dns_shim__log_fork(DNS_SHIM__FORK_PARENT);
}

static void nss_fork_child(void)
{
    dns_shim__log_fork(DNS_SHIM__FORK_CHILD);
}

static void nss_client_setup(void)
{
    pthread_atfork(nss_fork_prepare, nss_fork_parent, nss_fork_child);
}

void dns_shim__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, nss_client_setup);
}

/* Before the module's first call of the client: its messages go where the
** module's go. */
DNS_SHIM__HIDDEN void nss_dnsshim__client_start(void)
{
    dns_shim__set_default_log_handler(nss_dnsshim__library_log, NULL);
}

/* The module sets no allocator: libc's. */
int dns_shim__memory_host(dns_shim_allocator *out)
{
    (void)out;
    return 0;
}
