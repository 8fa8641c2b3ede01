# The R side of a junction-tree batch, without propagating: reading a batch of evidence sets
# (a data frame, one set per row, 5% of the nodes observed) into the codes Rust takes, as
# gpu_query() does, for character and for factor columns; then the nodes every set observes
# (which gpu_query() leaves out of its answer), from the counts made while coding where the
# build has them (`seen`), else by R's scan of the rows x nodes matrix, as builds before did.
#   Rscript bench/suites/jtree/jtree-r-overhead.R [NETWORK] [SETS]      (default munin 30000)
suppressPackageStartupMessages(library(gpupc))
a <- commandArgs(TRUE)
net <- if (length(a) >= 1) a[1] else "munin"
sets <- if (length(a) >= 2) as.integer(a[2]) else 30000L
jt <- gpu_jtree(system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc"), backend = "cpu", numCores = 2)
set.seed(11)
ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, sets, replace = TRUE); v[runif(sets) > 0.05] <- NA; v }),
                    stringsAsFactors = FALSE)
names(ev) <- jt$nodes
evf <- as.data.frame(lapply(seq_along(ev), function(j) factor(ev[[j]], levels = jt$states[[j]])))
names(evf) <- jt$nodes
observed <- function(e) (if (is.null(e$seen)) colSums(e$hard >= 0L) else e$seen) == e$rows | e$soft_col >= 0L
tc <- system.time(e1 <- gpupc:::jt_evidence(jt, ev))[["elapsed"]]
tf <- system.time(e2 <- gpupc:::jt_evidence(jt, evf))[["elapsed"]]
to <- system.time(o1 <- observed(e1))[["elapsed"]]
stopifnot(identical(e1, e2), !any(o1))
cat(sprintf("%s, %d evidence sets x %d nodes: evidence from characters %.2f s, from factors %.2f s; the nodes every set observes %.2f s\n",
            net, sets, length(jt$nodes), tc, tf, to))
