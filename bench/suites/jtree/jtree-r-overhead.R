# The R side of a junction-tree batch, without propagating: reading a batch of evidence sets
# (a data frame, one set per row, 5% of the nodes observed) into the codes Rust takes, as
# gpu_query() does, for character and for factor columns.
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
tc <- system.time(e1 <- gpupc:::jt_evidence(jt, ev))[["elapsed"]]
tf <- system.time(e2 <- gpupc:::jt_evidence(jt, evf))[["elapsed"]]
stopifnot(identical(e1, e2))
cat(sprintf("%s, %d evidence sets x %d nodes: evidence from characters %.2f s, from factors %.2f s\n",
            net, sets, length(jt$nodes), tc, tf))
