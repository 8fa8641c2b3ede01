# One child process of test-fuzz.R: runs a batch of fuzz cases with pcalg and with gpupc and
# writes each case's verdict to <out>/<id>.rds (a case without one crashed or hung its process).
# Usage: Rscript run-batch.R <cases.rds> <first id> <last id> <out dir>
args <- commandArgs(TRUE)
cases <- readRDS(args[1])
ids <- seq(as.integer(args[2]), as.integer(args[3]))
out <- args[4]
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))), "generate.R"))

# NULL when both pcAlgo objects agree slot by slot, else what differs
differs <- function(a, b) {
  amat <- function(x) { m <- as(x@graph, "matrix"); storage.mode(m) <- "double"; m }
  if (!identical(dim(amat(a)), dim(amat(b))) || any(amat(a) != amat(b))) return("graph")
  if (!identical(graph::nodes(a@graph), graph::nodes(b@graph))) return("labels")
  sa <- lapply(a@sepset, function(r) lapply(r, function(v) if (is.null(v)) NULL else as.integer(v)))
  sb <- lapply(b@sepset, function(r) lapply(r, function(v) if (is.null(v)) NULL else as.integer(v)))
  if (!identical(sa, sb)) return("sepset")
  pa <- a@pMax; pb <- b@pMax
  if (!identical(dim(pa), dim(pb)) || !identical(is.na(pa), is.na(pb))) return("pMax pattern")
  f <- is.finite(pa) & is.finite(pb)
  if (!identical(is.finite(pa), is.finite(pb)) || any(pa[!f & !is.na(pa)] != pb[!f & !is.na(pb)]) ||
      any(abs(pa[f] - pb[f]) > 1e-9 * pmax(abs(pa[f]), abs(pb[f]), 1e-300))) return("pMax")
  if (!isTRUE(all.equal(as.numeric(a@n.edgetests), as.numeric(b@n.edgetests), tolerance = 0))) return("n.edgetests")
  if (!identical(a@max.ord, b@max.ord)) return("max.ord")
  NULL
}

call_one <- function(f, case, extra = list()) {
  a <- case$args
  a <- a[!vapply(a, is.null, TRUE)]
  set.seed(case$id)   # the random test and u2pd = "rand" draw the same numbers in both
  tryCatch(suppressWarnings(suppressMessages(do.call(f, c(list(suffStat = case$suffStat, indepTest = fuzz_test(case$test)), a, extra)))),
           error = function(e) structure(list(message = conditionMessage(e)), class = "fuzz_error"))
}

for (id in ids) {
  case <- cases[[id]]
  ref <- switch(case$fun, pc = pcalg::pc, skeleton = pcalg::skeleton)
  gpu <- switch(case$fun, pc = gpupc::gpu_pc, skeleton = gpupc::gpu_skeleton)
  want <- call_one(ref, case)
  if (case$expect == "pcalg on as.matrix(C)" && inherits(want, "fuzz_error")) {
    fixed <- case
    fixed$suffStat$C <- as.matrix(case$suffStat$C)
    want <- call_one(ref, fixed)
  }
  got <- call_one(gpu, case, list(backend = "cpu"))
  ge <- inherits(got, "fuzz_error"); we <- inherits(want, "fuzz_error")
  verdict <- if (case$expect == "refuse") {
    if (ge && grepl(case$arg, got$message, fixed = TRUE)) "refused" else "refusal missing"
  } else if (ge && we) "both error"
  else if (ge) paste("only gpupc errs:", got$message)
  else if (we) paste("only pcalg errs:", want$message)
  else {
    d <- differs(got, want)
    if (is.null(d)) "same" else paste("differs:", d)
  }
  saveRDS(list(id = id, verdict = verdict), file.path(out, sprintf("%04d.rds", id)))
}
