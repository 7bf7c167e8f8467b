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
// Mixed precision runs pair_forces_fixed instead (FIXED_POINT_FORCES): the same sums from a
// 32-bit fixed-point image of the float64 positions, with compensated float32 sums.
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

#ifndef FORCE_ONE_TYPE_PATH
#define FORCE_ONE_TYPE_PATH 1      // 0: every pair loads its row of the table
#endif
#ifndef FORCE_BATCH
#define FORCE_BATCH 2              // neighbours whose loads are issued together (1, 2, 4 or 8)
#endif
#ifndef FORCE_PREFETCH
#define FORCE_PREFETCH 1           // 1: the next batch's indices are loaded before this batch's pairs
#endif
#include "list_load.cuh"   // FORCE_LIST_LOAD, load_list_entry

#ifndef FORCE_MIN_BLOCKS
// __launch_bounds__ minimum blocks of 128 threads per SM: 8 (64 registers) for Lennard-Jones in
// mixed precision (faster than 80 registers: docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "register caps");
// none otherwise (double pairs and the other potentials would spill at 64 registers)
#define FORCE_MIN_BLOCKS ((POTENTIAL_HEADER_ID == POTENTIAL_ID_LENNARD_JONES && sizeof(real_t) == 8 && sizeof(pair_t) == 4) ? 8 : 1)
#endif
#ifndef FIXED_MIN_BLOCKS
// The same for mixed precision's fixed-point kernels with Lennard-Jones: forces only 12 (40
// registers, no spills; faster than 8: the notes' "register caps"), with energies 8
#define FIXED_MIN_BLOCKS (POTENTIAL_HEADER_ID == POTENTIAL_ID_LENNARD_JONES ? 12 : 1)
#define FIXED_MIN_BLOCKS_ENERGY (POTENTIAL_HEADER_ID == POTENTIAL_ID_LENNARD_JONES ? 8 : 1)
#endif
#ifndef FIXED_MIN_BLOCKS_ENERGY
#define FIXED_MIN_BLOCKS_ENERGY FIXED_MIN_BLOCKS
#endif

// The neighbour loop of one lane: entries k = lane, lane + lanes, ... of atom i's column, in that
// order; `load(j)` reads neighbour j's row (position, type, ...), `add(row)` sums the pair.  The
// kernels wait on memory (Nsight Compute, 1M atoms: 71% of the stall cycles on global loads, the
// list streamed from DRAM and the neighbour rows mostly from L1/L2), so the loads of FORCE_BATCH
// entries are issued together, and the indices of the next batch before this batch's pairs are
// summed: more bytes in flight per warp.  The pairs are still added one by one in list order, so
// the arithmetic is the same (with --fmad=false the same bits; benchmarks/force_kernel).
template <class Load, class Add>
__device__ __forceinline__ void for_each_neighbour(const int* __restrict__ nbr, int i, int count, int lane, int lanes,
                                                   int stride, Load load, Add add)
{
    constexpr int B = FORCE_BATCH;
    using Row = decltype(load(0));
    const size_t step = (size_t)lanes * stride;                    // between this lane's entries
    const int m = count > lane ? (count - lane + lanes - 1) / lanes : 0;   // this lane's entries
    const int* next = nbr + i + (size_t)lane * stride;             // entry e = 0
    int e = 0;
    int jn[B];
    if (FORCE_PREFETCH && B <= m) {
#pragma unroll
        for (int b = 0; b < B; ++b) jn[b] = load_list_entry(next + b * step);
    }
    for (; e + B <= m; e += B) {
        int j[B];
#pragma unroll
        for (int b = 0; b < B; ++b) j[b] = FORCE_PREFETCH ? jn[b] : load_list_entry(next + b * step);
        next += B * step;
        if (FORCE_PREFETCH && e + 2 * B <= m) {
#pragma unroll
            for (int b = 0; b < B; ++b) jn[b] = load_list_entry(next + b * step);
        }
        Row rows[B];
#pragma unroll
        for (int b = 0; b < B; ++b) rows[b] = load(j[b]);
#pragma unroll
        for (int b = 0; b < B; ++b) add(rows[b]);
    }
    for (; e < m; ++e, next += step) add(load(load_list_entry(next)));      // the last < B entries
}

