/*
** ares_every_parser: runs every classic c-ares parser on DNS messages and
** prints what each returns, every output field, in one canonical text form.
**
** Written against c-ares's own <ares.h> only, and built twice: linked with
** the real c-ares (-lcares) and with libdnsshim_ares (-ldnsshim_ares).  The
** two outputs on the same messages are compared by tests/test_ares.py.
**
**   ares_every_parser FILE...     one message per file (raw wire bytes)
**   ares_every_parser -           the paths come on stdin, one a line
**
** For each message: "# PATH", then one line per call, "<function> rc=<code>"
** followed by its output.  Text fields are printed as C strings (up to the
** first NUL, as a C program sees them), bytes outside 0x21-0x7E as \xHH;
** binary fields (TXT, CAA) by their length.
*/
#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_util.h"

static void put_bytes(const unsigned char *p, size_t n)
{
    size_t i;
    putchar('"');
    for (i = 0; i < n; i++) {
        if (p[i] > 0x20 && p[i] < 0x7F && p[i] != '"' && p[i] != '\\')
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
    putchar('"');
}

static void put_str(const char *s)
{
    if (s == NULL)
        fputs("NULL", stdout);
    else
        put_bytes((const unsigned char *)s, strlen(s));
}

static void put_addr(int family, const void *addr)
{
    char text[INET6_ADDRSTRLEN];
    fputs(inet_ntop(family, addr, text, sizeof text) ? text : "?", stdout);
}

static void put_hostent(const struct hostent *h)
{
    int i;
    if (h == NULL) {
        fputs(" host=NULL", stdout);
        return;
    }
    fputs(" name=", stdout);
    put_str(h->h_name);
    printf(" addrtype=%d length=%d aliases=[", h->h_addrtype, h->h_length);
    for (i = 0; h->h_aliases && h->h_aliases[i]; i++) {
        if (i)
            putchar(',');
        put_str(h->h_aliases[i]);
    }
    fputs("] addrs=[", stdout);
    for (i = 0; h->h_addr_list && h->h_addr_list[i]; i++) {
        if (i)
            putchar(',');
        if (h->h_addrtype == AF_INET && h->h_length == 4)
            put_addr(AF_INET, h->h_addr_list[i]);
        else if (h->h_addrtype == AF_INET6 && h->h_length == 16)
            put_addr(AF_INET6, h->h_addr_list[i]);
        else
            put_bytes((const unsigned char *)h->h_addr_list[i], (size_t)h->h_length);
    }
    putchar(']');
}

#define MAX_TTLS 8

/* ares_parse_a_reply (family AF_INET) or ares_parse_aaaa_reply, with or
** without a hostent, asking for `want` addrttls. */
static void run_addresses(const unsigned char *m, int n, int family, int with_host, int want)
{
    struct hostent *host = NULL;
    struct ares_addrttl ttls[MAX_TTLS];
    struct ares_addr6ttl ttls6[MAX_TTLS];
    int count = want, i, rc;
    memset(ttls, 0, sizeof ttls);
    memset(ttls6, 0, sizeof ttls6);
    if (family == AF_INET)
        rc = ares_parse_a_reply(m, n, with_host ? &host : NULL, ttls, &count);
    else
        rc = ares_parse_aaaa_reply(m, n, with_host ? &host : NULL, ttls6, &count);
    printf("%s host=%d ttls=%d rc=%d", family == AF_INET ? "a" : "aaaa", with_host, want, rc);
    if (with_host && rc == ARES_SUCCESS)
        put_hostent(host);
    printf(" naddrttls=%d [", count);
    for (i = 0; i < count && i < MAX_TTLS; i++) {
        if (i)
            putchar(',');
        if (family == AF_INET)
            put_addr(AF_INET, &ttls[i].ipaddr);
        else
            put_addr(AF_INET6, &ttls6[i].ip6addr);
        printf("/%d", family == AF_INET ? ttls[i].ttl : ttls6[i].ttl);
    }
    puts("]");
    if (host)
        ares_free_hostent(host);
}

static void run_hostents(const unsigned char *m, int n)
{
    static const unsigned char addr[4] = {192, 0, 2, 1};
    struct hostent *host = NULL;
    int rc = ares_parse_ns_reply(m, n, &host);
    printf("ns rc=%d", rc);
    if (rc == ARES_SUCCESS)
        put_hostent(host);
    putchar('\n');
    if (host)
        ares_free_hostent(host);
    host = NULL;
    rc = ares_parse_ptr_reply(m, n, addr, 4, AF_INET, &host);
    printf("ptr rc=%d", rc);
    if (rc == ARES_SUCCESS)
        put_hostent(host);
    putchar('\n');
    if (host)
        ares_free_hostent(host);
}

static void run_lists(const unsigned char *m, int n)
{
    int rc;
    {
        struct ares_mx_reply *mx = NULL, *p;
        rc = ares_parse_mx_reply(m, n, &mx);
        printf("mx rc=%d", rc);
        for (p = mx; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%u ", p->priority);
            put_str(p->host);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(mx);
    }
    {
        struct ares_srv_reply *srv = NULL, *p;
        rc = ares_parse_srv_reply(m, n, &srv);
        printf("srv rc=%d", rc);
        for (p = srv; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%u %u %u ", p->priority, p->weight, p->port);
            put_str(p->host);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(srv);
    }
    {
        struct ares_txt_reply *txt = NULL, *p;
        rc = ares_parse_txt_reply(m, n, &txt);
        printf("txt rc=%d", rc);
        for (p = txt; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%zu ", p->length);
            put_bytes(p->txt, p->length);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(txt);
    }
    {
        struct ares_txt_ext *txt = NULL, *p;
        rc = ares_parse_txt_reply_ext(m, n, &txt);
        printf("txt_ext rc=%d", rc);
        for (p = txt; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%u %zu ", p->record_start, p->length);
            put_bytes(p->txt, p->length);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(txt);
    }
    {
        struct ares_naptr_reply *naptr = NULL, *p;
        rc = ares_parse_naptr_reply(m, n, &naptr);
        printf("naptr rc=%d", rc);
        for (p = naptr; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%u %u ", p->order, p->preference);
            put_str((const char *)p->flags);
            putchar(' ');
            put_str((const char *)p->service);
            putchar(' ');
            put_str((const char *)p->regexp);
            putchar(' ');
            put_str(p->replacement);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(naptr);
    }
    {
        struct ares_caa_reply *caa = NULL, *p;
        rc = ares_parse_caa_reply(m, n, &caa);
        printf("caa rc=%d", rc);
        for (p = caa; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%d %zu ", p->critical, p->plength);
            put_bytes(p->property, p->plength);
            printf(" %zu ", p->length);
            put_bytes(p->value, p->length);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(caa);
    }
    {
        struct ares_uri_reply *uri = NULL, *p;
        rc = ares_parse_uri_reply(m, n, &uri);
        printf("uri rc=%d", rc);
        for (p = uri; rc == ARES_SUCCESS && p; p = p->next) {
            printf(" {%u %u %d ", p->priority, p->weight, p->ttl);
            put_str(p->uri);
            putchar('}');
        }
        putchar('\n');
        ares_free_data(uri);
    }
    {
        struct ares_soa_reply *soa = NULL;
        rc = ares_parse_soa_reply(m, n, &soa);
        printf("soa rc=%d", rc);
        if (rc == ARES_SUCCESS && soa) {
            putchar(' ');
            put_str(soa->nsname);
            putchar(' ');
            put_str(soa->hostmaster);
            printf(" %u %u %u %u %u", soa->serial, soa->refresh, soa->retry, soa->expire,
                   soa->minttl);
        }
        putchar('\n');
        if (rc == ARES_SUCCESS)
            ares_free_data(soa);
    }
}

/* ares_expand_name and ares_expand_string at a few offsets: the question's
** name, and a third and two thirds into the message. */
static void run_expand(const unsigned char *m, int n)
{
    int offsets[3], i;
    offsets[0] = 12;
    offsets[1] = 12 + (n - 12) / 3;
    offsets[2] = 12 + 2 * (n - 12) / 3;
    for (i = 0; i < 3; i++) {
        char *name = NULL;
        unsigned char *str = NULL;
        long len = -1;
        int rc;
        if (offsets[i] >= n)
            continue;
        rc = ares_expand_name(m + offsets[i], m, n, &name, &len);
        printf("expand_name @%d rc=%d", offsets[i], rc);
        if (rc == ARES_SUCCESS) {
            printf(" len=%ld ", len);
            put_str(name);
            ares_free_string(name);
        }
        putchar('\n');
        len = -1;
        rc = ares_expand_string(m + offsets[i], m, n, &str, &len);
        printf("expand_string @%d rc=%d", offsets[i], rc);
        if (rc == ARES_SUCCESS) {
            printf(" len=%ld ", len);
            put_str((const char *)str);
            ares_free_string(str);
        }
        putchar('\n');
    }
}

static void run(const char *path)
{
    long len = 0;
    unsigned char *m = read_message(path, 0, &len);
    printf("# %s\n", path);
    if (m == NULL) {
        puts("unreadable");
        return;
    }
    run_addresses(m, (int)len, AF_INET, 1, MAX_TTLS);
    run_addresses(m, (int)len, AF_INET, 0, 1);
    run_addresses(m, (int)len, AF_INET6, 1, MAX_TTLS);
    run_addresses(m, (int)len, AF_INET6, 0, 1);
    run_hostents(m, (int)len);
    run_lists(m, (int)len);
    run_expand(m, (int)len);
    free(m);
}

int main(int argc, char **argv)
{
    int i;
    if (argc == 2 && strcmp(argv[1], "-") == 0) {
        char line[4096];
        while (fgets(line, sizeof line, stdin)) {
            line[strcspn(line, "\n")] = '\0';
            if (line[0])
                run(line);
        }
    } else {
        for (i = 1; i < argc; i++)
            run(argv[i]);
    }
    printf("strerror");
    for (i = 0; i <= 25; i++)
        printf(" [%s]", ares_strerror(i));
    putchar('\n');
    return 0;
}
