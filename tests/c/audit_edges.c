/*
** audit_edges: what the library must do at the edges of what a caller hands
** it, each run under valgrind by the tests (an over-read is an error there).
**
**   audit_edges sizes FILE    1.0's callbacks struct and the query, each in a
**                             heap block of exactly its struct_size: the
**                             library reads nothing past them
**   audit_edges threads       six threads, each failing with its own length
**                             at once: each reads its own detail, and
**                             another call on one changes only that thread's
**   audit_edges flip N        a thread flips struct_size of a callbacks set,
**                             in a heap block of exactly its size, between
**                             its size and 65536 while this one registers it
**                             N times: each call takes one size, checked
**                             and copied (0 or DNS_SHIM_ERR_BAD_ARGUMENT),
**                             and never copies 65536 bytes (ASan says so)
**
** Prints one line per step; exit status 0, or 1 when a check failed.
*/
#include "dns_shim.h"
#include "tool_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int32_t count_a(void *ctx, const dns_shim_a *r)
{
    (void)r;
    ++*(int *)ctx;
    return 0;
}

static int sizes(const char *path)
{
    long len = 0;
    unsigned char *msg = read_message(path, 0, &len);
    size_t size10 = offsetof(dns_shim_callbacks, on_edns_option);
    dns_shim_callbacks *cb;
    dns_shim_query *q;
    int seen = 0, failed = 0;
    int32_t rc;

    if (msg == NULL)
        return 1;
    /* What a program built against 1.0's header has: the struct up to
    ** on_other, in a block of that size. */
    {
        dns_shim_callbacks full;
        void *block = malloc(size10);
        memset(&full, 0, sizeof full);
        full.struct_size = (uint32_t)size10;
        full.ctx = &seen;
        full.on_a = count_a;
        if (block != NULL)
            memcpy(block, &full, size10);
        cb = block;
    }
    q = malloc(sizeof *q);
    if (cb == NULL || q == NULL)
        return 1;
    rc = dns_shim_process(msg, (int32_t)len, cb);
    printf("1.0 callbacks in %zu bytes: %d, %d callbacks\n", size10, (int)rc, seen);
    failed |= rc != 0 || seen != 1;
    rc = dns_shim_register_callbacks(cb);
    seen = 0;
    rc = rc ? rc : process_dns_response(msg, (int32_t)len);
    printf("registered: %d, %d callbacks\n", (int)rc, seen);
    failed |= rc != 0 || seen != 1;
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->id = (uint16_t)(msg[0] << 8 | msg[1]);
    q->qname = "example.com";
    q->qtype = 1;
    q->qclass = 1;
    seen = 0;
    rc = dns_shim_process_reply(msg, (int32_t)len, q, cb);
    printf("query in %zu bytes: %d, %d callbacks\n", sizeof *q, (int)rc, seen);
    failed |= rc != 0 || seen != 1;
    dns_shim_register_callbacks(NULL);
    free(cb);
    free(q);
    free(msg);
    return failed;
}

#define THREADS 6
static pthread_barrier_t barrier;
static int thread_failed[THREADS];

static void *one_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    char want[128];
    static const uint8_t empty[1] = {0};
    int32_t rc = process_dns_response((uint8_t *)empty, -(i + 1));
    snprintf(want, sizeof want, "DNS_SHIM_ERR_BAD_LENGTH: the length is %d, not 0 to 65535",
             -(i + 1));
    pthread_barrier_wait(&barrier);      /* every thread has failed */
    thread_failed[i] |= rc != DNS_SHIM_ERR_BAD_LENGTH || strcmp(dns_shim_last_error(), want);
    pthread_barrier_wait(&barrier);
    if (i == 0)                          /* thread 0 calls again; the others keep theirs */
        thread_failed[i] |= process_dns_response((uint8_t *)empty, 0) != DNS_SHIM_ERR_SHORT_HEADER;
    else
        thread_failed[i] |= strcmp(dns_shim_last_error(), want) != 0;
    pthread_barrier_wait(&barrier);
    thread_failed[i] |= strcmp(dns_shim_last_error(), want) != 0 && i != 0;
    return NULL;
}

static int threads(void)
{
    pthread_t t[THREADS];
    int i, failed = 0;
    if (dns_shim_init() != 0)
        return 1;
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, one_thread, (void *)(intptr_t)i) != 0)
            return 1;
    for (i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        printf("thread %d: %s\n", i, thread_failed[i] ? "wrong detail" : "its own detail");
        failed |= thread_failed[i];
    }
    return failed;
}

static volatile int flipping = 1;

static void *flipper(void *arg)
{
    volatile uint32_t *size = arg;
    while (flipping) {
        *size = 65536;
        *size = (uint32_t)sizeof(dns_shim_callbacks);
    }
    return NULL;
}

static int flip(long n)
{
    dns_shim_callbacks *cb = calloc(1, sizeof *cb);
    pthread_t t;
    long i, ok = 0, refused = 0, other = 0;
    if (cb == NULL)
        return 1;
    cb->struct_size = sizeof *cb;
    if (pthread_create(&t, NULL, flipper, &cb->struct_size) != 0)
        return 1;
    for (i = 0; i < n; i++) {
        int32_t rc = dns_shim_register_callbacks(cb);
        if (rc == DNS_SHIM_OK)
            ok++;
        else if (rc == DNS_SHIM_ERR_BAD_ARGUMENT)
            refused++;
        else
            other++;
    }
    flipping = 0;
    pthread_join(t, NULL);
    dns_shim_register_callbacks(NULL);
    free(cb);
    printf("flip: %s\n", other == 0 && ok + refused == n ? "each call 0 or refused" : "other");
    return other != 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "flip") == 0)
        return flip(strtol(argv[2], NULL, 10));
    if (argc == 3 && strcmp(argv[1], "sizes") == 0)
        return sizes(argv[2]);
    if (argc == 2 && strcmp(argv[1], "threads") == 0)
        return threads();
    fprintf(stderr, "usage: %s sizes FILE | threads | flip N\n", argv[0]);
    return 2;
}
