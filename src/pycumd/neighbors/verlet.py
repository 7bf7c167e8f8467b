"""Verlet neighbour lists with a skin, built from a counting-sorted cell list.

The list holds, for each atom, every other atom closer than ``r_list = r_cut + skin`` (a
*full* list: each pair appears twice, once per atom, so the force kernel gathers without
atomics).  On the CPU it may instead be a *half* list (``NeighborList(half=True)``, the CPU
default of a simulation): each pair once, as ``(i, j)`` with ``j > i``, for a force kernel that
applies Newton's third law (half the pairs to find and to evaluate, as in LAMMPS and
HOOMD-blue on the CPU).  It stays valid until some atom has moved ``skin / 2``; :class:`NeighborList`
decides when to rebuild, either by that displacement check or by LAMMPS' schedule
(``neigh_modify every E delay D check yes|no``).

This module is the list policy (when to build, how much storage, the checks); the builds run in
:class:`~pycumd.neighbors.cpu_builder.CpuListBuilder` (NumPy + Numba) and
:class:`~pycumd.neighbors.cuda_builder.CudaListBuilder` (``verlet.cu``), :attr:`NeighborList.builder`.

Build, on both backends:

1. wrap positions into the box (updating image counters);
2. bin atoms into cells of edge >= ``r_list / 2`` (:func:`~pycumd.neighbors.counting_sort.cell_index`) and counting-sort them (histogram, exclusive
   prefix sum, stable scatter: :mod:`pycumd.neighbors.counting_sort`);
3. reorder the particle arrays by cell (neighbours then sit close in memory, so the force
   kernel's gathers hit the cache; ``State.ids`` keeps each particle's identity).  On the GPU
   only every ``reorder_every``-th build does (default :data:`DEFAULT_REORDER_EVERY`): between
   two, the atoms move less than a cell, so they stay close to cell order, and the other builds
   read a copy of the positions in cell order instead (written by the counting sort's last pass,
   ``sort_bins_rows``: 16 or 32 bytes per atom instead of the reorder's gather and copy back of
   every per-atom array);
4. for each atom, scan the cells within two cells in each direction (fewer when a dimension has
   fewer than five cells), skipping those whose nearest face is farther than ``r_list``, in a
   fixed order, and record neighbours (the CPU finds the cells once per cell, not per atom,
   and skips only those whose nearest cell is farther: the same neighbours in the same order);
5. if any atom has more neighbours than the storage holds, grow it and rebuild: no pair is
   ever dropped.

Memory.  The list is stored with a fixed number of slots per atom, the *capacity*; it dominates
the memory of a simulation (4 bytes per slot per atom).  The capacity follows the largest count
measured, :func:`capacity_for` (largest count plus a small margin): it grows on an overflow and
shrinks when the largest count of the last :data:`CAPACITY_WINDOW` builds is well below it, so an
overflow (which costs one more build) stays rare.  The build needs no memory of its own: the
counting sort's scratch and the reorder's gather buffers lie in the list storage (dead until the
list kernel rewrites it); the cell keys and bin offsets (and on the CPU the identity order) in
the arrays ``State.spare_at_build`` names (dead until the end of the build or the next force computation).

On the GPU a build is about 15 launches of little work each at 10^4-10^5 atoms, so their host
cost would dominate it (docs/notes-lj-performance.md has the figures).  The launches are therefore
captured once in a CUDA graph (:class:`~pycumd.neighbors.cuda_builder.BuildPlan`, at the second build with
the same addresses and sizes) and replayed: one launch and one synchronisation (to read the
largest count and the closest distance) per build.
"""

from __future__ import annotations

import math

import numpy as np

from ..contracts import NeighborStructureBase
from ..system import InputError

