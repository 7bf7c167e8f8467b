// The per-pair work shared by the neighbour-list and all-pairs force kernels (one place for it):
// minimum image, cutoff test, the potential (pair_select.cuh) with its cutoff treatment, and the
// sums of one target atom:
//   f += (F/r) r_ij,   e += E,   w += r_ij (x) r_ij (F/r)      (e, w only if with_energy)
// and storing them with the factor 1/2 of a full (both-direction) sum.
#pragma once
// Compile-time types (from pycumd.precision; defaults for the nvcc compile test): real_t positions,
// pair_t pair arithmetic, accum_t sums.  SHIFT_FORCE: the shifted-force cutoff treatment.
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

struct PairSums {
    accum_t f[3];
    accum_t e;
    accum_t w[6];   // xx, yy, zz, xy, xz, yz
};

__device__ __forceinline__ void pair_sums_zero(PairSums& s) {
#pragma unroll
    for (int q = 0; q < 3; ++q) s.f[q] = 0;
    s.e = 0;
#pragma unroll
    for (int q = 0; q < 6; ++q) s.w[q] = 0;
}

__device__ __forceinline__ void pair_sums_add(
    PairSums& s, real_t dxr, real_t dyr, real_t dzr,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    const pair_t* __restrict__ row, int with_energy)
{
    dxr -= Lx * rint(dxr * invLx);
    dyr -= Ly * rint(dyr * invLy);
    dzr -= Lz * rint(dzr * invLz);
    pair_t dx = (pair_t)dxr, dy = (pair_t)dyr, dz = (pair_t)dzr;
    pair_t r2 = dx * dx + dy * dy + dz * dz;
    if (!(r2 < __ldg(row))) return;
    pair_t ep, fr;
    pair_raw(r2, row, ep, fr);
#if SHIFT_FORCE
    pair_t r = sqrt(r2);
    ep = ep - row[2] + (r - row[1]) * row[3];
    fr = fr - row[3] / r;
#else
    ep = ep - row[2];
#endif
    s.f[0] += (accum_t)(dx * fr);
    s.f[1] += (accum_t)(dy * fr);
    s.f[2] += (accum_t)(dz * fr);
    if (with_energy) {
        s.e += (accum_t)ep;
        s.w[0] += (accum_t)(dx * dx * fr); s.w[1] += (accum_t)(dy * dy * fr); s.w[2] += (accum_t)(dz * dz * fr);
        s.w[3] += (accum_t)(dx * dy * fr); s.w[4] += (accum_t)(dx * dz * fr); s.w[5] += (accum_t)(dy * dz * fr);
    }
}

__device__ __forceinline__ void pair_sums_store(const PairSums& s, int i, accum_t* __restrict__ force,
                                                accum_t* __restrict__ energy, accum_t* __restrict__ virial,
                                                int with_energy) {
    force[3 * (size_t)i + 0] = s.f[0]; force[3 * (size_t)i + 1] = s.f[1]; force[3 * (size_t)i + 2] = s.f[2];
    if (with_energy) {
        energy[i] = accum_t(0.5) * s.e;
#pragma unroll
        for (int q = 0; q < 6; ++q) virial[6 * (size_t)i + q] = accum_t(0.5) * s.w[q];
    }
}
