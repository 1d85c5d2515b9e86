/*
** free.c: c-ares's free functions and ares_strerror.
**
** The free functions recognise this library's allocations (the set of
** owned.c for hostents and strings, the mark in the header of
** ares_free_data's structures) and pass any other pointer on to the real
** c-ares's definition: that of the c-ares the caller reaches
** (dnsshim_ares__theirs: the program's, a plugin's or a Python extension's
** loaded RTLD_LOCAL, or libcares's own when its code frees a result it
** made), else the next definition after this library.  Each takes its
** caller's address itself (__builtin_return_address(0)).
*/
#define _GNU_SOURCE 1
#include "ares/dnsshim_ares_internal.h"

#include <dlfcn.h>
#include <stdlib.h>

void *dnsshim_ares__next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* The header before the data of one of ares_free_data's structures. */
static dnsshim_ares__data *dnsshim_ares__header(void *p)
{
    return (dnsshim_ares__data *)(void *)((char *)p - offsetof(dnsshim_ares__data, data));
}

DNSSHIM_ARES_API void ares_free_hostent(dnsshim_ares_hostent *host)
{
    const void *caller = __builtin_return_address(0);
    void (*next)(dnsshim_ares_hostent *);
    if (host == NULL)
        return;
    if (!dnsshim_ares__disown(host)) {
        *(void **)&next = dnsshim_ares__theirs(DNSSHIM_ARES__FN(ares_free_hostent), caller);
        if (next != NULL) {
            next(host);
            return;
        }
        /* No other c-ares: a hostent of the program's own, from the same allocator. */
    }
    dnsshim_ares__free_hostent_fields(host);
}

DNSSHIM_ARES_API void ares_free_string(void *str)
{
    const void *caller = __builtin_return_address(0);
    void (*next)(void *);
    if (str == NULL)
        return;
    if (!dnsshim_ares__disown(str)) {
        *(void **)&next = dnsshim_ares__theirs(DNSSHIM_ARES__FN(ares_free_string), caller);
        if (next != NULL) {
            next(str);
            return;
        }
    }
    dnsshim_ares__free(str);
}

DNSSHIM_ARES_API void ares_free_data(void *dataptr)
{
    const void *caller = __builtin_return_address(0);
    while (dataptr != NULL) {
        dnsshim_ares__data *d = dnsshim_ares__header(dataptr);
        void *next = NULL;
        if (d->mark != DNSSHIM_ARES__MARK) {
            /* Not ours: c-ares's own (ares_get_servers...). */
            void (*next_free)(void *);
            *(void **)&next_free = dnsshim_ares__theirs(DNSSHIM_ARES__FN(ares_free_data), caller);
            if (next_free != NULL)
                next_free(dataptr);
            return;
        }
        switch (d->type) {
        case DNSSHIM_ARES__SRV:
            next = d->data.srv.next;
            dnsshim_ares__free(d->data.srv.host);
            break;
        case DNSSHIM_ARES__MX:
            next = d->data.mx.next;
            dnsshim_ares__free(d->data.mx.host);
            break;
        case DNSSHIM_ARES__TXT:
        case DNSSHIM_ARES__TXT_EXT:
            next = d->data.txt.next;
            dnsshim_ares__free(d->data.txt.txt);
            break;
        case DNSSHIM_ARES__NAPTR:
            next = d->data.naptr.next;
            dnsshim_ares__free(d->data.naptr.flags);
            dnsshim_ares__free(d->data.naptr.service);
            dnsshim_ares__free(d->data.naptr.regexp);
            dnsshim_ares__free(d->data.naptr.replacement);
            break;
        case DNSSHIM_ARES__SOA:
            dnsshim_ares__free(d->data.soa.nsname);
            dnsshim_ares__free(d->data.soa.hostmaster);
            break;
        case DNSSHIM_ARES__URI:
            next = d->data.uri.next;
            dnsshim_ares__free(d->data.uri.uri);
            break;
        case DNSSHIM_ARES__CAA:
            next = d->data.caa.next;
            dnsshim_ares__free(d->data.caa.property);
            dnsshim_ares__free(d->data.caa.value);
            break;
        default:
            return; /* not a type we make: leave it */
        }
        d->mark = 0;
        dnsshim_ares__free(d);
        dataptr = next;
    }
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

/* c-ares 1.18's texts, by code (ares_strerror.c); a code beyond them goes
** to the real c-ares the caller reaches (a newer one knows more). */
DNSSHIM_ARES_API const char *ares_strerror(int code)
{
    const void *caller = __builtin_return_address(0);
    const char *(*next)(int);
    static const char *const texts[] = {
        "Successful completion",
        "DNS server returned answer with no data",
        "DNS server claims query was misformatted",
        "DNS server returned general failure",
        "Domain name not found",
        "DNS server does not implement requested operation",
        "DNS server refused query",
        "Misformatted DNS query",
        "Misformatted domain name",
        "Unsupported address family",
        "Misformatted DNS reply",
        "Could not contact DNS servers",
        "Timeout while contacting DNS servers",
        "End of file",
        "Error reading file",
        "Out of memory",
        "Channel is being destroyed",
        "Misformatted string",
        "Illegal flags specified",
        "Given hostname is not numeric",
        "Illegal hints flags specified",
        "c-ares library initialization not yet performed",
        "Error loading iphlpapi.dll",
        "Could not find GetNetworkParams function",
        "DNS query cancelled",
    };
    if (code >= 0 && code < (int)(sizeof texts / sizeof texts[0]))
        return texts[code];
    *(void **)&next = dnsshim_ares__theirs(DNSSHIM_ARES__FN(ares_strerror), caller);
    return next != NULL ? next(code) : "unknown";
}
