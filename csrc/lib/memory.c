/*
** memory.c: the host's allocator and the memory limit of the embedded
** runtime (dns_shim_set_allocator, dns_shim_set_memory_limit), a unit of
** libdnsshim's C in every build, compiled on its own; what it shares with
** the others is declared in dns_shim_internal.h.
**
** An interpreter the library starts itself keeps an account of what it
** holds: CPython's RAW domain through a 16-octet size header, and the
** 1 MiB arenas of its small-object allocator (pymalloc), whose large
** blocks come from the RAW domain; the MEM and OBJ domains stay pymalloc
** (with another object allocator CPython 3.11 reads memory it did not
** initialise).  The memory comes from libc, or, when the host set an
** allocator before the start, from the host's functions, and then the MEM
** domain goes to them too (through the same header), so that the host sees
** every general-purpose allocation.  A Python program's own interpreter is
** never touched: nothing is counted there, and no limit is set.
**
** The limit holds while a message is parsed, in the parsing thread (the
** init code wraps the parse: shim.embedded.attach): an allocation that would
** take the account above it is refused (a small object's is let through,
** dns_shim__take says why), the parse fails with MemoryError and C fails the
** call with DNS_SHIM_ERR_NO_MEMORY, whatever Python made of it.
** After the first refusal in a call, allocations up to DNS_SHIM__RESERVE
** above the limit are let through so that the interpreter can unwind:
** CPython 3.11 retries for ever an allocation it needs to enter an exception
** handler (ceval.c, exception_unwind), so refusing everything is not
** survivable.  An arena of pymalloc's is taken in a parse under a limit
** only while it fits (dns_shim__arena_alloc): the limit is then decided on
** raw blocks, which a refused call frees one by one, and what the runtime
** holds after a refused call is what it held before, but for one wholly
** free arena CPython keeps (taken within the limit) and what the unwinding
** left (shim.embedded.limited gives that back).  Thread states, the GIL
** hand-over and cffi's own call machinery stay outside the limit.
*/
#define DNS_SHIM_BUILDING 1
#include <Python.h>

#include "dns_shim.h"
/* The sizes of the versioned structs: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>


#define DNS_SHIM__HEADER 16           /* keeps malloc's 16-octet alignment */
#define DNS_SHIM__RESERVE ((size_t)1 << 20)
/* pymalloc's largest object (SMALL_REQUEST_THRESHOLD, obmalloc.c) */
#define DNS_SHIM__SMALL ((size_t)512)
/* The size of pymalloc's arenas on 64-bit CPython 3.10 and later (ARENA_BITS
** 20, obmalloc.c) */
#define DNS_SHIM__ARENA ((size_t)1 << 20)

static int dns_shim__memory_started = 0; /* the allocators were chosen */
static int dns_shim__accounting = 0;     /* the runtime's memory is counted */
static int dns_shim__guest_memory = 0;   /* ... it is a Python program's */
static dns_shim_allocator dns_shim__host; /* the host's, or libc's */
size_t dns_shim__limit = 0;              /* 0: none */
static size_t dns_shim__held_own = 0;    /* bytes the runtime holds (atomic) */
/* The account counted in: the runtime's own, or, in an instance of a pool,
** the pool's one account (dns_shim__pool_account). */
static size_t *dns_shim__held = &dns_shim__held_own;
static int dns_shim__host_chosen = 0;    /* dns_shim_set_allocator set one */
static __thread int dns_shim__enforcing = 0; /* this thread parses */
static __thread int dns_shim__tripped = 0;   /* ... and went past the limit */
static __thread int dns_shim__unwinding = 0; /* ... and the limit refused */
/* The host's allocator refused this thread a block (since the flag was last
** read: dns_shim__memory_refused). */
static __thread int dns_shim__refused = 0;
/* This thread starts the runtime: a block the host refuses is taken from the
** C library instead (CPython ends the process on an allocation that fails
** before its exception types exist, and a refusal while it imports is
** reported as anything but memory), counted in dns_shim__start_refusals, and
** the start then fails with DNS_SHIM_ERR_NO_MEMORY (dns_shim__init_once). */
static __thread int dns_shim__starting = 0;
static size_t dns_shim__start_refusals = 0; /* atomic */

/* The header before a block of the raw and object domains: its size, and
** where it came from. */
typedef struct dns_shim__header {
    size_t size;
    size_t from_libc; /* 1: taken from the C library at start-up */
} dns_shim__header;
_Static_assert(sizeof(dns_shim__header) <= DNS_SHIM__HEADER, "the header fits its room");

