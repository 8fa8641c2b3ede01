# Joins the rows compare.R wrote in several runs (the parts of a suite, each maybe in its own
# device call) into one table, and works out agreement with pcalg across them (a gpupc row of one
# part against pcalg-stable of another). bench/lib/collect.R sources it for the `compare` tables;
# on its own:
#
#   Rscript bench/lib/merge.R --out MERGED.csv FILE.csv ...
#
# Rows are kept as they are, in file order, except that a data set/tool pair measured again in a
# later file replaces the earlier row (so a part rerun after a time-out wins); the GPU warm-up
# rows (one per process) all stay. Needs no package.
merge_compare <- function(parts) {
  parts <- Filter(function(x) !is.null(x) && nrow(x) > 0, parts)
  if (!length(parts)) return(NULL)
  cols <- unique(unlist(lapply(parts, names)))
  res <- do.call(rbind, lapply(parts, function(x) { x[setdiff(cols, names(x))] <- NA; x[cols] }))
  id <- if (is.null(res$data_id)) rep(NA_character_, nrow(res)) else res$data_id
  id <- ifelse(is.na(id) | !nzchar(id), paste(res$data, res$p, res$n), id)
  key <- paste(id, res$tool, res$suite, if (!is.null(res$machine)) res$machine)
  warm <- res$suite == "warm-up"
  warm_key <- paste(key, res$started)
  res <- res[(!duplicated(key, fromLast = TRUE) & !warm) | (warm & !duplicated(warm_key, fromLast = TRUE)), ]
  bench_agreement(res)
}

if (sys.nframe() == 0L) {
  args <- commandArgs(trailingOnly = TRUE)
  i <- match("--out", args)
  if (is.na(i) || length(args) < i + 2) stop("usage: Rscript bench/lib/merge.R --out MERGED.csv FILE.csv...")
  out <- args[i + 1]
  files <- args[-c(i, i + 1)]
  here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
  source(file.path(here, "agreement.R"))
  parts <- lapply(files, function(f) {
    x <- read.csv(f, stringsAsFactors = FALSE, check.names = FALSE, colClasses = c(status = "character"))
    cat(sprintf("%s: %d rows\n", f, nrow(x)))
    x
  })
  res <- merge_compare(parts)
  if (is.null(res)) stop("no rows in ", paste(files, collapse = ", "))
  write.csv(res, out, row.names = FALSE)
  cat(sprintf("wrote %d rows to %s\n", nrow(res), out))
}
