/*
** pool.c: parallelism (dns_shim_set_parallelism), a unit of libdnsshim's C
** compiled on its own.
**
** With parallelism n > 1 the library parses in up to n private interpreters
** at once.  Each is an instance of the worker image (libdnsshim_worker.so,
** installed beside the library; dnsshim_build/worker.py): the whole runtime,
** its own CPython, dnspython and cffi's backend, every symbol local but the
** API.  An instance is the image copied into a memfd and dlopen()ed
** RTLD_LOCAL by the memfd's /proc/self/fd path; the memfd stays open while
** the instance lives, since the dynamic loader matches a path it has loaded
** before by its name, and a closed descriptor's number comes back.
**
** This unit is the front.  A call is checked here as ever (api.c), then
** dns_shim__run hands it to dns_shim__pool_run: it takes an idle instance
** (starting one when fewer than n run), makes the call with the instance's
** own entry point, the registered set passed explicitly, and copies the
** instance's failure detail into the calling thread's.  Callbacks run in
** the calling thread while it holds the instance; a call a callback makes
** into the library goes to the same instance.  Each instance logs through
** the program's handler, allocates through the program's allocator, and
** counts its memory in the pool's one account (dns_shim__pool_account),
** under the one limit.
**
** libdnsshim_ares parses in the same pool: its bridge takes an instance
** (dns_shim__pool_ares_take), has the instance's own copy of the bridge
** compute the result, copies it into c-ares's structures in the calling
** thread, releases it in the instance and gives the instance back
** (dns_shim__pool_ares_give).
**
** An instance is never unloaded: its runtime has thread-exit hooks in its
** own code (cffi's thread state).  Lowering n parks the instances above it,
** which keep their memory until the process exits and serve again when n is
** raised.  An instance that cannot start is never used; the others serve.
** After fork() the child keeps the instances that were idle, and the one
** the forking thread held; the others were mid-call in threads the child
** does not have: their slots take new instances on demand (a firmware
** object's copies are dropped).
**
** The worker image contains this unit too: the front tells each instance
** its parallelism is 1 before anything else, so an instance never reads
** DNS_SHIM_PARALLELISM nor makes a pool of its own.
**
** A firmware object built with --parallelism N (dnsshim_build/firmware.py)
** has no image to load: it links N copies of the runtime, their entry
** points renamed, beside its own, and this unit compiled with
** DNS_SHIM__POOL_LINKED=N takes instance i's entry points from the table of
** the copies (dns_shim__pool_linked).  Everything else is the same.
*/
#define _GNU_SOURCE 1
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* An instance's state.  STARTING: a thread loads and starts it, outside the
** lock; it becomes BUSY (the thread that started it parses on it at once)
** or IDLE (dns_shim_init), or FAILED.  A thread never waits for an instance
** while it holds another: dns_shim_init starts what has not started and
** waits only for starts, which wait for nothing. */
enum { DNS_SHIM__EMPTY, DNS_SHIM__IDLE, DNS_SHIM__BUSY, DNS_SHIM__FAILED, DNS_SHIM__DROPPED,
       DNS_SHIM__STARTING };

typedef struct dns_shim__instance {
    int state;
    int ready; /* started: its entry points may be called (read under the lock) */
    int fd;
    void *handle;
    dns_shim__pool_entries call;
} dns_shim__instance;

static pthread_mutex_t dns_shim__pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dns_shim__pool_idle = PTHREAD_COND_INITIALIZER;
static dns_shim__instance dns_shim__pool[DNS_SHIM_PARALLELISM_MAX];
static uint32_t dns_shim__pool_n = 1;     /* the parallelism; 0 and 1 alike (written under
                                          ** the lock, read atomically) */
static int dns_shim__pool_chosen = 0;     /* set by dns_shim_set_parallelism */
static pthread_once_t dns_shim__pool_env_once = PTHREAD_ONCE_INIT;
static size_t dns_shim__pool_held = 0;    /* the instances' one account (atomic) */
static char dns_shim__pool_start_error[DNS_SHIM__ERROR_SIZE]; /* the last start failure */
/* The instance this thread holds: a callback's own calls go to it. */
static __thread dns_shim__instance *dns_shim__pool_mine = NULL;

