"""Composite (float-float) arithmetic against exact rational arithmetic, CPU and GPU.

Every result is compared with ``fractions.Fraction`` arithmetic on the exact values of the
inputs (``hi + lo``); the error-free transformations must be exact and each operation must
stay inside the bound claimed in ``ERROR_BOUNDS`` (derived in docs/precision.md).  The GPU
(``float_float.cuh`` through ``composite_suite.cu``) must reproduce the CPU bit for bit.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from pycumd.bench import precision as suite
from pycumd.composite import float_float as ffm
from pycumd.composite.float_float import ERROR_BOUNDS, UNIT_ROUNDOFF

try:
    from hypothesis import assume, given, settings
    from hypothesis import strategies as st

    HAVE_HYPOTHESIS = True
except ImportError:  # the device machine may lack it; CI installs pycumd[test]
    HAVE_HYPOTHESIS = False

F32 = np.float32
U = UNIT_ROUNDOFF
TINY = Fraction(2) ** -149  # smallest subnormal float32

OPS = {
    "ff_add": (ffm.ff_add, ffm.ff_add_array, lambda a, b: a + b, 0),
    "ff_sub": (ffm.ff_sub, ffm.ff_sub_array, lambda a, b: a - b, 1),
    "ff_mul": (ffm.ff_mul, ffm.ff_mul_array, lambda a, b: a * b, 2),
    "ff_div": (ffm.ff_div, ffm.ff_div_array, lambda a, b: a / b, 3),
}
OPS_F = {  # composite (op) float
    "ff_add_f": (ffm.ff_add_f, ffm.ff_add_f_array, lambda a, b: a + b, 4),
    "ff_mul_f": (ffm.ff_mul_f, ffm.ff_mul_f_array, lambda a, b: a * b, 5),
}


# ------------------------------------------------------------------------------- helpers


def exact(x) -> Fraction:
    """Exact value of a composite number (hi, lo) or of a float."""
    if np.ndim(x) == 0:
        return Fraction(float(x))
    return Fraction(float(x[0])) + Fraction(float(x[1]))


def random_ff(rng, n, emin, emax):
    """Normalised composite numbers |x| in [2^emin, 2^(emax+1)), both signs, varied lo parts.

    Half have a 'dense' lo (the next 24 bits of a random double); half a lo far below
    ulp(hi) (gaps of 0..40 bits between the parts), the hard case for the renormalisations.
    """
    d = rng.choice([-1.0, 1.0], n) * np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(emin, emax + 1, n))
    x = ffm.ff_from_double_array(d)
    sparse = rng.random(n) < 0.5
    hi = x[..., 0]
    gap = rng.integers(0, 41, n)
    lo = (np.spacing(np.abs(hi)).astype(np.float64) * rng.uniform(-0.5, 0.5, n) * np.ldexp(1.0, -gap))
    lo = lo.astype(F32)
    renorm = ffm.fast_two_sum_array(hi, lo)
    x[sparse] = renorm[sparse]
    return x


def cancelling_partner(rng, x):
    """For each x, a y with x + y tiny or zero: -x, -x with a perturbed lo, -x(1 + d), ..."""
    n = x.shape[0]
    kind = rng.integers(0, 4, n)
    y = -x.copy()
    # kind 1: same hi, different lo (result is lo_x - lo_y: catastrophic cancellation of hi)
    k1 = kind == 1
    y[k1, 1] = (np.spacing(np.abs(x[k1, 0])) * rng.uniform(-0.5, 0.5, k1.sum())).astype(F32)
    # kind 2: -x * (1 + 2^-k), k in 1..70, via float64 of the exact pair
    k2 = kind == 2
    dk = np.ldexp(1.0, -rng.integers(1, 71, k2.sum())) * rng.choice([-1.0, 1.0], k2.sum())
    xd = ffm.ff_to_double_array(x[k2])
    y[k2] = ffm.ff_from_double_array(-(xd + xd * dk))
    # kind 3: neighbouring hi of opposite sign
    k3 = kind == 3
    y[k3, 0] = -np.nextafter(x[k3, 0], np.float32(np.inf) * np.sign(x[k3, 0]))
    y[k3, 1] = 0.0
    return y


def check_op(name, fn, xs, ys, bound, floor=Fraction(0)):
    """Max relative error of fn over the pairs; asserts the bound (plus an absolute floor)."""
    worst = 0.0
    for x, y, z in zip(xs, ys, fn(xs, ys)):
        e = OPS.get(name, OPS_F.get(name))[2](exact(x), exact(y[0] if name.endswith("_f") else y))
        got = exact(z)
        assert np.float32(z[0]) + np.float32(z[1]) == z[0] or z[1] == 0, f"{name}: output not normalised: {z}"
        err = abs(got - e)
        if e == 0:
            assert got == 0, f"{name}({x}, {y}) = {z}, exact result 0"
            continue
        assert err <= Fraction(bound) * abs(e) + floor, (
            f"{name}({tuple(x)}, {tuple(y)}) = {tuple(z)}: relative error "
            f"{float(err / abs(e)) / U**2:.3f} u^2 > bound {bound / U**2:.3f} u^2")
        worst = max(worst, float(err / abs(e)))
    return worst


# --------------------------------------------------------------- error-free transformations


def eft_inputs(rng, n=4000):
    a = np.ldexp(rng.uniform(1, 2, n), rng.integers(-100, 101, n)) * rng.choice([-1, 1], n)
    b = np.ldexp(rng.uniform(1, 2, n), rng.integers(-100, 101, n)) * rng.choice([-1, 1], n)
    a, b = a.astype(F32), b.astype(F32)
    # cancellation: b = -a, b = -a's neighbour; ties: b = ulp(a)/2 (s is a tie case)
    b[:400] = -a[:400]
    b[400:800] = -np.nextafter(a[400:800], np.float32(0))
    b[800:1200] = (np.spacing(np.abs(a[800:1200])) / 2).astype(F32)
    b[1200:1300] = 0.0
    return a, b


def test_two_sum_is_exact(rng):
    a, b = eft_inputs(rng)
    out = ffm.two_sum_array(a, b)
    for ai, bi, (s, e) in zip(a, b, out):
        assert s == np.float32(ai + bi)  # s is the rounded float sum
        assert exact(s) + exact(e) == exact(ai) + exact(bi), (ai, bi, s, e)
        assert ffm.two_sum(ai, bi) == (s, e)


def test_fast_two_sum_is_exact_when_a_dominates(rng):
    a, b = eft_inputs(rng)
    swap = np.abs(b) > np.abs(a)
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    out = ffm.fast_two_sum_array(a, b)
    for ai, bi, (s, e) in zip(a, b, out):
        assert exact(s) + exact(e) == exact(ai) + exact(bi), (ai, bi, s, e)
        assert ffm.fast_two_sum(ai, bi) == (s, e)


def test_two_prod_is_exact(rng):
    n = 4000
    # exponents with e_a + e_b >= -100 >= -126 + 23: the error term is not subnormal
    a = (np.ldexp(rng.uniform(1, 2, n), rng.integers(-50, 61, n)) * rng.choice([-1, 1], n)).astype(F32)
    b = (np.ldexp(rng.uniform(1, 2, n), rng.integers(-50, 61, n)) * rng.choice([-1, 1], n)).astype(F32)
    b[:200] = 1.0 + np.float32(2.0**-23)  # products with a 48-bit exact value
    a[:200] = 1.0 - np.float32(2.0**-24)
    out = ffm.two_prod_array(a, b)
    for ai, bi, (p, e) in zip(a, b, out):
        assert p == np.float32(ai * bi)
        assert exact(p) + exact(e) == exact(ai) * exact(bi), (ai, bi, p, e)
        assert ffm.two_prod(ai, bi) == (p, e)


def test_two_prod_emulates_fma_in_underflow_and_overflow():
    """RN32(a*b - p) through float64 equals a real FMA even when the error is subnormal."""
    a, b = F32(1.0 + 2.0**-23), F32(2.0**-140 * (1 + 2.0**-22))
    p, e = ffm.two_prod(a, b)
    assert p == F32(float(a) * float(b))
    # the exact error is below the subnormal range's resolution: FMA rounds it, so does the emulation
    exact_err = exact(a) * exact(b) - exact(p)
    assert abs(exact(e) - exact_err) <= TINY / 2
    assert ffm.two_prod(F32(3e38), F32(10.0))[0] == np.inf


# --------------------------------------------------------------------- operations vs bounds


@pytest.mark.parametrize("name", ["ff_add", "ff_sub"])
def test_add_sub_bound_with_cancellation_and_wide_exponents(name, rng):
    n = 1500
    x = random_ff(rng, n, -100, 100)  # ~1e-30 .. 1e30
    y = np.concatenate([cancelling_partner(rng, x[: n // 2]), random_ff(rng, n - n // 2, -100, 100)])
    if name == "ff_sub":
        y = -y  # x - (-partner) cancels as x + partner does
    worst = check_op(name, OPS[name][1], x, y, ERROR_BOUNDS[name])
    print(f"{name}: max relative error {worst / U**2:.3f} u^2 (bound {ERROR_BOUNDS[name] / U**2:.3f} u^2)")


@pytest.mark.parametrize("name", ["ff_mul", "ff_div"])
def test_mul_div_bound(name, rng):
    n = 3000
    x = random_ff(rng, n, -30, 30)
    y = random_ff(rng, n, -30, 30)
    # x = y (quotient 1) and x = y^2-ish neighbours: exact results are representable
    y[:100] = x[:100]
    worst = check_op(name, OPS[name][1], x, y, ERROR_BOUNDS[name])
    print(f"{name}: max relative error {worst / U**2:.3f} u^2 (bound {ERROR_BOUNDS[name] / U**2:.3f} u^2)")


@pytest.mark.parametrize("name", ["ff_mul", "ff_div"])
def test_mul_div_wide_exponents_with_underflow_floor(name, rng):
    """Operands 1e-18..1e18: results reach 2^-120, where the low parts underflow; the error
    is then bounded by the relative bound plus a few subnormal units."""
    x = random_ff(rng, 1500, -60, 60)
    y = random_ff(rng, 1500, -60, 60)
    check_op(name, OPS[name][1], x, y, ERROR_BOUNDS[name], floor=8 * TINY)


@pytest.mark.parametrize("name", ["ff_add_f", "ff_mul_f"])
def test_ff_op_float_bound(name, rng):
    n = 2000
    lo_e, hi_e = (-100, 100) if name == "ff_add_f" else (-30, 30)
    x = random_ff(rng, n, lo_e, hi_e)
    b = random_ff(rng, n, lo_e, hi_e)[:, 0]
    if name == "ff_add_f":
        b[: n // 4] = -x[: n // 4, 0]  # cancellation of the leading parts
    y = np.stack([b, np.zeros_like(b)], axis=-1)
    worst = check_op(name, lambda xs, ys: OPS_F[name][1](xs, ys[:, 0]), x, y, ERROR_BOUNDS[name])
    print(f"{name}: max relative error {worst / U**2:.3f} u^2 (bound {ERROR_BOUNDS[name] / U**2:.3f} u^2)")


def test_scalar_numba_equals_numpy_arrays_bitwise(rng):
    x = random_ff(rng, 500, -30, 30)
    y = random_ff(rng, 500, -30, 30)
    for name, (scalar, array, _, _) in {**OPS, **OPS_F}.items():
        ref = array(x, y) if name in OPS else array(x, y[:, 0])
        got = np.array([scalar((xi[0], xi[1]), (yi[0], yi[1]) if name in OPS else yi[0])
                        for xi, yi in zip(x, y)], dtype=F32)
        np.testing.assert_array_equal(got.view(np.uint32), ref.view(np.uint32), err_msg=name)


def test_conversions(rng):
    d = np.ldexp(rng.uniform(1, 2, 2000), rng.integers(-100, 101, 2000)) * rng.choice([-1, 1], 2000)
    x = ffm.ff_from_double_array(d)
    for di, xi in zip(d, x):
        assert abs(exact(xi) - Fraction(di)) <= Fraction(U**2) * abs(Fraction(di))
        assert ffm.ff_from_double(di) == tuple(xi)
        assert ffm.ff_to_double((xi[0], xi[1])) == float(exact(xi))  # RN64 of the exact sum
    np.testing.assert_array_equal(ffm.ff_to_double_array(x), [float(exact(xi)) for xi in x])
    assert ffm.ff_from_float(F32(1.5)) == (1.5, 0.0)
    assert ffm.ff_neg((F32(1.5), F32(2.0**-30))) == (-1.5, -(2.0**-30))


def test_special_values():
    one, zero = (F32(1), F32(0)), (F32(0), F32(0))
    assert all(np.isnan(ffm.ff_div(one, zero)))
    assert all(np.isnan(ffm.ff_div_array(np.array([one], F32), np.array([zero], F32))[0]))
    assert ffm.ff_add(one, ffm.ff_neg(one)) == (0.0, 0.0)
    assert ffm.ff_mul(one, zero) == (0.0, 0.0)


def test_bad_array_input_is_named():
    with pytest.raises(TypeError, match="float32"):
        ffm.ff_add_array(np.zeros((3, 2)), np.zeros((3, 2), F32))
    with pytest.raises(ValueError, match="last axis of length 2"):
        ffm.ff_mul_array(np.zeros((3, 3), F32), np.zeros((3, 2), F32))


def test_thesis_multiplication_loses_the_product_error(rng):
    """Why ff_mul differs from the thesis' Fig. 7: without TwoProd the error is ~u, not ~u^2."""
    x = random_ff(rng, 300, -10, 10)
    y = random_ff(rng, 300, -10, 10)
    hi = x[:, 0] * y[:, 0]
    lo = x[:, 0] * y[:, 1] + x[:, 1] * y[:, 0] + x[:, 1] * y[:, 1]
    thesis = np.stack([hi, lo], axis=-1)
    worst_thesis = max(float(abs(exact(z) - exact(a) * exact(b)) / abs(exact(a) * exact(b)))
                       for a, b, z in zip(x, y, thesis))
    ours = check_op("ff_mul", ffm.ff_mul_array, x, y, ERROR_BOUNDS["ff_mul"])
    assert worst_thesis > 1e-3 * U and ours < 1e3 * worst_thesis * U


