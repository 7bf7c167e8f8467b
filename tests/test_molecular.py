"""Molecular topology: bonded styles (force = -grad E), the fixed-order bonded sums, special pairs,
read_data / write_data / checkpoints / dumps / GSD with topology, and LAMMPS as the oracle (in.chain from
the wheel's bench folder; a small deterministic molecular system written here, step for step)."""

import re
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
from helpers import helical_chains_data

#: coefficients of each style for the finite-difference test (LAMMPS' order and units; the bond and angle lepton
#: expressions are those of tests/test_bonded_lepton.py's harmonic ones, whose generated kernels they share)
COEFFS = {("bond", "harmonic"): [300, 1.1], ("bond", "fene"): [30, 1.5, 1.0, 1.0],
          ("bond", "fene/expand"): [30, 1.5, 1.0, 1.0, 0.2], ("bond", "morse"): [2.0, 1.5, 1.0],
          ("angle", "harmonic"): [50, 110], ("angle", "charmm"): [50, 110, 20, 1.7], ("angle", "cosine"): [5],
          ("angle", "cosine/squared"): [40, 100], ("dihedral", "harmonic"): [3, -1, 2],
          ("dihedral", "charmm"): [2, 3, 30, 0], ("dihedral", "opls"): [1.3, -0.5, 0.7, 0.2],
          ("dihedral", "multi/harmonic"): [1, 2, -1, 0.5, 0.3], ("improper", "harmonic"): [40, 10],
          ("improper", "cvff"): [3, -1, 2], ("bond", "lepton"): [1.1, "K*r^2; K=300"],
          ("angle", "lepton"): [110, "K*theta^2; K=50"],
          ("dihedral", "lepton"): ["A*cos(phi) + B*sin(2*phi) + C*phi^2; A=1.3; B=-0.4; C=0.2"]}
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
    atoms, factors = top.scaled_pairs()
    assert atoms.tolist() == [[1, 4]] and factors.tolist() == [0.5]
    assert top.excluded_pairs()[1].tolist() == [2, 3, 4, 1, 3, 4, 1, 2, 4, 1, 2, 3]   # 1-2, 1-3 and the scaled 1-4
    with pytest.raises(NotImplementedError, match="different lj and coul factors for the 1-4 pairs"):
        top.scaled_pairs(has_charges=True)


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
    helical_chains_data(path, "chains written by tests/test_molecular.py", n_chains, length, seed)


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
    "amber": dict(special="amber", bond="morse", bond1="20.0 2.0 0.9", bond2="25.0 1.8 0.95",
                  angle="harmonic", angle1="30.0 110.0", dihedral="harmonic", dihedral1="1.0 -1 3",
                  dihedral2="0.5 1 2", improper="cvff", improper1="2.0 1 2"),
}


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
@pytest.mark.parametrize("combo", sorted(COMBOS))
def test_molecules_match_lammps_step_for_step(tmp_path, combo):
    """NVE of 36 atoms in 6 chains with bonds, angles, dihedrals and impropers (two types each), special
    pairs excluded (lj/coul 0 0 0, fene) or scaled (amber: 1-4 pairs at 0.5): every 20th step of 200 equals
    LAMMPS to 1e-10 (relative, energies and pressure)."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    script = MOLECULE_SCRIPT.format(data=data, **COMBOS[combo])
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert [r["Step"] for r in ours] == list(ref["Step"])
    for k, row in enumerate(ours):
        for key in ("Temp", "PotEng", "TotEng", "E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (combo, row["Step"], key)


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
def test_neigh_modify_exclude_matches_lammps(tmp_path):
    """``neigh_modify exclude molecule/intra all`` and ``exclude type 1 2`` (special pairs plain: the
    exclusions are the neighbour rules' alone): 200 NVE steps equal LAMMPS to 1e-10."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    settings = {**COMBOS["harmonic"], "special": "lj/coul 1.0 1.0 1.0"}
    script = MOLECULE_SCRIPT.format(data=data, **settings).replace(
        "neigh_modify every 1 delay 0 check yes",
        "neigh_modify every 1 delay 0 check yes exclude molecule/intra all exclude type 1 2")
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert ref["E_vdwl"][0] != 0.0                      # pairs of type 1 1 and 2 2 between chains are left
    for k, row in enumerate(ours):
        for key in ("PotEng", "TotEng", "E_vdwl", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
def test_neigh_modify_exclude_group_of_type_groups_matches_lammps(tmp_path):
    """``neigh_modify exclude group A B`` with groups of whole types (their type pairs excluded): 200 NVE
    steps equal LAMMPS to 1e-10; a group of atom IDs is refused with a message naming it."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    settings = {**COMBOS["harmonic"], "special": "lj/coul 1.0 1.0 1.0"}
    script = MOLECULE_SCRIPT.format(data=data, **settings).replace(
        "neigh_modify every 1 delay 0 check yes",
        "group one type 1\ngroup two type 2\nneigh_modify every 1 delay 0 check yes exclude group one two")
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert ref["E_vdwl"][0] != 0.0
    for k, row in enumerate(ours):
        for key in ("PotEng", "TotEng", "E_vdwl", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)
    by_id = script.replace("group one type 1", "group one id 1:5")
    with pytest.raises(Exception, match="group one is not a type group"):
        run_lammps_script(text=by_id, screen=False, device="cpu")


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
def test_replicate_copies_the_topology_as_lammps(tmp_path):
    """``replicate 2 2 1`` of the chains (their terms and molecule IDs copied with the atoms' ID offsets,
    as in.chain.scaled needs): 100 NVE steps equal LAMMPS to 1e-10, and write_data's molecule IDs and
    bonds equal LAMMPS' write_data."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    script = MOLECULE_SCRIPT.format(data=data, **COMBOS["fene"]).replace(
        f"read_data {data}\n", f"read_data {data}\nreplicate 2 2 1\n").replace("run 200", "run 100")
    ref = run_lammps(script + f"write_data {tmp_path / 'lmp.data'} nocoeff\n").thermo
    ours = run_lammps_script(text=script + f"write_data {tmp_path / 'ours.data'} nocoeff\n", screen=False,
                             device="cpu").thermo.rows
    for k, row in enumerate(ours):
        for key in ("PotEng", "TotEng", "E_bond", "E_dihed", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)

    def section(path, title, columns):
        lines = Path(path).read_text().split(f"\n{title}")[1].split("\n\n")[1].splitlines()
        return sorted(tuple(int(w) for w in line.split()[columns]) for line in lines)
    for title, columns in (("Atoms", slice(0, 2)), ("Bonds", slice(1, 4)), ("Impropers", slice(1, 6))):
        assert section(tmp_path / "ours.data", title, columns) == section(tmp_path / "lmp.data", title, columns), title


def test_thermo_style_multi_has_the_energy_parts(tmp_path):
    """thermo_style multi's keywords: the bonded energies as the custom keywords give them, pe their sum
    with the pair energy, elong 0."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    script = MOLECULE_SCRIPT.format(data=data, **COMBOS["harmonic"]).replace("run 200", "run 0")
    custom = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows[0]
    multi = run_lammps_script(text=script.replace("thermo_style custom step temp pe ke etotal ebond eangle edihed eimp "
                                                  "evdwl press", "thermo_style multi"),
                              screen=False, device="cpu").thermo.rows[0]
    for key in ("E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "PotEng", "TotEng"):
        assert multi[key] == custom[key], key
    parts = multi["E_bond"] + multi["E_angle"] + multi["E_dihed"] + multi["E_impro"] + multi["E_vdwl"]
    assert multi["PotEng"] == pytest.approx(parts, rel=1e-14) and multi["E_long"] == 0.0 and multi["E_bond"] > 0


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


@pytest.mark.lammps
def test_in_rhodo_bonded_energies_at_step_0():
    """LAMMPS' bench data.rhodo (rhodopsin in a bilayer, atom style full, CHARMM bonded styles) from the
    wheel: E_bond, E_angle, E_dihed and E_impro at step 0 equal log.15Jul25.rhodo.fixed.g++.1 to its
    printed digits.  The bonded terms are evaluated alone (:class:`BondedForces`, no pair part: in.rhodo's
    lj/charmm/coul/long and PPPM are not part of this); the terms in.rhodo's ``fix shake ... m 1.0 a 232``
    constrains are left out, as LAMMPS' fix shake turns them off (bonds with an atom of mass 1.0 within
    0.1, and angles of type 232)."""
    bench = _bench()
    if bench is None or not (bench / "data.rhodo").exists():
        pytest.skip("LAMMPS wheel's bench folder not installed")
    from pycumd.inputs.lammps_data import read_lammps_data

    data = read_lammps_data(bench / "data.rhodo", "full", per_type_charges=False)
    top = Topology(np.zeros(int(data["ids"].max()) + 1, np.int64), data["terms"], data["term_types"],
                   data["n_term_types"])
    for kind, name in (("bond", "harmonic"), ("angle", "charmm"), ("dihedral", "charmm"), ("improper", "harmonic")):
        top.styles[kind] = make_style(kind, name)
        for t, words, _ in data["term_coeffs"][kind]:
            top.styles[kind].coeff(t, words)
    masses = np.array([data["masses"][t] for t in range(data["n_types"])])
    mass_of_id = np.zeros(len(top.molecule))
    mass_of_id[data["ids"]] = masses[data["types"]]
    constrained = {"bond": (np.abs(mass_of_id[top.terms["bond"]] - 1.0) <= 0.1).any(axis=1),
                   "angle": top.types["angle"] == 232 - 1}
    for kind, out in constrained.items():
        top.terms[kind], top.types[kind] = top.terms[kind][~out], top.types[kind][~out]
    system = System(data["box"], data["positions"] - np.asarray(data["box"].origin), masses, "real",
                    types=data["types"], ids=data["ids"], images=data["images"], topology=top)
    b, prec = _backend.select("cpu"), get_precision("double", "cpu")
    bonded = BondedForces(top, b, prec)
    bonded.compute(State.from_system(system, b, prec), True)
    energies = bonded.energies()
    log = (bench / "log.15Jul25.rhodo.fixed.g++.1").read_text()
    for kind, key in (("bond", "E_bond"), ("angle", "E_angle"), ("dihedral", "E_dihed"), ("improper", "E_impro")):
        printed = re.search(rf"{key}\s*=\s*(\S+)", log).group(1)      # the step-0 block comes first
        assert f"{energies[kind]:.{len(printed.split('.')[1])}f}" == printed, key


# -- data files, checkpoints, dumps, GSD ----------------------------------------------------------
@pytest.mark.lammps
def test_write_data_round_trip_and_outputs(tmp_path):
    """write_data of a molecular system reads back to the same atoms, terms, coefficients and energies;
    a checkpoint carries the topology; a dump writes the mol column; a GSD frame holds the bonds."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    body = MOLECULE_SCRIPT.format(data=data, **COMBOS["harmonic"])
    head, tail = body.split("pair_style lj/cut 2.5")
    first = (head + "pair_style lj/cut 2.5" + tail.replace("run 200", "run 10\nwrite_data {out}\n"
             "dump d all custom 10 {dump} id mol type x y z\nrun 0")).format(out=tmp_path / "out.data",
                                                                            dump=tmp_path / "d.txt")
    ours = run_lammps_script(text=first, screen=False, device="cpu", trajectory=(str(tmp_path / "t.gsd"), 10))
    again = ("units lj\natom_style molecular\nspecial_bonds lj/coul 0.0 0.0 0.0\npair_style lj/cut 2.5\n"
             "bond_style harmonic\nangle_style charmm\ndihedral_style charmm\nimproper_style harmonic\n"
             f"read_data {tmp_path / 'out.data'}\npair_coeff * * 1.0 1.0\npair_coeff 2 2 0.8 1.1\n"
             "neighbor 0.3 bin\nthermo_style custom step pe ebond eangle edihed eimp\nthermo_modify format float %.15g\nrun 0\n")
    read_back = run_lammps_script(text=again, screen=False, device="cpu").thermo.rows[0]
    last = ours.thermo.rows[-1]
    for key in ("PotEng", "E_bond", "E_angle", "E_dihed", "E_impro"):
        assert read_back[key] == pytest.approx(last[key], rel=1e-14, abs=1e-14), key
    text = (tmp_path / "out.data").read_text()
    assert "30 bonds" in text and "18 dihedrals" in text and "Bond Coeffs # harmonic" in text
    ref = run_lammps(again.split("pair_coeff")[0]).log                    # LAMMPS reads it too
    assert "30 bonds" in ref and "12 impropers" in ref
    dump = (tmp_path / "d.txt").read_text().split("ITEM: ATOMS id mol type x y z\n")[-1].splitlines()
    assert [int(line.split()[1]) for line in dump[:7]] == [1] * 6 + [2]
    gsd = pytest.importorskip("gsd.hoomd")
    with gsd.open(str(tmp_path / "t.gsd"), "r") as f:
        frame = f[-1]
    assert frame.bonds.N == 30 and frame.bonds.group[0].tolist() == [0, 1] and frame.dihedrals.N == 18


