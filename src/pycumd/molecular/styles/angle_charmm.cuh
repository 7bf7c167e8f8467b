// angle_style charmm: K (theta - theta0)^2 + K_ub (r13 - r_ub)^2.  row: [K, theta0 (radians), K_ub, r_ub]
#pragma once
__device__ __forceinline__ void angle_style(double c, double r13sq, const double* row, double& e, double& dedc,
                                            double& fub) {
    double rub = sqrt(r13sq);
    double dr = rub - row[3];
    double rk = row[2] * dr;
    fub = rub > 0.0 ? -2.0 * rk / rub : 0.0;
    double s = sqrt(1.0 - c * c);
    if (s < 0.001) s = 0.001;
    double dtheta = acos(c) - row[1];
    double tk = row[0] * dtheta;
    e = rk * dr + tk * dtheta;
    dedc = -2.0 * tk / s;
}
