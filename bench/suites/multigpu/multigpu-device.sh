#!/usr/bin/env bash
# Several GPUs of one host, on the device machine: parity through R, then the timing table
# (1, 2, ... GPUs; ratios to one GPU of the same run; phases). One command, from the repository
# root (bench/run multigpu --device runs it stage by stage, as its parts):
#
#   DEV=.rbundle bash bench/suites/multigpu/multigpu-device.sh [STAGE ...]
#
# DEV holds r.tar.xz (portable-r with gpupc, pcalg, bnlearn) and pcbench
# (cargo build --release -p pcbench). Results go to $OUT, one file per stage, and summary.txt.
# Stages (default: all, in this order; each capped by `timeout`):
#   parity    multigpu-r.R parity: every test kind and order, gpu_pc's triple checks and
#             junction-tree batches on one GPU, all GPUs, the default and all GPUs with peer
#             copies off, against each other and the CPU backend
#   check     pcbench multi parity (Gaussian and discrete, random cases, k GPUs = 1 GPU = CPU)
#   g20k      gaussCItest through R, p = 20000, n = 3189: levels 0-1 (m.max = 1) and all levels
#   cmiknn    cmiknnCItest through R, p = 50, n = 2000
#   jtree     gpu_query() through R, Munin, 100,000 evidence sets (5% of nodes observed)
#   munin     pcbench multi discrete: MUNIN forward-sampled, n = 1e6, all levels
#   g55k      pcbench multi gauss, p = 55,572, n = 3189, levels 0-1
#   grow      pcbench multi gauss --grow, p = 55,572, n = 3189, every level: one GPU, then 2 and
#             all GPUs as `devices = NULL` runs them (the others join at the first large level)
#   g55k-r    gaussCItest through R, p = 55,572, n = 3189, every level: one GPU, then the default
#             devices (G55K_SETS, default "1,default"; warmed on a p = 2000 corner of C). The
#             one-GPU result stays in $TMP, so a later call on the same machine with fewer GPUs
#             visible (CUDA_VISIBLE_DEVICES=0,1) times only the default devices against it
#   fault     multigpu-r.R fault: the last GPU failing (GPUPC_FAIL_DEVICE) in every test kind
# NVLink multicast stays off (nothing here uses NCCL or multicast).
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
DEV=${DEV:-.rbundle}
RDIR=${RDIR:-/tmp/r-device}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../lib/env.sh"
STAGES=${*:-parity check fault g20k cmiknn jtree munin g55k grow}
SUM=$OUT/summary.txt
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
ALL=$(seq -s, 0 $((NG - 1)))
{ nvidia-smi -L; nvidia-smi topo -m; } > "$OUT/topology.txt" 2>&1
echo "multigpu-device $(date -u +%FT%TZ): $NG GPU(s) ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort -u | tr '\n' ' ')); stages: $STAGES" | tee -a "$SUM"
TMP=${TMPDIR:-/tmp}/multigpu; mkdir -p "$TMP"

stage() {  # stage NAME SECONDS CMD...: output to $OUT/NAME.txt, its table lines to the summary
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout "$secs" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "== $name: rc $rc, $((SECONDS - t0)) s" | tee -a "$SUM"
  grep -E '( \| |^parity:|DIFFERS|^(gauss|discrete|multi) |Error)' "$OUT/$name.txt" | tee -a "$SUM"
}

