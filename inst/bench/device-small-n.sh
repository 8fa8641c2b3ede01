#!/usr/bin/env bash
# The GPU check of disCItest / binCItest's "n < n.min" warning: inst/bench/small-n-check.R
# on the discrete CUDA backend and on the CPU, each against pcalg. The GPU computes tests past an
# edge's first success; only the canonical prefixes may count, so the warning (its presence, the
# smallest n.min and, for a skeleton, the number of tests) must be pcalg's.
# On the GPU machine, from a folder D holding r.tar.xz (portable-r with gpupc and pcalg), this
# script and small-n-check.R:   bash D/device-small-n.sh D OUTDIR ["cuda cpu"]
set -u
D=${1:?folder with r.tar.xz and small-n-check.R}; OUT=${2:-./small-n-out}; BACKENDS=${3:-"cuda cpu"}
# a folder of its own: a warm machine may hold another bundle in /tmp/r
R=/tmp/r-small-n
rm -rf "$R"; mkdir -p "$OUT" "$R"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/small-n-device.txt"
tar -xJf "$D/r.tar.xz" -C "$R"
status=0
for b in $BACKENDS; do
  echo "== backend $b"
  timeout 200 "$R/R/bin/Rscript" "$D/small-n-check.R" "$b" "$OUT/small-n-$b.csv" 2>&1 | tee "$OUT/small-n-$b.log" || status=1
done
exit $status
