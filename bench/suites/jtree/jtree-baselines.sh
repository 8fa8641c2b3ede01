#!/usr/bin/env bash
# The same-machine baselines of junction-tree inference: gRain beside ours, the path from
# data to answers, and pyAgrum's one query and 16-process batch. One call, about 330 s
# (bench/run jtree baselines; setup.sh says what it needs):
#  1. our answers (GPU) for gRain's comparison, in R (bench/baselines/grain.R), then gRain in 12
#     workers of one thread (cores 4-15): compile, one query, time per evidence set, answers
#     against ours -> grain-summary-baselines.csv, grain-jobs-baselines.csv;
#  2. meanwhile the whole path gpu_pc -> gpu_jtree -> gpu_query on ALARM and LINK samples
#     (cores 0-3, the GPU) -> path.csv;
#  3. with the machine to itself: pyAgrum's one query and its batch on 16 processes (and one after
#     another on 16 threads) -> pyagrum-single.csv, pyagrum-batch.csv.
TAG=baselines; . "$(dirname "$0")/setup.sh"
last=$(( ${THREADS:-16} - 1 ))
start_grain "4-$last" $((last - 3))
(taskset -c 0-3 timeout "${PATH_S:-150}" "$R" "$BENCH/suites/jtree/jtree-path.R" "$RAW/path.csv" 5000 10000 alarm link > "$RAW/path.txt" 2>&1; el "path done rc $?") &
PA=$!
wait $GR $PA
timeout 30 $PY single "$RAW/pyagrum-single.csv" $(for n in $NETS_BIG; do echo "$NETS/$n.bif.gz"; done) > "$RAW/pyagrum.txt" 2>&1
timeout "${PYB_S:-90}" $PY batch "$RAW/pyagrum-batch.csv" "${PYCAP:-2}" "${THREADS:-16}" $(for n in $NETS_BIG link; do echo "$NETS/$n.bif.gz"; done) >> "$RAW/pyagrum.txt" 2>&1
el "pyAgrum done"
