// The real-space part of a Coulomb sum between per-atom charges (twin of pycumd/long_range.py's Numba
// kernels: the same operations in the same order, so deterministic double precision differs only by the last
// bits of the libraries' erfc and exp).  KIND (potentials/coul_long.py's COULOMB_*): 0 the Ewald-split erfc
// term of LAMMPS' */coul/long (pa = g; compiled with COUL_MSM, MSM's split of */coul/msm, pa = 1/a), 1 the
// switched Coulomb of lj/charmm/coul/charmm, 2 that of lj/charmm/coul/charmm/implicit (pa = the squared inner
// cutoff, pb = (rc2 - pa)^3).
//
//   coul_long_pairs(_energy), coul_charmm_pairs(_energy), coul_charmm_implicit_pairs(_energy): one thread per
//                     target atom over its full neighbour list (column-major, nbr[k * stride + i]), in list order:
//                       KIND 0: E_ij = qqrd2e q_i q_j erfc(g r) / r,
//                               F/r  = qqrd2e q_i q_j (erfc(g r) / r + 2 g / sqrt(pi) exp(-g^2 r^2)) / r^2
//                               (COUL_MSM: E_ij = qqrd2e q_i q_j / r (1 - rho gamma(rho)),
//                               F/r = qqrd2e q_i q_j / r (1 + rho^2 gamma'(rho)) / r^2, rho = r/a);
//                       KIND 1: E_ij = qqrd2e q_i q_j / r S1, F/r = qqrd2e q_i q_j / r S1 / r^2 (LAMMPS' force:
//                               not -dE/dr between the cutoffs, which would add S2);
//                       KIND 2: E_ij = qqrd2e q_i q_j / r^2 S1, F/r = 2 qqrd2e q_i q_j / r^2 (S1 + S2 / 2) / r^2
//                               (S1 = 1, S2 = 0 inside the inner cutoff; potentials/charmm_switch.cuh);
//                     (r < r_cut_coul) added to the forces (and halves of E and r_ij (x) r_ij F/r to the energy and
//                     virial, E/2 also to coul_energy) that the pair kernel wrote
//   long_range_row_map: row_of[ids[i]] = i
//   coul_long_special: one thread per atom over its special partners (atom IDs, CSR by ID) with their
//                     coul factors f: KIND 0 the erfc (MSM) term less (1 - f) qqrd2e q_i q_j / r (LAMMPS'
//                     */coul/long, */coul/msm),
//                     KIND 1, 2: f times the switched term
//
// Positions: (N, 4) real_t rows x, y, z, type; charges (N,) double; forces (N, 3), energy (N,), virial
// (N, 6) accum_t; separations and the per-atom sums in double; KIND 0's erfc, exp (or MSM's polynomial), square
// root and quotients in pair_t (pycumd.precision: double in double precision, float in single and mixed, as the
// short-range pair terms), the CHARMM kinds' switching in double.
#include "potentials/charmm_switch.cuh"

#ifndef real_t
#define real_t double
#endif
#ifndef pair_t
#define pair_t double
#endif
#ifndef accum_t
#define accum_t double
#endif

#define TWO_OVER_SQRT_PI 1.1283791670955126   // 2 / sqrt(pi), LAMMPS' EWALD_F

// COUL_MSM=1: KIND 0 is the */coul/msm styles' instead (a module of its own; coul/long's kernels are unchanged):
// MSM's split 1/r - gamma(r/a)/a with pa = g = 1/a and gamma(rho) = sum_k c_k rho^(2k), k = 0..MSM_SPLIT
// (= order/2), the coefficients of LAMMPS' gcons (multilevel.split_coefficients), in pair_t as KIND 0's erfc
#ifndef COUL_MSM
#define COUL_MSM 0
#endif
#ifndef MSM_SPLIT
#define MSM_SPLIT 5
#endif
#if COUL_MSM
#if MSM_SPLIT == 2
__device__ __constant__ pair_t MSM_GCONS[3] = {15.0 / 8.0, -5.0 / 4.0, 3.0 / 8.0};
#elif MSM_SPLIT == 3
__device__ __constant__ pair_t MSM_GCONS[4] = {35.0 / 16.0, -35.0 / 16.0, 21.0 / 16.0, -5.0 / 16.0};
#elif MSM_SPLIT == 4
__device__ __constant__ pair_t MSM_GCONS[5] = {315.0 / 128.0, -105.0 / 32.0, 189.0 / 64.0, -45.0 / 32.0, 35.0 / 128.0};
#elif MSM_SPLIT == 5
__device__ __constant__ pair_t MSM_GCONS[6] = {693.0 / 256.0, -1155.0 / 256.0, 693.0 / 128.0, -495.0 / 128.0,
                                               385.0 / 256.0, -63.0 / 256.0};
