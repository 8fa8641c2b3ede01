# gpu_pc() calls one after another in one process after a small warm-up (as orient-e2e.R runs
# them): every call's phases, to see which calls pay a one-time cost (pinning the staging
# buffers, R's collector) and where. With GPUPC_TRACE=1 the steps of each call go to stderr.
#
#   Rscript bench/suites/gauss/first-calls.R [--p 1643] [--n 850] [--calls 6] [--backend cuda]
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
p <- as.integer(opt("p", "1643")); n <- as.integer(opt("n", "850")); calls <- as.integer(opt("calls", "6"))
backend <- opt("backend", "cuda")
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/gauss"
})
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
source(file.path(here, "..", "..", "lib", "lib.R"))
invisible(gc.time(TRUE))
w <- gauss_data(50, 200, degree = 2, seed = 2)
invisible(gpu_skeleton(w$suff, gaussCItest, 0.01, labels = w$labels, backend = backend))
d <- gauss_data(p, n)
for (k in seq_len(calls)) {
  t <- system.time(fit <- gpu_pc(d$suff, gaussCItest, 0.01, labels = d$labels, backend = backend))[["elapsed"]]
  ph <- gpupc_last_run()$phases
  cat(sprintf("call %d: %.4f s | %s\n", k, t, paste(sprintf("%s %.4f", names(ph), ph), collapse = ", ")))
}
