#!/usr/bin/env bash
# Junction-tree inference on the GPU machine, everything in one run on the
# GPU machine (16 cores). $DEV holds pcbench (built with `cargo build --release --offline -p
# pcbench`), the BIF files, this script, jtree-grain.R, jtree-path.R, helper-jtree.R and a
# portable R (r.tar.xz: gpupc, pcalg, bnlearn, gRain and what they need). Results in $R7 (*.txt,
# *.csv), packed into $OUT/jtree.tar.gz after every phase, the log in $OUT/log.txt:
#  1. pcbench jtree, the machine to itself (CPU engine on 16 threads): GPU against the CPU engine
#     bit for bit (marginals, P(evidence), MPE), a second GPU run, one query, the 10,000-row batch
#     and its launch profile, on asia/alarm/hepar2 (parity only) and andes, pigs, munin, diabetes,
#     mildew, barley, link; munin once more without the cell maps (GPUPC_JT_MAPS=0). Should the
#     cell maps break parity on the small networks, the rest runs without them (logged).
#  2. gRain (jtree-grain.R): ours (R, GPU) computed first, then gRain in 15 forked R workers of one
#     thread, nothing else running: per evidence set on andes, pigs, munin (40 each), its one query
#     without evidence on mildew, diabetes, barley; answers against ours.
#  3. LINK: the path gpu_pc (backend cuda) -> gpu_jtree -> gpu_query (10,000 evidence sets) on a
#     LINK sample (and ALARM), each step logged as it ends; beside it gRain's one query on Link
#     (CPU only, 96 GB address space, its own core, reported however it ends).
#   DEV=.rbundle bash .rbundle/jtree-device.sh
set -uo pipefail
DEV=${DEV:-.rbundle}; OUT=${OUT:-/tmp/jtree-out}; W=/tmp/jtree-run; NETS=/tmp/jnets; R7=/tmp/jtree-out-files
mkdir -p "$OUT" "$W" "$NETS" "$R7"
cp "$DEV"/*.bif.gz "$NETS"/
export GPUPC_NETWORKS=$NETS LC_ALL=C
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*" | tee -a "$OUT/log.txt"; }
pack() { cp "$OUT/log.txt" "$R7/"; tar czf "$OUT/jtree.tar.gz.tmp" -C /tmp jtree-out-files && mv "$OUT/jtree.tar.gz.tmp" "$OUT/jtree.tar.gz"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/log.txt"
nproc | tee -a "$OUT/log.txt"
(mkdir -p /tmp/r7 && tar -xJf "$DEV/r.tar.xz" -C /tmp/r7 && echo ok > "$W/r-ok") &
RU=$!
# 1
B="$DEV/pcbench jtree --csv $R7/jtree.csv --profile-csv $R7/profile.csv"
J="$R7/jtree.txt"
for n in asia alarm hepar2; do timeout 30 $B "$NETS/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 200; done > "$J" 2>&1
timeout 40 $B "$NETS/andes.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50 --profile-rows 2000 >> "$J" 2>&1
if [ "$(grep -c 'max |marginal diff| 0.000e0, max rel P(e) diff 0.000e0, GPU run to run identical: true' "$J")" != 4 ]; then
  export GPUPC_JT_MAPS=0; el "parity failed with the cell maps: GPUPC_JT_MAPS=0 from here on"
fi
el "small networks done"
timeout 40 $B "$NETS/pigs.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50 --profile-rows 2000 >> "$J" 2>&1
for n in munin diabetes mildew; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 --profile-rows 2000 >> "$J" 2>&1; el "$n rc $?"; done
for n in barley link; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500 --profile-rows 1000 >> "$J" 2>&1; el "$n rc $?"; done
GPUPC_JT_MAPS=0 timeout 60 "$DEV/pcbench" jtree --csv "$R7/nomaps.csv" "$NETS/munin.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 2 --repeat-rows 200 > "$R7/nomaps.txt" 2>&1
el "pcbench done"; pack
wait $RU; [ -f "$W/r-ok" ] || el "R bundle failed"
RS=/tmp/r7/R/bin/Rscript
$RS -e 'cat("R", as.character(getRversion()), "gRain", as.character(packageVersion("gRain")), "bnlearn", as.character(packageVersion("bnlearn")), "\n")' 2>&1 | tee -a "$OUT/log.txt"
# 2
JOB_S=${JOB_S:-150} timeout ${GRAIN_S:-160} $RS "$DEV/jtree-grain.R" "$W/run" 15 ${GRAIN_CAP:-60} 10 \
  munin:40:5 andes:40:10 pigs:40:10 barley:0 diabetes:0 mildew:0 > "$R7/grain.txt" 2>&1
el "gRain done rc $?"
cp "$W"/run-grain*.csv "$R7/" 2>/dev/null; pack
# 3
(ulimit -v 100000000; taskset -c 15 timeout ${LINKG_S:-260} $RS "$DEV/jtree-grain.R" "$W/link" 1 60 10 link:0 > "$R7/grain-link.txt" 2>&1
 el "gRain link rc $?"; cp "$W"/link-grain*.csv "$R7/" 2>/dev/null) &
GL=$!
taskset -c 0-14 timeout ${PATH_S:-270} $RS "$DEV/jtree-path.R" "$R7/path.csv" 5000 10000 alarm link > "$R7/path.txt" 2>&1
el "path done rc $?"; pack
wait $GL
el "all done"; pack
