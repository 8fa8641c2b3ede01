## FCI's orientation in gpupc's Rust core (native_udag2pag(), which gpu_fci() calls) against
## pcalg::udag2pag() on the same input: identical() on the matrix it returns (marks, type and
## dimnames), and the same warning or error. The inputs: fake skeletons with random sepsets (most
## not faithful, so colliders and rules conflict), the same skeletons with random marks already
## on their edges, matrices of random marks in random cells (one-sided edges, a few loops), and
## the graphs and sepsets of pcalg's own skeleton and Possible-D-SEP stages on Gaussian data with
## latent variables (faithful-looking, with pc.cons.intern()'s triples), and circle graphs with
## a motif planted for rules 5 and 10. Per case: the rules all
## on, one off, or a random set; jci "0", "1", "12", "123" with random context variables (rules
## 5-7 on or off); unfVect NULL, random triples of the graph, or numbers of no triple; a double,
## integer or logical matrix, with or without dimnames; orientCollider TRUE or FALSE. The sweep
## runs its first cases by default and all of them in the extended mode.

skip_if_not_installed("pcalg")
skip_if(selftest())

## The value of `expr` (or its error message, classed "failed") and whether it warned.
outcome <- function(expr) {
  warned <- FALSE
  value <- withCallingHandlers(
    tryCatch(expr, error = function(e) structure(conditionMessage(e), class = "failed")),
    warning = function(w) {
      warned <<- TRUE
      invokeRestart("muffleWarning")
    })
  list(value = value, warned = warned)
}

triple_numbers <- function(p, tr) tr[, 3] + p * (tr[, 2] + p * tr[, 1])

## The unshielded triples (a, b, c) of a 0/1 adjacency (either direction), a and c in both orders.
unshielded_triples <- function(adj) {
  tr <- NULL
  for (b in seq_len(ncol(adj))) {
    nb <- setdiff(which(adj[, b]), b)
    if (length(nb) < 2) next
    pr <- utils::combn(nb, 2)
    pr <- pr[, !adj[cbind(pr[1, ], pr[2, ])], drop = FALSE]
    if (ncol(pr)) tr <- rbind(tr, cbind(pr[1, ], b, pr[2, ]))
  }
  tr
}

## unfVect: NULL, some unshielded triples' numbers (either end first), or numbers of no triple.
random_unf <- function(adj) {
  p <- ncol(adj)
  u <- stats::runif(1)
  if (u < 0.45) return(NULL)
  tr <- unshielded_triples(adj)
  if (u < 0.55 || is.null(tr)) return(c(NA, 0.5, p^3 + p^2 + p + 1, -2))[seq_len(sample(4, 1))]
  tr <- tr[sample.int(nrow(tr), max(1, round(nrow(tr) * stats::runif(1, 0.1, 0.6)))), , drop = FALSE]
  flip <- stats::runif(nrow(tr)) < 0.5
  tr[flip, c(1, 3)] <- tr[flip, c(3, 1)]
  v <- triple_numbers(p, tr)
  if (stats::runif(1) < 0.2) v <- c(v, NA)
  if (stats::runif(1) < 0.3) v <- as.integer(v)
  v
}

random_marks <- function(k) sample(c(1, 1, 1, 2, 2, 3), k, replace = TRUE)

## pcalg's skeleton, Possible-D-SEP stage and (sometimes) conservative triple checks on Gaussian
## data of a random DAG with two variables dropped.
pdsep_input <- function(p) {
  dag <- pcalg::randomDAG(p + 2, stats::runif(1, 0.2, 0.45))
  X <- pcalg::rmvDAG(400, dag)[, -sample(p + 2, 2)]
  suff <- list(C = stats::cor(X), n = nrow(X))
  alpha <- sample(c(0.01, 0.05, 0.2), 1)
  sk <- pcalg::skeleton(suff, pcalg::gaussCItest, alpha = alpha, p = p)
  pd <- pcalg::pdsep(sk@graph, suff, pcalg::gaussCItest, p = p, sepset = sk@sepset, alpha = alpha,
                     pMax = sk@pMax)
  unf <- NULL
  if (stats::runif(1) < 0.4) {
    after <- methods::new("pcAlgo", graph = methods::as(pd$G, "graphNEL"), call = sk@call, n = integer(0),
                          max.ord = sk@max.ord, n.edgetests = sk@n.edgetests, sepset = pd$sepset,
                          pMax = pd$pMax, zMin = matrix(NA, 1, 1))
    ci <- pcalg::pc.cons.intern(after, suff, pcalg::gaussCItest, alpha, version.unf = c(1, 1),
                                maj.rule = stats::runif(1) < 0.5)
    unf <- ci$unfTripl
    pd$sepset <- ci$sk@sepset
  }
  list(pag = pd$G, sepset = pd$sepset, unf = unf)
}

