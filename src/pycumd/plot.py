"""``pycumd plot FILE.csv ...``: pictures of what a run wrote.

The kind of file is recognised from its header line:

* thermo log (``Step,Temp,E_pair,E_mol,TotEng,Press``): the total energy with its least-squares drift
  line, potential and kinetic energy, temperature and pressure against the step;
* g(r) (``r,g``), MSD (``lag,time,msd``: log-log, with the diffusion coefficient of the late-time
  slope), VACF (``lag,time,vacf,normalized``), S(q) (``q,S,n_vectors``).

Each file becomes ``FILE.png`` beside it (``-o`` names another file when one CSV is given), or an
interactive window with ``--show``.  Needs matplotlib (``pip install 'pycumd[plot]'``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


KINDS = {"thermo": ("Step", "TotEng", "Temp", "Press"), "rdf": ("r", "g"), "msd": ("time", "msd"),
         "vacf": ("time", "vacf"), "sq": ("q", "S")}


def add_arguments(parser) -> None:
    parser.add_argument("files", nargs="+", help="CSV files written by pycumd run (--log) or the analysis outputs")
    parser.add_argument("-o", "--output", help="picture file (.png, .pdf, .svg) for a single CSV (default FILE.png)")
    parser.add_argument("--show", action="store_true", help="open an interactive window instead of writing files")


def kind_of(columns) -> str:
    """The kind of CSV (a key of :data:`KINDS`) from its column names; ValueError if none fits."""
    for kind, needed in KINDS.items():
        if all(c in columns for c in needed):
            return kind
    raise ValueError(f"columns {', '.join(columns)}: not a thermo log (Step,Temp,...,TotEng,Press) nor an "
                     f"rdf (r,g), msd (time,msd), vacf (time,vacf) or S(q) (q,S) file")


def read_csv(path) -> dict:
    """Columns of a CSV file with a header line, as float arrays."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    with open(path) as f:
        header = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.size == 0:
        raise ValueError(f"{path}: no data rows below the header")
    if data.shape[1] != len(header):
        raise ValueError(f"{path}: {data.shape[1]} columns of data under a header of {len(header)}")
    return {name: data[:, k] for k, name in enumerate(header)}


def drift(step, energy) -> tuple:
    """Least-squares line through ``energy(step)``: (slope per step, intercept)."""
    if len(step) < 2:
        return 0.0, float(energy[0])
    slope, intercept = np.polyfit(np.asarray(step, float), np.asarray(energy, float), 1)
    return float(slope), float(intercept)


def figure(path, columns: dict | None = None):
    """The matplotlib figure of one CSV file."""
    import matplotlib.pyplot as plt

    columns = read_csv(path) if columns is None else columns
    kind = kind_of(columns)
    name = Path(path).name
    if kind == "thermo":
        fig, axes = plt.subplots(4, 1, figsize=(7, 9.5), sharex=True)
        step, total, pair = columns["Step"], columns["TotEng"], columns["E_pair"]
        slope, intercept = drift(step, total)
        relative = slope * (step[-1] - step[0]) / max(abs(float(total.mean())), 1e-300)
        axes[0].plot(step, total, label="total energy")
        axes[0].plot(step, intercept + slope * step, "k--", lw=1,
                     label=f"drift {slope:.3g} per step ({relative:.2g} of |E| over the run)")
        axes[0].set_ylabel("total energy")
        axes[0].legend(fontsize=8)
        axes[1].plot(step, pair, label="potential")
        axes[1].plot(step, total - pair, label="kinetic")
        axes[1].set_ylabel("energy")
        axes[1].legend(fontsize=8)
        axes[2].plot(step, columns["Temp"])
        axes[2].set_ylabel("temperature")
        axes[3].plot(step, columns["Press"])
        axes[3].set_ylabel("pressure")
        axes[3].set_xlabel("step")
    else:
        fig, ax = plt.subplots(figsize=(6, 4.2))
        if kind == "rdf":
            ax.plot(columns["r"], columns["g"])
            ax.axhline(1.0, color="k", lw=0.5)
            ax.set_xlabel("r")
            ax.set_ylabel("g(r)")
        elif kind == "msd":
            t, m = columns["time"][1:], columns["msd"][1:]
            ax.loglog(t, m, "o-", ms=3, label="MSD")
            if len(t) >= 4:
                late = slice(len(t) // 2, None)
                d = np.polyfit(t[late], m[late], 1)[0] / 6.0
                ax.loglog(t, 6 * d * t, "k--", lw=1, label=f"6 D t, D = {d:.3g}")
            ax.legend(fontsize=8)
            ax.set_xlabel("time")
            ax.set_ylabel("mean squared displacement")
        elif kind == "vacf":
            ax.plot(columns["time"], columns["normalized"] if "normalized" in columns else columns["vacf"])
            ax.axhline(0.0, color="k", lw=0.5)
            ax.set_xlabel("time")
            ax.set_ylabel("VACF (normalised)")
        else:
            ok = np.isfinite(columns["S"])
            ax.plot(columns["q"][ok], columns["S"][ok], "o-", ms=3)
            ax.set_xlabel("q")
            ax.set_ylabel("S(q)")
    fig.suptitle(name)
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
        fig = figure(path)
        if not args.show:
            out = Path(args.output) if args.output else Path(path).with_suffix(".png")
            fig.savefig(out, dpi=120)
            plt.close(fig)
            print(f"pycumd plot: {path} -> {out}")
    if args.show:
        plt.show()
    return 0
