#!/usr/bin/env bash
# Nsight Compute on single junction-tree launches of one network's first batch chunk: the full
# section set (occupancy, registers, stall reasons, memory throughput by level). NCU_LAUNCHES
# lists kernel:invocation pairs, the invocation counted from 0 over the whole pcbench run. pcbench
# first runs two one-row queries (warm-up and timed), each 16 jt_collect and 15 jt_reduce_cal
# launches on Munin (depths 15..0, then depths 1..14 and the marginals), so Munin's first chunk's
# collect at depth d is jt_collect:(32 + 15 - d) and its distribute from depth d is
# jt_reduce_cal:(30 + d - 1). With NCU_METRICS (comma-separated metric names) only those metrics
# (DRAM bytes read and written, L2 sectors by source: which loads go to memory), the outputs
# named -metrics-$NCU_TAG.
# bench/run jtree ncu runs it with PCBENCH, NETS and RAW set.
#     -> jtree-ncu-<kernel>-<invocation>.txt (ncu's details page; -metrics-<tag>.txt with NCU_METRICS),
#        jtree-ncu.txt (the runs' output)
set -uo pipefail
: "${PCBENCH:?}" "${NETS:?}" "${RAW:?}"
NCU=${NCU_BIN:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
[ -x "$NCU" ] || { echo "jtree-ncu: no ncu ($NCU)"; exit 1; }
net=${NCU_NETWORK:-munin}
rows=${NCU_ROWS:-416}
what=(--set full) suffix=""
[ -n "${NCU_METRICS:-}" ] && { what=(--metrics "$NCU_METRICS"); suffix=-metrics-${NCU_TAG:-set}; }
for kl in ${NCU_LAUNCHES:-jt_collect:43 jt_collect:40 jt_reduce_cal:33}; do
  k=${kl%%:*} skip=${kl##*:}
  f="$RAW/jtree-ncu-$k-$skip$suffix.txt"
  echo "== $k invocation $skip ($net, $rows rows)" | tee -a "$RAW/jtree-ncu.txt"
  timeout 300 "$NCU" "${what[@]}" -k "$k" --launch-skip "$skip" --launch-count 1 \
    "$PCBENCH" jtree "$NETS/$net.bif.gz" --rows "$rows" --cpu-rows 1 --mpe-rows 1 --repeat-rows 1 --profile-rows 0 \
    > "$f" 2>&1
  echo "rc $?" | tee -a "$RAW/jtree-ncu.txt"
  grep -E "Grid Size|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|L2 Hit|L1/TEX Hit|Block Limit|dram__|lts__|==ERROR" "$f" | tee -a "$RAW/jtree-ncu.txt"
done
