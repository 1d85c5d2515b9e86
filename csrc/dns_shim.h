/*
** dns_shim.h: the public interface of libdnsshim.
**
** libdnsshim parses untrusted DNS response messages for a C program.  The
** bytes go in through process_dns_response(), dns_shim_process() or
** dns_shim_process_reply() (which also checks the reply against its query); a
** memory-safe parser (dnspython, running in an embedded CPython) checks every
** byte; the records come back through callbacks that the program registers.
** The C program never walks the untrusted bytes itself.
**
** This header is the one place the ABI is written down, and the library is
** built from it: it is the authoritative reference.  The manual is made from
** its comments: dnsshim(7) from this one, the status table and the types,
** one page per function (process_dns_response(3)...) from the comment above
** its declaration.
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
**   callbacks struct, then (dns_shim_process_reply) the query struct
**   (DNS_SHIM_ERR_BAD_ARGUMENT); they are answered without starting the
**   runtime, except the syntax of the query's qname, checked once it runs
**   and still before the message.  Then the 12-byte header
**   (DNS_SHIM_ERR_SHORT_HEADER), then the QR bit (DNS_SHIM_ERR_NOT_RESPONSE),
**   then, for dns_shim_process_reply, the ID (DNS_SHIM_ERR_MISMATCH), then
**   the first defect met while reading the message in wire order, then, for
**   dns_shim_process_reply, the question and the COOKIE
**   (DNS_SHIM_ERR_MISMATCH).  Where dnspython raises a generic FormError,
**   the library still names the class of the defect.
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
**   Differences from dnspython.  Where the library's verdict on a message
**   differs from that of dnspython's dns.message.from_wire, it is on
**   purpose: the QR bit clear is rejected (DNS_SHIM_ERR_NOT_RESPONSE); TSIG
**   is accepted unverified (its TTL 0, as dnspython keeps it); over 65535
**   bytes is DNS_SHIM_ERR_BAD_LENGTH.  Like dnspython, it accepts compression
**   pointers inside SRV targets and NAPTR replacements (checked like any
**   other), and RDATA-less UPDATE records have TTL 0.
**
**   Versions.  Each function is bound to the symbol version of the release
**   that added it (DNSSHIM_1.0, DNSSHIM_1.1, ...; see VERSIONING below).
**   The library exports these functions, cffi's module init and, in the
**   node DNSSHIM_PRIVATE, the entry libdnsshim_ares parses through (no
**   program may call it), and nothing else: it never interposes a symbol of
**   its host.  It is linked -z nodelete: a host that dlclose()s it leaves it
**   mapped.
**
**   Threads.  Every function may be called from any thread, concurrently.
**   By default the library runs one interpreter, and parsing runs under its
**   global lock: calls from several threads take turns while they are
**   inside the parser.  With dns_shim_set_parallelism(n), where the
**   installation has the worker image, up to n calls parse at once, each in
**   a private interpreter, so that parsing scales with the threads.  Either
**   way the callbacks are called from C after the parse, in the calling
**   thread, without an interpreter's lock.  A callback may call
**   dns_shim_process() (re-entry) and dns_shim_register_callbacks().  Where
**   a parse service runs (see "The parse service" below), each call goes to
**   it on a connection of its own, and its parallelism is the service's.
**
**   The runtime.  The first call that needs it starts an embedded CPython
**   (the one the library was built with: see "The Python it runs" below),
**   imports the parser, and keeps it for the life of the process.  If that
**   fails, that call and every later one return DNS_SHIM_ERR_INIT and the
**   reason is logged (stderr unless dns_shim_set_log_handler says
**   otherwise).  Call dns_shim_init() at start-up to pay this cost (tens of
**   milliseconds) up front and learn about a failure early.  Where a parse
**   service answers, the calls parse there and no runtime starts in the
**   process: only a call that falls back needs it (see "The parse service"
**   below).
**
**   The Python it runs.  The library runs the CPython minor version it was
**   built with, from one installation: the one DNS_SHIM_PYTHON names when it
**   is set (see "Environment" below); else, for a library installed inside
**   the shim Python package, the Python installation it sits in; for a
**   prefix install or the Debian packages, the installation the build was
**   based on, found from the library's own path; for the library of a
**   bundle (python -m shim bundle), the bundle it sits in,
**   <bundle>/lib/pythonX.Y, and nothing else (no site-packages), and it
**   refuses to start (DNS_SHIM_ERR_INIT, with the reason logged) when it is
**   not inside one; for any other (a source tree's build), the one pinned
**   at build time.  A firmware object's interpreter is its own: it reads
**   no installation.  The library's own dnspython and cffi backend load
**   with that installation, and so do the compiled standard modules it
**   lacks: Debian builds _socket, _struct, math... into its libpython, so a
**   library built with another CPython of the same minor version (a pyenv
**   build, say) takes them from the installation it was built with.  The
**   installation's site directories are on the interpreter's path, with
**   the folders their .pth files name, but it runs no site module: no .pth
**   import line and no sitecustomize of the installation runs in it, and no
**   home directory is looked up.  The library starts whether it was linked,
**   preloaded or dlopen()ed, with RTLD_LOCAL too (a plugin host, glibc's
**   NSS): it makes the libpython it runs global, as in a python process, so
**   that the extension modules the runtime imports find it.  When the
**   library is loaded into a process that already runs Python, it runs in
**   that interpreter as a guest: its own private copy of its Python side,
**   found by the same rule, and the program's sys.path and modules left as
**   they were; so it does from the package, a prefix, the bundle and the
**   Debian packages alike.
**
**   The parse service.  Where dnsshimd(8), the parse service, runs, the
**   process parses nothing itself: process_dns_response, dns_shim_process and
**   dns_shim_process_reply, once their arguments are checked (in the process,
**   as ever: a refused argument never reaches the service; the qname's syntax
**   is the parser's, wherever it runs), send the message, the query and which
**   callbacks the set has, with its sections (never ctx, nor any pointer), to
**   the service's Unix socket; the service parses with libdnsshim in its own
**   process and answers with the status, the failure detail and the calls to
**   make, each with its struct.  The call reads that answer as untrusted
**   input, checks it whole as it checks a plan made in the process, and makes
**   the calls.  The library of the package pip installs, of a prefix install
**   and of the Debian packages asks the service, in a C program and in a
**   Python program alike; the bundle's and the firmware object's never do,
**   nor do libdnsshim_ares's parsers.  It asks the socket DNS_SHIM_SERVICE
**   names, else /run/dnsshim/parse.sock, and only one it can trust: an
**   absolute path, every directory on it (its links resolved) root's or the
**   process's effective user's and writable by no one else (an ancestor may
**   be a sticky directory such as /tmp, the socket's own directory may not),
**   and the socket itself root's or that user's; in a process in
**   secure-execution mode, root's only.
**
**   Through the service a call gives what it gives in the process: the
**   same status, the same callbacks with the same values in the same order,
**   called in the calling thread from C with the same lifetimes (valid
**   until the callback returns), and the same dns_shim_last_error.  The
**   program's settings mean this for it.  The allocator
**   (dns_shim_set_allocator): the structs handed to callbacks come from
**   it, and so do the request and the answer the call holds until it
**   returns (an answer is at most 16 MiB); the service's runtime has its
**   own memory.  The memory limit (dns_shim_set_memory_limit) counts the
**   process's runtime, not those blocks; the service has its own limit
**   (dnsshimd --memory-limit), and a message the service refuses for memory
**   is parsed in the process, under the program's limit.  Parallelism is
**   the service's (dnsshimd --parallelism): dns_shim_set_parallelism and
**   DNS_SHIM_PARALLELISM set the process's own interpreters, which parse
**   only the calls that fall back.  The log handler
**   (dns_shim_set_log_handler) gets the fallback's one line, once (below);
**   what the service's runtime logs goes to the service's log.
**   dns_shim_init asks whether a service answers: when one does, it
**   returns DNS_SHIM_OK and starts nothing.
**
**   A call waits on the service at most 2 seconds, from its connection to
**   the last octet of the answer; its callbacks run after.  Where no
**   service answers (no socket, or one nobody listens on), or the one there
**   is not trusted, does not answer in time, closes the connection,
**   answers that it could not parse the message (its runtime, its memory
**   limit), or answers with anything the call cannot read, the call parses
**   in the process as if there were no service, with the same result (a
**   parse is a pure function of its arguments): the process's runtime then
**   starts, at the first such call.  The first fallback of a process is
**   logged, once, through the log handler: "the parse service at PATH is
**   not used: WHY; messages are parsed in this process (dnsshimd(8))", at
**   DNS_SHIM_LOG_INFO where there is no service (the normal case on a
**   machine without one, or while it is stopped), at DNS_SHIM_LOG_WARNING
**   otherwise.  With DNS_SHIM_SERVICE_FALLBACK=no such a call fails instead,
**   with DNS_SHIM_ERR_INIT and why in dns_shim_last_error (the first such
**   failure of a process also logged, at DNS_SHIM_LOG_ERROR), and
**   dns_shim_init returns DNS_SHIM_ERR_INIT too.
**
**   The shared library a program links (libdnsshim.so.1) carries no
**   Python: it is the API, the argument checks and the service's client.
**   The runtime (CPython and the parser) is libdnsshim_runtime.so.1, in the
**   installation's private library folder (where the worker image is), which
**   it loads at the first call that parses in the process: a program whose
**   calls the service answers maps no libpython, starts no interpreter and
**   makes no thread.  The settings made before (allocator, memory limit,
**   parallelism) are given to the runtime when it is loaded.  The static
**   archive is the whole library in one object.
**
**   A call through the service holds no lock of the library and makes no
**   thread while it waits: it opens a connection of its own (close-on-exec)
**   and closes it before it returns, so calls from many threads go to the
**   service at once, and a fork() in another thread waits for none of
**   them (the child keeps a copy of the descriptor of each call then in
**   progress, which it never uses and an exec closes; its own calls make
**   their own).
**   Cancellation (pthread_cancel) is held off while the call waits on the
**   service, at most those 2 seconds; a thread cancelled in one of its
**   callbacks leaves no descriptor and no block behind.
**
**   Environment.  The library ignores PYTHONHOME, PYTHONPATH and every other
**   PYTHON* variable when it starts its own interpreter, so the program's
**   environment cannot change which Python parses its messages.  It reads the
**   first four variables below, and no other.  In a process the kernel runs
**   in secure-execution mode (AT_SECURE: a setuid or setgid program, one with
**   file capabilities) it reads none of them, as glibc's secure_getenv has
**   it: the environment is then the unprivileged user's, and the library
**   behaves as with all four unset, whoever set them (a program that needs
**   another Python or more interpreters there says so with its own calls;
**   such a program uses root's service at the default socket, or parses in
**   the process).  Nothing else of the environment, and no file the user
**   chose, is read in such a process.
**
**   DNS_SHIM_PYTHON: the path of a python executable (a virtualenv's
**     bin/python, say) whose installation and site-packages the runtime
**     uses (see "The Python it runs" above), of the CPython minor version the
**     library embeds: another minor version is refused (DNS_SHIM_ERR_INIT,
**     with a message that names both), and so is a program that is not a
**     python.  A firmware object does not read it.
**   DNS_SHIM_PARALLELISM: the parallelism n, for programs that cannot be
**     changed (see dns_shim_set_parallelism): read once, at the first call
**     that parses or starts the library, unless the program called
**     dns_shim_set_parallelism before.  A value the library cannot take
**     (not a number from 0 to DNS_SHIM_PARALLELISM_MAX, or above 1 where
**     the installation has no worker image) is logged as a warning, and n
**     stays 1.
**   DNS_SHIM_SERVICE: the absolute path of the parse service's socket (see
**     "The parse service" above); unset or empty, /run/dnsshim/parse.sock;
**     "none": no service is asked, every call parses in the process, and
**     nothing is logged for it.
**   DNS_SHIM_SERVICE_FALLBACK: "no": a call the service cannot parse fails
**     with DNS_SHIM_ERR_INIT instead of parsing in the process (and so does
**     dns_shim_init where no service answers); unset or any other value,
**     the call parses in the process.  DNS_SHIM_SERVICE=none parses in the
**     process whatever this says.
**   DNS_SHIM_NSS_LOG: read by libnss_dnsshim, glibc's NSS module, not by
**     the library: where the module's diagnostics go (a reply it refused,
**     a runtime that did not start), "stderr" or "none"; unset or any
**     other value, syslog's daemon facility.  Read securely too: a setuid
**     program logs to syslog.
**
**   fork().  From any thread at any moment: the child keeps using the
**   library normally, also when other threads were inside library calls at
**   the fork.  The library's fork handler (pthread_atfork; libdnsshim_ares
**   has its own) takes every lock of the library before the fork and gives
**   them back on both sides, so the fork waits for the short sections that
**   hold one, and for a start in progress in another thread (the first
**   call, an interpreter of the pool, libdnsshim_ares's first parse); the
**   forking thread takes the interpreter's lock for the fork; the child
**   makes CPython's own locks anew when other threads had used the
**   interpreter (as os.fork() does); the pool's interpreters busy in other
**   threads are replaced in the child (see dns_shim_set_parallelism).  In a
**   Python program, os.fork() holds the program's interpreter lock, which
**   a start needs: it does not wait for one, and a start another thread is
**   making at that moment does not finish in the child (start the library,
**   dns_shim_init, before such a fork).
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
#define DNS_SHIM_VERSION_MINOR 3
#define DNS_SHIM_VERSION_PATCH 0
/* One number to compare: 0xMMmmpp, e.g. 0x010200 for 1.2.0. */
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
    ** a compression pointer in a name that the type's format forbids to
    ** compress (NSEC's next name, RRSIG's signer, SVCB's target...), any
    ** other value dnspython's parser for that type rejects. */
    DNS_SHIM_ERR_BAD_RDATA = -7,
    /* The QR bit is clear: a query, not a response. */
    DNS_SHIM_ERR_NOT_RESPONSE = -8,
    /* An OPT record outside the additional section, a second OPT, or an OPT
    ** whose owner is not the root.  Since 1.1, malformed option data too
    ** (1.0 reported most of it as DNS_SHIM_ERR_BAD_RDATA): an option whose
    ** code and length, or whose data, run past the OPT RDATA; an EDE (15)
    ** under 2 octets, or whose EXTRA-TEXT is not UTF-8; a COOKIE (10) whose
    ** client part is not 8 octets or whose server part is not 8 to 32; an
    ** ECS (8) of a family other than 1 and 2, a source or scope prefix
    ** longer than the family's address, address octets other than the
    ** source prefix needs, or non-zero bits past the prefix; any other
    ** option data dnspython's class for its code rejects (a REPORT-CHANNEL
    ** agent domain that is not a name, say). */
    DNS_SHIM_ERR_BAD_EDNS = -9,
    /* Any other structural violation: a TSIG that is not the last record of
    ** the additional section or whose class is not ANY; in an UPDATE message,
    ** a zone section that is not one SOA question, or a record class that
    ** the UPDATE rules forbid. */
    DNS_SHIM_ERR_FORMAT = -10,
    /* A callback returned non-zero; dispatch stopped right there. */
    DNS_SHIM_ERR_CALLBACK = -11,
    /* An argument the function cannot take, or a call it cannot take now;
    ** dns_shim_last_error says which.  Each function's own page says what
    ** it refuses.  By function: dns_shim_process, a callbacks set that is
    ** NULL; dns_shim_process, dns_shim_process_reply and
    ** dns_shim_register_callbacks, a callbacks set whose struct_size is not
    ** one this library knows or whose sections mask has unknown bits;
    ** dns_shim_process_reply, a query that is NULL, of an unknown
    ** struct_size or with unknown flags bits, or whose qname is NULL or not
    ** a name; dns_shim_set_allocator, an allocator of an unknown struct_size
    ** or without a required function, or any once the runtime has started;
    ** dns_shim_set_memory_limit, a limit other than 0 where the runtime is
    ** a Python program's interpreter; dns_shim_set_parallelism, n above
    ** DNS_SHIM_PARALLELISM_MAX (64). */
    DNS_SHIM_ERR_BAD_ARGUMENT = -12,
    /* Memory ran out inside the library: the host's allocator or the C
    ** library refused a block, or (1.2) a parse would take the runtime above
    ** the limit dns_shim_set_memory_limit set. */
    DNS_SHIM_ERR_NO_MEMORY = -13,
    /* The embedded Python runtime or its packages could not start; or,
    ** since 1.3, DNS_SHIM_SERVICE_FALLBACK=no is set and the parse service
    ** cannot parse the message (dns_shim_last_error says why). */
    DNS_SHIM_ERR_INIT = -14,
    /* Anything unexpected inside the library (a bug): the details, with the
    ** Python traceback, are logged (see dns_shim_set_log_handler); the caller
    ** is never crashed. */
    DNS_SHIM_ERR_INTERNAL = -15,
    /* (1.1) dns_shim_process_reply: the response does not answer the query:
    ** another ID; no question, or more than one; another question name
    ** (compared as dns_shim_query says), type or class; a client cookie was
    ** sent and the response has no COOKIE option, more than one, or one
    ** whose client part differs.  No callback is called. */
    DNS_SHIM_ERR_MISMATCH = -16,
    /* (1.3) This installation cannot do what was asked: a parallelism above
    ** 1 without the worker image (where the installation keeps it), or
    ** above the interpreters a firmware object built with --parallelism N
    ** has.  dns_shim_last_error names the file and why the install built
    ** none (or the packages that build it), or the option. */
    DNS_SHIM_ERR_UNSUPPORTED = -17
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

/* A binary-safe byte string; data[len] is a NUL byte for convenience.  In
** the structs the library hands to callbacks, data is never NULL, also when
** len is 0. */
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
** a record whose typed callback is NULL.  rdata: for a type dnspython parses
** (for the record's class), the uncompressed wire form of the
** record's data (names inside expanded) exactly as dnspython re-encodes it;
** for any other (dnspython's GenericRdata: an unknown type, or a type
** without a module for the record's class, such as A under class ANY), the
** octets exactly as sent, unchecked beyond RDLENGTH.
*/
typedef struct dns_shim_raw {
    dns_shim_rr rr;
    dns_shim_bytes rdata;
} dns_shim_raw;

/*
** (1.1) One option of the OPT record (RFC 6891), given to on_edns_option.
**
** code and data are always set: the option's code and its octets exactly as
** sent (len 0 for an option without data).  The decoded forms below are
** filled for the three options the library decodes, and are zero (numbers),
** -1 (ede_info_code) or empty (len 0) for every other code, padding (12)
** included.  Every one of them has been checked (see DNS_SHIM_ERR_BAD_EDNS):
** a malformed option fails the whole message and reaches no callback.
** Like every struct handed to a callback, the struct and every byte string
** in it belong to the library and are valid until on_edns_option returns;
** every dns_shim_bytes has a non-NULL data with a NUL at data[len], also
** when len is 0.  RFC 8914 says EXTRA-TEXT is for people: do not parse it.
*/
typedef struct dns_shim_edns_option {
    uint16_t code;                 /* the OPTION-CODE: 8 ECS, 10 COOKIE, 12
                                   ** padding, 15 EDE, ... */
    dns_shim_bytes data;           /* the OPTION-DATA, as sent */
    /* EDE, code 15 (RFC 8914, Extended DNS Errors): */
    int32_t ede_info_code;         /* the INFO-CODE, 0 to 65535 (18 =
                                   ** Prohibited, 22 = No Reachable
                                   ** Authority...); -1 unless code is 15 */
    dns_shim_bytes ede_text;       /* the EXTRA-TEXT: UTF-8, for people, not
                                   ** programs; one final NUL, which RFC 8914
                                   ** allows, is not counted; len 0 when there
                                   ** is none */
    /* COOKIE, code 10 (RFC 7873, DNS Cookies): */
    dns_shim_bytes cookie_client;  /* the client cookie, 8 octets */
    dns_shim_bytes cookie_server;  /* the server cookie, 8 to 32 octets, or
                                   ** len 0 when the option has none */
    /* ECS, code 8 (RFC 7871, Client Subnet): */
    uint16_t ecs_family;           /* 1 IPv4, 2 IPv6 */
    uint8_t ecs_source_prefix;     /* SOURCE PREFIX-LENGTH, in bits */
    uint8_t ecs_scope_prefix;      /* SCOPE PREFIX-LENGTH, in bits (what the
                                   ** answer is valid for) */
    dns_shim_bytes ecs_address;    /* the address as sent: only the
                                   ** (ecs_source_prefix + 7) / 8 octets the
                                   ** prefix needs, network order, the bits
                                   ** past the prefix zero */
} dns_shim_edns_option;

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
typedef int32_t (*dns_shim_edns_option_cb)(void *ctx, const dns_shim_edns_option *option);

/*
** The set of callbacks for one message (dns_shim_process) or for every
** message (dns_shim_register_callbacks).
**
** Order of calls: on_header first, then on_edns_option once per option of
** the OPT record, in wire order (whatever `sections` says: like on_header,
** it is not a record of a section), then one call per resource record on
** the wire, in wire order (answer, authority, additional), each section only
** if its bit is in `sections`.  Records are never merged into RRsets;
** duplicates are kept, each with its own TTL.  The OPT pseudo-record is
** never a record: its fields fill the header, its options go to
** on_edns_option.
**
** Typed callbacks are for class IN records only.  A record whose typed
** callback is NULL, or which has none, goes to on_other when it is set, and
** is skipped otherwise.
**
** Versioning: set struct_size to sizeof(dns_shim_callbacks).  Members are
** only ever appended; struct_size tells the library which ones the caller
** knows, so a program built against an older header keeps working.  A
** struct_size the library does not know is DNS_SHIM_ERR_BAD_ARGUMENT.  The
** sizes known: 1.0's (the struct up to on_other, offsetof(dns_shim_callbacks,
** on_edns_option)) and 1.1's.  A caller that passes 1.0's size gets 1.0's
** behaviour: the library never reads the members after on_other, so
** on_edns_option is never called.
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
    /* 1.1 */
    dns_shim_edns_option_cb on_edns_option;
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
**
** Where the parse service runs (dnsshimd(8)), the message is parsed there
** and the callbacks are called here, in the calling thread, with the same
** status, values and dns_shim_last_error as a parse in the process; where
** it does not answer, the call parses in the process (see "The parse
** service" in dnsshim(7)).  dns_shim_process and dns_shim_process_reply
** do the same.
**
** @returns DNS_SHIM_OK DNS_SHIM_ERR_NULL_BUFFER DNS_SHIM_ERR_BAD_LENGTH DNS_SHIM_ERR_SHORT_HEADER
** @returns DNS_SHIM_ERR_TRUNCATED DNS_SHIM_ERR_TRAILING_DATA DNS_SHIM_ERR_BAD_NAME DNS_SHIM_ERR_BAD_RDATA
** @returns DNS_SHIM_ERR_NOT_RESPONSE DNS_SHIM_ERR_BAD_EDNS DNS_SHIM_ERR_FORMAT DNS_SHIM_ERR_CALLBACK
** @returns DNS_SHIM_ERR_NO_MEMORY DNS_SHIM_ERR_INIT DNS_SHIM_ERR_INTERNAL
** @example resolver.c
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
**
** @returns DNS_SHIM_OK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the callbacks set is not NULL and
**   its struct_size is not one this library knows, or its sections mask
**   has unknown bits; the registered set is left unchanged.
** @example resolver.c
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
**
** @returns DNS_SHIM_OK DNS_SHIM_ERR_NULL_BUFFER DNS_SHIM_ERR_BAD_LENGTH DNS_SHIM_ERR_SHORT_HEADER
** @returns DNS_SHIM_ERR_TRUNCATED DNS_SHIM_ERR_TRAILING_DATA DNS_SHIM_ERR_BAD_NAME DNS_SHIM_ERR_BAD_RDATA
** @returns DNS_SHIM_ERR_NOT_RESPONSE DNS_SHIM_ERR_BAD_EDNS DNS_SHIM_ERR_FORMAT DNS_SHIM_ERR_CALLBACK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the callbacks set is NULL, its
**   struct_size is not one this library knows, or its sections mask has
**   unknown bits.
** @returns DNS_SHIM_ERR_NO_MEMORY DNS_SHIM_ERR_INIT DNS_SHIM_ERR_INTERNAL
** @example per_call.c
*/
DNS_SHIM_API int32_t dns_shim_process(const uint8_t *dns_response, int32_t response_len,
                                      const dns_shim_callbacks *callbacks);

/*
** (1.1) The query a response must answer, for dns_shim_process_reply
** (RFC 5452: accept a response only if its ID, question name, type and
** class are those of the query sent).
**
** struct_size: sizeof(dns_shim_query); members are only ever appended, as
**   for dns_shim_callbacks.
** id, qtype, qclass: as sent.
** qname: the name as sent, NUL-terminated, in the presentation form the
**   library delivers names in (see "Names" in dnsshim(7), CONVENTIONS: "\."
**   for a dot inside a label, \DDD for other octets, ASCII only), a final
**   dot optional, the root ".".  Not NULL, not "" nor "@".  Compared as DNS
**   compares names, ASCII letters without case, unless flags has
**   DNS_SHIM_MATCH_CASE.
** flags: DNS_SHIM_MATCH_CASE, or 0.  Other bits: DNS_SHIM_ERR_BAD_ARGUMENT.
** cookie_client: NULL, or the 8 octets of the client cookie the query's
**   COOKIE option carried (RFC 7873): the response must then carry exactly
**   one COOKIE option whose client part is those 8 octets (its server part
**   is the caller's to keep for the next query).
**
** The library reads the struct, qname and cookie_client during the call
** only.
*/
typedef struct dns_shim_query {
    uint32_t struct_size;          /* sizeof(dns_shim_query) */
    uint16_t id;
    const char *qname;
    uint16_t qtype;
    uint16_t qclass;
    uint32_t flags;                /* DNS_SHIM_MATCH_CASE or 0 */
    const uint8_t *cookie_client;  /* 8 octets, or NULL */
} dns_shim_query;

/* dns_shim_query.flags: compare the question's name octet for octet, case
** included, for queries sent with DNS 0x20 case randomisation (a spoofer
** must then guess the case of every letter too). */
#define DNS_SHIM_MATCH_CASE 1

/*
** dns_shim_process_reply (1.1): parse one DNS response that must answer
** `query`, with `callbacks` for this call, or the registered set.
**
** dns_response, response_len: as for process_dns_response.
** query: required (NULL is DNS_SHIM_ERR_BAD_ARGUMENT); see dns_shim_query.
** callbacks: NULL means the registered set (as process_dns_response uses,
**   possibly none: parse and check only); else used for this call only.
**
** Returns DNS_SHIM_OK, DNS_SHIM_ERR_MISMATCH when the response does not
** answer the query, or another negative dns_shim_status.  No callback runs
** unless the response matches and parsed fully.
**
** The checks, in order: the arguments; the 12-byte header; QR; the ID (so
** that a spoofed datagram with another ID costs the least work); the whole
** message (a malformed response whose ID matches gets its malformation
** status, not DNS_SHIM_ERR_MISMATCH); then exactly one question, its name,
** type and class; then the COOKIE when cookie_client is given.  An error
** response without a question (some servers answer FORMERR or NOTIMP so)
** is therefore a mismatch: read it, if you want to, with dns_shim_process.
**
** What it does not check: the address and port the response came from (the
** socket's job), TSIG, DNSSEC.
**
** @returns DNS_SHIM_OK DNS_SHIM_ERR_NULL_BUFFER DNS_SHIM_ERR_BAD_LENGTH DNS_SHIM_ERR_SHORT_HEADER
** @returns DNS_SHIM_ERR_TRUNCATED DNS_SHIM_ERR_TRAILING_DATA DNS_SHIM_ERR_BAD_NAME DNS_SHIM_ERR_BAD_RDATA
** @returns DNS_SHIM_ERR_NOT_RESPONSE DNS_SHIM_ERR_BAD_EDNS DNS_SHIM_ERR_FORMAT DNS_SHIM_ERR_CALLBACK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the query is NULL, its struct_size
**   is not one this library knows, its flags have bits other than
**   DNS_SHIM_MATCH_CASE, or its qname is NULL or not a name (the syntax is
**   checked once the runtime runs, still before the message); or the
**   callbacks set is not NULL and its struct_size is not one this library
**   knows, or its sections mask has unknown bits.
** @returns DNS_SHIM_ERR_NO_MEMORY DNS_SHIM_ERR_INIT DNS_SHIM_ERR_INTERNAL
** @returns DNS_SHIM_ERR_MISMATCH
** @example reply_check.c
*/
DNS_SHIM_API int32_t dns_shim_process_reply(const uint8_t *dns_response, int32_t response_len,
                                            const dns_shim_query *query,
                                            const dns_shim_callbacks *callbacks);

/*
** dns_shim_init: start the embedded runtime now rather than on the first
** call that needs it.  Optional; safe to call more than once, from any
** thread, at once too: with parallelism above 1 it starts every interpreter
** of the pool, each thread those no other has started, waiting only for
** starts.  Returns DNS_SHIM_OK, DNS_SHIM_ERR_INIT (the reason is logged),
** or DNS_SHIM_ERR_NO_MEMORY when the host's allocator refused the runtime
** memory while it started (dns_shim_set_allocator).
**
** It first asks whether the parse service (dnsshimd(8)) answers, waiting
** at most 2 seconds: when it does, it returns DNS_SHIM_OK and starts
** nothing, since the calls parse there.  When none answers it starts the
** runtime as above, or, with DNS_SHIM_SERVICE_FALLBACK=no, returns
** DNS_SHIM_ERR_INIT with why.
**
** @returns DNS_SHIM_OK DNS_SHIM_ERR_INIT
** @returns DNS_SHIM_ERR_NO_MEMORY: the host's allocator refused the
**   runtime memory while it started (see dns_shim_set_allocator).
** @example startup.c
*/
DNS_SHIM_API int32_t dns_shim_init(void);

/*
** dns_shim_strerror: a short English description of a status.  Returns
** static text, never NULL, also for codes this library does not know.
** Never starts the runtime.
**
** @example per_call.c
*/
DNS_SHIM_API const char *dns_shim_strerror(int32_t status);

/*
** dns_shim_version: the library's version, "MAJOR.MINOR.PATCH", followed by
** the CPython it embeds, e.g. "1.3.0 (CPython 3.11)".  Static text.  Never
** starts the runtime.  A library embeds one CPython minor version: pointed
** at another (DNS_SHIM_PYTHON), it refuses to start with DNS_SHIM_ERR_INIT
** and a message that names both.
**
** @example startup.c
*/
DNS_SHIM_API const char *dns_shim_version(void);

/*
** Log levels, the syslog severities of the same names.
*/
typedef enum dns_shim_log_level {
    DNS_SHIM_LOG_ERROR = 3,   /* why the runtime did not start (one line:
                              ** what was tried and the fix); an internal
                              ** error (with its Python traceback) */
    DNS_SHIM_LOG_WARNING = 4, /* a Python warning raised inside the library;
                              ** the runtime runs on another installation
                              ** or patch release of its CPython minor
                              ** version than it was built with (it goes
                              ** on); a parse service that is there but
                              ** not used (the first fallback, once) */
    DNS_SHIM_LOG_INFO = 6,    /* once started: what it runs on, each part
                              ** with where it comes from; no parse
                              ** service (the first fallback, once) */
    DNS_SHIM_LOG_DEBUG = 7    /* the traceback behind a start-up failure */
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
** failures, internal errors with their traceback, in an interpreter the
** library started itself, Python's warnings and unraisable exceptions, and
** the one line that says the parse service is not used (dnsshimd(8)).
** A handler gets every level.  NULL restores the default: errors and
** warnings to stderr, each message on its own line, prefixed "dnsshim: "
** and flushed at once; info and debug messages are dropped.  When it
** returns, every call of the handler it replaced that had started has
** returned, and none starts after: the old ctx may be freed then (it waits
** for those calls).  Called from within a handler it does not wait (it
** would wait for itself): the new handler takes the messages logged after
** it returns, and calls of the old one on other threads may still be
** running.  Never starts the runtime.
**
** @example startup.c
*/
DNS_SHIM_API void dns_shim_set_log_handler(dns_shim_log_handler handler, void *ctx);

/*
** dns_shim_last_error (1.2): why the last call on this thread failed, in
** words, the way dlerror() and sqlite3_errmsg() say it: the status's name,
** then what was wrong, where and what was expected, e.g.
**
**   "DNS_SHIM_ERR_BAD_NAME: BadPointer: ... (at offset 43)"
**   "DNS_SHIM_ERR_MISMATCH: ID 4660, the query's is 39321 (at offset 0)"
**   "DNS_SHIM_ERR_BAD_ARGUMENT: the query's qname is NULL"
**   "DNS_SHIM_ERR_CALLBACK: on_a returned 1 for record 0 of the answer
**    section (www.example.com, type 1)"
**   "DNS_SHIM_ERR_INIT: cannot start: dnspython is not installed for ..."
**
** the same detail the Python API's exception carries for the same input.
** process_dns_response, dns_shim_process, dns_shim_process_reply,
** dns_shim_register_callbacks, dns_shim_init, dns_shim_set_allocator,
** dns_shim_set_memory_limit and dns_shim_set_parallelism set it for the
** calling thread: "" after a call that returned DNS_SHIM_OK, the reason
** after one that failed; the other functions leave it as it is.  What a callback's own calls into the library
** set is replaced when the call that made the callback returns: it says
** that call's outcome.  Returns thread-local text, never NULL,
** NUL-terminated UTF-8 (at most 2047 octets, cut before the first character
** that does not fit whole), valid until this thread's next call of one of
** those eight; copy it to keep it.  Never starts the runtime.  For people
** and logs, not to be parsed: the status is what a program decides on.
**
** @example per_call.c
*/
DNS_SHIM_API const char *dns_shim_last_error(void);

/*
** The host's allocator (1.2), shaped like CPython's PyMemAllocatorEx: the
** memory the embedded runtime takes comes from these four functions, each
** called with ctx.  calloc may be NULL (malloc, then the block zeroed); the
** others are required.  They are called from any thread that calls the
** library, and during start-up: they must be thread-safe, and must not call
** back into the library.
*/
typedef struct dns_shim_allocator {
    uint32_t struct_size;          /* sizeof(dns_shim_allocator) */
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr);
} dns_shim_allocator;

/*
** dns_shim_set_allocator (1.2): where the embedded runtime's memory comes
** from, for an interpreter the library starts itself.  Call it before the
** runtime starts (before dns_shim_init or the first call that parses):
** CPython's raw and general-purpose allocations, the 1 MiB arenas of its
** small-object allocator (asked for zeroed, with calloc, as CPython's own
** arenas come), and the structs handed to callbacks, then go to the host's
** functions (NULL: libc's, the default).  What still comes from libc's
** malloc: some of CPython's own start-up allocations (ten on CPython 3.11,
** up to sixteen on 3.13: its runtime locks and the strings of its path
** configuration, which it keeps out of any allocator a program sets, on
** purpose), and what the C library and
** the dynamic loader allocate for themselves (tzset reading /etc/localtime,
** qsort, and, in the shared library and the bundle, which load the runtime
** from files: dlopen of its compiled modules, opendir for each directory an
** import lists, stdio).
** The runtime imports every module a parse needs when it starts: no parse
** allocates anything around the host.
**
** A block the host's functions refuse (NULL) while the runtime starts is
** taken from libc's malloc instead, so that the process goes on (CPython
** ends a process on an allocation that fails before its exception types
** exist), and the start fails: that call and every later one return
** DNS_SHIM_ERR_NO_MEMORY, with how many were refused in the reason.  A
** block refused during a parse fails that call with DNS_SHIM_ERR_NO_MEMORY
** (nothing is logged), and the next call is parsed as if it had never
** come.
**
** Returns DNS_SHIM_OK, or DNS_SHIM_ERR_BAD_ARGUMENT (changing nothing) for
** an unknown struct_size, a missing function, or a call once the runtime has
** started, the interpreter of a Python program the library is loaded into
** included (that program's allocator is its own).
**
** @returns DNS_SHIM_OK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the allocator's struct_size is not
**   one this library knows, or its malloc, realloc or free is NULL; or the
**   runtime has started (the interpreter of a Python program the library is
**   loaded into included).  Nothing is changed.
** @example startup.c
*/
DNS_SHIM_API int32_t dns_shim_set_allocator(const dns_shim_allocator *allocator);

/*
** dns_shim_set_memory_limit (1.2): a ceiling, in bytes, on what the
** embedded runtime holds (its start-up included), at any time; 0 is none,
** the default.  While a message is parsed under a limit, an allocation that
** would take the runtime above it is refused: that call fails with
** DNS_SHIM_ERR_NO_MEMORY, calls no callback, and gives back what it took
** before it returns, and the library goes on: the next message is parsed
** as if the failed one had never come.  The failed call's parse may go up
** to 1 MiB past the limit while it unwinds, and its small objects (512
** bytes or less) are let through up to there rather than refused: CPython
** 3.12 and 3.13 crash later on some of them refused.  After a refused call the
** runtime holds at most 64 KiB more than before it, or, when it held
** less than its limit by more than 1 MiB, at most 1 MiB and 64 KiB more
** and never more than the limit and 64 KiB: CPython keeps one wholly free
** 1 MiB arena of its small-object allocator for the next parse, which the
** library lets it take only within the limit.  So a budget of what the
** runtime holds once started plus the largest message's needs holds for
** good, whatever is refused: the runtime imports every parser module it
** has when it starts (about 1 MiB), so a parse never imports one, and a
** refused parse leaves nothing that the next one would add to.  A call made while the runtime holds its
** limit or more is refused before it parses.  The c-ares layer
** (libdnsshim_ares), which starts in this runtime at its first call and
** imports its own modules then, is start-up too: the limit makes room for
** what that start adds, so that a budget made with libdnsshim alone holds
** with the layer.  Start-up itself is never
** refused (CPython cannot start on memory it is refused): with a limit
** below what the runtime holds once started, the first call starts the
** runtime and fails with DNS_SHIM_ERR_NO_MEMORY, and a call once the limit
** is raised parses.
**
** The runtime's memory is counted from its start whatever the host set, in
** every build (the raw domain and the arenas, through a size header: a few
** instructions an allocation).  Returns DNS_SHIM_OK, or
** DNS_SHIM_ERR_BAD_ARGUMENT for a limit other than 0 once the runtime is the
** interpreter of a Python program the library is loaded into (that
** program's memory is its own; a limit set before is dropped there, with a
** warning in the log).
**
** @returns DNS_SHIM_OK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the limit is not 0 and the runtime is
**   the interpreter of a Python program the library is loaded into.
** @example startup.c
*/
DNS_SHIM_API int32_t dns_shim_set_memory_limit(size_t bytes);

/*
** dns_shim_set_parallelism (1.3): up to n calls parse at once, each in a
** private interpreter of its own, so that parsing scales with a program's
** threads.  0 and 1 are one interpreter, the default: every call takes its lock while
** it parses (callbacks run without it).  With n > 1 each interpreter is an
** instance of the worker image, libdnsshim_worker.so: pip install . puts
** it beside the library, a prefix install and the Debian packages in the
** libraries' private folder, dnsshim/ beside them.  They build it where
** Debian's libpython3.X-dev and libffi-dev are installed (the image embeds
** Debian's CPython, whichever CPython the library embeds), from cffi's
** source (downloaded once); where they cannot, they leave the reason in
** libdnsshim_worker.unavailable there, which the refusal quotes.  The
** bundle has none.
** Each instance has its own CPython, dnspython and cffi's backend, nothing
** shared with another instance, with the library's own interpreter or with
** a Python program the library is loaded into.  No Python file is opened
** by an instance and no symbol of one is visible to the program.
**
** The interpreters start when calls need them (a call that finds every
** running one busy starts another, up to n), or all at once with
** dns_shim_init.  Each costs about 15 MiB resident and 40 ms to start on
** x86-64; a server sets n to the number of threads that parse at once, at
** most its cores.  A call
** that finds n busy waits for one.  Whichever interpreter parses, a message
** gives the same status, callbacks and dns_shim_last_error (which stays the
** calling thread's).  Callbacks run in the calling thread; a call a callback
** makes into the library goes to the same interpreter.  The log handler,
** the allocator and the memory limit are the program's, for the whole pool:
** the limit counts every interpreter's memory together, so it must leave
** room for n started interpreters.  An interpreter that cannot start is
** reported (DNS_SHIM_ERR_INIT; the log's first line names the image and
** the fix) and never used; the others serve.
**
** It may be called at any time, from any thread.  Raising n takes effect
** for the next call; lowering it stops handing calls to the interpreters
** above n, which finish the calls they have and then stay idle, keeping
** their memory until the process exits (an interpreter cannot be unloaded)
** to serve again if n is raised.  The environment variable
** DNS_SHIM_PARALLELISM sets n for programs that cannot be changed: it is
** read once, at the first call that parses or starts the library, unless
** the program called dns_shim_set_parallelism before; a value this library
** cannot take is logged as a warning and n stays 1.  After fork() the child
** keeps the interpreters that were idle and the one the forking thread
** held.  libdnsshim_ares's parsers (ares_parse_*_reply, ares_dns_parse)
** parse in the same pool: each call takes an interpreter for the time
** dnspython reads the message, and the copy into c-ares's structures runs
** in the calling thread.  (A firmware object's copies carry libdnsshim
** alone.)
**
** The firmware object has no image to load: python -m shim firmware
** --parallelism N links N more interpreters into it, each a copy of the
** runtime with its names its own, and n may then be up to N.  Each adds the
** runtime's size to the object and to the program that links it.
**
** Returns DNS_SHIM_OK; DNS_SHIM_ERR_BAD_ARGUMENT for n above
** DNS_SHIM_PARALLELISM_MAX; DNS_SHIM_ERR_UNSUPPORTED for n > 1 where the
** installation has no worker image (the bundle, an installation that could
** not build it, a firmware object built without --parallelism), or for n
** above a firmware object's N; n is then unchanged.
**
** @returns DNS_SHIM_OK
** @returns DNS_SHIM_ERR_BAD_ARGUMENT: the parallelism asked for is above
**   DNS_SHIM_PARALLELISM_MAX (64); n is unchanged.
** @returns DNS_SHIM_ERR_UNSUPPORTED
** @example parallel.c
*/
#define DNS_SHIM_PARALLELISM_MAX 64
DNS_SHIM_API int32_t dns_shim_set_parallelism(uint32_t n);

/*
** VERSIONING
**
**   The SONAME is libdnsshim.so.MAJOR: within a major version nothing is
**   removed or changed.  Each minor release adds a symbol-version node,
**   inheriting the one before: DNSSHIM_1.0 (every function of 1.0),
**   DNSSHIM_1.1 (dns_shim_process_reply), DNSSHIM_1.2 (dns_shim_last_error,
**   dns_shim_set_allocator, dns_shim_set_memory_limit), DNSSHIM_1.3
**   (dns_shim_set_parallelism).
**   A program built against this header records, per function, the node it
**   needs.
**
**   A program built against an older header runs unchanged against a newer
**   library: the same functions, the same structs (struct_size says which
**   release's they are, and the library reads no further), the same
**   results, but for what each release says it reclassified.  1.1: malformed
**   OPT option data is DNS_SHIM_ERR_BAD_EDNS where 1.0 said
**   DNS_SHIM_ERR_BAD_RDATA (or, wrongly, DNS_SHIM_ERR_BAD_NAME for option
**   data cut short with another option after it).  1.2: no status changed.
**
**   A program that calls a function of a later release needs that release.
**   Against a library with version nodes that lacks the node (DNSSHIM_1.2,
**   say) the dynamic linker refuses to start it ("version `DNSSHIM_1.2' not
**   found").  The 1.0 library has no version nodes: there the linker only
**   warns ("no version information available") and fails at the first call
**   of the missing function, unless the program is linked with -Wl,-z,now,
**   which makes it refuse to start ("undefined symbol:
**   dns_shim_process_reply, version DNSSHIM_1.1").  To refuse with your own
**   message, check before the first call of a later release's function,
**   with 1.0's functions only:
**
**     int major = 0, minor = 0;
**     if (sscanf(dns_shim_version(), "%d.%d", &major, &minor) != 2 ||
**         major != DNS_SHIM_VERSION_MAJOR || minor < DNS_SHIM_VERSION_MINOR)
**         refuse: the library is older than this header
*/

DNS_SHIM_END_DECLS

#endif /* DNS_SHIM_H */
