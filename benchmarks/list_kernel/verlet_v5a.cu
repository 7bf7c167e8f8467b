// Full Verlet neighbour list from a cell list (counting-sorted particles).
//
// The rule (the CPU twin `_build_cpu` in verlet.py is the reference).  Cells have edge
// w >= r_list / 2.  For target atom i in cell c, visit the cells c + (dx, dy, dz), dz slowest, dx
// fastest, with d in [lo, hi] per dimension: lo = -min(2, (n-1)/2), hi = min(2, n/2), so that no
// cell is visited twice in small boxes.  A cell whose nearest face is farther than r_list from the
// atom is skipped (only in dimensions with n >= 5 cells, where the offsets are unambiguous); that
// leaves about a third of the candidates of a 27-cell stencil of edge r_list.  Inside each cell the
// atoms come in counting-sort order (stable).  j is a neighbour when |r_i - r_j|^2 < r_list^2
// (minimum image; requires L >= 2 r_list).  Column-major storage: nbr[k * stride + i], k < capacity;
// the true count is stored even past capacity so that the caller can grow the storage and rebuild.
//
// How the kernel gets there fast (same lists, same order as the rule above):
//
// * Cell rows.  Cells are numbered x fastest, so the cells of one row (fixed y, z) are consecutive
//   in the counting sort, and a stencil row (fixed dz, dy; dx from lo to hi) is one contiguous
//   range of sorted slots, or two where it crosses the periodic x boundary.  Its cells in dx order
//   and its atoms in slot order are exactly the order of the rule.  In "unwrapped" cell
//   coordinates u = cx + dx (u may be < 0 or >= nx) the row is a window of the row's periodic
//   repetition, and the position of cell u in that repetition is row_pos(u) below.
// * One warp per 32 consecutive slots of one cell row (a task).  All lanes share cy, cz, hence
//   the same absolute stencil rows.  A grid of n_rows * chunks_per_row tasks; a row with more than
//   chunks_per_row * 32 atoms is finished by its tasks in strides.
// * Staging.  For each stencil row the warp loads the union of its lanes' candidate ranges
//   (cells u0 .. u1) from global memory once, coalesced, into shared memory (LIST_STAGE candidates at a
//   time), and each lane then tests its own atom against its own contiguous part [ta, tb) of the
//   staged range, in order.  Cells whose face is beyond r_list are dropped from the two ends of a
//   lane's range (the face gap grows with |dx|), as the rule skips them.
// * Image shifts instead of rint (IMAGE_SHIFT kernel, every dimension with n >= 7 cells).  There
//   a candidate lies at most 2 cells away, |dx| < 3w <= 3L/7, so rint(ddx / L) in the rule is 0 for
//   a candidate that did not cross the periodic boundary and +-1 for one that did, and which one is
//   known from the cell row (y, z: the same for the warp) or the staged position (x).  The test
//   subtracts that shift (0 or +-L, the exact product L * rint(...)), so r^2 is bit for bit the
//   rule's, without three roundings to integer per candidate.  Smaller
//   boxes use the rule's rint (build_neighbor_list_rint).
// * Statistics (largest count, smallest r^2) are reduced in the warp, one atomic each per warp.
#ifndef real_t
#define real_t double
#endif
#ifndef COMPOSITE
#define COMPOSITE 0
#endif
#ifndef LIST_WARPS
#define LIST_WARPS 4          // warps per block of the list kernel (block = 32 * LIST_WARPS threads)
#endif
#ifndef LIST_MIN_BLOCKS
#define LIST_MIN_BLOCKS 1     // __launch_bounds__ minimum blocks per SM of the list kernel (register cap)
#endif
#ifndef LIST_STAGE
#define LIST_STAGE 128        // candidates staged in shared memory per warp at a time
#endif
#include "positions.cuh"

__device__ __forceinline__ int stencil_lo(int n) { int a = (n - 1) / 2; return -(a < 2 ? a : 2); }
__device__ __forceinline__ int stencil_hi(int n) { int b = n / 2; return b < 2 ? b : 2; }

// Distance from coordinate x (in [0, L), cell c of width w) to the nearest face of cell c + d.
__device__ __forceinline__ real_t face_gap(real_t x, int c, int d, real_t w, int n) {
    if (d == 0 || n < 5) return real_t(0);
    real_t f = x - c * w;                         // position inside the own cell
    return d > 0 ? (d * w - f) : (f + (-d - 1) * w);
}

// Position of unwrapped cell u (in [-n, 2n)) in the periodic repetition of one cell row: the row's
// cells start at cell_start[base], hold rc atoms from slot rb on; copy k = -1, 0, 1 starts at k * rc.
__device__ __forceinline__ int row_pos(const int* __restrict__ cell_start, int base, int rb, int rc, int u, int n) {
    int k = 0;
    if (u < 0) { u += n; k = -1; } else if (u >= n) { u -= n; k = 1; }
    return k * rc + cell_start[base + u] - rb;
}

struct __align__(16) Candidate { real_t x, y, z; int j; };

