"""Ensembles of systems (pycumd.ensemble) and replica exchange (pycumd.tempering).

The batch changes the speed, never the answer: every system's trajectory in an ensemble is
checked against the same system run alone, to the last bit.
"""

from __future__ import annotations

import csv
import itertools
import math

import numpy as np
import pytest

from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
from pycumd.bookkeeping import SimulationError
from pycumd.ensemble import Ensemble, run_in_waves, waves
from pycumd.integrators import Langevin, NoseHoover
from pycumd.integrators.langevin import counter_uniform
from pycumd.tempering import ReplicaExchange, accept_exchange, exchange_log_ratio

from conftest import HAVE_CUDA

#: (lattice cells, density, temperature, velocity seed, epsilon, sigma, thermostat) of four different systems
#: (the first three over neighbour lists, the last, a box shorter than 2 (r_cut + skin) / 0.7, over all pairs)
SYSTEMS = [
    (5, 0.8442, 1.44, 11, 1.0, 1.0, None),
    (5, 0.70, 2.0, 12, 1.1, 0.95, ("nvt", 2.0)),
    ((5, 6, 5), 0.90, 1.0, 13, 0.9, 1.0, None),
    (3, 0.75, 1.8, 14, 1.0, 1.05, ("langevin", 1.8)),
]


def member(i, device="cpu", precision="double", dt=0.005, reporters=(), spec=None):
    """System ``i`` of :data:`SYSTEMS` as a Simulation of its own (skin 0.1: a rebuild every few steps)."""
    cells, density, temperature, seed, eps, sigma, thermostat = spec or SYSTEMS[i]
    system = lattice_system("fcc", cells, density=density)
    create_velocities(system, temperature, seed)
    pot = LennardJones(2.5).pair_coeff(0, 0, epsilon=eps, sigma=sigma)
    th = None
    if thermostat is not None:
        th = (NoseHoover(thermostat[1], 0.5) if thermostat[0] == "nvt"
              else Langevin(thermostat[1], 0.5, 100 + i))
    return Simulation(system, pot, VelocityVerlet(dt, th), reporters=list(reporters), device=device,
                      precision=precision, deterministic=True, skin=0.1)


def same_bits(a: Simulation, b: Simulation) -> bool:
    sa, sb = a.system(), b.system()
    return (np.array_equal(sa.positions, sb.positions) and np.array_equal(sa.velocities, sb.velocities)
            and np.array_equal(sa.images, sb.images))


@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
def test_batch_is_bit_identical_to_each_system_alone(backend, precision, tmp_path):
    """Four systems of different sizes, boxes, densities, parameters and thermostats (NVE, Nose-
    Hoover, Langevin) for 100 steps through many rebuilds: each member ends with the bits of the
    same system run alone; the ensemble's thermo log holds each system's own rows."""
    if backend.name == "cpu" and precision != "double":
        pytest.skip("the CPU runs double only")
    ids = [0, 1, 2] if precision == "composite" else [0, 1, 2, 3]      # composite: no Langevin
    from pycumd.outputs.ensemble_thermo import EnsembleThermoLog

    log = EnsembleThermoLog(tmp_path / "thermo.csv", every=25)
    ens = Ensemble([member(i, backend.name, precision, reporters=[log.reporter(k)]) for k, i in enumerate(ids)])
    ens.run(100)
    log.close()
    from pycumd.outputs.thermo import ThermoReporter

    rows = list(csv.DictReader(open(tmp_path / "thermo.csv")))
    assert [int(r["Step"]) for r in rows[:len(ids)]] == [0] * len(ids)
    for k, i in enumerate(ids):
        thermo = ThermoReporter(every=25, screen=False)
        alone = member(i, backend.name, precision, reporters=[thermo])
        alone.run(100)
        assert alone.pair_method == ("all_pairs" if i == 3 else "neighbor")
        assert alone.neighbors.n_builds >= (2 if i == 3 else 5)
        assert same_bits(alone, ens.members[k]), f"system {i}"
        mine = [r for r in rows if int(r["system"]) == k]
        assert [int(r["Step"]) for r in mine] == [0, 25, 50, 75, 100]
        assert [float(r["TotEng"]) for r in mine] == [r["TotEng"] for r in thermo.rows]
    assert ens.failures == []


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_batch_on_the_gpu_is_bit_identical_to_the_batch_on_the_cpu():
    """Deterministic double-precision NVE: the GPU batch gives the CPU batch's bits (as single runs do,
    tests/test_determinism.py), member by member."""
    out = {}
    for device in ("cpu", "cuda"):
        ens = Ensemble([member(0, device), member(2, device)], verbose=False)
        ens.run(100)
        out[device] = ens
    for a, b in zip(out["cpu"].members, out["cuda"].members):
        assert same_bits(a, b)


def test_batch_without_reporters_matches_a_reporting_run():
    """Stops of the lockstep (at the other members' reports and the finiteness checks) change no bit:
    a member with no reporter of its own ends as the same system run alone with none."""
    ens = Ensemble([member(0), member(2, reporters=[_Every(7)])], check_every=3)
    ens.run(60)
    alone = member(0)
    alone.run(60)
    assert same_bits(alone, ens.members[0])


class _Every:
    """A reporter that only stops the run every ``every`` steps (and asks for energies)."""

    def __new__(cls, every):
        from pycumd.outputs.reporter import Needs, Reporter

        class Stop(Reporter):
            needs = Needs(energy=True)

            def report(self, snapshot):
                pass
        r = Stop()
        r.every = every
        return r


