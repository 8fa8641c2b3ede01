# GPU check: backend "cuda" against backend "cpu" and pcalg::pc() slot by slot, each GPU case run
# twice; then a timing table on data shaped like the seeds' data sets. Run on a GPU machine:
#
#   Rscript bench/suites/parity/gpu-check.R --out DIR [--cases 100] [--cap 240] [--bench 1] [--parity 1]
#                                  [--discrete 1] [--disc-n 5000] [--method stable|stable.fast]
#
# --method is the Gaussian parity's skel.method (pc() and gpu_pc() alike; its file is then
# DIR/gpu-parity-stable.fast.csv).
# Writes DIR/gpu-parity.csv (one row per Gaussian case), DIR/gpu-parity-discrete.csv (one row per
# discrete case: samples of bnlearn-repository networks, disCItest and binCItest, alpha 0.01 and
# 0.05, both skeleton orders) and DIR/gpu-bench.csv (one row per tool and data set), and prints
# them. Exit status 1 when any case differs for a reason other than a tie at
# p ~ alpha.
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
out <- opt("out", "gpu-check-out")
n_cases <- as.integer(opt("cases", "100"))
cap <- as.numeric(opt("cap", "240"))
do_bench <- opt("bench", "1") == "1"
do_parity <- opt("parity", "1") == "1"
do_discrete <- opt("discrete", "1") == "1"
disc_n <- as.integer(opt("disc-n", "5000"))
method <- opt("method", "stable")
gpu <- opt("gpu-backend", "cuda")  # "cpu" dry-runs the script on a machine without a GPU
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "lib", "lib.R"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)

info <- gpu_info()
machine <- machine_info()
print(machine)
if (!isTRUE(info$usable) && gpu == "cuda") stop("no usable GPU: ", info$reason)
if (isTRUE(info$usable)) cat(sprintf("GPU %s, %.0f GB, compute capability %s, driver CUDA %s, NVRTC %s\n", info$name,
            info$memory_bytes / 2^30, info$compute_capability, info$driver_cuda_version, info$nvrtc_version))

# Every slot pcalg returns; "" when identical, else the first slot that differs.
diff_slot <- function(a, b, tol = 1e-9) {
  if (!identical(as(a, "amat"), as(b, "amat"))) return("graph")
  if (!identical(a@sepset, b@sepset)) return("sepset")
  pa <- a@pMax; pb <- b@pMax
  if (!identical(is.finite(pa), is.finite(pb)) || !identical(pa[!is.finite(pa)], pb[!is.finite(pb)])) return("pMax pattern")
  f <- is.finite(pa)
  if (any(abs(pa[f] - pb[f]) > tol * pmax(abs(pb[f]), 1e-300))) return("pMax values")
  if (!identical(a@n.edgetests, b@n.edgetests)) return("n.edgetests")
  if (!identical(a@max.ord, b@max.ord)) return("max.ord")
  ""
}
# A difference is a tie when pcalg's own answer changes with alpha moved by 1e-9 relative.
is_tie <- function(suff, alpha, p, test = gaussCItest, ...) {
  lo <- pc(suff, test, alpha * (1 - 1e-9), p = p, ...)
  hi <- pc(suff, test, alpha * (1 + 1e-9), p = p, ...)
  !identical(as(lo, "amat"), as(hi, "amat")) || !identical(lo@sepset, hi@sepset)
}

