"""LAMMPS' ``kspace_style ewald``: the reciprocal-space Ewald sum over explicit k-vectors.

With the structure factor ``S(k) = sum_j q_j exp(i k.r_j)`` over the k-vectors of one half space
(``k = 2 pi (l/Lx, m/Ly, n/Lz)``, ``|k|^2 <= gsqmx``),

    E = qqrd2e [ sum_k u_k |S(k)|^2 - g/sqrt(pi) sum q^2 - pi (sum q)^2 / (2 g^2 V) ],
    u_k = (4 pi / V) exp(-k^2 / (4 g^2)) / k^2,
    F_i = qqrd2e q_i sum_k 2 k u_k [sin(k.r_i) Re S(k) - cos(k.r_i) Im S(k)],
    W_ab = qqrd2e sum_k u_k |S(k)|^2 (delta_ab - 2 (1/k^2 + 1/(4 g^2)) k_a k_b).

The cut ``kxmax, kymax, kzmax`` is LAMMPS' (Ewald::setup): in each direction the smallest count whose
estimated RMS force error ``2 q2 g / L sqrt(1 / (pi k N)) exp(-pi^2 k^2 / (g L)^2)`` is within the
accuracy, and ``gsqmx`` the largest of ``(2 pi kmax_d / L_d)^2`` (times 1.00001).  Float64 on either
backend (NumPy or CuPy arrays, the same vectorised code); the reference of the tests.
"""

from __future__ import annotations

import math

import numpy as np

from pycumd.kspace.accuracy import format_g, initial_g_ewald, real_space_error, table_error, table_line
from pycumd.kspace.base import KSpaceSolver

#: k-vectors x atoms per block of the vectorised sums (memory: 3 arrays of this many float64)
_BLOCK = 1 << 21


