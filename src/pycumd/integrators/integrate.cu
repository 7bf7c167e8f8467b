// Integrator kernels: velocity Verlet half steps and the Langevin force, one thread per atom
// (with COMPOSITE also their float-float twins, at the end).
// control[0] != 0 means the step block is frozen waiting for a neighbour rebuild (step_graph.py):
// the kernels then do nothing.  control[1] counts completed steps of a captured block.
#ifndef real_t
#define real_t double
#endif
#ifndef accum_t
#define accum_t double
#endif
#ifndef COMPOSITE
#define COMPOSITE 0
#endif
#ifndef at_build_t
// the positions at the last neighbour build (the displacement check's reference): the positions'
// type, or float in mixed precision on the GPU (precision.py's at_build_dtype)
#define at_build_t real_t
#endif

#include "positions.cuh"

// A half kick: v + (dtf / m) f.
__device__ __forceinline__ real_t half_kick(real_t v, real_t dtfm, accum_t f) { return v + dtfm * (real_t)f; }

// One atom's initial half step: v += (dtf / m) f; x += dtv v (initial_integrate's per-atom work, also the
// batched kernel's).
__device__ __forceinline__ void initial_integrate_atom(real_t* __restrict__ pos4, real_t* __restrict__ vel,
                                                       const accum_t* __restrict__ force,
                                                       const real_t* __restrict__ mass, int i, real_t dtf, real_t dtv)
{
    real_t dtfm = dtf / mass[i];
    real_t x[4];
    load_row4(pos4, i, x);
    for (int d = 0; d < 3; ++d) {
        real_t v = half_kick(vel[3 * (size_t)i + d], dtfm, force[3 * (size_t)i + d]);
        vel[3 * (size_t)i + d] = v;
        x[d] += dtv * v;
    }
    store_row4(pos4, i, x);
}

// initial_integrate: v += (dtf / m) f;  x += dtv v     (LAMMPS fix nve, dtf = dt/2 * ftm2v)
extern "C" __global__ void initial_integrate(const int* __restrict__ control, real_t* __restrict__ pos4, real_t* __restrict__ vel,
                                             const accum_t* __restrict__ force,
                                             const real_t* __restrict__ mass, int n, real_t dtf, real_t dtv)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    initial_integrate_atom(pos4, vel, force, mass, i, dtf, dtv);
}

// final_integrate: v += (dtf / m) f
extern "C" __global__ void final_integrate(int* __restrict__ control, int step_in_block, real_t* __restrict__ vel, const accum_t* __restrict__ force,
                                           const real_t* __restrict__ mass, int n, real_t dtf)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    real_t dtfm = dtf / mass[i];
    for (int d = 0; d < 3; ++d) vel[3 * (size_t)i + d] = half_kick(vel[3 * (size_t)i + d], dtfm, force[3 * (size_t)i + d]);
}

// final_integrate of step k followed by initial_integrate of step k + 1, in one pass over the
// atoms (both half kicks use the forces of step k): what the captured step blocks run between two
// force computations.  The same operations in the same order as the two kernels, so the same
// bits, with one read of the velocities, forces and masses instead of two.
extern "C" __global__ void final_then_initial_integrate(int* __restrict__ control, int step_in_block,
                                                        real_t* __restrict__ pos4, real_t* __restrict__ vel,
                                                        const accum_t* __restrict__ force,
                                                        const real_t* __restrict__ mass, int n, real_t dtf, real_t dtv)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    real_t dtfm = dtf / mass[i];
    real_t x[4];
    load_row4(pos4, i, x);
    for (int d = 0; d < 3; ++d) {
        const accum_t f = force[3 * (size_t)i + d];
        real_t v = half_kick(half_kick(vel[3 * (size_t)i + d], dtfm, f), dtfm, f);
        vel[3 * (size_t)i + d] = v;
        x[d] += dtv * v;
    }
    store_row4(pos4, i, x);
}

#include "fixed_point.cuh"
#include "step_control.cuh"

