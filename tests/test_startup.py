"""Start-up cost: ``pycumd --help`` loads no engine, and the CPU force kernels come from Numba's disk cache."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pycumd
from pycumd.jit_cache import source_key
from pycumd.potentials import LennardJones

SRC = str(Path(pycumd.__file__).resolve().parents[1])


def _python(code: str) -> str:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_imports_neither_numba_nor_scipy_nor_the_engine():
    out = _python(
        "import sys, contextlib, io\n"
        "from pycumd.cli import main\n"
        "text = io.StringIO()\n"
        "with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "heavy = [m for m in ('numba', 'scipy', 'pycumd.simulation', 'pycumd.components', 'pycumd.potential_maps')\n"
        "         if m in sys.modules]\n"
        "print(heavy, 'place-ions' in text.getvalue(), 'potential-map' in text.getvalue())\n")
    assert out.split() == ["[]", "True", "True"]


def test_the_public_names_resolve_at_first_use():
    out = _python("import sys, pycumd\n"
                  "before = 'numba' in sys.modules\n"
                  "from pycumd import LennardJones, Simulation\n"
                  "print(before, Simulation.__module__, sorted(set(pycumd.__all__) - set(dir(pycumd))))\n")
    assert out.split() == ["False", "pycumd.simulation", "[]"]
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        pycumd.NoSuchThing


def test_a_potential_names_its_pair_function_by_file_and_cutoff():
    truncated = LennardJones(2.5).kernel_cache_key()
    assert truncated == LennardJones(3.0, cutoff="shift").kernel_cache_key()     # the same pair function
    assert truncated != LennardJones(2.5, cutoff="shift_force").kernel_cache_key()
    assert truncated[:2] == ("pycumd.potentials.lennard_jones", "lennard_jones_raw")
    namespace = {}
    exec("def generated(r2, row):\n    return r2, r2\n", namespace)
    assert source_key(namespace["generated"]) is None                             # no source file: no key


def test_a_formula_potential_is_compiled_per_process():
    pytest.importorskip("sympy")
    from pycumd.potentials.formula import Formula

    assert Formula("4*eps*((s/r)^12-(s/r)^6)", 2.5, parameters=("eps", "s")).kernel_cache_key() is None


_RUN = """
from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
from pycumd import forces
system = lattice_system("fcc", 4, density=0.8442)
create_velocities(system, temperature=1.0, seed=5)
lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
sim = Simulation(system, lj, VelocityVerlet(dt=0.005), device="cpu", precision="double", pair_method="neighbor")
sim.run(3)
print(sum(sum(k.stats.cache_hits.values()) for k in forces._CPU_KERNELS.values()), sim.system().positions.tobytes().hex())
"""


def test_a_second_process_loads_the_force_kernel_from_the_disk_cache():
    first_hits, first = _python(_RUN).split()
    second_hits, second = _python(_RUN).split()
    assert int(second_hits) >= 1           # the closure-built force kernel, compiled by the first process
    assert second == first                 # and it gives the same bits