// The pair-table row of a pair of types.  ONE_TYPE (a single particle type, as in most runs): the
// one row is held in registers instead of being loaded for every pair (the same values).
template <bool ONE_TYPE, typename T>
struct TableRows {
    T row0[PAIR_TABLE_COLUMNS];
    const T* rows;                       // the target type's rows
    __device__ __forceinline__ explicit TableRows(const T* target_rows) : rows(target_rows) {
        if (ONE_TYPE) {
#pragma unroll
            for (int c = 0; c < PAIR_TABLE_COLUMNS; ++c) row0[c] = __ldg(target_rows + c);
        }
    }
    __device__ __forceinline__ const T* operator()(int tj) const { return ONE_TYPE ? row0 : rows + tj * PAIR_TABLE_COLUMNS; }
};

struct NeighbourRow { real_t x, y, z; int t; };

template <bool ONE_TYPE>
__device__ __forceinline__ void sum_neighbours(
    PairSums& sums, const real_t* __restrict__ pos4, const int* __restrict__ nbr, int i, int count, int lane,
    int lanes, int stride, const pair_t* __restrict__ rows, real_t xi, real_t yi, real_t zi,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, int with_energy)
{
    const TableRows<ONE_TYPE, pair_t> table(rows);
    for_each_neighbour(nbr, i, count, lane, lanes, stride,
        [&](int j) { NeighbourRow r; load_position(pos4, j, r.x, r.y, r.z, r.t); return r; },
        [&](const NeighbourRow& r) {
            pair_sums_add(sums, xi - r.x, yi - r.y, zi - r.z, Lx, Ly, Lz, invLx, invLy, invLz, table(r.t), with_energy);
        });
}

// Every target atom of a launch (the default of for_target_atom's `select`).
struct AllTargets {
    __device__ __forceinline__ bool operator()(int) const { return true; }
};

// The frame of the neighbour-list kernels: thread t works on atom t / lanes as lane t % lanes;
// `sum_atom(i, lane, active)` returns the lane's PairSums (zero for an inactive atom); the lanes'
// sums are added by the butterfly and lane 0 stores them.  Whole warps stay to the end (the
// shuffles need every lane); atoms past the end sum nothing.  `select(i)`: the atoms this launch
// computes (the others are inactive: nothing summed, nothing stored), all of them by default.
template <class SumAtom, class Select = AllTargets>
__device__ __forceinline__ void for_target_atom(int n_local, int lanes, accum_t* __restrict__ force,
                                                accum_t* __restrict__ energy, accum_t* __restrict__ virial,
                                                int with_energy, SumAtom sum_atom, Select select = Select())
{
    const int shift = __ffs(lanes) - 1;         // lanes is a power of two
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = (int)(t >> shift), lane = (int)(t & (lanes - 1));
    if ((int)((t & ~31u) >> shift) >= n_local) return;
    const bool active = i < n_local && select(i);
    PairSums sums = sum_atom(i, lane, active);
    if (lanes > 1) pair_sums_lane_reduce(sums, lanes, with_energy);
    if (active && lane == 0) pair_sums_store(sums, i, force, energy, virial, with_energy);
}

// Each force kernel comes in two: NAME (forces only, the ordinary steps) and NAME_energy (also
// per-atom energies and virials, the reporting steps), so that the ordinary steps' kernel holds no
// registers for the seven sums it does not make (and may run more warps per SM).
// BLOCKS, BLOCKS_ENERGY: their __launch_bounds__ minimum blocks per SM.
#define FORCE_KERNEL_PAIR(NAME, ARGS, PASS, BLOCKS, BLOCKS_ENERGY)                                    \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS) NAME(ARGS) { NAME##_body<0>(PASS); }    \
    extern "C" __global__ void __launch_bounds__(128, BLOCKS_ENERGY) NAME##_energy(ARGS) { NAME##_body<1>(PASS); }

