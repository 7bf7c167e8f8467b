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

from types import SimpleNamespace

import numpy as np

from ..neighbors.counting_sort import cell_index, counting_sort
from ..neighbors.verlet import OverlapError, _build_cpu, capacity_for
from ..system import System
from .decomposition import Decomposition
from .grid import choose_domain_grid

#: per-atom State arrays that travel with a migrating atom
MIGRATING = ("positions", "velocities", "per_atom_mass", "types", "images", "ids")


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
                      velocities=s.velocities[mine], images=s.images[mine], ids=s.ids[mine])

    def describe(self) -> str:
        g = self.grid
        return f"{self.kind} {g[0]}x{g[1]}x{g[2]} over {self.comm.size} MPI ranks ({self.comm.transport})"


class DomainNeighborList:
    """Verlet list of one domain: owned atoms as targets, owned + ghost atoms as sources.

    The interface of :class:`~pycumd.neighbors.verlet.NeighborList` that the step loop uses
    (``needs_rebuild``, ``build``, ``n_builds``, ``nbr``, ``nbr_count``, ``skin``, ``check_box``);
    CPU and GPU backends, with the serial list's kernels (wrap, displacement check, cell index,
    counting sort, list kernel with ``n_targets``).

    On the GPU every per-atom array stays on the device: the ghosts are chosen there, and only the
    atoms leaving the domain (a few per build) are staged through the host for MPI; ghost rows
    travel device to device (NCCL, or through the host when the ranks share a GPU, see
    :class:`~pycumd.parallel.comm.Communicator`).

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
        ``reorder=False``: a domain's rows keep their order between builds (owned, then ghosts).
    """

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
        #: extended positions, owned rows then ghosts, each ghost with its owner's coordinates (not
        #: shifted by a box length: the force kernels take the minimum image, exactly as in a serial
        #: run): CPU (n_local + n_ghost, 3) float64, GPU (n_local + n_ghost, 4) rows ``x, y, z, type``
        #: of the state's type
        self.extended = None
        self.extended_types = None      # CPU: (n_local + n_ghost,) int32 (GPU: column 3 of extended)
        self.extended_ids = None        # (n_local + n_ghost,) int64 global ids
        self.shifted = None             # at the build: the extended rows as images next to the domain
        self.stages: list = []          # per exchange: (send indices, dest, source, recv rows, tag)
        self.migrated = 0               # atoms that left this rank at the last build
        self.migrated_total = 0         # ... at all builds

    @property
    def n_ghost(self) -> int:
        return 0 if self.extended is None else len(self.extended) - len(self.nbr_count)

    def check_box(self, L) -> None:
        self.serial.check_box(np.asarray(L, dtype=np.float64))

    def needs_rebuild(self, state) -> bool:
        """LAMMPS ``Neighbor::decide`` on every rank; with ``check``, a rebuild when some atom on
        some rank moved more than skin/2 (one all-reduce)."""
        self.steps_since_build += 1
        if self.steps_since_build < self.delay or self.steps_since_build % self.every:
            return False
        if not self.check:
            return True
        moved = state.n_atoms > 0 and self.serial._impl.displacement_exceeds(state, self.serial.displacement_limit2)
        return self.d.comm.any(moved)

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
        """:meth:`build` with the owned atoms put in id order after the migration: the order in which
        a run restored from a checkpoint holds them (checkpoint steps, so that it continues with the
        same bits)."""
        self.build(state, by_id=True)

    def build(self, state, by_id: bool = False) -> None:
        """Wrap, migrate, exchange ghosts, build the list (growing its storage as needed)."""
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self.check_box(L)
        if state.n_atoms:
            self.serial._impl.wrap(state)
        self.migrate(state)
        if by_id:
            order = self.xp.argsort(state.ids)
            for name in MIGRATING:
                setattr(state, name, getattr(state, name)[order])
            state.positions_at_build = state.positions.astype(state.positions_at_build.dtype)
        self.exchange_ghosts(state)
        origin = self.d.lo - self.d.r_ghost
        extent = (self.d.hi - self.d.lo) + 2.0 * self.d.r_ghost
        n_cells = self.serial.cells_per_dimension(extent)
        n = state.n_atoms
        if self.capacity is None:
            volume = float(np.prod(self.d.hi - self.d.lo))
            self.capacity = self.serial._initial_capacity(max(n, 1), volume)
        shifted, self.shifted = self.shifted, None      # the images (exchange_ghosts), from the domain's origin
        shifted[:, :3] -= self.xp.asarray(origin, dtype=shifted.dtype)
        if not self.backend.is_gpu:
            keys = cell_index(shifted, extent, n_cells)
            sort = counting_sort(keys, int(np.prod(n_cells)))
        while True:
            if self.backend.is_gpu:
                if self.nbr is None or self.nbr.size != n * self.capacity:
                    self.nbr = self.nbr_count = None
                    self.nbr = self.xp.empty(n * self.capacity, np.int32)
                    self.nbr_count = self.xp.empty(n, np.int32)
                max_count, min_r2 = self.serial._impl.build_targets(
                    shifted, n, extent, n_cells, self.r_list, self.capacity, self.nbr, self.nbr_count)
            else:
                if self.nbr is None or self.nbr.shape != (n, self.capacity):
                    self.nbr = np.empty((n, self.capacity), np.int32)
                    self.nbr_count = np.empty(n, np.int32)
                max_count, min_r2 = _build_cpu(shifted, keys, sort.bin_start, sort.order, n_cells, extent,
                                               1.0 / extent, self.r_list ** 2, self.nbr, self.nbr_count)
            if max_count <= self.capacity:
                break
            self.capacity = capacity_for(int(max_count), len(self.extended))
        if self.serial.canonical_order:                 # deterministic mode: sums in global-id order
            self.serial._impl.sort_by_id(self.nbr, self.nbr_count, self.extended_ids, n, self.capacity)
        overlap = self.n_builds == 0 and n > 0 and min_r2 < self.overlap_distance ** 2
        if self.d.comm.any(overlap):
            raise OverlapError(f"two atoms are closer than {self.overlap_distance:.4g} (length units) "
                               f"(found on rank {self.d.comm.rank if overlap else 'another'}); check the "
                               f"input coordinates")
        state.positions_at_build[...] = state.positions
        self.n_builds += 1
        self.steps_since_build = 0

    def migrate(self, state) -> None:
        """Send every owned atom whose position left the domain to its new owner (all-to-all of
        host copies of the leaving atoms' rows); replace the State's per-atom arrays by the kept
        atoms followed by the arrivals (in rank order)."""
        comm, xp, b = self.d.comm, self.xp, self.backend
        owner = self.d.owner_of(state.positions, xp)
        leaving = owner != comm.rank
        n_leaving = int(leaving.sum())
        outgoing = [None] * comm.size
        if n_leaving:
            leaving_owner = b.to_host(owner[leaving])
            rows = {name: b.to_host(getattr(state, name)[leaving]) for name in MIGRATING}
            for r in np.unique(leaving_owner):
                sel = leaving_owner == r
                outgoing[int(r)] = {name: rows[name][sel] for name in MIGRATING}
        self.migrated = n_leaving
        self.migrated_total += self.migrated
        arrived = [p for p in comm.alltoall(outgoing) if p is not None]
        if not n_leaving and not arrived:
            return
        keep = ~leaving
        for name in MIGRATING:
            parts = [getattr(state, name)[keep]] + [xp.asarray(p[name]) for p in arrived]
            setattr(state, name, xp.concatenate(parts))
        n = len(state.ids)
        state.positions_at_build = state.positions.astype(state.positions_at_build.dtype)
        state.forces = xp.zeros((n, 3), dtype=state.forces.dtype)
        state.energy = xp.zeros(n, dtype=state.energy.dtype)
        state.virial = xp.zeros((n, 6), dtype=state.virial.dtype)

    def exchange_ghosts(self, state) -> None:
        """Choose the ghosts (three stages, see the module docstring) and fill the extended arrays.

        A ghost is chosen by its image's position (shifted by -/+L across the periodic boundary),
        which also goes into :attr:`shifted` for the list build; the forces read its owner's own
        coordinates (:attr:`extended`), so that every pair term is computed from the same numbers as
        in a serial run."""
        d, comm, xp = self.d, self.d.comm, self.xp
        if self.backend.is_gpu:                     # rows x, y, z, type in the state's type
            raw = state.positions.copy()
            width, real = 4, state.positions.dtype
        else:
            raw = np.array(state.positions[:, :3], dtype=np.float64)
            width, real = 3, np.float64
            types = np.array(state.types)
        images = raw.copy()
        ids = xp.array(state.ids, dtype=np.int64)
        self.stages = []
        for dim in range(3):
            present = len(images)
            sends = []
            for step in (-1, +1):
                x = images[:present, dim].astype(np.float64)     # the same comparisons in every precision
                chosen = xp.nonzero(x < d.lo[dim] + d.r_ghost if step < 0 else x >= d.hi[dim] - d.r_ghost)[0]
                shift = np.zeros(width)
                if step < 0 and d.coords[dim] == 0:
                    shift[dim] = d.L[dim]
                elif step > 0 and d.coords[dim] == d.grid[dim] - 1:
                    shift[dim] = -d.L[dim]
                sends.append((chosen.astype(np.int64), xp.asarray(shift, dtype=real), d.neighbour(dim, step),
                              d.neighbour(dim, -step)))
            for k, (chosen, shift, dest, source) in enumerate(sends):
                count = len(chosen)
                rows = comm.comm.sendrecv(count, dest=dest, source=source, sendtag=10 + k, recvtag=10 + k) \
                    if dest != comm.rank or source != comm.rank else count
                tag = 20 + 2 * dim + k
                got_images = comm.sendrecv(images[chosen] + shift, dest, source, rows, tag=tag)
                got_raw = comm.sendrecv(raw[chosen], dest, source, rows, tag=tag)
                got_ids = comm.sendrecv(ids[chosen], dest, source, rows, tag=tag)
                if not self.backend.is_gpu:
                    got_types = comm.sendrecv(types[chosen].astype(np.float64), dest, source, rows, tag=tag)
                    types = np.concatenate([types, got_types.astype(np.int32)])
                images = xp.concatenate([images, got_images])
                raw = xp.concatenate([raw, got_raw])
                ids = xp.concatenate([ids, got_ids])
                self.stages.append((chosen, dest, source, rows, tag))
        self.extended, self.shifted, self.extended_ids = raw, images, ids
        self.extended_types = None if self.backend.is_gpu else types

    def refresh_ghosts(self, state) -> None:
        """Copy the owned positions into the extended array and send the ghosts' new positions along
        the build's send lists (every step, before the forces)."""
        ext, comm = self.extended, self.d.comm
        n = state.n_atoms
        ext[:n, :3] = state.positions[:, :3]
        offset = n
        for chosen, dest, source, rows, tag in self.stages:
            ext[offset:offset + rows, :3] = comm.sendrecv(ext[chosen, :3], dest, source, rows, tag=tag)
            offset += rows


