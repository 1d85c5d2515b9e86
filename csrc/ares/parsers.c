/*
** parsers.c: c-ares's classic reply parsers, ares_expand_name and
** ares_expand_string, as libdnsshim_ares exports them.
**
** Each checks its arguments as c-ares does, hands the message to the
** Python side (dnsshim_ares__get, service.c: in dnsshimd where one answers,
** else in the bridge, in this process: dnspython reads every
** byte), and copies what it computed into c-ares's structures
** (structures.c) without holding the interpreter's lock; or, when the
** caller reaches c-ares 1.28 or later (loaded after this library, or
** RTLD_LOCAL as a Python extension's c-ares is), passes the call to that
** c-ares's own parser, which runs this library's ares_dns_parse
** (DNSSHIM_ARES__MODERN).
*/
#include "ares/dnsshim_ares_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DNSSHIM_ARES__HFIXEDSZ 12

/* When the caller reaches c-ares 1.28 or later, and that c-ares calls
** this library's ares_dns_parse itself (dnsrec.c): that c-ares's own
** parser, which is a wrapper over ares_dns_parse there, so that dnspython
** reads the message and the results are exactly that c-ares's, freed by
** its free functions.  The caller is the exported function's own return
** address: the macro is expanded in that function's body, first. */
#define DNSSHIM_ARES__MODERN(fn, ...)                                          \
    do {                                                                       \
        __typeof__(fn) *modern_ = NULL;                                        \
        *(void **)&modern_ = dnsshim_ares__modern(DNSSHIM_ARES__FN(fn),        \
                                                  __builtin_return_address(0)); \
        if (modern_ != NULL)                                                   \
            return modern_(__VA_ARGS__);                                       \
    } while (0)

static int dnsshim_ares__addresses(int32_t kind, const unsigned char *abuf, int alen,
                                   dnsshim_ares_hostent **host, void *addrttls, int *naddrttls)
{
    dnsshim_ares_result r;
    uint64_t token = 0;
    int req = 0, status;
    int family = kind == DNSSHIM_ARES_KIND_A ? DNSSHIM_ARES_AF_INET : DNSSHIM_ARES_AF_INET6;
    int length = kind == DNSSHIM_ARES_KIND_A ? 4 : 16;

    if (naddrttls != NULL) {
        req = *naddrttls;
        *naddrttls = 0;
    }
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__get(kind, abuf, alen, 0, host ? DNSSHIM_ARES_WANT_HOST : 0, &r,
                                   &token);
    if (status != DNSSHIM_ARES_SUCCESS && status != DNSSHIM_ARES_ENODATA)
        goto done;
    if (host != NULL) {
        *host = NULL;
        if (r.have_host &&
            dnsshim_ares__hostent(&r, family, length, r.addrs, r.naddrs, host) != 0) {
            status = DNSSHIM_ARES_ENOMEM;
            goto done;
        }
    }
    if (addrttls != NULL && req > 0) {
        size_t i, n = r.naddrs < (size_t)req ? r.naddrs : (size_t)req;
        for (i = 0; i < n; i++) {
            if (kind == DNSSHIM_ARES_KIND_A) {
                dnsshim_ares_addrttl *t = (dnsshim_ares_addrttl *)addrttls + i;
                memcpy(t->ipaddr, r.addrs + 4 * i, 4);
                t->ttl = r.ttls[i];
            } else {
                dnsshim_ares_addr6ttl *t = (dnsshim_ares_addr6ttl *)addrttls + i;
                memcpy(t->ip6addr, r.addrs + 16 * i, 16);
                t->ttl = r.ttls[i];
            }
        }
        *naddrttls = (int)n;
    }
done:
    dnsshim_ares__got(token);
    return status;
}

DNSSHIM_ARES_API int ares_parse_a_reply(const unsigned char *abuf, int alen,
                                        dnsshim_ares_hostent **host,
                                        dnsshim_ares_addrttl *addrttls, int *naddrttls)
{
    DNSSHIM_ARES__MODERN(ares_parse_a_reply, abuf, alen, host, addrttls, naddrttls);
    return dnsshim_ares__addresses(DNSSHIM_ARES_KIND_A, abuf, alen, host, addrttls, naddrttls);
}

