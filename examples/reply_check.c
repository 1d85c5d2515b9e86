/*
 * reply_check.c: accept a response only if it answers the query sent
 * (RFC 5452: the same ID, question name, type and class).
 *
 *   ./reply_check reply.bin ID NAME TYPE      e.g. ./reply_check r.bin 20033 example.com 35
 */
#include <stdio.h>
#include <stdlib.h>
#include <dns_shim.h>

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    (void)ctx;
    printf("accepted: %u answers, %u additional\n", h->ancount, h->arcount);
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t reply[65535];
    if (argc != 5) {
        fprintf(stderr, "usage: %s REPLY ID NAME TYPE\n", argv[0]);
        return 2;
    }
    FILE *in = fopen(argv[1], "rb");
    if (in == NULL) {
        perror(argv[1]);
        return 2;
    }
    size_t len = fread(reply, 1, sizeof reply, in);

    /* What was sent: the reply must match it before any callback runs. */
    dns_shim_query query = {0};
    query.struct_size = sizeof query;
    query.id = (uint16_t)atoi(argv[2]);
    query.qname = argv[3];
    query.qtype = (uint16_t)atoi(argv[4]);
    query.qclass = 1; /* IN */

    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.on_header = on_header;

    int32_t status =
        dns_shim_process_reply(reply, (int32_t)len, &query, &cb);
    if (status == DNS_SHIM_ERR_MISMATCH) {
        printf("not our answer: %s\n", dns_shim_last_error());
        return 1;
    }
    if (status != DNS_SHIM_OK) {
        printf("malformed: %s\n", dns_shim_strerror(status));
        return 1;
    }
    return 0;
}
