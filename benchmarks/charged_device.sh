#!/usr/bin/env bash
# Charged-melt speed beside OpenMM's PME (issue 36, Targets > Speed), in one device call on one H100,
# from the repository root with .whl carried (carry: [".whl"]):
#
#   bash benchmarks/charged_device.sh
#
# Molten NaCl (Tosi-Fumi born/coul/long, cutoff 9 A, 1300 K, dt 2 fs, NVE; src/pycumd/bench/charged.py)
# at CHARGED_IONS (default "100000 1000000": 97,336 and 1,000,000 ions) on
#   pycumd   python3 -m pycumd.bench.charged, PPPM at CHARGED_ACCURACY (default 1e-4), precisions
#            CHARGED_PRECISIONS (default "single mixed"), one process per size; it measures its RMS
#            Coulomb force error on 1,000 ions against a tight Ewald reference and writes the state
#            file (initial state + reference) to /tmp/charged_states
#   openmm   benchmarks/peers/openmm_pme.py on that state file (wheels .whl/peers/openmm*.whl: openmm and
#            openmm-cuda-13), CUDA platform, the same precisions, ewaldErrorTolerance calibrated so that its
#            measured error equals pycumd's of the same size and precision
# Both start from the same state: the displaced rock-salt lattice run CHARGED_MELT (default 1000) untimed steps
# into a melt by pycumd (CHARGED_BIG_MELT, default 500, above CHARGED_BIG ions); the state file carries it.
# The sizes in order, pycumd before OpenMM at each.  Steps: CHARGED_STEPS / CHARGED_WARMUP (default 500 / 100)
# below CHARGED_BIG ions (default 500000), CHARGED_BIG_STEPS / CHARGED_BIG_WARMUP (default 200 / 50) above.
# The whole script keeps to CHARGED_BUDGET seconds (default 540): a run that would start with less than
# 30 s left is skipped and recorded as such.  Results: $OUT/charged.jsonl (one JSON line per run, "engine"
# pycumd / openmm; failures carry "error"), each run's output in $OUT/<run>.log, the environment in
# $OUT/env.log, and the table (steps/s, OpenMM / pycumd ratio, errors, PPPM share) printed at the end and
# in $OUT/table.txt.
# Dry run without a GPU: CHARGED_IONS="512 1728" CHARGED_PRECISIONS=double CHARGED_DEVICE=cpu \
#     CHARGED_PLATFORM=CPU CHARGED_STEPS=20 CHARGED_WARMUP=5 CHARGED_MELT=20 CHARGED_BIG_MELT=20 \
#     bash benchmarks/charged_device.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
OUT=${OUT:-charged_out}; mkdir -p "$OUT"
BUDGET=${CHARGED_BUDGET:-540}
IONS=${CHARGED_IONS:-100000 1000000}
PRECISIONS=${CHARGED_PRECISIONS:-single mixed}
ACCURACY=${CHARGED_ACCURACY:-1e-4}
DEVICE=${CHARGED_DEVICE:-cuda}
PLATFORM=${CHARGED_PLATFORM:-CUDA}
BIG=${CHARGED_BIG:-500000}
STEPS=${CHARGED_STEPS:-500} WARMUP=${CHARGED_WARMUP:-100}
BIG_STEPS=${CHARGED_BIG_STEPS:-200} BIG_WARMUP=${CHARGED_BIG_WARMUP:-50}
MELT=${CHARGED_MELT:-1000} BIG_MELT=${CHARGED_BIG_MELT:-500}   # untimed steps from the lattice into a melt
STATES=/tmp/charged_states
JSON=$OUT/charged.jsonl
start=$SECONDS
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

# --- OpenMM from the carried wheels --------------------------------------------------------------
site=/tmp/charged_site
source benchmarks/device_env.sh
install_wheels "$site" charged_device.sh OpenMM .whl/peers/openmm*.whl
add_pip_nvidia_libs
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
    python3 -c 'import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
    python3 -c 'import openmm as m; P = m.Platform; print("openmm", m.__version__, [P.getPlatform(i).getName() for i in range(P.getNumPlatforms())]); [print("  plugin load failure:", f) for f in P.getPluginLoadFailures() if "CUDA" in f]'
    echo "git $(git rev-parse --short HEAD 2>/dev/null) ions $IONS precisions $PRECISIONS accuracy $ACCURACY budget $BUDGET s"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"

