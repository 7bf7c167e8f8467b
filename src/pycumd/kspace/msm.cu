// Multilevel summation (kspace/multilevel.py): the particle <-> finest-grid steps, shared by
// kspace_style msm and the potential maps.
//
// The interpolation basis Phi of order P (4, 6, 8, 10; Hardy's C1 piecewise polynomials of degree
// P - 1) is read from a table coef[(P/2) x P]: row k holds the coefficients (ascending powers of
// v = |t| - k) on k <= |t| <= k + 1.  An atom at grid coordinate s = x / h touches the P points
// floor(s) - (P-1)/2 + 0..P-1 with weights Phi(m - s).
//
// msm_anterpolate: one thread per atom scatters its P^3 weights with float64 atomics (the order of
// those adds is not fixed: grid charges may differ in the last bits between runs).
// msm_field: one thread per atom gathers -grad of the grid potential, sum_m e_m Phi'(m - s) / h
// per direction, in a fixed order.

#define MSM_MAX_ORDER 10

__device__ __forceinline__ void phi_dphi(double t, const double* __restrict__ coef, int order,
                                         double& value, double& deriv)
{
    const double u = fabs(t);
    const int half = order / 2;
    value = 0.0;
    deriv = 0.0;
    if (u >= (double)half) return;
    const int k = (int)u;
    const double* row = coef + k * order;
    const double v = u - (double)k;
    for (int j = order - 1; j >= 0; --j) {
        deriv = deriv * v + value;
        value = value * v + row[j];
    }
    if (t < 0.0) deriv = -deriv;
}

__device__ __forceinline__ int msm_weights(double s, const double* __restrict__ coef, int order,
                                           double* w, double* dw)
{
    const int base = (int)floor(s) - (order - 1) / 2;
    for (int i = 0; i < order; ++i) phi_dphi((double)(base + i) - s, coef, order, w[i], dw[i]);
    return base;
}

__device__ __forceinline__ int wrap_index(int i, int m, int periodic)
{
    return periodic ? ((i % m) + m) % m : i;
}

extern "C" __global__ void msm_anterpolate(const double* __restrict__ x, const int stride,   // (n, stride)
                                           const double* __restrict__ q, const int has_q,  // else x[:, 3]
                                           const int n, double* __restrict__ grid,   // (Mz, My, Mx)
                                           const int mx, const int my, const int mz,
                                           const int lo_x, const int lo_y, const int lo_z,
                                           const double hx, const double hy, const double hz,
                                           const int periodic, const int order,
                                           const double* __restrict__ coef)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n) return;
    const double charge = has_q ? q[a] : x[(size_t)stride * a + 3];
    double wx[MSM_MAX_ORDER], wy[MSM_MAX_ORDER], wz[MSM_MAX_ORDER], dw[MSM_MAX_ORDER];
    const int bx = msm_weights(x[(size_t)stride * a + 0] / hx, coef, order, wx, dw) - lo_x;
    const int by = msm_weights(x[(size_t)stride * a + 1] / hy, coef, order, wy, dw) - lo_y;
    const int bz = msm_weights(x[(size_t)stride * a + 2] / hz, coef, order, wz, dw) - lo_z;
    for (int k = 0; k < order; ++k) {
        const int iz = wrap_index(bz + k, mz, periodic);
        for (int j = 0; j < order; ++j) {
            const int iy = wrap_index(by + j, my, periodic);
            const double qzy = charge * wz[k] * wy[j];
            for (int i = 0; i < order; ++i) {
                const int ix = wrap_index(bx + i, mx, periodic);
                atomicAdd(&grid[((size_t)iz * my + iy) * mx + ix], qzy * wx[i]);
            }
        }
    }
}

extern "C" __global__ void msm_field(const double* __restrict__ x, const int stride, const int n,
                                     const double* __restrict__ grid,   // (Mz, My, Mx) potential
                                     const int mx, const int my, const int mz,
                                     const int lo_x, const int lo_y, const int lo_z,
                                     const double hx, const double hy, const double hz,
                                     const int periodic, const int order,
                                     const double* __restrict__ coef,
                                     double* __restrict__ field)         // (n, 3)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n) return;
    double wx[MSM_MAX_ORDER], wy[MSM_MAX_ORDER], wz[MSM_MAX_ORDER];
    double dx[MSM_MAX_ORDER], dy[MSM_MAX_ORDER], dz[MSM_MAX_ORDER];
    const int bx = msm_weights(x[(size_t)stride * a + 0] / hx, coef, order, wx, dx) - lo_x;
    const int by = msm_weights(x[(size_t)stride * a + 1] / hy, coef, order, wy, dy) - lo_y;
    const int bz = msm_weights(x[(size_t)stride * a + 2] / hz, coef, order, wz, dz) - lo_z;
    double ex = 0.0, ey = 0.0, ez = 0.0;
    for (int k = 0; k < order; ++k) {
        const int iz = wrap_index(bz + k, mz, periodic);
        for (int j = 0; j < order; ++j) {
            const int iy = wrap_index(by + j, my, periodic);
            for (int i = 0; i < order; ++i) {
                const int ix = wrap_index(bx + i, mx, periodic);
                const double e = grid[((size_t)iz * my + iy) * mx + ix];
                ex += dx[i] * wy[j] * wz[k] * e;
                ey += wx[i] * dy[j] * wz[k] * e;
                ez += wx[i] * wy[j] * dz[k] * e;
            }
        }
    }
    field[3 * a + 0] = ex / hx;
    field[3 * a + 1] = ey / hy;
    field[3 * a + 2] = ez / hz;
}
