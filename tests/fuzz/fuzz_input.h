/*
** fuzz_input.h: the fuzzed input read as a stream of choices (the plan
** harnesses': fuzz_plan.c, fuzz_ares_plan.c), and the blocks one input's
** plan is built in, each allocated at exactly its size (ASan sees a read
** past one) and all freed when the input is done.
*/
#ifndef DNSSHIM_FUZZ_INPUT_H
#define DNSSHIM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_input {
    const uint8_t *p;
    size_t n;
} fuzz_input;

/* The next octet, 0 once the input is used up. */
static uint8_t fuzz_u8(fuzz_input *in)
{
    uint8_t b = 0;
    if (in->n > 0) {
        b = in->p[0];
        in->p++;
        in->n--;
    }
    return b;
}

__attribute__((unused)) static uint16_t fuzz_u16(fuzz_input *in)
{
    uint16_t hi = fuzz_u8(in);
    return (uint16_t)(hi << 8 | fuzz_u8(in));
}

__attribute__((unused)) static uint32_t fuzz_u32(fuzz_input *in)
{
    uint32_t hi = fuzz_u16(in);
    return hi << 16 | fuzz_u16(in);
}

#define FUZZ_BLOCKS_MAX 4096
static void *fuzz_blocks[FUZZ_BLOCKS_MAX];
static size_t fuzz_nblocks;

/* A block of exactly n octets (1 for 0), freed by fuzz_free_blocks; NULL
** once the input has made too many (the plan is then cut short). */
static void *fuzz_block(size_t n)
{
    void *p;
    if (fuzz_nblocks == FUZZ_BLOCKS_MAX)
        return NULL;
    p = calloc(1, n ? n : 1);
    if (p == NULL)
        abort();
    fuzz_blocks[fuzz_nblocks++] = p;
    return p;
}

__attribute__((unused)) static void fuzz_free_blocks(void)
{
    while (fuzz_nblocks > 0)
        free(fuzz_blocks[--fuzz_nblocks]);
}

/* A string the plan points at, in a block of its own: NULL (choice 0); a
** NUL-terminated text of 0 to 1100 octets, in a block of its length and
** the NUL (choices 1 to 249: short texts most often, some past 1024); one
** of exactly 1025 octets and no NUL (choice 250 and above).  *len gets
** strlen, or 1025 for the unterminated one. */
__attribute__((unused)) static char *fuzz_text(fuzz_input *in, size_t *len)
{
    uint8_t choice = fuzz_u8(in);
    size_t n, i;
    char *s;
    if (choice == 0) {
        *len = 0;
        return NULL;
    }
    if (choice >= 250) {
        s = fuzz_block(1025);
        if (s != NULL)
            memset(s, 'u', 1025);
        *len = 1025;
        return s;
    }
    n = choice < 200 ? choice % 40 : 1000 + (size_t)(choice - 200) * 2; /* 1000 to 1098 */
    s = fuzz_block(n + 1);
    if (s == NULL) {
        *len = 0;
        return NULL;
    }
    for (i = 0; i < n; i++) {
        uint8_t c = fuzz_u8(in);
        s[i] = (char)(c ? c : 'a');
    }
    s[n] = '\0';
    *len = n;
    return s;
}

/* A byte string's data and len: data NULL (choice 0); a len above a
** message's 65,535 over a one-octet block (choice 1); else len 0 to 299
** octets in a block of len + 1 whose last octet is the NUL (choices 2 to
** 229) or not (230 and above).  Returns whether data[len] is a NUL within
** the block (the plan is good); the block holds what the input says. */
__attribute__((unused)) static int fuzz_bytes(fuzz_input *in, const uint8_t **data, size_t *len)
{
    uint8_t choice = fuzz_u8(in);
    uint8_t *b;
    size_t n, i;
    if (choice == 0) {
        *data = NULL;
        *len = fuzz_u8(in);
        return 0;
    }
    if (choice == 1) {
        *data = fuzz_block(1);
        *len = 65536 + (size_t)fuzz_u16(in) * 1000;
        return 0;
    }
    n = (choice * 7u + fuzz_u8(in)) % 300;
    b = fuzz_block(n + 1);
    if (b == NULL) {
        *data = NULL;
        *len = 0;
        return 0;
    }
    for (i = 0; i < n; i++)
        b[i] = fuzz_u8(in);
    b[n] = choice < 230 ? 0 : (uint8_t)(1 + fuzz_u8(in) % 255);
    *data = b;
    *len = n;
    return b[n] == 0;
}

#endif