/* ------------------------------------------------------------------ */
/* The interpreters                                                     */

#ifdef DNS_SHIM__POOL_LINKED

/* A firmware object built with --parallelism N: N copies linked in, no
** image.  Returns 0, or -1 with the reason for this thread. */
static int dns_shim__pool_available(uint32_t n)
{
    if (n <= DNS_SHIM__POOL_LINKED)
        return 0;
    dns_shim__fail(DNS_SHIM_ERR_UNSUPPORTED, "parallelism %" PRIu32 " needs %" PRIu32
                   " interpreters, and this firmware object has %d: build it with python -m "
                   "shim firmware --parallelism %" PRIu32, n, n, DNS_SHIM__POOL_LINKED, n);
    return -1;
}

/* Why the copies cannot parse for libdnsshim_ares. */
#define DNS_SHIM__POOL_NO_ARES "a firmware object's copies carry libdnsshim alone"

/* Instance number index (below n, so below DNS_SHIM__POOL_LINKED): the
** copy of that number. */
static int32_t dns_shim__pool_load(dns_shim__instance *inst, unsigned index, uint32_t n)
{
    (void)n;
    inst->call = dns_shim__pool_linked[index];
    return DNS_SHIM_OK;
}

#else /* the worker image */

/* The install's note beside the image's path (DNS_SHIM_WORKER_NOTE): why
** it built no image, its first line, into why (printable ASCII; other
** octets become '?').  "" when there is no note. */
static void dns_shim__pool_note(const char *image, char *why, size_t size)
{
    char path[PATH_MAX];
    const char *slash = strrchr(image, '/');
    ssize_t got = -1;
    size_t i;
    int fd;

    why[0] = '\0';
    if (slash == NULL || size < 2 ||
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - image), image,
                 DNS_SHIM_WORKER_NOTE) >= (int)sizeof path)
        return;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return;
    do
        got = read(fd, why, size - 1);
    while (got < 0 && errno == EINTR);
    close(fd);
    if (got <= 0) {
        why[0] = '\0';
        return;
    }
    why[got] = '\0';
    for (i = 0; why[i] != '\0'; i++) {
        if (why[i] == '\n' || why[i] == '\r') {
            why[i] = '\0';
            break;
        }
        if ((unsigned char)why[i] < 0x20 || (unsigned char)why[i] > 0x7e)
            why[i] = '?';
    }
}

/* The worker image's path: in DNS_SHIM_WORKER_DIR (a prefix install's
** private folder) or beside the file this code is in (the shared library,
** or the program a static archive was linked into), its links resolved.
** Returns 0, or -1 with the reason for this thread
** (DNS_SHIM_ERR_UNSUPPORTED): the install's note where it left one. */
static int dns_shim__pool_image(char *path, size_t size)
{
    Dl_info info;
    char *real = NULL;
    const char *slash = NULL;
    char why[512];
    struct stat st;
    int written = -1;

    if (dladdr((void *)&dns_shim__pool_image, &info) != 0 && info.dli_fname != NULL &&
        (real = realpath(info.dli_fname, NULL)) != NULL)
        slash = strrchr(real, '/');
    {
        /* the shared library's runtime is in the worker folder itself */
        int in_it = slash != NULL && strcmp(slash + 1, DNS_SHIM__RUNTIME_FILE) == 0;
        if (slash != NULL)
            written = snprintf(path, size, "%.*s/%s%s%s", (int)(slash - real), real,
                               in_it ? "" : DNS_SHIM_WORKER_DIR,
                               !in_it && DNS_SHIM_WORKER_DIR[0] ? "/" : "",
                               DNS_SHIM_WORKER_IMAGE);
    }
    free(real);
    if (written < 0 || (size_t)written >= size) {
        dns_shim__fail(DNS_SHIM_ERR_UNSUPPORTED, "parallelism above 1 needs the worker image "
                       "beside the library, and the library's own path is unknown");
        return -1;
    }
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        dns_shim__pool_note(path, why, sizeof why);
        if (why[0] != '\0')
            dns_shim__fail(DNS_SHIM_ERR_UNSUPPORTED, "parallelism above 1 needs the worker "
                           "image %s, which the install could not build: %s", path, why);
        else
            dns_shim__fail(DNS_SHIM_ERR_UNSUPPORTED, "parallelism above 1 needs the worker "
                           "image %s, which this installation does not have: pip install . "
                           "and build_ffi.py --prefix build it where Debian's python3-dev and "
                           "libffi-dev are installed", path);
        return -1;
    }
    return 0;
}

