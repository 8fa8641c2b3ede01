# gpupc beside pcalg, bnlearn and ParallelPC on the same data, one CSV row per tool and data set:
# the comparison tables of the gauss, discrete and sweeps suites (bench/run runs it by parts).
#
#   Rscript bench/baselines/compare.R --out results.csv [--suite gauss,discrete] [--tools LIST]
#                            [--cap 600] [--quick] [--parallel-baselines K] [--only REGEX]
#                            [--e2e-max-p P] [--resume] [--alpha 0.01] [--note TEXT]
#
# Data sets (--suite, comma-separated):
#   gauss             pcalg randomDAG (expected degree 4) + rmvDAG, shaped like the seed papers' data:
#                     p/n = 1190/47 (NCI-60), 1643/850 (DREAM5), 5361/63 (S. cerevisiae), 10000/1000
#   discrete          bnlearn-repository networks (inst/extdata/networks): ALARM n = 10000 and 200000,
#                     ANDES, LINK, MUNIN n = 20000 (the gpuPC paper's), disCItest / bnlearn "mi"
#   sweep-p           Gaussian, n = 1000, p = 100 ... 20000
#   sweep-n           Gaussian, p = 1000, n = 50 ... 20000
#   discrete-sweep-n  ALARM, n = 10^4 ... 10^6
#   cpu               the CPU backend against pcalg (Gaussian p = 100/500/1000, ALARM, LINK;
#                     by default only gpupc-cpu and pcalg)
# Tools (--tools, comma-separated; default all):
#   gpupc-gpu              gpu_skeleton(backend = "cuda"): a warm-up call first (its own row, suite
#                          "warm-up"), then per data set the skeleton, kernel and NVRTC seconds
#   gpupc-cpu              gpu_skeleton(backend = "cpu"), every core
#   gpupc-cpu-stable.fast  gpu_skeleton(method = "stable.fast", backend = "cpu"): pcalg's C++ order,
#                          compared with pcalg-stable.fast (skeleton only, no orientation)
#   pcalg-stable           pcalg::skeleton(method = "stable"), then udag2pdagRelaxed (what pc() runs)
#   pcalg-stable.fast      the same with method = "stable.fast" (C++, one core on Linux)
#   bnlearn                bnlearn::pc.stable(test = "mi" | "cor", cluster = makeCluster(all cores))
#   parallelpc             ParallelPC's pc_parallel steps: skeleton_parallel(method = "parallel",
#                          num_workers = all cores, mem.efficient = FALSE) + udag2pdagRelaxed
# Every baseline runs in a forked child under --cap seconds (default 600); gpupc runs in this process
# (a CUDA context cannot cross a fork) under R's elapsed-time limit, which it answers like Ctrl-C.
# A capped run is a row with NA seconds and status "> CAP s"; a tool that is not installed, has no
# GPU or fails is a row with that status. In the sweeps, a tool capped at one size is not run at the
# larger sizes ("skipped ...").
#
# --parallel-baselines K  runs the single-threaded pcalg baselines as up to K processes at once,
#                         after every multi-core tool has finished (those always run alone); their
#                         rows say so in `note`. Default 1: each right after its data set's other tools.
# --only REGEX            only data sets whose "DATA p=P n=N" matches (to split a run)
# --e2e-max-p P           orient (end to end) only up to p = P (pcalg's R orientation: ~1 min at
#                         p = 5361); default no limit
# --resume                keep the rows already in --out and skip data set/tool pairs found there
# --quick                 tiny sizes (a minute or two on 2 cores) to try the script
#
# Skeleton seconds are those of the skeleton call. End to end: for pcalg, the skeleton plus
# pcalg::udag2pdagRelaxed() on it (pc() runs exactly these two steps with its default arguments);
# for gpupc, a gpu_pc() call of its own with the same arguments, whose orientation (in Rust) is
# `orientation_s` (its phase orient_s). Each row
# keeps fingerprints (md5) of the skeleton and the sepsets; agreement with pcalg (same_skeleton,
# same_sepsets, reference) is worked out from them by agreement.R, also across files (merge.R, when bench/run collects a suite).
# The CSV is rewritten after every row: a run that is killed keeps what it measured.
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) {
  i <- match(paste0("--", name), args)
  if (is.na(i)) default else args[i + 1]
}
flag <- function(name) paste0("--", name) %in% args
all_tools <- c("gpupc-gpu", "gpupc-cpu", "gpupc-cpu-stable.fast", "pcalg-stable", "pcalg-stable.fast",
               "bnlearn", "parallelpc")
