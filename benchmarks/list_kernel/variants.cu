// Variants of the list kernel (verlet.cu, v5a) for benchmarks/list_kernel/compare.py.
// Same arguments, same lists (the rule in verlet.cu); selected by defines:
//   LK_ATOMS        target atoms per lane (1 or 2): a task is 32 * LK_ATOMS consecutive slots of
//                   a cell row; both atoms of a lane are tested in one loop (two independent chains)
//   LK_LEAN         1: candidate loop with a branch-free accept (store address by one wide
//                   multiply-add, predicated store) and, when no lane of the warp needs an image
//                   shift in this stencil row, a loop without the shift subtractions
//                   (x - 0 == x bit for bit, so the lists are the same)
//   LK_UNROLL       unroll factor of the candidate loop (0: the compiler's choice)
//   LIST_WARPS, LIST_MIN_BLOCKS, LIST_STAGE as in verlet.cu
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
#ifndef LK_ATOMS
#define LK_ATOMS 1
#endif
#ifndef LK_LEAN
#define LK_LEAN 1
#endif
#ifndef LK_UNROLL
#define LK_UNROLL 0           // unroll factor of the candidate loop (0: the compiler's choice)
#endif
#include "positions.cuh"
#if LK_UNROLL > 0
constexpr int lk_unroll = LK_UNROLL;
#endif

__device__ __forceinline__ int stencil_lo(int n) { int a = (n - 1) / 2; return -(a < 2 ? a : 2); }
__device__ __forceinline__ int stencil_hi(int n) { int b = n / 2; return b < 2 ? b : 2; }

__device__ __forceinline__ real_t face_gap(real_t x, int c, int d, real_t w, int n) {
    if (d == 0 || n < 5) return real_t(0);
    real_t f = x - c * w;
    return d > 0 ? (d * w - f) : (f + (-d - 1) * w);
}

__device__ __forceinline__ int row_pos(const int* __restrict__ cell_start, int base, int rb, int rc, int u, int n) {
    int k = 0;
    if (u < 0) { u += n; k = -1; } else if (u >= n) { u -= n; k = 1; }
    return k * rc + cell_start[base + u] - rb;
}

struct __align__(16) Candidate { real_t x, y, z; int j; };

// A predicated store (no branch: in a warp some lane almost always stores).
__device__ __forceinline__ void store_if(bool p, int* addr, int value) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.global.b32 [%0], %1;\n\t}"
                 :: "l"(addr), "r"(value), "r"((int)p) : "memory");
}

// One candidate test of one target atom (the rule's r^2, in the rule's operation order).
template <int MODE>   // 0: image shifts, 1: no shift (every shift of the row is 0), 2: rint
__device__ __forceinline__ void test_candidate(
    const Candidate& q, int t, real_t xi, real_t yi, real_t zi, int i,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* __restrict__ out, int capacity, int stride, int& count, real_t& min_r2)
{
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
#if LK_LEAN
    const bool accept = r2 < r_list2 && q.j != i;
    store_if(accept && count < capacity,
             reinterpret_cast<int*>(reinterpret_cast<char*>(out) + (size_t)(unsigned)count * (4u * (unsigned)stride)), q.j);
    min_r2 = (accept && r2 < min_r2) ? r2 : min_r2;
    count += accept;
#else
    if (r2 < r_list2 && q.j != i) {
        if (count < capacity) out[(size_t)count * stride] = q.j;
        ++count;
        min_r2 = r2 < min_r2 ? r2 : min_r2;
    }
#endif
}

