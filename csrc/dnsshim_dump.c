/*
** dnsshim_dump: print DNS responses dig-like, parsed by libdnsshim.
**
**   dnsshim_dump [-x] FILE...     (-x: the files hold hex text; "-" is stdin)
**
** A small, complete example of a C program using the library: it registers
** its callbacks once, hands each message to process_dns_response, and never
** reads the message bytes itself.  Exits 1 if any message was rejected,
** printing dns_shim_strerror's text.
*/
#include "dns_shim.h"
#include "file_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *type_name(uint16_t type, char *buf, size_t size)
{
    static const struct { uint16_t type; const char *name; } names[] = {
        {1, "A"}, {2, "NS"}, {5, "CNAME"}, {6, "SOA"}, {12, "PTR"}, {13, "HINFO"},
        {15, "MX"}, {16, "TXT"}, {28, "AAAA"}, {29, "LOC"}, {33, "SRV"}, {35, "NAPTR"},
        {39, "DNAME"}, {41, "OPT"}, {43, "DS"}, {46, "RRSIG"}, {47, "NSEC"},
        {48, "DNSKEY"}, {50, "NSEC3"}, {52, "TLSA"}, {64, "SVCB"}, {65, "HTTPS"},
        {99, "SPF"}, {249, "TKEY"}, {250, "TSIG"}, {255, "ANY"}, {256, "URI"}, {257, "CAA"},
    };
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].type == type)
            return names[i].name;
    snprintf(buf, size, "TYPE%u", type);
    return buf;
}

static const char *class_name(uint16_t rclass, char *buf, size_t size)
{
    switch (rclass) {
    case 1: return "IN";
    case 3: return "CH";
    case 4: return "HS";
    case 254: return "NONE";
    case 255: return "ANY";
    }
    snprintf(buf, size, "CLASS%u", rclass);
    return buf;
}

static const char *rcode_name(uint16_t rcode)
{
    static const char *names[] = {"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
                                  "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH",
                                  "NOTZONE"};
    if (rcode < sizeof names / sizeof names[0])
        return names[rcode];
    if (rcode == 16)
        return "BADVERS";
    if (rcode == 23)
        return "BADCOOKIE";
    return "RCODE?";
}

/* A name as dig shows it: with its final dot. */
static void print_fqdn(const char *name)
{
    printf("%s%s", name, strcmp(name, ".") == 0 ? "" : ".");
}

/* A <character-string> in zone-file form: quoted, with \" \\ and \DDD. */
static void print_string(const uint8_t *data, size_t len)
{
    size_t i;
    putchar('"');
    for (i = 0; i < len; i++) {
        if (data[i] == '"' || data[i] == '\\')
            printf("\\%c", data[i]);
        else if (data[i] < 0x20 || data[i] > 0x7e)
            printf("\\%03u", data[i]);
        else
            putchar(data[i]);
    }
    putchar('"');
}

static uint32_t current_section = 0;

/* The record's owner, TTL, class and type, after a section title when a
** new section starts. */
static void print_rr(const dns_shim_rr *rr)
{
    char tbuf[16], cbuf[16];
    if (rr->section != current_section) {
        current_section = rr->section;
        printf("\n;; %s SECTION:\n", rr->section == DNS_SHIM_SECTION_ANSWER      ? "ANSWER"
                                     : rr->section == DNS_SHIM_SECTION_AUTHORITY ? "AUTHORITY"
                                                                                 : "ADDITIONAL");
    }
    print_fqdn(rr->owner);
    printf("\t%" PRIu32 "\t%s\t%s\t", rr->ttl, class_name(rr->rclass, cbuf, sizeof cbuf),
           type_name(rr->type, tbuf, sizeof tbuf));
}

