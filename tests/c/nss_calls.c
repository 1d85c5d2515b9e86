/*
** nss_calls: a glibc NSS hosts module's entry points called as glibc calls
** them, and the public calls that reach them, with what each returned:
** the NSS status, errno, *h_errnop and the thread's h_errno, and the
** result.  It links no library of this project: "dns" is glibc's own module
** (its _nss_dns_* functions, in libc.so.6 since glibc 2.34), any other
** module libnss_MODULE.so.2, found as glibc's NSS finds it.  The test runs
** the same lines with "dns" and "dnsshim" and compares.
**
**   nss_calls < LINES
**
** One call a line, words apart:
**
**   name4 MODULE NAME BUFLEN             _nss_MODULE_gethostbyname4_r
**   name3 MODULE NAME AF BUFLEN          _nss_MODULE_gethostbyname3_r
**   name2 MODULE NAME AF BUFLEN          _nss_MODULE_gethostbyname2_r
**   name MODULE NAME BUFLEN              _nss_MODULE_gethostbyname_r
**   addr2 MODULE ADDR AF LEN BUFLEN      _nss_MODULE_gethostbyaddr2_r
**   addr MODULE ADDR AF LEN BUFLEN       _nss_MODULE_gethostbyaddr_r
**   api_name2 NAME AF BUFLEN             gethostbyname2_r (nsswitch.conf's)
**   api_addr ADDR AF LEN BUFLEN          gethostbyaddr_r (nsswitch.conf's)
**   getaddrinfo NAME AF                  getaddrinfo, SOCK_STREAM
**   server ADDR                          res_init, then the thread's _res
**                                        given the IPv4 ADDR as its one name
**                                        server, as a program sets its own
**                                        (prints res_init's value)
**   limit BYTES                          libdnsshim.so.1's
**                                        dns_shim_set_memory_limit, the
**                                        library the module loads (the
**                                        same object: one soname)
**
** AF is inet, inet6, unspec or a number; ADDR an address's text, its
** octets (4 or 16) at the start of 32 zero octets, so that a LEN past the
** address reads zeros.  BUFLEN is the caller's buffer, allocated to that
** size with 64 guard octets after it (an entry point that writes past its
** buffer is said: "OVERRUN").
**
** Before each call errno is EDOM, h_errno and *h_errnop -7 and the TTL
** 0x7fffffff (as nscd sets it), so that a value the call did not write
** shows as it was.  errnop is &errno, as glibc passes it; h_errnop a
** variable of its own, so that *h_errnop and the thread's h_errno (which
** callers such as Python's gethostbyaddr read) are seen apart.  Each line
** is printed back, then " -> " and what the call gave.  Exit status 0, 2
** for a line it cannot read.
*/
#define _GNU_SOURCE 1
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <resolv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define GUARD 64

typedef enum nss_status (*name4_fn)(const char *, struct gaih_addrtuple **, char *, size_t,
                                    int *, int *, int32_t *);
typedef enum nss_status (*name3_fn)(const char *, int, struct hostent *, char *, size_t, int *,
                                    int *, int32_t *, char **);
typedef enum nss_status (*name2_fn)(const char *, int, struct hostent *, char *, size_t, int *,
                                    int *);
typedef enum nss_status (*name_fn)(const char *, struct hostent *, char *, size_t, int *,
                                   int *);
typedef enum nss_status (*addr2_fn)(const void *, socklen_t, int, struct hostent *, char *,
                                    size_t, int *, int *, int32_t *);
typedef enum nss_status (*addr_fn)(const void *, socklen_t, int, struct hostent *, char *,
                                   size_t, int *, int *);

static void *entry(const char *module, const char *function)
{
    char symbol[128], library[128];
    void *handle = RTLD_DEFAULT, *fn;
    snprintf(symbol, sizeof symbol, "_nss_%s_%s", module, function);
    if (strcmp(module, "dns") != 0) {
        snprintf(library, sizeof library, "libnss_%s.so.2", module);
        handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) {
            printf("dlopen: %s\n", dlerror());
            exit(2);
        }
    }
    fn = dlsym(handle, symbol);
    if (fn == NULL) {
        printf("dlsym %s: %s\n", symbol, dlerror());
        exit(2);
    }
    return fn;
}

