/*
** dnsshim_test: the C-side test driver of libdnsshim.
**
**   dnsshim_test [options] FILE...   feed each file (a raw DNS message) to the
**                                    library and log every callback
**   dnsshim_test --api               check the argument contract from C
**
** Options:
**   --registered    register the callbacks and call process_dns_response
**                   (default: dns_shim_process with a per-call set)
**   --sections N    the sections mask (default 7: all three)
**   --stop-at N     the Nth callback of each message (from 1) returns 1
**   --no-typed      leave every typed callback NULL (all go to on_other)
**   --no-other      leave on_other NULL
**   --hex           the files hold hex text
**   --log           install a log handler that prints each message to stdout
**                   as "log LEVEL: LINE" (one per line of the message)
**   --leak          on_header leaks on purpose, twice: a block it keeps a
**                   pointer to (still reachable) and one it drops (definitely
**                   lost), for the valgrind suppressions' test
**   --detail        after each status line of a failure, "detail TEXT": what
**                   dns_shim_last_error says (and "detail " after success:
**                   it must be empty)
**   --size-1.0      pass 1.0's struct_size (the struct up to on_other) with
**                   on_edns_option still set: the library must not call it
**   --expect-id N --expect-name NAME [--expect-type T] [--expect-class C]
**   [--match-case] [--expect-cookie HEX16]
**                   check each message against that query with
**                   dns_shim_process_reply (type and class default to 1);
**                   with --registered, its callbacks argument is NULL
**   --stream        each FILE holds many messages, each preceded by its
**                   length as 4 octets, big-endian; they are numbered from 0
**                   across the files and printed as "# N".  FILE "-" is
**                   stdin: "--registered --stream -" is the batch driver of
**                   the agreement tests (tests/mutator.py), every message
**                   through process_dns_response in one process
**   --fresh         with --stream: start the runtime (dns_shim_init), then
**                   parse each message in a child forked for it alone, so
**                   that each result is the one a process that has parsed
**                   nothing else gives (the history-independence reference)
**   --every K       with --stream: print only messages 0, K, 2K...; the
**                   others are parsed with the same callbacks, output
**                   discarded
**   --rss           with --stream: after each printed message, a line
**                   "rss KIB" with this process's resident memory
**
** For each file it prints "# FILE", one line per callback with every field,
** then "status N NAME".  The Python tests compare these lines with what
** dnspython itself parses from the same bytes, so every value is checked as a
** C program sees it.  Exit status: 0 when every message was read and passed
** to the library, whatever their statuses; 1 when a check of its own failed,
** a file could not be read, or (--stream) a frame promises more octets than
** its file holds (the messages before it are processed and printed).
*/
#include "dns_shim.h"
#include "tool_util.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct log_ctx {
    long calls;
    long stop_at;
    int failures;
};

static int32_t count_call(struct log_ctx *log)
{
    log->calls++;
    return log->stop_at > 0 && log->calls == log->stop_at ? 1 : 0;
}

static void print_hex(const char *label, const uint8_t *data, size_t len)
{
    printf(" %s=", label);
    print_hex_digits(data, len);
}

static void print_bytes(struct log_ctx *log, const char *label, dns_shim_bytes b)
{
    if (b.data == NULL || b.data[b.len] != 0) {
        printf(" %s=<NO-NUL>", label);
        log->failures++;
        return;
    }
    print_hex(label, b.data, b.len);
}

static void print_name(struct log_ctx *log, const char *label, const char *name)
{
    if (name == NULL || name[0] == '\0') {
        printf(" %s=<BAD-NAME>", label);
        log->failures++;
        return;
    }
    printf(" %s=%s", label, name);
}

static void print_rr(struct log_ctx *log, const char *kind, const dns_shim_rr *rr)
{
    printf("%s sec=%" PRIu32 " idx=%" PRIu32, kind, rr->section, rr->index);
    print_name(log, "owner", rr->owner);
    printf(" type=%u class=%u ttl=%" PRIu32, rr->type, rr->rclass, rr->ttl);
}

