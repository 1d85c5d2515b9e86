/*
** dnsshimd: the parse service.  One process parses DNS messages for every
** program on the machine, so that no other process has to carry a Python.
**
**   dnsshimd [--socket PATH] [--parallelism N] [--memory-limit BYTES]
**            [--max-clients N] [--user NAME]
**   dnsshimd --version | --help
**
** It parses; it never sends, receives nor resolves DNS.  A client (any form
** of libdnsshim: csrc/lib/service.c) connects to its Unix stream socket and
** sends a message, the query where the call has one, and which callbacks
** its set has; the service parses it with the library, in this process,
** and answers with the status, the failure detail and every call the
** library would make, each with its struct (csrc/lib/service_wire.h).
**
** The socket: socket activation (LISTEN_FDS, the first descriptor passed,
** which must be a listening Unix stream socket), else --socket PATH (default
** /run/dnsshim/parse.sock; its directory is made, mode 0755, when missing; a
** stale socket there is replaced; the socket is made mode 0666, no longer
** listened on from SIGTERM, and removed at exit).  Run as root without
** socket activation, it starts its runtime, then gives up root for
** --user's (default nobody), its groups included, and sets no_new_privs;
** a child keeps root for one thing, removing the socket once the service
** has ended, however it ended (keep_socket).  It runs in the foreground
** and logs to standard error.
**
** Work per client is bounded: one request at a time per connection, a
** request at most DNS_SHIM__WIRE_REQUEST_MAX octets, IDLE_MS for a whole
** request from its first octet (and to begin one), IDLE_MS to read a whole
** answer, at most --max-clients connections (one more is accepted and
** closed at once, so that its client parses on its own instead of
** waiting; the soft descriptor limit is raised for them, or the clients
** are fewer, said at start), and the answers waiting to be read held
** under ANSWER_BUDGET octets (past it a client is told to parse on its own).
** Requests are parsed in arrival order: at parallelism 1 by the loop's own
** thread, between its reads and writes; above, by that many threads, to
** which the library's pool gives an interpreter each.
**
** SIGTERM or SIGINT: no new connection; the requests received are parsed
** and answered (within IDLE_MS), then it exits 0.
**
** Exit status: 0 after SIGTERM; 1 when it cannot start (one line saying
** why); 2 on a usage error.
*/
#define _GNU_SOURCE 1
#include "dns_shim.h"
#include "dns_shim_kinds.h" /* the table of kinds: written by the build */
#include "lib/service_wire.h"
#include "ares/dnsshim_ares_internal.h" /* its serve entry's codes */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG "dnsshimd"
#define IDLE_MS 5000
#define ANSWER_BUDGET (64u * 1024u * 1024u)
#define MAX_CLIENTS_DEFAULT 1024
#define MAX_CLIENTS_MAX 65536

/* libdnsshim's private entry (csrc/lib/dns_shim_internal.h): this process
** is the service, and parses every message itself. */
void dns_shim__service_off(void);

/* libdnsshim_ares's entry (csrc/ares/service.c), when that library is
** installed beside this one: the calls of its c-ares parsers are computed
** here too.  NULL: they are computed in their own processes. */
typedef int (*ares_serve_fn)(const uint8_t *body, size_t n, uint8_t **payload,
                             size_t *payload_len, int32_t *status);
static ares_serve_fn ares_serve = NULL;

/* ------------------------------------------------------------------ */
/* Logging                                                              */

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, PROG ": %s\n", line);
}

static void library_log(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    if (level <= DNS_SHIM_LOG_INFO)
        say("%s", message);
}

/* ------------------------------------------------------------------ */
/* Clients                                                              */

enum { C_FREE, C_READ, C_BUSY, C_WRITE };

typedef struct client {
    int fd;
    int state;
    int close_after; /* the answer written, the connection ends */
    uint8_t head[4];
    size_t got;       /* octets of the request (head included) received */
    uint32_t length;  /* the request's, from its head */
    uint8_t *request; /* its body */
    uint8_t *answer;
    size_t answer_len, sent;
    long deadline;
    int next; /* in the queue */
} client;

static client *clients;
static size_t max_clients = MAX_CLIENTS_DEFAULT;
/* One past the highest slot in use: the loop polls and scans no further
** (a connection takes the lowest free slot). */
static size_t clients_top = 0;

/* Requests received, parsed in order by the workers; answers done. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static int queue_head = -1, queue_tail = -1, done_head = -1, stopping = 0;
static int wake_fd = -1;
static size_t answer_held = 0; /* octets of answers not yet sent */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *wr_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return realloc(p, n);
}

/* ------------------------------------------------------------------ */
/* An answer                                                            */

typedef struct answer {
    dns_shim__wr w;
    uint32_t steps;
} answer;

static void w_name(dns_shim__wr *w, const char *name)
{
    size_t n = strlen(name);
    if (n > DNS_SHIM__WIRE_NAME_MAX) {
        w->bad = 1;
        return;
    }
    dns_shim__wr_u16(w, n);
    dns_shim__wr_data(w, name, n);
}

