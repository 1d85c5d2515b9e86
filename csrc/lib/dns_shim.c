/*
** dns_shim.c: the C half of libdnsshim.
**
** Not compiled on its own: build_ffi.py hands it to cffi as the preamble of
** the embedded module, after cffi's own runtime (which defines
** cffi_start_python) and before cffi's code for the one internal
** ``extern "Python"`` function, dns_shim__py_process.
**
** What lives here is what must work without Python or before it runs:
** argument checks, the registered callback set, dns_shim_strerror,
** dns_shim_version, and starting the interpreter with a pinned installation.
** Every byte of a message is read on the Python side.
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Supplied by build_ffi.py on the compiler's command line:
**   DNS_SHIM_DEFAULT_PYTHON  the python executable pinned at build time
**   DNS_SHIM_DEFAULT_ROOT    the directory holding the shim package it was
**                            built from ("" when that Python finds it)
**   DNS_SHIM_PYTHON_TAG      the CPython minor version embedded, "3.11"
**   DNS_SHIM_IN_PACKAGE      1 when this shared object is installed as
**                            shim/lib/ inside the Python package: the
**                            package and its Python are then found from
**                            this file's own path
**   DNS_SHIM_BUNDLE          1 for a self-contained folder (python -m shim
**                            bundle): this file is <bundle>/lib/libdnsshim.so.N
**                            and the interpreter runs from <bundle> alone
**   DNS_SHIM_BUNDLE_OPTIMIZE the optimisation level its .pyc files have */
#ifndef DNS_SHIM_DEFAULT_PYTHON
#  error "build with -DDNS_SHIM_DEFAULT_PYTHON=\"/path/to/python\""
#endif
#ifndef DNS_SHIM_DEFAULT_ROOT
#  define DNS_SHIM_DEFAULT_ROOT ""
#endif
#ifndef DNS_SHIM_PYTHON_TAG
#  error "build with -DDNS_SHIM_PYTHON_TAG=\"3.x\""
#endif
#ifndef DNS_SHIM_IN_PACKAGE
#  define DNS_SHIM_IN_PACKAGE 0
#endif
#ifndef DNS_SHIM_BUNDLE
#  define DNS_SHIM_BUNDLE 0
#endif
#ifndef DNS_SHIM_BUNDLE_OPTIMIZE
#  define DNS_SHIM_BUNDLE_OPTIMIZE 0
#endif
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
typedef struct dns_shim__step {
    size_t member;   /* offsetof(dns_shim_callbacks, on_...) */
    const void *arg; /* the struct for that callback */
} dns_shim__step;
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
    pthread_mutex_lock(&dns_shim__queue_lock);
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
    pthread_mutex_lock(&dns_shim__queue_lock);
    n = dns_shim__queued;
    memcpy(done, dns_shim__queue, n * sizeof *done);
    dns_shim__queued = 0;
    pthread_mutex_unlock(&dns_shim__queue_lock);
    return n;
}

/* The sizes of dns_shim_callbacks that this library accepts.  When the
** struct grows, the old size is kept here so older callers still work.
** 1.0's struct ended with on_other, a function pointer, so its size (padded
** to a pointer's alignment) is where the next pointer, on_edns_option,
** starts: offsetof gives it on every ABI, without a second copy of the old
** struct. */
static const uint32_t dns_shim__known_sizes[] = {
    (uint32_t)offsetof(dns_shim_callbacks, on_edns_option), /* 1.0 */
    (uint32_t)sizeof(dns_shim_callbacks),                   /* 1.1 */
};

/* The sizes of dns_shim_query that this library accepts (it is 1.1's). */
static const uint32_t dns_shim__known_query_sizes[] = {
    (uint32_t)sizeof(dns_shim_query), /* 1.1 */
};

#define DNS_SHIM__KNOWN_QUERY_FLAGS DNS_SHIM_MATCH_CASE

