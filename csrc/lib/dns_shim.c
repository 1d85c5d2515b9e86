/*
** dns_shim.c: libdnsshim's bridge to cffi.
**
** Not compiled on its own: cffi's preamble of the embedded module includes
** it by its path (#include "lib/dns_shim.c": dnsshim_build.pipeline.preamble,
** so that a compiler's diagnostics name this file), after cffi's own
** runtime (which defines cffi_start_python, and whose two guest calls
** lib/dns_shim_cffi_guest.h redirects) and before cffi's code for the internal ``extern "Python"``
** functions (dns_shim__py_process, dns_shim__py_release) and for the
** functions the Python side calls (dnsshim_build.pipeline._INTERNAL_CDEF).
**
** What lives here is what must see cffi's code: the start, once
** (dns_shim__init_once, which runs cffi_start_python), the guest's two
** calls of cffi's runtime, the functions the init code calls, and running
** a checked call through Python (dns_shim__run); dns_shim_init and
** dns_shim_version.  The rest of the C is units compiled on their own
** (dns_shim_internal.h, dns_shim_runtime.h): api.c (the entry points and
** argument checks), dispatch.c, failure.c, guest.c, memory.c, runtime.c.
** Every byte of a message is read on the Python side.
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status texts and names, the record kinds, the requirements and guest
** code texts: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <fcntl.h> /* faccessat: with the effective ids, as the files are opened */
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cffi's runtime, before this file, called the guest through
** csrc/lib/dns_shim_cffi_guest.h; from here on these are Python's. */
#ifndef DNS_SHIM__GUEST_REDIRECTED
#  error "build through build_ffi.py: cffi's unit must include lib/dns_shim_cffi_guest.h first"
#endif
#undef PyImport_ImportModule
#undef PyEval_GetBuiltins

#include "lib/dns_shim_runtime.h"

#define DNS_SHIM_VERSION_TEXT_(a, b, c) #a "." #b "." #c
#define DNS_SHIM_VERSION_TEXT(a, b, c) DNS_SHIM_VERSION_TEXT_(a, b, c)

/*
** The internal entry points, written in Python (shim/embedded.py, which
** calls shim.glue.plan and shim.glue.release).
**
** dns_shim__py_process parses the message (checking it against query, when
** that is not NULL: dns_shim_process_reply) and, when it is good, builds
** every struct the callbacks will get and the ordered list of calls to
** make: *steps, *count, each step naming its callback by the member's offset
** in dns_shim_callbacks.  It returns DNS_SHIM__PY_DONE or a negative
** status, never 0 itself: cffi returns 0 from an extern "Python" function it
** could not run, so 0 here means "not run".  C then makes the calls without
** holding the interpreter's lock.
**
** *token names the memory the steps point to (0: none).  When the calls are
** made, C queues the token; the next call into Python, from any thread,
** passes the queue (done, n_done) and Python frees those plans first.  One
** lock hand-over per call, not two.  When the queue is full, the token goes
** to dns_shim__py_release at once.
*/
#define DNS_SHIM__PY_DONE 1
/* dns_shim__step: dns_shim_internal.h */
static int32_t dns_shim__py_process(const uint8_t *buf, int32_t len,
                                    const dns_shim_query *query,
                                    const dns_shim_callbacks *callbacks,
                                    const uint64_t *done, size_t n_done,
                                    dns_shim__step **steps, size_t *count, uint64_t *token);
static void dns_shim__py_release(uint64_t token);

#define DNS_SHIM__QUEUE 64
static pthread_mutex_t dns_shim__queue_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dns_shim__queue[DNS_SHIM__QUEUE];
static size_t dns_shim__queued = 0;

/* A plan whose calls are made: queue its token for the next call to free. */
static void dns_shim__finished(uint64_t token)
{
    int queued = 0;
    if (token == 0)
        return;
    dns_shim__lock(&dns_shim__queue_lock);
    if (dns_shim__queued < DNS_SHIM__QUEUE) {
        dns_shim__queue[dns_shim__queued++] = token;
        queued = 1;
    }
    pthread_mutex_unlock(&dns_shim__queue_lock);
    if (!queued)
        dns_shim__py_release(token);
}

