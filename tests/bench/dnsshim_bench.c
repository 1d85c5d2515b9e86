/*
** dnsshim_bench: the C side of the benchmark (tests/bench/benchmark.py drives it).
**
**   dnsshim_bench serve FILE...
**       reads commands on stdin, one per line, "METHOD INDEX ITERATIONS",
**       runs METHOD ITERATIONS times on message INDEX (the order of FILE...)
**       and answers with the elapsed nanoseconds and the last status.
**       METHOD: shim      process_dns_response, with registered callbacks
**                         that copy every field (what a C user pays)
**               reject    process_dns_response(buf, -1): the bare call
**               validate  dns_shim_process with no callback set: parse and
**                         check only
**               cares_a, cares_aaaa, cares_naptr, cares_srv, cares_txt,
**               cares_soa  c-ares's ares_parse_*_reply (when built with it)
**   dnsshim_bench cold FILE
**       in a fresh process: resident memory before the first call, the time
**       of the first call (runtime start included) and the memory after.
**   dnsshim_bench threads N SECONDS FILE
**       N threads calling process_dns_response on FILE for SECONDS: prints
**       the aggregate calls per second.
*/
#include "dns_shim.h"
#include "copying_callbacks.h"
#include "tool_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_CARES
#include <arpa/nameser.h>
#include <ares.h>
#include <netdb.h>
#endif

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* c-ares                                                               */

#ifdef HAVE_CARES
static int cares_run(const char *method, const unsigned char *wire, int len)
{
    int rc;
    if (strcmp(method, "cares_a") == 0) {
        struct ares_addrttl ttls[8192];
        int n = 8192;
        struct hostent *host = NULL;
        rc = ares_parse_a_reply(wire, len, &host, ttls, &n);
        if (host)
            ares_free_hostent(host);
    } else if (strcmp(method, "cares_aaaa") == 0) {
        struct ares_addr6ttl ttls[8192];
        int n = 8192;
        struct hostent *host = NULL;
        rc = ares_parse_aaaa_reply(wire, len, &host, ttls, &n);
        if (host)
            ares_free_hostent(host);
    } else if (strcmp(method, "cares_naptr") == 0) {
        struct ares_naptr_reply *out = NULL;
        rc = ares_parse_naptr_reply(wire, len, &out);
        if (out)
            ares_free_data(out);
    } else if (strcmp(method, "cares_srv") == 0) {
        struct ares_srv_reply *out = NULL;
        rc = ares_parse_srv_reply(wire, len, &out);
        if (out)
            ares_free_data(out);
    } else if (strcmp(method, "cares_txt") == 0) {
        struct ares_txt_reply *out = NULL;
        rc = ares_parse_txt_reply(wire, len, &out);
        if (out)
            ares_free_data(out);
    } else if (strcmp(method, "cares_soa") == 0) {
        struct ares_soa_reply *out = NULL;
        rc = ares_parse_soa_reply(wire, len, &out);
        if (out)
            ares_free_data(out);
    } else {
        rc = -1000;
    }
    return rc;
}
#endif

/* ------------------------------------------------------------------ */

typedef struct message {
    unsigned char *wire;
    int32_t len;
} message;

static int serve(message *msgs, int n)
{
    char line[256], method[64];
    int index;
    long iterations, i;
    register_copying_callbacks();
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        int32_t status = 0;
        uint64_t t0, t1;
        if (sscanf(line, "%63s %d %ld", method, &index, &iterations) != 3 || index < 0 ||
            index >= n) {
            printf("error bad command\n");
            continue;
        }
        t0 = now_ns();
        if (strcmp(method, "shim") == 0) {
            for (i = 0; i < iterations; i++)
                status = process_dns_response(msgs[index].wire, msgs[index].len);
        } else if (strcmp(method, "validate") == 0) {
            dns_shim_callbacks none;
            memset(&none, 0, sizeof none);
            none.struct_size = sizeof none;
            for (i = 0; i < iterations; i++)
                status = dns_shim_process(msgs[index].wire, msgs[index].len, &none);
        } else if (strcmp(method, "reject") == 0) {
            for (i = 0; i < iterations; i++)
                status = process_dns_response(msgs[index].wire, -1);
        } else {
#ifdef HAVE_CARES
            for (i = 0; i < iterations; i++)
                status = cares_run(method, msgs[index].wire, msgs[index].len);
            if (status == -1000) {
                printf("error unknown method\n");
                continue;
            }
#else
            printf("error no c-ares in this build\n");
            continue;
#endif
        }
        t1 = now_ns();
        printf("%" PRIu64 " %" PRId32 "\n", t1 - t0, status);
    }
    return 0;
}

static int cold(message *m)
{
    long before = rss_kib(), after;
    uint64_t t0 = now_ns(), t1;
    int32_t status;
    register_copying_callbacks();
    status = process_dns_response(m->wire, m->len);
    t1 = now_ns();
    after = rss_kib();
    printf("rss_before_kib %ld first_call_us %.1f rss_after_kib %ld status %" PRId32 "\n", before,
           (double)(t1 - t0) / 1000.0, after, status);
    return status != DNS_SHIM_OK;
}

static message *thread_msg;
static volatile int stop_threads;

static void *spin(void *arg)
{
    long calls = 0;
    (void)arg;
    while (!stop_threads) {
        process_dns_response(thread_msg->wire, thread_msg->len);
        calls++;
    }
    return (void *)calls;
}

static int threads(int n, double seconds, message *m)
{
    pthread_t tids[64];
    long total = 0;
    int i;
    uint64_t t0, t1;
    if (n < 1 || n > 64)
        return 2;
    register_copying_callbacks();
    dns_shim_init();
    process_dns_response(m->wire, m->len); /* warm */
    thread_msg = m;
    t0 = now_ns();
    for (i = 0; i < n; i++)
        pthread_create(&tids[i], NULL, spin, NULL);
    usleep((useconds_t)(seconds * 1e6));
    stop_threads = 1;
    for (i = 0; i < n; i++) {
        void *r;
        pthread_join(tids[i], &r);
        total += (long)r;
    }
    t1 = now_ns();
    printf("threads %d calls %ld calls_per_second %.1f\n", n, total,
           (double)total / ((double)(t1 - t0) / 1e9));
    return 0;
}

int main(int argc, char **argv)
{
    message *msgs;
    int i, first, n;
    if (argc < 3) {
        fprintf(stderr, "usage: %s serve FILE... | cold FILE | threads N SECONDS FILE\n", argv[0]);
        return 2;
    }
    first = strcmp(argv[1], "threads") == 0 ? 4 : 2;
    if (argc <= first) {
        fprintf(stderr, "no files\n");
        return 2;
    }
    n = argc - first;
    msgs = calloc((size_t)n, sizeof *msgs);
    for (i = 0; i < n; i++) {
        long len = 0;
        msgs[i].wire = read_message(argv[first + i], 0, &len);
        if (msgs[i].wire == NULL)
            return 2;
        msgs[i].len = (int32_t)len;
    }
    if (strcmp(argv[1], "serve") == 0)
        i = serve(msgs, n);
    else if (strcmp(argv[1], "cold") == 0)
        i = cold(&msgs[0]);
    else if (strcmp(argv[1], "threads") == 0)
        i = threads(atoi(argv[2]), atof(argv[3]), &msgs[0]);
    else
        i = 2;
    for (n--; n >= 0; n--)
        free(msgs[n].wire);
    free(msgs);
    return i;
}