// 128 threads per block: pycumd.forces.BLOCK
template <int WITH_ENERGY, class Select = AllTargets>
__device__ __forceinline__ void pair_forces_body(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr, const int* __restrict__ nbr_count,
    int n_local, int stride, const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial, int lanes,
    Select select = Select())
{
    if (control[0]) return;                     // control[0]: the step block is frozen (see step_graph.py)
    for_target_atom(n_local, lanes, force, energy, virial, WITH_ENERGY, [&](int i, int lane, bool active) {
        real_t xi = 0, yi = 0, zi = 0; int ti = 0;
        if (active) load_position(pos4, i, xi, yi, zi, ti);
        PairSums sums;
        pair_sums_zero(sums);
        const pair_t* rows = table + (size_t)ti * n_types * PAIR_TABLE_COLUMNS;
        const int count = active ? nbr_count[i] : 0;
        if (FORCE_ONE_TYPE_PATH && n_types == 1)
            sum_neighbours<true>(sums, pos4, nbr, i, count, lane, lanes, stride, rows, xi, yi, zi,
                                 Lx, Ly, Lz, invLx, invLy, invLz, WITH_ENERGY);
        else
            sum_neighbours<false>(sums, pos4, nbr, i, count, lane, lanes, stride, rows, xi, yi, zi,
                                  Lx, Ly, Lz, invLx, invLy, invLz, WITH_ENERGY);
        return sums;
    }, select);
}

#define PAIR_FORCES_ARGS                                                                              \
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,    \
    const int* __restrict__ nbr_count, int n_local, int stride, const pair_t* __restrict__ table,     \
    int n_types, real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,           \
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial, int lanes
#define PAIR_FORCES_PASS \
    control, pos4, nbr, nbr_count, n_local, stride, table, n_types, Lx, Ly, Lz, invLx, invLy, invLz, force, energy, virial, lanes
FORCE_KERNEL_PAIR(pair_forces, PAIR_FORCES_ARGS, PAIR_FORCES_PASS, FORCE_MIN_BLOCKS, FORCE_MIN_BLOCKS)

#ifndef TARGET_ZONES
#define TARGET_ZONES 0
#endif
#if TARGET_ZONES
// A spatial domain's forces in two launches around its halo exchange (pycumd.parallel.domains,
// DomainForces; compiled with -DTARGET_ZONES=1, so the kernels above are the same PTX without it):
// zone 0 takes the targets inside the inner box [inner_lo, inner_hi) (whose list holds owned rows
// only, so it runs while the ghosts travel), zone 1 the others, after the ghosts landed.  Each
// target's sums are those of pair_forces: the same neighbours in the same order.
struct InnerBoxZone {
    const real_t* pos4;
    int zone;
    real_t lo[3], hi[3];
    __device__ __forceinline__ bool operator()(int i) const {
        real_t x, y, z; int t;
        load_position(pos4, i, x, y, z, t);
        const bool inner = x >= lo[0] && x < hi[0] && y >= lo[1] && y < hi[1] && z >= lo[2] && z < hi[2];
        return inner == (zone == 0);
    }
};

extern "C" __global__ void __launch_bounds__(128, FORCE_MIN_BLOCKS) pair_forces_zone(
    PAIR_FORCES_ARGS, int zone, real_t lox, real_t loy, real_t loz, real_t hix, real_t hiy, real_t hiz)
{
    pair_forces_body<0>(PAIR_FORCES_PASS, InnerBoxZone{pos4, zone, {lox, loy, loz}, {hix, hiy, hiz}});
}
#endif // TARGET_ZONES

