/* Hostile zip archives (gen_hostile_zips.py, and crossbind's fuzz seeds for
 * .pt files) through one binary's reader (zip_readers.c), with declared
 * sizes capped at 256 MiB as fuzz_torch caps crossbind. Prints
 * tab-separated rows: file, reader, outcome.
 * Usage: hostile_zip FILE... */
#include <stdint.h>
#include <string.h>
#include "bench_common.h"
#include "readers.h"
extern uint64_t zip_cap;

int main(int argc, char **argv)
{
    zip_cap = 256u << 20;
    for (int f = 1; f < argc; f++) {
        size_t len;
        char *buf = (char *)slurp(argv[f], &len);
        const char *base = strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f];
        long n = readers[0].parse(buf, len);
        if (n >= 0) printf("%s\t%s\taccepted (%ld entries read)\n", base, readers[0].name, n);
        else printf("%s\t%s\trefused: %s\n", base, readers[0].name, reader_msg);
        free(buf);
    }
    return 0;
}
