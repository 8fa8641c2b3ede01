#!/usr/bin/env bash
# The triangulation: one pcbench build with gpu_jtree()'s default, "auto" (the cheapest of
# several elimination orders by the table cells a propagation moves), against "minfill" (the
# default before), network by network, alternating (TRI_ORDER; munin, barley and link twice
# each way): the 10,000-set batch on the GPU, each run against the CPU engine bit for bit and
# its own second GPU run, with the launch profile of its first rows. Then Munin through R
# (multigpu-r.R jtree on one GPU, SETS evidence sets) with each triangulation in its own process,
# and the answers of jtree-r-answers.R (the default triangulation), GPU against the CPU engine.
# bench/run jtree tri runs it with R, PCBENCH, NETS and RAW set; with TRI_CPU=1 (bench/run jtree
# tri-cpu) the CPU engine alone times a few evidence sets per network and nothing runs through R.
#     -> jtree-tri.txt (jtree-tri-cpu.txt with TRI_CPU=1; every run's output)
set -uo pipefail
: "${R:?}" "${PCBENCH:?}" "${NETS:?}" "${RAW:?}"
S=$(cd "$(dirname "$0")" && pwd)
out=$RAW/jtree-tri$( [ "${TRI_CPU:-0}" = 1 ] && echo -cpu).txt
for n in ${TRI_NETWORKS:-andes pigs mildew diabetes munin barley link}; do
  order="minfill auto"
  case $n in munin|barley|link) order=${TRI_ORDER:-minfill auto auto minfill} ;; esac
  rows="--rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 --profile-rows 2000"
  case $n in andes|pigs) rows="--rows 10000 --cpu-rows 100 --mpe-rows 50 --profile-rows 2000" ;; barley|link) rows="--rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500 --profile-rows 1000" ;; esac
  if [ "${TRI_CPU:-0}" = 1 ]; then
    rows="--cpu-only --threads ${THREADS:-0} --rows 4 --cpu-rows 4"
    case $n in andes|pigs) rows="--cpu-only --threads ${THREADS:-0} --rows 400 --cpu-rows 400" ;; munin|diabetes|mildew) rows="--cpu-only --threads ${THREADS:-0} --rows 8 --cpu-rows 8" ;; esac
  fi
  for t in $order; do
    echo "== $n, triangulation $t" | tee -a "$out"
    timeout 300 "$PCBENCH" jtree "$NETS/$n.bif.gz" --triangulation "$t" $rows >> "$out" 2>&1
    echo "rc $?" | tee -a "$out"
    grep -E "cliques in|batch of|GPU vs CPU" "$out" | tail -3
  done
done
# TRI_CPU=1 (bench/run jtree tri-cpu, any machine): the CPU engines alone, on THREADS threads
[ "${TRI_CPU:-0}" = 1 ] && exit 0
for t in minfill auto; do
  echo "== munin through R, triangulation $t" | tee -a "$out"
  timeout 200 "$R" "$S/../multigpu/multigpu-r.R" jtree --net munin --evidence-sets "${SETS:-10000}" --reps 3 --sets 1 \
    --triangulation "$t" 2>&1 | tee -a "$out"
done
# the default triangulation through R: the GPU against the CPU engine (jtree-r-answers.R)
T=$(mktemp -d)
for b in cuda cpu; do "$R" "$S/jtree-r-answers.R" save "$T/$b.rds" "$b" 2>&1 | tail -n 2 | tee -a "$out"; done
echo "answers through R (triangulation auto), GPU against the CPU engine:" | tee -a "$out"
"$R" "$S/jtree-r-answers.R" compare "$T/cuda.rds" "$T/cpu.rds" 2>&1 | tail -n 3 | tee -a "$out"
rm -rf "$T"
