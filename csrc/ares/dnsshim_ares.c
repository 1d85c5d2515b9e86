/*
** dnsshim_ares.c: the C half of libdnsshim_ares, c-ares's classic reply
** parsers with dnspython reading the bytes.
**
** Not compiled on its own: build_ffi.py hands it to cffi as the preamble of
** the library's embedded module (_dnsshim_ares_cffi), after cffi's runtime
** (cffi_start_python) and before cffi's code for the two extern "Python"
** functions of csrc/ares/dnsshim_ares.h.
**
** What lives here: the exported c-ares functions, which hand the message to
** the Python side (shim/ares_glue.py) and copy what it computed into c-ares's
** structures, allocated with malloc the way c-ares lays them out, so that
** c-ares's own free functions would free them too; the free functions, which
** recognise this library's allocations and pass any other pointer on to the
** next definition (the real c-ares, when the program links it too);
** ares_strerror.  Not one byte of a message is read in C.
**
** The runtime is libdnsshim's: dns_shim_init() starts the embedded CPython
** (the installation pinned at build time, DNS_SHIM_PYTHON) and puts the shim
** package on sys.path; this library then attaches its own module to that
** interpreter (cffi_start_python runs the init code, which imports
** shim.ares_embedded).
**
** Threads: every function may be called from any thread.  A parse takes the
** interpreter's lock for the time Python computes the result; the copy into
** c-ares's structures runs without it.
*/
#define _GNU_SOURCE 1
#define DNSSHIM_ARES_PYTHON static
#define DNSSHIM_ARES_INTERNAL static
#include "ares/dnsshim_ares.h"
#include "dns_shim.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cffi's runtime, before this file, called the guest through
** csrc/lib/dns_shim_cffi_guest.h; from here on these are Python's. */
#ifndef DNS_SHIM__GUEST_REDIRECTED
#  error "build through build_ffi.py: cffi's unit must include lib/dns_shim_cffi_guest.h first"
#endif
#undef PyImport_ImportModule
#undef PyEval_GetBuiltins

#define DNSSHIM_ARES_API __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

static pthread_once_t dnsshim_ares__once = PTHREAD_ONCE_INIT;
static int dnsshim_ares__ready = 0;
static int dnsshim_ares__start_failed = 0;

static void dnsshim_ares__log(const char *message)
{
    fprintf(stderr, "dnsshim_ares: %s\n", message);
    fflush(stderr);
}

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

static void dnsshim_ares__init_once(void)
{
    /* libdnsshim says why its runtime did not start, through the program's
    ** log handler; every parser then returns ARES_ENOTINITIALIZED. */
    if (dns_shim_init() != DNS_SHIM_OK)
        return;
    if (cffi_start_python() != 0 && !dnsshim_ares__start_failed)
        dnsshim_ares__log("cffi could not load the c-ares layer's module; every parse returns "
                          "ARES_ENOTINITIALIZED");
    else if (!dnsshim_ares__start_failed)
        dnsshim_ares__ready = 1;
}

/* What a parse returns when the parser failed unexpectedly (a bug, logged
** with its traceback): c-ares's code for a reply, a name or a string it
** could not read.  Memory running out is ARES_ENOMEM, from the Python side. */
static int dnsshim_ares__unreadable(int32_t kind)
{
    return kind == DNSSHIM_ARES_KIND_EXPAND_NAME     ? DNSSHIM_ARES_EBADNAME
           : kind == DNSSHIM_ARES_KIND_EXPAND_STRING ? DNSSHIM_ARES_EBADSTR
                                                     : DNSSHIM_ARES_EBADRESP;
}

/* One byte string of a result: absent (NULL, 0), or data[len] is its NUL
** and len is within a message's 65,535 octets. */
static const char *dnsshim_ares__check_bytes(const dnsshim_ares_bytes *b)
{
    if (b->data == NULL)
        return b->len == 0 ? NULL : "a NULL string with a length";
    if (b->len > 65535)
        return "a string longer than a message";
    if (b->data[b->len] != '\0')
        return "a string without its NUL at data[len]";
    return NULL;
}

