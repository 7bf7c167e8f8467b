"""The CUDA builder of the Verlet list (``verlet.cu``): wrap, cell sort, reorder and list kernels,
and the build plan that captures them in a CUDA graph.

:class:`CudaListBuilder` is what :class:`~pycumd.neighbors.verlet.NeighborList` runs on the GPU
backend; the CUDA-graph step (:mod:`pycumd.step_graph`) and the spatial domains
(:mod:`pycumd.parallel.domains`) call its public methods (``displacement_exceeds``, ``wrap``,
``prepare``, ``enqueue``, ``build_targets_renamed``, ``sort_by_id``, ``compile_build_kernels``).  Storage:
``nbr[k * N + i]`` (column-major, coalesced).
"""

from __future__ import annotations

import math

import numpy as np

from ..composite import ff_parts
from ..precision import c_type_name
from .counting_sort import (SPARE_ALIGN, CountingSortBuffers, byte_view, cell_index, enqueue_counting_sort,
                            enqueue_gather_rows, gather_plan, spare_layout)
from .cpu_builder import CpuListBuilder
from .scan import CapturableScan
from .verlet import (BLOCK, CAPACITY_WINDOW, LIST_WARPS, PLANE_RING16_ROWS, PLANE_SPLIT_ATOMS, PLANE_WARPS,
                     ROWS_INDEX_IN_W, ROWS_IN_SLOT_ORDER, ROWS_VIA_ORDER)


