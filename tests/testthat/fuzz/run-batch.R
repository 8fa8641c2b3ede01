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

# The result (or a fuzz_error), with attribute "n_min": disCItest / binCItest's n < n.min
# warnings as c(tests, smallest n.min) (pcalg warns per test, gpupc once with "[k tests]")
call_one <- function(f, case, extra = list()) {
  a <- case$args
  a <- a[!vapply(a, is.null, TRUE)]
  set.seed(case$id)   # the random test and u2pd = "rand" draw the same numbers in both
  small <- c(tests = 0, n_min = NA)
  note <- function(w) {
    m <- conditionMessage(w)
    if (!grepl("n < n.min", m, fixed = TRUE)) return()
    k <- if (grepl("[", m, fixed = TRUE)) as.numeric(sub("^.*\\[([0-9]+) tests\\].*$", "\\1", m)) else 1
    small <<- c(tests = small[["tests"]] + k,
                n_min = min(small[["n_min"]], as.numeric(sub("^.*n\\.min = ([0-9]+).*$", "\\1", m)), na.rm = TRUE))
  }
  res <- tryCatch(suppressWarnings(suppressMessages(withCallingHandlers(
    do.call(f, c(list(suffStat = case$suffStat, indepTest = fuzz_test(case$test)), a, extra)), warning = note))),
    error = function(e) structure(list(message = conditionMessage(e)), class = "fuzz_error"))
  attr(res, "n_min") <- small
  res
}

# NULL when the n < n.min warnings agree: present in both or neither, the same smallest n.min,
# and for a skeleton the same number of tests (pc()'s triple checks: gpupc runs each distinct
# test once, pcalg once per triple)
small_n_differs <- function(got, want, fun) {
  g <- attr(got, "n_min"); w <- attr(want, "n_min")
  if ((g[["tests"]] > 0) != (w[["tests"]] > 0) || !identical(g[["n_min"]], w[["n_min"]]) ||
      (fun == "skeleton" && g[["tests"]] != w[["tests"]]))
    return(sprintf("n < n.min warnings (gpupc %g tests, n.min %g; pcalg %g tests, n.min %g)",
                   g[["tests"]], g[["n_min"]], w[["tests"]], w[["n_min"]]))
  NULL
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
    if (is.null(d)) d <- small_n_differs(got, want, case$fun)
    if (is.null(d)) "same" else paste("differs:", d)
  }
  saveRDS(list(id = id, verdict = verdict), file.path(out, sprintf("%04d.rds", id)))
}
