/*
** dnsshim_stress: hostile and careless callers of libdnsshim, from C.
**
**   dnsshim_stress MODE [--calls N] [--threads N] FILE...
**
** Modes (each prints "ok ..." or "FAIL ..." lines and exits 1 on a failure):
**   threads      N threads (default 8), each --calls calls (default 20000)
**                over all FILEs, alternating dns_shim_process with a
**                per-thread context and process_dns_response with the
**                registered set; every call's status and records must equal
**                those of a single-threaded run made first.
**   first-call   16 threads make their first call at once, before anything
**                started the runtime.
**   register     4 threads make --calls calls each (default 2000) while
**                another registers set A, set B and NULL, from a temporary
**                struct it then scribbles over and frees: each call must see
**                one whole set (all A, all B, or nothing).
**   reentry      a callback calls dns_shim_process on another message.
**   reregister   a callback registers another set, then clears it, in the
**                middle of a dispatch: that dispatch is unaffected.
**   fork         the runtime is started, the process forks, and the child
**                gets correct results.
**   retvals      callbacks returning 1, -1, INT32_MIN, INT32_MAX stop
**                dispatch with DNS_SHIM_ERR_CALLBACK.
**   soak         --calls calls (default 200000) over all FILEs; resident
**                memory after a warm-up of a tenth of them must grow by
**                less than 1 MiB.
**
** The records of each call are summarised in a per-thread log (kind, owner,
** type, class, TTL, section, index and the main typed field), which is
** what the single-threaded reference is compared with.  That every field is
** right is shown by dnsshim_test against dnspython; this program shows that
** callers who use threads, re-entry, fork and registration races get the
** same answers.
*/
#include "dns_shim.h"
#include "tool_util.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Logs                                                                 */

typedef struct log_buf {
    char *data;
    size_t len, cap;
} log_buf;

static void log_reset(log_buf *log) { log->len = 0; if (log->data) log->data[0] = '\0'; }