/* Takes the queued tokens into done[]; returns how many. */
static size_t dns_shim__take_finished(uint64_t *done)
{
    size_t n;
    dns_shim__lock(&dns_shim__queue_lock);
    n = dns_shim__queued;
    memcpy(done, dns_shim__queue, n * sizeof *done);
    dns_shim__queued = 0;
    pthread_mutex_unlock(&dns_shim__queue_lock);
    return n;
}

/* ------------------------------------------------------------------ */
/* A guest in a Python program                                          */

/*
** Loaded into a process that already runs Python (dns_shim__owns == 0),
** the library loads its own Python side privately (shim/guest.py, whose
** text build_ffi.py compiles in as DNS_SHIM__GUEST_CODE): its shim package,
** its dnspython and its own _cffi_backend, from its own installation,
** leaving the program's sys.path and sys.modules as they were.  Two calls
** in cffi's runtime are pointed here by csrc/lib/dns_shim_cffi_guest.h
** (dnsshim_build.pipeline.emit): _cffi_init's PyImport_ImportModule("_cffi_backend")
** and the builtins _cffi_initialize_python runs the init code with.  In an
** interpreter the library started itself they do what cffi does.
*/

/* The shim.guest.Guest object, once loaded (never released: the module
** cffi builds on its backend lives as long as the process). */
/* dns_shim__guest: guest.c */

static PyObject *dns_shim__cffi_backend(void)
{
    if (dns_shim__guest != NULL)
        return PyObject_GetAttrString(dns_shim__guest, "backend");
    return PyImport_ImportModule("_cffi_backend");
}

/* A borrowed reference, as PyEval_GetBuiltins() returns. */
static PyObject *dns_shim__init_builtins(void)
{
    if (dns_shim__guest != NULL) {
        PyObject *builtins = PyObject_GetAttrString(dns_shim__guest, "builtins");
        Py_XDECREF(builtins); /* the guest holds it */
        return builtins;
    }
    return PyEval_GetBuiltins();
}

/* For the init code (build_ffi.py's INIT_CODE). */
static const char *dns_shim__package_root(void)
{
    return dns_shim__root;
}

/* The firmware's --types ("A,AAAA,..."; "" for every type): only their
** RDATA modules are frozen in, every other type is opaque (shim.embedded). */
static const char *dns_shim__firmware_types(void)
{
    return DNS_SHIM_FIRMWARE_TYPES;
}

static int32_t dns_shim__owns_interpreter(void)
{
    return dns_shim__owns;
}

/* The init code could not load the parser: why (one line) and its traceback. */
static void dns_shim__report_start_failure(const char *why, const char *traceback)
{
    dns_shim__cannot_start(traceback, "cannot start: %s", why);
}

static void dns_shim__start(void);

/* fork() in a process whose interpreter the library started: the forking
** thread takes the interpreter's lock first, so that no other thread holds
** it at the fork (one that was parsing would hold it for ever in the child,
** where that thread does not exist), and gives it back on both sides.
**
** The child runs CPython's after-fork work (PyOS_AfterFork_Child, as
** os.fork() does) only when another thread has a thread state in the
** interpreter (it called the library, libdnsshim_ares included, and may
** have been inside a call at the fork, holding the lock over the thread
** states, which it takes without the interpreter's lock): that work makes
** CPython's locks anew, drops the other threads' states, and re-creates the
** locks of the modules' own fork hooks, leaving the old ones allocated
** (under valgrind, a few blocks of such a child's are lost), so it is not
** run where nothing needs it.
**
** From CPython 3.13, PyOS_AfterFork_Child releases the import lock that
** PyOS_BeforeFork takes, and ends the process when it was not taken
** ("unlocking a recursive mutex that is not owned"): there the forking
** thread runs PyOS_BeforeFork (which also holds the lock over the thread
** states across the fork), and PyOS_AfterFork_Parent in the parent and in a
** child where no other thread state needs the child's work.  Before 3.13,
** PyOS_BeforeFork takes only the import lock, which the runtime, importing
** nothing after its start, never holds: it is not run.
**
** In the child the forking thread keeps its thread state for the child's
** life, even one made for the fork alone.  A thread that left the
** interpreter just before the fork (its state taken off the list, the
** interpreter's lock given back) may not yet have reset the interpreter's
** built-in first thread state, which CPython hands to the next thread to
** come when the list is empty: in the child that reset never comes, and a
** list left empty would make the next call's thread state that stale one
** ("Fatal Python error: init_threadstate: thread state already
** initialized").  Set once the library's own interpreter runs. */
static int dns_shim__fork_interpreter = 0;
/* Whether this fork's prepare took the interpreter's lock (forks are one at
** a time: glibc runs the handlers under its own lock). */
static int dns_shim__fork_took_gil = 0;
static PyGILState_STATE dns_shim__fork_gil;