suites <- strsplit(opt("suite", "gauss,discrete"), ",")[[1]]
tools_opt <- opt("tools", NA)
tools <- if (is.na(tools_opt)) all_tools else strsplit(tools_opt, ",")[[1]]
bad <- setdiff(tools, all_tools)
if (length(bad)) stop("unknown tool(s): ", paste(bad, collapse = ", "), "; known: ", paste(all_tools, collapse = ", "))
bad <- setdiff(suites, c("gauss", "discrete", "sweep-p", "sweep-n", "discrete-sweep-n", "cpu"))
if (length(bad)) stop("unknown suite(s): ", paste(bad, collapse = ", "))
out <- opt("out", "bench-results.csv")
cap <- as.numeric(opt("cap", "600"))
alpha <- as.numeric(opt("alpha", "0.01"))
quick <- flag("quick")
K <- max(1L, as.integer(opt("parallel-baselines", "1")))
only <- opt("only", NA)
e2e_max_p <- as.numeric(opt("e2e-max-p", "Inf"))
resume <- flag("resume")
run_note <- opt("note", "")
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "lib", "lib.R"))
source(file.path(here, "..", "lib", "agreement.R"))

machine <- machine_info()
cores <- parallel::detectCores()
have <- function(p) requireNamespace(p, quietly = TRUE)
gi <- gpu_info()
cat(sprintf("machine: %s; %s, %d cores; R %s; gpupc %s, pcalg %s, bnlearn %s, ParallelPC %s\n",
            machine$gpu, machine$cpu, machine$cores, machine$r, machine$gpupc, machine$pcalg,
            machine$bnlearn, machine$ParallelPC))
cat(sprintf("suites %s; tools %s; cap %g s; parallel baselines %d%s\n", paste(suites, collapse = ","),
            paste(tools, collapse = ","), cap, K, if (quick) "; QUICK sizes" else ""))

# ------------------------------------------------------------------------------------------------
# The data sets

gauss_case <- function(suite, data, p, n, seed = p)
  list(suite = suite, data = data, p = as.integer(p), n = as.integer(n), kind = "gauss",
       id = gauss_id(p, n, 4, seed), make = function() gauss_data(p, n, degree = 4, seed = seed))
net_case <- function(suite, net, n, p, seed = 1)
  list(suite = suite, data = toupper(net), p = as.integer(p), n = as.integer(n), kind = "discrete",
       id = network_id(net, n, seed), net = net, make = function() network_data(net, n, seed = seed))
net_p <- c(alarm = 37L, andes = 223L, link = 724L, munin = 1041L, insurance = 27L)

