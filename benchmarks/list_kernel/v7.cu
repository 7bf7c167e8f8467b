// The v7 candidate of the list kernel (benchmarks/list_kernel/compare.py): v5a (verlet_v5a.cu) with
//   * a branch-free candidate test (predicated store, address by one wide multiply-add), and a loop
//     without the image-shift subtractions when no lane of the warp needs a shift in this stencil
//     row (x - 0 == x bit for bit: the same r^2);
//   * the six cell bounds of a stencil row loaded in one round (addresses first, no branch between);
//   * the candidates of a stencil row loaded together (LIST_STAGE / 32 loads in flight per lane)
//     before they are written to shared memory;
//   * LIST_RING > 0: list entries collected per lane in a shared-memory ring of LIST_RING rows
//     (ring[row][lane]: no bank conflict) and written one row k at a time for the whole warp after
//     each stencil row (rows every active lane has reached): 32 consecutive atoms' entries k are
//     contiguous in the column-major storage, so a warp writes 4-5 sectors instead of up to 32.
//     A lane that gets LIST_RING rows ahead of the warp's slowest lane writes its further entries
//     directly (the old scattered store).
// Same arguments, same lists as verlet_v5a.cu.
#ifndef real_t
#define real_t double
#endif
#ifndef LIST_WARPS
#define LIST_WARPS 4
#endif
#ifndef LIST_MIN_BLOCKS
#define LIST_MIN_BLOCKS 1
#endif
#ifndef LIST_STAGE
#define LIST_STAGE 128
#endif
#ifndef LIST_RING
#define LIST_RING 32          // rows of the per-warp output ring (a power of two; 0: scattered stores)
#endif
#include "positions.cuh"

__device__ __forceinline__ int stencil_lo(int n) { int a = (n - 1) / 2; return -(a < 2 ? a : 2); }
__device__ __forceinline__ int stencil_hi(int n) { int b = n / 2; return b < 2 ? b : 2; }

__device__ __forceinline__ real_t face_gap(real_t x, int c, int d, real_t w, int n) {
    if (d == 0 || n < 5) return real_t(0);
    real_t f = x - c * w;
    return d > 0 ? (d * w - f) : (f + (-d - 1) * w);
}

// Unwrapped cell u in [-n, 2n) of a cell row: its cell index in the row (u mod n), and which copy
// of the row's periodic repetition it is in (-1, 0, 1).
__device__ __forceinline__ int row_cell(int u, int n, int& copy) {
    copy = u < 0 ? -1 : (u >= n ? 1 : 0);
    return u - copy * n;
}

struct __align__(16) Candidate { real_t x, y, z; int j; };

// A predicated store (no branch: in a warp some lane almost always stores).
__device__ __forceinline__ void store_if(bool p, int* addr, int value) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.global.b32 [%0], %1;\n\t}"
                 :: "l"(addr), "r"(value), "r"((int)p) : "memory");
}

// Entry k of the column `out` (k * stride ints further on; stride * 4 < 2^32).
__device__ __forceinline__ int* entry(int* out, int k, int stride) {
    return reinterpret_cast<int*>(reinterpret_cast<char*>(out) + (size_t)(unsigned)k * (4u * (unsigned)stride));
}

// The output ring: row r of a lane at shared address ring_lane + 128 (r mod LIST_RING).
__device__ __forceinline__ unsigned ring_row(unsigned ring_lane, int r) {
    return ring_lane + ((unsigned)(r & (LIST_RING - 1)) << 7);
}
__device__ __forceinline__ void ring_store_if(bool p, unsigned addr, int value) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.shared.b32 [%0], %1;\n\t}"
                 :: "r"(addr), "r"(value), "r"((int)p) : "memory");
}
__device__ __forceinline__ int ring_load(unsigned addr) {
    int value;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(value) : "r"(addr) : "memory");
    return value;
}

