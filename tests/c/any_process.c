/*
** any_process: the library in processes that are not the ones it was
** written for, each way a host can load it or a thread interleave with
** another.  Every mode loads the libraries it is given by path, with
** dlopen, in the mode it names, and prints one line per result.
**
**   any_process local LIBDNSSHIM FILE
**       LIBDNSSHIM dlopen()ed RTLD_LOCAL, as a plugin host or glibc's NSS
**       loads a module: process_dns_response on FILE.
**   any_process local-ares LIBDNSSHIM_ARES FILE
**       LIBDNSSHIM_ARES dlopen()ed RTLD_LOCAL (libdnsshim comes in as its
**       dependency, local too): ares_parse_a_reply on FILE.
**       Both print "status N" and the detail (libdnsshim's) or the
**       addresses (c-ares's); the same lines in a setuid program.
**   any_process init LIBDNSSHIM THREADS
**       Parallelism 2, then THREADS threads call dns_shim_init() at once:
**       "init S S ...", the statuses; "hang" and exit 3 when they have not
**       all returned after two minutes.
**   any_process limit LIBDNSSHIM FILE
**       Two threads set the memory limit at once, pinned to the order that
**       loses an update when the two locks it takes are not one: thread A
**       sets 1000 bytes and is held at its second lock in the library (the
**       pool's) while thread B sets 2000 bytes whole.  Then FILE is parsed
**       in the pool and in the library's own interpreter: "pool DETAIL" and
**       "own DETAIL", which name the limit each holds.
**   any_process ares-first LIBDNSSHIM_ARES LIBDNSSHIM FILE
**       The first c-ares parse routed to the library's own interpreter, then
**       parallelism raised to 2 before that interpreter starts (pinned: the
**       parse's first pthread_once in libdnsshim_ares sets it):
**       ares_parse_a_reply's "status N" and addresses.
**   any_process ares-limit LIBDNSSHIM_ARES LIBDNSSHIM LIMIT BIG SMALL ROUNDS
**       The runtime started, then a memory limit of LIMIT bytes; ROUNDS
**       times: BIG through process_dns_response and ares_parse_a_reply,
**       then SMALL through both: "round N: S S S S", the four statuses.
**   any_process limit-first LIBDNSSHIM_ARES LIBDNSSHIM LIMIT SMALL CALLS ARES
**       A memory limit of LIMIT bytes set before the runtime starts; with
**       ARES 1 the first call is ares_parse_a_reply on SMALL ("ares S"),
**       which starts the runtime and the c-ares layer; then CALLS times
**       process_dns_response on SMALL: "process S S ...".
**   any_process failing-allocator LIBDNSSHIM SEED PERIOD CALLS FILE WHEN
**       An allocator that refuses about one call in PERIOD (a generator
**       seeded with SEED decides which), set before the start, refusing from
**       the start (WHEN "start") or once dns_shim_init() has returned
**       ("later", printing its status first); then CALLS calls of
**       process_dns_response on FILE: "status S detail D" for each call
**       whose status or detail differs from the call before, and "calls N"
**       at the end.
**   any_process image-gone LIBDNSSHIM IMAGE FILE
**       Parallelism 2, then the worker image IMAGE removed before the first
**       call: process_dns_response's "status N" and detail.
**   any_process fork-held LIBDNSSHIM LIBDNSSHIM_ARES FILE ACTION K
**       A thread does ACTION once and is held just after the K-th lock it
**       takes in the library ACTION is of (libdnsshim_ares for "ares",
**       libdnsshim for the others), and the main thread forks meanwhile;
**       the held thread goes on 300 ms later.  The child does ACTION and
**       process_dns_response on FILE.  ACTION: "reply"
**       (process_dns_response on FILE, to a registered callbacks set),
**       "limit" (dns_shim_set_memory_limit, 0), "handler"
**       (dns_shim_set_log_handler), "ares" (ares_parse_a_reply on FILE),
**       "start" (dns_shim_init, the process's first call: the runtime
**       starts in that thread; every other action runs after
**       dns_shim_init).  Prints "lock K held at the fork;
**       the child: ACTION S, process S", with "hang" for a call that did
**       not return in 20 s; or "lock K not taken (the call took N)".
**
** pthread_mutex_lock and pthread_once are this program's own (the pins):
** they forward to glibc's, and act only while a mode arms them, on the
** calls the library makes.
*/
#define _GNU_SOURCE
#include "dns_shim.h"
#include "tool_util.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The pins                                                             */