#define DNS_SHIM__ALL_SECTIONS \
    (DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY | DNS_SHIM_SECTION_ADDITIONAL)

/* ------------------------------------------------------------------ */
/* Logging                                                              */

static pthread_mutex_t dns_shim__log_lock = PTHREAD_MUTEX_INITIALIZER;
static dns_shim_log_handler dns_shim__log_handler = NULL;
static void *dns_shim__log_ctx = NULL;

DNS_SHIM_API void dns_shim_set_log_handler(dns_shim_log_handler handler, void *ctx)
{
    pthread_mutex_lock(&dns_shim__log_lock);
    dns_shim__log_handler = handler;
    dns_shim__log_ctx = handler ? ctx : NULL;
    pthread_mutex_unlock(&dns_shim__log_lock);
}

/* Sends one message to the handler, or to stderr.  The Python side
** (shim/embedded.py) logs through it too. */
static void dns_shim__log_level(int32_t level, const char *message)
{
    dns_shim_log_handler handler;
    void *ctx;
    pthread_mutex_lock(&dns_shim__log_lock);
    handler = dns_shim__log_handler;
    ctx = dns_shim__log_ctx;
    pthread_mutex_unlock(&dns_shim__log_lock);
    if (handler != NULL) {
        handler(ctx, level, message);
    } else {
        fprintf(stderr, "dnsshim: %s\n", message);
        fflush(stderr);
    }
}

static void dns_shim__log(const char *message)
{
    dns_shim__log_level(DNS_SHIM_LOG_ERROR, message);
}

static void dns_shim__logf(int32_t level, const char *fmt, ...)
{
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    dns_shim__log_level(level, message);
}

/* ------------------------------------------------------------------ */
/* Callback sets                                                        */

static int dns_shim__known_size(uint32_t size, const uint32_t *known, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (size == known[i])
            return 1;
    return 0;
}

#define DNS_SHIM__KNOWN(size, table) \
    dns_shim__known_size((size), (table), sizeof(table) / sizeof((table)[0]))

/* Copies *in into *out, normalised to the full current struct (members the
** caller's older header does not know are zeroed, and never read from the
** caller's memory).  Returns a status. */
static int32_t dns_shim__copy_callbacks(const dns_shim_callbacks *in, dns_shim_callbacks *out)
{
    size_t size;

    if (in == NULL)
        return DNS_SHIM_ERR_BAD_ARGUMENT;
    size = in->struct_size;
    if (!DNS_SHIM__KNOWN(in->struct_size, dns_shim__known_sizes))
        return DNS_SHIM_ERR_BAD_ARGUMENT;
    if (in->sections & ~(uint32_t)DNS_SHIM__ALL_SECTIONS)
        return DNS_SHIM_ERR_BAD_ARGUMENT;
    memset(out, 0, sizeof(*out));
    memcpy(out, in, size);
    out->struct_size = (uint32_t)sizeof(*out);
    return DNS_SHIM_OK;
}

/* The same for a query: NULL, an unknown size, unknown flags or no qname are
** DNS_SHIM_ERR_BAD_ARGUMENT.  The qname's syntax is checked in Python. */
static int32_t dns_shim__copy_query(const dns_shim_query *in, dns_shim_query *out)
{
    if (in == NULL || !DNS_SHIM__KNOWN(in->struct_size, dns_shim__known_query_sizes))
        return DNS_SHIM_ERR_BAD_ARGUMENT;
    memset(out, 0, sizeof(*out));
    memcpy(out, in, in->struct_size);
    out->struct_size = (uint32_t)sizeof(*out);
    if ((out->flags & ~(uint32_t)DNS_SHIM__KNOWN_QUERY_FLAGS) || out->qname == NULL)
        return DNS_SHIM_ERR_BAD_ARGUMENT;
    return DNS_SHIM_OK;
}