cases <- list()
add_cases <- function(l) cases <<- c(cases, l)
for (s in suites) {
  if (s == "gauss") {
    sh <- data.frame(data = c("NCI-60-like", "DREAM5-like", "S.cerevisiae-like", "p10000"),
                     p = c(1190, 1643, 5361, 10000), n = c(47, 850, 63, 1000))
    if (quick) sh$p <- pmax(20, round(sh$p * 0.03))
    add_cases(lapply(seq_len(nrow(sh)), function(k) gauss_case(s, sh$data[k], sh$p[k], sh$n[k])))
  } else if (s == "discrete") {
    nets <- if (quick) data.frame(net = c("alarm", "insurance"), n = c(2000, 2000)) else
      data.frame(net = c("alarm", "alarm", "andes", "link", "munin"), n = c(10000, 200000, 20000, 20000, 20000))
    add_cases(lapply(seq_len(nrow(nets)), function(k) net_case(s, nets$net[k], nets$n[k], net_p[[nets$net[k]]])))
  } else if (s == "sweep-p") {
    ps <- if (quick) c(50, 100, 200) else c(100, 200, 500, 1000, 2000, 5000, 10000, 20000)
    n <- if (quick) 500 else 1000
    add_cases(lapply(ps, function(p) gauss_case(s, "gauss degree 4", p, n)))
  } else if (s == "sweep-n") {
    p <- if (quick) 100 else 1000
    ns <- if (quick) c(100, 1000, 10000) else c(50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000)
    add_cases(lapply(ns, function(n) gauss_case(s, "gauss degree 4", p, n, seed = p)))
  } else if (s == "discrete-sweep-n") {
    ns <- if (quick) c(1000, 3000, 10000) else c(1e4, 3e4, 1e5, 3e5, 1e6)
    add_cases(lapply(ns, function(n) net_case(s, "alarm", n, net_p[["alarm"]])))
  } else if (s == "cpu") {
    ps <- if (quick) 100 else c(100, 500, 1000)
    add_cases(lapply(ps, function(p) gauss_case(s, sprintf("gauss p=%d", p), p, 1000)))
    nets <- if (quick) "alarm" else c("alarm", "link")
    add_cases(lapply(nets, function(net) net_case(s, net, if (quick) 2000 else 20000, net_p[[net]])))
  }
}
if (!is.na(only)) cases <- Filter(function(cs) grepl(only, sprintf("%s p=%d n=%d", cs$data, cs$p, cs$n)), cases)
case_tools <- function(cs) {
  tl <- tools
  if (cs$suite == "cpu" && is.na(tools_opt)) tl <- c("gpupc-cpu", "gpupc-cpu-stable.fast", "pcalg-stable", "pcalg-stable.fast")
  tl
}
is_sweep <- function(cs) grepl("sweep", cs$suite)
sweep_size <- function(cs) if (grepl("sweep-p", cs$suite)) cs$p else cs$n

# ------------------------------------------------------------------------------------------------
# Rows

cols <- c("suite", "data", "p", "n", "tool", "label", "settings", "status", "skeleton_s",
          "orientation_s", "end_to_end_s", "e2e_status", "levels", "edges", "tests", "reference",
          "same_skeleton", "same_sepsets", "shd", "f1", "warmup_s", "kernel_s", "nvrtc_compile_s",
          "upload_s", "transfer_s", "level_seconds", "phases", "note", "cap_s", "data_id", "skel_md5", "sep_md5",
          "started")
rows <- list()
if (resume && file.exists(out)) {
  old <- read.csv(out, stringsAsFactors = FALSE, check.names = FALSE)
  rows <- split(old, seq_len(nrow(old)))
  cat(sprintf("resuming: %d rows already in %s\n", nrow(old), out))
}
done_before <- function(cs, tool) {
  any(vapply(rows, function(r) identical(r$data_id, cs$id) && identical(r$tool, tool) &&
               !startsWith(as.character(r$status), "error"), NA))
}
cap_label <- sprintf("> %s s", format(cap))
write_rows <- function() {
  all_cols <- unique(c(cols, names(machine), unlist(lapply(rows, names))))
  res <- do.call(rbind, lapply(rows, function(r) {
    miss <- setdiff(all_cols, names(r))
    if (length(miss)) r[miss] <- NA
    r[all_cols]
  }))
  res <- bench_agreement(res)
  tmp <- paste0(out, ".tmp")
  write.csv(res, tmp, row.names = FALSE)
  file.rename(tmp, out)
  invisible(res)
}
new_row <- function(cs, tool, ...) {
  r <- list(suite = cs$suite, data = cs$data, p = cs$p, n = cs$n, tool = tool, cap_s = cap,
            data_id = cs$id, started = format(Sys.time(), "%Y-%m-%d %H:%M:%S"), note = run_note)
  r <- utils::modifyList(r, list(...))
  r <- r[!vapply(r, is.null, NA)]
  as.data.frame(c(r, machine), stringsAsFactors = FALSE)
}
show_row <- function(r) {
  f <- function(x) if (is.null(x) || is.na(x)) "-" else sprintf("%.3f", as.numeric(x))
  cat(sprintf("  %-17s %-18s p=%-6d n=%-8d %-22s %-14s skeleton %9s  end to end %9s  edges %s\n",
              r$suite, substr(r$data, 1, 18), as.integer(r$p), as.integer(r$n), r$tool,
              substr(r$status, 1, 14), f(r$skeleton_s), f(r$end_to_end_s), if (is.null(r$edges)) "-" else r$edges))
}
add_row <- function(r) {
  rows[[length(rows) + 1]] <<- r
  show_row(r)
  write_rows()
}
rec_cols <- function(rec) {
  if (is.null(rec)) return(list())
  rec[c("levels", "edges", "tests", "skel_md5", "sep_md5", "shd", "f1")]
}

