## Parity with pcalg on Gaussian data: gpu_pc() vs pcalg::pc() and gpu_skeleton() vs
## pcalg::skeleton(), slot by slot (see helper-compare.R). Every case is one row of a deterministic
## case table; a failure prints the row. Data: pcalg::randomDAG(p, prob) + rmvDAG(n, g) under the
## row's seed, prob = k / (p - 1) for about k expected neighbours per node.
## Rows marked `extended` (pcalg's R skeleton on the largest, densest graph at the largest n, for
## seconds) run in the extended mode only, the other rows in the default mode only
## (helper-extended.R; CI runs both); their stable.fast twins stay in the default.

ALPHAS <- c(0.001, 0.01, 0.05, 0.2)

gauss_case <- function(group, seed, p, k, n, alpha, method, fun = "pc", m.max = Inf, fixed = "none",
                       NAdelete = TRUE, u2pd = "relaxed", conservative = FALSE, maj.rule = FALSE,
                       solve.confl = FALSE, test = "gauss", numCores = NA_integer_, labels = FALSE,
                       extended = FALSE) {
  data.frame(group = group, seed = as.integer(seed), p = as.integer(p), k = k, n = as.integer(n),
             alpha = alpha, method = method, fun = fun, m.max = m.max, fixed = fixed,
             NAdelete = NAdelete, u2pd = u2pd, conservative = conservative, maj.rule = maj.rule,
             solve.confl = solve.confl, test = test, numCores = as.integer(numCores),
             labels = labels, extended = extended, stringsAsFactors = FALSE)
}

build_gauss_cases <- function() {
  cs <- list()
  add <- function(...) cs[[length(cs) + 1L]] <<- gauss_case(...)
  meths <- c("stable", "stable.fast")

  ## A: the main grid (p, density, n, method); alpha, fun and labels cycle along the rows.
  gr <- expand.grid(p = c(5, 10, 20, 40, 80), k = c(1.5, 4), n = c(20, 100, 1000, 5000),
                    method = meths, stringsAsFactors = FALSE)
  for (i in seq_len(nrow(gr))) {
    r <- gr[i, ]
    add("A", 1000 + i, r$p, r$k, r$n, ALPHAS[(i - 1) %% 4 + 1], r$method,
        fun = c("pc", "skeleton")[(i - 1) %% 2 + 1], labels = (i %% 3 == 0),
        extended = r$p == 80 && r$k == 4 && r$n == 5000 && r$method == "stable")
  }
  ## B: fewer observations than variables.
  nb <- list(c(60, 2, 20), c(60, 4, 20), c(100, 2, 30), c(40, 3, 25), c(30, 2, 10))
  for (i in seq_along(nb)) for (m in meths)
    add("B", 2000 + i, nb[[i]][1], nb[[i]][2], nb[[i]][3], ALPHAS[(i + (m == "stable")) %% 4 + 1], m,
        fun = if (m == "stable") "pc" else "skeleton")
  ## C: m.max.
  for (mm in c(0, 1, 2, Inf)) for (m in meths) {
    add("C", 3001, 20, 4, 1000, 0.05, m, fun = "skeleton", m.max = mm)
    add("C", 3002, 40, 3, 500, 0.01, m, fun = "pc", m.max = mm)
  }
  ## D: fixedGaps / fixedEdges.
  for (fx in c("gaps", "edges", "both")) for (m in meths) for (f in c("pc", "skeleton")) {
    add("D", 4001, 15, 3, 1000, 0.05, m, fun = f, fixed = fx)
    add("D", 4002, 30, 4, 300, 0.2, m, fun = f, fixed = fx, labels = TRUE)
  }
  ## E: NAdelete, with a test that returns NA for some (x, y, S), and with gaussCItest.
  for (nd in c(TRUE, FALSE)) for (m in meths) {
    for (f in c("pc", "skeleton")) add("E", 5001, 15, 3, 500, 0.05, m, fun = f, NAdelete = nd, test = "na")
    add("E", 5002, 12, 3, 200, 0.01, m, fun = "skeleton", NAdelete = nd)
  }
  ## F: u2pd (seed set before both calls for "rand").
  for (u in c("relaxed", "rand", "retry")) for (m in meths) {
    add("F", 6001, 10, 3, 1000, 0.05, m, u2pd = u)
    add("F", 6002, 20, 3, 500, 0.01, m, u2pd = u)
    add("F", 6003, 30, 2, 2000, 0.2, m, u2pd = u, labels = TRUE)
  }
  ## G: conservative, majority rule, conflict solving.
  orient <- list(list(TRUE, FALSE, FALSE), list(FALSE, TRUE, FALSE), list(FALSE, FALSE, TRUE),
                 list(TRUE, FALSE, TRUE), list(FALSE, TRUE, TRUE))
  for (o in orient) for (m in meths) {
    add("G", 7001, 10, 3, 500, 0.05, m, conservative = o[[1]], maj.rule = o[[2]], solve.confl = o[[3]])
    add("G", 7002, 20, 3, 1000, 0.01, m, conservative = o[[1]], maj.rule = o[[2]], solve.confl = o[[3]])
    add("G", 7003, 25, 4, 200, 0.2, m, conservative = o[[1]], maj.rule = o[[2]], solve.confl = o[[3]])
  }
  ## H: numCores 1 and 2 (identical to each other and to pcalg).
  for (m in meths) {
    add("H", 8001, 30, 3, 1000, 0.05, m, fun = "skeleton", numCores = 1L)
    add("H", 8002, 50, 2, 500, 0.01, m, fun = "pc", numCores = 1L)
  }
  ## I: a custom R indepTest (a wrapper around gaussCItest), called from R by gpupc.
  for (m in meths) for (f in c("pc", "skeleton")) {
    add("I", 9001, 10, 3, 500, 0.05, m, fun = f, test = "wrapper")
    add("I", 9002, 20, 2, 1000, 0.01, m, fun = f, test = "wrapper")
    add("I", 9003, 15, 4, 100, 0.2, m, fun = f, test = "wrapper", m.max = 2)
  }
  ## J: p = 200, sparse.
  add("J", 10001, 200, 1.5, 1000, 0.01, "stable.fast", fun = "pc")
  add("J", 10002, 200, 2, 5000, 0.001, "stable", fun = "skeleton")
  add("J", 10003, 200, 1.5, 200, 0.05, "stable", fun = "pc", labels = TRUE)
  add("J", 10004, 200, 2, 2000, 0.05, "stable.fast", fun = "skeleton")
  ## K: n <= |S| + 3 reached (pcalg's z is 0, p = 1 there).
  for (nn in c(4, 5, 6, 8)) for (m in meths)
    add("K", 11000 + nn, 8, 4, nn, 0.2, m, fun = if (nn %% 4 == 0) "pc" else "skeleton")
  do.call(rbind, cs)
}

