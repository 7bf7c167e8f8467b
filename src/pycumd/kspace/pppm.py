"""LAMMPS' ``kspace_style pppm``: particle-particle particle-mesh Ewald with ik differentiation.

One step (LAMMPS' PPPM::compute with its defaults):

1. *Charge assignment*: each charge is spread onto the ``order^3`` grid points around it with the
   weights ``W(dx) W(dy) W(dz)`` of the order-P assignment function (LAMMPS' ``rho_coeff``
   polynomials, P = 2..7), divided by the cell volume: the density ``rho`` on an ``nx x ny x nz``
   grid (periodic).
2. A forward FFT, ``rho(k)``.
3. *Poisson solve* with the optimal influence function ``G(k)`` for ik differentiation
   (Hockney-Eastwood, LAMMPS' ``compute_gf_ik``: aliasing sums over the images ``k + 2 pi m / h``);
   the potential gradient ``grad phi(k) = i k G(k) rho(k) / M`` (M grid points; forward transform
   ``sum_r f(r) exp(-i k.r)``), three inverse FFTs.
4. *Interpolation*: ``F_i = -qqrd2e q_i sum_grid W grad phi`` with the same weights.

Energy ``qqrd2e [V / (2 M^2) sum_k G |rho(k)|^2 - g/sqrt(pi) sum q^2 - pi (sum q)^2 / (2 g^2 V)]``;
virial ``qqrd2e V / (2 M^2) sum_k G |rho(k)|^2 (delta_ab - 2 (1/k^2 + 1/(4 g^2)) k_a k_b)``.

Parameters as LAMMPS' PPPM::init (set_grid_global, adjust_gewald, final_accuracy): ``g_ewald`` first
from the real-space error, the grid in each direction the first count (starting at ``L g + 1``)
whose ik error estimate (Deserno and Holm's coefficients) is within the accuracy, each count raised
to the next product of 2, 3 and 5, then ``g_ewald`` moved by Newton-Raphson until the real- and
k-space error estimates are equal.  ``kspace_modify mesh``, ``order`` and ``gewald`` replace them.

Backends: the CPU runs Numba loops (assignment serial: a fixed order, so repeatable) and NumPy's
real FFTs, all float64.  The GPU runs the CUDA kernels of ``pppm.cu`` (assignment through 64-bit
fixed-point integer atomics: the same bits every run) and cuFFT plans made once; its grid and FFTs
are float64 for the double and mixed precision policies and float32 for single and composite.
The real-to-complex transforms hold half the spectrum; the field's Nyquist planes are zero (LAMMPS'
complex transforms drop them by taking the real part), so the result is LAMMPS'.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pycumd.kspace.accuracy import format_g, initial_g_ewald, real_space_error, table_error, table_line
from pycumd.kspace.base import KSpaceSolver

SOURCE = "kspace/pppm.cu"
MIN_ORDER, MAX_ORDER = 2, 7
#: LAMMPS' OFFSET: added before truncating a grid coordinate to an integer so that negative
#: coordinates round down
OFFSET = 16384
#: the aliasing sums of the influence function stop where exp(-(pi m / (g h))^2)^... < EPS_HOC
EPS_HOC = 1.0e-7
#: 4 pi as LAMMPS' compute_gf_ik writes it (relative difference 1e-9, kept for the same G(k))
FOUR_PI_GF = 12.5663706
#: fixed-point charge grid: |sum of |q|| scaled to at most 2^FIXED_POINT_BITS (int64 holds 2^63)
FIXED_POINT_BITS = 62

# Deserno and Holm (J. Chem. Phys. 109, 7698 (1998)): coefficients of the ik error estimate, per order
_ACONS = {
    1: [2.0 / 3.0],
    2: [1.0 / 50.0, 5.0 / 294.0],
    3: [1.0 / 588.0, 7.0 / 1440.0, 21.0 / 3872.0],
    4: [1.0 / 4320.0, 3.0 / 1936.0, 7601.0 / 2271360.0, 143.0 / 28800.0],
    5: [1.0 / 23232.0, 7601.0 / 13628160.0, 143.0 / 69120.0, 517231.0 / 106536960.0,
        106640677.0 / 11737571328.0],
    6: [691.0 / 68140800.0, 13.0 / 57600.0, 47021.0 / 35512320.0, 9694607.0 / 2095994880.0,
        733191589.0 / 59609088000.0, 326190917.0 / 11700633600.0],
    7: [1.0 / 345600.0, 3617.0 / 35512320.0, 745739.0 / 838397952.0, 56399353.0 / 12773376000.0,
        25091609.0 / 1560084480.0, 1755948832039.0 / 36229939200000.0, 4887769399.0 / 37838389248.0],
}


class PPPM(KSpaceSolver):
    """PPPM with ik differentiation (see module docstring).

    After :meth:`setup`: ``mesh`` (nx, ny, nz), ``order``, ``g_ewald``, ``estimated_accuracy``
    (absolute RMS force error, force units), ``grid_dtype``.
    """

    name = "pppm"

    def __init__(self, accuracy, *, mesh=None, order=None, gewald=None, compute=True, slab=None):
        super().__init__(accuracy, mesh=mesh, order=order, gewald=gewald, compute=compute, slab=slab)
        order = 5 if order is None else int(order)
        if not MIN_ORDER <= order <= MAX_ORDER:
            raise ValueError(f"kspace_modify order: PPPM order must be {MIN_ORDER}..{MAX_ORDER}, got {order}")
        self.order = order
        if any(self.mesh_requested) and not all(self.mesh_requested):
            raise ValueError(f"kspace_modify mesh: give three counts > 0 (or 0 0 0 for automatic), "
                             f"got {' '.join(map(str, self.mesh_requested))}")
        self._gpu = None

    @property
    def capturable(self) -> bool:
        """On the GPU after :meth:`setup`: a compute without energies is kernels and cuFFT calls on the
        current stream into buffers made at the first call (tests/test_kspace_gpu.py replays one from a
        CUDA graph), so the CUDA-graph step may capture it.  Not with ``kspace_modify slab``: its correction
        allocates and reads the dipole on the host."""
        backend = getattr(self, "backend", None)
        return backend is not None and backend.is_gpu and not self.slab_flag

    # -- parameters ------------------------------------------------------------------------------
    def setup(self, box_lengths, charges, r_cut_coul, qqrd2e, backend, precision, units_name, *,
              table_bits=12, dielectric=1.0):
        self._common_setup(box_lengths, charges, r_cut_coul, qqrd2e, units_name, table_bits, dielectric)
        self.backend = backend
        self.precision = precision
        if self.gewald_requested:
            self.g_ewald = self.gewald_requested
        else:
            self.g_ewald = initial_g_ewald(self.accuracy, self.natoms, self.r_cut, self.box_lengths, self.q2)
        self.mesh = self._choose_mesh()
        if not self.gewald_requested:
            self._adjust_g_ewald()
        self.estimated_accuracy = self._final_accuracy()
        self.rho_coeff = rho_coefficients(self.order)
        self.gf_b = gf_denominator_coefficients(self.order)
        abs_q = float(np.abs(np.asarray(charges, dtype=np.float64)).sum())
        self.fixed_point_scale = 2.0 ** math.floor(FIXED_POINT_BITS - math.log2(max(abs_q, 1e-12)))
        wide = not backend.is_gpu or (precision.accum_dtype == np.float64 and not precision.composite)
        self.grid_dtype = np.float64 if wide else np.float32
        self._gpu = None
        self._setup_box(self.box_lengths)

    def _ik_error(self, h: float, length: float) -> float:
        """LAMMPS' estimate_ik_error: the RMS force error of grid spacing ``h`` along ``length``."""
        g = self.g_ewald
        acons = _ACONS[self.order]
        s = sum(acons[m] * (h * g) ** (2.0 * m) for m in range(self.order))
        return (self.q2 * (h * g) ** float(self.order)
                * math.sqrt(g * length * math.sqrt(2.0 * math.pi) * s / self.natoms) / (length * length))

    def _choose_mesh(self):
        if all(self.mesh_requested):
            counts = list(self.mesh_requested)
        else:
            counts = []
            for length in self.kbox:
                h = 1.0 / self.g_ewald
                n = int(length / h) + 1
                err = self._ik_error(h, length)
                while err > self.accuracy:     # LAMMPS' loop: the error of the previous count decides
                    err = self._ik_error(h, length)
                    n += 1
                    h = length / n
                counts.append(n)
        counts = [_next_factorable(n) for n in counts]
        if max(counts) >= OFFSET:
            raise ValueError(f"kspace_style pppm: the grid {counts} is too large (LAMMPS' limit {OFFSET})")
        return tuple(counts)

    def _df_kspace(self) -> float:
        errors = [self._ik_error(L / n, L) for L, n in zip(self.kbox, self.mesh)]
        return math.sqrt(sum(e * e for e in errors)) / math.sqrt(3.0)

    def _newton_f(self) -> float:
        return (real_space_error(self.g_ewald, self.natoms, self.r_cut, self.box_lengths, self.q2)
                - self._df_kspace())

    def _adjust_g_ewald(self):
        """LAMMPS' adjust_gewald: Newton-Raphson (forward-difference derivative, step 1e-6) on
        real-space error - k-space error, until |f| < 1e-5."""
        for _ in range(10000):
            f1 = self._newton_f()
            g_old = self.g_ewald
            self.g_ewald = g_old + 1e-6
            f2 = self._newton_f()
            self.g_ewald = g_old
            self.g_ewald -= f1 / ((f2 - f1) / 1e-6)
            if abs(self._newton_f()) < 1e-5:
                return
        raise ValueError("kspace_style pppm: could not compute g_ewald (Newton-Raphson did not converge)")

    def _final_accuracy(self) -> float:
        df_k = self._df_kspace()
        df_r = real_space_error(self.g_ewald, self.natoms, self.r_cut, self.box_lengths, self.q2)
        df_t = table_error(self.natoms, self.r_cut, self.box_lengths, self.q2, self.table_bits)
        return math.sqrt(df_k * df_k + df_r * df_r + df_t * df_t)

    def describe(self):
        nx, ny, nz = self.mesh
        prec = "double" if self.grid_dtype == np.float64 else "single"
        return [table_line(self.table_bits),
                f"  G vector (1/distance) = {format_g(self.g_ewald)}",
                f"  grid = {nx} {ny} {nz}",
                f"  stencil order = {self.order}",
                f"  estimated absolute RMS force accuracy = {format_g(self.estimated_accuracy)}",
                f"  estimated relative force accuracy = {format_g(self.estimated_accuracy / self.two_charge_force)}",
                f"  using {prec} precision {'cuFFT' if self.backend.is_gpu else 'NumPy FFT'}"]

    # -- box-dependent tables (LAMMPS' PPPM::setup) ----------------------------------------------
    def _setup_box(self, box_lengths, on_device=False):
        """Green's function, k-vectors and virial factors of the half spectrum for this box: on the
        host (then uploaded), or with ``on_device`` by the ``influence_ik`` kernel into the GPU's
        arrays (a barostat's new box: no allocation, no host work on the grid)."""
        self.box_lengths = np.asarray(box_lengths, dtype=np.float64).reshape(3)
        box = self.kbox = self._kspace_box(self.box_lengths)     # a slab's extended box
        self.volume = float(np.prod(box))
        nx, ny, nz = self.mesh
        m = float(nx * ny * nz)
        nxh = nx // 2 + 1
        self.delinv = np.array([nx, ny, nz], dtype=np.float64) / box
        self.delvolinv = float(np.prod(self.delinv))
        unitk = 2.0 * math.pi / box
        fk = [unitk[d] * _periodic_index(n) for d, n in enumerate(self.mesh)]
        # the potential gradient: i fk G rho(k) / M, the Nyquist planes left out (module docstring)
        deriv = []
        for d, n in enumerate(self.mesh):
            f = fk[d].copy()
            if n % 2 == 0:
                f[n // 2] = 0.0
            deriv.append(f)
        self._fk = (deriv[0][:nxh], deriv[1], deriv[2])
        energy_scale = 0.5 * self.volume / (m * m)
        if on_device:
            self._device_tables(energy_scale)
            return
        green = influence_function_ik(self.mesh, box, self.g_ewald, self.order, self.gf_b)  # (nz, ny, nx)
        green = green[:, :, :nxh]
        weight = np.full(nxh, 2.0)
        weight[0] = 1.0
        if nx % 2 == 0:
            weight[-1] = 1.0
        kz, ky, kx = np.meshgrid(fk[2], fk[1], fk[0][:nxh], indexing="ij")
        sqk = kx * kx + ky * ky + kz * kz
        with np.errstate(divide="ignore"):
            vterm = np.where(sqk > 0, -2.0 * (1.0 / np.where(sqk > 0, sqk, 1.0) + 0.25 / self.g_ewald ** 2), 0.0)
        nonzero = (sqk > 0).astype(np.float64)
        vg = np.stack([nonzero + vterm * kx * kx, nonzero + vterm * ky * ky, nonzero + vterm * kz * kz,
                       vterm * kx * ky, vterm * kx * kz, vterm * ky * kz])
        self._energy_weight = energy_scale * weight[None, None, :] * green   # (nz, ny, nxh)
        self._virial_weight = self._energy_weight[None] * vg                 # (6, nz, ny, nxh)
        self._green_scaled = green / m
        if self.backend.is_gpu:
            self._gpu_upload()

    def _device_tables(self, energy_scale):
        g = self._gpu_arrays
        nx, ny, nz = self.mesh
        mh = (nx // 2 + 1) * ny * nz
        for name, f in zip(("fkx", "fky", "fkz"), self._fk):
            g[name].set(f)
        nb = _alias_counts(self.mesh, self.kbox, self.g_ewald)
        self._gpu["influence_ik"](((mh + 255) // 256,), (256,), (
            np.int32(nx), np.int32(ny), np.int32(nz), np.int32(nb[0]), np.int32(nb[1]), np.int32(nb[2]),
            np.float64(self.kbox[0]), np.float64(self.kbox[1]), np.float64(self.kbox[2]),
            np.float64(self.g_ewald), g["gf_b"], np.float64(1.0 / (nx * ny * nz)), np.float64(energy_scale),
            g["green"], g["energy_weight"], g["virial_weight"]))

    # -- compute ----------------------------------------------------------------------------------
    def _follow_box(self, box) -> None:
        # LAMMPS' PPPM::setup: the same grid and g_ewald, the tables of the new box (on the device once there)
        self._setup_box(box, on_device=self.backend.is_gpu and self._gpu is not None)

    def compute(self, positions, charges, box_lengths, forces, with_energy):
        if not self._start_compute(box_lengths, with_energy):
            return
        if self.slab_flag == 2:          # kspace_modify slab nozforce: the k-space z forces left out
            z_before = forces[:, 2].copy()
        if self.backend.is_gpu:
            self._compute_gpu(positions, charges, forces, with_energy)
        else:
            self._compute_cpu(positions, charges, forces, with_energy)
        if self.slab_flag == 2:
            forces[:, 2] = z_before
        elif self.slab_flag == 1:
            self._slab_correction(positions, charges, forces, with_energy)

    def _finish_energy(self, e_sum: float, v_sum):
        qscale = self.qqrd2e
        self.energy = float(qscale * (e_sum - self._self_and_background()))
        self.virial = qscale * np.asarray(v_sum, dtype=np.float64)

    def _compute_cpu(self, positions, charges, forces, with_energy):
        x = np.ascontiguousarray(np.asarray(positions)[:, :3], dtype=np.float64)
        q = np.ascontiguousarray(charges, dtype=np.float64)
        nx, ny, nz = self.mesh
        shift, shiftone = _shifts(self.order)
        density = np.zeros((nz, ny, nx))
        make_rho_cpu(x, q, self.delinv, self.delvolinv, shift, shiftone, self.rho_coeff, density)
        self._sum_over_ranks(density)            # several ranks: each spread its own atoms (replicated grid)
        rho_k = np.fft.rfftn(density)
        if with_energy:
            power = rho_k.real ** 2 + rho_k.imag ** 2
            self._finish_energy(float((self._energy_weight * power).sum()),
                                (self._virial_weight * power[None]).sum(axis=(1, 2, 3)))
        phi_k = rho_k * self._green_scaled
        fx, fy, fz = self._fk
        gradient = np.empty((3, nz, ny, nx))
        # grad phi(k) = i fk phi(k); the unnormalised inverse (LAMMPS' backward FFT) is M * irfftn
        m = float(nx * ny * nz)
        gradient[0] = np.fft.irfftn(1j * fx[None, None, :] * phi_k, s=(nz, ny, nx), axes=(0, 1, 2)) * m
        gradient[1] = np.fft.irfftn(1j * fy[None, :, None] * phi_k, s=(nz, ny, nx), axes=(0, 1, 2)) * m
        gradient[2] = np.fft.irfftn(1j * fz[:, None, None] * phi_k, s=(nz, ny, nx), axes=(0, 1, 2)) * m
        fieldforce_cpu(x, q, self.delinv, shift, shiftone, self.rho_coeff, gradient, self.qqrd2e, forces)

    # -- GPU ------------------------------------------------------------------------------------
    def _gpu_upload(self):
        import cupy as cp

        g = self._gpu_arrays = getattr(self, "_gpu_arrays", None) or {}
        g["energy_weight"] = cp.asarray(self._energy_weight)
        g["virial_weight"] = cp.asarray(self._virial_weight.reshape(6, -1))
        g["green"] = cp.asarray(self._green_scaled)
        g["fkx"], g["fky"], g["fkz"] = (cp.asarray(f) for f in self._fk)
        g["rho_coeff"] = cp.asarray(self.rho_coeff)
        g["gf_b"] = cp.asarray(self.gf_b)

    def _gpu_prepare(self, positions, charges, forces):
        """Kernels for these array types, the grids and the cuFFT plans: once (first call)."""
        import cupy as cp
        from cupyx.scipy.fftpack import get_fft_plan

        from pycumd.precision import c_type_name

        for name, a in (("positions", positions), ("charges", charges), ("forces", forces)):
            if not a.flags.c_contiguous:
                raise ValueError(f"kspace_style pppm: the {name} array must be C-contiguous on the GPU")
        if charges.dtype != np.float64:
            raise ValueError(f"kspace_style pppm: charges must be float64, got {charges.dtype}")
        key = (positions.dtype.str, positions.shape[1], forces.dtype.str)
        if self._gpu is not None and self._gpu["key"] == key:
            return self._gpu
        nx, ny, nz = self.mesh
        nxh = nx // 2 + 1
        grid_t = c_type_name(self.grid_dtype)
        cplx = np.complex128 if self.grid_dtype == np.float64 else np.complex64
        defines = {"ORDER": self.order, "POS_T": c_type_name(positions.dtype), "POS_STRIDE": positions.shape[1],
                   "FORCE_T": c_type_name(forces.dtype), "GRID_T": grid_t}
        module = self.backend.kernel_module(SOURCE, defines, options=self.precision.cuda_options)
        fixed = cp.zeros((nz, ny, nx), dtype=cp.int64)
        density = cp.zeros((nz, ny, nx), dtype=self.grid_dtype)
        rho_k = cp.zeros((nz, ny, nxh), dtype=cplx)
        field_k = cp.zeros((3, nz, ny, nxh), dtype=cplx)
        # the three real fields in one allocation, each starting on a 512-byte boundary: cuFFT's C2R
        # output must be aligned (an odd mesh, e.g. 15^3 doubles, would leave the second one 8 bytes off)
        m = nx * ny * nz
        itemsize = np.dtype(self.grid_dtype).itemsize
        field_stride = -(-m * itemsize // 512) * 512 // itemsize
        field_flat = cp.zeros(3 * field_stride, dtype=self.grid_dtype)
        field = [field_flat[d * field_stride:d * field_stride + m].reshape(nz, ny, nx) for d in range(3)]
        plan_r2c = get_fft_plan(density, axes=(0, 1, 2), value_type="R2C")
        plan_c2r = get_fft_plan(field_k[0], shape=(nz, ny, nx), axes=(0, 1, 2), value_type="C2R")
        self._gpu = {"key": key, "make_rho": module.get_function("make_rho"),
                     "fixed_to_density": module.get_function("fixed_to_density"),
                     "poisson_ik": module.get_function("poisson_ik"),
                     "fieldforce_ik": module.get_function("fieldforce_ik"),
                     "influence_ik": module.get_function("influence_ik"),
                     "fixed": fixed, "density": density, "rho_k": rho_k, "field_k": field_k,
                     "field": field, "field_flat": field_flat, "field_stride": field_stride,
                     "plan_r2c": plan_r2c, "plan_c2r": plan_c2r}
        return self._gpu

    def _compute_gpu(self, positions, charges, forces, with_energy):
        if self.grid_comm is not None:
            raise NotImplementedError("kspace_style pppm over MPI ranks runs on the CPU only")
        import cupy as cp
        from cupy.cuda import cufft

        st = self._gpu_prepare(positions, charges, forces)
        arrays = self._gpu_arrays
        n = positions.shape[0]
        nx, ny, nz = self.mesh
        nxh = nx // 2 + 1
        shift, shiftone = _shifts(self.order)
        threads = 128
        atom_blocks = (max((n + threads - 1) // threads, 1),)
        st["fixed"].fill(0)
        st["make_rho"](atom_blocks, (threads,), (
            positions, charges, np.int32(n), np.int32(nx), np.int32(ny), np.int32(nz),
            np.float64(self.delinv[0]), np.float64(self.delinv[1]), np.float64(self.delinv[2]),
            np.float64(shift), np.float64(shiftone), arrays["rho_coeff"],
            np.float64(self.fixed_point_scale), st["fixed"]))
        m = nx * ny * nz
        st["fixed_to_density"](((m + 255) // 256,), (256,), (
            st["fixed"], np.int64(m), np.float64(self.delvolinv / self.fixed_point_scale), st["density"]))
        st["plan_r2c"].fft(st["density"], st["rho_k"], cufft.CUFFT_FORWARD)
        if with_energy:
            power = cp.abs(st["rho_k"]).astype(cp.float64) ** 2
            e_sum = float((arrays["energy_weight"] * power).sum())
            v_sum = cp.asnumpy(arrays["virial_weight"] @ power.reshape(-1))
            self._finish_energy(e_sum, v_sum)
        mh = nz * ny * nxh
        st["poisson_ik"](((mh + 255) // 256,), (256,), (
            st["rho_k"], arrays["green"], arrays["fkx"], arrays["fky"], arrays["fkz"],
            np.int32(nxh), np.int32(ny), np.int32(nz), st["field_k"]))
        for d in range(3):
            st["plan_c2r"].fft(st["field_k"][d], st["field"][d], cufft.CUFFT_INVERSE)
        st["fieldforce_ik"](atom_blocks, (threads,), (
            positions, charges, np.int32(n), np.int32(nx), np.int32(ny), np.int32(nz),
            np.float64(self.delinv[0]), np.float64(self.delinv[1]), np.float64(self.delinv[2]),
            np.float64(shift), np.float64(shiftone), arrays["rho_coeff"], st["field_flat"],
            np.int64(st["field_stride"]), np.float64(self.qqrd2e), forces,
            self.control if self.control is not None else np.uint64(0)))


# -- the pieces -------------------------------------------------------------------------------------
def _shifts(order: int):
    """LAMMPS' shift and shiftone: the nearest grid point (odd orders) or the one below (even)."""
    if order % 2:
        return OFFSET + 0.5, 0.0
    return float(OFFSET), 0.5


def _periodic_index(n: int) -> np.ndarray:
    """LAMMPS' ``i - n (2 i / n)`` (C division): 0, 1, ..., then the negative indices from n/2 on."""
    i = np.arange(n)
    return (i - n * ((2 * i) // n)).astype(np.float64)


def _next_factorable(n: int) -> int:
    """The smallest count >= n whose only prime factors are 2, 3 and 5 (LAMMPS' factorable)."""
    while True:
        m = n
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        if m == 1:
            return n
        n += 1


def rho_coefficients(order: int) -> np.ndarray:
    """Polynomial coefficients of the charge-assignment function, shape (order, order):
    ``W_k(d) = sum_l coeff[l, k] d^l`` for the stencil point ``k - (order-1)//2`` of a charge at
    distance d (grid units) from its reference point (LAMMPS' compute_rho_coeff)."""
    a = {(l, k): 0.0 for l in range(order) for k in range(-order, order + 1)}
    a[(0, 0)] = 1.0
    for j in range(1, order):
        for k in range(-j, j + 1, 2):
            s = 0.0
            for l in range(j):
                a[(l + 1, k)] = (a[(l, k + 1)] - a[(l, k - 1)]) / (l + 1)
                s += 0.5 ** (l + 1) * (a[(l, k - 1)] + (-1.0) ** l * a[(l, k + 1)]) / (l + 1)
            a[(0, k)] = s
    coeff = np.zeros((order, order))
    for m, k in enumerate(range(-(order - 1), order, 2)):
        for l in range(order):
            coeff[l, m] = a[(l, k)]
    return coeff


def gf_denominator_coefficients(order: int) -> np.ndarray:
    """Coefficients ``gf_b`` of the denominator ``[sum_m W(k + 2 pi m / h)^2]^2`` of the influence
    function as a polynomial in ``sin^2(k h / 2)`` (LAMMPS' compute_gf_denom)."""
    gf_b = np.zeros(order)
    gf_b[0] = 1.0
    for m in range(1, order):
        for l in range(m, 0, -1):
            gf_b[l] = 4.0 * (gf_b[l] * (l - m) * (l - m - 0.5) - gf_b[l - 1] * (l - m - 1) * (l - m - 1))
        gf_b[0] = 4.0 * (gf_b[0] * (-m) * (-m - 0.5))
    return gf_b / float(math.factorial(2 * order - 1))


def _powsinxx(x, n):
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.where(x == 0.0, 1.0, np.sin(x) / np.where(x == 0.0, 1.0, x))
    return y ** n


def _alias_counts(mesh, box_lengths, g_ewald):
    """LAMMPS' nbx, nby, nbz: the aliases |m| <= nb of the influence function's sums."""
    return [int((g_ewald * box_lengths[d] / (math.pi * mesh[d])) * (-math.log(EPS_HOC)) ** 0.25)
            for d in range(3)]


def influence_function_ik(mesh, box_lengths, g_ewald, order, gf_b) -> np.ndarray:
    """The optimal influence function G(k) of ik-differentiated PPPM, shape (nz, ny, nx), as LAMMPS'
    compute_gf_ik: ``4 pi / k^2 * sum_m (k.k_m / k_m^2) U(k_m)^2 exp(-k_m^2 / 4 g^2) / denominator``
    over the aliases ``k_m = k + 2 pi m / h`` (|m_d| <= nb_d), 0 at k = 0."""
    nx, ny, nz = mesh
    box = np.asarray(box_lengths, dtype=np.float64)
    unitk = 2.0 * math.pi / box
    per = [_periodic_index(n) for n in mesh]
    nb = _alias_counts(mesh, box, g_ewald)
    sn = [np.sin(0.5 * unitk[d] * per[d] * box[d] / mesh[d]) ** 2 for d in range(3)]
    den = []
    for d in range(3):
        s = np.zeros_like(sn[d])
        for l in range(order - 1, -1, -1):
            s = gf_b[l] + s * sn[d]
        den.append(s)
    denominator = (den[2][:, None, None] * den[1][None, :, None] * den[0][None, None, :]) ** 2
    k0 = [unitk[d] * per[d] for d in range(3)]
    sqk = k0[2][:, None, None] ** 2 + k0[1][None, :, None] ** 2 + k0[0][None, None, :] ** 2
    sum1 = np.zeros((nz, ny, nx))
    alias = []
    for d in range(3):
        rows = []
        for m in range(-nb[d], nb[d] + 1):
            q = unitk[d] * (per[d] + mesh[d] * m)
            s = np.exp(-0.25 * (q / g_ewald) ** 2)
            w = _powsinxx(0.5 * q * box[d] / mesh[d], 2 * order)
            rows.append((q, s * w))
        alias.append(rows)
    for qz, wz in alias[2]:
        for qy, wy in alias[1]:
            for qx, wx in alias[0]:
                dot1 = (k0[0][None, None, :] * qx[None, None, :] + k0[1][None, :, None] * qy[None, :, None]
                        + k0[2][:, None, None] * qz[:, None, None])
                dot2 = qx[None, None, :] ** 2 + qy[None, :, None] ** 2 + qz[:, None, None] ** 2
                with np.errstate(invalid="ignore", divide="ignore"):
                    term = dot1 / dot2
                sum1 += np.where(dot2 > 0, term, 0.0) * (wz[:, None, None] * wy[None, :, None] * wx[None, None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        green = np.where(sqk != 0.0, FOUR_PI_GF / np.where(sqk != 0.0, sqk, 1.0) * sum1 / denominator, 0.0)
    return green


@numba.njit(inline="always")
def _weights(d, coeff, out):
    order = coeff.shape[0]
    for k in range(order):
        r = 0.0
        for l in range(order - 1, -1, -1):
            r = coeff[l, k] + r * d
        out[k] = r


@numba.njit(cache=True)
def make_rho_cpu(x, q, delinv, delvolinv, shift, shiftone, coeff, density):
    """Charge assignment (serial: a fixed summation order): ``density[z, y, x] += q W W W / h^3``."""
    order = coeff.shape[0]
    nlower = -((order - 1) // 2)
    nz, ny, nx = density.shape
    wx = np.empty(order)
    wy = np.empty(order)
    wz = np.empty(order)
    for i in range(x.shape[0]):
        gx = int(x[i, 0] * delinv[0] + shift) - 16384
        gy = int(x[i, 1] * delinv[1] + shift) - 16384
        gz = int(x[i, 2] * delinv[2] + shift) - 16384
        _weights(gx + shiftone - x[i, 0] * delinv[0], coeff, wx)
        _weights(gy + shiftone - x[i, 1] * delinv[1], coeff, wy)
        _weights(gz + shiftone - x[i, 2] * delinv[2], coeff, wz)
        z0 = delvolinv * q[i]
        for n in range(order):
            mz = (gz + nlower + n) % nz
            y0 = z0 * wz[n]
            for m in range(order):
                my = (gy + nlower + m) % ny
                x0 = y0 * wy[m]
                for l in range(order):
                    mx = (gx + nlower + l) % nx
                    density[mz, my, mx] += x0 * wx[l]


@numba.njit(parallel=True, cache=True)
def fieldforce_cpu(x, q, delinv, shift, shiftone, coeff, field, qqrd2e, forces):
    """Interpolation of the potential gradient ``field`` (3, nz, ny, nx) to the charges:
    ``forces[i] -= qqrd2e q_i sum W W W grad phi``."""
    order = coeff.shape[0]
    nlower = -((order - 1) // 2)
    nz, ny, nx = field.shape[1], field.shape[2], field.shape[3]
    for i in numba.prange(x.shape[0]):
        wx = np.empty(order)
        wy = np.empty(order)
        wz = np.empty(order)
        gx = int(x[i, 0] * delinv[0] + shift) - 16384
        gy = int(x[i, 1] * delinv[1] + shift) - 16384
        gz = int(x[i, 2] * delinv[2] + shift) - 16384
        _weights(gx + shiftone - x[i, 0] * delinv[0], coeff, wx)
        _weights(gy + shiftone - x[i, 1] * delinv[1], coeff, wy)
        _weights(gz + shiftone - x[i, 2] * delinv[2], coeff, wz)
        ex = 0.0
        ey = 0.0
        ez = 0.0
        for n in range(order):
            mz = (gz + nlower + n) % nz
            z0 = wz[n]
            for m in range(order):
                my = (gy + nlower + m) % ny
                y0 = z0 * wy[m]
                for l in range(order):
                    mx = (gx + nlower + l) % nx
                    x0 = y0 * wx[l]
                    ex -= x0 * field[0, mz, my, mx]
                    ey -= x0 * field[1, mz, my, mx]
                    ez -= x0 * field[2, mz, my, mx]
        f = qqrd2e * q[i]
        forces[i, 0] += f * ex
        forces[i, 1] += f * ey
        forces[i, 2] += f * ez
