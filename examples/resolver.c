/*
 * resolver.c: print the A, AAAA, MX and SRV records of one DNS response.
 *
 *   ./resolver reply.bin        (or: ./resolver < reply.bin)
 *
 * The response is the raw message as it came off the socket (no TCP length
 * prefix).  libdnsshim parses and checks all of it before the first callback
 * runs, so a malformed reply prints nothing but its status.
 */
#include <stdio.h>
#include <arpa/inet.h>
#include <dns_shim.h>

/* Each callback gets one record; its strings live until it returns. */
static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    char text[INET_ADDRSTRLEN];
    (void)ctx;
    inet_ntop(AF_INET, r->address, text, sizeof text);
    printf("%s %u A %s\n", r->rr.owner, r->rr.ttl, text);
    return 0; /* 0: go on; anything else stops with DNS_SHIM_ERR_CALLBACK */
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    char text[INET6_ADDRSTRLEN];
    (void)ctx;
    inet_ntop(AF_INET6, r->address, text, sizeof text);
    printf("%s %u AAAA %s\n", r->rr.owner, r->rr.ttl, text);
    return 0;
}

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    (void)ctx;
    printf("%s %u MX %u %s\n", r->rr.owner, r->rr.ttl, r->preference,
           r->exchange);
    return 0;
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    (void)ctx;
    printf("%s %u SRV %u %u %u %s\n", r->rr.owner, r->rr.ttl,
           r->priority, r->weight, r->port, r->target);
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t reply[65535];
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (in == NULL) {
        perror(argv[1]);
        return 2;
    }
    size_t len = fread(reply, 1, sizeof reply, in);

    /* Register once, for every later process_dns_response() call. */
    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb; /* which release's struct this is */
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    cb.on_mx = on_mx;
    cb.on_srv = on_srv;
    dns_shim_register_callbacks(&cb);

    int32_t status = process_dns_response(reply, (int32_t)len);
    if (status != DNS_SHIM_OK) {
        printf("error %d: %s\n", status, dns_shim_strerror(status));
        return 1;
    }
    return 0;
}
