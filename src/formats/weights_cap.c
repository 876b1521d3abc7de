/* The memory cap for one weights file (see weights_cap.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "weights_cap.h"

#define DEFAULT_CAP ((uint64_t)16 << 30)

static uint64_t default_cap(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return DEFAULT_CAP;
    uint64_t half = (uint64_t)pages / 2 * (uint64_t)page;
    return half < DEFAULT_CAP ? half : DEFAULT_CAP;
}

cb_status cb_weights_cap(uint64_t *out)
{
    const char *v = getenv(CB_WEIGHTS_CAP_ENV);
    if (!v || !*v) {
        *out = default_cap();
        return CB_OK;
    }
    uint64_t n = 0;
    const char *p = v;
    for (; isdigit((unsigned char)*p); p++) {
        if (n > (UINT64_MAX - 9) / 10) goto bad;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (p == v) goto bad;
    int shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 0: break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: goto bad;
    }
    if (*p && p[1]) goto bad;
    if (n == 0 || n > UINT64_MAX >> shift) goto bad;
    *out = n << shift;
    return CB_OK;
bad:
    return cb_fail(CB_ERR_INVALID_ARG, "%s='%s' is not a memory size (write bytes or a number with K, M, G or "
                   "T, e.g. 32G)", CB_WEIGHTS_CAP_ENV, v);
}

void cb_format_bytes(uint64_t n, char *buf, size_t size)
{
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%llu bytes", (unsigned long long)n);
        return;
    }
    double x = (double)n / 1024;
    int u = 0;
    while (x >= 1024 && u < 5) {
        x /= 1024;
        u++;
    }
    snprintf(buf, size, "%.1f %s", x, units[u]);
}
