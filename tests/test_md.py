"""Dynamics: LAMMPS reference thermo, energy conservation, thermostat statistics, blow-ups."""

import csv

import numpy as np
import pytest

from pycumd import Langevin, NoseHoover, SimulationError, ThermoReporter, VelocityVerlet
from pycumd.simulation import Simulation

from helpers import lj, melt_system

# shared/reference/lammps-in.lj.md: LAMMPS bench/in.lj, every 20 check no
IN_LJ = {0: (1.44, -6.7733681, 0.0, -4.6134356, -5.0197073),
         100: (0.7574531, -5.7585055, 0.0, -4.6223613, 0.20726105)}


def test_in_lj_matches_lammps_reference(tmp_path):
    """bench/in.lj: step 0 to 7 significant digits, step 100 to 6 (the log has 8)."""
    sim = Simulation(melt_system(20), lj(), skin=0.3, neighbor_every=20, neighbor_check=False, device="cpu")
    sim.reporters.append(ThermoReporter(every=100, log=tmp_path / "t.csv", screen=False))
    sim.run(100)
    rows = list(csv.DictReader(open(tmp_path / "t.csv")))
    assert list(rows[0]) == ["Step", "Temp", "E_pair", "E_mol", "TotEng", "Press"]
    for row in rows:
        ref = IN_LJ[int(row["Step"])]
        digits = 7 if row["Step"] == "0" else 6
        for key, value in zip(["Temp", "E_pair", "E_mol", "TotEng", "Press"], ref):
            assert float(row[key]) == pytest.approx(value, rel=10**-digits, abs=10**-digits)


def test_nve_shifted_force_conserves_energy(backend):
    """10,000 steps of a shifted-force LJ liquid: drift and fluctuation of TotEng bounded."""
    sim = Simulation(melt_system(4, temperature=1.0), lj("shift_force"), VelocityVerlet(0.004),
                     device=backend.name, precision="double")
    rep = ThermoReporter(every=500, screen=False)
    sim.reporters.append(rep)
    sim.run(10_000)
    e = np.array([r["TotEng"] for r in rep.rows])
    t = np.array([r["Step"] for r in rep.rows]) * 0.004
    slope = np.polyfit(t, e, 1)[0]
    assert abs(slope) * t[-1] < 2e-4                  # drift per atom over 40 tau
    assert e.std() < 1e-3                             # fluctuation per atom
    assert np.ptp(e) > 0                                # the run did move


def _temperature_series(sim, steps, every=10):
    rep = ThermoReporter(every=every, screen=False)
    sim.reporters.append(rep)
    sim.run(steps)
    return np.array([r["Temp"] for r in rep.rows])


@pytest.mark.parametrize("thermostat", [Langevin(1.2, 0.5, seed=4242), NoseHoover(1.2, 0.25)],
                         ids=["langevin", "nose-hoover"])
def test_thermostat_holds_temperature(backend, thermostat):
    """Mean T within 2% of the target; relative fluctuation near sqrt(2 / (3N)) (canonical)."""
    system = melt_system(5, temperature=2.0)           # 500 atoms, starting hot
    sim = Simulation(system, lj("shift_force"), VelocityVerlet(0.005, thermostat), device=backend.name,
                     precision="double")
    sim.run(1000)                                      # equilibrate
    temps = _temperature_series(sim, 12_000)
    assert temps.mean() == pytest.approx(1.2, rel=0.02)
    expected = np.sqrt(2.0 / (3 * system.n_atoms))
    assert 0.7 * expected < temps.std() / temps.mean() < 1.3 * expected


def test_blow_up_names_step_and_atom_and_keeps_output(tmp_path):
    system = melt_system(4)
    system.velocities[13] = [1e8, 0, 0]
    sim = Simulation(system, lj(), VelocityVerlet(0.005), device="cpu")
    sim.reporters.append(ThermoReporter(every=1, log=tmp_path / "t.csv", screen=False))
    with pytest.raises(SimulationError, match=r"blew up at step \d+: .* atom \d+"):
        sim.run(50)
    sim.close()
    lines = open(tmp_path / "t.csv").read().splitlines()
    assert lines[0] == "Step,Temp,E_pair,E_mol,TotEng,Press" and len(lines) >= 2


@pytest.mark.parametrize("name, array, index, value", [
    ("position", "positions", (7, 1), np.nan), ("velocity", "velocities", (11, 2), -np.inf),
    ("energy", "energy", 5, np.inf)])
def test_finite_check_names_the_array_and_the_atom(backend, name, array, index, value):
    """Every non-finite value is found (on the GPU by the one-read flag kernel first) and named."""
    sim = Simulation(melt_system(4), lj(), device=backend.name, precision="double")
    sim.setup()
    sim.book.mark_energy_current()
    getattr(sim.state, array)[index] = value
    atom = index[0] if isinstance(index, tuple) else index
    with pytest.raises(SimulationError, match=rf"{name} of atom {sim.state.ids[atom]} \(index {atom}\)"):
        sim.book.check_finite()


def test_finite_check_passes_huge_finite_values_and_the_type_column(backend):
    """Huge finite values are finite; the fourth column of the GPU's position rows (the type) is not checked."""
    sim = Simulation(melt_system(4), lj(), device=backend.name, precision="double")
    sim.setup()
    sim.state.velocities[:, 0] = 1e307
    if sim.state.positions.shape[1] == 4:          # the GPU's (N, 4) rows
        sim.state.positions[3, 3] = np.nan
    sim.book.check_finite()


def test_total_momentum_is_zero_and_conserved(backend):
    """create_velocities removes the total momentum; pair forces (Newton's third law) keep it zero."""
    from pycumd.observables import momentum

    system = melt_system(5)
    assert np.abs(momentum(system.velocities, system.per_atom_mass)).max() < 1e-12
    sim = Simulation(system, lj("shift_force"), device=backend.name, precision="double")
    sim.run(500)
    final = sim.system()
    assert np.abs(momentum(final.velocities, final.per_atom_mass)).max() < 1e-10
