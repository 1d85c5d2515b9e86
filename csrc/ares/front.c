/*
** front.c: libdnsshim_ares.so's front, the shared object a program links
** or preloads, which carries no Python.
**
** The shared library is two objects, as libdnsshim is (csrc/lib/front.c).
** The front, libdnsshim_ares.so.1, is c-ares's API: the parsers
** (parsers.c, dnsrec.c), the structures they build (structures.c), the
** free functions (free.c), the allocator the program gave c-ares
** (memory.c), the pointers handed out (owned.c), the checks (check.c) and
** the parse service's client (service.c), and this unit.  It links libc
** and libdnsshim's front alone.  The runtime,
** libdnsshim_ares_runtime.so.1 (DNSSHIM_ARES__RUNTIME_FILE), in the
** install form's worker folder beside libdnsshim's runtime, is the whole
** library as one object: its cffi module, the bridge (dnsshim_ares.c) and
** every unit, on libdnsshim's interpreter.  It exports one name, the table
** of the bridge's four calls (runtime_entries.c, linked into it alone;
** libdnsshim_ares_runtime.map).
**
** A parse the service answers never loads the runtime: the process maps
** no libpython, starts no interpreter and makes no thread.  The first call
** that must compute in the process (no service, or an answer the client
** would not take; service.c) loads it (dlopen, RTLD_LOCAL, by its path
** below the front's own) and from then on every such call goes to the
** runtime's own dnsshim_ares__compute, dnsshim_ares__message and their
** releases.  The runtime copies nothing into c-ares's structures: the
** front does, with the program's allocator, as for the service's answers.
** A runtime that cannot be loaded is said once on stderr (the library's
** log, check.c), with the path tried and the fix, and every such call then
** returns ARES_ENOTINITIALIZED, as a runtime that cannot start does.
**
** Locks: the loader's lock below, held only while the runtime is loaded
** (no call of this project's runs under it), and across a fork, so that
** no child finds it held by a thread it does not have.  The runtime's
** locks are libdnsshim's (its start lock, the pool's), taken in its calls.
**
** The static archive is one object and has no front: the units call the
** bridge's functions themselves.
*/
#define _GNU_SOURCE 1
#include "ares/dnsshim_ares_internal.h"
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The runtime's four calls (its table, copied once loaded). */
static dnsshim_ares__entries dnsshim_ares__rt;
static int dnsshim_ares__rt_state = 0; /* 0 not tried, 1 loaded, -1 cannot be */
static pthread_mutex_t dnsshim_ares__load_lock = PTHREAD_MUTEX_INITIALIZER;

static void dnsshim_ares__front_prepare(void)
{
    pthread_mutex_lock(&dnsshim_ares__load_lock);
}

static void dnsshim_ares__front_after(void)
{
    pthread_mutex_unlock(&dnsshim_ares__load_lock);
}

/* Registered when the front is loaded, before any thread can take the
** loader's lock: a fork never finds it held with no handler to wait. */
__attribute__((constructor)) static void dnsshim_ares__front_register(void)
{
    pthread_atfork(dnsshim_ares__front_prepare, dnsshim_ares__front_after,
                   dnsshim_ares__front_after);
}

/* Where the front is (a function of its own, hidden: no program's symbol
** can stand in for it), and the runtime below it in the form's worker
** folder (DNS_SHIM_WORKER_DIR: beside it where that is ""). */
static int dnsshim_ares__runtime_path(char *out, size_t size)
{
    Dl_info info;
    const char *slash;
    if (dladdr((void *)&dnsshim_ares__runtime_path, &info) == 0 || info.dli_fname == NULL ||
        (slash = strrchr(info.dli_fname, '/')) == NULL)
        return -1;
    return snprintf(out, size, "%.*s/%s%s%s", (int)(slash - info.dli_fname), info.dli_fname,
                    DNS_SHIM_WORKER_DIR, DNS_SHIM_WORKER_DIR[0] ? "/" : "",
                    DNSSHIM_ARES__RUNTIME_FILE) >= (int)size ? -1 : 0;
}

