// The per-pair work shared by the neighbour-list and all-pairs force kernels (one place for it):
// minimum image, cutoff test, the potential (pair_select.cuh) with its cutoff treatment, and the
// sums of one target atom:
//   f += (F/r) r_ij,   e += E,   w += r_ij (x) r_ij (F/r)      (e, w only if with_energy)
// and storing them with the factor 1/2 of a full (both-direction) sum.  With COMPOSITE (float
// pair arithmetic, float-float positions and sums) the same work for the composite precision.
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
#ifndef COMPOSITE
#define COMPOSITE 0
#endif
#ifndef FIXED_POINT_FORCES
#define FIXED_POINT_FORCES 0   // mixed precision's force kernel (forces.cu): compensated float sums too
#endif
#ifndef FIXED_POINT_SUMS_FP64
#define FIXED_POINT_SUMS_FP64 0   // ... or float64 sums (precision.py: where float64 adds are fast)
#endif
#include "potentials/pair_select.cuh"   // POTENTIAL_HEADER_ID (pycumd.potentials.registry)
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

// E and F/r of one pair at squared distance r2 with the cutoff treatment; false beyond the cutoff.
__device__ __forceinline__ bool pair_energy_force(pair_t r2, const pair_t* __restrict__ row, pair_t& ep, pair_t& fr) {
    if (!(r2 < row[0])) return false;
    pair_raw(r2, row, ep, fr);
#if SHIFT_FORCE
    pair_t r = sqrt(r2);
    ep = ep - row[2] + (r - row[1]) * row[3];
    fr = fr - row[3] / r;
#else
    ep = ep - row[2];
#endif
    return true;
}

// The pair at separation (dx, dy, dz) (already the minimum image), pair_t arithmetic, into the
// accum_t sums.  Mixed precision's fixed-point kernel calls it directly where float64 adds are fast
// (FIXED_POINT_SUMS_FP64: one float64 add per term instead of a TwoSum's six float32 operations;
// 53 bits instead of about 48).
__device__ __forceinline__ void pair_sums_add_separation(PairSums& s, pair_t dx, pair_t dy, pair_t dz,
                                                         const pair_t* __restrict__ row, int with_energy)
{
    pair_t ep, fr;
    if (!pair_energy_force(dx * dx + dy * dy + dz * dz, row, ep, fr)) return;
    s.f[0] += (accum_t)(dx * fr);
    s.f[1] += (accum_t)(dy * fr);
    s.f[2] += (accum_t)(dz * fr);
    if (with_energy) {
        s.e += (accum_t)ep;
        s.w[0] += (accum_t)(dx * dx * fr); s.w[1] += (accum_t)(dy * dy * fr); s.w[2] += (accum_t)(dz * dz * fr);
        s.w[3] += (accum_t)(dx * dy * fr); s.w[4] += (accum_t)(dx * dz * fr); s.w[5] += (accum_t)(dy * dz * fr);
    }
}

// The minimum image of a separation, in place: each component in [-L/2, L/2].
__device__ __forceinline__ void minimum_image(real_t& dxr, real_t& dyr, real_t& dzr,
                                              real_t Lx, real_t Ly, real_t Lz,
                                              real_t invLx, real_t invLy, real_t invLz)
{
    dxr -= Lx * rint(dxr * invLx);
    dyr -= Ly * rint(dyr * invLy);
    dzr -= Lz * rint(dzr * invLz);
}

