"""Composite (float-float) arithmetic on the CPU: Numba scalar functions and NumPy arrays.

A composite number is an unevaluated sum of two float32 values ``x = hi + lo``, kept
normalised (``hi == RN(hi + lo)``, so ``|lo| <= ulp(hi)/2``).  It carries about 48
significant bits with the exponent range of float32.  The algorithms, their equations and
their error bounds are documented once, in ``float_float.cuh`` (the CUDA version) and in
``docs/precision.md``; this module computes the *same roundings in the same order*, so its
results are bit-identical to the GPU's.

Two forms are provided:

* Scalar functions compiled by Numba (``njit``, explicit float32 signatures, IEEE division
  semantics, no ``fastmath``), for use inside other ``njit`` code.  A composite number is a
  2-tuple ``(hi, lo)`` of float32: ``two_sum``, ``fast_two_sum``, ``two_prod``, ``ff_add``,
  ``ff_sub``, ``ff_add_f``, ``ff_mul``, ``ff_mul_f``, ``ff_div``, ``ff_neg``,
  ``ff_from_float``, ``ff_from_double``, ``ff_to_double``.
* Vectorised NumPy functions with the suffix ``_array``.  A composite array is a float32
  array of shape ``(..., 2)`` whose last axis is ``(hi, lo)`` -- the memory layout of the CUDA
  ``struct ff``, so the same buffer can be copied to the GPU and back.

Why the CPU never fuses or reorders these operations
----------------------------------------------------
NumPy applies one correctly rounded IEEE operation per ufunc call, so nothing can be fused
across calls.  Numba emits LLVM ``fadd``/``fmul``/``fdiv`` instructions *without* fast-math
flags unless ``fastmath=True`` is asked for; without the ``contract`` and ``reassoc`` flags
LLVM may neither fuse a multiply and an add into an FMA nor reassociate, so the
error-free transformations survive compilation (``tests/test_composite.py`` checks the
machine code and checks the transformations against exact rational arithmetic).

The float32 FMA of ``two_prod``
-------------------------------
The GPU computes the product error with one FMA, ``fma.rn.f32(a, b, -p)``.  NumPy and Python 3.11 have no
float32 FMA, but none is needed: ``a`` and ``b`` carry 24 significant bits each, so their
exact product carries at most 48 bits and is *exactly* representable in float64 (53 bits;
the float64 exponent range also covers every float32 product, subnormals included).  Hence

* ``p = float32(float64(a) * float64(b))`` is ``RN32(a*b)`` (one rounding of the exact value);
* ``float64(a) * float64(b) - float64(p)`` is exact in float64 (both are multiples of the
  product's last bit and differ by at most ``ulp32(p)/2``, which needs at most 24 + 1 bits);
* rounding that exact difference to float32 is exactly what the FMA does: ``RN32(a*b - p)``.

So the emulation equals the GPU's FMA bit for bit, underflow and overflow included (the
CUDA side uses inline PTX, which keeps subnormals even though CuPy compiles with -ftz=true).
(A *general* float32 FMA ``RN32(a*b + c)`` could not be emulated this way -- the float64 sum
would round twice -- which is why ``ff_mul`` uses JMP's Algorithm 10, whose only FMA is the
one inside ``two_prod``.)
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

__all__ = [
    "two_sum",
    "fast_two_sum",
    "two_prod",
    "ff_add",
    "ff_sub",
    "ff_add_f",
    "ff_mul",
    "ff_mul_f",
    "ff_div",
    "ff_neg",
    "ff_from_float",
    "ff_from_double",
    "ff_to_double",
    "two_sum_array",
    "fast_two_sum_array",
    "two_prod_array",
    "ff_add_array",
    "ff_sub_array",
    "ff_add_f_array",
    "ff_mul_array",
    "ff_mul_f_array",
    "ff_div_array",
    "ff_from_double_array",
    "ff_to_double_array",
    "ff_array",
    "UNIT_ROUNDOFF",
    "ERROR_BOUNDS",
]

UNIT_ROUNDOFF = 2.0**-24
"""u: the unit roundoff of float32 (round to nearest)."""

_U2 = UNIT_ROUNDOFF**2
ERROR_BOUNDS = {
    "ff_add": 3 * _U2 / (1 - 4 * UNIT_ROUNDOFF),
    "ff_sub": 3 * _U2 / (1 - 4 * UNIT_ROUNDOFF),
    "ff_add_f": 2 * _U2,
    "ff_mul": 8 * _U2 * (1 + 8 * UNIT_ROUNDOFF),
    "ff_mul_f": 3 * _U2 * (1 + 4 * UNIT_ROUNDOFF),
    "ff_div": 13 * _U2 * (1 + 16 * UNIT_ROUNDOFF),
}
"""Relative error bounds claimed for each operation (see ``docs/precision.md``), valid for
normalised inputs without overflow, and for ``ff_mul``, ``ff_mul_f`` and ``ff_div`` without
underflow of the result's low part (``|result| >= 2^-78``)."""

_f32 = types.float32
_f64 = types.float64
_FF = types.UniTuple(_f32, 2)
_jit = dict(cache=True, error_model="numpy", fastmath=False, nogil=True)


