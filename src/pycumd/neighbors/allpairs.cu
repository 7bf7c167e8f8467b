// All-pairs pair forces, tiled (the seed's IUMD kernel, without atomics): no neighbour list.
//
//   f_i = sum_{j != i} (F/r)(r_ij^2) r_ij,   r_ij = r_i - r_j with the minimum image,
//   e_i = 1/2 sum_j E(r_ij),   W_i^ab = 1/2 sum_j r_ij^a r_ij^b (F/r)      (only if with_energy)
//
// Targets: the n_local rows of pos4; sources: the n_total rows of src4, target i being source
// i + self_offset (the serial run passes pos4 twice and 0; a P x Q force-matrix block its own
// sources, pycumd.parallel.matrix).
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
//
// allpairs_image_forces: boxes shorter than twice the cutoff.  Each pair's minimum-image separation
// d is taken with every lattice shift of the list `shifts` ((n_shifts, 3) int, from the host:
// pycumd.neighbors.allpairs.image_shifts, the shifts n for which |d + n L| < r_cut can hold):
//   f_i = sum_j sum_n (F/r) (d_ij + n L),   e_i = 1/2 sum_j sum_n E,   W_i likewise,
// skipping only (j = i, n = 0): an atom meets its own images (n and -n both, each with the 1/2).
// For each source j the shifts are taken in list order (the CPU twin's order).  The template
// flag keeps allpairs_forces (IMAGES = false) the plain minimum-image kernel.
#include "pair_sums.cuh"   // types, the potential, positions, the per-pair sums

