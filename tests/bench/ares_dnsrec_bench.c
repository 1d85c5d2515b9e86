/*
** ares_dnsrec_bench: c-ares's ares_dns_parse timed, for the benchmark
** (tests/bench/benchmark.py drives it as it drives dnsshim_bench).
**
**   ares_dnsrec_bench serve FILE...
**       reads "METHOD INDEX ITERATIONS" lines on stdin and answers with the
**       elapsed nanoseconds and the last status; METHOD: dnsrec, one
**       ares_dns_parse of message INDEX and the ares_dns_record_destroy of
**       what it made.
**
** Built against c-ares 1.28 or later (the benchmark uses tests/cares_source.py's
** c-ares 1.34); run plainly it times c-ares's own parser, run with
** LD_PRELOAD=libdnsshim_ares.so.1 it times libdnsshim_ares's.
*/
#include <ares.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct {
    unsigned char *wire;
    size_t len;
} message;

static int load(const char *path, message *m)
{
    FILE *f = fopen(path, "rb");
    long size;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        if (f != NULL)
            fclose(f);
        return -1;
    }
    m->wire = malloc((size_t)size + 1);
    m->len = m->wire != NULL ? fread(m->wire, 1, (size_t)size, f) : 0;
    fclose(f);
    return m->wire != NULL && m->len == (size_t)size ? 0 : -1;
}

int main(int argc, char **argv)
{
    message *msgs;
    char line[256], method[64];
    int n = argc - 2, i, index;
    long iterations, k;
    if (argc < 3 || strcmp(argv[1], "serve") != 0) {
        fprintf(stderr, "usage: ares_dnsrec_bench serve FILE...\n");
        return 2;
    }
    msgs = calloc((size_t)n, sizeof *msgs);
    if (msgs == NULL)
        return 1;
    for (i = 0; i < n; i++) {
        if (load(argv[i + 2], &msgs[i]) != 0) {
            fprintf(stderr, "ares_dnsrec_bench: cannot read %s\n", argv[i + 2]);
            return 1;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        int status = 0;
        uint64_t t0, t1;
        if (sscanf(line, "%63s %d %ld", method, &index, &iterations) != 3 || index < 0 ||
            index >= n || strcmp(method, "dnsrec") != 0) {
            printf("error bad command\n");
            continue;
        }
        t0 = now_ns();
        for (k = 0; k < iterations; k++) {
            ares_dns_record_t *rec = NULL;
            status = (int)ares_dns_parse(msgs[index].wire, msgs[index].len, 0, &rec);
            ares_dns_record_destroy(rec);
        }
        t1 = now_ns();
        printf("%" PRIu64 " %d\n", t1 - t0, status);
    }
    for (i = 0; i < n; i++)
        free(msgs[i].wire);
    free(msgs);
    return 0;
}
