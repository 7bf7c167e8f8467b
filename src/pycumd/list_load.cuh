// How a kernel loads the entries of a neighbour list (pair forces, forces.cu; EAM, eam.cu): the list is
// read once per pass and is most of a pass's traffic, while the neighbours' rows are read many times.
#pragma once
#ifndef COMPOSITE
#define COMPOSITE 0
#endif
#ifndef FORCE_LIST_LOAD
// How list entries are loaded: 0 __ldg; 1 __ldcs (streaming); 2 not kept in L1; 3 not kept in L1
// and first out of L2.  The list is read once per step and is the most of the kernel's traffic;
// rows of neighbours are read many times: 3 (evict first) for float32 rows, 2 for double positions,
// composite and mixed precision's fixed-point kernel, the fastest measured for each
// (docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "list loads").
#define FORCE_LIST_LOAD ((sizeof(real_t) == 4 && !COMPOSITE) ? 3 : 2)
#endif
// One list entry (FORCE_LIST_LOAD).
__device__ __forceinline__ int load_list_entry(const int* p) {
    int v;
    if (FORCE_LIST_LOAD == 1) {
        v = __ldcs(p);
    } else if (FORCE_LIST_LOAD == 2) {
        asm volatile("ld.global.nc.L1::no_allocate.b32 %0, [%1];" : "=r"(v) : "l"(p));
    } else if (FORCE_LIST_LOAD == 3) {
        unsigned long long policy;
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(policy));
    } else {
        v = __ldg(p);
    }
    return v;
}