#if PY_VERSION_HEX >= 0x030D0000
#  define DNS_SHIM__FORK_LIKE_OS 1
#else
#  define DNS_SHIM__FORK_LIKE_OS 0
#endif

static void dns_shim__fork_interpreter_child(void)
{
    PyThreadState *me = PyThreadState_Get(), *t;
    int others = 0;
    for (t = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me)); t != NULL;
         t = PyThreadState_Next(t))
        others += t != me;
    if (others)
        PyOS_AfterFork_Child();
    else if (DNS_SHIM__FORK_LIKE_OS) /* PyOS_BeforeFork undone, as in the parent */
        PyOS_AfterFork_Parent();
    (void)PyGILState_Ensure(); /* never released: the list is never empty */
    PyGILState_Release(dns_shim__fork_gil);
}

/* The queue's part of the fork handler (dns_shim_internal.h). */
static void dns_shim__queue_fork(int phase)
{
    dns_shim__fork_mutex(&dns_shim__queue_lock, phase);
}

/* The one fork handler: the interpreter's lock, then the units' locks in
** the order dns_shim_internal.h gives; given back in the reverse order. */
static void dns_shim__fork_prepare(void)
{
    dns_shim__start_fork(DNS_SHIM__FORK_PREPARE, !Py_IsInitialized() || !PyGILState_Check());
    dns_shim__pool_instances_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__fork_took_gil = __atomic_load_n(&dns_shim__fork_interpreter, __ATOMIC_ACQUIRE);
    if (dns_shim__fork_took_gil) {
        dns_shim__fork_gil = PyGILState_Ensure();
        if (DNS_SHIM__FORK_LIKE_OS)
            PyOS_BeforeFork();
    }
    dns_shim__memory_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__pool_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__callbacks_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__queue_fork(DNS_SHIM__FORK_PREPARE);
    dns_shim__log_fork(DNS_SHIM__FORK_PREPARE);
}

static void dns_shim__fork_after(int phase)
{
    dns_shim__log_fork(phase);
    dns_shim__queue_fork(phase);
    dns_shim__callbacks_fork(phase);
    dns_shim__pool_fork(phase);
    dns_shim__memory_fork(phase);
}

static void dns_shim__fork_parent(void)
{
    dns_shim__fork_after(DNS_SHIM__FORK_PARENT);
    if (dns_shim__fork_took_gil) {
        if (DNS_SHIM__FORK_LIKE_OS)
            PyOS_AfterFork_Parent();
        PyGILState_Release(dns_shim__fork_gil);
    }
    dns_shim__pool_instances_fork(DNS_SHIM__FORK_PARENT);
    dns_shim__start_fork(DNS_SHIM__FORK_PARENT, 0);
}

static void dns_shim__fork_child(void)
{
    dns_shim__fork_after(DNS_SHIM__FORK_CHILD);
    if (dns_shim__fork_took_gil)
        dns_shim__fork_interpreter_child();
    dns_shim__pool_instances_fork(DNS_SHIM__FORK_CHILD);
    dns_shim__start_fork(DNS_SHIM__FORK_CHILD, 0);
}

static void dns_shim__fork_register(void)
{
    pthread_atfork(dns_shim__fork_prepare, dns_shim__fork_parent, dns_shim__fork_child);
}

/* Registered before the first of the library's locks is taken: from then on
** a fork finds none held by another thread (pthread_once's fast path is one
** load).  Never in an instance of a pool, whose front runs its handler. */
static int dns_shim__fork_driven = 0;

void dns_shim__fork_watch(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!__atomic_load_n(&dns_shim__fork_driven, __ATOMIC_ACQUIRE))
        pthread_once(&once, dns_shim__fork_register);
}