# -- replica exchange -----------------------------------------------------------------------------
def test_two_replica_acceptance_by_hand():
    """E = -100 at T = 1 and -90 at T = 1.5 (k_B = 1): Delta = (-100 + 90)(1 - 1/1.5) = -10/3,
    P = exp(-10/3) = 0.035674; the reverse order is always accepted; the decision of each attempt is
    ``u < P`` with u the counter-based draw of (seed, attempt, pair 0)."""
    delta = exchange_log_ratio(-100.0, -90.0, 1.0, 1.5, 1.0)
    assert delta == pytest.approx(-10.0 / 3.0, rel=1e-15)
    p = math.exp(delta)
    assert p == pytest.approx(0.0356739933, rel=1e-8)
    assert exchange_log_ratio(-90.0, -100.0, 1.0, 1.5, 1.0) > 0 and accept_exchange(10 / 3, 0.999)
    rx = ReplicaExchange([1.0, 1.5], every=1, seed=7)
    n, accepted = 20_000, 0
    for a in range(n):
        rx.replica_at[:] = [0, 1]                    # the same two energies at every attempt
        rx.n_attempts = 2 * a                        # even attempts: the pair (0, 1)
        done = rx.attempt([-100.0, -90.0], 1.0, step=a)
        assert bool(done) == (counter_uniform(7, 2 * a, 0, 0) < p)
        accepted += bool(done)
    assert abs(accepted / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    # odd attempts try pairs (1, 2), ...: none with two replicas
    rx.n_attempts = 1
    assert rx.pairs(1) == [] and rx.attempt([-100.0, -90.0], 1.0, step=0) == []


def test_exchanges_satisfy_detailed_balance():
    """Four replicas of fixed energies (a system with four states), exchange moves only: the chain
    of alternating even/odd attempts samples the joint distribution
    ``pi(sigma) ~ exp(-sum_k E_sigma(k) / T_k)`` over the 24 assignments, within 3 % (the test fails
    with the acceptance sign reversed, or without the factor 1/T differences)."""
    temperatures = [1.0, 1.4, 2.0, 2.8]
    energies = np.array([-6.0, -4.5, -3.0, -2.5])
    rx = ReplicaExchange(temperatures, every=1, seed=3)
    counts: dict = {}
    n = 60_000
    for a in range(n):
        rx.attempt(energies, 1.0, step=a)
        key = tuple(rx.replica_at)
        counts[key] = counts.get(key, 0) + 1
    beta = 1.0 / np.asarray(temperatures)
    weights = {p: math.exp(-float(np.dot(beta, energies[list(p)]))) for p in itertools.permutations(range(4))}
    z = sum(weights.values())
    for p, w in weights.items():
        expected = w / z
        if expected > 0.02:
            assert counts.get(p, 0) / n == pytest.approx(expected, rel=0.03, abs=0.003), p
    # flows between neighbouring temperatures: every accepted exchange is counted once per pair
    assert rx.attempts.sum() == n + n // 2 and np.all(rx.accepted <= rx.attempts)


def tempering(seed=5, device="cpu", precision="double", temperatures=(1.0, 1.25, 1.6), checkpoint=None,
              checkpoint_every=0, cells=3, batch="members"):
    members = []
    for i, t in enumerate(temperatures):
        members.append(member(i, device, precision, spec=(cells, 0.8442, t, 20 + i, 1.0, 1.0, ("langevin", t))))
    return Ensemble(members, exchange=ReplicaExchange(temperatures, every=10, seed=seed), checkpoint=checkpoint,
                    checkpoint_every=checkpoint_every, verbose=False, batch=batch)


def test_replica_exchange_md_is_repeatable_and_follows_metropolis():
    """Three Langevin replicas, an attempt every 10 steps over 120 steps: two runs give the same walk
    and the same bits; each decision equals Metropolis on the replicas' potential energies at that
    step; the accepted replicas' thermostats hold their new temperatures."""
    runs = []
    for _ in range(2):
        ens = tempering()
        decisions = []
        original = ens.exchange.attempt

        def spy(energies, boltz, step, backend=None, original=original, ex=ens.exchange, decisions=decisions):
            before = ex.replica_at.copy()
            a = ex.n_attempts
            done = original(energies, boltz, step, backend=backend)
            decisions.append((before, np.asarray(energies), a, done))
            return done
        ens.exchange.attempt = spy
        ens.run(120)
        runs.append((ens, decisions))
    (a, da), (b, _) = runs
    assert len(da) == 12 and a.exchange.n_attempts == 12
    assert [w.tolist() for _, w in a.exchange.walk] == [w.tolist() for _, w in b.exchange.walk]
    assert all(same_bits(x, y) for x, y in zip(a.members, b.members))
    t = a.exchange.temperatures
    for before, energies, attempt, done in da:
        expected = []
        for k in a.exchange.pairs(attempt):
            lo, hi = before[k], before[k + 1]
            d = exchange_log_ratio(energies[lo], energies[hi], t[k], t[k + 1], 1.0)
            if accept_exchange(d, counter_uniform(5, attempt, k, 0)):
                expected.append((k, lo, hi))
        assert done == expected
    assert a.exchange.accepted.sum() > 0           # the ladder is close enough for some exchanges
    index = a.exchange.temperature_index
    for i, m in enumerate(a.members):
        assert m.thermostat.t_start == m.thermostat.t_stop == t[index[i]]


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["single", "mixed", "double"])
def test_replica_exchange_on_the_gpu_repeats_and_matches_replicas_alone(precision):
    """Tempering on the GPU: two runs give the same walk and bits; with no exchange accepted before
    step 10 each replica's first 10 steps are those of its run alone."""
    runs = [tempering(device="cuda", precision=precision) for _ in range(2)]
    for ens in runs:
        ens.run(120)
    a, b = runs
    assert [w.tolist() for _, w in a.exchange.walk] == [w.tolist() for _, w in b.exchange.walk]
    assert all(same_bits(x, y) for x, y in zip(a.members, b.members))
    first = tempering(device="cuda", precision=precision)
    first.run(9)                                  # before the first attempt (step 10)
    for i, t in enumerate((1.0, 1.25, 1.6)):
        alone = member(i, "cuda", precision, spec=(3, 0.8442, t, 20 + i, 1.0, 1.0, ("langevin", t)))
        alone.run(9)
        assert same_bits(alone, first.members[i])


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_exchange_decisions_on_the_device_equal_the_hosts(rng):
    """tempering.cu's exchange_attempt against the host's rule: 6 replicas, 400 attempts of random
    energies (spread so that about half the pairs are accepted): the same ladders, counts and walk."""
    from pycumd import backend as _backend

    gpu = _backend.select("cuda")
    temperatures = [1.0, 1.1, 1.25, 1.4, 1.6, 1.8]
    host, device = (ReplicaExchange(temperatures, every=1, seed=11) for _ in range(2))
    for a in range(400):
        energies = rng.normal(-500.0, 8.0, size=6)
        assert host.attempt(energies, 1.0, a) == device.attempt(energies, 1.0, a, backend=gpu)
        assert np.array_equal(host.replica_at, device.replica_at)
    assert np.array_equal(host.accepted, device.accepted) and 0 < host.accepted.sum() < host.attempts.sum()


