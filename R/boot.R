#' Arc strengths of the PC algorithm over bootstrap resamples (bnlearn's boot.strength())
#'
#' Runs [gpu_pc()] on `R` bootstrap resamples of the data in `suffStat` and returns, for every
#' ordered pair of distinct nodes, how often the resamples' CPDAGs hold an edge between them
#' (`strength`) and how often it points from `from` to `to` when there is one (`direction`):
#' the `bn.strength` data frame of \pkg{bnlearn}'s `boot.strength()`, which bnlearn's
#' `averaged.network()`, `strength.plot()` and `inclusion.threshold()` take as they take bnlearn's.
#'
#' @section Resamples:
#' All resamples' rows are drawn first, in order, from R's random numbers: resample `k` is
#' `sample.int(n, m, replace = TRUE)` for `k = 1, ..., R` (n: the data's rows), so `set.seed()`
#' makes the result reproducible (these are the rows bnlearn's `boot.strength(shuffle = FALSE)`
#' draws after the same seed, with a learning algorithm that draws no random numbers itself).
#' Each resample's `suffStat` is built from the data the test reads:
#'
#' * `gaussCItest`: `suffStat$data` (an n x p matrix or data frame; gpupc's own `suffStat`,
#'   see [gpu_skeleton()]), each resample given as `list(data = rows)`, its correlations computed
#'   by the backend (any `suffStat$n` or `suffStat$C` is not used: n is `m`). A resample in which a
#'   column is constant is given as `list(C = cor(rows), n = m)` instead, whose NA correlations
#'   pcalg's test answers with p = 1. A `suffStat` holding only `C` and `n` has nothing to
#'   resample and is refused.
#' * `disCItest` / `binCItest`: the rows of `suffStat$dm`, with `adaptDF` as given and, for
#'   `disCItest`, `nlev` as given or else counted once on the whole data (or a factor's levels),
#'   so that a resample in which a state does not occur keeps the variable's levels.
#' * `cmiknnCItest`: the rows of `suffStat$data`, every other field as given. A resample repeats
#'   rows, and repeated rows are ties at distance 0 for the nearest-neighbour estimate;
#'   `m` below n lessens them.
#'
#' Any other `indepTest` reads a `suffStat` whose data gpupc cannot know, and is refused.
#'
#' @section Strength and direction:
#' The values are bnlearn's for CPDAGs, computed as `bnlearn::custom.strength(networks, nodes,
#' cpdag = FALSE)` computes them from the resamples' graphs: a directed edge `a -> b` counts 1 for
#' (a, b), an undirected one 1/2 for (a, b) and 1/2 for (b, a); with c(a, b) the count over the
#' resamples divided by `R`, `strength` is c(a, b) + c(b, a) and `direction` is c(a, b) /
#' strength (0 where the strength is 0), values within `sqrt(.Machine$double.eps)` of 0 or 1 set
#' to 0 or 1, and the `threshold` attribute is bnlearn's estimated significance threshold. With
#' `solve.confl = TRUE` an edge that the orientation makes bidirected is both ways in the graph and
#' counts as undirected, as bnlearn reads such an arc set.
#'
#' @section Time and devices:
#' The resamples run one after another, each [gpu_pc()] call on its own backend and, without
#' `devices`, its default GPUs: the resamples are not spread over the GPUs of one process (a
#' resample's own levels are split over them where that gains). A progress bar counts the
#' resamples (the calls inside show none), and Ctrl-C stops the whole run. A warning or message
#' that several resamples raise alike (up to its numbers) is shown once. [gpupc_last_run()]
#' afterwards holds the last resample's `backend`, `why`, `devices` and `devices_why`,
#' `bootstrap` (`resamples`, `m`, `local`: the resamples this process ran, and their `seconds`)
#' and `phases` (`r_checks_s`: the checks and drawing the rows, `resamples_s`, `allgather_s`,
#' `strength_s`, `r_gc_s`).
#'
#' With `cluster = "mpi"` every rank of the MPI job makes the same call (with the same random
#' number state: `set.seed()` before it), and rank r runs a contiguous block of the resamples
#' (about `R / size` each, the first `R %% size` ranks one more) on its own backend: its threads,
#' or without `devices` one GPU, the rank's place on its host modulo the usable GPUs. The ranks
#' then exchange their blocks' counts (12 bytes per ordered pair that a resample joined), and
#' every rank returns the whole result, identical to the one-process call's. The ranks first
#' compare their inputs and the drawn rows, and all stop with an error naming `cluster` when they
#' differ; a rank that fails stops every rank with its error ("rank 2: ..."). `u2pd = "rand"` and
#' `"retry"`, which draw from R's random numbers while orienting, run in one process only.
#' `gpupc_last_run()$ranks` then holds this `rank` of `size`, `check_s`, `first` and `resamples`
#' (its block), `bytes_sent`, `bytes_received`, `local_s` and `allgather_s`.
#'
#' @inheritParams gpu_pc
#' @param suffStat the sufficient statistic of `indepTest` holding the data to resample (see
#'   Resamples): `list(data = X)` for `gaussCItest` (or `cmiknnCItest` with its fields),
#'   `list(dm = D, nlev = , adaptDF = )` for `disCItest` / `binCItest`.
#' @param R the number of resamples, a whole number >= 1.
#' @param m the rows of each resample, drawn with replacement: a whole number from 2 to the
#'   data's rows, or `NULL` (the default) for all of them.
#' @param ... further arguments of [gpu_pc()], passed unchanged to each resample's call
#'   (`skel.method`, `m.max`, `u2pd`, `conservative`, `maj.rule`, `solve.confl`, `numCores`,
#'   `backend`, `devices`, ...).
#' @param cluster `NULL` (the default: one process), or `"mpi"`: the call is one rank of an MPI
#'   job whose ranks share the resamples (see Time and devices); needs \pkg{Rmpi}. The resamples'
#'   own [gpu_pc()] calls run in one process each.
#' @return A data frame of class `c("bn.strength", "data.frame")` with one row per ordered pair of
#'   distinct nodes (p (p - 1) rows, as bnlearn's: 10 million at p = 3163), in bnlearn's order
#'   (`from` the outer loop over the nodes), and columns
#'   `from`, `to`, `strength` and `direction`; attributes `nodes`, `method` (`"bootstrap"`) and
#'   `threshold`, as bnlearn's, and `R`, `m` and `edges` (each resample's number of edges).
#' @seealso [gpu_pc()]; \pkg{bnlearn}'s `boot.strength()`, `custom.strength()` and
#'   `averaged.network()`.
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' set.seed(1)
#' st <- gpu_boot_strength(list(data = gmG8$x), gaussCItest, alpha = 0.01,
#'                         labels = colnames(gmG8$x), R = 10, numCores = 2, backend = "cpu")
#' head(st[order(-st$strength), ])
#' attr(st, "threshold")
#' # arcs found in more than 8 of the 10 resamples
#' st[st$strength > 0.8 & st$direction >= 0.5, ]
#' if (requireNamespace("bnlearn", quietly = TRUE))
#'   bnlearn::averaged.network(st)
gpu_boot_strength <- function(suffStat, indepTest, alpha, labels, p, R = 200, m = NULL, ...,
                              cluster = NULL) {
  # each resample's call, with this call's own `...`
  fit_one <- function(st, labels, devices) {
    if (is.null(devices)) gpu_pc(st, indepTest, alpha, labels = labels, ...)
    else gpu_pc(st, indepTest, alpha, labels = labels, ..., devices = devices)
  }
  boot_strength_impl(suffStat, indepTest, alpha, if (missing(labels)) NULL else labels,
                     if (missing(p)) NULL else p, missing(labels), missing(p), R, m, list(...),
                     cluster, fit_one)
}

