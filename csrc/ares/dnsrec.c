/*
** dnsrec.c: ares_dns_parse, the parser c-ares 1.22 and later run on every
** message (its resolver on each reply, ares_send on the program's query,
** ares_dns_record_duplicate on a copy), with dnspython reading the octets.
**
** The Python side (shim/ares_dnsrec.py) decodes the whole message and hands
** over a plan (dnsshim_ares_message: the header's values, the question, each
** record with its fields).  This file checks the whole plan, then makes the
** record with the public builders of the c-ares library loaded in the
** process: the one whose ares_dns_parse this definition comes before
** (LD_PRELOAD, or -ldnsshim_ares before -lcares).  The record is c-ares's
** own, allocated by c-ares's allocator (ares_library_init_mem included):
** the program and c-ares use it, write it and free it with
** ares_dns_record_destroy as ever.  The builders check what c-ares's own
** parser has them check (the opcode, the rcode, each type and class), so
** those answers are c-ares's.
**
** Which c-ares: the one the caller reaches (libcares itself, when its
** resolver calls; loaded RTLD_LOCAL too, as a Python extension's c-ares
** is), else the next definition of ares_dns_record_create after this
** library, else the first in the process; found once per calling object,
** with its ares_version, and found again once any object has been unloaded
** (a plugin dlclosed: another may be loaded where it was, linked against
** another c-ares).  A c-ares older than 1.28 (no ares_dns_rr_add_abin:
** TXT strings as an array), or none at all, gets ARES_ENOTIMP, and the
** first such call one log line naming what was found.
**
** The classic parsers, the free functions and ares_strerror ask the same
** question of their own callers (dnsshim_ares__modern,
** dnsshim_ares__theirs): the c-ares a program's call is for is the one the
** calling object reaches, a Python extension's loaded RTLD_LOCAL included,
** and each function passed on to is taken from that c-ares library itself,
** looked up once when the library is first found.
*/
#define _GNU_SOURCE 1
#include "ares/dnsshim_ares_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The oldest c-ares whose builders this file uses (ARES_VERSION's form). */
#define DNSSHIM_ARES__DNSREC_FLOOR 0x011c00 /* 1.28.0 */
#define DNSSHIM_ARES__DNSREC_FLOOR_TEXT "1.28.0"

/* ares_dns_datatype_t */
enum {
    DNSSHIM_ARES__INADDR = 1,
    DNSSHIM_ARES__INADDR6 = 2,
    DNSSHIM_ARES__U8 = 3,
    DNSSHIM_ARES__U16 = 4,
    DNSSHIM_ARES__U32 = 5,
    DNSSHIM_ARES__NAME = 6,
    DNSSHIM_ARES__STR = 7,
    DNSSHIM_ARES__BIN = 8,
    DNSSHIM_ARES__BINP = 9,
    DNSSHIM_ARES__OPT = 10,
    DNSSHIM_ARES__ABINP = 11
};

/* c-ares's builders, as this file calls them (ares_dns_record.h: the
** enums are ints in the C ABI, the records opaque). */
struct dnsshim_ares__builders {
    const char *(*version)(int *);
    int (*create)(void **, unsigned short, unsigned short, int, int);
    void (*destroy)(void *);
    int (*query_add)(void *, const char *, int, int);
    int (*rr_add)(void **, void *, int, const char *, int, int, unsigned int);
    int (*key_datatype)(int);
    int (*set_addr)(void *, int, const void *);
    int (*set_addr6)(void *, int, const void *);
    int (*set_u8)(void *, int, unsigned char);
    int (*set_u16)(void *, int, unsigned short);
    int (*set_u32)(void *, int, unsigned int);
    int (*set_str)(void *, int, const char *);
    int (*set_bin)(void *, int, const unsigned char *, size_t);
    int (*add_abin)(void *, int, const unsigned char *, size_t);
    int (*set_opt)(void *, int, unsigned short, const unsigned char *, size_t);
};

