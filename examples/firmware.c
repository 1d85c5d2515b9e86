/*
 * firmware.c: the parser with no Python on the device, from the one object
 * `python -m shim firmware DIR` writes.  Link it as written:
 *
 *   cc -I DIR/include firmware.c DIR/lib/libdnsshim_fw.o -lm -lpthread -ldl -lutil
 *   ./firmware reply.bin        (or: ./firmware < reply.bin)
 *
 * The API is the shared library's; a device usually bounds the runtime's
 * memory and starts it at boot, so the first reply pays nothing.
 */
#include <stdio.h>
#include <dns_shim.h>

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    (void)ctx;
    printf("%s A %u.%u.%u.%u\n", r->rr.owner,
           r->address[0], r->address[1], r->address[2], r->address[3]);
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
    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.on_a = on_a;
    int32_t status = dns_shim_process(reply, (int32_t)len, &cb);
    if (status != DNS_SHIM_OK) {
        printf("error: %s\n", dns_shim_strerror(status));
        return 1;
    }
    return 0;
}