# ------------------------------------------------------------- no contraction, no reordering


_INSPECT = """
import json, sys
from pycumd.composite import float_float as f
out = {}
for name in ("two_sum", "fast_two_sum", "two_prod", "ff_add", "ff_mul", "ff_mul_f", "ff_div"):
    fn = getattr(f, name)
    sig = fn.signatures[0]
    out[name] = [fn.inspect_asm(sig), fn.inspect_llvm(sig)]
json.dump(out, sys.stdout)
"""


def test_numba_code_has_no_fma_and_no_fast_math_flags(tmp_path):
    """Compile afresh (a private Numba cache dir: cached code cannot be inspected) and read the
    LLVM IR and machine code: no fast-math flags, no FMA, so no contraction or reassociation."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", _INSPECT], capture_output=True, text=True, env=env, check=True)
    for name, (asm, llvm) in json.loads(proc.stdout).items():
        assert not re.search(r"\bv?fn?m(add|sub)\d", asm.lower()), f"{name}: FMA in machine code"
        ops = re.findall(r"= (fadd|fsub|fmul|fdiv)([^%]*)%", llvm)
        assert ops, f"{name}: no floating-point instruction found in the LLVM IR"
        for op, flags in ops:
            assert not re.search(r"fast|contract|reassoc|nnan|ninf|nsz|arcp|afn", flags), (name, op, flags)
        assert "llvm.fma" not in llvm and "fmuladd" not in llvm, name


def test_reassociation_would_be_caught():
    """(a + b) - a reassociated to b would give e = 0: the exact error 1 proves it is not."""
    assert ffm.two_sum(F32(1e8), F32(1.0)) == (1e8, 1.0)
    assert ffm.fast_two_sum(F32(1e8), F32(1.0)) == (1e8, 1.0)
    p, e = ffm.two_prod(F32(1 + 2.0**-12), F32(1 + 2.0**-12))
    assert (p, e) == (1 + 2.0**-11, 2.0**-24)


# ---------------------------------------------------------------------------- hypothesis

if HAVE_HYPOTHESIS:
    f32s = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)

    @settings(max_examples=2000, deadline=None)
    @given(f32s, f32s)
    def test_hypothesis_two_sum_exact(a, b):
        a, b = F32(a), F32(b)
        assume(abs(exact(a) + exact(b)) < Fraction(2) ** 128 - Fraction(2) ** 103)  # no overflow
        s, e = ffm.two_sum(a, b)
        assert exact(s) + exact(e) == exact(a) + exact(b)

    @settings(max_examples=2000, deadline=None)
    @given(f32s, f32s)
    def test_hypothesis_two_prod_exact(a, b):
        a, b = F32(a), F32(b)
        exact_prod = exact(a) * exact(b)
        assume(a != 0 and b != 0 and abs(exact_prod) < Fraction(2) ** 127)
        assume(abs(exact_prod) >= Fraction(2) ** -100)  # the error term is a normal float
        p, e = ffm.two_prod(a, b)
        assert exact(p) + exact(e) == exact_prod

    def _ff(hi, lo):
        return ffm.fast_two_sum(F32(hi), F32(np.float32(lo) * np.spacing(np.abs(F32(hi))) / 2))

    def ff_parts(emax):
        """(hi, lo fraction) with 2^-emax <= |hi| <= 2^emax and |lo| <= ulp(hi)/2."""
        mag = st.floats(min_value=2.0**-emax, max_value=2.0**emax, width=32)
        return st.tuples(mag | mag.map(lambda v: -v), st.floats(-1.0, 1.0, width=32))

    @settings(max_examples=1500, deadline=None)
    @given(ff_parts(100), ff_parts(100))
    def test_hypothesis_ff_add_bound(xp, yp):
        x, y = _ff(*xp), _ff(*yp)
        z = ffm.ff_add(x, y)
        e = exact(x) + exact(y)
        assert abs(exact(z) - e) <= Fraction(ERROR_BOUNDS["ff_add"]) * abs(e)

    @settings(max_examples=1500, deadline=None)
    @given(ff_parts(30), ff_parts(30))
    def test_hypothesis_ff_mul_div_bound(xp, yp):
        x, y = _ff(*xp), _ff(*yp)
        for name, fn, op in (("ff_mul", ffm.ff_mul, lambda a, b: a * b), ("ff_div", ffm.ff_div, lambda a, b: a / b)):
            z = fn(x, y)
            e = op(exact(x), exact(y))
            assert abs(exact(z) - e) <= Fraction(ERROR_BOUNDS[name]) * abs(e), name


# ------------------------------------------------------------------------- GPU vs CPU, bitwise


def _run_binary(backend, code, x, y):
    """Run op ``code`` of ff_test_binary on ``backend`` (the CPU uses the Numba scalars)."""
    if not backend.is_gpu:
        fns = {0: ffm.ff_add, 1: ffm.ff_sub, 2: ffm.ff_mul, 3: ffm.ff_div, 4: ffm.ff_add_f, 5: ffm.ff_mul_f}
        fn = fns[code]
        return np.array([fn((a[0], a[1]), (b[0], b[1]) if code < 4 else b[0]) for a, b in zip(x, y)], F32)
    return _gpu_binary(backend, code, x, y)


def _gpu_binary(backend, code, x, y, options=()):
    n = x.shape[0]
    z = backend.xp.full((n, 2), np.nan, dtype=F32)
    kern = backend.kernel_module("composite/composite_suite.cu", options=options).get_function("ff_test_binary")
    kern(((n + 127) // 128,), (128,), (backend.asarray(x), backend.asarray(y), z, np.int32(n), np.int32(code)))
    return backend.to_host(z)


def _mixed_inputs(rng, n=20000):
    x = random_ff(rng, n, -30, 30)
    y = random_ff(rng, n, -30, 30)
    y[: n // 4] = cancelling_partner(rng, x[: n // 4])
    y[n // 4: n // 4 + 100] = 0.0  # division by zero: nan on both
    return x, y


def _same_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    both_nan = np.isnan(a) & np.isnan(b)
    diff = (a.view(np.uint32) != b.view(np.uint32)) & ~both_nan
    assert not diff.any(), f"{what}: {diff.sum()} of {diff.size} words differ, first at {np.argwhere(diff)[0]}"


@pytest.mark.parametrize("name,code", [(k, v[3]) for k, v in {**OPS, **OPS_F}.items()])
def test_backend_matches_numpy_reference_bitwise(backend, rng, name, code):
    x, y = _mixed_inputs(rng, 20000 if backend.is_gpu else 2000)
    ref = (OPS[name][1](x, y) if name in OPS else OPS_F[name][1](x, y[:, 0]))
    _same_bits(_run_binary(backend, code, x, y), ref, f"{name} on {backend.name}")


def test_gpu_eft_and_conversions_match_cpu_bitwise(backend, rng):
    if not backend.is_gpu:
        pytest.skip("compares the GPU with the CPU")
    a, b = eft_inputs(rng, 20000)
    xp = backend.xp
    mod = backend.kernel_module("composite/composite_suite.cu")
    for code, ref in ((0, ffm.two_sum_array(a, b)), (1, ffm.fast_two_sum_array(a, b)), (2, ffm.two_prod_array(a, b))):
        out = xp.full((a.size, 2), np.nan, dtype=F32)
        mod.get_function("ff_test_eft")(((a.size + 127) // 128,), (128,),
                                         (backend.asarray(a), backend.asarray(b), out, np.int32(a.size), np.int32(code)))
        _same_bits(backend.to_host(out), ref, f"eft {code}")
    d = np.ldexp(rng.uniform(1, 2, 20000), rng.integers(-120, 121, 20000)) * rng.choice([-1, 1], 20000)
    out = xp.full((d.size, 2), np.nan, dtype=F32)
    back = xp.full(d.size, np.nan)
    mod.get_function("ff_test_convert")(((d.size + 127) // 128,), (128,), (backend.asarray(d), out, back, np.int32(d.size)))
    _same_bits(backend.to_host(out), ffm.ff_from_double_array(d), "ff_from_double")
    ref_back = ffm.ff_to_double_array(ffm.ff_from_double_array(d))
    np.testing.assert_array_equal(backend.to_host(back).view(np.uint64), ref_back.view(np.uint64))


def test_gpu_results_do_not_depend_on_fast_math_or_ftz(backend, rng):
    """Inline PTX roundings: --use_fast_math (contraction allowed, -ftz=true, approximate
    division) changes no bit, not even where the low parts are subnormal (operands to 1e-18)."""
    if not backend.is_gpu:
        pytest.skip("GPU compile options")
    x = random_ff(rng, 20000, -60, 60)
    y = random_ff(rng, 20000, -60, 60)
    y[:5000] = cancelling_partner(rng, x[:5000])
    for name, code in [(k, v[3]) for k, v in {**OPS, **OPS_F}.items()]:
        ref = OPS[name][1](x, y) if name in OPS else OPS_F[name][1](x, y[:, 0])
        _same_bits(_gpu_binary(backend, code, x, y), ref, f"{name} (CuPy's -ftz=true)")
        _same_bits(_gpu_binary(backend, code, x, y, options=("--use_fast_math",)), ref, f"{name} with --use_fast_math")


def test_gpu_two_prod_keeps_a_subnormal_error_term(backend):
    """CuPy compiles with -ftz=true; the error term 2^-146 of this product must survive."""
    a, b = F32(1 + 2.0**-23), F32(2.0**-100 * (1 + 2.0**-23))
    expected_e = exact(a) * exact(b) - exact(np.float32(a * b))
    assert expected_e == Fraction(2) ** -146
    if backend.is_gpu:
        out = backend.xp.full((1, 2), np.nan, dtype=F32)
        mod = backend.kernel_module("composite/composite_suite.cu")
        mod.get_function("ff_test_eft")((1,), (32,), (backend.asarray(np.array([a])), backend.asarray(np.array([b])),
                                                     out, np.int32(1), np.int32(2)))
        p, e = backend.to_host(out)[0]
    else:
        p, e = ffm.two_prod(a, b)
    assert exact(p) + exact(e) == exact(a) * exact(b), (p, e)


# --------------------------------------------------------------------------- the suite kernels


def test_global_sum_accuracy(backend):
    values = suite.summation_values(1000, seed=7)
    for threads in suite.THREAD_COUNTS:
        for order in suite.ORDERS:
            v = suite.ordered(values, order, seed=7)
            err = {p: abs(suite.sum_as_float64(suite.global_sum(v, threads, p, backend=backend)))
                   for p in suite.PRECISIONS}
            # largest partial sum ~ 2.5e8: composite keeps ~ 2.5e8 * n * 3u^2 ~ 1e-3 at worst
            assert err["composite"] <= 1e-4, (threads, order, err)
            assert err["double"] <= 1e-6, (threads, order, err)
    assert suite.global_sum(np.ones(1000, F32), 10, "composite", backend=backend).tolist() == [1000.0, 0.0]


def test_suite_gpu_matches_cpu_bitwise(backend):
    if not backend.is_gpu:
        pytest.skip("compares the GPU with the CPU")
    values = suite.summation_values(1000, seed=3)
    for layout in suite.LAYOUTS:
        for threads in suite.THREAD_COUNTS:
            v = suite.ordered(values, "shuffled (1)", seed=3)
            for p in suite.PRECISIONS:
                g = suite.global_sum(v, threads, p, layout, backend)
                c = suite.global_sum(v, threads, p, layout, "cpu")
                assert g.tobytes() == c.tobytes(), (layout, threads, p, g, c)
    for trial in suite.DO_UNDO_TRIALS:
        for order in suite.DO_UNDO_ORDERS:
            for p in suite.PRECISIONS:
                g = suite.do_undo(trial, order, p, 20000, 100, backend=backend)
                c = suite.do_undo(trial, order, p, 20000, 100, backend="cpu")
                assert g.samples.tobytes() == c.samples.tobytes(), (trial, order, p)


def test_do_undo_composite_beats_float(backend):
    for trial in suite.DO_UNDO_TRIALS:
        f = suite.do_undo(trial, "div-mul", "float", 20000, 1000, backend=backend)
        c = suite.do_undo(trial, "div-mul", "composite", 20000, 1000, backend=backend)
        assert np.max(np.abs(c.drift)) < 1e-5 * np.max(np.abs(f.drift)), trial
        assert np.max(np.abs(c.drift)) < 1e-11


def test_suite_rejects_bad_arguments():
    with pytest.raises(ValueError, match="precision"):
        suite.global_sum(np.ones(4, F32), 1, "half")
    with pytest.raises(ValueError, match="threads"):
        suite.global_sum(np.ones(4, F32), 2000, "float")
    with pytest.raises(ValueError, match="divide"):
        suite.do_undo(1, "mul-div", "float", n_iter=1000, sample_every=7)
    with pytest.raises(ValueError, match="order"):
        suite.ordered(np.ones(4, F32), "sideways")
