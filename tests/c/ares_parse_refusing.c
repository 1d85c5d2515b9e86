/* An ares_dns_parse for LD_PRELOAD that passes every call to the next one
 * (c-ares's own, dlsym(RTLD_NEXT)) except those it is told to refuse:
 * ARES_REFUSE_ID=HEX refuses messages whose ID is that (ARES_EBADRESP, no
 * record), ARES_REFUSE_ID=any refuses every message.  The tests' proof that
 * a preloaded parser is the one called: by the driver (tests/c/ares_dnsrec.c)
 * and from inside libcares.so.2 (its legacy parsers, its resolver), as
 * libdnsshim_ares's will be. */

#define _GNU_SOURCE
#include <ares.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef ares_status_t (*parse_fn)(const unsigned char *, size_t, unsigned int,
                                  ares_dns_record_t **);

ares_status_t ares_dns_parse(const unsigned char *buf, size_t buf_len, unsigned int flags,
                             ares_dns_record_t **dnsrec)
{
    const char *refuse = getenv("ARES_REFUSE_ID");
    parse_fn next = (parse_fn)dlsym(RTLD_NEXT, "ares_dns_parse");

    if (refuse != NULL) {
        int all = strcmp(refuse, "any") == 0;
        unsigned long id = all ? 0 : strtoul(refuse, NULL, 16);
        if (all || (buf != NULL && buf_len >= 2
                    && (unsigned long)((buf[0] << 8) | buf[1]) == id)) {
            if (dnsrec != NULL)
                *dnsrec = NULL;
            return ARES_EBADRESP;
        }
    }
    if (next == NULL)
        return ARES_ENOTIMP;
    return next(buf, buf_len, flags, dnsrec);
}
