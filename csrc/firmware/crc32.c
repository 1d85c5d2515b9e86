/*
** crc32.c: zlib's crc32() for binascii.crc32 (Debian's libpython is
** built with USE_ZLIB_CRC32), so that a program linking the firmware object
** needs no -lz.  Local to the object after localisation, so a program's own
** zlib is unaffected.  Table-driven, reflected CRC-32 (0xEDB88320), as zlib.
*/
#include <stddef.h>

static unsigned int crc_table[256];
static int crc_ready = 0;

unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len)
    __attribute__((visibility("hidden")));

unsigned long crc32(unsigned long crc, const unsigned char *buf, unsigned int len)
{
    unsigned int c, n, k;
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
        for (n = 0; n < 256; n++) {
            c = n;
            for (k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            crc_table[n] = c; /* same values from every thread: benign */
        }
        __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
    }
    if (buf == NULL)
        return 0;
    c = (unsigned int)crc ^ 0xFFFFFFFFu;
    while (len--)
        c = crc_table[(c ^ *buf++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}
