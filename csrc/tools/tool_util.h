/*
** tool_util.h: what the command-line programs share, each written once:
** reading a DNS message from a file (raw or hex text), hex output, a client
** cookie from its hex text, resident memory.  Used by dnsshim-dump and the
** bundler's probe (here), and by the test drivers and benchmark harnesses
** (tests/c/, tests/bench/).  Not part of the library's API.
*/
#ifndef DNSSHIM_TOOL_UTIL_H
#define DNSSHIM_TOOL_UTIL_H

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This process's resident memory in KiB, from /proc; -1 if unknown. */
static inline long rss_kib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2)
        resident = -1;
    if (f)
        fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Reads all of `path` ("-" for stdin) into a malloc'd buffer; with `hex`,
** the file holds hex digits (whitespace and '#' comments to end of line
** allowed) and the buffer gets the bytes they spell.  Returns the buffer
** (free it) and sets *len, or returns NULL with one line on stderr, "PATH:
** " then why: strerror's text (the file cannot be opened or read), "out of
** memory", "not hex: 'g'" (the first character that is neither a hex digit,
** white space nor in a comment; "not hex: octet 0xNN" when it is not
** printable) or "odd number of hex digits".  (shim/dump.py's reader says
** the same.) */
static inline unsigned char *read_message(const char *path, int hex, long *len)
{
    /* Whether f is ours to close (gcc -fanalyzer cannot tell from f != stdin
    ** that an opened file is never stdin). */
    int opened = strcmp(path, "-") != 0;
    FILE *f = opened ? fopen(path, "rb") : stdin;
    unsigned char *buf = NULL;
    size_t used = 0, cap = 0, n;

    if (f == NULL) {
        perror(path);
        return NULL;
    }
    for (;;) {
        if (cap - used < 4096) {
            unsigned char *grown = realloc(buf, cap + 65536 + 1);
            if (grown == NULL) {
                free(buf);
                buf = NULL;
                fprintf(stderr, "%s: out of memory\n", path);
                goto out;
            }
            buf = grown;
            cap += 65536;
        }
        n = fread(buf + used, 1, cap - used, f);
        used += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        perror(path);
        free(buf);
        buf = NULL;
        goto out;
    }
    if (hex) {
        size_t i, out = 0;
        int half = -1, comment = 0;
        for (i = 0; i < used; i++) {
            int c = buf[i];
            if (comment) {
                comment = c != '\n';
                continue;
            }
            if (c == '#') {
                comment = 1;
            } else if (isxdigit(c)) {
                int v = isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
                if (half < 0) {
                    half = v;
                } else {
                    buf[out++] = (unsigned char)(half * 16 + v);
                    half = -1;
                }
            } else if (!isspace(c)) {
                if (isgraph(c))
                    fprintf(stderr, "%s: not hex: '%c'\n", path, c);
                else
                    fprintf(stderr, "%s: not hex: octet 0x%02x\n", path, (unsigned)c);
                free(buf);
                buf = NULL;
                goto out;
            }
        }
        if (half >= 0) {
            fprintf(stderr, "%s: odd number of hex digits\n", path);
            free(buf);
            buf = NULL;
            goto out;
        }
        used = out;
    }
    *len = (long)used;
out:
    if (opened)
        fclose(f);
    return buf;
}

/* Writes len octets as lower-case hex digits to stdout. */
static inline void print_hex_digits(const uint8_t *data, size_t len)
{
    size_t i;
    for (i = 0; i < len; i++)
        printf("%02x", data[i]);
}

/* The 8 octets of a client cookie (RFC 7873) from exactly 16 hex digits.
** Returns 0, or -1 for anything else. */
static inline int parse_cookie(const char *hex, uint8_t out[8])
{
    int i;
    if (strlen(hex) != 16)
        return -1;
    for (i = 0; i < 16; i++)
        if (!isxdigit((unsigned char)hex[i]))
            return -1;
    for (i = 0; i < 8; i++) {
        int hi = hex[2 * i], lo = hex[2 * i + 1];
        hi = isdigit(hi) ? hi - '0' : tolower(hi) - 'a' + 10;
        lo = isdigit(lo) ? lo - '0' : tolower(lo) - 'a' + 10;
        out[i] = (uint8_t)(hi * 16 + lo);
    }
    return 0;
}

#endif