static pthread_mutex_t dns_shim__registered_lock = PTHREAD_MUTEX_INITIALIZER;
static dns_shim_callbacks dns_shim__registered;
static int dns_shim__have_registered = 0;

DNS_SHIM_API int32_t dns_shim_register_callbacks(const dns_shim_callbacks *callbacks)
{
    dns_shim_callbacks copy;

    if (callbacks != NULL) {
        int32_t status = dns_shim__copy_callbacks(callbacks, &copy);
        if (status != DNS_SHIM_OK)
            return status;
    }
    pthread_mutex_lock(&dns_shim__registered_lock);
    if (callbacks != NULL)
        dns_shim__registered = copy;
    dns_shim__have_registered = callbacks != NULL;
    pthread_mutex_unlock(&dns_shim__registered_lock);
    return DNS_SHIM_OK;
}

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

static pthread_once_t dns_shim__once = PTHREAD_ONCE_INIT;
static int32_t dns_shim__init_status = DNS_SHIM_ERR_INIT;
static int dns_shim__owns = 0;         /* we started the interpreter */
static int dns_shim__start_failed = 0; /* the init code could not load the parser */
static char dns_shim__root[4096];      /* where the shim package is ("" : on sys.path) */
static char dns_shim__derived_python[4096 + 64];
static char dns_shim__bundle_home[4096]; /* a bundle's folder, or "" */

/* The directory of this shared object, or "" (a static build: there is no
** file of our own). */
static void dns_shim__own_dir(char *out, size_t size)
{
    Dl_info info;
    char *slash;
    out[0] = '\0';
    if (!(DNS_SHIM_IN_PACKAGE || DNS_SHIM_BUNDLE) ||
        dladdr((void *)&dns_shim_version, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, out) == NULL)
        return;
    slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
}

/* Where the shim package is, and the Python installation it belongs to,
** for a library installed in it: <site-packages>/shim/lib/libdnsshim.so.N,
** <prefix>/lib/pythonX.Y/site-packages, <prefix>/bin/pythonX.Y.  A bundle's
** library is <bundle>/lib/libdnsshim.so.N: its folder is all it needs. */
static void dns_shim__locate(void)
{
    char dir[4096];
    size_t n;
    snprintf(dns_shim__root, sizeof dns_shim__root, "%s", DNS_SHIM_DEFAULT_ROOT);
    dns_shim__own_dir(dir, sizeof dir);
    n = strlen(dir);
    if (DNS_SHIM_BUNDLE) {
        /* <bundle>/lib/libdnsshim.so.N, beside <bundle>/lib/pythonX.Y; in
        ** any other place the folder is not a bundle, and the library
        ** refuses to start (dns_shim__start_interpreter) rather than run
        ** some other Python found there. */
        char modules[4096 + 64];
        snprintf(modules, sizeof modules, "%s/python" DNS_SHIM_PYTHON_TAG, dir);
        if (n > strlen("/lib") && strcmp(dir + n - strlen("/lib"), "/lib") == 0 &&
            access(modules, R_OK | X_OK) == 0) {
            dir[n - strlen("/lib")] = '\0';
            snprintf(dns_shim__bundle_home, sizeof dns_shim__bundle_home, "%s", dir);
        }
        return;
    }
    if (n > strlen("/shim/lib") && strcmp(dir + n - strlen("/shim/lib"), "/shim/lib") == 0) {
        char python[4096 + 64];
        dir[n - strlen("/shim/lib")] = '\0'; /* site-packages */
        snprintf(dns_shim__root, sizeof dns_shim__root, "%s", dir);
        snprintf(python, sizeof python, "%s/../../../bin/python" DNS_SHIM_PYTHON_TAG, dir);
        if (access(python, X_OK) == 0)
            snprintf(dns_shim__derived_python, sizeof dns_shim__derived_python, "%s", python);
    }
}

