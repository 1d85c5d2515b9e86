/*
** dns_shim_internal.h: what crosses libdnsshim's C units.
**
** libdnsshim's C is several units: the bridge (dns_shim.c), cffi's
** preamble, which sees cffi's generated code, and units compiled on their
** own (api.c, dispatch.c, failure.c, memory.c, pool.c, runtime.c).  Every
** name here but the DNS_SHIM__PRIVATE_API ones (libdnsshim_ares's
** entry into the pool) is hidden: it is neither exported by the shared
** object (its version script lists the API) nor left global in the static
** archive (dnsshim_build.pipeline._archive links the units into one object
** and makes hidden symbols local), so it cannot collide with a program's.
** Include it after "dns_shim.h".
*/
#ifndef DNS_SHIM_INTERNAL_H
#define DNS_SHIM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_SHIM__HIDDEN __attribute__((visibility("hidden")))

/* Every section a callbacks set may ask for (api.c) and a record may be in
** (dispatch.c's plan check). */
#define DNS_SHIM__ALL_SECTIONS \
    (DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY | DNS_SHIM_SECTION_ADDITIONAL)

/* The sizes of a versioned struct that the library accepts, and the release
** of each, oldest first, as tables: the build writes them from the header
** (DNS_SHIM__SIZES_<struct> in dns_shim_generated.h), where a comment on a
** line of its own names the release that appended the members after it.
** Each size is an offsetof or sizeof the compiler computes: nothing in the
** library's C changes when a release appends a member.
**   static const uint32_t sizes[] = {DNS_SHIM__SIZES_x(DNS_SHIM__SIZE)};
**   static const char *const releases[] = {DNS_SHIM__SIZES_x(DNS_SHIM__RELEASE)}; */
#define DNS_SHIM__SIZE(size, release) (uint32_t)(size),
#define DNS_SHIM__RELEASE(size, release) release,
#define DNS_SHIM__COUNT(table) (sizeof(table) / sizeof((table)[0]))
/* Whether size is one of the n sizes known (api.c). */
DNS_SHIM__HIDDEN int dns_shim__size_known(uint32_t size, const uint32_t *known, size_t n);
/* DNS_SHIM_ERR_BAD_ARGUMENT for a size not known, saying "the <what>'s
** struct_size is S, not one this library knows (K)", K the one size, or
** "S1 for 1.0, ..., Sn for 1.N and later" (api.c). */
DNS_SHIM__HIDDEN int32_t dns_shim__unknown_size(const char *what, uint32_t size,
                                                const uint32_t *known,
                                                const char *const *releases, size_t n);

/* An allocator checked and copied for dns_shim_set_allocator (api.c). */
DNS_SHIM__HIDDEN int32_t dns_shim__copy_allocator(const dns_shim_allocator *in,
                                                  dns_shim_allocator *out);

/* Held while an interpreter starts, the library's own or a pool's instance:
** one start at a time in the process (runtime.c; recursive).  Taken and
** given back only through these two, which count the depth for the fork
** handler. */
DNS_SHIM__HIDDEN void dns_shim__start_enter(void);
DNS_SHIM__HIDDEN void dns_shim__start_leave(void);

