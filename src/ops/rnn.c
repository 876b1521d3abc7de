/* Recurrent layers, forward and backward through time, and the embedding
 * and last-step selection that feed and follow them.
 *
 * LSTM with PyTorch's layout and semantics: gate rows of W_ih [4H, D] and
 * W_hh [4H, H] in the order input, forget, cell (g), output;
 *   i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o),
 *   c_t = f * c_{t-1} + i * g,  h_t = o * tanh(c_t),  h_{-1} = c_{-1} = 0.
 * The input projection of all time steps is one matrix product; each step
 * then adds the recurrent product. Per sample, x is [T, D] and the output
 * the hidden states [T, H]. The forward pass keeps the activated gates and
 * the cell states ("saved": [n, T, 5H]) for the backward pass.
 * Matrix products go through rnn_gemm: double-accumulating loops at the
 * reference level, cb_gemm at the fast level. Inference whose kernels
 * run single-threaded, or of one sample, multiplies a recurrent matrix
 * packed once per pass (cb_gemm_packed, steps_pack), and may take its
 * input projections from a table of the embedding times W_ih
 * (src/graph/proj_table.c). */
#include <math.h>
#include <omp.h>
#include <string.h>
#include "fastmath.h"
#include "ops.h"

/* C[m,n] (ldc) = beta * C + A[m,k] (lda, transposed if ta) . B[k,n] (ldb, transposed if tb) */
static void rnn_gemm(int fast, int ta, int tb, int m, int n, int k, const float *a, int lda, const float *b,
                     int ldb, float beta, float *c, int ldc)
{
    if (fast) {
        cb_gemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                double av = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
                double bv = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                acc += av * bv;
            }
            /* beta 0 must not read C: it may hold anything, NaN included */
            c[(size_t)i * ldc + j] = (float)(beta != 0.0f ? beta * c[(size_t)i * ldc + j] + acc : acc);
        }
}

/* db_a[j] += sum_r ga[r, j] and db_b[j] += sum_r gb[r, j] (either may be
 * NULL). The fast level gives each thread a block of columns, summed over
 * the rows in order, so the result does not depend on the thread count. */
static void bias_grads(int fast, int rows, int cols, const float *ga, const float *gb, float *db_a, float *db_b)
{
    const int blocks = (cols + 63) / 64;
#pragma omp parallel for schedule(static) if (fast)
    for (int blk = 0; blk < blocks; blk++) {
        const int j0 = blk * 64, j1 = j0 + 64 < cols ? j0 + 64 : cols;
        for (int r = 0; r < rows; r++)
            for (int j = j0; j < j1; j++) {
                if (db_a) db_a[j] += ga[(size_t)r * cols + j];
                if (db_b) db_b[j] += gb[(size_t)r * cols + j];
            }
    }
}

static float sigm_ref(float v) { return (float)(1.0 / (1.0 + exp(-(double)v))); }
/* Gate nonlinearities: vectorisable approximations in fast kernels, libm in
 * reference ones. `fast` is loop invariant, so the compiler splits the loops. */
static inline float sigm(float v, int fast) { return fast == CB_FAST_APPROX ? sigmoid_approx(v) : sigm_ref(v); }
static inline float tanh_g(float v, int fast) { return fast == CB_FAST_APPROX ? tanh_approx(v) : tanhf(v); }

/* One sample's LSTM cell at one step for hidden units [lo, hi): gates in
 * place, cell and hidden state. Always inlined with constant flags, so the
 * loop vectorises. */
static inline __attribute__((always_inline)) void lstm_cell_units(int H, int lo, int hi, float *restrict a,
                                                                  const float *restrict cprev, float *restrict c,
                                                                  float *restrict h, int fast, int prev)
{
    for (int j = lo; j < hi; j++) {
        float i = sigm(a[j], fast), f = sigm(a[H + j], fast), g = tanh_g(a[2 * H + j], fast),
              o = sigm(a[3 * H + j], fast);
        a[j] = i, a[H + j] = f, a[2 * H + j] = g, a[3 * H + j] = o;
        c[j] = f * (prev ? cprev[j] : 0.0f) + i * g;
        h[j] = o * tanh_g(c[j], fast);
    }
}

static inline __attribute__((always_inline)) void lstm_cell(int H, float *restrict a, const float *restrict cprev,
                                                            float *restrict c, float *restrict h, int fast, int prev)
{
    lstm_cell_units(H, 0, H, a, cprev, c, h, fast, prev);
}