// Between two force computations of a captured step graph: final_then_initial_integrate, then
// from the new positions in registers the passes that would read them back: the displacement check
// (displacement_exceeds in verlet.cu, limit2, against the positions at the last build), whose flag
// is control[6] (step_control.cu), never control[0], which the kernel's own threads read; and with
// IMAGE (mixed precision, real_t double) the fixed-point image the next force kernel reads
// (fixed_point_image in forces.cu, scale = 2^32 / L).  Same operations on the same values as the
// separate kernels, so the same bits.
//
// half_steps_moved: one live atom's part (i < n, not frozen): the new velocity and position
// stored, mixed's image written; returns whether it moved more than sqrt(limit2) since the build.
template <bool IMAGE>
__device__ __forceinline__ bool half_steps_moved(
    int* __restrict__ control, int step_in_block, real_t* __restrict__ pos4, real_t* __restrict__ vel,
    const accum_t* __restrict__ force, const real_t* __restrict__ mass, const real_t* __restrict__ mass_of_type,
    real_t dtf, real_t dtv, const at_build_t* __restrict__ pos4_at_build, real_t Lx, real_t Ly, real_t Lz,
    real_t invLx, real_t invLy, real_t invLz, real_t limit2,
    uint4* __restrict__ image, double scale_x, double scale_y, double scale_z, int i)
{
    if (i == 0) control[CONTROL_BLOCK_DONE] = step_in_block;
    real_t x[4];
    load_row4(pos4, i, x);                           // one 16-byte (float) or two (double) loads
    // the mass by the type in the row's w where the state has per-type masses (State.mass_of_type)
    const real_t dtfm = dtf / (mass_of_type != nullptr ? __ldg(mass_of_type + (int)x[3]) : mass[i]);
    for (int d = 0; d < 3; ++d) {
        const accum_t f = force[3 * (size_t)i + d];
        real_t v = half_kick(half_kick(vel[3 * (size_t)i + d], dtfm, f), dtfm, f);
        vel[3 * (size_t)i + d] = v;
        x[d] += dtv * v;
    }
    store_row4(pos4, i, x);                          // the whole row: no partly written sectors
    if (IMAGE) {
        const int t = (int)x[3];
        image[i] = make_uint4(box_fraction((double)x[0], scale_x), box_fraction((double)x[1], scale_y),
                              box_fraction((double)x[2], scale_z), (unsigned int)t);
    }
    at_build_t x0, y0, z0; int t0;
    load_position(pos4_at_build, i, x0, y0, z0, t0);
    real_t dx = x[0] - (real_t)x0, dy = x[1] - (real_t)y0, dz = x[2] - (real_t)z0;
    dx -= Lx * rint(dx * invLx);
    dy -= Ly * rint(dy * invLy);
    dz -= Lz * rint(dz * invLz);
    return dx * dx + dy * dy + dz * dz > limit2;
}

// With DECIDE (the device loop), the kernel's last block also makes the next step's rebuild
// decision, the IF node's condition `rebuild` (step_control.cuh), in place of decide_rebuild.
template <bool IMAGE, bool DECIDE>
__device__ __forceinline__ void fused_half_steps_check(
    int* __restrict__ control, int step_in_block, real_t* __restrict__ pos4, real_t* __restrict__ vel,
    const accum_t* __restrict__ force, const real_t* __restrict__ mass, const real_t* __restrict__ mass_of_type,
    int n, real_t dtf, real_t dtv, const at_build_t* __restrict__ pos4_at_build, real_t Lx, real_t Ly, real_t Lz,
    real_t invLx, real_t invLy, real_t invLz, real_t limit2,
    uint4* __restrict__ image, double scale_x, double scale_y, double scale_z, unsigned long long rebuild)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = i < n && !control[CONTROL_FROZEN];
    const bool moved = live && half_steps_moved<IMAGE>(control, step_in_block, pos4, vel, force, mass, mass_of_type, dtf, dtv,
                                                      pos4_at_build, Lx, Ly, Lz, invLx, invLy, invLz, limit2,
                                                      image, scale_x, scale_y, scale_z, i);
    if (DECIDE)
        decide_rebuild_in_last_block(control, moved, rebuild);
    else if (moved)
        control[CONTROL_MOVED] = 1;
}

