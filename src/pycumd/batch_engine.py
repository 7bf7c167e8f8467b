"""The batched engine of an :class:`~pycumd.ensemble.Ensemble` (docs/batch.md, "The batched engine").

All systems' atoms live in shared arrays, system ``s`` holding rows ``[atom_offset[s],
atom_offset[s+1])`` of every per-atom array; each member's :class:`~pycumd.state.State` holds *views*
of its segment, so its reporters, checkpoints, finiteness checks, energies and the replica exchange's
velocity scaling read and write the batch's memory as they read their own.  A per-atom ``system``
index and a per-system table (boxes, inverse boxes, cells, cell and atom offsets, cutoff + skin,
displacement limit, ``dtf``, ``dt``, lanes, pair-table offset, Langevin factors and seeds, rebuild
and active flags) replace the scalars a single run passes to its kernels, with the same values of
the same types, so that every atom sees the operands it sees alone.

One step, for the whole batch (one call of each kernel over all atoms):

1. initial half step (``initial_integrate_atom`` with the system's ``dtf``, ``dt``);
2. rebuild decision per system, as :meth:`NeighborList.needs_rebuild` alone (``every``, ``delay``,
   ``check``; the largest displacement of each system against its own limit);
3. where some system rebuilds: the rebuilding systems' atoms wrapped (``wrap_atom``), one batched
   cell index (:func:`~pycumd.neighbors.counting_sort.batch_cell_index`), one counting sort over all
   systems' bins, one in-place reorder of the per-atom arrays, and one list kernel over the
   rebuilding systems' targets.  System ``s`` owns the bins ``[key_offset[s], key_offset[s] +
   max(cells_s, N_s))``: a rebuilding system's atom takes the bin of its cell, an atom of a system that
   does not rebuild the bin of its own row in the system (one atom a bin: the stable sort leaves it
   where it is, and the GPU's sort ranks no large bin), so every system stays in its segment and only
   the rebuilding ones move.  The list kernel: every atom of the system's own cells within the
   stencil closer than ``r_list`` (the minimum image), in global-id order.  Deterministic mode's
   lists are in id order alone too (``NeighborList.canonical_order``), so a row holds the same
   neighbours in the same order as alone; the CPU's lists hold indices within the system (the
   members' lists view their rows), the GPU's batch rows, column-major;
4. pair forces (``forces.make_atom_list_sums``: the single kernel's per-atom arithmetic, with the
   system's box, lanes and rows of the shared pair table), energies and virials at the stretch's
   last step;
5. Langevin friction and noise (``langevin_atom`` with the system's factors and seed);
6. final half step.

The rule: each system's trajectory is the one it has alone, bit for bit (``tests/test_ensemble.py``,
``test_batched_engine_*``).  What it runs: deterministic mode, neighbour lists, one pair potential
style of the registry (parameters, cutoffs, boxes, sizes, time steps, seeds may differ), velocity
Verlet, NVE or Langevin; on the CPU (Numba) in double precision, on the GPU in double and single
precision (the kernels of ``forces.cu``, ``integrators/integrate.cu`` and ``neighbors/verlet.cu``
compiled with ``-DBATCH=1``: ``pair_forces_batch(_energy)``, ``initial_integrate_batch``,
``final_integrate_batch``, ``langevin_forces_batch``, ``batch_bin_keys`` (step 3's wrap and bins),
``displacement_exceeds_batch``, ``build_list_batch``, ``system_sums_batch``; the single-system kernels
are the same PTX as without the define).  The GPU's steps run in one of two ways (``step``), with the
same kernels and bits: the device loop of :mod:`pycumd.batch_graph` (default: each stretch between
two stops one CUDA graph launch, steps 2-3 decided and run on the device, one read of the control
array per stretch), or host-stepped (one launch per kernel per step for the whole batch, one read
of the per-system rebuild flags per step and at a build one of the systems' largest list counts).
Anything else is refused by :func:`unsupported_reason` with the reason (the member engine runs it):
mixed and composite precision, Nose-Hoover, barostats, molecules, charges, k-space, many-body
potentials, all-pairs boxes, MPI.
"""

from __future__ import annotations

import numba
import numpy as np

from .forces import default_lanes, make_atom_list_sums, make_pair_sums
from .integrators.langevin import langevin_atom
from .integrators.velocity_verlet import final_integrate_atom, initial_integrate_atom
from .jit_cache import cache_kernel
from .neighbors.counting_sort import THREADS as SORT_THREADS
from .neighbors.counting_sort import batch_cell_index, counting_sort, gather_plan, reorder_in_place
from .neighbors.cpu_builder import displacement2_atom, wrap_atom
from .neighbors.verlet import CAPACITY_WINDOW, capacity_for

#: per-atom arrays of a member's State that the batch concatenates (each member's State gets views)
BATCH_ARRAYS = ("positions", "velocities", "forces", "per_atom_mass", "types", "images", "ids",
                "positions_at_build", "energy", "virial")


class BatchUnsupported(ValueError):
    """An ensemble the batched engine cannot run (the message says why; the member engine can)."""


