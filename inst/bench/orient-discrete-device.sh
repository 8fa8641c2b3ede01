#!/usr/bin/env bash
# On the GPU machine, one call: conservative / majority-rule PC on discrete
# data with the triple checks on the GPU (pc_cuda::CudaGSquareBatch). inst/bench/orient-discrete.R:
# gpu_pc(backend = "cuda") end to end against pcalg's pc(skel.method = "stable.fast") on ALARM
# (n = 5000, 20000), HEPAR2 and ANDES (pcalg in capped children), and the parity of >= 60 random
# discrete cases against pcalg, a second GPU run and the CPU backend.
#
# Here (the package installed into LIB), into a bundle folder DEV (e.g. .rbundle):
#   mkdir -p $DEV
#   R_LIBS=LIB portable-r $DEV/r.tar.xz gpupc pcalg
#   cp inst/bench/orient-discrete-device.sh inst/bench/orient-discrete.R inst/bench/lib.R $DEV/
#   cp -r inst/extdata/networks $DEV/
# On the GPU machine (with that folder):
#   bash $DEV/orient-discrete-device.sh
# Writes $OUT/$PREFIX-{parity,timing}.csv and .log (PREFIX orient-discrete-h100; committed
# under inst/extdata/bench/orient/). TIMING="" runs the parity alone.
set -uo pipefail
prefix=${PREFIX:-orient-discrete-h100}
d=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/out}
r=/tmp/r12
mkdir -p "$r" "$out"
tar -xJf "$d/r.tar.xz" -C "$r" || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/$prefix-device.txt"
nets=$d/networks
[ -d "$nets" ] || nets=$(dirname "$d")/inst/extdata/networks
timeout "${LIMIT:-390}" "$r/R/bin/Rscript" "$d/orient-discrete.R" --backend cuda --cap "${CAP:-120}" --reps 3 \
  --cases "${CASES:-72}" --min-compared 60 --cores "${CORES:-7}" --networks "$nets" \
  --timing "${TIMING-alarm:5000,alarm:20000,hepar2:5000,andes:5000}" \
  --out "$out/$prefix" 2>&1 | tee "$out/$prefix.log"
exit "${PIPESTATUS[0]}"
