// fix shake and fix rattle on the GPU (twin of pycumd/integrators/shake.py's Numba kernels: the same
// operations in the same order, so deterministic double precision gives the CPU's bits).
//
//   shake_row_map:        row_of[ids[i]] = i (the rows move at neighbour builds, the IDs do not)
//   shake_<kind>:         one thread per cluster of the kind (shake2, shake3, shake4, shake3angle): the
//                         unconstrained positions one step ahead x + dtv v + dtfsq f / m, the Lagrange
//                         multipliers (shake2: the root of the quadratic; else LAMMPS' iteration with the
//                         cofactor inverse of the linearised matrix and the quadratic terms), the
//                         constraint forces added to f, the cluster's virial (6) and status
//   rattle_<kind>:        one thread per cluster: RATTLE's velocity constraints on v + dtfv f / m
//
// Each atom belongs to one cluster: a thread writes only its own atoms' rows (no atomics).
// Positions: (N, pos_stride) real_t rows; velocities (N, 3) real_t; forces (N, f_stride) accum_t;
// per-atom mass (N,) real_t; cluster atoms (n, atoms) int64 IDs; lengths (n, constraints) double.
// Status: 0 ok, 1 not converged, 2 diverged (|lambda| > 1e150), 3 singular matrix, 4 negative
// determinant of shake2's quadratic (solved with 0, as LAMMPS).
#ifndef real_t
#define real_t double
#endif
#ifndef accum_t
#define accum_t double
#endif

#define SHAKE_OK 0
#define SHAKE_NOT_CONVERGED 1
#define SHAKE_DIVERGED 2
#define SHAKE_SINGULAR 3
#define SHAKE_NEGATIVE_DETERMINANT 4

extern "C" __global__ void shake_row_map(const long long* __restrict__ ids, int* __restrict__ row_of, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) row_of[ids[i]] = i;
}

__device__ __forceinline__ double shake_image(double d, double L) {
    return d - L * rint(d * (1.0 / L));
}

// the constraints of kind K (0 shake2, 1 shake3, 2 shake4, 3 shake3angle) as (p, q) positions in the
// cluster, SHAKE's orientation r = x_p - x_q; RATTLE swaps them
template <int K> struct ShakeKind;
template <> struct ShakeKind<0> { static constexpr int NA = 2, NC = 1; };
template <> struct ShakeKind<1> { static constexpr int NA = 3, NC = 2; };
template <> struct ShakeKind<2> { static constexpr int NA = 4, NC = 3; };
template <> struct ShakeKind<3> { static constexpr int NA = 3, NC = 3; };

template <int K>
__device__ __forceinline__ void shake_pair(int c, int& p, int& q) {
    if (K == 3 && c == 2) { p = 1; q = 2; return; }
    p = 0;
    q = c + 1;
}

