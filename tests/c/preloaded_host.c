/*
** preloaded_host: a program written for c-ares alone (linked with -lcares,
** nothing of this project's), as every program on a machine is when
** /etc/ld.so.preload names libdnsshim_ares.
**
**   preloaded_host FILE
**       ares_parse_a_reply on FILE: "status N", an "address A" line per
**       address, "parser OBJECT" (the file name of the object whose
**       ares_parse_a_reply the program called: libdnsshim_ares.so.1 when
**       the preload took, libcares.so.2 when it did not) and "python N"
**       (Py_IsInitialized() of the libpython in the process, "python none"
**       when there is none: 1 shows an interpreter ran in this process).
*/
#define _GNU_SOURCE
#include <ares.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_util.h"

int main(int argc, char **argv)
{
    unsigned char *buf;
    long len = 0;
    struct hostent *host = NULL;
    struct ares_addrttl ttls[8];
    int n = 8, status, i;
    Dl_info where;
    int (*initialized)(void);
    char text[INET_ADDRSTRLEN];

    if (argc != 2 || (buf = read_message(argv[1], 0, &len)) == NULL) {
        fprintf(stderr, "usage: preloaded_host FILE\n");
        return 2;
    }
    if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
        return 1;
    status = ares_parse_a_reply(buf, (int)len, &host, ttls, &n);
    printf("status %d\n", status);
    for (i = 0; status == ARES_SUCCESS && i < n; i++)
        printf("address %s\n", inet_ntop(AF_INET, &ttls[i].ipaddr, text, sizeof text));
    if (host != NULL)
        ares_free_hostent(host);
    if (dladdr((void *)ares_parse_a_reply, &where) == 0 || where.dli_fname == NULL)
        return 1;
    printf("parser %s\n", strrchr(where.dli_fname, '/') ? strrchr(where.dli_fname, '/') + 1
                                                         : where.dli_fname);
    *(void **)&initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    if (initialized == NULL)
        printf("python none\n");
    else
        printf("python %d\n", initialized());
    ares_library_cleanup();
    free(buf);
    return 0;
}
