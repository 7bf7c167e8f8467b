// Full Verlet neighbour list from a cell list (counting-sorted particles).
//
// The rule (the CPU twin `build_list_cpu` in cpu_builder.py is the reference).  Cells have edge
// w >= r_list / 2.  For target atom i in cell c, visit the cells c + (dx, dy, dz), dz slowest, dx
// fastest, with d in [lo, hi] per dimension: lo = -min(2, (n-1)/2), hi = min(2, n/2), so that no
// cell is visited twice in small boxes.  A cell whose nearest face is farther than r_list from the
// atom is skipped (only in dimensions with n >= 5 cells, where the offsets are unambiguous); that
// leaves about a third of the candidates of a 27-cell stencil of edge r_list.  Inside each cell the
// atoms come in counting-sort order (stable).  j is a neighbour when |r_i - r_j|^2 < r_list^2
// (minimum image; requires L >= 2 r_list).  Targets are the atoms i < n_targets (every atom in a
// serial run; a spatial domain's owned atoms, whose ghost rows after them are sources only).
// Column-major storage: nbr[k * stride + i], k < capacity;
// the true count is stored even past capacity so that the caller can grow the storage and rebuild.
//
// How the kernel gets there fast (same lists, same order as the rule above):
//
// * Cell rows.  Cells are numbered x fastest, so the cells of one row (fixed y, z) are consecutive
//   in the counting sort, and a stencil row (fixed dz, dy; dx from lo to hi) is one contiguous
//   range of sorted slots, or two where it crosses the periodic x boundary.  Its cells in dx order
//   and its atoms in slot order are exactly the order of the rule.  In "unwrapped" cell
//   coordinates u = cx + dx (u may be < 0 or >= nx) the row is a window of the row's periodic
//   repetition; row_cell(u) below gives its cell and copy (-1, 0, 1), and with the row's first
//   slot rb and atom count rc its position is copy * rc + cell_start[cell] - rb.
// * One warp per 32 consecutive slots of one cell row (a task).  All lanes share cy, cz, hence
//   the same absolute stencil rows.  A grid of n_rows * chunks_per_row tasks; a row with more than
//   chunks_per_row * 32 atoms is finished by its tasks in strides.  Tasks are numbered row-major
//   over the chunks every row fills and chunk-major over the rest (task_of), so the grid's surplus
//   tasks fill whole blocks that exit at once.
// * Staging.  For each stencil row the warp loads the union of its lanes' candidate ranges
//   (cells u0 .. u1) from global memory once, coalesced, into shared memory (LIST_STAGE candidates at a
//   time), and each lane then tests its own atom against its own contiguous part [ta, tb) of the
//   staged range, in order.  Cells whose face is beyond r_list are dropped from the two ends of a
//   lane's range (the face gap grows with |dx|), as the rule skips them; the image-shift kernel
//   (offsets -2 .. 2) does that with two selects per end from the x face gaps computed once per
//   task.  The window's cell bounds: lane l loads the start of boundary u0 + l and the lanes'
//   range ends come by shuffles (windows of >= 32 cells: six loads).  A lane's LIST_STAGE / 32
//   candidate loads are all in flight before the first is written to shared memory, without
//   branches (lanes past the stage's end load a copy of its last candidate into unused slots).
// * The candidate test is branch-free (predicated stores, a predicated min for the smallest r^2),
//   the next candidate is read from shared memory before this one's entry is stored, and a stencil
//   row in which no lane needs an image shift runs a loop without the shift subtractions (x - 0 ==
//   x: the same r^2).
// * Output ring.  Stores of list entries are the L2's load: one scattered 4-byte
//   store per entry fills a 32-byte sector each (Nsight Compute on v5a at 1M atoms: L2 at 78% of
//   its peak with 70 million sector writes).  So each lane puts its entries in a ring of LIST_RING
//   rows in shared memory (ring[row][lane]: no bank conflict; the slot from a running byte
//   offset), and after each stencil plane the warp writes the rows every active lane has reached,
//   one row k at a time: entries k of 32 consecutive atoms are contiguous in the column-major
//   storage (4-5 sectors instead of up to 32).  A lane that would get LIST_RING rows ahead of the
//   slowest lane stores its further entries directly; a staged part in which no lane can reach
//   its ring limit (a warp vote) skips that check.
// * Image shifts instead of rint (IMAGE_SHIFT kernel, every dimension with n >= 7 cells).  There
//   a candidate lies at most 2 cells away, |dx| < 3w <= 3L/7, so rint(ddx / L) in the rule is 0 for
//   a candidate that did not cross the periodic boundary and +-1 for one that did, and which one is
//   known from the cell row (y, z: the same for the warp) or the staged position (x).  The test
//   subtracts that shift (0 or +-L, the exact product L * rint(...)), so r^2 is bit for bit the
//   rule's, without three roundings to integer per candidate.  Smaller
//   boxes use the rule's rint (build_neighbor_list_rint).
// * Statistics (largest count, smallest r^2) are reduced in the warp, one atomic each per warp.
//
// Figures of each of these steps: docs/notes-lj-performance.md (v5, v7, v8c and "the list kernel,
// v10": Nsight Compute's instructions by source line, and what each change took off).
#ifndef real_t
#define real_t double
#endif
#ifndef COMPOSITE
#define COMPOSITE 0
#endif
#ifndef at_build_t
#define at_build_t real_t     // the positions at the last build: the positions' type, or float (mixed precision)
#endif
#ifndef LIST_WARPS
#define LIST_WARPS 4          // warps per block of the list kernel (block = 32 * LIST_WARPS threads)
#endif
#ifndef LIST_MIN_BLOCKS
// __launch_bounds__ minimum blocks per SM of the list kernel (register cap): single precision 6
// (80 registers, 24 warps per SM, no spills; faster than uncapped: docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "register caps")
#define LIST_MIN_BLOCKS (sizeof(real_t) == 4 ? 6 : 1)
#endif
#ifndef LIST_STAGE
#define LIST_STAGE 64         // candidates staged in shared memory per warp at a time (a multiple of 32)
#endif
#ifndef LIST_RING
// rows of the per-warp output ring (a power of two, >= 2).  64: a lane rarely runs
// a ring ahead of the slowest lane of its warp, so most stencil rows take the loop without the
// direct-store path (the lists are the same for any size; 64 is faster than 32:
// docs/notes-lj-performance.md, "The output ring of 64 rows")
#define LIST_RING 64
#endif
#include "positions.cuh"
#include "control_layout.cuh"    // the step control array's layout (CONTROL_*)
#include "binning.cuh"           // cell_key, count_into_bin, rank_bins (shared with counting_sort.cu)

// How the list kernel finds the rows of pos4 and the atoms' indices (its row_mode argument):
// the atom in sorted slot s is row cell_order[s], whose index is that row (a spatial domain's
// build, no reorder); row s, index s (the atoms were reordered by cell); row s, index in the
// bits of the row's w (a copy of the positions in cell order, sort_bins_rows below: a build that
// defers the reorder).  The lists always name atoms by index.
#define ROWS_VIA_ORDER 0
#define ROWS_IN_SLOT_ORDER 1
#define ROWS_INDEX_IN_W 2


__device__ __forceinline__ int stencil_lo(int n) { int a = (n - 1) / 2; return -(a < 2 ? a : 2); }
__device__ __forceinline__ int stencil_hi(int n) { int b = n / 2; return b < 2 ? b : 2; }

// Distance to the nearest face of the cell at offset d along a dimension with >= 5 cells of width
// w, from the position f inside the own cell.
__device__ __forceinline__ real_t offset_gap(real_t f, int d, real_t w) {
    return d == 0 ? real_t(0) : (d > 0 ? d * w - f : f + (-d - 1) * w);
}

// Distance from coordinate x (in [0, L), cell c of width w) to the nearest face of cell c + d
// (0 with fewer than 5 cells, where an offset may reach a cell from both sides).
__device__ __forceinline__ real_t face_gap(real_t x, int c, int d, real_t w, int n) {
    return n < 5 ? real_t(0) : offset_gap(x - c * w, d, w);     // x - c w: the position inside the own cell
}

// Unwrapped cell u in [-n, 2n) of a cell row: its cell index in the row (u mod n), and which copy
// of the row's periodic repetition it is in (-1, 0, 1).
__device__ __forceinline__ int row_cell(int u, int n, int& copy) {
    copy = u < 0 ? -1 : (u >= n ? 1 : 0);
    return u - copy * n;
}

struct __align__(16) Candidate { real_t x, y, z; int j; };

// Entry k of the column `out` (k * stride ints further on; stride * 4 < 2^32).
__device__ __forceinline__ int* entry(int* out, int k, int stride) {
    return reinterpret_cast<int*>(reinterpret_cast<char*>(out) + (size_t)(unsigned)k * (4u * (unsigned)stride));
}

