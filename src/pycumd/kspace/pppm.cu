// PPPM with ik differentiation on the GPU (pppm.py): charge assignment, the Poisson solve of the
// half spectrum and the force interpolation.  Compile-time constants (defaults: the double-precision
// build that test_kernel_sources compiles):
//   ORDER       charge-assignment order (2..7)
//   POS_T       position type (float or double); POS_STRIDE 3 or 4 (x, y, z[, type])
//   FORCE_T     force type (float or double), rows of 3
//   GRID_T      grid and FFT type (double: double and mixed precision; float: single, composite)
#ifndef ORDER
#define ORDER 5
#endif
#ifndef POS_T
#define POS_T double
#endif
#ifndef POS_STRIDE
#define POS_STRIDE 4
#endif
#ifndef FORCE_T
#define FORCE_T double
#endif
#ifndef GRID_T
#define GRID_T double
#endif

#define PPPM_OFFSET 16384                 // LAMMPS' OFFSET: negative coordinates truncate downwards
#define NLOWER (-((ORDER - 1) / 2))       // first stencil point relative to the reference point

// W_k(d) = sum_l coeff[l][k] d^l (Horner), the ORDER weights of one direction
__device__ __forceinline__ void assignment_weights(double d, const double* __restrict__ coeff, double* w) {
#pragma unroll
    for (int k = 0; k < ORDER; ++k) {
        double r = 0.0;
#pragma unroll
        for (int l = ORDER - 1; l >= 0; --l) r = coeff[l * ORDER + k] + r * d;
        w[k] = r;
    }
}

__device__ __forceinline__ int wrap_index(int i, int n) {
    i %= n;
    return i < 0 ? i + n : i;
}

// reference grid point g = int(x/h + shift) - OFFSET and the weights of the ORDER points from g + NLOWER
__device__ __forceinline__ int stencil(double s, double shift, double shiftone,
                                       const double* __restrict__ coeff, double* w) {
    const int g = (int)(s + shift) - PPPM_OFFSET;
    assignment_weights((double)g + shiftone - s, coeff, w);
    return g + NLOWER;
}

// Charge assignment: grid[z][y][x] += round(q W W W * scale) as 64-bit fixed point (integer
// atomics: the sum is exact and independent of the order of the additions, so every run gives the
// same bits).  scale = 2^k with sum |q| * scale <= 2^62.
extern "C" __global__ void make_rho(const POS_T* __restrict__ pos, const double* __restrict__ q, int n,
                                    int nx, int ny, int nz, double dxinv, double dyinv, double dzinv,
                                    double shift, double shiftone, const double* __restrict__ coeff,
                                    double fixed_scale, unsigned long long* __restrict__ grid) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double wx[ORDER], wy[ORDER], wz[ORDER];
    const int x0 = stencil((double)pos[(size_t)i * POS_STRIDE + 0] * dxinv, shift, shiftone, coeff, wx);
    const int y0 = stencil((double)pos[(size_t)i * POS_STRIDE + 1] * dyinv, shift, shiftone, coeff, wy);
    const int z0 = stencil((double)pos[(size_t)i * POS_STRIDE + 2] * dzinv, shift, shiftone, coeff, wz);
    const double qs = q[i] * fixed_scale;
    for (int c = 0; c < ORDER; ++c) {
        const int mz = wrap_index(z0 + c, nz);
        const double vz = qs * wz[c];
        for (int b = 0; b < ORDER; ++b) {
            const int my = wrap_index(y0 + b, ny);
            const double vy = vz * wy[b];
            const size_t row = ((size_t)mz * ny + my) * nx;
            for (int a = 0; a < ORDER; ++a) {
                const long long v = __double2ll_rn(vy * wx[a]);
                atomicAdd(&grid[row + wrap_index(x0 + a, nx)], (unsigned long long)v);
            }
        }
    }
}

// density = fixed * (1 / (h^3 scale))
extern "C" __global__ void fixed_to_density(const long long* __restrict__ fixed, long long m, double factor,
                                            GRID_T* __restrict__ density) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t < m) density[t] = (GRID_T)((double)fixed[t] * factor);
}

