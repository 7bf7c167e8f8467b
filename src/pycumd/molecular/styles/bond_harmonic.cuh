// bond_style harmonic: E = K (r - r0)^2.  row: [K, r0]
#pragma once
__device__ __forceinline__ void bond_style(double r2, const double* row, double& e, double& fbond, int& err) {
    double r = sqrt(r2);
    double dr = r - row[1];
    double rk = row[0] * dr;
    fbond = r > 0.0 ? -2.0 * rk / r : 0.0;
    e = rk * dr;
    err = 0;
}
