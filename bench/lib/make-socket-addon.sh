#!/usr/bin/env bash
# bnlearn's cluster (parallel::makePSOCKcluster) needs R's socket module, which
# the portable-R tool (portable-r) leaves out of the bundle (modules/internet.so). This packs that module
# and the shared libraries it needs that the GPU machine lacks (HOST_LIBS: a file naming the
# libraries the GPU machine has; without it every library is packed)
# into .rbundle/socket-addon.tar.xz; bench/run unpacks it over the bundle and
# installs bench/lib/portable-rscript.sh as its Rscript (the workers are started as
# `Rscript --default-packages=... -e ...`, which the bundle's own Rscript does not take).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
host_libs=${HOST_LIBS:-/dev/null}
mod=$(R RHOME)/modules/internet.so
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/R/modules" "$work/R/syslib" "$root/.rbundle"
cp "$mod" "$work/R/modules/"
for l in $(ldd "$mod" | awk '/=>/ {print $3}'); do
  b=$(basename "$l")
  case "$b" in libR.so) continue ;; esac   # the bundle's own
  grep -qxF "$b" "$host_libs" 2>/dev/null || cp -L "$l" "$work/R/syslib/"
done
tar -cJf "$root/.rbundle/socket-addon.tar.xz" -C "$work" R
echo "wrote .rbundle/socket-addon.tar.xz ($(ls "$work/R/syslib" | wc -l) libraries)"
