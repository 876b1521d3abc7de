/* Matrix products whose right-hand side is packed once into panels of 16
 * columns, computed in 6x16 register tiles on one thread: the point
 * products of Winograd's convolution (conv_winograd.c) and the recurrent
 * layers' per-step products in inference (rnn.c).
 *
 * Why: an SGEMM call packs its right-hand side at every call. A recurrent
 * step multiplies the same recurrent matrix (2048 x 512 for the LSTM) at
 * each of 300 steps, and OpenBLAS's SGEMM reached 73 GFLOP/s on one core of
 * a 2-core AMD EPYC (AVX2, FMA peak 108) at that shape (128 x 2048 x 512);
 * packed once, each step only streams the panels. The panel (k x 16 floats)
 * stays in the first-level cache while the rows of the left-hand side pass
 * by six at a time. */
#include "ops.h"
#include "vec.h"

enum { ROWS = 6, PANEL = CB_PACK_PANEL };

void cb_pack_rows_as_panels(int n, int k, const float *b, int ldb, float *bp)
{
    for (int p = 0; p < n / PANEL; p++)
        for (int q = 0; q < k; q++)
            for (int j = 0; j < PANEL; j++) bp[((size_t)p * k + q) * PANEL + j] = b[(size_t)(p * PANEL + j) * ldb + q];
}

/* c[R x 16] (+)= a[R x k] b[k x 16], R <= 6: twelve accumulators in
 * registers, each summing its products in order, then added to c's old
 * value where add. Inlined per R so the loops unroll. */
static inline __attribute__((always_inline)) void tile(int R, int k, const float *a, int lda, const float *b,
                                                       float *c, int ldc, int add)
{
    v8f acc[ROWS][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = v8_splat(0.0f);
    for (int q = 0; q < k; q++) {
        const v8f b0 = v8_load(b + (size_t)q * PANEL), b1 = v8_load(b + (size_t)q * PANEL + CB_VL);
        for (int r = 0; r < R; r++) {
            const v8f av = v8_splat(a[(size_t)r * lda + q]);
            acc[r][0] += av * b0;
            acc[r][1] += av * b1;
        }
    }
    for (int r = 0; r < R; r++) {
        float *cr = c + (size_t)r * ldc;
        if (add) {
            acc[r][0] += v8_load(cr);
            acc[r][1] += v8_load(cr + CB_VL);
        }
        v8_store(cr, acc[r][0]);
        v8_store(cr + CB_VL, acc[r][1]);
    }
}

static void tile_rows(int R, int k, const float *a, int lda, const float *b, float *c, int ldc, int add)
{
    switch (R) {
    case 6: tile(6, k, a, lda, b, c, ldc, add); break;
    case 5: tile(5, k, a, lda, b, c, ldc, add); break;
    case 4: tile(4, k, a, lda, b, c, ldc, add); break;
    case 3: tile(3, k, a, lda, b, c, ldc, add); break;
    case 2: tile(2, k, a, lda, b, c, ldc, add); break;
    default: tile(1, k, a, lda, b, c, ldc, add); break;
    }
}

void cb_gemm_packed(int m, int n, int k, const float *a, int lda, const float *bp, float *c, int ldc, int add)
{
    for (int p = 0; p < n / PANEL; p++) {
        const float *b = bp + (size_t)p * k * PANEL;
        for (int r = 0; r < m; r += ROWS)
            tile_rows(m - r < ROWS ? m - r : ROWS, k, a + (size_t)r * lda, lda, b, c + (size_t)r * ldc + p * PANEL,
                      ldc, add);
    }
}
