/*
** front.c: libdnsshim.so's front, the shared object a program links
** (-ldnsshim), which carries no Python.
**
** The shared library is two objects.  The front, libdnsshim.so.1, is the
** API: the argument checks and the registered callbacks (api.c), the plan's
** check and calls (dispatch.c), the failure detail, the log handler and the
** environment (failure.c), the parse service's client (service.c), and
** this unit.  It links libc alone.  The runtime, libdnsshim_runtime.so.1
** beside it, is the whole library as one object (its cffi module, CPython,
** the pool: every unit), exporting the same API.  A call the service
** answers never loads the runtime: the process maps no libpython, starts
** no interpreter and makes no thread.  The first call that must parse in
** the process loads it (dlopen, RTLD_LOCAL, by its path beside the front),
** turns its own service client off (the front asked already), routes its
** diagnostics to the front's handler, gives it the settings the program
** made before (the allocator, the memory limit, the parallelism), and from
** then on forwards every such call.  The runtime's calls run the callbacks
** in the calling thread, as the front's do; the front takes the runtime's
** failure detail as its own after each.
**
** fork(): the front drives the runtime's fork handler from its own (the
** runtime registers none: dns_shim__runtime_fork(DNS_SHIM__FORK_DRIVEN),
** as the pool's front drives its instances), so that the locks are taken
** in the one order dns_shim_internal.h gives: the runtime's (its start
** lock, memory, pool, its callbacks, queue, log), then the front's
** registered callbacks and log handler.  The front's own two locks come
** first: the loader's, then the settings' (held while the runtime, being
** loaded, is given the settings made before: its locks come after).
**
** The static archive and the device forms are one object and have no
** front: the units call each other.
*/
#define _GNU_SOURCE 1
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef DNS_SHIM_PYTHON_TAG
#  error "build with -DDNS_SHIM_PYTHON_TAG=\"3.x\""
#endif

/* The runtime's file, beside the front. */
#define DNS_SHIM__RUNTIME DNS_SHIM__RUNTIME_FILE

#define DNS_SHIM_VERSION_TEXT_(a, b, c) #a "." #b "." #c
#define DNS_SHIM_VERSION_TEXT(a, b, c) DNS_SHIM_VERSION_TEXT_(a, b, c)

/* The runtime's functions the front calls. */
typedef struct dns_shim__runtime {
    int32_t (*process_dns_response)(uint8_t *, int32_t);
    int32_t (*process)(const uint8_t *, int32_t, const dns_shim_callbacks *);
    int32_t (*process_reply)(const uint8_t *, int32_t, const dns_shim_query *,
                             const dns_shim_callbacks *);
    int32_t (*init)(void);
    const char *(*last_error)(void);
    void (*set_log_handler)(dns_shim_log_handler, void *);
    int32_t (*set_allocator)(const dns_shim_allocator *);
    int32_t (*set_memory_limit)(size_t);
    int32_t (*set_parallelism)(uint32_t);
    void (*service_off)(void);
    void (*instance_fork)(int);
    int32_t (*pool_ares_take)(const dns_shim__pool_entries **);
    void (*pool_ares_give)(void);
    int32_t (*own_init)(void);
    int32_t (*own_start)(void (*)(void));
    void *(*py_init)(void);
} dns_shim__runtime;

static dns_shim__runtime dns_shim__rt;
static int dns_shim__rt_state = 0; /* 0 not tried, 1 loaded, -1 cannot be */
/* Held while the runtime is loaded, and across a fork (first): a child
** never finds it held by a thread it does not have. */
static pthread_mutex_t dns_shim__load_lock = PTHREAD_MUTEX_INITIALIZER;
static char dns_shim__rt_error[PATH_MAX + 512];

