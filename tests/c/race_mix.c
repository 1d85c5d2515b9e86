/*
** race_mix: every entry point that changes or reads the library's shared
** state, from several threads at once, for a bounded time; built and run
** under ThreadSanitizer by tests/test_races.py, so that races are searched
** for rather than hoped absent.
**
**   race_mix THREADS SECONDS [--no-fork] FILE...
**
** First, alone (one thread, parallelism 1, no limit), each FILE's reference
** results: dns_shim_process's status and record count;
** dns_shim_process_reply's status for the query the message answers (its
** ID, first question) and for one with another ID; and the status of each
** of libdnsshim_ares's classic parsers (c-ares's <ares.h>, linked
** -ldnsshim_ares).  Then THREADS threads,
** each for SECONDS, pick at random, call after call:
**
**   process        dns_shim_process, a context of the thread's own
**   registered     process_dns_response, the set registered at the start
**   reply          dns_shim_process_reply, the matching or the other query
**   ares           one of the classic parsers (a, aaaa, ns, mx, txt, srv,
**                  naptr, soa, caa), its result freed
**   parallelism    dns_shim_set_parallelism(0, 1 or 2): 0
**   init           dns_shim_init: 0
**   register       dns_shim_register_callbacks of the same set again: 0
**   limit          a refusing memory limit (1 to 4096 bytes): set (0), a
**                  call that must be refused (DNS_SHIM_ERR_NO_MEMORY), the
**                  limit back to 0 (0); one thread at a time holds one
**   fork           fork(): the child parses one message and exits 0 when
**                  its status is one it may be; the parent waits (20 s at
**                  most, then kills it: "the child hung") and wants exit
**                  status 0 (--no-fork: never; a process call instead)
**
** Each parse's status must be its reference, or, only when a refusing limit
** was set at some moment of the call, DNS_SHIM_ERR_NO_MEMORY (ARES_ENOMEM
** for c-ares's parsers); a parse that succeeds must have delivered the
** reference's number of records.  The limit's window is exact: the limiting
** thread raises a generation count and a flag before it sets the limit and
** after it sets 0 again, and each call reads both before and after.
**
** Prints "ok race_mix: ..." with each operation's count, or "FAIL ..." lines
** (the first few wrong calls) and exits 1; "hang" and exit 3 when the run
** has not ended SECONDS * 4 + 60 seconds after it began (SIGALRM).
*/
#define _GNU_SOURCE
#include "dns_shim.h"
#include "tool_util.h"

#include <ares.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ARES_KINDS = 9 };
static const char *const ares_names[ARES_KINDS] = {"a", "aaaa", "ns", "mx", "txt", "srv",
                                                     "naptr", "soa", "caa"};

typedef struct message {
    const char *path;
    unsigned char *wire;
    int32_t len;
    int32_t status;                /* dns_shim_process, alone */
    long records;                  /* callbacks it made, on_header included */
    dns_shim_query match, other;   /* the query it answers; another ID */
    char *qname;
    int32_t match_status, other_status;
    int ares_status[ARES_KINDS];
} message;

static message *messages;
static int n_messages;
static int good = -1;              /* a message whose reference is DNS_SHIM_OK */

/* ------------------------------------------------------------------ */
/* Failures                                                             */

static int failures;

static void fail(const char *fmt, ...)
{
    va_list ap;
    char line[512];
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST) <= 20)
        printf("FAIL %s\n", line);
}

static void on_alarm(int sig)
{
    static const char line[] = "hang\n";
    (void)sig;
    (void)!write(1, line, sizeof line - 1);
    _exit(3);
}

/* ------------------------------------------------------------------ */
/* Callbacks: they count, in the calling thread                         */

static __thread long counted;
static __thread char seen_qname[1100]; /* the first question's name, "" for none */
static __thread uint16_t seen_qtype, seen_qclass;

static int32_t count_header(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    counted++;
    snprintf(seen_qname, sizeof seen_qname, "%s", h->qname ? h->qname : "");
    seen_qtype = h->qtype;
    seen_qclass = h->qclass;
    return 0;
}
#define COUNT(name, type)                                   \
    static int32_t name(void *ctx, const type *r)           \
    {                                                       \
        (void)ctx;                                          \
        (void)r;                                            \
        counted++;                                          \
        return 0;                                           \
    }
COUNT(count_a, dns_shim_a)
COUNT(count_aaaa, dns_shim_aaaa)
COUNT(count_target, dns_shim_target)
COUNT(count_mx, dns_shim_mx)
COUNT(count_txt, dns_shim_txt)
COUNT(count_srv, dns_shim_srv)
COUNT(count_naptr, dns_shim_naptr)
COUNT(count_soa, dns_shim_soa)
COUNT(count_other, dns_shim_raw)
COUNT(count_edns, dns_shim_edns_option)

