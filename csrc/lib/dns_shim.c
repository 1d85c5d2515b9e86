/*
** dns_shim.c: the C half of libdnsshim.
**
** Not compiled on its own: build_ffi.py hands it to cffi as the preamble of
** the embedded module, after cffi's own runtime (which defines
** cffi_start_python) and before cffi's code for the one internal
** ``extern "Python"`` function, dns_shim__py_process.
**
** What lives here is what must work without Python or before it runs:
** argument checks, the registered callback set, dns_shim_strerror,
** dns_shim_version, and starting the interpreter with a pinned installation.
** Every byte of a message is read on the Python side.
*/
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status texts and names, the record kinds, the requirements and guest
** code texts: written by the build (build_ffi.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* cffi's runtime, before this file, called the guest through
** csrc/lib/dns_shim_cffi_guest.h; from here on these are Python's. */
#ifndef DNS_SHIM__GUEST_REDIRECTED
#  error "build through build_ffi.py: cffi's unit must include lib/dns_shim_cffi_guest.h first"
#endif
#undef PyImport_ImportModule
#undef PyEval_GetBuiltins

/* Supplied by build_ffi.py on the compiler's command line:
**   DNS_SHIM_DEFAULT_PYTHON  the python executable pinned at build time
**   DNS_SHIM_DEFAULT_ROOT    the directory holding the shim package it was
**                            built from ("" when that Python finds it)
**   DNS_SHIM_PYTHON_TAG      the CPython minor version embedded, "3.11"
**   DNS_SHIM_IN_PACKAGE      1 when this shared object is installed as
**                            shim/lib/ inside the Python package: the
**                            package and its Python are then found from
**                            this file's own path
**   DNS_SHIM_PRIVATE_DIR     for a prefix install (build_ffi.py --prefix):
**                            the directory of its Python side (the shim
**                            package, dnspython, cffi's backend) relative
**                            to this file's own directory, "dnsshim/python";
**                            DNS_SHIM_DEFAULT_ROOT is its installed path,
**                            which the static archive uses
**   DNS_SHIM_BUNDLE          1 for a self-contained folder (python -m shim
**                            bundle): this file is <bundle>/lib/libdnsshim.so.N
**                            and the interpreter runs from <bundle> alone
**   DNS_SHIM_BUNDLE_OPTIMIZE the optimisation level its .pyc files have
**   DNS_SHIM_BUILD_PREFIX    the CPython installation it was built with
**                            (sys.base_prefix): another one is said
**   DNS_SHIM_FIRMWARE        1 for the firmware object (python -m shim
**                            firmware): CPython is linked in, every module
**                            is frozen in, the interpreter starts from
**                            nothing on disk
**   DNS_SHIM_FIRMWARE_TYPES  its --types ("A,AAAA,..."), or "" for all
**   DNS_SHIM_FIRMWARE_PATH   (the firmware's module discovery only) a
**                            ':'-separated module path instead of frozen
**                            modules */
#ifndef DNS_SHIM_DEFAULT_PYTHON
#  error "build with -DDNS_SHIM_DEFAULT_PYTHON=\"/path/to/python\""
#endif
#ifndef DNS_SHIM_DEFAULT_ROOT
#  define DNS_SHIM_DEFAULT_ROOT ""
#endif
#ifndef DNS_SHIM_PYTHON_TAG
#  error "build with -DDNS_SHIM_PYTHON_TAG=\"3.x\""
#endif
#ifndef DNS_SHIM_PRIVATE_DIR
#  define DNS_SHIM_PRIVATE_DIR ""
#endif
#ifndef DNS_SHIM_IN_PACKAGE
#  define DNS_SHIM_IN_PACKAGE 0
#endif
#ifndef DNS_SHIM_BUNDLE
#  define DNS_SHIM_BUNDLE 0
#endif
#ifndef DNS_SHIM_BUNDLE_OPTIMIZE
#  define DNS_SHIM_BUNDLE_OPTIMIZE 0
#endif
#ifndef DNS_SHIM_BUILD_PREFIX
#  define DNS_SHIM_BUILD_PREFIX ""
#endif
#ifndef DNS_SHIM_FIRMWARE
#  define DNS_SHIM_FIRMWARE 0
#endif
#ifndef DNS_SHIM_FIRMWARE_TYPES
#  define DNS_SHIM_FIRMWARE_TYPES ""
#endif
#if DNS_SHIM_FIRMWARE
/* The modules frozen into the object (generated: shim/firmware.py). */
extern const struct _frozen dns_shim__firmware_frozen[];
#endif
#define DNS_SHIM_VERSION_TEXT_(a, b, c) #a "." #b "." #c
#define DNS_SHIM_VERSION_TEXT(a, b, c) DNS_SHIM_VERSION_TEXT_(a, b, c)

/*
** The internal entry points, written in Python (shim/embedded.py, which
** calls shim.glue.plan and shim.glue.release).
**
** dns_shim__py_process parses the message (checking it against query, when
** that is not NULL: dns_shim_process_reply) and, when it is good, builds
** every struct the callbacks will get and the ordered list of calls to
** make: *steps, *count, each step naming its callback by the member's offset
** in dns_shim_callbacks.  It returns DNS_SHIM__PY_DONE or a negative
** status, never 0 itself: cffi returns 0 from an extern "Python" function it
** could not run, so 0 here means "not run".  C then makes the calls without
** holding the interpreter's lock.
**
** *token names the memory the steps point to (0: none).  When the calls are
** made, C queues the token; the next call into Python, from any thread,
** passes the queue (done, n_done) and Python frees those plans first.  One
** lock hand-over per call, not two.  When the queue is full, the token goes
** to dns_shim__py_release at once.
*/
#define DNS_SHIM__PY_DONE 1
/* dns_shim__step: dns_shim_internal.h */
static int32_t dns_shim__py_process(const uint8_t *buf, int32_t len,
                                    const dns_shim_query *query,
                                    const dns_shim_callbacks *callbacks,
                                    const uint64_t *done, size_t n_done,
                                    dns_shim__step **steps, size_t *count, uint64_t *token);
static void dns_shim__py_release(uint64_t token);

#define DNS_SHIM__QUEUE 64
static pthread_mutex_t dns_shim__queue_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dns_shim__queue[DNS_SHIM__QUEUE];
static size_t dns_shim__queued = 0;

/* A plan whose calls are made: queue its token for the next call to free. */
static void dns_shim__finished(uint64_t token)
{
    int queued = 0;
    if (token == 0)
        return;
    pthread_mutex_lock(&dns_shim__queue_lock);
    if (dns_shim__queued < DNS_SHIM__QUEUE) {
        dns_shim__queue[dns_shim__queued++] = token;
        queued = 1;
    }
    pthread_mutex_unlock(&dns_shim__queue_lock);
    if (!queued)
        dns_shim__py_release(token);
}

/* Takes the queued tokens into done[]; returns how many. */
static size_t dns_shim__take_finished(uint64_t *done)
{
    size_t n;
    pthread_mutex_lock(&dns_shim__queue_lock);
    n = dns_shim__queued;
    memcpy(done, dns_shim__queue, n * sizeof *done);
    dns_shim__queued = 0;
    pthread_mutex_unlock(&dns_shim__queue_lock);
    return n;
}

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

static pthread_once_t dns_shim__once = PTHREAD_ONCE_INIT;
static int32_t dns_shim__init_status = DNS_SHIM_ERR_INIT;
static int dns_shim__owns = 0;         /* we started the interpreter */
static char dns_shim__root[4096];      /* where the shim package is ("" : on sys.path) */
static char dns_shim__derived_python[4096 + 64];
static char dns_shim__bundle_home[4096]; /* a bundle's folder, or "" */
static char dns_shim__start_error[2048]; /* why the runtime did not start: one line */

/* The runtime cannot start: one line, what was tried and the fix, logged
** once and kept for every call that returns DNS_SHIM_ERR_INIT.  A detail
** (a traceback) goes to the log at debug level after it. */
static void dns_shim__cannot_start(const char *detail, const char *fmt, ...)
{
    va_list ap;
    if (dns_shim__start_error[0])
        return;
    va_start(ap, fmt);
    vsnprintf(dns_shim__start_error, sizeof dns_shim__start_error, fmt, ap);
    va_end(ap);
    dns_shim__log(dns_shim__start_error);
    if (detail != NULL && detail[0])
        dns_shim__log_level(DNS_SHIM_LOG_DEBUG, detail);
}

/* The directory of this shared object, or "" (a static build: there is no
** file of our own). */
static void dns_shim__own_dir(char *out, size_t size)
{
    Dl_info info;
    char *slash;
    out[0] = '\0';
    if (DNS_SHIM_FIRMWARE || !(DNS_SHIM_IN_PACKAGE || DNS_SHIM_BUNDLE || DNS_SHIM_PRIVATE_DIR[0]) ||
        dladdr((void *)&dns_shim_version, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, out) == NULL)
        return;
    slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
}

/* Where the shim package is, and the Python installation it belongs to,
** for a library installed in it: <site-packages>/shim/lib/libdnsshim.so.N,
** <prefix>/lib/pythonX.Y/site-packages, <prefix>/bin/pythonX.Y.  A bundle's
** library is <bundle>/lib/libdnsshim.so.N: its folder is all it needs. */
static void dns_shim__locate(void)
{
    char dir[4096];
    size_t n;
    snprintf(dns_shim__root, sizeof dns_shim__root, "%s", DNS_SHIM_DEFAULT_ROOT);
    dns_shim__own_dir(dir, sizeof dir);
    n = strlen(dir);
    if (DNS_SHIM_BUNDLE) {
        /* <bundle>/lib/libdnsshim.so.N, beside <bundle>/lib/pythonX.Y; in
        ** any other place the folder is not a bundle, and the library
        ** refuses to start (dns_shim__start_interpreter) rather than run
        ** some other Python found there. */
        char modules[4096 + 64];
        snprintf(modules, sizeof modules, "%s/python" DNS_SHIM_PYTHON_TAG, dir);
        if (n > strlen("/lib") && strcmp(dir + n - strlen("/lib"), "/lib") == 0 &&
            access(modules, R_OK | X_OK) == 0) {
            dir[n - strlen("/lib")] = '\0';
            snprintf(dns_shim__bundle_home, sizeof dns_shim__bundle_home, "%s", dir);
        }
        return;
    }
    if (DNS_SHIM_PRIVATE_DIR[0]) {
        /* <libdir>/libdnsshim.so.N beside <libdir>/dnsshim/python: the
        ** prefix may be moved or staged (DESTDIR) whole. */
        if (dir[0])
            snprintf(dns_shim__root, sizeof dns_shim__root, "%s/%s", dir, DNS_SHIM_PRIVATE_DIR);
        return;
    }
    if (n > strlen("/shim/lib") && strcmp(dir + n - strlen("/shim/lib"), "/shim/lib") == 0) {
        char python[4096 + 64];
        dir[n - strlen("/shim/lib")] = '\0'; /* site-packages */
        snprintf(dns_shim__root, sizeof dns_shim__root, "%s", dir);
        snprintf(python, sizeof python, "%s/../../../bin/python" DNS_SHIM_PYTHON_TAG, dir);
        if (access(python, X_OK) == 0)
            snprintf(dns_shim__derived_python, sizeof dns_shim__derived_python, "%s", python);
    }
}

/* The CPython minor version ("3.12") of a python executable, read from its
** virtualenv's pyvenv.cfg or its file name; "" when neither says. */
static void dns_shim__python_version(const char *python, char *out, size_t size)
{
    char path[8192], line[512], real[4096];
    const char *name;
    FILE *f;
    out[0] = '\0';
    snprintf(path, sizeof path, "%s", python);
    if (strrchr(path, '/'))
        *strrchr(path, '/') = '\0';
    strncat(path, "/../pyvenv.cfg", sizeof path - strlen(path) - 1);
    if ((f = fopen(path, "r")) != NULL) {
        while (fgets(line, sizeof line, f)) {
            unsigned major, minor;
            if ((sscanf(line, "version = %u.%u", &major, &minor) == 2 ||
                 sscanf(line, "version_info = %u.%u", &major, &minor) == 2)) {
                snprintf(out, size, "%u.%u", major, minor);
                break;
            }
        }
        fclose(f);
        if (out[0])
            return;
    }
    name = realpath(python, real) ? real : python;
    name = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    if (strncmp(name, "python", 6) == 0 && strchr(name + 6, '.'))
        snprintf(out, size, "%s", name + 6);
}

/* A bundle's interpreter: everything from <home> (its lib/pythonX.Y/, the
** compiled modules, and lib/pythonX.Y/lib-dynload/), nothing from the machine:
** no site, no bytecode written, no path warnings. */
static PyStatus dns_shim__bundle_config(PyConfig *config)
{
    char path[4096 + 64];
    wchar_t *wide;
    PyStatus st;
    static const char *const dirs[] = {"/lib/python" DNS_SHIM_PYTHON_TAG,
                                       "/lib/python" DNS_SHIM_PYTHON_TAG "/lib-dynload"};
    size_t i;

    config->site_import = 0;
    config->write_bytecode = 0;
    config->pathconfig_warnings = 0;
    config->optimization_level = DNS_SHIM_BUNDLE_OPTIMIZE;
    st = PyConfig_SetBytesString(config, &config->home, dns_shim__bundle_home);
    /* No python executable: a name inside the bundle, so that nothing is
    ** looked for on PATH. */
    snprintf(path, sizeof path, "%s/bin/python" DNS_SHIM_PYTHON_TAG, dns_shim__bundle_home);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(config, &config->program_name, path);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(config, &config->executable, path);
    config->module_search_paths_set = 1;
    for (i = 0; i < sizeof dirs / sizeof dirs[0] && !PyStatus_Exception(st); i++) {
        snprintf(path, sizeof path, "%s%s", dns_shim__bundle_home, dirs[i]);
        wide = Py_DecodeLocale(path, NULL);
        if (wide == NULL)
            return PyStatus_NoMemory();
        st = PyWideStringList_Append(&config->module_search_paths, wide);
        PyMem_RawFree(wide);
    }
    return st;
}

/* Starts the bundle's interpreter.  Returns 0 on success. */
static int dns_shim__start_bundled(void)
{
    PyConfig config;
    PyStatus st;

    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    st = dns_shim__bundle_config(&config);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        dns_shim__cannot_start(NULL, "the bundled CPython " DNS_SHIM_PYTHON_TAG " (%s) did not "
                               "start: %s%s%s: the bundle is incomplete; copy it again whole",
                               dns_shim__bundle_home, st.func ? st.func : "",
                               st.func ? ": " : "", st.err_msg ? st.err_msg : "unknown error");
        return -1;
    }
    dns_shim__owns = 1;
    return 0;
}