def test_exchange_scales_velocities_as_lammps_temper():
    """An accepted exchange scales each replica's velocities by sqrt(T_new / T_old) and resets its
    thermostat's target (LAMMPS Temper::scale_velocities, Fix::reset_target)."""
    ens = tempering(temperatures=(1.0, 1.5, 2.0))
    v0 = [m.state.velocities.copy() for m in ens.members]
    ens.exchange.apply(ens.members, [(0, 0, 1)])
    assert np.array_equal(ens.members[0].state.velocities, v0[0] * math.sqrt(1.5 / 1.0))
    assert np.array_equal(ens.members[1].state.velocities, v0[1] * math.sqrt(1.0 / 1.5))
    assert np.array_equal(ens.members[2].state.velocities, v0[2])
    assert ens.members[0].thermostat.t_start == 1.5 and ens.members[1].thermostat.t_start == 1.0


def test_replica_exchange_needs_a_thermostat_per_replica():
    with pytest.raises(ValueError, match="system 0 has no thermostat"):
        Ensemble([member(0), member(2)], exchange=ReplicaExchange([1.0, 1.2], every=5, seed=1))
    with pytest.raises(ValueError, match="increasing"):
        ReplicaExchange([1.2, 1.0], every=5, seed=1)


def test_checkpoint_restart_equals_the_continuous_run(tmp_path):
    """A tempering batch checkpointed at step 30 of a 60-step run and continued from the file ends
    with the continuous run's bits, walk and acceptance counts."""
    path = tmp_path / "batch.ckpt"
    continuous = tempering(checkpoint=path, checkpoint_every=30)
    continuous.run(60)
    restarted = tempering()
    restarted.restore_checkpoint(str(path) + ".1")        # the checkpoint of step 30 (PATH.1: the one before)
    assert restarted.step == 30
    restarted.run(30)
    assert all(same_bits(x, y) for x, y in zip(continuous.members, restarted.members))
    assert [w.tolist() for _, w in continuous.exchange.walk] == [w.tolist() for _, w in restarted.exchange.walk]
    assert np.array_equal(continuous.exchange.accepted, restarted.exchange.accepted)
    with pytest.raises(ValueError, match="steps left"):
        again = tempering()
        again.restore_checkpoint(str(path) + ".1")
        again.run(10)


def test_a_system_that_blows_up_is_reported_and_the_others_go_on(capsys):
    """System 1 with a time step 20 times too large blows up; the ensemble names it and the step,
    and the others end with the bits of their runs alone; stop_all_on_error stops them all."""
    ens = Ensemble([member(0), member(2, dt=0.1), member(1)], check_every=10)
    ens.run(100)
    assert [f.system for f in ens.failures] == [1]
    assert 0 < ens.failures[0].step <= 100 and ens.failures[0].step % 10 == 0
    assert "system 1 stopped at step" in capsys.readouterr().err
    assert np.isnan(ens.potential_energies()[1]) and np.isfinite(ens.potential_energies()[[0, 2]]).all()
    for k, i in ((0, 0), (2, 1)):
        alone = member(i)
        alone.run(100)
        assert same_bits(alone, ens.members[k])
    with pytest.raises(SimulationError, match="system 1 of the ensemble"):
        Ensemble([member(0), member(2, dt=0.1)], stop_all_on_error=True, check_every=10).run(100)


def test_waves_split_a_batch_that_does_not_fit(capsys):
    """With room for two systems at a time, five run in three waves (a message says so), each
    member with the bits of its run alone."""
    assert [list(w) for w in waves([10, 10, 10, 10, 10], 1.0, 25)] == [[0, 1], [2, 3], [4]]
    assert [list(w) for w in waves([100], 1.0, 25)] == [[0]]          # one system always runs
    specs = [(3, d, 1.5, 30 + i, 1.0, 1.0, None) for i, d in enumerate([0.70, 0.74, 0.78, 0.82, 0.86])]
    per_system = member(0, spec=specs[0])
    from pycumd.ensemble import member_bytes

    budget = int(2.5 * member_bytes(per_system))
    done = run_in_waves(lambda i: member(0, spec=specs[i]), [108] * 5, 20, memory_budget=budget)
    assert [e.n_systems for e in done] == [2, 2, 1]
    assert "in 3 waves" in capsys.readouterr().err
    alone = member(0, spec=specs[3])
    alone.run(20)
    assert same_bits(alone, done[1].members[1])


def test_ensemble_checks_its_input():
    with pytest.raises(ValueError, match="at least one"):
        Ensemble([])
    a, b = member(0), member(2)
    b.run(1)
    with pytest.raises(ValueError, match="same step"):
        Ensemble([a, b])
    with pytest.raises(ValueError, match="one per system"):
        Ensemble.from_systems([a.system(), b.system()], a.potential, [VelocityVerlet()], device="cpu")


# -- interfaces: TOML sweeps, the command line, LAMMPS scripts --------------------------------------
SWEEP_TOML = """
sweep = {density = [0.70, 0.80], seed = [1, 2]}
units = "lj"
device = "cpu"
[system]
lattice = "fcc"
cells = 5
[velocity]
temperature = 2.0
seed = 9
[pair]
r_cut = 2.5
[[pair.coeff]]
types = [1, 1]
epsilon = 1.0
sigma = 1.0
[neighbor]
skin = 0.1
[run]
steps = 40
thermo = 20
"""


