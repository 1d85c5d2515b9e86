/*
** fuzz_ares_plan: libFuzzer harness of libdnsshim_ares's C side of a
** parse, without the decoder in front: csrc/ares/check.c
** (dnsshim_ares__check_result), and what runs on a result that passes it,
** parsers.c (every exported parser and expand function), structures.c,
** free.c, memory.c and owned.c, compiled into the harness from the
** library's own sources with its internal header (every unit of
** libdnsshim_ares but the bridge: pipeline.DNSSHIM_ARES.units, dnsrec.c
** included, which the parsers ask for a c-ares 1.28 to pass to and find
** none).  The bridge
** (dnsshim_ares.c: dnsshim_ares__compute, which calls the Python side) is
** replaced by this file's: it hands the parser a result built from the
** input, checks it with dnsshim_ares__check_result and answers as the
** bridge does (a result that fails the check: the kind's "unreadable" code
** and nothing of it; else its status and it).  No Python runs.
**
** The input chooses the function (and a hostent or not, an addrttls
** capacity, an offset), then every field of the result: status, have_host,
** the name, the aliases (count and array: count above 65,535, array NULL),
** addresses (count, address length, addresses and TTLs NULL or not), items
** (count, array, each item's 5 numbers and 4 byte strings).  Byte strings
** are absent (NULL, 0), NULL with a length, longer than a message, or a
** block of exactly len + 1 whose last octet is the NUL or not.
**
** Beyond "no crash" (ASan: nothing read past a block, nothing copied that
** was not checked), for each input:
**   - dnsshim_ares__check_result's verdict is the harness's own, written
**     from check.c's and dnsshim_ares.h's rules: a result is refused exactly
**     when one of its byte strings is not one, an alias or item count is
**     over 65,535 or without its array, an address count comes with a kind
**     other than A/AAAA, the wrong address length, more than 65,535 octets
**     of addresses or no addresses or TTLs, or an expand's success has not
**     one item whose length is 1 to what the message holds past the offset;
**   - the function's code is the result's status when it passed (ENOMEM
**     only for an SOA success without its one item, as parsers.c answers
**     it), the unreadable code when it did not (EBADRESP, EBADNAME for
**     expand_name, EBADSTR for expand_string);
**   - what the function hands out is the result, copied: the hostent's
**     name, aliases and addresses (PTR's: the address asked for), the
**     addrttls (at most the capacity), each list element's numbers and
**     strings in order (TXT and CAA octets whole, NAPTR's cut at a NUL as
**     c-ares's strncpy cuts), the expanded string and its length;
**   - nothing is handed out on a failure (A/AAAA's ENODATA may carry a
**     hostent, as c-ares 1.18's does), and everything handed out is freed
**     with c-ares's free function for it: LeakSanitizer reports the rest.
**
** Reproduce: fuzz_ares_plan FILE...
*/
#include "ares/dnsshim_ares_internal.h"

/* No parse service: every result is this file's (fuzz_common.h). */
#define FUZZ_NO_SERVICE 1
#include "fuzz_common.h"
#include "fuzz_input.h"

/* The exported functions, as parsers.c and free.c define them. */
int ares_parse_a_reply(const unsigned char *, int, dnsshim_ares_hostent **,
                       dnsshim_ares_addrttl *, int *);
int ares_parse_aaaa_reply(const unsigned char *, int, dnsshim_ares_hostent **,
                          dnsshim_ares_addr6ttl *, int *);
int ares_parse_ns_reply(const unsigned char *, int, dnsshim_ares_hostent **);
int ares_parse_ptr_reply(const unsigned char *, int, const void *, int, int,
                         dnsshim_ares_hostent **);
int ares_parse_mx_reply(const unsigned char *, int, dnsshim_ares_mx_reply **);
int ares_parse_srv_reply(const unsigned char *, int, dnsshim_ares_srv_reply **);
int ares_parse_txt_reply(const unsigned char *, int, dnsshim_ares_txt_reply **);
int ares_parse_txt_reply_ext(const unsigned char *, int, dnsshim_ares_txt_ext **);
int ares_parse_naptr_reply(const unsigned char *, int, dnsshim_ares_naptr_reply **);
int ares_parse_caa_reply(const unsigned char *, int, dnsshim_ares_caa_reply **);
int ares_parse_uri_reply(const unsigned char *, int, dnsshim_ares_uri_reply **);
int ares_parse_soa_reply(const unsigned char *, int, dnsshim_ares_soa_reply **);
int ares_expand_name(const unsigned char *, const unsigned char *, int, char **, long *);
int ares_expand_string(const unsigned char *, const unsigned char *, int, unsigned char **,
                       long *);