/* What the Python side filled, checked whole before C copies a byte of it:
** counts within a message's sizes, arrays present for their counts, the
** address length the family's (4 for A, 16 for AAAA; no addresses for the
** other kinds), an expanded encoding within the message.  Returns NULL, or
** what is wrong. */
static const char *dnsshim_ares__check_result(int32_t kind, const dnsshim_ares_result *r,
                                              int len, int offset)
{
    size_t i, k;
    const char *why;

    if ((why = dnsshim_ares__check_bytes(&r->name)) != NULL)
        return why;
    if (r->naliases > 65535 || (r->naliases > 0 && r->aliases == NULL))
        return "an alias count without its aliases";
    for (i = 0; i < r->naliases; i++)
        if ((why = dnsshim_ares__check_bytes(&r->aliases[i])) != NULL)
            return why;
    if (r->naddrs > 0) {
        size_t want = kind == DNSSHIM_ARES_KIND_A ? 4 : kind == DNSSHIM_ARES_KIND_AAAA ? 16 : 0;
        if (want == 0)
            return "addresses for a kind without any";
        if (r->addrlen != want)
            return "an address length that is not its family's";
        if (r->naddrs > 65535 / want || r->addrs == NULL || r->ttls == NULL)
            return "an address count without its addresses";
    }
    if (r->nitems > 65535 || (r->nitems > 0 && r->items == NULL))
        return "an item count without its items";
    for (i = 0; i < r->nitems; i++)
        for (k = 0; k < 4; k++)
            if ((why = dnsshim_ares__check_bytes(&r->items[i].str[k])) != NULL)
                return why;
    if (r->status == DNSSHIM_ARES_SUCCESS &&
        (kind == DNSSHIM_ARES_KIND_EXPAND_NAME || kind == DNSSHIM_ARES_KIND_EXPAND_STRING) &&
        (r->nitems != 1 || r->items[0].num[0] < 1 || r->items[0].num[0] > (int64_t)len - offset))
        return "an encoding length beyond the message";
    return NULL;
}

