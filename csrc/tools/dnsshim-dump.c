/*
** dnsshim-dump: print DNS responses, parsed by libdnsshim.
**
**   dnsshim-dump [-x] [--sections answer,authority,additional] [--json]
**                [--expect-id N --expect-name NAME [--expect-type T]
**                 [--expect-class C] [--match-case] [--expect-cookie HEX16]] FILE...
**   dnsshim-dump --check
**
**   -x          the files hold hex text (whitespace and # comments allowed)
**   -           as a FILE: standard input
**   --sections  which sections to print (default: all three)
**   --json      one JSON object per message, per line, instead of dig-like
**               text: {"file", "header", "options", "records", "status",
**               "error"}
**   --expect-*  each message must answer this query (dns_shim_process_reply):
**               its ID and name (both required), type and class (a number,
**               a mnemonic or TYPEnnn/CLASSnnn; default A and IN),
**               --match-case (DNS 0x20), the client cookie sent
**   --check     start the runtime as any program does and say what it runs
**               on, whether parallelism is available (the library's worker
**               image) and whether a sample response parses
**
** EDNS options are printed in the OPT PSEUDOSECTION as dig prints them:
** "; EDE: 18 (Prohibited): (text)", "; COOKIE: <client><server>",
** "; CLIENT-SUBNET: 192.0.2.0/24/0", "; PAD: (N bytes)", "; NSID: <hex>
** ("text")", "; OPT=N: <hex> ("text")".  dig adds " (good)" to COOKIE after
** comparing it with the cookie it sent; this tool knows that cookie only from
** --expect-cookie: a response printed then has echoed it (else it is
** rejected) and gets " (good)"; without it no verdict is printed.
**
** A small, complete example of a C program using the library: it registers
** its callbacks once, hands each message to process_dns_response, and never
** reads the message bytes itself.  A rejected message gets a ";; rejected:"
** line (in JSON, "error" and "detail"), and the same reason on stderr unless
** stderr is where stdout goes (a terminal, 2>&1): each reason is shown once.
**
** Exit status, as grep's and diff's: 0 when every message parsed; 1 when a
** message was rejected, or --check found that the runtime does not work; 2
** on a usage error (one line naming it, then the usage, on stderr) or a
** FILE that cannot be read (or, with -x, is no hex text), whatever the
** other files gave.  `python -m shim dump` (shim/dump.py, the dnsshim-dump
** command where the package holds no C program) prints the same, byte for
** byte, through the Python API, usage errors and exit statuses included.
*/
#define _GNU_SOURCE 1 /* dladdr */
#include "dns_shim.h"
#include "dns_shim_kinds.h" /* the table of kinds: written by the build */
#include "tool_util.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* The program's name in its usage and messages, whatever path ran it. */
#define PROG "dnsshim-dump"

static int json = 0;
static int cookie_checked = 0;

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

