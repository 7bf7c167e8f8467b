// The embedded-atom method's two passes over a full Verlet neighbour list (pycumd.eam_forces, whose
// Numba kernels are the CPU twins: the same operations in the same order, so that double precision
// built without fused multiply-add gives the same bits on both).  A thread per target atom; its
// neighbours in list order.  LAMMPS' splines (pycumd.potentials.eam): 7 coefficients c0 .. c6 per
// grid point; a value at x is read at p = x / delta + 1, m = (int)p clamped, p -= m, p = min(p, 1):
// value ((c3 p + c4) p + c5) p + c6, derivative (c0 p + c1) p + c2.
//
// The tables' rows on the GPU (EAM_TABLE_COLUMNS, chosen and built in one place:
// pycumd.eam_forces.table_columns / device_tables), table t's point m at ((t * (n + 1)) + m) * columns:
//   8 (default): c3 c4 c5 c6 | c0 c1 c2 0, rows of 32 B (float) / 64 B (double) on 16-byte bounds, so
//     that a value's coefficients are one 16-byte load (a float4; two double2 in double) and a
//     derivative's another: per pair, pass 1 loads rho's value half, pass 2 rho's derivative half
//     (twice for two different tables) and both halves of Z2's row;
//   7: LAMMPS' and the CPU's c0 .. c6 (28 B / 56 B rows, unaligned), read coefficient by coefficient
//     (scalar loads at addresses that differ per lane): kept for A/B runs (benchmarks/eam_layout_ab.sh).
// Only where the coefficients are read differs: the arithmetic and its order are the same, so the
// bits are.  The tables' loads are already read-only (ld.global.nc: const __restrict__), so __ldg
// would add nothing.
// EAM_FP_ROWS (off by default; pycumd.eam_forces.fp_rows_option) adds kernels *_fp_rows in which
// pass 1 also writes rows (x, y, z, F'(rho)) that pass 2 reads in place of the positions and fp (a
// neighbour's row without its separate F'(rho) load), for one-element potentials in a process
// without ghosts.
//
//   eam_density[_energy]:  rho_i = sum_j rho_{t_j t_i}(r_ij);  fp_i = F'_{t_i}(rho_i);
//                          (energy) e_i = F_{t_i}(rho_i) (+ fp_i (rho_i - rhomax) beyond the table)
//   eam_forces[_energy]:   f_i = sum_j -(fp_i rho'_{t_j t_i} + fp_j rho'_{t_i t_j} + phi'_{t_i t_j}) / r * r_ij
//                          (energy) e_i += 1/2 sum_j phi(r_ij);  W_i = 1/2 sum_j r_ij (x) r_ij (f_pair / r)
//
// Types (compile-time, pycumd.precision): real_t positions (N, 4) rows x, y, z, type; pair_t the
// splines and the pair arithmetic; accum_t densities, fp, forces, energies and virials.  Neighbour
// storage is column-major: neighbour k of atom i is nbr[k * stride + i].  128 threads per block
// (pycumd.forces.BLOCK).
#ifndef real_t
#define real_t double
#endif
#ifndef pair_t
#define pair_t double
#endif
#ifndef accum_t
#define accum_t double
#endif
#include "positions.cuh"
#include "list_load.cuh"   // load_list_entry: the list's entries streamed past L1 (and first out of L2 for float32 rows)

#ifndef EAM_TABLE_COLUMNS
#define EAM_TABLE_COLUMNS 8        // the tables' row layout (see the top): 8 or 7
#endif
#if EAM_TABLE_COLUMNS != 7 && EAM_TABLE_COLUMNS != 8
#error "EAM_TABLE_COLUMNS must be 7 (c0 .. c6) or 8 (c3 c4 c5 c6 | c0 c1 c2 0)"
#endif
// Where a row's value coefficients c3 .. c6 and derivative coefficients c0 .. c2 begin.
#define EAM_VALUE_AT (EAM_TABLE_COLUMNS == 8 ? 0 : 3)
#define EAM_SLOPE_AT (EAM_TABLE_COLUMNS == 8 ? 4 : 0)