static void log_add(log_buf *log, const char *fmt, ...)
{
    va_list ap;
    int n;
    for (;;) {
        size_t room = log->cap - log->len;
        va_start(ap, fmt);
        n = vsnprintf(log->data ? log->data + log->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            abort();
        if ((size_t)n < room) {
            log->len += (size_t)n;
            return;
        }
        log->cap = (log->cap + (size_t)n + 1) * 2;
        log->data = realloc(log->data, log->cap);
        if (log->data == NULL)
            abort();
    }
}

/* A callback context: where to log, which set it belongs to, and when to
** stop. */
typedef struct ctx {
    log_buf log;
    char set;         /* 'A' or 'B' (register mode) */
    long calls;
    long stop_at;
    int32_t stop_with;
    void (*hook)(struct ctx *ctx); /* called from on_header (reentry, reregister) */
} ctx;

static void log_rr(ctx *c, const char *kind, const dns_shim_rr *rr)
{
    log_add(&c->log, "%c%s %s %u %u %" PRIu32 " %" PRIu32 " %" PRIu32, c->set, kind, rr->owner,
            rr->type, rr->rclass, rr->ttl, rr->section, rr->index);
}

static int32_t done(ctx *c)
{
    log_add(&c->log, "\n");
    c->calls++;
    return c->stop_at && c->calls == c->stop_at ? c->stop_with : 0;
}

static int32_t on_header(void *p, const dns_shim_header *h)
{
    ctx *c = p;
    log_add(&c->log, "%cheader %u %u %u %s", c->set, h->id, h->rcode, h->ancount,
            h->qname ? h->qname : "-");
    if (c->hook)
        c->hook(c);
    return done(c);
}

static int32_t on_a(void *p, const dns_shim_a *r)
{
    ctx *c = p;
    log_rr(c, "a", &r->rr);
    log_add(&c->log, " %u.%u.%u.%u", r->address[0], r->address[1], r->address[2], r->address[3]);
    return done(c);
}

static int32_t on_aaaa(void *p, const dns_shim_aaaa *r)
{
    ctx *c = p;
    int i;
    log_rr(c, "aaaa", &r->rr);
    for (i = 0; i < 16; i++)
        log_add(&c->log, "%s%02x", i ? "" : " ", r->address[i]);
    return done(c);
}

static int32_t on_target(void *p, const dns_shim_target *r)
{
    ctx *c = p;
    log_rr(c, "target", &r->rr);
    log_add(&c->log, " %s", r->target);
    return done(c);
}

static int32_t on_mx(void *p, const dns_shim_mx *r)
{
    ctx *c = p;
    log_rr(c, "mx", &r->rr);
    log_add(&c->log, " %u %s", r->preference, r->exchange);
    return done(c);
}

static int32_t on_txt(void *p, const dns_shim_txt *r)
{
    ctx *c = p;
    log_rr(c, "txt", &r->rr);
    log_add(&c->log, " %zu %zu", r->count, r->count ? r->strings[0].len : 0);
    return done(c);
}

static int32_t on_srv(void *p, const dns_shim_srv *r)
{
    ctx *c = p;
    log_rr(c, "srv", &r->rr);
    log_add(&c->log, " %u %u %u %s", r->priority, r->weight, r->port, r->target);
    return done(c);
}

static int32_t on_naptr(void *p, const dns_shim_naptr *r)
{
    ctx *c = p;
    log_rr(c, "naptr", &r->rr);
    log_add(&c->log, " %u %u %.*s %s", r->order, r->preference, (int)r->services.len,
            (const char *)r->services.data, r->replacement);
    return done(c);
}

static int32_t on_soa(void *p, const dns_shim_soa *r)
{
    ctx *c = p;
    log_rr(c, "soa", &r->rr);
    log_add(&c->log, " %s %" PRIu32, r->mname, r->serial);
    return done(c);
}

static int32_t on_other(void *p, const dns_shim_raw *r)
{
    ctx *c = p;
    log_rr(c, "other", &r->rr);
    log_add(&c->log, " %zu", r->rdata.len);
    return done(c);
}

static void fill_callbacks(dns_shim_callbacks *cb, ctx *c)
{
    memset(cb, 0, sizeof *cb);
    cb->struct_size = sizeof *cb;
    cb->sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY | DNS_SHIM_SECTION_ADDITIONAL;
    cb->ctx = c;
    cb->on_header = on_header;
    cb->on_a = on_a;
    cb->on_aaaa = on_aaaa;
    cb->on_cname = cb->on_ns = cb->on_ptr = cb->on_dname = on_target;
    cb->on_mx = on_mx;
    cb->on_txt = on_txt;
    cb->on_srv = on_srv;
    cb->on_naptr = on_naptr;
    cb->on_soa = on_soa;
    cb->on_other = on_other;
}

/* ------------------------------------------------------------------ */
/* Messages and their reference results                                 */

typedef struct message {
    const char *path;
    unsigned char *wire;
    int32_t len;
    int32_t status;   /* single-threaded reference */
    char *log;
} message;

static message *messages;
static int n_messages;
static int failures;

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
}

static void load(int argc, char **argv, int first)
{
    int i;
    messages = calloc((size_t)(argc - first) + 1, sizeof *messages);
    for (i = first; i < argc; i++) {
        long len = 0;
        unsigned char *wire = read_message(argv[i], 0, &len);
        if (wire == NULL)
            exit(2);
        messages[n_messages].path = argv[i];
        messages[n_messages].wire = wire;
        messages[n_messages].len = len > 65535 ? 65535 : (int32_t)len;
        n_messages++;
    }
    if (n_messages == 0) {
        fprintf(stderr, "no messages\n");
        exit(2);
    }
}

static void compute_references(void)
{
    ctx c;
    dns_shim_callbacks cb;
    int i;
    memset(&c, 0, sizeof c);
    c.set = 'A';
    fill_callbacks(&cb, &c);
    for (i = 0; i < n_messages; i++) {
        log_reset(&c.log);
        messages[i].status = dns_shim_process(messages[i].wire, messages[i].len, &cb);
        messages[i].log = strdup(c.log.data ? c.log.data : "");
    }
    free(c.log.data);
}

