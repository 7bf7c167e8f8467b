"""Pair forces over a Verlet neighbour list, with per-atom energy and virial on demand.

CPU (Numba, below) and GPU (``forces.cu``) run the same algorithm: for each target atom,
``lanes`` partial sums over its full neighbour list (lane ``l`` takes the neighbours ``l, l +
lanes, ...`` in list order), added pairwise ((s0 + s1) + (s2 + s3), ...), of

``f_i = sum_j (F/r)(r_ij) r_ij``,   ``e_i = 1/2 sum_j E(r_ij)``,   ``W_i = 1/2 sum_j r_ij (x) r_ij (F/r)``

with the minimum-image separation ``r_ij = r_i - r_j``.  Energy and virial are computed only
when asked (reporting steps).  On the GPU the lanes are threads (more threads per atom keep a
small system's GPU busy); the CPU keeps their summation order, so both give the same bits in
double precision with ``deterministic=True``.  :func:`default_lanes` picks ``lanes`` from N.

CPU half lists (the CPU default, ``NeighborList(half=True)``; not with ``deterministic=True``):
each pair once, its force added to atom i and subtracted from atom j (Newton's third law, half
the pair evaluations).  The targets are cut into one chunk per thread with about equal pair
counts (:func:`half_list_chunks`); each chunk sums into its own arrays, which are then added in
chunk order (:func:`sum_chunks`).  Bits: the same list and thread count give the same bits on
every run; another thread count gives other chunks, hence other last bits (forces agree to
about 1e-15 relative, and trajectories then part like any rounding difference in a chaotic
liquid).  The full-list kernel's bits depend on no thread count.
"""

from __future__ import annotations

import numba
import numpy as np

from .bookkeeping import SimulationError
from .composite import ff_parts
from .contracts import ForceEvaluatorBase
from .potentials.registry import header_ids
from .jit_cache import cache_kernel
from .system import InputError

BLOCK = 128
_CPU_KERNELS: dict = {}
#: compile-time id of each potential's CUDA header (``potentials/pair_select.cuh``), from the registry
POTENTIAL_HEADER_IDS = header_ids()


def potential_defines(potential) -> dict:
    """The ``-D`` defines that select ``potential``'s pair function and cutoff treatment in a kernel.

    A potential may add its own (``potential.cuda_defines``: a generated pair function, the width
    of its table rows).
    """
    return {"POTENTIAL_HEADER_ID": POTENTIAL_HEADER_IDS[potential.cuda_header],
            "SHIFT_FORCE": int(potential.cutoff == "shift_force"), **getattr(potential, "cuda_defines", {})}


def make_separation_sum(pair_function):
    """``add_separation(sums, dx, dy, dz, row, with_energy)``: the pair at a separation that is already
    the image wanted (no minimum image applied; twin of pair_sums.cuh's ``pair_sums_add_separation``):
    the cutoff test, the pair, and the updated 10-tuple ``(fx, fy, fz, e, wxx, wyy, wzz, wxy, wxz, wyz)``."""
    @numba.njit(inline="always")
    def add_separation(sums, dx, dy, dz, row, with_energy):
        r2 = dx * dx + dy * dy + dz * dz
        if not r2 < row[0]:
            return sums
        ep, fr = pair_function(r2, row)
        return full_pair(dx, dy, dz, fr, ep, with_energy, sums)

    return add_separation


@numba.njit(inline="always")
def full_pair(dx, dy, dz, fr, ep, with_energy, sums):
    """One pair of a full list, its force over r ``fr`` and energy ``ep`` given: atom i's running
    ``sums`` (fx, fy, fz, e, w0..w5) with ``fr r_ij``, and (``with_energy``) ``ep`` and ``r_ij (x) r_ij fr``
    added (the caller halves energy and virial).  The pair kernels and EAM's second pass
    (:mod:`pycumd.eam_forces`) share it; :func:`newton_pair` is its half-list twin."""
    fx, fy, fz, e, w0, w1, w2, w3, w4, w5 = sums
    fx += dx * fr
    fy += dy * fr
    fz += dz * fr
    if with_energy:
        e += ep
        w0 += dx * dx * fr
        w1 += dy * dy * fr
        w2 += dz * dz * fr
        w3 += dx * dy * fr
        w4 += dx * dz * fr
        w5 += dy * dz * fr
    return (fx, fy, fz, e, w0, w1, w2, w3, w4, w5)


