#!/usr/bin/env bash
# The path from data to answers on the GPU machine: LINK
# (gpu_pc -> gpu_jtree -> gpu_query with 10,000 evidence sets; ALARM too), then the
# discrete timings through R (LINK and MUNIN, n = 20000, disCItest, backend "cuda", a warm-up
# call and 4 timed calls each, every call checked identical to the first).
#   DEV=.rbundle bash inst/bench/device-jtree-path.sh
set -u
. "$(dirname "$0")/device-env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine-c.txt"
for ph in ${PHASES:-path discrete}; do
case $ph in
path)
  echo "== jtree-path.R: ALARM and LINK, 5000 samples, 10,000 evidence sets"
  timeout ${PATH_S:-150} "$R" inst/bench/jtree-path.R "$OUT/path-h100.csv" 5000 10000 alarm link 2>&1 | tee "$OUT/path-h100.txt" | tail -12 ;;
discrete)
  echo "== LINK and MUNIN samples (n = 20000), then gpu_skeleton through R"
  "$R" inst/bench/export-codes.R link 20000 /tmp/link.bin && "$R" inst/bench/export-codes.R munin 20000 /tmp/munin.bin
  timeout ${DISC_S:-120} "$R" inst/bench/discrete-r-timing.R --repeat 4 /tmp/link.bin /tmp/munin.bin 2>&1 | tee "$OUT/discrete-r.txt" | tail -20 ;;
esac
done
