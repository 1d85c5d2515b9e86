/*
** nss_dnsshim.c: libnss_dnsshim.so.2, a glibc NSS "hosts" module whose
** replies are parsed by libdnsshim (dnspython), never by glibc's parser.
**
** Turned on by the word "dnsshim" in nsswitch.conf ("hosts: files dnsshim").
** The transport is glibc's resolver: the thread's resolver state (_res, as
** dns takes it: resolv.conf's settings, or the program's own where it set
** them), each query made by res_nmkquery and sent by res_nsend, which
** tries the name servers, waits and repeats as resolv.conf says and goes to
** TCP after a truncated reply; the A and AAAA pair of a getaddrinfo goes
** out at once, by this module's port of glibc's send_dg (res_send.c),
** which public res_nsend cannot do.  What glibc's nss_dns then hands to its C
** parser, this module hands to dns_shim_process_reply, against the query it
** sent; only a reply the library accepted whole is read, through the
** library's callbacks.  The search list is walked as glibc's res_nsearch
** walks it (__res_context_search), so that a name is looked up under the
** same names in the same order, and the answers are made as nss_dns makes
** them (resolv/nss_dns/dns-host.c), so that a program sees what it saw with
** "dns" for every well-formed reply.
**
** A reply the library refuses gives no address: NSS_STATUS_TRYAGAIN with
** h_errno TRY_AGAIN (getaddrinfo's EAI_AGAIN).  Not NOTFOUND: that would let
** the search list go on to the next name, an answer a spoofer could then
** choose, and a refusal may be a forged or damaged datagram that a later
** try does not meet.  A runtime that cannot start (a broken installation,
** the memory limit) is NSS_STATUS_UNAVAIL, so that the administrator's
** [UNAVAIL=...] action or the next source decides (nsswitch.conf(5)).
**
** Diagnostics go to syslog (the daemon facility), one line each, prefixed
** "libnss_dnsshim: "; DNS_SHIM_NSS_LOG=stderr sends them to stderr, =none
** drops them.  The variable is read with secure_getenv: a setuid program
** logs to syslog whatever its user set.  Nothing else is written into the
** program.  The module keeps no state of its own between lookups but the
** library's; every lookup is thread-safe.
*/
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <nss.h>
#include <poll.h>
#include <pthread.h>
#include <resolv.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <syslog.h>

#include <dlfcn.h>

#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"

#define NSS_DNSSHIM_API __attribute__((visibility("default")))

/* The EDNS0 payload glibc's resolver advertises (RESOLV_EDNS_BUFFER_SIZE). */
#define NSS_DNSSHIM_EDNS_PAYLOAD 1200
/* The largest reply: a TCP message. */
#define NSS_DNSSHIM_ANSWER_MAX 65536

/* ------------------------------------------------------------------ */
/* Diagnostics                                                          */

enum { NSS_LOG_SYSLOG, NSS_LOG_STDERR, NSS_LOG_NONE };

static int nss_log_where(void)
{
    const char *where = secure_getenv("DNS_SHIM_NSS_LOG");
    if (where != NULL && strcmp(where, "stderr") == 0)
        return NSS_LOG_STDERR;
    if (where != NULL && strcmp(where, "none") == 0)
        return NSS_LOG_NONE;
    return NSS_LOG_SYSLOG;
}

/* One line where the diagnostics go; a message of several lines (a
** traceback) is written line by line. */
static void nss_say(int priority, const char *fmt, ...)
{
    char text[2048];
    char *line, *next;
    va_list ap;
    int where = nss_log_where();

    if (where == NSS_LOG_NONE)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (line = text; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        if (where == NSS_LOG_STDERR)
            fprintf(stderr, "libnss_dnsshim: %s\n", line);
        else
            syslog(LOG_DAEMON | priority, "libnss_dnsshim: %s", line);
    }
    if (where == NSS_LOG_STDERR)
        fflush(stderr);
}

/* The library's diagnostics (a start that failed, with its traceback):
** where the module's go, at their syslog severity, unless the program set
** a handler of its own. */
DNS_SHIM__HIDDEN void nss_dnsshim__library_log(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    if (level > DNS_SHIM_LOG_WARNING)
        return;
    nss_say(level == DNS_SHIM_LOG_ERROR ? LOG_ERR : LOG_WARNING, "%s", message);
}

/* The service's client, compiled in (nss_client.c): its messages go where
** the module's go. */
DNS_SHIM__HIDDEN void nss_dnsshim__client_start(void);

/* ------------------------------------------------------------------ */
/* libdnsshim, loaded for a reply the service does not parse            */

/* The module asks the parse service itself (csrc/lib/service.c, compiled
** in: nss_client.c).  Only a reply it must parse in the process loads
** libdnsshim, once, RTLD_LOCAL, by its SONAME: found beside this module
** ($ORIGIN) or where the dynamic linker looks (in a setuid program, where
** glibc ignores $ORIGIN, by ld.so.cache).  A program whose lookups the
** service parses maps neither libdnsshim nor libpython. */
#define NSS_DNSSHIM_LIBRARY "libdnsshim.so.1"

typedef struct nss_library {
    /* DNSSHIM_PRIVATE: dns_shim_process_reply in the process, the service
    ** already asked; where diagnostics go while the program set no handler */
    int32_t (*process_reply)(const uint8_t *, int32_t, const dns_shim_query *,
                             const dns_shim_callbacks *);
    void (*set_default_log_handler)(dns_shim_log_handler, void *);
    const char *(*last_error)(void);
} nss_library;

static pthread_once_t nss_once = PTHREAD_ONCE_INIT;
static pthread_once_t nss_client_once = PTHREAD_ONCE_INIT;
static nss_library nss_lib;
static int nss_lib_loaded = 0;
static char nss_lib_error[512];