// The candidate loop of one lane over staged[lo - c0 .. hi - c0): the rule's r^2 in the rule's
// operation order.  MODE 0: image shifts; 1: no shift (every shift of the row is 0); 2: rint.
// STORE 0: scattered stores; 1: every entry to the ring (no lane can pass its ring limit here);
// 2: to the ring below the ring limit, directly from there on.
template <int MODE, int STORE>
__device__ __forceinline__ void candidate_loop(
    const Candidate* staged, int c0, int lo, int hi, real_t xi, real_t yi, real_t zi, int i,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* out, unsigned ring_lane, int ring_limit, int capacity, int stride, int& count, real_t& min_r2)
{
    for (int t = lo; t < hi; ++t) {
        const Candidate q = staged[t - c0];
        real_t ddx = xi - q.x, ddy = yi - q.y, ddz = zi - q.z;
        if (MODE == 0) {
            ddx -= t < t_switch ? sx_before : sx_after;
            ddy -= sy;
            ddz -= sz;
        } else if (MODE == 2) {
            ddx -= Lx * rint(ddx * invLx);
            ddy -= Ly * rint(ddy * invLy);
            ddz -= Lz * rint(ddz * invLz);
        }
        const real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
        const bool accept = r2 < r_list2 && q.j != i;
        if (STORE == 0) {
            store_if(accept && count < capacity, entry(out, count, stride), q.j);
        } else if (STORE == 1) {
            ring_store_if(accept, ring_row(ring_lane, count), q.j);
        } else {
            ring_store_if(accept && count < ring_limit, ring_row(ring_lane, count), q.j);
            store_if(accept && count >= ring_limit && count < capacity, entry(out, count, stride), q.j);
        }
        min_r2 = (accept && r2 < min_r2) ? r2 : min_r2;
        count += accept;
    }
}

// The candidate loop of the row's kind: rint (small boxes), image shifts, or none.
template <bool IMAGE_SHIFT, int STORE>
__device__ __forceinline__ void candidate_loops(
    bool shifted, const Candidate* staged, int c0, int lo, int hi, real_t xi, real_t yi, real_t zi, int i,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* out, unsigned ring_lane, int ring_limit, int capacity, int stride, int& count, real_t& min_r2)
{
    if (!IMAGE_SHIFT)
        candidate_loop<2, STORE>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit, capacity, stride, count, min_r2);
    else if (shifted)
        candidate_loop<0, STORE>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit, capacity, stride, count, min_r2);
    else
        candidate_loop<1, STORE>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit, capacity, stride, count, min_r2);
}

