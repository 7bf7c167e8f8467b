// angle_style cosine/squared: E = K [cos(theta) - cos(theta0)]^2.  row: [K, cos(theta0)]
#pragma once
__device__ __forceinline__ void angle_style(double c, double r13sq, const double* row, double& e, double& dedc,
                                            double& fub) {
    double dcos = c - row[1];
    double tk = row[0] * dcos;
    e = tk * dcos;
    dedc = 2.0 * tk;
    fub = 0.0;
}