template <bool IMAGES>
__device__ __forceinline__ void allpairs_body(
    const real_t* __restrict__ pos4, int n_local, const real_t* __restrict__ src4, int n_total, int self_offset,
    const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    const int* __restrict__ shifts, int n_shifts, int zero_shift,
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
            load_position(src4, j_load, x, y, z, t);
            sx[tid] = x; sy[tid] = y; sz[tid] = z; st[tid] = t;
        }
        __syncthreads();
        const int count = min(tile, n_total - base);
        // inactive lanes (past the targets) only help load the tiles: no pair of theirs is evaluated
        // (a potential may record what it meets, e.g. pair_style table's inner-distance hits)
        const int k_end = active ? min(ty * m + m, count) : ty * m;
        for (int k = ty * m; k < k_end; ++k) {
            const bool self = base + k == i + self_offset;
            if (IMAGES) {
                real_t dx = xi - sx[k], dy = yi - sy[k], dz = zi - sz[k];
                minimum_image(dx, dy, dz, Lx, Ly, Lz, invLx, invLy, invLz);
                const pair_t* row = rows + st[k] * PAIR_TABLE_COLUMNS;
                for (int s = 0; s < n_shifts; ++s) {
                    if (self && s == zero_shift) continue;
                    pair_sums_add_separation(sums, (pair_t)(dx + (real_t)shifts[3 * s] * Lx),
                                             (pair_t)(dy + (real_t)shifts[3 * s + 1] * Ly),
                                             (pair_t)(dz + (real_t)shifts[3 * s + 2] * Lz), row, with_energy);
                }
                continue;
            }
            if (self) continue;
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

extern "C" __global__ void allpairs_forces(
    const real_t* __restrict__ pos4, int n_local, const real_t* __restrict__ src4, int n_total, int self_offset,
    const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    int with_energy)
{
    allpairs_body<false>(pos4, n_local, src4, n_total, self_offset, table, n_types, Lx, Ly, Lz, invLx, invLy,
                         invLz, nullptr, 1, 0, force, energy, virial, with_energy);
}

extern "C" __global__ void allpairs_image_forces(
    const real_t* __restrict__ pos4, int n_local, const real_t* __restrict__ src4, int n_total, int self_offset,
    const pair_t* __restrict__ table, int n_types,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    const int* __restrict__ shifts, int n_shifts, int zero_shift,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    int with_energy)
{
    allpairs_body<true>(pos4, n_local, src4, n_total, self_offset, table, n_types, Lx, Ly, Lz, invLx, invLy,
                        invLz, shifts, n_shifts, zero_shift, force, energy, virial, with_energy);
}

// ---------------------------------------------------------------------------------------------
// Fast path: screened Coulomb (Yukawa) without cutoff, A_ij = a_i a_j (a_t >= 0), float pairs
// (single and mixed precision).  Same sums, with the arithmetic rearranged (docs/ions.md):
//
//  * Lengths in units of 1 / alpha, alpha = kappa log2(e): r' = alpha r, exp(-kappa r) = 2^-r'.
//  * Minimum image in 32-bit fixed point: X = frac(x / L) 2^32 (uint32, computed once per staged
//    particle, in float64, so any x wraps).  X_i - X_j wraps modulo 2^32, which IS the minimum
//    image; its top 23 bits (rounded) placed in a float's mantissa give dx' with one IADD, one
//    LEA and one FFMA (EXACT_SEPARATION: all 32 bits through I2F, one IADD, I2F, FMUL).
//  * p = a_j 2^-r' = ex2(log2 a_j - r2' rinv') with log2 a_j staged beside the source, and
//    fr' = p rinv'^2 (rinv' + ln 2):  f_i = a_i alpha^2 sum fr' dx',  e_i = 1/2 a_i alpha sum p rinv',
//    W_i = 1/2 a_i alpha sum dx' dx' fr'.  rsqrt and ex2 are the hardware approximations
//    (MUFU.RSQ, MUFU.EX2; relative error ~1e-7).
//  * Each thread owns R targets (one shared-memory source read serves R pairs); the block's
//    l thread rows split each tile; grid.y = S splits the sources into chunks.  Partial sums of
//    the rows are added in row order in shared memory, those of the S chunks in chunk order by
//    the block that finishes last (an integer ticket per target block, reset by that block): no
//    floating-point atomics, every sum in a fixed order whatever the scheduling.
//  * Single precision sums in float32; mixed sums each tile's pairs in float32, then in float64.
//  * The self pair and the sources past the chunk are masked (rinv' = 0) only in the tiles where
//    they can occur.
#ifndef EXACT_SEPARATION
#define EXACT_SEPARATION 0
#endif

__device__ __forceinline__ float ap_rsqrt(float x) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float ap_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// x -> round(frac(x / L) 2^32) as uint32 (the periodic coordinate in fixed point)
__device__ __forceinline__ unsigned int ap_fixed(double x, double invL) {
    double t = x * invL;
    t -= floor(t);
    return (unsigned int)__double2ll_rn(t * 4294967296.0);
}

// One minimum-image separation in scaled units from two fixed-point coordinates.
// Default: g = round((Xi - Xj) / 2^9) (the bias 2^8 is in Xi), f = 1.5 2^23 + g exactly, dx' = f s + c
// with c = -1.5 2^23 s exact.  EXACT_SEPARATION: dx' = float(int(Xi - Xj)) s.
__device__ __forceinline__ float ap_separation(unsigned int xi, unsigned int xj, float s, float c) {
#if EXACT_SEPARATION
    return __fmul_rn(__int2float_rn((int)(xi - xj)), s);
#else
    int g = ((int)(xi - xj)) >> 9;
    return __fmaf_rn(__int_as_float(g + 0x4B400000), s, c);
#endif
}

struct YukawaConsts {
    double invL[3];
    float s[3], c[3];
    float s_grid, ln2s;     // CUBIC: scaled length of one fixed-point step, and s_grid ln 2; else 0, ln 2
};

template <int R, bool E>
struct YukawaSums {
    float f[R][3];
    float e[R];
    float w[R][6];
};

template <int R, bool E>
__device__ __forceinline__ void yk_zero(YukawaSums<R, E>& a) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
        a.f[r][0] = a.f[r][1] = a.f[r][2] = 0.0f;
        if (E) {
            a.e[r] = 0.0f;
#pragma unroll
            for (int q = 0; q < 6; ++q) a.w[r][q] = 0.0f;
        }
    }
}

