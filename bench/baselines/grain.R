# gRain 1.4.6 beside our junction tree on the GPU machine (one call of bench/run jtree):
# per network gRain's compile and one query without evidence (all marginals), the time gRain
# takes per evidence set (setEvidence + querygrain of all nodes + pEvidence, 5% of the nodes
# observed, from forward samples), and its answers against ours: no evidence, and evidence sets
# (the rows named per network). Ours are computed first, in this process, on the GPU (the CPU
# engine where there is none); gRain then runs in forked workers of one thread each, jobs of up to
# `chunk` evidence sets (each job compiles gRain anew), in the order given (the longest first). A
# job stops taking new rows after `cap` seconds (at least one row each) and is stopped after JOB_S seconds
# (setTimeLimit); what was not done is reported, not hidden.
#
#   JOB_S=150 Rscript bench/baselines/grain.R OUT_PREFIX WORKERS CAP CHUNK NET:ROWS[:CHUNK] ...
# writes OUT_PREFIX-grain.csv (one line per job, appended as jobs end) and
# OUT_PREFIX-grain-summary.csv (per network);
# touches OUT_PREFIX-gpu-done once ours are computed (the driver waits for it before timing ours).
suppressPackageStartupMessages({library(gpupc); library(gRain); library(bnlearn); library(parallel)})
args <- commandArgs(TRUE)
prefix <- args[1]; workers <- as.integer(args[2]); cap <- as.numeric(args[3]); chunk <- as.integer(args[4])
spec <- strsplit(args[-(1:4)], ":", fixed = TRUE)
nets <- vapply(spec, `[`, "", 1)
nrows <- stats::setNames(as.integer(vapply(spec, `[`, "", 2)), nets)
chunks <- stats::setNames(vapply(spec, function(x) if (length(x) >= 3) as.integer(x[3]) else chunk, 1L), nets)
source(file.path("tests", "testthat", "helper-jtree.R"))

ours <- list()
for (name in nets) {
  fit <- jt_read_fit(name)
  jt <- gpu_jtree(fit, max.cells = 2^33)
  ev <- if (nrows[[name]] > 0) jt_sample_evidence(fit, nrows[[name]], 0.05, seed = 1) else NULL
  ours[[name]] <- list(fit = fit, backend = jt$backend, q0 = gpu_query(jt),
                       ev = ev, q = if (!is.null(ev)) gpu_query(jt, evidence = ev))
  cat(sprintf("%s: ours on %s, %d evidence sets\n", name, jt$backend, if (is.null(ev)) 0L else nrow(ev)))
  rm(jt); gc(verbose = FALSE)
}
file.create(paste0(prefix, "-gpu-done"))

jobs <- list()
for (name in nets) {
  n <- nrows[[name]]
  k <- chunks[[name]]
  starts <- if (n > 0) seq(1, n, by = k) else 1
  for (s in starts) jobs[[length(jobs) + 1]] <- list(name = name, rows = if (n > 0) s:min(n, s + k - 1) else integer())
}

job_s <- as.numeric(Sys.getenv("JOB_S", "1e6"))
jobs_csv <- paste0(prefix, "-grain.csv")
run_job <- function(j) {
  setTimeLimit(elapsed = job_s, transient = TRUE)
  o <- ours[[j$name]]
  t0 <- proc.time()[[3]]
  g <- compile(as.grain(o$fit))
  t1 <- proc.time()[[3]]
  q0 <- querygrain(g, nodes = names(o$fit))
  t2 <- proc.time()[[3]]
  d0 <- max(vapply(names(q0), function(v) max(abs(o$q0[[v]][names(q0[[v]])] - as.numeric(q0[[v]]))), 0))
  dm <- 0; dp <- 0; done <- 0L
  t3 <- proc.time()[[3]]
  for (r in j$rows) {
    ref <- jt_grain_row(g, o$ev, r)
    for (v in names(ref$marg)) dm <- max(dm, abs(o$q[[v]][r, names(ref$marg[[v]])] - as.numeric(ref$marg[[v]])))
    dp <- max(dp, abs(attr(o$q, "pEvidence")[r] - ref$pe) / ref$pe)
    done <- done + 1L
    if (proc.time()[[3]] - t3 > cap) break
  }
  t4 <- proc.time()[[3]]
  data.frame(network = j$name, first_row = if (length(j$rows)) j$rows[1] else NA, rows_asked = length(j$rows),
             rows_done = done, ours_backend = o$backend, grain_compile_s = t1 - t0, grain_query_s = t2 - t1,
             grain_single_s = t2 - t0, grain_s_per_row = if (done) (t4 - t3) / done else NA,
             max_diff_no_evidence = d0, max_diff_marginal = if (done) dm else NA, max_rel_diff_pe = if (done) dp else NA)
}

res <- mclapply(jobs, function(j) {
  r <- tryCatch(run_job(j), error = function(e) {
    data.frame(network = j$name, first_row = NA, rows_asked = length(j$rows), rows_done = 0L, ours_backend = NA,
               grain_compile_s = NA, grain_query_s = NA, grain_single_s = NA, grain_s_per_row = NA,
               max_diff_no_evidence = NA, max_diff_marginal = NA, max_rel_diff_pe = gsub("[\n,]", " ", conditionMessage(e)))
  })
  utils::write.table(r, jobs_csv, append = TRUE, sep = ",", row.names = FALSE, col.names = FALSE)
  r
}, mc.cores = workers, mc.preschedule = FALSE)
res <- do.call(rbind, res)
utils::write.csv(res, jobs_csv, row.names = FALSE)
num <- function(x) suppressWarnings(as.numeric(x))
mx <- function(x, f = max) { x <- num(x); x <- x[!is.na(x)]; if (length(x)) f(x) else NA }
summ <- do.call(rbind, lapply(split(res, res$network), function(d) {
  data.frame(network = d$network[1], nodes = length(ours[[d$network[1]]]$fit), ours_backend = d$ours_backend[1],
             grain_compile_s = mx(d$grain_compile_s, min), grain_query_s = mx(d$grain_query_s, min),
             grain_single_s = mx(d$grain_single_s, min), rows_asked = sum(d$rows_asked), rows_done = sum(d$rows_done),
             grain_s_per_row = sum(num(d$grain_s_per_row) * d$rows_done, na.rm = TRUE) / max(1, sum(d$rows_done)),
             max_diff_no_evidence = mx(d$max_diff_no_evidence), max_diff_marginal = mx(d$max_diff_marginal),
             max_rel_diff_pe = mx(d$max_rel_diff_pe))
}))
utils::write.csv(summ, paste0(prefix, "-grain-summary.csv"), row.names = FALSE)
print(summ, row.names = FALSE)
