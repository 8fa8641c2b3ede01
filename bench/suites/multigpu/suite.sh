# Suite multigpu: several GPUs of one host (run it on a machine with two or more): parity through
# R and with pcbench, then one GPU against all of them in the same process. Sourced by bench/run;
# multigpu-device.sh does the work (and runs on its own as well).
suite_title="several GPUs: parity (every test kind, triple checks, junction-tree batches) and 1 GPU against all"
suite_parts='
parity      5  gpu  multigpu-r.R parity: every test kind and order, the triple checks, junction-tree batches on one GPU, all, the default, all without peer copies, the CPU backend
check       4  gpu  pcbench multi parity, Gaussian (20 cases) and discrete (12 cases): k GPUs = 1 GPU = CPU
g20k        8  gpu  gaussCItest through R, p = 20000, n = 3189: levels 0-1 and all levels, 1 GPU against all
cmiknn      7  gpu  cmiknnCItest through R, p = 50, n = 2000, 1 GPU against all
jtree       7  gpu  gpu_query() through R, Munin, 100,000 evidence sets, 1 GPU against all
munin       7  gpu  pcbench multi discrete: MUNIN forward-sampled, n = 10^6, all levels, 1 GPU against all
g55k        7  gpu  pcbench multi gauss: p = 55,572, n = 3189, levels 0-1, 1 GPU against all
g55k-r     10  gpu  gaussCItest through R, p = 55,572, n = 3189, every level: 1 GPU against the default devices
fault       5  gpu  multigpu-r.R fault: the last GPU failing in every test kind
'
S=$BENCH/suites/multigpu
for st in parity check g20k cmiknn jtree munin g55k g55k-r fault; do
  eval "part_$st() { needs r pcbench gpu || return 1; step multigpu-$st 598 env OUT=\"\$RAW\" TMPDIR=\"\$TMPD\" bash \"\$S/multigpu-device.sh\" $st; }"
done