## A motif planted into a random graph of mostly circles, where random marks rarely make one:
## rule 5's uncovered circle cycle (its chords mostly removed), or rule 10's a o-> c <- b, c <- d
## with a o-o b and a o-o d, or with circle paths a o-o x o-> b and a o-o y o-> d.
planted <- function(p) {
  sk <- fake_skeleton(p, deg = stats::runif(1, 1, 2.5))
  adj <- methods::as(sk@graph, "matrix") != 0
  pag <- adj + 0
  pag[adj] <- sample(1:3, sum(adj), replace = TRUE, prob = c(0.8, 0.12, 0.08))
  v <- sample(p)
  edge <- function(x, y, at_y, at_x) { pag[x, y] <<- at_y; pag[y, x] <<- at_x }
  cut <- function(x, y) { pag[x, y] <<- 0; pag[y, x] <<- 0 }
  if (stats::runif(1) < 0.5) {
    k <- sample(4:min(6, p), 1)
    cyc <- v[1:k]
    for (j in 1:k) edge(cyc[j], cyc[j %% k + 1], 1, 1)
    for (j in 1:k) for (l in 1:k)
      if (abs(j - l) > 1 && abs(j - l) != k - 1 && stats::runif(1) < 0.85) cut(cyc[j], cyc[l])
  } else {
    a <- v[1]; c <- v[2]; b <- v[3]; d <- v[4]
    edge(a, c, 2, 1); edge(b, c, 2, 3); edge(d, c, 2, 3)
    if (stats::runif(1) < 0.5) {
      edge(a, b, 1, 1); edge(a, d, 1, 1)
      if (stats::runif(1) < 0.7) cut(b, d)
    } else {
      x <- v[5]; y <- v[6]
      edge(a, x, 1, 1); edge(x, b, 2, 1); edge(a, y, 1, 1); edge(y, d, 2, 1)
      cut(a, b); cut(a, d)
      if (stats::runif(1) < 0.7) cut(x, y)
      if (stats::runif(1) < 0.5) edge(b, d, 1, 1)
    }
  }
  list(pag = pag, sepset = sk@sepset)
}

## One case: the input and the arguments, from the case number's family.
pag_case <- function(i) {
  family <- c("skeleton", "marked", "cells", "pdsep", "planted")[i %% 5 + 1]
  p <- sample(if (family == "planted") 6:11 else 4:12, 1)
  if (family == "planted") {
    inp <- planted(p)
    pag <- inp$pag
    sepset <- inp$sepset
    unf <- random_unf(pag != 0)
  } else if (family == "pdsep") {
    inp <- pdsep_input(p)
    pag <- inp$pag
    sepset <- inp$sepset
    unf <- if (is.null(inp$unf)) random_unf(pag != 0) else inp$unf
  } else {
    sk <- fake_skeleton(p, deg = stats::runif(1, 1.2, 4))
    adj <- methods::as(sk@graph, "matrix") != 0
    sepset <- sk@sepset
    pag <- adj + 0
    if (family == "marked") {
      pag[adj] <- random_marks(sum(adj))
    } else if (family == "cells") {
      pag[adj] <- sample(0:3, sum(adj), replace = TRUE, prob = c(0.2, 0.5, 0.2, 0.1))
      extra <- !adj & stats::runif(p * p) < 0.04
      if (i %% 3 != 0) diag(extra) <- FALSE
      pag[extra] <- random_marks(sum(extra))
    }
    unf <- random_unf(pag != 0 | t(pag) != 0)
    dimnames(pag) <- if (i %% 5 < 2) list(paste0("V", 1:p), paste0("V", 1:p)) else NULL
  }
  storage <- sample(c("double", "double", "integer", if (all(pag %in% 0:1)) "logical"), 1)
  storage.mode(pag) <- storage
  rules <- switch(i %% 3 + 1, rep(TRUE, 10), replace(rep(TRUE, 10), sample(10, 1), FALSE),
                  stats::runif(10) < 0.7)
  jci <- sample(c("0", "0", "1", "12", "123"), 1)
  ctx <- NULL
  if (stats::runif(1) < 0.6) {
    ctx <- sort(sample(p, sample(0:min(4, p), 1)))
    if (stats::runif(1) < 0.1) ctx <- c(ctx, p + 1)
  }
  if (jci != "0" && stats::runif(1) < 0.7) rules[5:7] <- FALSE
  list(i = i, family = family, p = p, pag = pag, sepset = sepset, rules = rules, unf = unf,
       jci = jci, ctx = ctx,
       collider = family == "pdsep" || stats::runif(1) < if (family == "planted") 0.3 else 0.85)
}

