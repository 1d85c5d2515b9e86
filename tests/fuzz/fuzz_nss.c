/*
** fuzz_nss.c: libnss_dnsshim's own C under libFuzzer: the search list, the
** transport (a pair over UDP, TCP after a truncated reply), the replies
** matched to their questions, and the answer's assembly into the caller's
** buffer (ERANGE), each entry point called as glibc calls it, with the
** replies the input scripts.
**
** The module is the libFuzzer build's libnss_dnsshim.so.2 (instrumented,
** beside this binary), loaded with dlopen; the replies are parsed in the
** process (DNS_SHIM_SERVICE=none: the instrumented libdnsshim.so.1 beside
** it).  Its name server is this harness: a thread that answers on
** 127.0.0.1, over UDP and TCP on one port, set in the thread's _res as a
** program sets its own (the module takes the thread's resolver state).
**
** The input: one octet of choices (the entry point in bits 0-2, the name
** in bits 3-4, RES_SNGLKUP in bit 5, ndots 2 instead of 1 in bit 6, no
** search list in bit 7), two octets of the caller's buffer size (big
** endian, below 8192), then the replies, in the order the queries come,
** each as one octet of flags (bit 0: the query's ID written over the
** reply's; bit 1: the query's question written over the reply's, when the
** reply has room) and a two-octet length.  A query past the last reply is
** REFUSED, and every reply is followed by that REFUSED answer too, so that
** a reply the module rightly ignores costs no timeout.
**
** Checked, beyond what ASan and UBSan see (the buffer is a block of
** exactly the size given): the status is one NSS knows and *errnop and
** *h_errnop are what it promises (ERANGE only with TRYAGAIN, the caller
** then retrying with more); an answer's every pointer, name and address
** lies inside the caller's buffer, each name NUL-terminated there, each
** address of the family asked, and an answer has at least one address.
** With FUZZ_NSS_VERBOSE set, each call's outcome goes to stderr.
*/
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <nss.h>
#include <poll.h>
#include <pthread.h>
#include <resolv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"

typedef enum nss_status (*byname4_fn)(const char *, struct gaih_addrtuple **, char *, size_t,
                                      int *, int *, int32_t *);
typedef enum nss_status (*byname3_fn)(const char *, int, struct hostent *, char *, size_t, int *,
                                      int *, int32_t *, char **);
typedef enum nss_status (*byname_fn)(const char *, struct hostent *, char *, size_t, int *,
                                     int *);
typedef enum nss_status (*byaddr2_fn)(const void *, socklen_t, int, struct hostent *, char *,
                                      size_t, int *, int *, int32_t *);

static byname4_fn byname4;
static byname3_fn byname3;
static byname_fn byname;
static byaddr2_fn byaddr2;

/* ---- the name server ------------------------------------------------- */

static pthread_mutex_t script_lock = PTHREAD_MUTEX_INITIALIZER;
static const uint8_t *script;   /* the replies left */
static size_t script_left;
static int udp_fd = -1, tcp_fd = -1;
static uint16_t port;
static int verbose; /* FUZZ_NSS_VERBOSE set: each call's outcome on stderr */

/* Where query q's one question ends (its OPT record follows), or past
** the end of any reply when q has none. */
static size_t question_end(const uint8_t *q, size_t qn)
{
    size_t at = 12;
    while (at < qn && q[at] != 0 && q[at] < 64)
        at += 1 + (size_t)q[at];
    return at < qn && q[at] == 0 && at + 5 <= qn ? at + 5 : SIZE_MAX;
}

/* The next scripted reply for a query (q, qn) into out (at most 65535
** octets): its length, or -1 for REFUSED.  With script_lock held. */
static int next_reply(const uint8_t *q, size_t qn, uint8_t *out)
{
    int n = -1;
    if (script_left >= 3) {
        uint8_t flags = script[0];
        size_t len = (size_t)script[1] << 8 | script[2];
        if (len > script_left - 3)
            len = script_left - 3;
        memcpy(out, script + 3, len);
        script += 3 + len;
        script_left -= 3 + len;
        n = (int)len;
        if ((flags & 1) && n >= 2 && qn >= 2)
            memcpy(out, q, 2);
        if ((flags & 2) && question_end(q, qn) <= (size_t)n) {
            memcpy(out + 4, q + 4, 2); /* QDCOUNT */
            memcpy(out + 12, q + 12, question_end(q, qn) - 12);
        }
    }
    return n;
}

