## The cases of test-mpi.R, defined once for the MPI ranks (mpi-rank.R) and the one-process call
## they are compared with. Each case is a function of `cluster` that fits the case's data, the
## same on every rank (the data are drawn under a fixed seed). `rank` and `mode` shape the cases
## that go wrong on purpose: "mismatch" gives rank 1 other data, then runs an R-function test
## (which cluster = "mpi" refuses), a step that fails on rank 1 alone, FCI with another pdsep.max
## and gpu_pc() with a solve.confl its check refuses, both on rank 1, bootstrap resamples drawn
## after another seed on rank 1, and a case that works.
mpi_cases <- function(mode = "all", rank = 0L) {
  if (startsWith(mode, "jtree")) return(jtree_cases(mode, rank))
  fit <- function(st, test, labels, ...) {
    force(st)
    function(cluster) gpupc::gpu_pc(st, test, alpha = 0.05, labels = labels, numCores = 1,
                                    backend = "cpu", cluster = cluster, ...)
  }
  # gpu_boot_strength(): the resamples' rows drawn after set.seed(seed)
  boot <- function(X, labels, seed = 1, R) {
    function(cluster) {
      set.seed(seed)
      gpupc::gpu_boot_strength(list(data = X), pcalg::gaussCItest, alpha = 0.05, labels = labels,
                               R = R, m = 200, numCores = 1, backend = "cpu", cluster = cluster)
    }
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
    # an argument of FCI's own stages that differs on rank 1
    fci <- function(cluster) {
      gpupc::gpu_fci(gauss, pcalg::gaussCItest, alpha = 0.05, labels = lab, numCores = 1,
                     pdsep.max = if (rank == 1L) 2 else Inf, backend = "cpu", cluster = cluster)
    }
    # an argument that fails gpu_pc()'s own check on rank 1 alone
    badflag <- function(cluster) {
      gpupc::gpu_pc(gauss, pcalg::gaussCItest, alpha = 0.05, labels = lab, numCores = 1,
                    solve.confl = if (rank == 1L) NA else FALSE, backend = "cpu", cluster = cluster)
    }
    return(list(gauss = fit(if (rank == 1L) other else gauss, pcalg::gaussCItest, lab),
                rfun = fit(gauss, rtest, lab), step = step, fci = fci, badflag = badflag,
                boot = boot(X, lab, seed = if (rank == 1L) 2 else 1, R = 3), same = same))
  }
  if (mode == "start") return(list(gauss = fit(gauss, pcalg::gaussCItest, lab), boot = boot(X, lab, R = 4)))
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
  if (mode == "dense") {
    return(list(gauss = fit(gauss, pcalg::gaussCItest, lab),
                gauss_fast = fit(gauss, pcalg::gaussCItest, lab, skel.method = "stable.fast"),
                after = fit(dis, pcalg::disCItest, labd)))
  }
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
    cmiknn_fast = fit(ck, gpupc::cmiknnCItest, colnames(ck$data), skel.method = "stable.fast"),
    # FCI and RFCI: the skeleton split over the ranks, the later stages on every rank
    fci_gauss_cons = function(cluster) {
      gpupc::gpu_fci(gauss, pcalg::gaussCItest, alpha = 0.05, labels = lab, conservative = TRUE,
                     numCores = 1, backend = "cpu", cluster = cluster)
    },
    rfci_dis = function(cluster) {
      gpupc::gpu_rfci(dis, pcalg::disCItest, alpha = 0.05, labels = labd, numCores = 1,
                      backend = "cpu", cluster = cluster)
    },
    # bootstrap resamples: a block of them per rank, the counts exchanged
    boot_gauss = boot(X, lab, seed = 7, R = 7)
  )
  if (mode == "all") return(cases)
  # a list of names, the junction tree's among them
  wanted <- strsplit(mode, ",")[[1]]
  jt <- if (any(startsWith(wanted, "jt_"))) jtree_cases("jtree", rank)
  c(cases, jt)[intersect(wanted, c(names(cases), names(jt)))]
}

## The junction-tree batches: alarm's tree, 11 evidence sets (not a multiple of 2 or 3 ranks)
## observing seven nodes or leaving them NA. "jtree_bad": rank 1 gives other evidence, rank 2
## another `backend` that fails its argument check; "jtree_fail": the batch that
## GPUPC_FAIL_RANK=1:query makes rank 1 fail; each then one evidence set (rank 0's alone: ranks
## with no sets stay in step).
jtree_cases <- function(mode, rank) {
  jt <- gpupc::gpu_jtree(system.file("extdata", "networks", "alarm.bif.gz", package = "gpupc"),
                         backend = "cpu", numCores = 1)
  set.seed(505)
  obs <- c("HISTORY", "CVP", "PCWP", "HREKG", "BP", "SAO2", "EXPCO2")
  ev <- as.data.frame(lapply(stats::setNames(obs, obs), function(v) {
    sample(c(jt$states[[v]], NA, NA), 11, replace = TRUE)
  }))
  one <- list(HISTORY = "TRUE", BP = c(0.2, 0.5, 0.3))
  after <- function(cluster) gpupc::gpu_query(jt, evidence = one, cluster = cluster)
  if (mode == "jtree_bad") {
    other <- ev
    if (rank == 1L) other$CVP[3] <- if (is.na(other$CVP[3])) jt$states$CVP[1] else NA
    return(list(
      jt_mismatch = function(cluster) gpupc::gpu_query(jt, evidence = other, cluster = cluster),
      jt_badarg = function(cluster) gpupc::gpu_mpe(jt, evidence = ev, cluster = cluster,
                                                   backend = if (rank == 2L) "gpu" else "cpu"),
      jt_after = after))
  }
  if (mode == "jtree_fail")
    return(list(jt_fail = function(cluster) gpupc::gpu_mpe(jt, evidence = ev, cluster = cluster),
                jt_after = after))
  list(
    jt_query = function(cluster) gpupc::gpu_query(jt, evidence = ev, cluster = cluster),
    jt_query_df = function(cluster) {
      gpupc::gpu_query(jt, nodes = c("LVFAILURE", "HYPOVOLEMIA", "CVP"), evidence = ev[1:5, ],
                       exclude = FALSE, result = "data.frame", cluster = cluster)
    },
    jt_query_one = function(cluster) gpupc::gpu_query(jt, evidence = one, cluster = cluster),
    jt_mpe = function(cluster) gpupc::gpu_mpe(jt, evidence = ev, cluster = cluster),
    jt_mpe_none = function(cluster) gpupc::gpu_mpe(jt, cluster = cluster))
}