void ares_free_hostent(dnsshim_ares_hostent *);
void ares_free_string(void *);

/* ------------------------------------------------------------------ */
/* The bridge, replaced                                                 */

static fuzz_input in;
static int want_valid;       /* the harness's verdict on the result it made */
static int result_checked;   /* check_result's */
static int computed;         /* the parser asked for a result */
static dnsshim_ares_result made;
static const unsigned char *msg_base;

/* ares_dns_parse's half of the bridge: never called here (dnsrec.c is
** linked for the functions the parsers ask it, which find no c-ares 1.22
** or later in this process and so leave every parse to this library). */
int dnsshim_ares__message(const unsigned char *buf, int len, unsigned int flags,
                          dnsshim_ares_message *m, uint64_t *token)
{
    (void)buf, (void)len, (void)flags, (void)m, (void)token;
    FUZZ_CHECK(0, "ares_dns_parse called");
    return DNSSHIM_ARES_ENOTIMP;
}

void dnsshim_ares__message_done(uint64_t token)
{
    (void)token;
}

/* A byte string of the result, and whether it is one (absent included). */
static int make_bytes(dnsshim_ares_bytes *b)
{
    uint8_t c = fuzz_u8(&in);
    if (c < 16) {
        b->data = NULL;
        b->len = c < 12 ? 0 : 1 + fuzz_u8(&in);
        return b->len == 0;
    }
    /* (fuzz_bytes's NULL data with a length of 0 is the absent string.) */
    return fuzz_bytes(&in, &b->data, &b->len) || (b->data == NULL && b->len == 0);
}