#define FUSED_CHECK_ARGS                                                                              \
    int* __restrict__ control, int step_in_block, real_t* __restrict__ pos4, real_t* __restrict__ vel,  \
    const accum_t* __restrict__ force, const real_t* __restrict__ mass,                                \
    const real_t* __restrict__ mass_of_type, int n, real_t dtf, real_t dtv,                             \
    const at_build_t* __restrict__ pos4_at_build, real_t Lx, real_t Ly, real_t Lz,                      \
    real_t invLx, real_t invLy, real_t invLz, real_t limit2
#define FUSED_CHECK_PASS                                                                              \
    control, step_in_block, pos4, vel, force, mass, mass_of_type, n, dtf, dtv, pos4_at_build, Lx, Ly, Lz, \
    invLx, invLy, invLz, limit2

extern "C" __global__ void final_then_initial_integrate_check(FUSED_CHECK_ARGS)
{
    fused_half_steps_check<false, false>(FUSED_CHECK_PASS, nullptr, 0.0, 0.0, 0.0, 0);
}

extern "C" __global__ void final_then_initial_integrate_image(
    FUSED_CHECK_ARGS, uint4* __restrict__ image, double scale_x, double scale_y, double scale_z)
{
    fused_half_steps_check<true, false>(FUSED_CHECK_PASS, image, scale_x, scale_y, scale_z, 0);
}

extern "C" __global__ void final_then_initial_integrate_check_decide(FUSED_CHECK_ARGS, unsigned long long rebuild)
{
    fused_half_steps_check<false, true>(FUSED_CHECK_PASS, nullptr, 0.0, 0.0, 0.0, rebuild);
}

extern "C" __global__ void final_then_initial_integrate_image_decide(
    FUSED_CHECK_ARGS, uint4* __restrict__ image, double scale_x, double scale_y, double scale_z,
    unsigned long long rebuild)
{
    fused_half_steps_check<true, true>(FUSED_CHECK_PASS, image, scale_x, scale_y, scale_z, rebuild);
}

#include "integrators/counter_rng.cuh"

// Langevin (LAMMPS fix langevin form): f += gamma1 m v + gamma2 sqrt(m) (u - 1/2), u uniform in [0,1)
// from a counter-based generator keyed by (seed, step, atom id, component), so that the noise is the
// same on every backend and independent of atom order.  Atom i's part: the one place of the GPU's
// arithmetic (langevin_forces, its captured twin langevin_forces_captured and the batched kernel).
__device__ __forceinline__ void langevin_atom(const real_t* __restrict__ vel, accum_t* __restrict__ force,
                                              const real_t* __restrict__ mass, const long long* __restrict__ ids,
                                              int i, double gamma1, double gamma2,
                                              unsigned long long seed, unsigned long long step)
{
    double m = (double)mass[i];
    double g1 = gamma1 * m, g2 = gamma2 * sqrt(m);
    for (int d = 0; d < 3; ++d) {
        double u = counter_uniform(seed, step, (unsigned long long)ids[i], (unsigned long long)d);
        force[3 * (size_t)i + d] += (accum_t)(g1 * (double)vel[3 * (size_t)i + d] + g2 * (u - 0.5));
    }
}

extern "C" __global__ void langevin_forces(const real_t* __restrict__ vel, accum_t* __restrict__ force,
                                           const real_t* __restrict__ mass, const long long* __restrict__ ids,
                                           int n, double gamma1, double gamma2,
                                           unsigned long long seed, unsigned long long step)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    langevin_atom(vel, force, mass, ids, i, gamma1, gamma2, seed, step);
}

