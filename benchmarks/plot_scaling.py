"""Plot atom-steps/s against N for one and two GPUs from `pycumd bench scaling` JSON records.

    python3 benchmarks/plot_scaling.py docs/data/scaling_h200x2_2026-11-27_s13_final.jsonl \
        docs/data/openmm_h200x2_2026-11-27_s13_final.jsonl -o docs/scaling_2gpu.png

LJ strong-scaling runs (not --weak; not the A/B runs of the host build, ``--host-build``) and all-pairs
ions, pycumd on 1 and 2 ranks; OpenMM records (``"engine": "openmm"``) on one GPU and on two
(``device_index`` "0,1") where present.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", help="JSON-lines files of records")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = defaultdict(dict)
    device = ""
    lines = [line for path in args.records for line in open(path) if line.strip()]
    for line in lines:
        r = json.loads(line)
        if r.get("domain_build") == "host":
            continue
        if r.get("engine") == "openmm":
            label = f"OpenMM LJ, {'2 GPUs' if r.get('device_index') else '1 GPU'}"
        elif r.get("weak"):
            continue
        else:
            label = f"pycumd {'LJ' if r['case'] == 'lj' else 'ions (all pairs)'}, {r['ranks']} GPU{'s' * (r['ranks'] > 1)}"
            if r["ranks"] > 1 and r["case"] == "ions" and "matrix" in r["decomposition"]:
                label += " (P x Q matrix)"
            device = r.get("device", device)
        n = r["N"]
        series[label][n] = max(series[label].get(n, 0.0), r["atom_steps_per_s"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label in sorted(series):
        points = sorted(series[label].items())
        style = "--" if "OpenMM" in label else "-"
        ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (atoms or ions)")
    ax.set_ylabel("atom-steps per second")
    ax.set_title(f"One and two GPUs ({device} x 2, NVLink), single precision")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
