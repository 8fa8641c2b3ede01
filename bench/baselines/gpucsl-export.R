# Writes data sets of the benchmark (the same generators and seeds as compare.R, via lib.R) for
# gpucsl-bench.py, with gpupc's skeleton of each, so gpucsl runs on identical data and its skeleton
# can be compared with gpupc's (= pcalg's; see the parity checks):
#
#   Rscript bench/baselines/gpucsl-export.R OUTDIR [--sets NCI-60-like,DREAM5-like,ALARM,LINK]
#
# OUTDIR/NAME.data.csv (n rows, p columns, no header; discrete codes 0..), OUTDIR/NAME.edges.csv
# (gpupc's skeleton: 0-based i,j with i < j) and OUTDIR/sets.csv (name, kind, p, n, data_id).
args <- commandArgs(trailingOnly = TRUE)
out <- args[1]
sets_opt <- if (length(i <- match("--sets", args)) && !is.na(i)) args[i + 1] else "NCI-60-like,DREAM5-like,ALARM,LINK"
sets <- strsplit(sets_opt, ",")[[1]]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "lib", "lib.R"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)
make <- list(
  "NCI-60-like" = function() gauss_data(1190, 47, degree = 4, seed = 1190),
  "DREAM5-like" = function() gauss_data(1643, 850, degree = 4, seed = 1643),
  "ALARM" = function() network_data("alarm", 10000),
  "LINK" = function() network_data("link", 20000)
)
write_plain <- function(m, f) utils::write.table(m, f, sep = ",", row.names = FALSE, col.names = FALSE)
rows <- list()
for (s in sets) {
  if (is.null(make[[s]])) stop("unknown set ", s)
  d <- make[[s]]()
  X <- if (d$kind == "gauss") d$X else d$suff$dm
  write_plain(X, file.path(out, paste0(s, ".data.csv")))
  sk <- gpu_skeleton(d$suff, d$test, 0.01, p = d$p)
  w <- which(as(sk@graph, "matrix") != 0, arr.ind = TRUE)
  w <- w[w[, 1] < w[, 2], , drop = FALSE] - 1L
  write_plain(w, file.path(out, paste0(s, ".edges.csv")))
  rows[[s]] <- data.frame(name = s, kind = d$kind, p = d$p, n = d$n, data_id = d$id, gpupc_edges = nrow(w))
  cat(sprintf("%s: p = %d, n = %d, gpupc %d edges (%s)\n", s, d$p, d$n, nrow(w), gpupc_last_run()$backend))
}
utils::write.csv(do.call(rbind, rows), file.path(out, "sets.csv"), row.names = FALSE)
