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
#define STEPS 1000000 /* about 1.5 ms a try at 4 GHz: long beside a thread's wake-up and the barrier */
#define MIN_TRIES 10
#define MAX_TRIES 200
#define MIN_SECONDS 0.25 /* tries go on this long, so a core busy for a moment is outlasted */

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

/* The best rate of many tries. All threads run each try together: they
 * start it from a barrier and the try ends at the barrier after it, so
 * waking the threads (once, before the first try) is not timed; a try
 * that ran in ~0.3 ms with the threads' wake-up in it read 15-50% low at 2
 * threads on a 2-core EPYC, and once as if only one core existed. */
double cb_bench_fma_gflops(int threads)
{
    volatile float sink = 0; /* the chains' results are used, so they are computed */
    double best = 1e30, start = 0, t0 = 0; /* shared: the master times, all read stop */
    int stop = 0;
#pragma omp parallel num_threads(threads)
    {
        const int me = omp_get_thread_num();
        const float warm = run_chains((float)me); /* warm-up: clocks up, threads out of sleep */
#pragma omp atomic
        sink += warm;
        for (int r = 0; !stop; r++) {
#pragma omp barrier
#pragma omp master
            {
                t0 = cb_now();
                if (!r) start = t0;
            }
            const float v = run_chains((float)(me + r)); /* a seed of this try: not hoisted out of the loop */
#pragma omp atomic
            sink += v;
#pragma omp barrier
#pragma omp master
            {
                const double t = cb_now();
                if (t - t0 < best) best = t - t0;
                stop = r + 1 >= MAX_TRIES || (r + 1 >= MIN_TRIES && t - start >= MIN_SECONDS);
            }
#pragma omp barrier /* every thread reads the master's stop after it */
        }
    }
    (void)sink;
    return 2.0 * lanes() * CHAINS * (double)STEPS * threads / best / 1e9;
}
