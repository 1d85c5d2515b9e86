/*
** runtime.c: where the library's Python is (dns_shim__locate,
** dns_shim__choose_python), starting the interpreter for a program, a
** bundle or a firmware (dns_shim__start_interpreter), the checks of that
** Python and of the requirements, and why the runtime did not start: a
** unit of libdnsshim's C compiled on its own, given the runtime defines
** (dns_shim_runtime.h).  The bridge (dns_shim.c) runs the start once and
** then cffi's init code.
*/
#define DNS_SHIM_BUILDING 1
#include "lib/dns_shim_runtime.h"

#include "dns_shim.h"
/* The requirements' text: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <dlfcn.h>
#include <fcntl.h> /* faccessat: with the effective ids, as the files are opened */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

/* Held while an interpreter starts, the library's own (dns_shim.c) or an
** instance of the pool (pool.c): one start at a time.  Recursive: a log
** handler that calls the library during a start finds it held by its own
** thread.  Its depth, the process's (under it) and this thread's, are for
** the child of a fork (dns_shim__start_fork). */
static pthread_mutex_t dns_shim__start_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static unsigned dns_shim__start_depth = 0;
static __thread unsigned dns_shim__start_mine = 0;
static int dns_shim__start_took = 0; /* this fork's prepare took it */

void dns_shim__start_enter(void)
{
    dns_shim__lock(&dns_shim__start_lock);
    dns_shim__start_depth++;
    dns_shim__start_mine++;
}

void dns_shim__start_leave(void)
{
    dns_shim__start_mine--;
    dns_shim__start_depth--;
    pthread_mutex_unlock(&dns_shim__start_lock);
}

/* The start lock's part of the fork handler, first of all: taken, when the
** forking thread holds no interpreter's lock (may_wait), so that a start
** another thread is making ends before the fork, and the child has the
** runtime whole.  A thread of a Python program in os.fork() holds its
** interpreter's lock, which a guest's start needs: it does not wait, and in
** its child a start another thread was making is not finishing: the lock
** is made anew.  In the child the lock is held as deep as the forking
** thread held it (it may fork inside a start: a log handler). */
void dns_shim__start_fork(int phase, int may_wait)
{
    pthread_mutexattr_t attr;
    unsigned i;
    switch (phase) {
    case DNS_SHIM__FORK_PREPARE:
        dns_shim__start_took = may_wait;
        if (may_wait)
            pthread_mutex_lock(&dns_shim__start_lock);
        break;
    case DNS_SHIM__FORK_PARENT:
        if (dns_shim__start_took)
            pthread_mutex_unlock(&dns_shim__start_lock);
        break;
    default:
        /* A recursive mutex is its holder's by thread id, which the child's
        ** thread does not have: it is made anew, not given back. */
        if (!dns_shim__start_took && dns_shim__start_depth == dns_shim__start_mine)
            break;
        pthread_mutexattr_init(&attr);
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&dns_shim__start_lock, &attr);
        pthread_mutexattr_destroy(&attr);
        for (i = 0; i < dns_shim__start_mine; i++)
            pthread_mutex_lock(&dns_shim__start_lock);
        dns_shim__start_depth = dns_shim__start_mine;
    }
}

int32_t dns_shim__init_status = DNS_SHIM_ERR_INIT;
int dns_shim__owns = 0;         /* we started the interpreter */
char dns_shim__root[4096];      /* where the shim package is ("" : on sys.path) */
static char dns_shim__derived_python[4096 + 64];
char dns_shim__bundle_home[4096]; /* a bundle's folder, or "" */
char dns_shim__start_error[2048]; /* why the runtime did not start: one line */

