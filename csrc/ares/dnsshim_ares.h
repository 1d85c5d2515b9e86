/*
** dnsshim_ares.h: the inside of libdnsshim_ares, the c-ares compatible layer.
**
** libdnsshim_ares exports c-ares 1.18's classic reply parsers
** (ares_parse_a_reply ... ares_parse_uri_reply), ares_expand_name,
** ares_expand_string, the three free functions and ares_strerror, with
** c-ares's signatures, struct layouts, return codes and ownership rules;
** ares_dns_parse (c-ares 1.22's); and ares_library_init, ares_library_init_mem
** and ares_library_cleanup, passed on to c-ares, so that what this library
** allocates for the caller comes from the allocator the program gave c-ares.  Its
** public header is c-ares's own <ares.h>: a program compiles against it
** unchanged and links -ldnsshim_ares where it linked -lcares.  This header is
** NOT installed and is not for programs: it is what the library is built from.
** What a program sees (the prototypes, the semantics, ares_dns_parse, which
** builds records with the builders of a c-ares 1.28 or later in the process,
** and every difference from c-ares) is the manual page dnsshim_ares(3),
** made from csrc/ares/dnsshim_ares.3.md.
**
** It has two parts.
**
**   1. The c-ares ABI, declared here under our own names (dnsshim_ares_*)
**      so that the library builds without c-ares installed, and so that a
**      test can compile it beside the real <ares.h> and check that every
**      size and offset is the same (tests/test_ares.py).  Nothing else in
**      this project declares them.
**
**   2. The plain data the Python side (shim/ares_glue.py) hands the C side
**      (csrc/ares/) for one call: what the c-ares function returns,
**      as flat arrays.  The C side only copies it into c-ares's structures,
**      allocated as c-ares allocates (memory.c); every byte of the message is
**      read by dnspython.
**
** build_ffi.py gives this header to cffi (preprocessor lines other than
** integer #defines dropped, DNSSHIM_ARES_PYTHON read as extern "Python"):
** it is the one source of this internal ABI.
*/
#ifndef DNSSHIM_ARES_H
#define DNSSHIM_ARES_H

#include <stddef.h>
#include <stdint.h>

/* The functions between the two sides are static inside cffi's unit (the
** module with csrc/ares/dnsshim_ares.c, the bridge, as its preamble): the
** bridge defines both markers as static; the library's other units never
** call them.  For cffi, DNSSHIM_ARES_PYTHON reads as extern "Python" (the
** Python side's functions) and DNSSHIM_ARES_INTERNAL as nothing (C functions
** the Python side calls). */
#ifndef DNSSHIM_ARES_PYTHON
#  define DNSSHIM_ARES_PYTHON extern
#endif
#ifndef DNSSHIM_ARES_INTERNAL
#  define DNSSHIM_ARES_INTERNAL extern
#endif

/* ------------------------------------------------------------------ */
/* 1. c-ares 1.18 / 1.19 (ares.h), by layout                           */

/* The return codes the parsers give (ares.h's ARES_*). */
#define DNSSHIM_ARES_SUCCESS 0
#define DNSSHIM_ARES_ENODATA 1
#define DNSSHIM_ARES_EFORMERR 2
#define DNSSHIM_ARES_ENOTIMP 5
#define DNSSHIM_ARES_EBADQUERY 7
#define DNSSHIM_ARES_EBADNAME 8
#define DNSSHIM_ARES_EBADRESP 10
#define DNSSHIM_ARES_ENOMEM 15
#define DNSSHIM_ARES_EBADSTR 17
#define DNSSHIM_ARES_ENOTINITIALIZED 21

/* Address families as <sys/socket.h> has them on Linux. */
#define DNSSHIM_ARES_AF_INET 2
#define DNSSHIM_ARES_AF_INET6 10

/* struct hostent (<netdb.h>) */
typedef struct dnsshim_ares_hostent {
    char *h_name;
    char **h_aliases;
    int h_addrtype;
    int h_length;
    char **h_addr_list;
} dnsshim_ares_hostent;

/* struct ares_addrttl: ipaddr is a struct in_addr */
typedef struct dnsshim_ares_addrttl {
    uint8_t ipaddr[4];
    int ttl;
} dnsshim_ares_addrttl;

/* struct ares_addr6ttl: ip6addr is a struct ares_in6_addr */
typedef struct dnsshim_ares_addr6ttl {
    uint8_t ip6addr[16];
    int ttl;
} dnsshim_ares_addr6ttl;

