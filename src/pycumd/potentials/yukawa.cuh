// Screened Coulomb (Yukawa), raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, A, kappa],   A = Z_i Z_j e^2,  kappa = 1 / lambda
//   V = A exp(-kappa r) / r,   F/r = V (1/r + kappa) / r
#pragma once
#define PAIR_TABLE_COLUMNS 6

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T rinv = rsqrt(r2);
    T r = r2 * rinv;
    energy = row[4] * exp(-row[5] * r) * rinv;
    force_over_r = energy * (rinv + row[5]) * rinv;
}