#ifndef BATCH
#define BATCH 0
#endif
#if BATCH
// The batched engine's force kernel (batch_engine.py, docs/batch.md; compiled with -DBATCH=1, so the
// kernels above are the same PTX without it): pair_forces_body's frame and neighbour loop for every
// atom of every system in one launch, the target's system `system[i]` giving what a single run passes
// as arguments: its box `box[6 s ..]` (Lx, Ly, Lz, 1/Lx, 1/Ly, 1/Lz, real_t values as the single
// launch's), its rows of the shared pair table (from row `table_row[s]`, `n_types_of[s]` types).  The
// lists hold batch indices (a neighbour is always in the target's system), column-major with the
// batch's stride.  Every pair loads its table row (the one-type path's register copy holds the same
// values), and `lanes` is the batch's (the same for every system).
template <int WITH_ENERGY>
__device__ __forceinline__ void pair_forces_batch_body(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,
    const int* __restrict__ nbr_count, int n_local, int stride, const pair_t* __restrict__ table,
    const int* __restrict__ system, const real_t* __restrict__ box, const int* __restrict__ table_row,
    const int* __restrict__ n_types_of, accum_t* __restrict__ force, accum_t* __restrict__ energy,
    accum_t* __restrict__ virial, int lanes)
{
    if (control[0]) return;
    for_target_atom(n_local, lanes, force, energy, virial, WITH_ENERGY, [&](int i, int lane, bool active) {
        real_t xi = 0, yi = 0, zi = 0; int ti = 0, s = 0;
        if (active) { load_position(pos4, i, xi, yi, zi, ti); s = __ldg(system + i); }
        PairSums sums;
        pair_sums_zero(sums);
        const real_t* const b = box + 6 * (size_t)s;
        const int n_types = __ldg(n_types_of + s);
        const pair_t* rows = table + ((size_t)__ldg(table_row + s) + (size_t)ti * n_types) * PAIR_TABLE_COLUMNS;
        const int count = active ? nbr_count[i] : 0;
        sum_neighbours<false>(sums, pos4, nbr, i, count, lane, lanes, stride, rows, xi, yi, zi,
                              __ldg(b), __ldg(b + 1), __ldg(b + 2), __ldg(b + 3), __ldg(b + 4), __ldg(b + 5),
                              WITH_ENERGY);
        return sums;
    });
}

#define PAIR_FORCES_BATCH_ARGS                                                                        \
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,    \
    const int* __restrict__ nbr_count, int n_local, int stride, const pair_t* __restrict__ table,     \
    const int* __restrict__ system, const real_t* __restrict__ box, const int* __restrict__ table_row, \
    const int* __restrict__ n_types_of, accum_t* __restrict__ force, accum_t* __restrict__ energy,    \
    accum_t* __restrict__ virial, int lanes
#define PAIR_FORCES_BATCH_PASS \
    control, pos4, nbr, nbr_count, n_local, stride, table, system, box, table_row, n_types_of, force, energy, virial, lanes
FORCE_KERNEL_PAIR(pair_forces_batch, PAIR_FORCES_BATCH_ARGS, PAIR_FORCES_BATCH_PASS, FORCE_MIN_BLOCKS, FORCE_MIN_BLOCKS)
#endif // BATCH

#if FIXED_POINT_FORCES || COMPOSITE
// One coordinate of r_i - r_j from box fractions (minimum image by wrap-around), in float32:
// (float)d * s for the 32-bit difference d.  SPLIT: the int-to-float conversion (I2F, a
// quarter-rate instruction, three per pair) done by full-rate ones instead: the high
// and low 16 bits of d made floats exactly by magic-number additions (d >> 16 in [-2^15, 2^15),
// d & 0xFFFF in [0, 2^16)), then hi * 65536 + lo in one fmaf, whose one rounding gives
// round-to-nearest of d: the same value as (float)d, bit for bit.  It pays where the kernel is
// bound by its issue rate (one lane per atom) and costs where it waits on latency (several lanes:
// its chain of five dependent operations for one I2F); composite's kernel, whose float-float sums
// keep the other units busy, is slower with it and keeps I2F
// (docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "split conversion").  Mixed precision has a kernel of each (pair_forces_fixed and
// pair_forces_fixed_split), chosen per launch by its lanes (pycumd.forces.SPLIT_CONVERSION_MAX_LANES):
// one kernel with both paths, branching on the lanes, spilled at its 40-register cap.
template <bool SPLIT>
__device__ __forceinline__ float fixed_separation(unsigned int ui, unsigned int uj, float s) {
    const int d = (int)(ui - uj);
    if (SPLIT) {
        const float hi = __int_as_float(0x4B400000 + (d >> 16)) - 12582912.0f;    // 1.5 * 2^23: exact for |x| < 2^22
        const float lo = __int_as_float(0x4B000000 + (d & 0xFFFF)) - 8388608.0f;  // 2^23: exact for 0 <= x < 2^23
        return __fmaf_rn(hi, 65536.0f, lo) * s;
    }
    return (float)d * s;
}

// The fixed-point kernels' pair term into compensated float sums or into accum_t sums.
__device__ __forceinline__ void pair_sums_fixed_add(PairSumsFF& s, float dx, float dy, float dz,
                                                    const float* __restrict__ row, int with_energy) {
    pair_sums_ff_add(s, dx, dy, dz, row, with_energy);
}
__device__ __forceinline__ void pair_sums_fixed_add(PairSums& s, float dx, float dy, float dz,
                                                    const float* __restrict__ row, int with_energy) {
    pair_sums_add_separation(s, dx, dy, dz, row, with_energy);   // pair_t is float here
}

