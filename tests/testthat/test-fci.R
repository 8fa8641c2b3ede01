## gpu_fci() and gpu_rfci() against pcalg's fci() and rfci() on random DAGs whose data lose some
## variables (latent ones), Gaussian and discrete, over the options: skeleton order, the three
## FCI types, Possible-D-SEP on and off, biCC, pdsep.max, m.max, conservative and majority rule,
## selection bias, JCI with context variables, fixedGaps / fixedEdges, labels or p, an R-function
## test, and the Possible-D-SEP stage alone against pcalg::pdsep() on random skeletons and sepsets.
## Every slot of the fciAlgo is compared with identical(), except pMax, whose skeleton
## p-values agree to rounding (relative 1e-9, as in the parity suite), and call, which names
## gpu_fci / gpu_rfci and holds gpupc's own arguments (the rest of it must be pcalg's).
## With gaussCItest, disCItest, binCItest and cmiknnCItest FCI's Possible-D-SEP stage and its
## conservative / majority-rule triple checks run in gpupc's Rust core (pcalg's pdsep() and
## pc.cons.intern() for the R-function tests), so these comparisons check them against pcalg's; so
## do RFCI's stages after the skeleton, checked here against find.unsh.triple(), rfci.vStruc() and
## udag2apag() end to end and on random skeletons and sepsets, with the same number of tests.
## The sweep runs its first cases by default and all of them in the extended mode.

skip_if_not_installed("pcalg")
skip_if(selftest())

FCI_SLOTS <- c("amat", "n", "max.ord", "max.ordPDSEP", "n.edgetests", "n.edgetestsPDSEP",
               "sepset", "allPdsep")
GPU_ONLY <- c("backend", "devices", "numCores")

## Where two values first differ: for lists the first element (recursively), else both values.
first_difference <- function(a, b, at = "") {
  if (is.list(a) && is.list(b) && length(a) == length(b)) {
    for (i in seq_along(a)) if (!identical(a[[i]], b[[i]])) return(first_difference(a[[i]], b[[i]], paste0(at, "[[", i, "]]")))
  }
  show <- function(v) paste0(typeof(v), " ", paste(utils::head(format(v), 8), collapse = ","))
  paste0(at, " got ", show(a), " want ", show(b))
}

fcialgo_diff <- function(got, want) {
  if (!methods::is(got, "fciAlgo")) return("got is not an fciAlgo")
  d <- character(0)
  for (s in FCI_SLOTS) {
    a <- methods::slot(got, s); b <- methods::slot(want, s)
    if (!identical(a, b)) d <- c(d, paste(s, "differs:", first_difference(a, b)))
  }
  pg <- got@pMax; pw <- want@pMax
  if (!identical(dim(pg), dim(pw)) || !identical(is.na(pg), is.na(pw)) ||
      !identical(is.infinite(pg), is.infinite(pw))) {
    d <- c(d, "pMax: dims or NA / infinite pattern differ")
  } else {
    f <- is.finite(pw)
    if (!all(num_equal_rel(pg[f], pw[f], PMAX_REL))) d <- c(d, "pMax: finite entries differ beyond rounding")
    if (!identical(pg[!f], pw[!f])) d <- c(d, "pMax: infinite entries differ")
  }
  cg <- as.list(got@call); cw <- as.list(want@call)
  cg <- cg[!names(cg) %in% GPU_ONLY]; cw <- cw[!names(cw) %in% GPU_ONLY]
  if (!identical(cg[-1], cw[-1])) d <- c(d, "call: arguments differ")
  d
}

## Latent variables: the DAG's data without `drop` of its columns.
fci_data <- function(seed, p, prob, n, drop, kind = "gauss") {
  set.seed(seed)
  dag <- pcalg::randomDAG(p, prob)
  X <- pcalg::rmvDAG(n, dag)
  X <- X[, -sample(p, drop), drop = FALSE]
  if (kind == "gauss") return(list(C = stats::cor(X), n = n))
  # three levels per variable, cut at its terciles
  dm <- apply(X, 2, function(v) findInterval(v, stats::quantile(v, c(1, 2) / 3)))
  storage.mode(dm) <- "integer"
  list(dm = dm, nlev = rep(3L, ncol(dm)), adaptDF = FALSE)
}