GAUSS_CASES <- build_gauss_cases()

gauss_suffstat <- function(seed, p, k, n) {
  set.seed(seed)
  g <- pcalg::randomDAG(p, min(1, k / (p - 1)))
  d <- pcalg::rmvDAG(n, g)
  list(C = stats::cor(d), n = n)
}

run_gauss_case <- function(cs) {
  suff <- gauss_suffstat(cs$seed, cs$p, cs$k, cs$n)
  itest <- switch(cs$test, gauss = pcalg::gaussCItest, wrapper = wrap_gauss, na = na_gauss)
  args <- list(m.max = cs$m.max, NAdelete = cs$NAdelete)
  args[[if (cs$fun == "pc") "skel.method" else "method"]] <- cs$method
  if (cs$fun == "pc")
    args <- c(args, list(u2pd = cs$u2pd, conservative = cs$conservative, maj.rule = cs$maj.rule,
                         solve.confl = cs$solve.confl))
  if (cs$fixed != "none") {
    set.seed(cs$seed + 17L)
    gaps <- random_sym_mask(cs$p, 0.15)
    edges <- random_sym_mask(cs$p, 0.08) & !gaps
    if (cs$fixed %in% c("gaps", "both")) args$fixedGaps <- gaps
    if (cs$fixed %in% c("edges", "both")) args$fixedEdges <- edges
  }
  labels <- if (cs$labels) paste0("V", seq_len(cs$p), "_", cs$seed) else NULL
  label <- paste0("gauss case ", case_label(cs))
  gpu_args <- if (is.na(cs$numCores)) list() else list(numCores = cs$numCores)
  ## GPUPC_TEST_BACKEND=cuda (on a GPU machine) runs the native Gaussian cases on that backend
  ## (GPUPC_TEST_BACKEND_METHODS, default "stable", says for which skel methods)
  tb <- Sys.getenv("GPUPC_TEST_BACKEND")
  tm <- strsplit(Sys.getenv("GPUPC_TEST_BACKEND_METHODS", "stable"), ",")[[1]]
  if (nzchar(tb) && cs$test == "gauss" && cs$method %in% tm) gpu_args$backend <- tb
  res <- compare_run(cs$fun, suff, itest, cs$alpha, p = cs$p, labels = labels, args = args,
                     gpu_args = gpu_args, seed = cs$seed + 1L, label = label,
                     strict_type = cs$method == "stable.fast")
  if (!is.na(cs$numCores) && !selftest()) {
    ## the same call with 2 cores must give a bit-identical object
    f <- under_test(cs$fun)
    pl <- if (is.null(labels)) list(p = cs$p) else list(labels = labels)
    set.seed(cs$seed + 1L)
    two <- quietly(do.call(f, c(list(suffStat = quote(suff), indepTest = quote(itest), alpha = cs$alpha),
                                pl, args, modifyList(gpu_args, list(numCores = 2L)))))
    expect_identical_pcalgo(two, res$got, paste(label, "(numCores 2 vs 1)"))
  }
}