void cb_lstm_fwd(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *b_ih,
                 const float *b_hh, float *y, float *saved, int fast)
{
    const int T = s->t, D = s->d, H = s->h, G = 4 * H, S = 5 * H; /* saved row: 4H gates + H cell */
    /* Pre-activations of every step: saved[:, t, 0:4H] = x_t W_ih^T + b_ih + b_hh */
    rnn_gemm(fast, 0, 1, s->n * T, G, D, x, D, w_ih, D, 0.0f, saved, S);
#pragma omp parallel for schedule(static) if (fast)
    for (int r = 0; r < s->n * T; r++)
        for (int j = 0; j < G; j++) saved[(size_t)r * S + j] += (b_ih ? b_ih[j] : 0.0f) + (b_hh ? b_hh[j] : 0.0f);
    for (int t = 0; t < T; t++) {
        if (t > 0) /* + h_{t-1} W_hh^T for all samples at once */
            rnn_gemm(fast, 0, 1, s->n, G, H, y + (size_t)(t - 1) * H, T * H, w_hh, H, 1.0f, saved + (size_t)t * S,
                     T * S);
#pragma omp parallel for schedule(static) if (fast)
        for (int n = 0; n < s->n; n++) {
            float *a = saved + ((size_t)n * T + t) * S, *c = a + G;
            const float *cprev = t > 0 ? saved + ((size_t)n * T + t - 1) * S + G : NULL;
            float *h = y + ((size_t)n * T + t) * H;
            if (fast == CB_FAST_APPROX && cprev) lstm_cell(H, a, cprev, c, h, 1, 1);
            else if (fast == CB_FAST_APPROX) lstm_cell(H, a, cprev, c, h, 1, 0);
            else lstm_cell(H, a, cprev, c, h, 0, cprev != NULL);
        }
    }
}

/* A block's input projections (rows r = time-major (step, sample) pairs
 * from step t0) copied from a table's rows by token id; the ids are [N, T]
 * exact integer floats the embedding step has already checked. */
static void lookup_rows(int rows, int N, int T, int t0, int G, const float *ids, const float *table, float *out,
                        int fast)
{
#pragma omp parallel for schedule(static) if (fast && rows > 1)
    for (int r = 0; r < rows; r++)
        memcpy(out + (size_t)r * G, table + (size_t)ids[(size_t)(r % N) * T + t0 + r / N] * G, (size_t)G * sizeof *out);
}

/* Inference: nothing is kept for a backward pass. The input projection
 * runs a few steps at a time (blocks of about 512 rows: all samples at
 * steps t0..t0+TB), into a block that stays in cache until its steps read
 * it, instead of all T steps at once into a [n, T, 5H] buffer that the
 * steps then read back from memory (at batch 128 per thread, 393 MB a
 * pass). The arithmetic is the training pass's, in the same order:
 * x_t W_ih^T, + (b_ih + b_hh), + h_{t-1} W_hh^T, then the cell. */
static int infer_block_steps(const cb_rnn_shape *s)
{
    const int tb = (512 + s->n - 1) / s->n;
    return tb < s->t ? tb : s->t;
}

size_t cb_lstm_infer_workspace(const cb_rnn_shape *s)
{
    const size_t rows = (size_t)infer_block_steps(s) * s->n;
    return rows * s->d + rows * 4 * s->h + 2 * (size_t)s->n * s->h + 4 * (size_t)s->h + 4 * (size_t)s->h * s->h;
}

/* H a multiple of 16: each gate's rows (the LSTM's 4H, the GRU's r, z and
 * n), and each thread's share of them (whole vectors, thread_units), are
 * whole panels. */
int cb_rnn_infer_packs(int h, int fast) { return fast && h % CB_PACK_PANEL == 0; }

/* How a pass of n samples runs its steps: *one_sample where one sample runs
 * on all threads (one parallel region, thread_units); returns whether the
 * steps multiply W_hh's panels: where the kernels run single-threaded (a
 * slice of sliced inference, one chunk on the calling thread) or one sample
 * runs on all threads (each thread packs and reads its own rows). A whole
 * batch on all threads keeps the threaded cb_gemm. */
static int steps_pack(int n, int h, int fast, int *one_sample)
{
    *one_sample = n == 1 && fast && omp_get_max_threads() > 1 && !omp_in_parallel();
    return cb_rnn_infer_packs(h, fast) && (omp_get_max_threads() == 1 || *one_sample);
}

/* A thread's share of hidden units: whole vectors, [lo, hi) of H. */
static void thread_units(int H, int *lo, int *hi)
{
    const int nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int chunk = ((H + nt - 1) / nt + 15) / 16 * 16;
    *lo = tid * chunk < H ? tid * chunk : H;
    *hi = *lo + chunk < H ? *lo + chunk : H;
}

/* out[g * H + j] += (W_hh's row g * H + j) . h for gates g0..g0+ng-1 and
 * units j in [lo, hi), over runs of 64 rows, in reverse order at odd
 * steps. The rows are W_hh's panels where whp is not NULL (cb_gemm_packed
 * at one row, each unit's products summed in order), else W_hh read in
 * place by SGEMV. Why the panels: on a 2-core AMD EPYC (Zen 5) a step's
 * products took 15.1 us from them against 22.0 us by OpenBLAS's SGEMV
 * (Haswell kernels), the 4 MiB of the LSTM's W_hh streamed at 277 against
 * 190 GB/s. Why the order: a thread's rows (2 MiB of that W_hh at 2
 * threads) do not fit its 1 MiB second-level cache, so read in the same
 * order each step they all come from the shared cache; read back and
 * forth, the rows read last at one step are read first, from the core's
 * own cache, at the next. */
