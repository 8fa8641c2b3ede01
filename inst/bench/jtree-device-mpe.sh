#!/usr/bin/env bash
# One call on the GPU machine (16 cores), everything in the same run (jtree-bench.sh
# PART=mpe starts it; $DEV holds pcbench, the BIF files, these scripts, pyAgrum's wheel and a
# portable R with gpupc, gRain, bnlearn, pcalg). Results in /tmp/jtree-run, packed into $OUT/mpe.tar.gz
# after every phase (what $OUT can take back is 8 files):
#  1. our answers (GPU) for gRain's comparison, in R before anything is timed (jtree-grain.R);
#  2. pcbench jtree on cores 0-7 (our CPU engine on 8 threads; the GPU): GPU against the CPU engine
#     (marginals, P(e), MPE, run to run), one query, the 10,000-row batch, the MPE of some rows to
#     mpe.tsv; meanwhile gRain on cores 8-15 (workers of one thread): its compile and one query,
#     its time per evidence set, its answers against ours;
#  3. after pcbench: the whole path gpu_pc -> gpu_jtree -> gpu_query on ALARM and LINK samples
#     (cores 0-3), pyAgrum's MPE against ours, then pyAgrum's one query on Link (cores 4-7, 4
#     threads);
#  4. with the machine to itself: pyAgrum's one query on the other networks and its batch on 16
#     processes (and one after another on 16 threads).
TAG=mpe; . "${DEV:-.rbundle}/jtree-device-setup.sh"
# 1 + gRain
start_grain 8-15 8
# 2
B="taskset -c 0-7 $DEV/pcbench jtree --threads 8 --csv $W/run-jtree.csv --mpe-out $W/run-mpe.tsv"
{
  for n in asia alarm hepar2; do $B "$NETS/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 200; done
  for n in andes pigs; do timeout 40 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50; done
  for n in mildew diabetes munin; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000; done
  for n in barley link; do timeout ${BIG_S:-60} $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500; done
} > "$W/run-jtree.txt" 2>&1
cp "$W/run-jtree.txt" "$OUT/"
el "pcbench done"; pack
# 3
(cd "$DEV/.." && taskset -c 0-3 timeout ${PATH_S:-100} $RS "$DEV/jtree-path.R" "$W/run-path.csv" 5000 10000 alarm link > "$W/run-path.txt" 2>&1; el "path done") &
PA=$!
(taskset -c 4-7 env PYAGRUM_THREADS=4 timeout 45 $PY mpe "$W/run-pyagrum-mpe.csv" 6 "$W/run-mpe.tsv" "$NETS" > "$W/run-pyagrum-mpe.txt" 2>&1
 el "pyAgrum MPE done"
 taskset -c 4-7 timeout 80 env PYAGRUM_THREADS=4 $PY single "$W/run-pyagrum-link.csv" "$NETS/link.bif.gz" > "$W/run-pyagrum-link.txt" 2>&1
 el "pyAgrum link single done") &
PM=$!
wait $PA $PM $GR
pack
# 4
timeout 30 $PY single "$W/run-pyagrum-single.csv" $(for n in andes pigs munin diabetes mildew barley; do echo "$NETS/$n.bif.gz"; done) > "$W/run-pyagrum.txt" 2>&1
timeout ${PYB_S:-90} $PY batch "$W/run-pyagrum-batch.csv" ${PYCAP:-2} 16 $(for n in andes pigs munin diabetes mildew barley link; do echo "$NETS/$n.bif.gz"; done) >> "$W/run-pyagrum.txt" 2>&1
el "pyAgrum done"; pack
