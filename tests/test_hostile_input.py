"""Hostile input: every outcome of a damaged LAMMPS script or TOML config is a run or a clean
one-line error (exit status 1 or 2, no traceback), never a crash, a hang or a silent wrong run."""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pycumd.cli import main

SCRIPT = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.005
fix 1 all nve
thermo 5
run 10
"""

TOML = """units = "lj"
[system]
lattice = "fcc"
density = 0.8442
cells = 4
[velocity]
temperature = 1.44
seed = 87287
[pair]
r_cut = 2.5
[[pair.coeff]]
types = [1, 1]
epsilon = 1.0
sigma = 1.0
[neighbor]
skin = 0.3
[integrator]
dt = 0.005
[run]
steps = 10
thermo = 5
"""

#: what a mutation may put in place of a word: signs, zeros, absurd sizes, not-numbers, wildcards
WORDS = ["-1", "0", "1e30", "1e-30", "nan", "inf", "abc", "*", "3.5", "2", "-0.5", "1000", '"x"', "[1, 2]",
         "true", "\u00e9", "\x00"]


def _mutations(text: str):
    lines = text.split("\n")
    n = len(lines)
    return st.one_of(
        st.tuples(st.just("delete"), st.integers(0, n - 1)),
        st.tuples(st.just("duplicate"), st.integers(0, n - 1)),
        st.tuples(st.just("swap"), st.integers(0, n - 1), st.integers(0, n - 1)),
        st.tuples(st.just("word"), st.integers(0, n - 1), st.integers(0, 12), st.sampled_from(WORDS)),
        st.tuples(st.just("truncate"), st.integers(0, len(text))),
        st.tuples(st.just("bytes"), st.integers(0, len(text)), st.binary(min_size=1, max_size=4)),
    )


def _apply(text: str, mutation) -> bytes:
    lines = text.split("\n")
    kind, n = mutation[0], len(lines)      # line numbers are taken modulo the lines left
    if kind == "delete":
        del lines[mutation[1] % n]
    elif kind == "duplicate":
        lines.insert(mutation[1] % n, lines[mutation[1] % n])
    elif kind == "swap":
        i, j = mutation[1] % n, mutation[2] % n
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "word":
        i, k, word = mutation[1] % n, mutation[2], mutation[3]
        words = lines[i].split(" ")
        if words:
            words[k % len(words)] = word
        lines[i] = " ".join(words)
    elif kind == "truncate":
        return text[:mutation[1]].encode("utf-8", "surrogateescape")
    elif kind == "bytes":
        data = text.encode("utf-8", "surrogateescape")
        return data[:mutation[1]] + mutation[2] + data[mutation[1]:]
    return "\n".join(lines).encode("utf-8", "surrogateescape")


#: mutated inputs per file kind: 60 in CI (PYCUMD_CI=1), 8 in the default run; PYCUMD_FUZZ_EXAMPLES overrides
FUZZ_EXAMPLES = 60 if os.environ.get("PYCUMD_CI") == "1" else 8


def _run_cli(path: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(["run", str(path), "--device", "cpu", "--no-progress"])
    return status, err.getvalue()


@pytest.mark.parametrize("name,text", [("in.lj", SCRIPT), ("config.toml", TOML)])
@settings(max_examples=int(os.environ.get("PYCUMD_FUZZ_EXAMPLES", FUZZ_EXAMPLES)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_inputs_run_or_fail_cleanly(tmp_path, name, text, data):
    mutations = data.draw(st.lists(_mutations(text), min_size=1, max_size=3))
    content = text
    for m in mutations:
        content = _apply(content, m).decode("utf-8", errors="surrogateescape")
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8", errors="surrogateescape"))
    status, err = _run_cli(path)        # any exception escaping main() fails the test
    assert status in (0, 1, 2)
    if status:
        lines = [line for line in err.strip().split("\n") if line]
        assert lines and lines[-1].startswith("pycumd: error: "), err
        assert "Traceback" not in err


@pytest.mark.parametrize("old,new,message", [
    ("run 10", "run -5", "run length must be >= 0"),
    ("run 10", "run 2.5", "invalid literal"),
    ("region box block 0 4 0 4 0 4", "region box block 0 1e6 0 1e6 0 1e6", "atoms"),
    ("create_atoms 1 box\n", "", "no degrees of freedom"),
    ("create_atoms 1 box\nmass 1 1.0\nvelocity all create 1.44 87287 loop geom", "mass 1 1.0", "no atoms"),
    ("timestep 0.005", "timestep 1e30", "blew up"),
])
def test_named_hostile_values_in_scripts(tmp_path, old, new, message):
    path = tmp_path / "in.lj"
    path.write_text(SCRIPT.replace(old, new))
    status, err = _run_cli(path)
    assert status in (1, 2) and message in err, err


def test_binary_and_non_utf8_files_are_named(tmp_path):
    path = tmp_path / "in.lj"
    path.write_bytes(SCRIPT.encode()[:40] + b"\xff\xfe" + SCRIPT.encode()[40:])
    status, err = _run_cli(path)
    assert status == 2 and f"{path}:" in err and "not UTF-8" in err
    path.write_bytes(b"\x00\x01\x02 GSD")
    status, err = _run_cli(path)
    assert status == 2 and "binary file" in err