static void recurrent_rows(const float *w_hh, const float *whp, int H, int g0, int ng, int lo, int hi,
                           const float *h, float *out, int reverse)
{
    enum { RUN = 64 };
    const int per = (hi - lo + RUN - 1) / RUN, runs = ng * per;
    for (int q = 0; q < runs; q++) {
        const int k = reverse ? runs - 1 - q : q, g = g0 + k / per, r0 = lo + (k % per) * RUN;
        const int r1 = r0 + RUN < hi ? r0 + RUN : hi;
        const size_t row = (size_t)g * H + r0;
        if (whp) cb_gemm_packed(1, r1 - r0, H, h, H, whp + row * H, out + row, r1 - r0, 1);
        else cb_sgemv_rows(r1 - r0, H, w_hh + row * H, H, h, out + row);
    }
}

/* Packs this thread's rows of W_hh (gates 0..ng-1, its units [lo, hi)) as
 * the panels recurrent_rows reads; no other thread reads them. */
static void pack_own_rows(const float *w_hh, int H, int ng, int lo, int hi, float *whp)
{
    for (int g = 0; g < ng && hi > lo; g++) {
        const size_t row = (size_t)g * H + lo;
        cb_pack_rows_as_panels(hi - lo, H, w_hh + row * H, H, whp + row * H);
    }
}

/* One sample's steps t0..t0+steps on all threads (batch-1 latency): one
 * parallel region for the block, each thread the recurrent products (its
 * rows of W_hh, packed by the thread at the first step) and the cell of
 * its own hidden units, then one barrier per step. Why: the general loop forks and joins twice a
 * step (cb_gemm's SGEMV halves, then the cell on one thread), 600 times a
 * pass at T = 300. Each unit's sums are the same dot products. */
static void lstm_steps_one_sample(int H, int t0, int steps, const float *w_hh, float *whp, float *gates,
                                  float *cs[2], float *y, int fast)
{
#pragma omp parallel
    {
        int lo, hi;
        thread_units(H, &lo, &hi);
        if (whp && t0 == 0) pack_own_rows(w_hh, H, 4, lo, hi, whp);
        for (int t = t0; t < t0 + steps; t++) {
            float *a = gates + (size_t)(t - t0) * 4 * H, *h = y + (size_t)t * H;
            const float *hprev = y + (size_t)(t - 1) * H, *cprev = cs[(t + 1) & 1];
            if (t > 0 && hi > lo) /* the gates' rows for units [lo, hi): + h_{t-1} W_hh^T */
                recurrent_rows(w_hh, whp, H, 0, 4, lo, hi, hprev, a, t & 1);
            if (fast == CB_FAST_APPROX && t > 0) lstm_cell_units(H, lo, hi, a, cprev, cs[t & 1], h, 1, 1);
            else if (fast == CB_FAST_APPROX) lstm_cell_units(H, lo, hi, a, NULL, cs[t & 1], h, 1, 0);
            else lstm_cell_units(H, lo, hi, a, t > 0 ? cprev : NULL, cs[t & 1], h, 0, t > 0);
#pragma omp barrier
        }
    }
}

void cb_lstm_infer(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *b_ih,
                   const float *b_hh, float *y, float *ws, int fast, const float *ids, const float *table)
{
    const int T = s->t, D = s->d, H = s->h, G = 4 * H, N = s->n, TB = infer_block_steps(s);
    float *xb = ws;                                /* [TB, N, D] the block's inputs, time-major */
    float *gates = xb + (size_t)TB * N * D;        /* [TB, N, 4H] their pre-activations */
    float *cs[2] = {gates + (size_t)TB * N * G, gates + (size_t)TB * N * G + (size_t)N * H}; /* [N, H] cell states,
                                                                                       alternately c_t and c_{t-1} */
    float *bias = cs[1] + (size_t)N * H;           /* [4H] b_ih + b_hh */
    float *whp = bias + G;                         /* [4H, H] W_hh^T in panels, where packed */
    int one_sample;
    const int packed = steps_pack(N, H, fast, &one_sample);
    if (packed && !one_sample) cb_pack_rows_as_panels(G, H, w_hh, H, whp);
    for (int j = 0; j < G; j++) bias[j] = (b_ih ? b_ih[j] : 0.0f) + (b_hh ? b_hh[j] : 0.0f);
    for (int t0 = 0; t0 < T; t0 += TB) {
        const int steps = t0 + TB <= T ? TB : T - t0, rows = steps * N;
        if (table) /* the projections looked up by token id (proj_table.c) */
            lookup_rows(rows, N, T, t0, G, ids, table, gates, fast);
        else {
#pragma omp parallel for schedule(static) if (fast && rows > 1)
            for (int r = 0; r < rows; r++)
                memcpy(xb + (size_t)r * D, x + ((size_t)(r % N) * T + t0 + r / N) * D, (size_t)D * sizeof *xb);
            rnn_gemm(fast, 0, 1, rows, G, D, xb, D, w_ih, D, 0.0f, gates, G);
        }
#pragma omp parallel for schedule(static) if (fast && rows > 1)
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < G; j++) gates[(size_t)r * G + j] += bias[j];
        if (one_sample) {
            lstm_steps_one_sample(H, t0, steps, w_hh, packed ? whp : NULL, gates, cs, y, fast);
            continue;
        }
        for (int t = t0; t < t0 + steps; t++) {
            float *gt = gates + (size_t)(t - t0) * N * G;
            if (t > 0 && packed) /* + h_{t-1} W_hh^T, this slice's samples */
                cb_gemm_packed(N, G, H, y + (size_t)(t - 1) * H, T * H, whp, gt, G, 1);
            else if (t > 0) /* + h_{t-1} W_hh^T for all samples at once */
                rnn_gemm(fast, 0, 1, N, G, H, y + (size_t)(t - 1) * H, T * H, w_hh, H, 1.0f, gt, G);
#pragma omp parallel for schedule(static) if (fast)
            for (int n = 0; n < N; n++) {
                float *a = gt + (size_t)n * G, *cn = cs[t & 1] + (size_t)n * H, *h = y + ((size_t)n * T + t) * H;
                const float *cprev = cs[(t + 1) & 1] + (size_t)n * H;
                if (fast == CB_FAST_APPROX && t > 0) lstm_cell(H, a, cprev, cn, h, 1, 1);
                else if (fast == CB_FAST_APPROX) lstm_cell(H, a, NULL, cn, h, 1, 0);
                else lstm_cell(H, a, t > 0 ? cprev : NULL, cn, h, 0, t > 0);
            }
        }
    }
}

