"""The v7 list kernel's output ring (verlet.cu, LIST_RING), emulated on the CPU: per warp of 32
consecutive atoms of a cell row, the stencil rows in the kernel's order, each lane's entries per
row (the rule of verlet.cu, float64), the ring limit, the flushes and the lanes that pass their
limit (from then on the kernel stores their entries directly).  Also the stencil rows that need
the ring-limit check (some lane's count + candidates of the row > its limit).  Boxes of at least
5 cells per dimension (full 5 x 5 stencil).  CPU only:

    PYTHONPATH=src python benchmarks/list_kernel/ring_sim.py
"""
import sys
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare as C
from pycumd.neighbors.counting_sort import cell_index, counting_sort

@numba.njit(cache=True)
def per_row_counts(pos, keys, cell_start, order, n_cells, L, r2list):
    n = pos.shape[0]; nx, ny, nz = n_cells[0], n_cells[1], n_cells[2]
    wx, wy, wz = L[0]/nx, L[1]/ny, L[2]/nz
    skip2 = r2list * 1.001
    acc = np.zeros((n, 25), np.int32); cand = np.zeros((n, 25), np.int32)
    for i in range(n):
        xi, yi, zi = pos[i, 0], pos[i, 1], pos[i, 2]
        c = keys[i]; cx = c % nx; cy = (c // nx) % ny; cz = c // (nx * ny)
        r = 0
        for dz in range(-2, 3):
            for dy in range(-2, 3):
                gz = 0.0 if dz == 0 else (dz*wz - (zi - cz*wz) if dz > 0 else (zi - cz*wz) + (-dz-1)*wz)
                gy = 0.0 if dy == 0 else (dy*wy - (yi - cy*wy) if dy > 0 else (yi - cy*wy) + (-dy-1)*wy)
                gyz2 = gz*gz + gy*gy
                if gyz2 < skip2:
                    z = (cz + dz) % nz; y = (cy + dy) % ny
                    for dx in range(-2, 3):
                        gx = 0.0 if dx == 0 else (dx*wx - (xi - cx*wx) if dx > 0 else (xi - cx*wx) + (-dx-1)*wx)
                        if gyz2 + gx*gx >= skip2: continue
                        x = (cx + dx) % nx
                        cell = (z*ny + y)*nx + x
                        for s in range(cell_start[cell], cell_start[cell+1]):
                            j = order[s]
                            cand[i, r] += 1
                            if j == i: continue
                            d0 = xi - pos[j,0]; d1 = yi - pos[j,1]; d2 = zi - pos[j,2]
                            d0 -= L[0]*np.rint(d0/L[0]); d1 -= L[1]*np.rint(d1/L[1]); d2 -= L[2]*np.rint(d2/L[2])
                            if d0*d0 + d1*d1 + d2*d2 < r2list: acc[i, r] += 1
                r += 1
    return acc, cand

@numba.njit(cache=True)
def simulate(acc, cand, order, row_starts, R, capacity):
    overflow_lanes = 0; generic_rows = 0; rows = 0; warps = 0
    for rr in range(row_starts.shape[0] - 1):
        a, b = row_starts[rr], row_starts[rr+1]
        for first in range(a, b, 32):
            warps += 1
            m = min(32, b - first)
            count = np.zeros(m, np.int64); flushed = 0
            ring_limit = np.full(m, min(R, capacity)); direct_from = np.full(m, 1 << 30)
            for r in range(25):
                use = False
                for l in range(m):
                    if cand[order[first+l], r] > 0: use = True
                if not use: continue
                rows += 1
                fits = True
                for l in range(m):
                    if count[l] + cand[order[first+l], r] > ring_limit[l]: fits = False
                if not fits: generic_rows += 1
                for l in range(m):
                    count[l] += acc[order[first+l], r]
                    if direct_from[l] == (1 << 30) and count[l] > ring_limit[l] and ring_limit[l] < capacity:
                        direct_from[l] = ring_limit[l]; overflow_lanes += 1
                done = 1 << 30
                for l in range(m): done = min(done, min(count[l], capacity))
                flushed = max(flushed, done)
                for l in range(m):
                    ring_limit[l] = 0 if direct_from[l] != (1 << 30) else min(flushed + R, capacity)
    return warps, rows, generic_rows, overflow_lanes

for title, system in [("fcc20 jitter", C.jittered_fcc(20)), ("fcc63 jitter", C.jittered_fcc(63)),
                      ("gas squeezed", C.uniform_gas(32000, [33.6]*3, squeeze_x=0.5))]:
    L = np.asarray(system.box.lengths, float); pos = system.positions.copy()
    n_cells = np.clip(np.floor(2.0 * L / 2.8).astype(np.int64), 1, 1024)
    keys = cell_index(pos, L, n_cells); sort = counting_sort(keys, int(np.prod(n_cells)))
    cs = np.asarray(sort.bin_start); order = np.asarray(sort.order)
    acc, cand = per_row_counts(pos, np.asarray(keys), cs, order, n_cells, L, 2.8*2.8)
    nx = n_cells[0]
    row_starts = np.array([cs[r*nx] for r in range(n_cells[1]*n_cells[2] + 1)])
    cap = int(acc.sum(1).max()) + 4
    for R in (16, 32, 64):
        w, rows, gen, ov = simulate(acc, cand, order, row_starts, R, cap)
        print(f"{title:14} N={len(pos):>8} R={R:>2}: warps {w}, stencil rows {rows}, rows needing the limit check {gen} ({100*gen/rows:.1f}%), lanes passing the ring limit {ov}", flush=True)