static void free_messages(void)
{
    int i;
    for (i = 0; i < n_messages; i++) {
        free(messages[i].wire);
        free(messages[i].log);
    }
    free(messages);
}

static int same(const message *m, int32_t status, const log_buf *log)
{
    return status == m->status && strcmp(log->data ? log->data : "", m->log) == 0;
}

/* ------------------------------------------------------------------ */
/* threads                                                              */

static long opt_calls = 0;
static int opt_threads = 8;

/*
** Sets for process_dns_response: the registered set is shared by every
** thread, so its ctx only names the set (set_a, set_b); its callbacks log to
** the calling thread's own ctx, each line marked with the set's letter.
*/
static ctx set_a = {{0, 0, 0}, 'A', 0, 0, 0, 0}, set_b = {{0, 0, 0}, 'B', 0, 0, 0, 0};
static __thread ctx thread_ctx;

static int32_t fwd_header(void *p, const dns_shim_header *h)
{
    if (p != &set_a && p != &set_b)
        fail("a registered set's ctx is %p, neither set A nor set B", p);
    thread_ctx.set = ((ctx *)p)->set;
    return on_header(&thread_ctx, h);
}
#define FORWARD(name, type, inner)                                    \
    static int32_t name(void *p, const type *r)                       \
    {                                                                 \
        thread_ctx.set = ((ctx *)p)->set;                             \
        return inner(&thread_ctx, r);                                 \
    }
FORWARD(fwd_a, dns_shim_a, on_a)
FORWARD(fwd_aaaa, dns_shim_aaaa, on_aaaa)
FORWARD(fwd_target, dns_shim_target, on_target)
FORWARD(fwd_mx, dns_shim_mx, on_mx)
FORWARD(fwd_txt, dns_shim_txt, on_txt)
FORWARD(fwd_srv, dns_shim_srv, on_srv)
FORWARD(fwd_naptr, dns_shim_naptr, on_naptr)
FORWARD(fwd_soa, dns_shim_soa, on_soa)
FORWARD(fwd_other, dns_shim_raw, on_other)

static void fill_forwarding(dns_shim_callbacks *cb, ctx *set)
{
    fill_callbacks(cb, set);
    cb->on_header = fwd_header;
    cb->on_a = fwd_a;
    cb->on_aaaa = fwd_aaaa;
    cb->on_cname = cb->on_ns = cb->on_ptr = cb->on_dname = fwd_target;
    cb->on_mx = fwd_mx;
    cb->on_txt = fwd_txt;
    cb->on_srv = fwd_srv;
    cb->on_naptr = fwd_naptr;
    cb->on_soa = fwd_soa;
    cb->on_other = fwd_other;
}

static void *thread_main(void *arg)
{
    long t = (long)arg, i, bad = 0;
    ctx own;
    dns_shim_callbacks cb;
    memset(&own, 0, sizeof own);
    own.set = 'A';
    fill_callbacks(&cb, &own);
    thread_ctx.set = 'A';
    for (i = 0; i < opt_calls; i++) {
        const message *m = &messages[(i + t * 7) % n_messages];
        int32_t status;
        if (i % 2 == 0) {
            log_reset(&own.log);
            status = dns_shim_process(m->wire, m->len, &cb);
            if (!same(m, status, &own.log) && bad++ < 3)
                fail("thread %ld call %ld (%s): status %d, expected %d", t, i, m->path, status, m->status);
        } else {
            log_reset(&thread_ctx.log);
            status = process_dns_response(m->wire, m->len);
            if (!same(m, status, &thread_ctx.log) && bad++ < 3)
                fail("thread %ld registered call %ld (%s): status %d, expected %d", t, i, m->path,
                     status, m->status);
        }
    }
    free(own.log.data);
    free(thread_ctx.log.data);
    return (void *)bad;
}