/* glibc's own, found before main (the library is loaded later). */
static int (*real_lock)(pthread_mutex_t *);
static int (*real_once)(pthread_once_t *, void (*)(void));

__attribute__((constructor)) static void find_real(void)
{
    *(void **)&real_lock = dlsym(RTLD_NEXT, "pthread_mutex_lock");
    *(void **)&real_once = dlsym(RTLD_NEXT, "pthread_once");
    if (real_lock == NULL || real_once == NULL)
        abort();
}

static const void *pin_base = NULL;   /* the library whose calls are pinned */
static volatile int lock_armed = 0;   /* limit: thread A's locks counted */
static pthread_t lock_thread;
static int lock_count = 0;
static void (*lock_pause)(void) = NULL;
static volatile int once_armed = 0;   /* ares-first */
static void (*once_action)(void) = NULL;

/* A lock taken by the pinned library, or by libdnsshim's runtime, which
** the shared library's front loads beside it (libdnsshim_runtime.so.1): a
** call's locks are both objects'. */
static int from_pinned(const void *caller)
{
    Dl_info info;
    const char *slash;
    if (pin_base == NULL || dladdr(caller, &info) == 0)
        return 0;
    if (info.dli_fbase == pin_base)
        return 1;
    slash = info.dli_fname != NULL ? strrchr(info.dli_fname, '/') : NULL;
    return slash != NULL && strcmp(slash + 1, "libdnsshim_runtime.so.1") == 0;
}

static volatile int hold_armed = 0;   /* fork-held: thread A's locks counted */
static pthread_t hold_thread;
static int hold_count = 0, hold_at = 0;
static void (*hold_pause)(void) = NULL;

int pthread_mutex_lock(pthread_mutex_t *mutex)
{
    const void *caller = __builtin_return_address(0);
    int rc;
    if (lock_armed && pthread_equal(pthread_self(), lock_thread) && from_pinned(caller) &&
        ++lock_count == 2) {
        lock_armed = 0;
        lock_pause();
    }
    rc = real_lock(mutex);
    if (hold_armed && pthread_equal(pthread_self(), hold_thread) && from_pinned(caller) &&
        ++hold_count == hold_at) {
        hold_armed = 0;
        hold_pause(); /* with the lock held */
    }
    return rc;
}

int pthread_once(pthread_once_t *once, void (*init)(void))
{
    if (once_armed && from_pinned(__builtin_return_address(0))) {
        once_armed = 0;
        once_action();
    }
    return real_once(once, init);
}

/* ------------------------------------------------------------------ */
/* Loading                                                              */

static void *open_lib(const char *path, int mode)
{
    void *lib = dlopen(path, RTLD_NOW | mode);
    if (lib == NULL) {
        fprintf(stderr, "FAIL dlopen %s: %s\n", path, dlerror());
        exit(1);
    }
    return lib;
}

static void *need(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        fprintf(stderr, "FAIL no %s\n", name);
        exit(1);
    }
    return p;
}

static const void *base_of(void *lib, const char *symbol)
{
    Dl_info info;
    return dladdr(need(lib, symbol), &info) != 0 ? info.dli_fbase : NULL;
}

static uint8_t *message(const char *path, long *len)
{
    uint8_t *m = read_message(path, 0, len);
    if (m == NULL) {
        fprintf(stderr, "FAIL cannot read %s\n", path);
        exit(1);
    }
    return m;
}

typedef int32_t (*process_fn)(uint8_t *, int32_t);
typedef const char *(*last_error_fn)(void);
typedef int32_t (*parallelism_fn)(uint32_t);
typedef int32_t (*limit_fn)(size_t);
typedef int32_t (*init_fn)(void);
typedef int (*ares_a_fn)(const unsigned char *, int, struct hostent **, void *, int *);
typedef void (*free_hostent_fn)(struct hostent *);

