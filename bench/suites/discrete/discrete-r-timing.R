# gpu_skeleton() through R on samples that export-codes.R wrote (the suite's own data: LINK, MUNIN),
# disCItest, alpha = 0.01, backend = "cuda": a warm-up call (compiles the kernel), then REPEAT timed
# calls, each with its phases and levels (gpupc_last_run()) and the seconds R's collector took
# during it (gc.time()), checked identical to the first; with CPU=NAME the
# CPU backend's result on that sample is compared with the GPU's:
#   Rscript bench/suites/discrete/discrete-r-timing.R [--repeat K] [--cpu NAME] FILE.bin ...
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) {
  k <- match(paste0("--", name), args)
  if (is.na(k)) return(default)
  v <- args[[k + 1]]
  args <<- args[-c(k, k + 1)]
  v
}
reps <- as.integer(opt("repeat", "3"))
cpu_for <- opt("cpu", "")
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
read_codes <- function(path) {
  con <- file(path, "rb")
  on.exit(close(con))
  np <- readBin(con, "integer", 2, size = 4, endian = "little")
  nlev <- readBin(con, "integer", np[2], size = 4, endian = "little")
  codes <- readBin(con, "raw", np[1] * np[2])
  dm <- matrix(as.integer(codes), np[1], np[2], dimnames = list(NULL, paste0("V", seq_len(np[2]))))
  list(dm = dm, nlev = nlev, adaptDF = FALSE)
}
# tol = 0: every slot identical (two GPU runs); else pMax within tol relative (CPU against GPU:
# the kernel sums G^2's cells in another order, DESIGN.md)
same_result <- function(a, b, tol = 0) {
  pm <- if (tol == 0) identical(a@pMax, b@pMax) else
    identical(is.na(a@pMax), is.na(b@pMax)) && isTRUE(all.equal(a@pMax, b@pMax, tolerance = tol))
  identical(a@graph, b@graph) && identical(a@sepset, b@sepset) && pm && identical(a@n.edgetests, b@n.edgetests)
}
cat(sprintf("gpupc %s from %s, R %s\n", packageVersion("gpupc"), find.package("gpupc"), getRversion()))
print(gpu_info()[c("usable", "name")])
for (path in args) {
  name <- sub("\\.bin$", "", basename(path))
  suff <- read_codes(path)
  run <- function(backend) {
    gc0 <- gc.time()[[1]]
    t0 <- proc.time()[["elapsed"]]
    r <- gpu_skeleton(suff, disCItest, alpha = 0.01, labels = colnames(suff$dm), backend = backend)
    secs <- proc.time()[["elapsed"]] - t0
    list(value = r, secs = secs, last = gpupc_last_run(), gc = gc.time()[[1]] - gc0)
  }
  w <- run("cuda")
  cat(sprintf("%s: p = %d, n = %d; warm-up %.3f s, %d edges left\n", name, ncol(suff$dm), nrow(suff$dm),
              w$secs, as.integer(sum(graph::degree(w$value@graph)) / 2)))
  first <- NULL
  for (k in seq_len(reps)) {
    g <- run("cuda")
    if (is.null(first)) first <- g$value
    ph <- g$last$phases
    lv <- g$last$levels
    cat(sprintf("%s cuda run %d: gpu_skeleton %.3f s, identical to run 1: %s; R's collector %.3f s; phases: %s; levels: %s\n",
                name, k, g$secs, same_result(first, g$value), g$gc,
                paste(sprintf("%s %.3f", names(ph), unlist(ph)), collapse = ", "),
                paste(sprintf("%d %.3f", lv$level, lv$seconds), collapse = ", ")))
  }
  if (identical(cpu_for, name)) {
    c1 <- run("cpu")
    cat(sprintf("%s cpu: gpu_skeleton %.3f s; same graph, sepsets and test counts as cuda, pMax within 1e-12: %s\n",
                name, c1$secs, same_result(first, c1$value, tol = 1e-12)))
  }
}
