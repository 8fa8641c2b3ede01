# The answers of gpu_query() and gpu_mpe() through R on the bundled networks, for comparing two
# builds or two backends with identical() (every matrix, its names, P(evidence), NA where the
# evidence is impossible): batches of random evidence (15% of the nodes observed,
# so that some sets are impossible), a subset of nodes as data frames, no evidence, one set, the
# MPE of 50 sets.
#   Rscript bench/suites/jtree/jtree-r-answers.R save OUT.rds [BACKEND] [NETWORK...]
#   Rscript bench/suites/jtree/jtree-r-answers.R compare A.rds B.rds
# compare prints one line per network and query and "answers: N compared, N identical, N differ";
# it exits 1 when any differs.
a <- commandArgs(TRUE)
if (identical(a[1], "compare")) {
  x <- readRDS(a[2]); y <- readRDS(a[3])
  same <- 0L; differ <- 0L
  for (net in union(names(x), names(y))) for (q in union(names(x[[net]]), names(y[[net]]))) {
    ok <- identical(x[[net]][[q]], y[[net]][[q]])
    cat(sprintf("%-10s %-3s %s\n", net, q, if (ok) "identical" else "DIFFER"))
    if (ok) same <- same + 1L else differ <- differ + 1L
  }
  cat(sprintf("answers: %d compared, %d identical, %d differ\n", same + differ, same, differ))
  quit(status = if (differ > 0L) 1L else 0L)
}
suppressPackageStartupMessages(library(gpupc))
out <- a[2]
backend <- if (length(a) >= 3) a[3] else "cpu"
nets <- if (length(a) >= 4) a[-(1:3)] else c("asia", "alarm", "hepar2", "child", "insurance", "andes")
res <- list()
for (net in nets) {
  jt <- gpu_jtree(system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc"), backend = backend)
  set.seed(3)
  sets <- 500
  ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, sets, replace = TRUE); v[runif(sets) > 0.15] <- NA; v }),
                      stringsAsFactors = FALSE)
  names(ev) <- jt$nodes
  some <- rev(jt$nodes[seq(1, length(jt$nodes), 3)])
  res[[net]] <- list(
    q = suppressWarnings(gpu_query(jt, evidence = ev, backend = backend)),
    q2 = suppressWarnings(gpu_query(jt, nodes = some, evidence = ev, backend = backend, exclude = FALSE, result = "data.frame")),
    q3 = gpu_query(jt, backend = backend),
    q4 = suppressWarnings(gpu_query(jt, evidence = ev[7, , drop = FALSE], backend = backend)),
    m = suppressWarnings(gpu_mpe(jt, evidence = ev[1:50, ], backend = backend)))
  q <- res[[net]]$q
  cat(sprintf("%s (%s): %d sets, %d impossible, %d NA cells\n", net, backend, sets, sum(!(attr(q, "pEvidence") > 0)), sum(is.na(unlist(q)))))
}
saveRDS(res, out)