typedef struct dnsshim_ares_caa_reply {
    struct dnsshim_ares_caa_reply *next;
    int critical;
    unsigned char *property;
    size_t plength;
    unsigned char *value;
    size_t length;
} dnsshim_ares_caa_reply;

typedef struct dnsshim_ares_srv_reply {
    struct dnsshim_ares_srv_reply *next;
    char *host;
    unsigned short priority;
    unsigned short weight;
    unsigned short port;
} dnsshim_ares_srv_reply;

typedef struct dnsshim_ares_mx_reply {
    struct dnsshim_ares_mx_reply *next;
    char *host;
    unsigned short priority;
} dnsshim_ares_mx_reply;

typedef struct dnsshim_ares_txt_reply {
    struct dnsshim_ares_txt_reply *next;
    unsigned char *txt;
    size_t length;
} dnsshim_ares_txt_reply;

typedef struct dnsshim_ares_txt_ext {
    struct dnsshim_ares_txt_ext *next;
    unsigned char *txt;
    size_t length;
    unsigned char record_start;
} dnsshim_ares_txt_ext;

typedef struct dnsshim_ares_naptr_reply {
    struct dnsshim_ares_naptr_reply *next;
    unsigned char *flags;
    unsigned char *service;
    unsigned char *regexp;
    char *replacement;
    unsigned short order;
    unsigned short preference;
} dnsshim_ares_naptr_reply;

typedef struct dnsshim_ares_soa_reply {
    char *nsname;
    char *hostmaster;
    unsigned int serial;
    unsigned int refresh;
    unsigned int retry;
    unsigned int expire;
    unsigned int minttl;
} dnsshim_ares_soa_reply;

typedef struct dnsshim_ares_uri_reply {
    struct dnsshim_ares_uri_reply *next;
    unsigned short priority;
    unsigned short weight;
    char *uri;
    int ttl;
} dnsshim_ares_uri_reply;

/* ------------------------------------------------------------------ */
/* 2. Python to C                                                      */

/* Which function a call is for.  These, the codes above and
** DNSSHIM_ARES_WANT_HOST are shim/ares_codes.py's numbers too: build_ffi.py
** refuses to build when the two disagree. */
#define DNSSHIM_ARES_KIND_A 1
#define DNSSHIM_ARES_KIND_AAAA 2
#define DNSSHIM_ARES_KIND_NS 3
#define DNSSHIM_ARES_KIND_PTR 4
#define DNSSHIM_ARES_KIND_MX 5
#define DNSSHIM_ARES_KIND_TXT 6
#define DNSSHIM_ARES_KIND_TXT_EXT 7
#define DNSSHIM_ARES_KIND_SRV 8
#define DNSSHIM_ARES_KIND_NAPTR 9
#define DNSSHIM_ARES_KIND_SOA 10
#define DNSSHIM_ARES_KIND_CAA 11
#define DNSSHIM_ARES_KIND_URI 12
#define DNSSHIM_ARES_KIND_EXPAND_NAME 13
#define DNSSHIM_ARES_KIND_EXPAND_STRING 14

/* A byte string; data[len] is a NUL (data is NULL only when absent). */
typedef struct dnsshim_ares_bytes {
    const uint8_t *data;
    size_t len;
} dnsshim_ares_bytes;

/* One element of a reply list, or the one SOA, or an expanded name or
** string.  Which num[] and str[] mean what, by kind:
**   MX        num: priority                          str: host
**   SRV       num: priority, weight, port            str: host
**   TXT(_EXT) num: record_start                      str: txt
**   NAPTR     num: order, preference                 str: flags, service, regexp, replacement
**   SOA       num: serial, refresh, retry, expire, minttl   str: nsname, hostmaster
**   CAA       num: critical                          str: property, value
**   URI       num: priority, weight, ttl             str: uri
**   EXPAND_*  num: enclen                            str: the name or string */
typedef struct dnsshim_ares_item {
    int64_t num[5];
    dnsshim_ares_bytes str[4];
} dnsshim_ares_item;