static void nss_load(void)
{
    void *handle = dlopen(NSS_DNSSHIM_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    const char *why = NULL;
    if (handle == NULL) {
        why = dlerror();
    } else {
        *(void **)&nss_lib.process_reply = dlsym(handle, "dns_shim__process_reply_local");
        *(void **)&nss_lib.set_default_log_handler =
            dlsym(handle, "dns_shim__set_default_log_handler");
        *(void **)&nss_lib.last_error = dlsym(handle, "dns_shim_last_error");
        if (nss_lib.process_reply == NULL || nss_lib.set_default_log_handler == NULL ||
            nss_lib.last_error == NULL)
            why = "it is older than this module (no dns_shim__process_reply_local)";
    }
    if (why != NULL) {
        snprintf(nss_lib_error, sizeof nss_lib_error, "DNS_SHIM_ERR_INIT: cannot load "
                 NSS_DNSSHIM_LIBRARY ": %s; install the libdnsshim1 package, or the module's "
                 "own libdnsshim beside it", why);
        nss_say(LOG_ERR, "%s", nss_lib_error + sizeof "DNS_SHIM_ERR_INIT: " - 1);
        return;
    }
    nss_lib.set_default_log_handler(nss_dnsshim__library_log, NULL);
    nss_lib_loaded = 1;
}

/* The library, loaded once; NULL when it cannot be (said once). */
static const nss_library *nss_library_get(void)
{
    pthread_once(&nss_once, nss_load);
    return nss_lib_loaded ? &nss_lib : NULL;
}

/* A reply parsed: by the service when one answers, else by libdnsshim in
** the process.  The status, and *detail the call's dns_shim_last_error. */
static int32_t nss_parse_here(const unsigned char *answer, int n, const dns_shim_query *asked,
                              const dns_shim_callbacks *callbacks, const char **detail)
{
    const nss_library *lib;
    int32_t status;
    lib = nss_library_get();
    if (lib == NULL) {
        *detail = nss_lib_error;
        return DNS_SHIM_ERR_INIT;
    }
    status = lib->process_reply(answer, n, asked, callbacks);
    *detail = lib->last_error();
    return status;
}

static int32_t nss_parse(const unsigned char *answer, int n, const dns_shim_query *asked,
                         const dns_shim_callbacks *callbacks, const char **detail)
{
    int32_t status;
    pthread_once(&nss_client_once, nss_dnsshim__client_start);
    if (dns_shim__service_run(answer, n, asked, callbacks, &status)) {
        *detail = dns_shim__error;
        return status;
    }
    return nss_parse_here(answer, n, asked, callbacks, detail);
}

/* ------------------------------------------------------------------ */
/* One reply, as the library delivered it                               */

typedef struct nss_rr {
    uint16_t type;           /* ns_t_a, ns_t_aaaa, ns_t_cname, ns_t_ptr */
    uint32_t ttl;
    char *owner;
    char *target;            /* CNAME, PTR */
    unsigned char addr[16];  /* A: 4 octets, AAAA: 16 */
} nss_rr;

typedef struct nss_reply {
    uint16_t qtype;
    uint16_t rcode;
    uint16_t ancount;
    char *qname;             /* the question's name as the reply has it */
    nss_rr *rr;
    size_t n, cap;
    int no_memory;
} nss_reply;

static void nss_reply_free(nss_reply *reply)
{
    size_t i;
    for (i = 0; i < reply->n; i++) {
        free(reply->rr[i].owner);
        free(reply->rr[i].target);
    }
    free(reply->rr);
    free(reply->qname);
    memset(reply, 0, sizeof *reply);
}

static nss_rr *nss_reply_add(nss_reply *reply, uint16_t type, const dns_shim_rr *rr,
                             const char *target)
{
    nss_rr *slot;
    if (reply->n == reply->cap) {
        size_t cap = reply->cap ? reply->cap * 2 : 8;
        nss_rr *grown = realloc(reply->rr, cap * sizeof *grown);
        if (grown == NULL)
            goto no_memory;
        reply->rr = grown;
        reply->cap = cap;
    }
    slot = &reply->rr[reply->n];
    memset(slot, 0, sizeof *slot);
    slot->type = type;
    slot->ttl = rr->ttl;
    slot->owner = strdup(rr->owner);
    slot->target = target != NULL ? strdup(target) : NULL;
    if (slot->owner == NULL || (target != NULL && slot->target == NULL)) {
        free(slot->owner);
        free(slot->target);
        goto no_memory;
    }
    reply->n++;
    return slot;
no_memory:
    reply->no_memory = 1;
    return NULL;
}

static int32_t nss_on_header(void *ctx, const dns_shim_header *header)
{
    nss_reply *reply = ctx;
    reply->rcode = header->rcode;
    reply->ancount = header->ancount;
    reply->qname = strdup(header->qname != NULL ? header->qname : ".");
    if (reply->qname == NULL) {
        reply->no_memory = 1;
        return 1;
    }
    return 0;
}

static int32_t nss_on_a(void *ctx, const dns_shim_a *record)
{
    nss_rr *rr = nss_reply_add(ctx, ns_t_a, &record->rr, NULL);
    if (rr == NULL)
        return 1;
    memcpy(rr->addr, record->address, 4);
    return 0;
}

static int32_t nss_on_aaaa(void *ctx, const dns_shim_aaaa *record)
{
    nss_rr *rr = nss_reply_add(ctx, ns_t_aaaa, &record->rr, NULL);
    if (rr == NULL)
        return 1;
    memcpy(rr->addr, record->address, 16);
    return 0;
}

static int32_t nss_on_cname(void *ctx, const dns_shim_target *record)
{
    return nss_reply_add(ctx, ns_t_cname, &record->rr, record->target) == NULL;
}

static int32_t nss_on_ptr(void *ctx, const dns_shim_target *record)
{
    return nss_reply_add(ctx, ns_t_ptr, &record->rr, record->target) == NULL;
}

/* ------------------------------------------------------------------ */
/* Asking: one question, one reply                                      */

/* How a lookup ended, as glibc's resolver says it: h_errno, the errno of
** the send, and whether the library refused a reply or the runtime failed. */
typedef struct nss_outcome {
    int herrno;              /* NETDB_SUCCESS, HOST_NOT_FOUND, NO_DATA, ...:
                             ** the resolver's verdict (res_h_errno), set
                             ** with nss_herrno */
    int sys_errno;           /* errno as glibc's search leaves it: 0 at its
                             ** start, then as each res_nsend left it (0
                             ** after a reply, ETIMEDOUT, ECONNREFUSED...);
                             ** a lookup that succeeds leaves it in errno,
                             ** as nss_dns's does (it restores errno only
                             ** when the search fails) */
    int refused;             /* a reply the library refused: its status */
    int runtime;             /* the runtime failed: its status */
    uint16_t last_rcode;     /* the RCODE in the first answer buffer of the
                             ** last name asked (the search list's SERVFAIL
                             ** rule): of the reply, or of the error reply
                             ** res_nsend left there, NOERROR if none */
} nss_outcome;

/* The resolver's verdict, where glibc's resolver gives it
** (RES_SET_H_ERRNO): in its state and in the thread's h_errno.  nss_dns's
** callers read the one it leaves (Python's gethostbyaddr reads h_errno,
** whatever h_errnop it passed), so the module leaves the same, at the same
** steps of the same search. */
static void nss_herrno(nss_outcome *out, int value)
{
    out->herrno = value;
    h_errno = value;
}

/* The names compared as DNS compares them: ASCII letters without case, as
** presentation text from the same writer (the library's, for both). */
static int nss_same_name(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

static const char *nss_type_name(int qtype)
{
    return qtype == ns_t_a ? "A" : qtype == ns_t_aaaa ? "AAAA" : "PTR";
}

/* Whether the question's type and class at `p` (before `end`) are `qtype`
** and IN. */
static int nss_type_in(const unsigned char *p, const unsigned char *end, int qtype)
{
    return end - p >= 4 && p[0] == (qtype >> 8) && p[1] == (qtype & 0xff) && p[2] == 0
           && p[3] == ns_c_in;
}

/* Whether the reply in `answer` (up to `end`) has one question whose type
** is `qtype` and class IN, after a name: glibc's qtype_matches, on the
** module's own buffer, not a parse (nothing of it is read as an answer). */
static int nss_question_is(const unsigned char *answer, const unsigned char *end, int qtype)
{
    int skip = dn_skipname(answer + NS_HFIXEDSZ, end);
    return skip >= 0 && nss_type_in(answer + NS_HFIXEDSZ + skip, end, qtype);
}

/* One question as the module sends it: the query's octets, the name they
** ask in presentation form and the type asked (an A question stands for
** an AAAA one under no-aaaa). */
typedef struct nss_question {
    unsigned char query[NS_MAXMSG < 1024 ? NS_MAXMSG : 1024];
    int qlen;
    int qtype;               /* the type the caller wants */
    int sent;                /* the type in the query */
    int no_aaaa;
    char qname[NS_MAXDNAME + 1];
} nss_question;

/* Makes the query for `name` and `qtype` as glibc's __res_context_query
** makes it: 0, or -1 with `out` saying why. */
static int nss_make(res_state res, const char *name, int qtype, nss_question *q,
                    nss_outcome *out)
{
    q->qtype = qtype;
    q->no_aaaa = qtype == ns_t_aaaa && (res->options & RES_NOAAAA);
    q->sent = q->no_aaaa ? ns_t_a : qtype;
    q->qlen = res_nmkquery(res, ns_o_query, name, ns_c_in, q->sent, NULL, 0, NULL, q->query,
                           (int)sizeof q->query - 11);
    if (q->qlen <= 0) {
        nss_herrno(out, NO_RECOVERY);
        return -1;
    }
    if ((res->options & (RES_USE_EDNS0 | RES_USE_DNSSEC)) && !q->no_aaaa) {
        /* the OPT record glibc's res_nquery adds (__res_nopt) */
        static const unsigned char opt[11] = {0, 0, ns_t_opt,
                                              NSS_DNSSHIM_EDNS_PAYLOAD >> 8,
                                              NSS_DNSSHIM_EDNS_PAYLOAD & 0xff};
        memcpy(q->query + q->qlen, opt, sizeof opt);
        if (res->options & RES_USE_DNSSEC)
            q->query[q->qlen + 7] = 0x80; /* DO */
        q->qlen += (int)sizeof opt;
        q->query[11] = 1; /* ARCOUNT */
    }
    /* The question as sent, in presentation form: from the bytes this
    ** module made, the name the reply must answer. */
    if (dn_expand(q->query, q->query + q->qlen, q->query + NS_HFIXEDSZ, q->qname,
                  sizeof q->qname) < 0) {
        nss_herrno(out, NO_RECOVERY);
        return -1;
    }
    if (q->qname[0] == '\0')
        strcpy(q->qname, ".");
    return 0;
}

/* What a reply's parse is given: the question it must answer, and the
** callbacks that read its answer section into `reply`. */
typedef struct nss_call {
    dns_shim_query asked;
    dns_shim_callbacks callbacks;
} nss_call;

static void nss_call_make(const nss_question *q, nss_reply *reply, nss_call *c)
{
    memset(c, 0, sizeof *c);
    c->asked.struct_size = sizeof c->asked;
    c->asked.id = (uint16_t)(q->query[0] << 8 | q->query[1]);
    c->asked.qname = q->qname;
    c->asked.qtype = (uint16_t)q->sent;
    c->asked.qclass = ns_c_in;
    c->callbacks.struct_size = sizeof c->callbacks;
    c->callbacks.sections = DNS_SHIM_SECTION_ANSWER;
    c->callbacks.ctx = reply;
    c->callbacks.on_header = nss_on_header;
    if (!q->no_aaaa) {
        c->callbacks.on_a = nss_on_a;
        c->callbacks.on_aaaa = nss_on_aaaa;
        c->callbacks.on_cname = nss_on_cname;
        c->callbacks.on_ptr = nss_on_ptr;
    }
}

/* What a parse of the reply to `q` came to (its status, and detail the
** call's dns_shim_last_error): 0 when the library accepted the whole reply
** (whatever its RCODE), else -1 with `out` saying why and `reply` freed. */
static int nss_took(const nss_question *q, nss_reply *reply, nss_outcome *out, int32_t status,
                    const char *detail)
{
    if (status == DNS_SHIM_OK && !reply->no_memory) {
        if (q->no_aaaa)
            reply->ancount = 0; /* the A reply's header and question alone */
        return 0;
    }
    if (reply->no_memory || status == DNS_SHIM_ERR_NO_MEMORY || status == DNS_SHIM_ERR_INIT
        || status == DNS_SHIM_ERR_INTERNAL || status == DNS_SHIM_ERR_UNSUPPORTED) {
        out->runtime = reply->no_memory ? DNS_SHIM_ERR_NO_MEMORY : status;
        nss_herrno(out, NO_RECOVERY);
        out->sys_errno = reply->no_memory || status == DNS_SHIM_ERR_NO_MEMORY ? ENOMEM : ENOENT;
        /* a start that failed was logged by the library, once, with what
        ** it tried and the fix */
        if (status != DNS_SHIM_ERR_INIT)
            nss_say(LOG_ERR, "%s %s: cannot parse: %s", q->qname, nss_type_name(q->sent),
                    reply->no_memory ? "out of memory" : detail);
    } else {
        out->refused = status;
        nss_herrno(out, TRY_AGAIN);
        nss_say(LOG_WARNING, "%s %s: reply refused: %s", q->qname, nss_type_name(q->sent),
                detail);
    }
    nss_reply_free(reply);
    return -1;
}

/* Reads the reply of `n` octets to question `q` into `reply` (answer
** section), through the library: 0 when it accepted the whole reply
** (whatever its RCODE), else -1 with `out` saying why. */
static int nss_read(const nss_question *q, const unsigned char *answer, int n,
                    nss_reply *reply, nss_outcome *out)
{
    int32_t status;
    int saved_errno;
    const char *detail = "";
    nss_call c;

    nss_call_make(q, reply, &c);
    /* the parse leaves errno as the send left it: glibc's parser does not
    ** touch it, and a caller reads it (the service's socket, the runtime's
    ** files are no business of the lookup's) */
    saved_errno = errno;
    status = nss_parse(answer, n, &c.asked, &c.callbacks, &detail);
    errno = saved_errno;
    return nss_took(q, reply, out, status, detail);
}

/* nss_read for the two replies of the pair, read in that order: through
** the service both at once (dns_shim__service_run_pair: the second parsed
** while the first's answer comes back), each the service did not answer
** in the process.  0 when the library accepted both whole, else -1 with
** `out` saying why and both replies freed (the second is not parsed
** where the first was refused). */
static int nss_read_pair(const nss_question *const q[2], const unsigned char *const answer[2],
                         const int n[2], nss_reply *replies, nss_outcome *out)
{
    nss_call c[2];
    const dns_shim_query *asked[2];
    const dns_shim_callbacks *callbacks[2];
    int32_t status[2];
    int served[2], saved_errno = errno, i;
    const char *detail;

    for (i = 0; i < 2; i++) {
        nss_call_make(q[i], &replies[i], &c[i]);
        asked[i] = &c[i].asked;
        callbacks[i] = &c[i].callbacks;
    }
    pthread_once(&nss_client_once, nss_dnsshim__client_start);
    dns_shim__service_run_pair(answer, n, asked, callbacks, status, served);
    for (i = 0; i < 2; i++) {
        detail = dns_shim__error;
        if (!served[i])
            status[i] = nss_parse_here(answer[i], n[i], asked[i], callbacks[i], &detail);
        errno = saved_errno;
        if (nss_took(q[i], &replies[i], out, status[i], detail) < 0) {
            /* (nss_took freed this one) */
            nss_reply_free(&replies[i == 0 ? 1 : 0]);
            return -1;
        }
    }
    return 0;
}

/* Asks `name` for `qtype` alone, through res_nsend, and reads the reply
** into `reply` (answer section); returns 0 when the library accepted it
** whole (whatever its RCODE), -2 when no server answered usefully
** (res_nsend failed: a timeout, or every server's reply an error such as
** SERVFAIL), -1 otherwise with `out` saying why.
**
** With "options no-aaaa" (RES_NOAAAA) an AAAA question is asked as glibc's
** __res_context_query asks it (__res_handle_no_aaaa, res-noaaaa.c): as an
** A question, without EDNS, whose reply stands for the AAAA one with its
** RCODE and no record: NXDOMAIN stays NXDOMAIN, an answer becomes NODATA.
** The module never gives res_nsend the AAAA question itself: glibc's
** public res_nsend does the same translation, but returns without giving
** back the resolver context it took (context_send_common), and the
** caller's own __resolv_context_put (getaddrinfo's, gethostbyname2_r's)
** then fails its assertion and aborts the program. */
static int nss_ask(res_state res, const char *name, int qtype, unsigned char *answer,
                   nss_reply *reply, nss_outcome *out)
{
    nss_question q;
    int n;

    memset(reply, 0, sizeof *reply);
    reply->qtype = (uint16_t)qtype;
    if (nss_make(res, name, qtype, &q, out) < 0)
        return -1;
    /* under no-aaaa the whole buffer, as __res_handle_no_aaaa clears it:
    ** what a failed send leaves there is read below */
    memset(answer, 0, q.no_aaaa ? NSS_DNSSHIM_ANSWER_MAX : NS_HFIXEDSZ);
    n = res_nsend(res, q.query, q.qlen, answer, NSS_DNSSHIM_ANSWER_MAX);
    out->sys_errno = errno;
    if (n < 0 && q.no_aaaa && !nss_question_is(answer, answer + NSS_DNSSHIM_ANSWER_MAX, ns_t_a)) {
        /* No reply at all (a timeout, no server): __res_handle_no_aaaa
        ** leaves the cleared buffer and the query's length, which
        ** __res_context_query reads as a NOERROR reply without an answer:
        ** NODATA, errno the send's. */
        reply->qname = strdup(".");
        if (reply->qname == NULL) {
            reply->no_memory = 1;
            out->runtime = DNS_SHIM_ERR_NO_MEMORY;
            nss_herrno(out, NO_RECOVERY);
            out->sys_errno = ENOMEM;
            nss_say(LOG_ERR, "%s %s: cannot parse: out of memory", q.qname,
                    nss_type_name(q.sent));
            return -1;
        }
        return 0;
    }
    if (n < 0) {
        /* the RCODE of the error reply res_nsend may have left (glibc's
        ** search reads it so): four bits of this module's own buffer, not
        ** a parse */
        reply->rcode = answer[3] & 0x0f;
        return -2;
    }
    return nss_read(&q, answer, n, reply, out);
}

/* ------------------------------------------------------------------ */
/* Asking: the A and AAAA questions at once                             */

/* The pair of questions on their way, as glibc's __res_context_send and
** send_dg (resolv/res_send.c) send them for T_QUERY_A_AND_AAAA: both
** datagrams to a server at once on one connected socket, the replies taken
** in whichever order they come, each matched to its question by ID and
** question (res_queriesmatch); the next server on a timeout, an error
** reply (SERVFAIL, NOTIMP, REFUSED) or a lame one, with each server's
** share of resolv.conf's timeout, attempts and rotate; one question at a
** time (single-request, then single-request-reopen) when a server answered
** one and not the other.  The replies are kept in the order they came, as
** glibc keeps them, since that order decides the verdict on an empty pair
** and which answer names the host. */
typedef struct nss_pair {
    const nss_question *q[2];
    unsigned char *answer[2]; /* the first reply taken, then the second */
    int len[2];               /* glibc's resplen and *resplen2 */
    int which[2];             /* the question each answers: 0, 1; -1 none */
    int fd[MAXNS];            /* a connected socket per server, or -1 */
} nss_pair;

/* glibc's __res_iclose for the datagram sockets. */
static void nss_pair_close(nss_pair *p)
{
    int i;
    for (i = 0; i < MAXNS; i++) {
        if (p->fd[i] >= 0)
            close(p->fd[i]);
        p->fd[i] = -1;
    }
}

/* The address of server `ns` (glibc's __res_get_nsaddr): an IPv6 server's
** is in the extension res_init fills. */
static const struct sockaddr *nss_server(res_state res, int ns)
{
    if (res->nsaddr_list[ns].sin_family == 0 && res->_u._ext.nsaddrs[ns] != NULL)
        return (const struct sockaddr *)res->_u._ext.nsaddrs[ns];
    return (const struct sockaddr *)&res->nsaddr_list[ns];
}

/* glibc's reopen: 1 with server `ns`'s socket connected, 0 when it cannot
** be connected (the next server), -1 with *terrno when no socket can be
** made (the send ends). */
static int nss_pair_open(res_state res, nss_pair *p, int ns, int *terrno)
{
    const struct sockaddr *server;
    socklen_t slen = 0;
    int one = 1, r;
    if (p->fd[ns] >= 0)
        return 1;
    server = nss_server(res, ns);
    if (server->sa_family == AF_INET6 && !res->ipv6_unavail) {
        p->fd[ns] = socket(PF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p->fd[ns] < 0)
            res->ipv6_unavail = errno == EAFNOSUPPORT;
        slen = sizeof(struct sockaddr_in6);
    } else if (server->sa_family == AF_INET) {
        p->fd[ns] = socket(PF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        slen = sizeof(struct sockaddr_in);
    } else {
        errno = EAFNOSUPPORT;
    }
    if (p->fd[ns] < 0) {
        *terrno = errno;
        return -1;
    }
    /* full ICMP error reporting (__res_enable_icmp): an unreachable
    ** server is known at once, not after the timeout */
    r = server->sa_family == AF_INET
            ? setsockopt(p->fd[ns], SOL_IP, IP_RECVERR, &one, sizeof one)
            : setsockopt(p->fd[ns], SOL_IPV6, IPV6_RECVERR, &one, sizeof one);
    if (r < 0) {
        *terrno = errno;
        nss_pair_close(p);
        errno = *terrno;
        return -1;
    }
    if (connect(p->fd[ns], server, slen) < 0) {
        nss_pair_close(p);
        return 0;
    }
    return 1;
}

/* Whether `reply` (n octets) answers question `q`: its ID, and its one
** question the query's (glibc's res_queriesmatch: the name without case,
** the type and the class).  An error reply of the header alone, no
** question, is taken for the question of its ID, as glibc takes it since
** 2.41 (resolvers that send REFUSED without the question). */
static int nss_pair_matches(const nss_question *q, const unsigned char *reply, int n)
{
    char name[NS_MAXDNAME + 1];
    const unsigned char *end = reply + n;
    int skip, rcode = reply[3] & 0x0f;
    if (reply[0] != q->query[0] || reply[1] != q->query[1])
        return 0;
    if (n == NS_HFIXEDSZ && reply[4] == 0 && reply[5] == 0
        && (rcode == ns_r_servfail || rcode == ns_r_notimpl || rcode == ns_r_refused))
        return 1;
    if (reply[4] != 0 || reply[5] != 1)
        return 0;
    skip = dn_expand(reply, end, reply + NS_HFIXEDSZ, name, sizeof name);
    if (skip < 0)
        return 0;
    if (name[0] == '\0')
        strcpy(name, ".");
    return nss_same_name(name, q->qname) && nss_type_in(reply + NS_HFIXEDSZ + skip, end, q->sent);
}

/* A point in time, CLOCK_MONOTONIC. */
static void nss_now(struct timespec *t)
{
    clock_gettime(CLOCK_MONOTONIC, t);
}

/* glibc's send_dg for a pair, with server `ns`: the length of the first
** reply taken (0 for none or an error reply), p->len[1] the second's; 0
** with p->len[1] 0 for the next server; -1 when no socket can be made;
** *circuit set when a reply was truncated (the pair goes to TCP). */
static int nss_pair_dg(res_state res, nss_pair *p, int ns, int *terrno, int *circuit,
                       int *gotsomewhere)
{
    int seconds = res->retrans << ns, save_gotsomewhere = *gotsomewhere;
    int reopen_each = (res->options & RES_SNGLKUPREOP) != 0;
    int single = (res->options & RES_SNGLKUP) != 0 || reopen_each;
    int resplen = 0, r, n, need_recompute, nwritten, recv[2];
    struct timespec now, finish, timeout = {0, 0};
    struct pollfd pfd;

    if (ns > 0)
        seconds /= res->nscount;
    if (seconds <= 0)
        seconds = 1;
retry_reopen:
    r = nss_pair_open(res, p, ns, terrno);
    if (r <= 0) {
        p->len[1] = 0;
        return r;
    }
retry:
    nss_now(&now);
    finish = now;
    finish.tv_sec += seconds;
    timeout.tv_sec = seconds;
    timeout.tv_nsec = 0;
    need_recompute = 0;
    nwritten = 0;
    recv[0] = recv[1] = 0;
    pfd.fd = p->fd[ns];
    pfd.events = POLLOUT;
    for (;;) {
        if (need_recompute) {
            nss_now(&now);
            if (now.tv_sec > finish.tv_sec
                || (now.tv_sec == finish.tv_sec && now.tv_nsec >= finish.tv_nsec))
                goto error;
            timeout.tv_sec = finish.tv_sec - now.tv_sec;
            timeout.tv_nsec = finish.tv_nsec - now.tv_nsec;
            if (timeout.tv_nsec < 0) {
                timeout.tv_sec--;
                timeout.tv_nsec += 1000000000L;
            }
            need_recompute = 0;
        }
        n = 0;
        if (nwritten == 0)
            n = poll(&pfd, 1, 0);
        if (n == 0) {
            n = poll(&pfd, 1, (int)(timeout.tv_sec * 1000 + timeout.tv_nsec / 1000000));
            need_recompute = 1;
        }
        if (n == 0) {
            if (resplen > 1 && (recv[0] || recv[1])) {
                /* one reply came and the other did not: servers and
                ** firewalls that drop the second of two outstanding
                ** questions; again one at a time, then with a new
                ** socket for each */
                if (!single) {
                    res->options |= RES_SNGLKUP;
                    single = 1;
                    *gotsomewhere = save_gotsomewhere;
                    goto retry;
                }
                if (!reopen_each) {
                    res->options |= RES_SNGLKUPREOP;
                    reopen_each = 1;
                    *gotsomewhere = save_gotsomewhere;
                    nss_pair_close(p);
                    goto retry_reopen;
                }
                p->len[1] = 1;
                return resplen;
            }
            *gotsomewhere = 1;
            p->len[1] = 0;
            return 0;
        }
        if (n < 0) {
            if (errno == EINTR) {
                need_recompute = 1;
                continue;
            }
            goto error;
        }
        errno = 0;
        if (pfd.revents & POLLOUT) {
            ssize_t sent;
            if (nwritten == 0 && !single) {
                struct iovec iov[2] = {
                    {(void *)p->q[0]->query, (size_t)p->q[0]->qlen},
                    {(void *)p->q[1]->query, (size_t)p->q[1]->qlen}};
                struct mmsghdr reqs[2];
                int ndg;
                memset(reqs, 0, sizeof reqs);
                reqs[0].msg_hdr.msg_iov = &iov[0];
                reqs[0].msg_hdr.msg_iovlen = 1;
                reqs[1].msg_hdr.msg_iov = &iov[1];
                reqs[1].msg_hdr.msg_iovlen = 1;
                ndg = sendmmsg(pfd.fd, reqs, 2, MSG_NOSIGNAL);
                if (ndg == 2) {
                    if ((int)reqs[0].msg_len != p->q[0]->qlen
                        || (int)reqs[1].msg_len != p->q[1]->qlen)
                        goto error;
                    pfd.events = POLLIN;
                    nwritten += 2;
                    continue;
                }
                if (ndg < 0 && (errno == EINTR || errno == EAGAIN)) {
                    need_recompute = 1;
                    continue;
                }
                if (!(ndg == 1 && (int)reqs[0].msg_len == p->q[0]->qlen))
                    goto error;
            } else {
                const nss_question *q = p->q[nwritten != 0];
                sent = send(pfd.fd, q->query, (size_t)q->qlen, MSG_NOSIGNAL);
                if (sent != q->qlen) {
                    if (errno == EINTR || errno == EAGAIN) {
                        need_recompute = 1;
                        continue;
                    }
                    goto error;
                }
            }
            pfd.events = nwritten != 0 || single ? POLLIN : POLLIN | POLLOUT;
            nwritten++;
            continue;
        }
        if (pfd.revents & POLLIN) {
            int slot = (recv[0] | recv[1]) == 0 ? 0 : 1, match = -1, rcode;
            unsigned char *reply = p->answer[slot];
            int *len = slot == 0 ? &resplen : &p->len[1];
            *len = (int)recvfrom(pfd.fd, reply, NSS_DNSSHIM_ANSWER_MAX, 0, NULL, NULL);
            if (*len <= 0) {
                if (errno == EINTR || errno == EAGAIN) {
                    need_recompute = 1;
                    continue;
                }
                goto error;
            }
            *gotsomewhere = 1;
            if (*len < NS_HFIXEDSZ) {
                *terrno = EMSGSIZE;
                goto error;
            }
            if (!recv[0] && nss_pair_matches(p->q[0], reply, *len))
                match = 0;
            if (!recv[1] && nss_pair_matches(p->q[1], reply, *len))
                match = 1;
            if (match < 0) {
                /* a stray datagram: dropped, and the wait goes on */
                need_recompute = 1;
                continue;
            }
            p->which[slot] = match;
            rcode = reply[3] & 0x0f;
            if (rcode == ns_r_servfail || rcode == ns_r_notimpl || rcode == ns_r_refused
                || (rcode == ns_r_noerror && reply[6] == 0 && reply[7] == 0
                    && !(reply[2] & 0x04) && !(reply[3] & 0x80) && reply[10] == 0
                    && reply[11] == 0)) {
                /* an error reply, or a lame one (no answer, not
                ** authoritative, no recursion, no additional record): no
                ** data from it */
                if (recv[0] || recv[1]) {
                    p->len[1] = 0;
                    return resplen;
                }
                resplen = 0;
                recv[match] = 1;
                continue;
            }
            if (!(res->options & RES_IGNTC) && (reply[2] & 0x02)) {
                *circuit = 1;
                nss_pair_close(p);
                p->len[1] = 0;
                return 1;
            }
            recv[match] = 1;
            if (!(recv[0] && recv[1])) {
                if (single) {
                    pfd.events = POLLOUT;
                    if (reopen_each) {
                        nss_pair_close(p);
                        r = nss_pair_open(res, p, ns, terrno);
                        if (r <= 0) {
                            p->len[1] = 0;
                            return r;
                        }
                        pfd.fd = p->fd[ns];
                    }
                }
                continue;
            }
            return resplen;
        }
        /* POLLERR, POLLHUP, POLLNVAL: an ICMP error, this server is done */
        goto error;
    }
error:
    nss_pair_close(p);
    p->len[1] = 0;
    return 0;
}

/* glibc's rotate offset (nameserver_offset): one counter for the process,
** started at a random point. */
static unsigned nss_server_offset(res_state res)
{
    static unsigned global;
    unsigned nscount = (unsigned)res->nscount, offset;
    if (nscount <= 1 || !(res->options & RES_ROTATE))
        return 0;
    offset = __atomic_fetch_add(&global, 2, __ATOMIC_RELAXED);
    if ((offset & 1) == 0) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        offset = (unsigned)(t.tv_nsec ^ t.tv_sec) << 1;
        __atomic_store_n(&global, (offset | 1) + 2, __ATOMIC_RELAXED);
    }
    return (offset >> 1) % nscount;
}

/* The server the rotation's `shift`-th attempt asks, from `offset`
** (nss_server_offset). */
static int nss_server_at(res_state res, unsigned shift, unsigned offset)
{
    unsigned ns = shift + offset;
    return (int)(ns >= (unsigned)res->nscount ? ns - (unsigned)res->nscount : ns);
}

/* n octets from stream fd into buf, each wait at most `seconds`: 1, or 0
** on an error, the end of the stream or the wait (*terrno). */
static int nss_vc_read(int fd, unsigned char *buf, size_t n, int seconds, int *terrno)
{
    while (n > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        ssize_t got;
        int r = poll(&pfd, 1, seconds * 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            *terrno = r == 0 ? ETIMEDOUT : errno;
            return 0;
        }
        got = read(fd, buf, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            *terrno = got == 0 ? ECONNRESET : errno;
            return 0;
        }
        buf += got;
        n -= (size_t)got;
    }
    return 1;
}

/* glibc's send_vc for the pair, with server `ns`: both queries written on
** one connection, each behind its length, and the two replies read in
** whichever order they come, each taken for the question of its ID (a
** reply of neither ID, or of one already answered, is dropped and the
** next read, as send_vc drops it); what a reply says (an error RCODE
** too) is the caller's to judge.  The first reply's length with p->len[1]
** the second's; 0 with p->len[1] 0 for the next server (no connection, an
** error, a reply shorter than a header, or a wait longer than the
** server's share of the timeout: glibc waits on a stream for ever); -1
** with *terrno when no socket can be made. */
static int nss_pair_vc(res_state res, nss_pair *p, int ns, int *terrno)
{
    const struct sockaddr *server = nss_server(res, ns);
    socklen_t slen = server->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                   : sizeof(struct sockaddr_in);
    unsigned char lens[2][2], head[2];
    struct iovec iov[4];
    int fd, i, taken = 0, got[2] = {0, 0}, seconds = res->retrans > 0 ? res->retrans : 1;
    size_t total = 0;

    p->len[0] = p->len[1] = 0;
    p->which[0] = p->which[1] = -1;
    if (server->sa_family != AF_INET && server->sa_family != AF_INET6) {
        *terrno = EAFNOSUPPORT;
        return 0;
    }
    fd = socket(server->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *terrno = errno;
        return -1;
    }
    if (connect(fd, server, slen) < 0) {
        *terrno = errno;
        close(fd);
        return 0;
    }
    for (i = 0; i < 2; i++) {
        lens[i][0] = (unsigned char)(p->q[i]->qlen >> 8);
        lens[i][1] = (unsigned char)p->q[i]->qlen;
        iov[2 * i].iov_base = lens[i];
        iov[2 * i].iov_len = 2;
        iov[2 * i + 1].iov_base = (void *)p->q[i]->query;
        iov[2 * i + 1].iov_len = (size_t)p->q[i]->qlen;
        total += 2 + (size_t)p->q[i]->qlen;
    }
    if (writev(fd, iov, 4) != (ssize_t)total) {
        *terrno = errno;
        close(fd);
        return 0;
    }
    while (taken < 2) {
        unsigned char *reply = p->answer[taken];
        int size, match = -1;
        if (!nss_vc_read(fd, head, 2, seconds, terrno))
            break;
        size = head[0] << 8 | head[1];
        if (size < NS_HFIXEDSZ) {
            *terrno = EMSGSIZE;
            break;
        }
        if (!nss_vc_read(fd, reply, (size_t)size, seconds, terrno))
            break;
        for (i = 0; i < 2 && match < 0; i++)
            if (!got[i] && reply[0] == p->q[i]->query[0] && reply[1] == p->q[i]->query[1])
                match = i;
        if (match < 0)
            continue;
        got[match] = 1;
        p->which[taken] = match;
        p->len[taken] = size;
        taken++;
    }
    close(fd);
    if (taken < 2) {
        /* send_vc ends the pair on an error; what came before it is lost */
        p->len[0] = p->len[1] = 0;
        p->which[0] = p->which[1] = -1;
        return 0;
    }
    return p->len[0];
}

/* glibc's __res_context_send for the pair over streams: the servers of
** the rotation from its `first` on (the one that truncated its reply, or
** the rotation's first under use-vc), one attempt each, the first that
** answers both questions; as nss_pair_send returns. */
static int nss_pair_send_vc(res_state res, nss_pair *p, unsigned first, unsigned offset)
{
    int terrno = ETIMEDOUT, n;
    unsigned shift;
    for (shift = first; shift < (unsigned)res->nscount; shift++) {
        n = nss_pair_vc(res, p, nss_server_at(res, shift, offset), &terrno);
        if (n < 0)
            break;
        if (n > 0)
            return n;
    }
    errno = terrno;
    return -1;
}

/* glibc's __res_context_send for a pair: over datagrams, then, from the
** server that truncated a reply, over streams (nss_pair_send_vc), or over
** streams alone under use-vc or for a query longer than a datagram: the
** first reply's length (0 for none) with p->len[1] the second's, or -1
** with errno (ETIMEDOUT, ECONNREFUSED when no server was reached, a
** socket's error). */
static int nss_pair_send(res_state res, nss_pair *p)
{
    int gotsomewhere = 0, terrno = ETIMEDOUT, attempt, n = -1, i, circuit = 0;
    unsigned shift, offset;
    for (i = 0; i < MAXNS; i++)
        p->fd[i] = -1;
    p->which[0] = p->which[1] = -1;
    p->len[0] = p->len[1] = 0;
    if (res->nscount <= 0) {
        errno = ESRCH;
        return -1;
    }
    offset = nss_server_offset(res);
    if ((res->options & RES_USEVC) || p->q[0]->qlen > PACKETSZ || p->q[1]->qlen > PACKETSZ) {
        n = nss_pair_send_vc(res, p, 0, offset);
        goto done;
    }
    for (attempt = 0; attempt < res->retry; attempt++) {
        for (shift = 0; shift < (unsigned)res->nscount; shift++) {
            n = nss_pair_dg(res, p, nss_server_at(res, shift, offset), &terrno, &circuit,
                            &gotsomewhere);
            if (n < 0) {
                nss_pair_close(p);
                return -1;
            }
            if (circuit) {
                n = nss_pair_send_vc(res, p, shift, offset);
                goto done;
            }
            if (n == 0 && p->len[1] == 0)
                continue;
            p->len[0] = n;
            nss_pair_close(p);
            goto done;
        }
    }
    nss_pair_close(p);
    errno = gotsomewhere ? ETIMEDOUT : ECONNREFUSED;
    return -1;
done:
    if (n < 0)
        return -1;
    /* the AD bit cleared unless resolv.conf trusts it */
    for (i = 0; i < 2; i++)
        if (!(res->options & RES_TRUSTAD) && p->len[i] > NS_HFIXEDSZ)
            p->answer[i][3] &= (unsigned char)~0x20;
    return n;
}

/* The verdict on one name's replies, as glibc's __res_context_query gives
** it for one question or for the A and AAAA pair: 0 when at least one
** reply is NOERROR with an answer, else -1 with h_errno by the RCODE of
** the first reply, or of the second when the first is NOERROR.  A question
** of the pair that no server answered is left out, as glibc's pair does
** when one of its two replies does not come or is an error (send_dg then
** keeps the other alone). */
static int nss_judge(const nss_reply *replies, const int *answered, int count,
                     nss_outcome *out)
{
    const nss_reply *hp = NULL, *hp2 = NULL;
    int i;
    uint16_t rcode;
    for (i = 0; i < count; i++) {
        if (!answered[i])
            continue;
        if (replies[i].rcode == ns_r_noerror && replies[i].ancount != 0)
            return 0;
        if (hp == NULL)
            hp = &replies[i];
        else
            hp2 = &replies[i];
    }
    rcode = hp->rcode;
    if (rcode == ns_r_noerror && hp2 != NULL)
        rcode = hp2->rcode;
    switch (rcode) {
    case ns_r_nxdomain:
        nss_herrno(out, HOST_NOT_FOUND);
        break;
    case ns_r_servfail:
        nss_herrno(out, TRY_AGAIN);
        break;
    case ns_r_noerror:
        nss_herrno(out, NO_DATA);
        break;
    default: /* FORMERR, NOTIMP, REFUSED and the rest */
        nss_herrno(out, NO_RECOVERY);
        break;
    }
    return -1;
}

/* The A and AAAA pair asked at once (nss_pair_send) and each reply that
** came read through the library, in the order they came: 0 with
** answered[] saying which of replies[] hold one, -1 with `out` saying why
** (a reply refused, the runtime failed, a query not made). */
static int nss_ask_pair(res_state res, const char *name, unsigned char *answer,
                        nss_reply *replies, int *answered, nss_outcome *out)
{
    nss_question q[2];
    nss_pair p;
    int n, i;

    memset(replies, 0, 2 * sizeof *replies);
    answered[0] = answered[1] = 0;
    if (nss_make(res, name, ns_t_a, &q[0], out) < 0
        || nss_make(res, name, ns_t_aaaa, &q[1], out) < 0)
        return -1;
    p.q[0] = &q[0];
    p.q[1] = &q[1];
    p.answer[0] = answer;
    p.answer[1] = answer + NSS_DNSSHIM_ANSWER_MAX;
    memset(answer, 0, NS_HFIXEDSZ);
    n = nss_pair_send(res, &p);
    out->sys_errno = errno;
    /* the RCODE in the first buffer, as glibc's search reads it: of the
    ** first reply taken, an error reply too */
    out->last_rcode = answer[3] & 0x0f;
    if (n < 0)
        return 0;
    for (i = 0; i < 2; i++) {
        if (p.len[i] < NS_HFIXEDSZ || p.which[i] < 0)
            continue; /* none, an error reply, or glibc's one-octet stand-in */
        replies[i].qtype = (uint16_t)q[p.which[i]].qtype;
        answered[i] = 1;
    }
    if (answered[0] && answered[1]) {
        const nss_question *both[2] = {&q[p.which[0]], &q[p.which[1]]};
        const unsigned char *answers[2] = {p.answer[0], p.answer[1]};
        if (nss_read_pair(both, answers, p.len, replies, out) < 0) {
            answered[0] = answered[1] = 0;
            return -1;
        }
        return 0;
    }
    for (i = 0; i < 2; i++) {
        if (answered[i] && nss_read(&q[p.which[i]], p.answer[i], p.len[i], &replies[i], out) < 0) {
            while (i-- > 0)
                nss_reply_free(&replies[i]);
            answered[0] = answered[1] = 0;
            return -1;
        }
    }
    return 0;
}

/* One name asked for every type of `qtypes` (glibc's querydomain with
** __res_context_query): 0 and the replies, or -1.  The A and AAAA pair is
** asked at once, as glibc asks it (nss_pair_send), one question through
** res_nsend.  A reply the library refused, or a runtime that failed, ends
** the lookup there. */
static int nss_query(res_state res, const char *name, const int *qtypes, int count,
                     unsigned char *answer, nss_reply *replies, nss_outcome *out)
{
    int i, r, answered[2] = {0, 0}, any = 0;
    if (count == 2) {
        if (nss_ask_pair(res, name, answer, replies, answered, out) < 0)
            return -1;
        any = answered[0] || answered[1];
    }
    if (count == 1) {
        r = nss_ask(res, name, qtypes[0], answer, &replies[0], out);
        out->last_rcode = replies[0].rcode;
        if (r == -1)
            return -1;
        answered[0] = any = r == 0;
    }
    if (!any || nss_judge(replies, answered, count, out) < 0) {
        if (!any)
            nss_herrno(out, TRY_AGAIN);
        for (i = 0; i < count; i++)
            nss_reply_free(&replies[i]);
        return -1;
    }
    return 0;
}

/* glibc's querydomain: name, or name.domain; a final dot of a name asked
** as is dropped; a name too long is NO_RECOVERY. */
static int nss_query_domain(res_state res, const char *name, const char *domain,
                            const int *qtypes, int count, unsigned char *answer,
                            nss_reply *replies, nss_outcome *out, char *asked)
{
    size_t n = strlen(name);
    if (domain == NULL) {
        if (n >= NS_MAXDNAME) {
            nss_herrno(out, NO_RECOVERY);
            return -1;
        }
        memcpy(asked, name, n + 1);
        if (n > 0 && asked[n - 1] == '.')
            asked[n - 1] = '\0';
    } else {
        size_t d = strlen(domain);
        if (n + d + 1 >= NS_MAXDNAME) {
            nss_herrno(out, NO_RECOVERY);
            return -1;
        }
        memcpy(asked, name, n);
        asked[n] = '.';
        memcpy(asked + n + 1, domain, d + 1);
    }
    return nss_query(res, asked, qtypes, count, answer, replies, out);
}

/* Whether two names are the same name as glibc's ns_samename compares them:
** without case, a final dot or none. */
static int nss_names_same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 0 && a[la - 1] == '.' && (la < 2 || a[la - 2] != '\\'))
        la--;
    if (lb > 0 && b[lb - 1] == '.' && (lb < 2 || b[lb - 2] != '\\'))
        lb--;
    return la == lb && strncasecmp(a, b, la) == 0;
}

