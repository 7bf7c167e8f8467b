// Nuclear pasta (Horowitz et al.), raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, a, B = b + c tau_i tau_j, 1/Lambda, C (e^2 for p-p, else 0), kappa]
//   g1 = exp(-r^2/Lambda), g2 = exp(-r^2/(2 Lambda))
//   V   = a g1 + B g2 + C exp(-kappa r)/r
//   F/r = (2 a g1 + B g2)/Lambda + C exp(-kappa r)/r (1/r + kappa)/r
#pragma once
#define PAIR_TABLE_COLUMNS 9

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T rinv = rsqrt(r2);
    T r = r2 * rinv;
    T g1 = exp(-r2 * row[6]);
    T g2 = exp(T(-0.5) * r2 * row[6]);
    T vc = row[7] * exp(-row[8] * r) * rinv;
    energy = row[4] * g1 + row[5] * g2 + vc;
    force_over_r = (T(2) * row[4] * g1 + row[5] * g2) * row[6] + vc * (rinv + row[8]) * rinv;
}
