/*
 * firmware.c: the parser with no Python on the device, from the one object
 * `python -m shim firmware DIR` writes.  Link it as written:
 *
 *   cc -I DIR/include firmware.c DIR/lib/libdnsshim_fw.o -lm -lpthread -ldl -lutil
 *   ./firmware reply.bin        (or: ./firmware < reply.bin)
 *
 * It prints every record of the reply, all three sections in wire order:
 * the address of an A or AAAA record, the type and RDATA length of any
 * other (a type the object was built without, --types, is one of those),
 * then one line when there was no address.  The API is the shared
 * library's; a device usually bounds the runtime's memory and starts it at
 * boot, so the first reply pays nothing.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <dns_shim.h>

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    ++*(int *)ctx; /* the addresses found */
    printf("%s A %u.%u.%u.%u\n", r->rr.owner,
           r->address[0], r->address[1], r->address[2], r->address[3]);
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    char text[INET6_ADDRSTRLEN];
    ++*(int *)ctx;
    printf("%s AAAA %s\n", r->rr.owner, inet_ntop(AF_INET6, r->address, text, sizeof text));
    return 0;
}

/* Every other record (NAPTR, SRV, CNAME...): its type and RDATA length. */
static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    (void)ctx;
    printf("%s TYPE%u, %zu octets\n", r->rr.owner, r->rr.type, r->rdata.len);
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

    /* a parse that would take the runtime past 16 MiB: NO_MEMORY */
    dns_shim_set_memory_limit(16u << 20);
    if (dns_shim_init() != DNS_SHIM_OK) {
        printf("cannot start: %s\n", dns_shim_last_error());
        return 1;
    }
    int addresses = 0;
    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                  DNS_SHIM_SECTION_ADDITIONAL; /* 0 would be the answer only */
    cb.ctx = &addresses;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    cb.on_other = on_other;
    int32_t status = dns_shim_process(reply, (int32_t)len, &cb);
    if (status != DNS_SHIM_OK) {
        printf("error: %s\n", dns_shim_strerror(status));
        return 1;
    }
    if (addresses == 0)
        printf("no address: the reply has no A or AAAA record\n");
    return 0;
}
