// Direct Coulomb summation (DCS) of an electrostatic potential map:
//     V(i, j, k) = sum_a q_a / |r_ijk - r_a|,   r_ijk = (i hx, j hy, k hz) relative to the map origin.
// One thread computes UNROLL points of one row, BX apart along x (coalesced stores, the seed's
// version 4); the block's BX * BY threads stage TILE atoms at a time in shared memory, so any
// number of atoms streams through.  Single precision: coordinates as float hi + lo pairs, atoms and
// every lattice point alike (each of a thread's UNROLL x coordinates is split in float64 once, at the
// start), so each distance component is (x_hi - a_hi) + (x_lo - a_lo): the first difference exact
// near the atom (Sterbenz), one rounding relative to the component itself.  One rsqrtf per
// evaluation, a float partial sum per SUBTILE atoms, partial sums added with TwoSum (compensated).
//
// Each point's x components are formed from that point's own coordinate (per-point hi + lo, as the
// CPU path), never as an offset from the thread's first point: such an offset carries an absolute
// rounding error of half an ulp of the distance to the first point, a large relative error near an
// atom at another of the thread's points.
#ifndef UNROLL
#define UNROLL 8
#endif
#ifndef RSQRT_NEWTON
#define RSQRT_NEWTON 0      // 1: one Newton step after rsqrtf (3 more FP32 ops); 2: the step with its residual
#endif                      //    1 - r2 y^2 computed exactly by FMAs (6 more ops, close to correctly rounded)
#ifndef EXACT_X
#define EXACT_X 0           // 1: every x coordinate i hx of the launch is a float (x_lo == 0, e.g. hx = 0.5):
#endif                      //    dx = (x_hi - a_hi) - a_lo, one add fewer per evaluation, same result
#define SUBTILE 32          // atoms per float partial sum before its TwoSum into the compensated total
#define BX 16
#define BY 8
#define TILE (BX * BY)

struct __align__(16) atom_f64 { double x, y, z, q; };  // a double4 without CUDA 13's deprecation

__device__ __forceinline__ void two_sum_add(float& sum, float& comp, float term)
{
    // sum + comp += term, with the rounding error of the add kept in comp (Knuth's TwoSum)
    const float s = sum + term;
    const float bp = s - sum;
    comp += (sum - (s - bp)) + (term - bp);
    sum = s;
}

