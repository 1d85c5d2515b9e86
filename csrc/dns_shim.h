/*
** dns_shim.h: the public interface of libdnsshim.
**
** libdnsshim parses untrusted DNS response messages for a C program.  The
** bytes go in through process_dns_response() or dns_shim_process(); a
** memory-safe parser (dnspython, running in an embedded CPython) checks every
** byte; the records come back through callbacks that the program registers.
** The C program never walks the untrusted bytes itself.
**
** This header is the one place the ABI is written down: build_ffi.py reads
** it (after dropping preprocessor lines other than integer #defines, and the
** DNS_SHIM_API / DNS_SHIM_BEGIN_DECLS / DNS_SHIM_END_DECLS markers) to build
** the library.  It is the authoritative reference; README.md summarises it.
**
** CONVENTIONS
**
**   Status.  Every function that can fail returns an int32_t status:
**   DNS_SHIM_OK (0) when the message parsed fully and every callback ran and
**   returned 0, a negative dns_shim_status otherwise.  No other value is ever
**   returned.  dns_shim_strerror() turns any status into text.
**
**   All or nothing.  The whole message is parsed and checked before the first
**   callback runs.  A malformed message returns its status and calls no
**   callback at all, so the program's own structures are never half updated.
**
**   Which status wins.  Argument checks come first, in this order: length
**   (DNS_SHIM_ERR_BAD_LENGTH), buffer pointer (DNS_SHIM_ERR_NULL_BUFFER), the
**   callbacks struct (DNS_SHIM_ERR_BAD_ARGUMENT); they are answered without
**   starting the runtime.  Then the 12-byte header (DNS_SHIM_ERR_SHORT_HEADER),
**   then the QR bit (DNS_SHIM_ERR_NOT_RESPONSE), then the first defect met
**   while reading the message in wire order.
**
**   Pointers handed to callbacks.  Every pointer inside a struct passed to a
**   callback (names, byte strings, the struct itself) is owned by the library
**   and is valid only until that callback returns.  Copy what you keep.
**   Never free or write through them.
**
**   Names.  Owner names, targets, qname, mname... are NUL-terminated
**   presentation format exactly as dnspython's
**   Name.to_text(omit_final_dot=True) writes them: no final dot, the root is
**   ".", case kept as on the wire; the characters "().;\@$ inside a label
**   escaped with a backslash ("\." for a dot), and bytes outside printable
**   ASCII as \DDD ("\032" for a space, "\000" for a NUL), so a name never
**   contains a NUL, space or control byte.
**
**   Byte strings.  dns_shim_bytes is binary safe: use len, not strlen.  For
**   convenience data[len] is always a NUL byte.
**
**   Threads.  Every function may be called from any thread, concurrently.
**   Parsing runs under the embedded interpreter's global lock, so calls from
**   several threads are serialised while they are inside the parser (more
**   threads do not parse faster); the callbacks are called from C after the
**   parse, without that lock.  A callback may call dns_shim_process()
**   (re-entry) and dns_shim_register_callbacks().
**
**   The runtime.  The first call that needs it starts an embedded CPython (the
**   one the library was built with: see DNS_SHIM_PYTHON below), imports the
**   parser, and keeps it for the life of the process.  If that fails, that call
**   and every later one return DNS_SHIM_ERR_INIT and the reason is logged
**   (stderr unless dns_shim_set_log_handler says otherwise).  Call
**   dns_shim_init() at start-up to pay this cost (tens of milliseconds) up
**   front and learn about a failure early.
**
**   Environment.  The library ignores PYTHONHOME, PYTHONPATH and every other
**   PYTHON* variable when it starts its own interpreter, so the program's
**   environment cannot change which Python parses its messages.  One variable
**   is read: DNS_SHIM_PYTHON, the path of a python executable (a virtualenv's
**   bin/python, say) whose installation and site-packages to use, of the
**   CPython version the library embeds.  Without it, a library installed
**   inside the shim Python package uses the Python installation it sits in
**   (found from its own path), and any other uses the one pinned at build
**   time.  When the library is loaded into a process that already runs
**   Python, it uses that interpreter and its sys.path (plus the directory of
**   the shim package it belongs to).
**
**   fork().  Forking while no thread is inside the library is fine; the child
**   keeps using the library normally.  Forking while another thread is inside
**   a library call is not supported.
*/
#ifndef DNS_SHIM_H
#define DNS_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifndef DNS_SHIM_API
#  if defined(__GNUC__) && defined(DNS_SHIM_BUILDING)
#    define DNS_SHIM_API __attribute__((visibility("default")))
#  else
#    define DNS_SHIM_API
#  endif
#endif

