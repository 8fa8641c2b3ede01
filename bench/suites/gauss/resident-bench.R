# gpu_skeleton() through R on the GPU and on the CPU, with where the time goes (phases) and the
# process's host memory peak, on the seed shapes and the large Gaussian cases (p up to 20000).
#
#   Rscript bench/suites/gauss/resident-bench.R --out DIR [--sizes 1643x850,5361x63,10000x1000,20000x1000]
#        [--cpu-max-p 10000] [--threads 16] [--repeat 2] [--check 1] [--method stable|stable.fast]
#        [--pcalg-max-p 0] [--pcalg-cap 120]
#
# Each size: the data once (lib.R's gauss_data), then gpu_skeleton(backend = "cuda") --repeat
# times (the first run of the process also pays CUDA's start and NVRTC) and, up to --cpu-max-p,
# gpu_skeleton(backend = "cpu") on --threads threads; with --check 1 the GPU and CPU objects are
# compared slot by slot. The peak is VmHWM of this R process, reset before every run
# (/proc/self/clear_refs), so it includes the data and C already in memory. Writes
# DIR/resident-bench.csv (one row per run) and prints a table.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
out <- opt("out", "resident-out")
sizes <- strsplit(strsplit(opt("sizes", "1643x850,5361x63,10000x1000,20000x1000"), ",")[[1]], "x")
cpu_max_p <- as.numeric(opt("cpu-max-p", "10000"))
threads <- as.integer(opt("threads", "16"))
reps <- as.integer(opt("repeat", "2"))
check <- opt("check", "1") == "1"
verbose <- opt("verbose", "0") == "1"
method <- opt("method", "stable")
# pcalg::skeleton() itself (same method) up to this p, in a child capped at --pcalg-cap seconds
pcalg_max_p <- as.numeric(opt("pcalg-max-p", "0"))
pcalg_cap <- as.numeric(opt("pcalg-cap", "120"))
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "lib", "lib.R"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)
csv <- file.path(out, if (method == "stable") "resident-bench.csv" else sprintf("resident-bench-%s.csv", method))
info <- gpu_info()
cat(sprintf("GPU: %s\n", if (isTRUE(info$usable)) info$name else paste("none:", info$reason)))

reset_peak <- function() try(writeLines("5", "/proc/self/clear_refs"), silent = TRUE)
peak_gb <- function() {
  s <- tryCatch(readLines("/proc/self/status"), error = function(e) character())
  kb <- as.numeric(sub("^VmHWM:\\s+(\\d+) kB$", "\\1", grep("^VmHWM", s, value = TRUE)))
  if (length(kb)) kb / 2^20 else NA_real_
}
same <- function(a, b) {
  # the graphNEL objects, not as(, "amat"): a p x p matrix built in R took minutes at p = 20000
  if (!identical(a@graph, b@graph)) return("graph differs")
  # compact rows (p > 5000) hold level 1's sets in idx1/k1 on the GPU, in idx/sets on the CPU:
  # compare what they read as
  if (!identical(as_sepset_list(a), as_sepset_list(b))) return("sepset differs")
  if (!identical(a@n.edgetests, b@n.edgetests)) return("n.edgetests differs")
  if (!identical(a@max.ord, b@max.ord)) return("max.ord differs")
  pa <- a@pMax; pb <- b@pMax
  if (!identical(is.finite(pa), is.finite(pb))) return("pMax pattern differs")
  # p-values below 1e-300 (the far tail, where the GPU's exp/log1p and the CPU's may round a
  # denormal differently) count as equal, as in pcbench's comparison
  f <- is.finite(pa) & !(abs(pa) <= 1e-300 & abs(pb) <= 1e-300)
  d <- max(c(0, abs(pa[f] - pb[f]) / pmax(abs(pb[f]), 1e-300)))
  if (d > 1e-9) return(sprintf("pMax differs (rel %.2e at %d cells)", d, sum(abs(pa[f] - pb[f]) > 1e-9 * pmax(abs(pb[f]), 1e-300))))
  sprintf("identical (pMax rel %.1e)", d)
}

# rows of different columns (pcalg's have no phases) into one data frame
bind_rows_fill <- function(rows) {
  cols <- unique(unlist(lapply(rows, names)))
  do.call(rbind, lapply(rows, function(r) { r[setdiff(cols, names(r))] <- NA; r[cols] }))
}

