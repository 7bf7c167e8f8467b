// Lennard-Jones 12-6 with CHARMM switching (twin of lj_charmm.py's lj_charmm_raw; LAMMPS' lj/charmm/coul/long).
// row: [rc2, rc, e_c, f_c, lj1, lj2, lj3, lj4, r_in^2, (rc^2 - r_in^2)^3]
//   for r^2 > r_in^2: S1 = (rc^2 - r^2)^2 (rc^2 + 2 r^2 - 3 r_in^2) / denom, S2 = 12 r^2 (rc^2 - r^2)(r^2 - r_in^2) / denom,
//   r F = r^-6 (lj1 r^-6 - lj2) S1 + V S2, V_switched = V S1
#pragma once
#include "potentials/charmm_switch.cuh"
#define PAIR_TABLE_COLUMNS 10

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    T r2inv = T(1) / r2;
    T r6inv = r2inv * r2inv * r2inv;
    T force_lj = r6inv * (row[4] * r6inv - row[5]);
    energy = r6inv * (row[6] * r6inv - row[7]);
    if (r2 > row[8]) {
        T switch1, switch2;
        charmm_switch(r2, row[0], row[8], row[9], switch1, switch2);
        force_lj = force_lj * switch1 + energy * switch2;
        energy = energy * switch1;
    }
    force_over_r = force_lj * r2inv;
}