def test_toml_sweep_is_one_member_per_combination():
    """``sweep = {density = [...], seed = [...]}``: four members (the last key fastest), each the
    config with those values: the same bits as that config run alone."""
    from pycumd.ensemble import execute_ensemble
    from pycumd.inputs.config import load_config, plan_from_config
    from pycumd.run_plan import execute

    plan = plan_from_config(load_config(SWEEP_TOML), deterministic=True)
    assert plan.labels == [{"density": 0.7, "seed": 1}, {"density": 0.7, "seed": 2},
                           {"density": 0.8, "seed": 1}, {"density": 0.8, "seed": 2}]
    assert [s.n_atoms for s in plan.systems] == [500] * 4
    assert plan.systems[2].box.L[0] == pytest.approx((4 / 0.8) ** (1 / 3) * 5, rel=1e-14)
    ens = execute_ensemble(plan, out=None)
    single = SWEEP_TOML.split("\n", 2)[2].replace("cells = 5", "cells = 5\ndensity = 0.8").replace("seed = 9", "seed = 2")
    result = execute(plan_from_config(load_config(single), deterministic=True))
    assert same_bits(result.sim, ens.members[3])


@pytest.mark.parametrize("text, message", [
    ("sweep = {density = 0.7}", "expected a non-empty list"),
    ("sweep = {colour = [1, 2]}", "not a key that can be swept"),
    ("sweep = {density = [0.7, -1.0]}", "sweep density = -1.0: system.density = -1.0: expected a number > 0"),
    ("sweep = {density = [0.7]}\n[tempering]\nevery = 10\nseed = 1", "sweep over temperature only"),
    ("[tempering]\nevery = 10\nseed = 1", "needs a sweep over the temperature ladder"),
])
def test_toml_sweep_errors_name_the_key(text, message):
    from pycumd.inputs.config import ConfigError, load_config, plan_from_config

    body = SWEEP_TOML.split("\n", 2)[2]
    if text.startswith("["):
        body = body + text
    else:
        body = text + "\n" + body
        if "[tempering]" in text:
            first, rest = text.split("\n", 1)
            body = first + "\n" + SWEEP_TOML.split("\n", 2)[2].replace("[run]", "[integrator]\nthermostat = \"langevin\"\n"
                                                                       "temperature = 1.0\ndamping = 0.5\nseed = 3\n[run]") + rest
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")):
        plan_from_config(load_config(body))