static void w_bytes(dns_shim__wr *w, const dns_shim_bytes *b)
{
    dns_shim__wr_u32(w, b->len);
    dns_shim__wr_data(w, b->data, b->len);
}

static void w_rr(dns_shim__wr *w, const dns_shim_rr *rr)
{
    w_name(w, rr->owner);
    dns_shim__wr_u16(w, rr->type);
    dns_shim__wr_u16(w, rr->rclass);
    dns_shim__wr_u32(w, rr->ttl);
    dns_shim__wr_u32(w, rr->section);
    dns_shim__wr_u32(w, rr->index);
}

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    answer *a = ctx;
    dns_shim__wr *w = &a->w;
    dns_shim__wr_u16(w, DNS_SHIM__WIRE_HEADER);
    dns_shim__wr_u16(w, h->id);
    dns_shim__wr_u16(w, h->flags);
    dns_shim__wr_u16(w, h->opcode);
    dns_shim__wr_u16(w, h->rcode);
    dns_shim__wr_u16(w, h->qdcount);
    dns_shim__wr_u16(w, h->ancount);
    dns_shim__wr_u16(w, h->nscount);
    dns_shim__wr_u16(w, h->arcount);
    dns_shim__wr_u8(w, h->qname != NULL);
    if (h->qname != NULL)
        w_name(w, h->qname);
    dns_shim__wr_u16(w, h->qtype);
    dns_shim__wr_u16(w, h->qclass);
    dns_shim__wr_u32(w, (uint32_t)h->edns_version);
    dns_shim__wr_u16(w, h->edns_payload);
    dns_shim__wr_u16(w, h->edns_do);
    dns_shim__wr_u16(w, h->edns_flags);
    a->steps++;
    return w->bad;
}

static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    answer *a = ctx;
    dns_shim__wr_u16(&a->w, DNS_SHIM__WIRE_OTHER);
    w_rr(&a->w, &r->rr);
    w_bytes(&a->w, &r->rdata);
    a->steps++;
    return a->w.bad;
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    answer *a = ctx;
    dns_shim__wr *w = &a->w;
    dns_shim__wr_u16(w, DNS_SHIM__WIRE_EDNS_OPTION);
    dns_shim__wr_u16(w, o->code);
    w_bytes(w, &o->data);
    dns_shim__wr_u32(w, (uint32_t)o->ede_info_code);
    w_bytes(w, &o->ede_text);
    w_bytes(w, &o->cookie_client);
    w_bytes(w, &o->cookie_server);
    dns_shim__wr_u16(w, o->ecs_family);
    dns_shim__wr_u8(w, o->ecs_source_prefix);
    dns_shim__wr_u8(w, o->ecs_scope_prefix);
    w_bytes(w, &o->ecs_address);
    a->steps++;
    return w->bad;
}

/* Each typed kind's callback, its fields by style (shim/kinds.py's table). */
#define W_FIELD_IPV4(k, f) dns_shim__wr_data(w, k->f, 4);
#define W_FIELD_IPV6(k, f) dns_shim__wr_data(w, k->f, 16);
#define W_FIELD_U16(k, f) dns_shim__wr_u16(w, k->f);
#define W_FIELD_U32(k, f) dns_shim__wr_u32(w, k->f);
#define W_FIELD_NAME(k, f) w_name(w, k->f);
#define W_FIELD_BYTES(k, f) w_bytes(w, &k->f);
#define W_FIELD_STRINGS(k, f) {                  \
        size_t s;                                \
        dns_shim__wr_u32(w, (uint32_t)k->count); \
        for (s = 0; s < k->count; s++)           \
            w_bytes(w, &k->f[s]);                \
    }
#define W_FIELD(type, field, style) W_FIELD_##style(k, field)
#define W_KIND(rdtype, member, type, kind)                         \
    static int32_t member(void *ctx, const type *k)               \
    {                                                             \
        answer *a = ctx;                                          \
        dns_shim__wr *w = &a->w;                                  \
        dns_shim__wr_u16(w, rdtype);                              \
        w_rr(w, &k->rr);                                          \
        DNS_SHIM__KIND_FIELDS_##member(W_FIELD)                   \
        a->steps++;                                               \
        return w->bad;                                            \
    }
DNS_SHIM__KINDS(W_KIND)
#undef W_KIND

/* The set a request's codes ask for: 0, or -1 for a code no callback has. */
static int set_callback(dns_shim_callbacks *cb, uint16_t code)
{
    switch (code) {
    case DNS_SHIM__WIRE_HEADER:
        cb->on_header = on_header;
        return 0;
    case DNS_SHIM__WIRE_OTHER:
        cb->on_other = on_other;
        return 0;
    case DNS_SHIM__WIRE_EDNS_OPTION:
        cb->on_edns_option = on_edns_option;
        return 0;
#define SET_KIND(rdtype, member, type, kind) \
    case rdtype: cb->member = member; return 0;
    DNS_SHIM__KINDS(SET_KIND)
#undef SET_KIND
    }
    return -1;
}

