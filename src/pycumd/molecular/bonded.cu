// Bonded terms in a fixed summation order (twin of pycumd/molecular/bonded.py's Numba kernels; the
// geometry and the order of every operation as there, so deterministic double precision gives the
// CPU's bits where the style functions are arithmetic and sqrt).
//
//   bonded_row_map:   row_of[ids[i]] = i (the rows move at neighbour builds, the IDs do not)
//   bonded_terms:     one thread per term of the kind TERM_KIND (0 bond, 1 angle, 2 dihedral,
//                     3 improper) with the style function of STYLE_HEADER; the term's force on each of
//                     its atoms to its own slots of contrib, its energy and virial to its own row
//   special_pair_terms (TERM_KIND 4): the scaled special pairs, factor x the pair potential
//   bonded_gather:    one thread per atom row: its slots summed in the gather list's order, added to
//                     the pair force (and energy, virial shares) already in the state's arrays
//   exclude_special_pairs: drop excluded special partners from a column-major neighbour list (in place,
//                     order kept; idempotent)
//
// Positions: (N, 4) real_t rows x, y, z, type; forces (N, 3), energy (N,), virial (N, 6) accum_t.
// All term arithmetic in double.
#ifndef real_t
#define real_t double
#endif
#ifndef accum_t
#define accum_t double
#endif
#ifndef TERM_KIND
#define TERM_KIND 0
#endif
#ifndef STYLE_HEADER
#define STYLE_HEADER "molecular/styles/bond_harmonic.cuh"
#endif
#include STYLE_HEADER

__device__ __forceinline__ double min_image(double d, double L) {
    return d - L * rint(d * (1.0 / L));
}

struct Vec3 { double x, y, z; };

__device__ __forceinline__ Vec3 delta(const real_t* pos, int i, int j, double Lx, double Ly, double Lz) {
    Vec3 d;
    d.x = min_image((double)pos[4 * i] - (double)pos[4 * j], Lx);
    d.y = min_image((double)pos[4 * i + 1] - (double)pos[4 * j + 1], Ly);
    d.z = min_image((double)pos[4 * i + 2] - (double)pos[4 * j + 2], Lz);
    return d;
}

__device__ __forceinline__ void put(double* contrib, long long s, double x, double y, double z) {
    contrib[3 * s] = x;
    contrib[3 * s + 1] = y;
    contrib[3 * s + 2] = z;
}

extern "C" __global__ void bonded_row_map(const long long* ids, int* row_of, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row_of[ids[i]] = i;
}

#if TERM_KIND <= 3
#define KIND_ATOMS (TERM_KIND == 0 ? 2 : TERM_KIND == 1 ? 3 : 4)

// The terms which[0..n_terms-1] (all on one rank; over spatial domains those with an owned atom).
extern "C" __global__ void bonded_terms(const real_t* pos, const int* row_of, const long long* atoms,
                                        const long long* which, const int* types,
                                        const double* table, int width, int n_terms, double Lx, double Ly, double Lz,
                                        long long slot0, long long term0, double* contrib, double* energy,
                                        double* virial, int* errors, int with_energy) {
    const int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= n_terms) return;
    const int t = (int)which[u];
    const double* row = table + (long long)types[t] * width;
    const long long* a = atoms + (long long)t * KIND_ATOMS;
    double e, w[6];
#if TERM_KIND == 0
    int i = row_of[a[0]], j = row_of[a[1]];
    Vec3 d = delta(pos, i, j, Lx, Ly, Lz);
    double fbond;
    int err;
    bond_style(d.x * d.x + d.y * d.y + d.z * d.z, row, e, fbond, err);
    errors[term0 + t] = err;
    long long s = slot0 + 2LL * t;
    put(contrib, s, d.x * fbond, d.y * fbond, d.z * fbond);
    put(contrib, s + 1, -(d.x * fbond), -(d.y * fbond), -(d.z * fbond));
    w[0] = d.x * d.x * fbond; w[1] = d.y * d.y * fbond; w[2] = d.z * d.z * fbond;
    w[3] = d.x * d.y * fbond; w[4] = d.x * d.z * fbond; w[5] = d.y * d.z * fbond;
