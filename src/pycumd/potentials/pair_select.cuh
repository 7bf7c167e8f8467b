// The pair potential of a force kernel, chosen at compile time by POTENTIAL_HEADER_ID.
// Generated from the registered potential classes by `python -m pycumd.potentials.registry`
// (pycumd.potentials.registry.header_ids maps each potential's cuda_header to its id).
// Each header defines PAIR_TABLE_COLUMNS and pair_raw(r2, row, energy, force_over_r).
#pragma once
#define POTENTIAL_ID_LENNARD_JONES 0
#define POTENTIAL_ID_BORN 1
#define POTENTIAL_ID_BUCKINGHAM 2
#define POTENTIAL_ID_FORMULA 3
#define POTENTIAL_ID_GAUSS 4
#define POTENTIAL_ID_LJ96 5
#define POTENTIAL_ID_LJ_CHARMM 6
#define POTENTIAL_ID_LJ_COULOMB 7
#define POTENTIAL_ID_MORSE 8
#define POTENTIAL_ID_PASTA 9
#define POTENTIAL_ID_SOFT 10
#define POTENTIAL_ID_TABLE 11
#define POTENTIAL_ID_YUKAWA 12
#ifndef POTENTIAL_HEADER_ID
#define POTENTIAL_HEADER_ID POTENTIAL_ID_LENNARD_JONES
#endif

#if POTENTIAL_HEADER_ID == 0
#include "potentials/lennard_jones.cuh"
#elif POTENTIAL_HEADER_ID == 1
#include "potentials/born.cuh"
#elif POTENTIAL_HEADER_ID == 2
#include "potentials/buckingham.cuh"
#elif POTENTIAL_HEADER_ID == 3
#include "potentials/formula.cuh"
#elif POTENTIAL_HEADER_ID == 4
#include "potentials/gauss.cuh"
#elif POTENTIAL_HEADER_ID == 5
#include "potentials/lj96.cuh"
#elif POTENTIAL_HEADER_ID == 6
#include "potentials/lj_charmm.cuh"
#elif POTENTIAL_HEADER_ID == 7
#include "potentials/lj_coulomb.cuh"
#elif POTENTIAL_HEADER_ID == 8
#include "potentials/morse.cuh"
#elif POTENTIAL_HEADER_ID == 9
#include "potentials/pasta.cuh"
#elif POTENTIAL_HEADER_ID == 10
#include "potentials/soft.cuh"
#elif POTENTIAL_HEADER_ID == 11
#include "potentials/table.cuh"
#elif POTENTIAL_HEADER_ID == 12
#include "potentials/yukawa.cuh"
#else
#error "unknown POTENTIAL_HEADER_ID"
#endif