/* REFUSED for query q: its ID and question, QR set. */
static int refused(const uint8_t *q, size_t qn, uint8_t *out)
{
    if (qn < 12)
        return -1;
    memcpy(out, q, qn);
    out[2] = (uint8_t)(0x80 | (q[2] & 0x79));
    out[3] = 0x80 | 5;
    memset(out + 6, 0, 6);
    return (int)qn;
}

/* A reply of n octets at r + 2 written on a TCP connection with its
** length before it: 1, or 0 when the connection is gone. */
static int send_framed(int fd, uint8_t *r, int n)
{
    r[0] = (uint8_t)(n >> 8);
    r[1] = (uint8_t)n;
    return write(fd, r, (size_t)n + 2) == n + 2;
}

/* One TCP connection: each query the module writes on it (both of a
** pair), answered in turn, until it closes or is idle for 200 ms. */
static void serve_tcp(int fd)
{
    static uint8_t q[65538], r[65538];
    for (;;) {
        size_t have = 0, want = 2;
        int n;
        struct pollfd p = {fd, POLLIN, 0};
        while (have < want) {
            if (poll(&p, 1, 200) <= 0)
                return;
            n = (int)read(fd, q + have, want - have);
            if (n <= 0)
                return;
            have += (size_t)n;
            if (have == 2)
                want = 2 + ((size_t)q[0] << 8 | q[1]);
        }
        pthread_mutex_lock(&script_lock);
        n = next_reply(q + 2, have - 2, r + 2);
        pthread_mutex_unlock(&script_lock);
        if (verbose)
            fprintf(stderr, "fuzz_nss: TCP query of %zu octets, reply %d\n", have - 2, n);
        /* the scripted reply, then REFUSED, as over UDP: a reply the module
        ** rightly passes over costs it no wait for another */
        if (n >= 0 && !send_framed(fd, r, n))
            return;
        n = refused(q + 2, have - 2, r + 2);
        if (n < 0 || !send_framed(fd, r, n))
            return;
    }
}

static void *server(void *arg)
{
    static uint8_t q[65536], r[65536];
    (void)arg;
    for (;;) {
        struct pollfd p[2] = {{udp_fd, POLLIN, 0}, {tcp_fd, POLLIN, 0}};
        if (poll(p, 2, -1) <= 0)
            continue;
        if (p[0].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t flen = sizeof from;
            ssize_t qn;
            int n;
            /* Taken and answered under the lock: a query the input's
            ** lookup sent is answered from its script, never one that
            ** came late (the main thread drains those). */
            pthread_mutex_lock(&script_lock);
            qn = recvfrom(udp_fd, q, sizeof q, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
            n = qn > 0 ? next_reply(q, (size_t)qn, r) : -1;
            pthread_mutex_unlock(&script_lock);
            if (qn <= 0)
                continue;
            if (verbose)
                fprintf(stderr, "fuzz_nss: UDP query of %zd octets, reply %d\n", qn, n);
            if (n >= 0)
                (void)sendto(udp_fd, r, (size_t)n, 0, (struct sockaddr *)&from, flen);
            n = refused(q, (size_t)qn, r);
            if (n >= 0)
                (void)sendto(udp_fd, r, (size_t)n, 0, (struct sockaddr *)&from, flen);
        }
        if (p[1].revents & POLLIN) {
            int fd = accept(tcp_fd, NULL, NULL);
            if (fd >= 0) {
                serve_tcp(fd);
                close(fd);
            }
        }
    }
    return NULL;
}

static void start_server(void)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    pthread_t t;
    int one = 1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(udp_fd >= 0 && bind(udp_fd, (struct sockaddr *)&a, sizeof a) == 0,
               "the UDP socket: %s", strerror(errno));
    FUZZ_CHECK(getsockname(udp_fd, (struct sockaddr *)&a, &alen) == 0, "getsockname");
    port = ntohs(a.sin_port);
    tcp_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    (void)setsockopt(tcp_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    FUZZ_CHECK(tcp_fd >= 0 && bind(tcp_fd, (struct sockaddr *)&a, sizeof a) == 0 &&
               listen(tcp_fd, 16) == 0, "the TCP socket on port %u: %s", port, strerror(errno));
    FUZZ_CHECK(pthread_create(&t, NULL, server, NULL) == 0, "the server's thread");
}

/* ---- the module ------------------------------------------------------ */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char path[4096], *slash;
    void *module;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 64);
    (void)argc;
    (void)argv;
    fuzz_stats_start("fuzz_nss");
    FUZZ_CHECK(n > 0, "/proc/self/exe: %s", strerror(errno));
    path[n] = '\0';
    slash = strrchr(path, '/');
    strcpy(slash + 1, "libnss_dnsshim.so.2");
    verbose = getenv("FUZZ_NSS_VERBOSE") != NULL;
    setenv("DNS_SHIM_SERVICE", "none", 1);
    setenv("DNS_SHIM_LOG_LEVEL", "none", 1);
    module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    FUZZ_CHECK(module != NULL, "dlopen: %s", dlerror());
    *(void **)&byname4 = dlsym(module, "_nss_dnsshim_gethostbyname4_r");
    *(void **)&byname3 = dlsym(module, "_nss_dnsshim_gethostbyname3_r");
    *(void **)&byname = dlsym(module, "_nss_dnsshim_gethostbyname_r");
    *(void **)&byaddr2 = dlsym(module, "_nss_dnsshim_gethostbyaddr2_r");
    FUZZ_CHECK(byname4 && byname3 && byname && byaddr2, "the module's entry points");
    start_server();
    return 0;
}

