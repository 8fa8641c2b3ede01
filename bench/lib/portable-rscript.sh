#!/bin/sh
# Rscript for the portable R bundle (portable-r) that also takes Rscript's options,
# as parallel::makePSOCKcluster() passes them to its workers (`--default-packages=...`). Install it
# over the bundle's bin/Rscript on the GPU machine: cp bench/lib/portable-rscript.sh /tmp/r/R/bin/Rscript
here="$(cd "$(dirname "$0")" && pwd)"
while [ $# -gt 0 ]; do
  case "$1" in
    --default-packages=*) R_DEFAULT_PACKAGES="${1#--default-packages=}"; export R_DEFAULT_PACKAGES; shift ;;
    --vanilla|--no-environ|--no-site-file|--no-init-file|--no-restore|--verbose) shift ;;
    *) break ;;
  esac
done
if [ "$1" = "-e" ]; then e="$2"; shift 2; exec "$here/R" --no-echo --no-restore -e "$e" --args "$@"; fi
f="$1"; shift; exec "$here/R" --no-echo --no-restore --file="$f" --args "$@"
