/*
** pool_instances: N private interpreters in one process, from one worker image
** (dnsshim_build/worker.py), and T threads sharing them.
**
**   pool_instances WORKER.so INSTANCES THREADS [--poison N] [--fork] [--bench SECONDS] FILE...
**   pool_instances --library LIBDNSSHIM.so PARALLELISM THREADS [same options] FILE...
**
** --library: the same runs through the library's own pool instead of this
** program's: LIBDNSSHIM.so is dlopen()ed once, gets
** dns_shim_set_parallelism(PARALLELISM) and dns_shim_init, and every thread
** calls it; the last line is "library parallelism N".  Its --poison holds
** the library's first interpreter (the lowest idle one takes a call) with a
** call whose header callback waits, after the poison and the 1-byte limit
** ran there, so that the victims go to the second.
**
** Each instance is the image copied into a memfd and dlopen()ed
** RTLD_NOW | RTLD_LOCAL by its /proc/self/fd path, the memfd kept open for
** the instance's lifetime: the dynamic loader matches a path it has loaded
** before by name, so a closed memfd whose number comes back would hand out the
** same instance again.  The instances are started on demand and kept on a free
** list (mutex and condition variable); a thread takes one, parses, copies the
** instance's failure detail (dns_shim_last_error is per instance and thread)
** and gives it back.
**
** Default: the threads parse every FILE, each message once, with
** dns_shim_process and callbacks that summarise every record, header and
** EDNS option; then one line per FILE, in argument order:
**     NAME STATUS DETAIL | RECORDS
** which a fresh single-instance, single-thread run must reproduce byte for
** byte.  Last: "instances N distinct N" (handles and process_dns_response
** addresses that differ) and the resident memory.
**
** --poison N: with 2 instances; the first N FILEs are the poison, the rest
** the victims.  Before the threads start, instance 0 parses the poison, then
** the victims, then gets a registered callback set and a 1-byte memory limit,
** under which every FILE must be refused (a negative status, and
** DNS_SHIM_ERR_NO_MEMORY for some: a message refused before any allocation
** keeps its own status) with no callback run.  Then the threads parse the
** victims on instance 1, and print their lines only: what a fresh single
** instance prints for the victims alone.
**
** --fork: every instance is started and makes a call, then the process forks
** and the child does the rest (the parent exits with the child's status):
** the child's pool must answer as a fresh process does.
**
** --bench SECONDS: the threads call dns_shim_process on the FILEs in turn for
** SECONDS after every instance has made a first call; prints
** "calls/s N rss_kib K start_rss_kib K0 start_ms MS": the resident memory
** after and before the instances, and the milliseconds an instance took to
** load, start and make its first call (a benchmark's figures, never
** asserted).
**
** Exit status 0, or 1 with "FAIL ..." on stderr.
*/
#define _GNU_SOURCE
#include "dns_shim.h"
#include "tool_util.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_INSTANCES 64
#define MAX_THREADS 64

typedef int32_t (*process_fn)(const uint8_t *, int32_t, const dns_shim_callbacks *);
typedef int32_t (*plain_fn)(uint8_t *, int32_t);
typedef const char *(*error_fn)(void);
typedef int32_t (*limit_fn)(size_t);
typedef int32_t (*register_fn)(const dns_shim_callbacks *);
typedef int32_t (*parallelism_fn)(uint32_t);
typedef int32_t (*init_fn)(void);

typedef struct instance {
    void *handle;
    int fd;
    process_fn process;
    plain_fn plain;
    error_fn last_error;
    limit_fn set_memory_limit;
    register_fn register_callbacks;
} instance;

static instance instances[MAX_INSTANCES];
static int free_list[MAX_INSTANCES], nfree, nstarted, ninstances;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned char *image;
static size_t image_len;
static const char *library;   /* --library: its path */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void *need(void *handle, const char *name)
{
    void *p = dlsym(handle, name);
    if (!p)
        fail("instance has no %s", name);
    return p;
}

