"""The multilevel summation (MSM) hierarchy shared by ``kspace_style msm`` and the potential maps.

One implementation, two uses: :mod:`pycumd.kspace.msm` (forces, energy and virial of a periodic
system, LAMMPS' ``kspace_style msm``) and :mod:`pycumd.potential_maps.msm` (the electrostatic
potential on a lattice).  Both split the Coulomb kernel with the even-powered softening of
LAMMPS (Hardy, Stone, Schulten, Parallel Computing 35 (2009) 164, Eq. 4)

    1/r = [1/r - g_a(r)] + [g_a - g_2a] + [g_2a - g_4a] + ... + g_{2^(L-1) a}(r),
    g_a(r) = gamma(r/a) / a,   gamma(rho) = sum_{n=0}^{s} C(-1/2, n) (rho^2 - 1)^n  (rho <= 1),
    gamma(rho) = 1/rho  (rho > 1),   s = order / 2

(the Taylor expansion of ``rho^-1`` about ``rho = 1``, truncated after ``s`` terms: C^s at
``rho = 1``; order 4 gives ``15/8 - 5/4 rho^2 + 3/8 rho^4``), and share:

* :func:`phi`, :func:`dphi`: the C1 piecewise-polynomial interpolation basis of degree
  ``order - 1`` (Hardy's thesis; order 4 is the cubic Catmull-Rom basis), nonzero for
  ``|t| < order/2``; kept as a table of polynomial coefficients per unit interval
  (:func:`basis_table`), which the Numba loops and the CUDA kernels (``kspace/msm.cu``) evaluate;
* :func:`anterpolate`: charges onto the finest grid (``order^3`` points per atom);
* :func:`restriction_matrix`: fine to coarse per dimension, ``R[n, m] = phi((m - r n) / r)`` with the
  coarsening ratio ``r`` (2, or 1 where a periodic dimension has reached one point), wrapped when
  periodic; prolongation is its transpose;
* :func:`level_kernel`: the lattice kernel ``g_{a_l} - g_{2 a_l}`` at grid offsets, and
  :func:`convolve`: its application to a grid by FFT (wrapped onto a periodic grid: every image);
* :func:`apply_axes`: a separable linear map applied along the three axes of a grid.

Grids are NumPy or CuPy float64 arrays indexed ``[z, y, x]``; only the particle-grid steps have
kernels of their own.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

#: LAMMPS' MSM orders (``kspace_modify order``)
ORDERS = (4, 6, 8, 10)
SOURCE = "kspace/msm.cu"


# -- the splitting ------------------------------------------------------------------------------
def split_coefficients(order: int) -> np.ndarray:
    """Coefficients ``c_k`` of ``gamma(rho) = sum_k c_k rho^(2k)`` (rho <= 1), k = 0..order/2."""
    _check_order(order)
    s = order // 2
    coef = [Fraction(0)] * (s + 1)
    for n in range(s + 1):
        binom = Fraction(1)
        for j in range(n):
            binom *= Fraction(-1, 2) - j
            binom /= j + 1
        # (rho^2 - 1)^n = sum_k C(n, k) rho^(2k) (-1)^(n-k)
        for k in range(n + 1):
            coef[k] += binom * math.comb(n, k) * (-1) ** (n - k)
    return np.array([float(c) for c in coef])


def gamma(rho, order: int = 4):
    """LAMMPS' softened ``1/rho`` (see module docstring), float64, any shape."""
    rho = np.asarray(rho, dtype=np.float64)
    c = split_coefficients(order)
    r2 = rho * rho
    inner = np.polynomial.polynomial.polyval(r2, c)
    with np.errstate(divide="ignore"):
        return np.where(rho <= 1.0, inner, 1.0 / np.where(rho == 0, 1.0, rho))


def dgamma(rho, order: int = 4):
    """``d gamma / d rho`` (float64, any shape)."""
    rho = np.asarray(rho, dtype=np.float64)
    c = split_coefficients(order)
    dc = np.array([2 * k * c[k] for k in range(1, len(c))])       # times rho^(2k-1)
    r2 = rho * rho
    inner = rho * np.polynomial.polynomial.polyval(r2, dc)
    with np.errstate(divide="ignore"):
        return np.where(rho <= 1.0, inner, -1.0 / np.where(rho == 0, 1.0, rho * rho))


def smooth(r, a: float, order: int = 4):
    """``g_a(r) = gamma(r/a)/a`` (1/length)."""
    return gamma(np.asarray(r, dtype=np.float64) / a, order) / a