static void make_result(int32_t kind, int len, int offset, dnsshim_ares_result *r)
{
    static const int32_t statuses[] = {DNSSHIM_ARES_SUCCESS, DNSSHIM_ARES_SUCCESS,
                                       DNSSHIM_ARES_SUCCESS, DNSSHIM_ARES_ENODATA,
                                       DNSSHIM_ARES_EBADRESP, DNSSHIM_ARES_EBADNAME,
                                       DNSSHIM_ARES_EBADSTR, DNSSHIM_ARES_EFORMERR};
    uint8_t c;
    size_t i, k;
    int ok = 1;

    memset(r, 0, sizeof *r);
    r->status = statuses[fuzz_u8(&in) % 8];
    r->have_host = fuzz_u8(&in) & 1;
    ok &= make_bytes(&r->name);

    c = fuzz_u8(&in);
    if (c == 255) {
        r->naliases = 65536 + fuzz_u8(&in);
        r->aliases = fuzz_block(sizeof(dnsshim_ares_bytes));
        ok = 0;
    } else if (c == 254) {
        r->naliases = 1 + fuzz_u8(&in);
        r->aliases = NULL;
        ok = 0;
    } else if (c % 8 != 0) {
        dnsshim_ares_bytes *a;
        r->naliases = c % 8;
        a = fuzz_block(r->naliases * sizeof *a);
        if (a == NULL)
            abort();
        for (i = 0; i < r->naliases; i++)
            ok &= make_bytes(&a[i]);
        r->aliases = a;
    }

    c = fuzz_u8(&in);
    if (c % 4 != 0) {
        size_t want = kind == DNSSHIM_ARES_KIND_A ? 4 : kind == DNSSHIM_ARES_KIND_AAAA ? 16 : 0;
        uint8_t shape = fuzz_u8(&in);
        r->naddrs = c == 255 ? 65535 / (want ? want : 4) + 1 + fuzz_u8(&in) : (size_t)(c % 4);
        r->addrlen = shape < 240 ? (want ? want : 4) : shape % 20;
        if (want == 0 || r->addrlen != want)
            ok = 0;
        if (r->naddrs * r->addrlen > 65535 || (want != 0 && r->naddrs > 65535 / want))
            ok = 0;
        if (r->naddrs <= 64) {
            uint8_t *addrs = (shape % 7 == 1) ? NULL : fuzz_block(r->naddrs * r->addrlen);
            int32_t *ttls = (shape % 7 == 2) ? NULL : fuzz_block(r->naddrs * sizeof(int32_t));
            if (addrs)
                for (i = 0; i < r->naddrs * r->addrlen; i++)
                    addrs[i] = fuzz_u8(&in);
            if (ttls)
                for (i = 0; i < r->naddrs; i++)
                    ttls[i] = (int32_t)fuzz_u32(&in);
            r->addrs = addrs;
            r->ttls = ttls;
            if (addrs == NULL || ttls == NULL)
                ok = 0;
        } else {
            /* So many that only a refusal is right; nothing is read. */
            r->addrs = fuzz_block(1);
            r->ttls = fuzz_block(4);
            ok = 0;
        }
    }

    c = fuzz_u8(&in);
    if (c == 255) {
        r->nitems = 65536 + fuzz_u8(&in);
        r->items = fuzz_block(sizeof(dnsshim_ares_item));
        ok = 0;
    } else if (c == 254) {
        r->nitems = 1 + fuzz_u8(&in);
        r->items = NULL;
        ok = 0;
    } else if (c % 6 != 0 || kind == DNSSHIM_ARES_KIND_EXPAND_NAME ||
               kind == DNSSHIM_ARES_KIND_EXPAND_STRING || kind == DNSSHIM_ARES_KIND_SOA) {
        /* Mostly one item where one is wanted. */
        dnsshim_ares_item *items;
        r->nitems = c % 6 == 0 || c % 6 == 1 ? 1 : (size_t)(c % 6) - 1 + (c >= 128);
        items = fuzz_block(r->nitems * sizeof *items);
        if (items == NULL)
            abort();
        for (i = 0; i < r->nitems; i++) {
            for (k = 0; k < 5; k++) {
                uint8_t n = fuzz_u8(&in);
                /* Near the limits of an expand's length, else anything. */
                items[i].num[k] = n < 128 ? (int64_t)(len - offset) - 2 + (n % 5)
                                          : (int64_t)(int32_t)fuzz_u32(&in);
            }
            for (k = 0; k < 4; k++)
                ok &= make_bytes(&items[i].str[k]);
        }
        r->items = items;
    }
    if (r->status == DNSSHIM_ARES_SUCCESS &&
        (kind == DNSSHIM_ARES_KIND_EXPAND_NAME || kind == DNSSHIM_ARES_KIND_EXPAND_STRING)) {
        if (r->nitems != 1 || r->items == NULL || r->items[0].num[0] < 1 ||
            r->items[0].num[0] > (int64_t)len - offset)
            ok = 0;
    }
    want_valid = ok;
}

int dnsshim_ares__compute(int32_t kind, const unsigned char *buf, int len, int offset, int flags,
                          dnsshim_ares_result *r, uint64_t *token)
{
    const char *why;
    (void)flags;
    FUZZ_CHECK(buf == msg_base, "the parser handed over another buffer");
    computed = 1;
    *token = 7;
    make_result(kind, len, offset, &made);
    why = dnsshim_ares__check_result(kind, &made, len, offset);
    result_checked = why == NULL;
    FUZZ_CHECK(result_checked == want_valid, "check_result says \"%s\" for a result that is %s",
               why ? why : "fine", want_valid ? "good" : "not good");
    if (why != NULL) {
        memset(r, 0, sizeof *r);
        *token = 0;
        return r->status = dnsshim_ares__unreadable(kind, NULL);
    }
    *r = made;
    return r->status;
}

void dnsshim_ares__done(uint64_t token)
{
    FUZZ_CHECK(token == 0 || token == 7, "done with token %llu", (unsigned long long)token);
}

/* ------------------------------------------------------------------ */
/* What the parsers hand out, against the result                        */

static void same_bytes(const char *what, const unsigned char *got, size_t got_len,
                       const dnsshim_ares_bytes *want)
{
    FUZZ_CHECK(got != NULL, "%s NULL", what);
    FUZZ_CHECK(got_len == want->len, "%s: %zu octets, the result's %zu", what, got_len, want->len);
    FUZZ_CHECK(want->len == 0 || memcmp(got, want->data, want->len) == 0, "%s differs", what);
    FUZZ_CHECK(got[got_len] == '\0', "%s without its NUL", what);
}