status <- 0L
if (do_parity) {
  set.seed(20261122)
  p <- pmin(300L, as.integer(round(exp(runif(n_cases, log(10), log(300))))))
  # pcalg's R loop is the reference: dense graphs with large p and alpha take it many minutes,
  # so degree and alpha shrink as p grows
  cases <- data.frame(
    id = seq_len(n_cases), p = p,
    n = as.integer(round(exp(runif(n_cases, log(20), log(5000))))),
    degree = ifelse(p > 100, sample(1:3, n_cases, replace = TRUE), sample(c(1, 2, 3, 4, 6), n_cases, replace = TRUE)),
    alpha = ifelse(p > 60, sample(c(0.001, 0.01, 0.05), n_cases, replace = TRUE),
                   sample(c(0.001, 0.01, 0.05, 0.2), n_cases, replace = TRUE)),
    seed = sample.int(1e6, n_cases))
  cases[1, c("p", "n", "degree", "alpha")] <- list(300L, 5000L, 3, 0.01)
  lowp <- seq(2, n_cases, by = 5)
  cases$n[lowp] <- pmax(20L, cases$p[lowp] %/% 3L)  # n < p: rank-deficient correlation matrices
  make <- function(k) {
    cs <- cases[k, ]
    d <- gauss_data(cs$p, cs$n, degree = cs$degree, seed = cs$seed)
    d$suff
  }
  # pcalg's answers, computed in parallel (independent single-threaded R runs)
  t_ref <- system.time(refs <- parallel::mclapply(seq_len(n_cases), function(k) {
    cs <- cases[k, ]
    pc(make(k), gaussCItest, cs$alpha, p = cs$p, skel.method = method)
  }, mc.cores = max(1L, parallel::detectCores() - 1L), mc.preschedule = FALSE))[[3]]
  cat(sprintf("pcalg references: %d cases in %.1f s\n", n_cases, t_ref))
  rows <- vector("list", n_cases)
  for (k in seq_len(n_cases)) {
    cs <- cases[k, ]
    suff <- make(k)
    g1 <- gpu_pc(suff, gaussCItest, cs$alpha, p = cs$p, backend = gpu, skel.method = method)
    g2 <- gpu_pc(suff, gaussCItest, cs$alpha, p = cs$p, backend = gpu, skel.method = method)
    cpu <- gpu_pc(suff, gaussCItest, cs$alpha, p = cs$p, backend = "cpu", skel.method = method)
    ref <- refs[[k]]
    d_pcalg <- if (inherits(ref, "try-error")) "pcalg error" else diff_slot(g1, ref)
    d_cpu <- diff_slot(g1, cpu)
    f <- is.finite(cpu@pMax)
    rel_cpu <- max(c(0, abs(g1@pMax[f] - cpu@pMax[f]) / pmax(abs(cpu@pMax[f]), 1e-300)))
    d_rerun <- diff_slot(g1, g2, tol = 0)
    tie <- if (nzchar(d_pcalg) || nzchar(d_cpu)) is_tie(suff, cs$alpha, cs$p, skel.method = method) else FALSE
    rows[[k]] <- data.frame(cs, max.ord = g1@max.ord, tests = sum(g1@n.edgetests),
                            edges = sum(skel_amat(g1)) / 2, vs_pcalg = d_pcalg, vs_cpu = d_cpu,
                            pmax_rel_diff_cpu = rel_cpu,
                            rerun = d_rerun, tie = tie)
    if (nzchar(d_rerun) || ((nzchar(d_pcalg) || nzchar(d_cpu)) && !tie)) status <- 1L
    if (k %% 10 == 0) cat(sprintf("  %d cases compared\n", k))
  }
  par <- do.call(rbind, rows)
  write.csv(cbind(par, method = method, machine), file.path(out, if (method == "stable") "gpu-parity.csv" else sprintf("gpu-parity-%s.csv", method)), row.names = FALSE)
  cat(sprintf("\nparity: %d cases (p %d-%d, n %d-%d, %d with n < p), %d tests in all\n", nrow(par),
              min(par$p), max(par$p), min(par$n), max(par$n), sum(par$n < par$p), sum(par$tests)))
  cat(sprintf("  same as pcalg: %d, as the CPU backend: %d (graph, sepsets, n.edgetests, max.ord identical; pMax within 1e-9), GPU run 2 identical to run 1: %d, ties at alpha: %d\n",
              sum(par$vs_pcalg == ""), sum(par$vs_cpu == ""), sum(par$rerun == ""), sum(par$tie)))
  cat(sprintf("  largest relative pMax difference GPU vs CPU: %.2g (CUDA's exp/log1p against glibc's)\n", max(par$pmax_rel_diff_cpu)))
  bad <- par[par$vs_pcalg != "" | par$vs_cpu != "" | par$rerun != "", ]
  if (nrow(bad)) print(bad)
}