/* The length of the UTF-8 character at p (n octets left), or 0 when the
** octets there are not one. */
static size_t dns_shim__utf8_char(const unsigned char *p, size_t n)
{
    size_t len, i;
    if (p[0] < 0x80)
        return 1;
    len = p[0] >= 0xC2 && p[0] <= 0xDF ? 2 : p[0] >= 0xE0 && p[0] <= 0xEF ? 3
        : p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* text in place, with each octet that is not part of a UTF-8 character
** written \xNN (a path from the environment may be any octets; the log
** handler and dns_shim_last_error promise UTF-8), cut whole at size. */
static void dns_shim__escape_utf8(char *text, size_t size)
{
    char out[sizeof dns_shim__start_error];
    size_t i = 0, o = 0, n = strlen(text), len;
    if (size > sizeof out)
        size = sizeof out;
    while (i < n) {
        len = dns_shim__utf8_char((const unsigned char *)text + i, n - i);
        if (len == 0) {
            if (o + 4 >= size)
                break;
            snprintf(out + o, 5, "\\x%02x", (unsigned char)text[i]);
            o += 4;
            i += 1;
        } else {
            if (o + len >= size)
                break;
            memcpy(out + o, text + i, len);
            o += len;
            i += len;
        }
    }
    out[o] = '\0';
    memcpy(text, out, o + 1);
}


/* The runtime cannot start: one line, what was tried and the fix, logged
** once and kept for every call that returns DNS_SHIM_ERR_INIT.  A detail
** (a traceback) goes to the log at debug level after it. */
void dns_shim__cannot_start(const char *detail, const char *fmt, ...)
{
    va_list ap;
    if (dns_shim__start_error[0])
        return;
    va_start(ap, fmt);
    vsnprintf(dns_shim__start_error, sizeof dns_shim__start_error, fmt, ap);
    va_end(ap);
    dns_shim__escape_utf8(dns_shim__start_error, sizeof dns_shim__start_error);
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
    /* realpath writes up to PATH_MAX octets. */
    if (size < PATH_MAX || DNS_SHIM_FIRMWARE ||
        !(DNS_SHIM_IN_PACKAGE || DNS_SHIM_BUNDLE || DNS_SHIM_PRIVATE_DIR[0]) ||
        dladdr((void *)&dns_shim_version, &info) == 0 || info.dli_fname == NULL ||
        realpath(info.dli_fname, out) == NULL)
        return;
    slash = strrchr(out, '/');
    if (slash != NULL)
        *slash = '\0';
    /* The shared library's runtime (csrc/lib/front.c) lives in the form's
    ** worker folder: the library's directory is above it. */
    if (slash != NULL && strcmp(slash + 1, DNS_SHIM__RUNTIME_FILE) == 0 &&
        DNS_SHIM_WORKER_DIR[0]) {
        size_t n = strlen(out), w = strlen("/" DNS_SHIM_WORKER_DIR);
        if (n > w && strcmp(out + n - w, "/" DNS_SHIM_WORKER_DIR) == 0)
            out[n - w] = '\0';
    }
}

/* Where the shim package is, and the Python installation it belongs to,
** for a library installed in it: <site-packages>/shim/lib/libdnsshim.so.N
** (DNS_SHIM_PACKAGE_LIBDIR), <prefix>/lib/pythonX.Y/site-packages,
** <prefix>/bin/pythonX.Y.  A bundle's library is <bundle>/lib/libdnsshim.so.N
** (DNS_SHIM_BUNDLE_LIBDIR): its folder is all it needs. */
void dns_shim__locate(void)
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
        static const char libdir[] = "/" DNS_SHIM_BUNDLE_LIBDIR;
        char modules[4096 + 64];
        snprintf(modules, sizeof modules, "%s/python" DNS_SHIM_PYTHON_TAG, dir);
        if (n > strlen(libdir) && strcmp(dir + n - strlen(libdir), libdir) == 0 &&
            faccessat(AT_FDCWD, modules, R_OK | X_OK, AT_EACCESS) == 0) {
            dir[n - strlen(libdir)] = '\0';
            snprintf(dns_shim__bundle_home, sizeof dns_shim__bundle_home, "%s", dir);
        }
        return;
    }
    if (DNS_SHIM_PRIVATE_DIR[0]) {
        /* <libdir>/libdnsshim.so.N beside <libdir>/dnsshim/python: the
        ** prefix may be moved or staged (DESTDIR) whole. */
        /* A path cut at sizeof dns_shim__root names no file (dir is at most
        ** PATH_MAX): dns_shim__init_once then says the package is not there.
        ** The cut is that outcome, so gcc's warning of it is off here alone. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-truncation"
        if (dir[0])
            snprintf(dns_shim__root, sizeof dns_shim__root, "%s/%s", dir, DNS_SHIM_PRIVATE_DIR);
#pragma GCC diagnostic pop
        return;
    }
    if (n > strlen("/" DNS_SHIM_PACKAGE_LIBDIR) &&
        strcmp(dir + n - strlen("/" DNS_SHIM_PACKAGE_LIBDIR), "/" DNS_SHIM_PACKAGE_LIBDIR) == 0) {
        char python[4096 + 64];
        dir[n - strlen("/" DNS_SHIM_PACKAGE_LIBDIR)] = '\0'; /* site-packages */
        snprintf(dns_shim__root, sizeof dns_shim__root, "%s", dir);
        snprintf(python, sizeof python, "%s/../../../bin/python" DNS_SHIM_PYTHON_TAG, dir);
        if (faccessat(AT_FDCWD, python, X_OK, AT_EACCESS) == 0) {
            /* Said in messages as <prefix>/bin/pythonX.Y, not through
            ** site-packages/../../..: the three folders cut off by name, where
            ** that names the same file (no symbolic link on the way). */
            char prefix[4096], plain[4096 + 64];
            struct stat a, b;
            int up;
            snprintf(prefix, sizeof prefix, "%s", dir);
            for (up = 0; up < 3 && strrchr(prefix, '/') != NULL; up++)
                *strrchr(prefix, '/') = '\0';
            snprintf(plain, sizeof plain, "%s/bin/python" DNS_SHIM_PYTHON_TAG, prefix);
            if (up == 3 && prefix[0] && lstat(python, &a) == 0 && lstat(plain, &b) == 0 &&
                a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                snprintf(python, sizeof python, "%s", plain);
            snprintf(dns_shim__derived_python, sizeof dns_shim__derived_python, "%s", python);
        }
    }
}