// One pair in scaled units: separation d' = r_i' - r_j' (minimum image) from the fixed-point
// coordinates Xi and q.xyz; lq = log2 of the prefactor (log2 a_j here, log2 a_i + log2 a_j in the
// Newton kernels); masked pairs (MASK and masked) give u = fr = 0.  Out: u = p rinv' (energy term),
// fr = p rinv'^2 (rinv' + ln 2) (force over distance, scaled).
template <bool CUBIC, bool MASK>
__device__ __forceinline__ void yk_pair(const unsigned int (&Xi)[3], const uint4& q, float lq, bool masked,
                                        const float (&s)[3], const float (&c)[3], float s_grid, float ln2s,
                                        float& dx, float& dy, float& dz, float& u, float& fr)
{
    if (CUBIC) {           // grid units: dx'' = X_i - X_j exactly rounded, r' = s r''
        dx = __int2float_rn((int)(Xi[0] - q.x));
        dy = __int2float_rn((int)(Xi[1] - q.y));
        dz = __int2float_rn((int)(Xi[2] - q.z));
    } else {
        dx = ap_separation(Xi[0], q.x, s[0], c[0]);
        dy = ap_separation(Xi[1], q.y, s[1], c[1]);
        dz = ap_separation(Xi[2], q.z, s[2], c[2]);
    }
    float r2 = __fmaf_rn(dz, dz, __fmaf_rn(dy, dy, __fmul_rn(dx, dx)));
    float ri = ap_rsqrt(r2);
    if (MASK && masked) ri = 0.0f;
    float p = ap_ex2(__fmaf_rn(CUBIC ? -__fmul_rn(r2, s_grid) : -r2, ri, lq));
    u = __fmul_rn(p, ri);
    fr = __fmul_rn(__fmul_rn(u, ri), __fadd_rn(ri, ln2s));
}

// Adds one pair's force, energy and virial terms to sums f (3), e, w (6) with sign +1 or -1 on the force.
template <bool E, int SIGN>
__device__ __forceinline__ void yk_add(float (&f)[3], float& e, float (&w)[6], float dx, float dy, float dz,
                                       float u, float fr)
{
    const float sfr = SIGN > 0 ? fr : -fr;
    f[0] = __fmaf_rn(dx, sfr, f[0]);
    f[1] = __fmaf_rn(dy, sfr, f[1]);
    f[2] = __fmaf_rn(dz, sfr, f[2]);
    if (E) {
        e += u;
        float fx = dx * fr, fy = dy * fr;
        w[0] = __fmaf_rn(dx, fx, w[0]);
        w[1] = __fmaf_rn(dy, fy, w[1]);
        w[2] = __fmaf_rn(dz, dz * fr, w[2]);
        w[3] = __fmaf_rn(dy, fx, w[3]);
        w[4] = __fmaf_rn(dz, fx, w[4]);
        w[5] = __fmaf_rn(dz, fy, w[5]);
    }
}

// The pairs of R targets with sources src[0 .. count-1]; MASK: source index j0 + k, skip j == i_r and
// j >= j_end.
template <int R, bool E, bool CUBIC, bool MASK>
__device__ __forceinline__ void yk_row(YukawaSums<R, E>& a, const uint4* __restrict__ src, int count,
                                       const unsigned int (&X)[R][3], const float (&s)[3], const float (&c)[3],
                                       float s_grid, float ln2s, int j0, int j_end, const int (&idx)[R])
{
#pragma unroll 8
    for (int k = 0; k < count; ++k) {
        const uint4 q = src[k];
        const float lq = __uint_as_float(q.w);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float dx, dy, dz, u, fr;
            const int j = j0 + k;
            yk_pair<CUBIC, MASK>(X[r], q, lq, MASK && (j == idx[r] || j >= j_end), s, c, s_grid, ln2s,
                                 dx, dy, dz, u, fr);
            yk_add<E, 1>(a.f[r], a.e[r], a.w[r], dx, dy, dz, u, fr);
        }
    }
}

template <int R, bool E>
__device__ __forceinline__ void yk_flush(accum_t (&acc)[R][10], YukawaSums<R, E>& a) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int q = 0; q < 3; ++q) acc[r][q] += (accum_t)a.f[r][q];
        if (E) {
            acc[r][3] += (accum_t)a.e[r];
#pragma unroll
            for (int q = 0; q < 6; ++q) acc[r][4 + q] += (accum_t)a.w[r][q];
        }
    }
}

