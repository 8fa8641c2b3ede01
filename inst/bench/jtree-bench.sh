#!/usr/bin/env bash
# What runs on the GPU machine for junction-tree inference (one call): pcbench jtree (GPU against
# the CPU engine, timings) on the networks in $DEV, then pyAgrum's LazyPropagation on the same.
#   DEV=.rbundle PART=parity|bench|split bash inst/bench/jtree-bench.sh   (writes under $OUT)
#   PART=mpe: jtree-device-mpe.sh; PART=baselines: jtree-device-baselines.sh (each one call, run from $DEV)
set -uo pipefail
DEV=${DEV:-.rbundle}; OUT=${OUT:-/tmp/jtree-out}; PART=${PART:-parity}
mkdir -p "$OUT"
if [ "$PART" = mpe ] || [ "$PART" = baselines ]; then exec bash "$DEV/jtree-device-$PART.sh"; fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
B="$DEV/pcbench jtree --csv $OUT/jtree-$PART.csv"
if [ "$PART" = parity ]; then
  for n in asia alarm hepar2; do $B "$DEV/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 500; done 2>&1 | tee "$OUT/jtree-$PART.txt"
  for n in andes pigs; do timeout 60 $B "$DEV/$n.bif.gz" --rows 10000 --cpu-rows 500 --mpe-rows 100; done 2>&1 | tee -a "$OUT/jtree-$PART.txt"
elif [ "$PART" = split ]; then  # after long marginalisations were split in parts (third call)
  for n in asia alarm hepar2; do $B "$DEV/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 500; done 2>&1 | tee "$OUT/jtree-$PART.txt"
  for n in andes pigs; do timeout 40 $B "$DEV/$n.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50; done 2>&1 | tee -a "$OUT/jtree-$PART.txt"
  timeout 70 $B "$DEV/barley.bif.gz" --rows 10000 --cpu-rows 4 --mpe-rows 4 2>&1 | tee -a "$OUT/jtree-$PART.txt"
  timeout 45 $B "$DEV/munin.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 2>&1 | tee -a "$OUT/jtree-$PART.txt"
  timeout 45 $B "$DEV/link.bif.gz" --rows 1000 --cpu-rows 1 --mpe-rows 1 2>&1 | tee -a "$OUT/jtree-$PART.txt"
else
  for n in diabetes mildew barley munin; do timeout 80 $B "$DEV/$n.bif.gz" --rows 10000 --cpu-rows 16 --mpe-rows 16; done 2>&1 | tee "$OUT/jtree-$PART.txt"
  timeout 60 $B "$DEV/link.bif.gz" --rows 4 --cpu-rows 1 --mpe-rows 1 2>&1 | tee -a "$OUT/jtree-$PART.txt"
fi
if [ -n "${PYAGRUM:-}" ]; then
  python3 -m pip install --quiet --no-deps --target /tmp/pyag "$DEV"/pyagrum-*.whl >/dev/null 2>&1
  PYTHONPATH=/tmp/pyag timeout "${PYTIME:-100}" python3 "$DEV/jtree-pyagrum.py" "$OUT/pyagrum-$PART.csv" "${PYCAP:-8}" $PYAGRUM 2>&1 | tee "$OUT/pyagrum-$PART.txt"
fi