/* The CPython minor version ("3.12") of a python executable, read from its
** virtualenv's pyvenv.cfg or its file name; "" when neither says. */
void dns_shim__python_version(const char *python, char *out, size_t size)
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
    static const char *const dirs[] = {
        "/" DNS_SHIM_BUNDLE_LIBDIR "/python" DNS_SHIM_PYTHON_TAG,
        "/" DNS_SHIM_BUNDLE_LIBDIR "/python" DNS_SHIM_PYTHON_TAG "/lib-dynload"};
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
const char *const dns_shim__from_env = "from DNS_SHIM_PYTHON";
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

/* Whether python, or the file it links to, is named python...: an
** interpreter's executable, not another program (/bin/true). */
static int dns_shim__named_python(const char *python)
{
    char real[4096];
    const char *names[2], *name;
    size_t i;
    names[0] = python;
    names[1] = realpath(python, real) ? real : python;
    for (i = 0; i < 2; i++) {
        name = strrchr(names[i], '/') ? strrchr(names[i], '/') + 1 : names[i];
        if (strncmp(name, "python", 6) == 0)
            return 1;
    }
    return 0;
}

/* Whether python can be the interpreter's executable: it exists, is a file,
** is executable and is of this library's CPython minor version.  Says why
** not (once) and returns -1 when it cannot. */
static int dns_shim__check_python(const char *python, const char *origin)
{
    struct stat st;
    char version[64];
    int runnable;

    if (python[0] != '/') {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) is not an absolute path: %s",
                               python, origin, dns_shim__fix(origin));
        return -1;
    }
    if (stat(python, &st) != 0) {
        if (errno == EACCES)
            /* There, but a folder on its path is closed to this user (a
            ** CPython under /root, a user of no privilege). */
            dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) cannot be read by "
                                   "this process's user (uid %u): a folder on its path is closed "
                                   "to it (Permission denied); every user of the library must "
                                   "be able to read its CPython: %s", python, origin,
                                   (unsigned)geteuid(), dns_shim__fix(origin));
        else
            dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) does not exist "
                                   "(moved or removed): %s", python, origin,
                                   dns_shim__fix(origin));
        return -1;
    }
    runnable = S_ISREG(st.st_mode) && faccessat(AT_FDCWD, python, X_OK, AT_EACCESS) == 0;
    if (!runnable && S_ISREG(st.st_mode) && (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH))) {
        const char *why = dns_shim__errno_text(errno);
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) cannot be run by this "
                               "process's user (uid %u): %s; every user of the library must "
                               "be able to run its CPython: %s", python, origin,
                               (unsigned)geteuid(), why, dns_shim__fix(origin));
        return -1;
    }
    if (!runnable) {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) is not an executable file: "
                               "%s", python, origin, dns_shim__fix(origin));
        return -1;
    }
    dns_shim__python_version(python, version, sizeof version);
    if (!version[0] && !dns_shim__named_python(python)) {
        dns_shim__cannot_start(NULL, "cannot start: the python %s (%s) is not a python "
                               "executable (its name, and its target's, does not start with "
                               "\"python\", and no pyvenv.cfg is beside it): %s", python,
                               origin, dns_shim__fix(origin));
        return -1;
    }
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
const char *dns_shim__choose_python(const char **origin)
{
    const char *python = dns_shim__getenv("DNS_SHIM_PYTHON");
    if (python != NULL && python[0] != '\0') {
        *origin = dns_shim__from_env;
        return python;
    }
    *origin = dns_shim__derived_python[0] ? dns_shim__from_package : dns_shim__from_build;
    return dns_shim__derived_python[0] ? dns_shim__derived_python : DNS_SHIM_DEFAULT_PYTHON;
}

