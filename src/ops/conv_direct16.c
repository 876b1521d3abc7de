/* A direct 3x3 convolution on nChw16c values (chosen in AVX-512 builds), for the
 * blocked-layout rewrite of inference (src/graph/blocked.c): ResNet's 3x3
 * layers with few samples, where oneDNN 2.6's direct kernel leaves a
 * sixth or more of the machine idle.
 *
 * The sample is first copied, zero-padded, into the workspace, so that
 * every output position reads whole rows without edge cases (the taps
 * outside the image multiply zeros, as in the few-output product). Then
 * each task, one output row of one pair of 16-channel output blocks, keeps
 * up to 14 output positions x 32 channels in 28 vector registers (a row
 * in runs of equal length) and
 * walks the input channels and taps: per input channel and tap, two
 * weight vectors (32 output channels, packed contiguously) and one
 * broadcast input per position, 28 multiply-adds. A thread takes whole
 * pairs of output blocks, so their weights (c x 9 x 32 floats: 295 KB at
 * 256 channels) stay in its core's cache while it walks the rows.
 *
 * Each output is a direct sum over (input block, kh, kw, channel in the
 * block), the same exact arithmetic class as the other direct kernels in
 * another order. */
#include <omp.h>
#include <string.h>
#include "ops.h"
#include "vec.h"
#include "blk_post.h"

/* The 16-float vectors pass only between this file's static functions;
 * an AVX2 build compiles them as pairs of registers (correct, and tested,
 * but no plan there chooses this kernel: cb_direct16_supports). */
#pragma GCC diagnostic ignored "-Wpsabi"

/* PREFETCH_TAPS: how far ahead, in taps of one pair's packed weights (2 KB
 * each), the loop asks for the weights it will read. A pair's weights (c x
 * 9 x 32 floats: 147 KB at 128 channels, 590 KB at 512) stream from the
 * second-level cache at every row; on the 2-core Intel Xeon (family 6,
 * model 207) the hardware prefetcher alone left the FMA units waiting:
 * per layer at batch 1, relative to a 1x1 layer of the same pass,
 * ResNet-50's 512-channel 7x7 layers 3.5 -> 2.8 and 3.75 -> 3.0 (stride
 * 2), its 256-channel 14x14 ones 2.36 -> 2.1, VGG-16's 8x8 planes about
 * a fifth faster; 1 or 4 taps measured the same as 2 within the noise. */
enum { B = 16, PAIR = 32, MAX_ROW = 14, PREFETCH_TAPS = 2 };

typedef float v16f __attribute__((vector_size(B * sizeof(float))));

int cb_direct16_fits(const cb_conv_shape *s, int groups, int block)
{
    return block == B && groups <= 1 && s->kh == 3 && s->kw == 3 && s->dh <= 1 && s->dw <= 1 && s->ph == 1 &&
           s->pw == 1 && s->sh == s->sw && (s->sh == 1 || s->sh == 2) && s->c % B == 0 && s->oc % PAIR == 0;
}

/* Measured against oneDNN 2.6's direct kernel (2-core AMD EPYC Zen 5; ms
 * per sample at batch 1, per 128 samples at batch 32, fastmath unless
 * said): ResNet-50's stride-2 layers at batch 1 56->28 (128 channels) 0.51
 * -> 0.47, 28->14 (256) 0.59 -> 0.47, at batch 32 76 -> 60 and 72-87 ->
 * 58-59, 14->7 (512) 63-70 -> 60-63; its stride-1 256-channel layers on
 * 14x14 at batch 1 0.55 -> 0.46 (0.54 -> 0.46-0.48 at fused), the
 * 512-channel ones on 7x7 0.62 (the few-output product) -> 0.57; VGG-16's
 * 8x8 planes at batch 1 0.09-0.25 -> 0.09-0.22 (few-output product
 * before). Slower: stride 1 at batch 32 on 7x7 (55 -> 58-59) and 56x56
 * (59-62 -> 61-72, at fused), the 4x4 and 2x2 planes at batch 1 (the
 * few-output product 0.12-0.25, this 0.15-0.33: too few outputs per row
 * to share each weight load). Hence: rows of at least 7 outputs, and
 * stride 1 only for one sample. */
int cb_direct16_supports(const cb_conv_shape *s, int groups, int block)
{
    return CB_RVL == 16 && cb_direct16_fits(s, groups, block) && s->ow >= 7 && (s->sh == 2 || s->n == 1);
}

size_t cb_direct16_weight_floats(const cb_conv_shape *s) { return (size_t)s->oc * s->c * 9; }

/* [oc, c, 3, 3] -> [oc / 32][c / 16][kh][kw][c % 16][32]. */
void cb_direct16_weights(const cb_conv_shape *s, const float *w, float *wp)
{
    const int cb = s->c / B;
    for (int o = 0; o < s->oc; o++)
        for (int c = 0; c < s->c; c++)
            for (int t = 0; t < 9; t++)
                wp[((((size_t)(o / PAIR) * cb + c / B) * 9 + t) * B + c % B) * PAIR + o % PAIR] =
                    w[((size_t)o * s->c + c) * 9 + t];
}

static size_t padded_floats(const cb_conv_shape *s) { return (size_t)s->c * (s->h + 2) * (s->w + 2); }

size_t cb_direct16_workspace(const cb_conv_shape *s, int threads)
{
    (void)threads; /* one padded sample, shared */
    return padded_floats(s);
}

