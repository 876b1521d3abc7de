/* Winograd F(2x2, 3x3) convolution on channel-blocked values (nChw8c or
 * nChw16c), for
 * the blocked-layout rewrite of inference at the fastmath level
 * (src/graph/blocked.c).
 *
 * Why: a 3x3, stride-1 convolution computes each 2x2 block of outputs from
 * a 4x4 window of inputs. Transformed into the Winograd domain (Lavin and
 * Gray, 2016), the window's 16 points each need one product per input and
 * output channel instead of the direct method's 36 per 2x2 block: 2.25x
 * fewer multiply-adds, paid for by cheap additions before and after. On a
 * 2-core AMD EPYC (AVX2), at batch 1, ResNet-50's 64-channel 3x3 layer at
 * 56x56 took 0.71 ms this way against oneDNN 2.6's 1.5 ms; with 512
 * channels at 7x7 (16 blocks of outputs) it took 2.8 ms against 2.3 ms,
 * because the transformed weights (16/9 of the originals, 16 MiB there)
 * stream from memory for few outputs. Hence the rule in cb_wino_supports:
 * at most 256 input and output channels.
 *
 * On AVX-512 (nChw16c; 2-core AMD EPYC Zen 5, oneDNN's 16-lane direct
 * kernels the alternative), per 256 samples at batch 32: ResNet-50's 3x3
 * layers of 64 channels at 56x56 124 -> 103 ms, 128 at 28x28 124 -> 73,
 * 256 at 14x14 125 -> 69. At batch 1 the 256-channel layer (49 tiles of
 * 2x2 outputs) was slower, 57 -> 67 ms per 100 samples: its 4 MiB of
 * transformed weights come from memory for 5 groups of tiles, where the
 * direct kernel reads 2.25 MiB once. The 128-channel one (196 tiles) was
 * faster, 51 -> 37. Hence, then, at least 96 tiles on nChw16c.
 *
 * Since the point products fetch their panels ahead (gemm_packed.c), the
 * transformed weights stream as fast as the direct kernel's. Measured
 * again on the 2-core Intel Xeon (model 207), at batch 1, 2 threads, the
 * weights rotated over 8 to 16 copies so that they come from the last-level
 * cache or memory as in a pass, means of 200: 256 channels at 14x14 (49
 * tiles) 600 us by the direct kernel, 355-385 this way (600 before the
 * prefetch); 256 at 8x8 (16 tiles) 249 -> 178; 128 at 16x16 (64 tiles)
 * 217 -> 114; 256 at 7x7 (16 tiles) 170 -> 161; 256 at 4x4 (4 tiles)
 * 116 -> 155, slower. Hence, on nChw16c, at least WINO_MIN_TILES tiles at
 * the plan's largest batch (not measured on nChw8c, which keeps the
 * channel bound alone). The 512-channel layers at 7x7 stay with the
 * direct kernel: 690 against 510 us with 8 copies cached, but 700 against
 * 940 with 16 copies (256 MiB, from memory). Not yet measured on an AMD
 * EPYC with the prefetch: the 96-tile rule above came from one.
 *
 * The rounding differs from a direct sum (the transforms add and subtract
 * inputs before multiplying), so only the fastmath level runs it.
 *
 * Layout of the work: tiles (2x2 output blocks) are taken in groups of at
 * most WINO_GROUP per thread. For a group: the input transform writes
 * V[16][group][C]; 16 matrix products M[xi] = V[xi] U[xi] (U: the
 * transformed weights, packed in panels of 16 output channels:
 * cb_gemm_packed); the output transform reads M[16][group][OC] and writes
 * y with the bias and post-ops. A group's V and M (at most 384 KiB at 256
 * channels) stay in the core's cache between the three phases. */
#include <omp.h>
#include "blk_post.h"
#include <stdlib.h>
#include "ops.h"
#include "vec.h"

enum { WINO_GROUP = 12, PANEL = CB_PACK_PANEL, WINO_MIN_TILES = 16 };

int cb_wino_supports(const cb_conv_shape *s, int groups, int block)
{
    return (block == 8 || block == 16) && s->kh == 3 && s->kw == 3 && s->sh == 1 && s->sw == 1 && s->ph == 1 &&
           s->pw == 1 && s->dh <= 1 && s->dw <= 1 && groups <= 1 && s->oh == s->h && s->ow == s->w &&
           s->c % block == 0 && s->oc % PANEL == 0 && s->oc % block == 0 && s->c <= 256 && s->oc <= 256 &&
           (block == 8 || (int64_t)s->n * ((s->oh + 1) / 2) * ((s->ow + 1) / 2) >= WINO_MIN_TILES);
}

