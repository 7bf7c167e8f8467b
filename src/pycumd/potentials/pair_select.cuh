// The pair potential of a force kernel, chosen at compile time by POTENTIAL_HEADER_ID
// (pycumd.forces.POTENTIAL_HEADER_IDS maps each potential's cuda_header to its id).
// Each header defines PAIR_TABLE_COLUMNS and pair_raw(r2, row, energy, force_over_r).
#pragma once
#ifndef POTENTIAL_HEADER_ID
#define POTENTIAL_HEADER_ID 0
#endif

#if POTENTIAL_HEADER_ID == 0
#include "potentials/lennard_jones.cuh"
#elif POTENTIAL_HEADER_ID == 1
#include "potentials/yukawa.cuh"
#elif POTENTIAL_HEADER_ID == 2
#include "potentials/pasta.cuh"
#elif POTENTIAL_HEADER_ID == 3
#include "potentials/morse.cuh"
#elif POTENTIAL_HEADER_ID == 4
#include "potentials/buckingham.cuh"
#elif POTENTIAL_HEADER_ID == 5
#include "potentials/born.cuh"
#elif POTENTIAL_HEADER_ID == 6
#include "potentials/soft.cuh"
#elif POTENTIAL_HEADER_ID == 7
#include "potentials/lj96.cuh"
#elif POTENTIAL_HEADER_ID == 8
#include "potentials/gauss.cuh"
#elif POTENTIAL_HEADER_ID == 9
#include "potentials/lj_coulomb.cuh"
#elif POTENTIAL_HEADER_ID == 10
#include "potentials/formula.cuh"
#elif POTENTIAL_HEADER_ID == 11
#include "potentials/table.cuh"
#else
#error "unknown POTENTIAL_HEADER_ID"
#endif
