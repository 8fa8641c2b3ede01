# Several GPUs through R: parity of every test kind and order, and the timing table.
#
#   Rscript bench/suites/multigpu/multigpu-r.R parity [--cases K] [--out FILE]
#   Rscript bench/suites/multigpu/multigpu-r.R gauss  --cor FILE --p P --n N [--m-max M] [--reps R] [--warm small]
#   Rscript bench/suites/multigpu/multigpu-r.R cmiknn [--p P] [--n N] [--reps R]
#   Rscript bench/suites/multigpu/multigpu-r.R jtree  [--net munin] [--evidence-sets S] [--reps R] [--triangulation auto]
#   Rscript bench/suites/multigpu/multigpu-r.R fault
#
# parity: on random cases, each native test kind and skeleton order (gaussCItest from C with
#   "stable" and "stable.fast", from suffStat$data; disCItest; binCItest; cmiknnCItest), gpu_pc()
#   with the conservative and majority rules (the triple checks), and junction-tree batches
#   (marginals and MPE): every GPU set (one GPU, all of them forced with `devices =`, the default
#   `devices = NULL`, and all of them with peer copies off, GPUPC_PEER=0) against the CPU backend
#   and, for the skeletons, against each other slot by slot. The GPU sets must be identical to one
#   another in every slot (pMax bit for bit); the CPU backend identical in graph, sepsets,
#   n.edgetests and max.ord, pMax to 1e-9 relative (the CPU's and the GPU's arithmetic round
#   alike but not always identically). Prints one line per comparison and a closing line
#   "parity: N compared, N identical, N differ"; exits 1 when any differs.
# fault: GPUPC_FAIL_DEVICE makes every launch on the last GPU fail; with backend = "auto" each
#   test kind (gaussCItest with the default devices and with all of them forced, disCItest,
#   cmiknnCItest, a junction-tree batch) must go on without it, with a message naming it, and
#   give the one-GPU result; backend = "cuda" must stop with an error naming it; every GPU
#   failing must give the CPU's result. Prints "fault: N checks, N passed".
# gauss / cmiknn / jtree: the same call on 1, 2, ... GPUs (every prefix of the usable GPUs), warm
#   (a first call on each set is not timed), each checked identical to the one-GPU result; prints
#   a table row per device count with the wall time, the ratio to one GPU and the phases of
#   gpupc_last_run(). --sets 1,4,default times those device sets only (GPU counts, the first
#   being the reference, and the default devices); --ref DIR keeps the reference's result there
#   for a later call (see timing_table).
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- dirname(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(here, "..", "..", "lib", "lib.R"))
options(cli.progress_show_after = Inf)  # no progress bars in the logs
args <- commandArgs(TRUE)
mode <- args[1]
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
info <- gpu_info()
if (!isTRUE(info$usable)) stop("no usable GPU: ", info$reason)
all_dev <- info$devices$device
cat(sprintf("%d GPU(s): %s\n", length(all_dev), paste(unique(info$devices$name), collapse = ", ")))

# "" when identical in every slot pcalg returns (pMax within `tol` relative), else the first slot
# that differs
diff_slot <- function(a, b, tol = 0) {
  if (inherits(a, "failed")) return(paste("error:", a))
  if (!identical(as(a@graph, "matrix"), as(b@graph, "matrix"))) return("graph")
  if (!identical(a@sepset, b@sepset)) return("sepset")
  pa <- a@pMax; pb <- b@pMax
  if (!identical(is.finite(pa), is.finite(pb)) || !identical(pa[!is.finite(pa)], pb[!is.finite(pb)])) return("pMax pattern")
  f <- is.finite(pa)
  if (tol == 0 && !identical(pa[f], pb[f])) return("pMax bits")
  if (any(abs(pa[f] - pb[f]) > tol * pmax(abs(pb[f]), 1e-300))) return("pMax values")
  if (!identical(a@n.edgetests, b@n.edgetests)) return("n.edgetests")
  if (!identical(a@max.ord, b@max.ord)) return("max.ord")
  ""
}