__device__ __forceinline__ void yk_stage(uint4* dst, const real_t* __restrict__ pos4, int j, int n_total,
                                         const float* __restrict__ log2a, const YukawaConsts& K)
{
    uint4 v = make_uint4(0u, 0u, 0u, 0u);     // past the end: masked, log2 a = 0 keeps p finite
    if (j < n_total) {
        real_t x, y, z; int t;
        load_position(pos4, j, x, y, z, t);
        v.x = ap_fixed((double)x, K.invL[0]);
        v.y = ap_fixed((double)y, K.invL[1]);
        v.z = ap_fixed((double)z, K.invL[2]);
        v.w = __float_as_uint(__ldg(log2a + t));
    }
    *dst = v;
}

template <int R, bool E, bool CUBIC>
__device__ void yukawa_body(const real_t* __restrict__ pos4, int n_local, int n_total,
                            const float* __restrict__ log2a, const accum_t* __restrict__ a_type,
                            const YukawaConsts& K, accum_t scale_f, accum_t scale_e,
                            accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
                            accum_t* __restrict__ partial, int* __restrict__ tickets)
{
    extern __shared__ __align__(16) unsigned char yk_smem[];
    uint4* tile_src = reinterpret_cast<uint4*>(yk_smem);
    const int m = blockDim.x, l = blockDim.y, tile = m * l;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * m + tx;
    const int nq = E ? 10 : 3;
    const int i0 = blockIdx.x * (m * R);
    const int S = gridDim.y, chunk_id = blockIdx.y;
    // sources of this block: [j_begin, j_end), a multiple of m long except the last chunk
    const int per = ((n_total + S - 1) / S + m - 1) / m * m;
    const int j_begin = min(chunk_id * per, n_total), j_end = min(j_begin + per, n_total);

    unsigned int X[R][3];
    int idx[R];
    const float s[3] = {K.s[0], K.s[1], K.s[2]};
    const float c[3] = {K.c[0], K.c[1], K.c[2]};
#pragma unroll
    for (int r = 0; r < R; ++r) {
        idx[r] = i0 + r * m + tx;
        real_t x = 0, y = 0, z = 0; int t;
        if (idx[r] < n_local) load_position(pos4, idx[r], x, y, z, t);
        X[r][0] = ap_fixed((double)x, K.invL[0]);
        X[r][1] = ap_fixed((double)y, K.invL[1]);
        X[r][2] = ap_fixed((double)z, K.invL[2]);
#if !EXACT_SEPARATION
        if (!CUBIC) {
#pragma unroll
            for (int d = 0; d < 3; ++d) X[r][d] += 256u;     // rounding bias of the >> 9
        }
#endif
    }

    accum_t acc[R][10];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int q = 0; q < 10; ++q) acc[r][q] = 0;
    YukawaSums<R, E> a;
    yk_zero(a);

    for (int base = j_begin; base < j_end; base += tile) {
        __syncthreads();
        yk_stage(tile_src + tid, pos4, base + tid, n_total, log2a, K);
        __syncthreads();
        const int j0 = base + ty * m;                 // this row's sources j0 .. j0 + m - 1
        if (j0 >= j_end) continue;
        const bool mask = j0 + m > j_end || (j0 < i0 + m * R && j0 + m > i0);
        if (mask) yk_row<R, E, CUBIC, true>(a, tile_src + ty * m, m, X, s, c, K.s_grid, K.ln2s, j0, j_end, idx);
        else yk_row<R, E, CUBIC, false>(a, tile_src + ty * m, m, X, s, c, K.s_grid, K.ln2s, j0, j_end, idx);
        if constexpr (sizeof(accum_t) > sizeof(float)) {   // mixed: each tile's float sums into float64
            yk_flush(acc, a);
            yk_zero(a);
        }
    }
    if constexpr (sizeof(accum_t) == sizeof(float)) yk_flush(acc, a);

    // rows 0 .. l-1 added in order, one quantity at a time, in the tile buffer
    accum_t* red = reinterpret_cast<accum_t*>(yk_smem);
    if (l > 1) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
