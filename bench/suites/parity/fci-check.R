# gpu_fci() / gpu_rfci() with the CUDA backend against pcalg::fci() / rfci() and gpupc's CPU
# backend, on random DAGs with unobserved variables (gaussCItest and disCItest): the PAG (amat),
# every sepset, n.edgetests, max.ord, the Possible-D-SEP counts and allPdsep identical, pMax to
# 1e-9 relative (the skeleton's p-values are pcalg's to rounding), with m.max = 3 and pdsep.max = 20
# above 15 variables; and the Possible-D-SEP tests
# must have run on the GPU (gpupc_last_run()$pdsep$evaluator). One line per case, then
# "fci parity: N compared, N identical, N differ"; exits 1 when any differs.
#
#   Rscript bench/suites/parity/fci-check.R [--cases K] [--p P]
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
options(cli.progress_show_after = Inf)
args <- commandArgs(TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
cases <- as.integer(opt("cases", 20)); pmax_p <- as.integer(opt("p", 40))
if (!isTRUE(gpu_info()$usable)) stop("no usable GPU: ", gpu_info()$reason)

slots_differ <- function(a, b) {
  for (s in c("amat", "sepset", "n.edgetests", "max.ord", "n.edgetestsPDSEP", "max.ordPDSEP", "allPdsep"))
    if (!identical(methods::slot(a, s), methods::slot(b, s))) return(s)
  pa <- a@pMax; pb <- b@pMax
  if (!identical(is.finite(pa), is.finite(pb))) return("pMax pattern")
  f <- is.finite(pa)
  if (any(abs(pa[f] - pb[f]) > 1e-9 * pmax(abs(pb[f]), 1e-300))) return("pMax values")
  ""
}

set.seed(20261127)
n_cmp <- 0; n_diff <- 0
for (k in seq_len(cases)) {
  p <- sample(8:pmax_p, 1)
  dag <- randomDAG(p, prob = runif(1, 1.5, 4) / p)
  hidden <- sample.int(p, max(1, p %/% 8))
  discrete <- k %% 3 == 0
  if (discrete) {
    X <- rmvDAG(3000, dag)
    d <- apply(X, 2, function(v) as.integer(cut(v, quantile(v, c(0, 1/3, 2/3, 1)), include.lowest = TRUE)) - 1L)[, -hidden]
    st <- list(dm = d, nlev = rep(3L, ncol(d)), adaptDF = FALSE); test <- disCItest
  } else {
    X <- rmvDAG(sample(c(200, 1000, 5000), 1), dag)[, -hidden]
    st <- list(C = cor(X), n = nrow(X)); test <- gaussCItest
  }
  q <- ncol(if (discrete) d else X)
  opts <- list(conservative = k %% 4 == 1, maj.rule = k %% 4 == 2, biCC = k %% 5 == 0)
  # unbounded Possible-D-SEP sets grow exponentially with the graph (both tools alike): the larger
  # cases bound the conditioning sets as pcalg's own arguments do
  if (q > 15) opts <- c(opts, list(m.max = 3, pdsep.max = 20))
  for (fun in c("fci", "rfci")) {
    call_with <- function(f, extra) do.call(f, c(list(st, test, alpha = 0.01, p = q), opts[if (fun == "fci") names(opts) else intersect(names(opts), c("conservative", "maj.rule", "m.max"))], extra))
    ref <- call_with(getExportedValue("pcalg", fun), list())
    gpu <- call_with(get(paste0("gpu_", fun)), list(backend = "cuda"))
    ev <- if (fun == "fci") gpupc_last_run()$pdsep$evaluator else "-"
    cpu <- call_with(get(paste0("gpu_", fun)), list(backend = "cpu"))
    for (against in c("pcalg", "cpu")) {
      d1 <- slots_differ(gpu, if (against == "pcalg") ref else cpu)
      if (fun == "fci" && d1 == "" && !grepl("cuda|GPU|gpu", ev)) d1 <- paste("tests not on the GPU:", ev)
      n_cmp <- n_cmp + 1; n_diff <- n_diff + (d1 != "")
      cat(sprintf("case %2d %s %s p=%d %s  %s  [%s]\n", k, fun, if (discrete) "disCItest" else "gaussCItest", q,
                  paste0("vs ", against), if (d1 == "") "identical" else paste("DIFFERS:", d1), ev))
    }
  }
}
cat(sprintf("fci parity: %d compared, %d identical, %d differ\n", n_cmp, n_cmp - n_diff, n_diff))
quit(status = if (n_diff == 0) 0 else 1)
