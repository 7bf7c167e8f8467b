// CHARMM's switching functions (twin of lj_charmm.py's charmm_switch; LAMMPS' lj/charmm/coul/* styles), for
// inner2 < r2 < rc2 with denom = (rc2 - inner2)^3:
//   S1 = (rc2 - r2)^2 (rc2 + 2 r2 - 3 inner2) / denom   (the factor on the energy)
//   S2 = 12 r2 (rc2 - r2) (r2 - inner2) / denom         (= -r dS1/dr)
// Used by lj_charmm.cuh (the switched LJ) and long_range.cu (the switched Coulomb of lj/charmm/coul/charmm).
#pragma once

template <typename T>
__device__ __forceinline__ void charmm_switch(T r2, T rc2, T inner2, T denom, T& switch1, T& switch2) {
    const T d = rc2 - r2;
    switch1 = d * d * (rc2 + T(2) * r2 - T(3) * inner2) / denom;
    switch2 = T(12) * r2 * d * (r2 - inner2) / denom;
}