/* One call into Python.  On return *r holds the result (r->status the
** code) and *token names its memory (release it with
** dnsshim_ares__py_release once copied). */
static int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset,
                                 int flags, dnsshim_ares_result *r, uint64_t *token)
{
    memset(r, 0, sizeof *r);
    *token = 0;
    pthread_once(&dnsshim_ares__once, dnsshim_ares__init_once);
    if (!dnsshim_ares__ready)
        return r->status = DNSSHIM_ARES_ENOTINITIALIZED;
    switch (dnsshim_ares__py_parse(kind, buf, len, offset, flags, r, token)) {
    case DNSSHIM_ARES__PY_DONE: {
        const char *why = dnsshim_ares__check_result(kind, r, len, offset);
        if (why != NULL) {
            /* A bug on the Python side: nothing of it is copied. */
            char line[256];
            snprintf(line, sizeof line, "the parser's result has %s; returning %s", why,
                     kind == DNSSHIM_ARES_KIND_EXPAND_NAME ? "ARES_EBADNAME"
                     : kind == DNSSHIM_ARES_KIND_EXPAND_STRING ? "ARES_EBADSTR" : "ARES_EBADRESP");
            dnsshim_ares__log(line);
            if (*token != 0)
                dnsshim_ares__py_release(*token);
            memset(r, 0, sizeof *r);
            *token = 0;
            return r->status = dnsshim_ares__unreadable(kind);
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
        return r->status = dnsshim_ares__unreadable(kind);
    }
}

static void dnsshim_ares__done(uint64_t token)
{
    if (token != 0)
        dnsshim_ares__py_release(token);
}

/* ------------------------------------------------------------------ */
/* What this library allocated                                          */

/*
** Hostents and strings (ares_expand_name, ares_expand_string) have no room
** for a mark: the pointers handed out are kept in a set, and the free
** functions look them up.  ares_free_data's structures carry a header, as
** c-ares's own do (struct ares_data: type, mark, then the data): the same
** layout with our own mark, so that looking at the header of a c-ares
** pointer reads c-ares's header.
*/
static pthread_mutex_t dnsshim_ares__owned_lock = PTHREAD_MUTEX_INITIALIZER;
static void **dnsshim_ares__owned = NULL; /* open addressing; NULL empty, TOMB deleted */
/* used: slots not empty (live pointers and tombstones); live: pointers held */
static size_t dnsshim_ares__owned_cap = 0, dnsshim_ares__owned_used = 0;
static size_t dnsshim_ares__owned_live = 0;
static char dnsshim_ares__tomb_;
#define DNSSHIM_ARES__TOMB ((void *)&dnsshim_ares__tomb_)

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

/* Records p as ours; returns 0, or -1 when out of memory. */
static int dnsshim_ares__own(void *p)
{
    size_t j;
    int rc = 0;
    pthread_mutex_lock(&dnsshim_ares__owned_lock);
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

/* Forgets p; returns 1 if it was ours. */
static int dnsshim_ares__disown(const void *p)
{
    size_t j;
    int found = 0;
    pthread_mutex_lock(&dnsshim_ares__owned_lock);
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

/* The next definition of a c-ares function after this library (the real
** c-ares's, when the program links it too), or NULL. */
static void *dnsshim_ares__next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

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

static void *dnsshim_ares__new_data(unsigned int type)
{
    dnsshim_ares__data *d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->type = type;
    d->mark = DNSSHIM_ARES__MARK;
    return &d->data;
}

static dnsshim_ares__data *dnsshim_ares__header(void *p)
{
    return (dnsshim_ares__data *)(void *)((char *)p - offsetof(dnsshim_ares__data, data));
}

/* ------------------------------------------------------------------ */
/* The free functions                                                   */

/* Frees a hostent laid out as c-ares lays it out: h_name, each alias, the
** alias array, one block holding every address (h_addr_list[0]), the
** address array, the struct. */
static void dnsshim_ares__free_hostent_fields(dnsshim_ares_hostent *host)
{
    char **p;
    free(host->h_name);
    for (p = host->h_aliases; p != NULL && *p != NULL; p++)
        free(*p);
    free(host->h_aliases);
    if (host->h_addr_list != NULL) {
        free(host->h_addr_list[0]);
        free(host->h_addr_list);
    }
    free(host);
}

DNSSHIM_ARES_API void ares_free_hostent(dnsshim_ares_hostent *host)
{
    void (*next)(dnsshim_ares_hostent *);
    if (host == NULL)
        return;
    if (!dnsshim_ares__disown(host)) {
        *(void **)&next = dnsshim_ares__next("ares_free_hostent");
        if (next != NULL) {
            next(host);
            return;
        }
        /* No other c-ares: c-ares allocates with malloc unless told not to. */
    }
    dnsshim_ares__free_hostent_fields(host);
}

DNSSHIM_ARES_API void ares_free_string(void *str)
{
    void (*next)(void *);
    if (str == NULL)
        return;
    if (!dnsshim_ares__disown(str)) {
        *(void **)&next = dnsshim_ares__next("ares_free_string");
        if (next != NULL) {
            next(str);
            return;
        }
    }
    free(str);
}

DNSSHIM_ARES_API void ares_free_data(void *dataptr)
{
    while (dataptr != NULL) {
        dnsshim_ares__data *d = dnsshim_ares__header(dataptr);
        void *next = NULL;
        if (d->mark != DNSSHIM_ARES__MARK) {
            /* Not ours: c-ares's own (ares_get_servers...). */
            void (*next_free)(void *);
            *(void **)&next_free = dnsshim_ares__next("ares_free_data");
            if (next_free != NULL)
                next_free(dataptr);
            return;
        }
        switch (d->type) {
        case DNSSHIM_ARES__SRV:
            next = d->data.srv.next;
            free(d->data.srv.host);
            break;
        case DNSSHIM_ARES__MX:
            next = d->data.mx.next;
            free(d->data.mx.host);
            break;
        case DNSSHIM_ARES__TXT:
        case DNSSHIM_ARES__TXT_EXT:
            next = d->data.txt.next;
            free(d->data.txt.txt);
            break;
        case DNSSHIM_ARES__NAPTR:
            next = d->data.naptr.next;
            free(d->data.naptr.flags);
            free(d->data.naptr.service);
            free(d->data.naptr.regexp);
            free(d->data.naptr.replacement);
            break;
        case DNSSHIM_ARES__SOA:
            free(d->data.soa.nsname);
            free(d->data.soa.hostmaster);
            break;
        case DNSSHIM_ARES__URI:
            next = d->data.uri.next;
            free(d->data.uri.uri);
            break;
        case DNSSHIM_ARES__CAA:
            next = d->data.caa.next;
            free(d->data.caa.property);
            free(d->data.caa.value);
            break;
        default:
            return; /* not a type we make: leave it */
        }
        d->mark = 0;
        free(d);
        dataptr = next;
    }
}

/* ------------------------------------------------------------------ */
/* Building c-ares's structures                                         */

/* A NUL-terminated copy of s (binary safe: len octets, then a NUL). */
static unsigned char *dnsshim_ares__copy(const dnsshim_ares_bytes *s)
{
    unsigned char *out = malloc(s->len + 1);
    if (out == NULL)
        return NULL;
    if (s->len)
        memcpy(out, s->data, s->len);
    out[s->len] = '\0';
    return out;
}

/* A copy as c-ares makes it with strncpy: cut at the first NUL, the rest of
** the len octets zeroed. */
static unsigned char *dnsshim_ares__copy_cut(const dnsshim_ares_bytes *s)
{
    unsigned char *out = malloc(s->len + 1);
    if (out == NULL)
        return NULL;
    if (s->len)
        strncpy((char *)out, (const char *)s->data, s->len);
    out[s->len] = '\0';
    return out;
}

/* A hostent from the result: r->name, r->aliases, and naddrs addresses of
** length octets at addrs in one block. */
static int dnsshim_ares__hostent(const dnsshim_ares_result *r, int addrtype, int length,
                                 const void *addrs, size_t naddrs, dnsshim_ares_hostent **out)
{
    size_t i;
    dnsshim_ares_hostent *h = calloc(1, sizeof *h);
    *out = NULL;
    if (h == NULL)
        return DNSSHIM_ARES_ENOMEM;
    h->h_addrtype = addrtype;
    h->h_length = length;
    h->h_aliases = calloc(r->naliases + 1, sizeof(char *));
    h->h_addr_list = calloc(naddrs + 1, sizeof(char *));
    if (h->h_aliases == NULL || h->h_addr_list == NULL)
        goto enomem;
    if (r->name.data != NULL && (h->h_name = (char *)dnsshim_ares__copy(&r->name)) == NULL)
        goto enomem;
    for (i = 0; i < r->naliases; i++)
        if ((h->h_aliases[i] = (char *)dnsshim_ares__copy(&r->aliases[i])) == NULL)
            goto enomem;
    if (naddrs > 0) {
        char *block = malloc(naddrs * (size_t)length);
        if (block == NULL)
            goto enomem;
        memcpy(block, addrs, naddrs * (size_t)length);
        for (i = 0; i < naddrs; i++)
            h->h_addr_list[i] = block + i * (size_t)length;
    }
    if (dnsshim_ares__own(h) != 0)
        goto enomem;
    *out = h;
    return DNSSHIM_ARES_SUCCESS;
enomem:
    dnsshim_ares__free_hostent_fields(h);
    return DNSSHIM_ARES_ENOMEM;
}

/* ------------------------------------------------------------------ */
/* The parsers                                                          */

#define DNSSHIM_ARES__HFIXEDSZ 12

static int dnsshim_ares__addresses(int32_t kind, const unsigned char *abuf, int alen,
                                   dnsshim_ares_hostent **host, void *addrttls, int *naddrttls)
{
    dnsshim_ares_result r;
    uint64_t token = 0;
    int req = 0, status;
    int family = kind == DNSSHIM_ARES_KIND_A ? DNSSHIM_ARES_AF_INET : DNSSHIM_ARES_AF_INET6;
    int length = kind == DNSSHIM_ARES_KIND_A ? 4 : 16;

    if (naddrttls != NULL) {
        req = *naddrttls;
        *naddrttls = 0;
    }
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__compute(kind, abuf, alen, 0, host ? DNSSHIM_ARES_WANT_HOST : 0, &r,
                                   &token);
    if (status != DNSSHIM_ARES_SUCCESS && status != DNSSHIM_ARES_ENODATA)
        goto done;
    if (host != NULL) {
        *host = NULL;
        if (r.have_host &&
            dnsshim_ares__hostent(&r, family, length, r.addrs, r.naddrs, host) != 0) {
            status = DNSSHIM_ARES_ENOMEM;
            goto done;
        }
    }
    if (addrttls != NULL && req > 0) {
        size_t i, n = r.naddrs < (size_t)req ? r.naddrs : (size_t)req;
        for (i = 0; i < n; i++) {
            if (kind == DNSSHIM_ARES_KIND_A) {
                dnsshim_ares_addrttl *t = (dnsshim_ares_addrttl *)addrttls + i;
                memcpy(t->ipaddr, r.addrs + 4 * i, 4);
                t->ttl = r.ttls[i];
            } else {
                dnsshim_ares_addr6ttl *t = (dnsshim_ares_addr6ttl *)addrttls + i;
                memcpy(t->ip6addr, r.addrs + 16 * i, 16);
                t->ttl = r.ttls[i];
            }
        }
        *naddrttls = (int)n;
    }
done:
    dnsshim_ares__done(token);
    return status;
}

DNSSHIM_ARES_API int ares_parse_a_reply(const unsigned char *abuf, int alen,
                                        dnsshim_ares_hostent **host,
                                        dnsshim_ares_addrttl *addrttls, int *naddrttls)
{
    return dnsshim_ares__addresses(DNSSHIM_ARES_KIND_A, abuf, alen, host, addrttls, naddrttls);
}

DNSSHIM_ARES_API int ares_parse_aaaa_reply(const unsigned char *abuf, int alen,
                                           dnsshim_ares_hostent **host,
                                           dnsshim_ares_addr6ttl *addrttls, int *naddrttls)
{
    return dnsshim_ares__addresses(DNSSHIM_ARES_KIND_AAAA, abuf, alen, host, addrttls,
                                   naddrttls);
}

DNSSHIM_ARES_API int ares_parse_ns_reply(const unsigned char *abuf, int alen,
                                         dnsshim_ares_hostent **host)
{
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (host == NULL)
        return DNSSHIM_ARES_EBADQUERY; /* c-ares would crash */
    *host = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__compute(DNSSHIM_ARES_KIND_NS, abuf, alen, 0, DNSSHIM_ARES_WANT_HOST,
                                   &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS)
        status = dnsshim_ares__hostent(&r, DNSSHIM_ARES_AF_INET, 4, NULL, 0, host);
    dnsshim_ares__done(token);
    return status;
}

DNSSHIM_ARES_API int ares_parse_ptr_reply(const unsigned char *abuf, int alen, const void *addr,
                                          int addrlen, int family, dnsshim_ares_hostent **host)
{
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (host == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    *host = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__compute(DNSSHIM_ARES_KIND_PTR, abuf, alen, 0,
                                   DNSSHIM_ARES_WANT_HOST, &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS)
        status = dnsshim_ares__hostent(&r, family, addrlen, addr,
                                       addr != NULL && addrlen > 0 ? 1 : 0, host);
    dnsshim_ares__done(token);
    return status;
}

/* One list element of `type` from item *it; returns the element or NULL. */
static void *dnsshim_ares__element(unsigned int type, const dnsshim_ares_item *it)
{
    void *p = dnsshim_ares__new_data(type);
    int ok = 1;
    if (p == NULL)
        return NULL;
    switch (type) {
    case DNSSHIM_ARES__MX: {
        dnsshim_ares_mx_reply *mx = p;
        mx->priority = (unsigned short)it->num[0];
        ok = (mx->host = (char *)dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__SRV: {
        dnsshim_ares_srv_reply *srv = p;
        srv->priority = (unsigned short)it->num[0];
        srv->weight = (unsigned short)it->num[1];
        srv->port = (unsigned short)it->num[2];
        ok = (srv->host = (char *)dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__TXT:
    case DNSSHIM_ARES__TXT_EXT: {
        dnsshim_ares_txt_ext *txt = p; /* ares_txt_reply is its first members */
        txt->length = it->str[0].len;
        if (type == DNSSHIM_ARES__TXT_EXT)
            txt->record_start = (unsigned char)it->num[0];
        ok = (txt->txt = dnsshim_ares__copy(&it->str[0])) != NULL;
        break;
    }
    case DNSSHIM_ARES__NAPTR: {
        dnsshim_ares_naptr_reply *naptr = p;
        naptr->order = (unsigned short)it->num[0];
        naptr->preference = (unsigned short)it->num[1];
        ok = (naptr->flags = dnsshim_ares__copy_cut(&it->str[0])) != NULL &&
             (naptr->service = dnsshim_ares__copy_cut(&it->str[1])) != NULL &&
             (naptr->regexp = dnsshim_ares__copy_cut(&it->str[2])) != NULL &&
             (naptr->replacement = (char *)dnsshim_ares__copy(&it->str[3])) != NULL;
        break;
    }
    case DNSSHIM_ARES__SOA: {
        dnsshim_ares_soa_reply *soa = p;
        soa->serial = (unsigned int)it->num[0];
        soa->refresh = (unsigned int)it->num[1];
        soa->retry = (unsigned int)it->num[2];
        soa->expire = (unsigned int)it->num[3];
        soa->minttl = (unsigned int)it->num[4];
        ok = (soa->nsname = (char *)dnsshim_ares__copy(&it->str[0])) != NULL &&
             (soa->hostmaster = (char *)dnsshim_ares__copy(&it->str[1])) != NULL;
        break;
    }
    case DNSSHIM_ARES__CAA: {
        dnsshim_ares_caa_reply *caa = p;
        caa->critical = (int)it->num[0];
        caa->plength = it->str[0].len;
        caa->length = it->str[1].len;
        ok = (caa->property = dnsshim_ares__copy(&it->str[0])) != NULL &&
             (caa->value = dnsshim_ares__copy(&it->str[1])) != NULL;
        break;
    }
    case DNSSHIM_ARES__URI: {
        dnsshim_ares_uri_reply *uri = p;
        uri->priority = (unsigned short)it->num[0];
        uri->weight = (unsigned short)it->num[1];
        uri->ttl = (int)it->num[2];
        ok = (uri->uri = (char *)dnsshim_ares__copy_cut(&it->str[0])) != NULL;
        break;
    }
    }
    if (!ok) {
        ares_free_data(p);
        return NULL;
    }
    return p;
}

/* The `next` member is the first of every list element type. */
typedef struct dnsshim_ares__link {
    struct dnsshim_ares__link *next;
} dnsshim_ares__link;

/* A list parser: *out gets the list (NULL when empty) on success. */
static int dnsshim_ares__list(int32_t kind, unsigned int type, const unsigned char *abuf,
                              int alen, void **out)
{
    dnsshim_ares_result r;
    uint64_t token;
    dnsshim_ares__link *head = NULL, *last = NULL;
    size_t i;
    int status;
    if (out == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    *out = NULL;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__compute(kind, abuf, alen, 0, 0, &r, &token);
    for (i = 0; status == DNSSHIM_ARES_SUCCESS && i < r.nitems; i++) {
        dnsshim_ares__link *e = dnsshim_ares__element(type, &r.items[i]);
        if (e == NULL) {
            status = DNSSHIM_ARES_ENOMEM;
            ares_free_data(head);
            head = NULL;
            break;
        }
        if (last != NULL)
            last->next = e;
        else
            head = e;
        last = e;
    }
    dnsshim_ares__done(token);
    if (status == DNSSHIM_ARES_SUCCESS)
        *out = head;
    return status;
}

DNSSHIM_ARES_API int ares_parse_mx_reply(const unsigned char *abuf, int alen,
                                         dnsshim_ares_mx_reply **mx_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_MX, DNSSHIM_ARES__MX, abuf, alen,
                              (void **)mx_out);
}

DNSSHIM_ARES_API int ares_parse_srv_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_srv_reply **srv_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_SRV, DNSSHIM_ARES__SRV, abuf, alen,
                              (void **)srv_out);
}

DNSSHIM_ARES_API int ares_parse_txt_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_txt_reply **txt_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_TXT, DNSSHIM_ARES__TXT, abuf, alen,
                              (void **)txt_out);
}

DNSSHIM_ARES_API int ares_parse_txt_reply_ext(const unsigned char *abuf, int alen,
                                              dnsshim_ares_txt_ext **txt_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_TXT_EXT, DNSSHIM_ARES__TXT_EXT, abuf, alen,
                              (void **)txt_out);
}

DNSSHIM_ARES_API int ares_parse_naptr_reply(const unsigned char *abuf, int alen,
                                            dnsshim_ares_naptr_reply **naptr_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_NAPTR, DNSSHIM_ARES__NAPTR, abuf, alen,
                              (void **)naptr_out);
}

DNSSHIM_ARES_API int ares_parse_caa_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_caa_reply **caa_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_CAA, DNSSHIM_ARES__CAA, abuf, alen,
                              (void **)caa_out);
}

DNSSHIM_ARES_API int ares_parse_uri_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_uri_reply **uri_out)
{
    return dnsshim_ares__list(DNSSHIM_ARES_KIND_URI, DNSSHIM_ARES__URI, abuf, alen,
                              (void **)uri_out);
}