BLOCK = 128
LIST_WARPS = 4          # warps per block of build_neighbor_list (LIST_WARPS in verlet.cu)
#: the list kernel's row_mode (verlet.cu's ROWS_*): rows through the sorted order (no reorder),
#: rows in slot order (reordered atoms), rows in slot order carrying their atom's index (deferred reorder)
ROWS_VIA_ORDER, ROWS_IN_SLOT_ORDER, ROWS_INDEX_IN_W = 0, 1, 2
#: GPU builds between two reorders of the particle arrays by cell (NeighborList's reorder_every): a
#: build that defers is cheaper, but the atoms drift from cell order; 2 was the fastest over whole
#: runs (docs/notes-lj-performance.md, "The reorder every second build").
DEFAULT_REORDER_EVERY = 2
#: builds whose largest neighbour counts decide whether the storage shrinks
CAPACITY_WINDOW = 20
#: GPU list kernels (NeighborList.list_kernel): one warp per 32 targets ("warp"), or a block of three
#: warps per 32 targets, each taking consecutive stencil planes ("planes": float32 rows and >= 7
#: cells along every edge only); "auto" takes "planes" up to PLANE_SPLIT_ATOMS targets.  The lists
#: are the same.
LIST_KERNELS = ("auto", "warp", "planes")
PLANE_WARPS = 3         # warps per block of build_neighbor_list_planes (PLANE_WARPS in verlet.cu)
#: launches of at most this many rows take build_neighbor_list_planes16 (ring entries of 16 bits)
PLANE_RING16_ROWS = 1 << 16
#: the planes kernel is faster for small systems and not for large ones (docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "planes")
PLANE_SPLIT_ATOMS = 100_000


def capacity_margin(max_count: int) -> int:
    """Free slots per atom kept above the largest count: ``max(4, ceil(0.04 * max_count))``."""
    return max(4, math.ceil(0.04 * max_count))


def capacity_for(max_count: int, n_atoms: int) -> int:
    """Neighbour slots per atom for a largest count: ``max_count + capacity_margin(max_count)``,
    at most ``n_atoms - 1`` (and at least ``max_count`` and 1)."""
    return max(min(max_count + capacity_margin(max_count), n_atoms - 1), max_count, 1)


class OverlapError(InputError):
    """Two atoms sit (almost) on top of each other."""


#: fewest cells along every box edge for image shifts instead of rint (as ``IMAGE_SHIFT`` in verlet.cu)
IMAGE_SHIFT_MIN_CELLS = 7