// The potential gradient of the half spectrum (nz, ny, nx/2+1): grad_d(k) = i fk_d G(k)/M rho(k),
// written as (re, im) pairs into three consecutive spectra.  fk_d is 0 on the Nyquist planes.
extern "C" __global__ void poisson_ik(const GRID_T* __restrict__ rho_k, const double* __restrict__ green,
                                      const double* __restrict__ fkx, const double* __restrict__ fky,
                                      const double* __restrict__ fkz, int nxh, int ny, int nz,
                                      GRID_T* __restrict__ grad_k) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long mh = (long long)nxh * ny * nz;
    if (t >= mh) return;
    const int ix = (int)(t % nxh);
    const int iy = (int)((t / nxh) % ny);
    const int iz = (int)(t / ((long long)nxh * ny));
    const double g = green[t];
    const double re = (double)rho_k[2 * t] * g;
    const double im = (double)rho_k[2 * t + 1] * g;
    const double f[3] = {fkx[ix], fky[iy], fkz[iz]};
#pragma unroll
    for (int d = 0; d < 3; ++d) {   // i f (re + i im) = -f im + i f re
        grad_k[2 * (d * mh + t)] = (GRID_T)(-f[d] * im);
        grad_k[2 * (d * mh + t) + 1] = (GRID_T)(f[d] * re);
    }
}

// Interpolation: forces[i] -= qqrd2e q_i sum W W W grad phi (grad: 3 grids nz x ny x nx)
extern "C" __global__ void fieldforce_ik(const POS_T* __restrict__ pos, const double* __restrict__ q, int n,
                                         int nx, int ny, int nz, double dxinv, double dyinv, double dzinv,
                                         double shift, double shiftone, const double* __restrict__ coeff,
                                         const GRID_T* __restrict__ grad, long long grad_stride, double qqrd2e,
                                         FORCE_T* __restrict__ forces, const int* __restrict__ control) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (control != nullptr && control[0]) return;     // control[0]: the step block is frozen (see step_graph.py)
    double wx[ORDER], wy[ORDER], wz[ORDER];
    const int x0 = stencil((double)pos[(size_t)i * POS_STRIDE + 0] * dxinv, shift, shiftone, coeff, wx);
    const int y0 = stencil((double)pos[(size_t)i * POS_STRIDE + 1] * dyinv, shift, shiftone, coeff, wy);
    const int z0 = stencil((double)pos[(size_t)i * POS_STRIDE + 2] * dzinv, shift, shiftone, coeff, wz);
    const size_t m = (size_t)grad_stride;         // between the three components (padded for cuFFT's alignment)
    double ex = 0.0, ey = 0.0, ez = 0.0;
    for (int c = 0; c < ORDER; ++c) {
        const int mz = wrap_index(z0 + c, nz);
        for (int b = 0; b < ORDER; ++b) {
            const int my = wrap_index(y0 + b, ny);
            const double w = wz[c] * wy[b];
            const size_t row = ((size_t)mz * ny + my) * nx;
            for (int a = 0; a < ORDER; ++a) {
                const size_t p = row + wrap_index(x0 + a, nx);
                const double v = w * wx[a];
                ex -= v * (double)grad[p];
                ey -= v * (double)grad[m + p];
                ez -= v * (double)grad[2 * m + p];
            }
        }
    }
    const double f = qqrd2e * q[i];
    forces[(size_t)i * 3 + 0] += (FORCE_T)(f * ex);
    forces[(size_t)i * 3 + 1] += (FORCE_T)(f * ey);
    forces[(size_t)i * 3 + 2] += (FORCE_T)(f * ez);
}

// (sin x / x)^n, 1 at x = 0 (LAMMPS' powsinxx)
__device__ __forceinline__ double powsinxx(double x, int n) {
    if (x == 0.0) return 1.0;
    const double y = sin(x) / x;
    double w = 1.0;
    for (int i = 0; i < n; ++i) w *= y;
    return w;
}

__device__ __forceinline__ int periodic_index(int i, int n) { return i - n * ((2 * i) / n); }