#else
#error "MSM_SPLIT must be 2..5 (MSM orders 4, 6, 8, 10)"
#endif
#endif

struct CoulSums {
    double f[3];
    double e;
    double w[6];
};

__device__ __forceinline__ void coul_sums_zero(CoulSums& s) {
    s.f[0] = s.f[1] = s.f[2] = 0.0;
    s.e = 0.0;
    for (int q = 0; q < 6; ++q) s.w[q] = 0.0;
}

__device__ __forceinline__ double min_image(double d, double L, double invL) { return d - L * rint(d * invL); }

// r_i - r_j with the minimum image, in double, from atom i's coordinates and row j of pos4: the separation of
// every pass below.
__device__ __forceinline__ void separation_from(const real_t* __restrict__ pos4, int j, double xi, double yi,
                                                double zi, double Lx, double Ly, double Lz, double invLx,
                                                double invLy, double invLz, double& dx, double& dy, double& dz) {
    dx = min_image(xi - (double)pos4[4 * j], Lx, invLx);
    dy = min_image(yi - (double)pos4[4 * j + 1], Ly, invLy);
    dz = min_image(zi - (double)pos4[4 * j + 2], Lz, invLz);
}

// One pair (the Numba coulomb_pair and forces.full_pair): its E and F/r of kind KIND (special coul factor
// `factor`, 1 for a plain pair), added to s.
__device__ __forceinline__ void coul_pair_add(CoulSums& s, double dx, double dy, double dz, double qq, double factor,
                                              int kind, double rc2, double pa, double pb, int with_energy) {
    const double r2 = dx * dx + dy * dy + dz * dz;
    if (!(r2 < rc2)) return;
    double e, fr;
    if (kind == 0) {                             // the Ewald split (g = pa), less (1 - factor) qq / r
        const pair_t subtract = (pair_t)(1.0 - factor);
        const pair_t r2p = (pair_t)r2;
        const pair_t r = sqrt(r2p);
#if COUL_MSM
        const pair_t prefactor = (pair_t)qq / r;
        // MSM's split instead of erfc (pa = 1/a; the Numba coul_long_pair's gcons branch):
        // E = qq/r (1 - rho gamma(rho)), F/r = qq/r (1 + rho^2 gamma'(rho)) / r^2, rho = r/a
        const pair_t rho = (pair_t)pa * r;
        const pair_t rho2 = rho * rho;
        pair_t power = rho, e_sum = (pair_t)0, f_sum = (pair_t)0;   // rho^(2k+1), rho gamma, rho^2 gamma'
#pragma unroll
        for (int k = 0; k <= MSM_SPLIT; ++k) {
            e_sum += MSM_GCONS[k] * power;
            f_sum += (pair_t)(2 * k) * MSM_GCONS[k] * power;
            power *= rho2;
        }
        e = (double)(prefactor * ((pair_t)1 - e_sum - subtract));
        fr = (double)(prefactor * ((pair_t)1 + f_sum - subtract) / r2p);
#else
        const pair_t gr = (pair_t)pa * r;
        const pair_t erfc_gr = erfc(gr);
        const pair_t prefactor = (pair_t)qq / r;
        e = (double)(prefactor * (erfc_gr - subtract));
        fr = (double)(prefactor * (erfc_gr + (pair_t)TWO_OVER_SQRT_PI * gr * exp(-gr * gr) - subtract) / r2p);
#endif
    } else {                                     // CHARMM switching (inner2 = pa, denom = pb)
        const double r2inv = 1.0 / r2;
        double force;
        if (kind == 2) {
            e = qq * r2inv;
            force = 2.0 * e;
        } else {
            e = qq * sqrt(r2inv);
            force = e;
        }
        if (r2 > pa) {
            double switch1, switch2;
            charmm_switch(r2, rc2, pa, pb, switch1, switch2);
            if (kind == 2) force *= switch1 + 0.5 * switch2;
            else force *= switch1;                     // as LAMMPS: not -dE/dr between the cutoffs
            e *= switch1;
        }
        e = factor * e;
        fr = factor * force * r2inv;
    }
    s.f[0] += dx * fr;
    s.f[1] += dy * fr;
    s.f[2] += dz * fr;
    if (with_energy) {
        s.e += e;
        s.w[0] += dx * dx * fr;
        s.w[1] += dy * dy * fr;
        s.w[2] += dz * dz * fr;
        s.w[3] += dx * dy * fr;
        s.w[4] += dx * dz * fr;
        s.w[5] += dy * dz * fr;
    }
}

