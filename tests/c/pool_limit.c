/*
** pool_limit: the memory limit over the library's pool of interpreters.
**
**   pool_limit LIBDNSSHIM.so STARTED LIMIT FILE
**
** Loads the library, sets parallelism 2 and starts STARTED interpreters (1:
** one call, which starts one; 2: dns_shim_init, which starts both), then sets
** the memory limit to LIMIT bytes and parses FILE once: prints the call's
** status and its detail.  The limit is the pool's: what the second
** interpreter holds counts, so a limit one interpreter parses under refuses
** the call once two run.
*/
#define _GNU_SOURCE
#include "dns_shim.h"
#include "tool_util.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static void *need(void *handle, const char *name)
{
    void *p = dlsym(handle, name);
    if (!p) {
        fprintf(stderr, "FAIL no %s\n", name);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: pool_limit LIB.so STARTED LIMIT FILE\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    int32_t (*set_parallelism)(uint32_t) = need(lib, "dns_shim_set_parallelism");
    int32_t (*init)(void) = need(lib, "dns_shim_init");
    int32_t (*set_limit)(size_t) = need(lib, "dns_shim_set_memory_limit");
    int32_t (*process)(uint8_t *, int32_t) = need(lib, "process_dns_response");
    const char *(*last_error)(void) = need(lib, "dns_shim_last_error");
    long len = 0;
    uint8_t *message = read_message(argv[4], 0, &len);
    if (!message) {
        fprintf(stderr, "FAIL cannot read %s\n", argv[4]);
        return 1;
    }
    int32_t rc = set_parallelism(2);
    if (rc == DNS_SHIM_OK)
        rc = atoi(argv[2]) == 2 ? init() : process(message, (int32_t)len);
    if (rc != DNS_SHIM_OK) {
        fprintf(stderr, "FAIL starting: %s\n", last_error());
        return 1;
    }
    if (set_limit((size_t)strtoull(argv[3], NULL, 10)) != DNS_SHIM_OK) {
        fprintf(stderr, "FAIL the limit: %s\n", last_error());
        return 1;
    }
    rc = process(message, (int32_t)len);
    printf("%" PRId32 " %s\n", rc, last_error());
    free(message);
    return 0;
}
