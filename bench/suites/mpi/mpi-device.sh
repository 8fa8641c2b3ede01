#!/usr/bin/env bash
# MPI ranks on the GPUs of one host, standing in for one host per GPU: the same gpu_skeleton()
# call in one process on the first GPU (the reference), in one process on the default devices,
# and with cluster = "mpi" over 1, 2, ... ranks (one GPU each, by local rank); then the table
# (seconds, ratio to the first GPU, identical or not, bytes exchanged per level). From the
# repository root:
#
#   DEV=.rbundle bash bench/suites/mpi/mpi-device.sh KIND [mpi-bench.R options]
#
# KIND: cmiknn or gauss (mpi-bench.R's), or boot: gpu_boot_strength() through mpi-boot.R (one
# process on its default devices, then 1, 2, ... ranks of one GPU each, a block of resamples per
# rank; its options: --p 200 --n 2000 --R 32 ...). RANKS (default: 1, 2 and 4, at most the GPUs)
# the rank counts; SINGLE_S / RANK_S the cap of each run. SINGLES (default "first default") the
# one-process runs (first, default, or K for the first K GPUs; K@per-device with one CMI-kNN host
# pool per device); KEEP=1 keeps the earlier runs' results in the work folder, so that a later
# call on the same machine adds rows to the same table (a long case split over two calls); TAG
# names that folder. GPUPC_RANK_MOVE, passed on to the ranks: 0 keeps each rank's dealt slices,
# 1 moves them on GPUs' levels split by edges too (by default they move by rows, and by edges
# on the CPU). GPUPC_CMIKNN_OVERLAP=0 runs CMI-kNN's rounds one at a time (by default two at a
# time), GPUPC_CMIKNN_FEED=0 deals several devices blocks of a level's edges (by default they take
# edges from one feed). Runs with any of these set write results of their own, so a KEEP=1 call
# with one set adds rows beside the default's. Open MPI is the host's, else the one carried in $DEV/openmpi.tar.xz (Debian's
# openmpi-bin, libopenmpi3, openmpi-common and libpmix2 files, the build Rmpi in $DEV/lib links
# to), unpacked into /tmp/ompi and found through OPAL_PREFIX.
set -u
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../lib/env.sh"
KIND=${1:?KIND}; shift
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
RANKS=${RANKS:-$(for k in 1 2 4; do [ "$k" -le "$NG" ] && printf '%s ' "$k"; done)}
if ! command -v mpirun > /dev/null && [ -f "$DEV/openmpi.tar.xz" ]; then
  mkdir -p /tmp/ompi && tar -xJf "$DEV/openmpi.tar.xz" -C /tmp/ompi
  export OPAL_PREFIX=/tmp/ompi/usr PATH=/tmp/ompi/usr/bin:$PATH
  export LD_LIBRARY_PATH=/tmp/ompi/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
# the machine runs commands as root; a container's ptrace rules may refuse CMA's single copy
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "mpi-device $(date -u +%FT%TZ): $NG GPU(s); $(mpirun --version 2>&1 | head -1); kind $KIND; ranks $RANKS"
W=${TMPDIR:-/tmp}/mpi-$KIND${TAG:+-$TAG}
# runs with a setting under comparison keep results of their own beside the others (KEEP=1)
VARIANT=${GPUPC_RANK_MOVE:+-move$GPUPC_RANK_MOVE}${GPUPC_CMIKNN_OVERLAP:+-overlap$GPUPC_CMIKNN_OVERLAP}${GPUPC_CMIKNN_FEED:+-feed$GPUPC_CMIKNN_FEED}
[ "${KEEP:-0}" = 1 ] || rm -rf "$W"
mkdir -p "$W"
run() {  # run SECONDS CMD...: the exit status and seconds after the command's own lines
  local secs=$1 t0=$SECONDS; shift
  timeout "$secs" "$@" 2>&1
  echo "   (rc $?, $((SECONDS - t0)) s)"
}
if [ "$KIND" = boot ]; then
  run "${SINGLE_S:-300}" "$R" "$HERE/mpi-boot.R" single "$W/single.rds" "$@"
  for k in $RANKS; do
    run "${RANK_S:-300}" mpirun --bind-to none --oversubscribe -np "$k" -x PATH -x LD_LIBRARY_PATH -x R_LIBS ${GPUPC_RANK_MOVE:+-x GPUPC_RANK_MOVE} \
      "$R" "$HERE/mpi-boot.R" rank "$W/ranks-$k.rds" "$@"
  done
  "$R" "$HERE/mpi-boot.R" table "$W"
  exit 0
fi
for s in ${SINGLES-first default}; do
  # an entry DEVICES@POOL runs with GPUPC_CMIKNN_POOL=POOL (per-device: each device its own pool)
  d=${s%@*} pool=; [ "$d" != "$s" ] && pool=${s#*@}
  [ "$d" = default ] && [ "$NG" -lt 2 ] && continue
  case $d in first|default) ;; *) [ "$d" -le "$NG" ] || continue ;; esac
  run "${SINGLE_S:-300}" env ${pool:+GPUPC_CMIKNN_POOL=$pool} "$R" "$HERE/mpi-bench.R" single "$KIND" "$W/single-${s/@/-}$VARIANT.rds" --devices "$d" "$@"
done
for k in $RANKS; do
  # --bind-to none: each rank's host threads may use every core (Open MPI binds a rank to one
  # core by default)
  run "${RANK_S:-300}" mpirun --bind-to none --oversubscribe -np "$k" -x PATH -x LD_LIBRARY_PATH -x R_LIBS ${GPUPC_RANK_MOVE:+-x GPUPC_RANK_MOVE} \
    ${GPUPC_CMIKNN_OVERLAP:+-x GPUPC_CMIKNN_OVERLAP} "$R" "$HERE/mpi-bench.R" rank "$KIND" "$W/ranks-$k$VARIANT.rds" "$@"
done
"$R" "$HERE/mpi-bench.R" table "$W"