case_text <- function(cs) {
  sprintf("case %d (%s, p = %d, %s, rules %s, jci %s, contextVars %s, unfVect %s, orientCollider %s)",
          cs$i, cs$family, cs$p, typeof(cs$pag), paste(which(cs$rules), collapse = ""), cs$jci,
          paste(cs$ctx, collapse = ","), if (is.null(cs$unf)) "NULL" else length(cs$unf), cs$collider)
}

pag_cases <- sweep_cases(3000, 360)
n_pag <- length(pag_cases)

test_that(sprintf("native udag2pag() equals pcalg::udag2pag() on random inputs (%s)", sweep_label(pag_cases, 3000)), {
  set.seed(20261127)
  changed <- 0
  by_family <- c(skeleton = 0, marked = 0, cells = 0, pdsep = 0, planted = 0)
  unf_cases <- 0
  for (i in seq_len(max(pag_cases, 0))) {
    cs <- pag_case(i)
    if (!i %in% pag_cases) next
    args <- list(cs$pag, cs$sepset, rules = cs$rules, unfVect = cs$unf, jci = cs$jci,
                 contextVars = cs$ctx)
    want <- outcome(do.call(pcalg::udag2pag, c(args, orientCollider = cs$collider)))
    got <- outcome(do.call(gpupc:::native_udag2pag, c(args, orientCollider = cs$collider)))
    # pcalg fails on none of these inputs; if it did, gpupc must fail too
    expect_false(inherits(want$value, "failed"), label = paste(case_text(cs), "pcalg failed:", want$value))
    if (inherits(want$value, "failed")) {
      expect_true(inherits(got$value, "failed"), label = case_text(cs))
      next
    }
    if (!identical(got$value, want$value)) {
      d <- if (is.matrix(got$value) && identical(dim(got$value), dim(want$value))) {
        k <- which(got$value != want$value, arr.ind = TRUE)
        paste0(typeof(got$value), " vs ", typeof(want$value), "; cells ",
               paste(utils::head(sprintf("[%d,%d] %s/%s", k[, 1], k[, 2], got$value[k], want$value[k]), 6), collapse = " "))
      } else paste(format(got$value), collapse = " ")
      fail(paste(case_text(cs), "differs:", d))
    } else {
      succeed()
    }
    expect_identical(got$warned, want$warned, label = paste(case_text(cs), "warning"))
    if (!identical(unname(as.double(want$value)), as.double(cs$pag))) {
      changed <- changed + 1
      by_family[cs$family] <- by_family[cs$family] + 1
      if (length(cs$unf)) unf_cases <- unf_cases + 1
    }
  }
  # the rules oriented something in most cases, in every family, also with unfVect
  expect_gt(changed, 0.6 * n_pag)
  expect_true(all(by_family > 0.1 * n_pag / 5), label = paste(names(by_family), by_family, collapse = " "))
  expect_gt(unf_cases, 0.1 * n_pag)
})

## Graphs where a single rule decides the result, each against pcalg with the rule on and off
## (a rule that is off must change the result here, so every rule is seen to run).
test_that("each rule, on a graph where it fires, as pcalg's with the rule on and off", {
  skip_if_run_before()
  O <- 1; A <- 2; T <- 3
  graph <- function(p, edges) {
    m <- matrix(0, p, p)
    for (e in edges) { m[e[1], e[2]] <- e[3]; m[e[2], e[1]] <- e[4] }
    m
  }
  none <- function(p) lapply(seq_len(p), function(.) vector("list", p))
  cases <- list(
    `1` = graph(3, list(c(1, 2, A, O), c(2, 3, O, O))),
    `2` = graph(3, list(c(1, 2, A, T), c(2, 3, A, O), c(1, 3, O, O))),
    `3` = graph(4, list(c(1, 2, A, O), c(3, 2, A, O), c(1, 4, O, O), c(3, 4, O, O), c(4, 2, O, O))),
    `4` = graph(4, list(c(1, 2, A, O), c(3, 2, A, O), c(2, 4, A, T), c(3, 4, O, O))),
    `5` = graph(4, list(c(1, 2, O, O), c(1, 3, O, O), c(3, 4, O, O), c(4, 2, O, O))),
    `6` = graph(3, list(c(1, 2, T, T), c(2, 3, O, O))),
    `7` = graph(3, list(c(1, 2, O, T), c(2, 3, O, O))),
    `8` = graph(3, list(c(1, 2, A, T), c(2, 3, A, T), c(1, 3, A, O))),
    `9` = graph(4, list(c(1, 4, A, O), c(1, 2, O, O), c(2, 3, O, O), c(3, 4, A, O))),
    `10` = graph(4, list(c(2, 4, A, T), c(3, 4, A, T), c(1, 2, O, O), c(1, 3, O, O), c(1, 4, A, O))))
  for (k in names(cases)) {
    g <- cases[[k]]
    p <- ncol(g)
    for (on in c(TRUE, FALSE)) {
      rules <- replace(rep(TRUE, 10), as.integer(k), on)
      want <- pcalg::udag2pag(g, none(p), rules = rules, orientCollider = FALSE)
      got <- gpupc:::native_udag2pag(g, none(p), rules = rules, orientCollider = FALSE)
      expect_identical(got, want, label = paste("rule", k, if (on) "on" else "off"))
    }
    with <- gpupc:::native_udag2pag(g, none(p), orientCollider = FALSE)
    without <- gpupc:::native_udag2pag(g, none(p), rules = replace(rep(TRUE, 10), as.integer(k), FALSE), orientCollider = FALSE)
    expect_false(identical(with, without), label = paste("rule", k, "changes its graph"))
  }
})

