# Joins CSV files written by run.R (e.g. the parts of inst/bench/device-suite.sh) into one, and works
# out agreement with pcalg across them (a gpupc row of one part against pcalg-stable of another):
#
#   Rscript inst/bench/merge.R --out inst/extdata/bench/suite-h100.csv OUTDIR/stage*.csv
#
# Rows are kept as they are, in file order, except that a data set/tool pair measured again in a later
# file replaces the earlier row (so a part rerun after a time-out wins); the GPU warm-up rows (one per
# process) all stay. Needs no package.
args <- commandArgs(trailingOnly = TRUE)
i <- match("--out", args)
if (is.na(i) || length(args) < i + 2) stop("usage: Rscript inst/bench/merge.R --out MERGED.csv FILE.csv...")
out <- args[i + 1]
files <- args[-c(i, i + 1)]
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "agreement.R"))
parts <- lapply(files, function(f) {
  x <- read.csv(f, stringsAsFactors = FALSE, check.names = FALSE, colClasses = c(status = "character"))
  cat(sprintf("%s: %d rows\n", f, nrow(x)))
  x
})
parts <- Filter(nrow, parts)
if (!length(parts)) stop("no rows in ", paste(files, collapse = ", "))
cols <- unique(unlist(lapply(parts, names)))
res <- do.call(rbind, lapply(parts, function(x) { x[setdiff(cols, names(x))] <- NA; x[cols] }))
key <- paste(res$data_id, res$tool, res$suite)
res <- res[!duplicated(key, fromLast = TRUE) | res$suite == "warm-up", ]  # every part's warm-up stays
res <- bench_agreement(res)
write.csv(res, out, row.names = FALSE)
cat(sprintf("wrote %d rows to %s\n", nrow(res), out))