# -- the interpolation basis --------------------------------------------------------------------
def _mul(*polys):
    """Product of polynomials given as lists of Fractions (ascending powers)."""
    out = [Fraction(1)]
    for p in polys:
        prod = [Fraction(0)] * (len(out) + len(p) - 1)
        for i, a in enumerate(out):
            for j, b in enumerate(p):
                prod[i + j] += a * b
        out = prod
    return out


def _pieces(order: int):
    """Per unit interval k (``k <= |t| <= k+1``) the basis in ``u = |t|``, exact rational
    coefficients (Hardy's thesis; Hardy, Stone, Schulten 2009, Eq. 7)."""
    F = Fraction

    def c_u(c):            # c - u
        return [F(c), F(-1)]

    def u_c(c):            # u - c
        return [F(-c), F(1)]

    def c_u2(c):           # c - u^2
        return [F(c), F(0), F(-1)]

    def quad(a, b, c):     # a + b u + c u^2
        return [F(a), F(b), F(c)]

    def scaled(p, factor):
        return [F(factor) * v for v in p]

    if order == 4:
        return [_mul(c_u(1), quad(1, 1, F(-3, 2))),
                scaled(_mul(u_c(1), c_u(2), c_u(2)), F(-1, 2))]
    if order == 6:
        return [scaled(_mul(c_u2(1), c_u(2), quad(6, 3, -5)), F(1, 12)),
                scaled(_mul(u_c(1), c_u(2), c_u(3), quad(4, 9, -5)), F(-1, 24)),
                scaled(_mul(u_c(1), u_c(2), c_u(3), c_u(3), c_u(4)), F(1, 24))]
    if order == 8:
        return [scaled(_mul(c_u2(1), c_u2(4), c_u(3), quad(12, 4, -7)), F(1, 144)),
                scaled(_mul(c_u2(1), c_u(2), c_u(3), c_u(4), quad(10, 12, -7)), F(1, 240)),
                scaled(_mul(u_c(1), u_c(2), c_u(3), c_u(4), c_u(5), quad(6, 20, -7)), F(1, 720)),
                scaled(_mul(u_c(1), u_c(2), u_c(3), c_u(4), c_u(4), c_u(5), c_u(6)), F(-1, 720))]
    return [scaled(_mul(c_u2(1), c_u2(4), c_u2(9), c_u(4), quad(20, 5, -9)), F(1, 2880)),
            scaled(_mul(c_u2(1), c_u2(4), c_u(3), c_u(4), c_u(5), quad(6, 5, -3)), F(1, 1440)),
            scaled(_mul(c_u2(1), u_c(2), c_u(3), c_u(4), c_u(5), c_u(6), quad(14, 25, -9)), F(-1, 10080)),
            scaled(_mul(u_c(1), u_c(2), u_c(3), c_u(4), c_u(5), c_u(6), c_u(7), quad(8, 35, -9)), F(-1, 40320)),
            scaled(_mul(u_c(1), u_c(2), u_c(3), u_c(4), c_u(5), c_u(5), c_u(6), c_u(7), c_u(8)), F(1, 40320))]


def _shift(poly, k: int):
    """Coefficients of ``p(v + k)`` in ``v`` (exact)."""
    out = [Fraction(0)] * len(poly)
    for n, c in enumerate(poly):
        for j in range(n + 1):
            out[j] += c * math.comb(n, j) * k ** (n - j)
    return out


_TABLES: dict = {}


