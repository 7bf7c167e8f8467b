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
#ifndef real_t
#define real_t double
#endif
#ifndef pair_t
#define pair_t double
#endif
#ifndef accum_t
#define accum_t double
#endif
#ifndef SHIFT_FORCE
#define SHIFT_FORCE 0
#endif
#include "potentials/pair_select.cuh"
#include "positions.cuh"

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

    accum_t fx = 0, fy = 0, fz = 0, e = 0;
    accum_t w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0;
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
            real_t dxr = xi - sx[k], dyr = yi - sy[k], dzr = zi - sz[k];
            dxr -= Lx * rint(dxr * invLx);
            dyr -= Ly * rint(dyr * invLy);
            dzr -= Lz * rint(dzr * invLz);
            pair_t dx = (pair_t)dxr, dy = (pair_t)dyr, dz = (pair_t)dzr;
            pair_t r2 = dx * dx + dy * dy + dz * dz;
            const pair_t* row = rows + st[k] * PAIR_TABLE_COLUMNS;
            if (r2 < __ldg(row)) {
                pair_t ep, fr;
                pair_raw(r2, row, ep, fr);
#if SHIFT_FORCE
                pair_t r = sqrt(r2);
                ep = ep - row[2] + (r - row[1]) * row[3];
                fr = fr - row[3] / r;
#else
                ep = ep - row[2];
#endif
                fx += (accum_t)(dx * fr);
                fy += (accum_t)(dy * fr);
                fz += (accum_t)(dz * fr);
                if (with_energy) {
                    e += (accum_t)ep;
                    w0 += (accum_t)(dx * dx * fr); w1 += (accum_t)(dy * dy * fr); w2 += (accum_t)(dz * dz * fr);
                    w3 += (accum_t)(dx * dy * fr); w4 += (accum_t)(dx * dz * fr); w5 += (accum_t)(dy * dz * fr);
                }
            }
        }
        __syncthreads();
    }

    if (l > 1) {
        // partial sums of the l thread rows, added in row order by row 0 (shared memory after the tiles)
        const int nq = with_energy ? 10 : 3;
        size_t tile_bytes = (size_t)tile * (3 * sizeof(real_t) + sizeof(int));
        tile_bytes = (tile_bytes + sizeof(accum_t) - 1) / sizeof(accum_t) * sizeof(accum_t);
        accum_t* red = reinterpret_cast<accum_t*>(smem + tile_bytes);
        accum_t mine[10] = {fx, fy, fz, e, w0, w1, w2, w3, w4, w5};
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
            fx = mine[0]; fy = mine[1]; fz = mine[2]; e = mine[3];
            w0 = mine[4]; w1 = mine[5]; w2 = mine[6]; w3 = mine[7]; w4 = mine[8]; w5 = mine[9];
        }
    }
    if (ty != 0 || !active) return;
    force[3 * (size_t)i + 0] = fx; force[3 * (size_t)i + 1] = fy; force[3 * (size_t)i + 2] = fz;
    if (with_energy) {
        energy[i] = accum_t(0.5) * e;
        accum_t* w = virial + 6 * (size_t)i;
        w[0] = accum_t(0.5) * w0; w[1] = accum_t(0.5) * w1; w[2] = accum_t(0.5) * w2;
        w[3] = accum_t(0.5) * w3; w[4] = accum_t(0.5) * w4; w[5] = accum_t(0.5) * w5;
    }
}
