# Suite orient: orientation in Rust with pcalg's rules (gpu_pc() end to end, the conservative and
# majority rules with the triple checks on the GPU) against pcalg's R code. Sourced by bench/run.
suite_title="orientation: alone, gpu_pc() end to end (Gaussian, discrete), conservative and majority rule, against pcalg"
suite_parts='
alone       3  gpu  orientation alone (true skeleton of a degree-4 DAG, p = 1643 / 10000 / 20000) against pcalg::udag2pdagRelaxed(), cap 60 s
e2e         5  gpu  gpu_pc() end to end (relaxed p = 1643 / 5361 / 10000; conservative and majority rule p = 500 / 1643) against pc(skel.method = "stable.fast"), cap 200 s; triple-check parity
e2e-p10000 10  gpu  the same at p = 10000 with pcalg capped at 555 s
fci         9  gpu  gpu_fci() / gpu_rfci() against pcalg::fci() / rfci() end to end (Gaussian, p = 50 / 200, n = 1000, expected degree 4, an eighth unobserved; m.max = 3, pdsep.max = 20), cap 200 s
fci-p500   10  gpu  the same at p = 500, pcalg capped at 280 s
fci-discrete 10 gpu  the same with disCItest on ALARM, n = 20,000, an eighth of the variables unobserved, pcalg capped at 280 s
discrete    7  gpu  discrete conservative / majority-rule PC (ALARM, HEPAR2, ANDES) against pcalg, cap 120 s; random-case parity against pcalg, a rerun and the CPU backend
'
S=$BENCH/suites/orient
part_alone() {
  needs r gpu || return 1
  step orient-alone 300 "$R" "$S/orient-bench.R" --backend cuda --cap "${CAP:-60}" --parts orient --out "$RAW/orient-alone.csv"
}
part_e2e() {
  needs r gpu || return 1
  step orient-e2e $((${CAP:-200} + 60)) "$R" "$S/orient-e2e.R" --backend cuda --cap "${CAP:-200}" --reps 3 \
    --e2e-p "${E2E_P:-1643,5361,10000}" --cons-p "${CONS_P-500,1643}" --parity "${PARITY:-20}" --out "$RAW/orient-e2e.csv"
}
part_e2e-p10000() {
  needs r gpu || return 1
  step orient-e2e-p10000 595 "$R" "$S/orient-e2e.R" --backend cuda --cap "${CAP:-540}" --reps 3 --e2e-p 10000 --cons-p "" \
    --parity 0 --out "$RAW/orient-e2e-p10000.csv"
}
part_fci() {
  needs r gpu || return 1
  step fci-bench 595 "$R" "$S/fci-bench.R" --backend cuda --cap "${CAP:-200}" --reps 3 --p "${FCI_P:-50,200}" \
    --m-max "${M_MAX:-3}" --pdsep-max "${PDSEP_MAX:-20}" --out "$RAW/fci-bench.csv"
}
part_fci-p500() {
  needs r gpu || return 1
  step fci-bench-p500 595 "$R" "$S/fci-bench.R" --backend cuda --cap "${CAP:-280}" --reps 3 --p 500 \
    --m-max "${M_MAX:-3}" --pdsep-max "${PDSEP_MAX:-20}" --out "$RAW/fci-bench-p500.csv"
}
part_fci-discrete() {
  needs r gpu || return 1
  step fci-bench-discrete 595 "$R" "$S/fci-bench.R" --backend cuda --cap "${CAP:-280}" --reps 3 --p "" \
    --networks "${FCI_NETWORKS:-alarm}" --n-discrete "${FCI_N:-20000}" --m-max "${M_MAX:-3}" --pdsep-max "${PDSEP_MAX:-20}" \
    --out "$RAW/fci-bench-discrete.csv"
}
part_discrete() {
  needs r gpu || return 1
  step orient-discrete "${LIMIT:-420}" "$R" "$S/orient-discrete.R" --backend cuda --cap "${CAP:-120}" --reps 3 \
    --cases "${CASES:-72}" --min-compared 60 --cores "${CORES:-7}" --networks inst/extdata/networks \
    --timing "${TIMING-alarm:5000,alarm:20000,hepar2:5000,andes:5000}" --out "$RAW/orient-discrete"
}
