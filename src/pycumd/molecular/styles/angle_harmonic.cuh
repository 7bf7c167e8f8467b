// angle_style harmonic: E = K (theta - theta0)^2.  row: [K, theta0 (radians)]
#pragma once
__device__ __forceinline__ void angle_style(double c, double r13sq, const double* row, double& e, double& dedc,
                                            double& fub) {
    double s = sqrt(1.0 - c * c);
    if (s < 0.001) s = 0.001;
    double dtheta = acos(c) - row[1];
    double tk = row[0] * dtheta;
    e = tk * dtheta;
    dedc = -2.0 * tk / s;
    fub = 0.0;
}
