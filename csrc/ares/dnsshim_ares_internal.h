/*
** dnsshim_ares_internal.h: what crosses libdnsshim_ares's C units.
**
** libdnsshim_ares's C is several units: the bridge (dnsshim_ares.c), cffi's
** preamble, which sees cffi's generated code, and units compiled on their
** own: owned.c (the pointers this library handed out), check.c (what the
** Python side hands over, checked), structures.c (c-ares's structures
** built), free.c (the free functions, ares_strerror), parsers.c (the
** exported parsers) and dnsrec.c (ares_dns_parse).  Every name here but DNSSHIM_ARES_API's is hidden:
** neither exported by the shared object (its version script lists c-ares's
** names) nor left global in the static archive
** (dnsshim_build.pipeline._archive links the units into one object and
** makes hidden symbols local), so it cannot collide with a program's.
*/
#ifndef DNSSHIM_ARES_INTERNAL_H
#define DNSSHIM_ARES_INTERNAL_H

#include "ares/dnsshim_ares.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define DNSSHIM_ARES__HIDDEN __attribute__((visibility("hidden")))
/* c-ares's functions, exported (libdnsshim_ares.map says which). */
#define DNSSHIM_ARES_API __attribute__((visibility("default")))

/* The bridge's four calls into Python below are the worker image's entry
** points too (csrc/lib/pool.c: libdnsshim_ares's parses in the pool, each
** in an interpreter's own copy of this bridge): compiled with default
** visibility in the firmware object alone, whose link keeps the API global
** and nothing else; dnsshim_build/worker.py makes them global again in the
** image and exports them in its own node.  Hidden elsewhere. */
#ifdef DNS_SHIM__WORKER_ENTRY_VISIBLE
#  define DNSSHIM_ARES__WORKER_ENTRY __attribute__((visibility("default")))
#else
#  define DNSSHIM_ARES__WORKER_ENTRY DNSSHIM_ARES__HIDDEN
#endif

/* ------------------------------------------------------------------ */
/* ares_dns_parse's call into Python (the bridge)                       */

/* The plan of len octets at buf under the ARES_DNS_PARSE_* flags into *m:
** DNSSHIM_ARES_SUCCESS when *m holds the Python side's plan (its status
** says what it found), else the code to return (ARES_ENOTINITIALIZED: the
** runtime did not start; ARES_EBADRESP: the parser failed, logged).
** *token names the plan's memory until dnsshim_ares__message_done. */
DNSSHIM_ARES__WORKER_ENTRY int dnsshim_ares__message(const unsigned char *buf, int len,
                                                     unsigned int flags,
                                                     dnsshim_ares_message *m, uint64_t *token);
DNSSHIM_ARES__WORKER_ENTRY void dnsshim_ares__message_done(uint64_t token);

/* The functions of c-ares's that this library may pass a call on to, by
** index (DNSSHIM_ARES__FN(ares_parse_a_reply)...): dnsrec.c looks each up
** once in every c-ares library it finds.  (memory.c's, the library
** initialization, still go to dnsshim_ares__next.) */
#define DNSSHIM_ARES__FUNCTIONS(X)                                             \
    X(ares_parse_a_reply)                                                      \
    X(ares_parse_aaaa_reply)                                                   \
    X(ares_parse_ns_reply)                                                     \
    X(ares_parse_ptr_reply)                                                    \
    X(ares_parse_mx_reply)                                                     \
    X(ares_parse_srv_reply)                                                    \
    X(ares_parse_txt_reply)                                                    \
    X(ares_parse_txt_reply_ext)                                                \
    X(ares_parse_naptr_reply)                                                  \
    X(ares_parse_soa_reply)                                                    \
    X(ares_parse_caa_reply)                                                    \
    X(ares_parse_uri_reply)                                                    \
    X(ares_free_hostent)                                                       \
    X(ares_free_data)                                                          \
    X(ares_free_string)                                                        \
    X(ares_expand_name)                                                        \
    X(ares_expand_string)                                                      \
    X(ares_strerror)                                                           \
    X(ares_library_init)                                                       \
    X(ares_library_init_mem)                                                   \
    X(ares_library_cleanup)                                                    \
    X(ares_library_initialized)
#define DNSSHIM_ARES__FN_ENUM(name) DNSSHIM_ARES__FN_##name,
enum { DNSSHIM_ARES__FUNCTIONS(DNSSHIM_ARES__FN_ENUM) DNSSHIM_ARES__FNS };
#undef DNSSHIM_ARES__FN_ENUM
#define DNSSHIM_ARES__FN(name) DNSSHIM_ARES__FN_##name

