# pcalg's "n < n.min" warning: disCItest / binCItest answer p = 1 and warn for every test they
# run with n < 10 df. gpupc must warn exactly when pcalg does, with the same smallest n.min, and
# for a skeleton with the same number of tests (pcalg warns once per test, gpupc once with
# "[k tests]"). The GPU computes tests past an edge's first success too; only the canonical
# prefixes count (pc-core's citest/small_n.rs). For pc() with the conservative / majority rule the
# triple checks' tests count as well; gpupc runs each distinct test once, pcalg once per triple,
# so there only the presence and n.min are compared.
#
# tests/testthat/test-robust.R runs the cases on the CPU backend; on the GPU machine the
# benchmark runner's parity suite runs them on the CUDA backend (bench/run parity small-n).

small_n_cases <- function(k = 16, seed = 11) {
  set.seed(seed)
  lapply(seq_len(k), function(id) {
    p <- sample(4:6, 1)
    bin <- id %% 4 == 0
    n <- if (bin) sample(c(25, 35, 60), 1) else sample(c(20, 40, 80, 150, 400), 1)
    nlev <- if (bin) rep(2L, p) else sample(2:4, p, TRUE)
    dm <- matrix(0L, n, p)
    for (j in seq_len(p)) {
      own <- sample(0:(nlev[j] - 1L), n, TRUE)
      # binary: a star around variable 1, whose edges reach level 2 (df 4)
      parent <- if (bin) 1L else sample(j - 1, 1)
      dm[, j] <- if (j > 1) ifelse(stats::runif(n) < 0.7, dm[, parent] %% nlev[j], own) else own
      dm[1:2, j] <- 0:1
    }
    fun <- if (id %% 3 == 0) "pc" else "skeleton"
    list(id = id, fun = fun, test = if (bin) "bin" else "dis",
         suffStat = if (bin) list(dm = dm, adaptDF = id %% 5 == 0) else list(dm = dm, nlev = nlev, adaptDF = id %% 5 == 0),
         args = c(list(alpha = sample(c(0.01, 0.05, 0.2), 1), p = p),
                  if (fun == "pc") list(skel.method = sample(c("stable", "stable.fast"), 1),
                                        conservative = id %% 2 == 0, maj.rule = id %% 2 == 1)
                  else list(method = sample(c("stable", "stable.fast"), 1))))
  })
}

# The value of `expr` and its n < n.min warnings: how many tests they report, the smallest n.min.
small_n_warnings <- function(expr) {
  ws <- character(0)
  value <- withCallingHandlers(expr, warning = function(w) {
    if (grepl("n < n.min", conditionMessage(w), fixed = TRUE)) {
      ws <<- c(ws, conditionMessage(w))
      invokeRestart("muffleWarning")
    }
  })
  counted <- grepl("[", ws, fixed = TRUE)
  k <- rep(1, length(ws))
  k[counted] <- as.numeric(sub("^.*\\[([0-9]+) tests\\].*$", "\\1", ws[counted]))
  n_min <- as.numeric(sub("^.*n\\.min = ([0-9]+).*$", "\\1", ws))
  list(value = value, tests = sum(k), n_min = if (length(ws)) min(n_min) else NA_real_)
}

small_n_same_pcalgo <- function(a, b) {
  amat <- function(x) { m <- as(x@graph, "matrix"); storage.mode(m) <- "double"; m }
  sep <- function(x) lapply(x@sepset, function(r) lapply(r, function(v) if (is.null(v)) NULL else as.integer(v)))
  isTRUE(all.equal(amat(a), amat(b))) && identical(sep(a), sep(b)) &&
    isTRUE(all.equal(as.numeric(a@n.edgetests), as.numeric(b@n.edgetests))) &&
    isTRUE(all.equal(a@pMax, b@pMax, tolerance = 1e-9))
}

# One case on `backend`: a row of counts and whether gpupc agrees with pcalg.
small_n_compare <- function(case, backend) {
  test <- switch(case$test, dis = pcalg::disCItest, bin = pcalg::binCItest)
  ref <- switch(case$fun, pc = pcalg::pc, skeleton = pcalg::skeleton)
  gpu <- switch(case$fun, pc = gpupc::gpu_pc, skeleton = gpupc::gpu_skeleton)
  want <- small_n_warnings(do.call(ref, c(list(case$suffStat, test), case$args)))
  got <- small_n_warnings(do.call(gpu, c(list(case$suffStat, test), case$args, backend = backend)))
  tests_ok <- if (case$fun == "skeleton") got$tests == want$tests else (got$tests > 0) == (want$tests > 0)
  data.frame(id = case$id, fun = case$fun, test = case$test, n = nrow(case$suffStat$dm),
             method = if (case$fun == "pc") case$args$skel.method else case$args$method,
             backend = gpupc::gpupc_last_run()$backend,
             pcalg_tests = want$tests, gpupc_tests = got$tests,
             pcalg_n_min = want$n_min, gpupc_n_min = got$n_min,
             same_result = small_n_same_pcalgo(got$value, want$value),
             ok = tests_ok && identical(got$n_min, want$n_min) && small_n_same_pcalgo(got$value, want$value))
}
