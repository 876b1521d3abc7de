/* A minimal test harness: TEST(name) registers a test; CHECK records a
 * failure with its location and goes on; the runner prints one line per
 * test and a closing "N passed, N failed". */
#ifndef CB_TEST_HARNESS_H
#define CB_TEST_HARNESS_H

#include <stdio.h>
#include <stdint.h>
#include "crossbind/crossbind.h"

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
extern int test_failures; /* failures within the running test */

#define TEST(name)                                                              \
    static void name(void);                                                     \
    __attribute__((constructor)) static void register_##name(void) { test_register(#name, name); } \
    static void name(void)

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (!(cond)) {                                                          \
            test_failures++;                                                    \
            fprintf(stderr, "  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                       \
    } while (0)

#define CHECK_OK(expr)                                                          \
    do {                                                                        \
        cb_status s_ = (expr);                                                  \
        if (s_ != CB_OK) {                                                      \
            test_failures++;                                                    \
            fprintf(stderr, "  %s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, cb_last_error()); \
        }                                                                       \
    } while (0)

/* The one tolerance rule: |a - r| <= atol + rtol * |r| elementwise, with NaN
 * and Inf required in the same places. Prints max abs/rel error and the worst
 * index on failure. Returns 1 when close. */
int check_close(const char *what, const float *a, const float *r, int64_t n, double atol, double rtol);

/* Tolerances, in one table (see tests/README.md for the reasons). */
#define TOL_KERNEL_ATOL 1e-5   /* fast vs reference kernels, one op */
#define TOL_KERNEL_RTOL 1e-4
#define TOL_TORCH_ATOL 1e-5    /* crossbind vs PyTorch: logits, loss */
#define TOL_TORCH_RTOL 1e-4
#define TOL_GRAD_ATOL 2e-5     /* crossbind vs PyTorch: gradients */
#define TOL_GRAD_RTOL 1e-3
#define TOL_STEPS_ATOL 1e-5    /* losses after optimizer steps */
#define TOL_STEPS_RTOL 2e-4
#define TOL_DELTA_ATOL 2e-6   /* parameter displacement after optimizer steps */
#define TOL_DELTA_RTOL 5e-4
#define TOL_DELTA_ADAM_ATOL 5e-5 /* Adam: a near-zero gradient's step is +-lr whatever its size */
#define TOL_VGG_GRAD_ATOL 1e-4 /* VGG-16: 13 batch normalisations deep, sums over 4 samples of 32x32 */
#define TOL_VGG_GRAD_RTOL 1e-2
#define TOL_VGG_STEPS_ATOL 5e-3 /* VGG-16 after SGD steps: batch statistics of 4 samples amplify rounding */
#define TOL_VGG_STEPS_RTOL 1e-2
#define TOL_VGG_ONEDNN_GRAD_L2 5e-2 /* VGG-16 through oneDNN: whole gradients (see golden_vgg16) */
#define TOL_VGG_ONEDNN_STEPS 3e-2   /* ... and losses, parameters and logits after the steps */
#define TOL_FD_ATOL 2e-3       /* finite differences of float32 kernels */
#define TOL_FD_RTOL 2e-2

/* A temporary directory for this process's files (created once). */
const char *test_tmpdir(void);
/* test_tmpdir()/name, in one of 8 rotating buffers (valid for 8 calls). */
const char *test_tmp(const char *name);

#endif
