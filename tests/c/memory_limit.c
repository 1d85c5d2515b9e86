/*
** memory_limit: the host's allocator and the memory limit, from C.
**
**   memory_limit count FILE...          a counting allocator from the start:
**                                       how many allocations and bytes reach
**                                       it at start-up and for each message,
**                                       and how many calls of the C library's
**                                       malloc, calloc and realloc the
**                                       library made around it (this program
**                                       defines those, so that it sees every
**                                       one, the runtime's included); at
**                                       start-up by the object that called:
**                                       the dynamic loader, the C library,
**                                       libpython, cffi's backend, anything
**                                       else; for each message, by where
**                                       they come from: cffi's backend, the
**                                       C library's strerror, the C library
**                                       otherwise, anything else
**   memory_limit limit BYTES BIG SMALL [ROUNDS]
**                                       the limit set before the start (0:
**                                       counting only), then ROUNDS times BIG
**                                       (must fail -13) and SMALL (must parse);
**                                       the bytes the runtime holds after each
**                                       round must not grow
**   memory_limit late BIG SMALL         the functions once the runtime runs:
**                                       the allocator is refused, a limit is
**                                       taken and holds (BIG fails -13, SMALL
**                                       parses), and 0 lifts it (BIG parses)
**   memory_limit args                   the arguments dns_shim_set_allocator
**                                       refuses, and those it takes
**   memory_limit budget HEADROOM BIG SMALL PAIRS
**                                       the integrator's budget: the
**                                       counting allocator from the start,
**                                       the runtime started, then the limit
**                                       set to the bytes it holds plus
**                                       HEADROOM (signed); BIG once, then
**                                       PAIRS times BIG and SMALL, each call
**                                       printed with its status, its
**                                       callbacks (SMALL's in full: every
**                                       field the C side received) and the
**                                       bytes held after it
**   memory_limit startup LIMIT BIG SMALL
**                                       the limit set before the first call,
**                                       which starts the runtime: SMALL, then
**                                       the limit lifted (0): SMALL and BIG,
**                                       printed as in budget
**
** Prints one line per step; exit status 0, or 1 when a check failed.
*/
#define _GNU_SOURCE 1 /* dladdr */
#include "dns_shim.h"
#include "tool_util.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The C library's allocation functions, defined by this program
** (alloc_watch.h); a call made while the library works (watching) and not
** from the counting allocator below is counted as one that went around it,
** and, while a message is parsed, by where it comes from: the object of its
** caller, and for the C library's, whether strerror is on the stack
** (dladdr names the frames). */
#include "alloc_watch.h"

enum source {
    FROM_CFFI,     /* cffi's backend (_cffi_backend): its ffi.new() memory */
    FROM_STRERROR, /* the C library's strerror: the text of an errno */
    FROM_LIBC,     /* the C library's own otherwise (opendir's DIR...) */
    FROM_OTHER,    /* anything else: CPython, this library */
    SOURCES
};
static const char *const source_names[SOURCES] = {"cffi", "strerror", "libc", "other"};

static __thread int in_host = 0;
static __thread int in_classify = 0;
static int watching = 0;   /* 1: counted; 2: by source too */
static int by_source_too = 0; /* count mode: the messages' by source */
static uint64_t around = 0;
static uint64_t by_source[SOURCES];

static enum source source_of(const void *caller)
{
    void *frames[12];
    int i, n;
    if (object_is(caller, "/_cffi_backend"))
        return FROM_CFFI;
    if (!object_is(caller, "/libc.so"))
        return FROM_OTHER;
    n = backtrace(frames, 12);
    for (i = 0; i < n; i++) {
        Dl_info info;
        if (dladdr(frames[i], &info) != 0 && info.dli_sname != NULL &&
            strncmp(info.dli_sname, "strerror", 8) == 0)
            return FROM_STRERROR;
    }
    return FROM_LIBC;
}

/* At start-up (count mode), what went around by the object of its caller. */
enum object {
    BY_LOADER, /* the dynamic loader (dlopen of the runtime's compiled modules) */
    BY_LIBC,   /* the C library (opendir, stdio, tzset) */
    BY_PYTHON, /* libpython (CPython's own, on purpose: locks, path strings) */
    BY_CFFI,   /* cffi's backend */
    BY_OTHER,  /* anything else: this program, the library, a static CPython */
    OBJECTS
};
static const char *const object_names[OBJECTS] = {"loader", "libc", "python", "cffi",
                                                  "other"};
static uint64_t by_object[OBJECTS];

