## One rank of the MPI tests (test-mpi.R starts it under mpirun): runs every case of
## mpi-cases.R with cluster = "mpi" and saves, per case, the fitted object and this rank's
## gpupc_last_run()$ranks and the most rounds one of its exchanges took, or the error, to
## OUT/rank<r>.rds.
## Usage: Rscript mpi-rank.R MODE OUT CASES_FILE
args <- commandArgs(trailingOnly = TRUE)
mode <- args[1]
out <- args[2]
suppressPackageStartupMessages(library(gpupc))
rank <- Rmpi::mpi.comm.rank(0L)
source(args[3])
cases <- mpi_cases(mode, rank)
res <- lapply(cases, function(f) {
  # the most rounds an exchange of the case took
  assign("allgather_rounds", 0, envir = gpupc:::.gpupc_state)
  tryCatch(list(fit = f("mpi"), ranks = gpupc_last_run()$ranks,
                rounds = get("allgather_rounds", envir = gpupc:::.gpupc_state)),
           error = function(e) list(error = conditionMessage(e), class = class(e)))
})
saveRDS(res, file.path(out, sprintf("rank%d.rds", rank)))
invisible(Rmpi::mpi.finalize())
