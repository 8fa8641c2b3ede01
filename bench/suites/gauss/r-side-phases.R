# Where a call's time goes outside the search: gpu_pc() end to end at --p and gpu_skeleton() at
# --big-p, repeated in one R process, with every phase of gpupc_last_run()$phases and the time R's
# garbage collector ran during each call (gc.time(), switched on for the run).
#
#   Rscript bench/suites/gauss/r-side-phases.R [--backend cpu|cuda] [--p 1643] [--n 850]
#       [--big-p 5000] [--big-n 1000] [--reps 7] [--threads 0] [--data-dir /tmp]
#       [--rows-p 5000] [--libs LIB_A,LIB_B --rounds 3] [--save FILE.rds] [--method stable]
#       [--details]
#
# With --libs, the script runs itself once per library per round, alternating (A, B, A, B, ...),
# each child with R_LIBS set to that library: same machine, same data, same calls; it then prints
# the medians of every phase per library and whether each call's result is identical() to the
# first library's in every slot. Without --libs, one process runs the calls with the gpupc found
# on R_LIBS (--save keeps its timings and results for the parent). --rows-p sets
# options(gpupc.sepset_rows_p): 0 gives the compact sepset rows at any p, Inf pcalg's list of
# lists (the default, 5000, the list up to p = 5000). With --backend cuda the same calls run on
# the GPU (the first of each kind also opens the device and compiles or loads the kernels).
# --method is the skeleton order of both calls; --details prints, after each case, its last call's
# levels (tests, seconds) and the backend's figures (gpupc_last_run()$details: kernel, transfer
# and host seconds).
#
# Data: pcalg's randomDAG of expected degree 4 (seed 1) with rmvDAG's Gaussian SEM
# (bench/lib/lib.R's gauss_data(); n p^2 above 3e9 uses its sparse generator), kept under
# --data-dir so that every child reads the same C. The first call of each kind is a warm-up (for
# the GPU: the device and the kernels) and is not reported.
args <- commandArgs(trailingOnly = TRUE)
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/gauss"
})
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
backend <- opt("backend", "cpu")
p <- as.integer(opt("p", "1643")); n <- as.integer(opt("n", "850"))
big_p <- as.integer(opt("big-p", "5000")); big_n <- as.integer(opt("big-n", "1000"))
reps <- as.integer(opt("reps", "7")); threads <- as.integer(opt("threads", "0"))
data_dir <- opt("data-dir", tempdir())
rows_p <- as.numeric(opt("rows-p", "5000"))
method <- opt("method", "stable"); details <- "--details" %in% args
libs <- opt("libs", NA); rounds <- as.integer(opt("rounds", "3")); save <- opt("save", NA)

data_file <- function(p, n) file.path(data_dir, sprintf("gpupc-r-side-gauss-p%d-n%d.rds", p, n))
cases <- function() {
  list(list(name = "gpu_pc", p = p, n = n), if (big_p > 0) list(name = "gpu_skeleton", p = big_p, n = big_n))
}

if (!is.na(libs)) {
  # the parent: data once, then the children alternately
  libs <- strsplit(libs, ",")[[1]]
  for (cs in Filter(Negate(is.null), cases())) {
    f <- data_file(cs$p, cs$n)
    if (!file.exists(f)) {
      # lib.R loads gpupc: the first build's
      .libPaths(c(libs[1], .libPaths()))
      if (!exists("gauss_data")) source(file.path(here, "..", "..", "lib", "lib.R"))
      d <- gauss_data(cs$p, cs$n)
      saveRDS(list(C = d$suff$C, n = cs$n), f, compress = FALSE)
    }
  }
  rscript <- file.path(R.home("bin"), "Rscript")
  drop <- unlist(lapply(c("--libs", "--rounds", "--save", "--data-dir"), function(o) match(o, args) + 0:1))
  pass <- if (all(is.na(drop))) args else args[-drop[!is.na(drop)]]
  runs <- list()
  for (r in seq_len(rounds)) for (k in seq_along(libs)) {
    out <- tempfile(fileext = ".rds")
    st <- system2(rscript, c(file.path(here, "r-side-phases.R"), pass, "--data-dir", data_dir, "--save", out),
                  env = paste0("R_LIBS=", libs[k]))
    if (st != 0) stop("the child for ", libs[k], " failed")
    runs[[length(runs) + 1]] <- c(readRDS(out), list(lib = libs[k], round = r))
    unlink(out)
  }
  # every phase's median per library and case (a phase a build lacks is NA)
  for (cs in unique(unlist(lapply(runs, function(x) names(x$times))))) {
    cat(sprintf("\n== %s: medians over %d rounds x %d calls\n", cs, rounds, reps))
    tab <- lapply(libs, function(l) {
      rows <- do.call(rbind, lapply(Filter(function(x) x$lib == l, runs), function(x) x$times[[cs]]))
      rows
    })
    cols <- unique(unlist(lapply(tab, colnames)))
    med <- sapply(tab, function(t) sapply(cols, function(c) if (c %in% colnames(t)) stats::median(t[, c]) else NA))
    colnames(med) <- basename(libs)
    print(round(med, 4))
    ref <- Filter(function(x) x$lib == libs[1], runs)[[1]]$results[[cs]]
    same <- vapply(runs, function(x) identical(x$results[[cs]], ref), NA)
    cat(sprintf("identical() to %s's first result: %d of %d processes\n", basename(libs[1]), sum(same), length(same)))
  }
  quit(save = "no")
}

