/*
** service_bench: the C side of the benchmark's parse-service part
** (tests/bench/benchmark.py, service_part, drives it).  The same program
** runs through the service (DNS_SHIM_SERVICE=its socket,
** DNS_SHIM_SERVICE_FALLBACK=no) and in the process (DNS_SHIM_SERVICE=none):
** the environment alone says which.  Every call registers the callbacks of
** copying_callbacks.h (they copy every field, as dnsshim_bench's do) and
** counts the records they were given, so that each answer can be checked
** against the in-process one.
**
**   service_bench fresh FILE
**       spawns this program ("first FILE T0", T0 the clock just before
**       posix_spawn) and waits for it; its line is printed as it is.
**   service_bench first FILE [T0]
**       the first call in a fresh process: "rss_before_kib N call_us X
**       rss_after_kib N since_exec_us X status S records R runtime R":
**       VmRSS before and after the call, the call's wall time, the time
**       from T0 (the spawn) to the call's return, its status, the records
**       its callbacks got and whether this process's interpreter is running
**       after it (Py_IsInitialized; 0 when the service parsed).
**   service_bench serve FILE...
**       reads "METHOD INDEX ITERATIONS" lines on stdin and answers "NS
**       CPU_NS STATUS RECORDS SAME RUNTIME": the wall and process CPU
**       nanoseconds of ITERATIONS calls on message INDEX, the first call's
**       status and records, SAME 1 when every call got the same, RUNTIME as
**       above.  METHOD: shim (process_dns_response, the registered copying
**       callbacks) or validate (dns_shim_process with no callback set:
**       parse and check only, an answer of a status alone).
**   service_bench clients P SECONDS METHOD FILE STATUS RECORDS
**       P processes, each after one warm-up call making calls on FILE until
**       SECONDS have passed since they were all released together; each
**       call's status and records checked against STATUS and RECORDS.
**       Prints "processes P calls N seconds S calls_per_second X
**       mismatches M runtime R clients_cpu_s C" (R: how many of the
**       processes had an interpreter running at their end; C: the CPU time,
**       user and system, the processes spent between their release and
**       their last call's return, together).
*/
#define _GNU_SOURCE 1
#include "dns_shim.h"
#include "copying_callbacks.h"
#include "tool_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

/* Whether this process's own interpreter has been started: libpython is
** mapped with libdnsshim either way, started only by a call parsed here. */
static int runtime_running(void)
{
    int (*initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    return initialized != NULL && initialized();
}

typedef struct message {
    unsigned char *wire;
    int32_t len;
} message;

static dns_shim_callbacks no_callbacks;

/* One call: its status, and the records its callbacks got in *records. */
static int32_t call(int validate, const message *m, size_t *records)
{
    int32_t status;
    size_t before = sink.records;
    if (validate)
        status = dns_shim_process(m->wire, m->len, &no_callbacks);
    else
        status = process_dns_response(m->wire, m->len);
    *records = sink.records - before;
    return status;
}

static int method_code(const char *method)
{
    if (strcmp(method, "shim") == 0)
        return 0;
    if (strcmp(method, "validate") == 0)
        return 1;
    return -1;
}

static void setup(void)
{
    memset(&no_callbacks, 0, sizeof no_callbacks);
    no_callbacks.struct_size = sizeof no_callbacks;
    register_copying_callbacks();
}

/* ------------------------------------------------------------------ */

static int first(const message *m, const char *t0_text)
{
    long before, after;
    uint64_t t0, t1;
    size_t records = 0;
    int32_t status;
    setup(); /* registers the callbacks: nothing starts */
    before = rss_kib();
    t0 = now_ns();
    status = call(0, m, &records);
    t1 = now_ns();
    after = rss_kib();
    printf("rss_before_kib %ld call_us %.1f rss_after_kib %ld since_exec_us %.1f status %" PRId32
           " records %zu runtime %d\n", before, (double)(t1 - t0) / 1000.0, after,
           t0_text ? (double)(t1 - strtoull(t0_text, NULL, 10)) / 1000.0 : -1.0, status, records,
           runtime_running());
    return 0;
}

static int fresh(const char *self, const char *file)
{
    char t0[32], *argv[5];
    pid_t pid;
    int rc, wstatus;
    snprintf(t0, sizeof t0, "%" PRIu64, now_ns());
    argv[0] = (char *)self;
    argv[1] = (char *)"first";
    argv[2] = (char *)file;
    argv[3] = t0;
    argv[4] = NULL;
    fflush(stdout);
    rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    if (rc != 0) {
        fprintf(stderr, "posix_spawn: %s\n", strerror(rc));
        return 2;
    }
    while (waitpid(pid, &wstatus, 0) < 0)
        if (errno != EINTR)
            return 2;
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 2;
}

/* ------------------------------------------------------------------ */

static int serve(const message *msgs, int n)
{
    char line[256], method[64];
    int index, code;
    long iterations, i;
    setup();
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        int32_t status = 0, s;
        size_t records = 0, r;
        int same = 1;
        uint64_t t0, t1, c0, c1;
        if (sscanf(line, "%63s %d %ld", method, &index, &iterations) != 3 || index < 0 ||
            index >= n || iterations < 1 || (code = method_code(method)) < 0) {
            printf("error bad command\n");
            continue;
        }
        t0 = now_ns();
        c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        status = call(code, &msgs[index], &records);
        for (i = 1; i < iterations; i++) {
            s = call(code, &msgs[index], &r);
            same &= s == status && r == records;
        }
        c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
        t1 = now_ns();
        printf("%" PRIu64 " %" PRIu64 " %" PRId32 " %zu %d %d\n", t1 - t0, c1 - c0, status,
               records, same, runtime_running());
    }
    return 0;
}

