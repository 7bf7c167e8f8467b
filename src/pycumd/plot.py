"""``pycumd plot FILE.csv ...``: pictures of what a run wrote.

The kind of file is recognised from its header line:

* thermo log (a ``Step`` column and the run's thermo columns, by default
  ``Step,Temp,E_pair,E_mol,TotEng,Press``): the total energy with its least-squares line (the
  energy drift of an NVE run; with a thermostat or barostat, mostly their work), potential and
  kinetic energy, temperature, pressure and any other column against the step;
* g(r) (``r,g``), MSD (``lag,time,msd``: log-log, with the diffusion coefficient of the late-time
  slope), VACF (``lag,time,vacf,normalized``), S(q) (``q,S,n_vectors``).

Axes carry the units of ``--units`` (the run's unit system; default lj).  Each file becomes
``FILE.png`` beside it (``-o`` names another file when one CSV is given), or an interactive window
with ``--show``.  Needs matplotlib (``pip install 'pycumd[plot]'``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .units import UNIT_SYSTEMS

KINDS = {"thermo": ("Step",), "rdf": ("r", "g"), "msd": ("time", "msd"),
         "vacf": ("time", "vacf"), "sq": ("q", "S")}
#: thermo columns drawn in their own panels, and the unit attribute of their quantity
THERMO_QUANTITIES = {"Temp": ("temperature", "temperature"), "Press": ("pressure", "pressure"),
                     "Volume": ("volume", None), "KinEng": ("kinetic energy", "energy"),
                     "PotEng": ("potential energy", "energy"), "E_pair": ("pair energy", "energy")}


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", help="CSV files written by pycumd run (--log) or the analysis outputs")
    parser.add_argument("-o", "--output", help="picture file (.png, .pdf, .svg) for a single CSV (default FILE.png)")
    parser.add_argument("--show", action="store_true", help="open an interactive window instead of writing files")
    parser.add_argument("--units", choices=sorted(UNIT_SYSTEMS), default="lj",
                        help="the run's unit system, for the axis labels (default lj)")


def kind_of(columns) -> str:
    """The kind of CSV (a key of :data:`KINDS`) from its column names; ValueError if none fits."""
    for kind, needed in KINDS.items():
        if all(c in columns for c in needed) and (kind != "thermo" or len(columns) > 1):
            return kind
    raise ValueError(f"columns {', '.join(columns)}: not a thermo log (Step,Temp,...,TotEng,Press) nor an "
                     f"rdf (r,g), msd (time,msd), vacf (time,vacf) or S(q) (q,S) file")


def read_csv(path) -> dict:
    """Columns of a CSV file with a header line, as float arrays.  A thermo log of several runs
    with other columns has a header line before each run's rows; the columns every part has are
    read, in order."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    text = path.read_text()
    lines = text.splitlines()
    if text and not text.endswith("\n") and len(lines) > 1:
        # pycumd's writers end every row with a line end: a last line without one is a row cut off
        # by a kill inside its write (the OS may stop a write between pages); its last value may be
        # cut short, so it is left out rather than read as a number it never was
        warnings.warn(f"{path}:{len(lines)}: the last line has no line end (a run killed while writing "
                      f"it); left out", stacklevel=2)
        lines = lines[:-1]
    parts = []                                   # (header, rows)
    for n, line in enumerate(lines, 1):
        fields = line.strip().split(",")
        if not line.strip():
            continue
        try:
            values = [float(v) for v in fields]
        except ValueError:
            parts.append((fields, []))
            continue
        if not parts:
            raise ValueError(f"{path}:{n}: data before a header line")
        if len(values) != len(parts[-1][0]):
            raise ValueError(f"{path}:{n}: {len(values)} columns of data under a header of {len(parts[-1][0])}")
        parts[-1][1].append(values)
    if not parts or not any(rows for _, rows in parts):
        raise ValueError(f"{path}: no data rows below the header")
    common = [c for c in parts[0][0] if all(c in header for header, _ in parts)]
    return {c: np.array([row[header.index(c)] for header, rows in parts for row in rows]) for c in common}


def _labels(units: str) -> dict:
    """Axis labels with the units of unit system ``units`` (lj energies are per atom, as LAMMPS
    prints them)."""
    u = UNIT_SYSTEMS[units]
    per_atom = " per atom" if u.normalize_thermo else ""
    return {"energy": f"{u.energy}{per_atom}", "temperature": u.temperature, "pressure": u.pressure,
            "length": u.length, "time": u.time}