/* The answer's frame: its head, the status and detail, then the steps. */
static uint8_t *frame(int kind, int32_t status, const char *detail, const answer *steps,
                      size_t *len)
{
    dns_shim__wr w;
    size_t n = strlen(detail);
    memset(&w, 0, sizeof w);
    w.realloc_fn = wr_realloc;
    w.max = DNS_SHIM__WIRE_RESPONSE_MAX + 4;
    if (n > DNS_SHIM__WIRE_DETAIL_MAX)
        n = DNS_SHIM__WIRE_DETAIL_MAX;
    dns_shim__wr_u32(&w, 0);
    dns_shim__wr_u32(&w, DNS_SHIM__WIRE_RESPONSE_MAGIC);
    dns_shim__wr_u16(&w, DNS_SHIM__WIRE_VERSION);
    dns_shim__wr_u16(&w, kind);
    dns_shim__wr_u32(&w, (uint32_t)status);
    dns_shim__wr_u16(&w, n);
    dns_shim__wr_data(&w, detail, n);
    dns_shim__wr_u32(&w, steps != NULL ? steps->steps : 0);
    if (steps != NULL)
        dns_shim__wr_data(&w, steps->w.buf, steps->w.len);
    dns_shim__wr_frame_done(&w);
    if (w.bad) {
        free(w.buf);
        return NULL;
    }
    *len = w.len;
    return w.buf;
}

/* A call of libdnsshim_ares's (DNS_SHIM__WIRE_OP_ARES): its body, after the
** op, computed by that library; its answer is the head every answer has,
** then what the library wrote. */
static uint8_t *serve_ares(const uint8_t *body, size_t n, size_t *len, int *close_after)
{
    uint8_t *payload = NULL, *out;
    size_t payload_len = 0;
    int32_t status = 0;
    answer steps;
    int rc;

    if (ares_serve == NULL)
        return frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_INIT, "the service has no c-ares "
                     "layer (libdnsshim_ares.so.1 is not installed beside it)", NULL, len);
    rc = ares_serve(body, n, &payload, &payload_len, &status);
    if (rc == DNSSHIM_ARES__SERVE_MALFORMED) {
        *close_after = 1;
        return frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_BAD_ARGUMENT, "a malformed request",
                     NULL, len);
    }
    if (rc != DNSSHIM_ARES__SERVE_OK)
        return frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_INIT, status == DNSSHIM_ARES_ENOMEM
                     ? "no memory for the c-ares layer's result" : "the c-ares layer did not "
                     "start (the service's log says why)", NULL, len);
    /* The payload goes after the head's zero count of steps. */
    memset(&steps, 0, sizeof steps);
    steps.w.buf = payload;
    steps.w.len = payload_len;
    out = frame(DNS_SHIM__WIRE_VERDICT, status, "", &steps, len);
    free(payload);
    return out;
}