template <bool IMAGE_SHIFT>
__device__ __forceinline__ void build_list_rows_v7(
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int order_is_identity,
    int nx, int ny, int nz, int chunks_per_row,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride,
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits)
{
    constexpr int PER_LANE = LIST_STAGE / 32;
    __shared__ Candidate staged_all[LIST_WARPS][LIST_STAGE];
#if LIST_RING
    __shared__ int ring_all[LIST_WARPS][LIST_RING * 32];
#endif
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Candidate* staged = staged_all[warp];
#if LIST_RING
    const unsigned ring_lane = (unsigned)__cvta_generic_to_shared(ring_all[warp] + lane);   // row 0 of this lane
#else
    const unsigned ring_lane = 0;
#endif
    const int task = blockIdx.x * LIST_WARPS + warp;
    const int row = task / chunks_per_row, chunk = task - row * chunks_per_row;
    if (row >= ny * nz) return;
    const int cy = row % ny, cz = row / ny;
    const int row_first = cell_start[row * nx], row_end = cell_start[row * nx + nx];
    if (row_first + chunk * 32 >= row_end) return;
    const real_t wx = Lx / nx, wy = Ly / ny, wz = Lz / nz;
    const real_t skip2 = r_list2 * real_t(1.001);
    int most = 0;
    real_t least = r_list2;

    for (int first = row_first + chunk * 32; first < row_end; first += chunks_per_row * 32) {
        const int slot = first + lane;
        const bool active = slot < row_end;
        int i = -1, cx = 0;
        real_t xi = 0, yi = 0, zi = 0;
        if (active) {
            int ti;
            i = order_is_identity ? slot : cell_order[slot];
            load_position(pos4, i, xi, yi, zi, ti);
            cx = cell_of[i] - row * nx;
        }
        int* const out = nbr + (active ? i : 0);               // this atom's column
        int count = 0;
        real_t min_r2 = r_list2;
#if LIST_RING
        int flushed = 0;                   // rows [0, flushed) are written for every lane
        int ring_limit = min(LIST_RING, capacity);   // entries below it go to the ring
        int direct_from = 0x7fffffff;      // this lane's first entry written directly
#else
        const int ring_limit = 0;
#endif
        for (int dz = stencil_lo(nz); dz <= stencil_hi(nz); ++dz) {
            const real_t gz = face_gap(zi, cz, dz, wz, nz);
            const real_t gz2 = gz * gz;
            int z = cz + dz;
            real_t sz = 0;
            if (z < 0) { z += nz; sz = -Lz; } else if (z >= nz) { z -= nz; sz = Lz; }
            for (int dy = stencil_lo(ny); dy <= stencil_hi(ny); ++dy) {
                const real_t gy = face_gap(yi, cy, dy, wy, ny);
                const real_t gyz2 = gz2 + gy * gy;
                const bool use = active && gyz2 < skip2;
                if (!__any_sync(FULL, use)) continue;
                int y = cy + dy;
                real_t sy = 0;
                if (y < 0) { y += ny; sy = -Ly; } else if (y >= ny) { y -= ny; sy = Ly; }

                int dxa = stencil_lo(nx), dxb = stencil_hi(nx);
                if (use) {
                    for (; dxa < 0; ++dxa) { real_t g = face_gap(xi, cx, dxa, wx, nx); if (gyz2 + g * g < skip2) break; }
                    for (; dxb > 0; --dxb) { real_t g = face_gap(xi, cx, dxb, wx, nx); if (gyz2 + g * g < skip2) break; }
                }
                const int ua = cx + dxa, ub = cx + dxb;
                const int u0 = __reduce_min_sync(FULL, use ? ua : 0x7fffffff);
                const int u1 = __reduce_max_sync(FULL, use ? ub : -0x7fffffff);
                // the six cell bounds, addresses first: one round of loads
                const int base = (z * ny + y) * nx;
                int k0, k1, ka, kb;
                const int* const cs = cell_start + base;
                const int e0 = row_cell(u0, nx, k0), e1 = row_cell(u1 + 1, nx, k1);
                const int ea = row_cell(ua, nx, ka), eb = row_cell(ub + 1, nx, kb);
                const int rb = cs[0], re = cs[nx], s0 = cs[e0], s1 = cs[e1], sa = cs[ea], sb = cs[eb];
                const int rc = re - rb;
                const int p0 = k0 * rc + s0 - rb;
                const int total = k1 * rc + s1 - rb - p0;
                const int ta = use ? ka * rc + sa - rb - p0 : 0;
                const int tb = use ? kb * rc + sb - rb - p0 : 0;
                real_t sx_before = 0, sx_after = 0;
                int t_switch = tb;
                if (ua < 0) { sx_before = -Lx; t_switch = -p0; }
                else if (ub >= nx) { sx_after = Lx; t_switch = rc - p0; }
                const bool shifted = IMAGE_SHIFT &&
                    __any_sync(FULL, sy != real_t(0) || sz != real_t(0) || (use && (ua < 0 || ub >= nx)));

                for (int c0 = 0; c0 < total; c0 += LIST_STAGE) {
                    const int m = min(LIST_STAGE, total - c0);
                    Candidate q[PER_LANE];
#pragma unroll
                    for (int r = 0; r < PER_LANE; ++r) {          // loads first, all in flight
                        const int e = lane + 32 * r;
                        if (e < m) {
                            const int p = p0 + c0 + e;
                            const int s = rb + p + (p < 0 ? rc : 0) - (p >= rc ? rc : 0);
                            const int j = order_is_identity ? s : cell_order[s];
                            int tj;
                            load_position(pos4, j, q[r].x, q[r].y, q[r].z, tj);
                            q[r].j = j;
                        }
                    }
#pragma unroll
                    for (int r = 0; r < PER_LANE; ++r)
                        if (lane + 32 * r < m) staged[lane + 32 * r] = q[r];
                    __syncwarp();
                    const int lo = max(ta, c0), hi = max(lo, min(tb, c0 + m));
#if LIST_RING
                    // no lane can pass its ring limit in this part: every entry goes to the ring
                    if (__all_sync(FULL, count + (hi - lo) <= ring_limit))
                        candidate_loops<IMAGE_SHIFT, 1>(shifted, staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before,
                            sx_after, sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit,
                            capacity, stride, count, min_r2);
                    else
                        candidate_loops<IMAGE_SHIFT, 2>(shifted, staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before,
                            sx_after, sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit,
                            capacity, stride, count, min_r2);
#else
                    candidate_loops<IMAGE_SHIFT, 0>(shifted, staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before,
                        sx_after, sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, ring_lane, ring_limit,
                        capacity, stride, count, min_r2);
#endif
                    __syncwarp();
                }
#if LIST_RING
                // a lane that passed its ring limit stored its entries from there on directly
                if (direct_from == 0x7fffffff && count > ring_limit && ring_limit < capacity) direct_from = ring_limit;
                // rows every active lane has (in the ring, or written directly): write them, one row
                // of the warp per store
                const int done = __reduce_min_sync(FULL, active ? min(count, capacity) : 0x7fffffff);
                for (int k = flushed; k < done; ++k)
                    if (active && k < direct_from) *entry(out, k, stride) = ring_load(ring_row(ring_lane, k));
                flushed = max(flushed, done);
                ring_limit = direct_from != 0x7fffffff ? 0 : min(flushed + LIST_RING, capacity);
#endif
            }
        }
#if LIST_RING
        // the rows some lanes have not reached
        const int last = __reduce_max_sync(FULL, active ? min(count, capacity) : 0);
        for (int k = flushed; k < last; ++k)
            if (active && k < count && k < direct_from) *entry(out, k, stride) = ring_load(ring_row(ring_lane, k));
#endif
        if (active) {
            nbr_count[i] = count;
            most = count > most ? count : most;
            least = min_r2 < least ? min_r2 : least;
        }
    }
    const int warp_most = __reduce_max_sync(FULL, most);
    const unsigned warp_least = __reduce_min_sync(FULL, __float_as_uint((float)least));
    if (lane == 0) {
        atomicMax(max_count, warp_most);
        atomicMin(min_r2_bits, warp_least);
    }
}

#define LIST_KERNEL_ARGS                                                                              \
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,                                 \
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int order_is_identity,    \
    int nx, int ny, int nz, int chunks_per_row,                                                       \
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,        \
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride,                     \
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits
#define LIST_KERNEL_PASS                                                                              \
    pos4, cell_of, cell_start, cell_order, order_is_identity, nx, ny, nz, chunks_per_row,             \
    Lx, Ly, Lz, invLx, invLy, invLz, r_list2, nbr, nbr_count, capacity, stride, max_count, min_r2_bits

extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_list_v7(LIST_KERNEL_ARGS) {
    build_list_rows_v7<true>(LIST_KERNEL_PASS);
}

extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_list_v7_rint(LIST_KERNEL_ARGS) {
    build_list_rows_v7<false>(LIST_KERNEL_PASS);
}
