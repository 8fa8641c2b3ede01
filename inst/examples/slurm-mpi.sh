#!/bin/bash
## A Slurm batch script for mpi-pc.R: 4 ranks on 2 nodes, each rank with 8 cores for its share of
## the tests (gpu_pc()'s numCores = NULL takes the cores Slurm gives it). For GPU ranks add
## `#SBATCH --gpus-per-task=1`: a rank without `devices` takes the GPU of its place on its node.
## Submit with `sbatch slurm-mpi.sh`.
#SBATCH --job-name=gpupc-mpi
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00

module load R openmpi 2>/dev/null || true   # site-specific: R, Open MPI and Rmpi built against it
export OMP_THREAD_LIMIT=$SLURM_CPUS_PER_TASK
# srun starts the ranks through PMIx (or PMI-2: --mpi=pmi2), whichever the site's MPI was built for
srun --mpi=pmix Rscript mpi-pc.R
# bootstrap arc strengths over the ranks: uncomment the gpu_boot_strength() lines of mpi-pc.R
