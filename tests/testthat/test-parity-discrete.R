## Parity with pcalg on discrete data: disCItest and binCItest (both native in gpupc) and a
## disCItest wrapper (called from R). Data: samples of bnlearn-repository networks, saved once by
## fixtures/make-discrete-fixtures.R (codes 0..nlev-1); a case takes the first n rows.
##
## pcalg's gSquareDis (behind disCItest) returns p = 1 for every conditioning set of size >= 5 (it
## builds the strata from X's column); gpupc computes the correct statistic. So disCItest cases use
## m.max <= 4, and the last test shows the difference.
##
## The costliest rows (pcalg's R G^2 test on the larger networks at their larger sample sizes) are
## marked `extended`: they run in the extended mode only, and the other rows only in the default
## mode (helper-extended.R; CI runs both); the default part still takes every group, network,
## test, method and orientation rule (checked below).

disc_case <- function(group, net, n, alpha, method, fun = "skeleton", test = "dis", adaptDF = FALSE,
                      m.max = 4, fixed = "none", conservative = FALSE, maj.rule = FALSE, seed = 1L,
                      extended = FALSE) {
  data.frame(group = group, net = net, n = as.integer(n), alpha = alpha, method = method, fun = fun,
             test = test, adaptDF = adaptDF, m.max = m.max, fixed = fixed,
             conservative = conservative, maj.rule = maj.rule, seed = as.integer(seed),
             extended = extended, stringsAsFactors = FALSE)
}

build_disc_cases <- function() {
  cs <- list()
  add <- function(...) cs[[length(cs) + 1L]] <<- disc_case(...)
  meths <- c("stable", "stable.fast")
  i <- 0L
  ## A: disCItest over networks and sample sizes; alpha, adaptDF and fun cycle along the rows.
  ## (pcalg's R G^2 test is slow on many levels and many rows: the larger networks use
  ## n <= 2000 and a lower m.max as n grows.)
  for (net in c("asia", "cancer", "earthquake", "survey", "sachs", "child", "insurance", "alarm"))
    for (j in 1:3) for (m in meths) {
      i <- i + 1L
      big <- net %in% c("child", "insurance", "alarm")
      if (net %in% c("asia", "cancer", "earthquake") && j == 2) next
      n <- if (big) c(200, 1000, 2000)[j] else c(200, 1000, 5000)[j]
      mm <- if (big) c(4, 3, 2)[j] else if (net == "sachs") c(4, 4, 3)[j] else 4
      add("A", net, n, c(0.01, 0.05)[i %% 2 + 1], m, fun = c("skeleton", "pc")[(i %/% 2) %% 2 + 1],
          adaptDF = (i %/% 3) %% 2 == 1, m.max = mm,
          # the largest n of insurance, alarm and sachs, and in the slower (stable) order child's
          # largest n and insurance's and alarm's n = 1000 (stable.fast keeps those in the default)
          extended = (net %in% c("insurance", "alarm", "sachs") && j == 3) ||
            (m == "stable" && ((net == "child" && j == 3) || (net %in% c("insurance", "alarm") && j == 2))))
    }
  ## B: binCItest on binary networks (m.max = Inf) and on binarised ones (code > 0).
  for (net in c("asia", "cancer", "earthquake", "child:bin", "alarm:bin"))
    for (n in c(200, 1000, 5000)) for (m in meths) {
      i <- i + 1L
      big <- grepl(":bin", net, fixed = TRUE)
      if (big && n == 5000) next
      add("B", net, n, c(0.01, 0.05)[i %% 2 + 1], m, fun = c("skeleton", "pc")[(i %/% 2) %% 2 + 1],
          test = "bin", adaptDF = (i %/% 3) %% 2 == 1, m.max = if (big) 3 else Inf)
    }
  ## C: fixedGaps / fixedEdges.
  for (fx in c("gaps", "edges", "both")) for (m in meths) {
    add("C", "sachs", 1000, 0.05, m, fun = "pc", fixed = fx, seed = 31L)
    add("C", "child", 1000, 0.01, m, fun = "skeleton", fixed = fx, adaptDF = TRUE, m.max = 3, seed = 32L)
    add("C", "asia", 2000, 0.05, m, fun = "pc", test = "bin", fixed = fx, m.max = Inf, seed = 33L)
  }
  ## D: an R wrapper around disCItest (not recognised as native).
  for (m in meths) for (f in c("pc", "skeleton"))
    add("D", "sachs", 500, 0.05, m, fun = f, test = "wrapdis", m.max = 4)
  ## E: conservative / majority-rule orientation.
  for (m in meths) {
    add("E", "sachs", 1000, 0.01, m, fun = "pc", conservative = TRUE, m.max = 3)
    add("E", "sachs", 1000, 0.01, m, fun = "pc", maj.rule = TRUE, m.max = 3)
    add("E", "asia", 5000, 0.05, m, fun = "pc", test = "bin", conservative = TRUE, m.max = Inf)
  }
  do.call(rbind, cs)
}

