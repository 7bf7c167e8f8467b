"""All-pairs pair forces (no neighbour list): the tiled kernel of the seed (IUMD) for long-ranged ions.

For interactions whose range is comparable to the box (screened Coulomb ions, ``r_cut = None``
meaning *every* pair with the minimum image), a neighbour list holds nearly all particles and
costs more than it saves.  :class:`AllPairsForces` evaluates the full N x N force matrix:

``f_i = sum_{j != i} (F/r)(r_ij) r_ij``,  ``e_i = 1/2 sum_j E(r_ij)``,  ``W_i = 1/2 sum_j r_ij (x) r_ij (F/r)``

GPU (``allpairs.cu``): each thread owns its targets (in registers) and sums their forces, so no
floating-point atomics; sources pass through shared memory in tiles.  Two kernels:

* ``allpairs_forces``, any potential and precision: one target per thread, block shape
  ``(m, l)`` (m targets, l thread rows splitting each tile).
* ``allpairs_yukawa_*``, the fast path for screened Coulomb without cutoff in single and mixed
  precision (prefactors ``A_ij = a_i a_j``): fixed-point minimum image, the hardware rsqrt and
  ex2, R targets per thread and the sources split into S chunks; launch shape ``(m, l, R, S)``
  (``S = 0``: chosen so that the blocks spread evenly over the multiprocessors).
* ``allpairs_yukawa_newton_*``, the same pair arithmetic with Newton's third law: each unordered
  pair once, the reaction carried around the warp by shuffles and the partial sums of each particle
  added in a fixed order by ``allpairs_yukawa_newton_sum`` (still no atomics); launch shape
  ``("newton", W, R)``: W warps per block, R targets per lane.  See the kernels' comments and
  docs/ions.md.

Boxes shorter than twice the cutoff (``r_cut > L/2`` along some edge): every periodic image in
range, as LAMMPS takes them through its ghost atoms.  :func:`image_shifts` lists, on the host, the
lattice shifts ``n`` for which a minimum-image separation ``d`` can have ``|d + n L| < r_cut``; the
force, energy and virial sums then run over every source ``j`` and every shift (sources in order,
for each source the shifts in list order), skipping only ``j = i`` at ``n = 0``:

``f_i = sum_j sum_n (F/r) (d_ij + n L)``,  ``e_i = 1/2 sum_j sum_n E(|d_ij + n L|)``

so an atom meets its own images (``n`` and ``-n``, each with the factor 1/2), as in LAMMPS.  This
is a separate kernel (``allpairs_image_forces``; the CPU's :func:`_make_cpu_image_kernel`), taken only
when the box needs it: a box of at least twice the cutoff runs the minimum-image kernels unchanged.
The set is recomputed from the box at every force call (a barostat's box included) and uploaded
only when it changes.

The launch shape is chosen on first use by timing a few candidates with CUDA events, and cached
per (device, N, kernel).  CPU (Numba, below): parallel over targets, each summing ``j = 0 .. N-1``
in order, which is also the GPU generic kernel's order when ``l = 1``.

:class:`AllPairsNeighbors` stands in for the neighbour list in :class:`~pycumd.simulation.Simulation`:
it builds no list; its "build" only wraps positions into the box (at the start of a run and every
``wrap_every`` steps) so that coordinates stay small.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..contracts import ForceEvaluatorBase, NeighborStructureBase
from ..precision import c_type_name
from ..system import InputError

#: block shapes (m targets, l rows) timed on first use; l > 1 keeps small systems' GPUs busy
BLOCK_CANDIDATES = ((128, 1), (256, 1), (64, 4), (32, 8))
#: launch shapes (m, l, R targets per thread, S source chunks; 0 = balanced) of the Yukawa fast path
YUKAWA_CANDIDATES = ((32, 8, 2, 0), (64, 4, 2, 0), (128, 2, 2, 0), (32, 4, 4, 0), (64, 2, 4, 0),
                     (32, 8, 4, 0), (128, 1, 2, 0), (64, 4, 2, 1))
#: launch shapes ("newton", W warps per block, R targets per lane) of the fast path with Newton's third law
NEWTON_CANDIDATES = (("newton", 8, 4), ("newton", 4, 4), ("newton", 8, 2), ("newton", 4, 2), ("newton", 2, 4))
#: largest partial-sum buffer (bytes) of a Newton launch shape; shapes needing more are not tuned
NEWTON_MAX_PARTIAL_BYTES = 1 << 30
#: shared memory a block may use without opting in (bytes)
SHARED_LIMIT = 48 * 1024
_TUNED: dict = {}
LOG2_E = 1.4426950408889634


def yukawa_fast_params(potential, table, n_types: int, precision):
    """Per-type ``a_t`` with ``A_ij = a_i a_j`` and ``kappa`` if the Yukawa fast path applies, else None.

    It applies to :class:`~pycumd.potentials.yukawa.Yukawa` without cutoff (every row's ``rc^2``
    infinite, no energy shift), one screening length, non-negative prefactors that factor as
    ``a_i a_j`` (charges of one sign, e.g. ``charges([6, 8])``), in single or mixed precision.
    """
    if getattr(potential, "cuda_header", None) != "potentials/yukawa.cuh":
        return None
    if precision.name not in ("single", "mixed") or getattr(precision, "composite", False):
        return None
    t = np.asarray(table, dtype=np.float64).reshape(n_types, n_types, -1)
    if not (np.isinf(t[..., 0]).all() and (t[..., 2] == 0).all() and (t[..., 3] == 0).all()):
        return None
    kappa = t[0, 0, 5]
    A = t[..., 4]
    if not (t[..., 5] == kappa).all() or not (A >= 0).all() or not kappa > 0:
        return None
    a = np.sqrt(np.diagonal(A))
    if not np.allclose(np.outer(a, a), A, rtol=1e-12, atol=0.0):
        return None
    return a, float(kappa)


def _make_cpu_kernel(pair_function):
    from ..forces import ZERO_SUMS, make_pair_sums

    add, store = make_pair_sums(pair_function)

    @numba.njit(parallel=True)
    def kernel(positions, types, sources, source_types, self_offset, L, invL, table, n_types, forces,
               energy, virial, with_energy):
        # targets: the rows of positions; sources: the rows of sources, target i being source
        # i + self_offset (the serial run passes positions twice and 0; P x Q blocks: pycumd.parallel.matrix)
        for i in numba.prange(positions.shape[0]):
            xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
            base = types[i] * n_types
            sums = ZERO_SUMS
            for j in range(sources.shape[0]):
                if j == i + self_offset:
                    continue
                sums = add(sums, xi - sources[j, 0], yi - sources[j, 1], zi - sources[j, 2],
                           L, invL, table[base + source_types[j]], with_energy)
            store(sums, i, forces, energy, virial, with_energy)
    return kernel


def _make_cpu_image_kernel(pair_function):
    from ..forces import ZERO_SUMS, make_pair_sums, make_separation_sum

    add_separation = make_separation_sum(pair_function)
    store = make_pair_sums(pair_function)[1]

    @numba.njit(parallel=True)
    def kernel(positions, types, sources, source_types, self_offset, L, invL, shifts, zero_shift, table,
               n_types, forces, energy, virial, with_energy):
        # as _make_cpu_kernel's, each pair's minimum image d taken with every shift n: d + n L
        for i in numba.prange(positions.shape[0]):
            xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
            base = types[i] * n_types
            sums = ZERO_SUMS
            for j in range(sources.shape[0]):
                dx = xi - sources[j, 0]
                dy = yi - sources[j, 1]
                dz = zi - sources[j, 2]
                dx -= L[0] * np.rint(dx * invL[0])
                dy -= L[1] * np.rint(dy * invL[1])
                dz -= L[2] * np.rint(dz * invL[2])
                row = table[base + source_types[j]]
                self_pair = j == i + self_offset
                for s in range(shifts.shape[0]):
                    if self_pair and s == zero_shift:
                        continue
                    sums = add_separation(sums, dx + shifts[s, 0] * L[0], dy + shifts[s, 1] * L[1],
                                          dz + shifts[s, 2] * L[2], row, with_energy)
            store(sums, i, forces, energy, virial, with_energy)
    return kernel


#: most lattice shifts an all-pairs image sum takes; a box needing more (a box collapsing under a
#: barostat, or a cutoff of many box lengths) is refused
MAX_IMAGE_SHIFTS = 20_000
#: how far (in box lengths) beyond L/2 a rounded minimum-image separation is assumed to reach
IMAGE_MARGIN = 1e-6


def image_shifts(r_cut: float, L) -> np.ndarray:
    """The lattice shifts ``n`` (integers, shape (K, 3)) that a pair within ``r_cut`` may need.

    A minimum-image separation ``d`` has ``|d_a| <= L_a / 2``, so ``|d + n L|`` is at least
    ``sqrt(sum_a max(0, |n_a| - 1/2)^2 L_a^2)``; every ``n`` with that bound below ``r_cut`` is
    listed, in lexicographic order (x, then y, then z).  The bound takes ``|d_a|`` up to
    ``(1/2 + IMAGE_MARGIN) L_a``, which covers the rounding of the minimum image in float32.
    ``r_cut <= L_a / 2`` in every direction (the minimum-image convention), or an infinite
    ``r_cut`` (all pairs, nearest image): ``[[0, 0, 0]]`` alone.
    """
    L = np.asarray(L, dtype=np.float64)
    if not math.isfinite(r_cut) or (r_cut <= 0.5 * L).all():
        return np.zeros((1, 3), dtype=np.int32)
    half = 0.5 + IMAGE_MARGIN
    n_max = np.floor(r_cut / L + half).astype(np.int64)
    if np.prod(2 * n_max + 1) > 64 * MAX_IMAGE_SHIFTS:
        raise InputError(_too_many_images(r_cut, L, int(np.prod(2 * n_max + 1))))
    axes = [np.arange(-m, m + 1) for m in n_max]
    n = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    gap = np.maximum(np.abs(n) - half, 0.0) * L
    return np.ascontiguousarray(n[(gap * gap).sum(axis=1) < r_cut * r_cut], dtype=np.int32)


def _too_many_images(r_cut: float, L, count: int) -> str:
    return (f"box {' x '.join(f'{x:.6g}' for x in L)} with cutoff {r_cut:g} needs about {count} periodic "
            f"images of each pair (at most {MAX_IMAGE_SHIFTS} are taken): use a larger box (replicate "
            f"the system) or a shorter cutoff")


def check_box_all_pairs(r_cut: float, L) -> None:
    """Raise :class:`InputError` if the box needs more than MAX_IMAGE_SHIFTS periodic images."""
    count = len(image_shifts(r_cut, L))
    if count > MAX_IMAGE_SHIFTS:
        raise InputError(_too_many_images(r_cut, np.asarray(L, dtype=np.float64), count))


class AllPairsForces(ForceEvaluatorBase):
    """Pair forces over all pairs; same interface as :class:`~pycumd.forces.PairForces`.

    Each pair by its minimum image, and where the box is shorter than twice the cutoff, by every
    periodic image in range (:func:`image_shifts`; see the module docstring).

    Parameters
    ----------
    potential : PairPotential
        Any pair potential; ``r_cut = inf`` (e.g. ``Yukawa(lambda, r_cut=None)``) means all pairs,
        each by its nearest image.
    n_types : int
    backend, precision : as chosen by the Simulation
    block : tuple of int, optional
        GPU launch shape: ``(m, l)`` for the generic kernel, ``(m, l, R, S)`` or ``("newton", W, R)``
        for the Yukawa fast path (see the module docstring); default: auto-tuned on first use.
    fast : bool
        Use the Yukawa fast path where it applies (GPU, single or mixed; see
        :func:`yukawa_fast_params`).  ``False``: always the generic kernel.
    exact_separation : bool
        Fast path only: form each separation from all 32 fixed-point bits (``True``, the default:
        as exact as rounding the float64 difference to float32, and in a cubic box the fastest
        form) or from the top 23 (``False``: an absolute error of at most L 2^-24, as float32
        coordinates in [0, L) have).
    min_blocks_per_sm : int
        Fast path only: ``> 0`` compiles the kernels with ``__launch_bounds__(256,
        min_blocks_per_sm)`` (a register cap for occupancy).  Default 0 (no cap): 6 was measured
        slower on the H100 (docs/ions.md).
    newton_unroll : int
        Newton launch shapes only: unroll factor of the kernel's 32-step loop (1, 2 or 4; more
        overlap against more registers; 4, the default, measured fastest: docs/ions.md).
    share : (rank, size)
        Compute this rank's share of the pairs only (replicated atoms over ``size`` MPI ranks,
        :mod:`pycumd.parallel.replicated`): the forces (and energies, virials) it writes are partial
        sums that a sum over the ranks completes.  The Yukawa fast path takes a contiguous range of
        the Newton kernel's tile pairs, balanced by their work (every unordered pair once over all
        ranks; the other launch shapes are not used); the generic kernel (and the CPU) the targets
        ``target_rows`` against every source, zeros elsewhere, so that the sum over the ranks gives
        the 1-rank values bit for bit.  Default ``(0, 1)``: every pair.
    target_rows : (first, end), optional
        With ``share``, for the generic kernel: this rank's targets, rows ``first .. end - 1``
        (:func:`~pycumd.parallel.grid.block_range`).

    ``compute(state, neighbors, with_energy)`` ignores ``neighbors``.
    """

    def __init__(self, potential, n_types: int, backend, precision, block=None, fast: bool = True,
                 exact_separation: bool = True, min_blocks_per_sm: int = 0, newton_unroll: int = 4,
                 share: tuple = (0, 1), target_rows: tuple | None = None):
        from ..forces import pair_kernel, potential_defines

        self.share = (int(share[0]), int(share[1]))
        self.target_rows = None if target_rows is None else (int(target_rows[0]), int(target_rows[1]))
        if not 0 <= self.share[0] < self.share[1]:
            raise ValueError(f"share must be (rank, size) with 0 <= rank < size, got {share!r}")
        self.potential = potential
        self.n_types = n_types
        self.backend = backend
        self.block = tuple(block) if block is not None else None
        self.r_cut = float(potential.max_cutoff(n_types))
        self._images = (None, None)       # (shifts (K, 3) on the host, None or (kernel's shifts, zero row))
        self._image_box = None
        self._image_kernel = None
        self._precision = precision
        table = potential.table(n_types)
        self._defines = {**precision.cuda_defines, **potential_defines(potential)}
        self._real = precision.state_dtype
        self._accum = precision.accum_dtype
        fast_params = yukawa_fast_params(potential, table, n_types, precision) if backend.is_gpu and fast else None
        self.fast = fast_params is not None
        if self.fast:
            self.exact_separation = bool(exact_separation)
            self.min_blocks_per_sm = int(min_blocks_per_sm)
            if newton_unroll not in (1, 2, 4):
                raise InputError(f"newton_unroll must be 1, 2 or 4, got {newton_unroll!r}")
            self.newton_unroll = int(newton_unroll)
            self._setup_fast(fast_params, precision)
            # a share of the pairs: the Newton shapes only (a range of their tile pairs)
            self.candidates = NEWTON_CANDIDATES if self.shared else YUKAWA_CANDIDATES + NEWTON_CANDIDATES
            self.compute = self._compute_fast
            return
        self._kernel, self._table = pair_kernel(potential, table, backend, precision, "neighbors/allpairs.cu",
                                                "allpairs_forces", _make_cpu_kernel)
        self.candidates = BLOCK_CANDIDATES
        self.compute = self._compute_cuda if backend.is_gpu else self._compute_cpu

    @property
    def shared(self) -> bool:
        """Whether this evaluator computes a share of the pairs (``share`` size > 1)."""
        return self.share[1] > 1

    def _target_share(self, state, with_energy: bool):
        """``(t0, t1, view)``: this rank's targets (rows t0..t1) and a view of the state holding
        them (positions, forces, energy, virial of those rows), the other rows' outputs zeroed (the
        energies and virials only when they are computed: the sum over the ranks reads them then)."""
        from types import SimpleNamespace

        if self.target_rows is None:
            raise ValueError("a share of the pairs over the targets needs target_rows=(first, end)")
        t0, t1 = self.target_rows
        for array in (state.forces, state.energy, state.virial) if with_energy else (state.forces,):
            array[:t0] = 0
            array[t1:] = 0
        view = SimpleNamespace(positions=state.positions[t0:t1], types=state.types[t0:t1], n_atoms=t1 - t0,
                               forces=state.forces[t0:t1], energy=state.energy[t0:t1], virial=state.virial[t0:t1],
                               box_lengths=state.box_lengths)
        return t0, t1, view

    # -- periodic images ---------------------------------------------------------------------
    def image_set(self, L):
        """``None`` when the minimum image suffices for box ``L``, else ``(shifts, zero)``: the lattice
        shifts of :func:`image_shifts` as the kernel reads them ((K, 3) int32 on the backend) and the
        row of the zero shift.  Recomputed when the box changes; uploaded when the set does."""
        key = tuple(float(x) for x in L)
        if key != self._image_box:
            shifts = image_shifts(self.r_cut, L)
            if len(shifts) > MAX_IMAGE_SHIFTS:
                raise InputError(_too_many_images(self.r_cut, np.asarray(L, dtype=np.float64), len(shifts)))
            if self._images[0] is None or not np.array_equal(shifts, self._images[0]):
                if len(shifts) == 1:
                    self._images = (shifts, None)
                else:
                    zero = int(np.flatnonzero((shifts == 0).all(axis=1))[0])
                    device_shifts = self.backend.xp.asarray(shifts) if self.backend.is_gpu else shifts
                    self._images = (shifts, (device_shifts, zero))
            self._image_box = key
        return self._images[1]

    def _image_kernel_built(self):
        """The image-sum kernel (``allpairs_image_forces``; CPU :func:`_make_cpu_image_kernel`), built on first use."""
        if self._image_kernel is None:
            from ..forces import pair_kernel

            self._image_kernel = pair_kernel(self.potential, self._table, self.backend, self._precision,
                                             "neighbors/allpairs.cu", "allpairs_image_forces",
                                             _make_cpu_image_kernel)[0]
        return self._image_kernel

    def check_pair_errors(self, state) -> None:
        """:func:`pycumd.forces.check_pair_errors` of this evaluator's potential and table."""
        if not self.fast:
            from ..forces import check_pair_errors

            check_pair_errors(self.potential, self._table, self.n_types, state, self.backend)

    # -- CPU ------------------------------------------------------------------------------
    def _cpu(self, state, sources, source_types, self_offset: int, with_energy: bool) -> None:
        L = np.asarray(state.box_lengths, dtype=np.float64)
        images = self.image_set(L)
        if images is None:
            self._kernel(state.positions, state.types, sources, source_types, int(self_offset), L, 1.0 / L,
                         self._table, self.n_types, state.forces, state.energy, state.virial, with_energy)
            return
        shifts, zero = images
        self._image_kernel_built()(state.positions, state.types, sources, source_types, int(self_offset), L,
                                   1.0 / L, shifts, zero, self._table, self.n_types, state.forces, state.energy,
                                   state.virial, with_energy)

    def _compute_cpu(self, state, neighbors, with_energy: bool) -> None:
        if self.shared:
            t0, _, view = self._target_share(state, with_energy)
            self._cpu(view, state.positions, state.types, t0, with_energy)
        else:
            self._cpu(state, state.positions, state.types, 0, with_energy)
        self.check_pair_errors(state)

    def compute_block(self, state, sources, source_types, self_offset: int, with_energy: bool) -> None:
        """Forces on the state's atoms (targets) from ``sources`` only (one block of the force matrix).

        ``sources``: positions as the state's (CPU (M, 3); GPU (M, 4) rows with the type), ``source_types``
        (M,) int32 (CPU; on the GPU the type is the 4th column); target ``i`` is source
        ``i + self_offset`` (its self pair skipped), no such source when out of range.  The generic
        kernel only (the Yukawa fast path takes one array); used by :mod:`pycumd.parallel.matrix`.
        """
        if not self.backend.is_gpu:
            self._cpu(state, sources, source_types, self_offset, with_energy)
            return
        if self.fast:
            raise NotImplementedError("the Yukawa fast path takes one array of targets and sources; "
                                      "build AllPairsForces(..., fast=False) for force-matrix blocks")
        if self.block is None:
            self.block = (128, 1)
        self._launch(state, self.block, with_energy, sources, self_offset)

    # -- GPU ------------------------------------------------------------------------------
    def _shared_bytes(self, block) -> int:
        m, l = block
        tile = m * l
        real_size = np.dtype(self._real).itemsize
        accum_size = np.dtype(self._accum).itemsize
        tile_bytes = tile * (3 * real_size + 4)
        tile_bytes = -(-tile_bytes // accum_size) * accum_size
        return tile_bytes + (10 * tile * accum_size if l > 1 else 0)

    def _launch(self, state, block, with_energy, sources=None, self_offset: int = 0) -> None:
        m, l = block
        n = state.n_atoms
        real = self._real
        L = np.asarray(state.box_lengths, dtype=np.float64)
        sources = state.positions if sources is None else sources
        head = (state.positions, np.int32(n), sources, np.int32(len(sources)), np.int32(self_offset),
                self._table, np.int32(self.n_types), *[real(x) for x in L], *[real(x) for x in 1.0 / L])
        tail = (state.forces, state.energy, state.virial, np.int32(with_energy))
        images = self.image_set(L)
        if images is None:
            self._kernel(((n + m - 1) // m,), (m, l), head + tail, shared_mem=self._shared_bytes(block))
            return
        shifts, zero = images
        self._image_kernel_built()(((n + m - 1) // m,), (m, l),
                                   head + (shifts, np.int32(len(shifts)), np.int32(zero)) + tail,
                                   shared_mem=self._shared_bytes(block))

    def tune(self, state, candidates=None, repeats: int = 3) -> dict:
        """Time each launch shape with CUDA events; keep the fastest.  Returns {shape: ms per call}."""
        cp = self.backend.xp
        launch = self._launch_fast if self.fast else self._launch
        timings = {}
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        for block in candidates or self.candidates:
            if block[0] == "newton" and not self.newton_applies(block, state.n_atoms):
                continue
            launch(state, block, False)           # warm-up (and first-launch costs)
            start.record()
            for _ in range(repeats):
                launch(state, block, False)
            stop.record()
            stop.synchronize()
            timings[block] = cp.cuda.get_elapsed_time(start, stop) / repeats
        self.block = min(timings, key=timings.get)
        _TUNED[self._tune_key(state)] = self.block
        self.timings = timings
        return timings

    def _tune_key(self, state):
        fast = (("fast", self.exact_separation, self.min_blocks_per_sm, self.newton_unroll) if self.fast
                else ("generic",))
        return (self.backend.device_name, state.n_atoms, tuple(sorted(self._defines.items())), fast, self.share)

    def _compute_cuda(self, state, neighbors, with_energy: bool) -> None:
        if self.shared:
            if self.block is None:
                self.block = (128, 1)              # one row of threads: each target's sum in source order
            t0, _, view = self._target_share(state, with_energy)
            if view.n_atoms:
                self._launch(view, self.block, with_energy, state.positions, t0)
            return
        if self.block is None:
            self.block = _TUNED.get(self._tune_key(state))
            if self.block is None:
                self.tune(state)
        self._launch(state, self.block, with_energy)

    # -- GPU, Yukawa fast path ----------------------------------------------------------------
    def _setup_fast(self, params, precision) -> None:
        a, kappa = params
        xp = self.backend.xp
        defines = {**self._defines, "EXACT_SEPARATION": int(self.exact_separation),
                   "YUKAWA_MIN_BLOCKS": self.min_blocks_per_sm, "YUKAWA_NEWTON_UNROLL": self.newton_unroll}
        module = self.backend.kernel_module("neighbors/allpairs.cu", defines, options=precision.cuda_options)
        self._fast_kernels = {
            (kind, r, e, c): module.get_function(f"allpairs_yukawa_{kind}{'e' if e else 'f'}{r}{'c' if c else ''}")
            for kind in ("", "newton_") for r in (2, 4) for e in (False, True) for c in (False, True)}
        self._newton_sum = module.get_function("allpairs_yukawa_newton_sum")
        self.alpha = kappa * LOG2_E                      # lengths in units of 1 / alpha: exp(-kappa r) = 2^-r'
        with np.errstate(divide="ignore"):
            self._log2a = xp.asarray(np.log2(a), dtype=np.float32)
        self._a = xp.asarray(a, dtype=self._accum)
        self._scratch: dict = {}
        self._box_key = None

    def _fast_box_args(self, L) -> tuple:
        """(cubic, kernel arguments of the box): invL x3 (float64); s x3, c x3 (float32: fixed-point
        step in scaled units and -1.5 2^23 s, see ap_separation); s_grid, ln2s; scale_f, scale_e."""
        key = tuple(L)
        if key != self._box_key:
            alpha, accum = self.alpha, self._accum
            cubic = self.exact_separation and L[0] == L[1] == L[2]
            s, c = [], []
            for length in L:
                if self.exact_separation:
                    s.append(np.float32(alpha * length / 2.0**32))
                    c.append(np.float32(0.0))
                else:
                    mant, ex = math.frexp(alpha * length / 2.0**23)
                    step = math.ldexp(round(mant * 2.0**22) / 2.0**22, ex)   # 22 significant bits:
                    s.append(np.float32(step))                                # then 1.5 2^23 s is exact,
                    c.append(np.float32(-1.5 * 2.0**23 * step))               # and dx' = f s + c rounds once
            if cubic:      # grid units: r' = s_grid r'', forces / s_grid^2, energy and virial / s_grid
                s_grid = float(s[0])
                extra = (np.float32(s_grid), np.float32(s_grid * math.log(2.0)),
                         accum(alpha**2 / s_grid**2), accum(0.5 * alpha / s_grid))
            else:
                extra = (np.float32(0.0), np.float32(math.log(2.0)), accum(alpha**2), accum(0.5 * alpha))
            self._box_args = (cubic, (*[np.float64(1.0 / x) for x in L], *s, *c, *extra))
            self._box_key = key
        return self._box_args

    def _fast_shape(self, block, n: int):
        """(grid, threads, S, target blocks) of a launch shape (m, l, R, S) for n targets."""
        m, l, r, chunks = block
        n_tb = -(-n // (m * r))
        if chunks == 0:                           # balanced: n_tb * S a multiple of the SM count, or large
            sms = self.backend.xp.cuda.Device().attributes["MultiProcessorCount"]
            chunks = 1
            while (n_tb * chunks) % sms and n_tb * chunks < 8 * sms:
                chunks += 1
        chunks = max(1, min(chunks, -(-n // (m * l))))     # at least one tile per chunk
        return (n_tb, chunks), (m, l), chunks, n_tb

    def _newton_shape(self, block, n: int, with_energy: bool):
        """(warps, R, P super-groups, shared bytes, partial elements) of a Newton launch for n particles;
        the warps are halved (from W) until the block's shared memory fits in SHARED_LIMIT."""
        _, warps, r = block
        nq = 10 if with_energy else 3
        per_particle = 16 + nq * np.dtype(self._accum).itemsize
        while warps > 1 and warps * 32 * r * per_particle > SHARED_LIMIT:
            warps //= 2
        group = warps * 32 * r
        n_super = -(-n // group)
        return warps, r, n_super, group * per_particle, n_super * nq * n

    def newton_applies(self, block, n: int) -> bool:
        """Whether the Newton launch shape's partial sums (energy launches: the largest) fit in
        NEWTON_MAX_PARTIAL_BYTES for n particles."""
        elements = self._newton_shape(block, n, True)[4]
        return elements * np.dtype(self._accum).itemsize <= NEWTON_MAX_PARTIAL_BYTES

    def _launch_newton(self, state, block, with_energy) -> None:
        xp = self.backend.xp
        n = state.n_atoms
        warps, r, n_super, smem, elements = self._newton_shape(block, n, with_energy)
        key = ("newton", elements)
        if key not in self._scratch:
            # a share writes some slots only: the others stay zero (a sum over the ranks adds them)
            self._scratch[key] = (xp.zeros if self.shared else xp.empty)(elements, dtype=self._accum)
        partial = self._scratch[key]
        cubic, box_args = self._fast_box_args(np.asarray(state.box_lengths, dtype=np.float64))
        first, end = newton_block_share(n_super, *self.share)
        if end > first:
            self._fast_kernels[("newton_", r, bool(with_energy), cubic)](
                (end - first,), (32, warps),
                (state.positions, np.int32(n), self._log2a, *box_args[:11], partial, np.int64(first)),
                shared_mem=smem)
        scale_f, scale_e = box_args[11:]
        self._newton_sum(((n + 127) // 128,), (128,),
                         (partial, np.int32(n), np.int32(n_super), np.int32(10 if with_energy else 3),
                          scale_f, scale_e, state.forces, state.energy, state.virial))

    def _launch_fast(self, state, block, with_energy) -> None:
        if block[0] == "newton":
            self._launch_newton(state, block, with_energy)
            return
        xp = self.backend.xp
        m, l, r, _ = block
        n = state.n_atoms
        grid, threads, chunks, n_tb = self._fast_shape(block, n)
        nq = 10 if with_energy else 3
        key = (chunks, nq, n, n_tb)
        if key not in self._scratch:
            partial = xp.empty(chunks * nq * n if chunks > 1 else 1, dtype=self._accum)
            self._scratch[key] = (partial, xp.zeros(n_tb, dtype=np.int32))
        partial, tickets = self._scratch[key]
        smem = max(m * l * 16, m * l * np.dtype(self._accum).itemsize)
        cubic, box_args = self._fast_box_args(np.asarray(state.box_lengths, dtype=np.float64))
        self._fast_kernels[("", r, bool(with_energy), cubic)](
            grid, threads,
            (state.positions, np.int32(n), np.int32(n), self._log2a, self._a, *box_args,
             state.forces, state.energy, state.virial, partial, tickets),
            shared_mem=smem)

    def _compute_fast(self, state, neighbors, with_energy: bool) -> None:
        if self.block is None:
            self.block = _TUNED.get(self._tune_key(state))
            if self.block is None:
                self.tune(state)
        self._launch_fast(state, self.block, with_energy)


def newton_block_share(n_super: int, rank: int, size: int) -> tuple:
    """``(first, end)``: the Newton kernel's blocks (tile pairs) of rank ``rank`` of ``size``.

    The kernel's ``n_super (n_super + 1) / 2`` blocks are the pairs I < J first, then the
    ``n_super`` diagonal blocks (I = J), which do half the work (each warp pair once).  The ranks
    take contiguous ranges of about equal work: rank r ends where the work done reaches
    ``r + 1`` shares of the total.
    """
    pairs = n_super * (n_super - 1) // 2
    total = pairs + 0.5 * n_super

    def block_at(work: float) -> int:
        if work <= pairs:
            return int(round(work))
        return min(pairs + n_super, pairs + int(round(2.0 * (work - pairs))))

    return block_at(total * rank / size), block_at(total * (rank + 1) / size)


class AllPairsNeighbors(NeighborStructureBase):
    """Stand-in for the neighbour list under all-pairs forces: no list, only periodic wrapping.

    ``needs_rebuild`` says yes every ``wrap_every`` steps; ``build`` then wraps positions into the
    box (updating image counters).  ``n_builds`` counts these wraps (the Simulation's bookkeeping
    of "has the run been set up" reads it); ``nbr`` stays ``None``: no neighbour list exists.

    Parameters
    ----------
    backend : Backend
    r_cut : float
        Largest cutoff; ``inf`` for all pairs.  A finite one longer than half a box edge makes the
        forces take every periodic image in range (at most MAX_IMAGE_SHIFTS shifts).
    wrap_every : int
        Steps between wraps.
    """

    nbr = None
    nbr_count = None

    def __init__(self, backend, r_cut: float, wrap_every: int = 100):
        self.backend = backend
        self.r_cut = float(r_cut)
        self.skin = 0.0
        self.wrap_every = int(wrap_every)
        self.n_builds = 0
        self.steps_since_build = 0
        self._wrap = None

    def check_box(self, L) -> None:
        check_box_all_pairs(self.r_cut, L)

    def needs_rebuild(self, state) -> bool:
        self.steps_since_build += 1
        return self.steps_since_build >= self.wrap_every

    def build(self, state) -> None:
        """Wrap positions into the box (no neighbour list is built)."""
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self.check_box(L)
        n = state.n_atoms
        if self.backend.is_gpu:
            if self._wrap is None:
                module = self.backend.kernel_module("neighbors/verlet.cu",
                                                    {"real_t": c_type_name(state.positions.dtype)})
                self._wrap = module.get_function("wrap_positions")
            real = state.positions.dtype.type
            self._wrap(((n + 127) // 128,), (128,),
                       (state.positions, state.images, np.int32(n), *[real(x) for x in L]))
        else:
            from .cpu_builder import wrap_positions_cpu

            wrap_positions_cpu(state.positions, state.images, L)
        self.n_builds += 1
        self.steps_since_build = 0

    def checkpoint_state(self) -> dict:
        """The wrap schedule (JSON values): what :meth:`restore_checkpoint_state` continues."""
        return {"kind": "all_pairs", "n_builds": int(self.n_builds), "steps_since_build": int(self.steps_since_build)}

    def restore_checkpoint_state(self, d: dict, state=None) -> None:
        """Continue the wrap schedule of :meth:`checkpoint_state`'s ``d`` (there is no list to build)."""
        if d.get("kind") != "all_pairs":
            raise ValueError(f"the checkpoint's neighbour structure is {d.get('kind')!r}, this run sums all "
                             f"pairs: an exact continuation needs the same")
        self.n_builds, self.steps_since_build = int(d["n_builds"]), int(d["steps_since_build"])

    def describe(self) -> str:
        return "all pairs (no neighbour list)"


PAIR_METHODS = ("auto", "neighbor", "all_pairs")


def choose_pair_method(pair_method: str, r_cut: float, skin: float, L) -> str:
    """Resolve ``Simulation(pair_method=...)`` to ``"neighbor"`` or ``"all_pairs"``.

    ``auto``: all pairs when there is no cutoff (``r_cut = inf``) or when ``r_cut + skin`` exceeds
    0.35 of the shortest box edge (a neighbour list would then hold a large part of the system,
    and below half the edge it cannot be built: all pairs then take every periodic image in
    range), else the neighbour list.  ``neighbor`` with no cutoff is an error.
    """
    if pair_method not in PAIR_METHODS:
        raise InputError(f"unknown pair_method {pair_method!r}: choose one of {', '.join(PAIR_METHODS)}")
    if r_cut is None or not math.isfinite(r_cut):
        if pair_method == "neighbor":
            raise InputError("pair_method 'neighbor' needs a finite cutoff; this potential has none "
                             "(all pairs): use pair_method 'all_pairs' or 'auto'")
        return "all_pairs"
    if pair_method == "auto":
        return "all_pairs" if 0.35 * float(np.min(L)) < r_cut + skin else "neighbor"
    return pair_method
