# Conservative / majority-rule PC on discrete data with the triple checks on the GPU:
# parity of gpu_pc() against pcalg::pc() and timings end to end, in one run.
#
#   Rscript bench/suites/orient/orient-discrete.R [--backend cuda|cpu] [--out PREFIX] [--cases 72]
#       [--min-compared 60] [--cap 120] [--reps 3] [--timing alarm:5000,alarm:20000,hepar2:5000,andes:5000]
#       [--networks DIR] [--cores 7] [--quick]
#
# Data: random DAGs (pcalg's randomDAG + rmvDAG, each variable cut into 2-4 quantile levels) and
# the bundled bnlearn-repository networks (inst/extdata/networks/*.bif.gz), sampled by the BIF
# reader and forward sampler below (no bnlearn needed); binCItest cases take the codes mod 2.
#
# 1. gpupc timings: every --timing case, conservative and majority rule, gpu_pc(--backend) --reps
#    times after a warm-up (the median run, with gpupc_last_run()'s phases: the skeleton, the
#    orientation and within it the triple checks, `triples_s`), and once with backend = "cpu".
# 2. pcalg: pc(skel.method = "stable.fast") of every timing case in forked children at once, each
#    capped at --cap seconds (started after the gpupc timings).
# 3. Parity, while pcalg runs: --cases random cases (data source, disCItest / binCItest,
#    conservative / maj.rule, skel.method "stable" / "stable.fast", alpha, adaptDF vary); pcalg's
#    pc() for all of them first, in forked children (--cores), then gpu_pc(backend = --backend)
#    twice and gpu_pc(backend = "cpu") once in this process. Per case: identical() graph and
#    sepset against pcalg (and with the sepset's members as integers), the second GPU run
#    identical to the first (graph, sepset, pMax), the CPU backend's graph and sepset identical
#    to the GPU's (its pMax to 1e-9 relative: the GPU's skeleton kernels sum G^2 in their own
#    order), and the evaluator that ran the triple checks (it must be the GPU's). pcalg's disCItest is wrong for |S| >= 5 (see
#    ?gpu_skeleton) and the triple checks test subsets of whole neighbourhoods, so a disCItest case
#    compares with pcalg only where no vertex has more than 4 neighbours (m.max = 4 keeps the
#    skeleton's sets below 5); cases are drawn until --min-compared compare (at most 2 x --cases).
# Prints one line per measurement; with --out writes PREFIX-parity.csv, PREFIX-timing.csv.
# Exit status 1 when a compared case differs.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/orient"
})
source(file.path(here, "..", "..", "lib", "lib.R"))

args <- commandArgs(trailingOnly = TRUE)
opt <- option_reader(args)
quick <- "--quick" %in% args
backend <- opt("backend", "cuda")
out <- opt("out", NA)
n_cases <- as.integer(opt("cases", if (quick) "8" else "72"))
min_compared <- as.integer(opt("min-compared", if (quick) "4" else "60"))
cap <- as.numeric(opt("cap", "120"))
reps <- as.integer(opt("reps", "3"))
cores <- as.integer(opt("cores", "7"))
timing <- strsplit(opt("timing", if (quick) "alarm:2000" else "alarm:5000,alarm:20000,hepar2:5000,andes:5000"), ",")[[1]]
timing <- timing[nzchar(timing)]
net_dir <- opt("networks", {
  d <- system.file("extdata", "networks", package = "gpupc")
  if (nzchar(d)) d else file.path(here, "..", "..", "..", "inst", "extdata", "networks")
})

mi <- machine_info()
cat(sprintf("machine: %s | %s | %d cores | gpupc %s | pcalg %s | backend %s\n", mi$gpu, mi$cpu, mi$cores,
            mi$gpupc, mi$pcalg, backend))
rec_par <- csv_recorder(if (is.na(out)) NA else paste0(out, "-parity.csv"), mi)
rec_tim <- csv_recorder(if (is.na(out)) NA else paste0(out, "-timing.csv"), mi)

# --- data ----------------------------------------------------------------------------------------

