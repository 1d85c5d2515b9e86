/*
** structures.c: c-ares's structures built from what the Python side
** computed (checked whole first: check.c), laid out the way c-ares lays
** them out and allocated from the allocator the program gave c-ares
** (memory.c), so that c-ares's own free functions would free them too
** (free.c frees them here).  Not one byte of a message is read
** in C.
*/
#include "ares/dnsshim_ares_internal.h"

#include <stdlib.h>
#include <string.h>

unsigned char *dnsshim_ares__copy(const dnsshim_ares_bytes *s)
{
    unsigned char *out = dnsshim_ares__malloc(s->len + 1);
    if (out == NULL)
        return NULL;
    if (s->len)
        memcpy(out, s->data, s->len);
    out[s->len] = '\0';
    return out;
}

unsigned char *dnsshim_ares__copy_cut(const dnsshim_ares_bytes *s)
{
    unsigned char *out = dnsshim_ares__malloc(s->len + 1);
    if (out == NULL)
        return NULL;
    if (s->len)
        strncpy((char *)out, (const char *)s->data, s->len);
    out[s->len] = '\0';
    return out;
}

int dnsshim_ares__hostent(const dnsshim_ares_result *r, int addrtype, int length,
                          const void *addrs, size_t naddrs, dnsshim_ares_hostent **out)
{
    size_t i;
    dnsshim_ares_hostent *h = dnsshim_ares__calloc(1, sizeof *h);
    *out = NULL;
    if (h == NULL)
        return DNSSHIM_ARES_ENOMEM;
    h->h_addrtype = addrtype;
    h->h_length = length;
    h->h_aliases = dnsshim_ares__calloc(r->naliases + 1, sizeof(char *));
    h->h_addr_list = dnsshim_ares__calloc(naddrs + 1, sizeof(char *));
    if (h->h_aliases == NULL || h->h_addr_list == NULL)
        goto enomem;
    if (r->name.data != NULL && (h->h_name = (char *)dnsshim_ares__copy(&r->name)) == NULL)
        goto enomem;
    /* GCC 12's analyser forgets a pointer stored at a symbolic index of an
    ** array on the heap and reports it leaked: each alias is freed by
    ** dnsshim_ares__free_hostent_fields, on failure as by ares_free_hostent. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
    for (i = 0; i < r->naliases; i++)
        if ((h->h_aliases[i] = (char *)dnsshim_ares__copy(&r->aliases[i])) == NULL)
            goto enomem;
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#  pragma GCC diagnostic pop
#endif
    if (naddrs > 0) {
        char *block = dnsshim_ares__malloc(naddrs * (size_t)length);
        if (block == NULL)
            goto enomem;
        memcpy(block, addrs, naddrs * (size_t)length);
        h->h_addr_list[0] = block; /* the block: ares_free_hostent frees this one */
        for (i = 1; i < naddrs; i++)
            h->h_addr_list[i] = block + i * (size_t)length;
    }
    if (dnsshim_ares__own(h) != 0)
        goto enomem;
    *out = h;
    return DNSSHIM_ARES_SUCCESS;
enomem:
    dnsshim_ares__free_hostent_fields(h);
    return DNSSHIM_ARES_ENOMEM;
}

void dnsshim_ares__free_hostent_fields(dnsshim_ares_hostent *host)
{
    char **p;
    dnsshim_ares__free(host->h_name);
    for (p = host->h_aliases; p != NULL && *p != NULL; p++)
        dnsshim_ares__free(*p);
    dnsshim_ares__free(host->h_aliases);
    if (host->h_addr_list != NULL) {
        dnsshim_ares__free(host->h_addr_list[0]);
        dnsshim_ares__free(host->h_addr_list);
    }
    dnsshim_ares__free(host);
}

dnsshim_ares__data *dnsshim_ares__element(unsigned int type, const dnsshim_ares_item *it)
{
    dnsshim_ares__data *d = dnsshim_ares__calloc(1, sizeof *d);
    void *p;
    int ok = 1;
    if (d == NULL)
        return NULL;
    d->type = type;
    d->mark = DNSSHIM_ARES__MARK;
    p = &d->data;
    switch (type) {
    case DNSSHIM_ARES__MX: {
        dnsshim_ares_mx_reply *mx = p;
        mx->priority = (unsigned short)it->num[0];
        ok = (mx->host = (char *)dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__SRV: {
        dnsshim_ares_srv_reply *srv = p;
        srv->priority = (unsigned short)it->num[0];
        srv->weight = (unsigned short)it->num[1];
        srv->port = (unsigned short)it->num[2];
        ok = (srv->host = (char *)dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__TXT:
    case DNSSHIM_ARES__TXT_EXT: {
        dnsshim_ares_txt_ext *txt = p; /* ares_txt_reply is its first members */
        txt->length = it->str[0].len;
        if (type == DNSSHIM_ARES__TXT_EXT)
            txt->record_start = (unsigned char)it->num[0];
        ok = (txt->txt = dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__NAPTR: {
        dnsshim_ares_naptr_reply *naptr = p;
        naptr->order = (unsigned short)it->num[0];
        naptr->preference = (unsigned short)it->num[1];
        ok = (naptr->flags = dnsshim_ares__copy_cut(&it->str[0])) != NULL &&
             (naptr->service = dnsshim_ares__copy_cut(&it->str[1])) != NULL &&
             (naptr->regexp = dnsshim_ares__copy_cut(&it->str[2])) != NULL &&
             (naptr->replacement = (char *)dnsshim_ares__copy(&it->str[3])) != NULL;
        break;
    }
    case DNSSHIM_ARES__SOA: {
        dnsshim_ares_soa_reply *soa = p;
        soa->serial = (unsigned int)it->num[0];
        soa->refresh = (unsigned int)it->num[1];
        soa->retry = (unsigned int)it->num[2];
        soa->expire = (unsigned int)it->num[3];
        soa->minttl = (unsigned int)it->num[4];
        ok = (soa->nsname = (char *)dnsshim_ares__copy(&it->str[0])) != NULL &&
             (soa->hostmaster = (char *)dnsshim_ares__copy(&it->str[1])) != NULL;
        break;
    }
    case DNSSHIM_ARES__CAA: {
        dnsshim_ares_caa_reply *caa = p;
        caa->critical = (int)it->num[0];
        caa->plength = it->str[0].len;
        caa->length = it->str[1].len;
        ok = (caa->property = dnsshim_ares__copy(&it->str[0])) != NULL &&
             (caa->value = dnsshim_ares__copy(&it->str[1])) != NULL;
        break;
    }
    case DNSSHIM_ARES__URI: {
        dnsshim_ares_uri_reply *uri = p;
        uri->priority = (unsigned short)it->num[0];
        uri->weight = (unsigned short)it->num[1];
        uri->ttl = (int)it->num[2];
        ok = (uri->uri = (char *)dnsshim_ares__copy_cut(&it->str[0])) != NULL;
        break;
    }
    }
    if (!ok) {
        ares_free_data(p);
        return NULL;
    }
    return d;
}
