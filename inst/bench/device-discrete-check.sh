#!/usr/bin/env bash
# Discrete CUDA backend on the GPU machine (no R, no cargo there: carry .devbin/pcbench, built with
# `cargo build --release -p pcbench`, and .rbundle/r.tar.xz, a portable R bundle made by `portable-r`):
#   1. pcbench discrete parity: random discrete data, CPU vs GPU, both orders, Dis/Bin, twice;
#   2. pcbench timing on LINK-sized data and on a 10^5 / 10^6-row, 1000-variable, 21-level set;
#   3. inst/bench/gpu-check.R --discrete 1: bnlearn networks against pcalg and the CPU backend.
# Usage: bash inst/bench/device-discrete-check.sh OUTDIR [parts, default "1 2 3"]
set -u
OUT=${1:-./bench-out}; PARTS=${2:-"1 2 3"}
B=${PCBENCH:-./.devbin/pcbench}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for part in $PARTS; do
  case $part in
    1) echo "== pcbench discrete parity"
       timeout 150 $B discrete --cases 60 --repeat 2 --threads 16 2>&1 | tee "$OUT/pcbench-discrete-parity.txt" | tail -8 ;;
    2) echo "== pcbench discrete timing"
       timeout 100 $B discrete --p 724 --n 20000 --max-levels 4 --repeat 2 --threads 16 2>&1 | tee "$OUT/pcbench-discrete-link-like.txt"
       timeout 120 $B discrete --p 1000 --n 100000 --max-levels 21 --repeat 1 --backend cuda 2>&1 | tee "$OUT/pcbench-discrete-1e5.txt"
       timeout 200 $B discrete --p 1000 --n 1000000 --max-levels 21 --repeat 1 --backend cuda --m-max 1 2>&1 | tee "$OUT/pcbench-discrete-1e6.txt" ;;
    3) echo "== gpu-check.R discrete"
       [ -x /tmp/r/R/bin/Rscript ] || { mkdir -p /tmp/r && tar -xJf .rbundle/r.tar.xz -C /tmp/r; }
       timeout 400 /tmp/r/R/bin/Rscript inst/bench/gpu-check.R --out "$OUT" --parity 0 --bench 0 --discrete 1 2>&1 | tee "$OUT/gpu-check-discrete.log" | tail -40 ;;
  esac
done
