# Helpers shared by the benchmark scripts (compare.R, gpu-check.R, ...): data, capped timing,
# fingerprints of results (for agreement across processes and files), accuracy against the truth.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })

machine_info <- function() {
  gi <- gpu_info()
  cpu <- tryCatch(sub(".*: ", "", grep("model name", readLines("/proc/cpuinfo"), value = TRUE)[1]),
                  error = function(e) NA_character_)
  ver <- function(p) if (requireNamespace(p, quietly = TRUE)) format(packageVersion(p)) else "not installed"
  data.frame(gpu = if (isTRUE(gi$usable)) gi$name else "none", cpu = cpu,
             cores = parallel::detectCores(), r = paste(R.version$major, R.version$minor, sep = "."),
             gpupc = ver("gpupc"), pcalg = ver("pcalg"), bnlearn = ver("bnlearn"),
             ParallelPC = ver("ParallelPC"), stringsAsFactors = FALSE)
}

# ------------------------------------------------------------------------------------------------
# Data

# Draws n rows of the linear Gaussian SEM of a topologically ordered weighted DAG (pcalg's randomDAG
# output): X_j = sum over parents i of w_ij X_i + e_j, e ~ N(0, 1). This is the model rmvDAG()
# samples, with the errors drawn in the same order (one n x p matrix of rnorm), so the DAG and the
# noise are the same as rmvDAG's for the same seed; only the sums are formed over the parents alone
# instead of a dense product over all earlier columns (rmvDAG takes O(n p^2) time and a dense p x p
# weight matrix: minutes at p = 10000). Values agree with rmvDAG's up to rounding.
rmv_sparse <- function(n, dag) {
  p <- length(graph::nodes(dag))
  X <- matrix(rnorm(n * p), nrow = n)
  em <- graph::edgeMatrix(dag)                       # 2 x E: from, to (indices)
  if (ncol(em) == 0) return(X)
  w <- unname(graph::eWV(dag, em))
  stopifnot(all(em[1, ] < em[2, ]))                  # topological order, as randomDAG makes it
  by_child <- split(seq_len(ncol(em)), em[2, ])
  for (j in sort(as.integer(names(by_child)))) {
    k <- by_child[[as.character(j)]]
    X[, j] <- X[, j] + X[, em[1, k], drop = FALSE] %*% w[k]
  }
  X
}

# Correlation matrix: R's cor() where it is quick; above n p^2 = 3e9 the BLAS cross-product of the
# standardised data (cor() has no BLAS: minutes at p = 20000). They agree to ~1e-15.
fast_cor <- function(X, how = c("auto", "cor", "crossprod")) {
  how <- match.arg(how)
  if (how == "auto") how <- if (as.numeric(nrow(X)) * ncol(X)^2 <= 3e9) "cor" else "crossprod"
  if (how == "cor") return(list(C = cor(X), how = "cor"))
  # column blocks on all cores (R's reference BLAS is single-threaded: 1e11 flops at p = 10000).
  # C[i, j] and C[j, i] come from different blocks, which an optimised BLAS sums in different
  # orders; C is made exactly symmetric after, as cor()'s is (a C that is not takes the
  # pseudo-inverse in every test of order >= 2, in pcalg's R and in gpupc alike)
  Z <- scale(X) / sqrt(nrow(X) - 1)
  p <- ncol(X)
  cores <- parallel::detectCores()
  blocks <- split(seq_len(p), ceiling(seq_len(p) / ceiling(p / cores)))
  C <- do.call(rbind, parallel::mclapply(blocks, function(b) crossprod(Z[, b, drop = FALSE], Z),
                                         mc.cores = cores))
  C <- (C + t(C)) / 2
  C[C > 1] <- 1
  C[C < -1] <- -1
  diag(C) <- 1
  list(C = C, how = "crossprod")
}

