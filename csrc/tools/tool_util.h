/*
** file_util.h: helpers of the C programs of this directory (not part of the
** library's API): reading a DNS message from a file, and resident memory.
*/
#ifndef DNSSHIM_FILE_UTIL_H
#define DNSSHIM_FILE_UTIL_H

#include <ctype.h>
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
** (free it) and sets *len, or returns NULL with a message on stderr. */
static inline unsigned char *read_message(const char *path, int hex, long *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
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
                fprintf(stderr, "%s: not hex: '%c'\n", path, c);
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
    if (f != stdin)
        fclose(f);
    return buf;
}

#endif