/* The settings made before the runtime was loaded, under the settings lock
** (a leaf: never held across a call). */
static pthread_mutex_t dns_shim__settings_lock = PTHREAD_MUTEX_INITIALIZER;
static dns_shim_allocator dns_shim__allocator;
static int dns_shim__allocator_chosen = 0;
static size_t dns_shim__limit_set = 0;
static uint32_t dns_shim__parallelism_set = 0;
static int dns_shim__parallelism_chosen = 0;

/* ------------------------------------------------------------------ */
/* fork()                                                               */

static const dns_shim__runtime *dns_shim__loaded(void)
{
    return __atomic_load_n(&dns_shim__rt_state, __ATOMIC_ACQUIRE) == 1 ? &dns_shim__rt : NULL;
}

static void dns_shim__front_prepare(void)
{
    const dns_shim__runtime *rt;
    pthread_mutex_lock(&dns_shim__load_lock);
    pthread_mutex_lock(&dns_shim__settings_lock);
    rt = dns_shim__loaded();
    if (rt != NULL)
        rt->instance_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__callbacks_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__log_fork(DNS_SHIM__FORK_PREPARE);
}

static void dns_shim__front_after(int phase)
{
    const dns_shim__runtime *rt = dns_shim__loaded();
    dns_shim__log_fork(phase);
    dns_shim__callbacks_fork(phase);
    if (rt != NULL)
        rt->instance_fork(phase);
    pthread_mutex_unlock(&dns_shim__settings_lock);
    pthread_mutex_unlock(&dns_shim__load_lock);
}

static void dns_shim__front_parent(void)
{
    dns_shim__front_after(DNS_SHIM__FORK_PARENT);
}

static void dns_shim__front_child(void)
{
    dns_shim__front_after(DNS_SHIM__FORK_CHILD);
}

static void dns_shim__fork_register(void)
{
    pthread_atfork(dns_shim__front_prepare, dns_shim__front_parent, dns_shim__front_child);
}

void dns_shim__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, dns_shim__fork_register);
}

/* ------------------------------------------------------------------ */
/* The runtime, loaded once                                             */

/* Where the front is: the runtime is in the form's worker folder below it
** (DNS_SHIM_WORKER_DIR: beside it where that is ""), with the worker image,
** a private folder of the library's. */
static int dns_shim__runtime_path(char *out, size_t size)
{
    Dl_info info;
    const char *slash;
    if (dladdr((void *)&dns_shim_version, &info) == 0 || info.dli_fname == NULL ||
        (slash = strrchr(info.dli_fname, '/')) == NULL)
        return -1;
    return snprintf(out, size, "%.*s/%s%s%s", (int)(slash - info.dli_fname), info.dli_fname,
                    DNS_SHIM_WORKER_DIR, DNS_SHIM_WORKER_DIR[0] ? "/" : "",
                    DNS_SHIM__RUNTIME) >= (int)size ? -1 : 0;
}

static void dns_shim__runtime_log(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    dns_shim__log_level(level, message);
}

#define DNS_SHIM__FIND(member, name)                                               \
    do {                                                                           \
        *(void **)&rt.member = dlsym(handle, name);                                \
        if (rt.member == NULL && missing == NULL)                                  \
            missing = name;                                                        \
    } while (0)

