# Suite cmiknn: the CMI-kNN test (cmiknnCItest, tigramite's CMIknn) on the GPU beside tigramite:
# parity, one-test timings, p-value calibration and power, skeletons of non-linear DAGs, PC runs.
# Sourced by bench/run.
suite_title="CMI-kNN: GPU = CPU, one-test timings and PC against tigramite, calibration, non-linear DAGs"
suite_parts='
check       2  gpu  pcbench cmiknn parity (GPU = CPU bit for bit, 150 tests, second GPU run) and one test at n = 1000
bench       6  gpu  one test at n = 1000 and 10000, ours (GPU, CPU) and tigramite (all cores); PC at p = 50, n = 1000, B = 500 on the GPU
extra       5  gpu  parity again, the level loop GPU = CPU, one test at n = 10000, tigramite at the PC run'"'"'s shape (|S| = 1 and 0)
dist        6  gpu  p-value calibration and power beside tigramite (same data), skeletons of quadratic / tanh / sine DAGs beside gaussCItest
pc-p200     10 gpu  PC at p = 200, n = 2000, k = 0.2 n, B = 50 on the GPU, alone
cpu-pc      3  any  PC on the CPU backend, p = 10, n = 1000, k = 0.1 n, B = 20, three runs (alternately with the build BASE_PCBENCH names, when set)
dag-r       10 any  cmiknn-dag.R: the non-linear DAGs through R (CPU backend beside pcalg::skeleton(gaussCItest)), p = 10, n = 400
'
S=$BENCH/suites/cmiknn
export PCBENCH DEV RAW
part_check() { needs pcbench gpu || return 1; step cmiknn-check 200 bash "$S/cmiknn-bench.sh" check; }
part_bench() { needs pcbench gpu python wheel:tigramite || return 1; step cmiknn-bench 450 bash "$S/cmiknn-bench.sh" bench; }
part_extra() { needs pcbench gpu python wheel:tigramite || return 1; step cmiknn-extra 350 bash "$S/cmiknn-bench.sh" extra; }
part_dist() { needs pcbench gpu python wheel:tigramite || return 1; step cmiknn-dist 560 bash "$S/cmiknn-dist.sh"; }
part_pc-p200() {
  needs pcbench gpu || return 1
  step cmiknn-pc-p200 590 "$PCBENCH" cmiknn pc --p 200 --n 2000 --knn 0.2 --sig-samples 50 --degree 2 --backend cuda \
    --threads "$THREADS" --seed 3 --limit-s 565
}
part_cpu-pc() { needs pcbench || return 1; step cmiknn-cpu-pc 300 bash "$S/cmiknn-cpu-ab.sh"; }
part_dag-r() {
  needs r || return 1
  step cmiknn-dag-r 590 "$R" "$S/cmiknn-dag.R" "" "$RAW/cmiknn-dag-r.csv" 10 400 "${REPS:-3}" 100
}
