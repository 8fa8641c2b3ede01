#' Skeleton of the PC algorithm, computed by gpupc: a drop-in for pcalg::skeleton()
#'
#' Takes exactly the arguments of [pcalg::skeleton()] and returns the same `pcAlgo` object:
#' graph, every `sepset[[i]][[j]]`, `pMax`, `n.edgetests` and `max.ord` are what pcalg returns,
#' for `method = "stable"` (pcalg's R code) and `method = "stable.fast"` (pcalg's C++ code, with
#' its own conventions: `pMax` in the upper triangle with -1 elsewhere, sepsets at
#' `sepset[[larger]][[smaller]]`, integer `n.edgetests`). `method = "original"` depends on the
#' order edges are visited, so it is handed to pcalg itself (with a message).
#'
#' `pcalg::gaussCItest`, `pcalg::disCItest`, `pcalg::binCItest` and gpupc's [cmiknnCItest()] are
#' recognised by identity and run natively (in parallel on all cores, or on the GPU); any other `indepTest` is called from R
#' by the same level loop, one test at a time, so it still gives pcalg's answer.
#'
#' @section Differences from pcalg:
#' pcalg's `disCItest` (its internal `gSquareDis`) returns p = 1 for every conditioning set of
#' five or more variables, because it builds the strata from X's column instead of the
#' conditioning variables. gpupc computes the correct G^2 test there, so with `disCItest` and
#' levels >= 5 gpupc keeps edges that pcalg removes. Up to level 4 the results are pcalg's.
#'
#' With `gaussCItest`, a test whose conditioning set is so large that `n - |S| - 3 <= 0` has
#' z = 0, so p = 1 and the edge is removed, as in pcalg; gpupc warns when that happened.
#'
#' `verbose = TRUE` prints one line per level (`Order=`, remaining edges, tests, removed edges,
#' seconds and backend), not pcalg's line per test. A run of more than a few seconds shows a
#' progress bar; Ctrl-C stops it within a second with an error and leaves R working.
#'
#' @section GPU memory:
#' The CUDA backend keeps the correlation matrix on the device for the whole run (8 p^2 bytes:
#' 3.2 GB at p = 20000) plus per level a compacted adjacency (4 bytes per remaining directed
#' edge) and per-edge results (16 bytes per edge). A run that would not fit stops with an error
#' before any work, saying how much it needs.
#'
#' For `disCItest` and `binCItest` the data go to the device once as one byte per value
#' (n p bytes: 1 GB for 10^6 rows of 1000 variables), so a variable may have at most 255
#' levels (`nlev`; more is an error naming `suffStat$nlev`, on every backend). Each block of
#' GPU threads builds one test's contingency table in shared memory, or, when the table is
#' larger than 8192 cells, in its own slot of global memory (at most 0.9 n words of 4 bytes,
#' since a test only runs when n >= 10 df); when free memory would not hold a slot per block,
#' fewer blocks run at once. Both `method = "stable"` and `"stable.fast"` run on the GPU.
#'
#' With `backend = "auto"`, Gaussian data go to the GPU from p = 5000 on (`method = "stable"`),
#' discrete data when n p^2 / 2 >= 5e9 (LINK, 724 variables, at 20000 rows); smaller problems
#' finish on the CPU before a GPU would have started (the first CUDA call of an R session takes
#' seconds). An R-function `indepTest` always runs on the CPU.
#'
#' @inheritParams pcalg::skeleton
#' @param numCores `NULL` (the default) uses every core; a number limits the threads. Unlike
#'   pcalg, this applies to every method.
#' @param backend `"auto"` (GPU when one is usable and the problem is large enough, else CPU),
#'   `"cpu"` or `"cuda"`. Defaults to `getOption("gpupc.backend", "auto")`.
#' @return An object of class [pcalg::pcAlgo-class].
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' sk <- gpu_skeleton(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01,
#'                    labels = colnames(X), backend = "cpu")
#' sk
gpu_skeleton <- function(suffStat, indepTest, alpha, labels, p,
                         method = c("stable", "original", "stable.fast"), m.max = Inf,
                         fixedGaps = NULL, fixedEdges = NULL, NAdelete = TRUE,
                         numCores = NULL, verbose = FALSE,
                         backend = getOption("gpupc.backend", "auto")) {
  cl <- match.call()
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p))
  method <- match.arg(method)
  skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, lp$p, method, m.max, fixedGaps,
                fixedEdges, NAdelete, numCores, verbose, backend)
}