if (do_discrete) {
  # disCItest up to level 4 against pcalg (whose gSquareDis is wrong from |S| = 5 on: p = 1), and
  # at every level against the CPU backend; binCItest on binarised networks likewise
  nets <- c("asia", "sachs", "child", "insurance", "alarm", "hepar2", "alarm:bin", "child:bin")
  dcases <- expand.grid(alpha = c(0.01, 0.05), net = nets, stringsAsFactors = FALSE)
  dcases$method <- rep(c("stable", "stable.fast"), length.out = nrow(dcases))
  dcases$adaptDF <- rep(c(FALSE, FALSE, TRUE, TRUE), length.out = nrow(dcases))
  dcases$n <- disc_n
  make_disc <- function(k) {
    cs <- dcases[k, ]
    d <- network_data(sub(":bin$", "", cs$net), cs$n, seed = k)
    dm <- d$suff$dm
    dimnames(dm) <- NULL
    if (grepl(":bin$", cs$net)) list(suff = list(dm = (dm > 0L) + 0L, adaptDF = cs$adaptDF), test = binCItest)
    else list(suff = list(dm = dm, nlev = d$suff$nlev, adaptDF = cs$adaptDF), test = disCItest)
  }
  t_ref <- system.time(drefs <- parallel::mclapply(seq_len(nrow(dcases)), function(k) {
    cs <- dcases[k, ]
    d <- make_disc(k)
    pc(d$suff, d$test, cs$alpha, p = ncol(d$suff$dm), skel.method = cs$method, m.max = 4)
  }, mc.cores = max(1L, parallel::detectCores() - 1L), mc.preschedule = FALSE))[[3]]
  cat(sprintf("pcalg references (discrete): %d cases in %.1f s\n", nrow(dcases), t_ref))
  rows <- vector("list", nrow(dcases))
  for (k in seq_len(nrow(dcases))) {
    cs <- dcases[k, ]
    d <- make_disc(k)
    p <- ncol(d$suff$dm)
    run <- function(b, m.max) gpu_pc(d$suff, d$test, cs$alpha, p = p, skel.method = cs$method, m.max = m.max, backend = b)
    g1 <- run(gpu, 4); g2 <- run(gpu, 4)
    ref <- drefs[[k]]
    d_pcalg <- if (inherits(ref, "try-error")) "pcalg error" else diff_slot(g1, ref)
    d_rerun <- diff_slot(g1, g2, tol = 0)
    # every level: GPU against CPU, twice on the GPU
    t_gpu <- system.time(a1 <- run(gpu, Inf))[[3]]
    a2 <- run(gpu, Inf)
    t_cpu <- system.time(c1 <- run("cpu", Inf))[[3]]
    d_cpu <- diff_slot(a1, c1)
    d_rerun_all <- diff_slot(a1, a2, tol = 0)
    f <- is.finite(c1@pMax)
    rel_cpu <- max(c(0, abs(a1@pMax[f] - c1@pMax[f]) / pmax(abs(c1@pMax[f]), 1e-300)))
    tie <- if (nzchar(d_pcalg)) is_tie(d$suff, cs$alpha, p, d$test, skel.method = cs$method, m.max = 4) else FALSE
    rows[[k]] <- data.frame(cs, test = if (identical(d$test, binCItest)) "binCItest" else "disCItest", p = p,
                            max.ord_m4 = g1@max.ord, tests_m4 = sum(g1@n.edgetests), max.ord = a1@max.ord,
                            tests = sum(a1@n.edgetests), edges = sum(skel_amat(a1)) / 2,
                            vs_pcalg_m4 = d_pcalg, rerun_m4 = d_rerun, vs_cpu = d_cpu, rerun = d_rerun_all,
                            pmax_rel_diff_cpu = rel_cpu, tie = tie, gpu_s = t_gpu, cpu_s = t_cpu)
    if (nzchar(d_rerun) || nzchar(d_rerun_all) || nzchar(d_cpu) || (nzchar(d_pcalg) && !tie)) status <- 1L
  }
  dpar <- do.call(rbind, rows)
  write.csv(cbind(dpar, machine), file.path(out, "gpu-parity-discrete.csv"), row.names = FALSE)
  print(dpar[, c("net", "test", "alpha", "method", "adaptDF", "n", "max.ord", "tests", "vs_pcalg_m4", "vs_cpu",
                 "rerun_m4", "rerun", "pmax_rel_diff_cpu", "tie", "gpu_s", "cpu_s")], row.names = FALSE)
  cat(sprintf("\ndiscrete parity: %d cases (%d networks, n = %d), %d tests in all\n", nrow(dpar),
              length(unique(dpar$net)), disc_n, sum(dpar$tests)))
  cat(sprintf("  same as pcalg (m.max = 4): %d, as the CPU backend (all levels): %d, GPU run 2 identical to run 1: %d, ties at alpha: %d\n",
              sum(dpar$vs_pcalg_m4 == ""), sum(dpar$vs_cpu == ""), sum(dpar$rerun == "" & dpar$rerun_m4 == ""), sum(dpar$tie)))
  cat(sprintf("  largest relative pMax difference GPU vs CPU: %.2g\n", max(dpar$pmax_rel_diff_cpu)))
}