template <int MODE>
__device__ __forceinline__ void candidate_loop(
    const Candidate* staged, int c0, const int (&lo)[LK_ATOMS], const int (&hi)[LK_ATOMS],
    const real_t (&xi)[LK_ATOMS], const real_t (&yi)[LK_ATOMS], const real_t (&zi)[LK_ATOMS], const int (&i)[LK_ATOMS],
    const int (&t_switch)[LK_ATOMS], const real_t (&sx_before)[LK_ATOMS], const real_t (&sx_after)[LK_ATOMS],
    real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* (&out)[LK_ATOMS], int capacity, int stride, int (&count)[LK_ATOMS], real_t (&min_r2)[LK_ATOMS])
{
#if LK_ATOMS == 1
#if LK_UNROLL > 0
#pragma unroll lk_unroll
#endif
    for (int t = lo[0]; t < hi[0]; ++t)
        test_candidate<MODE>(staged[t - c0], t, xi[0], yi[0], zi[0], i[0], t_switch[0], sx_before[0], sx_after[0],
                             sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out[0], capacity, stride,
                             count[0], min_r2[0]);
#else
    const int n0 = hi[0] - lo[0], n1 = hi[1] - lo[1];
    const int trips = n0 > n1 ? n0 : n1;
#if LK_UNROLL > 0
#pragma unroll lk_unroll
#endif
    for (int k = 0; k < trips; ++k) {
        if (k < n0) {
            const int t = lo[0] + k;
            test_candidate<MODE>(staged[t - c0], t, xi[0], yi[0], zi[0], i[0], t_switch[0], sx_before[0], sx_after[0],
                                 sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out[0], capacity, stride,
                                 count[0], min_r2[0]);
        }
        if (k < n1) {
            const int t = lo[1] + k;
            test_candidate<MODE>(staged[t - c0], t, xi[1], yi[1], zi[1], i[1], t_switch[1], sx_before[1], sx_after[1],
                                 sy, sz, Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out[1], capacity, stride,
                                 count[1], min_r2[1]);
        }
    }
#endif
}