# ------------------------------------------------------------------------------------------------
# Warm-ups: pcalg's and gpupc's first calls in this process (forked children inherit them); the GPU's
# first call (CUDA context, NVRTC, module load) is measured and reported as its own row.

invisible(capture.output({
  wd <- gauss_data(12, 200, seed = 1)
  for (m in c("stable", "stable.fast")) pcalg::udag2pdagRelaxed(skeleton(wd$suff, gaussCItest, 0.01, p = 12, method = m))
  dd <- list(dm = matrix(sample(0:1, 400, TRUE), 100), nlev = rep(2L, 4), adaptDF = FALSE)
  skeleton(dd, disCItest, 0.01, p = 4)
  gpu_skeleton(wd$suff, gaussCItest, 0.01, p = 12, backend = "cpu")
}))
gpu_ok <- isTRUE(gi$usable)
gpu_reason <- if (gpu_ok) "" else paste("no GPU:", gi$reason)
warmup_s <- NA_real_
if ("gpupc-gpu" %in% tools && length(cases) && gpu_ok) {
  wd <- gauss_data(50, 500, seed = 50)
  wcase <- list(suite = "warm-up", data = "first CUDA call", p = 50L, n = 500L, id = wd$id)
  w <- tryCatch(timed(gpu_skeleton(wd$suff, gaussCItest, alpha, labels = wd$labels, backend = "cuda")),
                error = function(e) e)
  if (inherits(w, "error")) {
    gpu_ok <- FALSE
    gpu_reason <- paste("error:", conditionMessage(w))
    add_row(new_row(wcase, "gpupc-gpu", status = gpu_reason))
  } else {
    warmup_s <- w$secs
    det <- gpupc_last_run()$details
    add_row(new_row(wcase, "gpupc-gpu", label = paste("gpupc", gpupc_last_run()$backend),
                    settings = sprintf("alpha=%g; backend=cuda", alpha), status = "ok",
                    skeleton_s = w$secs, warmup_s = w$secs,
                    nvrtc_compile_s = det$nvrtc_compile_s %||% NA, kernel_s = det$kernel_s %||% NA,
                    note = "first CUDA call of the process: CUDA context creation, NVRTC compilation, module load"))
  }
}

# ------------------------------------------------------------------------------------------------
# Tools run in this process: gpupc

capped_at <- list()  # sweep suite + tool -> the size at which the tool hit the cap
skip_status <- function(cs, tool) {
  if (!is_sweep(cs)) return(NULL)
  s <- capped_at[[paste(cs$suite, tool)]]
  if (!is.null(s) && sweep_size(cs) > s)
    sprintf("skipped (%s at %s = %d)", cap_label, if (grepl("sweep-p", cs$suite)) "p" else "n", as.integer(s))
}
note_capped <- function(cs, tool) {
  if (!is_sweep(cs)) return()
  k <- paste(cs$suite, tool)
  if (is.null(capped_at[[k]]) || sweep_size(cs) < capped_at[[k]]) capped_at[[k]] <<- sweep_size(cs)
}

# gpu_pc() end to end with the skeleton's arguments: its seconds, and its orientation's (orient_s).
gpupc_e2e <- function(cs, d, method, backend) {
  if (cs$p > e2e_max_p) return(list(s = NA_real_, e2e = NA_real_, status = sprintf("not run (p > %g)", e2e_max_p)))
  r <- tryCatch(timed(with_cap(gpu_pc(d$suff, d$test, alpha, labels = d$labels, skel.method = method,
                                      backend = backend), cap)), error = function(e) e)
  if (inherits(r, "error"))
    return(list(s = NA_real_, e2e = NA_real_, status = if (is_cap_error(r)) cap_label else paste("error:", conditionMessage(r))))
  list(s = gpupc_last_run()$phases[["orient_s"]] %||% NA_real_, e2e = r$secs, status = "ok (gpu_pc())")
}

