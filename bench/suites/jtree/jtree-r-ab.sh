# Two builds of gpupc through R in one run: LIB_BEFORE (the build before a change) and LIB_NOW.
# First their junction-tree answers (jtree-r-answers.R on the bundled networks): the two builds'
# identical() on the GPU, and the build now's GPU against its CPU engine. Then gpu_query() on
# NETWORK (default munin) with SETS evidence sets (default 10000; 5% of the nodes observed) on
# one GPU, each build in fresh R processes, alternating (before, now, now, before; ROUNDS pairs),
# every line prefixed with its build; then one evidence set per gpu_query() (jtree-r-single.R,
# K queries, default 20), each build; last, one process of the build now with GPUPC_TRACE=1.
#   LIB_BEFORE=DIR LIB_NOW=DIR [SETS=10000] [ROUNDS=1] [REPS=3] bash bench/suites/jtree/jtree-r-ab.sh
set -uo pipefail
S=$(cd "$(dirname "$0")" && pwd)
: "${LIB_BEFORE:?the build before (an R library with gpupc)}" "${LIB_NOW:?the build now}"
NET=${NETWORK:-munin}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
answers() { R_LIBS=$2 "$R" "$S/jtree-r-answers.R" save "$T/$1-$3.rds" "$3" 2>&1 | sed "s/^/$1: /"; }
answers before "$LIB_BEFORE" cuda
answers now "$LIB_NOW" cuda
answers now "$LIB_NOW" cpu
echo "answers, the build before against the build now, GPU:"
"$R" "$S/jtree-r-answers.R" compare "$T/before-cuda.rds" "$T/now-cuda.rds" | tail -n 1
echo "answers, the build now, GPU against its CPU engine:"
"$R" "$S/jtree-r-answers.R" compare "$T/now-cuda.rds" "$T/now-cpu.rds" | tail -n 1
timed() {
  R_LIBS=$2 "$R" "$S/../multigpu/multigpu-r.R" jtree --net "$NET" --evidence-sets "${SETS:-10000}" --reps "${REPS:-3}" --sets 1 2>&1 |
    sed "s/^/$1: /"
}
for r in $(seq "${ROUNDS:-1}"); do
  timed before "$LIB_BEFORE"; timed now "$LIB_NOW"; timed now "$LIB_NOW"; timed before "$LIB_BEFORE"
done
for l in before now now before; do
  lib=$LIB_NOW; [ "$l" = before ] && lib=$LIB_BEFORE
  R_LIBS=$lib "$R" "$S/jtree-r-single.R" "$NET" "${K:-20}" 2>&1 | sed "s/^/$l: /"
done
echo "the build now, traced:"
GPUPC_TRACE=1 REPS=1 timed now "$LIB_NOW" | grep -E "junction tree|jtree" | head -n 40