static int32_t on_header(void *ctx, const dns_shim_header *h)
{
    static const char *opcodes[] = {"QUERY", "IQUERY", "STATUS", "OPCODE3", "NOTIFY", "UPDATE"};
    static const struct { uint16_t bit; const char *name; } flags[] = {
        {0x8000, "qr"}, {0x0400, "aa"}, {0x0200, "tc"}, {0x0100, "rd"},
        {0x0080, "ra"}, {0x0020, "ad"}, {0x0010, "cd"},
    };
    char tbuf[16], cbuf[16];
    size_t i;
    (void)ctx;
    current_section = 0;
    printf(";; ->>HEADER<<- opcode: %s, status: %s, id: %u\n;; flags:",
           h->opcode < 6 ? opcodes[h->opcode] : "OPCODE?", rcode_name(h->rcode), h->id);
    for (i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (h->flags & flags[i].bit)
            printf(" %s", flags[i].name);
    printf("; QUERY: %u, ANSWER: %u, AUTHORITY: %u, ADDITIONAL: %u\n", h->qdcount, h->ancount,
           h->nscount, h->arcount);
    if (h->edns_version >= 0)
        printf("\n;; OPT PSEUDOSECTION:\n; EDNS: version: %" PRId32 ", flags:%s; udp: %u\n",
               h->edns_version, h->edns_do ? " do" : "", h->edns_payload);
    if (h->qname != NULL) {
        printf("\n;; QUESTION SECTION:\n;");
        print_fqdn(h->qname);
        printf("\t\t%s\t%s\n", class_name(h->qclass, cbuf, sizeof cbuf),
               type_name(h->qtype, tbuf, sizeof tbuf));
    }
    return 0;
}

static int32_t on_a(void *ctx, const dns_shim_a *r)
{
    (void)ctx;
    print_rr(&r->rr);
    printf("%u.%u.%u.%u\n", r->address[0], r->address[1], r->address[2], r->address[3]);
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    int i;
    (void)ctx;
    print_rr(&r->rr);
    /* Full form, no zero compression: plain and unambiguous. */
    for (i = 0; i < 16; i += 2)
        printf("%x%s", (r->address[i] << 8) | r->address[i + 1], i < 14 ? ":" : "\n");
    return 0;
}

static int32_t on_target(void *ctx, const dns_shim_target *r)
{
    (void)ctx;
    print_rr(&r->rr);
    print_fqdn(r->target);
    printf("\n");
    return 0;
}

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    (void)ctx;
    print_rr(&r->rr);
    printf("%u ", r->preference);
    print_fqdn(r->exchange);
    printf("\n");
    return 0;
}

static int32_t on_txt(void *ctx, const dns_shim_txt *r)
{
    size_t i;
    (void)ctx;
    print_rr(&r->rr);
    for (i = 0; i < r->count; i++) {
        printf(i ? " " : "");
        print_string(r->strings[i].data, r->strings[i].len);
    }
    printf("\n");
    return 0;
}

static int32_t on_srv(void *ctx, const dns_shim_srv *r)
{
    (void)ctx;
    print_rr(&r->rr);
    printf("%u %u %u ", r->priority, r->weight, r->port);
    print_fqdn(r->target);
    printf("\n");
    return 0;
}

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    (void)ctx;
    print_rr(&r->rr);
    printf("%u %u ", r->order, r->preference);
    print_string(r->flags.data, r->flags.len);
    printf(" ");
    print_string(r->services.data, r->services.len);
    printf(" ");
    print_string(r->regexp.data, r->regexp.len);
    printf(" ");
    print_fqdn(r->replacement);
    printf("\n");
    return 0;
}

static int32_t on_soa(void *ctx, const dns_shim_soa *r)
{
    (void)ctx;
    print_rr(&r->rr);
    print_fqdn(r->mname);
    printf(" ");
    print_fqdn(r->rname);
    printf(" %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", r->serial,
           r->refresh, r->retry, r->expire, r->minimum);
    return 0;
}

/* RFC 3597's generic form for everything else. */
static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    size_t i;
    (void)ctx;
    print_rr(&r->rr);
    printf("\\# %zu%s", r->rdata.len, r->rdata.len ? " " : "");
    for (i = 0; i < r->rdata.len; i++)
        printf("%02x", r->rdata.data[i]);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    dns_shim_callbacks cb;
    int i = 1, hex = 0, failed = 0;

    if (i < argc && strcmp(argv[i], "-x") == 0) {
        hex = 1;
        i++;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: %s [-x] FILE...   (\"-\" reads stdin)\n", argv[0]);
        return 2;
    }
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY | DNS_SHIM_SECTION_ADDITIONAL;
    cb.on_header = on_header;
    cb.on_a = on_a;
    cb.on_aaaa = on_aaaa;
    cb.on_cname = cb.on_ns = cb.on_ptr = cb.on_dname = on_target;
    cb.on_mx = on_mx;
    cb.on_txt = on_txt;
    cb.on_srv = on_srv;
    cb.on_naptr = on_naptr;
    cb.on_soa = on_soa;
    cb.on_other = on_other;
    if (dns_shim_register_callbacks(&cb) != DNS_SHIM_OK) {
        fprintf(stderr, "dns_shim_register_callbacks failed\n");
        return 1;
    }
    for (; i < argc; i++) {
        long len = 0;
        unsigned char *msg = read_message(argv[i], hex, &len);
        int32_t rc;
        if (msg == NULL) {
            failed = 1;
            continue;
        }
        printf(";; %s, %ld bytes\n", argv[i], len);
        rc = process_dns_response(msg, len > 65535 ? -1 : (int32_t)len);
        free(msg);
        if (rc != DNS_SHIM_OK) {
            printf(";; rejected: %s (%" PRId32 ")\n", dns_shim_strerror(rc), rc);
            fprintf(stderr, "%s: %s (%" PRId32 ")\n", argv[i], dns_shim_strerror(rc), rc);
            failed = 1;
        }
        printf("\n");
    }
    dns_shim_register_callbacks(NULL);
    return failed;
}
