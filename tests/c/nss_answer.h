/*
** nss_answer.h: one getaddrinfo (AF_UNSPEC, SOCK_STREAM) of a name and its
** addresses in order as text, "192.0.2.1 2001:db8::1": how the NSS module's
** test (nss_lookups.c) and its benchmark (tests/bench/nss_bench.c) read an
** answer, whichever module nsswitch.conf names.
*/
#ifndef NSS_ANSWER_H
#define NSS_ANSWER_H

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* getaddrinfo's status; on 0, the addresses into out (cut at size). */
static int nss_answer(const char *name, char *out, size_t size)
{
    struct addrinfo hints, *res, *ai;
    size_t at = 0;
    int rc;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    out[0] = '\0';
    rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0)
        return rc;
    for (ai = res; ai != NULL && at < size; ai = ai->ai_next) {
        char text[INET6_ADDRSTRLEN];
        const void *addr = ai->ai_family == AF_INET
            ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
            : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
        inet_ntop(ai->ai_family, addr, text, sizeof text);
        at += (size_t)snprintf(out + at, size - at, "%s%s", at ? " " : "", text);
    }
    freeaddrinfo(res);
    return 0;
}

#endif
