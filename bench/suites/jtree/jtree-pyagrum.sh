#!/usr/bin/env bash
# Ours against pyAgrum in one run on one machine, without R: pcbench jtree's GPU batch of 10,000
# evidence sets (5% of the nodes observed; GPU = CPU engine bit for bit on its first rows), then
# pyAgrum's LazyPropagation on 16 one-thread processes (bench/baselines/pyagrum-bench.py batch, PYCAP
# seconds per network), network by network; the last lines are the table (ours, pyAgrum's 10,000
# sets extrapolated from its rate, the ratio). bench/run jtree pyagrum runs it with PCBENCH,
# NETS, RAW, BENCH and DEV set (pyAgrum's wheel in DEV).
#     -> jtree-pyagrum.txt (every run's output and the table), pyagrum-batch-same-run.csv
set -uo pipefail
: "${PCBENCH:?}" "${NETS:?}" "${RAW:?}" "${BENCH:?}" "${DEV:?}"
export LC_ALL=C
out=$RAW/jtree-pyagrum.txt
nets=${PYAGRUM_NETWORKS:-andes pigs munin diabetes mildew barley link}
W=$(mktemp -d)
python3 -m pip install --quiet --no-index --no-deps --target "$W/pyag" "$DEV"/pyagrum-*.whl > /dev/null 2>&1 || echo "pyAgrum wheel: not installed" | tee -a "$out"
for n in $nets; do
  echo "== ours, $n" >> "$out"
  timeout 120 "$PCBENCH" jtree "$NETS/$n.bif.gz" --rows 10000 --cpu-rows 2 --mpe-rows 2 --repeat-rows 500 --profile-rows 0 >> "$out" 2>&1
  echo "rc $?" >> "$out"
done
echo "== pyAgrum" >> "$out"
env PYTHONPATH="$W/pyag" PYTHONUNBUFFERED=1 timeout "${PYB_S:-240}" python3 "$BENCH/baselines/pyagrum-bench.py" batch \
  "$RAW/pyagrum-batch-same-run.csv" "${PYCAP:-3}" "${THREADS:-16}" $(for n in $nets; do echo "$NETS/$n.bif.gz"; done) >> "$out" 2>&1
echo "rc $?" >> "$out"
# the table: ours (s for 10,000 sets), pyAgrum's 16 processes (10,000 extrapolated), the ratio
awk '/^== ours, /{n=$3} /batch of 10000/{s=$0; sub(/.*observed\): GPU /, "", s); split(s, a, " "); ours[n]=a[1]}
     /GPU vs CPU/{par[n]=($0 ~ /identical: true/ && $0 !~ /diff [0-9.]*[1-9]/) ? "identical" : "DIFFERS"}
     /pyAgrum [0-9]+ processes/{sub(":", "", $1); match($0,/10,000: [0-9]+ s/); py[$1]=substr($0,RSTART+8,RLENGTH-10)}
     END{print "network | ours, 10,000 sets (s) | GPU = CPU | pyAgrum 16 processes, 10,000 sets (s) | ours over pyAgrum";
         for (k in ours) printf "%s | %s | %s | %s | %s\n", k, ours[k], par[k], (k in py) ? py[k] : "-", (k in py && ours[k] > 0) ? sprintf("%.0fx", py[k] / ours[k]) : "-"}' "$out" | tee -a "$out"
rm -rf "$W"