#ifndef LANGEVIN_CAPTURED
#define LANGEVIN_CAPTURED 0
#endif
#if LANGEVIN_CAPTURED
// langevin_forces inside a captured CUDA-graph step (step_graph.py; compiled with -DLANGEVIN_CAPTURED=1,
// so the kernels above are the same PTX without it).  A graph bakes its kernel arguments, so what
// changes from step to step or run to run comes from device memory:
//   step = control[CONTROL_STEP] (64 bits: the step before the launch, set_step in step_control.cu)
//          + control[CONTROL_LOOP_DONE] (in_loop: the steps of the device loop's earlier passes)
//          + step_in_pass (the step's number in its captured block or pass, from 1);
//   params (8 words, Langevin.prepare_capture): [0] seed, [1] ramp start step, [2] ramp length in steps
//   (int64), [3] gamma1, [4] gamma2 / sqrt(T), [5] t_start, [6] t_stop (double bits).
// gamma2 = gamma2 / sqrt(T) * sqrt(T(step)), T(step) = t_start + (t_stop - t_start) * (step - start) / length
// (0 for a length 0), each operation rounded as the host's float64 arithmetic rounds it (the _rn
// intrinsics: no contraction into an FMA whatever --fmad says), so gamma2 has the bits the host passes
// to langevin_forces and the forces are the host-driven step's.  Returns at once in a frozen block.
extern "C" __global__ void langevin_forces_captured(const int* __restrict__ control, int step_in_pass, int in_loop,
                                                    const real_t* __restrict__ vel, accum_t* __restrict__ force,
                                                    const real_t* __restrict__ mass,
                                                    const long long* __restrict__ ids, int n,
                                                    const unsigned long long* __restrict__ params)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[CONTROL_FROZEN]) return;
    const unsigned long long step = *reinterpret_cast<const unsigned long long*>(control + CONTROL_STEP)
        + (unsigned long long)(in_loop ? control[CONTROL_LOOP_DONE] : 0) + (unsigned long long)step_in_pass;
    const long long start = (long long)params[1], length = (long long)params[2];
    const double t_start = __longlong_as_double((long long)params[5]);
    const double t_stop = __longlong_as_double((long long)params[6]);
    const double fraction = length != 0 ? __ddiv_rn((double)((long long)step - start), (double)length) : 0.0;
    const double target = __dadd_rn(t_start, __dmul_rn(__dsub_rn(t_stop, t_start), fraction));
    const double gamma2 = __dmul_rn(__longlong_as_double((long long)params[4]), __dsqrt_rn(target));
    langevin_atom(vel, force, mass, ids, i, __longlong_as_double((long long)params[3]), gamma2, params[0], step);
}
#endif // LANGEVIN_CAPTURED

#ifndef BATCH
#define BATCH 0
#endif
#if BATCH
// The batched engine's half steps and Langevin forces (batch_engine.py, docs/batch.md; compiled with
// -DBATCH=1, so the kernels above are the same PTX without it): one thread per atom of every system,
// the operations of initial_integrate, final_integrate and langevin_forces on the values a single run
// passes as arguments, read from its system's row: `step_params[2 s]` dtf, `[2 s + 1]` dtv (real_t),
// `noise[2 s]` gamma1, `[2 s + 1]` gamma2 (double), `seeds[s]`.  `active[s] == 0`: the system is
// masked (it failed, or has no thermostat for the Langevin kernel).  `control` is the step control
// array (control_layout.cuh): control[0] != 0 (a captured block frozen after a list overflow) makes
// them return at once; final_integrate_batch writes control[1], the steps of the block completed.
extern "C" __global__ void initial_integrate_batch(const int* __restrict__ control, real_t* __restrict__ pos4,
                                                   real_t* __restrict__ vel, const accum_t* __restrict__ force,
                                                   const real_t* __restrict__ mass,
                                                   const int* __restrict__ system, const unsigned char* __restrict__ active,
                                                   const real_t* __restrict__ step_params, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    const int s = system[i];
    if (!active[s]) return;
    initial_integrate_atom(pos4, vel, force, mass, i, step_params[2 * s], step_params[2 * s + 1]);
}

