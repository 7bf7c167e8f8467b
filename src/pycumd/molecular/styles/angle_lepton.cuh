// angle_style lepton: E = f(theta - theta0) - offset, f generated (molecular/lepton_raw.cuh); dE/dc = -f' / s,
// s = sin(theta) clamped at 0.001 as LAMMPS.  row: [branch, theta0 (radians), offset, ...]
#pragma once
#define LEPTON_VARIABLE theta
#include "molecular/lepton_raw.cuh"
__device__ __forceinline__ void angle_style(double c, double r13sq, const double* row, double& e, double& dedc,
                                            double& fub) {
    double s = sqrt(1.0 - c * c);
    if (s < 0.001) s = 0.001;
    double energy, dedtheta;
    lepton_raw(acos(c) - row[1], row, energy, dedtheta);
    e = energy - row[2];
    dedc = -dedtheta * (1.0 / s);
    fub = 0.0;
}