static void start(instance *in)
{
    int fd = memfd_create("dnsshim-worker", MFD_CLOEXEC);
    if (fd < 0)
        fail("memfd_create");
    for (size_t done = 0; done < image_len;) {
        ssize_t n = write(fd, image + done, image_len - done);
        if (n <= 0)
            fail("writing the image");
        done += (size_t)n;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    in->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!in->handle)
        fail("dlopen: %s", dlerror());
    in->fd = fd;
    in->process = (process_fn)need(in->handle, "dns_shim_process");
    in->plain = (plain_fn)need(in->handle, "process_dns_response");
    in->last_error = (error_fn)need(in->handle, "dns_shim_last_error");
    in->set_memory_limit = (limit_fn)need(in->handle, "dns_shim_set_memory_limit");
    in->register_callbacks = (register_fn)need(in->handle, "dns_shim_register_callbacks");
}

/* --library: the library, loaded once, with its parallelism set and every
** interpreter started. */
static void start_library(void)
{
    instance *in = &instances[0];
    /* as a program linked with it loads it: its libpython global, for the
    ** extension modules of its own interpreter */
    in->handle = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (!in->handle)
        fail("dlopen: %s", dlerror());
    in->process = (process_fn)need(in->handle, "dns_shim_process");
    in->plain = (plain_fn)need(in->handle, "process_dns_response");
    in->last_error = (error_fn)need(in->handle, "dns_shim_last_error");
    in->set_memory_limit = (limit_fn)need(in->handle, "dns_shim_set_memory_limit");
    in->register_callbacks = (register_fn)need(in->handle, "dns_shim_register_callbacks");
    parallelism_fn set = (parallelism_fn)need(in->handle, "dns_shim_set_parallelism");
    init_fn init = (init_fn)need(in->handle, "dns_shim_init");
    if (set((uint32_t)ninstances) != DNS_SHIM_OK)
        fail("dns_shim_set_parallelism(%d): %s", ninstances, in->last_error());
    if (init() != DNS_SHIM_OK)
        fail("dns_shim_init: %s", in->last_error());
    nstarted = 1;
}

static instance *take(void)
{
    int ix;
    if (library) {
        pthread_once(&library_once, start_library);
        return &instances[0];
    }
    pthread_mutex_lock(&mu);
    for (;;) {
        if (nfree) { ix = free_list[--nfree]; break; }
        if (nstarted < ninstances) { ix = nstarted++; break; }
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    if (!instances[ix].handle)
        start(&instances[ix]);
    return &instances[ix];
}

static void give(instance *in)
{
    if (library)
        return;
    pthread_mutex_lock(&mu);
    free_list[nfree++] = (int)(in - instances);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------------ */
/* Record summaries                                                     */

typedef struct text { char *data; size_t len, cap; } text;

static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = t->cap - t->len;
        va_start(ap, fmt);
        int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            fail("vsnprintf");
        if (t->data && (size_t)n < room) { t->len += (size_t)n; return; }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *grown = realloc(t->data, cap);
        if (!grown)
            fail("out of memory");
        t->data = grown;
        t->cap = cap;
    }
}

static void rr(text *t, const char *kind, const dns_shim_rr *r)
{
    add(t, " %s %s %u/%u %" PRIu32 " s%" PRIu32 "#%" PRIu32, kind, r->owner, r->type,
        r->rclass, r->ttl, r->section, r->index);
}

static void bytes(text *t, dns_shim_bytes b)
{
    add(t, " ");
    for (size_t i = 0; i < b.len; i++)
        add(t, "%02x", b.data[i]);
}

