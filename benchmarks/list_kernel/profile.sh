#!/bin/bash
# Nsight Compute on the list kernel at 1,000,188 atoms (single, reordered, jittered fcc): the package's
# kernel (launched by the normal build) and one launch of each variant named on the command line
# (labels of compare.py).  Writes under $OUT: the report and text exports (details, SASS source, raw).
#   OUT=/tmp/prof bash benchmarks/list_kernel/profile.sh lean pair
set -u
OUT=${OUT:-/tmp/list_kernel_profile}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
REP=${NCU_REP:-$OUT/list_kernel_1M}
timeout ${NCU_TIMEOUT:-150} ncu --clock-control none ${NCU_SECTIONS:---set full} -k regex:'^build_(neighbor_list|list_variant|list_v7)$' \
    -c $((1 + $#)) -f -o "$REP" python3 benchmarks/list_kernel/compare.py --ncu "$@" > "$OUT/ncu_run.log" 2>&1
echo "ncu rc=$?" >> "$OUT/ncu_run.log"
ncu -i "$REP.ncu-rep" --page details --print-details all > "$OUT/ncu_details.txt" 2>&1 \
    || ncu -i "$REP.ncu-rep" --page details > "$OUT/ncu_details.txt" 2>&1
ncu -i "$REP.ncu-rep" --page source --csv --print-source sass > "$OUT/ncu_source.csv" 2>&1
ncu -i "$REP.ncu-rep" --page raw --csv > "$OUT/ncu_raw.csv" 2>&1
ls -la "$OUT" >> "$OUT/ncu_run.log"
