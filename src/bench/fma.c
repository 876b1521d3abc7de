/* The processor's peak: fused multiply-adds per second, measured. Each
 * thread runs chains of independent vector FMAs on registers (enough
 * chains to cover the FMA latency of the units seen: 4 cycles, 2 ports),
 * so the rate is the FMA units' own, with no memory traffic; the SGEMM
 * rate beside it is what a tuned library reaches of it. */
#include <math.h>
#include <omp.h>
#include <immintrin.h>
#include "../core/clock.h"
#include "bench.h"

#define CHAINS 12
#define STEPS 200000

/* One thread's FMAs (lanes x 2 flops each), timed by the caller. */
static float run_chains(float seed)
{
#if defined(__AVX512F__)
    __m512 acc[CHAINS];
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_set1_ps(seed + (float)k);
    for (int s = 0; s < STEPS; s++)
        for (int k = 0; k < CHAINS; k++) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
    __m512 sum = acc[0];
    for (int k = 1; k < CHAINS; k++) sum = _mm512_add_ps(sum, acc[k]);
    return _mm512_reduce_add_ps(sum);
#elif defined(__FMA__)
    __m256 acc[CHAINS];
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < CHAINS; k++) acc[k] = _mm256_set1_ps(seed + (float)k);
    for (int s = 0; s < STEPS; s++)
        for (int k = 0; k < CHAINS; k++) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
    __m256 sum = acc[0];
    for (int k = 1; k < CHAINS; k++) sum = _mm256_add_ps(sum, acc[k]);
    float lanes[8];
    _mm256_storeu_ps(lanes, sum);
    return lanes[0] + lanes[7];
#else
    float acc[CHAINS];
    for (int k = 0; k < CHAINS; k++) acc[k] = seed + (float)k;
    for (int s = 0; s < STEPS; s++)
        for (int k = 0; k < CHAINS; k++) acc[k] = fmaf(acc[k], 0.999999f, 1e-7f);
    float sum = 0;
    for (int k = 0; k < CHAINS; k++) sum += acc[k];
    return sum;
#endif
}

static int lanes(void)
{
#if defined(__AVX512F__)
    return 16;
#elif defined(__FMA__)
    return 8;
#else
    return 1;
#endif
}

double cb_bench_fma_gflops(int threads)
{
    volatile float sink = 0; /* the chains' results are used, so they are computed */
    double best = 1e30;
    for (int r = 0; r < 6; r++) { /* the first is the warm-up (clocks, threads out of sleep) */
        const double t0 = cb_now();
#pragma omp parallel num_threads(threads)
        {
            const float v = run_chains((float)omp_get_thread_num());
#pragma omp atomic
            sink += v;
        }
        const double t = cb_now() - t0;
        if (r && t < best) best = t;
    }
    (void)sink;
    return 2.0 * lanes() * CHAINS * (double)STEPS * threads / best / 1e9;
}