DNS_SHIM__PRIVATE_API void dns_shim__runtime_fork(int phase)
{
    dns_shim__instance_fork(phase);
}

DNS_SHIM__WORKER_ENTRY void dns_shim__instance_fork(int phase)
{
    switch (phase) {
    case DNS_SHIM__FORK_DRIVEN:
        __atomic_store_n(&dns_shim__fork_driven, 1, __ATOMIC_RELEASE);
        break;
    case DNS_SHIM__FORK_PREPARE:
        dns_shim__fork_prepare();
        break;
    case DNS_SHIM__FORK_PARENT:
        dns_shim__fork_parent();
        break;
    case DNS_SHIM__FORK_CHILD:
        dns_shim__fork_child();
        break;
    }
}

/* The start, once, under the start lock (one start at a time in the
** process, the pool's instances' too: an import at start-up calls libc
** functions with static buffers, getprotobyname for dnspython's WKS): while
** it runs, a block the host's allocator refuses is the C library's instead,
** so that neither CPython (which ends the process on an allocation that
** fails before its exception types exist) nor an import reports it as
** anything else; if the host refused any, the runtime did not start for
** want of memory, whatever else the start made of it. */
static void dns_shim__init_once(void)
{
    size_t refused;

    dns_shim__memory_starting(1);
    dns_shim__start();
    refused = dns_shim__memory_starting(0);
    if (dns_shim__owns && dns_shim__init_status == DNS_SHIM_OK && refused == 0)
        __atomic_store_n(&dns_shim__fork_interpreter, 1, __ATOMIC_RELEASE);
    if (refused > 0) {
        dns_shim__start_error[0] = '\0';
        dns_shim__init_status = DNS_SHIM_ERR_NO_MEMORY;
        dns_shim__cannot_start(NULL, "cannot start: the host's allocator (dns_shim_set_allocator) "
                               "refused %zu of the runtime's allocations while it started "
                               "(taken from the C library instead, so that the process goes "
                               "on): give the runtime more memory", refused);
    }
}

static void dns_shim__start(void)
{
    const char *python, *origin;
    PyGILState_STATE gil;
    int rc;

    dns_shim__locate();
    if (dns_shim__root[0]) {
        char package[4096 + 64];
        snprintf(package, sizeof package, "%s/shim/__init__.py", dns_shim__root);
        if (faccessat(AT_FDCWD, package, R_OK, AT_EACCESS) != 0) {
            if (DNS_SHIM_PRIVATE_DIR[0])
                dns_shim__cannot_start(NULL, "cannot start: the shim package is not in %s, the "
                                       "installation's own Python side (it was removed or the "
                                       "installation is incomplete): install the library "
                                       "again (python build_ffi.py --prefix)", dns_shim__root);
            else
                dns_shim__cannot_start(NULL, "cannot start: the shim package is not in %s, %s "
                                       "(it moved or was removed): rebuild the library where "
                                       "its Python side stays (pip install ., or python "
                                       "build_ffi.py from the clone)", dns_shim__root,
                                       DNS_SHIM_IN_PACKAGE ? "the site-packages the library "
                                       "sits in" : "the source tree the library was built from");
            return;
        }
    }
    if (dns_shim__start_interpreter() != 0)
        return;
    if (!dns_shim__owns) {
        /* A guest in a Python program: its own copy of its Python side, the
        ** floors checked on it (dns_shim__guest_start says why it cannot),
        ** then cffi's module on that copy. */
        if (dns_shim__guest_start() != 0)
            return;
        if (cffi_start_python() != 0) {
            dns_shim__cannot_start(NULL, "cannot start: cffi could not load the library's module "
                                   "into the Python program it is loaded into (its report is on "
                                   "that program's stderr)");
            return;
        }
        if (dns_shim__start_error[0])
            return;
        dns_shim__guest_publish();
        dns_shim__init_status = DNS_SHIM_OK;
        return;
    }
    python = dns_shim__choose_python(&origin);
    if (DNS_SHIM_BUNDLE && dns_shim__bundle_home[0])
        origin = "the bundle's";
    /* We hold the GIL since Py_InitializeFromConfig.  The Python side's
    ** directory goes first on sys.path before the requirements are checked:
    ** a prefix install keeps dnspython and cffi's backend there too. */
    if (dns_shim__root[0] && dns_shim__path_first(dns_shim__root) != 0) {
        PyEval_SaveThread();
        dns_shim__cannot_start(NULL, "cannot start: %s could not be put on the embedded "
                               "interpreter's sys.path (out of memory)", dns_shim__root);
        return;
    }
    rc = dns_shim__check_requirements(python, origin);
    PyEval_SaveThread();
    if (rc != 0)
        return;
    /* Runs the init code: imports shim.embedded and calls its attach(), which
    ** gives the extern "Python" functions their bodies; a failure there is
    ** reported through dns_shim__report_start_failure.  cffi's own start-up
    ** failures it prints itself: caught, and logged at debug level. */
    if (dns_shim__owns) {
        PyObject *caught;
        PyThreadState *ts;
        char *printed;
        gil = PyGILState_Ensure();
        caught = dns_shim__catch_stderr();
        ts = PyEval_SaveThread();
        rc = cffi_start_python();
        PyEval_RestoreThread(ts);
        printed = dns_shim__release_stderr(caught);
        PyGILState_Release(gil);
        if (rc != 0)
            dns_shim__cannot_start(printed, "cannot start: cffi could not load the library's "
                                   "module into CPython " PY_VERSION " (its report is logged at "
                                   "debug level): reinstall cffi in %s", python);
        free(printed);
    }
    if (rc != 0 || dns_shim__start_error[0])
        return;
    dns_shim__init_status = DNS_SHIM_OK;
}

