# Suite sweeps: skeleton seconds against p and n (Gaussian) and against n (ALARM), gpupc beside
# pcalg, bnlearn and ParallelPC; a tool past the cap at one size skips the larger ones.
# Sourced by bench/run.
suite_title="scaling sweeps: Gaussian p = 100 ... 20000 (n = 1000), n = 50 ... 20000 (p = 1000); ALARM n = 10^4 ... 10^6"
suite_parts='
gpupc       8  gpu  gpupc GPU and CPU on the Gaussian sweeps, cap 120 s, orientation up to p = 2000
pcalg       8  any  pcalg stable.fast and stable on the Gaussian sweeps, 15 at once, cap 300 s
discrete    8  gpu  ALARM n = 10^4 ... 10^6: gpupc GPU and CPU, pcalg stable (10 at once, cap 300 s)
bnlearn     6  any  bnlearn pc.stable (a cluster of every core) on every sweep, cap 15 s
parallelpc  6  any  ParallelPC (every core) on every sweep, cap 15 s
'
compare_r() {  # compare_r NAME SECONDS compare.R-options...
  local name=$1 secs=$2; shift 2
  local q=(); [ "$QUICK" = 1 ] && q=(--quick)
  step "$name" "$secs" "$R" "$BENCH/baselines/compare.R" "$@" ${q[@]+"${q[@]}"} --out "$RAW/$name.csv" --note "bench/run $suite $name"
}
part_gpupc() {
  needs r || return 1
  compare_r compare-gpupc 590 --suite sweep-p,sweep-n --tools gpupc-gpu,gpupc-cpu --cap "${CAP:-120}" --e2e-max-p 2000
}
part_pcalg() {
  needs r || return 1
  compare_r compare-pcalg 590 --suite sweep-p,sweep-n --tools pcalg-stable.fast,pcalg-stable --parallel-baselines "${K:-15}" \
    --cap "${CAP:-300}" --e2e-max-p 2000
}
part_discrete() {
  needs r || return 1
  compare_r compare-discrete 590 --suite discrete-sweep-n --tools "${TOOLS:-gpupc-gpu,gpupc-cpu,pcalg-stable}" \
    --parallel-baselines "${K:-10}" --cap "${CAP:-300}"
}
part_bnlearn() { needs r || return 1; compare_r compare-bnlearn 590 --suite sweep-p,sweep-n,discrete-sweep-n --tools bnlearn --cap "${CAP:-15}"; }
part_parallelpc() {
  needs r || return 1
  compare_r compare-parallelpc 590 --suite sweep-p,sweep-n,discrete-sweep-n --tools parallelpc --cap "${CAP:-15}" --e2e-max-p 2000
}
