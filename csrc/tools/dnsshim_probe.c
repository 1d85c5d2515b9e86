/*
** dnsshim_probe: what the library's own interpreter imports (used by
** dnsshim_build/bundle.py, which builds and runs it; not installed).
**
**   dnsshim_probe OUT SCRIPT FILE...
**
** Installs an audit hook before the library starts its interpreter, so that
** every file the interpreter opens from then on (each module's source or
** compiled file: importlib reads them through io.open_code, which raises
** the "open" event) is recorded.  Registers a callback for every member and
** all sections, feeds each FILE (a raw DNS message) to dns_shim_process,
** twice (typed callbacks; on_other only), and to dns_shim_process_reply
** with a query of its ID, then runs SCRIPT (Python text) in
** the library's interpreter with OUT bound to the output path and OPENED to
** the list of paths opened: the bundler's script imports what the bundle
** must also hold and writes what was loaded.  Exit status 0 when every call
** returned a status the library defines and the script ran; the statuses
** are printed, one line per file.
*/
#include "dns_shim.h"
#include "tool_util.h"

#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANY(name, type) \
    static int32_t name(void *ctx, const type *r) { (void)ctx; (void)r; return 0; }
ANY(on_header, dns_shim_header)
ANY(on_a, dns_shim_a)
ANY(on_aaaa, dns_shim_aaaa)
ANY(on_target, dns_shim_target)
ANY(on_mx, dns_shim_mx)
ANY(on_txt, dns_shim_txt)
ANY(on_srv, dns_shim_srv)
ANY(on_naptr, dns_shim_naptr)
ANY(on_soa, dns_shim_soa)
ANY(on_other, dns_shim_raw)
ANY(on_edns_option, dns_shim_edns_option)

static PyObject *opened; /* the paths of every "open" audit event */

static int record_open(const char *event, PyObject *args, void *data)
{
    (void)data;
    if (strcmp(event, "open") != 0 || !PyTuple_Check(args) || PyTuple_GET_SIZE(args) < 1)
        return 0;
    if (opened == NULL && (opened = PyList_New(0)) == NULL)
        return -1;
    return PyList_Append(opened, PyTuple_GET_ITEM(args, 0));
}

int main(int argc, char **argv)
{
    dns_shim_callbacks all = {0}, none = {0};
    int i, rc = 0;
    PyGILState_STATE gil;
    PyObject *globals, *result;

    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT SCRIPT FILE...\n", argv[0]);
        return 2;
    }
    all.struct_size = none.struct_size = sizeof all;
    all.sections = none.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                                   DNS_SHIM_SECTION_ADDITIONAL;
    all.on_header = on_header;
    all.on_a = on_a;
    all.on_aaaa = on_aaaa;
    all.on_cname = all.on_ns = all.on_ptr = all.on_dname = on_target;
    all.on_mx = on_mx;
    all.on_txt = on_txt;
    all.on_srv = on_srv;
    all.on_naptr = on_naptr;
    all.on_soa = on_soa;
    all.on_other = on_other;
    all.on_edns_option = on_edns_option;
    none.on_other = on_other; /* every typed record through on_other too */
    if (PySys_AddAuditHook(record_open, NULL) != 0)
        return 1;
    if (dns_shim_init() != DNS_SHIM_OK)
        return 1;
    for (i = 3; i < argc; i++) {
        long len = 0;
        unsigned char *wire = read_message(argv[i], 0, &len);
        int32_t a, b, c;
        dns_shim_query query = {0};
        static const uint8_t cookie[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        if (wire == NULL)
            return 2;
        a = dns_shim_process(wire, (int32_t)len, &all);
        b = dns_shim_process(wire, (int32_t)len, &none);
        /* The reply checks too: the query is the message's own ID with a
        ** name it may not have. */
        query.struct_size = sizeof query;
        query.id = len >= 2 ? (uint16_t)(wire[0] << 8 | wire[1]) : 0;
        query.qname = "example.com";
        query.qtype = 1;
        query.qclass = 1;
        query.cookie_client = cookie;
        c = dns_shim_process_reply(wire, (int32_t)len, &query, &all);
        printf("%s %d %d %d\n", argv[i], (int)a, (int)b, (int)c);
        if (a > 0 || a <= DNS_SHIM_ERR_INIT || b > 0 || b <= DNS_SHIM_ERR_INIT || c > 0 ||
            (c <= DNS_SHIM_ERR_INIT && c != DNS_SHIM_ERR_MISMATCH))
            rc = 1; /* not started, internal error, or not a status at all */
        free(wire);
    }
    gil = PyGILState_Ensure();
    globals = PyDict_New();
    if (globals == NULL || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) != 0)
        rc = 1;
    else {
        PyObject *out = PyUnicode_DecodeFSDefault(argv[1]);
        if (out == NULL || PyDict_SetItemString(globals, "OUT", out) != 0 ||
            PyDict_SetItemString(globals, "OPENED", opened ? opened : Py_None) != 0)
            rc = 1;
        Py_XDECREF(out);
        result = rc ? NULL : PyRun_String(argv[2], Py_file_input, globals, globals);
        if (result == NULL) {
            if (PyErr_Occurred())
                PyErr_Print();
            rc = 1;
        }
        Py_XDECREF(result);
    }
    Py_XDECREF(globals);
    PyGILState_Release(gil);
    return rc;
}