def make_pair_sums(pair_function):
    """The per-pair work shared by the neighbour-list and all-pairs CPU kernels (twin of pair_sums.cuh).

    Returns ``(add, store)``: ``add(sums, dx, dy, dz, L, invL, row, with_energy)`` applies the
    minimum image and the cutoff test, evaluates the pair and returns the updated 10-tuple
    ``(fx, fy, fz, e, wxx, wyy, wzz, wxy, wxz, wyz)``; ``store(sums, i, forces, energy, virial,
    with_energy)`` writes it with the factor 1/2 of a full sum.
    """
    add_separation = make_separation_sum(pair_function)

    @numba.njit(inline="always")
    def add(sums, dx, dy, dz, L, invL, row, with_energy):
        dx -= L[0] * np.rint(dx * invL[0])
        dy -= L[1] * np.rint(dy * invL[1])
        dz -= L[2] * np.rint(dz * invL[2])
        return add_separation(sums, dx, dy, dz, row, with_energy)

    @numba.njit(inline="always")
    def store(sums, i, forces, energy, virial, with_energy):
        forces[i, 0] = sums[0]
        forces[i, 1] = sums[1]
        forces[i, 2] = sums[2]
        if with_energy:
            energy[i] = 0.5 * sums[3]
            for q in range(6):
                virial[i, q] = 0.5 * sums[4 + q]

    return add, store


ZERO_SUMS = (0.0,) * 10
LANE_CHOICES = (1, 2, 4, 8)
#: lanes per atom of the neighbour-list force kernel, by system size: (largest N, lanes), first match;
#: the fastest measured at each size (docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "lanes")
LANES_BY_SIZE = ((65_536, 4), (524_288, 2))
#: Mixed precision's force launches of at most this many lanes per atom take the kernel that converts
#: each separation to float by two exact halves and one fmaf (full-rate instructions, the same bits as
#: I2F: forces.cu's pair_forces_fixed_split), the others the one by I2F (pair_forces_fixed): the halves
#: pay where the kernel is bound by its issue rate (one lane), not where it waits on latency
#: (docs/notes-lj-performance.md#figures-behind-the-constants-in-the-sources, "split conversion")
SPLIT_CONVERSION_MAX_LANES = 1


def default_lanes(n_atoms: int) -> int:
    """Threads per target atom of the neighbour-list force kernel for ``n_atoms`` (LANES_BY_SIZE; 1 above)."""
    for largest, lanes in LANES_BY_SIZE:
        if n_atoms <= largest:
            return lanes
    return 1


@numba.njit(inline="always")
def _plus(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5], a[6] + b[6],
            a[7] + b[7], a[8] + b[8], a[9] + b[9])