/* One c-ares library of the process: its builders, its own definitions of
** the functions this library passes calls on to, whether its own calls of
** ares_dns_parse reach this definition (dnsshim_ares__probe), and why it
** cannot be used when it cannot. */
typedef struct dnsshim_ares__cares_lib {
    const void *base; /* its load address (Dl_info's dli_fbase) */
    struct dnsshim_ares__builders b;
    void *(*duplicate)(const void *);
    /* DNSSHIM_ARES__FUNCTIONS's, from the library itself (NULL: not
    ** there); written with the entry, under the lock, never after. */
    void *fns[DNSSHIM_ARES__FNS];
    int usable;
    int interposed;
    int logged;
    char why[512];
} dnsshim_ares__cares_lib;

/* The c-ares libraries seen, and which one each caller's object uses: a
** process may hold more than one (a program's, and a Python extension's
** loaded RTLD_LOCAL), and a record must be made by the c-ares that will use
** it, the one that will free it.
**
** The libraries' table keeps its entries: a library found stays open (its
** handle is kept), so its builders stay callable and its load address is
** never another object's.
**
** The callers' table is keyed by a load address, which an object does not
** keep: once it is dlclosed, another (a plugin linked against another
** c-ares) may be loaded at the same address.  So the table only answers for
** the objects loaded when it was filled: it is emptied whenever the
** loader's count of objects unloaded (dl_iterate_phdr's dlpi_subs) is no
** longer the one it was filled under.  An entry is filled, under the lock,
** for the object calling at that moment, which is loaded; an object
** unloaded after that raises the count, and the next call empties the
** table before reading it.  Where the loader gives no such count, the table
** is not used: every call looks again. */
#define DNSSHIM_ARES__LIBS 8
#define DNSSHIM_ARES__CALLERS 32
static dnsshim_ares__cares_lib dnsshim_ares__libs[DNSSHIM_ARES__LIBS];
static size_t dnsshim_ares__nlibs = 0;
static struct {
    const void *base;
    dnsshim_ares__cares_lib *lib; /* NULL: no c-ares from there */
} dnsshim_ares__callers[DNSSHIM_ARES__CALLERS];
static size_t dnsshim_ares__ncallers = 0;
/* dlpi_subs when the callers' table was last emptied (the lock held). */
static unsigned long long dnsshim_ares__callers_subs = 0;
static pthread_mutex_t dnsshim_ares__libs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t dnsshim_ares__none_once = PTHREAD_ONCE_INIT;

void dnsshim_ares__libs_fork(int phase)
{
    dnsshim_ares__fork_mutex(&dnsshim_ares__libs_lock, phase);
}

static __thread int dnsshim_ares__probing = 0;
static __thread int dnsshim_ares__probe_reached = 0;

/* Does c-ares call this ares_dns_parse itself?  ares_dns_record_duplicate
** writes a record and parses it again: with a one-question record, and
** this thread's next ares_dns_parse answering the probe, the answer is
** whether that call arrived here.  It does when this library comes before
** c-ares in the lookup order and c-ares calls the function through its
** PLT, as c-ares's shared library does. */
static int dnsshim_ares__probe(const dnsshim_ares__cares_lib *lib)
{
    void *rec = NULL, *copy;
    if (lib->duplicate == NULL || lib->b.create(&rec, 0, 0, 0, 0) != DNSSHIM_ARES_SUCCESS)
        return 0;
    dnsshim_ares__probe_reached = 0;
    if (lib->b.query_add(rec, "probe.invalid", 1, 1) == DNSSHIM_ARES_SUCCESS) {
        dnsshim_ares__probing = 1;
        copy = lib->duplicate(rec);
        dnsshim_ares__probing = 0;
        if (copy != NULL)
            lib->b.destroy(copy);
    }
    lib->b.destroy(rec);
    return dnsshim_ares__probe_reached;
}

static const char *const dnsshim_ares__fn_names[DNSSHIM_ARES__FNS] = {
#define DNSSHIM_ARES__FN_NAME(name) #name,
    DNSSHIM_ARES__FUNCTIONS(DNSSHIM_ARES__FN_NAME)
#undef DNSSHIM_ARES__FN_NAME
};

