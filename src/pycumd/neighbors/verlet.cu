// Full Verlet neighbour list from a cell list (counting-sorted particles).
//
// For target atom i in cell c, visit the stencil of cells c + (dx, dy, dz), dz slowest, with
// d in [lo, hi] per dimension (lo = -1 if the dimension has >= 2 cells, hi = +1 if it has >= 3,
// so no cell is visited twice in small boxes), and inside each cell the atoms in counting-sort
// order (stable: increasing index).  j is a neighbour when |r_i - r_j|^2 < r_list^2 (minimum
// image; requires L >= 2 r_list).  Column-major storage: nbr[k * stride + i], k < capacity; the
// true count is stored even past capacity so that the caller can grow the storage and rebuild.
#ifndef real_t
#define real_t double
#endif
#include "positions.cuh"

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
    int count = 0;
    real_t min_r2 = r_list2;
    for (int dz = (nz >= 2 ? -1 : 0); dz <= (nz >= 3 ? 1 : 0); ++dz) {
        int z = cz + dz; z += (z < 0) ? nz : 0; z -= (z >= nz) ? nz : 0;
        for (int dy = (ny >= 2 ? -1 : 0); dy <= (ny >= 3 ? 1 : 0); ++dy) {
            int y = cy + dy; y += (y < 0) ? ny : 0; y -= (y >= ny) ? ny : 0;
            for (int dx = (nx >= 2 ? -1 : 0); dx <= (nx >= 3 ? 1 : 0); ++dx) {
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
