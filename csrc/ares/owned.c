/*
** owned.c: the pointers libdnsshim_ares handed out that carry no mark.
**
** Hostents and strings (ares_expand_name, ares_expand_string) have no room
** for a mark: the pointers handed out are kept in a set, and the free
** functions (free.c) look them up, so that a pointer of the real c-ares's,
** in a program that links both, goes to c-ares's own free function.  Safe
** from any thread.
*/
#include "ares/dnsshim_ares_internal.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static pthread_mutex_t dnsshim_ares__owned_lock = PTHREAD_MUTEX_INITIALIZER;
static void **dnsshim_ares__owned = NULL; /* open addressing; NULL empty, TOMB deleted */
/* used: slots not empty (live pointers and tombstones); live: pointers held */
static size_t dnsshim_ares__owned_cap = 0, dnsshim_ares__owned_used = 0;
static size_t dnsshim_ares__owned_live = 0;
static char dnsshim_ares__tomb_;
#define DNSSHIM_ARES__TOMB ((void *)&dnsshim_ares__tomb_)

/* The fork handler (dnsshim_ares_internal.h): the locks in their order,
** given back in the reverse. */
static void dnsshim_ares__fork_prepare(void)
{
    dnsshim_ares__libs_fork(DNSSHIM_ARES__FORK_PREPARE);
    dnsshim_ares__mem_fork(DNSSHIM_ARES__FORK_PREPARE);
    dnsshim_ares__fork_mutex(&dnsshim_ares__owned_lock, DNSSHIM_ARES__FORK_PREPARE);
}

static void dnsshim_ares__fork_after(void)
{
    dnsshim_ares__fork_mutex(&dnsshim_ares__owned_lock, DNSSHIM_ARES__FORK_AFTER);
    dnsshim_ares__mem_fork(DNSSHIM_ARES__FORK_AFTER);
    dnsshim_ares__libs_fork(DNSSHIM_ARES__FORK_AFTER);
}

static void dnsshim_ares__fork_register(void)
{
    pthread_atfork(dnsshim_ares__fork_prepare, dnsshim_ares__fork_after,
                   dnsshim_ares__fork_after);
}

void dnsshim_ares__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, dnsshim_ares__fork_register);
}

static size_t dnsshim_ares__slot(const void *p, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

/* Rehashes into a table sized for the live pointers alone (at most a
** quarter full), dropping the tombstones: a long-running program that
** allocates and frees forever keeps a table the size of what it holds,
** not of what it ever held.  Called with the lock held. */
static int dnsshim_ares__owned_grow(void)
{
    size_t cap = 64, i, used = 0;
    void **table;
    while (cap < (dnsshim_ares__owned_live + 1) * 4)
        cap *= 2;
    table = calloc(cap, sizeof *table);
    if (table == NULL)
        return -1;
    for (i = 0; i < dnsshim_ares__owned_cap; i++) {
        void *p = dnsshim_ares__owned[i];
        if (p != NULL && p != DNSSHIM_ARES__TOMB) {
            size_t j = dnsshim_ares__slot(p, cap);
            while (table[j] != NULL)
                j = (j + 1) & (cap - 1);
            table[j] = p;
            used++;
        }
    }
    free(dnsshim_ares__owned);
    dnsshim_ares__owned = table;
    dnsshim_ares__owned_cap = cap;
    dnsshim_ares__owned_used = used;
    return 0;
}

int dnsshim_ares__own(void *p)
{
    size_t j;
    int rc = 0;
    dnsshim_ares__lock(&dnsshim_ares__owned_lock);
    if ((dnsshim_ares__owned_used + 1) * 2 > dnsshim_ares__owned_cap &&
        dnsshim_ares__owned_grow() != 0) {
        rc = -1;
    } else {
        j = dnsshim_ares__slot(p, dnsshim_ares__owned_cap);
        while (dnsshim_ares__owned[j] != NULL && dnsshim_ares__owned[j] != DNSSHIM_ARES__TOMB)
            j = (j + 1) & (dnsshim_ares__owned_cap - 1);
        if (dnsshim_ares__owned[j] == NULL)
            dnsshim_ares__owned_used++;
        dnsshim_ares__owned[j] = p;
        dnsshim_ares__owned_live++;
    }
    pthread_mutex_unlock(&dnsshim_ares__owned_lock);
    return rc;
}

int dnsshim_ares__disown(const void *p)
{
    size_t j;
    int found = 0;
    dnsshim_ares__lock(&dnsshim_ares__owned_lock);
    if (dnsshim_ares__owned_cap != 0) {
        j = dnsshim_ares__slot(p, dnsshim_ares__owned_cap);
        while (dnsshim_ares__owned[j] != NULL) {
            if (dnsshim_ares__owned[j] == p) {
                dnsshim_ares__owned[j] = DNSSHIM_ARES__TOMB;
                dnsshim_ares__owned_live--;
                found = 1;
                break;
            }
            j = (j + 1) & (dnsshim_ares__owned_cap - 1);
        }
    }
    pthread_mutex_unlock(&dnsshim_ares__owned_lock);
    return found;
}