/* The functions DNSSHIM_ARES__FUNCTIONS names, as that c-ares library
** defines them: looked up in its handle, which searches the library and its
** own dependencies, never a preloaded library; one that resolves to this
** library all the same is left out (calling it would come back here). */
static void dnsshim_ares__find_fns(dnsshim_ares__cares_lib *lib, void *handle)
{
    Dl_info self, found;
    size_t i;
    int known = dladdr((void *)dnsshim_ares__find_fns, &self) != 0;
    for (i = 0; i < DNSSHIM_ARES__FNS; i++) {
        void *f = dlsym(handle, dnsshim_ares__fn_names[i]);
        if (f != NULL && (!known || (dladdr(f, &found) != 0 && found.dli_fbase == self.dli_fbase)))
            f = NULL;
        lib->fns[i] = f;
    }
}

/* One builder from the handle into its field (POSIX's idiom for a
** function pointer from dlsym); *missing names it when it is not there. */
#define DNSSHIM_ARES__FIND(field, name)                                        \
    do {                                                                       \
        *(void **)&lib->b.field = dlsym(handle, name);                         \
        if (lib->b.field == NULL && missing == NULL)                           \
            missing = name;                                                    \
    } while (0)

/* The c-ares library whose ares_dns_record_create is `create`, its entry
** made on first sight (the lock held), or NULL when the table is full. */
static dnsshim_ares__cares_lib *dnsshim_ares__lib(void *create)
{
    dnsshim_ares__cares_lib *lib;
    Dl_info info;
    void *handle;
    const char *missing = NULL, *text;
    size_t i;
    int number = 0;

    if (dladdr(create, &info) == 0 || info.dli_fname == NULL)
        return NULL;
    for (i = 0; i < dnsshim_ares__nlibs; i++)
        if (dnsshim_ares__libs[i].base == info.dli_fbase)
            return &dnsshim_ares__libs[i];
    if (dnsshim_ares__nlibs == DNSSHIM_ARES__LIBS)
        return NULL;
    lib = &dnsshim_ares__libs[dnsshim_ares__nlibs++];
    lib->base = info.dli_fbase;
    /* The library itself, already loaded (RTLD_LOCAL or not): its builders,
    ** not another copy's.  The handle is kept: it holds that library in the
    ** process for as long as these pointers may be called. */
    handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL) {
        snprintf(lib->why, sizeof lib->why, "ares_dns_parse: the c-ares at %s cannot be opened "
                 "again (%s); returning ARES_ENOTIMP", info.dli_fname, dlerror());
        return lib;
    }
    dnsshim_ares__find_fns(lib, handle);
    DNSSHIM_ARES__FIND(version, "ares_version");
    DNSSHIM_ARES__FIND(create, "ares_dns_record_create");
    DNSSHIM_ARES__FIND(destroy, "ares_dns_record_destroy");
    DNSSHIM_ARES__FIND(query_add, "ares_dns_record_query_add");
    DNSSHIM_ARES__FIND(rr_add, "ares_dns_record_rr_add");
    DNSSHIM_ARES__FIND(key_datatype, "ares_dns_rr_key_datatype");
    DNSSHIM_ARES__FIND(set_addr, "ares_dns_rr_set_addr");
    DNSSHIM_ARES__FIND(set_addr6, "ares_dns_rr_set_addr6");
    DNSSHIM_ARES__FIND(set_u8, "ares_dns_rr_set_u8");
    DNSSHIM_ARES__FIND(set_u16, "ares_dns_rr_set_u16");
    DNSSHIM_ARES__FIND(set_u32, "ares_dns_rr_set_u32");
    DNSSHIM_ARES__FIND(set_str, "ares_dns_rr_set_str");
    DNSSHIM_ARES__FIND(set_bin, "ares_dns_rr_set_bin");
    DNSSHIM_ARES__FIND(add_abin, "ares_dns_rr_add_abin");
    DNSSHIM_ARES__FIND(set_opt, "ares_dns_rr_set_opt");
    *(void **)&lib->duplicate = dlsym(handle, "ares_dns_record_duplicate");
    if (missing != NULL) {
        snprintf(lib->why, sizeof lib->why, "ares_dns_parse: the c-ares at %s has no %s; "
                 "returning ARES_ENOTIMP: it needs c-ares " DNSSHIM_ARES__DNSREC_FLOOR_TEXT
                 " or later", info.dli_fname, missing);
        return lib;
    }
    text = lib->b.version(&number);
    if (number < DNSSHIM_ARES__DNSREC_FLOOR) {
        snprintf(lib->why, sizeof lib->why, "ares_dns_parse: the c-ares at %s is %s; returning "
                 "ARES_ENOTIMP: it needs c-ares " DNSSHIM_ARES__DNSREC_FLOOR_TEXT " or later",
                 info.dli_fname, text != NULL ? text : "of an unknown version");
        return lib;
    }
    lib->usable = 1;
    lib->interposed = dnsshim_ares__probe(lib);
    return lib;
}

