## One search over the ranks of an MPI job against the same call in one process, through R.
##
##   Rscript mpi-bench.R single KIND OUT.rds [--devices first|default|K] [options]
##   mpirun -np K Rscript mpi-bench.R rank KIND OUT.rds [options]
##   Rscript mpi-bench.R table DIR
##   mpirun -np 1 Rscript mpi-bench.R overhead KIND [--reps R] [options]
##
## KIND: cmiknn (cmiknnCItest on non-linear data: --p 100 --n 2000 --knn 0.1 --perm 50) or gauss
## (gaussCItest on C read from --cor FILE, p x p doubles as multigpu-cor.py writes them, with --p
## and --n; or, without --cor, a random linear SEM of --p variables, --n rows, expected degree 4).
## --m-max limits the levels; --backend cpu runs it without a GPU. Every rank builds the same data
## from the same seed.
## single: one process, on the first GPU (--devices first, the reference), the first K GPUs
## (--devices K) or the default devices.
## rank: the same call with cluster = "mpi"; every rank is warmed on a small call first (its
## context and kernels), the ranks meet at a barrier, and rank 0 saves the result and its time.
## overhead: one rank's MPI path against the plain call, alternately in one process (medians).
## table: every OUT.rds of DIR, one row each, timed against the first GPU's run and compared with
## it slot by slot (pMax bit for bit: every rank's tests run on the same kind of GPU). Above
## p = 5000 a run keeps its slots' digests, not the object (a p = 55,572 pMax is 24.7 GB, whose
## saving and reading would take minutes), and the table compares those.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "lib", "lib.R"))
options(cli.progress_show_after = Inf)
args <- commandArgs(TRUE)
mode <- args[1]
opt <- option_reader(args)
`%||%` <- function(a, b) if (is.null(a)) b else a

if (mode == "table") {
  dir <- args[2]
  rr <- read_runs(dir, "^single-first")
  runs <- rr$runs; ref_name <- rr$ref_name; ref <- rr$ref
  same <- function(a, b) {
    differ <- names(a$digests)[a$digests != b$digests]
    if (length(differ)) return(paste(paste(differ, collapse = ", "), "differ"))
    if (is.null(a$fit) || is.null(b$fit)) return("identical (slot digests)")
    if (!identical(as(a$fit@graph, "matrix"), as(b$fit@graph, "matrix"))) return("graph differs")
    if (!identical(a$fit@sepset, b$fit@sepset)) return("sepset differs")
    if (!identical(a$fit@pMax, b$fit@pMax)) return("pMax differs")
    if (!identical(a$fit@n.edgetests, b$fit@n.edgetests)) return("n.edgetests differs")
    if (!identical(a$fit@max.ord, b$fit@max.ord)) return("max.ord differs")
    "identical"
  }
  ord <- order(vapply(runs, function(r) r$order, 0))
  for (nm in names(runs)[ord]) {
    r <- runs[[nm]]
    verdict <- if (nm == ref_name) "reference" else same(r, ref)
    ex <- if (is.null(r$ranks)) "" else sprintf(", exchanged %.1f MB in %.3f s over %d levels, input check %.3f s, levels 0-1 check %.3f s",
                                                sum(r$ranks$levels$bytes_received) / 1e6, r$ranks$allgather_s,
                                                nrow(r$ranks$levels), r$ranks$check_s, r$ranks$dense_check_s %||% NA)
    cat(sprintf("%s | %s | %.3f s | %.2fx | %s | edges %d, max.ord %d, tests %.0f | %s%s\n", r$label, r$how,
                r$seconds, ref$seconds / r$seconds, verdict, r$edges, r$max.ord, r$tests,
                paste(sprintf("%s %.3f", names(r$phases), r$phases), collapse = ", "), ex))
    if (length(r$engine)) cat(sprintf("    engine (rank 0's, where ranks): %s\n", paste(sprintf("%s %.3f", names(r$engine), r$engine), collapse = ", ")))
    # the level loop's own figures (a rank's too: its level holds the exchanges, the rank's share
    # and the level's planning and bookkeeping, which every rank does whole)
    if (length(r$levels) && nrow(r$levels))
      cat(sprintf("    level %d: %.3f s (plan %.3f s, backend %.3f s), %.0f tests\n", r$levels$level, r$levels$seconds,
                  r$levels$plan_seconds %||% NA, r$levels$backend_seconds %||% NA, r$levels$tests), sep = "")
    if (!is.null(r$ranks))
      with(r$ranks$levels, cat(sprintf("    level %d: %.0f edges, rank 0's %.0f in %.3f s (of which ready %.3f s; ranks %.3f-%.3f s); split by %s, %.0f exchange(s); sent %.2f MB, received %.2f MB in %.3f s; outcomes %.3f s; rank 0 took %.0f slice(s) from others\n",
                                     level, edges, local_edges, local_s, prepare_s %||% NA, fastest_s, slowest_s, split %||% "edges",
                                     exchanges %||% 1, bytes_sent / 1e6, bytes_received / 1e6, allgather_s, finish_s %||% NA,
                                     slices_taken %||% 0), sep = ""))
  }
  quit(status = 0)
}