# A BIF file of the bnlearn repository: list(states = list(node = levels), cpt = list(node =
# list(parents, prob = configurations x states, parent configurations mixed radix with the first
# parent fastest))).
read_bif <- function(path) {
  con <- if (grepl("\\.gz$", path)) gzfile(path) else file(path)
  on.exit(close(con))
  txt <- paste(readLines(con, warn = FALSE), collapse = "\n")
  states <- list()
  for (m in regmatches(txt, gregexpr("variable\\s+[^{\\s]+\\s*\\{[^}]*\\}[^}]*\\}", txt, perl = TRUE))[[1]]) {
    name <- sub("(?s)^variable\\s+([^{\\s]+).*$", "\\1", m, perl = TRUE)
    lv <- sub("(?s)^.*type\\s+discrete\\s*\\[[^]]*\\]\\s*\\{([^}]*)\\}.*$", "\\1", m, perl = TRUE)
    states[[name]] <- trimws(strsplit(lv, ",")[[1]])
  }
  cpt <- list()
  for (m in regmatches(txt, gregexpr("probability\\s*\\([^)]*\\)\\s*\\{[^}]*\\}", txt, perl = TRUE))[[1]]) {
    head <- trimws(sub("(?s)^probability\\s*\\(([^)]*)\\).*$", "\\1", m, perl = TRUE))
    parts <- strsplit(head, "|", fixed = TRUE)[[1]]
    child <- trimws(parts[1])
    parents <- if (length(parts) > 1) trimws(strsplit(parts[2], ",")[[1]]) else character(0)
    body <- sub("(?s)^[^{]*\\{(.*)\\}\\s*$", "\\1", m, perl = TRUE)
    entries <- trimws(strsplit(body, ";")[[1]])
    entries <- entries[nzchar(entries)]
    k <- length(states[[child]])
    np <- vapply(parents, function(q) length(states[[q]]), 1L)
    mult <- cumprod(c(1L, np))[seq_along(np)]
    prob <- matrix(NA_real_, prod(np), k)
    for (e in entries) {
      if (startsWith(e, "table")) {
        v <- as.numeric(strsplit(trimws(sub("^table", "", e)), "[ ,]+")[[1]])
        prob[] <- matrix(v, ncol = k, byrow = TRUE)
      } else {
        cfg <- trimws(strsplit(sub("^\\(([^)]*)\\).*$", "\\1", e), ",")[[1]])
        v <- as.numeric(strsplit(trimws(sub("^\\([^)]*\\)", "", e)), "[ ,]+")[[1]])
        idx <- 1L + sum(vapply(seq_along(parents), function(i) match(cfg[i], states[[parents[i]]]) - 1L, 1L) * mult)
        prob[idx, ] <- v
      }
    }
    if (anyNA(prob)) stop("BIF ", path, ": incomplete table of ", child)
    cpt[[child]] <- list(parents = parents, mult = mult, prob = prob)
  }
  list(states = states, cpt = cpt)
}

# n rows forward-sampled from a read_bif() network: an n x p integer matrix of codes 0..k-1.
sample_bif <- function(net, n) {
  nodes <- names(net$states)
  p <- length(nodes)
  dm <- matrix(-1L, n, p, dimnames = list(NULL, nodes))
  done <- setNames(rep(FALSE, p), nodes)
  while (!all(done)) {
    for (v in nodes[!done]) {
      cp <- net$cpt[[v]]
      if (!all(done[cp$parents])) next
      cfg <- rep(1L, n)
      for (i in seq_along(cp$parents)) cfg <- cfg + dm[, cp$parents[i]] * cp$mult[i]
      cum <- t(apply(cp$prob, 1, cumsum))
      if (ncol(cp$prob) == 1) cum <- t(cum)
      u <- stats::runif(n)
      dm[, v] <- pmin(rowSums(u > cum[cfg, , drop = FALSE]), ncol(cp$prob) - 1L)
      done[v] <- TRUE
    }
  }
  storage.mode(dm) <- "integer"
  dm
}

nets <- list()
net <- function(name) {
  if (is.null(nets[[name]])) nets[[name]] <<- read_bif(file.path(net_dir, paste0(name, ".bif.gz")))
  nets[[name]]
}

