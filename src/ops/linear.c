/* Fully connected layer, y = x W^T + b with W stored [out, in] (PyTorch). */
#include "ops.h"

void cb_linear_fwd_ref(int n, int k, int o, const float *x, const float *w, const float *b, float *y)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < o; j++) {
            double acc = b ? b[j] : 0.0;
            for (int t = 0; t < k; t++) acc += (double)x[(size_t)i * k + t] * w[(size_t)j * k + t];
            y[(size_t)i * o + j] = (float)acc;
        }
}

void cb_linear_bwd_ref(int n, int k, int o, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db)
{
    if (db)
        for (int j = 0; j < o; j++) {
            double acc = 0;
            for (int i = 0; i < n; i++) acc += dy[(size_t)i * o + j];
            db[j] += (float)acc;
        }
    if (dw)
        for (int j = 0; j < o; j++)
            for (int t = 0; t < k; t++) {
                double acc = 0;
                for (int i = 0; i < n; i++) acc += (double)dy[(size_t)i * o + j] * x[(size_t)i * k + t];
                dw[(size_t)j * k + t] += (float)acc;
            }
    if (dx)
        for (int i = 0; i < n; i++)
            for (int t = 0; t < k; t++) {
                double acc = 0;
                for (int j = 0; j < o; j++) acc += (double)dy[(size_t)i * o + j] * w[(size_t)j * k + t];
                dx[(size_t)i * k + t] += (float)acc;
            }
}

void cb_linear_fwd_fast(int n, int k, int o, const float *x, const float *w, const float *b, float *y)
{
    if (b)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < o; j++) y[(size_t)i * o + j] = b[j];
    cb_gemm(0, 1, n, o, k, 1.0f, x, k, w, k, b ? 1.0f : 0.0f, y, o);
}

void cb_linear_bwd_fast(int n, int k, int o, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db)
{
    if (db)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < o; j++) db[j] += dy[(size_t)i * o + j];
    if (dw) /* dW[o,k] += dy[n,o]^T . x[n,k] */
        cb_gemm(1, 0, o, k, n, 1.0f, dy, o, x, k, 1.0f, dw, k);
    if (dx) /* dx[n,k] += dy[n,o] . W[o,k] */
        cb_gemm(0, 0, n, k, o, 1.0f, dy, o, w, k, 1.0f, dx, k);
}
