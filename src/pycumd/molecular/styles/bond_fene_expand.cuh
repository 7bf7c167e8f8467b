// bond_style fene/expand (LAMMPS BondFENEExpand::compute).  row: [K, R0, epsilon, sigma, delta]
#pragma once
__device__ __forceinline__ void bond_style(double r2, const double* row, double& e, double& fbond, int& err) {
    double k = row[0], r0 = row[1], eps = row[2], sigma = row[3], shift = row[4];
    double r = sqrt(r2);
    double rshift = r - shift;
    double rshiftsq = rshift * rshift;
    double r0sq = r0 * r0;
    double rlogarg = 1.0 - rshiftsq / r0sq;
    err = 0;
    if (rlogarg < 0.1) {
        err = rlogarg <= -3.0 ? 2 : 1;
        rlogarg = 0.1;
    }
    fbond = -k * rshift / rlogarg / r;
    e = -0.5 * k * r0sq * log(rlogarg);
    if (rshiftsq < 1.2599210498948732 * sigma * sigma) {
        double sr2 = sigma * sigma / rshiftsq;
        double sr6 = sr2 * sr2 * sr2;
        fbond += 48.0 * eps * sr6 * (sr6 - 0.5) / rshift / r;
        e += 4.0 * eps * sr6 * (sr6 - 1.0) + eps;
    }
}
