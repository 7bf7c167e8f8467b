"""pycumd.lammps_random reproduces LAMMPS' ``velocity create ... loop geom``."""

import math

import numpy as np
import pytest

from lammps_oracle import lammps_available, new_lammps
from pycumd.lammps_random import (
    RanPark,
    lammps_temperature,
    loop_geom_seeds,
    loop_geom_velocities,
    velocity_create_loop_geom,
)


def _lammps_velocities(cells, seed, temp, options="", mass=1.0):
    """Positions, velocities and ids after create_atoms + velocity create in LAMMPS."""
    pytest.importorskip("lammps")
    if not lammps_available():
        pytest.skip("the LAMMPS Python module cannot create an instance here")
    nx, ny, nz = cells
    lmp = new_lammps()
    try:
        lmp.commands_string(f"""
            units lj
            atom_style atomic
            lattice fcc 0.8442
            region box block 0 {nx} 0 {ny} 0 {nz}
            create_box 1 box
            create_atoms 1 box
            mass 1 {mass}
            velocity all create {temp} {seed} loop geom {options}
        """)
        n = int(lmp.extract_global("nlocal"))
        x = np.array(lmp.numpy.extract_atom("x")[:n], dtype=np.float64)
        v = np.array(lmp.numpy.extract_atom("v")[:n], dtype=np.float64)
        ids = np.array(lmp.numpy.extract_atom("id")[:n], dtype=np.int64)
    finally:
        lmp.close()
    return x, v, ids


def _reproduce(x, seed, temp, mass=1.0, dist="uniform", mom=True):
    """The steps of Velocity::create written out: raw -> 1/sqrt(m) -> mom -> rescale."""
    raw = loop_geom_velocities(x, seed, dist)
    v = raw * (1.0 / math.sqrt(mass))
    if mom:
        v -= v.sum(axis=0) * mass / (mass * len(v))
    t = float(np.sum(v * v) * mass) / (3 * len(v) - 3)
    return v * math.sqrt(temp / t)


def _assert_close(a, b, rtol=1e-12):
    scale = np.abs(b).max()
    assert np.abs(a - b).max() <= rtol * scale


@pytest.mark.lammps
def test_in_lj_velocities_4x4x4():
    x, v, ids = _lammps_velocities((4, 4, 4), 87287, 1.44)
    assert len(x) == 256
    _assert_close(_reproduce(x, 87287, 1.44), v)
    # the library function follows LAMMPS' summation order: bit for bit
    np.testing.assert_array_equal(velocity_create_loop_geom(x, 1.44, 87287), v)
    # independent of atom order: permuting the atoms permutes the velocities
    perm = np.argsort(-ids)
    raw = loop_geom_velocities(x, 87287)
    np.testing.assert_array_equal(loop_geom_velocities(x[perm], 87287), raw[perm])


@pytest.mark.lammps
def test_nontrivial_seed_3x5x2_and_mass():
    x, v, _ = _lammps_velocities((3, 5, 2), 4928459, 2.5, mass=2.7)
    assert len(x) == 120
    _assert_close(_reproduce(x, 4928459, 2.5, mass=2.7), v)
    _assert_close(velocity_create_loop_geom(x, 2.5, 4928459, masses=2.7), v)
    assert lammps_temperature(v, 2.7) == pytest.approx(2.5, rel=1e-14)
    np.testing.assert_allclose((v * 2.7).sum(axis=0), 0.0, atol=1e-12)


@pytest.mark.lammps
def test_gaussian_distribution():
    x, v, _ = _lammps_velocities((3, 5, 2), 4928459, 1.44, "dist gaussian")
    _assert_close(_reproduce(x, 4928459, 1.44, dist="gaussian"), v)
    np.testing.assert_array_equal(
        velocity_create_loop_geom(x, 1.44, 4928459, distribution="gaussian"), v)


@pytest.mark.lammps
def test_mom_no():
    x, v, _ = _lammps_velocities((4, 4, 4), 87287, 1.44, "mom no")
    _assert_close(_reproduce(x, 87287, 1.44, mom=False), v)
    np.testing.assert_array_equal(velocity_create_loop_geom(x, 1.44, 87287, zero_momentum=False), v)
    assert np.abs(v.sum(axis=0)).max() > 1e-3  # momentum really was left in


@pytest.mark.lammps
def test_gaussian_mom_no():
    x, v, _ = _lammps_velocities((3, 3, 3), 12345, 0.7, "dist gaussian mom no")
    _assert_close(_reproduce(x, 12345, 0.7, dist="gaussian", mom=False), v)