__device__ __forceinline__ void pair_sums_add(
    PairSums& s, real_t dxr, real_t dyr, real_t dzr,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    const pair_t* __restrict__ row, int with_energy)
{
    minimum_image(dxr, dyr, dzr, Lx, Ly, Lz, invLx, invLy, invLz);
    pair_sums_add_separation(s, (pair_t)dxr, (pair_t)dyr, (pair_t)dzr, row, with_energy);
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

#if COMPOSITE || FIXED_POINT_FORCES
// ---- float32 pairs with compensated sums (composite precision, and mixed precision's
// neighbour-list force kernel): about 48 bits in each sum of float32 pair terms ----
#include "composite/float_float.cuh"

// A compensated sum (Neumaier): hi collects the rounded sum, lo the exact TwoSum errors.
struct CompensatedSum { float hi, lo; };

__device__ __forceinline__ void csum_add(CompensatedSum& s, float b) {
    ff t = two_sum(s.hi, b);
    s.hi = t.hi;
    s.lo = ieee_fadd(s.lo, t.lo);
}

// hi + lo as a normalised float-float number, times `scale` (a power of two: exact).
__device__ __forceinline__ ff csum_value(const CompensatedSum& s, float scale) {
    ff t = two_sum(s.hi, s.lo);
    return ff_make(t.hi * scale, t.lo * scale);
}

struct PairSumsFF {
    CompensatedSum f[3];
    CompensatedSum e;
    CompensatedSum w[6];
};

__device__ __forceinline__ void pair_sums_ff_zero(PairSumsFF& s) {
#pragma unroll
    for (int q = 0; q < 3; ++q) s.f[q].hi = s.f[q].lo = 0.0f;
    s.e.hi = s.e.lo = 0.0f;
#pragma unroll
    for (int q = 0; q < 6; ++q) s.w[q].hi = s.w[q].lo = 0.0f;
}

// The pair at separation (dx, dy, dz) (already the minimum image), float32 arithmetic.
__device__ __forceinline__ void pair_sums_ff_add(PairSumsFF& s, float dx, float dy, float dz,
                                                 const float* __restrict__ row, int with_energy) {
    float ep, fr;
    if (!pair_energy_force(dx * dx + dy * dy + dz * dz, row, ep, fr)) return;
    csum_add(s.f[0], dx * fr);
    csum_add(s.f[1], dy * fr);
    csum_add(s.f[2], dz * fr);
    if (with_energy) {
        csum_add(s.e, ep);
        csum_add(s.w[0], dx * dx * fr); csum_add(s.w[1], dy * dy * fr); csum_add(s.w[2], dz * dz * fr);
        csum_add(s.w[3], dx * dy * fr); csum_add(s.w[4], dx * dz * fr); csum_add(s.w[5], dy * dz * fr);
    }
}

// The compensated sums as accum_t sums, hi + lo added in accum_t (exact for float64 unless the
// parts are more than 29 binary orders apart).
__device__ __forceinline__ PairSums pair_sums_from_ff(const PairSumsFF& s) {
    PairSums r;
#pragma unroll
    for (int q = 0; q < 3; ++q) r.f[q] = (accum_t)s.f[q].hi + (accum_t)s.f[q].lo;
    r.e = (accum_t)s.e.hi + (accum_t)s.e.lo;
#pragma unroll
    for (int q = 0; q < 6; ++q) r.w[q] = (accum_t)s.w[q].hi + (accum_t)s.w[q].lo;
    return r;
}
#endif

#if COMPOSITE
// ---- composite (float-float) precision: positions hi + lo ----

// Store as hi and lo arrays (same layouts as pair_sums_store), energy and virial with the factor 1/2.
__device__ __forceinline__ void pair_sums_ff_store(const PairSumsFF& s, int i, float* __restrict__ force,
                                                   float* __restrict__ force_lo, float* __restrict__ energy,
                                                   float* __restrict__ energy_lo, float* __restrict__ virial,
                                                   float* __restrict__ virial_lo, int with_energy) {
#pragma unroll
    for (int q = 0; q < 3; ++q) {
        ff v = csum_value(s.f[q], 1.0f);
        force[3 * (size_t)i + q] = v.hi; force_lo[3 * (size_t)i + q] = v.lo;
    }
    if (with_energy) {
        ff v = csum_value(s.e, 0.5f);
        energy[i] = v.hi; energy_lo[i] = v.lo;
#pragma unroll
        for (int q = 0; q < 6; ++q) {
            ff w = csum_value(s.w[q], 0.5f);
            virial[6 * (size_t)i + q] = w.hi; virial_lo[6 * (size_t)i + q] = w.lo;
        }
    }
}
#endif