DISC_CASES <- build_disc_cases()

disc_suffstat <- function(cs) {
  net <- sub(":bin$", "", cs$net)
  o <- load_disc(net, cs$n)
  dm <- o$dm
  nlev <- o$nlev
  if (grepl(":bin$", cs$net)) {
    dm <- (dm > 0L) + 0L
    nlev <- rep(2L, ncol(dm))
  }
  dimnames(dm) <- NULL
  if (cs$test == "bin") list(dm = dm, adaptDF = cs$adaptDF) else
    list(dm = dm, nlev = nlev, adaptDF = cs$adaptDF)
}

run_disc_case <- function(cs) {
  suff <- disc_suffstat(cs)
  p <- ncol(suff$dm)
  itest <- switch(cs$test, dis = pcalg::disCItest, bin = pcalg::binCItest, wrapdis = wrap_dis)
  args <- list(m.max = cs$m.max)
  args[[if (cs$fun == "pc") "skel.method" else "method"]] <- cs$method
  if (cs$fun == "pc") args <- c(args, list(conservative = cs$conservative, maj.rule = cs$maj.rule))
  if (cs$fixed != "none") {
    set.seed(cs$seed)
    gaps <- random_sym_mask(p, 0.15)
    edges <- random_sym_mask(p, 0.1) & !gaps
    if (cs$fixed %in% c("gaps", "both")) args$fixedGaps <- gaps
    if (cs$fixed %in% c("edges", "both")) args$fixedEdges <- edges
  }
  labels <- colnames(load_disc(sub(":bin$", "", cs$net), 1)$dm)
  ## GPUPC_TEST_BACKEND=cuda (on a GPU machine) runs the native cases on that backend (both orders)
  tb <- Sys.getenv("GPUPC_TEST_BACKEND")
  gpu_args <- if (nzchar(tb) && cs$test %in% c("dis", "bin")) list(backend = tb) else list()
  compare_run(cs$fun, suff, itest, cs$alpha, labels = labels, args = args, gpu_args = gpu_args, seed = cs$seed,
              label = paste0("discrete case ", case_label(cs)),
              strict_type = cs$method == "stable.fast")
}

for (i in seq_len(nrow(DISC_CASES))) {
  cs <- DISC_CASES[i, ]
  if (cs$extended != extended_mode()) next
  test_that(sprintf("discrete parity %d/%d (%s): %s n=%d %s %s %s", i, nrow(DISC_CASES), cs$group,
                    cs$net, cs$n, cs$test, cs$method, cs$fun), {
    run_disc_case(cs)
  })
}

test_that("the discrete case table covers what it should", {
  skip_if_run_before()
  cs <- DISC_CASES
  expect_gte(nrow(cs), 60)
  expect_true(all(cs$m.max[cs$test %in% c("dis", "wrapdis")] <= 4))
  expect_setequal(unique(cs$alpha), c(0.01, 0.05))
  expect_true(all(c(200, 5000) %in% cs$n))
  expect_setequal(unique(cs$adaptDF), c(TRUE, FALSE))
  expect_setequal(unique(cs$method), c("stable", "stable.fast"))
  expect_true(all(c("dis", "bin") %in% cs$test))
  expect_true(all(c("gaps", "edges", "both") %in% cs$fixed))
})

test_that("the default part of the discrete case table still takes every kind of case", {
  all <- DISC_CASES
  def <- all[!all$extended, ]
  expect_lt(nrow(def), nrow(all))
  for (col in c("group", "net", "test", "method", "fun", "alpha", "adaptDF", "fixed", "m.max"))
    expect_setequal(unique(def[[col]]), unique(all[[col]]))
  expect_true(any(def$conservative) && any(def$maj.rule))
  # every network of group A at more than one sample size
  a <- def[def$group == "A", ]
  expect_true(all(tapply(a$n, a$net, function(n) length(unique(n))) >= 2))
})

