# Suite jtree: junction-tree inference (gpu_jtree / gpu_query / gpu_mpe) on the BIF networks,
# beside gRain and pyAgrum, and the path from data to answers. Sourced by bench/run.
suite_title="junction tree: GPU against our CPU engine, gRain and pyAgrum; the path from data to answers"
suite_parts='
gpu         7  gpu  pcbench jtree on 10 networks (GPU = CPU engine bit for bit, 10,000 evidence sets, launch profile, Munin without cell maps); gRain per evidence set and its one query; the LINK path
baselines   6  gpu  gRain on the large networks beside the path (ALARM, LINK); pyAgrum'"'"'s one query and its 16-process batch
mpe         6  gpu  pyAgrum'"'"'s MPE against ours (pcbench --mpe-out), with gRain and the path beside
check       5  any  jtree-check.R: marginals against gRain (asia, alarm, hepar2, andes, pigs; 100 evidence sets), CPU engine and GPU where there is one
r-profile   1  any  the R profiler over one gpu_query() batch (Munin, 10,000 sets; the GPU where there is one): calls by time, and the phases of gpupc_last_run()
r-ab        5  gpu  two builds of gpupc through R (LIB_BEFORE, LIB_NOW): their answers identical (GPU; the build now'"'"'s GPU = its CPU engine), then gpu_query() on Munin, SETS evidence sets, alternating
r-overhead  1  any  the R side of a batch (evidence read into codes, Munin, 30,000 sets), character and factor columns
ab-cpu      9  any  the CPU engines of the same two builds alone (AB_CPU=1), a few evidence sets per network on THREADS threads
ab          4  gpu  two pcbench builds (PCBENCH_BASE: the build before a change; PCBENCH) in one run, alternating, on the large networks: batch times, launch profiles, each build against the CPU engine bit for bit
tri         5  gpu  the triangulation: the GPU batch with "auto" against "minfill" in one run, network by network (each run against the CPU engine bit for bit), then Munin through R with each
tri-cpu     6  any  the triangulation on the CPU engine alone ("auto" against "minfill", a few evidence sets per network on THREADS threads)
chunks      3  gpu  the GPU batch with its chunks held to CHUNKS rows each (GPUPC_JT_CHUNK_ROWS; 0: the chunk the memory plan gives), network by network
pyagrum     4  gpu  ours (pcbench, GPU) and the 16-process batch of pyAgrum in one run, network by network, and their ratio
ncu         2  gpu  Nsight Compute on single launches of one network'"'"'s first chunk (NCU_NETWORK, NCU_LAUNCHES: kernel:invocation pairs)
'
S=$BENCH/suites/jtree
export R PCBENCH NETS RAW BENCH DEV THREADS
part_gpu() { needs r pcbench gpu bif:diabetes bif:mildew bif:barley || return 1; step gpu 590 bash "$S/jtree-gpu.sh"; }
part_baselines() { needs r gpu python wheel:pyagrum || return 1; step baselines 590 bash "$S/jtree-baselines.sh"; }
part_mpe() { needs r pcbench gpu python wheel:pyagrum || return 1; step mpe 590 bash "$S/jtree-mpe.sh"; }
part_check() {
  needs r || return 1
  step check 590 "$R" "$S/jtree-check.R" "$RAW/jtree-check.csv" "${ROWS:-100}" ${NETWORKS:-asia alarm hepar2 andes pigs}
}
part_ab-cpu() { needs pcbench || return 1; AB_CPU=1 step ab-cpu 590 bash "$S/jtree-ab.sh"; }
part_ab() { needs pcbench gpu bif:diabetes bif:mildew bif:barley || return 1; step ab 590 bash "$S/jtree-ab.sh"; }
part_r-profile() { needs r || return 1; step r-profile 300 "$R" "$S/jtree-r-profile.R" munin "${SETS:-10000}" "${BACKEND:-$( [ "${BENCH_DEVICE:-0}" = 1 ] && echo cuda || echo cpu)}"; }
part_r-ab() { needs r gpu || return 1; step r-ab 590 bash "$S/jtree-r-ab.sh"; }
part_r-overhead() { needs r || return 1; step r-overhead 300 "$R" "$S/jtree-r-overhead.R" munin "${SETS:-30000}"; }
part_tri() { needs r pcbench gpu bif:diabetes bif:mildew bif:barley || return 1; step tri 590 bash "$S/jtree-tri.sh"; }
part_tri-cpu() { needs pcbench bif:diabetes bif:mildew bif:barley || return 1; TRI_CPU=1 step tri-cpu 590 bash "$S/jtree-tri.sh"; }
part_chunks() { needs pcbench gpu bif:diabetes bif:mildew bif:barley || return 1; step chunks 590 bash "$S/jtree-chunks.sh"; }
part_pyagrum() { needs pcbench gpu python wheel:pyagrum bif:diabetes bif:mildew bif:barley || return 1; step pyagrum 590 bash "$S/jtree-pyagrum.sh"; }
part_ncu() { needs pcbench gpu || return 1; step ncu 590 bash "$S/jtree-ncu.sh"; }
