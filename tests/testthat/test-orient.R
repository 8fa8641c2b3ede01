## Native orientation against pcalg's, mark for mark: random skeletons with random sepsets (500
## cases per variant in the extended mode, the first 100 by default (helper-extended.R): relaxed
## with and without solve.confl, with unfaithful triples, conservative, majority rule) and graphs
## learned by gpu_pc() and pc() (16 cases, the first 4 by default; both skeleton orders,
## fixedGaps / fixedEdges, Gaussian, discrete and R-function tests). On the same skeleton the
## comparison is identical() on the whole pcAlgo (graph with its edge marks and weights, sepsets,
## every slot); on learned graphs identical() on the graph and the parity suite's slot-by-slot
## comparison (pcalgo_diff) for the rest (pMax agrees to rounding, not bit for bit).

skip_if_not_installed("pcalg")
suppressPackageStartupMessages(library(pcalg))

orient <- function(...) gpupc:::orient_pcalgo(..., numCores = 2)$pcalgo

## The same orientation from the sepsets as gpu_pc() passes them: a Rust-side handle (read, and
## rewritten by the triple checks, there), made into the list afterwards.
orient_handle <- function(sk, ...) {
  h <- gpupc:::rs_sepset_handle(sk@sepset)
  sk@sepset <- list()
  o <- gpupc:::orient_pcalgo(sk, ..., numCores = 2, sepsets = h)
  # NULL: the slot is final (an R-function test made the list for pcalg's own checks)
  if (is.null(o$sepsets)) o$pcalgo else gpupc:::attach_sepsets(o$pcalgo, o$sepsets)
}

expect_same_pcalgo <- function(got, want, what, learned = FALSE) {
  same <- if (learned) identical(got@graph, want@graph) && !length(pcalgo_diff(got, want))
          else identical(got, want)
  if (!same) {
    d <- pcalgo_diff(got, want)
    fail(paste0(what, ": ", paste(c(d, if (!length(d)) "objects differ (not in the compared slots)"), collapse = "; ")))
  } else succeed()
}

test_that("pdag_graphnel() gives what as(pdag, \"graphNEL\") gives", {
  set.seed(11)
  for (r in 1:150) {
    p <- sample(2:15, 1)
    m <- matrix(0, p, p)
    for (i in 1:(p - 1)) for (j in (i + 1):p) if (stats::runif(1) < 0.3) {
      switch(sample(4, 1), m[i, j] <- m[j, i] <- 1, m[i, j] <- 1, m[j, i] <- 1, m[i, j] <- m[j, i] <- 2)
    }
    if (r %% 3 == 0) m[m == 1 & t(m) == 0] <- 0  # symmetric: an undirected graphNEL
    labels <- orient_labels(p)
    dimnames(m) <- list(labels, labels)
    w <- which(m != 0, arr.ind = TRUE)
    w <- w[order(w[, 1], w[, 2]), , drop = FALSE]
    got <- gpupc:::pdag_graphnel(as.integer(w[, 1]), as.integer(w[, 2]), m[w], labels,
                                 !isSymmetric(unname(m)))
    expect_identical(got, as(m, "graphNEL"))
  }
})

random_cases <- sweep_cases(500, 100)
n_drawn <- max(random_cases, 0)

test_that(sprintf("relaxed orientation equals udag2pdagRelaxed() on random skeletons (%s), with and without solve.confl", sweep_label(random_cases, 500)), {
  set.seed(12)
  for (i in seq_len(n_drawn)) {
    sk <- fake_skeleton(orient_case_p(i), deg = sample(1:6, 1))
    if (!i %in% random_cases) next
    for (sc in c(FALSE, TRUE)) {
      want <- udag2pdagRelaxed(sk, solve.confl = sc)
      expect_same_pcalgo(orient(sk, solve.confl = sc), want, sprintf("case %d, solve.confl = %s", i, sc))
      expect_same_pcalgo(orient_handle(sk, solve.confl = sc), want,
                         sprintf("case %d, solve.confl = %s, sepset handle", i, sc))
    }
  }
})

