/*
** failure.c: the program's log handler (dns_shim_set_log_handler) and the
** reason for the last failure, per thread (dns_shim_last_error), a unit of
** libdnsshim's C compiled on its own.  Every other unit fails a call
** through dns_shim__fail and logs through dns_shim__log_level
** (dns_shim_internal.h); the Python side does both through the bridge.
**
** It is also where the library reads its environment (dns_shim__getenv).
*/
#define _GNU_SOURCE 1 /* secure_getenv */
#define DNS_SHIM_BUILDING 1
#include "dns_shim.h"
/* The status names: written by the build (dnsshim_build.pipeline.generated_headers). */
#include "dns_shim_generated.h"
#include "lib/dns_shim_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The environment                                                      */

/* A DNS_SHIM_* variable: every one the library reads comes through here.
** In a process the kernel starts in secure-execution mode (AT_SECURE: a
** setuid or setgid program, one with file capabilities, or one an LSM
** marked), none is read: the environment is the unprivileged user's, and
** what it names (a Python installation to run, a number of interpreters)
** is not the program's to trust.  The library then behaves as with the
** variable unset.  glibc's rule for a library in privileged processes
** (secure_getenv). */
const char *dns_shim__getenv(const char *name)
{
    return secure_getenv(name);
}

/* errno's text for a reason: glibc's own description, untranslated and
** allocating nothing (strerror may take memory of the host's for a
** translation: never around a call). */
const char *dns_shim__errno_text(int e)
{
    const char *text = strerrordesc_np(e);
    return text != NULL ? text : "unknown error";
}

/* ------------------------------------------------------------------ */
/* Logging                                                              */

/* The handler and its ctx, read and written together under the mutex, with
** the count of messages in flight (each counted for the whole of its
** handler's call): dns_shim_set_log_handler waits after the swap until none
** is, and so returns only once every call of the old handler has returned.
** A handler that sets the handler itself (this thread is in a handler:
** dns_shim__in_handler) does not wait: it would wait for its own call.  In
** the child of a fork (dns_shim__log_fork) the messages in flight are the
** forking thread's own. */
static pthread_mutex_t dns_shim__log_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dns_shim__log_quiet = PTHREAD_COND_INITIALIZER;
static unsigned long dns_shim__log_in_flight = 0;
static dns_shim_log_handler dns_shim__log_handler = NULL;
static void *dns_shim__log_ctx = NULL;
/* Where the messages go while the program has set no handler: stderr,
** unless a plugin that cannot print into its host (libnss_dnsshim) set
** another (dns_shim__set_default_log_handler). */
static dns_shim_log_handler dns_shim__log_default = NULL;
static void *dns_shim__log_default_ctx = NULL;
static __thread unsigned dns_shim__in_handler = 0;

void dns_shim__log_fork(int phase)
{
    if (phase == DNS_SHIM__FORK_CHILD) {
        dns_shim__log_in_flight = dns_shim__in_handler;
        pthread_cond_init(&dns_shim__log_quiet, NULL);
    }
    dns_shim__fork_mutex(&dns_shim__log_lock, phase);
}

DNS_SHIM_API void dns_shim_set_log_handler(dns_shim_log_handler handler, void *ctx)
{
    dns_shim__lock(&dns_shim__log_lock);
    dns_shim__log_handler = handler;
    dns_shim__log_ctx = handler ? ctx : NULL;
    while (dns_shim__in_handler == 0 && dns_shim__log_in_flight > 0)
        pthread_cond_wait(&dns_shim__log_quiet, &dns_shim__log_lock);
    pthread_mutex_unlock(&dns_shim__log_lock);
}

/* DNSSHIM_PRIVATE: the handler used while the program has set none, for
** a module that must not write into its host's stderr (libnss_dnsshim:
** syslog).  A program's own dns_shim_set_log_handler still wins. */
DNS_SHIM__PRIVATE_API void dns_shim__set_default_log_handler(dns_shim_log_handler handler,
                                                            void *ctx)
{
    dns_shim__lock(&dns_shim__log_lock);
    dns_shim__log_default = handler;
    dns_shim__log_default_ctx = handler ? ctx : NULL;
    pthread_mutex_unlock(&dns_shim__log_lock);
}