/* Whether the start has run, whatever its status: set under the start lock,
** when the start is whole.  Not a pthread_once: a fork waits for a start in
** progress by taking the start lock (dns_shim__fork_prepare), and a
** pthread_once still running when the start lock is given back would run
** the start again in the child. */
static int dns_shim__started = 0;
static __thread int dns_shim__starting = 0; /* this thread runs the start */

static int32_t dns_shim__runtime(void)
{
    if (__atomic_load_n(&dns_shim__started, __ATOMIC_ACQUIRE))
        return dns_shim__init_status;
    if (dns_shim__starting) /* a log handler's call, during the start */
        return DNS_SHIM_ERR_INIT;
    dns_shim__start_enter();
    if (!dns_shim__started) {
        dns_shim__starting = 1;
        dns_shim__init_once();
        dns_shim__starting = 0;
        __atomic_store_n(&dns_shim__started, 1, __ATOMIC_RELEASE);
    }
    dns_shim__start_leave();
    return dns_shim__init_status;
}

/* A call that found the runtime not started: why, for this thread
** (DNS_SHIM_ERR_NO_MEMORY when the host's allocator refused the start
** memory, else DNS_SHIM_ERR_INIT). */
static int32_t dns_shim__init_failed(void)
{
    if (dns_shim__starting)
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "the runtime is starting in this thread: a "
                              "call made during the start (from the log handler) cannot parse");
    return dns_shim__fail(dns_shim__init_status == DNS_SHIM_ERR_NO_MEMORY ?
                          DNS_SHIM_ERR_NO_MEMORY : DNS_SHIM_ERR_INIT, "%s",
                          dns_shim__start_error[0] ? dns_shim__start_error :
                          "the runtime did not start");
}

DNS_SHIM_API int32_t dns_shim_init(void)
{
    int32_t answered;
    /* A service that answers is the runtime: nothing starts here. */
    if (dns_shim__service_ping(&answered))
        return answered;
    if (dns_shim__pool_on()) {
        int32_t rc = dns_shim__pool_init();
        if (rc != DNS_SHIM__POOL_SINGLE)
            return rc;
    }
    return dns_shim__runtime() == DNS_SHIM_OK ? dns_shim__ok() : dns_shim__init_failed();
}

DNS_SHIM__PRIVATE_API int32_t dns_shim__own_init(void)
{
    return dns_shim__runtime() == DNS_SHIM_OK ? dns_shim__ok() : dns_shim__init_failed();
}