/* The CPython minor version ("3.12") of a python executable, read from its
** virtualenv's pyvenv.cfg or its file name; "" when neither says. */
static void dns_shim__python_version(const char *python, char *out, size_t size)
{
    char path[4096], line[512], real[4096];
    const char *name;
    FILE *f;
    out[0] = '\0';
    snprintf(path, sizeof path, "%s", python);
    if (strrchr(path, '/'))
        *strrchr(path, '/') = '\0';
    strncat(path, "/../pyvenv.cfg", sizeof path - strlen(path) - 1);
    if ((f = fopen(path, "r")) != NULL) {
        while (fgets(line, sizeof line, f)) {
            unsigned major, minor;
            if ((sscanf(line, "version = %u.%u", &major, &minor) == 2 ||
                 sscanf(line, "version_info = %u.%u", &major, &minor) == 2)) {
                snprintf(out, size, "%u.%u", major, minor);
                break;
            }
        }
        fclose(f);
        if (out[0])
            return;
    }
    name = realpath(python, real) ? real : python;
    name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (strncmp(name, "python", 6) == 0 && strchr(name + 6, '.'))
        snprintf(out, size, "%s", name + 6);
}

/* A bundle's interpreter: everything from <home> (its lib/pythonX.Y/, the
** compiled modules, and lib/pythonX.Y/lib-dynload/), nothing from the machine:
** no site, no bytecode written, no path warnings. */
static PyStatus dns_shim__bundle_config(PyConfig *config)
{
    char path[4096 + 64];
    wchar_t *wide;
    PyStatus st;
    static const char *const dirs[] = {"/lib/python" DNS_SHIM_PYTHON_TAG,
                                       "/lib/python" DNS_SHIM_PYTHON_TAG "/lib-dynload"};
    size_t i;

    config->site_import = 0;
    config->write_bytecode = 0;
    config->pathconfig_warnings = 0;
    config->optimization_level = DNS_SHIM_BUNDLE_OPTIMIZE;
    st = PyConfig_SetBytesString(config, &config->home, dns_shim__bundle_home);
    /* No python executable: a name inside the bundle, so that nothing is
    ** looked for on PATH. */
    snprintf(path, sizeof path, "%s/bin/python" DNS_SHIM_PYTHON_TAG, dns_shim__bundle_home);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(config, &config->program_name, path);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(config, &config->executable, path);
    config->module_search_paths_set = 1;
    for (i = 0; i < sizeof dirs / sizeof dirs[0] && !PyStatus_Exception(st); i++) {
        snprintf(path, sizeof path, "%s%s", dns_shim__bundle_home, dirs[i]);
        wide = Py_DecodeLocale(path, NULL);
        if (wide == NULL)
            return PyStatus_NoMemory();
        st = PyWideStringList_Append(&config->module_search_paths, wide);
        PyMem_RawFree(wide);
    }
    return st;
}

/* Starts the bundle's interpreter.  Returns 0 on success. */
static int dns_shim__start_bundled(void)
{
    PyConfig config;
    PyStatus st;

    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    st = dns_shim__bundle_config(&config);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        dns_shim__logf(DNS_SHIM_LOG_ERROR, "the bundled CPython " DNS_SHIM_PYTHON_TAG
                       " (%s) did not start: %s%s%s", dns_shim__bundle_home,
                       st.func ? st.func : "", st.func ? ": " : "",
                       st.err_msg ? st.err_msg : "unknown error");
        return -1;
    }
    dns_shim__owns = 1;
    return 0;
}

