/*
** dns_shim_cffi_guest.h: points two calls of cffi's runtime at a library's
** guest (a library loaded into a Python program: shim/guest.py).
**
** cffi emits one C unit per library in a fixed order: its runtime
** (_cffi_include.h, which includes Python.h, then _embedding.h), then the
** preamble (the library's bridge file), then the code it generates for the
** declarations.  Two calls of the runtime decide what a guest needs:
** _cffi_init's PyImport_ImportModule("_cffi_backend") (which backend the
** module is built on) and _cffi_initialize_python's PyEval_GetBuiltins()
** (the builtins the init code runs with).  The runtime comes before the
** preamble, so the preamble cannot reach them; this header comes before
** the runtime: dnsshim_build.pipeline.emit compiles, for each library, a unit that
** defines DNS_SHIM__GUEST_PREFIX, includes this header and then cffi's
** emitted file, untouched.  The two names become macros here calling
** <prefix>__cffi_backend() and <prefix>__init_builtins(), which the
** library's bridge file defines, and which do what cffi does in an
** interpreter the library started itself.  The bridge file #undefs both
** macros first thing, so that its own code and cffi's generated code that
** follows call Python's functions.  dnsshim_build.pipeline.emit refuses a cffi whose
** runtime does not make exactly these calls.
*/
#ifndef DNS_SHIM_CFFI_GUEST_H
#define DNS_SHIM_CFFI_GUEST_H

#ifndef DNS_SHIM__GUEST_PREFIX
#  error "define DNS_SHIM__GUEST_PREFIX: the prefix of the library's guest functions"
#endif

#include <Python.h>
#include <string.h>

#define DNS_SHIM__GUEST_CAT_(prefix, name) prefix##name
#define DNS_SHIM__GUEST_CAT(prefix, name) DNS_SHIM__GUEST_CAT_(prefix, name)
#define DNS_SHIM__GUEST_BACKEND DNS_SHIM__GUEST_CAT(DNS_SHIM__GUEST_PREFIX, __cffi_backend)
#define DNS_SHIM__GUEST_BUILTINS DNS_SHIM__GUEST_CAT(DNS_SHIM__GUEST_PREFIX, __init_builtins)

static PyObject *DNS_SHIM__GUEST_BACKEND(void);
static PyObject *DNS_SHIM__GUEST_BUILTINS(void);

/* cffi's runtime imports other modules too (its error reporting imports
** builtins): only _cffi_backend is the guest's. */
static inline PyObject *dns_shim__cffi_import(const char *name)
{
    if (strcmp(name, "_cffi_backend") == 0)
        return DNS_SHIM__GUEST_BACKEND();
    return PyImport_ImportModule(name);
}

#define PyImport_ImportModule(name) dns_shim__cffi_import(name)
#define PyEval_GetBuiltins() DNS_SHIM__GUEST_BUILTINS()
#define DNS_SHIM__GUEST_REDIRECTED 1

#endif
