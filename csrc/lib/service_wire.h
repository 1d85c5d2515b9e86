/*
** service_wire.h: the wire format between libdnsshim and dnsshimd, the
** parse service (csrc/service/dnsshimd.c), and its two ends' shared code.
**
** A client connects to the service's Unix stream socket and sends requests;
** the service answers each with one response, in order, on the same
** connection.  Every integer is unsigned and big-endian unless said; every
** frame starts with its length, so that a reader knows how much to take
** before it looks inside.
**
** Request:
**   u32 length      of what follows, at most DNS_SHIM__WIRE_REQUEST_MAX
**   u32 magic       DNS_SHIM__WIRE_REQUEST_MAGIC ("DSQ1")
**   u16 version     DNS_SHIM__WIRE_VERSION; a service answers another with
**                   a service fault
**   u16 op          DNS_SHIM__WIRE_OP_PARSE, DNS_SHIM__WIRE_OP_ARES (a call
**                   of libdnsshim_ares's: its own body and answer, which
**                   csrc/ares/service.c gives) or DNS_SHIM__WIRE_OP_PING (then
**                   nothing follows)
**   u16 flags       DNS_SHIM__WIRE_QUERY (a query follows), _CALLBACKS (the
**                   call has a callback set; without it the message is
**                   parsed and checked only), _MATCH_CASE, _COOKIE
**   u32 sections    the set's DNS_SHIM_SECTION_* bits
**   u16 ncodes      then ncodes u16: the set's callbacks that are not NULL,
**                   each by its code (below)
**   with _QUERY:    u16 id, u16 qtype, u16 qclass, name qname, and with
**                   _COOKIE 8 octets, the client cookie
**   u32 msglen      then the message's msglen octets, at most 65,535
**
** Response:
**   u32 length      of what follows, at most DNS_SHIM__WIRE_RESPONSE_MAX
**   u32 magic       DNS_SHIM__WIRE_RESPONSE_MAGIC ("DSR1")
**   u16 version
**   u16 kind        DNS_SHIM__WIRE_VERDICT: the library's status for the
**                   message; DNS_SHIM__WIRE_FAULT: the service could not
**                   parse it (its runtime did not start, its memory limit or
**                   budget refused it, the request was not one it reads),
**                   which says nothing of the message: the client parses it
**                   itself
**   i32 status      (two's complement) 0 or a DNS_SHIM_ERR_* value
**   u16 detlen      then dns_shim_last_error()'s text, at most 2,047 octets,
**                   no NUL
**   u32 nsteps      then nsteps steps, each the callback to call (its code)
**                   and its struct: the calls the library makes, in order;
**                   none unless status is 0
**
** A callback's code: the record type of a typed callback (1 on_a, 28
** on_aaaa, ...: shim/kinds.py's table), DNS_SHIM__WIRE_HEADER,
** DNS_SHIM__WIRE_OTHER or DNS_SHIM__WIRE_EDNS_OPTION.
**
** A step's struct, after its u16 code, member by member in the header's
** order:
**   a record's dns_shim_rr: name owner, u16 type, u16 rclass, u32 ttl,
**     u32 section, u32 index; then its kind's fields by style: ipv4 (4
**     octets), ipv6 (16), u16, u32, name, bytes, strings (u32 count, 1 to
**     65,535, then count bytes); on_other: bytes rdata
**   on_header: u16 id, flags, opcode, rcode, qdcount, ancount, nscount,
**     arcount; u8 has_qname, then a name when it is 1; u16 qtype, qclass;
**     i32 edns_version; u16 edns_payload, edns_do, edns_flags
**   on_edns_option: u16 code; bytes data; i32 ede_info_code; bytes ede_text,
**     cookie_client, cookie_server; u16 ecs_family; u8 ecs_source_prefix,
**     ecs_scope_prefix; bytes ecs_address
** A name is u16 length (at most DNS_SHIM__WIRE_NAME_MAX) and its text, with
** no NUL; bytes are u32 length (at most 65,535) and the octets.
**
** The client reads a response as untrusted input: every length, count and
** code is checked against what is left and against what the call asked for
** before any callback runs (csrc/lib/service.c).
*/
#ifndef DNS_SHIM_SERVICE_WIRE_H
#define DNS_SHIM_SERVICE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DNS_SHIM__WIRE_REQUEST_MAGIC 0x44535131u  /* "DSQ1" */
#define DNS_SHIM__WIRE_RESPONSE_MAGIC 0x44535231u /* "DSR1" */
#define DNS_SHIM__WIRE_VERSION 1

#define DNS_SHIM__WIRE_OP_PARSE 1
#define DNS_SHIM__WIRE_OP_PING 2
#define DNS_SHIM__WIRE_OP_ARES 3

#define DNS_SHIM__WIRE_QUERY 0x1
#define DNS_SHIM__WIRE_CALLBACKS 0x2
#define DNS_SHIM__WIRE_MATCH_CASE 0x4
#define DNS_SHIM__WIRE_COOKIE 0x8
#define DNS_SHIM__WIRE_FLAGS 0xF

#define DNS_SHIM__WIRE_VERDICT 0
#define DNS_SHIM__WIRE_FAULT 1