// r_i - r_j with the minimum image (real_t), then in pair_t, and its square.
__device__ __forceinline__ pair_t eam_separation(real_t xi, real_t yi, real_t zi, real_t xj, real_t yj, real_t zj,
                                                 real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy,
                                                 real_t invLz, pair_t& dx, pair_t& dy, pair_t& dz) {
    real_t a = xi - xj, b = yi - yj, c = zi - zj;
    a -= Lx * rint(a * invLx);
    b -= Ly * rint(b * invLy);
    c -= Lz * rint(c * invLz);
    dx = (pair_t)a; dy = (pair_t)b; dz = (pair_t)c;
    return dx * dx + dy * dy + dz * dz;
}

// LAMMPS' lookup on the r grid: the grid point m (a row index within a table) and p, the same for
// every table of the pair (one computation, then each table's row is table * (nr + 1) + m).
__device__ __forceinline__ int eam_r_grid(int nr, pair_t r, pair_t rdr, pair_t& p) {
    p = r * rdr + (pair_t)1.0;
    int m = (int)p;
    m = min(m, nr - 1);
    p -= (pair_t)m;
    p = p > (pair_t)1.0 ? (pair_t)1.0 : p;          // LAMMPS: p = MIN(p, 1.0)
    return m;
}

__device__ __forceinline__ const pair_t* eam_row(const pair_t* __restrict__ tables, int table, int nr, int m) {
    return tables + ((size_t)table * (nr + 1) + m) * EAM_TABLE_COLUMNS;
}

// Four consecutive coefficients of a row from q on: one 16-byte load (float) or two (double) in the
// 8-column layout, whose q is on a 16-byte bound; one at a time in the 7-column layout (a coefficient
// that is not used, as the pad after c2, is not loaded).
__device__ __forceinline__ void eam_load4(const float* __restrict__ q, float (&c)[4]) {
#if EAM_TABLE_COLUMNS == 8
    const float4 v = *reinterpret_cast<const float4*>(q);
    c[0] = v.x; c[1] = v.y; c[2] = v.z; c[3] = v.w;
#else
    c[0] = q[0]; c[1] = q[1]; c[2] = q[2]; c[3] = q[3];
#endif
}

__device__ __forceinline__ void eam_load4(const double* __restrict__ q, double (&c)[4]) {
#if EAM_TABLE_COLUMNS == 8
    const double2 a = reinterpret_cast<const double2*>(q)[0], b = reinterpret_cast<const double2*>(q)[1];
    c[0] = a.x; c[1] = a.y; c[2] = b.x; c[3] = b.y;
#else
    c[0] = q[0]; c[1] = q[1]; c[2] = q[2]; c[3] = q[3];
#endif
}

// A row's value ((c3 p + c4) p + c5) p + c6 and derivative (c0 p + c1) p + c2, in T (pair_t, or the
// accumulation type for F(rho)); the coefficients converted to T first, as the CPU twin's are.
template <typename T>
__device__ __forceinline__ T eam_value(const pair_t* __restrict__ row, T p) {
    pair_t c[4];
    eam_load4(row + EAM_VALUE_AT, c);
    return (((T)c[0] * p + (T)c[1]) * p + (T)c[2]) * p + (T)c[3];
}

template <typename T>
__device__ __forceinline__ T eam_slope(const pair_t* __restrict__ row, T p) {
    pair_t c[4];
    eam_load4(row + EAM_SLOPE_AT, c);
    return ((T)c[0] * p + (T)c[1]) * p + (T)c[2];
}

// Neighbours are taken EAM_BATCH at a time (1, 2 or 4): the batch's indices, then its position
// rows, are loaded before any of its pairs is computed, so that the gathers are in flight together;
// the pairs are then added in list order, so the sums are those of the one-at-a-time loop (and of
// the CPU twin).
#ifndef EAM_BATCH
#define EAM_BATCH 2
#endif
#ifndef EAM_LIST_LOAD
#define EAM_LIST_LOAD 1            // 1: load_list_entry (list_load.cuh); 0: __ldg
#endif
__device__ __forceinline__ int eam_list_entry(const int* p) {
    return EAM_LIST_LOAD ? load_list_entry(p) : __ldg(p);
}

// A row (x, y, z, w) of the positions: w as the type (int), or, in the F'(rho) rows (EAM_FP_ROWS),
// as it is (real_t: F'(rho) of the atom).
__device__ __forceinline__ void eam_load_row(const real_t* __restrict__ rows, int j, real_t& x, real_t& y, real_t& z,
                                             int& t) {
    load_position(rows, j, x, y, z, t);
}

