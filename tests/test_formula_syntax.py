"""Formulas from input files are parsed, never evaluated: the known escapes from a Python expression
are refused with an error naming the file, the line and the character or construct, from a LAMMPS
script, a TOML file and the command line, and no code runs; Lepton's functions and operators give
the values Lepton defines."""

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sympy")

from pycumd.inputs.config import ConfigError, load_config, plan_from_config
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.potentials.formula import Formula
from pycumd.potentials.formula_syntax import FormulaSyntaxError

ROOT = Path(__file__).resolve().parents[1]

# (formula, what the error says, the 1-based character it names)
ESCAPES = [
    ("__import__('os').system('touch x')+4.0*((1/r)^12-(1/r)^6)", "the character \"'\" is not allowed", 12),
    ("__import__(os).system(touch)*r", "attribute access '.system' is not allowed", 15),
    ("__import__(os)*r", "name '__import__' is not allowed", 1),
    ("r.__class__", "attribute access '.__class__' is not allowed", 2),
    ("exp(r).real", "attribute access '.real' is not allowed", 7),
    ("__builtins__*r", "name '__builtins__' is not allowed", 1),
    ("(lambda: os)()*r", "the character ':' is not allowed", 8),
    ("(lambda r, q=1: r)*r", "the character '=' is not allowed", 13),
    ("(x for x in r)*r", "comprehensions are not allowed", 1),
    ("[x for x in r]*r", "the character '[' is not allowed", 1),
    ("r[0]", "the character '[' is not allowed", 2),
    ("'os'*r", "the character \"'\" is not allowed", 1),
    ("exp(r, base=2)", "the character '=' is not allowed", 12),
    ("exp(*r)", "starred arguments of exp() are not allowed", 5),
    ("max(*(r, r))", "starred arguments of max() are not allowed", 5),
    ("eval(r)", "unknown function 'eval'", 1),
    ("open(r)", "unknown function 'open'", 1),
    ("r if r else 1", "'if' expressions are not allowed", 1),
    ("r // 2", "operator '//' is not allowed", 3),
    ("r @ r", "the character '@' is not allowed", 3),
    ("1j*r", "the constant '1j' is not allowed", 1),
    ("True*r", "the constant 'True' is not allowed", 1),
    ("4*(r", "cannot read it ('(' was never closed", 3),
]


@pytest.mark.parametrize("text,what,column", ESCAPES)
def test_escapes_are_refused_naming_the_construct(text, what, column):
    with pytest.raises(FormulaSyntaxError) as info:
        Formula(text, r_cut=2.5)
    assert what in str(info.value) and info.value.column == column, str(info.value)
    assert str(info.value).endswith(f"at character {column}") and "\n" not in str(info.value)


SCRIPT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 2 0 2 0 2
create_box 1 box
create_atoms 1 box
mass 1 1.0
pair_style lepton 2.5
pair_coeff 1 1 "EXPRESSION"
fix 1 all nve
run 10
"""


@pytest.mark.parametrize("text,what,column", ESCAPES[:14])
def test_escapes_in_a_lammps_script_name_the_file_and_line(text, what, column, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "in.evil"
    path.write_text(SCRIPT.replace("EXPRESSION", text))
    with pytest.raises(LammpsScriptError) as info:
        plan_from_lammps_script(path=path, screen=False)
    message = str(info.value)
    assert message.startswith(f"{path}:9: pair_coeff: formula ") and what in message, message
    assert message.endswith(f"at character {column}")
    assert not (tmp_path / "x").exists()


TOML = """units = "lj"

[system]
lattice = "fcc"
density = 0.8442
cells = 4

[pair]
style = "lepton"
r_cut = 2.5
[[pair.coeff]]
types = [1, 1]
expression = EXPRESSION