__device__ __forceinline__ void coul_store(const CoulSums& s, int i, accum_t* __restrict__ force,
                                           accum_t* __restrict__ energy, accum_t* __restrict__ virial,
                                           double* __restrict__ coul_energy, int with_energy) {
    force[3 * i + 0] += (accum_t)s.f[0];
    force[3 * i + 1] += (accum_t)s.f[1];
    force[3 * i + 2] += (accum_t)s.f[2];
    if (with_energy) {
        const double e = 0.5 * s.e;
        energy[i] += (accum_t)e;
        coul_energy[i] += e;
        for (int q = 0; q < 6; ++q) virial[6 * i + q] += (accum_t)(0.5 * s.w[q]);
    }
}

template <int WITH_ENERGY, int KIND>
__device__ __forceinline__ void coul_long_pairs_body(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const double* __restrict__ charges,
    const int* __restrict__ nbr, const int* __restrict__ nbr_count, int n, int stride,
    double Lx, double Ly, double Lz, double invLx, double invLy, double invLz, double qqrd2e, double rc2, double pa,
    double pb, accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    double* __restrict__ coul_energy)
{
    if (control[0]) return;                     // control[0]: the step block is frozen (see step_graph.py)
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double xi = (double)pos4[4 * i], yi = (double)pos4[4 * i + 1], zi = (double)pos4[4 * i + 2];
    const double qi = qqrd2e * charges[i];
    CoulSums s;
    coul_sums_zero(s);
    const int count = nbr_count[i];
    for (int k = 0; k < count; ++k) {
        const int j = nbr[(size_t)k * stride + i];
        double dx, dy, dz;
        separation_from(pos4, j, xi, yi, zi, Lx, Ly, Lz, invLx, invLy, invLz, dx, dy, dz);
        coul_pair_add(s, dx, dy, dz, qi * charges[j], 1.0, KIND, rc2, pa, pb, WITH_ENERGY);
    }
    coul_store(s, i, force, energy, virial, coul_energy, WITH_ENERGY);
}

#define COUL_PAIRS_ARGS                                                                                     \
    const int* __restrict__ control, const real_t* __restrict__ pos4, const double* __restrict__ charges,   \
    const int* __restrict__ nbr, const int* __restrict__ nbr_count, int n, int stride, double Lx, double Ly, \
    double Lz, double invLx, double invLy, double invLz, double qqrd2e, double rc2, double pa, double pb,  \
    accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,                \
    double* __restrict__ coul_energy
#define COUL_PAIRS_PASS                                                                                   \
    control, pos4, charges, nbr, nbr_count, n, stride, Lx, Ly, Lz, invLx, invLy, invLz, qqrd2e, rc2, pa, pb, force, \
    energy, virial, coul_energy

extern "C" __global__ void coul_long_pairs(COUL_PAIRS_ARGS) { coul_long_pairs_body<0, 0>(COUL_PAIRS_PASS); }
extern "C" __global__ void coul_long_pairs_energy(COUL_PAIRS_ARGS) { coul_long_pairs_body<1, 0>(COUL_PAIRS_PASS); }
extern "C" __global__ void coul_charmm_pairs(COUL_PAIRS_ARGS) { coul_long_pairs_body<0, 1>(COUL_PAIRS_PASS); }
extern "C" __global__ void coul_charmm_pairs_energy(COUL_PAIRS_ARGS) { coul_long_pairs_body<1, 1>(COUL_PAIRS_PASS); }
extern "C" __global__ void coul_charmm_implicit_pairs(COUL_PAIRS_ARGS) { coul_long_pairs_body<0, 2>(COUL_PAIRS_PASS); }
extern "C" __global__ void coul_charmm_implicit_pairs_energy(COUL_PAIRS_ARGS) {
    coul_long_pairs_body<1, 2>(COUL_PAIRS_PASS);
}

extern "C" __global__ void long_range_row_map(const long long* __restrict__ ids, int* __restrict__ row_of, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row_of[ids[i]] = i;
}

