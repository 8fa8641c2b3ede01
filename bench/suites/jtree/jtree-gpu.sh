#!/usr/bin/env bash
# Junction-tree inference on the GPU machine, one call (about 390 s on the H100 machine, 16
# cores). bench/run jtree gpu runs it with R (a portable R with gpupc, pcalg, bnlearn, gRain),
# PCBENCH, NETS (the BIF files, diabetes, mildew and barley from the bundle), RAW (where the
# results go), BENCH and THREADS set (bench/lib/env.sh):
#  1. pcbench jtree, the machine to itself (CPU engine on every core): GPU against the CPU engine
#     bit for bit (marginals, P(evidence), MPE), a second GPU run, one query, the 10,000-row batch
#     and its launch profile, on asia/alarm/hepar2 (parity only) and andes, pigs, munin, diabetes,
#     mildew, barley, link; munin once more without the cell maps (GPUPC_JT_MAPS=0). Should the
#     cell maps break parity on the small networks, the rest runs without them (logged).
#     -> jtree.csv, jtree-profile.csv, jtree-nomaps.csv, jtree.txt
#  2. gRain (bench/baselines/grain.R): ours (R, GPU) computed first, then gRain in 15 forked R
#     workers of one thread, nothing else running: per evidence set on andes, pigs, munin (40
#     each), its one query without evidence on mildew, diabetes, barley; answers against ours.
#     -> grain-jobs.csv, grain-summary.csv
#  3. LINK: the path gpu_pc (backend cuda) -> gpu_jtree -> gpu_query (10,000 evidence sets) on a
#     LINK sample (and ALARM), each step logged as it ends; beside it gRain's one query on Link
#     (CPU only, 96 GB address space, its own core, reported however it ends).
#     -> path.csv, grain-link.txt
set -uo pipefail
: "${R:?}" "${PCBENCH:?}" "${NETS:?}" "${RAW:?}" "${BENCH:?}"
export LC_ALL=C
last=$(( ${THREADS:-16} - 1 ))
W=$(mktemp -d)
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
# 1
B="$PCBENCH jtree --csv $RAW/jtree.csv --profile-csv $RAW/jtree-profile.csv"
J="$RAW/jtree.txt"
for n in asia alarm hepar2; do timeout 30 $B "$NETS/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 200; done > "$J" 2>&1
timeout 40 $B "$NETS/andes.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50 --profile-rows 2000 >> "$J" 2>&1
if [ "$(grep -c 'max |marginal diff| 0.000e0, max rel P(e) diff 0.000e0, GPU run to run identical: true' "$J")" != 4 ]; then
  export GPUPC_JT_MAPS=0; el "parity failed with the cell maps: GPUPC_JT_MAPS=0 from here on"
fi
el "small networks done"
timeout 40 $B "$NETS/pigs.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50 --profile-rows 2000 >> "$J" 2>&1
for n in munin diabetes mildew; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 --profile-rows 2000 >> "$J" 2>&1; el "$n rc $?"; done
for n in barley link; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500 --profile-rows 1000 >> "$J" 2>&1; el "$n rc $?"; done
GPUPC_JT_MAPS=0 timeout 60 "$PCBENCH" jtree --csv "$RAW/jtree-nomaps.csv" "$NETS/munin.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 2 --repeat-rows 200 > "$RAW/jtree-nomaps.txt" 2>&1
el "pcbench done"
"$R" -e 'cat("R", as.character(getRversion()), "gRain", as.character(packageVersion("gRain")), "bnlearn", as.character(packageVersion("bnlearn")), "\n")' 2>&1
# 2
JOB_S=${JOB_S:-150} timeout "${GRAIN_S:-160}" "$R" "$BENCH/baselines/grain.R" "$W/run" 15 "${GRAIN_CAP:-60}" 10 \
  munin:40:5 andes:40:10 pigs:40:10 barley:0 diabetes:0 mildew:0 > "$RAW/grain.txt" 2>&1
el "gRain done rc $?"
cp "$W/run-grain.csv" "$RAW/grain-jobs.csv" 2>/dev/null; cp "$W/run-grain-summary.csv" "$RAW/grain-summary.csv" 2>/dev/null
# 3
(ulimit -v 100000000; taskset -c "$last" timeout "${LINKG_S:-260}" "$R" "$BENCH/baselines/grain.R" "$W/link" 1 60 10 link:0 > "$RAW/grain-link.txt" 2>&1
 echo "rc $?" >> "$RAW/grain-link.txt"; el "gRain link done"; cp "$W/link-grain-summary.csv" "$RAW/grain-link-summary.csv" 2>/dev/null) &
GL=$!
taskset -c "0-$((last - 1))" timeout "${PATH_S:-270}" "$R" "$BENCH/suites/jtree/jtree-path.R" "$RAW/path.csv" 5000 10000 alarm link > "$RAW/path.txt" 2>&1
el "path done rc $?"
wait $GL
el "all done"