# gpu_pc()'s arguments that are each rank's own choice (as gpu_pc() leaves them out of the
# ranks' comparison)
.boot_rank_local <- c("numCores", "verbose", "backend", "devices")

# gpu_boot_strength() with its parts passed in: `dots` the list of `...` (checked and compared
# here), `fit_one(st, labels, devices)` the resample's gpu_pc() call, `hooks` the progress display
# (R/progress.R; the tests pass hooks that stop the run).
boot_strength_impl <- function(suffStat, indepTest, alpha, labels, p, missing_labels, missing_p,
                               R, m, dots, cluster, fit_one,
                               hooks = progress_hooks("gpupc bootstrap", "resamples")) {
  clk <- gc_clock()
  on.exit(gc_clock_stop(clk))
  t0 <- proc.time()[["elapsed"]]
  # the checks and the draw first, their failure raised only after the ranks compared their
  # inputs: a rank stopped alone would leave the others waiting
  setup <- tryCatch(boot_setup(suffStat, indepTest, alpha, labels, p, missing_labels, missing_p,
                               R, m, dots),
                    error = identity)
  failed <- inherits(setup, "error")
  cluster <- cluster_first(cluster, list(
    suffStat = suffStat, indepTest = if (is.function(indepTest)) native_kind(indepTest) else indepTest,
    alpha = alpha, labels = labels, p = p, R = R, m = m,
    `...` = dots[setdiff(names(dots), .boot_rank_local)],
    resamples = if (failed) conditionMessage(setup) else setup$rows))
  if (failed) stop(setup)
  if (!is.null(cluster) && isTRUE(dots$u2pd %in% c("rand", "retry")))
    abort_arg("u2pd", "= {.val {dots$u2pd}} draws from R's random numbers while orienting, which the ranks of {.code cluster = \"mpi\"} would draw apart: use it in one process (cluster = NULL).")
  R <- setup$R
  p <- setup$p
  size <- if (is.null(cluster)) 1L else cluster$size
  rank <- if (is.null(cluster)) 0L else cluster$rank
  mine <- jt_rank_rows(R, rank, size)
  t1 <- proc.time()[["elapsed"]]
  local <- cluster_step(cluster, {
    # test-only: GPUPC_FAIL_RANK=rank:start makes that rank fail before its first resample
    if (!is.null(cluster) && identical(Sys.getenv("GPUPC_FAIL_RANK"), paste0(rank, ":start")))
      cli::cli_abort("gpupc: internal error: a failure injected before the first resample",
                     class = c("gpupc_internal_error", "gpupc_error"), call = NULL)
    boot_block(setup, mine, fit_one, hooks, boot_rank_devices(cluster, setup, dots))
  })
  t2 <- proc.time()[["elapsed"]]
  sent <- received <- 0
  counts <- local$counts
  edges <- local$edges
  if (size > 1L) {
    nz <- which(counts != 0L)
    msg <- serialize(list(at = nz, count = counts[nz], edges = edges), NULL, xdr = FALSE)
    sent <- length(msg)
    got <- cluster$allgather(msg)
    rm(msg)
    received <- sum(as.double(lengths(got))) - sent
    # integer counts added in rank order: the same totals as one process's, whatever the split
    counts <- matrix(0L, p, p)
    edges <- integer(0)
    for (r in seq_len(size)) {
      blk <- if (r == rank + 1L) list(at = nz, count = local$counts[nz], edges = local$edges) else unserialize(got[[r]])
      got[r] <- list(NULL)
      counts[blk$at] <- counts[blk$at] + blk$count
      edges <- c(edges, blk$edges)
    }
  }
  t3 <- proc.time()[["elapsed"]]
  out <- bn_strength(counts, R, setup$labels)
  attr(out, "R") <- R
  attr(out, "m") <- setup$m
  attr(out, "edges") <- edges
  t4 <- proc.time()[["elapsed"]]
  last <- local$last %||% list(backend = "none", why = "no resamples on this rank", devices = NULL,
                               devices_why = NULL)
  .gpupc_state$last <- list(
    backend = last$backend, why = last$why, devices = last$devices, devices_why = last$devices_why,
    bootstrap = list(resamples = R, m = setup$m, local = length(mine), seconds = local$seconds),
    ranks = if (!is.null(cluster)) list(rank = rank, size = size, check_s = cluster$agreed %||% 0,
                                        first = if (length(mine)) mine[1] else NA_integer_,
                                        resamples = length(mine), bytes_sent = sent,
                                        bytes_received = received, local_s = t2 - t1,
                                        allgather_s = t3 - t2),
    phases = c(r_checks_s = t1 - t0, resamples_s = t2 - t1, allgather_s = t3 - t2,
               strength_s = t4 - t3))
  record_gc(clk)
  out
}