def test_checkpoint_carries_the_topology(tmp_path):
    from pycumd.checkpoint_file import read_checkpoint, system_from_checkpoint
    from pycumd.outputs.checkpoint import CheckpointWriter
    from pycumd.potentials.lennard_jones import LennardJones
    from pycumd.simulation import Simulation

    n = 10
    top = Topology(np.arange(n + 1) // 5)
    top.terms["bond"] = np.array([[i, i + 1] for i in range(1, n)])
    top.types["bond"] = np.zeros(n - 1, np.int32)
    top.n_types["bond"] = 1
    top.styles["bond"] = make_style("bond", "fene").coeff(0, [30.0, 1.5, 1.0, 1.0])
    top.special = SpecialBonds.from_lammps(["fene"])
    pos = np.array([[1.0 + 0.9 * i, 5.0, 5.0] for i in range(n)])
    system = System(Box([12.0] * 3), pos, [1.0], topology=top)
    sim = Simulation(system, LennardJones(1.12).pair_coeff(0, 0, epsilon=1.0, sigma=1.0), device="cpu")
    sim.run(5)
    writer = CheckpointWriter(tmp_path / "c.ckpt")
    writer.write_now(sim, wait=True)
    writer.close()
    back = system_from_checkpoint(read_checkpoint(tmp_path / "c.ckpt")).topology
    assert np.array_equal(back.terms["bond"], top.terms["bond"]) and np.array_equal(back.molecule, top.molecule)
    assert back.styles["bond"].coefficients == {0: [30.0, 1.5, 1.0, 1.0]} and back.special.lj == (0.0, 1.0, 1.0)
    assert sim.system().molecules.tolist() == [0] * 4 + [1] * 5 + [2]


def test_molecular_runs_over_mpi_ranks_refuse_all_pairs_clearly():
    """Molecules over MPI ranks run on spatial domains (tests/test_parallel.py); all pairs is refused."""
    from pycumd.components import EngineOptions, NeighborOptions, build_components
    from pycumd.integrators import VelocityVerlet
    from pycumd.potentials.lennard_jones import LennardJones

    class TwoRanks:
        size, rank = 2, 0

    top = _one_term("bond", "harmonic", FOUR)
    system = System(Box([10.0] * 3), FOUR, [1.0], topology=top)
    import pycumd.components as components

    original = components.communicator
    components.communicator = lambda comm: TwoRanks()
    try:
        with pytest.raises(NotImplementedError, match="molecular topology over MPI ranks needs spatial domains"):
            build_components(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0), VelocityVerlet(),
                             NeighborOptions(), EngineOptions(device="cpu", pair_method="all_pairs"))
    finally:
        components.communicator = original


