## gpu_boot_strength(): the resamples' rows as documented (sample.int(n, m, replace = TRUE), one
## resample after another, after set.seed()), each resample's CPDAG recomputed here by
## pcalg::pc(), and the strengths bnlearn's custom.strength() gives for those graphs.

## pcalg::pc() on every resample of `rows` (m x R, drawn here), as bnlearn arc sets.
pcalg_arc_sets <- function(rows, resample, indepTest, alpha, labels, ...) {
  lapply(seq_len(ncol(rows)), function(k) {
    fit <- pcalg::pc(resample(rows[, k]), indepTest, alpha = alpha, labels = labels, ...)
    a <- which(methods::as(fit@graph, "matrix") != 0, arr.ind = TRUE)
    matrix(labels[a], ncol = 2, dimnames = list(NULL, c("from", "to")))
  })
}

draw_rows <- function(seed, n, m, R) {
  set.seed(seed)
  vapply(seq_len(R), function(k) sample.int(n, m, replace = TRUE), integer(m))
}

expect_bnlearn_strength <- function(got, arcs, labels, R, m) {
  want <- bnlearn::custom.strength(arcs, nodes = labels, cpdag = FALSE)
  expect_s3_class(got, c("bn.strength", "data.frame"), exact = TRUE)
  expect_identical(names(got), c("from", "to", "strength", "direction"))
  for (col in names(got)) expect_identical(got[[col]], want[[col]], label = col)
  expect_identical(attr(got, "row.names"), attr(want, "row.names"))
  for (a in c("nodes", "method", "threshold")) expect_identical(attr(got, a), attr(want, a), label = a)
  expect_identical(attr(got, "R"), as.integer(R))
  expect_identical(attr(got, "m"), as.integer(m))
  # edges (adjacencies) per resample
  expect_identical(attr(got, "edges"), vapply(arcs, function(a) {
    key <- paste(pmin(a[, 1], a[, 2]), pmax(a[, 1], a[, 2]))
    length(unique(key))
  }, 1L))
  # bnlearn's averaged network takes it as it takes its own
  expect_identical(bnlearn::averaged.network(got), bnlearn::averaged.network(want))
}

test_that("Gaussian: the strengths of pcalg's graphs on the same resamples, as bnlearn computes them", {
  skip_if_not_installed("bnlearn")
  set.seed(11)
  X <- pcalg::rmvDAG(300, pcalg::randomDAG(9, prob = 0.3))
  lab <- paste0("X", 1:9)
  R <- 12
  m <- 250
  set.seed(5)
  got <- gpu_boot_strength(list(data = X), pcalg::gaussCItest, 0.01, labels = lab, R = R, m = m,
                           numCores = 2, backend = "cpu")
  rows <- draw_rows(5, nrow(X), m, R)
  arcs <- pcalg_arc_sets(rows, function(r) list(C = cor(X[r, ]), n = m), pcalg::gaussCItest, 0.01, lab)
  expect_bnlearn_strength(got, arcs, lab, R, m)
  # some arcs directed, some not, some absent: every branch of the arithmetic
  expect_true(any(got$direction == 1) && any(got$direction > 0 & got$direction < 1) && any(got$strength == 0))
  run <- gpupc_last_run()
  expect_identical(run$bootstrap$resamples, as.integer(R))
  expect_identical(run$bootstrap$local, as.integer(R))
  expect_true(all(c("r_checks_s", "resamples_s", "strength_s") %in% names(run$phases)))
  # the same seed, the same result; `p` instead of labels
  set.seed(5)
  again <- gpu_boot_strength(list(data = as.data.frame(X)), pcalg::gaussCItest, 0.01, p = 9, R = R,
                             m = m, numCores = 2, backend = "cpu")
  expect_identical(again$strength, got$strength)
  expect_identical(again$from, sub("X", "", got$from))
})