#pragma unroll
            for (int q = 0; q < 10; ++q) {
                if (q >= nq) continue;
                __syncthreads();
                red[tid] = acc[r][q];
                __syncthreads();
                if (ty == 0) {
                    accum_t v = red[tx];
                    for (int row = 1; row < l; ++row) v += red[row * m + tx];
                    acc[r][q] = v;
                }
            }
        }
    }

    if (S > 1) {
        // write this chunk's partial sums; the last block of the target block adds them in chunk order
        if (ty == 0) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (idx[r] >= n_local) continue;
#pragma unroll
                for (int q = 0; q < 10; ++q)
                    if (q < nq) partial[((size_t)chunk_id * nq + q) * n_local + idx[r]] = acc[r][q];
            }
        }
        __threadfence();
        __syncthreads();
        __shared__ int last;
        if (tid == 0) {
            int ticket = atomicAdd(tickets + blockIdx.x, 1);
            last = ticket == S - 1;
            if (last) tickets[blockIdx.x] = 0;        // ready for the next launch
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
        if (ty == 0) {
#pragma unroll
            for (int r = 0; r < R; ++r) {
                if (idx[r] >= n_local) continue;
#pragma unroll
                for (int q = 0; q < 10; ++q) {
                    if (q >= nq) continue;
                    accum_t v = __ldcg(partial + (size_t)q * n_local + idx[r]);
                    for (int ch = 1; ch < S; ++ch) v += __ldcg(partial + ((size_t)ch * nq + q) * n_local + idx[r]);
                    acc[r][q] = v;
                }
            }
        }
    }

    if (ty != 0) return;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int i = idx[r];
        if (i >= n_local) continue;
        real_t x, y, z; int t;
        load_position(pos4, i, x, y, z, t);
        const accum_t ai = a_type[t];
        const accum_t cf = ai * scale_f, ce = ai * scale_e;
        force[3 * (size_t)i + 0] = cf * acc[r][0];
        force[3 * (size_t)i + 1] = cf * acc[r][1];
        force[3 * (size_t)i + 2] = cf * acc[r][2];
        if (E) {
            energy[i] = ce * acc[r][3];
#pragma unroll
            for (int q = 0; q < 6; ++q) virial[6 * (size_t)i + q] = ce * acc[r][4 + q];
        }
    }
}

// Kernels allpairs_yukawa_<f|e><R>[c]: f forces, e forces + energy + virial; R = 2 or 4 targets per
// thread; c: cubic box, everything in fixed-point grid units (dx'' = float(X_i - X_j), one I2F per
// dimension, no scaling; r' = s_grid r'').  Separate kernels, so that the force-only ones keep their own
// (smaller) register budgets.  scale_f, scale_e: alpha^2, alpha / 2 (cubic: alpha^2 / s_grid^2,
// alpha / (2 s_grid)); s, c: scaled units per fixed-point step (see ap_separation); partial:
// S x nq x n_local; tickets: one int per target block, zero before the first launch.
// YUKAWA_MIN_BLOCKS > 0: __launch_bounds__(256, YUKAWA_MIN_BLOCKS), a register cap that lets that
// many 256-thread blocks share an SM (every fast-path shape has at most 256 threads).
#ifndef YUKAWA_MIN_BLOCKS
#define YUKAWA_MIN_BLOCKS 0
#endif
#if YUKAWA_MIN_BLOCKS > 0
#define YUKAWA_BOUNDS __launch_bounds__(256, YUKAWA_MIN_BLOCKS)
#else
#define YUKAWA_BOUNDS
#endif
#define YUKAWA_KERNEL(NAME, R, E, CUBIC)                                                                   \
extern "C" __global__ void YUKAWA_BOUNDS NAME(                                                            \
    const real_t* __restrict__ pos4, int n_local, int n_total,                                            \
    const float* __restrict__ log2a, const accum_t* __restrict__ a_type,                                  \
    double invLx, double invLy, double invLz, float sx, float sy, float sz, float cx, float cy, float cz, \
    float s_grid, float ln2s, accum_t scale_f, accum_t scale_e,                                           \
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,             \
    accum_t* __restrict__ partial, int* __restrict__ tickets)                                             \
{                                                                                                          \
    YukawaConsts K = {{invLx, invLy, invLz}, {sx, sy, sz}, {cx, cy, cz}, s_grid, ln2s};                   \
    yukawa_body<R, E, CUBIC>(pos4, n_local, n_total, log2a, a_type, K, scale_f, scale_e, force, energy,  \
                             virial, partial, tickets);                                                    \
}
YUKAWA_KERNEL(allpairs_yukawa_f2, 2, false, false)
YUKAWA_KERNEL(allpairs_yukawa_f4, 4, false, false)
YUKAWA_KERNEL(allpairs_yukawa_e2, 2, true, false)
YUKAWA_KERNEL(allpairs_yukawa_e4, 4, true, false)
YUKAWA_KERNEL(allpairs_yukawa_f2c, 2, false, true)
YUKAWA_KERNEL(allpairs_yukawa_f4c, 4, false, true)
YUKAWA_KERNEL(allpairs_yukawa_e2c, 2, true, true)
YUKAWA_KERNEL(allpairs_yukawa_e4c, 4, true, true)

