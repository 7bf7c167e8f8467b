// The device side of the device loop's conditions (step_graph.py, step_control.cu; the integrator's
// fused half steps in integrate.cu decide a rebuild here too).
#pragma once

#include "control_layout.cuh"   // CONTROL_*: the state's step control array

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
