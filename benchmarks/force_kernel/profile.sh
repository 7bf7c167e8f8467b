#!/bin/bash
# Nsight Compute on the pair-force kernel at 1,000,188 atoms (jittered fcc, reordered): one launch
# of each variant of compare.py per precision (mixed: also the fixed-point kernel's variants).  Writes the details page under $OUT.
#   OUT=/tmp/prof [ONLY="package sel"] bash benchmarks/force_kernel/profile.sh [single mixed]
set -u
OUT=${OUT:-/tmp/force_kernel_profile}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
for p in ${*:-single mixed}; do
  REP=$OUT/force_kernel_1M_$p
  timeout ${NCU_TIMEOUT:-200} ncu --clock-control none ${NCU_SECTIONS:---set full} -k regex:'^pair_forces(_fixed)?$' \
      -f -o "$REP" python3 benchmarks/force_kernel/compare.py --ncu --cells 63 --precision "$p" ${ONLY:+--only $ONLY} \
      >> "$OUT/ncu_run.log" 2>&1
  echo "ncu $p rc=$?" >> "$OUT/ncu_run.log"
  ncu -i "$REP.ncu-rep" --page details > "$OUT/ncu_details_$p.txt" 2>&1
  rm -f "$REP.ncu-rep"
done