#elif TERM_KIND == 1
    int i0 = row_of[a[0]], i1 = row_of[a[1]], i2 = row_of[a[2]];
    Vec3 d1 = delta(pos, i0, i1, Lx, Ly, Lz);
    Vec3 d2 = delta(pos, i2, i1, Lx, Ly, Lz);
    double rsq1 = d1.x * d1.x + d1.y * d1.y + d1.z * d1.z;
    double rsq2 = d2.x * d2.x + d2.y * d2.y + d2.z * d2.z;
    double r1 = sqrt(rsq1), r2 = sqrt(rsq2);
    double c = (d1.x * d2.x + d1.y * d2.y + d1.z * d2.z) / (r1 * r2);
    c = fmin(fmax(c, -1.0), 1.0);
    double ux = d2.x - d1.x, uy = d2.y - d1.y, uz = d2.z - d1.z;
    double dedc, fub;
    angle_style(c, ux * ux + uy * uy + uz * uz, row, e, dedc, fub);
    errors[term0 + t] = 0;
    double a11 = dedc * c / rsq1, a12 = -dedc / (r1 * r2), a22 = dedc * c / rsq2;
    double f1x = a11 * d1.x + a12 * d2.x - ux * fub;
    double f1y = a11 * d1.y + a12 * d2.y - uy * fub;
    double f1z = a11 * d1.z + a12 * d2.z - uz * fub;
    double f3x = a22 * d2.x + a12 * d1.x + ux * fub;
    double f3y = a22 * d2.y + a12 * d1.y + uy * fub;
    double f3z = a22 * d2.z + a12 * d1.z + uz * fub;
    long long s = slot0 + 3LL * t;
    put(contrib, s, f1x, f1y, f1z);
    put(contrib, s + 1, -f1x - f3x, -f1y - f3y, -f1z - f3z);
    put(contrib, s + 2, f3x, f3y, f3z);
    w[0] = d1.x * f1x + d2.x * f3x; w[1] = d1.y * f1y + d2.y * f3y; w[2] = d1.z * f1z + d2.z * f3z;
    w[3] = d1.x * f1y + d2.x * f3y; w[4] = d1.x * f1z + d2.x * f3z; w[5] = d1.y * f1z + d2.y * f3z;
#else
    int i0 = row_of[a[0]], i1 = row_of[a[1]], i2 = row_of[a[2]], i3 = row_of[a[3]];
    Vec3 b1 = delta(pos, i1, i0, Lx, Ly, Lz);
    Vec3 b2 = delta(pos, i2, i1, Lx, Ly, Lz);
    Vec3 b3 = delta(pos, i3, i2, Lx, Ly, Lz);
    double mx = b1.y * b2.z - b1.z * b2.y, my = b1.z * b2.x - b1.x * b2.z, mz = b1.x * b2.y - b1.y * b2.x;
    double nx = b2.y * b3.z - b2.z * b3.y, ny = b2.z * b3.x - b2.x * b3.z, nz = b2.x * b3.y - b2.y * b3.x;
    double m2 = mx * mx + my * my + mz * mz;
    double n2 = nx * nx + ny * ny + nz * nz;
    double b2sq = b2.x * b2.x + b2.y * b2.y + b2.z * b2.z;
    double b2len = sqrt(b2sq);
    double phi = atan2(b2len * (b1.x * nx + b1.y * ny + b1.z * nz), mx * nx + my * ny + mz * nz);
    double dedphi;
#if TERM_KIND == 2
    dihedral_style(phi, row, e, dedphi);
#else
    improper_style(phi, row, e, dedphi);
#endif
    errors[term0 + t] = 0;
    if (m2 < 1e-300 || n2 < 1e-300 || b2sq < 1e-300) {
        dedphi = 0.0;
        m2 = n2 = b2sq = 1.0;
    }
    double g1 = dedphi * b2len / m2;
    double g4 = -dedphi * b2len / n2;
    double f1x = g1 * mx, f1y = g1 * my, f1z = g1 * mz;
    double f4x = g4 * nx, f4y = g4 * ny, f4z = g4 * nz;
    double p = (b1.x * b2.x + b1.y * b2.y + b1.z * b2.z) / b2sq;
    double q = (b3.x * b2.x + b3.y * b2.y + b3.z * b2.z) / b2sq;
    double f2x = -f1x - p * f1x + q * f4x, f2y = -f1y - p * f1y + q * f4y, f2z = -f1z - p * f1z + q * f4z;
    double f3x = -f1x - f2x - f4x, f3y = -f1y - f2y - f4y, f3z = -f1z - f2z - f4z;
    long long s = slot0 + 4LL * t;
    put(contrib, s, f1x, f1y, f1z);
    put(contrib, s + 1, f2x, f2y, f2z);
    put(contrib, s + 2, f3x, f3y, f3z);
    put(contrib, s + 3, f4x, f4y, f4z);
    double r2x = b1.x + b2.x, r2y = b1.y + b2.y, r2z = b1.z + b2.z;
    double r3x = r2x + b3.x, r3y = r2y + b3.y, r3z = r2z + b3.z;
    w[0] = b1.x * f2x + r2x * f3x + r3x * f4x;
    w[1] = b1.y * f2y + r2y * f3y + r3y * f4y;
    w[2] = b1.z * f2z + r2z * f3z + r3z * f4z;
    w[3] = b1.x * f2y + r2x * f3y + r3x * f4y;
    w[4] = b1.x * f2z + r2x * f3z + r3x * f4z;
    w[5] = b1.y * f2z + r2y * f3z + r3y * f4z;
