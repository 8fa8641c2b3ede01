#!/usr/bin/env bash
# Round budget sweep of the G^2 backend (pcbench --round-budget: tests per round; the default is
# 2^32 / n = 214748 at n = 20000) on LINK and MUNIN, GPU only, from a folder D as for
# device-discrete-s6.sh. Output in OUT/gsquare-budget-s6.txt.
#   bash inst/bench/device-discrete-budget-s6.sh D OUT
set -u
D=${1:?usage: device-discrete-budget-s6.sh D OUT}; OUT=${2:?usage: device-discrete-budget-s6.sh D OUT}
mkdir -p "$OUT"
for nm in link munin; do xz -dc "$D/$nm.bin.xz" > "/tmp/$nm.bin"; done
for b in 214748 429496 858992 1717984; do
  for nm in link munin; do
    echo "== $nm: round budget $b"
    timeout 60 "$D/pcbench" discrete --codes "/tmp/$nm.bin" --backend cuda --repeat 3 --threads 16 --round-budget "$b" 2>&1
  done
done > "$OUT/gsquare-budget-s6.txt"
grep -E "^==|gpu run|gpu: +[01] " "$OUT/gsquare-budget-s6.txt"