def test_a_term_beyond_a_domains_ghost_layer_is_named():
    """Over spatial domains (BondedForces.follow_domain, at each build) a term of an owned atom whose partner
    is not among the rank's rows stops the run with an error naming the term and its atoms; the terms with
    an owned atom are computed, and a term's energy is counted by the rank owning its first atom."""
    from pycumd.backend import select
    from pycumd.precision import get_precision

    positions = np.array([[1.0, 1.0, 1.0], [2.0, 1.0, 1.0], [3.0, 1.0, 1.0], [4.0, 1.0, 1.0]])
    top = _one_term("bond", "harmonic", positions)
    bonded = BondedForces(top, select("cpu"), get_precision("double", "cpu"))
    ids = np.arange(1, 5)
    bonded.follow_domain(ids[[1, 0]], 1)                  # owns the atom of id 2, sees id 1 as a ghost
    assert bonded.which["bond"].tolist() == [0] and bonded.energy_terms["bond"].tolist() == []
    bonded.follow_domain(ids[[0, 1]], 1)                  # owns id 1: the bond's first atom, so its energy
    assert bonded.energy_terms["bond"].tolist() == [0]
    with pytest.raises(InputError, match=r"bond 1 \(atoms 1 2\) reaches beyond the ghost layer"):
        bonded.follow_domain(ids[[0]], 1)                 # owns id 1, its partner id 2 is missing


