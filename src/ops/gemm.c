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

/* One row of A times op(B): a matrix-vector product per slice of C's
 * columns. An SGEMM of one row still packs the whole of B at every call (a
 * 2048 x 512 recurrent matrix at each of an LSTM's 300 steps; VGG-16's
 * 4096 x 4096 classifier at batch 1); SGEMV reads it once, in place. */
static void row_times(int tb, int n, int k, float alpha, const float *a, const float *b, int ldb, float beta,
                      float *c, int threads)
{
    if (beta == 0.0f) /* beta 0 must not read C, whatever it holds (NaN included) */
        for (int j = 0; j < n; j++) c[j] = 0.0f;
    const int par = threads > 1 && (long)n * k >= PAR_MIN_WORK && !omp_in_parallel();
    const int parts = par ? threads : 1;
    int chunk = (n + parts - 1) / parts;
    chunk = (chunk + 15) / 16 * 16;
#pragma omp parallel for schedule(static, 1) num_threads(parts) if (par)
    for (int t = 0; t < parts; t++) {
        const int lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
        if (lo >= hi) continue;
        if (tb) /* B is [n, k]: c = B a */
            cblas_sgemv(CblasRowMajor, CblasNoTrans, hi - lo, k, alpha, b + (size_t)lo * ldb, ldb, a, 1, beta, c + lo, 1);
        else /* B is [k, n]: c = B^T a */
            cblas_sgemv(CblasRowMajor, CblasTrans, k, hi - lo, alpha, b + lo, ldb, a, 1, beta, c + lo, 1);
    }
}

void cb_sgemv_rows(int rows, int k, const float *b, int ldb, const float *a, float *c)
{
    cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, k, 1.0f, b, ldb, a, 1, 1.0f, c, 1);
}

void cb_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc)
{
    const enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    int threads = omp_get_max_threads();
    if (m == 1 && !ta && k > 0) {
        row_times(tb, n, k, alpha, a, b, ldb, beta, c, threads);
        return;
    }
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
