// Pair forces over a full Verlet neighbor list: `lanes` consecutive threads per target atom (1, 2,
// 4 or 8).  Lane l sums the neighbours k = l, l + lanes, l + 2 lanes, ... in list order; the
// lanes' partial sums are then added by a butterfly of shuffles (xor 1, 2, ...), which gives every
// lane the same bits.  A fixed order for a given `lanes`, so repeated runs give the same bits.
// More lanes per atom keep small systems' GPUs busy (32,000 atoms x 4 lanes = 1,000 warps) and
// read the column-major list in 32-byte pieces (8 atoms x 4 rows per warp for 4 lanes).
//
//   f_i = sum_j (F/r)(r_ij^2) * (r_i - r_j),   r_i - r_j taken with the minimum image
//   e_i = 1/2 sum_j E(r_ij),   W_i^ab = 1/2 sum_j (r_i - r_j)^a (r_i - r_j)^b (F/r)   (only if with_energy)
//
// Types (compile-time, from pycumd.precision): real_t positions, pair_t pair arithmetic,
// accum_t accumulation.  Positions are (N, 4): x, y, z, type (stored as a real number).
// Neighbour storage is column-major: neighbor j of atom i is nbr[k * stride + i].
#include "pair_sums.cuh"   // types, the potential, positions, the per-pair sums

__device__ __forceinline__ void pair_sums_lane_reduce(PairSums& s, int lanes, int with_energy) {
    for (int offset = 1; offset < lanes; offset <<= 1) {
#pragma unroll
        for (int q = 0; q < 3; ++q) s.f[q] += __shfl_xor_sync(0xffffffffu, s.f[q], offset);
        if (with_energy) {
            s.e += __shfl_xor_sync(0xffffffffu, s.e, offset);
#pragma unroll
            for (int q = 0; q < 6; ++q) s.w[q] += __shfl_xor_sync(0xffffffffu, s.w[q], offset);
        }
    }
}

extern "C" __global__ void pair_forces(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr, const int* __restrict__ nbr_count,
    int n_local, int stride, const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    int with_energy, int lanes)
{
    if (control[0]) return;                     // control[0]: the step block is frozen (see step_graph.py)
    const int shift = __ffs(lanes) - 1;         // lanes is a power of two
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = (int)(t >> shift), lane = (int)(t & (lanes - 1));
    // whole warps stay to the end (the shuffles need every lane); atoms past the end sum nothing
    if ((int)((t & ~31u) >> shift) >= n_local) return;
    const bool active = i < n_local;
    real_t xi = 0, yi = 0, zi = 0; int ti = 0;
    if (active) load_position(pos4, i, xi, yi, zi, ti);
    PairSums sums;
    pair_sums_zero(sums);
    const pair_t* rows = table + (size_t)ti * n_types * PAIR_TABLE_COLUMNS;
    const int count = active ? nbr_count[i] : 0;
    for (int k = lane; k < count; k += lanes) {
        int j = __ldg(nbr + (size_t)k * stride + i);
        real_t xj, yj, zj; int tj;
        load_position(pos4, j, xj, yj, zj, tj);
        pair_sums_add(sums, xi - xj, yi - yj, zi - zj, Lx, Ly, Lz, invLx, invLy, invLz,
                      rows + tj * PAIR_TABLE_COLUMNS, with_energy);
    }
    if (lanes > 1) pair_sums_lane_reduce(sums, lanes, with_energy);
    if (active && lane == 0) pair_sums_store(sums, i, force, energy, virial, with_energy);
}

#if COMPOSITE
// The composite-precision twin (pycumd.precision): positions hi (pos4, the rows above) + lo
// (pos_lo, (N, 4) with w unused), box lengths as L + L_lo; each separation formed from both
// parts and rounded to float once (ff_separation), the pair in float, the sums compensated;
// every output as hi and lo arrays.  Same neighbour order as pair_forces.
extern "C" __global__ void pair_forces_composite(
    const int* __restrict__ control, const float* __restrict__ pos4, const float* __restrict__ pos_lo,
    const int* __restrict__ nbr, const int* __restrict__ nbr_count, int n_local, int stride,
    const float* __restrict__ table, int n_types,
    float Lx, float Ly, float Lz, float Lx_lo, float Ly_lo, float Lz_lo, float invLx, float invLy, float invLz,
    float* __restrict__ force, float* __restrict__ force_lo, float* __restrict__ energy,
    float* __restrict__ energy_lo, float* __restrict__ virial, float* __restrict__ virial_lo, int with_energy)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local || control[0]) return;
    float xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    float4 li = __ldg(reinterpret_cast<const float4*>(pos_lo) + i);
    PairSumsFF sums;
    pair_sums_ff_zero(sums);
    const float* rows = table + (size_t)ti * n_types * PAIR_TABLE_COLUMNS;
    int count = nbr_count[i];
    for (int k = 0; k < count; ++k) {
        int j = __ldg(nbr + (size_t)k * stride + i);
        float xj, yj, zj; int tj;
        load_position(pos4, j, xj, yj, zj, tj);
        float4 lj = __ldg(reinterpret_cast<const float4*>(pos_lo) + j);
        float dx = ff_separation(xi, li.x, xj, lj.x, Lx, Lx_lo, invLx);
        float dy = ff_separation(yi, li.y, yj, lj.y, Ly, Ly_lo, invLy);
        float dz = ff_separation(zi, li.z, zj, lj.z, Lz, Lz_lo, invLz);
        pair_sums_ff_add(sums, dx, dy, dz, rows + tj * PAIR_TABLE_COLUMNS, with_energy);
    }
    pair_sums_ff_store(sums, i, force, force_lo, energy, energy_lo, virial, virial_lo, with_energy);
}
#endif