if (do_bench) {
  shapes <- data.frame(name = c("NCI-60-like", "DREAM5-like", "S.cerevisiae-like", "p10000"),
                       p = c(1190L, 1643L, 5361L, 10000L), n = c(47L, 850L, 63L, 1000L))
  large_p <- as.integer(opt("large-p", "0"))  # e.g. 20000: one more shape, n = 1000
  if (large_p > 0) shapes <- rbind(shapes, data.frame(name = sprintf("p%d", large_p), p = large_p, n = 1000L))
  only <- opt("shapes", "")  # e.g. "1,2": run these rows of the shape table only
  if (nzchar(only)) shapes <- shapes[as.integer(strsplit(only, ",")[[1]]), ]
  do_baselines <- opt("baselines", "1") == "1"
  do_gpupc <- opt("gpupc", "1") == "1"  # 0: the pcalg baselines only
  e2e_max_p <- as.numeric(opt("e2e-max-p", "6000"))
  scale <- as.numeric(opt("scale", "1"))  # < 1 shrinks p for a dry run
  shapes$p <- pmax(20L, as.integer(round(shapes$p * scale)))
  rows <- list()
  add <- function(...) {
    rows[[length(rows) + 1]] <<- data.frame(..., stringsAsFactors = FALSE)
    print(rows[[length(rows)]][, 1:9], row.names = FALSE)
    # written after every row: a run cut short by a time limit keeps what it measured
    write.csv(do.call(rbind, rows), file.path(out, "gpu-bench.csv"), row.names = FALSE)
  }
  # lib.R's generator: rmvDAG + cor() up to n p^2 = 3e9, its sparse twin and a blocked
  # cross-product above (the same data compare.R's Gaussian suite uses)
  shape_data <- function(sh) gauss_data(sh$p, sh$n, degree = 4, seed = sh$p)$suff
  t_data <- system.time(sdata <- lapply(seq_len(nrow(shapes)), function(k) shape_data(shapes[k, ])))[[3]]
  cat(sprintf("data for %d shapes made in %.1f s\n", nrow(shapes), t_data))
  fits <- list()
  if (gpu == "cuda" && do_gpupc) {
    # the first CUDA call of a process creates the context (seconds): measured on its own here so
    # that the rows below are warm timings
    w <- gauss_data(50, 200, degree = 3, seed = 1)
    t_warm <- timed(gpu_skeleton(w$suff, gaussCItest, 0.01, p = 50, backend = gpu))$secs
    det <- gpupc_last_run()$details
    add(data = "warm-up p=50", p = 50L, n = 200L, tool = paste("gpupc", gpupc_last_run()$backend),
        skeleton_s = t_warm, end_to_end_s = NA, orientation_s = NA, levels = NA, edges = NA,
        kernel_s = det$kernel_s, nvrtc_compile_s = det$nvrtc_compile_s,
        level_s = "first CUDA call of the process: context creation, NVRTC, module load", same_as_cpu = NA, machine)
  }
  for (k in seq_len(nrow(shapes) * do_gpupc)) {
    sh <- shapes[k, ]
    d <- list(suff = sdata[[k]])
    for (b in unique(c(gpu, "cpu"))) {
      sk <- timed(gpu_skeleton(d$suff, gaussCItest, 0.01, p = sh$p, backend = b))
      last <- gpupc_last_run()
      # end to end adds pcalg's R orientation (udag2pdagRelaxed), minutes at p = 10000
      # (once, on the GPU: the orientation is the same R code after either backend)
      e2e <- if (sh$p <= e2e_max_p && b == gpu) timed(gpu_pc(d$suff, gaussCItest, 0.01, p = sh$p, backend = b)) else list(secs = NA)
      det <- last$details
      add(data = sh$name, p = sh$p, n = sh$n, tool = paste("gpupc", last$backend),
          skeleton_s = sk$secs, end_to_end_s = e2e$secs, orientation_s = e2e$secs - sk$secs,
          levels = sk$value@max.ord, edges = sum(skel_amat(sk$value)) / 2,
          kernel_s = if (length(det)) det$kernel_s else NA, nvrtc_compile_s = if (length(det)) det$nvrtc_compile_s else NA,
          level_s = paste(sprintf("%d:%.3f", last$levels$level, last$levels$seconds), collapse = " "),
          same_as_cpu = if (b == "cpu") same_as(sk$value, fits[[paste(k, gpu)]]) else NA, machine)
      fits[[paste(k, b)]] <- sk$value
    }
  }
  # pcalg stable.fast, single-threaded (Linux builds of pcalg have no OpenMP), all shapes at
  # once in forked children so the capped runs overlap
  if (do_baselines) {
    # each child writes its skeleton time as soon as it has it, so a run whose orientation passes
    # the cap still reports its skeleton
    stamp <- function(k, what) file.path(out, sprintf(".stablefast-%d-%s.rds", k, what))
    jobs <- lapply(seq_len(nrow(shapes)), function(k) {
      sh <- shapes[k, ]
      parallel::mcparallel({
        t <- system.time(s <- skeleton(sdata[[k]], gaussCItest, 0.01, p = sh$p, method = "stable.fast"))[[3]]
        saveRDS(list(secs = t, levels = s@max.ord, edges = sum(skel_amat(s)) / 2,
                     same = if (is.null(fits[[paste(k, "cpu")]])) NA else
                       identical(unname(skel_amat(s)), unname(skel_amat(fits[[paste(k, "cpu")]])))), stamp(k, "skel"))
        t2 <- system.time(pcalg::udag2pdagRelaxed(s))[[3]]
        saveRDS(t + t2, stamp(k, "e2e"))
        TRUE
      }, silent = TRUE)
    })
    t_end <- Sys.time() + cap
    while (Sys.time() < t_end && !all(file.exists(stamp(seq_along(jobs), "e2e")))) Sys.sleep(1)
    for (j in jobs) tools::pskill(j$pid, tools::SIGKILL)
    parallel::mccollect(jobs, wait = FALSE)
    for (k in seq_along(jobs)) {
      sh <- shapes[k, ]
      sk <- if (file.exists(stamp(k, "skel"))) readRDS(stamp(k, "skel")) else NULL
      e2e <- if (file.exists(stamp(k, "e2e"))) readRDS(stamp(k, "e2e")) else NA
      capped_note <- sprintf("> %d s (cap)", as.integer(cap))
      add(data = sh$name, p = sh$p, n = sh$n, tool = "pcalg stable.fast (1 core)",
          skeleton_s = if (is.null(sk)) NA else sk$secs, end_to_end_s = e2e,
          orientation_s = if (is.null(sk)) NA else e2e - sk$secs,
          levels = if (is.null(sk)) NA else sk$levels, edges = if (is.null(sk)) NA else sk$edges,
          kernel_s = NA, nvrtc_compile_s = NA,
          level_s = if (is.null(sk)) paste("skeleton", capped_note) else if (is.na(e2e)) paste("orientation", capped_note) else "",
          # same skeleton as gpupc's (stable and stable.fast may pick other sepsets)
          same_as_cpu = if (is.null(sk)) NA else sk$same, machine)
    }
    unlink(stamp(seq_along(jobs), "skel")); unlink(stamp(seq_along(jobs), "e2e"))
  }
}
quit(status = status)
