// The generated function of a bonded lepton style (pycumd.molecular.styles.lepton_terms):
// lepton_raw(x, row, energy, derivative) sets E(x) and dE/dx of the type's expression, x named
// LEPTON_VARIABLE (r, theta or phi: the style's .cuh defines it).  The body comes as the define
// LEPTON_BODY (pycumd.potentials.formula.compile_function_of: statements on x and row[k]; with several
// expressions a switch on the type's branch in row[0]); without it (the compile tests) E = row[3] x^2.
// row: [branch, reference, offset, parameter columns...].
#pragma once
#include "formula_support.cuh"     // FORMULA_COMMA, ipow<N>
#ifndef LEPTON_BODY
#define LEPTON_BODY energy = row[3] * ipow<2>(LEPTON_VARIABLE); derivative = T(2) * row[3] * LEPTON_VARIABLE;
#endif

template <typename T>
__device__ __forceinline__ void lepton_raw(T LEPTON_VARIABLE, const T* row, T& energy, T& derivative) {
    LEPTON_BODY
}