# disCItest's / binCItest's suffStat for codes dm (binary: mod 2).
suff_of <- function(dm, test, adapt) {
  if (test == "bin") {
    dm <- dm %% 2L
    return(list(dm = dm, adaptDF = adapt))
  }
  nlev <- vapply(seq_len(ncol(dm)), function(j) max(2L, max(dm[, j]) + 1L), 1L)
  list(dm = dm, nlev = nlev, adaptDF = adapt)
}

# Parity case i: all its choices from its own seed.
make_case <- function(i) {
  set.seed(1000 + i)
  src <- c("dag", "asia", "sachs", "child", "insurance", "alarm", "dag")[i %% 7 + 1]
  test <- if (i %% 4 %in% c(1, 2)) "bin" else "dis"
  rule <- if (i %% 2 == 0) "conservative" else "maj.rule"
  method <- if ((i %/% 2) %% 2 == 0) "stable" else "stable.fast"
  alpha <- sample(c(0.01, 0.05, 0.1), 1)
  adapt <- i %% 5 == 0
  if (src == "dag") {
    p <- sample(8:30, 1)
    n <- sample(c(500, 1000, 3000), 1)
    dag <- randomDAG(p, prob = sample(c(1.5, 2, 2.5), 1) / (p - 1))
    X <- rmvDAG(n, dag)
    k <- sample(2:4, p, TRUE)
    dm <- vapply(seq_len(p), function(j) as.integer(cut(X[, j], unique(quantile(X[, j], 0:k[j] / k[j])), include.lowest = TRUE)) - 1L, integer(n))
    colnames(dm) <- paste0("V", seq_len(p))
  } else {
    n <- sample(c(500, 1000, 3000), 1)
    dm <- sample_bif(net(src), n)
  }
  ss <- suff_of(dm, test, adapt)
  list(id = i, src = src, p = ncol(dm), n = n, test = test, rule = rule, method = method,
       alpha = alpha, adapt = adapt, suff = ss, labels = colnames(dm))
}

case_args <- function(k) {
  list(suffStat = k$suff, indepTest = if (k$test == "bin") binCItest else disCItest, alpha = k$alpha,
       labels = k$labels, skel.method = k$method, conservative = k$rule == "conservative",
       maj.rule = k$rule == "maj.rule", m.max = if (k$test == "dis") 4 else Inf)
}

max_degree <- function(fit) {
  m <- as(fit@graph, "matrix") != 0
  max(c(0, rowSums(m | t(m))))
}
int_sep <- function(s) lapply(s, function(r) lapply(r, function(v) if (is.null(v)) NULL else as.integer(v)))
sep_list <- function(fit) if (exists("as_sepset_list", asNamespace("gpupc"))) gpupc::as_sepset_list(fit@sepset) else fit@sepset
quiet <- function(expr) suppressWarnings(expr)

