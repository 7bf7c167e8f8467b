"""LAMMPS' ``kspace_style msm``: multilevel summation for forces, energy and virial (periodic or
non-periodic orthogonal box).

The pair style ``coul/msm`` computes ``qqrd2e q_i q_j [1/r - gamma(r/a)/a]`` inside the Coulomb
cutoff ``a``; this solver computes the rest, ``qqrd2e q_i q_j gamma(r/a)/a`` over all pairs and
periodic images, on a hierarchy of grids (the splitting, basis and grid operators are those of
:mod:`pycumd.kspace.multilevel`, shared with the potential maps):

1. **anterpolation** of the charges onto the finest grid (``order^3`` points per atom);
2. **restriction** to coarser grids (spacing doubled per level; a dimension that has reached one
   point stays at one);
3. on every level ``l`` the **direct sum** ``e_l = K_l * q_l`` with
   ``K_l(r) = g_{2^l a}(r) - g_{2^(l+1) a}(r)`` over the offsets within ``int(2 a / h_0)`` finest-grid
   steps, wrapped onto the periodic grid (every image), by FFT in float64;
4. **prolongation** of the potentials back to the finest grid (the transpose of restriction), and
   **interpolation** of the field ``-grad e`` to the atoms: ``F_i = qqrd2e q_i E(r_i)``.

As LAMMPS for a periodic box, the coarsest level (one grid point, carrying the total charge: zero
for a neutral system) is left out.  Non-periodic (``boundary f f f`` or ``s s s``; ``periodic=False``):
the grids extend ``order/2 - 1`` points beyond the box on each side (LAMMPS' ``alpha``, ``beta``),
the sums see no images, and the top level sums ``g_{2^(L-1) a}`` over all its grid pairs (LAMMPS'
``direct_top``).  Mixed boundaries are not implemented.  Energy
``E = qqrd2e/2 [sum_grid q e - gamma(0)/a sum_i q_i^2]`` (the second term removes each charge's
smoothed self interaction).  Virial: LAMMPS' default ``kspace_modify pressure/scalar yes`` gives
``E/3`` on the diagonal and zero off it (``coul/msm`` does the same for its part, so only the
scalar pressure is meaningful); with ``pressure_scalar=False`` the tensor
``qqrd2e/2 sum_l q_l . (V_l * q_l)``, ``V_l = -K_l'(r) x_a x_b / r`` (LAMMPS' ``get_virial_direct``).

Parameters as LAMMPS' ``MSM::set_grid_global``: with ``kspace_modify cutoff/adjust yes`` (LAMMPS'
default) the finest grid spacing comes from the atom density (Hardy's cost estimate), each count
rounded to a power of two, and the Coulomb cutoff is then *changed* to meet the accuracy
(:attr:`MSM.r_cut`: the pair style must use it); with ``cutoff/adjust no`` each count is doubled from
2 until Hardy's error estimate ``C_p h^(p-1) / a^(p+1) q2 a / (L sqrt N)`` is within the accuracy.
Order 10 by default (``kspace_modify order 4/6/8/10``).

Backends: the CPU runs Numba loops (anterpolation and interpolation, a fixed order) and NumPy's FFTs;
the GPU the kernels of ``kspace/msm.cu`` (float64 atomics in the anterpolation) and CuPy's FFTs.
Float64 throughout (LAMMPS' MSM refuses single precision too).
"""

from __future__ import annotations

import math

import numpy as np

from pycumd.kspace import multilevel as ml
from pycumd.kspace.accuracy import format_g, table_error, table_line
from pycumd.kspace.base import KSpaceSolver

#: LAMMPS' limits: grid counts below OFFSET, at most MAX_LEVELS levels
OFFSET = 16384
MAX_LEVELS = 10
#: LAMMPS' default neighbour skin per unit style (only the '3d grid size/proc' line reads it)
DEFAULT_SKIN = {"lj": 0.3, "real": 2.0, "metal": 2.0, "si": 0.001, "cgs": 0.1, "electron": 2.0,
                "micro": 0.1, "nano": 0.1, "nuclear": 0.3}
