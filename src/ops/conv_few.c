/* Convolutions with few outputs per channel (batch x oh x ow at most 64,
 * at most 16 for 1x1 kernels) between blocked values, as one product that
 * streams the weights once: for the blocked-layout rewrite of inference
 * (src/graph/blocked.c).
 *
 * Why: at batch 1, VGG-16's 512-channel 3x3 layers on 4x4 and 2x2 planes
 * read 9.4 MB of weights for 16 or 4 outputs per channel. oneDNN 2.6's
 * direct kernel took 0.49 ms (4x4) and 0.29 ms (2x2) there (2-core AMD
 * EPYC Zen 5, AVX-512), 20 and 34 GB/s of weights, where the 4096 x 4096
 * classifier's matrix-vector product streams 47 GB/s. Here the inputs
 * under every tap become a matrix of one row per output position (k = c x
 * kh x kw columns: 295 KB for VGG-16's 16 positions, in the second-level
 * cache; 0.9 MB for ResNet-50's 49),
 * multiplied by the weights packed once in panels of 16 output channels
 * (cb_gemm_packed): each weight is read once, in one sequential stream per
 * panel, the threads taking panels. Measured there: 0.49 -> 0.29 ms (4x4)
 * and 0.29 -> 0.28 ms (2x2) with the weights read in place row by row,
 * before packing them; packed, 0.25 and 0.19 ms. ResNet-50's 3x3 layers of
 * 512 channels on 7x7 planes at batch 1 (49 outputs) took 0.80-0.85 ms
 * with oneDNN, 0.60-0.62 this way; its 1x1 layers there were slower this
 * way (0.27 -> 0.43-0.61 ms: their weights are read as fast by oneDNN and
 * the product has a ninth of the taps to share each load), hence 16
 * outputs at most for 1x1 kernels.
 *
 * Each output is a direct sum over (kh, kw, c) in that order, the taps
 * outside the image contributing zero products: the same exact arithmetic
 * class as the direct kernels, another order of the sum.
 *
 * Why that order (not (c, kh, kw), the weights' own): a row of the tap
 * matrix is then, tap by tap, the input's channels at one pixel, which the
 * blocked layout holds in runs of one block: the rows are filled by vector
 * copies, and the products leave in runs of a block of output channels,
 * the blocked output's own. With the channel outermost the rows were filled
 * one float at a time: on the 2-core Intel Xeon (model 207), VGG-16's
 * 512-channel 4x4 layer spent 45 us of 325-507 us filling them and 25 us
 * scattering the products. */
#include <omp.h>
#include "blk_post.h"
#include "ops.h"

enum { POSITIONS = 64, FEW_1X1 = 16, MAX_TAPS = 49 /* kernels up to 7x7 */ };

int cb_few_supports(const cb_conv_shape *s, int groups, int block)
{
    return groups <= 1 && s->kh * s->kw <= MAX_TAPS && s->dh <= 1 && s->dw <= 1 && block > 0 &&
           s->c % block == 0 && s->oc % block == 0 && s->oc % CB_PACK_PANEL == 0 &&
           (int64_t)s->n * s->oh * s->ow <= (s->kh * s->kw > 1 ? POSITIONS : FEW_1X1);
}

size_t cb_few_weight_floats(const cb_conv_shape *s) { return (size_t)s->oc * s->c * s->kh * s->kw; }

/* Panels of 16 output channels (as cb_pack_rows_as_panels), the rows of
 * each in (tap, channel) order: row t * c + ch holds w[o][ch][t]. */
void cb_few_weights(const cb_conv_shape *s, const float *w, float *wp)
{
    const int taps = s->kh * s->kw, k = s->c * taps;
    for (int p = 0; p < s->oc / CB_PACK_PANEL; p++)
        for (int t = 0; t < taps; t++)
            for (int ch = 0; ch < s->c; ch++)
                for (int j = 0; j < CB_PACK_PANEL; j++)
                    wp[((size_t)p * k + (size_t)t * s->c + ch) * CB_PACK_PANEL + j] =
                        w[((size_t)(p * CB_PACK_PANEL + j) * s->c + ch) * taps + t];
}

