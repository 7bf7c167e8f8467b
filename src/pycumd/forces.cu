// Pair forces over a full Verlet neighbor list: one thread per target atom, neighbours summed in
// list order (a fixed order, so repeated runs give the same bits).
//
//   f_i = sum_j (F/r)(r_ij^2) * (r_i - r_j),   r_i - r_j taken with the minimum image
//   e_i = 1/2 sum_j E(r_ij),   W_i^ab = 1/2 sum_j (r_i - r_j)^a (r_i - r_j)^b (F/r)   (only if with_energy)
//
// Types (compile-time, from pycumd.precision): real_t positions, pair_t pair arithmetic,
// accum_t accumulation.  Positions are (N, 4): x, y, z, type (stored as a real number).
// Neighbour storage is column-major: neighbor j of atom i is nbr[k * stride + i].
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
#include "potentials/pair_select.cuh"   // POTENTIAL_HEADER_ID: 0 lennard_jones, 1 yukawa, 2 pasta
#include "positions.cuh"

extern "C" __global__ void pair_forces(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr, const int* __restrict__ nbr_count,
    int n_local, int stride, const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    int with_energy)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local || control[0]) return;     // control[0]: the step block is frozen (see step_graph.py)
    real_t xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    accum_t fx = 0, fy = 0, fz = 0, e = 0;
    accum_t w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0;
    const pair_t* rows = table + (size_t)ti * n_types * PAIR_TABLE_COLUMNS;
    int count = nbr_count[i];
    for (int k = 0; k < count; ++k) {
        int j = __ldg(nbr + (size_t)k * stride + i);
        real_t xj, yj, zj; int tj;
        load_position(pos4, j, xj, yj, zj, tj);
        real_t dxr = xi - xj, dyr = yi - yj, dzr = zi - zj;
        dxr -= Lx * rint(dxr * invLx);
        dyr -= Ly * rint(dyr * invLy);
        dzr -= Lz * rint(dzr * invLz);
        pair_t dx = (pair_t)dxr, dy = (pair_t)dyr, dz = (pair_t)dzr;
        pair_t r2 = dx * dx + dy * dy + dz * dz;
        const pair_t* row = rows + tj * PAIR_TABLE_COLUMNS;
        if (r2 < row[0]) {
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
    force[3 * i + 0] = fx; force[3 * i + 1] = fy; force[3 * i + 2] = fz;
    if (with_energy) {
        energy[i] = accum_t(0.5) * e;
        accum_t* w = virial + 6 * (size_t)i;
        w[0] = accum_t(0.5) * w0; w[1] = accum_t(0.5) * w1; w[2] = accum_t(0.5) * w2;
        w[3] = accum_t(0.5) * w3; w[4] = accum_t(0.5) * w4; w[5] = accum_t(0.5) * w5;
    }
}
