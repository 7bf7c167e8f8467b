"""The drift fit of ``pycumd bench drift``: slope, least-squares error and block error."""

import numpy as np

from pycumd.bench.drift import block_error, fit_drift


def test_fit_recovers_a_known_slope():
    rng = np.random.default_rng(4)
    t = np.linspace(0.0, 5000.0, 1001)
    e = 2.0 + 3e-7 * t + rng.normal(0.0, 1e-6, t.size)            # kT = 1: e is in kT per atom
    fit = fit_drift({"time": t.tolist(), "energy": e.tolist(), "kT": 1.0})
    assert abs(fit["drift_kT_per_atom_per_1000tau"] - 3e-4) < 4 * fit["drift_standard_error"]
    assert fit["drift_standard_error"] < 1e-5
    assert 0.5 < fit["drift_block_error"] / fit["drift_standard_error"] < 2.0   # white noise: both agree
    assert abs(fit["residual_lag1_correlation"]) < 0.15
    assert fit["fluctuation_kT_per_atom"] == np.float64(np.std(e - np.polyval(np.polyfit(t, e, 1), t)))


def test_block_error_sees_correlated_noise():
    """Noise correlated over ~10 samples (AR(1), phi = 0.9) and no drift: the least-squares error of
    the raw samples is about 4x too small, the block error is of the right size."""
    rng = np.random.default_rng(5)
    t = np.arange(2000.0)
    slopes, ls_errors, block_errors = [], [], []
    for _ in range(60):
        noise = rng.normal(0.0, 1.0, t.size)
        e = np.empty(t.size)
        e[0] = noise[0]
        for k in range(1, t.size):
            e[k] = 0.9 * e[k - 1] + noise[k]
        fit = fit_drift({"time": t.tolist(), "energy": e.tolist(), "kT": 1.0})
        slopes.append(fit["drift_kT_per_atom_per_1000tau"])
        ls_errors.append(fit["drift_standard_error"])
        block_errors.append(fit["drift_block_error"])
    spread = np.std(slopes)
    assert np.median(ls_errors) < 0.4 * spread                       # underestimates
    assert 0.6 * spread < np.median(block_errors) < 1.6 * spread    # of the right size
    assert block_error(t, 5.0 * t) < 1e-12                           # a straight line: no scatter


def test_charged_drift_runs_molten_nacl_with_pppm(tmp_path):
    """`pycumd bench drift --system charged` (issue 36's NVE drift with PPPM): the ions of the charged
    benchmark's NaCl at PPPM 1e-5 (512: the box must hold twice cutoff + skin), 40 double-precision
    steps of 2 fs on the CPU from the displaced lattice: energies sampled every 2 steps, per ion,
    conserved to a few 1e-4 k_B T (1300 K)."""
    import json

    from pycumd.bench.drift import main

    main(["--system", "charged", "--cells", "4", "--melt-steps", "0", "--steps", "40", "--every", "2",
          "--device", "cpu", "--deterministic", "off", "--out-dir", str(tmp_path)])
    (r,) = json.loads((tmp_path / "drift_charged.json").read_text())
    assert r["N"] == 512 and r["precision"] == "double" and r["steps"] == 40
    assert len(r["energy"]) == 21 and np.all(np.isfinite(r["energy"]))
    assert abs(r["time"][-1] - 40 * 0.002) < 1e-12                   # ps
    spread = (max(r["energy"]) - min(r["energy"])) / r["kT"]
    assert 0.0 < spread < 5e-3, spread