/* Why an image without libdnsshim_ares's bridge cannot parse for it. */
#define DNS_SHIM__POOL_NO_ARES "the worker image beside the library was built without it; " \
    "install the library again"

/* Whether n interpreters can run: 0, or -1 with the reason for this
** thread. */
static int dns_shim__pool_available(uint32_t n)
{
    char image[PATH_MAX];
    return n > 1 ? dns_shim__pool_image(image, sizeof image) : 0;
}

/* Copies the image into a new memfd: the descriptor, or -1 (errno). */
static int dns_shim__pool_copy(const char *path)
{
    char chunk[65536];
    int in = -1, out = -1, saved;
    ssize_t got;

    in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    out = memfd_create("libdnsshim_worker", MFD_CLOEXEC);
    if (out < 0)
        goto fail;
    while ((got = read(in, chunk, sizeof chunk)) != 0) {
        ssize_t put = 0;
        if (got < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        while (put < got) {
            ssize_t n = write(out, chunk + put, (size_t)(got - put));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                goto fail;
            put += n;
        }
    }
    close(in);
    return out;
fail:
    saved = errno;
    close(in);
    if (out >= 0)
        close(out);
    errno = saved;
    return -1;
}

/* The image's entry points by name, where each goes, and whether an image
** may lack it: libdnsshim_ares's bridge, in an image made from a firmware
** object built without it (its parses are then refused, not the image). */
static const struct {
    const char *name;
    size_t offset;
    int optional;
} dns_shim__pool_symbols[] = {
    {"process_dns_response", offsetof(dns_shim__pool_entries, process), 0},
    {"dns_shim_process", offsetof(dns_shim__pool_entries, process_with), 0},
    {"dns_shim_process_reply", offsetof(dns_shim__pool_entries, process_reply), 0},
    {"dns_shim_init", offsetof(dns_shim__pool_entries, init), 0},
    {"dns_shim_last_error", offsetof(dns_shim__pool_entries, last_error), 0},
    {"dns_shim_set_memory_limit", offsetof(dns_shim__pool_entries, set_memory_limit), 0},
    {"dns_shim_set_parallelism", offsetof(dns_shim__pool_entries, set_parallelism), 0},
    {"dns_shim_set_log_handler", offsetof(dns_shim__pool_entries, set_log_handler), 0},
    {"dns_shim_set_allocator", offsetof(dns_shim__pool_entries, set_allocator), 0},
    {"dns_shim__pool_account", offsetof(dns_shim__pool_entries, account), 0},
    {"dnsshim_ares__compute", offsetof(dns_shim__pool_entries, ares_compute), 1},
    {"dnsshim_ares__done", offsetof(dns_shim__pool_entries, ares_done), 1},
    {"dnsshim_ares__message", offsetof(dns_shim__pool_entries, ares_message), 1},
    {"dnsshim_ares__message_done", offsetof(dns_shim__pool_entries, ares_message_done), 1},
    {"dns_shim__instance_fork", offsetof(dns_shim__pool_entries, fork), 0},
};

/* Loads instance number index (0-based) of n: the image copied into a
** memfd and dlopen()ed, its entry points found.  Returns DNS_SHIM_OK, or
** DNS_SHIM_ERR_INIT with the reason for this thread. */
static int32_t dns_shim__pool_load(dns_shim__instance *inst, unsigned index, uint32_t n)
{
    char image[PATH_MAX], fd_path[64];
    size_t i;

    if (dns_shim__pool_image(image, sizeof image) != 0)
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "cannot start interpreter %u of %" PRIu32
                              ": %s", index + 1, n, dns_shim__reason(dns_shim_last_error()));
    inst->fd = dns_shim__pool_copy(image);
    if (inst->fd < 0)
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "cannot start interpreter %u of %" PRIu32
                              ": %s could not be copied into memory (%s)", index + 1, n, image,
                              strerror(errno));
    snprintf(fd_path, sizeof fd_path, "/proc/self/fd/%d", inst->fd);
    inst->handle = dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
    if (inst->handle == NULL) {
        const char *why = dlerror();
        close(inst->fd); /* nothing of it was loaded */
        inst->fd = -1;
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "cannot start interpreter %u of %" PRIu32
                              ": the worker image %s does not load (%s): install the library "
                              "again", index + 1, n, image, why ? why : "no reason given");
    }
    for (i = 0; i < sizeof dns_shim__pool_symbols / sizeof dns_shim__pool_symbols[0]; i++) {
        void *found = dlsym(inst->handle, dns_shim__pool_symbols[i].name);
        if (found == NULL && !dns_shim__pool_symbols[i].optional)
            return dns_shim__fail(DNS_SHIM_ERR_INIT, "cannot start interpreter %u of %" PRIu32
                                  ": the worker image %s has no %s: it is not this library's; "
                                  "install the library again", index + 1, n, image,
                                  dns_shim__pool_symbols[i].name);
        memcpy((char *)&inst->call + dns_shim__pool_symbols[i].offset, &found, sizeof found);
    }
    return DNS_SHIM_OK;
}

