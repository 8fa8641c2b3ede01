# End-to-end gpu_pc() against pcalg's pc(skel.method = "stable.fast") in one run, with gpu_pc()'s phases, and the parity of the triple checks on the chosen backend.
#
#   Rscript bench/suites/orient/orient-e2e.R [--out FILE.csv] [--backend cuda|cpu|auto] [--cap 75]
#                                   [--reps 3] [--e2e-p 1643,5361,10000] [--cons-p 500,1643]
#                                   [--n 850] [--alpha 0.01] [--parity 100]
#                                   [--helpers tests/testthat/helper-orient.R] [--quick]
#                                   [--warm-case 1]
#
# 1. gpupc: each case (relaxed at every --e2e-p; conservative and majority rule at every --cons-p;
#    Gaussian data of pcalg's randomDAG, mean degree 4, n = --n) runs --reps times after one
#    warm-up of the GPU (the process's first CUDA call opens the device and compiles the
#    kernels) and, with --warm-case 1 (the default), one untimed run of the case itself; the
#    median run's seconds and gpupc_last_run()$phases are reported, and every run's seconds with
#    the seconds R's collector ran in it.
# 2. pcalg: pc(..., skel.method = "stable.fast") of every case, all started at once in forked
#    children (one core each; the machine has more cores than cases) after the gpupc timings,
#    each capped at --cap seconds; same_amat compares the edge marks with gpupc's.
# 3. While they run: --parity random skeletons per rule (the helpers' fake_skeleton_bounded(),
#    as tests/testthat/test-orient.R) oriented by gpupc:::orient_pcalgo(backend = --backend)
#    against pcalg's pc.cons.intern() + udag2pdagRelaxed(): identical() pcAlgo objects, with the
#    evaluator that ran the tests; and gpu_pc() against pc() on a few learned graphs (graph and
#    sepsets identical).
# Prints one line per measurement and (with --out) writes one CSV row each, rewritten as it goes.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/orient"
})
source(file.path(here, "..", "..", "lib", "lib.R"))

args <- commandArgs(trailingOnly = TRUE)
opt <- option_reader(args)
nums <- function(x) if (identical(x, "")) numeric(0) else as.numeric(strsplit(x, ",")[[1]])
quick <- "--quick" %in% args
out <- opt("out", NA)
backend <- opt("backend", "auto")
cap <- as.numeric(opt("cap", "75"))
reps <- as.integer(opt("reps", "3"))
alpha <- as.numeric(opt("alpha", "0.01"))
e2e_p <- nums(opt("e2e-p", if (quick) "300" else "1643,5361,10000"))
cons_p <- nums(opt("cons-p", if (quick) "100" else "500,1643"))
n_obs <- as.numeric(opt("n", "850"))
n_parity <- as.integer(opt("parity", if (quick) "10" else "100"))
warm_case <- opt("warm-case", "1") != "0"
helpers <- opt("helpers", file.path(here, "..", "..", "..", "tests", "testthat", "helper-orient.R"))

mi <- machine_info()
cat(sprintf("machine: %s | %s | %d cores | gpupc %s | pcalg %s\n", mi$gpu, mi$cpu, mi$cores, mi$gpupc, mi$pcalg))
record <- csv_recorder(out, mi)

cases <- c(lapply(e2e_p, function(p) list(p = p, variant = "relaxed", cons = FALSE, maj = FALSE)),
           unlist(lapply(cons_p, function(p) list(list(p = p, variant = "conservative", cons = TRUE, maj = FALSE),
                                                  list(p = p, variant = "maj.rule", cons = FALSE, maj = TRUE))),
                  recursive = FALSE))
names(cases) <- vapply(cases, function(k) paste(k$variant, k$p, sep = "-"), "")
data <- list()
for (p in unique(vapply(cases, `[[`, 0, "p"))) data[[as.character(p)]] <- gauss_data(p, n_obs, degree = 4, seed = 1)

# edge marks as (index, value) of the non-zero amat entries
marks <- function(g) { m <- as(g, "matrix"); w <- which(m != 0); list(w = w, v = m[w]) }

# --- 1. gpupc ------------------------------------------------------------------------------------
if (backend != "cpu") {
  d <- gauss_data(50, 200, degree = 2, seed = 2)
  invisible(try(gpu_skeleton(d$suff, gaussCItest, alpha, labels = d$labels, backend = backend), silent = TRUE))
}
fits <- list()
for (nm in names(cases)) {
  k <- cases[[nm]]
  d <- data[[as.character(k$p)]]
  # warm: one untimed run of the case itself first (the kernels of its deeper levels, the host
  # pools and the pinned copy buffers are made on first use; --warm-case 0: only the small
  # warm-up above)
  if (warm_case) invisible(gpu_pc(d$suff, gaussCItest, alpha, labels = d$labels, conservative = k$cons,
                                  maj.rule = k$maj, backend = backend))
  runs <- lapply(seq_len(reps), function(r) {
    g <- timed(gpu_pc(d$suff, gaussCItest, alpha, labels = d$labels, conservative = k$cons,
                      maj.rule = k$maj, backend = backend))
    lr <- gpupc_last_run()
    list(secs = g$secs, phases = lr$phases, backend = lr$backend,
         evaluator = if (is.null(lr$orient$stats$evaluator)) "" else lr$orient$stats$evaluator,
         fit = if (r == reps) g$value else NULL)
  })
  secs <- vapply(runs, `[[`, 0, "secs")
  med <- runs[[order(secs)[(reps + 1) %/% 2]]]
  fits[[nm]] <- marks(runs[[reps]]$fit@graph)
  ph <- med$phases
  cases[[nm]]$gpupc_s <- med$secs
  cases[[nm]]$row <- c(list(part = "gpupc", case = nm, p = k$p, n = n_obs, variant = k$variant,
                            backend = med$backend, evaluator = med$evaluator,
                            gpupc_s = med$secs, gpupc_min_s = min(secs), gpupc_max_s = max(secs),
                            gpupc_runs_s = paste(sprintf("%.3f", secs), collapse = " "),
                            r_gc_runs_s = paste(sprintf("%.3f", vapply(runs, function(r) if ("r_gc_s" %in% names(r$phases)) r$phases[["r_gc_s"]] else NA_real_, 0)), collapse = " ")),
                       as.list(ph))
  do.call(record, cases[[nm]]$row)
  rm(runs); invisible(gc())
}