static int32_t on_header(void *c, const dns_shim_header *h)
{
    add(c, " header %u %04x %u %u %u %u %u %s %u/%u edns %" PRId32 " %u %u %04x", h->id,
        h->flags, h->rcode, h->qdcount, h->ancount, h->nscount, h->arcount,
        h->qname ? h->qname : "-", h->qtype, h->qclass, h->edns_version, h->edns_payload,
        h->edns_do, h->edns_flags);
    return 0;
}
static int32_t on_a(void *c, const dns_shim_a *r)
{
    rr(c, "A", &r->rr);
    add(c, " %u.%u.%u.%u", r->address[0], r->address[1], r->address[2], r->address[3]);
    return 0;
}
static int32_t on_aaaa(void *c, const dns_shim_aaaa *r)
{
    rr(c, "AAAA", &r->rr);
    bytes(c, (dns_shim_bytes){r->address, 16});
    return 0;
}
static int32_t on_target(void *c, const dns_shim_target *r)
{
    rr(c, "TARGET", &r->rr);
    add(c, " %s", r->target);
    return 0;
}
static int32_t on_mx(void *c, const dns_shim_mx *r)
{
    rr(c, "MX", &r->rr);
    add(c, " %u %s", r->preference, r->exchange);
    return 0;
}
static int32_t on_txt(void *c, const dns_shim_txt *r)
{
    rr(c, "TXT", &r->rr);
    for (size_t i = 0; i < r->count; i++)
        bytes(c, r->strings[i]);
    return 0;
}
static int32_t on_srv(void *c, const dns_shim_srv *r)
{
    rr(c, "SRV", &r->rr);
    add(c, " %u %u %u %s", r->priority, r->weight, r->port, r->target);
    return 0;
}
static int32_t on_naptr(void *c, const dns_shim_naptr *r)
{
    rr(c, "NAPTR", &r->rr);
    add(c, " %u %u", r->order, r->preference);
    bytes(c, r->flags);
    bytes(c, r->services);
    bytes(c, r->regexp);
    add(c, " %s", r->replacement);
    return 0;
}
static int32_t on_soa(void *c, const dns_shim_soa *r)
{
    rr(c, "SOA", &r->rr);
    add(c, " %s %s %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32, r->mname,
        r->rname, r->serial, r->refresh, r->retry, r->expire, r->minimum);
    return 0;
}
static int32_t on_other(void *c, const dns_shim_raw *r)
{
    rr(c, "RAW", &r->rr);
    bytes(c, r->rdata);
    return 0;
}
static int32_t on_option(void *c, const dns_shim_edns_option *o)
{
    add(c, " OPTION %u", o->code);
    bytes(c, o->data);
    return 0;
}

static dns_shim_callbacks callbacks_for(text *t)
{
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                  DNS_SHIM_SECTION_ADDITIONAL;
    cb.ctx = t;
    cb.on_header = on_header;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    cb.on_cname = cb.on_ns = cb.on_ptr = cb.on_dname = on_target;
    cb.on_mx = on_mx;
    cb.on_txt = on_txt;
    cb.on_srv = on_srv;
    cb.on_naptr = on_naptr;
    cb.on_soa = on_soa;
    cb.on_other = on_other;
    cb.on_edns_option = on_option;
    return cb;
}

/* ------------------------------------------------------------------ */
/* Messages and threads                                                 */

typedef struct message { const char *name; unsigned char *data; int32_t len; text out; } message;

static message *messages;
static int nmessages;
static atomic_int next_message;
static atomic_int stop;
static int bench, poison, npoison, fork_child;

static void parse_one(message *m, instance *in)
{
    text t = {0};
    dns_shim_callbacks cb = callbacks_for(&t);
    int32_t status = in->process(m->data, m->len, &cb);
    const char *detail = in->last_error();
    add(&m->out, "%s %" PRId32 " %s |%s\n", m->name, status, detail ? detail : "(null)",
        t.data ? t.data : "");
    free(t.data);
}

