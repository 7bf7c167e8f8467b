"""The peers of `pycumd bench batch` (issue 38): benchmarks/peers/batch_replicas.py gives the replicas the bench
simulates; jaxmd_batch.py and openmm_batch.py say so and write an error record when their engine is missing;
batch_table.py's comparisons.  Where an interpreter with OpenMM or JAX-MD is at hand (this one, or
$PYCUMD_OPENMM_PYTHON / $PYCUMD_JAX_PYTHON), the peers' step-0 energies are checked against pycumd's."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers"
sys.path.insert(0, str(PEERS))

import batch_replicas  # noqa: E402
import batch_table  # noqa: E402
import jaxmd_batch  # noqa: E402
import openmm_batch  # noqa: E402

from pycumd.bench import batch  # noqa: E402


def _lj_energy(pos, box, cutoff):
    """Truncated LJ (epsilon 1, sigma 1) by minimum image over all pairs, NumPy: the reference for a description."""
    d = pos[:, None, :] - pos[None, :, :]
    d -= box * np.rint(d / box)
    r2 = (d * d).sum(-1)
    np.fill_diagonal(r2, np.inf)
    s6 = np.where(r2 < cutoff ** 2, 1.0 / r2 ** 3, 0.0)
    return 0.5 * (4.0 * (s6 * s6 - s6)).sum()


@pytest.fixture(scope="module")
def members():
    """The bench's first three systems of 1,000 atoms (CPU, double), and the description of the same three."""
    sims = [batch._member(1000, batch.SEED0 + i, "cpu", "double") for i in range(3)]
    return sims, batch_replicas.build(3, 1000)


def test_replicas_are_what_the_batch_bench_simulates(members):
    sims, rep = members
    assert (rep.systems, rep.atoms) == (3, 1000) and list(rep.seeds) == [1000, 1001, 1002]
    assert rep.box == pytest.approx(sims[0].box.lengths) and rep.box == pytest.approx(
        [5, 5, 10] * np.full(3, (4 / 0.8442) ** (1 / 3)))
    for i, sim in enumerate(sims):
        s = sim.system()                                       # id order, as the description
        np.testing.assert_array_equal(rep.positions[i], s.positions)
        np.testing.assert_array_equal(rep.velocities[i], s.velocities)
        np.testing.assert_array_equal(rep.masses, s.masses[s.types])
        assert sim.neighbors.skin == rep.skin and sim.integrator.dt == rep.dt
        # the description's cutoff and LJ parameters give pycumd's energy (fcc shells at 2.375 and 2.656
        # straddle 2.5: another cutoff would change it)
        assert _lj_energy(rep.positions[i], rep.box, rep.cutoff) == pytest.approx(sim.potential_energy(), rel=1e-12)
    assert not np.allclose(rep.velocities[0], rep.velocities[1])          # each replica its own seed
    t = (rep.velocities ** 2).sum(axis=(1, 2)) / (3 * rep.atoms - 3)
    assert t == pytest.approx(rep.temperature, rel=1e-12)


def test_a_replica_file_gives_the_bench_replicas_at_any_smaller_count(tmp_path, members):
    _, rep = members
    path = str(tmp_path / "r.npz")
    rep.save(path)
    two = batch_replicas.get(2, 1000, path)
    np.testing.assert_array_equal(two.positions, rep.positions[:2])
    np.testing.assert_array_equal(two.velocities, rep.velocities[:2])
    assert (two.cutoff, two.skin, two.dt, two.temperature) == (2.5, 0.3, 0.005, 1.44)
    with pytest.raises(ValueError, match="replicas of 1000 atoms, asked for 500"):
        batch_replicas.get(2, 500, path)
    with pytest.raises(ValueError, match="asked for 4 replicas; this description has 3"):
        batch_replicas.get(4, 1000, path)