static inline v16f load16(const float *p)
{
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store16(float *p, v16f v) { memcpy(p, &v, sizeof v); }

/* bias and the post-ops (blk_post.h) on one 16-channel output, as two
 * 8-lane halves, into y. */
static inline void finish16(v16f acc, v16f bias, float *y, const cb_blk_post *post, int npost)
{
    float o[B];
    store16(o, acc + bias);
    for (int h = 0; h < B; h += 8) v8_store(y + h, cb_blk_post_v8(v8_load(o + h), y + h, post, npost));
}

/* Output positions [ox0, ox0 + R) of row oy, output blocks 2q and 2q + 1:
 * xp the padded sample ([c / 16][h + 2][w + 2][16]), wq the pair's packed
 * weights. R is a constant where this is inlined, so the accumulators
 * live in registers. */
static inline __attribute__((always_inline)) void row_block(const int R, const cb_conv_shape *s, const float *xp,
                                                            const float *wq, int oy, int ox0, v16f *out)
{
    v16f a0[MAX_ROW], a1[MAX_ROW];
    for (int r = 0; r < R; r++) a0[r] = a1[r] = (v16f){0};
    const int wp = s->w + 2, hp = s->h + 2, st = s->sw;
    for (int cb = 0; cb < s->c / B; cb++)
        for (int kh = 0; kh < 3; kh++) {
            const float *xr = xp + (((size_t)cb * hp + (size_t)oy * s->sh + kh) * wp + (size_t)ox0 * st) * B;
            for (int kw = 0; kw < 3; kw++) {
                const float *xk = xr + kw * B, *w = wq + (((size_t)cb * 9 + kh * 3 + kw) * B) * PAIR;
                for (int ic = 0; ic < B; ic++) {
                    const v16f w0 = load16(w + ic * PAIR), w1 = load16(w + ic * PAIR + B);
                    /* Both cache lines of the weights PREFETCH_TAPS taps on (past the
                     * pair's end only at its last taps: a hint, never a read). */
                    __builtin_prefetch(w + ic * PAIR + PREFETCH_TAPS * B * PAIR);
                    __builtin_prefetch(w + ic * PAIR + B + PREFETCH_TAPS * B * PAIR);
                    for (int r = 0; r < R; r++) {
                        const float xv = xk[r * st * B + ic];
                        a0[r] += xv * w0;
                        a1[r] += xv * w1;
                    }
                }
            }
        }
    for (int r = 0; r < R; r++) out[r] = a0[r], out[MAX_ROW + r] = a1[r];
}

static void row(int R, const cb_conv_shape *s, const float *xp, const float *wq, int oy, int ox0, v16f *out)
{
    switch (R) { /* one unrolled copy per row length */
#define ROW(n)                                                                                                         \
    case n:                                                                                                            \
        row_block(n, s, xp, wq, oy, ox0, out);                                                                         \
        return;
        ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7) ROW(8) ROW(9) ROW(10) ROW(11) ROW(12) ROW(13) ROW(14)
#undef ROW
    }
}

void cb_direct16_conv(const cb_conv_shape *s, int block, const float *x, const float *wp, const float *bias,
                      const cb_blk_post *post, int npost, float *y, float *ws, int threads)
{
    (void)block;
    const int cb = s->c / B, hp = s->h + 2, wpd = s->w + 2, pairs = s->oc / PAIR;
    const size_t in_plane = (size_t)s->h * s->w * B, out_plane = (size_t)s->oh * s->ow * B;
    /* A row in runs of equal length: 16 outputs as 8 + 8, not 14 + 2, whose
     * 2-output run has too few independent sums to keep both FMA units busy
     * (the sums, and so the bits, are the same either way). */
    const int runs = (s->ow + MAX_ROW - 1) / MAX_ROW, run = (s->ow + runs - 1) / runs;
    for (int n = 0; n < s->n; n++) {
        const float *xs = x + (size_t)n * cb * in_plane;
        float *ys = y + (size_t)n * (s->oc / B) * out_plane;
#pragma omp parallel num_threads(threads)
        {
#pragma omp for schedule(static)
            for (int c = 0; c < cb; c++) { /* the zero-padded copy */
                float *dst = ws + (size_t)c * hp * wpd * B;
                memset(dst, 0, (size_t)wpd * B * sizeof *dst);
                for (int iy = 0; iy < s->h; iy++) {
                    float *d = dst + (size_t)(iy + 1) * wpd * B;
                    memset(d, 0, B * sizeof *d);
                    memcpy(d + B, xs + c * in_plane + (size_t)iy * s->w * B, (size_t)s->w * B * sizeof *d);
                    memset(d + (size_t)(s->w + 1) * B, 0, B * sizeof *d);
                }
                memset(dst + (size_t)(hp - 1) * wpd * B, 0, (size_t)wpd * B * sizeof *dst);
            }
            /* Whole pairs per thread, each walking its rows (collapse keeps the order). */
#pragma omp for collapse(2) schedule(static)
            for (int q = 0; q < pairs; q++)
                for (int oy = 0; oy < s->oh; oy++) {
                    const float *wq = wp + (size_t)q * cb * 9 * B * PAIR;
                    v16f acc[2 * MAX_ROW];
                    for (int ox0 = 0; ox0 < s->ow; ox0 += run) {
                        const int R = s->ow - ox0 < run ? s->ow - ox0 : run;
                        row(R, s, ws, wq, oy, ox0, acc);
                        for (int h = 0; h < 2; h++) {
                            const int ob = 2 * q + h;
                            const v16f bv = bias ? load16(bias + ob * B) : (v16f){0};
                            float *yr = ys + ob * out_plane + ((size_t)oy * s->ow + ox0) * B;
                            for (int r = 0; r < R; r++) finish16(acc[h * MAX_ROW + r], bv, yr + (size_t)r * B, post, npost);
                        }
                    }
                }
        }
    }
}
