// dihedral_style multi/harmonic: E = sum_n A_n cos(phi)^(n-1).  row: [A1 .. A5]
#pragma once
__device__ __forceinline__ void dihedral_style(double phi, const double* row, double& e, double& dedphi) {
    double c = cos(phi);
    e = row[0] + c * (row[1] + c * (row[2] + c * (row[3] + c * row[4])));
    double dedc = row[1] + c * (2.0 * row[2] + c * (3.0 * row[3] + c * 4.0 * row[4]));
    dedphi = -dedc * sin(phi);
}