// A predicated global store (no branch: in a warp some lane almost always stores).  No "memory"
// clobber: the kernel's shared-memory loads may be scheduled across it (the warp barriers order
// what must be ordered).
__device__ __forceinline__ void store_if(bool p, int* addr, int value) {
    asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.global.b32 [%0], %1;\n\t}"
                 :: "l"(addr), "r"(value), "r"((int)p));
}

// The output ring: row r of a lane at ring + 32 (r mod LIST_RING), ring = ring_all[warp] + lane.
__device__ __forceinline__ int* ring_at(int* ring, int r) { return ring + 32 * (r & (LIST_RING - 1)); }

// Rows [k0, k1) of the ring (the same bounds for the whole warp) to the column `out`, one row of the
// warp per store (entries k of 32 consecutive atoms are contiguous); this lane stores rows below kend.
__device__ __forceinline__ void flush_rows(int* ring, int* out, int stride, int k0, int k1, int kend) {
    int* column = entry(out, k0, stride);
    for (int k = k0; k < k1; ++k) {
        store_if(k < kend, column, *ring_at(ring, k));
        column += stride;
    }
}

// m = p ? min(m, r2) : m in one predicated instruction (the select form compiles to three); r2 of an
// accepted pair is never NaN.
__device__ __forceinline__ void min_if(bool p, float& m, float r2) {
    asm("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q min.f32 %0, %0, %1;\n\t}" : "+f"(m) : "f"(r2), "r"((int)p));
}
__device__ __forceinline__ void min_if(bool p, double& m, double r2) { m = (p && r2 < m) ? r2 : m; }

// The rule's minimum-image difference of one candidate.  MODE 0: image shifts (the x shift switches
// at t_switch); 1: no shift (every shift of the row is 0: x - 0 == x, the same r^2); 2: rint.
template <int MODE>
__device__ __forceinline__ real_t candidate_r2(const Candidate& q, int t, real_t xi, real_t yi, real_t zi,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz)
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
    return ddx * ddx + ddy * ddy + ddz * ddz;
}

// The candidate loop of one lane over staged[lo - c0 .. hi - c0): the rule's r^2 in the rule's
// operation order.  STORE 1: every entry to the ring (no lane can pass its ring limit here: the
// common case); 2: to the ring below the ring limit, directly from there on.  RING_SHIFT: log2 of
// the bytes of a ring row of 32 entries: 7 (int entries) or, with STORE 1 only, 6 (16-bit entries:
// the plane kernel's rings when every row index is below 2^16).
template <int MODE, int STORE, int RING_SHIFT = 7>
__device__ __forceinline__ void candidate_loop(
    const Candidate* staged, int c0, int lo, int hi, real_t xi, real_t yi, real_t zi, int i,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* out, int* ring, int ring_limit, int capacity, int stride, int& count, real_t& min_r2)
{
    if (STORE == 1) {
        // The ring slot from a running byte offset (count * 128) into this lane's ring column, the
        // next candidate loaded before this one's store (staged has one slot of padding; lo may
        // lie past this stage when the range is empty), unrolled by two.
        static_assert(RING_SHIFT == 7 || (RING_SHIFT == 6 && STORE == 1), "ring entries of 4 or 2 bytes");
        constexpr unsigned ROW = 1u << RING_SHIFT;
        const unsigned ring_lane = (unsigned)__cvta_generic_to_shared(ring);
        unsigned offset = (unsigned)count << RING_SHIFT;
        Candidate next = staged[min(lo - c0, LIST_STAGE)];
#pragma unroll 2
        for (int t = lo; t < hi; ++t) {
            const Candidate q = next;
            next = staged[t + 1 - c0];
            const real_t r2 = candidate_r2<MODE>(q, t, xi, yi, zi, t_switch, sx_before, sx_after, sy, sz,
                                                 Lx, Ly, Lz, invLx, invLy, invLz);
            const bool accept = r2 < r_list2 && q.j != i;
            if (RING_SHIFT == 7)
                asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.shared.b32 [%0], %1;\n\t}"
                             :: "r"(ring_lane + (offset & (ROW * LIST_RING - ROW))), "r"(q.j), "r"((int)accept));
            else
                asm volatile("{\n\t.reg .pred q;\n\tsetp.ne.b32 q, %2, 0;\n\t@q st.shared.b16 [%0], %1;\n\t}"
                             :: "r"(ring_lane + (offset & (ROW * LIST_RING - ROW))), "h"((unsigned short)q.j),
                                "r"((int)accept));
            min_if(accept, min_r2, r2);
            if (accept) offset += ROW;
        }
        count = (int)(offset >> RING_SHIFT);
    } else {
        for (int t = lo; t < hi; ++t) {
            const Candidate q = staged[t - c0];
            const real_t r2 = candidate_r2<MODE>(q, t, xi, yi, zi, t_switch, sx_before, sx_after, sy, sz,
                                                 Lx, Ly, Lz, invLx, invLy, invLz);
            const bool accept = r2 < r_list2 && q.j != i;
            if (accept && count < ring_limit) *ring_at(ring, count) = q.j;
            store_if(accept && count >= ring_limit && count < capacity, entry(out, count, stride), q.j);
            min_if(accept, min_r2, r2);
            count += accept;
        }
    }
}

// The candidate loop of the row's kind: rint (small boxes), image shifts, or none.
template <bool IMAGE_SHIFT, int STORE, int RING_SHIFT = 7>
__device__ __forceinline__ void candidate_loops(
    bool shifted, const Candidate* staged, int c0, int lo, int hi, real_t xi, real_t yi, real_t zi, int i,
    int t_switch, real_t sx_before, real_t sx_after, real_t sy, real_t sz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* out, int* ring, int ring_limit, int capacity, int stride, int& count, real_t& min_r2)
{
    if (!IMAGE_SHIFT)
        candidate_loop<2, STORE, RING_SHIFT>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring, ring_limit, capacity, stride, count, min_r2);
    else if (shifted)
        candidate_loop<0, STORE, RING_SHIFT>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring, ring_limit, capacity, stride, count, min_r2);
    else
        candidate_loop<1, STORE, RING_SHIFT>(staged, c0, lo, hi, xi, yi, zi, i, t_switch, sx_before, sx_after, sy, sz, Lx, Ly, Lz,
                                 invLx, invLy, invLz, r_list2, out, ring, ring_limit, capacity, stride, count, min_r2);
}

// The warp's task -> (cell row, chunk of 32 atoms of it): row-major over the chunks [0, c0) that a
// row of the mean occupancy minus four standard deviations fills, chunk-major over the rest, where
// the grid's surplus tasks (mean + 4 sigma per row) lie: those then fill whole blocks that exit at
// once instead of idling beside busy warps.  A bijection of the tasks; false: no such task.
__device__ __forceinline__ bool task_of(int task, int n_rows, int chunks_per_row, int n_targets, int& row, int& chunk) {
    const float mean = (float)n_targets / (float)n_rows;
    const int c0 = min(chunks_per_row, max(0, (int)floorf((mean - 4.0f * sqrtf(mean)) / 32.0f)));
    if (task < n_rows * c0) {
        row = task / c0;
        chunk = task - row * c0;
        return true;
    }
    const int t = task - n_rows * c0;
    chunk = c0 + t / n_rows;
    row = t - (chunk - c0) * n_rows;
    return chunk < chunks_per_row;
}

// What the stencil loops need of the grid, the box and the list storage: the same for every task.
struct ListGrid {
    const real_t* __restrict__ pos4;
    const int* __restrict__ cell_start;
    const int* __restrict__ cell_order;
    int row_mode, nx, ny, nz, capacity, stride;
    real_t Lx, Ly, Lz, invLx, invLy, invLz, r_list2, skip2, wx, wy, wz;
};

// One lane's target of a task (active false: none, i = -1) and what its stencil needs of it.
struct ListTarget {
    real_t xi, yi, zi;
    int i, cx;
    bool active;
    real_t fy, fz;                              // the position inside the own cell along y, z
    real_t gx_m2s, gx_m1s, gx_p1s, gx_p2s;      // squared x face gaps of cells cx - 2, cx - 1, cx + 1, cx + 2
};