static void fill_callbacks(dns_shim_callbacks *cb)
{
    memset(cb, 0, sizeof *cb);
    cb->struct_size = sizeof *cb;
    cb->sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                   DNS_SHIM_SECTION_ADDITIONAL;
    cb->on_header = count_header;
    cb->on_a = count_a;
    cb->on_aaaa = count_aaaa;
    cb->on_cname = cb->on_ns = cb->on_ptr = cb->on_dname = count_target;
    cb->on_mx = count_mx;
    cb->on_txt = count_txt;
    cb->on_srv = count_srv;
    cb->on_naptr = count_naptr;
    cb->on_soa = count_soa;
    cb->on_other = count_other;
    cb->on_edns_option = count_edns;
}

static dns_shim_callbacks callbacks; /* read-only once threads run */

/* ------------------------------------------------------------------ */
/* c-ares's classic parsers                                             */

static int ares_parse(int kind, const message *m)
{
    int rc = ARES_SUCCESS;
    struct hostent *host = NULL;
    void *data = NULL;
    struct ares_addrttl ttls[4];
    struct ares_addr6ttl ttls6[4];
    int nttls = 4;
    switch (kind) {
    case 0:
        rc = ares_parse_a_reply(m->wire, m->len, &host, ttls, &nttls);
        break;
    case 1:
        rc = ares_parse_aaaa_reply(m->wire, m->len, &host, ttls6, &nttls);
        break;
    case 2:
        rc = ares_parse_ns_reply(m->wire, m->len, &host);
        break;
    case 3:
        rc = ares_parse_mx_reply(m->wire, m->len, (struct ares_mx_reply **)&data);
        break;
    case 4:
        rc = ares_parse_txt_reply(m->wire, m->len, (struct ares_txt_reply **)&data);
        break;
    case 5:
        rc = ares_parse_srv_reply(m->wire, m->len, (struct ares_srv_reply **)&data);
        break;
    case 6:
        rc = ares_parse_naptr_reply(m->wire, m->len, (struct ares_naptr_reply **)&data);
        break;
    case 7: {
        struct ares_soa_reply *soa = NULL;
        rc = ares_parse_soa_reply(m->wire, m->len, &soa);
        data = soa;
        break;
    }
    default:
        rc = ares_parse_caa_reply(m->wire, m->len, (struct ares_caa_reply **)&data);
        break;
    }
    if (host != NULL)
        ares_free_hostent(host);
    if (data != NULL)
        ares_free_data(data);
    return rc;
}

/* ------------------------------------------------------------------ */
/* References, made alone                                               */

static int32_t process(const message *m, long *records)
{
    int32_t status;
    counted = 0;
    status = dns_shim_process(m->wire, m->len, &callbacks);
    *records = counted;
    return status;
}

static void load(int argc, char **argv, int first)
{
    int i;
    messages = calloc((size_t)(argc - first) + 1, sizeof *messages);
    for (i = first; i < argc; i++) {
        long len = 0;
        message *m = &messages[n_messages];
        int k, asked;
        m->wire = read_message(argv[i], 0, &len);
        if (m->wire == NULL)
            exit(2);
        m->path = argv[i];
        m->len = len > 65535 ? 65535 : (int32_t)len;
        seen_qname[0] = '\0';
        m->status = process(m, &m->records);
        asked = m->status == DNS_SHIM_OK && seen_qname[0] != '\0';
        m->qname = strdup(asked ? seen_qname : "example.");
        memset(&m->match, 0, sizeof m->match);
        m->match.struct_size = sizeof m->match;
        m->match.id = m->len >= 2 ? (uint16_t)(m->wire[0] << 8 | m->wire[1]) : 0;
        m->match.qname = m->qname;
        m->match.qtype = asked ? seen_qtype : 1;
        m->match.qclass = asked ? seen_qclass : 1;
        m->other = m->match;
        m->other.id ^= 0x5a5a;
        m->match_status = dns_shim_process_reply(m->wire, m->len, &m->match, &callbacks);
        m->other_status = dns_shim_process_reply(m->wire, m->len, &m->other, &callbacks);
        for (k = 0; k < ARES_KINDS; k++)
            m->ares_status[k] = ares_parse(k, m);
        if (good < 0 && m->status == DNS_SHIM_OK && m->match_status == DNS_SHIM_OK)
            good = n_messages;
        n_messages++;
    }
    if (n_messages == 0 || good < 0) {
        fprintf(stderr, "race_mix: no message, or none that parses\n");
        exit(2);
    }
}

/* ------------------------------------------------------------------ */
/* The limit's window                                                   */

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long limit_generation; /* raised when a window opens and closes */
static int limit_open;                 /* 1 while a refusing limit may be set */

