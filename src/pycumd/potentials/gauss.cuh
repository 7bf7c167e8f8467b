// Gaussian well, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, A, B]
//   V = -A exp(-B r^2),   F/r = -2 A B exp(-B r^2)
#pragma once
#define PAIR_TABLE_COLUMNS 6

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T g = row[4] * exp(-row[5] * r2);
    energy = -g;
    force_over_r = T(-2) * row[5] * g;
}
