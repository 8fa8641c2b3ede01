# Junction-tree inference against gRain (marginals, P(evidence)), the MPE against brute force,
# and bad input. GPU parity with the CPU engine runs on the GPU machine (pcbench jtree).

skip_if_not_installed("bnlearn")
skip_if_not_installed("gRain")
suppressPackageStartupMessages(library(gRain))

for (name in c("asia", "cancer", "earthquake", "survey", "sachs", "child", "insurance", "alarm", "hepar2")) {
  test_that(paste("marginals and P(evidence) equal gRain's on", name), {
    fit <- jt_read_fit(name)
    g <- gRbase::compile(bnlearn::as.grain(fit))
    jt <- gpu_jtree(fit, backend = "cpu", numCores = 2)
    # no evidence: gRain's shape
    q <- gpu_query(jt)
    ref <- querygrain(g, nodes = names(fit), type = "marginal")
    expect_setequal(names(q), names(ref))
    for (v in names(ref)) {
      expect_equal(dimnames(q[[v]]), dimnames(ref[[v]]))
      expect_lt(max(abs(q[[v]] - ref[[v]])), 1e-10)
    }
    expect_lt(abs(attr(q, "pEvidence") - 1), 1e-12)
    # 40 evidence sets from forward samples, about 10% of the nodes observed, in one batch
    ev <- jt_sample_evidence(fit, 40, 0.1, seed = 1)
    d <- jt_compare_grain(jt, g, ev)
    expect_lt(d[["marginal"]], 1e-10)
    expect_lt(d[["pEvidence"]], 1e-10)
    # one evidence set as a list gives the batch's first row
    e1 <- as.list(ev[1, !is.na(ev[1, ]), drop = FALSE])
    one <- gpu_query(jt, evidence = e1)
    all <- gpu_query(jt, evidence = ev[1:3, , drop = FALSE])
    for (v in names(one)) expect_equal(as.numeric(one[[v]]), unname(all[[v]][1, ]), tolerance = 1e-15)
  })
}

test_that("every triangulation answers as gRain does, auto's tree the cheapest", {
  fit <- jt_read_fit("hepar2")
  g <- gRbase::compile(bnlearn::as.grain(fit))
  ev <- jt_sample_evidence(fit, 20, 0.1, seed = 2)
  trees <- list()
  for (tri in c("auto", "minfill", "minweight", "wminfill")) {
    jt <- gpu_jtree(fit, triangulation = tri, backend = "cpu", numCores = 2)
    d <- jt_compare_grain(jt, g, ev)
    expect_lt(d[["marginal"]], 1e-10)
    expect_lt(d[["pEvidence"]], 1e-10)
    trees[[tri]] <- jt$stats
  }
  # HEPAR II: auto's tree is min-weight's (2621 cells), not min-fill's (2617 cells, more to move)
  expect_identical(trees$auto$total_clique_cells, trees$minweight$total_clique_cells)
  expect_false(identical(trees$auto$total_clique_cells, trees$minfill$total_clique_cells))
  expect_error(gpu_jtree(fit, triangulation = "best"), "triangulation", class = "gpupc_invalid_argument")
  expect_error(gpu_jtree(fit, triangulation = NA_character_), "triangulation", class = "gpupc_invalid_argument")
})

test_that("likelihood evidence equals gRain's", {
  fit <- jt_read_fit("asia")
  g <- gRbase::compile(bnlearn::as.grain(fit))
  jt <- gpu_jtree(fit, backend = "cpu", triangulation = "minweight")
  ev <- list(xray = c(0.3, 0.9), asia = "yes", dysp = c(1, 0.2))
  q <- gpu_query(jt, evidence = ev)
  g2 <- setEvidence(g, evidence = ev)
  ref <- querygrain(g2, nodes = names(fit))
  for (v in names(ref)) expect_lt(max(abs(q[[v]] - ref[[v]])), 1e-10)
  expect_lt(abs(attr(q, "pEvidence") / pEvidence(g2) - 1), 1e-10)
})

