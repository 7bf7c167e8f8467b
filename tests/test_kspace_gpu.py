"""The GPU k-space solvers (pppm.cu with cuFFT; Ewald's vectorised sums on CuPy) against the CPU, and
their repeatability (issue 36).  Run on a GPU machine:

    PYTHONPATH=src python3 -m pytest -q tests/test_kspace_gpu.py

Without CuPy and a GPU every test but the nvcc compilations is skipped."""

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pycumd.backend import cuda_available, select
from pycumd.kspace import make_solver
from pycumd.precision import get_precision

HAVE_CUDA = cuda_available()


def gpu_only(test):
    """Mark a test ``cuda`` and skip it without a GPU."""
    return pytest.mark.cuda(pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")(test))

SOURCE = Path(__file__).resolve().parents[1] / "src" / "pycumd" / "kspace" / "pppm.cu"
NVCC = shutil.which("nvcc")


@pytest.fixture(scope="module")
def ions():
    """800 random charges (neutral), box 24 x 25 x 26, lj units (qqrd2e = 1)."""
    rng = np.random.default_rng(3636)
    box = np.array([24.0, 25.0, 26.0])
    x = rng.random((800, 3)) * box
    q = rng.choice([-1.0, 1.0], 800) * rng.uniform(0.5, 1.5, 800)
    q -= q.mean()
    return x, q, box


def run(style, backend_name, precision_name, x, q, box, positions_dtype=np.float64, stride=4,
        forces_dtype=np.float64, with_energy=True, **modify):
    """Set up and compute once; returns (solver, host forces)."""
    backend = select(backend_name)
    s = make_solver(style, 1e-4 if "accuracy" not in modify else modify.pop("accuracy"), **modify)
    s.setup(box, q, 9.0, 1.0, backend, get_precision(precision_name, backend_name), "lj")
    rows = np.zeros((len(x), stride), dtype=positions_dtype)
    rows[:, :3] = x
    if stride == 4:
        rows[:, 3] = 1.0                        # the GPU rows' type column: never read
    xp = backend.xp
    forces = xp.zeros((len(x), 3), dtype=forces_dtype)
    s.compute(xp.asarray(rows), xp.asarray(q), box, forces, with_energy)
    return s, backend.to_host(forces)


def rms(f):
    return float(np.sqrt((np.asarray(f, dtype=np.float64) ** 2).sum(axis=1).mean()))


@gpu_only
@pytest.mark.parametrize("order", [2, 5, 7])
@pytest.mark.parametrize("precision_name", ["double", "mixed"])
@pytest.mark.parametrize("stride", [3, 4])
def test_pppm_gpu_equals_cpu(ions, order, precision_name, stride):
    x, q, box = ions
    cpu, f_cpu = run("pppm", "cpu", "double", x, q, box, stride=3, order=order)
    gpu_, f_gpu = run("pppm", "cuda", precision_name, x, q, box, stride=stride, order=order)
    assert gpu_.mesh == cpu.mesh and gpu_.g_ewald == cpu.g_ewald and gpu_.grid_dtype == np.float64
    np.testing.assert_allclose(f_gpu, f_cpu, rtol=0, atol=1e-10 * rms(f_cpu))
    assert gpu_.energy == pytest.approx(cpu.energy, rel=1e-10)
    np.testing.assert_allclose(gpu_.virial, cpu.virial, rtol=0, atol=1e-10 * np.abs(cpu.virial).max())


@gpu_only
def test_pppm_gpu_runs_are_bit_identical(ions):
    """Fixed-point assignment: two solvers, two runs, the same bits (forces, energy, virial)."""
    x, q, box = ions
    first, f1 = run("pppm", "cuda", "double", x, q, box)
    second, f2 = run("pppm", "cuda", "double", x, q, box)
    assert np.array_equal(f1, f2)
    assert first.energy == second.energy and np.array_equal(first.virial, second.virial)


@gpu_only
def test_pppm_gpu_single_precision(ions):
    """single: float32 positions, forces, grid and FFTs; the difference to the double CPU result is
    far below the requested accuracy."""
    x, q, box = ions
    cpu, f_cpu = run("pppm", "cpu", "double", x, q, box, stride=3)
    single, f_single = run("pppm", "cuda", "single", x, q, box, positions_dtype=np.float32,
                           forces_dtype=np.float32)
    assert single.grid_dtype == np.float32
    assert rms(f_single - f_cpu) < 0.01 * 1e-4 * cpu.two_charge_force
    assert single.energy == pytest.approx(cpu.energy, rel=1e-5)


@gpu_only
def test_pppm_gpu_no_allocation_after_first_call_and_graph_capture(ions):
    """Without energy the second and later calls allocate nothing (the memory pool stays as it is),
    and a call captured in a CUDA graph replays to the same bits."""
    import cupy as cp

    x, q, box = ions
    backend = select("cuda")
    s = make_solver("pppm", 1e-4)
    s.setup(box, q, 9.0, 1.0, backend, get_precision("double", "cuda"), "lj")
    rows = cp.asarray(np.column_stack([x, np.ones(len(x))]))
    charges = cp.asarray(q)
    forces = cp.zeros((len(x), 3))
    s.compute(rows, charges, box, forces, False)
    pool = cp.get_default_memory_pool()
    cp.cuda.Device().synchronize()
    used, total = pool.used_bytes(), pool.total_bytes()
    forces.fill(0)
    s.compute(rows, charges, box, forces, False)
    cp.cuda.Device().synchronize()
    assert (pool.used_bytes(), pool.total_bytes()) == (used, total)
    direct = forces.get()

    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        forces.fill(0)
        stream.synchronize()
        stream.begin_capture()
        s.compute(rows, charges, box, forces, False)
        graph = stream.end_capture()
        graph.launch(stream)
        stream.synchronize()
    assert np.array_equal(forces.get(), direct)


@gpu_only
def test_pppm_gpu_new_box_tables_on_the_device(ions):
    """A compute with a new box (a barostat) after the first call: the GPU recomputes the Green's
    function and virial tables with its influence_ik kernel; forces, energy and virial equal the
    CPU's (host tables) to 1e-10."""
    x, q, box = ions
    results = {}
    for name in ("cpu", "cuda"):
        backend = select(name)
        s = make_solver("pppm", 1e-4)
        s.setup(box, q, 9.0, 1.0, backend, get_precision("double", name), "lj")
        xp = backend.xp
        forces = xp.zeros((len(x), 3))
        s.compute(xp.asarray(x), xp.asarray(q), box, forces, False)
        new_box = box * np.array([1.01, 0.995, 1.02])
        forces.fill(0)
        s.compute(xp.asarray(x * new_box / box), xp.asarray(q), new_box, forces, True)
        results[name] = (backend.to_host(forces), s.energy, s.virial.copy())
    (f_cpu, e_cpu, v_cpu), (f_gpu, e_gpu, v_gpu) = results["cpu"], results["cuda"]
    np.testing.assert_allclose(f_gpu, f_cpu, rtol=0, atol=1e-10 * rms(f_cpu))
    assert e_gpu == pytest.approx(e_cpu, rel=1e-10)
    np.testing.assert_allclose(v_gpu, v_cpu, rtol=0, atol=1e-10 * np.abs(v_cpu).max())


@gpu_only
def test_ewald_gpu_equals_cpu(ions):
    x, q, box = ions
    cpu, f_cpu = run("ewald", "cpu", "double", x, q, box, stride=3)
    gpu_, f_gpu = run("ewald", "cuda", "double", x, q, box)
    np.testing.assert_allclose(f_gpu, f_cpu, rtol=0, atol=1e-10 * rms(f_cpu))
    assert gpu_.energy == pytest.approx(cpu.energy, rel=1e-10)
    np.testing.assert_allclose(gpu_.virial, cpu.virial, rtol=0, atol=1e-10 * np.abs(cpu.virial).max())


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("defines", [
    ["-DORDER=2", "-DGRID_T=float", "-DPOS_T=float", "-DFORCE_T=float", "-DPOS_STRIDE=4"],
    ["-DORDER=7", "-DGRID_T=double", "-DPOS_T=double", "-DFORCE_T=double", "-DPOS_STRIDE=3"],
    ["-DORDER=4", "-DGRID_T=double", "-DPOS_T=double", "-DFORCE_T=double", "-DPOS_STRIDE=4"],
], ids=["single-order2", "double-order7-stride3", "mixed-order4"])
def test_pppm_kernels_compile_with_their_defines(defines, tmp_path):
    """pppm.cu with the defines PPPM compiles it with (test_kernel_sources compiles the defaults)."""
    cmd = [NVCC, "-std=c++17", "-arch=sm_90", "--cubin", *defines, "-o", str(tmp_path / "k.cubin"), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
