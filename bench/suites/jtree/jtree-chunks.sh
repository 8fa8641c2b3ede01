#!/usr/bin/env bash
# Rows per chunk on the GPU: the same pcbench jtree batch with the chunk held to at most
# CHUNKS rows each (GPUPC_JT_CHUNK_ROWS; "0" is the memory plan's own choice), network by
# network, with the launch profile of the first 2,000 rows. A smaller chunk makes every
# message (separator cells x rows x 8 bytes) smaller, so more of the clique cells that share a
# separator cell find it in L2; it also makes more launches of fewer rows.
# bench/run jtree chunks runs it with PCBENCH, NETS and RAW set.
#     -> jtree-chunks.txt (every run's output)
set -uo pipefail
: "${PCBENCH:?}" "${NETS:?}" "${RAW:?}"
out=$RAW/jtree-chunks.txt
for n in ${CHUNK_NETWORKS:-munin diabetes link}; do
  for c in ${CHUNKS:-0 256 128 64} ${CHUNK_ROUND2:+$(echo ${CHUNKS:-0 256 128 64} | tr ' ' '\n' | tac)}; do
    echo "== $n, chunk cap $c" | tee -a "$out"
    GPUPC_JT_CHUNK_ROWS=$c timeout 120 "$PCBENCH" jtree "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 2 \
      --repeat-rows 500 --profile-rows "${CHUNK_PROFILE_ROWS:-2000}" >> "$out" 2>&1
    echo "rc $?" | tee -a "$out"
    grep -E "batch of|GPU vs CPU" "$out" | tail -2
  done
done