run_gpupc <- function(cs, d, tool) {
  backend <- if (tool == "gpupc-gpu") "cuda" else "cpu"
  method <- if (tool == "gpupc-cpu-stable.fast") "stable.fast" else "stable"
  settings <- sprintf("alpha=%g; method=%s; test=%s; backend=%s; numCores=NULL (all)", alpha, method,
                      if (cs$kind == "gauss") "gaussCItest" else "disCItest", backend)
  if (backend == "cuda" && !gpu_ok) return(new_row(cs, tool, settings = settings, status = gpu_reason))
  sk <- tryCatch(timed(with_cap(gpu_skeleton(d$suff, d$test, alpha, labels = d$labels, method = method,
                                              backend = backend), cap)), error = function(e) e)
  if (inherits(sk, "error")) {
    if (is_cap_error(sk)) note_capped(cs, tool)
    return(new_row(cs, tool, settings = settings,
                   status = if (is_cap_error(sk)) cap_label else paste("error:", conditionMessage(sk))))
  }
  last <- gpupc_last_run()
  det <- last$details
  rec <- fit_record(sk$value, d$truth)
  o <- if (tool == "gpupc-cpu-stable.fast") list(s = NA_real_, e2e = NA_real_, status = "not run (skeleton only)") else
    gpupc_e2e(cs, d, method, backend)
  note <- run_note
  r <- do.call(new_row, c(list(cs, tool, label = paste("gpupc", last$backend), settings = settings,
                               status = "ok", skeleton_s = sk$secs, orientation_s = o$s,
                               end_to_end_s = o$e2e, e2e_status = o$status,
                               warmup_s = if (backend == "cuda") warmup_s else NA,
                               kernel_s = det$kernel_s %||% NA, nvrtc_compile_s = det$nvrtc_compile_s %||% NA,
                               upload_s = det$upload_s %||% det$upload_c_s %||% NA, transfer_s = det$transfer_s %||% NA,
                               level_seconds = paste(sprintf("%d:%.3f", last$levels$level, last$levels$seconds), collapse = " "),
                               phases = if (is.null(last$phases)) NA else
                                 paste(sprintf("%s=%.3f", sub("_s$", "", names(last$phases)), last$phases), collapse = " "),
                               note = note), rec_cols(rec)))
  r
}

# ------------------------------------------------------------------------------------------------
# Tools run in forked children, under the cap: pcalg, bnlearn, ParallelPC

bn_cl <- NULL; bn_pids <- integer(0)
bn_cluster <- function() {
  if (is.null(bn_cl)) {
    bn_cl <<- parallel::makeCluster(cores)
    bn_pids <<- unlist(parallel::clusterCall(bn_cl, Sys.getpid))
    # load bnlearn in the workers (not timed)
    invisible(bnlearn::pc.stable(bnlearn::learning.test, cluster = bn_cl))
  }
  bn_cl
}
bn_discard <- function() {  # after a time-out the workers are still busy: kill them, start afresh
  if (length(bn_pids)) tools::pskill(bn_pids, tools::SIGKILL)
  for (node in bn_cl) try(close(node$con), silent = TRUE)
  bn_cl <<- NULL; bn_pids <<- integer(0)
}
bn_test <- function(cs) if (cs$kind == "gauss") "cor" else "mi"

job_settings <- function(cs, tool) {
  tname <- if (cs$kind == "gauss") "gaussCItest" else "disCItest"
  switch(tool,
    "pcalg-stable" = sprintf("alpha=%g; method=stable; test=%s; numCores=1", alpha, tname),
    "pcalg-stable.fast" = sprintf("alpha=%g; method=stable.fast; test=%s; numCores=1", alpha, tname),
    "bnlearn" = sprintf("alpha=%g; pc.stable test=%s; cluster of %d PSOCK workers", alpha, bn_test(cs), cores),
    "parallelpc" = sprintf("alpha=%g; skeleton_parallel method=parallel; test=%s; num_workers=%d; mem.efficient=FALSE",
                           alpha, tname, cores))
}
job_tools <- c("pcalg-stable" = 1, "pcalg-stable.fast" = 1, bnlearn = 1, parallelpc = 1)
job_label <- function(tool) switch(tool,
  "pcalg-stable" = "pcalg skeleton stable (R, 1 core)",
  "pcalg-stable.fast" = "pcalg skeleton stable.fast (C++, 1 core)",
  "bnlearn" = sprintf("bnlearn pc.stable (%d workers)", cores),
  "parallelpc" = sprintf("ParallelPC (%d cores)", cores))

