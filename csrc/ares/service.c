/*
** service.c: libdnsshim_ares's calls through dnsshimd, the parse service,
** and the service's side of them.
**
** The parsers (parsers.c) and ares_dns_parse (dnsrec.c) ask here for what
** the Python side computes: dnsshim_ares__get and dnsshim_ares__plan.  Each
** sends the message to the service first, through libdnsshim's client of
** it (dns_shim__service_exchange: the same socket, the same trust checks,
** the same time bound, the same fallback and its one log line, the same
** DNS_SHIM_SERVICE and DNS_SHIM_SERVICE_FALLBACK), as a request of its own
** op (DNS_SHIM__WIRE_OP_ARES, below).  The service computes the result
** with this library, in its own process (dnsshim_ares__serve), and sends
** it back whole.  Where no service answers, the result is computed in this
** process (the bridge, dnsshim_ares.c), as it always was.
**
** The answer is untrusted input.  It is read whole (dnsshim_ares__read:
** every presence flag, length and count checked against what is left, no
** count allowed more entries than the octets left could hold, every string
** given its NUL) into blocks of this library's own, then checked as a
** result of the Python side is (dnsshim_ares__check_result; a plan is
** checked by dnsrec.c as every plan is), before a byte of it is copied
** into c-ares's structures.  An answer that fails any check is not used:
** the call computes in the process, and the fallback is logged once (a
** plan that fails dnsrec.c's check is logged by it, each time).
**
** The op's request (after the head every request has: u32 length, u32
** magic, u16 version, u16 op):
**   u16 kind      DNSSHIM_ARES_KIND_* (a classic parser, ares_expand_name,
**                 ares_expand_string) or DNSSHIM_ARES__WIRE_MESSAGE
**                 (ares_dns_parse)
**   u32 flags     DNSSHIM_ARES_WANT_HOST, or ares_dns_parse's flags
**   u32 offset    the EXPAND kinds' offset, else 0
**   u32 msglen    then the message's msglen octets, at most 65,535
** Its answer: the head every answer has (u32 length, u32 magic, u16
** version, u16 kind: a verdict, or a fault, which says nothing of the
** message; i32 status, c-ares's code; u16 detlen 0; u32 nsteps 0), then,
** with a verdict:
**   a classic kind: u8 have_host, str name, u32 naliases and as many str,
**     u32 naddrs, u32 addrlen, naddrs * addrlen octets, naddrs i32 TTLs,
**     u32 nitems and as many items: 5 i64 numbers (two u32 each, high
**     first), 4 str
**   ares_dns_parse, when status is ARES_SUCCESS: u32 status (the plan's),
**     id, flags, opcode, rcode, str qname, u32 qtype, qclass, u32 nrrs and
**     as many records: u32 section, type, rclass, ttl, str name, u32
**     nfields and as many fields: u32 key, datatype, number, str bytes
** A str is u8 present (0 or 1), then with 1 a u32 length, at most 65,535,
** and its octets (no NUL on the wire).
*/
#define _GNU_SOURCE 1
#include "ares/dnsshim_ares_internal.h"
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"
#include "lib/service_wire.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Blocks                                                               */

/* What a read answer holds: blocks of plain malloc, chained, freed
** together once the caller has copied what it needs. */
struct dnsshim_ares__block {
    struct dnsshim_ares__block *next;
    max_align_t align[];
};

typedef struct dnsshim_ares__reader {
    dns_shim__rd rd;
    dnsshim_ares__block *blocks;
    const char *fault;
} dnsshim_ares__reader;

static void *dnsshim_ares__take(dnsshim_ares__reader *r, size_t n)
{
    dnsshim_ares__block *b;
    if (n > (size_t)16 * 1024 * 1024 || (b = malloc(sizeof *b + (n ? n : 1))) == NULL) {
        r->fault = ": no memory to read it";
        r->rd.bad = 1;
        return NULL;
    }
    b->next = r->blocks;
    r->blocks = b;
    return b->align;
}