/* A request's body read (untrusted) and parsed: the answer's frame, or NULL
** (no memory even for a fault: the connection is dropped). */
static uint8_t *serve(const uint8_t *body, size_t n, size_t *len, int *close_after)
{
    dns_shim__rd rd = {body, n, 0};
    dns_shim_callbacks cb;
    dns_shim_query q;
    char qname[DNS_SHIM__WIRE_NAME_MAX + 1];
    uint8_t cookie[8];
    const uint8_t *p, *msg;
    uint16_t flags, ncodes, i, op;
    uint32_t msglen;
    answer steps;
    int32_t status;
    uint8_t *out;

    if (dns_shim__rd_u32(&rd) != DNS_SHIM__WIRE_REQUEST_MAGIC ||
        dns_shim__rd_u16(&rd) != DNS_SHIM__WIRE_VERSION) {
        *close_after = 1;
        return frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_BAD_ARGUMENT, "not a request of this "
                     "service's format (" PROG " speaks version 1)", NULL, len);
    }
    op = dns_shim__rd_u16(&rd);
    if (op == DNS_SHIM__WIRE_OP_PING && rd.left == 0 && !rd.bad)
        return frame(DNS_SHIM__WIRE_VERDICT, DNS_SHIM_OK, "", NULL, len);
    if (op == DNS_SHIM__WIRE_OP_ARES && !rd.bad)
        return serve_ares(rd.p, rd.left, len, close_after);
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    flags = dns_shim__rd_u16(&rd);
    cb.sections = dns_shim__rd_u32(&rd);
    ncodes = dns_shim__rd_u16(&rd);
    if (op != DNS_SHIM__WIRE_OP_PARSE || (flags & ~DNS_SHIM__WIRE_FLAGS) ||
        ncodes > DNS_SHIM__WIRE_CODES_MAX)
        goto malformed;
    for (i = 0; i < ncodes; i++)
        if (set_callback(&cb, dns_shim__rd_u16(&rd)) != 0)
            goto malformed;
    if (flags & DNS_SHIM__WIRE_QUERY) {
        uint16_t qlen;
        q.id = dns_shim__rd_u16(&rd);
        q.qtype = dns_shim__rd_u16(&rd);
        q.qclass = dns_shim__rd_u16(&rd);
        qlen = dns_shim__rd_u16(&rd);
        if (qlen > DNS_SHIM__WIRE_NAME_MAX || !dns_shim__rd_take(&rd, qlen, &p) ||
            memchr(p, '\0', qlen) != NULL)
            goto malformed;
        memcpy(qname, p, qlen);
        qname[qlen] = '\0';
        q.qname = qname;
        if (flags & DNS_SHIM__WIRE_MATCH_CASE)
            q.flags |= DNS_SHIM_MATCH_CASE;
        if (flags & DNS_SHIM__WIRE_COOKIE) {
            if (!dns_shim__rd_take(&rd, 8, &p))
                goto malformed;
            memcpy(cookie, p, 8);
            q.cookie_client = cookie;
        }
    } else if (flags & (DNS_SHIM__WIRE_MATCH_CASE | DNS_SHIM__WIRE_COOKIE)) {
        goto malformed;
    }
    msglen = dns_shim__rd_u32(&rd);
    if (msglen > 65535 || !dns_shim__rd_take(&rd, msglen, &msg) || rd.left != 0)
        goto malformed;

    memset(&steps, 0, sizeof steps);
    steps.w.realloc_fn = wr_realloc;
    steps.w.max = DNS_SHIM__WIRE_RESPONSE_MAX - 4096;
    cb.ctx = &steps;
    if (flags & DNS_SHIM__WIRE_QUERY)
        status = dns_shim_process_reply(msg, (int32_t)msglen, &q,
                                        (flags & DNS_SHIM__WIRE_CALLBACKS) ? &cb : NULL);
    else if (flags & DNS_SHIM__WIRE_CALLBACKS)
        status = dns_shim_process(msg, (int32_t)msglen, &cb);
    else
        status = process_dns_response((uint8_t *)(uintptr_t)msg, (int32_t)msglen);
    if (status == DNS_SHIM_ERR_CALLBACK && steps.w.bad)
        out = frame(DNS_SHIM__WIRE_FAULT, status, "the answer would be larger than the "
                    "service sends", NULL, len);
    else if (!dns_shim__wire_verdict(status))
        out = frame(DNS_SHIM__WIRE_FAULT, status, dns_shim_last_error(), NULL, len);
    else
        out = frame(DNS_SHIM__WIRE_VERDICT, status, dns_shim_last_error(),
                    status == DNS_SHIM_OK ? &steps : NULL, len);
    free(steps.w.buf);
    return out;

malformed:
    *close_after = 1;
    return frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_BAD_ARGUMENT, "a malformed request", NULL,
                 len);
}

/* ------------------------------------------------------------------ */
/* The workers                                                          */

/* A request's buffer, of the length its client announced: a large one
** (REQUEST_MAPPED and above) a mapping of its own, given back to the
** system when the request ends, so that a burst of clients announcing
** long requests (a thousand of 64 KiB) leaves nothing resident in the
** heap once they have gone; a small one from malloc. */
#define REQUEST_MAPPED (16 * 1024)