/* A C string copied from a byte string (a NUL inside cuts it short). */
static void same_text(const char *what, const char *got, const dnsshim_ares_bytes *want)
{
    size_t n = want->len == 0 ? 0 : strnlen((const char *)want->data, want->len);
    FUZZ_CHECK(got != NULL, "%s NULL", what);
    FUZZ_CHECK(strlen(got) == n && memcmp(got, want->data ? (const char *)want->data : "", n) == 0,
               "%s differs from the result's", what);
}

static void check_hostent(const dnsshim_ares_hostent *h, int family, int length,
                          const uint8_t *addrs, size_t naddrs)
{
    size_t i;
    FUZZ_CHECK(h != NULL, "no hostent");
    FUZZ_CHECK(h->h_addrtype == family && h->h_length == length, "family %d length %d",
               h->h_addrtype, h->h_length);
    if (made.name.data != NULL)
        same_text("h_name", h->h_name, &made.name);
    for (i = 0; i < made.naliases; i++)
        same_text("alias", h->h_aliases[i], &made.aliases[i]);
    FUZZ_CHECK(h->h_aliases[made.naliases] == NULL, "more aliases than the result's");
    for (i = 0; i < naddrs; i++)
        FUZZ_CHECK(h->h_addr_list[i] != NULL &&
                       memcmp(h->h_addr_list[i], addrs + i * (size_t)length, (size_t)length) == 0,
                   "address %zu differs", i);
    FUZZ_CHECK(h->h_addr_list[naddrs] == NULL, "more addresses than the result's");
}

static int expected_code(int32_t kind, int rc)
{
    if (!result_checked)
        return dnsshim_ares__unreadable(kind, NULL);
    if (kind == DNSSHIM_ARES_KIND_SOA && made.status == DNSSHIM_ARES_SUCCESS && made.nitems != 1)
        return DNSSHIM_ARES_ENOMEM;
    (void)rc;
    return made.status;
}

enum { F_A, F_AAAA, F_NS, F_PTR, F_MX, F_TXT, F_TXT_EXT, F_SRV, F_NAPTR, F_CAA, F_URI, F_SOA,
       F_EXPAND_NAME, F_EXPAND_STRING, F_COUNT };
static const int32_t kinds[F_COUNT] = {
    DNSSHIM_ARES_KIND_A, DNSSHIM_ARES_KIND_AAAA, DNSSHIM_ARES_KIND_NS, DNSSHIM_ARES_KIND_PTR,
    DNSSHIM_ARES_KIND_MX, DNSSHIM_ARES_KIND_TXT, DNSSHIM_ARES_KIND_TXT_EXT,
    DNSSHIM_ARES_KIND_SRV, DNSSHIM_ARES_KIND_NAPTR, DNSSHIM_ARES_KIND_CAA,
    DNSSHIM_ARES_KIND_URI, DNSSHIM_ARES_KIND_SOA, DNSSHIM_ARES_KIND_EXPAND_NAME,
    DNSSHIM_ARES_KIND_EXPAND_STRING};