def test_forced_reference_makes_jaxmd_rebuild_every_atom():
    box = np.array([8.398, 8.398, 16.796])
    pos = np.random.default_rng(3).uniform(0, 1, (2, 1000, 3)) * box
    ref = jaxmd_batch.forced_reference(pos, box)
    d = pos - ref
    d -= box * np.rint(d / box)
    assert np.abs(d) == pytest.approx(np.broadcast_to(box / 2, d.shape))
    assert ((d * d).sum(-1) > (0.3 / 2) ** 2).all()


def test_openmm_threads_take_every_replica_once():
    plan = openmm_batch.assignment(10, 4)
    assert plan == [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    assert openmm_batch.assignment(2, 4) == [[0], [1]]
    with pytest.raises(ValueError, match="--threads must be positive"):
        openmm_batch.assignment(3, 0)


def _importable(module, env):
    for exe in (os.environ.get(env), sys.executable):
        if exe and subprocess.run([exe, "-c", f"import {module}"], capture_output=True).returncode == 0:
            return exe
    return None


@pytest.mark.parametrize("script,module", [("jaxmd_batch.py", "jax_md"), ("openmm_batch.py", "openmm")])
def test_a_missing_engine_is_a_message_and_an_error_record(tmp_path, script, module):
    if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode == 0:
        pytest.skip(f"{module} is importable here")
    out = tmp_path / "p.jsonl"
    p = subprocess.run([sys.executable, str(PEERS / script), "--systems", "8", "--atoms", "500", "--json", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr
    assert len(p.stdout.strip().splitlines()) == 1 and "nothing measured" in p.stdout
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 2                                      # one per update mode / thread count
    for r in recs:
        assert r["case"] == "independent" and (r["systems"], r["atoms"]) == (8, 500)
        assert r["atom_steps_per_s"] is None
        assert "not installed" in r["error"] or "cannot be imported" in r["error"]


def test_the_table_compares_with_the_targets_and_the_best_peer():
    rows = [{"case": "independent", "systems": 1024, "atoms": 1000, "precision": "single", "engine": "batched x",
             "batch_atom_steps_per_s": 1.6e9, "one_big_atom_steps_per_s": 2.0e9, "one_at_a_time_atom_steps_per_s": 1e7},
            {"backend": "cuda", "N": 1000188, "precision": "single", "atom_steps_per_s": 3.2e9},
            {"engine": "jaxmd", "case": "independent", "systems": 1024, "atoms": 1000, "update": "vmap",
             "atom_steps_per_s": 2e7},
            {"engine": "jaxmd", "case": "independent", "systems": 1024, "atoms": 1000, "update": "any",
             "atom_steps_per_s": 1e8},
            {"engine": "openmm", "case": "independent", "systems": 256, "atoms": 1000, "threads": 1,
             "atom_steps_per_s": None, "error": "timed out"},
            {"engine": "openmm", "case": "independent", "systems": 64, "atoms": 1000, "threads": 4,
             "atom_steps_per_s": 4e7},
            {"case": "tempering", "replicas": 64, "atoms": 4000, "precision": "single", "engine": "batched x",
             "batch_atom_steps_per_s": 9e8, "batch_over_one_at_a_time": 31.0, "one_at_a_time_atom_steps_per_s": 2.9e7}]
    lines = {r["what"].split(": ", 1)[1]: r for r in batch_table.summarize(rows)}
    assert lines["aggregate atom-steps/s"]["met"] is True
    big = lines["/ one 1,024,000-atom system (bench batch, deterministic)"]
    assert big["value"] == pytest.approx(0.8) and big["met"]
    lj = lines["/ one 1,000,188-atom system (bench lj, default mode)"]
    assert lj["value"] == pytest.approx(0.5) and lj["met"] is False
    jax = lines["/ JAX-MD vmap (best: update any)"]
    assert jax["value"] == pytest.approx(16.0) and jax["met"] is False
    omm = lines["/ OpenMM one after another (best: 4 Contexts in threads)"]
    assert omm["value"] == pytest.approx(40.0) and "measured at 64 replicas, not 1024" in omm["note"]
    assert next(r for r in batch_table.summarize(rows) if r["what"].startswith("tempering"))["met"] is True
    empty = batch_table.summarize(rows[:1])
    assert [r["met"] for r in empty if "JAX-MD" in r["what"] or "OpenMM" in r["what"]] == [None, None]


@pytest.mark.parametrize("engine", ["openmm", "jaxmd"])
def test_the_peer_starts_from_pycumds_energy(tmp_path, members, engine):
    """The peer integrates the description: its step-0 energy (mean over replicas) is pycumd's, and its
    short run stays near it (OpenMM: Reference platform, double; JAX-MD: CPU backend, float32, truncated LJ)."""
    exe = _importable("openmm" if engine == "openmm" else "jax_md", f"PYCUMD_{engine.upper()}_PYTHON"
                      if engine == "openmm" else "PYCUMD_JAX_PYTHON")
    if exe is None:
        pytest.skip(f"{engine} is not importable (set PYCUMD_OPENMM_PYTHON / PYCUMD_JAX_PYTHON)")
    sims, rep = members
    path = str(tmp_path / "r.npz")
    rep.save(path)
    out = tmp_path / "p.jsonl"
    args = ["--systems", "3", "--atoms", "1000", "--replicas-file", path, "--steps", "20", "--warmup", "5",
            "--json", str(out)]
    args += (["--platform", "Reference", "--precision", "double", "--threads", "1", "2"] if engine == "openmm" else
             ["--allow-cpu", "--r-onset", "2.4999"])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([exe, str(PEERS / f"{engine}_batch.py"), *args], check=True, capture_output=True, env=env,
                   timeout=300)
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 2 and all("error" not in r for r in recs), recs
    pe = np.mean([s.potential_energy() / s.n_atoms for s in sims])          # per atom, lj units
    total = np.mean([s.thermo_row()["TotEng"] for s in sims])              # (lj thermo: per atom)
    for r in recs:
        assert r["PE_per_atom_0"] == pytest.approx(pe, abs=1e-8 if engine == "openmm" else 5e-5)
        end = r["E_per_atom_end_mean"] if engine == "openmm" else r["E_per_atom_end"]
        assert end == pytest.approx(total, abs=1e-2)
        assert r["atom_steps_per_s"] > 0 and (r["systems"], r["atoms"]) == (3, 1000)


@pytest.mark.ci_only
def test_the_device_script_dry_run_writes_every_record_and_the_table(tmp_path):
    """batch_device.sh on the CPU at a small size: pycumd's three parts, the replica file, the peers (absent
    here: error records) and the table, in one call."""
    env = dict(os.environ, OUT=str(tmp_path), BATCH_DEVICE="cpu", BATCH_PRECISION="double", BATCH_SYSTEMS="4",
               BATCH_ATOMS="500", BATCH_BIG_CELLS="4", BATCH_REPLICAS="4", BATCH_REPLICA_ATOMS="500",
               BATCH_PEER_SYSTEMS="4 2", BATCH_STEPS="10", BATCH_WARMUP="2")
    p = subprocess.run(["bash", str(ROOT / "benchmarks" / "batch_device.sh")], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    ind = json.loads((tmp_path / "pycumd_independent" / "batch.json").read_text())[0]
    assert (ind["case"], ind["systems"], ind["atoms"]) == ("independent", 4, 500) and ind["batch_atom_steps_per_s"] > 0
    assert json.loads((tmp_path / "pycumd_tempering" / "batch.json").read_text())[0]["batch_over_one_at_a_time"] > 0
    assert json.loads((tmp_path / "pycumd_lj.jsonl").read_text().splitlines()[0])["N"] == 256
    peers = [json.loads(line) for line in (tmp_path / "peers.jsonl").read_text().splitlines()]
    assert {r["engine"] for r in peers} == {"jaxmd", "openmm"}
    table = (tmp_path / "table.txt").read_text()
    assert "4 x 500 double (batched engine): aggregate atom-steps/s" in table
    assert "tempering 4 x 500 double (batched engine): / one replica after another" in table
