/*
** both_libraries: a program linked with libdnsshim_ares AND the real
** c-ares (-ldnsshim_ares -lcares, in that order), as a program that uses
** c-ares's resolver and our parsers is linked.
**
** It frees, with the same ares_free_data / ares_free_string /
** ares_free_hostent, what c-ares's resolver allocated (ares_get_servers,
** ares_get_servers_ports, ares_create_query, ares_gethostbyname_file) and
** what libdnsshim_ares's parsers allocated.  c-ares is given counting
** allocators (ares_library_init_mem): every block it allocates must come
** back to its own free, so a pointer of c-ares's that our free functions
** kept, or freed themselves, shows as a live count above 0.  Run under
** valgrind, nothing may leak or be freed twice.
**
** Then it parses from several threads at once (--threads N, default 4),
** each result compared with the one parsed first, each thread also calling
** libdnsshim's own dns_shim_process: both libraries' Python modules live in
** one embedded interpreter.
**
** Prints "ok ..." lines and "FAIL ..." lines; exits 1 on any failure.
*/
#include "dns_shim.h"

#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long cares_live = 0; /* blocks c-ares allocated and has not freed */
static pthread_mutex_t cares_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures = 0;

static void *counting_malloc(size_t n)
{
    void *p = malloc(n);
    if (p) {
        pthread_mutex_lock(&cares_lock);
        cares_live++;
        pthread_mutex_unlock(&cares_lock);
    }
    return p;
}

static void counting_free(void *p)
{
    if (p) {
        pthread_mutex_lock(&cares_lock);
        cares_live--;
        pthread_mutex_unlock(&cares_lock);
    }
    free(p);
}

static void *counting_realloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q && !p) {
        pthread_mutex_lock(&cares_lock);
        cares_live++;
        pthread_mutex_unlock(&cares_lock);
    }
    return q;
}

#define CHECK(cond, what)                                          \
    do {                                                           \
        if (cond) {                                                \
            printf("ok %s\n", what);                               \
        } else {                                                   \
            printf("FAIL %s (line %d)\n", what, __LINE__);         \
            failures++;                                            \
        }                                                          \
    } while (0)

/* _sip._udp.example.com SRV: 10 60 5060 sip1.example.com, 20 0 5060 sip2 */
static const unsigned char SRV_MSG[] = {
    0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, /* header */
    4, '_', 's', 'i', 'p', 4, '_', 'u', 'd', 'p', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e',
    3, 'c', 'o', 'm', 0, 0x00, 0x21, 0x00, 0x01,                          /* question */
    0xc0, 0x0c, 0x00, 0x21, 0x00, 0x01, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x0d, /* SRV rr */
    0x00, 0x0a, 0x00, 0x3c, 0x13, 0xc4, 4, 's', 'i', 'p', '1', 0xc0, 0x16,
    0xc0, 0x0c, 0x00, 0x21, 0x00, 0x01, 0x00, 0x00, 0x0e, 0x10, 0x00, 0x0d, /* SRV rr */
    0x00, 0x14, 0x00, 0x00, 0x13, 0xc4, 4, 's', 'i', 'p', '2', 0xc0, 0x16,
};

/* www.example.com A: CNAME web.example.com (ttl 60), web A 192.0.2.7 (ttl 300) */
static const unsigned char A_MSG[] = {
    0x00, 0x07, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, /* header */
    3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
    0x00, 0x01, 0x00, 0x01,                                               /* question */
    0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3c, 0x00, 0x06, /* CNAME */
    3, 'w', 'e', 'b', 0xc0, 0x10,
    0xc0, 0x2d, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x04, /* A */
    192, 0, 2, 7,
};

/* The SRV and A results as one line of text. */
static void describe(char *out, size_t size)
{
    struct ares_srv_reply *srv = NULL, *p;
    struct hostent *host = NULL;
    struct ares_addrttl ttls[4];
    int n = 4, rc1, rc2;
    size_t used;
    char addr[INET_ADDRSTRLEN] = "";
    rc1 = ares_parse_srv_reply(SRV_MSG, sizeof SRV_MSG, &srv);
    rc2 = ares_parse_a_reply(A_MSG, sizeof A_MSG, &host, ttls, &n);
    if (rc2 == ARES_SUCCESS && host && host->h_addr_list[0])
        inet_ntop(AF_INET, host->h_addr_list[0], addr, sizeof addr);
    used = (size_t)snprintf(out, size, "srv %d a %d %s %s %s ttl %d", rc1, rc2,
                            host ? host->h_name : "-",
                            host && host->h_aliases[0] ? host->h_aliases[0] : "-", addr,
                            n > 0 ? ttls[0].ttl : -1);
    for (p = srv; p && used < size; p = p->next)
        used += (size_t)snprintf(out + used, size - used, " %u/%u/%u/%s", p->priority, p->weight,
                                 p->port, p->host);
    ares_free_data(srv);
    ares_free_hostent(host);
}

/* libdnsshim's view of the SRV message: the SRV targets, in order. */
static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    char *out = ctx;
    strncat(out, " ", 511 - strlen(out));
    strncat(out, r->target, 511 - strlen(out));
    return 0;
}