# What a child runs: returns list(skeleton_s, orientation_s, record); checkpoints the skeleton's time
# first, so that a run whose orientation hits the cap still reports its skeleton.
job_body <- function(cs, d, tool, checkpoint) {
  now <- function() proc.time()[["elapsed"]]
  orient_ok <- cs$p <= e2e_max_p
  if (tool %in% c("pcalg-stable", "pcalg-stable.fast")) {
    t0 <- now()
    fit <- skeleton(d$suff, d$test, alpha, labels = d$labels,
                    method = if (tool == "pcalg-stable") "stable" else "stable.fast")
    sk <- now() - t0
  } else if (tool == "parallelpc") {
    suppressPackageStartupMessages(library(parallel))  # skeleton_parallel calls mclapply unqualified
    t0 <- now()
    invisible(utils::capture.output(
      fit <- ParallelPC::skeleton_parallel(d$suff, d$test, alpha, labels = d$labels, method = "parallel",
                                           workers = NULL, num_workers = cores, mem.efficient = FALSE)))
    sk <- now() - t0
  } else if (tool == "bnlearn") {
    df <- if (cs$kind == "gauss") { x <- as.data.frame(d$X); names(x) <- d$labels; x } else d$df
    t0 <- now()
    bn <- bnlearn::pc.stable(df, test = bn_test(cs), alpha = alpha, cluster = bn_cl)
    sk <- now() - t0
    checkpoint(list(skeleton_s = sk))
    rec <- fit_record(keys = bn_keys(bn, d$labels), truth = d$truth)
    rec$tests <- bn$learning$ntests %||% NA
    return(list(skeleton_s = sk, orientation_s = NA, record = rec))
  }
  checkpoint(list(skeleton_s = sk))
  rec <- fit_record(fit, d$truth)
  checkpoint(list(skeleton_s = sk, record = rec))
  ori <- if (orient_ok) { t1 <- now(); pcalg::udag2pdagRelaxed(fit, verbose = FALSE); now() - t1 } else NA
  list(skeleton_s = sk, orientation_s = ori, record = rec)
}

job_row <- function(j, status, value = NULL, partial = NULL, error = NULL) {
  cs <- j$cs; tool <- j$tool
  v <- if (!is.null(value)) value else partial
  note <- run_note
  if (j$pooled) note <- paste0(note, if (nzchar(note)) "; ",
    sprintf("ran alongside up to %d other single-threaded pcalg runs (--parallel-baselines %d)", K - 1, K))
  if (tool == "bnlearn") note <- paste0(note, if (nzchar(note)) "; ",
    "pc.stable learns the skeleton and orients it in one call: skeleton_s = end_to_end_s = its time")
  sk <- v$skeleton_s %||% NA_real_
  ori <- v$orientation_s %||% NA_real_
  st <- switch(status, ok = "ok", timeout = if (is.na(sk)) cap_label else "ok",
               error = paste("error:", gsub("[\r\n]+", " ", error %||% "unknown")), status)
  e2e_st <- if (tool == "bnlearn") { if (is.na(sk)) NA else "ok (pc.stable orients)" }
            else if (cs$p > e2e_max_p) sprintf("not run (p > %g)", e2e_max_p)
            else if (status == "timeout") cap_label else if (status == "ok") "ok" else NA
  e2e <- if (tool == "bnlearn") sk else sk + ori
  do.call(new_row, c(list(cs, tool, label = job_label(tool), settings = job_settings(cs, tool), status = st,
                          skeleton_s = sk, orientation_s = ori, end_to_end_s = e2e, e2e_status = e2e_st,
                          note = note), rec_cols(v$record)))
}

