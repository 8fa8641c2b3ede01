# A query's buffers held for the next query of the same tree, and given back to another engine:
# gpu_query() of SETS Munin evidence sets (5% of the nodes observed) twice, GPU memory free after
# each (gpu_info()), a gaussCItest gpu_skeleton() on the same GPU (its memory planning lets go of
# what the tree held), the free memory again, a third query (its answers identical() to the
# first's), and the memory once the tree is gone (rm(); gc()).
#   Rscript bench/suites/jtree/jtree-r-held.R [SETS]
suppressPackageStartupMessages({ library(gpupc); library(pcalg) })
a <- commandArgs(TRUE)
sets <- if (length(a) >= 1) as.integer(a[1]) else 10000L
free_gb <- function() {
  i <- gpu_info()
  (if (is.data.frame(i$devices)) i$devices$free_bytes[1] else i$free_bytes) / 1e9
}
jt <- gpu_jtree(system.file("extdata", "networks", "munin.bif.gz", package = "gpupc"), backend = "cuda", devices = 0)
set.seed(11)
ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, sets, replace = TRUE); v[runif(sets) > 0.05] <- NA; v }),
                    stringsAsFactors = FALSE)
names(ev) <- jt$nodes
q <- function(what) {
  t <- system.time(r <- suppressWarnings(gpu_query(jt, evidence = ev)))[["elapsed"]]
  cat(sprintf("%s: %.3f s (query in Rust %.3f s); GPU memory free after it %.1f GB\n", what, t,
              gpupc_last_run()$phases[["query_s"]], free_gb()))
  r
}
cat(sprintf("GPU memory free before the first query: %.1f GB\n", free_gb()))
r1 <- q("first query")
r2 <- q("second query")
set.seed(3)
p <- 300; x <- matrix(rnorm(2000 * p), 2000, p); x[, 2] <- x[, 1] + rnorm(2000)
sk <- gpu_skeleton(list(C = cor(x), n = 2000), gaussCItest, alpha = 0.01, p = p, backend = "cuda", devices = 0)
cat(sprintf("gpu_skeleton(gaussCItest, p = %d) on the same GPU: %d edges; GPU memory free after it %.1f GB\n",
            p, sum(as(sk@graph, "matrix")) / 2, free_gb()))
r3 <- q("third query")
cat(sprintf("answers of the three queries identical(): %s, %s\n", identical(r1, r2), identical(r1, r3)))
rm(jt); invisible(gc())
cat(sprintf("after rm(jt); gc(): GPU memory free %.1f GB\n", free_gb()))