class CudaListBuilder:
    """CUDA implementation (``verlet.cu``); storage ``nbr[k * N + i]`` (column-major, coalesced)."""

    def __init__(self, backend, cuda_options=(), list_dtype=None):
        self.backend = backend
        self.cuda_options = tuple(cuda_options)
        self.list_dtype = None if list_dtype is None else np.dtype(list_dtype)
        self.cp = backend.xp
        self._kernels = {}
        self._flag = self.cp.zeros(1, np.int32)
        self.plan: BuildPlan | None = None
        self.list_kernel = "auto"            # NeighborList.list_kernel
        #: set to a list to record (phase, CUDA event) pairs during builds (pycumd bench lj --build-split)
        self.phase_events: list | None = None

    def _mark(self, phase: str) -> None:
        if self.phase_events is not None:
            event = self.cp.cuda.Event()
            event.record()
            self.phase_events.append((phase, event))

    def float_list(self, state) -> bool:
        """Whether the list kernel reads a float32 copy of float64 positions (mixed precision)."""
        return state.positions.dtype == np.float64 and self.list_dtype == np.float32

    def _kernel(self, state, name, real=None, targets_on_device=False):
        """Kernel ``name`` of verlet.cu for positions of ``real`` (default: the state's) type, and
        positions at build of the state's type (the positions' without a state); with
        ``targets_on_device`` its TARGETS_ON_DEVICE variant (counts read from device memory)."""
        real = np.dtype(state.positions.dtype if real is None else real)
        at_build = np.dtype(state.positions_at_build.dtype) if state is not None else real
        key = (real.name, at_build.name, name, bool(targets_on_device))
        if key not in self._kernels:
            defines = {"real_t": c_type_name(real), "COMPOSITE": int(name.endswith("_composite"))}
            if targets_on_device:
                defines["TARGETS_ON_DEVICE"] = 1
            if at_build != real:
                defines["at_build_t"] = c_type_name(at_build)
            module = self.backend.kernel_module("neighbors/verlet.cu", defines, options=self.cuda_options)
            self._kernels[key] = module.get_function(name)
        return self._kernels[key]

    def _box_args(self, state, real=None):
        real = np.dtype(state.positions.dtype if real is None else real).type
        L = np.asarray(state.box_lengths, dtype=np.float64)
        return [real(x) for x in L] + [real(x) for x in 1.0 / L]

    def displacement_exceeds(self, state, limit2, flag=None) -> bool | None:
        """Launch the check; with ``flag`` given (a device int) only launch, without waiting."""
        n = state.n_atoms
        wait = flag is None
        if wait:
            flag = self._flag
            flag.fill(0)
        self._kernel(state, "displacement_exceeds")(
            ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
            (state.positions, state.positions_at_build, np.int32(n), *self._box_args(state),
             state.positions.dtype.type(limit2), flag))
        return bool(flag.get()[0]) if wait else None

    def wrap(self, state) -> None:
        """Launch the wrap of the positions into the box (image counters updated; ``wrap_positions_cpu``'s rule)."""
        n = state.n_atoms
        real = state.positions.dtype.type
        L = np.asarray(state.box_lengths, dtype=np.float64)
        grid = ((n + BLOCK - 1) // BLOCK,)
        if state.lo is None:
            self._kernel(state, "wrap_positions")(
                grid, (BLOCK,), (state.positions, state.images, np.int32(n), *[real(x) for x in L]))
        else:
            L_hi, L_lo = zip(*(ff_parts(x) for x in L))
            self._kernel(state, "wrap_positions_composite")(
                grid, (BLOCK,), (state.positions, state.lo["positions"], state.images, np.int32(n), *L_hi, *L_lo))

    def build(self, state, n_cells, r_list, capacity, nl):
        """One build: the launches of :meth:`enqueue`, replayed from a captured CUDA graph once
        the plan (buffers and addresses) has been used before; one synchronisation, to read the
        statistics.  With :attr:`phase_events` set, the launches run uncaptured between events."""
        cp = self.cp
        n = state.n_atoms
        plan = self.prepare(state, n_cells, r_list, capacity, nl)
        if n == 0:
            return 0, r_list * r_list
        if nl._repeat_build:
            # the overflowed build advanced the count: step it back, so that the repeat decides as
            # that build did and a run with overflows reorders at the builds a run without does
            every = plan.reorder_every
            if every > 1:
                nl.reorder_state[1:2] = (nl.reorder_state[1:2] + np.uint32(every - 1)) % np.uint32(every)
            nl._repeat_build = False
        if nl._reorder_due:
            nl.reorder_state[1:2].fill(0)         # builds since the last reorder: 0, so this one does
            nl._reorder_due = False
        if self.phase_events is not None or plan.builds == 0:
            # the first use compiles the kernels and runs the launches once, uncaptured
            self.enqueue(state, plan, nl)
        else:
            if plan.graph is None:
                stream = cp.cuda.Stream(non_blocking=False)
                with stream:
                    stream.begin_capture()
                    self.enqueue(state, plan, nl)
                    plan.graph = stream.end_capture()
            plan.graph.launch(cp.cuda.get_current_stream())
        plan.builds += 1
        host = plan.stats.get()
        self._mark("snapshot + stats")
        return int(host[0]), float(host[1:2].view(np.float32)[0])

    def prepare(self, state, n_cells, r_list, capacity, nl) -> "BuildPlan":
        """Host-side set-up of a build: the list storage of ``capacity`` slots per atom and the
        plan, made anew when an address, a size or a parameter changed (allocations and host to
        device copies: not capturable; :meth:`enqueue` is)."""
        n = state.n_atoms
        if nl.reorder_state is None:
            nl.reorder_state = self.cp.zeros(2, np.uint32)
        if nl.nbr is None or nl.nbr.size != n * capacity:
            self.plan = None          # it holds views of the old storage: free that first
            nl.nbr = nl.nbr_count = None
            nl.nbr = self.cp.empty(n * capacity, np.int32)
            nl.nbr_count = self.cp.empty(n, np.int32)
        arrays = state.per_atom_arrays() + state.spare_at_build() + (nl.nbr, nl.nbr_count)
        key = (tuple((a.data.ptr, a.nbytes) for a in arrays), tuple(int(c) for c in n_cells),
               float(r_list), int(capacity), bool(nl.reorder), nl.reorder_interval(state), tuple(state.box_lengths),
               self.list_kernel)
        if self.plan is None or self.plan.key != key:
            self.plan = None                  # release the old buffers first
            self.plan = BuildPlan(self.backend, key, state, n_cells, nl, self.float_list(state))
        return self.plan

    def enqueue(self, state, plan, nl, control=None, accumulate=False) -> None:
        """Launch a whole build on the current stream: no allocation, no synchronisation.

        wrap, cell index and bin count (one kernel, which also resets the statistics and decides
        whether this build reorders) -> the scan of the bin counts and the scatter -> the stable
        order within the bins (``sort_bins_rows``, which also writes the rows the list kernel reads
        when it does not read the positions -- mixed precision's float32 copy, or the copy in cell
        order of a build that defers the reorder -- and zeroes the bin counts for the next build)
        -> reorder (gather + copy back; with ``reorder_every`` > 1 they do nothing at builds that
        do not reorder) -> list kernel -> positions at build (and, with ``control``, the statistics
        published): eight graph nodes.  With
        ``control`` (the state's step-control array, :mod:`pycumd.step_graph`), the last kernel copies the statistics to
        ``control[3:5]`` and, if the storage overflowed, freezes the step (``control[0]`` and
        ``control[2]`` set): the kernels after it do nothing until the host repeats the build.
        With ``accumulate`` (the device loop, several builds per launch) it keeps the largest count
        and the smallest r^2 of the builds there, counts them in ``control[5]`` and records the
        largest count of each of the last ``CAPACITY_WINDOW`` in ``control[9:]``.
        """
        n = state.n_atoms
        self._mark("start")
        self.wrap_and_bin(state, plan, nl.reorder_state)
        self._mark("wrap + bin")
        enqueue_counting_sort(self.backend, plan.keys, plan.sort, scan=plan.scan, counted=True, sort_within_bins=False)
        self.sort_bins_rows(state, plan, nl.reorder_state)
        self._mark("counting sort")
        order = plan.sort.order
        if nl.reorder:
            # the particles now lie in cell order: the list kernel takes slot s as particle s
            # (ROWS_IN_SLOT_ORDER) and never reads `order`
            enqueue_gather_rows(self.backend, plan.gather, order,
                                enabled=nl.reorder_state[0:1] if plan.reorder_every > 1 else None)
        self._mark("reorder")
        positions, row_mode = state.positions, ROWS_IN_SLOT_ORDER if nl.reorder else ROWS_VIA_ORDER
        if plan.list_rows is not None:
            # rows in cell order with their atom's index, whether or not this build reordered
            # (written by sort_bins_rows)
            positions, row_mode = plan.list_rows, ROWS_INDEX_IN_W
        self.launch_list_kernel(positions, n, plan.keys, plan.sort.bin_start, order, row_mode,
                                plan.n_cells, state.box_lengths, nl.r_list, nl.capacity, nl.nbr, nl.nbr_count,
                                plan.stats)
        if nl.canonical_order:
            self.sort_by_id(nl.nbr, nl.nbr_count, state.ids, n, nl.capacity)
        self._mark("list kernel")
        values = state.positions.size
        self._kernel(state, "snapshot_and_publish")(
            ((values + BLOCK - 1) // BLOCK,), (BLOCK,),
            (state.positions, state.positions_at_build, np.int32(values), plan.stats, np.int32(nl.capacity),
             plan.stats if control is None else control, np.int32(CAPACITY_WINDOW if accumulate else 0),
             np.int32(control is not None)))

    def compile_build_kernels(self, state) -> None:
        """Compile the build's own kernels for ``state`` (a capture must not compile)."""
        self._kernel(state, "wrap_and_bin" if state.lo is None else "wrap_and_bin_composite")
        self._kernel(state, "snapshot_and_publish")
        self._kernel(state, "sort_bins_rows")
        self._kernel(state, "sort_bins_rows_float")

    def sort_bins_rows(self, state, plan, reorder_state) -> None:
        """Launch ``sort_bins_rows``: the counting sort's stable order within the bins
        (``plan.sort.order``), the rows the list kernel reads when the plan has them
        (``plan.list_rows``, with their atom's index), and ``plan.sort.count`` zeroed for the next
        build."""
        n_bins = plan.sort.bin_start.shape[0] - 1
        rows = plan.list_rows
        name = "sort_bins_rows_float" if rows is not None and rows.dtype != state.positions.dtype else "sort_bins_rows"
        self._kernel(state, name)(
            ((n_bins + BLOCK - 1) // BLOCK,), (BLOCK,),
            (plan.sort.slots, plan.sort.bin_start, np.int32(n_bins), plan.sort.order, plan.sort.count,
             state.positions, reorder_state, rows if rows is not None else np.uint64(0)))

    def wrap_and_bin(self, state, plan, reorder_state) -> None:
        """Launch ``wrap_and_bin``: the wrap (:meth:`wrap`'s rule), each wrapped position's cell
        (``plan.keys``, as :func:`~pycumd.neighbors.counting_sort.cell_index`), its count into the
        zeroed ``plan.sort.count`` with its arrival rank (the counting sort's first pass), and
        ``plan.stats`` reset for the list kernel, and the reorder decision made (``reorder_state``)."""
        n = state.n_atoms
        nx, ny, nz = (np.int32(c) for c in plan.n_cells)
        L = np.asarray(state.box_lengths, dtype=np.float64)
        grid = ((n + BLOCK - 1) // BLOCK,)
        tail = (nx, ny, nz, plan.keys, plan.sort.count, plan.sort.rank, plan.stats, reorder_state,
                np.int32(plan.reorder_every))
        if state.lo is None:
            real = state.positions.dtype.type
            self._kernel(state, "wrap_and_bin")(
                grid, (BLOCK,), (state.positions, state.images, np.int32(n), *[real(x) for x in L], *tail))
        else:
            L_hi, L_lo = zip(*(ff_parts(x) for x in L))
            self._kernel(state, "wrap_and_bin_composite")(
                grid, (BLOCK,), (state.positions, state.lo["positions"], state.images, np.int32(n), *L_hi, *L_lo,
                                 *tail))

    def launch_list_kernel(self, positions, n_targets, keys, bin_start, order, row_mode, n_cells,
                           box_lengths, r_list, capacity, nbr, nbr_count, stats, targets_on_device=None):
        """Launch ``build_neighbor_list`` on ``positions`` ((M, 4) rows ``x, y, z, w`` in
        ``[0, box_lengths)``, counting-sorted into ``n_cells`` by ``keys``/``bin_start``/``order``):
        one warp per 32 consecutive atoms of one cell row.  ``row_mode`` (ROWS_*): the atom of
        sorted slot s is row ``order[s]``; or row s (atoms in cell order); or row s, whose ``w``
        bits hold the atom's index (``sort_bins_rows``).  ``keys`` and the lists are by atom index.

        Targets are the rows ``i < n_targets`` (all M in a serial run; a spatial domain's owned atoms,
        its ghost rows being sources only): their lists go to ``nbr`` (``capacity`` x ``n_targets``
        int32, column-major) and ``nbr_count`` (``n_targets``); ``stats[0]`` gets the largest count
        (atomic max), ``stats[1]`` the smallest r^2 as float bits (atomic min).

        ``targets_on_device`` (a device int, or None): the target count, which is also the lists'
        stride, read there by the kernel (a spatial domain's build on the device, whose count the
        host learns afterwards); ``n_targets`` is then an estimate that only shapes the launch.

        The grid holds ``chunks_per_row`` warps per cell row (y, z), enough for a row of the mean
        occupancy plus four standard deviations; a fuller row is finished by its warps in strides.
        Boxes with fewer than 7 cells along some edge use the kernel's rint variant (see verlet.cu).
        Small launches of float32 rows take a block of three warps per task instead, each scanning its
        own stencil planes (``build_neighbor_list_planes``, :meth:`uses_plane_kernel`): the same lists;
        with at most :data:`PLANE_RING16_ROWS` rows its rings hold 16-bit entries (``..._planes16``).
        """
        m = int(positions.shape[0])
        nx, ny, nz = (int(c) for c in n_cells)
        n_rows = ny * nz
        mean = m / n_rows
        chunks_per_row = max(1, math.ceil((mean + 4.0 * math.sqrt(mean) + 1.0) / 32.0))
        tasks = n_rows * chunks_per_row
        real = positions.dtype
        image_shift = min(nx, ny, nz) >= 7
        if self.uses_plane_kernel(real, image_shift, n_targets):
            # rings of 16-bit entries when every row index fits (half the shared memory: more blocks an SM)
            name = "build_neighbor_list_planes16" if m <= PLANE_RING16_ROWS else "build_neighbor_list_planes"
            grid, block = (tasks,), (32 * PLANE_WARPS,)
        else:
            name = "build_neighbor_list" if image_shift else "build_neighbor_list_rint"
            grid, block = ((tasks + LIST_WARPS - 1) // LIST_WARPS,), (32 * LIST_WARPS,)
        L = np.asarray(box_lengths, dtype=np.float64)
        targets = ((np.int32(n_targets), np.int32(n_targets)) if targets_on_device is None else (targets_on_device,))
        self._kernel(None, name, real, targets_on_device is not None)(
            grid, block,
            (positions, keys, bin_start, order, np.int32(row_mode),
             np.int32(nx), np.int32(ny), np.int32(nz), np.int32(chunks_per_row),
             *[real.type(x) for x in L], *[real.type(x) for x in 1.0 / L], real.type(r_list * r_list),
             nbr, nbr_count, np.int32(capacity), *targets,
             stats[0:1].view(np.int32), stats[1:2]))

    def uses_plane_kernel(self, real, image_shift: bool, n_targets: int) -> bool:
        """Whether a list launch takes ``build_neighbor_list_planes``: float32 rows, >= 7 cells along
        every edge (its planes are the image-shift kernel's five), and ``list_kernel`` "planes", or
        "auto" with at most :data:`PLANE_SPLIT_ATOMS` targets."""
        if self.list_kernel == "warp" or np.dtype(real) != np.float32 or not image_shift:
            return False
        return self.list_kernel == "planes" or n_targets <= PLANE_SPLIT_ATOMS

    def sort_by_id(self, nbr, nbr_count, ids, n_targets, capacity) -> None:
        """Launch ``sort_neighbours_by_id``: each target's neighbours in global-id order."""
        if n_targets:
            self._kernel(None, "sort_neighbours_by_id", np.float64)(
                ((n_targets + BLOCK - 1) // BLOCK,), (BLOCK,),
                (nbr, nbr_count, ids, np.int32(n_targets), np.int32(n_targets), np.int32(capacity)))

    def enqueue_targets_renamed(self, positions, keys, sort, slots_on_device, new_index, targets_on_device,
                                n_estimate, box_lengths, n_cells, r_list, capacity, rows, keys_renamed, nbr,
                                nbr_count, stats):
        """:meth:`build_targets_renamed` with its counts on the device (``slots_on_device``,
        ``targets_on_device``: device ints; ``n_estimate`` an estimate of the targets that shapes the
        launch) into kept arrays (``rows`` and ``keys_renamed`` of ``len(positions)`` rows, ``nbr`` of
        ``capacity`` entries per possible target, ``stats`` two uint32 values set by the caller to
        ``0, 0x7F7FFFFF``): no allocation, no host read (capturable; the device build of spatial
        domains, :mod:`pycumd.parallel.device_build`)."""
        space = int(positions.shape[0])
        self._kernel(None, "rows_in_slot_order_renamed", positions.dtype, True)(
            ((space + BLOCK - 1) // BLOCK,), (BLOCK,),
            (sort.order, slots_on_device, positions, new_index, keys, rows, keys_renamed))
        self.launch_list_kernel(rows, n_estimate, keys_renamed, sort.bin_start, sort.order, ROWS_INDEX_IN_W, n_cells,
                                box_lengths, r_list, capacity, nbr, nbr_count, stats,
                                targets_on_device=targets_on_device)

    def build_targets_renamed(self, positions, keys, sort, n_slots, new_index, n_targets, box_lengths, n_cells,
                              r_list, capacity, nbr, nbr_count):
        """An uncaptured list build for a spatial domain (:mod:`pycumd.parallel.domains`), whose rows
        are counting-sorted already (``keys``, ``sort``: :class:`CountingSortBuffers` with its
        ``order``) and get new indices with the build (``new_index``, (M,) int32: the owned atoms
        renumbered in cell order, the ghosts after them).

        ``positions`` ((M, 4) rows in ``[0, box_lengths)``): the first ``n_slots`` sorted slots (the
        cells' atoms; rows sorted past them, a domain's departed atoms, are left out) are written in
        slot order with their new index in ``w``, and their cells by new index
        (``rows_in_slot_order_renamed``); the list kernel reads them contiguously
        (ROWS_INDEX_IN_W).  Targets are the new indices ``< n_targets``; the lists (``capacity * n_targets`` entries in ``nbr``) hold new indices.
        Returns ``(largest count, smallest r^2)`` (one synchronisation)."""
        cp = self.cp
        rows = cp.empty((n_slots, 4), dtype=positions.dtype)
        keys_renamed = cp.empty(n_slots, dtype=np.int32)
        if n_slots > 0:
            self._kernel(None, "rows_in_slot_order_renamed", positions.dtype)(
                ((n_slots + BLOCK - 1) // BLOCK,), (BLOCK,),
                (sort.order, np.int32(n_slots), positions, new_index, keys, rows, keys_renamed))
        stats = cp.asarray([0, 0x7F7FFFFF], dtype=np.uint32)
        if n_targets > 0:
            self.launch_list_kernel(rows, n_targets, keys_renamed, sort.bin_start, sort.order, ROWS_INDEX_IN_W, n_cells,
                                    box_lengths, r_list, capacity, nbr, nbr_count, stats)
        host = stats.get()
        return int(host[0]), float(host[1:2].view(np.float32)[0])

    def closest_pair(self, state, nl):
        host = _host_copy_for_overlap(state, nl, self.cp)
        return CpuListBuilder().closest_pair(*host)

    def neighbors_of(self, nl, i):
        n = len(nl.nbr_count)
        count = int(nl.nbr_count[i].get())
        return nl.nbr[i:i + n * count:n].get() if count else np.empty(0, np.int32)


class BuildPlan:
    """The device buffers of GPU builds at fixed addresses, sizes and parameters, and the captured
    graph of the build's launches (made at the second build with this plan).

    No build memory of its own where the state allows: the counting sort's arrays and the reorder's
    gather buffers lie in the list storage (dead until the list kernel rewrites it); the cell keys
    and the bin offsets, which the list kernel reads, lie in the arrays
    ``State.spare_at_build`` names (dead until the end of the build or the next force computation).
    Whatever does not fit (a list of very few slots, more cells than atoms) gets an array of its own,
    counted in :attr:`own_bytes`.  Only the two statistics and the scan's tile status are always
    separate (a few bytes per 12,288 cells).
    """

    def __init__(self, backend, key, state, n_cells, nl, float_list=False):
        cp = backend.xp
        n = state.n_atoms
        self.key = key
        self.n_cells = tuple(int(c) for c in n_cells)
        #: builds from one reorder to the next (NeighborList.reorder_interval)
        self.reorder_every = nl.reorder_interval(state)
        n_bins = int(np.prod(self.n_cells))
        self.graph = None
        self.builds = 0
        self.own: list = []
        # long-lived (read by the list kernel): keys, bin offsets (and without reordering the sorted order)
        sizes = CountingSortBuffers.sizes(n, n_bins)
        long_lived = {"keys": n, "bin_start": sizes[1]}
        if not nl.reorder:
            long_lived["order"] = n
        spare_long = state.spare_at_build()
        #: the (N, 4) rows the list kernel reads when not the positions themselves, else None: mixed
        #: precision's float32 copy, or with reorder_every > 1 the copy in cell order (float32 in
        #: mixed precision, else the positions' type); in positions_at_build's memory (taken again
        #: after the list kernel; float32 rows in mixed precision, as the list rows)
        self.list_rows = None
        if float_list:
            self.list_rows = byte_view(spare_long[0], 0, 16 * n, np.float32).reshape(n, 4)
            spare_long = spare_long[1:]
        elif self.reorder_every > 1:
            self.list_rows = spare_long[0].reshape(n, 4)
            spare_long = spare_long[1:]
        views = self._place(cp, long_lived, spare_long)
        short_lived = {"rank": n, "slots": n}
        if nl.reorder:
            short_lived["order"] = n
        moved = state.per_atom_arrays() + (views["keys"],)
        # the counting sort's scratch first, then the gather buffers behind it, in the list storage
        nbr_bytes = nl.nbr.reshape(-1).view(np.uint8)
        head = sum(-(-4 * size // SPARE_ALIGN) * SPARE_ALIGN for size in short_lived.values())
        views.update(self._place(cp, short_lived, (nbr_bytes[:head],) if head <= nbr_bytes.size else ()))
        self.keys = views["keys"]
        # the bin counts in memory of their own, zeroed once: each build's sort_bins_rows zeroes them
        # for the next (no memset node); (n_bins + 1) * 4 bytes, ~1.7 bytes per atom in an LJ liquid
        count = cp.zeros(sizes[0], np.int32)
        self.own.append(count)
        self.sort = CountingSortBuffers(count, views["bin_start"], views["rank"], views["slots"],
                                        views["order"])
        self.gather = (gather_plan(backend, n, moved, (nbr_bytes[head:],) if head < nbr_bytes.size else ())
                       if nl.reorder and n > 0 else None)
        self.scan = CapturableScan(backend, n_bins + 1, np.int32)
        self.stats = cp.empty(2, np.uint32)                    # max count, min r^2 as float bits

    def _place(self, cp, sizes: dict, regions) -> dict:
        """int32 views of ``sizes[name]`` elements each in ``regions`` (first fit), or own arrays."""
        names = list(sizes)
        layout = spare_layout([4 * sizes[k] for k in names], [r.nbytes for r in regions])
        views = {}
        for name, place in zip(names, layout):
            if place is None:
                views[name] = cp.empty(sizes[name], np.int32)
                self.own.append(views[name])
            else:
                r, offset = place
                views[name] = byte_view(regions[r], offset, 4 * sizes[name], np.int32)
        return views

    @property
    def own_bytes(self) -> int:
        """Bytes this plan holds outside the state and the list storage."""
        extra = (self.gather.own_bytes + int(self.gather.src.nbytes + self.gather.dst.nbytes)
                 if self.gather is not None else 0)
        return (sum(int(a.nbytes) for a in self.own) + extra + self.scan.nbytes
                + int(self.stats.nbytes))


def _host_copy_for_overlap(state, nl, cp):
    """Host-side state and list for the (rare, error-path) closest-pair search."""
    from types import SimpleNamespace

    n = state.n_atoms
    cap = nl.nbr.size // max(n, 1)
    host_state = SimpleNamespace(n_atoms=n, box_lengths=state.box_lengths,
                                 positions=state.positions[:, :3].get().astype(np.float64))
    host_nl = SimpleNamespace(nbr=nl.nbr.get().reshape(cap, n).T, nbr_count=nl.nbr_count.get())
    return host_state, host_nl


__all__ = ["BuildPlan", "CudaListBuilder"]