// ---------------------------------------------------------------------------------------------
// Fast path with Newton's third law: each unordered pair {i, j} evaluated once, its force added to
// i and subtracted from j; same arithmetic as above (yk_pair), with p = a_i a_j 2^-r' (the exponent
// carries log2 a_i + log2 a_j), so the outputs need no per-atom factor.  Still no floating-point
// atomics and every sum in a fixed order:
//
//  * Particles in groups of 32 R (a warp's targets: lane, lane + 32, ... lane + 32 (R-1)) and
//    super-groups of G = W 32 R (a block of W warps).  Block (I, J), I <= J, pairs super-group I
//    (targets, warp w owns group I W + w) with super-group J (sources, staged in shared memory).
//    Blocks with I < J first (P (P - 1) / 2 of them), then the P diagonal blocks.
//  * In phase v = 0 .. W-1 warp w takes source group u = (w + v) mod W, one 32-particle subgroup at
//    a time: lane L holds the subgroup's source (L + k) mod 32 at step k = 0 .. 31 (read from shared
//    memory) and the reaction sums of that source, which pass to lane L - 1 after each step
//    (__shfl_sync), so after 32 steps lane L holds the sums of source L.  The warp adds them to the
//    block's source sums in shared memory: in a phase no two warps share a source group, and over
//    the phases the warps come in a fixed order.  Target sums stay in registers.
//  * Diagonal blocks (I = J): warp w takes source groups u > w with the reaction, its own group
//    (u = w) without it (every ordered pair, the self pair masked), and skips u < w.
//  * Each block writes its sums to partial[o][q][p] (q: quantity, p: particle), o = the other
//    super-group (J for the targets, I for the sources; diagonal blocks add their target and source
//    sums); every slot is written by exactly one block.  allpairs_yukawa_newton_sum then adds
//    o = 0 .. P-1 in order.
//  * Single precision sums in float32; mixed sums each subgroup's 32 pairs in float32, then in float64.
//  * Padding particles (index >= n) and the self pair are masked only in the groups where they occur.
// YUKAWA_NEWTON_UNROLL: unroll factor of the 32-step loop (registers against instruction overlap)
#ifndef YUKAWA_NEWTON_UNROLL
#define YUKAWA_NEWTON_UNROLL 4
#endif
#define YK_STRING(x) #x
#define YK_PRAGMA(x) _Pragma(YK_STRING(x))

template <int R, bool E, bool CUBIC, bool MASK, bool REACTION>
__device__ __forceinline__ void yk_newton_subgroup(
    YukawaSums<R, E>& a, const uint4* __restrict__ src, int j_base, const unsigned int (&X)[R][3],
    const float (&lqi)[R], const int (&idx)[R], int n, const float (&s)[3], const float (&c)[3],
    float s_grid, float ln2s, float (&jf)[3], float& je, float (&jw)[6])
{
    const int lane = threadIdx.x;
    jf[0] = jf[1] = jf[2] = 0.0f;
    je = 0.0f;
#pragma unroll
    for (int q = 0; q < 6; ++q) jw[q] = 0.0f;
    YK_PRAGMA(unroll YUKAWA_NEWTON_UNROLL)
    for (int k = 0; k < 32; ++k) {
        const int from = (lane + k) & 31;
        const uint4 q = src[from];
        const float lqj = __uint_as_float(q.w);
        const int j = j_base + from;
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float dx, dy, dz, u, fr;
            yk_pair<CUBIC, MASK>(X[r], q, lqi[r] + lqj, MASK && (j == idx[r] || j >= n || idx[r] >= n),
                                 s, c, s_grid, ln2s, dx, dy, dz, u, fr);
            yk_add<E, 1>(a.f[r], a.e[r], a.w[r], dx, dy, dz, u, fr);
            if (REACTION) yk_add<E, -1>(jf, je, jw, dx, dy, dz, u, fr);
        }
        if (REACTION) {          // the sums of source (lane + k + 1) mod 32 come from lane + 1
            const int next = (lane + 1) & 31;
#pragma unroll
            for (int d = 0; d < 3; ++d) jf[d] = __shfl_sync(0xffffffffu, jf[d], next);
            if (E) {
                je = __shfl_sync(0xffffffffu, je, next);
#pragma unroll
                for (int d = 0; d < 6; ++d) jw[d] = __shfl_sync(0xffffffffu, jw[d], next);
            }
        }
    }
}

