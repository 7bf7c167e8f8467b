#!/usr/bin/env bash
# The GPU test suite and the benchmarks, in one device call.  Run from the repo root on the device:
#   bash benchmarks/gpu_suite.sh            (writes logs under $OUT, or ./gpu_out without it)
# Prints a short table last.
set -o pipefail
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, numba, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'numpy', numpy.__version__, 'numba', numba.__version__)"
} 2>&1 | tee "$OUT/versions.txt"
python3 -m pytest -q -p no:cacheprovider -n 4 tests ${PYCUMD_TESTS:-} 2>&1 | tee "$OUT/tests.log" | tail -n 25
python3 -m pycumd.bench.lj --cells ${BENCH_CELLS:-20 63} --precision single mixed double --steps ${BENCH_STEPS:-500} \
  --json "$OUT/bench_lj.jsonl" 2>&1 | tee "$OUT/bench_lj.txt"
echo "== summary =="; tail -n 3 "$OUT/tests.log" | grep -E "passed|failed" ; cat "$OUT/bench_lj.txt"
