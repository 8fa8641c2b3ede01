# Sourced by the device scripts (device-*.sh): unpacks the portable R of $DEV/r.tar.xz into a
# folder of its own (bundles of other scripts must not mix with it), puts CUDA's NVRTC on the
# library path and sets R (the Rscript to call), OUT and DEV.
DEV=${DEV:-.rbundle}
OUT=${OUT:-/tmp/out}
RDIR=${RDIR:-/tmp/r-device}
mkdir -p "$OUT" "$RDIR"
[ -x "$RDIR/R/bin/Rscript" ] || tar -xJf "$DEV/r.tar.xz" -C "$RDIR"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(dirname "$(find / -name 'libnvrtc.so.1[23]*' -not -path '/proc/*' 2>/dev/null | head -1)" 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
R="$RDIR/R/bin/Rscript"