template <bool IMAGE_SHIFT>
__device__ __forceinline__ void build_list_rows(
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int order_is_identity,
    int nx, int ny, int nz, int chunks_per_row,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride,
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits)
{
    __shared__ Candidate staged_all[LIST_WARPS][LIST_STAGE];
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    Candidate* staged = staged_all[warp];
    const int task = blockIdx.x * LIST_WARPS + warp;
    const int row = task / chunks_per_row, chunk = task - row * chunks_per_row;
    if (row >= ny * nz) return;                   // whole warp
    const int cy = row % ny, cz = row / ny;
    const int row_first = cell_start[row * nx], row_end = cell_start[row * nx + nx];
    if (row_first + chunk * 32 >= row_end) return;
    const real_t wx = Lx / nx, wy = Ly / ny, wz = Lz / nz;
    const real_t skip2 = r_list2 * real_t(1.001);      // margin: rounding in the gaps never drops a pair
    int most = 0;                                       // this lane's largest count
    real_t least = r_list2;                             // and smallest r^2

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
        int count = 0;
        real_t min_r2 = r_list2;
        for (int dz = stencil_lo(nz); dz <= stencil_hi(nz); ++dz) {
            const real_t gz = face_gap(zi, cz, dz, wz, nz);
            const real_t gz2 = gz * gz;
            int z = cz + dz;
            real_t sz = 0;                                  // image shift of this row in z
            if (z < 0) { z += nz; sz = -Lz; } else if (z >= nz) { z -= nz; sz = Lz; }
            for (int dy = stencil_lo(ny); dy <= stencil_hi(ny); ++dy) {
                const real_t gy = face_gap(yi, cy, dy, wy, ny);
                const real_t gyz2 = gz2 + gy * gy;
                const bool use = active && gyz2 < skip2;
                if (!__any_sync(FULL, use)) continue;
                int y = cy + dy;
                real_t sy = 0;
                if (y < 0) { y += ny; sy = -Ly; } else if (y >= ny) { y -= ny; sy = Ly; }

                // This lane's cells: dx in [dxa, dxb], the far cells beyond r_list dropped.
                int dxa = stencil_lo(nx), dxb = stencil_hi(nx);
                if (use) {
                    for (; dxa < 0; ++dxa) { real_t g = face_gap(xi, cx, dxa, wx, nx); if (gyz2 + g * g < skip2) break; }
                    for (; dxb > 0; --dxb) { real_t g = face_gap(xi, cx, dxb, wx, nx); if (gyz2 + g * g < skip2) break; }
                }
                const int ua = cx + dxa, ub = cx + dxb;          // unwrapped cells
                const int u0 = __reduce_min_sync(FULL, use ? ua : 0x7fffffff);
                const int u1 = __reduce_max_sync(FULL, use ? ub : -0x7fffffff);
                const int base = (z * ny + y) * nx;
                const int rb = cell_start[base], rc = cell_start[base + nx] - rb;
                const int p0 = row_pos(cell_start, base, rb, rc, u0, nx);
                const int total = row_pos(cell_start, base, rb, rc, u1 + 1, nx) - p0;
                int ta = 0, tb = 0;                             // this lane's staged range
                if (use) {
                    ta = row_pos(cell_start, base, rb, rc, ua, nx) - p0;
                    tb = row_pos(cell_start, base, rb, rc, ub + 1, nx) - p0;
                }
                // x image shift: staged positions before t_switch come from cells u < 0 (-Lx) or
                // u < nx (0); from t_switch on, from u >= 0 (0) or u >= nx (+Lx).
                real_t sx_before = 0, sx_after = 0;
                int t_switch = tb;
                if (ua < 0) { sx_before = -Lx; t_switch = -p0; }
                else if (ub >= nx) { sx_after = Lx; t_switch = rc - p0; }

                for (int c0 = 0; c0 < total; c0 += LIST_STAGE) {
                    const int m = min(LIST_STAGE, total - c0);
                    for (int e = lane; e < m; e += 32) {
                        const int p = p0 + c0 + e;                  // in [-rc, 2 rc)
                        const int s = rb + p + (p < 0 ? rc : 0) - (p >= rc ? rc : 0);
                        const int j = order_is_identity ? s : cell_order[s];
                        Candidate q; int tj;
                        load_position(pos4, j, q.x, q.y, q.z, tj);
                        q.j = j;
                        staged[e] = q;
                    }
                    __syncwarp();
                    const int t_end = min(tb, c0 + m);
                    for (int t = max(ta, c0); t < t_end; ++t) {
                        const Candidate q = staged[t - c0];
                        real_t ddx = xi - q.x, ddy = yi - q.y, ddz = zi - q.z;
                        if (IMAGE_SHIFT) {
                            ddx -= t < t_switch ? sx_before : sx_after;
                            ddy -= sy;
                            ddz -= sz;
                        } else {
                            ddx -= Lx * rint(ddx * invLx);
                            ddy -= Ly * rint(ddy * invLy);
                            ddz -= Lz * rint(ddz * invLz);
                        }
                        const real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
                        if (r2 < r_list2 && q.j != i) {
                            if (count < capacity) nbr[(size_t)count * stride + i] = q.j;
                            ++count;
                            min_r2 = r2 < min_r2 ? r2 : min_r2;
                        }
                    }
                    __syncwarp();
                }
            }
        }
        if (active) {
            nbr_count[i] = count;
            most = count > most ? count : most;
            least = min_r2 < least ? min_r2 : least;
        }
    }
    // r^2 >= 0: the order of float bit patterns as unsigned integers is the order of the values.
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

