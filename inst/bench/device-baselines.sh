#!/usr/bin/env bash
# The issues' 10-minute baselines on the discrete networks (ParallelPC, bnlearn, pcalg), run as a
# queue that outlives one device call (a call lasts at most 10 minutes; the queue about 40):
#
#   bash inst/bench/device-baselines.sh start STATE      starts the queue in the background, returns
#   bash inst/bench/device-baselines.sh wait STATE SECS OUT
#        waits up to SECS seconds for the queue to end, then copies STATE's csv/log files to OUT
#        (call it again, at once, until it prints "queue finished"; the machine must stay warm)
#
# R as in device-suite.sh (/tmp/r/R/bin/Rscript, unpacked from the carried bundle first). The
# scripts are copied to STATE/src first, so later calls that refresh the checkout do not change a
# run under way. Groups, one after another, each run.R call with --cap ${CAP:-600}:
#   g1  ParallelPC on ALARM n = 10^4 and 2 * 10^5 (after level 0 it runs serially: fewer than 100
#       edges), beside pcalg stable on ALARM n = 2 * 10^5 (one core)
#   g2  ParallelPC on ANDES
#   g3  ParallelPC on LINK
#   g4  bnlearn on ANDES
#   g5  ParallelPC and bnlearn on MUNIN, side by side (both expected far past the cap; the rows' note
#       says they shared the 16 cores)
# Afterwards, here: Rscript inst/bench/merge.R --out inst/extdata/bench/suite-h100.csv ... OUT/g*.csv
set -uo pipefail
mode=${1:?usage: device-baselines.sh start|wait STATE [SECS OUT]}
state=${2:?usage: device-baselines.sh start|wait STATE [SECS OUT]}
root=$(cd "$(dirname "$0")/../.." && pwd)
RSCRIPT=${RSCRIPT:-/tmp/r/R/bin/Rscript}
cap=${CAP:-600}

queue() {
  export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
  local src="$state/src"
  rr() {  # rr NAME NOTE run.R-options...
    local name=$1 note=$2; shift 2
    echo "$(date -u +%T) start $name: $*" >> "$state/queue.log"
    "$RSCRIPT" "$src/run.R" --suite discrete --cap "$cap" --out "$state/$name.csv" --note "$note" "$@" \
      > "$state/$name.log" 2>&1
    echo "$(date -u +%T) end $name: status $?" >> "$state/queue.log"
  }
  rr g1a "device-baselines g1; beside pcalg stable on ALARM n=200000 (1 core)" \
    --tools parallelpc --only 'ALARM ' &
  rr g1b "device-baselines g1; beside ParallelPC on ALARM (16 workers at level 0, then 1 core)" \
    --tools pcalg-stable --only 'ALARM p=37 n=200000'
  wait
  rr g2 "device-baselines g2" --tools parallelpc --only 'ANDES '
  rr g3 "device-baselines g3" --tools parallelpc --only 'LINK '
  rr g4 "device-baselines g4" --tools bnlearn --only 'ANDES '
  rr g5a "device-baselines g5; beside bnlearn on MUNIN (16 workers): the 16 cores were shared" \
    --tools parallelpc --only 'MUNIN ' &
  rr g5b "device-baselines g5; beside ParallelPC on MUNIN (16 workers): the 16 cores were shared" \
    --tools bnlearn --only 'MUNIN '
  wait
  echo "$(date -u +%T) queue finished" >> "$state/queue.log"
}

case "$mode" in
  start)
    [ -x "$RSCRIPT" ] || { echo "device-baselines.sh: no $RSCRIPT (unpack the R bundle first)" >&2; exit 3; }
    mkdir -p "$state/src"
    cp "$root"/inst/bench/*.R "$state/src/"
    : > "$state/queue.log"
    export -f queue
    export state RSCRIPT cap
    setsid nohup bash -c queue > "$state/daemon.log" 2>&1 < /dev/null &
    echo "queue started (pid $!): $state"
    ;;
  wait)
    secs=${3:?SECS}; out=${4:?OUT}
    end=$((SECONDS + secs))
    while [ $SECONDS -lt "$end" ] && ! grep -q "queue finished" "$state/queue.log" 2>/dev/null; do sleep 5; done
    mkdir -p "$out"
    cp "$state"/*.csv "$state"/*.log "$out/" 2>/dev/null
    cat "$state/queue.log"
    grep -q "queue finished" "$state/queue.log" && echo "queue finished" || echo "queue still running"
    ;;
  *) echo "device-baselines.sh: mode must be start or wait" >&2; exit 2 ;;
esac
