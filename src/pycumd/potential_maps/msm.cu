// Multilevel summation: anterpolation of the atoms' charges onto the finest grid,
//     q_m = sum_a q_a Phi(s_ax - m_x) Phi(s_ay - m_y) Phi(s_az - m_z),  s_a = (r_a - O) / h,
// with the C1 cubic (Catmull-Rom) basis Phi(t) = 1 - 5/2 t^2 + 3/2 |t|^3 (|t| <= 1),
// -1/2 (|t| - 1)(2 - |t|)^2 (1 <= |t| <= 2), 0 beyond.  One thread per atom scatters its 4 x 4 x 4
// weights with float64 atomics (the order of those adds is not fixed: the grid charges may differ
// in the last bits between runs).

__device__ __forceinline__ void cubic_weights(double s, int& base, double w[4])
{
    const double f = floor(s);
    base = (int)f - 1;
    const double t = s - f;            // in [0, 1): distances t + 1, t, 1 - t, 2 - t to the 4 points
    const double u = 1.0 - t;
    w[0] = -0.5 * t * u * u;           // |t'| = 1 + t
    w[1] = 1.0 - 2.5 * t * t + 1.5 * t * t * t;
    w[2] = 1.0 - 2.5 * u * u + 1.5 * u * u * u;
    w[3] = -0.5 * u * t * t;           // |t'| = 2 - t
}

extern "C" __global__ void anterpolate(const double* __restrict__ atoms,   // (n, 4): x, y, z relative to O, q
                                       const int n, double* __restrict__ grid,  // (Mz, My, Mx), x fastest
                                       const int mx, const int my, const int mz,   // grid points per dim
                                       const int lo_x, const int lo_y, const int lo_z,  // index of grid point 0
                                       const double hx, const double hy, const double hz, const int periodic)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n) return;
    const double q = atoms[4 * a + 3];
    int bx, by, bz;
    double wx[4], wy[4], wz[4];
    cubic_weights(atoms[4 * a + 0] / hx, bx, wx);
    cubic_weights(atoms[4 * a + 1] / hy, by, wy);
    cubic_weights(atoms[4 * a + 2] / hz, bz, wz);
    for (int k = 0; k < 4; ++k) {
        int iz = bz + k - lo_z;
        if (periodic) iz = ((iz % mz) + mz) % mz;
        for (int j = 0; j < 4; ++j) {
            int iy = by + j - lo_y;
            if (periodic) iy = ((iy % my) + my) % my;
            const double qzy = q * wz[k] * wy[j];
            for (int i = 0; i < 4; ++i) {
                int ix = bx + i - lo_x;
                if (periodic) ix = ((ix % mx) + mx) % mx;
                atomicAdd(&grid[((size_t)iz * my + iy) * mx + ix], qzy * wx[i]);
            }
        }
    }
}