skeleton_impl <- function(cl, suffStat, indepTest, alpha, labels, p, method, m.max, fixedGaps,
                          fixedEdges, NAdelete, numCores, verbose, backend) {
  alpha <- check_alpha(alpha)
  m.max <- check_m_max(m.max)
  NAdelete <- check_flag(NAdelete, "NAdelete")
  verbose <- check_flag(as.logical(verbose), "verbose")
  threads <- check_threads(numCores)
  gaps <- check_fixed(fixedGaps, p, "fixedGaps")
  fixed <- check_fixed(fixedEdges, p, "fixedEdges")
  if (method == "original") {
    message("gpu_skeleton(): method = \"original\" depends on the order edges are visited; running pcalg::skeleton() itself")
    sk <- pcalg::skeleton(suffStat, indepTest, alpha, labels = labels, method = "original",
                          m.max = m.max, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
                          NAdelete = NAdelete, numCores = 1, verbose = verbose)
    sk@call <- cl
    return(sk)
  }
  t0 <- proc.time()[["elapsed"]]
  test <- prepare_test(indepTest, suffStat, p)
  choice <- resolve_backend(backend, test$kind, method, p,
                            n = if (is.null(test$data$dm)) NA_real_ else nrow(test$data$dm))
  # NULL: no gaps / no fixed edges (Rust starts from the complete / empty graph)
  start <- if (is.null(gaps)) NULL else `diag<-`(!gaps, FALSE)
  run <- function(b) {
    rs_skeleton(test$kind, test$data, test$rtest, p, alpha, start, fixed, NAdelete, m.max,
                method, b, threads, level_hooks(verbose, method, b))
  }
  t1 <- proc.time()[["elapsed"]]
  res <- run(choice$backend)
  if (!is.null(res$error) && res$kind == "cuda" && backend == "auto") {
    message("gpupc: the GPU failed (", res$error, "); running on the CPU instead")
    res <- run("cpu")
  }
  if (!is.null(res$error)) raise_core_error(res)
  t2 <- proc.time()[["elapsed"]]
  if (verbose) cat(sprintf("gpupc: backend %s (%s)\n", res$backend, choice$why))
  if (test$kind == "gauss") warn_small_n(test$data$n, res$levels)
  out <- as_pcalgo(res, labels, cl)
  ph <- unlist(res$phases)
  .gpupc_state$last <- list(backend = res$backend, why = choice$why, levels = as.data.frame(res$levels),
                            details = res$extra,
                            phases = c(r_checks_s = t1 - t0, ph,
                                       r_output_s = max(0, t2 - t1 - sum(ph)),
                                       graph_object_s = proc.time()[["elapsed"]] - t2))
  out
}

.gpupc_state <- new.env(parent = emptyenv())