void cb_lstm_bwd(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *y,
                 const float *saved, const float *dy, float *dx, float *dw_ih, float *dw_hh, float *db_ih,
                 float *db_hh, float *ws, int fast)
{
    const int T = s->t, D = s->d, H = s->h, G = 4 * H, S = 5 * H;
    float *dgates = ws;                                  /* [n, T, 4H] pre-activation gradients */
    float *dh_next = dgates + (size_t)s->n * T * G;      /* [n, H] */
    float *dc_next = dh_next + (size_t)s->n * H;         /* [n, H] */
    memset(dh_next, 0, (size_t)s->n * H * sizeof(float));
    memset(dc_next, 0, (size_t)s->n * H * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
#pragma omp parallel for schedule(static) if (fast)
        for (int n = 0; n < s->n; n++) {
            const float *a = saved + ((size_t)n * T + t) * S, *c = a + G;
            const float *cprev = t > 0 ? saved + ((size_t)n * T + t - 1) * S + G : NULL;
            const float *g_in = dy + ((size_t)n * T + t) * H;
            float *dg = dgates + ((size_t)n * T + t) * G, *dhn = dh_next + (size_t)n * H, *dcn = dc_next + (size_t)n * H;
            for (int j = 0; j < H; j++) {
                float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j];
                float dh = g_in[j] + dhn[j], tc = tanh_g(c[j], fast);
                float dc = dh * o * (1.0f - tc * tc) + dcn[j];
                dg[j] = dc * g * i * (1.0f - i);                              /* input gate */
                dg[H + j] = (cprev ? dc * cprev[j] : 0.0f) * f * (1.0f - f);   /* forget gate */
                dg[2 * H + j] = dc * i * (1.0f - g * g);                      /* cell candidate */
                dg[3 * H + j] = dh * tc * o * (1.0f - o);                     /* output gate */
                dcn[j] = dc * f;
            }
        }
        /* dh_{t-1} = dgates_t W_hh, for all samples */
        if (t > 0) rnn_gemm(fast, 0, 0, s->n, H, G, dgates + (size_t)t * G, T * G, w_hh, H, 0.0f, dh_next, H);
    }
    const int rows = s->n * T;
    if (dw_ih) rnn_gemm(fast, 1, 0, G, D, rows, dgates, G, x, D, 1.0f, dw_ih, D);
    if (dw_hh && T > 1)
        for (int n = 0; n < s->n; n++) /* sum over t >= 1 of dgates_t^T h_{t-1} */
            rnn_gemm(fast, 1, 0, G, H, T - 1, dgates + ((size_t)n * T + 1) * G, G, y + (size_t)n * T * H, H, 1.0f,
                     dw_hh, H);
    bias_grads(fast, rows, G, dgates, dgates, db_ih, db_hh);
    if (dx) rnn_gemm(fast, 0, 0, rows, D, G, dgates, G, w_ih, D, 1.0f, dx, D);
}

size_t cb_lstm_workspace(const cb_rnn_shape *s) { return (size_t)s->n * s->t * 4 * s->h + 2 * (size_t)s->n * s->h; }

cb_status cb_embedding_fwd(int64_t n_ids, const float *ids, const float *w, int64_t vocab, int dim, float *y)
{
    for (int64_t i = 0; i < n_ids; i++) {
        float v = ids[i];
        if (!(v >= 0 && v < (float)vocab) || v != floorf(v))
            return cb_fail(CB_ERR_INVALID_ARG, "embedding: token id %g is not an integer in [0, %lld)", (double)v,
                           (long long)vocab);
        memcpy(y + (size_t)i * dim, w + (size_t)v * dim, (size_t)dim * sizeof *y);
    }
    return CB_OK;
}

void cb_embedding_bwd(int64_t n_ids, const float *ids, int dim, const float *dy, float *dw)
{
    /* Only the rows of the ids seen receive gradient. */
    for (int64_t i = 0; i < n_ids; i++) {
        float *row = dw + (size_t)ids[i] * dim;
        const float *g = dy + (size_t)i * dim;
        for (int j = 0; j < dim; j++) row[j] += g[j];
    }
}