error_record() {   # engine ions precision message
    python3 -c 'import json, sys; e, n, p, m = sys.argv[1:5]
print(json.dumps({"engine": e, "system": "nacl", "N": int(n), "precision": p, "steps_per_s": None,
                  "atom_steps_per_s": None, "error": m}))' "$@" >> "$JSON"
}
records() { if [ -f "$JSON" ]; then wc -l < "$JSON"; else echo 0; fi; }
missing() {        # engine ions rc log: an error line for each precision without a record
    local p
    for p in $PRECISIONS; do
        python3 -c 'import json, sys; e, n, p, f = sys.argv[1:5]; n = int(n)
try:
    rows = [json.loads(l) for l in open(f) if l.strip()]
except OSError:
    rows = []
sys.exit(0 if any(r.get("engine") == e and r.get("N") == n and r.get("precision") == p for r in rows) else 1)' \
            "$1" "$2" "$p" "$JSON" || error_record "$1" "$2" "$p" "no result (exit $3; see $4)"
    done
}

for ions in $IONS; do
    n=$(python3 -c "import sys; c = max(1, round((int(sys.argv[1]) / 8) ** (1 / 3))); print(8 * c ** 3)" "$ions")
    if (( n > BIG )); then s=$BIG_STEPS w=$BIG_WARMUP m=$BIG_MELT cap=260; else s=$STEPS w=$WARMUP m=$MELT cap=150; fi
    rm -f "$STATES/nacl_$n.npz"
    run "pycumd_$n" $cap python3 -m pycumd.bench.charged --ions "$n" --precision $PRECISIONS --accuracy "$ACCURACY" \
        --device "$DEVICE" --steps "$s" --warmup "$w" --melt-steps "$m" --state-dir "$STATES" --json "$JSON" --out-dir "$OUT/pycumd_$n"
    missing pycumd "$n" $? "pycumd_$n.log"
    if [ -f "$STATES/nacl_$n.npz" ]; then
        left=$(( BUDGET - (SECONDS - start) ))
        if (( n > BIG )); then cap=$(( left - 10 )); else cap=$(( (left - 10) / 2 )); fi   # room for the large size
        per=$(( (cap - 10) / $(echo $PRECISIONS | wc -w) ))
        run "openmm_$n" $cap python3 benchmarks/peers/openmm_pme.py --state "$STATES/nacl_$n.npz" \
            --match "$JSON" --precision $PRECISIONS --platform "$PLATFORM" --steps "$s" --warmup "$w" \
            --timeout "$(( per > 30 ? per : 30 ))" --json "$JSON"
        missing openmm "$n" $? "openmm_$n.log"
    else
        missing openmm "$n" "-" "no state file: pycumd_$n.log"
    fi
done

python3 - "$JSON" <<'EOF' | tee "$OUT/table.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
key = lambda r: (r["N"], r["precision"])
pyc = {key(r): r for r in rows if r.get("engine") == "pycumd"}
omm = {key(r): r for r in rows if r.get("engine") == "openmm"}
fmt = lambda v, f: "-".rjust(int(f.split(".")[0])) if v is None else format(v, f)
print(f"{'ions':>10} {'precision':>9} | {'pycumd st/s':>11} {'F err':>8} {'PPPM %':>6} {'mesh':>12} | "
      f"{'OpenMM st/s':>11} {'F err':>8} {'tolerance':>9} {'mesh':>12} | {'pycumd/OpenMM':>13}")
for k in sorted(set(pyc) | set(omm)):
    a, b = pyc.get(k, {}), omm.get(k, {})
    sa, sb = a.get("steps_per_s"), b.get("steps_per_s")
    frac = a.get("kspace_fraction")
    mesh = lambda r: "x".join(map(str, r["mesh"])) if r.get("mesh") else "-"
    print(f"{k[0]:>10,} {k[1]:>9} | {fmt(sa, '11.1f')} {fmt(a.get('force_error_rel'), '8.2e')} "
          f"{fmt(None if frac is None else 100 * frac, '6.1f')} {mesh(a):>12} | {fmt(sb, '11.1f')} "
          f"{fmt(b.get('force_error_rel'), '8.2e')} {fmt(b.get('ewald_error_tolerance'), '9.2e')} {mesh(b):>12} | "
          f"{fmt(sa / sb if sa and sb else None, '13.2f')}"
          + "".join(f"  [{e}: {r['error'][:120]}]" for e, r in (("pycumd", a), ("openmm", b)) if r.get("error")))
print("F err: RMS |F - F_ref| of the Coulomb force on 1,000 ions / 14.399645 eV/A (LAMMPS' relative accuracy);"
      " PPPM %: PPPM timed alone / the measured step")
EOF
echo "done in $(( SECONDS - start )) s; results: $JSON ($(records) records)"
