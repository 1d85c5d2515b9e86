/*
** dnsshim-dump: print DNS responses, parsed by libdnsshim.
**
**   dnsshim-dump [-x] [--sections answer,authority,additional] [--json] FILE...
**
**   -x          the files hold hex text (whitespace and # comments allowed)
**   -           as a FILE: standard input
**   --sections  which sections to print (default: all three)
**   --json      one JSON object per message, per line, instead of dig-like
**               text: {"file", "header", "records", "status", "error"}
**
** A small, complete example of a C program using the library: it registers
** its callbacks once, hands each message to process_dns_response, and never
** reads the message bytes itself.  Exits 1 if any message was rejected (with
** dns_shim_strerror's text on stderr), 2 on a usage error.  `python -m shim
** dump` prints the same, byte for byte, through the Python API.
*/
#include "dns_shim.h"
#include "file_util.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int json = 0;

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

static const char *section_name(uint32_t section)
{
    return section == DNS_SHIM_SECTION_ANSWER      ? "answer"
           : section == DNS_SHIM_SECTION_AUTHORITY ? "authority"
                                                   : "additional";
}

/* ---- JSON: written exactly as Python's json.dumps writes it ------------ */

/* A JSON string of bytes, each byte one code point (Latin-1), ASCII out. */
static void json_bytes(const uint8_t *data, size_t len)
{
    size_t i;
    putchar('"');
    for (i = 0; i < len; i++) {
        uint8_t c = data[i];
        switch (c) {
        case '"': fputs("\\\"", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        case '\b': fputs("\\b", stdout); break;
        case '\f': fputs("\\f", stdout); break;
        default:
            if (c < 0x20 || c > 0x7e)
                printf("\\u%04x", c);
            else
                putchar(c);
        }
    }
    putchar('"');
}

static void json_str(const char *s) { json_bytes((const uint8_t *)s, strlen(s)); }

static int json_records_open = 0, json_first_record = 1;

static void json_rr(const char *kind, const dns_shim_rr *rr)
{
    printf("%s{\"section\": \"%s\", \"index\": %" PRIu32 ", \"owner\": ",
           json_first_record ? "" : ", ", section_name(rr->section), rr->index);
    json_first_record = 0;
    json_str(rr->owner);
    printf(", \"type\": %u, \"class\": %u, \"ttl\": %" PRIu32 ", \"kind\": \"%s\"", rr->type,
           rr->rclass, rr->ttl, kind);
}

/* ---- dig-like text ------------------------------------------------------ */

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

/* ---- callbacks ------------------------------------------------------------ */

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
    if (json) {
        printf("\"header\": {\"id\": %u, \"flags\": %u, \"opcode\": %u, \"rcode\": %u, "
               "\"qdcount\": %u, \"ancount\": %u, \"nscount\": %u, \"arcount\": %u, \"qname\": ",
               h->id, h->flags, h->opcode, h->rcode, h->qdcount, h->ancount, h->nscount,
               h->arcount);
        if (h->qname)
            json_str(h->qname);
        else
            fputs("null", stdout);
        printf(", \"qtype\": %u, \"qclass\": %u, \"edns_version\": %" PRId32 ", "
               "\"edns_payload\": %u, \"edns_do\": %s, \"edns_flags\": %u}, \"records\": [",
               h->qtype, h->qclass, h->edns_version, h->edns_payload,
               h->edns_do ? "true" : "false", h->edns_flags);
        json_records_open = 1;
        return 0;
    }
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
    if (json)
        json_rr("a", &r->rr), printf(", \"address\": \"");
    else
        print_rr(&r->rr);
    printf("%u.%u.%u.%u", r->address[0], r->address[1], r->address[2], r->address[3]);
    fputs(json ? "\"}" : "\n", stdout);
    return 0;
}

static int32_t on_aaaa(void *ctx, const dns_shim_aaaa *r)
{
    char text[INET6_ADDRSTRLEN];
    (void)ctx;
    if (json)
        json_rr("aaaa", &r->rr), printf(", \"address\": \"");
    else
        print_rr(&r->rr);
    /* RFC 5952 text, as dig prints it: 2001:db8::1, ::ffff:192.0.2.1. */
    fputs(inet_ntop(AF_INET6, r->address, text, sizeof text) ? text : "?", stdout);
    fputs(json ? "\"}" : "\n", stdout);
    return 0;
}

static int32_t on_target(void *ctx, const dns_shim_target *r)
{
    (void)ctx;
    if (json) {
        json_rr(r->rr.type == 5 ? "cname" : r->rr.type == 2 ? "ns" : r->rr.type == 12 ? "ptr"
                                                                                      : "dname",
                &r->rr);
        printf(", \"target\": ");
        json_str(r->target);
        fputs("}", stdout);
        return 0;
    }
    print_rr(&r->rr);
    print_fqdn(r->target);
    printf("\n");
    return 0;
}

