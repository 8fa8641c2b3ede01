#!/usr/bin/env bash
# CUDA backend: CPU/GPU parity and timing, run on the GPU machine.
#
# That machine has no cargo and no R: build pcbench elsewhere and carry the binary, e.g.
#   (cd src/rust && cargo build --release --offline -p pcbench)
#   mkdir -p .devbin && cp src/rust/target/release/pcbench .devbin/
# then run this script from the repository root there (the device tool: carry [".devbin"]).
#
#   PARITY_CASES=100  random cases, p log-uniform in [5, 300], n in [20, 5000] (n < p included),
#                     each CPU vs GPU, the GPU twice (identical output required)
#   TIMING=1          p = 1643/n = 850, p = 1190/n = 47, p = 5361/n = 63 (expected degree 4 DAGs),
#                     CPU on $THREADS threads vs GPU, per level; NVRTC compile time separately
#   LARGE=1           also p = 20000, n = 100 on the GPU alone (C takes 3.2 GB of device memory)
# Results go to $OUT (or ./bench-out). Exit status: non-zero when a parity check failed.
set -u
B=${PCBENCH:-./.devbin/pcbench}
OUT=${OUT:-./bench-out}
THREADS=${THREADS:-16}
PARITY_CASES=${PARITY_CASES:-100}
TIMING=${TIMING:-1}
CPU_LIMIT=${CPU_LIMIT:-240}
mkdir -p "$OUT"

# NVRTC: cudarc looks for libnvrtc.so.13 / .12 on the loader path
if ! "$B" probe >/dev/null 2>&1; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '*/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
fi
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader 2>/dev/null
"$B" probe || exit 3

status=0
if [ "$PARITY_CASES" -gt 0 ]; then
  echo "== parity: $PARITY_CASES random cases"
  "$B" parity --cases "$PARITY_CASES" --seed 1 --p-min 5 --p-max 300 --n-min 20 --n-max 5000 \
      --repeat 2 --threads "$THREADS" 2>&1 | tee "$OUT/parity.txt"
  s=${PIPESTATUS[0]}; [ "$s" -ne 0 ] && status=$s
fi
if [ "$TIMING" = 1 ]; then
  for spec in "1643 850" "1190 47" "5361 63"; do
    set -- $spec
    echo "== timing p = $1, n = $2"
    "$B" run --gen --p "$1" --n "$2" --degree 4 --seed 1 --alpha 0.01 --backend both \
        --threads "$THREADS" --repeat 2 --cpu-limit "$CPU_LIMIT" 2>&1 | tee "$OUT/timing_p$1_n$2.txt"
    s=${PIPESTATUS[0]}; [ "$s" -ne 0 ] && status=$s
  done
fi
if [ "${LARGE:-0}" = 1 ]; then
  echo "== large: p = 20000, n = 100, GPU only"
  "$B" run --gen --p 20000 --n 100 --degree 4 --seed 1 --alpha 0.01 --backend cuda \
      --threads "$THREADS" 2>&1 | tee "$OUT/large_p20000_n100.txt"
  s=${PIPESTATUS[0]}; [ "$s" -ne 0 ] && status=$s
fi
exit $status
