#!/usr/bin/env bash
# The 10-minute baselines on the discrete networks (ParallelPC, bnlearn, pcalg), run as a queue
# that outlives one device call (a call lasts at most 10 minutes; the queue about 20). bench/run's
# discrete parts queue-start and queue-wait call it:
#
#   bash bench/baselines/queue.sh start STATE      starts the queue in the background, returns
#   bash bench/baselines/queue.sh wait STATE SECS OUT
#        waits up to SECS seconds for the queue to end, then copies STATE's files to OUT as
#        compare-queue-NAME.csv / .log (call it again, at once, until it prints "queue
#        finished"; the machine must stay warm)
#
# R: $RSCRIPT (bench/run passes the bundle's). The
# scripts are copied to STATE/src first, so later calls that refresh the checkout do not change a
# run under way. A machine is held at most 30 minutes, so the queue is two phases of at most about
# 10 minutes each, each compare.R call with --cap ${CAP:-600}:
#   phase 1, three lanes side by side:
#     g1  ParallelPC on ANDES, then bnlearn on ANDES (16 workers each)
#     g2  ParallelPC on ALARM n = 10^4 and 2 * 10^5 (after level 0 it runs serially: fewer than
#         100 edges, its threshold for forking)
#     g3  pcalg stable (disCItest, one core) on ALARM n = 2 * 10^5
#     (g2 and g3 take about two of the 16 cores from g1 once ALARM's level 0 is over)
#   phase 2: ParallelPC on LINK and on MUNIN and bnlearn on MUNIN, side by side, all expected far
#     past the cap (pcalg's disCItest costs ~9 ms per test at n = 10^4; LINK needs 2.1 M tests)
# Every row's note says what ran beside it. bench/run collects the CSVs into the discrete suite's
# `compare` table with its other rows.
set -uo pipefail
mode=${1:?usage: queue.sh start|wait STATE [SECS OUT]}
state=${2:?usage: queue.sh start|wait STATE [SECS OUT]}
bench=$(cd "$(dirname "$0")/.." && pwd)
RSCRIPT=${RSCRIPT:-/tmp/r-device/R/bin/Rscript}
cap=${CAP:-600}

queue() {
  export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
  local src="$state/src"
  rr() {  # rr NAME NOTE compare.R-options...
    local name=$1 note=$2; shift 2
    echo "$(date -u +%T) start $name: $*" >> "$state/queue.log"
    "$RSCRIPT" "$src/baselines/compare.R" --suite discrete --cap "$cap" --out "$state/$name.csv" --note "$note" "$@" \
      > "$state/$name.log" 2>&1
    echo "$(date -u +%T) end $name: status $?" >> "$state/queue.log"
  }
  local alarm="ParallelPC on ALARM (16 workers at level 0, then 1 core) and pcalg stable on ALARM n=200000 (1 core)"
  { rr g1a "baseline queue phase 1; beside $alarm" --tools parallelpc --only 'ANDES '
    rr g1b "baseline queue phase 1; beside $alarm" --tools bnlearn --only 'ANDES '; } &
  rr g2 "baseline queue phase 1; beside ParallelPC then bnlearn on ANDES (16 workers) and pcalg stable on ALARM n=200000" \
    --tools parallelpc --only 'ALARM ' &
  rr g3 "baseline queue phase 1; beside ParallelPC then bnlearn on ANDES (16 workers) and ParallelPC on ALARM" \
    --tools pcalg-stable --only 'ALARM p=37 n=200000'
  wait
  local trio="ParallelPC on LINK, ParallelPC on MUNIN and bnlearn on MUNIN ran side by side (16 workers each on 16 cores)"
  rr g4a "baseline queue phase 2; $trio" --tools parallelpc --only 'LINK ' &
  rr g4b "baseline queue phase 2; $trio" --tools parallelpc --only 'MUNIN ' &
  rr g4c "baseline queue phase 2; $trio" --tools bnlearn --only 'MUNIN '
  wait
  echo "$(date -u +%T) queue finished" >> "$state/queue.log"
}

case "$mode" in
  start)
    [ -x "$RSCRIPT" ] || { echo "queue.sh: no $RSCRIPT (unpack the R bundle first)" >&2; exit 3; }
    mkdir -p "$state/src/baselines" "$state/src/lib"
    cp "$bench"/baselines/*.R "$state/src/baselines/"
    cp "$bench"/lib/*.R "$state/src/lib/"
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
    for f in "$state"/g*.csv "$state"/g*.log; do [ -f "$f" ] && cp "$f" "$out/compare-queue-$(basename "$f")"; done
    cat "$state/queue.log"
    grep -q "queue finished" "$state/queue.log" && echo "queue finished" || echo "queue still running"
    ;;
  *) echo "queue.sh: mode must be start or wait" >&2; exit 2 ;;
esac
