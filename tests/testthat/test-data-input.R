# gaussCItest with suffStat = list(data = X): C computed by the backend (pc-core's corr.rs on the
# CPU, corr.cu on the GPU, bit for bit alike), compared with pcalg on list(C = cor(X), n).

test_that("suffStat$data gives pcalg's skeleton and pc on cor(X)", {
  for (seed in 1:6) {
    set.seed(seed)
    p <- sample(5:40, 1); n <- sample(c(30, 200, 1000), 1)
    X <- pcalg::rmvDAG(n, pcalg::randomDAG(p, prob = 3 / p))
    labels <- paste0("V", seq_len(p))
    for (method in c("stable", "stable.fast")) {
      want <- pcalg::skeleton(list(C = cor(X), n = n), pcalg::gaussCItest, 0.01, labels = labels, method = method)
      got <- gpu_skeleton(list(data = X), pcalg::gaussCItest, 0.01, labels = labels, method = method, backend = "cpu")
      expect_same_pcalgo(got, want, 0.01, sprintf("data input, seed %d, %s", seed, method),
                         strict_type = method == "stable.fast")
    }
    want <- pcalg::pc(list(C = cor(X), n = n), pcalg::gaussCItest, 0.01, labels = labels, conservative = TRUE)
    got <- gpu_pc(list(data = X), pcalg::gaussCItest, 0.01, labels = labels, conservative = TRUE, backend = "cpu")
    expect_same_pcalgo(got, want, 0.01, sprintf("data input, pc conservative, seed %d", seed))
  }
})

test_that("a data frame, integer data and an explicit n are taken", {
  set.seed(3)
  X <- pcalg::rmvDAG(100, pcalg::randomDAG(8, prob = 0.4))
  a <- gpu_skeleton(list(data = X), pcalg::gaussCItest, 0.05, p = 8, backend = "cpu")
  b <- gpu_skeleton(list(data = as.data.frame(X)), pcalg::gaussCItest, 0.05, p = 8, backend = "cpu")
  expect_identical_pcalgo(a, b, "data frame")
  Xi <- round(X * 100)
  storage.mode(Xi) <- "integer"
  c1 <- gpu_skeleton(list(data = Xi), pcalg::gaussCItest, 0.05, p = 8, backend = "cpu")
  want <- pcalg::skeleton(list(C = cor(Xi), n = 100), pcalg::gaussCItest, 0.05, p = 8)
  expect_same_pcalgo(c1, want, 0.05, "integer data")
  d <- gpu_skeleton(list(data = X, n = 50), pcalg::gaussCItest, 0.05, p = 8, backend = "cpu")
  want <- pcalg::skeleton(list(C = cor(X), n = 50), pcalg::gaussCItest, 0.05, p = 8)
  expect_same_pcalgo(d, want, 0.05, "explicit n")
})

test_that("bad data are errors naming suffStat$data", {
  X <- matrix(rnorm(50), 10, 5)
  run <- function(d, ...) gpu_skeleton(list(data = d, ...), pcalg::gaussCItest, 0.05, p = 5, backend = "cpu")
  Y <- X; Y[3, 2] <- NA
  expect_error(run(Y), "suffStat\\$data.*finite")
  Y <- X; Y[, 4] <- 1
  expect_error(run(Y), "suffStat\\$data.*column 4 is constant")
  expect_error(run(X[, 1:4]), "suffStat\\$data.*4 columns")
  expect_error(run(X[1, , drop = FALSE]), "suffStat\\$data.*2 rows")
  expect_error(run(letters), "suffStat\\$data.*numeric matrix")
  expect_error(run(X, n = -1), "suffStat\\$n")
})
