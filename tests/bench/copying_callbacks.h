/*
** copying_callbacks.h: callbacks that copy every field, as a real program
** would: what dnsshim_bench and dnsshim_callgrind register (one set for the
** timings and the instruction counts).
*/
#ifndef DNSSHIM_COPYING_CALLBACKS_H
#define DNSSHIM_COPYING_CALLBACKS_H

#include "dns_shim.h"

#include <stdlib.h>
#include <string.h>

struct copy {
    char owner[1100], target[1100], extra[1100];
    uint8_t data[65536];
    uint32_t ttl, numbers[8];
    size_t records;
};

static __thread struct copy sink;

static void copy_name(char *dst, const char *src)
{
    size_t n = strlen(src);
    if (n >= 1100)
        n = 1099;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void copy_bytes(const dns_shim_bytes *b)
{
    memcpy(sink.data, b->data, b->len);
}

static void copy_rr(const dns_shim_rr *rr)
{
    copy_name(sink.owner, rr->owner);
    sink.ttl = rr->ttl;
    sink.numbers[0] = rr->type;
    sink.numbers[1] = rr->rclass;
    sink.numbers[2] = rr->section;
    sink.numbers[3] = rr->index;
    sink.records++;
}

static int32_t c_header(void *c, const dns_shim_header *h)
{
    (void)c;
    sink.numbers[0] = h->id;
    sink.numbers[1] = h->rcode;
    if (h->qname)
        copy_name(sink.owner, h->qname);
    return 0;
}
static int32_t c_a(void *c, const dns_shim_a *r) { (void)c; copy_rr(&r->rr); memcpy(sink.data, r->address, 4); return 0; }
static int32_t c_aaaa(void *c, const dns_shim_aaaa *r) { (void)c; copy_rr(&r->rr); memcpy(sink.data, r->address, 16); return 0; }
static int32_t c_target(void *c, const dns_shim_target *r) { (void)c; copy_rr(&r->rr); copy_name(sink.target, r->target); return 0; }
static int32_t c_mx(void *c, const dns_shim_mx *r) { (void)c; copy_rr(&r->rr); sink.numbers[4] = r->preference; copy_name(sink.target, r->exchange); return 0; }
static int32_t c_txt(void *c, const dns_shim_txt *r)
{
    size_t i;
    (void)c;
    copy_rr(&r->rr);
    for (i = 0; i < r->count; i++)
        copy_bytes(&r->strings[i]);
    return 0;
}
static int32_t c_srv(void *c, const dns_shim_srv *r)
{
    (void)c;
    copy_rr(&r->rr);
    sink.numbers[4] = r->priority;
    sink.numbers[5] = r->weight;
    sink.numbers[6] = r->port;
    copy_name(sink.target, r->target);
    return 0;
}
static int32_t c_naptr(void *c, const dns_shim_naptr *r)
{
    (void)c;
    copy_rr(&r->rr);
    sink.numbers[4] = r->order;
    sink.numbers[5] = r->preference;
    copy_bytes(&r->flags);
    copy_bytes(&r->services);
    copy_bytes(&r->regexp);
    copy_name(sink.target, r->replacement);
    return 0;
}
static int32_t c_soa(void *c, const dns_shim_soa *r)
{
    (void)c;
    copy_rr(&r->rr);
    copy_name(sink.target, r->mname);
    copy_name(sink.extra, r->rname);
    sink.numbers[4] = r->serial;
    sink.numbers[5] = r->minimum;
    return 0;
}
static int32_t c_other(void *c, const dns_shim_raw *r) { (void)c; copy_rr(&r->rr); copy_bytes(&r->rdata); return 0; }

static void register_copying_callbacks(void)
{
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY | DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_header = c_header;
    cb.on_a = c_a;
    cb.on_aaaa = c_aaaa;
    cb.on_cname = cb.on_ns = cb.on_ptr = cb.on_dname = c_target;
    cb.on_mx = c_mx;
    cb.on_txt = c_txt;
    cb.on_srv = c_srv;
    cb.on_naptr = c_naptr;
    cb.on_soa = c_soa;
    cb.on_other = c_other;
    if (dns_shim_register_callbacks(&cb) != DNS_SHIM_OK)
        abort();
}

#endif
