/*
** dnsshim_callgrind: the per-call price in instructions, under callgrind
** (tests/bench/benchmark.py builds and runs it).
**
**   valgrind --tool=callgrind --instr-atstart=no dnsshim_callgrind \
**       DIR MODULE FUNCTION WARMUP FILE...
**
** In the library's own interpreter (started by dns_shim_init), imports
** MODULE from DIR and takes its FUNCTION(wire), the floor.  For each FILE
** (a raw DNS message), after WARMUP calls of each (caches warm, as in a
** long-running program), it counts with callgrind's instrumentation on:
**   "shim N"   one process_dns_response with the copying callbacks of
**              copying_callbacks.h (GIL, cffi, decode, structs, callbacks);
**   "floor N"  one FUNCTION(wire) call from C with the GIL already held.
** Each count is dumped on its own (CALLGRIND_DUMP_STATS_AT with that label)
** and read back from the dump files by the benchmark.  Without valgrind it
** runs the same calls and counts nothing.
*/
#include "dns_shim.h"
#include "copying_callbacks.h"
#include "tool_util.h"

#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

static PyObject *floor_function(const char *dir, const char *module, const char *function)
{
    PyObject *path = PySys_GetObject("path"), *entry, *mod, *fn = NULL;
    entry = PyUnicode_DecodeFSDefault(dir);
    if (path == NULL || entry == NULL || PyList_Insert(path, 0, entry) != 0)
        return NULL;
    Py_DECREF(entry);
    mod = PyImport_ImportModule(module);
    if (mod != NULL) {
        fn = PyObject_GetAttrString(mod, function);
        Py_DECREF(mod);
    }
    return fn;
}

static int call_floor(PyObject *fn, PyObject *wire)
{
    PyObject *result = PyObject_CallOneArg(fn, wire);
    if (result == NULL) {
        PyErr_Print();
        return -1;
    }
    Py_DECREF(result);
    return 0;
}

int main(int argc, char **argv)
{
    PyGILState_STATE gil;
    PyObject *fn;
    int i, n, warmup, rc = 0;
    char label[64];

    if (argc < 6) {
        fprintf(stderr, "usage: %s DIR MODULE FUNCTION WARMUP FILE...\n", argv[0]);
        return 2;
    }
    warmup = atoi(argv[4]);
    register_copying_callbacks();
    if (dns_shim_init() != DNS_SHIM_OK)
        return 1;
    gil = PyGILState_Ensure();
    fn = floor_function(argv[1], argv[2], argv[3]);
    if (fn == NULL) {
        PyErr_Print();
        PyGILState_Release(gil);
        return 1;
    }
    PyGILState_Release(gil);
    for (i = 5; i < argc && rc == 0; i++) {
        long len = 0;
        unsigned char *buf = read_message(argv[i], 0, &len);
        PyObject *wire;
        int32_t status = 0;
        if (buf == NULL)
            return 2;
        gil = PyGILState_Ensure();
        wire = PyBytes_FromStringAndSize((const char *)buf, len);
        PyGILState_Release(gil);
        for (n = 0; n < warmup && rc == 0; n++) {
            if (process_dns_response(buf, (int32_t)len) != DNS_SHIM_OK)
                rc = 1;
            gil = PyGILState_Ensure();
            rc |= call_floor(fn, wire) != 0;
            PyGILState_Release(gil);
        }

        snprintf(label, sizeof label, "shim %d", i - 5);
        CALLGRIND_START_INSTRUMENTATION;
        CALLGRIND_ZERO_STATS;
        status = process_dns_response(buf, (int32_t)len);
        CALLGRIND_DUMP_STATS_AT(label);
        CALLGRIND_STOP_INSTRUMENTATION;

        gil = PyGILState_Ensure();
        snprintf(label, sizeof label, "floor %d", i - 5);
        CALLGRIND_START_INSTRUMENTATION;
        CALLGRIND_ZERO_STATS;
        rc |= call_floor(fn, wire) != 0;
        CALLGRIND_DUMP_STATS_AT(label);
        CALLGRIND_STOP_INSTRUMENTATION;
        Py_DECREF(wire);
        PyGILState_Release(gil);

        printf("%s %d\n", argv[i], (int)status);
        if (status != DNS_SHIM_OK)
            rc = 1;
        free(buf);
    }
    return rc;
}
