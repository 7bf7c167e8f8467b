// Kernels that steer a run between two reports on the device, in one CUDA graph with conditional
// nodes (step_graph.py, the device loop).  One thread each; they read and write the state's step
// control array:
//   control[0]  frozen: set when a build overflowed its storage (every step kernel returns at once)
//   control[1]  steps completed in a captured block, or in the loop's present pass
//   control[2]  why frozen (1: list overflow)
//   control[3]  largest neighbour count over the builds of this launch
//   control[4]  smallest r^2 over those builds (float bits)
//   control[5]  builds in this launch
//   control[6]  the displacement check's flag of the current step
//   control[7]  steps completed in this launch
//   control[8]  steps this launch runs (written by the host)
//   control[9 + (b mod 20)]  largest count of build b of this launch (publish_build_stats in verlet.cu)
//   control[29] blocks of a fused half-step kernel done with their check (step_control.cuh)
// A condition is set with cudaGraphSetConditional (one thread: concurrent calls are undefined).

#include "step_control.cuh"      // the cudaGraphSetConditional declaration for NVRTC

// First node of a launch: the counters above (control[8], the steps, is written by the host before
// the launch), and whether the loop runs a first pass of steps_per_pass steps.
extern "C" __global__ void loop_start(int* __restrict__ control, unsigned long long again, int steps_per_pass)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int k = 0; k < 8; ++k) control[k] = 0;
    control[CONTROL_ARRIVALS] = 0;
    control[4] = 0x7F7FFFFF;                         // FLT_MAX bits: no build yet
    cudaGraphSetConditional(again, control[8] - 1 >= steps_per_pass);
}

// After the displacement check: rebuild in this step (the IF node on `rebuild`) when some atom
// moved too far and the launch is not frozen; the flag is cleared for the next step's check.
extern "C" __global__ void decide_rebuild(int* __restrict__ control, unsigned long long rebuild)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const unsigned int build = control[6] != 0 && control[0] == 0;
    control[6] = 0;
    cudaGraphSetConditional(rebuild, build);
}

// End of a pass of the loop's body (steps_per_pass steps): count them and go on while another
// whole pass fits before the launch's last step (which the graph runs after the loop, with the
// final half step instead of the fused one; the steps left over run there too).  A frozen pass
// counts the steps it completed (control[1], written by the half-step kernels) and ends the loop.
extern "C" __global__ void loop_step_done(int* __restrict__ control, unsigned long long again, int steps_per_pass)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    unsigned int go_on = 0;
    if (control[0] == 0) {
        control[7] += steps_per_pass;
        go_on = control[7] + steps_per_pass <= control[8] - 1;
    } else {
        control[7] += control[1];
    }
    control[1] = 0;
    cudaGraphSetConditional(again, go_on);
}

// End of the launch's last steps (the `steps` after the loop): count them, or if frozen the ones
// completed.
extern "C" __global__ void last_step_done(int* __restrict__ control, int steps)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    control[7] += control[0] == 0 ? steps : control[1];
    control[1] = 0;
}

// Captured blocks with mixed precision's fused half steps (final_then_initial_integrate_image in
// integrate.cu, which sets control[6] in place of the displacement check): freeze the block when
// that check fired, as displacement_exceeds with flag = control would have.
extern "C" __global__ void freeze_if_moved(int* __restrict__ control)
{
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    if (control[6] != 0) control[0] = 1;
    control[6] = 0;
}