#endif

/* The program's log handler, for every instance: the instance's messages
** go where the library's own go. */
static void dns_shim__pool_log(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    dns_shim__log_level(level, message);
}

/* Loads and starts instance number index (0-based) of n, outside the
** pool's lock.  Returns DNS_SHIM_OK, or DNS_SHIM_ERR_INIT with the reason
** for this thread; a failed instance is never used. */
static int32_t dns_shim__pool_start(dns_shim__instance *inst, unsigned index, uint32_t n)
{
    dns_shim_allocator host;
    int32_t rc = dns_shim__pool_load(inst, index, n);

    if (rc != DNS_SHIM_OK)
        return rc;
    /* Before the instance starts: its fork handler the front's (first: before
    ** any lock of the instance is taken), one interpreter, the program's
    ** handler and allocator, the pool's account and limit. */
    inst->call.fork(DNS_SHIM__FORK_DRIVEN);
    inst->call.set_parallelism(1);
    inst->call.set_log_handler(dns_shim__pool_log, NULL);
    rc = dns_shim__memory_host(&host) ? inst->call.set_allocator(&host) : DNS_SHIM_OK;
    if (rc == DNS_SHIM_OK)
        rc = inst->call.account(&dns_shim__pool_held);
    if (rc == DNS_SHIM_OK)
        rc = inst->call.init();
    if (rc != DNS_SHIM_OK) /* its detail, without its status's name: "cannot start: ..." */
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "interpreter %u of %" PRIu32 ": %s",
                              index + 1, n, dns_shim__reason(inst->call.last_error()));
    return DNS_SHIM_OK;
}

/* ------------------------------------------------------------------ */
/* Taking and giving back                                               */

/* The pool's part of the fork handler (dns_shim_internal.h): its lock is
** held across fork(); in the child, instances busy in other threads are
** dropped. */
void dns_shim__pool_fork(int phase)
{
    unsigned i;
    if (phase != DNS_SHIM__FORK_CHILD) {
        dns_shim__fork_mutex(&dns_shim__pool_lock, phase);
        return;
    }
    /* An instance busy in another thread is that thread's, which the child
    ** does not have.  From the image, its slot is emptied for a new
    ** instance, started on demand as any other (the old one stays loaded,
    ** unused, its memfd open, so that the new one's path is another); a
    ** firmware object's copy is dropped (it has no other). */
    for (i = 0; i < DNS_SHIM_PARALLELISM_MAX; i++)
        if ((dns_shim__pool[i].state == DNS_SHIM__BUSY ||
             dns_shim__pool[i].state == DNS_SHIM__STARTING) &&
            &dns_shim__pool[i] != dns_shim__pool_mine) {
#ifdef DNS_SHIM__POOL_LINKED
            dns_shim__pool[i].state = DNS_SHIM__DROPPED;
#else
            memset(&dns_shim__pool[i], 0, sizeof dns_shim__pool[i]);
            dns_shim__pool[i].state = DNS_SHIM__EMPTY;
            dns_shim__pool[i].fd = -1;
#endif
        }
    pthread_cond_init(&dns_shim__pool_idle, NULL);
    dns_shim__fork_mutex(&dns_shim__pool_lock, phase);
}

