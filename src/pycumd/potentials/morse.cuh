// Morse, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, D0, alpha, r0, 2 D0 alpha]
//   d = exp(-alpha (r - r0)),   V = D0 (d^2 - 2 d),   F/r = 2 D0 alpha (d^2 - d) / r
#pragma once
#define PAIR_TABLE_COLUMNS 8

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T rinv = rsqrt(r2);
    T r = r2 * rinv;
    T d = exp(-row[5] * (r - row[6]));
    energy = row[4] * (d * d - T(2) * d);
    force_over_r = row[7] * (d * d - d) * rinv;
}
