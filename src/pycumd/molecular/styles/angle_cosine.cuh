// angle_style cosine: E = K [1 + cos(theta)].  row: [K]
#pragma once
__device__ __forceinline__ void angle_style(double c, double r13sq, const double* row, double& e, double& dedc,
                                            double& fub) {
    e = row[0] * (1.0 + c);
    dedc = row[0];
    fub = 0.0;
}