static int mode_threads(void)
{
    pthread_t *threads = calloc((size_t)opt_threads, sizeof *threads);
    dns_shim_callbacks reg;
    long t, bad = 0;
    compute_references();
    fill_forwarding(&reg, &set_a);
    dns_shim_register_callbacks(&reg);
    for (t = 0; t < opt_threads; t++)
        pthread_create(&threads[t], NULL, thread_main, (void *)t);
    for (t = 0; t < opt_threads; t++) {
        void *r;
        pthread_join(threads[t], &r);
        bad += (long)r;
    }
    dns_shim_register_callbacks(NULL);
    free(threads);
    printf("%s threads: %d threads x %ld calls over %d messages, %ld wrong\n", bad ? "FAIL" : "ok",
           opt_threads, opt_calls, n_messages, bad);
    return bad != 0;
}

/* ------------------------------------------------------------------ */
/* first-call                                                           */

static pthread_barrier_t barrier;
static int32_t first_status[16];
static char *first_log[16];

static void *first_main(void *arg)
{
    long t = (long)arg;
    ctx c;
    dns_shim_callbacks cb;
    memset(&c, 0, sizeof c);
    c.set = 'A';
    fill_callbacks(&cb, &c);
    pthread_barrier_wait(&barrier);
    first_status[t] = dns_shim_process(messages[0].wire, messages[0].len, &cb);
    first_log[t] = c.log.data ? c.log.data : strdup("");
    return NULL;
}

static int mode_first_call(void)
{
    pthread_t threads[16];
    long t;
    pthread_barrier_init(&barrier, NULL, 16);
    for (t = 0; t < 16; t++)
        pthread_create(&threads[t], NULL, first_main, (void *)t);
    for (t = 0; t < 16; t++)
        pthread_join(threads[t], NULL);
    pthread_barrier_destroy(&barrier);
    compute_references();
    for (t = 0; t < 16; t++) {
        if (first_status[t] != messages[0].status || strcmp(first_log[t], messages[0].log) != 0)
            fail("first call of thread %ld: status %d, expected %d", t, first_status[t],
                 messages[0].status);
        free(first_log[t]);
    }
    printf("%s first-call: 16 threads, status %d\n", failures ? "FAIL" : "ok", messages[0].status);
    return failures != 0;
}

/* ------------------------------------------------------------------ */
/* register                                                             */

static int dispatchers_done = 0;

/* The log of a set: the reference log with every line's letter replaced. */
static int is_whole_set(const char *log, const char *ref)
{
    char letter = log[0];
    size_t i;
    if (log[0] == '\0')
        return 1; /* NULL was registered: nothing called */
    if (strlen(log) != strlen(ref) || (letter != 'A' && letter != 'B'))
        return 0;
    for (i = 0; ref[i]; i++) {
        int line_start = i == 0 || ref[i - 1] == '\n';
        if (line_start ? log[i] != letter : log[i] != ref[i])
            return 0;
    }
    return 1;
}

static void *race_main(void *arg)
{
    long t = (long)arg, i = 0, bad = 0;
    ctx *mine = &thread_ctx;
    for (i = 0; i < opt_calls; i++) {
        const message *m = &messages[(i + t) % n_messages];
        int32_t status;
        log_reset(&mine->log);
        status = process_dns_response(m->wire, m->len);
        if (status != m->status || !is_whole_set(mine->log.data ? mine->log.data : "", m->log)) {
            if (bad++ < 3)
                fail("thread %ld call %ld (%s) saw a mixed or broken set: status %d\n%s", t, i,
                     m->path, status, mine->log.data ? mine->log.data : "");
        }
    }
    free(mine->log.data);
    __atomic_add_fetch(&dispatchers_done, 1, __ATOMIC_SEQ_CST);
    return (void *)bad;
}

static int mode_register(void)
{
    pthread_t threads[4];
    long t, round, bad = 0;
    compute_references();
    for (t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, race_main, (void *)t);
    /* Change the set as fast as possible until every dispatcher is done. */
    for (round = 0; __atomic_load_n(&dispatchers_done, __ATOMIC_SEQ_CST) < 4; round++) {
        /* A temporary struct, scribbled over once registered: the library
        ** must have copied it. */
        dns_shim_callbacks *tmp = malloc(sizeof *tmp);
        switch (round % 3) {
        case 0: fill_forwarding(tmp, &set_a); dns_shim_register_callbacks(tmp); break;
        case 1: fill_forwarding(tmp, &set_b); dns_shim_register_callbacks(tmp); break;
        default: dns_shim_register_callbacks(NULL); break;
        }
        memset(tmp, 0xA5, sizeof *tmp);
        free(tmp);
        /* Let the dispatchers run: under valgrind, which runs one thread at
        ** a time, a loop that never blocks can starve them for minutes. */
        sched_yield();
    }
    for (t = 0; t < 4; t++) {
        void *r;
        pthread_join(threads[t], &r);
        bad += (long)r;
    }
    dns_shim_register_callbacks(NULL);
    printf("%s register: 4 threads x %ld calls, %ld wrong, while the set changed %ld times\n",
           bad ? "FAIL" : "ok", opt_calls, bad, round);
    return bad != 0;
}

