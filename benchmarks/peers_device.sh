#!/usr/bin/env bash
# Device side of the LJ peer comparison (see benchmarks/peers/README.md): installs the carried peer
# wheels (.whl/peers: openmm 8.6.1, openmm-cuda-13 8.6.1, gamdpy 0.8.3, jax-md 0.2.29 with jraph, e3nn-jax,
# ml-collections) into /tmp/peers_site and runs benchmarks/peers/openmm_lj.py, gamdpy_lj.py and jaxmd_lj.py.
# Run from the repository root, with .whl carried:
#
#   bash benchmarks/peers_device.sh
#
# Environment (all optional):
#   PEER_CELLS      fcc cells per edge, N = 4 cells^3          (default "20 40 63")
#   PEER_STEPS      timed steps per size                       (default 500)
#   PEER_PRECISION  OpenMM precisions                          (default "single mixed")
#   PEER_ENGINES    which peers                                (default "openmm gamdpy jaxmd")
#   PEER_JAXMD_FORMATS  JAX-MD neighbour-list formats          (default "dense sparse")
#   PEER_TIMEOUT    seconds allowed for each size and engine   (default 600)
#   PEER_OUT        output folder                              (default $OUT, else ./peers_out)
# Writes $PEER_OUT/peers.jsonl (JSON lines for benchmarks/plot_performance.py), openmm.log, gamdpy.log,
# jaxmd.log.
set -u
cells=${PEER_CELLS:-20 40 63}
steps=${PEER_STEPS:-500}
precision=${PEER_PRECISION:-single mixed}
engines=${PEER_ENGINES:-openmm gamdpy jaxmd}
jaxmd_formats=${PEER_JAXMD_FORMATS:-dense sparse}
per_size=${PEER_TIMEOUT:-600}
out=${PEER_OUT:-${OUT:-peers_out}}
mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
site=/tmp/peers_site

ls "$here"/.whl/peers/*.whl >/dev/null 2>&1 || { echo "peers_device.sh: no wheels in .whl/peers (carry .whl)"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" \
    "$here"/.whl/peers/*.whl || { echo "peers_device.sh: wheel install failed"; exit 1; }
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
source "$here/benchmarks/device_env.sh"
add_pip_nvidia_libs

{
    date -u +%Y-%m-%dT%H:%MZ
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    python3 -c 'import sys, numpy; print("python", sys.version.split()[0], "numpy", numpy.__version__)'
    python3 -m pip show numba numba-cuda openmm openmm-cuda-13 gamdpy jax jaxlib jax-md 2>/dev/null | grep -E '^(Name|Version)' | paste - -
    python3 -c 'import openmm as m; P = m.Platform; print("openmm", m.__version__, [P.getPlatform(i).getName() for i in range(P.getNumPlatforms())]); [print("  plugin load failure:", f) for f in P.getPluginLoadFailures() if "CUDA" in f]'
} 2>&1 | tee "$out/env.log"

for e in $engines; do
    case $e in
    openmm)
        python3 "$here/benchmarks/peers/openmm_lj.py" --cells $cells --precision $precision --steps "$steps" \
            --timeout "$per_size" --json "$out/peers.jsonl" 2>&1 | tee "$out/openmm.log" ;;
    gamdpy)
        python3 "$here/benchmarks/peers/gamdpy_lj.py" --cells $cells --steps "$steps" \
            --timeout "$per_size" --json "$out/peers.jsonl" 2>&1 | tee "$out/gamdpy.log" ;;
    jaxmd)
        python3 "$here/benchmarks/peers/jaxmd_lj.py" --cells $cells --format $jaxmd_formats --steps "$steps" \
            --timeout "$per_size" --json "$out/peers.jsonl" 2>&1 | tee "$out/jaxmd.log" ;;
    *) echo "peers_device.sh: unknown engine $e" ;;
    esac
done
echo "results: $out/peers.jsonl"
