# Suite parity: gpupc's GPU backend against pcalg and the CPU backend, slot by slot (graph, every
# sepset, pMax, n.edgetests, max.ord), each GPU case run twice. Sourced by bench/run.
suite_title="GPU = pcalg = CPU backend (Gaussian, discrete, stable.fast, the chi-square tail, small-n warnings)"
suite_parts='
gauss       4  gpu  gpu-check.R: 100 random Gaussian cases (p 10-300, n 20-5000, a third with n < p), gpu_pc() against pcalg::pc() and the CPU backend
gauss-fast  5  gpu  skel.method = "stable.fast": pcbench parity (GPU = CPU, 100 cases; 40 with levels 0-1 by listed rounds; 50 in stable order) and gpu-check.R against pcalg (100 cases)
discrete    6  gpu  gpu-check.R on 8 bnlearn networks (disCItest, binCItest, both orders, adaptDF); pcbench: 60 random discrete cases, LINK GPU = CPU, the chi-square tail against R
small-n     1  gpu  disCItest / binCItest n < n.min warnings on the GPU and the CPU backend, against pcalg
fci         4  gpu  fci-check.R: gpu_fci() / gpu_rfci() on the GPU against pcalg::fci() / rfci() and the CPU backend, 20 random cases with unobserved variables (gaussCItest, disCItest)
c-checks    1  gpu  c-checks.R: suffStat$C checked on the GPU (symmetric, within and beyond the tolerance, out of range, infinite, NaN) against the CPU backend
tests       6  gpu  tests/testthat of the package with a GPU present (bench/lib/testthat-lite.R: the blocks that skip without one run here)
'
S=$BENCH/suites/parity
part_gauss() {
  needs r gpu || return 1
  step gpu-check "${RTIME:-300}" "$R" "$S/gpu-check.R" --out "$RAW" --cases "${CASES:-100}" --bench 0 --discrete 0
}
part_gauss-fast() {
  needs r pcbench gpu || return 1
  step parity-fast "${PTIME:-150}" "$PCBENCH" parity --order fast --cases "${CASES:-100}" --repeat 2 --seed 7
  step parity-fast-planned "${PTIME2:-60}" "$PCBENCH" parity --order fast --planned --cases 40 --repeat 2 --seed 8
  step parity-stable "${PTIME2:-60}" "$PCBENCH" parity --order stable --cases 50 --repeat 2 --seed 9
  step gpu-check-fast "${RTIME:-200}" "$R" "$S/gpu-check.R" --out "$RAW" --cases "${RCASES:-100}" --bench 0 --discrete 0 --method stable.fast
}
part_discrete() {
  needs r pcbench gpu || return 1
  step gpu-check-discrete "${PCALG_S:-300}" "$R" "$S/gpu-check.R" --out "$RAW" --parity 0 --bench 0 --discrete 1
  step pcbench-discrete 200 "$PCBENCH" discrete --cases 60 --repeat 2 --count both --threads "$THREADS"
  [ -s "$TMPD/link.bin" ] || step codes-link 120 "$R" "$BENCH/lib/export-codes.R" link 20000 "$TMPD/link.bin"
  step gsquare-link-parity 90 "$PCBENCH" discrete --codes "$TMPD/link.bin" --backend both --repeat 2 --threads "$THREADS"
  step pchisq 60 "$PCBENCH" pchisq --fixtures src/rust/crates/pc-core/tests/fixtures
}
part_c-checks() {
  needs r gpu || return 1
  step c-checks 120 "$R" "$S/c-checks.R"
}
part_small-n() {
  needs r || return 1
  for b in ${BACKENDS:-cuda cpu}; do
    step "small-n-$b" 200 "$R" "$S/small-n-check.R" "$b" "$RAW/small-n-$b.csv"
  done
}
part_fci() {
  needs r gpu || return 1
  step fci-check "${FTIME:-300}" "$R" "$S/fci-check.R" --cases "${CASES:-20}"
}
part_tests() {
  needs r gpu || return 1
  step testthat "${TTIME:-540}" "$R" "$BENCH/lib/testthat-lite.R" "$ROOT/tests/testthat" \
    $(cd "$ROOT/tests/testthat" && ls test-*.R)
}
