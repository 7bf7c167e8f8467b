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

// The stable order within each bin (binning.cuh's rank_bins): order[bin_start[b] + place] = member.
extern "C" __global__ void
sort_bins(const int* __restrict__ slots, const int* __restrict__ bin_start, int n_bins, int* __restrict__ order)
{
    rank_bins(slots, bin_start, n_bins, [&](int slot, int member) { order[slot] = member; });
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

// Stable compaction: out[offset[i]] = i for every i with flags[i] != 0 (offset: the exclusive prefix
// sum of the flags), so that out holds the selected indices in increasing order.
extern "C" __global__ void
compact_scatter(const int* __restrict__ flags, const int* __restrict__ offset, int n, int* __restrict__ out)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && flags[i] != 0) out[offset[i]] = i;
}

// A batch of systems (docs/batch.md): the cell of each particle in its own system's grid, offset by
// the system's first cell, so that one counting sort bins every system at once and leaves each
// system's particles in their own segment, in the order the system's own sort gives.  Per system s:
// box (lx, ly, lz) = box[3 s ..], cells (nx, ny, nz) = cells[3 s ..], first cell cell_offset[s].
// The key is binning.cuh's cell_key with the same operands as a single system's: the same bits.
template <typename REAL>
__device__ __forceinline__ void cell_index_batched(const REAL* pos, int n, int stride, const int* system,
                                                   const REAL* box, const int* cells, const int* cell_offset,
                                                   int* keys)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const REAL* p = pos + (long long)i * stride;
    const int s = system[i];
    keys[i] = cell_offset[s] + cell_key(p[0], p[1], p[2], box[3 * s], box[3 * s + 1], box[3 * s + 2],
                                        cells[3 * s], cells[3 * s + 1], cells[3 * s + 2]);
}

extern "C" __global__ void
cell_index_batched_f32(const float* pos, int n, int stride, const int* system, const float* box,
                       const int* cells, const int* cell_offset, int* keys)
{
    cell_index_batched<float>(pos, n, stride, system, box, cells, cell_offset, keys);
}

extern "C" __global__ void
cell_index_batched_f64(const double* pos, int n, int stride, const int* system, const double* box,
                       const int* cells, const int* cell_offset, int* keys)
{
    cell_index_batched<double>(pos, n, stride, system, box, cells, cell_offset, keys);
}