static int family(const char *text)
{
    if (strcmp(text, "inet") == 0)
        return AF_INET;
    if (strcmp(text, "inet6") == 0)
        return AF_INET6;
    if (strcmp(text, "unspec") == 0)
        return AF_UNSPEC;
    return atoi(text);
}

static const char *status_name(enum nss_status status)
{
    switch (status) {
    case NSS_STATUS_SUCCESS:
        return "SUCCESS";
    case NSS_STATUS_NOTFOUND:
        return "NOTFOUND";
    case NSS_STATUS_TRYAGAIN:
        return "TRYAGAIN";
    case NSS_STATUS_UNAVAIL:
        return "UNAVAIL";
    case NSS_STATUS_RETURN:
        return "RETURN";
    default:
        return "?";
    }
}

static const char *errno_name(int e)
{
    const char *name = e == 0 ? "0" : strerrorname_np(e);
    return name != NULL ? name : "?";
}

/* A caller's buffer: buflen octets, then the guard. */
static char *buffer_new(size_t buflen)
{
    char *b = malloc(buflen + GUARD);
    if (b == NULL) {
        printf("out of memory\n");
        exit(2);
    }
    memset(b, 0x5a, buflen + GUARD);
    return b;
}

static void buffer_check(const char *b, size_t buflen)
{
    size_t i;
    for (i = 0; i < GUARD; i++)
        if ((unsigned char)b[buflen + i] != 0x5a) {
            printf(" OVERRUN");
            return;
        }
}

static void print_address(int af, const void *addr, int len)
{
    char text[INET6_ADDRSTRLEN];
    const unsigned char *octets = addr;
    int i;
    if ((af == AF_INET && len == 4) || (af == AF_INET6 && len == 16)) {
        inet_ntop(af, addr, text, sizeof text);
        printf("%s", text);
        return;
    }
    for (i = 0; i < len; i++)
        printf("%02x", octets[i]);
}

static void print_hostent(const struct hostent *h)
{
    int i;
    printf(" name=%s aliases=[", h->h_name);
    for (i = 0; h->h_aliases[i] != NULL; i++)
        printf("%s%s", i ? "," : "", h->h_aliases[i]);
    printf("] af=%d len=%d addrs=[", h->h_addrtype, h->h_length);
    for (i = 0; h->h_addr_list[i] != NULL; i++) {
        printf("%s", i ? "," : "");
        print_address(h->h_addrtype, h->h_addr_list[i], h->h_length);
    }
    printf("]");
}

static void print_outcome(enum nss_status status, int err, int herrnop, int herrno)
{
    printf(" -> %s errno=%s h_errnop=%d h_errno=%d", status_name(status), errno_name(err),
           herrnop, herrno);
}

/* The words of a line; returns how many. */
static int split(char *line, char **words, int max)
{
    int n = 0;
    char *save = NULL, *word;
    for (word = strtok_r(line, " \t\n", &save); word != NULL && n < max;
         word = strtok_r(NULL, " \t\n", &save))
        words[n++] = word;
    return n;
}

