## The comparison helpers must catch every kind of difference they claim to check (so that the
## parity tests can fail), and tell a tie at p ~ alpha from a real difference. pcalg vs itself.

helper_ref <- local({
  set.seed(2024)
  g <- pcalg::randomDAG(12, 3 / 11)
  d <- pcalg::rmvDAG(300, g)
  list(suff = list(C = stats::cor(d), n = 300L))
})

test_that("identical pcalg runs compare equal", {
  s <- helper_ref$suff
  for (m in c("stable", "stable.fast")) {
    a <- pcalg::skeleton(s, pcalg::gaussCItest, 0.05, p = 12, method = m)
    b <- pcalg::skeleton(s, pcalg::gaussCItest, 0.05, p = 12, method = m)
    expect_length(pcalgo_diff(a, b, strict_type = TRUE), 0)
    a <- pcalg::pc(s, pcalg::gaussCItest, 0.05, p = 12, skel.method = m)
    b <- pcalg::pc(s, pcalg::gaussCItest, 0.05, p = 12, skel.method = m)
    expect_length(pcalgo_diff(a, b, strict_type = TRUE), 0)
  }
})

test_that("every slot difference is detected", {
  s <- helper_ref$suff
  a <- pcalg::skeleton(s, pcalg::gaussCItest, 0.05, p = 12, method = "stable")
  f <- pcalg::skeleton(s, pcalg::gaussCItest, 0.05, p = 12, method = "stable.fast")
  has <- function(d, slot) any(startsWith(d, slot))
  ## an edge more or less
  m <- as(a@graph, "matrix"); w <- which(m == 0 & row(m) != col(m), arr.ind = TRUE)[1, ]
  m[w[1], w[2]] <- m[w[2], w[1]] <- 1
  b <- a; b@graph <- as(m, "graphNEL")
  expect_true(has(pcalgo_diff(b, a), "graph adjacency"))
  ## node names
  m2 <- as(a@graph, "matrix"); dimnames(m2) <- list(paste0("x", 1:12), paste0("x", 1:12)); b <- a; b@graph <- as(m2, "graphNEL")
  expect_true(has(pcalgo_diff(b, a), "graph nodes"))
  ## edgemode (pc's directed graph vs the skeleton's undirected one)
  pcr <- pcalg::pc(s, pcalg::gaussCItest, 0.05, p = 12)
  b <- a; b@graph <- pcr@graph
  expect_true(has(pcalgo_diff(b, a), "graph edgemode"))
  ## sepset: NULL vs integer(0), another set, numeric vs integer is *not* a difference
  ## independent columns: edges removed at level 0 get the sepset integer(0)
  s0 <- local({ set.seed(5); list(C = stats::cor(matrix(rnorm(3000), 300, 10)), n = 300L) })
  a0 <- pcalg::skeleton(s0, pcalg::gaussCItest, 0.01, p = 10)
  i <- which(vapply(a0@sepset, function(r) any(vapply(r, function(e) !is.null(e) && length(e) == 0, NA)), NA))[1]
  j <- which(vapply(a0@sepset[[i]], function(e) !is.null(e) && length(e) == 0, NA))[1]
  b <- a0; b@sepset[[i]][j] <- list(NULL)
  expect_true(has(pcalgo_diff(b, a0), "sepset"))
  b <- a0; b@sepset[[i]][[j]] <- 5L
  expect_true(has(pcalgo_diff(b, a0), "sepset"))
  b <- a0; b@sepset[[j]][[i]] <- a0@sepset[[i]][[j]]; b@sepset[[i]][j] <- list(NULL)
  expect_true(has(pcalgo_diff(b, a0), "sepset"))
  nonempty <- which(vapply(a@sepset, function(r) any(lengths(r) > 0), NA))
  if (length(nonempty)) {
    i2 <- nonempty[1]; j2 <- which(lengths(a@sepset[[i2]]) > 0)[1]
    b <- a; b@sepset[[i2]][[j2]] <- as.numeric(a@sepset[[i2]][[j2]])
    expect_length(pcalgo_diff(b, a), 0)
  }
  ## pMax: a relative change of 1e-7 is caught, 1e-12 is not; -Inf vs -1; NA pattern
  k <- which(is.finite(a@pMax) & a@pMax > 0 & a@pMax < 1)[1]
  b <- a; b@pMax[k] <- a@pMax[k] * (1 + 1e-7)
  expect_true(has(pcalgo_diff(b, a), "pMax"))
  b <- a; b@pMax[k] <- a@pMax[k] * (1 + 1e-12)
  expect_length(pcalgo_diff(b, a), 0)
  kf <- which(f@pMax == -1)[1]
  b <- f; b@pMax[kf] <- -Inf
  expect_true(has(pcalgo_diff(b, f), "pMax"))
  b <- f; b@pMax[kf] <- NA
  expect_true(has(pcalgo_diff(b, f), "pMax"))
  ## n.edgetests: values always, type only when strict
  b <- a; b@n.edgetests[1] <- b@n.edgetests[1] + 1
  expect_true(has(pcalgo_diff(b, a), "n.edgetests"))
  b <- f; b@n.edgetests <- as.numeric(f@n.edgetests)
  expect_length(pcalgo_diff(b, f), 0)
  expect_true(has(pcalgo_diff(b, f, strict_type = TRUE), "n.edgetests"))
  ## max.ord, n, zMin
  b <- a; b@max.ord <- a@max.ord + 1L
  expect_true(has(pcalgo_diff(b, a), "max.ord"))
  b <- a; b@n <- 300L
  expect_true(has(pcalgo_diff(b, a), "n slot"))
  b <- a; b@zMin <- matrix(0, 1, 1)
  expect_true(has(pcalgo_diff(b, a), "zMin"))
  ## stable vs stable.fast really differ in pcalg's conventions
  expect_true(length(pcalgo_diff(f, a)) > 0)
})

