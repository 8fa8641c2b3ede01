# The CPU backend's phases on one Gaussian problem: the input step (checking and copying C), the
# search and R's objects, for the gpupc found on R_LIBS (run it once per build to compare two).
#
#   Rscript bench/suites/gauss/cpu-phases.R [--p 1643] [--n 850] [--threads 2] [--reps 3]
#
# Data: a chain with noise (X[, j] += 0.5 X[, j - 1]), seed 1. Prints one line per m.max with
# the fastest of --reps calls and its phases from gpupc_last_run().
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
args <- commandArgs(TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else as.numeric(args[i + 1]) }
p <- opt("p", 1643); n <- opt("n", 850); threads <- opt("threads", 2); reps <- opt("reps", 3)
set.seed(1)
X <- matrix(rnorm(n * p), n)
X[, 2:p] <- X[, 2:p] + 0.5 * X[, 1:(p - 1)]
st <- list(C = cor(X), n = n)
cat(sprintf("gpupc %s at %s, p = %d, n = %d, %d threads\n", packageVersion("gpupc"), find.package("gpupc"), p, n, threads))
for (mm in c(0, 1, Inf)) {
  best <- NULL
  for (r in seq_len(reps)) {
    t <- system.time(sk <- gpu_skeleton(st, gaussCItest, 0.01, p = p, backend = "cpu", numCores = threads, m.max = mm))[["elapsed"]]
    ph <- gpupc_last_run()$phases
    if (is.null(best) || t < best$t) best <- list(t = t, ph = ph)
  }
  cat(sprintf("m.max %-3s %.3f s | input %.3f, search %.3f, sepsets %.3f, graph %.3f | edges %d\n", mm, best$t,
              best$ph[["input_s"]], best$ph[["search_s"]], best$ph[["sepset_s"]], best$ph[["graph_object_s"]],
              sum(as(sk@graph, "matrix")) / 2))
}
