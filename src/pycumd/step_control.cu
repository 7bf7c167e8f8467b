// Kernels that steer a run between two reports on the device, in one CUDA graph with conditional
// nodes (step_graph.py, the device loop).  One thread each; they read and write the state's step
// control array, whose layout control_layout.cuh gives (CONTROL_*).
// A condition is set with cudaGraphSetConditional (one thread: concurrent calls are undefined).

#include "step_control.cuh"      // the layout, and the cudaGraphSetConditional declaration for NVRTC

// First node of a launch: the counters reset (the launch's steps, control[CONTROL_LOOP_STEPS], are
// written by the host before the launch), and whether the loop runs a first pass of steps_per_pass steps.
extern "C" __global__ void loop_start(int* __restrict__ control, unsigned long long again, int steps_per_pass)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int k = 0; k < CONTROL_LOOP_STEPS; ++k) control[k] = 0;
    control[CONTROL_ARRIVALS] = 0;
    control[CONTROL_MIN_R2] = 0x7F7FFFFF;                // FLT_MAX bits: no build yet
    cudaGraphSetConditional(again, control[CONTROL_LOOP_STEPS] - 1 >= steps_per_pass);
}

// After the displacement check: rebuild in this step (the IF node on `rebuild`) when some atom
// moved too far and the launch is not frozen; the flag is cleared for the next step's check.
extern "C" __global__ void decide_rebuild(int* __restrict__ control, unsigned long long rebuild)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const unsigned int build = control[CONTROL_MOVED] != 0 && control[CONTROL_FROZEN] == 0;
    control[CONTROL_MOVED] = 0;
    cudaGraphSetConditional(rebuild, build);
}

// End of a pass of the loop's body (steps_per_pass steps): count them and go on while another
// whole pass fits before the launch's last step (which the graph runs after the loop, with the
// final half step instead of the fused one; the steps left over run there too).  A frozen pass
// counts the steps it completed (control[CONTROL_BLOCK_DONE], written by the half-step kernels) and ends the loop.
extern "C" __global__ void loop_step_done(int* __restrict__ control, unsigned long long again, int steps_per_pass)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned int go_on = 0;
    if (control[CONTROL_FROZEN] == 0) {
        control[CONTROL_LOOP_DONE] += steps_per_pass;
        go_on = control[CONTROL_LOOP_DONE] + steps_per_pass <= control[CONTROL_LOOP_STEPS] - 1;
    } else {
        control[CONTROL_LOOP_DONE] += control[CONTROL_BLOCK_DONE];
    }
    control[CONTROL_BLOCK_DONE] = 0;
    cudaGraphSetConditional(again, go_on);
}

// End of the launch's last steps (the `steps` after the loop): count them, or if frozen the ones
// completed.
extern "C" __global__ void last_step_done(int* __restrict__ control, int steps)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    control[CONTROL_LOOP_DONE] += control[CONTROL_FROZEN] == 0 ? steps : control[CONTROL_BLOCK_DONE];
    control[CONTROL_BLOCK_DONE] = 0;
}

// Captured blocks with mixed precision's fused half steps (final_then_initial_integrate_image in
// integrate.cu, which sets control[CONTROL_MOVED] in place of the displacement check): freeze the block when
// that check fired, as displacement_exceeds with flag = control would have.
extern "C" __global__ void freeze_if_moved(int* __restrict__ control)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    if (control[CONTROL_MOVED] != 0) control[CONTROL_FROZEN] = 1;
    control[CONTROL_MOVED] = 0;
}

// Before a launch (a captured block, a rebuild step, a device-loop launch) whose captured step hooks
// read the step number (Langevin's noise, integrate.cu's langevin_forces_captured): the number of the
// step before the launch's first, as a kernel argument, so that the host writes it without a copy from
// its memory (no synchronisation: the rebuild step and the block behind it are launched back to back).
extern "C" __global__ void set_step(int* __restrict__ control, unsigned long long step)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    *reinterpret_cast<unsigned long long*>(control + CONTROL_STEP) = step;
}

