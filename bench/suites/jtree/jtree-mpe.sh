#!/usr/bin/env bash
# pyAgrum's MPE against ours, with gRain and the path beside, one call on the GPU machine
# (bench/run jtree mpe; setup.sh says what it needs):
#  1. our answers (GPU) for gRain's comparison, in R before anything is timed (grain.R);
#  2. pcbench jtree on cores 0-7 (our CPU engine on 8 threads; the GPU): GPU against the CPU engine
#     (marginals, P(e), MPE, run to run), one query, the 10,000-row batch, the MPE of some rows to
#     mpe.tsv; meanwhile gRain on cores 8-15 (workers of one thread): its compile and one query,
#     its time per evidence set, its answers against ours;
#  3. after pcbench: the whole path gpu_pc -> gpu_jtree -> gpu_query on ALARM and LINK samples
#     (cores 0-3), pyAgrum's MPE against ours (-> pyagrum-mpe.csv), then pyAgrum's one query on
#     Link (cores 4-7, 4 threads);
#  4. with the machine to itself: pyAgrum's one query on the other networks and its batch on 16
#     processes (and one after another on 16 threads).
TAG=mpe; . "$(dirname "$0")/setup.sh"
last=$(( ${THREADS:-16} - 1 ))
# 1 + gRain
start_grain "8-$last" $((last - 7))
# 2
B="taskset -c 0-7 $PCBENCH jtree --threads 8 --csv $W/jtree.csv --mpe-out $W/mpe.tsv"
{
  for n in asia alarm hepar2; do $B "$NETS/$n.bif.gz" --rows 2000 --cpu-rows 2000 --mpe-rows 200; done
  for n in andes pigs; do timeout 40 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 200 --mpe-rows 50; done
  for n in mildew diabetes munin; do timeout 60 $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000; done
  for n in barley link; do timeout "${BIG_S:-60}" $B "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500; done
} > "$RAW/jtree-mpe-run.txt" 2>&1
el "pcbench done"
# 3
(taskset -c 0-3 timeout "${PATH_S:-100}" "$R" "$BENCH/suites/jtree/jtree-path.R" "$RAW/path.csv" 5000 10000 alarm link > "$RAW/path.txt" 2>&1; el "path done") &
PA=$!
(taskset -c 4-7 env PYAGRUM_THREADS=4 timeout 45 $PY mpe "$RAW/pyagrum-mpe.csv" 6 "$W/mpe.tsv" "$NETS" > "$RAW/pyagrum-mpe.txt" 2>&1
 el "pyAgrum MPE done"
 taskset -c 4-7 timeout 80 env PYAGRUM_THREADS=4 $PY single "$RAW/pyagrum-link.csv" "$NETS/link.bif.gz" > "$RAW/pyagrum-link.txt" 2>&1
 el "pyAgrum link single done") &
PM=$!
wait $PA $PM $GR
# 4
timeout 30 $PY single "$RAW/pyagrum-single.csv" $(for n in $NETS_BIG; do echo "$NETS/$n.bif.gz"; done) > "$RAW/pyagrum.txt" 2>&1
timeout "${PYB_S:-90}" $PY batch "$RAW/pyagrum-batch.csv" "${PYCAP:-2}" "${THREADS:-16}" $(for n in $NETS_BIG link; do echo "$NETS/$n.bif.gz"; done) >> "$RAW/pyagrum.txt" 2>&1
el "pyAgrum done"
