# The result's large R objects. pMax's cells are held by Rust, outside R's heap
# (src/rust/crates/gpupc-r/src/owned_doubles.rs): every way R reads, copies, changes, saves or
# forks the matrix must act as on pcalg's own, and R's heap must not grow by it. The same holds
# for gpu_query()'s marginal matrices. pcalg's sepset
# list is allocated while the levels run (beside.rs) and filled after: its sets must survive R's
# collections as any list's.

pmax_case <- function(seed, p = 40, n = 400) {
  set.seed(seed)
  g <- pcalg::randomDAG(p, prob = 3 / p)
  X <- pcalg::rmvDAG(n, g)
  list(suffStat = list(C = cor(X), n = n), labels = paste0("V", seq_len(p)))
}

test_that("pMax acts as a plain R matrix of the same cells in every use R makes of it", {
  cs <- pmax_case(1)
  want <- pcalg::pc(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels)
  got <- gpu_pc(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu")
  m <- got@pMax
  # pcalg's p-values, to the parity suites' tolerance (the same test computed apart)
  expect_equal(m, want@pMax, tolerance = 1e-9)
  # the same cells in a matrix R made itself
  ref <- matrix(m[seq_along(m)], nrow(m), ncol(m))
  expect_identical(m, ref)
  expect_identical(typeof(m), "double")
  expect_identical(dim(m), c(40L, 40L))
  expect_identical(m[3, ], ref[3, ])
  expect_identical(m[upper.tri(m)], ref[upper.tri(ref)])
  expect_identical(which(m > 0.5), which(ref > 0.5))
  expect_identical(sum(m[is.finite(m)]), sum(ref[is.finite(ref)]))
  expect_identical(t(m), t(ref))
  expect_identical(as.vector(m), as.vector(ref))
  # copy on modify: the result's matrix keeps its cells
  m2 <- m
  m2[1, 2] <- 42
  expect_identical(m2[1, 2], 42)
  expect_identical(got@pMax, ref)
  got2 <- got
  got2@pMax[2, 1] <- -1
  expect_identical(got@pMax, ref)
  expect_identical(got2@pMax[2, 1], -1)
  # a matrix no one else holds is changed in place, as R's own
  own <- gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu")@pMax
  own[1, 1] <- 7
  expect_identical(own[1, 1], 7)
  expect_identical(own[-1], ref[-1])
})

test_that("pMax survives saving, serializing and R's collector, and comes back from forked children", {
  cs <- pmax_case(2)
  got <- gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu")
  want <- got
  want@pMax <- matrix(got@pMax[seq_along(got@pMax)], nrow(got@pMax))
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(got, f)
  back <- readRDS(f)
  expect_identical(back@pMax, want@pMax)
  expect_identical(unserialize(serialize(got@pMax, NULL)), want@pMax)
  expect_identical(unserialize(serialize(got@pMax, NULL, version = 2)), want@pMax)
  # many results made and dropped: the ones kept keep their cells
  keep <- lapply(1:3, function(i) gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu"))
  for (i in 1:20) invisible(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu"))
  invisible(gc())
  for (k in keep) expect_identical(k@pMax, want@pMax)
  skip_on_os("windows")
  kids <- parallel::mclapply(1:2, function(i) {
    r <- gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu", numCores = 1)
    list(made = r@pMax, inherited = got@pMax)
  }, mc.cores = 2)
  for (k in kids) {
    expect_identical(k$made, want@pMax)
    expect_identical(k$inherited, want@pMax)
  }
})

test_that("pMax does not count toward R's heap", {
  p <- 300L
  cs <- pmax_case(3, p = p, n = 500)
  call <- function() gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, p = p, backend = "cpu")
  invisible(call())
  invisible(gc())
  before <- gc()["Vcells", "used"]
  r <- call()
  after <- gc()["Vcells", "used"]
  # the sepset list alone is p^2 pointers (one Vcell each); R's own pMax would add p^2 more
  expect_gt(after - before, p^2)
  expect_lt(after - before, 1.5 * p^2)
  expect_identical(dim(r@pMax), c(p, p))
})

test_that("the sepset list made beside the search keeps every set through R's collections", {
  for (seed in 1:3) {
    cs <- pmax_case(10 + seed, p = 30, n = 150)
    want <- pcalg::pc(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels)
    expect_gt(want@max.ord, 1L)  # sets of two or more variables, made after the rows
    for (method in c("gpu_pc", "gpu_skeleton")) {
      gctorture2(25)
      got <- if (method == "gpu_pc") {
        gpu_pc(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels, backend = "cpu", numCores = 1)
      } else {
        gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels, backend = "cpu", numCores = 1)
      }
      gctorture2(0)
      junk <- lapply(1:2000, function(i) integer(i %% 7))
      invisible(gc(full = FALSE))
      invisible(gc())
      expect_identical(got@sepset, want@sepset)
    }
  }
})

test_that("gpu_query()'s marginal matrices act as plain R matrices, outside R's heap", {
  jt <- gpu_jtree(jt_network_path("alarm"), backend = "cpu")
  ev <- jt_sample_evidence(jt_read_fit("alarm"), 400, 0.2, seed = 5)
  ev[3, ] <- NA
  ev[3, 1:2] <- c(jt$states[[1]][1], jt$states[[2]][1])
  q <- suppressWarnings(gpu_query(jt, evidence = ev, backend = "cpu"))
  m <- q[[5]]
  ref <- matrix(m[seq_along(m)], nrow(m), ncol(m), dimnames = dimnames(m))
  expect_identical(m, ref)
  expect_identical(dim(m), c(400L, length(jt$states[[match(names(q)[5], jt$nodes)]])))
  # rows sum to one, or are NA where the evidence is impossible (R's NA, not NaN)
  ok <- attr(q, "pEvidence") > 0
  expect_equal(unname(rowSums(m[ok, , drop = FALSE])), rep(1, sum(ok)), tolerance = 1e-12)
  expect_true(all(is.na(m[!ok, ])) && !any(is.nan(m[!ok, ])))
  expect_identical(as.data.frame(m), as.data.frame(ref))
  m2 <- m
  m2[1, 1] <- 42
  expect_identical(q[[5]], ref)
  f <- tempfile(fileext = ".rds")
  on.exit(unlink(f))
  saveRDS(q, f)
  expect_identical(readRDS(f)[[5]], ref)
  invisible(gc())
  before <- gc()["Vcells", "used"]
  big <- suppressWarnings(gpu_query(jt, evidence = ev[rep(seq_len(400), 10), ], backend = "cpu"))
  after <- gc()["Vcells", "used"]
  cells <- sum(lengths(big))
  # R's own matrices would add every cell; what R holds is the evidence's codes and P(evidence)
  expect_gt(cells, 4e5)
  expect_lt(after - before, cells / 4)
  skip_on_os("windows")
  kids <- parallel::mclapply(1:2, function(i) list(made = suppressWarnings(gpu_query(jt, evidence = ev, backend = "cpu"))[[5]],
                                                   inherited = m), mc.cores = 2)
  for (k in kids) {
    expect_identical(k$made, ref)
    expect_identical(k$inherited, ref)
  }
})