gpu_sets <- function() {
  s <- list(one = all_dev[1], all = all_dev, default = NULL)
  if (length(all_dev) > 2) s$two <- all_dev[1:2]
  s
}

if (mode == "parity") {
  # every level split over the devices, however small (the product splits only large levels),
  # and with the default devices gaussCItest's others join at level 2 (the product: large levels)
  Sys.setenv(GPUPC_SPLIT_MIN_TESTS = "0", GPUPC_GROW_MIN_TESTS = "0")
  cases <- as.integer(opt("cases", 4))
  results <- list()
  report <- function(what, verdict, extra = "") {
    results[[length(results) + 1]] <<- verdict == ""
    cat(sprintf("%-58s %s%s\n", what, if (verdict == "") "identical" else paste("DIFFERS:", verdict), extra))
  }
  # the skeleton (or gpu_pc) of `call` on every GPU set, the peer-off run, and the CPU backend
  check_calls <- function(name, call0) {
    # an error is a difference, reported with its message; the suite goes on
    call <- function(...) tryCatch(call0(...), error = function(e) structure(conditionMessage(e), class = "failed"))
    sets <- gpu_sets()
    ref <- call(backend = "cuda", devices = sets$one)
    if (inherits(ref, "failed")) return(report(paste(name, "one GPU"), paste("error:", ref)))
    used_ref <- gpupc_last_run()$devices
    for (nm in setdiff(names(sets), "one")) {
      got <- call(backend = "cuda", devices = sets[[nm]])
      lr <- gpupc_last_run()
      report(sprintf("%s: GPUs %s = one GPU", name, paste(lr$devices, collapse = ",")), diff_slot(got, ref),
             if (nm == "default") sprintf("  [default: %s]", lr$devices_why) else "")
    }
    if (length(all_dev) > 1) {
      Sys.setenv(GPUPC_PEER = "0")
      got <- call(backend = "cuda", devices = all_dev)
      Sys.unsetenv("GPUPC_PEER")
      report(sprintf("%s: GPUs %s, staged through the host = one GPU", name, paste(all_dev, collapse = ",")), diff_slot(got, ref))
    }
    cpu <- call(backend = "cpu", devices = NULL)
    report(sprintf("%s: CPU backend = GPU", name), diff_slot(cpu, ref, tol = 1e-9))
  }
  for (k in seq_len(cases)) {
    set.seed(100 + k)
    p <- c(40, 90, 150, 60)[(k - 1) %% 4 + 1]
    dag <- randomDAG(p, prob = 3 / (p - 1))
    X <- rmvDAG(300 + 100 * k, dag)
    st <- list(C = cor(X), n = nrow(X))
    for (m in c("stable", "stable.fast"))
      check_calls(sprintf("case %d gauss p=%d %s", k, p, m), function(backend, devices)
        gpu_skeleton(st, gaussCItest, 0.01, p = p, method = m, backend = backend, devices = devices))
    check_calls(sprintf("case %d gauss from data p=%d", k, p), function(backend, devices)
      gpu_skeleton(list(data = X, n = nrow(X)), gaussCItest, 0.01, p = p, backend = backend, devices = devices))
    for (rule in c("conservative", "majority"))
      check_calls(sprintf("case %d gauss gpu_pc %s p=%d", k, rule, p), function(backend, devices)
        gpu_pc(st, gaussCItest, 0.01, p = p, conservative = rule == "conservative", maj.rule = rule == "majority",
               backend = backend, devices = devices))
    # discrete: codes of a random DAG's Gaussian data cut into 2-4 levels
    pd <- c(20, 40, 30, 50)[(k - 1) %% 4 + 1]
    Xd <- rmvDAG(4000, randomDAG(pd, prob = 3 / (pd - 1)))
    nlev <- rep(c(2L, 3L, 4L), length.out = pd)
    dm <- sapply(seq_len(pd), function(j) as.integer(cut(Xd[, j], quantile(Xd[, j], seq(0, 1, length.out = nlev[j] + 1)), include.lowest = TRUE)) - 1L)
    ds <- list(dm = dm, nlev = nlev, adaptDF = FALSE)
    for (m in c("stable", "stable.fast"))
      check_calls(sprintf("case %d disCItest p=%d %s", k, pd, m), function(backend, devices)
        gpu_skeleton(ds, disCItest, 0.01, p = pd, method = m, backend = backend, devices = devices))
    check_calls(sprintf("case %d disCItest gpu_pc conservative p=%d", k, pd), function(backend, devices)
      gpu_pc(ds, disCItest, 0.01, p = pd, conservative = TRUE, backend = backend, devices = devices))
    bm <- (dm > 0) * 1L
    check_calls(sprintf("case %d binCItest p=%d", k, pd), function(backend, devices)
      gpu_skeleton(list(dm = bm, adaptDF = FALSE), binCItest, 0.01, p = pd, backend = backend, devices = devices))
    # non-linear: CMI-kNN on a small chain with squares and sines
    n <- 250
    z <- matrix(rnorm(n * 6), n)
    for (j in 2:6) z[, j] <- z[, j] * 0.5 + if (j %% 2) z[, j - 1]^2 else sin(2 * z[, j - 1])
    cs <- list(data = z, knn = 0.1, sig_samples = 100, seed = k)
    check_calls(sprintf("case %d cmiknnCItest p=6", k), function(backend, devices)
      gpu_skeleton(cs, cmiknnCItest, 0.05, p = 6, backend = backend, devices = devices))
  }
  # junction trees: a batch of evidence sets, marginals and MPE, on every GPU set and the CPU
  for (net in c("alarm", "hepar2")) {
    f <- system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc")
    jt1 <- gpu_jtree(f, backend = "cuda", devices = all_dev[1])
    set.seed(7)
    rows <- 3000
    ev <- as.data.frame(lapply(jt1$states, function(st) {
      v <- sample(st, rows, replace = TRUE)
      v[runif(rows) > 0.1] <- NA
      v
    }), stringsAsFactors = FALSE)
    names(ev) <- jt1$nodes
    ref_m <- suppressWarnings(gpu_query(jt1, evidence = ev))
    ref_e <- suppressWarnings(gpu_mpe(jt1, evidence = ev))
    for (nm in c("all", "default")) {
      jt <- gpu_jtree(f, backend = "cuda", devices = gpu_sets()[[nm]])
      got_m <- suppressWarnings(gpu_query(jt, evidence = ev))
      got_e <- suppressWarnings(gpu_mpe(jt, evidence = ev))
      d <- gpupc_last_run()$devices
      report(sprintf("jtree %s %d sets marginals: GPUs %s = one GPU", net, rows, paste(d, collapse = ",")),
             if (identical(got_m, ref_m)) "" else "marginals")
      report(sprintf("jtree %s %d sets MPE: GPUs %s = one GPU", net, rows, paste(d, collapse = ",")),
             if (identical(got_e, ref_e)) "" else "MPE")
    }
    jc <- gpu_jtree(f, backend = "cpu")
    cm <- suppressWarnings(gpu_query(jc, evidence = ev))
    rel <- max(mapply(function(a, b) max(abs(a - b), na.rm = TRUE), cm, ref_m))
    report(sprintf("jtree %s marginals: CPU = GPU (max abs diff %.2e)", net, rel), if (rel <= 1e-12) "" else "marginals")
    report(sprintf("jtree %s MPE: CPU = GPU", net), if (identical(suppressWarnings(gpu_mpe(jc, evidence = ev)), ref_e)) "" else "MPE")
  }
  ok <- unlist(results)
  cat(sprintf("parity: %d compared, %d identical, %d differ\n", length(ok), sum(ok), sum(!ok)))
  quit(status = if (all(ok)) 0 else 1)
}

