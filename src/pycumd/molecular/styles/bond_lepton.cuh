// bond_style lepton: E = f(r - r0) - offset, f generated (molecular/lepton_raw.cuh).  row: [branch, r0, offset, ...]
#pragma once
#define LEPTON_VARIABLE r
#include "molecular/lepton_raw.cuh"
__device__ __forceinline__ void bond_style(double r2, const double* row, double& e, double& fbond, int& err) {
    double r = sqrt(r2);
    double energy, dedr;
    lepton_raw(r - row[1], row, energy, dedr);
    fbond = r > 0.0 ? -dedr / r : 0.0;
    e = energy - row[2];
    err = 0;
}