static void *worker(void *arg)
{
    long *calls = arg;
    if (bench) {
        for (int i = 0; !atomic_load(&stop); i = (i + 1) % nmessages) {
            instance *in = take();
            text t = {0};
            dns_shim_callbacks cb = callbacks_for(&t);
            (void)in->process(messages[i].data, messages[i].len, &cb);
            give(in);
            free(t.data);
            (*calls)++;
        }
        return NULL;
    }
    for (;;) {
        int i = atomic_fetch_add(&next_message, 1);
        if (i >= nmessages)
            return NULL;
        if (poison && !library) {
            parse_one(&messages[i], &instances[1]);
            continue;
        }
        instance *in = take();
        parse_one(&messages[i], in);
        give(in);
    }
}

/* --library --poison: a call that holds the library's first interpreter,
** its header callback waiting until the victims are done. */
static const unsigned char HOLD[] = {  /* www.example.com A 93.184.216.34 */
    0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm',
    'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c,
    0, 4, 93, 184, 216, 34};
static int holding, released;

static int32_t hold_header(void *c, const dns_shim_header *h)
{
    (void)c, (void)h;
    pthread_mutex_lock(&mu);
    holding = 1;
    pthread_cond_broadcast(&cv);
    while (!released)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
}

static void *hold(void *arg)
{
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.on_header = hold_header;
    *(int32_t *)arg = instances[0].process(HOLD, (int32_t)sizeof HOLD, &cb);
    return NULL;
}