# Non-linear data for cmiknnCItest: n rows of p variables, each the sine of (up to) two earlier
# ones plus noise (the several-GPU and MPI suites' CMI-kNN runs).
sine_dag_data <- function(p, n, seed = 3) {
  set.seed(seed)
  z <- matrix(rnorm(n * p), n)
  for (j in 2:p) {
    par <- sample.int(j - 1, min(2, j - 1))
    z[, j] <- z[, j] * 0.5 + rowSums(sin(2 * z[, par, drop = FALSE]))
  }
  z
}
# Gaussian data from pcalg's randomDAG (expected degree `degree`) + a linear SEM. generator "auto"
# uses rmvDAG() itself up to n p^2 = 3e9 (so gpu-check's and compare.R's data sets of that size
# are the ones BENCHMARKS.md reports) and rmv_sparse() above.
gauss_generator <- function(p, n, generator = "auto") {
  if (generator == "auto") generator <- if (as.numeric(n) * p^2 <= 3e9) "rmvDAG" else "sparse"
  generator
}
# The data set's identity in result files: rows with the same id were computed from the same data.
gauss_id <- function(p, n, degree = 4, seed = 1, generator = "auto") {
  cor_how <- if (as.numeric(n) * p^2 <= 3e9) "cor" else "crossprod"
  sprintf("gauss p=%d n=%d degree=%g seed=%d gen=%s cor=%s", as.integer(p), as.integer(n), degree,
          as.integer(seed), gauss_generator(p, n, generator), cor_how)
}
gauss_data <- function(p, n, degree = 4, seed = 1, generator = c("auto", "rmvDAG", "sparse")) {
  generator <- gauss_generator(p, n, match.arg(generator))
  set.seed(seed)
  dag <- randomDAG(p, prob = min(1, degree / (p - 1)))
  X <- if (generator == "rmvDAG") rmvDAG(n, dag) else rmv_sparse(n, dag)
  cc <- fast_cor(X)
  list(suff = list(C = cc$C, n = n), p = p, n = n, truth = dag, X = X, test = gaussCItest,
       labels = paste0("V", seq_len(p)), kind = "gauss", id = gauss_id(p, n, degree, seed, generator))
}

read_network <- function(name) {
  stopifnot(requireNamespace("bnlearn", quietly = TRUE))
  f <- system.file("extdata", "networks", paste0(name, ".bif.gz"), package = "gpupc")
  if (!nzchar(f)) stop("no bundled network ", name)
  tmp <- tempfile(fileext = ".bif")
  con <- gzfile(f)
  on.exit({ close(con); unlink(tmp) })
  writeLines(readLines(con), tmp)
  bnlearn::read.bif(tmp)
}

network_id <- function(name, n, seed = 1) sprintf("network %s n=%d seed=%d", name, as.integer(n), as.integer(seed))

# Samples n rows from a bundled bnlearn-repository network (needs bnlearn). $df is the data.frame of
# factors bnlearn takes; $suff is disCItest's sufficient statistic.
network_data <- function(name, n, seed = 1, fit = NULL) {
  if (is.null(fit)) fit <- read_network(name)
  set.seed(seed)
  d <- bnlearn::rbn(fit, n)
  dm <- sapply(d, function(col) as.integer(col) - 1L)
  nlev <- vapply(d, nlevels, 1L)
  truth <- bnlearn::amat(bnlearn::bn.net(fit))
  list(suff = list(dm = dm, nlev = nlev, adaptDF = FALSE), p = ncol(dm), n = n, truth = truth,
       labels = colnames(dm), df = d, test = disCItest, kind = "discrete",
       id = network_id(name, n, seed))
}

# ------------------------------------------------------------------------------------------------
# Timing

timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  v <- expr
  list(value = v, secs = proc.time()[["elapsed"]] - t0)
}

# Evaluates expr in this process with an elapsed-time limit (R's setTimeLimit; gpupc answers it like
# Ctrl-C). Errors "reached elapsed time limit" / gpupc_interrupt_error mean the cap was hit.
with_cap <- function(expr, cap) {
  if (is.finite(cap)) {
    setTimeLimit(elapsed = cap, transient = TRUE)
    on.exit(setTimeLimit(elapsed = Inf, transient = FALSE), add = TRUE)
  }
  expr
}
is_cap_error <- function(e) {
  inherits(e, "gpupc_interrupt_error") || grepl("elapsed time limit", conditionMessage(e), fixed = TRUE)
}

# Every descendant of a process (children of children ...), from /proc.
descendants <- function(pid) {
  st <- list.files("/proc", pattern = "^[0-9]+$")
  ppid <- vapply(st, function(p) {
    s <- tryCatch(suppressWarnings(readLines(file.path("/proc", p, "stat"), warn = FALSE)), error = function(e) "")
    if (!length(s) || !nzchar(s[1])) return(NA_integer_)
    as.integer(strsplit(sub(".*\\) ", "", s[1]), " ")[[1]][2])
  }, 1L)
  out <- integer(0)
  frontier <- pid
  while (length(frontier)) {
    kids <- as.integer(st[which(ppid %in% frontier)])
    kids <- setdiff(kids, out)
    out <- c(out, kids)
    frontier <- kids
  }
  out
}