/* glibc's res_hostalias (__res_context_hostalias): the name a single label
** stands for in the file HOSTALIASES names, "alias name" a line, or NULL.
** The variable is read with secure_getenv: the dynamic linker removes it
** from a setuid program's environment anyway.  Written here so that the
** module needs nothing of libresolv on a glibc that has the resolver in
** libc (2.34 and later), and loads one library less. */
static const char *nss_hostalias(res_state res, const char *name, char *dst, size_t size)
{
    char buf[BUFSIZ], *cp1, *cp2;
    const char *file;
    size_t len;
    FILE *fp;
    if (res->options & RES_NOALIASES)
        return NULL;
    file = secure_getenv("HOSTALIASES");
    if (file == NULL || (fp = fopen(file, "rce")) == NULL)
        return NULL;
    buf[sizeof buf - 1] = '\0';
    while (fgets_unlocked(buf, sizeof buf, fp) != NULL) {
        for (cp1 = buf; *cp1 && !isspace((unsigned char)*cp1); ++cp1)
            ;
        if (!*cp1)
            break;
        *cp1 = '\0';
        if (nss_names_same(buf, name)) {
            while (isspace((unsigned char)*++cp1))
                ;
            if (!*cp1)
                break;
            for (cp2 = cp1 + 1; *cp2 && !isspace((unsigned char)*cp2); ++cp2)
                ;
            *cp2 = '\0';
            /* at most size - 1 octets of it, then its NUL (glibc's
            ** strncpy, with the length known) */
            len = (size_t)(cp2 - cp1);
            if (len > size - 1)
                len = size - 1;
            memcpy(dst, cp1, len);
            dst[len] = '\0';
            fclose(fp);
            return dst;
        }
    }
    fclose(fp);
    return NULL;
}

