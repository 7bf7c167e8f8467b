#!/usr/bin/env bash
# The GPU test suite and the benchmarks, in one device call, from the repo root on the device:
#
#   bash benchmarks/gpu_suite.sh [tests|unit|mpi] [bench] [peers] [extra] [largest] [smoke]   (default: tests bench)
#
#   tests  pytest on the GPU tests (marker "cuda"; the CPU tests run in CI), 4 workers; then the MPI
#          tests (tests/test_parallel.py: 2-4 ranks sharing the GPU) in one process.  The two halves
#          alone: `unit` and `mpi` (on a fresh machine the whole of `tests` takes ~500 s of the
#          device's 600-s limit per call: run them as two calls when the machine is cold)
#   bench  pycumd bench lj at BENCH_CELLS (default "20 40 63"), single, mixed and composite precision
#   peers  OpenMM, gamdpy and JAX-MD on the same sizes (needs the wheels of benchmarks/peers/README.md
#          carried in .whl/peers), then the plot docs/performance_lj.png and the ratio table
#   extra  large sizes (EXTRA_CELLS, default "100 159"), graphs off and deterministic variants
#   largest  LARGEST_CELLS (default 293: 100,614,228 atoms), single precision, 50 steps
#   smoke  every script under benchmarks/ and every pycumd bench at a tiny size (they still run)
#
# Logs and JSON lines go under $OUT (or ./gpu_out); a short table is printed last.
set -o pipefail
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
# Python packages the device lacks (gsd, ase, ...) travel as wheels in .whl (carry it: README of the device tool)
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
else
  echo "gpu_suite.sh: no wheels in .whl (not carried?): the tests that write GSD or use ASE will fail for want of gsd/ase"
fi
parts=${*:-tests bench}
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import cupy, numpy, numba, sys; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'numpy', numpy.__version__, 'numba', numba.__version__)"
} 2>&1 | tee "$OUT/versions.txt"
bench() { python3 -m pycumd.bench.lj "$@" --json "$OUT/bench_lj.jsonl" 2>&1 | tee -a "$OUT/bench_lj.txt"; }
unit_tests() {
  python3 -m pytest -q -p no:cacheprovider -n 4 -m cuda tests --ignore=tests/test_parallel.py 2>&1 | tee "$OUT/tests.log" | tail -n 15
}
mpi_tests() {
  # the MPI runs (mpiexec with 2-4 ranks sharing the GPU) one after another, outside the workers; each
  # test's line as it ends (-v), so that a call cut by the time limit still shows how far it got
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 python3 -m pytest -v -p no:cacheprovider -m cuda \
      --durations=5 tests/test_parallel.py 2>&1 | tee "$OUT/tests_mpi.log" | grep --line-buffered -E "PASSED|FAILED|SKIPPED|ERROR|passed|failed|s call"
}
for part in $parts; do
  case $part in
  tests) unit_tests; mpi_tests ;;
  unit) unit_tests ;;
  mpi) mpi_tests ;;
  bench) bench --cells ${BENCH_CELLS:-20 40 63} --precision single mixed composite --steps ${BENCH_STEPS:-500} ;;
  peers) PEER_CELLS="${BENCH_CELLS:-20 40 63}" PEER_OUT="$OUT" bash benchmarks/peers_device.sh > "$OUT/peers.log" 2>&1
         tail -n 5 "$OUT/peers.log" ;;
  extra) bench --cells ${EXTRA_CELLS:-100 159} --precision single mixed --steps 200
         bench --cells 20 63 --precision single --steps 500 --no-graphs
         bench --cells 20 63 --precision single mixed double composite --steps 500 --deterministic ;;
  largest) bench --cells ${LARGEST_CELLS:-293} --precision single --steps 50 --warmup 250 ;;
  smoke) for cmd in "benchmarks/force_kernel/compare.py --cells 8 --precision single mixed" \
                    "benchmarks/allpairs_fast.py --n 1152 --repeats 2" \
                    "benchmarks/formula_speed.py 8" \
                    "benchmarks/argon_sphere.py pycumd --out $OUT/argon --scale 0.1 --steps 100 --every 50 --full-steps 60 --frames 2" \
                    "-m pycumd.bench.checkpoint --cells 10 --steps 200 --every 100 --repeats 1" \
                    "-m pycumd.bench.ions --help" "-m pycumd.bench.scan --help" "-m pycumd.bench.scaling --help" \
                    "benchmarks/neighbor_structure_study.py --cells 6 --melt-steps 20" \
                    "benchmarks/lammps_coverage.py"; do
           if python3 $cmd > "$OUT/smoke.log" 2>&1; then echo "smoke ok: $cmd"; else echo "smoke FAILED: $cmd"; tail -n 5 "$OUT/smoke.log"; fi
         done 2>&1 | tee -a "$OUT/smoke.txt" ;;
  *) echo "gpu_suite.sh: unknown part $part (tests, unit, mpi, bench, peers, extra, largest, smoke)"; exit 2 ;;
  esac
done
echo "== summary =="
[ -f "$OUT/tests.log" ] && tail -n 3 "$OUT/tests.log" | grep -E "passed|failed"
[ -f "$OUT/tests_mpi.log" ] && tail -n 3 "$OUT/tests_mpi.log" | grep -E "passed|failed"
cat "$OUT/bench_lj.txt" "$OUT/smoke.txt" 2>/dev/null
if [ -f "$OUT/peers.jsonl" ]; then
  python3 benchmarks/plot_performance.py "$OUT/bench_lj.jsonl" "$OUT/peers.jsonl" --out "$OUT/performance_lj.png"
fi
