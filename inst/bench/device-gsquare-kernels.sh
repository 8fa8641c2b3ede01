#!/usr/bin/env bash
# How the G^2 kernel counts its tables, on LINK and MUNIN (export-codes.R
# samples, n = 20000): by runs of equal cells against packed (two samples per
# multiply-add, no runs, each thread's first cell in a register), each run's phases per level; the
# parity suite with both; and Nsight Compute's view of one level-1 launch of each (NCU=1).
# OCC=1: the shared table's size (ONLY_OCC=1: that alone; OCC_WORDS: the sizes). The files
# occupancy/occ-*-r{0,48,64}-* came from a build that also had the kernel capped at 48 and 64
# registers (--registers, removed: within 2% of uncapped).
#   DEV=.rbundle bash inst/bench/device-gsquare-kernels.sh
set -u
DEV=${DEV:-.rbundle}
RDIR=${RDIR:-/tmp/r-discrete}
. "$(dirname "$0")/device-env.sh"
B="$PWD/$DEV/pcbench"
[ -s /tmp/link.bin ] || "$R" inst/bench/export-codes.R link 20000 /tmp/link.bin
[ -s /tmp/munin.bin ] || "$R" inst/bench/export-codes.R munin 20000 /tmp/munin.bin
if [ -z "${ONLY_OCC:-}" ]; then
for d in munin link; do
  echo "== $d: packed, then runs"
  timeout 60 "$B" discrete --codes /tmp/$d.bin --backend cuda --repeat 3 --count both --threads 16 2>&1 \
    | tee "$OUT/gsquare-$d-h100.txt" | grep -E "^count|gpu run|gpu: +[01] |NONDET"
done
echo "== pcbench discrete --cases 60 --repeat 2 --count both"
timeout 200 "$B" discrete --cases 60 --repeat 2 --count both --threads 16 2>&1 | tee "$OUT/pcbench-discrete-parity.txt" | tail -2
echo "== LINK, CPU against GPU (packed)"
timeout 90 "$B" discrete --codes /tmp/link.bin --backend both --repeat 2 --threads 16 2>&1 | tee "$OUT/gsquare-link-parity.txt" | grep -E "^(cpu|gpu run|parity|NONDET)"
fi
if [ -n "${OCC:-}" ]; then
  # occupancy: the table words a block keeps in shared memory (fewer: more blocks per
  # multiprocessor; a larger table goes to global scratch)
  for d in munin link; do
    for w in ${OCC_WORDS:-8192 4096 2048}; do
      echo "== $d shared-words $w"
      timeout 60 "$B" discrete --codes /tmp/$d.bin --backend cuda --repeat 3 --shared-words $w --threads 16 2>&1 \
        | tee "$OUT/occ-$d-w$w.txt" | grep -E "gpu run|gpu: +1 |NONDET"
    done
  done
fi
if [ -n "${NCU:-}" ]; then
  for c in packed runs; do
    timeout 120 /usr/local/cuda/bin/ncu --set full -k gsquare_tests --launch-skip 20 --launch-count 1 "$B" discrete --codes /tmp/munin.bin \
      --backend cuda --repeat 1 --count $c --threads 16 > "$OUT/ncu-munin-$c.txt" 2>&1
    echo "== ncu $c"; grep -E "  Duration|Executed Instructions  |L1/TEX Cache Throughput|Issue Slots Busy|excessive wavefronts" "$OUT/ncu-munin-$c.txt"
  done
fi