/* Where the python to run comes from, said in the start-up lines. */
static const char *const dns_shim__from_env = "from DNS_SHIM_PYTHON";
static const char *const dns_shim__from_build = "pinned when the library was built";
static const char *const dns_shim__from_package = "the installation the shim package sits in";

/* What to do about an unusable python, by where it came from. */
static const char *dns_shim__fix(const char *origin)
{
    if (origin == dns_shim__from_env)
        return "set DNS_SHIM_PYTHON to the python executable of a CPython " DNS_SHIM_PYTHON_TAG
               " installation, or unset it";
    if (DNS_SHIM_PRIVATE_DIR[0])
        return "install the library again (python build_ffi.py --prefix) with a CPython "
               DNS_SHIM_PYTHON_TAG " that stays where it is, or set DNS_SHIM_PYTHON to one";
    return "rebuild the library with a CPython " DNS_SHIM_PYTHON_TAG " that stays where it is "
           "(pip install . in a virtualenv of it, or python build_ffi.py), or set "
           "DNS_SHIM_PYTHON to one";
}

/* Whether python can be the interpreter's executable: it exists, is a file,
** is executable and is of this library's CPython minor version.  Says why
** not (once) and returns -1 when it cannot. */
static int dns_shim__check_python(const char *python, const char *origin)
{
    struct stat st;
    char version[64];

    if (python[0] != '/') {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) is not an absolute path: %s",
                               python, origin, dns_shim__fix(origin));
        return -1;
    }
    if (stat(python, &st) != 0) {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) does not exist (moved or "
                               "removed): %s", python, origin, dns_shim__fix(origin));
        return -1;
    }
    if (!S_ISREG(st.st_mode) || access(python, X_OK) != 0) {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) is not an executable file: "
                               "%s", python, origin, dns_shim__fix(origin));
        return -1;
    }
    dns_shim__python_version(python, version, sizeof version);
    if (version[0] && strcmp(version, DNS_SHIM_PYTHON_TAG) != 0) {
        dns_shim__cannot_start(NULL, "this library embeds CPython " DNS_SHIM_PYTHON_TAG " but "
                               "the Python it was given, %s, is CPython %s: rebuild the library "
                               "with that Python, or set DNS_SHIM_PYTHON to a CPython "
                               DNS_SHIM_PYTHON_TAG, python, version);
        return -1;
    }
    return 0;
}