/* The instances' fork handlers, inside the front's (dns_shim_internal.h):
** those loaded when the fork began.  The start lock is held (the front's
** handler took it, or a Python program's os.fork() does not wait: then an
** instance another thread starts is not among them), so no instance is
** being loaded meanwhile; the pool's lock is taken only to read the slots.
** In the child, the handlers run before the front's pool part empties the
** slots of instances busy in other threads. */
static void (*dns_shim__pool_forking[DNS_SHIM_PARALLELISM_MAX])(int);
static unsigned dns_shim__pool_nforking = 0;

void dns_shim__pool_instances_fork(int phase)
{
    unsigned i;
    if (phase == DNS_SHIM__FORK_PREPARE) {
        dns_shim__pool_nforking = 0;
        pthread_mutex_lock(&dns_shim__pool_lock);
        for (i = 0; i < DNS_SHIM_PARALLELISM_MAX; i++)
            if (dns_shim__pool[i].ready && dns_shim__pool[i].call.fork != NULL)
                dns_shim__pool_forking[dns_shim__pool_nforking++] = dns_shim__pool[i].call.fork;
        pthread_mutex_unlock(&dns_shim__pool_lock);
    }
    for (i = 0; i < dns_shim__pool_nforking; i++) /* given back in the reverse order */
        dns_shim__pool_forking[phase == DNS_SHIM__FORK_PREPARE ? i
                                                               : dns_shim__pool_nforking - 1 - i](phase);
}

/* Every ready instance's limit made the library's, outside the pool's lock:
** an instance's dns_shim_set_memory_limit takes the instance's own locks,
** which are never taken under the front's (its fork handler takes them
** first).  Applied until the limit read is still the limit after: a call
** that read an older one while another set a newer applies the newer too,
** so that the last write to each instance is the latest limit. */
static void dns_shim__pool_apply_limit(dns_shim__instance *only)
{
    int32_t (*set[DNS_SHIM_PARALLELISM_MAX])(size_t);
    unsigned i, n;
    size_t bytes, then;

    bytes = __atomic_load_n(&dns_shim__limit, __ATOMIC_SEQ_CST);
    do {
        n = 0;
        if (only != NULL) {
            set[n++] = only->call.set_memory_limit;
        } else {
            dns_shim__lock(&dns_shim__pool_lock);
            for (i = 0; i < DNS_SHIM_PARALLELISM_MAX; i++)
                if (dns_shim__pool[i].ready)
                    set[n++] = dns_shim__pool[i].call.set_memory_limit;
            pthread_mutex_unlock(&dns_shim__pool_lock);
        }
        for (i = 0; i < n; i++)
            set[i](bytes);
        then = bytes;
        bytes = __atomic_load_n(&dns_shim__limit, __ATOMIC_SEQ_CST);
    } while (bytes != then);
}

/* Starts instance number index of n, which this thread marked STARTING,
** outside the lock; then, under it, the instance becomes `then` (BUSY: this
** thread parses on it; IDLE: anyone may) or FAILED, and the waiters are
** told.  Returns DNS_SHIM_OK, or DNS_SHIM_ERR_INIT with the reason for this
** thread (logged). */
static int32_t dns_shim__pool_bring_up(dns_shim__instance *inst, unsigned index, uint32_t n,
                                       int then)
{
    int32_t rc;

    /* One start at a time (dns_shim__start_lock): each instance's own lock
    ** does not cover the C library's static buffers its imports use. */
    dns_shim__start_enter();
    rc = dns_shim__pool_start(inst, index, n);
    dns_shim__start_leave();

    if (rc != DNS_SHIM_OK)
        dns_shim__log(dns_shim_last_error());
    else /* the limit before any call can take it */
        dns_shim__pool_apply_limit(inst);
    dns_shim__lock(&dns_shim__pool_lock);
    if (rc != DNS_SHIM_OK) {
        inst->state = DNS_SHIM__FAILED;
        /* kept without its status's name: the calls that find no
        ** interpreter to start say it after theirs */
        snprintf(dns_shim__pool_start_error, sizeof dns_shim__pool_start_error, "%s",
                 dns_shim__reason(dns_shim_last_error()));
    } else {
        /* Ready: from now on dns_shim__pool_limit reaches it too. */
        inst->ready = 1;
        if (inst->state == DNS_SHIM__STARTING) /* not dropped by a fork meanwhile */
            inst->state = then;
    }
    pthread_cond_broadcast(&dns_shim__pool_idle);
    pthread_mutex_unlock(&dns_shim__pool_lock);
    /* A limit set between the apply above and ready, which that call's
    ** dns_shim__pool_limit did not reach here. */
    if (rc == DNS_SHIM_OK)
        dns_shim__pool_apply_limit(inst);
    return rc;
}

