#!/bin/bash
# One device call for the all-pairs Yukawa work (docs/ions.md): environment, GPU tests, the launch-shape
# sweep of benchmarks/allpairs_fast.py (Newton shapes also with other unroll factors), the Table-II bench,
# the ions energy drift, and one ncu profile of the fast kernel.
# Usage on the device machine, from the repository root:  bash benchmarks/allpairs_device.sh  (logs in $OUT)
set -o pipefail
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/allpairs_out}; mkdir -p "$OUT"
SIZES=${SIZES:-"1152 6912 27648"}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
  python3 -c "import cupy; print('cupy', cupy.__version__, 'runtime', cupy.cuda.runtime.runtimeGetVersion(), 'nvrtc', cupy.cuda.nvrtc.getVersion())"
  date -u; } 2>&1 | tee "$OUT/env.txt"
timeout ${T_TESTS:-170} python3 -m pytest -q -p no:cacheprovider -x tests/test_allpairs.py tests/test_yukawa_pasta.py \
    2>&1 | tee "$OUT/tests.log" | tail -4
timeout ${T_SWEEP:-60} python3 benchmarks/allpairs_fast.py --n 27648 --repeats 20 ${SWEEP_ARGS} --json "$OUT/variants.jsonl" \
    2>&1 | tee "$OUT/variants.log" | grep -E "best|Error|error"
for unroll in ${NEWTON_UNROLLS:-1 2}; do      # the Newton shapes with other unroll factors (default 4 above)
  timeout ${T_SWEEP:-60} python3 benchmarks/allpairs_fast.py --n 27648 --repeats 20 --variants single:exact mixed:exact \
      --shapes newton,8,4 newton,4,4 newton,8,2 newton,4,2 newton,2,4 --newton-unroll $unroll \
      --json "$OUT/variants.jsonl" 2>&1 | tee -a "$OUT/variants.log" | grep -E "best|Error|error"
done
timeout ${T_BENCH:-45} python3 -m pycumd.bench.ions --sizes $SIZES --precision single mixed double --steps 200 \
    --json "$OUT/ions.jsonl" 2>&1 | tee "$OUT/ions.log"
timeout ${T_DRIFT:-150} python3 -m pycumd.bench.drift --system ions --steps ${DRIFT_STEPS:-200000} --every 1000 \
    --precision single mixed double --deterministic off --max-seconds 45 --out-dir "$OUT" 2>&1 | tail -8 | tee "$OUT/drift.log"
timeout ${T_NCU:-30} ncu --clock-control none --kernel-name regex:${NCU_KERNEL:-allpairs_yukawa_newton_f} --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section Occupancy \
    --section InstructionStats --section WarpStateStats python3 benchmarks/allpairs_fast.py --n 27648 --repeats 2 \
    --variants ${NCU_VARIANT:-single:exact} --shapes ${NCU_SHAPE:-newton,8,4} > "$OUT/ncu.log" 2>&1
grep -E "SM Frequency|Duration|Issue Slots Busy|Issued Warp|No Eligible|Executed Ipc A|Achieved Occupancy|Registers Per|Compute \(SM\) Th|Warp Cycles Per Issued|Executed Instructions  " "$OUT/ncu.log" | head -24
