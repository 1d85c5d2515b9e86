/*
** memory.c: the allocator the program gave c-ares.
**
** What this library allocates for the caller (hostents, the strings of
** ares_expand_name and ares_expand_string, ares_free_data's structures and
** what they point to) comes from the functions the program gave
** ares_library_init_mem, and goes back to them in ares_free_hostent,
** ares_free_string and ares_free_data, as c-ares's own allocations do; with
** none given, from malloc and back to free.
**
** ares_library_init_mem, ares_library_init and ares_library_cleanup are
** therefore this library's too: each records what it must and passes the
** call on to the real c-ares when the program links it (RTLD_NEXT), so
** that c-ares's own allocations use the same functions.  As in c-ares,
** cleanup puts malloc and free back once the library is no longer
** initialized (c-ares's ares_library_initialized says so; with no c-ares,
** a count of init and cleanup calls).  As in c-ares, the functions are set
** before anything is allocated: a block allocated before a change goes
** back to the functions in place when it is freed.
**
** The table of owned.c is this library's own bookkeeping, never handed out:
** it stays on malloc.
*/
#include "ares/dnsshim_ares_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void *(*dnsshim_ares__malloc_fn)(size_t);
typedef void (*dnsshim_ares__free_fn)(void *);
typedef void *(*dnsshim_ares__realloc_fn)(void *, size_t);

/* NULL: the C library's.  Set under the lock, read atomically. */
static dnsshim_ares__malloc_fn dnsshim_ares__amalloc = NULL;
static dnsshim_ares__free_fn dnsshim_ares__afree = NULL;
static pthread_mutex_t dnsshim_ares__mem_lock = PTHREAD_MUTEX_INITIALIZER;
/* Initializations not yet cleaned up, when no c-ares answers for itself. */
static unsigned long dnsshim_ares__inits = 0;

void dnsshim_ares__mem_fork(int phase)
{
    dnsshim_ares__fork_mutex(&dnsshim_ares__mem_lock, phase);
}

/* The allocation itself, for both entry points (neither calls the other:
** the analyser follows each as an allocator of its own). */
static void *dnsshim_ares__allocate(size_t size)
{
    dnsshim_ares__malloc_fn f = __atomic_load_n(&dnsshim_ares__amalloc, __ATOMIC_ACQUIRE);
    if (size == 0)
        size = 1; /* never the NULL a zero size may give: that reads as out of memory */
    return f != NULL ? f(size) : malloc(size);
}

void *dnsshim_ares__malloc(size_t size)
{
    return dnsshim_ares__allocate(size);
}

void *dnsshim_ares__calloc(size_t count, size_t size)
{
    unsigned char *p;
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    p = dnsshim_ares__allocate(count * size);
    if (p != NULL)
        memset(p, 0, count * size);
    return p;
}

void dnsshim_ares__free(void *p)
{
    dnsshim_ares__free_fn f = __atomic_load_n(&dnsshim_ares__afree, __ATOMIC_ACQUIRE);
    if (p == NULL)
        return;
    if (f != NULL)
        f(p);
    else
        free(p);
}

static void dnsshim_ares__set(dnsshim_ares__malloc_fn amalloc, dnsshim_ares__free_fn afree)
{
    __atomic_store_n(&dnsshim_ares__amalloc, amalloc, __ATOMIC_RELEASE);
    __atomic_store_n(&dnsshim_ares__afree, afree, __ATOMIC_RELEASE);
}

DNSSHIM_ARES_API int ares_library_init(int flags)
{
    int (*next)(int);
    int rc = DNSSHIM_ARES_SUCCESS;
    *(void **)&next = dnsshim_ares__next("ares_library_init");
    if (next != NULL)
        rc = next(flags);
    if (rc == DNSSHIM_ARES_SUCCESS) {
        dnsshim_ares__lock(&dnsshim_ares__mem_lock);
        dnsshim_ares__inits++;
        pthread_mutex_unlock(&dnsshim_ares__mem_lock);
    }
    return rc;
}

DNSSHIM_ARES_API int ares_library_init_mem(int flags, void *(*amalloc)(size_t),
                                           void (*afree)(void *),
                                           void *(*arealloc)(void *, size_t))
{
    int (*next)(int, void *(*)(size_t), void (*)(void *), void *(*)(void *, size_t));
    int rc = DNSSHIM_ARES_SUCCESS;
    *(void **)&next = dnsshim_ares__next("ares_library_init_mem");
    if (next != NULL)
        rc = next(flags, amalloc, afree, arealloc);
    if (rc != DNSSHIM_ARES_SUCCESS)
        return rc;
    dnsshim_ares__lock(&dnsshim_ares__mem_lock);
    /* c-ares takes each function given and keeps the others: so does this */
    dnsshim_ares__set(amalloc != NULL ? amalloc : dnsshim_ares__amalloc,
                      afree != NULL ? afree : dnsshim_ares__afree);
    if (next == NULL)
        dnsshim_ares__inits++;
    pthread_mutex_unlock(&dnsshim_ares__mem_lock);
    return rc;
}

DNSSHIM_ARES_API void ares_library_cleanup(void)
{
    void (*next)(void);
    int (*initialized)(void);
    int still;
    *(void **)&next = dnsshim_ares__next("ares_library_cleanup");
    *(void **)&initialized = dnsshim_ares__next("ares_library_initialized");
    if (next != NULL)
        next();
    dnsshim_ares__lock(&dnsshim_ares__mem_lock);
    if (dnsshim_ares__inits > 0)
        dnsshim_ares__inits--;
    if (next != NULL && initialized != NULL)
        still = initialized() == DNSSHIM_ARES_SUCCESS;
    else
        still = dnsshim_ares__inits > 0;
    if (!still)
        dnsshim_ares__set(NULL, NULL);
    pthread_mutex_unlock(&dnsshim_ares__mem_lock);
}