# The checked inputs and every resample's rows: list(labels, p, R, m, n, kind (native_kind()),
# rows (m x R integer matrix, column k resample k's rows), make (rows -> the resample's suffStat)).
boot_setup <- function(suffStat, indepTest, alpha, labels, p, missing_labels, missing_p, R, m,
                       dots) {
  lp <- resolve_labels(labels, p, missing_labels, missing_p, chatty = TRUE)
  p <- lp$p
  check_alpha(alpha)
  if (!is.numeric(R) || length(R) != 1 || is.na(R) || !is.finite(R) || R < 1 || R != round(R) ||
      R > .Machine$integer.max)
    abort_arg("R", "must be a whole number >= 1 (the number of resamples).")
  R <- as.integer(R)
  nm <- names(dots)
  if (length(dots) && (is.null(nm) || any(!nzchar(nm))))
    abort_arg("...", "must be named arguments of {.fn gpu_pc} (such as {.code skel.method = \"stable.fast\"}).")
  known <- setdiff(names(formals(gpu_pc)), c("suffStat", "indepTest", "alpha", "labels", "p", "cluster"))
  if (length(bad <- setdiff(nm, known)))
    abort_arg(bad[1], "is not an argument of {.fn gpu_pc} that each resample's call can take.")
  if (!is.function(indepTest)) abort_arg("indepTest", "must be a function(x, y, S, suffStat).")
  kind <- native_kind(indepTest)
  if (!is.list(suffStat)) abort_arg("suffStat", "must be a list holding the data to resample.")
  src <- switch(kind,
    gauss = {
      if (is.null(suffStat$data))
        abort_arg("suffStat", "holds no data to resample: give the n x p data as {.code suffStat = list(data = X)} (a correlation matrix {.code C} with {.code n} alone cannot be resampled).")
      X <- check_gauss_data(suffStat$data, NULL, p)$data
      list(n = nrow(X), make = function(rows) {
        Xb <- X[rows, , drop = FALSE]
        # the backend refuses a constant column; pcalg's test answers cor()'s NA with p = 1
        same <- colSums(Xb != rep(Xb[1, ], each = nrow(Xb))) == 0
        if (any(same)) list(C = suppressWarnings(stats::cor(Xb)), n = nrow(Xb)) else list(data = Xb)
      })
    },
    dis = , bin = {
      st <- check_discrete_stat(suffStat, p, binary = kind == "bin")
      dm <- st$dm
      list(n = nrow(dm), make = function(rows) {
        if (kind == "bin") list(dm = dm[rows, , drop = FALSE], adaptDF = st$adaptDF)
        else list(dm = dm[rows, , drop = FALSE], nlev = st$nlev, adaptDF = st$adaptDF)
      })
    },
    cmiknn = {
      X <- check_cmiknn_stat(suffStat, p)$data
      list(n = nrow(X), make = function(rows) {
        s <- suffStat
        s$data <- X[rows, , drop = FALSE]
        s
      })
    },
    abort_arg("indepTest", "must be {.code gaussCItest}, {.code disCItest}, {.code binCItest} or {.code cmiknnCItest}: the resamples are drawn from the data these tests read, and another test's {.arg suffStat} is not known to gpupc."))
  n <- src$n
  if (is.null(m)) m <- n
  if (!is.numeric(m) || length(m) != 1 || is.na(m) || !is.finite(m) || m != round(m) || m < 2 || m > n)
    abort_arg("m", "must be a whole number from 2 to the data's {n} rows (the rows of each resample), or NULL for all of them.")
  m <- as.integer(m)
  rows <- vapply(seq_len(R), function(k) sample.int(n, m, replace = TRUE), integer(m))
  # the first resample's suffStat checked as its gpu_pc() call will check it (cmiknnCItest's
  # knn against m rows), before any resample runs
  prepare_test(indepTest, src$make(rows[, 1]), p)
  list(labels = lp$labels, p = p, R = R, m = m, n = n, kind = kind, rows = rows, make = src$make)
}