extern "C" __global__ void final_integrate_batch(int* __restrict__ control, int step_in_block,
                                                 real_t* __restrict__ vel, const accum_t* __restrict__ force,
                                                 const real_t* __restrict__ mass, const int* __restrict__ system,
                                                 const unsigned char* __restrict__ active,
                                                 const real_t* __restrict__ step_params, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    const int s = system[i];
    if (!active[s]) return;
    real_t dtfm = step_params[2 * s] / mass[i];
    for (int d = 0; d < 3; ++d) vel[3 * (size_t)i + d] = half_kick(vel[3 * (size_t)i + d], dtfm, force[3 * (size_t)i + d]);
}

// The noise's step number is *step_base + *steps_done + step: the host-stepped engine passes zeros and
// the step; a captured graph (batch_graph.py) the base its host writes before each launch, the device
// loop's count of completed steps (control[CONTROL_LOOP_DONE]) and the step's place in its pass.
extern "C" __global__ void langevin_forces_batch(const int* __restrict__ control, const int* __restrict__ steps_done,
                                                 const unsigned long long* __restrict__ step_base,
                                                 const real_t* __restrict__ vel, accum_t* __restrict__ force,
                                                 const real_t* __restrict__ mass, const long long* __restrict__ ids,
                                                 const int* __restrict__ system, const unsigned char* __restrict__ active,
                                                 const double* __restrict__ noise,
                                                 const unsigned long long* __restrict__ seeds, int n,
                                                 unsigned long long step)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    const int s = system[i];
    if (!active[s]) return;
    step += *step_base + (unsigned long long)*steps_done;
    langevin_atom(vel, force, mass, ids, i, noise[2 * s], noise[2 * s + 1], seeds[s], step);
}

// Per-system sums for thermo output (batch_engine.py's system_sums): one block of 256 threads per
// system, a fixed tree, so repeatable: out[3 s] = sum of energy, out[3 s + 1] = sum of m v^2 / 2,
// out[3 s + 2] = sum of the virial's trace, over the system's atoms [atom_offset[s], atom_offset[s+1]).
extern "C" __global__ void system_sums_batch(const accum_t* __restrict__ energy, const accum_t* __restrict__ virial,
                                             const real_t* __restrict__ vel, const real_t* __restrict__ mass,
                                             const long long* __restrict__ atom_offset, double* __restrict__ out)
{
    __shared__ double part[3][256];
    const int s = blockIdx.x, t = threadIdx.x;
    double e = 0, k = 0, w = 0;
    for (long long i = atom_offset[s] + t; i < atom_offset[s + 1]; i += blockDim.x) {
        e += (double)energy[i];
        const double vx = vel[3 * i], vy = vel[3 * i + 1], vz = vel[3 * i + 2];
        k += 0.5 * (double)mass[i] * (vx * vx + vy * vy + vz * vz);
        w += (double)virial[6 * i] + (double)virial[6 * i + 1] + (double)virial[6 * i + 2];
    }
    part[0][t] = e; part[1][t] = k; part[2][t] = w;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) for (int q = 0; q < 3; ++q) part[q][t] += part[q][t + h];
        __syncthreads();
    }
    if (t == 0) for (int q = 0; q < 3; ++q) out[3 * s + q] = part[q][0];
}
#endif // BATCH
#if COMPOSITE
#include "composite/float_float.cuh"
// Composite precision (float-float, no float64): every quantity as hi and lo arrays of the same
// layout (positions (N, 4) rows; velocities and forces (N, 3); masses (N,)); dtf and dtv as
// float-float numbers.  Same updates as above:
//   initial_integrate_composite: v += (dtf / m) f;  x += dtv v
//   final_integrate_composite:   v += (dtf / m) f
__device__ __forceinline__ ff dtf_over_mass(float dtf, float dtf_lo, const float* mass, const float* mass_lo, int i) {
    return ff_div(ff_make(dtf, dtf_lo), ff_make(mass[i], mass_lo[i]));
}

