// The state's step control array, the one layout for every kernel that reads or writes it (a
// header of its own: the list kernels need the names without step_control.cuh's device-runtime
// declaration).
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
#define CONTROL_STEP 30        // [30, 31]: one 64-bit word, the number of the step before the launch's first (set_step
                               // in step_control.cu writes it before each launch whose captured step hooks read it)
