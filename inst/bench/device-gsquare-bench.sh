#!/usr/bin/env bash
# The G^2 kernels on real networks, on the GPU machine (no R needed): pcbench on samples that
# inst/bench/export-codes.R wrote (NAME.bin.xz in DIR), each GPU run twice (identical runs are
# checked), with an earlier pcbench beside the current one when PCBENCH_OLD is set (one that has --codes; an older build without it logs an error line), and
# CPU parity (16 threads) on the smaller sets:
#   bash inst/bench/device-gsquare-bench.sh DIR OUT       (PCBENCH=..., PCBENCH_OLD=..., BLOCKS="256 128")
set -u
dir=${1:?usage: device-gsquare-bench.sh DIR OUT}; out=${2:?usage: device-gsquare-bench.sh DIR OUT}
B=${PCBENCH:-$dir/pcbench}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for f in "$dir"/*.bin.xz; do
  name=$(basename "$f" .bin.xz)
  bin=/tmp/$name.bin
  xz -dc "$f" > "$bin"
  log="$out/gsquare-$name.txt"
  : > "$log"
  if [ -n "${PCBENCH_OLD:-}" ]; then
    echo "== $name: previous build ($PCBENCH_OLD)" | tee -a "$log"
    timeout 120 "$PCBENCH_OLD" discrete --codes "$bin" --backend cuda --repeat 2 --threads 16 2>&1 | tee -a "$log"
  fi
  for blk in ${BLOCKS:-256}; do
    echo "== $name: this build, block $blk" | tee -a "$log"
    timeout 120 "$B" discrete --codes "$bin" --backend cuda --repeat 2 --threads 16 --block "$blk" 2>&1 | tee -a "$log"
  done
  if [ "$(stat -c %s "$bin")" -lt "${CPU_MAX_BYTES:-16000000}" ]; then
    echo "== $name: this build, CPU (16 threads) against GPU" | tee -a "$log"
    timeout 150 "$B" discrete --codes "$bin" --backend both --repeat 2 --threads 16 2>&1 | tee -a "$log"
  fi
done
