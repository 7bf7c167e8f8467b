// dihedral_style charmm: E = K [1 + cos(n phi - d)].  row: [K, n, d (radians), w]
#pragma once
__device__ __forceinline__ void dihedral_style(double phi, const double* row, double& e, double& dedphi) {
    double k = row[0], n = row[1], d = row[2];
    e = k * (1.0 + cos(n * phi - d));
    dedphi = -k * n * sin(n * phi - d);
}
