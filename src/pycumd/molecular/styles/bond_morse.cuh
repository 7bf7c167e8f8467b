// bond_style morse: E = D0 [1 - exp(-alpha (r - r0))]^2.  row: [D0, alpha, r0]
#pragma once
__device__ __forceinline__ void bond_style(double r2, const double* row, double& e, double& fbond, int& err) {
    double d0 = row[0], alpha = row[1], r0 = row[2];
    double r = sqrt(r2);
    double ralpha = exp(-alpha * (r - r0));
    fbond = r > 0.0 ? -2.0 * d0 * alpha * (1.0 - ralpha) * ralpha / r : 0.0;
    e = d0 * (1.0 - ralpha) * (1.0 - ralpha);
    err = 0;
}