size_t cb_wino_weight_floats(const cb_conv_shape *s) { return (size_t)16 * s->oc * s->c; }

size_t cb_wino_workspace(const cb_conv_shape *s, int threads)
{
    return (size_t)threads * 16 * WINO_GROUP * (size_t)(s->c + s->oc) + (size_t)threads * 16; /* + alignment */
}

/* U = G g G^T per (output, input) channel pair, with
 * G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], stored as
 * u[xi][oc / 16][c][16]: for each of the 16 points, panels of 16 output
 * channels, each a row of 16 per input channel (the product's B panels). */
void cb_wino_weights(const cb_conv_shape *s, const float *w, float *u)
{
    const int oc = s->oc, c = s->c, panels = oc / PANEL;
#pragma omp parallel for schedule(static) if ((size_t)oc * c > 4096)
    for (int o = 0; o < oc; o++)
        for (int i = 0; i < c; i++) {
            const float *g = w + ((size_t)o * c + i) * 9;
            float t[4][3], r[4][4];
            for (int j = 0; j < 3; j++) {
                t[0][j] = g[j];
                t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
                t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
                t[3][j] = g[6 + j];
            }
            for (int k = 0; k < 4; k++) {
                r[k][0] = t[k][0];
                r[k][1] = 0.5f * (t[k][0] + t[k][1] + t[k][2]);
                r[k][2] = 0.5f * (t[k][0] - t[k][1] + t[k][2]);
                r[k][3] = t[k][2];
            }
            for (int xi = 0; xi < 16; xi++)
                u[(((size_t)xi * panels + o / PANEL) * c + i) * PANEL + o % PANEL] = r[xi / 4][xi % 4];
        }
}

typedef struct wino_tiles {
    int th, tw; /* tiles per column and row of an image */
    int block;  /* the layout's channel block: 8 or 16 */
} wino_tiles;

/* The first of 8 channels from channel k (a multiple of 8) of sample n in
 * a blocked [N, C/B, hw, B] value: its block's plane, then its half of the
 * block where B is 16. The transforms work on 8 channels at a time. */
static size_t eight_at(int block, int c, size_t hw, int n, int k)
{
    return (((size_t)n * (c / block) + k / block) * hw) * block + k % block;
}

/* V = B^T d B for tile t's 4x4 window (zero outside the image), with
 * B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], all channels, into
 * v[xi][tl][c] (rows of stride c, planes of stride group * c). */
static void input_tile(const cb_conv_shape *s, const wino_tiles *tl, const float *x, int t, int row, int group,
                       float *v)
{
    const int n = t / (tl->th * tl->tw), r = t % (tl->th * tl->tw), iy = 2 * (r / tl->tw) - 1,
              ix = 2 * (r % tl->tw) - 1;
    long off[16];
    int inside = 1;
    for (int q = 0; q < 16; q++) {
        const int yy = iy + q / 4, xx = ix + q % 4, ok = yy >= 0 && yy < s->h && xx >= 0 && xx < s->w;
        inside &= ok;
        off[q] = ok ? ((long)yy * s->w + xx) * tl->block : -1;
    }
    const size_t plane = (size_t)group * s->c, hw = (size_t)s->h * s->w;
    for (int cb = 0; cb < s->c / CB_VL; cb++) {
        const float *xp = x + eight_at(tl->block, s->c, hw, n, cb * CB_VL);
        v8f d[4][4], e[4][4];
        if (inside)
            for (int q = 0; q < 16; q++) d[q / 4][q % 4] = v8_load(xp + off[q]);
        else
            for (int q = 0; q < 16; q++) d[q / 4][q % 4] = off[q] >= 0 ? v8_load(xp + off[q]) : v8_splat(0.0f);
        for (int j = 0; j < 4; j++) {
            e[0][j] = d[0][j] - d[2][j];
            e[1][j] = d[1][j] + d[2][j];
            e[2][j] = d[2][j] - d[1][j];
            e[3][j] = d[1][j] - d[3][j];
        }
        float *vp = v + (size_t)row * s->c + (size_t)cb * CB_VL;
        for (int i = 0; i < 4; i++) {
            v8_store(vp + (size_t)(4 * i) * plane, e[i][0] - e[i][2]);
            v8_store(vp + (size_t)(4 * i + 1) * plane, e[i][1] + e[i][2]);
            v8_store(vp + (size_t)(4 * i + 2) * plane, e[i][2] - e[i][1]);
            v8_store(vp + (size_t)(4 * i + 3) * plane, e[i][1] - e[i][3]);
        }
    }
}