static void *dns_shim__libc_malloc(void *ctx, size_t n) { (void)ctx; return malloc(n); }
static void *dns_shim__libc_calloc(void *ctx, size_t n, size_t m) { (void)ctx; return calloc(n, m); }
static void *dns_shim__libc_realloc(void *ctx, void *p, size_t n) { (void)ctx; return realloc(p, n); }
static void dns_shim__libc_free(void *ctx, void *p) { (void)ctx; free(p); }

/* What a layer's start added to the account after the runtime's own (the
** c-ares layer's modules, imported at its first call: dns_shim__own_start):
** start-up, which the limit makes room for (dns_shim__limit_now). */
static size_t dns_shim__layers_started = 0; /* atomic */
/* While this thread starts a layer: what it took, less what it gave back
** (what other threads parse meanwhile is not the layer's). */
static __thread int dns_shim__layer_starting = 0;
static __thread long long dns_shim__layer_took = 0;

/* The limit in force: the one set, with room for the layers' start-ups; 0
** when none is set. */
static size_t dns_shim__limit_now(void)
{
    size_t limit = __atomic_load_n(&dns_shim__limit, __ATOMIC_RELAXED);
    return limit ? limit + __atomic_load_n(&dns_shim__layers_started, __ATOMIC_RELAXED) : 0;
}

void dns_shim__memory_layer_starting(int on)
{
    if (on) {
        dns_shim__layer_took = 0;
        dns_shim__layer_starting = 1;
        return;
    }
    dns_shim__layer_starting = 0;
    if (dns_shim__layer_took > 0)
        __atomic_add_fetch(&dns_shim__layers_started, (size_t)dns_shim__layer_took,
                           __ATOMIC_RELAXED);
}

/* n more bytes into the account for a block of size octets, or a refusal
** (0).  Past the limit, in a parse: within DNS_SHIM__RESERVE, a block once
** the limit has refused one (the unwinding's) and a small block (at most
** DNS_SHIM__SMALL) are let through and the call fails all the same
** (tripped); any other block is refused.  Small blocks are pymalloc's objects when it has no arena, and
** CPython 3.12 and 3.13 mishandle some failures to make one: a function
** object refused in MAKE_FUNCTION (a generator expression's, a lambda's)
** releases its code object twice, which frees the code while its function
** still names it, and a later call of that function crashes the process.
** Refused only a larger block, the parse fails where CPython checks (a
** list, a dict or a buffer growing), and unwinds. */
static int dns_shim__take(size_t n, size_t size)
{
    size_t now = __atomic_add_fetch(dns_shim__held, n, __ATOMIC_RELAXED);
    size_t limit = dns_shim__limit_now();
    if (dns_shim__enforcing && limit && now > limit) {
        dns_shim__tripped = 1;
        if (now - limit > DNS_SHIM__RESERVE || (!dns_shim__unwinding && size > DNS_SHIM__SMALL)) {
            dns_shim__unwinding = 1;
            __atomic_sub_fetch(dns_shim__held, n, __ATOMIC_RELAXED);
            return 0;
        }
    }
    if (dns_shim__layer_starting)
        dns_shim__layer_took += (long long)n;
    return 1;
}

static void dns_shim__give(size_t n)
{
    __atomic_sub_fetch(dns_shim__held, n, __ATOMIC_RELAXED);
    if (dns_shim__layer_starting)
        dns_shim__layer_took -= (long long)n;
}

static void *dns_shim__mark(void *block, size_t n, size_t from_libc)
{
    dns_shim__header *h = block;
    if (block == NULL)
        return NULL;
    h->size = n;
    h->from_libc = from_libc;
    return (char *)block + DNS_SHIM__HEADER;
}

/* The host refused a block of total octets (zeroed or not): NULL, or, while
** this thread starts the runtime, the C library's block (*from_libc set). */
static void *dns_shim__refusal(size_t total, int zeroed, size_t *from_libc)
{
    dns_shim__refused = 1;
    if (!dns_shim__starting)
        return NULL;
    __atomic_add_fetch(&dns_shim__start_refusals, 1, __ATOMIC_RELAXED);
    *from_libc = 1;
    return zeroed ? calloc(1, total) : malloc(total);
}

