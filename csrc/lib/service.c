/*
** service.c: a call parsed by dnsshimd, the parse service, instead of in
** this process: a unit of libdnsshim's C compiled on its own.
**
** dns_shim__run (dns_shim.c) asks here first.  The service is found at
** DNS_SHIM__SERVICE_SOCKET, or at the path DNS_SHIM_SERVICE names ("none":
** no service; read like every variable of the library, never in a setuid,
** setgid or setcap process).  A service is used only when it can be
** trusted: the socket's path is absolute, every directory on it (links
** resolved) belongs to root or to the calling user and cannot be written by
** anyone else (an ancestor may be a sticky directory such as /tmp), and the
** socket itself belongs to root or to the calling user.  In a setuid,
** setgid or setcap process only root counts.
**
** The call sends the message, the query and which callbacks the set has
** (csrc/lib/service_wire.h), and reads the service's answer: the status,
** the detail, and the calls to make with their structs.  The answer is
** untrusted: it is read whole and checked (every length, count, code and
** string) into structs from the host's allocator, then checked again as a
** plan (dispatch.c: the same check and the same calls as a plan made in
** this process).  The callbacks run here, in the calling thread.
**
** Where the service is absent, does not answer within
** DNS_SHIM__SERVICE_TIMEOUT_MS, dies during the call, or answers with a
** fault (its runtime, its memory limit), the call parses in this process
** as if there were no service: a parse is a pure function of its
** arguments.  The first such fallback in a process is logged, once: at
** DNS_SHIM_LOG_INFO where there is no service at all (no socket, or a
** socket no service listens on: the normal case on a machine without the
** service, or while it is stopped), else at DNS_SHIM_LOG_WARNING.  With
** DNS_SHIM_SERVICE_FALLBACK=no the call fails instead, with
** DNS_SHIM_ERR_INIT and why.
**
** No lock is taken and no thread made: a connection per call, closed
** before the call returns; cancellation is held off while the call waits
** on the service (at most the timeout), and a thread cancelled in a
** callback leaves nothing allocated.
*/
#define _GNU_SOURCE 1
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The record kinds: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"
#include "lib/service_wire.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#if (defined(DNS_SHIM_FIRMWARE) && DNS_SHIM_FIRMWARE) || (defined(DNS_SHIM_BUNDLE) && DNS_SHIM_BUNDLE)
/* The firmware object, a worker image (built as one) and the bundle parse
** in their own process: they are for devices and pools, not for a machine
** with a service. */
DNS_SHIM__PRIVATE_API void dns_shim__service_off(void)
{
}

int dns_shim__service_run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                          const dns_shim_callbacks *callbacks, int32_t *status)
{
    (void)buf, (void)len, (void)query, (void)callbacks, (void)status;
    return 0;
}

int dns_shim__service_ping(int32_t *status)
{
    (void)status;
    return 0;
}

void dns_shim__service_run_pair(const uint8_t *const buf[2], const int32_t len[2],
                                const dns_shim_query *const query[2],
                                const dns_shim_callbacks *const callbacks[2], int32_t status[2],
                                int served[2])
{
    (void)buf, (void)len, (void)query, (void)callbacks, (void)status;
    served[0] = served[1] = 0;
}

DNS_SHIM__PRIVATE_API int dns_shim__service_exchange(uint16_t op, const uint8_t *body, size_t n,
                                                     dns_shim__service_reader read, void *ctx)
{
    (void)op, (void)body, (void)n, (void)read, (void)ctx;
    return 0;
}
#else

/* What a try at the service came to. */
enum { SERVICE_LOCAL = 0, SERVICE_ANSWERED = 1 };

/* How long a thread keeps a socket's path as checked (ask). */
#define TRUST_MS 1000

/* Whether the fallback has been logged in this process. */
static int dns_shim__service_logged = 0;
/* Set by dnsshimd itself (dns_shim__service_off): it is the service. */
static int dns_shim__service_disabled = 0;

