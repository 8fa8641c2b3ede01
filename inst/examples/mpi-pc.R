## One gpu_pc() search over the ranks of an MPI job: every rank runs this same script
## (`mpirun -np 4 Rscript mpi-pc.R`, or slurm-mpi.sh under Slurm), reads the same data and makes
## the same call; the ranks share each level's tests and every rank gets the whole result.
library(gpupc)
library(pcalg)

set.seed(1)   # the same data on every rank (or read the same file on every rank)
X <- rmvDAG(2000, randomDAG(200, prob = 0.05))
fit <- gpu_pc(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01, p = ncol(X),
              cluster = "mpi")
run <- gpupc_last_run()
if (run$ranks$rank == 0) {
  print(fit)
  print(run$ranks$levels)   # per level: edges, this rank's share, bytes and seconds exchanged
  saveRDS(fit, "fit.rds")   # one rank writes; every rank holds the same object
}
## Bootstrap arc strengths instead: a block of the 200 resamples per rank, the same seed on every
## rank (the resamples' rows are drawn from it), every rank returning bnlearn's bn.strength.
# set.seed(2)
# st <- gpu_boot_strength(list(data = X), gaussCItest, alpha = 0.01, p = ncol(X), R = 200,
#                         cluster = "mpi")
invisible(Rmpi::mpi.finalize())
