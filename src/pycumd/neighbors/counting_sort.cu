// Counting sort of particles into bins (cells), stable: within a bin, particles keep
// increasing index order.
//
//   1. histogram_rank : count[b] += 1 for each particle, rank_i = its arrival slot in its bin
//                       (atomics, warp-aggregated with __match_any_sync)
//   2. (scan.cu)       bin_start = exclusive scan of count, bin_start[n_bins] = N
//   3. scatter         slots[bin_start[b_i] + rank_i] = i       (a permutation, unstable)
//   4. sort_bins       one thread per bin (a warp for bins of > SMALL_BIN members) sorts its
//                      slots ascending, which is exactly the stable order:
//                      order[bin_start[b] + #{j in bin b : j < i}] = i
//
// Keys outside [0, n_bins) are clamped into range so that no kernel writes out of bounds;
// the Python side validates keys when asked.
//
// Cell index of an orthorhombic periodic box: binning.cuh's cell_key.

#include "binning.cuh"

extern "C" __global__ void
histogram_rank(const int* keys, int n, int n_bins, int* count, int* rank)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    rank[i] = count_into_bin(clamp_key(keys[i], n_bins), count);
}

extern "C" __global__ void
scatter(const int* keys, const int* rank, const int* bin_start, int n, int n_bins, int* slots)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int b = clamp_key(keys[i], n_bins);
    slots[bin_start[b] + rank[i]] = i;
}

// Ranks the members of bin [start, start + k) by the whole warp together: each member's final
// place is the count of members with a smaller index (indices are distinct), computed 32 members
// at a time against chunks of 32 broadcast by shuffles, O(k^2 / 32) steps.
__device__ __forceinline__ void rank_bin_by_warp(const int* __restrict__ slots, int start, int k, int lane,
                                                 int* __restrict__ order)
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
        if (mine) order[start + place] = me;
    }
}

#ifndef SMALL_BIN
#define SMALL_BIN 8                // members a thread ranks alone, in registers
#endif

// One thread per bin.  A bin of k <= SMALL_BIN members (a cell list's usual few) is ranked by its
// thread alone: the members in registers (padded with INT_MAX, which is never smaller), each one's
// place the count of smaller members, fully unrolled.  The bins of the warp with more members are
// then ranked one after another by the whole warp (rank_bin_by_warp).  Either way a member's
// place is the number of members of its bin with a smaller index: the stable order.
extern "C" __global__ void
sort_bins(const int* __restrict__ slots, const int* __restrict__ bin_start, int n_bins, int* __restrict__ order)
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
            if (m < k) order[start + place] = member[m];
        }
    }
    unsigned int large = __ballot_sync(FULL_MASK, !small);
    while (large) {
        const int owner = __ffs(large) - 1;
        large &= large - 1;
        rank_bin_by_warp(slots, __shfl_sync(FULL_MASK, start, owner), __shfl_sync(FULL_MASK, k, owner), lane,
                         order);
    }
}

// Cell (bin) index of each particle (binning.cuh's cell_key); positions with `stride` values per
// particle (3: x,y,z; 4: x,y,z,w float4 layout).
extern "C" __global__ void
cell_index_f32(const float* pos, int n, int stride, float lx, float ly, float lz,
               int nx, int ny, int nz, int* keys)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float* p = pos + (long long)i * stride;
    keys[i] = cell_key(p[0], p[1], p[2], lx, ly, lz, nx, ny, nz);
}

extern "C" __global__ void
cell_index_f64(const double* pos, int n, int stride, double lx, double ly, double lz,
               int nx, int ny, int nz, int* keys)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double* p = pos + (long long)i * stride;
    keys[i] = cell_key(p[0], p[1], p[2], lx, ly, lz, nx, ny, nz);
}

// Gather several per-particle arrays at once: for array a (rows of row_words[a] 4-byte words),
// dst[a][k] = src[a][order[k]].  The arrays' addresses come as device tables of pointers.
// One thread per (particle, word) of the widest row, in a grid-stride loop.  With `enabled` (not
// null) the launch does nothing unless *enabled != 0: a captured build decides on the device
// whether it reorders (its grid is then capped, so that a launch with nothing to do is short).
extern "C" __global__ void
gather_rows(const unsigned long long* __restrict__ src, const unsigned long long* __restrict__ dst,
            const int* __restrict__ row_words, int n_arrays, const int* __restrict__ order, int n,
            int max_words, const unsigned int* __restrict__ enabled)
{
    if (enabled != nullptr && *enabled == 0u) return;
    const long long total = (long long)n * max_words;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        int k = (int)(t / max_words), w = (int)(t % max_words);
        int j = order[k];
        for (int a = 0; a < n_arrays; ++a) {
            int rw = row_words[a];
            if (w < rw) {
                const unsigned int* s = reinterpret_cast<const unsigned int*>(src[a]);
                unsigned int* d = reinterpret_cast<unsigned int*>(dst[a]);
                d[(size_t)k * rw + w] = s[(size_t)j * rw + w];
            }
        }
    }
}

// The copy back after gather_rows, all arrays in one launch: src[a][t] = dst[a][t] for the
// n * row_words[a] words t of each array (one thread per word of the widest array; coalesced).
// Replaces one device-to-device copy per array: in a captured build at 32,000 atoms each copy is
// a graph node of its own.  `enabled` as in gather_rows.
extern "C" __global__ void
copy_rows_back(const unsigned long long* __restrict__ src, const unsigned long long* __restrict__ dst,
               const int* __restrict__ row_words, int n_arrays, int n, int max_words,
               const unsigned int* __restrict__ enabled)
{
    if (enabled != nullptr && *enabled == 0u) return;
    const long long total = (long long)n * max_words;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        for (int a = 0; a < n_arrays; ++a) {
            if (t < (long long)n * row_words[a]) {
                unsigned int* s = reinterpret_cast<unsigned int*>(src[a]);
                const unsigned int* d = reinterpret_cast<const unsigned int*>(dst[a]);
                s[t] = d[t];
            }
        }
    }
}

// out[k] = k for k < n (the identity permutation).
extern "C" __global__ void
iota(int* out, int n)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) out[k] = k;
}