/* ------------------------------------------------------------------ */
/* reentry, reregister, retvals                                         */

static int32_t inner_status;
static log_buf inner_log;

static void reenter(ctx *outer)
{
    ctx c;
    dns_shim_callbacks cb;
    (void)outer;
    memset(&c, 0, sizeof c);
    c.set = 'A';
    fill_callbacks(&cb, &c);
    inner_status = dns_shim_process(messages[1].wire, messages[1].len, &cb);
    inner_log = c.log;
}

static int mode_reentry(void)
{
    ctx c;
    dns_shim_callbacks cb;
    int32_t status;
    if (n_messages < 2) {
        fprintf(stderr, "reentry needs two messages\n");
        return 2;
    }
    compute_references();
    memset(&c, 0, sizeof c);
    c.set = 'A';
    c.hook = reenter;
    fill_callbacks(&cb, &c);
    status = dns_shim_process(messages[0].wire, messages[0].len, &cb);
    if (!same(&messages[0], status, &c.log))
        fail("outer call: status %d, expected %d", status, messages[0].status);
    if (!same(&messages[1], inner_status, &inner_log))
        fail("inner call: status %d, expected %d", inner_status, messages[1].status);
    printf("%s reentry: outer %d, inner %d\n", failures ? "FAIL" : "ok", status, inner_status);
    free(c.log.data);
    free(inner_log.data);
    return failures != 0;
}

static ctx other_set;

static void reregister(ctx *c)
{
    dns_shim_callbacks cb;
    (void)c;
    fill_callbacks(&cb, &other_set);
    dns_shim_register_callbacks(&cb);
    dns_shim_register_callbacks(NULL);
    fill_callbacks(&cb, &other_set);
    dns_shim_register_callbacks(&cb);
}

static int mode_reregister(void)
{
    ctx c;
    dns_shim_callbacks cb;
    int32_t status;
    compute_references();
    memset(&c, 0, sizeof c);
    memset(&other_set, 0, sizeof other_set);
    c.set = 'A';
    other_set.set = 'A';
    c.hook = reregister;
    fill_callbacks(&cb, &c);
    dns_shim_register_callbacks(&cb);
    status = process_dns_response(messages[0].wire, messages[0].len);
    if (!same(&messages[0], status, &c.log))
        fail("dispatch in progress changed: status %d\n%s", status, c.log.data ? c.log.data : "");
    if (other_set.log.len != 0)
        fail("the new set was called during the old dispatch");
    /* The next call uses the set registered last. */
    status = process_dns_response(messages[0].wire, messages[0].len);
    if (!same(&messages[0], status, &other_set.log))
        fail("the next call did not use the new set: status %d", status);
    dns_shim_register_callbacks(NULL);
    printf("%s reregister: status %d\n", failures ? "FAIL" : "ok", status);
    free(c.log.data);
    free(other_set.log.data);
    return failures != 0;
}

static int mode_retvals(void)
{
    static const int32_t values[] = {1, -1, INT32_MIN, INT32_MAX, 2};
    size_t i;
    compute_references();
    for (i = 0; i < sizeof values / sizeof values[0]; i++) {
        ctx c;
        dns_shim_callbacks cb;
        int32_t status;
        memset(&c, 0, sizeof c);
        c.set = 'A';
        c.stop_at = 2;
        c.stop_with = values[i];
        fill_callbacks(&cb, &c);
        status = dns_shim_process(messages[0].wire, messages[0].len, &cb);
        if (status != DNS_SHIM_ERR_CALLBACK || c.calls != 2)
            fail("callback returning %d: status %d after %ld calls", values[i], status, c.calls);
        else
            printf("ok callback returning %" PRId32 " stops after 2 calls: %d\n", values[i], status);
        free(c.log.data);
    }
    return failures != 0;
}

