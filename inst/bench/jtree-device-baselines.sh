#!/usr/bin/env bash
# The same-machine baselines of junction-tree inference: gRain beside ours, the path from
# data to answers, and pyAgrum's one query and 16-process batch. One call, about 330 s:
#   DEV=.rbundle PART=baselines bash .rbundle/jtree-bench.sh
#  1. our answers (GPU) for gRain's comparison, in R (jtree-grain.R), then gRain in 12 workers of
#     one thread (cores 4-15): compile, one query, time per evidence set, answers against ours;
#  2. meanwhile the whole path gpu_pc -> gpu_jtree -> gpu_query on ALARM and LINK samples
#     (cores 0-3, the GPU);
#  3. with the machine to itself: pyAgrum's one query and its batch on 16 processes (and one after
#     another on 16 threads).
TAG=baselines; . "${DEV:-.rbundle}/jtree-device-setup.sh"
start_grain 4-15 12
(taskset -c 0-3 timeout ${PATH_S:-150} $RS "$DEV/jtree-path.R" "$W/run-path.csv" 5000 10000 alarm link > "$W/run-path.txt" 2>&1; el "path done rc $?") &
PA=$!
wait $GR $PA
pack
timeout 30 $PY single "$W/run-pyagrum-single.csv" $(for n in andes pigs munin diabetes mildew barley; do echo "$NETS/$n.bif.gz"; done) > "$W/run-pyagrum.txt" 2>&1
timeout ${PYB_S:-90} $PY batch "$W/run-pyagrum-batch.csv" ${PYCAP:-2} 16 $(for n in andes pigs munin diabetes mildew barley link; do echo "$NETS/$n.bif.gz"; done) >> "$W/run-pyagrum.txt" 2>&1
el "pyAgrum done"; pack