DNSSHIM_ARES_API int ares_parse_aaaa_reply(const unsigned char *abuf, int alen,
                                           dnsshim_ares_hostent **host,
                                           dnsshim_ares_addr6ttl *addrttls, int *naddrttls)
{
    DNSSHIM_ARES__MODERN(ares_parse_aaaa_reply, abuf, alen, host, addrttls, naddrttls);
    return dnsshim_ares__addresses(DNSSHIM_ARES_KIND_AAAA, abuf, alen, host, addrttls,
                                   naddrttls);
}

DNSSHIM_ARES_API int ares_parse_ns_reply(const unsigned char *abuf, int alen,
                                         dnsshim_ares_hostent **host)
{
    DNSSHIM_ARES__MODERN(ares_parse_ns_reply, abuf, alen, host);
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (host == NULL)
        return DNSSHIM_ARES_EBADQUERY; /* c-ares would crash */
    *host = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__get(DNSSHIM_ARES_KIND_NS, abuf, alen, 0, DNSSHIM_ARES_WANT_HOST,
                                   &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS)
        status = dnsshim_ares__hostent(&r, DNSSHIM_ARES_AF_INET, 4, NULL, 0, host);
    dnsshim_ares__got(token);
    return status;
}

DNSSHIM_ARES_API int ares_parse_ptr_reply(const unsigned char *abuf, int alen, const void *addr,
                                          int addrlen, int family, dnsshim_ares_hostent **host)
{
    DNSSHIM_ARES__MODERN(ares_parse_ptr_reply, abuf, alen, addr, addrlen, family, host);
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (host == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    *host = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__get(DNSSHIM_ARES_KIND_PTR, abuf, alen, 0,
                                   DNSSHIM_ARES_WANT_HOST, &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS)
        status = dnsshim_ares__hostent(&r, family, addrlen, addr,
                                       addr != NULL && addrlen > 0 ? 1 : 0, host);
    dnsshim_ares__got(token);
    return status;
}

/* The `next` member is the first of every list element type. */
typedef struct dnsshim_ares__link {
    struct dnsshim_ares__link *next;
} dnsshim_ares__link;

/* A list parser: *out gets the list (NULL when empty) on success. */
static int dnsshim_ares__list(int32_t kind, unsigned int type, const unsigned char *abuf,
                              int alen, void **out)
{
    dnsshim_ares_result r;
    uint64_t token;
    dnsshim_ares__link *head = NULL, *last = NULL;
    size_t i;
    int status;
    if (out == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    *out = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__get(kind, abuf, alen, 0, 0, &r, &token);
    for (i = 0; status == DNSSHIM_ARES_SUCCESS && i < r.nitems; i++) {
        dnsshim_ares__data *d = dnsshim_ares__element(type, &r.items[i]);
        dnsshim_ares__link *e = d != NULL ? (dnsshim_ares__link *)(void *)&d->data : NULL;
        if (e == NULL) {
            status = DNSSHIM_ARES_ENOMEM;
            ares_free_data(head);
            head = NULL;
            break;
        }
        if (last != NULL)
            last->next = e;
        else
            head = e;
        last = e;
    }
    dnsshim_ares__got(token);
    if (status == DNSSHIM_ARES_SUCCESS)
        *out = head;
    return status;
}

DNSSHIM_ARES_API int ares_parse_mx_reply(const unsigned char *abuf, int alen,
                                         dnsshim_ares_mx_reply **mx_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_mx_reply, abuf, alen, mx_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_MX, DNSSHIM_ARES__MX, abuf, alen,
                              (void **)mx_out);
}

DNSSHIM_ARES_API int ares_parse_srv_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_srv_reply **srv_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_srv_reply, abuf, alen, srv_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_SRV, DNSSHIM_ARES__SRV, abuf, alen,
                              (void **)srv_out);
}

DNSSHIM_ARES_API int ares_parse_txt_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_txt_reply **txt_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_txt_reply, abuf, alen, txt_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_TXT, DNSSHIM_ARES__TXT, abuf, alen,
                              (void **)txt_out);
}

DNSSHIM_ARES_API int ares_parse_txt_reply_ext(const unsigned char *abuf, int alen,
                                              dnsshim_ares_txt_ext **txt_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_txt_reply_ext, abuf, alen, txt_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_TXT_EXT, DNSSHIM_ARES__TXT_EXT, abuf, alen,
                              (void **)txt_out);
}

DNSSHIM_ARES_API int ares_parse_naptr_reply(const unsigned char *abuf, int alen,
                                            dnsshim_ares_naptr_reply **naptr_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_naptr_reply, abuf, alen, naptr_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_NAPTR, DNSSHIM_ARES__NAPTR, abuf, alen,
                              (void **)naptr_out);
}

