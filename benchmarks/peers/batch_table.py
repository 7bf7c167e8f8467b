"""The issue-38 table from ``batch_device.sh``'s records: pycumd's batch against its targets and peers.

    python benchmarks/peers/batch_table.py OUT/pycumd_independent/batch.json OUT/pycumd_tempering/batch.json \\
        OUT/pycumd_lj.jsonl OUT/peers.jsonl

Reads ``pycumd bench batch``'s batch.json (a list) and JSON-lines files (``pycumd bench lj --json``,
``jaxmd_batch.py`` / ``openmm_batch.py --json``), in any number and order, and prints one line per
comparison with the issue's target and whether it is met.  Records are told apart by their keys:
``batch_atom_steps_per_s`` (pycumd bench batch, ``case`` independent or tempering), ``engine`` jaxmd /
openmm with ``case`` independent (the peers), ``backend`` without ``case`` (pycumd bench lj: one big
system in the default, non-deterministic mode).  A peer measured only at a smaller R than pycumd's is
compared all the same (aggregate rates) and the line says so.  Pure Python: runs anywhere.
"""

from __future__ import annotations

import json
import sys

#: issue 38's targets: (what, ratio or rate, bound)
TARGETS = {"aggregate": 1.5e9, "one_big": 0.6, "jaxmd": 20.0, "openmm": 50.0, "tempering": 30.0}


def read(paths) -> list:
    """All records of the files: a JSON list (batch.json) or JSON lines."""
    rows = []
    for path in paths:
        try:
            text = open(path).read()
        except OSError as e:
            print(f"batch_table: {path}: {e}", file=sys.stderr)
            continue
        stripped = text.strip()
        if stripped.startswith("["):
            rows.extend(json.loads(stripped))
        else:
            rows.extend(json.loads(line) for line in stripped.splitlines() if line.strip())
    return rows


def _engine(record) -> str:
    """'batched engine', 'member engine' or both, from bench batch's engine words."""
    words = str(record.get("engine", ""))
    return " and ".join(f"{w} engine" for w in ("batched", "members") if w in words) or words


def _best(rows):
    ok = [r for r in rows if r.get("atom_steps_per_s")]
    return max(ok, key=lambda r: r["atom_steps_per_s"]) if ok else None


def summarize(rows: list) -> list:
    """Comparison lines as dicts: ``what``, ``value`` (rate or ratio, None if unmeasured), ``target``,
    ``met`` (None if unmeasured), ``note``."""
    out = []

    def line(what, value, target, note=""):
        out.append({"what": what, "value": value, "target": target,
                    "met": None if value is None else value >= target, "note": note})

    ind = [r for r in rows if r.get("case") == "independent" and "batch_atom_steps_per_s" in r]
    tem = [r for r in rows if r.get("case") == "tempering" and "batch_atom_steps_per_s" in r]
    lj = [r for r in rows if "backend" in r and "case" not in r and r.get("atom_steps_per_s")]
    for p in ind:
        R, N, rate = p["systems"], p["atoms"], p["batch_atom_steps_per_s"]
        head = f"{R} x {N} {p.get('precision')} ({_engine(p)})"
        line(f"{head}: aggregate atom-steps/s", rate, TARGETS["aggregate"])
        if p.get("one_big_atom_steps_per_s"):
            line(f"{head}: / one {R * N:,}-atom system (bench batch, deterministic)",
                 rate / p["one_big_atom_steps_per_s"], TARGETS["one_big"],
                 f"one system {p['one_big_atom_steps_per_s']:.4g}")
        big = _best([r for r in lj if r.get("precision") == p.get("precision")])
        if big:
            line(f"{head}: / one {big['N']:,}-atom system (bench lj, default mode)",
                 rate / big["atom_steps_per_s"], TARGETS["one_big"], f"one system {big['atom_steps_per_s']:.4g}")
        if p.get("one_at_a_time_atom_steps_per_s"):
            line(f"{head}: / pycumd one system after another", rate / p["one_at_a_time_atom_steps_per_s"], 0.0,
                 "no target")
        for engine, words in (("jaxmd", "JAX-MD vmap"), ("openmm", "OpenMM one after another")):
            peers = [r for r in rows if r.get("engine") == engine and r.get("case") == "independent"
                     and r.get("atoms") == N]
            best = _best(peers)
            if best is None:
                errors = "; ".join(sorted({str(r.get("error"))[:100] for r in peers if r.get("error")}))
                line(f"{head}: / {words}", None, TARGETS[engine], f"not measured{': ' + errors if errors else ''}")
                continue
            how = (f"update {best['update']}" if engine == "jaxmd" else
                   f"{best['threads']} Context{'s in threads' if best['threads'] > 1 else ''}")
            size = "" if best["systems"] == R else f"; measured at {best['systems']} replicas, not {R}"
            line(f"{head}: / {words} (best: {how})", rate / best["atom_steps_per_s"], TARGETS[engine],
                 f"{words} {best['atom_steps_per_s']:.4g}{size}")
    for p in tem:
        head = f"tempering {p['replicas']} x {p['atoms']} {p.get('precision')} ({_engine(p)})"
        line(f"{head}: / one replica after another", p.get("batch_over_one_at_a_time"), TARGETS["tempering"],
             f"batch {p['batch_atom_steps_per_s']:.4g}, one at a time {p.get('one_at_a_time_atom_steps_per_s', 0):.4g}")
    return out


def render(lines: list) -> str:
    text = []
    for r in lines:
        v = "-" if r["value"] is None else (f"{r['value']:.4g}" if r["value"] >= 1e4 else f"{r['value']:.3f}")
        verdict = "" if not r["target"] else (" unmeasured" if r["met"] is None else
                                              (" MET" if r["met"] else " not met"))
        target = f"(target >= {r['target']:g}){verdict}" if r["target"] else ""
        text.append(f"{r['what']:<72} {v:>10} {target}  {r['note']}".rstrip())
    return "\n".join(text)


def main(argv=None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__)
        return 2
    print(render(summarize(read(paths))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
