#!/usr/bin/env bash
# Scaling over the GPUs of one host, in one device call, from the repo root on a machine with 2 GPUs:
#
#   bash benchmarks/scaling_device.sh [tests] [lj] [ions] [openmm] [sizes]
#
#   tests   the GPU tests of tests/test_parallel.py (2 ranks: one per GPU through NCCL; 3-4 ranks share)
#   lj      pycumd bench scaling lj on 1 and 2 GPUs: strong at LJ_CELLS (default "63 159"), weak at WEAK_CELLS
#           (default 159: 16M atoms per GPU); with HOST_STEPS=1 also 2 GPUs with host-driven steps (--no-graphs),
#           with HOST_BUILD=1 also 2 GPUs with the host build of the domains (--host-build) and the device
#           build launch by launch (--eager-build)
#   ions    all-pairs ions at ION_SIZES (default "27648 110592") on 1 and 2 GPUs, replicated and 2x1 matrix
#   openmm  OpenMM on 1 and 2 GPUs (DeviceIndex 0,1) at LJ_CELLS (wheels in .whl/peers: carry .whl)
#   profile rank 0's Python profile of the 2-rank LJ run at PROFILE_CELLS (default 63) into $OUT/profile_lj.txt
#   sizes   LJ strong scaling at SIZE_CELLS (default "20 32 40 50 80 100") for the plot and the crossover
#
# JSON records and logs go under $OUT (or ./scaling_out); rank 0 prints one line per run.
set -o pipefail
OUT=${OUT:-scaling_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
MPI="mpirun --bind-to none -x PYTHONPATH -x PYTHONUNBUFFERED -x NCCL_NVLS_ENABLE"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvidia-smi topo -m | head -4
  python3 -c "import cupy, numpy, sys; from cupy.cuda import nccl; print('python', sys.version.split()[0], 'cupy', cupy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(), 'NCCL', nccl.get_version(), 'numpy', numpy.__version__)"
  mpirun --version | head -1
} 2>&1 | tee "$OUT/versions.txt"
scaling() { # ranks, args...
  local n=$1; shift
  $MPI -n "$n" python3 -m pycumd.bench.scaling "$@" --json "$OUT/scaling.jsonl" 2>&1 | tee -a "$OUT/scaling.txt" | grep -E "atom-steps|Error|error" ; }
parts=${*:-lj ions}
for part in $parts; do
  case $part in
  tests) python3 -m pytest -q -p no:cacheprovider -m cuda tests/test_parallel.py 2>&1 | tee "$OUT/tests_mpi.log" | tail -n 15 ;;
  lj) for c in ${LJ_CELLS:-63 159}; do
        scaling 1 lj --cells "$c" --steps ${LJ_STEPS:-300}
        scaling 2 lj --cells "$c" --steps ${LJ_STEPS:-300}
        [ -n "$HOST_STEPS" ] && scaling 2 lj --cells "$c" --steps ${LJ_STEPS:-300} --no-graphs
        [ -n "$HOST_BUILD" ] && scaling 2 lj --cells "$c" --steps ${LJ_STEPS:-300} --host-build
        [ -n "$HOST_BUILD" ] && scaling 2 lj --cells "$c" --steps ${LJ_STEPS:-300} --eager-build
      done
      for c in ${WEAK_CELLS:-159}; do scaling 2 lj --cells "$c" --weak --steps ${LJ_STEPS:-300}; done ;;
  ions) for n in ${ION_SIZES:-27648 110592}; do
          steps=$(( n > 50000 ? 60 : 400 ))
          scaling 1 ions --n "$n" --steps $steps --warmup 20
          scaling 2 ions --n "$n" --steps $steps --warmup 20
          scaling 2 ions --n "$n" --grid 2x1 --steps $steps --warmup 20
        done ;;
  openmm) python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/peers .whl/peers/*.whl \
            && export PYTHONPATH=$PYTHONPATH:/tmp/peers
          export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
          for c in ${LJ_CELLS:-63 159}; do
            python3 benchmarks/peers/openmm_lj.py --cells "$c" --precision single --steps ${OPENMM_STEPS:-300} --json "$OUT/openmm.jsonl" 2>&1 | tail -n 2
            python3 benchmarks/peers/openmm_lj.py --cells "$c" --precision single --steps ${OPENMM_STEPS:-300} --device-index 0,1 --json "$OUT/openmm.jsonl" 2>&1 | tail -n 2
          done ;;
  profile) scaling 2 lj --cells ${PROFILE_CELLS:-63} --steps 200 --profile "$OUT/profile_lj.txt" ;;
  sizes) for c in ${SIZE_CELLS:-20 32 40 50 80 100}; do
           scaling 1 lj --cells "$c" --steps 300
           scaling 2 lj --cells "$c" --steps 300
         done ;;
  esac
done