static void call(char **w, int n)
{
    struct hostent h, *result;
    unsigned char addr[32];
    char *buffer;
    size_t buflen;
    int herrnop = -7, err, rc;
    int32_t ttl = 0x7fffffff;
    enum nss_status status;

    if (strcmp(w[0], "name4") == 0 && n == 4) {
        struct gaih_addrtuple *pat = NULL, *t;
        name4_fn fn = (name4_fn)entry(w[1], "gethostbyname4_r");
        buflen = strtoul(w[3], NULL, 10);
        buffer = buffer_new(buflen);
        errno = EDOM;
        h_errno = -7;
        status = fn(w[2], &pat, buffer, buflen, &errno, &herrnop, &ttl);
        err = errno;
        print_outcome(status, err, herrnop, h_errno);
        if (status == NSS_STATUS_SUCCESS) {
            printf(" ttl=%d tuples=[", (int)ttl);
            for (t = pat; t != NULL; t = t->next) {
                printf("%s(%s ", t == pat ? "" : ",", t->family == AF_INET ? "inet" : "inet6");
                print_address(t->family, t->addr, t->family == AF_INET ? 4 : 16);
                printf(" %s)", t->name != NULL ? t->name : "-");
            }
            printf("]");
        }
        buffer_check(buffer, buflen);
        free(buffer);
    } else if ((strcmp(w[0], "name3") == 0 || strcmp(w[0], "name2") == 0) && n == 5) {
        char *canon = NULL;
        int three = w[0][4] == '3';
        buflen = strtoul(w[4], NULL, 10);
        buffer = buffer_new(buflen);
        memset(&h, 0, sizeof h);
        errno = EDOM;
        h_errno = -7;
        if (three)
            status = ((name3_fn)entry(w[1], "gethostbyname3_r"))(
                w[2], family(w[3]), &h, buffer, buflen, &errno, &herrnop, &ttl, &canon);
        else
            status = ((name2_fn)entry(w[1], "gethostbyname2_r"))(w[2], family(w[3]), &h, buffer,
                                                                 buflen, &errno, &herrnop);
        err = errno;
        print_outcome(status, err, herrnop, h_errno);
        if (status == NSS_STATUS_SUCCESS) {
            print_hostent(&h);
            if (three)
                printf(" ttl=%d canon=%s", (int)ttl, canon == h.h_name ? "h_name" : "other");
        }
        buffer_check(buffer, buflen);
        free(buffer);
    } else if (strcmp(w[0], "name") == 0 && n == 4) {
        name_fn fn = (name_fn)entry(w[1], "gethostbyname_r");
        buflen = strtoul(w[3], NULL, 10);
        buffer = buffer_new(buflen);
        memset(&h, 0, sizeof h);
        errno = EDOM;
        h_errno = -7;
        status = fn(w[2], &h, buffer, buflen, &errno, &herrnop);
        err = errno;
        print_outcome(status, err, herrnop, h_errno);
        if (status == NSS_STATUS_SUCCESS)
            print_hostent(&h);
        buffer_check(buffer, buflen);
        free(buffer);
    } else if ((strcmp(w[0], "addr2") == 0 || strcmp(w[0], "addr") == 0) && n == 6) {
        int two = w[0][4] == '2';
        memset(addr, 0, sizeof addr);
        if (inet_pton(strchr(w[2], ':') ? AF_INET6 : AF_INET, w[2], addr) != 1) {
            printf(" -> not an address\n");
            exit(2);
        }
        buflen = strtoul(w[5], NULL, 10);
        buffer = buffer_new(buflen);
        memset(&h, 0, sizeof h);
        errno = EDOM;
        h_errno = -7;
        if (two)
            status = ((addr2_fn)entry(w[1], "gethostbyaddr2_r"))(
                addr, (socklen_t)atoi(w[4]), family(w[3]), &h, buffer, buflen, &errno,
                &herrnop, &ttl);
        else
            status = ((addr_fn)entry(w[1], "gethostbyaddr_r"))(
                addr, (socklen_t)atoi(w[4]), family(w[3]), &h, buffer, buflen, &errno,
                &herrnop);
        err = errno;
        print_outcome(status, err, herrnop, h_errno);
        if (status == NSS_STATUS_SUCCESS) {
            print_hostent(&h);
            if (two)
                printf(" ttl=%d", (int)ttl);
        }
        buffer_check(buffer, buflen);
        free(buffer);
    } else if (strcmp(w[0], "api_name2") == 0 && n == 4) {
        buflen = strtoul(w[3], NULL, 10);
        buffer = buffer_new(buflen);
        errno = EDOM;
        h_errno = -7;
        result = NULL;
        rc = gethostbyname2_r(w[1], family(w[2]), &h, buffer, buflen, &result, &herrnop);
        err = errno;
        printf(" -> rc=%s errno=%s h_errnop=%d h_errno=%d result=%s", errno_name(rc),
               errno_name(err), herrnop, h_errno, result ? "yes" : "NULL");
        if (result != NULL)
            print_hostent(result);
        buffer_check(buffer, buflen);
        free(buffer);
    } else if (strcmp(w[0], "api_addr") == 0 && n == 5) {
        memset(addr, 0, sizeof addr);
        if (inet_pton(strchr(w[1], ':') ? AF_INET6 : AF_INET, w[1], addr) != 1) {
            printf(" -> not an address\n");
            exit(2);
        }
        buflen = strtoul(w[4], NULL, 10);
        buffer = buffer_new(buflen);
        errno = EDOM;
        h_errno = -7;
        result = NULL;
        rc = gethostbyaddr_r(addr, (socklen_t)atoi(w[3]), family(w[2]), &h, buffer, buflen,
                             &result, &herrnop);
        err = errno;
        printf(" -> rc=%s errno=%s h_errnop=%d h_errno=%d result=%s", errno_name(rc),
               errno_name(err), herrnop, h_errno, result ? "yes" : "NULL");
        if (result != NULL)
            print_hostent(result);
        buffer_check(buffer, buflen);
        free(buffer);
    } else if (strcmp(w[0], "getaddrinfo") == 0 && n == 3) {
        struct addrinfo hints, *res, *ai;
        int count = 0;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = family(w[2]);
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_CANONNAME;
        rc = getaddrinfo(w[1], NULL, &hints, &res);
        if (rc != 0) {
            printf(" -> error %d (%s)", rc, gai_strerror(rc));
        } else {
            for (ai = res; ai != NULL; ai = ai->ai_next)
                count++;
            printf(" -> %d canon=%s [", count, res->ai_canonname ? res->ai_canonname : "-");
            for (ai = res; ai != NULL; ai = ai->ai_next) {
                printf("%s", ai == res ? "" : ",");
                if (ai->ai_family == AF_INET)
                    print_address(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
                else
                    print_address(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr,
                                  16);
            }
            printf("]");
            freeaddrinfo(res);
        }
    } else if (strcmp(w[0], "server") == 0 && n == 2) {
        struct in_addr a;
        if (inet_pton(AF_INET, w[1], &a) != 1) {
            printf(" -> cannot read this line\n");
            exit(2);
        }
        printf(" -> %d", res_init());
        memset(&_res.nsaddr_list[0], 0, sizeof _res.nsaddr_list[0]);
        _res.nsaddr_list[0].sin_family = AF_INET;
        _res.nsaddr_list[0].sin_port = htons(53);
        _res.nsaddr_list[0].sin_addr = a;
        _res.nscount = 1;
    } else if (strcmp(w[0], "limit") == 0 && n == 2) {
        int32_t (*set_limit)(size_t);
        void *lib = dlopen("libdnsshim.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == NULL) {
            printf(" -> dlopen: %s\n", dlerror());
            exit(2);
        }
        *(void **)&set_limit = dlsym(lib, "dns_shim_set_memory_limit");
        if (set_limit == NULL) {
            printf(" -> dlsym: %s\n", dlerror());
            exit(2);
        }
        printf(" -> %d", (int)set_limit(strtoul(w[1], NULL, 10)));
    } else {
        printf(" -> cannot read this line\n");
        exit(2);
    }
    printf("\n");
}

int main(void)
{
    char line[1024], copy[1024];
    char *words[8];
    int n;
    while (fgets(line, sizeof line, stdin) != NULL) {
        memcpy(copy, line, sizeof copy);
        copy[strcspn(copy, "\n")] = '\0';
        n = split(line, words, 8);
        if (n == 0)
            continue;
        printf("%s", copy);
        fflush(stdout);
        call(words, n);
        fflush(stdout);
    }
    return 0;
}