/* dl_iterate_phdr's callback: the process's count of objects unloaded,
** from the first object (every object is given the same count). */
static int dnsshim_ares__read_subs(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        *(unsigned long long *)data = info->dlpi_subs;
        return 1;
    }
    return -1;
}

/* The callers' table, emptied if an object has been unloaded since it was
** last emptied (the lock held).  0: the loader gives no count, the table
** cannot be trusted and is not to be used. */
static int dnsshim_ares__callers_current(void)
{
    unsigned long long subs = 0;
    if (dl_iterate_phdr(dnsshim_ares__read_subs, &subs) != 1) {
        dnsshim_ares__ncallers = 0;
        return 0;
    }
    if (subs != dnsshim_ares__callers_subs) {
        dnsshim_ares__ncallers = 0;
        dnsshim_ares__callers_subs = subs;
    }
    return 1;
}

/* The load address (Dl_info's dli_fbase) of the object holding `address`,
** or NULL.  The classic parsers ask on every call: where the C library has
** _dl_find_object (glibc 2.35), that, which takes no lock and reads no
** symbol table; else dladdr.  *info is filled when the answer came from
** dladdr (*have_info set). */
static const void *dnsshim_ares__base_of(const void *address, Dl_info *info, int *have_info)
{
    *have_info = 0;
    if (address == NULL)
        return NULL;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
    {
        struct dl_find_object found;
        if (_dl_find_object((void *)(uintptr_t)address, &found) == 0)
            return found.dlfo_map_start;
    }
#endif
    if (dladdr(address, info) == 0)
        return NULL;
    *have_info = 1;
    return info->dli_fbase;
}

/* The c-ares a call from `caller` (an address in the calling object) is
** for: the one that object reaches (itself, when it is libcares calling
** from its resolver; its dependencies' for a program's own call, or a
** plugin's, loaded RTLD_LOCAL or not), else the next after this library,
** else the first in the process.  NULL: none. */
static dnsshim_ares__cares_lib *dnsshim_ares__cares_for(const void *caller)
{
    dnsshim_ares__cares_lib *lib = NULL;
    Dl_info info;
    const void *base;
    void *create = NULL;
    size_t i;
    int cache, have_info;

    base = dnsshim_ares__base_of(caller, &info, &have_info);
    dnsshim_ares__lock(&dnsshim_ares__libs_lock);
    cache = dnsshim_ares__callers_current();
    for (i = 0; i < dnsshim_ares__ncallers; i++) {
        if (dnsshim_ares__callers[i].base == base) {
            lib = dnsshim_ares__callers[i].lib;
            pthread_mutex_unlock(&dnsshim_ares__libs_lock);
            return lib;
        }
    }
    /* Not known: the file of the object, from dladdr (the object is loaded:
    ** it is calling). */
    if (base != NULL && !have_info)
        have_info = dladdr(caller, &info) != 0 && info.dli_fbase == base;
    if (have_info && info.dli_fname != NULL) {
        void *handle = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (handle != NULL) {
            create = dlsym(handle, "ares_dns_record_create");
            dlclose(handle);
        }
    }
    if (create == NULL)
        create = dlsym(RTLD_NEXT, "ares_dns_record_create");
    if (create == NULL)
        create = dlsym(RTLD_DEFAULT, "ares_dns_record_create");
    if (create != NULL)
        lib = dnsshim_ares__lib(create);
    if (cache && dnsshim_ares__ncallers < DNSSHIM_ARES__CALLERS) {
        dnsshim_ares__callers[dnsshim_ares__ncallers].base = base;
        dnsshim_ares__callers[dnsshim_ares__ncallers++].lib = lib;
    }
    pthread_mutex_unlock(&dnsshim_ares__libs_lock);
    return lib;
}