// Every dimension with >= 7 cells: minimum image by the row's known shifts (see above).
extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_neighbor_list(LIST_KERNEL_ARGS) {
    build_list_rows<true>(LIST_KERNEL_PASS);
}

// Some dimension with < 7 cells: minimum image by rint, as in the rule.
extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_neighbor_list_rint(LIST_KERNEL_ARGS) {
    build_list_rows<false>(LIST_KERNEL_PASS);
}

// Displacement check: flag = 1 if any atom moved more than sqrt(limit2) since the last build
// (does nothing once the flag is set: in a captured step block the flag freezes the block).
extern "C" __global__ void displacement_exceeds(
    const real_t* __restrict__ pos4, const real_t* __restrict__ pos4_at_build, int n_local,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t limit2,
    int* __restrict__ flag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local || *flag) return;
    real_t x, y, z, x0, y0, z0; int t;
    load_position(pos4, i, x, y, z, t);
    load_position(pos4_at_build, i, x0, y0, z0, t);
    real_t dx = x - x0, dy = y - y0, dz = z - z0;
    dx -= Lx * rint(dx * invLx);
    dy -= Ly * rint(dy * invLy);
    dz -= Lz * rint(dz * invLz);
    if (dx * dx + dy * dy + dz * dz > limit2) *flag = 1;
}

// Periodic wrap into [0, L) with image counters, done at rebuilds (as LAMMPS does at re-neighbouring):
// x -= k L with k = floor(x / L), then one correction step for rounding.
extern "C" __global__ void wrap_positions(real_t* __restrict__ pos4, int* __restrict__ image, int n_local,
                                          real_t Lx, real_t Ly, real_t Lz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    real_t L[3] = {Lx, Ly, Lz};
    for (int d = 0; d < 3; ++d) {
        real_t x = pos4[4 * (size_t)i + d];
        if ((x < real_t(0) || x >= L[d]) && isfinite(x)) {   // non-finite: left for the blow-up check
            real_t k = floor(x / L[d]);
            x -= k * L[d];
            if (x >= L[d]) { x -= L[d]; k += 1; }
            if (x < real_t(0)) { x += L[d]; k -= 1; }
            image[3 * (size_t)i + d] += (int)k;
            pos4[4 * (size_t)i + d] = x;
        }
    }
}

#if COMPOSITE
#include "composite/float_float.cuh"
// The composite-precision wrap: the float-float coordinate x = hi + lo (pos4, pos_lo) becomes
// x - k (L + L_lo) with k = floor(hi / L), then one correction step for rounding, so that hi is
// in [0, L) as the cell binning and the neighbour stencil require (the value hi + lo may be a
// hair below 0).  Float-float arithmetic throughout (no float64).
extern "C" __global__ void wrap_positions_composite(float* __restrict__ pos4, float* __restrict__ pos_lo,
                                                    int* __restrict__ image, int n_local,
                                                    float Lx, float Ly, float Lz, float Lx_lo, float Ly_lo, float Lz_lo)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    const ff L[3] = {ff_make(Lx, Lx_lo), ff_make(Ly, Ly_lo), ff_make(Lz, Lz_lo)};
    for (int d = 0; d < 3; ++d) {
        size_t p = 4 * (size_t)i + d;
        ff x = ff_make(pos4[p], pos_lo[p]);
        if ((x.hi < 0.0f || x.hi >= L[d].hi) && isfinite(x.hi)) {   // non-finite: left for the blow-up check
            float k = floorf(x.hi / L[d].hi);
            x = ff_sub(x, ff_mul_f(L[d], k));
            if (x.hi >= L[d].hi) { x = ff_sub(x, L[d]); k += 1.0f; }
            if (x.hi < 0.0f) { x = ff_add(x, L[d]); k -= 1.0f; }
            if (x.hi >= L[d].hi) {
                // x in [L - ulp/2, L) rounds its high part up to L, which the cell binning and
                // the stencil would read as 0: keep hi just below L and put the rest in lo
                // (|lo| <= ulp(hi), slightly above the normalised bound; rounding error <= 2^-24 ulp(L)).
                float below = nextafterf(L[d].hi, 0.0f);
                x = ff_make(below, ieee_fadd(ieee_fsub(x.hi, below), x.lo));
            }
            image[3 * (size_t)i + d] += (int)k;
            pos4[p] = x.hi; pos_lo[p] = x.lo;
        }
    }
}
#endif
