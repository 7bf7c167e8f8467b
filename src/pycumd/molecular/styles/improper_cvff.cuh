// improper_style cvff: E = K [1 + d cos(n phi)].  row: [K, d, n]
#pragma once
__device__ __forceinline__ void improper_style(double phi, const double* row, double& e, double& dedphi) {
    double k = row[0], d = row[1], n = row[2];
    e = k * (1.0 + d * cos(n * phi));
    dedphi = -k * d * n * sin(n * phi);
}