kind <- args[2]
out <- if (length(args) >= 3 && !startsWith(args[3], "--")) args[3] else NA
mm <- as.numeric(opt("m-max", Inf))
if (kind == "cmiknn") {
  p <- as.integer(opt("p", 100)); n <- as.integer(opt("n", 2000))
  z <- sine_dag_data(p, n)
  st <- list(data = z, knn = as.numeric(opt("knn", 0.1)), sig_samples = as.integer(opt("perm", 50)))
  test <- cmiknnCItest; alpha <- 0.05
  small <- list(data = z[1:300, 1:6], knn = 0.1, sig_samples = 20)
  label <- sprintf("cmiknn p=%d n=%d knn=%g perms=%d m.max=%g", p, n, st$knn, st$sig_samples, mm)
} else if (kind == "gauss") {
  p <- as.integer(opt("p", 5000)); n <- as.numeric(opt("n", 1000))
  cor_file <- opt("cor", "")
  if (nzchar(cor_file)) {
    con <- file(cor_file, "rb")
    C <- matrix(0, p, p)
    for (j in split(seq_len(p), ceiling(seq_len(p) / 4096))) C[, j] <- readBin(con, "double", p * length(j))
    close(con)
  } else {
    # made once per folder of results (not .rds: the table reads those as runs) and read by the
    # later runs (every rank made its own: at p = 5000, n = 1000 rmvDAG and cor() take one core
    # about two minutes)
    cache <- if (!is.na(out)) file.path(dirname(out), sprintf("gauss-data-p%d-n%g.data", p, n)) else ""
    if (nzchar(cache) && file.exists(cache)) {
      C <- readRDS(cache)
    } else {
      set.seed(3)
      C <- cor(rmvDAG(n, randomDAG(p, prob = 4 / (p - 1))))
      if (nzchar(cache) && mode == "single") {
        tmp <- paste0(cache, ".", Sys.getpid())
        saveRDS(C, tmp, compress = FALSE)
        file.rename(tmp, cache)
      }
    }
  }
  st <- list(C = C, n = n)
  test <- gaussCItest; alpha <- 0.01
  small <- list(C = C[1:500, 1:500], n = n)
  label <- sprintf("gauss p=%d n=%g m.max=%g", p, n, mm)
} else stop("unknown kind ", kind)
backend <- opt("backend", "cuda")
## The engine's own figures as gpupc_last_run()$details has them (a GPU's kernel, transfer and
## host seconds: for CMI-kNN the host's are the permutations' neighbour searches).
# how the CMI-kNN engine ran, where a comparison changed it from its default
cmiknn_variant <- function() {
  paste0(if (identical(Sys.getenv("GPUPC_CMIKNN_OVERLAP"), "0")) ", CMI-kNN rounds one at a time" else "",
         if (identical(Sys.getenv("GPUPC_CMIKNN_FEED"), "0")) ", devices dealt blocks of edges" else "")
}

engine <- function(lr) {
  d <- lr$details
  unlist(d[intersect(c("kernel_s", "transfer_s", "host_s", "launches", "gpu_tests"), names(d))])
}

## What a run keeps of its result: the slots' digests, its size, and the object itself up to
## p = 5000.
kept <- function(fit) {
  g <- fit@graph
  d <- c(graph = gpupc:::rs_input_digest(list(graph::nodes(g), g@edgeL)),
         sepset = gpupc:::rs_input_digest(fit@sepset), pMax = gpupc:::rs_input_digest(fit@pMax),
         n.edgetests = gpupc:::rs_input_digest(fit@n.edgetests), max.ord = gpupc:::rs_input_digest(fit@max.ord))
  list(digests = d, edges = sum(lengths(lapply(g@edgeL, `[[`, "edges"))) / 2, max.ord = fit@max.ord,
       tests = sum(fit@n.edgetests), fit = if (length(graph::nodes(g)) <= 5000) fit)
}
call <- function(s, pp, m, ...) gpu_skeleton(s, test, alpha, p = pp, m.max = m, backend = backend, ...)