def unsupported_reason(members) -> str | None:
    """Why the batched engine cannot run these members (a sentence), or None when it can."""
    if not members:
        return "no systems"
    first = members[0]
    p0 = first.potential
    for i, m in enumerate(members):
        who = f"system {i}"
        if m.backend.name != first.backend.name:
            return f"{who} runs on {m.backend.name}, system 0 on {first.backend.name}: a batch shares one device"
        if m.decomposition is not None or m.comm.size > 1:
            return f"{who} runs over MPI ranks: the batched engine runs one process"
        if not m.precision.deterministic:
            return (f"{who} is not in deterministic mode: the batched engine needs deterministic=True "
                    f"(--deterministic on the command line; lists in id order, the condition of its "
                    f"bit-identity with a run alone)")
        if m.precision.name != first.precision.name:
            return f"{who} runs {m.precision.name} precision, system 0 {first.precision.name}: a batch shares one"
        if m.precision.name not in (("double", "single") if m.backend.is_gpu else ("double",)):
            return (f"{who} runs {m.precision.name} precision: the batched engine runs double (and single "
                    f"on the GPU) this round")
        if m.backend.is_gpu and _lanes(m) != _lanes(first):
            return (f"{who} takes {_lanes(m)} force lanes per atom, system 0 {_lanes(first)}: the GPU batch "
                    f"launches one lane count (give the systems' PairForces the same lanes)")
        if m.pair_method != "neighbor":
            return f"{who} evaluates all pairs (a small box): the batched engine needs neighbour lists"
        if m.topology is not None:
            return f"{who} has molecules (bonded terms): not in the batched engine"
        if m.state.charges is not None:
            return f"{who} has per-atom charges: not in the batched engine"
        pot = m.potential
        if getattr(pot, "many_body", False) or getattr(pot, "long_range", False):
            return f"{who}: {pot.describe()} is not a plain pair potential (many-body or k-space)"
        if getattr(pot, "pair_error", None) is not None:
            return f"{who}: {pot.describe()} checks its pairs after each evaluation: not in the batched engine"
        if type(pot) is not type(p0) or pot.cutoff != p0.cutoff or \
                getattr(pot, "raw_pair_function", None) is not getattr(p0, "raw_pair_function", None):
            return (f"{who}: the systems of a batch share one pair style and cutoff treatment "
                    f"({p0.describe()} and {pot.describe()})")
        if pot.table(m.n_types).shape[1] != p0.table(first.n_types).shape[1]:
            return f"{who}: its pair table's rows differ in width from system 0's"
        nl = m.neighbors
        if not nl.has_rebuild_policy or nl.half or not nl.reorder or not getattr(nl, "canonical_order", False):
            return f"{who}: its neighbour structure is not a full list in id order"
        integ = m.integrator
        if getattr(integ, "barostat", None) is not None:
            return f"{who} has a barostat: not in the batched engine"
        th = integ.thermostat
        if th is not None and not th.in_batch:
            return f"{who}: {th.describe()} does not run in the batched engine (NVE and Langevin do)"
        if m.state.n_atoms < 2:
            return f"{who} has fewer than 2 atoms"
    return None


def _lanes(m) -> int:
    """Threads per atom of a member's force kernel (its own, or the default for its size)."""
    return int(m.forces.lanes or default_lanes(m.state.n_atoms))


