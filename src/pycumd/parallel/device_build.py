"""The build of a spatial domain on the GPU with its counts on the device: one synchronisation a build.

:class:`~pycumd.parallel.domains.DomainNeighborList`'s host build reads counts back at every stage
(how many rows leave, arrive, become ghosts) to size its next arrays, and is made of about 180 CuPy
calls: at 1M atoms on two GPUs it costs 4-5 ms of host time against 0.8 ms for one GPU's whole
build.  This build does the same work with arrays of fixed capacity whose live row counts stay in
device memory (``counts``), so it is a short sequence of launches and NCCL groups that the host
issues without waiting, and reads everything back once at the end:

1. **migration**, per decomposed direction: ``select_migrating`` flags the owned rows leaving for the
   low or the high face neighbour (and clears them in ``alive``), one scan of the flags ranks them,
   ``pack_selected`` writes them into the face's message (a header with the count, then the rows'
   columns side by side), one NCCL group sends both faces' whole buffers, ``unpack_received`` appends
   the arrivals after the owned rows;
2. **ghosts**, per decomposed direction: ``select_ghosts`` flags the live owned rows and the ghosts
   received so far within the ghost layer of each face (by their image), ``pack_selected`` packs the
   image, the owner's row and the id and records the send list, the messages cross, ``unpack_received``
   appends the ghosts with the periodic shift of their images;
3. **cell order**: ``extended_keys`` bins the live rows' images in the domain's frame (the dead rows
   into bins after the cells), the counting sort orders them, ``owned_slots`` + a scan + ``renumber``
   number the owned rows in slot order and the ghosts after them, ``permute_rows`` writes every owned
   column in the new order into the other of two buffer sets (the ghosts' rows and ids after the owned
   ones), ``rename_send_lists`` renumbers the send lists;
4. **the Verlet list**: the rows in slot order with their new index and the list kernel of the serial
   list (``verlet.cu``'s ``TARGETS_ON_DEVICE`` variant: the target count, which is the lists' stride,
   read on the device) into kept list storage, its statistics into ``counts``;
5. one NCCL all-reduce of the overflow and error flags, then **one read** of ``counts``.

Where the ranks are joined by NCCL, steps 1-5 are one captured CUDA graph per buffer set and
configuration (captured at its second use); otherwise (ranks sharing a GPU through the host) they
run launch by launch.  The steps are those of the host build, in the same order and with the same
stable orders, so the two builds give the same rows in the same order (``tests/test_parallel.py``
compares them bit for bit).  Nothing of the old rows is overwritten before the read: a capacity
overflow anywhere (flagged on the device, agreed by all ranks) grows the capacities and repeats the
build; a list that overflows its storage is built again by the host build's list step.

Measured (2 x H200, docs/scaling.md): 1M atoms, 996 us a build against 5.3-5.9 ms for the host build.

Capacities: the owned columns hold ``capacity`` rows, the ghost region ``ghost_capacity``; a face's
message ``message_capacity`` (migration) or ``ghost_message_capacity`` rows, equal on every rank (the
whole buffer is sent).  The State's arrays are views of the current buffer set's first ``n`` rows.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..bookkeeping import SimulationError
from ..neighbors.counting_sort import CountingSortBuffers, enqueue_counting_sort
from ..neighbors.scan import CapturableScan
from ..precision import c_type_name

#: counts' entries (int32 on the device; read once at the end of a build): the rows of the owned space,
#: those departed, the ghosts, the owned rows after the build, the flags, the live rows (owned that stay
#: and ghosts), the list's largest count and smallest r^2 (float bits)
N_ROWS, N_DEPARTED, N_GHOST, N_NEW, OVERFLOW, STRAYED, N_LIVE, MAX_COUNT, MIN_R2 = range(9)
HEADER_COUNTS = 9
#: then per decomposed direction: migrating rows sent (2 faces), received (2), ghosts sent (2), received (2)
PER_DIRECTION = 8
#: 32-bit words before a message's rows (domains.cu's MESSAGE_HEADER)
MESSAGE_HEADER = 4
THREADS = 256
#: the step arrays (recomputed after every build) that follow the owned capacity
STEP_ARRAYS = ("forces", "energy", "virial", "positions_at_build")


def _grid(n: int) -> tuple:
    return (max(1, -(-int(n) // THREADS)),)


def _no_mark(name) -> None:
    """A phase mark while the build is being captured (none: nothing may synchronise or record)."""


def _row_words(array) -> int:
    return int(np.prod(array.shape[1:], dtype=np.int64)) * array.dtype.itemsize // 4


class DeviceDomainBuild:
    """Migration, ghost selection and the cell order of one domain's build on the GPU, with fixed
    capacities and one synchronisation (module docstring).

    Parameters
    ----------
    neighbors : DomainNeighborList
        The list whose build this is (its decomposition, ghost layer and stages).
    """

    def __init__(self, neighbors):
        self.nl = neighbors
        self.backend = neighbors.backend
        self.cp = neighbors.backend.xp
        self.capacity = 0                 # owned rows
        self.ghost_capacity = 0           # ghost rows
        self.message_capacity = 0         # migrating rows per face message (equal on every rank)
        self.ghost_message_capacity = 0   # ghost rows per face message (equal on every rank)
        self.sets = None                  # two dicts name -> buffer (the owned columns); sets[0] current
        self.views: dict = {}             # name -> the view the State holds (of sets[0])
        self.step: dict = {}              # the step arrays' buffers
        self._scans: dict = {}
        self._functions: dict = {}
        self._plans: dict = {}            # configuration key -> the arrays and tables its launches name
        self._graphs: dict = {}           # configuration key -> captured graph (NCCL transport)
        #: capture the build's launches as CUDA graphs where the ranks are joined by NCCL
        self.use_graphs = True
        #: the first capacities' factor and margin (rows); the tests shrink them to force overflows
        self.initial_scale, self.initial_margin = 1.0, 1024
        self.captures = 0
        self._capture_stream = self.cp.cuda.Stream(non_blocking=False)
        self.n_owned = self.cp.zeros(1, dtype=np.int32)   # the rows the State holds, on the device
        self._n_owned = 0                                  # ... and its host copy
        self.real = None
        self._list = None                                  # (r_list, list capacity) of the build
        self._list_store = None
        neighbors.d.comm.on_release_graphs(self.release)   # NCCL's destroy waits for graphs holding its work
        self.builds = 0
        self.repeats = 0                  # builds repeated after an overflow
        self.last_counts = None           # the host copy of counts of the last build

    # -- capacities and buffers ------------------------------------------------------------------
    def _names(self, state) -> tuple:
        from .domains import migrating

        return migrating(state)

    def _allocate(self, state, capacity: int, ghost_capacity: int) -> None:
        """Both buffer sets at ``capacity`` owned rows (positions and ids with ``ghost_capacity``
        rows more, the extended arrays), the first ``n`` rows of the current set holding the
        State's atoms; the scratch arrays of a build."""
        cp = self.cp
        n = state.n_atoms
        space = capacity + ghost_capacity
        sets = []
        for _ in range(2):
            buffers = {}
            for name in self._names(state):
                a = getattr(state, name)
                rows = space if name in ("positions", "ids") else capacity
                buffers[name] = cp.empty((rows,) + tuple(a.shape[1:]), dtype=a.dtype)
            sets.append(buffers)
        for name in self._names(state):
            if n:
                sets[0][name][:n] = getattr(state, name)
        self.sets = sets
        self.step = {name: cp.zeros((capacity,) + tuple(getattr(state, name).shape[1:]),
                                    dtype=getattr(state, name).dtype) for name in STEP_ARRAYS}
        pos = state.positions
        self.ghost_image = cp.empty((ghost_capacity, 4), dtype=pos.dtype)
        self.ghost_raw = cp.empty((ghost_capacity, 4), dtype=pos.dtype)
        self.ghost_ids = cp.empty(ghost_capacity, dtype=np.int64)
        self.alive = cp.zeros(capacity, dtype=np.uint8)
        self.shifted = cp.empty((space, 4), dtype=pos.dtype)
        self.rows = cp.empty((space, 4), dtype=pos.dtype)         # the list's rows in slot order
        self.keys_renamed = cp.empty(space, dtype=np.int32)
        self._list_store = None                                     # (nbr, nbr_count) at the capacity
        self.keys = cp.empty(space, dtype=np.int32)
        self.flags = cp.empty(2 * space + 1, dtype=np.int32)
        self.offsets = cp.empty(2 * space + 1, dtype=np.int32)
        self.owned_order = cp.empty(capacity, dtype=np.int32)
        self.new_index = cp.empty(space, dtype=np.int32)
        self.capacity, self.ghost_capacity = int(capacity), int(ghost_capacity)
        self.real = np.dtype(pos.dtype)
        self._functions.clear()
        self.release()
        self._sort_buffers = None
        self.views = {}

    def _allocate_messages(self, state, message_capacity: int, ghost_message_capacity: int) -> None:
        cp = self.cp
        self.migrating_words = sum(_row_words(getattr(state, name)) for name in self._names(state))
        self.ghost_words = 2 * _row_words(state.positions) + 2
        self.message_capacity, self.ghost_message_capacity = int(message_capacity), int(ghost_message_capacity)
        self.migration_face = MESSAGE_HEADER + self.message_capacity * self.migrating_words
        self.ghost_face = MESSAGE_HEADER + self.ghost_message_capacity * self.ghost_words
        self.migration_send = cp.zeros(2 * self.migration_face, dtype=np.uint32)
        self.migration_recv = cp.zeros(2 * self.migration_face, dtype=np.uint32)
        self.ghost_send = cp.zeros(2 * self.ghost_face, dtype=np.uint32)
        self.ghost_recv = cp.zeros(2 * self.ghost_face, dtype=np.uint32)
        n_lists = 2 * len(self.nl.decomposed)
        self.send_lists = cp.empty((n_lists, self.ghost_message_capacity), dtype=np.int32)
        self.counts = cp.zeros(HEADER_COUNTS + PER_DIRECTION * len(self.nl.decomposed), dtype=np.int32)
        self.slots = [self.counts[i:i + 1] for i in range(len(self.counts))]
        self.release()

    def _initial_capacities(self, state) -> None:
        """Capacities from the global atom count and the domain's shape, along the thinnest decomposed
        direction (thickness t): owned rows 1.1 x the mean per rank, a face's ghost message 1.25 x the
        ghost layer's share (r_ghost / t) of it, a face's migration message twice the share of a slab
        half a skin thick (an atom crosses a face only from within skin/2 of it between two builds
        decided by the displacement check), each + 1,024 rows; the messages equal on every rank.
        Every one of them grows when a build needs more (:meth:`_grow`).  The whole message buffers
        cross at every build, so their slack is bytes on the link (16M atoms on 2 GPUs: about 1 MB
        of migration and 8 MB of ghosts per face)."""
        d = self.nl.d
        scale, margin = self.initial_scale, self.initial_margin
        mean = d.n_atoms / d.comm.size
        thickness = min(d.L[dim] / d.grid[dim] for dim in self.nl.decomposed)
        capacity = max(int(1.1 * scale * max(mean, state.n_atoms)) + margin, state.n_atoms + margin)
        ghost_message = int(1.25 * scale * d.r_ghost / thickness * mean) + margin
        # ghosts: per direction both faces, the later directions' messages carrying the earlier ghosts too
        ghost_capacity = 2 * len(self.nl.decomposed) * ghost_message
        migration_message = int(2.0 * scale * 0.5 * self.nl.skin / thickness * mean) + margin
        self._allocate(state, capacity, ghost_capacity)
        self._allocate_messages(state, migration_message, ghost_message)

    def _grow(self, state, host) -> None:
        """After an overflow: capacities that hold what this build needed (x 1.25-1.5), the message
        capacities agreed by every rank (host MPI).  The State's rows are untouched by the
        attempt (module docstring), so the repeat starts from them."""
        comm = self.nl.d.comm
        n_dirs = len(self.nl.decomposed)
        per = host[HEADER_COUNTS:].reshape(n_dirs, PER_DIRECTION)
        message = comm.max(max(self.message_capacity, int(1.5 * per[:, 0:4].max()) + 1024))
        ghost_message = comm.max(max(self.ghost_message_capacity, int(1.25 * per[:, 4:8].max()) + 1024))
        capacity = max(self.capacity, int(1.25 * (state.n_atoms + per[:, 2:4].sum())) + 1024)
        ghost_capacity = max(self.ghost_capacity, int(1.25 * per[:, 6:8].sum()) + 1024, 2 * n_dirs * ghost_message)
        if capacity != self.capacity or ghost_capacity != self.ghost_capacity:
            self._allocate(state, capacity, ghost_capacity)
            self._adopt_views(state, state.n_atoms)
        if message != self.message_capacity or ghost_message != self.ghost_message_capacity:
            self._allocate_messages(state, message, ghost_message)

    def release(self) -> None:
        """Drop the captured graphs and their plans (buffers reallocated, or the NCCL communicator
        about to go)."""
        self._graphs.clear()
        self._plans.clear()

    def _set_owned(self, n: int) -> None:
        """The State's row count on the device (the next build starts from it)."""
        if n != self._n_owned:
            self.n_owned.fill(n)
            self._n_owned = n

    def _adopt_views(self, state, n: int) -> None:
        """The State's migrating arrays as views of the current set's first ``n`` rows."""
        for name in self._names(state):
            view = self.sets[0][name][:n]
            setattr(state, name, view)
            self.views[name] = view
        self._set_owned(n)

    def _adopt(self, state) -> None:
        """The State's arrays as the current buffer set's first rows (copied in where the State holds
        arrays of its own: the first build, or after a host build or a restore)."""
        n = state.n_atoms
        if self.sets is None:
            self._initial_capacities(state)
            self._adopt_views(state, n)
            return
        if n > self.capacity:
            self._allocate(state, int(1.5 * n) + 1024, self.ghost_capacity)
            self._adopt_views(state, n)
            return
        for name in self._names(state):
            current = getattr(state, name)
            if self.views.get(name) is not current:
                self.sets[0][name][:n] = current
                view = self.sets[0][name][:n]
                setattr(state, name, view)
                self.views[name] = view
        self._set_owned(n)

    # -- kernels ---------------------------------------------------------------------------------
    def _kernel(self, name: str):
        """domains.cu's kernel ``name`` compiled for the positions' type (kept: a lookup per launch
        is host time the build cannot spare)."""
        function = self._functions.get(name)
        if function is None:
            module = self.backend.kernel_module("parallel/domains.cu", {"real_t": c_type_name(self.real)})
            function = self._functions[name] = module.get_function(name)
        return function

    def _scan(self, n: int):
        scan = self._scans.get(n)
        if scan is None:
            scan = self._scans[n] = CapturableScan(self.backend, n, np.int32)
        return scan

    def _table(self, columns) -> object:
        """A device table of domains.cu's RowColumn ``(owned address, ghost address, words)`` for
        ``columns`` (triples: an array, None or an array, the words per row)."""
        host = np.zeros((len(columns), 3), dtype=np.uint64)
        for c, (owned, ghost, words) in enumerate(columns):
            host[c, 0] = owned.data.ptr
            host[c, 1] = 0 if ghost is None else ghost.data.ptr
            host[c, 2] = words
        return self.cp.asarray(host)

    # -- the build -------------------------------------------------------------------------------
    def build(self, state, origin, extent, n_cells, r_list: float, list_capacity: int) -> SimpleNamespace:
        """Migrate, exchange ghosts, put the extended rows in cell order and build the Verlet list
        (``list_capacity`` entries per target, radius ``r_list``) on the device; one
        synchronisation.  Leaves the State's arrays, ``neighbors.extended``, ``extended_ids`` and
        ``stages`` in the new numbering.  Returns the sorted rows (``positions``, ``keys``, ``sort``,
        ``new_index``, ``n_rows``: the live slots), with which the host repeats the list when it
        overflowed, and ``listed``: ``(largest count, smallest r^2, nbr, nbr_count)``, the list valid
        when the largest count is within ``list_capacity``."""
        self._adopt(state)
        self._list = (float(r_list), int(list_capacity))
        while True:
            host = self._attempt(state, origin, extent, n_cells)
            if not host[OVERFLOW]:
                break
            self.repeats += 1
            self._grow(state, host)
        if host[STRAYED]:
            raise SimulationError(f"an atom of rank {self.nl.d.comm.rank} moved more than one domain between two "
                                  f"neighbour-list builds: the time step is too long or the system blew up")
        self.last_counts = host
        self.builds += 1
        return self._commit(state, host)

    def _attempt(self, state, origin, extent, n_cells) -> np.ndarray:
        """One try of the build's device part: launched as a captured graph where the ranks are joined
        by NCCL (one graph per buffer set and configuration, captured at its second use), else
        launch by launch; then the one read of the counts."""
        nl = self.nl
        plan = self._last_plan = self._plan(state, origin, extent, n_cells)
        plan.uses += 1
        # captured at a configuration's second use: one that changes at every build (a barostat's box)
        # runs launch by launch instead of paying a capture per build
        if self.use_graphs and nl.d.comm.transport == "nccl" and plan.uses > 1:
            graph = self._graphs.get(plan.key)
            if graph is None:
                stream = self._capture_stream
                with stream:
                    stream.begin_capture()
                    try:
                        self._enqueue(plan, capturing=True)
                    finally:
                        graph = stream.end_capture()
                self._graphs[plan.key] = graph
                self.captures += 1
            graph.launch(self.cp.cuda.get_current_stream())
            nl._phase("device build graph")
        else:
            self._enqueue(plan)
        host = self.backend.to_host(self.counts).astype(np.int64)
        nl._mark("counts read")
        return host

    def _plan(self, state, origin, extent, n_cells) -> SimpleNamespace:
        """Everything the launches name, made before them (no allocation inside a capture): per
        buffer set and configuration its tables and scans."""
        current, other = self.sets
        n_bins = int(np.prod(n_cells))
        space = self.capacity + self.ghost_capacity
        dead_bins = max(1024, space // 8)
        r_list, list_capacity = self._list
        key = (id(current), self.capacity, self.ghost_capacity, self.message_capacity, self.ghost_message_capacity,
               tuple(float(v) for v in origin), tuple(float(v) for v in extent), tuple(int(c) for c in n_cells),
               r_list, list_capacity)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        if len(self._plans) >= 8:          # a box that changes at every build (a barostat): keep a few
            self.release()
        names = self._names(state)
        pos = current["positions"]
        words = {name: _row_words(current[name]) for name in names}
        total_bins = n_bins + dead_bins
        if self._sort_buffers is None or len(self._sort_buffers.bin_start) != total_bins + 1:
            self._sort_buffers = CountingSortBuffers(*(self.cp.empty(size, dtype=np.int32)
                                                       for size in CountingSortBuffers.sizes(space, total_bins)))
        if self._list_store is None or self._list_store[0].size != self.capacity * list_capacity:
            self._list_store = (self.cp.empty(self.capacity * list_capacity, dtype=np.int32),
                                self.cp.empty(self.capacity, dtype=np.int32))
        ghost_sources = np.zeros(len(names), dtype=np.uint64)
        for c, name in enumerate(names):
            ghost_sources[c] = {"positions": self.ghost_raw.data.ptr, "ids": self.ghost_ids.data.ptr}.get(name, 0)
        plan = SimpleNamespace(
            key=key, uses=0, names=names, n_columns=len(names), pos=pos, origin=origin, extent=extent, n_cells=n_cells,
            dead_bins=dead_bins, total_bins=total_bins, sort=self._sort_buffers, r_list=r_list,
            list_capacity=list_capacity, nbr=self._list_store[0], nbr_count=self._list_store[1],
            n_estimate=max(self._n_owned, 1),
            max_words=max(words.values()),
            migrating=self._table([(current[name], None, words[name]) for name in names]),
            ghosts=self._table([(pos, self.ghost_image, words["positions"]), (pos, self.ghost_raw, words["positions"]),
                                (current["ids"], self.ghost_ids, 2)]),
            ghost_rows=self._table([(self.ghost_image, None, words["positions"]),
                                    (self.ghost_raw, None, words["positions"]), (self.ghost_ids, None, 2)]),
            permute=self._table([(current[name], other[name], words[name]) for name in names]),
            ghost_sources=self.cp.asarray(ghost_sources))
        for n in (2 * self.capacity + 1, 2 * space + 1, total_bins + 1, space + 1):
            self._scan(n)
        self._plans[key] = plan
        return plan

    def _enqueue(self, plan, capturing: bool = False) -> None:
        """The build's launches and NCCL groups on the current stream: no allocation, no host read
        (capturable).  The counts start from ``n_owned`` (the State's rows, on the device)."""
        nl = self.nl
        d = nl.d
        real = self.real.type
        C, G = self.capacity, self.ghost_capacity
        space = C + G
        pos, counts, slot = plan.pos, self.counts, self.slots
        mark, phase = (nl._mark, nl._phase) if not capturing else (_no_mark, _no_mark)
        self._kernel("begin_build")(_grid(max(C, len(counts))), (THREADS,),
                                    (counts, np.int32(len(counts)), np.int32(N_ROWS), np.int32(MIN_R2), self.n_owned,
                                     self.alive, np.int32(C)))
        mark("begin")
        # 1. migration, direction by direction
        for k_dim, dim in enumerate(nl.decomposed):
            p, own = int(d.grid[dim]), int(d.coords[dim])
            base = HEADER_COUNTS + PER_DIRECTION * k_dim
            self._kernel("select_migrating")(
                _grid(C), (THREADS,),
                (pos, np.int32(4), slot[N_ROWS], np.int32(C), np.int32(dim), np.float64(p / d.L[dim]),
                 np.int32(p), np.int32(own), np.int32((own - 1) % p), np.int32((own + 1) % p), self.alive,
                 self.flags, slot[STRAYED]))
            self._scan(2 * C + 1)(self.flags[:2 * C + 1], self.offsets[:2 * C + 1], exclusive=True)
            self._kernel("pack_selected")(
                _grid(C), (THREADS,),
                (self.flags, self.offsets, np.int32(C), np.int32(C), plan.migrating, np.int32(plan.n_columns),
                 np.int32(self.migrating_words), self.migration_send, np.int64(self.migration_face),
                 np.int32(self.message_capacity), np.uint64(0), counts[base:base + 2], slot[OVERFLOW]))
            mark("migrate: select, scan, pack")
            self._exchange(dim, self.migration_send, self.migration_recv, self.migration_face)
            mark("migrate: exchange")
            self._kernel("unpack_received")(
                _grid(2 * self.message_capacity), (THREADS,),
                (self.migration_recv, np.int64(self.migration_face), np.int32(self.message_capacity),
                 plan.migrating, np.int32(plan.n_columns), np.int32(self.migrating_words), slot[N_ROWS],
                 np.int32(C), self.alive, np.int32(4), np.int32(dim), real(0), real(0), slot[OVERFLOW]))
            self._kernel("commit_received")(
                (1,), (1,), (self.migration_recv, np.int64(self.migration_face), slot[N_ROWS], np.int32(C),
                             counts[base + 2:base + 4], counts[base:base + 2], slot[N_DEPARTED]))
        phase("migrate")
        # 2. ghosts, direction by direction, over the owned rows and the ghosts received before
        for k_dim, dim in enumerate(nl.decomposed):
            base = HEADER_COUNTS + PER_DIRECTION * k_dim
            self._kernel("select_ghosts")(
                _grid(space), (THREADS,),
                (pos, self.ghost_image, np.int32(4), slot[N_ROWS], self.alive, slot[N_GHOST], np.int32(C),
                 np.int32(space), np.int32(dim), np.float64(d.lo[dim] + d.r_ghost), np.float64(d.hi[dim] - d.r_ghost),
                 self.flags))
            self._scan(2 * space + 1)(self.flags, self.offsets, exclusive=True)
            self._kernel("pack_selected")(
                _grid(space), (THREADS,),
                (self.flags, self.offsets, np.int32(space), np.int32(C), plan.ghosts, np.int32(3),
                 np.int32(self.ghost_words), self.ghost_send, np.int64(self.ghost_face),
                 np.int32(self.ghost_message_capacity), self.send_lists[2 * k_dim], counts[base + 4:base + 6],
                 slot[OVERFLOW]))
            mark("ghosts: select, scan, pack")
            self._exchange(dim, self.ghost_send, self.ghost_recv, self.ghost_face)
            mark("ghosts: exchange")
            # face 0 comes from the high neighbour (its low layer: +L when this domain is the last), face 1
            # from the low one (-L when this domain is the first)
            shift0 = d.L[dim] if d.coords[dim] == d.grid[dim] - 1 else 0.0
            shift1 = -d.L[dim] if d.coords[dim] == 0 else 0.0
            self._kernel("unpack_received")(
                _grid(2 * self.ghost_message_capacity), (THREADS,),
                (self.ghost_recv, np.int64(self.ghost_face), np.int32(self.ghost_message_capacity), plan.ghost_rows,
                 np.int32(3), np.int32(self.ghost_words), slot[N_GHOST], np.int32(G), np.uint64(0), np.int32(4),
                 np.int32(dim), real(shift0), real(shift1), slot[OVERFLOW]))
            self._kernel("commit_received")(
                (1,), (1,), (self.ghost_recv, np.int64(self.ghost_face), slot[N_GHOST], np.int32(G),
                             counts[base + 6:base + 8], np.uint64(0), np.uint64(0)))
        phase("ghosts")
        # 3. one counting sort of the live rows by the cells of the domain's frame, the dead after them
        self._kernel("extended_keys")(
            _grid(space), (THREADS,),
            (pos, self.ghost_image, slot[N_ROWS], self.alive, slot[N_GHOST], np.int32(C), np.int32(space),
             *(real(v) for v in plan.origin), *(real(v) for v in plan.extent),
             *(np.int32(c) for c in plan.n_cells), np.int32(plan.dead_bins), self.shifted, self.keys))
        sort = plan.sort
        enqueue_counting_sort(self.backend, self.keys, sort, scan=self._scan(plan.total_bins + 1))
        mark("sort: keys, counting sort")
        self._kernel("owned_slots")(
            _grid(space), (THREADS,),
            (sort.order, np.int32(space), np.int32(C), slot[N_ROWS], slot[N_DEPARTED], slot[N_GHOST], self.flags))
        self._scan(space + 1)(self.flags[:space + 1], self.offsets[:space + 1], exclusive=True)
        self._kernel("renumber")(
            _grid(space), (THREADS,),
            (sort.order, self.offsets, np.int32(space), np.int32(C), slot[N_ROWS], slot[N_DEPARTED], slot[N_GHOST],
             self.new_index, self.owned_order, slot[N_NEW], slot[N_LIVE]))
        self._kernel("permute_rows")(
            (min(_grid(space * plan.max_words)[0], 65536),), (THREADS,),
            (self.owned_order, slot[N_NEW], slot[N_GHOST], plan.permute, plan.ghost_sources,
             np.int32(plan.n_columns), np.int32(plan.max_words), np.int64(space)))
        if nl.decomposed:
            self._kernel("rename_send_lists")(
                _grid(self.send_lists.size), (THREADS,),
                (self.send_lists, np.int32(self.ghost_message_capacity), np.int32(len(self.send_lists)),
                 counts[HEADER_COUNTS + 4:], np.int32(PER_DIRECTION), self.new_index))
        phase("cell order")
        # 4. the Verlet list of the owned rows over the extended rows (the targets' count, the lists'
        # stride, read on the device)
        nl.serial.builder.enqueue_targets_renamed(
            self.shifted, self.keys, sort, slot[N_LIVE], self.new_index, slot[N_NEW], plan.n_estimate, plan.extent,
            plan.n_cells, plan.r_list, plan.list_capacity, self.rows, self.keys_renamed, plan.nbr, plan.nbr_count,
            counts[MAX_COUNT:MIN_R2 + 1].view(np.uint32))
        phase("list")
        # 5. every rank's overflow and error flags
        d.comm.allreduce_max(counts[OVERFLOW:STRAYED + 1])
        mark("flags all-reduced")

    def _exchange(self, dim: int, send, recv, face: int) -> None:
        """Both faces' whole message buffers across direction ``dim`` (one NCCL group)."""
        peers = self.nl.face_peers(dim)
        self.nl.d.comm.exchange([(send[k * face:(k + 1) * face], peers[k][0], recv[k * face:(k + 1) * face],
                                  peers[k][1]) for k in range(2)])

    def _commit(self, state, host) -> SimpleNamespace:
        """Swap the buffer sets and hand the new numbering to the State, the list and its stages."""
        from .domains import HaloStage

        nl = self.nl
        n_new, n_ghost = int(host[N_NEW]), int(host[N_GHOST])
        self.sets.reverse()
        current = self.sets[0]
        self.views = {}
        self._adopt_views(state, n_new)
        for name in STEP_ARRAYS:
            setattr(state, name, self.step[name][:n_new])
        nl.extended = current["positions"][:n_new + n_ghost]
        nl.extended_ids = current["ids"][:n_new + n_ghost]
        nl.extended_types = None
        nl._owned_rows = state.positions
        nl.migrated = int(host[HEADER_COUNTS:].reshape(-1, PER_DIRECTION)[:, 0:2].sum()) if nl.decomposed else 0
        nl.migrated_total += nl.migrated
        old = {stage.dim: stage for stage in nl.stages}
        nl.stages = []
        offset = n_new
        real, width = state.positions.dtype, state.positions.shape[1]
        for k_dim, dim in enumerate(nl.decomposed):
            stage = HaloStage(dim)
            base = HEADER_COUNTS + PER_DIRECTION * k_dim
            peers = nl.face_peers(dim)
            previous = old.get(dim)
            for k in range(2):
                sent, received = int(host[base + 4 + k]), int(host[base + 6 + k])
                stage.sends.append((self.send_lists[2 * k_dim + k, :sent], peers[k][0], peers[k][1], offset, received))
                buffer = previous.buffers[k] if previous is not None and len(previous.buffers) > k else None
                if buffer is None or buffer.dtype != real or buffer.shape[0] < sent:
                    buffer = self.cp.empty((int(sent * 1.2) + 16, width), dtype=real)
                stage.buffers.append(buffer)
                offset += received
            nl.stages.append(stage)
        plan = self._last_plan
        min_r2 = float(np.array([host[MIN_R2]], dtype=np.int64).astype(np.uint32).view(np.float32)[0])
        listed = (int(host[MAX_COUNT]), min_r2, plan.nbr[:n_new * plan.list_capacity], plan.nbr_count[:n_new])
        return SimpleNamespace(positions=self.shifted, keys=self.keys, sort=plan.sort, new_index=self.new_index,
                               n_rows=n_new + n_ghost, listed=listed)
