// A tabulated pair potential (pycumd.potentials.table): linear or cubic-spline interpolation in r^2.
// row: [rc2, rc, e_c, f_c, inner^2, 1/delta, delta^2/6, spline, N, rsq[N], e[N], f[N], a[N], b[N], hit]
//   k = (r^2 - inner^2) / delta (clamped to 0 .. N-2),  x = (r^2 - rsq_k) / delta
//   linear (a = de, b = df):  E = e_k + x de_k,  F/r = f_k + x df_k
//   spline (a = e2, b = f2):  E = (1-x) e_k + x e_k+1 + (((1-x)^3-(1-x)) e2_k + (x^3-x) e2_k+1) delta^2/6, F/r alike
//   hit: the smallest r^2 below inner^2 met (inf: none), an atomic minimum on the bits of the
//   non-negative value (their integer order is the values'); the host reads it (Table.pair_error)
//   and stops the run, as LAMMPS' "Pair distance < table inner cutoff".
// The width comes as the define TABLE_COLUMNS (9 + 5 N + 1); the kernels load the row per pair from
// the table in global memory (FORCE_ONE_TYPE_PATH 0), where the hit is written.
#pragma once
#ifndef TABLE_COLUMNS
#define TABLE_COLUMNS (9 + 5 * 2 + 1)
#endif
#define PAIR_TABLE_COLUMNS TABLE_COLUMNS

__device__ __forceinline__ void table_record_inner_hit(const float* slot, float r2) {
    atomicMin(reinterpret_cast<int*>(const_cast<float*>(slot)), __float_as_int(r2));
}

__device__ __forceinline__ void table_record_inner_hit(const double* slot, double r2) {
    atomicMin(reinterpret_cast<unsigned long long*>(const_cast<double*>(slot)),
              static_cast<unsigned long long>(__double_as_longlong(r2)));
}

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    const int n = (int)row[8];
    if (r2 < row[4]) table_record_inner_hit(row + 9 + 5 * n, r2);
    int k = (int)((r2 - row[4]) * row[5]);
    k = min(max(k, 0), n - 2);
    const T* rsq = row + 9;
    const T* e = rsq + n;
    const T* f = e + n;
    const T* a2 = f + n;
    const T* b2 = a2 + n;
    T b = (r2 - rsq[k]) * row[5];
    if (row[7] == T(0)) {
        energy = e[k] + b * a2[k];
        force_over_r = f[k] + b * b2[k];
    } else {
        T a = T(1) - b;
        T ca = a * a * a - a, cb = b * b * b - b;
        energy = a * e[k] + b * e[k + 1] + (ca * a2[k] + cb * a2[k + 1]) * row[6];
        force_over_r = a * f[k] + b * f[k + 1] + (ca * b2[k] + cb * b2[k + 1]) * row[6];
    }
}