run_both <- function(fun, suff, test, alpha, args, label) {
  ref <- switch(fun, fci = pcalg::fci, rfci = pcalg::rfci)
  mine <- switch(fun, fci = gpupc::gpu_fci, rfci = gpupc::gpu_rfci)
  call_one <- function(f, a, extra) quietly(do.call(f, c(list(suffStat = suff, indepTest = test, alpha = a), args, extra)))
  want <- call_one(ref, alpha, list())
  got <- call_one(mine, alpha, list(numCores = 2, backend = "cpu"))
  d <- fcialgo_diff(got, want)
  if (!length(d)) return(succeed())
  # a decision taken by a p-value within rounding of alpha: the reference itself changes there
  tie <- any(vapply(alpha * c(1 - TIE_REL, 1 + TIE_REL), function(a) {
    r <- call_one(ref, a, list())
    r@call <- want@call
    length(fcialgo_diff(r, want)) > 0
  }, TRUE))
  if (tie) {
    .parity$ties <- c(.parity$ties, label)
    skip(paste0("tie at p ~ alpha: ", label, ": ", paste(d, collapse = " | ")))
  }
  fail(paste0(label, ":\n  ", paste(d, collapse = "\n  ")))
}

## The case stream: the options drawn per case from fixed seeds.
fci_cases <- function(k) {
  set.seed(20261127)
  lapply(seq_len(k), function(i) {
    fun <- if (i %% 4 == 0) "rfci" else "fci"
    kind <- if (i %% 3 == 0) "dis" else "gauss"
    p <- sample(9:13, 1)
    cs <- list(i = i, fun = fun, kind = kind, p = p, prob = round(stats::runif(1, 0.2, 0.45), 2),
               n = if (kind == "dis") 2000 else sample(c(200, 1000), 1), drop = sample(1:3, 1),
               alpha = sample(c(0.01, 0.05), 1), seed = sample.int(1e6, 1),
               skel.method = sample(c("stable", "stable.fast"), 1),
               conservative = FALSE, maj.rule = FALSE, m.max = Inf, labels = i %% 2 == 0)
    u <- stats::runif(1)
    if (u < 0.2) cs$conservative <- TRUE else if (u < 0.4) cs$maj.rule <- TRUE
    if (fun == "fci") {
      cs$type <- sample(c("normal", "normal", "anytime", "adaptive"), 1)
      if (cs$type == "anytime") cs$m.max <- sample(1:3, 1)
      else if (cs$type == "normal" && stats::runif(1) < 0.2) cs$m.max <- sample(1:2, 1)
      cs$doPdsep <- stats::runif(1) < 0.85
      cs$biCC <- stats::runif(1) < 0.3
      cs$pdsep.max <- if (stats::runif(1) < 0.2) sample(2:4, 1) else Inf
      cs$selectionBias <- stats::runif(1) < 0.7
    } else if (stats::runif(1) < 0.2) {
      cs$m.max <- sample(1:2, 1)
    }
    cs
  })
}

case_args <- function(cs, p) {
  a <- if (cs$labels) list(labels = paste0("V", seq_len(p))) else list(p = p)
  a <- c(a, list(skel.method = cs$skel.method, m.max = cs$m.max, conservative = cs$conservative,
                 maj.rule = cs$maj.rule))
  if (cs$fun == "fci")
    a <- c(a, list(type = cs$type, doPdsep = cs$doPdsep, biCC = cs$biCC, pdsep.max = cs$pdsep.max,
                   selectionBias = cs$selectionBias))
  a
}

n_cases <- 200
CASES <- fci_cases(n_cases)[sweep_cases(n_cases, 36)]

for (cs in CASES) {
  test_that(sprintf("random case %d/%d: gpu_%s() equals pcalg's %s()", cs$i, n_cases, cs$fun, cs$fun), {
    suff <- fci_data(cs$seed, cs$p, cs$prob, cs$n, cs$drop, cs$kind)
    p <- if (cs$kind == "gauss") ncol(suff$C) else ncol(suff$dm)
    test <- if (cs$kind == "gauss") pcalg::gaussCItest else pcalg::disCItest
    run_both(cs$fun, suff, test, cs$alpha, case_args(cs, p), case_label(cs))
  })
}