/* The runtime, loaded once (a thread that finds it loading waits); NULL
** when it cannot be, said once. */
static const dnsshim_ares__entries *dnsshim_ares__runtime_get(void)
{
    const dnsshim_ares__entries *table;
    char path[PATH_MAX], line[PATH_MAX + 512];
    void *handle;
    int state = __atomic_load_n(&dnsshim_ares__rt_state, __ATOMIC_ACQUIRE);

    if (state != 0)
        return state == 1 ? &dnsshim_ares__rt : NULL;
    pthread_mutex_lock(&dnsshim_ares__load_lock);
    if (dnsshim_ares__rt_state != 0) {
        state = dnsshim_ares__rt_state;
        pthread_mutex_unlock(&dnsshim_ares__load_lock);
        return state == 1 ? &dnsshim_ares__rt : NULL;
    }
    line[0] = '\0';
    if (dnsshim_ares__runtime_path(path, sizeof path) != 0) {
        snprintf(line, sizeof line, "cannot compute in this process: the runtime's path is "
                 "unknown (the library's own is) or longer than PATH_MAX; every parse the "
                 "service does not answer returns ARES_ENOTINITIALIZED");
    } else if ((handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        snprintf(line, sizeof line, "cannot load the c-ares layer's runtime: %s; every parse "
                 "the service does not answer returns ARES_ENOTINITIALIZED; reinstall the "
                 "library (its runtime is installed with it)", dlerror());
    } else if ((table = dlsym(handle, DNSSHIM_ARES__RUNTIME_ENTRIES)) == NULL ||
               table->size != sizeof *table || table->compute == NULL || table->done == NULL ||
               table->message == NULL || table->message_done == NULL) {
        snprintf(line, sizeof line, "cannot use the c-ares layer's runtime %s: it has no "
                 "table of this release's calls (another version's?); every parse the service "
                 "does not answer returns ARES_ENOTINITIALIZED; reinstall the library", path);
    } else {
        dnsshim_ares__rt = *table;
    }
    __atomic_store_n(&dnsshim_ares__rt_state, line[0] == '\0' ? 1 : -1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dnsshim_ares__load_lock);
    if (line[0] != '\0') {
        dnsshim_ares__log(line);
        return NULL;
    }
    return &dnsshim_ares__rt;
}

/* The bridge's four calls (dnsshim_ares_internal.h), the runtime's. */

int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                          dnsshim_ares_result *r, uint64_t *token)
{
    const dnsshim_ares__entries *rt = dnsshim_ares__runtime_get();

    if (rt != NULL)
        return rt->compute(kind, buf, len, offset, flags, r, token);
    memset(r, 0, sizeof *r);
    *token = 0;
    return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
}

void dnsshim_ares__done(uint64_t token)
{
    /* Only a token the runtime gave: it is loaded. */
    if (token != 0 && __atomic_load_n(&dnsshim_ares__rt_state, __ATOMIC_ACQUIRE) == 1)
        dnsshim_ares__rt.done(token);
}

int dnsshim_ares__message(const unsigned char *buf, int len, unsigned int flags,
                          dnsshim_ares_message *m, uint64_t *token)
{
    const dnsshim_ares__entries *rt = dnsshim_ares__runtime_get();

    if (rt != NULL)
        return rt->message(buf, len, flags, m, token);
    memset(m, 0, sizeof *m);
    *token = 0;
    return DNSSHIM_ARES_ENOTINITIALIZED;
}

void dnsshim_ares__message_done(uint64_t token)
{
    if (token != 0 && __atomic_load_n(&dnsshim_ares__rt_state, __ATOMIC_ACQUIRE) == 1)
        dnsshim_ares__rt.message_done(token);
}