test_that("a grain object, a BIF file and a pcAlgo with data are accepted", {
  path <- jt_network_path("asia")
  fit <- jt_read_fit("asia")
  g <- bnlearn::as.grain(fit)
  a <- gpu_query(gpu_jtree(path, backend = "cpu"), nodes = "lung")
  b <- gpu_query(gpu_jtree(g, backend = "cpu"), nodes = "lung")
  expect_equal(a$lung, querygrain(g, nodes = "lung")$lung, tolerance = 1e-12)
  expect_equal(b$lung, a$lung, tolerance = 1e-12)
  # the whole path: data -> gpu_pc -> gpu_jtree (pdag2dag + bn.fit bayes) -> gpu_query
  set.seed(3)
  smp <- bnlearn::rbn(jt_read_fit("alarm"), 3000)
  D <- sapply(smp, function(x) as.integer(x) - 1L)
  nlev <- vapply(smp, nlevels, 1L)
  pc <- gpu_pc(list(dm = D, nlev = nlev, adaptDF = FALSE), pcalg::disCItest, 0.01, labels = colnames(D), backend = "cpu")
  jt <- gpu_jtree(pc, data = D, backend = "cpu")
  # gRain on the same DAG and parameters
  dag <- pcalg::pdag2dag(pc@graph)$graph
  bn <- bnlearn::empty.graph(colnames(D))
  bnlearn::amat(bn) <- (methods::as(dag, "matrix") != 0) * 1
  dd <- as.data.frame(lapply(as.data.frame(D), function(x) factor(x, levels = sort(unique(x)))))
  gf <- gRbase::compile(bnlearn::as.grain(bnlearn::bn.fit(bn, dd, method = "bayes", iss = 1)))
  ev <- as.data.frame(lapply(dd[1:10, ], as.character))
  ev[] <- lapply(ev, function(x) ifelse(runif(10) < 0.1, x, NA))
  ev$HR <- as.character(dd$HR[1:10])
  d <- jt_compare_grain(jt, gf, ev)
  expect_lt(d[["marginal"]], 1e-10)
  expect_lt(d[["pEvidence"]], 1e-10)
})

test_that("the MPE equals brute-force enumeration", {
  for (name in c("asia", "cancer", "earthquake", "survey")) {
    fit <- jt_read_fit(name)
    jt <- gpu_jtree(fit, backend = "cpu")
    nodes <- names(fit)
    grid <- expand.grid(lapply(nodes, function(v) dimnames(fit[[v]]$prob)[[1]]), stringsAsFactors = FALSE)
    names(grid) <- nodes
    joint <- rep(1, nrow(grid))
    for (v in nodes) {
      p <- fit[[v]]$prob
      idx <- as.matrix(grid[, c(v, fit[[v]]$parents), drop = FALSE])
      joint <- joint * p[idx]
    }
    ev <- jt_sample_evidence(fit, 15, 0.3, seed = 2)
    ev <- rbind(ev[1, ] , ev)
    ev[1, ] <- NA  # no evidence
    mpe <- gpu_mpe(jt, evidence = ev)
    for (r in seq_len(nrow(ev))) {
      ok <- rep(TRUE, nrow(grid))
      for (v in nodes) if (!is.na(ev[r, v])) ok <- ok & grid[[v]] == ev[r, v]
      w <- ifelse(ok, joint, 0)
      best <- max(w)
      expect_lt(abs(attr(mpe, "prob")[r] - best) / best, 1e-12)
      mine <- rep(TRUE, nrow(grid))
      for (v in nodes) mine <- mine & grid[[v]] == as.character(mpe[r, v])
      expect_equal(sum(mine), 1)
      expect_lt(abs(w[mine] - best) / best, 1e-12)
      if (sum(w >= best * (1 - 1e-12)) == 1) {
        expect_equal(unname(unlist(lapply(mpe[r, ], as.character))), unname(unlist(grid[which.max(w), ])))
      }
    }
  }
})

