// Soft cosine repulsion, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, A, pi/rc, A pi/rc]
//   V = A (1 + cos(pi r / rc)),   F/r = A pi/rc sin(pi r / rc) / r   (0 at r = 0)
#pragma once
#define PAIR_TABLE_COLUMNS 7

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r = sqrt(r2);
    T arg = row[5] * r;
    energy = row[4] * (T(1) + cos(arg));
    force_over_r = r > T(0) ? row[6] * sin(arg) / r : T(0);
}