# --- 1. gpupc timings ----------------------------------------------------------------------------
tcases <- list()
for (t in timing) {
  nm <- strsplit(t, ":")[[1]]
  for (rule in c("conservative", "maj.rule")) {
    tcases[[paste(t, rule)]] <- list(net = nm[1], n = as.integer(nm[2]), rule = rule)
  }
}
tdata <- list()
for (t in unique(vapply(tcases, function(k) paste(k$net, k$n, sep = ":"), ""))) {
  nm <- strsplit(t, ":")[[1]]
  set.seed(7)
  tdata[[t]] <- suff_of(sample_bif(net(nm[1]), as.integer(nm[2])), "dis", FALSE)
}
marks <- function(g) { m <- as(g, "matrix"); w <- which(m != 0); list(w = w, v = m[w]) }
if (backend != "cpu" && length(tcases)) {
  k0 <- make_case(3)
  invisible(try(quiet(do.call(gpu_pc, c(case_args(k0), backend = backend))), silent = TRUE))
}
tfits <- list()
for (nm in names(tcases)) {
  k <- tcases[[nm]]
  ss <- tdata[[paste(k$net, k$n, sep = ":")]]
  a <- list(suffStat = ss, indepTest = disCItest, alpha = 0.01, labels = colnames(ss$dm), m.max = 4,
            conservative = k$rule == "conservative", maj.rule = k$rule == "maj.rule")
  one <- function(b) {
    g <- timed(quiet(do.call(gpu_pc, c(a, backend = b))))
    lr <- gpupc_last_run()
    list(secs = g$secs, fit = g$value, phases = lr$phases, triples_s = lr$orient$phases[["triples_s"]],
         stats = lr$orient$stats)
  }
  runs <- lapply(seq_len(reps), function(r) one(backend))
  secs <- vapply(runs, `[[`, 0, "secs")
  med <- runs[[order(secs)[(reps + 1) %/% 2]]]
  cpu <- one("cpu")
  tfits[[nm]] <- marks(med$fit@graph)
  ph <- med$phases
  skel_s <- sum(ph[setdiff(names(ph), c("orient_s", "sepset_s"))])
  tcases[[nm]]$gpupc_s <- med$secs
  tcases[[nm]]$p <- ncol(ss$dm)
  row <- list(part = "gpupc", case = nm, network = k$net, p = ncol(ss$dm), n = k$n, rule = k$rule,
              backend = backend, gpupc_s = med$secs, gpupc_min_s = min(secs), gpupc_max_s = max(secs),
              skeleton_phases_s = skel_s, orient_s = ph[["orient_s"]], triples_s = med$triples_s,
              triples_share = med$triples_s / med$secs, sepset_s = ph[["sepset_s"]],
              triples = med$stats$triples, tests = med$stats$tests, ambiguous = med$stats$ambiguous,
              evaluator = med$stats$evaluator, max_degree = max_degree(med$fit),
              cpu_s = cpu$secs, cpu_triples_s = cpu$triples_s,
              cpu_same = identical(med$fit@graph, cpu$fit@graph) && identical(sep_list(med$fit), sep_list(cpu$fit)))
  do.call(rec_tim, row)
  rm(runs, cpu); invisible(gc())
}

# --- 2. pcalg timings in capped children ---------------------------------------------------------
handles <- lapply(tcases, function(k) {
  ss <- tdata[[paste(k$net, k$n, sep = ":")]]
  capped_start(function(checkpoint) {
    r <- suppressWarnings(pc(ss, disCItest, 0.01, labels = colnames(ss$dm), m.max = 4, skel.method = "stable.fast",
                             conservative = k$rule == "conservative", maj.rule = k$rule == "maj.rule"))
    list(marks = marks(r@graph), max_degree = max_degree(r))
  })
})

