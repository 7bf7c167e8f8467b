#!/usr/bin/env bash
# Batches of small systems beside their baselines and peers (issue 38), in one device call on one GPU,
# from the repository root with .whl carried (carry: [".whl"]):
#
#   bash benchmarks/batch_device.sh
#
# Parts, in this order (BATCH_PARTS, default "independent big tempering openmm jaxmd"):
#   independent  python3 -m pycumd.bench.batch --case independent: BATCH_SYSTEMS x BATCH_ATOMS (default
#                1024 x 1000) in the engine BATCH_ENGINE (default batched), beside one system of
#                BATCH_SYSTEMS x BATCH_ATOMS atoms (deterministic, as the batch) and the systems one after
#                another -> $OUT/pycumd_independent/batch.json
#   big          python3 -m pycumd.bench.lj --cells BATCH_BIG_CELLS (default 63: 1,000,188 atoms): one big
#                system in the default (fastest, not deterministic) mode -> $OUT/pycumd_lj.jsonl
#   tempering    python3 -m pycumd.bench.batch --case tempering: BATCH_REPLICAS x BATCH_REPLICA_ATOMS (default
#                64 x 4000, Langevin, exchange every 100 steps) beside the replicas one after another
#                -> $OUT/pycumd_tempering/batch.json
#   openmm       benchmarks/peers/openmm_batch.py: OpenMM running the same replicas one after another in one
#                Context and in BATCH_OPENMM_THREADS (default "1 4") Contexts from as many threads; with
#                fewer replicas (each for all its steps) if they would not fit in the time -> $OUT/peers.jsonl
#   jaxmd        benchmarks/peers/jaxmd_batch.py: JAX-MD's vmap over the same replicas (update modes vmap and
#                any), R from BATCH_PEER_SYSTEMS (default "1024 256 64": the first that runs), timed batches
#                cut to BATCH_JAXMD_SECONDS (default 15) s each -> $OUT/peers.jsonl
# The peers read the replicas that benchmarks/peers/batch_replicas.py writes from pycumd's own builder
# (/tmp/batch_replicas.npz: the bench's positions, box and velocities, seeds 1000..).  Common settings:
# BATCH_PRECISION (single), BATCH_DEVICE (cuda), BATCH_STEPS / BATCH_WARMUP (500 / 100, every engine),
# BATCH_STEP (the batched engine's --batch-step: auto (default: the CUDA graph on the GPU), graph, host,
# or both: graph and host in the same process, an A/B).
# The whole script keeps to BATCH_BUDGET seconds (default 570): a part that would start with less than
# 30 s left is skipped (the peers then write an "error" record).  At the end batch_table.py prints the
# comparisons with the issue's targets ($OUT/table.txt).  Each part's output: $OUT/<part>.log; the
# environment: $OUT/env.log.
# Dry run without a GPU (pycumd on the CPU in double; the peers, absent here, write error records):
#   BATCH_DEVICE=cpu BATCH_PRECISION=double BATCH_SYSTEMS=4 BATCH_ATOMS=500 BATCH_BIG_CELLS=5 \
#   BATCH_REPLICAS=4 BATCH_REPLICA_ATOMS=500 BATCH_PEER_SYSTEMS="4 2" BATCH_STEPS=20 BATCH_WARMUP=5 \
#   OUT=/tmp/batch_out bash benchmarks/batch_device.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
OUT=${OUT:-batch_out}; mkdir -p "$OUT"
BUDGET=${BATCH_BUDGET:-570}
PARTS=${BATCH_PARTS:-independent big tempering openmm jaxmd}
SYSTEMS=${BATCH_SYSTEMS:-1024} ATOMS=${BATCH_ATOMS:-1000}
REPLICAS=${BATCH_REPLICAS:-64} REPLICA_ATOMS=${BATCH_REPLICA_ATOMS:-4000}
ENGINE=${BATCH_ENGINE:-batched}
BATCH_STEP_DRIVER=${BATCH_STEP:-auto}
PRECISION=${BATCH_PRECISION:-single}
DEVICE=${BATCH_DEVICE:-cuda}
STEPS=${BATCH_STEPS:-500} WARMUP=${BATCH_WARMUP:-100}
BIG_CELLS=${BATCH_BIG_CELLS:-63}
PEER_SYSTEMS=${BATCH_PEER_SYSTEMS:-1024 256 64}
JAXMD_SECONDS=${BATCH_JAXMD_SECONDS:-15}
OPENMM_THREADS=${BATCH_OPENMM_THREADS:-1 4}
REPLICA_FILE=/tmp/batch_replicas.npz
PEERS=$OUT/peers.jsonl
start=$SECONDS
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