rows <- list()
for (sz in sizes) {
  p <- as.integer(sz[1]); n <- as.integer(sz[2])
  t0 <- proc.time()[["elapsed"]]
  d <- gauss_data(p, n)
  d$X <- NULL; gc()
  cat(sprintf("\n== p = %d, n = %d: data in %.1f s (%s)\n", p, n, proc.time()[["elapsed"]] - t0, d$id))
  fits <- list()
  backends <- c(rep("cuda", if (isTRUE(info$usable)) reps else 0), if (p <= cpu_max_p) "cpu", if (p <= pcalg_max_p) "pcalg")
  for (k in seq_along(backends)) {
    b <- backends[k]
    gc(); reset_peak()
    if (b == "pcalg") {
      r <- capped(pcalg::skeleton(d$suff, gaussCItest, alpha = 0.01, labels = d$labels, method = method), pcalg_cap)
      cmp <- if (is.null(r$value)) sprintf("> %g s", pcalg_cap) else if (length(fits)) same(fits[[1]], r$value) else ""
      cat(sprintf("  %-32s run %d: %s s | %s\n", paste("pcalg", method), k, fmt_secs(r$secs, pcalg_cap), cmp))
      rows[[length(rows) + 1]] <- data.frame(p = p, n = n, method = method, backend = paste("pcalg", method), run = k,
                                             seconds = r$secs, check = cmp, stringsAsFactors = FALSE)
      next
    }
    t <- system.time(fit <- tryCatch(
      gpu_skeleton(d$suff, gaussCItest, alpha = 0.01, labels = d$labels, numCores = threads, backend = b, verbose = verbose, method = method),
      error = function(e) e))[["elapsed"]]
    if (inherits(fit, "error")) { cat("  ", b, "failed:", conditionMessage(fit), "\n"); next }
    lr <- gpupc_last_run()
    ph <- lr$phases
    lv <- lr$levels
    cmp <- ""
    if (check && b == "cpu" && length(fits)) cmp <- same(fits[[1]], fit)
    if (check && b == "cuda" && length(fits)) cmp <- if (identical(fits[[1]], fit)) "run-to-run identical" else "RUN-TO-RUN DIFFERS"
    if (b == "cuda" && !length(fits)) fits[[1]] <- fit
    row <- data.frame(p = p, n = n, method = method, backend = lr$backend, run = k, seconds = t, peak_gb = peak_gb(),
                      levels = nrow(lv), edges = graph::numEdges(fit@graph), tests = sum(lv$tests),
                      r_checks = ph[["r_checks_s"]], input = ph[["input_s"]], setup = ph[["setup_s"]],
                      search = ph[["search_s"]], r_output = ph[["r_output_s"]], graph = ph[["graph_object_s"]], sepset = ph[["sepset_s"]],
                      level01 = sum(lv$seconds[lv$level <= 1]), level2plus = sum(lv$seconds[lv$level >= 2]),
                      kernel = if (!is.null(lr$details$kernel_s)) lr$details$kernel_s else NA_real_,
                      upload = if (!is.null(lr$details$upload_s)) lr$details$upload_s else NA_real_,
                      dense_results = if (!is.null(lr$details$results_s)) lr$details$results_s else NA_real_,
                      check = cmp, stringsAsFactors = FALSE)
    cat(sprintf("  %-32s run %d: %7.3f s, peak %.2f GB | input %.3f setup %.3f search %.3f (levels 0-1 %.3f) r_output %.3f graph %.3f sepset %.3f | %s\n",
                row$backend, k, t, row$peak_gb, row$input, row$setup, row$search, row$level01, row$r_output, row$graph, row$sepset, cmp))
    rows[[length(rows) + 1]] <- row
    write.csv(bind_rows_fill(rows), csv, row.names = FALSE)
    rm(fit); gc()
  }
  rm(d, fits); gc()
}
tab <- bind_rows_fill(rows)
cat("\n")
print(tab[, c("p", "n", "backend", "run", "seconds", "peak_gb", "input", "setup", "search", "r_output", "graph", "level01", "kernel", "check")], row.names = FALSE)