static enum object object_of(const void *caller)
{
    if (object_is(caller, "/ld-linux"))
        return BY_LOADER;
    if (object_is(caller, "/libc.so"))
        return BY_LIBC;
    if (object_is(caller, "/libpython"))
        return BY_PYTHON;
    if (object_is(caller, "/_cffi_backend"))
        return BY_CFFI;
    return BY_OTHER;
}

static void went_around(const void *caller)
{
    if (!watching || in_host || in_classify)
        return;
    __atomic_add_fetch(&around, 1, __ATOMIC_RELAXED);
    if (watching == 3) {
        in_classify = 1;
        __atomic_add_fetch(&by_object[object_of(caller)], 1, __ATOMIC_RELAXED);
        in_classify = 0;
    }
    if (watching == 2) {
        in_classify = 1;
        __atomic_add_fetch(&by_source[source_of(caller)], 1, __ATOMIC_RELAXED);
        in_classify = 0;
    }
}

/* The host's allocator: libc's, counted, with a header of its own to know
** sizes (so that the runtime's accounting and ours are independent). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t calls = 0;
static long long held = 0;
static int callbacks_seen = 0;

#define HEADER 16

static void *count_malloc(void *ctx, size_t n)
{
    char *p;
    (void)ctx;
    in_host = 1;
    p = malloc(n + HEADER);
    in_host = 0;
    if (p == NULL)
        return NULL;
    *(size_t *)p = n;
    pthread_mutex_lock(&lock);
    calls++;
    held += (long long)n;
    pthread_mutex_unlock(&lock);
    return p + HEADER;
}

static void *count_calloc(void *ctx, size_t a, size_t b)
{
    void *p = count_malloc(ctx, a * b);
    if (p != NULL)
        memset(p, 0, a * b);
    return p;
}

static void count_free(void *ctx, void *ptr)
{
    char *p;
    (void)ctx;
    if (ptr == NULL)
        return;
    p = (char *)ptr - HEADER;
    pthread_mutex_lock(&lock);
    held -= (long long)*(size_t *)p;
    pthread_mutex_unlock(&lock);
    free(p);
}

static void *count_realloc(void *ctx, void *ptr, size_t n)
{
    char *p, *q;
    size_t old;
    (void)ctx;
    if (ptr == NULL)
        return count_malloc(ctx, n);
    p = (char *)ptr - HEADER;
    old = *(size_t *)p;
    in_host = 1;
    q = realloc(p, n + HEADER);
    in_host = 0;
    if (q == NULL)
        return NULL;
    *(size_t *)q = n;
    pthread_mutex_lock(&lock);
    calls++;
    held += (long long)n - (long long)old;
    pthread_mutex_unlock(&lock);
    return q + HEADER;
}

static void snapshot(uint64_t *c, long long *h)
{
    pthread_mutex_lock(&lock);
    *c = calls;
    *h = held;
    pthread_mutex_unlock(&lock);
}

static int32_t on_any(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    (void)h;
    callbacks_seen++;
    return 0;
}

/* What the callbacks of one call received, in full (budget, startup):
** every field of the header and of each A record, one text. */
static char seen_text[4096];
static size_t seen_len = 0;

