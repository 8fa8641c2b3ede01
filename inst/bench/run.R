# gpupc benchmarks: every number in BENCHMARKS.md and the benchmark vignette comes from here.
#
#   Rscript inst/bench/run.R --suite cpu --out results.csv [--cap 600] [--quick]
#
# Suites: cpu (issue: gpu_pc on all CPU cores against pcalg stable / stable.fast, Gaussian p =
# 100/500/1000 and discrete ALARM/LINK); more suites join as backends land. Each row: tool,
# settings, skeleton and end-to-end seconds, levels, edges, agreement with pcalg, SHD/F1 against
# the true graph, and the machine. Runs that exceed --cap seconds are reported as NA ("> cap").
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) {
  i <- match(paste0("--", name), args)
  if (is.na(i)) default else args[i + 1]
}
flag <- function(name) paste0("--", name) %in% args
suites <- strsplit(opt("suite", "cpu"), ",")[[1]]
out <- opt("out", "bench-results.csv")
cap <- as.numeric(opt("cap", "600"))
quick <- flag("quick")
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "lib.R"))

machine <- machine_info()
rows <- list()
add_row <- function(...) {
  r <- data.frame(..., stringsAsFactors = FALSE)
  rows[[length(rows) + 1]] <<- r
  print(r[, intersect(c("suite", "data", "p", "n", "tool", "skeleton_s", "end_to_end_s", "levels",
                        "edges", "same_as_pcalg"), names(r))], row.names = FALSE)
}

run_gpupc <- function(d, test, labels, backend = "cpu", method = "stable") {
  sk <- timed(gpu_skeleton(d$suff, test, alpha = 0.01, labels = labels, method = method, backend = backend))
  last <- gpupc_last_run()
  e2e <- timed(gpu_pc(d$suff, test, alpha = 0.01, labels = labels, skel.method = method, backend = backend))
  list(sk = sk, e2e = e2e, last = last)
}

bench_case <- function(suite, dname, d, test, labels, m.max = Inf) {
  g <- run_gpupc(d, test, labels)
  ref_stable_sk <- capped(skeleton(d$suff, test, alpha = 0.01, labels = labels, method = "stable", m.max = m.max), cap)
  ref_stable <- capped(pc(d$suff, test, alpha = 0.01, labels = labels, skel.method = "stable", m.max = m.max), cap)
  acc <- skeleton_accuracy(g$sk$value, d$truth)
  lv <- g$last$levels
  add_row(suite = suite, data = dname, p = d$p, n = d$n, tool = sprintf("gpupc %s", g$last$backend),
          skeleton_s = g$sk$secs, end_to_end_s = g$e2e$secs, levels = g$sk$value@max.ord,
          edges = sum(skel_amat(g$sk$value)) / 2, same_as_pcalg = same_as(g$sk$value, ref_stable_sk$value),
          shd = acc[["shd"]], f1 = acc[["f1"]],
          level_seconds = paste(sprintf("%d:%.3f", lv$level, lv$seconds), collapse = " "), machine)
  add_row(suite = suite, data = dname, p = d$p, n = d$n, tool = "pcalg stable",
          skeleton_s = ref_stable_sk$secs, end_to_end_s = ref_stable$secs,
          levels = if (is.null(ref_stable_sk$value)) NA else ref_stable_sk$value@max.ord,
          edges = if (is.null(ref_stable_sk$value)) NA else sum(skel_amat(ref_stable_sk$value)) / 2,
          same_as_pcalg = if (is.null(ref_stable_sk$value)) NA else TRUE, shd = NA, f1 = NA, level_seconds = "", machine)
  if (identical(test, gaussCItest)) {
    gf <- timed(gpu_skeleton(d$suff, test, alpha = 0.01, labels = labels, method = "stable.fast", backend = "cpu"))
    ref_fast_sk <- capped(skeleton(d$suff, test, alpha = 0.01, labels = labels, method = "stable.fast", m.max = m.max), cap)
    ref_fast <- capped(pc(d$suff, test, alpha = 0.01, labels = labels, skel.method = "stable.fast", m.max = m.max), cap)
    add_row(suite = suite, data = dname, p = d$p, n = d$n, tool = "pcalg stable.fast",
            skeleton_s = ref_fast_sk$secs, end_to_end_s = ref_fast$secs,
            levels = if (is.null(ref_fast_sk$value)) NA else ref_fast_sk$value@max.ord,
            edges = if (is.null(ref_fast_sk$value)) NA else sum(skel_amat(ref_fast_sk$value)) / 2,
            same_as_pcalg = if (is.null(ref_fast_sk$value)) NA else TRUE, shd = NA, f1 = NA, level_seconds = "", machine)
    add_row(suite = suite, data = dname, p = d$p, n = d$n, tool = sprintf("gpupc %s, stable.fast order", gpupc_last_run()$backend),
            skeleton_s = gf$secs, end_to_end_s = NA, levels = gf$value@max.ord,
            edges = sum(skel_amat(gf$value)) / 2, same_as_pcalg = same_as(gf$value, ref_fast_sk$value),
            shd = NA, f1 = NA, level_seconds = "", machine)
  }
}

if ("cpu" %in% suites) {
  ps <- if (quick) c(100) else c(100, 500, 1000)
  for (p in ps) {
    d <- gauss_data(p, 1000, degree = 4, seed = p)
    bench_case("cpu", sprintf("gauss p=%d", p), d, gaussCItest, as.character(seq_len(p)))
  }
  if (requireNamespace("bnlearn", quietly = TRUE)) {
    nets <- if (quick) "alarm" else c("alarm", "link")
    for (net in nets) {
      d <- network_data(net, if (quick) 2000 else 20000, seed = 1)
      bench_case("cpu", net, d, disCItest, d$labels)
    }
  }
}

res <- do.call(rbind, rows)
write.csv(res, out, row.names = FALSE)
cat("\nwrote", nrow(res), "rows to", out, "\n")