#if DNS_SHIM_FIRMWARE
/* The firmware's interpreter: linked in, its modules frozen in, started
** isolated with every path preset to a name that is nowhere, so that
** nothing on disk is looked at (no path search, no site, no .pyc written,
** no extension module loaded); UTF-8 mode, so that no locale codec is
** needed whatever LC_CTYPE says. */
static int dns_shim__start_firmware(void)
{
    static const char nowhere[] = "/nonexistent/dnsshim-firmware";
    PyPreConfig pre;
    PyConfig config;
    PyStatus st;
    wchar_t **const fields[] = {&config.program_name, &config.executable,
                                &config.base_executable, &config.home, &config.prefix,
                                &config.base_prefix, &config.exec_prefix,
                                &config.base_exec_prefix, &config.stdlib_dir};
    size_t i;

    PyImport_FrozenModules = dns_shim__firmware_frozen;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.utf8_mode = 1;
    st = Py_PreInitialize(&pre);
    if (PyStatus_Exception(st))
        goto failed;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.site_import = 0;
    config.write_bytecode = 0;
    config.pathconfig_warnings = 0;
    config.use_frozen_modules = 1;
    config.parse_argv = 0;
    config.module_search_paths_set = 1; /* empty: frozen and built-in modules only */
    for (i = 0; i < sizeof fields / sizeof fields[0] && !PyStatus_Exception(st); i++)
        st = PyConfig_SetBytesString(&config, fields[i], nowhere);
#ifdef DNS_SHIM_FIRMWARE_PATH
    {
        char paths[] = DNS_SHIM_FIRMWARE_PATH, *save = NULL, *one;
        for (one = strtok_r(paths, ":", &save); one && !PyStatus_Exception(st);
             one = strtok_r(NULL, ":", &save)) {
            wchar_t *wide = Py_DecodeLocale(one, NULL);
            if (wide == NULL) {
                st = PyStatus_NoMemory();
                break;
            }
            st = PyWideStringList_Append(&config.module_search_paths, wide);
            PyMem_RawFree(wide);
        }
    }
#endif
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st))
        goto failed;
    dns_shim__owns = 1;
    return 0;