/* GRU, PyTorch's semantics: gate rows r, z, n; the reset gate applied after
 * the recurrent product (ONNX linear_before_reset = 1):
 *   r = sigmoid(xr + hr), z = sigmoid(xz + hz), n = tanh(xn + r * hn),
 *   h_t = (1 - z) * n + z * h_{t-1},
 * with x* = x W_i*^T + b_i* and h* = h_{t-1} W_h*^T + b_h*.
 * The reset-before variant (Keras reset_after=False, "GRU-rb") instead uses
 *   n = tanh(xn + (r * h_{t-1}) W_hn^T + b_hn).
 * saved per step (6H): r, z, n, hn (reset after: the recurrent n-part;
 * reset before: unused), and r * h_{t-1} (H, reset before) + spare. */
#define GRU_SAVED(h) (6 * (h))

static void gru_recurrent(const cb_rnn_shape *s, int reset_before, int t, const float *y, const float *w_hh,
                          const float *b_hh, float *hp, int fast)
{
    /* hp[n, 3H] = h_{t-1} W_hh^T + b_hh (rows r, z always; n only reset-after) */
    const int T = s->t, H = s->h, rows = reset_before ? 2 * H : 3 * H;
    if (t > 0) rnn_gemm(fast, 0, 1, s->n, rows, H, y + (size_t)(t - 1) * H, T * H, w_hh, H, 0.0f, hp, 3 * H);
    else memset(hp, 0, (size_t)s->n * 3 * H * sizeof *hp);
#pragma omp parallel for schedule(static) if (fast)
    for (int n = 0; n < s->n; n++)
        for (int j = 0; j < rows; j++) hp[(size_t)n * 3 * H + j] += b_hh ? b_hh[j] : 0.0f;
}

/* The GRU's elementwise gate work of one sample and step. Always inlined
 * and called with a constant `fast`, so each call site becomes a loop the
 * compiler vectorises (a run-time choice inside the loop kept it scalar). */
static inline __attribute__((always_inline)) void gru_rz_units(int H, int lo, int hi, const float *restrict xr,
                                                               const float *restrict hr, const float *restrict hprev,
                                                               float *restrict sv, float *restrict rhn, int fast)
{
    for (int j = lo; j < hi; j++) {
        float r = sigm(xr[j] + hr[j], fast), z = sigm(xr[H + j] + hr[H + j], fast);
        sv[j] = r;
        sv[H + j] = z;
        rhn[j] = r * hprev[j];
    }
}

static inline __attribute__((always_inline)) void gru_rz(int H, const float *restrict xr, const float *restrict hr,
                                                         const float *restrict hprev, float *restrict sv,
                                                         float *restrict rhn, int fast)
{
    gru_rz_units(H, 0, H, xr, hr, hprev, sv, rhn, fast);
}

/* reset after: n = tanh(xn + r * hn); reset before (rmul 0): tanh(xn + hn), r being inside hn */
static inline __attribute__((always_inline)) void gru_n_units(int H, int lo, int hi, const float *restrict xr,
                                                              const float *restrict hr, const float *restrict hprev,
                                                              const float *restrict rhn, float rmul,
                                                              float *restrict sv, float *restrict h, int fast)
{
    for (int j = lo; j < hi; j++) {
        float r = sv[j], z = sv[H + j];
        float nn = tanh_g(xr[2 * H + j] + (r * rmul + (1.0f - rmul)) * hr[2 * H + j], fast);
        sv[2 * H + j] = nn;
        sv[4 * H + j] = rhn[j];
        h[j] = (1.0f - z) * nn + z * hprev[j];
    }
}

static inline __attribute__((always_inline)) void gru_n(int H, const float *restrict xr, const float *restrict hr,
                                                        const float *restrict hprev, const float *restrict rhn,
                                                        float rmul, float *restrict sv, float *restrict h, int fast)
{
    gru_n_units(H, 0, H, xr, hr, hprev, rhn, rmul, sv, h, fast);
}