template <bool ONE_TYPE, bool SPLIT, typename Sums>
__device__ __forceinline__ void sum_neighbours_fixed(
    Sums& sums, const uint4* __restrict__ image, const int* __restrict__ nbr, int i, int count, int lane,
    int lanes, int stride, const float* __restrict__ rows, uint4 own, float sx, float sy, float sz, int with_energy)
{
    const TableRows<ONE_TYPE, float> table(rows);
    for_each_neighbour(nbr, i, count, lane, lanes, stride,
        [&](int j) { return __ldg(image + j); },
        [&](const uint4& r) {
            pair_sums_fixed_add(sums, fixed_separation<SPLIT>(own.x, r.x, sx), fixed_separation<SPLIT>(own.y, r.y, sy),
                                fixed_separation<SPLIT>(own.z, r.z, sz), table((int)r.w), with_energy);
        });
}

#endif

#if FIXED_POINT_FORCES
// Mixed precision (pycumd.precision): the state is float64; the force kernel reads a 32-bit
// fixed-point image of the positions, written by fixed_point_image before each force computation:
// coordinate x as the box fraction  u = round(x 2^32 / L) mod 2^32  (x need not be wrapped), and
// the type, in one 16-byte row (uint4; float64 rows take 32 bytes).  The separation is then
// (int)(u_i - u_j): exact, and the 32-bit wrap-around is the minimum image (no rint).  It is
// rounded to float32 once, times s = L / 2^32 (s in float32: every length scaled by the same
// 1 + O(2^-24)).  Resolution L / 2^32 per coordinate (1.5e-8 in a box of 64), below the float32
// rounding of a separation r itself while L < ~256 r.  Pairs in float32; the sums in float64
// (FIXED_POINT_SUMS_FP64: GPUs whose float64 adds run at >= 1/4 the float32 rate, A100 and H100)
// or compensated in float32 (about 48 bits, as composite; GPUs with slow float64) and added into
// float64 at the end.
#include "fixed_point.cuh"          // box_fraction

extern "C" __global__ void fixed_point_image(const int* __restrict__ control, const double* __restrict__ pos4,
                                             uint4* __restrict__ image, int n,
                                             double scale_x, double scale_y, double scale_z)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    double x, y, z; int t;
    load_position(pos4, i, x, y, z, t);
    image[i] = make_uint4(box_fraction(x, scale_x), box_fraction(y, scale_y), box_fraction(z, scale_z), (unsigned int)t);
}

template <int WITH_ENERGY, bool SPLIT>
__device__ __forceinline__ void fixed_pair_forces_body(
    const int* __restrict__ control, const uint4* __restrict__ image, const int* __restrict__ nbr,
    const int* __restrict__ nbr_count, int n_local, int stride, const float* __restrict__ table, int n_types,
    float sx, float sy, float sz, accum_t* __restrict__ force, accum_t* __restrict__ energy,
    accum_t* __restrict__ virial, int lanes)
{
    if (control[0]) return;
    for_target_atom(n_local, lanes, force, energy, virial, WITH_ENERGY, [&](int i, int lane, bool active) {
        const uint4 own = active ? __ldg(image + i) : make_uint4(0, 0, 0, 0);
#if FIXED_POINT_SUMS_FP64
        PairSums sums;
        pair_sums_zero(sums);
#else
        PairSumsFF sums;
        pair_sums_ff_zero(sums);
#endif
        const float* rows = table + (size_t)own.w * n_types * PAIR_TABLE_COLUMNS;
        const int count = active ? nbr_count[i] : 0;
        if (FORCE_ONE_TYPE_PATH && n_types == 1)
            sum_neighbours_fixed<true, SPLIT>(sums, image, nbr, i, count, lane, lanes, stride, rows, own, sx, sy, sz, WITH_ENERGY);
        else
            sum_neighbours_fixed<false, SPLIT>(sums, image, nbr, i, count, lane, lanes, stride, rows, own, sx, sy, sz, WITH_ENERGY);
#if FIXED_POINT_SUMS_FP64
        return sums;
#else
        return pair_sums_from_ff(sums);
#endif
    });
}

