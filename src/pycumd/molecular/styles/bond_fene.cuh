// bond_style fene (LAMMPS BondFENE::compute).  row: [K, R0, epsilon, sigma]
#pragma once
__device__ __forceinline__ void bond_style(double r2, const double* row, double& e, double& fbond, int& err) {
    double k = row[0], r0 = row[1], eps = row[2], sigma = row[3];
    double r0sq = r0 * r0;
    double rlogarg = 1.0 - r2 / r0sq;
    err = 0;
    if (rlogarg < 0.1) {
        err = rlogarg <= -3.0 ? 2 : 1;
        rlogarg = 0.1;
    }
    fbond = -k / rlogarg;
    e = -0.5 * k * r0sq * log(rlogarg);
    if (r2 < 1.2599210498948732 * sigma * sigma) {
        double sr2 = sigma * sigma / r2;
        double sr6 = sr2 * sr2 * sr2;
        fbond += 48.0 * eps * sr6 * (sr6 - 0.5) / r2;
        e += 4.0 * eps * sr6 * (sr6 - 1.0) + eps;
    }
}