# A rank's GPU for its resamples when the call names none and the backend is the GPU: its place
# on its host modulo the usable GPUs (rank_device_choice()), else NULL (gpu_pc()'s own choice).
boot_rank_devices <- function(cluster, setup, dots) {
  if (is.null(cluster) || "devices" %in% names(dots) || !is.null(getOption("gpupc.devices"))) return(NULL)
  backend <- dots$backend %||% getOption("gpupc.backend", "auto")
  choice <- resolve_backend(backend, setup$kind, setup$p,
                            n = if (setup$kind %in% c("dis", "bin")) setup$m else NA_real_)
  if (choice$backend != "cuda") return(NULL)
  mine <- rank_device_choice(cluster, choice)
  # unchanged (one usable GPU, or no place on the host known): gpu_pc()'s own choice
  if (identical(mine$devices, choice$devices)) NULL else mine$devices
}

# The resamples `ks` (1-based) run in order: list(counts (p x p integer: 2 per resample with
# a -> b directed, 1 per resample with a - b undirected), edges (per resample), seconds, last
# (gpupc_last_run() of the last one)).
boot_block <- function(setup, ks, fit_one, hooks, devices) {
  p <- setup$p
  counts <- matrix(0L, p, p)
  edges <- integer(length(ks))
  seconds <- double(length(ks))
  last <- NULL
  if (!length(ks)) return(list(counts = counts, edges = edges, seconds = seconds, last = NULL))
  on.exit(hooks$done(), add = TRUE)
  quiet <- .gpupc_state$no_progress
  on.exit(.gpupc_state$no_progress <- quiet, add = TRUE)
  said <- character(0)
  # each resample's warnings and messages alike up to their numbers (pcalg's n.min warning
  # counts the resample's own tests) shown once, at the first resample raising them
  once <- function(cnd, restart) {
    msg <- gsub("[0-9]+", "", conditionMessage(cnd))
    if (msg %in% said) invokeRestart(restart)
    said <<- c(said, msg)
  }
  hooks$tick(0, length(ks))
  for (i in seq_along(ks)) {
    t0 <- proc.time()[["elapsed"]]
    st <- setup$make(setup$rows[, ks[i]])
    # the resamples' own calls show no progress bar: this one counts them
    .gpupc_state$no_progress <- TRUE
    fit <- withCallingHandlers(fit_one(st, setup$labels, devices),
                               warning = function(w) once(w, "muffleWarning"),
                               message = function(m) once(m, "muffleMessage"))
    .gpupc_state$no_progress <- quiet
    rm(st)
    a <- graph_arcs(fit@graph, p)
    # column-major cells of (from, to) and of (to, from): an arc present both ways is undirected
    cell <- (a$to - 1) * p + a$from
    und <- cell %in% ((a$from - 1) * p + a$to)
    counts[cell] <- counts[cell] + ifelse(und, 1L, 2L)
    edges[i] <- as.integer(sum(!und) + sum(und) / 2)
    last <- .gpupc_state$last
    seconds[i] <- proc.time()[["elapsed"]] - t0
    if (isFALSE(hooks$tick(i, length(ks)))) signal_interrupt()
  }
  list(counts = counts, edges = edges, seconds = seconds, last = last)
}