test_that("the Possible-D-SEP stage over its options, on graphs where it runs thousands of tests", {
  for (seed in c(3, 555)) {
    suff <- fci_data(seed, 14, 0.35, 1000, 3)
    p <- ncol(suff$C)
    opts <- list(list(), list(biCC = TRUE), list(pdsep.max = 3), list(m.max = 2),
                 list(type = "adaptive"), list(type = "anytime", m.max = 1),
                 list(skel.method = "stable.fast", biCC = TRUE, pdsep.max = 5),
                 list(conservative = TRUE), list(maj.rule = TRUE, biCC = TRUE),
                 list(skel.method = "original"))
    for (o in opts)
      run_both("fci", suff, pcalg::gaussCItest, 0.01, c(list(p = p), o),
               paste("seed", seed, case_label(o)))
  }
})

## The stage alone on random skeletons with random sepsets (helper-orient.R's fake_skeleton(), so
## the arrowheads and Possible-D-SEP sets take many shapes), on Gaussian data of as many
## variables: gpupc's native stage against pcalg::pdsep() on the same input.
pdsep_cases <- sweep_cases(300, 40)

test_that(sprintf("the native Possible-D-SEP stage equals pcalg::pdsep() on random skeletons and sepsets (%s)", sweep_label(pdsep_cases, 300)), {
  set.seed(4242)
  for (i in seq_len(max(pdsep_cases, 0))) {
    p <- sample(6:11, 1)
    sk <- fake_skeleton(p, deg = stats::runif(1, 1.5, 3.5))
    bicc <- i %% 3 == 0
    if (i %% 2 == 0) {  # labels 1..p: biCC's components are found (see ?gpu_fci)
      m <- methods::as(sk@graph, "matrix")
      dimnames(m) <- list(as.character(seq_len(p)), as.character(seq_len(p)))
      sk@graph <- methods::as(m, "graphNEL")
    }
    suff <- fci_data(i, p + 2, 0.3, 500, 2)
    sk@pMax <- matrix(stats::runif(p * p, -0.5, 0.02), p, p)
    fixed <- if (i %% 5 == 0) random_sym_mask(p, 0.15) else NULL
    m.max <- if (i %% 4 == 0) sample(1:2, 1) else Inf
    pdsep.max <- if (i %% 7 == 0) 3 else Inf
    alpha <- sample(c(0.01, 0.05, 0.2), 1)
    if (!i %in% pdsep_cases) next
    want <- quietly(pcalg::pdsep(sk@graph, suff, pcalg::gaussCItest, p = p, sepset = sk@sepset,
                                 alpha = alpha, pMax = sk@pMax, m.max = m.max, pdsep.max = pdsep.max,
                                 biCC = bicc, fixedEdges = fixed))
    got <- quietly(gpupc:::native_pdsep(sk, gpupc:::prepare_test(pcalg::gaussCItest, suff, p), NULL,
                                        alpha, m.max, pdsep.max, TRUE, bicc, fixed, 2, FALSE))
    lab <- sprintf("case %d (p = %d, biCC = %s, m.max = %s, pdsep.max = %s, alpha = %g)", i, p, bicc, m.max, pdsep.max, alpha)
    for (s in c("G", "sepset", "allPdsep", "max.ord", "n.edgetests"))
      if (!identical(got[[s]], want[[s]])) fail(paste(lab, s, "differs:", first_difference(got[[s]], want[[s]])))
    f <- is.finite(want$pMax)
    expect_true(identical(is.finite(got$pMax), f) && all(num_equal_rel(got$pMax[f], want$pMax[f], PMAX_REL)), label = paste(lab, "pMax"))
  }
})

## RFCI's stages after the skeleton (find.unsh.triple(), rfci.vStruc(), udag2apag()) run in Rust
## for the native tests: here against pcalg's functions on random skeletons and sepsets, where
## dep.triple() and rule 4's checkEdges() remove edges often, with the same number of tests.
stage_cases <- sweep_cases(400, 60)