void cb_gru_fwd(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                const float *b_ih, const float *b_hh, float *y, float *saved, float *ws, int fast)
{
    const int T = s->t, D = s->d, H = s->h, S = GRU_SAVED(H);
    float *xp = ws, *hp = xp + (size_t)s->n * T * 3 * H, *rh = hp + (size_t)s->n * 3 * H;
    float *zero = rh + (size_t)s->n * H; /* h_{-1}: the gate loops read a row, never a branch */
    memset(zero, 0, (size_t)H * sizeof *zero);
    rnn_gemm(fast, 0, 1, s->n * T, 3 * H, D, x, D, w_ih, D, 0.0f, xp, 3 * H);
    if (b_ih)
#pragma omp parallel for schedule(static) if (fast)
        for (long r = 0; r < (long)s->n * T; r++)
            for (int j = 0; j < 3 * H; j++) xp[(size_t)r * 3 * H + j] += b_ih[j];
    const float rmul = reset_before ? 0.0f : 1.0f;
    for (int t = 0; t < T; t++) {
        gru_recurrent(s, reset_before, t, y, w_hh, b_hh, hp, fast);
#pragma omp parallel for schedule(static) if (fast)
        for (int n = 0; n < s->n; n++) {
            const float *restrict xr = xp + ((size_t)n * T + t) * 3 * H, *restrict hr = hp + (size_t)n * 3 * H;
            const float *restrict hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : zero;
            float *restrict sv = saved + ((size_t)n * T + t) * S, *restrict rhn = rh + (size_t)n * H;
            if (fast == CB_FAST_APPROX) gru_rz(H, xr, hr, hprev, sv, rhn, 1);
            else gru_rz(H, xr, hr, hprev, sv, rhn, 0);
            if (!reset_before) memcpy(sv + 3 * H, hr + 2 * H, (size_t)H * sizeof *sv);
        }
        if (reset_before) { /* hp[:, n rows] = (r * h_{t-1}) W_hn^T + b_hn */
            rnn_gemm(fast, 0, 1, s->n, H, H, rh, H, w_hh + (size_t)2 * H * H, H, 0.0f, hp + 2 * H, 3 * H);
#pragma omp parallel for schedule(static) if (fast)
            for (int n = 0; n < s->n; n++)
                for (int j = 0; j < H; j++) hp[(size_t)n * 3 * H + 2 * H + j] += b_hh ? b_hh[2 * H + j] : 0.0f;
        }
#pragma omp parallel for schedule(static) if (fast)
        for (int n = 0; n < s->n; n++) {
            const float *restrict xr = xp + ((size_t)n * T + t) * 3 * H, *restrict hr = hp + (size_t)n * 3 * H;
            const float *restrict hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : zero;
            const float *restrict rhn = rh + (size_t)n * H;
            float *restrict sv = saved + ((size_t)n * T + t) * S, *restrict h = y + ((size_t)n * T + t) * H;
            if (fast == CB_FAST_APPROX) gru_n(H, xr, hr, hprev, rhn, rmul, sv, h, 1);
            else gru_n(H, xr, hr, hprev, rhn, rmul, sv, h, 0);
        }
    }
}

/* Inference, as cb_lstm_infer: nothing kept for a backward pass, the
 * input projection a block of steps at a time (infer_block_steps), the
 * gates of one step in a per-sample row, and where the kernels run
 * single-threaded the recurrent products on W_hh packed once per pass.
 * The arithmetic is cb_gru_fwd's, in the same order. */
size_t cb_gru_infer_workspace(const cb_rnn_shape *s)
{
    const size_t rows = (size_t)infer_block_steps(s) * s->n, h = (size_t)s->h, n = (size_t)s->n;
    return rows * s->d + rows * 3 * h + n * 3 * h + n * h + n * GRU_SAVED(h) + h + 3 * h * h;
}

/* One sample's GRU steps on all threads, as lstm_steps_one_sample: each
 * thread its units' rows of the recurrent products (its panels of W_hh) and
 * gates; one barrier per step, two where the reset comes before the
 * product (its n rows need every unit's r * h_{t-1}). */
static void gru_steps_one_sample(int H, int t0, int steps, int reset_before, const float *w_hh, float *whp,
                                 const float *b_hh, const float *xp, float *hp, float *rh, float *sv,
                                 const float *zero, float *y, int fast)
{
    const float rmul = reset_before ? 0.0f : 1.0f;
#pragma omp parallel
    {
        int lo, hi;
        thread_units(H, &lo, &hi);
        if (whp && t0 == 0) pack_own_rows(w_hh, H, 3, lo, hi, whp);
        for (int t = t0; t < t0 + steps; t++) {
            const float *xt = xp + (size_t)(t - t0) * 3 * H, *hprev = t > 0 ? y + (size_t)(t - 1) * H : zero;
            float *h = y + (size_t)t * H;
            const int ng = reset_before ? 2 : 3; /* hp = h_{t-1} W_hh^T + b_hh, this thread's rows */
            for (int g = 0; g < ng; g++)
                for (int j = lo; j < hi; j++) hp[g * H + j] = 0.0f;
            if (t > 0 && hi > lo) recurrent_rows(w_hh, whp, H, 0, ng, lo, hi, hprev, hp, t & 1);
            for (int g = 0; g < ng; g++)
                for (int j = lo; j < hi; j++) hp[g * H + j] += b_hh ? b_hh[g * H + j] : 0.0f;
            if (fast == CB_FAST_APPROX) gru_rz_units(H, lo, hi, xt, hp, hprev, sv, rh, 1);
            else gru_rz_units(H, lo, hi, xt, hp, hprev, sv, rh, 0);
            if (reset_before) { /* hp's n rows = (r * h_{t-1}) W_hn^T + b_hn, once every r is there */
#pragma omp barrier
                float *hn = hp + 2 * H;
                for (int j = lo; j < hi; j++) hn[j] = 0.0f;
                if (hi > lo) recurrent_rows(w_hh, whp, H, 2, 1, lo, hi, rh, hp, t & 1);
                for (int j = lo; j < hi; j++) hn[j] += b_hh ? b_hh[2 * H + j] : 0.0f;
            }
            if (fast == CB_FAST_APPROX) gru_n_units(H, lo, hi, xt, hp, hprev, rh, rmul, sv, h, 1);
            else gru_n_units(H, lo, hi, xt, hp, hprev, rh, rmul, sv, h, 0);
#pragma omp barrier
        }
    }
}