test_that("fixtures are valid discrete data", {
  skip_if_run_before()
  for (net in c("asia", "cancer", "earthquake", "survey", "sachs", "child", "insurance", "alarm")) {
    o <- load_disc(net)
    expect_true(is.integer(o$dm) && is.matrix(o$dm), label = net)
    expect_identical(nrow(o$dm), 5000L)
    expect_length(o$nlev, ncol(o$dm))
    expect_true(all(o$dm >= 0L) && all(sweep(o$dm, 2, o$nlev, "<")), label = net)
  }
})

## Correct G^2 test of X _||_ Y | S (df as pcalg without adaptDF), written independently of both
## packages: sum over observed strata of 2 * n_xys * log(n_xys * n_s / (n_xs * n_ys)).
g2_reference <- function(x, y, S, dm, nlev) {
  strata <- if (length(S)) interaction(as.data.frame(dm[, S, drop = FALSE]), drop = TRUE) else factor(rep(1, nrow(dm)))
  tab <- table(factor(dm[, x], 0:(nlev[x] - 1)), factor(dm[, y], 0:(nlev[y] - 1)), strata)
  g2 <- 0
  for (k in seq_len(dim(tab)[3])) {
    t <- tab[, , k]; nk <- sum(t)
    e <- outer(rowSums(t), colSums(t)) / nk
    g2 <- g2 + 2 * sum(ifelse(t > 0, t * log(t / e), 0))
  }
  df <- (nlev[x] - 1) * (nlev[y] - 1) * prod(nlev[S])
  stats::pchisq(g2, df, lower.tail = FALSE)
}

test_that("|S| >= 5: pcalg's disCItest returns p = 1, gpupc computes G^2 and keeps the edge", {
  skip_if_run_before()
  ## X (1) and Y (2) strongly dependent; Z1..Z5 (3..7) are noisy copies of X, so they stay adjacent
  ## to X, while Y _||_ Zi | X removes the Y - Zi edges. The edge X - Y then reaches level 5 with
  ## S = {Z1..Z5}, where pcalg's gSquareDis gives p = 1 and deletes it.
  set.seed(4242)
  n <- 5000L
  x <- rbinom(n, 1, 0.5)
  flip <- function(v, q) ifelse(runif(length(v)) < q, 1L - v, v)
  dm <- cbind(x, flip(x, 0.1), sapply(1:5, function(i) flip(x, 0.15)))
  storage.mode(dm) <- "integer"; dimnames(dm) <- NULL
  nlev <- rep(2L, 7)
  suff <- list(dm = dm, nlev = nlev, adaptDF = FALSE)
  S5 <- 3:7
  ## the premise, checked: pcalg's p is 1 while the correct G^2 p-value is tiny
  expect_identical(pcalg::disCItest(1, 2, S5, suff), 1)
  expect_lt(g2_reference(1, 2, S5, dm, nlev), 1e-10)
  ## and for |S| <= 4 pcalg agrees with the reference (so the reference is the same statistic)
  expect_equal(pcalg::disCItest(1, 2, 3:6, suff), g2_reference(1, 2, 3:6, dm, nlev), tolerance = 1e-9)
  for (m in c("stable", "stable.fast")) {
    want <- quietly(pcalg::skeleton(suff, pcalg::disCItest, 0.01, p = 7, method = m, m.max = 5))
    want_adj <- as(want@graph, "matrix")
    expect_equal(unname(want_adj[1, 2]), 0, label = paste("pcalg deletes X - Y,", m))
    skip_if(selftest())
    got <- quietly(gpupc::gpu_skeleton(suff, pcalg::disCItest, 0.01, p = 7, method = m, m.max = 5))
    got_adj <- as(got@graph, "matrix")
    expect_equal(unname(got_adj[1, 2]), 1, label = paste("gpupc keeps X - Y,", m))
    expect_null(got@sepset[[1]][[2]]); expect_null(got@sepset[[2]][[1]])
    expect_lt(max(got@pMax[1, 2], got@pMax[2, 1]), 0.01)
    ## up to level 4 the two agree exactly
    want4 <- quietly(pcalg::skeleton(suff, pcalg::disCItest, 0.01, p = 7, method = m, m.max = 4))
    got4 <- quietly(gpupc::gpu_skeleton(suff, pcalg::disCItest, 0.01, p = 7, method = m, m.max = 4))
    expect_same_pcalgo(got4, want4, 0.01, paste("|S|>=5 example at m.max = 4,", m),
                       strict_type = m == "stable.fast")
  }
})