# --- 3. parity -----------------------------------------------------------------------------------
t_par <- proc.time()[["elapsed"]]
compared <- 0
bad <- 0
next_id <- 1
while (compared < min_compared && next_id <= 2 * n_cases) {
  ids <- next_id:(next_id + max(n_cases, min_compared - compared) - 1)
  ids <- ids[ids <= 2 * n_cases]
  if (next_id > 1) ids <- ids[seq_len(min(length(ids), 2 * (min_compared - compared) + 4))]
  next_id <- max(ids) + 1
  ks <- lapply(ids, make_case)
  refs <- parallel::mclapply(ks, function(k) {
    t0 <- proc.time()[["elapsed"]]
    r <- tryCatch(quiet(do.call(pc, case_args(k))), error = function(e) conditionMessage(e))
    list(fit = r, secs = proc.time()[["elapsed"]] - t0)
  }, mc.cores = cores, mc.preschedule = FALSE)
  for (j in seq_along(ks)) {
    k <- ks[[j]]; want <- refs[[j]]$fit
    if (!methods::is(want, "pcAlgo")) {
      rec_par(part = "parity", id = k$id, src = k$src, status = paste("pcalg failed:", want))
      next
    }
    a <- case_args(k)
    g1 <- tryCatch(quiet(do.call(gpu_pc, c(a, backend = backend))), error = function(e) conditionMessage(e))
    if (!methods::is(g1, "pcAlgo")) {
      bad <- bad + 1
      rec_par(part = "parity", id = k$id, src = k$src, status = paste("gpu_pc failed:", g1))
      next
    }
    st <- gpupc_last_run()$orient$stats
    g2 <- quiet(do.call(gpu_pc, c(a, backend = backend)))
    gc1 <- quiet(do.call(gpu_pc, c(a, backend = "cpu")))
    s1 <- sep_list(g1)
    ok_cmp <- k$test == "bin" || max_degree(want) <= 4
    graph_same <- identical(g1@graph, want@graph)
    sep_same <- identical(s1, want@sepset)
    sep_int_same <- identical(int_sep(s1), int_sep(want@sepset))
    rerun_same <- identical(g1@graph, g2@graph) && identical(s1, sep_list(g2)) && identical(g1@pMax, g2@pMax)
    # graph and sepsets; pMax only to rounding: the GPU's skeleton kernels sum G^2 in an order of
    # their own (about 1e-13 relative, see pc-cuda's gsquare/mod.rs), the GPU alone is bit-stable
    cpu_same <- identical(g1@graph, gc1@graph) && identical(s1, sep_list(gc1))
    fin <- is.finite(g1@pMax) & is.finite(gc1@pMax)
    pmax_rel <- if (any(fin)) max(abs(g1@pMax[fin] - gc1@pMax[fin]) / pmax(abs(gc1@pMax[fin]), 1e-300)) else 0
    pmax_same_inf <- identical(is.finite(g1@pMax), is.finite(gc1@pMax))
    on_gpu <- backend == "cpu" || startsWith(st$evaluator %||% "", "cuda")
    pass <- graph_same && sep_same && rerun_same && cpu_same && pmax_same_inf && pmax_rel < 1e-9 && on_gpu
    if (ok_cmp) {
      compared <- compared + 1
      bad <- bad + !pass
    } else {
      bad <- bad + !(rerun_same && cpu_same && pmax_same_inf && pmax_rel < 1e-9 && on_gpu)
    }
    rec_par(part = "parity", id = k$id, src = k$src, p = k$p, n = k$n, test = k$test, rule = k$rule,
            method = k$method, alpha = k$alpha, adaptDF = k$adapt, max_degree = max_degree(want),
            compared = ok_cmp, graph_same = graph_same, sepset_same = sep_same, sepset_int_same = sep_int_same,
            rerun_same = rerun_same, cpu_same = cpu_same, cpu_pmax_rel = pmax_rel, triples = st$triples, tests = st$tests,
            ambiguous = st$ambiguous, evaluator = st$evaluator, pcalg_s = refs[[j]]$secs, pass = pass)
  }
}
rec_par(part = "parity-summary", cases = next_id - 1, compared = compared, failed = bad,
        secs = proc.time()[["elapsed"]] - t_par)

# --- 2'. collect pcalg ---------------------------------------------------------------------------
results <- list()
while (length(handles)) {
  got <- capped_poll(handles, cap, wait = 1)
  for (nm in names(got)) results[[nm]] <- got[[nm]]
  handles <- handles[setdiff(names(handles), names(got))]
}
for (nm in names(tcases)) {
  k <- tcases[[nm]]; r <- results[[nm]]
  ok <- identical(r$status, "ok")
  rec_tim(part = "pcalg", case = nm, network = k$net, p = k$p, n = k$n, rule = k$rule,
          pcalg_s = if (ok) r$secs else NA_real_, pcalg_status = r$status, gpupc_s = k$gpupc_s,
          speedup = if (ok) r$secs / k$gpupc_s else NA_real_, speedup_at_least = cap / k$gpupc_s,
          pcalg_max_degree = if (ok) r$value$max_degree else NA,
          same_amat = if (ok) identical(r$value$marks, tfits[[nm]]) else NA)
}

cat(sprintf("\nparity: %d cases, %d compared with pcalg, %d failed\n", next_id - 1, compared, bad))
cat("timing (seconds; pcalg stable.fast capped at", cap, "s; gpupc the median of", reps, "runs):\n")
for (nm in names(tcases)) {
  k <- tcases[[nm]]; r <- results[[nm]]
  cat(sprintf("  %-28s gpupc %.3f  pcalg %s  ratio %s\n", nm, k$gpupc_s,
              if (identical(r$status, "ok")) sprintf("%.2f", r$secs) else sprintf("> %g (%s)", cap, r$status),
              if (identical(r$status, "ok")) sprintf("%.0fx", r$secs / k$gpupc_s) else sprintf("> %.0fx", cap / k$gpupc_s)))
}
quit(status = if (bad > 0 || compared < min_compared) 1 else 0)
