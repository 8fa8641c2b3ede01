# Suite gauss: the Gaussian skeleton (gaussCItest) on the GPU and the CPU backend, through R,
# beside pcalg (stable, stable.fast), bnlearn and ParallelPC. Sourced by bench/run (step, needs,
# R, PCBENCH, RAW, THREADS, QUICK come from there).
suite_title="Gaussian skeleton through R: GPU and CPU backends, pcalg, bnlearn, ParallelPC, gpucsl"
suite_parts='
first-call  3  gpu  the first GPU call of an R process (fresh Rscript per row) with the kernel cache empty, warm and off; NVRTC and cache-read seconds per kernel family
resident    4  gpu  gpu_skeleton() on the GPU (3 runs) and the CPU backend (all cores) at p = 1643 ... 20000: phases, host memory peak, GPU = CPU object
fast        4  gpu  the same with skel.method = "stable.fast", pcalg::skeleton(method = "stable.fast") beside it up to p = 1643
large       6  gpu  p = 55,572, n = 3189 from the data (C on the GPU): levels 0-1 (m.max = 1) and all levels, with a p = 300 check against pcalg
compare     9  gpu  the seed shapes (p/n 1190/47, 1643/850, 5361/63, 10000/1000): gpupc GPU and CPU, pcalg stable and stable.fast (8 at once, cap 240 s)
bnlearn     4  any  bnlearn pc.stable (a cluster of every core) on the seed shapes, cap 50 s
parallelpc  4  any  ParallelPC (every core) on the seed shapes, cap 45 s
pcalg-long 10  any  pcalg stable.fast at p = 10000, cap 590 s
cpu         3  any  the CPU backend against pcalg (Gaussian p = 100/500/1000, ALARM and LINK n = 20000), cap 60 s
r-side      6  gpu  gpu_pc() at p = 1643 and gpu_skeleton() at p = 20000 on the GPU, 7 calls each in one process: every phase of gpupc_last_run() and the seconds of the R garbage collector per call
fast-levels 5  gpu  stable.fast with every level on the device graph: pcbench parity (GPU = CPU backend; 60 small, 6 large cases), p = 20000 GPU against the CPU backend (16 threads) with the GPU runs traced; with PCBENCH_BEFORE, the GPU runs of that build on the same data
fast-levels-r 8  gpu  the same through R: gpu-check.R stable.fast against pcalg (60 cases); gpu_skeleton() at p = 20000 on the GPU beside the CPU backend (16 threads), both orders; with LIB_BEFORE, r-side-phases.R alternating that library and this one
gpucsl      5  gpu  gpucsl (the dissertation'"'"'s Python package) on the seed shapes: its data written by R, gpucsl in Python
'
S=$BENCH/suites/gauss
compare_r() {  # compare_r NAME SECONDS compare.R-options...
  local name=$1 secs=$2; shift 2
  local q=(); [ "$QUICK" = 1 ] && q=(--quick)
  step "$name" "$secs" "$R" "$BENCH/baselines/compare.R" "$@" ${q[@]+"${q[@]}"} --out "$RAW/$name.csv" --note "bench/run $suite $name"
}
part_r-side() {
  needs r gpu || return 1
  step r-side "${STIME:-500}" "$R" "$S/r-side-phases.R" --backend cuda --p 1643 --n 850 \
    --big-p "${BIGP:-20000}" --big-n 1000 --reps "${REPS:-7}" --data-dir "${TMPDIR:-/tmp}"
}
part_first-call() {
  needs r gpu || return 1
  step first-call "${FTIME:-400}" env RSCRIPT="$R" PCBENCH="$PCBENCH" bash "$S/first-call.sh" "$RAW"
}
part_resident() {
  needs r gpu || return 1
  step resident "${RTIME:-420}" "$R" "$S/resident-bench.R" --out "$RAW" \
    --sizes "${SIZES:-1643x850,5361x63,10000x1000,20000x1000}" --cpu-max-p "${CPUMAXP:-10000}" \
    --threads "$THREADS" --repeat "${REPS:-3}"
}
part_fast() {
  needs r gpu || return 1
  step fast "${TTIME:-300}" "$R" "$S/resident-bench.R" --out "$RAW" --method stable.fast \
    --sizes "${SIZES:-1643x850,5361x63,10000x1000,20000x1000}" --cpu-max-p "${CPUMAXP:-10000}" \
    --pcalg-max-p "${PCALGMAXP:-1643}" --pcalg-cap 60 --threads "$THREADS" --repeat "${REPS:-3}"
}
part_fast-levels() {
  needs pcbench gpu || return 1
  step fast-levels-parity "${PTIME:-200}" "$PCBENCH" parity --order fast --cases "${CASES:-60}" --repeat 2 --seed 11
  step fast-levels-parity-large "${PTIME:-200}" "$PCBENCH" parity --order fast --cases 6 --p-min 1000 --p-max 3000 \
    --n-min 200 --n-max 2000 --repeat 2 --seed 5
  local cor=$TMPD/fast-levels-cor.bin
  step fast-levels-trace "${TTIME:-300}" env GPUPC_TRACE=1 "$PCBENCH" run --gen --p "${BIGP:-20000}" --n 1000 --order fast \
    --backend "${FAST_BACKEND:-both}" --threads "$THREADS" --repeat 3 --save-cor "$cor"
  if [ -n "${PCBENCH_BEFORE:-}" ]; then
    step fast-levels-before "${TTIME:-300}" "$PCBENCH_BEFORE" run --cor "$cor" --n 1000 --order fast --backend cuda --repeat 3
    step fast-levels-now "${TTIME:-300}" "$PCBENCH" run --cor "$cor" --n 1000 --order fast --backend cuda --repeat 3
  fi
  rm -f "$cor"
}
part_fast-levels-r() {
  needs r gpu || return 1
  [ "${CASES:-60}" -gt 0 ] && step fast-levels-check "${CTIME:-200}" "$R" "$BENCH/suites/parity/gpu-check.R" --out "$RAW" \
    --cases "${CASES:-60}" --bench 0 --discrete 0 --method stable.fast
  for m in ${METHODS:-stable.fast stable}; do
    step "fast-levels-resident-$m" "${RTIME:-200}" "$R" "$S/resident-bench.R" --out "$RAW" --method "$m" --sizes "${BIGP:-20000}x1000" \
      --cpu-max-p "${BIGP:-20000}" --threads "$THREADS" --repeat "${REPS:-3}"
  done
  if [ -n "${LIB_BEFORE:-}" ]; then
    step fast-levels-ab "${ATIME:-300}" "$R" "$S/r-side-phases.R" --backend cuda --method stable.fast --p 1643 --n 850 \
      --big-p "${BIGP:-20000}" --big-n 1000 --reps 3 --details --libs "$LIB_BEFORE,${LIB_NOW:-$DEV/lib}" --rounds 1 \
      --data-dir "$TMPD"
  fi
}
part_large() {
  needs r gpu || return 1
  step large "${LTIME:-560}" "$R" "$S/large-p-bench.R" --out "$RAW" --p "${P:-55572}" --n "${N:-3189}" \
    --mmax "${MMAX:-1,Inf}" --threads "$THREADS" --check-p "${CHECKP:-300}"
}
part_compare() {
  needs r || return 1
  compare_r compare 590 --suite gauss --tools "${TOOLS:-gpupc-gpu,gpupc-cpu,gpupc-cpu-stable.fast,pcalg-stable.fast,pcalg-stable}" \
    --parallel-baselines "${K:-8}" --cap "${CAP:-240}" --e2e-max-p 6000
}
part_bnlearn() { needs r || return 1; compare_r compare-bnlearn 590 --suite gauss --tools bnlearn --cap "${CAP:-50}"; }
part_parallelpc() { needs r || return 1; compare_r compare-parallelpc 590 --suite gauss --tools parallelpc --cap "${CAP:-45}" --e2e-max-p 6000; }
part_pcalg-long() {
  needs r || return 1
  compare_r compare-pcalg-long 598 --suite gauss --tools pcalg-stable.fast --only 'p=10000 ' --cap "${CAP:-590}" --e2e-max-p 6000
}
part_cpu() { needs r || return 1; compare_r cpu 590 --suite cpu --cap "${CAP:-60}"; }
part_gpucsl() {
  needs r python gpu wheel:gpucsl || return 1
  step gpucsl-data 200 "$R" "$BENCH/baselines/gpucsl-export.R" "$TMPD/gpucsl-data"
  step gpucsl "${GTIME:-300}" env PYTHONPATH="$TMPD/gpucsl-site" bash -c \
    'python3 -m pip install -q --no-index --no-deps --target "$0" "$1"/gpucsl-*.whl && python3 "$2" "$3" "$4" --set-cap 120' \
    "$TMPD/gpucsl-site" "$DEV" "$BENCH/baselines/gpucsl-bench.py" "$TMPD/gpucsl-data" "$RAW/gpucsl.csv"
}