DNS_SHIM__PRIVATE_API int32_t dns_shim__own_start(void (*then)(void))
{
    if (dns_shim__runtime() != DNS_SHIM_OK)
        return dns_shim__init_failed();
    if (then != NULL) {
        /* A layer's start (its modules imported) is start-up, not a parse:
        ** what it adds, the limit makes room for. */
        dns_shim__start_enter();
        dns_shim__memory_layer_starting(1);
        then();
        dns_shim__memory_layer_starting(0);
        dns_shim__start_leave();
    }
    return dns_shim__ok();
}

/* ------------------------------------------------------------------ */
/* Processing                                                           */

int32_t dns_shim__run_here(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                           const dns_shim_callbacks *callbacks)
{
    static const uint8_t empty[1] = {0};
    dns_shim__step *steps = NULL;
    size_t count = 0, n_done;
    uint64_t token = 0, done[DNS_SHIM__QUEUE];
    int32_t rc;

    /* Parallelism above 1: the pool's interpreters parse (pool.c). */
    if (dns_shim__pool_on()) {
        rc = dns_shim__pool_run(buf, len, query, callbacks);
        if (rc != DNS_SHIM__POOL_SINGLE)
            return rc;
    }
    rc = dns_shim__runtime();
    if (rc != DNS_SHIM_OK)
        return dns_shim__init_failed();
    if (buf == NULL)
        buf = empty; /* only with len == 0: checked by the callers */
    n_done = dns_shim__take_finished(done);
    dns_shim__error[0] = '\0';
    /* What an earlier call of this thread left (a c-ares parse the limit
    ** refused, whose layer reads no flag) is not this call's. */
    (void)dns_shim__memory_refused();
    (void)dns_shim__memory_tripped();
    rc = dns_shim__py_process(buf, len, query, callbacks, done, n_done, &steps, &count, &token);
    if (rc != 0 && dns_shim__memory_tripped()) {
        /* The memory limit refused an allocation during this parse: the
        ** call fails, whatever the parser made of its MemoryError, and a plan
        ** it made after all is dropped without a callback. */
        if (rc == DNS_SHIM__PY_DONE)
            dns_shim__finished(token);
        return dns_shim__fail(DNS_SHIM_ERR_NO_MEMORY, "parsing the message would take the "
                              "runtime above its memory limit of %zu bytes "
                              "(dns_shim_set_memory_limit)",
                              __atomic_load_n(&dns_shim__limit, __ATOMIC_RELAXED));
    }
    if (rc != DNS_SHIM__PY_DONE && dns_shim__memory_refused()) {
        /* The host's allocator refused a block during this parse: whatever
        ** CPython or the parser made of it (a MemoryError, or an error
        ** return without one), the call failed for want of memory. */
        if (rc != 0)
            return dns_shim__fail(DNS_SHIM_ERR_NO_MEMORY, "the host's allocator "
                                  "(dns_shim_set_allocator) refused memory while the message "
                                  "was parsed");
    }
    if (rc == 0) {
        /* cffi could not run the Python function: it is not attached. */
        dns_shim__log("the parser is not attached to the library; returning DNS_SHIM_ERR_INIT");
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "the parser is not attached to the library");
    }
    if (rc != DNS_SHIM__PY_DONE) {
        if (rc < DNS_SHIM_ERR_MISMATCH || rc > 0) /* never pass on a value that is not ours */
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser returned %" PRId32
                                  ", which is no status", rc);
        if (!dns_shim__error[0])
            dns_shim__fail(rc, "%s", dns_shim_strerror(rc));
        return rc;
    }
    /* The message is good and every struct is built: check the plan whole,
    ** then call the callbacks, in order, without the interpreter's lock. */
    rc = dns_shim__check_plan(callbacks, steps, count);
    if (rc != DNS_SHIM_OK) {
        dns_shim__log(dns_shim__error);
        dns_shim__finished(token);
        return rc;
    }
    rc = dns_shim__dispatch(callbacks, steps, count);
    dns_shim__finished(token);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

DNS_SHIM_API const char *dns_shim_version(void)
{
    return DNS_SHIM_VERSION_TEXT(DNS_SHIM_VERSION_MAJOR, DNS_SHIM_VERSION_MINOR,
                                 DNS_SHIM_VERSION_PATCH) " (CPython " DNS_SHIM_PYTHON_TAG ")";
}