#ifdef __cplusplus
#  define DNS_SHIM_BEGIN_DECLS extern "C" {
#  define DNS_SHIM_END_DECLS }
#else
#  define DNS_SHIM_BEGIN_DECLS
#  define DNS_SHIM_END_DECLS
#endif

DNS_SHIM_BEGIN_DECLS

/*
** The version of this header; dns_shim_version() gives the library's.  The
** major version is the ABI: the shared object is libdnsshim.so.MAJOR, and
** within a major version nothing is removed or changed, only added.  The
** package's version (shim.__version__) is checked against these at build.
*/
#define DNS_SHIM_VERSION_MAJOR 1
#define DNS_SHIM_VERSION_MINOR 0
#define DNS_SHIM_VERSION_PATCH 0
/* One number to compare: 0xMMmmpp, e.g. 0x010000 for 1.0.0. */
#define DNS_SHIM_VERSION_NUMBER ((DNS_SHIM_VERSION_MAJOR << 16) | (DNS_SHIM_VERSION_MINOR << 8) | DNS_SHIM_VERSION_PATCH)

/*
** Status codes.  0 is success, every failure is negative.  The values are
** ABI: they never change, and new codes are only ever added at the end.
** Each comment says which input produces the code.
*/
typedef enum dns_shim_status {
    /* The message parsed fully and every callback returned 0. */
    DNS_SHIM_OK = 0,
    /* The buffer pointer is NULL and the length is greater than 0. */
    DNS_SHIM_ERR_NULL_BUFFER = -1,
    /* The length is negative or greater than 65535. */
    DNS_SHIM_ERR_BAD_LENGTH = -2,
    /* Fewer than the 12 bytes of the DNS header (a length of 0 included). */
    DNS_SHIM_ERR_SHORT_HEADER = -3,
    /* The message ends inside a question or a record (its name or its fixed
    ** fields); the counts promise more than the bytes hold; an RDLENGTH runs
    ** past the end of the message; the TC bit is set and records are cut. */
    DNS_SHIM_ERR_TRUNCATED = -4,
    /* Bytes are left after the last record that the counts announce. */
    DNS_SHIM_ERR_TRAILING_DATA = -5,
    /* A malformed name anywhere (owner, question or inside RDATA): a reserved
    ** label type (0x40, 0x80), a label over 63 octets, a name over 255
    ** octets, a compression pointer that does not point strictly backwards
    ** (to itself, forward, past the end), a pointer loop, more pointer hops
    ** than dnspython allows, a pointer target that runs into the name that
    ** points to it. */
    DNS_SHIM_ERR_BAD_NAME = -6,
    /* RDATA malformed for its type: a wrong fixed length (A of 3 or 5 octets,
    ** AAAA of 4 or 15), a length octet inside the RDATA that overruns it
    ** (TXT strings, NAPTR flags/services/regexp), fields cut short (SRV,
    ** NAPTR, MX, SOA under their minimum), RDATA longer than its content,
    ** any other value dnspython's parser for that type rejects. */
    DNS_SHIM_ERR_BAD_RDATA = -7,
    /* The QR bit is clear: a query, not a response. */
    DNS_SHIM_ERR_NOT_RESPONSE = -8,
    /* An OPT record outside the additional section, a second OPT, or an OPT
    ** whose owner is not the root. */
    DNS_SHIM_ERR_BAD_EDNS = -9,
    /* Any other structural violation: a TSIG that is not the last record of
    ** the additional section or whose class is not ANY; in an UPDATE message,
    ** a zone section that is not one SOA question, or a record class that
    ** the UPDATE rules forbid. */
    DNS_SHIM_ERR_FORMAT = -10,
    /* A callback returned non-zero; dispatch stopped right there. */
    DNS_SHIM_ERR_CALLBACK = -11,
    /* The callbacks struct is NULL where one is required, its struct_size is
    ** not one this library knows, or its sections mask has unknown bits. */
    DNS_SHIM_ERR_BAD_ARGUMENT = -12,
    /* Memory ran out inside the library. */
    DNS_SHIM_ERR_NO_MEMORY = -13,
    /* The embedded Python runtime or its packages could not start. */
    DNS_SHIM_ERR_INIT = -14,
    /* Anything unexpected inside the library (a bug): the details, with the
    ** Python traceback, are logged (see dns_shim_set_log_handler); the caller
    ** is never crashed. */
    DNS_SHIM_ERR_INTERNAL = -15
} dns_shim_status;

