// Cutoff summation of a potential map: V(r) = sum_{a: |r - r_a| < c} q_a * S(|r - r_a|).
// Atoms arrive sorted by bin (the project's counting sort): bins are cubes of side bin_size, x
// fastest, so the bins bx_lo..bx_hi of one (by, bz) row are one contiguous segment of atoms.  A block
// owns a region of 8 x 8 x 16 lattice points (threads 8 x 8 x 2, each 8 points 2 apart along z) and
// gathers the row segments within reach of the region, staging each through shared memory in tiles
// of 128 atoms (no bin capacity: a crowded bin is just a longer segment, nothing is dropped).
// Coordinates are made relative to the region corner as the tile is staged (from float hi + lo
// pairs in single precision), so near atoms keep float accuracy.
//   SPLIT == 0: S(r) = (1 - r^2/c^2)^2 / r        (smoothly shifted Coulomb, the seed's s(r))
//   SPLIT == 1: S(r) = 1/r - gamma(r/c)/c,  gamma(p) = 15/8 - 5/4 p^2 + 3/8 p^4  (MSM short range)
#ifndef SPLIT
#define SPLIT 0
#endif
#define RX 8
#define RY 8
#define TZ 2
#ifndef ZU
#define ZU 8
#endif
#define THREADS (RX * RY * TZ)

struct __align__(16) atom_f64 { double x, y, z, q; };

template <class T>
__device__ __forceinline__ T split_kernel(T r2, T inv_c2, T inv_c);

template <>
__device__ __forceinline__ float split_kernel<float>(float r2, float inv_c2, float inv_c)
{
    const float p2 = r2 * inv_c2;
#if SPLIT == 0
    const float t = 1.0f - p2;
    return rsqrtf(r2) * t * t;
#else
    return rsqrtf(r2) - inv_c * fmaf(p2, fmaf(p2, 0.375f, -1.25f), 1.875f);
#endif
}

template <>
__device__ __forceinline__ double split_kernel<double>(double r2, double inv_c2, double inv_c)
{
    const double p2 = r2 * inv_c2;
#if SPLIT == 0
    const double t = 1.0 - p2;
    return rsqrt(r2) * t * t;
#else
    return rsqrt(r2) - inv_c * (1.875 + p2 * (-1.25 + p2 * 0.375));
#endif
}

__device__ __forceinline__ void two_sum_add(float& sum, float& comp, float term)
{
    const float s = sum + term;
    const float bp = s - sum;
    comp += (sum - (s - bp)) + (term - bp);
    sum = s;
}

__device__ __forceinline__ void two_sum_add(double& sum, double& comp, double term)
{
    sum += term;   // float64 accumulation needs no compensation here
}

__device__ __forceinline__ float4 stage(const float4* hi, const float4* lo, int a, double cx, double cy, double cz)
{
    // atom relative to the region corner: (hi - corner_hi) + (lo - corner_lo), float
    const float4 h = hi[a];
    const float4 l = lo[a];
    const float cxh = (float)cx, cyh = (float)cy, czh = (float)cz;
    return make_float4((h.x - cxh) + (l.x - (float)(cx - (double)cxh)),
                       (h.y - cyh) + (l.y - (float)(cy - (double)cyh)),
                       (h.z - czh) + (l.z - (float)(cz - (double)czh)), h.w);
}

__device__ __forceinline__ atom_f64 stage(const atom_f64* atoms, const atom_f64*, int a, double cx, double cy, double cz)
{
    const atom_f64 h = atoms[a];
    return atom_f64{h.x - cx, h.y - cy, h.z - cz, h.q};
}

__device__ __forceinline__ float a_charge(const float4& a) { return a.w; }
__device__ __forceinline__ double a_charge(const atom_f64& a) { return a.q; }

__device__ __forceinline__ float4 far_atom(float) { return make_float4(1.0e6f, 1.0e6f, 1.0e6f, 0.0f); }
__device__ __forceinline__ atom_f64 far_atom(double) { return atom_f64{1.0e6, 1.0e6, 1.0e6, 0.0}; }