static void *dns_shim__malloc(void *ctx, size_t n)
{
    void *block;
    size_t total, from_libc = 0;
    (void)ctx;
    if (n > SIZE_MAX - DNS_SHIM__HEADER - 1 || !dns_shim__take(n, n))
        return NULL;
    /* + (n == 0): a zero-size block's pointer would be one past the host's
    ** block, which memcheck would call lost */
    total = n + DNS_SHIM__HEADER + (n == 0);
    block = dns_shim__host.malloc(dns_shim__host.ctx, total);
    if (block == NULL)
        block = dns_shim__refusal(total, 0, &from_libc);
    if (block == NULL)
        dns_shim__give(n);
    return dns_shim__mark(block, n, from_libc);
}

/* n zeroed bytes from the host: its calloc, or its malloc and memset. */
static void *dns_shim__host_zeroed(size_t n)
{
    void *p;
    if (dns_shim__host.calloc != NULL)
        return dns_shim__host.calloc(dns_shim__host.ctx, 1, n);
    p = dns_shim__host.malloc(dns_shim__host.ctx, n);
    if (p != NULL)
        memset(p, 0, n);
    return p;
}

static void *dns_shim__calloc(void *ctx, size_t nelem, size_t elsize)
{
    size_t n, total, from_libc = 0;
    void *block;
    (void)ctx;
    if (__builtin_mul_overflow(nelem, elsize, &n) || n > SIZE_MAX - DNS_SHIM__HEADER - 1 ||
        !dns_shim__take(n, n))
        return NULL;
    total = n + DNS_SHIM__HEADER + (n == 0);
    block = dns_shim__host_zeroed(total);
    if (block == NULL)
        block = dns_shim__refusal(total, 1, &from_libc);
    if (block == NULL)
        dns_shim__give(n);
    return dns_shim__mark(block, n, from_libc);
}

static void *dns_shim__realloc(void *ctx, void *ptr, size_t n)
{
    dns_shim__header *block;
    size_t old, total, from_libc;
    void *p;
    if (ptr == NULL)
        return dns_shim__malloc(ctx, n);
    if (n > SIZE_MAX - DNS_SHIM__HEADER - 1)
        return NULL;
    block = (dns_shim__header *)(void *)((char *)ptr - DNS_SHIM__HEADER);
    old = block->size;
    from_libc = block->from_libc;
    if (n > old && !dns_shim__take(n - old, n))
        return NULL;
    total = n + DNS_SHIM__HEADER + (n == 0);
    if (from_libc) { /* a start-up block stays the C library's */
        p = realloc(block, total);
    } else {
        p = dns_shim__host.realloc(dns_shim__host.ctx, block, total);
        if (p == NULL && (p = dns_shim__refusal(total, 0, &from_libc)) != NULL) {
            memcpy((char *)p + DNS_SHIM__HEADER, ptr, old < n ? old : n);
            dns_shim__host.free(dns_shim__host.ctx, block);
        }
    }
    if (p == NULL) {
        if (n > old)
            dns_shim__give(n - old);
        return NULL;
    }
    if (n < old)
        dns_shim__give(old - n);
    return dns_shim__mark(p, n, from_libc);
}

static void dns_shim__free(void *ctx, void *ptr)
{
    dns_shim__header *block;
    (void)ctx;
    if (ptr == NULL)
        return;
    block = (dns_shim__header *)(void *)((char *)ptr - DNS_SHIM__HEADER);
    dns_shim__give(block->size);
    if (block->from_libc)
        free(block);
    else
        dns_shim__host.free(dns_shim__host.ctx, block);
}

/* pymalloc's arenas: no header, free() is told the size.  Zeroed, as
** CPython's own arenas are (fresh anonymous pages): CPython 3.11 reads
** some memory of a new arena before writing it (long_bitwise does), so
** that an arena with malloc's leftovers would make a result depend on what
** the process did before, and memcheck reports the read. */
static void *dns_shim__arena_alloc(void *ctx, size_t n)
{
    void *p;
    size_t limit = dns_shim__limit_now();
    (void)ctx;
    /* Under a limit, an arena that would not fit, and in a parse any block
    ** once the parse has gone past the limit, is declined quietly: pymalloc then
    ** takes the object from the raw domain (its fallback when no arena can
    ** be had), where the limit decides on the object's own size, and the
    ** block is freed on its own.  An arena taken past the limit would stay
    ** once emptied (CPython keeps one wholly free arena for reuse), the
    ** runtime above its limit for good; and a quiet refusal must not trip
    ** the limit, or the parse, which goes on with raw blocks, would spend
    ** the unwinding's reserve.  In a parse every block of this domain is
    ** judged so; outside one (start-up, the dispatch, the collector run
    ** between parses) only pymalloc's arenas, by their size: the same
    ** domain gives the frames' data stack its chunks, which have no
    ** fallback, and a start-up under a limit must not fail on them. */
    if (limit && dns_shim__enforcing &&
        (dns_shim__tripped || __atomic_load_n(dns_shim__held, __ATOMIC_RELAXED) + n > limit)) {
        /* Not an arena: a chunk of the frames' stack, refused. */
        if (n != DNS_SHIM__ARENA)
            dns_shim__tripped = dns_shim__unwinding = 1;
        return NULL;
    }
    if (limit && !dns_shim__enforcing && n == DNS_SHIM__ARENA &&
        __atomic_load_n(dns_shim__held, __ATOMIC_RELAXED) + n > limit)
        return NULL;
    if (!dns_shim__take(n, n))
        return NULL;
    p = dns_shim__host_zeroed(n);
    if (p == NULL)
        dns_shim__give(n);
    return p;
}

