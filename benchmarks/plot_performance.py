"""Plot and tabulate the LJ benchmark: pycumd beside its peers (OpenMM, gamdpy, JAX-MD).

Reads JSON-lines files written by `python -m pycumd.bench.lj --json FILE` (records without an
"engine" field are pycumd's) and by benchmarks/peers/openmm_lj.py, gamdpy_lj.py and jaxmd_lj.py.
A record with a "format" field (JAX-MD's neighbour-list format) is its own series, "jaxmd-dense" etc.  Writes
docs/performance_lj.png (atom-steps/s against N, log-log, one line per engine and precision) and
prints a markdown table of atom-steps/s per N with the ratios pycumd / peer.

    python benchmarks/plot_performance.py pycumd.jsonl peers.jsonl [--out docs/performance_lj.png]

Where a file holds several records of one engine, precision and N, the best rate is used
(--stat median for the median).  Records with "error" are listed under the table, not plotted.
Ratios compare equal precisions; a peer measured in one precision only (gamdpy: single) is
compared with every pycumd precision.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ENGINE_NAMES = {"pycumd": "pycumd", "openmm": "OpenMM", "gamdpy": "gamdpy", "jaxmd": "JAX-MD",
                "jaxmd-dense": "JAX-MD dense", "jaxmd-sparse": "JAX-MD sparse",
                "jaxmd-ordered_sparse": "JAX-MD ordered-sparse"}
PREC_ORDER = {"single": 0, "mixed": 1, "double": 2}


def load(paths):
    recs = []
    for path in paths:
        with open(path) as f:
            for i, line in enumerate(f, 1):
                line = line.strip()
                if not line or not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    print(f"warning: {path}:{i}: not JSON, skipped", file=sys.stderr)
                    continue
                r.setdefault("engine", "pycumd")
                if r.get("format"):            # JAX-MD: one series per neighbour-list format
                    r["engine"] = f"{r['engine']}-{r['format']}"
                r["precision"] = str(r.get("precision", "single")).lower()
                recs.append(r)
    return recs


def label(engine, precision):
    return f"{ENGINE_NAMES.get(engine, engine)} {precision}"


def fmt_rate(x):
    return "-" if x is None else f"{x:.3g}"


def fmt_n(n):
    return f"{n:,}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="JSON-lines files")
    ap.add_argument("--out", default="docs/performance_lj.png", help="figure to write ('' for none)")
    ap.add_argument("--stat", choices=["max", "median"], default="max", help="how repeats are combined")
    ap.add_argument("--title", default=None)
    ap.add_argument("--table", default=None, help="also write the markdown table to this file")
    args = ap.parse_args(argv)

    recs = load(args.files)
    ok = [r for r in recs if not r.get("error") and r.get("atom_steps_per_s")]
    failed = [r for r in recs if r.get("error") or not r.get("atom_steps_per_s")]
    if not ok:
        print("no measurements with a rate in", args.files)
        return 1

    combine = max if args.stat == "max" else statistics.median
    series = defaultdict(lambda: defaultdict(list))          # (engine, precision) -> N -> [rates]
    steps = defaultdict(lambda: defaultdict(list))
    for r in ok:
        key = (r["engine"], r["precision"])
        series[key][int(r["N"])].append(float(r["atom_steps_per_s"]))
        steps[key][int(r["N"])].append(float(r["steps_per_s"]))
    rate = {k: {n: combine(v) for n, v in d.items()} for k, d in series.items()}
    tps = {k: {n: combine(v) for n, v in d.items()} for k, d in steps.items()}
    keys = sorted(rate, key=lambda k: (k[0] != "pycumd", k[0], PREC_ORDER.get(k[1], 9), k[1]))
    ns = sorted({n for k in keys for n in rate[k]})
    devices = sorted({str(r.get("device")) for r in ok})
    versions = {}
    for r in ok:
        if r["engine"] != "pycumd" and r.get("version"):
            versions[r["engine"]] = r["version"]

    # ratios: pycumd precision p against each peer series of precision p; single-precision-only peers
    # against every pycumd precision
    ours = [k for k in keys if k[0] == "pycumd"]
    peers = [k for k in keys if k[0] != "pycumd"]
    peer_precs = defaultdict(set)
    for e, p in peers:
        peer_precs[e].add(p)
    pairs = [(o, q) for o in ours for q in peers if q[1] == o[1] or len(peer_precs[q[0]]) == 1]

    head = ["N"] + [label(*k) for k in keys] + [f"{label(*o)} / {label(*q)}" for o, q in pairs]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for n in ns:
        row = [fmt_n(n)] + [fmt_rate(rate[k].get(n)) for k in keys]
        for o, q in pairs:
            a, b = rate[o].get(n), rate[q].get(n)
            row.append(f"{a / b:.2f}" if a and b else "-")
        lines.append("| " + " | ".join(row) + " |")
    table = "\n".join(lines)
    notes = [f"atom-steps/s ({args.stat} of repeats); device: {', '.join(devices)}"]
    if versions:
        notes.append("peers: " + ", ".join(f"{ENGINE_NAMES.get(e, e)} {v}" for e, v in sorted(versions.items())))
    if len(devices) > 1:
        notes.append("WARNING: records come from more than one device")
    if failed:
        notes.append("failed runs: " + "; ".join(
            f"{label(r['engine'], r['precision'])} N={fmt_n(int(r['N']))}"
            + (f" (gridsync {r['gridsync_option']})" if r.get("gridsync_option") else "")
            + f": {str(r.get('error'))[:160]}" for r in failed))
    text = table + "\n\n" + "\n".join(f"- {s}" for s in notes) + "\n"
    print(text)
    steps_table = ["| N | " + " | ".join(label(*k) for k in keys) + " |", "|" + " --- |" * (len(keys) + 1)]
    for n in ns:
        steps_table.append("| " + fmt_n(n) + " | " + " | ".join(
            "-" if tps[k].get(n) is None else f"{tps[k][n]:,.1f}" for k in keys) + " |")
    print("steps/s:\n" + "\n".join(steps_table))
    if args.table:
        Path(args.table).write_text(text + "\nsteps/s:\n\n" + "\n".join(steps_table) + "\n")

    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 5))
        colors = {"pycumd": "C0", "openmm": "C1", "gamdpy": "C2", "jaxmd-dense": "C3", "jaxmd-sparse": "C4",
                  "jaxmd-ordered_sparse": "C5"}
        markers = {"single": "o", "mixed": "s", "double": "^"}
        for i, k in enumerate(keys):
            xs = sorted(rate[k])
            ax.plot(xs, [rate[k][x] for x in xs], marker=markers.get(k[1], "D"),
                    linestyle="-" if k[0] == "pycumd" else "--", color=colors.get(k[0], f"C{6 + i}"),
                    alpha=1.0 if k[1] != "mixed" else 0.75, label=label(*k))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (atoms)")
        ax.set_ylabel("atom-steps / s")
        ax.set_title(args.title or f"LJ liquid (LAMMPS in.lj, rho 0.8442, rc 2.5, NVE) on {', '.join(devices)}",
                     fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.out, dpi=150)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
