#!/usr/bin/env bash
# The benchmark vignette's numbers on the GPU machine (one H100, 16 cores, no network, no R installed):
# run.R's whole workload cut into parts that each fit in one 10-minute device call.
#
#   bash inst/bench/device-suite.sh PART OUTDIR       PART = 1..8, or quick (a dry run, ~3 min)
#
# R: $RSCRIPT if set, else /tmp/r/R/bin/Rscript, unpacked from .rbundle/r.tar.xz when missing (build
# the bundle here with the portable-R tool: portable-r .rbundle/r.tar.xz gpupc pcalg bnlearn ParallelPC
# and bash inst/bench/make-socket-addon.sh (bnlearn's cluster needs sockets), and carry .rbundle). Each part writes OUTDIR/stagePART.csv (rewritten after every row, so a part
# cut short keeps its rows) and OUTDIR/stagePART.log. Afterwards, here:
#
#   Rscript inst/bench/merge.R --out inst/extdata/bench/suite-h100.csv OUTDIR/stage*.csv
#
# which is the file the vignette reads (it shows whatever rows exist). A part that ran out of time
# can be run again with RESUME_FROM=its-earlier-stageN.csv (a path in the checkout the device gets,
# e.g. an untracked bench-out/stage1.csv): its rows are kept and only the missing ones run.
#
# Parts, in order of importance, with the wall time expected on the H100 machine (16 cores). The
# estimates come from the timings in BENCHMARKS.md and from the caps, which bound every baseline
# run; they are not measured yet (CAP=seconds overrides a part's cap):
#   1  gauss shapes (p/n 1190/47, 1643/850, 5361/63, 10000/1000): gpupc GPU, CPU and CPU in
#      stable.fast order, orientation up to p = 6000; then pcalg stable.fast and stable, 8
#      processes at once, cap 240 s.                                                     ~7-9 min
#   2  discrete networks (ALARM 10k/200k, ANDES, LINK, MUNIN 20k) and the ALARM sweep in n
#      (10^4..10^6): gpupc GPU and CPU; then pcalg stable (disCItest), 10 at once, cap 300 s. ~7-9 min
#   3  bnlearn pc.stable (16 workers) on the shapes and the networks, cap 50 s each.    ~4-8 min
#   4  Gaussian sweeps (p 100..20000 at n 1000; n 50..20000 at p 1000): gpupc GPU and CPU,
#      orientation up to p = 2000.                                                       ~5-8 min
#   5  the Gaussian sweeps' pcalg stable.fast and stable, 15 at once, cap 300 s. (K=k: k at once)        ~6-8 min
#   6  ParallelPC (16 cores) on the shapes and the networks, cap 45 s each.             ~4-7 min
#   7  bnlearn on the three sweeps, cap 60 s (a size past a capped one is skipped).     ~3-7 min
#   8  ParallelPC on the three sweeps, cap 60 s (likewise).                              ~3-7 min
#   9  the issues' 10-minute baselines (cap 590 s): pcalg stable (disCItest) on ANDES, LINK and
#      MUNIN and pcalg stable.fast at p = 10000, 4 processes at once (stage9a.csv, stage9b.csv).  ~10 min
# EXTRA="..." adds run.R options to a part (e.g. EXTRA="--only LINK" CAP=590 ... 3 OUT), and
# TAG=x names its files stagePARTx.csv/.log, so narrowed runs of one part do not overwrite each other;
# TOOLS=a,b replaces the tools of parts 1 and 2 (e.g. TOOLS=gpupc-gpu,gpupc-cpu to re-time gpupc).
# The single-threaded pcalg runs share the 16 cores in parts 1, 2 and 5 (their rows' note says so);
# every multi-core tool (gpupc, bnlearn's cluster, ParallelPC) runs alone. BLAS is single-threaded
# (OPENBLAS_NUM_THREADS=1) so that concurrent pcalg runs do not oversubscribe the cores.
set -uo pipefail
part=${1:?usage: device-suite.sh PART OUTDIR}
outdir=${2:?usage: device-suite.sh PART OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

if [ -z "${RSCRIPT:-}" ]; then
  RSCRIPT=/tmp/r/R/bin/Rscript
  if [ ! -x "$RSCRIPT" ]; then
    if [ -f .rbundle/r.tar.xz ]; then
      mkdir -p /tmp/r && tar -xJf .rbundle/r.tar.xz -C /tmp/r
      # sockets for bnlearn's cluster (inst/bench/make-socket-addon.sh), and an Rscript that takes
      # the options cluster workers are started with
      if [ -f .rbundle/socket-addon.tar.xz ]; then
        tar -xJf .rbundle/socket-addon.tar.xz -C /tmp/r && rm -rf /tmp/r/R/hostlib
        cp inst/bench/portable-rscript.sh /tmp/r/R/bin/Rscript
      fi
    else
      RSCRIPT=$(command -v Rscript || true)
    fi
  fi
fi
[ -n "$RSCRIPT" ] && [ -x "$RSCRIPT" ] || { echo "device-suite.sh: no Rscript (set RSCRIPT or carry .rbundle/r.tar.xz)" >&2; exit 3; }
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# NVRTC: gpupc looks for libnvrtc.so.13 / .12 on the loader path
if ! "$RSCRIPT" -e 'quit(status = !isTRUE(gpupc::gpu_info()$usable))' >/dev/null 2>&1; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
           $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"

run() {  # run.R with the part's options; output to OUTDIR/stagePART.csv
  local csv="$outdir/stage$part${TAG:-}.csv"
  local extra=()
  # shellcheck disable=SC2206  # EXTRA is a list of options, split on purpose
  [ -n "${EXTRA:-}" ] && extra+=(${EXTRA})
  if [ -n "${RESUME_FROM:-}" ]; then
    [ "$(realpath "$RESUME_FROM")" = "$(realpath -m "$csv")" ] || cp "$RESUME_FROM" "$csv"
    extra+=(--resume)
  fi
  echo "== part $part: Rscript inst/bench/run.R $* --out $csv ${extra[*]}"
  "$RSCRIPT" inst/bench/run.R "$@" --out "$csv" ${extra[@]+"${extra[@]}"} --note "device-suite part $part" 2>&1 | tee "$outdir/stage$part${TAG:-}.log"
  return "${PIPESTATUS[0]}"
}

case "$part" in
  quick) run --suite gauss,discrete,sweep-p,sweep-n,discrete-sweep-n --quick --cap "${CAP:-20}" --parallel-baselines 8 ;;
  1) run --suite gauss --tools "${TOOLS:-gpupc-gpu,gpupc-cpu,gpupc-cpu-stable.fast,pcalg-stable.fast,pcalg-stable}" \
         --parallel-baselines 8 --cap "${CAP:-240}" --e2e-max-p 6000 ;;
  2) run --suite discrete,discrete-sweep-n --tools "${TOOLS:-gpupc-gpu,gpupc-cpu,pcalg-stable}" --parallel-baselines 10 \
         --cap "${CAP:-300}" ;;
  3) run --suite gauss,discrete --tools bnlearn --cap "${CAP:-50}" ;;
  4) run --suite sweep-p,sweep-n --tools gpupc-gpu,gpupc-cpu --cap "${CAP:-120}" --e2e-max-p 2000 ;;
  5) run --suite sweep-p,sweep-n --tools pcalg-stable.fast,pcalg-stable --parallel-baselines "${K:-15}" \
         --cap "${CAP:-300}" --e2e-max-p 2000 ;;
  6) run --suite gauss,discrete --tools parallelpc --cap "${CAP:-45}" --e2e-max-p 6000 ;;
  7) run --suite sweep-p,sweep-n,discrete-sweep-n --tools bnlearn --cap "${CAP:-60}" ;;
  8) run --suite sweep-p,sweep-n,discrete-sweep-n --tools parallelpc --cap "${CAP:-60}" --e2e-max-p 2000 ;;
  9) CAP=${CAP:-590}
     TAG=a run --suite discrete --tools pcalg-stable --only 'ANDES|LINK|MUNIN' --parallel-baselines 3 \
         --cap "$CAP" > /dev/null &
     TAG=b run --suite gauss --tools pcalg-stable.fast --only 'p=10000 ' --cap "$CAP" --e2e-max-p 6000 > /dev/null
     wait ;;
  *) echo "device-suite.sh: PART must be 1..9 or quick" >&2; exit 2 ;;
esac
