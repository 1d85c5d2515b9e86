/*
** guest.c: a guest in a Python program (the library loaded into a process
** that already runs Python): loading the library's own private Python side
** (shim/guest.py, compiled in as DNS_SHIM__GUEST_CODE), checking its
** floors, and publishing it for libdnsshim_ares; a unit of libdnsshim's C
** compiled on its own.  The two calls of cffi's runtime that use the guest
** (dns_shim__cffi_backend, dns_shim__init_builtins) are in the bridge
** (dns_shim.c), which sees cffi's code.
*/
#define DNS_SHIM_BUILDING 1
#include "lib/dns_shim_runtime.h"

#include "dns_shim.h"
/* The guest code's text: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <stdio.h>
#include <string.h>

/* The shim.guest.Guest object, once loaded (never released: the module
** cffi builds on its backend lives as long as the process). */
PyObject *dns_shim__guest = NULL;

/* The pending exception as one line into out: a GuestError's text as it is
** (it is one line, said for people), any other "Type: message". */
static void dns_shim__exception_line(char *out, size_t size)
{
    PyObject *type, *value, *tb, *text = NULL;
    const char *utf8 = NULL, *name = "error";
    char *p;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (type != NULL && PyType_Check(type))
        name = ((PyTypeObject *)type)->tp_name;
    if (value != NULL)
        text = PyObject_Str(value);
    if (text != NULL)
        utf8 = PyUnicode_AsUTF8(text);
    if (utf8 != NULL && strcmp(name, "GuestError") == 0)
        snprintf(out, size, "%s", utf8);
    else if (utf8 != NULL && utf8[0] != '\0')
        snprintf(out, size, "%s: %s", name, utf8);
    else
        snprintf(out, size, "%s", name);
    for (p = out; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
}

/* The loader's code (shim/guest.py) run in a namespace of its own: that
** namespace, a new reference, or NULL with the exception set.  Called with
** the GIL held. */
static PyObject *dns_shim__loader(void)
{
    PyObject *globals = PyDict_New(), *builtins = PyImport_ImportModule("builtins");
    PyObject *name = PyUnicode_FromString("_dnsshim_guest"), *code = NULL, *result = NULL;

    if (globals == NULL || builtins == NULL || name == NULL ||
        PyDict_SetItemString(globals, "__builtins__", builtins) != 0 ||
        PyDict_SetItemString(globals, "__name__", name) != 0)
        goto done;
    code = Py_CompileString(DNS_SHIM__GUEST_CODE, "<dnsshim: shim/guest.py>", Py_file_input);
    if (code != NULL)
        result = PyEval_EvalCode(code, globals, globals);
done:
    if (result == NULL)
        Py_CLEAR(globals);
    Py_XDECREF(result);
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_XDECREF(builtins);
    return globals;
}

/* The loader's function called name, a borrowed reference, or NULL with
** the exception set. */
static PyObject *dns_shim__loader_function(PyObject *globals, const char *name)
{
    PyObject *function = PyDict_GetItemString(globals, name);
    if (function == NULL)
        PyErr_Format(PyExc_RuntimeError, "the loader has no %s()", name);
    return function;
}

/* Runs the loader and keeps its Guest.  Called with the GIL held; on
** failure writes one line into why. */
static int dns_shim__guest_load(const char *python, char *why, size_t size)
{
    PyObject *globals = dns_shim__loader(), *start, *guest;

    if (globals == NULL || (start = dns_shim__loader_function(globals, "start")) == NULL ||
        (guest = PyObject_CallFunction(start, "ssss", dns_shim__root, python,
                                       DNS_SHIM_PYTHON_TAG, dns_shim__bundle_home)) == NULL) {
        dns_shim__exception_line(why, size);
        Py_XDECREF(globals);
        return -1;
    }
    dns_shim__guest = guest;
    Py_DECREF(globals);
    return 0;
}

/* In an interpreter the library started, which runs no site module: the
** site directories of python, and its virtualenv as sys.prefix, by the
** loader's rule (shim.guest.owned_site), the one its guest follows.
** Called with the GIL held; on failure writes one line into why. */
int dns_shim__owned_site(const char *python, char *why, size_t size)
{
    PyObject *globals = dns_shim__loader(), *owned_site, *result = NULL;
    PyObject *path = PyUnicode_DecodeFSDefault(python); /* a path need not be UTF-8 */

    if (globals != NULL && path != NULL &&
        (owned_site = dns_shim__loader_function(globals, "owned_site")) != NULL)
        result = PyObject_CallFunction(owned_site, "Os", path, DNS_SHIM_PYTHON_TAG);
    if (result == NULL)
        dns_shim__exception_line(why, size);
    Py_XDECREF(result);
    Py_XDECREF(path);
    Py_XDECREF(globals);
    return result == NULL ? -1 : 0;
}

/* What stops the library from being a guest, checked before anything runs
** in the program's interpreter; then the loader.  Returns 0, or -1 having
** said why in one line. */
int dns_shim__guest_start(void)
{
    const char *version = Py_GetVersion(), *origin = dns_shim__from_env, *python;
    char why[1536], pinned[64], running[64];
    size_t n = strlen(DNS_SHIM_PYTHON_TAG);
    PyGILState_STATE gil;
    int rc;

    snprintf(running, sizeof running, "%.*s", (int)strcspn(version, " "), version);
    /* The library is compiled for one CPython minor version: in another,
    ** every struct it touches may be laid out otherwise. */
    if (strncmp(version, DNS_SHIM_PYTHON_TAG, n) != 0 ||
        (version[n] >= '0' && version[n] <= '9')) {
        dns_shim__cannot_start(NULL, "cannot start: loaded into a program that runs CPython %s, "
                               "but this library embeds CPython " DNS_SHIM_PYTHON_TAG " and "
                               "cannot use that interpreter: load a libdnsshim built with a "
                               "CPython of the program's minor version", running);
        return -1;
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (Py_IsFinalizing()) {
#else
    if (_Py_IsFinalizing()) {
#endif
        dns_shim__cannot_start(NULL, "cannot start: loaded into a Python program whose "
                               "interpreter is shutting down");
        return -1;
    }
    python = DNS_SHIM_BUNDLE && !(dns_shim__getenv("DNS_SHIM_PYTHON") &&
                                   dns_shim__getenv("DNS_SHIM_PYTHON")[0])
        ? "" : dns_shim__choose_python(&origin);
    if (python[0]) {
        dns_shim__python_version(python, pinned, sizeof pinned);
        if (pinned[0] && strcmp(pinned, DNS_SHIM_PYTHON_TAG) != 0) {
            dns_shim__cannot_start(NULL, "this library embeds CPython " DNS_SHIM_PYTHON_TAG
                                   " but its installation, %s (%s), is CPython %s: rebuild the "
                                   "library with that Python, or set DNS_SHIM_PYTHON to a "
                                   "CPython " DNS_SHIM_PYTHON_TAG, python, origin, pinned);
            return -1;
        }
    }
    gil = PyGILState_Ensure();
    rc = dns_shim__guest_load(python, why, sizeof why);
    PyGILState_Release(gil);
    if (rc != 0)
        dns_shim__cannot_start(NULL, "cannot start: loaded into a Python program (CPython %s), "
                               "the library cannot load its own Python side: %s", running, why);
    return rc;
}

/* For libdnsshim_ares, which runs on the same guest: the Guest object as
** _dnsshim_cffi.__dnsshim_guest__ (this library's own cffi module). */
void dns_shim__guest_publish(void)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *name = PyUnicode_FromString("_dnsshim_cffi");
    PyObject *own = name ? PyImport_GetModule(name) : NULL;
    if (own == NULL || PyObject_SetAttrString(own, "__dnsshim_guest__", dns_shim__guest) != 0)
        PyErr_Clear();
    Py_XDECREF(own);
    Py_XDECREF(name);
    PyGILState_Release(gil);
}

/* dir first on the interpreter's sys.path (unless it is there); the GIL is
** held.  Returns 0, or -1 when Python failed. */
int dns_shim__path_first(const char *dir)
{
    PyObject *path = PySys_GetObject("path"), *item = PyUnicode_DecodeFSDefault(dir);
    int rc = -1;
    if (path != NULL && PyList_Check(path) && item != NULL) {
        int found = PySequence_Contains(path, item);
        rc = found == 0 ? PyList_Insert(path, 0, item) : found < 0 ? -1 : 0;
    }
    Py_XDECREF(item);
    PyErr_Clear();
    return rc;
}
