/*
** glibc_nss_select.c: linked into glibc's resolver tests (tests/glibc_source.py),
** so that a test's hosts lookups go to the module DNSSHIM_TEST_HOSTS names.
**
** glibc's test harness (support/resolv_test.c) points the hosts database at
** dns with __nss_configure_lookup("hosts", "dns") before it starts its
** servers.  This definition, in the test program, comes before libc's: it
** passes every call on to libc's own, with the hosts service replaced by
** the value of DNSSHIM_TEST_HOSTS ("dnsshim") where that is set; unset, the
** test runs against dns, as glibc runs it.
*/
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int __nss_configure_lookup(const char *dbname, const char *service_line);

int __nss_configure_lookup(const char *dbname, const char *service_line)
{
    int (*libc)(const char *, const char *);
    const char *hosts = getenv("DNSSHIM_TEST_HOSTS");
    *(void **)&libc = dlsym(RTLD_NEXT, "__nss_configure_lookup");
    if (libc == NULL) {
        fprintf(stderr, "error: no __nss_configure_lookup in libc: %s\n", dlerror());
        exit(1);
    }
    if (hosts != NULL && strcmp(dbname, "hosts") == 0)
        service_line = hosts;
    return libc(dbname, service_line);
}