if (mode == "single") {
  # --devices: first (the reference), default (devices = NULL), or K, the first K GPUs
  want <- opt("devices", "first")
  gpus <- if (backend == "cuda") gpu_info()$devices$device
  dev <- if (identical(want, "first")) gpus[1] else if (identical(want, "default")) NULL else gpus[seq_len(as.integer(want))]
  invisible(call(small, ncol(if (is.null(small$C)) small$data else small$C), 1, devices = dev))
  gc()
  secs <- system.time(fit <- call(st, p, mm, devices = dev))[["elapsed"]]
  lr <- gpupc_last_run()
  how <- sprintf("one process, %s (GPU %s)", if (is.null(dev)) "default devices" else if (length(dev) == 1) "first GPU"
                 else sprintf("%d GPUs", length(dev)), paste(lr$devices, collapse = ","))
  bpd <- Sys.getenv("GPUPC_BLOCKS_PER_DEVICE")
  if (nzchar(bpd)) how <- sprintf("%s, %s blocks per device", how, bpd)
  pool <- Sys.getenv("GPUPC_CMIKNN_POOL")
  if (nzchar(pool)) how <- sprintf("%s, CMI-kNN host pool %s", how, pool)
  how <- paste0(how, cmiknn_variant())
  saveRDS(c(list(label = label, how = how, seconds = secs, phases = unlist(lr$phases), engine = engine(lr),
                 levels = lr$levels, order = if (is.null(dev)) 2 + as.numeric(paste0("0", bpd)) / 100
                 else 1 + (length(dev) - 1) / 10 + nzchar(pool) / 100),
            kept(fit)), out, compress = FALSE)
  cat(sprintf("%s | %s | %.3f s\n", label, how, secs))
} else if (mode == "rank") {
  mpi <- function(f) getExportedValue("Rmpi", f)
  rank <- mpi("mpi.comm.rank")(0L); size <- mpi("mpi.comm.size")(0L)
  invisible(call(small, ncol(if (is.null(small$C)) small$data else small$C), 1, cluster = "mpi"))
  gc()
  mpi("mpi.barrier")(0L)
  secs <- system.time(fit <- call(st, p, mm, cluster = "mpi"))[["elapsed"]]
  lr <- gpupc_last_run()
  if (rank == 0) {
    how <- sprintf("%d MPI rank(s), one GPU each (rank 0 on GPU %s)%s%s%s", size, paste(lr$devices, collapse = ","),
                   if (any(lr$ranks$levels$split == "rows")) ", levels >= 2 split by rows" else "",
                   switch(Sys.getenv("GPUPC_RANK_MOVE"), "0" = ", slices kept where dealt", "1" = ", slices moving on every backend", ""),
                   cmiknn_variant())
    saveRDS(c(list(label = label, how = how, seconds = secs, phases = unlist(lr$phases), engine = engine(lr),
                   levels = lr$levels, ranks = lr$ranks, order = 2 + size), kept(fit)), out, compress = FALSE)
    cat(sprintf("%s | %s | %.3f s\n", label, how, secs))
  }
  invisible(mpi("mpi.finalize")())
} else if (mode == "overhead") {
  # one rank (mpirun -np 1): the plain call and the MPI path alternately in this one process, so
  # that the data, the process and the machine's drift are the same for both
  reps <- as.integer(opt("reps", 10))
  invisible(call(small, ncol(if (is.null(small$C)) small$data else small$C), 1, cluster = "mpi"))
  secs <- search <- matrix(NA_real_, reps, 2, dimnames = list(NULL, c("plain", "mpi")))
  for (r in seq_len(reps)) for (k in if (r %% 2) 1:2 else 2:1) {
    fit <- NULL
    gc()
    secs[r, k] <- system.time(fit <- call(st, p, mm, cluster = if (k == 2) "mpi"))[["elapsed"]]
    search[r, k] <- gpupc_last_run()$phases[["search_s"]]
    if (k == 2) ex <- gpupc_last_run()$ranks$allgather_s
  }
  med <- apply(secs, 2, stats::median)
  # each run's two calls ran back to back, so their ratio cancels the machine's drift between runs
  ratio <- stats::median(secs[, 2] / secs[, 1])
  cat(sprintf("%s | one rank against the plain call, %d runs each, alternating | plain median %.3f s, MPI path median %.3f s (%+.1f%%); median of the runs' ratios %+.1f%% | exchanges %.4f s a call\n",
              label, reps, med[1], med[2], 100 * (med[2] / med[1] - 1), 100 * (ratio - 1), ex))
  cat(sprintf("    run %d: plain %.3f s (search %.3f s), MPI path %.3f s (search %.3f s)\n", seq_len(reps),
              secs[, 1], search[, 1], secs[, 2], search[, 2]), sep = "")
  invisible(getExportedValue("Rmpi", "mpi.finalize")())
} else stop("unknown mode ", mode)
