# gpu_skeleton() on the dissertation's largest Gaussian shape (p = 55,572, n = 3189) through R
# with suffStat = list(data = X): C computed on the GPU (never on the host), compact sepset rows,
# pMax written into R's matrix.
#
#   Rscript bench/suites/gauss/large-p-bench.R --out DIR [--p 55572] [--n 3189] [--degree 4]
#        [--mmax 1,Inf] [--alpha 0.01] [--backend cuda] [--threads 16] [--check-p 600]
#
# The data: a random linear SEM with about `degree` neighbours per variable (each variable's
# parents drawn among the earlier ones, weights uniform in +-[0.1, 1], unit normal noise), made
# in R and not timed; the dissertation's 55,572-gene set is real data of this shape, which we do
# not have. First a check at --check-p variables (data input on the GPU against the CPU backend:
# the same C bit for bit, so the same object; and against pcalg on cor(X)), then one run per
# --mmax, each with the process's host memory peak (VmHWM, reset before the run: it includes X,
# 8 n p bytes, already in memory). Writes DIR/large-p.csv and prints a table.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
out <- opt("out", "large-p-out")
p <- as.integer(opt("p", "55572"))
n <- as.integer(opt("n", "3189"))
degree <- as.numeric(opt("degree", "4"))
mmax <- as.numeric(strsplit(opt("mmax", "1,Inf"), ",")[[1]])
alpha <- as.numeric(opt("alpha", "0.01"))
backend <- opt("backend", "cuda")
threads <- as.integer(opt("threads", "16"))
check_p <- as.integer(opt("check-p", "600"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)
csv <- file.path(out, "large-p.csv")

reset_peak <- function() try(writeLines("5", "/proc/self/clear_refs"), silent = TRUE)
peak_gb <- function() {
  s <- tryCatch(readLines("/proc/self/status"), error = function(e) character())
  kb <- as.numeric(sub("^VmHWM:\\s+(\\d+) kB$", "\\1", grep("^VmHWM", s, value = TRUE)))
  if (length(kb)) kb / 2^20 else NA_real_
}

sem_data <- function(p, n, degree, seed = 1) {
  set.seed(seed)
  X <- matrix(rnorm(as.double(n) * p), n, p)
  k <- rpois(p, degree / 2)
  for (j in which(k > 0 & seq_len(p) > 1)) {
    pa <- sample.int(j - 1L, min(k[j], j - 1L))
    w <- runif(length(pa), 0.1, 1) * sample(c(-1, 1), length(pa), replace = TRUE)
    X[, j] <- X[, j] + X[, pa, drop = FALSE] %*% w
  }
  X
}

info <- gpu_info()
cat(sprintf("GPU: %s\n", if (isTRUE(info$usable)) info$name else paste("none:", info$reason)))

if (check_p > 0) {
  Xs <- sem_data(check_p, 500, degree, seed = 2)
  # compact rows at this p as well: the GPU's hold level 1's sets in idx1/k1, the CPU's in sets
  old <- options(gpupc.sepset_rows_p = 0)
  a <- gpu_skeleton(list(data = Xs), gaussCItest, alpha, p = check_p, backend = backend, numCores = threads)
  b <- gpu_skeleton(list(data = Xs), gaussCItest, alpha, p = check_p, backend = "cpu", numCores = threads)
  pc_gpu <- gpu_pc(list(data = Xs), gaussCItest, alpha, p = check_p, backend = backend, numCores = threads)
  pc_cons <- gpu_pc(list(data = Xs), gaussCItest, alpha, p = check_p, backend = backend, numCores = threads, conservative = TRUE)
  options(old)
  ref <- pcalg::skeleton(list(C = cor(Xs), n = nrow(Xs)), gaussCItest, alpha, p = check_p)
  ref_pc <- pcalg::pc(list(C = cor(Xs), n = nrow(Xs)), gaussCItest, alpha, p = check_p)
  ref_cons <- pcalg::pc(list(C = cor(Xs), n = nrow(Xs)), gaussCItest, alpha, p = check_p, conservative = TRUE)
  cat(sprintf("check p = %d: gpu_pc (rows) vs pcalg::pc: graph %s; conservative: graph %s, sepset %s\n", check_p,
              identical(as(pc_gpu@graph, "matrix"), as(ref_pc@graph, "matrix")),
              identical(as(pc_cons@graph, "matrix"), as(ref_cons@graph, "matrix")),
              identical(as_sepset_list(pc_cons), ref_cons@sepset)))
  pa <- a@pMax; pb <- b@pMax
  f <- is.finite(pa) & !(abs(pa) <= 1e-300 & abs(pb) <= 1e-300)
  cat(sprintf("check p = %d, n = 500: %s vs cpu: graph %s, sepset %s, n.edgetests %s, pMax max rel diff %.1e; vs pcalg on cor(X): graph %s, sepset %s\n",
              check_p, backend, identical(a@graph, b@graph), identical(as_sepset_list(a), as_sepset_list(b)),
              identical(a@n.edgetests, b@n.edgetests),
              max(c(0, abs(pa[f] - pb[f]) / pmax(abs(pb[f]), 1e-300))),
              identical(as(a@graph, "matrix"), as(ref@graph, "matrix")),
              identical(as_sepset_list(a), ref@sepset)))
  rm(a, b, ref, ref_pc, ref_cons, pc_gpu, pc_cons, Xs); gc()
}

t0 <- proc.time()[["elapsed"]]
X <- sem_data(p, n, degree)
cat(sprintf("data: %d x %d in %.1f s (%.2f GB)\n", n, p, proc.time()[["elapsed"]] - t0, 8 * as.double(n) * p / 1e9))
rows <- list()
for (m in mmax) {
  gc(); reset_peak()
  t <- system.time(fit <- tryCatch(
    gpu_skeleton(list(data = X), gaussCItest, alpha, p = p, m.max = m, backend = backend, numCores = threads),
    error = function(e) e))[["elapsed"]]
  if (inherits(fit, "error")) { cat(sprintf("m.max = %s failed: %s\n", m, conditionMessage(fit))); next }
  lr <- gpupc_last_run()
  ph <- lr$phases
  lv <- lr$levels
  row <- data.frame(p = p, n = n, m.max = m, backend = lr$backend, seconds = t, peak_gb = peak_gb(),
                    max.ord = fit@max.ord, edges = graph::numEdges(fit@graph), tests = sum(lv$tests),
                    input = ph[["input_s"]], setup = ph[["setup_s"]], search = ph[["search_s"]],
                    r_output = ph[["r_output_s"]], graph = ph[["graph_object_s"]], sepset = ph[["sepset_s"]],
                    corr_upload = if (!is.null(lr$details$upload_s)) lr$details$upload_s else NA_real_,
                    kernel = if (!is.null(lr$details$kernel_s)) lr$details$kernel_s else NA_real_,
                    dense_results = if (!is.null(lr$details$results_s)) lr$details$results_s else NA_real_,
                    stringsAsFactors = FALSE)
  cat(sprintf("m.max = %s: %.2f s, peak %.2f GB, max.ord %d, %d edges, %.3g tests | input %.2f setup %.2f (C on the GPU %.2f) search %.2f r_output %.2f graph %.2f sepset %.2f\n",
              m, t, row$peak_gb, row$max.ord, row$edges, row$tests, row$input, row$setup, row$corr_upload,
              row$search, row$r_output, row$graph, row$sepset))
  print(lv[, intersect(c("level", "edges", "tests", "removed", "seconds"), names(lv))], row.names = FALSE)
  rows[[length(rows) + 1]] <- row
  write.csv(do.call(rbind, rows), csv, row.names = FALSE)
  rm(fit); gc()
}