/* fork() from any thread at any moment (dns_shim.c).  Each unit with a lock
** gives its part of one pthread_atfork handler: before the fork the forking
** thread takes every such lock, in this order, which is the order in which
** the units nest them (a unit's lock is never held while an earlier one is
** taken), after the start lock (runtime.c: unless the forking thread holds
** an interpreter's lock, so that a start in progress ends before the fork)
** and the interpreter's lock when the library runs its own:
**   memory.c (the allocator and limit), pool.c (the pool; its cond anew in
**   the child), api.c (the registered callbacks), dns_shim.c (the queue of
**   finished plans), failure.c (the log handler; its count of calls in
**   flight is the forking thread's own in the child);
** after it, both sides give them back.  No thread of the child then finds a
** lock held by a thread it does not have.  Every lock of these is taken
** with dns_shim__lock, which registers the handler first, once. */
enum { DNS_SHIM__FORK_PREPARE, DNS_SHIM__FORK_PARENT, DNS_SHIM__FORK_CHILD };
DNS_SHIM__HIDDEN void dns_shim__fork_watch(void);
static inline void dns_shim__lock(pthread_mutex_t *mutex)
{
    dns_shim__fork_watch();
    pthread_mutex_lock(mutex);
}
/* The front's part (pool.c): each instance's handler, inside the front's
** (pool_instances: after the start lock, before the interpreter's lock). */
DNS_SHIM__HIDDEN void dns_shim__pool_instances_fork(int phase);
/* One lock's part: taken, given back in the parent and in the child. */
static inline void dns_shim__fork_mutex(pthread_mutex_t *mutex, int phase)
{
    if (phase == DNS_SHIM__FORK_PREPARE)
        pthread_mutex_lock(mutex);
    else
        pthread_mutex_unlock(mutex);
}
DNS_SHIM__HIDDEN void dns_shim__memory_fork(int phase);
DNS_SHIM__HIDDEN void dns_shim__pool_fork(int phase);
DNS_SHIM__HIDDEN void dns_shim__callbacks_fork(int phase);
DNS_SHIM__HIDDEN void dns_shim__log_fork(int phase);
DNS_SHIM__HIDDEN void dns_shim__start_fork(int phase, int may_wait);