failed:
    dns_shim__cannot_start(NULL, "cannot start: the firmware's CPython " DNS_SHIM_PYTHON_TAG
                           " did not start (%s%s%s): the host ran out of memory, or its "
                           "allocator refused", st.func ? st.func : "", st.func ? ": " : "",
                           st.err_msg ? st.err_msg : "unknown error");
    return -1;
}
#endif

/* The python executable whose installation the library uses, and where
** that choice comes from: DNS_SHIM_PYTHON, else the one found from this
** file's own path (an installed library), else the one pinned at build. */
static const char *dns_shim__choose_python(const char **origin)
{
    const char *python = getenv("DNS_SHIM_PYTHON");
    if (python != NULL && python[0] != '\0') {
        *origin = dns_shim__from_env;
        return python;
    }
    *origin = dns_shim__derived_python[0] ? dns_shim__from_package : dns_shim__from_build;
    return dns_shim__derived_python[0] ? dns_shim__derived_python : DNS_SHIM_DEFAULT_PYTHON;
}

/* Starts CPython from the chosen installation, unless the process already
** runs an interpreter.  Returns 0 on success. */
static int dns_shim__start_interpreter(void)
{
    PyStatus st;
    PyConfig config;
    const char *python = getenv("DNS_SHIM_PYTHON"), *origin = dns_shim__from_env;

    if (Py_IsInitialized()) {
        dns_shim__memory_start(0); /* a Python program's interpreter: its own memory */
        return 0;
    }
    dns_shim__memory_start(1);
#if DNS_SHIM_FIRMWARE
    /* The interpreter is this object's own (its symbols are local): there is
    ** no installation to choose, and DNS_SHIM_PYTHON is not read. */
    (void)st;
    (void)config;
    (void)python;
    (void)origin;
    return dns_shim__start_firmware();
#endif
    if (DNS_SHIM_BUNDLE && (python == NULL || python[0] == '\0')) {
        if (dns_shim__bundle_home[0])
            return dns_shim__start_bundled();
        dns_shim__cannot_start(NULL, "this is a bundle's library, but the folder it was loaded "
                               "from is not the lib/ of a bundle (no lib/python"
                               DNS_SHIM_PYTHON_TAG " beside it): keep the bundle's layout, or "
                               "set DNS_SHIM_PYTHON");
        return -1;
    }
    python = dns_shim__choose_python(&origin);
    if (dns_shim__check_python(python, origin) != 0)
        return -1;

    /* Isolated: no PYTHON* variables, no user site, no current directory on
    ** sys.path; the installation is the one of `python`, a virtualenv's
    ** pyvenv.cfg included.  Path warnings off: a broken installation is
    ** reported below, in one line. */
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.pathconfig_warnings = 0;
    /* A prefix install's Python side is compiled when installed, and what
    ** its manifest lists is all there is to uninstall: nothing is written. */
    if (DNS_SHIM_PRIVATE_DIR[0])
        config.write_bytecode = 0;
    st = PyConfig_SetBytesString(&config, &config.program_name, python);
    if (!PyStatus_Exception(st))
        st = PyConfig_SetBytesString(&config, &config.executable, python);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        dns_shim__cannot_start(NULL, "cannot start: the embedded CPython " DNS_SHIM_PYTHON_TAG
                               " of %s (%s) did not start (%s%s%s): its installation is "
                               "incomplete or moved; %s", python, origin,
                               st.func ? st.func : "", st.func ? ": " : "",
                               st.err_msg ? st.err_msg : "unknown error", dns_shim__fix(origin));
        return -1;
    }
    dns_shim__owns = 1;
    return 0;
}