for st in $STAGES; do
  case $st in
    parity) stage parity-r "${PARITY_S:-300}" "$R" "$HERE/multigpu-r.R" parity --cases "${CASES:-4}" ;;
    fault) stage fault-r "${FAULT_S:-300}" "$R" "$HERE/multigpu-r.R" fault ;;
    check)
      GPUPC_SPLIT_MIN_TESTS=0 stage parity-pcbench-gauss 120 "$PCBENCH" multi gauss --cases 20 --devices "$ALL"
      GPUPC_SPLIT_MIN_TESTS=0 GPUPC_GROW_MIN_TESTS=0 stage parity-pcbench-gauss-grow 120 "$PCBENCH" multi gauss --cases 20 --devices "$ALL" --grow
      # stable.fast: every level on the first device's graph (the others join where a level declines)
      GPUPC_SPLIT_MIN_TESTS=0 GPUPC_GROW_MIN_TESTS=0 stage parity-pcbench-gauss-fast-grow 120 "$PCBENCH" multi gauss --cases 20 --devices "$ALL" --grow --order fast
      # many small rounds, the devices' keys exchanged after each
      GPUPC_SPLIT_MIN_TESTS=0 GPUPC_GROW_MIN_TESTS=0 GPUPC_KEY_EXCHANGE_MS=0 stage parity-pcbench-gauss-exchange 120 "$PCBENCH" multi gauss --cases 20 --devices "$ALL" --grow --round-budget 256
      stage parity-pcbench-discrete 120 "$PCBENCH" multi discrete --cases 12 --devices "$ALL" ;;
    g20k)
      [ -s "$TMP/c20000.bin" ] || timeout 200 python3 "$HERE/multigpu-cor.py" 20000 3189 1 "$TMP/c20000.bin" >> "$SUM" 2>&1
      stage g20k-l01-r 200 "$R" "$HERE/multigpu-r.R" gauss --cor "$TMP/c20000.bin" --p 20000 --n 3189 --m-max 1 --reps 2
      stage g20k-r 300 "$R" "$HERE/multigpu-r.R" gauss --cor "$TMP/c20000.bin" --p 20000 --n 3189 --reps 2 ;;
    cmiknn) stage cmiknn-r "${CMIKNN_S:-400}" "$R" "$HERE/multigpu-r.R" cmiknn --p "${CMI_P:-50}" --n 2000 --perm "${CMI_PERM:-200}" --m-max "${CMI_MMAX:-Inf}" --reps 1 ${SETS_OF_GPUS:+--sets "$SETS_OF_GPUS"} ;;
    jtree) stage jtree-r "${JTREE_S:-400}" "$R" "$HERE/multigpu-r.R" jtree --net munin --evidence-sets "${SETS:-100000}" --reps 1 ${SETS_OF_GPUS:+--sets "$SETS_OF_GPUS"} ;;
    munin)
      stage munin "${MUNIN_S:-400}" "$PCBENCH" multi discrete --bif "$ROOT/inst/extdata/networks/munin.bif.gz" --n 1000000 --devices "$ALL" ;;
    g55k)
      [ -s "$TMP/c55572.bin" ] || timeout 300 python3 "$HERE/multigpu-cor.py" 55572 3189 1 "$TMP/c55572.bin" >> "$SUM" 2>&1
      stage g55k-l01 "${G55K_S:-400}" "$PCBENCH" multi gauss --cor "$TMP/c55572.bin" --n 3189 --m-max 1 --devices "$ALL" ;;
    g55k-r)
      [ -s "$TMP/c55572.bin" ] || timeout 300 python3 "$HERE/multigpu-cor.py" 55572 3189 1 "$TMP/c55572.bin" >> "$SUM" 2>&1
      stage g55k-r "${G55K_S:-560}" "$R" "$HERE/multigpu-r.R" gauss --cor "$TMP/c55572.bin" --p 55572 --n 3189 --reps 1 --warm small --sets "${G55K_SETS:-1,default}" --ref "$TMP" ${GROW_MMAX:+--m-max "$GROW_MMAX"} ;;
    grow)
      [ -s "$TMP/c55572.bin" ] || timeout 300 python3 "$HERE/multigpu-cor.py" 55572 3189 1 "$TMP/c55572.bin" >> "$SUM" 2>&1
      COUNTS=${GROW_COUNTS:-$([ "$NG" -gt 2 ] && echo "2,$NG" || echo "$NG")}
      stage g55k-grow "${GROW_S:-560}" "$PCBENCH" multi gauss --cor "$TMP/c55572.bin" --n 3189 --devices "$ALL" --counts "$COUNTS" --grow ${GROW_MMAX:+--m-max "$GROW_MMAX"} ;;
    *) echo "unknown stage $st" | tee -a "$SUM" ;;
  esac
done
