#include <stdint.h>
#include <string.h>
#include "utf8.h"

int cb_utf8_valid(const void *s, size_t n, size_t *bad)
{
    const unsigned char *p = s;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs eight bytes at a time */
        while (n - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ULL) break;
            i += 8;
        }
        if (i == n) break;
        unsigned c = p[i];
        size_t len;
        unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;      /* overlong */
            else if (c == 0xED) hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;      /* overlong */
            else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
        } else break;
        if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) break;
        size_t k = 2;
        while (k < len && p[i + k] >= 0x80 && p[i + k] <= 0xBF) k++;
        if (k < len) break;
        i += len;
    }
    if (i == n) return 1;
    if (bad) *bad = i;
    return 0;
}
