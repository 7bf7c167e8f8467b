// All-pairs pair forces, tiled (the seed's IUMD kernel, without atomics): no neighbour list.
//
//   f_i = sum_{j != i} (F/r)(r_ij^2) r_ij,   r_ij = r_i - r_j with the minimum image,
//   e_i = 1/2 sum_j E(r_ij),   W_i^ab = 1/2 sum_j r_ij^a r_ij^b (F/r)      (only if with_energy)
//
// Block (m, l): thread (tx, ty) owns target i = blockIdx.x * m + tx, kept in registers.  Sources
// j = 0 .. n_total-1 pass through shared memory in tiles of m * l particles, loaded coalesced by
// all threads of the block; in each tile, thread row ty takes the tile's sources ty*m .. ty*m+m-1,
// in order.  With l > 1 the l partial sums of a target are added in the order ty = 0, 1, ...
// through shared memory by thread row 0: no atomics, every sum in a fixed order (l = 1: exactly
// j = 0, 1, ..., n_total - 1, as the CPU twin).  The pair table row check r2 < rc^2 is the
// cutoff (rc = inf: all pairs).
//
// Types and outputs as forces.cu: real_t positions ((N, 4) rows x, y, z, type), pair_t pair
// arithmetic, accum_t sums; force (n_local, 3), energy (n_local,), virial (n_local, 6).
#include "pair_sums.cuh"   // types, the potential, positions, the per-pair sums

extern "C" __global__ void allpairs_forces(
    const real_t* __restrict__ pos4, int n_local, int n_total,
    const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    int with_energy)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int m = blockDim.x, l = blockDim.y, tile = m * l;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * m + tx;
    real_t* sx = reinterpret_cast<real_t*>(smem);
    real_t* sy = sx + tile;
    real_t* sz = sy + tile;
    int* st = reinterpret_cast<int*>(sz + tile);

    const int i = blockIdx.x * m + tx;
    const bool active = i < n_local;
    real_t xi = 0, yi = 0, zi = 0; int ti = 0;
    if (active) load_position(pos4, i, xi, yi, zi, ti);
    const pair_t* rows = table + (size_t)ti * n_types * PAIR_TABLE_COLUMNS;

    PairSums sums;
    pair_sums_zero(sums);
    for (int base = 0; base < n_total; base += tile) {
        const int j_load = base + tid;
        if (j_load < n_total) {
            real_t x, y, z; int t;
            load_position(pos4, j_load, x, y, z, t);
            sx[tid] = x; sy[tid] = y; sz[tid] = z; st[tid] = t;
        }
        __syncthreads();
        const int count = min(tile, n_total - base);
        const int k_end = min(ty * m + m, count);
        for (int k = ty * m; k < k_end; ++k) {
            if (base + k == i) continue;
            pair_sums_add(sums, xi - sx[k], yi - sy[k], zi - sz[k], Lx, Ly, Lz, invLx, invLy, invLz,
                          rows + st[k] * PAIR_TABLE_COLUMNS, with_energy);
        }
        __syncthreads();
    }

    if (l > 1) {
        // partial sums of the l thread rows, added in row order by row 0 (shared memory after the tiles)
        const int nq = with_energy ? 10 : 3;
        size_t tile_bytes = (size_t)tile * (3 * sizeof(real_t) + sizeof(int));
        tile_bytes = (tile_bytes + sizeof(accum_t) - 1) / sizeof(accum_t) * sizeof(accum_t);
        accum_t* red = reinterpret_cast<accum_t*>(smem + tile_bytes);
        accum_t mine[10] = {sums.f[0], sums.f[1], sums.f[2], sums.e, sums.w[0], sums.w[1], sums.w[2],
                            sums.w[3], sums.w[4], sums.w[5]};
#pragma unroll
        for (int q = 0; q < 10; ++q) if (q < nq) red[q * tile + tid] = mine[q];
        __syncthreads();
        if (ty == 0) {
#pragma unroll
            for (int q = 0; q < 10; ++q) {
                if (q < nq) {
                    accum_t s = red[q * tile + tx];
                    for (int r = 1; r < l; ++r) s += red[q * tile + r * m + tx];
                    mine[q] = s;
                }
            }
            sums.f[0] = mine[0]; sums.f[1] = mine[1]; sums.f[2] = mine[2]; sums.e = mine[3];
#pragma unroll
            for (int q = 0; q < 6; ++q) sums.w[q] = mine[4 + q];
        }
    }
    if (ty != 0 || !active) return;
    pair_sums_store(sums, i, force, energy, virial, with_energy);
}
