# Sourced by jtree-device-mpe.sh and jtree-device-baselines.sh on the GPU machine with TAG set (mpe, baselines): networks in
# $NETS, results in $W packed to $OUT/$TAG.tar.gz by `pack` (what $OUT can take back is 8 files),
# `el` logs the seconds since the start to $OUT/$TAG-log.txt, the portable R ($RS) and pyAgrum ($PY).
set -uo pipefail
DEV=${DEV:-.rbundle}; OUT=${OUT:-/tmp/jtree-out}; W=/tmp/jtree-run; NETS=/tmp/jnets
mkdir -p "$OUT" "$W" "$NETS"
cp "$DEV"/*.bif.gz "$NETS"/
export GPUPC_NETWORKS=$NETS LC_ALL=C  # C locale: the R bundle carries a stub of ICU's data library
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/$TAG-log.txt"; }
pack() { tar czf "$OUT/$TAG.tar.gz.tmp" -C /tmp jtree-run && mv "$OUT/$TAG.tar.gz.tmp" "$OUT/$TAG.tar.gz"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/$TAG-log.txt"
nproc | tee -a "$OUT/$TAG-log.txt"
mkdir -p /tmp/r && tar -xJf "$DEV/r.tar.xz" -C /tmp/r || el "R bundle failed"
python3 -m pip install --quiet --no-deps --target /tmp/pyag "$DEV"/pyagrum-*.whl >/dev/null 2>&1
RS=/tmp/r/R/bin/Rscript
$RS -e 'cat("R", as.character(getRversion()), "gRain", as.character(packageVersion("gRain")), "\n")' 2>&1 | tee -a "$OUT/$TAG-log.txt"
PY="env PYTHONPATH=/tmp/pyag PYTHONUNBUFFERED=1 python3 $DEV/jtree-pyagrum.py"
el "set up"
# gRain beside ours (jtree-grain.R) on cores $1 with $2 workers, in the background ($GR); returns
# once ours are computed (the GPU is then free for timing).
start_grain() {
  (JOB_S=${JOB_S:-175} taskset -c "$1" timeout ${GRAIN_S:-235} $RS "$DEV/jtree-grain.R" "$W/run" "$2" ${GRAIN_CAP:-45} 10 \
     link:100:100 barley:1 diabetes:2 mildew:2 munin:100 andes:0 pigs:0 > "$W/run-grain.txt" 2>&1; el "gRain done rc $?") &
  GR=$!
  for i in $(seq 1 150); do [ -f "$W/run-gpu-done" ] && break; kill -0 $GR 2>/dev/null || break; sleep 1; done
  el "ours for gRain done"
}
