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
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "ops.h"
#include "vec.h"

enum { ROWS = 6, PANEL = CB_PACK_PANEL };

/* Rows of a panel (one cache line each) fetched ahead of the product.
 *
 * Why: the panels are weights that were last read a whole pass ago (a
 * VGG-16 layer's 9.4 MB at batch 1, Winograd's transformed 3x3 weights, a
 * recurrent matrix), so they come from memory or the last-level cache, and
 * the hardware prefetcher, with FMAs between the loads, fell behind. On the
 * 2-core Intel Xeon (model 207), a product of 16 rows by VGG-16's packed
 * 512 x 4608 weights, rotating over 16 copies so that none is cached, took
 * 298 us at 2 threads and 930 us at 1; fetching 8, 16, 32 and 64 rows ahead:
 * 267, 242, 229 and 241 us (631, 635, 503 and 505 at 1 thread). The address
 * is formed as an integer: past the last panel's end it names memory that
 * the prefetch may touch but the program never reads.
 *
 * Only tiles of PREFETCH_ROWS rows or more fetch ahead: a tile of a row or
 * two (a recurrent layer's step at batch 1) is bound by its loads already,
 * one per FMA, and a prefetch per load slowed the LSTM's batch-1 latency
 * by 8-16% (7.6 -> 8.3 ms, 6 alternating rounds, same Xeon). */
enum { AHEAD = 32, PREFETCH_ROWS = 6 };
static inline __attribute__((always_inline)) void prefetch_ahead(const float *panel, int q)
{
    __builtin_prefetch((const void *)((uintptr_t)panel + ((size_t)q + AHEAD) * PANEL * sizeof(float)));
}

void cb_pack_rows_as_panels(int n, int k, const float *b, int ldb, float *bp)
{
    for (int p = 0; p < n / PANEL; p++)
        for (int q = 0; q < k; q++)
            for (int j = 0; j < PANEL; j++) bp[((size_t)p * k + q) * PANEL + j] = b[(size_t)(p * PANEL + j) * ldb + q];
}

#if CB_RVL == 16
/* AVX-512: a tile of R rows by P panels (16 columns each, one register
 * per row and panel), up to 24 accumulators of the 32 registers. The
 * 6x16 tile of other machines (below), in 8-float halves, would leave half of each register
 * and each FMA unused. A few rows (a recurrent layer's slice of samples)
 * take more panels at once so that enough independent sums hide the FMA's
 * latency. Every element still sums its products in order: the same
 * floats as that tile. */
enum { ROWS16 = 12 };
static inline __attribute__((always_inline)) void tile16(int R, int P, int k, const float *a, int lda,
                                                         const float *b, size_t pstride, float *c, int ldc, int add)
{
    cb_vrow acc[ROWS16][8];
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++) acc[r][p] = cb_vrow_splat(0.0f);
    for (int q = 0; q < k; q++) {
        cb_vrow bv[8];
        for (int p = 0; p < P; p++) {
            bv[p] = cb_vrow_load(b + (size_t)p * pstride + (size_t)q * PANEL);
            if (R >= PREFETCH_ROWS) prefetch_ahead(b + (size_t)p * pstride, q);
        }
        for (int r = 0; r < R; r++) {
            const cb_vrow av = cb_vrow_splat(a[(size_t)r * lda + q]);
            for (int p = 0; p < P; p++) acc[r][p] += av * bv[p];
        }
    }
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++) {
            float *cr = c + (size_t)r * ldc + p * PANEL;
            if (add) acc[r][p] += cb_vrow_load(cr);
            memcpy(cr, &acc[r][p], sizeof acc[r][p]);
        }
}

typedef void (*tile16_fn)(int k, const float *a, int lda, const float *b, size_t pstride, float *c, int ldc, int add);
#define TILE16(R, P)                                                                                                   \
    static void tile16_##R##_##P(int k, const float *a, int lda, const float *b, size_t ps, float *c, int ldc, int add) \
    {                                                                                                                  \
        tile16(R, P, k, a, lda, b, ps, c, ldc, add);                                                                   \
    }
#define TILE16_ROWS(P) TILE16(1, P) TILE16(2, P) TILE16(3, P) TILE16(4, P) TILE16(5, P) TILE16(6, P) \
    TILE16(7, P) TILE16(8, P) TILE16(9, P) TILE16(10, P) TILE16(11, P) TILE16(12, P)
TILE16_ROWS(1)
TILE16_ROWS(2)
TILE16_ROWS(4)
TILE16_ROWS(8)
#define TILE16_ROW(P) {NULL, tile16_1_##P, tile16_2_##P, tile16_3_##P, tile16_4_##P, tile16_5_##P, tile16_6_##P, \
                       tile16_7_##P, tile16_8_##P, tile16_9_##P, tile16_10_##P, tile16_11_##P, tile16_12_##P}
