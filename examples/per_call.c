/*
 * per_call.c: callbacks for one call (dns_shim_process), a context of your
 * own, and what to say when a message is refused (dns_shim_last_error).
 *
 *   ./per_call reply.bin        (or: ./per_call < reply.bin)
 */
#include <stdio.h>
#include <dns_shim.h>

struct counts {
    unsigned header, records;
};

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    struct counts *c = ctx; /* the ctx given in the callbacks struct */
    c->header++;
    printf("id %u rcode %u question %s\n", h->id, h->rcode,
           h->qname ? h->qname : "(none)");
    return 0;
}

/* on_other gets every record without a typed callback set. */
static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    struct counts *c = ctx;
    c->records++;
    printf("%s type %u, %zu octets\n", r->rr.owner, r->rr.type,
           r->rdata.len);
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

    struct counts counts = {0, 0};
    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.ctx = &counts;
    cb.on_header = on_header;
    cb.on_other = on_other;

    int32_t status = dns_shim_process(reply, (int32_t)len, &cb);
    if (status != DNS_SHIM_OK) {
        /* The status is what the program decides on; the last error is for
         * people and logs.  No callback ran: nothing is half done. */
        printf("refused (%u callbacks ran): %s\n",
               counts.header + counts.records, dns_shim_strerror(status));
        printf("why: %s\n", dns_shim_last_error());
        return 1;
    }
    printf("%u records\n", counts.records);
    return 0;
}