test_that("the matrix's type and names, pcalg's warning, and bad input named", {
  skip_if_run_before()
  sk <- fake_skeleton(6, 2.5)
  m <- methods::as(sk@graph, "matrix")
  storage.mode(m) <- "integer"
  # an integer matrix stays integer where pcalg assigns no mark, else becomes double
  empty <- matrix(0L, 3, 3)
  expect_identical(gpupc:::native_udag2pag(empty, list(list(), list(), list())), empty)
  chain <- matrix(0L, 3, 3); chain[1, 2] <- chain[2, 1] <- chain[2, 3] <- chain[3, 2] <- 1L
  sep <- lapply(1:3, function(.) vector("list", 3)); sep[[1]][[3]] <- sep[[3]][[1]] <- 2L
  expect_identical(gpupc:::native_udag2pag(chain, sep), pcalg::udag2pag(chain, sep))
  expect_identical(typeof(gpupc:::native_udag2pag(chain, sep)), "integer")
  expect_identical(gpupc:::native_udag2pag(m, sk@sepset), pcalg::udag2pag(m, sk@sepset))
  expect_identical(gpupc:::native_udag2pag(m != 0, sk@sepset), pcalg::udag2pag(m != 0, sk@sepset))
  expect_warning(gpupc:::native_udag2pag(m, sk@sepset, jci = "1"), "rules 5-7 should be disabled")
  expect_warning(pcalg::udag2pag(m, sk@sepset, jci = "1"), "rules 5-7 should be disabled")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset, rules = rep(TRUE, 9)), class = "gpupc_invalid_argument")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset, rules = c(NA, rep(TRUE, 9))), "rules")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset, jci = "2"), "should be one of")
  bad <- m; bad[1, 2] <- 5
  expect_error(gpupc:::native_udag2pag(bad, sk@sepset), "pag.*holds 5 at \\[1, 2\\]")
  bad[1, 2] <- NA
  expect_error(gpupc:::native_udag2pag(bad, sk@sepset), "pag.*NA")
  expect_error(gpupc:::native_udag2pag(m[, -1], sk@sepset), "pag.*square")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset[-1]), "sepset.*list of 6")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset, unfVect = "a"), "unfVect")
  expect_error(gpupc:::native_udag2pag(m, sk@sepset, rules = rep(c(TRUE, FALSE, TRUE), c(4, 3, 3)), jci = "12",
                                      contextVars = "a"), "contextVars")
})

test_that("gpu_fci() orients in Rust, and with verbose = TRUE through pcalg's udag2pag() and its trace", {
  skip_if_run_before()
  set.seed(12)
  X <- pcalg::rmvDAG(1000, pcalg::randomDAG(11, 0.35))[, -c(3, 8)]
  suff <- list(C = stats::cor(X), n = nrow(X))
  p <- ncol(X)
  want <- pcalg::fci(suff, pcalg::gaussCItest, alpha = 0.05, p = p)
  got <- gpupc::gpu_fci(suff, pcalg::gaussCItest, alpha = 0.05, p = p, backend = "cpu", numCores = 2)
  expect_identical(got@amat, want@amat)
  expect_true(all(c("pdsep_s", "orient_s") %in% names(gpupc::gpupc_last_run()$phases)))
  out_want <- utils::capture.output(v_want <- pcalg::fci(suff, pcalg::gaussCItest, alpha = 0.05, p = p, verbose = TRUE))
  out_got <- utils::capture.output(v_got <- gpupc::gpu_fci(suff, pcalg::gaussCItest, alpha = 0.05, p = p, backend = "cpu", numCores = 2, verbose = TRUE))
  expect_identical(v_got@amat, want@amat)
  orient_lines <- function(out) out[seq(match("Direct edges:", out), length(out))]
  expect_identical(orient_lines(out_got), orient_lines(out_want))
})