static void print_process(void *lib, const char *file)
{
    long len = 0;
    uint8_t *m = message(file, &len);
    int32_t rc = ((process_fn)need(lib, "process_dns_response"))(m, (int32_t)len);
    printf("status %d\n", (int)rc);
    printf("detail %s\n", ((last_error_fn)need(lib, "dns_shim_last_error"))());
    free(m);
}

static void print_ares_a(void *lib, const char *file)
{
    long len = 0;
    uint8_t *m = message(file, &len);
    struct hostent *host = NULL;
    int status = ((ares_a_fn)need(lib, "ares_parse_a_reply"))(m, (int)len, &host, NULL, NULL);
    char text[INET6_ADDRSTRLEN];
    printf("status %d\n", status);
    if (host != NULL) {
        printf("name %s\n", host->h_name);
        for (char **a = host->h_addr_list; *a != NULL; a++)
            printf("address %s\n", inet_ntop(host->h_addrtype, *a, text, sizeof text));
        ((free_hostent_fn)need(lib, "ares_free_hostent"))(host);
    }
    free(m);
}

/* ------------------------------------------------------------------ */
/* init                                                                 */

static pthread_barrier_t start;
static init_fn init_call;

static void *init_thread(void *out)
{
    pthread_barrier_wait(&start);
    *(int32_t *)out = init_call();
    return NULL;
}

static int mode_init(const char *path, int threads)
{
    void *lib = open_lib(path, RTLD_GLOBAL);
    pthread_t t[16];
    int32_t rc[16];
    int i;
    if (threads < 1 || threads > 16)
        return 2;
    init_call = (init_fn)need(lib, "dns_shim_init");
    if (((parallelism_fn)need(lib, "dns_shim_set_parallelism"))(2) != DNS_SHIM_OK) {
        fprintf(stderr, "FAIL parallelism 2: %s\n",
                ((last_error_fn)need(lib, "dns_shim_last_error"))());
        return 1;
    }
    alarm(120); /* a deadlock ends here, not in the test's timeout */
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, init_thread, &rc[i]);
    for (i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    alarm(0);
    printf("init");
    for (i = 0; i < threads; i++)
        printf(" %d", (int)rc[i]);
    printf("\n");
    return 0;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char line[] = "hang\n";
    (void)!write(1, line, sizeof line - 1);
    _exit(3);
}

/* ------------------------------------------------------------------ */
/* limit                                                                */

static limit_fn set_limit;
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pin_cond = PTHREAD_COND_INITIALIZER;
static int pin_stage = 0; /* 1: A is held, B may go; 2: B is done */

static void wait_stage(int stage)
{
    real_lock(&pin_lock);
    while (pin_stage < stage)
        pthread_cond_wait(&pin_cond, &pin_lock);
    pthread_mutex_unlock(&pin_lock);
}

static void set_stage(int stage)
{
    real_lock(&pin_lock);
    pin_stage = stage;
    pthread_cond_broadcast(&pin_cond);
    pthread_mutex_unlock(&pin_lock);
}

/* Thread A, at its second lock in the library: B sets its limit whole. */
static void hold_a(void)
{
    set_stage(1);
    wait_stage(2);
}

static void *thread_a(void *unused)
{
    (void)unused;
    lock_thread = pthread_self();
    lock_count = 0;
    lock_armed = 1;
    set_limit(1000);
    lock_armed = 0;
    if (pin_stage < 1) { /* the library took fewer locks: B goes after */
        set_stage(1);
        wait_stage(2);
    }
    return NULL;
}

static void *thread_b(void *unused)
{
    (void)unused;
    wait_stage(1);
    set_limit(2000);
    set_stage(2);
    return NULL;
}

