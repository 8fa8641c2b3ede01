# gpu_fci() / gpu_rfci() against pcalg::fci() / rfci() end to end, same data, same run: Gaussian
# data of a random DAG of expected degree 4 with an eighth of its variables unobserved. Prints one
# line per run and writes a CSV (what, data, p, n, tool, seconds, same, phases); pcalg runs once,
# under a time cap (setTimeLimit: a capped run is "> cap"), gpupc --reps times (the best is kept).
# --networks adds discrete data (disCItest) forward-sampled from bundled bnlearn-repository
# networks (needs bnlearn), --n-discrete rows, an eighth of the variables unobserved (--p "" for
# the discrete runs alone).
#
#   Rscript bench/suites/orient/fci-bench.R [--p 50,200,500] [--n 1000] [--backend auto|cpu|cuda]
#                                          [--cap 300] [--reps 3] [--m-max Inf] [--pdsep-max Inf]
#                                          [--networks alarm,hepar2] [--n-discrete 20000]
#                                          [--out fci-bench.csv]
# (with latent variables Possible-D-SEP sets grow large: --m-max / --pdsep-max bound the work of
# both tools alike, as pcalg's own arguments)
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/orient"
})
source(file.path(here, "..", "..", "lib", "lib.R"))  # network_data(); its capped() is replaced below
options(cli.progress_show_after = Inf)
args <- commandArgs(TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
ps <- as.integer(strsplit(opt("p", "50,200,500"), ",")[[1]])
networks <- strsplit(opt("networks", ""), ",")[[1]]
n_discrete <- as.integer(opt("n-discrete", 20000))
n <- as.integer(opt("n", 1000)); backend <- opt("backend", "auto")
cap <- as.numeric(opt("cap", 300)); reps <- as.integer(opt("reps", 3)); out <- opt("out", "fci-bench.csv")
m_max <- as.numeric(opt("m-max", Inf)); pdsep_max <- as.numeric(opt("pdsep-max", Inf))
limits <- function(fun) if (fun == "fci") list(m.max = m_max, pdsep.max = pdsep_max) else list(m.max = m_max)

same_fci <- function(a, b) {
  for (s in c("amat", "sepset", "n.edgetests", "max.ord", "n.edgetestsPDSEP", "max.ordPDSEP", "allPdsep"))
    if (!identical(methods::slot(a, s), methods::slot(b, s))) return(s)
  pa <- a@pMax; pb <- b@pMax; f <- is.finite(pa) & is.finite(pb)
  if (!identical(is.finite(pa), is.finite(pb)) || any(abs(pa[f] - pb[f]) > 1e-9 * pmax(abs(pb[f]), 1e-300))) return("pMax")
  "yes"
}
capped <- function(expr) {
  setTimeLimit(elapsed = cap, transient = TRUE)
  on.exit(setTimeLimit(elapsed = Inf))
  t0 <- proc.time()[["elapsed"]]
  v <- tryCatch(expr, error = function(e) if (grepl("time limit", conditionMessage(e))) NULL else stop(e))
  list(value = v, seconds = proc.time()[["elapsed"]] - t0)
}

# the runs' inputs: Gaussian data of random DAGs, then the networks' discrete data
inputs <- list()
for (p in ps) {
  set.seed(p)
  dag <- randomDAG(p, prob = 4 / (p - 1))
  hidden <- sample.int(p, max(1, p %/% 8))
  X <- rmvDAG(n, dag)[, -hidden]
  inputs[[length(inputs) + 1]] <- list(data = "gauss", n = n, st = list(C = cor(X), n = n), test = gaussCItest, q = ncol(X))
}
for (net in networks) {
  d <- network_data(net, n_discrete, seed = 1)
  set.seed(2)
  keep <- -sample.int(d$p, max(1, d$p %/% 8))
  st <- list(dm = d$suff$dm[, keep], nlev = d$suff$nlev[keep], adaptDF = FALSE)
  inputs[[length(inputs) + 1]] <- list(data = net, n = n_discrete, st = st, test = disCItest, q = ncol(st$dm))
}

rows <- list()
for (input in inputs) {
  st <- input$st; q <- input$q; test <- input$test
  for (fun in c("fci", "rfci")) {
    ref <- capped(do.call(getExportedValue("pcalg", fun), c(list(st, test, alpha = 0.01, p = q), limits(fun))))
    best <- Inf; res <- NULL; ph <- NULL
    for (r in seq_len(reps)) {
      t <- system.time(res <- do.call(get(paste0("gpu_", fun)), c(list(st, test, alpha = 0.01, p = q, backend = backend), limits(fun))))[["elapsed"]]
      if (t < best) { best <- t; ph <- gpupc_last_run()$phases }
    }
    same <- if (is.null(ref$value)) "pcalg capped" else same_fci(res, ref$value)
    pc_s <- if (is.null(ref$value)) sprintf("> %.0f", cap) else sprintf("%.3f", ref$seconds)
    ratio <- if (is.null(ref$value)) sprintf("> %.0fx", cap / best) else sprintf("%.0fx", ref$seconds / best)
    phs <- paste(sprintf("%s %.3f", names(ph), ph), collapse = ", ")
    cat(sprintf("%s %s p=%d n=%d m.max=%g pdsep.max=%g | pcalg %s s | gpupc %.3f s (%s) | %s | same: %s | %s\n",
                fun, input$data, q, input$n, m_max, pdsep_max, pc_s, best, gpupc_last_run()$backend, ratio, same, phs))
    rows[[length(rows) + 1]] <- data.frame(what = fun, data = input$data, p = q, n = input$n, tool = c("pcalg", "gpupc"),
      seconds = c(if (is.null(ref$value)) NA else ref$seconds, best), capped = c(is.null(ref$value), FALSE),
      backend = c("pcalg", gpupc_last_run()$backend), same = c(NA, same), phases = c(NA, phs))
  }
}
utils::write.csv(do.call(rbind, rows), out, row.names = FALSE)
