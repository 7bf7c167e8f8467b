#!/usr/bin/env bash
# Composite precision on a GPU machine: GPU tests of tests/test_composite.py, then the synthetic
# suite (`pycumd bench precision --device cuda`).  Run from the repository root.  Logs and the
# suite's outputs go to $OUT (default /tmp/precision_out): test_composite.log, bench.log and
# docs/ (precision_summation.md, precision_doundo.md, precision_doundo_{cpu,cuda}.png,
# precision_results.json).
# Missing test tools (pytest, hypothesis) are installed from wheels in .whl/precision when present.
set -o pipefail
OUT=${OUT:-/tmp/precision_out}
mkdir -p "$OUT/docs"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}

if ! $PY -c "import pytest, hypothesis" 2>/dev/null && ls .whl/precision/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/precision_site \
        .whl/precision/*.whl && export PYTHONPATH="$PYTHONPATH:/tmp/precision_site"
fi

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    $PY -c "import sys, numpy, numba, cupy, matplotlib, pytest; print('python', sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'cupy', cupy.__version__, 'matplotlib', matplotlib.__version__, 'pytest', pytest.__version__); print('cuda runtime', cupy.cuda.runtime.runtimeGetVersion(), 'driver', cupy.cuda.runtime.driverGetVersion())"
    $PY -c "import hypothesis; print('hypothesis', hypothesis.__version__)"
    grep -n "ftz" "$($PY -c 'import cupy.cuda.compiler as c; print(c.__file__)')" | head -5
    $PY -m pytest tests/test_composite.py -q -rs -p no:cacheprovider -s
} 2>&1 | tee "$OUT/test_composite.log"
test_rc=$?

$PY -m pycumd.bench.precision --out-dir "$OUT/docs" --device cuda 2>&1 | tee "$OUT/bench.log"
bench_rc=$?
echo "tests rc=$test_rc bench rc=$bench_rc"
exit $((test_rc || bench_rc))