# --- 2. pcalg, all cases at once in capped children -----------------------------------------------
handles <- lapply(cases, function(k) {
  d <- data[[as.character(k$p)]]
  capped_start(function(checkpoint) {
    r <- pc(d$suff, gaussCItest, alpha, labels = d$labels, skel.method = "stable.fast",
            conservative = k$cons, maj.rule = k$maj)
    marks(r@graph)
  })
})

# --- 3. parity of the triple checks on the backend, while pcalg runs ------------------------------
if (n_parity > 0 && file.exists(helpers)) {
  source(helpers)
  ref_backend <- if (backend == "cpu") "cpu" else "cuda"
  for (maj in c(FALSE, TRUE)) {
    rule <- if (maj) "majority" else "conservative"
    set.seed(if (maj) 25 else 24)
    same <- 0; evals <- character(0); t0 <- proc.time()[["elapsed"]]
    for (i in seq_len(n_parity)) {
      p <- if (i %% 20 == 0) sample(60:120, 1) else sample(5:12, 1)
      sk <- fake_skeleton_bounded(p, deg = sample(1:3, 1), max_deg = if (i %% 10 == 0) 5 else 3)
      ss <- random_suffstat(p)
      a <- sample(c(0.01, 0.05, 0.2, 0.5), 1)
      sc <- i %% 3 == 0
      o <- gpupc:::orient_pcalgo(sk, ss, gaussCItest, a, solve.confl = sc, rule = rule,
                                 backend = ref_backend, fallback = FALSE)
      pc. <- pc.cons.intern(sk, ss, gaussCItest, a, version.unf = c(2, 1), maj.rule = maj)
      want <- udag2pdagRelaxed(pc.$sk, unfVect = pc.$unfTripl, solve.confl = sc)
      same <- same + identical(o$pcalgo, want)
      evals <- c(evals, if (is.null(o$info)) "none" else o$info$stats$evaluator)
    }
    record(part = "parity", case = paste0("random-", rule), cases = n_parity, identical = same,
           evaluator = paste(unique(sub(" \\(.*", "", evals)), collapse = "/"),
           secs = proc.time()[["elapsed"]] - t0)
  }
  set.seed(27)
  same <- 0; t0 <- proc.time()[["elapsed"]]; nl <- 0
  for (i in 1:6) {
    p <- sample(15:40, 1)
    dag <- randomDAG(p, prob = 3 / p)
    X <- rmvDAG(sample(c(200, 1000), 1), dag)
    ss <- list(C = cor(X), n = nrow(X))
    for (maj in c(FALSE, TRUE)) {
      a <- list(suffStat = ss, indepTest = gaussCItest, alpha = 0.05, labels = paste0("V", seq_len(p)),
                conservative = !maj, maj.rule = maj)
      want <- do.call(pc, a)
      got <- do.call(gpu_pc, c(a, backend = backend))
      nl <- nl + 1
      same <- same + (identical(got@graph, want@graph) && identical(got@sepset, want@sepset))
    }
  }
  record(part = "parity", case = "learned-gpu_pc", cases = nl, identical = same,
         evaluator = gpupc_last_run()$orient$stats$evaluator, secs = proc.time()[["elapsed"]] - t0)
}

results <- list()
while (length(handles)) {
  got <- capped_poll(handles, cap, wait = 1)
  for (nm in names(got)) results[[nm]] <- got[[nm]]
  handles <- handles[setdiff(names(handles), names(got))]
}
for (nm in names(cases)) {
  k <- cases[[nm]]; r <- results[[nm]]
  ok <- r$status == "ok"
  record(part = "pcalg", case = nm, p = k$p, variant = k$variant, pcalg_s = if (ok) r$secs else NA_real_,
         pcalg_status = r$status, gpupc_s = k$gpupc_s,
         speedup = if (ok) r$secs / k$gpupc_s else NA_real_, speedup_at_least = cap / k$gpupc_s,
         same_amat = if (ok) identical(r$value, fits[[nm]]) else NA)
}

cat("\nsummary (seconds; pcalg capped at", cap, "s, gpupc the median of", reps, "runs):\n")
for (nm in names(cases)) {
  k <- cases[[nm]]; r <- results[[nm]]
  cat(sprintf("  %-18s gpupc %.4f  pcalg %s  ratio %s\n", nm, k$gpupc_s,
              if (r$status == "ok") sprintf("%.2f", r$secs) else sprintf("> %g (%s)", cap, r$status),
              if (r$status == "ok") sprintf("%.0fx", r$secs / k$gpupc_s) else sprintf("> %.0fx", cap / k$gpupc_s)))
}
