/*
** dnsshim_ares.c: libdnsshim_ares's bridge to cffi.
**
** Not compiled on its own: cffi's preamble of the library's embedded module
** (_dnsshim_ares_cffi) includes it by its path (#include
** "ares/dnsshim_ares.c": dnsshim_build.pipeline.preamble, so that a
** compiler's diagnostics name this file), after cffi's runtime
** (cffi_start_python, whose two guest calls lib/dns_shim_cffi_guest.h
** redirects) and before cffi's code for the two extern "Python" functions
** of csrc/ares/dnsshim_ares.h and for dnsshim_ares__report_start_failure,
** which the init code calls.
**
** What lives here is what must see cffi's code: the start, once
** (dnsshim_ares__init_once, which runs cffi_start_python), the guest's two
** calls of cffi's runtime, and one call into Python
** (dnsshim_ares__compute, dnsshim_ares__done).  The rest of the C is units
** compiled on their own (dnsshim_ares_internal.h): parsers.c (the exported
** parsers), structures.c (c-ares's structures built), free.c (the free
** functions, ares_strerror), owned.c (the pointers handed out), check.c
** (what the Python side hands over, checked).  Not one byte of a message
** is read in C.
**
** The runtime is libdnsshim's: dns_shim_init() starts the embedded CPython
** (the installation pinned at build time, DNS_SHIM_PYTHON) and puts the shim
** package on sys.path; this library then attaches its own module to that
** interpreter (cffi_start_python runs the init code, which imports
** shim.ares_embedded).
**
** Threads: every function may be called from any thread.  A parse takes the
** interpreter's lock for the time Python computes the result; the copy into
** c-ares's structures runs without it.  With parallelism above 1 the parse
** runs in an interpreter of libdnsshim's pool instead (below, "The pool").
*/
#define DNSSHIM_ARES_PYTHON static
#define DNSSHIM_ARES_INTERNAL static
#include "ares/dnsshim_ares_internal.h"
#include "dns_shim.h"
#include "lib/dns_shim_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* cffi's runtime, before this file, called the guest through
** csrc/lib/dns_shim_cffi_guest.h; from here on these are Python's. */
#ifndef DNS_SHIM__GUEST_REDIRECTED
#  error "build through build_ffi.py: cffi's unit must include lib/dns_shim_cffi_guest.h first"
#endif
#undef PyImport_ImportModule
#undef PyEval_GetBuiltins

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

static pthread_once_t dnsshim_ares__once = PTHREAD_ONCE_INIT;
static int dnsshim_ares__ready = 0;
static int dnsshim_ares__start_failed = 0;


/* The init code could not attach this library's module: why, and whether
** it went to libdnsshim's log already (through the log of libdnsshim's
** shim.glue.Runtime). */
static void dnsshim_ares__report_start_failure(const char *why, int32_t logged)
{
    dnsshim_ares__start_failed = 1;
    if (!logged)
        dnsshim_ares__log(why);
}

/* In a Python program, libdnsshim is a guest there (csrc/lib/dns_shim.c: a
** private copy of its Python side and its own cffi backend) and publishes
** its shim.guest.Guest as _dnsshim_cffi.__dnsshim_guest__: this module runs
** on the same, through the two calls of cffi's generated code that
** csrc/lib/dns_shim_cffi_guest.h points here.  In the library's own
** interpreter there is no guest, and they do what cffi does. */

/* An attribute of libdnsshim's guest (a new reference), or NULL, with no
** exception set, when there is none. */
static PyObject *dnsshim_ares__guest_attr(const char *attr)
{
    PyObject *name = PyUnicode_FromString("_dnsshim_cffi");
    PyObject *own = name ? PyImport_GetModule(name) : NULL;
    PyObject *guest = NULL, *value = NULL;
    Py_XDECREF(name);
    if (own != NULL && PyObject_HasAttrString(own, "__dnsshim_guest__"))
        guest = PyObject_GetAttrString(own, "__dnsshim_guest__");
    if (guest != NULL)
        value = PyObject_GetAttrString(guest, attr);
    PyErr_Clear();
    Py_XDECREF(guest);
    Py_XDECREF(own);
    return value;
}

