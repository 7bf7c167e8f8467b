"""Precision policies: which floating-point type each part of the step uses.

==========  =================  ==================  ==================================
mode        positions/velocities pair arithmetic   force and energy accumulation
==========  =================  ==================  ==================================
single      float32            float32             float32
mixed       float64            float32             float64
double      float64            float64             float64
composite   float-float        float32             float-float
==========  =================  ==================  ==================================

In ``mixed`` the neighbour-list force kernel reads a 32-bit fixed-point image of the float64
positions (each coordinate as the box fraction ``round(x 2^32 / L) mod 2^32``, the type beside
it: 16 bytes a particle, as in single), written before each force computation.  The separation
is the integer difference of two fractions -- exact, the minimum image by 32-bit wrap-around --
rounded to float32 once and scaled by ``L / 2^32``; so positions far from the origin lose no
digits (resolution ``L / 2^32``: 1.5e-8 in a box of 64 length units; finer than float32's own
rounding of a separation ``r`` while ``L < ~256 r``, coarser in longer boxes).  The per-atom sums of
the float32 pair terms are float64 on GPUs whose float64 runs at >= 1/4 of the float32 rate (A100,
H100: :attr:`pycumd.backend.Backend.fast_float64`) and compensated float32 sums (TwoSum, about 48
bits) elsewhere, stored as float64 either way.  The
all-pairs kernels form the separation in float64 instead.  The neighbour list is built from a
float32 copy of the positions (the displacement check allows for its rounding, as in single).  ``composite`` keeps every position,
velocity, mass, force, energy and virial as an unevaluated sum ``hi + lo`` of two float32
numbers (about 48 significant bits, :mod:`pycumd.composite`) and uses no float64 on the GPU:
the separation is formed from both parts (the periodic image shift applied exactly) and
rounded to float32 once, the pair function runs in float32, the per-atom sums are compensated
(TwoSum) and the velocity Verlet updates use the float-float operations.  The low parts live
in :attr:`pycumd.state.State.lo`.  The CPU backend runs ``double`` only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

PRECISION_NAMES = ("single", "mixed", "double", "composite")


def c_type_name(dtype) -> str:
    """The CUDA C name of a float32 or float64 NumPy type (a kernel's ``real_t`` and the like)."""
    return {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[np.dtype(dtype)]


@dataclass(frozen=True)
class Precision:
    """A precision policy (see module docstring)."""

    name: str
    state_dtype: type   #: positions, velocities
    pair_dtype: type    #: arithmetic inside the pair function
    accum_dtype: type   #: per-atom force, energy and virial sums
    deterministic: bool = False  #: GPU kernels built without fused multiply-add contraction
    composite: bool = False      #: float-float state and sums (the ``*_dtype`` are the parts' type)
    #: the neighbour-list force kernel reads a 32-bit fixed-point image of the positions (mixed)
    fixed_point_forces: bool = False
    #: type of the positions the GPU neighbour-list kernel reads (mixed: a float32 copy)
    list_dtype: type = np.float32

    def at_build_dtype(self, gpu: bool):
        """Type of ``State.positions_at_build``, the displacement check's reference: the positions'
        type, except float32 for float64 positions whose GPU list kernel reads float32 rows (mixed
        precision): the reference is then those very rows' values, 16 bytes per atom fewer to
        store and to read every step."""
        if gpu and self.state_dtype == np.float64 and self.list_dtype == np.float32 and not self.composite:
            return np.float32
        return self.state_dtype

    @property
    def cuda_options(self) -> tuple:
        """NVRTC options: ``--fmad=false`` in deterministic mode, so that every product and sum
        rounds as on the CPU (Numba never contracts) and double-precision NVE runs give the same
        bits on both backends."""
        return ("--fmad=false",) if self.deterministic else ()

    @property
    def cuda_defines(self) -> dict:
        """Compile-time type names for the CUDA kernels."""
        return {"real_t": c_type_name(self.state_dtype), "pair_t": c_type_name(self.pair_dtype),
                "accum_t": c_type_name(self.accum_dtype), "COMPOSITE": int(self.composite),
                "FIXED_POINT_FORCES": int(self.fixed_point_forces)}


_POLICIES = {
    "single": Precision("single", np.float32, np.float32, np.float32),
    "mixed": Precision("mixed", np.float64, np.float32, np.float64, fixed_point_forces=True),
    "double": Precision("double", np.float64, np.float64, np.float64, list_dtype=np.float64),
    "composite": Precision("composite", np.float32, np.float32, np.float32, composite=True),
}


def get_precision(name: str | Precision | None, backend_name: str, deterministic: bool = False) -> Precision:
    """Resolve a precision name for a backend; ``None``/``"auto"`` gives double on the CPU, mixed on the GPU.

    ``deterministic`` (any precision) builds the GPU kernels without FMA contraction (see
    :attr:`Precision.cuda_options`), and on the CPU keeps the full neighbour list with the GPU's
    summation order instead of the half list (:mod:`pycumd.forces`).  Runs are repeatable bit for
    bit in every mode: the force sums run in a fixed order per atom, the counting sort is stable
    and no floating-point atomics are used; on the CPU with the half list the order depends on
    the thread count (the same count gives the same bits).
    """
    if isinstance(name, Precision):
        name = name.name
    if name in (None, "auto"):
        name = "mixed" if backend_name == "cuda" else "double"
    if name not in _POLICIES:
        raise ValueError(f"unknown precision {name!r}: choose one of {', '.join(PRECISION_NAMES)}")
    if backend_name == "cpu" and name != "double":
        raise ValueError(f"the cpu backend runs in double precision only (asked for {name!r}); "
                         "use --device cuda for single, mixed or composite")
    policy = _POLICIES[name]
    return dataclasses.replace(policy, deterministic=True) if deterministic else policy
