"""``pycumd bench charged`` (issue 36, Targets > Speed): the molten-NaCl state, the Ewald reference of the
force-error measurement, the measured error of PPPM at 1e-3 and 1e-5 and of a near-exact solver, a tiny
CPU run and its records, bad input; and benchmarks/peers/openmm_pme.py on the same state (only where an
interpreter with OpenMM is found: this one, or $PYCUMD_OPENMM_PYTHON)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pycumd.backend import select
from pycumd.bench import charged
from pycumd.cli import main as cli_main

CPU = select("cpu")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def melt():
    """512 ions (4 rock-salt cells), displaced: the state, 200 chosen ions and their reference forces."""
    state = charged.build_state(4)
    targets = charged.choose_targets(512, 200)
    reference, info = charged.reference_coulomb_forces(state["positions"], state["charges"], state["box"],
                                                       targets, CPU)
    return state, targets, reference, info


def test_cells_round_to_rock_salt():
    assert [charged.cells_for(n) for n in (100_000, 1_000_000, 512, 1)] == [23, 50, 4, 1]
    s = charged.build_state(3)
    assert len(s["charges"]) == 216 and s["charges"].sum() == 0.0
    assert np.all((s["positions"] >= 0) & (s["positions"] < s["box"]))
    momentum = (s["masses"][s["types"]][:, None] * s["velocities"]).sum(axis=0)
    assert momentum == pytest.approx(np.zeros(3), abs=1e-9)
    again = charged.build_state(3)
    assert np.array_equal(s["positions"], again["positions"]) and np.array_equal(s["velocities"], again["velocities"])


def test_reference_does_not_depend_on_its_ewald_split(melt):
    """The reference at 1e-6 and at 1e-11 (other g_ewald, other real/k-space shares) agree to far below
    1e-6 of the two-charge force: the erfc sum and the k-space sum are consistent."""
    state, targets, reference, info = melt
    loose, loose_info = charged.reference_coulomb_forces(state["positions"], state["charges"], state["box"],
                                                         targets, CPU, accuracy=1e-6)
    tight, tight_info = charged.reference_coulomb_forces(state["positions"], state["charges"], state["box"],
                                                         targets, CPU, accuracy=1e-11)
    assert tight_info["g_ewald"] > 1.2 * loose_info["g_ewald"]          # a real-space share of its own
    assert charged.rms_error(tight, reference) / charged.QQRD2E < 1e-9
    assert 1e-9 < charged.rms_error(loose, tight) / charged.QQRD2E < 1e-6
    assert np.abs(reference).mean() > 0.1                  # real forces, eV/A


def _sim(state, accuracy, style="pppm"):
    from pycumd.integrators import VelocityVerlet
    from pycumd.simulation import Simulation

    return Simulation(charged.make_system(state), charged.make_potential(accuracy, style=style),
                      VelocityVerlet(charged.DT), device="cpu", skin=charged.SKIN)


def test_measured_error_is_about_zero_for_a_near_exact_solver_and_scales_with_accuracy(melt):
    state, targets, reference, _ = melt
    exact = charged.rms_error(charged.coulomb_forces(_sim(state, 1e-10, "ewald"), targets), reference)
    assert exact / charged.QQRD2E < 1e-8
    errors = {}
    for accuracy in (1e-3, 1e-5):
        sim = _sim(state, accuracy)
        errors[accuracy] = charged.rms_error(charged.coulomb_forces(sim, targets), reference) / charged.QQRD2E
        assert 0.02 * accuracy < errors[accuracy] < accuracy       # below the request, a real grid error
        assert errors[accuracy] < 2 * sim.potential.kspace.estimated_accuracy / charged.QQRD2E
    assert errors[1e-3] > 20 * errors[1e-5]


def test_tiny_cpu_run_records_and_state_file(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    assert cli_main(["bench", "charged", "--ions", "512", "--device", "cpu", "--steps", "10", "--warmup", "2",
                     "--melt-steps", "10", "--precision", "double", "--error-atoms", "100", "--json", str(out),
                     "--state-dir", str(tmp_path / "st"), "--out-dir", str(tmp_path / "o")]) == 0
    r = json.loads(out.read_text().splitlines()[-1])
    assert json.loads((tmp_path / "o" / "charged.json").read_text()) == [r]
    assert (r["engine"], r["N"], r["steps"], r["precision"], r["error_atoms"]) == ("pycumd", 512, 10, "double", 100)
    assert r["steps_per_s"] == pytest.approx(10 / r["seconds"])
    assert 1e-6 < r["force_error_rel"] < 1e-4 and r["force_error_abs"] == pytest.approx(r["force_error_rel"] * 14.399645)
    for key in ("build_s", "forces_s", "pair_s", "coul_real_s", "kspace_s", "integrate_s"):
        assert 0 < r[key] < 10 * r["step_s"], key
    assert r["kspace_fraction"] == pytest.approx(r["kspace_s"] / r["step_s"])
    assert abs(r["TotEng_end"] - r["TotEng_start"]) < 1e-3          # eV per ion over 10 NVE steps
    with np.load(tmp_path / "st" / "nacl_512.npz") as z:
        # the initial state is the lattice start after the 10 melt steps; the reference is of that state
        start = charged.build_state(4)
        moved = z["positions"] - start["positions"]
        moved -= start["box"] * np.round(moved / start["box"])
        assert 0.01 < np.abs(moved).max() < 1.0 and np.array_equal(z["types"], start["types"])
        assert not np.array_equal(z["velocities"], start["velocities"])
        assert z["reference_forces"].shape == (100, 3) and len(z["targets"]) == 100
        again, _ = charged.reference_coulomb_forces(z["positions"], z["charges"], z["box"], z["targets"], CPU)
        assert np.array_equal(again, z["reference_forces"])
        params = json.loads(str(z["params"]))
    assert params["cutoff"] == 9.0 and params["qqrd2e"] == 14.399645 and len(params["tosi_fumi"]) == 3
    assert params["melt_steps"] == r["melt_steps"] == 10
    assert "F err rel" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--ions", "64"], "less than twice the cutoff"),
    (["--accuracy", "0"], "--accuracy must be > 0"),
    (["--ions", "0"], "--ions must be >= 1"),
    (["--device", "gpu"], "--device gpu: unknown device"),
])
def test_bad_input_is_one_line(args, message, capsys, tmp_path):
    assert charged.main(["--device", "cpu", "--ions", "512", "--out-dir", str(tmp_path), *args]) == 2
    out = capsys.readouterr().out
    assert message in out and "Traceback" not in out


def _openmm_python():
    """An interpreter that imports openmm (this one, or $PYCUMD_OPENMM_PYTHON), else None."""
    for exe in (os.environ.get("PYCUMD_OPENMM_PYTHON"), sys.executable):
        if exe and subprocess.run([exe, "-c", "import openmm, numpy"], capture_output=True).returncode == 0:
            return exe
    return None


def test_openmm_peer_matches_the_system_and_the_error(tmp_path):
    exe = _openmm_python()
    if exe is None:
        pytest.skip("OpenMM is not importable (set PYCUMD_OPENMM_PYTHON to an interpreter that has it)")
    state_dir = tmp_path / "st"
    pyc = tmp_path / "pycumd.jsonl"
    assert charged.main(["--ions", "512", "--device", "cpu", "--steps", "5", "--warmup", "1", "--precision", "double",
                         "--no-split", "--json", str(pyc), "--state-dir", str(state_dir), "--out-dir",
                         str(tmp_path)]) == 0
    mine = json.loads(pyc.read_text())
    omm = tmp_path / "openmm.jsonl"
    script = ROOT / "benchmarks" / "peers" / "openmm_pme.py"
    subprocess.run([exe, str(script), "--state", str(state_dir / "nacl_512.npz"), "--platform", "Reference",
                    "--precision", "double", "--steps", "5", "--warmup", "1", "--target-error",
                    repr(mine["force_error_rel"]), "--json", str(omm)], check=True, capture_output=True)
    r = json.loads(omm.read_text())
    assert "error" not in r, r.get("error")
    # equal measured error (within the calibration's 10%), on the same state, by the same reference
    assert r["force_error_rel"] == pytest.approx(mine["force_error_rel"], rel=0.1)
    assert r["coulomb_constant_ratio"] == pytest.approx(1.0, abs=1e-6)
    # the same energy at the start: Born identical, Coulomb within both solvers' errors
    assert r["TotEng_start"] == pytest.approx(mine["TotEng_start"], abs=2e-3)
    tight = tmp_path / "tight.jsonl"
    subprocess.run([exe, str(script), "--state", str(state_dir / "nacl_512.npz"), "--platform", "Reference",
                    "--precision", "double", "--steps", "1", "--warmup", "0", "--tolerance", "1e-7", "--json",
                    str(tight)], check=True, capture_output=True)
    assert json.loads(tight.read_text())["force_error_rel"] < 1e-6       # the reference, seen by OpenMM


# -- GPU (skipped without CuPy and a GPU):  PYTHONPATH=src python3 -m pytest -q tests/test_bench_charged.py -m cuda
from pycumd.backend import cuda_available  # noqa: E402

HAVE_CUDA = cuda_available()


def gpu_only(test):
    """Mark a test ``cuda`` and skip it without a GPU."""
    return pytest.mark.cuda(pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")(test))


@gpu_only
def test_gpu_reference_equals_cpu(melt):
    state, targets, reference, _ = melt
    gpu, _ = charged.reference_coulomb_forces(state["positions"], state["charges"], state["box"], targets,
                                              select("cuda"))
    assert charged.rms_error(gpu, reference) < 1e-10 * np.abs(reference).max()


@gpu_only
@pytest.mark.parametrize("precision", ["single", "mixed", "double"])
def test_gpu_run_measures_its_error(precision, tmp_path):
    """The bench on the GPU at 4,096 ions: its measured error is PPPM's at 1e-4 (the CPU's within 2% in
    double and mixed; single's float32 grid within 30%), the split's parts are timed."""
    from pycumd.integrators import VelocityVerlet
    from pycumd.simulation import Simulation

    out = tmp_path / "r.jsonl"
    assert charged.main(["--ions", "4096", "--device", "cuda", "--steps", "20", "--warmup", "5", "--precision",
                         precision, "--json", str(out), "--out-dir", str(tmp_path)]) == 0
    r = json.loads(out.read_text())
    state = charged.build_state(8)
    targets = charged.choose_targets(4096, charged.ERROR_ATOMS)
    reference, _ = charged.reference_coulomb_forces(state["positions"], state["charges"], state["box"], targets,
                                                    select("cuda"))
    cpu = Simulation(charged.make_system(state), charged.make_potential(1e-4), VelocityVerlet(charged.DT),
                     device="cpu", skin=charged.SKIN)
    cpu_error = charged.rms_error(charged.coulomb_forces(cpu, targets), reference) / charged.QQRD2E
    assert r["device"] != "cpu" and r["precision"] == precision
    assert r["force_error_rel"] == pytest.approx(cpu_error, rel=0.3 if precision == "single" else 0.02)
    assert 0 < r["kspace_s"] < r["forces_s"] and 0 < r["kspace_fraction"] < 1