// The lane's target in sorted slot `slot` of cell row `row` (none past row_end): its row of pos4
// (row_mode: the slot, or through cell_order) loaded once, its atom index (the row's, or the one
// the row carries in w), its cell along x and the face gaps along x (face_gap's expressions, for
// the image-shift kernel).  Targets are the atoms i < n_targets (every atom in a serial run; a
// spatial domain's owned atoms, whose ghost rows after them are sources only).
__device__ __forceinline__ ListTarget load_target(const ListGrid& g, const int* __restrict__ cell_of, int slot,
                                                  int row_end, int row, int cy, int cz, int n_targets)
{
    ListTarget t;
    t.i = -1;
    t.xi = t.yi = t.zi = 0;
    if (slot < row_end) {
        const int i_row = g.row_mode == ROWS_VIA_ORDER ? g.cell_order[slot] : slot;
        unsigned int wi;
        load_position_bits(g.pos4, i_row, t.xi, t.yi, t.zi, wi);
        t.i = g.row_mode == ROWS_INDEX_IN_W ? (int)wi : i_row;
    }
    t.active = t.i >= 0 && t.i < n_targets;
    t.cx = 0;
    if (t.active) {
        t.cx = cell_of[t.i] - row * g.nx;
    } else {
        t.i = -1;
        t.xi = t.yi = t.zi = 0;
    }
    const real_t fx = t.xi - t.cx * g.wx;
    t.fy = t.yi - cy * g.wy;
    t.fz = t.zi - cz * g.wz;
    const real_t gx_m2 = offset_gap(fx, -2, g.wx), gx_m1 = offset_gap(fx, -1, g.wx);
    const real_t gx_p1 = offset_gap(fx, 1, g.wx), gx_p2 = offset_gap(fx, 2, g.wx);
    t.gx_m2s = gx_m2 * gx_m2; t.gx_m1s = gx_m1 * gx_m1; t.gx_p1s = gx_p1 * gx_p1; t.gx_p2s = gx_p2 * gx_p2;
    return t;
}

// Stencil plane dz of a task (rows dy = y_lo .. y_hi, each one range of sorted slots, see above):
// each lane's entries of the plane, in the rule's order, appended after its `count` entries.
// SPLIT false (a warp lists all planes of its atoms, list_chunk_by_warp): entries below ring_limit
// go to the ring, the rest directly to the column `out`.  SPLIT true (a warp per plane,
// build_neighbor_list_planes): every entry goes to the ring (of 16-bit entries with RING_SHIFT 6);
// if some lane's would pass ring_limit, the plane sets `overflow` and stops (the block then lists
// the task by warp).
template <bool IMAGE_SHIFT, bool SPLIT, int RING_SHIFT = 7>
__device__ __forceinline__ void list_plane(const ListGrid& g, const ListTarget& t, int dz, int cy, int cz,
                                           Candidate* staged, int* out, int* ring, int ring_limit,
                                           int& count, real_t& min_r2, bool& overflow)
{
    constexpr int PER_LANE = LIST_STAGE / 32;
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31;
    const int y_lo = IMAGE_SHIFT ? -2 : stencil_lo(g.ny), y_hi = IMAGE_SHIFT ? 2 : stencil_hi(g.ny);
    const int nx = g.nx, ny = g.ny, nz = g.nz;
    const real_t gz = IMAGE_SHIFT ? offset_gap(t.fz, dz, g.wz) : face_gap(t.zi, cz, dz, g.wz, nz);
    const real_t gz2 = gz * gz;
    int z = cz + dz;
    real_t sz = 0;
    if (z < 0) { z += nz; sz = -g.Lz; } else if (z >= nz) { z -= nz; sz = g.Lz; }
    for (int dy = y_lo; dy <= y_hi; ++dy) {
        const real_t gy = IMAGE_SHIFT ? offset_gap(t.fy, dy, g.wy) : face_gap(t.yi, cy, dy, g.wy, ny);
        const real_t gyz2 = gz2 + gy * gy;
        const bool use = t.active && gyz2 < g.skip2;
        if (!__any_sync(FULL, use)) continue;
        int y = cy + dy;
        real_t sy = 0;
        if (y < 0) { y += ny; sy = -g.Ly; } else if (y >= ny) { y -= ny; sy = g.Ly; }

        // this lane's cells along x: those whose face is within r_list (branch-free selects in the
        // image-shift kernel)
        int dxa, dxb;
        if (IMAGE_SHIFT) {
            dxa = gyz2 + t.gx_m2s < g.skip2 ? -2 : (gyz2 + t.gx_m1s < g.skip2 ? -1 : 0);
            dxb = gyz2 + t.gx_p2s < g.skip2 ? 2 : (gyz2 + t.gx_p1s < g.skip2 ? 1 : 0);
        } else {
            dxa = stencil_lo(nx), dxb = stencil_hi(nx);
            if (use) {
                for (; dxa < 0; ++dxa) { real_t gx = face_gap(t.xi, t.cx, dxa, g.wx, nx); if (gyz2 + gx * gx < g.skip2) break; }
                for (; dxb > 0; --dxb) { real_t gx = face_gap(t.xi, t.cx, dxb, g.wx, nx); if (gyz2 + gx * gx < g.skip2) break; }
            }
        }
        const int ua = t.cx + dxa, ub = t.cx + dxb;
        const int u0 = __reduce_min_sync(FULL, use ? ua : 0x7fffffff);
        const int u1 = __reduce_max_sync(FULL, use ? ub : -0x7fffffff);
        // Positions in the row's unwrapped slot sequence (relative to the row's first slot rb): the
        // warp's window p0 .. p0 + total, this lane's part [ta, tb) of it.  Windows of < 32 cells:
        // lane l loads the start of cell boundary u0 + l, and the lanes' bounds come by shuffles
        // (three loads per lane); wider ones load the six bounds.
        const int* const cs = g.cell_start + (z * ny + y) * nx;
        int rb, rc, p0, total, ta, tb;
        const int span = u1 + 1 - u0;
        if (span < 32) {
            int kw;
            const int ew = row_cell(u0 + min(lane, span), nx, kw);
            rb = cs[0];
            const int re = cs[nx], sw = cs[ew];
            rc = re - rb;
            const int pw = kw * rc + sw - rb;               // boundary u0 + lane
            p0 = __shfl_sync(FULL, pw, 0);
            total = __shfl_sync(FULL, pw, span) - p0;
            const int pa = __shfl_sync(FULL, pw, use ? ua - u0 : 0);
            const int pb = __shfl_sync(FULL, pw, use ? ub + 1 - u0 : 0);
            ta = use ? pa - p0 : 0;
            tb = use ? pb - p0 : 0;
        } else {
            int k0, k1, ka, kb;
            const int e0 = row_cell(u0, nx, k0), e1 = row_cell(u1 + 1, nx, k1);
            const int ea = row_cell(ua, nx, ka), eb = row_cell(ub + 1, nx, kb);
            rb = cs[0];
            const int re = cs[nx], s0 = cs[e0], s1 = cs[e1], sa = cs[ea], sb = cs[eb];
            rc = re - rb;
            p0 = k0 * rc + s0 - rb;
            total = k1 * rc + s1 - rb - p0;
            ta = use ? ka * rc + sa - rb - p0 : 0;
            tb = use ? kb * rc + sb - rb - p0 : 0;
        }
        real_t sx_before = 0, sx_after = 0;
        int t_switch = tb;
        if (ua < 0) { sx_before = -g.Lx; t_switch = -p0; }
        else if (ub >= nx) { sx_after = g.Lx; t_switch = rc - p0; }
        const bool shifted = IMAGE_SHIFT &&
            __any_sync(FULL, sy != real_t(0) || sz != real_t(0) || (use && (ua < 0 || ub >= nx)));

        for (int c0 = 0; c0 < total; c0 += LIST_STAGE) {
            const int m = min(LIST_STAGE, total - c0);
            // staging without branches: lanes past the m candidates load (and store into slots this
            // stage does not use) a copy of the last one; loads first, all in flight
            Candidate q[PER_LANE];
#pragma unroll
            for (int r = 0; r < PER_LANE; ++r) {
                const int p = p0 + c0 + min(lane + 32 * r, m - 1);
                const int s = rb + p + (p < 0 ? rc : 0) - (p >= rc ? rc : 0);
                const int j = g.row_mode == ROWS_VIA_ORDER ? g.cell_order[s] : s;
                unsigned int wj;
                load_position_bits(g.pos4, j, q[r].x, q[r].y, q[r].z, wj);
                q[r].j = g.row_mode == ROWS_INDEX_IN_W ? (int)wj : j;
            }
#pragma unroll
            for (int r = 0; r < PER_LANE; ++r) staged[lane + 32 * r] = q[r];
            __syncwarp();
            const int lo = max(ta, c0), hi = max(lo, min(tb, c0 + m));
            // no lane can pass its ring limit in this part: every entry goes to the ring
            const bool fits = __all_sync(FULL, count + (hi - lo) <= ring_limit);
            if (SPLIT && !fits) {
                overflow = true;                // the whole warp (a vote): the block redoes the task
                return;
            }
            if (fits)
                candidate_loops<IMAGE_SHIFT, 1, RING_SHIFT>(shifted, staged, c0, lo, hi, t.xi, t.yi, t.zi, t.i, t_switch,
                    sx_before, sx_after, sy, sz, g.Lx, g.Ly, g.Lz, g.invLx, g.invLy, g.invLz, g.r_list2, out,
                    ring, ring_limit, g.capacity, g.stride, count, min_r2);
            else if (!SPLIT)
                candidate_loops<IMAGE_SHIFT, 2>(shifted, staged, c0, lo, hi, t.xi, t.yi, t.zi, t.i, t_switch,
                    sx_before, sx_after, sy, sz, g.Lx, g.Ly, g.Lz, g.invLx, g.invLy, g.invLz, g.r_list2, out,
                    ring, ring_limit, g.capacity, g.stride, count, min_r2);
            __syncwarp();
        }
    }
}

