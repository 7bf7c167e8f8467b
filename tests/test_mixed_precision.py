"""Mixed precision's GPU paths (pycumd.precision): forces from the 32-bit fixed-point image of the
float64 positions, and the neighbour list built from their float32 copy."""

import numpy as np
import pytest

from pycumd import backend as backends
from pycumd.box import Box
from pycumd.neighbors.verlet import NeighborList
from pycumd.precision import get_precision
from pycumd.components import _storage_rounding
from pycumd.simulation import Simulation
from pycumd.state import State
from pycumd.system import System

from conftest import HAVE_CUDA
from helpers import brute_force_energy_forces, brute_force_pairs, lj, random_liquid

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")]


def _mixed_forces(system, pot, poison=True, device="cuda"):
    sim = Simulation(system, pot, device=device, precision="mixed", pair_method="neighbor")
    if poison:
        sim.state.forces[...] = np.nan
    sim.setup()
    by_id = np.argsort(sim.state.ids.get())
    return sim.state.forces.get()[by_id], sim.potential_energy(), sim.virial_trace(), sim


def _gpu(fast_float64):
    """The CUDA backend as a GPU with (True) or without (False) fast float64 would be: the mixed
    force kernel's sums in float64 or compensated in float32."""
    import dataclasses
    return dataclasses.replace(backends.select("cuda"), fast_float64=fast_float64)


@pytest.mark.parametrize("fast_float64", [True, False], ids=["float64-sums", "compensated-sums"])
@pytest.mark.parametrize("cutoff", ["truncate", "shift_force"])
def test_fixed_point_forces_match_float64_reference(rng, cutoff, fast_float64):
    """Float32 pairs from exact separations, float64 or compensated sums: float32 rounding level,
    not worse."""
    system = random_liquid(rng, n=400, n_types=2)
    pot = lj(cutoff).pair_coeff(1, 1, epsilon=0.7, sigma=1.05)
    e_ref, f_ref, w_ref = brute_force_energy_forces(system, pot)
    f, e, w, sim = _mixed_forces(system.copy(), pot, device=_gpu(fast_float64))
    assert sim.forces.image is not None and sim.forces.image.dtype == np.uint32
    assert np.isfinite(f).all()
    assert np.abs(f - f_ref).max() < 2e-6 * np.abs(f_ref).max()
    # float32 pair terms (r^-12 and r^-6: several roundings each) of both signs, summed
    assert e == pytest.approx(e_ref, rel=5e-6)
    assert w == pytest.approx(w_ref, rel=5e-6)


def test_fixed_point_image_wraps_unwrapped_positions(rng):
    """Positions k box lengths away (not wrapped: between builds they drift out of the box) give
    the same forces: the box fraction is taken mod 2^32."""
    system = random_liquid(rng, n=300)
    pot = lj()
    f0, e0, _, _ = _mixed_forces(system.copy(), pot)
    sim = Simulation(system.copy(), pot, device="cuda", precision="mixed", pair_method="neighbor")
    sim.setup()                                  # the build wraps: move the atoms out after it
    s = sim.state
    shift = rng.integers(-1000, 1001, (s.n_atoms, 3)) * system.box.L
    s.positions[:, :3] += sim.backend.xp.asarray(shift)
    s.forces[...] = np.nan
    sim.forces.compute(s, sim.neighbors, True)
    f1 = s.forces.get()[np.argsort(s.ids.get())]
    assert np.abs(f1 - f0).max() <= 1e-6 * np.abs(f0).max()
    assert sim.potential_energy() == pytest.approx(e0, rel=1e-7)