/* Starts CPython from the chosen installation, unless the process already
** runs an interpreter.  Returns 0 on success. */
static int dns_shim__start_interpreter(void)
{
    PyStatus st;
    PyConfig config;
    char version[64];
    const char *python = getenv("DNS_SHIM_PYTHON");

    if (Py_IsInitialized())
        return 0;
    if (DNS_SHIM_BUNDLE && (python == NULL || python[0] == '\0')) {
        if (dns_shim__bundle_home[0])
            return dns_shim__start_bundled();
        dns_shim__log("this is a bundle's library, but the folder it was loaded from is not the "
                      "lib/ of a bundle (no lib/python" DNS_SHIM_PYTHON_TAG " beside it): keep "
                      "the bundle's layout, or set DNS_SHIM_PYTHON");
        return -1;
    }
    if (python == NULL || python[0] == '\0')
        python = dns_shim__derived_python[0] ? dns_shim__derived_python : DNS_SHIM_DEFAULT_PYTHON;
    dns_shim__python_version(python, version, sizeof version);
    if (version[0] && strcmp(version, DNS_SHIM_PYTHON_TAG) != 0) {
        dns_shim__logf(DNS_SHIM_LOG_ERROR,
                       "this library embeds CPython " DNS_SHIM_PYTHON_TAG " but the Python it was "
                       "given, %s, is CPython %s: rebuild the library with that Python, or set "
                       "DNS_SHIM_PYTHON to a CPython " DNS_SHIM_PYTHON_TAG, python, version);
        return -1;
    }

    /* Isolated: no PYTHON* variables, no user site, no current directory on
    ** sys.path; the installation is the one of `python`, a virtualenv's
    ** pyvenv.cfg included. */
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    st = PyConfig_SetBytesString(&config, &config.program_name, python);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&config, &config.executable, python);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        dns_shim__logf(DNS_SHIM_LOG_ERROR, "the embedded CPython " DNS_SHIM_PYTHON_TAG
                       " (%s) did not start: %s%s%s", python, st.func ? st.func : "",
                       st.func ? ": " : "", st.err_msg ? st.err_msg : "unknown error");
        return -1;
    }
    dns_shim__owns = 1;
    return 0;
}

/* While cffi loads the parser in an interpreter we started, what it prints
** (its own start-up failures, with their traceback) is caught and logged,
** so that it reaches the program's log handler.  Called with the GIL held;
** on(1) returns the catching stream, off(stream) logs what it caught. */
static PyObject *dns_shim__catch_stderr(void)
{
    PyObject *io = PyImport_ImportModule("io"), *stream = NULL;
    if (io != NULL) {
        stream = PyObject_CallMethod(io, "StringIO", NULL);
        Py_DECREF(io);
    }
    if (stream == NULL || PySys_SetObject("stderr", stream) != 0) {
        PyErr_Clear();
        Py_CLEAR(stream);
    }
    return stream;
}

static void dns_shim__release_stderr(PyObject *stream)
{
    PyObject *text;
    const char *utf8;
    if (stream == NULL)
        return;
    PySys_SetObject("stderr", PySys_GetObject("__stderr__"));
    text = PyObject_CallMethod(stream, "getvalue", NULL);
    utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    if (utf8 != NULL && utf8[0] != '\0') {
        char *copy = strdup(utf8);
        if (copy != NULL) {
            size_t n = strlen(copy);
            while (n > 0 && copy[n - 1] == '\n')
                copy[--n] = '\0';
            dns_shim__log(copy);
            free(copy);
        }
    }
    PyErr_Clear();
    Py_XDECREF(text);
    Py_DECREF(stream);
}

/* For the init code (build_ffi.py's INIT_CODE). */
static const char *dns_shim__package_root(void)
{
    return dns_shim__root;
}

static int32_t dns_shim__owns_interpreter(void)
{
    return dns_shim__owns;
}

static void dns_shim__report_start_failure(const char *why)
{
    dns_shim__start_failed = 1;
    dns_shim__log(why);
}