def test_toml_tempering_runs_replica_exchange_and_restarts_from_the_command_line(tmp_path, monkeypatch, capsys):
    """``sweep = {temperature = [...]}`` with [tempering]: a ladder of Langevin replicas exchanging every
    10 steps; ``pycumd run --restart`` of the batch checkpoint at step 20 writes the log of the
    continuous run again, to the last digit."""
    from pycumd.cli import main

    text = ("sweep = {temperature = [1.0, 1.15, 1.3]}\n" + SWEEP_TOML.split("\n", 2)[2]
            .replace("cells = 5", "cells = 3\ndensity = 0.8442").replace("steps = 40", "steps = 40")
            .replace("[run]", "[integrator]\nthermostat = \"langevin\"\ndamping = 0.5\nseed = 3\n"
                              "[tempering]\nevery = 10\nseed = 4\nlog = \"walk.csv\"\n[run]"))
    (tmp_path / "rx.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "rx.toml", "--log", "rx.csv", "--checkpoint", "rx.ckpt", "--checkpoint-every", "20"]) == 0
    out = capsys.readouterr()
    assert "replica exchange: 4 attempts every 10 steps" in out.err
    full = (tmp_path / "rx.csv").read_text()
    rows = list(csv.DictReader(full.splitlines()))
    assert sorted({int(r["system"]) for r in rows}) == [0, 1, 2] and max(int(r["Step"]) for r in rows) == 40
    walk = (tmp_path / "walk.csv").read_text()
    lines = walk.splitlines()
    assert lines[0] == "step,T0,T1,T2" and [int(x.split(",")[0]) for x in lines[1:]] == [10, 20, 30, 40]
    assert all(sorted(map(int, x.split(",")[1:])) == [0, 1, 2] for x in lines[1:])
    assert main(["run", "--restart", "rx.ckpt.1"]) == 0
    assert (tmp_path / "rx.csv").read_text() == full
    assert (tmp_path / "walk.csv").read_text() == walk


def test_lammps_multi_partition_scripts_without_partitions_say_so(tmp_path):
    """Without -partition a world variable of several values and temper stop, naming the line and
    pointing at -partition Nx1; -partition of a script without temper is refused (tests/test_temper.py
    runs temper)."""
    from pycumd.cli import main
    from pycumd.inputs.lammps_input import plan_from_lammps_script
    from pycumd.inputs.lammps_script import LammpsScriptError

    script = ("units lj\nlattice fcc 0.8442\nregion b block 0 5 0 5 0 5\ncreate_box 1 b\ncreate_atoms 1 box\n"
              "mass 1 1.0\npair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0\n")
    with pytest.raises(LammpsScriptError, match=":9: variable t world has 2 values, one per partition: it needs LAMMPS partitions.*-partition Nx1"):
        plan_from_lammps_script(text=script + "variable t world 1.0 1.2\n")
    with pytest.raises(LammpsScriptError, match=":11: temper: it needs LAMMPS partitions"):
        plan_from_lammps_script(text=script + "variable t world 1.0\nfix 1 all langevin $t $t 0.5 1\n"
                                              "temper 1000 100 $t 1 3 4\n")
    (tmp_path / "in.x").write_text(script + "run 0\n")
    assert main(["run", "-partition", "2x1", str(tmp_path / "in.x")]) == 2


def test_from_systems_writes_gsd_frames_per_system(tmp_path):
    """``trajectory="f_{system}.gsd"``: one GSD file per system with its own frames (steps 0, 20, 40),
    the last frame that of the system run alone; sizes and boxes differ between the files."""
    gsd_hoomd = pytest.importorskip("gsd.hoomd")
    specs = [(3, 0.8442, 1.5, 41, 1.0, 1.0, None), ((3, 4, 3), 0.7, 1.2, 42, 1.2, 1.0, None)]
    systems = []
    for cells, density, t, seed, *_ in specs:
        s = lattice_system("fcc", cells, density=density)
        create_velocities(s, t, seed)
        systems.append(s)
    pots = [LennardJones(2.5).pair_coeff(0, 0, epsilon=eps, sigma=sig) for *_, eps, sig, _ in specs]
    ens = Ensemble.from_systems(systems, pots, trajectory=tmp_path / "f_{system}.gsd", trajectory_every=20,
                                device="cpu", deterministic=True, skin=0.1)
    ens.run(40)
    ens.close()
    for i in range(2):
        with gsd_hoomd.open(str(tmp_path / f"f_{i}.gsd"), "r") as f:
            frames = list(f)
        assert [fr.configuration.step for fr in frames] == [0, 20, 40]
        assert frames[0].particles.N == systems[i].n_atoms
        assert np.allclose(frames[0].configuration.box[:3], systems[i].box.L)
        alone = member(0, spec=specs[i])
        alone.run(40)
        final = alone.system()
        expected = (final.positions - 0.5 * final.box.L).astype(np.float32)
        assert np.array_equal(frames[-1].particles.position, expected)
    with pytest.raises(ValueError, match=r"\{system\}"):
        Ensemble.from_systems(systems, pots, trajectory=tmp_path / "one.gsd", device="cpu")


def test_jzg_equation_of_state_of_the_example():
    """The example's JZG 1993 pressure: its low-density limit is the LJ second virial coefficient at
    T* = 2 (B2 = -2 pi int (exp(-u/T) - 1) r^2 dr, by quadrature: -1.3145 sigma^3) to 0.2 %, and it
    passes through the literature's P* = 1.96 at (rho*, T*) = (0.85, 1.0) within 1 %."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "lj_eos" / "lj_eos_sweep.py"
    spec = importlib.util.spec_from_file_location("lj_eos_sweep", path)
    eos = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(eos)
    r = np.linspace(1e-4, 40.0, 400_001)
    u = 4.0 * (r**-12 - r**-6)
    b2 = -2.0 * math.pi * np.trapezoid((np.exp(-u / 2.0) - 1.0) * r**2, r)
    assert b2 == pytest.approx(-1.3145, abs=5e-4)
    rho = 1e-4
    assert (eos.jzg_pressure(rho, 2.0) / (rho * 2.0) - 1.0) / rho == pytest.approx(b2, rel=2e-3)
    assert eos.jzg_pressure(0.85, 1.0) == pytest.approx(1.96, rel=0.01)
    assert eos.full_potential_correction(0.8, 3.0) == pytest.approx(-0.396796, abs=1e-6)


# -- the batched engine's binning (docs/batch.md) -------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_counting_sort_bins_every_system_as_its_own_sort(backend, dtype, rng):
    """Three systems of different sizes, boxes and cell grids in consecutive segments: the batched
    keys are each system's cell_index keys plus its first cell, and one stable counting sort of the
    whole batch puts each system's particles in its own segment in the order of its own sort."""
    from pycumd.neighbors.counting_sort import batch_cell_index, cell_index, counting_sort

    xp = backend.xp
    sizes = [300, 57, 1000]
    boxes = np.array([[7.1, 7.1, 7.1], [5.0, 6.5, 4.2], [11.3, 9.9, 10.4]])
    grids = np.array([[4, 4, 4], [3, 3, 2], [7, 6, 6]])
    parts = [rng.uniform(-0.3, 1.3, size=(n, 4)) * np.append(L, 1.0) for n, L in zip(sizes, boxes)]
    positions = xp.asarray(np.concatenate(parts).astype(dtype))
    system = xp.asarray(np.repeat(np.arange(3), sizes).astype(np.int32))
    keys, cell_offset = batch_cell_index(positions, system, boxes, grids)
    assert cell_offset.tolist() == [0, 64, 82, 82 + 252]
    result = counting_sort(keys, int(cell_offset[-1]))
    order = backend.to_host(result.order)
    start = 0
    for s, n in enumerate(sizes):
        own_keys = cell_index(xp.asarray(parts[s].astype(dtype)), boxes[s], grids[s])
        assert np.array_equal(backend.to_host(keys)[start:start + n], backend.to_host(own_keys) + cell_offset[s])
        own = backend.to_host(counting_sort(own_keys, int(np.prod(grids[s]))).order)
        assert np.array_equal(order[start:start + n], own + start)
        start += n


# -- the batched engine (pycumd.batch_engine): all systems in shared arrays, one call per kernel -------
#: (lattice cells, density, temperature, velocity seed, epsilon, sigma, cutoff, dt, Langevin seed or None):
#: four systems of different sizes (500 to 864 atoms), boxes (one not cubic), densities, LJ parameters,
#: cutoffs, time steps and thermostats, all over neighbour lists
BATCH_SYSTEMS = [
    (5, 0.8442, 1.44, 11, 1.0, 1.0, 2.5, 0.005, None),
    ((5, 6, 5), 0.90, 1.0, 13, 0.9, 1.0, 2.5, 0.004, None),
    ((6, 5, 5), 0.70, 2.0, 12, 1.1, 0.95, 3.0, 0.005, 101),
    (6, 0.75, 1.8, 14, 1.0, 1.05, 2.5, 0.003, 102),
]


#: a temperature ladder close enough for exchanges between replicas of 500 atoms
LADDER = (1.0, 1.05, 1.1)


def batch_member(i, device="cpu", precision="double", reporters=(), dt_scale=1.0):
    """System ``i`` of :data:`BATCH_SYSTEMS` as a Simulation of its own (deterministic, skin 0.1)."""
    cells, density, temperature, seed, eps, sigma, cutoff, dt, noise = BATCH_SYSTEMS[i]
    system = lattice_system("fcc", cells, density=density)
    create_velocities(system, temperature, seed)
    pot = LennardJones(cutoff).pair_coeff(0, 0, epsilon=eps, sigma=sigma)
    th = None if noise is None else Langevin(temperature, 0.5, noise)
    return Simulation(system, pot, VelocityVerlet(dt * dt_scale, th), reporters=list(reporters), device=device,
                      precision=precision, deterministic=True, skin=0.1)


def check_batched_against_alone(device, precision, steps=100, tmp_path=None, batch_step="auto", by_id=None):
    """A batched ensemble of BATCH_SYSTEMS against each system run alone: the same bits, the same
    number of list builds (each system rebuilds at its own steps), the same thermo rows.  ``by_id``
    (GPU): the systems' lists made in id order (True) or by the stencil of cells (False)."""
    from pycumd.outputs.ensemble_thermo import EnsembleThermoLog
    from pycumd.outputs.thermo import ThermoReporter

    log = EnsembleThermoLog(tmp_path / "thermo.csv", every=25)
    n = len(BATCH_SYSTEMS)
    ens = Ensemble([batch_member(i, device, precision, reporters=[log.reporter(i)]) for i in range(n)],
                   batch="batched", verbose=False, batch_step=batch_step)
    assert ens.engine is not None and ens.engine.n_systems == n
    if by_id is not None:
        ens.engine.use_lists_by_id(by_id)
    ens.run(steps)
    log.close()
    rows = list(csv.DictReader(open(tmp_path / "thermo.csv")))
    builds = []
    for i in range(n):
        thermo = ThermoReporter(every=25, screen=False)
        alone = batch_member(i, device, precision, reporters=[thermo])
        alone.run(steps)
        assert same_bits(alone, ens.members[i]), f"system {i}"
        assert ens.members[i].neighbors.n_builds == alone.neighbors.n_builds, f"system {i}"
        mine = [r for r in rows if int(r["system"]) == i]
        assert [float(r["TotEng"]) for r in mine] == [r["TotEng"] for r in thermo.rows]
        builds.append(alone.neighbors.n_builds)
    assert min(builds) >= 5 and len(set(builds)) > 1          # rebuilds at steps of each system's own
    return ens


def test_batched_engine_is_bit_identical_to_each_system_alone(tmp_path):
    """CPU, double, deterministic: four systems of different sizes, boxes, densities, seeds, LJ
    parameters, cutoffs, time steps, NVE and Langevin, 100 steps in the batched engine (one call of
    each kernel per step over the 2,564 atoms) end with the bits of each system alone, after the same
    number of list builds; the thermo rows are the same; the engine's per-system sums agree with the
    members' own (another summation order: to 1e-12)."""
    ens = check_batched_against_alone("cpu", "double", tmp_path=tmp_path)
    sums = ens.engine.system_sums()
    np.testing.assert_allclose(sums["energy"], ens.potential_energies(), rtol=1e-12)
    kinetic = np.array([m.kinetic_energy() for m in ens.members])
    np.testing.assert_allclose(sums["kinetic"], kinetic, rtol=1e-12)


def test_batched_replica_exchange_walks_as_the_member_engine_and_restarts(tmp_path):
    """Three Langevin replicas (500 atoms each, T = 1.0, 1.05, 1.1) with an exchange attempt every 10
    steps for 60 steps: the batched engine gives the member engine's walk (2 of 6 attempts accepted),
    acceptance counts and bits; checkpointed at step 30 and continued from the file, it ends with the
    continuous run's bits and walk."""
    path = tmp_path / "batch.ckpt"
    a = tempering(cells=5, temperatures=LADDER)
    a.run(60)
    b = tempering(cells=5, temperatures=LADDER, checkpoint=path, checkpoint_every=30, batch="batched")
    b.run(60)
    assert b.engine is not None and a.engine is None
    assert a.exchange.accepted.sum() > 0
    assert [w.tolist() for _, w in a.exchange.walk] == [w.tolist() for _, w in b.exchange.walk]
    assert np.array_equal(a.exchange.accepted, b.exchange.accepted)
    assert all(same_bits(x, y) for x, y in zip(a.members, b.members))
    restarted = tempering(cells=5, temperatures=LADDER, batch="batched")
    restarted.restore_checkpoint(str(path) + ".1")        # the checkpoint of step 30
    restarted.run(30)
    assert all(same_bits(x, y) for x, y in zip(b.members, restarted.members))
    assert [w.tolist() for _, w in b.exchange.walk] == [w.tolist() for _, w in restarted.exchange.walk]


def test_batched_engine_masks_a_system_that_blows_up(capsys):
    """A system that blows up in a batch is named, masked, and the others end with the bits they
    have alone."""
    ens = Ensemble([batch_member(0), batch_member(1, dt_scale=25.0), batch_member(3)], check_every=10,
                   batch="batched")
    ens.run(60)
    assert [f.system for f in ens.failures] == [1] and not ens.engine.active[1]
    assert "system 1 stopped at step" in capsys.readouterr().err
    for k, i in ((0, 0), (2, 3)):
        alone = batch_member(i)
        alone.run(60)
        assert same_bits(alone, ens.members[k])


def test_batched_engine_refuses_what_it_does_not_run():
    """A clear error naming the system and what the batched engine does not run; ``batch="auto"``
    keeps the member engine for such an ensemble and takes the batched one where it runs."""
    from pycumd.batch_engine import BatchUnsupported

    nvt = member(1)                                  # Nose-Hoover
    with pytest.raises(BatchUnsupported, match="system 1: .*Nose-Hoover.* does not run in the batched engine"):
        Ensemble([batch_member(0), nvt], batch="batched")
    with pytest.raises(BatchUnsupported, match="system 0 evaluates all pairs"):
        Ensemble([member(3)], batch="batched")
    loose = Simulation(lattice_system("fcc", 5, density=0.8), LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0,
                                                                                           sigma=1.0))
    with pytest.raises(BatchUnsupported, match="not in deterministic mode"):
        Ensemble([loose], batch="batched")
    with pytest.raises(ValueError, match="batch must be"):
        Ensemble([batch_member(0)], batch="gpu")
    assert Ensemble([batch_member(0), nvt], batch="auto").engine is None
    assert Ensemble([batch_member(0), batch_member(2)], batch="auto").engine is not None


