/*
** ares_plugin_parsers.c: c-ares's classic parsers and free functions called
** by a plugin that a host loads RTLD_LOCAL, as CPython loads pycares's
** extension: the plugin's c-ares (1.34) is then in no global scope, only in
** the plugin's own dependencies.
**
** Built twice.  With -DARES_PLUGIN, as the plugin (a shared object linked
** against c-ares 1.34): plugin_begin gives its c-ares counting allocators
** (ares_library_init_mem through that c-ares's own handle: the program's
** ares_library_init_mem would be a preloaded libdnsshim_ares's);
** plugin_run reads a stream of messages (each a kind octet, P, A or S, a
** 2-octet length, the message) and calls, on each, ares_parse_ptr_reply,
** ares_parse_a_reply or ares_parse_srv_reply, printing what it gives, then
** ares_free_hostent or ares_free_data on it; then ares_strerror of every
** code up to 27; plugin_end gives that c-ares malloc, free and realloc
** back and says how many of its allocator's blocks are still live and how
** many blocks it was asked to free that it did not make.  Without it, as
** the host:
**
**     ares_plugin_parsers [--threads N] PLUGIN STREAM
**
** dlopens PLUGIN (RTLD_NOW | RTLD_LOCAL) and runs it on STREAM, once, or
** from N threads at once (each into its own buffer: the host checks that
** all are the same and prints the first).  Run it plainly and with
** LD_PRELOAD=libdnsshim_ares.so.1: the plugin's calls then reach
** libdnsshim_ares's functions first.  stdout:
**
**     parser PATH                    the object the plugin's ares_parse_ptr_reply is in
**     c-ares VERSION
**     ptr STATUS [NAME ALIASES... | ADDRESSES...]   one line per message, fields
**     a STATUS [...] | TTLS...                      tab-separated
**     srv STATUS [PRIORITY WEIGHT PORT HOST]...
**     strerror CODE TEXT             codes 0 to 27
**     threads N same                 (with --threads)
**     live L foreign F               the plugin's c-ares's blocks after everything
**
** Exit 0; 1: anything else (on stderr).
*/
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ARES_PLUGIN

#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#define MAGIC 0x646e7373686d6b32ULL

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
        /* Not this allocator's: a block of malloc's (libdnsshim_ares's own). */
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

typedef int (*init_mem_fn)(int, void *(*)(size_t), void (*)(void *), void *(*)(void *, size_t));