static int mode_limit(const char *path, const char *file)
{
    void *lib = open_lib(path, RTLD_GLOBAL);
    parallelism_fn parallelism = (parallelism_fn)need(lib, "dns_shim_set_parallelism");
    pthread_t a, b;
    set_limit = (limit_fn)need(lib, "dns_shim_set_memory_limit");
    pin_base = base_of(lib, "dns_shim_set_memory_limit");
    lock_pause = hold_a;
    if (parallelism(2) != DNS_SHIM_OK || ((init_fn)need(lib, "dns_shim_init"))() != DNS_SHIM_OK) {
        fprintf(stderr, "FAIL starting the pool: %s\n",
                ((last_error_fn)need(lib, "dns_shim_last_error"))());
        return 1;
    }
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    {
        long len = 0;
        uint8_t *m = message(file, &len);
        process_fn process = (process_fn)need(lib, "process_dns_response");
        last_error_fn last_error = (last_error_fn)need(lib, "dns_shim_last_error");
        process(m, (int32_t)len);
        printf("pool %s\n", last_error());
        parallelism(1);
        process(m, (int32_t)len);
        printf("own %s\n", last_error());
        free(m);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* ares-first                                                           */

static parallelism_fn raise_parallelism;

static void raise_to_two(void)
{
    int32_t rc = raise_parallelism(2);
    if (rc != DNS_SHIM_OK)
        fprintf(stderr, "FAIL parallelism 2: %d\n", (int)rc);
}

static int mode_ares_first(const char *ares_path, const char *path, const char *file)
{
    void *ares = open_lib(ares_path, RTLD_GLOBAL);
    void *lib = open_lib(path, RTLD_GLOBAL | RTLD_NOLOAD);
    raise_parallelism = (parallelism_fn)need(lib, "dns_shim_set_parallelism");
    pin_base = base_of(ares, "ares_parse_a_reply");
    once_action = raise_to_two;
    once_armed = 1;
    print_ares_a(ares, file);
    return 0;
}

/* ------------------------------------------------------------------ */
/* ares-limit                                                           */

static int ares_status(void *ares, const uint8_t *m, long len)
{
    struct hostent *host = NULL;
    int status = ((ares_a_fn)need(ares, "ares_parse_a_reply"))(m, (int)len, &host, NULL, NULL);
    if (host != NULL)
        ((free_hostent_fn)need(ares, "ares_free_hostent"))(host);
    return status;
}

static int mode_ares_limit(char **argv)
{
    void *ares = open_lib(argv[2], RTLD_GLOBAL);
    void *lib = open_lib(argv[3], RTLD_GLOBAL | RTLD_NOLOAD);
    process_fn process = (process_fn)need(lib, "process_dns_response");
    long big_len = 0, small_len = 0;
    uint8_t *big = message(argv[5], &big_len), *small = message(argv[6], &small_len);
    int rounds = atoi(argv[7]), i;
    if (((init_fn)need(lib, "dns_shim_init"))() != DNS_SHIM_OK ||
        ((limit_fn)need(lib, "dns_shim_set_memory_limit"))(strtoull(argv[4], NULL, 10)) !=
            DNS_SHIM_OK) {
        fprintf(stderr, "FAIL starting, or the limit\n");
        return 1;
    }
    for (i = 0; i < rounds; i++) {
        int a = (int)process(big, (int32_t)big_len);
        int b = ares_status(ares, big, big_len);
        int c = ares_status(ares, small, small_len);
        int d = (int)process(small, (int32_t)small_len);
        printf("round %d: %d %d %d %d\n", i, a, b, c, d);
    }
    free(big);
    free(small);
    return 0;
}

/* ------------------------------------------------------------------ */
/* limit-first                                                          */

static int mode_limit_first(char **argv)
{
    void *ares = open_lib(argv[2], RTLD_GLOBAL);
    void *lib = open_lib(argv[3], RTLD_GLOBAL | RTLD_NOLOAD);
    process_fn process = (process_fn)need(lib, "process_dns_response");
    long small_len = 0;
    uint8_t *small = message(argv[5], &small_len);
    int calls = atoi(argv[6]), i;
    if (((limit_fn)need(lib, "dns_shim_set_memory_limit"))(strtoull(argv[4], NULL, 10)) !=
        DNS_SHIM_OK) {
        fprintf(stderr, "FAIL the limit\n");
        return 1;
    }
    if (strcmp(argv[7], "1") == 0)
        printf("ares %d\n", ares_status(ares, small, small_len));
    printf("process");
    for (i = 0; i < calls; i++)
        printf(" %d", (int)process(small, (int32_t)small_len));
    printf("\n");
    free(small);
    return 0;
}

/* ------------------------------------------------------------------ */
/* failing-allocator                                                    */

static uint64_t refuse_state;
static uint64_t refuse_period; /* 0: refuses nothing */

/* Whether this allocation is refused: a xorshift generator, one draw per
** call (thread-safe enough for its purpose: an atomic step). */
static int refuse(void)
{
    uint64_t x = __atomic_load_n(&refuse_state, __ATOMIC_RELAXED), next;
    do {
        next = x;
        next ^= next << 13;
        next ^= next >> 7;
        next ^= next << 17;
    } while (!__atomic_compare_exchange_n(&refuse_state, &x, next, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return refuse_period != 0 && next % refuse_period == 0;
}

static void *refusing_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return refuse() ? NULL : malloc(size);
}

static void *refusing_calloc(void *ctx, size_t n, size_t size)
{
    (void)ctx;
    return refuse() ? NULL : calloc(n, size);
}

static void *refusing_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    return refuse() ? NULL : realloc(p, size);
}

static void plain_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static int mode_failing_allocator(char **argv)
{
    void *lib = open_lib(argv[2], RTLD_GLOBAL);
    typedef int32_t (*allocator_fn)(const dns_shim_allocator *);
    dns_shim_allocator a = {sizeof a, NULL, refusing_malloc, refusing_calloc, refusing_realloc,
                            plain_free};
    process_fn process = (process_fn)need(lib, "process_dns_response");
    last_error_fn last_error = (last_error_fn)need(lib, "dns_shim_last_error");
    long len = 0, calls = atol(argv[5]), i;
    uint8_t *m = message(argv[6], &len);
    char before[2048] = "";
    int32_t last = 1;
    uint64_t period = strtoull(argv[4], NULL, 10);
    int later = strcmp(argv[7], "later") == 0;
    refuse_state = strtoull(argv[3], NULL, 10) * 2654435761u + 1;
    refuse_period = later ? 0 : period;
    if (period == 0 || ((allocator_fn)need(lib, "dns_shim_set_allocator"))(&a) != 0) {
        fprintf(stderr, "FAIL set_allocator\n");
        return 1;
    }
    if (later) {
        printf("init %d\n", (int)((init_fn)need(lib, "dns_shim_init"))());
        __atomic_store_n(&refuse_period, period, __ATOMIC_RELAXED);
    }
    for (i = 0; i < calls; i++) {
        int32_t rc = process(m, (int32_t)len);
        if (rc != last || strcmp(before, last_error()) != 0) {
            printf("status %d detail %s\n", (int)rc, last_error());
            last = rc;
            snprintf(before, sizeof before, "%s", last_error());
        }
    }
    printf("calls %ld\n", calls);
    free(m);
    return 0;
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* fork-held                                                            */

static void *held_lib, *held_ares;
static const char *held_action, *held_file;
static int held_taken = 0;

static void quiet_handler(void *ctx, int32_t level, const char *text)
{
    (void)ctx; (void)level; (void)text;
}

static int32_t on_a(void *ctx, const dns_shim_a *record)
{
    (void)ctx; (void)record;
    return 0;
}

/* ACTION once: its status (c-ares's for "ares"). */
static int do_action(void)
{
    long len = 0;
    uint8_t *m;
    int rc;
    if (strcmp(held_action, "limit") == 0)
        return (int)((limit_fn)need(held_lib, "dns_shim_set_memory_limit"))(0);
    if (strcmp(held_action, "start") == 0)
        return (int)((init_fn)need(held_lib, "dns_shim_init"))();
    if (strcmp(held_action, "handler") == 0) {
        ((void (*)(dns_shim_log_handler, void *))need(held_lib, "dns_shim_set_log_handler"))(
            quiet_handler, NULL);
        return 0;
    }
    if (strcmp(held_action, "ares") == 0) {
        m = message(held_file, &len);
        rc = ares_status(held_ares, m, len);
        free(m);
        return rc;
    }
    m = message(held_file, &len);
    rc = (int)((process_fn)need(held_lib, "process_dns_response"))(m, (int32_t)len);
    free(m);
    return rc;
}

static void hold_here(void)
{
    held_taken = 1;
    set_stage(1);
    wait_stage(2);
}

static void *held_thread(void *unused)
{
    (void)unused;
    hold_thread = pthread_self();
    hold_pause = hold_here;
    hold_count = 0;
    hold_armed = 1;
    (void)do_action();
    hold_armed = 0;
    if (!held_taken)
        set_stage(1);
    return NULL;
}

static void *releaser(void *unused)
{
    (void)unused;
    usleep(300000);
    set_stage(2);
    return NULL;
}

static int mode_fork_held(char **argv)
{
    pthread_t a, r;
    pid_t child;
    int status, pipe_fd[2];
    char line[256] = "";
    ssize_t got;

    held_ares = open_lib(argv[3], RTLD_GLOBAL);
    held_lib = open_lib(argv[2], RTLD_GLOBAL | RTLD_NOLOAD);
    held_file = argv[4];
    held_action = argv[5];
    hold_at = atoi(argv[6]);
    if (strcmp(held_action, "start") != 0 &&
        ((init_fn)need(held_lib, "dns_shim_init"))() != DNS_SHIM_OK) {
        fprintf(stderr, "FAIL dns_shim_init: %s\n",
                ((last_error_fn)need(held_lib, "dns_shim_last_error"))());
        return 1;
    }
    {
        dns_shim_callbacks cb;
        memset(&cb, 0, sizeof cb);
        cb.struct_size = sizeof cb;
        cb.on_a = on_a;
        if (((int32_t (*)(const dns_shim_callbacks *))need(
                held_lib, "dns_shim_register_callbacks"))(&cb) != DNS_SHIM_OK)
            return 1;
    }
    pin_base = strcmp(held_action, "ares") == 0 ? base_of(held_ares, "ares_parse_a_reply")
                                                : base_of(held_lib, "process_dns_response");
    pthread_create(&a, NULL, held_thread, NULL);
    wait_stage(1);
    if (!held_taken) {
        pthread_join(a, NULL);
        printf("lock %d not taken (the call took %d)\n", hold_at, hold_count);
        return 0;
    }
    pthread_create(&r, NULL, releaser, NULL);
    if (pipe(pipe_fd) != 0)
        return 1;
    fflush(stdout);
    child = fork();
    if (child == 0) {
        int first, second;
        close(pipe_fd[0]);
        signal(SIGALRM, SIG_DFL);
        alarm(20);
        first = do_action();
        held_action = "reply";
        second = do_action();
        snprintf(line, sizeof line, "%d, process %d", first, second);
        (void)!write(pipe_fd[1], line, strlen(line));
        _exit(0);
    }
    close(pipe_fd[1]);
    got = read(pipe_fd[0], line, sizeof line - 1);
    line[got > 0 ? got : 0] = '\0';
    waitpid(child, &status, 0);
    pthread_join(r, NULL);
    pthread_join(a, NULL);
    printf("lock %d held at the fork; the child: %s %s\n", hold_at, argv[5],
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? line : "hang");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    if (argc == 4 && strcmp(argv[1], "local") == 0) {
        print_process(open_lib(argv[2], RTLD_LOCAL), argv[3]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "local-ares") == 0) {
        print_ares_a(open_lib(argv[2], RTLD_LOCAL), argv[3]);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "init") == 0)
        return mode_init(argv[2], atoi(argv[3]));
    if (argc == 4 && strcmp(argv[1], "limit") == 0)
        return mode_limit(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "ares-first") == 0)
        return mode_ares_first(argv[2], argv[3], argv[4]);
    if (argc == 8 && strcmp(argv[1], "ares-limit") == 0)
        return mode_ares_limit(argv);
    if (argc == 8 && strcmp(argv[1], "limit-first") == 0)
        return mode_limit_first(argv);
    if (argc == 8 && strcmp(argv[1], "failing-allocator") == 0)
        return mode_failing_allocator(argv);
    if (argc == 5 && strcmp(argv[1], "image-gone") == 0) {
        void *lib = open_lib(argv[2], RTLD_GLOBAL);
        if (((parallelism_fn)need(lib, "dns_shim_set_parallelism"))(2) != DNS_SHIM_OK ||
            unlink(argv[3]) != 0) {
            fprintf(stderr, "FAIL parallelism 2, then removing %s\n", argv[3]);
            return 1;
        }
        print_process(lib, argv[4]);
        return 0;
    }
    if (argc == 7 && strcmp(argv[1], "fork-held") == 0)
        return mode_fork_held(argv);
    fprintf(stderr, "usage: any_process local|local-ares|init|limit|ares-first|ares-limit|"
            "failing-allocator|image-gone|fork-held ...\n");
    return 2;
}
