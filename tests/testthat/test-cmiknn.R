## CMI-kNN (cmiknnCItest): gpu_pc() with the native CPU backend against pcalg::pc() calling the
## same exported test from R, slot by slot; the suffStat checks. The estimator itself is tested
## against tigramite in Rust (src/rust/crates/pc-cmiknn/tests).

cmi_data <- function(n, seed) {
  ## a non-linear DAG: 1 -> 2 (quadratic), 1 -> 3 (tanh), 2 -> 4, 3 -> 4 (sin + product), 5 free
  set.seed(seed)
  x1 <- rnorm(n)
  x2 <- x1^2 + 0.4 * rnorm(n)
  x3 <- tanh(2 * x1) + 0.4 * rnorm(n)
  x4 <- sin(x2) + x3 + 0.4 * rnorm(n)
  x5 <- rnorm(n)
  cbind(a = x1, b = x2, c = x3, d = x4, e = x5)
}

test_that("gpu_pc() on the CPU equals pcalg::pc() with cmiknnCItest in every slot", {
  cases <- list(
    list(n = 120, seed = 1, st = list(knn = 0.2, sig_samples = 49, seed = 7), method = "stable", alpha = 0.05),
    list(n = 150, seed = 2, st = list(knn = 7, sig_samples = 39, permute = "X", shuffle_neighbors = 3), method = "stable", alpha = 0.1),
    list(n = 100, seed = 3, st = list(knn = 10, sig_samples = 29, seed = -3), method = "stable.fast", alpha = 0.05)
  )
  for (cs in cases) {
    X <- cmi_data(cs$n, cs$seed)
    st <- c(list(data = X), cs$st)
    want <- pcalg::pc(st, cmiknnCItest, alpha = cs$alpha, labels = colnames(X), skel.method = cs$method)
    got <- gpu_pc(st, cmiknnCItest, alpha = cs$alpha, labels = colnames(X), skel.method = cs$method,
                  backend = "cpu")
    expect_identical(pcalgo_diff(got, want), character(0))
    ## the search did remove edges and test at level >= 1, so the comparison is not vacuous
    expect_gt(sum(want@n.edgetests[-1]), 0)
    expect_lt(sum(as(want@graph, "matrix")), 20)
  }
})

test_that("cmiknnCItest gives the same p-value in any call order and S order", {
  X <- cmi_data(80, 4)
  st <- list(data = X, knn = 5, sig_samples = 19)
  a <- cmiknnCItest(1, 4, c(2, 3), st)
  b <- cmiknnCItest(2, 3, 1, st)
  expect_identical(cmiknnCItest(1, 4, c(3, 2), st), a)
  expect_identical(cmiknnCItest(2, 3, 1, st), b)
  expect_true(a >= 1 / 20 && a <= 1)
  ## dependence: the smallest p-value possible
  expect_identical(cmiknnCItest(1, 2, integer(0), st), 1 / 20)
  ## another seed draws other permutations
  pv <- vapply(1:5, function(s) cmiknnCItest(1, 4, c(2, 3), modifyList(st, list(seed = s))), 0)
  expect_gt(length(unique(pv)), 1)
})

test_that("bad suffStat fields give errors naming the field", {
  X <- cmi_data(30, 5)
  err <- function(st, field) {
    expect_error(cmiknnCItest(1, 2, 3, st), field, fixed = TRUE, class = "gpupc_invalid_argument")
    expect_error(gpu_pc(st, cmiknnCItest, alpha = 0.05, labels = colnames(X), backend = "cpu"),
                 field, fixed = TRUE, class = "gpupc_invalid_argument")
  }
  err(list(knn = 5), "suffStat$data")
  err(list(data = "a"), "suffStat$data")
  Xna <- X; Xna[3, 2] <- NA
  err(list(data = Xna), "suffStat$data")
  err(list(data = X, knn = 30), "suffStat$knn")
  err(list(data = X, knn = -1), "suffStat$knn")
  err(list(data = X, knn = 2.5), "suffStat$knn")
  err(list(data = X, shuffle_neighbors = 0), "suffStat$shuffle_neighbors")
  err(list(data = X, sig_samples = 1.5), "suffStat$sig_samples")
  err(list(data = X, sig_samples = NA), "suffStat$sig_samples")
  err(list(data = X, transform = "standardize"), "suffStat$transform")
  err(list(data = X, permute = "Z"), "suffStat$permute")
  err(list(data = X, seed = "x"), "suffStat$seed")
  err(list(data = X, sig_sample = 10), "suffStat")
  expect_error(cmiknnCItest(1, 1, 3, list(data = X)), "S", class = "gpupc_invalid_argument")
  expect_error(cmiknnCItest(1, 9, integer(0), list(data = X)), "y", class = "gpupc_invalid_argument")
  expect_error(gpu_pc(list(data = X[, 1:3]), cmiknnCItest, alpha = 0.05, labels = colnames(X), backend = "cpu"),
               "suffStat$data", fixed = TRUE, class = "gpupc_invalid_argument")
})