/* ------------------------------------------------------------------ */

static int clients(int procs, double seconds, int code, const message *m, int32_t want_status,
                   size_t want_records)
{
    int ready[2], go[2], results[2], i, running = 0;
    long calls = 0, mismatches = 0, total[4], cpu_ns = 0;
    uint64_t t0, t1, deadline;
    pid_t *pids;
    char c;
    if (procs < 1 || procs > 256 || pipe(ready) || pipe(go) || pipe(results))
        return 2;
    pids = calloc((size_t)procs, sizeof *pids);
    fflush(stdout);
    for (i = 0; i < procs; i++) {
        pids[i] = fork();
        if (pids[i] < 0)
            return 2;
        if (pids[i] == 0) {
            long mine[4] = {0, 0, 0, 0};
            uint64_t end, c0;
            size_t records;
            close(ready[0]);
            close(go[1]);
            close(results[0]);
            setup();
            if (call(code, m, &records) != want_status || records != want_records)
                mine[1]++; /* the warm-up call is checked too, not counted */
            if (write(ready[1], "r", 1) != 1 || read(go[0], &end, sizeof end) != sizeof end)
                _exit(2);
            c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
            while (now_ns() < end) {
                int32_t status = call(code, m, &records);
                mine[0]++;
                mine[1] += status != want_status || records != want_records;
            }
            mine[3] = (long)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
            mine[2] = runtime_running();
            if (write(results[1], mine, sizeof mine) != sizeof mine)
                _exit(2);
            _exit(0);
        }
    }
    close(ready[1]);
    close(go[0]);
    close(results[1]);
    for (i = 0; i < procs; i++) {
        /* a process that died before it was ready holds the others: 2 min */
        struct pollfd one = {ready[0], POLLIN, 0};
        if (poll(&one, 1, 120000) != 1 || read(ready[0], &c, 1) != 1) {
            fprintf(stderr, "a client process was not ready\n");
            return 2; /* the others end at the closed go pipe */
        }
    }
    t0 = now_ns();
    deadline = t0 + (uint64_t)(seconds * 1e9);
    for (i = 0; i < procs; i++)
        if (write(go[1], &deadline, sizeof deadline) != sizeof deadline)
            return 2;
    for (i = 0; i < procs; i++) {
        if (read(results[0], total, sizeof total) != sizeof total)
            return 2;
        calls += total[0];
        mismatches += total[1];
        running += (int)total[2];
        cpu_ns += total[3];
    }
    t1 = now_ns();
    for (i = 0; i < procs; i++) {
        int wstatus;
        if (waitpid(pids[i], &wstatus, 0) < 0 || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus))
            mismatches++;
    }
    free(pids);
    printf("processes %d calls %ld seconds %.3f calls_per_second %.1f mismatches %ld "
           "runtime %d clients_cpu_s %.3f\n", procs, calls, (double)(t1 - t0) / 1e9,
           (double)calls / ((double)(t1 - t0) / 1e9), mismatches, running, (double)cpu_ns / 1e9);
    return mismatches != 0;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    message *msgs;
    int i, first_file, n, rc;
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "fresh") == 0 && argc == 3)
        return fresh(argv[0], argv[2]);
    if (strcmp(mode, "first") == 0 && (argc == 3 || argc == 4))
        first_file = 2, n = 1;
    else if (strcmp(mode, "serve") == 0 && argc >= 3)
        first_file = 2, n = argc - 2;
    else if (strcmp(mode, "clients") == 0 && argc == 8)
        first_file = 5, n = 1;
    else {
        fprintf(stderr, "usage: %s fresh FILE | first FILE [T0] | serve FILE... | clients P "
                "SECONDS METHOD FILE STATUS RECORDS\n", argv[0]);
        return 2;
    }
    msgs = calloc((size_t)n, sizeof *msgs);
    for (i = 0; i < n; i++) {
        long len = 0;
        msgs[i].wire = read_message(argv[first_file + i], 0, &len);
        if (msgs[i].wire == NULL)
            return 2;
        msgs[i].len = (int32_t)len;
    }
    if (strcmp(mode, "first") == 0)
        rc = first(&msgs[0], argc == 4 ? argv[3] : NULL);
    else if (strcmp(mode, "serve") == 0)
        rc = serve(msgs, n);
    else if (method_code(argv[4]) < 0)
        rc = 2;
    else
        rc = clients(atoi(argv[2]), atof(argv[3]), method_code(argv[4]), &msgs[0],
                     (int32_t)atol(argv[6]), (size_t)strtoul(argv[7], NULL, 10));
    for (n--; n >= 0; n--)
        free(msgs[n].wire);
    free(msgs);
    return rc;
}
