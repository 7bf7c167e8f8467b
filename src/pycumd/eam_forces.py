"""Many-body forces of the embedded-atom method (:class:`~pycumd.potentials.eam.EAM`) over a Verlet
neighbour list, in two passes as LAMMPS' ``PairEAM::compute``:

1. density and embedding (``eam_density``): for each target atom i, in list order,
   ``rho_i = sum_j rho_ba(r_ij)``; then ``F'(rho_i)`` into ``fp`` and, with energies,
   ``e_i = F_a(rho_i)`` (extended linearly beyond ``rhomax``);
2. forces (``eam_forces``), after the ghosts' ``fp`` is refreshed (a spatial domain's
   ``neighbors.forward``; nothing in one process), for each target atom i, in list order:
   ``psi' = F'(rho_i) rho_ab'(r) + F'(rho_j) rho_ba'(r) + phi_ab'(r)``, ``f_i += -psi'/r r_ij``,
   and with energies ``e_i += 1/2 sum_j phi_ab(r_ij)``, ``W_i = 1/2 sum_j r_ij (x) r_ij (-psi'/r)``.

Over a full list (the GPU; the CPU with ``deterministic=True`` or over MPI ranks) every sum is one
atom's, in list order, on one thread (CPU: Numba ``prange`` over the atoms; GPU: ``eam.cu``, a
thread per atom) and both backends do the same operations in the same order, so double precision
with ``deterministic=True`` (no fused multiply-add on the GPU) gives the same bits on both.  The
CPU's default half list (each pair once, as LAMMPS' ``newton on``) evaluates each pair once per
pass: its density and force go to both atoms, into the sums of the chunk of targets that owns the
pair (:func:`pycumd.forces.half_list_chunks`), added in chunk order afterwards (as
:class:`~pycumd.forces.PairForces` does): the same bits for the same thread count.

``pair_style hybrid/overlay`` and ``hybrid`` of EAM with a pair style (:class:`HybridForces`, CPU):
these passes and :class:`~pycumd.forces.PairForces`' pass over one list, on their own type pairs, added.

Precisions: the splines and the pair arithmetic in the pair type (float32 in single and mixed), the
densities, ``fp``, forces, energies and virials in the accumulation type.  Composite precision is
not implemented (a clear error).

The GPU's copy of the splines has 8 columns per row (:func:`device_tables`: ``c3 c4 c5 c6 | c0 c1
c2 0``, 16-byte loads; ``PYCUMD_EAM_TABLE_COLUMNS=7`` keeps LAMMPS' 7 for comparisons), the CPU's
LAMMPS' 7; the values read and the arithmetic are the same.
"""

from __future__ import annotations

import math
import os

import numba
import numpy as np

from .contracts import ForceEvaluatorBase
from .forces import (BLOCK, ZERO_SUMS, PairForces, add_own_sums, clear_chunk, full_pair, half_list_chunks,
                     min_image_separation, newton_pair, sum_chunks)
from .potentials.hybrid import GPU_REFUSAL

#: CUDA source of the two passes (beside forces.cu)
SOURCE = "eam.cu"

#: The environment variable that picks the GPU tables' row layout (:func:`table_columns`)
TABLE_COLUMNS_VARIABLE = "PYCUMD_EAM_TABLE_COLUMNS"
#: The column of coefficient c_k (k = 0 .. 6) in a row of the GPU's 8-column layout: c3 c4 c5 c6 | c0 c1 c2 0
GPU_COLUMN_OF = (4, 5, 6, 0, 1, 2, 3)


def table_columns() -> int:
    """The GPU tables' row layout (eam.cu's ``EAM_TABLE_COLUMNS``), from the environment variable
    ``PYCUMD_EAM_TABLE_COLUMNS``: 8 (the default; ``c3 c4 c5 c6 | c0 c1 c2 0``, 16-byte-aligned rows
    read with vector loads) or 7 (LAMMPS' ``c0 .. c6``, read coefficient by coefficient: the layout
    before, kept for A/B runs, benchmarks/eam_layout_ab.sh)."""
    value = os.environ.get(TABLE_COLUMNS_VARIABLE, "8").strip()
    if value not in ("7", "8"):
        raise ValueError(f"{TABLE_COLUMNS_VARIABLE}={value!r}: the EAM tables' GPU layout must be 8 (the default, "
                         f"vector loads) or 7 (the layout before, for comparisons)")
    return int(value)