static uint8_t *request_new(size_t n)
{
    void *p;
    if (n < REQUEST_MAPPED)
        return malloc(n);
    p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void request_free(uint8_t *p, size_t n)
{
    if (p == NULL)
        return;
    if (n < REQUEST_MAPPED)
        free(p);
    else
        munmap(p, n);
}

static void wake(void)
{
    uint64_t one = 1;
    ssize_t rc;
    do
        rc = write(wake_fd, &one, sizeof one);
    while (rc < 0 && errno == EINTR);
}

/* At parallelism 1, the loop parses itself: no thread to hand a request
** to and back (two task switches a call). */
static int inline_parse = 0;

/* One request of the queue parsed and its answer queued for writing: 1, or
** 0 when there was none (with wait, once stopping). */
static int serve_one(int wait)
{
    int i;
    client *c;
    size_t len = 0;
    uint8_t *out;
    int close_after = 0;

    pthread_mutex_lock(&queue_lock);
    while (wait && queue_head < 0 && !stopping)
        pthread_cond_wait(&queue_cond, &queue_lock);
    if (queue_head < 0) {
        pthread_mutex_unlock(&queue_lock);
        return 0;
    }
    i = queue_head;
    c = &clients[i];
    queue_head = c->next;
    if (queue_head < 0)
        queue_tail = -1;
    pthread_mutex_unlock(&queue_lock);

    out = serve(c->request, c->length, &len, &close_after);
    request_free(c->request, c->length);
    c->request = NULL;
    pthread_mutex_lock(&queue_lock);
    if (out != NULL && answer_held + len > ANSWER_BUDGET) {
        /* Answers not yet read would hold too much: this client parses
        ** on its own. */
        free(out);
        out = frame(DNS_SHIM__WIRE_FAULT, DNS_SHIM_ERR_NO_MEMORY, "the service holds as "
                    "many answers as it may; parse this message in the process", NULL,
                    &len);
    }
    if (out != NULL)
        answer_held += len;
    c->answer = out;
    c->answer_len = out != NULL ? len : 0;
    c->close_after = close_after || out == NULL;
    c->next = done_head;
    done_head = i;
    pthread_mutex_unlock(&queue_lock);
    if (!inline_parse)
        wake();
    return 1;
}

static void *worker(void *arg)
{
    (void)arg;
    while (serve_one(1))
        ;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The loop                                                             */

static void drop(client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    request_free(c->request, c->length);
    if (c->answer != NULL) {
        pthread_mutex_lock(&queue_lock);
        answer_held -= c->answer_len;
        pthread_mutex_unlock(&queue_lock);
        free(c->answer);
    }
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->state = C_FREE;
    c->next = -1;
}

static void enqueue(int i)
{
    client *c = &clients[i];
    c->state = C_BUSY;
    c->next = -1;
    pthread_mutex_lock(&queue_lock);
    if (queue_tail < 0)
        queue_head = i;
    else
        clients[queue_tail].next = i;
    queue_tail = i;
    pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
}

/* Reads what the client sent; a whole request goes to the queue. */
static void readable(int i)
{
    client *c = &clients[i];
    for (;;) {
        ssize_t k;
        if (c->got < 4) {
            k = recv(c->fd, c->head + c->got, 4 - c->got, MSG_DONTWAIT);
        } else {
            k = recv(c->fd, c->request + (c->got - 4), c->length - (c->got - 4), MSG_DONTWAIT);
        }
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            drop(c);
            return;
        }
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (c->got == 0)
            c->deadline = now_ms() + IDLE_MS; /* a request's whole time starts */
        c->got += (size_t)k;
        if (c->got == 4) {
            c->length = (uint32_t)c->head[0] << 24 | (uint32_t)c->head[1] << 16 |
                        (uint32_t)c->head[2] << 8 | c->head[3];
            if (c->length < 8 || c->length > DNS_SHIM__WIRE_REQUEST_MAX) {
                drop(c); /* no request is that long: nothing to say to it */
                return;
            }
            c->request = request_new(c->length);
            if (c->request == NULL) {
                drop(c);
                return;
            }
        }
        if (c->got >= 4 && c->got == 4 + (size_t)c->length) {
            c->got = 0;
            enqueue(i);
            return;
        }
    }
}

static void writable(int i)
{
    client *c = &clients[i];
    while (c->sent < c->answer_len) {
        ssize_t k = send(c->fd, c->answer + c->sent, c->answer_len - c->sent,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (k <= 0) {
            drop(c);
            return;
        }
        c->sent += (size_t)k;
    }
    if (c->close_after) {
        drop(c);
        return;
    }
    pthread_mutex_lock(&queue_lock);
    answer_held -= c->answer_len;
    pthread_mutex_unlock(&queue_lock);
    free(c->answer);
    c->answer = NULL;
    c->answer_len = c->sent = 0;
    c->state = C_READ;
    c->deadline = now_ms() + IDLE_MS; /* to start the next request */
}

/* Until when accepting waits: no descriptor was left for a connection. */
static long accept_paused = 0;

static void accept_clients(int listen_fd)
{
    static int said = 0;
    for (;;) {
        size_t i;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE) {
                /* The connections wait in the backlog (their clients'
                ** bounded wait) until a descriptor is free. */
                if (!said++)
                    say("cannot take a connection: %s (said once)", strerror(errno));
                accept_paused = now_ms() + 50;
            }
            return;
        }
        for (i = 0; i < max_clients && clients[i].state != C_FREE; i++)
            ;
        if (i == max_clients) {
            close(fd); /* full: its client parses on its own at once */
            continue;
        }
        clients[i].fd = fd;
        clients[i].state = C_READ;
        clients[i].got = 0;
        clients[i].deadline = now_ms() + IDLE_MS;
        if (i + 1 > clients_top)
            clients_top = i + 1;
    }
}

/* Answers the workers finished: to be written. */
static void collect_done(void)
{
    int i;
    pthread_mutex_lock(&queue_lock);
    i = done_head;
    done_head = -1;
    pthread_mutex_unlock(&queue_lock);
    while (i >= 0) {
        client *c = &clients[i];
        int next = c->next;
        c->next = -1;
        if (c->answer == NULL) {
            drop(c);
        } else {
            c->state = C_WRITE;
            c->sent = 0;
            c->deadline = now_ms() + IDLE_MS;
            writable(i);
        }
        i = next;
    }
}

/* ------------------------------------------------------------------ */
/* Start                                                                */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: " PROG " [--socket PATH] [--parallelism N] [--memory-limit BYTES]\n"
            "                [--max-clients N] [--user NAME]\n"
            "       " PROG " --version | --help\n\n"
            "The parse service: parses DNS messages for every program that uses libdnsshim.\n\n"
            "  --socket PATH        the socket to serve (default " DNS_SHIM__SERVICE_SOCKET ")\n"
            "  --parallelism N      parse up to N messages at once (dns_shim_set_parallelism)\n"
            "  --memory-limit BYTES the runtime's memory limit (dns_shim_set_memory_limit);\n"
            "                       a message over it is parsed by its client itself\n"
            "  --max-clients N      connections at once (default %d)\n"
            "  --user NAME          run as root: the user to become once started (default\n"
            "                       nobody)\n"
            "  --version            the version, the library's and its runtime's\n"
            "  --help               this text\n\n"
            "man 8 dnsshimd\n", MAX_CLIENTS_DEFAULT);
}

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, PROG ": ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    return 2;
}