#define PAIR_FORCES_FIXED_ARGS                                                                        \
    const int* __restrict__ control, const uint4* __restrict__ image, const int* __restrict__ nbr,    \
    const int* __restrict__ nbr_count, int n_local, int stride, const float* __restrict__ table,      \
    int n_types, float sx, float sy, float sz, accum_t* __restrict__ force,                           \
    accum_t* __restrict__ energy, accum_t* __restrict__ virial, int lanes
#define PAIR_FORCES_FIXED_PASS \
    control, image, nbr, nbr_count, n_local, stride, table, n_types, sx, sy, sz, force, energy, virial, lanes
// pair_forces_fixed(_energy): separations converted by I2F; pair_forces_fixed_split(_energy): by halves
template <int WITH_ENERGY>
__device__ __forceinline__ void pair_forces_fixed_body(PAIR_FORCES_FIXED_ARGS) {
    fixed_pair_forces_body<WITH_ENERGY, false>(PAIR_FORCES_FIXED_PASS);
}
template <int WITH_ENERGY>
__device__ __forceinline__ void pair_forces_fixed_split_body(PAIR_FORCES_FIXED_ARGS) {
    fixed_pair_forces_body<WITH_ENERGY, true>(PAIR_FORCES_FIXED_PASS);
}
FORCE_KERNEL_PAIR(pair_forces_fixed, PAIR_FORCES_FIXED_ARGS, PAIR_FORCES_FIXED_PASS, FIXED_MIN_BLOCKS,
                  FIXED_MIN_BLOCKS_ENERGY)
FORCE_KERNEL_PAIR(pair_forces_fixed_split, PAIR_FORCES_FIXED_ARGS, PAIR_FORCES_FIXED_PASS, FIXED_MIN_BLOCKS,
                  FIXED_MIN_BLOCKS_ENERGY)
#endif

#if COMPOSITE
// Composite precision from a 32-bit fixed-point image, as mixed precision's pair_forces_fixed
// (16-byte rows, the separation exact in box fractions, minimum image by wrap-around): the box
// fraction u = round((hi + lo) 2^32 / L) mod 2^32 formed in float32 arithmetic, no float64 on the
// GPU.  hi * s_hi = p + e exactly (two-product); the rest hi s_lo + lo s_hi is below 2^-23 of p;
// p rounded to an integer leaves an exact float difference; u is within one unit (L / 2^32) of
// the exact rounding.  Positions may lie outside [0, L) by skin/2 (negative p wraps mod 2^32).
__device__ __forceinline__ unsigned int ff_box_fraction(float hi, float lo, float s_hi, float s_lo) {
    const float p = __fmul_rn(hi, s_hi);
    const float e = __fmaf_rn(hi, s_hi, -p);
    const float rest = __fadd_rn(e, __fadd_rn(__fmul_rn(hi, s_lo), __fmul_rn(lo, s_hi)));
    const long long whole = __float2ll_rn(p);
    const float frac = __fsub_rn(p, (float)whole);           // exact: |p - whole| <= 1/2
    return (unsigned int)(unsigned long long)(whole + __float2ll_rn(__fadd_rn(frac, rest)));
}

extern "C" __global__ void fixed_point_image_composite(
    const int* __restrict__ control, const float* __restrict__ pos4, const float* __restrict__ pos_lo,
    uint4* __restrict__ image, int n, float sx, float sy, float sz, float sx_lo, float sy_lo, float sz_lo)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    float x, y, z; int t;
    load_position(pos4, i, x, y, z, t);
    const float4 l = __ldg(reinterpret_cast<const float4*>(pos_lo) + i);
    image[i] = make_uint4(ff_box_fraction(x, l.x, sx, sx_lo), ff_box_fraction(y, l.y, sy, sy_lo),
                          ff_box_fraction(z, l.z, sz, sz_lo), (unsigned int)t);
}