template <int R, bool E, bool CUBIC>
__device__ void yukawa_newton_body(const real_t* __restrict__ pos4, int n, const float* __restrict__ log2a,
                                   const YukawaConsts& K, accum_t* __restrict__ partial, long long block_offset)
{
    extern __shared__ __align__(16) unsigned char yk_smem[];
    constexpr int nq = E ? 10 : 3;
    const int W = blockDim.y, w = threadIdx.y, lane = threadIdx.x, tid = w * 32 + lane;
    const int G = W * 32 * R;
    uint4* stage = reinterpret_cast<uint4*>(yk_smem);                    // G sources
    accum_t* src_sums = reinterpret_cast<accum_t*>(stage + G);           // nq x G reaction sums
    const int P = (n + G - 1) / G;

    // block -> (I, J): blocks t < P (P - 1) / 2 are the pairs I < J (J = 1: t = 0; J = 2: t = 1, 2; ...);
    // a launch covers blocks block_offset .. block_offset + gridDim.x - 1 (a share of the triangle)
    const long long t = blockIdx.x + block_offset, off = (long long)P * (P - 1) / 2;
    int I, J;
    if (t < off) {
        J = (int)((1.0 + sqrt(1.0 + 8.0 * (double)t)) * 0.5);
        while ((long long)J * (J - 1) / 2 > t) --J;
        while ((long long)(J + 1) * J / 2 <= t) ++J;
        I = (int)(t - (long long)J * (J - 1) / 2);
    } else {
        I = J = (int)(t - off);
    }
    const bool diagonal = I == J;

    // stage super-group J (fixed point, log2 a; padding: zeros, masked) and clear the reaction sums
    for (int p = tid; p < G; p += W * 32) yk_stage(stage + p, pos4, J * G + p, n, log2a, K);
    for (int p = tid; p < nq * G; p += W * 32) src_sums[p] = 0;

    unsigned int X[R][3];
    float lqi[R];
    int idx[R];
    const int i_group = I * G + w * 32 * R;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        idx[r] = i_group + r * 32 + lane;
        uint4 v;
        yk_stage(&v, pos4, idx[r], n, log2a, K);
        X[r][0] = v.x; X[r][1] = v.y; X[r][2] = v.z;
        lqi[r] = __uint_as_float(v.w);
#if !EXACT_SEPARATION
        if (!CUBIC) {
#pragma unroll
            for (int d = 0; d < 3; ++d) X[r][d] += 256u;     // rounding bias of the >> 9
        }
#endif
    }
    const float s[3] = {K.s[0], K.s[1], K.s[2]};
    const float c[3] = {K.c[0], K.c[1], K.c[2]};
    const bool i_padded = i_group + 32 * R > n;

    accum_t acc[R][10];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int q = 0; q < 10; ++q) acc[r][q] = 0;
    YukawaSums<R, E> a;
    yk_zero(a);
    __syncthreads();

    for (int v = 0; v < W; ++v) {
        const int u = (w + v) % W;
        if (!(diagonal && u < w)) {
            const bool reaction = !(diagonal && u == w);
            for (int sg = 0; sg < R; ++sg) {
                const int local = u * 32 * R + sg * 32;            // subgroup's first source in the stage
                const int j_base = J * G + local;
                const bool mask = !reaction || i_padded || j_base + 32 > n;
                float jf[3], je, jw[6];
                const uint4* src = stage + local;
                if (!reaction)
                    yk_newton_subgroup<R, E, CUBIC, true, false>(a, src, j_base, X, lqi, idx, n, s, c, K.s_grid,
                                                                 K.ln2s, jf, je, jw);
                else if (mask)
                    yk_newton_subgroup<R, E, CUBIC, true, true>(a, src, j_base, X, lqi, idx, n, s, c, K.s_grid,
                                                                K.ln2s, jf, je, jw);
                else
                    yk_newton_subgroup<R, E, CUBIC, false, true>(a, src, j_base, X, lqi, idx, n, s, c, K.s_grid,
                                                                 K.ln2s, jf, je, jw);
                if (reaction) {
                    const int p = local + lane;
                    src_sums[0 * G + p] += (accum_t)jf[0];
                    src_sums[1 * G + p] += (accum_t)jf[1];
                    src_sums[2 * G + p] += (accum_t)jf[2];
                    if (E) {
                        src_sums[3 * G + p] += (accum_t)je;
#pragma unroll
                        for (int q = 0; q < 6; ++q) src_sums[(4 + q) * G + p] += (accum_t)jw[q];
                    }
                }
                if constexpr (sizeof(accum_t) > sizeof(float)) {   // mixed: each subgroup's float sums into float64
                    yk_flush(acc, a);
                    yk_zero(a);
                }
            }
        }
        __syncthreads();
    }
    if constexpr (sizeof(accum_t) == sizeof(float)) yk_flush(acc, a);

    // targets: slot o = J (diagonal: plus the reaction sums of the same particles)
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (idx[r] >= n) continue;
        const int local = w * 32 * R + r * 32 + lane;