DNS_SHIM__PRIVATE_API void dns_shim__service_off(void)
{
    __atomic_store_n(&dns_shim__service_disabled, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* Where, and whether to trust it                                       */

typedef struct service_target {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int required; /* DNS_SHIM_SERVICE_FALLBACK=no */
} service_target;

/* 0 with the socket's path, or -1: no service for this call. */
static int service_where(service_target *t)
{
    const char *named, *fallback;
    if (__atomic_load_n(&dns_shim__service_disabled, __ATOMIC_RELAXED))
        return -1;
    named = dns_shim__getenv("DNS_SHIM_SERVICE");
    fallback = dns_shim__getenv("DNS_SHIM_SERVICE_FALLBACK");
    t->required = fallback != NULL && strcmp(fallback, "no") == 0;
    if (named != NULL && strcmp(named, "none") == 0)
        return -1;
    if (named == NULL || named[0] == '\0')
        named = DNS_SHIM__SERVICE_SOCKET;
    if (strlen(named) >= sizeof t->path) {
        /* Too long for a socket address: kept whole in the reason. */
        snprintf(t->path, sizeof t->path, "%.*s", (int)sizeof t->path - 1, named);
        t->path[sizeof t->path - 2] = '~';
        return 1;
    }
    memcpy(t->path, named, strlen(named) + 1);
    return 0;
}

/* Whether uid may own the service's socket and the directories above it. */
static int trusted_owner(uid_t uid, int secure)
{
    return uid == 0 || (!secure && uid == geteuid());
}

/* Checks one directory on the path: 0, or -1 with why.  The socket's own
** directory may not be written by others even when it is sticky. */
static int trusted_dir(const char *dir, int secure, int last, char *why, size_t whylen)
{
    struct stat st;
    mode_t others = S_IWGRP | S_IWOTH;
    if (stat(dir, &st) != 0) {
        snprintf(why, whylen, "%s: %s", dir, dns_shim__errno_text(errno));
        return -1;
    }
    if (!trusted_owner(st.st_uid, secure)) {
        snprintf(why, whylen, "the directory %s belongs to uid %u, neither root nor this "
                 "process's user", dir, (unsigned)st.st_uid);
        return -1;
    }
    if ((st.st_mode & others) && (last || !(st.st_mode & S_ISVTX))) {
        snprintf(why, whylen, "the directory %s can be written by others (mode %04o)", dir,
                 (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* The path checked as the file comment says: 0 with the socket's path,
** its directories' links resolved, in sock (what the call connects to:
** the path checked, not the path named, so that no link can be changed in
** between); 1 when there is no socket there (nor its directory); -1 with
** why it is not trusted. */
static int service_trusted(const char *path, char *sock, size_t socklen, char *why,
                           size_t whylen)
{
    char dir[PATH_MAX], real[PATH_MAX], prefix[PATH_MAX];
    const char *slash = strrchr(path, '/');
    int secure = getauxval(AT_SECURE) != 0;
    struct stat st;
    size_t n, i, rlen;

    if (path[0] != '/' || slash == NULL || slash[1] == '\0') {
        snprintf(why, whylen, "the path is not an absolute path to a socket");
        return -1;
    }
    n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* a socket in / */
    memcpy(dir, path, n);
    dir[n] = '\0';
    if (realpath(dir, real) == NULL) {
        int e = errno;
        snprintf(why, whylen, "its directory: %s", dns_shim__errno_text(e));
        return e == ENOENT ? 1 : -1;
    }
    /* Each directory from the root down to the socket's. */
    rlen = strlen(real);
    if (trusted_dir("/", secure, rlen == 1, why, whylen) != 0)
        return -1;
    for (i = 1; i <= rlen; i++) {
        if (i < rlen && real[i] != '/')
            continue;
        memcpy(prefix, real, i);
        prefix[i] = '\0';
        if (trusted_dir(prefix, secure, i == rlen, why, whylen) != 0)
            return -1;
    }
    if (snprintf(sock, socklen, "%s/%s", rlen == 1 ? "" : real, slash + 1) >= (int)socklen) {
        snprintf(why, whylen, "its path, links resolved, is longer than a socket's address "
                 "holds");
        return -1;
    }
    if (lstat(sock, &st) != 0) {
        int e = errno;
        snprintf(why, whylen, "%s", dns_shim__errno_text(e));
        return e == ENOENT ? 1 : -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(why, whylen, "it is not a socket");
        return -1;
    }
    if (!trusted_owner(st.st_uid, secure)) {
        snprintf(why, whylen, "the socket belongs to uid %u, neither root nor this process's "
                 "user", (unsigned)st.st_uid);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The exchange                                                         */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, long deadline)
{
    for (;;) {
        struct pollfd pfd = {fd, events, 0};
        long left = deadline - now_ms();
        int rc;
        if (left <= 0)
            return 0;
        rc = poll(&pfd, 1, (int)(left > INT_MAX ? INT_MAX : left));
        if (rc > 0)
            return (pfd.revents & events) ? 1 : -1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int send_all(int fd, const uint8_t *p, size_t n, long deadline, char *why, size_t whylen)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(fd, POLLOUT, deadline);
            if (rc == 1)
                continue;
            if (rc == 0)
                snprintf(why, whylen, "it did not take the request within %d ms",
                         DNS_SHIM__SERVICE_TIMEOUT_MS);
            else
                snprintf(why, whylen, "it closed the connection");
            return -1;
        }
        if (errno == EPIPE || errno == ECONNRESET)
            snprintf(why, whylen, "it closed the connection before taking the request");
        else
            snprintf(why, whylen, "sending: %s", dns_shim__errno_text(errno));
        return -1;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *p, size_t n, long deadline, char *why, size_t whylen)
{
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k == 0) {
            snprintf(why, whylen, "it closed the connection before its answer was whole");
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(fd, POLLIN, deadline);
            if (rc == 1)
                continue;
            if (rc == 0)
                snprintf(why, whylen, "it did not answer within %d ms",
                         DNS_SHIM__SERVICE_TIMEOUT_MS);
            else
                snprintf(why, whylen, "it closed the connection before its answer was whole");
            return -1;
        }
        if (errno == ECONNRESET)
            snprintf(why, whylen, "it closed the connection before its answer was whole");
        else
            snprintf(why, whylen, "receiving: %s", dns_shim__errno_text(errno));
        return -1;
    }
    return 0;
}

/* The host's allocator (dns_shim_set_allocator), or libc's. */
typedef struct service_alloc {
    dns_shim_allocator host;
    int have;
} service_alloc;

static void *sa_malloc(service_alloc *a, size_t n)
{
    return a->have ? a->host.malloc(a->host.ctx, n) : malloc(n);
}

static void sa_free(service_alloc *a, void *p)
{
    if (p == NULL)
        return;
    if (a->have)
        a->host.free(a->host.ctx, p);
    else
        free(p);
}

static void *sa_realloc(void *ctx, void *p, size_t n)
{
    service_alloc *a = ctx;
    return a->have ? a->host.realloc(a->host.ctx, p, n) : realloc(p, n);
}

/* ------------------------------------------------------------------ */
/* The request                                                          */

/* A callback set's members that are not NULL, each by its wire code. */
static size_t callback_codes(const dns_shim_callbacks *cb, uint16_t *codes)
{
    size_t n = 0;
    if (cb->on_header != NULL)
        codes[n++] = DNS_SHIM__WIRE_HEADER;
#define DNS_SHIM__KIND_CODE(rdtype, member, type, kind) \
    if (cb->member != NULL) codes[n++] = (uint16_t)(rdtype);
    DNS_SHIM__KINDS(DNS_SHIM__KIND_CODE)
#undef DNS_SHIM__KIND_CODE
    if (cb->on_other != NULL)
        codes[n++] = DNS_SHIM__WIRE_OTHER;
    if (cb->on_edns_option != NULL)
        codes[n++] = DNS_SHIM__WIRE_EDNS_OPTION;
    return n;
}

static void write_request(dns_shim__wr *w, int op, const uint8_t *buf, int32_t len,
                          const dns_shim_query *query, const dns_shim_callbacks *callbacks)
{
    uint16_t codes[DNS_SHIM__WIRE_CODES_MAX];
    size_t ncodes = 0, i, qlen = 0;
    uint16_t flags = 0;

    dns_shim__wr_u32(w, 0); /* the length, once known */
    dns_shim__wr_u32(w, DNS_SHIM__WIRE_REQUEST_MAGIC);
    dns_shim__wr_u16(w, DNS_SHIM__WIRE_VERSION);
    dns_shim__wr_u16(w, op);
    if (op == DNS_SHIM__WIRE_OP_PARSE) {
        if (query != NULL) {
            flags |= DNS_SHIM__WIRE_QUERY;
            if (query->flags & DNS_SHIM_MATCH_CASE)
                flags |= DNS_SHIM__WIRE_MATCH_CASE;
            if (query->cookie_client != NULL)
                flags |= DNS_SHIM__WIRE_COOKIE;
            qlen = strnlen(query->qname, DNS_SHIM__WIRE_NAME_MAX + 1);
            if (qlen > DNS_SHIM__WIRE_NAME_MAX)
                w->bad = 1; /* a qname no name can be: the process says why */
        }
        if (callbacks != NULL) {
            flags |= DNS_SHIM__WIRE_CALLBACKS;
            ncodes = callback_codes(callbacks, codes);
        }
        dns_shim__wr_u16(w, flags);
        dns_shim__wr_u32(w, callbacks != NULL ? callbacks->sections : 0);
        dns_shim__wr_u16(w, ncodes);
        for (i = 0; i < ncodes; i++)
            dns_shim__wr_u16(w, codes[i]);
        if (query != NULL) {
            dns_shim__wr_u16(w, query->id);
            dns_shim__wr_u16(w, query->qtype);
            dns_shim__wr_u16(w, query->qclass);
            dns_shim__wr_u16(w, qlen);
            dns_shim__wr_data(w, query->qname, qlen);
            if (query->cookie_client != NULL)
                dns_shim__wr_data(w, query->cookie_client, 8);
        }
        dns_shim__wr_u32(w, (uint32_t)len);
        dns_shim__wr_data(w, buf, (size_t)len);
    } else if (op == DNS_SHIM__WIRE_OP_ARES) {
        dns_shim__wr_data(w, buf, (size_t)len); /* the body, as the layer wrote it */
    }
    dns_shim__wr_frame_done(w);
}

/* ------------------------------------------------------------------ */
/* The answer, read as untrusted input                                  */

/* Two passes over the steps: the first (arena NULL) checks everything and
** counts the octets the structs and their strings need; the second builds
** them in one block of that size. */
typedef struct decoder {
    dns_shim__rd rd;
    uint8_t *arena; /* NULL: counting */
    size_t used;
    const char *fault; /* why the answer cannot be read */
} decoder;

static void *d_alloc(decoder *d, size_t n)
{
    void *p;
    d->used = (d->used + 15) & ~(size_t)15;
    p = d->arena != NULL ? d->arena + d->used : NULL;
    d->used += n;
    return p;
}

static void d_fault(decoder *d, const char *why)
{
    if (d->fault == NULL)
        d->fault = why;
    d->rd.bad = 1;
}

static const char *d_name(decoder *d)
{
    uint16_t n = dns_shim__rd_u16(&d->rd);
    const uint8_t *src;
    char *out;
    if (n > DNS_SHIM__WIRE_NAME_MAX) {
        d_fault(d, "a name longer than any name's text");
        return NULL;
    }
    if (!dns_shim__rd_take(&d->rd, n, &src)) {
        d_fault(d, "a name past the end of the answer");
        return NULL;
    }
    if (memchr(src, '\0', n) != NULL) {
        d_fault(d, "a name with a NUL inside");
        return NULL;
    }
    out = d_alloc(d, (size_t)n + 1);
    if (out != NULL) {
        memcpy(out, src, n);
        out[n] = '\0';
    }
    return out;
}

static void d_bytes(decoder *d, dns_shim_bytes *b)
{
    uint32_t n = dns_shim__rd_u32(&d->rd);
    const uint8_t *src;
    uint8_t *out;
    if (n > 65535) {
        d_fault(d, "a byte string longer than a message");
        return;
    }
    if (!dns_shim__rd_take(&d->rd, n, &src)) {
        d_fault(d, "a byte string past the end of the answer");
        return;
    }
    out = d_alloc(d, (size_t)n + 1);
    if (out != NULL && b != NULL) {
        memcpy(out, src, n);
        out[n] = '\0';
        b->data = out;
        b->len = n;
    }
}

static void d_rr(decoder *d, dns_shim_rr *rr)
{
    dns_shim_rr v;
    v.owner = d_name(d);
    v.type = dns_shim__rd_u16(&d->rd);
    v.rclass = dns_shim__rd_u16(&d->rd);
    v.ttl = dns_shim__rd_u32(&d->rd);
    v.section = dns_shim__rd_u32(&d->rd);
    v.index = dns_shim__rd_u32(&d->rd);
    if (rr != NULL)
        *rr = v;
}

/* One struct of a kind, into out (NULL when counting). */
#define D_FIELD_IPV4(k, f) { const uint8_t *src; \
        if (dns_shim__rd_take(&d->rd, 4, &src) && k) memcpy(k->f, src, 4); }
#define D_FIELD_IPV6(k, f) { const uint8_t *src; \
        if (dns_shim__rd_take(&d->rd, 16, &src) && k) memcpy(k->f, src, 16); }
#define D_FIELD_U16(k, f) { uint16_t v = dns_shim__rd_u16(&d->rd); if (k) k->f = v; }
#define D_FIELD_U32(k, f) { uint32_t v = dns_shim__rd_u32(&d->rd); if (k) k->f = v; }
#define D_FIELD_NAME(k, f) { const char *v = d_name(d); if (k) k->f = v; }
#define D_FIELD_BYTES(k, f) d_bytes(d, k ? &k->f : NULL);
#define D_FIELD_STRINGS(k, f) {                                             \
        uint32_t count = dns_shim__rd_u32(&d->rd), s;                     \
        dns_shim_bytes *list;                                             \
        if (!d->rd.bad && (count == 0 || count > 65535))                  \
            d_fault(d, "a TXT record with no strings or more than 65535"); \
        list = d->rd.bad ? NULL : d_alloc(d, count * sizeof *list);       \
        for (s = 0; s < count && !d->rd.bad; s++)                         \
            d_bytes(d, list ? &list[s] : NULL);                           \
        if (k) { k->count = count; k->f = list; }                         \
    }
#define D_FIELD(type, field, style) D_FIELD_##style(k, field)

static void *d_step(decoder *d, uint16_t code)
{
    switch (code) {
    case DNS_SHIM__WIRE_HEADER: {
        dns_shim_header *k = d_alloc(d, sizeof *k);
        dns_shim_header v;
        memset(&v, 0, sizeof v);
        v.id = dns_shim__rd_u16(&d->rd);
        v.flags = dns_shim__rd_u16(&d->rd);
        v.opcode = dns_shim__rd_u16(&d->rd);
        v.rcode = dns_shim__rd_u16(&d->rd);
        v.qdcount = dns_shim__rd_u16(&d->rd);
        v.ancount = dns_shim__rd_u16(&d->rd);
        v.nscount = dns_shim__rd_u16(&d->rd);
        v.arcount = dns_shim__rd_u16(&d->rd);
        switch (dns_shim__rd_u8(&d->rd)) {
        case 0:
            v.qname = NULL;
            break;
        case 1:
            v.qname = d_name(d);
            break;
        default:
            d_fault(d, "a header whose has_qname is neither 0 nor 1");
        }
        v.qtype = dns_shim__rd_u16(&d->rd);
        v.qclass = dns_shim__rd_u16(&d->rd);
        v.edns_version = (int32_t)dns_shim__rd_u32(&d->rd);
        v.edns_payload = dns_shim__rd_u16(&d->rd);
        v.edns_do = dns_shim__rd_u16(&d->rd);
        v.edns_flags = dns_shim__rd_u16(&d->rd);
        if (k != NULL)
            *k = v;
        return k;
    }
    case DNS_SHIM__WIRE_OTHER: {
        dns_shim_raw *k = d_alloc(d, sizeof *k);
        d_rr(d, k ? &k->rr : NULL);
        d_bytes(d, k ? &k->rdata : NULL);
        return k;
    }
    case DNS_SHIM__WIRE_EDNS_OPTION: {
        dns_shim_edns_option *k = d_alloc(d, sizeof *k);
        if (k != NULL)
            memset(k, 0, sizeof *k);
        D_FIELD_U16(k, code)
        d_bytes(d, k ? &k->data : NULL);
        { int32_t v = (int32_t)dns_shim__rd_u32(&d->rd); if (k) k->ede_info_code = v; }
        d_bytes(d, k ? &k->ede_text : NULL);
        d_bytes(d, k ? &k->cookie_client : NULL);
        d_bytes(d, k ? &k->cookie_server : NULL);
        D_FIELD_U16(k, ecs_family)
        { uint8_t v = dns_shim__rd_u8(&d->rd); if (k) k->ecs_source_prefix = v; }
        { uint8_t v = dns_shim__rd_u8(&d->rd); if (k) k->ecs_scope_prefix = v; }
        d_bytes(d, k ? &k->ecs_address : NULL);
        return k;
    }
#define D_KIND(rdtype, member, type, kind)                       \
    case rdtype: {                                               \
        type *k = d_alloc(d, sizeof *k);                         \
        if (k != NULL)                                           \
            memset(k, 0, sizeof *k);                             \
        d_rr(d, k ? &k->rr : NULL);                              \
        DNS_SHIM__KIND_FIELDS_##member(D_FIELD)                  \
        return k;                                                \
    }
    DNS_SHIM__KINDS(D_KIND)
#undef D_KIND
    }
    d_fault(d, "a step to no callback");
    return NULL;
}

/* The member of dns_shim_callbacks a code names, or (size_t)-1. */
static size_t code_member(uint16_t code)
{
    switch (code) {
    case DNS_SHIM__WIRE_HEADER:
        return offsetof(dns_shim_callbacks, on_header);
    case DNS_SHIM__WIRE_OTHER:
        return offsetof(dns_shim_callbacks, on_other);
    case DNS_SHIM__WIRE_EDNS_OPTION:
        return offsetof(dns_shim_callbacks, on_edns_option);
#define D_MEMBER(rdtype, member, type, kind) \
    case rdtype: return offsetof(dns_shim_callbacks, member);
    DNS_SHIM__KINDS(D_MEMBER)
#undef D_MEMBER
    }
    return (size_t)-1;
}

/* The steps of an answer whose status is 0: decoded into *steps (one block
** from the allocator: *block, which also holds the structs).  0, or -1 with
** why the answer cannot be trusted (*why NULL: no memory). */
static int decode_steps(service_alloc *a, const uint8_t *p, size_t n, uint32_t count,
                        dns_shim__step **steps, void **block, const char **why)
{
    decoder d;
    uint32_t i;
    int pass;
    size_t step_bytes = (size_t)count * sizeof(dns_shim__step), need = 0;

    *steps = NULL;
    *block = NULL;
    *why = NULL;
    for (pass = 0; pass < 2; pass++) {
        memset(&d, 0, sizeof d);
        d.rd.p = p;
        d.rd.left = n;
        if (pass == 1) {
            d.arena = *block = sa_malloc(a, need + 16);
            if (*block == NULL)
                return -1;
            *steps = (dns_shim__step *)(void *)d.arena;
        }
        d.used = step_bytes;
        for (i = 0; i < count && !d.rd.bad; i++) {
            uint16_t code = dns_shim__rd_u16(&d.rd);
            size_t member = code_member(code);
            void *arg;
            if (d.rd.bad)
                break;
            if (member == (size_t)-1) {
                d_fault(&d, "a step to no callback");
                break;
            }
            arg = d_step(&d, code);
            if (pass == 1) {
                (*steps)[i].member = member;
                (*steps)[i].arg = arg;
            }
        }
        if (d.rd.bad || d.rd.left != 0) {
            *why = d.fault != NULL ? d.fault : d.rd.bad ? "a step past the end of the answer"
                                                        : "octets after the last step";
            sa_free(a, *block);
            *block = NULL;
            *steps = NULL;
            return -1;
        }
        need = d.used;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* The call                                                             */

/* The structs of an answer being dispatched, freed however it ends. */
typedef struct read_state {
    service_alloc *alloc;
    void *block;
} read_state;

static void read_state_end(void *arg)
{
    read_state *st = arg;
    sa_free(st->alloc, st->block);
    st->block = NULL;
}

typedef struct exchange {
    service_alloc alloc;
    int fd;
    dns_shim__wr request;
    uint8_t *answer;
} exchange;

static void exchange_end(void *arg)
{
    exchange *x = arg;
    if (x->fd >= 0)
        close(x->fd);
    x->fd = -1;
    sa_free(&x->alloc, x->request.buf);
    x->request.buf = NULL;
    sa_free(&x->alloc, x->answer);
    x->answer = NULL;
}

/* Logs the first fallback of the process. */
static void fell_back(const service_target *t, int absent, const char *why)
{
    char text[600];
    if (__atomic_exchange_n(&dns_shim__service_logged, 1, __ATOMIC_RELAXED))
        return;
    snprintf(text, sizeof text, "the parse service at %s is not used: %s; messages are parsed "
             "in this process (dnsshimd(8))", t->path, why);
    dns_shim__log_level(absent ? DNS_SHIM_LOG_INFO : DNS_SHIM_LOG_WARNING, text);
}

/* Not used: the process parses, or, with DNS_SHIM_SERVICE_FALLBACK=no, the
** call fails.  Returns SERVICE_LOCAL, or SERVICE_ANSWERED with *status. */
static int not_used(const service_target *t, int absent, const char *why, int32_t *status)
{
    if (t->required) {
        *status = dns_shim__fail(DNS_SHIM_ERR_INIT, "the parse service at %s cannot parse: %s; "
                                 "DNS_SHIM_SERVICE_FALLBACK=no forbids parsing in this process",
                                 t->path, why);
        /* Said once, as a start that failed is. */
        if (!__atomic_exchange_n(&dns_shim__service_logged, 1, __ATOMIC_RELAXED))
            dns_shim__log_level(DNS_SHIM_LOG_ERROR, dns_shim__reason(dns_shim__error));
        return SERVICE_ANSWERED;
    }
    fell_back(t, absent, why);
    return SERVICE_LOCAL;
}

/* A connection to the service, trusted, and the request sent on it: 1, or
** 0 with why (absent: no socket there). */
static int ask_open(exchange *x, const service_target *t, long deadline, int *absent,
                    char *why, size_t whylen)
{
    struct sockaddr_un addr;
    int rc;

    char sock[sizeof addr.sun_path];
    /* A path found trusted stays so for this thread a while (TRUST_MS), for
    ** the same effective user: its directories are root's or the user's, and
    ** no one else can change them; a connection that fails forgets it. */
    static __thread struct {
        char named[sizeof addr.sun_path], sock[sizeof addr.sun_path];
        uid_t euid;
        long until;
    } trusted;
    long now = now_ms();

    if (trusted.until > now && trusted.euid == geteuid() && strcmp(trusted.named, t->path) == 0) {
        memcpy(sock, trusted.sock, sizeof sock);
    } else {
        rc = service_trusted(t->path, sock, sizeof sock, why, whylen);
        if (rc != 0) {
            *absent = rc > 0;
            return 0;
        }
        memcpy(trusted.named, t->path, sizeof trusted.named);
        memcpy(trusted.sock, sock, sizeof trusted.sock);
        trusted.euid = geteuid();
        trusted.until = now + TRUST_MS;
    }
    x->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (x->fd < 0) {
        snprintf(why, whylen, "socket: %s", dns_shim__errno_text(errno));
        return 0;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, sock, strlen(sock) + 1);
    while ((rc = connect(x->fd, (struct sockaddr *)&addr, sizeof addr)) != 0 && errno == EINTR)
        ;
    if (rc != 0) {
        if (errno == EAGAIN)
            snprintf(why, whylen, "it has more connections waiting than it takes");
        else
            snprintf(why, whylen, "connect: %s", dns_shim__errno_text(errno));
        /* No socket, or one whose service has stopped: no service. */
        *absent = errno == ENOENT || errno == ECONNREFUSED;
        trusted.until = 0;
        return 0;
    }
    return send_all(x->fd, x->request.buf, x->request.len, deadline, why, whylen) == 0;
}

/* The answer to the request ask_open sent: 1 with its frame in x->answer
** (its length in *n), else 0 with why. */
static int ask_answer(exchange *x, long deadline, size_t *n, char *why, size_t whylen)
{
    uint8_t head[4];
    uint32_t len;

    if (recv_all(x->fd, head, 4, deadline, why, whylen) != 0)
        return 0;
    len = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
    if (len < 18 || len > DNS_SHIM__WIRE_RESPONSE_MAX) {
        snprintf(why, whylen, "its answer's length %u is not one a service sends", (unsigned)len);
        return 0;
    }
    x->answer = sa_malloc(&x->alloc, len);
    if (x->answer == NULL) {
        snprintf(why, whylen, "no memory for its answer of %u octets", (unsigned)len);
        return 0;
    }
    if (recv_all(x->fd, x->answer, len, deadline, why, whylen) != 0)
        return 0;
    *n = len;
    return 1;
}

/* One exchange with the service: 1 with the answer's frame in x->answer
** (its length in *n), else 0 with why (absent: no socket there). */
static int ask(exchange *x, const service_target *t, long deadline, size_t *n, int *absent,
               char *why, size_t whylen)
{
    return ask_open(x, t, deadline, absent, why, whylen) &&
           ask_answer(x, deadline, n, why, whylen);
}

/* The calls an answer plans, against what the call asked for and the
** order the library calls in (dns_shim.h, "Order"): on_header once and
** first, the EDNS options next, then the records, each of a section the
** set asked for (0: the answer section), in wire order (the section, then
** the index within it, rising).  NULL when they hold, else why not. */
static const char *check_order(const dns_shim_callbacks *cb, const dns_shim__step *steps,
                               size_t count)
{
    uint32_t asked = cb->sections ? cb->sections : DNS_SHIM_SECTION_ANSWER;
    uint32_t last_section = 0, last_index = 0;
    int records = 0;
    size_t i;
    for (i = 0; i < count; i++) {
        size_t member = steps[i].member;
        if (member == offsetof(dns_shim_callbacks, on_header)) {
            if (i != 0)
                return "on_header planned after another call";
        } else if (member == offsetof(dns_shim_callbacks, on_edns_option)) {
            if (records)
                return "an EDNS option planned after a record";
        } else {
            const dns_shim_rr *rr = steps[i].arg;
            if (!(rr->section & asked))
                return "a record of a section the call did not ask for";
            if (records && (rr->section < last_section ||
                            (rr->section == last_section && rr->index <= last_index)))
                return "records planned out of their wire order";
            records = 1;
            last_section = rr->section;
            last_index = rr->index;
        }
    }
    return NULL;
}

/* An answer's head, every answer's (service_wire.h): after its magic and
** version, its kind, status, detail (a text of at most
** DNS_SHIM__WIRE_DETAIL_MAX octets without a NUL) and step count. */
typedef struct answer_head {
    uint16_t kind, detlen;
    int32_t status;
    const uint8_t *detail;
    uint32_t count; /* the steps that follow */
} answer_head;

/* Reads the head: 0 with rd past it, or -1 with why the answer cannot be
** used (a fault's answer among them: the service could not parse). */
static int read_head(dns_shim__rd *rd, answer_head *h, char *why, size_t whylen)
{
    if (dns_shim__rd_u32(rd) != DNS_SHIM__WIRE_RESPONSE_MAGIC ||
        dns_shim__rd_u16(rd) != DNS_SHIM__WIRE_VERSION) {
        snprintf(why, whylen, "its answer is not in this library's format (another version?)");
        return -1;
    }
    h->kind = dns_shim__rd_u16(rd);
    h->status = (int32_t)dns_shim__rd_u32(rd);
    h->detlen = dns_shim__rd_u16(rd);
    if (h->detlen > DNS_SHIM__WIRE_DETAIL_MAX || !dns_shim__rd_take(rd, h->detlen, &h->detail) ||
        memchr(h->detail, '\0', h->detlen) != NULL) {
        snprintf(why, whylen, "its answer's detail is malformed");
        return -1;
    }
    h->count = dns_shim__rd_u32(rd);
    if (rd->bad) {
        snprintf(why, whylen, "its answer ends early");
        return -1;
    }
    if (h->kind == DNS_SHIM__WIRE_FAULT) {
        snprintf(why, whylen, "it could not parse the message (%.*s)",
                 (int)(h->detlen < 400 ? h->detlen : 400), (const char *)h->detail);
        return -1;
    }
    return 0;
}

/* The answer's frame (without its length) read and, for a parse, its calls
** made: SERVICE_ANSWERED with the call's status in *status, or
** SERVICE_LOCAL with why the answer cannot be used (*absent unset).  The
** reader of untrusted input, which tests/fuzz/fuzz_service.c drives. */
int dns_shim__service_read(const uint8_t *frame, size_t n, int op,
                           const dns_shim_callbacks *callbacks, int32_t *status, char *why,
                           size_t whylen)
{
    service_alloc alloc;
    dns_shim__rd rd;
    dns_shim__step *steps = NULL;
    const char *fault = NULL;
    char text[DNS_SHIM__WIRE_DETAIL_MAX + 1];
    read_state st;
    answer_head h;

    rd.p = frame;
    rd.left = n;
    rd.bad = 0;
    if (read_head(&rd, &h, why, whylen) != 0)
        return SERVICE_LOCAL;
    memcpy(text, h.detail, h.detlen);
    text[h.detlen] = '\0';
    if (h.kind != DNS_SHIM__WIRE_VERDICT || !dns_shim__wire_verdict(h.status) ||
        (h.status != DNS_SHIM_OK && (h.count != 0 || rd.left != 0)) ||
        h.count > DNS_SHIM__WIRE_STEPS_MAX ||
        (h.count > 0 && callbacks == NULL) ||
        (op == DNS_SHIM__WIRE_OP_PING &&
         (h.status != DNS_SHIM_OK || h.count != 0 || rd.left != 0))) {
        snprintf(why, whylen, "its answer is not one the service gives");
        return SERVICE_LOCAL;
    }
    if (op == DNS_SHIM__WIRE_OP_PING) {
        *status = dns_shim__ok();
        return SERVICE_ANSWERED;
    }
    if (h.status != DNS_SHIM_OK) {
        if (h.detlen == 0) {
            snprintf(why, whylen, "its answer is a failure without a reason");
            return SERVICE_LOCAL;
        }
        dns_shim__set_error(text);
        *status = h.status;
        return SERVICE_ANSWERED;
    }
    alloc.have = dns_shim__memory_host(&alloc.host);
    st.alloc = &alloc;
    st.block = NULL;
    if (decode_steps(&alloc, rd.p, rd.left, h.count, &steps, &st.block, &fault) != 0) {
        snprintf(why, whylen, "%s", fault != NULL ? fault : "no memory to read its answer");
        return SERVICE_LOCAL;
    }
    /* The plan checked whole as one made here is (a step to a NULL
    ** callback, a section no value has...), then the calls. */
    if (h.count > 0 && dns_shim__check_plan(callbacks, steps, h.count) != DNS_SHIM_OK) {
        snprintf(why, whylen, "its answer does not hold (%.400s)",
                 dns_shim__reason(dns_shim__error));
        sa_free(&alloc, st.block);
        return SERVICE_LOCAL;
    }
    if (h.count > 0 && (fault = check_order(callbacks, steps, h.count)) != NULL) {
        snprintf(why, whylen, "its answer does not hold (%s)", fault);
        sa_free(&alloc, st.block);
        return SERVICE_LOCAL;
    }
    /* A thread cancelled in a callback leaves the structs freed. */
    pthread_cleanup_push(read_state_end, &st);
    *status = dns_shim__dispatch(callbacks, steps, h.count);
    pthread_cleanup_pop(1);
    return SERVICE_ANSWERED;
}

/* Another layer's answer (DNS_SHIM__WIRE_OP_ARES): its head read here, the
** rest by the layer's reader.  As dns_shim__service_read returns. */
static int read_layer(const uint8_t *frame, size_t n, dns_shim__service_reader read, void *ctx,
                      char *why, size_t whylen)
{
    dns_shim__rd rd = {frame, n, 0};
    answer_head h;

    if (read_head(&rd, &h, why, whylen) != 0)
        return SERVICE_LOCAL;
    if (h.kind != DNS_SHIM__WIRE_VERDICT || h.detlen != 0 || h.count != 0) {
        snprintf(why, whylen, "its answer is not one the service gives");
        return SERVICE_LOCAL;
    }
    return read(ctx, h.status, rd.p, rd.left, why, whylen) ? SERVICE_ANSWERED : SERVICE_LOCAL;
}

/* A call's request, in x (made ready); 0, or -1: a call the process
** judges (a request too long: what the process says of it is the answer). */
static int exchange_start(exchange *x, int op, const uint8_t *buf, int32_t len,
                          const dns_shim_query *query, const dns_shim_callbacks *callbacks)
{
    memset(x, 0, sizeof *x);
    x->fd = -1;
    x->alloc.have = dns_shim__memory_host(&x->alloc.host);
    x->request.realloc_fn = sa_realloc;
    x->request.ctx = &x->alloc;
    x->request.max = DNS_SHIM__WIRE_REQUEST_MAX + 4;
    write_request(&x->request, op, buf, len, query, callbacks);
    if (x->request.bad) {
        exchange_end(x);
        return -1;
    }
    return 0;
}

/* The connection closed and the request freed, the answer kept. */
static void exchange_hang_up(exchange *x)
{
    if (x->fd >= 0) {
        close(x->fd);
        x->fd = -1;
    }
    sa_free(&x->alloc, x->request.buf);
    x->request.buf = NULL;
}

/* The answer of n octets in x read and its calls made (cancellation as
** the caller left it: the answer is freed however the callbacks end). */
static int exchange_finish(exchange *x, size_t n, const service_target *t, int op,
                           const dns_shim_callbacks *callbacks, int32_t *status,
                           dns_shim__service_reader layer_read, void *layer_ctx)
{
    char why[512];
    int rc;

    pthread_cleanup_push(exchange_end, x);
    if (op == DNS_SHIM__WIRE_OP_ARES) {
        rc = read_layer(x->answer, n, layer_read, layer_ctx, why, sizeof why);
        *status = DNS_SHIM_OK;
    } else {
        rc = dns_shim__service_read(x->answer, n, op, callbacks, status, why, sizeof why);
    }
    pthread_cleanup_pop(1);
    if (rc != SERVICE_ANSWERED)
        return not_used(t, 0, why, status);
    return SERVICE_ANSWERED;
}

/* The call through the service: SERVICE_LOCAL (the caller parses in this
** process), or SERVICE_ANSWERED with the call's status in *status.  For
** DNS_SHIM__WIRE_OP_ARES, buf and len are the body and layer_read reads
** the answer. */
static int service_call(int op, const uint8_t *buf, int32_t len, const dns_shim_query *query,
                        const dns_shim_callbacks *callbacks, int32_t *status,
                        dns_shim__service_reader layer_read, void *layer_ctx)
{
    service_target t;
    exchange x;
    char why[512];
    size_t n = 0;
    int absent = 0, oldstate, got, where;

    where = service_where(&t);
    if (where < 0)
        return SERVICE_LOCAL;
    if (where > 0)
        return not_used(&t, 0, "the path is longer than a socket's address holds", status);
    if (exchange_start(&x, op, buf, len, query, callbacks) != 0)
        return SERVICE_LOCAL; /* what the process says of such a call is the answer */
    /* The wait on the service is bounded: no cancellation inside it, so a
    ** cancelled thread leaves no descriptor and no block behind. */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
    got = ask(&x, &t, now_ms() + DNS_SHIM__SERVICE_TIMEOUT_MS, &n, &absent, why, sizeof why);
    exchange_hang_up(&x);
    pthread_setcancelstate(oldstate, NULL);
    if (!got) {
        exchange_end(&x);
        return not_used(&t, absent, why, status);
    }
    return exchange_finish(&x, n, &t, op, callbacks, status, layer_read, layer_ctx);
}

/* Two calls at once: both requests sent, each on a connection of its own,
** before the first answer is read, so that the service parses the second
** while the first's answer travels and its calls are made (at
** --parallelism 2 and above, both at once).  Each call ends as
** service_call's: served[i] 1 with status[i], or 0: it parses in the
** process; where the service refused the first, the second is left
** unread (served[1] 0).  The answers are read and their calls made in order, the
** first's before the second's, with no cancellation from the first send
** to the last answer (the second exchange is held meanwhile); the whole is
** bounded by one DNS_SHIM__SERVICE_TIMEOUT_MS. */
static void service_call_pair(const uint8_t *const buf[2], const int32_t len[2],
                              const dns_shim_query *const query[2],
                              const dns_shim_callbacks *const callbacks[2], int32_t status[2],
                              int served[2])
{
    service_target t;
    exchange x[2];
    char why[2][512];
    size_t n;
    int absent[2] = {0, 0}, open[2] = {0, 0}, ready[2], oldstate, where, i;
    long deadline;

    served[0] = served[1] = SERVICE_LOCAL;
    where = service_where(&t);
    if (where < 0)
        return;
    if (where > 0) {
        for (i = 0; i < 2; i++)
            served[i] = not_used(&t, 0, "the path is longer than a socket's address holds",
                                 &status[i]);
        return;
    }
    for (i = 0; i < 2; i++)
        ready[i] = exchange_start(&x[i], DNS_SHIM__WIRE_OP_PARSE, buf[i], len[i], query[i],
                                  callbacks[i]) == 0;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &oldstate);
    deadline = now_ms() + DNS_SHIM__SERVICE_TIMEOUT_MS;
    for (i = 0; i < 2; i++) {
        /* the second is not asked where the first found no service */
        if (ready[i] && (i == 0 || open[0] || !ready[0]))
            open[i] = ask_open(&x[i], &t, deadline, &absent[i], why[i], sizeof why[i]);
        else if (ready[i])
            snprintf(why[i], sizeof why[i], "%s", why[0]), absent[i] = absent[0];
    }
    for (i = 0; i < 2; i++) {
        if (i == 1 && served[0] == SERVICE_ANSWERED && status[0] != DNS_SHIM_OK) {
            /* the first refused: the second is not read (its caller stops
            ** there), and the thread's detail stays the first's */
            if (ready[1])
                exchange_end(&x[1]);
            break;
        }
        if (!ready[i])
            continue; /* judged in the process */
        if (!open[i] || !ask_answer(&x[i], deadline, &n, why[i], sizeof why[i])) {
            exchange_end(&x[i]);
            served[i] = not_used(&t, absent[i], why[i], &status[i]);
            continue;
        }
        exchange_hang_up(&x[i]);
        served[i] = exchange_finish(&x[i], n, &t, DNS_SHIM__WIRE_OP_PARSE, callbacks[i],
                                    &status[i], NULL, NULL);
    }
    pthread_setcancelstate(oldstate, NULL);
}

int dns_shim__service_run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                          const dns_shim_callbacks *callbacks, int32_t *status)
{
    static const uint8_t empty[1] = {0};
    return service_call(DNS_SHIM__WIRE_OP_PARSE, buf != NULL ? buf : empty, len, query,
                        callbacks, status, NULL, NULL) == SERVICE_ANSWERED;
}

void dns_shim__service_run_pair(const uint8_t *const buf[2], const int32_t len[2],
                                const dns_shim_query *const query[2],
                                const dns_shim_callbacks *const callbacks[2], int32_t status[2],
                                int served[2])
{
    static const uint8_t empty[1] = {0};
    const uint8_t *bufs[2];
    int i;
    for (i = 0; i < 2; i++)
        bufs[i] = buf[i] != NULL ? buf[i] : empty;
    service_call_pair(bufs, len, query, callbacks, status, served);
    for (i = 0; i < 2; i++)
        served[i] = served[i] == SERVICE_ANSWERED;
}

int dns_shim__service_ping(int32_t *status)
{
    return service_call(DNS_SHIM__WIRE_OP_PING, NULL, 0, NULL, NULL, status, NULL, NULL) ==
           SERVICE_ANSWERED;
}

DNS_SHIM__PRIVATE_API int dns_shim__service_exchange(uint16_t op, const uint8_t *body, size_t n,
                                                     dns_shim__service_reader read, void *ctx)
{
    int32_t status = DNS_SHIM_OK;
    if (op != DNS_SHIM__WIRE_OP_ARES || body == NULL || read == NULL ||
        n > DNS_SHIM__WIRE_REQUEST_MAX - 16)
        return 0;
    if (service_call(op, body, (int32_t)n, NULL, NULL, &status, read, ctx) != SERVICE_ANSWERED)
        return 0;
    return status == DNS_SHIM_OK ? 1 : -1;
}
#endif