DNSSHIM_ARES_API int ares_parse_soa_reply(const unsigned char *abuf, int alen,
                                          dnsshim_ares_soa_reply **soa_out)
{
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    /* c-ares leaves *soa_out alone when it fails. */
    if (soa_out == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    if (abuf == NULL || alen < DNSSHIM_ARES__HFIXEDSZ)
        return DNSSHIM_ARES_EBADRESP;
    status = dnsshim_ares__compute(DNSSHIM_ARES_KIND_SOA, abuf, alen, 0, 0, &r, &token);
    if (status == DNSSHIM_ARES_SUCCESS) {
        dnsshim_ares_soa_reply *soa = r.nitems == 1
            ? dnsshim_ares__element(DNSSHIM_ARES__SOA, &r.items[0]) : NULL;
        if (soa == NULL)
            status = DNSSHIM_ARES_ENOMEM;
        else
            *soa_out = soa;
    }
    dnsshim_ares__done(token);
    return status;
}

/* ares_expand_name and ares_expand_string: *s a string of ours (freed by
** ares_free_string), *enclen the octets the encoding takes. */
static int dnsshim_ares__expand(int32_t kind, int error, int cut, const unsigned char *encoded,
                                const unsigned char *abuf, int alen, unsigned char **s,
                                long *enclen)
{
    dnsshim_ares_result r;
    uint64_t token;
    int status;
    if (s == NULL || enclen == NULL)
        return DNSSHIM_ARES_EBADQUERY;
    if (abuf == NULL || encoded == NULL || alen <= 0 || encoded < abuf ||
        encoded >= abuf + alen)
        return error;
    status = dnsshim_ares__compute(kind, abuf, alen, (int)(encoded - abuf), 0, &r, &token);
    if (status == DNSSHIM_ARES_ENOTINITIALIZED) {
        /* The runtime cannot start (libdnsshim logged why).  c-ares's own
        ** resolver checks the question of every answer with these two: the
        ** real c-ares's answer, where the program links it, keeps the
        ** resolver matching answers, so that the program hears
        ** ARES_ENOTINITIALIZED from the parsers at once instead of
        ** ARES_ETIMEOUT after its full timeout.  A program without c-ares
        ** gets the code. */
        int (*next)(const unsigned char *, const unsigned char *, int, unsigned char **, long *);
        *(void **)&next = dnsshim_ares__next(kind == DNSSHIM_ARES_KIND_EXPAND_NAME
                                             ? "ares_expand_name" : "ares_expand_string");
        if (next != NULL)
            return next(encoded, abuf, alen, s, enclen);
    }
    if (status == DNSSHIM_ARES_SUCCESS) {
        unsigned char *copy = r.nitems == 1
            ? (cut ? dnsshim_ares__copy_cut : dnsshim_ares__copy)(&r.items[0].str[0]) : NULL;
        if (copy == NULL || dnsshim_ares__own(copy) != 0) {
            free(copy);
            status = DNSSHIM_ARES_ENOMEM;
        } else {
            *s = copy;
            *enclen = (long)r.items[0].num[0];
        }
    }
    dnsshim_ares__done(token);
    return status;
}

DNSSHIM_ARES_API int ares_expand_name(const unsigned char *encoded, const unsigned char *abuf,
                                      int alen, char **s, long *enclen)
{
    return dnsshim_ares__expand(DNSSHIM_ARES_KIND_EXPAND_NAME, DNSSHIM_ARES_EBADNAME, 0, encoded,
                                abuf, alen, (unsigned char **)s, enclen);
}

DNSSHIM_ARES_API int ares_expand_string(const unsigned char *encoded,
                                        const unsigned char *abuf, int alen,
                                        unsigned char **s, long *enclen)
{
    return dnsshim_ares__expand(DNSSHIM_ARES_KIND_EXPAND_STRING, DNSSHIM_ARES_EBADSTR, 1, encoded,
                                abuf, alen, s, enclen);
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

/* c-ares 1.18's texts, by code (ares_strerror.c); a code beyond them goes
** to the real c-ares when the program links it too (a newer one knows more). */
DNSSHIM_ARES_API const char *ares_strerror(int code)
{
    const char *(*next)(int);
    static const char *const texts[] = {
        "Successful completion",
        "DNS server returned answer with no data",
        "DNS server claims query was misformatted",
        "DNS server returned general failure",
        "Domain name not found",
        "DNS server does not implement requested operation",
        "DNS server refused query",
        "Misformatted DNS query",
        "Misformatted domain name",
        "Unsupported address family",
        "Misformatted DNS reply",
        "Could not contact DNS servers",
        "Timeout while contacting DNS servers",
        "End of file",
        "Error reading file",
        "Out of memory",
        "Channel is being destroyed",
        "Misformatted string",
        "Illegal flags specified",
        "Given hostname is not numeric",
        "Illegal hints flags specified",
        "c-ares library initialization not yet performed",
        "Error loading iphlpapi.dll",
        "Could not find GetNetworkParams function",
        "DNS query cancelled",
    };
    if (code >= 0 && code < (int)(sizeof texts / sizeof texts[0]))
        return texts[code];
    *(void **)&next = dnsshim_ares__next("ares_strerror");
    return next != NULL ? next(code) : "unknown";
}