# -- the kernels (Numba; one call each over all systems) --------------------------------------
@numba.njit(inline="always")
def _stencil(n):
    """Cell offsets [lo, hi] visiting each of n cells at most once (at most -2..2; the list
    builders' stencil, ``neighbors/cpu_builder.py``)."""
    return -min(2, (n - 1) // 2), min(2, n // 2)


@numba.njit(inline="always")
def _cell_gap(d, w, n):
    """Smallest distance along one axis between points of two cells d apart (width w): ``(|d| - 1) w``,
    0 for neighbouring cells and when n < 5 (the single builders' pruning, ``neighbors/cpu_builder.py``)."""
    if n < 5 or -1 <= d <= 1:
        return 0.0
    return (abs(d) - 1) * w


@numba.njit(parallel=True, cache=True)
def batch_initial_integrate(positions, velocities, forces, mass, system, active, dtf, dtv):
    for i in numba.prange(positions.shape[0]):
        s = system[i]
        if active[s]:
            initial_integrate_atom(i, positions, velocities, forces, mass, dtf[s], dtv[s])


@numba.njit(parallel=True, cache=True)
def batch_final_integrate(velocities, forces, mass, system, active, dtf):
    for i in numba.prange(velocities.shape[0]):
        s = system[i]
        if active[s]:
            final_integrate_atom(i, velocities, forces, mass, dtf[s])


@numba.njit(parallel=True, cache=True)
def batch_langevin(velocities, forces, mass, ids, system, thermostat, gamma1, gamma2, seed, step):
    for i in numba.prange(velocities.shape[0]):
        s = system[i]
        if thermostat[s]:
            langevin_atom(i, velocities, forces, mass, ids, gamma1[s], gamma2[s], seed[s], step)


@numba.njit(parallel=True, cache=True)
def batch_displacement2(positions, at_build, system, consider, L, invL, d2):
    """Each atom's squared displacement since its system's last build (0 where its system is not
    considered this step)."""
    for i in numba.prange(positions.shape[0]):
        s = system[i]
        d2[i] = displacement2_atom(i, positions, at_build, L[s], invL[s]) if consider[s] else 0.0


@numba.njit(parallel=True, cache=True)
def batch_wrap(positions, images, system, rebuild, L):
    for i in numba.prange(positions.shape[0]):
        s = system[i]
        if rebuild[s]:
            wrap_atom(i, positions, images, L[s])


@numba.njit(parallel=True, cache=True)
def batch_list(positions, keys, ids, system, atom_offset, cell_offset, cells, L, invL, r_list2, rebuild,
               bin_start, nbr, nbr_count, at_build):
    """The lists of the rebuilding systems' targets (particles in cell order: ``bin_start`` of the
    counting sort indexes them directly; system s's cell c is bin ``cell_offset[s] + c``, the key of
    its atoms in that cell).  Target i of system s: every other atom of the cells of
    s within the stencil of i's cell (cells wholly beyond ``r_list`` skipped), closer than ``r_list`` (minimum image, ``d - L rint(d / L)``,
    as the single builder's separation), stored as an index within s and then sorted by global id
    (deterministic mode's canonical order).  A row longer than the storage is counted, not stored
    (the caller grows the storage and calls again).  The system's positions at build are taken."""
    capacity = nbr.shape[1]
    for i in numba.prange(positions.shape[0]):
        s = system[i]
        if not rebuild[s]:
            continue
        a = atom_offset[s]
        nx, ny, nz = cells[s, 0], cells[s, 1], cells[s, 2]
        c = keys[i] - cell_offset[s]
        cx, cy, cz = c % nx, (c // nx) % ny, c // (nx * ny)
        xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
        Lx, Ly, Lz = L[s, 0], L[s, 1], L[s, 2]
        ix, iy, iz = invL[s, 0], invL[s, 1], invL[s, 2]
        rl2 = r_list2[s]
        wx, wy, wz = Lx / nx, Ly / ny, Lz / nz
        skip2 = rl2 * 1.001               # the single builders' margin: rounding in the gaps drops no pair
        found = 0
        lo_z, hi_z = _stencil(nz)
        lo_y, hi_y = _stencil(ny)
        lo_x, hi_x = _stencil(nx)
        for dz in range(lo_z, hi_z + 1):
            z = (cz + dz) % nz
            gz = _cell_gap(dz, wz, nz)
            for dy in range(lo_y, hi_y + 1):
                y = (cy + dy) % ny
                gy = _cell_gap(dy, wy, ny)
                for dx in range(lo_x, hi_x + 1):
                    gx = _cell_gap(dx, wx, nx)
                    if gx * gx + gy * gy + gz * gz >= skip2:
                        continue                  # no point of that cell is within r_list of the target's cell
                    cell = cell_offset[s] + (cx + dx) % nx + nx * (y + ny * z)
                    for j in range(bin_start[cell], bin_start[cell + 1]):
                        ddx = xi - positions[j, 0]
                        ddy = yi - positions[j, 1]
                        ddz = zi - positions[j, 2]
                        ddx -= Lx * np.rint(ddx * ix)
                        ddy -= Ly * np.rint(ddy * iy)
                        ddz -= Lz * np.rint(ddz * iz)
                        r2 = ddx * ddx + ddy * ddy + ddz * ddz
                        if r2 < rl2 and j != i:
                            if found < capacity:
                                nbr[i, found] = j - a
                            found += 1
        nbr_count[i] = found
        count = min(found, capacity)
        for q in range(1, count):                 # canonical order: by global id
            j = nbr[i, q]
            key = ids[a + j]
            b = q - 1
            while b >= 0 and ids[a + nbr[i, b]] > key:
                nbr[i, b + 1] = nbr[i, b]
                b -= 1
            nbr[i, b + 1] = j
        for d in range(positions.shape[1]):
            at_build[i, d] = positions[i, d]


_FORCE_KERNELS: dict = {}


def _make_batch_force_kernel(pair_function):
    _, store = make_pair_sums(pair_function)
    atom_sums = make_atom_list_sums(pair_function)

    @numba.njit(parallel=True)
    def kernel(positions, types, system, atom_offset, active, L, invL, nbr, nbr_count, table, table_offset,
               n_types, lanes, forces, energy, virial, with_energy):
        for i in numba.prange(positions.shape[0]):
            s = system[i]
            if not active[s]:
                continue
            total = atom_sums(i, atom_offset[s], positions, types, L[s], invL[s], nbr, nbr_count[i], table,
                              table_offset[s] + types[i] * n_types[s], with_energy, lanes[s])
            store(total, i, forces, energy, virial, with_energy)
    return kernel


def batch_force_kernel(potential):
    """The batched force kernel of a potential's pair function (cached per pair function and cutoff
    treatment, and on disk where the potential gives a key)."""
    key = (type(potential), potential.cutoff, getattr(potential, "raw_pair_function", None))
    if key not in _FORCE_KERNELS:
        disk_key = potential.kernel_cache_key()
        if disk_key is not None:
            disk_key = (__name__, "_make_batch_force_kernel", *disk_key)
        _FORCE_KERNELS[key] = cache_kernel(_make_batch_force_kernel(potential.pair_function()), disk_key)
    return _FORCE_KERNELS[key]


#: the largest system whose GPU lists go over all its atoms in id order (lists_by_id)
LISTS_BY_ID_MAX_ATOMS = 2048


def lists_by_id(sizes, ids_contiguous) -> np.ndarray:
    """(S,) bool: the systems whose GPU lists go over all their atoms in id order
    (``build_list_batch_by_id``: no sort, every thread of a warp reading the same candidate at the
    same time) rather than over their stencil's cells (``build_list_batch``, then an insertion sort of
    each row by id; the same rows): those whose ids are 1 .. N_s (``ids_contiguous``) with N_s <=
    :data:`LISTS_BY_ID_MAX_ATOMS` (``sizes`` (S,): atoms).  An estimate, not a measurement: at 1,000
    atoms of in.lj (5 x 5 x 11 half-width cells of 3.6 atoms, the stencil 117 of them: some 430
    candidates a target) the 32 targets of a warp span some 9 cells, so their stencils diverge, and
    each row of ~77 is then sorted (~1,500 steps of global reads) against 1,000 candidates read once
    per warp; at 4,000 atoms the stencil holds ~350 of the 4,000."""
    return np.asarray(ids_contiguous, dtype=bool) & (np.asarray(sizes) <= LISTS_BY_ID_MAX_ATOMS)


@numba.njit(cache=True)
def segment_sums(values, atom_offset, out):
    """``out[s] = sum of values[atom_offset[s]:atom_offset[s+1]]`` (rows of values; (S, k) out), one
    pass for all systems (thermo reductions)."""
    for s in range(atom_offset.shape[0] - 1):
        for q in range(out.shape[1]):
            out[s, q] = 0.0
        for i in range(atom_offset[s], atom_offset[s + 1]):
            for q in range(out.shape[1]):
                out[s, q] += values[i, q]


# -- the engine -------------------------------------------------------------------------------
BLOCK = 128
#: how the GPU's steps are driven (BatchedEngine's ``step``): the device loop, the host, or the first that runs
STEP_MODES = ("auto", "graph", "host")


class _GpuKernels:
    """The batched CUDA kernels for one precision and pair style (``-DBATCH=1`` modules)."""

    def __init__(self, backend, precision, potential):
        from .forces import potential_defines
        from .precision import c_type_name

        real = c_type_name(precision.state_dtype)
        forces = backend.kernel_module("forces.cu", {**precision.cuda_defines, **potential_defines(potential),
                                                     "FIXED_POINT_SUMS_FP64": 0, "BATCH": 1},
                                       options=precision.cuda_options)
        self.forces = (forces.get_function("pair_forces_batch"), forces.get_function("pair_forces_batch_energy"))
        c = precision.cuda_defines
        integ = backend.kernel_module("integrators/integrate.cu", {"real_t": c["real_t"], "accum_t": c["accum_t"],
                                                                   "BATCH": 1}, options=precision.cuda_options)
        self.initial, self.final, self.langevin, self.sums = (integ.get_function(k) for k in (
            "initial_integrate_batch", "final_integrate_batch", "langevin_forces_batch", "system_sums_batch"))
        verlet = backend.kernel_module("neighbors/verlet.cu", {"real_t": real, "COMPOSITE": 0, "BATCH": 1},
                                       options=precision.cuda_options)
        self.bin_keys, self.moved, self.lists, self.gather, self.copy_back = (verlet.get_function(k) for k in (
            "batch_bin_keys", "displacement_exceeds_batch", "build_list_batch", "batch_gather_rows",
            "batch_copy_rows_back"))
        self.rows_by_id, self.lists_by_id = (verlet.get_function(k) for k in (
            "batch_rows_by_id", "build_list_batch_by_id"))


class BatchedEngine:
    """The members' states in shared arrays and the batched step (see the module docstring).

    Parameters
    ----------
    members : list of Simulation
        Built as they would run alone; :func:`unsupported_reason` must be None
        (:class:`BatchUnsupported` otherwise).  Their states' per-atom arrays become views of the
        batch's arrays from here on.
    step : {"auto", "graph", "host"}
        How the GPU's steps are driven: ``"graph"``, the device loop of
        :mod:`pycumd.batch_graph` (each stretch between two stops one CUDA graph launch, the
        rebuild decisions and builds on the device; :class:`BatchUnsupported` on the CPU, and for
        a ramped thermostat target); ``"host"``, one launch per kernel per step and a read of the
        rebuild flags each step; ``"auto"`` (default), the graph where it runs (1,024 x 1,000 atoms on an
        H100 over 2,000 steps: 1.16x the host-stepped rate, docs/batch.md).  The bits are the same.

    Attributes
    ----------
    atom_offset : ndarray (S + 1,) int64
    system : array (N,) int32
        Each atom's system (on the backend).
    active : ndarray (S,) bool
        Systems still advancing (a failed one is masked, :meth:`deactivate`).
    nbr, nbr_count : arrays
        The batch's lists.  CPU: ``nbr`` (N, stride) of indices within the system, whose row blocks
        the members' neighbour lists view.  GPU: ``nbr`` (stride * N,) column-major of batch
        indices, the members' own lists left as their last own build made them (their energies
        come from the batch's force kernel at every stop).
    """

    def __init__(self, members, step: str = "auto"):
        if step not in STEP_MODES:
            raise ValueError(f"the batched engine's step must be one of {', '.join(STEP_MODES)}, got {step!r}")
        reason = unsupported_reason(members)
        if reason is not None:
            raise BatchUnsupported(f"the batched engine cannot run this ensemble: {reason}")
        if step == "graph" and not members[0].backend.is_gpu:
            raise BatchUnsupported(f"step='graph' runs the batch's steps in a CUDA graph: the GPU's; these "
                                   f"systems run on {members[0].backend.name} (step='host' or 'auto')")
        #: "graph" (the device loop of pycumd.batch_graph), "host" (host-stepped), "auto" (the graph
        #: on the GPU where the driver has conditional nodes and no thermostat target ramps)
        self.step_mode = step
        self._graph = None
        self.members = list(members)
        first = self.members[0]
        self.backend = first.backend
        self.gpu = bool(self.backend.is_gpu)
        xp = self.backend.xp
        S = len(self.members)
        sizes = np.array([m.state.n_atoms for m in self.members], dtype=np.int64)
        self.atom_offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        system = np.repeat(np.arange(S, dtype=np.int32), sizes)
        self.system = xp.asarray(system)
        self.arrays = {}
        for name in BATCH_ARRAYS:
            whole = xp.concatenate([getattr(m.state, name) for m in self.members])
            self.arrays[name] = whole
            for s, m in enumerate(self.members):
                setattr(m.state, name, whole[self.atom_offset[s]:self.atom_offset[s + 1]])
        tables = [m.potential.table(m.n_types) for m in self.members]
        table = np.ascontiguousarray(np.concatenate(tables), dtype=np.float64)
        self.table_offset = np.concatenate([[0], np.cumsum([len(t) for t in tables])])[:-1].astype(np.int64)
        self.n_types = np.array([m.n_types for m in self.members], dtype=np.int64)
        self.L = np.array([np.asarray(m.state.box_lengths, dtype=np.float64) for m in self.members])
        self.invL = 1.0 / self.L
        nls = [m.neighbors for m in self.members]
        self.cells = np.array([nl.cells_per_dimension(L) for nl, L in zip(nls, self.L)], dtype=np.int64)
        n_cells = np.prod(self.cells, axis=1)
        cell_offset = np.concatenate([[0], np.cumsum(n_cells)])
        # system s's bins: its cells, or one per atom where it does not rebuild (see the module docstring)
        self.key_offset = np.concatenate([[0], np.cumsum(np.maximum(n_cells, sizes))]).astype(np.int64)
        if self.key_offset[-1] >= 2**31:
            raise BatchUnsupported(f"{int(self.key_offset[-1])} bins do not fit in int32 keys")
        if not self.gpu:     # per atom: what turns batch_cell_index's key into the bin (rebuilding), the bin
            # of its row (not); the GPU's batch_bin_keys computes both from key_offset and atom_offset
            self.cell_to_bin = (self.key_offset[:-1] - cell_offset[:-1])[system].astype(np.int32)
            self.row_bin = (self.key_offset[:-1][system] + np.arange(len(system))
                            - self.atom_offset[:-1][system]).astype(np.int32)
        self.r_list2 = np.array([nl.r_list * nl.r_list for nl in nls])
        self.limit2 = np.array([nl.displacement_limit2 for nl in nls])
        self.every = np.array([nl.every for nl in nls], dtype=np.int64)
        self.delay = np.array([nl.delay for nl in nls], dtype=np.int64)
        self.check = np.array([nl.check for nl in nls], dtype=bool)
        self.dtf = np.array([m.integrator.dtf for m in self.members], dtype=np.float64)
        self.dt = np.array([m.integrator.dt for m in self.members], dtype=np.float64)
        self.thermostat = np.array([m.thermostat is not None for m in self.members], dtype=bool)
        self.seed = np.array([m.thermostat.seed if m.thermostat is not None else 0 for m in self.members],
                             dtype=np.int64)
        self.gamma1 = np.zeros(S)
        self.gamma2 = np.zeros(S)
        self.active = np.ones(S, dtype=bool)
        self.lanes = np.array([_lanes(m) for m in self.members], dtype=np.int64)
        self.since = np.zeros(S, dtype=np.int64)
        self.nbr = None
        self.nbr_count = xp.zeros(self.n_atoms, dtype=np.int32)
        self.n_builds = 0              # batched builds (of one or more systems)
        self._build_log: list = []     # (rebuilt (S,) bool, largest counts (S,)) of each build since the last stop
        if self.gpu:
            self._setup_gpu(first, table)
        else:
            self.table = table
            self._force_kernel = batch_force_kernel(first.potential)
            self._d2 = np.zeros(self.n_atoms)
            self.keys = np.zeros(self.n_atoms, dtype=np.int32)

    def _setup_gpu(self, first, table) -> None:
        """The per-system table on the device, in the types the single kernels take (real_t boxes,
        limits and step sizes, double Langevin factors), and the kernels."""
        xp, precision = self.backend.xp, first.precision
        real = precision.state_dtype
        self.kernels = _GpuKernels(self.backend, precision, first.potential)
        self.table = xp.asarray(table, dtype=precision.pair_dtype)
        box = np.concatenate([self.L.astype(real), self.invL.astype(real)], axis=1)   # real(L), real(1 / L)
        self.d_box = xp.asarray(np.ascontiguousarray(box))
        self.d_cells = xp.asarray(self.cells.astype(np.int32).ravel())
        self.d_key_offset = xp.asarray(self.key_offset[:-1].astype(np.int32))
        self.d_r_list2 = xp.asarray(self.r_list2.astype(real))
        self.d_limit2 = xp.asarray(self.limit2.astype(real))
        self.d_step = xp.asarray(np.stack([self.dtf, self.dt], axis=1).astype(real).ravel())
        self.d_table_row = xp.asarray(self.table_offset.astype(np.int32))
        self.d_n_types = xp.asarray(self.n_types.astype(np.int32))
        self.d_seed = xp.asarray(self.seed.astype(np.uint64))
        self.d_atom_offset = xp.asarray(self.atom_offset)
        # the step control array (control_layout.cuh); control[0] == 0 between steps: not frozen
        self.d_control = xp.zeros(32, np.int32)
        self.d_flags = xp.zeros(self.n_systems, np.int32)
        self.d_counts = xp.zeros(self.n_systems, np.uint32)
        self.d_no_steps = xp.zeros(1, np.int32)         # the Langevin kernel's step offsets of a host step: 0
        self.d_no_base = xp.zeros(1, np.uint64)
        # the flags and noise factors, written in place (captured graphs name these arrays)
        self.d_active = xp.zeros(self.n_systems, np.uint8)
        self.d_noisy = xp.zeros(self.n_systems, np.uint8)
        self.d_noise = xp.zeros(2 * self.n_systems, np.float64)
        self._upload_flags()
        #: a build's bins, and the plan of its in-place reorder (the arrays' addresses; kept, as the
        #: arrays are: captured graphs name them)
        self.d_keys = xp.zeros(self.n_atoms, np.int32)
        arrays = self.sorted_arrays(self.d_keys)
        if not all(a.nbytes % (4 * self.n_atoms) == 0 and a.flags.c_contiguous for a in arrays):
            raise AssertionError("the batch's per-atom arrays are not rows of 4-byte words")
        self.gather_plan = gather_plan(self.backend, self.n_atoms, arrays)
        self.d_row_of_id = xp.zeros(self.n_atoms, np.int32)
        ids = self.backend.to_host(self.arrays["ids"])
        #: (S,) bool: the system's ids are 1 .. N_s (its lists may be made in id order, lists_by_id)
        self.ids_contiguous = np.array([np.array_equal(np.sort(ids[a:b]), np.arange(1, b - a + 1))
                                        for a, b in zip(self.atom_offset[:-1], self.atom_offset[1:])])
        self.d_by_id = xp.zeros(self.n_systems, np.uint8)
        self.use_lists_by_id(lists_by_id(np.diff(self.atom_offset), self.ids_contiguous))

    def _upload_flags(self) -> None:
        if self.gpu:
            self.d_active.set(self.active.astype(np.uint8))
            self.d_noisy.set((self.active & self.thermostat).astype(np.uint8))
            self.d_noise.set(np.stack([self.gamma1, self.gamma2], axis=1).ravel())

    @property
    def n_systems(self) -> int:
        return len(self.members)

    @property
    def n_atoms(self) -> int:
        return int(self.atom_offset[-1])

    def deactivate(self, s: int) -> None:
        """Mask system ``s`` (it failed): its atoms are neither integrated nor listed again."""
        self.active[s] = False
        self._upload_flags()

    # -- the members' lists and schedules in, and back out --------------------------------------
    def begin_run(self) -> None:
        """At the start of each run, after the members' set-up (``Simulation.begin_run``: their
        own list and forces, as alone): their lists copied into the batch's storage (which, on the
        CPU, their neighbour structures then view), their schedules and lanes read."""
        widths = [self._width(m) for m in self.members]
        stride = max(widths)
        if self.nbr is None or self.stride() < stride:
            self.nbr = self._new_storage(stride)
        for s, m in enumerate(self.members):
            if not self.active[s]:
                continue
            a, b = self.atom_offset[s], self.atom_offset[s + 1]
            nl = m.neighbors
            if self.gpu:        # column-major, batch indices
                self.nbr.reshape(-1, self.n_atoms)[:widths[s], a:b] = nl.nbr.reshape(widths[s], b - a) + np.int32(a)
            else:
                self.nbr[a:b, :widths[s]] = nl.nbr
            self.nbr_count[a:b] = nl.nbr_count
            if not self.gpu:
                self._view_lists(s)
            self.since[s] = nl.steps_since_build
            if _lanes(m) != self.lanes[s] and self.gpu:
                raise BatchUnsupported(f"system {s}'s force lanes changed: the GPU batch launches one lane count")
            self.lanes[s] = _lanes(m)
            if not np.array_equal(np.asarray(m.state.box_lengths, dtype=np.float64), self.L[s]):
                raise BatchUnsupported(f"system {s}'s box changed: the batched engine runs fixed boxes")
        self._noise_factors()

    def _width(self, m) -> int:
        """Slots per atom of a member's own list storage."""
        return int(m.neighbors.nbr.size // max(m.state.n_atoms, 1))

    def stride(self) -> int:
        return int(self.nbr.size // max(self.n_atoms, 1))

    def _new_storage(self, stride: int):
        """List storage of ``stride`` slots per atom, the old lists' entries kept."""
        xp = self.backend.xp
        new = xp.zeros(self.n_atoms * stride, dtype=np.int32)
        if self.nbr is not None:
            old = self.stride()
            if self.gpu:
                new.reshape(stride, self.n_atoms)[:old] = self.nbr.reshape(old, self.n_atoms)
            else:
                new.reshape(self.n_atoms, stride)[:, :old] = self.nbr
        return new if self.gpu else new.reshape(self.n_atoms, stride)

    def _view_lists(self, s: int) -> None:
        nl = self.members[s].neighbors
        a, b = self.atom_offset[s], self.atom_offset[s + 1]
        nl.nbr = self.nbr[a:b]
        nl.nbr_count = self.nbr_count[a:b]

    def _noise_factors(self) -> None:
        for s, m in enumerate(self.members):
            if self.thermostat[s]:
                self.gamma1[s], self.gamma2[s] = m.thermostat.noise_factors(m)
        self._upload_flags()

    def _ramps(self) -> bool:
        return any(m.thermostat is not None and m.thermostat.t_start != m.thermostat.t_stop
                   for m in self.members)

    # -- stepping ---------------------------------------------------------------------------------
    def advance(self, until: int, step: int) -> None:
        """Run the steps ``step + 1 .. until`` of every active system; energies and virials are
        computed at ``until`` (the stop, where members report).  The members' step numbers and list
        schedules are brought up to date at the end (:meth:`sync_members`).  On the GPU the steps
        run in the device loop of :mod:`pycumd.batch_graph` (``step="graph"``, or ``"auto"`` where
        the driver has conditional graph nodes and no thermostat ramps its target), else host-stepped."""
        ramps = self._ramps()
        self._noise_factors()
        graph = self._step_graph(ramps) if until > step else None
        if graph is not None:
            graph.advance(step, until)
            self.sync_members(until)
            return
        for t in range(step + 1, until + 1):
            if ramps:
                for m in self.members:
                    m.state.step = t
                self._noise_factors()
            self.initial_half_step()
            self._neighbor_decision()
            self.pair_forces(t == until)
            if self.thermostat.any():
                self.langevin(t)
            self.final_half_step()
        self.sync_members(until)

    def sync_members(self, step: int) -> None:
        """Each member's step number and list schedule as the batch has them: the builds since the
        last stop recorded in its neighbour list (``NeighborList.record_builds``: their number and
        largest counts), the steps since its last build."""
        if self._build_log:
            built = np.stack([mask for mask, _ in self._build_log])
            counts = np.stack([c for _, c in self._build_log])
            for s in np.flatnonzero(built.any(axis=0)):
                mine = counts[built[:, s], s]
                self.record_builds(s, len(mine), mine)
            self._build_log = []
        for s, m in enumerate(self.members):
            if self.active[s]:
                m.state.step = step
                m.neighbors.steps_since_build = int(self.since[s])

    def record_builds(self, s: int, n: int, last_counts) -> None:
        """System ``s``'s ``n`` builds since the last stop into its neighbour list
        (``NeighborList.record_builds``), with the largest counts of the last of them, in order (at
        most ``CAPACITY_WINDOW``; the device loop keeps only those)."""
        m = self.members[s]
        m.neighbors.record_builds(m.state, int(n), [int(c) for c in list(last_counts)[-CAPACITY_WINDOW:]])

    def _step_graph(self, ramps: bool):
        """The device loop (:class:`~pycumd.batch_graph.BatchStepGraph`) that runs the steps, or
        None where they are host-stepped (``step="host"``, the CPU, a ramped thermostat target, or
        ``"auto"`` on a driver without conditional graph nodes)."""
        if self.step_mode == "host" or not self.gpu:
            return None
        if ramps:
            if self.step_mode == "graph":
                raise BatchUnsupported("a thermostat target ramps during the run: the graph-stepped batch "
                                       "keeps the noise factors of its start (step='host' or 'auto' runs it)")
            return None
        if self._graph is None:
            from .batch_graph import BatchStepGraph
            from .conditional_graph import ConditionalGraphUnavailable

            try:
                self._graph = BatchStepGraph(self)
            except ConditionalGraphUnavailable:
                if self.step_mode == "graph":
                    raise
                self.step_mode = "host"
                return None
        return self._graph

    def _grid(self, threads: int) -> tuple:
        return ((threads + BLOCK - 1) // BLOCK,)

    def initial_half_step(self) -> None:
        a = self.arrays
        if self.gpu:
            self.kernels.initial(self._grid(self.n_atoms), (BLOCK,), (
                self.d_control, a["positions"], a["velocities"], a["forces"], a["per_atom_mass"], self.system,
                self.d_active, self.d_step, np.int32(self.n_atoms)))
        else:
            batch_initial_integrate(a["positions"], a["velocities"], a["forces"], a["per_atom_mass"], self.system,
                                    self.active, self.dtf, self.dt)

    def final_half_step(self, step_in_block: int = 0) -> None:
        """The final half step (on the GPU: ``step_in_block`` written to the control array's steps
        completed, control[1], as the single kernels do in a captured block)."""
        a = self.arrays
        if self.gpu:
            self.kernels.final(self._grid(self.n_atoms), (BLOCK,), (
                self.d_control, np.int32(step_in_block), a["velocities"], a["forces"], a["per_atom_mass"],
                self.system, self.d_active, self.d_step, np.int32(self.n_atoms)))
        else:
            batch_final_integrate(a["velocities"], a["forces"], a["per_atom_mass"], self.system, self.active,
                                  self.dtf)

    def langevin(self, t: int, steps_done=None, step_base=None) -> None:
        """Langevin friction and noise of step ``t``; on the GPU the noise's step is ``t +
        *step_base + *steps_done`` (device int32 and uint64 arrays; zeros when not given: a captured
        graph passes its base and the device loop's count of completed steps)."""
        a = self.arrays
        if self.gpu:
            self.kernels.langevin(self._grid(self.n_atoms), (BLOCK,), (
                self.d_control, self.d_no_steps if steps_done is None else steps_done,
                self.d_no_base if step_base is None else step_base,
                a["velocities"], a["forces"], a["per_atom_mass"], a["ids"], self.system, self.d_noisy,
                self.d_noise, self.d_seed, np.int32(self.n_atoms), np.uint64(t)))
        else:
            batch_langevin(a["velocities"], a["forces"], a["per_atom_mass"], a["ids"], self.system,
                           self.thermostat & self.active, self.gamma1, self.gamma2, self.seed, t)

    def pair_forces(self, with_energy: bool) -> None:
        a = self.arrays
        if self.gpu:
            n, lanes = self.n_atoms, int(self.lanes[0])
            self.kernels.forces[bool(with_energy)](self._grid(n * lanes), (BLOCK,), (
                self.d_control, a["positions"], self.nbr, self.nbr_count, np.int32(n), np.int32(n), self.table,
                self.system, self.d_box, self.d_table_row, self.d_n_types, a["forces"], a["energy"], a["virial"],
                np.int32(lanes)))
        else:
            self._force_kernel(a["positions"], a["types"], self.system, self.atom_offset, self.active, self.L,
                               self.invL, self.nbr, self.nbr_count, self.table, self.table_offset, self.n_types,
                               self.lanes, a["forces"], a["energy"], a["virial"], with_energy)

    def moved_flags(self, consider) -> None:
        """GPU: ``d_flags[s] = 1`` where an atom of a system with ``consider[s]`` (device uint8) moved
        beyond its displacement limit (flags already set stay set)."""
        a = self.arrays
        self.kernels.moved(self._grid(self.n_atoms), (BLOCK,), (
            a["positions"], a["positions_at_build"], np.int32(self.n_atoms), self.system, consider, self.d_box,
            self.d_limit2, self.d_flags))

    def _moved(self, checked) -> np.ndarray:
        """(S,) bool: the systems of ``checked`` with an atom beyond their displacement limit."""
        a = self.arrays
        if self.gpu:
            self.d_flags.fill(0)
            self.moved_flags(self.backend.xp.asarray(checked.astype(np.uint8)))
            return self.d_flags.get() != 0
        batch_displacement2(a["positions"], a["positions_at_build"], self.system, checked, self.L, self.invL,
                            self._d2)
        return np.maximum.reduceat(self._d2, self.atom_offset[:-1]) > self.limit2

    def _neighbor_decision(self) -> None:
        """LAMMPS ``Neighbor::decide`` per system (NeighborList.needs_rebuild), then one batched build."""
        self.since[self.active] += 1
        consider = self.active & (self.since >= self.delay) & (self.since % self.every == 0)
        if not consider.any():
            return
        rebuild = consider & ~self.check
        checked = consider & self.check
        if checked.any():
            rebuild |= checked & self._moved(checked)
        if rebuild.any():
            self.build(rebuild)

    def build(self, rebuild) -> None:
        """Rebuild the lists of the systems flagged in ``rebuild`` ((S,) bool), leaving the others'
        atoms, lists and positions at build as they are."""
        xp = self.backend.xp
        a = self.arrays
        flags = xp.asarray(rebuild.astype(np.uint8)) if self.gpu else rebuild
        if self.gpu:
            keys = self.d_keys
            self.bin_keys(flags, keys)
        else:
            batch_wrap(a["positions"], a["images"], self.system, rebuild, self.L)
            keys, _ = batch_cell_index(a["positions"], self.system, self.L, self.cells, out=self.keys)
            keys[...] = np.where(rebuild[self.system], keys + self.cell_to_bin, self.row_bin)
        sort = counting_sort(keys, int(self.key_offset[-1]))
        if self.gpu:
            self.reorder_rebuilding(sort.order, flags)
        else:
            reorder_in_place(sort.order, *self.sorted_arrays(keys))
        counts = self.lists_that_fit(rebuild, keys, flags, sort.bin_start)
        self.n_builds += 1
        self.since[rebuild] = 0
        self._build_log.append((rebuild.copy(), counts))     # recorded in the members at the stop

    def sorted_arrays(self, keys) -> tuple:
        """The per-atom arrays a build reorders (the state's, and the bins ``keys``)."""
        a = self.arrays
        return (a["positions"], a["velocities"], a["per_atom_mass"], a["types"], a["images"], a["ids"],
                a["positions_at_build"], keys)

    def reorder_rebuilding(self, order, flags) -> None:
        """GPU: the per-atom arrays (:meth:`sorted_arrays` of ``d_keys``) permuted in place by the
        counting sort's ``order``, in the rows of the systems of ``flags`` (device uint8 (S,)) only:
        the other rows are their own in that order (no launch reads or writes them)."""
        plan = self.gather_plan
        blocks = (-(-self.n_atoms * plan.max_words // SORT_THREADS),)
        tables = (plan.src, plan.dst, plan.words, np.int32(len(plan.arrays)))
        self.kernels.gather(blocks, (SORT_THREADS,), (*tables, order, np.int32(self.n_atoms),
                                                      np.int32(plan.max_words), self.system, flags))
        self.kernels.copy_back(blocks, (SORT_THREADS,), (*tables, np.int32(self.n_atoms), np.int32(plan.max_words),
                                                         self.system, flags))

    def use_lists_by_id(self, by_id) -> None:
        """GPU: which systems' lists ``build_list_batch_by_id`` makes ((S,) bool; the others':
        ``build_list_batch``, the stencil of cells and a sort by id; the same rows).  The default is
        :func:`lists_by_id`'s; set before the first run (captured graphs hold the launches)."""
        by_id = np.broadcast_to(np.asarray(by_id, dtype=bool), (self.n_systems,))
        if (by_id & ~self.ids_contiguous).any():
            raise ValueError(f"systems {np.flatnonzero(by_id & ~self.ids_contiguous).tolist()} do not have the ids "
                             f"1 .. N: their lists cannot be made in id order")
        self.by_id = by_id.copy()
        self.d_by_id.set(self.by_id.astype(np.uint8))

    def list_kernel(self, keys, flags, bin_start) -> None:
        """GPU: the list kernels over the systems of ``flags`` (device uint8 (S,)), each system's
        largest count into ``d_counts`` (atomicMax: zero it before): ``build_list_batch_by_id`` (after
        ``batch_rows_by_id``) for the systems of :attr:`by_id`, ``build_list_batch`` for the others."""
        a = self.arrays
        grid, n = self._grid(self.n_atoms), np.int32(self.n_atoms)
        if self.by_id.any():
            self.kernels.rows_by_id(grid, (BLOCK,), (a["ids"], n, self.system, flags, self.d_by_id,
                                                     self.d_atom_offset, self.d_row_of_id))
            self.kernels.lists_by_id(grid, (BLOCK,), (
                a["positions"], n, self.system, flags, self.d_by_id, self.d_atom_offset, self.d_row_of_id,
                self.d_box, self.d_r_list2, self.nbr, self.nbr_count, n, np.int32(self.stride()),
                a["positions_at_build"], self.d_counts))
        if not self.by_id.all():
            self.kernels.lists(grid, (BLOCK,), (
                a["positions"], keys, a["ids"], n, self.system, flags, self.d_by_id,
                self.d_key_offset, self.d_cells, self.d_box, self.d_r_list2, bin_start,
                self.nbr, self.nbr_count, n, np.int32(self.stride()),
                a["positions_at_build"], self.d_counts))

    def bin_keys(self, flags, keys) -> None:
        """GPU: the rebuilding systems' atoms (``flags``, device uint8 (S,)) wrapped, and every atom's
        bin of the batched counting sort into ``keys`` (int32 (N,); see the module docstring)."""
        a = self.arrays
        self.kernels.bin_keys(self._grid(self.n_atoms), (BLOCK,), (
            a["positions"], a["images"], np.int32(self.n_atoms), self.system, flags, self.d_box, self.d_cells,
            self.d_key_offset, self.d_atom_offset, keys))

    def lists_that_fit(self, rebuild, keys, flags, bin_start) -> np.ndarray:
        """The list kernel over the systems of ``rebuild`` ((S,) bool; ``flags`` the same on the
        backend), repeated with a larger storage while some row does not fit, as alone (each
        overflowing member's ``overflows`` counted and its capacity grown by ``capacity_for``);
        returns each system's largest count."""
        while True:
            counts = self._lists(keys, self.key_offset, flags, bin_start)
            over = rebuild & (counts > self.stride())
            if not over.any():
                return counts
            for s in np.flatnonzero(over):       # as alone: a larger storage, the build repeated
                nl = self.members[s].neighbors
                nl.overflows += 1
                nl.capacity = capacity_for(int(counts[s]), self.members[s].state.n_atoms)
            self.nbr = self._new_storage(max(self.members[s].neighbors.capacity for s in np.flatnonzero(over)))
            if not self.gpu:
                for s in range(self.n_systems):
                    self._view_lists(s)

    def _lists(self, keys, key_offset, flags, bin_start) -> np.ndarray:
        """The list kernel over the rebuilding systems; returns each system's largest count (host)."""
        a = self.arrays
        if self.gpu:
            self.d_counts.fill(0)
            self.list_kernel(keys, flags, bin_start)
            return self.d_counts.get().astype(np.int64)
        batch_list(a["positions"], keys, a["ids"], self.system, self.atom_offset, key_offset, self.cells,
                   self.L, self.invL, self.r_list2, flags, bin_start, self.nbr, self.nbr_count,
                   a["positions_at_build"])
        return np.maximum.reduceat(self.nbr_count, self.atom_offset[:-1])

    # -- per-system reductions ------------------------------------------------------------------
    def system_sums(self) -> dict:
        """Per system, one pass over all atoms (one launch on the GPU): ``"energy"`` (S,) the pair
        energy and ``"virial"`` (S,) the virial's trace of the last step that computed them,
        ``"kinetic"`` (S,) ``1/2 sum m v^2`` (mass x velocity^2 units; times the units' mvv2e for
        energy).  Thermo values, in a fixed order: a member's own sums (``Simulation.potential_energy``,
        which the replica exchange reads) are its backend's over its segment, as alone."""
        a = self.arrays
        S = self.n_systems
        if self.gpu:
            out = self.backend.xp.zeros(3 * S, np.float64)
            self.kernels.sums((S,), (256,), (a["energy"], a["virial"], a["velocities"], a["per_atom_mass"],
                                             self.d_atom_offset, out))
            e, k, w = out.get().reshape(S, 3).T
            return {"energy": e, "kinetic": k, "virial": w}
        e = np.empty((S, 1))
        segment_sums(a["energy"].reshape(-1, 1), self.atom_offset, e)
        w = np.empty((S, 1))
        segment_sums(a["virial"][:, :3].sum(axis=1).reshape(-1, 1), self.atom_offset, w)
        k = np.empty((S, 1))
        segment_sums((0.5 * a["per_atom_mass"] * (a["velocities"] ** 2).sum(axis=1)).reshape(-1, 1),
                     self.atom_offset, k)
        return {"energy": e[:, 0], "virial": w[:, 0], "kinetic": k[:, 0]}

    @property
    def stepped(self) -> str:
        """"graph" once the device loop (:mod:`pycumd.batch_graph`) has run steps, else "host"."""
        return "graph" if self._graph is not None and self._graph.launches else "host"

    def describe(self) -> str:
        steps = f"{self.stepped}-stepped"
        return (f"batched engine ({self.backend.name}, {steps}): {self.n_systems} systems, {self.n_atoms} atoms in "
                f"shared arrays, {self.n_builds} batched builds")


__all__ = ["BATCH_ARRAYS", "STEP_MODES", "BatchUnsupported", "BatchedEngine", "batch_force_kernel", "lists_by_id",
           "LISTS_BY_ID_MAX_ATOMS", "segment_sums", "unsupported_reason"]