# The arcs of a graphNEL of `p` nodes as 1-based node numbers (an undirected edge: both ways).
graph_arcs <- function(g, p) {
  to <- lapply(g@edgeL, function(e) as.integer(e$edges))
  list(from = rep.int(seq_len(p), lengths(to)), to = unlist(to, use.names = FALSE) %||% integer(0))
}

# bnlearn's bn.strength from the counts (2 per directed arc, 1 per undirected one) of `R`
# resamples, with bnlearn's arithmetic: each cell's count halved (exact) and divided by R, the
# strength of (a, b) the sum of its two cells, the direction its own cell's share, both set to 0
# or 1 within sqrt(eps) of them.
bn_strength <- function(counts, R, labels) {
  p <- length(labels)
  prob <- (counts / 2) / R
  from <- rep(seq_len(p), each = p)
  to <- rep(seq_len(p), times = p)
  keep <- from != to
  from <- from[keep]
  to <- to[keep]
  ab <- prob[cbind(from, to)]
  s <- ab + prob[cbind(to, from)]
  d <- ifelse(s == 0, 0, ab / s)
  tol <- sqrt(.Machine$double.eps)
  s[s < tol] <- 0
  s[s > 1 - tol] <- 1
  d[d < tol] <- 0
  d[d > 1 - tol] <- 1
  out <- data.frame(from = labels[from], to = labels[to], strength = s, direction = d,
                    stringsAsFactors = FALSE)
  structure(out, nodes = labels, method = "bootstrap", threshold = strength_threshold(s),
            class = c("bn.strength", "data.frame"))
}

# The significance threshold of Scutari and Nagarajan (2013) that bnlearn attaches to a
# bn.strength: the point p0 whose step function is nearest, in L1, to the empirical distribution
# of the strengths, and the strengths' type-1 quantile at p0.
strength_threshold <- function(strength) {
  if (!length(strength)) return(0)
  e <- stats::ecdf(strength)
  u <- stats::knots(e)
  l1 <- function(q) sum(diff(unique(c(0, u, 1))) * abs(e(unique(c(0, u[u < 1]))) - q))
  p0 <- stats::optimize(f = l1, interval = c(0, 1))$minimum
  if (l1(1) < l1(p0)) p0 <- 1
  if (l1(0) < l1(p0)) p0 <- 0
  stats::quantile(strength, p0, type = 1, names = FALSE)
}