# Capped runs in forked children: pcalg's R code cannot be interrupted from outside otherwise.
# capped_start(fun) forks a child that runs fun(checkpoint); checkpoint(x) saves x, and a run that
# is stopped returns its last checkpoint as $partial (e.g. the skeleton's time when only the
# orientation ran out of time). capped_poll(handles, cap) waits up to `wait` seconds and returns the
# results of the handles that finished or ran past cap seconds (those are killed, with everything
# they forked: mclapply workers), named by the handles' names. A result is list(value, secs,
# status = "ok" | "timeout" | "error", error, partial).
capped_start <- function(fun) {
  ckpt <- tempfile("capped-ckpt-")
  checkpoint <- function(x) { saveRDS(x, paste0(ckpt, ".tmp")); file.rename(paste0(ckpt, ".tmp"), ckpt) }
  job <- parallel::mcparallel({
    t0 <- proc.time()[["elapsed"]]
    v <- fun(checkpoint)
    list(value = v, secs = proc.time()[["elapsed"]] - t0)
  }, silent = TRUE)
  list(job = job, ckpt = ckpt, t0 = Sys.time())
}
capped_poll <- function(handles, cap, wait = 1) {
  if (!length(handles)) return(list())
  partial <- function(h) {
    p <- if (file.exists(h$ckpt)) tryCatch(readRDS(h$ckpt), error = function(e) NULL) else NULL
    unlink(c(h$ckpt, paste0(h$ckpt, ".tmp")))
    p
  }
  out <- list()
  pids <- vapply(handles, function(h) as.character(h$job$pid), "")
  got <- parallel::mccollect(lapply(handles, `[[`, "job"), wait = FALSE, timeout = wait)
  for (pid in names(got)) {
    k <- match(pid, pids)
    res <- got[[pid]]
    r <- if (inherits(res, "try-error"))
      list(value = NULL, secs = NA_real_, status = "error",
           error = conditionMessage(attr(res, "condition") %||% simpleError(as.character(res))))
    else if (is.null(res) || is.null(res$secs))
      list(value = NULL, secs = NA_real_, status = "error", error = "the child process died (out of memory?)")
    else c(res, status = "ok")
    r$partial <- partial(handles[[k]])
    out[[names(handles)[k]]] <- r
  }
  now <- Sys.time()
  for (k in seq_along(handles)) {
    h <- handles[[k]]
    if (names(handles)[k] %in% names(out) || as.numeric(difftime(now, h$t0, units = "secs")) < cap) next
    tools::pskill(c(descendants(h$job$pid), h$job$pid), tools::SIGKILL)
    parallel::mccollect(h$job, wait = FALSE)
    out[[names(handles)[k]]] <- list(value = NULL, secs = NA_real_, status = "timeout", partial = partial(h))
  }
  out
}
# Runs expr in a forked child under a cap of `cap` seconds (checkpoint() is available to expr).
capped <- function(expr, cap) {
  expr <- substitute(expr)
  env <- parent.frame()
  h <- list(job = capped_start(function(checkpoint) {
    e <- new.env(parent = env)
    e$checkpoint <- checkpoint
    eval(expr, e)
  }))
  repeat {
    r <- capped_poll(h, cap)
    if (length(r)) return(r[[1]])
  }
}
`%||%` <- function(a, b) if (is.null(a)) b else a

# ------------------------------------------------------------------------------------------------
# Results: skeleton edges, fingerprints, accuracy

skel_amat <- function(fit) {
  m <- as(fit@graph, "matrix") != 0
  m | t(m)
}

# Skeleton as sorted keys (i - 1) * p + j, i < j (1-based nodes), from any pcAlgo (skeleton or CPDAG)
# without a dense p x p matrix.
pair_keys <- function(from, to, p) {
  a <- pmin(from, to); b <- pmax(from, to)
  keep <- a != b
  sort(unique((as.numeric(a[keep]) - 1) * p + b[keep]))
}
skel_keys <- function(fit) {
  em <- graph::edgeMatrix(fit@graph)
  pair_keys(em[1, ], em[2, ], length(graph::nodes(fit@graph)))
}
truth_keys <- function(truth) {
  if (is.matrix(truth)) {
    w <- which(truth != 0, arr.ind = TRUE)
    return(pair_keys(w[, 1], w[, 2], nrow(truth)))
  }
  em <- graph::edgeMatrix(truth)
  pair_keys(em[1, ], em[2, ], length(graph::nodes(truth)))
}
# bnlearn's result: its arcs (undirected ones listed both ways) by the data's column order.
bn_keys <- function(bn, labels) {
  a <- bn$arcs
  if (!nrow(a)) return(numeric(0))
  pair_keys(match(a[, 1], labels), match(a[, 2], labels), length(labels))
}

