/*
** cffi_alloc.h: force-included (-include) when _cffi_backend.c is compiled
** for the firmware object.  cffi takes the memory of ffi.new() objects (every
** struct the glue hands to a callback) from plain malloc()/calloc() and gives
** it back with free() (also as CDataOwning_Type's tp_free), and its per-thread
** state and dlopen names likewise.  Here they go to CPython's RAW domain
** instead, which the library routes to the host's allocator and counts
** against the memory limit (csrc/lib/memory.c); without either, the RAW
** domain is libc's malloc, as before.  (PyMem_Raw* need no GIL: thread exit is fine.)
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

static inline char *dns_shim__cffi_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = (char *)PyMem_RawMalloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

#define malloc(n) PyMem_RawMalloc(n)
#define calloc(n, m) PyMem_RawCalloc((n), (m))
#define realloc(p, n) PyMem_RawRealloc((p), (n))
#define free PyMem_RawFree
#define strdup(s) dns_shim__cffi_strdup(s)