test_that("expect_same_pcalgo fails on a real difference, and skips only on a tie", {
  s <- helper_ref$suff
  a <- pcalg::skeleton(s, pcalg::gaussCItest, 0.05, p = 12)
  b <- a; b@n.edgetests[1] <- b@n.edgetests[1] + 1
  rr <- function(al) pcalg::skeleton(s, pcalg::gaussCItest, al, p = 12)
  expect_failure(expect_same_pcalgo(b, a, 0.05, "mutated", rerun = rr))
  ## a tie: alpha exactly at the p-value that removed an edge; pcalg removes it (p >= alpha), an
  ## implementation whose p differs in the last bit would keep it
  pm <- a@pMax[upper.tri(a@pMax)]
  at <- sort(pm[pm >= 0.05])[1]
  t1 <- rr(at)
  t2 <- rr(at * (1 + 1e-12))     # the other decision
  expect_true(length(pcalgo_diff(t1, t2)) > 0)
  before <- length(.parity$ties)
  res <- tryCatch(expect_same_pcalgo(t2, t1, at, "tie example", rerun = rr), skip = function(e) e)
  expect_s3_class(res, "skip")
  expect_match(conditionMessage(res), "tie at p ~ alpha")
  expect_identical(length(.parity$ties), before + 1L)
  .parity$ties <- .parity$ties[seq_len(before)]
})

test_that("numCores = NULL follows the gpupc.threads option, then R CMD check's core limit", {
  cores <- gpupc:::rs_cpu_threads()
  withr::local_options(gpupc.threads = NULL)
  no_mpi <- c(OMPI_COMM_WORLD_SIZE = NA, PMI_SIZE = NA, PMI_RANK = NA, PMIX_RANK = NA, MV2_COMM_WORLD_SIZE = NA)
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = NA, OMP_THREAD_LIMIT = NA, no_mpi),
                     expect_identical(gpupc:::check_threads(NULL), 0L))
  # four ranks of an MPI job on this host share its cores; a local size without a launcher's
  # variables (or of one rank) changes nothing
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = NA, OMP_THREAD_LIMIT = NA, no_mpi, OMPI_COMM_WORLD_SIZE = "8",
                       OMPI_COMM_WORLD_LOCAL_SIZE = "4"),
                     expect_identical(gpupc:::check_threads(NULL), max(1L, as.integer(cores %/% 4))))
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = NA, OMP_THREAD_LIMIT = NA, no_mpi, OMPI_COMM_WORLD_LOCAL_SIZE = "4"),
                     expect_identical(gpupc:::check_threads(NULL), 0L))
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = NA, OMP_THREAD_LIMIT = NA, no_mpi, PMI_SIZE = "2", MPI_LOCALNRANKS = "1"),
                     expect_identical(gpupc:::check_threads(NULL), 0L))
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = "TRUE", OMP_THREAD_LIMIT = NA),
                     expect_identical(gpupc:::check_threads(NULL), min(2L, cores)))
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = "false", OMP_THREAD_LIMIT = "1"),
                     expect_identical(gpupc:::check_threads(NULL), 1L))
  withr::local_options(gpupc.threads = 1)
  withr::with_envvar(c(`_R_CHECK_LIMIT_CORES_` = "TRUE"), expect_identical(gpupc:::jt_threads(NULL), 1L))
  withr::local_options(gpupc.threads = 0.5)
  expect_error(gpupc:::check_threads(NULL), "gpupc.threads", class = "gpupc_invalid_argument")
  # a number given is used as given, capped at the cores
  expect_identical(gpupc:::check_threads(1), 1L)
})
