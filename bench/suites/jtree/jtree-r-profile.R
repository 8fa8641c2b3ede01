# Where a gpu_query() batch's time goes on R's side: R's profiler (Rprof) over one batch on the
# GPU (Munin by default, evidence sets with 5% of the nodes observed as a data frame of
# characters, after a warm-up of 2,000 sets), its calls by total time, and gpupc_last_run()'s
# phases (query_s the propagation in Rust, results_s the R matrices) beside the elapsed time.
#   Rscript bench/suites/jtree/jtree-r-profile.R [NETWORK] [SETS] [BACKEND]   (munin 10000 cuda)
suppressPackageStartupMessages(library(gpupc))
a <- commandArgs(TRUE)
net <- if (length(a) >= 1) a[1] else "munin"
sets <- if (length(a) >= 2) as.integer(a[2]) else 10000L
backend <- if (length(a) >= 3) a[3] else "cuda"
jt <- gpu_jtree(system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc"), backend = backend)
set.seed(11)
ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, sets, replace = TRUE); v[runif(sets) > 0.05] <- NA; v }),
                    stringsAsFactors = FALSE)
names(ev) <- jt$nodes
invisible(suppressWarnings(gpu_query(jt, evidence = ev[seq_len(min(2000L, sets)), ])))
gc()
prof <- tempfile()
Rprof(prof, interval = 0.005)
t <- system.time(q <- suppressWarnings(gpu_query(jt, evidence = ev)))[["elapsed"]]
Rprof(NULL)
ph <- gpupc_last_run()$phases
cat(sprintf("%s, %d evidence sets, %s: gpu_query %.3f s; %s\n", net, sets, backend, t,
            paste(sprintf("%s %.3f s", names(ph), ph), collapse = ", ")))
s <- summaryRprof(prof)
print(utils::head(s$by.total, 25))
print(utils::head(s$by.self, 12))