void dnsshim_ares__blocks_free(dnsshim_ares__block *b)
{
    while (b != NULL) {
        dnsshim_ares__block *next = b->next;
        free(b);
        b = next;
    }
}

/* A count of entries of at least `least` octets each on the wire: no more
** than what is left could hold. */
static size_t dnsshim_ares__count(dnsshim_ares__reader *r, size_t least, size_t max)
{
    uint32_t n = dns_shim__rd_u32(&r->rd);
    if (n > max || n > r->rd.left / least) {
        r->rd.bad = 1;
        return 0;
    }
    return n;
}

static void dnsshim_ares__get_str(dnsshim_ares__reader *r, dnsshim_ares_bytes *b)
{
    uint8_t present = dns_shim__rd_u8(&r->rd);
    const uint8_t *p;
    uint32_t n;
    uint8_t *copy;

    b->data = NULL;
    b->len = 0;
    if (present == 0 || r->rd.bad)
        return;
    n = dns_shim__rd_u32(&r->rd);
    if (present != 1 || n > 65535 || !dns_shim__rd_take(&r->rd, n, &p)) {
        r->rd.bad = 1;
        return;
    }
    if ((copy = dnsshim_ares__take(r, (size_t)n + 1)) == NULL)
        return;
    memcpy(copy, p, n);
    copy[n] = '\0';
    b->data = copy;
    b->len = n;
}

static int64_t dnsshim_ares__get_i64(dnsshim_ares__reader *r)
{
    uint64_t high = dns_shim__rd_u32(&r->rd);
    uint64_t low = dns_shim__rd_u32(&r->rd);
    return (int64_t)(high << 32 | low);
}

static void dnsshim_ares__read_result(dnsshim_ares__reader *r, dnsshim_ares_result *out)
{
    dnsshim_ares_bytes *aliases;
    dnsshim_ares_item *items;
    int32_t *ttls;
    const uint8_t *addrs;
    size_t i, k;
    uint8_t have = dns_shim__rd_u8(&r->rd);

    if (have > 1)
        r->rd.bad = 1;
    out->have_host = have;
    dnsshim_ares__get_str(r, &out->name);
    out->naliases = dnsshim_ares__count(r, 1, 65535);
    if (out->naliases > 0 && (aliases = dnsshim_ares__take(r, out->naliases * sizeof *aliases))) {
        for (i = 0; i < out->naliases; i++)
            dnsshim_ares__get_str(r, &aliases[i]);
        out->aliases = aliases;
    }
    out->naddrs = dnsshim_ares__count(r, 4 + 4, 65535);
    out->addrlen = dns_shim__rd_u32(&r->rd);
    if (out->naddrs > 0) {
        /* check.c holds the length to the family's; here, to the octets. */
        if (out->addrlen != 4 && out->addrlen != 16)
            r->rd.bad = 1;
        else if (dns_shim__rd_take(&r->rd, out->naddrs * out->addrlen, &addrs) &&
                 (ttls = dnsshim_ares__take(r, out->naddrs * sizeof *ttls)) != NULL) {
            uint8_t *copy = dnsshim_ares__take(r, out->naddrs * out->addrlen);
            if (copy != NULL) {
                memcpy(copy, addrs, out->naddrs * out->addrlen);
                out->addrs = copy;
            }
            for (i = 0; i < out->naddrs; i++)
                ttls[i] = (int32_t)dns_shim__rd_u32(&r->rd);
            out->ttls = ttls;
        }
    }
    out->nitems = dnsshim_ares__count(r, 5 * 8 + 4, 65535);
    if (out->nitems > 0 && (items = dnsshim_ares__take(r, out->nitems * sizeof *items))) {
        for (i = 0; i < out->nitems; i++) {
            for (k = 0; k < 5; k++)
                items[i].num[k] = dnsshim_ares__get_i64(r);
            for (k = 0; k < 4; k++)
                dnsshim_ares__get_str(r, &items[i].str[k]);
        }
        out->items = items;
    }
}