def test_pycumd_run_batch_option_runs_a_sweep_in_the_batched_engine(tmp_path, monkeypatch, capsys):
    """``pycumd run sweep.toml --batch batched --deterministic`` writes the thermo log of the member
    engine's run, digit for digit; without --deterministic it says what the batched engine needs; on
    one run --batch is refused."""
    from pycumd.cli import main

    (tmp_path / "sweep.toml").write_text(SWEEP_TOML)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "sweep.toml", "--deterministic", "--steps", "20", "--log", "members.csv"]) == 0
    assert main(["run", "sweep.toml", "--deterministic", "--steps", "20", "--batch", "batched",
                 "--log", "batched.csv"]) == 0
    assert open("members.csv").read() == open("batched.csv").read()
    capsys.readouterr()
    assert main(["run", "sweep.toml", "--batch", "batched"]) != 0
    assert "--deterministic on the command line" in capsys.readouterr().err
    (tmp_path / "one.toml").write_text(SWEEP_TOML.split("\n", 2)[2].replace("cells = 5", "cells = 5\ndensity = 0.8"))
    assert main(["run", "one.toml", "--batch", "batched"]) != 0
    assert "--batch batched chooses the engine of a batch of runs" in capsys.readouterr().err


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_batched_engine_on_the_gpu_is_bit_identical_to_each_system_alone(precision, tmp_path):
    """The GPU's batched kernels (-DBATCH=1) against each system alone on the GPU, in deterministic
    double and single precision: the same bits, builds and thermo rows."""
    check_batched_against_alone("cuda", precision, tmp_path=tmp_path)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_batched_engine_gpu_double_is_the_cpus(tmp_path):
    """Deterministic double precision: the GPU's batched engine ends with the CPU's batched engine's
    bits, system by system (as single runs do, tests/test_determinism.py)."""
    out = {}
    for device in ("cpu", "cuda"):
        ens = Ensemble([batch_member(i, device) for i in range(len(BATCH_SYSTEMS))], batch="batched", verbose=False)
        ens.run(100)
        out[device] = ens
    for i, (a, b) in enumerate(zip(out["cpu"].members, out["cuda"].members)):
        assert same_bits(a, b), f"system {i}"


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_batched_replica_exchange_on_the_gpu_walks_as_the_member_engine(precision):
    """GPU tempering: the batched engine's walk and bits are the member engine's."""
    runs = {}
    for batch in ("members", "batched"):
        ens = tempering(device="cuda", precision=precision, cells=5, temperatures=LADDER, batch=batch)
        ens.run(120)
        runs[batch] = ens
    a, b = runs["members"], runs["batched"]
    assert [w.tolist() for _, w in a.exchange.walk] == [w.tolist() for _, w in b.exchange.walk]
    assert all(same_bits(x, y) for x, y in zip(a.members, b.members))