/* ------------------------------------------------------------------ */
/* fork                                                                 */

static int mode_fork(void)
{
    ctx c;
    dns_shim_callbacks cb;
    pid_t pid;
    int wstatus, i;
    compute_references(); /* starts the runtime */
    fflush(stdout);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    memset(&c, 0, sizeof c);
    c.set = 'A';
    fill_callbacks(&cb, &c);
    for (i = 0; i < n_messages; i++) {
        int32_t status;
        log_reset(&c.log);
        status = dns_shim_process(messages[i].wire, messages[i].len, &cb);
        if (!same(&messages[i], status, &c.log))
            fail("%s: %s: status %d, expected %d", pid == 0 ? "child" : "parent", messages[i].path,
                 status, messages[i].status);
    }
    free(c.log.data);
    if (pid == 0) {
        printf("%s fork: child, %d messages\n", failures ? "FAIL" : "ok", n_messages);
        fflush(stdout);
        _exit(failures ? 1 : 0);
    }
    if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
        fail("the child failed (wait status %d)", wstatus);
    printf("%s fork: parent, %d messages\n", failures ? "FAIL" : "ok", n_messages);
    return failures != 0;
}

/* ------------------------------------------------------------------ */
/* soak                                                                 */

static int mode_soak(void)
{
    ctx c;
    dns_shim_callbacks cb;
    long i, calls = opt_calls ? opt_calls : 200000, warm = calls / 10, before = 0, after, grew;
    memset(&c, 0, sizeof c);
    c.set = 'A';
    fill_callbacks(&cb, &c);
    for (i = 0; i < calls; i++) {
        const message *m = &messages[i % n_messages];
        log_reset(&c.log);
        if (i % 2)
            dns_shim_process(m->wire, m->len, &cb);
        else
            process_dns_response(m->wire, m->len);
        if (i + 1 == warm)
            before = rss_kib();
    }
    after = rss_kib();
    grew = after - before;
    free(c.log.data);
    printf("%s soak: %ld calls, RSS %ld KiB after %ld calls, %ld KiB at the end: %+ld KiB\n",
           grew < 1024 ? "ok" : "FAIL", calls, before, warm, after, grew);
    return grew >= 1024;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    const char *mode;
    int i = 2, rc;
    if (argc < 3) {
        fprintf(stderr, "usage: %s threads|first-call|register|reentry|reregister|fork|retvals|soak "
                        "[--calls N] [--threads N] FILE...\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "--calls") == 0)
            opt_calls = strtol(argv[i + 1], NULL, 0);
        else if (strcmp(argv[i], "--threads") == 0)
            opt_threads = (int)strtol(argv[i + 1], NULL, 0);
    }
    load(argc, argv, i);
    if (opt_calls == 0 && strcmp(mode, "threads") == 0)
        opt_calls = 20000;
    if (opt_calls == 0 && strcmp(mode, "register") == 0)
        opt_calls = 2000;
    if (strcmp(mode, "threads") == 0)
        rc = mode_threads();
    else if (strcmp(mode, "first-call") == 0)
        rc = mode_first_call();
    else if (strcmp(mode, "register") == 0)
        rc = mode_register();
    else if (strcmp(mode, "reentry") == 0)
        rc = mode_reentry();
    else if (strcmp(mode, "reregister") == 0)
        rc = mode_reregister();
    else if (strcmp(mode, "fork") == 0)
        rc = mode_fork();
    else if (strcmp(mode, "retvals") == 0)
        rc = mode_retvals();
    else if (strcmp(mode, "soak") == 0)
        rc = mode_soak();
    else {
        fprintf(stderr, "unknown mode %s\n", mode);
        rc = 2;
    }
    free_messages();
    fflush(stdout);
    return rc;
}