/* Loads the runtime (a thread that finds it loading waits, under the
** loader's own lock, in dlopen); the settings made before are given to it.
** NULL when it cannot be loaded, said once and in this thread's detail. */
static const dns_shim__runtime *dns_shim__runtime_get(void)
{
    const dns_shim__runtime *loaded = dns_shim__loaded();
    dns_shim__runtime rt;
    char path[PATH_MAX];
    const char *missing = NULL;
    void *handle;
    int say = 0;

    if (loaded != NULL)
        return loaded;
    /* Held while loading: a fork waits for the load to end. */
    dns_shim__lock(&dns_shim__load_lock);
    if (dns_shim__rt_state != 0) {
        pthread_mutex_unlock(&dns_shim__load_lock);
        goto done;
    }
    memset(&rt, 0, sizeof rt);
    if (dns_shim__runtime_path(path, sizeof path) != 0) {
        snprintf(dns_shim__rt_error, sizeof dns_shim__rt_error,
                 "the runtime's path is unknown (the library's own path is) or longer than "
                 "PATH_MAX");
        dns_shim__rt_state = -1;
        say = 1;
        pthread_mutex_unlock(&dns_shim__load_lock);
        goto done;
    }
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(dns_shim__rt_error, sizeof dns_shim__rt_error, "cannot load the runtime: %s; "
                 "reinstall the library (its runtime is installed beside it)", dlerror());
        __atomic_store_n(&dns_shim__rt_state, -1, __ATOMIC_RELEASE);
        say = 1;
        pthread_mutex_unlock(&dns_shim__load_lock);
        goto done;
    }
    DNS_SHIM__FIND(process_dns_response, "process_dns_response");
    DNS_SHIM__FIND(process, "dns_shim_process");
    DNS_SHIM__FIND(process_reply, "dns_shim_process_reply");
    DNS_SHIM__FIND(init, "dns_shim_init");
    DNS_SHIM__FIND(last_error, "dns_shim_last_error");
    DNS_SHIM__FIND(set_log_handler, "dns_shim_set_log_handler");
    DNS_SHIM__FIND(set_allocator, "dns_shim_set_allocator");
    DNS_SHIM__FIND(set_memory_limit, "dns_shim_set_memory_limit");
    DNS_SHIM__FIND(set_parallelism, "dns_shim_set_parallelism");
    DNS_SHIM__FIND(service_off, "dns_shim__service_off");
    DNS_SHIM__FIND(instance_fork, "dns_shim__runtime_fork");
    DNS_SHIM__FIND(pool_ares_take, "dns_shim__pool_ares_take");
    DNS_SHIM__FIND(pool_ares_give, "dns_shim__pool_ares_give");
    DNS_SHIM__FIND(own_init, "dns_shim__own_init");
    DNS_SHIM__FIND(own_start, "dns_shim__own_start");
    DNS_SHIM__FIND(py_init, "PyInit__dnsshim_cffi");
    if (missing != NULL) {
        snprintf(dns_shim__rt_error, sizeof dns_shim__rt_error, "cannot use the runtime %s: "
                 "it has no %s (another version's?); reinstall the library", path, missing);
        __atomic_store_n(&dns_shim__rt_state, -1, __ATOMIC_RELEASE);
        say = 1;
        pthread_mutex_unlock(&dns_shim__load_lock);
        goto done;
    }
    /* Before any other call into it: its fork handler is the front's. */
    rt.instance_fork(DNS_SHIM__FORK_DRIVEN);
    rt.service_off();
    rt.set_log_handler(dns_shim__runtime_log, NULL);
    /* The settings made before, given to the runtime (not started: each
    ** was checked when the program made it) before any call can start it;
    ** a setting made meanwhile waits, then goes to the runtime itself.
    ** The settings lock is held across these calls alone, which take the
    ** runtime's locks after it, in the fork handler's order. */
    dns_shim__lock(&dns_shim__settings_lock);
    if (dns_shim__allocator_chosen)
        (void)rt.set_allocator(&dns_shim__allocator);
    if (dns_shim__limit_set != 0)
        (void)rt.set_memory_limit(dns_shim__limit_set);
    if (dns_shim__parallelism_chosen)
        (void)rt.set_parallelism(dns_shim__parallelism_set);
    dns_shim__rt = rt;
    __atomic_store_n(&dns_shim__rt_state, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dns_shim__settings_lock);
    pthread_mutex_unlock(&dns_shim__load_lock);
done:
    if (say)
        dns_shim__log_level(DNS_SHIM_LOG_ERROR, dns_shim__rt_error);
    loaded = dns_shim__loaded();
    if (loaded == NULL)
        dns_shim__fail(DNS_SHIM_ERR_INIT, "%s", dns_shim__rt_error);
    return loaded;
}

