// Binning of one particle into the cell grid, shared by the counting sort's kernels
// (counting_sort.cu: cell_index_f32/f64, histogram_rank) and the build's fused wrap-and-bin
// kernel (verlet.cu), so that every path computes the same key with the same operations.
#pragma once

#ifndef FULL_MASK
#define FULL_MASK 0xffffffffu
#endif

__device__ __forceinline__ int clamp_key(int k, int n_bins)
{
    return k < 0 ? 0 : (k >= n_bins ? n_bins - 1 : k);
}

__device__ __forceinline__ float floor_of(float x) { return floorf(x); }
__device__ __forceinline__ double floor_of(double x) { return floor(x); }

// Cell (bin) of the position (x, y, z) in the orthorhombic periodic box L:
//   s = x / L - floor(x / L)  in [0, 1),   c = min(int(s * n), n - 1) (and >= 0),
//   key = cx + nx * (cy + ny * cz),
// in the position's own precision (the CPU twin: counting_sort.py's _cell_index_cpu).
template <typename REAL>
__device__ __forceinline__ int cell_key(REAL x, REAL y, REAL z, REAL lx, REAL ly, REAL lz, int nx, int ny, int nz)
{
    const REAL p[3] = {x, y, z};
    const REAL L[3] = {lx, ly, lz};
    const int nc[3] = {nx, ny, nz};
    int c[3];
#pragma unroll
    for (int d = 0; d < 3; ++d) {
        REAL s = p[d] / L[d];
        s -= floor_of(s);
        const int v = (int)(s * (REAL)nc[d]);
        c[d] = v < 0 ? 0 : (v >= nc[d] ? nc[d] - 1 : v);
    }
    return c[0] + nx * (c[1] + ny * c[2]);
}

// count[b] += 1 for this particle's bin b, warp-aggregated (one atomic per distinct bin in the
// warp); returns the particle's arrival slot in its bin (an arbitrary order, made stable later by
// sort_bins).  Call with the warp's active threads only (after the kernel's bounds check).
__device__ __forceinline__ int count_into_bin(int b, int* count)
{
    const unsigned int active = __activemask();
    const unsigned int peers = __match_any_sync(active, b);
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(peers) - 1;
    int first = 0;
    if (lane == leader) first = atomicAdd(&count[b], __popc(peers));
    first = __shfl_sync(peers, first, leader);
    return first + __popc(peers & ((1u << lane) - 1u));
}
