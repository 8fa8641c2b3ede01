# From data to answers: forward samples of a network -> gpu_pc (disCItest, alpha 0.01) ->
# gpu_jtree (the CPDAG extended by pcalg::pdag2dag, parameters by bnlearn::bn.fit, Bayesian,
# iss 1) -> gpu_query (no evidence, and a batch of evidence sets with 5% of the nodes observed,
# drawn from other samples of the true network), each step timed; the learned skeleton against the
# true one. The vignette's section "From data to answers" shows the CSV this writes.
#
#   Rscript bench/suites/jtree/jtree-path.R OUT.csv N_SAMPLES BATCH NET ...   (from the repo root)
suppressPackageStartupMessages({library(gpupc); library(bnlearn)})
args <- commandArgs(TRUE)
out <- args[1]; n <- as.integer(args[2]); batch <- as.integer(args[3]); nets <- args[-(1:3)]
source(file.path("tests", "testthat", "helper-jtree.R"))
info <- gpu_info()
backend <- if (isTRUE(info$usable)) "cuda" else "cpu"
el <- function(expr) { t0 <- proc.time()[[3]]; force(expr); proc.time()[[3]] - t0 }
res <- NULL
if (backend == "cuda") invisible(gpu_jtree(jt_read_fit("asia"), backend = "cuda"))  # the first CUDA call of the process
for (name in nets) {
  fit <- jt_read_fit(name)
  set.seed(1)
  smp <- rbn(fit, n)
  D <- sapply(smp, function(x) as.integer(x) - 1L)
  nlev <- vapply(smp, nlevels, 1L)
  t_pc <- el(pc <- gpu_pc(list(dm = D, nlev = nlev, adaptDF = FALSE), pcalg::disCItest, 0.01,
                          labels = colnames(D), backend = backend))
  learned <- methods::as(pc@graph, "matrix") != 0
  truth <- amat(bn.net(fit)) != 0
  sk_l <- learned | t(learned); sk_t <- truth | t(truth)
  tp <- sum(sk_l & sk_t) / 2
  message(sprintf("%s: gpu_pc %.2f s, %d edges learned (%d in the true skeleton)", name, t_pc, sum(sk_l) / 2, tp))
  t_jt <- el(jt <- tryCatch(gpu_jtree(pc, data = smp, backend = backend), error = function(e) e))
  row <- data.frame(network = name, nodes = ncol(D), samples = n, backend = backend,
                    true_edges = sum(sk_t) / 2, learned_edges = sum(sk_l) / 2, edges_in_truth = tp,
                    gpu_pc_s = t_pc, gpu_jtree_s = t_jt, cliques = NA, max_clique_cells = NA, total_cells = NA,
                    query_s = NA, batch = batch, batch_s = NA, error = "")
  if (inherits(jt, "error")) {
    row$error <- conditionMessage(jt)
  } else {
    row$cliques <- jt$stats$cliques; row$max_clique_cells <- jt$stats$max_clique_cells
    row$total_cells <- jt$stats$total_clique_cells
    message(sprintf("%s: gpu_jtree %.2f s, %d cliques, largest %g cells, %g cells in all", name, t_jt,
                    jt$stats$cliques, jt$stats$max_clique_cells, jt$stats$total_clique_cells))
    row$query_s <- el(q <- gpu_query(jt))
    message(sprintf("%s: one query %.3f s", name, row$query_s))
    ev <- jt_sample_evidence(fit, batch, 0.05, seed = 2)
    # a state the data never showed is not a state of the learned network: unobserved there
    for (v in names(ev)) ev[[v]][!ev[[v]] %in% jt$states[[v]]] <- NA
    row$batch_s <- el(qb <- suppressWarnings(gpu_query(jt, evidence = ev)))
    message(sprintf("%s: %d evidence sets %.2f s", name, batch, row$batch_s))
  }
  print(row, row.names = FALSE)
  res <- rbind(res, row)
  utils::write.csv(res, out, row.names = FALSE)
}