/* This plugin's own c-ares's ares_library_init_mem (ares_version: a
** function libdnsshim_ares does not define, so the plugin's reference is
** its c-ares's). */
static init_mem_fn own_init_mem(void **handle)
{
    init_mem_fn f = NULL;
    Dl_info info;
    if (dladdr((void *)ares_version, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (*handle == NULL)
        return NULL;
    *(void **)&f = dlsym(*handle, "ares_library_init_mem");
    return f;
}

int plugin_begin(FILE *out);
int plugin_run(const char *path, FILE *out);
int plugin_end(FILE *out);

int plugin_begin(FILE *out)
{
    void *handle = NULL;
    init_mem_fn init_mem = own_init_mem(&handle);
    Dl_info info;
    int ok = init_mem != NULL &&
             init_mem(ARES_LIB_INIT_ALL, counting_malloc, counting_free, counting_realloc) ==
                 ARES_SUCCESS &&
             dladdr((void *)ares_parse_ptr_reply, &info) != 0 && info.dli_fname != NULL;
    if (handle != NULL)
        dlclose(handle);
    if (!ok)
        return -1;
    fprintf(out, "parser %s\nc-ares %s\n", info.dli_fname, ares_version(NULL));
    return 0;
}

int plugin_end(FILE *out)
{
    void *handle = NULL;
    init_mem_fn init_mem = own_init_mem(&handle);
    if (init_mem == NULL || init_mem(ARES_LIB_INIT_ALL, malloc, free, realloc) != ARES_SUCCESS)
        return -1;
    dlclose(handle);
    fprintf(out, "live %lu foreign %lu\n", made - freed, foreign);
    return 0;
}

static void print_hostent(FILE *out, const struct hostent *h)
{
    char text[64];
    int i;
    fprintf(out, "\t%s", h->h_name);
    for (i = 0; h->h_aliases[i] != NULL; i++)
        fprintf(out, "\t%s", h->h_aliases[i]);
    fprintf(out, "\t|");
    for (i = 0; h->h_addr_list[i] != NULL; i++)
        fprintf(out, "\t%s",
                inet_ntop(h->h_addrtype, h->h_addr_list[i], text, sizeof text) != NULL
                    ? text : "?");
}

int plugin_run(const char *path, FILE *out)
{
    static const unsigned char addr[4] = {192, 0, 2, 1};
    unsigned char head[3], *buf = malloc(65536);
    FILE *f = fopen(path, "rb");
    int code, i;

    if (f == NULL || buf == NULL) {
        if (f != NULL)
            fclose(f);
        free(buf);
        return -1;
    }
    while (fread(head, 1, 3, f) == 3) {
        int n = (head[1] << 8) | head[2], st;
        struct hostent *h = NULL;
        if (fread(buf, 1, (size_t)n, f) != (size_t)n)
            break;
        switch (head[0]) {
        case 'P':
            st = ares_parse_ptr_reply(buf, n, addr, 4, AF_INET, &h);
            fprintf(out, "ptr %d", st);
            if (h != NULL)
                print_hostent(out, h);
            ares_free_hostent(h);
            break;
        case 'A': {
            struct ares_addrttl ttls[4];
            int nttls = 4;
            st = ares_parse_a_reply(buf, n, &h, ttls, &nttls);
            fprintf(out, "a %d", st);
            if (h != NULL)
                print_hostent(out, h);
            ares_free_hostent(h);
            fprintf(out, "\t|");
            for (i = 0; i < nttls; i++) {
                char text[16];
                fprintf(out, "\t%s %d", inet_ntop(AF_INET, &ttls[i].ipaddr, text, sizeof text),
                        ttls[i].ttl);
            }
            break;
        }
        case 'S': {
            struct ares_srv_reply *srv = NULL, *s;
            st = ares_parse_srv_reply(buf, n, &srv);
            fprintf(out, "srv %d", st);
            for (s = srv; s != NULL; s = s->next)
                fprintf(out, "\t%u %u %u %s", s->priority, s->weight, s->port, s->host);
            ares_free_data(srv);
            break;
        }
        default:
            fclose(f);
            free(buf);
            return -1;
        }
        fprintf(out, "\n");
    }
    code = ferror(f) || !feof(f) ? -1 : 0;
    fclose(f);
    free(buf);
    for (i = 0; code == 0 && i <= 27; i++)
        fprintf(out, "strerror %d %s\n", i, ares_strerror(i));
    return code;
}

#else /* the host */

#include <pthread.h>

#define MAX_THREADS 16

typedef int (*run_fn)(const char *, FILE *);
typedef int (*end_fn)(FILE *);

struct work {
    run_fn run;
    const char *path;
    char *text;
    size_t len;
    int status;
};

static void *work(void *arg)
{
    struct work *w = arg;
    FILE *out = open_memstream(&w->text, &w->len);
    if (out == NULL) {
        w->status = -1;
        return NULL;
    }
    w->status = w->run(w->path, out);
    if (fclose(out) != 0)
        w->status = -1;
    return NULL;
}

int main(int argc, char **argv)
{
    struct work w[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    run_fn run;
    end_fn begin, end;
    void *h;
    int threads = 1, i;

    if (argc == 5 && strcmp(argv[1], "--threads") == 0) {
        threads = atoi(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc != 3 || threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "usage: %s [--threads N] PLUGIN STREAM\n", argv[0]);
        return 1;
    }
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    *(void **)&begin = dlsym(h, "plugin_begin");
    *(void **)&run = dlsym(h, "plugin_run");
    *(void **)&end = dlsym(h, "plugin_end");
    if (begin == NULL || run == NULL || end == NULL || begin(stdout) != 0) {
        fprintf(stderr, "the plugin cannot begin\n");
        return 1;
    }
    for (i = 0; i < threads; i++) {
        w[i] = (struct work){run, argv[2], NULL, 0, 0};
        if (pthread_create(&tids[i], NULL, work, &w[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    }
    for (i = 0; i < threads; i++)
        pthread_join(tids[i], NULL);
    for (i = 0; i < threads; i++) {
        if (w[i].status != 0 || w[i].text == NULL) {
            fprintf(stderr, "thread %d: the plugin's run failed\n", i);
            return 1;
        }
        if (w[i].len != w[0].len || memcmp(w[i].text, w[0].text, w[0].len) != 0) {
            fprintf(stderr, "thread %d's output is not thread 0's\n", i);
            return 1;
        }
    }
    fwrite(w[0].text, 1, w[0].len, stdout);
    if (threads > 1)
        printf("threads %d same\n", threads);
    for (i = 0; i < threads; i++)
        free(w[i].text);
    fflush(stdout);
    if (end(stdout) != 0) {
        fprintf(stderr, "the plugin cannot end\n");
        return 1;
    }
    /* The plugin stays loaded: what it printed is all. */
    return 0;
}

#endif
