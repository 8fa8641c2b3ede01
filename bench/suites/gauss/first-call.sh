#!/usr/bin/env bash
# The first GPU call of an R process, with the kernel cache empty, warm (filled by an earlier
# process) and off (compiled in memory every time), for the Gaussian (both orders) and discrete
# tests; each row a fresh Rscript process. An empty cache's rows also start the driver's own
# cache (CUDA_CACHE_PATH) empty, as on a machine that never ran CUDA. Then pcbench's per-family
# NVRTC and cache-read times.
#
#   RSCRIPT=... PCBENCH=... bash bench/suites/gauss/first-call.sh OUTDIR
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?OUTDIR}
mkdir -p "$out"
RS=${RSCRIPT:-Rscript}
root=$(mktemp -d /tmp/gpupc-kcache.XXXXXX)
csv="$out/first-call.csv"
echo "kind,cache,p,n,probe_s,first_s,second_s,setup_s,compile_s,compile_cached,search_s,max_level" > "$csv"
row() { GPUPC_KERNEL_CACHE=$1 "$RS" "$here/first-call.R" "$2" "$3" "${@:4}" >> "$csv" 2>> "$out/first-call.err"; }
for kind in gauss fast discrete; do
  cache=$root/$kind; mkdir -p "$cache"
  CUDA_CACHE_PATH=$(mktemp -d /tmp/cuda-cache.XXXXXX) row "$cache" "$kind" empty
  row "$cache" "$kind" warm
  row "$cache" "$kind" warm
  row off "$kind" off
done
# the anchor's size: p = 1643, n = 850, with the cache the Gaussian rows filled
row "$root/gauss" gauss warm 1643 850
cat "$csv"
if [ -n "${PCBENCH:-}" ]; then
  CUDA_CACHE_PATH=$(mktemp -d /tmp/cuda-cache.XXXXXX) "$PCBENCH" kernels --cache "$root/pcbench" | tee "$out/kernels.csv"
fi
rm -rf "$root"
cat "$out/first-call.err" 2>/dev/null