__device__ __forceinline__ double dot3(const double* a, const double* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

template <int NC>
__device__ __forceinline__ double coef_of(const int* P, const int* Q, int c, int d, const double* im) {
    double v = 0.0;
    if (P[c] == P[d]) v += im[P[c]];
    if (P[c] == Q[d]) v -= im[P[c]];
    if (Q[c] == P[d]) v -= im[Q[c]];
    if (Q[c] == Q[d]) v += im[Q[c]];
    return v;
}

// cofactor inverse of a (nc 2 or 3), as LAMMPS; returns the determinant (0: ai not written)
template <int NC>
__device__ __forceinline__ double inverse(const double (*a)[3], double (*ai)[3]) {
    if (NC == 2) {
        double det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
        if (det == 0.0) return det;
        double di = 1.0 / det;
        ai[0][0] = a[1][1] * di;
        ai[0][1] = -a[0][1] * di;
        ai[1][0] = -a[1][0] * di;
        ai[1][1] = a[0][0] * di;
        return det;
    }
    double det = a[0][0] * a[1][1] * a[2][2] + a[0][1] * a[1][2] * a[2][0] + a[0][2] * a[1][0] * a[2][1]
               - a[0][0] * a[1][2] * a[2][1] - a[0][1] * a[1][0] * a[2][2] - a[0][2] * a[1][1] * a[2][0];
    if (det == 0.0) return det;
    double di = 1.0 / det;
    ai[0][0] = di * (a[1][1] * a[2][2] - a[1][2] * a[2][1]);
    ai[0][1] = -di * (a[0][1] * a[2][2] - a[0][2] * a[2][1]);
    ai[0][2] = di * (a[0][1] * a[1][2] - a[0][2] * a[1][1]);
    ai[1][0] = -di * (a[1][0] * a[2][2] - a[1][2] * a[2][0]);
    ai[1][1] = di * (a[0][0] * a[2][2] - a[0][2] * a[2][0]);
    ai[1][2] = -di * (a[0][0] * a[1][2] - a[0][2] * a[1][0]);
    ai[2][0] = di * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    ai[2][1] = -di * (a[0][0] * a[2][1] - a[0][1] * a[2][0]);
    ai[2][2] = di * (a[0][0] * a[1][1] - a[0][1] * a[1][0]);
    return det;
}

template <int K>
__device__ void shake_cluster(const real_t* __restrict__ x, int pos_stride, const real_t* __restrict__ v,
                              accum_t* __restrict__ f, int f_stride, const real_t* __restrict__ mass,
                              const int* __restrict__ row_of, const long long* __restrict__ atoms,
                              const double* __restrict__ lengths, int n, double Lx, double Ly, double Lz,
                              double dtv, double dtfsq, double tol, int max_iter, double* __restrict__ virial,
                              int* __restrict__ status) {
    constexpr int NA = ShakeKind<K>::NA, NC = ShakeKind<K>::NC;
    constexpr int NCROSS = NC == 2 ? 1 : 3;
    const int cross[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n) return;
    const double L[3] = {Lx, Ly, Lz};
    int P[NC], Q[NC];
    for (int c = 0; c < NC; c++) shake_pair<K>(c, P[c], Q[c]);
    int row[NA];
    double im[NA], xs[NA][3];
    for (int k = 0; k < NA; k++) {
        int i = row_of[atoms[(long long)m * NA + k]];
        row[k] = i;
        double mi = (double)mass[i];
        im[k] = 1.0 / mi;
        double dtfmsq = dtfsq / mi;
        for (int d = 0; d < 3; d++)
            xs[k][d] = (double)x[(long long)i * pos_stride + d] + dtv * (double)v[3LL * i + d]
                       + dtfmsq * (double)f[(long long)i * f_stride + d];
    }
    double r[NC][3], s[NC][3];
    for (int c = 0; c < NC; c++) {
        int ip = row[P[c]], iq = row[Q[c]];
        for (int d = 0; d < 3; d++) {
            r[c][d] = shake_image((double)x[(long long)ip * pos_stride + d] - (double)x[(long long)iq * pos_stride + d], L[d]);
            s[c][d] = shake_image(xs[P[c]][d] - xs[Q[c]][d], L[d]);
        }
    }
    int st = SHAKE_OK;
    double lam[3] = {0.0, 0.0, 0.0};
    if (NC == 1) {           // shake2: the exact root of the quadratic
        double r01sq = dot3(r[0], r[0]);
        double s01sq = dot3(s[0], s[0]);
        double mm = im[0] + im[1];
        double qa = mm * mm * r01sq;
        double qb = 2.0 * mm * dot3(s[0], r[0]);
        double len = lengths[m];
        double qc = s01sq - len * len;
        double det = qb * qb - 4.0 * qa * qc;
        if (det < 0.0) {
            st = SHAKE_NEGATIVE_DETERMINANT;
            det = 0.0;
        }
        double l1 = (-qb + sqrt(det)) / (2.0 * qa);
        double l2 = (-qb - sqrt(det)) / (2.0 * qa);
        lam[0] = fabs(l1) <= fabs(l2) ? l1 : l2;
    } else {
        double coef[3][3], a[3][3], ai[3][3], qd[3][3], qx[3][3];
        for (int c = 0; c < NC; c++)
            for (int d = 0; d < NC; d++) coef[c][d] = coef_of<NC>(P, Q, c, d, im);
        for (int c = 0; c < NC; c++)
            for (int d = 0; d < NC; d++) a[c][d] = 2.0 * coef[c][d] * dot3(s[c], r[d]);
        if (inverse<NC>(a, ai) == 0.0) {
            status[m] = SHAKE_SINGULAR;
            return;
        }
        for (int c = 0; c < NC; c++) {
            for (int d = 0; d < NC; d++) qd[c][d] = coef[c][d] * coef[c][d] * dot3(r[d], r[d]);
            for (int k = 0; k < NCROSS; k++) {
                int d = cross[k][0], e = cross[k][1];
                qx[c][k] = 2.0 * coef[c][d] * coef[c][e] * dot3(r[d], r[e]);
            }
        }
        double ssq[3], b[3], lnew[3];
        for (int c = 0; c < NC; c++) ssq[c] = dot3(s[c], s[c]);
        int niter = 0;
        bool done = false;
        while (!done && niter < max_iter) {
            for (int c = 0; c < NC; c++) {
                double quad = qd[c][0] * lam[0] * lam[0];
                for (int d = 1; d < NC; d++) quad += qd[c][d] * lam[d] * lam[d];
                for (int k = 0; k < NCROSS; k++) quad += qx[c][k] * lam[cross[k][0]] * lam[cross[k][1]];
                double len = lengths[(long long)m * NC + c];
                b[c] = len * len - ssq[c] - quad;
            }
            for (int c = 0; c < NC; c++) {
                double acc = ai[c][0] * b[0];
                for (int d = 1; d < NC; d++) acc += ai[c][d] * b[d];
                lnew[c] = acc;
            }
            done = true;
            for (int c = 0; c < NC; c++) {
                if (fabs(lnew[c] - lam[c]) > tol) done = false;
                lam[c] = lnew[c];
            }
            for (int c = 0; c < NC; c++)
                if (fabs(lam[c]) > 1e150) {
                    done = true;
                    st = SHAKE_DIVERGED;
                }
            niter++;
        }
        if (!done) st = SHAKE_NOT_CONVERGED;
    }
    status[m] = st;
    for (int c = 0; c < NC; c++) lam[c] = lam[c] / dtfsq;
    for (int k = 0; k < NA; k++) {
        long long i = row[k];
        for (int d = 0; d < 3; d++) {
            double acc = 0.0;
            for (int c = 0; c < NC; c++) {
                if (P[c] == k) acc += lam[c] * r[c][d];
                else if (Q[c] == k) acc -= lam[c] * r[c][d];
            }
            f[i * f_stride + d] = (accum_t)((double)f[i * f_stride + d] + acc);
        }
    }
    const int axes[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
    for (int j = 0; j < 6; j++) {
        int p = axes[j][0], q = axes[j][1];
        double acc = lam[0] * r[0][p] * r[0][q];
        for (int c = 1; c < NC; c++) acc += lam[c] * r[c][p] * r[c][q];
        virial[(long long)m * 6 + j] = acc;
    }
}

template <int K>
__device__ void rattle_cluster(const real_t* __restrict__ x, int pos_stride, real_t* __restrict__ v,
                               const accum_t* __restrict__ f, const real_t* __restrict__ mass,
                               const int* __restrict__ row_of, const long long* __restrict__ atoms, int n,
                               double Lx, double Ly, double Lz, double dtfv, int* __restrict__ status) {
    constexpr int NA = ShakeKind<K>::NA, NC = ShakeKind<K>::NC;
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n) return;
    const double L[3] = {Lx, Ly, Lz};
    int P[NC], Q[NC];
    for (int c = 0; c < NC; c++) shake_pair<K>(c, Q[c], P[c]);      // RATTLE: r = x_q - x_p of SHAKE's pair
    int row[NA];
    double im[NA], vp[NA][3];
    for (int k = 0; k < NA; k++) {
        int i = row_of[atoms[(long long)m * NA + k]];
        row[k] = i;
        double mi = (double)mass[i];
        im[k] = 1.0 / mi;
        double dtfvinvm = dtfv / mi;
        for (int d = 0; d < 3; d++) vp[k][d] = (double)v[3LL * i + d] + dtfvinvm * (double)f[3LL * i + d];
    }
    double r[NC][3], w[NC][3];
    for (int c = 0; c < NC; c++) {
        int ip = row[P[c]], iq = row[Q[c]];
        for (int d = 0; d < 3; d++) {
            r[c][d] = shake_image((double)x[(long long)ip * pos_stride + d] - (double)x[(long long)iq * pos_stride + d], L[d]);
            w[c][d] = vp[P[c]][d] - vp[Q[c]][d];
        }
    }
    status[m] = SHAKE_OK;
    if (NC == 1) {
        double l01 = -dot3(r[0], w[0]) / (dot3(r[0], r[0]) * (im[0] + im[1]));
        long long i0 = row[0], i1 = row[1];
        for (int d = 0; d < 3; d++) v[3 * i0 + d] = (real_t)((double)v[3 * i0 + d] - im[0] * l01 * r[0][d]);
        for (int d = 0; d < 3; d++) v[3 * i1 + d] = (real_t)((double)v[3 * i1 + d] - im[1] * (-l01) * r[0][d]);
        return;
    }
    double a[3][3], ai[3][3], cc[3], lam[3];
    for (int c = 0; c < NC; c++) {
        for (int d = 0; d < NC; d++) a[c][d] = coef_of<NC>(P, Q, c, d, im) * dot3(r[c], r[d]);
        cc[c] = -dot3(w[c], r[c]);
    }
    if (NC == 2) {
        double det = a[0][0] * a[1][1] - a[0][1] * a[1][0];
        if (det == 0.0) {
            status[m] = SHAKE_SINGULAR;
            return;
        }
        double di = 1.0 / det;
        lam[0] = di * (a[1][1] * cc[0] - a[0][1] * cc[1]);
        lam[1] = di * (-a[1][0] * cc[0] + a[0][0] * cc[1]);
    } else {
        if (inverse<NC>(a, ai) == 0.0) {
            status[m] = SHAKE_SINGULAR;
            return;
        }
        for (int c = 0; c < NC; c++) {
            double acc = 0.0;
            for (int d = 0; d < NC; d++) acc += ai[c][d] * cc[d];
            lam[c] = acc;
        }
    }
    for (int k = 0; k < NA; k++) {
        long long i = row[k];
        for (int d = 0; d < 3; d++) {
            double acc = 0.0;
            for (int c = 0; c < NC; c++) {
                if (Q[c] == k) acc += lam[c] * r[c][d];
                else if (P[c] == k) acc -= lam[c] * r[c][d];
            }
            v[3 * i + d] = (real_t)((double)v[3 * i + d] - im[k] * acc);
        }
    }
}

#define SHAKE_KERNELS(NAME, K)                                                                                   \
    extern "C" __global__ void shake_##NAME(const real_t* x, int pos_stride, const real_t* v, accum_t* f,      \
                                            int f_stride, const real_t* mass, const int* row_of,                \
                                            const long long* atoms, const double* lengths, int n, double Lx,    \
                                            double Ly, double Lz, double dtv, double dtfsq, double tol,          \
                                            int max_iter, double* virial, int* status) {                        \
        shake_cluster<K>(x, pos_stride, v, f, f_stride, mass, row_of, atoms, lengths, n, Lx, Ly, Lz, dtv,       \
                         dtfsq, tol, max_iter, virial, status);                                                 \
    }                                                                                                          \
    extern "C" __global__ void rattle_##NAME(const real_t* x, int pos_stride, real_t* v, const accum_t* f,     \
                                             const real_t* mass, const int* row_of, const long long* atoms,     \
                                             int n, double Lx, double Ly, double Lz, double dtfv, int* status) { \
        rattle_cluster<K>(x, pos_stride, v, f, mass, row_of, atoms, n, Lx, Ly, Lz, dtfv, status);              \
    }

SHAKE_KERNELS(shake2, 0)
SHAKE_KERNELS(shake3, 1)
SHAKE_KERNELS(shake4, 2)
SHAKE_KERNELS(shake3angle, 3)