// One warp lists every plane of its 32 targets: the entries in its ring, flushed after each plane
// (the rows every active lane has reached, one row of the warp per store), a lane that runs a ring
// ahead of the slowest storing directly.  The true counts to nbr_count (past the capacity too);
// `most` and `least` take this task's largest count and smallest r^2.
template <bool IMAGE_SHIFT>
__device__ __forceinline__ void list_chunk_by_warp(const ListGrid& g, const ListTarget& t, int cy, int cz,
                                                   Candidate* staged, int* ring, int* __restrict__ nbr,
                                                   int* __restrict__ nbr_count, int& most, real_t& least)
{
    const unsigned FULL = 0xffffffffu;
    const int z_lo = IMAGE_SHIFT ? -2 : stencil_lo(g.nz), z_hi = IMAGE_SHIFT ? 2 : stencil_hi(g.nz);
    const int capacity = g.capacity, stride = g.stride;
    const bool active = t.active;
    int* const out = nbr + (active ? t.i : 0);                 // this atom's column
    int count = 0;
    real_t min_r2 = g.r_list2;
    int flushed = 0;                   // rows [0, flushed) are written for every lane
    int ring_limit = min(LIST_RING, capacity);   // entries below it go to the ring
    int direct_from = 0x7fffffff;      // this lane's first entry written directly
    bool overflow = false;             // (only a split plane overflows)
    for (int dz = z_lo; dz <= z_hi; ++dz) {
        list_plane<IMAGE_SHIFT, false>(g, t, dz, cy, cz, staged, out, ring, ring_limit, count, min_r2, overflow);
        // After each stencil plane but the last (the task's end writes the rest): a lane that passed
        // its ring limit stores its entries from there on directly; the rows every active lane has
        // (in the ring, or written directly) are written, one row of the warp per store.  The
        // ring-limit vote per stage keeps the lists independent of when this runs.
        if (dz < z_hi) {
            if (direct_from == 0x7fffffff && count > ring_limit && ring_limit < capacity) direct_from = ring_limit;
            const int done = __reduce_min_sync(FULL, active ? min(count, capacity) : 0x7fffffff);
            if (flushed < done) flush_rows(ring, out, stride, flushed, done, active ? min(done, direct_from) : 0);
            flushed = max(flushed, done);
            ring_limit = direct_from != 0x7fffffff ? 0 : min(flushed + LIST_RING, capacity);
        }
    }
    // the rows some lanes have not reached
    if (direct_from == 0x7fffffff && count > ring_limit && ring_limit < capacity) direct_from = ring_limit;
    const int last = __reduce_max_sync(FULL, active ? min(count, capacity) : 0);
    if (flushed < last)
        flush_rows(ring, out, stride, flushed, last, active ? min(min(count, capacity), direct_from) : 0);
    if (active) {
        nbr_count[t.i] = count;
        most = count > most ? count : most;
        least = min_r2 < least ? min_r2 : least;
    }
}

// The launch's statistics: this warp's largest count and smallest r^2 (float bits), one atomic each.
__device__ __forceinline__ void reduce_list_stats(int most, real_t least, int* __restrict__ max_count,
                                                  unsigned int* __restrict__ min_r2_bits)
{
    const unsigned FULL = 0xffffffffu;
    const int warp_most = __reduce_max_sync(FULL, most);
    const unsigned warp_least = __reduce_min_sync(FULL, __float_as_uint((float)least));
    if ((threadIdx.x & 31) == 0) {
        atomicMax(max_count, warp_most);
        atomicMin(min_r2_bits, warp_least);
    }
}

#define LIST_KERNEL_ARGS                                                                              \
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,                                 \
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int row_mode,             \
    int nx, int ny, int nz, int chunks_per_row,                                                       \
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,        \
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride, int n_targets,      \
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits

__device__ __forceinline__ ListGrid make_list_grid(const real_t* pos4, const int* cell_start, const int* cell_order,
                                                   int row_mode, int nx, int ny, int nz, real_t Lx, real_t Ly,
                                                   real_t Lz, real_t invLx, real_t invLy, real_t invLz,
                                                   real_t r_list2, int capacity, int stride)
{
    ListGrid g;
    g.pos4 = pos4; g.cell_start = cell_start; g.cell_order = cell_order;
    g.row_mode = row_mode; g.nx = nx; g.ny = ny; g.nz = nz; g.capacity = capacity; g.stride = stride;
    g.Lx = Lx; g.Ly = Ly; g.Lz = Lz; g.invLx = invLx; g.invLy = invLy; g.invLz = invLz;
    g.r_list2 = r_list2;
    g.skip2 = r_list2 * real_t(1.001);
    g.wx = Lx / nx; g.wy = Ly / ny; g.wz = Lz / nz;
    return g;
}

// One warp per task (32 slots of a cell row), LIST_WARPS tasks per block.
template <bool IMAGE_SHIFT>
__device__ __forceinline__ void build_list_rows(LIST_KERNEL_ARGS)
{
    __shared__ int ring_all[LIST_WARPS][LIST_RING * 32];
    __shared__ Candidate staged_all[LIST_WARPS][LIST_STAGE + 1];   // + 1: the candidate loop reads one ahead
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int row, chunk;
    if (!task_of(blockIdx.x * LIST_WARPS + warp, ny * nz, chunks_per_row, n_targets, row, chunk)) return;
    const int cy = row % ny, cz = row / ny;
    const int row_first = cell_start[row * nx], row_end = cell_start[row * nx + nx];
    if (row_first + chunk * 32 >= row_end) return;
    const ListGrid g = make_list_grid(pos4, cell_start, cell_order, row_mode, nx, ny, nz, Lx, Ly, Lz,
                                      invLx, invLy, invLz, r_list2, capacity, stride);
    int most = 0;
    real_t least = r_list2;
    for (int first = row_first + chunk * 32; first < row_end; first += chunks_per_row * 32) {
        const ListTarget t = load_target(g, cell_of, first + lane, row_end, row, cy, cz, n_targets);
        // a chunk of source rows only (a domain's ghosts) has nothing to list; skipping it also
        // keeps the plane flushes from seeing no active lane (their bound would be INT_MAX)
        if (!__any_sync(FULL, t.active)) continue;
        list_chunk_by_warp<IMAGE_SHIFT>(g, t, cy, cz, staged_all[warp], ring_all[warp] + lane, nbr, nbr_count,
                                        most, least);
    }
    reduce_list_stats(most, least, max_count, min_r2_bits);
}

#define LIST_KERNEL_PASS                                                                              \
    pos4, cell_of, cell_start, cell_order, row_mode, nx, ny, nz, chunks_per_row,                      \
    Lx, Ly, Lz, invLx, invLy, invLz, r_list2, nbr, nbr_count, capacity, stride, n_targets,           \
    max_count, min_r2_bits

// The list kernels' entry points.  With TARGETS_ON_DEVICE (a spatial domain's build on the device,
// pycumd/parallel/device_build.py) the target count, which is also the lists' stride, is read from
// device memory (`targets`) instead of the two int arguments.
#ifdef TARGETS_ON_DEVICE
#define LIST_ENTRY_ARGS                                                                               \
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,                                 \
    const int* __restrict__ cell_start, const int* __restrict__ cell_order, int row_mode,             \
    int nx, int ny, int nz, int chunks_per_row,                                                       \
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,        \
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, const int* __restrict__ targets, \
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits
#define LIST_ENTRY_PASS                                                                               \
    pos4, cell_of, cell_start, cell_order, row_mode, nx, ny, nz, chunks_per_row,                      \
    Lx, Ly, Lz, invLx, invLy, invLz, r_list2, nbr, nbr_count, capacity, *targets, *targets,           \
    max_count, min_r2_bits
#else
#define LIST_ENTRY_ARGS LIST_KERNEL_ARGS
#define LIST_ENTRY_PASS LIST_KERNEL_PASS
#endif

// Every dimension with >= 7 cells: minimum image by the row's known shifts (see above).
extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_neighbor_list(LIST_ENTRY_ARGS) {
    build_list_rows<true>(LIST_ENTRY_PASS);
}

// Some dimension with < 7 cells: minimum image by rint, as in the rule.
extern "C" __global__ void __launch_bounds__(32 * LIST_WARPS, LIST_MIN_BLOCKS) build_neighbor_list_rint(LIST_ENTRY_ARGS) {
    build_list_rows<false>(LIST_ENTRY_PASS);
}

