/*
** dns_shim_runtime.h: the runtime's build-time settings and what crosses
** from runtime.c and guest.c to the bridge (dns_shim.c), hidden
** (dns_shim_internal.h says why).
*/
#ifndef DNS_SHIM_RUNTIME_H
#define DNS_SHIM_RUNTIME_H

#include <Python.h>
#include <pthread.h>
#include <stdint.h>

/* Supplied by build_ffi.py on the compiler's command line:
**   DNS_SHIM_DEFAULT_PYTHON  the python executable pinned at build time
**   DNS_SHIM_DEFAULT_ROOT    the directory holding the shim package it was
**                            built from ("" when that Python finds it)
**   DNS_SHIM_PYTHON_TAG      the CPython minor version embedded, "3.11"
** The layout ones come from the install form's entry in shim/layout.py
** (Form.c_defines), the one description of where each file goes:
**   DNS_SHIM_IN_PACKAGE      1 when this shared object is installed inside
**                            the Python package: the package and its Python
**                            are then found from this file's own path
**   DNS_SHIM_PACKAGE_LIBDIR  then, how that path ends: "shim/lib" for
**                            <site-packages>/shim/lib/libdnsshim.so.N
**   DNS_SHIM_PRIVATE_DIR     for a prefix install (build_ffi.py --prefix):
**                            the directory of its Python side (the shim
**                            package, dnspython, cffi's backend) relative
**                            to this file's own directory, "dnsshim/python";
**                            DNS_SHIM_DEFAULT_ROOT is its installed path,
**                            which the static archive uses
**   DNS_SHIM_WORKER_DIR      the worker image's folder relative to this
**                            file's own directory, "dnsshim" for a prefix
**                            install; "" (the default): beside it
**   DNS_SHIM_BUNDLE          1 for a self-contained folder (python -m shim
**                            bundle): this file is <bundle>/<libdir>/
**                            libdnsshim.so.N and the interpreter runs from
**                            <bundle> alone
**   DNS_SHIM_BUNDLE_LIBDIR   then, that <libdir>: "lib", which is also where
**                            CPython looks for its modules under its home
**                            (<home>/lib/pythonX.Y)
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
#ifndef DNS_SHIM_PACKAGE_LIBDIR
#  define DNS_SHIM_PACKAGE_LIBDIR "shim/lib"
#endif
#ifndef DNS_SHIM_BUNDLE
#  define DNS_SHIM_BUNDLE 0
#endif
#ifndef DNS_SHIM_BUNDLE_LIBDIR
#  define DNS_SHIM_BUNDLE_LIBDIR "lib"
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
/* The modules frozen into the object (generated: dnsshim_build/firmware.py). */
extern const struct _frozen dns_shim__firmware_frozen[];
#endif

#define DNS_SHIM__HIDDEN __attribute__((visibility("hidden")))

/* The start, once (runtime.c). */
DNS_SHIM__HIDDEN extern int32_t dns_shim__init_status;
DNS_SHIM__HIDDEN extern int dns_shim__owns;         /* we started the interpreter */
DNS_SHIM__HIDDEN extern char dns_shim__root[4096];  /* where the shim package is */
DNS_SHIM__HIDDEN extern char dns_shim__bundle_home[4096];
DNS_SHIM__HIDDEN extern char dns_shim__start_error[2048];
DNS_SHIM__HIDDEN extern const char *const dns_shim__from_env;

DNS_SHIM__HIDDEN void dns_shim__cannot_start(const char *detail, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
DNS_SHIM__HIDDEN void dns_shim__locate(void);
DNS_SHIM__HIDDEN void dns_shim__python_version(const char *python, char *out, size_t size);
DNS_SHIM__HIDDEN const char *dns_shim__choose_python(const char **origin);
DNS_SHIM__HIDDEN int dns_shim__start_interpreter(void);
DNS_SHIM__HIDDEN PyObject *dns_shim__catch_stderr(void);
DNS_SHIM__HIDDEN char *dns_shim__release_stderr(PyObject *stream);
DNS_SHIM__HIDDEN int dns_shim__check_requirements(const char *python, const char *origin);


/* A guest in a Python program (guest.c): its Guest object, loading and
** checking it (0, or -1 with the reason given to dns_shim__cannot_start),
** publishing it; dir first on sys.path (GIL held; 0, or -1).  In an
** interpreter the library started (which runs no site module), its
** Python's site directories by the loader's own rule (GIL held; 0, or -1
** with one line in why). */
DNS_SHIM__HIDDEN extern PyObject *dns_shim__guest;
DNS_SHIM__HIDDEN int dns_shim__guest_start(void);
DNS_SHIM__HIDDEN void dns_shim__guest_publish(void);
DNS_SHIM__HIDDEN int dns_shim__path_first(const char *dir);
DNS_SHIM__HIDDEN int dns_shim__owned_site(const char *python, char *why, size_t size);

#endif