// The box-dependent tables of the half spectrum for a new box (a barostat's step), as pppm.py's
// _setup_box and LAMMPS' compute_gf_ik: green = G/M, energy_weight = w V/(2 M^2) G (w = 2 except on the
// kx = 0 and Nyquist planes), virial_weight[j] = energy_weight * vg_j (6 consecutive spectra).
extern "C" __global__ void influence_ik(int nx, int ny, int nz, int nbx, int nby, int nbz,
                                        double lx, double ly, double lz, double g_ewald,
                                        const double* __restrict__ gf_b, double inv_m, double energy_scale,
                                        double* __restrict__ green, double* __restrict__ energy_weight,
                                        double* __restrict__ virial_weight) {
    const int nxh = nx / 2 + 1;
    const long long mh = (long long)nxh * ny * nz;
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= mh) return;
    const int ix = (int)(t % nxh), iy = (int)((t / nxh) % ny), iz = (int)(t / ((long long)nxh * ny));
    const double two_pi = 6.283185307179586;
    const double ukx = two_pi / lx, uky = two_pi / ly, ukz = two_pi / lz;
    const int kper = periodic_index(ix, nx), lper = periodic_index(iy, ny), mper = periodic_index(iz, nz);
    const double kx = ukx * kper, ky = uky * lper, kz = ukz * mper;
    const double sqk = kx * kx + ky * ky + kz * kz;
    if (sqk == 0.0) {
        green[t] = 0.0;
        energy_weight[t] = 0.0;
        for (int j = 0; j < 6; ++j) virial_weight[j * mh + t] = 0.0;
        return;
    }
    const double sn[3] = {sin(0.5 * kx * lx / nx), sin(0.5 * ky * ly / ny), sin(0.5 * kz * lz / nz)};
    double den = 1.0;
    for (int d = 0; d < 3; ++d) {
        const double s2 = sn[d] * sn[d];
        double s = 0.0;
        for (int l = ORDER - 1; l >= 0; --l) s = gf_b[l] + s * s2;
        den *= s;
    }
    den *= den;
    double sum1 = 0.0;
    for (int a = -nbx; a <= nbx; ++a) {
        const double qx = ukx * (kper + nx * a);
        const double wx = exp(-0.25 * (qx / g_ewald) * (qx / g_ewald)) * powsinxx(0.5 * qx * lx / nx, 2 * ORDER);
        for (int b = -nby; b <= nby; ++b) {
            const double qy = uky * (lper + ny * b);
            const double wy = exp(-0.25 * (qy / g_ewald) * (qy / g_ewald)) * powsinxx(0.5 * qy * ly / ny, 2 * ORDER);
            for (int c = -nbz; c <= nbz; ++c) {
                const double qz = ukz * (mper + nz * c);
                const double wz = exp(-0.25 * (qz / g_ewald) * (qz / g_ewald)) * powsinxx(0.5 * qz * lz / nz, 2 * ORDER);
                const double dot2 = qx * qx + qy * qy + qz * qz;
                if (dot2 > 0.0) sum1 += (kx * qx + ky * qy + kz * qz) / dot2 * (wz * wy * wx);
            }
        }
    }
    const double g = 12.5663706 / sqk * sum1 / den;     // LAMMPS' 4 pi (pppm.py's FOUR_PI_GF)
    const double w = (ix == 0 || (nx % 2 == 0 && ix == nx / 2)) ? 1.0 : 2.0;
    const double ew = energy_scale * w * g;
    green[t] = g * inv_m;
    energy_weight[t] = ew;
    const double vterm = -2.0 * (1.0 / sqk + 0.25 / (g_ewald * g_ewald));
    virial_weight[0 * mh + t] = ew * (1.0 + vterm * kx * kx);
    virial_weight[1 * mh + t] = ew * (1.0 + vterm * ky * ky);
    virial_weight[2 * mh + t] = ew * (1.0 + vterm * kz * kz);
    virial_weight[3 * mh + t] = ew * vterm * kx * ky;
    virial_weight[4 * mh + t] = ew * vterm * kx * kz;
    virial_weight[5 * mh + t] = ew * vterm * ky * kz;
}
