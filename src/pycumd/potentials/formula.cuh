// A pair potential generated from a formula (pycumd.potentials.formula), raw (before the cutoff
// treatment).  The body comes as the define FORMULA_BODY (statements on r2 and row[k] that set
// energy and force_over_r; with a formula per type pair, a switch on the pair's branch in row[4]),
// the table width as FORMULA_COLUMNS; without them (the compile tests)
// Lennard-Jones with row: [rc2, rc, e_c, f_c, 4 eps sigma^12, 4 eps sigma^6].
#pragma once
#ifndef FORMULA_COLUMNS
#define FORMULA_COLUMNS 6
#define FORMULA_BODY T x0 = T(1) / ipow<3>(r2); energy = x0 * (row[4] * x0 - row[5]); \
                     force_over_r = x0 / r2 * (T(12) * row[4] * x0 - T(6) * row[5]);
#endif
#define PAIR_TABLE_COLUMNS FORMULA_COLUMNS
#include "formula_support.cuh"     // FORMULA_COMMA, ipow<N>

template <typename T>
__device__ __forceinline__ void pair_raw(T r2, const T* row, T& energy, T& force_over_r) {
    FORMULA_BODY
}