/* An instance for this call: this thread's own, when a callback calls
** back, or an idle one, or one started now.  NULL when none can serve (the
** reason for this thread) or when parallelism is 1 again (*single set). */
static dns_shim__instance *dns_shim__pool_take(int *single)
{
    dns_shim__instance *inst = NULL;
    unsigned i, index = 0;
    uint32_t n;

    *single = 0;
    if (dns_shim__pool_mine != NULL)
        return dns_shim__pool_mine;
    dns_shim__lock(&dns_shim__pool_lock);
    for (;;) {
        int running = 0;
        n = dns_shim__pool_n;
        if (n <= 1) {
            *single = 1;
            break;
        }
        for (i = 0; i < n && inst == NULL; i++)
            if (dns_shim__pool[i].state == DNS_SHIM__IDLE)
                inst = &dns_shim__pool[i];
        if (inst != NULL) {
            inst->state = DNS_SHIM__BUSY;
            break;
        }
        for (i = 0; i < n && inst == NULL; i++)
            if (dns_shim__pool[i].state == DNS_SHIM__EMPTY) {
                inst = &dns_shim__pool[i];
                index = i;
            }
        if (inst != NULL)
            break;
        for (i = 0; i < n; i++)
            running += dns_shim__pool[i].state == DNS_SHIM__BUSY ||
                       dns_shim__pool[i].state == DNS_SHIM__STARTING;
        if (running == 0) {
            dns_shim__fail(DNS_SHIM_ERR_INIT, "no interpreter of the %" PRIu32 " could start; "
                           "the last: %s", n, dns_shim__pool_start_error);
            break;
        }
        pthread_cond_wait(&dns_shim__pool_idle, &dns_shim__pool_lock);
    }
    if (inst == NULL || inst->state == DNS_SHIM__BUSY) {
        pthread_mutex_unlock(&dns_shim__pool_lock);
        if (inst != NULL)
            dns_shim__pool_mine = inst;
        return inst;
    }
    inst->state = DNS_SHIM__STARTING; /* no other call takes it */
    pthread_mutex_unlock(&dns_shim__pool_lock);
    if (dns_shim__pool_bring_up(inst, index, n, DNS_SHIM__BUSY) != DNS_SHIM_OK)
        return NULL;
    dns_shim__pool_mine = inst;
    return inst;
}

static void dns_shim__pool_give(dns_shim__instance *inst)
{
    dns_shim__pool_mine = NULL;
    dns_shim__lock(&dns_shim__pool_lock);
    if (inst->state == DNS_SHIM__BUSY)
        inst->state = DNS_SHIM__IDLE;
    pthread_cond_broadcast(&dns_shim__pool_idle);
    pthread_mutex_unlock(&dns_shim__pool_lock);
}

/* ------------------------------------------------------------------ */
/* The front                                                            */

