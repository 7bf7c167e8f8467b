// Binning of one particle into the cell grid, shared by the counting sort's kernels
// (counting_sort.cu: cell_index_f32/f64, histogram_rank, sort_bins) and the build's fused kernels
// (verlet.cu: wrap_and_bin, sort_bins_rows), so that every path computes the same key with the
// same operations and the same stable order.
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

// Ranks the members of bin [start, start + k) by the whole warp together: each member's final
// place is the count of members with a smaller index (indices are distinct), computed 32 members
// at a time against chunks of 32 broadcast by shuffles, O(k^2 / 32) steps.
template <typename Emit>
__device__ __forceinline__ void rank_bin_by_warp(const int* __restrict__ slots, int start, int k, int lane, Emit emit)
{
    for (int c0 = 0; c0 < k; c0 += 32) {
        const bool mine = c0 + lane < k;
        const int me = mine ? slots[start + c0 + lane] : 0x7fffffff;
        int place = 0;
        for (int c1 = 0; c1 < k; c1 += 32) {
            const int other = (c1 + lane < k) ? slots[start + c1 + lane] : 0x7fffffff;
            const int m = min(32, k - c1);
            for (int j = 0; j < m; ++j) {
                place += (__shfl_sync(FULL_MASK, other, j) < me) ? 1 : 0;
            }
        }
        if (mine) emit(start + place, me);
    }
}

#ifndef SMALL_BIN
#define SMALL_BIN 8                // members a thread ranks alone, in registers
#endif

// The stable order within the bins, after scatter put each bin's members in its slots in arrival
// order: emit(slot, member) for each member, slot = bin_start[b] + (the number of members of its
// bin with a smaller index).  Thread b of the grid takes bin b: a bin of k <= SMALL_BIN members (a
// cell list's usual few) is ranked by its thread alone, the members in registers (padded with
// INT_MAX, which is never smaller), fully unrolled; the bins of the warp with more members are
// then ranked one after another by the whole warp (rank_bin_by_warp).  Call from every thread of
// the grid's warps (no early return: the warp votes).
template <typename Emit>
__device__ __forceinline__ void rank_bins(const int* __restrict__ slots, const int* __restrict__ bin_start, int n_bins,
                                          Emit emit)
{
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31;
    int start = 0, k = 0;
    if (b < n_bins) {                              // no early return: the warp votes below
        start = bin_start[b];
        k = bin_start[b + 1] - start;
    }
    const bool small = k <= SMALL_BIN;
    if (small && k > 0) {
        int member[SMALL_BIN];
#pragma unroll
        for (int j = 0; j < SMALL_BIN; ++j) member[j] = j < k ? slots[start + j] : 0x7fffffff;
#pragma unroll
        for (int m = 0; m < SMALL_BIN; ++m) {
            int place = 0;
#pragma unroll
            for (int j = 0; j < SMALL_BIN; ++j) place += member[j] < member[m] ? 1 : 0;
            if (m < k) emit(start + place, member[m]);
        }
    }
    unsigned int large = __ballot_sync(FULL_MASK, !small);
    while (large) {
        const int owner = __ffs(large) - 1;
        large &= large - 1;
        rank_bin_by_warp(slots, __shfl_sync(FULL_MASK, start, owner), __shfl_sync(FULL_MASK, k, owner), lane,
                         emit);
    }
}