#define DNS_SHIM__WIRE_HEADER 0xFFF0
#define DNS_SHIM__WIRE_OTHER 0xFFF1
#define DNS_SHIM__WIRE_EDNS_OPTION 0xFFF2

/* The longest name text (dispatch.c's DNS_SHIM__NAME_TEXT_MAX), a detail,
** a request (a message, a qname, 64 codes and the fixed fields) and a
** response (every step of the largest message, each with names at their
** longest, is less than 8 MiB). */
#define DNS_SHIM__WIRE_NAME_MAX 1024
#define DNS_SHIM__WIRE_DETAIL_MAX 2047
#define DNS_SHIM__WIRE_CODES_MAX 64
#define DNS_SHIM__WIRE_REQUEST_MAX (65535u + DNS_SHIM__WIRE_NAME_MAX + 2u * DNS_SHIM__WIRE_CODES_MAX + 64u)
#define DNS_SHIM__WIRE_RESPONSE_MAX (16u * 1024u * 1024u)
#define DNS_SHIM__WIRE_STEPS_MAX 65536u

/* The default socket, and the time a call waits on the service at most,
** from its connect to the last octet of the answer. */
#define DNS_SHIM__SERVICE_SOCKET "/run/dnsshim/parse.sock"
#define DNS_SHIM__SERVICE_TIMEOUT_MS 2000

/* Whether a status is a verdict on the message and the query (the statuses
** a parse gives for them), which the service passes on; any other status
** of its parse is a fault of the service's (include dns_shim.h first). */
static inline int dns_shim__wire_verdict(int32_t status)
{
    return status == DNS_SHIM_OK ||
           (status <= DNS_SHIM_ERR_SHORT_HEADER && status >= DNS_SHIM_ERR_FORMAT) ||
           status == DNS_SHIM_ERR_BAD_ARGUMENT || status == DNS_SHIM_ERR_MISMATCH;
}

/* A reader over untrusted octets: each get fails (returns 0) once anything
** would pass the end, and stays failed. */
typedef struct dns_shim__rd {
    const uint8_t *p;
    size_t left;
    int bad;
} dns_shim__rd;

static inline int dns_shim__rd_take(dns_shim__rd *r, size_t n, const uint8_t **out)
{
    if (r->bad || n > r->left) {
        r->bad = 1;
        return 0;
    }
    *out = r->p;
    r->p += n;
    r->left -= n;
    return 1;
}

static inline uint32_t dns_shim__rd_u(dns_shim__rd *r, size_t n)
{
    const uint8_t *p;
    uint32_t v = 0;
    size_t i;
    if (!dns_shim__rd_take(r, n, &p))
        return 0;
    for (i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

#define dns_shim__rd_u8(r) ((uint8_t)dns_shim__rd_u((r), 1))
#define dns_shim__rd_u16(r) ((uint16_t)dns_shim__rd_u((r), 2))
#define dns_shim__rd_u32(r) (dns_shim__rd_u((r), 4))

/* A writer into a growing buffer; realloc_fn may fail: the writer then
** stays failed (bad) and writes nothing more. */
typedef struct dns_shim__wr {
    uint8_t *buf;
    size_t len, cap, max;
    int bad;
    void *(*realloc_fn)(void *ctx, void *p, size_t n);
    void *ctx;
} dns_shim__wr;

static inline uint8_t *dns_shim__wr_room(dns_shim__wr *w, size_t n)
{
    if (w->bad || n > w->max - w->len) {
        w->bad = 1;
        return NULL;
    }
    if (w->cap - w->len < n) {
        size_t cap = w->cap ? w->cap : 256;
        uint8_t *grown;
        while (cap - w->len < n)
            cap = cap > w->max / 2 ? w->max : cap * 2;
        grown = w->realloc_fn(w->ctx, w->buf, cap);
        if (grown == NULL) {
            w->bad = 1;
            return NULL;
        }
        w->buf = grown;
        w->cap = cap;
    }
    w->len += n;
    return w->buf + w->len - n;
}

static inline void dns_shim__wr_u(dns_shim__wr *w, uint32_t v, size_t n)
{
    uint8_t *p = dns_shim__wr_room(w, n);
    size_t i;
    if (p != NULL)
        for (i = 0; i < n; i++)
            p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static inline void dns_shim__wr_data(dns_shim__wr *w, const void *data, size_t n)
{
    uint8_t *p = dns_shim__wr_room(w, n);
    if (p != NULL && n > 0)
        memcpy(p, data, n);
}

#define dns_shim__wr_u8(w, v) dns_shim__wr_u((w), (uint32_t)(v), 1)
#define dns_shim__wr_u16(w, v) dns_shim__wr_u((w), (uint32_t)(v), 2)
#define dns_shim__wr_u32(w, v) dns_shim__wr_u((w), (uint32_t)(v), 4)

/* Back-patches the frame's length (its first 4 octets) once it is whole. */
static inline void dns_shim__wr_frame_done(dns_shim__wr *w)
{
    uint32_t n = (uint32_t)(w->len - 4);
    if (w->bad || w->len < 4)
        return;
    w->buf[0] = (uint8_t)(n >> 24);
    w->buf[1] = (uint8_t)(n >> 16);
    w->buf[2] = (uint8_t)(n >> 8);
    w->buf[3] = (uint8_t)n;
}

#endif