# Runs jobs (list of list(cs, d, tool, pooled)) as forked children (lib.R's capped_start/poll), up to
# k at once, each under the cap; sweeps: a tool capped at one size skips its larger sizes.
run_jobs <- function(jobs, k) {
  queue <- jobs[order(vapply(jobs, function(j) as.numeric(j$cs$p) * j$cs$n, 1))]
  running <- list(); handles <- list()
  while (length(queue) || length(running)) {
    while (length(running) < k && length(queue)) {
      j <- queue[[1]]; queue <- queue[-1]
      sk <- skip_status(j$cs, j$tool)
      if (!is.null(sk)) { add_row(new_row(j$cs, j$tool, label = job_label(j$tool), settings = job_settings(j$cs, j$tool), status = sk)); next }
      if (j$tool == "bnlearn") bn_cluster()
      h <- capped_start(function(checkpoint) job_body(j$cs, j$d, j$tool, checkpoint))
      key <- as.character(h$job$pid)
      running[[key]] <- j; handles[[key]] <- h
    }
    for (key in names(done <- capped_poll(handles, cap))) {
      j <- running[[key]]; r <- done[[key]]
      running[[key]] <- NULL; handles[[key]] <- NULL
      if (r$status == "timeout") {
        if (j$tool == "bnlearn") bn_discard()
        if (is.null(r$partial$skeleton_s)) note_capped(j$cs, j$tool)
        add_row(job_row(j, "timeout", partial = r$partial))
      } else if (r$status == "error") {
        add_row(job_row(j, "error", partial = r$partial, error = r$error))
      } else add_row(job_row(j, "ok", value = r$value))
    }
  }
}

# ------------------------------------------------------------------------------------------------
# The run

deferred <- list()  # pcalg jobs when --parallel-baselines > 1
for (cs in cases) {
  tl <- case_tools(cs)
  if (resume) tl <- Filter(function(t) !done_before(cs, t), tl)
  if (!length(tl)) next
  cat(sprintf("== %s: %s (p = %d, n = %d)\n", cs$suite, cs$data, cs$p, cs$n))
  # tools that cannot run here: a row that says why
  unavailable <- function(t) {
    if (cs$kind == "discrete" && !have("bnlearn")) return("not installed: bnlearn (needed for the networks' data)")
    if (t == "bnlearn" && !have("bnlearn")) return("not installed")
    if (t == "parallelpc" && !have("ParallelPC")) return("not installed")
    if (t == "parallelpc" && cores < 2) return("not run: ParallelPC needs 2 or more cores")
    NULL
  }
  na <- Filter(Negate(is.null), setNames(lapply(tl, unavailable), tl))
  for (t in names(na)) add_row(new_row(cs, t, status = na[[t]]))
  tl <- setdiff(tl, names(na))
  # in a sweep, tools capped at a smaller size skip this one (without making its data)
  now_tools <- if (K > 1) setdiff(tl, c("pcalg-stable", "pcalg-stable.fast")) else tl
  sk <- Filter(Negate(is.null), setNames(lapply(now_tools, function(t) skip_status(cs, t)), now_tools))
  for (t in names(sk)) add_row(new_row(cs, t, label = if (t %in% names(job_tools)) job_label(t), status = sk[[t]]))
  tl <- setdiff(tl, names(sk))
  if (!length(tl)) next
  d <- cs$make()
  for (t in intersect(tl, c("gpupc-gpu", "gpupc-cpu", "gpupc-cpu-stable.fast"))) {
    sk <- skip_status(cs, t)
    add_row(if (!is.null(sk)) new_row(cs, t, status = sk) else run_gpupc(cs, d, t))
    gc(verbose = FALSE)
  }
  multi <- intersect(tl, c("bnlearn", "parallelpc"))
  for (t in multi) run_jobs(list(list(cs = cs, d = d, tool = t, pooled = FALSE)), 1L)
  single <- intersect(tl, c("pcalg-stable.fast", "pcalg-stable"))
  sj <- lapply(single, function(t) list(cs = cs, d = d, tool = t, pooled = K > 1))
  if (K > 1) deferred <- c(deferred, sj) else if (length(sj)) run_jobs(sj, 1L)
  rm(d); gc(verbose = FALSE)
}
if (length(deferred)) {
  cat(sprintf("== single-threaded baselines: %d runs, up to %d at once\n", length(deferred), K))
  run_jobs(deferred, K)
}
if (!is.null(bn_cl)) parallel::stopCluster(bn_cl)
res <- if (length(rows)) write_rows() else data.frame()
cat(sprintf("\nwrote %d rows to %s\n", nrow(res), out))