/* A file read whole (tool_util.h's reader), or the program fails. */
static unsigned char *read_file(const char *path, size_t *len)
{
    long n = 0;
    unsigned char *data = read_message(path, 0, &n);
    if (!data)
        fail("cannot read %s", path);
    *len = (size_t)n;
    return data;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--library")) {
        argv++, argc--;
        library = argv[1];
    }
    if (argc < 4)
        fail("usage: pool_instances [--library] WORKER.so|LIB.so INSTANCES THREADS [--poison N] [--fork] [--bench S] FILE...");
    if (!library)
        image = read_file(argv[1], &image_len);
    ninstances = atoi(argv[2]);
    int nthreads = atoi(argv[3]);
    if (ninstances < 1 || ninstances > MAX_INSTANCES || nthreads < 1 || nthreads > MAX_THREADS)
        fail("INSTANCES and THREADS: 1 to 64");
    double seconds = 0;
    int a = 4;
    for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
        if (!strcmp(argv[a], "--poison") && a + 1 < argc)
            poison = 1, npoison = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--fork"))
            fork_child = 1;
        else if (!strcmp(argv[a], "--bench") && a + 1 < argc)
            bench = 1, seconds = atof(argv[++a]);
        else
            fail("unknown option %s", argv[a]);
    }
    nmessages = argc - a;
    if (nmessages < 1)
        fail("no FILE");
    messages = calloc((size_t)nmessages, sizeof *messages);
    for (int i = 0; i < nmessages; i++) {
        size_t len;
        messages[i].name = strrchr(argv[a + i], '/') ? strrchr(argv[a + i], '/') + 1 : argv[a + i];
        messages[i].data = read_file(argv[a + i], &len);
        if (len > INT32_MAX)
            fail("%s: longer than an int32_t", argv[a + i]);
        messages[i].len = (int32_t)len;
    }
    long rss0 = rss_kib();
    double start_ms = 0;
    pthread_t holder;
    int32_t held_status = 1;

    if (poison) {
        if (ninstances != 2 || npoison < 0 || npoison >= nmessages)
            fail("--poison N needs 2 instances and a victim after N FILEs");
        atomic_store(&next_message, npoison);
        instance *p = take(), *v = library ? p : take();
        if (p != &instances[0] || (!library && v != &instances[1]))
            fail("instances taken out of order");
        for (int i = 0; i < nmessages; i++) {
            text scratch = {0};
            dns_shim_callbacks any = callbacks_for(&scratch);
            (void)p->process(messages[i].data, messages[i].len, &any);
            free(scratch.data);
        }
        text t = {0};
        dns_shim_callbacks cb = callbacks_for(&t);
        if (p->register_callbacks(&cb) != DNS_SHIM_OK || p->set_memory_limit(1) != DNS_SHIM_OK)
            fail("poisoning instance 0");
        int refused_for_memory = 0;
        for (int i = 0; i < nmessages; i++) {
            int32_t status = p->plain(messages[i].data, messages[i].len);
            if (status >= 0)
                fail("%s: instance 0 under a 1-byte limit gave %" PRId32, messages[i].name,
                     status);
            refused_for_memory += status == DNS_SHIM_ERR_NO_MEMORY;
        }
        if (!refused_for_memory)
            fail("instance 0 under a 1-byte limit never said DNS_SHIM_ERR_NO_MEMORY");
        if (t.len)
            fail("instance 0's registered callbacks ran under a 1-byte limit");
        if (library) {
            /* the library's limit is the pool's: lifted for the victims */
            if (p->register_callbacks(NULL) != DNS_SHIM_OK || p->set_memory_limit(0) != DNS_SHIM_OK)
                fail("lifting the limit");
            if (pthread_create(&holder, NULL, hold, &held_status))
                fail("pthread_create");
            pthread_mutex_lock(&mu);
            while (!holding)
                pthread_cond_wait(&cv, &mu);
            pthread_mutex_unlock(&mu);
        }
        free(t.data);
    }
    if (bench || fork_child) {
        /* Start every instance and make its first call (before timing, or
        ** before the fork). */
        instance *all[MAX_INSTANCES];
        struct timespec s0, s1;
        clock_gettime(CLOCK_MONOTONIC, &s0);
        for (int i = 0; i < ninstances; i++) {
            all[i] = take();
            text t = {0};
            dns_shim_callbacks cb = callbacks_for(&t);
            (void)all[i]->process(messages[0].data, messages[0].len, &cb);
            free(t.data);
        }
        clock_gettime(CLOCK_MONOTONIC, &s1);
        start_ms = ((double)(s1.tv_sec - s0.tv_sec) * 1e3 +
                    (double)(s1.tv_nsec - s0.tv_nsec) / 1e6) / ninstances;
        for (int i = 0; i < ninstances; i++)
            give(all[i]);
    }

    if (fork_child) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            fail("fork");
        if (pid > 0) {
            int wstatus;
            if (waitpid(pid, &wstatus, 0) != pid)
                fail("waitpid");
            return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
        }
    }
    pthread_t threads[MAX_THREADS];
    long calls[MAX_THREADS] = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&threads[i], NULL, worker, &calls[i]))
            fail("pthread_create");
    if (bench) {
        struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
        nanosleep(&ts, NULL);
        atomic_store(&stop, 1);
    }
    long total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(threads[i], NULL);
        total += calls[i];
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (library && poison) {
        pthread_mutex_lock(&mu);
        released = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        pthread_join(holder, NULL);
        if (held_status != DNS_SHIM_OK)
            fail("the call holding the first interpreter gave %" PRId32, held_status);
    }
    if (bench) {
        double elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("calls/s %.0f rss_kib %ld start_rss_kib %ld start_ms %.1f\n",
               (double)total / elapsed, rss_kib(), rss0, start_ms);
        return 0;
    }
    for (int i = 0; i < nmessages; i++) {
        if (i >= npoison)
            fputs(messages[i].out.data, stdout);
        free(messages[i].out.data);
        free(messages[i].data);
    }
    if (library) {
        printf("library parallelism %d\n", ninstances);
        free(messages);
        return 0;
    }
    int distinct = 0;
    for (int i = 0; i < nstarted; i++) {
        int same = 0;
        for (int j = 0; j < i; j++)
            same |= instances[j].handle == instances[i].handle ||
                    instances[j].plain == instances[i].plain;
        distinct += !same;
    }
    printf("instances %d distinct %d\n", nstarted, distinct);
    fprintf(stderr, "rss_kib %ld start_rss_kib %ld\n", rss_kib(), rss0);
    free(messages);
    free(image);
    return 0;
}
