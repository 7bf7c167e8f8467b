"""Spatial domain decomposition for the neighbour-list path: domains, migration, ghost atoms.

The box is cut into a px x py x pz grid of equal domains (:func:`~pycumd.parallel.grid.choose_domain_grid`),
rank ``(cz * py + cy) * px + cx`` owning the atoms whose wrapped position falls in domain
``(cx, cy, cz)`` (``c_d = floor(x_d p_d / L_d)``).  Each rank keeps:

* its owned atoms as the rows of its :class:`~pycumd.state.State` (integrated as in a serial run);
* ghost atoms: copies of other domains' atoms (and periodic images of its own) within one ghost
  layer ``r_ghost = r_cut + skin`` of the domain, placed after the owned atoms in an *extended*
  position array.  The list kernel takes the n_local owned atoms as targets and all n_local +
  n_ghost rows as sources; the force kernel likewise (``nbr_count`` has n_local rows).

At a neighbour rebuild (decided for all ranks together: some atom on some rank moved skin/2):

1. wrap positions into the box (image counters updated);
2. migrate: each atom goes to the rank owning its position (one all-to-all of the leaving atoms);
3. ghosts, LAMMPS' three-stage exchange: along x, the atoms within ``r_ghost`` of the low face are
   sent to the low neighbour and those within ``r_ghost`` of the high face to the high neighbour
   (chosen by their image shifted by -/+L across the periodic boundary; the forces read their own
   coordinates and take the minimum image, as a serial run does); then along y, over owned atoms *and* the x
   ghosts; then along z.  Edges and corners are so covered with 6 exchanges.  A direction with one
   domain exchanges with itself (periodic images); domains must be at least ``r_ghost`` thick;
4. the cell list (the counting sort) and the Verlet list over the extended region
   ``[lo - r_ghost, hi + r_ghost)``.

On the GPU the same steps run on the device with the serial list's kernels (the list kernel takes
``n_targets``); the ghost rows travel through NCCL (or the host, see :mod:`pycumd.parallel.comm`).

Every step, before the forces, the ghosts' positions are refreshed along the same send lists, in
the same three stages (the list stays valid as in a serial run: nobody moved more than skin/2).
Forces are the full-list gather on owned atoms only: no reverse communication.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from ..contracts import ForceEvaluatorBase, NeighborStructureBase
from ..neighbors.counting_sort import cell_index, compact, counting_sort
from ..neighbors.cpu_builder import build_list_cpu
from ..neighbors.verlet import OverlapError, capacity_for
from ..precision import c_type_name
from ..bookkeeping import SimulationError
from ..system import InputError, System
from .decomposition import Decomposition
from .device_build import DeviceDomainBuild
from .grid import choose_domain_grid

#: per-atom State arrays that travel with a migrating atom (and ``charges`` where the state has them:
#: :func:`migrating`)
MIGRATING = ("positions", "velocities", "per_atom_mass", "types", "images", "ids")


def migrating(state) -> tuple:
    """The names of ``state``'s arrays that travel with a migrating atom: :data:`MIGRATING`, and the
    per-atom charges where the state has them."""
    return MIGRATING + (("charges",) if state.charges is not None else ())
#: bins after the cells into which a build's cell order puts the departed rows (cut off after the sort)
DEPARTED_BINS = 1024
#: threads per block of domains.cu's row copies
ROW_THREADS = 256


class DomainDecomposition(Decomposition):
    """The grid of domains and this rank's place in it.

    Parameters
    ----------
    system : System
        The whole system (every rank passes the same one).
    comm : Communicator
    r_ghost : float
        Ghost-layer width, ``r_cut + skin`` (length units).
    processors : sequence of 3 ints or str, optional
        LAMMPS ``processors Px Py Pz`` (0 or ``*`` free).
    """

    kind = "spatial domains"

    def __init__(self, system: System, comm, r_ghost: float, processors=None):
        super().__init__(comm, comm, True, system.n_atoms, system.box, system.masses, system.units)
        self.L = np.asarray(system.box.L, dtype=np.float64)
        self.r_ghost = float(r_ghost)
        self.grid = np.asarray(choose_domain_grid(comm.size, self.L, self.r_ghost, processors), dtype=np.int64)
        px, py, _ = self.grid
        r = comm.rank
        self.coords = np.array([r % px, (r // px) % py, r // (px * py)], dtype=np.int64)
        self.lo = self.coords * self.L / self.grid
        self.hi = (self.coords + 1) * self.L / self.grid
        self._system = system

    follows_box_changes = True

    def set_box(self, box) -> None:
        """A barostat's new box (:class:`~pycumd.box.Box`): the domains keep their fractions of it."""
        self.box = box
        self.L = np.asarray(box.L, dtype=np.float64)
        self.lo = self.coords * self.L / self.grid
        self.hi = (self.coords + 1) * self.L / self.grid

    def rank_of(self, coords) -> np.ndarray:
        c = np.mod(np.asarray(coords, dtype=np.int64), self.grid)
        return (c[..., 2] * self.grid[1] + c[..., 1]) * self.grid[0] + c[..., 0]

    def owner(self, positions) -> np.ndarray:
        """Owning rank of each (wrapped) position ((N, 3) length units) -> (N,) int."""
        return self.owner_of(np.asarray(positions), np)

    def owner_of(self, positions, xp):
        """:meth:`owner` of an array of the array module ``xp`` (NumPy or CuPy), on that backend;
        the same float64 arithmetic on both."""
        scale = xp.asarray(self.grid / self.L)
        c = xp.floor(positions[:, :3].astype(np.float64) * scale).astype(np.int64)
        c = xp.clip(c, 0, xp.asarray(self.grid - 1))
        grid = self.grid
        return (c[:, 2] * int(grid[1]) + c[:, 1]) * int(grid[0]) + c[:, 0]

    def neighbour(self, d: int, step: int) -> int:
        c = self.coords.copy()
        c[d] += step
        return int(self.rank_of(c))

    def local_system(self) -> System:
        s = self._system
        mine = self.owner(s.positions) == self.comm.rank
        return System(s.box, s.positions[mine], s.masses, s.units, types=s.types[mine],
                      velocities=s.velocities[mine], images=s.images[mine], ids=s.ids[mine],
                      charges=None if s.charges is None else s.charges[mine])

    def describe(self) -> str:
        g = self.grid
        return f"{self.kind} {g[0]}x{g[1]}x{g[2]} over {self.comm.size} MPI ranks ({self.comm.transport})"