void cb_gru_infer(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                  const float *b_ih, const float *b_hh, float *y, float *ws, int fast, const float *ids,
                  const float *table)
{
    const int T = s->t, D = s->d, H = s->h, N = s->n, TB = infer_block_steps(s), S = GRU_SAVED(H);
    float *xb = ws;                                /* [TB, N, D] the block's inputs, time-major */
    float *xp = xb + (size_t)TB * N * D;           /* [TB, N, 3H] their projections */
    float *hp = xp + (size_t)TB * N * 3 * H;       /* [N, 3H] the recurrent products */
    float *rh = hp + (size_t)N * 3 * H;            /* [N, H] r * h_{t-1} */
    float *sv = rh + (size_t)N * H;                /* [N, 6H] one step's gates (cb_gru_fwd's saved row) */
    float *zero = sv + (size_t)N * S;              /* [H] h_{-1} */
    float *whp = zero + H;                         /* [3H, H] W_hh^T in panels, where packed */
    memset(zero, 0, (size_t)H * sizeof *zero);
    int one_sample;
    const int packed = steps_pack(N, H, fast, &one_sample);
    if (packed && !one_sample) cb_pack_rows_as_panels(3 * H, H, w_hh, H, whp);
    const float rmul = reset_before ? 0.0f : 1.0f;
    const int rec_rows = reset_before ? 2 * H : 3 * H;
    for (int t0 = 0; t0 < T; t0 += TB) {
        const int steps = t0 + TB <= T ? TB : T - t0, rows = steps * N;
        if (table)
            lookup_rows(rows, N, T, t0, 3 * H, ids, table, xp, fast);
        else {
#pragma omp parallel for schedule(static) if (fast && rows > 1)
            for (int r = 0; r < rows; r++)
                memcpy(xb + (size_t)r * D, x + ((size_t)(r % N) * T + t0 + r / N) * D, (size_t)D * sizeof *xb);
            rnn_gemm(fast, 0, 1, rows, 3 * H, D, xb, D, w_ih, D, 0.0f, xp, 3 * H);
        }
        if (b_ih)
#pragma omp parallel for schedule(static) if (fast && rows > 1)
            for (int r = 0; r < rows; r++)
                for (int j = 0; j < 3 * H; j++) xp[(size_t)r * 3 * H + j] += b_ih[j];
        if (one_sample) {
            gru_steps_one_sample(H, t0, steps, reset_before, w_hh, packed ? whp : NULL, b_hh, xp, hp, rh, sv, zero,
                                 y, fast);
            continue;
        }
        for (int t = t0; t < t0 + steps; t++) {
            const float *xt = xp + (size_t)(t - t0) * N * 3 * H;
            /* hp = h_{t-1} W_hh^T + b_hh (rows r, z; n too where the reset comes after) */
            if (t > 0 && packed)
                cb_gemm_packed(N, rec_rows, H, y + (size_t)(t - 1) * H, T * H, whp, hp, 3 * H, 0);
            else if (t > 0)
                rnn_gemm(fast, 0, 1, N, rec_rows, H, y + (size_t)(t - 1) * H, T * H, w_hh, H, 0.0f, hp, 3 * H);
            else
                memset(hp, 0, (size_t)N * 3 * H * sizeof *hp);
#pragma omp parallel for schedule(static) if (fast)
            for (int n = 0; n < N; n++) {
                float *hr = hp + (size_t)n * 3 * H;
                for (int j = 0; j < rec_rows; j++) hr[j] += b_hh ? b_hh[j] : 0.0f;
                const float *hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : zero;
                if (fast == CB_FAST_APPROX) gru_rz(H, xt + (size_t)n * 3 * H, hr, hprev, sv + (size_t)n * S, rh + (size_t)n * H, 1);
                else gru_rz(H, xt + (size_t)n * 3 * H, hr, hprev, sv + (size_t)n * S, rh + (size_t)n * H, 0);
            }
            if (reset_before) { /* hp[:, n rows] = (r * h_{t-1}) W_hn^T + b_hn */
                if (packed) cb_gemm_packed(N, H, H, rh, H, whp + (size_t)2 * H * H, hp + 2 * H, 3 * H, 0);
                else rnn_gemm(fast, 0, 1, N, H, H, rh, H, w_hh + (size_t)2 * H * H, H, 0.0f, hp + 2 * H, 3 * H);
#pragma omp parallel for schedule(static) if (fast)
                for (int n = 0; n < N; n++)
                    for (int j = 0; j < H; j++) hp[(size_t)n * 3 * H + 2 * H + j] += b_hh ? b_hh[2 * H + j] : 0.0f;
            }
#pragma omp parallel for schedule(static) if (fast)
            for (int n = 0; n < N; n++) {
                const float *hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : zero;
                float *h = y + ((size_t)n * T + t) * H;
                if (fast == CB_FAST_APPROX)
                    gru_n(H, xt + (size_t)n * 3 * H, hp + (size_t)n * 3 * H, hprev, rh + (size_t)n * H, rmul,
                          sv + (size_t)n * S, h, 1);
                else
                    gru_n(H, xt + (size_t)n * 3 * H, hp + (size_t)n * 3 * H, hprev, rh + (size_t)n * H, rmul,
                          sv + (size_t)n * S, h, 0);
            }
        }
    }
}