#ifndef PLANE_WARPS
// warps per task of build_neighbor_list_planes: 3 (planes -2 and -1; 0; 1 and 2: about a third of
// the entries each) or 5 (a plane each: no faster, and slower for larger systems;
// docs/data/list_kernel_planes_sweep_h100_2026-11-24.log)
#define PLANE_WARPS 3
#endif
#ifndef PLANE_RING
#define PLANE_RING 64          // rows of each warp's ring in build_neighbor_list_planes (<= LIST_RING)
#endif
#ifndef PLANE_MIN_BLOCKS
// __launch_bounds__ minimum blocks per SM (no register cap in effect: 80 registers; the shared memory
// of three 64-row rings, 28 KB a block, and the registers allow 8)
#define PLANE_MIN_BLOCKS 4
#endif
#ifndef PLANE_MIN_BLOCKS_16
// The same for build_neighbor_list_planes16, whose rings of 16-bit entries take 16 KB a block: the
// register cap decides how many blocks an SM holds
#define PLANE_MIN_BLOCKS_16 10
#endif

// The stencil planes of warp w of build_neighbor_list_planes: [plane_lo(w), plane_hi(w)].
__device__ __forceinline__ int plane_lo(int w) { return PLANE_WARPS == 5 ? w - 2 : (w == 0 ? -2 : w == 1 ? 0 : 1); }
__device__ __forceinline__ int plane_hi(int w) { return PLANE_WARPS == 5 ? w - 2 : (w == 0 ? -1 : w == 1 ? 0 : 2); }

// REAL_IS_FLOAT_OF(real_t): 1 when real_t is float (REAL_IS_FLOAT_float), 0 otherwise (an undefined
// name in #if): the plane kernel's shared memory is sized for float32 rows
#define REAL_IS_FLOAT_float 1
#define REAL_IS_FLOAT_PASTE(t) REAL_IS_FLOAT_##t
#define REAL_IS_FLOAT_OF(t) REAL_IS_FLOAT_PASTE(t)
#if REAL_IS_FLOAT_OF(real_t)
// The same lists with a block of PLANE_WARPS warps per task, each taking consecutive stencil planes
// (plane_lo .. plane_hi of the image-shift kernel's -2 .. 2), for launches too small to fill the GPU
// with one warp per task (verlet.py's PLANE_SPLIT_ATOMS): each warp's chain of stencil rows is a
// third (a fifth) as long.  Each warp puts its planes' entries in its own ring (PLANE_RING rows a
// lane), and after a block barrier they are concatenated per lane in plane order -- the rule's
// order -- and written row by row, row k of the 32 targets by warp k mod PLANE_WARPS.  If some lane
// would pass its ring (a dense clump, a long cutoff), the block lists that task by warp instead
// (list_chunk_by_warp, by its first warp, in the rings' memory), so the lists are the same in every
// case.  Single precision rows only (the shared memory of the rings).
//
// The rings hold the entries as ints (RingEntry int, RING_SHIFT 7), or as 16-bit numbers when every
// row index is below 2^16 (unsigned short, 6; build_neighbor_list_planes16): half the shared memory,
// so that more blocks fit on an SM (and a small system's launch in one wave).
template <typename RingEntry, int RING_SHIFT>
__device__ __forceinline__ void list_rows_by_planes(LIST_KERNEL_ARGS)
{
    static_assert(PLANE_RING <= LIST_RING && PLANE_WARPS * PLANE_RING >= LIST_RING, "plane rings");
    static_assert(sizeof(RingEntry) << 5 == 1u << RING_SHIFT, "a ring row: 32 entries");
    // warp w's ring: rows w * PLANE_RING ..; as ints, LIST_RING rows of the first warp's (the fallback)
    __shared__ int ring_words[(PLANE_WARPS * PLANE_RING * 32 * sizeof(RingEntry) + 3) / 4];
    static_assert(sizeof(ring_words) >= LIST_RING * 32 * sizeof(int), "the fallback's ring");
    RingEntry* const rings = reinterpret_cast<RingEntry*>(ring_words);
    __shared__ Candidate staged_all[PLANE_WARPS][LIST_STAGE + 1];
    __shared__ int plane_count[PLANE_WARPS][32];
    const unsigned FULL = 0xffffffffu;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int row, chunk;
    if (!task_of(blockIdx.x, ny * nz, chunks_per_row, n_targets, row, chunk)) return;     // the whole block
    const int cy = row % ny, cz = row / ny;
    const int row_first = cell_start[row * nx], row_end = cell_start[row * nx + nx];
    if (row_first + chunk * 32 >= row_end) return;
    const ListGrid g = make_list_grid(pos4, cell_start, cell_order, row_mode, nx, ny, nz, Lx, Ly, Lz,
                                      invLx, invLy, invLz, r_list2, capacity, stride);
    RingEntry* const ring = rings + warp * PLANE_RING * 32 + lane;
    int most = 0;
    real_t least = r_list2;
    for (int first = row_first + chunk * 32; first < row_end; first += chunks_per_row * 32) {
        // every warp loads the same 32 targets, so these branches are the whole block's
        const ListTarget t = load_target(g, cell_of, first + lane, row_end, row, cy, cz, n_targets);
        if (!__any_sync(FULL, t.active)) continue;
        int count = 0;
        real_t min_r2 = r_list2;
        bool overflow = false;
        for (int dz = plane_lo(warp); dz <= plane_hi(warp) && !overflow; ++dz)
            list_plane<true, true, RING_SHIFT>(g, t, dz, cy, cz, staged_all[warp], nullptr,
                                               reinterpret_cast<int*>(ring), PLANE_RING, count, min_r2, overflow);
        plane_count[warp][lane] = count;
        if (__syncthreads_or(overflow)) {
            if (warp == 0)
                list_chunk_by_warp<true>(g, t, cy, cz, staged_all[0], ring_words + lane, nbr, nbr_count, most, least);
        } else {
            // this lane's entries: warp p's from start[p]; total, the true count
            int start[PLANE_WARPS], total = 0;
#pragma unroll
            for (int p = 0; p < PLANE_WARPS; ++p) { start[p] = total; total += plane_count[p][lane]; }
            const int kend = t.active ? min(total, capacity) : 0;
            const int last = __reduce_max_sync(FULL, kend);
            int* const out = nbr + (t.active ? t.i : 0);
            for (int k = warp; k < last; k += PLANE_WARPS) {
                int p = 0, base = 0;
#pragma unroll
                for (int q = 1; q < PLANE_WARPS; ++q) if (k >= start[q]) { p = q; base = start[q]; }
                const int value = (int)rings[(p * PLANE_RING + min(k - base, PLANE_RING - 1)) * 32 + lane];
                store_if(k < kend, entry(out, k, stride), value);
            }
            if (t.active) {
                if (warp == 0) {
                    nbr_count[t.i] = total;
                    most = total > most ? total : most;
                }
                least = min_r2 < least ? min_r2 : least;
            }
        }
        __syncthreads();                // the rings are read before the next chunk writes them
    }
    reduce_list_stats(most, least, max_count, min_r2_bits);
}

extern "C" __global__ void __launch_bounds__(32 * PLANE_WARPS, PLANE_MIN_BLOCKS) build_neighbor_list_planes(LIST_ENTRY_ARGS) {
    list_rows_by_planes<int, 7>(LIST_ENTRY_PASS);
}
extern "C" __global__ void __launch_bounds__(32 * PLANE_WARPS, PLANE_MIN_BLOCKS_16) build_neighbor_list_planes16(LIST_ENTRY_ARGS) {
    list_rows_by_planes<unsigned short, 6>(LIST_ENTRY_PASS);
}
#endif

// Atom i's squared displacement since the last build (minimum image): the displacement checks' per-atom work.
__device__ __forceinline__ real_t displacement2(const real_t* __restrict__ pos4,
                                                const at_build_t* __restrict__ pos4_at_build, int i, real_t Lx,
                                                real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz)
{
    real_t x, y, z; at_build_t x0, y0, z0; int t;
    load_position(pos4, i, x, y, z, t);
    load_position(pos4_at_build, i, x0, y0, z0, t);
    real_t dx = x - (real_t)x0, dy = y - (real_t)y0, dz = z - (real_t)z0;
    dx -= Lx * rint(dx * invLx);
    dy -= Ly * rint(dy * invLy);
    dz -= Lz * rint(dz * invLz);
    return dx * dx + dy * dy + dz * dz;
}

// Displacement check: flag = 1 if any atom moved more than sqrt(limit2) since the last build
// (does nothing once the flag is set: in a captured step block the flag freezes the block).
extern "C" __global__ void displacement_exceeds(
    const real_t* __restrict__ pos4, const at_build_t* __restrict__ pos4_at_build, int n_local,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t limit2,
    int* __restrict__ flag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local || *flag) return;
    if (displacement2(pos4, pos4_at_build, i, Lx, Ly, Lz, invLx, invLy, invLz) > limit2) *flag = 1;
}