static int parse_number(const char *text, unsigned long long max, unsigned long long *out)
{
    char *end;
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno != 0 || *end != '\0' || *out > max ? -1 : 0;
}

/* The socket systemd passed (LISTEN_PID, LISTEN_FDS): its descriptor, -1
** when there is none, -2 when it is not a listening Unix stream socket. */
static int activated_socket(void)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    int type = 0, listening = 0, domain = 0;
    socklen_t len = sizeof type;
    if (pid == NULL || fds == NULL || strtol(pid, NULL, 10) != (long)getpid() ||
        strtol(fds, NULL, 10) < 1)
        return -1;
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
        return -2;
    len = sizeof listening;
    if (getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
        return -2;
    len = sizeof domain;
    if (getsockopt(3, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX)
        return -2;
    return 3;
}

/* Makes the socket at path: its descriptor, or -1 having said why. */
static int own_socket(const char *path)
{
    struct sockaddr_un addr;
    struct stat st;
    char dir[sizeof addr.sun_path];
    char *slash;
    int fd;

    if (strlen(path) >= sizeof addr.sun_path) {
        say("cannot serve %s: the path is longer than a socket's address holds (%zu)", path,
            sizeof addr.sun_path - 1);
        return -1;
    }
    memcpy(dir, path, strlen(path) + 1);
    slash = strrchr(dir, '/');
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            say("cannot make %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            say("cannot serve %s: a file that is not a socket is there", path);
            return -1;
        }
        unlink(path); /* a stale socket, or another service's: ours now */
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        say("socket: %s", strerror(errno));
        return -1;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, strlen(path) + 1);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || chmod(path, 0666) != 0 ||
        listen(fd, SOMAXCONN) != 0) {
        say("cannot serve %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* The descriptors --max-clients needs (a client's, and a few of the
** service's own): the soft limit raised towards the hard one; where that
** is not enough, fewer clients, said.  0, or -1 having said why not. */
static int descriptors_for(size_t *clients_max)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)*clients_max + 32;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < need) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = was;
    }
    if (rl.rlim_cur < need) {
        if (rl.rlim_cur < 64) {
            say("cannot start: %llu descriptors are too few (RLIMIT_NOFILE)",
                (unsigned long long)rl.rlim_cur);
            return -1;
        }
        say("%zu clients at once, not %zu: the descriptor limit is %llu (RLIMIT_NOFILE)",
            (size_t)(rl.rlim_cur - 32), *clients_max, (unsigned long long)rl.rlim_cur);
        *clients_max = (size_t)(rl.rlim_cur - 32);
    }
    return 0;
}

/* A socket made by root stays root's to remove: before giving up root, a
** child that keeps root and nothing else (no descriptor but its end of a
** pipe) waits for the service to stop (told at SIGTERM, which then waits
** for it) or to end, however it ends, then removes the socket if it is
** still the one the service made.  Returns 0, or -1 having said why not. */
static pid_t keeper_pid = -1;
static int keeper_fd = -1;

