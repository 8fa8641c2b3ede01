#!/usr/bin/env bash
# The part of jtree-s6.sh that did not run in session 6's call (the R bundle did not start there:
# it carried a hostlib/ folder made on the development machine): gRain beside ours, the path from
# data to answers, and pyAgrum's one query and 16-process batch. One call, about 330 s:
#   DEV=.dev-jtree PART=s6r bash .dev-jtree/jtree-bench.sh
#  1. our answers (GPU) for gRain's comparison, in R (jtree-grain.R), then gRain in 12 workers of
#     one thread (cores 4-15): compile, one query, time per evidence set, answers against ours;
#  2. meanwhile the whole path gpu_pc -> gpu_jtree -> gpu_query on ALARM and LINK samples
#     (cores 0-3, the GPU);
#  3. with the machine to itself: pyAgrum's one query and its batch on 16 processes (and one after
#     another on 16 threads).
set -uo pipefail
DEV=${DEV:-.dev-jtree}; OUT=${OUT:-/tmp/jtree-out}; W=/tmp/s6; NETS=/tmp/jnets
mkdir -p "$OUT" "$W" "$NETS"
cp "$DEV"/*.bif.gz "$NETS"/
export GPUPC_NETWORKS=$NETS LC_ALL=C  # C locale: the R bundle carries a stub of ICU's data library
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/s6r-log.txt"; }
pack() { tar czf "$OUT/s6r.tar.gz.tmp" -C /tmp s6 && mv "$OUT/s6r.tar.gz.tmp" "$OUT/s6r.tar.gz"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/s6r-log.txt"
mkdir -p /tmp/r && tar -xJf "$DEV/r.tar.xz" -C /tmp/r || el "R bundle failed"
python3 -m pip install --quiet --no-deps --target /tmp/pyag "$DEV"/pyagrum-*.whl >/dev/null 2>&1
RS=/tmp/r/R/bin/Rscript
$RS -e 'cat("R", as.character(getRversion()), "gRain", as.character(packageVersion("gRain")), "\n")' 2>&1 | tee -a "$OUT/s6r-log.txt"
PY="env PYTHONPATH=/tmp/pyag PYTHONUNBUFFERED=1 python3 $DEV/jtree-pyagrum.py"
el "set up"
(JOB_S=${JOB_S:-175} taskset -c 4-15 timeout ${GRAIN_S:-230} $RS "$DEV/jtree-grain.R" "$W/s6" 12 ${GRAIN_CAP:-45} 10 \
   link:100:100 barley:1 diabetes:2 mildew:2 munin:100 andes:0 pigs:0 > "$W/s6-grain.txt" 2>&1; el "gRain done rc $?") &
GR=$!
for i in $(seq 1 150); do [ -f "$W/s6-gpu-done" ] && break; kill -0 $GR 2>/dev/null || break; sleep 1; done
el "ours for gRain done"
(taskset -c 0-3 timeout ${PATH_S:-150} $RS "$DEV/jtree-path.R" "$W/s6-path.csv" 5000 10000 alarm link > "$W/s6-path.txt" 2>&1; el "path done rc $?") &
PA=$!
wait $GR $PA
pack
timeout 30 $PY single "$W/s6-pyagrum-single.csv" $(for n in andes pigs munin diabetes mildew barley; do echo "$NETS/$n.bif.gz"; done) > "$W/s6-pyagrum.txt" 2>&1
timeout ${PYB_S:-90} $PY batch "$W/s6-pyagrum-batch.csv" ${PYCAP:-2} 16 $(for n in andes pigs munin diabetes mildew barley link; do echo "$NETS/$n.bif.gz"; done) >> "$W/s6-pyagrum.txt" 2>&1
el "pyAgrum done"; pack