extern "C" __global__ void coul_long_special(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const double* __restrict__ charges,
    const long long* __restrict__ ids, const int* __restrict__ row_of, const long long* __restrict__ start,
    const long long* __restrict__ partners, const double* __restrict__ factors, int n,
    double Lx, double Ly, double Lz, double invLx, double invLy, double invLz, double qqrd2e, double rc2, double pa,
    double pb, accum_t* __restrict__ force, accum_t* __restrict__ energy, accum_t* __restrict__ virial,
    double* __restrict__ coul_energy, int kind, int with_energy)
{
    if (control[0]) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long a = ids[i];
    const long long lo = start[a], hi = start[a + 1];
    if (lo == hi) return;
    const double xi = (double)pos4[4 * i], yi = (double)pos4[4 * i + 1], zi = (double)pos4[4 * i + 2];
    const double qi = qqrd2e * charges[i];
    CoulSums s;
    coul_sums_zero(s);
    for (long long q = lo; q < hi; ++q) {
        const int j = row_of[partners[q]];
        double dx, dy, dz;
        separation_from(pos4, j, xi, yi, zi, Lx, Ly, Lz, invLx, invLy, invLz, dx, dy, dz);
        coul_pair_add(s, dx, dy, dz, qi * charges[j], factors[q], kind, rc2, pa, pb, with_energy);
    }
    coul_store(s, i, force, energy, virial, coul_energy, with_energy);
}

// The weighted 1-4 pairs of dihedral_style charmm (LAMMPS DihedralCharmm::compute; one entry per dihedral of
// weight w > 0, both ends, no cutoff): w (LJ14 + qqrd2e q_i q_j / r), with implicit (lj/charmm/coul/charmm/implicit)
// w (LJ14 + qqrd2e q_i q_j / r^2) with LAMMPS' force w qqrd2e q_i q_j / r^2 / r^2 along r (not -dE/dr: as LAMMPS'
// DihedralCharmm); one thread per atom over its entries;
// lj14 rows (n_types * n_types, 4): 48 eps14 s14^12, 24 eps14 s14^6, 4 eps14 s14^12, 4 eps14 s14^6.  Their
// energies are pair energies (LAMMPS tallies them so); the Coulomb part also into coul_energy.
extern "C" __global__ void charmm_weighted_14(
    const int* __restrict__ control, const real_t* __restrict__ pos4, const double* __restrict__ charges,
    const int* __restrict__ types, const long long* __restrict__ ids, const int* __restrict__ row_of,
    const long long* __restrict__ start, const long long* __restrict__ partners, const double* __restrict__ weights,
    const double* __restrict__ lj14, int n_types, int n, double Lx, double Ly, double Lz, double invLx,
    double invLy, double invLz, double qqrd2e, accum_t* __restrict__ force, accum_t* __restrict__ energy,
    accum_t* __restrict__ virial, double* __restrict__ coul_energy, int implicit, int with_energy)
{
    if (control[0]) return;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long a = ids[i];
    const long long lo = start[a], hi = start[a + 1];
    if (lo == hi) return;
    const double xi = (double)pos4[4 * i], yi = (double)pos4[4 * i + 1], zi = (double)pos4[4 * i + 2];
    const double qi = qqrd2e * charges[i];
    CoulSums s;
    coul_sums_zero(s);
    double ec = 0.0;
    for (long long q = lo; q < hi; ++q) {
        const int j = row_of[partners[q]];
        double dx, dy, dz;
        separation_from(pos4, j, xi, yi, zi, Lx, Ly, Lz, invLx, invLy, invLz, dx, dy, dz);
        const double r2inv = 1.0 / (dx * dx + dy * dy + dz * dz);
        const double r6inv = r2inv * r2inv * r2inv;
        const double* row = lj14 + 4 * ((size_t)types[i] * n_types + types[j]);
        const double w = weights[q];
        const double force_coul = implicit ? qi * charges[j] * r2inv : qi * charges[j] * sqrt(r2inv);
        const double force_lj = r6inv * (row[0] * r6inv - row[1]);
        const double fr = w * (force_lj + force_coul) * r2inv;
        const double e_coul = w * force_coul;
        const double e_lj = w * (r6inv * (row[2] * r6inv - row[3]));
        s.f[0] += dx * fr;
        s.f[1] += dy * fr;
        s.f[2] += dz * fr;
        if (with_energy) {
            s.e += e_lj + e_coul;
            ec += e_coul;
            s.w[0] += dx * dx * fr;
            s.w[1] += dy * dy * fr;
            s.w[2] += dz * dz * fr;
            s.w[3] += dx * dy * fr;
            s.w[4] += dx * dz * fr;
            s.w[5] += dy * dz * fr;
        }
    }
    force[3 * i + 0] += (accum_t)s.f[0];
    force[3 * i + 1] += (accum_t)s.f[1];
    force[3 * i + 2] += (accum_t)s.f[2];
    if (with_energy) {
        energy[i] += (accum_t)(0.5 * s.e);
        coul_energy[i] += 0.5 * ec;
        for (int c = 0; c < 6; ++c) virial[6 * i + c] += (accum_t)(0.5 * s.w[c]);
    }
}
