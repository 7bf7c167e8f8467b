// Buckingham, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, A, 1/rho, C, A/rho, 6 C]
//   V = A exp(-r/rho) - C r^-6,   F/r = (A/rho r exp(-r/rho) - 6 C r^-6) / r^2
#pragma once
#define PAIR_TABLE_COLUMNS 9

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T r6inv = r2inv * r2inv * r2inv;
    T r = sqrt(r2);
    T rexp = exp(-r * row[5]);
    energy = row[4] * rexp - row[6] * r6inv;
    force_over_r = (row[7] * r * rexp - row[8] * r6inv) * r2inv;
}
