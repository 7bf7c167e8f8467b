"""pycumd plot: kinds recognised from the header, the drift line, pictures written (matplotlib Agg)."""

import argparse

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from pycumd import plot  # noqa: E402


def _args(*files, output=None):
    parser = argparse.ArgumentParser()
    plot.add_arguments(parser)
    return parser.parse_args([*map(str, files), *(["-o", str(output)] if output else [])])


def test_thermo_log_gives_a_picture_and_the_drift_of_the_total_energy(tmp_path, capsys):
    log = tmp_path / "thermo.csv"
    step = np.arange(0, 1001, 100)
    tot = -5.0 + 2e-6 * step
    rows = "\n".join(f"{s},1.4,{t - 2.1},0.0,{t},3.2" for s, t in zip(step, tot))
    log.write_text("Step,Temp,E_pair,E_mol,TotEng,Press\n" + rows + "\n")
    slope, intercept = plot.drift(step, tot)
    assert slope == pytest.approx(2e-6) and intercept == pytest.approx(-5.0)
    assert plot.main(_args(log)) == 0
    png = tmp_path / "thermo.png"
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert f"{log} -> {png}" in capsys.readouterr().out


@pytest.mark.parametrize("header,kind", [("r,g", "rdf"), ("lag,time,msd", "msd"), ("lag,time,vacf,normalized", "vacf"),
                                         ("q,S,n_vectors", "sq")])
def test_analysis_csvs_are_recognised_and_drawn(tmp_path, header, kind):
    path = tmp_path / f"{kind}.csv"
    n = len(header.split(","))
    data = np.column_stack([np.linspace(0.0, 3.0, 12)] * n) + 0.1
    np.savetxt(path, data, delimiter=",", header=header, comments="")
    assert plot.kind_of(header.split(",")) == kind
    out = tmp_path / "picture.png"
    assert plot.main(_args(path, output=out)) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_unknown_columns_and_empty_files_are_named(tmp_path):
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="columns a, b: not a thermo log"):
        plot.main(_args(bad))
    empty = tmp_path / "empty.csv"
    empty.write_text("r,g\n")
    with pytest.raises(ValueError, match="empty.csv: no data rows"):
        plot.main(_args(empty))
