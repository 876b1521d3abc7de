/* Test runner: runs every registered test (or those whose names contain
 * argv[1]) and closes with "N passed, N failed". */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define MAX_TESTS 256
static struct { const char *name; test_fn fn; } tests[MAX_TESTS];
static int n_tests;
int test_failures;

void test_register(const char *name, test_fn fn)
{
    if (n_tests < MAX_TESTS) {
        tests[n_tests].name = name;
        tests[n_tests].fn = fn;
        n_tests++;
    }
}

int check_close(const char *what, const float *a, const float *r, int64_t n, double atol, double rtol)
{
    double max_abs = 0, max_rel = 0;
    int64_t worst = -1, bad = 0, nan_mismatch = 0;
    for (int64_t i = 0; i < n; i++) {
        int fa = isfinite(a[i]), fr = isfinite(r[i]);
        if (!fa || !fr) {
            int same = (isnan(a[i]) && isnan(r[i])) || (isinf(a[i]) && a[i] == r[i]);
            if (!same) { nan_mismatch++; bad++; if (worst < 0) worst = i; }
            continue;
        }
        double d = fabs((double)a[i] - r[i]);
        double rel = d / (fabs(r[i]) > 1e-30 ? fabs(r[i]) : 1e-30);
        if (d > max_abs) max_abs = d;
        if (rel > max_rel && fabs(r[i]) > atol) max_rel = rel;
        if (d > atol + rtol * fabs(r[i])) {
            if (worst < 0 || d > fabs((double)a[worst] - r[worst])) worst = i;
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "  %s: %lld of %lld elements out of tolerance (atol %g, rtol %g): max abs err %.3g, "
                "max rel err %.3g, worst index %lld (%.9g vs %.9g), NaN/Inf mismatches %lld\n",
                what, (long long)bad, (long long)n, atol, rtol, max_abs, max_rel, (long long)worst,
                (double)a[worst], (double)r[worst], (long long)nan_mismatch);
        test_failures++;
        return 0;
    }
    return 1;
}

const char *test_tmp(const char *name)
{
    static char path[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof path[k], "%s/%s", test_tmpdir(), name);
    return path[k];
}

const char *test_tmpdir(void)
{
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/crossbind-test-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return dir;
}

int main(int argc, char **argv)
{
    cb_blas_restart_with_better_core(argv); /* the kernels the crossbind command uses */
    cb_set_threads(2);
    int passed = 0, failed = 0;
    for (int i = 0; i < n_tests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        test_failures = 0;
        tests[i].fn();
        printf("%s %s\n", test_failures ? "FAIL" : "ok  ", tests[i].name);
        fflush(stdout);
        if (test_failures) failed++;
        else passed++;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", test_tmpdir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", test_tmpdir());
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