test_that(sprintf("the native RFCI stages equal pcalg's rfci.vStruc() and udag2apag() on random skeletons and sepsets (%s)", sweep_label(stage_cases, 400)), {
  set.seed(5151)
  calls <- 0
  counted <- function(x, y, S, suffStat) { calls <<- calls + 1; pcalg::gaussCItest(x, y, S, suffStat) }
  for (i in seq_len(max(stage_cases, 0))) {
    p <- sample(6:13, 1)
    sk <- fake_skeleton(p, deg = stats::runif(1, 1.5, 4.5))
    suff <- fci_data(i, p + 2, 0.3, sample(c(100, 500), 1), 2)
    alpha <- sample(c(0.01, 0.05, 0.2), 1)
    cons <- i %% 3 == 1
    maj <- i %% 3 == 2
    rules <- if (i %% 4 == 0) stats::runif(10) < 0.6 else rep(TRUE, 10)
    if (!i %in% stage_cases) next
    A <- methods::as(sk@graph, "matrix")
    calls <- 0
    want <- quietly({
      ut <- pcalg::find.unsh.triple(A, check = FALSE)
      vs <- pcalg::rfci.vStruc(suff, counted, alpha, sk@sepset, A, unshTripl = ut$unshTripl,
                               unshVect = ut$unshVect, conservative = cons || maj,
                               version.unf = c(1, 1), maj.rule = maj)
      pcalg::udag2apag(vs$amat, suff, counted, alpha, vs$sepset, rules = rules, unfVect = vs$unfTripl)
    })
    got <- quietly(gpupc:::native_rfci(sk, gpupc:::prepare_test(pcalg::gaussCItest, suff, p), NULL,
                                       alpha, rules, cons, maj, 2))
    lab <- sprintf("case %d (p = %d, conservative = %s, maj.rule = %s, rules = %s, alpha = %g)", i, p,
                   cons, maj, paste(which(rules), collapse = ","), alpha)
    if (!identical(unname(got$graph), unname(want$graph)))
      fail(paste(lab, "graph differs:", first_difference(unname(got$graph), unname(want$graph))))
    else if (!identical(got$sepset, want$sepset))
      fail(paste(lab, "sepset differs:", first_difference(got$sepset, want$sepset)))
    else if (got$details$tests != calls)
      fail(sprintf("%s: %g tests, pcalg ran %g", lab, got$details$tests, calls))
    else succeed()
  }
})

## gpu_rfci() against rfci() end to end, larger graphs than the mixed sweep above, over the
## options the stages take (conservative, maj.rule, rules) and both native discrete and
## Gaussian tests.
rfci_cases <- function(k) {
  set.seed(20261128)
  lapply(seq_len(k), function(i) {
    kind <- if (i %% 3 == 0) "dis" else "gauss"
    # pcalg's own disCItest skeleton takes tens of seconds from p = 18: the discrete graphs are smaller
    cs <- list(i = i, fun = "rfci", kind = kind,
               p = if (kind == "dis") sample(9:13, 1) else sample(12:24, 1), prob = round(stats::runif(1, 0.15, 0.35), 2),
               n = if (kind == "dis") 1000 else sample(c(200, 1000), 1), drop = sample(1:4, 1),
               alpha = sample(c(0.01, 0.05, 0.1), 1), seed = sample.int(1e6, 1),
               skel.method = sample(c("stable", "stable.fast"), 1),
               conservative = i %% 4 == 1, maj.rule = i %% 4 == 2, m.max = Inf, labels = i %% 2 == 0)
    if (stats::runif(1) < 0.25) cs$rules <- stats::runif(10) < 0.7
    cs
  })
}

n_rfci <- 150
for (cs in rfci_cases(n_rfci)[sweep_cases(n_rfci, 20)]) {
  test_that(sprintf("RFCI case %d/%d: gpu_rfci() equals pcalg's rfci()", cs$i, n_rfci), {
    suff <- fci_data(cs$seed, cs$p, cs$prob, cs$n, cs$drop, cs$kind)
    p <- if (cs$kind == "gauss") ncol(suff$C) else ncol(suff$dm)
    test <- if (cs$kind == "gauss") pcalg::gaussCItest else pcalg::disCItest
    args <- case_args(cs, p)
    if (!is.null(cs$rules)) args$rules <- cs$rules
    run_both("rfci", suff, test, cs$alpha, args, case_label(cs))
  })
}

## The triple checks alone: pcalg's pc.cons.intern() as fci() calls it (version.unf = c(1, 1)
## after Possible-D-SEP, c(2, 1) without) against gpupc's native checks on the same input, random
## skeletons with random sepsets on data that the graph does not describe (so many triples are
## ambiguous, or have no independent test): `unfTripl`, the list udag2pag() is given (the fciAlgo
## does not hold it), and every sepset.
check_cases <- sweep_cases(240, 30)