/* DNS_SHIM_PARALLELISM, once, unless the program chose: a value this
** library cannot take is logged and left, and parallelism stays 1. */
static void dns_shim__pool_read_env(void)
{
    const char *text = dns_shim__getenv("DNS_SHIM_PARALLELISM");
    char *end = NULL;
    unsigned long n;
    char message[DNS_SHIM__ERROR_SIZE + 128];

    if (text == NULL || text[0] == '\0')
        return;
    errno = 0;
    n = strtoul(text, &end, 10);
    dns_shim__lock(&dns_shim__pool_lock);
    if (dns_shim__pool_chosen) {
        pthread_mutex_unlock(&dns_shim__pool_lock);
        return;
    }
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
        n > DNS_SHIM_PARALLELISM_MAX) {
        pthread_mutex_unlock(&dns_shim__pool_lock);
        snprintf(message, sizeof message, "DNS_SHIM_PARALLELISM=%.64s is not a number from 0 "
                 "to %d: parallelism stays 1", text, DNS_SHIM_PARALLELISM_MAX);
        dns_shim__log_level(DNS_SHIM_LOG_WARNING, message);
        return;
    }
    if (dns_shim__pool_available((uint32_t)n) != 0) {
        pthread_mutex_unlock(&dns_shim__pool_lock);
        snprintf(message, sizeof message, "DNS_SHIM_PARALLELISM=%lu is not taken, parallelism "
                 "stays 1: %s", n, dns_shim_last_error());
        dns_shim__error[0] = '\0';
        dns_shim__log_level(DNS_SHIM_LOG_WARNING, message);
        return;
    }
    __atomic_store_n(&dns_shim__pool_n, (uint32_t)n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dns_shim__pool_lock);
}

DNS_SHIM_API int32_t dns_shim_set_parallelism(uint32_t n)
{
    if (n > DNS_SHIM_PARALLELISM_MAX)
        return dns_shim__fail(DNS_SHIM_ERR_BAD_ARGUMENT, "parallelism %" PRIu32 " is above "
                              "%d, the most this library runs", n, DNS_SHIM_PARALLELISM_MAX);
    if (dns_shim__pool_available(n) != 0)
        return DNS_SHIM_ERR_UNSUPPORTED;
    dns_shim__lock(&dns_shim__pool_lock);
    dns_shim__pool_chosen = 1;
    __atomic_store_n(&dns_shim__pool_n, n, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&dns_shim__pool_idle); /* waiters re-read n */
    pthread_mutex_unlock(&dns_shim__pool_lock);
    return dns_shim__ok();
}

/* Whether calls go to the pool (parallelism above 1): no lock taken, so
** that one interpreter's callers do not meet here. */
int dns_shim__pool_on(void)
{
    pthread_once(&dns_shim__pool_env_once, dns_shim__pool_read_env);
    return dns_shim__pool_mine != NULL ||
           __atomic_load_n(&dns_shim__pool_n, __ATOMIC_ACQUIRE) > 1;
}

/* A checked call through an instance: DNS_SHIM__POOL_SINGLE when
** parallelism went back to 1 meanwhile (the caller parses itself). */
int32_t dns_shim__pool_run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                           const dns_shim_callbacks *callbacks)
{
    static uint8_t empty[1] = {0};
    int single, nested = dns_shim__pool_mine != NULL;
    dns_shim__instance *inst = dns_shim__pool_take(&single);
    int32_t rc;

    if (inst == NULL)
        return single ? DNS_SHIM__POOL_SINGLE : DNS_SHIM_ERR_INIT;
    if (query != NULL)
        rc = inst->call.process_reply(buf, len, query, callbacks);
    else if (callbacks != NULL)
        rc = inst->call.process_with(buf, len, callbacks);
    else /* the instance has no registered set: it parses and calls nothing */
        rc = inst->call.process(buf != NULL ? (uint8_t *)(uintptr_t)buf : empty, len);
    if (rc == DNS_SHIM_OK)
        dns_shim__ok();
    else
        dns_shim__set_error(inst->call.last_error());
    if (!nested)
        dns_shim__pool_give(inst);
    if (rc > 0 || rc < DNS_SHIM_ERR_UNSUPPORTED)
        return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the interpreter returned %" PRId32
                              ", which is no status", rc);
    return rc;
}

/* Whether this thread held its instance before dns_shim__pool_ares_take
** (a callback parsing with c-ares): then the give leaves it held. */
static __thread int dns_shim__pool_ares_nested = 0;

