/*
** ares_plugin_reload.c: a plugin unloaded, and another loaded where it was.
**
** Built twice.  With -DARES_PLUGIN, as a plugin (a shared object linked
** against one c-ares 1.34 copy): plugin_run gives its c-ares counting
** allocators (ares_library_init_mem, through that c-ares's own handle: the
** program's ares_library_init_mem would be libdnsshim_ares's), calls
** ares_dns_parse on a message and ares_dns_record_destroy on the record,
** then gives that c-ares malloc, free and realloc back (ares_library_cleanup
** would not: c-ares's ares_library_init_mem counts the initialization
** through ares_library_init, which the preloaded libdnsshim_ares answers, so
** the copy's own count stays 0; left in place, its allocators would be
** addresses in the unloaded plugin, which B's code then occupies), and says how many
** blocks its allocator made during the parse, how many are still live after
** the destroy, and how many blocks its c-ares freed that its allocator did
** not make (a record built by another c-ares).  Without it, as the host:
**
**     ares_plugin_reload PLUGIN_A PLUGIN_B
**
** dlopens A (RTLD_LOCAL), runs it, dlcloses it (and checks that it is gone),
** dlopens B, checks that B landed at A's old load address, runs it.  Run it
** with LD_PRELOAD=libdnsshim_ares.so.1 so that the plugins' ares_dns_parse
** is libdnsshim_ares's.  stdout, for each plugin X (A, then B):
**
**     X c-ares PATH                 the c-ares X's ares_dns_record_destroy is in
**     X parser PATH                 the object X's ares_dns_parse is in
**     X status S made N live L foreign F answers C
**     A unloaded                    (after A's lines)
**     B at A's address              (before B's lines)
**
** Exit 0; 4: B did not land at A's address (nothing proven: the line says
** "B not at A's address"); 5: A was not unloaded; 1: anything else.  The
** addresses go to stderr.
*/
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ARES_PLUGIN

#include <ares.h>

#define MAGIC 0x646e7373686d6b31ULL

/* 16 octets ahead of each block: malloc's alignment kept. */
struct head {
    unsigned long long magic;
    unsigned long long pad;
};

static unsigned long made, freed, foreign;

static void *counting_malloc(size_t n)
{
    struct head *h = malloc(sizeof *h + n);
    if (h == NULL)
        return NULL;
    h->magic = MAGIC;
    __atomic_fetch_add(&made, 1, __ATOMIC_RELAXED);
    return h + 1;
}

static void counting_free(void *p)
{
    struct head *h;
    if (p == NULL)
        return;
    h = (struct head *)p - 1;
    if (h->magic != MAGIC) {
        /* Not this allocator's: another c-ares's record, from malloc. */
        __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
        free(p);
        return;
    }
    h->magic = 0;
    __atomic_fetch_add(&freed, 1, __ATOMIC_RELAXED);
    free(h);
}

static void *counting_realloc(void *p, size_t n)
{
    struct head *h, *g;
    if (p == NULL)
        return counting_malloc(n);
    h = (struct head *)p - 1;
    if (h->magic != MAGIC) {
        __atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED);
        return realloc(p, n);
    }
    g = realloc(h, sizeof *g + n);
    return g != NULL ? g + 1 : NULL;
}

/* out: made during the parse, live after the destroy, foreign frees,
** answers; cares, parser: the objects named above.  Returns the parse's
** status, or -1 when the plugin cannot find its c-ares. */
int plugin_run(const unsigned char *msg, size_t len, unsigned long out[4], char *cares,
               char *parser, size_t size);

int plugin_run(const unsigned char *msg, size_t len, unsigned long out[4], char *cares,
               char *parser, size_t size)
{
    int (*init_mem)(int, void *(*)(size_t), void (*)(void *), void *(*)(void *, size_t));
    ares_dns_record_t *rec = NULL;
    Dl_info info;
    void *own;
    unsigned long before;
    int status;

    if (dladdr((void *)ares_dns_record_destroy, &info) == 0 || info.dli_fname == NULL)
        return -1;
    snprintf(cares, size, "%s", info.dli_fname);
    own = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (own == NULL)
        return -1;
    *(void **)&init_mem = dlsym(own, "ares_library_init_mem");
    if (init_mem == NULL ||
        dladdr((void *)ares_dns_parse, &info) == 0 || info.dli_fname == NULL) {
        dlclose(own);
        return -1;
    }
    snprintf(parser, size, "%s", info.dli_fname);
    if (init_mem(ARES_LIB_INIT_ALL, counting_malloc, counting_free, counting_realloc) !=
        ARES_SUCCESS) {
        dlclose(own);
        return -1;
    }
    before = made;
    status = (int)ares_dns_parse(msg, len, 0, &rec);
    out[0] = made - before;
    out[3] = rec != NULL ? (unsigned long)ares_dns_record_rr_cnt(rec, ARES_SECTION_ANSWER) : 0;
    ares_dns_record_destroy(rec);
    out[1] = made - freed;
    out[2] = foreign;
    init_mem(ARES_LIB_INIT_ALL, malloc, free, realloc);
    dlclose(own);
    return status;
}

#else /* the host */

typedef int (*run_fn)(const unsigned char *, size_t, unsigned long[4], char *, char *, size_t);

/* A response: www.example.org A 192.0.2.1. */
static const unsigned char msg[] = {
    0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
    3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'o', 'r', 'g', 0, 0, 1, 0, 1,
    0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1};

int main(int argc, char **argv)
{
    const void *base[2] = {NULL, NULL};
    int i;

    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGIN_A PLUGIN_B\n", argv[0]);
        return 1;
    }
    for (i = 0; i < 2; i++) {
        const char name = i == 0 ? 'A' : 'B';
        unsigned long out[4] = {0, 0, 0, 0};
        char cares[4096], parser[4096];
        void *h = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL);
        run_fn run;
        Dl_info info;
        int status;

        if (h == NULL) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        *(void **)&run = dlsym(h, "plugin_run");
        if (run == NULL || dladdr(*(void **)&run, &info) == 0) {
            fprintf(stderr, "%c: no plugin_run\n", name);
            return 1;
        }
        base[i] = info.dli_fbase;
        fprintf(stderr, "%c loaded at %p\n", name, info.dli_fbase);
        if (i == 1) {
            printf("B %s A's address\n", base[1] == base[0] ? "at" : "not at");
            if (base[1] != base[0])
                return 4;
        }
        status = run(msg, sizeof msg, out, cares, parser, sizeof cares);
        if (status == -1) {
            fprintf(stderr, "%c: its c-ares not found\n", name);
            return 1;
        }
        printf("%c c-ares %s\n%c parser %s\n", name, cares, name, parser);
        printf("%c status %d made %lu live %lu foreign %lu answers %lu\n", name, status, out[0],
               out[1], out[2], out[3]);
        fflush(stdout);
        dlclose(h);
        if (i == 0) {
            h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
            if (h != NULL) {
                printf("A still loaded\n");
                return 5;
            }
            printf("A unloaded\n");
        }
    }
    return 0;
}

#endif