/* glibc's res_nsearch (__res_context_search): the name as is, under each
** search domain, by the same rules and in the same order; `asked` gets the
** name whose replies answered. */
static int nss_search(res_state res, const char *name, const int *qtypes, int count,
                      unsigned char *answer, nss_reply *replies, nss_outcome *out,
                      char *asked)
{
    const char *cp;
    unsigned dots = 0;
    int trailing_dot = 0, saved_herrno = -1, tried_as_is = 0, searched = 0;
    int root_on_list = 0, got_nodata = 0, got_servfail = 0, ret;
    char alias[NS_MAXDNAME];

    nss_herrno(out, HOST_NOT_FOUND);
    out->sys_errno = 0;
    for (cp = name; *cp != '\0'; cp++)
        dots += (*cp == '.');
    if (cp > name && cp[-1] == '.')
        trailing_dot = 1;
    /* a single label may be a user's alias (HOSTALIASES) */
    cp = dots == 0 ? nss_hostalias(res, name, alias, sizeof alias) : NULL;
    if (cp != NULL)
        return nss_query_domain(res, cp, NULL, qtypes, count, answer, replies, out, asked);
    if (dots >= res->ndots || trailing_dot) {
        ret = nss_query_domain(res, name, NULL, qtypes, count, answer, replies, out, asked);
        if (ret == 0 || trailing_dot || out->refused || out->runtime)
            return ret;
        saved_herrno = out->herrno;
        tried_as_is = 1;
    }
    if ((dots == 0 && (res->options & RES_DEFNAMES))
        || (dots != 0 && !trailing_dot && (res->options & RES_DNSRCH))) {
        int done = 0, i;
        for (i = 0; i < MAXDNSRCH && res->dnsrch[i] != NULL && !done; i++) {
            const char *domain = res->dnsrch[i];
            searched = 1;
            if (domain[0] == '.')
                domain++;
            if (domain[0] == '\0')
                root_on_list = 1;
            ret = nss_query_domain(res, name, domain, qtypes, count, answer, replies, out,
                                   asked);
            if (ret == 0 || out->refused || out->runtime)
                return ret;
            if (out->sys_errno == ECONNREFUSED) {
                nss_herrno(out, TRY_AGAIN);
                return -1;
            }
            switch (out->herrno) {
            case NO_DATA:
                got_nodata = 1;
                /* fall through */
            case HOST_NOT_FOUND:
                break;
            case TRY_AGAIN:
                if (out->last_rcode == ns_r_servfail) {
                    got_servfail = 1;
                    break;
                }
                /* fall through */
            default:
                done = 1;
            }
            if (!(res->options & RES_DNSRCH))
                done = 1;
        }
    }
    if ((dots != 0 || !searched || !(res->options & RES_NOTLDQUERY))
        && !(tried_as_is || root_on_list)) {
        ret = nss_query_domain(res, name, NULL, qtypes, count, answer, replies, out, asked);
        if (ret == 0 || out->refused || out->runtime)
            return ret;
    }
    if (saved_herrno != -1)
        nss_herrno(out, saved_herrno);
    else if (got_nodata)
        nss_herrno(out, NO_DATA);
    else if (got_servfail)
        nss_herrno(out, TRY_AGAIN);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Status, as nss_dns gives it                                          */

/* A lookup that failed: its NSS status, *errnop and *h_errnop, and the
** thread's h_errno, as nss_dns's gethostbyname3_context and
** _nss_dns_gethostbyname4_r give them after a failed search: h_errno as
** the search left it, changed for the errno of a send; errno EAGAIN with
** TRY_AGAIN, else as it was before the lookup. */
static enum nss_status nss_failed(const nss_outcome *out, int *errnop, int *h_errnop,
                                  int olderr)
{
    enum nss_status status;
    if (out->runtime) {
        /* UNAVAIL with NO_RECOVERY: the next source, or the administrator's
        ** [UNAVAIL=...] action, decides (NETDB_INTERNAL would end
        ** getaddrinfo with EAI_SYSTEM there and then) */
        *errnop = out->sys_errno;
        *h_errnop = h_errno = NO_RECOVERY;
        return NSS_STATUS_UNAVAIL;
    }
    if (out->refused) {
        *errnop = EAGAIN;
        *h_errnop = h_errno = TRY_AGAIN;
        return NSS_STATUS_TRYAGAIN;
    }
    h_errno = out->herrno;
    switch (out->sys_errno) {
    case ESRCH:
        status = NSS_STATUS_TRYAGAIN;
        h_errno = TRY_AGAIN;
        break;
    case EMFILE:
    case ENFILE:
        h_errno = NETDB_INTERNAL;
        /* fall through */
    case ECONNREFUSED:
    case ETIMEDOUT:
        status = NSS_STATUS_UNAVAIL;
        break;
    default:
        status = NSS_STATUS_NOTFOUND;
        break;
    }
    *h_errnop = h_errno;
    if (h_errno == TRY_AGAIN)
        *errnop = EAGAIN;
    else
        errno = olderr;
    return status;
}

/* The resolver state of a lookup: the thread's own (_res), as glibc's dns
** module takes it (__resolv_context_get): read from resolv.conf at the
** thread's first lookup, and again once resolv.conf has changed, unless
** the program changed the state itself (its own name servers in
** _res.nsaddr_list, say), which is then used as the program left it.  The
** public res_mkquery takes the thread's state the same way, and so has
** glibc make that decision (nothing is sent); the state is then _res.
** What a lookup learns of its servers (single-request) stays in it, as
** glibc's send_dg leaves it there, until resolv.conf is read again. */
static int nss_begin(res_state *res, unsigned char **answer, int *errnop, int *h_errnop)
{
    unsigned char query[NS_HFIXEDSZ + 1 + NS_QFIXEDSZ];
    if (res_mkquery(ns_o_query, ".", ns_c_in, ns_t_a, NULL, 0, NULL, query, sizeof query) < 0
        || !(_res.options & RES_INIT)) {
        *errnop = errno;
        *h_errnop = NETDB_INTERNAL;
        return -1;
    }
    *res = &_res;
    /* two replies: the A and AAAA pair's */
    *answer = malloc(2 * NSS_DNSSHIM_ANSWER_MAX);
    if (*answer == NULL) {
        *errnop = ENOMEM;
        *h_errnop = NETDB_INTERNAL;
        return -1;
    }
    return 0;
}

static void nss_end(unsigned char *answer)
{
    free(answer);
}

/* ------------------------------------------------------------------ */
/* The caller's buffer                                                  */

/* The caller's buffer, taken from as glibc's alloc_buffer takes: each
** piece at the alignment its type needs, in the order nss_dns takes its
** own, so that a buffer too small for dns is too small here and one large
** enough for dns is large enough here.  A piece that does not fit fails
** the buffer for good (alloc_buffer_mark_failed): nothing is taken after
** it, and the lookup then answers ERANGE, whatever else it found, so that
** the caller grows its buffer and asks again rather than keep a part. */
typedef struct nss_buffer {
    char *at;
    size_t left;
    int failed;
} nss_buffer;

static void *nss_take(nss_buffer *b, size_t size, size_t align)
{
    uintptr_t p = (uintptr_t)b->at;
    size_t pad = (align - p % align) % align;
    void *got;
    if (b->failed || pad > b->left || size > b->left - pad) {
        b->failed = 1;
        return NULL;
    }
    got = b->at + pad;
    b->at += pad + size;
    b->left -= pad + size;
    return got;
}

static char *nss_copy(nss_buffer *b, const char *text)
{
    size_t n = strlen(text) + 1;
    char *to = nss_take(b, n, 1);
    if (to != NULL)
        memcpy(to, text, n);
    return to;
}

static enum nss_status nss_too_small(int *errnop, int *h_errnop)
{
    *errnop = ERANGE;
    *h_errnop = NETDB_INTERNAL;
    return NSS_STATUS_TRYAGAIN;
}

/* ------------------------------------------------------------------ */
/* Answers, read as nss_dns reads them                                  */

/* The least TTL of the records nss_dns counts: the CNAMEs and the records
** of the type asked, whatever their owner. */
static void nss_ttl(const nss_reply *reply, uint32_t *ttl, int *have)
{
    size_t i;
    for (i = 0; i < reply->n; i++) {
        const nss_rr *rr = &reply->rr[i];
        if (rr->type != ns_t_cname && rr->type != reply->qtype)
            continue;
        if (!*have || rr->ttl < *ttl)
            *ttl = rr->ttl;
        *have = 1;
    }
}

static int32_t nss_ttl_value(uint32_t ttl)
{
    return (int32_t)(ttl > INT32_MAX ? INT32_MAX : ttl);
}

/* ------------------------------------------------------------------ */
/* gethostbyname4_r: getaddrinfo's, for AF_UNSPEC                       */

/* One reply's addresses as tuples (nss_dns's gaih_getanswer_slice): the
** name starts as the question's and follows each CNAME (whatever its
** owner: an RFC 2317 chain) to its target, which becomes the canonical
** name when it is a host name, until the first address; an address counts
** when its owner is the name the chain has reached.  With `store_canon`,
** the first tuple gets the canonical name, copied after it.  NOTFOUND when
** the reply has no answer, a question that is not a host name, or no
** address.  A tuple that does not fit is left out and the buffer failed,
** as nss_dns leaves the ERANGE to its caller. */
static enum nss_status nss_slice(const nss_reply *reply, nss_buffer *b,
                                 struct gaih_addrtuple ***next, int store_canon,
                                 int *h_errnop)
{
    const char *expected, *canon;
    int have_addr = 0;
    size_t i;

    if (reply->ancount == 0 || reply->qname == NULL || !res_hnok(reply->qname)) {
        *h_errnop = HOST_NOT_FOUND;
        return NSS_STATUS_NOTFOUND;
    }
    expected = canon = reply->qname;
    for (i = 0; i < reply->n; i++) {
        const nss_rr *rr = &reply->rr[i];
        struct gaih_addrtuple *t;
        if (rr->type == ns_t_cname) {
            expected = rr->target;
            if (store_canon && res_hnok(rr->target))
                canon = rr->target;
            continue;
        }
        if (rr->type != reply->qtype || !nss_same_name(rr->owner, expected))
            continue;
        t = **next;
        if (t == NULL) {
            t = nss_take(b, sizeof *t, __alignof__(struct gaih_addrtuple));
            if (t == NULL)
                continue;
            t->next = NULL;
            **next = t;
        }
        t->name = NULL;
        if (store_canon) {
            t->name = nss_copy(b, canon);
            store_canon = 0;
        }
        t->family = rr->type == ns_t_a ? AF_INET : AF_INET6;
        memset(t->addr, 0, sizeof t->addr);
        memcpy(t->addr, rr->addr, rr->type == ns_t_a ? 4 : 16);
        t->scopeid = 0;
        *next = &t->next;
        have_addr = 1;
    }
    if (!have_addr) {
        *h_errnop = HOST_NOT_FOUND;
        return NSS_STATUS_NOTFOUND;
    }
    *h_errnop = NETDB_SUCCESS;
    return NSS_STATUS_SUCCESS;
}

/* The name is checked as a host name first (nss_dns's check_name: h_errno
** alone).  The A and AAAA replies are read as nss_dns's gaih_getanswer
** reads them; with no-aaaa the A reply alone (gaih_getanswer_noaaaa).  A
** buffer too small for either is ERANGE (TRYAGAIN, NETDB_INTERNAL), as
** nss_dns's buffer resizing protocol gives it, never a part of the
** addresses: getaddrinfo then grows its buffer and asks again. */
static enum nss_status nss_gethostbyname4(const char *name, struct gaih_addrtuple **pat,
                                          char *buffer, size_t buflen, int *errnop,
                                          int *h_errnop, int32_t *ttlp)
{
    res_state res;
    unsigned char *answer;
    nss_reply replies[2];
    nss_outcome out;
    nss_buffer b = {buffer, buflen, 0};
    char asked[NS_MAXDNAME];
    int qtypes[2] = {ns_t_a, ns_t_aaaa}, count, olderr = errno, have_ttl = 0, i;
    enum nss_status status, status2;
    struct gaih_addrtuple **next = pat, *given = *pat;
    uint32_t ttl = 0;

    if (!res_hnok(name)) {
        *h_errnop = HOST_NOT_FOUND;
        return NSS_STATUS_NOTFOUND;
    }
    if (nss_begin(&res, &answer, errnop, h_errnop) < 0)
        return NSS_STATUS_UNAVAIL;
    count = (res->options & RES_NOAAAA) ? 1 : 2;
    memset(&out, 0, sizeof out);
    if (nss_search(res, name, qtypes, count, answer, replies, &out, asked) < 0) {
        status = nss_failed(&out, errnop, h_errnop, olderr);
        nss_end(answer);
        return status;
    }
    errno = out.sys_errno;
    /* a reply the pair did not get (none came, or an error reply) is not
    ** read, as gaih_getanswer skips an answer of no length */
    status = NSS_STATUS_NOTFOUND;
    if (replies[0].qname != NULL)
        status = nss_slice(&replies[0], &b, &next, 1, h_errnop);
    if (!b.failed && count > 1 && replies[1].qname != NULL
        && (status == NSS_STATUS_SUCCESS || status == NSS_STATUS_NOTFOUND)) {
        /* the canonical name is stored once: here if the A reply gave no
        ** address */
        status2 = nss_slice(&replies[1], &b, &next, status != NSS_STATUS_SUCCESS, h_errnop);
        if (status != NSS_STATUS_SUCCESS && status2 != NSS_STATUS_NOTFOUND)
            status = status2;
    }
    if (b.failed)
        status = nss_too_small(errnop, h_errnop);
    if (status == NSS_STATUS_SUCCESS) {
        for (i = 0; i < count; i++)
            nss_ttl(&replies[i], &ttl, &have_ttl);
        if (ttlp != NULL && have_ttl)
            *ttlp = nss_ttl_value(ttl);
    } else {
        /* no tuple of this call stays linked: a caller that grows its
        ** buffer after ERANGE must not find one in the buffer it freed */
        *pat = given;
        if (given != NULL)
            given->next = NULL;
    }
    for (i = 0; i < count; i++)
        nss_reply_free(&replies[i]);
    nss_end(answer);
    return status;
}

/* ------------------------------------------------------------------ */
/* gethostbyname3_r and its elders: one family, a struct hostent        */

/* nss_dns's getanswer_r: the names are the question's (as the reply has
** it) and each CNAME target that is a host name, in order; the last is
** h_name, the others the aliases.  The chain is followed through every
** CNAME, whatever its owner; an address counts when its owner is the name
** reached.  A reply without an address is TRYAGAIN with NO_RECOVERY, as
** nss_dns answers it.  The caller's buffer is taken in nss_dns's order:
** the names and the addresses (each at a 4-octet boundary) as the records
** come, then the address list and the alias list; one that does not fit
** is ERANGE. */
static enum nss_status nss_getanswer(const nss_reply *reply, int af, struct hostent *result,
                                     nss_buffer *b, int *errnop, int *h_errnop,
                                     int32_t *ttlp, char **canonp)
{
    char **names, **addrs, **addr_list, **alias_list;
    const char *expected;
    size_t len = af == AF_INET ? 4 : 16, nnames = 0, naddrs = 0, i;
    uint32_t ttl = 0;
    int have_ttl = 0;

    if (reply->qname == NULL || reply->rcode == ns_r_nxdomain || !res_hnok(reply->qname)) {
        *errnop = ENOENT;
        *h_errnop = HOST_NOT_FOUND;
        if (ttlp != NULL)
            *ttlp = 0;
        return NSS_STATUS_NOTFOUND;
    }
    names = calloc(reply->n + 1, sizeof *names);
    addrs = calloc(reply->n + 1, sizeof *addrs);
    if (names == NULL || addrs == NULL) {
        /* as nss_dns's lists that malloc failed: not the ERANGE protocol */
        free(names);
        free(addrs);
        *errnop = ENOMEM;
        *h_errnop = NETDB_INTERNAL;
        return NSS_STATUS_UNAVAIL;
    }
    names[nnames++] = nss_copy(b, reply->qname);
    expected = reply->qname;
    for (i = 0; i < reply->n; i++) {
        const nss_rr *rr = &reply->rr[i];
        if (rr->type == ns_t_cname) {
            expected = rr->target;
            if (res_hnok(rr->target))
                names[nnames++] = nss_copy(b, rr->target);
            continue;
        }
        if (rr->type == reply->qtype && nss_same_name(rr->owner, expected)) {
            char *at = nss_take(b, len, 4);
            if (at != NULL)
                memcpy(at, rr->addr, len);
            addrs[naddrs++] = at;
        }
    }
    nss_ttl(reply, &ttl, &have_ttl);
    if (naddrs == 0) {
        free(names);
        free(addrs);
        *errnop = ENOENT;
        *h_errnop = NO_RECOVERY;
        if (ttlp != NULL)
            *ttlp = 0;
        return NSS_STATUS_TRYAGAIN;
    }
    addr_list = nss_take(b, (naddrs + 1) * sizeof *addr_list, __alignof__(char *));
    alias_list = nss_take(b, nnames * sizeof *alias_list, __alignof__(char *));
    if (b->failed || addr_list == NULL || alias_list == NULL) {
        free(names);
        free(addrs);
        return nss_too_small(errnop, h_errnop);
    }
    memcpy(addr_list, addrs, naddrs * sizeof *addr_list);
    addr_list[naddrs] = NULL;
    memcpy(alias_list, names, (nnames - 1) * sizeof *alias_list);
    alias_list[nnames - 1] = NULL;
    result->h_name = names[nnames - 1];
    result->h_aliases = alias_list;
    result->h_addrtype = af;
    result->h_length = (int)len;
    result->h_addr_list = addr_list;
    if (ttlp != NULL && have_ttl)
        *ttlp = nss_ttl_value(ttl);
    if (canonp != NULL)
        *canonp = result->h_name;
    *h_errnop = NETDB_SUCCESS;
    free(names);
    free(addrs);
    return NSS_STATUS_SUCCESS;
}

static enum nss_status nss_gethostbyname3(const char *name, int af, struct hostent *result,
                                          char *buffer, size_t buflen, int *errnop,
                                          int *h_errnop, int32_t *ttlp, char **canonp)
{
    res_state res;
    unsigned char *answer;
    nss_reply reply;
    nss_outcome out;
    nss_buffer b = {buffer, buflen, 0};
    char asked[NS_MAXDNAME];
    int qtype, olderr = errno;
    enum nss_status status;

    if (af != AF_INET && af != AF_INET6) {
        *errnop = EAFNOSUPPORT;
        *h_errnop = NO_DATA;
        return NSS_STATUS_UNAVAIL;
    }
    qtype = af == AF_INET ? ns_t_a : ns_t_aaaa;
    /* set before the lookup, whatever it gives, as nss_dns sets them */
    result->h_addrtype = af;
    result->h_length = af == AF_INET ? 4 : 16;
    if (nss_begin(&res, &answer, errnop, h_errnop) < 0)
        return NSS_STATUS_UNAVAIL;
    memset(&out, 0, sizeof out);
    if (nss_search(res, name, &qtype, 1, answer, &reply, &out, asked) < 0) {
        status = nss_failed(&out, errnop, h_errnop, olderr);
        nss_end(answer);
        return status;
    }
    errno = out.sys_errno;
    status = nss_getanswer(&reply, af, result, &b, errnop, h_errnop, ttlp, canonp);
    nss_reply_free(&reply);
    nss_end(answer);
    return status;
}

/* The name checked as a host name first, as nss_dns's check_name. */
static enum nss_status nss_gethostbyname2(const char *name, int af, struct hostent *result,
                                          char *buffer, size_t buflen, int *errnop,
                                          int *h_errnop)
{
    if (!res_hnok(name)) {
        *h_errnop = HOST_NOT_FOUND;
        return NSS_STATUS_NOTFOUND;
    }
    return nss_gethostbyname3(name, af, result, buffer, buflen, errnop, h_errnop, NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* gethostbyaddr2_r: the PTR record                                     */

/* The reverse name of an address (its first 4 or 16 octets):
** d.c.b.a.in-addr.arpa, or the 32 nibbles of ip6.arpa. */
static void nss_reverse_name(const unsigned char *addr, int af, char *out, size_t size)
{
    static const char hex[] = "0123456789abcdef";
    size_t at = 0;
    int i;
    if (af == AF_INET) {
        snprintf(out, size, "%u.%u.%u.%u.in-addr.arpa", addr[3], addr[2], addr[1], addr[0]);
        return;
    }
    for (i = 15; i >= 0 && at + 4 < size; i--) {
        out[at++] = hex[addr[i] & 0xf];
        out[at++] = '.';
        out[at++] = hex[addr[i] >> 4];
        out[at++] = '.';
    }
    snprintf(out + at, size - at, "ip6.arpa");
}

/* nss_dns's _nss_dns_gethostbyaddr2_r.  Before anything is asked: room in
** the caller's buffer for the address list (two pointers, taken first, as
** nss_dns takes them: ERANGE without a query); an IPv4-mapped address
** (::ffff:a.b.c.d) and an IPv4-compatible one (::a.b.c.d) are looked up
** as the IPv4 address, except ::0.0.0.1, the loopback ::1, which is an IPv6
** address (:: too is mapped, to 0.0.0.0: the public gethostbyaddr refuses
** it before any module is called); a length shorter than the family's
** address is EAFNOSUPPORT, a longer one is not refused: the address is its
** first octets, and the result's address the `len` octets given. */
static enum nss_status nss_gethostbyaddr2(const void *addr, socklen_t len, int af,
                                          struct hostent *result, char *buffer, size_t buflen,
                                          int *errnop, int *h_errnop, int32_t *ttlp)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char tunnelled[12] = {0};
    static const unsigned char v6local[4] = {0, 0, 0, 1};
    res_state res;
    unsigned char *answer;
    nss_reply reply;
    nss_outcome out;
    nss_buffer b = {buffer, buflen, 0};
    char qname[NS_MAXDNAME], *hname = NULL, **address_array, *copy;
    const unsigned char *uaddr = addr;
    const char *current;
    int qtype = ns_t_ptr, olderr = errno, found = 0;
    enum nss_status status;
    uint32_t ttl = 0;
    size_t i;

    address_array = nss_take(&b, 2 * sizeof *address_array, __alignof__(char *));
    if (address_array == NULL)
        return nss_too_small(errnop, h_errnop);
    if (af == AF_INET6 && len == 16
        && (memcmp(uaddr, mapped, sizeof mapped) == 0
            || (memcmp(uaddr, tunnelled, sizeof tunnelled) == 0
                && memcmp(uaddr + sizeof tunnelled, v6local, sizeof v6local) != 0))) {
        /* ::ffff:a.b.c.d and ::a.b.c.d: the IPv4 address's name */
        uaddr += sizeof mapped;
        len = 4;
        af = AF_INET;
    }
    if ((af != AF_INET && af != AF_INET6) || len < (af == AF_INET ? 4u : 16u)) {
        *errnop = EAFNOSUPPORT;
        *h_errnop = NETDB_INTERNAL;
        return NSS_STATUS_UNAVAIL;
    }
    nss_reverse_name(uaddr, af, qname, sizeof qname);
    if (nss_begin(&res, &answer, errnop, h_errnop) < 0)
        return NSS_STATUS_UNAVAIL;
    memset(&out, 0, sizeof out);
    if (nss_query(res, qname, &qtype, 1, answer, &reply, &out) < 0) {
        if (out.refused || out.runtime)
            status = nss_failed(&out, errnop, h_errnop, olderr);
        else {
            /* as nss_dns: h_errno of the query, errno as it was */
            *h_errnop = out.herrno;
            errno = olderr;
            status = olderr == ECONNREFUSED ? NSS_STATUS_UNAVAIL : NSS_STATUS_NOTFOUND;
        }
        nss_end(answer);
        return status;
    }
    errno = out.sys_errno;
    /* nss_dns's getanswer_ptr: through every CNAME (RFC 2317's classless
    ** delegation), the first PTR whose owner is the name reached */
    current = qname;
    for (i = 0; i < reply.n && !found; i++) {
        const nss_rr *rr = &reply.rr[i];
        if (rr->type == ns_t_cname)
            current = rr->target;
        else if (rr->type == ns_t_ptr && nss_same_name(rr->owner, current)) {
            hname = nss_copy(&b, rr->target);
            ttl = rr->ttl;
            found = 1;
        }
    }
    if (!found) {
        *errnop = ENOENT;
        *h_errnop = NO_RECOVERY;
        if (ttlp != NULL)
            *ttlp = 0;
        status = NSS_STATUS_TRYAGAIN;
    } else {
        /* the address at a 4-octet boundary, as nss_dns copies it */
        copy = nss_take(&b, len, 4);
        if (copy == NULL || hname == NULL) {
            status = nss_too_small(errnop, h_errnop);
        } else {
            memcpy(copy, uaddr, len);
            address_array[0] = copy;
            address_array[1] = NULL;
            result->h_name = hname;
            result->h_aliases = &address_array[1];
            result->h_addrtype = af;
            result->h_length = (int)len;
            result->h_addr_list = address_array;
            if (ttlp != NULL)
                *ttlp = nss_ttl_value(ttl);
            *h_errnop = NETDB_SUCCESS;
            status = NSS_STATUS_SUCCESS;
        }
    }
    nss_reply_free(&reply);
    nss_end(answer);
    return status;
}

/* ------------------------------------------------------------------ */
/* The entry points: cancellation held off for the whole lookup         */

/* getaddrinfo and gethostbyname are cancellation points, and a thread
** cancelled inside a lookup would leave behind what glibc's resolver holds
** for it (res_nsend's socket and its resolver context, which no cleanup
** handler of ours can give back) and, parsing in the process, an
** interpreter's lock it was waiting for, which every later lookup would
** then wait on for ever.  So a lookup runs with cancellation held off, and
** a thread cancelled meanwhile is cancelled as the lookup ends, within
** resolv.conf's time bound: everything of the lookup given back, still in
** the module's call, so that glibc's getaddrinfo unwinds as it does for a
** thread cancelled inside dns's wait for a reply (cancelled later, at a
** cancellation point of its own after the module returned, it would leave
** its own buffers behind).  errno and h_errno are the lookup's. */
#define NSS_UNCANCELLED(call)                                          \
    do {                                                               \
        int old_state_;                                                \
        enum nss_status status_;                                       \
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old_state_);   \
        status_ = (call);                                              \
        pthread_setcancelstate(old_state_, NULL);                      \
        if (old_state_ == PTHREAD_CANCEL_ENABLE)                       \
            pthread_testcancel();                                      \
        return status_;                                                \
    } while (0)

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyname4_r(const char *name, struct gaih_addrtuple **pat, char *buffer,
                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp)
{
    NSS_UNCANCELLED(nss_gethostbyname4(name, pat, buffer, buflen, errnop, h_errnop, ttlp));
}

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyname3_r(const char *name, int af, struct hostent *result, char *buffer,
                              size_t buflen, int *errnop, int *h_errnop, int32_t *ttlp,
                              char **canonp)
{
    NSS_UNCANCELLED(nss_gethostbyname3(name, af, result, buffer, buflen, errnop, h_errnop,
                                       ttlp, canonp));
}

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyname2_r(const char *name, int af, struct hostent *result, char *buffer,
                              size_t buflen, int *errnop, int *h_errnop)
{
    NSS_UNCANCELLED(nss_gethostbyname2(name, af, result, buffer, buflen, errnop, h_errnop));
}

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyname_r(const char *name, struct hostent *result, char *buffer,
                             size_t buflen, int *errnop, int *h_errnop)
{
    NSS_UNCANCELLED(nss_gethostbyname2(name, AF_INET, result, buffer, buflen, errnop,
                                       h_errnop));
}

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyaddr2_r(const void *addr, socklen_t len, int af, struct hostent *result,
                              char *buffer, size_t buflen, int *errnop, int *h_errnop,
                              int32_t *ttlp)
{
    NSS_UNCANCELLED(nss_gethostbyaddr2(addr, len, af, result, buffer, buflen, errnop, h_errnop,
                                       ttlp));
}

NSS_DNSSHIM_API enum nss_status
_nss_dnsshim_gethostbyaddr_r(const void *addr, socklen_t len, int af, struct hostent *result,
                             char *buffer, size_t buflen, int *errnop, int *h_errnop)
{
    NSS_UNCANCELLED(nss_gethostbyaddr2(addr, len, af, result, buffer, buflen, errnop, h_errnop,
                                       NULL));
}