class HaloStage:
    """The ghost messages of one decomposed direction, fixed at a build and replayed every step.

    Attributes
    ----------
    sends : list of (indices, dest, source, offset, rows)
        Per face (low, then high): the extended rows sent to rank ``dest`` (``indices``, a backend
        int array), and the ``rows`` received from rank ``source``, which land in the extended
        array at rows ``offset .. offset + rows``.
    buffers : list of arrays
        The send buffers (rows of the extended array's shape), kept from build to build while
        their size allows: nothing is allocated between rebuilds.
    """

    def __init__(self, dim: int):
        self.dim = dim
        self.sends: list = []
        self.buffers: list = []


class DomainNeighborList(NeighborStructureBase):
    """Verlet list of one domain: owned atoms as targets, owned + ghost atoms as sources.

    The interface of :class:`~pycumd.neighbors.verlet.NeighborList` that the step loop uses
    (``needs_rebuild``, ``build``, ``n_builds``, ``nbr``, ``nbr_count``, ``skin``, ``check_box``);
    CPU and GPU backends, with the serial list's kernels (wrap, displacement check, cell index,
    counting sort, list kernel with ``n_targets``).

    Only the *decomposed* directions (``grid[d] > 1``) have ghosts; along the others a domain spans
    the box and the minimum image of the list and force kernels covers the periodic images, as in
    a serial run.  Every per-atom array stays on the backend: the ghosts and the migrating atoms are
    chosen there, and only their counts (a few integers per build) go through the host.  A
    build (all ranks together) is

    1. wrap into the box;
    2. migrate, direction by direction, to the face neighbours only (an atom crosses at most one
       face per direction between builds): the leaving rows packed into one byte buffer per face;
       the arrivals appended, the departed rows kept (never chosen as ghosts) until step 4;
    3. choose the ghosts direction by direction (owned and earlier ghosts within ``r_ghost`` of a
       face), exchange them, and record the send lists (:class:`HaloStage`);
    4. one stable counting sort of the extended rows by the cells of the domain's frame, the
       departed rows into bins after the cells: the owned atoms are renumbered in its slot order
       (cell order, so that the list and force kernels read neighbours close in memory), the
       ghosts after them, and the same sort is the list build's cell list;
    5. the Verlet list over the extended rows.

    The owned positions are the extended array's first rows (the steps move them in place).  Every
    step :meth:`refresh_ghosts` sends the ghosts' positions along the recorded lists: one gather into
    a kept buffer per face and one grouped exchange per decomposed direction, received in place (no
    unpack, no allocation).

    Parameters
    ----------
    backend : Backend
    r_cut, skin : float
        Length units; the ghost layer and the list radius are ``r_cut + skin``.
    decomposition : DomainDecomposition
    every, delay, check :
        LAMMPS ``neigh_modify``, decided for all ranks together.
    serial : NeighborList, optional
        The serial list whose kernels, kernel options and position error (the displacement limit)
        this one uses; made with the arguments above when not given.  It is switched to
        ``reorder=False``: the domain orders its own rows.
    """

    has_rebuild_policy = True

    def __init__(self, backend, r_cut: float, skin: float, decomposition: DomainDecomposition, *,
                 every: int = 1, delay: int = 0, check: bool = True, serial=None):
        from ..neighbors.verlet import NeighborList

        if serial is None:
            serial = NeighborList(backend, r_cut, skin, every=every, delay=delay, check=check)
        self.serial = serial
        self.serial.reorder = False
        self.backend = backend
        self.xp = backend.xp
        self.d = decomposition
        self.r_cut, self.skin, self.r_list = float(r_cut), float(skin), float(r_cut) + float(skin)
        self.every, self.delay, self.check = int(every), int(delay), bool(check)
        self.overlap_distance = self.serial.overlap_distance
        self.n_builds = 0
        self.steps_since_build = 0
        self.capacity = None
        self.nbr = self.nbr_count = None
        #: the directions cut into several domains (ghosts exchanged along these only)
        self.decomposed = [dim for dim in range(3) if decomposition.grid[dim] > 1]
        #: extended positions, owned rows then ghosts, each ghost with its owner's coordinates (not
        #: shifted by a box length: the force kernels take the minimum image, exactly as in a serial
        #: run): CPU (n_local + n_ghost, 3) float64, GPU (n_local + n_ghost, 4) rows ``x, y, z, type``
        #: of the state's type
        self.extended = None
        self.extended_types = None      # CPU: (n_local + n_ghost,) int32 (GPU: column 3 of extended)
        self.extended_ids = None        # (n_local + n_ghost,) int64 global ids
        #: during a build: the extended rows as images next to the domain, counting-sorted by cell, and
        #: their new numbering (:meth:`_sort_extended`), for the list build
        self._sorted_rows = None
        self._row_types = None          # GPU: (build, the extended rows' types) for row_types
        self.stages: list = []          # HaloStage per decomposed direction
        self._owned_rows = None         # the extended array's owned rows, which the State's positions are
        self._flag = None               # GPU: the displacement flag all-reduced between the devices
        self.migrated = 0               # atoms that left this rank at the last build
        self.migrated_total = 0         # ... at all builds
        #: set to a dict to time the phases of the builds (``pycumd bench scaling``): wall seconds
        #: per phase name, summed over builds, the device synchronised at each phase's end
        self.phase_seconds: dict | None = None
        self._phase_start = 0.0
        #: set to a list to mark the phases without synchronising (GPU): ``(name, host seconds,
        #: CUDA event)`` appended at each phase's end, read after the build (the GPU's time per phase
        #: against the host's)
        self.phase_marks: list | None = None
        #: GPU: the build with its counts on the device (:mod:`pycumd.parallel.device_build`), one
        #: synchronisation a build; None: the host build (the CPU, and checkpoint steps' id order).
        #: Set to None to run the host build on the GPU too (``pycumd bench scaling --host-build``).
        self.device_build = DeviceDomainBuild(self) if backend.is_gpu else None

    @property
    def row_types(self):
        """The atom type of each extended row ((n_local + n_ghost,) int32; the GPU's rows carry it in
        their fourth column), for the molecular terms and exclusions over domains."""
        if not self.backend.is_gpu:
            return self.extended_types
        if self._row_types is None or self._row_types[0] != self.n_builds:
            self._row_types = (self.n_builds, self.extended[:, 3].astype(np.int32))
        return self._row_types[1]

    @property
    def displacement_limit2(self) -> float:
        """The squared displacement (length units^2) past which an atom asks for a rebuild (the
        serial list's: half the skin, less the position error)."""
        return self.serial.displacement_limit2

    @property
    def capturable_between_builds(self) -> bool:
        """GPU ranks joined by NCCL: the ghost refresh and the rebuild decision's all-reduce are
        device work on the current stream, so the steps between builds can be captured
        (:class:`pycumd.step_graph.HostBuildStepGraph`); through MPI they pass the host."""
        return self.backend.is_gpu and self.d.comm.transport == "nccl"

    def reduce_rebuild_flag(self, flag) -> None:
        """The displacement flags of all ranks, their largest, into ``flag`` (one NCCL all-reduce on
        the current stream; :meth:`capturable_between_builds`)."""
        self.d.comm.allreduce_max(flag)

    @property
    def n_ghost(self) -> int:
        return 0 if self.extended is None else len(self.extended) - len(self.nbr_count)

    def check_box(self, L) -> None:
        """The serial list's check, and every decomposed direction's domains at least the ghost
        layer thick (a barostat may shrink them)."""
        L = np.asarray(L, dtype=np.float64)
        self.serial.check_box(L)
        for dim in self.decomposed:
            thickness = L[dim] / self.d.grid[dim]
            if thickness < self.d.r_ghost:
                raise InputError(f"the domains along {'xyz'[dim]} are {thickness:.6g} thick ({self.d.grid[dim]} "
                                 f"in {L[dim]:.6g}), less than the ghost layer r_cut + skin = {self.d.r_ghost:.6g}: "
                                 f"use fewer ranks along {'xyz'[dim]} (processors) or a larger box")

    def face_peers(self, dim: int) -> list:
        """``[(dest, source)]`` of the two messages of direction ``dim``: to the low face's neighbour
        (received from the high one), then to the high face's neighbour (received from the low one)."""
        d = self.d
        return [(d.neighbour(dim, -1), d.neighbour(dim, +1)), (d.neighbour(dim, +1), d.neighbour(dim, -1))]

    def frame(self, L) -> tuple:
        """``(origin, extent)`` of the region the domain's cell list covers (length units, (3,)):
        along a decomposed direction the domain and a ghost layer on each side, along the others
        the periodic box."""
        d = self.d
        origin = np.zeros(3)
        extent = np.asarray(L, dtype=np.float64).copy()
        for dim in self.decomposed:
            origin[dim] = d.lo[dim] - d.r_ghost
            extent[dim] = d.hi[dim] - d.lo[dim] + 2.0 * d.r_ghost
        return origin, extent

    def needs_rebuild(self, state) -> bool:
        """LAMMPS ``Neighbor::decide`` on every rank; with ``check``, a rebuild when some atom on
        some rank moved more than skin/2 (one all-reduce)."""
        self.steps_since_build += 1
        if self.steps_since_build < self.delay or self.steps_since_build % self.every:
            return False
        if not self.check:
            return True
        comm = self.d.comm
        if comm.transport == "nccl":                # the flag reduced on the devices, read once
            if self._flag is None:
                self._flag = self.xp.zeros(1, np.int32)
            self._flag.fill(0)
            if state.n_atoms:
                self.serial.builder.displacement_exceeds(state, self.serial.displacement_limit2_in_box(state),
                                                         flag=self._flag)
            return bool(self.backend.to_host(comm.allreduce_max(self._flag))[0])
        moved = state.n_atoms > 0 and self.serial.builder.displacement_exceeds(
            state, self.serial.displacement_limit2_in_box(state))
        return comm.any(moved)

    # -- checkpoints ---------------------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        """Not implemented over MPI ranks: a checkpoint of a decomposed run rebuilds the lists in id
        order instead (:meth:`build_in_id_order`, :meth:`pycumd.simulation.Simulation.start_checkpoint`)."""
        raise NotImplementedError("the neighbour schedule of spatial domains is not stored in checkpoints: a "
                                  "checkpoint of a run over MPI ranks rebuilds the lists at its step instead")

    def restore_checkpoint_state(self, d: dict, state=None) -> None:
        """Not implemented over MPI ranks (see :meth:`checkpoint_state`)."""
        raise NotImplementedError("the neighbour schedule of spatial domains is not restored from checkpoints: a "
                                  "run over MPI ranks continues from a rebuild at the checkpoint's step")

    # -- build -------------------------------------------------------------------------------
    def build_in_id_order(self, state) -> None:
        """:meth:`build` with the owned atoms put in id order after the migration (then in cell
        order, stably): the order in which a run restored from a checkpoint holds them
        (checkpoint steps, so that it continues with the same bits)."""
        self.build(state, by_id=True)

    def _mark(self, name: str) -> None:
        """With :attr:`phase_marks` set (GPU): a finer mark inside a phase, an event and the host time
        appended without synchronising (``pycumd bench scaling``'s GPU and host spans)."""
        if self.phase_marks is not None and self.backend.is_gpu:
            event = self.xp.cuda.Event()
            event.record()
            self.phase_marks.append((name, time.perf_counter(), event))

    def _phase(self, name: str | None) -> None:
        """With :attr:`phase_seconds` set: synchronise and add the time since the previous mark to
        phase ``name`` (None: only start the clock)."""
        self._mark(name or "start")
        if self.phase_seconds is None:
            return
        self.backend.synchronize()
        now = time.perf_counter()
        if name is not None:
            self.phase_seconds[name] = self.phase_seconds.get(name, 0.0) + now - self._phase_start
        self._phase_start = now

    def build(self, state, by_id: bool = False) -> None:
        """Wrap, migrate, exchange ghosts, one counting sort of the extended rows that both puts the
        owned atoms in cell order and bins the list's sources, build the list (growing its storage
        as needed)."""
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self.check_box(L)
        self._phase(None)
        if state.n_atoms:
            self.serial.builder.wrap(state)
        origin, extent = self.frame(L)
        n_cells = self.serial.cells_per_dimension(extent)
        if self.capacity is None:
            volume = float(np.prod(self.d.hi - self.d.lo))
            self.capacity = self.serial.initial_capacity(max(state.n_atoms, 1), volume)
        listed = None
        if self.device_build is not None and not by_id:  # GPU: counts on the device, one synchronisation
            self._sorted_rows = self.device_build.build(state, origin, extent, n_cells, self.r_list, self.capacity)
            n_rows, listed = self._sorted_rows.n_rows, self._sorted_rows.listed
        else:
            alive = self.migrate(state)
            self._phase("migrate")
            if by_id:                                    # the departed rows out, then id order
                if alive is not None:
                    self._permute(state, self.xp.nonzero(alive)[0])
                    alive = None
                self._permute(state, self.xp.argsort(state.ids))
            ghosts = self.exchange_ghosts(state, alive)
            self._phase("ghosts")
            n_rows = self._sort_extended(state, ghosts, origin, extent, n_cells, alive)
            self._phase("cell order")
        n = state.n_atoms
        sorted_rows, self._sorted_rows = self._sorted_rows, None
        if listed is not None and listed[0] <= self.capacity:      # the device build's list holds
            max_count, min_r2, self.nbr, self.nbr_count = listed
        else:                                                      # the host's list (growing its storage)
            if listed is not None:                                 # the device build's overflowed
                self.capacity = capacity_for(int(listed[0]), len(self.extended))
            while True:
                if self.backend.is_gpu:
                    if self.nbr is None or self.nbr.size != n * self.capacity:
                        self.nbr = self.nbr_count = None
                        self.nbr = self.xp.empty(n * self.capacity, np.int32)
                        self.nbr_count = self.xp.empty(n, np.int32)
                    max_count, min_r2 = self.serial.builder.build_targets_renamed(
                        sorted_rows.positions, sorted_rows.keys, sorted_rows.sort, n_rows, sorted_rows.new_index, n,
                        extent, n_cells, self.r_list, self.capacity, self.nbr, self.nbr_count)
                else:
                    if self.nbr is None or self.nbr.shape != (n, self.capacity):
                        self.nbr = np.empty((n, self.capacity), np.int32)
                        self.nbr_count = np.empty(n, np.int32)
                    max_count, min_r2 = build_list_cpu(sorted_rows.positions, sorted_rows.keys, sorted_rows.sort.bin_start,
                                                       sorted_rows.order, n_cells, extent, 1.0 / extent,
                                                       self.r_list ** 2, self.nbr, self.nbr_count)
                if max_count <= self.capacity:
                    break
                self.capacity = capacity_for(int(max_count), len(self.extended))
        self._phase("list")
        if self.serial.canonical_order:                 # deterministic mode: sums in global-id order
            self.serial.builder.sort_by_id(self.nbr, self.nbr_count, self.extended_ids, n, self.capacity)
            self._phase("sort by id")
        if self.n_builds == 0:                          # every rank has built as often: all decide together
            overlap = n > 0 and min_r2 < self.overlap_distance ** 2
            if self.d.comm.any(overlap):
                raise OverlapError(f"two atoms are closer than {self.overlap_distance:.4g} (length units) "
                                   f"(found on rank {self.d.comm.rank if overlap else 'another'}); check the "
                                   f"input coordinates")
        state.positions_at_build[...] = state.positions
        # the box of this build (a barostat's later changes shrink the displacement trigger, as in one rank:
        # the ghost layer's faces scale with the box, so a ghost's distance to them changes as a pair's does)
        self.serial.box_at_build = L.copy()
        self.n_builds += 1
        self.steps_since_build = 0

    def _sort_extended(self, state, ghosts, origin, extent, n_cells, alive) -> int:
        """Counting-sort the extended rows (the owned atoms, departed ones included, then the ghosts
        :meth:`exchange_ghosts` received) by the cells of the domain's frame, stably: the departed
        rows into bins after the cells.  Then renumber: the owned atoms that stay take the indices
        0..n-1 in the order of their slots (so the owned atoms are in cell order, atoms of one cell
        in their previous order), the ghosts n, n+1, ... in their received order.  The State's
        per-atom arrays, the extended arrays and the send lists follow the new numbering; the sort
        stays for the list build (:attr:`_sorted_rows`).  One sort serves both the cell order and
        the list.  Returns the number of slots the list reads (the rows in the cells)."""
        xp = self.xp
        images, raw, ids, types = ghosts
        n_old = state.n_atoms
        n_ghost = sum(len(part) for part in ids)
        departed = self.migrated if alive is not None else 0
        n_new, n_rows = n_old - departed, n_old + n_ghost - departed
        # the rows as images next to the domain, from the frame's origin: GPU (M, 4) x, y, z, type of the
        # positions' type, CPU (M, 3) float64
        owned = state.positions if self.backend.is_gpu else np.ascontiguousarray(state.positions[:, :3],
                                                                                    dtype=np.float64)
        shifted = xp.concatenate([owned, *images])
        shifted[:, :3] -= xp.asarray(origin, dtype=shifted.dtype)
        keys = cell_index(shifted, extent, n_cells)
        n_bins = int(np.prod(n_cells))
        if departed:
            # the departed rows after every cell, spread over DEPARTED_BINS bins (their order does not
            # matter, and the counting sort ranks a bin's members in O(k^2))
            spread = n_bins + xp.arange(n_old, dtype=np.int32) % np.int32(DEPARTED_BINS)
            keys[:n_old] = xp.where(alive, keys[:n_old], spread)
        sort = counting_sort(keys, n_bins + (DEPARTED_BINS if departed else 0), self.backend)
        # the owned rows in slot order: the slots before the departed bins holding a row < n_old
        order = sort.order[:n_rows]
        slots, _ = compact(order < n_old, self.backend)
        owned_order = order[slots[:n_new]]
        new_index = xp.empty(n_old + n_ghost, np.int32)
        new_index[owned_order] = xp.arange(n_new, dtype=np.int32)
        new_index[n_old:] = xp.arange(n_new, n_new + n_ghost, dtype=np.int32)
        # the owned atoms' arrays in the new order, their positions the extended array's first rows: the
        # steps move them in place, and the ghost refresh copies nothing of them
        extended = xp.empty((n_new + n_ghost,) + owned.shape[1:], dtype=owned.dtype)
        xp.take(owned, owned_order, axis=0, out=extended[:n_new])
        first = n_new
        for part in raw:
            extended[first:first + len(part)] = part
            first += len(part)
        positions_are_rows = extended.dtype == state.positions.dtype and extended.shape[1:] == state.positions.shape[1:]
        for name in migrating(state):
            if name == "positions" and positions_are_rows:
                state.positions = extended[:n_new]
            else:
                setattr(state, name, getattr(state, name)[owned_order])
        self._resize_step_arrays(state, n_new)
        self.extended = extended
        self.extended_ids = xp.concatenate([state.ids.astype(np.int64), *ids])
        self.extended_types = None if self.backend.is_gpu else np.concatenate([state.types, *types])
        self._owned_rows = state.positions
        # the send lists in the new numbering
        for stage in self.stages:
            stage.sends = [(new_index[indices], dest, source, offset - n_old + n_new, rows)
                           for indices, dest, source, offset, rows in stage.sends]
        if self.backend.is_gpu:
            self._sorted_rows = SimpleNamespace(positions=shifted, keys=keys, sort=sort, new_index=new_index)
        else:                                           # the rows and the order in the new numbering
            rows = np.empty((n_new + n_ghost, 3))
            rows[:n_new] = shifted[owned_order]
            rows[n_new:] = shifted[n_old:]
            renamed = np.full(len(sort.order), -1, dtype=np.int32)
            renamed[:n_rows] = new_index[order]
            self._sorted_rows = SimpleNamespace(positions=rows, keys=keys, sort=sort, order=renamed)
        return n_rows

    def _permute(self, state, order) -> None:
        """Put the owned atoms' per-atom arrays in ``order`` (backend int array: a permutation, or
        a selection of rows); the per-step arrays (forces, energy, virial, positions at build)
        follow the new length (their values are computed again after the build)."""
        for name in migrating(state):
            setattr(state, name, getattr(state, name)[order])
        self._resize_step_arrays(state, len(order))

    def _resize_step_arrays(self, state, n: int) -> None:
        """The per-step arrays (forces, energy, virial, positions at build) at ``n`` rows (their
        values are computed again after the build)."""
        xp = self.xp
        if len(state.forces) != n:
            state.positions_at_build = xp.empty(state.positions.shape, dtype=state.positions_at_build.dtype)
            state.forces = xp.zeros((n, 3), dtype=state.forces.dtype)
            state.energy = xp.zeros(n, dtype=state.energy.dtype)
            state.virial = xp.zeros((n, 6), dtype=state.virial.dtype)

    def schedule_reorder(self) -> None:
        """Nothing to schedule: every build puts the owned atoms in cell order (:meth:`_sort_extended`)."""

    def _tally(self, counts: list, peers: list, extra: list = ()) -> tuple:
        """Counts per face, exchanged with the face neighbours, read with one synchronisation.

        ``counts[k]`` (backend scalars) goes to rank ``peers[k][0]``, which receives it as the k-th
        count of its ``peers[k][1]``; ``extra`` are more local scalars to read at the same time.
        Returns ``(counts, received, extra)`` as lists of host ints.  GPU with NCCL: the counts
        travel between the devices in one group; otherwise through MPI."""
        xp, comm = self.xp, self.d.comm
        local = xp.stack([xp.asarray(c, dtype=np.int64) for c in list(counts) + list(extra)])
        received = xp.zeros(len(counts), np.int64)
        comm.exchange([(local[k:k + 1], peers[k][0], received[k:k + 1], peers[k][1]) for k in range(len(counts))])
        host = [int(v) for v in self.backend.to_host(xp.concatenate([local, received]))]
        m = len(counts)
        return host[:m], host[len(local):], host[m:len(local)]

    def migrate(self, state):
        """Send every owned atom whose position left the domain to the face neighbour it crossed
        into, direction by direction (LAMMPS' order: x, then y, then z, so that an atom crossing an
        edge or a corner arrives in two or three hops).  The arrivals are appended to the State's
        per-atom arrays; the departed rows stay until :meth:`_cell_order` drops them.  Returns the
        boolean array of the rows that stay (None when no atom moved)."""
        comm, xp = self.d.comm, self.xp
        self.migrated = 0
        alive = None
        for dim in self.decomposed:
            to_low, to_high, away, stays = self._migration_flags(state, dim, alive)
            (low_rows, low_count), (high_rows, high_count) = compact(to_low, self.backend), compact(to_high, self.backend)
            peers = self.face_peers(dim)
            # one synchronisation: how many leave low and high, strayed further, and arrive
            (n_low, n_high), arriving, (n_away,) = self._tally([low_count, high_count], peers, [away.sum()])
            if n_away != n_low + n_high:
                raise SimulationError(f"an atom of rank {comm.rank} moved more than one domain along "
                                      f"{'xyz'[dim]} between two neighbour-list builds: the time step "
                                      f"is too long or the system blew up")
            leaving = [low_rows[:n_low], high_rows[:n_high]]
            self.migrated += n_low + n_high
            if not n_low and not n_high and not any(arriving):
                continue
            packed = [_pack_rows(state, rows, self.backend) for rows in leaving]
            width = packed[0].shape[1]
            received = [xp.empty((rows, width), np.uint8) for rows in arriving]
            comm.exchange([(packed[k], peers[k][0], received[k], peers[k][1]) for k in range(2)])
            alive = xp.concatenate([stays, xp.ones(sum(arriving), dtype=bool)])
            _append_rows(state, received, self.backend)
        self.migrated_total += self.migrated
        return alive

    def _migration_flags(self, state, dim: int, alive) -> tuple:
        """``(to_low, to_high, away, stays)``, boolean per owned row: whether it leaves along ``dim``
        for the low or the high face neighbour (low first: with two domains both faces lead to the
        other), leaves at all, or stays (``alive``: the rows not gone along an earlier direction, or
        None).  Its domain along ``dim`` is ``clamp(floor(x p / L), 0, p - 1)`` in float64 on both
        backends (GPU: one launch of domains.cu's ``migration_flags``)."""
        d, xp = self.d, self.xp
        p, own = int(d.grid[dim]), int(d.coords[dim])
        low, high = (own - 1) % p, (own + 1) % p
        scale = p / d.L[dim]
        n = state.n_atoms
        if self.backend.is_gpu:
            positions = state.positions
            flags = [xp.empty(n, dtype=bool) for _ in range(4)]
            if n:
                real = positions.dtype
                module = self.backend.kernel_module("parallel/domains.cu", {"real_t": c_type_name(real)})
                module.get_function("migration_flags")(
                    ((n + ROW_THREADS - 1) // ROW_THREADS,), (ROW_THREADS,),
                    (positions, np.int32(n), np.int32(positions.shape[1]), np.int32(dim), np.float64(scale),
                     np.int32(p), np.int32(own), np.int32(low), np.int32(high),
                     alive if alive is not None else np.uint64(0), *flags))
            return tuple(flags)
        x = state.positions[:, dim].astype(np.float64)
        cell = np.clip(np.floor(x * scale).astype(np.int64), 0, p - 1)
        live = np.ones(n, dtype=bool) if alive is None else alive
        away = live & (cell != own)
        to_low = away & (cell == low)
        to_high = away & (cell == high) & ~to_low
        return to_low, to_high, away, live & ~away

    def exchange_ghosts(self, state, alive=None) -> tuple:
        """Choose the ghosts along each decomposed direction (see the class docstring), exchange them
        and record the send lists the steps replay (:meth:`refresh_ghosts`), with row indices of the
        owned rows as they are (:meth:`_sort_extended` renumbers them).  ``alive`` (a boolean per
        owned row, :meth:`migrate`'s, or None): the departed rows are never chosen.

        A ghost is chosen by its image's position (shifted by -/+L across the periodic boundary),
        which the list build bins; the forces read its owner's own coordinates (:attr:`extended`),
        so that every pair term is computed from the same numbers as in a serial run.  Returns the
        received parts in row order, ``(images, owners' rows, ids, types)`` (lists of arrays; the
        types on the CPU only: the GPU's rows carry them)."""
        d, comm, xp = self.d, self.d.comm, self.xp
        # owned rows as they are: GPU (n, 4) ``x, y, z, type`` of the state's type; CPU (n, 3) float64
        owned = state.positions if self.backend.is_gpu else np.ascontiguousarray(state.positions[:, :3],
                                                                                    dtype=np.float64)
        width, real = owned.shape[1], owned.dtype
        n = state.n_atoms
        ghost_images, ghost_raw, ghost_ids, ghost_types = [], [], [], []     # received parts, in row order
        old = {stage.dim: stage for stage in self.stages}
        self.stages = []
        for dim in self.decomposed:
            stage = HaloStage(dim)
            images_g = xp.concatenate(ghost_images) if ghost_images else owned[:0]
            raw_g = xp.concatenate(ghost_raw) if ghost_raw else owned[:0]
            ids_g = xp.concatenate(ghost_ids) if ghost_ids else state.ids[:0]
            peers = self.face_peers(dim)
            has_ghosts = len(images_g) > 0          # the first decomposed direction has none yet
            coordinates = [owned[:, dim].astype(np.float64)]     # the same comparisons in every precision
            if has_ghosts:
                coordinates.append(images_g[:, dim].astype(np.float64))
            masks = [[x < d.lo[dim] + d.r_ghost for x in coordinates],
                     [x >= d.hi[dim] - d.r_ghost for x in coordinates]]
            if alive is not None:                   # the departed rows stay behind
                for pair in masks:
                    pair[0] &= alive
            # per face and part (owned, ghosts): the rows in the layer first, in row order
            firsts = [[compact(mask, self.backend) for mask in pair] for pair in masks]
            # one synchronisation: how many rows each face sends and receives, and of each part
            _, rows, parts = self._tally([sum(count for _, count in pair) for pair in firsts], peers,
                                         [count for pair in firsts for _, count in pair])
            chosen = []                             # per face: rows of the extended array (owned, then ghosts)
            sends = []
            like = None
            for k in range(2):
                selected = [order[:parts[k * len(coordinates) + part]] for part, (order, _) in enumerate(firsts[k])]
                rows_k = selected[0] if not has_ghosts else xp.concatenate([selected[0], selected[1] + n])
                chosen.append(rows_k.astype(np.int32, copy=False))    # int32: refresh_ghosts' gather kernel
                # one message per face: the image row, the owner's row, the id (CPU: and the type), as bytes
                own_columns = [owned, owned, state.ids] + ([] if self.backend.is_gpu else [state.types])
                message_parts = [(own_columns, selected[0])]
                if has_ghosts:
                    ghost_columns = [images_g, raw_g, ids_g]
                    if not self.backend.is_gpu:
                        ghost_columns.append(np.concatenate(ghost_types) if ghost_types else state.types[:0])
                    message_parts.append((ghost_columns, selected[1]))
                sends.append(_pack_parts(self.backend, message_parts))
                like = own_columns
            recvs = [xp.empty((rows[k], sends[k].shape[1]), np.uint8) for k in range(2)]
            comm.exchange([(sends[k], peers[k][0], recvs[k], peers[k][1]) for k in range(2)])
            offset = n + sum(len(part) for part in ghost_ids)
            previous = old.get(dim)
            for k in range(2):
                columns = _unpack_columns(recvs[k], like, xp, self.backend)
                # the image next to this domain: the sender's rows moved across the periodic boundary
                # (face 0 comes from the high neighbour, which sends its low layer: +L when that
                # neighbour is the first domain, so when this one is the last; face 1 the converse)
                shift = 0.0
                if k == 0 and d.coords[dim] == d.grid[dim] - 1:
                    shift = d.L[dim]
                elif k == 1 and d.coords[dim] == 0:
                    shift = -d.L[dim]
                if shift and rows[k]:
                    columns[0][:, dim] += shift
                ghost_images.append(columns[0])
                ghost_raw.append(columns[1])
                ghost_ids.append(columns[2])
                if not self.backend.is_gpu:
                    ghost_types.append(columns[3])
                stage.sends.append((chosen[k], peers[k][0], peers[k][1], offset, rows[k]))
                buffer = previous.buffers[k] if previous is not None and len(previous.buffers) > k else None
                if buffer is None or buffer.dtype != real or buffer.shape[0] < len(chosen[k]):
                    buffer = xp.empty((int(len(chosen[k]) * 1.2) + 16, width), dtype=real)
                stage.buffers.append(buffer)
                offset += rows[k]
            self.stages.append(stage)
        return ghost_images, ghost_raw, ghost_ids, ghost_types

    def refresh_ghosts(self, state) -> None:
        """Send the ghosts' new positions along the build's send lists (every step, before the
        forces): :meth:`refresh_owned_rows`, then :meth:`exchange_ghost_rows`."""
        self.refresh_owned_rows(state)
        self.exchange_ghost_rows()

    def refresh_owned_rows(self, state) -> None:
        """Copy the owned rows into the extended array where the State's positions are no longer its
        rows (replaced since the build); nothing otherwise."""
        if state.positions is not self._owned_rows:      # not the extended array's own rows
            self.extended[:state.n_atoms] = state.positions[:, :self.extended.shape[1]]

    def interior_box(self, L) -> tuple | None:
        """The box ``(lo, hi)`` (length units, per axis) of the owned atoms whose list holds no ghost:
        those farther than ``r_list + skin/2`` (with a margin for rounding) from every face of the
        domain along the decomposed directions.  At the build such an atom was farther than
        ``r_list`` from the faces, so no ghost (all lie beyond a face) entered its list, and since then
        it moved less than skin/2 (the displacement trigger).  Along the other directions the box is
        unbounded.  None where the box ``L`` is not the build's (a barostat moved the faces)."""
        if self.serial.box_at_build is None or not np.array_equal(np.asarray(L, dtype=np.float64),
                                                                  self.serial.box_at_build):
            return None
        reach = self.r_list + 0.5 * self.skin
        reach += 1e-3 * reach + 1e-6 * float(np.max(L))
        lo, hi = np.full(3, -np.inf), np.full(3, np.inf)
        for dim in self.decomposed:
            lo[dim] = self.d.lo[dim] + reach
            hi[dim] = self.d.hi[dim] - reach
        return lo, hi

    def exchange_ghost_rows(self) -> None:
        """Per decomposed direction one gather of the sent rows into the kept send buffers and one
        grouped exchange that writes the received rows in place (on the current stream)."""
        ext, comm, xp = self.extended, self.d.comm, self.xp
        words = _row_bytes(ext) // 4
        for stage in self.stages:
            messages = []
            for (indices, dest, source, offset, rows), buffer in zip(stage.sends, stage.buffers):
                k = len(indices)
                send = buffer[:k]
                if k and self.backend.is_gpu:       # one launch, no temporary: capturable
                    _row_kernel(self.backend, "gather_row_words")(
                        *_word_launch(k, words),
                        (ext, indices, np.int32(k), np.int32(words), send, np.int32(words), np.int32(0), np.int32(0)))
                elif k:
                    xp.take(ext, indices, axis=0, out=send)
                messages.append((send, dest, ext[offset:offset + rows], source))
            comm.exchange(messages)

    def forward(self, values) -> None:
        """LAMMPS' forward communication of a per-atom array over the extended rows (EAM's
        F'(rho) between its passes): the ghost rows of ``values`` get their owners' values along
        the build's send lists, direction by direction as :meth:`refresh_ghosts` sends positions
        (a later direction's ghosts include the earlier ones')."""
        comm, xp = self.d.comm, self.xp
        for stage in self.stages:
            comm.exchange([(xp.take(values, indices, axis=0), dest, values[offset:offset + rows], source)
                           for indices, dest, source, offset, rows in stage.sends])

    def halo_bytes(self) -> dict:
        """Bytes per step of the ghost refresh on this rank: ``{"sent": rows sent to other ranks
        times the row size, "local": the owned rows copied into the extended array}``."""
        if self.extended is None:
            return {"sent": 0, "local": 0}
        row = self.extended.shape[1] * self.extended.dtype.itemsize
        sent = sum(len(indices) for stage in self.stages for indices, *_ in stage.sends)
        owned = self._owned_rows
        shared = owned is not None and (owned.base is self.extended or (
            self.backend.is_gpu and owned.data.ptr == self.extended.data.ptr))
        local = 0 if shared else len(self.nbr_count)
        return {"sent": int(sent * row), "local": int(local * row)}


def _row_bytes(array) -> int:
    """Bytes of one atom's row of a per-atom array."""
    return int(np.prod(array.shape[1:], dtype=np.int64)) * array.dtype.itemsize


def _pack_columns(arrays, xp):
    """Arrays of equal length, side by side as bytes: (rows, bytes per row) uint8."""
    k = len(arrays[0])
    parts = [xp.ascontiguousarray(a).reshape(k, _row_bytes(a) // a.dtype.itemsize).view(np.uint8) for a in arrays]
    return xp.ascontiguousarray(xp.concatenate(parts, axis=1))


def _row_kernel(backend, name):
    """A kernel of domains.cu (row copies between per-atom arrays and packed messages)."""
    return backend.kernel_module("parallel/domains.cu").get_function(name)


def _word_launch(n_rows: int, row_words: int) -> tuple:
    return ((max(1, -(-n_rows * row_words // ROW_THREADS)),), (ROW_THREADS,))


def _pack_parts(backend, parts) -> object:
    """One packed message: for each ``(columns, rows)`` of ``parts`` (the per-atom arrays of the
    message's columns, all with the same row sizes from part to part, and the backend int array of
    the rows to take), those rows of each column side by side; the parts' rows one after another.
    Returns (total rows, bytes per row) uint8.  GPU: one gather launch per column and part."""
    xp = backend.xp
    if not backend.is_gpu:
        columns = [np.concatenate([cols[j][rows] for cols, rows in parts]) for j in range(len(parts[0][0]))]
        return _pack_columns(columns, xp)
    widths = [_row_bytes(c) for c in parts[0][0]]
    total = sum(len(rows) for _, rows in parts)
    out = xp.empty((total, sum(widths)), np.uint8)
    out_words = sum(widths) // 4
    first = 0
    for columns, rows in parts:
        k = len(rows)
        if k:
            rows32 = rows.astype(np.int32, copy=False)
            column = 0
            for array, width in zip(columns, widths):
                words = width // 4
                _row_kernel(backend, "gather_row_words")(
                    *_word_launch(k, words),
                    (xp.ascontiguousarray(array), rows32, np.int32(k), np.int32(words), out, np.int32(out_words),
                     np.int32(column), np.int32(first)))
                column += words
        first += k
    return out


def _unpack_columns(block, like, xp, backend=None) -> list:
    """The arrays :func:`_pack_columns` packed into ``block``, each of the dtype and row shape of
    the corresponding array of ``like``.  GPU (``backend`` given): one scatter launch per column."""
    rows = len(block)
    if backend is not None and backend.is_gpu:
        out, column = [], 0
        packed_words = block.shape[1] // 4
        for a in like:
            words = _row_bytes(a) // 4
            values = xp.empty((rows,) + tuple(a.shape[1:]), dtype=a.dtype)
            if rows:
                _row_kernel(backend, "scatter_row_words")(
                    *_word_launch(rows, words),
                    (block, np.int32(rows), np.int32(packed_words), np.int32(column), np.int32(words), values,
                     np.int32(0)))
            out.append(values)
            column += words
        return out
    out, start = [], 0
    for a in like:
        width = _row_bytes(a)
        values = xp.ascontiguousarray(block[:, start:start + width]).view(a.dtype)
        out.append(values.reshape((rows,) + tuple(a.shape[1:])))
        start += width
    return out


def _pack_rows(state, rows, backend):
    """The per-atom rows ``rows`` of the migrating arrays, packed side by side as bytes:
    (len(rows), bytes per atom) uint8 (:func:`_pack_parts`)."""
    return _pack_parts(backend, [([getattr(state, name) for name in migrating(state)], rows)])


def _append_rows(state, received, backend) -> None:
    """Append the packed ``received`` rows (each a (rows, bytes per atom) uint8 array of
    :func:`_pack_rows`) to the migrating arrays.  GPU: each array allocated at its new length once,
    the received rows scattered into place (one launch per array and message)."""
    xp = backend.xp
    names = migrating(state)
    arrays = [getattr(state, name) for name in names]
    arriving = sum(len(block) for block in received)
    if not arriving:
        return
    if not backend.is_gpu:
        parts = [[a] for a in arrays]
        for block in received:
            if len(block):
                for part, values in zip(parts, _unpack_columns(block, arrays, xp)):
                    part.append(values)
        for name, part in zip(names, parts):
            setattr(state, name, xp.concatenate(part))
        return
    n = len(arrays[0])
    packed_words = sum(_row_bytes(a) for a in arrays) // 4
    column = 0
    for name, a in zip(names, arrays):
        words = _row_bytes(a) // 4
        grown = xp.empty((n + arriving,) + tuple(a.shape[1:]), dtype=a.dtype)
        grown[:n] = a
        first = n
        for block in received:
            if len(block):
                _row_kernel(backend, "scatter_row_words")(
                    *_word_launch(len(block), words),
                    (block, np.int32(len(block)), np.int32(packed_words), np.int32(column), np.int32(words), grown,
                     np.int32(first)))
                first += len(block)
        setattr(state, name, grown)
        column += words


#: owned atoms of a rank from which its interior forces overlap the halo by default (DomainForces.overlap_halo):
#: one call on 2 x H200 (docs/scaling.md, "The interior forces while the ghosts travel") measured +1.8% at 8M
#: atoms a rank and no gain within the machine's spread at 500,000
OVERLAP_MIN_ATOMS = 2_000_000


class DomainForces(ForceEvaluatorBase):
    """Pair forces of one domain: ghosts refreshed, then the serial kernel
    (:class:`~pycumd.forces.PairForces`) with the extended positions as sources.

    Capturable (without energies) where the serial kernel is and the ghosts travel through NCCL:
    the refresh is then a gather into kept buffers and one NCCL group per direction on the
    current stream.  Not for many-body potentials: their forward communication between the passes
    (:meth:`DomainNeighborList.forward`) allocates its messages."""

    def __init__(self, pair_forces, decomposition: DomainDecomposition):
        self.pair_forces = pair_forces
        self.potential = pair_forces.potential
        self.d = decomposition
        self.capturable = bool(pair_forces.capturable and decomposition.comm.transport == "nccl"
                               and not self.potential.many_body)
        #: True: the forces of the interior atoms run while the ghosts travel (:meth:`_compute_overlapped`),
        #: where the kernel computes zones (GPU, single and double) and the ghosts go through NCCL; False:
        #: the exchange, then all the forces (the same bits either way); None (the default): True from
        #: OVERLAP_MIN_ATOMS owned atoms on (decided at the first call)
        self.overlap_halo = None
        self._halo_stream = self._forked = self._joined = None

    @property
    def control(self):
        """The serial kernel's step-control array (:attr:`pycumd.contracts.ForceEvaluator.control`)."""
        return self.pair_forces.control

    @control.setter
    def control(self, array) -> None:
        self.pair_forces.control = array

    def compute(self, state, neighbors: DomainNeighborList, with_energy: bool) -> None:
        view = SimpleNamespace(positions=neighbors.extended, types=neighbors.extended_types,
                               box_lengths=state.box_lengths, forces=state.forces, energy=state.energy,
                               virial=state.virial, n_atoms=state.n_atoms)
        inner = None
        if self.overlap_halo is None:
            self.overlap_halo = state.n_atoms >= OVERLAP_MIN_ATOMS
        self.overlap_halo = bool(self.overlap_halo and getattr(self.pair_forces, "computes_zones", False)
                                 and self.d.comm.transport == "nccl")
        if self.overlap_halo:
            self._prepare_overlap(neighbors)     # at the first call (the set-up's, never inside a capture)
            if not with_energy and neighbors.stages:
                inner = neighbors.interior_box(state.box_lengths)
        if inner is None:
            neighbors.refresh_ghosts(state)
            self.pair_forces.compute(view, neighbors, with_energy)
        else:
            self._compute_overlapped(view, state, neighbors, inner)

    def _prepare_overlap(self, neighbors: DomainNeighborList) -> None:
        """The zone kernel compiled, the halo's stream and the fork and join events made (once)."""
        if self._halo_stream is None:
            cp = neighbors.xp
            self.pair_forces.prepare_zones()
            # the greatest priority: CUDA clamps a value beyond the device's range to its end
            self._halo_stream = cp.cuda.Stream(non_blocking=True, priority=-1000)
            self._forked = cp.cuda.Event(disable_timing=True)
            self._joined = cp.cuda.Event(disable_timing=True)

    def _compute_overlapped(self, view, state, neighbors: DomainNeighborList, inner) -> None:
        """The ghosts' exchange on a second (high-priority) stream while the interior atoms' forces
        run on the current one; then the other atoms' forces.  A fork and a join by events, so it is
        the same in a captured graph (two branches) as launched."""
        cp = neighbors.xp
        main = cp.cuda.get_current_stream()
        neighbors.refresh_owned_rows(state)
        self._forked.record(main)
        self._halo_stream.wait_event(self._forked)
        with self._halo_stream:
            neighbors.exchange_ghost_rows()
            self._joined.record(self._halo_stream)
        self.pair_forces.compute_zone(view, neighbors, 0, *inner)
        main.wait_event(self._joined)
        self.pair_forces.compute_zone(view, neighbors, 1, *inner)


def ghost_bytes_per_step(neighbors: DomainNeighborList) -> int:
    """Bytes this rank sends to other ranks per step refreshing its ghosts (whole rows of the
    extended array: 3 float64 coordinates on the CPU, ``x, y, z, type`` in the state's type on the GPU)."""
    return neighbors.halo_bytes()["sent"]


__all__ = ["DomainDecomposition", "DomainNeighborList", "DomainForces", "ghost_bytes_per_step"]
