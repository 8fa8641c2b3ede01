#!/usr/bin/env bash
# Two pcbench builds on one machine in one run: PCBENCH_BASE (the build before a change) and
# PCBENCH (the build with it), network by network, each run twice in alternating order (base,
# new, new, base) so that neither always runs first. Every run checks its GPU against the CPU
# engine bit for bit on the first rows and a second GPU run of the batch; the first run of each
# build also prints the launch profile. bench/run jtree ab runs it with PCBENCH, PCBENCH_BASE
# (default: pcbench-base beside pcbench), NETS and RAW set (bench/lib/env.sh).
#     -> jtree.csv, jtree-profile.csv (the new build), jtree-base.csv, jtree-profile-base.csv,
#        jtree-ab.txt (both builds' output, in order)
# With PCBENCH_ALT a third build (a variant of the new one) runs too, in the order base, new, alt,
# alt, new, base -> jtree-alt.csv, jtree-profile-alt.csv (jtree-cpu-alt.csv).
# With AB_CPU=1 (bench/run jtree ab-cpu, any machine) the CPU engines alone, on THREADS threads:
# each build times a few evidence sets (--cpu-only; the GPU engine is not run).
#     -> jtree-cpu.csv, jtree-cpu-base.csv, jtree-ab-cpu.txt
set -uo pipefail
: "${PCBENCH:?}" "${NETS:?}" "${RAW:?}"
BASE=${PCBENCH_BASE:-$(dirname "$PCBENCH")/pcbench-base}
[ -x "$BASE" ] || { echo "jtree-ab: no base build at $BASE (PCBENCH_BASE)"; exit 1; }
ALT=${PCBENCH_ALT:-}
[ -z "$ALT" ] || [ -x "$ALT" ] || { echo "jtree-ab: no build at $ALT (PCBENCH_ALT)"; exit 1; }
export LC_ALL=C
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
J="$RAW/jtree-ab.txt"
cpu=${AB_CPU:-0}
[ "$cpu" = 1 ] && J="$RAW/jtree-ab-cpu.txt"
# rows of each network: the batch, the CPU engine's rows, the MPE rows, the repeated rows, the profile's rows
args_for() {
  if [ "$cpu" = 1 ]; then
    case $1 in
      andes|pigs) echo "--cpu-only --rows 400 --cpu-rows 400" ;;
      munin|diabetes|mildew) echo "--cpu-only --rows 8 --cpu-rows 8" ;;
      *) echo "--cpu-only --rows 4 --cpu-rows 4" ;;
    esac
    return
  fi
  case $1 in
    andes|pigs) echo "--rows 10000 --cpu-rows 200 --mpe-rows 50 --repeat-rows 2000 --profile-rows 2000" ;;
    munin|diabetes|mildew) echo "--rows 10000 --cpu-rows 8 --mpe-rows 8 --repeat-rows 1000 --profile-rows 2000" ;;
    *) echo "--rows 10000 --cpu-rows 2 --mpe-rows 4 --repeat-rows 500 --profile-rows 1000" ;;
  esac
}
run() {  # build (base|new|alt) network round
  local tag="" bin=$PCBENCH suffix=""
  [ "$cpu" = 1 ] && tag=-cpu
  [ "$1" = base ] && { bin=$BASE; suffix=-base; }
  [ "$1" = alt ] && { bin=$ALT; suffix=-alt; }
  local csv=$RAW/jtree$tag$suffix.csv prof=$RAW/jtree-profile$suffix.csv
  local a
  a=$(args_for "$2")
  [ "$3" = 2 ] && a=$(echo "$a" | sed 's/--profile-rows [0-9]*/--profile-rows 0/')
  echo "== build $1, $2, round $3"
  if [ "$cpu" = 1 ]; then
    timeout 300 "$bin" jtree --csv "$csv" --threads "${THREADS:-0}" "$NETS/$2.bif.gz" $a 2>&1
  else
    timeout 120 "$bin" jtree --csv "$csv" --profile-csv "$prof" "$NETS/$2.bif.gz" $a 2>&1
  fi
  echo "rc $?"
}
for n in ${AB_NETWORKS:-andes pigs munin diabetes mildew barley link}; do
  if [ -n "$ALT" ]; then
    { run base "$n" 1; run new "$n" 1; run alt "$n" 1; run alt "$n" 2; run new "$n" 2; run base "$n" 2; } >> "$J"
  else
    { run base "$n" 1; run new "$n" 1; run new "$n" 2; run base "$n" 2; } >> "$J"
  fi
  el "$n done"
done
grep -E "^== build|max \|marginal diff\||batch|CPU [0-9]+ rows|rc " "$J" | head -200
el "all done"