if (mode == "fault") {
  # every level split and the default devices joined from level 2, so that the failing GPU runs
  Sys.setenv(GPUPC_GROW_MIN_TESTS = "0", GPUPC_SPLIT_MIN_TESTS = "0")
  bad <- all_dev[length(all_dev)]
  ok <- logical(0)
  check <- function(what, pass, extra = "") {
    ok[length(ok) + 1] <<- isTRUE(pass)
    cat(sprintf("%-70s %s%s\n", what, if (isTRUE(pass)) "ok" else "FAILED", extra))
  }
  # `call(backend, devices)` with GPU `bad` failing: auto goes on without it, cuda stops
  faulty <- function(name, call, devices, same = function(a, b) diff_slot(a, b) == "") {
    ref <- call("cuda", all_dev[1])
    Sys.setenv(GPUPC_FAIL_DEVICE = bad)
    on.exit(Sys.unsetenv("GPUPC_FAIL_DEVICE"))
    msgs <- character(0)
    got <- tryCatch(withCallingHandlers(call("auto", devices), message = function(m) {
      msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") }), error = function(e) e)
    used <- gpupc_last_run()$devices
    if (inherits(got, "error")) return(check(paste(name, "auto"), FALSE, paste(":", conditionMessage(got))))
    check(sprintf("%s auto: GPU %d left out, result = one GPU", name, bad),
          same(got, ref) && !(bad %in% used) && length(used) >= 1 && any(grepl(sprintf("GPU %d", bad), msgs)),
          sprintf("  [ran on %s; %s]", paste(used, collapse = ","), paste(msgs, collapse = " / ")))
    if (!is.null(devices)) {
      e <- tryCatch(call("cuda", devices), error = identity)
      check(sprintf("%s cuda: an error naming GPU %d", name, bad),
            inherits(e, "gpupc_cuda_error") && grepl(sprintf("GPU %d", bad), conditionMessage(e)),
            if (inherits(e, "error")) paste(":", conditionMessage(e)) else ": no error")
    }
  }
  set.seed(11)
  p <- 3000
  X <- rmvDAG(600, randomDAG(p, prob = 3 / (p - 1)))
  st <- list(C = cor(X), n = nrow(X))
  g <- function(b, d) gpu_skeleton(st, gaussCItest, 0.01, p = p, backend = b, devices = d)
  faulty("gauss p=3000 default devices", g, NULL)
  faulty("gauss p=3000 all devices", g, all_dev)
  faulty("gauss gpu_pc conservative p=3000 all devices", function(b, d)
    gpu_pc(st, gaussCItest, 0.01, p = p, conservative = TRUE, backend = b, devices = d), all_dev)
  pd <- 300
  Xd <- rmvDAG(120000, randomDAG(pd, prob = 3 / (pd - 1)))  # n p^2 / 2 = 5.4e9: "auto" takes the GPU
  dm <- sapply(seq_len(pd), function(j) as.integer(cut(Xd[, j], 3)) - 1L)
  ds <- list(dm = dm, nlev = rep(3L, pd), adaptDF = FALSE)
  faulty("disCItest p=300 n=120000 all devices", function(b, d)
    gpu_skeleton(ds, disCItest, 0.01, p = pd, backend = b, devices = d), all_dev)
  z <- matrix(rnorm(300 * 6), 300)
  z[, 2] <- z[, 1]^2 + 0.3 * z[, 2]
  cs <- list(data = z, knn = 0.1, sig_samples = 100, seed = 1)
  faulty("cmiknnCItest p=6 all devices", function(b, d)
    gpu_skeleton(cs, cmiknnCItest, 0.05, p = 6, backend = b, devices = d), all_dev)
  f <- system.file("extdata", "networks", "alarm.bif.gz", package = "gpupc")
  jt <- gpu_jtree(f, backend = "cuda", devices = all_dev)
  set.seed(7)
  ev <- as.data.frame(lapply(jt$states, function(st) { v <- sample(st, 3000, TRUE); v[runif(3000) > 0.1] <- NA; v }),
                      stringsAsFactors = FALSE)
  names(ev) <- jt$nodes
  faulty("jtree alarm 3000 sets all devices", function(b, d) suppressWarnings(gpu_query(jt, evidence = ev, backend = b)),
         NULL, identical)
  # every GPU failing: one after another left out, then the CPU's result
  cpu <- g("cpu", NULL)
  Sys.setenv(GPUPC_FAIL_DEVICE = paste(all_dev, collapse = ","))
  msgs <- character(0)
  got <- withCallingHandlers(g("auto", NULL), message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") })
  Sys.unsetenv("GPUPC_FAIL_DEVICE")
  check("gauss p=3000, every GPU failing: the CPU's result", diff_slot(got, cpu) == "" &&
        startsWith(gpupc_last_run()$backend, "cpu") && any(grepl("running on the CPU", msgs)),
        paste0("  [", gpupc_last_run()$backend, "; ", paste(msgs, collapse = " / "), "]"))
  cat(sprintf("fault: %d checks, %d passed\n", length(ok), sum(ok)))
  quit(status = if (all(ok)) 0 else 1)
}

# ------------------------------------------------------------------------------------------------
# Timing: the same call on every prefix of the usable GPUs
reps <- as.integer(opt("reps", 2))
prefixes <- lapply(seq_along(all_dev), function(k) all_dev[seq_len(k)])
if (length(all_dev) > 2) prefixes <- prefixes[c(1, 2, length(prefixes))]
# --sets 1,4,default: the device sets to time (GPU counts as prefixes, and the default devices);
# the first is the reference
sets_opt <- opt("sets", NA)
run_sets <- if (is.na(sets_opt)) c(prefixes, if (length(all_dev) > 1) list(NULL)) else
  lapply(strsplit(sets_opt, ",")[[1]], function(s) if (s == "default") NULL else all_dev[seq_len(min(as.integer(s), length(all_dev)))])
# --ref DIR: the first set's result and time are saved there (saveRDS), and read back instead of
# running it again when DIR already holds them (a later call on the same machine, for a run too
# long to repeat beside every device set)
ref_dir <- opt("ref", NA)
ref_file <- if (!is.na(ref_dir)) file.path(ref_dir, "reference.rds")
timing_table <- function(label, call, same, warm = call) {
  ref <- NULL
  base <- NA
  for (i in seq_along(run_sets)) {
    d <- run_sets[[i]]
    if (i == 1 && !is.null(ref_file) && file.exists(ref_file)) {
      saved <- readRDS(ref_file)
      if (identical(saved$label, label)) {
        ref <- saved$result; base <- saved$seconds
        cat(sprintf("%s | %s | %.3f s (read from %s) | 1.00x | reference | %s\n", label, saved$gpus, base, ref_file, saved$phases))
        next
      }
    }
    invisible(warm(d))  # warm: contexts, modules, staging buffers
    ts <- numeric(reps)
    for (r in seq_len(reps)) {
      gc()
      ts[r] <- system.time(res <- call(d))[["elapsed"]]
    }
    lr <- gpupc_last_run()
    if (is.null(ref)) {
      ref <- res; base <- min(ts)
      if (!is.null(ref_file))
        saveRDS(list(label = label, result = res, seconds = base, gpus = sprintf("%d GPU(s)", length(lr$devices)),
                     phases = paste(sprintf("%s %.3f", names(lr$phases), lr$phases), collapse = ", ")), ref_file, compress = FALSE)
    }
    verdict <- if (i == 1) "reference" else if (same(res, ref)) "identical" else "DIFFERS"
    ph <- lr$phases
    ph_s <- paste(sprintf("%s %.3f", names(ph), ph), collapse = ", ")
    det <- lr$details
    extra <- if (!is.null(det$merge_s)) sprintf(", merge %.3f s", det$merge_s) else ""
    if (is.null(d)) extra <- sprintf("%s, default devices: %s (%s)", extra, paste(lr$devices, collapse = ","), lr$devices_why)
    if (!is.null(det$devices_joined_level))
      extra <- sprintf("%s, joined at level %d in %.2f s", extra, as.integer(det$devices_joined_level), det$devices_join_s)
    cat(sprintf("%s | %s GPU(s) | %.3f s (runs: %s) | %.2fx | %s | %s%s\n", label, if (is.null(d)) "default" else length(d), min(ts),
                paste(sprintf("%.3f", ts), collapse = " "), base / min(ts), verdict, ph_s, extra))
    if (!is.null(lr$levels) && nrow(lr$levels))
      cat(sprintf("    level %d: %.3f s, %.0f tests\n", lr$levels$level, lr$levels$seconds, lr$levels$tests), sep = "")
  }
}

if (mode == "gauss") {
  p <- as.integer(opt("p", 20000)); n <- as.numeric(opt("n", 3189))
  mm <- as.numeric(opt("m-max", Inf))
  con <- file(opt("cor", ""), "rb")
  # by blocks of columns: p^2 is past an integer's range from p = 46341
  C <- matrix(0, p, p)
  for (j in split(seq_len(p), ceiling(seq_len(p) / 4096))) C[, j] <- readBin(con, "double", p * length(j))
  close(con)
  st <- list(C = C, n = n)
  # --warm small: warm each device set on the first 2000 variables (a full run is minutes)
  small <- list(C = C[1:2000, 1:2000], n = n)
  warm <- if (identical(opt("warm", "same"), "small"))
    function(d) gpu_skeleton(small, gaussCItest, 0.01, p = 2000, backend = "cuda", devices = d) else NULL
  call <- function(d) gpu_skeleton(st, gaussCItest, 0.01, p = p, m.max = mm, backend = "cuda", devices = d)
  timing_table(sprintf("gauss p=%d n=%g m.max=%g", p, n, mm), call,
               function(a, b) diff_slot(a, b) == "", warm = if (is.null(warm)) call else warm)
} else if (mode == "cmiknn") {
  p <- as.integer(opt("p", 50)); n <- as.integer(opt("n", 2000))
  z <- sine_dag_data(p, n)
  cs <- list(data = z, knn = 0.1, sig_samples = as.integer(opt("perm", 200)))
  mm <- as.numeric(opt("m-max", Inf))
  small <- list(data = z[1:300, 1:5], knn = 0.1, sig_samples = 50)
  timing_table(sprintf("cmiknn p=%d n=%d perms=%d m.max=%g", p, n, cs$sig_samples, mm),
               function(d) gpu_skeleton(cs, cmiknnCItest, 0.05, p = p, m.max = mm, backend = "cuda", devices = d),
               function(a, b) diff_slot(a, b) == "",
               warm = function(d) gpu_skeleton(small, cmiknnCItest, 0.05, p = 5, backend = "cuda", devices = d))
} else if (mode == "jtree") {
  net <- opt("net", "munin"); sets <- as.integer(opt("evidence-sets", 100000))
  tri <- opt("triangulation", "auto")
  f <- system.file("extdata", "networks", paste0(net, ".bif.gz"), package = "gpupc")
  t0 <- proc.time()[["elapsed"]]
  jt0 <- gpu_jtree(f, triangulation = tri, backend = "cuda", devices = all_dev[1])
  cat(sprintf("gpu_jtree(triangulation = \"%s\"): %.3f s; %s\n", tri, proc.time()[["elapsed"]] - t0,
              paste(names(jt0$stats), unlist(jt0$stats), sep = " ", collapse = ", ")))
  set.seed(11)
  ev <- as.data.frame(lapply(jt0$states, function(st) {
    v <- sample(st, sets, replace = TRUE)
    v[runif(sets) > 0.05] <- NA
    v
  }), stringsAsFactors = FALSE)
  names(ev) <- jt0$nodes
  key <- function(d) if (is.null(d)) "default" else paste(d, collapse = ",")
  trees <- lapply(run_sets, function(d) gpu_jtree(f, triangulation = tri, backend = "cuda", devices = d))
  names(trees) <- vapply(run_sets, key, "")
  timing_table(sprintf("jtree %s marginals, %d evidence sets (5%% observed)", net, sets),
               function(d) suppressWarnings(gpu_query(trees[[key(d)]], evidence = ev)),
               identical,
               warm = function(d) suppressWarnings(gpu_query(trees[[key(d)]], evidence = ev[seq_len(2000), ])))
} else stop("unknown mode ", mode)