/* --leak: what a careless callback keeps and what it loses. */
static int leak = 0;
void *volatile dnsshim_test_kept; /* a program-wide pointer: still reachable */

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    struct log_ctx *log = ctx;
    if (leak) {
        void *lost = malloc(32);
        dnsshim_test_kept = malloc(64);
        memset(dnsshim_test_kept, 1, 64);
        memset(lost, 2, 32);
        lost = NULL;
    }
    printf("header id=%u flags=%u opcode=%u rcode=%u qd=%u an=%u ns=%u ar=%u", h->id, h->flags,
           h->opcode, h->rcode, h->qdcount, h->ancount, h->nscount, h->arcount);
    if (h->qname != NULL)
        print_name(log, "qname", h->qname);
    else
        printf(" qname=<NULL>");
    printf(" qtype=%u qclass=%u edns=%" PRId32 " payload=%u do=%u eflags=%u\n", h->qtype,
           h->qclass, h->edns_version, h->edns_payload, h->edns_do, h->edns_flags);
    return count_call(log);
}

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    print_rr(ctx, "a", &r->rr);
    printf(" address=%u.%u.%u.%u\n", r->address[0], r->address[1], r->address[2], r->address[3]);
    return count_call(ctx);
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    print_rr(ctx, "aaaa", &r->rr);
    print_hex("address", r->address, 16);
    printf("\n");
    return count_call(ctx);
}

