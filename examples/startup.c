/*
 * startup.c: what a program does once, before its first reply: check the
 * library is not older than the header it was built with, route the
 * library's diagnostics and memory to the program's own, bound that memory,
 * and start the runtime now rather than on the first message.
 *
 *   ./startup
 */
#include <stdio.h>
#include <stdlib.h>
#include <dns_shim.h>

static void log_to_stdout(void *ctx, int32_t level, const char *message)
{
    (void)ctx;
    if (level <= DNS_SHIM_LOG_WARNING) /* errors and warnings only */
        printf("dnsshim says: %s\n", message);
}

/* The host's allocator: here libc's, counting the blocks it hands out. */
static void *count_malloc(void *ctx, size_t size)
{
    ++*(unsigned long *)ctx;
    return malloc(size);
}

static void *count_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return realloc(ptr, size);
}

static void count_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

int main(void)
{
    int major = 0, minor = 0;
    if (sscanf(dns_shim_version(), "%d.%d", &major, &minor) != 2 ||
        major != DNS_SHIM_VERSION_MAJOR || minor < DNS_SHIM_VERSION_MINOR) {
        printf("the library %s is older than this header\n",
               dns_shim_version());
        return 1;
    }
    dns_shim_set_log_handler(log_to_stdout, NULL);

    static unsigned long blocks;
    dns_shim_allocator allocator = {sizeof allocator, &blocks, count_malloc,
                                    NULL, count_realloc, count_free};
    /* before the runtime starts */
    if (dns_shim_set_allocator(&allocator) != DNS_SHIM_OK)
        printf("allocator refused: %s\n", dns_shim_last_error());
    dns_shim_set_memory_limit((size_t)64 << 20); /* 64 MiB at most */

    int32_t status = dns_shim_init();
    if (status != DNS_SHIM_OK) {
        printf("cannot start: %s\n", dns_shim_strerror(status));
        return 1;
    }
    printf("started, the memory from the program's allocator: %s\n",
           blocks ? "yes" : "no");
    return 0;
}