def test_fixed_point_pairs_across_the_boundary_of_a_large_box():
    """A box of 200 (resolution 200 / 2^32 = 4.7e-8): pairs that cross the periodic faces, far
    from the origin, against the float64 reference."""
    L = 200.0
    pos = np.array([[199.6, 100.0, 100.0], [0.5, 100.3, 100.1], [199.9, 199.2, 0.3],
                    [0.2, 0.1, 199.5], [150.0, 150.0, 150.0], [151.1, 150.2, 149.9]])
    system = System(Box([L, L, L]), pos, np.array([1.0]), "lj")
    pot = lj()
    e_ref, f_ref, w_ref = brute_force_energy_forces(system, pot)
    f, e, w, _ = _mixed_forces(system.copy(), pot)
    assert np.abs(f - f_ref).max() < 1e-5 * np.abs(f_ref).max()
    # pair energies of about +2, -1 and -0.8 nearly cancel: float32 pair rounding in absolute terms
    assert e == pytest.approx(e_ref, abs=1e-5) and w == pytest.approx(w_ref, rel=2e-6, abs=1e-5)


def test_mixed_list_from_float32_copy_never_loses_a_pair(rng):
    """Built from float32 copies of float64 positions: every pair closer than r_list minus twice the
    rounding bound is listed, and nothing farther than r_list plus it."""
    be = backends.select("cuda")
    prec = get_precision("mixed", "cuda")
    system = random_liquid(rng, n=3000, density=0.84, min_distance=0.8)
    L = system.box.L
    err = _storage_rounding(prec, L)
    assert err > 0
    state = State.from_system(system, be, prec)
    nl = NeighborList(be, 2.5, 0.3, overlap_distance=0.0, position_error=err, list_dtype=prec.list_dtype)
    nl.build(state)
    assert nl.builder.plan.list_rows is not None
    pos = state.host_positions(be)
    listed = {(i, int(j)) for i in range(state.n_atoms) for j in nl.neighbors_of(i)}
    inner = brute_force_pairs(pos, L, nl.r_list - 2 * err)
    outer = brute_force_pairs(pos, L, nl.r_list + 2 * err)
    assert inner <= listed <= outer
    assert len(listed) > 0.99 * len(inner)
    # the float copy lived in positions_at_build's memory, which the build then took again: float32,
    # the very values of the rows the list kernel read
    assert state.positions_at_build.dtype == np.float32
    assert np.array_equal(state.positions_at_build.get(), state.positions.get().astype(np.float32))


def test_mixed_displacement_check_measures_from_the_float32_rows(rng):
    """Mixed precision keeps the positions at build as float32 (16 bytes per atom instead of 32):
    the fused half-step check and the separate check kernel measure each atom's displacement from
    the rounded row the list was built from, and fire just past the limit, not just before it."""
    be = backends.select("cuda")
    prec = get_precision("mixed", "cuda")
    system = random_liquid(rng, n=1500, density=0.8, min_distance=0.8)
    state = State.from_system(system, be, prec)
    nl = NeighborList(be, 2.5, 0.4, overlap_distance=0.0, position_error=_storage_rounding(prec, system.box.L),
                      list_dtype=prec.list_dtype)
    nl.build(state)
    limit = np.sqrt(nl.displacement_limit2)
    reference = state.positions_at_build.get().astype(np.float64)
    for fraction, expected in ((0.999, False), (1.001, True)):
        state.positions[...] = be.asarray(reference)            # the rows' values, exactly
        state.positions[11, 1] += limit * fraction
        assert nl.needs_rebuild(state) == expected
        flag = be.xp.zeros(1, np.int32)
        nl.builder.displacement_exceeds(state, nl.displacement_limit2, flag=flag)
        assert bool(int(flag.get()[0])) == expected


def test_mixed_nve_conserves_energy_like_double():
    """NVE on the melt: the mixed run's total-energy drift stays within that of double plus a margin."""
    from helpers import melt_system

    drift = {}
    for prec in ("double", "mixed"):
        sim = Simulation(melt_system(8), lj("shift_force"), device="cuda", precision=prec)
        sim.setup()
        e0 = sim.thermo_row()["TotEng"]
        sim.run(2000)
        drift[prec] = abs(sim.thermo_row()["TotEng"] - e0)
    assert drift["mixed"] < max(5 * drift["double"], 2e-4)