#: The environment variable that turns on pass 1's rows of (x, y, z, F'(rho)) (:func:`fp_rows_option`)
FP_ROWS_VARIABLE = "PYCUMD_EAM_FP_ROWS"


def fp_rows_option() -> bool:
    """Whether pass 2 reads each neighbour's position and ``F'(rho)`` in one row that pass 1 wrote
    (eam.cu's ``EAM_FP_ROWS`` kernels: no separate load of ``F'(rho_j)``), from the environment
    variable ``PYCUMD_EAM_FP_ROWS``: 1 (the default: 1.10x the steps/s of 0 at 1M atoms on an H100,
    docs/performance.md) or 0.  Used only where it applies (:func:`one_table`, a process without ghost
    rows); the same bits either way."""
    value = os.environ.get(FP_ROWS_VARIABLE, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"{FP_ROWS_VARIABLE}={value!r}: must be 1 (the default: pass 1 writes rows of x, y, z, "
                         f"F'(rho) that pass 2 reads) or 0")
    return value == "1"


def one_table(tables) -> bool:
    """True when every pair of types reads the same rho table and the same Z2 table (one element):
    what the ``EAM_FP_ROWS`` kernels assume, having no type in their rows."""
    return len(set(np.asarray(tables.type2rhor).tolist())) == 1 and len(set(np.asarray(tables.type2z2r).tolist())) == 1