static void dnsshim_ares__read_message(dnsshim_ares__reader *r, dnsshim_ares_message *m)
{
    dnsshim_ares_rr *rrs;
    size_t i, j;

    m->status = (int32_t)dns_shim__rd_u32(&r->rd);
    m->id = dns_shim__rd_u32(&r->rd);
    m->flags = dns_shim__rd_u32(&r->rd);
    m->opcode = dns_shim__rd_u32(&r->rd);
    m->rcode = dns_shim__rd_u32(&r->rd);
    dnsshim_ares__get_str(r, &m->qname);
    m->qtype = dns_shim__rd_u32(&r->rd);
    m->qclass = dns_shim__rd_u32(&r->rd);
    m->nrrs = dnsshim_ares__count(r, 4 * 4 + 1 + 4, 65535);
    if (m->nrrs == 0 || (rrs = dnsshim_ares__take(r, m->nrrs * sizeof *rrs)) == NULL)
        return;
    for (i = 0; i < m->nrrs && !r->rd.bad; i++) {
        dnsshim_ares_field *fields = NULL;
        rrs[i].section = dns_shim__rd_u32(&r->rd);
        rrs[i].type = dns_shim__rd_u32(&r->rd);
        rrs[i].rclass = dns_shim__rd_u32(&r->rd);
        rrs[i].ttl = dns_shim__rd_u32(&r->rd);
        dnsshim_ares__get_str(r, &rrs[i].name);
        rrs[i].nfields = dnsshim_ares__count(r, 3 * 4 + 1, 65535);
        if (rrs[i].nfields > 0 &&
            (fields = dnsshim_ares__take(r, rrs[i].nfields * sizeof *fields)) != NULL)
            for (j = 0; j < rrs[i].nfields; j++) {
                fields[j].key = dns_shim__rd_u32(&r->rd);
                fields[j].datatype = dns_shim__rd_u32(&r->rd);
                fields[j].number = dns_shim__rd_u32(&r->rd);
                dnsshim_ares__get_str(r, &fields[j].bytes);
            }
        rrs[i].fields = fields;
    }
    m->rrs = rrs;
}

int dnsshim_ares__read(void *ctx, int32_t status, const uint8_t *payload, size_t n, char *why,
                       size_t whylen)
{
    dnsshim_ares__call *call = ctx;
    dnsshim_ares__reader r;
    const char *wrong = NULL;

    memset(&r, 0, sizeof r);
    r.rd.p = payload;
    r.rd.left = n;
    /* c-ares's codes, and only those a parse returns; ENOTINITIALIZED and
    ** ENOMEM are the service's faults, never its verdicts. */
    switch (status) {
    case DNSSHIM_ARES_SUCCESS: case DNSSHIM_ARES_ENODATA: case DNSSHIM_ARES_EFORMERR:
    case DNSSHIM_ARES_ENOTIMP: case DNSSHIM_ARES_EBADQUERY: case DNSSHIM_ARES_EBADNAME:
    case DNSSHIM_ARES_EBADRESP: case DNSSHIM_ARES_EBADSTR:
        break;
    default:
        snprintf(why, whylen, "its answer's status %d is not one a parse gives", (int)status);
        return 0;
    }
    if (call->message != NULL && status != DNSSHIM_ARES_SUCCESS &&
        status != DNSSHIM_ARES_EBADRESP) {
        /* ares_dns_parse's plan in the process is made or refused */
        snprintf(why, whylen, "its answer's status %d is not one ares_dns_parse gives",
                 (int)status);
        return 0;
    }
    if (call->message != NULL) {
        memset(call->message, 0, sizeof *call->message);
        if (status == DNSSHIM_ARES_SUCCESS)
            dnsshim_ares__read_message(&r, call->message);
    } else {
        memset(call->result, 0, sizeof *call->result);
        dnsshim_ares__read_result(&r, call->result);
        call->result->status = status;
    }
    if (!r.rd.bad && r.rd.left != 0)
        r.rd.bad = 1;
    if (!r.rd.bad && call->result != NULL)
        wrong = dnsshim_ares__check_result(call->kind, call->result, call->len, call->offset);
    if (r.rd.bad || wrong != NULL) {
        snprintf(why, whylen, "its answer %s%s", r.fault ? r.fault : wrong ? "has " : "is malformed",
                 r.fault ? "" : wrong ? wrong : "");
        dnsshim_ares__blocks_free(r.blocks);
        /* nothing left pointing into the freed blocks */
        if (call->message != NULL)
            memset(call->message, 0, sizeof *call->message);
        else
            memset(call->result, 0, sizeof *call->result);
        return 0;
    }
    call->status = status;
    call->blocks = r.blocks;
    return 1;
}

