"""TOML configs for ion mixtures and nuclear pasta: the systems they describe."""

import math

import numpy as np
import pytest

from pycumd.inputs.config import ConfigError, load_config, plan_from_config
from pycumd.units import E2_MEV_FM

IONS = """
units = "nuclear"
[ions]
charges = [6, 8]
mass_numbers = [12.0, 16.0]
fractions = [0.25, 0.75]
n_ions = 400
number_density = 5e-11
gamma = 20.0
[run]
steps = 10
"""


def test_ion_mixture_config():
    plan = plan_from_config(load_config(IONS), device="cpu")
    sim = plan.build_simulation()
    system = sim.system()
    assert np.bincount(system.types).tolist() == [100, 300]
    assert system.box.L[0] == pytest.approx((400 / 5e-11) ** (1 / 3))
    a = (3 / (4 * math.pi * 5e-11)) ** (1 / 3)
    z2 = (100 * 36 + 300 * 64) / 400
    assert sim.temperature() == pytest.approx(z2 * E2_MEV_FM / (a * 20.0), rel=1e-12)
    assert sim.potential.coefficients(0, 1)["prefactor"] == pytest.approx(48 * E2_MEV_FM)
    assert sim.pair_method == "all_pairs" and sim.potential.screening_length == pytest.approx(2 * a)
    e0 = sim.thermo_row()["TotEng"]
    sim.run(plan.stages[0].steps)
    assert sim.thermo_row()["TotEng"] == pytest.approx(e0, rel=1e-5)


def test_pasta_config_and_errors():
    text = """
units = "nuclear"
[pasta]
n_nucleons = 1000
proton_fraction = 0.3
number_density = 0.05
temperature = 1.0
r_cut = 12.0
[run]
steps = 1
"""
    sim = plan_from_config(load_config(text), device="cpu").build_simulation()
    assert np.bincount(sim.system().types).tolist() == [300, 700]
    assert sim.potential.r_cut == 12.0 and sim.integrator.dt == 2.0
    with pytest.raises(ConfigError, match="exactly one of"):
        load_config(text + "\n[ions]\ncharges=[6]\n")
    with pytest.raises(ConfigError, match="missing required key ions.number_density"):
        load_config(IONS.replace("number_density = 5e-11\n", ""))
    with pytest.raises(ValueError, match="exactly one of gamma or temperature"):
        plan_from_config(load_config(IONS.replace("gamma = 20.0", "gamma = 20.0\ntemperature = 0.1")),
                         device="cpu").build_simulation()
