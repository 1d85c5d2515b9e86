/*
** ares_threads: ares_every_parser's calls from several threads at once.
**
**   ares_threads THREADS FILE...
**   ares_threads --bench SECONDS THREADS FILE
**
** File i is parsed by thread i % THREADS: every classic c-ares parser,
** ares_expand_name and ares_expand_string on it, as tests/c/ares_every_parser.c
** does, each thread printing into a buffer of its own; the buffers are then
** printed in the files' order, followed by ares_every_parser's strerror
** line.  So the output is ares_every_parser's on the same files, byte for
** byte, whatever the number of threads: tests/test_parallelism.py compares
** the two, with libdnsshim's pool parsing (DNS_SHIM_PARALLELISM) and
** without.  Exit 0; 2 on a usage error or when a thread cannot run.
**
** --bench: THREADS threads call ares_parse_a_reply (with its hostent and
** addrttls, freed) on FILE for SECONDS after a first call each, and the
** program prints "calls/s N", all threads' calls over the time
** (tests/bench/benchmark.py).
**
** ares_every_parser.c is included, not copied: its printing goes to the
** calling thread's buffer through the macros below, and its main is
** renamed (unused here).
*/
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where ares_every_parser's printing goes: this thread's buffer. */
static __thread FILE *ares_threads_out;

#define main ares_every_parser_main
#undef stdout
#define stdout ares_threads_out
#undef putchar
#define putchar(c) fputc((c), ares_threads_out)
#define printf(...) fprintf(ares_threads_out, __VA_ARGS__)
#define puts(s) (fputs((s), ares_threads_out), fputc('\n', ares_threads_out))
#include "ares_every_parser.c"
#undef main
#undef stdout
#undef putchar
#undef printf
#undef puts

#define MAX_THREADS 64

typedef struct {
    int first, step, count;
    char **paths;
    char **text;  /* text[i]: file i's output */
    size_t *size;
    int failed;
} share;

static void *work(void *arg)
{
    share *s = arg;
    int i;
    for (i = s->first; i < s->count; i += s->step) {
        ares_threads_out = open_memstream(&s->text[i], &s->size[i]);
        if (ares_threads_out == NULL) {
            s->failed = 1;
            return NULL;
        }
        run(s->paths[i]);
        fclose(ares_threads_out);
    }
    return NULL;
}

typedef struct {
    const unsigned char *m;
    int n;
    double seconds;
    unsigned long calls;
} bench_share;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_call(const bench_share *b)
{
    struct hostent *host = NULL;
    struct ares_addrttl ttls[MAX_TTLS];
    int count = MAX_TTLS;
    if (ares_parse_a_reply(b->m, b->n, &host, ttls, &count) == ARES_SUCCESS && host)
        ares_free_hostent(host);
}

static void *bench_work(void *arg)
{
    bench_share *b = arg;
    double end;
    bench_call(b); /* the interpreter started, outside the time */
    end = now() + b->seconds;
    while (now() < end) {
        bench_call(b);
        b->calls++;
    }
    return NULL;
}

static int bench(double seconds, int threads, const char *path)
{
    pthread_t tids[MAX_THREADS];
    bench_share shares[MAX_THREADS];
    long len = 0;
    unsigned char *m = read_message(path, 0, &len);
    unsigned long calls = 0;
    double start;
    int t;

    if (m == NULL) {
        fprintf(stderr, "ares_threads: cannot read %s\n", path);
        return 2;
    }
    bench_call(&(bench_share){m, (int)len, 0, 0}); /* the first start, untimed */
    start = now();
    for (t = 0; t < threads; t++) {
        shares[t] = (bench_share){m, (int)len, seconds, 0};
        if (pthread_create(&tids[t], NULL, bench_work, &shares[t]) != 0) {
            fprintf(stderr, "ares_threads: cannot start thread %d\n", t + 1);
            return 2;
        }
    }
    for (t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        calls += shares[t].calls;
    }
    printf("calls/s %.1f\n", (double)calls / (now() - start));
    free(m);
    return 0;
}

int main(int argc, char **argv)
{
    pthread_t tids[MAX_THREADS];
    share shares[MAX_THREADS];
    char **text;
    size_t *size;
    int threads, count, t, i, failed = 0;

    if (argc == 5 && strcmp(argv[1], "--bench") == 0) {
        double seconds = atof(argv[2]);
        threads = atoi(argv[3]);
        if (seconds <= 0 || threads < 1 || threads > MAX_THREADS) {
            fprintf(stderr, "usage: ares_threads --bench SECONDS THREADS(1-%d) FILE\n",
                    MAX_THREADS);
            return 2;
        }
        return bench(seconds, threads, argv[4]);
    }
    threads = argc > 1 ? atoi(argv[1]) : 0;
    if (argc < 3 || threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: ares_threads THREADS(1-%d) FILE...\n", MAX_THREADS);
        return 2;
    }
    count = argc - 2;
    text = calloc((size_t)count, sizeof *text);
    size = calloc((size_t)count, sizeof *size);
    if (text == NULL || size == NULL) {
        fprintf(stderr, "ares_threads: out of memory\n");
        return 2;
    }
    for (t = 0; t < threads; t++) {
        shares[t] = (share){t, threads, count, argv + 2, text, size, 0};
        if (pthread_create(&tids[t], NULL, work, &shares[t]) != 0) {
            fprintf(stderr, "ares_threads: cannot start thread %d\n", t + 1);
            return 2;
        }
    }
    for (t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        failed |= shares[t].failed;
    }
    if (failed) {
        fprintf(stderr, "ares_threads: a thread could not open its buffer\n");
        return 2;
    }
    for (i = 0; i < count; i++) {
        fwrite(text[i], 1, size[i], stdout);
        free(text[i]);
    }
    free(text);
    free(size);
    printf("strerror");
    for (i = 0; i <= 25; i++)
        printf(" [%s]", ares_strerror(i));
    putchar('\n');
    return 0;
}