static void dns_shim__init_once(void)
{
    dns_shim__locate();
    if (dns_shim__start_interpreter() != 0) {
        dns_shim__log("runtime start-up failed; every call returns DNS_SHIM_ERR_INIT");
        return;
    }
    /* Runs the init code: imports shim.embedded and calls its attach(), which
    ** gives the extern "Python" functions their bodies; a failure there is
    ** reported through dns_shim__report_start_failure.  cffi's own start-up
    ** failures (its backend missing) it prints itself. */
    if (dns_shim__owns) {
        /* We hold the GIL since Py_InitializeFromConfig. */
        PyObject *caught = dns_shim__catch_stderr();
        /* Release the GIL, as cffi does after starting Python itself. */
        PyThreadState *ts = PyEval_SaveThread();
        int rc = cffi_start_python();
        PyEval_RestoreThread(ts);
        dns_shim__release_stderr(caught);
        PyEval_SaveThread();
        if (rc != 0)
            dns_shim__start_failed = 1;
    } else if (cffi_start_python() != 0) {
        dns_shim__start_failed = 1;
    }
    if (dns_shim__start_failed) {
        dns_shim__log("the parser could not be loaded; every call returns DNS_SHIM_ERR_INIT");
        return;
    }
    dns_shim__init_status = DNS_SHIM_OK;
}

static int32_t dns_shim__runtime(void)
{
    pthread_once(&dns_shim__once, dns_shim__init_once);
    return dns_shim__init_status;
}

DNS_SHIM_API int32_t dns_shim_init(void)
{
    return dns_shim__runtime();
}

/* ------------------------------------------------------------------ */
/* Processing                                                           */

/* One step of a plan: calls the callback the member offset names, with its
** struct, and stores what it returned in *result.  Returns 0, or -1 for an
** offset that names no callback (a bug). */
static int dns_shim__call(const dns_shim_callbacks *cb, const dns_shim__step *step,
                          int32_t *result)
{
#define DNS_SHIM__CASE(member, type)                                \
    case offsetof(dns_shim_callbacks, member):                      \
        *result = cb->member(cb->ctx, (const type *)step->arg);     \
        return 0;
    switch (step->member) {
    DNS_SHIM__CASE(on_header, dns_shim_header)
    DNS_SHIM__CASE(on_a, dns_shim_a)
    DNS_SHIM__CASE(on_aaaa, dns_shim_aaaa)
    DNS_SHIM__CASE(on_cname, dns_shim_target)
    DNS_SHIM__CASE(on_ns, dns_shim_target)
    DNS_SHIM__CASE(on_ptr, dns_shim_target)
    DNS_SHIM__CASE(on_dname, dns_shim_target)
    DNS_SHIM__CASE(on_mx, dns_shim_mx)
    DNS_SHIM__CASE(on_txt, dns_shim_txt)
    DNS_SHIM__CASE(on_srv, dns_shim_srv)
    DNS_SHIM__CASE(on_naptr, dns_shim_naptr)
    DNS_SHIM__CASE(on_soa, dns_shim_soa)
    DNS_SHIM__CASE(on_other, dns_shim_raw)
    DNS_SHIM__CASE(on_edns_option, dns_shim_edns_option)
    }
#undef DNS_SHIM__CASE
    return -1;
}

static int32_t dns_shim__run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                             const dns_shim_callbacks *callbacks)
{
    static const uint8_t empty[1] = {0};
    dns_shim__step *steps = NULL;
    size_t count = 0, i, n_done;
    uint64_t token = 0, done[DNS_SHIM__QUEUE];
    int32_t rc = dns_shim__runtime();

    if (rc != DNS_SHIM_OK)
        return rc;
    if (buf == NULL)
        buf = empty; /* only with len == 0: checked by the callers */
    n_done = dns_shim__take_finished(done);
    rc = dns_shim__py_process(buf, len, query, callbacks, done, n_done, &steps, &count, &token);
    if (rc == 0) {
        /* cffi could not run the Python function: it is not attached. */
        dns_shim__log("the parser is not attached to the library; returning DNS_SHIM_ERR_INIT");
        return DNS_SHIM_ERR_INIT;
    }
    if (rc != DNS_SHIM__PY_DONE) {
        if (rc < DNS_SHIM_ERR_MISMATCH || rc > 0)
            return DNS_SHIM_ERR_INTERNAL; /* never pass on a value that is not ours */
        return rc;
    }
    /* The message is good and every struct is built: call the callbacks,
    ** in order, without the interpreter's lock. */
    rc = DNS_SHIM_OK;
    for (i = 0; i < count; i++) {
        int32_t result = 0;
        if (dns_shim__call(callbacks, &steps[i], &result) != 0) {
            dns_shim__log("the parser planned a call to no callback; returning DNS_SHIM_ERR_INTERNAL");
            rc = DNS_SHIM_ERR_INTERNAL;
            break;
        }
        if (result != 0) {
            rc = DNS_SHIM_ERR_CALLBACK;
            break;
        }
    }
    dns_shim__finished(token);
    return rc;
}

