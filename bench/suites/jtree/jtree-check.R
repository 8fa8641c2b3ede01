# Junction-tree marginals against gRain on the larger networks (hepar2, win95pts, andes, pigs,
# munin, link where they fit), with no evidence and with `rows` evidence sets from forward samples
# (5% of the nodes observed), and the time gRain takes per query beside ours (CPU engine; the GPU
# where gpu_info() finds one). One line per network; CSV to the path given.
#
# (gRain's time for the rows includes the comparison with ours, a small part.)
#   Rscript bench/suites/jtree/jtree-check.R [out.csv] [rows] [networks...]
suppressPackageStartupMessages({library(gpupc); library(gRain); library(bnlearn)})
args <- commandArgs(TRUE)
out <- if (length(args) >= 1) args[1] else "jtree-check.csv"
rows <- if (length(args) >= 2) as.integer(args[2]) else 100L
nets <- if (length(args) >= 3) args[-(1:2)] else c("hepar2", "win95pts", "andes", "pigs", "munin", "link")
source(file.path("tests", "testthat", "helper-jtree.R"))  # run from the repository root
res <- NULL
for (name in nets) {
  path <- jt_network_path(name)
  if (!file.exists(path)) { cat(name, ": no BIF file\n"); next }
  fit <- jt_read_fit(name)
  t0 <- proc.time()[[3]]
  g <- tryCatch(gRbase::compile(bnlearn::as.grain(fit)), error = function(e) e)
  if (inherits(g, "error")) { cat(name, ": gRain could not compile:", conditionMessage(g), "\n"); next }
  q0 <- querygrain(g, nodes = names(fit))
  grain_single <- proc.time()[[3]] - t0
  for (backend in c("cpu", if (isTRUE(gpu_info()$usable)) "cuda")) {
    jt <- gpu_jtree(fit, backend = backend)
    t0 <- proc.time()[[3]]
    q <- gpu_query(jt)
    ours_single <- proc.time()[[3]] - t0
    d0 <- max(vapply(names(q0), function(v) max(abs(q[[v]] - q0[[v]])), 0))
    ev <- jt_sample_evidence(fit, rows, 0.05, seed = 1)
    t0 <- proc.time()[[3]]
    invisible(gpu_query(jt, evidence = ev))
    ours_batch <- proc.time()[[3]] - t0
    t0 <- proc.time()[[3]]
    d <- jt_compare_grain(jt, g, ev)  # gRain per row inside
    grain_rows <- proc.time()[[3]] - t0
    row <- data.frame(network = name, backend = backend, nodes = length(fit), cliques = jt$stats$cliques,
                      total_cells = jt$stats$total_clique_cells, max_diff_no_evidence = d0,
                      max_diff_marginal = d[["marginal"]], max_rel_diff_pe = d[["pEvidence"]], rows = rows,
                      grain_single_s = grain_single, ours_single_s = ours_single,
                      grain_rows_s = grain_rows, ours_rows_s = ours_batch)
    print(row, row.names = FALSE)
    res <- rbind(res, row)
    utils::write.csv(res, out, row.names = FALSE)
  }
}