size_t cb_few_workspace(const cb_conv_shape *s, int threads)
{
    (void)threads; /* the threads share the tap rows and the product's rows */
    return (size_t)POSITIONS * s->c * s->kh * s->kw + (size_t)POSITIONS * s->oc;
}

/* Where channel 0 of the input under tap t for output position p lies in
 * the blocked value (its sample's first block), or -1 outside the image. */
static void tap_offsets(const cb_conv_shape *s, int block, long off[][MAX_TAPS])
{
    const int per = s->oh * s->ow;
    for (int p = 0; p < s->n * per; p++)
        for (int t = 0; t < s->kh * s->kw; t++) {
            const int n = p / per, oy = (p % per) / s->ow, ox = p % s->ow;
            const int iy = oy * s->sh - s->ph + t / s->kw, ix = ox * s->sw - s->pw + t % s->kw;
            off[p][t] = iy >= 0 && iy < s->h && ix >= 0 && ix < s->w
                            ? (((long)n * (s->c / block)) * s->h * s->w + (long)iy * s->w + ix) * block
                            : -1;
        }
}

/* Row p of the tap matrix: for each tap, the input's c channels at the
 * pixel under it (zeros outside the image), copied a block at a time. */
static void fill_row(const cb_conv_shape *s, int block, const float *x, const long *off, float *row)
{
    const long plane = (long)s->h * s->w * block;
    for (int t = 0; t < s->kh * s->kw; t++, row += s->c) {
        if (off[t] < 0) {
            for (int ch = 0; ch < s->c; ch++) row[ch] = 0.0f;
            continue;
        }
        for (int b = 0; b < s->c / block; b++)
            for (int j = 0; j < block; j++) row[b * block + j] = x[off[t] + b * plane + j];
    }
}

/* The bias and the post-ops (blk_post.h) on one block of output channels
 * at one position, written into the blocked output, eight lanes at a time
 * (a block is 8 or 16). */
static void finish_block(const float *out, const float *bias, const cb_blk_post *post, int npost, int block,
                         float *y)
{
    for (int j = 0; j < block; j += CB_VL) {
        v8f o = v8_load(out + j);
        if (bias) o += v8_load(bias + j);
        v8_store(y + j, cb_blk_post_v8(o, y + j, post, npost));
    }
}

void cb_few_conv(const cb_conv_shape *s, int block, const float *x, const float *wp, const float *bias,
                 const cb_blk_post *post, int npost, float *y, float *ws, int threads)
{
    const int taps = s->kh * s->kw, k = s->c * taps, per = s->oh * s->ow, positions = s->n * per;
    const int panels = s->oc / CB_PACK_PANEL, oblocks = s->oc / block;
    float *a = ws, *out = ws + (size_t)positions * k; /* [positions][k], then [positions][oc] */
    long off[POSITIONS][MAX_TAPS];
    tap_offsets(s, block, off);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
        for (int p = 0; p < positions; p++) fill_row(s, block, x, off[p], a + (size_t)p * k);
        /* The panels in one contiguous run per thread. */
        const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
        const int p0 = (int)((long)panels * tid / nt), p1 = (int)((long)panels * (tid + 1) / nt);
        if (p1 > p0)
            cb_gemm_packed(positions, (p1 - p0) * CB_PACK_PANEL, k, a, k, wp + (size_t)p0 * k * CB_PACK_PANEL,
                           out + (size_t)p0 * CB_PACK_PANEL, s->oc, 0);
#pragma omp barrier
#pragma omp for schedule(static)
        for (int i = 0; i < positions * oblocks; i++) {
            const int p = i / oblocks, ob = i % oblocks, n = p / per, pix = p % per;
            finish_block(out + (size_t)p * s->oc + ob * block, bias ? bias + ob * block : NULL, post, npost, block,
                         y + (((size_t)n * oblocks + ob) * per + pix) * block);
        }
    }
}