typedef struct window {
    unsigned long generation;
    int open;
} window;

/* Whether each thread is in a call that parses (for the fork's report). */
static long busy[64];

static window look(void)
{
    window w;
    w.generation = __atomic_load_n(&limit_generation, __ATOMIC_SEQ_CST);
    w.open = __atomic_load_n(&limit_open, __ATOMIC_SEQ_CST);
    return w;
}

/* Whether a refusing limit may have been set at some moment between before
** and after. */
static int refusing(window before, window after)
{
    return before.open || after.open || before.generation != after.generation;
}

static void open_window(int open)
{
    __atomic_store_n(&limit_open, open, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&limit_generation, 1, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------------ */
/* The mix                                                              */

enum op { OP_PROCESS, OP_REGISTERED, OP_REPLY, OP_ARES, OP_PARALLELISM, OP_INIT, OP_REGISTER,
          OP_LIMIT, OP_FORK, OPS };
static const char *const op_names[OPS] = {"process", "registered", "reply", "ares",
                                          "parallelism", "init", "register", "limit", "fork"};
/* Out of 1000: each operation's share. */
static const int op_weight[OPS] = {250, 150, 120, 300, 60, 30, 30, 40, 20};
static long op_count[OPS];
static long limit_refused;
static double deadline;
static uint32_t parallelism = 0;  /* the last value set (0: not set) */
static int with_fork = 1;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

/* A parse of m by libdnsshim: 1 when its status (and record count) is one
** it may have. */
static int check_parse(const char *what, const message *m, int32_t status, int32_t expected,
                       long records, window before, window after)
{
    if (status == expected && (status != DNS_SHIM_OK || records < 0 || records == m->records))
        return 1;
    if (status == DNS_SHIM_ERR_NO_MEMORY && refusing(before, after))
        return 1;
    fail("%s %s: status %d, expected %d%s; records %ld, expected %ld; detail: %s", what,
         m->path, (int)status, (int)expected, refusing(before, after) ? " or -13" : "", records,
         m->records, dns_shim_last_error());
    return 0;
}

static void op_fork(unsigned *seed)
{
    const message *m = &messages[next_random(seed) % (unsigned)n_messages];
    window before = look();
    long in_flight = 0;
    pid_t pid;
    for (int t = 0; t < 64; t++)
        in_flight += __atomic_load_n(&busy[t], __ATOMIC_SEQ_CST);
    pid = fork();
    if (pid < 0) {
        fail("fork: %s", strerror(errno));
        return;
    }
    if (pid == 0) {
        long records;
        int32_t status;
        window after;
        alarm(30);
        status = process(m, &records);
        after = look();
        _exit(check_parse("child's process", m, status, m->status, records, before, after)
              ? 0 : 1);
    }
    {
        /* The child's own alarm cannot be relied on to end it (a thread
        ** blocked on a lock whose holder the child does not have may never
        ** run its handler): the parent gives it 20 s, then kills it. */
        int wstatus = 0, waited = 0;
        pid_t got;
        while ((got = waitpid(pid, &wstatus, WNOHANG)) == 0 && waited < 2000) {
            usleep(10000);
            waited++;
        }
        if (got == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &wstatus, 0);
            fail("fork: the child hung (20 s) in its call on %s; parallelism last set to %u, "
                 "%ld other threads in a call at the fork", m->path,
                 __atomic_load_n(&parallelism, __ATOMIC_SEQ_CST), in_flight);
        } else if (got != pid)
            fail("waitpid: %s", strerror(errno));
        else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
            fail("fork: the child %s %d (%s)", WIFEXITED(wstatus) ? "exited" : "died of signal",
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus), m->path);
    }
}

static void op_limit(unsigned *seed)
{
    size_t bytes = 1 + next_random(seed) % 4096;
    const message *m = &messages[good];
    int32_t rc, status;
    long records;
    pthread_mutex_lock(&limit_lock);
    open_window(1);
    if ((rc = dns_shim_set_memory_limit(bytes)) != DNS_SHIM_OK)
        fail("dns_shim_set_memory_limit(%zu): %d", bytes, (int)rc);
    status = process(m, &records);
    if (status != DNS_SHIM_ERR_NO_MEMORY)
        fail("under a limit of %zu bytes, %s: status %d, expected -13", bytes, m->path,
             (int)status);
    else
        __atomic_add_fetch(&limit_refused, 1, __ATOMIC_RELAXED);
    if ((rc = dns_shim_set_memory_limit(0)) != DNS_SHIM_OK)
        fail("dns_shim_set_memory_limit(0): %d", (int)rc);
    open_window(0);
    pthread_mutex_unlock(&limit_lock);
}

