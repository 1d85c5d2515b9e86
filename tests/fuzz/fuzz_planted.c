/*
** fuzz_planted: a harness with defects planted on purpose, compiled and
** run as the others are (tests/fuzz/libfuzzer.py), to show that
** tests/test_libfuzzer.py fails on each kind of report and prints the
** input: its first octet chooses
**   'o'  the library given the message one octet longer than its block
**        (AddressSanitizer: heap-buffer-overflow),
**   'l'  a block lost (LeakSanitizer),
**   'u'  a signed int overflow (UndefinedBehaviorSanitizer),
**   'c'  a harness check failing (FUZZ_CHECK: abort);
** anything else is fine.  It is never part of a long run.
*/
#include <limits.h>

#include "dns_shim.h"
#include "fuzz_common.h"

void *volatile fuzz_planted_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0]) {
    case 'o': {
        uint8_t *buf = malloc(size);
        memcpy(buf, data, size);
        process_dns_response(buf, (int32_t)size + 1);
        free(buf);
        break;
    }
    case 'l':
        fuzz_planted_sink = malloc(size + 40);
        fuzz_planted_sink = NULL;
        break;
    case 'u': {
        volatile int big = INT_MAX - 1;
        big += (int)size;
        fuzz_planted_sink = (void *)(intptr_t)big;
        break;
    }
    case 'c':
        FUZZ_CHECK(size == 0, "the planted check, %zu octets", size);
        break;
    }
    return 0;
}
