#!/usr/bin/env bash
# One device call: GPU tests of the scan and counting sort, then the scan benchmark.
# Usage (repo root, on the GPU machine): bash benchmarks/scan_device.sh [extra bench args]
# Logs and the benchmark table/plot/json go to $OUT (default ./bench-out).
set -uo pipefail
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  python3 -c "import cupy, numpy, numba; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'numba', numba.__version__, 'cuda runtime', cupy.cuda.runtime.runtimeGetVersion())"
} 2>&1 | tee "$OUT/env.log"
python3 -m pytest -x -q -p no:cacheprovider tests/test_scan.py tests/test_counting_sort.py 2>&1 | tail -30 | tee "$OUT/tests.log"
test_rc=${PIPESTATUS[0]}
python3 -m pycumd.bench.scan --sweep --out-dir "$OUT" "$@" 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
echo "tests rc=$test_rc bench rc=$bench_rc"
exit $(( test_rc != 0 || bench_rc != 0 ))