def drift(step, energy) -> tuple:
    """Least-squares line through ``energy(step)``: (slope per step, intercept)."""
    if len(step) < 2:
        return 0.0, float(energy[0])
    slope, intercept = np.polyfit(np.asarray(step, float), np.asarray(energy, float), 1)
    return float(slope), float(intercept)


def figure(path, columns: dict | None = None, units: str = "lj"):
    """The matplotlib figure of one CSV file, its axes labelled in the units of ``units``."""
    import matplotlib.pyplot as plt

    columns = read_csv(path) if columns is None else columns
    kind = kind_of(columns)
    name = Path(path).name
    unit = _labels(units)
    if kind == "thermo":
        step = columns["Step"]
        panels = []                                   # (draw(ax), y label)
        total = columns.get("TotEng")
        pair = columns.get("PotEng", columns.get("E_pair"))
        if total is not None:
            slope, intercept = drift(step, total)
            relative = slope * (step[-1] - step[0]) / max(abs(float(total.mean())), 1e-300)

            def draw_total(ax):
                ax.plot(step, total, label="total energy")
                ax.plot(step, intercept + slope * step, "k--", lw=1,
                        label=f"least-squares line: {slope:.3g} {unit['energy']} per step "
                              f"({relative:.2g} of |E| over the run)")
                ax.legend(fontsize=8, title="NVE: energy drift; with a thermostat: mostly its work",
                          title_fontsize=7)
            panels.append((draw_total, f"total energy ({unit['energy']})"))
            if pair is not None:
                def draw_split(ax):
                    ax.plot(step, pair, label="potential")
                    ax.plot(step, total - pair, label="kinetic")
                    ax.legend(fontsize=8)
                panels.append((draw_split, f"energy ({unit['energy']})"))
        shown = {"Step", "TotEng", "E_mol"} | ({"PotEng", "E_pair", "KinEng"} if total is not None and pair is not None
                                               else set())
        for column in columns:
            if column in shown:
                continue
            quantity, kind_of_unit = THERMO_QUANTITIES.get(column, (column, None))
            label = f"{quantity} ({unit[kind_of_unit]})" if kind_of_unit else quantity
            if column == "Volume":
                label = f"volume ({unit['length']}^3)"
            panels.append((lambda ax, c=column: ax.plot(step, columns[c]), label))
        fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.4 * len(panels) + 0.5), sharex=True,
                                 squeeze=False)
        for ax, (draw, label) in zip(axes[:, 0], panels):
            draw(ax)
            ax.set_ylabel(label)
        axes[-1, 0].set_xlabel("step")
    else:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        if kind == "rdf":
            ax.plot(columns["r"], columns["g"])
            ax.axhline(1.0, color="k", lw=0.5)
            ax.set_xlabel(f"r ({unit['length']})")
            ax.set_ylabel("g(r)")
        elif kind == "msd":
            t, m = columns["time"][1:], columns["msd"][1:]
            ax.loglog(t, m, "o-", ms=3, label="MSD")
            if len(t) >= 4:
                late = slice(len(t) // 2, None)
                d = np.polyfit(t[late], m[late], 1)[0] / 6.0
                ax.loglog(t, 6 * d * t, "k--", lw=1,
                          label=f"6 D t, D = {d:.3g} {unit['length']}^2/{unit['time']}")
            ax.legend(fontsize=8)
            ax.set_xlabel(f"time ({unit['time']})")
            ax.set_ylabel(f"mean squared displacement ({unit['length']}^2)")
        elif kind == "vacf":
            ax.plot(columns["time"], columns["normalized"] if "normalized" in columns else columns["vacf"])
            ax.axhline(0.0, color="k", lw=0.5)
            ax.set_xlabel(f"time ({unit['time']})")
            ax.set_ylabel("VACF (normalised)")
        else:
            ok = np.isfinite(columns["S"])
            ax.plot(columns["q"][ok], columns["S"][ok], "o-", ms=3)
            ax.set_xlabel(f"q (1/{unit['length']})")
            ax.set_ylabel("S(q)")
    fig.suptitle(f"{name} ({units} units)")
    fig.tight_layout()
    return fig


def main(args) -> int:
    """Plot each file of ``args.files``; print where each picture went."""
    import matplotlib

    if not args.show:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if args.output and len(args.files) > 1:
        raise ValueError("-o/--output names one picture: give one CSV file with it")
    for path in args.files:
        fig = figure(path, units=getattr(args, "units", "lj"))
        if not args.show:
            out = Path(args.output) if args.output else Path(path).with_suffix(".png")
            fig.savefig(out, dpi=120)
            plt.close(fig)
            print(f"pycumd plot: {path} -> {out}")
    if args.show:
        plt.show()
    return 0
