#!/usr/bin/env bash
# Session 7, first call (issue 15): where the batch's time goes, the fused collect against the
# previous kernels in the same run. $DEV holds pcbench (this branch), pcbench-old (main before it)
# and the BIF files; results under $OUT.
#   DEV=.dev-h15 bash .dev-h15/jtree-s7a.sh
set -uo pipefail
DEV=${DEV:-.dev-h15}; OUT=${OUT:-/tmp/jtree-out}; mkdir -p "$OUT"
T0=$(date +%s); el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/s7a-log.txt"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/s7a-log.txt"; nproc | tee -a "$OUT/s7a-log.txt"
B="$DEV/pcbench jtree --csv $OUT/s7a-jtree.csv --profile-csv $OUT/s7a-profile.csv"
timeout 60 $B "$DEV/munin.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 --profile-rows 2000 > "$OUT/s7a-jtree.txt" 2>&1; el "munin new rc $?"
timeout 70 "$DEV/pcbench-old" jtree --csv "$OUT/s7a-old.csv" "$DEV/munin.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 > "$OUT/s7a-old.txt" 2>&1; el "munin old rc $?"
for n in asia alarm hepar2; do timeout 30 $B "$DEV/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 200; done >> "$OUT/s7a-jtree.txt" 2>&1; el "small done"
for n in andes pigs; do timeout 40 $B "$DEV/$n.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50 --profile-rows 2000; done >> "$OUT/s7a-jtree.txt" 2>&1; el "andes pigs done"
for n in link barley diabetes mildew; do timeout 60 $B "$DEV/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500 --profile-rows 1000; el "$n rc $?"; done >> "$OUT/s7a-jtree.txt" 2>&1
el "done"
