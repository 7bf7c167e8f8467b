"""Precision names and their rules (no GPU needed)."""

import numpy as np
import pytest

from pycumd.precision import PRECISION_NAMES, get_precision


def test_every_name_resolves_on_the_gpu():
    for name in PRECISION_NAMES:
        p = get_precision(name, "cuda", deterministic=True)
        assert p.name == name and p.deterministic and p.cuda_options == ("--fmad=false",)


def test_composite_policy_is_float_parts_without_float64():
    p = get_precision("composite", "cuda")
    assert p.composite and p.state_dtype is np.float32 and p.accum_dtype is np.float32
    assert p.cuda_defines == {"real_t": "float", "pair_t": "float", "accum_t": "float", "COMPOSITE": 1,
                              "FIXED_POINT_FORCES": 0}


def test_mixed_policy_reads_fixed_point_positions_and_builds_lists_in_float():
    p = get_precision("mixed", "cuda")
    assert p.state_dtype is np.float64 and p.pair_dtype is np.float32 and p.accum_dtype is np.float64
    assert p.fixed_point_forces and p.cuda_defines["FIXED_POINT_FORCES"] == 1
    assert p.list_dtype is np.float32
    assert get_precision("double", "cuda").list_dtype is np.float64
    assert not get_precision("single", "cuda").fixed_point_forces


@pytest.mark.parametrize("name", ["single", "mixed", "composite"])
def test_cpu_runs_double_only(name):
    with pytest.raises(ValueError, match="double precision only"):
        get_precision(name, "cpu")


def test_unknown_precision_is_named():
    with pytest.raises(ValueError, match="quad"):
        get_precision("quad", "cuda")


def test_positions_at_build_are_float32_only_for_mixed_on_the_gpu():
    """The displacement check's reference is stored as the float32 rows the GPU list kernel reads in
    mixed precision (16 bytes per atom), and in the positions' own type everywhere else (asked of
    each policy for a GPU state and for a CPU one)."""
    expected = {("mixed", True): np.float32, ("mixed", False): np.float64, ("single", True): np.float32,
                ("double", True): np.float64, ("double", False): np.float64, ("composite", True): np.float32}
    for (name, gpu), dtype in expected.items():
        assert get_precision(name, "cuda").at_build_dtype(gpu) == dtype, (name, gpu)