def device_tables(tables, columns: int, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The host arrays that the GPU's ``frho``, ``rhor`` and ``z2r`` are copied from: each of
    ``tables`` (:class:`~pycumd.potentials.eam.EAMTables`; (n_tables, points, 7) float64, c0 .. c6)
    in ``dtype`` (the pair type), with ``columns`` columns (:func:`table_columns`): 7, as they are;
    8, coefficient c_k in column ``GPU_COLUMN_OF[k]`` and 0 in column 7 (eam.cu's header).  C-ordered
    (n_tables, points, columns); the CPU keeps the 7-column tables."""
    if columns not in (7, 8):
        raise ValueError(f"EAM table columns must be 7 or 8, not {columns}")
    out = []
    for a in (tables.frho, tables.rhor, tables.z2r):
        a = np.asarray(a, dtype=dtype)
        if columns == 8:
            padded = np.zeros(a.shape[:-1] + (8,), dtype=dtype)
            padded[..., list(GPU_COLUMN_OF)] = a
            a = padded
        out.append(np.ascontiguousarray(a))
    return tuple(out)


def list_forces_class(potential):
    """The force evaluator over a neighbour list for ``potential``: :class:`EAMForces` for a
    many-body potential (``potential.many_body``), :class:`HybridForces` for
    ``pair_style hybrid``/``hybrid/overlay`` (``potential.hybrid``: EAM plus a pair style),
    :class:`~pycumd.forces.PairForces` otherwise."""
    if potential.many_body and potential.hybrid:
        return HybridForces
    return EAMForces if potential.many_body else PairForces


@numba.njit(inline="always")
def _grid_point(x, rdx, n):
    """LAMMPS' lookup of x on the r grid: (m, p) with ``p = x rdx + 1``, ``m = min(int(p), n - 1)``,
    ``p = min(p - m, 1)``."""
    p = x * rdx + 1.0
    m = int(p)
    m = min(m, n - 1)
    p -= m
    p = min(p, 1.0)
    return m, p


@numba.njit(inline="always")
def _eam_pair(r, ti, tj, fpi, fpj, n_types, nr, rdr, rhor, type2rhor, z2r, type2z2r):
    """``(fpair, phi)`` of the pair i-j at distance r (inside the cutoff): the force over r,
    ``-(F'_i rho'_j + F'_j rho'_i + phi') / r``, and the pair energy ``phi = Z2(r) / r`` (LAMMPS'
    splines; the twin of eam.cu's pass 2)."""
    m, p = _grid_point(r, rdr, nr)
    c = rhor[type2rhor[ti * n_types + tj], m]
    rhoip = (c[0] * p + c[1]) * p + c[2]
    c = rhor[type2rhor[tj * n_types + ti], m]
    rhojp = (c[0] * p + c[1]) * p + c[2]
    c = z2r[type2z2r[ti * n_types + tj], m]
    z2p = (c[0] * p + c[1]) * p + c[2]
    z2 = ((c[3] * p + c[4]) * p + c[5]) * p + c[6]
    recip = 1.0 / r
    phi = z2 * recip
    phip = z2p * recip - phi * recip
    return -(fpi * rhojp + fpj * rhoip + phip) * recip, phi


@numba.njit(inline="always")
def _embedding(rho, ti, nrho, rdrho, rhomax, frho, type2frho, with_energy):
    """``(F'(rho), F(rho))`` of an atom of type ti (LAMMPS' spline on the rho grid; beyond the table
    F grows linearly with F'); F only ``with_energy`` (else 0)."""
    p = rho * rdrho + 1.0
    m = int(p)
    m = max(1, min(m, nrho - 1))
    p -= m
    p = min(p, 1.0)
    c = frho[type2frho[ti], m]
    fpi = (c[0] * p + c[1]) * p + c[2]
    phi = 0.0
    if with_energy:
        phi = ((c[3] * p + c[4]) * p + c[5]) * p + c[6]
        if rho > rhomax:
            phi += fpi * (rho - rhomax)
    return fpi, phi


@numba.njit(parallel=True, cache=True)
def eam_density_cpu(positions, types, L, invL, nbr, nbr_count, n_types, nr, rdr, nrho, rdrho, rhomax, cutsq,
                    rhor, type2rhor, frho, type2frho, fp, energy, with_energy):
    """Pass 1 (see the module docstring): ``fp[i] = F'(rho_i)`` for the targets (the first
    ``len(nbr_count)`` rows), and ``energy[i] = F(rho_i)`` with ``with_energy``."""
    for i in numba.prange(nbr_count.shape[0]):
        ti = types[i]
        rho = 0.0
        for k in range(nbr_count[i]):
            j = nbr[i, k]
            dx, dy, dz, rsq = min_image_separation(positions, i, j, L, invL)
            if rsq < cutsq:
                m, p = _grid_point(math.sqrt(rsq), rdr, nr)
                c = rhor[type2rhor[types[j] * n_types + ti], m]
                rho += ((c[3] * p + c[4]) * p + c[5]) * p + c[6]
        fp[i], phi = _embedding(rho, ti, nrho, rdrho, rhomax, frho, type2frho, with_energy)
        if with_energy:
            energy[i] = phi


@numba.njit(parallel=True, cache=True)
def eam_forces_cpu(positions, types, L, invL, nbr, nbr_count, n_types, nr, rdr, cutsq, rhor, type2rhor, z2r,
                   type2z2r, fp, forces, energy, virial, with_energy):
    """Pass 2 (see the module docstring): forces of the targets; with ``with_energy`` half the pair
    energies added to ``energy`` (which pass 1 set to the embedding energies) and the virial."""
    for i in numba.prange(nbr_count.shape[0]):
        ti = types[i]
        sums = ZERO_SUMS
        fpi = fp[i]
        for k in range(nbr_count[i]):
            j = nbr[i, k]
            dx, dy, dz, rsq = min_image_separation(positions, i, j, L, invL)
            if rsq < cutsq:
                fpair, phi = _eam_pair(math.sqrt(rsq), ti, types[j], fpi, fp[j], n_types, nr, rdr, rhor, type2rhor,
                                       z2r, type2z2r)
                sums = full_pair(dx, dy, dz, fpair, phi, with_energy, sums)
        forces[i, 0] = sums[0]
        forces[i, 1] = sums[1]
        forces[i, 2] = sums[2]
        if with_energy:
            energy[i] += 0.5 * sums[3]
            for q in range(6):
                virial[i, q] = 0.5 * sums[4 + q]


@numba.njit(inline="always")
def _half_separation(positions, i, j, k, plain, L, invL):
    """r_i - r_j and its square for entry k of a half list: the minimum image only past the
    ``plain`` entries that need none (the CPU builder puts those first)."""
    dx = positions[i, 0] - positions[j, 0]
    dy = positions[i, 1] - positions[j, 1]
    dz = positions[i, 2] - positions[j, 2]
    if k >= plain:
        dx -= L[0] * np.rint(dx * invL[0])
        dy -= L[1] * np.rint(dy * invL[1])
        dz -= L[2] * np.rint(dz * invL[2])
    return dx, dy, dz, dx * dx + dy * dy + dz * dz


@numba.njit(parallel=True, cache=True)
def eam_density_half_cpu(positions, types, L, invL, nbr, nbr_count, nbr_plain, n_types, nr, rdr, cutsq, rhor,
                         type2rhor, bounds, acc):
    """Pass 1 over a half list: each pair's two densities, rho_ba to i and rho_ab to j, into
    ``acc[t]`` (chunks, N) of the chunk t that owns the pair (it touches and first zeroes only the
    rows from ``bounds[t]`` on)."""
    n = nbr_count.shape[0]
    for t in numba.prange(bounds.shape[0] - 1):
        a = acc[t]
        for i in range(bounds[t], n):
            a[i] = 0.0
        for i in range(bounds[t], bounds[t + 1]):
            ti = types[i]
            rho = 0.0
            for k in range(nbr_count[i]):
                j = nbr[i, k]
                dx, dy, dz, rsq = _half_separation(positions, i, j, k, nbr_plain[i], L, invL)
                if rsq < cutsq:
                    tj = types[j]
                    m, p = _grid_point(math.sqrt(rsq), rdr, nr)
                    c = rhor[type2rhor[tj * n_types + ti], m]
                    rho += ((c[3] * p + c[4]) * p + c[5]) * p + c[6]
                    c = rhor[type2rhor[ti * n_types + tj], m]
                    a[j] += ((c[3] * p + c[4]) * p + c[5]) * p + c[6]
            a[i] += rho


@numba.njit(parallel=True, cache=True)
def eam_embedding_half_cpu(bounds, acc, types, nrho, rdrho, rhomax, frho, type2frho, fp, embedding, with_energy):
    """The densities as the chunks' sums in chunk order (the chunks that touched row i), then
    ``fp[i] = F'(rho_i)`` and with ``with_energy`` ``embedding[i] = F(rho_i)``."""
    n_chunks = bounds.shape[0] - 1
    for i in numba.prange(fp.shape[0]):
        top = 0
        while top + 1 < n_chunks and bounds[top + 1] <= i:
            top += 1
        rho = acc[0, i]
        for t in range(1, top + 1):
            rho += acc[t, i]
        fp[i], phi = _embedding(rho, types[i], nrho, rdrho, rhomax, frho, type2frho, with_energy)
        if with_energy:
            embedding[i] = phi


@numba.njit(parallel=True, cache=True)
def eam_forces_half_cpu(positions, types, L, invL, nbr, nbr_count, nbr_plain, n_types, nr, rdr, cutsq, rhor,
                        type2rhor, z2r, type2z2r, fp, bounds, acc, vir, with_energy):
    """Pass 2 over a half list: each pair's force ``f_ij`` added to i and subtracted from j, and with
    ``with_energy`` half its energy phi and half its virial to each, into chunk t's ``acc[t]``
    (N, 4: fx, fy, fz, e) and ``vir[t]`` (N, 6), as :func:`pycumd.forces.sum_chunks` adds them."""
    n = nbr_count.shape[0]
    for t in numba.prange(bounds.shape[0] - 1):
        f = acc[t]
        w = vir[t]
        clear_chunk(f, w, bounds[t], n, with_energy)
        for i in range(bounds[t], bounds[t + 1]):
            ti = types[i]
            fpi = fp[i]
            sums = ZERO_SUMS
            for k in range(nbr_count[i]):
                j = nbr[i, k]
                dx, dy, dz, rsq = _half_separation(positions, i, j, k, nbr_plain[i], L, invL)
                if rsq < cutsq:
                    fpair, phi = _eam_pair(math.sqrt(rsq), ti, types[j], fpi, fp[j], n_types, nr, rdr, rhor,
                                           type2rhor, z2r, type2z2r)
                    sums = newton_pair(dx, dy, dz, fpair, phi, j, f, w, with_energy, sums)
            add_own_sums(f, w, i, sums, with_energy)


class EAMForces(ForceEvaluatorBase):
    """Evaluates an :class:`~pycumd.potentials.eam.EAM` potential over a
    :class:`~pycumd.neighbors.verlet.NeighborList` (full, or the CPU's half list: ``neighbors.half``)
    or a spatial domain's full list, whose ghosts' ``F'(rho)`` it refreshes between the passes
    through ``neighbors.forward``.

    Parameters
    ----------
    potential : EAM
    n_types : int
    backend, precision : as chosen by the Simulation
    lanes : ignored (one thread per target atom); accepted as :class:`~pycumd.forces.PairForces`
        takes it.
    tables : EAMTables, optional
        What the kernels read (``potential.table(n_types)`` by default; ``pair_style hybrid`` hands the
        tables of the EAM sub-style's pairs, :class:`pycumd.eam_forces.HybridForces`).

    Attributes
    ----------
    fp : array, (rows,) ``accum_t``
        ``F'(rho)`` of every row of the positions (targets, then a domain's ghosts), eV per density
        unit, of the last evaluation.
    """

    capturable = True

    def __init__(self, potential, n_types: int, backend, precision, lanes: int | None = None, tables=None):
        if precision.composite:
            raise NotImplementedError(f"composite precision is not implemented for pair_style {potential.name} "
                                      f"(EAM); use precision 'single', 'mixed' or 'double'")
        self.potential = potential
        self.n_types = n_types
        self.backend = backend
        self.precision = precision
        self.tables = t = potential.table(n_types) if tables is None else tables
        self.fp = None
        #: CPU half list: per-chunk densities (chunks, N), forces and energies (chunks, N, 4), virials
        #: (chunks, N, 6), and the embedding energies (N,)
        self._chunks = None
        if backend.is_gpu:
            xp = backend.xp
            columns = table_columns()
            #: pass 1's rows of (x, y, z, F'(rho)) for pass 2 (fp_rows_option), where they apply
            self._fp_rows = fp_rows_option() and one_table(t)
            defines = {**precision.cuda_defines, "EAM_TABLE_COLUMNS": columns}
            names = ["eam_density", "eam_density_energy", "eam_forces", "eam_forces_energy"]
            if self._fp_rows:
                defines["EAM_FP_ROWS"] = 1
                names += [name + "_fp_rows" for name in names]
            module = backend.kernel_module(SOURCE, defines, options=precision.cuda_options)
            self._kernels = {name: module.get_function(name) for name in names}
            self._rows = None
            pair = precision.pair_dtype
            self._frho, self._rhor, self._z2r = (xp.asarray(a) for a in device_tables(t, columns, pair))
            self._maps = tuple(xp.asarray(a, dtype=np.int32) for a in (t.type2frho, t.type2rhor, t.type2z2r))
            self._pair = pair
            self.compute = self._compute_cuda
        else:
            self.compute = self._compute_cpu

    def _fp_of(self, rows: int):
        """The ``fp`` array for ``rows`` rows, allocated at the first call of a size (outside any
        graph capture: the setup's evaluation comes first)."""
        if self.fp is None or self.fp.shape[0] != rows:
            self.fp = None
            self.fp = self.backend.xp.zeros(rows, dtype=self.precision.accum_dtype)
        return self.fp

    def _rows_of(self, n: int):
        """Pass 1's (n, 4) rows of x, y, z, F'(rho) (``EAM_FP_ROWS``), allocated as :meth:`_fp_of`."""
        if self._rows is None or self._rows.shape[0] != n:
            self._rows = None
            self._rows = self.backend.xp.zeros((n, 4), dtype=self.precision.state_dtype)
        return self._rows

    def _compute_cpu(self, state, neighbors, with_energy: bool) -> None:
        t = self.tables
        L = np.asarray(state.box_lengths, dtype=np.float64)
        invL = 1.0 / L
        fp = self._fp_of(state.positions.shape[0])
        if neighbors.half:
            self._compute_cpu_half(state, neighbors, with_energy, L, invL, fp)
            return
        eam_density_cpu(state.positions, state.types, L, invL, neighbors.nbr, neighbors.nbr_count, self.n_types,
                        t.nr, t.rdr, t.nrho, t.rdrho, t.rhomax, t.cutsq, t.rhor, t.type2rhor, t.frho, t.type2frho,
                        fp, state.energy, with_energy)
        neighbors.forward(fp)
        eam_forces_cpu(state.positions, state.types, L, invL, neighbors.nbr, neighbors.nbr_count, self.n_types,
                       t.nr, t.rdr, t.cutsq, t.rhor, t.type2rhor, t.z2r, t.type2z2r, fp, state.forces,
                       state.energy, state.virial, with_energy)

    def _compute_cuda(self, state, neighbors, with_energy: bool) -> None:
        t, n = self.tables, state.n_atoms
        real, pair = self.precision.state_dtype, self._pair
        L = np.asarray(state.box_lengths)
        rows = int(state.positions.shape[0])
        fp = self._fp_of(rows)
        grid = ((n + BLOCK - 1) // BLOCK,), (BLOCK,)
        box = (*[real(x) for x in L], *[real(x) for x in 1.0 / L])
        common = (self.control, state.positions, neighbors.nbr, neighbors.nbr_count, np.int32(n), np.int32(n),
                  np.int32(self.n_types), np.int32(t.nr), pair(t.rdr), pair(t.cutsq), *box)
        suffix = "_energy" if with_energy else ""
        extra = ()
        if self._fp_rows and rows == n:          # no ghost rows: every neighbour's F'(rho) is pass 1's
            suffix += "_fp_rows"
            extra = (self._rows_of(n),)
        accum = self.precision.accum_dtype
        self._kernels["eam_density" + suffix](*grid, (*common, np.int32(t.nrho), accum(t.rdrho), accum(t.rhomax),
                                                      self._rhor, self._maps[1], self._frho, self._maps[0],
                                                      fp, state.energy, *extra))
        neighbors.forward(fp)
        self._kernels["eam_forces" + suffix](*grid, (*common, self._rhor, self._maps[1], self._z2r, self._maps[2],
                                                     fp, state.forces, state.energy, state.virial, *extra))

    def _compute_cpu_half(self, state, neighbors, with_energy: bool, L, invL, fp) -> None:
        """The CPU's half list (one process): one chunk of targets per thread with its own sums,
        added in chunk order (the same bits for the same thread count)."""
        t, n = self.tables, state.n_atoms
        n_chunks = max(1, min(numba.get_num_threads(), n))
        bounds = half_list_chunks(neighbors.nbr_count, n_chunks)
        if self._chunks is None or self._chunks[0].shape[:2] != (n_chunks, n):
            self._chunks = None
            self._chunks = (np.empty((n_chunks, n)), np.empty((n_chunks, n, 4)), np.empty((n_chunks, n, 6)),
                            np.empty(n))
        rho_acc, acc, vir, embedding = self._chunks
        eam_density_half_cpu(state.positions, state.types, L, invL, neighbors.nbr, neighbors.nbr_count,
                             neighbors.nbr_plain, self.n_types, t.nr, t.rdr, t.cutsq, t.rhor, t.type2rhor, bounds,
                             rho_acc)
        eam_embedding_half_cpu(bounds, rho_acc, state.types, t.nrho, t.rdrho, t.rhomax, t.frho, t.type2frho, fp,
                               embedding, with_energy)
        eam_forces_half_cpu(state.positions, state.types, L, invL, neighbors.nbr, neighbors.nbr_count,
                            neighbors.nbr_plain, self.n_types, t.nr, t.rdr, t.cutsq, t.rhor, t.type2rhor, t.z2r,
                            t.type2z2r, fp, bounds, acc, vir, with_energy)
        sum_chunks(bounds, acc, vir, state.forces, state.energy, state.virial, with_energy)
        if with_energy:
            state.energy[:n] += embedding


# -- pair_style hybrid/overlay and hybrid: EAM plus a pair style ------------------------------------------
class _PairOutputs:
    """What the pair pass reads and writes: the state's (or a domain view's) members, with its own
    forces, energy and virial arrays of the same shapes."""

    def __init__(self, state, forces, energy, virial):
        self._state = state
        self.forces, self.energy, self.virial = forces, energy, virial

    def __getattr__(self, name):
        return getattr(self._state, name)


class HybridForces(ForceEvaluatorBase):
    """Evaluates a :class:`~pycumd.potentials.hybrid.PairHybrid` over a neighbour list (CPU):
    the EAM sub-style's two passes (:class:`~pycumd.eam_forces.EAMForces`) and the pair sub-style's pass
    (:class:`~pycumd.forces.PairForces`) over one neighbour list, summed.

    Each evaluator reads the tables of its own type pairs (the others zero or empty, see
    :mod:`pycumd.potentials.hybrid`) and tests its own cutoff per pair; the list's cutoff is the larger
    of the two.  The EAM pass writes the state's forces, per-atom energies and virials, the pair pass
    writes its own arrays, which are then added: ``f_i = f_i(EAM) + f_i(pair)``, and with energies the
    same for ``e_i`` and ``W_i`` (LAMMPS accumulates the sub-styles' pairs into one sum; the two orders
    differ in the last bits only).  Works over the CPU's half or full list in one process and over MPI
    spatial domains (inside :class:`~pycumd.parallel.domains.DomainForces`: the EAM pass forwards the
    ghosts' F'(rho), the pair pass reads the extended rows).  CPU only: a GPU run stops at construction.

    Parameters
    ----------
    potential : PairHybrid
    n_types : int
    backend, precision : as chosen by the Simulation (a GPU backend raises NotImplementedError)
    lanes : int, optional
        The pair pass's summation lanes (:class:`~pycumd.forces.PairForces`).
    """

    capturable = False

    def __init__(self, potential, n_types: int, backend, precision, lanes: int | None = None):
        if backend.is_gpu:
            raise NotImplementedError(GPU_REFUSAL.format(style=potential.style))
        self.potential = potential
        self.n_types = n_types
        self.backend = backend
        self.eam = EAMForces(potential.eam, n_types, backend, precision, tables=potential.eam_table(n_types))
        self.pair = PairForces(potential.pair, n_types, backend, precision, lanes=lanes,
                               table=potential.pair_table(n_types))
        self._arrays = None

    def _outputs_of(self, state) -> _PairOutputs:
        """The pair pass's view of ``state``, its arrays allocated at the first call of a shape."""
        shapes = (state.forces.shape, state.energy.shape, state.virial.shape)
        if self._arrays is None or tuple(a.shape for a in self._arrays) != shapes:
            self._arrays = tuple(np.zeros(shape) for shape in shapes)
        return _PairOutputs(state, *self._arrays)

    def compute(self, state, neighbors, with_energy: bool) -> None:
        """Forces (and with ``with_energy`` per-atom energies and virials) of the targets: the EAM
        pass into the state, the pair pass into its own arrays, then added."""
        self.eam.compute(state, neighbors, with_energy)
        outputs = self._outputs_of(state)
        self.pair.compute(outputs, neighbors, with_energy)
        state.forces += outputs.forces
        if with_energy:
            state.energy += outputs.energy
            state.virial += outputs.virial