test_that("discrete: disCItest with gpu_pc()'s arguments passed on, against pcalg and bnlearn", {
  skip_if_not_installed("bnlearn")
  set.seed(202)
  n <- 400
  dm <- matrix(0L, n, 6)
  dm[, 1] <- sample(0:2, n, replace = TRUE)
  for (j in 2:6) {
    parent <- dm[, sample.int(j - 1, 1)]
    dm[, j] <- ifelse(runif(n) < 0.6, parent, sample(0:2, n, replace = TRUE))
  }
  lab <- paste0("D", 1:6)
  st <- list(dm = dm, nlev = rep(3, 6), adaptDF = FALSE)
  R <- 8
  set.seed(9)
  # pcalg's warning (tests with n < 10 df) comes once, not once per resample
  expect_warning(got <- gpu_boot_strength(st, pcalg::disCItest, 0.05, labels = lab, R = R,
                                          skel.method = "stable.fast", maj.rule = TRUE, numCores = 2,
                                          backend = "cpu"),
                 "too small")
  rows <- draw_rows(9, n, n, R)
  arcs <- suppressWarnings(pcalg_arc_sets(rows, function(r) list(dm = dm[r, ], nlev = rep(3, 6), adaptDF = FALSE),
                                          pcalg::disCItest, 0.05, lab, skel.method = "stable.fast", maj.rule = TRUE))
  expect_bnlearn_strength(got, arcs, lab, R, n)
})

test_that("bad arguments stop with an error naming the argument", {
  data(gmG, package = "pcalg", envir = environment())
  X <- gmG8$x[1:200, ]
  st <- list(data = X)
  lab <- colnames(X)
  bad <- function(arg, ...) {
    expect_error(gpu_boot_strength(..., numCores = 1, backend = "cpu"),
                 class = "gpupc_invalid_argument", regexp = arg, fixed = TRUE)
  }
  for (R in list(0, 2.5, -1, NA, "10", c(2, 3), Inf)) bad("`R`", st, pcalg::gaussCItest, 0.01, labels = lab, R = R)
  for (m in list(1, 201, 10.5, NA, "50")) bad("`m`", st, pcalg::gaussCItest, 0.01, labels = lab, R = 2, m = m)
  bad("`suffStat`", list(C = cor(X), n = 200), pcalg::gaussCItest, 0.01, labels = lab, R = 2)
  bad("`indepTest`", st, function(x, y, S, suffStat) 0.5, 0.01, labels = lab, R = 2)
  bad("`skel.methd`", st, pcalg::gaussCItest, 0.01, labels = lab, R = 2, skel.methd = "stable")
  bad("`alpha`", st, pcalg::gaussCItest, 0, labels = lab, R = 2)
  bad("`suffStat$dm`", list(dm = X), pcalg::disCItest, 0.01, labels = lab, R = 2)
  # cmiknnCItest's k neighbours must be fewer than a resample's rows
  bad("`suffStat$knn`", list(data = X, knn = 60), cmiknnCItest, 0.05, labels = lab, R = 2, m = 50)
})

test_that("the progress hooks count the resamples, and a stop from them interrupts the run", {
  data(gmG, package = "pcalg", envir = environment())
  X <- gmG8$x[1:300, ]
  fit_one <- function(st, labels, devices) gpu_pc(st, pcalg::gaussCItest, 0.01, labels = labels, numCores = 1, backend = "cpu")
  run <- function(hooks) {
    gpupc:::boot_strength_impl(list(data = X), pcalg::gaussCItest, 0.01, colnames(X), NULL, FALSE, TRUE,
                               R = 4, m = NULL, dots = list(), cluster = NULL, fit_one = fit_one, hooks = hooks)
  }
  ticks <- matrix(numeric(0), 0, 2)
  hooks <- list(tick = function(done, total) { ticks <<- rbind(ticks, c(done, total)); nrow(ticks) < stop_at },
                done = function() NULL)
  stop_at <- Inf
  run(hooks)
  expect_identical(ticks, cbind(c(0, 1, 2, 3, 4), 4))
  stop_at <- 2
  got <- tryCatch(try(run(hooks), silent = TRUE), interrupt = function(i) "interrupt")
  expect_identical(got, "interrupt")
})
