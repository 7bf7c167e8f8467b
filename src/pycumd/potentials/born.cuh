// Born-Mayer-Huggins, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, A, 1/rho, sigma, C, D, A/rho, 6 C, 8 D]
//   V = A exp((sigma - r)/rho) - C r^-6 + D r^-8
//   F/r = (A/rho r exp((sigma - r)/rho) - 6 C r^-6 + 8 D r^-8) / r^2
#pragma once
#define PAIR_TABLE_COLUMNS 12

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T r6inv = r2inv * r2inv * r2inv;
    T r = sqrt(r2);
    T rexp = exp((row[6] - r) * row[5]);
    energy = row[4] * rexp - row[7] * r6inv + row[8] * r6inv * r2inv;
    force_over_r = (row[9] * r * rexp - row[10] * r6inv + row[11] * r2inv * r6inv) * r2inv;
}