[run]
steps = 10
"""


@pytest.mark.parametrize("text,what,column", ESCAPES[:14])
def test_escapes_in_a_toml_file_name_the_line(text, what, column, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    quoted = "'" + text + "'" if "'" not in text else '"' + text.replace('"', '\\"') + '"'
    with pytest.raises(ConfigError) as info:
        plan_from_config(load_config(TOML.replace("EXPRESSION", quoted)), device="cpu")
    message = str(info.value)
    assert message.startswith("line 13: pair.coeff[0].expression: formula ") and what in message, message
    assert not (tmp_path / "x").exists()


def test_toml_lepton_runs_the_formula():
    """A TOML lepton expression gives the energy of its formula (fcc LJ at density 0.8442, 256 atoms)."""
    from pycumd.potentials import LennardJones

    lj_text = TOML.replace("EXPRESSION", "'4.0*eps*((sig/r)^12-(sig/r)^6); eps=1.0; sig=1.0'")
    sim = plan_from_config(load_config(lj_text), device="cpu").build_simulation()
    plan = plan_from_config(load_config(lj_text), device="cpu")
    plan.stages[0].potential = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    assert sim.potential_energy() == pytest.approx(plan.build_simulation().potential_energy(), rel=1e-13)


def test_command_line_refuses_the_issue_example_in_one_line(tmp_path):
    """`pycumd run` on the example of the issue: exit 2, one line naming file and line, no file x."""
    (tmp_path / "in.evil").write_text(SCRIPT.replace("EXPRESSION", ESCAPES[0][0]))
    proc = subprocess.run([sys.executable, "-m", "pycumd.cli", "run", "in.evil", "--device", "cpu"], cwd=tmp_path,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and not (tmp_path / "x").exists()
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pycumd: error: in.evil:9: pair_coeff: formula "), proc.stderr
    assert "the character \"'\" is not allowed at character 12" in lines[0]


# Lepton's functions: the energy of "f(r)" and its force -dE/dr (step, delta, floor, ceil: derivative 0)
FUNCTIONS = {
    "sqrt(r)": (np.sqrt, lambda x: 0.5 / np.sqrt(x)),
    "exp(-r)": (lambda x: np.exp(-x), lambda x: -np.exp(-x)),
    "log(r)": (np.log, lambda x: 1 / x),
    "sin(r)": (np.sin, np.cos), "cos(r)": (np.cos, lambda x: -np.sin(x)),
    "tan(r/4)": (lambda x: np.tan(x / 4), lambda x: 0.25 / np.cos(x / 4) ** 2),
    "sec(r/4)": (lambda x: 1 / np.cos(x / 4), lambda x: 0.25 * np.tan(x / 4) / np.cos(x / 4)),
    "csc(r)": (lambda x: 1 / np.sin(x), lambda x: -np.cos(x) / np.sin(x) ** 2),
    "cot(r)": (lambda x: 1 / np.tan(x), lambda x: -1 / np.sin(x) ** 2),
    "asin(r/4)": (lambda x: np.arcsin(x / 4), lambda x: 0.25 / np.sqrt(1 - (x / 4) ** 2)),
    "acos(r/4)": (lambda x: np.arccos(x / 4), lambda x: -0.25 / np.sqrt(1 - (x / 4) ** 2)),
    "atan(r)": (np.arctan, lambda x: 1 / (1 + x**2)),
    "atan2(1, r)": (lambda x: np.arctan2(1, x), lambda x: -1 / (1 + x**2)),
    "sinh(r)": (np.sinh, np.cosh), "cosh(r)": (np.cosh, np.sinh), "tanh(r)": (np.tanh, lambda x: 1 / np.cosh(x) ** 2),
    "erf(r)": (lambda x: np.array([math.erf(v) for v in x]), lambda x: 2 / np.sqrt(np.pi) * np.exp(-x**2)),
    "erfc(r)": (lambda x: np.array([math.erfc(v) for v in x]), lambda x: -2 / np.sqrt(np.pi) * np.exp(-x**2)),
    "step(r-1.5)*r": (lambda x: np.where(x >= 1.5, x, 0.0), lambda x: np.where(x >= 1.5, 1.0, 0.0)),
    "delta(r-1)+r": (lambda x: np.where(x == 1.0, 1.0, 0.0) + x, lambda x: np.ones_like(x)),
    "square(r)": (lambda x: x**2, lambda x: 2 * x), "cube(r)": (lambda x: x**3, lambda x: 3 * x**2),
    "recip(r)": (lambda x: 1 / x, lambda x: -1 / x**2),
    "min(r, 1.5)": (lambda x: np.minimum(x, 1.5), lambda x: np.where(x < 1.5, 1.0, 0.0)),
    "max(r, 1.5)": (lambda x: np.maximum(x, 1.5), lambda x: np.where(x > 1.5, 1.0, 0.0)),
    "abs(r-1.5)": (lambda x: np.abs(x - 1.5), lambda x: np.sign(x - 1.5)),
    "floor(2*r)+r": (lambda x: np.floor(2 * x) + x, lambda x: np.ones_like(x)),
    "ceil(2*r)+r": (lambda x: np.ceil(2 * x) + x, lambda x: np.ones_like(x)),
    "select(r-1, r^2, 7)": (lambda x: np.where(x != 1, x**2, 7.0), lambda x: np.where(x != 1, 2 * x, 0.0)),
    "-r^2 + 2^3^2": (lambda x: -(x**2) + 512, lambda x: -2 * x),
    "r^-2 + pi": (lambda x: x**-2 + np.pi, lambda x: -2 * x**-3),
}


@pytest.mark.parametrize("text", list(FUNCTIONS))
def test_lepton_functions(text):
    energy, derivative = FUNCTIONS[text]
    r = np.array([0.7, 1.0, 1.3, 1.75, 2.2])
    e, force = Formula(text, r_cut=3.0).pair_coeff(0, 0).energy_and_force(r)
    assert np.allclose(e, energy(r), rtol=1e-14, atol=1e-14)
    assert np.allclose(force, -derivative(r), rtol=1e-13, atol=1e-14)


def test_parameter_names_of_the_generated_code_are_plain_parameters():
    """Parameters named like the generated code's variables (r2, row, x0, branch, ...) are columns of
    the table like any other: the values are those of the formula."""
    r = 1.3
    one = Formula("c0*r + r2*r^2 + row*exp(-r) + x0/r + branch*r2inv + math", r_cut=3.0)
    one.pair_coeff(0, 0, c0=1.0, r2=2.0, row=3.0, x0=4.0, branch=5.0, r2inv=6.0, math=7.0)
    assert one.energy_and_force([r])[0][0] == pytest.approx(r + 2 * r * r + 3 * math.exp(-r) + 4 / r + 30 + 7,
                                                            rel=1e-14)
    per_pair = Formula({(0, 0): "branch*r", (0, 1): "r2*r^2", (1, 1): "x0/r"}, r_cut=3.0)
    per_pair.pair_coeff(0, 0, branch=5.0).pair_coeff(0, 1, r2=2.0).pair_coeff(1, 1, x0=4.0)
    values = [per_pair.energy_and_force([r], i, j, n_types=2)[0][0] for i, j in ((0, 0), (0, 1), (1, 1))]
    assert values == pytest.approx([5 * r, 2 * r * r, 4 / r], rel=1e-14)


@pytest.mark.parametrize("coeff,what", [
    ('"eps*r; eps"', "definition 'eps' is not name=value"),
    ('"eps*r; e__=1"', "definition 'e__=1' is not name=value"),
    ('"A*r; A=exp(r" 2.0', "cannot read it ('(' was never closed"),
    ('"A*r" 2.0 3.0', "pair_coeff 1 1 (lepton): expected an expression and an optional cutoff"),
])
def test_lepton_coefficient_errors_name_the_pair_coeff_line(coeff, what, tmp_path):
    path = tmp_path / "in.bad"
    path.write_text(SCRIPT.replace('"EXPRESSION"', coeff))
    with pytest.raises(LammpsScriptError) as info:
        plan_from_lammps_script(path=path, screen=False)
    assert str(info.value).startswith(f"{path}:9: pair_coeff: ") and what in str(info.value), str(info.value)


def test_toml_lepton_keys_are_checked():
    with pytest.raises(ConfigError, match=r"missing required key pair.coeff\[0\].expression \(pair.style 'lepton'\)"):
        plan_from_config(load_config(TOML.replace("expression = EXPRESSION", "")), device="cpu")
    with pytest.raises(ConfigError, match=r"pair.coeff\[0\].epsilon is not a key of pair.style 'lepton'"):
        plan_from_config(load_config(TOML.replace("expression = EXPRESSION", "expression = 'r'\nepsilon = 1.0")),
                         device="cpu")
    with pytest.raises(ConfigError, match=r"pair.coeff\[0\].expression = 3: must be a string"):
        plan_from_config(load_config(TOML.replace("EXPRESSION", "3")), device="cpu")