def make_atom_list_sums(pair_function):
    """``atom_sums(i, offset, positions, types, L, invL, nbr, count, table, base, with_energy, lanes)``:
    one target atom's sums over its full-list row (the one place of the neighbour-list kernel's
    arithmetic; the single-system kernel below and the batched one, :mod:`pycumd.batch_engine`, call it).

    Target ``i`` is row ``i`` of ``positions`` and of ``nbr``; its row holds ``count`` neighbour
    indices ``j`` of rows ``offset + j`` of ``positions`` and ``types`` (``offset`` 0 alone; in a
    batch the system's first atom: the lists hold indices within the system); ``table[base + type_j]``
    is the pair's parameter row (``base = first row of the system's table + type_i n_types``).  Lane
    ``l`` takes the neighbours ``l, l + lanes, ...`` in list order; the lanes' sums are added as the
    GPU's butterfly does: (s0 + s1), ((s0 + s1) + (s2 + s3)), then the two quads of 8 lanes.  Returns
    the 10-tuple ``(fx, fy, fz, e, w0..w5)`` (energy and virial not yet halved).
    """
    add, _ = make_pair_sums(pair_function)

    @numba.njit(inline="always")
    def atom_sums(i, offset, positions, types, L, invL, nbr, count, table, base, with_energy, lanes):
        xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
        two = four = eight = sums = ZERO_SUMS
        for lane in range(lanes):
            sums = ZERO_SUMS
            for k in range(lane, count, lanes):
                j = offset + nbr[i, k]
                sums = add(sums, xi - positions[j, 0], yi - positions[j, 1], zi - positions[j, 2],
                           L, invL, table[base + types[j]], with_energy)
            if lane % 2 == 0:
                two = sums
                continue
            two = _plus(two, sums)
            if lane % 4 == 1:
                four = two
                continue
            four = _plus(four, two)
            eight = four if lane == 3 else _plus(eight, four)
        return sums if lanes == 1 else two if lanes == 2 else four if lanes == 4 else eight

    return atom_sums


def _make_cpu_kernel(pair_function):
    _, store = make_pair_sums(pair_function)
    atom_sums = make_atom_list_sums(pair_function)

    @numba.njit(parallel=True)
    def kernel(positions, types, L, invL, nbr, nbr_count, table, n_types, forces, energy, virial,
               with_energy, lanes):
        for i in numba.prange(nbr_count.shape[0]):     # targets: the first n_local rows of positions
            total = atom_sums(i, 0, positions, types, L, invL, nbr, nbr_count[i], table, types[i] * n_types,
                              with_energy, lanes)
            store(total, i, forces, energy, virial, with_energy)
    return kernel


def half_list_chunks(nbr_count, n_chunks: int) -> np.ndarray:
    """Split the targets of a half list into ``n_chunks`` consecutive ranges of about equal pair counts.

    Returns ``bounds`` (n_chunks + 1,) int64: chunk ``t`` is atoms ``bounds[t]:bounds[t + 1]``.
    A function of the counts and ``n_chunks`` only, so the force sums' order is too.
    """
    pairs = np.cumsum(nbr_count, dtype=np.int64)
    total = int(pairs[-1]) if len(pairs) else 0
    targets = (np.arange(1, n_chunks) * total) // n_chunks
    inner = np.searchsorted(pairs, targets, side="right")
    return np.concatenate(([0], inner, [len(nbr_count)])).astype(np.int64)


@numba.njit(inline="always")
def newton_pair(dx, dy, dz, fr, ep, j, f, w, with_energy, sums):
    """One pair of a half list (Newton's third law), its force over r ``fr`` and energy ``ep`` given:
    ``(fr dx, fr dy, fr dz)`` and (``with_energy``) half ``ep`` and half of ``r_ij (x) r_ij fr``
    subtracted from / added to atom j's rows ``f[j]`` (fx, fy, fz, e) and ``w[j]`` (virial), and
    returned added to atom i's running ``sums`` (fx, fy, fz, e, w0..w5).  The pair kernels and EAM's
    second pass (:mod:`pycumd.eam_forces`) share it."""
    px, py, pz = dx * fr, dy * fr, dz * fr
    fx, fy, fz, e, w0, w1, w2, w3, w4, w5 = sums
    fx += px
    fy += py
    fz += pz
    f[j, 0] -= px
    f[j, 1] -= py
    f[j, 2] -= pz
    if with_energy:
        eh = 0.5 * ep
        e += eh
        f[j, 3] += eh
        v0, v1, v2 = 0.5 * dx * px, 0.5 * dy * py, 0.5 * dz * pz
        v3, v4, v5 = 0.5 * dx * py, 0.5 * dx * pz, 0.5 * dy * pz
        w0 += v0
        w1 += v1
        w2 += v2
        w3 += v3
        w4 += v4
        w5 += v5
        w[j, 0] += v0
        w[j, 1] += v1
        w[j, 2] += v2
        w[j, 3] += v3
        w[j, 4] += v4
        w[j, 5] += v5
    return (fx, fy, fz, e, w0, w1, w2, w3, w4, w5)


