/*
** ares_sip_locate: a legacy program of the IMS kind, written against
** c-ares's classic parsers and <ares.h> only: SIP server location as RFC 3263
** does it for a P-CSCF or an S-CSCF.
**
**   ares_sip_locate NAPTR_REPLY SRV_REPLY [A_REPLY [AAAA_REPLY]]
**
** Each argument is a file holding the DNS response the resolver returned
** for that step.  The program picks the NAPTR records with flag "s" and a
** SIP service it supports (SIPS+D2T, SIP+D2T, SIP+D2U), by order then
** preference; takes the SRV records of the chosen replacement, by priority
** then weight (largest first, for a stable output); and gives each target's
** addresses with their TTLs.
**
** Built twice (tests/cprograms.py): with -lcares and with -ldnsshim_ares; the two
** must print the same (tests/test_ares.py).
*/
#include <ares.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tool_util.h"

#define MAX_RECORDS 32

struct choice {
    unsigned short order, preference;
    char service[32];
    char replacement[256];
};

struct server {
    unsigned short priority, weight, port;
    char target[256];
};

static int by_order(const void *a, const void *b)
{
    const struct choice *x = a, *y = b;
    if (x->order != y->order)
        return x->order - y->order;
    return x->preference - y->preference;
}

static int by_priority(const void *a, const void *b)
{
    const struct server *x = a, *y = b;
    if (x->priority != y->priority)
        return x->priority - y->priority;
    if (x->weight != y->weight)
        return y->weight - x->weight;
    return strcmp(x->target, y->target);
}

static int supported(const unsigned char *service)
{
    return strcasecmp((const char *)service, "SIPS+D2T") == 0 ||
           strcasecmp((const char *)service, "SIP+D2T") == 0 ||
           strcasecmp((const char *)service, "SIP+D2U") == 0;
}

static unsigned char *load(const char *path, int *len)
{
    long n = 0;
    unsigned char *buf = read_message(path, 0, &n);
    *len = (int)n;
    return buf;
}

static void addresses(const char *path, const char *target, int family)
{
    unsigned char *buf;
    int len, rc, n = MAX_RECORDS, i;
    struct hostent *host = NULL;
    struct ares_addrttl v4[MAX_RECORDS];
    struct ares_addr6ttl v6[MAX_RECORDS];
    char text[INET6_ADDRSTRLEN];

    if ((buf = load(path, &len)) == NULL)
        return;
    if (family == AF_INET)
        rc = ares_parse_a_reply(buf, len, &host, v4, &n);
    else
        rc = ares_parse_aaaa_reply(buf, len, &host, v6, &n);
    if (rc != ARES_SUCCESS) {
        printf("    %s: %s\n", family == AF_INET ? "A" : "AAAA", ares_strerror(rc));
    } else if (strcasecmp(host->h_name, target) != 0 &&
               (host->h_aliases[0] == NULL || strcasecmp(host->h_aliases[0], target) != 0)) {
        printf("    %s: answer is for %s, not %s\n", family == AF_INET ? "A" : "AAAA",
               host->h_name, target);
    } else {
        for (i = 0; i < n; i++) {
            inet_ntop(family, family == AF_INET ? (void *)&v4[i].ipaddr : (void *)&v6[i].ip6addr,
                      text, sizeof text);
            printf("    %s %s ttl %d\n", family == AF_INET ? "A" : "AAAA", text,
                   family == AF_INET ? v4[i].ttl : v6[i].ttl);
        }
        for (i = 0; host->h_aliases[i]; i++)
            printf("    alias %s\n", host->h_aliases[i]);
    }
    if (host)
        ares_free_hostent(host);
    free(buf);
}

int main(int argc, char **argv)
{
    struct ares_naptr_reply *naptr = NULL, *np;
    struct ares_srv_reply *srv = NULL, *sp;
    struct choice choices[MAX_RECORDS];
    struct server servers[MAX_RECORDS];
    unsigned char *buf;
    int len, rc, nchoices = 0, nservers = 0, i;

    if (argc < 3) {
        fprintf(stderr, "usage: %s NAPTR_REPLY SRV_REPLY [A_REPLY [AAAA_REPLY]]\n", argv[0]);
        return 2;
    }

    /* Step 1: NAPTR. */
    if ((buf = load(argv[1], &len)) == NULL)
        return 2;
    rc = ares_parse_naptr_reply(buf, len, &naptr);
    free(buf);
    if (rc != ARES_SUCCESS) {
        printf("NAPTR: %s\n", ares_strerror(rc));
        return 1;
    }
    for (np = naptr; np && nchoices < MAX_RECORDS; np = np->next) {
        if (strcasecmp((const char *)np->flags, "s") != 0 || !supported(np->service))
            continue;
        choices[nchoices].order = np->order;
        choices[nchoices].preference = np->preference;
        snprintf(choices[nchoices].service, sizeof choices[nchoices].service, "%s",
                 (const char *)np->service);
        snprintf(choices[nchoices].replacement, sizeof choices[nchoices].replacement, "%s",
                 np->replacement);
        nchoices++;
    }
    ares_free_data(naptr);
    qsort(choices, (size_t)nchoices, sizeof choices[0], by_order);
    for (i = 0; i < nchoices; i++)
        printf("NAPTR %u %u %s -> %s\n", choices[i].order, choices[i].preference,
               choices[i].service, choices[i].replacement);
    if (nchoices == 0) {
        printf("no SIP service offered\n");
        return 1;
    }

    /* Step 2: SRV of the first choice. */
    if ((buf = load(argv[2], &len)) == NULL)
        return 2;
    rc = ares_parse_srv_reply(buf, len, &srv);
    free(buf);
    if (rc != ARES_SUCCESS) {
        printf("SRV: %s\n", ares_strerror(rc));
        return 1;
    }
    for (sp = srv; sp && nservers < MAX_RECORDS; sp = sp->next) {
        servers[nservers].priority = sp->priority;
        servers[nservers].weight = sp->weight;
        servers[nservers].port = sp->port;
        snprintf(servers[nservers].target, sizeof servers[nservers].target, "%s", sp->host);
        nservers++;
    }
    ares_free_data(srv);
    qsort(servers, (size_t)nservers, sizeof servers[0], by_priority);

    /* Step 3: the addresses. */
    for (i = 0; i < nservers; i++) {
        printf("SRV %u %u %s:%u (%s)\n", servers[i].priority, servers[i].weight,
               servers[i].target, servers[i].port, choices[0].service);
        if (argc > 3)
            addresses(argv[3], servers[i].target, AF_INET);
        if (argc > 4)
            addresses(argv[4], servers[i].target, AF_INET6);
    }
    return 0;
}