static void dns_shim__arena_free(void *ctx, void *ptr, size_t n)
{
    (void)ctx;
    if (ptr == NULL)
        return;
    dns_shim__give(n);
    dns_shim__host.free(dns_shim__host.ctx, ptr);
}

static pthread_mutex_t dns_shim__memory_lock = PTHREAD_MUTEX_INITIALIZER;

/* The allocator's and limit's part of the fork handler (dns_shim_internal.h). */
void dns_shim__memory_fork(int phase)
{
    dns_shim__fork_mutex(&dns_shim__memory_lock, phase);
}

DNS_SHIM_API int32_t dns_shim_set_allocator(const dns_shim_allocator *allocator)
{
    int32_t rc = DNS_SHIM_OK;
    dns_shim_allocator copy;
    /* Checked and copied first (api.c), reported after the start: a call
    ** after the start is refused for that, whatever it passes. */
    int32_t checked = dns_shim__copy_allocator(allocator, &copy);
    dns_shim__lock(&dns_shim__memory_lock);
    if (dns_shim__memory_started || dns_shim__pool_started()) {
        rc = dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the runtime has started: an allocator "
                            "is set before the first call that starts it");
    } else if (allocator == NULL) {
        memset(&dns_shim__host, 0, sizeof dns_shim__host);
        dns_shim__host_chosen = 0;
    } else if (checked != DNS_SHIM_OK) {
        rc = checked; /* its detail, set by the check */
    } else {
        dns_shim__host = copy;
        dns_shim__host_chosen = 1;
    }
    pthread_mutex_unlock(&dns_shim__memory_lock);
    return rc == DNS_SHIM_OK ? dns_shim__ok() : rc;
}

DNS_SHIM_API int32_t dns_shim_set_memory_limit(size_t bytes)
{
    int32_t rc = DNS_SHIM_OK;
    dns_shim__lock(&dns_shim__memory_lock);
    if (dns_shim__guest_memory && bytes != 0)
        rc = dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the runtime is the interpreter of the "
                            "Python program the library is loaded into: its memory is that "
                            "program's, and has no limit of the library's");
    else
        __atomic_store_n(&dns_shim__limit, bytes, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&dns_shim__memory_lock);
    if (rc == DNS_SHIM_OK)
        dns_shim__pool_limit(); /* the pool's interpreters, when there are */
    return rc == DNS_SHIM_OK ? dns_shim__ok() : rc;
}

/* For the pool's front (pool.c): the allocator the program set, if it set
** one (returns whether it did). */
int dns_shim__memory_host(dns_shim_allocator *out)
{
    int chosen;
    dns_shim__lock(&dns_shim__memory_lock);
    chosen = dns_shim__host_chosen;
    if (chosen)
        *out = dns_shim__host;
    pthread_mutex_unlock(&dns_shim__memory_lock);
    return chosen;
}

/* An instance of a pool counts its memory in the pool's one account, held,
** so that the limit is the pool's: the front calls this before the
** instance starts.  Not part of the API: the worker image alone exports it
** (DNSSHIM_WORKER, dnsshim_build/worker.py). */
DNS_SHIM__WORKER_ENTRY int32_t dns_shim__pool_account(size_t *held)
{
    int32_t rc = DNS_SHIM_OK;
    dns_shim__lock(&dns_shim__memory_lock);
    if (held == NULL || dns_shim__memory_started)
        rc = dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "the pool's account is set before the "
                            "interpreter starts, and is not NULL");
    else
        dns_shim__held = held;
    pthread_mutex_unlock(&dns_shim__memory_lock);
    return rc == DNS_SHIM_OK ? dns_shim__ok() : rc;
}