/* Message sections, as bits of dns_shim_callbacks.sections and as the value
** of dns_shim_rr.section. */
typedef enum dns_shim_section {
    DNS_SHIM_SECTION_ANSWER = 1,
    DNS_SHIM_SECTION_AUTHORITY = 2,
    DNS_SHIM_SECTION_ADDITIONAL = 4
} dns_shim_section;

/*
** The message header, given to on_header once per message before any record.
** The counts are the raw counts from the wire.
*/
typedef struct dns_shim_header {
    uint16_t id;
    uint16_t flags;        /* the 16-bit flags word, QR..RCODE, as on the wire */
    uint16_t opcode;       /* (flags >> 11) & 0xF */
    uint16_t rcode;        /* 12 bits: the header's 4 bits plus the OPT
                           ** record's extended rcode (e.g. 16 = BADVERS) */
    uint16_t qdcount;
    uint16_t ancount;
    uint16_t nscount;
    uint16_t arcount;
    const char *qname;     /* the first question's name; NULL when qdcount is 0 */
    uint16_t qtype;        /* the first question's type and class; 0 when */
    uint16_t qclass;       /* qdcount is 0 */
    int32_t edns_version;  /* the OPT record's version, -1 without an OPT */
    uint16_t edns_payload; /* the OPT record's UDP payload size (its CLASS
                           ** field, as sent); 0 without an OPT */
    uint16_t edns_do;      /* 1 when the OPT record's DO bit is set, else 0 */
    uint16_t edns_flags;   /* the OPT record's 16 flag bits (DO included) */
} dns_shim_header;

/*
** What every record carries.  Each typed struct below starts with one.
*/
typedef struct dns_shim_rr {
    const char *owner;     /* the owner name */
    uint16_t type;         /* the RR type, e.g. 1 for A */
    uint16_t rclass;       /* the RR class, e.g. 1 for IN */
    uint32_t ttl;          /* seconds; a TTL with its top bit set reads as 0
                           ** (RFC 2181, section 8) */
    uint32_t section;      /* one DNS_SHIM_SECTION_* value */
    uint32_t index;        /* position within its section, from 0 (the OPT
                           ** record takes none) */
} dns_shim_rr;

/* A binary-safe byte string; data[len] is a NUL byte for convenience. */
typedef struct dns_shim_bytes {
    const uint8_t *data;
    size_t len;
} dns_shim_bytes;

typedef struct dns_shim_a {
    dns_shim_rr rr;
    uint8_t address[4];    /* network order, as on the wire */
} dns_shim_a;

typedef struct dns_shim_aaaa {
    dns_shim_rr rr;
    uint8_t address[16];   /* network order, as on the wire */
} dns_shim_aaaa;

/* CNAME, NS, PTR and DNAME records. */
typedef struct dns_shim_target {
    dns_shim_rr rr;
    const char *target;
} dns_shim_target;

typedef struct dns_shim_mx {
    dns_shim_rr rr;
    uint16_t preference;
    const char *exchange;
} dns_shim_mx;

typedef struct dns_shim_txt {
    dns_shim_rr rr;
    size_t count;                  /* at least 1 */
    const dns_shim_bytes *strings; /* count character-strings, in wire order;
                                   ** each may be empty or hold NUL bytes */
} dns_shim_txt;

typedef struct dns_shim_srv {
    dns_shim_rr rr;
    uint16_t priority;
    uint16_t weight;
    uint16_t port;
    const char *target;
} dns_shim_srv;