# -- the GPU: the same bits as the CPU in deterministic double precision ------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not _backend.cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("kind,name", sorted(COEFFS))
def test_gpu_bonded_terms_equal_the_cpu(kind, name):
    """Each style's term and gather kernels on the GPU against the CPU's (deterministic double): the bits
    where the style is arithmetic and sqrt (bond harmonic, angle cosine, cosine/squared), else to 1e-14
    (CUDA's acos, atan2, log, exp, sin, cos may differ from the host's in the last bit)."""
    top = _one_term(kind, name, FOUR)
    e_cpu, f_cpu, s_cpu, _ = _evaluate(top, FOUR, kind)
    e_gpu, f_gpu, s_gpu, b = _evaluate(top, FOUR, kind, backend="cuda")
    exact = (kind, name) in {("bond", "harmonic"), ("angle", "cosine"), ("angle", "cosine/squared")}
    if exact:
        assert np.array_equal(f_cpu, f_gpu) and e_cpu == e_gpu
    else:
        np.testing.assert_allclose(f_gpu, f_cpu, rtol=1e-14, atol=1e-14 * np.abs(f_cpu).max())
        assert e_gpu == pytest.approx(e_cpu, rel=1e-14)


@pytest.mark.cuda
@pytest.mark.skipif(not _backend.cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("use_graphs", [False, True])
def test_gpu_molecular_nve_equals_the_cpu(tmp_path, use_graphs):
    """The small molecular system (harmonic combination: exclusions, all four kinds) 200 NVE steps on the
    GPU in deterministic double precision, step by step and in CUDA graphs: the thermo rows equal the CPU's
    to 1e-12 (the transcendental functions' last bits differ between CUDA's library and the host's)."""
    data = tmp_path / "chains.data"
    _chains_data(data)
    script = MOLECULE_SCRIPT.format(data=data, **COMBOS["harmonic"])
    cpu = run_lammps_script(text=script, screen=False, device="cpu", precision="double", deterministic=True).thermo.rows
    gpu = run_lammps_script(text=script, screen=False, device="cuda", precision="double", deterministic=True,
                            use_graphs=use_graphs).thermo.rows
    for a, b in zip(cpu, gpu):
        for key in ("PotEng", "TotEng", "E_bond", "E_angle", "E_dihed", "E_impro", "Press"):
            assert b[key] == pytest.approx(a[key], rel=1e-10, abs=1e-10), (a["Step"], key)