// A build's last pass of the counting sort (counting_sort.cu's sort_bins: binning.cuh's rank_bins,
// the stable order `order` of the scattered `slots`), which also writes the rows the list kernel
// reads when it does not read the positions themselves (cuda_builder.py's BuildPlan.list_rows: mixed
// precision's float32 rows, or a build that defers the reorder; none: out null): the positions in
// cell order, row s atom order[s]'s, carrying in the bits of w that atom's index -- or s when this
// build reorders the atoms (reorder[0] != 0), which puts atom order[s] in row s (ROWS_INDEX_IN_W).
// Rows of the positions' type (sort_bins_rows) or float32 rows (sort_bins_rows_float; the
// displacement check allows for their rounding).  And it zeroes the bin counts (count, the scan's
// input, dead after it) for the next build's wrap_and_bin, so that a build needs no memset.
template <typename out_t>
__device__ __forceinline__ void sort_bins_and_rows(const int* __restrict__ slots, const int* __restrict__ bin_start,
                                                   int n_bins, int* __restrict__ order, int* __restrict__ count,
                                                   const real_t* __restrict__ pos4,
                                                   const unsigned int* __restrict__ reorder, out_t* __restrict__ out)
{
    rank_bins(slots, bin_start, n_bins, [&](int slot, int atom) { order[slot] = atom; });
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b < n_bins) count[b] = 0;
    if (out == nullptr) return;
    // the rows of the warp's 32 bins, a contiguous range of slots, by the warp's lanes in turn
    // (coalesced stores; the order entries other lanes wrote are visible after the warp barrier)
    __syncwarp();
    const int first_bin = min(b - (int)(threadIdx.x & 31), n_bins), end_bin = min(first_bin + 32, n_bins);
    const int s_end = bin_start[end_bin];
    const bool reordering = reorder[0] != 0u;
    for (int s = bin_start[first_bin] + (int)(threadIdx.x & 31); s < s_end; s += 32) {
        const int atom = order[s];
        real_t x, y, z; int t;
        load_position(pos4, atom, x, y, z, t);
        out_t row[4] = {(out_t)x, (out_t)y, (out_t)z, 0};
        set_index_w(row[3], (unsigned int)(reordering ? s : atom));
        store_row4(out, s, row);
    }
}

extern "C" __global__ void sort_bins_rows(const int* __restrict__ slots, const int* __restrict__ bin_start, int n_bins,
                                          int* __restrict__ order, int* __restrict__ count,
                                          const real_t* __restrict__ pos4, const unsigned int* __restrict__ reorder,
                                          real_t* __restrict__ out)
{
    sort_bins_and_rows(slots, bin_start, n_bins, order, count, pos4, reorder, out);
}

extern "C" __global__ void sort_bins_rows_float(const int* __restrict__ slots, const int* __restrict__ bin_start,
                                                int n_bins, int* __restrict__ order, int* __restrict__ count,
                                                const real_t* __restrict__ pos4,
                                                const unsigned int* __restrict__ reorder, float* __restrict__ out)
{
    sort_bins_and_rows(slots, bin_start, n_bins, order, count, pos4, reorder, out);
}

// The rows of the first n_slots sorted slots, each with its atom's index after the build in w
// (spatial domains, pycumd/parallel/domains.py: the owned atoms are renumbered in the order of
// these slots, the ghosts after them): out[s] = x, y, z of row order[s], w = new_index[order[s]];
// and the atoms' cells by their new index (the list kernel reads a target's cell by its index):
// keys_renamed[new_index[order[s]]] = keys[order[s]].
// With TARGETS_ON_DEVICE, n_slots is read from device memory (`slots`; the grid covers its capacity).
#ifdef TARGETS_ON_DEVICE
#define SLOT_COUNT_ARG const int* __restrict__ slots
#define SLOT_COUNT (*slots)
#else
#define SLOT_COUNT_ARG int n_slots
#define SLOT_COUNT n_slots
#endif
extern "C" __global__ void rows_in_slot_order_renamed(const int* __restrict__ order, SLOT_COUNT_ARG,
                                                      const real_t* __restrict__ pos4,
                                                      const int* __restrict__ new_index,
                                                      const int* __restrict__ keys, real_t* __restrict__ out,
                                                      int* __restrict__ keys_renamed)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= SLOT_COUNT) return;
    const int atom = order[s];
    const int renamed = new_index[atom];
    real_t x, y, z; int t;
    load_position(pos4, atom, x, y, z, t);
    real_t row[4] = {x, y, z, 0};
    set_index_w(row[3], (unsigned int)renamed);
    store_row4(out, s, row);
    keys_renamed[renamed] = keys[atom];
}

// Periodic wrap into [0, L) with image counters, done at rebuilds (as LAMMPS does at re-neighbouring):
// x -= k L with k = floor(x / L), then one correction step for rounding.  Returns the wrapped row.
__device__ __forceinline__ void wrap_position(real_t* __restrict__ pos4, int* __restrict__ image, int i,
                                              const real_t (&L)[3], real_t (&x_out)[3])
{
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
        x_out[d] = x;
    }
}

extern "C" __global__ void wrap_positions(real_t* __restrict__ pos4, int* __restrict__ image, int n_local,
                                          real_t Lx, real_t Ly, real_t Lz)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    const real_t L[3] = {Lx, Ly, Lz};
    real_t x[3];
    wrap_position(pos4, image, i, L, x);
}

// The statistics the list kernel reduces into, reset: largest count 0, smallest r^2 FLT_MAX (bits).
__device__ __forceinline__ void reset_build_stats(unsigned int* stats) { stats[0] = 0u; stats[1] = 0x7F7FFFFFu; }

// The build's reorder decision (verlet.py's reorder_every, K; the NeighborList's own two words, which
// outlive its build plans): reorder[0] = 1 when this build reorders the atoms, which it does when
// reorder[1], the builds since the last reorder, is 0; reorder[1] then advances modulo K (K = 1:
// every build reorders; K = 0: none does, a list without reordering; the host sets reorder[1] = 0
// to force one).
__device__ __forceinline__ void decide_reorder(unsigned int* reorder, int reorder_every) {
    if (reorder_every <= 0) {
        reorder[0] = 0u;
        return;
    }
    reorder[0] = reorder[1] == 0u ? 1u : 0u;
    reorder[1] = (reorder[1] + 1u) % (unsigned int)reorder_every;
}

// A build's first launch (verlet.py's enqueue): the wrap, the cell of the wrapped position
// (binning.cuh's cell_key, as cell_index_f32/f64) and its count into the bin (histogram_rank's
// count_into_bin; `count` zeroed before), and the list kernel's statistics reset: four graph
// nodes of a build in one.
extern "C" __global__ void wrap_and_bin(real_t* __restrict__ pos4, int* __restrict__ image, int n_local,
                                        real_t Lx, real_t Ly, real_t Lz, int nx, int ny, int nz,
                                        int* __restrict__ keys, int* __restrict__ count, int* __restrict__ rank,
                                        unsigned int* __restrict__ stats, unsigned int* __restrict__ reorder,
                                        int reorder_every)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) { reset_build_stats(stats); decide_reorder(reorder, reorder_every); }
    if (i >= n_local) return;
    const real_t L[3] = {Lx, Ly, Lz};
    real_t x[3];
    wrap_position(pos4, image, i, L, x);
    const int key = cell_key(x[0], x[1], x[2], Lx, Ly, Lz, nx, ny, nz);
    keys[i] = key;
    rank[i] = count_into_bin(clamp_key(key, nx * ny * nz), count);
}

#if COMPOSITE
#include "composite/float_float.cuh"
// The composite-precision wrap: the float-float coordinate x = hi + lo (pos4, pos_lo) becomes
// x - k (L + L_lo) with k = floor(hi / L), then one correction step for rounding, so that hi is
// in [0, L) as the cell binning and the neighbour stencil require (the value hi + lo may be a
// hair below 0).  Float-float arithmetic throughout (no float64).
__device__ __forceinline__ void wrap_position_composite(float* __restrict__ pos4, float* __restrict__ pos_lo,
                                                        int* __restrict__ image, int i, const ff (&L)[3])
{
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

extern "C" __global__ void wrap_positions_composite(float* __restrict__ pos4, float* __restrict__ pos_lo,
                                                    int* __restrict__ image, int n_local,
                                                    float Lx, float Ly, float Lz, float Lx_lo, float Ly_lo, float Lz_lo)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    const ff L[3] = {ff_make(Lx, Lx_lo), ff_make(Ly, Ly_lo), ff_make(Lz, Lz_lo)};
    wrap_position_composite(pos4, pos_lo, image, i, L);
}