#pragma unroll
        for (int q = 0; q < nq; ++q) {
            accum_t value = acc[r][q];
            if (diagonal) value += src_sums[q * G + local];
            partial[((size_t)J * nq + q) * n + idx[r]] = value;
        }
    }
    // sources: slot o = I
    if (!diagonal) {
        for (int p = tid; p < G; p += W * 32) {
            if (J * G + p >= n) break;
#pragma unroll
            for (int q = 0; q < nq; ++q) partial[((size_t)I * nq + q) * n + J * G + p] = src_sums[q * G + p];
        }
    }
}

// Kernels allpairs_yukawa_newton_<f|e><R>[c] (as allpairs_yukawa_*): grid P (P + 1) / 2 blocks of
// (32, W) threads, P = ceil(n / (32 W R)), or a contiguous share of them starting at block_offset
// (the slots the other blocks would write keep their values: zeros, for a sum over ranks);
// shared memory G (16 + nq sizeof(accum_t)) bytes; partial: P x nq x n.  Then allpairs_yukawa_newton_sum.
#define YUKAWA_NEWTON_KERNEL(NAME, R, E, CUBIC)                                                            \
extern "C" __global__ void YUKAWA_BOUNDS NAME(                                                            \
    const real_t* __restrict__ pos4, int n, const float* __restrict__ log2a,                              \
    double invLx, double invLy, double invLz, float sx, float sy, float sz, float cx, float cy, float cz, \
    float s_grid, float ln2s, accum_t* __restrict__ partial, long long block_offset)                      \
{                                                                                                          \
    YukawaConsts K = {{invLx, invLy, invLz}, {sx, sy, sz}, {cx, cy, cz}, s_grid, ln2s};                   \
    yukawa_newton_body<R, E, CUBIC>(pos4, n, log2a, K, partial, block_offset);                            \
}
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_f2, 2, false, false)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_f4, 4, false, false)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_e2, 2, true, false)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_e4, 4, true, false)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_f2c, 2, false, true)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_f4c, 4, false, true)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_e2c, 2, true, true)
YUKAWA_NEWTON_KERNEL(allpairs_yukawa_newton_e4c, 4, true, true)

// The sums of the P slots of each particle, in slot order, scaled: force = scale_f sum, energy and
// virial = scale_e sum.
extern "C" __global__ void allpairs_yukawa_newton_sum(
    const accum_t* __restrict__ partial, int n, int P, int nq, accum_t scale_f, accum_t scale_e,
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    for (int q = 0; q < nq; ++q) {
        accum_t v = partial[(size_t)q * n + i];
        for (int o = 1; o < P; ++o) v += partial[((size_t)o * nq + q) * n + i];
        if (q < 3) force[3 * (size_t)i + q] = scale_f * v;
        else if (q == 3) energy[i] = scale_e * v;
        else virial[6 * (size_t)i + (q - 4)] = scale_e * v;
    }
}