class DomainForces:
    """Pair forces of one domain: ghosts refreshed, then the serial kernel
    (:class:`~pycumd.forces.PairForces`) with the extended positions as sources."""

    def __init__(self, pair_forces, decomposition: DomainDecomposition):
        self.pair_forces = pair_forces
        self.potential = pair_forces.potential
        self.d = decomposition

    def compute(self, state, neighbors: DomainNeighborList, with_energy: bool) -> None:
        neighbors.refresh_ghosts(state)
        view = SimpleNamespace(positions=neighbors.extended, types=neighbors.extended_types,
                               box_lengths=state.box_lengths, forces=state.forces, energy=state.energy,
                               virial=state.virial, n_atoms=state.n_atoms, control=state.control)
        self.pair_forces.compute(view, neighbors, with_energy)


def ghost_bytes_per_step(neighbors: DomainNeighborList) -> int:
    """Bytes this rank sends per step refreshing its ghosts (3 coordinates per ghost row sent, in
    the extended array's type: float64 on the CPU, the state's type on the GPU)."""
    itemsize = 8 if neighbors.extended is None else neighbors.extended.dtype.itemsize
    return int(sum(len(stage[0]) for stage in neighbors.stages) * 3 * itemsize)


__all__ = ["DomainDecomposition", "DomainNeighborList", "DomainForces", "ghost_bytes_per_step"]
