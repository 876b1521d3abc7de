/* Sixteen samples in the vector lanes: the transposes between a batch's
 * NCHW planes and a block's lane layout, where one 16-float vector holds one
 * element of 16 samples (conv_nb.c, conv_nb_fwd.c). AVX-512 builds only.
 * Internal. */
#ifndef CB_OPS_LANES_H
#define CB_OPS_LANES_H

#if defined(__AVX512F__)
#include <stddef.h>
#include <immintrin.h>

#define CB_LANES 16

/* r[l] (16 floats of sample l) -> r[e] (element e of the 16 samples): a
 * 16 x 16 transpose in registers, in four rounds of shuffles. */
static inline void cb_transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* u[i + m], 128-bit lane k: rows i .. i + 3 of element 4k + m */
        const __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
        const __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
        u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
    for (int m = 0; m < 4; m++) {
        const __m512 a = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), b = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
        const __m512 c = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
        const __m512 d = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
        r[m] = _mm512_shuffle_f32x4(a, c, 0x88);
        r[4 + m] = _mm512_shuffle_f32x4(a, c, 0xDD);
        r[8 + m] = _mm512_shuffle_f32x4(b, d, 0x88);
        r[12 + m] = _mm512_shuffle_f32x4(b, d, 0xDD);
    }
}

/* Planes of `ch` x (h x w) per sample, of samples n0 .. n0 + count - 1,
 * into lanes: element (c, y, x) to dst[((c * DH + y + y0) * DW + x + x0) * 16]
 * (the rest of dst is left as it is; missing samples are zero lanes). 16
 * elements of 16 samples at a time, through cb_transpose16. */
static inline void cb_to_lanes(const float *src, size_t per_sample, int n0, int count, int ch, int h, int w,
                               float *dst, int dh, int dw, int y0, int x0)
{
    const int e_all = ch * h * w;
    for (int e0 = 0; e0 < e_all; e0 += CB_LANES) {
        const int len = e_all - e0 < CB_LANES ? e_all - e0 : CB_LANES;
        const __mmask16 m = (__mmask16)(len == CB_LANES ? 0xFFFF : (1u << len) - 1);
        __m512 r[CB_LANES];
        for (int l = 0; l < CB_LANES; l++)
            r[l] = l < count ? _mm512_maskz_loadu_ps(m, src + (size_t)(n0 + l) * per_sample + e0) : _mm512_setzero_ps();
        cb_transpose16(r);
        for (int q = 0; q < len; q++) {
            const int e = e0 + q, c = e / (h * w), y = (e / w) % h, x = e % w;
            _mm512_storeu_ps(dst + (((size_t)c * dh + y + y0) * dw + x + x0) * CB_LANES, r[q]);
        }
    }
}

/* The inverse of a dense block (per_sample elements in lane layout, no
 * border): its lanes stored to (or, where add, added to) samples n0 ..
 * n0 + count - 1 of dst. */
static inline void cb_from_lanes(const float *src, size_t per_sample, int n0, int count, float *dst, int add)
{
    for (size_t e0 = 0; e0 < per_sample; e0 += CB_LANES) {
        const int len = per_sample - e0 < CB_LANES ? (int)(per_sample - e0) : CB_LANES;
        const __mmask16 m = (__mmask16)(len == CB_LANES ? 0xFFFF : (1u << len) - 1);
        __m512 r[CB_LANES];
        for (int q = 0; q < CB_LANES; q++)
            r[q] = q < len ? _mm512_loadu_ps(src + (e0 + q) * CB_LANES) : _mm512_setzero_ps();
        cb_transpose16(r);
        for (int l = 0; l < count; l++) {
            float *d = dst + (size_t)(n0 + l) * per_sample + e0;
            _mm512_mask_storeu_ps(d, m, add ? _mm512_add_ps(_mm512_maskz_loadu_ps(m, d), r[l]) : r[l]);
        }
    }
}

#endif
#endif