void *dnsshim_ares__modern(int fn, const void *caller)
{
    const dnsshim_ares__cares_lib *lib;
    if (fn < 0 || fn >= DNSSHIM_ARES__FNS)
        return NULL;
    lib = dnsshim_ares__cares_for(caller);
    return lib != NULL && lib->usable && lib->interposed ? lib->fns[fn] : NULL;
}

void *dnsshim_ares__theirs(int fn, const void *caller)
{
    const dnsshim_ares__cares_lib *lib;
    if (fn < 0 || fn >= DNSSHIM_ARES__FNS)
        return NULL;
    lib = dnsshim_ares__cares_for(caller);
    if (lib != NULL && lib->fns[fn] != NULL)
        return lib->fns[fn];
    return dnsshim_ares__next(dnsshim_ares__fn_names[fn]);
}

/* ------------------------------------------------------------------ */
/* The plan, checked whole before the first builder runs                */

/* A text field: NUL-terminated where its length says, no NUL before. */
static int dnsshim_ares__text_ok(const dnsshim_ares_bytes *b)
{
    return b->data != NULL && b->len < 65536 && memchr(b->data, '\0', b->len) == NULL &&
           b->data[b->len] == '\0';
}

static const char *dnsshim_ares__check_field(const struct dnsshim_ares__builders *c,
                                             const dnsshim_ares_field *f)
{
    int expected = c->key_datatype((int)f->key);
    if (f->datatype < DNSSHIM_ARES__INADDR || f->datatype > DNSSHIM_ARES__ABINP)
        return "a field of an unknown datatype";
    if ((int)f->datatype != expected)
        return "a field whose datatype is not its key's";
    switch (f->datatype) {
    case DNSSHIM_ARES__INADDR:
        return f->bytes.data != NULL && f->bytes.len == 4 ? NULL : "an IPv4 address not of 4 octets";
    case DNSSHIM_ARES__INADDR6:
        return f->bytes.data != NULL && f->bytes.len == 16 ? NULL
                                                            : "an IPv6 address not of 16 octets";
    case DNSSHIM_ARES__U8:
        return f->number <= 0xFF ? NULL : "an 8-bit field above 255";
    case DNSSHIM_ARES__U16:
        return f->number <= 0xFFFF ? NULL : "a 16-bit field above 65535";
    case DNSSHIM_ARES__U32:
        return NULL;
    case DNSSHIM_ARES__NAME:
    case DNSSHIM_ARES__STR:
        return dnsshim_ares__text_ok(&f->bytes) ? NULL : "a text field that is not a C string";
    case DNSSHIM_ARES__OPT:
        if (f->number > 0xFFFF)
            return "an option code above 65535";
        /* fall through */
    default: /* BIN, BINP, ABINP */
        return (f->bytes.data != NULL || f->bytes.len == 0) && f->bytes.len < 65536
                   ? NULL
                   : "octets without a buffer or longer than a message";
    }
}