/* The thread's resolver state: this harness the one server, a second's
** timeout and one attempt, the input's options. */
static void configure(uint8_t choices)
{
    FUZZ_CHECK(res_init() == 0, "res_init");
    _res.nscount = 1;
    memset(&_res.nsaddr_list[0], 0, sizeof _res.nsaddr_list[0]);
    _res.nsaddr_list[0].sin_family = AF_INET;
    _res.nsaddr_list[0].sin_port = htons(port);
    _res.nsaddr_list[0].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    _res.retrans = 1;
    _res.retry = 1;
    _res.ndots = (choices & 0x40) ? 2 : 1;
    _res.options &= ~(unsigned long)(RES_SNGLKUP | RES_SNGLKUPREOP | RES_ROTATE | RES_USEVC);
    if (choices & 0x20)
        _res.options |= RES_SNGLKUP;
    memset(_res.dnsrch, 0, sizeof _res.dnsrch);
    strcpy(_res.defdname, "example.test");
    if (!(choices & 0x80))
        _res.dnsrch[0] = _res.defdname;
    _res.options |= RES_DEFNAMES | RES_DNSRCH;
}

static int inside(const char *buffer, size_t size, const void *p, size_t n)
{
    const char *c = p;
    return c != NULL && c >= buffer && n <= size && (size_t)(c - buffer) <= size - n;
}

static void check_string(const char *what, const char *buffer, size_t size, const char *s)
{
    size_t at;
    FUZZ_CHECK(inside(buffer, size, s, 1), "%s is outside the buffer", what);
    at = (size_t)(s - buffer);
    FUZZ_CHECK(memchr(s, '\0', size - at) != NULL, "%s is not NUL-terminated in the buffer",
               what);
    fuzz_mix(s, strlen(s));
}

static void check_hostent(const struct hostent *h, int af, const char *buffer, size_t size)
{
    size_t i, len = af == AF_INET ? 4 : 16;
    check_string("h_name", buffer, size, h->h_name);
    FUZZ_CHECK(h->h_addrtype == af && (size_t)h->h_length == len, "family %d length %d for %d",
               h->h_addrtype, h->h_length, af);
    FUZZ_CHECK(inside(buffer, size, h->h_aliases, sizeof(char *)), "h_aliases outside");
    for (i = 0;; i++) {
        FUZZ_CHECK(inside(buffer, size, h->h_aliases + i, sizeof(char *)), "alias %zu", i);
        if (h->h_aliases[i] == NULL)
            break;
        check_string("an alias", buffer, size, h->h_aliases[i]);
    }
    FUZZ_CHECK(inside(buffer, size, h->h_addr_list, sizeof(char *)), "h_addr_list outside");
    for (i = 0;; i++) {
        FUZZ_CHECK(inside(buffer, size, h->h_addr_list + i, sizeof(char *)), "address %zu", i);
        if (h->h_addr_list[i] == NULL)
            break;
        FUZZ_CHECK(inside(buffer, size, h->h_addr_list[i], len), "address %zu outside", i);
        fuzz_mix(h->h_addr_list[i], len);
    }
}