test_that(sprintf("relaxed orientation with unfaithful triples equals udag2pdagRelaxed(unfVect = ) on random skeletons (%s)", sweep_label(random_cases, 500)), {
  set.seed(13)
  for (i in seq_len(n_drawn)) {
    p <- orient_case_p(i)
    sk <- fake_skeleton(p, deg = sample(2:6, 1))
    tr <- random_unf_triples(sk, sample(0:8, 1))
    if (!i %in% random_cases) next
    unfVect <- if (is.null(tr)) NULL else pcalg:::triple2numb(p, tr[, 1], tr[, 2], tr[, 3])
    sc <- i %% 2 == 0
    expect_same_pcalgo(orient(sk, solve.confl = sc, unfTriples = tr),
                       udag2pdagRelaxed(sk, unfVect = unfVect, solve.confl = sc),
                       sprintf("case %d (p = %d, %d unfaithful triples, solve.confl = %s)", i, p, NROW(tr), sc))
  }
})

cons_reference <- function(sk, suffStat, indepTest, alpha, maj, sc) {
  pc. <- pc.cons.intern(sk, suffStat, indepTest, alpha, version.unf = c(2, 1), maj.rule = maj)
  udag2pdagRelaxed(pc.$sk, unfVect = pc.$unfTripl, solve.confl = sc)
}

for (maj in c(FALSE, TRUE)) {
  rule <- if (maj) "majority" else "conservative"
  test_that(sprintf("%s rule equals pc.cons.intern() + udag2pdagRelaxed() on random skeletons (%s; sepsets too)", rule, sweep_label(random_cases, 500)), {
    set.seed(if (maj) 15 else 14)
    for (i in seq_len(n_drawn)) {
      # pcalg tests 2^|adj(a)| + 2^|adj(c)| sets per triple in R: small neighbourhoods keep the
      # cases within the CI budget; every 25th case allows 5 neighbours, every 100th has 60-120
      # variables
      p <- if (i %% 100 == 0) sample(60:120, 1) else sample(5:12, 1)
      sk <- fake_skeleton_bounded(p, deg = sample(1:3, 1), max_deg = if (i %% 25 == 0) 5 else 3)
      ss <- random_suffstat(p)
      alpha <- sample(c(0.01, 0.05, 0.2, 0.5), 1)
      if (!i %in% random_cases) next
      sc <- i %% 3 == 0
      want <- cons_reference(sk, ss, gaussCItest, alpha, maj, sc)
      expect_same_pcalgo(orient(sk, ss, gaussCItest, alpha, solve.confl = sc, rule = rule), want,
                         sprintf("case %d (p = %d, alpha = %g, solve.confl = %s)", i, p, alpha, sc))
      # the handle path: the rewritten sepsets go into the skeleton's parts, not back to R
      expect_same_pcalgo(orient_handle(sk, ss, gaussCItest, alpha, solve.confl = sc, rule = rule), want,
                         sprintf("case %d (p = %d, alpha = %g, solve.confl = %s), sepset handle", i, p, alpha, sc))
    }
  })
}

test_that("an R-function indepTest is called exactly as pc.cons.intern() calls it (through pcalg's own checks)", {
  skip_if_run_before()
  set.seed(16)
  for (i in 1:12) {
    p <- sample(5:15, 1)
    sk <- fake_skeleton_bounded(p, deg = 3, max_deg = 4)
    ss <- random_suffstat(p)
    calls <- character(0)
    logged <- function(x, y, S, suffStat) {
      calls <<- c(calls, paste(x, y, paste(S, collapse = ",")))
      gaussCItest(x, y, S, suffStat)
    }
    maj <- i %% 2 == 0
    want <- cons_reference(sk, ss, logged, 0.05, maj, FALSE)
    want_calls <- calls
    calls <- character(0)
    got <- orient(sk, ss, logged, 0.05, rule = if (maj) "majority" else "conservative")
    expect_identical(calls, want_calls)
    expect_same_pcalgo(got, want, sprintf("R-function case %d", i))
    calls <- character(0)
    got <- orient_handle(sk, ss, logged, 0.05, rule = if (maj) "majority" else "conservative")
    expect_identical(calls, want_calls)
    expect_same_pcalgo(got, want, sprintf("R-function case %d, sepset handle", i))
  }
})

random_fixed <- function(p, prob) {
  m <- matrix(stats::runif(p * p) < prob, p, p)
  m <- m | t(m)
  diag(m) <- FALSE
  m
}