test_that(sprintf("the native triple checks equal pcalg::pc.cons.intern() on random skeletons and sepsets (%s)", sweep_label(check_cases, 240)), {
  set.seed(9191)
  listed <- c(0, 0)
  for (i in seq_len(max(check_cases, 0))) {
    p <- sample(6:10, 1)
    sk <- fake_skeleton(p, deg = stats::runif(1, 1.5, 3.5))
    kind <- if (i %% 3 == 0) "dis" else "gauss"
    suff <- fci_data(i, p + 2, 0.3, if (kind == "dis") 1000 else sample(c(100, 500), 1), 2, kind)
    test <- if (kind == "dis") pcalg::disCItest else pcalg::gaussCItest
    version <- 1L + i %% 2L
    maj <- i %% 4 >= 2
    alpha <- sample(c(0.01, 0.05, 0.2), 1)
    if (!i %in% check_cases) next
    # Possible-D-SEP's sets are doubles with biCC; pcalg writes each checked pair back as integers
    if (i %% 5 == 0)
      sk@sepset <- lapply(sk@sepset, function(r) lapply(r, function(s) if (length(s)) as.double(s) else s))
    want <- quietly(pcalg::pc.cons.intern(sk, suff, test, alpha, version.unf = c(version, 1), maj.rule = maj))
    got <- quietly(gpupc:::native_fci_checks(methods::as(sk@graph, "matrix"), sk@sepset,
                                             gpupc:::prepare_test(test, suff, p), NULL, alpha, maj,
                                             version, 2, FALSE))
    lab <- sprintf("case %d (p = %d, %s, version.unf = c(%d, 1), maj.rule = %s, alpha = %g)", i, p, kind, version, maj, alpha)
    if (!identical(got$unfTripl, want$unfTripl)) fail(paste(lab, "unfTripl differs:", first_difference(got$unfTripl, want$unfTripl)))
    if (!identical(got$sepset, want$sk@sepset)) fail(paste(lab, "sepset differs:", first_difference(got$sepset, want$sk@sepset)))
    listed[version] <- listed[version] + (length(want$unfTripl) > 0)
  }
  # unfaithful triples were listed under both versions, so a wrong list would have failed
  expect_true(all(listed >= length(check_cases) / 8), label = paste("cases with unfaithful triples:", paste(listed, collapse = ", ")))
})

## pcalg's own graph and sepsets just before fci()'s triple checks: the skeleton, then
## Possible-D-SEP when `doPdsep`.
before_checks <- function(suff, test, alpha, p, doPdsep) {
  sk <- quietly(pcalg::skeleton(suff, test, alpha, p = p))
  if (!doPdsep) return(sk)
  pd <- quietly(pcalg::pdsep(sk@graph, suff, test, p = p, sepset = sk@sepset, alpha = alpha,
                             pMax = sk@pMax))
  methods::new("pcAlgo", graph = methods::as(pd$G, "graphNEL"), call = sk@call, n = integer(0),
               max.ord = sk@max.ord, n.edgetests = sk@n.edgetests, sepset = pd$sepset,
               pMax = pd$pMax, zMin = matrix(NA, 1, 1))
}

## Conservative and majority-rule FCI end to end, with and without Possible-D-SEP, on Gaussian
## and discrete data: every slot against pcalg's fci(), and the checks' unfTripl and sepsets
## against pc.cons.intern() on pcalg's graph and sepsets before them. Small samples and dense
## graphs, so that triples are ambiguous.
cons_seeds <- if (extended_mode()) c(11, 23, 38, 47, 52, 64, 71, 86, 93, 105) else c(23, 52)

