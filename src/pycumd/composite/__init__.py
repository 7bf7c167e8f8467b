"""Composite (float-float) precision: numbers ``hi + lo`` of two float32 values.

About 48 significant bits at float32 range and mostly float32 speed (Saponaro 2010's
"composite precision").  The CPU implementation lives in :mod:`pycumd.composite.float_float`
(Numba scalar functions and NumPy arrays); CUDA kernels include
``composite/float_float.cuh``, which computes the same roundings in the same order, so CPU and
GPU results are bit-identical.  See ``docs/precision.md``.
"""

from .float_float import (
    ERROR_BOUNDS,
    UNIT_ROUNDOFF,
    fast_two_sum,
    fast_two_sum_array,
    ff_add,
    ff_add_array,
    ff_add_f,
    ff_add_f_array,
    ff_array,
    ff_div,
    ff_div_array,
    ff_from_double,
    ff_from_double_array,
    ff_from_float,
    ff_mul,
    ff_mul_array,
    ff_mul_f,
    ff_mul_f_array,
    ff_neg,
    ff_parts,
    ff_sub,
    ff_sub_array,
    ff_to_double,
    ff_to_double_array,
    two_prod,
    two_prod_array,
    two_sum,
    two_sum_array,
)

__all__ = [
    "ERROR_BOUNDS",
    "UNIT_ROUNDOFF",
    "fast_two_sum",
    "fast_two_sum_array",
    "ff_add",
    "ff_add_array",
    "ff_add_f",
    "ff_add_f_array",
    "ff_array",
    "ff_div",
    "ff_div_array",
    "ff_from_double",
    "ff_from_double_array",
    "ff_from_float",
    "ff_mul",
    "ff_mul_array",
    "ff_mul_f",
    "ff_mul_f_array",
    "ff_neg",
    "ff_parts",
    "ff_sub",
    "ff_sub_array",
    "ff_to_double",
    "ff_to_double_array",
    "two_prod",
    "two_prod_array",
    "two_sum",
    "two_sum_array",
]
