#!/usr/bin/env bash
# Issue 12's session-6 run on the GPU machine, one call: gpu_pc() end to end against pcalg (every
# pcalg case in a capped child at once), with the phases, and the triple checks' GPU parity.
#
# Here (the package installed into LIB from this branch):
#   mkdir -p /work/main/.dev-orient
#   R_LIBS=LIB /work/shared/tools/portable-r /work/main/.dev-orient/r.tar.xz gpupc pcalg
#   cp inst/bench/orient-device-s6.sh inst/bench/orient-e2e.R inst/bench/lib.R \
#      tests/testthat/helper-orient.R /work/main/.dev-orient/
# On the GPU machine (carry .dev-orient):
#   bash .dev-orient/orient-device-s6.sh
# Writes $OUT/orient-e2e-h100-s6.csv and .log (committed under inst/extdata/bench/orient/).
set -uo pipefail
d=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}
mkdir -p /tmp/r "$out"
tar -xJf "$d/r.tar.xz" -C /tmp/r || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout "${LIMIT:-480}" /tmp/r/R/bin/Rscript "$d/orient-e2e.R" --backend cuda --cap "${CAP:-60}" --reps 3 \
  --e2e-p 1643,5361,10000 --cons-p 500,1643 --parity 100 --helpers "$d/helper-orient.R" \
  --out "$out/orient-e2e-h100-s6.csv" 2>&1 | tee "$out/orient-e2e-h100-s6.log"