test_that("conservative and majority-rule FCI, with and without Possible-D-SEP, Gaussian and discrete", {
  listed <- 0
  for (seed in cons_seeds) for (kind in c("gauss", "dis")) {
    suff <- fci_data(seed, 13, 0.4, if (kind == "dis") 800 else 150, 2, kind)
    test <- if (kind == "dis") pcalg::disCItest else pcalg::gaussCItest
    p <- if (kind == "gauss") ncol(suff$C) else ncol(suff$dm)
    alpha <- 0.05
    for (doPdsep in c(TRUE, FALSE)) {
      before <- before_checks(suff, test, alpha, p, doPdsep)
      version <- if (doPdsep) 1L else 2L
      for (maj in c(FALSE, TRUE)) {
        lab <- sprintf("seed %d, %s, doPdsep = %s, %s", seed, kind, doPdsep, if (maj) "maj.rule" else "conservative")
        run_both("fci", suff, test, alpha, list(p = p, doPdsep = doPdsep, conservative = !maj, maj.rule = maj), lab)
        want <- quietly(pcalg::pc.cons.intern(before, suff, test, alpha, version.unf = c(version, 1), maj.rule = maj))
        got <- quietly(gpupc:::native_fci_checks(methods::as(before@graph, "matrix"), before@sepset,
                                                 gpupc:::prepare_test(test, suff, p), NULL, alpha, maj,
                                                 version, 2, FALSE))
        expect_identical(got$unfTripl, want$unfTripl, label = paste(lab, "unfTripl"))
        expect_identical(got$sepset, want$sk@sepset, label = paste(lab, "sepset"))
        listed <- listed + (length(want$unfTripl) > 0)
      }
    }
  }
  expect_gt(listed, length(cons_seeds) * 2)
})

fixed_suff <- fci_data(31, 12, 0.3, 1000, 2)

test_that("JCI with context variables, fixedGaps and fixedEdges, an R-function test", {
  skip_if_run_before()
  p <- ncol(fixed_suff$C)
  for (jci in c("1", "12", "123"))
    run_both("fci", fixed_suff, pcalg::gaussCItest, 0.01,
             list(p = p, jci = jci, contextVars = c(1, 4), selectionBias = FALSE), paste("jci", jci))
  set.seed(5)
  gaps <- random_sym_mask(p, 0.1)
  fixed <- random_sym_mask(p, 0.1) & !gaps
  for (fun in c("fci", "rfci")) {
    run_both(fun, fixed_suff, pcalg::gaussCItest, 0.01, list(p = p, fixedGaps = gaps), paste(fun, "fixedGaps"))
    run_both(fun, fixed_suff, pcalg::gaussCItest, 0.01, list(p = p, fixedEdges = fixed), paste(fun, "fixedEdges"))
    run_both(fun, fixed_suff, wrap_gauss, 0.01, list(p = p, conservative = TRUE), paste(fun, "R-function test"))
  }
  # rfci's v-structure checks stop at an NA p-value in pcalg (if (pval >= alpha)), gpu_rfci() alike
  run_both("fci", fixed_suff, na_gauss, 0.05, list(p = p, NAdelete = FALSE), "fci NA p-values, NAdelete = FALSE")
  run_both("fci", fixed_suff, na_gauss, 0.05, list(p = p, NAdelete = TRUE, biCC = TRUE), "fci NA p-values, biCC")
  run_both("fci", fixed_suff, wrap_gauss, 0.01, list(p = p, biCC = TRUE, skel.method = "stable.fast"), "fci R-function test, biCC")
})

test_that("binary data with binCItest", {
  skip_if_run_before()
  suff <- fci_data(77, 10, 0.3, 3000, 2, "dis")
  suff$dm <- (suff$dm > 0L) + 0L
  suff$nlev <- NULL
  for (fun in c("fci", "rfci"))
    run_both(fun, suff, pcalg::binCItest, 0.01, list(p = ncol(suff$dm)), paste(fun, "binCItest"))
  run_both("fci", suff, pcalg::binCItest, 0.01, list(p = ncol(suff$dm), conservative = TRUE), "fci binCItest conservative")
  run_both("fci", suff, pcalg::binCItest, 0.01, list(p = ncol(suff$dm), maj.rule = TRUE, doPdsep = FALSE),
           "fci binCItest maj.rule without Possible-D-SEP")
})

test_that("cmiknnCItest on non-linear data", {
  skip_if_run_before()
  set.seed(9)
  n <- 150
  z <- stats::rnorm(n); h <- stats::rnorm(n)
  X <- cbind(x = sin(z) + 0.3 * stats::rnorm(n), y = z^2 + h + 0.3 * stats::rnorm(n), z = z,
             w = h + 0.3 * stats::rnorm(n), v = stats::rnorm(n))
  st <- list(data = X, sig_samples = 50, knn = 10)
  for (fun in c("fci", "rfci"))
    run_both(fun, st, gpupc::cmiknnCItest, 0.1, list(labels = colnames(X)), paste(fun, "cmiknnCItest"))
  run_both("fci", st, gpupc::cmiknnCItest, 0.1, list(p = ncol(X), biCC = TRUE), "fci cmiknnCItest biCC")
  run_both("fci", st, gpupc::cmiknnCItest, 0.1, list(p = ncol(X), conservative = TRUE), "fci cmiknnCItest conservative")
  run_both("fci", st, gpupc::cmiknnCItest, 0.1, list(p = ncol(X), maj.rule = TRUE, doPdsep = FALSE),
           "fci cmiknnCItest maj.rule without Possible-D-SEP")
})

