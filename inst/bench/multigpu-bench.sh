#!/usr/bin/env bash
# Several GPUs of one host against one GPU of the same run, on the device machine.
#
#   bash multigpu-bench.sh DIR [STAGE ...]
#
# DIR holds `pcbench` (cargo build --release -p pcbench), this script and
# multigpu-cor.py; munin.bif.gz is read from DIR or inst/extdata/networks. Results go to $OUT
# (the device's result folder; ./multigpu-out elsewhere), one text file per stage, and a summary
# table (summary.txt). Every `pcbench multi` line runs one GPU and then k GPUs in the same
# process, compares them slot by slot (graph, sepsets, pMax bit for bit, n.edgetests, max.ord)
# and prints the ratio; "k = 1: identical" is the parity verdict.
#
# Stages (default: all, in this order; each is capped by `timeout`):
#   check     probe, topology, parity on random small cases: k devices = 1 device = CPU
#             (Gaussian and discrete); with one GPU, two contexts on it (--devices 0,0)
#   g20k-l01  Gaussian p = 20000, n = 3189, levels 0-1 (m.max = 1), k = 2 and k = all
#   g20k      the same, all levels
#   munin     disCItest on a forward sample of MUNIN, n = 1e6, all levels, k = 2 and all
#   g55k-l01  Gaussian p = 55,572, n = 3189, levels 0-1 (C made on the GPU: 24.7 GB)
#   g55k      the same, all levels
# NVLink multicast stays off (the workplace's rule; nothing here uses NCCL or multicast).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
D=$(cd "${1:?usage: multigpu-bench.sh DIR [STAGE ...]}" && pwd); shift
STAGES=${*:-check g20k-l01 g20k munin g55k-l01 g55k}
OUT=${OUT:-$PWD/multigpu-out}; mkdir -p "$OUT"
PB=$D/pcbench
TMP=${TMPDIR:-/tmp}/multigpu; mkdir -p "$TMP"
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$NG" -le 1 ]; then ALL="0,0"; else ALL=$(seq -s, 0 $((NG - 1))); fi
SETS="$ALL"; [ "$NG" -gt 2 ] && SETS="0,1 $ALL"
MUNIN=$D/munin.bif.gz; [ -f "$MUNIN" ] || MUNIN=inst/extdata/networks/munin.bif.gz
SUM=$OUT/summary.txt
echo "multigpu-bench $(date -u +%FT%TZ): $NG GPU(s), device sets: $SETS; stages: $STAGES" | tee -a "$SUM"

run() {  # run NAME SECONDS CMD...: output to $OUT/NAME.txt, the result lines to the summary
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - t0)) s" | tee -a "$SUM"
  grep -E '^(gauss|discrete|multi|case .*DIFF)' "$OUT/$name.txt" | tee -a "$SUM"
  return 0
}

cor() {  # cor P FILE: a correlation matrix made on the GPU, once
  [ -s "$2" ] || timeout 300 python3 "$D/multigpu-cor.py" "$1" 3189 1 "$2" >> "$SUM" 2>&1
}

for st in $STAGES; do
  case $st in
    check)
      { nvidia-smi -L; nvidia-smi topo -m; "$PB" probe; } > "$OUT/topology.txt" 2>&1
      run parity-gauss 240 "$PB" multi gauss --cases 30 --devices "$ALL"
      run parity-discrete 180 "$PB" multi discrete --cases 16 --devices "$ALL" ;;
    g20k-l01|g20k)
      cor 20000 "$TMP/c20000.bin"
      mm=""; [ "$st" = g20k-l01 ] && mm="--m-max 1"
      for s in $SETS; do run "$st-k$(echo "$s" | tr -cd , | wc -c | awk '{print $1 + 1}')" 600 "$PB" multi gauss --cor "$TMP/c20000.bin" --n 3189 $mm --devices "$s"; done ;;
    munin)
      for s in $SETS; do run "munin-k$(echo "$s" | tr -cd , | wc -c | awk '{print $1 + 1}')" 600 "$PB" multi discrete --bif "$MUNIN" --n 1000000 --devices "$s"; done ;;
    g55k-l01|g55k)
      cor 55572 "$TMP/c55572.bin"
      mm=""; [ "$st" = g55k-l01 ] && mm="--m-max 1"
      for s in $SETS; do run "$st-k$(echo "$s" | tr -cd , | wc -c | awk '{print $1 + 1}')" 600 "$PB" multi gauss --cor "$TMP/c55572.bin" --n 3189 $mm --devices "$s"; done ;;
    *) echo "unknown stage $st" | tee -a "$SUM" ;;
  esac
done