/* Y = A^T M A + bias, A^T = [1 1 1 0; 0 1 -1 -1], for tile t from
 * m[xi][tl][oc], then the post-ops; outputs past the image's edge dropped. */
static void output_tile(const cb_conv_shape *s, const wino_tiles *tl, const float *m, int t, int row, int group,
                        const float *bias, const cb_blk_post *post, int npost, float *y)
{
    const int n = t / (tl->th * tl->tw), r = t % (tl->th * tl->tw), oy = 2 * (r / tl->tw), ox = 2 * (r % tl->tw);
    const size_t plane = (size_t)group * s->oc, hw = (size_t)s->oh * s->ow;
    for (int ob = 0; ob < s->oc / CB_VL; ob++) {
        const float *mp = m + (size_t)row * s->oc + (size_t)ob * CB_VL;
        v8f a[4][4], e[2][4];
        for (int xi = 0; xi < 16; xi++) a[xi / 4][xi % 4] = v8_load(mp + (size_t)xi * plane);
        for (int j = 0; j < 4; j++) {
            e[0][j] = a[0][j] + a[1][j] + a[2][j];
            e[1][j] = a[1][j] - a[2][j] - a[3][j];
        }
        const v8f bv = bias ? v8_load(bias + (size_t)ob * CB_VL) : v8_splat(0.0f);
        const int B = tl->block;
        float *yp = y + eight_at(B, s->oc, hw, n, ob * CB_VL);
        for (int i = 0; i < 2 && oy + i < s->oh; i++) {
            float *p0 = yp + ((size_t)(oy + i) * s->ow + ox) * B;
            v8_store(p0, cb_blk_post_v8(e[i][0] + e[i][1] + e[i][2] + bv, p0, post, npost));
            if (ox + 1 < s->ow) v8_store(p0 + B, cb_blk_post_v8(e[i][1] - e[i][2] - e[i][3] + bv, p0 + B, post, npost));
        }
    }
}

void cb_wino_conv(const cb_conv_shape *s, int block, const float *x, const float *u, const float *bias,
                  const cb_blk_post *post, int npost, float *y, float *ws, int threads)
{
    const wino_tiles tl = {(s->oh + 1) / 2, (s->ow + 1) / 2, block};
    const int tiles = s->n * tl.th * tl.tw;
    /* Groups of at most WINO_GROUP tiles, a multiple of the thread count where there are enough. */
    int groups = (tiles + WINO_GROUP - 1) / WINO_GROUP;
    if (groups % threads) groups += threads - groups % threads;
    if (groups > tiles) groups = tiles;
    const int group = (tiles + groups - 1) / groups;
    const size_t per_thread = 16 * (size_t)WINO_GROUP * (size_t)(s->c + s->oc) + 16;
#pragma omp parallel num_threads(threads)
    {
        float *v = ws + per_thread * (size_t)omp_get_thread_num();
        v += (16 - ((uintptr_t)v / sizeof(float)) % 16) % 16; /* 64-byte rows for the loads */
        float *m = v + 16 * (size_t)group * s->c;
#pragma omp for schedule(static)
        for (int gi = 0; gi < groups; gi++) {
            const int t0 = gi * group, tn = t0 + group <= tiles ? group : tiles - t0;
            if (tn <= 0) continue;
            for (int r = 0; r < tn; r++) input_tile(s, &tl, x, t0 + r, r, group, v);
            for (int xi = 0; xi < 16; xi++)
                cb_gemm_packed(tn, s->oc, s->c, v + (size_t)xi * group * s->c, s->c, u + (size_t)xi * s->oc * s->c,
                               m + (size_t)xi * group * s->oc, s->oc, 0);
            for (int r = 0; r < tn; r++) output_tile(s, &tl, m, t0 + r, r, group, bias, post, npost, y);
        }
    }
}