static void *mix_main(void *arg)
{
    long self = (long)arg;
    unsigned seed = 0x9e3779b9u * (unsigned)self + 1;
    long mine[OPS] = {0};
    int i;
    while (now() < deadline) {
        int pick = (int)(next_random(&seed) % 1000), o = 0;
        const message *m = &messages[next_random(&seed) % (unsigned)n_messages];
        window before, after;
        long records;
        int32_t status;
        while (pick >= op_weight[o]) {
            pick -= op_weight[o];
            o++;
        }
        if (o == OP_FORK && !with_fork)
            o = OP_PROCESS;
        mine[o]++;
        __atomic_store_n(&busy[self], o != OP_FORK, __ATOMIC_SEQ_CST);
        switch ((enum op)o) {
        case OP_PROCESS:
            before = look();
            status = process(m, &records);
            after = look();
            check_parse("process", m, status, m->status, records, before, after);
            break;
        case OP_REGISTERED:
            before = look();
            counted = 0;
            status = process_dns_response(m->wire, m->len);
            after = look();
            check_parse("process_dns_response", m, status, m->status, counted, before, after);
            break;
        case OP_REPLY: {
            int other = (int)(next_random(&seed) & 1);
            before = look();
            counted = 0;
            status = dns_shim_process_reply(m->wire, m->len, other ? &m->other : &m->match,
                                            next_random(&seed) & 1 ? &callbacks : NULL);
            after = look();
            check_parse(other ? "process_reply (another ID)" : "process_reply", m, status,
                        other ? m->other_status : m->match_status, -1, before, after);
            break;
        }
        case OP_ARES: {
            int kind = (int)(next_random(&seed) % ARES_KINDS);
            int rc;
            before = look();
            rc = ares_parse(kind, m);
            after = look();
            if (rc != m->ares_status[kind] && !(rc == ARES_ENOMEM && refusing(before, after)))
                fail("ares_parse_%s_reply %s: %d, expected %d%s", ares_names[kind], m->path, rc,
                     m->ares_status[kind], refusing(before, after) ? " or ARES_ENOMEM" : "");
            break;
        }
        case OP_PARALLELISM: {
            uint32_t n = next_random(&seed) % 3;
            __atomic_store_n(&parallelism, n, __ATOMIC_SEQ_CST);
            if ((status = dns_shim_set_parallelism(n)) != DNS_SHIM_OK)
                fail("dns_shim_set_parallelism(%u): %d %s", n, (int)status,
                     dns_shim_last_error());
            break;
        }
        case OP_INIT:
            if ((status = dns_shim_init()) != DNS_SHIM_OK)
                fail("dns_shim_init: %d %s", (int)status, dns_shim_last_error());
            break;
        case OP_REGISTER:
            if ((status = dns_shim_register_callbacks(&callbacks)) != DNS_SHIM_OK)
                fail("dns_shim_register_callbacks: %d", (int)status);
            break;
        case OP_LIMIT:
            op_limit(&seed);
            break;
        case OP_FORK:
            op_fork(&seed);
            break;
        default:
            abort();
        }
        __atomic_store_n(&busy[self], 0, __ATOMIC_SEQ_CST);
    }
    for (i = 0; i < OPS; i++)
        __atomic_add_fetch(&op_count[i], mine[i], __ATOMIC_RELAXED);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads, seconds, i;
    pthread_t *tids;
    setvbuf(stdout, NULL, _IOLBF, 0);
    int first = 3;
    if (argc > 3 && strcmp(argv[3], "--no-fork") == 0) {
        with_fork = 0;
        first = 4;
    }
    if (argc <= first || (threads = atoi(argv[1])) < 1 || threads > 64 ||
        (seconds = atoi(argv[2])) < 1) {
        fprintf(stderr, "usage: race_mix THREADS SECONDS [--no-fork] FILE...\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm((unsigned)seconds * 4 + 60);
    fill_callbacks(&callbacks);
    load(argc, argv, first);
    if (dns_shim_register_callbacks(&callbacks) != DNS_SHIM_OK) {
        fprintf(stderr, "race_mix: cannot register the callbacks\n");
        return 2;
    }
    tids = calloc((size_t)threads, sizeof *tids);
    deadline = now() + seconds;
    for (i = 0; i < threads; i++)
        pthread_create(&tids[i], NULL, mix_main, (void *)(long)i);
    for (i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    alarm(0);
    printf("%s race_mix: %d threads, %d s, %d messages:", failures ? "FAIL" : "ok", threads,
           seconds, n_messages);
    for (i = 0; i < OPS; i++)
        printf(" %s %ld", op_names[i], op_count[i]);
    printf(", %ld refused under a limit, %d wrong\n", limit_refused, failures);
    for (i = 0; i < n_messages; i++) {
        free(messages[i].wire);
        free(messages[i].qname);
    }
    free(messages);
    free(tids);
    return failures != 0;
}