static PyObject *dnsshim_ares__cffi_backend(void)
{
    PyObject *backend = dnsshim_ares__guest_attr("backend");
    return backend != NULL ? backend : PyImport_ImportModule("_cffi_backend");
}

/* A borrowed reference, as PyEval_GetBuiltins() returns. */
static PyObject *dnsshim_ares__init_builtins(void)
{
    PyObject *builtins = dnsshim_ares__guest_attr("builtins");
    if (builtins != NULL) {
        Py_DECREF(builtins); /* the guest holds it */
        return builtins;
    }
    return PyEval_GetBuiltins();
}

/* This library's module, attached to libdnsshim's runtime (started): under
** libdnsshim's start lock (dns_shim__own_start), which a fork waits for, so
** that no child finds cffi's start-up lock of this module, held for the
** whole start, held by a thread it does not have. */
static void dnsshim_ares__start_module(void)
{
    /* cffi starts an interpreter of its own (Py_InitializeEx, not isolated:
    ** PYTHONPATH, site) where none runs: never let it. */
    if (!Py_IsInitialized()) {
        dnsshim_ares__log("libdnsshim started no interpreter for the c-ares layer; every parse "
                          "returns ARES_ENOTINITIALIZED");
        return;
    }
    if (cffi_start_python() != 0 && !dnsshim_ares__start_failed)
        dnsshim_ares__log("cffi could not load the c-ares layer's module; every parse returns "
                          "ARES_ENOTINITIALIZED");
    else if (!dnsshim_ares__start_failed)
        dnsshim_ares__ready = 1;
}

static void dnsshim_ares__init_once(void)
{
    /* libdnsshim says why its runtime did not start, through the program's
    ** log handler; every parser then returns ARES_ENOTINITIALIZED.  Its own
    ** runtime, whatever the parallelism: this call was routed to it, and
    ** parallelism may have been raised since (dns_shim_init would then
    ** start the pool alone). */
    (void)dns_shim__own_start(dnsshim_ares__start_module);
}

/* ------------------------------------------------------------------ */
/* The pool                                                             */

/* With parallelism above 1 (dns_shim_set_parallelism, DNS_SHIM_PARALLELISM)
** a parse runs in an interpreter of libdnsshim's pool, in that
** interpreter's own copy of this bridge (the worker image's entry points):
** the thread takes an instance, the instance computes and checks the
** result, this thread copies it, and the release goes to the same instance,
** which the thread then gives back.  This library's own module never
** starts then. */

/* The instance this thread holds from a compute to its release. */
static __thread const dns_shim__pool_entries *dnsshim_ares__held = NULL;

enum { DNSSHIM_ARES__OWN, DNSSHIM_ARES__POOLED, DNSSHIM_ARES__NO_POOL };

/* Which interpreter parses: this library's own, an instance of the pool
** (*pool its entry points, held), or none (logged). */
static int dnsshim_ares__route(const dns_shim__pool_entries **pool, const char *who)
{
    int32_t rc = dns_shim__pool_ares_take(pool);
    char line[DNS_SHIM__ERROR_SIZE + 128];

    if (rc == DNS_SHIM__POOL_SINGLE)
        return DNSSHIM_ARES__OWN;
    if (rc == DNS_SHIM_OK)
        return DNSSHIM_ARES__POOLED;
    snprintf(line, sizeof line, "%sno interpreter of the pool can parse (%s); returning "
             "ARES_ENOTINITIALIZED", who, dns_shim_last_error());
    dnsshim_ares__log(line);
    return DNSSHIM_ARES__NO_POOL;
}

/* After a pooled compute: the instance stays held while the result has
** memory to release, else goes back now. */
static void dnsshim_ares__keep(const dns_shim__pool_entries *pool, uint64_t token)
{
    if (token != 0)
        dnsshim_ares__held = pool;
    else
        dns_shim__pool_ares_give();
}

/* ------------------------------------------------------------------ */
/* The calls                                                            */