/* NULL, or what is wrong with the plan of a message of len octets. */
static const char *dnsshim_ares__check_message(const struct dnsshim_ares__builders *c,
                                               const dnsshim_ares_message *m, size_t len)
{
    size_t i, j, fields = 0;
    if (m->status != DNSSHIM_ARES_SUCCESS)
        return m->status == DNSSHIM_ARES_EFORMERR || m->status == DNSSHIM_ARES_EBADRESP ||
                       m->status == DNSSHIM_ARES_EBADNAME || m->status == DNSSHIM_ARES_EBADSTR ||
                       m->status == DNSSHIM_ARES_ENOMEM
                   ? NULL
                   : "a status ares_dns_parse does not return";
    if (m->id > 0xFFFF || m->flags > 0x7F || m->opcode > 0xF || m->rcode > 0xFFF)
        return "a header field out of its range";
    if (!dnsshim_ares__text_ok(&m->qname) || m->qtype > 0xFFFF || m->qclass > 0xFFFF)
        return "a question that is not one";
    /* Each record takes 11 octets at least: no more than the message holds. */
    if (m->nrrs > len / 11 || (m->nrrs > 0 && m->rrs == NULL))
        return "more records than the message holds";
    for (i = 0; i < m->nrrs; i++) {
        const dnsshim_ares_rr *rr = &m->rrs[i];
        if (rr->section < 1 || rr->section > 3 || rr->type > 65536 || rr->rclass > 0xFFFF)
            return "a record out of range";
        if (!dnsshim_ares__text_ok(&rr->name))
            return "a record's name that is not a C string";
        if (rr->nfields > len || (rr->nfields > 0 && rr->fields == NULL))
            return "more fields than the message holds";
        fields += rr->nfields;
        if (fields > len)
            return "more fields than the message holds";
        for (j = 0; j < rr->nfields; j++) {
            const char *why = dnsshim_ares__check_field(c, &rr->fields[j]);
            if (why != NULL)
                return why;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The record                                                           */

static int dnsshim_ares__set(const struct dnsshim_ares__builders *c, void *rr,
                            const dnsshim_ares_field *f)
{
    int key = (int)f->key;
    switch (f->datatype) {
    case DNSSHIM_ARES__INADDR:
        return c->set_addr(rr, key, f->bytes.data);
    case DNSSHIM_ARES__INADDR6:
        return c->set_addr6(rr, key, f->bytes.data);
    case DNSSHIM_ARES__U8:
        return c->set_u8(rr, key, (unsigned char)f->number);
    case DNSSHIM_ARES__U16:
        return c->set_u16(rr, key, (unsigned short)f->number);
    case DNSSHIM_ARES__U32:
        return c->set_u32(rr, key, f->number);
    case DNSSHIM_ARES__NAME:
    case DNSSHIM_ARES__STR:
        return c->set_str(rr, key, (const char *)f->bytes.data);
    case DNSSHIM_ARES__ABINP:
        return c->add_abin(rr, key, f->bytes.data, f->bytes.len);
    case DNSSHIM_ARES__OPT:
        return c->set_opt(rr, key, (unsigned short)f->number,
                                           f->bytes.len ? f->bytes.data : NULL, f->bytes.len);
    default: /* BIN, BINP */
        return c->set_bin(rr, key, f->bytes.data, f->bytes.len);
    }
}

static int dnsshim_ares__build(const struct dnsshim_ares__builders *c,
                              const dnsshim_ares_message *m, void **out)
{
    void *rec = NULL;
    size_t i, j;
    int status = c->create(&rec, (unsigned short)m->id,
                                            (unsigned short)m->flags, (int)m->opcode,
                                            (int)m->rcode);
    if (status == DNSSHIM_ARES_SUCCESS)
        status = c->query_add(rec, (const char *)m->qname.data, (int)m->qtype,
                                               (int)m->qclass);
    for (i = 0; i < m->nrrs && status == DNSSHIM_ARES_SUCCESS; i++) {
        const dnsshim_ares_rr *r = &m->rrs[i];
        void *rr = NULL;
        status = c->rr_add(&rr, rec, (int)r->section, (const char *)r->name.data,
                                            (int)r->type, (int)r->rclass, r->ttl);
        for (j = 0; j < r->nfields && status == DNSSHIM_ARES_SUCCESS; j++)
            status = dnsshim_ares__set(c, rr, &r->fields[j]);
    }
    if (status != DNSSHIM_ARES_SUCCESS) {
        if (rec != NULL)
            c->destroy(rec);
        return status;
    }
    *out = rec;
    return DNSSHIM_ARES_SUCCESS;
}

static void dnsshim_ares__say_none(void)
{
    dnsshim_ares__log("ares_dns_parse: no c-ares 1.22 or later is loaded in this process (no "
                      "ares_dns_record_create); returning ARES_ENOTIMP: link the program with "
                      "c-ares " DNSSHIM_ARES__DNSREC_FLOOR_TEXT " or later");
}

/* Why the c-ares found cannot serve, once per c-ares library. */
static void dnsshim_ares__say_why(dnsshim_ares__cares_lib *lib)
{
    int first;
    dnsshim_ares__lock(&dnsshim_ares__libs_lock);
    first = !lib->logged;
    lib->logged = 1;
    pthread_mutex_unlock(&dnsshim_ares__libs_lock);
    if (first)
        dnsshim_ares__log(lib->why);
}

DNSSHIM_ARES_API int ares_dns_parse(const unsigned char *buf, size_t buf_len, unsigned int flags,
                                    void **dnsrec)
{
    dnsshim_ares_message m;
    uint64_t token = 0;
    const char *why;
    int status;

    dnsshim_ares__cares_lib *lib;

    if (dnsshim_ares__probing) {
        /* c-ares's ares_dns_record_duplicate, from dnsshim_ares__probe. */
        dnsshim_ares__probe_reached = 1;
        return DNSSHIM_ARES_ENOTIMP;
    }
    if (buf == NULL || buf_len == 0 || dnsrec == NULL)
        return DNSSHIM_ARES_EFORMERR;
    *dnsrec = NULL;
    /* The largest DNS message, over TCP too. */
    if (buf_len > 0xFFFF)
        return DNSSHIM_ARES_EFORMERR;
    /* The c-ares that called (its resolver, ares_send...) or that the
    ** calling program reaches, loaded RTLD_LOCAL (a Python extension's) or
    ** not. */
    lib = dnsshim_ares__cares_for(__builtin_return_address(0));
    if (lib == NULL) {
        pthread_once(&dnsshim_ares__none_once, dnsshim_ares__say_none);
        return DNSSHIM_ARES_ENOTIMP;
    }
    if (!lib->usable) {
        dnsshim_ares__say_why(lib);
        return DNSSHIM_ARES_ENOTIMP;
    }
    status = dnsshim_ares__plan(buf, (int)buf_len, flags, &m, &token);
    if (status != DNSSHIM_ARES_SUCCESS) {
        dnsshim_ares__plan_done(token);
        return status;
    }
    why = dnsshim_ares__check_message(&lib->b, &m, buf_len);
    if (why != NULL && dnsshim_ares__plan_served()) {
        /* The service's plan is not used: the process makes its own. */
        char line[256];
        snprintf(line, sizeof line, "ares_dns_parse: the parse service's plan has %s; "
                 "parsing in the process", why);
        dnsshim_ares__log(line);
        dnsshim_ares__plan_done(token);
        status = dnsshim_ares__message(buf, (int)buf_len, flags, &m, &token);
        if (status != DNSSHIM_ARES_SUCCESS) {
            dnsshim_ares__plan_done(token);
            return status;
        }
        why = dnsshim_ares__check_message(&lib->b, &m, buf_len);
    }
    if (why != NULL) {
        /* A bug on the Python side: nothing of it is built. */
        char line[256];
        snprintf(line, sizeof line, "ares_dns_parse: the parser's plan has %s; returning "
                 "ARES_EBADRESP", why);
        dnsshim_ares__log(line);
        dnsshim_ares__plan_done(token);
        return DNSSHIM_ARES_EBADRESP;
    }
    status = m.status == DNSSHIM_ARES_SUCCESS ? dnsshim_ares__build(&lib->b, &m, dnsrec)
                                               : m.status;
    dnsshim_ares__plan_done(token);
    return status;
}