/* While cffi loads the parser in an interpreter we started, what it prints
** (its own start-up failures, with their traceback) is caught, so that it
** reaches the program's log handler.  Called with the GIL held. */
static PyObject *dns_shim__catch_stderr(void)
{
    PyObject *io = PyImport_ImportModule("io"), *stream = NULL;
    if (io != NULL) {
        stream = PyObject_CallMethod(io, "StringIO", NULL);
        Py_DECREF(io);
    }
    if (stream == NULL || PySys_SetObject("stderr", stream) != 0) {
        PyErr_Clear();
        Py_CLEAR(stream);
    }
    return stream;
}

/* Restores stderr; returns what was caught (malloc'd, no final newlines),
** or NULL. */
static char *dns_shim__release_stderr(PyObject *stream)
{
    PyObject *text;
    const char *utf8;
    char *copy = NULL;
    if (stream == NULL)
        return NULL;
    PySys_SetObject("stderr", PySys_GetObject("__stderr__"));
    text = PyObject_CallMethod(stream, "getvalue", NULL);
    utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
    if (utf8 != NULL && utf8[0] != '\0' && (copy = strdup(utf8)) != NULL) {
        size_t n = strlen(copy);
        while (n > 0 && copy[n - 1] == '\n')
            copy[--n] = '\0';
    }
    PyErr_Clear();
    Py_XDECREF(text);
    Py_DECREF(stream);
    return copy;
}