def test_batch_step_option_and_the_device_loop_plan():
    """``batch_step`` is checked (a clear error; the graph needs the GPU); the host-side arithmetic of
    the batched device loop: a launch of n steps runs whole passes of U steps while one ends before
    the last step (loop_start / loop_step_done's rule, step_control.cu), then the rest, n in all;
    a system's ring of the last 20 largest counts is read back oldest first."""
    from pycumd.batch_engine import BatchUnsupported
    from pycumd.batch_graph import loop_plan, ring_counts

    with pytest.raises(ValueError, match="batch_step must be one of 'auto', 'graph', 'host'"):
        Ensemble([batch_member(0)], batch="batched", batch_step="device")
    with pytest.raises(BatchUnsupported, match="step='graph' runs the batch's steps in a CUDA graph"):
        Ensemble([batch_member(0)], batch="batched", batch_step="graph")
    assert Ensemble([batch_member(0)], batch="batched", batch_step="host").engine.stepped == "host"
    for unroll in (1, 3, 4):
        for n in range(1, 14):
            passes, left = loop_plan(n, unroll)
            done, device_passes = 0, 0
            go_on = n - 1 >= unroll                     # loop_start
            while go_on:
                done += unroll
                device_passes += 1
                go_on = done + unroll <= n - 1          # loop_step_done
            assert (passes, done + left + 1) == (device_passes, n), (n, unroll)
            assert 0 <= left < unroll
    with pytest.raises(ValueError):
        loop_plan(0, 4)
    # the GPU list kernel of each system: in id order up to 2,048 atoms with the ids 1 .. N, else the stencil's
    from pycumd.batch_engine import lists_by_id

    assert lists_by_id([500, 1000, 2048, 2049, 4000, 1000], [True] * 5 + [False]).tolist() == [
        True, True, True, False, False, False]
    # the bench's A/B: --batch-step both times the graph ("batched"), then the host path ("batched_host")
    from pycumd.bench.batch import _timed_engines, independent

    assert _timed_engines(("batched", "members"), "both") == [
        ("batched", "batched", "graph"), ("batched_host", "batched", "host"), ("members", "members", "auto")]
    assert _timed_engines(("batched",), "auto") == [("batched", "batched", "auto")]
    out = independent(2, 500, 3, 0, "cpu", "double", baselines=(), engine="batched", batch_step="host")
    assert out["batched_step"] == "host" and out["batched_engine_atom_steps_per_s"] > 0
    ring = np.zeros(20, np.uint32)
    for b in range(27):                                 # batch_build_done: build b's count at b mod 20
        ring[b % 20] = 100 + b
    assert ring_counts(ring, 27) == list(range(107, 127))
    assert ring_counts(ring, 3) == [120, 121, 122]      # fewer builds than the ring: the first ones
    assert ring_counts(ring, 0) == []


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_graph_stepped_batch_is_bit_identical_to_each_system_alone(precision, tmp_path):
    """The batch's steps in the device loop (pycumd.batch_graph: one CUDA graph launch per stretch
    between two thermo stops, the rebuild decisions and builds on the device) against each system
    alone on the GPU: the same bits, builds and thermo rows."""
    ens = check_batched_against_alone("cuda", precision, tmp_path=tmp_path, batch_step="graph")
    graph = ens.engine._graph
    assert ens.engine.stepped == "graph" and graph.builds > 5
    assert graph.launches == 4 + graph.overflows           # one per stretch (and one after an overflow)