static void check_outcome(enum nss_status st, int err, int herr, int answered)
{
    if (verbose)
        fprintf(stderr, "fuzz_nss: status %d errno %d h_errno %d answered %d\n", st, err, herr,
                answered);
    FUZZ_CHECK(st == NSS_STATUS_SUCCESS || st == NSS_STATUS_NOTFOUND ||
               st == NSS_STATUS_TRYAGAIN || st == NSS_STATUS_UNAVAIL, "status %d", st);
    FUZZ_CHECK(err != ERANGE || (st == NSS_STATUS_TRYAGAIN && herr == NETDB_INTERNAL),
               "ERANGE with status %d h_errno %d", st, herr);
    if (st == NSS_STATUS_SUCCESS) {
        FUZZ_CHECK(answered, "success with no answer");
        fuzz_stat_good++;
    } else {
        FUZZ_CHECK(herr == HOST_NOT_FOUND || herr == TRY_AGAIN || herr == NO_RECOVERY ||
                   herr == NO_DATA || herr == NETDB_INTERNAL, "status %d h_errno %d", st, herr);
    }
}

static const char *const NAMES[] = {"www.example.test", "www", "host.example.test.",
                                    "a.b.c.d.e.f.example"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t choices;
    size_t bufsize;
    char *buffer;
    const char *name;
    int err = 0, herr = 0;
    int32_t ttl = 0;
    enum nss_status st;
    struct hostent h;

    if (size < 3)
        return 0;
    fuzz_stat_inputs++;
    choices = data[0];
    bufsize = ((size_t)data[1] << 8 | data[2]) % 8192;
    name = NAMES[(choices >> 3) & 3];
    pthread_mutex_lock(&script_lock);
    {
        /* what the last input's lookup left unread goes unanswered */
        uint8_t stale[512];
        while (recv(udp_fd, stale, sizeof stale, MSG_DONTWAIT) > 0)
            continue;
    }
    script = data + 3;
    script_left = size - 3;
    pthread_mutex_unlock(&script_lock);
    configure(choices);
    /* Exactly the size given (one octet for 0): ASan sees any overrun. */
    buffer = malloc(bufsize ? bufsize : 1);
    FUZZ_CHECK(buffer != NULL, "malloc");
    memset(&h, 0, sizeof h);

    switch (choices & 7) {
    case 0: {
        struct gaih_addrtuple *pat = NULL, *t;
        int n = 0;
        st = byname4(name, &pat, buffer, bufsize, &err, &herr, &ttl);
        check_outcome(st, err, herr, pat != NULL);
        if (st == NSS_STATUS_SUCCESS)
            for (t = pat; t != NULL; t = t->next) {
                FUZZ_CHECK(inside(buffer, bufsize, t, sizeof *t), "tuple %d outside", n);
                FUZZ_CHECK(t->family == AF_INET || t->family == AF_INET6, "family %d",
                           t->family);
                if (t->name != NULL)
                    check_string("a tuple's name", buffer, bufsize, t->name);
                fuzz_mix(t->addr, sizeof t->addr);
                FUZZ_CHECK(++n < 100000, "a loop in the tuples");
            }
        break;
    }
    case 1: case 2: case 5: {
        int af = (choices & 7) == 2 ? AF_INET6 : AF_INET;
        char *canon = NULL;
        if ((choices & 7) == 5)
            st = byname(name, &h, buffer, bufsize, &err, &herr);
        else
            st = byname3(name, af, &h, buffer, bufsize, &err, &herr, &ttl, &canon);
        check_outcome(st, err, herr, h.h_addr_list != NULL && h.h_addr_list[0] != NULL);
        if (st == NSS_STATUS_SUCCESS) {
            check_hostent(&h, af, buffer, bufsize);
            if (canon != NULL)
                check_string("the canonical name", buffer, bufsize, canon);
        }
        break;
    }
    default: {
        static const uint8_t v4[4] = {192, 0, 2, 7};
        static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       7};
        static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2,
                                           7};
        const uint8_t *addr = (choices & 7) == 3 ? v4 : (choices & 7) == 4 ? v6 : mapped;
        int af = (choices & 7) == 3 ? AF_INET : AF_INET6;
        socklen_t len = af == AF_INET ? 4 : 16;
        st = byaddr2(addr, len, af, &h, buffer, bufsize, &err, &herr, &ttl);
        check_outcome(st, err, herr, h.h_addr_list != NULL && h.h_addr_list[0] != NULL);
        if (addr == mapped) { /* answered as its IPv4 address, as dns answers it */
            addr += 12;
            af = AF_INET;
            len = 4;
        }
        if (st == NSS_STATUS_SUCCESS) {
            check_hostent(&h, af, buffer, bufsize);
            FUZZ_CHECK(memcmp(h.h_addr_list[0], addr, len) == 0, "the address asked is not "
                       "the answer's first");
        }
        break;
    }
    }
    free(buffer);
    pthread_mutex_lock(&script_lock);
    script = NULL;
    script_left = 0;
    pthread_mutex_unlock(&script_lock);
    return 0;
}