/* What shim/requirements.py says of this interpreter (its text is compiled
** into the library: build_ffi.py writes DNS_SHIM__REQUIREMENTS), run before
** cffi loads anything, with the GIL held.  In an interpreter the library
** started (not a bundle's), drift() first: another patch release or
** installation of its CPython than it was built with (DNS_SHIM_BUILD_PREFIX,
** PY_VERSION) is a warning; then problem(): "" when this interpreter can
** run the library, else one line.  Returns 0, or -1 when the runtime cannot
** start. */
static int dns_shim__check_requirements(const char *python, const char *origin)
{
    static const char source[] = DNS_SHIM__REQUIREMENTS;
    PyObject *globals = PyDict_New(), *code = NULL, *reason = NULL;
    PyObject *name = PyUnicode_FromString("dnsshim_requirements");
    int rc = -1;

    if (globals != NULL && name != NULL &&
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0 &&
        PyDict_SetItemString(globals, "__name__", name) == 0)
        code = PyRun_String(source, Py_file_input, globals, globals);
    Py_XDECREF(name);
    if (code != NULL && dns_shim__owns && !DNS_SHIM_BUNDLE && !DNS_SHIM_FIRMWARE) {
        PyObject *drift = PyDict_GetItemString(globals, "drift"), *warning = NULL;
        Dl_info info;
        if (dladdr((void *)&Py_GetVersion, &info) == 0 || info.dli_fname == NULL)
            info.dli_fname = "?";
        if (drift != NULL)
            warning = PyObject_CallFunction(drift, "sss", PY_VERSION, DNS_SHIM_BUILD_PREFIX,
                                            info.dli_fname);
        if (warning != NULL && PyUnicode_Check(warning) && PyUnicode_GetLength(warning) > 0)
            dns_shim__log_level(DNS_SHIM_LOG_WARNING, PyUnicode_AsUTF8(warning));
        Py_XDECREF(warning);
        PyErr_Clear();
    }
    if (code != NULL) {
        PyObject *problem = PyDict_GetItemString(globals, "problem");
        if (problem != NULL)
            reason = PyObject_CallFunction(problem, "ss", python, origin);
    }
    if (reason != NULL && PyUnicode_Check(reason)) {
        const char *text = PyUnicode_AsUTF8(reason);
        if (text != NULL && text[0] == '\0')
            rc = 0;
        else if (text != NULL)
            dns_shim__cannot_start(NULL, "cannot start: %s", text);
    }
    if (rc != 0 && !dns_shim__start_error[0])
        dns_shim__cannot_start(NULL, "cannot start: the check of what the runtime needs did not "
                               "run in %s (%s): its installation is incomplete; %s", python,
                               origin, dns_shim__fix(origin));
    PyErr_Clear();
    Py_XDECREF(reason);
    Py_XDECREF(code);
    Py_XDECREF(globals);
    return rc;
}

/* ------------------------------------------------------------------ */
/* A guest in a Python program                                          */

/*
** Loaded into a process that already runs Python (dns_shim__owns == 0),
** the library loads its own Python side privately (shim/guest.py, whose
** text build_ffi.py compiles in as DNS_SHIM__GUEST_CODE): its shim package,
** its dnspython and its own _cffi_backend, from its own installation,
** leaving the program's sys.path and sys.modules as they were.  Two calls
** in cffi's runtime are pointed here by csrc/lib/dns_shim_cffi_guest.h
** (build_ffi.emit): _cffi_init's PyImport_ImportModule("_cffi_backend")
** and the builtins _cffi_initialize_python runs the init code with.  In an
** interpreter the library started itself they do what cffi does.
*/

/* The shim.guest.Guest object, once loaded (never released: the module
** cffi builds on its backend lives as long as the process). */
static PyObject *dns_shim__guest = NULL;

static PyObject *dns_shim__cffi_backend(void)
{
    if (dns_shim__guest != NULL)
        return PyObject_GetAttrString(dns_shim__guest, "backend");
    return PyImport_ImportModule("_cffi_backend");
}

/* A borrowed reference, as PyEval_GetBuiltins() returns. */
static PyObject *dns_shim__init_builtins(void)
{
    if (dns_shim__guest != NULL) {
        PyObject *builtins = PyObject_GetAttrString(dns_shim__guest, "builtins");
        Py_XDECREF(builtins); /* the guest holds it */
        return builtins;
    }
    return PyEval_GetBuiltins();
}

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

