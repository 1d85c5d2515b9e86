/*
** ares_allocators: every block goes back to the allocator it came from.
**
** The program gives c-ares one counting allocator (ares_library_init_mem)
** and libdnsshim another (dns_shim_set_allocator), each keeping the set of
** blocks it handed out.  It runs every classic parser on each message file
** and ares_expand_name on its question, holds the results, then frees them
** with c-ares's free functions.  A block freed by the other allocator, or
** by one that never handed it out, is counted as foreign.
**
**   ares_allocators FILE...
**
** Prints, per file, "held N" (the c-ares allocator's blocks live while the
** results are held, above what was live before) and "back" when every one
** went back; then, after ares_library_cleanup, a parse that uses malloc
** again ("after cleanup held 0"); then the totals: "cares foreign 0",
** "dnsshim foreign 0", "dnsshim blocks N" and "cares live 0"; and "cffi
** around N": the calls cffi's backend made to the C library's allocation
** functions (around both allocators) while the files after the first were
** parsed.  Exits 1 when a block went to the wrong allocator, or one of
** c-ares's is left live.
*/
#define _GNU_SOURCE 1
#include "dns_shim.h"

#include <ares.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_util.h"

struct counting {
    pthread_mutex_t lock;
    void **slots; /* open addressing: NULL empty, &tomb removed */
    size_t cap, used;
    long live, total, foreign;
};

/* The C library's allocation functions, defined by this program
** (alloc_watch.h); while watching, a call whose caller is cffi's backend is
** counted. */
#include "alloc_watch.h"

static int watching = 0;
static __thread int in_dladdr = 0;
static long cffi_around = 0;

static void went_around(const void *caller)
{
    if (!__atomic_load_n(&watching, __ATOMIC_RELAXED) || in_dladdr)
        return;
    in_dladdr = 1;
    if (object_is(caller, "/_cffi_backend"))
        __atomic_add_fetch(&cffi_around, 1, __ATOMIC_RELAXED);
    in_dladdr = 0;
}

static char tomb;
static struct counting cares = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0};
static struct counting shim = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, 0, 0};

static size_t slot_of(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 20) & (cap - 1);
}

static void put(struct counting *c, void *p)
{
    size_t i;
    if (c->used * 2 >= c->cap) {
        size_t cap = c->cap ? c->cap * 4 : 4096, j;
        void **slots = calloc(cap, sizeof *slots);
        if (slots == NULL)
            abort();
        for (j = 0; j < c->cap; j++)
            if (c->slots[j] != NULL && c->slots[j] != &tomb) {
                i = slot_of(c->slots[j], cap);
                while (slots[i] != NULL)
                    i = (i + 1) & (cap - 1);
                slots[i] = c->slots[j];
            }
        free(c->slots);
        c->slots = slots;
        c->cap = cap;
        c->used = (size_t)c->live;
    }
    i = slot_of(p, c->cap);
    while (c->slots[i] != NULL && c->slots[i] != &tomb)
        i = (i + 1) & (c->cap - 1);
    if (c->slots[i] == NULL)
        c->used++;
    c->slots[i] = p;
    c->live++;
    c->total++;
}

/* 1 when p was handed out by c (and is forgotten now). */
static int take(struct counting *c, void *p)
{
    size_t i;
    if (c->cap == 0)
        return 0;
    for (i = slot_of(p, c->cap); c->slots[i] != NULL; i = (i + 1) & (c->cap - 1))
        if (c->slots[i] == p) {
            c->slots[i] = &tomb;
            c->live--;
            return 1;
        }
    return 0;
}

static void *count_malloc(struct counting *c, size_t n)
{
    void *p = malloc(n);
    if (p != NULL) {
        pthread_mutex_lock(&c->lock);
        put(c, p);
        pthread_mutex_unlock(&c->lock);
    }
    return p;
}

static void count_free(struct counting *c, void *p)
{
    int mine;
    if (p == NULL)
        return;
    pthread_mutex_lock(&c->lock);
    mine = take(c, p);
    if (!mine)
        c->foreign++;
    pthread_mutex_unlock(&c->lock);
    if (mine)
        free(p); /* a foreign block is leaked rather than freed twice */
}

static void *count_realloc(struct counting *c, void *p, size_t n)
{
    void *q;
    if (p == NULL)
        return count_malloc(c, n);
    pthread_mutex_lock(&c->lock);
    if (!take(c, p)) {
        c->foreign++;
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    pthread_mutex_unlock(&c->lock);
    q = realloc(p, n);
    pthread_mutex_lock(&c->lock);
    put(c, q != NULL ? q : p);
    c->total--; /* a move, not a new block */
    pthread_mutex_unlock(&c->lock);
    return q;
}

static void *cares_malloc(size_t n) { return count_malloc(&cares, n); }
static void cares_free(void *p) { count_free(&cares, p); }
static void *cares_realloc(void *p, size_t n) { return count_realloc(&cares, p, n); }
static void *shim_malloc(void *ctx, size_t n) { (void)ctx; return count_malloc(&shim, n); }
static void *shim_calloc(void *ctx, size_t k, size_t n)
{
    void *p;
    (void)ctx;
    if (n != 0 && k > SIZE_MAX / n)
        return NULL;
    p = count_malloc(&shim, k * n);
    if (p != NULL)
        memset(p, 0, k * n);
    return p;
}
static void *shim_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    return count_realloc(&shim, p, n);
}
static void shim_free(void *ctx, void *p) { (void)ctx; count_free(&shim, p); }