extern "C" __global__ void initial_integrate_composite(
    const int* __restrict__ control, float* __restrict__ pos4, float* __restrict__ pos_lo,
    float* __restrict__ vel, float* __restrict__ vel_lo, const float* __restrict__ force,
    const float* __restrict__ force_lo, const float* __restrict__ mass, const float* __restrict__ mass_lo,
    int n, float dtf, float dtf_lo, float dtv, float dtv_lo)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    ff dtfm = dtf_over_mass(dtf, dtf_lo, mass, mass_lo, i);
    float x_hi[4], x_lo[4];                          // whole rows: one 16-byte access each
    load_row4(pos4, i, x_hi);
    load_row4(pos_lo, i, x_lo);
    for (int d = 0; d < 3; ++d) {
        size_t a = 3 * (size_t)i + d;
        ff v = ff_add(ff_make(vel[a], vel_lo[a]), ff_mul(dtfm, ff_make(force[a], force_lo[a])));
        vel[a] = v.hi; vel_lo[a] = v.lo;
        ff x = ff_add(ff_make(x_hi[d], x_lo[d]), ff_mul(ff_make(dtv, dtv_lo), v));
        x_hi[d] = x.hi; x_lo[d] = x.lo;
    }
    store_row4(pos4, i, x_hi);
    store_row4(pos_lo, i, x_lo);
}

extern "C" __global__ void final_integrate_composite(
    int* __restrict__ control, int step_in_block, float* __restrict__ vel, float* __restrict__ vel_lo,
    const float* __restrict__ force, const float* __restrict__ force_lo, const float* __restrict__ mass,
    const float* __restrict__ mass_lo, int n, float dtf, float dtf_lo)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    ff dtfm = dtf_over_mass(dtf, dtf_lo, mass, mass_lo, i);
    for (int d = 0; d < 3; ++d) {
        size_t a = 3 * (size_t)i + d;
        ff v = ff_add(ff_make(vel[a], vel_lo[a]), ff_mul(dtfm, ff_make(force[a], force_lo[a])));
        vel[a] = v.hi; vel_lo[a] = v.lo;
    }
}

// final_integrate_composite of step k then initial_integrate_composite of step k + 1 in one pass
// (as final_then_initial_integrate above): the same float-float operations in the same order, so
// the same bits, with one read of the velocities, forces and masses instead of two.
extern "C" __global__ void final_then_initial_integrate_composite(
    int* __restrict__ control, int step_in_block, float* __restrict__ pos4, float* __restrict__ pos_lo,
    float* __restrict__ vel, float* __restrict__ vel_lo, const float* __restrict__ force,
    const float* __restrict__ force_lo, const float* __restrict__ mass, const float* __restrict__ mass_lo,
    int n, float dtf, float dtf_lo, float dtv, float dtv_lo)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || control[0]) return;
    if (i == 0) control[1] = step_in_block;
    ff dtfm = dtf_over_mass(dtf, dtf_lo, mass, mass_lo, i);
    float x_hi[4], x_lo[4];
    load_row4(pos4, i, x_hi);
    load_row4(pos_lo, i, x_lo);
    for (int d = 0; d < 3; ++d) {
        size_t a = 3 * (size_t)i + d;
        const ff f = ff_make(force[a], force_lo[a]);
        ff v = ff_add(ff_make(vel[a], vel_lo[a]), ff_mul(dtfm, f));
        v = ff_add(v, ff_mul(dtfm, f));
        vel[a] = v.hi; vel_lo[a] = v.lo;
        ff x = ff_add(ff_make(x_hi[d], x_lo[d]), ff_mul(ff_make(dtv, dtv_lo), v));
        x_hi[d] = x.hi; x_lo[d] = x.lo;
    }
    store_row4(pos4, i, x_hi);
    store_row4(pos_lo, i, x_lo);
}

// v *= scale (float-float scale; a thermostat's velocity scaling), n rows of 3.
extern "C" __global__ void scale_velocities_composite(float* __restrict__ vel, float* __restrict__ vel_lo, int n,
                                                      float scale, float scale_lo)
{
    int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= 3 * n) return;
    ff v = ff_mul(ff_make(vel[a], vel_lo[a]), ff_make(scale, scale_lo));
    vel[a] = v.hi; vel_lo[a] = v.lo;
}
#endif