test_that("gpu_pc() equals pc() on learned graphs: every orientation variant, both skeleton orders, fixedGaps / fixedEdges", {
  set.seed(17)
  variants <- list(list(sc = FALSE, cons = FALSE, maj = FALSE), list(sc = TRUE, cons = FALSE, maj = FALSE),
                   list(sc = FALSE, cons = TRUE, maj = FALSE), list(sc = TRUE, cons = FALSE, maj = TRUE))
  # the first 4 cases already take both skeleton orders, fixedGaps and fixedEdges
  learned_cases <- sweep_cases(16, 4)
  for (i in seq_len(max(learned_cases, 0))) {
    p <- sample(c(8:30, 60), 1)
    dag <- randomDAG(p, prob = 3 / p)
    X <- rmvDAG(sample(c(60, 200, 1000), 1), dag)
    ss <- list(C = cor(X), n = nrow(X))
    method <- c("stable", "stable.fast")[i %% 2 + 1]
    gaps <- if (i %% 3 == 0) random_fixed(p, 0.02) else NULL
    fixed <- if (i %% 4 == 0) random_fixed(p, 0.02) & !(if (is.null(gaps)) FALSE else gaps) else NULL
    alpha <- sample(c(0.01, 0.05), 1)
    if (!i %in% learned_cases) next
    for (v in variants) {
      args <- list(suffStat = ss, indepTest = gaussCItest, alpha = alpha, labels = orient_labels(p),
                   skel.method = method, fixedGaps = gaps, fixedEdges = fixed,
                   conservative = v$cons, maj.rule = v$maj, solve.confl = v$sc)
      want <- do.call(pc, args)
      got <- do.call(gpu_pc, c(args, backend = "cpu", numCores = 2))
      got@call <- want@call
      expect_same_pcalgo(got, want, sprintf("learned case %d (p = %d, %s, cons = %s, maj = %s, solve.confl = %s)",
                                            i, p, method, v$cons, v$maj, v$sc), learned = TRUE)
    }
  }
})

test_that("gpu_pc() equals pc() with conservative / majority rule on discrete data", {
  skip_if_run_before()
  set.seed(18)
  compared <- 0
  for (i in 1:8) {
    p <- sample(6:12, 1)
    dag <- randomDAG(p, prob = 2 / p)
    X <- rmvDAG(2000, dag)
    dm <- apply(X, 2, function(x) as.integer(cut(x, quantile(x, 0:3 / 3), include.lowest = TRUE)) - 1L)
    ss <- list(dm = dm, nlev = rep(3L, p), adaptDF = FALSE)
    args <- list(suffStat = ss, indepTest = disCItest, alpha = 0.05, labels = orient_labels(p),
                 conservative = i %% 2 == 0, maj.rule = i %% 2 == 1, m.max = 2)
    # pcalg warns where n < 10 df (the test then says independent, in gpupc too)
    want <- suppressWarnings(do.call(pc, args))
    # pcalg's disCItest is wrong for |S| >= 5 (see ?gpu_skeleton); the triple checks test
    # subsets of whole neighbourhoods, so only graphs whose neighbourhoods are smaller compare
    if (max(c(0, lengths(lapply(want@graph@edgeL, `[[`, "edges")))) > 4) next
    got <- do.call(gpu_pc, c(args, backend = "cpu", numCores = 2))
    got@call <- want@call
    expect_same_pcalgo(got, want, sprintf("discrete case %d", i), learned = TRUE)
    compared <- compared + 1
  }
  expect_gt(compared, 2)
})

test_that("gpu_pc() with m.max < 0 (sepsets made in R, not deferred) equals pc() with the triple checks", {
  skip_if_run_before()
  set.seed(19)
  data(gmG, package = "pcalg")
  ss <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
  for (i in 1:4) {
    gaps <- random_fixed(8, 0.4)
    args <- list(suffStat = ss, indepTest = gaussCItest, alpha = 0.01, labels = colnames(gmG8$x),
                 m.max = -1, fixedGaps = gaps, conservative = i %% 2 == 0, maj.rule = i %% 2 == 1)
    want <- do.call(pc, args)
    got <- do.call(gpu_pc, c(args, backend = "cpu", numCores = 2))
    got@call <- want@call
    expect_same_pcalgo(got, want, sprintf("m.max = -1 case %d", i), learned = TRUE)
  }
})