@numba.njit(inline="always")
def min_image(d, L, invL):
    """One component of a separation (length units) folded to the minimum image of an edge L."""
    return d - L * np.rint(d * invL)


@numba.njit(inline="always")
def min_image_separation(positions, i, j, L, invL):
    """``(dx, dy, dz, r^2)``: rows i and j of ``positions`` apart, minimum image in a box of edges L."""
    dx = positions[i, 0] - positions[j, 0]
    dy = positions[i, 1] - positions[j, 1]
    dz = positions[i, 2] - positions[j, 2]
    dx -= L[0] * np.rint(dx * invL[0])
    dy -= L[1] * np.rint(dy * invL[1])
    dz -= L[2] * np.rint(dz * invL[2])
    return dx, dy, dz, dx * dx + dy * dy + dz * dz


@numba.njit(inline="always")
def clear_chunk(f, w, first, n, with_energy):
    """Zero a half-list chunk's rows ``first .. n - 1`` of ``f`` (N, 4) and, with energies, ``w`` (N, 6):
    its own atoms' and the later ones its pairs reach through Newton's third law."""
    for i in range(first, n):
        for q in range(4):
            f[i, q] = 0.0
        if with_energy:
            for q in range(6):
                w[i, q] = 0.0


@numba.njit(inline="always")
def add_own_sums(f, w, i, sums, with_energy):
    """Add atom i's own sums (a PairSums tuple: fx, fy, fz, e, then the virial) to its chunk rows."""
    f[i, 0] += sums[0]
    f[i, 1] += sums[1]
    f[i, 2] += sums[2]
    if with_energy:
        f[i, 3] += sums[3]
        for q in range(6):
            w[i, q] += sums[4 + q]


def _make_cpu_half_kernel(pair_function):
    """The CPU force kernel over a half list (each pair once, ``j > i``: Newton's third law).

    ``kernel(positions, types, L, invL, nbr, nbr_count, nbr_plain, table, n_types, bounds, acc, vir,
    with_energy)`` adds, for each pair, ``f_ij = (F/r) r_ij`` to atom i and ``-f_ij`` to atom j, and
    (``with_energy``) half the pair energy ``E`` and half of ``r_ij (x) r_ij (F/r)`` to each of them,
    into the sums of the chunk of targets that owns the pair (``bounds``, :func:`half_list_chunks`):
    ``acc[t]`` (N, 4) holds chunk t's ``fx, fy, fz, e``, ``vir[t]`` (N, 6) its virial.  Every ``j``
    of chunk t's lists is > ``bounds[t]``, so chunk t only touches (and first zeroes) rows
    ``bounds[t]:``.  Chunks run in parallel, one sum array each: no race, and an order that does not
    depend on which thread runs which chunk.  :func:`sum_chunks` then adds the chunks in chunk order.
    The first ``nbr_plain[i]`` neighbours of atom i need no minimum image (the list builder put
    them first); the others get it.
    """
    @numba.njit(inline="always")
    def pair(dx, dy, dz, j, row, f, w, with_energy, sums):
        """One pair: its force and (with_energy) half its energy and virial subtracted from / added
        to atom j's row of the chunk, and returned added to atom i's running sums."""
        r2 = dx * dx + dy * dy + dz * dz
        # branch-free (a list pair lies beyond the cutoff about one time in four, too irregularly
        # to predict; the branch cost 40% of the kernel): the pair function at r2, beyond the
        # cutoff at rc^2 (where PairPotential.table evaluates every pair function too), then zero
        rc2 = row[0]
        inside = r2 < rc2
        ep, fr = pair_function(min(r2, rc2), row)
        ep = ep if inside else 0.0
        fr = fr if inside else 0.0
        return newton_pair(dx, dy, dz, fr, ep, j, f, w, with_energy, sums)

    @numba.njit(parallel=True)
    def kernel(positions, types, L, invL, nbr, nbr_count, nbr_plain, table, n_types, bounds, acc, vir,
               with_energy):
        n = nbr_count.shape[0]
        for t in numba.prange(bounds.shape[0] - 1):
            f = acc[t]
            w = vir[t]
            clear_chunk(f, w, bounds[t], n, with_energy)
            for i in range(bounds[t], bounds[t + 1]):
                xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
                base = types[i] * n_types
                sums = ZERO_SUMS
                for k in range(nbr_plain[i]):               # no image shift
                    j = nbr[i, k]
                    sums = pair(xi - positions[j, 0], yi - positions[j, 1], zi - positions[j, 2], j,
                                table[base + types[j]], f, w, with_energy, sums)
                for k in range(nbr_plain[i], nbr_count[i]):  # across the box: minimum image
                    j = nbr[i, k]
                    dx = xi - positions[j, 0]
                    dy = yi - positions[j, 1]
                    dz = zi - positions[j, 2]
                    dx -= L[0] * np.rint(dx * invL[0])
                    dy -= L[1] * np.rint(dy * invL[1])
                    dz -= L[2] * np.rint(dz * invL[2])
                    sums = pair(dx, dy, dz, j, table[base + types[j]], f, w, with_energy, sums)
                add_own_sums(f, w, i, sums, with_energy)
    return kernel


