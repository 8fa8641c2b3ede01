# Sourced by jtree-baselines.sh and jtree-mpe.sh (bench/run jtree baselines | mpe, with R,
# PCBENCH, NETS, RAW, BENCH, DEV and THREADS set): a work folder $W, `el` (the seconds since the
# start), pyAgrum unpacked from its wheel in $DEV ($PY runs bench/baselines/pyagrum-bench.py), and
# start_grain: gRain beside ours (bench/baselines/grain.R) on cores $1 with $2 workers, in the
# background ($GR); it returns once ours are computed (the GPU is then free for timing).
set -uo pipefail
: "${R:?}" "${PCBENCH:?}" "${NETS:?}" "${RAW:?}" "${BENCH:?}" "${DEV:?}"
export LC_ALL=C  # C locale: the R bundle carries a stub of ICU's data library
W=$(mktemp -d)
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
python3 -m pip install --quiet --no-index --no-deps --target "$W/pyag" "$DEV"/pyagrum-*.whl > /dev/null 2>&1 || el "pyAgrum wheel: not installed"
"$R" -e 'cat("R", as.character(getRversion()), "gRain", as.character(packageVersion("gRain")), "\n")' 2>&1
PY="env PYTHONPATH=$W/pyag PYTHONUNBUFFERED=1 python3 $BENCH/baselines/pyagrum-bench.py"
el "set up"
start_grain() {
  (JOB_S=${JOB_S:-175} taskset -c "$1" timeout "${GRAIN_S:-235}" "$R" "$BENCH/baselines/grain.R" "$W/run" "$2" "${GRAIN_CAP:-45}" 10 \
     link:100:100 barley:1 diabetes:2 mildew:2 munin:100 andes:0 pigs:0 > "$RAW/grain.txt" 2>&1; el "gRain done rc $?"
   cp "$W/run-grain.csv" "$RAW/grain-jobs-$TAG.csv" 2>/dev/null; cp "$W/run-grain-summary.csv" "$RAW/grain-summary-$TAG.csv" 2>/dev/null) &
  GR=$!
  for i in $(seq 1 150); do [ -f "$W/run-gpu-done" ] && break; kill -0 $GR 2>/dev/null || break; sleep 1; done
  el "ours for gRain done"
}
NETS_BIG="andes pigs munin diabetes mildew barley"