template <class T, class A>
__device__ void cutoff_body(const A* __restrict__ atoms, const A* __restrict__ atoms_lo,
                            const int* __restrict__ bin_start, int nbx, int nby, int nbz,
                            double bin_x0, double bin_y0, double bin_z0, double bin_size,
                            T* __restrict__ out, int nx, int ny, int nz, double hx, double hy, double hz,
                            double cutoff)
{
    __shared__ A tile[THREADS];
    const int tid = threadIdx.x + RX * (threadIdx.y + RY * threadIdx.z);
    const int i0 = blockIdx.x * RX, j0 = blockIdx.y * RY, k0 = blockIdx.z * (TZ * ZU);
    const double cx = i0 * hx, cy = j0 * hy, cz = k0 * hz;    // region corner, relative to the map origin
    const double ex = (RX - 1) * hx, ey = (RY - 1) * hy, ez = (TZ * ZU - 1) * hz;
    const T c2 = (T)(cutoff * cutoff), inv_c2 = (T)(1.0 / (cutoff * cutoff)), inv_c = (T)(1.0 / cutoff);
    const T px = (T)(threadIdx.x * hx), py = (T)(threadIdx.y * hy);
    T pz[ZU], acc[ZU], sum[ZU], comp[ZU];
#pragma unroll
    for (int u = 0; u < ZU; ++u) {
        pz[u] = (T)((threadIdx.z + TZ * u) * hz);
        acc[u] = sum[u] = comp[u] = (T)0;
    }
    const int bx_lo = max(0, (int)floor((cx - cutoff - bin_x0) / bin_size));
    const int bx_hi = min(nbx - 1, (int)floor((cx + ex + cutoff - bin_x0) / bin_size));
    const int by_lo = max(0, (int)floor((cy - cutoff - bin_y0) / bin_size));
    const int by_hi = min(nby - 1, (int)floor((cy + ey + cutoff - bin_y0) / bin_size));
    const int bz_lo = max(0, (int)floor((cz - cutoff - bin_z0) / bin_size));
    const int bz_hi = min(nbz - 1, (int)floor((cz + ez + cutoff - bin_z0) / bin_size));
    for (int bz = bz_lo; bz <= bz_hi; ++bz) {
        const double zlo = bin_z0 + bz * bin_size - cz;        // bin's z range relative to the corner
        const double gz = fmax(0.0, fmax(zlo - ez, -(zlo + bin_size)));
        for (int by = by_lo; by <= by_hi; ++by) {
            const double ylo = bin_y0 + by * bin_size - cy;
            const double gy = fmax(0.0, fmax(ylo - ey, -(ylo + bin_size)));
            if (gy * gy + gz * gz >= cutoff * cutoff) continue;   // the whole row is out of reach
            const int row = nbx * (by + nby * bz);
            const int first = bin_start[row + bx_lo], last = bin_start[row + bx_hi + 1];
            for (int base = first; base < last; base += THREADS) {
                __syncthreads();
                tile[tid] = base + tid < last ? stage(atoms, atoms_lo, base + tid, cx, cy, cz) : far_atom((T)0);
                __syncthreads();
                const int count = min(THREADS, last - base);
                for (int t = 0; t < count; ++t) {
                    const A a = tile[t];
                    const T dx = px - (T)a.x, dy = py - (T)a.y;
                    const T dxy2 = dx * dx + dy * dy;
                    if (dxy2 < c2) {
#pragma unroll
                        for (int u = 0; u < ZU; ++u) {
                            const T dz = pz[u] - (T)a.z;
                            const T r2 = dxy2 + dz * dz;
                            if (r2 < c2) acc[u] += (T)a_charge(a) * split_kernel<T>(r2, inv_c2, inv_c);
                        }
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < ZU; ++u) {
                two_sum_add(sum[u], comp[u], acc[u]);
                acc[u] = (T)0;
            }
        }
    }
    const int i = i0 + threadIdx.x, j = j0 + threadIdx.y;
    if (i < nx && j < ny) {
#pragma unroll
        for (int u = 0; u < ZU; ++u) {
            const int k = k0 + threadIdx.z + TZ * u;
            if (k < nz) out[((size_t)k * ny + j) * nx + i] = sum[u] + comp[u];
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
cutoff_single(const float4* __restrict__ atoms_hi, const float4* __restrict__ atoms_lo,
              const int* __restrict__ bin_start, int nbx, int nby, int nbz,
              double bin_x0, double bin_y0, double bin_z0, double bin_size,
              float* __restrict__ out, int nx, int ny, int nz, double hx, double hy, double hz, double cutoff)
{
    cutoff_body<float, float4>(atoms_hi, atoms_lo, bin_start, nbx, nby, nbz, bin_x0, bin_y0, bin_z0, bin_size,
                               out, nx, ny, nz, hx, hy, hz, cutoff);
}

extern "C" __global__ void __launch_bounds__(THREADS)
cutoff_double(const atom_f64* __restrict__ atoms, const int* __restrict__ bin_start, int nbx, int nby, int nbz,
              double bin_x0, double bin_y0, double bin_z0, double bin_size,
              double* __restrict__ out, int nx, int ny, int nz, double hx, double hy, double hz, double cutoff)
{
    cutoff_body<double, atom_f64>(atoms, atoms, bin_start, nbx, nby, nbz, bin_x0, bin_y0, bin_z0, bin_size,
                                  out, nx, ny, nz, hx, hy, hz, cutoff);
}