class NeighborList(NeighborStructureBase):
    """A Verlet list with skin over a cell list, rebuilt on demand; storage grows, never drops a pair.

    Parameters
    ----------
    backend : pycumd.backend.Backend
    r_cut : float
        Largest interaction cutoff (length units).
    skin : float
        Extra distance (length units); ``r_list = r_cut + skin``.
    every, delay : int
        Consider a rebuild only every ``every`` steps, and not before ``delay`` steps since the
        last one (LAMMPS ``neigh_modify every/delay``).
    check : bool
        With ``check``, rebuild (when allowed) only if some atom moved more than ``skin / 2``;
        without, rebuild whenever allowed.
    overlap_distance : float
        At the first build, two atoms closer than this raise :class:`OverlapError`.
    capacity : int, optional
        Initial neighbour slots per atom (default: from the density, :meth:`initial_capacity`);
        afterwards the capacity follows the counts measured (see the module docstring).
    reorder : bool
        Reorder the particle arrays by cell at builds (default).
    reorder_every : int, optional
        GPU: reorder at every ``reorder_every``-th build only (default
        :data:`DEFAULT_REORDER_EVERY`; 1: every build); the builds between read a copy of the
        positions in cell order.  Always 1 with ``canonical_order`` and on the CPU.  A run's first
        build always reorders (:meth:`schedule_reorder`); a list restored from a checkpoint
        continues the count (:meth:`restore_checkpoint_state`).
    half : bool
        CPU only: a *half* list, each pair once (``j > i``) for a force kernel that applies
        Newton's third law (:meth:`pycumd.forces.PairForces._compute_cpu_half`), as LAMMPS and
        HOOMD-blue do on the CPU: half the pairs to evaluate and to find.  Default False: the full
        list, as on the GPU (the force sums of each atom in the GPU's order).
    cuda_options : tuple of str
        Extra NVRTC options for the kernels (the precision policy's).
    position_error : float
        Bound on how far the positions the list is built from may be from the positions the
        forces use (length units): float32 storage rounding; the displacement check triggers
        that much earlier, so that no pair is lost (0 for float64 positions).
    list_dtype : numpy float type, optional
        GPU: the type of the positions the list kernel reads.  ``numpy.float32`` with float64
        positions (mixed precision): the kernel reads a float32 copy made after the reorder
        (16-byte rows instead of 32, in the memory of ``positions_at_build``); give a
        ``position_error`` for its rounding.  Default: the positions' own type.
    """

    has_rebuild_policy = True
    capturable = True

    def __init__(self, backend, r_cut: float, skin: float, *, every: int = 1, delay: int = 0,
                 check: bool = True, overlap_distance: float | None = None, capacity: int | None = None,
                 reorder: bool = True, cuda_options: tuple = (), position_error: float = 0.0,
                 list_dtype=None, half: bool = False, canonical_order: bool = False,
                 reorder_every: int | None = None):
        if skin < 0:
            raise InputError(f"neighbor skin must be >= 0, got {skin}")
        if every < 1 or delay < 0:
            raise InputError(f"neigh_modify every must be >= 1 and delay >= 0, got {every}, {delay}")
        self.backend = backend
        self.r_cut = float(r_cut)
        self.skin = float(skin)
        self.r_list = self.r_cut + self.skin
        self.every, self.delay, self.check = int(every), int(delay), bool(check)
        self.overlap_distance = 0.05 * self.r_cut if overlap_distance is None else overlap_distance
        self.capacity = capacity
        self.n_builds = 0
        self.steps_since_build = 0
        self.box_at_build = None     # box lengths at the last build (a barostat changes them)
        self.nbr = None
        self.nbr_count = None
        self.reorder = reorder
        self.reorder_every = reorder_every
        self._reorder_due = True      # schedule_reorder: the next build reorders whatever the schedule
        self._repeat_build = False    # the next build repeats one that overflowed
        self._at_build_exact = True   # positions_at_build hold the positions of the build exactly
        #: GPU: this build reorders, builds since the last reorder (device uint32 x 2, made at the
        #: first build; verlet.cu's decide_reorder); the list's own, so that a new build plan (a
        #: capacity change) does not restart the count
        self.reorder_state = None
        if half and backend.is_gpu:
            raise NotImplementedError("half neighbour lists are a CPU option; the GPU uses full lists")
        self.half = bool(half)
        #: half lists: per atom, how many of its neighbours (the first ones) need no minimum image
        self.nbr_plain = None
        self.position_error = float(position_error)
        self.scratch: dict = {}
        self.identity_view = None   # (key, int32 view of the forces' memory): the reordered order
        #: largest neighbour count of each of the last CAPACITY_WINDOW builds
        self.recent_max_counts: list = []
        self.overflows = 0          # builds repeated because the storage was too small
        self.resizes = 0            # storage reallocations after the first
        #: deterministic mode: each atom's neighbours sorted by global id after every build, so that
        #: the force sums' order is the same on any cell grid and over any number of MPI ranks
        self.canonical_order = bool(canonical_order)
        #: the builder of the lists: :class:`~pycumd.neighbors.cuda_builder.CudaListBuilder` on the GPU,
        #: :class:`~pycumd.neighbors.cpu_builder.CpuListBuilder` on the CPU
        if backend.is_gpu:
            from .cuda_builder import CudaListBuilder
            self.builder = CudaListBuilder(backend, cuda_options, list_dtype)
        else:
            from .cpu_builder import CpuListBuilder
            self.builder = CpuListBuilder()

    @property
    def list_kernel(self) -> str:
        """GPU list kernel: ``"auto"`` (default), ``"warp"`` or ``"planes"`` (see :data:`LIST_KERNELS`;
        the lists are the same, only the time differs; the CPU ignores it); settable."""
        return self.builder.list_kernel

    @list_kernel.setter
    def list_kernel(self, value) -> None:
        if value not in LIST_KERNELS:
            raise InputError(f"list_kernel must be one of {', '.join(LIST_KERNELS)}, got {value!r}")
        self.builder.list_kernel = value

    @property
    def reorder_every(self) -> int | None:
        """GPU builds from one reorder to the next (None: :data:`DEFAULT_REORDER_EVERY`); settable."""
        return self._reorder_every

    @reorder_every.setter
    def reorder_every(self, value) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise InputError(f"reorder_every must be a whole number of builds >= 1, got {value!r}")
        self._reorder_every = None if value is None else int(value)

    def reorder_interval(self, state) -> int:
        """Builds from one reorder of the particle arrays to the next (1: every build reorders;
        0: none does, ``reorder=False``)."""
        if not self.reorder:
            return 0
        if self.canonical_order or not self.backend.is_gpu:
            return 1
        return int(self.reorder_every) if self.reorder_every is not None else DEFAULT_REORDER_EVERY

    def schedule_reorder(self) -> None:
        """Make the next build reorder the particle arrays by cell whatever ``reorder_every`` says,
        and count the builds to the next reorder from it (Simulation.setup, and over MPI ranks
        Simulation.start_checkpoint: so that a run continued from a checkpoint reorders at the same
        builds as the run that wrote it)."""
        self._reorder_due = True

    def cells_per_dimension(self, L: np.ndarray) -> np.ndarray:
        """Cells per box edge: ``floor(2 L / r_list)`` (cell edge >= r_list / 2), in [1, 1024]."""
        return np.clip(np.floor(2.0 * L / self.r_list).astype(np.int64), 1, 1024)

    def check_box(self, L: np.ndarray) -> None:
        """Raise :class:`InputError` if a box edge is shorter than ``2 * (r_cut + skin)``."""
        if (L < 2.0 * self.r_list).any():
            d = int(np.argmin(L))
            raise InputError(
                f"box length {'xyz'[d]} = {L[d]:.6g} is smaller than twice the cutoff plus skin "
                f"2 * ({self.r_cut:g} + {self.skin:g}) = {2 * self.r_list:.6g}, which a neighbour list "
                f"needs: use pair_method 'auto' or 'all_pairs' (every periodic image in range), a "
                f"larger box, or a shorter cutoff")

    def initial_capacity(self, n_atoms: int, volume: float) -> int:
        density = n_atoms / volume
        expected = density * 4.0 / 3.0 * math.pi * self.r_list**3
        return int(min(max(8, math.ceil(1.25 * expected) + 8), max(n_atoms - 1, 1)))

    def needs_rebuild(self, state) -> bool:
        """Advance the step counter and say whether this step rebuilds (LAMMPS ``Neighbor::decide``)."""
        self.steps_since_build += 1
        if self.steps_since_build < self.delay or self.steps_since_build % self.every:
            return False
        if not self.check:
            return True
        return self.builder.displacement_exceeds(state, self.displacement_limit2_in_box(state))

    @property
    def displacement_limit2(self) -> float:
        """Squared displacement that triggers a rebuild: ``(skin/2 - position_error)^2``."""
        return max(0.5 * self.skin - self.position_error, 0.0) ** 2

    def displacement_limit2_in_box(self, state) -> float:
        """:attr:`displacement_limit2`, or, when the box changed since the build (a barostat),
        ``(skin/2 - |L - L_build|/2 - position_error)^2``: positions are scaled with the box about its
        lower corner, so a periodic image of an atom moves by its displacement plus up to
        ``|L - L_build|``, and a pair's separation changes by at most ``2 d + |L - L_build|``."""
        L_build = self.box_at_build
        if L_build is None:
            return self.displacement_limit2
        change = float(np.linalg.norm(np.asarray(state.box_lengths, dtype=np.float64) - L_build))
        if change == 0.0:
            return self.displacement_limit2
        return max(0.5 * (self.skin - change) - self.position_error, 0.0) ** 2

    def build(self, state) -> None:
        """Wrap positions, counting-sort atoms into cells and rebuild the list (growing storage as needed)."""
        n_cells = self.prepare_build(state)
        while True:
            max_count, min_r2 = self.builder.build(state, n_cells, self.r_list, self.capacity, self)
            if self.finish_build(state, max_count, min_r2):
                return

    def prepare_build(self, state) -> np.ndarray:
        """Host-side start of a build: check the box, choose the capacity (initial, or shrunk, see
        the module docstring), drop storage of the wrong size; return the cells per dimension."""
        L = np.asarray(state.box_lengths)
        self.check_box(L)
        n = state.n_atoms
        # checkpoint_state: positions_at_build reproduce the build unless they are a rounded copy
        self._at_build_exact = state.positions_at_build.dtype == state.positions.dtype
        if self.capacity is None:
            self.capacity = self.initial_capacity(n, float(np.prod(L)))
        self.shrink_if_oversized(n)
        self._free_if_resized(n)
        return self.cells_per_dimension(L)

    def finish_build(self, state, max_count: int, min_r2: float) -> bool:
        """Host-side end of a build from its statistics (largest count, smallest squared distance).

        Returns False when the storage overflowed: the capacity is raised to hold ``max_count``
        (its old storage dropped) and the build must be repeated.  Otherwise records the count,
        checks for overlapping atoms at the first build (:class:`OverlapError`) and returns True.
        """
        n = state.n_atoms
        if max_count > self.capacity:
            self.overflows += 1
            self._repeat_build = True     # the repeat makes the overflowed build's reorder decision
            self.capacity = capacity_for(max_count, n)
            self.recent_max_counts.clear()
            self._free_if_resized(n)
            return False
        self.recent_max_counts = (self.recent_max_counts + [max_count])[-CAPACITY_WINDOW:]
        if self.n_builds == 0 and n > 1 and min_r2 < self.overlap_distance**2:
            i, j, r = self.builder.closest_pair(state, self)
            ids = self.backend.to_host(state.ids)
            first, second = sorted((int(ids[i]), int(ids[j])))
            raise OverlapError(
                f"atoms with IDs {first} and {second} overlap: distance {r:.4g} is below "
                f"{self.overlap_distance:.4g} (length units); check the input coordinates")
        self.n_builds += 1
        self.steps_since_build = 0
        self.box_at_build = np.asarray(state.box_lengths, dtype=np.float64).copy()
        return True

    def record_builds(self, state, builds: int, max_counts) -> None:
        """Host-side record of ``builds`` (>= 1) complete builds made on the device without the host
        (the device loop, :mod:`pycumd.step_graph`); ``max_counts``: the largest count of each of the
        last of them, in order (at most ``CAPACITY_WINDOW``).  The overlap check belongs to the
        first build, which is never one of them."""
        self.recent_max_counts = (self.recent_max_counts + [int(c) for c in max_counts])[-CAPACITY_WINDOW:]
        self.n_builds += builds
        self.steps_since_build = 0
        self.box_at_build = np.asarray(state.box_lengths, dtype=np.float64).copy()

    def neighbors_of(self, i: int) -> np.ndarray:
        """Host copy of atom ``i``'s neighbour indices, in list order."""
        return self.builder.neighbors_of(self, i)

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        """What continuing this list's schedule needs, between two steps (after at least one build).

        Returns a dict of JSON values (the schedule: builds, steps since the last build, the box at
        it, the capacity and the counts that steer it, the reorder schedule) and, where the state's
        ``positions_at_build`` cannot reproduce the last build (float32 copies of float64 positions:
        mixed precision on the GPU, whose cell keys came from the float64 values), the list itself
        as backend arrays ``nbr`` and ``nbr_count``.  With the state's arrays in their current order
        and its ``positions_at_build``, :meth:`restore_checkpoint_state` gives back the same list.
        """
        d = {"kind": "verlet", "n_builds": int(self.n_builds), "steps_since_build": int(self.steps_since_build),
             "box_at_build": None if self.box_at_build is None else [float(x) for x in self.box_at_build],
             "capacity": self.capacity, "recent_max_counts": [int(c) for c in self.recent_max_counts],
             "reorder_due": bool(self._reorder_due), "overflows": int(self.overflows), "resizes": int(self.resizes),
             "reorder_state": (None if self.reorder_state is None
                               else [int(x) for x in self.backend.to_host(self.reorder_state)])}
        if self.n_builds and not self._at_build_exact:
            d.update(nbr=self.nbr, nbr_count=self.nbr_count)
        return d

    def restore_checkpoint_state(self, d: dict, state) -> None:
        """Continue the schedule of :meth:`checkpoint_state`'s ``d`` (arrays on the host) on ``state``,
        which holds the checkpoint's arrays in their order (``positions_at_build`` included).

        The list is built again from ``positions_at_build`` in the box of the last build, as that
        build made it: the wrap changes nothing (they were wrapped then), the counting sort of atoms
        already in cell order is the identity (so a reorder moves nothing), and on the GPU the
        reorder decision is that build's (the count of builds since a reorder stepped back by one).
        The positions, the box and every counter are then put back as they were.  The state's
        forces, energies and virials are scratch to the build: the caller restores them after.
        """
        if d.get("kind") != "verlet":
            raise ValueError(f"the checkpoint's neighbour structure is {d.get('kind')!r}, this run has a "
                             f"neighbour list: an exact continuation needs the same")
        self.capacity = None if d["capacity"] is None else int(d["capacity"])
        self._at_build_exact = state.positions_at_build.dtype == state.positions.dtype
        if d["n_builds"]:
            if "nbr" in d:
                xp = self.backend.xp
                self.nbr, self.nbr_count = xp.asarray(d["nbr"]), xp.asarray(d["nbr_count"])
            else:
                self._rebuild_from_positions_at_build(d, state)
        self.n_builds, self.steps_since_build = int(d["n_builds"]), int(d["steps_since_build"])
        self.box_at_build = None if d["box_at_build"] is None else np.asarray(d["box_at_build"], dtype=np.float64)
        self.recent_max_counts = [int(c) for c in d["recent_max_counts"]]
        self._reorder_due, self._repeat_build = bool(d["reorder_due"]), False
        self.overflows, self.resizes = int(d["overflows"]), int(d["resizes"])
        if d["reorder_state"] is not None:
            self._set_reorder_state(d["reorder_state"])

    def _set_reorder_state(self, values) -> None:
        """Write the GPU's reorder state (this build reorders, builds since the last reorder) in
        place: captured build graphs hold the array's address."""
        host = np.asarray(values, dtype=np.uint32)
        if self.reorder_state is None:
            self.reorder_state = self.backend.xp.zeros(2, np.uint32)
        self.reorder_state[...] = self.backend.xp.asarray(host)

    def _rebuild_from_positions_at_build(self, d: dict, state) -> None:
        """The last build made again from ``state.positions_at_build`` (:meth:`restore_checkpoint_state`)."""
        positions, lo = state.positions.copy(), None if state.lo is None else state.lo["positions"].copy()
        box = state.box_lengths
        state.positions[...] = state.positions_at_build
        state.box_lengths = tuple(d["box_at_build"])
        if d["reorder_state"] is not None:
            every = max(self.reorder_interval(state), 1)
            done, since = (int(x) for x in d["reorder_state"])
            self._set_reorder_state([done, (since - 1) % every])
        self._reorder_due = self._repeat_build = False
        n = state.n_atoms
        self.n_builds = int(d["n_builds"])           # not a first build: no overlap check
        self._free_if_resized(n)
        max_count, _ = self.builder.build(state, self.cells_per_dimension(np.asarray(state.box_lengths)),
                                        self.r_list, self.capacity, self)
        if max_count > self.capacity:
            raise ValueError(f"the checkpoint's neighbour list does not fit its own capacity ({max_count} > "
                             f"{self.capacity} neighbours): the checkpoint does not belong to this run")
        state.positions[...] = positions
        if lo is not None:
            state.lo["positions"][...] = lo
        state.box_lengths = box

    def shrink_if_oversized(self, n: int) -> None:
        """Lower the capacity to :func:`capacity_for` the largest count of the last
        :data:`CAPACITY_WINDOW` builds, when a full window has been measured since the last change
        and the capacity exceeds that by more than a margin (so that it does not oscillate)."""
        if len(self.recent_max_counts) < CAPACITY_WINDOW:
            return
        recent = max(self.recent_max_counts)
        target = capacity_for(recent, n)
        if self.capacity > target + capacity_margin(recent):
            self.capacity = target
            self.recent_max_counts.clear()

    def _free_if_resized(self, n: int) -> None:
        """Drop storage of the wrong size before the build allocates the new one, so that the
        two never coexist (at 10^8 atoms each is tens of GB)."""
        if self.nbr is not None and self.nbr.size != n * self.capacity:
            self.nbr = None
            self.nbr_count = None
            self.resizes += 1

    def memory_by_array(self) -> dict:
        """Bytes of device (or host) memory the list holds between builds, by array.

        ``nbr`` (capacity x N int32), ``nbr_count`` (N int32) and the scratch kept between builds:
        on the GPU the build plan's own arrays (``build_plan``: the statistics, the scan's tile
        status and the gather's pointer tables, a few bytes, plus any buffer that found no room in
        dead memory), on the CPU the gather's tables.
        """
        out = {}
        if self.nbr is not None:
            out["nbr"] = int(self.nbr.nbytes)
            out["nbr_count"] = int(self.nbr_count.nbytes)
        if self.nbr_plain is not None:
            out["nbr_plain"] = int(self.nbr_plain.nbytes)
        plan = self.builder.plan if self.backend.is_gpu else None
        if plan is not None:
            out["build_plan"] = plan.own_bytes
        for key, value in self.scratch.items():
            arrays = value if isinstance(value, tuple) else (value,)
            size = sum(int(a.nbytes) for a in arrays if hasattr(a, "nbytes"))
            if size:
                out[f"scratch.{key if isinstance(key, str) else key[0]}"] = size
        return out