#endif
    if (with_energy) {
        energy[term0 + t] = e;
        for (int k = 0; k < 6; ++k) virial[6 * (term0 + t) + k] = w[k];
    }
}

#endif  // TERM_KIND <= 3

#if TERM_KIND == 4
// The scaled special pairs: each once, factor x the pair potential with its cutoff treatment (zero beyond
// the cutoff; pair_sums.cuh's pair_energy_force in pair_t arithmetic), as a bond of F/r = factor (F/r).
#include "pair_sums.cuh"

extern "C" __global__ void special_pair_terms(const real_t* pos, const int* row_of, const long long* atoms,
                                              const long long* which, const double* factors, const int* types,
                                              const pair_t* table, int n_types,
                                              int n_terms, double Lx, double Ly, double Lz, long long slot0,
                                              long long term0, double* contrib, double* energy, double* virial,
                                              int with_energy) {
    const int u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= n_terms) return;
    const int t = (int)which[u];
    int i = row_of[atoms[2 * t]], j = row_of[atoms[2 * t + 1]];
    Vec3 d = delta(pos, i, j, Lx, Ly, Lz);
    double r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    const pair_t* row = table + ((long long)types[i] * n_types + types[j]) * PAIR_TABLE_COLUMNS;
    double e = 0.0, fr = 0.0;
    pair_t ep, fp;
    if (pair_energy_force((pair_t)r2, row, ep, fp)) {
        e = (double)ep * factors[t];
        fr = (double)fp * factors[t];
    }
    long long s = slot0 + 2LL * t;
    put(contrib, s, d.x * fr, d.y * fr, d.z * fr);
    put(contrib, s + 1, -(d.x * fr), -(d.y * fr), -(d.z * fr));
    if (with_energy) {
        energy[term0 + t] = e;
        double w[6] = {d.x * d.x * fr, d.y * d.y * fr, d.z * d.z * fr, d.x * d.y * fr, d.x * d.z * fr, d.y * d.z * fr};
        for (int k = 0; k < 6; ++k) virial[6 * (term0 + t) + k] = w[k];
    }
}
#endif

extern "C" __global__ void bonded_gather(const long long* ids, const long long* start, const int* slot, const int* term,
                                         const double* share, const double* contrib, const double* term_energy,
                                         const double* term_virial, accum_t* forces, accum_t* energy, accum_t* virial,
                                         int n, int with_energy) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long a = ids[i];
    double fx = 0.0, fy = 0.0, fz = 0.0, e = 0.0, w[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (long long q = start[a]; q < start[a + 1]; ++q) {
        long long s = slot[q];
        fx += contrib[3 * s];
        fy += contrib[3 * s + 1];
        fz += contrib[3 * s + 2];
        if (with_energy) {
            long long t = term[q];
            double h = share[q];
            e += term_energy[t] * h;
            for (int k = 0; k < 6; ++k) w[k] += term_virial[6 * t + k] * h;
        }
    }
    // the pair force already there plus the bonded sum, as the CPU's forces[i] += sum
    forces[3 * i] = (accum_t)((double)forces[3 * i] + fx);
    forces[3 * i + 1] = (accum_t)((double)forces[3 * i + 1] + fy);
    forces[3 * i + 2] = (accum_t)((double)forces[3 * i + 2] + fz);
    if (with_energy) {
        energy[i] = (accum_t)((double)energy[i] + e);
        for (int k = 0; k < 6; ++k) virial[6 * i + k] = (accum_t)((double)virial[6 * i + k] + w[k]);
    }
}

extern "C" __global__ void exclude_special_pairs(int* nbr, int* nbr_count, const long long* ids, const long long* start,
                                                 const long long* partners, const int* types, const int* type_excluded,
                                                 int n_types, const long long* molecule, int molecule_rule, int rules,
                                                 int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long a = ids[i];
    long long lo = start[a], hi = start[a + 1];
    if (lo == hi && !rules) return;
    int count = nbr_count[i], keep = 0;
    int ti = types[i];
    for (int k = 0; k < count; ++k) {
        int j = nbr[(long long)k * n + i];
        long long b = ids[j];
        bool excluded = false;
        for (long long q = lo; q < hi; ++q) {
            if (partners[q] == b) { excluded = true; break; }
        }
        if (rules && !excluded) {     // neigh_modify exclude type I J, molecule/intra, molecule/inter
            excluded = type_excluded[ti * n_types + types[j]] != 0 || (molecule_rule == 1 && molecule[a] == molecule[b])
                       || (molecule_rule == 2 && molecule[a] != molecule[b]);
        }
        if (excluded) continue;
        nbr[(long long)keep * n + i] = j;
        ++keep;
    }
    nbr_count[i] = keep;
}