/* One call into Python.  On return *r holds the result (r->status the
** code) and *token names its memory (release it with
** dnsshim_ares__py_release once copied). */
int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                          dnsshim_ares_result *r, uint64_t *token)
{
    const dns_shim__pool_entries *pool;

    memset(r, 0, sizeof *r);
    *token = 0;
    switch (dnsshim_ares__route(&pool, "")) {
    case DNSSHIM_ARES__POOLED: {
        int status = pool->ares_compute(kind, buf, len, offset, flags, r, token);
        dnsshim_ares__keep(pool, *token);
        return status;
    }
    case DNSSHIM_ARES__NO_POOL:
        return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        break;
    }
    pthread_once(&dnsshim_ares__once, dnsshim_ares__init_once);
    if (!dnsshim_ares__ready)
        return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
    switch (dnsshim_ares__py_parse(kind, buf, len, offset, flags, r, token)) {
    case DNSSHIM_ARES__PY_DONE: {
        const char *why = dnsshim_ares__check_result(kind, r, len, offset);
        if (why != NULL) {
            /* A bug on the Python side: nothing of it is copied. */
            char line[256];
            const char *name;
            int status = dnsshim_ares__unreadable(kind, &name);
            snprintf(line, sizeof line, "the parser's result has %s; returning %s", why, name);
            dnsshim_ares__log(line);
            if (*token != 0)
                dnsshim_ares__py_release(*token);
            memset(r, 0, sizeof *r);
            *token = 0;
            return r->status = status;
        }
        return r->status;
    }
    case 0:
        /* cffi could not run the Python function: it is not attached. */
        dnsshim_ares__log("the parser is not attached to the library");
        *token = 0;
        return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        /* An exception escaped the Python side (logged there). */
        memset(r, 0, sizeof *r);
        *token = 0;
        return r->status = dnsshim_ares__unreadable(kind, NULL);
    }
}

void dnsshim_ares__done(uint64_t token)
{
    const dns_shim__pool_entries *pool = dnsshim_ares__held;

    if (pool != NULL) {
        dnsshim_ares__held = NULL;
        pool->ares_done(token);
        dns_shim__pool_ares_give();
    } else if (token != 0) {
        dnsshim_ares__py_release(token);
    }
}

/* ares_dns_parse's call (dnsrec.c): the same start, one call into Python. */
int dnsshim_ares__message(const unsigned char *buf, int len, unsigned int flags,
                          dnsshim_ares_message *m, uint64_t *token)
{
    const dns_shim__pool_entries *pool;

    memset(m, 0, sizeof *m);
    *token = 0;
    switch (dnsshim_ares__route(&pool, "ares_dns_parse: ")) {
    case DNSSHIM_ARES__POOLED: {
        int status = pool->ares_message(buf, len, flags, m, token);
        dnsshim_ares__keep(pool, *token);
        return status;
    }
    case DNSSHIM_ARES__NO_POOL:
        return DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        break;
    }
    pthread_once(&dnsshim_ares__once, dnsshim_ares__init_once);
    if (!dnsshim_ares__ready)
        return DNSSHIM_ARES_ENOTINITIALIZED;
    switch (dnsshim_ares__py_message(buf, len, flags, m, token)) {
    case DNSSHIM_ARES__PY_DONE:
        return DNSSHIM_ARES_SUCCESS;
    case 0:
        dnsshim_ares__log("ares_dns_parse: the parser is not attached to the library");
        *token = 0;
        return DNSSHIM_ARES_ENOTINITIALIZED;
    default:
        /* An exception escaped the Python side (logged there). */
        memset(m, 0, sizeof *m);
        *token = 0;
        return DNSSHIM_ARES_EBADRESP;
    }
}

void dnsshim_ares__message_done(uint64_t token)
{
    const dns_shim__pool_entries *pool = dnsshim_ares__held;

    if (pool != NULL) {
        dnsshim_ares__held = NULL;
        pool->ares_message_done(token);
        dns_shim__pool_ares_give();
    } else if (token != 0) {
        dnsshim_ares__py_message_release(token);
    }
}
