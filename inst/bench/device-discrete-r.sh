#!/usr/bin/env bash
# Discrete skeleton through R on the GPU machine (MUNIN and LINK, n = 20000), with the checks that
# go with it (device-gsquare-kernels.sh times the kernels with pcbench):
#   r        gpu_skeleton() through R (discrete-r-timing.R: LINK and MUNIN samples of
#            export-codes.R, n = 20000, a warm-up and 8 timed calls each, every call checked
#            identical to the first)
#   orient   orient-discrete.R's parity: conservative / majority-rule gpu_pc() (the triple checks on
#            the GPU) against pcalg::pc(), a rerun and the CPU backend, on random discrete cases
#   pcalg    gpu-check.R --discrete 1: bnlearn networks against pcalg::pc() and the CPU backend
#   DEV=.rbundle bash inst/bench/device-discrete-r.sh      (PHASES to pick)
set -u
DEV=${DEV:-.rbundle}
RDIR=${RDIR:-/tmp/r-discrete}
. "$(dirname "$0")/device-env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
for ph in ${PHASES:-r pcalg}; do
case $ph in
r)
  [ -s /tmp/link.bin ] || "$R" inst/bench/export-codes.R link 20000 /tmp/link.bin
  [ -s /tmp/munin.bin ] || "$R" inst/bench/export-codes.R munin 20000 /tmp/munin.bin
  echo "== gpu_skeleton() through R"
  timeout ${R_S:-150} "$R" inst/bench/discrete-r-timing.R --repeat ${REPS:-8} /tmp/link.bin /tmp/munin.bin 2>&1 | tee "$OUT/gpu-skeleton-r-h100.txt" | grep -v "^[0-9]*: n=" | tail -22 ;;
orient)
  echo "== orient-discrete.R: conservative / majority-rule gpu_pc() with the triple checks on the GPU, against pcalg"
  timeout ${ORIENT_S:-300} "$R" inst/bench/orient-discrete.R --backend cuda --cases ${CASES:-40} --min-compared ${MIN_COMPARED:-30} \
    --cores 7 --networks inst/extdata/networks --timing "" --out "$OUT/orient-discrete-h100" 2>&1 \
    | tee "$OUT/orient-discrete-h100-parity.log" | tail -4 ;;
pcalg)
  echo "== gpu-check.R --discrete 1 (against pcalg and the CPU backend)"
  timeout ${PCALG_S:-300} "$R" inst/bench/gpu-check.R --out "$OUT/check" --parity 0 --bench 0 --discrete 1 2>&1 | tee "$OUT/gpu-check-discrete.log" | tail -6 ;;
esac
done
