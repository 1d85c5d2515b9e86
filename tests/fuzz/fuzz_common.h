/*
** fuzz_common.h: what the libFuzzer harnesses of tests/fuzz/ share: a
** finding (FUZZ_CHECK: a line on stderr, then abort(), which libFuzzer
** reports as a crash and saves the input of), the checks of what the
** library's callbacks and c-ares's structures hand a program (names, byte
** strings), and a digest of everything a run delivered, to compare two runs.
*/
#ifndef DNSSHIM_FUZZ_COMMON_H
#define DNSSHIM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                       \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "FUZZ FINDING (%s:%d): %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                    \
            fflush(stderr);                                                         \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* FNV-1a over everything delivered: two runs of the same message compare
** their digests. */
static uint64_t fuzz_digest;
__attribute__((unused)) static void fuzz_mix(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;
    for (i = 0; i < n; i++) {
        fuzz_digest ^= b[i];
        fuzz_digest *= 1099511628211ull;
    }
}
#define FUZZ_MIX(v) fuzz_mix(&(v), sizeof(v))

/* A name as the library delivers it (dns_shim.h, "Names"): not NULL,
** NUL-terminated within 1024 octets, printable ASCII other than space
** only (every other octet is \DDD), never "" (the root is "."), no final
** dot but for the root.  Every octet is read (ASan sees an overrun). */
__attribute__((unused)) static void fuzz_check_name(const char *what, const char *name)
{
    size_t n, i;
    FUZZ_CHECK(name != NULL, "%s is NULL", what);
    n = strlen(name);
    FUZZ_CHECK(n > 0 && n <= 1024, "%s has %zu octets", what, n);
    for (i = 0; i < n; i++)
        FUZZ_CHECK(name[i] > 0x20 && name[i] < 0x7f, "%s has octet 0x%02x at %zu: \"%s\"", what,
                   (unsigned char)name[i], i, name);
    FUZZ_CHECK(n == 1 || name[n - 1] != '.' || (n >= 2 && name[n - 2] == '\\'),
               "%s ends with a dot: \"%s\"", what, name);
    fuzz_mix(name, n + 1);
}

/* A byte string of the library's (dns_shim_bytes): data not NULL, len
** within a message, data[len] a NUL; every octet read. */
__attribute__((unused)) static void fuzz_check_bytes(const char *what, const uint8_t *data,
                                                     size_t len)
{
    FUZZ_CHECK(data != NULL, "%s.data is NULL", what);
    FUZZ_CHECK(len <= 65535, "%s.len is %zu", what, len);
    FUZZ_CHECK(data[len] == '\0', "%s has no NUL at data[len]", what);
    fuzz_mix(data, len);
    FUZZ_MIX(len);
}

/* Every octet of a C string handed out by c-ares's structures read;
** its length. */
__attribute__((unused)) static size_t fuzz_check_cstring(const char *what, const char *s)
{
    size_t n;
    FUZZ_CHECK(s != NULL, "%s is NULL", what);
    n = strlen(s);
    FUZZ_CHECK(n <= 65535, "%s has %zu octets", what, n);
    fuzz_mix(s, n);
    return n;
}

/* Counts of what a run exercised, printed at exit as one line,
** "<harness> stats: inputs N good M" (tests/test_libfuzzer.py reads it:
** a run whose inputs never reached the success path proves little). */
static unsigned long long fuzz_stat_inputs, fuzz_stat_good;
static const char *fuzz_stat_name;
static void fuzz_stats_print(void)
{
    fprintf(stderr, "%s stats: inputs %llu good %llu\n", fuzz_stat_name, fuzz_stat_inputs,
            fuzz_stat_good);
}
__attribute__((unused)) static void fuzz_stats_start(const char *name)
{
    if (fuzz_stat_name == NULL) {
        fuzz_stat_name = name;
        atexit(fuzz_stats_print);
    }
}

/* libdnsshim's client of the parse service, for a harness that compiles
** libdnsshim_ares's units (csrc/ares/service.c asks it first) without
** libdnsshim: no service, so every call is computed by the harness's own
** bridge. */
#ifdef FUZZ_NO_SERVICE
int dns_shim__service_exchange(uint16_t op, const uint8_t *body, size_t n,
                               int (*read)(void *, int32_t, const uint8_t *, size_t, char *,
                                           size_t),
                               void *ctx);
int dns_shim__service_exchange(uint16_t op, const uint8_t *body, size_t n,
                               int (*read)(void *, int32_t, const uint8_t *, size_t, char *,
                                           size_t),
                               void *ctx)
{
    (void)op, (void)body, (void)n, (void)read, (void)ctx;
    return 0;
}
#endif

#endif