def basis_table(order: int) -> np.ndarray:
    """(order/2, order) float64: row k holds the coefficients (ascending powers of ``v = |t| - k``) of
    the basis on ``k <= |t| <= k + 1`` (expanded exactly about the interval's start)."""
    _check_order(order)
    if order not in _TABLES:
        table = np.zeros((order // 2, order))
        for k, p in enumerate(_pieces(order)):
            c = _shift(p, k)
            table[k, :len(c)] = [float(v) for v in c]
        _TABLES[order] = table
    return _TABLES[order]


@numba.njit(cache=True)
def _phi_dphi(t, table):
    """Basis value and derivative at ``t`` from its coefficient table."""
    u = abs(t)
    half = table.shape[0]
    if u >= half:
        return 0.0, 0.0
    k = int(u)
    row = table[k]
    v = u - k
    value = 0.0
    deriv = 0.0
    for j in range(row.shape[0] - 1, -1, -1):
        deriv = deriv * v + value
        value = value * v + row[j]
    return value, (deriv if t >= 0.0 else -deriv)


@numba.njit(cache=True)
def _phi_array(t, table, out_value, out_deriv):
    flat = t.ravel()
    for i in range(flat.shape[0]):
        out_value.flat[i], out_deriv.flat[i] = _phi_dphi(flat[i], table)


def phi(t, order: int = 4):
    """The interpolation basis ``Phi(t)`` of the order (float64, shape of ``t``)."""
    t = np.ascontiguousarray(np.asarray(t, dtype=np.float64))
    value, deriv = np.empty_like(t), np.empty_like(t)
    _phi_array(t, basis_table(order), value, deriv)
    return value


def dphi(t, order: int = 4):
    """``d Phi / d t`` (float64, shape of ``t``)."""
    t = np.ascontiguousarray(np.asarray(t, dtype=np.float64))
    value, deriv = np.empty_like(t), np.empty_like(t)
    _phi_array(t, basis_table(order), value, deriv)
    return deriv


def stencil_start(order: int) -> int:
    """Offset of an atom's first grid point from ``floor(s)`` (LAMMPS' ``nlower``, ``-(order-1)/2``
    rounded towards zero): the atom at grid coordinate ``s`` touches ``floor(s) + nlower + 0..order-1``."""
    return -((order - 1) // 2)


# -- particles <-> the finest grid --------------------------------------------------------------
@numba.njit(cache=True)
def _weights(s, order, table, w, dw):
    base = int(math.floor(s)) - ((order - 1) // 2)
    for i in range(order):
        w[i], dw[i] = _phi_dphi((base + i) - s, table)
    return base


@numba.njit(cache=True)
def _anterpolate_cpu(x, q, lo, shape, h, periodic, order, table, grid):
    wx = np.empty(order)
    wy = np.empty(order)
    wz = np.empty(order)
    dw = np.empty(order)
    for a in range(x.shape[0]):
        bx = _weights(x[a, 0] / h[0], order, table, wx, dw) - lo[0]
        by = _weights(x[a, 1] / h[1], order, table, wy, dw) - lo[1]
        bz = _weights(x[a, 2] / h[2], order, table, wz, dw) - lo[2]
        for k in range(order):
            iz = bz + k
            if periodic:
                iz %= shape[2]
            qz = q[a] * wz[k]
            for j in range(order):
                iy = by + j
                if periodic:
                    iy %= shape[1]
                qzy = qz * wy[j]
                for i in range(order):
                    ix = bx + i
                    if periodic:
                        ix %= shape[0]
                    grid[iz, iy, ix] += qzy * wx[i]


@numba.njit(cache=True)
def _field_cpu(x, lo, shape, h, periodic, order, table, grid, field):
    wx = np.empty(order)
    wy = np.empty(order)
    wz = np.empty(order)
    dx = np.empty(order)
    dy = np.empty(order)
    dz = np.empty(order)
    for a in range(x.shape[0]):
        bx = _weights(x[a, 0] / h[0], order, table, wx, dx) - lo[0]
        by = _weights(x[a, 1] / h[1], order, table, wy, dy) - lo[1]
        bz = _weights(x[a, 2] / h[2], order, table, wz, dz) - lo[2]
        ex = 0.0
        ey = 0.0
        ez = 0.0
        for k in range(order):
            iz = bz + k
            if periodic:
                iz %= shape[2]
            for j in range(order):
                iy = by + j
                if periodic:
                    iy %= shape[1]
                for i in range(order):
                    ix = bx + i
                    if periodic:
                        ix %= shape[0]
                    e = grid[iz, iy, ix]
                    ex += dx[i] * wy[j] * wz[k] * e
                    ey += wx[i] * dy[j] * wz[k] * e
                    ez += wx[i] * wy[j] * dz[k] * e
        # d/dx of Phi(m - x/h) is -Phi'(m - s)/h: the field -grad phi is +sum Phi' e / h
        field[a, 0] = ex / h[0]
        field[a, 1] = ey / h[1]
        field[a, 2] = ez / h[2]


def _launch_args(backend, x, q, lo, shape, h, periodic, order):
    cp = backend.xp
    n = int(x.shape[0])
    stride = int(x.shape[1])
    qq = q if q is not None else cp.zeros(1)
    return n, (x, np.int32(stride), qq, np.int32(0 if q is None else 1), np.int32(n),
               *(np.int32(v) for v in shape), *(np.int32(v) for v in lo),
               *(np.float64(v) for v in h), np.int32(bool(periodic)), np.int32(order),
               cp.asarray(basis_table(order)))


def anterpolate(backend, x, q, lo, shape, h, periodic: bool, order: int):
    """Finest-grid charges, float64 array (Mz, My, Mx) of the backend.

    Parameters
    ----------
    x : backend float64 array, shape (N, >= 3), C-contiguous
        Positions relative to the grid's origin (length units); with ``q`` None the fourth
        column holds the charges.
    q : backend float64 array, shape (N,), or None
    lo : (3,) int
        Absolute index of grid point 0 per dimension (0 for a periodic grid).
    shape : (3,) int
        Grid points per dimension (x, y, z).
    h : (3,) float
        Grid spacing per dimension (length units); grid point ``m`` sits at ``m h``.
    """
    lo = np.asarray(lo, dtype=np.int64)
    shape = np.asarray(shape, dtype=np.int64)
    h = np.asarray(h, dtype=np.float64)
    if not backend.is_gpu:
        grid = np.zeros(tuple(int(v) for v in shape[::-1]))
        qq = x[:, 3] if q is None else q
        _anterpolate_cpu(np.ascontiguousarray(x[:, :3]), np.ascontiguousarray(qq), lo, shape, h,
                         bool(periodic), int(order), basis_table(order), grid)
        return grid
    cp = backend.xp
    grid = cp.zeros(tuple(int(v) for v in shape[::-1]))
    n, args = _launch_args(backend, x, q, lo, shape, h, periodic, order)
    if n:
        backend.kernel_module(SOURCE).get_function("msm_anterpolate")(
            (-(-n // 128),), (128,), args[:5] + (grid,) + args[5:])
    return grid


def interpolate_field(backend, x, lo, shape, h, periodic: bool, order: int, grid):
    """``-grad`` of the finest-grid potential ``grid`` interpolated to the positions: float64
    (N, 3) array of the backend (potential units per length)."""
    lo = np.asarray(lo, dtype=np.int64)
    shape = np.asarray(shape, dtype=np.int64)
    h = np.asarray(h, dtype=np.float64)
    if not backend.is_gpu:
        field = np.zeros((x.shape[0], 3))
        _field_cpu(np.ascontiguousarray(x[:, :3]), lo, shape, h, bool(periodic), int(order),
                   basis_table(order), np.ascontiguousarray(grid), field)
        return field
    cp = backend.xp
    field = cp.zeros((int(x.shape[0]), 3))
    n, args = _launch_args(backend, x, None, lo, shape, h, periodic, order)
    if n:
        backend.kernel_module(SOURCE).get_function("msm_field")(
            (-(-n // 128),), (128,), args[:1] + args[1:2] + args[4:5] + (cp.ascontiguousarray(grid),)
            + args[5:] + (field,))
    return field


# -- grid to grid -------------------------------------------------------------------------------
def restriction_matrix(fine_lo: int, fine_size: int, coarse_lo: int, coarse_size: int, periodic: bool,
                       order: int = 4, ratio: int = 2) -> np.ndarray:
    """(coarse_size, fine_size) weights ``R[n, m] = Phi((m_abs - ratio n_abs) / ratio)`` over the
    fine points ``ratio n_abs + nu``, ``nu`` = 0 or odd with ``|nu| <= order - 1`` (LAMMPS'
    restriction stencil), wrapped when periodic; the prolongation is ``R.T``."""
    p = order - 1
    nus = [nu for nu in range(-p, p + 1) if nu == 0 or nu % 2]
    weights = phi(np.array(nus, dtype=np.float64) / ratio, order)
    r = np.zeros((coarse_size, fine_size))
    for n in range(coarse_size):
        for nu, w in zip(nus, weights):
            m = ratio * (coarse_lo + n) + nu - fine_lo
            if periodic:
                r[n, m % fine_size] += w
            elif 0 <= m < fine_size:
                r[n, m] += w
    return r


def apply_axes(xp, mats, grid):
    """``out[z, y, x] = sum mats[0][x, a] mats[1][y, b] mats[2][z, c] grid[c, b, a]``."""
    out = xp.tensordot(grid, xp.asarray(mats[0]), axes=([2], [1]))           # (c, b, x)
    out = xp.tensordot(out, xp.asarray(mats[1]), axes=([1], [1]))            # (c, x, y)
    out = xp.tensordot(out, xp.asarray(mats[2]), axes=([0], [1]))            # (x, y, z)
    return xp.ascontiguousarray(out.transpose(2, 1, 0))


def offsets(radius, h):
    """Offset vectors ``k h`` for ``k`` in ``[-R, R]`` per dimension: three arrays (x, y, z) of
    shape (2R_x+1, 2R_y+1, 2R_z+1) (length units)."""
    axes = [np.arange(-r, r + 1) * hd for r, hd in zip(radius, h)]
    return np.meshgrid(*axes, indexing="ij")


def offset_lengths(radius, h):
    """``|k h|`` at the offsets of :func:`offsets` (length units)."""
    dx, dy, dz = offsets(radius, h)
    return np.sqrt(dx * dx + dy * dy + dz * dz)


def level_kernel(radius, h, a_level: float, order: int = 4) -> np.ndarray:
    """``g_{a_l}(r) - g_{2 a_l}(r)`` at the offsets of :func:`offsets` (x, y, z indexed), 1/length."""
    r = offset_lengths(radius, h)
    return smooth(r, a_level, order) - smooth(r, 2.0 * a_level, order)


def level_virial_kernels(radius, h, a_level: float, order: int = 4, top: bool = False) -> np.ndarray:
    """(6, ...) ``-dK/dr x_a x_b / r`` of the level kernel at the offsets (xx, yy, zz, xy, xz, yz),
    LAMMPS' ``get_virial_direct`` (``top``: of ``g_{a_l}`` alone, ``get_virial_direct_top``); zero at
    the origin (1/length)."""
    dx, dy, dz = offsets(radius, h)
    r = np.sqrt(dx * dx + dy * dy + dz * dz)
    rs = np.where(r > 0, r, 1.0)
    dk = dgamma(r / a_level, order) / a_level ** 2
    if not top:
        dk = dk - dgamma(r / (2 * a_level), order) / (4 * a_level ** 2)
    dg = np.where(r > 0, -dk / rs, 0.0)
    return np.stack([dg * dx * dx, dg * dy * dy, dg * dz * dz, dg * dx * dy, dg * dx * dz, dg * dy * dz])


def wrap_kernel(kernel: np.ndarray, shape) -> np.ndarray:
    """Fold a centred (2R+1)^3 kernel (x, y, z indexed) onto a periodic grid of ``shape`` (x, y, z):
    every offset adds to its index modulo the grid (all images within the radius)."""
    radius = [(n - 1) // 2 for n in kernel.shape]
    wrapped = np.zeros(tuple(int(m) for m in shape))
    idx = [(np.arange(n) - r) % int(m) for n, r, m in zip(kernel.shape, radius, shape)]
    for i, ix in enumerate(idx[0]):
        partial = np.zeros((int(shape[1]), int(shape[2])))
        np.add.at(partial, (idx[1][:, None], idx[2][None, :]), kernel[i])
        wrapped[ix] += partial
    return wrapped


class KernelFFT:
    """A centred symmetric kernel (x, y, z indexed, (2R+1)^3) transformed once for grids of ``shape``
    (x, y, z): folded onto a periodic grid, or zero-padded to ``shape + 2R``; :meth:`apply` is then
    :func:`convolve` with two FFTs."""

    def __init__(self, xp, kernel: np.ndarray, shape, periodic: bool):
        self.shape = tuple(int(m) for m in shape)
        self.periodic = bool(periodic)
        self.radius = [(n - 1) // 2 for n in kernel.shape]
        if self.periodic:
            self.size = self.shape
            self.fk = xp.fft.rfftn(xp.asarray(wrap_kernel(kernel, self.shape)))
        else:
            self.size = tuple(m + 2 * r for m, r in zip(self.shape, self.radius))
            self.fk = xp.fft.rfftn(xp.asarray(kernel), s=self.size, axes=(0, 1, 2))

    def apply(self, xp, q):
        """``e[m] = sum_k kernel[k] q[m + k]`` for a grid ``q`` of :attr:`shape` (x, y, z indexed)."""
        full = xp.fft.irfftn(xp.fft.rfftn(q, s=self.size, axes=(0, 1, 2)) * self.fk, s=self.size, axes=(0, 1, 2))
        if self.periodic:
            return full
        r, m = self.radius, self.shape
        return full[r[0]:r[0] + m[0], r[1]:r[1] + m[1], r[2]:r[2] + m[2]]


def convolve(xp, q, kernel, periodic: bool):
    """``e[m] = sum_k kernel[k] q[m + k]`` over the centred (2R+1)^3 ``kernel`` (symmetric), by FFT;
    ``q`` and the result are x, y, z indexed (a one-off :class:`KernelFFT`)."""
    return KernelFFT(xp, kernel, q.shape, periodic).apply(xp, q)


def _check_order(order: int) -> None:
    if order not in ORDERS:
        raise ValueError(f"MSM order must be 4, 6, 8 or 10, got {order!r}")
