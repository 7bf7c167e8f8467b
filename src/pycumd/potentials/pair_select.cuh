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
#else
#error "unknown POTENTIAL_HEADER_ID"
#endif