#' Details of the last gpupc run
#'
#' What the last [gpu_skeleton()] or [gpu_pc()] call in this session ran on, and where its time
#' went, kept outside the `pcAlgo` object so that the object stays identical to pcalg's.
#'
#' @return A list: `backend` (e.g. `"cpu (16 threads)"`), `why` (why that backend was chosen) and
#'   `levels`, a data frame with one row per level: `level`, `edges` (at the level's start),
#'   `tests`, `removed`, `seconds` (the whole level), `plan_seconds` (listing each edge's
#'   tests) and `backend_seconds` (running them); and `details`, the backend's own figures (for
#'   the GPU: NVRTC compile seconds, upload, kernel and transfer seconds, launches); and
#'   `phases`, the call's wall seconds by part: `r_checks_s` (checking the arguments in R),
#'   `input_s` (reading them into the Rust core), `setup_s` (opening the backend: for the GPU,
#'   the device, NVRTC and the upload), `search_s` (the level loop), `r_output_s` (building
#'   pMax and the sepsets for R) and `graph_object_s` (the graphNEL and the `pcAlgo` object).
#'   `NULL` before the first run.
#' @export
gpupc_last_run <- function() .gpupc_state$last

raise_core_error <- function(res) {
  cls <- c(paste0("gpupc_", res$kind, "_error"), "gpupc_error")
  msg <- res$error
  if (res$kind == "invalid") {
    arg <- sub("^invalid argument '([^']+)'.*$", "\\1", msg)
    cli::cli_abort(c("{.arg {arg}}: {sub('^invalid argument [^:]+: ', '', msg)}"),
                   class = c("gpupc_invalid_argument", cls), call = NULL)
  }
  if (res$kind == "interrupt") cli::cli_abort("gpupc: interrupted by the user", class = cls, call = NULL)
  if (res$kind == "test") cli::cli_abort(c("{.arg indepTest} failed.", x = "{msg}"), class = cls, call = NULL)
  cli::cli_abort(c("gpupc: {msg}"), class = cls, call = NULL)
}

warn_small_n <- function(n, levels) {
  hit <- levels$level[levels$level >= n - 3 & levels$tests > 0]
  if (length(hit))
    cli::cli_warn(c("{.arg suffStat$n} = {n} is too small for conditioning sets of size >= {min(hit)}:",
                    i = "gaussCItest gives z = 0 (p = 1) there, as in pcalg, so those tests remove edges."))
}

# The R callbacks the Rust level loop calls on the main thread: verbose lines and a cli
# progress bar for levels that take a while.
level_hooks <- function(verbose, method, backend) {
  state <- new.env()  # cli evaluates its format strings here, so it needs a normal parent
  state$bar <- NULL
  list(
    level_start = function(level, edges, planned) {
      state$level <- level
      if (verbose) {
        if (method == "stable") cat("Order=", level, "; remaining edges:", 2 * edges, "\n", sep = "")
        else cat("Order = ", level, "; remaining edges: ", edges, "\n", sep = "")
      }
    },
    tick = function(done, total) {
      # a broken progress display must never stop a run
      try(silent = TRUE, {
        if (is.null(state$bar)) {
          # auto_terminate = FALSE: the watcher may tick again after the level reached its total
          state$bar <- cli::cli_progress_bar(sprintf("gpupc level %d", state$level), total = total,
                                             auto_terminate = FALSE, .auto_close = FALSE, .envir = state)
        }
        cli::cli_progress_update(id = state$bar, set = done, .envir = state)
      })
    },
    level_end = function(level, tests, removed, seconds) {
      if (!is.null(state$bar)) {
        try(cli::cli_progress_done(id = state$bar, .envir = state), silent = TRUE)
        state$bar <- NULL
      }
      if (verbose) cat(sprintf("  level %d: %.0f tests, %.0f edges removed, %.3f s (%s)\n",
                               level, tests, removed, seconds, backend))
    }
  )
}

as_pcalgo <- function(res, labels, cl) {
  Gobject <- if (nrow(res$edges) == 0) {
    new("graphNEL", nodes = labels)
  } else {
    undirected_graphnel(res$edges, labels)
  }
  new("pcAlgo", graph = Gobject, call = cl, n = integer(0), max.ord = as.integer(res$max.ord),
      n.edgetests = res$n.edgetests, sepset = res$sepset, pMax = res$pMax,
      zMin = matrix(NA, 1, 1))
}
