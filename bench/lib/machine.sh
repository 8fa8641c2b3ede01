#!/usr/bin/env bash
# The machine a suite ran on, as bench/run writes it beside the suite's CSV (SUITE.machine.txt):
# a first line [ID] (the CSV's `machine` column: GPU model x count, cores, the CPU's family), then
# the GPU(s) and
# driver, the CPU, memory, R and the packages the suites call, Python's tools, the commit.
#   BENCH_R=Rscript bash bench/lib/machine.sh SUITE
suite=${1:-}
cores=$(nproc --all 2>/dev/null || nproc)
family=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1 | grep -oiE 'xeon|epyc|ryzen|threadripper|core|neoverse' | head -1 | tr 'A-Z' 'a-z')
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  ngpu=$(nvidia-smi -L | grep -c '^GPU')
  short=$(echo "$name" | grep -oE '\b[A-Z]+[0-9]+[A-Za-z]*\b' | head -1)
  id="${short:-gpu}x$ngpu-${cores}core"
else
  id="nogpu-${cores}core"
fi
[ -n "$family" ] && id="$id-$family"
echo "[$id]"
if [ "${id#nogpu}" = "$id" ]; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu: /'
  nvidia-smi | grep -oE 'CUDA Version: [0-9.]+' | head -1 | sed 's/^/driver: /'
  [ "$ngpu" -gt 1 ] && nvidia-smi topo -m 2>/dev/null | grep -E '^GPU[0-9]' | sed 's/^/topology: /'
else
  echo "gpu: none"
fi
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $cores cores"
echo "memory: $(awk '/^MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo)"
if [ -n "${BENCH_R:-}" ] && [ -x "${BENCH_R}" ]; then
  "$BENCH_R" -e 'v <- function(p) if (requireNamespace(p, quietly = TRUE)) format(packageVersion(p)) else "-"
    cat(sprintf("R %s; gpupc %s, pcalg %s, bnlearn %s, ParallelPC %s, gRain %s\n", getRversion(), v("gpupc"),
        v("pcalg"), v("bnlearn"), v("ParallelPC"), v("gRain")))' 2>/dev/null | sed 's/^/software: /'
fi
command -v python3 > /dev/null 2>&1 && echo "python: $(python3 -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)' 2>/dev/null || python3 --version)"
[ -n "${PCBENCH:-}" ] && [ -x "${PCBENCH}" ] && echo "pcbench: the release build of src/rust/crates/pcbench"
# the bundle's commit when it names one (the GPU machine's copy of the tree may sit on another HEAD)
if [ -n "${DEV:-}" ] && [ -s "$DEV/commit" ]; then
  echo "commit: $(head -1 "$DEV/commit")"
else
  c=$(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null) && echo "commit: $c"
fi
echo "date: $(date -u +%F)"
echo "suite: $suite"
