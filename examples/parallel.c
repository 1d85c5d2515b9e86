/*
 * parallel.c: a server's threads parsing at once.  With parallelism n the
 * library parses up to n calls together, each in a private interpreter; one
 * number, set once, before or after the first call.  Where the installation
 * has no worker image the library keeps one interpreter, and says why.
 *
 *   ./parallel reply.bin [THREADS]       (or: ./parallel < reply.bin)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dns_shim.h>

#define CALLS 200 /* per thread */

static uint8_t reply[65535];
static int32_t reply_len;

struct work {
    unsigned addresses; /* what this thread's last call found */
    int32_t status;     /* its status */
    char why[256];      /* and, for a failure, its reason */
};

static int32_t on_a(void *ctx, const dns_shim_a *a)
{
    (void)a;
    ((struct work *)ctx)->addresses++;
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *aaaa)
{
    (void)aaaa;
    ((struct work *)ctx)->addresses++;
    return 0;
}

static void *parse(void *arg)
{
    struct work *w = arg;
    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.ctx = w;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    for (int i = 0; i < CALLS; i++) {
        w->addresses = 0;
        w->status = dns_shim_process(reply, reply_len, &cb);
        if (w->status != DNS_SHIM_OK) {
            /* the reason is this thread's, whichever interpreter parsed */
            snprintf(w->why, sizeof w->why, "%s", dns_shim_last_error());
            break;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (in == NULL || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: parallel reply.bin [THREADS, 1 to 64]\n");
        return 2;
    }
    reply_len = (int32_t)fread(reply, 1, sizeof reply, in);

    /* As many interpreters as threads that parse at once.  Where the
     * installation cannot, one interpreter serves them all, in turn. */
    int32_t status = dns_shim_set_parallelism((uint32_t)threads);
    if (status == DNS_SHIM_OK)
        printf("parallelism %d\n", threads);
    else /* the status for the program; the reason for people */
        printf("one interpreter: %s\n(%s)\n", dns_shim_strerror(status),
               dns_shim_last_error());
    /* Start them now, not on the first replies. */
    if (dns_shim_init() != DNS_SHIM_OK) {
        printf("cannot start: %s\n", dns_shim_last_error());
        return 1;
    }

    pthread_t tid[64];
    struct work work[64];
    memset(work, 0, sizeof work);
    for (int t = 0; t < threads; t++)
        pthread_create(&tid[t], NULL, parse, &work[t]);
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);

    int failed = 0;
    for (int t = 0; t < threads; t++) {
        if (work[t].status != DNS_SHIM_OK) {
            printf("thread %d: %s\n", t, work[t].why);
            failed = 1;
        } else if (work[t].addresses != work[0].addresses) {
            printf("thread %d: %u addresses, thread 0 %u\n", t,
                   work[t].addresses, work[0].addresses);
            failed = 1;
        }
    }
    if (!failed)
        printf("%d threads, %d calls each: %u addresses every time\n",
               threads, CALLS, work[0].addresses);
    return failed;
}