static int32_t print_target(void *ctx, const char *kind, const dns_shim_target *r)
{
    print_rr(ctx, kind, &r->rr);
    print_name(ctx, "target", r->target);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_cname(void *ctx, const dns_shim_target *r) { return print_target(ctx, "cname", r); }
static int32_t on_ns(void *ctx, const dns_shim_target *r) { return print_target(ctx, "ns", r); }
static int32_t on_ptr(void *ctx, const dns_shim_target *r) { return print_target(ctx, "ptr", r); }
static int32_t on_dname(void *ctx, const dns_shim_target *r) { return print_target(ctx, "dname", r); }

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    print_rr(ctx, "mx", &r->rr);
    printf(" preference=%u", r->preference);
    print_name(ctx, "exchange", r->exchange);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_txt(void *ctx, const dns_shim_txt *r)
{
    size_t i;
    print_rr(ctx, "txt", &r->rr);
    printf(" count=%zu", r->count);
    for (i = 0; i < r->count; i++)
        print_bytes(ctx, "string", r->strings[i]);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    print_rr(ctx, "srv", &r->rr);
    printf(" priority=%u weight=%u port=%u", r->priority, r->weight, r->port);
    print_name(ctx, "target", r->target);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    print_rr(ctx, "naptr", &r->rr);
    printf(" order=%u preference=%u", r->order, r->preference);
    print_bytes(ctx, "flags", r->flags);
    print_bytes(ctx, "services", r->services);
    print_bytes(ctx, "regexp", r->regexp);
    print_name(ctx, "replacement", r->replacement);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_soa(void *ctx, const dns_shim_soa *r)
{
    print_rr(ctx, "soa", &r->rr);
    print_name(ctx, "mname", r->mname);
    print_name(ctx, "rname", r->rname);
    printf(" serial=%" PRIu32 " refresh=%" PRIu32 " retry=%" PRIu32 " expire=%" PRIu32
           " minimum=%" PRIu32 "\n",
           r->serial, r->refresh, r->retry, r->expire, r->minimum);
    return count_call(ctx);
}

static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    print_rr(ctx, "other", &r->rr);
    print_bytes(ctx, "rdata", r->rdata);
    printf("\n");
    return count_call(ctx);
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    printf("edns_option code=%u", o->code);
    print_bytes(ctx, "data", o->data);
    printf(" ede=%" PRId32, o->ede_info_code);
    print_bytes(ctx, "ede_text", o->ede_text);
    print_bytes(ctx, "cookie_client", o->cookie_client);
    print_bytes(ctx, "cookie_server", o->cookie_server);
    printf(" ecs_family=%u ecs_source=%u ecs_scope=%u", o->ecs_family, o->ecs_source_prefix,
           o->ecs_scope_prefix);
    print_bytes(ctx, "ecs_address", o->ecs_address);
    printf("\n");
    return count_call(ctx);
}

/* --detail: dns_shim_last_error after each call. */
static int show_detail = 0;

/* A call's status line, and with --detail its reason. */
static void print_status(int32_t rc)
{
    printf("status %" PRId32 " %s\n", rc, dns_shim_strerror(rc));
    if (show_detail)
        printf("detail %s\n", dns_shim_last_error());
}

static void print_log(void *ctx, int32_t level, const char *message)
{
    const char *line = message;
    if (ctx != (void *)print_log)
        printf("log with a wrong ctx\n");
    while (*line) {
        const char *end = strchr(line, '\n');
        int n = end ? (int)(end - line) : (int)strlen(line);
        printf("log %" PRId32 ": %.*s\n", level, n, line);
        line += n + (end ? 1 : 0);
    }
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* --api: the argument contract, checked from C                        */

static int api_failures = 0;

static void expect(const char *what, int32_t got, int32_t want)
{
    if (got == want) {
        printf("ok %s = %" PRId32 "\n", what, got);
    } else {
        printf("FAIL %s = %" PRId32 " (%s), expected %" PRId32 " (%s)\n", what, got,
               dns_shim_strerror(got), want, dns_shim_strerror(want));
        api_failures++;
    }
}

static int32_t count_only(void *ctx, const dns_shim_header *h)
{
    (void)h;
    ++*(int *)ctx;
    return 0;
}

/* Is the embedded interpreter running?  libpython is loaded with us, or,
** in the firmware object, linked in with its names local: there this cannot
** be seen, and the checks that ask say "skip". */
static int runtime_started(void)
{
    int (*is_initialized)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    return is_initialized == NULL ? -1 : is_initialized();
}

static void expect_started(const char *what, int want)
{
    int started = runtime_started();
    if (started < 0)
        printf("skip %s (the runtime's names are not visible)\n", what);
    else
        expect(what, started, want);
}

/* dns_shim_last_error after a call: one "text WHAT = <text>" line each. */
static void print_text(const char *what)
{
    printf("text %s = %s\n", what, dns_shim_last_error());
}

static int32_t stop_with_5(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    (void)h;
    return 5;
}

static void *other_thread(void *msg)
{
    static char seen[2][256];
    dns_shim_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    snprintf(seen[0], sizeof seen[0], "%s", dns_shim_last_error());
    dns_shim_process(msg, 19, &cb);
    snprintf(seen[1], sizeof seen[1], "%s", dns_shim_last_error());
    return seen;
}

/* The reason for each kind of failure, and its scope: one thread. */
static void run_last_error(uint8_t *msg, int32_t len)
{
    dns_shim_callbacks cb, bad;
    dns_shim_query q;
    pthread_t thread;
    char (*seen)[256];

    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.id = 0x1234;
    q.qname = "a";
    q.qtype = q.qclass = 1;
    dns_shim_init();
    print_text("after dns_shim_init");
    process_dns_response(msg, -1), print_text("length -1");
    process_dns_response(msg, 70000), print_text("length 70000");
    process_dns_response(NULL, 19), print_text("buffer NULL");
    dns_shim_process(msg, len, NULL), print_text("callbacks NULL");
    bad = cb;
    bad.struct_size = 7;
    dns_shim_process(msg, len, &bad), print_text("struct_size 7");
    bad = cb;
    bad.sections = 8;
    dns_shim_register_callbacks(&bad), print_text("register sections 8");
    dns_shim_register_callbacks(NULL), print_text("register NULL");
    dns_shim_process_reply(msg, len, NULL, &cb), print_text("query NULL");
    q.struct_size = 4;
    dns_shim_process_reply(msg, len, &q, &cb), print_text("query struct_size 4");
    q.struct_size = sizeof q;
    q.flags = 6;
    dns_shim_process_reply(msg, len, &q, &cb), print_text("query flags 6");
    q.flags = 0;
    q.qname = NULL;
    dns_shim_process_reply(msg, len, &q, &cb), print_text("qname NULL");
    q.qname = "a..b";
    dns_shim_process_reply(msg, len, &q, &cb), print_text("qname a..b");
    q.qname = "a";
    q.id = 0x1235;
    dns_shim_process_reply(msg, len, &q, &cb), print_text("other id");
    q.id = 0x1234;
    dns_shim_process_reply(msg, len, &q, &cb), print_text("matching reply");
    process_dns_response(msg, 11), print_text("11 octets");
    cb.on_header = stop_with_5;
    dns_shim_process(msg, len, &cb), print_text("on_header returns 5");
    cb.on_header = NULL;
    dns_shim_process(msg, len, &cb), print_text("success");
    /* Per thread: a failure here, a success there; neither sees the other's. */
    process_dns_response(msg, -1);
    if (pthread_create(&thread, NULL, other_thread, msg) == 0 &&
        pthread_join(thread, (void **)&seen) == 0) {
        printf("text other thread before its call = %s\n", seen[0]);
        printf("text other thread after its call = %s\n", seen[1]);
    }
    print_text("this thread after the other's success");
}

static int run_api(void)
{
    /* A response with one question and no records: id 0x1234, QR RD RA. */
    static uint8_t ok_msg[] = {0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0,
                               1, 'a', 0, 0, 1, 0, 1};
    int calls = 0;
    int32_t s;
    dns_shim_callbacks cb, bad;

    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.ctx = &calls;
    cb.on_header = count_only;

    /* Argument checks: none may start the runtime. */
    expect("process_dns_response(NULL, 19)", process_dns_response(NULL, 19), DNS_SHIM_ERR_NULL_BUFFER);
    expect("process_dns_response(msg, -1)", process_dns_response(ok_msg, -1), DNS_SHIM_ERR_BAD_LENGTH);
    expect("process_dns_response(NULL, -1)", process_dns_response(NULL, -1), DNS_SHIM_ERR_BAD_LENGTH);
    expect("process_dns_response(msg, INT32_MIN)", process_dns_response(ok_msg, INT32_MIN),
           DNS_SHIM_ERR_BAD_LENGTH);
    expect("process_dns_response(msg, 65536)", process_dns_response(ok_msg, 65536), DNS_SHIM_ERR_BAD_LENGTH);
    expect("process_dns_response(msg, 70000)", process_dns_response(ok_msg, 70000), DNS_SHIM_ERR_BAD_LENGTH);
    expect("process_dns_response(msg, INT32_MAX)", process_dns_response(ok_msg, INT32_MAX),
           DNS_SHIM_ERR_BAD_LENGTH);
    expect("dns_shim_process(msg, len, NULL)", dns_shim_process(ok_msg, sizeof ok_msg, NULL),
           DNS_SHIM_ERR_BAD_ARGUMENT);
    expect("dns_shim_process(NULL, 5, cb)", dns_shim_process(NULL, 5, &cb), DNS_SHIM_ERR_NULL_BUFFER);
    bad = cb;
    bad.struct_size = 0;
    expect("struct_size 0", dns_shim_process(ok_msg, sizeof ok_msg, &bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    bad.struct_size = sizeof bad - 1;
    expect("struct_size - 1", dns_shim_process(ok_msg, sizeof ok_msg, &bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    bad.struct_size = sizeof bad + 8;
    expect("struct_size + 8", dns_shim_process(ok_msg, sizeof ok_msg, &bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    expect("register struct_size + 8", dns_shim_register_callbacks(&bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    bad = cb;
    bad.sections = 8;
    expect("sections bit 8", dns_shim_process(ok_msg, sizeof ok_msg, &bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    expect("register sections bit 8", dns_shim_register_callbacks(&bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    expect("register NULL", dns_shim_register_callbacks(NULL), DNS_SHIM_OK);
    expect("register cb", dns_shim_register_callbacks(&cb), DNS_SHIM_OK);
    expect_started("runtime started by argument checks", 0);

    /* The runtime, then real calls. */
    expect("dns_shim_init()", dns_shim_init(), DNS_SHIM_OK);
    expect_started("runtime started by dns_shim_init", 1);
    expect("dns_shim_init() again", dns_shim_init(), DNS_SHIM_OK);
    expect("process_dns_response(NULL, 0)", process_dns_response(NULL, 0), DNS_SHIM_ERR_SHORT_HEADER);
    expect("process_dns_response(msg, 0)", process_dns_response(ok_msg, 0), DNS_SHIM_ERR_SHORT_HEADER);
    expect("process_dns_response(msg, 11)", process_dns_response(ok_msg, 11), DNS_SHIM_ERR_SHORT_HEADER);
    expect("on_header calls before success", calls, 0);
    expect("process_dns_response(msg) registered", process_dns_response(ok_msg, sizeof ok_msg), DNS_SHIM_OK);
    expect("on_header calls", calls, 1);
    /* A failed registration leaves the registered set as it was. */
    expect("register sections bit 8 again", dns_shim_register_callbacks(&bad), DNS_SHIM_ERR_BAD_ARGUMENT);
    expect("process_dns_response(msg) still registered", process_dns_response(ok_msg, sizeof ok_msg),
           DNS_SHIM_OK);
    expect("on_header calls", calls, 2);
    /* The registered set is a copy: changing ours afterwards changes nothing. */
    cb.on_header = NULL;
    expect("process_dns_response(msg) with the copy", process_dns_response(ok_msg, sizeof ok_msg), DNS_SHIM_OK);
    expect("on_header calls", calls, 3);
    expect("register NULL", dns_shim_register_callbacks(NULL), DNS_SHIM_OK);
    expect("process_dns_response(msg) unregistered", process_dns_response(ok_msg, sizeof ok_msg), DNS_SHIM_OK);
    expect("on_header calls", calls, 3);
    ok_msg[2] &= 0x7f; /* QR clear */
    expect("process_dns_response(query)", process_dns_response(ok_msg, sizeof ok_msg),
           DNS_SHIM_ERR_NOT_RESPONSE);
    ok_msg[2] |= 0x80;

    /* dns_shim_process_reply: arguments, then the query against the reply. */
    {
        dns_shim_query q;
        memset(&q, 0, sizeof q);
        q.struct_size = sizeof q;
        q.id = 0x1234;
        q.qname = "a";
        q.qtype = 1;
        q.qclass = 1;
        calls = 0;
        cb.on_header = count_only;
        expect("reply(NULL, 19, q, cb)", dns_shim_process_reply(NULL, 19, &q, &cb),
               DNS_SHIM_ERR_NULL_BUFFER);
        expect("reply(msg, -1, q, cb)", dns_shim_process_reply(ok_msg, -1, &q, &cb),
               DNS_SHIM_ERR_BAD_LENGTH);
        expect("reply query NULL", dns_shim_process_reply(ok_msg, sizeof ok_msg, NULL, &cb),
               DNS_SHIM_ERR_BAD_ARGUMENT);
        bad = cb;
        bad.struct_size = 0;
        expect("reply callbacks struct_size 0",
               dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &bad), DNS_SHIM_ERR_BAD_ARGUMENT);
        q.struct_size = sizeof q - 8;
        expect("reply query struct_size - 8",
               dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb), DNS_SHIM_ERR_BAD_ARGUMENT);
        q.struct_size = sizeof q;
        q.flags = 2;
        expect("reply query flags 2", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb),
               DNS_SHIM_ERR_BAD_ARGUMENT);
        q.flags = 0;
        q.qname = NULL;
        expect("reply qname NULL", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb),
               DNS_SHIM_ERR_BAD_ARGUMENT);
        q.qname = "a..b";
        expect("reply qname a..b", dns_shim_process_reply(ok_msg, 5, &q, &cb),
               DNS_SHIM_ERR_BAD_ARGUMENT);
        q.qname = "A.";
        expect("reply short header", dns_shim_process_reply(ok_msg, 11, &q, &cb),
               DNS_SHIM_ERR_SHORT_HEADER);
        expect("on_header calls before a match", calls, 0);
        expect("reply matches", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb),
               DNS_SHIM_OK);
        expect("on_header calls", calls, 1);
        q.flags = DNS_SHIM_MATCH_CASE;
        expect("reply with case", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb),
               DNS_SHIM_ERR_MISMATCH);
        q.flags = 0;
        q.id = 0x1235;
        expect("reply other id", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, &cb),
               DNS_SHIM_ERR_MISMATCH);
        /* The ID is checked before the rest of the message is read. */
        expect("reply other id, cut", dns_shim_process_reply(ok_msg, 14, &q, &cb),
               DNS_SHIM_ERR_MISMATCH);
        q.id = 0x1234;
        expect("reply right id, cut", dns_shim_process_reply(ok_msg, 14, &q, &cb),
               DNS_SHIM_ERR_TRUNCATED);
        expect("on_header calls after mismatches", calls, 1);
        /* NULL callbacks: the registered set (none now: parse and check). */
        expect("reply registered none", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, NULL),
               DNS_SHIM_OK);
        expect("register cb", dns_shim_register_callbacks(&cb), DNS_SHIM_OK);
        expect("reply registered", dns_shim_process_reply(ok_msg, sizeof ok_msg, &q, NULL),
               DNS_SHIM_OK);
        expect("on_header calls", calls, 2);
        expect("register NULL", dns_shim_register_callbacks(NULL), DNS_SHIM_OK);
    }

    run_last_error(ok_msg, sizeof ok_msg);

    /* Text. */
    for (s = 1; s >= DNS_SHIM_ERR_UNSUPPORTED - 2; s--) {
        const char *text = dns_shim_strerror(s);
        int known = s <= 0 && s >= DNS_SHIM_ERR_UNSUPPORTED;
        printf("%s strerror(%" PRId32 ") = \"%s\"\n", text && *text ? "ok" : "FAIL", s,
               text ? text : "(null)");
        api_failures += !(text && *text);
        expect("strerror known", strcmp(text, "unknown dnsshim status") != 0, known);
    }
    expect("strerror(INT32_MIN) fallback",
           strcmp(dns_shim_strerror(INT32_MIN), "unknown dnsshim status"), 0);
    {
        char want[32];
        snprintf(want, sizeof want, "%d.%d.%d (", DNS_SHIM_VERSION_MAJOR, DNS_SHIM_VERSION_MINOR,
                 DNS_SHIM_VERSION_PATCH);
        printf("version \"%s\"\n", dns_shim_version());
        expect("version matches the header", strncmp(dns_shim_version(), want, strlen(want)), 0);
    }
    printf("api: %d failed\n", api_failures);
    return api_failures ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* --stream: many messages per file, in one process or each in a fork  */

struct stream_opts {
    int registered, fresh, rss;
    long every;
    const dns_shim_query *query; /* --expect-*: dns_shim_process_reply; else NULL */
};

/* One message through the entry point the options chose. */
static int32_t parse_one(const dns_shim_callbacks *cb, int registered,
                         const dns_shim_query *query, unsigned char *msg, int32_t len)
{
    if (query != NULL)
        return dns_shim_process_reply(msg, len, query, registered ? NULL : cb);
    return registered ? process_dns_response(msg, len) : dns_shim_process(msg, len, cb);
}

/* One message: its "# N" block (or nothing, output discarded, when quiet).
** Returns 0, or 1 when a fresh child did not end normally. */
static int stream_message(struct log_ctx *log, const dns_shim_callbacks *cb,
                          const struct stream_opts *o, long n, unsigned char *msg, int32_t len,
                          int quiet, int devnull)
{
    int saved = -1, bad = 0;
    int32_t rc;

    fflush(stdout);
    if (quiet) {
        saved = dup(STDOUT_FILENO);
        dup2(devnull, STDOUT_FILENO);
    }
    printf("# %ld\n", n);
    log->calls = 0;
    if (o->fresh) {
        pid_t pid;
        int wstatus = 0;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            rc = parse_one(cb, o->registered, o->query, msg, len);
            print_status(rc);
            fflush(stdout);
            _exit(log->failures ? 3 : 0);
        }
        if (pid < 0 || waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus)) {
            printf("status crashed\n");
            bad = 1;
        } else if (WEXITSTATUS(wstatus) == 3) {
            log->failures++;
        }
    } else {
        rc = parse_one(cb, o->registered, o->query, msg, len);
        print_status(rc);
    }
    fflush(stdout);
    if (quiet) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
    } else if (o->rss) {
        printf("rss %ld\n", rss_kib());
    }
    return bad;
}

static int run_stream(struct log_ctx *log, const dns_shim_callbacks *cb,
                      const struct stream_opts *o, char **files, int nfiles)
{
    long n = 0;
    int i, status = 0, devnull = open("/dev/null", O_WRONLY);

    if (devnull < 0) {
        perror("/dev/null");
        return 1;
    }
    if (o->fresh && dns_shim_init() != DNS_SHIM_OK) {
        fprintf(stderr, "dns_shim_init failed\n");
        close(devnull);
        return 1;
    }
    for (i = 0; i < nfiles; i++) {
        long len = 0, p = 0;
        unsigned char *buf = read_message(files[i], 0, &len);
        if (buf == NULL) {
            status = 1;
            continue;
        }
        while (p + 4 <= len) {
            unsigned long size = (unsigned long)buf[p] << 24 | (unsigned long)buf[p + 1] << 16 |
                                 (unsigned long)buf[p + 2] << 8 | buf[p + 3];
            if (size > (unsigned long)(len - p - 4))
                break;
            status |= stream_message(log, cb, o, n, buf + p + 4, (int32_t)size,
                                     o->every > 1 && n % o->every != 0, devnull);
            p += 4 + (long)size;
            n++;
        }
        if (p != len) {
            fprintf(stderr, "%s: a message is cut at octet %ld\n", files[i], p);
            status = 1;
        }
        free(buf);
    }
    close(devnull);
    return status;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    struct log_ctx log = {0, 0, 0};
    dns_shim_callbacks cb;
    dns_shim_query query;
    uint8_t cookie[8];
    int i, registered = 0, typed = 1, other = 1, hex = 0, status = 0, size_10 = 0, reply = 0;
    uint32_t sections = 7;
    struct stream_opts stream = {0, 0, 0, 1, NULL};
    int streaming = 0;

    memset(&query, 0, sizeof query);
    query.struct_size = sizeof query;
    query.qtype = query.qclass = 1;

    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (strcmp(argv[i], "--api") == 0)
            return run_api();
        else if (strcmp(argv[i], "--registered") == 0)
            registered = 1;
        else if (strcmp(argv[i], "--no-typed") == 0)
            typed = 0;
        else if (strcmp(argv[i], "--no-other") == 0)
            other = 0;
        else if (strcmp(argv[i], "--hex") == 0)
            hex = 1;
        else if (strcmp(argv[i], "--leak") == 0)
            leak = 1;
        else if (strcmp(argv[i], "--detail") == 0)
            show_detail = 1;
        else if (strcmp(argv[i], "--log") == 0)
            dns_shim_set_log_handler(print_log, (void *)print_log);
        else if (strcmp(argv[i], "--sections") == 0 && i + 1 < argc)
            sections = (uint32_t)strtoul(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--stop-at") == 0 && i + 1 < argc)
            log.stop_at = strtol(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--size-1.0") == 0)
            size_10 = 1;
        else if (strcmp(argv[i], "--expect-id") == 0 && i + 1 < argc)
            query.id = (uint16_t)strtoul(argv[++i], NULL, 0), reply = 1;
        else if (strcmp(argv[i], "--expect-name") == 0 && i + 1 < argc)
            query.qname = argv[++i], reply = 1;
        else if (strcmp(argv[i], "--expect-type") == 0 && i + 1 < argc)
            query.qtype = (uint16_t)strtoul(argv[++i], NULL, 0), reply = 1;
        else if (strcmp(argv[i], "--expect-class") == 0 && i + 1 < argc)
            query.qclass = (uint16_t)strtoul(argv[++i], NULL, 0), reply = 1;
        else if (strcmp(argv[i], "--match-case") == 0)
            query.flags |= DNS_SHIM_MATCH_CASE, reply = 1;
        else if (strcmp(argv[i], "--expect-cookie") == 0 && i + 1 < argc &&
                 parse_cookie(argv[i + 1], cookie) == 0)
            query.cookie_client = cookie, i++, reply = 1;
        else if (strcmp(argv[i], "--stream") == 0)
            streaming = 1;
        else if (strcmp(argv[i], "--fresh") == 0)
            stream.fresh = 1;
        else if (strcmp(argv[i], "--rss") == 0)
            stream.rss = 1;
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            stream.every = strtol(argv[++i], NULL, 0);
        else {
            fprintf(stderr, "usage: %s [--api] [--registered] [--sections N] [--stop-at N] "
                            "[--no-typed] [--no-other] [--hex] [--log] [--detail] [--leak] [--size-1.0]\n"
                            "       [--expect-id N --expect-name NAME [--expect-type T] "
                            "[--expect-class C] [--match-case] [--expect-cookie HEX16]]\n"
                            "       [--stream [--fresh] [--every K] [--rss]] FILE...\n", argv[0]);
            return 2;
        }
    }

    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = sections;
    cb.ctx = &log;
    cb.on_header = on_header;
    if (typed) {
        cb.on_a = on_a;
        cb.on_aaaa = on_aaaa;
        cb.on_cname = on_cname;
        cb.on_ns = on_ns;
        cb.on_ptr = on_ptr;
        cb.on_dname = on_dname;
        cb.on_mx = on_mx;
        cb.on_txt = on_txt;
        cb.on_srv = on_srv;
        cb.on_naptr = on_naptr;
        cb.on_soa = on_soa;
    }
    if (other)
        cb.on_other = on_other;
    cb.on_edns_option = on_edns_option;
    if (size_10)
        cb.struct_size = (uint32_t)offsetof(dns_shim_callbacks, on_edns_option);
    if (registered && dns_shim_register_callbacks(&cb) != DNS_SHIM_OK) {
        fprintf(stderr, "dns_shim_register_callbacks failed\n");
        return 1;
    }

    stream.registered = registered;
    stream.query = reply ? &query : NULL;
    if (streaming)
        status = run_stream(&log, &cb, &stream, argv + i, argc - i);
    for (; !streaming && i < argc; i++) {
        long len = 0;
        unsigned char *msg = read_message(argv[i], hex, &len);
        int32_t rc;
        if (msg == NULL) {
            status = 1;
            continue;
        }
        printf("# %s\n", argv[i]);
        log.calls = 0;
        rc = parse_one(&cb, registered, reply ? &query : NULL, msg, (int32_t)len);
        print_status(rc);
        free(msg);
    }
    if (registered)
        dns_shim_register_callbacks(NULL);
    fflush(stdout);
    if (log.failures) {
        fprintf(stderr, "%d malformed values seen by the callbacks\n", log.failures);
        status = 1;
    }
    return status;
}