/* The extension modules the runtime imports (cffi's backend, the standard
** library's compiled modules) take libpython's symbols from the process's
** global scope, as in a python process.  A program, or a plugin host
** (glibc's NSS, PAM, a web server), that dlopen()ed this library, or a
** plugin that needs it, with RTLD_LOCAL put libpython in a scope of its own,
** where they do not look: libpython is promoted to the global scope
** (RTLD_NOLOAD: the object already loaded, nothing new), as a python
** executable has it.  Only libpython: this library's own symbols stay where
** the program put them.  A libpython linked into this object (the firmware's
** and the worker image's: frozen, no extension module) is left alone. */
static void dns_shim__libpython_global(void)
{
    Dl_info python, own;
    if (dladdr((void *)&Py_InitializeFromConfig, &python) == 0 || python.dli_fname == NULL ||
        dladdr((void *)&dns_shim_version, &own) == 0 || python.dli_fbase == own.dli_fbase)
        return;
    /* The handle is kept: libpython is never unloaded while this library,
    ** which needs it, is loaded. */
    (void)dlopen(python.dli_fname, RTLD_LAZY | RTLD_GLOBAL | RTLD_NOLOAD);
}

/* Starts CPython from the chosen installation, unless the process already
** runs an interpreter.  Returns 0 on success. */
int dns_shim__start_interpreter(void)
{
    PyStatus st;
    PyConfig config;
    const char *python = dns_shim__getenv("DNS_SHIM_PYTHON"), *origin = dns_shim__from_env;
    char why[1536];

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
    dns_shim__libpython_global();
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
    /* No site module: what it adds (the site directories, a virtualenv's
    ** prefix) comes from dns_shim__owned_site below, without running the
    ** installation's .pth import lines or sitecustomize in the runtime. */
    config.site_import = 0;
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
    /* What site would have added, by the loader's rule; the GIL is held
    ** (Py_InitializeFromConfig took it) and given back on failure. */
    if (dns_shim__owned_site(python, why, sizeof why) != 0) {
        PyEval_SaveThread();
        dns_shim__cannot_start(NULL, "cannot start: the site directories of %s (%s) could not "
                               "be put on the embedded interpreter's sys.path: %s", python,
                               origin, why);
        return -1;
    }
    return 0;
}

/* While cffi loads the parser in an interpreter we started, what it prints
** (its own start-up failures, with their traceback) is caught, so that it
** reaches the program's log handler.  Called with the GIL held. */
PyObject *dns_shim__catch_stderr(void)
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
char *dns_shim__release_stderr(PyObject *stream)
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
** into the library: the build writes DNS_SHIM__REQUIREMENTS), run before
** cffi loads anything, with the GIL held.  In an interpreter the library
** started (not a bundle's), drift() first: another patch release or
** installation of its CPython than it was built with (DNS_SHIM_BUILD_PREFIX,
** PY_VERSION) is a warning, and on_another_installation() puts the compiled
** modules of the library's own installation last on sys.path and says what
** is still missing; then problem(): "" when this interpreter can
** run the library, else one line.  Returns 0, or -1 when the runtime cannot
** start. */
int dns_shim__check_requirements(const char *python, const char *origin)
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
        if (warning != NULL && PyUnicode_Check(warning) && PyUnicode_GetLength(warning) > 0) {
            /* A path that is not UTF-8 comes as surrogates: its octets are
            ** written \xNN, as the start-up lines write them, so that the
            ** handler gets UTF-8 text, never NULL. */
            PyObject *raw = PyUnicode_AsEncodedString(warning, "utf-8", "surrogateescape");
            PyObject *text = raw ? PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw),
                                                        PyBytes_GET_SIZE(raw),
                                                        "backslashreplace") : NULL;
            const char *utf8 = text ? PyUnicode_AsUTF8(text) : NULL;
            if (utf8 != NULL)
                dns_shim__log_level(DNS_SHIM_LOG_WARNING, utf8);
            Py_XDECREF(text);
            Py_XDECREF(raw);
        }
        Py_XDECREF(warning);
        PyErr_Clear();
        {
            PyObject *other = PyDict_GetItemString(globals, "on_another_installation");
            reason = other ? PyObject_CallFunction(other, "sss", DNS_SHIM_BUILD_PREFIX, python,
                                                   origin) : NULL;
            PyErr_Clear();
            if (reason != NULL && (!PyUnicode_Check(reason) ||
                                   PyUnicode_GetLength(reason) == 0)) {
                Py_DECREF(reason);
                reason = NULL;
            }
        }
    }
    if (code != NULL && reason == NULL) {
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