static int32_t dns_shim__check_buffer(const uint8_t *buf, int32_t len)
{
    if (len < 0 || len > 65535)
        return DNS_SHIM_ERR_BAD_LENGTH;
    if (buf == NULL && len > 0)
        return DNS_SHIM_ERR_NULL_BUFFER;
    return DNS_SHIM_OK;
}

DNS_SHIM_API int32_t dns_shim_process(const uint8_t *dns_response, int32_t response_len,
                                      const dns_shim_callbacks *callbacks)
{
    dns_shim_callbacks copy;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    status = dns_shim__copy_callbacks(callbacks, &copy);
    if (status != DNS_SHIM_OK)
        return status;
    return dns_shim__run(dns_response, response_len, NULL, &copy);
}

/* The registered set, one whole set, old or new, taken at the start of the
** call: returns copy, or NULL when none is registered. */
static const dns_shim_callbacks *dns_shim__take_registered(dns_shim_callbacks *copy)
{
    int have;
    pthread_mutex_lock(&dns_shim__registered_lock);
    have = dns_shim__have_registered;
    if (have)
        *copy = dns_shim__registered;
    pthread_mutex_unlock(&dns_shim__registered_lock);
    return have ? copy : NULL;
}

DNS_SHIM_API int32_t process_dns_response(uint8_t *dns_response, int32_t response_len)
{
    dns_shim_callbacks copy;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    return dns_shim__run(dns_response, response_len, NULL, dns_shim__take_registered(&copy));
}

DNS_SHIM_API int32_t dns_shim_process_reply(const uint8_t *dns_response, int32_t response_len,
                                            const dns_shim_query *query,
                                            const dns_shim_callbacks *callbacks)
{
    dns_shim_callbacks copy;
    dns_shim_query query_copy;
    const dns_shim_callbacks *use;
    int32_t status = dns_shim__check_buffer(dns_response, response_len);

    if (status != DNS_SHIM_OK)
        return status;
    if (callbacks != NULL) {
        status = dns_shim__copy_callbacks(callbacks, &copy);
        if (status != DNS_SHIM_OK)
            return status;
        use = &copy;
    } else {
        use = dns_shim__take_registered(&copy);
    }
    status = dns_shim__copy_query(query, &query_copy);
    if (status != DNS_SHIM_OK)
        return status;
    return dns_shim__run(dns_response, response_len, &query_copy, use);
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

/* The texts are shim/status.py's TEXTS, the one table of them:
** build_ffi.py writes the cases here (DNS_SHIM__STRERROR_CASES). */
DNS_SHIM_API const char *dns_shim_strerror(int32_t status)
{
    switch (status) {
    DNS_SHIM__STRERROR_CASES
    }
    return DNS_SHIM__STRERROR_UNKNOWN;
}

DNS_SHIM_API const char *dns_shim_version(void)
{
    return DNS_SHIM_VERSION_TEXT(DNS_SHIM_VERSION_MAJOR, DNS_SHIM_VERSION_MINOR,
                                 DNS_SHIM_VERSION_PATCH) " (CPython " DNS_SHIM_PYTHON_TAG ")";
}
