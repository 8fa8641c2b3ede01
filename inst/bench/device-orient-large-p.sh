#!/usr/bin/env bash
# Two long jobs side by side on the GPU machine.
#   1. orient-e2e.R with pcalg capped at CAP s: gpu_pc()
#      end to end (relaxed at p = 1643 / 5361 / 10000, conservative and majority rule at p = 500 /
#      1643), pcalg's pc(skel.method = "stable.fast") in forked children, one core each;
#   2. the full p = 55,572, n = 3189 run from the data (m.max = Inf), C on the GPU,
#      started once orient-e2e's gpupc timings are done (its pcalg children then hold 7 cores).
#   DEV=.rbundle CAP=540 bash inst/bench/device-orient-large-p.sh
set -u
. "$(dirname "$0")/device-env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine-b.txt"
free -g | head -2
timeout $((${CAP:-540} + 40)) "$R" inst/bench/orient-e2e.R --backend cuda --cap "${CAP:-540}" --reps 3 \
  --e2e-p 1643,5361,10000 --cons-p 500,1643 --parity 20 --helpers tests/testthat/helper-orient.R \
  --out "$OUT/orient-e2e-h100.csv" > "$OUT/orient-e2e-h100.log" 2>&1 &
e2e=$!
# wait for orient-e2e's gpupc timings: its parity lines come once pcalg's children have started
for i in $(seq 1 120); do grep -q "random-" "$OUT/orient-e2e-h100.log" 2>/dev/null && break; sleep 2; done
echo "== orient-e2e gpupc part done after ~$((i * 2)) s; p = ${P:-55572} full run"
timeout ${LTIME:-500} "$R" inst/bench/large-p-bench.R --out "$OUT" --p ${P:-55572} --n ${N:-3189} \
  --mmax "${MMAX:-Inf}" --threads 16 --check-p 0 2>&1 | grep -v "ETA" | tee "$OUT/large-p-all-levels.log" | tail -25
wait $e2e
grep -v "ETA" "$OUT/orient-e2e-h100.log" | tail -40
