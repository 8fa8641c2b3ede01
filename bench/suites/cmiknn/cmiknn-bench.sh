#!/usr/bin/env bash
# CMI-kNN on the GPU machine: GPU/CPU parity (pcbench cmiknn parity), one-test timings of ours
# (GPU, CPU on all cores) and tigramite (run_test_raw, workers = -1: all cores), and a PC skeleton
# search on the GPU. bench/run cmiknn check | bench | extra runs it with PCBENCH and DEV (which
# holds the tigramite wheel) set; the output goes to its step log:
#
#   bash cmiknn-bench.sh check     probe, parity (150 tests), one test at n = 1000
#   bash cmiknn-bench.sh bench     the one-test and PC timings (n = 1000 and n = 10000, tigramite, PC)
#   bash cmiknn-bench.sh extra     parity again, GPU level loop = CPU level loop, tigramite at the PC run's shape
set -u
phase=${1:-check}
baselines=$(cd "$(dirname "$0")/../../baselines" && pwd)
pcb=${PCBENCH:?}
export PYTHONPATH=$baselines
header() {
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) $(nproc) cores"
}
# tigramite from the wheel: a wheel is a zip, so unpacking it is a --no-deps install
tigramite_setup() {
  export TIGRAMITE_PATH=${TMPDIR:-/tmp}/tig-site
  python3 -c "import zipfile, sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" "$(ls "${DEV:?}"/tigramite-*.whl | head -1)" "$TIGRAMITE_PATH"
  echo "tool,n,k,B,l,workers,median_s,statistic,p_value"
}
check() {
  header
  "$pcb" probe
  echo "## parity: GPU against CPU, bit for bit (statistic, every surrogate, p-value), and a second GPU run"
  timeout 90 "$pcb" cmiknn parity --cases 150 --seed 7; echo "parity exit $?"
  echo "## one test, ours (GPU / CPU on all cores), n = 1000, k = 7, B = 100, |S| = 1"
  timeout 60 "$pcb" cmiknn single --n 1000 --knn 7 --sig-samples 100 --level 1 --repeat 5 --backend both
}
bench() {
  header
  echo "## one test, ours (GPU / CPU on all cores)"
  timeout 40 "$pcb" cmiknn single --n 1000 --knn 7 --sig-samples 100 --level 1 --repeat 5 --backend both
  timeout 60 "$pcb" cmiknn single --n 10000 --knn 0.2 --sig-samples 100 --level 1 --repeat 1 --backend both
  echo "## one test, tigramite (run_test_raw, workers = -1)"
  tigramite_setup
  timeout 40 python3 "$baselines/tigramite.py" 1000 7 100 1 3
  timeout 90 python3 "$baselines/tigramite.py" 10000 0.2 100 1 1 || echo "tigramite,10000,2000,100,1,,timeout after 90 s"
  echo "## PC skeleton on the GPU: p = 50, n = 1000, k = 0.2 n, B = 500, alpha = 0.05"
  timeout 90 "$pcb" cmiknn pc --p 50 --n 1000 --knn 0.2 --sig-samples 500 --degree 2 --backend cuda --seed 3 || echo "pc: stopped after 90 s"
}
extra() {
  header
  echo "## parity again (Z-neighbours split over the pool)"
  timeout 60 "$pcb" cmiknn parity --cases 150 --seed 11; echo "parity exit $?"
  echo "## the level loop: GPU backend against CPU backend (graph, sepsets, pMax, n.edgetests identical)"
  timeout 60 "$pcb" cmiknn pc --p 15 --n 500 --knn 0.2 --sig-samples 100 --degree 2 --backend both --seed 5
  echo "## one test at n = 10000, k = 0.2 n (host permutations now on all cores)"
  timeout 60 "$pcb" cmiknn single --n 10000 --knn 0.2 --sig-samples 100 --level 1 --repeat 2 --backend cuda
  echo "## tigramite, one test of the PC run's shape (n = 1000, k = 200, B = 500, |S| = 1 and 0)"
  tigramite_setup
  timeout 60 python3 "$baselines/tigramite.py" 1000 0.2 500 1 1
  timeout 60 python3 "$baselines/tigramite.py" 1000 0.2 500 0 1
}
case $phase in
  extra) extra 2>&1 ;;
  check) check 2>&1 ;;
  bench) bench 2>&1 ;;
  *) echo "cmiknn-bench.sh: phase must be check, bench or extra" >&2; exit 2 ;;
esac