# one process: the calls with the gpupc on R_LIBS
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
if (threads == 0) threads <- NULL
invisible(gc.time(TRUE))
options(cli.progress_show_after = Inf, gpupc.sepset_rows_p = rows_p)
cat(sprintf("gpupc %s, backend %s\n", packageVersion("gpupc"), backend))
times <- list()
results <- list()
for (cs in Filter(Negate(is.null), cases())) {
  f <- data_file(cs$p, cs$n)
  if (!file.exists(f)) {
    source(file.path(here, "..", "..", "lib", "lib.R"))
    d <- gauss_data(cs$p, cs$n)
    saveRDS(list(C = d$suff$C, n = cs$n), f, compress = FALSE)
  }
  suff <- readRDS(f)
  call <- if (cs$name == "gpu_pc") {
    function() gpu_pc(suff, gaussCItest, 0.01, p = cs$p, backend = backend, numCores = threads, skel.method = method)
  } else {
    function() gpu_skeleton(suff, gaussCItest, 0.01, p = cs$p, backend = backend, numCores = threads, method = method)
  }
  fit <- call()  # warm-up
  rows <- NULL
  for (r in seq_len(reps)) {
    g0 <- gc.time()[3]
    t <- system.time(fit <- call(), gcFirst = FALSE)[["elapsed"]]
    g <- gc.time()[3] - g0
    ph <- gpupc_last_run()$phases
    # r_gc_s (where a build reports it) is time inside the other phases
    row <- c(total_s = t, gc_s = g, ph, other_s = t - sum(ph[names(ph) != "r_gc_s"]))
    rows <- rbind(rows, row)
    cat(sprintf("%s p = %d call %d: %s\n", cs$name, cs$p, r,
                paste(sprintf("%s %.4f", names(row), row), collapse = ", ")))
  }
  # what one collection of every generation costs in this process, the result alive: the
  # yardstick of gc_s
  full <- stats::median(replicate(3, system.time(gc(), gcFirst = FALSE)[["elapsed"]]))
  cat(sprintf("%s p = %d: gc() takes %.4f s here\n", cs$name, cs$p, full))
  if (details) {
    lr <- gpupc_last_run()
    lv <- as.data.frame(lr$levels)
    cat(sprintf("%s p = %d, %s, its last call's levels:\n", cs$name, cs$p, method))
    print(lv[, intersect(c("level", "edges", "tests", "removed", "seconds", "plan_seconds", "backend_seconds"), names(lv))], row.names = FALSE)
    if (!is.null(lr$orient$phases))
      cat(sprintf("%s p = %d orientation: %s\n", cs$name, cs$p, paste(sprintf("%s %.4f", names(lr$orient$phases), lr$orient$phases), collapse = ", ")))
    num <- Filter(function(v) is.numeric(v) && length(v) == 1, lr$details)
    cat(sprintf("%s p = %d details: %s\n", cs$name, cs$p, paste(sprintf("%s %.4g", names(num), unlist(num)), collapse = ", ")))
  }
  times[[cs$name]] <- cbind(rows, full_gc_s = full)
  results[[cs$name]] <- fit
  rm(fit)
}
for (cs in names(times)) {
  cat(sprintf("%s medians: %s\n", cs, paste(sprintf("%s %.4f", colnames(times[[cs]]),
                                                    apply(times[[cs]], 2, stats::median)), collapse = ", ")))
}
if (!is.na(save)) saveRDS(list(times = times, results = results), save)