__device__ __forceinline__ void eam_load_row(const float* __restrict__ rows, int j, float& x, float& y, float& z,
                                             float& w) {
    const float4 p = __ldg(reinterpret_cast<const float4*>(rows) + j);
    x = p.x; y = p.y; z = p.z; w = p.w;
}

__device__ __forceinline__ void eam_load_row(const double* __restrict__ rows, int j, double& x, double& y, double& z,
                                             double& w) {
    const double2* p = reinterpret_cast<const double2*>(rows) + 2 * (size_t)j;
    const double2 a = __ldg(p), b = __ldg(p + 1);
    x = a.x; y = a.y; z = b.x; w = b.y;
}

// The neighbour loop of a pass: add(j, x, y, z, w) for each entry of atom i's column, in list order,
// w the row's fourth entry as W (eam_load_row: int, the type, or real_t).
template <typename W = int, typename Add>
__device__ __forceinline__ void eam_for_each_neighbour(const real_t* __restrict__ pos4, const int* __restrict__ nbr,
                                                       int i, int count, int stride, Add add) {
    int k = 0;
    for (; k + EAM_BATCH <= count; k += EAM_BATCH) {
        int j[EAM_BATCH]; real_t x[EAM_BATCH], y[EAM_BATCH], z[EAM_BATCH]; W t[EAM_BATCH];
#pragma unroll
        for (int b = 0; b < EAM_BATCH; ++b) j[b] = eam_list_entry(nbr + (size_t)(k + b) * stride + i);
#pragma unroll
        for (int b = 0; b < EAM_BATCH; ++b) eam_load_row(pos4, j[b], x[b], y[b], z[b], t[b]);
#pragma unroll
        for (int b = 0; b < EAM_BATCH; ++b) add(j[b], x[b], y[b], z[b], t[b]);
    }
    for (; k < count; ++k) {
        const int j = eam_list_entry(nbr + (size_t)k * stride + i);
        real_t xj, yj, zj; W tj;
        eam_load_row(pos4, j, xj, yj, zj, tj);
        add(j, xj, yj, zj, tj);
    }
}

template <int FLAG, typename A, typename B> struct eam_choose { typedef A type; };
template <typename A, typename B> struct eam_choose<0, A, B> { typedef B type; };

// FP_ROWS (EAM_FP_ROWS): also rows[i] = (x_i, y_i, z_i, F'(rho_i)), which pass 2 then reads in place
// of the positions and fp.
template <int WITH_ENERGY, int FP_ROWS>
__device__ __forceinline__ void eam_density_body(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,
    const int* __restrict__ nbr_count, int n_local, int stride, int n_types, int nr, pair_t rdr, pair_t cutsq,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, int nrho, accum_t rdrho,
    accum_t rhomax, const pair_t* __restrict__ rhor, const int* __restrict__ type2rhor,
    const pair_t* __restrict__ frho, const int* __restrict__ type2frho, accum_t* __restrict__ fp,
    accum_t* __restrict__ energy, real_t* __restrict__ rows)
{
    if (control[0]) return;                     // control[0]: the step block is frozen (see step_graph.py)
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    real_t xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    accum_t rho = 0;
    const int count = nbr_count[i];
    eam_for_each_neighbour(pos4, nbr, i, count, stride, [&](int, real_t xj, real_t yj, real_t zj, int tj) {
        pair_t dx, dy, dz;
        const pair_t rsq = eam_separation(xi, yi, zi, xj, yj, zj, Lx, Ly, Lz, invLx, invLy, invLz, dx, dy, dz);
        if (rsq < cutsq) {
            pair_t p;
            const int m = eam_r_grid(nr, sqrt(rsq), rdr, p);
            rho += (accum_t)eam_value(eam_row(rhor, __ldg(type2rhor + tj * n_types + ti), nr, m), p);
        }
    });
    accum_t p = rho * rdrho + (accum_t)1.0;
    int m = (int)p;
    m = max(1, min(m, nrho - 1));
    p -= (accum_t)m;
    p = p > (accum_t)1.0 ? (accum_t)1.0 : p;
    const pair_t* c = eam_row(frho, __ldg(type2frho + ti), nrho, m);
    const accum_t fpi = eam_slope(c, p);
    fp[i] = fpi;
    if (FP_ROWS) {
        const real_t row[4] = {xi, yi, zi, (real_t)fpi};
        store_row4(rows, i, row);
    }
    if (WITH_ENERGY) {
        accum_t phi = eam_value(c, p);
        if (rho > rhomax) phi += fpi * (rho - rhomax);
        energy[i] = phi;
    }
}

