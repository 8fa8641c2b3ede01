## The cases of test-mpi.R, defined once for the MPI ranks (mpi-rank.R) and the one-process call
## they are compared with. Each case is a function of `cluster` that fits the case's data, the
## same on every rank (the data are drawn under a fixed seed). `rank` and `mode` shape the cases
## that go wrong on purpose: "mismatch" gives rank 1 other data, then runs an R-function test
## (which cluster = "mpi" refuses), a step that fails on rank 1 alone, and a case that works.
mpi_cases <- function(mode = "all", rank = 0L) {
  fit <- function(st, test, labels, ...) {
    force(st)
    function(cluster) gpupc::gpu_pc(st, test, alpha = 0.05, labels = labels, numCores = 1,
                                    backend = "cpu", cluster = cluster, ...)
  }
  set.seed(101)
  g <- pcalg::randomDAG(24, prob = 0.2)
  X <- pcalg::rmvDAG(300, g)
  gauss <- list(C = cor(X), n = nrow(X))
  lab <- paste0("V", seq_len(ncol(X)))
  if (mode == "mismatch") {
    rtest <- function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat)
    same <- fit(gauss, pcalg::gaussCItest, lab)
    # a step whose outcome may differ between hosts, failing on rank 1 only
    step <- function(cluster) {
      gpupc:::cluster_step(gpupc:::check_cluster(cluster),
                           if (rank == 1L) stop("no room on this host") else "ok")
    }
    other <- list(C = cor(X[-1, ]), n = nrow(X) - 1)
    return(list(gauss = fit(if (rank == 1L) other else gauss, pcalg::gaussCItest, lab),
                rfun = fit(gauss, rtest, lab), step = step, same = same))
  }
  if (mode == "start") return(list(gauss = fit(gauss, pcalg::gaussCItest, lab)))
  set.seed(202)
  n <- 1500
  dm <- matrix(0L, n, 9)
  dm[, 1] <- sample(0:2, n, replace = TRUE)
  for (j in 2:9) {
    parent <- dm[, sample.int(j - 1, 1)]
    dm[, j] <- ifelse(runif(n) < 0.55, parent, sample(0:2, n, replace = TRUE))
  }
  dis <- list(dm = dm, nlev = rep(3, 9), adaptDF = FALSE)
  labd <- paste0("D", 1:9)
  if (mode == "fail") {
    return(list(gauss = fit(gauss, pcalg::gaussCItest, lab),
                dis = fit(dis, pcalg::disCItest, labd, skel.method = "stable.fast"),
                after = fit(gauss, pcalg::gaussCItest, lab, m.max = 0)))
  }
  set.seed(303)
  bin <- list(dm = matrix(rbinom(8 * 800, 1, 0.5), 800, 8), adaptDF = FALSE)
  bin$dm[, 2] <- ifelse(runif(800) < 0.8, bin$dm[, 1], bin$dm[, 2])
  bin$dm[, 3] <- ifelse(runif(800) < 0.8, bin$dm[, 2], bin$dm[, 3])
  set.seed(404)
  m <- 120
  z <- rnorm(m)
  ck <- list(data = cbind(x = z^2 + rnorm(m, sd = 0.3), y = sin(z) + rnorm(m, sd = 0.3), z = z,
                          w = rnorm(m)), sig_samples = 50)
  cases <- list(
    gauss_stable = fit(gauss, pcalg::gaussCItest, lab),
    gauss_fast = fit(gauss, pcalg::gaussCItest, lab, skel.method = "stable.fast"),
    gauss_data_majrule = fit(list(data = X), pcalg::gaussCItest, lab, maj.rule = TRUE),
    dis_stable = fit(dis, pcalg::disCItest, labd),
    dis_fast = fit(dis, pcalg::disCItest, labd, skel.method = "stable.fast"),
    bin_stable = fit(bin, pcalg::binCItest, paste0("B", 1:8)),
    cmiknn_stable = fit(ck, gpupc::cmiknnCItest, colnames(ck$data)),
    cmiknn_fast = fit(ck, gpupc::cmiknnCItest, colnames(ck$data), skel.method = "stable.fast")
  )
  if (mode == "all") cases else cases[intersect(strsplit(mode, ",")[[1]], names(cases))]
}
