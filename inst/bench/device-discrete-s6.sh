#!/usr/bin/env bash
# Session 6's discrete check on the GPU machine (issue 11), from a folder D holding pcbench,
# r.tar.xz (portable-r with this branch's gpupc, pcalg, bnlearn), gpupc-base.tar.xz (the installed
# gpupc of main before this branch: the same-run baseline), link.bin.xz and munin.bin.xz
# (export-codes.R) and discrete-r-timing.R. Parity first, in the same command as the timings:
# pcbench's 60 random discrete cases (GPU twice, against the CPU backend), LINK against the CPU
# (all levels), MUNIN against the CPU at level 0 (--m-max 0: the level this session changed; all
# of MUNIN on the CPU takes 61 s); then pcbench GPU runs, then gpu_skeleton() through R, the
# baseline package and this branch's, alternately. Outputs in OUT (*-s6.txt).
#   bash inst/bench/device-discrete-s6.sh D OUT
set -u
D=${1:?usage: device-discrete-s6.sh D OUT}; OUT=${2:?usage: device-discrete-s6.sh D OUT}
B=$D/pcbench
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for nm in link munin; do xz -dc "$D/$nm.bin.xz" > "/tmp/$nm.bin"; done
# folders of this script's own: a warm machine may hold another bundle's /tmp/r, whose hostlib (made
# by its first R call) the portable R would then reuse
R_DIR=/tmp/r-discrete-s6; BASE=/tmp/gpupc-base-s6
rm -rf "$R_DIR" "$BASE"
mkdir -p "$R_DIR" "$BASE" && tar -xJf "$D/r.tar.xz" -C "$R_DIR" && tar -xJf "$D/gpupc-base.tar.xz" -C "$BASE" &
timeout 120 "$B" discrete --cases 60 --repeat 2 --threads 16 > "$OUT/pcbench-discrete-parity-s6.txt" 2>&1
tail -1 "$OUT/pcbench-discrete-parity-s6.txt"
timeout 60 "$B" discrete --codes /tmp/link.bin --backend both --repeat 2 --threads 16 > "$OUT/gsquare-link-parity-s6.txt" 2>&1
grep -E "parity|cpu:|gpu run" "$OUT/gsquare-link-parity-s6.txt"
timeout 60 "$B" discrete --codes /tmp/munin.bin --backend both --repeat 2 --threads 16 --m-max 0 > "$OUT/gsquare-munin-level0-parity-s6.txt" 2>&1
grep -E "parity|cpu:|gpu run" "$OUT/gsquare-munin-level0-parity-s6.txt"
for nm in link munin; do
  echo "== $nm"
  timeout 60 "$B" discrete --codes "/tmp/$nm.bin" --backend cuda --repeat 3 --threads 16 2>&1
done > "$OUT/gsquare-s6.txt"
grep -E "^==|gpu run|gpu: +[0-9]" "$OUT/gsquare-s6.txt"
wait
RS=$R_DIR/R/bin/Rscript
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# baseline, this branch, baseline, this branch: each a fresh R process with its own warm-up call
for k in 1 2; do
  for which in base new; do
    echo "== $which (round $k)"
    if [ "$which" = base ]; then lib=$BASE; else lib=; fi
    R_LIBS=$lib timeout 100 "$RS" "$D/discrete-r-timing.R" --repeat 3 /tmp/link.bin /tmp/munin.bin 2>&1
  done
done > "$OUT/gpu-skeleton-r-s6.txt"
grep -vE "^\\$|^\[1\]|^$" "$OUT/gpu-skeleton-r-s6.txt"
