/* ares_dnsrec [--flags N] FILE...
 *
 * c-ares's DNS record parser (c-ares >= 1.22: the one its resolver calls on
 * every reply) on each message file: ares_dns_parse(buf, len, flags, &rec),
 * then, when that succeeds, ares_dns_write(rec) of what it parsed.  One line
 * per file, on stdout:
 *
 *     FILE status N                 N: ares_dns_parse's ares_status_t
 *     FILE status 0 write HEX       the bytes ares_dns_write gave, in hex
 *     FILE status 0 write_status M  ares_dns_write failed with M
 *
 * N's flags: ares_dns_parse_flags_t (ARES_DNS_PARSE_*), decimal or 0x hex.
 * Everything is freed (ares_dns_record_destroy, ares_free_string), so that
 * the program is valgrind-clean.  Exit 0, whatever the statuses; 1 when a file
 * could not be read (the reason on stderr, the other files still done); 2 on
 * a usage error.
 *
 * Built against the real c-ares 1.34 (tests/cares_source.py), it is the
 * reference; run again with LD_PRELOAD naming another implementation of
 * ares_dns_parse, its lines can be compared with the first run's one by one.
 */

#include <ares.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: ares_dnsrec [--flags N] FILE...\n");
    return 2;
}

/* The whole file into *buf (malloc'd, never NULL on success), its size in
 * *len; -1 with errno set on failure. */
static int read_file(const char *path, unsigned char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 4096, used = 0;
    unsigned char *data;

    if (f == NULL)
        return -1;
    data = malloc(cap);
    if (data == NULL) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        size_t got = fread(data + used, 1, cap - used, f);
        used += got;
        if (used < cap) {
            if (ferror(f)) {
                int saved = errno ? errno : EIO;
                free(data);
                fclose(f);
                errno = saved;
                return -1;
            }
            break;
        }
        {
            unsigned char *bigger = realloc(data, cap * 2);
            if (bigger == NULL) {
                free(data);
                fclose(f);
                errno = ENOMEM;
                return -1;
            }
            data = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    *buf = data;
    *len = used;
    return 0;
}

static void print_hex(const unsigned char *bytes, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < len; i++) {
        putchar(digits[bytes[i] >> 4]);
        putchar(digits[bytes[i] & 0x0f]);
    }
}

int main(int argc, char **argv)
{
    unsigned int flags = 0;
    int i = 1, failed = 0;

    if (i < argc && strcmp(argv[i], "--flags") == 0) {
        char *end;
        unsigned long value;
        if (i + 1 >= argc)
            return usage();
        errno = 0;
        value = strtoul(argv[i + 1], &end, 0);
        if (errno != 0 || end == argv[i + 1] || *end != '\0' || value > 0xffffffffUL
            || argv[i + 1][0] == '-')
            return usage();
        flags = (unsigned int)value;
        i += 2;
    }
    if (i < argc && strcmp(argv[i], "--") == 0)
        i++;
    if (i >= argc)
        return usage();

    for (; i < argc; i++) {
        unsigned char *buf = NULL;
        size_t len = 0;
        ares_dns_record_t *rec = NULL;
        ares_status_t status;

        if (read_file(argv[i], &buf, &len) != 0) {
            fprintf(stderr, "ares_dnsrec: %s: %s\n", argv[i], strerror(errno));
            failed = 1;
            continue;
        }
        status = ares_dns_parse(buf, len, flags, &rec);
        printf("%s status %d", argv[i], (int)status);
        if (status == ARES_SUCCESS) {
            unsigned char *out = NULL;
            size_t out_len = 0;
            ares_status_t written = ares_dns_write(rec, &out, &out_len);
            if (written == ARES_SUCCESS) {
                fputs(" write ", stdout);
                print_hex(out, out_len);
            } else {
                printf(" write_status %d", (int)written);
            }
            ares_free_string(out);
        }
        putchar('\n');
        ares_dns_record_destroy(rec);
        free(buf);
    }
    if (fflush(stdout) != 0)
        return 1;
    return failed;
}
