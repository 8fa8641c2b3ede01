#!/usr/bin/env bash
# skel.method = "stable.fast" on the GPU (dense levels 0 and 1
# with the C++ rules, levels >= 2 by rounds of listed tests). One call, phases in order:
#   parity  - pcbench parity, GPU against the CPU backend, both orders, each GPU case run twice
#   rcheck  - gpu-check.R: gpu_pc() on the GPU against pcalg::pc() and the CPU backend, slot by
#             slot, stable.fast (and a shorter stable run after the kernel changes)
#   timing  - resident-bench.R --method stable.fast: GPU (3 runs), CPU backend on 16 threads,
#             pcalg::skeleton(method = "stable.fast") up to p = 1643
# Run from the repository root, with DEV holding r.tar.xz and pcbench:
#   DEV=.rbundle PHASES="parity rcheck timing" bash inst/bench/device-stable-fast.sh
set -u
. "$(dirname "$0")/device-env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
for ph in ${PHASES:-parity rcheck timing}; do
case $ph in
parity)
  echo "== pcbench parity --order fast (GPU vs CPU backend, 2 GPU runs per case)"
  timeout ${PTIME:-150} "$DEV/pcbench" parity --order fast --cases ${CASES:-100} --repeat 2 --seed 7 2>&1 | tee "$OUT/parity-fast.txt" | tail -8
  echo "== pcbench parity --order fast --planned (levels 0 and 1 by listed rounds too)"
  timeout ${PTIME2:-60} "$DEV/pcbench" parity --order fast --planned --cases 40 --repeat 2 --seed 8 2>&1 | tee "$OUT/parity-fast-planned.txt" | tail -4
  echo "== pcbench parity --order stable (after the kernel changes)"
  timeout ${PTIME2:-60} "$DEV/pcbench" parity --order stable --cases 50 --repeat 2 --seed 9 2>&1 | tee "$OUT/parity-stable.txt" | tail -4 ;;
rcheck)
  echo "== gpu-check.R --method stable.fast: gpu_pc on the GPU vs pcalg::pc and the CPU backend"
  timeout ${RTIME:-200} "$R" inst/bench/gpu-check.R --out "$OUT" --cases ${RCASES:-100} --bench 0 --discrete 0 --method stable.fast 2>&1 | tee "$OUT/rcheck-fast.txt" | tail -12
  if [ "${RSTABLE:-0}" = 1 ]; then
    echo "== gpu-check.R --method stable (40 cases)"
    timeout 120 "$R" inst/bench/gpu-check.R --out "$OUT" --cases 40 --bench 0 --discrete 0 --method stable 2>&1 | tee "$OUT/rcheck-stable.txt" | tail -6
  fi ;;
timing)
  echo "== resident-bench.R --method stable.fast"
  timeout ${TTIME:-300} "$R" inst/bench/resident-bench.R --out "$OUT" --method stable.fast \
    --sizes "${SIZES:-1643x850,5361x63,10000x1000,20000x1000}" --cpu-max-p ${CPUMAXP:-10000} \
    --pcalg-max-p ${PCALGMAXP:-1643} --pcalg-cap 60 --threads 16 --repeat ${REPS:-3} 2>&1 | tee "$OUT/timing-fast.log" | grep -vE "^ +[0-9]" | tail -30 ;;
esac
done