/* `caller` is an address in the object that called the exported function
** (its __builtin_return_address(0), taken in that function): the program,
** a plugin, a Python extension loaded RTLD_LOCAL, or libcares itself.  The
** c-ares meant is the one that object reaches (dnsrec.c's
** dnsshim_ares__cares_for: in that object's own dependencies first, where
** a c-ares loaded RTLD_LOCAL is, then the next definition after this
** library, then the first in the process), found once per calling object.
**
** dnsshim_ares__modern: when that c-ares is 1.28 or later and calls this
** library's ares_dns_parse itself (dnsrec.c finds out once per c-ares):
** that c-ares's own definition of function fn (its classic parsers are
** wrappers over ares_dns_parse there), else NULL.
**
** dnsshim_ares__theirs: that c-ares's own definition of fn, whatever its
** version; when the caller reaches no c-ares dnsrec.c can use (none of
** 1.22 or later), the next definition after this library
** (dnsshim_ares__next), else NULL.  For the free functions, ares_strerror
** and the expand functions' fallback: what is not this library's is that
** c-ares's. */
DNSSHIM_ARES__HIDDEN void *dnsshim_ares__modern(int fn, const void *caller);
DNSSHIM_ARES__HIDDEN void *dnsshim_ares__theirs(int fn, const void *caller);

/* What this library allocates for the caller, from the allocator the
** program gave c-ares (memory.c): a zero size is one octet; calloc's
** product is checked.  (Not marked as an allocator pair for GCC: its
** analyser then loses pointers stored in heap arrays, the hostent's, and
** reports them leaked; valgrind and ASan check these at run time.) */
DNSSHIM_ARES__HIDDEN void dnsshim_ares__free(void *p);
DNSSHIM_ARES__HIDDEN void *dnsshim_ares__malloc(size_t size);
DNSSHIM_ARES__HIDDEN void *dnsshim_ares__calloc(size_t count, size_t size);

/* A line on stderr, "dnsshim_ares: <message>" (check.c). */
DNSSHIM_ARES__HIDDEN void dnsshim_ares__log(const char *message);

/* ------------------------------------------------------------------ */
/* What the Python side hands over (check.c)                            */

/* What a parse returns when the parser failed unexpectedly or handed over
** a result C cannot trust: c-ares's code for a reply, a name or a string
** it could not read; *name (when name is not NULL) gets the code's name,
** for the log. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__unreadable(int32_t kind, const char **name);
/* A result checked whole before C copies a byte of it: NULL, or what is
** wrong with it. */
DNSSHIM_ARES__HIDDEN const char *dnsshim_ares__check_result(int32_t kind,
                                                            const dnsshim_ares_result *r,
                                                            int len, int offset);

/* ------------------------------------------------------------------ */
/* One call into Python (the bridge, dnsshim_ares.c)                    */

/* The runtime started once; the message handed to the Python side for
** `kind`; its result checked (dnsshim_ares__check_result).  Returns
** r->status, c-ares's code; on success *r holds the result and *token
** names its memory, until dnsshim_ares__done(*token). */
DNSSHIM_ARES__WORKER_ENTRY int dnsshim_ares__compute(int32_t kind, const unsigned char *buf,
                                                     int len, int offset, int flags,
                                                     dnsshim_ares_result *r, uint64_t *token);
DNSSHIM_ARES__WORKER_ENTRY void dnsshim_ares__done(uint64_t token);

/* The shared library's runtime (csrc/ares/front.c, shim/layout.py's
** ARES_RUNTIME_LIBRARY): the whole library, its cffi module and the bridge,
** in the install form's worker folder (DNS_SHIM_WORKER_DIR), beside
** libdnsshim's.  The front, libdnsshim_ares.so.1, defines the four calls
** above itself: each loads the runtime at its first use and calls the
** runtime's own, which that object exports in one table
** (runtime_entries.c, libdnsshim_ares_runtime.map); the static archive
** and the worker image are one object, with the bridge's. */
#define DNSSHIM_ARES__RUNTIME_FILE "libdnsshim_ares_runtime.so.1"
/* What the runtime exports (runtime_entries.c): the bridge's four calls,
** and the table's own size (a runtime of another release is refused). */
typedef struct dnsshim_ares__entries {
    size_t size;
    int (*compute)(int32_t, const unsigned char *, int, int, int, dnsshim_ares_result *,
                   uint64_t *);
    void (*done)(uint64_t);
    int (*message)(const unsigned char *, int, unsigned int, dnsshim_ares_message *,
                   uint64_t *);
    void (*message_done)(uint64_t);
} dnsshim_ares__entries;
#define DNSSHIM_ARES__RUNTIME_ENTRIES "dnsshim_ares__runtime_entries"

