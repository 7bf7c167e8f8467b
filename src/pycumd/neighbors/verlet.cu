// Full Verlet neighbour list from a cell list (counting-sorted particles).
//
// Cells have edge w >= r_list / 2.  For target atom i in cell c, visit the cells c + (dx, dy, dz),
// dz slowest, with d in [lo, hi] per dimension: lo = -min(2, (n-1)/2), hi = min(2, n/2), so that
// no cell is visited twice in small boxes.  A cell whose nearest face is farther than r_list from
// the atom is skipped (only in dimensions with n >= 5 cells, where the offsets are unambiguous);
// that leaves about a third of the candidates of a 27-cell stencil of edge r_list.  Inside each
// cell the atoms come in counting-sort order (stable).  j is a neighbour when |r_i - r_j|^2 < r_list^2
// (minimum image; requires L >= 2 r_list).  Column-major storage: nbr[k * stride + i], k < capacity;
// the true count is stored even past capacity so that the caller can grow the storage and rebuild.
#ifndef real_t
#define real_t double
#endif
#ifndef COMPOSITE
#define COMPOSITE 0
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

extern "C" __global__ void build_neighbor_list(
    const real_t* __restrict__ pos4, const int* __restrict__ cell_of,
    const int* __restrict__ cell_start, const int* __restrict__ cell_order,
    int n_local, int nx, int ny, int nz,
    real_t Lx, real_t Ly, real_t Lz, real_t invLx, real_t invLy, real_t invLz, real_t r_list2,
    int* __restrict__ nbr, int* __restrict__ nbr_count, int capacity, int stride,
    int* __restrict__ max_count, unsigned int* __restrict__ min_r2_bits)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_local) return;
    real_t xi, yi, zi; int ti;
    load_position(pos4, i, xi, yi, zi, ti);
    int c = cell_of[i];
    int cx = c % nx, cy = (c / nx) % ny, cz = c / (nx * ny);
    real_t wx = Lx / nx, wy = Ly / ny, wz = Lz / nz;
    real_t skip2 = r_list2 * real_t(1.001);      // margin: rounding in the gaps never drops a pair
    int count = 0;
    real_t min_r2 = r_list2;
    for (int dz = stencil_lo(nz); dz <= stencil_hi(nz); ++dz) {
        real_t gz = face_gap(zi, cz, dz, wz, nz);
        real_t gz2 = gz * gz;
        if (gz2 >= skip2) continue;
        int z = cz + dz; z += (z < 0) ? nz : 0; z -= (z >= nz) ? nz : 0;
        for (int dy = stencil_lo(ny); dy <= stencil_hi(ny); ++dy) {
            real_t gy = face_gap(yi, cy, dy, wy, ny);
            real_t gyz2 = gz2 + gy * gy;
            if (gyz2 >= skip2) continue;
            int y = cy + dy; y += (y < 0) ? ny : 0; y -= (y >= ny) ? ny : 0;
            for (int dx = stencil_lo(nx); dx <= stencil_hi(nx); ++dx) {
                real_t gx = face_gap(xi, cx, dx, wx, nx);
                if (gyz2 + gx * gx >= skip2) continue;
                int x = cx + dx; x += (x < 0) ? nx : 0; x -= (x >= nx) ? nx : 0;
                int cell = (z * ny + y) * nx + x;
                int end = cell_start[cell + 1];
                for (int s = cell_start[cell]; s < end; ++s) {
                    int j = cell_order[s];
                    if (j == i) continue;
                    real_t xj, yj, zj; int tj;
                    load_position(pos4, j, xj, yj, zj, tj);
                    real_t ddx = xi - xj, ddy = yi - yj, ddz = zi - zj;
                    ddx -= Lx * rint(ddx * invLx);
                    ddy -= Ly * rint(ddy * invLy);
                    ddz -= Lz * rint(ddz * invLz);
                    real_t r2 = ddx * ddx + ddy * ddy + ddz * ddz;
                    if (r2 < r_list2) {
                        if (count < capacity) nbr[(size_t)count * stride + i] = j;
                        ++count;
                        min_r2 = r2 < min_r2 ? r2 : min_r2;
                    }
                }
            }
        }
    }
    nbr_count[i] = count;
    atomicMax(max_count, count);
    atomicMin(min_r2_bits, __float_as_uint((float)min_r2));
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