/* Sends one message to the handler, or to stderr (the default handler
** writes warnings and errors only).  The Python side (shim/embedded.py)
** logs through it too. */
void dns_shim__log_level(int32_t level, const char *message)
{
    dns_shim_log_handler handler;
    void *ctx;

    if (message == NULL) /* the header promises text */
        message = "";
    dns_shim__lock(&dns_shim__log_lock);
    dns_shim__log_in_flight++;
    handler = dns_shim__log_handler;
    ctx = dns_shim__log_ctx;
    if (handler == NULL) {
        handler = dns_shim__log_default;
        ctx = dns_shim__log_default_ctx;
    }
    pthread_mutex_unlock(&dns_shim__log_lock);
    if (handler != NULL) {
        dns_shim__in_handler++;
        handler(ctx, level, message);
        dns_shim__in_handler--;
    } else if (level <= DNS_SHIM_LOG_WARNING) {
        fprintf(stderr, "dnsshim: %s\n", message);
        fflush(stderr);
    }
    dns_shim__lock(&dns_shim__log_lock);
    if (--dns_shim__log_in_flight == 0)
        pthread_cond_broadcast(&dns_shim__log_quiet);
    pthread_mutex_unlock(&dns_shim__log_lock);
}

void dns_shim__log(const char *message)
{
    dns_shim__log_level(DNS_SHIM_LOG_ERROR, message);
}

/* ------------------------------------------------------------------ */
/* The reason for the last failure, per thread (dns_shim_last_error)    */

__thread char dns_shim__error[DNS_SHIM__ERROR_SIZE];

/* The enumerator's name of a status ("DNS_SHIM_ERR_TRUNCATED"), from the
** one table of statuses: the build writes the cases. */
static const char *dns_shim__status_name(int32_t status)
{
    switch (status) {
    DNS_SHIM__STATUS_NAME_CASES
    }
    return "DNS_SHIM_ERR_UNKNOWN";
}

DNS_SHIM_API const char *dns_shim_last_error(void)
{
    return dns_shim__error;
}

/* A call succeeded: nothing to say. */
int32_t dns_shim__ok(void)
{
    dns_shim__error[0] = '\0';
    return DNS_SHIM_OK;
}

/* The detail was cut at its last octet: drop a UTF-8 character left
** incomplete there, so the text stays valid UTF-8. */
static void dns_shim__cut_whole(void)
{
    size_t n = strlen(dns_shim__error), i = n, need;
    unsigned char lead;
    if (n < sizeof dns_shim__error - 1)
        return;
    while (i > 0 && ((unsigned char)dns_shim__error[i - 1] & 0xC0) == 0x80 && n - i < 3)
        i--;
    if (i == 0)
        return;
    lead = (unsigned char)dns_shim__error[i - 1];
    need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (i - 1) < need)
        dns_shim__error[i - 1] = '\0';
}

/* A call fails with status: "<its name>: <detail>" for this thread.
** Returns status.  An argument may point into this thread's detail (a
** reason quoted from the failure before, dns_shim__reason(dns_shim_last_error())):
** the text is made in a buffer of its own and copied, so that no write
** overlaps what it reads. */
int32_t dns_shim__fail(int32_t status, const char *fmt, ...)
{
    char text[DNS_SHIM__ERROR_SIZE];
    size_t n;
    va_list ap;
    n = (size_t)snprintf(text, sizeof text, "%s: ", dns_shim__status_name(status));
    if (n < sizeof text) {
        va_start(ap, fmt);
        vsnprintf(text + n, sizeof text - n, fmt, ap);
        va_end(ap);
    }
    memcpy(dns_shim__error, text, sizeof text);
    dns_shim__cut_whole();
    return status;
}

/* The detail after its status's name: what the name's caller said. */
const char *dns_shim__reason(const char *detail)
{
    const char *colon = strstr(detail, ": ");
    if (strncmp(detail, "DNS_SHIM_", sizeof "DNS_SHIM_" - 1) == 0 && colon != NULL)
        return colon + 2;
    return detail;
}

/* For the Python side: the whole text of a failure it reports. */
void dns_shim__set_error(const char *text)
{
    snprintf(dns_shim__error, sizeof dns_shim__error, "%s", text);
    dns_shim__cut_whole();
}