/* The socket removed now, by the child that kept root for it: told, then
** waited for, so that the socket is gone when this returns. */
static void remove_kept_socket(void)
{
    ssize_t rc;
    if (keeper_fd < 0)
        return;
    do
        rc = write(keeper_fd, "x", 1);
    while (rc < 0 && errno == EINTR);
    close(keeper_fd);
    keeper_fd = -1;
    while (waitpid(keeper_pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static int keep_socket(const char *path, int listen_fd)
{
    struct stat made;
    int ends[2], fd;
    pid_t pid;
    if (lstat(path, &made) != 0 || pipe2(ends, O_CLOEXEC) != 0) {
        say("cannot watch %s: %s", path, strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        say("cannot watch %s: %s", path, strerror(errno));
        close(ends[0]);
        close(ends[1]);
        return -1;
    }
    if (pid == 0) {
        struct stat now;
        char octet;
        sigset_t all;
        int kept;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, NULL); /* ends with the service, not with a signal */
        /* Nothing but the pipe: above all not the listening socket, which
        ** would keep it answering connections after the service ends. */
        kept = dup2(ends[0], 3);
        if (kept != 3) {
            if (kept >= 0)
                close(kept);
            _exit(1);
        }
        closefrom(4);
        fd = open("/dev/null", O_RDWR);
        if (fd >= 0) {
            dup2(fd, 0);
            dup2(fd, 1);
            if (fd > 2)
                close(fd);
        }
        (void)listen_fd;
        prctl(PR_SET_NAME, "dnsshimd-keep", 0, 0, 0);
        while (read(3, &octet, 1) < 0 && errno == EINTR)
            ;
        if (lstat(path, &now) == 0 && now.st_dev == made.st_dev && now.st_ino == made.st_ino)
            unlink(path);
        _exit(0);
    }
    close(ends[0]);
    keeper_pid = pid;
    keeper_fd = ends[1];
    return 0;
}

/* libdnsshim_ares, found as a program finds it (this program's run path,
** then the system's), and its parser started now, before the service
** gives up root: a request that finds it missing is a fault its client
** computes on its own. */
static void load_ares(void)
{
    static const uint8_t warm[] = {0, DNSSHIM_ARES_KIND_A, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12,
                                   0, 0, 0x81, 0x80, 0, 0, 0, 0, 0, 0, 0, 0};
    void *lib = dlopen("libdnsshim_ares.so.1", RTLD_NOW | RTLD_LOCAL);
    uint8_t *payload = NULL;
    size_t payload_len;
    int32_t status;

    if (lib != NULL)
        *(void **)&ares_serve = dlsym(lib, "dnsshim_ares__serve");
    if (ares_serve == NULL) {
        const char *why = dlerror();
        say("no c-ares layer (%s): the calls of libdnsshim_ares are computed in their own "
            "processes", why != NULL ? why : "it has no entry for the service");
        return;
    }
    if (ares_serve(warm, sizeof warm, &payload, &payload_len, &status) != DNSSHIM_ARES__SERVE_OK)
        say("the c-ares layer did not start: the calls of libdnsshim_ares are computed in "
            "their own processes");
    free(payload);
}

static int drop_root(const char *user)
{
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
        say("cannot become %s: no such user (--user)", user);
        return -1;
    }
    if (setgroups(0, NULL) != 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) != 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) != 0) {
        say("cannot become %s: %s", user, strerror(errno));
        return -1;
    }
    if (pw->pw_uid != 0 && setuid(0) == 0) {
        say("cannot become %s: root could be taken back", user);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = DNS_SHIM__SERVICE_SOCKET, *user = "nobody";
    unsigned long long parallelism = 0, limit = 0, n;
    int listen_fd, sig_fd, activated, i, rc, have_limit = 0, nworkers;
    pthread_t *workers;
    struct pollfd *fds;
    sigset_t mask;
    long grace = 0;
    int failed = 0;

    for (i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(opt, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(opt, "--version") == 0) {
            printf(PROG " %d.%d.%d, libdnsshim %s\n", DNS_SHIM_VERSION_MAJOR,
                   DNS_SHIM_VERSION_MINOR, DNS_SHIM_VERSION_PATCH, dns_shim_version());
            return 0;
        } else if (strcmp(opt, "--socket") == 0) {
            if (val == NULL || val[0] != '/')
                return usage_error("--socket takes an absolute path, not '%s'", val ? val : "");
            path = val;
        } else if (strcmp(opt, "--parallelism") == 0) {
            if (parse_number(val, DNS_SHIM_PARALLELISM_MAX, &parallelism) != 0)
                return usage_error("--parallelism takes 0 to 64, not '%s'", val ? val : "");
        } else if (strcmp(opt, "--memory-limit") == 0) {
            if (parse_number(val, SIZE_MAX, &limit) != 0)
                return usage_error("--memory-limit takes a number of bytes, not '%s'",
                                   val ? val : "");
            have_limit = 1;
        } else if (strcmp(opt, "--max-clients") == 0) {
            if (parse_number(val, MAX_CLIENTS_MAX, &n) != 0 || n == 0)
                return usage_error("--max-clients takes 1 to 65536, not '%s'", val ? val : "");
            max_clients = (size_t)n;
        } else if (strcmp(opt, "--user") == 0) {
            if (val == NULL || val[0] == '\0')
                return usage_error("--user takes a user's name%s", "");
            user = val;
        } else {
            return usage_error("unknown option '%s'", opt);
        }
        i++;
    }

    dns_shim__service_off();
    dns_shim_set_log_handler(library_log, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (have_limit && dns_shim_set_memory_limit((size_t)limit) != DNS_SHIM_OK) {
        say("cannot set the memory limit: %s", dns_shim_last_error());
        return 1;
    }
    if (parallelism > 1 && dns_shim_set_parallelism((uint32_t)parallelism) != DNS_SHIM_OK) {
        say("cannot parse %llu messages at once: %s", parallelism, dns_shim_last_error());
        return 1;
    }
    activated = activated_socket();
    if (activated == -2) {
        say("the socket passed by socket activation is not a listening Unix stream socket");
        return 1;
    }
    if (dns_shim_init() != DNS_SHIM_OK) {
        say("cannot start: %s", dns_shim_last_error());
        return 1;
    }
    load_ares();
    listen_fd = activated >= 0 ? activated : own_socket(path);
    if (listen_fd < 0)
        return 1;
    if (activated < 0 && geteuid() == 0 &&
        (keep_socket(path, listen_fd) != 0 || drop_root(user) != 0)) {
        unlink(path);
        return 1;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        say("no_new_privs: %s", strerror(errno));
    rc = fcntl(listen_fd, F_GETFL);
    if (rc < 0 || fcntl(listen_fd, F_SETFL, rc | O_NONBLOCK) != 0) {
        say("cannot serve: %s", strerror(errno));
        return 1;
    }

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* the workers inherit it */
    sig_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (descriptors_for(&max_clients) != 0)
        return 1;
    clients = calloc(max_clients, sizeof *clients);
    fds = calloc(max_clients + 3, sizeof *fds);
    nworkers = parallelism > 1 ? (int)parallelism : 0;
    inline_parse = nworkers == 0;
    workers = calloc((size_t)nworkers + 1, sizeof *workers);
    if (sig_fd < 0 || wake_fd < 0 || clients == NULL || fds == NULL || workers == NULL) {
        say("cannot start: %s", strerror(errno ? errno : ENOMEM));
        return 1;
    }
    for (n = 0; n < max_clients; n++) {
        clients[n].fd = -1;
        clients[n].next = -1;
    }
    for (i = 0; i < nworkers; i++)
        if ((rc = pthread_create(&workers[i], NULL, worker, NULL)) != 0) {
            say("cannot start a worker: %s", strerror(rc));
            return 1;
        }
    say("serving %s: %s, %d parse%s at once", activated >= 0 ? "the socket systemd passed"
        : path, dns_shim_version(), nworkers ? nworkers : 1, nworkers > 1 ? "s" : "");

    for (;;) {
        size_t nfds = 0, k, top = clients_top, used = 0;
        long now = now_ms(), next = now + IDLE_MS;
        int busy = 0;

        if (!grace && now >= accept_paused) {
            fds[nfds].fd = listen_fd;
            fds[nfds++].events = POLLIN;
        } else {
            fds[nfds].fd = -1;
            fds[nfds++].events = 0;
        }
        fds[nfds].fd = sig_fd;
        fds[nfds++].events = POLLIN;
        fds[nfds].fd = wake_fd;
        fds[nfds++].events = POLLIN;
        for (k = 0; k < top; k++) {
            client *c = &clients[k];
            fds[nfds + k].fd = -1;
            fds[nfds + k].events = 0;
            fds[nfds + k].revents = 0;
            if (c->state == C_FREE)
                continue;
            if (c->state == C_BUSY) {
                busy = 1;
                used = k + 1;
                continue;
            }
            if (c->deadline <= now || (grace && c->state == C_READ && c->got == 0)) {
                drop(c); /* silent too long, or nothing asked while stopping */
                continue;
            }
            used = k + 1;
            busy |= grace != 0;
            if (c->deadline < next)
                next = c->deadline;
            fds[nfds + k].fd = c->fd;
            fds[nfds + k].events = c->state == C_READ ? POLLIN : POLLOUT;
        }
        if (grace && !busy)
            break;
        if (grace && now >= grace) {
            say("stopping with requests unanswered after %d ms", IDLE_MS);
            break;
        }
        if (!grace && now < accept_paused && accept_paused < next)
            next = accept_paused;
        /* slots above the last in use are free: polled and scanned no more
        ** (one freed later in this turn only leaves a free slot below) */
        clients_top = top = used;
        rc = poll(fds, nfds + top, (int)(next - now > 0 ? next - now : 0));
        if (rc < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            failed = 1;
            break;
        }
        if (rc <= 0)
            continue;
        if (fds[1].revents & POLLIN) {
            struct signalfd_siginfo info;
            while (read(sig_fd, &info, sizeof info) > 0)
                ;
            if (!grace) {
                say("stopping: answering the requests received");
                grace = now_ms() + IDLE_MS;
                if (activated < 0) {
                    /* New clients parse on their own at once: no one
                    ** listens (the socket's removal may wait for the
                    ** process that kept root for it, at exit). */
                    close(listen_fd);
                    listen_fd = -1;
                    unlink(path);
                    remove_kept_socket();
                }
            }
        }
        if (fds[2].revents & POLLIN) {
            uint64_t v;
            while (read(wake_fd, &v, sizeof v) > 0)
                ;
            collect_done();
        }
        for (k = 0; k < top; k++) {
            struct pollfd *f = &fds[nfds + k];
            if (f->fd < 0 || f->revents == 0 || clients[k].fd != f->fd)
                continue;
            if (clients[k].state == C_READ)
                readable((int)k);
            else if (clients[k].state == C_WRITE)
                writable((int)k);
        }
        if (inline_parse && serve_one(0)) {
            while (serve_one(0))
                ;
            collect_done();
        }
        if (!grace && (fds[0].revents & POLLIN))
            accept_clients(listen_fd);
    }

    pthread_mutex_lock(&queue_lock);
    stopping = 1;
    queue_head = queue_tail = -1;
    pthread_cond_broadcast(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
    for (i = 0; i < nworkers; i++)
        pthread_join(workers[i], NULL);
    for (n = 0; n < max_clients; n++)
        if (clients[n].state != C_FREE)
            drop(&clients[n]);
    if (listen_fd >= 0)
        close(listen_fd);
    close(sig_fd);
    close(wake_fd);
    free(clients);
    free(fds);
    free(workers);
    say("stopped");
    return failed;
}