// wrap_and_bin of composite positions: the cell of the high parts (float32 rows, as cell_index_f32).
extern "C" __global__ void wrap_and_bin_composite(float* __restrict__ pos4, float* __restrict__ pos_lo,
                                                  int* __restrict__ image, int n_local,
                                                  float Lx, float Ly, float Lz, float Lx_lo, float Ly_lo, float Lz_lo,
                                                  int nx, int ny, int nz, int* __restrict__ keys,
                                                  int* __restrict__ count, int* __restrict__ rank,
                                                  unsigned int* __restrict__ stats, unsigned int* __restrict__ reorder,
                                                  int reorder_every)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) { reset_build_stats(stats); decide_reorder(reorder, reorder_every); }
    if (i >= n_local) return;
    const ff L[3] = {ff_make(Lx, Lx_lo), ff_make(Ly, Ly_lo), ff_make(Lz, Lz_lo)};
    wrap_position_composite(pos4, pos_lo, image, i, L);
    const float* const row = pos4 + 4 * (size_t)i;
    const int key = cell_key(row[0], row[1], row[2], Lx, Ly, Lz, nx, ny, nz);
    keys[i] = key;
    rank[i] = count_into_bin(clamp_key(key, nx * ny * nz), count);
}
#endif

// End of a build captured inside the step graph (step_graph.py; the control array's layout in
// control_layout.cuh): copy the build's statistics (largest count, smallest r^2 as float bits) to
// MAX_COUNT and MIN_R2 for the host's one read per block -- or, with ring > 0 (the device loop:
// several builds per launch), keep their largest and smallest there, count the build in BUILDS and
// put its largest count in BUILD_COUNTS + (build mod ring), the host's record of the last `ring`
// builds -- and on an overflow (largest count > capacity: the list is incomplete) freeze the step
// (FROZEN = 1 makes every later kernel return at once) and say why (REASON).
__device__ __forceinline__ void publish_build_stats(const unsigned int* __restrict__ stats, int capacity,
                                                    int* __restrict__ control, int ring)
{
    const unsigned int max_count = stats[0];
    if (ring > 0) {
        control[CONTROL_MAX_COUNT] = max(control[CONTROL_MAX_COUNT], (int)max_count);
        control[CONTROL_MIN_R2] = (int)min((unsigned int)control[CONTROL_MIN_R2], stats[1]);   // positive floats: bits in value order
        control[CONTROL_BUILD_COUNTS + control[CONTROL_BUILDS] % ring] = (int)max_count;
        control[CONTROL_BUILDS] += 1;
    } else {
        control[CONTROL_MAX_COUNT] = (int)max_count;
        control[CONTROL_MIN_R2] = (int)stats[1];
    }
    if (max_count > (unsigned int)capacity) {
        control[CONTROL_FROZEN] = 1;
        control[CONTROL_REASON] = 1;
    }
}

// A build's last launch: the positions at this build (the displacement check's reference) copied
// (in mixed precision rounded to float: the float32 rows the list kernel read), n_values = 4 N values; and with `control` (publish != 0) the statistics published as above.
extern "C" __global__ void snapshot_and_publish(const real_t* __restrict__ pos4, at_build_t* __restrict__ pos4_at_build,
                                                int n_values, const unsigned int* __restrict__ stats, int capacity,
                                                int* __restrict__ control, int ring, int publish)
{
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n_values) pos4_at_build[k] = (at_build_t)pos4[k];
    if (k == 0 && publish) publish_build_stats(stats, capacity, control, ring);
}

// A target's `count` list entries (column, `stride` ints apart) sorted in place by the global id of the
// neighbour, stably (insertion sort): sort_neighbours_by_id's per-target work, also the batched build's.
__device__ __forceinline__ void sort_column_by_id(int* __restrict__ column, int count, int stride,
                                                  const long long* __restrict__ ids)
{
    for (int a = 1; a < count; ++a) {
        const int j = column[(size_t)a * stride];
        const long long key = ids[j];
        int b = a - 1;
        for (; b >= 0; --b) {
            const int jb = column[(size_t)b * stride];
            if (ids[jb] <= key) break;
            column[(size_t)(b + 1) * stride] = jb;
        }
        column[(size_t)(b + 1) * stride] = j;
    }
}

// Canonical neighbour order (deterministic mode): each target's entries sorted by the global id of
// the neighbour (insertion sort in place, one thread per target), so that the force sums run in an
// order that depends neither on the cell grid nor on where the atoms are stored: the same in a
// serial run and in every spatial decomposition (the CPU twin is verlet.py's _sort_rows_by_id).
// Entries past the capacity are absent (an overflowed build is repeated with larger storage).
extern "C" __global__ void sort_neighbours_by_id(int* __restrict__ nbr, const int* __restrict__ nbr_count,
                                                 const long long* __restrict__ ids, int n_targets,
                                                 int stride, int capacity)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_targets) return;
    sort_column_by_id(nbr + i, min(nbr_count[i], capacity), stride, ids);
}

#ifndef BATCH
#define BATCH 0
#endif
#if BATCH
// The batched engine's builds (batch_engine.py, docs/batch.md; compiled with -DBATCH=1, so the kernels
// above are the same PTX without it).  One thread per atom of every system; the system `system[i]`
// gives what a single build passes as arguments: its box `box[6 s ..]` (L, 1/L, real_t), its cells
// `cells[3 s ..]` and first bin `key_offset[s]` (its bins: its cells, or one per atom where it does
// not rebuild), `r_list2[s]`, `limit2[s]`.  Only the systems whose
// flag (`rebuild[s]`, `consider[s]`) is set do anything, so a build of some systems leaves the others'
// atoms and lists as they are.

// The bins of a batched build, one pass: an atom of a rebuilding system s is wrapped (wrap_positions'
// wrap) and takes the bin key_offset[s] + its cell (binning.cuh's cell_key of the wrapped row with the
// system's real_t box and cells: the operands of counting_sort.cu's cell_index_batched, so the same
// bits); an atom of a system that does not rebuild takes the bin of its own row, key_offset[s] + i -
// atom_offset[s] (one atom a bin: the stable counting sort leaves it where it is).
extern "C" __global__ void batch_bin_keys(real_t* __restrict__ pos4, int* __restrict__ image, int n,
                                          const int* __restrict__ system, const unsigned char* __restrict__ rebuild,
                                          const real_t* __restrict__ box, const int* __restrict__ cells,
                                          const int* __restrict__ key_offset, const long long* __restrict__ atom_offset,
                                          int* __restrict__ keys)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int s = system[i];
    if (!rebuild[s]) {
        keys[i] = key_offset[s] + (int)(i - atom_offset[s]);
        return;
    }
    const real_t L[3] = {box[6 * s], box[6 * s + 1], box[6 * s + 2]};
    real_t x[3];
    wrap_position(pos4, image, i, L, x);
    keys[i] = key_offset[s] + cell_key(x[0], x[1], x[2], L[0], L[1], L[2], cells[3 * s], cells[3 * s + 1], cells[3 * s + 2]);
}

// The in-place reorder of a batched build (counting_sort.cu's gather_rows, then copy_rows_back) for the
// rows of the rebuilding systems only: the others' rows are their own in the sort's order (one atom a
// bin), so they are neither read nor written.  src/dst/row_words/max_words: a gather plan's tables
// (counting_sort.py's gather_plan); one thread per (row, word) of the widest row, grid-stride.
extern "C" __global__ void batch_gather_rows(const unsigned long long* __restrict__ src,
                                             const unsigned long long* __restrict__ dst,
                                             const int* __restrict__ row_words, int n_arrays,
                                             const int* __restrict__ order, int n, int max_words,
                                             const int* __restrict__ system, const unsigned char* __restrict__ rebuild)
{
    const long long total = (long long)n * max_words;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const int k = (int)(t / max_words), w = (int)(t % max_words);
        if (!rebuild[system[k]]) continue;
        const int j = order[k];
        for (int a = 0; a < n_arrays; ++a) {
            const int rw = row_words[a];
            if (w < rw) {
                const unsigned int* s = reinterpret_cast<const unsigned int*>(src[a]);
                unsigned int* d = reinterpret_cast<unsigned int*>(dst[a]);
                d[(size_t)k * rw + w] = s[(size_t)j * rw + w];
            }
        }
    }
}

extern "C" __global__ void batch_copy_rows_back(const unsigned long long* __restrict__ src,
                                                const unsigned long long* __restrict__ dst,
                                                const int* __restrict__ row_words, int n_arrays, int n, int max_words,
                                                const int* __restrict__ system,
                                                const unsigned char* __restrict__ rebuild)
{
    const long long total = (long long)n * max_words;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)gridDim.x * blockDim.x) {
        const int k = (int)(t / max_words), w = (int)(t % max_words);
        if (!rebuild[system[k]]) continue;
        for (int a = 0; a < n_arrays; ++a) {
            const int rw = row_words[a];
            if (w < rw) {
                unsigned int* s = reinterpret_cast<unsigned int*>(src[a]);
                const unsigned int* d = reinterpret_cast<const unsigned int*>(dst[a]);
                s[(size_t)k * rw + w] = d[(size_t)k * rw + w];
            }
        }
    }
}

