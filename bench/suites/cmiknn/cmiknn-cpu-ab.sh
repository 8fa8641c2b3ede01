#!/usr/bin/env bash
# PC with cmiknnCItest on the CPU backend (pcbench cmiknn pc --backend cpu), REPS runs of
# $PCBENCH, alternately with $BASE_PCBENCH when it is set (another build of pcbench, for a
# comparison in one run). Each run's "pc," line (its seconds in the seventh field) and levels,
# behind the build's name. CPU_P, CPU_N, CPU_B, CPU_KNN choose the case.
set -u
reps=${REPS:-3}
args=(cmiknn pc --backend cpu --p "${CPU_P:-10}" --n "${CPU_N:-1000}" --sig-samples "${CPU_B:-20}" --knn "${CPU_KNN:-0.1}"
  --threads "${THREADS:-0}")
echo "# cmiknn cpu pc: ${args[*]}; runs of the new build${BASE_PCBENCH:+ alternately with the base build}"
for r in $(seq "$reps"); do
  for which in ${BASE_PCBENCH:+base} new; do
    bin=$PCBENCH; [ "$which" = base ] && bin=$BASE_PCBENCH
    "$bin" "${args[@]}" 2>&1 | grep -E '^(pc,|level [0-9]+:)' | sed "s/^/$which run $r: /"
  done
done