for (i in seq_len(nrow(GAUSS_CASES))) {
  cs <- GAUSS_CASES[i, ]
  if (cs$extended != extended_mode()) next
  test_that(sprintf("gauss parity %d/%d (%s): p=%d n=%d %s %s", i, nrow(GAUSS_CASES), cs$group,
                    cs$p, cs$n, cs$method, cs$fun), {
    run_gauss_case(cs)
  })
}

test_that("the Gaussian case table covers what it should", {
  skip_if_run_before()
  cs <- GAUSS_CASES
  expect_gte(nrow(cs), 120)
  expect_true(all(c(5, 200) %in% cs$p))
  expect_true(all(c(20, 5000) %in% cs$n))
  expect_true(any(cs$n < cs$p))
  expect_setequal(unique(cs$alpha), ALPHAS)
  expect_setequal(unique(cs$method), c("stable", "stable.fast"))
  expect_setequal(unique(cs$m.max), c(0, 1, 2, Inf))
  expect_setequal(unique(cs$u2pd), c("relaxed", "rand", "retry"))
  expect_true(all(c("gaps", "edges", "both") %in% cs$fixed))
  expect_true(any(cs$conservative) && any(cs$maj.rule) && any(cs$solve.confl) && any(!cs$NAdelete))
})

test_that("skel.method = 'original' is handed to pcalg (with a message) and equals it", {
  skip_if_run_before()
  skip_if(selftest())
  suff <- gauss_suffstat(12001, 15, 3, 500)
  want <- pcalg::skeleton(suff, pcalg::gaussCItest, 0.05, p = 15, method = "original")
  expect_message(got <- gpupc::gpu_skeleton(suff, pcalg::gaussCItest, 0.05, p = 15, method = "original"))
  expect_same_pcalgo(got, want, 0.05, "skeleton original")
  set.seed(5)
  want <- pcalg::pc(suff, pcalg::gaussCItest, 0.05, p = 15, skel.method = "original")
  set.seed(5)
  expect_message(got <- gpupc::gpu_pc(suff, pcalg::gaussCItest, 0.05, p = 15, skel.method = "original"))
  expect_same_pcalgo(got, want, 0.05, "pc original")
})

test_that("gaussCItest with n <= |S| + 3 gives p = 1 like pcalg, with a warning naming n", {
  skip_if_run_before()
  skip_if(selftest())
  ## 6 observations of 7 variables and alpha = 0.9: edges survive to level 3, where
  ## n - |S| - 3 = 0 makes pcalg's z zero and p = 1.
  set.seed(12002)
  d <- matrix(rnorm(6 * 7), 6, 7)
  suff <- list(C = stats::cor(d), n = 6L)
  for (m in c("stable", "stable.fast")) {
    want <- quietly(pcalg::skeleton(suff, pcalg::gaussCItest, 0.9, p = 7, method = m))
    ## the case really reaches |S| = 3 = n - 3 (a check of this test's design)
    expect_gt(want@n.edgetests[4], 0)
    expect_warning(got <- gpupc::gpu_skeleton(suff, pcalg::gaussCItest, 0.9, p = 7, method = m),
                   "\\bn\\b")
    expect_same_pcalgo(got, want, 0.9, paste("n <= |S| + 3,", m), strict_type = m == "stable.fast")
  }
})

test_that("repeated gpupc runs are bit-identical", {
  skip_if_run_before()
  skip_if(selftest())
  suff <- gauss_suffstat(12003, 40, 4, 800)
  for (m in c("stable", "stable.fast")) {
    a <- quietly(gpupc::gpu_skeleton(suff, pcalg::gaussCItest, 0.05, p = 40, method = m))
    b <- quietly(gpupc::gpu_skeleton(suff, pcalg::gaussCItest, 0.05, p = 40, method = m))
    expect_identical_pcalgo(a, b, paste("repeat", m))
  }
})