static long cares_live(void)
{
    long n;
    pthread_mutex_lock(&cares.lock);
    n = cares.live;
    pthread_mutex_unlock(&cares.lock);
    return n;
}

/* Every parser on msg, the results held; then freed.  Returns the blocks
** of c-ares's allocator the held results took. */
static long parse_all(const unsigned char *msg, int len)
{
    struct hostent *a = NULL, *aaaa = NULL, *ns = NULL, *ptr = NULL;
    struct ares_srv_reply *srv = NULL;
    struct ares_mx_reply *mx = NULL;
    struct ares_txt_reply *txt = NULL;
    struct ares_txt_ext *txt_ext = NULL;
    struct ares_naptr_reply *naptr = NULL;
    struct ares_soa_reply *soa = NULL;
    struct ares_caa_reply *caa = NULL;
    struct ares_uri_reply *uri = NULL;
    unsigned char ip[16];
    char *name = NULL;
    long enclen = 0, before = cares_live(), held;
    (void)ares_parse_a_reply(msg, len, &a, NULL, NULL);
    (void)ares_parse_aaaa_reply(msg, len, &aaaa, NULL, NULL);
    (void)ares_parse_ns_reply(msg, len, &ns);
    memset(ip, 0, sizeof ip);
    (void)ares_parse_ptr_reply(msg, len, ip, 4, 2 /* AF_INET */, &ptr);
    (void)ares_parse_srv_reply(msg, len, &srv);
    (void)ares_parse_mx_reply(msg, len, &mx);
    (void)ares_parse_txt_reply(msg, len, &txt);
    (void)ares_parse_txt_reply_ext(msg, len, &txt_ext);
    (void)ares_parse_naptr_reply(msg, len, &naptr);
    (void)ares_parse_soa_reply(msg, len, &soa);
    (void)ares_parse_caa_reply(msg, len, &caa);
    (void)ares_parse_uri_reply(msg, len, &uri);
    if (len > 12)
        (void)ares_expand_name(msg + 12, msg, len, &name, &enclen);
    held = cares_live() - before;
    if (a) ares_free_hostent(a);
    if (aaaa) ares_free_hostent(aaaa);
    if (ns) ares_free_hostent(ns);
    if (ptr) ares_free_hostent(ptr);
    ares_free_data(srv);
    ares_free_data(mx);
    ares_free_data(txt);
    ares_free_data(txt_ext);
    ares_free_data(naptr);
    ares_free_data(soa);
    ares_free_data(caa);
    ares_free_data(uri);
    if (name) ares_free_string(name);
    return held;
}

int main(int argc, char **argv)
{
    dns_shim_allocator allocator;
    unsigned char *msg = NULL;
    long len = 0;
    int i, failed = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: ares_allocators FILE...\n");
        return 2;
    }
    memset(&allocator, 0, sizeof allocator);
    allocator.struct_size = sizeof allocator;
    allocator.malloc = shim_malloc;
    allocator.calloc = shim_calloc;
    allocator.realloc = shim_realloc;
    allocator.free = shim_free;
    if (dns_shim_set_allocator(&allocator) != DNS_SHIM_OK) {
        puts("FAIL dns_shim_set_allocator");
        return 1;
    }
    if (ares_library_init_mem(ARES_LIB_INIT_ALL, cares_malloc, cares_free, cares_realloc) !=
        ARES_SUCCESS) {
        puts("FAIL ares_library_init_mem");
        return 1;
    }
    for (i = 1; i < argc; i++) {
        long before, held;
        free(msg);
        msg = read_message(argv[i], 0, &len);
        if (msg == NULL || len <= 0 || len > 65535) {
            printf("FAIL cannot read %s\n", argv[i]);
            return 1;
        }
        before = cares_live();
        /* from the second file: the first starts the runtime */
        __atomic_store_n(&watching, i > 1, __ATOMIC_RELAXED);
        held = parse_all(msg, (int)len);
        __atomic_store_n(&watching, 0, __ATOMIC_RELAXED);
        printf("%s: held %ld%s\n", argv[i], held, cares_live() == before ? " back" : " NOT BACK");
        if (cares_live() != before)
            failed = 1;
    }
    ares_library_cleanup();
    {
        long before = cares_live(), held = parse_all(msg, (int)len);
        printf("after cleanup held %ld\n", held);
        if (held != 0 || cares_live() != before)
            failed = 1;
    }
    free(msg);
    printf("cares foreign %ld\n", cares.foreign);
    printf("dnsshim foreign %ld\n", shim.foreign);
    printf("dnsshim blocks %s\n", shim.total > 0 ? "some" : "none");
    printf("cares live %ld\n", cares.live);
    printf("cffi around %ld\n", cffi_around);
    return failed || cares.foreign || shim.foreign || cares.live ? 1 : 0;
}