extern "C" __global__ void __launch_bounds__(TILE)
dcs_single(const float4* __restrict__ atoms_hi,  // (n_atoms,): x, y, z relative to the origin (float part), q
           const float4* __restrict__ atoms_lo,  // (n_atoms,): x, y, z minus their float part, 0
           const int n_atoms, float* __restrict__ out,  // (nz_launch, ny, nx) slices from z_first
           const int nx, const int ny, const int z_first,
           const double hx, const double hy, const double hz)
{
    __shared__ float4 s_hi[TILE];
    __shared__ float4 s_lo[TILE];
    const int tid = threadIdx.x + BX * threadIdx.y;
    const int ix = blockIdx.x * (BX * UNROLL) + threadIdx.x;
    const int iy = blockIdx.y * BY + threadIdx.y;
    const double yd = iy * hy, zd = (z_first + (int)blockIdx.z) * hz;
    const float y_hi = (float)yd, y_lo = (float)(yd - (double)y_hi);
    const float z_hi = (float)zd, z_lo = (float)(zd - (double)z_hi);

    float x_hi[UNROLL], acc[UNROLL], sum[UNROLL], comp[UNROLL];
#if !EXACT_X
    float x_lo[UNROLL];
#endif
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        const double xd = (ix + u * BX) * hx;   // this point's own x, split in float64 (not x_0 + u * step)
        x_hi[u] = (float)xd;
#if !EXACT_X
        x_lo[u] = (float)(xd - (double)x_hi[u]);
#endif
        acc[u] = 0.0f;
        sum[u] = 0.0f;
        comp[u] = 0.0f;
    }
    for (int base = 0; base < n_atoms; base += TILE) {
        __syncthreads();
        const int a = base + tid;
        s_hi[tid] = a < n_atoms ? atoms_hi[a] : make_float4(1.0e6f, 1.0e6f, 1.0e6f, 0.0f);
        s_lo[tid] = a < n_atoms ? atoms_lo[a] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
        for (int sub = 0; sub < TILE; sub += SUBTILE) {
#pragma unroll 2
            for (int t = sub; t < sub + SUBTILE; ++t) {
                const float4 h = s_hi[t];
                const float4 l = s_lo[t];
                const float dy = (y_hi - h.y) + (y_lo - l.y);
                const float dz = (z_hi - h.z) + (z_lo - l.z);
                const float dyz2 = fmaf(dy, dy, dz * dz);
#pragma unroll
                for (int u = 0; u < UNROLL; ++u) {
#if EXACT_X
                    const float dx = (x_hi[u] - h.x) - l.x;
#else
                    const float dx = (x_hi[u] - h.x) + (x_lo[u] - l.x);
#endif
                    const float r2 = fmaf(dx, dx, dyz2);
                    float rs = rsqrtf(r2);
#if RSQRT_NEWTON == 1
                    rs = rs * fmaf(-0.5f * r2 * rs, rs, 1.5f);   // y (3/2 - r2 y^2 / 2)
#elif RSQRT_NEWTON == 2
                    {   // y + y/2 (1 - r2 y^2), the residual from y^2 = p + e exactly: 1 - r2 p - r2 e
                        const float p = rs * rs;
                        const float e = fmaf(rs, rs, -p);
                        const float res = fmaf(-r2, e, fmaf(-r2, p, 1.0f));
                        rs = fmaf(0.5f * rs, res, rs);
                    }
#endif
                    acc[u] = fmaf(h.w, rs, acc[u]);
                }
            }
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                two_sum_add(sum[u], comp[u], acc[u]);
                acc[u] = 0.0f;
            }
        }
    }
    if (iy < ny) {
        float* row = out + ((size_t)blockIdx.z * ny + iy) * nx;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int x = ix + u * BX;
            if (x < nx) row[x] = sum[u] + comp[u];
        }
    }
}

extern "C" __global__ void __launch_bounds__(TILE)
dcs_double(const atom_f64* __restrict__ atoms,  // (n_atoms,): x, y, z relative to the origin, q
           const int n_atoms, double* __restrict__ out,  // (nz_launch, ny, nx) slices from z_first
           const int nx, const int ny, const int z_first,
           const double hx, const double hy, const double hz)
{
    // V = sum_a q_a / r in float64 (the reference): same tiling, no compensation needed
    __shared__ atom_f64 s_atoms[TILE];
    const int tid = threadIdx.x + BX * threadIdx.y;
    const int ix = blockIdx.x * (BX * UNROLL) + threadIdx.x;
    const int iy = blockIdx.y * BY + threadIdx.y;
    const double x0 = ix * hx, y = iy * hy, z = (z_first + (int)blockIdx.z) * hz;
    double acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc[u] = 0.0;
    for (int base = 0; base < n_atoms; base += TILE) {
        __syncthreads();
        const int a = base + tid;
        s_atoms[tid] = a < n_atoms ? atoms[a] : atom_f64{1.0e6, 1.0e6, 1.0e6, 0.0};
        __syncthreads();
        for (int t = 0; t < TILE; ++t) {
            const atom_f64 h = s_atoms[t];
            const double dy = y - h.y, dz = z - h.z;
            const double dyz2 = dy * dy + dz * dz;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const double dx = (x0 + (u * BX) * hx) - h.x;
                acc[u] += h.q * rsqrt(dx * dx + dyz2);
            }
        }
    }
    if (iy < ny) {
        double* row = out + ((size_t)blockIdx.z * ny + iy) * nx;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int x = ix + u * BX;
            if (x < nx) row[x] = acc[u];
        }
    }
}
