/*
 * ares_classic.c: c-ares's classic parser, unchanged source, with
 * libdnsshim_ares linked before libcares so that dnspython reads the bytes.
 *
 *   cc ares_classic.c $(pkg-config --libs dnsshim-ares) -lcares
 *   ./ares_classic reply.bin    (or: ./ares_classic < reply.bin)
 */
#include <stdio.h>
/* c-ares 1.28 and later mark the classic parsers deprecated in favour of
   ares_dns_parse (which libdnsshim_ares answers too): they are what this
   program shows, so their warning is off. */
#define CARES_NO_DEPRECATED 1
#include <ares.h>

int main(int argc, char **argv)
{
    static unsigned char reply[65535];
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (in == NULL) {
        perror(argv[1]);
        return 2;
    }
    int len = (int)fread(reply, 1, sizeof reply, in);

    struct ares_srv_reply *srv = NULL;
    int status = ares_parse_srv_reply(reply, len, &srv);
    if (status != ARES_SUCCESS) {
        /* ARES_ENODATA: no SRV record; ARES_EBADRESP: malformed. */
        printf("error: %s\n", ares_strerror(status));
        return 1;
    }
    for (struct ares_srv_reply *s = srv; s != NULL; s = s->next)
        printf("SRV %u %u %u %s\n", s->priority, s->weight, s->port,
               s->host);
    ares_free_data(srv); /* c-ares's ownership rules, as ever */
    return 0;
}
