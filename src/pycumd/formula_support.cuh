// What the code generated from formulas (pycumd.potentials.formula) needs in device code: the pair
// formulas (potentials/formula.cuh) and the bonded lepton styles (molecular/lepton_raw.cuh).
#pragma once
// a comma inside a generated body (arguments of fmin, pow, ...): nvcc splits a -D value at commas
#define FORMULA_COMMA ,

// x^N for a positive integer N by repeated squaring (unrolled at compile time)
template <int N, typename T>
__device__ __forceinline__ T ipow(T x) {
    if constexpr (N == 1) {
        return x;
    } else if constexpr (N % 2 == 0) {
        T h = ipow<N / 2>(x);
        return h * h;
    } else {
        return x * ipow<N - 1>(x);
    }
}
