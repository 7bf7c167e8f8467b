// improper_style harmonic: E = K (|phi| - chi0)^2.  row: [K, chi0 (radians)]
#pragma once
__device__ __forceinline__ void improper_style(double phi, const double* row, double& e, double& dedphi) {
    double chi = fabs(phi);
    double dchi = chi - row[1];
    double sign = phi >= 0.0 ? 1.0 : -1.0;
    double s = sin(chi);
    double clamp = s < 0.001 ? s / 0.001 : 1.0;   // LAMMPS divides by max(sin chi, 0.001)
    e = row[0] * dchi * dchi;
    dedphi = 2.0 * row[0] * dchi * sign * clamp;
}