/* One code point below 256 inside a JSON string, escaped as json.dumps does. */
static void json_char(uint8_t c)
{
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

/* A JSON string of bytes, each byte one code point (Latin-1), ASCII out. */
static void json_bytes(const uint8_t *data, size_t len)
{
    size_t i;
    putchar('"');
    for (i = 0; i < len; i++)
        json_char(data[i]);
    putchar('"');
}

static void json_str(const char *s) { json_bytes((const uint8_t *)s, strlen(s)); }

/* UTF-8 text (the library has checked it) as a JSON string, as Python's
** json.dumps writes it: ASCII out, \uXXXX for every other code point,
** surrogate pairs above U+FFFF. */
static void json_utf8(const uint8_t *s, size_t len)
{
    size_t i = 0;
    putchar('"');
    while (i < len) {
        uint32_t c = s[i];
        size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4, k;
        if (c < 0x80) {
            json_char((uint8_t)c);
            i++;
            continue;
        }
        c &= n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07;
        for (k = 1; k < n && i + k < len; k++)
            c = (c << 6) | (s[i + k] & 0x3F);
        i += n;
        if (c < 0x10000)
            printf("\\u%04x", (unsigned)c);
        else
            printf("\\u%04x\\u%04x", (unsigned)(0xD800 + ((c - 0x10000) >> 10)),
                   (unsigned)(0xDC00 + ((c - 0x10000) & 0x3FF)));
    }
    putchar('"');
}

/* The JSON object is written as the callbacks come: "header" (on_header),
** "options" (on_edns_option), then "records"; json_records() closes the
** options' list and opens the records' once.  json_state: 0 before the
** header, 1 in the options, 2 in the records. */
static int json_state = 0, json_first_record = 1, json_first_option = 1;

static void json_records(void)
{
    if (json_state == 0)
        printf("\"header\": null, \"options\": [");
    if (json_state != 2)
        printf("], \"records\": [");
    json_state = 2;
}

static void json_rr(const char *kind, const dns_shim_rr *rr)
{
    json_records();
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

/* The question section, printed after the OPT pseudo-section and its
** options: on_header keeps it here until the first record or the end. */
static char pending_question[1400];

static void flush_question(void)
{
    fputs(pending_question, stdout);
    pending_question[0] = '\0';
}

/* The record's owner, TTL, class and type, after a section title when a
** new section starts. */
static void print_rr(const dns_shim_rr *rr)
{
    char tbuf[16], cbuf[16];
    flush_question();
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
               "\"edns_payload\": %u, \"edns_do\": %s, \"edns_flags\": %u}, \"options\": [",
               h->qtype, h->qclass, h->edns_version, h->edns_payload,
               h->edns_do ? "true" : "false", h->edns_flags);
        json_state = 1;
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
    pending_question[0] = '\0';
    if (h->qname != NULL)
        snprintf(pending_question, sizeof pending_question, "\n;; QUESTION SECTION:\n;%s%s\t\t%s\t%s\n",
                 h->qname, strcmp(h->qname, ".") == 0 ? "" : ".",
                 class_name(h->qclass, cbuf, sizeof cbuf), type_name(h->qtype, tbuf, sizeof tbuf));
    return 0;
}

/* RFC 5952 text of an IPv6 address, as dig prints it: inet_ntop's, e.g.
** 2001:db8::1, ::ffff:192.0.2.1 (a dotted tail for IPv4-mapped and
** IPv4-compatible addresses). */
static void print_ipv6(const uint8_t a[16])
{
    char text[INET6_ADDRSTRLEN];
    fputs(inet_ntop(AF_INET6, a, text, sizeof text) ? text : "?", stdout);
}

static void print_ecs_address(const dns_shim_edns_option *o)
{
    uint8_t a[16] = {0};
    memcpy(a, o->ecs_address.data, o->ecs_address.len <= 16 ? o->ecs_address.len : 16);
    if (o->ecs_family == 1)
        printf("%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    else
        print_ipv6(a);
}

static void print_hex(dns_shim_bytes b)
{
    print_hex_digits(b.data, b.len);
}

/* RFC 8914's INFO-CODEs (the IANA registry), as dig names them. */
static const char *ede_name(int32_t code)
{
    static const char *names[] = {
        "Other", "Unsupported DNSKEY Algorithm", "Unsupported DS Digest Type", "Stale Answer",
        "Forged Answer", "DNSSEC Indeterminate", "DNSSEC Bogus", "Signature Expired",
        "Signature Not Yet Valid", "DNSKEY Missing", "RRSIGs Missing", "No Zone Key Bit Set",
        "NSEC Missing", "Cached Error", "Not Ready", "Blocked", "Censored", "Filtered",
        "Prohibited", "Stale NXDOMAIN Answer", "Not Authoritative", "Not Supported",
        "No Reachable Authority", "Network Error", "Invalid Data",
        "Signature Expired before Valid", "Too Early", "Unsupported NSEC3 Iterations Value",
        "Unable to conform to policy", "Synthesized", "Invalid Query Type",
    };
    return code >= 0 && (size_t)code < sizeof names / sizeof names[0] ? names[code] : NULL;
}

static int32_t on_edns_option(void *ctx, const dns_shim_edns_option *o)
{
    size_t i;
    (void)ctx;
    if (json) {
        printf("%s{\"code\": %u, \"data\": \"", json_first_option ? "" : ", ", o->code);
        json_first_option = 0;
        print_hex(o->data);
        printf("\"");
        if (o->code == 15) {
            printf(", \"kind\": \"ede\", \"info_code\": %" PRId32 ", \"text\": ", o->ede_info_code);
            json_utf8(o->ede_text.data, o->ede_text.len);
        } else if (o->code == 10) {
            printf(", \"kind\": \"cookie\", \"client\": \"");
            print_hex(o->cookie_client);
            printf("\", \"server\": \"");
            print_hex(o->cookie_server);
            printf("\"");
        } else if (o->code == 8) {
            printf(", \"kind\": \"ecs\", \"family\": %u, \"source_prefix\": %u, "
                   "\"scope_prefix\": %u, \"address\": \"", o->ecs_family, o->ecs_source_prefix,
                   o->ecs_scope_prefix);
            print_ecs_address(o);
            printf("\"");
        } else {
            printf(", \"kind\": \"other\"");
        }
        printf("}");
        return 0;
    }
    if (o->code == 15) {
        const char *name = ede_name(o->ede_info_code);
        printf("; EDE: %" PRId32, o->ede_info_code);
        if (name)
            printf(" (%s)", name);
        if (o->ede_text.len) {
            printf(": (");
            for (i = 0; i < o->ede_text.len; i++) {
                uint8_t c = o->ede_text.data[i];
                if (c == '"' || c == '\\')
                    printf("\\%c", c);
                else if (c < 0x20 || c > 0x7e)
                    printf("\\%03u", c);
                else
                    putchar(c);
            }
            printf(")");
        }
    } else if (o->code == 10) {
        printf("; COOKIE: ");
        print_hex(o->cookie_client);
        print_hex(o->cookie_server);
        printf("%s", cookie_checked ? " (good)" : "");
    } else if (o->code == 8) {
        printf("; CLIENT-SUBNET: ");
        print_ecs_address(o);
        printf("/%u/%u", o->ecs_source_prefix, o->ecs_scope_prefix);
    } else if (o->code == 12) {
        printf("; PAD: (%zu byte%s)", o->data.len, o->data.len == 1 ? "" : "s");
    } else {
        if (o->code == 3)
            printf("; NSID");
        else
            printf("; OPT=%u", o->code);
        if (o->data.len) {
            printf(": ");
            print_hex(o->data);
            printf(" (\"");
            for (i = 0; i < o->data.len; i++)
                putchar(o->data.data[i] >= 0x20 && o->data.data[i] <= 0x7e ? o->data.data[i] : '.');
            printf("\")");
        }
    }
    printf("\n");
    return 0;
}

/* The typed records: one callback per row of the table of kinds
** (shim/kinds.py, which the build writes as dns_shim_kinds.h), each printing
** its struct's fields in order, as the row's styles say: separated by spaces
** in text, as "member": value in JSON. */
enum field_style { STYLE_IPV4, STYLE_IPV6, STYLE_NAME, STYLE_U16, STYLE_U32, STYLE_BYTES,
                   STYLE_STRINGS };

struct field {
    const char *name;
    size_t offset;
    enum field_style style;
    size_t count_offset; /* STYLE_STRINGS: where its count is */
};

#define FIELD_COUNT_IPV4(type) 0
#define FIELD_COUNT_IPV6(type) 0
#define FIELD_COUNT_NAME(type) 0
#define FIELD_COUNT_U16(type) 0
#define FIELD_COUNT_U32(type) 0
#define FIELD_COUNT_BYTES(type) 0
#define FIELD_COUNT_STRINGS(type) offsetof(type, count)
#define FIELD(type, member, style) \
    {#member, offsetof(type, member), STYLE_##style, FIELD_COUNT_##style(type)},

static void print_field(const uint8_t *record, const struct field *f)
{
    const void *p = record + f->offset;
    size_t i, count;
    const dns_shim_bytes *strings;
    switch (f->style) {
    case STYLE_IPV4: {
        const uint8_t *a = p;
        printf(json ? "\"%u.%u.%u.%u\"" : "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
        break;
    }
    case STYLE_IPV6:
        fputs(json ? "\"" : "", stdout);
        print_ipv6(p);
        fputs(json ? "\"" : "", stdout);
        break;
    case STYLE_NAME:
        if (json)
            json_str(*(const char *const *)p);
        else
            print_fqdn(*(const char *const *)p);
        break;
    case STYLE_U16:
        printf("%u", (unsigned)*(const uint16_t *)p);
        break;
    case STYLE_U32:
        printf("%" PRIu32, *(const uint32_t *)p);
        break;
    case STYLE_BYTES: {
        const dns_shim_bytes *b = p;
        if (json)
            json_bytes(b->data, b->len);
        else
            print_string(b->data, b->len);
        break;
    }
    case STYLE_STRINGS:
        count = *(const size_t *)(record + f->count_offset);
        strings = *(const dns_shim_bytes *const *)p;
        fputs(json ? "[" : "", stdout);
        for (i = 0; i < count; i++) {
            fputs(i == 0 ? "" : json ? ", " : " ", stdout);
            if (json)
                json_bytes(strings[i].data, strings[i].len);
            else
                print_string(strings[i].data, strings[i].len);
        }
        fputs(json ? "]" : "", stdout);
        break;
    }
}

static int32_t print_record(const char *kind, const dns_shim_rr *rr, const void *record,
                            const struct field *fields, size_t n)
{
    size_t i;
    if (json)
        json_rr(kind, rr);
    else
        print_rr(rr);
    for (i = 0; i < n; i++) {
        if (json)
            printf(", \"%s\": ", fields[i].name);
        else if (i > 0)
            putchar(' ');
        print_field(record, &fields[i]);
    }
    fputs(json ? "}" : "\n", stdout);
    return 0;
}

#define KIND_CALLBACK(rdtype, member, type, kind)                                  \
    static const struct field fields_##member[] = {DNS_SHIM__KIND_FIELDS_##member(FIELD)}; \
    static int32_t dump_##member(void *ctx, const type *r)                         \
    {                                                                              \
        (void)ctx;                                                                 \
        return print_record(kind, &r->rr, r, fields_##member,                      \
                            sizeof fields_##member / sizeof fields_##member[0]);   \
    }
DNS_SHIM__KINDS(KIND_CALLBACK)
#undef KIND_CALLBACK

/* RFC 3597's generic form for everything else; hex in JSON. */
static int32_t on_other(void *ctx, const dns_shim_raw *r)
{
    (void)ctx;
    if (json)
        json_rr("other", &r->rr), printf(", \"rdata\": \"");
    else
        print_rr(&r->rr), printf("\\# %zu%s", r->rdata.len, r->rdata.len ? " " : "");
    print_hex(r->rdata);
    fputs(json ? "\"}" : "\n", stdout);
    return 0;
}

/* --sections' list: words separated by commas (empty ones ignored), each
** answer, authority or additional, at least one.  0, or -1. */
static int parse_sections(const char *text, uint32_t *mask)
{
    *mask = 0;
    while (*text) {
        size_t n = strcspn(text, ",");
        if (n == 6 && strncmp(text, "answer", n) == 0)
            *mask |= DNS_SHIM_SECTION_ANSWER;
        else if (n == 9 && strncmp(text, "authority", n) == 0)
            *mask |= DNS_SHIM_SECTION_AUTHORITY;
        else if (n == 10 && strncmp(text, "additional", n) == 0)
            *mask |= DNS_SHIM_SECTION_ADDITIONAL;
        else if (n != 0)
            return -1;
        text += n + (text[n] == ',');
    }
    return *mask ? 0 : -1;
}

static void print_usage(FILE *out)
{
    fputs("usage: " PROG " [-x] [--sections answer,authority,additional] [--json]\n"
          "       [--expect-id N --expect-name NAME [--expect-type T] [--expect-class C]\n"
          "        [--match-case] [--expect-cookie HEX16]] FILE...\n"
          "       " PROG " --check\n"
          "       (\"-\" reads standard input)\n", out);
}

/* A usage error: one line naming what is wrong, then the usage, on stderr;
** the exit status, 2. */
static int usage(const char *format, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, format);
    vfprintf(stderr, format, ap);
    va_end(ap);
    fputc('\n', stderr);
    print_usage(stderr);
    return 2;
}

static int help(void)
{
    print_usage(stdout);
    printf("\nPrint DNS responses as libdnsshim parses them: dig-like text, or one JSON\n"
           "object per message with --json.\n\n"
           "  -x                  the files hold hex text (whitespace and # comments allowed)\n"
           "  --sections LIST     which sections to print (default: all three)\n"
           "  --json              one JSON object per message, per line\n"
           "  --expect-id N       each message must answer the query with this ID...\n"
           "  --expect-name NAME  ...and this name (both required with any --expect-*)\n"
           "  --expect-type T     its type: a number, a mnemonic or TYPEnnn (default A)\n"
           "  --expect-class C    its class (default IN)\n"
           "  --match-case        compare the name octet for octet (DNS 0x20)\n"
           "  --expect-cookie HEX the 8-octet client cookie sent, as 16 hex digits\n"
           "  --check             start the runtime, say what it runs on, whether\n"
           "                      parallelism is available, and parse a sample\n"
           "  --help              this text\n\n"
           "A rejected message's reason is on stdout, and on stderr unless stderr is\n"
           "where stdout goes (a terminal, 2>&1).\n\n"
           "Exit status: 0 when every message parsed; 1 when a message was rejected, or\n"
           "--check found that the runtime does not work; 2 on a usage error or a FILE\n"
           "that cannot be read (or, with -x, is no hex text), whatever the other files\n"
           "gave.\n");
    return 0;
}

/* The detail of the last failure, without the status's name it starts
** with (dns_shim_last_error), or "". */
static const char *reason(void)
{
    const char *text = dns_shim_last_error();
    size_t n = strcspn(text, ": ");
    if (strncmp(text, "DNS_SHIM_", 9) != 0)
        return text;
    text += n;
    while (*text == ':' || *text == ' ')
        text++;
    return text;
}

static int32_t check_a(void *ctx, const dns_shim_a *r)
{
    static const uint8_t want[4] = {192, 0, 2, 1};
    (void)ctx;
    return strcmp(r->rr.owner, "www.example.com") == 0 && memcmp(r->address, want, 4) == 0
               ? 0 : 1;
}

/* Whether --check's runtime started in this process (its "runtime:" line
** logged), not in a parse service's. */
static int runtime_here = 0;

/* Logs every message, each level named, to stdout (--check). */
static void print_log(void *ctx, int32_t level, const char *message)
{
    static const char *const names[] = {"", "", "", "error", "warning", "", "info", "debug"};
    (void)ctx;
    if (strncmp(message, "runtime: ", 9) == 0)
        runtime_here = 1;
    printf("%s: %s\n", level >= 0 && level < 8 && names[level][0] ? names[level] : "log",
           message);
}

/* Where the library looks for the worker image, relative to its own folder
** (links resolved): the library's DNS_SHIM_WORKER_DIR (shim/layout.py's
** Form.worker_from_lib), given to this program by a build that knows the
** install form; "" (beside it) by default. */
#ifndef DNS_SHIM_WORKER_DIR
#  define DNS_SHIM_WORKER_DIR ""
#endif

/* --check's parallelism line: whether the library takes parallelism 2
** (dns_shim_set_parallelism), then back to 1, the default, before any
** call could start an interpreter of the pool.  "parallelism: available
** (worker image PATH)", PATH where the library looks for the image (when
** this program cannot find it there: "parallelism: available"), or
** "parallelism: unavailable: REASON", the library's reason
** (dns_shim_last_error, its status's name left out).  Either way a working
** installation: a library without the image runs one interpreter. */
static void check_parallelism(void)
{
    Dl_info info;
    struct stat st;
    char *real = NULL, image[4096];
    const char *slash = NULL;
    int32_t rc = dns_shim_set_parallelism(2);
    int found = 0;
    if (rc != DNS_SHIM_OK) {
        printf("parallelism: unavailable: %s\n", reason()[0] ? reason() : dns_shim_strerror(rc));
        return;
    }
    dns_shim_set_parallelism(1);
    if (dladdr((void *)&dns_shim_set_parallelism, &info) != 0 && info.dli_fname != NULL &&
        (real = realpath(info.dli_fname, NULL)) != NULL && (slash = strrchr(real, '/')) != NULL)
        found = snprintf(image, sizeof image, "%.*s/%s%slibdnsshim_worker.so",
                         (int)(slash - real), real, DNS_SHIM_WORKER_DIR,
                         DNS_SHIM_WORKER_DIR[0] ? "/" : "") < (int)sizeof image &&
                stat(image, &st) == 0 && S_ISREG(st.st_mode);
    free(real);
    if (found)
        printf("parallelism: available (worker image %s)\n", image);
    else
        printf("parallelism: available\n");
}

/* --check: the runtime, started as any program starts it; what it runs on
** (the library's info line); whether parallelism is available (informative:
** not a failure); a parse of a small response.  0 when it works. */
static int check(void)
{
    /* A response with one A record: www.example.com A 192.0.2.1. */
    static const uint8_t sample[] = {
        0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 3, 'w', 'w', 'w', 7, 'e', 'x', 'a',
        'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0,
        0x0e, 0x10, 0, 4, 192, 0, 2, 1};
    Dl_info info;
    int32_t rc;
    dns_shim_callbacks cb;
    char folder[4096], real[4096];
    const char *name;
    if (dladdr((void *)&dns_shim_version, &info) == 0 || info.dli_fname == NULL)
        info.dli_fname = "(linked in)";
    /* The folder without the run path's bin/../lib: its real path; the
    ** file's own name as the loader found it (the SONAME's link). */
    name = strrchr(info.dli_fname, '/');
    if (name != NULL && (size_t)(name - info.dli_fname) < sizeof folder) {
        memcpy(folder, info.dli_fname, (size_t)(name - info.dli_fname));
        folder[name - info.dli_fname] = '\0';
    }
    if (name != NULL && (size_t)(name - info.dli_fname) < sizeof folder &&
        realpath(folder[0] ? folder : "/", real) != NULL)
        printf("library: %s%s, %s\n", strcmp(real, "/") == 0 ? "" : real, name,
               dns_shim_version());
    else
        printf("library: %s, %s\n", info.dli_fname, dns_shim_version());
    fflush(stdout);
    dns_shim_set_log_handler(print_log, NULL);
    rc = dns_shim_init();
    fflush(stdout);
    if (rc != DNS_SHIM_OK) {
        printf("check: the runtime does not start: %s\n", reason());
        return 1;
    }
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.on_a = check_a;
    rc = dns_shim_process(sample, (int32_t)sizeof sample, &cb);
    if (rc != DNS_SHIM_OK) {
        printf("check: a sample response does not parse: %s (%d): %s\n", dns_shim_strerror(rc),
               (int)rc, reason());
        return 1;
    }
    /* Where a program's parse runs, and what that means for a program of
    ** another CPython (a parse in the process needs this library's). */
    if (runtime_here) {
        /* dns_shim_version(): "1.3.0 (CPython 3.11)" */
        const char *tag = strstr(dns_shim_version(), "CPython ");
        int n = tag != NULL ? (int)strcspn(tag + 8, ")") : 0;
        printf("service: none answered: each program starts this runtime, and one that runs "
               "a CPython other than %.*s cannot (its calls fail with DNS_SHIM_ERR_INIT, its "
               "lookups through libnss_dnsshim are UNAVAIL) until dnsshimd(8) runs\n", n,
               tag != NULL ? tag + 8 : "");
    } else
        printf("service: the parse service answered: programs parse there and start no "
               "interpreter, whatever CPython they run\n");
    check_parallelism();
    printf("check: ok: a sample response parsed (www.example.com A 192.0.2.1)\n");
    return 0;
}

/* A 16-bit number, decimal or 0x hex, digits only; -1 if not. */
static long parse_u16(const char *text)
{
    int base = text[0] == '0' && (text[1] == 'x' || text[1] == 'X') ? 16 : 10;
    const char *digits = base == 16 ? text + 2 : text;
    size_t n = strspn(digits, base == 16 ? "0123456789abcdefABCDEF" : "0123456789");
    unsigned long v;
    if (n == 0 || digits[n] != '\0')
        return -1;
    v = strtoul(digits, NULL, base);
    return v > 0xFFFF ? -1 : (long)v;
}

/* A type or class: a number, a mnemonic of the table, TYPEnnn/CLASSnnn. */
static long parse_mnemonic(const char *text, int is_type)
{
    char buf[16];
    const char *prefix = is_type ? "TYPE" : "CLASS";
    unsigned v;
    size_t n = strlen(prefix);
    for (v = 0; v <= 0xFFFF; v++) {
        const char *name = is_type ? type_name((uint16_t)v, buf, sizeof buf)
                                   : class_name((uint16_t)v, buf, sizeof buf);
        if (name != buf && strcasecmp(name, text) == 0)
            return (long)v;
    }
    if (strncasecmp(text, prefix, n) == 0 && text[n] >= '0' && text[n] <= '9')
        text += n;
    else if (!(text[0] >= '0' && text[0] <= '9'))
        return -1;
    {
        char *end;
        unsigned long value = strtoul(text, &end, 10);
        return *end || value > 0xFFFF ? -1 : (long)value;
    }
}

/* Whether stderr goes where stdout goes (the same terminal, file or pipe:
** 2>&1): a rejection's reason, already in stdout, is then not repeated on
** stderr. */
static int stderr_is_stdout(void)
{
    struct stat out, err;
    return fstat(1, &out) == 0 && fstat(2, &err) == 0 && out.st_dev == err.st_dev &&
           out.st_ino == err.st_ino;
}

int main(int argc, char **argv)
{
    dns_shim_callbacks cb;
    dns_shim_query query;
    uint8_t cookie[8];
    int i, hex = 0, status = 0, files = 0, have_id = 0, once;
    const char *expecting = NULL; /* the first --expect-* option (or --match-case) */
    long value;
    uint32_t sections = DNS_SHIM_SECTION_ANSWER | DNS_SHIM_SECTION_AUTHORITY |
                        DNS_SHIM_SECTION_ADDITIONAL;

    memset(&query, 0, sizeof query);
    query.struct_size = sizeof query;
    query.qtype = query.qclass = 1;
    if (argc == 2 && strcmp(argv[1], "--help") == 0)
        return help();
    if (argc == 2 && strcmp(argv[1], "--check") == 0)
        return check();
    /* The options, before the first FILE: each error named (shim/dump.py's
    ** parser says the same, word for word). */
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        /* (never NULL: "" past the last argument, which takes refuses) */
        const char *option = argv[i], *arg = i + 1 < argc ? argv[i + 1] : "";
        int takes = strcmp(option, "--expect-id") == 0 || strcmp(option, "--expect-name") == 0 ||
                    strcmp(option, "--expect-type") == 0 ||
                    strcmp(option, "--expect-class") == 0 ||
                    strcmp(option, "--expect-cookie") == 0 || strcmp(option, "--sections") == 0;
        if (takes && i + 1 >= argc)
            return usage("%s needs a value", option);
        if (takes)
            i++;
        if ((strncmp(option, "--expect-", 9) == 0 || strcmp(option, "--match-case") == 0) &&
            expecting == NULL)
            expecting = option;
        if (strcmp(option, "-x") == 0)
            hex = 1;
        else if (strcmp(option, "--json") == 0)
            json = 1;
        else if (strcmp(option, "--expect-id") == 0) {
            if ((value = parse_u16(arg)) < 0)
                return usage("--expect-id: '%s' is not a number from 0 to 65535 (decimal or 0x "
                             "hex)", arg);
            query.id = (uint16_t)value, have_id = 1;
        } else if (strcmp(option, "--expect-name") == 0)
            query.qname = arg;
        else if (strcmp(option, "--expect-type") == 0) {
            if ((value = parse_mnemonic(arg, 1)) < 0)
                return usage("--expect-type: '%s' is not a type (a number, a mnemonic or "
                             "TYPEnnn)", arg);
            query.qtype = (uint16_t)value;
        } else if (strcmp(option, "--expect-class") == 0) {
            if ((value = parse_mnemonic(arg, 0)) < 0)
                return usage("--expect-class: '%s' is not a class (a number, a mnemonic or "
                             "CLASSnnn)", arg);
            query.qclass = (uint16_t)value;
        } else if (strcmp(option, "--match-case") == 0)
            query.flags |= DNS_SHIM_MATCH_CASE;
        else if (strcmp(option, "--expect-cookie") == 0) {
            if (parse_cookie(arg, cookie) != 0)
                return usage("--expect-cookie: '%s' is not 16 hex digits", arg);
            query.cookie_client = cookie, cookie_checked = 1;
        } else if (strcmp(option, "--sections") == 0 || strncmp(option, "--sections=", 11) == 0) {
            const char *list = takes ? arg : option + 11;
            if (parse_sections(list, &sections) != 0)
                return usage("--sections: '%s' is not a list of answer, authority and "
                             "additional", list);
        } else if (strcmp(option, "--help") == 0 || strcmp(option, "--check") == 0)
            return usage("%s goes alone", option);
        else
            return usage("unknown option '%s'", option);
    }
    /* Any --expect-* (or --match-case) makes a query: its ID and name are
    ** both needed. */
    if (expecting != NULL && (!have_id || query.qname == NULL))
        return usage("%s needs %s", expecting,
                     have_id ? "--expect-name" : query.qname != NULL ? "--expect-id"
                                                                     : "--expect-id and "
                                                                       "--expect-name");
    if (i >= argc)
        return usage("no FILE given");
    memset(&cb, 0, sizeof cb);
    cb.struct_size = sizeof cb;
    cb.sections = sections;
    cb.on_header = on_header;
#define KIND_REGISTER(rdtype, member, type, kind) cb.member = dump_##member;
    DNS_SHIM__KINDS(KIND_REGISTER)
#undef KIND_REGISTER
    cb.on_other = on_other;
    cb.on_edns_option = on_edns_option;
    if (dns_shim_register_callbacks(&cb) != DNS_SHIM_OK) {
        fprintf(stderr, "dns_shim_register_callbacks failed\n");
        return 1;
    }
    once = stderr_is_stdout();
    for (; i < argc; i++, files++) {
        long len = 0;
        unsigned char *msg = read_message(argv[i], hex, &len);
        int32_t rc;
        if (msg == NULL) { /* its line is on stderr: a file, not a message */
            status = 2;
            continue;
        }
        if (json) {
            printf("{\"file\": ");
            json_str(argv[i]);
            printf(", ");
            json_state = 0;
            json_first_record = json_first_option = 1;
        } else {
            printf(";; %s, %ld byte%s\n", argv[i], len, len == 1 ? "" : "s");
        }
        pending_question[0] = '\0';
        /* A file over 2 GiB is no message: -1 says so. */
        if (expecting)
            rc = dns_shim_process_reply(msg, len > INT32_MAX ? -1 : (int32_t)len, &query, NULL);
        else
            rc = process_dns_response(msg, len > INT32_MAX ? -1 : (int32_t)len);
        free(msg);
        flush_question();
        if (json) {
            json_records();
            printf("], \"status\": %" PRId32 ", \"error\": ", rc);
            if (rc != DNS_SHIM_OK)
                json_str(dns_shim_strerror(rc));
            else
                fputs("null", stdout);
            printf(", \"detail\": ");
            if (rc != DNS_SHIM_OK)
                json_str(reason());
            else
                fputs("null", stdout);
            printf("}\n");
        } else {
            if (rc != DNS_SHIM_OK)
                printf(";; rejected: %s (%" PRId32 ")%s%s\n", dns_shim_strerror(rc), rc,
                       reason()[0] ? ": " : "", reason());
            printf("\n");
        }
        if (rc != DNS_SHIM_OK) {
            if (!once)
                fprintf(stderr, "%s: %s (%" PRId32 ")%s%s\n", argv[i], dns_shim_strerror(rc),
                        rc, reason()[0] ? ": " : "", reason());
            status = status ? status : 1;
        }
    }
    dns_shim_register_callbacks(NULL);
    return status;
}
