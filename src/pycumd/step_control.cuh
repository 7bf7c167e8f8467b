// The step control array's layout and the device side of the device loop's conditions (step_graph.py,
// step_control.cu; the integrator's fused half steps in integrate.cu decide a rebuild here too).
#pragma once

// The state's step control array (int32, 32 entries), read and written by the kernels of captured
// step blocks and of the device loop; step_graph.py names the same indices (a test compares them):
#define CONTROL_FROZEN 0       // set when a build overflowed its storage: every step kernel returns at once
#define CONTROL_BLOCK_DONE 1   // steps completed in a captured block, or in the loop's present pass
#define CONTROL_REASON 2       // why frozen (1: list overflow)
#define CONTROL_MAX_COUNT 3    // largest neighbour count over the builds of this launch (or of the build)
#define CONTROL_MIN_R2 4       // smallest r^2 over those builds (float bits)
#define CONTROL_BUILDS 5       // builds in this launch
#define CONTROL_MOVED 6        // the displacement check's flag of the current step
#define CONTROL_LOOP_DONE 7    // steps completed in this launch
#define CONTROL_LOOP_STEPS 8   // steps this launch runs (written by the host)
#define CONTROL_BUILD_COUNTS 9 // [9 + (b mod ring)]: largest count of build b of this launch (ring 20)
#define CONTROL_ARRIVALS 29    // blocks of a fused half-step kernel that have finished their check

#ifdef __CUDACC_RTC__
// NVRTC has no declaration of this device-runtime builtin (nvcc's cuda_runtime.h has; the handle
// type there, cudaGraphConditionalHandle, is unsigned long long)
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(unsigned long long handle,
                                                                                  unsigned int value);
#endif

// The rebuild decision of step_control.cu's decide_rebuild, made by the last block of a kernel to
// finish (every thread of every block calls this, after its own check gave `moved`): the blocks'
// flags are ORed into control[MOVED]; the last block to arrive sets the IF node's condition
// `rebuild` to (some atom moved too far and the launch is not frozen) and clears the flag and the
// arrival count for the next step.  Saves the one-thread decide kernel, a graph node, per step.
__device__ __forceinline__ void decide_rebuild_in_last_block(int* __restrict__ control, bool moved,
                                                             unsigned long long rebuild)
{
    const int block_moved = __syncthreads_or(moved);
    if (threadIdx.x != 0) return;
    if (block_moved) atomicExch(control + CONTROL_MOVED, 1);
    __threadfence();                                        // the flag before the arrival
    const unsigned int arrived = atomicAdd(reinterpret_cast<unsigned int*>(control + CONTROL_ARRIVALS), 1u);
    if (arrived != gridDim.x - 1) return;
    __threadfence();                                        // every block's flag is visible now
    const int any_moved = atomicExch(control + CONTROL_MOVED, 0);
    control[CONTROL_ARRIVALS] = 0;
    const int frozen = *reinterpret_cast<volatile int*>(control + CONTROL_FROZEN);
    cudaGraphSetConditional(rebuild, any_moved != 0 && frozen == 0);
}