/* A call forwarded: its status, and the runtime's detail as the front's. */
static int32_t dns_shim__took(const dns_shim__runtime *rt, int32_t status)
{
    if (status == DNS_SHIM_OK)
        return dns_shim__ok();
    dns_shim__set_error(rt->last_error());
    return status;
}

/* ------------------------------------------------------------------ */
/* What the other units of the front need                              */

int32_t dns_shim__run_here(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                           const dns_shim_callbacks *callbacks)
{
    static const uint8_t empty[1] = {0};
    const dns_shim__runtime *rt = dns_shim__runtime_get();
    if (rt == NULL)
        return DNS_SHIM_ERR_INIT;
    if (buf == NULL)
        buf = empty; /* only with len == 0: checked by the callers */
    if (query != NULL)
        return dns_shim__took(rt, rt->process_reply(buf, len, query, callbacks));
    if (callbacks != NULL)
        return dns_shim__took(rt, rt->process(buf, len, callbacks));
    return dns_shim__took(rt, rt->process_dns_response((uint8_t *)(uintptr_t)buf, len));
}

int dns_shim__memory_host(dns_shim_allocator *out)
{
    int chosen;
    dns_shim__lock(&dns_shim__settings_lock);
    chosen = dns_shim__allocator_chosen;
    if (chosen)
        *out = dns_shim__allocator;
    pthread_mutex_unlock(&dns_shim__settings_lock);
    return chosen;
}

/* ------------------------------------------------------------------ */
/* The API the front answers or forwards                                */

DNS_SHIM_API int32_t dns_shim_init(void)
{
    const dns_shim__runtime *rt;
    int32_t answered;
    /* A service that answers is the runtime: nothing starts here. */
    if (dns_shim__service_ping(&answered))
        return answered;
    rt = dns_shim__runtime_get();
    if (rt == NULL)
        return DNS_SHIM_ERR_INIT;
    return dns_shim__took(rt, rt->init());
}

DNS_SHIM_API const char *dns_shim_version(void)
{
    return DNS_SHIM_VERSION_TEXT(DNS_SHIM_VERSION_MAJOR, DNS_SHIM_VERSION_MINOR,
                                 DNS_SHIM_VERSION_PATCH) " (CPython " DNS_SHIM_PYTHON_TAG ")";
}

DNS_SHIM_API int32_t dns_shim_set_allocator(const dns_shim_allocator *allocator)
{
    const dns_shim__runtime *rt;
    dns_shim_allocator copy;
    int32_t checked = dns_shim__copy_allocator(allocator, &copy);

    if (checked != DNS_SHIM_OK && dns_shim__loaded() == NULL)
        return checked;
    dns_shim__lock(&dns_shim__settings_lock);
    rt = dns_shim__loaded();
    if (rt == NULL) {
        if (allocator != NULL)
            dns_shim__allocator = copy;
        dns_shim__allocator_chosen = allocator != NULL;
    }
    pthread_mutex_unlock(&dns_shim__settings_lock);
    if (rt != NULL) {
        /* the runtime checks again, and refuses any after its start */
        int32_t rc = rt->set_allocator(allocator);
        if (rc == DNS_SHIM_OK) {
            dns_shim__lock(&dns_shim__settings_lock);
            if (allocator != NULL)
                dns_shim__allocator = copy;
            dns_shim__allocator_chosen = allocator != NULL;
            pthread_mutex_unlock(&dns_shim__settings_lock);
        }
        return dns_shim__took(rt, rc);
    }
    return dns_shim__ok();
}