typedef struct dns_shim_naptr {
    dns_shim_rr rr;
    uint16_t order;
    uint16_t preference;
    dns_shim_bytes flags;
    dns_shim_bytes services;
    dns_shim_bytes regexp;         /* often empty (len 0) */
    const char *replacement;       /* "." when there is none */
} dns_shim_naptr;

typedef struct dns_shim_soa {
    dns_shim_rr rr;
    const char *mname;
    const char *rname;
    uint32_t serial;
    uint32_t refresh;
    uint32_t retry;
    uint32_t expire;
    uint32_t minimum;
} dns_shim_soa;

/*
** Any other record: a type without a typed callback (CAA, HTTPS, SVCB, DS,
** RRSIG, URI, TSIG, unknown types...), a record of a class other than IN, or
** a record whose typed callback is NULL.  rdata is the uncompressed wire form
** of the record's data (names inside expanded) exactly as dnspython
** re-encodes it.
*/
typedef struct dns_shim_raw {
    dns_shim_rr rr;
    dns_shim_bytes rdata;
} dns_shim_raw;

/*
** Callbacks.  Each gets the ctx of its dns_shim_callbacks and one record;
** it returns 0 to go on, anything else to stop dispatch (the call then
** returns DNS_SHIM_ERR_CALLBACK).  Any callback may be NULL.
*/
typedef int32_t (*dns_shim_header_cb)(void *ctx, const dns_shim_header *header);
typedef int32_t (*dns_shim_a_cb)(void *ctx, const dns_shim_a *record);
typedef int32_t (*dns_shim_aaaa_cb)(void *ctx, const dns_shim_aaaa *record);
typedef int32_t (*dns_shim_target_cb)(void *ctx, const dns_shim_target *record);
typedef int32_t (*dns_shim_mx_cb)(void *ctx, const dns_shim_mx *record);
typedef int32_t (*dns_shim_txt_cb)(void *ctx, const dns_shim_txt *record);
typedef int32_t (*dns_shim_srv_cb)(void *ctx, const dns_shim_srv *record);
typedef int32_t (*dns_shim_naptr_cb)(void *ctx, const dns_shim_naptr *record);
typedef int32_t (*dns_shim_soa_cb)(void *ctx, const dns_shim_soa *record);
typedef int32_t (*dns_shim_raw_cb)(void *ctx, const dns_shim_raw *record);

/*
** The set of callbacks for one message (dns_shim_process) or for every
** message (dns_shim_register_callbacks).
**
** Order of calls: on_header first, then one call per resource record on the
** wire, in wire order (answer, authority, additional), each section only if
** its bit is in `sections`.  Records are never merged into RRsets; duplicates
** are kept, each with its own TTL.  The OPT pseudo-record is never a record:
** its fields fill the header.
**
** Typed callbacks are for class IN records only.  A record whose typed
** callback is NULL, or which has none, goes to on_other when it is set, and
** is skipped otherwise.
**
** Versioning: set struct_size to sizeof(dns_shim_callbacks).  Members are
** only ever appended; struct_size tells the library which ones the caller
** knows, so a program built against an older header keeps working.  A
** struct_size the library does not know is DNS_SHIM_ERR_BAD_ARGUMENT.
*/
typedef struct dns_shim_callbacks {
    uint32_t struct_size;          /* sizeof(dns_shim_callbacks) */
    uint32_t sections;             /* DNS_SHIM_SECTION_* bits; 0 = answer only;
                                   ** other bits: DNS_SHIM_ERR_BAD_ARGUMENT */
    void *ctx;                     /* passed to every callback as is */
    dns_shim_header_cb on_header;
    dns_shim_a_cb on_a;
    dns_shim_aaaa_cb on_aaaa;
    dns_shim_target_cb on_cname;
    dns_shim_target_cb on_ns;
    dns_shim_target_cb on_ptr;
    dns_shim_target_cb on_dname;
    dns_shim_mx_cb on_mx;
    dns_shim_txt_cb on_txt;
    dns_shim_srv_cb on_srv;
    dns_shim_naptr_cb on_naptr;
    dns_shim_soa_cb on_soa;
    dns_shim_raw_cb on_other;
} dns_shim_callbacks;