# --- the peers' wheels (OpenMM, JAX-MD and what it imports; JAX itself is the device image's) -------------
site=/tmp/batch_site
source benchmarks/device_env.sh
install_wheels "$site" batch_device.sh peer .whl/peers/*.whl     # without them the peers write error records
add_pip_nvidia_libs
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
    python3 -c 'import cupy; print("cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
    python3 -m pip show jax jaxlib jax-md openmm openmm-cuda-13 2>/dev/null | grep -E '^(Name|Version)' | paste - -
    python3 -c 'import openmm as m; P = m.Platform; print("openmm", m.__version__, [P.getPlatform(i).getName() for i in range(P.getNumPlatforms())]); [print("  plugin load failure:", f) for f in P.getPluginLoadFailures() if "CUDA" in f]'
    echo "git $(git rev-parse --short HEAD 2>/dev/null) parts '$PARTS' systems $SYSTEMS x $ATOMS replicas $REPLICAS x $REPLICA_ATOMS engine $ENGINE precision $PRECISION steps $STEPS warmup $WARMUP budget $BUDGET s"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"

left() { echo $(( BUDGET - (SECONDS - start) )); }
has() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
peer_error() {     # engine message: one error record for a peer part that did not run
    python3 -c 'import json, sys; e, m, r, n = sys.argv[1:5]
print(json.dumps({"engine": e, "case": "independent", "systems": int(r), "atoms": int(n), "steps_per_s": None,
                  "atom_steps_per_s": None, "error": m}))' "$1" "$2" "${PEER_SYSTEMS%% *}" "$ATOMS" >> "$PEERS"
}
BENCH_BATCH=(python3 -m pycumd.bench.batch --engine "$ENGINE" --precision "$PRECISION" --device "$DEVICE"
             --steps "$STEPS" --warmup "$WARMUP" --batch-step "$BATCH_STEP_DRIVER")

if has independent; then
    run pycumd_independent 260 "${BENCH_BATCH[@]}" --case independent --out-dir "$OUT/pycumd_independent" \
        --systems "$SYSTEMS" --atoms "$ATOMS"
fi
if has big; then
    run pycumd_lj 100 python3 -m pycumd.bench.lj --cells "$BIG_CELLS" --precision "$PRECISION" --device "$DEVICE" \
        --steps "$STEPS" --json "$OUT/pycumd_lj.jsonl"
fi
if has tempering; then
    run pycumd_tempering 150 "${BENCH_BATCH[@]}" --case tempering --out-dir "$OUT/pycumd_tempering" \
        --replicas "$REPLICAS" --replica-atoms "$REPLICA_ATOMS"
fi
if has jaxmd || has openmm; then
    most=$(printf '%s\n' $PEER_SYSTEMS | sort -n | tail -n 1)
    run batch_replicas 60 python3 benchmarks/peers/batch_replicas.py --systems "$most" --atoms "$ATOMS" \
        --out "$REPLICA_FILE"
fi
records() { if [ -f "$PEERS" ]; then wc -l < "$PEERS"; else echo 0; fi; }
peer() {           # name engine cap runs script args...: a peer script; each of its first `runs` runs
                   # (child processes) gets an equal share of the time
    local name=$1 engine=$2 cap=$3 runs=$4; shift 4
    if [ ! -f "$REPLICA_FILE" ]; then peer_error "$engine" "no replica file (see batch_replicas.log)"; return; fi
    local l=$(left); local t=$(( l < cap ? l : cap )) n0=$(records) rc
    if (( t < 30 )); then peer_error "$engine" "$name skipped: $l s of the $BUDGET s budget left"; return; fi
    run "$name" "$t" python3 "$@" --replicas-file "$REPLICA_FILE" --systems $PEER_SYSTEMS --atoms "$ATOMS" \
        --steps "$STEPS" --warmup "$WARMUP" --timeout "$(( (t - 15) / runs ))" --json "$PEERS"
    rc=$?
    (( $(records) > n0 )) || peer_error "$engine" "$name: no record (exit $rc; see $name.log)"
}
if has openmm; then
    # OpenMM first (its time is the replicas' steps; --max-seconds keeps each run to 60 % of its share,
    # running fewer replicas if need be), leaving JAX-MD (which cuts its own batches) at least 200 s
    nt=$(echo $OPENMM_THREADS | wc -w); l=$(left); cap=$(( l - 200 > 150 ? l - 200 : 150 ))
    peer openmm openmm $cap $nt benchmarks/peers/openmm_batch.py --threads $OPENMM_THREADS \
        --precision "$PRECISION" --max-seconds $(( ( (cap < l ? cap : l) - 15) * 6 / 10 / nt ))
fi
if has jaxmd; then
    # the two update modes, each with half of what is left
    l=$(left)
    for mode in vmap any; do
        peer jaxmd_$mode jaxmd $(( (l - 5) / 2 )) 1 benchmarks/peers/jaxmd_batch.py --update $mode \
            --max-seconds "$JAXMD_SECONDS"
    done
fi

python3 benchmarks/peers/batch_table.py "$OUT/pycumd_independent/batch.json" "$OUT/pycumd_tempering/batch.json" \
    "$OUT/pycumd_lj.jsonl" "$PEERS" 2>/dev/null | tee "$OUT/table.txt"
echo "done in $(( SECONDS - start )) s; records: $OUT/pycumd_*/batch.json, $OUT/pycumd_lj.jsonl, $PEERS"
