# Suite discrete: the discrete skeleton (disCItest, G^2) through R and in the kernels, beside
# pcalg, bnlearn and ParallelPC on the bnlearn-repository networks. Sourced by bench/run.
suite_title="discrete skeleton (disCItest): through R, the G^2 kernels, pcalg, bnlearn, ParallelPC"
suite_parts='
r           3  gpu  gpu_skeleton() through R on LINK and MUNIN samples (n = 20000): a warm-up and 12 timed calls each, R'"'"'s collector time, every call identical to the first
kernels     2  gpu  pcbench on the same samples: the G^2 table counted packed and by runs, per level (OCC=1: shared-table sizes; NCU=1: Nsight Compute on one level-1 launch)
large       2  gpu  pcbench: 10^6 rows x 1000 variables of up to 21 levels, every level, on the GPU
compare     9  gpu  the networks (ALARM n = 10^4 and 2 x 10^5, ANDES, LINK, MUNIN n = 20000): gpupc GPU and CPU, pcalg stable (10 at once, cap 300 s)
bnlearn     5  any  bnlearn pc.stable (a cluster of every core) on the networks, cap 50 s
parallelpc  5  any  ParallelPC (every core) on the networks, cap 45 s
pcalg-long 10  any  pcalg stable (disCItest) on ANDES, LINK and MUNIN, 3 at once, cap 590 s
queue-start 1  any  the 10-minute baselines (ParallelPC, bnlearn, pcalg) as a queue that outlives one call (about 20 minutes)
queue-wait 10  any  waits for that queue (up to 9 minutes a call; call again until its log says "queue finished") and takes its CSVs
'
S=$BENCH/suites/discrete
compare_r() {  # compare_r NAME SECONDS compare.R-options...
  local name=$1 secs=$2; shift 2
  local q=(); [ "$QUICK" = 1 ] && q=(--quick)
  step "$name" "$secs" "$R" "$BENCH/baselines/compare.R" "$@" ${q[@]+"${q[@]}"} --out "$RAW/$name.csv" --note "bench/run $suite $name"
}
codes() {  # the LINK and MUNIN samples of the compare suite, as pcbench reads them
  for d in link munin; do
    [ -s "$TMPD/$d.bin" ] || step "codes-$d" 120 "$R" "$BENCH/lib/export-codes.R" "$d" 20000 "$TMPD/$d.bin"
  done
}
part_r() {
  needs r gpu || return 1
  codes
  step r-timing "${R_S:-200}" "$R" "$S/discrete-r-timing.R" --repeat "${REPS:-12}" "$TMPD/link.bin" "$TMPD/munin.bin"
}
part_kernels() {
  needs r pcbench gpu || return 1
  codes
  for d in munin link; do
    step "gsquare-$d" 60 "$PCBENCH" discrete --codes "$TMPD/$d.bin" --backend cuda --repeat 3 --count both --threads "$THREADS"
  done
  if [ -n "${OCC:-}" ]; then  # the words of the G^2 table a block keeps in shared memory
    for d in munin link; do for w in ${OCC_WORDS:-8192 4096 2048}; do
      step "occ-$d-w$w" 60 "$PCBENCH" discrete --codes "$TMPD/$d.bin" --backend cuda --repeat 3 --shared-words "$w" --threads "$THREADS"
    done; done
  fi
  if [ -n "${NCU:-}" ]; then  # Nsight Compute on one MUNIN level-1 launch, each way of counting
    for c in packed runs; do
      step "ncu-munin-$c" 120 /usr/local/cuda/bin/ncu --set full -k gsquare_tests --launch-skip 20 --launch-count 1 \
        "$PCBENCH" discrete --codes "$TMPD/munin.bin" --backend cuda --repeat 1 --count "$c" --threads "$THREADS"
    done
  fi
}
part_large() {
  needs pcbench gpu || return 1
  step large-input 300 "$PCBENCH" discrete --p 1000 --n 1000000 --max-levels 21 --repeat 1 --backend cuda
}
part_compare() {
  needs r || return 1
  compare_r compare 590 --suite discrete --tools "${TOOLS:-gpupc-gpu,gpupc-cpu,pcalg-stable}" --parallel-baselines "${K:-10}" \
    --cap "${CAP:-300}"
}
part_bnlearn() { needs r || return 1; compare_r compare-bnlearn 590 --suite discrete --tools bnlearn --cap "${CAP:-50}"; }
part_parallelpc() { needs r || return 1; compare_r compare-parallelpc 590 --suite discrete --tools parallelpc --cap "${CAP:-45}"; }
part_pcalg-long() {
  needs r || return 1
  compare_r compare-pcalg-long 598 --suite discrete --tools pcalg-stable --only 'ANDES|LINK|MUNIN' --parallel-baselines 3 --cap "${CAP:-590}"
}
part_queue-start() { needs r || return 1; step queue-start 30 env RSCRIPT="$R" bash "$BENCH/baselines/queue.sh" start "$TMPD/queue"; }
part_queue-wait() {
  needs r || return 1
  step queue-wait 580 bash "$BENCH/baselines/queue.sh" wait "$TMPD/queue" "${WAIT_S:-540}" "$RAW"
}
