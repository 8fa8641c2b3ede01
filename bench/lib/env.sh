# Sourced by bench/run (and by the suites' own device scripts): sets R (the Rscript to call),
# PCBENCH, DEV, OUT, NETS and the library path, the same way on every machine.
#
# On the GPU machine (BENCH_DEVICE=1, bench/run --device; the default when this file is sourced
# by a script of its own) nothing is installed: R comes from the portable bundle $DEV/r.tar.xz,
# unpacked into a folder of its own ($RDIR; bundles of other runs must not mix with it), with
# the socket module for bnlearn's cluster ($DEV/socket-addon.tar.xz, made by
# bench/lib/make-socket-addon.sh) and an Rscript that takes the options cluster workers are
# started with (portable-rscript.sh). pcbench is $DEV/pcbench. Elsewhere (BENCH_DEVICE=0) R is
# the Rscript on the PATH ($RSCRIPT to choose another) and pcbench is $PCBENCH, else the one
# `cargo build --release -p pcbench` left in src/rust/target/release.
BENCH_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH=$(dirname "$BENCH_LIB")
ROOT=$(dirname "$BENCH")
DEV=${DEV:-.rbundle}
case "$DEV" in /*) ;; *) DEV="$ROOT/$DEV" ;; esac
OUT=${OUT:-/tmp/out}
RDIR=${RDIR:-/tmp/r-device}
mkdir -p "$OUT"
if [ "${BENCH_DEVICE:-1}" = 1 ]; then
  if [ ! -x "$RDIR/R/bin/Rscript" ] && [ -f "$DEV/r.tar.xz" ]; then
    mkdir -p "$RDIR" && tar -xJf "$DEV/r.tar.xz" -C "$RDIR"
    if [ -f "$DEV/socket-addon.tar.xz" ]; then
      tar -xJf "$DEV/socket-addon.tar.xz" -C "$RDIR" && rm -rf "$RDIR/R/hostlib"
      cp "$BENCH_LIB/portable-rscript.sh" "$RDIR/R/bin/Rscript"
    fi
  fi
  R=${RSCRIPT:-$RDIR/R/bin/Rscript}
  PCBENCH=${PCBENCH:-$DEV/pcbench}
  # a newer gpupc (and packages the tarball lacks, such as Rmpi) installed into $DEV/lib comes
  # before the copies packed in r.tar.xz
  [ -d "$DEV/lib" ] && export R_LIBS="$DEV/lib${R_LIBS:+:$R_LIBS}"
else
  R=${RSCRIPT:-$(command -v Rscript || true)}
  PCBENCH=${PCBENCH:-$ROOT/src/rust/target/release/pcbench}
fi
# NVRTC: gpupc and pcbench look for libnvrtc.so.13 / .12 on the loader path
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
# single-threaded BLAS: concurrent single-threaded baselines must not oversubscribe the cores
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
# BIF files: the bundled networks and those the bundle carries (the junction-tree suite's
# diabetes, mildew, barley are not in the package)
NETS=${NETS:-/tmp/gpupc-bench-networks}
mkdir -p "$NETS"
for f in "$ROOT"/inst/extdata/networks/*.bif.gz "$DEV"/*.bif.gz "$DEV"/networks/*.bif.gz; do
  [ -f "$f" ] && [ ! -f "$NETS/$(basename "$f")" ] && cp "$f" "$NETS/"
done
export GPUPC_NETWORKS=$NETS