test_that("impossible evidence gives NA with a warning, as gRain does", {
  fit <- jt_read_fit("asia")
  jt <- gpu_jtree(fit, backend = "cpu")
  ev <- data.frame(either = c("no", "yes"), tub = c("yes", NA))
  expect_warning(q <- gpu_query(jt, evidence = ev), "impossible")
  expect_true(all(is.na(q$lung[1, ])))
  expect_false(anyNA(q$lung[2, ]))
  expect_equal(attr(q, "pEvidence")[1], 0)
  expect_warning(m <- gpu_mpe(jt, evidence = ev), "impossible")
  expect_true(all(is.na(unlist(m[1, ]))))
  expect_false(anyNA(unlist(m[2, ])))
})

test_that("bad input stops with an error naming the argument", {
  fit <- jt_read_fit("asia")
  jt <- gpu_jtree(fit, backend = "cpu")
  expect_error(gpu_query(jt, evidence = list(nosuch = "yes")), "evidence.*nosuch", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, evidence = list(asia = "maybe")), "evidence.*maybe", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, evidence = data.frame(asia = "maybe")), "evidence", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, evidence = list(asia = c(1, 2, 3))), "evidence", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, evidence = list("yes")), "evidence", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, nodes = "nosuch"), "nodes", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, type = "joint"), "type", class = "gpupc_invalid_argument")
  expect_error(gpu_query(list(), nodes = "lung"), "jt", class = "gpupc_invalid_argument")
  expect_error(gpu_jtree(42), "x", class = "gpupc_invalid_argument")
  expect_error(gpu_jtree("/no/such/file.bif"), "x", class = "gpupc_invalid_argument")
  expect_error(gpu_jtree(fit, max.cells = 10), "too large", class = "gpupc_invalid_argument")
  gfit <- bnlearn::bn.fit(bnlearn::model2network("[A][B|A]"), data.frame(A = rnorm(50), B = rnorm(50)))
  expect_error(gpu_jtree(gfit), "not discrete", class = "gpupc_invalid_argument")
  pc <- gpu_pc(list(C = diag(3), n = 100), pcalg::gaussCItest, 0.01, labels = c("a", "b", "c"), backend = "cpu")
  expect_error(gpu_jtree(pc), "data", class = "gpupc_invalid_argument")
  # a constant column: codes give it one state (refused, named); a factor keeps all its states
  dd <- data.frame(a = c(0, 1, 0, 1), b = c(1, 1, 1, 1), c = c(0, 0, 1, 1))
  expect_error(gpu_jtree(pc, data = dd), "single state.*b", class = "gpupc_invalid_argument")
  df <- data.frame(a = factor(dd$a), b = factor(c("x", "x", "x", "x"), levels = c("x", "y")), c = factor(dd$c))
  q <- gpu_query(gpu_jtree(pc, data = df, backend = "cpu"), nodes = "b")
  expect_equal(names(q$b), c("x", "y"))
})

