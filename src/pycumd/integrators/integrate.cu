// Integrator kernels: velocity Verlet half steps and the Langevin force, one thread per atom.
// control[0] != 0 means the step block is frozen waiting for a neighbour rebuild (step_graph.py):
// the kernels then do nothing.  control[1] counts completed steps of a captured block.
#ifndef real_t
#define real_t double
#endif
#ifndef accum_t
#define accum_t double
#endif

// initial_integrate: v += (dtf / m) f;  x += dtv v     (LAMMPS fix nve, dtf = dt/2 * ftm2v)
extern "C" __global__ void initial_integrate(const int* __restrict__ control, real_t* __restrict__ pos4, real_t* __restrict__ vel,
                                             const accum_t* __restrict__ force,
                                             const real_t* __restrict__ mass, int n, real_t dtf, real_t dtv)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    real_t dtfm = dtf / mass[i];
    for (int d = 0; d < 3; ++d) {
        real_t v = vel[3 * (size_t)i + d] + dtfm * (real_t)force[3 * (size_t)i + d];
        vel[3 * (size_t)i + d] = v;
        pos4[4 * (size_t)i + d] += dtv * v;
    }
}

// final_integrate: v += (dtf / m) f
extern "C" __global__ void final_integrate(int* __restrict__ control, int step_in_block, real_t* __restrict__ vel, const accum_t* __restrict__ force,
                                           const real_t* __restrict__ mass, int n, real_t dtf)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    real_t dtfm = dtf / mass[i];
    for (int d = 0; d < 3; ++d) vel[3 * (size_t)i + d] += dtfm * (real_t)force[3 * (size_t)i + d];
}

#include "integrators/counter_rng.cuh"

// Langevin (LAMMPS fix langevin form): f += gamma1 m v + gamma2 sqrt(m) (u - 1/2), u uniform in [0,1)
// from a counter-based generator keyed by (seed, step, atom id, component), so that the noise is the
// same on every backend and independent of atom order.
extern "C" __global__ void langevin_forces(const real_t* __restrict__ vel, accum_t* __restrict__ force,
                                           const real_t* __restrict__ mass, const long long* __restrict__ ids,
                                           int n, double gamma1, double gamma2,
                                           unsigned long long seed, unsigned long long step)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double m = (double)mass[i];
    double g1 = gamma1 * m, g2 = gamma2 * sqrt(m);
    for (int d = 0; d < 3; ++d) {
        double u = counter_uniform(seed, step, (unsigned long long)ids[i], (unsigned long long)d);
        force[3 * (size_t)i + d] += (accum_t)(g1 * (double)vel[3 * (size_t)i + d] + g2 * (u - 0.5));
    }
}