@numba.njit(parallel=True, cache=True)
def sum_chunks(bounds, acc, vir, forces, energy, virial, with_energy):
    """``forces[i] = acc[0, i] + acc[1, i] + ...`` (and energy, virial) over the chunks that touched
    row i (those with ``bounds[t] <= i``), in chunk order: the bits depend on the chunks, not on
    the threads."""
    n = forces.shape[0]
    n_chunks = bounds.shape[0] - 1
    for i in numba.prange(n):
        top = 0                           # the last chunk that touched row i
        while top + 1 < n_chunks and bounds[top + 1] <= i:
            top += 1
        for q in range(3):
            s = acc[0, i, q]
            for t in range(1, top + 1):
                s += acc[t, i, q]
            forces[i, q] = s
        if with_energy:
            s = acc[0, i, 3]
            for t in range(1, top + 1):
                s += acc[t, i, 3]
            energy[i] = s
            for q in range(6):
                s = vir[0, i, q]
                for t in range(1, top + 1):
                    s += vir[t, i, q]
                virial[i, q] = s


def pair_kernel(potential, table, backend, precision, source: str, name: str, make_cpu_kernel,
                extra_defines=None):
    """The force kernel for a potential and the parameter table it reads, on one backend.

    GPU: kernel ``name`` of ``source`` compiled with the precision's types and options and the
    potential's header (and ``extra_defines``, e.g. ``TARGET_ZONES``); the table in the pair precision.  CPU: the Numba kernel that
    ``make_cpu_kernel(pair_function)`` builds (cached per potential class, cutoff treatment and
    builder, and on disk where the potential gives a key: :mod:`pycumd.jit_cache`); the table in
    float64.
    """
    if backend.is_gpu:
        defines = {**precision.cuda_defines, **potential_defines(potential),
                   "FIXED_POINT_SUMS_FP64": int(precision.fixed_point_forces and backend.fast_float64),
                   **(extra_defines or {})}
        module = backend.kernel_module(source, defines, options=precision.cuda_options)
        return module.get_function(name), backend.xp.asarray(table, dtype=precision.pair_dtype)
    key = (type(potential), potential.cutoff, make_cpu_kernel)
    if key not in _CPU_KERNELS:
        disk_key = potential.kernel_cache_key()
        if disk_key is not None:
            disk_key = (make_cpu_kernel.__module__, make_cpu_kernel.__qualname__, *disk_key)
        _CPU_KERNELS[key] = cache_kernel(make_cpu_kernel(potential.pair_function()), disk_key)
    return _CPU_KERNELS[key], table