# ----------------------------------------------------------------------------- scalar (Numba)


@njit(_FF(_f32, _f32), **_jit)
def two_sum(a, b):
    """TwoSum (Knuth): ``(s, e)`` with ``s = RN(a + b)`` and ``s + e == a + b`` exactly.

    Parameters
    ----------
    a, b : float32

    Returns
    -------
    (float32, float32)
    """
    s = a + b
    bb = s - a
    aa = s - bb
    e = (a - aa) + (b - bb)
    return s, e


@njit(_FF(_f32, _f32), **_jit)
def fast_two_sum(a, b):
    """Fast2Sum (Dekker): ``(s, e)``, ``s + e == a + b`` exactly when ``|a| >= |b|`` (or a == 0)."""
    s = a + b
    z = s - a
    e = b - z
    return s, e


@njit(_FF(_f32, _f32), **_jit)
def two_prod(a, b):
    """TwoProd: ``(p, e)`` with ``p = RN(a*b)`` and ``p + e == a*b`` exactly (no under/overflow).

    The FMA ``RN(a*b - p)`` is emulated exactly through float64 (see the module docstring).
    """
    exact = np.float64(a) * np.float64(b)
    p = np.float32(exact)
    e = np.float32(exact - np.float64(p))
    return p, e


@njit(_FF(_FF), **_jit)
def ff_neg(x):
    """``-x`` (exact)."""
    return -x[0], -x[1]


@njit(_FF(_f32), **_jit)
def ff_from_float(a):
    """The composite number ``(a, 0)``."""
    return a, np.float32(0.0)


@njit(_FF(_FF, _FF), **_jit)
def ff_add(x, y):
    """``x + y`` (AccurateDWPlusDW), relative error <= 3u^2/(1-4u)."""
    sh, sl = two_sum(x[0], y[0])
    th, tl = two_sum(x[1], y[1])
    c = sl + th
    vh, vl = fast_two_sum(sh, c)
    w = tl + vl
    return fast_two_sum(vh, w)


@njit(_FF(_FF, _FF), **_jit)
def ff_sub(x, y):
    """``x - y = x + (-y)``, relative error <= 3u^2/(1-4u)."""
    return ff_add(x, (-y[0], -y[1]))


@njit(_FF(_FF, _f32), **_jit)
def ff_add_f(x, b):
    """``x + b`` for a float32 ``b`` (DWPlusFP), relative error <= 2u^2."""
    sh, sl = two_sum(x[0], b)
    v = x[1] + sl
    return fast_two_sum(sh, v)


@njit(_FF(_FF, _FF), **_jit)
def ff_mul(x, y):
    """``x * y`` (DWTimesDW1), relative error <= 8u^2 (1 + O(u))."""
    ch, cl1 = two_prod(x[0], y[0])
    tl = x[0] * y[1]
    th = x[1] * y[0]
    cl2 = th + tl
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


@njit(_FF(_FF, _f32), **_jit)
def ff_mul_f(x, b):
    """``x * b`` for a float32 ``b`` (DWTimesFP2), relative error <= 3u^2 (1 + O(u))."""
    ch, cl1 = two_prod(x[0], b)
    cl2 = x[1] * b
    cl3 = cl1 + cl2
    return fast_two_sum(ch, cl3)


@njit(_FF(_FF, _FF), **_jit)
def ff_div(x, y):
    """``x / y`` by one exact-remainder correction step, relative error <= 13u^2 (1 + O(u)).

    Division by zero gives nan, as on the GPU.
    """
    q1 = x[0] / y[0]
    ph, pl = two_prod(q1, y[0])
    a = x[0] - ph
    b = a - pl
    c = b + x[1]
    d = q1 * y[1]
    r = c - d
    q2 = r / y[0]
    return fast_two_sum(q1, q2)


@njit(_FF(_f64), **_jit)
def ff_from_double(d):
    """The composite number nearest ``d``: ``hi = RN32(d)``, ``lo = RN32(d - hi)``."""
    hi = np.float32(d)
    lo = np.float32(d - np.float64(hi))
    return hi, lo


def ff_parts(d) -> tuple:
    """``(hi, lo)`` of the composite number nearest the float ``d``, as two ``numpy.float32``
    (kernel arguments: a Python float would be passed to CUDA as a double)."""
    hi, lo = ff_from_double(float(d))
    return np.float32(hi), np.float32(lo)


@njit(_f64(_FF), **_jit)
def ff_to_double(x):
    """``RN64(hi + lo)``."""
    return np.float64(x[0]) + np.float64(x[1])


# ------------------------------------------------------------------------ vectorised (NumPy)


def _parts(x, name):
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise TypeError(f"{name}: composite arrays are float32 (..., 2), got dtype {x.dtype}")
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"{name}: composite arrays have a last axis of length 2 (hi, lo), "
                         f"got shape {x.shape}")
    return x[..., 0], x[..., 1]


def _f32(a, name):
    a = np.asarray(a)
    if a.dtype != np.float32:
        raise TypeError(f"{name}: expected float32 values, got dtype {a.dtype}")
    return a