static void seen(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void seen(const char *fmt, ...)
{
    va_list ap;
    int n;
    if (seen_len >= sizeof seen_text - 1)
        return;
    va_start(ap, fmt);
    n = vsnprintf(seen_text + seen_len, sizeof seen_text - seen_len, fmt, ap);
    va_end(ap);
    if (n > 0)
        seen_len += (size_t)n;
    if (seen_len > sizeof seen_text - 1)
        seen_len = sizeof seen_text - 1;
}

static int32_t on_header_text(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    callbacks_seen++;
    seen("%sheader id %u flags 0x%04x opcode %u rcode %u qd %u an %u ns %u ar %u qname %s "
         "qtype %u qclass %u edns %d", seen_len ? "; " : "", h->id, h->flags, h->opcode,
         h->rcode, h->qdcount, h->ancount, h->nscount, h->arcount,
         h->qname ? h->qname : "(null)", h->qtype, h->qclass, (int)h->edns_version);
    return 0;
}

static int32_t on_a_text(void *ctx, const dns_shim_a *a)
{
    (void)ctx;
    callbacks_seen++;
    seen("%sa %s type %u class %u ttl %u section %u index %u %u.%u.%u.%u",
         seen_len ? "; " : "", a->rr.owner ? a->rr.owner : "(null)", a->rr.type,
         a->rr.rclass, (unsigned)a->rr.ttl, (unsigned)a->rr.section, (unsigned)a->rr.index,
         a->address[0], a->address[1], a->address[2], a->address[3]);
    return 0;
}

/* One call with the recording callbacks: its status; what they received
** is in seen_text, how many calls in callbacks_seen. */
static int32_t parse_recorded(const unsigned char *wire, long len)
{
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                  DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_header = on_header_text;
    cb.on_a = on_a_text;
    callbacks_seen = 0;
    seen_len = 0;
    seen_text[0] = '\0';
    return dns_shim_process(wire, (int32_t)len, &cb);
}

/* budget and startup: "NAME STATUS (N callbacks[: WHAT THEY GOT]), held
** BYTES" -- the full text only for a call that is to parse (SMALL), the
** failure detail for a call that failed. */
static void print_call(const char *name, int32_t rc, int full)
{
    long long h;
    uint64_t c;
    snapshot(&c, &h);
    printf("%s %d (%d callbacks%s%s)%s%s, held %lld\n", name, (int)rc, callbacks_seen,
           full && seen_len ? ": " : "", full ? seen_text : "", rc ? ": " : "",
           rc ? dns_shim_last_error() : "", h);
}

static unsigned char *read_or_exit(const char *path, long *len)
{
    unsigned char *wire = read_message(path, 0, len);
    if (wire == NULL)
        exit(2);
    return wire;
}

static int32_t parse(const char *path)
{
    long len = 0;
    unsigned char *wire = read_message(path, 0, &len);
    dns_shim_callbacks cb;
    int32_t rc;
    if (wire == NULL)
        exit(2);
    watching = by_source_too ? 2 : 1;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                  DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_header = on_any;
    rc = dns_shim_process(wire, (int32_t)len, &cb);
    watching = 0;
    free(wire);
    return rc;
}

static int use_counting_allocator(void)
{
    dns_shim_allocator a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.malloc = count_malloc;
    a.calloc = count_calloc;
    a.realloc = count_realloc;
    a.free = count_free;
    return dns_shim_set_allocator(&a);
}

int main(int argc, char **argv)
{
    uint64_t c0, c1, a0, a1;
    long long h0, h1;
    int i, failed = 0;

    if (argc >= 3 && strcmp(argv[1], "count") == 0) {
        int32_t rc;
        void *frames[1];
        uint64_t s0[SOURCES], s1[SOURCES];
        int s;
        printf("set_allocator %d\n", (int)use_counting_allocator());
        watching = 3;
        rc = dns_shim_init();
        watching = 0;
        printf("init %d\n", (int)rc);
        snapshot(&c0, &h0);
        a0 = __atomic_load_n(&around, __ATOMIC_RELAXED);
        printf("start-up: %" PRIu64 " allocations, %lld bytes held, %" PRIu64 " around it (",
               c0, h0, a0);
        for (s = 0; s < OBJECTS; s++)
            printf("%s%s %" PRIu64, s ? ", " : "", object_names[s], by_object[s]);
        printf(")\n");
        backtrace(frames, 1); /* loads its unwinder now, not in a parse */
        by_source_too = 1;
        for (s = 0; s < SOURCES; s++)
            s0[s] = __atomic_load_n(&by_source[s], __ATOMIC_RELAXED);
        for (i = 2; i < argc; i++) {
            rc = parse(argv[i]);
            snapshot(&c1, &h1);
            a1 = __atomic_load_n(&around, __ATOMIC_RELAXED);
            printf("%s: status %d, %" PRIu64 " allocations, %" PRIu64 " around it (", argv[i],
                   (int)rc, c1 - c0, a1 - a0);
            for (s = 0; s < SOURCES; s++) {
                s1[s] = __atomic_load_n(&by_source[s], __ATOMIC_RELAXED);
                printf("%s%s %" PRIu64, s ? ", " : "", source_names[s], s1[s] - s0[s]);
                s0[s] = s1[s];
            }
            printf(")\n");
            c0 = c1;
            a0 = a1;
        }
        return 0;
    }
    if (argc >= 5 && strcmp(argv[1], "limit") == 0) {
        int rounds = argc > 5 ? atoi(argv[5]) : 3;
        long long first = -1;
        printf("set_allocator %d\n", (int)use_counting_allocator());
        printf("set_memory_limit %d\n", (int)dns_shim_set_memory_limit(strtoull(argv[2], NULL, 0)));
        printf("init %d\n", (int)dns_shim_init());
        for (i = 0; i < rounds; i++) {
            int32_t big, small;
            callbacks_seen = 0;
            big = parse(argv[3]);
            printf("round %d: big %d (%d callbacks)%s%s\n", i, (int)big, callbacks_seen,
                   big ? ": " : "", big ? dns_shim_last_error() : "");
            callbacks_seen = 0;
            small = parse(argv[4]);
            snapshot(&c1, &h1);
            if (first < 0)
                first = h1;
            printf("round %d: small %d (%d callbacks), held %+lld bytes since round 0\n", i,
                   (int)small, callbacks_seen, h1 - first);
            failed |= small != 0 || callbacks_seen != 1;
        }
        return failed;
    }
    if (argc == 5 && strcmp(argv[1], "late") == 0) {
        int32_t rc;
        printf("init %d\n", (int)dns_shim_init());
        printf("set_allocator %d: %s\n", (int)use_counting_allocator(), dns_shim_last_error());
        printf("set_memory_limit %d\n", (int)dns_shim_set_memory_limit(strtoull(argv[2], NULL, 0)));
        callbacks_seen = 0;
        rc = parse(argv[3]);
        printf("big %d (%d callbacks)%s%s\n", (int)rc, callbacks_seen, rc ? ": " : "",
               rc ? dns_shim_last_error() : "");
        callbacks_seen = 0;
        rc = parse(argv[4]);
        printf("small %d (%d callbacks)\n", (int)rc, callbacks_seen);
        printf("set_memory_limit %d\n", (int)dns_shim_set_memory_limit(0));
        callbacks_seen = 0;
        rc = parse(argv[3]);
        printf("big %d (%d callbacks)\n", (int)rc, callbacks_seen);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "args") == 0) {
        dns_shim_allocator a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a - 1;
        a.malloc = count_malloc;
        a.realloc = count_realloc;
        a.free = count_free;
        printf("struct_size-1 %d: %s\n", (int)dns_shim_set_allocator(&a), dns_shim_last_error());
        a.struct_size = sizeof a;
        a.free = NULL;
        printf("no free %d: %s\n", (int)dns_shim_set_allocator(&a), dns_shim_last_error());
        a.free = count_free;
        printf("no calloc %d: %s\n", (int)dns_shim_set_allocator(&a), dns_shim_last_error());
        printf("NULL %d: %s\n", (int)dns_shim_set_allocator(NULL), dns_shim_last_error());
        printf("init %d\n", (int)dns_shim_init());
        snapshot(&c0, &h0);
        printf("allocations seen %s\n", c0 ? "yes" : "no");
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "budget") == 0) {
        long len_big = 0, len_small = 0;
        unsigned char *big = read_or_exit(argv[3], &len_big);
        unsigned char *small = read_or_exit(argv[4], &len_small);
        int pairs = atoi(argv[5]);
        long long limit;
        printf("set_allocator %d\n", (int)use_counting_allocator());
        printf("init %d\n", (int)dns_shim_init());
        snapshot(&c0, &h0);
        limit = h0 + strtoll(argv[2], NULL, 0);
        printf("set_memory_limit %d: held %lld, limit %lld\n",
               (int)dns_shim_set_memory_limit(limit > 0 ? (size_t)limit : 1), h0, limit);
        print_call("first big", parse_recorded(big, len_big), 0);
        for (i = 0; i < pairs; i++) {
            char name[32];
            snprintf(name, sizeof name, "pair %d: big", i);
            print_call(name, parse_recorded(big, len_big), 0);
            snprintf(name, sizeof name, "pair %d: small", i);
            print_call(name, parse_recorded(small, len_small), 1);
        }
        free(big);
        free(small);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "startup") == 0) {
        long len_big = 0, len_small = 0;
        unsigned char *big = read_or_exit(argv[3], &len_big);
        unsigned char *small = read_or_exit(argv[4], &len_small);
        printf("set_allocator %d\n", (int)use_counting_allocator());
        printf("set_memory_limit %d\n",
               (int)dns_shim_set_memory_limit(strtoull(argv[2], NULL, 0)));
        print_call("first small", parse_recorded(small, len_small), 1);
        printf("set_memory_limit %d\n", (int)dns_shim_set_memory_limit(0));
        print_call("small", parse_recorded(small, len_small), 1);
        print_call("big", parse_recorded(big, len_big), 0);
        free(big);
        free(small);
        return 0;
    }
    fprintf(stderr, "usage: %s count FILE... | limit BYTES BIG SMALL [ROUNDS] | late BYTES BIG SMALL | args"
            " | budget HEADROOM BIG SMALL PAIRS | startup LIMIT BIG SMALL\n", argv[0]);
    return 2;
}