test_that("pcalg's errors for type, m.max, conservative with maj.rule, jci and contextVars", {
  skip_if_run_before()
  p <- ncol(fixed_suff$C)
  err <- function(fun, pattern, ..., suff = fixed_suff) {
    f <- switch(fun, fci = gpupc::gpu_fci, rfci = gpupc::gpu_rfci)
    expect_error(f(suff, pcalg::gaussCItest, 0.01, p = p, backend = "cpu", ...), pattern)
  }
  err("fci", "m.max.*Anytime FCI you must specify a finite 'm.max'", type = "anytime")
  err("fci", "m.max.*Adaptive Anytime FCI you must not specify 'm.max'", type = "adaptive", m.max = 2)
  err("fci", "conservative.*Choose either conservative FCI or majority rule FCI", conservative = TRUE, maj.rule = TRUE)
  err("rfci", "conservative.*Can only choose one of conservative or majority rule RFCI", conservative = TRUE, maj.rule = TRUE)
  err("fci", "should be one of", jci = "2")
  err("fci", "should be one of", type = "fast")
  err("fci", "contextVars.*has to be a vector of integers", contextVars = c(1, p + 1))
  err("fci", "contextVars.*has to be a vector of integers", contextVars = 1.5)
  err("fci", "contextVars.*has to be a vector of integers", contextVars = "a")
  err("fci", "selectionBias.*does not support selection bias", jci = "1")
  err("fci", "rules", rules = rep(TRUE, 3))
  err("fci", "doPdsep", doPdsep = NA)
  err("fci", "pdsep.max", pdsep.max = "a")
  err("rfci", "labels", labels = letters[1:3])
  err("fci", "suffStat\\$data", suff = list(data = matrix(rnorm(120), 10)))
  # R still works and still agrees
  run_both("fci", fixed_suff, pcalg::gaussCItest, 0.01, list(p = p), "valid call after errors")
})

test_that("gpupc_last_run() has the stages after the skeleton", {
  skip_if_run_before()
  f <- gpupc::gpu_fci(fixed_suff, pcalg::gaussCItest, 0.01, p = ncol(fixed_suff$C), backend = "cpu")
  ph <- gpupc::gpupc_last_run()$phases
  expect_true(all(c("pdsep_s", "orient_s") %in% names(ph)))
  expect_null(gpupc::gpupc_last_run()$triples)
  f <- gpupc::gpu_fci(fixed_suff, pcalg::gaussCItest, 0.01, p = ncol(fixed_suff$C), backend = "cpu",
                      conservative = TRUE)
  st <- gpupc::gpupc_last_run()$triples$stats
  expect_true(st$triples > 0 && st$tests > 0)
  expect_match(st$evaluator, ".")
  r <- gpupc::gpu_rfci(fixed_suff, pcalg::gaussCItest, 0.01, p = ncol(fixed_suff$C), backend = "cpu",
                       conservative = TRUE)
  last <- gpupc::gpupc_last_run()
  expect_true(all(c("sepset_s", "orient_s") %in% names(last$phases)))
  expect_false(anyDuplicated(names(last$phases)) > 0)
  expect_true(last$rfci$tests > 0)
  expect_identical(last$rfci$tests, last$rfci$tests_vstruc + last$rfci$tests_rules)
})

test_that("gpu_rfci(verbose = TRUE) prints pcalg's trace and still agrees", {
  skip_if_run_before()
  p <- ncol(fixed_suff$C)
  out <- utils::capture.output(got <- gpupc::gpu_rfci(fixed_suff, pcalg::gaussCItest, 0.01, p = p,
                                                      backend = "cpu", verbose = TRUE))
  expect_true(any(grepl("Direct egdes", out)))
  want <- pcalg::rfci(fixed_suff, pcalg::gaussCItest, 0.01, p = p)
  expect_identical(got@amat, want@amat)
  expect_identical(got@sepset, want@sepset)
})