DNSSHIM_ARES_API int ares_parse_caa_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_caa_reply **caa_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_caa_reply, abuf, alen, caa_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_CAA, DNSSHIM_ARES__CAA, abuf, alen,
                              (void **)caa_out);
}

DNSSHIM_ARES_API int ares_parse_uri_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_uri_reply **uri_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_uri_reply, abuf, alen, uri_out);
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_URI, DNSSHIM_ARES__URI, abuf, alen,
                              (void **)uri_out);
}

DNSSHIM_ARES_API int ares_parse_soa_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_soa_reply **soa_out)
{
    DNSSHIM_ARES__MODERN(ares_parse_soa_reply, abuf, alen, soa_out);
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    /* c-ares leaves *soa_out alone when it fails. */
    if (soa_out == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__get(DNSSHIM_ARES_KIND_SOA, abuf, alen, 0, 0, &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS) {
        dnsshim_ares__data *d = r.nitems == 1
            ? dnsshim_ares__element(DNSSHIM_ARES__SOA, &r.items[0]) : NULL;
        if (d == NULL)
            status = DNSSHIM_ARES_ENOMEM;
        else
            *soa_out = &d->data.soa;
    }
    dnsshim_ares__got(token);
    return status;
}

/* ares_expand_name and ares_expand_string: *s a string of ours (freed by
** ares_free_string), *enclen the octets the encoding takes. */
static int dnsshim_ares__expand(int32_t kind, int error, int cut, const unsigned char *encoded,
                                const unsigned char *abuf, int alen, unsigned char **s,
                                long *enclen, const void *caller)
{
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (s == NULL || enclen == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    if (abuf == NULL || encoded == NULL || alen <= 0 || encoded < abuf ||
        encoded >= abuf + alen)
        return error;
    status = dnsshim_ares__get(kind, abuf, alen, (int)(encoded - abuf), 0, &r, &token);
    if (status == DNSSHIM_ARES_ENOTINITIALIZED) {
        /* The runtime cannot start (libdnsshim logged why).  c-ares's own
        ** resolver checks the question of every answer with these two: the
        ** real c-ares's answer (the caller's c-ares), where the program links
        ** it, keeps the resolver matching answers, so that the program hears
        ** ARES_ENOTINITIALIZED from the parsers at once instead of
        ** ARES_ETIMEOUT after its full timeout.  A program without c-ares
        ** gets the code. */
        int (*next)(const unsigned char *, const unsigned char *, int, unsigned char **, long *);
        *(void **)&next = dnsshim_ares__theirs(kind == DNSSHIM_ARES_KIND_EXPAND_NAME
                                                   ? DNSSHIM_ARES__FN(ares_expand_name)
                                                   : DNSSHIM_ARES__FN(ares_expand_string),
                                               caller);
        if (next != NULL)
            return next(encoded, abuf, alen, s, enclen);
    }
    if (status == DNSSHIM_ARES_SUCCESS) {
        unsigned char *copy = r.nitems == 1
            ? (cut ? dnsshim_ares__copy_cut : dnsshim_ares__copy)(&r.items[0].str[0]) : NULL;
        if (copy == NULL || dnsshim_ares__own(copy) != 0) {
            dnsshim_ares__free(copy);
            status = DNSSHIM_ARES_ENOMEM;
        } else {
            *s = copy;
            *enclen = (long)r.items[0].num[0];
        }
    }
    dnsshim_ares__got(token);
    return status;
}

DNSSHIM_ARES_API int ares_expand_name(const unsigned char *encoded, const unsigned char *abuf,
                                      int alen, char **s, long *enclen)
{
    return dnsshim_ares__expand(DNSSHIM_ARES_KIND_EXPAND_NAME, DNSSHIM_ARES_EBADNAME, 0, encoded,
                                abuf, alen, (unsigned char **)s, enclen,
                                __builtin_return_address(0));
}

DNSSHIM_ARES_API int ares_expand_string(const unsigned char *encoded,
                                        const unsigned char *abuf, int alen,
                                        unsigned char **s, long *enclen)
{
    return dnsshim_ares__expand(DNSSHIM_ARES_KIND_EXPAND_STRING, DNSSHIM_ARES_EBADSTR, 1, encoded,
                                abuf, alen, s, enclen, __builtin_return_address(0));
}