/* ------------------------------------------------------------------ */
/* The calls                                                            */

/* Whether the result this thread holds, from a get or plan to its done,
** is the service's (then its blocks, NULL when it needed none), or the
** bridge's (whose done a token of the service's must never reach: cffi
** would start an interpreter of its own to run it). */
static __thread int dnsshim_ares__serving = 0;
static __thread dnsshim_ares__block *dnsshim_ares__served = NULL;

static void dnsshim_ares__hold(dnsshim_ares__block *blocks, uint64_t *token)
{
    dnsshim_ares__serving = 1;
    dnsshim_ares__served = blocks;
    *token = 0;
}

/* 1 when the result held was the service's (its blocks now freed). */
static int dnsshim_ares__release(void)
{
    if (!dnsshim_ares__serving)
        return 0;
    dnsshim_ares__serving = 0;
    dnsshim_ares__blocks_free(dnsshim_ares__served);
    dnsshim_ares__served = NULL;
    return 1;
}

/* 1: the service answered (call->status, the blocks held); 0: compute in
** the process; -1: the service is required and cannot parse (logged by
** libdnsshim). */
static int dnsshim_ares__ask(dnsshim_ares__call *call, const unsigned char *buf, int len,
                             uint32_t flags)
{
    uint8_t head[14];
    uint8_t *body;
    uint16_t kind = call->message != NULL ? DNSSHIM_ARES__WIRE_MESSAGE : (uint16_t)call->kind;
    int rc, oldstate;

    /* The largest message: a longer buffer is for the process to judge. */
    if (buf == NULL || len < 0 || len > 65535)
        return 0;
    head[0] = (uint8_t)(kind >> 8);
    head[1] = (uint8_t)kind;
    head[2] = (uint8_t)(flags >> 24), head[3] = (uint8_t)(flags >> 16);
    head[4] = (uint8_t)(flags >> 8), head[5] = (uint8_t)flags;
    head[6] = (uint8_t)((uint32_t)call->offset >> 24), head[7] = (uint8_t)(call->offset >> 16);
    head[8] = (uint8_t)(call->offset >> 8), head[9] = (uint8_t)call->offset;
    head[10] = 0, head[11] = 0, head[12] = (uint8_t)(len >> 8), head[13] = (uint8_t)len;
    if ((body = malloc(sizeof head + (size_t)len + 1)) == NULL)
        return 0;
    memcpy(body, head, sizeof head);
    memcpy(body + sizeof head, buf, (size_t)len);
    /* No cancellation while the body is held (the fallback's log line may
    ** be written to a pipe): a cancelled thread leaves nothing behind. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
    rc = dns_shim__service_exchange(DNS_SHIM__WIRE_OP_ARES, body, sizeof head + (size_t)len,
                                    dnsshim_ares__read, call);
    free(body);
    pthread_setcancelstate(oldstate, NULL);
    return rc;
}

int dnsshim_ares__get(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                      dnsshim_ares_result *r, uint64_t *token)
{
    dnsshim_ares__call call;

    memset(&call, 0, sizeof call);
    call.kind = kind;
    call.len = len;
    call.offset = offset;
    call.result = r;
    switch (dnsshim_ares__ask(&call, buf, len, (uint32_t)flags)) {
    case 1:
        dnsshim_ares__hold(call.blocks, token);
        return r->status;
    case -1:
        memset(r, 0, sizeof *r);
        *token = 0;
        return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        return dnsshim_ares__compute(kind, buf, len, offset, flags, r, token);
    }
}

void dnsshim_ares__got(uint64_t token)
{
    if (!dnsshim_ares__release())
        dnsshim_ares__done(token);
}

int dnsshim_ares__plan(const unsigned char *buf, int len, unsigned int flags,
                       dnsshim_ares_message *m, uint64_t *token)
{
    dnsshim_ares__call call;

    memset(&call, 0, sizeof call);
    call.kind = 0;
    call.len = len;
    call.message = m;
    switch (dnsshim_ares__ask(&call, buf, len, flags)) {
    case 1:
        dnsshim_ares__hold(call.blocks, token);
        return call.status;
    case -1:
        memset(m, 0, sizeof *m);
        *token = 0;
        return DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        return dnsshim_ares__message(buf, len, flags, m, token);
    }
}

int dnsshim_ares__plan_served(void)
{
    return dnsshim_ares__serving;
}

void dnsshim_ares__plan_done(uint64_t token)
{
    if (!dnsshim_ares__release())
        dnsshim_ares__message_done(token);
}

/* ------------------------------------------------------------------ */
/* The service's side                                                   */

static void *dnsshim_ares__wr_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

static void dnsshim_ares__put_str(dns_shim__wr *w, const dnsshim_ares_bytes *b)
{
    dns_shim__wr_u8(w, b->data != NULL);
    if (b->data != NULL) {
        dns_shim__wr_u32(w, (uint32_t)b->len);
        dns_shim__wr_data(w, b->data, b->len);
    }
}

static void dnsshim_ares__put_i64(dns_shim__wr *w, int64_t v)
{
    dns_shim__wr_u32(w, (uint32_t)((uint64_t)v >> 32));
    dns_shim__wr_u32(w, (uint32_t)v);
}

void dnsshim_ares__write_result(struct dns_shim__wr *w, const dnsshim_ares_result *r)
{
    size_t i, k;
    dns_shim__wr_u8(w, r->have_host != 0);
    dnsshim_ares__put_str(w, &r->name);
    dns_shim__wr_u32(w, (uint32_t)r->naliases);
    for (i = 0; i < r->naliases; i++)
        dnsshim_ares__put_str(w, &r->aliases[i]);
    dns_shim__wr_u32(w, (uint32_t)r->naddrs);
    dns_shim__wr_u32(w, (uint32_t)r->addrlen);
    if (r->naddrs > 0) {
        dns_shim__wr_data(w, r->addrs, r->naddrs * r->addrlen);
        for (i = 0; i < r->naddrs; i++)
            dns_shim__wr_u32(w, (uint32_t)r->ttls[i]);
    }
    dns_shim__wr_u32(w, (uint32_t)r->nitems);
    for (i = 0; i < r->nitems; i++) {
        for (k = 0; k < 5; k++)
            dnsshim_ares__put_i64(w, r->items[i].num[k]);
        for (k = 0; k < 4; k++)
            dnsshim_ares__put_str(w, &r->items[i].str[k]);
    }
}

void dnsshim_ares__write_message(struct dns_shim__wr *w, const dnsshim_ares_message *m)
{
    size_t i, j;
    dns_shim__wr_u32(w, (uint32_t)m->status);
    dns_shim__wr_u32(w, m->id);
    dns_shim__wr_u32(w, m->flags);
    dns_shim__wr_u32(w, m->opcode);
    dns_shim__wr_u32(w, m->rcode);
    dnsshim_ares__put_str(w, &m->qname);
    dns_shim__wr_u32(w, m->qtype);
    dns_shim__wr_u32(w, m->qclass);
    dns_shim__wr_u32(w, (uint32_t)m->nrrs);
    for (i = 0; i < m->nrrs; i++) {
        const dnsshim_ares_rr *rr = &m->rrs[i];
        dns_shim__wr_u32(w, rr->section);
        dns_shim__wr_u32(w, rr->type);
        dns_shim__wr_u32(w, rr->rclass);
        dns_shim__wr_u32(w, rr->ttl);
        dnsshim_ares__put_str(w, &rr->name);
        dns_shim__wr_u32(w, (uint32_t)rr->nfields);
        for (j = 0; j < rr->nfields; j++) {
            dns_shim__wr_u32(w, rr->fields[j].key);
            dns_shim__wr_u32(w, rr->fields[j].datatype);
            dns_shim__wr_u32(w, rr->fields[j].number);
            dnsshim_ares__put_str(w, &rr->fields[j].bytes);
        }
    }
}

DNSSHIM_ARES_API int dnsshim_ares__serve(const uint8_t *body, size_t n, uint8_t **payload,
                                         size_t *payload_len, int32_t *status)
{
    dns_shim__rd rd = {body, n, 0};
    dns_shim__wr w;
    const uint8_t *msg;
    uint64_t token = 0;
    uint16_t kind = dns_shim__rd_u16(&rd);
    uint32_t flags = dns_shim__rd_u32(&rd);
    uint32_t offset = dns_shim__rd_u32(&rd);
    uint32_t msglen = dns_shim__rd_u32(&rd);
    int rc;

    *payload = NULL;
    *payload_len = 0;
    if (msglen > 65535 || !dns_shim__rd_take(&rd, msglen, &msg) || rd.left != 0 ||
        (kind != DNSSHIM_ARES__WIRE_MESSAGE &&
         (kind < DNSSHIM_ARES_KIND_A || kind > DNSSHIM_ARES_KIND_EXPAND_STRING)) ||
        (kind == DNSSHIM_ARES__WIRE_MESSAGE ? offset != 0
         : kind < DNSSHIM_ARES_KIND_EXPAND_NAME ? offset != 0 || (flags & ~DNSSHIM_ARES_WANT_HOST)
                                                : offset >= msglen || flags != 0))
        return DNSSHIM_ARES__SERVE_MALFORMED;
    memset(&w, 0, sizeof w);
    w.realloc_fn = dnsshim_ares__wr_realloc;
    w.max = DNS_SHIM__WIRE_RESPONSE_MAX - 4096;
    if (kind == DNSSHIM_ARES__WIRE_MESSAGE) {
        dnsshim_ares_message m;
        rc = dnsshim_ares__message(msg, (int)msglen, flags, &m, &token);
        if (rc == DNSSHIM_ARES_SUCCESS)
            dnsshim_ares__write_message(&w, &m);
        dnsshim_ares__message_done(token);
    } else {
        dnsshim_ares_result r;
        rc = dnsshim_ares__compute(kind, msg, (int)msglen, (int)offset, (int)flags, &r, &token);
        dnsshim_ares__write_result(&w, &r);
        dnsshim_ares__done(token);
    }
    *status = w.bad ? DNSSHIM_ARES_ENOMEM : rc;
    if (rc == DNSSHIM_ARES_ENOTINITIALIZED || rc == DNSSHIM_ARES_ENOMEM || w.bad) {
        free(w.buf);
        return DNSSHIM_ARES__SERVE_FAULT;
    }
    *payload = w.buf;
    *payload_len = w.len;
    return DNSSHIM_ARES__SERVE_OK;
}
