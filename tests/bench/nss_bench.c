/*
** nss_bench: the C side of the benchmark's NSS part (tests/bench/benchmark.py
** runs it in tests/nss_env.py's namespace, once with "hosts: files dns" and
** once with "hosts: files dnsshim").  It links no library of this project:
** glibc's NSS loads the module nsswitch.conf names.
**
**   nss_bench first NAME
**       one getaddrinfo(NAME, AF_UNSPEC, SOCK_STREAM) in a fresh process:
**       prints "rss_before_kib B first_lookup_us T rss_after_kib A
**       dnsshim_loaded L answer ADDRESS...": the process's VmRSS
**       (/proc/self/status) before and after the call, the wall time of the
**       call (CLOCK_MONOTONIC), whether libnss_dnsshim is mapped afterwards
**       (/proc/self/maps: 1 or 0), the addresses in getaddrinfo's order.
**   nss_bench steady NAME N
**       one warm-up lookup, then N lookups timed together: prints "lookups N
**       us_per_lookup T cpu_us_per_lookup C answer ADDRESS...": the wall time
**       (CLOCK_MONOTONIC) and the process's CPU time, user and system
**       (CLOCK_PROCESS_CPUTIME_ID: without the wait for the server), per
**       lookup, and the first lookup's addresses, which every one gave.
**
** Exit status 0; 1 when a lookup failed (getaddrinfo's code and text on
** stderr) or an answer differed from the first; 2 for a usage error.
*/
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "../c/nss_answer.h"

static uint64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* The process's resident memory in kB (VmRSS of /proc/self/status), -1
** where it cannot be read. */
static long vm_rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb;
}

/* Whether libnss_dnsshim is mapped into this process. */
static int dnsshim_loaded(void)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return -1;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, "libnss_dnsshim") != NULL;
    fclose(f);
    return found;
}

/* One lookup; on success its addresses, in order, as text into out. */
static int lookup(const char *name, char *out, size_t size)
{
    int rc = nss_answer(name, out, size);
    if (rc != 0) {
        fprintf(stderr, "nss_bench: getaddrinfo %s: %d %s\n", name, rc, gai_strerror(rc));
        return -1;
    }
    return 0;
}

static int first(const char *name)
{
    char answer[1024];
    long before, after;
    uint64_t t0, t1;
    int rc;
    before = vm_rss_kb();
    t0 = now_ns();
    rc = lookup(name, answer, sizeof answer);
    t1 = now_ns();
    after = vm_rss_kb();
    if (rc != 0)
        return 1;
    printf("rss_before_kib %ld first_lookup_us %.1f rss_after_kib %ld dnsshim_loaded %d "
           "answer %s\n", before, (double)(t1 - t0) / 1000.0, after, dnsshim_loaded(), answer);
    return 0;
}

static int steady(const char *name, long n)
{
    char answer[1024], got[1024];
    uint64_t t0, t1, c0, c1;
    long i;
    if (lookup(name, answer, sizeof answer) != 0)
        return 1;
    c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        if (lookup(name, got, sizeof got) != 0)
            return 1;
        if (strcmp(got, answer) != 0) {
            fprintf(stderr, "nss_bench: lookup %ld answered %s, the first %s\n", i, got, answer);
            return 1;
        }
    }
    t1 = now_ns();
    c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    printf("lookups %ld us_per_lookup %.1f cpu_us_per_lookup %.1f answer %s\n", n,
           (double)(t1 - t0) / 1000.0 / (double)n, (double)(c1 - c0) / 1000.0 / (double)n, answer);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "first") == 0)
        return first(argv[2]);
    if (argc == 4 && strcmp(argv[1], "steady") == 0 && atol(argv[3]) > 0)
        return steady(argv[2], atol(argv[3]));
    fprintf(stderr, "usage: %s first NAME | steady NAME N\n", argv[0]);
    return 2;
}
