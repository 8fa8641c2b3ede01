#!/usr/bin/env bash
# Gaussian skeleton on the GPU machine (compact sepset rows, C from the data on the GPU, pinned
# staging kept): gpu_skeleton() through R against the 16-thread CPU backend, then the p = 55,572
# shape from the data. Run from the repository root with the folder holding r.tar.xz:
#   (BENCH: the folder of the R scripts, default inst/bench)
#   DEV=.rbundle PHASES="resident" bash inst/bench/device-gauss-resident.sh
#   DEV=.rbundle PHASES="large" bash inst/bench/device-gauss-resident.sh
set -u
DEV=${DEV:-.rbundle}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT" /tmp/r
[ -x /tmp/r/R/bin/Rscript ] || tar -xJf "$DEV/r.tar.xz" -C /tmp/r
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
free -g | head -2
for ph in ${PHASES:-resident large}; do
case $ph in
resident)
  echo "== gpu_skeleton through R (GPU twice, CPU 16 threads), sepset rows above p = 5000"
  timeout ${RTIME:-420} /tmp/r/R/bin/Rscript ${BENCH:-inst/bench}/resident-bench.R --out "$OUT" \
    --sizes "${SIZES:-1643x850,5361x63,10000x1000,20000x1000}" --cpu-max-p ${CPUMAXP:-10000} \
    --threads 16 --repeat ${REPS:-3} 2>&1 | tee "$OUT/resident.log" | grep -vE "^ +[0-9]" | tail -40 ;;
large)
  echo "== p = ${P:-55572}, n = ${N:-3189} from the data (C on the GPU), m.max = ${MMAX:-1,Inf}"
  timeout ${LTIME:-540} /tmp/r/R/bin/Rscript ${BENCH:-inst/bench}/large-p-bench.R --out "$OUT" --p ${P:-55572} \
    --n ${N:-3189} --mmax "${MMAX:-1,Inf}" --threads 16 --check-p ${CHECKP:-600} 2>&1 | tee "$OUT/large-p.log" | tail -60 ;;
esac
done
