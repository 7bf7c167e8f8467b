// Kernels of the composite-precision synthetic suite (Saponaro 2010, ch. 6) and the kernels
// that expose the float_float.cuh operations elementwise to the tests.
//
// Launched from pycumd/bench/precision.py and tests/test_composite.py through
// backend.kernel_module("composite/composite_suite.cu").  Every rounding is an explicit
// round-to-nearest operation (float_float.cuh's ieee_* or __d*_rn), so each kernel is bit-identical to its CPU twin in
// pycumd/bench/precision.py (float, double and composite alike).

#include "composite/float_float.cuh"

// ------------------------------------------------------------------ elementwise test kernels

// z[i] = op(x[i], y[i]) for op 0: ff_add, 1: ff_sub, 2: ff_mul, 3: ff_div,
// 4: ff_add_f(x, y.hi), 5: ff_mul_f(x, y.hi).
extern "C" __global__ void ff_test_binary(const ff* __restrict__ x, const ff* __restrict__ y,
                                          ff* __restrict__ z, int n, int op)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    ff a = x[i], b = y[i], r;
    switch (op) {
        case 0: r = ff_add(a, b); break;
        case 1: r = ff_sub(a, b); break;
        case 2: r = ff_mul(a, b); break;
        case 3: r = ff_div(a, b); break;
        case 4: r = ff_add_f(a, b.hi); break;
        default: r = ff_mul_f(a, b.hi); break;
    }
    z[i] = r;
}

// out[i] = eft(a[i], b[i]) for op 0: two_sum, 1: fast_two_sum, 2: two_prod.
extern "C" __global__ void ff_test_eft(const float* __restrict__ a, const float* __restrict__ b,
                                       ff* __restrict__ out, int n, int op)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = op == 0 ? two_sum(a[i], b[i]) : (op == 1 ? fast_two_sum(a[i], b[i]) : two_prod(a[i], b[i]));
}

// out[i] = ff_from_double(d[i]); back[i] = ff_to_double(out[i]).
extern "C" __global__ void ff_test_convert(const double* __restrict__ d, ff* __restrict__ out,
                                           double* __restrict__ back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    ff x = ff_from_double(d[i]);
    out[i] = x;
    back[i] = ff_to_double(x);
}

// -------------------------------------------------------------- arithmetic of the three types

__device__ __forceinline__ float acc_zero(float) { return 0.0f; }
__device__ __forceinline__ double acc_zero(double) { return 0.0; }
__device__ __forceinline__ ff acc_zero(ff) { return ff_make(0.0f, 0.0f); }

__device__ __forceinline__ void acc_from(float v, float& r) { r = v; }
__device__ __forceinline__ void acc_from(float v, double& r) { r = ieee_f2d(v); }  // exact
__device__ __forceinline__ void acc_from(float v, ff& r) { r = ff_from_float(v); }

__device__ __forceinline__ float acc_add(float a, float b) { return ieee_fadd(a, b); }
__device__ __forceinline__ double acc_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ ff acc_add(ff a, ff b) { return ff_add(a, b); }

__device__ __forceinline__ float acc_mul(float a, float b) { return ieee_fmul(a, b); }
__device__ __forceinline__ double acc_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ ff acc_mul(ff a, ff b) { return ff_mul(a, b); }

__device__ __forceinline__ float acc_div(float a, float b) { return ieee_fdiv(a, b); }
__device__ __forceinline__ double acc_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ ff acc_div(ff a, ff b) { return ff_div(a, b); }

// ------------------------------------------------------------------------ global summation

// One block of T = blockDim.x threads (T <= 1024).  Thread t sums, in order, either the
// contiguous chunk [t*c, min(n, (t+1)*c)) with c = ceil(n/T) (layout 0) or the strided
// elements t, t+T, t+2T, ... (layout 1):  p_t = (((0 + v_a) + v_b) + ...).  Thread 0 then
// combines the partial sums in thread order: total = (((0 + p_0) + p_1) + ... + p_{T-1}).
template <typename T>
__device__ void global_sum(const float* __restrict__ v, int n, int layout, T* partial, T* total)
{
    const int t = threadIdx.x, threads = blockDim.x;
    T s = acc_zero(T()), x;
    if (layout == 0) {
        const int chunk = (n + threads - 1) / threads;
        const int end = min(n, (t + 1) * chunk);
        for (int i = t * chunk; i < end; ++i) {
            acc_from(v[i], x);
            s = acc_add(s, x);
        }
    } else {
        for (int i = t; i < n; i += threads) {
            acc_from(v[i], x);
            s = acc_add(s, x);
        }
    }
    partial[t] = s;
    __syncthreads();
    if (t == 0) {
        T total_sum = acc_zero(T());
        for (int k = 0; k < threads; ++k) total_sum = acc_add(total_sum, partial[k]);
        *total = total_sum;
    }
}

extern "C" __global__ void global_sum_float(const float* v, int n, int layout, float* partial, float* total)
{
    global_sum<float>(v, n, layout, partial, total);
}
extern "C" __global__ void global_sum_double(const float* v, int n, int layout, double* partial, double* total)
{
    global_sum<double>(v, n, layout, partial, total);
}
extern "C" __global__ void global_sum_ff(const float* v, int n, int layout, ff* partial, ff* total)
{
    global_sum<ff>(v, n, layout, partial, total);
}

// --------------------------------------------------------------------------------- do / undo

// The operand stream: xorshift32 (Marsaglia), state -> state ^= state << 13, >> 17, << 5;
// y = lo + (hi - lo) * U with U = (state >> 8) * 2^-24 in [0, 1), all in float32 round-to-nearest.
__device__ __forceinline__ float next_operand(unsigned int& state, float lo, float width)
{
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    const float unit = ieee_fmul((float)(state >> 8), 5.9604644775390625e-8f);  // exact
    return ieee_fadd(lo, ieee_fmul(width, unit));
}

// One thread, n_iter iterations of  x <- (x * y) / y  (order 0) or  x <- (x / y) * y  (order 1)
// with a fresh operand y each iteration; samples[k] = x after iteration (k + 1) * sample_every.
// In exact arithmetic x never changes: every departure from x0 is accumulated rounding error.
template <typename T>
__device__ void do_undo(float x0, float y_lo, float y_width, unsigned int seed, int n_iter,
                        int order, int sample_every, T* samples)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned int state = seed;
    T x, y;
    acc_from(x0, x);
    for (int i = 1; i <= n_iter; ++i) {
        acc_from(next_operand(state, y_lo, y_width), y);
        x = order == 0 ? acc_div(acc_mul(x, y), y) : acc_mul(acc_div(x, y), y);
        if (i % sample_every == 0) samples[i / sample_every - 1] = x;
    }
}

extern "C" __global__ void do_undo_float(float x0, float y_lo, float y_width, unsigned int seed,
                                         int n_iter, int order, int sample_every, float* samples)
{
    do_undo<float>(x0, y_lo, y_width, seed, n_iter, order, sample_every, samples);
}
extern "C" __global__ void do_undo_double(float x0, float y_lo, float y_width, unsigned int seed,
                                          int n_iter, int order, int sample_every, double* samples)
{
    do_undo<double>(x0, y_lo, y_width, seed, n_iter, order, sample_every, samples);
}
extern "C" __global__ void do_undo_ff(float x0, float y_lo, float y_width, unsigned int seed,
                                      int n_iter, int order, int sample_every, ff* samples)
{
    do_undo<ff>(x0, y_lo, y_width, seed, n_iter, order, sample_every, samples);
}