static void list(int f, const unsigned char *m, int n)
{
    void *out = NULL;
    size_t i = 0;
    int rc;
    int32_t kind = kinds[f];
    switch (f) {
    case F_MX: rc = ares_parse_mx_reply(m, n, (dnsshim_ares_mx_reply **)&out); break;
    case F_TXT: rc = ares_parse_txt_reply(m, n, (dnsshim_ares_txt_reply **)&out); break;
    case F_TXT_EXT: rc = ares_parse_txt_reply_ext(m, n, (dnsshim_ares_txt_ext **)&out); break;
    case F_SRV: rc = ares_parse_srv_reply(m, n, (dnsshim_ares_srv_reply **)&out); break;
    case F_NAPTR: rc = ares_parse_naptr_reply(m, n, (dnsshim_ares_naptr_reply **)&out); break;
    case F_CAA: rc = ares_parse_caa_reply(m, n, (dnsshim_ares_caa_reply **)&out); break;
    case F_URI: rc = ares_parse_uri_reply(m, n, (dnsshim_ares_uri_reply **)&out); break;
    default: rc = ares_parse_soa_reply(m, n, (dnsshim_ares_soa_reply **)&out); break;
    }
    FUZZ_CHECK(rc == expected_code(kind, rc), "kind %d: code %d, expected %d", kind, rc,
               expected_code(kind, rc));
    if (rc != DNSSHIM_ARES_SUCCESS) {
        FUZZ_CHECK(out == NULL, "kind %d: code %d with a result", kind, rc);
        return;
    }
    if (f == F_SOA) {
        dnsshim_ares_soa_reply *s = out;
        FUZZ_CHECK(s != NULL, "SOA success without its record");
        same_text("nsname", s->nsname, &made.items[0].str[0]);
        same_text("hostmaster", s->hostmaster, &made.items[0].str[1]);
        FUZZ_CHECK(s->serial == (unsigned)made.items[0].num[0] &&
                       s->minttl == (unsigned)made.items[0].num[4], "SOA numbers");
        ares_free_data(out);
        return;
    }
    /* The whole list: its length and each element's strings. */
    {
        void *head = NULL;
        switch (f) {
        case F_MX: case F_TXT: case F_TXT_EXT: case F_SRV: case F_NAPTR: case F_CAA: case F_URI:
            head = out;
            break;
        }
        i = 0;
        while (head != NULL) {
            const dnsshim_ares_item *it;
            FUZZ_CHECK(i < made.nitems, "kind %d: more elements than the result's %zu", kind,
                       made.nitems);
            it = &made.items[i];
            switch (f) {
            case F_MX: {
                dnsshim_ares_mx_reply *e = head;
                same_text("mx host", e->host, &it->str[0]);
                head = e->next;
                break;
            }
            case F_TXT: {
                dnsshim_ares_txt_reply *e = head;
                same_bytes("txt", e->txt, e->length, &it->str[0]);
                head = e->next;
                break;
            }
            case F_TXT_EXT: {
                dnsshim_ares_txt_ext *e = head;
                same_bytes("txt_ext", e->txt, e->length, &it->str[0]);
                FUZZ_CHECK(e->record_start == (unsigned char)it->num[0], "record_start");
                head = e->next;
                break;
            }
            case F_SRV: {
                dnsshim_ares_srv_reply *e = head;
                same_text("srv host", e->host, &it->str[0]);
                FUZZ_CHECK(e->port == (unsigned short)it->num[2], "srv port");
                head = e->next;
                break;
            }
            case F_NAPTR: {
                dnsshim_ares_naptr_reply *e = head;
                same_text("naptr flags", (const char *)e->flags, &it->str[0]);
                same_text("naptr service", (const char *)e->service, &it->str[1]);
                same_text("naptr regexp", (const char *)e->regexp, &it->str[2]);
                same_text("naptr replacement", e->replacement, &it->str[3]);
                head = e->next;
                break;
            }
            case F_CAA: {
                dnsshim_ares_caa_reply *e = head;
                same_bytes("caa property", e->property, e->plength, &it->str[0]);
                same_bytes("caa value", e->value, e->length, &it->str[1]);
                head = e->next;
                break;
            }
            default: {
                dnsshim_ares_uri_reply *e = head;
                same_text("uri", e->uri, &it->str[0]);
                head = e->next;
                break;
            }
            }
            i++;
        }
        FUZZ_CHECK(i == made.nitems, "kind %d: %zu elements, the result has %zu", kind, i,
                   made.nitems);
    }
    ares_free_data(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char msg[64];
    int n, f, rc, knob;
    fuzz_stats_start("fuzz_ares_plan");
    fuzz_stat_inputs++;
    in.p = data;
    in.n = size;
    f = fuzz_u8(&in) % F_COUNT;
    knob = fuzz_u8(&in);
    /* The message: never read here (the Python side is replaced), only its
    ** length and the offset matter. */
    n = 12 + knob % 50;
    memset(msg, 0, sizeof msg);
    msg_base = msg;
    computed = 0;
    result_checked = 0;
    memset(&made, 0, sizeof made);

    if (f == F_A || f == F_AAAA) {
        dnsshim_ares_hostent *host = NULL;
        dnsshim_ares_addrttl ttls[8];
        dnsshim_ares_addr6ttl ttls6[8];
        int cap = knob % 9, count = cap, with_host = knob & 64;
        size_t i, want;
        rc = f == F_A ? ares_parse_a_reply(msg, n, with_host ? &host : NULL, ttls, &count)
                      : ares_parse_aaaa_reply(msg, n, with_host ? &host : NULL, ttls6, &count);
        FUZZ_CHECK(rc == expected_code(kinds[f], rc), "a/aaaa: code %d, expected %d", rc,
                   expected_code(kinds[f], rc));
        if (rc != DNSSHIM_ARES_SUCCESS && rc != DNSSHIM_ARES_ENODATA) {
            FUZZ_CHECK(host == NULL && count == 0, "a/aaaa: code %d with a result", rc);
        } else {
            want = made.naddrs < (size_t)cap ? made.naddrs : (size_t)cap;
            FUZZ_CHECK(count == (int)want, "a/aaaa: %d addrttls, expected %zu", count, want);
            for (i = 0; i < want; i++) {
                int len = f == F_A ? 4 : 16;
                const void *a = f == F_A ? (const void *)ttls[i].ipaddr
                                         : (const void *)ttls6[i].ip6addr;
                int ttl = f == F_A ? ttls[i].ttl : ttls6[i].ttl;
                FUZZ_CHECK(memcmp(a, made.addrs + i * (size_t)len, (size_t)len) == 0 &&
                               ttl == made.ttls[i], "addrttl %zu differs", i);
            }
            FUZZ_CHECK((host != NULL) == (with_host && made.have_host),
                       "a/aaaa: a hostent %s", host ? "not asked for" : "missing");
            if (host != NULL) {
                check_hostent(host, f == F_A ? DNSSHIM_ARES_AF_INET : DNSSHIM_ARES_AF_INET6,
                              f == F_A ? 4 : 16, made.addrs, made.naddrs);
                ares_free_hostent(host);
            }
        }
    } else if (f == F_NS || f == F_PTR) {
        dnsshim_ares_hostent *host = NULL;
        static const uint8_t addr[4] = {192, 0, 2, 1};
        rc = f == F_NS ? ares_parse_ns_reply(msg, n, &host)
                       : ares_parse_ptr_reply(msg, n, addr, 4, DNSSHIM_ARES_AF_INET, &host);
        FUZZ_CHECK(rc == expected_code(kinds[f], rc), "ns/ptr: code %d, expected %d", rc,
                   expected_code(kinds[f], rc));
        if (rc != DNSSHIM_ARES_SUCCESS) {
            FUZZ_CHECK(host == NULL, "ns/ptr: code %d with a hostent", rc);
        } else {
            if (f == F_PTR)
                check_hostent(host, DNSSHIM_ARES_AF_INET, 4, addr, 1);
            else
                check_hostent(host, DNSSHIM_ARES_AF_INET, 4, NULL, 0);
            ares_free_hostent(host);
        }
    } else if (f == F_EXPAND_NAME || f == F_EXPAND_STRING) {
        unsigned char *s = NULL;
        long enclen = -1;
        int offset = (knob >> 1) % n;
        rc = f == F_EXPAND_NAME ? ares_expand_name(msg + offset, msg, n, (char **)&s, &enclen)
                                : ares_expand_string(msg + offset, msg, n, &s, &enclen);
        FUZZ_CHECK(rc == expected_code(kinds[f], rc), "expand: code %d, expected %d", rc,
                   expected_code(kinds[f], rc));
        if (rc != DNSSHIM_ARES_SUCCESS) {
            FUZZ_CHECK(s == NULL, "expand: code %d with a string", rc);
        } else {
            FUZZ_CHECK(enclen == (long)made.items[0].num[0] && enclen >= 1 &&
                           enclen <= n - offset, "expand: enclen %ld", enclen);
            if (f == F_EXPAND_NAME)
                same_bytes("expanded name", s, made.items[0].str[0].len, &made.items[0].str[0]);
            else
                same_text("expanded string", (const char *)s, &made.items[0].str[0]);
            ares_free_string(s);
        }
    } else {
        list(f, msg, n);
    }
    FUZZ_CHECK(computed, "the parser did not ask for a result");
    fuzz_stat_good += result_checked && made.status == DNSSHIM_ARES_SUCCESS;
    fuzz_free_blocks();
    return 0;
}
