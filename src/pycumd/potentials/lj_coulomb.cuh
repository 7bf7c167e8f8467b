// Lennard-Jones 12-6 plus cut / Debye-screened Coulomb, raw (before the cutoff treatment).
// row: [rc2, rc, e_c, f_c, lj1, lj2, lj3, lj4, rc_lj2, offset, qq, rc_coul2, kappa]
//   V   = r^-6 (lj3 r^-6 - lj4) - offset  (r^2 < rc_lj2)  +  qq exp(-kappa r) / r  (r^2 < rc_coul2)
//   F/r = [r^-6 (lj1 r^-6 - lj2) + qq exp(-kappa r) (kappa + 1/r)] / r^2
#pragma once
#define PAIR_TABLE_COLUMNS 13

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T e = T(0), f = T(0);
    if (r2 < row[8]) {
        T r6inv = r2inv * r2inv * r2inv;
        f = r6inv * (row[4] * r6inv - row[5]);
        e = r6inv * (row[6] * r6inv - row[7]) - row[9];
    }
    if (r2 < row[11]) {
        T rinv = rsqrt(r2);
        T r = r2 * rinv;
        T screened = row[10] * exp(-row[12] * r);
        f += screened * (row[12] + rinv);
        e += screened * rinv;
    }
    energy = e;
    force_over_r = f * r2inv;
}
