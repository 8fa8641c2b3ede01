#!/usr/bin/env bash
# Device run, session 8: stable.fast's levels >= 2 (Gaussian, listed rounds) with two rounds in
# flight, against the previous build ($DEV/pcbench-old) on the same correlation matrices:
#   parity  pcbench parity --order fast (100 cases, GPU twice against the CPU backend) and
#           --planned (levels 0-1 by listed rounds too, 40 cases)
#   timing  pcbench run --order fast --backend cuda --repeat 3 at p = 10000 and 20000, n = 1000
#           (C simulated once and saved), old build then new, per-level phases
#   DEV=.dev-s8 bash inst/bench/device-s8-fast.sh
set -u
DEV=${DEV:-.dev-s8}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
B="$PWD/$DEV/pcbench"; OLD="$PWD/$DEV/pcbench-old"
for ph in ${PHASES:-parity timing}; do
case $ph in
parity)
  echo "== pcbench parity --order fast"
  timeout 150 "$B" parity --order fast --cases 100 --repeat 2 --seed 7 2>&1 | tee "$OUT/parity-fast-s8.txt" | tail -2
  echo "== pcbench parity --order fast --planned"
  timeout 80 "$B" parity --order fast --planned --cases 40 --repeat 2 --seed 8 2>&1 | tee "$OUT/parity-fast-planned-s8.txt" | tail -2 ;;
timing)
  for p in ${SIZES:-10000 20000}; do
    [ -s /tmp/cor-$p.bin ] || timeout 200 "$B" run --gen --p $p --n 1000 --backend cuda --order fast --m-max 0 --save-cor /tmp/cor-$p.bin > /dev/null 2>&1
    for v in old new; do
      bin=$B; [ $v = old ] && bin=$OLD
      echo "== p = $p, $v build"
      timeout 150 "$bin" run --cor /tmp/cor-$p.bin --p $p --n 1000 --backend cuda --order fast --repeat 3 2>&1 | tee "$OUT/fast-p$p-$v-s8.txt" | grep -v "^data"
    done
  done ;;
esac
done
