/*
** contextvars.c: the _contextvars module, built into the firmware object.
** Debian builds it as a shared module (lib-dynload), which a firmware cannot
** load, and dnspython needs it (dns._immutable_ctx).  Its whole
** implementation is libpython's own (Python/context.c); the module only
** exposes the three types and copy_context(), as CPython's
** Modules/_contextvarsmodule.c does.  Registered in the object's inittab
** (dnsshim_build/firmware.py) under its own name.
*/
#include <Python.h>

PyObject *dns_shim__firmware_contextvars(void) __attribute__((visibility("hidden")));

PyDoc_STRVAR(dns_shim__contextvars_doc, "Context Variables");

static PyObject *dns_shim__copy_context(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyContext_CopyCurrent();
}

static int dns_shim__contextvars_exec(PyObject *m)
{
    if (PyModule_AddType(m, &PyContext_Type) < 0 || PyModule_AddType(m, &PyContextVar_Type) < 0 ||
        PyModule_AddType(m, &PyContextToken_Type) < 0)
        return -1;
    return 0;
}

static PyMethodDef dns_shim__contextvars_methods[] = {
    {"copy_context", dns_shim__copy_context, METH_NOARGS, "Return a copy of the current Context."},
    {NULL, NULL, 0, NULL}};

static PyModuleDef_Slot dns_shim__contextvars_slots[] = {{Py_mod_exec, dns_shim__contextvars_exec},
                                                  {0, NULL}};

static struct PyModuleDef dns_shim__contextvars_module = {
    PyModuleDef_HEAD_INIT, "_contextvars", dns_shim__contextvars_doc, 0, dns_shim__contextvars_methods,
    dns_shim__contextvars_slots, NULL, NULL, NULL};

PyObject *dns_shim__firmware_contextvars(void)
{
    return PyModuleDef_Init(&dns_shim__contextvars_module);
}