/* ------------------------------------------------------------------ */
/* Through the parse service, or else the bridge (service.c)            */

/* What parsers.c and dnsrec.c call: as dnsshim_ares__compute and
** dnsshim_ares__done, dnsshim_ares__message and dnsshim_ares__message_done
** do, the result computed by dnsshimd where one answers, else by the
** bridge in this process. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__get(int32_t kind, const unsigned char *buf, int len,
                                           int offset, int flags, dnsshim_ares_result *r,
                                           uint64_t *token);
DNSSHIM_ARES__HIDDEN void dnsshim_ares__got(uint64_t token);
DNSSHIM_ARES__HIDDEN int dnsshim_ares__plan(const unsigned char *buf, int len, unsigned int flags,
                                            dnsshim_ares_message *m, uint64_t *token);
DNSSHIM_ARES__HIDDEN void dnsshim_ares__plan_done(uint64_t token);
/* Whether the plan this thread holds is the parse service's. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__plan_served(void);

/* One call through the service: what it asked for (kind, the message's
** length and the offset, for the result's check; message set for
** ares_dns_parse, else result), and, once its answer is read, the status
** and the blocks result or message points into. */
typedef struct dnsshim_ares__block dnsshim_ares__block;
typedef struct dnsshim_ares__call {
    int32_t kind;
    int len, offset;
    int status;
    dnsshim_ares_result *result;
    dnsshim_ares_message *message;
    dnsshim_ares__block *blocks;
} dnsshim_ares__call;

/* The reader of the service's answer after its head, untrusted (ctx: the
** call): 1 with the call's status, result or message and blocks set (free
** them with dnsshim_ares__blocks_free once copied), else 0 with why and
** nothing held.  tests/fuzz/fuzz_service_ares.c drives it. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__read(void *ctx, int32_t status, const uint8_t *payload,
                                            size_t n, char *why, size_t whylen);
DNSSHIM_ARES__HIDDEN void dnsshim_ares__blocks_free(dnsshim_ares__block *blocks);
/* The service's writers of a result and of a plan (the format above
** dnsshim_ares__read's, in service.c's comment); w a dns_shim__wr
** (csrc/lib/service_wire.h). */
struct dns_shim__wr;
DNSSHIM_ARES__HIDDEN void dnsshim_ares__write_result(struct dns_shim__wr *w,
                                                     const dnsshim_ares_result *r);
DNSSHIM_ARES__HIDDEN void dnsshim_ares__write_message(struct dns_shim__wr *w,
                                                      const dnsshim_ares_message *m);

/* The kind of an ares_dns_parse request (the classic kinds are
** DNSSHIM_ARES_KIND_*). */
#define DNSSHIM_ARES__WIRE_MESSAGE 0x100
/* dnsshimd's call (exported: csrc/service/dnsshimd.c loads this library):
** a request's body after its op read (untrusted) and computed here.
** DNSSHIM_ARES__SERVE_OK: *payload (malloc'd, *payload_len octets) and
** *status are the answer; _FAULT: the computation could not run (no
** runtime, no memory), *status says which; _MALFORMED: not a request. */
#define DNSSHIM_ARES__SERVE_OK 0
#define DNSSHIM_ARES__SERVE_FAULT 1
#define DNSSHIM_ARES__SERVE_MALFORMED 2
DNSSHIM_ARES_API int dnsshim_ares__serve(const uint8_t *body, size_t n, uint8_t **payload,
                                         size_t *payload_len, int32_t *status);

/* ------------------------------------------------------------------ */
/* What this library allocated (owned.c)                                */

