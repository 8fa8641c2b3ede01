# gpu_query() one evidence set at a time, as a gRain user asks (setEvidence, then querygrain):
# NETWORK (default munin), K queries (default 20) of one random evidence set each
# (5% of the nodes observed), after one untimed query; prints each query's seconds, their
# median and the last query's phases from gpupc_last_run().
#   Rscript bench/suites/jtree/jtree-r-single.R [NETWORK] [K] [BACKEND]
suppressPackageStartupMessages(library(gpupc))
a <- commandArgs(TRUE)
net <- if (length(a) >= 1) a[1] else "munin"
k <- if (length(a) >= 2) as.integer(a[2]) else 20L
backend <- if (length(a) >= 3) a[3] else if (isTRUE(gpu_info()$usable)) "cuda" else "cpu"
jt <- gpu_jtree(system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc"), backend = backend)
set.seed(7)
one <- function() {
  e <- as.data.frame(lapply(jt$states, function(st) if (runif(1) < 0.05) sample(st, 1) else NA_character_), stringsAsFactors = FALSE)
  names(e) <- jt$nodes
  e
}
invisible(suppressWarnings(gpu_query(jt, evidence = one(), backend = backend)))
s <- vapply(seq_len(k), function(i) { e <- one(); system.time(suppressWarnings(gpu_query(jt, evidence = e, backend = backend)))[["elapsed"]] }, 0)
ph <- gpupc_last_run()$phases
cat(sprintf("%s, one evidence set per gpu_query() (%s): median %.4f s over %d queries (%s); last: %s\n", net, backend, stats::median(s), k,
            paste(sprintf("%.3f", s), collapse = " "), paste(sprintf("%s %.4f", names(ph), ph), collapse = ", ")))
