#!/usr/bin/env bash
# Session 5's discrete check on the GPU machine, from a folder D holding pcbench, r.tar.xz
# (portable-r with gpupc and pcalg), link.bin.xz and munin.bin.xz (export-codes.R) and
# discrete-r-timing.R: parity first (pcbench's random cases, LINK and MUNIN against the CPU),
# then timings (pcbench, window growth 200/150/125; gpu_skeleton() through R). Outputs in OUT.
#   bash device-discrete-s5.sh D OUT      (PARITY=0 skips the parity part, GROWTHS="200 150", R_CPU=none: no CPU run through R,
#   PARITY_CODES=link: CPU parity on LINK only)
set -u
D=${1:?usage: device-discrete-s5.sh D OUT}; OUT=${2:?usage: device-discrete-s5.sh D OUT}
B=$D/pcbench
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
for nm in link munin; do xz -dc "$D/$nm.bin.xz" > "/tmp/$nm.bin"; done
if [ "${PARITY:-1}" = 1 ]; then
  timeout 150 "$B" discrete --cases 60 --repeat 2 --threads 16 > "$OUT/pcbench-discrete-parity-s5.txt" 2>&1
  tail -1 "$OUT/pcbench-discrete-parity-s5.txt"
  for nm in ${PARITY_CODES:-link munin}; do
    timeout 150 "$B" discrete --codes "/tmp/$nm.bin" --backend both --repeat 2 --threads 16 > "$OUT/gsquare-$nm-parity-s5.txt" 2>&1
    grep -E "parity|cpu:|gpu run" "$OUT/gsquare-$nm-parity-s5.txt"
  done
fi
for g in ${GROWTHS:-200 150 125}; do
  for nm in link munin; do
    echo "== $nm: growth $g"
    timeout 60 "$B" discrete --codes "/tmp/$nm.bin" --backend cuda --repeat 3 --threads 16 --growth "$g" 2>&1
  done
done > "$OUT/gsquare-growth-s5.txt"
grep -E "^==|gpu run" "$OUT/gsquare-growth-s5.txt"
mkdir -p /tmp/r && tar -xJf "$D/r.tar.xz" -C /tmp/r
RS=/tmp/r/R/bin/Rscript
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
timeout 150 "$RS" "$D/discrete-r-timing.R" --repeat 3 --cpu "${R_CPU:-link}" /tmp/link.bin /tmp/munin.bin > "$OUT/gpu-skeleton-r-s5.txt" 2>&1
cat "$OUT/gpu-skeleton-r-s5.txt"