/* Hostents and strings have no room for a mark: the pointers handed out
** are kept in a set.  own: records p (0), or -1 when out of memory;
** disown: forgets p, 1 if it was ours. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__own(void *p);
DNSSHIM_ARES__HIDDEN int dnsshim_ares__disown(const void *p);

/* fork() from any thread at any moment (owned.c): the forking thread takes
** this library's locks before the fork, in the order they nest (dnsrec.c's
** table of c-ares libraries, memory.c's allocator, owned.c's set), and
** gives them back on both sides, so that no thread of the child finds one
** held by a thread it does not have.  Each is taken with
** dnsshim_ares__lock, which registers the handler first, once.  None is
** held while libdnsshim's own are taken, nor the other way round. */
enum { DNSSHIM_ARES__FORK_PREPARE, DNSSHIM_ARES__FORK_AFTER };
DNSSHIM_ARES__HIDDEN void dnsshim_ares__fork_watch(void);
static inline void dnsshim_ares__lock(pthread_mutex_t *mutex)
{
    dnsshim_ares__fork_watch();
    pthread_mutex_lock(mutex);
}
static inline void dnsshim_ares__fork_mutex(pthread_mutex_t *mutex, int phase)
{
    if (phase == DNSSHIM_ARES__FORK_PREPARE)
        pthread_mutex_lock(mutex);
    else
        pthread_mutex_unlock(mutex);
}
DNSSHIM_ARES__HIDDEN void dnsshim_ares__libs_fork(int phase);
DNSSHIM_ARES__HIDDEN void dnsshim_ares__mem_fork(int phase);

/* The next definition of a c-ares function after this library (the real
** c-ares's, when the program links it too), or NULL (free.c): in the
** process's global scope, which holds no c-ares loaded RTLD_LOCAL. */
DNSSHIM_ARES__HIDDEN void *dnsshim_ares__next(const char *name);

/* c-ares's ares_datatype values (src/lib/ares_data.h). */
enum {
    DNSSHIM_ARES__SRV = 2,
    DNSSHIM_ARES__TXT = 3,
    DNSSHIM_ARES__TXT_EXT = 4,
    DNSSHIM_ARES__MX = 6,
    DNSSHIM_ARES__NAPTR = 7,
    DNSSHIM_ARES__SOA = 8,
    DNSSHIM_ARES__URI = 9,
    DNSSHIM_ARES__CAA = 15
};
#define DNSSHIM_ARES__MARK 0xd5a5u /* c-ares's is 0xbead */

/* ares_free_data's structures carry a header, as c-ares's own do (struct
** ares_data: type, mark, then the data): the same layout with our own
** mark, so that looking at the header of a c-ares pointer reads c-ares's
** header. */
typedef struct dnsshim_ares__data {
    unsigned int type;
    unsigned int mark;
    union {
        dnsshim_ares_srv_reply srv;
        dnsshim_ares_txt_reply txt;
        dnsshim_ares_txt_ext txt_ext;
        dnsshim_ares_mx_reply mx;
        dnsshim_ares_naptr_reply naptr;
        dnsshim_ares_soa_reply soa;
        dnsshim_ares_uri_reply uri;
        dnsshim_ares_caa_reply caa;
    } data;
} dnsshim_ares__data;

_Static_assert(offsetof(dnsshim_ares__data, data) == 8,
               "the data sits where c-ares's struct ares_data has it");

/* ------------------------------------------------------------------ */
/* Building c-ares's structures (structures.c)                          */

/* A NUL-terminated copy of s (binary safe: len octets, then a NUL). */
DNSSHIM_ARES__HIDDEN unsigned char *dnsshim_ares__copy(const dnsshim_ares_bytes *s);
/* A copy as c-ares makes it with strncpy: cut at the first NUL, the rest of
** the len octets zeroed. */
DNSSHIM_ARES__HIDDEN unsigned char *dnsshim_ares__copy_cut(const dnsshim_ares_bytes *s);
/* A hostent from the result, owned (dnsshim_ares__own): r->name,
** r->aliases, and naddrs addresses of length octets at addrs in one
** block.  DNSSHIM_ARES_SUCCESS or DNSSHIM_ARES_ENOMEM; *out NULL on
** failure. */
DNSSHIM_ARES__HIDDEN int dnsshim_ares__hostent(const dnsshim_ares_result *r, int addrtype,
                                               int length, const void *addrs, size_t naddrs,
                                               dnsshim_ares_hostent **out);
/* Frees a hostent laid out as c-ares lays it out (not looked up in the
** set: the caller has disowned it, or never owned it). */
DNSSHIM_ARES__HIDDEN void dnsshim_ares__free_hostent_fields(dnsshim_ares_hostent *host);
/* One list element of ares_datatype `type` from item *it, or NULL when out
** of memory: its header, whose data (&->data, what c-ares hands out) is
** freed with ares_free_data. */
DNSSHIM_ARES__HIDDEN dnsshim_ares__data *dnsshim_ares__element(unsigned int type,
                                                               const dnsshim_ares_item *it);

/* c-ares's free function for these, exported (free.c). */
DNSSHIM_ARES_API void ares_free_data(void *dataptr);

#endif
