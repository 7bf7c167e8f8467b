// dihedral_style lepton: E = f(phi), f generated (molecular/lepton_raw.cuh), phi in 0..2 pi (LAMMPS' range for
// this style: the angle of bonded.cu plus 2 pi where it is negative).  row: [branch, 0, 0, ...]
#pragma once
#define LEPTON_VARIABLE phi
#include "molecular/lepton_raw.cuh"
__device__ __forceinline__ void dihedral_style(double phi, const double* row, double& e, double& dedphi) {
    if (phi < 0.0) phi += 6.283185307179586;
    lepton_raw(phi, row, e, dedphi);
}
