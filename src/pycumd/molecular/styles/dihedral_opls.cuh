// dihedral_style opls.  row: [K1, K2, K3, K4]
#pragma once
__device__ __forceinline__ void dihedral_style(double phi, const double* row, double& e, double& dedphi) {
    e = 0.5 * (row[0] * (1.0 + cos(phi)) + row[1] * (1.0 - cos(2.0 * phi))
               + row[2] * (1.0 + cos(3.0 * phi)) + row[3] * (1.0 - cos(4.0 * phi)));
    dedphi = 0.5 * (-row[0] * sin(phi) + 2.0 * row[1] * sin(2.0 * phi)
                    - 3.0 * row[2] * sin(3.0 * phi) + 4.0 * row[3] * sin(4.0 * phi));
}
