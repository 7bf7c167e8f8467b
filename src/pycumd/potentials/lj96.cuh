// Lennard-Jones 9-6, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, lj1, lj2, lj3, lj4]
//   F/r = r^-8 (lj1 r^-3 - lj2),   V = r^-6 (lj3 r^-3 - lj4)
#pragma once
#define PAIR_TABLE_COLUMNS 8

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T r6inv = r2inv * r2inv * r2inv;
    T r3inv = sqrt(r6inv);
    force_over_r = r6inv * (row[4] * r3inv - row[5]) * r2inv;
    energy = r6inv * (row[6] * r3inv - row[7]);
}