test_that("gpu_query() follows querygrain()'s exclude and result, and takes backend = \"auto\"", {
  fit <- jt_read_fit("asia")
  g <- gRbase::compile(bnlearn::as.grain(fit))
  jt <- gpu_jtree(fit, backend = "cpu")
  ev <- list(asia = "yes", xray = "yes")
  g2 <- setEvidence(g, evidence = ev)
  # exclude = TRUE (gRain's default): the evidence nodes are left out, as querygrain leaves them
  q <- gpu_query(jt, evidence = ev)
  ref <- querygrain(g2, nodes = names(fit))
  expect_setequal(names(q), names(ref))
  expect_false(any(c("asia", "xray") %in% names(q)))
  q_all <- gpu_query(jt, evidence = ev, exclude = FALSE)
  ref_all <- querygrain(g2, nodes = names(fit), exclude = FALSE)
  expect_setequal(names(q_all), names(ref_all))
  for (v in names(ref_all)) expect_lt(max(abs(q_all[[v]] - ref_all[[v]])), 1e-10)
  # result = "data.frame": per node its states and Freq, as.data.frame.table() of gRain's array
  # (gRain 1.4 answers marginals as arrays whatever `result` says)
  d <- gpu_query(jt, nodes = "lung", evidence = ev, result = "data.frame")
  rd <- list(lung = as.data.frame.table(querygrain(g2, nodes = "lung")$lung, responseName = "Freq"))
  expect_identical(names(d$lung), names(rd$lung))
  expect_identical(as.character(d$lung$lung), as.character(rd$lung$lung))
  expect_lt(max(abs(d$lung$Freq - rd$lung$Freq)), 1e-10)
  # a batch: exclude leaves out only the nodes observed in every row
  bat <- data.frame(asia = c("yes", "no"), xray = c("yes", NA), stringsAsFactors = FALSE)
  qb <- gpu_query(jt, evidence = bat)
  expect_false("asia" %in% names(qb))
  expect_true("xray" %in% names(qb))
  expect_s3_class(gpu_query(jt, evidence = bat, result = "data.frame")$lung, "data.frame")
  # backend = "auto": the GPU where usable, else the CPU; the same numbers
  qa <- gpu_query(jt, evidence = ev, backend = "auto")
  for (v in names(q)) expect_lt(max(abs(qa[[v]] - q[[v]])), 1e-12)
  expect_identical(gpu_mpe(jt, evidence = ev, backend = "auto"), gpu_mpe(jt, evidence = ev, backend = "cpu"))
  expect_error(gpu_query(jt, backend = "gpu"), "backend", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, exclude = NA), "exclude", class = "gpupc_invalid_argument")
  expect_error(gpu_query(jt, result = "list"), "result", class = "gpupc_invalid_argument")
})

test_that("a batch's evidence columns are coded as match() codes them: characters, factors, NA columns", {
  skip_if_not_installed("bnlearn")
  jt <- gpu_jtree(jt_network_path("alarm"), backend = "cpu", numCores = 2)
  set.seed(5)
  rows <- 300
  ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, rows, replace = TRUE); v[runif(rows) > 0.3] <- NA; v }),
                      stringsAsFactors = FALSE)
  names(ev) <- jt$nodes
  ev[[2]] <- factor(ev[[2]], levels = c(rev(jt$states[[2]]), "never used"))  # levels reordered, one no state
  ev[[3]] <- rep(NA, rows)                                                      # logical, all NA
  ev[[4]] <- enc2utf8(ev[[4]])
  ev <- ev[, c(5, 1:4, 6:ncol(ev))]                                             # columns not in node order
  # the reference: each column's values looked up among its node's states with match()
  want <- matrix(-1L, rows, length(jt$nodes))
  for (v in names(ev)) {
    k <- match(as.character(ev[[v]]), jt$states[[v]]) - 1L
    want[, match(v, jt$nodes)] <- ifelse(is.na(k), -1L, k)
  }
  got <- gpupc:::jt_evidence(jt, ev)
  expect_identical(got$hard, want)
  expect_identical(got$rows, as.integer(rows))
  # each node's sets with a state, counted as the columns were coded
  expect_identical(got$seen, as.integer(colSums(want >= 0L)))
  # a batch large enough to be coded on several threads, a value that is no state among it
  big <- ev[rep(seq_len(rows), 100), ]
  got_big <- gpupc:::jt_evidence(jt, big)
  expect_identical(got_big$hard, want[rep(seq_len(rows), 100), ])
  expect_identical(got_big$seen, as.integer(colSums(want >= 0L)) * 100L)
  big[[2]][29999] <- "nonsense"
  expect_error(gpupc:::jt_evidence(jt, big), "nonsense", class = "gpupc_invalid_argument")
  # a value that is no state is named, from a character column and from a factor column
  bad <- ev
  bad[[2]][7] <- "nonsense"
  expect_error(gpupc:::jt_evidence(jt, bad), "nonsense", class = "gpupc_invalid_argument")
  badf <- ev
  badf[[3]] <- factor(ifelse(seq_len(rows) == 9, "zzz", NA))
  expect_error(gpupc:::jt_evidence(jt, badf), "zzz", class = "gpupc_invalid_argument")
})