static const tile16_fn tiles16[4][ROWS16 + 1] = {TILE16_ROW(1), TILE16_ROW(2), TILE16_ROW(4), TILE16_ROW(8)};

void cb_gemm_packed(int m, int n, int k, const float *a, int lda, const float *bp, float *c, int ldc, int add)
{
    const int rows = m < ROWS16 ? m : ROWS16, panels = n / PANEL;
    const int widest = rows <= 2 ? 3 : rows <= 5 ? 2 : 1; /* log2 of the panels per tile: 8, 4 or 2 */
    for (int p = 0; p < panels;) {
        int w = widest;
        while ((1 << w) > panels - p) w--;
        const float *b = bp + (size_t)p * k * PANEL;
        for (int r = 0; r < m; r += ROWS16)
            tiles16[w][m - r < ROWS16 ? m - r : ROWS16](k, a + (size_t)r * lda, lda, b, (size_t)k * PANEL,
                                                        c + (size_t)r * ldc + p * PANEL, ldc, add);
        p += 1 << w;
    }
}
#else
/* c[R x 16P] (+)= a[R x k] b[k x 16P] over P panels, R <= 6 at one panel
 * and R <= 2 at four: up to sixteen accumulators of 8 floats in registers,
 * each summing its products in order, then added to c's old value where
 * add. Inlined per shape so the loops unroll. Why four panels for a row or
 * two (a recurrent layer's step of one sample): one panel gives two
 * accumulators, and each waits for the last FMA's result. On a 2-core AMD
 * EPYC (Zen 5), the AVX2 build's LSTM took 10.3 ms a sample at batch 1
 * from one-panel tiles, 5.7 ms from four, and 7.3 ms by OpenBLAS's SGEMV. */
static inline __attribute__((always_inline)) void tile(int R, int P, int k, const float *a, int lda,
                                                       const float *b, size_t pstride, float *c, int ldc, int add)
{
    v8f acc[ROWS][8];
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2 * P; h++) acc[r][h] = v8_splat(0.0f);
    for (int q = 0; q < k; q++) {
        v8f bv[8];
        for (int h = 0; h < 2 * P; h++) bv[h] = v8_load(b + (size_t)(h / 2) * pstride + (size_t)q * PANEL + h % 2 * CB_VL);
        if (R >= PREFETCH_ROWS)
            for (int p = 0; p < P; p++) prefetch_ahead(b + (size_t)p * pstride, q);
        for (int r = 0; r < R; r++) {
            const v8f av = v8_splat(a[(size_t)r * lda + q]);
            for (int h = 0; h < 2 * P; h++) acc[r][h] += av * bv[h];
        }
    }
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2 * P; h++) {
            float *cr = c + (size_t)r * ldc + h * CB_VL;
            if (add) acc[r][h] += v8_load(cr);
            v8_store(cr, acc[r][h]);
        }
}

static void tile_rows(int R, int k, const float *a, int lda, const float *b, size_t ps, float *c, int ldc, int add)
{
    switch (R) {
    case 6: tile(6, 1, k, a, lda, b, ps, c, ldc, add); break;
    case 5: tile(5, 1, k, a, lda, b, ps, c, ldc, add); break;
    case 4: tile(4, 1, k, a, lda, b, ps, c, ldc, add); break;
    case 3: tile(3, 1, k, a, lda, b, ps, c, ldc, add); break;
    case 2: tile(2, 1, k, a, lda, b, ps, c, ldc, add); break;
    default: tile(1, 1, k, a, lda, b, ps, c, ldc, add); break;
    }
}

static void tile_rows_4(int R, int k, const float *a, int lda, const float *b, size_t ps, float *c, int ldc, int add)
{
    if (R == 2) tile(2, 4, k, a, lda, b, ps, c, ldc, add);
    else tile(1, 4, k, a, lda, b, ps, c, ldc, add);
}

void cb_gemm_packed(int m, int n, int k, const float *a, int lda, const float *bp, float *c, int ldc, int add)
{
    const size_t ps = (size_t)k * PANEL;
    const int panels = n / PANEL, four = m <= 2 ? panels / 4 * 4 : 0;
    for (int p = 0; p < four; p += 4)
        tile_rows_4(m, k, a, lda, bp + p * ps, ps, c + p * PANEL, ldc, add);
    for (int p = four; p < panels; p++) {
        const float *b = bp + p * ps;
        for (int r = 0; r < m; r += ROWS)
            tile_rows(m - r < ROWS ? m - r : ROWS, k, a + (size_t)r * lda, lda, b, ps, c + (size_t)r * ldc + p * PANEL,
                      ldc, add);
    }
}
#endif