// FP_ROWS (EAM_FP_ROWS): the positions and F'(rho) of i and its neighbours from pass 1's rows (no
// separate load of F'(rho_j)), for potentials whose every type pair reads the same rho and Z2
// tables (the first entries of type2rhor and type2z2r) in a process without ghosts; the same values,
// so the same bits (real_t and accum_t are one type in every precision with EAM).
template <int WITH_ENERGY, int FP_ROWS>
__device__ __forceinline__ void eam_forces_body(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,
    const int* __restrict__ nbr_count, int n_local, int stride, int n_types, int nr, pair_t rdr, pair_t cutsq,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz,
    const pair_t* __restrict__ rhor, const int* __restrict__ type2rhor, const pair_t* __restrict__ z2r,
    const int* __restrict__ type2z2r, const accum_t* __restrict__ fp, accum_t* __restrict__ force,
    accum_t* __restrict__ energy, accum_t* __restrict__ virial, const real_t* __restrict__ rows)
{
    typedef typename eam_choose<FP_ROWS, real_t, int>::type W;   // a row's w: F'(rho) or the type
    if (control[0]) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    real_t xi, yi, zi; W wi;
    eam_load_row(FP_ROWS ? rows : pos4, i, xi, yi, zi, wi);
    const int ti = FP_ROWS ? 0 : (int)wi;
    const pair_t fpi = FP_ROWS ? (pair_t)wi : (pair_t)fp[i];
    const int rho_table = FP_ROWS ? __ldg(type2rhor) : 0, z2_table = FP_ROWS ? __ldg(type2z2r) : 0;
    accum_t fx = 0, fy = 0, fz = 0, e = 0, w0 = 0, w1 = 0, w2 = 0, w3 = 0, w4 = 0, w5 = 0;
    const int count = nbr_count[i];
    eam_for_each_neighbour<W>(FP_ROWS ? rows : pos4, nbr, i, count, stride,
                              [&](int j, real_t xj, real_t yj, real_t zj, W wj) {
        const int tj = FP_ROWS ? 0 : (int)wj;
        pair_t dx, dy, dz;
        const pair_t rsq = eam_separation(xi, yi, zi, xj, yj, zj, Lx, Ly, Lz, invLx, invLy, invLz, dx, dy, dz);
        if (rsq < cutsq) {
            const pair_t r = sqrt(rsq);
            pair_t p;
            const int m = eam_r_grid(nr, r, rdr, p);
            const int table_ij = FP_ROWS ? rho_table : __ldg(type2rhor + ti * n_types + tj);
            const int table_ji = FP_ROWS ? rho_table : __ldg(type2rhor + tj * n_types + ti);
            const pair_t rhoip = eam_slope(eam_row(rhor, table_ij, nr, m), p);
            pair_t rhojp = rhoip;                    // one element (or equal tables): the same value
            if (table_ji != table_ij) rhojp = eam_slope(eam_row(rhor, table_ji, nr, m), p);
            const pair_t* c = eam_row(z2r, FP_ROWS ? z2_table : __ldg(type2z2r + ti * n_types + tj), nr, m);
            const pair_t z2p = eam_slope(c, p);
            const pair_t z2 = eam_value(c, p);
            const pair_t recip = (pair_t)1.0 / r;
            const pair_t phi = z2 * recip;
            const pair_t phip = z2p * recip - phi * recip;
            const pair_t psip = fpi * rhojp + (FP_ROWS ? (pair_t)wj : (pair_t)fp[j]) * rhoip + phip;
            const pair_t fpair = -psip * recip;
            fx += (accum_t)(dx * fpair);
            fy += (accum_t)(dy * fpair);
            fz += (accum_t)(dz * fpair);
            if (WITH_ENERGY) {
                e += (accum_t)phi;
                w0 += (accum_t)(dx * dx * fpair); w1 += (accum_t)(dy * dy * fpair); w2 += (accum_t)(dz * dz * fpair);
                w3 += (accum_t)(dx * dy * fpair); w4 += (accum_t)(dx * dz * fpair); w5 += (accum_t)(dy * dz * fpair);
            }
        }
    });
    force[3 * (size_t)i + 0] = fx; force[3 * (size_t)i + 1] = fy; force[3 * (size_t)i + 2] = fz;
    if (WITH_ENERGY) {
        energy[i] += (accum_t)0.5 * e;
        accum_t* v = virial + 6 * (size_t)i;
        v[0] = (accum_t)0.5 * w0; v[1] = (accum_t)0.5 * w1; v[2] = (accum_t)0.5 * w2;
        v[3] = (accum_t)0.5 * w3; v[4] = (accum_t)0.5 * w4; v[5] = (accum_t)0.5 * w5;
    }
}

