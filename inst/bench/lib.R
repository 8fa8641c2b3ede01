# Helpers shared by the benchmark scripts: data, capped timing, agreement with pcalg, accuracy.
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

gauss_data <- function(p, n, degree = 4, seed = 1) {
  set.seed(seed)
  dag <- randomDAG(p, prob = min(1, degree / (p - 1)))
  X <- rmvDAG(n, dag)
  list(suff = list(C = cor(X), n = n), p = p, n = n, truth = dag, X = X)
}

# Samples n rows from a bundled bnlearn-repository network (needs bnlearn).
network_data <- function(name, n, seed = 1) {
  stopifnot(requireNamespace("bnlearn", quietly = TRUE))
  f <- system.file("extdata", "networks", paste0(name, ".bif.gz"), package = "gpupc")
  tmp <- tempfile(fileext = ".bif")
  con <- gzfile(f)
  on.exit(close(con))
  writeLines(readLines(con), tmp)
  fit <- bnlearn::read.bif(tmp)
  set.seed(seed)
  d <- bnlearn::rbn(fit, n)
  dm <- sapply(d, function(col) as.integer(col) - 1L)
  nlev <- vapply(d, nlevels, 1L)
  truth <- bnlearn::amat(bnlearn::bn.net(fit))
  list(suff = list(dm = dm, nlev = nlev, adaptDF = FALSE), p = ncol(dm), n = n, truth = truth,
       labels = colnames(dm), df = d)
}

# Runs expr in a forked child and gives up after cap seconds: pcalg's R code cannot be interrupted
# from outside otherwise. Returns list(value, secs) with secs = NA and value = NULL on time-out.
capped <- function(expr, cap) {
  expr <- substitute(expr)
  env <- parent.frame()
  job <- parallel::mcparallel({
    t0 <- proc.time()[["elapsed"]]
    v <- eval(expr, env)
    list(value = v, secs = proc.time()[["elapsed"]] - t0)
  }, silent = TRUE)
  out <- parallel::mccollect(job, wait = FALSE, timeout = cap)
  if (is.null(out)) {
    tools::pskill(job$pid, tools::SIGKILL)
    parallel::mccollect(job, wait = FALSE)
    return(list(value = NULL, secs = NA_real_))
  }
  res <- out[[1]]
  if (inherits(res, "try-error")) return(list(value = NULL, secs = NA_real_, error = as.character(res)))
  res
}

timed <- function(expr) {
  t0 <- proc.time()[["elapsed"]]
  v <- expr
  list(value = v, secs = proc.time()[["elapsed"]] - t0)
}

skel_amat <- function(fit) {
  m <- as(fit@graph, "matrix") != 0
  m | t(m)
}

# Same skeleton and same sepsets (NULL vs integer(0) matters), the parity contract's core.
same_as <- function(a, b) {
  if (is.null(a) || is.null(b)) return(NA)
  identical(unname(skel_amat(a)), unname(skel_amat(b))) &&
    identical(lapply(a@sepset, lapply, function(s) if (is.null(s)) NULL else as.integer(s)),
              lapply(b@sepset, lapply, function(s) if (is.null(s)) NULL else as.integer(s)))
}

# SHD and F1 of the skeleton against a true DAG (graphNEL or adjacency matrix).
skeleton_accuracy <- function(fit, truth) {
  est <- unname(skel_amat(fit))
  tru <- if (is.matrix(truth)) truth != 0 else as(truth, "matrix") != 0
  tru <- unname(tru | t(tru))
  up <- upper.tri(est)
  tp <- sum(est[up] & tru[up]); fp <- sum(est[up] & !tru[up]); fn <- sum(!est[up] & tru[up])
  c(shd = fp + fn, f1 = if (tp == 0) 0 else 2 * tp / (2 * tp + fp + fn))
}

fmt_secs <- function(s, cap) ifelse(is.na(s), sprintf("> %d s", as.integer(cap)), sprintf("%.3f", s))