#ifndef BATCH
#define BATCH 0
#endif
#if BATCH
// -- the batched engine's device loop (batch_graph.py; compiled with -DBATCH=1, so the kernels above are
// the same PTX without it; one block each, over the S systems) --------------------------------------

// The rebuild decision of every system at one step, as the host-stepped engine's _neighbor_decision
// (LAMMPS Neighbor::decide per system, NeighborList.needs_rebuild alone): an active system's steps
// since its last build advance; it is considered when they are >= delay[s] and a multiple of every[s],
// and rebuilds when considered and either not checking or moved (displacement_exceeds_batch's flag,
// cleared here for the next step).  rebuild[s] is what the build's kernels read; the IF node on
// `handle` runs the build when some system rebuilds.  A frozen launch decides nothing.
extern "C" __global__ void batch_decide_rebuild(const int* __restrict__ control, const unsigned char* __restrict__ active,
                                                int* __restrict__ since, const int* __restrict__ every,
                                                const int* __restrict__ delay, const unsigned char* __restrict__ check,
                                                int* __restrict__ moved, unsigned char* __restrict__ rebuild,
                                                int n_systems, unsigned long long handle)
{
    if (blockIdx.x != 0) return;
    const bool frozen = control[CONTROL_FROZEN] != 0;
    int any = 0;
    for (int s = threadIdx.x; s < n_systems; s += blockDim.x) {
        if (!frozen) {
            int r = 0;
            if (active[s]) {
                const int t = ++since[s];
                r = t >= delay[s] && t % every[s] == 0 && (!check[s] || moved[s] != 0);
            }
            rebuild[s] = (unsigned char)r;
            any |= r;
        }
        moved[s] = 0;
    }
    any = __syncthreads_or(any);
    if (threadIdx.x == 0) cudaGraphSetConditional(handle, any != 0);
}

// After a batched build's list kernel (build_list_batch, largest count of each system in max_count):
// if a rebuilding system's rows did not fit in `capacity` slots, the launch is frozen (control[0],
// reason 1: the host grows the storage, builds the lists again and finishes the step); else each
// rebuilt system's build is recorded: its largest count into its ring of the last `ring_size`
// (ring[s ring_size + builds mod ring_size]), its builds counted, its steps since the build reset;
// control[CONTROL_BUILDS] counts the batched builds, control[CONTROL_MAX_COUNT] their largest count.
extern "C" __global__ void batch_build_done(int* __restrict__ control, const unsigned char* __restrict__ rebuild,
                                            const unsigned int* __restrict__ max_count, int capacity,
                                            int* __restrict__ since, int* __restrict__ n_built,
                                            unsigned int* __restrict__ ring, int ring_size, int n_systems)
{
    if (blockIdx.x != 0) return;
    int over = 0;
    for (int s = threadIdx.x; s < n_systems; s += blockDim.x)
        over |= rebuild[s] && max_count[s] > (unsigned int)capacity;
    over = __syncthreads_or(over);
    if (over) {
        if (threadIdx.x == 0) { control[CONTROL_FROZEN] = 1; control[CONTROL_REASON] = 1; }
        return;
    }
    unsigned int largest = 0;
    for (int s = threadIdx.x; s < n_systems; s += blockDim.x) {
        if (!rebuild[s]) continue;
        ring[(size_t)s * ring_size + n_built[s] % ring_size] = max_count[s];
        n_built[s] += 1;
        since[s] = 0;
        largest = max(largest, max_count[s]);
    }
    if (largest) atomicMax(reinterpret_cast<unsigned int*>(control + CONTROL_MAX_COUNT), largest);
    if (threadIdx.x == 0) control[CONTROL_BUILDS] += 1;
}
#endif // BATCH
