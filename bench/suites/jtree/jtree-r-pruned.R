# gpu_query() on a batch whose every evidence set observes the same nodes, for a few nodes: on
# the tree of the part of the network the answer depends on (the default) and on the whole tree
# (options(gpupc.jtree_prune = FALSE)), the same batch in one process; their largest
# differences, and each run's seconds and the nodes it propagated (gpupc_last_run()).
#   Rscript bench/suites/jtree/jtree-r-pruned.R [NETWORK] [OBSERVED] [SETS] [QUERIED] [BACKEND]
# (defaults: munin, 52 observed nodes (5%), 2000 evidence sets forward-sampled, 3 queried nodes,
# the GPU where there is one)
suppressPackageStartupMessages(library(gpupc))
a <- commandArgs(TRUE)
arg <- function(i, d) if (length(a) >= i) a[i] else d
net <- arg(1, "munin"); nobs <- as.integer(arg(2, 52)); rows <- as.integer(arg(3, 2000)); nq <- as.integer(arg(4, 3))
backend <- arg(5, if (isTRUE(gpu_info()$usable)) "cuda" else "cpu")
fit <- bnlearn::read.bif(gpupc:::plain_bif(system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc")))
jt <- gpu_jtree(fit, backend = backend)
set.seed(1)
d <- bnlearn::rbn(fit, rows)
obs <- sample(jt$nodes, nobs)
q <- sample(setdiff(jt$nodes, obs), nq)
ev <- data.frame(lapply(d[obs], as.character), stringsAsFactors = FALSE)
run <- function(prune) {
  old <- options(gpupc.jtree_prune = prune)
  on.exit(options(old))
  s <- system.time(r <- gpu_query(jt, nodes = q, evidence = ev))[["elapsed"]]
  list(r = r, s = s, nodes = gpupc_last_run()$nodes_propagated)
}
p1 <- run(TRUE); p2 <- run(TRUE); w <- run(FALSE)
cat(sprintf("%s (%s), %d sets observing the same %d nodes, %d queried: the part's tree %.3f s (the first query), %.3f s (%d nodes); the whole tree %.3f s (%d nodes); %.0fx\n",
            net, backend, rows, nobs, nq, p1$s, p2$s, p2$nodes, w$s, w$nodes, w$s / p2$s))
cat(sprintf("  largest |marginal difference| %.2e, largest relative P(evidence) difference %.2e, the part's two runs identical: %s\n",
            max(sapply(q, function(v) max(abs(p2$r[[v]] - w$r[[v]])))),
            max(abs(attr(p2$r, "pEvidence") / attr(w$r, "pEvidence") - 1)), identical(p1$r, p2$r)))
