# The first GPU call of an R process: run in a fresh process per row (the kernel cache on disk is
# what carries over between processes; bench/suites/gauss/first-call.sh empties or fills it).
#
#   Rscript first-call.R KIND CACHE_STATE [p] [n]
#
# KIND: gauss (gaussCItest, stable), fast (gaussCItest, stable.fast) or discrete (disCItest);
# CACHE_STATE is a label for the output ("empty", "warm", "off"). Prints one CSV row: the seconds
# of gpu_info() before any other CUDA call (the driver's start: what any CUDA program pays once),
# the first call's seconds after it, a second call's, and the first call's phases (setup, NVRTC
# or cache read, search).
suppressPackageStartupMessages({ library(gpupc); library(pcalg) })
options(cli.progress_show_after = Inf)
a <- commandArgs(TRUE)
kind <- a[1]; state <- a[2]
p <- if (length(a) >= 3) as.integer(a[3]) else 1000L
n <- if (length(a) >= 4) as.integer(a[4]) else 1000L
set.seed(7)
if (kind == "discrete") {
  d <- as.data.frame(matrix(sample(0:2, n * p, TRUE), n, p))
  for (j in 2:p) d[[j]] <- (d[[j]] + (runif(n) < 0.3) * d[[j - 1]]) %% 3
  suff <- list(dm = as.matrix(d), nlev = rep(3L, p), adaptDF = FALSE)
  run <- function() gpu_pc(suff, disCItest, 0.01, p = p, backend = "cuda", devices = 0)
} else {
  g <- randomDAG(p, 4 / (p - 1))
  X <- rmvDAG(n, g)
  suff <- list(C = cor(X), n = n)
  method <- if (kind == "fast") "stable.fast" else "stable"
  run <- function() gpu_pc(suff, gaussCItest, 0.01, p = p, skel.method = method, backend = "cuda", devices = 0)
}
t0 <- system.time(info <- gpu_info())[["elapsed"]]
stopifnot(isTRUE(info$usable))
t1 <- system.time(f1 <- run())[["elapsed"]]
lr <- gpupc_last_run()
t2 <- system.time(f2 <- run())[["elapsed"]]
stopifnot(identical(as(f1@graph, "matrix"), as(f2@graph, "matrix")))
ph <- lr$phases
det <- lr$details
cat(sprintf("%s,%s,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%.3f,%d\n", kind, state, p, n, t0, t1, t2,
            ph[["setup_s"]], as.numeric(det$nvrtc_compile_s), as.character(det$nvrtc_cached),
            ph[["search_s"]], max(lr$levels$level)))