DNS_SHIM_API int32_t dns_shim_set_memory_limit(size_t bytes)
{
    const dns_shim__runtime *rt;
    dns_shim__lock(&dns_shim__settings_lock);
    rt = dns_shim__loaded();
    if (rt == NULL)
        dns_shim__limit_set = bytes;
    pthread_mutex_unlock(&dns_shim__settings_lock);
    if (rt != NULL) {
        int32_t rc = rt->set_memory_limit(bytes);
        if (rc == DNS_SHIM_OK) {
            dns_shim__lock(&dns_shim__settings_lock);
            dns_shim__limit_set = bytes;
            pthread_mutex_unlock(&dns_shim__settings_lock);
        }
        return dns_shim__took(rt, rc);
    }
    return dns_shim__ok();
}

DNS_SHIM_API int32_t dns_shim_set_parallelism(uint32_t n)
{
    const dns_shim__runtime *rt;
    if (n > DNS_SHIM_PARALLELISM_MAX)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "parallelism %" PRIu32 " is above "
                              "%d, the most this library runs", n, DNS_SHIM_PARALLELISM_MAX);
    /* Above 1, whether the installation can is the runtime's to say. */
    rt = n > 1 ? dns_shim__runtime_get() : dns_shim__loaded();
    if (n > 1 && rt == NULL)
        return DNS_SHIM_ERR_INIT;
    if (rt != NULL) {
        int32_t rc = rt->set_parallelism(n);
        if (rc == DNS_SHIM_OK) {
            dns_shim__lock(&dns_shim__settings_lock);
            dns_shim__parallelism_set = n;
            dns_shim__parallelism_chosen = 1;
            pthread_mutex_unlock(&dns_shim__settings_lock);
        }
        return dns_shim__took(rt, rc);
    }
    dns_shim__lock(&dns_shim__settings_lock);
    dns_shim__parallelism_set = n;
    dns_shim__parallelism_chosen = 1;
    pthread_mutex_unlock(&dns_shim__settings_lock);
    return dns_shim__ok();
}

/* ------------------------------------------------------------------ */
/* DNSSHIM_PRIVATE: libdnsshim_ares's entries, forwarded                */

DNS_SHIM__PRIVATE_API int32_t dns_shim__pool_ares_take(const dns_shim__pool_entries **entries)
{
    const dns_shim__runtime *rt = dns_shim__runtime_get();
    int32_t rc;
    if (rt == NULL)
        return DNS_SHIM_ERR_INIT;
    rc = rt->pool_ares_take(entries);
    if (rc < 0) /* why, for the c-ares layer's line (it reads the front's detail) */
        dns_shim__set_error(rt->last_error());
    return rc;
}

DNS_SHIM__PRIVATE_API void dns_shim__pool_ares_give(void)
{
    const dns_shim__runtime *rt = dns_shim__loaded();
    if (rt != NULL)
        rt->pool_ares_give();
}

DNS_SHIM__PRIVATE_API int32_t dns_shim__own_init(void)
{
    const dns_shim__runtime *rt = dns_shim__runtime_get();
    if (rt == NULL)
        return DNS_SHIM_ERR_INIT;
    return dns_shim__took(rt, rt->own_init());
}

DNS_SHIM__PRIVATE_API int32_t dns_shim__own_start(void (*then)(void))
{
    const dns_shim__runtime *rt = dns_shim__runtime_get();
    if (rt == NULL)
        return DNS_SHIM_ERR_INIT;
    return dns_shim__took(rt, rt->own_start(then));
}

/* The runtime's fork handler's entry, which the front drives itself: the
** front's own, for the export list's sake, forwards. */
DNS_SHIM__PRIVATE_API void dns_shim__runtime_fork(int phase)
{
    const dns_shim__runtime *rt = dns_shim__loaded();
    if (rt != NULL)
        rt->instance_fork(phase);
}

/* cffi's module init (DNSSHIM_1.0): the runtime's. */
DNS_SHIM_API void *PyInit__dnsshim_cffi(void)
{
    const dns_shim__runtime *rt = dns_shim__runtime_get();
    return rt != NULL ? rt->py_init() : NULL;
}