/*
** process_dns_response: parse one DNS response with the registered callbacks.
**
** dns_response: the message, without the TCP length prefix; read only, and
**   only during the call; it may be NULL when response_len is 0.  (It is not
**   const for compatibility with the historical prototype; the library never
**   writes to it.)
** response_len: its length, 0 to 65535.
**
** Returns DNS_SHIM_OK or a negative dns_shim_status.  With no callbacks
** registered the message is still parsed and checked and its status
** returned.  Each call uses the callback set registered when it starts, even
** if another thread registers a new one meanwhile.
*/
DNS_SHIM_API int32_t process_dns_response(uint8_t *dns_response, int32_t response_len);

/*
** dns_shim_register_callbacks: set the callbacks that process_dns_response
** uses, process-wide.
**
** callbacks: copied before the function returns, so it may be a temporary;
**   NULL clears the registered set.  The ctx pointer inside it is kept as is
**   and must stay valid as long as the set is registered.
**
** Returns DNS_SHIM_OK, or DNS_SHIM_ERR_BAD_ARGUMENT for an unknown
** struct_size or sections bit (the registered set is then left unchanged).
** Never starts the runtime.  Calls in progress keep the set they started with.
*/
DNS_SHIM_API int32_t dns_shim_register_callbacks(const dns_shim_callbacks *callbacks);

/*
** dns_shim_process: parse one DNS response with callbacks for this call only.
**
** dns_response, response_len: as for process_dns_response.
** callbacks: required (NULL is DNS_SHIM_ERR_BAD_ARGUMENT); read during the
**   call only.
**
** Returns DNS_SHIM_OK or a negative dns_shim_status.
*/
DNS_SHIM_API int32_t dns_shim_process(const uint8_t *dns_response, int32_t response_len,
                                      const dns_shim_callbacks *callbacks);

/*
** dns_shim_init: start the embedded runtime now rather than on the first
** call that needs it.  Optional; safe to call more than once, from any
** thread.  Returns DNS_SHIM_OK or DNS_SHIM_ERR_INIT (the reason is
** logged).
*/
DNS_SHIM_API int32_t dns_shim_init(void);

/*
** dns_shim_strerror: a short English description of a status.  Returns
** static text, never NULL, also for codes this library does not know.
** Never starts the runtime.
*/
DNS_SHIM_API const char *dns_shim_strerror(int32_t status);

/*
** dns_shim_version: the library's version, "MAJOR.MINOR.PATCH", followed by
** the CPython it embeds, e.g. "1.0.0 (CPython 3.11)".  Static text.  Never
** starts the runtime.  A library embeds one CPython minor version: pointed
** at another (DNS_SHIM_PYTHON), it refuses to start with DNS_SHIM_ERR_INIT
** and a message that names both.
*/
DNS_SHIM_API const char *dns_shim_version(void);

/*
** Log levels, the syslog severities of the same names.
*/
typedef enum dns_shim_log_level {
    DNS_SHIM_LOG_ERROR = 3,   /* the runtime did not start; an internal error
                              ** (with its Python traceback) */
    DNS_SHIM_LOG_WARNING = 4, /* a Python warning raised inside the library */
    DNS_SHIM_LOG_INFO = 6,
    DNS_SHIM_LOG_DEBUG = 7
} dns_shim_log_level;

/*
** A log handler: called with the ctx given to dns_shim_set_log_handler, a
** dns_shim_log_level and one message (NUL-terminated UTF-8, possibly several
** lines, no final newline), valid during the call only.  It may be called
** from any thread that calls the library, concurrently; it must not call
** back into the library.
*/
typedef void (*dns_shim_log_handler)(void *ctx, int32_t level, const char *message);

/*
** dns_shim_set_log_handler: where the library's diagnostics go: start-up
** failures, internal errors with their traceback, and, in an interpreter
** the library started itself, Python's warnings and unraisable exceptions.
** NULL restores the default, stderr (each message flushed at once).  Takes
** effect for messages logged after it returns.  Never starts the runtime.
*/
DNS_SHIM_API void dns_shim_set_log_handler(dns_shim_log_handler handler, void *ctx);

DNS_SHIM_END_DECLS

#endif /* DNS_SHIM_H */
