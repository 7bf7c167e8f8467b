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
