// Replica exchange decided on the device (pycumd/tempering.py, LAMMPS temper): one thread per pair
// (k, k+1) of this attempt's parity `which` (k = which, which + 2, ...).  The pairs of one attempt
// are disjoint, so the threads touch disjoint entries.
//
//   Delta = (E_lo - E_hi) (1 / (k_B T_k) - 1 / (k_B T_{k+1})),   accept: Delta >= 0 or u < exp(Delta),
//
// u = counter_uniform(seed, attempt, k, 0): the host's draw (pycumd.integrators.langevin.counter_uniform).
// Compiled without FMA contraction, so Delta has the host's bits; exp is CUDA's (within 1 ulp of the
// host's: a decision differs only for u within an ulp of exp(Delta)).
//
// energy[m]: member m's potential energy; replica_at[k]: the member at temperature k (updated);
// attempts[k], accepted[k]: counts (updated); scale[m], target[m]: for an exchanged member, its velocity
// factor sqrt(T_new / T_old) and new temperature (left as they are for the others: the caller fills
// them with 1 and the current temperatures first).
#include "integrators/counter_rng.cuh"

extern "C" __global__ void exchange_attempt(const double* __restrict__ energy, int* __restrict__ replica_at,
                                            const double* __restrict__ temperature, int n_replicas, double boltz,
                                            unsigned long long seed, unsigned long long attempt, int which,
                                            long long* __restrict__ attempts, long long* __restrict__ accepted,
                                            double* __restrict__ scale, double* __restrict__ target)
{
    const int k = which + 2 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (k + 1 >= n_replicas) return;
    const int lo = replica_at[k], hi = replica_at[k + 1];
    const double t_lo = temperature[k], t_hi = temperature[k + 1];
    const double delta = (energy[lo] - energy[hi]) * (1.0 / (boltz * t_lo) - 1.0 / (boltz * t_hi));
    attempts[k] += 1;
    if (delta >= 0.0 || counter_uniform(seed, attempt, (unsigned long long)k, 0ULL) < exp(delta)) {
        accepted[k] += 1;
        replica_at[k] = hi;
        replica_at[k + 1] = lo;
        scale[lo] = sqrt(t_hi / t_lo);
        scale[hi] = sqrt(t_lo / t_hi);
        target[lo] = t_hi;
        target[hi] = t_lo;
    }
}