#: Hardy's thesis (Table 5.1, Eq. 4.17) and LAMMPS' empirical RMS-force scaling, per p = order - 1:
#: (M_p, c'_p, scaling)
_ERROR_CONSTANTS = {3: (9.0, 1.0 / 6.0, 0.39189561), 5: (825.0, 1.0 / 30.0, 0.150829428),
                    7: (130095.0, 1.0 / 140.0, 0.049632967), 9: (34096545.0, 1.0 / 630.0, 0.013520855)}


class MSM(KSpaceSolver):
    """Multilevel summation (see module docstring).

    Extra keywords (LAMMPS' ``kspace_modify``): ``cutoff_adjust`` (``cutoff/adjust``, default True),
    ``pressure_scalar`` (``pressure/scalar``, default True), ``neighbor_skin`` (for the grid-size
    line of :meth:`describe`; default LAMMPS' skin of the unit style); ``periodic`` (LAMMPS'
    ``boundary``: True for ``p p p``, False for ``f``/``s``/``m`` in all three directions; a
    sequence of three bools must not mix them).

    After :meth:`setup`: ``mesh`` (finest grid, x y z), ``levels``, ``grid_counts`` (levels, 3: LAMMPS'
    ``nx_msm`` per level), ``grid_lo`` and ``grid_shape`` (levels, 3: first grid index and points per
    level, wider than the counts when non-periodic), ``spacings`` (levels, 3; length), ``r_cut`` (the
    Coulomb cutoff, length: **adjusted** when ``cutoff_adjust``, and the pair style ``coul/msm`` must
    then use it), ``r_cut_requested``, ``cutoff_adjusted`` (bool), ``estimated_accuracy`` (force units).
    """

    name = "msm"
    splitting = "msm"

    def __init__(self, accuracy, *, mesh=None, order=None, gewald=None, compute=True, cutoff_adjust=True,
                 pressure_scalar=True, neighbor_skin=None, periodic=True, slab=None):
        super().__init__(accuracy, mesh=mesh, order=order, gewald=gewald, compute=compute, slab=slab)
        order = 10 if order is None else int(order)
        if order not in ml.ORDERS:
            raise ValueError(f"kspace_modify order: MSM order must be 4, 6, 8, or 10, got {order}")
        if self.gewald_requested:
            raise ValueError("kspace_modify gewald: MSM has no Ewald parameter (it applies to ewald and pppm)")
        if any(self.mesh_requested) and not all(self.mesh_requested):
            raise ValueError(f"kspace_modify mesh: give three counts > 0 (or 0 0 0 for automatic), "
                             f"got {' '.join(map(str, self.mesh_requested))}")
        self.order = order
        self.cutoff_adjust = bool(cutoff_adjust)
        self.pressure_scalar = bool(pressure_scalar)
        self.neighbor_skin = neighbor_skin
        flags = [bool(periodic)] * 3 if np.isscalar(periodic) else [bool(v) for v in periodic]
        if len(flags) != 3 or len(set(flags)) != 1:
            raise NotImplementedError(f"kspace_style msm: mixed periodic and non-periodic boundaries "
                                      f"{tuple(flags)} are not implemented (all p, or all f/s/m)")
        self.periodic = flags[0]
        self.g_ewald = 0.0

    @property
    def adjusts_cutoff(self) -> bool:
        """``kspace_modify cutoff/adjust yes`` without a ``mesh``: the Coulomb cutoff follows from the accuracy."""
        return self.cutoff_adjust

    def coulomb_cutoff(self, box_lengths, charges, r_cut_coul, qqrd2e, units_name, *, table_bits=12, dielectric=1.0):
        """The cutoff LAMMPS' MSM::init gives the pair style (``r_cut_coul`` or the adjusted one), without
        building the grids (the engine's neighbour list needs it first)."""
        self._common_setup(box_lengths, charges, r_cut_coul, qqrd2e, units_name, table_bits, dielectric)
        self._check_charges()
        self._set_grid_global()
        return float(self.r_cut)

    def gamma_coefficients(self) -> np.ndarray:
        """``c_k`` (k = 0..order/2) of the splitting ``gamma(rho) = sum_k c_k rho^(2k)`` (rho <= 1) that the
        ``*/coul/msm`` pair styles use: ``qqrd2e q_i q_j [1/r - gamma(r/a)/a]`` inside the cutoff ``a``."""
        return ml.split_coefficients(self.order)

    # -- parameters (LAMMPS' MSM::init, set_grid_global) ----------------------------------------
    def setup(self, box_lengths, charges, r_cut_coul, qqrd2e, backend, precision, units_name, *,
              table_bits=12, dielectric=1.0):
        self._common_setup(box_lengths, charges, r_cut_coul, qqrd2e, units_name, table_bits, dielectric)
        self._check_charges()
        self.backend = backend
        self.precision = precision
        self.units_name = units_name
        self.r_cut_requested = self.r_cut
        self._set_grid_global()
        self.estimated_accuracy = self._total_error()
        self._setup_box(self.box_lengths)

    def _check_charges(self) -> None:
        if self.qsqsum == 0.0:
            raise ValueError("kspace_style msm: the system has no charges")
        if abs(self.qsum) > 1e-5:
            raise ValueError(f"kspace_style msm: the system is not charge neutral (net charge "
                             f"{self.qsum:.8g}); MSM needs a neutral system")

    def _c_p(self) -> float:
        """Hardy's error constant ``4 c'_p M_p / 3`` times LAMMPS' empirical RMS-force scaling."""
        mp, cprime, scaling = _ERROR_CONSTANTS[self.order - 1]
        return 4.0 * cprime * mp / 3.0 * scaling

    def _error_1d(self, h: float, length: float) -> float:
        """LAMMPS' estimate_1d_error: RMS force error of spacing ``h`` along ``length`` (force units)."""
        p = self.order - 1
        a = self.r_cut
        return self._c_p() * h ** (p - 1) / a ** (p + 1) * self.q2 * a / (length * math.sqrt(self.natoms))

    def _set_grid_global(self):
        box = self.box_lengths
        p = self.order - 1
        if self.cutoff_adjust and not any(self.mesh_requested):
            hmin = 3072.0 * (p + 1) / (p - 1) / (448.0 * math.pi + 56.0 * math.pi * self.order / 2 + 1701.0)
            hmin = hmin ** (1.0 / 6.0) * (self.volume / self.natoms) ** (1.0 / 3.0)
            counts = [max(int(L / hmin), 2) for L in box]
        elif not any(self.mesh_requested):
            counts = []
            for L in box:
                n, err = 2, 2.0 * self.accuracy
                while err > self.accuracy:
                    n *= 2
                    err = self._error_1d(L / n, L)
                counts.append(n)
        else:
            counts = list(self.mesh_requested)
        levels_per_dim = []
        for d in range(3):
            while _levels_if_power_of_two(counts[d]) is None:
                k = math.log(counts[d]) / math.log(2.0)
                counts[d] += 1 if k - math.floor(k) > 0.5 else -1
            levels_per_dim.append(_levels_if_power_of_two(counts[d]))
        self.mesh_changed = tuple(counts) != tuple(self.mesh_requested) and any(self.mesh_requested)
        self.cutoff_adjusted = False
        if self.cutoff_adjust:
            h = box / np.array(counts)
            k = self.q2 * self._c_p() / self.accuracy / math.sqrt(self.natoms)
            total = sum(h[d] ** (2.0 * p - 2.0) / box[d] ** 2 for d in range(3))
            self.r_cut = (k * k * total / 3.0) ** (1.0 / (2.0 * p))
            self.cutoff_adjusted = True
        levels = max(levels_per_dim)
        if levels > MAX_LEVELS:
            raise ValueError(f"kspace_style msm: too many MSM grid levels ({levels} > {MAX_LEVELS}); "
                             f"the grid {counts} is too fine")
        if levels <= 1:
            levels = 2
            levels_per_dim = [2, 2, 2]
            counts = [2, 2, 2]
        if self.periodic:
            levels -= 1                             # periodic: the one-point top level is left out
        if max(counts) >= OFFSET:
            raise ValueError(f"kspace_style msm: the grid {counts} is too large (LAMMPS' limit {OFFSET})")
        self.mesh = tuple(int(c) for c in counts)
        self.levels = levels
        self.grid_counts = np.array([[2 ** (lv - n - 1) if lv - n - 1 > 0 else 1 for lv in levels_per_dim]
                                     for n in range(levels)], dtype=np.int64)
        # grid index ranges per level: [0, count) periodic; [alpha, beta] non-periodic (LAMMPS)
        if self.periodic:
            self.grid_lo = np.zeros((levels, 3), dtype=np.int64)
            self.grid_shape = self.grid_counts.copy()
        else:
            extra = self.order // 2 - 1
            alpha = [-extra]
            beta = [self.grid_counts[0] + extra]
            for n in range(1, levels):
                alpha.append(-((-alpha[-1] + 1) // 2) - extra)
                beta.append((beta[-1] + 1) // 2 + extra)
            self.grid_lo = np.array([[a] * 3 for a in alpha], dtype=np.int64)
            self.grid_shape = np.array([b - a + 1 for a, b in zip(alpha, beta)], dtype=np.int64)

    def _grid_error(self) -> float:
        errs = [self._error_1d(L / n, L) for L, n in zip(self.box_lengths, self.mesh)]
        return math.sqrt(sum(e * e for e in errs)) / math.sqrt(3.0)

    def _total_error(self) -> float:
        grid = self._grid_error()
        table = table_error(self.natoms, self.r_cut, self.box_lengths, self.q2, self.table_bits)
        return math.sqrt(grid * grid + table * table)

    def grid_points_per_proc(self, skin: float) -> int:
        """LAMMPS' '3d grid size/proc' of one process: the finest grid with its ghost layers
        (the interpolation stencil and the direct-sum reach, half a skin beyond the box)."""
        size = 1
        for d in range(3):
            n, L = int(self.mesh[d]), float(self.box_lengths[d])
            reach = int(2.0 * self.r_cut * n / L)
            lo = int(-0.5 * skin * n / L + OFFSET) - OFFSET
            hi = int((L + 0.5 * skin) * n / L + OFFSET) - OFFSET
            out_lo = lo - self.order if d == 2 else lo + min(-self.order, -reach)
            out_hi = hi + max(self.order, reach)
            if not self.periodic:
                out_lo = max(out_lo, int(self.grid_lo[0, d]))
                out_hi = min(out_hi, int(self.grid_lo[0, d] + self.grid_shape[0, d] - 1))
            size *= out_hi - out_lo + 1
        return size

    def describe(self):
        skin = self.neighbor_skin if self.neighbor_skin is not None else DEFAULT_SKIN.get(self.units_name, 0.3)
        lines = []
        if self.cutoff_adjusted:
            lines.append(f"WARNING: Adjusting Coulombic cutoff for MSM, new cutoff = {format_g(self.r_cut)}")
        if self.mesh_changed:
            lines.append("WARNING: Number of MSM mesh points changed to be a multiple of 2")
        acc = self.estimated_accuracy
        lines += [table_line(self.table_bits),
                  f"  3d grid size/proc = {self.grid_points_per_proc(skin)}",
                  f"  estimated absolute RMS force accuracy = {format_g(acc)}",
                  f"  estimated relative force accuracy = {format_g(acc / self.two_charge_force)}",
                  f"  grid = {self.mesh[0]} {self.mesh[1]} {self.mesh[2]}",
                  f"  order = {self.order}"]
        return lines

    # -- box-dependent tables (LAMMPS' MSM::setup) ----------------------------------------------
    def _setup_box(self, box_lengths):
        """Per level: spacing, restriction matrices and the FFT of the direct-sum kernel (wrapped onto
        the periodic grid, or zero-padded), and of the six virial kernels without ``pressure_scalar``."""
        box = np.asarray(box_lengths, dtype=np.float64).reshape(3)
        self.box_lengths = box
        self.volume = float(np.prod(box))
        xp = self.backend.xp
        counts = self.grid_counts
        self.spacings = box[None, :] / counts
        reach = [int(2.0 * self.r_cut * counts[0, d] / box[d]) for d in range(3)]
        self._restrict = []
        for n in range(1, self.levels):
            ratio = counts[n - 1] // counts[n]
            self._restrict.append([xp.asarray(ml.restriction_matrix(
                int(self.grid_lo[n - 1, d]), int(self.grid_shape[n - 1, d]), int(self.grid_lo[n, d]),
                int(self.grid_shape[n, d]), self.periodic, self.order, int(ratio[d]))) for d in range(3)])
        self._kernels = []
        self._virial_kernels = []
        for n in range(self.levels):
            shape = tuple(int(c) for c in self.grid_shape[n])
            a_level = self.r_cut * 2.0 ** n
            top = not self.periodic and n == self.levels - 1
            radius = [m - 1 for m in shape] if top else reach
            kernel = (ml.smooth(ml.offset_lengths(radius, self.spacings[n]), a_level, self.order) if top
                      else ml.level_kernel(radius, self.spacings[n], a_level, self.order))
            self._kernels.append(ml.KernelFFT(xp, kernel, shape, self.periodic))
            if not self.pressure_scalar:
                vk = ml.level_virial_kernels(radius, self.spacings[n], a_level, self.order, top=top)
                self._virial_kernels.append([ml.KernelFFT(xp, v, shape, self.periodic) for v in vk])

    # -- compute ----------------------------------------------------------------------------------
    def potentials(self, positions, charges):
        """The grid charges and potentials of every level after prolongation: two lists of float64
        backend arrays (z, y, x indexed), level 0 first; the finest potential is complete."""
        xp = self.backend.xp
        x = xp.ascontiguousarray(positions[:, :3].astype(xp.float64))
        q = xp.ascontiguousarray(charges.astype(xp.float64))
        grids = [ml.anterpolate(self.backend, x, q, self.grid_lo[0], self.grid_shape[0], self.spacings[0],
                                self.periodic, self.order)]
        if self.grid_comm is not None:          # several ranks: each anterpolated its own atoms
            if self.backend.is_gpu:
                raise NotImplementedError("kspace_style msm over MPI ranks runs on the CPU only")
            grids[0] = self._sum_over_ranks(np.ascontiguousarray(grids[0]))
        for mats in self._restrict:
            grids.append(ml.apply_axes(xp, mats, grids[-1]))
        pots = []
        for n, qg in enumerate(grids):
            e = self._kernels[n].apply(xp, qg.transpose(2, 1, 0))
            pots.append(xp.ascontiguousarray(e.transpose(2, 1, 0)))
        for n in range(self.levels - 2, -1, -1):
            mats = [m.T for m in self._restrict[n]]
            pots[n] = pots[n] + ml.apply_axes(xp, mats, pots[n + 1])
        return grids, pots, x, q

    def _check_inside(self, positions):
        """Non-periodic: every atom's stencil must lie on the grid (LAMMPS' 'Out of range atoms')."""
        xp = self.backend.xp
        lo = np.asarray(self.backend.to_host(xp.min(positions[:, :3], axis=0)), dtype=np.float64)
        hi = np.asarray(self.backend.to_host(xp.max(positions[:, :3], axis=0)), dtype=np.float64)
        h = self.spacings[0]
        first = np.floor(lo / h) - (self.order - 1) // 2
        last = np.floor(hi / h) - (self.order - 1) // 2 + self.order - 1
        if np.any(first < self.grid_lo[0]) or np.any(last > self.grid_lo[0] + self.grid_shape[0] - 1):
            raise ValueError(f"kspace_style msm: out of range atoms - cannot compute MSM (non-periodic box "
                             f"{tuple(self.box_lengths)}: atoms span {tuple(lo)} to {tuple(hi)})")

    def compute(self, positions, charges, box_lengths, forces, with_energy):
        # a new box: LAMMPS' MSM::setup, the same grid counts and cutoff
        if not self._start_compute(box_lengths, with_energy):
            return
        xp = self.backend.xp
        if not self.periodic:
            self._check_inside(positions)
        grids, pots, x, q = self.potentials(positions, charges)
        field = ml.interpolate_field(self.backend, x, self.grid_lo[0], self.grid_shape[0], self.spacings[0],
                                     self.periodic, self.order, pots[0])
        forces += ((self.qqrd2e * q)[:, None] * field).astype(forces.dtype)
        if with_energy:
            gamma0 = float(ml.gamma(0.0, self.order))
            total = float(xp.sum(grids[0] * pots[0]))
            self.energy = 0.5 * self.qqrd2e * (total - gamma0 / self.r_cut * self.qsqsum)
            if self.pressure_scalar:
                self.virial = np.array([self.energy / 3.0] * 3 + [0.0] * 3)
            else:
                vir = np.zeros(6)
                for n, qg in enumerate(grids):
                    q_xyz = qg.transpose(2, 1, 0)
                    for c in range(6):
                        vir[c] += float(xp.sum(self._virial_kernels[n][c].apply(xp, q_xyz) * q_xyz))
                self.virial = 0.5 * self.qqrd2e * vir


def _levels_if_power_of_two(n: int):
    """LAMMPS' factorable() with the factor 2: the level count ``log2(n) + 1``, or None."""
    if n < 1:
        return None
    levels = 1
    while n > 1:
        if n % 2:
            return None
        n //= 2
        levels += 1
    return levels


def real_space(positions, charges, box_lengths, cutoff: float, order: int = 10, qqrd2e: float = 1.0,
               periodic: bool = True):
    """NumPy reference of LAMMPS' ``pair_style coul/msm`` (brute force over all images within the
    cutoff, none when not ``periodic``): ``qqrd2e q_i q_j [1/r - gamma(r/a)/a]`` for ``r < a``.

    Returns ``(energy, forces, virial)``: float, (N, 3) float64, (6,) xx yy zz xy xz yz (energy and
    force units).  For tests and
    small systems (O(N^2 images)); the engine's pair style is ``coul/msm`` (not in pycumd yet).
    """
    x = np.asarray(positions, dtype=np.float64)[:, :3]
    q = np.asarray(charges, dtype=np.float64)
    box = np.asarray(box_lengths, dtype=np.float64)
    n_img = [int(math.ceil(cutoff / L)) if periodic else 0 for L in box]
    shifts = np.stack(np.meshgrid(*[np.arange(-m, m + 1) for m in n_img], indexing="ij"), -1).reshape(-1, 3) * box
    energy = 0.0
    forces = np.zeros_like(x)
    virial = np.zeros(6)
    for i in range(len(x)):
        d = x[i] - x[None, :, :] + shifts[:, None, :]               # (images, N, 3)
        r2 = (d * d).sum(-1)
        mask = (r2 > 0) & (r2 < cutoff * cutoff)
        r = np.sqrt(np.where(mask, r2, 1.0))
        qq = q[i] * np.broadcast_to(q, r.shape)
        rho = r / cutoff
        e = qq * (1.0 / r - ml.gamma(rho, order) / cutoff)
        fmag = np.where(mask, qq * (1.0 / (r * r) + ml.dgamma(rho, order) / cutoff ** 2) / r, 0.0)  # times d
        energy += 0.5 * float(np.where(mask, e, 0.0).sum())
        forces[i] = (fmag[..., None] * d).sum(axis=(0, 1))
        for c, (a, b) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
            virial[c] += 0.5 * float((fmag * d[..., a] * d[..., b]).sum())
    return qqrd2e * energy, qqrd2e * forces, qqrd2e * virial