// displacement_exceeds per system: flag[s] = 1 if an atom of a considered system s moved more than
// sqrt(limit2[s]) since its system's last build (the same arithmetic).
extern "C" __global__ void displacement_exceeds_batch(
    const real_t* __restrict__ pos4, const at_build_t* __restrict__ pos4_at_build, int n,
    const int* __restrict__ system, const unsigned char* __restrict__ consider, const real_t* __restrict__ box,
    const real_t* __restrict__ limit2, int* __restrict__ flag)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int s = system[i];
    if (!consider[s] || flag[s]) return;
    const real_t* const b = box + 6 * s;
    if (displacement2(pos4, pos4_at_build, i, b[0], b[1], b[2], b[3], b[4], b[5]) > limit2[s]) flag[s] = 1;
}

// The list of one target of a rebuilding system (atoms in cell order after the batch's counting sort
// and reorder: bin b's atoms are rows bin_start[b] .. bin_start[b + 1] - 1; the system's cell c is bin
// cell_offset[s] + c, the key of its atoms in that cell): every other atom of the
// system's cells within the stencil of the target's cell (offsets -2..2, fewer below 5 cells, each cell
// once; cells wholly beyond r_list skipped) closer than r_list, by the rule's minimum image d - L rint(d / L) (bit for bit the image-shift
// kernels' r^2, see the top of this file), then sorted by global id as sort_neighbours_by_id does
// (deterministic mode's canonical order: so the row is the single build's row).  Entries are batch
// rows, column-major with `stride`; a row longer than `capacity` is counted, not stored (the host
// grows the storage and builds again).  The system's largest count goes to max_count[s]; the
// target's positions at build are taken (snapshot_and_publish's copy).
__device__ __forceinline__ int stencil_low(int n) { return -min(2, (n - 1) / 2); }
__device__ __forceinline__ int stencil_high(int n) { return min(2, n / 2); }
// The smallest distance along one axis between points of two cells d apart (width w): (|d| - 1) w, 0 for
// neighbouring cells and below 5 cells (the builders' pruning, with their margin 1.001 on r_list^2).
__device__ __forceinline__ real_t cell_gap_batch(int d, real_t w, int n) {
    return (n < 5 || (d >= -1 && d <= 1)) ? real_t(0) : real_t(abs(d) - 1) * w;
}

// The systems with by_id[s] are listed by build_list_batch_by_id instead (below).
extern "C" __global__ void build_list_batch(
    const real_t* __restrict__ pos4, const int* __restrict__ keys, const long long* __restrict__ ids, int n,
    const int* __restrict__ system, const unsigned char* __restrict__ rebuild, const unsigned char* __restrict__ by_id,
    const int* __restrict__ cell_offset,
    const int* __restrict__ cells, const real_t* __restrict__ box, const real_t* __restrict__ r_list2,
    const int* __restrict__ bin_start, int* __restrict__ nbr, int* __restrict__ nbr_count, int stride, int capacity,
    at_build_t* __restrict__ pos4_at_build, unsigned int* __restrict__ max_count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int s = system[i];
    if (!rebuild[s] || by_id[s]) return;
    const int nx = cells[3 * s], ny = cells[3 * s + 1], nz = cells[3 * s + 2], first = cell_offset[s];
    const int c = keys[i] - first;
    const int cx = c % nx, cy = (c / nx) % ny, cz = c / (nx * ny);
    const real_t* const b = box + 6 * s;
    const real_t Lx = b[0], Ly = b[1], Lz = b[2], invLx = b[3], invLy = b[4], invLz = b[5];
    const real_t rl2 = r_list2[s];
    real_t xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    const real_t wx = Lx / nx, wy = Ly / ny, wz = Lz / nz, skip2 = rl2 * real_t(1.001);
    int found = 0;
    for (int dz = stencil_low(nz); dz <= stencil_high(nz); ++dz) {
        const int z = (cz + dz + nz) % nz;
        const real_t gz = cell_gap_batch(dz, wz, nz);
        for (int dy = stencil_low(ny); dy <= stencil_high(ny); ++dy) {
            const int y = (cy + dy + ny) % ny;
            const real_t gy = cell_gap_batch(dy, wy, ny);
            for (int dx = stencil_low(nx); dx <= stencil_high(nx); ++dx) {
                const real_t gx = cell_gap_batch(dx, wx, nx);
                if (gx * gx + gy * gy + gz * gz >= skip2) continue;    // the cell lies wholly beyond r_list
                const int cell = first + (cx + dx + nx) % nx + nx * (y + ny * z);
                for (int j = bin_start[cell]; j < bin_start[cell + 1]; ++j) {
                    real_t xj, yj, zj; int tj;
                    load_position(pos4, j, xj, yj, zj, tj);
                    real_t ddx = xi - xj, ddy = yi - yj, ddz = zi - zj;
                    ddx -= Lx * rint(ddx * invLx);
                    ddy -= Ly * rint(ddy * invLy);
                    ddz -= Lz * rint(ddz * invLz);
                    const real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
                    if (r2 < rl2 && j != i) {
                        if (found < capacity) nbr[(size_t)found * stride + i] = j;
                        ++found;
                    }
                }
            }
        }
    }
    nbr_count[i] = found;
    sort_column_by_id(nbr + i, min(found, capacity), stride, ids);
    for (int q = 0; q < 4; ++q) pos4_at_build[4 * (size_t)i + q] = (at_build_t)pos4[4 * (size_t)i + q];
    atomicMax(max_count + s, (unsigned int)found);
}

// The lists of small systems in id order, without a sort (by_id[s]: the host's choice for a system whose
// ids are 1 .. N_s and whose stencil covers most of its cells, so that going over all its atoms costs
// about what the stencil's cells do).  batch_rows_by_id first writes, for each rebuilding such system,
// the row of each id: row_of_id[atom_offset[s] + id - 1] = i.  Then build_list_batch_by_id gives target
// i every atom j of its system, in id order, with r^2 < r_list^2 by the arithmetic of build_list_batch
// (the minimum image d - L rint(d / L)), j != i: the set build_list_batch finds in its stencil (which
// holds every atom within r_list), in the order its sort by id gives, so the same row.  The threads of
// a warp (rows of one system) read the same candidate at each iteration: one load for the warp.
extern "C" __global__ void batch_rows_by_id(const long long* __restrict__ ids, int n, const int* __restrict__ system,
                                            const unsigned char* __restrict__ rebuild,
                                            const unsigned char* __restrict__ by_id,
                                            const long long* __restrict__ atom_offset, int* __restrict__ row_of_id)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int s = system[i];
    if (!rebuild[s] || !by_id[s]) return;
    row_of_id[atom_offset[s] + ids[i] - 1] = i;
}

extern "C" __global__ void build_list_batch_by_id(
    const real_t* __restrict__ pos4, int n, const int* __restrict__ system, const unsigned char* __restrict__ rebuild,
    const unsigned char* __restrict__ by_id, const long long* __restrict__ atom_offset,
    const int* __restrict__ row_of_id, const real_t* __restrict__ box, const real_t* __restrict__ r_list2,
    int* __restrict__ nbr, int* __restrict__ nbr_count, int stride, int capacity,
    at_build_t* __restrict__ pos4_at_build, unsigned int* __restrict__ max_count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int s = system[i];
    if (!rebuild[s] || !by_id[s]) return;
    const long long first = atom_offset[s];
    const int n_s = (int)(atom_offset[s + 1] - first);
    const real_t* const b = box + 6 * s;
    const real_t Lx = b[0], Ly = b[1], Lz = b[2], invLx = b[3], invLy = b[4], invLz = b[5];
    const real_t rl2 = r_list2[s];
    real_t xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    int found = 0;
    for (int q = 0; q < n_s; ++q) {
        const int j = __ldg(row_of_id + first + q);
        real_t xj, yj, zj; int tj;
        load_position(pos4, j, xj, yj, zj, tj);
        real_t ddx = xi - xj, ddy = yi - yj, ddz = zi - zj;
        ddx -= Lx * rint(ddx * invLx);
        ddy -= Ly * rint(ddy * invLy);
        ddz -= Lz * rint(ddz * invLz);
        const real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
        if (r2 < rl2 && j != i) {
            if (found < capacity) nbr[(size_t)found * stride + i] = j;
            ++found;
        }
    }
    nbr_count[i] = found;
    for (int q = 0; q < 4; ++q) pos4_at_build[4 * (size_t)i + q] = (at_build_t)pos4[4 * (size_t)i + q];
    atomicMax(max_count + s, (unsigned int)found);
}
#endif // BATCH