/* Before the library starts an interpreter of its own: the accounting
** allocators, and the host's behind them.  In a Python program's
** interpreter, once called, this only closes the door, and drops a limit
** set before, with a warning. */
void dns_shim__memory_start(int owns)
{
    int dropped = 0;
    dns_shim__lock(&dns_shim__memory_lock);
    if (!dns_shim__memory_started && owns) {
        PyMemAllocatorEx domain = {NULL, dns_shim__malloc, dns_shim__calloc, dns_shim__realloc,
                                   dns_shim__free};
        PyObjectArenaAllocator arenas = {NULL, dns_shim__arena_alloc, dns_shim__arena_free};
        int routed = dns_shim__host.malloc != NULL;
        if (!routed) {
            dns_shim__host.struct_size = sizeof dns_shim__host;
            dns_shim__host.malloc = dns_shim__libc_malloc;
            dns_shim__host.calloc = dns_shim__libc_calloc;
            dns_shim__host.realloc = dns_shim__libc_realloc;
            dns_shim__host.free = dns_shim__libc_free;
        }
        PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &domain);
        if (routed)
            PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &domain);
        PyObject_SetArenaAllocator(&arenas);
        dns_shim__accounting = 1;
    } else if (!dns_shim__memory_started) {
        dns_shim__guest_memory = 1;
        dropped = __atomic_exchange_n(&dns_shim__limit, 0, __ATOMIC_RELAXED) != 0;
    }
    dns_shim__memory_started = 1;
    pthread_mutex_unlock(&dns_shim__memory_lock);
    if (dropped)
        dns_shim__log_level(DNS_SHIM_LOG_WARNING, "the memory limit set with "
                            "dns_shim_set_memory_limit does not hold: the runtime is the "
                            "interpreter of the Python program the library is loaded into, "
                            "whose memory is that program's");
}

/* For the glue (shim.embedded hands these to cffi's ffi.new_allocator):
** the memory of the structs a plan hands C, from the host's allocator
** through the account and under the limit like the runtime's own, zeroed.
** Only while the runtime's memory is counted (dns_shim__memory_accounted):
** the block carries the account's size header. */
void *dns_shim__cdata_alloc(size_t n)
{
    return dns_shim__calloc(NULL, 1, n);
}

void dns_shim__cdata_free(void *p)
{
    dns_shim__free(NULL, p);
}

/* For the init code: whether the runtime's memory is counted (a limit may
** then be set at any time), whether a limit is set now, and the limit on or
** off for the parse in this thread (returns whether the parse went past
** the limit since it was turned on). */
int32_t dns_shim__memory_accounted(void)
{
    return dns_shim__accounting;
}

int32_t dns_shim__memory_limited(void)
{
    return __atomic_load_n(&dns_shim__limit, __ATOMIC_RELAXED) != 0;
}

int32_t dns_shim__memory_enforce(int32_t on)
{
    if (on) {
        /* A runtime that holds its limit already is refused the parse
        ** before it starts (returns 1: tripped, not enforcing): any
        ** allocation would be refused, and an unwinding from its first
        ** allocation leaves blocks behind in CPython and cffi. */
        size_t limit = dns_shim__limit_now();
        dns_shim__tripped = limit != 0 &&
                            __atomic_load_n(dns_shim__held, __ATOMIC_RELAXED) >= limit;
        dns_shim__unwinding = 0;
        dns_shim__enforcing = !dns_shim__tripped;
        return dns_shim__tripped;
    }
    dns_shim__enforcing = 0;
    return dns_shim__tripped;
}

/* This thread starts the runtime (on) or has started it (off): returns,
** when off, how many blocks the host refused meanwhile (taken from the C
** library instead). */
size_t dns_shim__memory_starting(int on)
{
    dns_shim__starting = on;
    return on ? 0 : __atomic_exchange_n(&dns_shim__start_refusals, 0, __ATOMIC_RELAXED);
}

/* For the init code: whether the host's allocator has refused this thread a
** block in this call so far (an unexpected failure is then that refusal,
** which C reports as DNS_SHIM_ERR_NO_MEMORY: not logged). */
int32_t dns_shim__memory_refusing(void)
{
    return dns_shim__refused;
}

/* Whether the host's allocator refused this thread a block since the last
** call of this; clears it. */
int dns_shim__memory_refused(void)
{
    int refused = dns_shim__refused;
    dns_shim__refused = 0;
    return refused;
}

/* Whether this thread's last parse went past the limit (C then fails the
** call); clears it. */
int dns_shim__memory_tripped(void)
{
    int tripped = dns_shim__tripped;
    dns_shim__tripped = 0;
    return tripped;
}