/* Runs the loader in a namespace of its own and keeps its Guest.  Called
** with the GIL held; on failure writes one line into why. */
static int dns_shim__guest_load(const char *python, char *why, size_t size)
{
    PyObject *globals = PyDict_New(), *builtins = PyImport_ImportModule("builtins");
    PyObject *name = PyUnicode_FromString("_dnsshim_guest"), *code = NULL, *result = NULL;
    PyObject *start, *guest;
    int rc = -1;

    if (globals == NULL || builtins == NULL || name == NULL ||
        PyDict_SetItemString(globals, "__builtins__", builtins) != 0 ||
        PyDict_SetItemString(globals, "__name__", name) != 0)
        goto failed;
    code = Py_CompileString(DNS_SHIM__GUEST_CODE, "<dnsshim: shim/guest.py>", Py_file_input);
    if (code == NULL || (result = PyEval_EvalCode(code, globals, globals)) == NULL)
        goto failed;
    start = PyDict_GetItemString(globals, "start"); /* borrowed */
    if (start == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the loader has no start()");
        goto failed;
    }
    guest = PyObject_CallFunction(start, "ssss", dns_shim__root, python, DNS_SHIM_PYTHON_TAG,
                                  dns_shim__bundle_home);
    if (guest == NULL)
        goto failed;
    dns_shim__guest = guest;
    rc = 0;
    goto done;
failed:
    dns_shim__exception_line(why, size);
done:
    Py_XDECREF(result);
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_XDECREF(builtins);
    Py_XDECREF(globals);
    return rc;
}

/* What stops the library from being a guest, checked before anything runs
** in the program's interpreter; then the loader.  Returns 0, or -1 having
** said why in one line. */
static int dns_shim__guest_start(void)
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
    python = DNS_SHIM_BUNDLE && !(getenv("DNS_SHIM_PYTHON") && getenv("DNS_SHIM_PYTHON")[0])
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
static void dns_shim__guest_publish(void)
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
static int dns_shim__path_first(const char *dir)
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

/* For the init code (build_ffi.py's INIT_CODE). */
static const char *dns_shim__package_root(void)
{
    return dns_shim__root;
}

/* The firmware's --types ("A,AAAA,..."; "" for every type): only their
** RDATA modules are frozen in, every other type is opaque (shim.embedded). */
static const char *dns_shim__firmware_types(void)
{
    return DNS_SHIM_FIRMWARE_TYPES;
}

static int32_t dns_shim__owns_interpreter(void)
{
    return dns_shim__owns;
}

/* The init code could not load the parser: why (one line) and its traceback. */
static void dns_shim__report_start_failure(const char *why, const char *traceback)
{
    dns_shim__cannot_start(traceback, "cannot start: %s", why);
}

static void dns_shim__init_once(void)
{
    const char *python, *origin;
    PyGILState_STATE gil;
    int rc;

    dns_shim__locate();
    if (dns_shim__root[0]) {
        char package[4096 + 64];
        snprintf(package, sizeof package, "%s/shim/__init__.py", dns_shim__root);
        if (access(package, R_OK) != 0) {
            if (DNS_SHIM_PRIVATE_DIR[0])
                dns_shim__cannot_start(NULL, "cannot start: the shim package is not in %s, the "
                                       "installation's own Python side (it was removed or the "
                                       "installation is incomplete): install the library "
                                       "again (python build_ffi.py --prefix)", dns_shim__root);
            else
                dns_shim__cannot_start(NULL, "cannot start: the shim package is not in %s, %s "
                                       "(it moved or was removed): rebuild the library where "
                                       "its Python side stays (pip install ., or python "
                                       "build_ffi.py from the clone)", dns_shim__root,
                                       DNS_SHIM_IN_PACKAGE ? "the site-packages the library "
                                       "sits in" : "the source tree the library was built from");
            return;
        }
    }
    if (dns_shim__start_interpreter() != 0)
        return;
    if (!dns_shim__owns) {
        /* A guest in a Python program: its own copy of its Python side, the
        ** floors checked on it (dns_shim__guest_start says why it cannot),
        ** then cffi's module on that copy. */
        if (dns_shim__guest_start() != 0)
            return;
        if (cffi_start_python() != 0) {
            dns_shim__cannot_start(NULL, "cannot start: cffi could not load the library's module "
                                   "into the Python program it is loaded into (its report is on "
                                   "that program's stderr)");
            return;
        }
        if (dns_shim__start_error[0])
            return;
        dns_shim__guest_publish();
        dns_shim__init_status = DNS_SHIM_OK;
        return;
    }
    python = dns_shim__choose_python(&origin);
    if (DNS_SHIM_BUNDLE && dns_shim__bundle_home[0])
        origin = "the bundle's";
    /* We hold the GIL since Py_InitializeFromConfig.  The Python side's
    ** directory goes first on sys.path before the requirements are checked:
    ** a prefix install keeps dnspython and cffi's backend there too. */
    if (dns_shim__root[0] && dns_shim__path_first(dns_shim__root) != 0) {
        PyEval_SaveThread();
        dns_shim__cannot_start(NULL, "cannot start: %s could not be put on the embedded "
                               "interpreter's sys.path (out of memory)", dns_shim__root);
        return;
    }
    rc = dns_shim__check_requirements(python, origin);
    PyEval_SaveThread();
    if (rc != 0)
        return;
    /* Runs the init code: imports shim.embedded and calls its attach(), which
    ** gives the extern "Python" functions their bodies; a failure there is
    ** reported through dns_shim__report_start_failure.  cffi's own start-up
    ** failures it prints itself: caught, and logged at debug level. */
    if (dns_shim__owns) {
        PyObject *caught;
        PyThreadState *ts;
        char *printed;
        gil = PyGILState_Ensure();
        caught = dns_shim__catch_stderr();
        ts = PyEval_SaveThread();
        rc = cffi_start_python();
        PyEval_RestoreThread(ts);
        printed = dns_shim__release_stderr(caught);
        PyGILState_Release(gil);
        if (rc != 0)
            dns_shim__cannot_start(printed, "cannot start: cffi could not load the library's "
                                   "module into CPython " PY_VERSION " (its report is logged at "
                                   "debug level): reinstall cffi in %s", python);
        free(printed);
    }
    if (rc != 0 || dns_shim__start_error[0])
        return;
    dns_shim__init_status = DNS_SHIM_OK;
}