def _batched_run(device, precision, batch_step, steps=100, every=25, narrow=False):
    """BATCH_SYSTEMS in the batched engine, thermo every ``every`` steps; ``narrow``: at the run's start
    the batch's list storage cut to 4 slots per atom and every system's positions at build moved by
    1 (so every system rebuilds at step 1 and every row overflows: the storage grows as alone)."""
    from pycumd.outputs.thermo import ThermoReporter

    n = len(BATCH_SYSTEMS)
    ens = Ensemble([batch_member(i, device, precision, reporters=[ThermoReporter(every=every, screen=False)])
                    for i in range(n)], batch="batched", batch_step=batch_step, verbose=False)
    if narrow:
        engine = ens.engine
        begin = engine.begin_run

        def narrow_begin():
            begin()
            engine.nbr = engine.nbr[:4 * engine.n_atoms].copy()
            engine.arrays["positions_at_build"][:, 0] += 1.0
        engine.begin_run = narrow_begin
    ens.run(steps)
    return ens


def _same_runs(a, b):
    for i, (x, y) in enumerate(zip(a.members, b.members)):
        assert same_bits(x, y), f"system {i}"
        assert x.neighbors.n_builds == y.neighbors.n_builds, f"system {i}"
        assert x.neighbors.recent_max_counts == y.neighbors.recent_max_counts, f"system {i}"
        assert x.neighbors.steps_since_build == y.neighbors.steps_since_build, f"system {i}"
        assert (x.neighbors.overflows, x.neighbors.capacity) == (y.neighbors.overflows, y.neighbors.capacity)
        assert [r["TotEng"] for r in x.reporters[0].rows] == [r["TotEng"] for r in y.reporters[0].rows]
    assert a.engine.n_builds == b.engine.n_builds


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("batch_step", ["graph", "host"])
def test_batched_lists_by_the_stencil_are_the_lists_in_id_order(batch_step, tmp_path):
    """The systems of BATCH_SYSTEMS (500-864 atoms) are listed in id order by default
    (build_list_batch_by_id); listed by the stencil of cells and a sort by id (build_list_batch) instead,
    each still ends with its bits alone, so the two kernels give the same rows."""
    ens = check_batched_against_alone("cuda", "single", tmp_path=tmp_path, batch_step=batch_step, by_id=False)
    assert not ens.engine.by_id.any()
    default = Ensemble([batch_member(i, "cuda", "single") for i in range(len(BATCH_SYSTEMS))], batch="batched")
    assert default.engine.by_id.all()
    with pytest.raises(ValueError, match="do not have the ids"):
        ens.engine.ids_contiguous[1] = False
        ens.engine.use_lists_by_id(True)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_graph_stepped_batch_equals_the_host_stepped_batch(precision):
    """The device loop and the host-stepped batch (one launch per kernel per step) give the same bits,
    builds (per system: their number, largest counts, steps since the last) and thermo rows, over
    stretches of 7 steps (a launch's passes and the steps left over); the one-block Langevin, NVE and
    differing time steps of BATCH_SYSTEMS included."""
    host = _batched_run("cuda", precision, "host", every=7)
    graph = _batched_run("cuda", precision, "graph", every=7)
    assert host.engine.stepped == "host" and graph.engine.stepped == "graph"
    _same_runs(host, graph)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_graph_stepped_batch_grows_an_overflowing_list_as_the_host_path():
    """A build whose rows do not fit the batch's storage freezes the launch; the host grows the storage
    (each member's capacity as alone), lists again and finishes the step, and the rest of the stretch
    runs in a new launch: the same bits, overflows and capacities as the host-stepped batch's."""
    host = _batched_run("cuda", "single", "host", steps=40, every=40, narrow=True)
    graph = _batched_run("cuda", "single", "graph", steps=40, every=40, narrow=True)
    loop = graph.engine._graph
    assert loop.overflows >= 1 and loop.launches == 1 + loop.overflows
    assert all(m.neighbors.overflows >= 1 for m in graph.members)
    _same_runs(host, graph)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_graph_stepped_batch_masks_a_system_that_blows_up(capsys):
    """A system that blows up in the device loop is named and masked at the next check; the others
    end with the bits they have alone."""
    ens = Ensemble([batch_member(0, "cuda", "single"), batch_member(1, "cuda", "single", dt_scale=25.0),
                    batch_member(3, "cuda", "single")], check_every=10, batch="batched", batch_step="graph")
    ens.run(60)
    assert [f.system for f in ens.failures] == [1] and not ens.engine.active[1]
    assert ens.engine.stepped == "graph"
    for k, i in ((0, 0), (2, 3)):
        alone = batch_member(i, "cuda", "single")
        alone.run(60)
        assert same_bits(alone, ens.members[k])


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
def test_graph_stepped_replica_exchange_walks_as_the_host_stepped_batch():
    """GPU tempering (Langevin noise keyed by the device's step count) in the device loop: the walk
    and bits of the host-stepped batch."""
    runs = {}
    for step in ("host", "graph"):
        members = [member(i, "cuda", "single", spec=(5, 0.8442, t, 20 + i, 1.0, 1.0, ("langevin", t)))
                   for i, t in enumerate(LADDER)]
        ens = Ensemble(members, exchange=ReplicaExchange(LADDER, every=10, seed=5), verbose=False, batch="batched",
                       batch_step=step)
        ens.run(120)
        runs[step] = ens
    a, b = runs["host"], runs["graph"]
    assert b.engine.stepped == "graph" and b.engine._graph.launches == 12 + b.engine._graph.overflows
    assert [w.tolist() for _, w in a.exchange.walk] == [w.tolist() for _, w in b.exchange.walk]
    assert all(same_bits(x, y) for x, y in zip(a.members, b.members))