/* The reason for the last failure, this thread's (failure.c). */
#define DNS_SHIM__ERROR_SIZE 2048
DNS_SHIM__HIDDEN extern __thread char dns_shim__error[DNS_SHIM__ERROR_SIZE];
/* The reason for a failure (failure.c): a status and its text. */
DNS_SHIM__HIDDEN int32_t dns_shim__ok(void);
DNS_SHIM__HIDDEN int32_t dns_shim__fail(int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The program's log handler: at a level, at DNS_SHIM_LOG_ERROR (failure.c). */
DNS_SHIM__HIDDEN void dns_shim__log_level(int32_t level, const char *message);
DNS_SHIM__HIDDEN void dns_shim__log(const char *message);
/* For the Python side: the whole text of a failure it reports (failure.c). */
DNS_SHIM__HIDDEN void dns_shim__set_error(const char *text);
/* A DNS_SHIM_* variable, or NULL; always NULL in a setuid, setgid or setcap
** process (AT_SECURE), where the environment is not the program's to trust
** (failure.c).  The library reads no variable otherwise. */
DNS_SHIM__HIDDEN const char *dns_shim__getenv(const char *name);
/* errno's text, untranslated, taking no memory (failure.c). */
DNS_SHIM__HIDDEN const char *dns_shim__errno_text(int e);

/* One step of a plan (the Python side builds it: shim/glue.py; cffi is
** told of it: dnsshim_build.pipeline._INTERNAL_CDEF). */
typedef struct dns_shim__step {
    size_t member;   /* offsetof(dns_shim_callbacks, on_...) */
    const void *arg; /* the struct for that callback */
} dns_shim__step;
/* A plan's step made (0), or -1 for an offset naming no callback; the
** failure a callback's return makes (dispatch.c). */
DNS_SHIM__HIDDEN int dns_shim__call(const dns_shim_callbacks *cb, const dns_shim__step *step,
                                    int32_t *result);
DNS_SHIM__HIDDEN int32_t dns_shim__callback_failed(const dns_shim__step *step, int32_t result);
/* Every step of a plan checked before its first call (DNS_SHIM_ERR_INTERNAL
** with its reason for a step the C side cannot trust). */
DNS_SHIM__HIDDEN int32_t dns_shim__check_plan(const dns_shim_callbacks *cb,
                                              const dns_shim__step *steps, size_t count);

/* A checked plan's calls made: the call's status (dispatch.c). */
DNS_SHIM__HIDDEN int32_t dns_shim__dispatch(const dns_shim_callbacks *callbacks,
                                            const dns_shim__step *steps, size_t count);

/* The parse service (service.c): a checked call parsed by dnsshimd.
** Returns 1 with the call's status in *status, or 0: the call parses in
** this process.  dns_shim__service_ping: 1 when a service answers (then
** *status is DNS_SHIM_OK), for dns_shim_init; dns_shim__service_off: the
** process is the service itself (dnsshimd) and parses every message. */
DNS_SHIM__HIDDEN int dns_shim__service_run(const uint8_t *buf, int32_t len,
                                           const dns_shim_query *query,
                                           const dns_shim_callbacks *callbacks,
                                           int32_t *status);
DNS_SHIM__HIDDEN int dns_shim__service_ping(int32_t *status);
/* Two checked calls at once (the NSS module's A and AAAA replies): both
** requests sent before the first answer is read, so that the service
** parses the second while the first's answer comes back; each call ends
** as dns_shim__service_run's (served[i], status[i]), the first's
** callbacks made before the second's; where the service refused the
** first, the second is not read (served[1] 0) and the thread's detail is
** the first's. */
DNS_SHIM__HIDDEN void dns_shim__service_run_pair(const uint8_t *const buf[2],
                                                 const int32_t len[2],
                                                 const dns_shim_query *const query[2],
                                                 const dns_shim_callbacks *const callbacks[2],
                                                 int32_t status[2], int served[2]);
/* The reader of the service's answer (its frame after the length), the
** untrusted input of a call through the service: 1 with the call made and
** its status in *status, or 0 with why the answer cannot be used. */
DNS_SHIM__HIDDEN int dns_shim__service_read(const uint8_t *frame, size_t n, int op,
                                            const dns_shim_callbacks *callbacks,
                                            int32_t *status, char *why, size_t whylen);

/* A checked call's message parsed and its plan dispatched: a status; by
** the parse service where one answers, else in this process (api.c). */
DNS_SHIM__HIDDEN int32_t dns_shim__run(const uint8_t *buf, int32_t len,
                                       const dns_shim_query *query,
                                       const dns_shim_callbacks *callbacks);
/* The same in this process, the service not asked: by the Python side
** (the bridge, dns_shim.c), or, in the shared library's front, by the
** runtime it loads (front.c). */
DNS_SHIM__HIDDEN int32_t dns_shim__run_here(const uint8_t *buf, int32_t len,
                                            const dns_shim_query *query,
                                            const dns_shim_callbacks *callbacks);

/* The host's allocator and the memory limit (memory.c). */
DNS_SHIM__HIDDEN extern size_t dns_shim__limit;
DNS_SHIM__HIDDEN void dns_shim__memory_start(int owns);
DNS_SHIM__HIDDEN int32_t dns_shim__memory_accounted(void);
DNS_SHIM__HIDDEN int32_t dns_shim__memory_limited(void);
DNS_SHIM__HIDDEN int32_t dns_shim__memory_enforce(int32_t on);
DNS_SHIM__HIDDEN int dns_shim__memory_tripped(void);
DNS_SHIM__HIDDEN size_t dns_shim__memory_starting(int on);
/* A layer's start in this thread (dns_shim__own_start: the c-ares layer's
** modules) begins (1) or ends (0): what this thread took meanwhile is
** start-up, which the limit makes room for (memory.c). */
DNS_SHIM__HIDDEN void dns_shim__memory_layer_starting(int on);
DNS_SHIM__HIDDEN int dns_shim__memory_refused(void);
DNS_SHIM__HIDDEN int32_t dns_shim__memory_refusing(void);
DNS_SHIM__HIDDEN void *dns_shim__cdata_alloc(size_t n);
DNS_SHIM__HIDDEN void dns_shim__cdata_free(void *p);
DNS_SHIM__HIDDEN int dns_shim__memory_host(dns_shim_allocator *out);
/* The worker image's one entry point beside the API (memory.c): compiled
** with default visibility in the firmware object alone, whose link keeps
** the API global and nothing else; dnsshim_build/worker.py makes it global
** again in the image and exports it in its own node.  Hidden elsewhere. */
#ifdef DNS_SHIM__WORKER_ENTRY_VISIBLE
#  define DNS_SHIM__WORKER_ENTRY __attribute__((visibility("default")))
#else
#  define DNS_SHIM__WORKER_ENTRY DNS_SHIM__HIDDEN
#endif
DNS_SHIM__WORKER_ENTRY int32_t dns_shim__pool_account(size_t *held);
/* An instance's fork handler, run by the front inside its own, after the
** front's start lock (dns_shim.c): DNS_SHIM__FORK_DRIVEN, the front's first
** call into an instance, makes the instance register none of its own
** (glibc runs the handlers registered last first: an instance's would take
** its locks before the front's start lock, which a start holds while it
** takes them); then the three phases. */
#define DNS_SHIM__FORK_DRIVEN 3
DNS_SHIM__WORKER_ENTRY void dns_shim__instance_fork(int phase);

/* Parallelism (pool.c).  The worker image's file name (dnsshim_build/
** worker.py's NAME), in DNS_SHIM_WORKER_DIR: a folder relative to the
** library's own, "" for beside it (the install form's, shim/layout.py's
** Form.worker_from_lib; dns_shim_runtime.h lists the layout's defines). */
#define DNS_SHIM_WORKER_IMAGE "libdnsshim_worker.so"
#ifndef DNS_SHIM_WORKER_DIR
#  define DNS_SHIM_WORKER_DIR ""
#endif
/* The shared library's runtime (csrc/lib/front.c, shim/layout.py's
** RUNTIME_LIBRARY): in that folder itself, beside the worker image. */
#define DNS_SHIM__RUNTIME_FILE "libdnsshim_runtime.so.1"
/* Beside the library where the install could not build the image: why, one
** line (worker.py's NOTE), quoted by the refusal of parallelism above 1. */
#define DNS_SHIM_WORKER_NOTE "libdnsshim_worker.unavailable"
/* What dns_shim__pool_run returns when parallelism went back to 1: the
** caller parses in its own interpreter.  Never a status. */
#define DNS_SHIM__POOL_SINGLE 1
DNS_SHIM__HIDDEN int dns_shim__pool_on(void);
DNS_SHIM__HIDDEN int32_t dns_shim__pool_run(const uint8_t *buf, int32_t len,
                                            const dns_shim_query *query,
                                            const dns_shim_callbacks *callbacks);
DNS_SHIM__HIDDEN int32_t dns_shim__pool_init(void);
DNS_SHIM__HIDDEN void dns_shim__pool_limit(void);
DNS_SHIM__HIDDEN int dns_shim__pool_started(void);
struct dnsshim_ares_result;
struct dnsshim_ares_message;
/* An interpreter's entry points, which the front calls: the worker image's,
** found by name in each instance; or, in a firmware object built with
** --parallelism N (pool.c compiled with DNS_SHIM__POOL_LINKED=N), those of
** the N copies linked into it under their own names, in the table
** dnsshim_build/firmware.py writes. */
typedef struct dns_shim__pool_entries {
    int32_t (*process)(uint8_t *, int32_t);
    int32_t (*process_with)(const uint8_t *, int32_t, const dns_shim_callbacks *);
    int32_t (*process_reply)(const uint8_t *, int32_t, const dns_shim_query *,
                             const dns_shim_callbacks *);
    int32_t (*init)(void);
    const char *(*last_error)(void);
    int32_t (*set_memory_limit)(size_t);
    int32_t (*set_parallelism)(uint32_t);
    void (*set_log_handler)(dns_shim_log_handler, void *);
    int32_t (*set_allocator)(const dns_shim_allocator *);
    int32_t (*account)(size_t *);
    /* libdnsshim_ares's bridge in the interpreter (csrc/ares/dnsshim_ares.c):
    ** the worker image's; NULL in a firmware object's copies, which have no
    ** c-ares layer. */
    int (*ares_compute)(int32_t, const unsigned char *, int, int, int,
                        struct dnsshim_ares_result *, uint64_t *);
    void (*ares_done)(uint64_t);
    int (*ares_message)(const unsigned char *, int, unsigned int,
                        struct dnsshim_ares_message *, uint64_t *);
    void (*ares_message_done)(uint64_t);
    /* The instance's fork handler, which the front runs inside its own
    ** (dns_shim__instance_fork).  Appended: libdnsshim_ares reads the
    ** members above. */
    void (*fork)(int);
} dns_shim__pool_entries;
#ifdef DNS_SHIM__POOL_LINKED
DNS_SHIM__HIDDEN extern const dns_shim__pool_entries dns_shim__pool_linked[DNS_SHIM__POOL_LINKED];
#endif
/* libdnsshim_ares's parses in the pool (its bridge, csrc/ares/dnsshim_ares.c).
** The private entries of libdnsshim: global, in the shared object's
** DNSSHIM_PRIVATE node and in the static archive, so that libdnsshim_ares,
** a library of its own, reaches it; no header a program sees declares it.
**
** dns_shim__pool_ares_take: with parallelism above 1, this thread takes an
** instance of the pool (its own, when it holds one already: a callback
** parsing with c-ares) and *entries are its entry points: DNS_SHIM_OK.  The
** thread holds it until dns_shim__pool_ares_give, so that the instance's
** result, which the caller copies, lives until the caller releases it in
** the same instance.  DNS_SHIM__POOL_SINGLE: parallelism is 1, the caller
** parses in its own interpreter.  Else the status, its detail for this
** thread: no interpreter could start (DNS_SHIM_ERR_INIT), or the
** interpreters have no c-ares layer (DNS_SHIM_ERR_UNSUPPORTED).
**
** dns_shim__own_init: starts the library's own runtime, the one
** libdnsshim_ares's own module attaches to, whatever the parallelism (where
** dns_shim_init, with parallelism above 1, starts the pool's instances
** alone): DNS_SHIM_OK, or DNS_SHIM_ERR_INIT with its detail.  So the c-ares
** layer never finds no interpreter when parallelism was raised between its
** routing and its start, and cffi never starts one of its own.
**
** dns_shim__own_start: the same, then then() under the start lock, once
** the runtime has started: libdnsshim_ares's module start, so that a fork
** waits for it as for the runtime's own start (the fork handler takes the
** start lock first) and a child never finds cffi's start-up lock of that
** module held by a thread it does not have. */
#define DNS_SHIM__PRIVATE_API __attribute__((visibility("default")))
DNS_SHIM__PRIVATE_API int32_t dns_shim__pool_ares_take(const dns_shim__pool_entries **entries);
DNS_SHIM__PRIVATE_API void dns_shim__pool_ares_give(void);
DNS_SHIM__PRIVATE_API int32_t dns_shim__own_init(void);
DNS_SHIM__PRIVATE_API int32_t dns_shim__own_start(void (*then)(void));
/* libnss_dnsshim's entry (failure.c): where the messages go while the
** program has set no handler of its own (the default is stderr, which a
** module glibc loads into any program must never write to). */
DNS_SHIM__PRIVATE_API void dns_shim__set_default_log_handler(dns_shim_log_handler handler,
                                                            void *ctx);

/* libnss_dnsshim's entry for a reply its own service client could not
** have parsed (api.c): dns_shim_process_reply in this process, the
** service not asked again. */
DNS_SHIM__PRIVATE_API int32_t dns_shim__process_reply_local(const uint8_t *dns_response,
                                                            int32_t response_len,
                                                            const dns_shim_query *query,
                                                            const dns_shim_callbacks *callbacks);

/* The shared library's front (front.c) drives the runtime's fork handler
** through this (dns_shim.c: dns_shim__instance_fork), as the pool's front
** drives an instance's; the front's own forwards to its runtime. */
DNS_SHIM__PRIVATE_API void dns_shim__runtime_fork(int phase);

/* dnsshimd's entry (service.c): the process is the parse service, and
** parses every message itself. */
DNS_SHIM__PRIVATE_API void dns_shim__service_off(void);
/* A request of libdnsshim_ares's to the parse service (csrc/ares/service.c):
** body is what follows the op in the request; the answer's head is checked
** here (a fault is a fallback), and read() is given its status and what
** follows, and returns 1 when it took them, else 0 with why.  Returns 1
** when read() took the answer; 0: compute in the process (the first
** fallback logged, as for every call); -1: DNS_SHIM_SERVICE_FALLBACK=no
** and the service cannot answer (logged once, at DNS_SHIM_LOG_ERROR). */
typedef int (*dns_shim__service_reader)(void *ctx, int32_t status, const uint8_t *payload,
                                        size_t n, char *why, size_t whylen);
DNS_SHIM__PRIVATE_API int dns_shim__service_exchange(uint16_t op, const uint8_t *body, size_t n,
                                                     dns_shim__service_reader read, void *ctx);

/* A failure detail without its status's name ("DNS_SHIM_ERR_INIT: "), for
** a detail that is quoted inside another (failure.c). */
DNS_SHIM__HIDDEN const char *dns_shim__reason(const char *detail);

#endif