static int32_t dns_shim__runtime(void)
{
    pthread_once(&dns_shim__once, dns_shim__init_once);
    return dns_shim__init_status;
}

/* A call that found the runtime not started: why, for this thread. */
static int32_t dns_shim__init_failed(void)
{
    return dns_shim__fail(DNS_SHIM_ERR_INIT, "%s", dns_shim__start_error[0] ?
                          dns_shim__start_error : "the runtime did not start");
}

DNS_SHIM_API int32_t dns_shim_init(void)
{
    return dns_shim__runtime() == DNS_SHIM_OK ? dns_shim__ok() : dns_shim__init_failed();
}

/* ------------------------------------------------------------------ */
/* Processing                                                           */

int32_t dns_shim__run(const uint8_t *buf, int32_t len, const dns_shim_query *query,
                             const dns_shim_callbacks *callbacks)
{
    static const uint8_t empty[1] = {0};
    dns_shim__step *steps = NULL;
    size_t count = 0, i, n_done;
    uint64_t token = 0, done[DNS_SHIM__QUEUE];
    int32_t rc = dns_shim__runtime();

    if (rc != DNS_SHIM_OK)
        return dns_shim__init_failed();
    if (buf == NULL)
        buf = empty; /* only with len == 0: checked by the callers */
    n_done = dns_shim__take_finished(done);
    dns_shim__error[0] = '\0';
    rc = dns_shim__py_process(buf, len, query, callbacks, done, n_done, &steps, &count, &token);
    if (rc != 0 && dns_shim__memory_tripped()) {
        /* The memory limit refused an allocation during this parse: the
        ** call fails, whatever the parser made of its MemoryError, and a plan
        ** it made after all is dropped without a callback. */
        if (rc == DNS_SHIM__PY_DONE)
            dns_shim__finished(token);
        return dns_shim__fail(DNS_SHIM_ERR_NO_MEMORY, "parsing the message would take the "
                              "runtime above its memory limit of %zu bytes "
                              "(dns_shim_set_memory_limit)",
                              __atomic_load_n(&dns_shim__limit, __ATOMIC_RELAXED));
    }
    if (rc == 0) {
        /* cffi could not run the Python function: it is not attached. */
        dns_shim__log("the parser is not attached to the library; returning DNS_SHIM_ERR_INIT");
        return dns_shim__fail(DNS_SHIM_ERR_INIT, "the parser is not attached to the library");
    }
    if (rc != DNS_SHIM__PY_DONE) {
        if (rc < DNS_SHIM_ERR_MISMATCH || rc > 0) /* never pass on a value that is not ours */
            return dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser returned %" PRId32
                                  ", which is no status", rc);
        if (!dns_shim__error[0])
            dns_shim__fail(rc, "%s", dns_shim_strerror(rc));
        return rc;
    }
    /* The message is good and every struct is built: call the callbacks,
    ** in order, without the interpreter's lock. */
    rc = dns_shim__ok();
    for (i = 0; i < count; i++) {
        int32_t result = 0;
        if (dns_shim__call(callbacks, &steps[i], &result) != 0) {
            dns_shim__log("the parser planned a call to no callback; returning DNS_SHIM_ERR_INTERNAL");
            rc = dns_shim__fail(DNS_SHIM_ERR_INTERNAL, "the parser planned a call to no callback");
            break;
        }
        if (result != 0) {
            rc = dns_shim__callback_failed(&steps[i], result);
            break;
        }
    }
    dns_shim__finished(token);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */

DNS_SHIM_API const char *dns_shim_version(void)
{
    return DNS_SHIM_VERSION_TEXT(DNS_SHIM_VERSION_MAJOR, DNS_SHIM_VERSION_MINOR,
                                 DNS_SHIM_VERSION_PATCH) " (CPython " DNS_SHIM_PYTHON_TAG ")";
}