DNS_SHIM__PRIVATE_API int32_t dns_shim__pool_ares_take(const dns_shim__pool_entries **entries)
{
    int single;
    dns_shim__instance *inst;

    *entries = NULL;
    if (!dns_shim__pool_on())
        return DNS_SHIM__POOL_SINGLE;
    dns_shim__pool_ares_nested = dns_shim__pool_mine != NULL;
    inst = dns_shim__pool_take(&single);
    if (inst == NULL)
        return single ? DNS_SHIM__POOL_SINGLE : DNS_SHIM_ERR_INIT;
    if (inst->call.ares_compute == NULL || inst->call.ares_done == NULL ||
        inst->call.ares_message == NULL || inst->call.ares_message_done == NULL) {
        dns_shim__pool_ares_give();
        return dns_shim__fail(DNS_SHIM_ERR_UNSUPPORTED, "the pool's interpreters have no "
                              "c-ares layer: %s", DNS_SHIM__POOL_NO_ARES);
    }
    *entries = &inst->call;
    return DNS_SHIM_OK;
}

DNS_SHIM__PRIVATE_API void dns_shim__pool_ares_give(void)
{
    if (dns_shim__pool_mine != NULL && !dns_shim__pool_ares_nested)
        dns_shim__pool_give(dns_shim__pool_mine);
}

/* dns_shim_init with parallelism above 1: every interpreter started. */
int32_t dns_shim__pool_init(void)
{
    unsigned i, index = 0, failed;
    uint32_t n;
    int32_t rc = DNS_SHIM_OK;

    if (dns_shim__pool_mine != NULL)
        return dns_shim__ok();
    dns_shim__lock(&dns_shim__pool_lock);
    for (;;) {
        dns_shim__instance *inst = NULL;
        int starting = 0;
        n = dns_shim__pool_n;
        if (n <= 1) {
            pthread_mutex_unlock(&dns_shim__pool_lock);
            return DNS_SHIM__POOL_SINGLE;
        }
        for (i = 0; i < n && inst == NULL; i++)
            if (dns_shim__pool[i].state == DNS_SHIM__EMPTY) {
                inst = &dns_shim__pool[i];
                index = i;
            }
        if (inst != NULL) {
            /* One that never started: this thread starts it, holding none. */
            inst->state = DNS_SHIM__STARTING;
            pthread_mutex_unlock(&dns_shim__pool_lock);
            if (dns_shim__pool_bring_up(inst, index, n, DNS_SHIM__IDLE) != DNS_SHIM_OK)
                return DNS_SHIM_ERR_INIT; /* the reason is this thread's already */
            dns_shim__lock(&dns_shim__pool_lock);
            continue;
        }
        for (i = 0; i < n; i++)
            starting += dns_shim__pool[i].state == DNS_SHIM__STARTING;
        if (starting == 0)
            break;
        /* Another thread starts one of them: its start waits for nothing. */
        pthread_cond_wait(&dns_shim__pool_idle, &dns_shim__pool_lock);
    }
    /* Every one of the n has started, here or in another thread, or could not. */
    for (i = 0, failed = 0; i < n; i++)
        failed += dns_shim__pool[i].state == DNS_SHIM__FAILED;
    if (failed > 0)
        rc = dns_shim__fail(DNS_SHIM_ERR_INIT, "%u of the %" PRIu32 " interpreters could not "
                            "start; the last: %s", failed, n, dns_shim__pool_start_error);
    pthread_mutex_unlock(&dns_shim__pool_lock);
    return rc == DNS_SHIM_OK ? dns_shim__ok() : rc;
}

/* Whether an interpreter of the pool was ever started (dns_shim_set_allocator
** is then too late, as after the library's own start). */
int dns_shim__pool_started(void)
{
    unsigned i;
    int started = 0;
    dns_shim__lock(&dns_shim__pool_lock);
    for (i = 0; i < DNS_SHIM_PARALLELISM_MAX; i++)
        started |= dns_shim__pool[i].state != DNS_SHIM__EMPTY;
    pthread_mutex_unlock(&dns_shim__pool_lock);
    return started;
}

/* dns_shim_set_memory_limit, after it set the library's own: every running
** instance gets the pool's limit (each counts in the pool's one account, so
** the limit is the pool's).  The limit is read, not passed, and applied
** until it stays the same (dns_shim__pool_apply_limit): of two threads
** setting it at once, the instances and the library's own interpreter
** never keep two limits. */
void dns_shim__pool_limit(void)
{
    dns_shim__pool_apply_limit(NULL);
}
