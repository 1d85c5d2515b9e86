/*
** check.c: what libdnsshim_ares's Python side hands over, checked whole
** before C copies a byte of it, and the code a parse returns when it
** cannot be trusted.  The C side trusts nothing that crosses from Python:
** a result that fails here is a bug on the Python side, logged, and
** nothing of it is copied (the bridge, dnsshim_ares.c, does that).
*/
#include "ares/dnsshim_ares_internal.h"

#include <stdio.h>

void dnsshim_ares__log(const char *message)
{
    fprintf(stderr, "dnsshim_ares: %s\n", message);
    fflush(stderr);
}

int dnsshim_ares__unreadable(int32_t kind, const char **name)
{
    const char *unused;
    if (name == NULL)
        name = &unused;
    if (kind == DNSSHIM_ARES_KIND_EXPAND_NAME) {
        *name = "ARES_EBADNAME";
        return DNSSHIM_ARES_EBADNAME;
    }
    if (kind == DNSSHIM_ARES_KIND_EXPAND_STRING) {
        *name = "ARES_EBADSTR";
        return DNSSHIM_ARES_EBADSTR;
    }
    *name = "ARES_EBADRESP";
    return DNSSHIM_ARES_EBADRESP;
}

/* One byte string of a result: absent (NULL, 0), or data[len] is its NUL
** and len is within a message's 65,535 octets. */
static const char *dnsshim_ares__check_bytes(const dnsshim_ares_bytes *b)
{
    if (b->data == NULL)
        return b->len == 0 ? NULL : "a NULL string with a length";
    if (b->len > 65535)
        return "a string longer than a message";
    if (b->data[b->len] != '\0')
        return "a string without its NUL at data[len]";
    return NULL;
}

/* Counts within a message's sizes, arrays present for their counts, the
** address length the family's (4 for A, 16 for AAAA; no addresses for the
** other kinds), an expanded encoding within the message. */
const char *dnsshim_ares__check_result(int32_t kind, const dnsshim_ares_result *r, int len,
                                       int offset)
{
    size_t i, k;
    const char *why;

    if ((why = dnsshim_ares__check_bytes(&r->name)) != NULL)
        return why;
    if (r->naliases > 65535 || (r->naliases > 0 && r->aliases == NULL))
        return "an alias count without its aliases";
    for (i = 0; i < r->naliases; i++)
        if ((why = dnsshim_ares__check_bytes(&r->aliases[i])) != NULL)
            return why;
    if (r->naddrs > 0) {
        size_t want = kind == DNSSHIM_ARES_KIND_A ? 4 : kind == DNSSHIM_ARES_KIND_AAAA ? 16 : 0;
        if (want == 0)
            return "addresses for a kind without any";
        if (r->addrlen != want)
            return "an address length that is not its family's";
        if (r->naddrs > 65535 / want || r->addrs == NULL || r->ttls == NULL)
            return "an address count without its addresses";
    }
    if (r->nitems > 65535 || (r->nitems > 0 && r->items == NULL))
        return "an item count without its items";
    for (i = 0; i < r->nitems; i++)
        for (k = 0; k < 4; k++)
            if ((why = dnsshim_ares__check_bytes(&r->items[i].str[k])) != NULL)
                return why;
    if (r->status == DNSSHIM_ARES_SUCCESS &&
        (kind == DNSSHIM_ARES_KIND_EXPAND_NAME || kind == DNSSHIM_ARES_KIND_EXPAND_STRING) &&
        (r->nitems != 1 || r->items[0].num[0] < 1 || r->items[0].num[0] > (int64_t)len - offset))
        return "an encoding length beyond the message";
    return NULL;
}
