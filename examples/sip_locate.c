/*
 * sip_locate.c: an IMS/SIP client finding its P-CSCF (RFC 3263) in one
 * reply: the NAPTR records of the domain name SRV records, whose targets'
 * AAAA records the server sent in the additional section.
 *
 *   ./sip_locate reply.bin      (or: ./sip_locate < reply.bin)
 *
 * The callbacks copy what they keep (the library's strings live only until
 * each callback returns); the walk runs after the whole reply was accepted.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <dns_shim.h>

#define MAX 32
struct found {
    struct { unsigned order; char service[32], next[256]; } naptr[MAX];
    struct {
        unsigned priority, port;
        char owner[256], target[256];
    } srv[MAX];
    struct { char owner[256]; uint8_t address[16]; } aaaa[MAX];
    int n_naptr, n_srv, n_aaaa;
};

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    struct found *f = ctx;
    if (f->n_naptr == MAX || r->flags.len != 1 || r->flags.data[0] != 's')
        return 0; /* only "s" records lead to SRV */
    f->naptr[f->n_naptr].order = r->order;
    snprintf(f->naptr[f->n_naptr].service, 32, "%s",
             (const char *)r->services.data);
    snprintf(f->naptr[f->n_naptr].next, 256, "%s", r->replacement);
    f->n_naptr++;
    return 0;
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    struct found *f = ctx;
    if (f->n_srv < MAX) {
        f->srv[f->n_srv].priority = r->priority;
        f->srv[f->n_srv].port = r->port;
        snprintf(f->srv[f->n_srv].owner, 256, "%s", r->rr.owner);
        snprintf(f->srv[f->n_srv].target, 256, "%s", r->target);
        f->n_srv++;
    }
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    struct found *f = ctx;
    if (f->n_aaaa < MAX) {
        snprintf(f->aaaa[f->n_aaaa].owner, 256, "%s", r->rr.owner);
        memcpy(f->aaaa[f->n_aaaa].address, r->address, 16);
        f->n_aaaa++;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static uint8_t reply[65535];
    static struct found f;
    FILE *in = argc > 1 ? fopen(argv[1], "rb") : stdin;
    if (in == NULL) {
        perror(argv[1]);
        return 2;
    }
    size_t len = fread(reply, 1, sizeof reply, in);

    dns_shim_callbacks cb = {0};
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_ADDITIONAL;
    cb.ctx = &f;
    cb.on_naptr = on_naptr;
    cb.on_srv = on_srv;
    cb.on_aaaa = on_aaaa;
    int32_t status = dns_shim_process(reply, (int32_t)len, &cb);
    if (status != DNS_SHIM_OK) {
        printf("error: %s\n", dns_shim_strerror(status));
        return 1;
    }

    /* NAPTR -> SRV -> AAAA, in the order the records came (a real client
     * sorts by NAPTR order and SRV priority first). */
    for (int i = 0; i < f.n_naptr; i++)
        for (int j = 0; j < f.n_srv; j++) {
            if (strcasecmp(f.srv[j].owner, f.naptr[i].next) != 0)
                continue;
            for (int k = 0; k < f.n_aaaa; k++) {
                char text[INET6_ADDRSTRLEN];
                if (strcasecmp(f.aaaa[k].owner, f.srv[j].target) != 0)
                    continue;
                inet_ntop(AF_INET6, f.aaaa[k].address, text, sizeof text);
                printf("%s order %u priority %u: [%s]:%u\n",
                       f.naptr[i].service, f.naptr[i].order,
                       f.srv[j].priority, text, f.srv[j].port);
            }
        }
    return 0;
}
