/* Throughput of one binary's zip reader (zip_readers.c): open the archive
 * (already in memory), read every entry whole, CRC-checked. Median over
 * REPEATS; files under 1 MB are read SMALL_REPEATS times per repeat. Prints
 * tab-separated rows: file, bytes, reader, entries, median seconds.
 * Usage: bench_zip REPEATS SMALL_REPEATS FILE... */
#include <stdint.h>
#include <string.h>
#include "bench_common.h"
#include "readers.h"
extern uint64_t zip_bytes;

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: bench_zip REPEATS SMALL_REPEATS FILE...\n"); return 2; }
    int reps = atoi(argv[1]), small = atoi(argv[2]);
    if (reps > 64) reps = 64;
    for (int f = 3; f < argc; f++) {
        size_t len;
        char *buf = (char *)slurp(argv[f], &len);
        const char *base = strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f];
        int inner = len < (1u << 20) ? small : 1;
        long entries = readers[0].parse(buf, len);
        if (entries < 0) { printf("%s\t%zu\t%s\trefused: %s\t\n", base, len, readers[0].name, reader_msg); continue; }
        double t[64];
        for (int i = 0; i < reps; i++) {
            double t0 = now();
            for (int k = 0; k < inner; k++) readers[0].parse(buf, len);
            t[i] = (now() - t0) / inner;
        }
        printf("%s\t%zu\t%s\t%ld entries, %llu bytes\t%.9f\n", base, len, readers[0].name, entries, (unsigned long long)zip_bytes, median(t, reps));
        fflush(stdout);
        free(buf);
    }
    return 0;
}