class Ewald(KSpaceSolver):
    """Standard Ewald k-space sum (see module docstring).  After :meth:`setup`: ``kxmax, kymax,
    kzmax``, ``kcount`` (k-vectors used, one half space), ``kvectors`` (kcount, 3) in 1/length."""

    name = "ewald"

    def setup(self, box_lengths, charges, r_cut_coul, qqrd2e, backend, precision, units_name, *,
              table_bits=12, dielectric=1.0):
        self._common_setup(box_lengths, charges, r_cut_coul, qqrd2e, units_name, table_bits, dielectric)
        self.backend = backend
        if self.gewald_requested:
            self.g_ewald = self.gewald_requested
        else:
            self.g_ewald = initial_g_ewald(self.accuracy, self.natoms, self.r_cut, self.box_lengths, self.q2)
        self._setup_box(self.box_lengths)

    def _setup_box(self, box_lengths):
        """LAMMPS' Ewald::setup: the k-vector cut and coefficients of this box (g_ewald kept)."""
        self.box_lengths = np.asarray(box_lengths, dtype=np.float64).reshape(3)
        self.kbox = self._kspace_box(self.box_lengths)
        self.volume = float(np.prod(self.kbox))
        kmaxes = [self._kmax_for(L) for L in self.kbox]
        self.kxmax, self.kymax, self.kzmax = kmaxes
        self.kmax = max(kmaxes)
        self.kmax3d = 4 * self.kmax ** 3 + 6 * self.kmax ** 2 + 3 * self.kmax
        unitk = 2.0 * math.pi / self.kbox
        self.gsqmx = max((unitk[d] * kmaxes[d]) ** 2 for d in range(3)) * 1.00001
        integer_k = _half_space_kvectors(kmaxes, self.kmax, unitk, self.gsqmx)
        k = integer_k * unitk
        sqk = np.einsum("ij,ij->i", k, k)
        self.kcount = len(k)
        g2inv = 1.0 / (self.g_ewald * self.g_ewald)
        ug = (4.0 * math.pi / self.volume) * np.exp(-0.25 * sqk * g2inv) / sqk
        vterm = -2.0 * (1.0 / sqk + 0.25 * g2inv)
        vg = np.empty((self.kcount, 6))
        for j, (a, b) in enumerate(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))):
            vg[:, j] = (1.0 if a == b else 0.0) + vterm * k[:, a] * k[:, b]
        self.kvectors = k
        xp = self.backend.xp
        self._k = xp.asarray(k)
        self._ug = xp.asarray(ug)
        self._eg = xp.asarray(2.0 * k * ug[:, None])
        self._vg = xp.asarray(vg)

    def _kmax_for(self, length: float) -> int:
        km = 1
        while self._rms(km, length) > self.accuracy:
            km += 1
        return km

    def _rms(self, km: int, length: float) -> float:
        """LAMMPS' Ewald::rms: the RMS force error of cutting direction ``length`` at ``km``."""
        natoms = max(self.natoms, 1)
        g = self.g_ewald
        return (2.0 * self.q2 * g / length * math.sqrt(1.0 / (math.pi * km * natoms))
                * math.exp(-math.pi ** 2 * km * km / (g * g * length * length)))

    def estimated_accuracy(self) -> float:
        """LAMMPS' final estimate of the absolute RMS force error (force units)."""
        lpr = math.sqrt(sum(self._rms(km, L) ** 2 for km, L in
                            zip((self.kxmax, self.kymax, self.kzmax), self.kbox)) / 3.0)
        # LAMMPS' Ewald::init takes the extended volume of a slab here (PPPM the box's own)
        spr = real_space_error(self.g_ewald, self.natoms, self.r_cut, self.kbox, self.q2)
        tpr = table_error(self.natoms, self.r_cut, self.kbox, self.q2, self.table_bits)
        return math.sqrt(lpr * lpr + spr * spr + tpr * tpr)

    def compute(self, positions, charges, box_lengths, forces, with_energy):
        if not self._start_compute(box_lengths, with_energy):
            return
        xp = self.backend.xp
        x = positions[:, :3].astype(xp.float64)
        q = charges.astype(xp.float64)
        n = x.shape[0]
        block = max(1, _BLOCK // max(n, 1))
        sfac_re = xp.empty(self.kcount)
        sfac_im = xp.empty(self.kcount)
        for start in range(0, self.kcount, block):
            phase = x @ self._k[start:start + block].T            # (N, kb)
            sfac_re[start:start + block] = q @ xp.cos(phase)
            sfac_im[start:start + block] = q @ xp.sin(phase)
        if self.grid_comm is not None:      # this rank's atoms' partial sums: the whole system's
            if self.backend.is_gpu:
                raise NotImplementedError("kspace_style ewald over MPI ranks runs on the CPU only")
            sfac = self._sum_over_ranks(np.concatenate([sfac_re, sfac_im]))
            sfac_re, sfac_im = sfac[:self.kcount].copy(), sfac[self.kcount:].copy()
        field = xp.zeros((n, 3))
        for start in range(0, self.kcount, block):
            sl = slice(start, start + block)
            phase = x @ self._k[sl].T
            partial = xp.sin(phase) * sfac_re[sl] - xp.cos(phase) * sfac_im[sl]
            field += partial @ self._eg[sl]
        qscale = self.qqrd2e
        if self.slab_flag == 2:          # kspace_modify slab nozforce: no k-space z forces
            field[:, 2] = 0.0
        forces += (qscale * q)[:, None] * field
        if with_energy:
            uk = self._ug * (sfac_re * sfac_re + sfac_im * sfac_im)
            self.energy = float(qscale * (float(uk.sum()) - self._self_and_background()))
            self.virial = qscale * np.asarray(self.backend.to_host(uk @ self._vg), dtype=np.float64)
        if self.slab_flag == 1:
            self._slab_correction(positions, charges, forces, with_energy)

    def describe(self):
        acc = self.estimated_accuracy()
        return [table_line(self.table_bits),
                f"  G vector (1/distance) = {format_g(self.g_ewald)}",
                f"  estimated absolute RMS force accuracy = {format_g(acc)}",
                f"  estimated relative force accuracy = {format_g(acc / self.two_charge_force)}",
                f"  KSpace vectors: actual max1d max3d = {self.kcount} {self.kmax} {self.kmax3d}",
                f"                  kxmax kymax kzmax  = {self.kxmax} {self.kymax} {self.kzmax}"]


def _half_space_kvectors(kmaxes, kmax, unitk, gsqmx) -> np.ndarray:
    """Integer k-vectors (n, 3) of LAMMPS' Ewald::coeffs: one of each +-k pair, |k|^2 <= gsqmx;
    a vector along an axis up to ``kmax``, the others within ``kxmax, kymax, kzmax``."""
    kx, ky, kz = kmaxes
    grid = np.stack(np.meshgrid(np.arange(-kx, kx + 1), np.arange(-ky, ky + 1), np.arange(-kz, kz + 1),
                                indexing="ij"), axis=-1).reshape(-1, 3)
    nonzero = (grid != 0).sum(axis=1)
    half = (grid[:, 0] > 0) | ((grid[:, 0] == 0) & (grid[:, 1] > 0)) | \
           ((grid[:, 0] == 0) & (grid[:, 1] == 0) & (grid[:, 2] > 0))
    keep = half & (nonzero >= 2)
    axes = []
    for d in range(3):
        m = np.arange(1, kmax + 1)
        v = np.zeros((kmax, 3), dtype=np.int64)
        v[:, d] = m
        axes.append(v)
    cand = np.concatenate(axes + [grid[keep]])
    sqk = ((cand * unitk) ** 2).sum(axis=1)
    return cand[sqk <= gsqmx].astype(np.float64)