def test_fixed_separation_equals_the_int_to_float_conversion(rng):
    """forces.cu's fixed_separation<true> (mixed precision at one lane per atom) converts the 32-bit
    difference of two box fractions to float by two exact half conversions joined in one fmaf: it
    must equal fixed_separation<false>, the conversion by I2F, and (float)(int)(ui - uj) * s bit for
    bit, here for the extreme differences, those around every power of two where float rounding
    changes, and a million random pairs (the function's source compiled as shipped)."""
    import pathlib
    import re
    import cupy as cp
    import pycumd

    source = (pathlib.Path(pycumd.__file__).parent / "forces.cu").read_text()
    function = re.search(r"template <bool SPLIT>\n__device__ __forceinline__ float fixed_separation\(.*?\n}\n", source, re.S).group(0)
    kernel = cp.RawKernel("#define FIXED_POINT_FORCES 1\n" + function + r'''
extern "C" __global__ void both(const unsigned int* ui, const unsigned int* uj, float s, int n,
                                float* shipped, float* reference) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    shipped[k] = fixed_separation<true>(ui[k], uj[k], s);
    const float by_i2f = fixed_separation<false>(ui[k], uj[k], s);
    reference[k] = (float)(int)(ui[k] - uj[k]) * s;
    if (__float_as_uint(by_i2f) != __float_as_uint(reference[k])) reference[k] = __int_as_float(0x7fc00001);
}''', "both")
    powers = np.array([1 << p for p in range(31)], np.int64)
    special = np.concatenate([[0, 1, -1, 2**31 - 1, -2**31, 2**31 - 2, -2**31 + 1],
                              *[powers + k for k in (-3, -1, 0, 1, 3)], *[-powers + k for k in (-3, -1, 0, 1, 3)]])
    special = special[(special >= -2**31) & (special < 2**31)]
    diffs = np.concatenate([special, rng.integers(-2**31, 2**31, 1_000_000)]).astype(np.int64)
    uj = rng.integers(0, 2**32, diffs.size, dtype=np.uint64)
    ui = (uj + (diffs % 2**32).astype(np.uint64)) % 2**32
    n = diffs.size
    shipped, reference = cp.empty(n, np.float32), cp.empty(n, np.float32)
    for s in (np.float32(1.0), np.float32(33.6 / 2**32)):
        kernel(((n + 255) // 256,), (256,), (cp.asarray(ui.astype(np.uint32)), cp.asarray(uj.astype(np.uint32)),
                                             s, np.int32(n), shipped, reference))
        np.testing.assert_array_equal(shipped.get().view(np.uint32), reference.get().view(np.uint32))


@pytest.mark.parametrize("lanes", [1, 4])
@pytest.mark.parametrize("n_types", [1, 2])
def test_split_and_i2f_force_kernels_give_the_same_bits(rng, monkeypatch, lanes, n_types):
    """Mixed precision's two force kernels (pair_forces_fixed_split: separations converted by two
    exact halves; pair_forces_fixed: by I2F), whichever SPLIT_CONVERSION_MAX_LANES picks for a
    launch, give the same forces, energy and virial bit for bit at one lane per atom and at four."""
    import pycumd.forces

    system = random_liquid(rng, n=500, n_types=n_types)
    pot = lj("truncate").pair_coeff(n_types - 1, n_types - 1, epsilon=0.7, sigma=1.05)
    results = {}
    for split_up_to in (8, 0):              # the halves at every lane count, then I2F at every one
        monkeypatch.setattr(pycumd.forces, "SPLIT_CONVERSION_MAX_LANES", split_up_to)
        sim = Simulation(system.copy(), pot, device="cuda", precision="mixed", pair_method="neighbor")
        sim.forces.lanes = lanes
        sim.state.forces[...] = np.nan
        sim.setup()
        results[split_up_to] = (sim.state.forces.get(), sim.potential_energy(), sim.virial_trace())
    assert np.isfinite(results[8][0]).all()
    np.testing.assert_array_equal(results[8][0].view(np.uint64), results[0][0].view(np.uint64))
    assert results[8][1:] == results[0][1:]