test_that("a batch whose sets observe the same nodes runs on the part of the network it depends on", {
  skip_if_not_installed("gRain")
  fit <- jt_read_fit("alarm")
  jt <- gpu_jtree(fit, backend = "cpu", numCores = 2)
  g <- gRbase::compile(bnlearn::as.grain(fit))
  set.seed(3)
  smp <- bnlearn::rbn(fit, 40)
  obs <- c("HR", "SAO2", "PRESS", "MINVOL")
  ev <- data.frame(lapply(smp[obs], as.character), stringsAsFactors = FALSE)
  q <- c("HYPOVOLEMIA", "LVFAILURE", "KINKEDTUBE")
  got <- gpu_query(jt, nodes = q, evidence = ev)
  lr <- gpupc_last_run()
  # the query's and the evidence's ancestors only, its tree compiled once and kept with the tree
  expect_lt(lr$nodes_propagated, length(jt$nodes))
  expect_length(ls(jt$pruned), 1L)
  expect_identical(gpu_query(jt, nodes = q, evidence = ev), got)
  expect_length(ls(jt$pruned), 1L)
  # gRain's answers, each set on the whole network
  for (r in c(1, 17, 40)) {
    e <- as.list(ev[r, ])
    g2 <- gRain::setEvidence(g, evidence = e)
    ref <- gRain::querygrain(g2, nodes = q, type = "marginal")
    for (v in q) expect_equal(got[[v]][r, names(ref[[v]])], as.numeric(ref[[v]]), tolerance = 1e-12, ignore_attr = TRUE)
    expect_equal(attr(got, "pEvidence")[r], gRain::pEvidence(g2), tolerance = 1e-12)
  }
  # the whole tree: the same numbers to rounding, not the same sums
  old <- options(gpupc.jtree_prune = FALSE)
  on.exit(options(old))
  whole <- gpu_query(jt, nodes = q, evidence = ev)
  expect_identical(gpupc_last_run()$nodes_propagated, length(jt$nodes))
  for (v in q) expect_equal(got[[v]], whole[[v]], tolerance = 1e-12)
  expect_equal(attr(got, "pEvidence"), attr(whole, "pEvidence"), tolerance = 1e-12)
  options(old)
  # sets observing different nodes: the part of every node observed in any of them
  ev2 <- ev
  ev2$HR[c(2, 9)] <- NA
  ev2$PRESS[3] <- NA
  part <- gpu_query(jt, nodes = q, evidence = ev2)
  expect_lt(gpupc_last_run()$nodes_propagated, length(jt$nodes))
  expect_length(ls(jt$pruned), 1L)
  options(gpupc.jtree_prune = FALSE)
  whole2 <- gpu_query(jt, nodes = q, evidence = ev2)
  options(old)
  for (v in q) expect_equal(part[[v]], whole2[[v]], tolerance = 1e-12)
  expect_equal(attr(part, "pEvidence"), attr(whole2, "pEvidence"), tolerance = 1e-12)
  e <- as.list(ev2[2, !is.na(ev2[2, ])])
  ref <- gRain::querygrain(gRain::setEvidence(g, evidence = e), nodes = q, type = "marginal")
  for (v in q) expect_equal(part[[v]][2, names(ref[[v]])], as.numeric(ref[[v]]), tolerance = 1e-12, ignore_attr = TRUE)
  # every node asked for: the whole tree
  invisible(gpu_query(jt, evidence = ev))
  expect_identical(gpupc_last_run()$nodes_propagated, length(jt$nodes))
  # one evidence set is a batch of one
  one <- gpu_query(jt, nodes = q, evidence = as.list(ev[5, ]))
  expect_lt(gpupc_last_run()$nodes_propagated, length(jt$nodes))
  for (v in q) expect_equal(as.numeric(one[[v]]), unname(got[[v]][5, ]), tolerance = 1e-12)
})