def check_pair_errors(potential, table, n_types: int, state, backend) -> None:
    """Raise :class:`~pycumd.bookkeeping.SimulationError` if the kernels met a pair the potential
    cannot evaluate (a potential with ``pair_error``: pair_style table's inner distance); the CPU
    force evaluators call it after each evaluation, the GPU's ``Bookkeeping.check_finite`` at each
    report."""
    pair_error = getattr(potential, "pair_error", None)
    if pair_error is not None:
        message = pair_error(table, n_types, state, backend)
        if message is not None:
            raise SimulationError(message)


class PairForces(ForceEvaluatorBase):
    """Evaluates one pair potential over a :class:`~pycumd.neighbors.verlet.NeighborList`.

    Parameters
    ----------
    potential : PairPotential
    n_types : int
    backend, precision : as chosen by the Simulation
    lanes : int, optional
        Threads per target atom (1, 2, 4 or 8; the CPU sums in the same order); default
        :func:`default_lanes` of the system size at the first call.
    table : array, optional
        The parameter table (``potential.table(n_types)`` by default; ``pair_style hybrid`` hands
        the table of its pair sub-style's pairs, :class:`pycumd.eam_forces.HybridForces`).
    """

    capturable = True

    def __init__(self, potential, n_types: int, backend, precision, lanes: int | None = None, table=None):
        if lanes is not None and lanes not in LANE_CHOICES:
            raise InputError(f"lanes must be 1, 2, 4 or 8 threads per atom, got {lanes!r}")
        self.potential = potential
        self.n_types = n_types
        self.backend = backend
        self.lanes = lanes
        table = potential.table(n_types) if table is None else table
        fixed = backend.is_gpu and precision.fixed_point_forces
        name = ("pair_forces_composite" if precision.composite else "pair_forces_fixed" if fixed
                else "pair_forces")
        self._kernel, self._table = pair_kernel(potential, table, backend, precision, "forces.cu", name,
                                                _make_cpu_kernel)
        if backend.is_gpu:
            # GPU: (forces only, forces with energies and virials): two kernels (forces.cu)
            self._kernel = (self._kernel, pair_kernel(potential, table, backend, precision, "forces.cu",
                                                      name + "_energy", _make_cpu_kernel)[0])
        self._real = precision.state_dtype
        #: mixed and composite precision: the fixed-point image of the positions ((N, 4) uint32, see
        #: forces.cu) and the kernel that writes it
        self.image = None
        #: CPU, half lists: the kernel (compiled at its first use) and the per-chunk sums,
        #: (chunks, N, 4) forces and energies and (chunks, N, 6) virials (:meth:`_compute_cpu_half`)
        self._half_kernel = None
        self.chunk_sums = self.chunk_virials = None
        if precision.composite:
            self._image_kernel = pair_kernel(potential, table, backend, precision, "forces.cu",
                                             "fixed_point_image_composite", _make_cpu_kernel)[0]
            self.compute = self._compute_composite
        elif fixed:
            self._image_kernel = pair_kernel(potential, table, backend, precision, "forces.cu",
                                             "fixed_point_image", _make_cpu_kernel)[0]
            #: the kernels converting separations by halves (SPLIT_CONVERSION_MAX_LANES)
            self._split_kernel = tuple(pair_kernel(potential, table, backend, precision, "forces.cu", k,
                                                   _make_cpu_kernel)[0]
                                       for k in ("pair_forces_fixed_split", "pair_forces_fixed_split_energy"))
            self.compute = self._compute_fixed
        else:
            self.compute = self._compute_cuda if backend.is_gpu else self._compute_cpu
        #: mixed precision: the force kernel reads a fixed-point image of float64 positions that
        #: the captured steps' half steps may write (``compute(..., image_current=True)``)
        self.reads_fixed_image = bool(fixed and not precision.composite)
        #: the forces can be computed in two zones of targets (:meth:`compute_zone`): the GPU's plain
        #: kernel (single and double precision)
        self.computes_zones = bool(backend.is_gpu and not fixed and not precision.composite)
        self._precision = precision
        self._zone_kernel = None

    def prepare_zones(self) -> None:
        """Compile the zone kernel (once; outside any graph capture, where a module cannot load)."""
        if not self.computes_zones:
            raise NotImplementedError("forces in zones run on the GPU in single and double precision only")
        if self._zone_kernel is None:
            self._zone_kernel = pair_kernel(self.potential, self._table, self.backend, self._precision,
                                            "forces.cu", "pair_forces_zone", _make_cpu_kernel,
                                            extra_defines={"TARGET_ZONES": 1})[0]

    def compute_zone(self, state, neighbors, zone: int, inner_lo, inner_hi) -> None:
        """Forces (no energies) of the targets of one zone: zone 0 those whose position lies in the
        box ``[inner_lo, inner_hi)`` (length units, per axis), zone 1 the others.  Each target gets
        exactly :meth:`compute`'s sums, so the two launches together write what one does (a spatial
        domain's interior forces run while its ghosts travel: :class:`pycumd.parallel.domains.DomainForces`).
        GPU plain kernel only (:attr:`computes_zones`)."""
        self.prepare_zones()
        real = self._real
        self._launch_plain(self._zone_kernel, state, neighbors, np.int32(zone), *[real(x) for x in inner_lo],
                           *[real(x) for x in inner_hi])

    def check_pair_errors(self, state) -> None:
        """:func:`check_pair_errors` of this evaluator's potential and table."""
        check_pair_errors(self.potential, self._table, self.n_types, state, self.backend)

    def _lanes(self, n_atoms: int) -> int:
        if self.lanes is None:
            self.lanes = default_lanes(n_atoms)
        return self.lanes

    def _compute_cpu(self, state, neighbors, with_energy: bool) -> None:
        L = np.asarray(state.box_lengths)
        if neighbors.half:
            self._compute_cpu_half(state, neighbors, with_energy, L)
            return
        self._kernel(state.positions, state.types, L, 1.0 / L, neighbors.nbr, neighbors.nbr_count,
                     self._table, self.n_types, state.forces, state.energy, state.virial, with_energy,
                     self._lanes(state.n_atoms))
        self.check_pair_errors(state)

    def _compute_cpu_half(self, state, neighbors, with_energy: bool, L) -> None:
        """Half list (Newton's third law): one chunk of targets per thread, each with its own sums
        (:func:`_make_cpu_half_kernel`), then the chunks added in chunk order (:func:`sum_chunks`).
        Same thread count, same bits; another thread count changes the chunks and the last bits."""
        if self._half_kernel is None:
            self._half_kernel = pair_kernel(self.potential, self._table, self.backend, None, "", "",
                                            _make_cpu_half_kernel)[0]
        n = state.n_atoms
        n_chunks = max(1, min(numba.get_num_threads(), n))
        bounds = half_list_chunks(neighbors.nbr_count, n_chunks)
        if self.chunk_sums is None or self.chunk_sums.shape[:2] != (n_chunks, n):
            self.chunk_sums = None
            self.chunk_sums = np.empty((n_chunks, n, 4))
            self.chunk_virials = np.empty((n_chunks, 0, 6))
        if with_energy and self.chunk_virials.shape[1] != n:
            self.chunk_virials = np.empty((n_chunks, n, 6))
        self._half_kernel(state.positions, state.types, L, 1.0 / L, neighbors.nbr, neighbors.nbr_count,
                          neighbors.nbr_plain, self._table, self.n_types, bounds, self.chunk_sums,
                          self.chunk_virials, with_energy)
        sum_chunks(bounds, self.chunk_sums, self.chunk_virials, state.forces, state.energy, state.virial,
                    with_energy)
        self.check_pair_errors(state)

    def _compute_cuda(self, state, neighbors, with_energy: bool) -> None:
        self._launch_plain(self._kernel[bool(with_energy)], state, neighbors)

    def _launch_plain(self, kernel, state, neighbors, *extra) -> None:
        """Launch a kernel with pair_forces' arguments (forces.cu: PAIR_FORCES_ARGS), then ``extra``."""
        n = state.n_atoms
        L = np.asarray(state.box_lengths)
        real = self._real
        lanes = self._lanes(n)
        kernel(((n * lanes + BLOCK - 1) // BLOCK,), (BLOCK,),
               (self.control, state.positions, neighbors.nbr, neighbors.nbr_count, np.int32(n), np.int32(n),
                self._table, np.int32(self.n_types), *[real(x) for x in L], *[real(x) for x in 1.0 / L],
                state.forces, state.energy, state.virial, np.int32(lanes), *extra))

    def image_of(self, state):
        """Mixed precision: the fixed-point image array for ``state``'s position rows ((rows, 4)
        uint32), allocated at the first call (outside any graph capture)."""
        rows = int(state.positions.shape[0])
        if self.image is None or self.image.shape[0] != rows:
            self.image = None
            self.image = self.backend.xp.empty((rows, 4), np.uint32)
        return self.image

    def write_image(self, state) -> None:
        """Mixed precision: launch the kernel that writes the fixed-point image of the positions."""
        rows = int(state.positions.shape[0])
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self._image_kernel(((rows + BLOCK - 1) // BLOCK,), (BLOCK,),
                           (self.control, state.positions, self.image_of(state), np.int32(rows),
                            *[np.float64(2.0**32 / x) for x in L]))

    def _compute_fixed(self, state, neighbors, with_energy: bool, image_current: bool = False) -> None:
        """Mixed precision: write the fixed-point image of the positions, then the forces from it.

        The image covers every row of ``state.positions`` (a spatial domain's owned atoms and its
        ghosts); the targets are the first ``state.n_atoms`` rows.  ``image_current``: the image
        was written with the present positions already (the captured steps' fused half steps,
        ``final_then_initial_integrate_check`` with the image), so it is not written again."""
        n = state.n_atoms
        L = np.asarray(state.box_lengths, dtype=np.float64)
        if not image_current:
            self.write_image(state)
        lanes = self._lanes(n)
        kernels = self._split_kernel if lanes <= SPLIT_CONVERSION_MAX_LANES else self._kernel
        kernels[bool(with_energy)](
            ((n * lanes + BLOCK - 1) // BLOCK,), (BLOCK,),
            (self.control, self.image, neighbors.nbr, neighbors.nbr_count, np.int32(n), np.int32(n),
             self._table, np.int32(self.n_types), *[np.float32(x / 2.0**32) for x in L],
             state.forces, state.energy, state.virial, np.int32(lanes)))

    def _compute_composite(self, state, neighbors, with_energy: bool) -> None:
        """Composite precision from a fixed-point image of the float-float positions (the image
        formed in float32 arithmetic, ``fixed_point_image_composite``), then the pairs as mixed
        precision's kernel takes them, every output as hi and lo arrays."""
        n = state.n_atoms
        rows = int(state.positions.shape[0])
        L = np.asarray(state.box_lengths, dtype=np.float64)
        if self.image is None or self.image.shape[0] != rows:
            self.image = None
            self.image = self.backend.xp.empty((rows, 4), np.uint32)    # outside graph capture: the first call
        scale_hi, scale_lo = zip(*(ff_parts(2.0**32 / x) for x in L))
        self._image_kernel(((rows + BLOCK - 1) // BLOCK,), (BLOCK,),
                           (self.control, state.positions, state.lo["positions"], self.image, np.int32(rows),
                            *scale_hi, *scale_lo))
        lo = state.lo
        lanes = self._lanes(n)
        self._kernel[bool(with_energy)](
            ((n * lanes + BLOCK - 1) // BLOCK,), (BLOCK,),
            (self.control, self.image, neighbors.nbr, neighbors.nbr_count, np.int32(n), np.int32(n),
             self._table, np.int32(self.n_types), *[np.float32(x / 2.0**32) for x in L],
             state.forces, lo["forces"], state.energy, lo["energy"], state.virial, lo["virial"], np.int32(lanes)))

