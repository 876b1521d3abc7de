/* Throughput of one binary's JSON readers (json_readers.c): parse a buffer
 * into a tree, count its values, free it. Median over REPEATS; files under
 * 1 MB are parsed SMALL_REPEATS times per repeat. Prints tab-separated rows:
 * file, bytes, reader, values, median seconds per parse.
 * Usage: bench_json REPEATS SMALL_REPEATS FILE... */
#include <string.h>
#include "bench_common.h"
#include "readers.h"

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: bench_json REPEATS SMALL_REPEATS FILE...\n"); return 2; }
    int reps = atoi(argv[1]), small = atoi(argv[2]);
    if (reps > 64) reps = 64;
    for (int f = 3; f < argc; f++) {
        size_t len;
        char *text = (char *)slurp(argv[f], &len);
        const char *base = strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f];
        int inner = len < (1u << 20) ? small : 1;
        for (int r = 0; r < n_readers; r++) {
            long values = readers[r].parse(text, len);
            if (values < 0) { printf("%s\t%zu\t%s\trefused: %s\t\n", base, len, readers[r].name, reader_msg); continue; }
            double t[64];
            for (int i = 0; i < reps; i++) {
                double t0 = now();
                for (int k = 0; k < inner; k++) readers[r].parse(text, len);
                t[i] = (now() - t0) / inner;
            }
            printf("%s\t%zu\t%s\t%ld\t%.9f\n", base, len, readers[r].name, values, median(t, reps));
            fflush(stdout);
        }
        free(text);
    }
    return 0;
}
