#' The PC algorithm, computed by gpupc: a drop-in for pcalg::pc()
#'
#' Takes exactly the arguments of [pcalg::pc()] (plus `backend` and `devices`) and returns the same `pcAlgo`
#' object. Replace `pc(` by `gpu_pc(` and nothing changes but the time. The skeleton is computed
#' by [gpu_skeleton()] (see there for tests, methods, differences from pcalg and GPU memory);
#' the edges are then oriented in the same Rust core, as pcalg orients them.
#'
#' @section Orientation:
#' With `u2pd = "relaxed"` (the default) the orientation is pcalg's `udag2pdagRelaxed()`
#' reproduced in Rust, mark for mark: the v-structures (with `solve.confl = TRUE` a v-structure
#' claimed from both ends of an edge gives pcalg's bidirected code 2), then rules 1-3 in
#' pcalg's order until nothing changes. With `conservative = TRUE` or `maj.rule = TRUE` the
#' unshielded triples are first checked as `pc.cons.intern(version.unf = c(2, 1))` checks them:
#' `gaussCItest`, `disCItest` and `binCItest` run natively on all cores (each distinct test once;
#' on the GPU when the skeleton ran there);
#' any other `indepTest` (an R function, `cmiknnCItest`) goes through pcalg's own
#' `pc.cons.intern()`, which calls it from R in pcalg's order. The separating
#' sets it rewrites are in the result's `sepset`, as in pcalg. Checks of more than a few seconds
#' show a progress bar (tests done of all the checks' tests, and the time so far) and stop at
#' Ctrl-C, as the skeleton's levels do.
#'
#' `u2pd = "rand"` and `u2pd = "retry"` draw from R's random numbers, so they call pcalg's own
#' `udag2pdag()` and `udag2pdagSpecial()` on the skeleton.
#'
#' `gpupc_last_run()$phases` has the orientation's seconds (`orient_s`), and
#' `gpupc_last_run()$orient` its counts (v-structure edges, rounds of the rules, triples and
#' tests of the conservative / majority rule) and parts.
#'
#' @section Inputs gpupc refuses on purpose:
#' Where `pc()` returns a result, `gpu_pc()` returns the same one, for every input pcalg
#' accepts: a `data.frame` or `Matrix` C (e.g. `Matrix::nearPD(C)$mat`), NA or NaN in C
#' (`cor()` of a constant column), `n = Inf` or a fractional `n`, `alpha = 1`, a negative or
#' fractional `m.max` or (method `"stable"`) a vector `m.max`, a fractional `p` and any
#' `numCores > 0` (threads are capped at the machine's cores). These inputs pcalg accepts
#' silently but gpupc refuses, each with an error that names the argument, because pcalg's
#' answer to them is an accident of its code (and one it refuses that gpupc accepts: with
#' `method = "stable.fast"`, pcalg's C++ fails on a data-frame or `Matrix` C; gpupc returns
#' pcalg's result for `as.matrix(C)`):
#'
#' | argument | refused | what pcalg does |
#' | --- | --- | --- |
#' | `suffStat$C` | not symmetric (beyond 1e-10), or an entry outside \[-1, 1\] or infinite | uses `C[x, y]` and `C[y, x]` as if equal; \|r\| > 1 gives NaN z-statistics, then edges removed or kept by accident |
#' | `suffStat$n` | negative, NA, or not one number; for stable.fast >= 2^32 (Inf included) | sqrt() of a negative gives p = 1 everywhere; its C++ casts n to a 32-bit unsigned integer (undefined beyond) |
#' | `suffStat$dm` | negative codes, codes above 254, NA, Inf, non-whole codes (binCItest: codes other than 0/1) | indexes tables with the codes (negative ones read other cells) or fails later |
#' | `suffStat$nlev` | not one whole number per variable, below 2 or above 255 | fails inside the test, or reads past its tables |
#' | `alpha` | not one number in (0, 1] (alpha = 0 or > 1) | alpha = 0 removes every edge (every p >= 0), alpha > 1 none |
#' | `NAdelete` | anything but TRUE or FALSE | NA fails at the first NA p-value only |
#' | `m.max` | more than one number with stable.fast | fails in C++ (stable: uses `m.max[1]` with a warning, as gpupc) |
#' | `fixedGaps`, `fixedEdges` | not a logical or 0/1 p x p symmetric matrix without NA | treats any non-zero number as TRUE; NA makes which() skip pairs |
#' | `labels` | NA, empty or duplicated names | fails while building the graphNEL ("invalid class graphNEL object") |
#' | `indepTest` | a test that returns anything but one number or logical | a string turns pMax into a character matrix; other values fail later |
#' | `numCores` | NA, zero, negative, or not a number | the same (stopifnot(numCores > 0)) |
#'
#' A run that would not fit in memory stops before any large allocation with an error of class
#' `gpupc_memory_error` naming `labels` or `p` and the bytes needed, where pcalg says
#' "cannot allocate vector of size ...". On the GPU, what the backend holds there (C or the
#' data, a level's lists, the contingency tables) is planned against the free device memory
#' first; a run that would not fit stops with an error of class `gpupc_memory_error` and
#' `gpupc_cuda_error` naming the argument that makes it large (`suffStat$C`, `suffStat$dm`,
#' `suffStat$sig_samples`) and the bytes; with `backend = "auto"` it runs on the CPU instead.
#'
#' @inheritParams pcalg::pc
#' @inheritParams gpu_skeleton
#' @param numCores CPU threads, as for [gpu_skeleton()]: `NULL` (the default) follows the
#'   `gpupc.threads` option or a core limit, else every core; a number `> 0` runs
#'   `floor(numCores)` threads, at most the machine's cores. Unlike pcalg, this applies to every
#'   skeleton method and to the conservative / majority-rule triple checks.
#' @return An object of class [pcalg::pcAlgo-class].
#' @seealso [gpu_skeleton()] for the tests, methods, memory and differences from pcalg;
#'   [gpupc_last_run()] for where the time went; [cmiknnCItest()] for non-linear data.
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' fit <- gpu_pc(suffStat = list(C = cor(X), n = nrow(X)), indepTest = gaussCItest,
#'               alpha = 0.01, labels = colnames(X), numCores = 2, backend = "cpu")
#' fit
#' # the same as pcalg:
#' ref <- pc(suffStat = list(C = cor(X), n = nrow(X)), indepTest = gaussCItest,
#'           alpha = 0.01, labels = colnames(X))
#' all.equal(as(fit, "amat"), as(ref, "amat"))
#'
#' # a random DAG: data simulated with pcalg, the conservative PC on the data instead of C
#' set.seed(42)
#' dag <- randomDAG(20, prob = 0.15)
#' Y <- rmvDAG(1000, dag)
#' cons <- gpu_pc(suffStat = list(data = Y), indepTest = gaussCItest, alpha = 0.01,
#'                p = ncol(Y), conservative = TRUE, numCores = 2, backend = "cpu")
#' table(as(cons, "amat"))
#'
#' # flow cytometry data (Sachs et al. 2005) bundled with gpupc
#' sachs <- read.csv(system.file("extdata", "sachs.csv.gz", package = "gpupc"),
#'                   check.names = FALSE)
#' fs <- gpu_pc(list(C = cor(log(sachs)), n = nrow(sachs)), gaussCItest, alpha = 1e-4,
#'              labels = colnames(sachs), numCores = 2, backend = "cpu")
#' fs
gpu_pc <- function(suffStat, indepTest, alpha, labels, p,
                   fixedGaps = NULL, fixedEdges = NULL, NAdelete = TRUE, m.max = Inf,
                   u2pd = c("relaxed", "rand", "retry"),
                   skel.method = c("stable", "original", "stable.fast"),
                   conservative = FALSE, maj.rule = FALSE, solve.confl = FALSE,
                   numCores = NULL, verbose = FALSE,
                   backend = getOption("gpupc.backend", "auto"),
                   devices = getOption("gpupc.devices", NULL), cluster = NULL) {
  cl <- match.call()
  clk <- gc_clock()
  on.exit(gc_clock_stop(clk))
  cluster <- cluster_first(cluster, list(
    suffStat = suffStat, indepTest = native_kind(indepTest), alpha = alpha,
    labels = if (missing(labels)) NULL else labels, p = if (missing(p)) NULL else p,
    fixedGaps = fixedGaps, fixedEdges = fixedEdges, NAdelete = NAdelete, m.max = m.max,
    u2pd = u2pd, skel.method = skel.method, conservative = conservative, maj.rule = maj.rule,
    solve.confl = solve.confl))
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p), chatty = TRUE)
  u2pd <- match.arg(u2pd)
  skel.method <- match.arg(skel.method)
  conservative <- check_flag(conservative, "conservative")
  maj.rule <- check_flag(maj.rule, "maj.rule")
  solve.confl <- check_flag(solve.confl, "solve.confl")
  if (u2pd != "relaxed") {
    if (conservative || maj.rule)
      abort_arg("u2pd", "must be \"relaxed\" for conservative PC and majority rule PC.")
    if (solve.confl)
      abort_arg("u2pd", "must be \"relaxed\" for the versions of PC using lists for the orientation rules (solve.confl).")
  }
  if (conservative && maj.rule) abort_arg("conservative", "and {.arg maj.rule} cannot both be TRUE: choose one.")

  # relaxed: the skeleton's sepsets stay in Rust; orientation reads (and the triple checks
  # rewrite) them there, and the p x p list is made once: while the orientation runs when no
  # triple check rewrites them, else at the end
  native <- u2pd == "relaxed"
  # the triple checks reuse the skeleton's test (its data read once)
  sk <- skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, lp$p, skel.method, m.max,
                      fixedGaps, fixedEdges, NAdelete, numCores, verbose, backend, p_arg = lp$arg,
                      defer_sepsets = native, devices = devices, keep_test = native && (conservative || maj.rule),
                      defer_graph = native,
                      cluster = cluster)
  skel <- if (native) sk$pcalgo else sk
  skel@call <- cl
  t0 <- proc.time()[["elapsed"]]
  info <- NULL
  sepsets <- NULL
  out <- if (!native) {
    switch(u2pd,
           rand = pcalg::udag2pdag(skel),
           retry = pcalg::udag2pdagSpecial(skel)$pcObj)
  } else {
    rule <- if (conservative) "conservative" else if (maj.rule) "majority" else "none"
    # the triple checks' tests run where the skeleton's ran
    o <- orient_pcalgo(skel, suffStat, indepTest, alpha, solve.confl = solve.confl, rule = rule,
                       numCores = numCores, verbose = verbose, sepsets = sk$sepsets,
                       backend = if (startsWith(sk$backend, "cuda")) "cuda" else "cpu",
                       fallback = identical(backend, "auto"), device = .gpupc_state$last$devices,
                       test_handle = sk$test, edges = sk$edges, sepset_made = sk$made)
    info <- o$info
    sepsets <- o$sepsets
    o$pcalgo
  }
  t1 <- proc.time()[["elapsed"]]
  if (!is.null(sepsets)) out <- attach_sepsets(out, sepsets, if (native) sk$made)
  last <- .gpupc_state$last
  if (!is.null(last)) {
    last$phases <- c(last$phases, orient_s = t1 - t0, sepset_s = proc.time()[["elapsed"]] - t1)
    last$orient <- info
    .gpupc_state$last <- last
  }
  record_gc(clk)
  out
}