# ----------------------------------------------------------------------------- no LAMMPS


def test_uniform_sequence_park_miller():
    r = RanPark(1)
    # minimal standard: 16807^k mod (2^31 - 1); the 10000th state is 1043618065
    for _ in range(9999):
        r.uniform()
    u = r.uniform()
    assert r.state() == 1043618065
    assert u == 1043618065 * (1.0 / 2147483647)


def test_gaussian_pairs_and_reset():
    r = RanPark(987654)
    a = [r.gaussian() for _ in range(4)]
    r.reset(987654)
    b = [r.gaussian() for _ in range(4)]
    assert a == b
    # pairs from the polar method: the first draw consumes state, the second does not
    r.reset(987654)
    r.gaussian()
    s = r.state()
    r.gaussian()
    assert r.state() == s


def test_reset_with_coord_matches_vectorised_path(rng):
    x = rng.uniform(-50, 50, size=(200, 3))
    x[0] = 0.0
    x[1] = (-0.0, 1e-300, -1e300)
    seeds = loop_geom_seeds(x, 87287)
    assert seeds.min() >= 1 and seeds.max() < 2**27
    uni = loop_geom_velocities(x, 87287)
    gau = loop_geom_velocities(x, 87287, "gaussian")
    r = RanPark(5)
    for i in range(len(x)):
        r.reset(87287, x[i])
        assert [r.uniform() - 0.5 for _ in range(3)] == list(uni[i])
        r.reset(87287, x[i])
        assert [r.gaussian() for _ in range(3)] == list(gau[i])
    assert np.all(np.abs(uni) < 0.5)


def _one_at_a_time(data: bytes, signed: bool) -> int:
    """Independent Jenkins one-at-a-time over bytes, as LAMMPS' reset() does (27-bit result)."""
    h = 0
    for b in data:
        if signed and b >= 128:
            b -= 256
        h = (h + b) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return (h & 0x7FFFFFF) or 1


def test_hash_uses_signed_bytes():
    coord = np.array([[-1.0, 0.8397981, 3.5]])   # bytes >= 0x80 in every double
    data = np.int32(87287).tobytes() + coord.tobytes()
    assert any(b >= 128 for b in data)
    signed = _one_at_a_time(data, signed=True)
    assert signed != _one_at_a_time(data, signed=False)
    assert int(loop_geom_seeds(coord, 87287)[0]) == signed
    r = RanPark(1)
    r.reset(87287, coord[0])
    r2 = RanPark(signed)
    for _ in range(5):
        r2.uniform()
    assert r.state() == r2.state()


def test_bad_arguments():
    with pytest.raises(ValueError):
        RanPark(0)
    with pytest.raises(ValueError):
        loop_geom_velocities(np.zeros((3, 2)), 1)
    with pytest.raises(TypeError):
        loop_geom_velocities(np.zeros((3, 3), dtype=np.float32), 1)
    with pytest.raises(ValueError):
        loop_geom_velocities(np.zeros((3, 3)), 1, "maxwell")
    with pytest.raises(ValueError):
        loop_geom_velocities(np.zeros((3, 3)), -5)


@pytest.mark.lammps
def test_numpy_fcc_lattice_reproduces_in_lj_velocities():
    """An fcc lattice built as (cell + basis) * (4/rho)^(1/3) is bit-identical to LAMMPS'
    create_atoms points for bench/in.lj, so its velocities follow without LAMMPS."""
    pytest.importorskip("lammps")
    if not lammps_available():
        pytest.skip("the LAMMPS Python module cannot create an instance here")
    from lammps_oracle import IN_LJ, run_lammps

    res = run_lammps(IN_LJ.split("pair_style")[0], dump_atoms=True)   # in.lj up to its velocities
    scale = (4 / 0.8442) ** (1 / 3)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    cells = np.stack(np.meshgrid(*[np.arange(20)] * 3, indexing="ij"), -1).reshape(-1, 3)
    x = ((cells[:, None, :] + basis[None]) * scale).reshape(-1, 3)
    v = velocity_create_loop_geom(x, 1.44, 87287)
    ours = {tuple(p): tuple(q) for p, q in zip(x, v)}
    lmp_x, lmp_v = res.atoms["x"], res.atoms["v"]
    assert len(ours) == len(lmp_x) == 32000
    got = np.array([ours[tuple(p)] for p in lmp_x])   # KeyError if a position differs
    _assert_close(got, lmp_v)