#define EAM_COMMON_ARGS                                                                                 \
    const int* __restrict__ control, const real_t* __restrict__ pos4, const int* __restrict__ nbr,      \
    const int* __restrict__ nbr_count, int n_local, int stride, int n_types, int nr, pair_t rdr,        \
    pair_t cutsq, real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz
#define EAM_COMMON_PASS \
    control, pos4, nbr, nbr_count, n_local, stride, n_types, nr, rdr, cutsq, Lx, Ly, Lz, invLx, invLy, invLz
#define EAM_DENSITY_ARGS EAM_COMMON_ARGS, int nrho, accum_t rdrho, accum_t rhomax,                   \
    const pair_t* __restrict__ rhor, const int* __restrict__ type2rhor, const pair_t* __restrict__ frho, \
    const int* __restrict__ type2frho, accum_t* __restrict__ fp, accum_t* __restrict__ energy
#define EAM_DENSITY_PASS EAM_COMMON_PASS, nrho, rdrho, rhomax, rhor, type2rhor, frho, type2frho, fp, energy
#define EAM_FORCES_ARGS EAM_COMMON_ARGS, const pair_t* __restrict__ rhor, const int* __restrict__ type2rhor, \
    const pair_t* __restrict__ z2r, const int* __restrict__ type2z2r, const accum_t* __restrict__ fp,          \
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial
#define EAM_FORCES_PASS EAM_COMMON_PASS, rhor, type2rhor, z2r, type2z2r, fp, force, energy, virial

extern "C" __global__ void eam_density(EAM_DENSITY_ARGS) { eam_density_body<0, 0>(EAM_DENSITY_PASS, nullptr); }
extern "C" __global__ void eam_density_energy(EAM_DENSITY_ARGS) { eam_density_body<1, 0>(EAM_DENSITY_PASS, nullptr); }
extern "C" __global__ void eam_forces(EAM_FORCES_ARGS) { eam_forces_body<0, 0>(EAM_FORCES_PASS, nullptr); }
extern "C" __global__ void eam_forces_energy(EAM_FORCES_ARGS) { eam_forces_body<1, 0>(EAM_FORCES_PASS, nullptr); }

// The same passes with pass 1's rows of (x, y, z, F'(rho)) (see eam_forces_body), compiled only where
// pycumd.eam_forces asks for them (PYCUMD_EAM_FP_ROWS=1).
#ifndef EAM_FP_ROWS
#define EAM_FP_ROWS 0
#endif
#if EAM_FP_ROWS
static_assert(sizeof(real_t) == sizeof(accum_t), "EAM_FP_ROWS: F'(rho) in the w of a real_t row");
extern "C" __global__ void eam_density_fp_rows(EAM_DENSITY_ARGS, real_t* __restrict__ rows) {
    eam_density_body<0, 1>(EAM_DENSITY_PASS, rows);
}
extern "C" __global__ void eam_density_energy_fp_rows(EAM_DENSITY_ARGS, real_t* __restrict__ rows) {
    eam_density_body<1, 1>(EAM_DENSITY_PASS, rows);
}
extern "C" __global__ void eam_forces_fp_rows(EAM_FORCES_ARGS, const real_t* __restrict__ rows) {
    eam_forces_body<0, 1>(EAM_FORCES_PASS, rows);
}
extern "C" __global__ void eam_forces_energy_fp_rows(EAM_FORCES_ARGS, const real_t* __restrict__ rows) {
    eam_forces_body<1, 1>(EAM_FORCES_PASS, rows);
}
#endif
