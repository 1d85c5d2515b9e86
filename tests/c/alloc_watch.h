/*
** alloc_watch.h: for a test program that sees every call of the C library's
** allocation functions in its process (memory_limit.c, ares_allocators.c).
**
** Included once, by the program's own source: it defines malloc, calloc,
** realloc and free (so that every call in the process comes here, the
** library's and its runtime's included), forwarding to glibc's own, and
** calls the program's went_around() with the caller's address before each
** allocation; object_is() names the object an address lies in (dladdr).
** The program defines went_around() itself; it must not allocate through
** malloc while it classifies (guard it), since dladdr may.
*/
#ifndef DNSSHIM_TESTS_ALLOC_WATCH_H
#define DNSSHIM_TESTS_ALLOC_WATCH_H

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static void went_around(const void *caller);

/* Whether address lies in an object whose file name contains name. */
static int object_is(const void *address, const char *name)
{
    Dl_info info;
    return dladdr(address, &info) != 0 && info.dli_fname != NULL &&
           strstr(info.dli_fname, name) != NULL;
}

void *malloc(size_t n)
{
    went_around(__builtin_return_address(0));
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    went_around(__builtin_return_address(0));
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    went_around(__builtin_return_address(0));
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

#endif
