/* Row-major SGEMM split across the engine's OpenMP threads.
 *
 * The BLAS library itself is kept single-threaded (see cb_set_threads): the
 * engine's copy loops and the BLAS calls then share one pool of threads and
 * never spin against each other. Each thread multiplies a slice of C's
 * columns (or rows, when C is tall), so the result for a given thread count
 * is deterministic. */
#include <cblas.h>
#include <omp.h>
#include "ops.h"

/* Below this many multiply-adds a product runs on one thread. */
#define PAR_MIN_WORK (1L << 18)

void cb_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc)
{
    const enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    int threads = omp_get_max_threads();
    if (threads < 2 || (long)m * n * k < PAR_MIN_WORK || omp_in_parallel()) {
        cblas_sgemm(CblasRowMajor, TA, TB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    const int split_cols = n >= m;
    const int len = split_cols ? n : m;
    int chunk = (len + threads - 1) / threads;
    chunk = (chunk + 15) / 16 * 16; /* whole vector widths per slice */
#pragma omp parallel for schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        int lo = t * chunk, hi = lo + chunk < len ? lo + chunk : len;
        if (lo >= hi) continue;
        if (split_cols) {
            const float *bs = tb ? b + (size_t)lo * ldb : b + lo;
            cblas_sgemm(CblasRowMajor, TA, TB, m, hi - lo, k, alpha, a, lda, bs, ldb, beta, c + lo, ldc);
        } else {
            const float *as = ta ? a + lo : a + (size_t)lo * lda;
            cblas_sgemm(CblasRowMajor, TA, TB, hi - lo, n, k, alpha, as, lda, b, ldb, beta,
                        c + (size_t)lo * ldc, ldc);
        }
    }
}