static int32_t on_mx(void *ctx, const dns_shim_mx *r)
{
    (void)ctx;
    if (json) {
        json_rr("mx", &r->rr);
        printf(", \"preference\": %u, \"exchange\": ", r->preference);
        json_str(r->exchange);
        fputs("}", stdout);
        return 0;
    }
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
    if (json) {
        json_rr("txt", &r->rr);
        printf(", \"strings\": [");
        for (i = 0; i < r->count; i++) {
            printf(i ? ", " : "");
            json_bytes(r->strings[i].data, r->strings[i].len);
        }
        fputs("]}", stdout);
        return 0;
    }
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
    if (json) {
        json_rr("srv", &r->rr);
        printf(", \"priority\": %u, \"weight\": %u, \"port\": %u, \"target\": ", r->priority,
               r->weight, r->port);
        json_str(r->target);
        fputs("}", stdout);
        return 0;
    }
    print_rr(&r->rr);
    printf("%u %u %u ", r->priority, r->weight, r->port);
    print_fqdn(r->target);
    printf("\n");
    return 0;
}

static int32_t on_naptr(void *ctx, const dns_shim_naptr *r)
{
    (void)ctx;
    if (json) {
        json_rr("naptr", &r->rr);
        printf(", \"order\": %u, \"preference\": %u, \"flags\": ", r->order, r->preference);
        json_bytes(r->flags.data, r->flags.len);
        printf(", \"services\": ");
        json_bytes(r->services.data, r->services.len);
        printf(", \"regexp\": ");
        json_bytes(r->regexp.data, r->regexp.len);
        printf(", \"replacement\": ");
        json_str(r->replacement);
        fputs("}", stdout);
        return 0;
    }
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
    if (json) {
        json_rr("soa", &r->rr);
        printf(", \"mname\": ");
        json_str(r->mname);
        printf(", \"rname\": ");
        json_str(r->rname);
        printf(", \"serial\": %" PRIu32 ", \"refresh\": %" PRIu32 ", \"retry\": %" PRIu32
               ", \"expire\": %" PRIu32 ", \"minimum\": %" PRIu32 "}",
               r->serial, r->refresh, r->retry, r->expire, r->minimum);
        return 0;
    }
    print_rr(&r->rr);
    print_fqdn(r->mname);
    printf(" ");
    print_fqdn(r->rname);
    printf(" %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", r->serial,
           r->refresh, r->retry, r->expire, r->minimum);
    return 0;
}

/* RFC 3597's generic form for everything else; hex in JSON. */
static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    size_t i;
    (void)ctx;
    if (json)
        json_rr("other", &r->rr), printf(", \"rdata\": \"");
    else
        print_rr(&r->rr), printf("\\# %zu%s", r->rdata.len, r->rdata.len ? " " : "");
    for (i = 0; i < r->rdata.len; i++)
        printf("%02x", r->rdata.data[i]);
    fputs(json ? "\"}" : "\n", stdout);
    return 0;
}

static int parse_sections(const char *text, uint32_t *mask)
{
    char copy[256], *word, *save = NULL;
    *mask = 0;
    snprintf(copy, sizeof copy, "%s", text);
    for (word = strtok_r(copy, ",", &save); word; word = strtok_r(NULL, ",", &save)) {
        if (strcmp(word, "answer") == 0)
            *mask |= DNS_SHIM_SECTION_ANSWER;
        else if (strcmp(word, "authority") == 0)
            *mask |= DNS_SHIM_SECTION_AUTHORITY;
        else if (strcmp(word, "additional") == 0)
            *mask |= DNS_SHIM_SECTION_ADDITIONAL;
        else
            return -1;
    }
    return *mask ? 0 : -1;
}

static int usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-x] [--sections answer,authority,additional] [--json] FILE...\n"
                    "       (\"-\" reads standard input)\n", argv0);
    return 2;
}

int main(int argc, char **argv)
{
    dns_shim_callbacks cb;
    int i, hex = 0, failed = 0, files = 0;
    uint32_t sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                        DNS_SHIM_SECTION_ADDITIONAL;

    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "-x") == 0)
            hex = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--sections") == 0 && i + 1 < argc) {
            if (parse_sections(argv[++i], &sections) != 0)
                return usage(argv[0]);
        } else if (strncmp(argv[i], "--sections=", 11) == 0) {
            if (parse_sections(argv[i] + 11, &sections) != 0)
                return usage(argv[0]);
        } else
            return usage(argv[0]);
    }
    if (i >= argc)
        return usage(argv[0]);
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = sections;
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
    for (; i < argc; i++, files++) {
        long len = 0;
        unsigned char *msg = read_message(argv[i], hex, &len);
        int32_t rc;
        if (msg == NULL) {
            failed = 1;
            continue;
        }
        if (json) {
            printf("{\"file\": ");
            json_str(argv[i]);
            printf(", ");
            json_records_open = 0;
            json_first_record = 1;
        } else {
            printf(";; %s, %ld bytes\n", argv[i], len);
        }
        rc = process_dns_response(msg, len > 65535 ? -1 : (int32_t)len);
        free(msg);
        if (json) {
            if (!json_records_open)
                printf("\"header\": null, \"records\": [");
            printf("], \"status\": %" PRId32 ", \"error\": ", rc);
            if (rc != DNS_SHIM_OK)
                json_str(dns_shim_strerror(rc));
            else
                fputs("null", stdout);
            printf("}\n");
        } else {
            if (rc != DNS_SHIM_OK)
                printf(";; rejected: %s (%" PRId32 ")\n", dns_shim_strerror(rc), rc);
            printf("\n");
        }
        if (rc != DNS_SHIM_OK) {
            fprintf(stderr, "%s: %s (%" PRId32 ")\n", argv[i], dns_shim_strerror(rc), rc);
            failed = 1;
        }
    }
    dns_shim_register_callbacks(NULL);
    return failed;
}
