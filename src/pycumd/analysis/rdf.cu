// Radial distribution function: histogram of pair distances over a counting-sorted cell list.
//
// The CPU twin is _histogram_cpu in rdf.py (same cells, same rule).  Cells have edge >= r_max;
// target atom i (one thread) visits the cells c + (dx, dy, dz), d in [lo, hi] with
// lo = -min(1, (n-1)/2), hi = min(1, n/2) per dimension (each cell once in small boxes), and counts
// every j != i with |r_i - r_j|^2 < r_max^2 (minimum image; needs L >= 2 r_max) into bin
// floor(r / dr).  Counts go to a block histogram in shared memory, then to the global one
// (integer atomics: the result does not depend on the order).

#ifndef real_t
#define real_t double
#endif

__device__ __forceinline__ void stencil(int n, int* lo, int* hi)
{
    *lo = -min(1, (n - 1) / 2);
    *hi = min(1, n / 2);
}

extern "C" __global__ void rdf_histogram(
    const real_t* __restrict__ pos, int stride, int n, const int* __restrict__ keys,
    const int* __restrict__ cell_start, const int* __restrict__ cell_order,
    int nx, int ny, int nz, real_t Lx, real_t Ly, real_t Lz, real_t r_max2, real_t inv_dr, int bins,
    unsigned long long* __restrict__ hist)
{
    extern __shared__ unsigned int local[];
    for (int b = threadIdx.x; b < bins; b += blockDim.x) local[b] = 0u;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const real_t xi = pos[(size_t)i * stride], yi = pos[(size_t)i * stride + 1], zi = pos[(size_t)i * stride + 2];
        const int c = keys[i];
        const int cx = c % nx, cy = (c / nx) % ny, cz = c / (nx * ny);
        int lox, hix, loy, hiy, loz, hiz;
        stencil(nx, &lox, &hix);
        stencil(ny, &loy, &hiy);
        stencil(nz, &loz, &hiz);
        for (int dz = loz; dz <= hiz; ++dz) {
            const int z = (cz + dz + nz) % nz;
            for (int dy = loy; dy <= hiy; ++dy) {
                const int y = (cy + dy + ny) % ny;
                for (int dx = lox; dx <= hix; ++dx) {
                    const int cell = (z * ny + y) * nx + (cx + dx + nx) % nx;
                    for (int s = cell_start[cell]; s < cell_start[cell + 1]; ++s) {
                        const int j = cell_order[s];
                        if (j == i) continue;
                        real_t ddx = xi - pos[(size_t)j * stride];
                        real_t ddy = yi - pos[(size_t)j * stride + 1];
                        real_t ddz = zi - pos[(size_t)j * stride + 2];
                        ddx -= Lx * rint(ddx / Lx);      // minimum image
                        ddy -= Ly * rint(ddy / Ly);
                        ddz -= Lz * rint(ddz / Lz);
                        const real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
                        if (r2 < r_max2) {
                            const int b = min((int)(sqrt(r2) * inv_dr), bins - 1);   // bin = floor(r / dr)
                            atomicAdd(&local[b], 1u);
                        }
                    }
                }
            }
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], (unsigned long long)local[b]);
}