# md5 of R's serialization (format 2: no ALTREP, so identical() objects serialize alike), streamed
# to a file: 3 GB of sepsets at p = 20000 never sit in memory twice.
md5_of <- function(x) {
  f <- tempfile("md5-")
  on.exit(unlink(f))
  con <- file(f, "wb")
  serialize(x, con, xdr = TRUE, version = 2)
  close(con)
  unname(tools::md5sum(f))
}

# pcalg's sepsets hold integer vectors; other tools may hold doubles: normalise where cheap.
sepset_md5 <- function(sepset, normalise = length(sepset) <= 3000) {
  if (normalise) sepset <- lapply(sepset, lapply, function(s) if (is.null(s)) NULL else as.integer(s))
  md5_of(sepset)
}

# SHD and F1 of an estimated skeleton (keys) against the true one (keys).
keys_accuracy <- function(est, tru) {
  tp <- length(intersect(est, tru)); fp <- length(est) - tp; fn <- length(tru) - tp
  c(shd = fp + fn, f1 = if (tp == 0) 0 else 2 * tp / (2 * tp + fp + fn))
}

# What a benchmark row keeps of a pcAlgo (or of a skeleton given as keys): counts and fingerprints.
fit_record <- function(fit = NULL, truth = NULL, keys = NULL, sepsets = TRUE) {
  if (is.null(keys)) keys <- skel_keys(fit)
  acc <- if (is.null(truth)) c(shd = NA, f1 = NA) else keys_accuracy(keys, truth_keys(truth))
  list(edges = length(keys), skel_md5 = md5_of(keys),
       sep_md5 = if (sepsets && !is.null(fit)) sepset_md5(fit@sepset) else NA_character_,
       levels = if (!is.null(fit)) fit@max.ord else NA_integer_,
       tests = if (!is.null(fit)) sum(fit@n.edgetests) else NA_real_,
       shd = acc[["shd"]], f1 = acc[["f1"]])
}

# Same skeleton and same sepsets (NULL vs integer(0) matters), the parity contract's core.
same_as <- function(a, b) {
  if (is.null(a) || is.null(b)) return(NA)
  identical(unname(skel_amat(a)), unname(skel_amat(b))) &&
    identical(lapply(a@sepset, lapply, function(s) if (is.null(s)) NULL else as.integer(s)),
              lapply(b@sepset, lapply, function(s) if (is.null(s)) NULL else as.integer(s)))
}

# SHD and F1 of the skeleton against a true DAG (graphNEL or adjacency matrix).
skeleton_accuracy <- function(fit, truth) keys_accuracy(skel_keys(fit), truth_keys(truth))

fmt_secs <- function(s, cap) ifelse(is.na(s), sprintf("> %d s", as.integer(cap)), sprintf("%.3f", s))

# A script's `--name value` options: opt <- option_reader(); opt("cap", "600").
option_reader <- function(args = commandArgs(trailingOnly = TRUE)) {
  function(name, default) {
    i <- match(paste0("--", name), args)
    if (is.na(i)) default else args[i + 1]
  }
}

# The results an MPI benchmark's runs saved (every OUT.rds of `dir`, named by file) and which of
# them is the reference: the first whose name matches `ref`.
read_runs <- function(dir, ref) {
  files <- list.files(dir, pattern = "[.]rds$", full.names = TRUE)
  runs <- lapply(files, readRDS)
  names(runs) <- sub("[.]rds$", "", basename(files))
  ref_name <- grep(ref, names(runs), value = TRUE)[1]
  if (is.na(ref_name)) stop("no run matching ", ref, " in ", dir)
  list(runs = runs, ref_name = ref_name, ref = runs[[ref_name]])
}

# record <- csv_recorder(out, mi); record(part = ..., p = ...): prints one measurement as
# name=value pairs and, with `out`, rewrites the CSV of every row so far (so a killed run keeps
# what it measured), with the machine's GPU and cores; recorded_rows(record) gives the rows.
csv_recorder <- function(out, mi) {
  rows <- list()
  function(...) {
    r <- data.frame(..., stringsAsFactors = FALSE)
    rows[[length(rows) + 1]] <<- r
    cat(paste(sprintf("%s=%s", names(r), vapply(r, function(v) format(v, digits = 4), "")), collapse = "  "), "\n")
    if (!is.na(out)) {
      cols <- unique(unlist(lapply(rows, names)))
      all <- do.call(rbind, lapply(rows, function(x) { x[setdiff(cols, names(x))] <- NA; x[cols] }))
      utils::write.csv(cbind(all, machine = mi$gpu, cores = mi$cores), out, row.names = FALSE)
    }
  }
}
recorded_rows <- function(record) environment(record)$rows