// The lanes' compensated sums added by the butterfly (as pair_sums_lane_reduce): two compensated
// sums (h1, l1) + (h2, l2) -> (TwoSum(h1, h2).hi, l1 + l2 + TwoSum(h1, h2).lo), symmetric in its two
// arguments, so that every lane of an atom gets the same bits.
__device__ __forceinline__ void csum_add_lane(CompensatedSum& s, int offset) {
    const float hi = __shfl_xor_sync(0xffffffffu, s.hi, offset), lo = __shfl_xor_sync(0xffffffffu, s.lo, offset);
    const ff t = two_sum(s.hi, hi);
    s.hi = t.hi;
    s.lo = ieee_fadd(ieee_fadd(s.lo, lo), t.lo);
}

__device__ __forceinline__ void pair_sums_ff_lane_reduce(PairSumsFF& s, int lanes, int with_energy) {
    for (int offset = 1; offset < lanes; offset <<= 1) {
#pragma unroll
        for (int q = 0; q < 3; ++q) csum_add_lane(s.f[q], offset);
        if (with_energy) {
            csum_add_lane(s.e, offset);
#pragma unroll
            for (int q = 0; q < 6; ++q) csum_add_lane(s.w[q], offset);
        }
    }
}

// `lanes` threads per target (as the other force kernels: thread t is lane t % lanes of atom
// t / lanes), the pairs from the image (sum_neighbours_fixed), the lanes' sums added by the
// butterfly, every output as hi and lo; WITH_ENERGY at compile time (forces only between reports).
template <int WITH_ENERGY>
__device__ __forceinline__ void pair_forces_composite_body(
    const int* __restrict__ control, const uint4* __restrict__ image, const int* __restrict__ nbr,
    const int* __restrict__ nbr_count, int n_local, int stride, const float* __restrict__ table, int n_types,
    float sx, float sy, float sz, float* __restrict__ force, float* __restrict__ force_lo,
    float* __restrict__ energy, float* __restrict__ energy_lo, float* __restrict__ virial,
    float* __restrict__ virial_lo, int lanes)
{
    const int shift = __ffs(lanes) - 1;         // lanes is a power of two
    const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = (int)(t >> shift), lane = (int)(t & (lanes - 1));
    if ((int)((t & ~31u) >> shift) >= n_local || control[0]) return;   // whole warps (the shuffles)
    const bool active = i < n_local;
    const uint4 own = active ? __ldg(image + i) : make_uint4(0, 0, 0, 0);
    PairSumsFF sums;
    pair_sums_ff_zero(sums);
    const float* rows = table + (size_t)own.w * n_types * PAIR_TABLE_COLUMNS;
    const int count = active ? nbr_count[i] : 0;
    if (FORCE_ONE_TYPE_PATH && n_types == 1)      // I2F conversions (fixed_separation<false>)
        sum_neighbours_fixed<true, false>(sums, image, nbr, i, count, lane, lanes, stride, rows, own, sx, sy, sz, WITH_ENERGY);
    else
        sum_neighbours_fixed<false, false>(sums, image, nbr, i, count, lane, lanes, stride, rows, own, sx, sy, sz, WITH_ENERGY);
    if (lanes > 1) pair_sums_ff_lane_reduce(sums, lanes, WITH_ENERGY);
    if (active && lane == 0) pair_sums_ff_store(sums, i, force, force_lo, energy, energy_lo, virial, virial_lo, WITH_ENERGY);
}

#define PAIR_FORCES_COMPOSITE_ARGS                                                                    \
    const int* __restrict__ control, const uint4* __restrict__ image, const int* __restrict__ nbr,    \
    const int* __restrict__ nbr_count, int n_local, int stride, const float* __restrict__ table,      \
    int n_types, float sx, float sy, float sz, float* __restrict__ force, float* __restrict__ force_lo, \
    float* __restrict__ energy, float* __restrict__ energy_lo, float* __restrict__ virial,            \
    float* __restrict__ virial_lo, int lanes
#define PAIR_FORCES_COMPOSITE_PASS \
    control, image, nbr, nbr_count, n_local, stride, table, n_types, sx, sy, sz, force, force_lo, energy, energy_lo, virial, virial_lo, lanes
extern "C" __global__ void pair_forces_composite(PAIR_FORCES_COMPOSITE_ARGS) {
    pair_forces_composite_body<0>(PAIR_FORCES_COMPOSITE_PASS);
}
extern "C" __global__ void pair_forces_composite_energy(PAIR_FORCES_COMPOSITE_ARGS) {
    pair_forces_composite_body<1>(PAIR_FORCES_COMPOSITE_PASS);
}
#endif
