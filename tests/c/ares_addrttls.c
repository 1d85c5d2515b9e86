/*
** ares_addrttls: ares_parse_a_reply and ares_parse_aaaa_reply with every
** kind of addrttls capacity, each array in a heap block of exactly that
** many entries (none for 0 and below), run under valgrind by the tests: the
** library writes min(capacity, addresses) entries and no further.
**
**   ares_addrttls A_FILE AAAA_FILE
**
** Prints "<a|aaaa> capacity C: rc=R naddrttls=N" per call.
*/
#include <ares.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_util.h"

static const int capacities[] = {INT_MAX, 3, 2, 1, 0, -1, -2, INT_MIN + 1, INT_MIN};

int main(int argc, char **argv)
{
    long alen = 0, aaaalen = 0;
    unsigned char *a, *aaaa;
    size_t i;
    if (argc != 3)
        return 2;
    a = read_message(argv[1], 0, &alen);
    aaaa = read_message(argv[2], 0, &aaaalen);
    if (a == NULL || aaaa == NULL)
        return 1;
    for (i = 0; i < sizeof capacities / sizeof capacities[0]; i++) {
        int cap = capacities[i], n = cap, rc;
        /* INT_MAX: as many as there are, 2 (the library must not trust the
        ** capacity beyond the addresses it has). */
        size_t entries = cap == INT_MAX ? 2 : cap > 0 ? (size_t)cap : 0;
        struct ares_addrttl *t4 = malloc(entries * sizeof *t4 + (entries == 0));
        struct ares_addr6ttl *t6 = malloc(entries * sizeof *t6 + (entries == 0));
        rc = ares_parse_a_reply(a, (int)alen, NULL, t4, &n);
        printf("a capacity %d: rc=%d naddrttls=%d\n", cap, rc, n);
        n = cap;
        rc = ares_parse_aaaa_reply(aaaa, (int)aaaalen, NULL, t6, &n);
        printf("aaaa capacity %d: rc=%d naddrttls=%d\n", cap, rc, n);
        free(t4);
        free(t6);
    }
    free(a);
    free(aaaa);
    return 0;
}