test_that("gpupc_last_run() has the orientation phase and counts", {
  skip_if_run_before()
  data(gmG, package = "pcalg")
  ss <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
  gpu_pc(ss, gaussCItest, 0.01, labels = colnames(gmG8$x), conservative = TRUE, backend = "cpu")
  lr <- gpupc_last_run()
  expect_true(is.numeric(lr$phases[["orient_s"]]) && lr$phases[["orient_s"]] >= 0)
  expect_gt(lr$orient$stats$triples, 0)
  expect_gt(lr$orient$stats$tests, 0)
})

test_that("orientation rejects malformed sepsets with an error naming sepset", {
  skip_if_run_before()
  sk <- fake_skeleton(6, 3)
  m <- as(sk@graph, "matrix") != 0
  pr <- which(!m & upper.tri(m) & ((m + 0) %*% (m + 0)) > 0, arr.ind = TRUE)
  skip_if(nrow(pr) == 0)
  sk@sepset[[pr[1, 1]]][[pr[1, 2]]] <- 99L
  expect_error(gpupc:::orient_pcalgo(sk), class = "gpupc_invalid_argument", regexp = "sepset")
  sk@sepset[[pr[1, 1]]][[pr[1, 2]]] <- "a"
  expect_error(gpupc:::orient_pcalgo(sk), class = "gpupc_invalid_argument", regexp = "sepset")
})

test_that("the triple checks take over the skeleton's test once, and read suffStat again without it", {
  skip_if_run_before()
  set.seed(19)
  X <- rmvDAG(500, randomDAG(12, prob = 0.3))
  d <- rmvDAG(2000, randomDAG(8, prob = 0.3))
  dm <- apply(d, 2, function(v) as.integer(cut(v, quantile(v, 0:3 / 3), include.lowest = TRUE)) - 1L)
  cases <- list(list(ss = list(data = X), test = gaussCItest, p = 12), list(ss = list(C = cor(X), n = 500), test = gaussCItest, p = 12),
                list(ss = list(dm = dm, nlev = rep(3L, 8), adaptDF = FALSE), test = disCItest, p = 8))
  for (cs in cases) for (method in c("stable", "stable.fast")) {
    sk <- gpupc:::skeleton_impl(quote(f()), cs$ss, cs$test, 0.05, as.character(seq_len(cs$p)), cs$p, method, Inf,
                                NULL, NULL, TRUE, 2, FALSE, "cpu", defer_sepsets = TRUE, keep_test = TRUE)
    expect_true(inherits(sk$test, "externalptr"))
    sepsets <- gpupc:::attach_sepsets(sk$pcalgo, sk$sepsets)@sepset
    run <- function() suppressWarnings(gpupc:::orient_pcalgo(sk$pcalgo, cs$ss, cs$test, 0.05, rule = "conservative", numCores = 2,
                                                              sepsets = gpupc:::rs_sepset_handle(sepsets), test_handle = sk$test))
    kept <- run()
    again <- run()  # the handle was emptied: the test is read from suffStat
    expect_identical(kept$pcalgo@graph, again$pcalgo@graph)
    expect_identical(gpupc:::rs_sepsets(kept$sepsets, FALSE), gpupc:::rs_sepsets(again$sepsets, FALSE))
    expect_identical(kept$info$stats, again$info$stats)
    expect_false(kept$info$stats$data_reused)
  }
})

test_that("triple checks whose GPU fails run on the CPU with a message only where asked", {
  skip_if_run_before()
  skip_if(isTRUE(gpupc::gpu_info()$usable), "a usable GPU does not fail")
  data(gmG, package = "pcalg")
  ss <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
  sk <- skeleton(ss, gaussCItest, 0.01, labels = colnames(gmG8$x))
  cpu <- gpupc:::orient_pcalgo(sk, ss, gaussCItest, 0.01, rule = "majority", numCores = 2)
  expect_message(gpu <- gpupc:::orient_pcalgo(sk, ss, gaussCItest, 0.01, rule = "majority", numCores = 2,
                                              backend = "cuda", fallback = TRUE),
                 "^gpupc: the GPU failed in the triple checks \\(gpupc: CUDA.*\\); running on the CPU instead")
  expect_identical(gpu$pcalgo, cpu$pcalgo)
  expect_identical(gpu$info$stats, cpu$info$stats)
  expect_error(gpupc:::orient_pcalgo(sk, ss, gaussCItest, 0.01, rule = "majority", numCores = 2,
                                     backend = "cuda", fallback = FALSE), class = "gpupc_cuda_error")
})
