# Suite mpi: one search over the ranks of an MPI job (cluster = "mpi") against the same call in
# one process, on the GPUs of one host (one rank per GPU), through R. Sourced by bench/run;
# mpi-device.sh does the work (and runs on its own as well). Needs Rmpi in $DEV/lib (copied from
# this machine's r-cran-rmpi) and an mpirun (the host's, or $DEV/openmpi.tar.xz).
suite_title="MPI ranks: one process against 1, 2, 4 ranks of one GPU each, identical results"
suite_parts='
cmiknn      8  gpu  cmiknnCItest, p = 100, n = 2000, knn = 0.1, 50 permutations, every level (CMI_P, CMI_PERM, CMI_MMAX)
gauss       6  gpu  gaussCItest, a random linear SEM, p = 20000, n = 1000, every level (GAUSS_P, GAUSS_N; SINGLES, RANKS)
boot        4  gpu  gpu_boot_strength(), gaussCItest, p = 200, n = 2000, 32 resamples (BOOT_P, BOOT_N, BOOT_R)
overhead    2  cpu  the MPI path of one rank against the plain call, alternately in one process under mpirun -np 1 (gaussCItest, p = 3000, n = 1000, CPU backend, 16 runs each; OVERHEAD_REPS)
g55k        10 gpu  gaussCItest, p = 55,572, n = 3189 (C made on the GPU), every level; G55K_SINGLES / G55K_RANKS choose the runs (default: the first GPU and 2 ranks; a second call on the same machine adds "default" and 1 rank to the same table)
'
S=$BENCH/suites/mpi
part_cmiknn() {
  needs r gpu || return 1
  step mpi-cmiknn 590 env OUT="$RAW" TMPDIR="$TMPD" bash "$S/mpi-device.sh" cmiknn --p "${CMI_P:-100}" --n 2000 \
    --knn 0.1 --perm "${CMI_PERM:-50}" --m-max "${CMI_MMAX:-Inf}"
}
part_gauss() {
  needs r gpu || return 1
  step mpi-gauss 590 env OUT="$RAW" TMPDIR="$TMPD" bash "$S/mpi-device.sh" gauss --p "${GAUSS_P:-20000}" --n "${GAUSS_N:-1000}"
}
part_boot() {
  needs r gpu || return 1
  step mpi-boot 590 env OUT="$RAW" TMPDIR="$TMPD" bash "$S/mpi-device.sh" boot --p "${BOOT_P:-200}" --n "${BOOT_N:-2000}" \
    --R "${BOOT_R:-32}"
}
part_g55k() {
  needs r gpu || return 1
  local cor=$TMPD/c55572.bin
  [ "$dry" = 1 ] || [ -s "$cor" ] || timeout 200 python3 "$BENCH/suites/multigpu/multigpu-cor.py" 55572 3189 1 "$cor" > "$RAW/mpi-g55k-cor.txt" 2>&1
  step mpi-g55k 590 env OUT="$RAW" TMPDIR="$TMPD" KEEP=1 TAG=g55k SINGLES="${G55K_SINGLES:-first}" RANKS="${G55K_RANKS:-2}" \
    SINGLE_S="${SINGLE_S:-330}" RANK_S="${RANK_S:-215}" bash "$S/mpi-device.sh" gauss --cor "$cor" --p 55572 --n 3189
}
part_overhead() {
  needs r || return 1
  command -v mpirun > /dev/null || { echo "part overhead: this machine has no mpirun"; return 1; }
  step mpi-overhead 600 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --bind-to none -np 1 -x R_LIBS "$R" "$S/mpi-bench.R" overhead gauss --p 3000 --n 1000 --backend cpu \
    --reps "${OVERHEAD_REPS:-16}"
}