void cb_gru_bwd(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                const float *y, const float *saved, const float *dy, float *dx, float *dw_ih, float *dw_hh,
                float *db_ih, float *db_hh, float *ws, int fast)
{
    const int T = s->t, D = s->d, H = s->h, S = GRU_SAVED(H), G = 3 * H;
    float *dgx = ws;                                   /* [n, T, 3H]: gradients of x W_ih^T + b_ih */
    float *dgh = dgx + (size_t)s->n * T * G;           /* [n, T, 3H]: of the recurrent products' outputs */
    float *dh_next = dgh + (size_t)s->n * T * G;       /* [n, H] */
    float *drh = dh_next + (size_t)s->n * H;           /* [n, H]: reset before, d(r * h_{t-1}) */
    memset(dh_next, 0, (size_t)s->n * H * sizeof(float));
    for (int t = T - 1; t >= 0; t--) {
#pragma omp parallel for schedule(static) if (fast)
        for (int n = 0; n < s->n; n++) {
            const float *sv = saved + ((size_t)n * T + t) * S;
            const float *hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : NULL;
            const float *g_in = dy + ((size_t)n * T + t) * H;
            float *gx = dgx + ((size_t)n * T + t) * G, *gh = dgh + ((size_t)n * T + t) * G;
            float *dhn = dh_next + (size_t)n * H;
            for (int j = 0; j < H; j++) {
                float r = sv[j], z = sv[H + j], nn = sv[2 * H + j], hp = hprev ? hprev[j] : 0.0f;
                float dh = g_in[j] + dhn[j];
                float dz = dh * (hp - nn), dn = dh * (1.0f - z);
                float dan = dn * (1.0f - nn * nn);
                gx[2 * H + j] = dan;
                gx[H + j] = gh[H + j] = dz * z * (1.0f - z);
                if (!reset_before) {
                    float dr = dan * sv[3 * H + j];
                    gx[j] = gh[j] = dr * r * (1.0f - r);
                    gh[2 * H + j] = dan * r;
                } else {
                    gh[2 * H + j] = dan; /* r's share comes through d(r * h) below */
                }
                dhn[j] = dh * z; /* the direct path; the products' share is added below */
            }
        }
        if (reset_before) { /* d(r * h) = dan W_hn; then dr and the share of h_{t-1} */
            rnn_gemm(fast, 0, 0, s->n, H, H, dgh + (size_t)t * G + 2 * H, T * G, w_hh + (size_t)2 * H * H, H, 0.0f,
                     drh, H);
#pragma omp parallel for schedule(static) if (fast)
            for (int n = 0; n < s->n; n++) {
                const float *sv = saved + ((size_t)n * T + t) * S;
                const float *hprev = t > 0 ? y + ((size_t)n * T + t - 1) * H : NULL;
                float *gx = dgx + ((size_t)n * T + t) * G, *gh = dgh + ((size_t)n * T + t) * G;
                for (int j = 0; j < H; j++) {
                    float r = sv[j], hp = hprev ? hprev[j] : 0.0f, d = drh[(size_t)n * H + j];
                    gx[j] = gh[j] = d * hp * r * (1.0f - r);
                    dh_next[(size_t)n * H + j] += d * r;
                }
            }
        }
        if (t > 0) { /* + the recurrent products' share of dh_{t-1} */
            const int rows = reset_before ? 2 * H : 3 * H;
            rnn_gemm(fast, 0, 0, s->n, H, rows, dgh + (size_t)t * G, T * G, w_hh, H, 1.0f, dh_next, H);
        }
    }
    const int rows = s->n * T;
    if (dw_ih) rnn_gemm(fast, 1, 0, G, D, rows, dgx, G, x, D, 1.0f, dw_ih, D);
    if (dw_hh && T > 1)
        for (int n = 0; n < s->n; n++) {
            const float *gh = dgh + ((size_t)n * T + 1) * G;
            if (!reset_before) {
                rnn_gemm(fast, 1, 0, G, H, T - 1, gh, G, y + (size_t)n * T * H, H, 1.0f, dw_hh, H);
            } else { /* rows r, z against h_{t-1}; rows n against r * h_{t-1} (saved) */
                rnn_gemm(fast, 1, 0, 2 * H, H, T - 1, gh, G, y + (size_t)n * T * H, H, 1.0f, dw_hh, H);
                rnn_gemm(fast, 1, 0, H, H, T - 1, gh + 2 * H, G, saved + ((size_t)n * T + 1) * S + 4 * H, S, 1.0f,
                         dw_hh + (size_t)2 * H * H, H);
            }
        }
    bias_grads(fast, rows, G, dgx, dgh, db_ih, db_hh);
    if (dx) rnn_gemm(fast, 0, 0, rows, D, G, dgx, G, w_ih, D, 1.0f, dx, D);
}

size_t cb_gru_workspace(const cb_rnn_shape *s)
{
    /* forward: xp [n,T,3H] + hp [n,3H] + rh [n,H] + a zero row [H]; backward: 2 x [n,T,3H] + 2 x [n,H] */
    size_t nt = (size_t)s->n * s->t, h = (size_t)s->h, n = (size_t)s->n;
    size_t fwd = nt * 3 * h + n * 4 * h + h, bwd = 2 * nt * 3 * h + 2 * n * h;
    return fwd > bwd ? fwd : bwd;
}