static int32_t srv_targets(char *out)
{
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.ctx = out;
    cb.on_srv = on_srv;
    out[0] = '\0';
    return dns_shim_process(SRV_MSG, (int32_t)sizeof SRV_MSG, &cb);
}

static char expected[512];
static int iterations = 50;

static void *worker(void *arg)
{
    char got[512], targets[512];
    int i;
    long bad = 0;
    (void)arg;
    for (i = 0; i < iterations; i++) {
        describe(got, sizeof got);
        if (strcmp(got, expected) != 0)
            bad++;
        if (srv_targets(targets) != DNS_SHIM_OK ||
            strcmp(targets, " sip1.example.com sip2.example.com") != 0)
            bad++;
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    ares_channel channel;
    struct ares_addr_node *servers = NULL;
    struct ares_addr_port_node *ports = NULL;
    struct hostent *host = NULL;
    unsigned char *query = NULL;
    char *name = NULL;
    long enclen = 0;
    int qlen = 0, nthreads = 4, i, rc;
    pthread_t threads[64];

    if (argc == 3 && strcmp(argv[1], "--threads") == 0)
        nthreads = atoi(argv[2]);
    if (nthreads < 1 || nthreads > 64)
        nthreads = 4;

    CHECK(ares_library_init_mem(ARES_LIB_INIT_ALL, counting_malloc, counting_free,
                                counting_realloc) == ARES_SUCCESS, "ares_library_init_mem");
    CHECK(ares_init(&channel) == ARES_SUCCESS, "ares_init");
    CHECK(ares_set_servers_ports_csv(channel, "192.0.2.53,[2001:db8::53]:5353") == ARES_SUCCESS,
          "ares_set_servers_ports_csv");

    /* c-ares's allocations, freed with the functions we define. */
    rc = ares_get_servers(channel, &servers);
    CHECK(rc == ARES_SUCCESS && servers && servers->family == AF_INET && servers->next &&
          servers->next->family == AF_INET6, "ares_get_servers gives the two servers");
    ares_free_data(servers);
    rc = ares_get_servers_ports(channel, &ports);
    CHECK(rc == ARES_SUCCESS && ports && ports->next && ports->next->udp_port == 5353,
          "ares_get_servers_ports");
    ares_free_data(ports);
    rc = ares_create_query("www.example.com", 1 /* IN */, 1 /* A */, 0x1234, 1, &query, &qlen, 0);
    CHECK(rc == ARES_SUCCESS && qlen == 33, "ares_create_query");
    ares_free_string(query);
    host = NULL;
    rc = ares_gethostbyname_file(channel, "localhost", AF_INET, &host);
    if (rc == ARES_SUCCESS) {
        CHECK(host != NULL && host->h_addrtype == AF_INET, "ares_gethostbyname_file");
        ares_free_hostent(host);
    } else {
        printf("ok ares_gethostbyname_file: no localhost in /etc/hosts (%s)\n", ares_strerror(rc));
    }

    /* Ours, freed with the same functions. */
    describe(expected, sizeof expected);
    CHECK(strcmp(expected, "srv 0 a 0 web.example.com www.example.com 192.0.2.7 ttl 60 "
                           "10/60/5060/sip1.example.com 20/0/5060/sip2.example.com") == 0,
          "our SRV and A results");
    printf("   %s\n", expected);
    rc = ares_expand_name(SRV_MSG + 12, SRV_MSG, sizeof SRV_MSG, &name, &enclen);
    CHECK(rc == ARES_SUCCESS && strcmp(name, "_sip._udp.example.com") == 0 && enclen == 23,
          "our ares_expand_name");
    ares_free_string(name);
    CHECK(strcmp(ares_strerror(ARES_EBADRESP), "Misformatted DNS reply") == 0, "ares_strerror");
    /* Where c-ares would dereference a NULL output pointer, ours refuses. */
    CHECK(ares_parse_srv_reply(SRV_MSG, sizeof SRV_MSG, NULL) == ARES_EBADQUERY &&
          ares_parse_ns_reply(SRV_MSG, sizeof SRV_MSG, NULL) == ARES_EBADQUERY &&
          ares_parse_soa_reply(SRV_MSG, sizeof SRV_MSG, NULL) == ARES_EBADQUERY &&
          ares_expand_name(SRV_MSG + 12, SRV_MSG, sizeof SRV_MSG, NULL, &enclen) ==
              ARES_EBADQUERY, "NULL output pointers are ARES_EBADQUERY");

    {
        char targets[512];
        CHECK(srv_targets(targets) == DNS_SHIM_OK &&
              strcmp(targets, " sip1.example.com sip2.example.com") == 0,
              "libdnsshim's dns_shim_process in the same program");
    }

    /* Threads. */
    for (i = 0; i < nthreads; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    {
        long bad = 0;
        for (i = 0; i < nthreads; i++) {
            void *r;
            pthread_join(threads[i], &r);
            bad += (long)r;
        }
        printf("%s %d threads x %d parses, %ld different\n", bad ? "FAIL" : "ok", nthreads,
               iterations, bad);
        if (bad)
            failures++;
    }

    ares_destroy(channel);
    ares_library_cleanup();
    CHECK(cares_live == 0, "every block c-ares allocated went back to c-ares's free");
    if (cares_live != 0)
        printf("   %ld c-ares blocks live\n", cares_live);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