template <bool IMAGE_SHIFT>
__device__ __forceinline__ void build_list_rows_v(
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int order_is_identity,
    int nx, int ny, int nz, int chunks_per_row,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride,
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits)
{
    constexpr int A = LK_ATOMS, PER_TASK = 32 * LK_ATOMS;
    __shared__ Candidate staged_all[LIST_WARPS][LIST_STAGE];
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Candidate* staged = staged_all[warp];
    const int task = blockIdx.x * LIST_WARPS + warp;
    const int row = task / chunks_per_row, chunk = task - row * chunks_per_row;
    if (row >= ny * nz) return;
    const int cy = row % ny, cz = row / ny;
    const int row_first = cell_start[row * nx], row_end = cell_start[row * nx + nx];
    if (row_first + chunk * PER_TASK >= row_end) return;
    const real_t wx = Lx / nx, wy = Ly / ny, wz = Lz / nz;
    const real_t skip2 = r_list2 * real_t(1.001);
    int most = 0;
    real_t least = r_list2;

    for (int first = row_first + chunk * PER_TASK; first < row_end; first += chunks_per_row * PER_TASK) {
        bool active[A];
        int i[A], cx[A], count[A];
        real_t xi[A], yi[A], zi[A], min_r2[A];
        int* out[A];
#pragma unroll
        for (int a = 0; a < A; ++a) {
            const int slot = first + a * 32 + lane;
            active[a] = slot < row_end;
            i[a] = -1; cx[a] = 0; xi[a] = 0; yi[a] = 0; zi[a] = 0;
            if (active[a]) {
                int ti;
                i[a] = order_is_identity ? slot : cell_order[slot];
                load_position(pos4, i[a], xi[a], yi[a], zi[a], ti);
                cx[a] = cell_of[i[a]] - row * nx;
            }
            count[a] = 0;
            min_r2[a] = r_list2;
            out[a] = nbr + (active[a] ? i[a] : 0);
        }
        for (int dz = stencil_lo(nz); dz <= stencil_hi(nz); ++dz) {
            real_t gz2[A];
#pragma unroll
            for (int a = 0; a < A; ++a) { const real_t g = face_gap(zi[a], cz, dz, wz, nz); gz2[a] = g * g; }
            int z = cz + dz;
            real_t sz = 0;
            if (z < 0) { z += nz; sz = -Lz; } else if (z >= nz) { z -= nz; sz = Lz; }
            for (int dy = stencil_lo(ny); dy <= stencil_hi(ny); ++dy) {
                real_t gyz2[A];
                bool use[A], any_use = false;
#pragma unroll
                for (int a = 0; a < A; ++a) {
                    const real_t g = face_gap(yi[a], cy, dy, wy, ny);
                    gyz2[a] = gz2[a] + g * g;
                    use[a] = active[a] && gyz2[a] < skip2;
                    any_use |= use[a];
                }
                if (!__any_sync(FULL, any_use)) continue;
                int y = cy + dy;
                real_t sy = 0;
                if (y < 0) { y += ny; sy = -Ly; } else if (y >= ny) { y -= ny; sy = Ly; }

                int ua[A], ub[A];
                int umin = 0x7fffffff, umax = -0x7fffffff;
#pragma unroll
                for (int a = 0; a < A; ++a) {
                    int dxa = stencil_lo(nx), dxb = stencil_hi(nx);
                    if (use[a]) {
                        for (; dxa < 0; ++dxa) { real_t g = face_gap(xi[a], cx[a], dxa, wx, nx); if (gyz2[a] + g * g < skip2) break; }
                        for (; dxb > 0; --dxb) { real_t g = face_gap(xi[a], cx[a], dxb, wx, nx); if (gyz2[a] + g * g < skip2) break; }
                    }
                    ua[a] = cx[a] + dxa; ub[a] = cx[a] + dxb;
                    if (use[a]) { umin = min(umin, ua[a]); umax = max(umax, ub[a]); }
                }
                const int u0 = __reduce_min_sync(FULL, umin);
                const int u1 = __reduce_max_sync(FULL, umax);
                const int base = (z * ny + y) * nx;
                const int rb = cell_start[base], rc = cell_start[base + nx] - rb;
                const int p0 = row_pos(cell_start, base, rb, rc, u0, nx);
                const int total = row_pos(cell_start, base, rb, rc, u1 + 1, nx) - p0;
                int ta[A], tb[A], t_switch[A];
                real_t sx_before[A], sx_after[A];
                bool shifted = IMAGE_SHIFT && (sy != real_t(0) || sz != real_t(0));
#pragma unroll
                for (int a = 0; a < A; ++a) {
                    ta[a] = 0; tb[a] = 0;
                    if (use[a]) {
                        ta[a] = row_pos(cell_start, base, rb, rc, ua[a], nx) - p0;
                        tb[a] = row_pos(cell_start, base, rb, rc, ub[a] + 1, nx) - p0;
                    }
                    sx_before[a] = 0; sx_after[a] = 0;
                    t_switch[a] = tb[a];
                    if (ua[a] < 0) { sx_before[a] = -Lx; t_switch[a] = -p0; }
                    else if (ub[a] >= nx) { sx_after[a] = Lx; t_switch[a] = rc - p0; }
                    shifted |= use[a] && (ua[a] < 0 || ub[a] >= nx);
                }
#if LK_LEAN
                shifted = __any_sync(FULL, shifted);
#else
                shifted = true;
#endif

                for (int c0 = 0; c0 < total; c0 += LIST_STAGE) {
                    const int m = min(LIST_STAGE, total - c0);
                    for (int e = lane; e < m; e += 32) {
                        const int p = p0 + c0 + e;
                        const int s = rb + p + (p < 0 ? rc : 0) - (p >= rc ? rc : 0);
                        const int j = order_is_identity ? s : cell_order[s];
                        Candidate q; int tj;
                        load_position(pos4, j, q.x, q.y, q.z, tj);
                        q.j = j;
                        staged[e] = q;
                    }
                    __syncwarp();
                    int lo[A], hi[A];
#pragma unroll
                    for (int a = 0; a < A; ++a) { lo[a] = max(ta[a], c0); hi[a] = max(lo[a], min(tb[a], c0 + m)); }
                    if (!IMAGE_SHIFT)
                        candidate_loop<2>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz,
                                          Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, capacity, stride, count, min_r2);
                    else if (shifted)
                        candidate_loop<0>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz,
                                          Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, capacity, stride, count, min_r2);
                    else
                        candidate_loop<1>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz,
                                          Lx, Ly, Lz, invLx, invLy, invLz, r_list2, out, capacity, stride, count, min_r2);
                    __syncwarp();
                }
            }
        }
#pragma unroll
        for (int a = 0; a < A; ++a) {
            if (active[a]) {
                nbr_count[i[a]] = count[a];
                most = count[a] > most ? count[a] : most;
                least = min_r2[a] < least ? min_r2[a] : least;
            }
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

extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_list_variant(LIST_KERNEL_ARGS) {
    build_list_rows_v<true>(LIST_KERNEL_PASS);
}

extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_list_variant_rint(LIST_KERNEL_ARGS) {
    build_list_rows_v<false>(LIST_KERNEL_PASS);
}