def ff_array(hi, lo=None):
    """Stack float32 ``hi`` (and ``lo``, default 0) into a composite array of shape (..., 2).

    No normalisation is done: pass ``lo`` with ``|lo| <= ulp(hi)/2`` (as the functions here
    return) or build the array with :func:`ff_from_double_array`.
    """
    hi = _f32(hi, "ff_array")
    lo = np.zeros_like(hi) if lo is None else _f32(lo, "ff_array")
    return np.stack(np.broadcast_arrays(hi, lo), axis=-1)


def two_sum_array(a, b):
    """Elementwise TwoSum of float32 arrays; returns the composite array ``(s, e)``."""
    a = _f32(a, "two_sum_array")
    b = _f32(b, "two_sum_array")
    s = a + b
    bb = s - a
    aa = s - bb
    e = (a - aa) + (b - bb)
    return np.stack((s, e), axis=-1)


def fast_two_sum_array(a, b):
    """Elementwise Fast2Sum (needs ``|a| >= |b|``); returns the composite array ``(s, e)``."""
    a = _f32(a, "fast_two_sum_array")
    b = _f32(b, "fast_two_sum_array")
    s = a + b
    e = b - (s - a)
    return np.stack((s, e), axis=-1)


def _two_prod(a, b):
    exact = a.astype(np.float64) * b.astype(np.float64)
    p = exact.astype(np.float32)
    e = (exact - p.astype(np.float64)).astype(np.float32)
    return p, e


def two_prod_array(a, b):
    """Elementwise TwoProd (FMA emulated exactly in float64); returns ``(p, e)`` as (..., 2)."""
    a = _f32(a, "two_prod_array")
    b = _f32(b, "two_prod_array")
    a, b = np.broadcast_arrays(a, b)
    return np.stack(_two_prod(a, b), axis=-1)


def _fast_two_sum(a, b):
    s = a + b
    return s, b - (s - a)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    aa = s - bb
    return s, (a - aa) + (b - bb)


def ff_add_array(x, y):
    """Elementwise ``x + y`` of composite arrays (same algorithm as :func:`ff_add`)."""
    xh, xl = _parts(x, "ff_add_array")
    yh, yl = _parts(y, "ff_add_array")
    sh, sl = _two_sum(xh, yh)
    th, tl = _two_sum(xl, yl)
    vh, vl = _fast_two_sum(sh, sl + th)
    return np.stack(_fast_two_sum(vh, tl + vl), axis=-1)


def ff_sub_array(x, y):
    """Elementwise ``x - y`` of composite arrays."""
    _parts(y, "ff_sub_array")
    return ff_add_array(x, -np.asarray(y))


def ff_add_f_array(x, b):
    """Elementwise ``x + b``, composite ``x`` and float32 ``b``."""
    xh, xl = _parts(x, "ff_add_f_array")
    b = _f32(b, "ff_add_f_array")
    sh, sl = _two_sum(xh, b)
    return np.stack(_fast_two_sum(sh, xl + sl), axis=-1)


def ff_mul_array(x, y):
    """Elementwise ``x * y`` of composite arrays."""
    xh, xl = _parts(x, "ff_mul_array")
    yh, yl = _parts(y, "ff_mul_array")
    ch, cl1 = _two_prod(*np.broadcast_arrays(xh, yh))
    cl2 = xl * yh + xh * yl  # two separate ufuncs: RN(RN(xl*yh) + RN(xh*yl)), as on the GPU
    return np.stack(_fast_two_sum(ch, cl1 + cl2), axis=-1)


def ff_mul_f_array(x, b):
    """Elementwise ``x * b``, composite ``x`` and float32 ``b``."""
    xh, xl = _parts(x, "ff_mul_f_array")
    b = _f32(b, "ff_mul_f_array")
    ch, cl1 = _two_prod(*np.broadcast_arrays(xh, b))
    return np.stack(_fast_two_sum(ch, cl1 + xl * b), axis=-1)


def ff_div_array(x, y):
    """Elementwise ``x / y`` of composite arrays (nan where ``y`` is zero)."""
    xh, xl = _parts(x, "ff_div_array")
    yh, yl = _parts(y, "ff_div_array")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q1 = xh / yh
        ph, pl = _two_prod(*np.broadcast_arrays(q1, yh))
        r = (((xh - ph) - pl) + xl) - q1 * yl
        q2 = r / yh
        return np.stack(_fast_two_sum(q1, q2), axis=-1)


def ff_from_double_array(d):
    """Composite array nearest the float64 array ``d``: shape ``d.shape + (2,)``."""
    d = np.asarray(d, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        hi = d.astype(np.float32)
        lo = (d - hi.astype(np.float64)).astype(np.float32)
    return np.stack((hi, lo), axis=-1)


def ff_to_double_array(x):
    """``RN64(hi + lo)`` of a composite array: float64 array of shape ``x.shape[:-1]``."""
    xh, xl = _parts(x, "ff_to_double_array")
    return xh.astype(np.float64) + xl.astype(np.float64)
