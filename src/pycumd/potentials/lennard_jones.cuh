// Lennard-Jones 12-6, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, lj1, lj2, lj3, lj4]
//   F/r = r^-8 (lj1 r^-6 - lj2),   V = r^-6 (lj3 r^-6 - lj4)
#pragma once
#define PAIR_TABLE_COLUMNS 8

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T r6inv = r2inv * r2inv * r2inv;
    force_over_r = r6inv * (row[4] * r6inv - row[5]) * r2inv;
    energy = r6inv * (row[6] * r6inv - row[7]);
}
