## gpu_boot_strength() over the ranks of an MPI job against the same call in one process.
##
##   Rscript mpi-boot.R single OUT.rds [options]
##   mpirun -np K Rscript mpi-boot.R rank OUT.rds [options]
##   Rscript mpi-boot.R table DIR
##
## Options: --p 200 --n 2000 (a random linear SEM of p variables, expected degree 4, n rows, seed
## 3), --R 32 resamples of all rows (--m fewer), --alpha 0.01, --m-max Inf, --backend cuda (cpu
## runs it without a GPU), --threads (numCores; default every core, which ranks of one host
## share). Every rank builds the same data and draws the same resamples (set.seed(11) before the
## call).
## single: one process, the resamples one after another on its default devices.
## rank: the same call with cluster = "mpi", a block of resamples per rank (one GPU each, by its
## place on its host); every rank is warmed on a small call first (its context and kernels), the
## ranks meet at a barrier, and rank 0 saves the result and its time.
## table: every OUT.rds of DIR, one row each: seconds, the single run's seconds over these, and
## whether the result is identical() to the single run's.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "lib", "lib.R"))
options(cli.progress_show_after = Inf)
args <- commandArgs(TRUE)
mode <- args[1]
opt <- option_reader(args)

if (mode == "table") {
  dir <- args[2]
  rr <- read_runs(dir, "^single")
  runs <- rr$runs; ref_name <- rr$ref_name; ref <- rr$ref
  for (nm in names(runs)[order(vapply(runs, function(r) r$order, 0))]) {
    r <- runs[[nm]]
    verdict <- if (nm == ref_name) "reference" else if (identical(r$strength, ref$strength)) "identical" else "differs"
    ex <- if (is.null(r$ranks)) "" else sprintf(", rank 0: %d resamples in %.3f s, exchanged %.3f MB in %.3f s, input check %.3f s",
                                                r$ranks$resamples, r$ranks$local_s,
                                                (r$ranks$bytes_sent + r$ranks$bytes_received) / 1e6,
                                                r$ranks$allgather_s, r$ranks$check_s)
    edges <- attr(r$strength, "edges")
    cat(sprintf("%s | %s | %.3f s | %.2fx | %s | edges per resample %.1f (%d-%d), pairs of strength > 0.5: %d | %s%s\n",
                r$label, r$how, r$seconds, ref$seconds / r$seconds, verdict, mean(edges), min(edges),
                max(edges), sum(r$strength$strength > 0.5) / 2,
                paste(sprintf("%s %.3f", names(r$phases), r$phases), collapse = ", "), ex))
  }
  quit(status = 0)
}

out <- args[2]
p <- as.integer(opt("p", 200)); n <- as.integer(opt("n", 2000))
R <- as.integer(opt("R", 32)); m <- opt("m", NA)
m <- if (is.na(m)) NULL else as.integer(m)
alpha <- as.numeric(opt("alpha", 0.01)); mm <- as.numeric(opt("m-max", Inf))
backend <- opt("backend", "cuda")
threads <- opt("threads", NA)
threads <- if (is.na(threads)) NULL else as.numeric(threads)
set.seed(3)
dag <- randomDAG(p, prob = 4 / (p - 1))
X <- if (gauss_generator(p, n) == "rmvDAG") rmvDAG(n, dag) else rmv_sparse(n, dag)
label <- sprintf("gpu_boot_strength gauss p=%d n=%d R=%d m=%s alpha=%g m.max=%g", p, n, R,
                 if (is.null(m)) n else m, alpha, mm)
boot <- function(data, reps, rows = NULL, ...) {
  set.seed(11)
  gpu_boot_strength(list(data = data), gaussCItest, alpha, p = ncol(data), R = reps, m = rows,
                    m.max = mm, backend = backend, numCores = threads, ...)
}
small <- X[1:300, 1:min(p, 20)]
on_gpus <- function(d) if (length(d)) sprintf(" (GPU %s)", paste(d, collapse = ",")) else ""

if (mode == "single") {
  invisible(boot(small, 2))
  gc()
  secs <- system.time(st <- boot(X, R, m))[["elapsed"]]
  lr <- gpupc_last_run()
  how <- sprintf("one process, %s%s", lr$backend, on_gpus(lr$devices))
  saveRDS(list(label = label, how = how, seconds = secs, strength = st, phases = lr$phases, order = 1),
          out, compress = FALSE)
  cat(sprintf("%s | %s | %.3f s\n", label, how, secs))
} else if (mode == "rank") {
  mpi <- function(f) getExportedValue("Rmpi", f)
  rank <- mpi("mpi.comm.rank")(0L); size <- mpi("mpi.comm.size")(0L)
  invisible(boot(small, 2 * size, cluster = "mpi"))
  gc()
  mpi("mpi.barrier")(0L)
  secs <- system.time(st <- boot(X, R, m, cluster = "mpi"))[["elapsed"]]
  lr <- gpupc_last_run()
  if (rank == 0) {
    how <- sprintf("%d MPI rank(s), rank 0 on %s%s", size, lr$backend, on_gpus(lr$devices))
    saveRDS(list(label = label, how = how, seconds = secs, strength = st, phases = lr$phases,
                 ranks = lr$ranks, order = 1 + size), out, compress = FALSE)
    cat(sprintf("%s | %s | %.3f s\n", label, how, secs))
  }
  invisible(mpi("mpi.finalize")())
} else stop("unknown mode ", mode)