/* What one call returns.  For the hostent kinds (A, AAAA, NS, PTR),
** have_host says whether a hostent is made, from name, the aliases and the
** addresses (naddrs of them, addrlen octets each, at addrs); for A and AAAA
** ttls[i] is the TTL of address i as ares_addrttl gives it.  The list kinds
** have nitems items, in the order of the list. */
typedef struct dnsshim_ares_result {
    int32_t status;
    int32_t have_host;
    dnsshim_ares_bytes name;
    size_t naliases;
    const dnsshim_ares_bytes *aliases;
    size_t naddrs;
    size_t addrlen;
    const uint8_t *addrs;
    const int32_t *ttls;
    size_t nitems;
    const dnsshim_ares_item *items;
} dnsshim_ares_result;

/* Flags of a call. */
#define DNSSHIM_ARES_WANT_HOST 1 /* the caller asked for a hostent (host != NULL) */

/*
** The Python side (shim/ares_embedded.py, around shim.ares_glue.run).
**
** dnsshim_ares__py_parse reads len bytes at buf for the function `kind`
** (for the EXPAND kinds, the name or string at offset) and fills *out,
** whose pointers stay valid until dnsshim_ares__py_release(*token) (0:
** nothing to release).  It returns DNSSHIM_ARES__PY_DONE, never 0 (cffi's
** value for "could not run"); DNSSHIM_ARES__PY_FAILED when an exception
** escaped it (cffi's error value for it; the traceback is logged).
*/
#define DNSSHIM_ARES__PY_DONE 1
#define DNSSHIM_ARES__PY_FAILED 2
DNSSHIM_ARES_PYTHON int32_t dnsshim_ares__py_parse(int32_t kind, const uint8_t *buf, int32_t len,
                                                   int32_t offset, int32_t flags,
                                                   dnsshim_ares_result *out, uint64_t *token);
DNSSHIM_ARES_PYTHON void dnsshim_ares__py_release(uint64_t token);

/* ------------------------------------------------------------------ */
/* 3. ares_dns_parse: a message as c-ares's record builders take it     */

/* One field of a record: its ares_dns_rr_key_t, the ares_dns_datatype_t it
** has (which builder sets it: 1 INADDR and 2 INADDR6, bytes of 4 and 16
** octets; 3 U8, 4 U16, 5 U32, number; 6 NAME and 7 STR, text without a NUL;
** 8 BIN and 9 BINP, octets; 10 OPT, number the option's code and bytes its
** value; 11 ABINP, one string of the array, added in order). */
typedef struct dnsshim_ares_field {
    uint32_t key;
    uint32_t datatype;
    uint32_t number;
    dnsshim_ares_bytes bytes;
} dnsshim_ares_field;

/* One record: ares_dns_record_rr_add's arguments (section an
** ares_dns_section_t, type an ares_dns_rec_type_t, RAW_RR 65536 included),
** then its fields. */
typedef struct dnsshim_ares_rr {
    uint32_t section;
    uint32_t type;
    uint32_t rclass;
    uint32_t ttl;
    dnsshim_ares_bytes name;
    size_t nfields;
    const dnsshim_ares_field *fields;
} dnsshim_ares_rr;

/* A whole message: when status is DNSSHIM_ARES_SUCCESS,
** ares_dns_record_create's arguments (flags as ares_dns_flags_t), the one
** question, and nrrs records in wire order. */
typedef struct dnsshim_ares_message {
    int32_t status;
    uint32_t id;
    uint32_t flags;
    uint32_t opcode;
    uint32_t rcode;
    dnsshim_ares_bytes qname;
    uint32_t qtype;
    uint32_t qclass;
    size_t nrrs;
    const dnsshim_ares_rr *rrs;
} dnsshim_ares_message;

/*
** The Python side (shim/ares_embedded.py, around shim.ares_dnsrec.run):
** the plan of len octets at buf under the ARES_DNS_PARSE_* flags, into
** *out, whose pointers stay valid until dnsshim_ares__py_message_release(
** *token).  Returns as dnsshim_ares__py_parse does.
*/
DNSSHIM_ARES_PYTHON int32_t dnsshim_ares__py_message(const uint8_t *buf, int32_t len,
                                                     uint32_t flags, dnsshim_ares_message *out,
                                                     uint64_t *token);
DNSSHIM_ARES_PYTHON void dnsshim_ares__py_message_release(uint64_t token);

/* For the init code (build_ffi.py): the parser could not be attached; why,
** and whether that is logged already (through libdnsshim's log). */
DNSSHIM_ARES_INTERNAL void dnsshim_ares__report_start_failure(const char *why, int32_t logged);

#endif /* DNSSHIM_ARES_H */
