#' FCI and RFCI, computed by gpupc: drop-ins for pcalg::fci() and pcalg::rfci()
#'
#' Take exactly the arguments of [pcalg::fci()] and [pcalg::rfci()] (plus `backend`, `devices`
#' and `cluster`) and return the same `fciAlgo` object. Replace `fci(` by `gpu_fci(` (or `rfci(` by
#' `gpu_rfci(`) and nothing changes but the time.
#'
#' The skeleton is computed by gpupc, as [gpu_skeleton()] computes it (native tests in parallel
#' on all `numCores` threads or on the GPU; any other `indepTest` called from R in pcalg's
#' order).
#'
#' FCI's Possible-D-SEP stage, the tests pcalg's `pdsep()` runs one at a time in R, runs in
#' gpupc's Rust core for `gaussCItest`, `disCItest`, `binCItest` and `cmiknnCItest` (on the CPU):
#' the same arrowheads,
#' Possible-D-SEP sets, conditioning sets in pcalg's order and first success per edge, with the
#' tests of all of a node's edges in batches on the skeleton's test (its threads, or its GPU);
#' the counts (`n.edgetestsPDSEP`, `max.ordPDSEP`) are those of pcalg's sequential loop. Any other
#' `indepTest` (an R function) goes through pcalg's own `pdsep()`, as does `biCC
#' = TRUE` with labels that are numbers other than 1..p (pcalg matches an edge to its
#' biconnected component by `as.numeric()` of the labels).
#'
#' The conservative / majority-rule checks after that, pcalg's `pc.cons.intern()` (with
#' `version.unf = c(1, 1)` after Possible-D-SEP, `c(2, 1)` without, as `fci()` calls it), run in
#' gpupc's Rust core for the same four tests: each unshielded triple's tests (given every subset
#' of its ends' neighbours) in parallel on the skeleton's test (its threads, or its GPU;
#' `cmiknnCItest`'s on the CPU), with the same unfaithful triples and the same rewritten `sepset`
#' entries (`verbose` prints a summary line instead of pcalg's trace of every test); pcalg's own
#' for any other `indepTest`. FCI's
#' orientation, pcalg's `udag2pag()` (the JCI marks, the colliders from the sepsets and
#' `unfVect`, rules 1-10 as `rules` selects them), runs in gpupc's Rust core: the same marks, set
#' in pcalg's order, so the same PAG also where the rules conflict (a graph and sepsets that are
#' not those of a faithful distribution). With `verbose = TRUE` pcalg's `udag2pag()` runs
#' instead, for the trace it prints.
#'
#' RFCI's stages after its skeleton, pcalg's `find.unsh.triple()`, `rfci.vStruc()` (the
#' unshielded triples' dependence checks, which may remove edges, and the conservative or
#' majority-rule `checkTriple()`) and `udag2apag()` (rules 1-10, rule 4 testing the edges of
#' each discriminating path), run in gpupc's Rust core for the same four native tests: the same
#' tests in pcalg's order, one at a time on the CPU (each depends on the edges and sepsets the
#' previous ones changed), with gaussCItest in R's arithmetic. Any other `indepTest`, and
#' `verbose = TRUE` (whose printed trace is pcalg's), go through pcalg's functions.
#'
#' With `cluster = "mpi"` the skeleton's levels are split over the ranks of an MPI job as in
#' [gpu_skeleton()] (the ranks first compare digests of all the inputs that shape the result);
#' the stages after it run whole on every rank, from the same skeleton and inputs, so every rank
#' returns the one-process object.
#'
#' `gpupc_last_run()` has the seconds of the Possible-D-SEP stage (`phases["pdsep_s"]`) and of
#' the rest (`phases["orient_s"]`), the Possible-D-SEP stage's tests (`pdsep`), and for a native
#' RFCI run the tests of its later stages (`rfci`: `tests_vstruc`, `tests_rules`, `evaluator`);
#' after native conservative / majority-rule checks their counts and seconds (`triples`).
#'
#' pcalg's quirks are kept: `max.ordPDSEP` is the order the last edge that was tested ended at
#' (not the largest), `n.edgetestsPDSEP` stops at that order, `pMax` is raised only at `[x, y]`
#' of x's turn, and `allPdsep[[x]]` holds the last edge's set and y.
#'
#' Every slot of the result is what pcalg returns for the same call (`amat` with its dimnames,
#' `sepset`, `pMax`, `n.edgetests`, `max.ord`, the Possible-D-SEP counts and `allPdsep`), except
#' `call`, which records the call of `gpu_fci()` / `gpu_rfci()` (with `backend` and `devices`
#' when given). `pMax` holds the skeleton's p-values as [gpu_skeleton()] computes them (equal to
#' pcalg's to floating-point rounding).
#'
#' The later stages call `indepTest` with `suffStat` as pcalg does, so gaussCItest needs
#' `suffStat$C` here: gpupc's `suffStat = list(data = X)` is refused.
#'
#' @inheritParams pcalg::fci
#' @inheritParams gpu_skeleton
#' @param numCores CPU threads of the skeleton (and of the native stages), as for
#'   [gpu_skeleton()]: `NULL` (the default, as in [gpu_pc()]) follows the `gpupc.threads`
#'   option or a core limit, else every core; a number `> 0` runs `floor(numCores)` threads, at
#'   most the machine's cores. The result does not depend on it.
#' @return An object of class [pcalg::fciAlgo-class].
#' @seealso [gpu_pc()], [gpu_skeleton()]; [gpupc_last_run()] for where the time went.
#' @export
#' @examples
#' library(pcalg)
#' set.seed(7)
#' dag <- randomDAG(12, prob = 0.3)
#' X <- rmvDAG(1000, dag)[, -c(2, 5)]   # two variables unobserved
#' st <- list(C = cor(X), n = nrow(X))
#' f <- gpu_fci(st, gaussCItest, alpha = 0.01, p = ncol(X), numCores = 2, backend = "cpu")
#' f
#' # the same as pcalg:
#' ref <- fci(st, gaussCItest, alpha = 0.01, p = ncol(X))
#' identical(f@amat, ref@amat)
#' r <- gpu_rfci(st, gaussCItest, alpha = 0.01, p = ncol(X), numCores = 2, backend = "cpu")
#' identical(r@amat, rfci(st, gaussCItest, alpha = 0.01, p = ncol(X))@amat)
gpu_fci <- function(suffStat, indepTest, alpha, labels, p,
                    skel.method = c("stable", "original", "stable.fast"),
                    type = c("normal", "anytime", "adaptive"), fixedGaps = NULL,
                    fixedEdges = NULL, NAdelete = TRUE, m.max = Inf, pdsep.max = Inf,
                    rules = rep(TRUE, 10), doPdsep = TRUE, biCC = FALSE, conservative = FALSE,
                    maj.rule = FALSE, numCores = NULL, selectionBias = TRUE,
                    jci = c("0", "1", "12", "123"), contextVars = NULL, verbose = FALSE,
                    backend = getOption("gpupc.backend", "auto"),
                    devices = getOption("gpupc.devices", NULL), cluster = NULL) {
  cl <- match.call()
  clk <- gc_clock()
  on.exit(gc_clock_stop(clk))
  cluster <- cluster_first(cluster, list(
    suffStat = suffStat, indepTest = native_kind(indepTest), alpha = alpha,
    labels = if (missing(labels)) NULL else labels, p = if (missing(p)) NULL else p,
    skel.method = skel.method, type = type, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
    NAdelete = NAdelete, m.max = m.max, pdsep.max = pdsep.max, rules = rules, doPdsep = doPdsep,
    biCC = biCC, conservative = conservative, maj.rule = maj.rule, selectionBias = selectionBias,
    jci = jci, contextVars = contextVars))
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p), chatty = TRUE)
  p <- lp$p
  skel.method <- match.arg(skel.method)
  type <- match.arg(type)
  # pcalg's checks, in its order and words
  if (type == "anytime" && isTRUE(m.max[1] == Inf))
    abort_arg("m.max", "must be finite for {.code type = \"anytime\"}: To use the Anytime FCI you must specify a finite 'm.max'.")
  if (type == "adaptive" && !isTRUE(m.max[1] == Inf))
    abort_arg("m.max", "must be Inf for {.code type = \"adaptive\"}: To use the Adaptive Anytime FCI you must not specify 'm.max'.")
  conservative <- check_flag(conservative, "conservative")
  maj.rule <- check_flag(maj.rule, "maj.rule")
  if (conservative && maj.rule)
    abort_arg("conservative", "and {.arg maj.rule} cannot both be TRUE: Choose either conservative FCI or majority rule FCI")
  jci <- match.arg(jci)
  contextVars <- check_context_vars(contextVars, p)
  doPdsep <- check_flag(doPdsep, "doPdsep")
  biCC <- check_flag(biCC, "biCC")
  selectionBias <- check_flag(selectionBias, "selectionBias")
  rules <- check_rules(rules)
  if (!is.numeric(pdsep.max) || length(pdsep.max) != 1 || is.na(pdsep.max))
    abort_arg("pdsep.max", "must be a single number (or Inf).")
  # pcalg stops here only after all the tests ran
  if (selectionBias && jci != "0")
    abort_arg("selectionBias", "must be FALSE with {.arg jci}: The current JCI implementation does not support selection bias (use selectionBias=FALSE instead).")
  check_r_stat(suffStat, indepTest)
  # JCI "123": the context variables stay adjacent, in the skeleton and the Possible-D-SEP tests
  if (jci == "123" && length(contextVars) > 0) {
    if (is.null(fixedEdges)) fixedEdges <- matrix(FALSE, p, p)
    fixedEdges[contextVars, contextVars] <- TRUE
  }
  if (verbose) cat("Compute Skeleton\n================\n")
  # the Possible-D-SEP tests and the conservative / majority-rule checks of a native test run in
  # Rust, on the skeleton's own test (its data read once), which the one stage hands on to the
  # next; any other test is called by pcalg's pdsep() and pc.cons.intern() from R
  native_test <- native_kind(indepTest) %in% c("gauss", "dis", "bin", "cmiknn")
  native <- doPdsep && native_test && !is.null(bicc_mode(biCC, lp$labels))
  native_checks <- (conservative || maj.rule) && native_test
  keep <- native || native_checks
  sk <- skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, p, skel.method, m.max,
                      fixedGaps, fixedEdges, NAdelete, numCores, verbose, backend,
                      p_arg = lp$arg, devices = devices, defer_sepsets = keep, keep_test = keep,
                      cluster = cluster)
  skel <- if (!keep) sk else if (is.null(sk$sepsets)) sk$pcalgo else attach_sepsets(sk$pcalgo, sk$sepsets, sk$made)
  skel@call <- cl
  test_handle <- if (keep) sk$test
  # suffStat as the Rust stages read it (checked once more in R, as the skeleton checked it)
  later_test <- if (keep) prepare_test(indepTest, suffStat, p)
  on_gpu <- keep && startsWith(sk$backend, "cuda")
  # the checks after Possible-D-SEP list only the ambiguous triples (version.unf = c(1, 1)),
  # without it also those no test found independent (c(2, 1)), as pcalg's fci() asks
  checks <- function(G, sepset, version) {
    if (verbose) cat("\nCheck v-structures conservatively\n=================================\n")
    native_fci_checks(G, sepset, later_test, test_handle, alpha,
                      maj.rule, version, numCores, verbose, backend = if (on_gpu) "cuda" else "cpu",
                      fallback = identical(backend, "auto"), device = .gpupc_state$last$devices)
  }
  t0 <- proc.time()[["elapsed"]]
  details <- NULL
  triples <- NULL
  G <- methods::as(skel@graph, "matrix")
  sepset <- skel@sepset
  pMax <- skel@pMax
  tripleList <- NULL
  if (doPdsep) {
    if (verbose) cat("\nCompute PDSEP\n=============\n")
    pd.m.max <- if (type == "adaptive") skel@max.ord else m.max
    pd <- if (native) {
      native_pdsep(skel, later_test, test_handle, alpha, pd.m.max, pdsep.max,
                   NAdelete, biCC, fixedEdges, numCores, verbose,
                   backend = if (on_gpu) "cuda" else "cpu",
                   fallback = identical(backend, "auto"), device = .gpupc_state$last$devices,
                   keep_test = native_checks)
    } else {
      pcalg::pdsep(skel@graph, suffStat, indepTest = indepTest, p = p, sepset = sepset,
                   alpha = alpha, pMax = pMax, m.max = pd.m.max, pdsep.max = pdsep.max,
                   NAdelete = NAdelete, unfVect = c(), biCC = biCC, fixedEdges = fixedEdges,
                   verbose = verbose)
    }
    details <- if (native) pd$details else list(tests = sum(pd$n.edgetests), evaluator = "pcalg::pdsep (R)")
    t1 <- proc.time()[["elapsed"]]
    G <- pd$G
    sepset <- pd$sepset
    pMax <- pd$pMax
    allPdsep <- pd$allPdsep
    n.edgetestsPD <- pd$n.edgetests
    max.ordPD <- pd$max.ord
    # the stage took the kept test; it hands it on when the checks follow
    if (native) test_handle <- pd$test_handle
    if (native_checks) {
      triples <- checks(G, sepset, 1L)
      tripleList <- triples$unfTripl
      sepset <- triples$sepset
    } else if (conservative || maj.rule) {
      if (verbose) cat("\nCheck v-structures conservatively\n=================================\n")
      # pcalg checks the triples of the graph after Possible-D-SEP, with the skeleton's counts
      after <- methods::new("pcAlgo", graph = methods::as(G, "graphNEL"), call = cl, n = integer(0),
                            max.ord = as.integer(skel@max.ord), n.edgetests = skel@n.edgetests,
                            sepset = sepset, pMax = pMax, zMin = matrix(NA, 1, 1))
      ci <- pcalg::pc.cons.intern(after, suffStat, indepTest, alpha, verbose = verbose,
                                  version.unf = c(1, 1), maj.rule = maj.rule)
      tripleList <- ci$unfTripl
      sepset <- ci$sk@sepset
    }
  } else {
    t1 <- t0
    n.edgetestsPD <- 0
    max.ordPD <- 0
    allPdsep <- vector("list", p)
    if (native_checks) {
      triples <- checks(G, sepset, 2L)
      tripleList <- triples$unfTripl
      sepset <- triples$sepset
    } else if (conservative || maj.rule) {
      if (verbose) cat("\nCheck v-structures conservatively\n=================================\n")
      ci <- pcalg::pc.cons.intern(skel, suffStat, indepTest, alpha, verbose = verbose,
                                  version.unf = c(2, 1), maj.rule = maj.rule)
      tripleList <- ci$unfTripl
      sepset <- ci$sk@sepset
    }
  }
  if (!selectionBias) rules[5:7] <- FALSE
  if (verbose) cat("\nDirect edges:\n=============\nUsing rules:", which(rules), "\nCompute collider:\n")
  # the orientation in Rust; verbose keeps pcalg's own, for the trace it prints
  amat <- if (verbose) {
    pcalg::udag2pag(pag = G, sepset, rules = rules, unfVect = tripleList, jci = jci,
                    contextVars = contextVars, verbose = TRUE)
  } else {
    native_udag2pag(G, sepset, rules = rules, unfVect = tripleList, jci = jci,
                    contextVars = contextVars)
  }
  colnames(amat) <- rownames(amat) <- lp$labels
  out <- methods::new("fciAlgo", amat = amat, call = cl, n = integer(0),
                      max.ord = as.integer(skel@max.ord), max.ordPDSEP = as.integer(max.ordPD),
                      n.edgetests = skel@n.edgetests, n.edgetestsPDSEP = n.edgetestsPD,
                      sepset = sepset, pMax = pMax, allPdsep = allPdsep)
  record_stages(c(pdsep_s = t1 - t0, orient_s = proc.time()[["elapsed"]] - t1), details,
                triples = triples$details)
  record_gc(clk)
  out
}

# pcalg's pc.cons.intern() as fci() calls it, for a native test: the checks of every unshielded
# triple of the graph `G` (p x p adjacency) in Rust (rs_fci_triples(): pc-core's
# orient/triples.rs, the tests on `numCores` threads or the skeleton's GPU), with `sepset` (R's
# list) rewritten as pc.cons.intern() rewrites it. `version`: version.unf[1] (1 after
# Possible-D-SEP, 2 without). `test`: prepare_test()'s; `test_handle`: the kept test, taken over
# (NULL: read from `test`). Returns list(unfTripl, sepset, details).
native_fci_checks <- function(G, sepset, test, test_handle, alpha, maj.rule, version, numCores,
                              verbose, backend = "cpu", fallback = TRUE, device = NULL) {
  p <- nrow(G)
  edges <- unname(which(G != 0 & upper.tri(G), arr.ind = TRUE))
  storage.mode(edges) <- "integer"
  data <- test$data
  data$test_handle <- test_handle
  if (!is.null(device)) data$devices <- device[1]
  hooks <- progress_hooks("gpupc triples", "tests")
  on.exit(hooks$done())
  settings <- list(p = as.integer(p), alpha = as.double(alpha),
                   rule = if (maj.rule) "majority" else "conservative", version = as.integer(version),
                   threads = as.integer(check_threads(numCores)), backend = backend,
                   fallback = isTRUE(fallback), hooks = hooks)
  res <- rs_fci_triples(edges, sepset, test$kind, data, settings)
  hooks$done()
  if (!is.null(res$gpu_failed)) gpu_fallback_message(res$gpu_failed, " in the triple checks")
  # checkTriple's disCItest / binCItest calls warn as the skeleton's do
  if (isTRUE(res$small_n[1] > 0))
    warn_small_n_discrete(list(small_n_tests = res$small_n[1], small_n_min = res$small_n[2], n = res$small_n[3]))
  pairs <- res$pairs
  for (k in seq_len(nrow(pairs))) {
    sepset[[pairs[k, 1]]][[pairs[k, 2]]] <- res$sep_ac[[k]]
    sepset[[pairs[k, 2]]][[pairs[k, 1]]] <- res$sep_ca[[k]]
  }
  st <- res$stats
  if (verbose)
    cat(sprintf("gpupc: %s rule: %.0f unshielded triples, %.0f tests, %.0f ambiguous, %.0f unfaithful (%s%s)\n",
                settings$rule, st$triples, st$tests, st$ambiguous, st$unfaithful, st$evaluator,
                if (isTRUE(st$data_reused)) ", on the skeleton's device data" else ""))
  # pc.cons.intern()'s unfTripl: a vector of NA cut to the triples found, so logical(0) for none
  unfTripl <- if (length(res$unf)) res$unf else logical(0)
  list(unfTripl = unfTripl, sepset = sepset,
       details = list(stats = st, phases = unlist(res$seconds)))
}

# pcalg's pdsep() for a native test, its tests in Rust (rs_pdsep(): pc-core's fci/pdsep.rs, in
# batches on `numCores` threads or the skeleton's GPU), the result written into the skeleton's
# own objects as pdsep() writes them. `test`: prepare_test()'s; `test_handle`: the skeleton's
# kept test. Returns pdsep()'s list plus `details` (tests run, where, seconds) for
# gpupc_last_run() and, with `keep_test`, `test_handle`: the test, for the triple checks.
native_pdsep <- function(skel, test, test_handle, alpha, m.max, pdsep.max, NAdelete, biCC,
                         fixedEdges, numCores, verbose, backend = "cpu", fallback = TRUE,
                         device = NULL, keep_test = FALSE) {
  p <- length(skel@graph@nodes)
  edges <- skeleton_edges(skel@graph)
  storage.mode(edges) <- "integer"
  fixed <- NULL
  if (!is.null(fixedEdges)) {
    fixed <- unname(which(fixedEdges != 0, arr.ind = TRUE))
    storage.mode(fixed) <- "integer"
  }
  data <- test$data
  data$test_handle <- test_handle
  if (!is.null(device)) data$devices <- device[1]
  hooks <- progress_hooks("gpupc pdsep", "tests")
  on.exit(hooks$done())
  settings <- list(p = as.integer(p), alpha = as.double(alpha), m_max = as.double(m.max[1]),
                   pdsep_max = as.double(pdsep.max), na_delete = isTRUE(NAdelete),
                   bicc = bicc_mode(biCC, skel@graph@nodes, warn = TRUE), threads = as.integer(check_threads(numCores)),
                   backend = backend, fallback = isTRUE(fallback), hooks = hooks,
                   keep_test = isTRUE(keep_test))
  res <- rs_pdsep(edges, skel@sepset, skel@pMax, fixed, test$kind, data, settings)
  hooks$done()
  if (!is.null(res$gpu_failed)) gpu_fallback_message(res$gpu_failed, " in the Possible-D-SEP tests")
  G <- methods::as(skel@graph, "matrix") != 0
  sepset <- skel@sepset
  pMax <- skel@pMax
  gone <- res$removed
  G[gone] <- FALSE
  G[gone[, 2:1, drop = FALSE]] <- FALSE
  for (k in seq_len(nrow(gone))) {
    S <- res$sets[[k]]
    # with biCC, pcalg's sets of two or more come from combn() over a numeric intersect()
    if (biCC && res$ord[k] >= 2) S <- as.double(S)
    sepset[[gone[k, 1]]][[gone[k, 2]]] <- S
    sepset[[gone[k, 2]]][[gone[k, 1]]] <- S
  }
  pMax[res$pmax_cells] <- res$pmax_values
  allPdsep <- res$all_pdsep
  # with biCC pcalg's allPdsep entries are numeric (intersect() with RBGL's numeric components)
  if (biCC) allPdsep <- lapply(allPdsep, function(v) if (is.null(v)) v else as.double(v))
  if (verbose)
    cat(sprintf("gpupc: Possible-D-SEP: %.0f tests, %d edges removed (%s)\n", res$tests, nrow(gone), res$evaluator))
  list(G = G, sepset = sepset, pMax = pMax, allPdsep = allPdsep, max.ord = res$max_ord,
       n.edgetests = res$n_edgetests, test_handle = res$test_handle,
       details = list(tests = res$tests, removed = nrow(gone), evaluator = res$evaluator,
                      phases = unlist(res$seconds)))
}

#' @rdname gpu_fci
#' @inheritParams pcalg::rfci
#' @export
gpu_rfci <- function(suffStat, indepTest, alpha, labels, p,
                     skel.method = c("stable", "original", "stable.fast"), fixedGaps = NULL,
                     fixedEdges = NULL, NAdelete = TRUE, m.max = Inf, rules = rep(TRUE, 10),
                     conservative = FALSE, maj.rule = FALSE, numCores = NULL, verbose = FALSE,
                     backend = getOption("gpupc.backend", "auto"),
                     devices = getOption("gpupc.devices", NULL), cluster = NULL) {
  cl <- match.call()
  clk <- gc_clock()
  on.exit(gc_clock_stop(clk))
  cluster <- cluster_first(cluster, list(
    suffStat = suffStat, indepTest = native_kind(indepTest), alpha = alpha,
    labels = if (missing(labels)) NULL else labels, p = if (missing(p)) NULL else p,
    skel.method = skel.method, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
    NAdelete = NAdelete, m.max = m.max, rules = rules, conservative = conservative,
    maj.rule = maj.rule))
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p), chatty = TRUE)
  p <- lp$p
  skel.method <- match.arg(skel.method)
  conservative <- check_flag(conservative, "conservative")
  maj.rule <- check_flag(maj.rule, "maj.rule")
  if (conservative && maj.rule)
    abort_arg("conservative", "and {.arg maj.rule} cannot both be TRUE: Can only choose one of conservative or majority rule RFCI")
  rules <- check_rules(rules)
  check_r_stat(suffStat, indepTest)
  if (verbose) cat("Compute Skeleton\n================\n")
  # the stages after the skeleton run in Rust for a native test (pcalg's printed trace, with
  # verbose, only from pcalg's own functions)
  native <- !isTRUE(as.logical(verbose)) && native_kind(indepTest) %in% c("gauss", "dis", "bin", "cmiknn")
  sk <- skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, p, skel.method, m.max,
                      fixedGaps, fixedEdges, NAdelete, numCores, verbose, backend,
                      p_arg = lp$arg, devices = devices, defer_sepsets = native, keep_test = native,
                      cluster = cluster)
  ts <- proc.time()[["elapsed"]]
  skel <- if (!native) sk else if (is.null(sk$sepsets)) sk$pcalgo else attach_sepsets(sk$pcalgo, sk$sepsets, sk$made)
  t0 <- proc.time()[["elapsed"]]
  # the sepset list made from the skeleton's handle here (skeleton_impl() timed any other)
  secs <- if (native && !is.null(sk$sepsets)) c(sepset_s = t0 - ts) else NULL
  if (native) {
    res <- native_rfci(skel, prepare_test(indepTest, suffStat, p), sk$test, alpha, rules,
                       conservative, maj.rule, numCores)
    details <- res$details
  } else {
    A <- methods::as(skel@graph, "matrix")
    ut <- pcalg::find.unsh.triple(A, check = FALSE)
    vs <- pcalg::rfci.vStruc(suffStat, indepTest, alpha, skel@sepset, A, unshTripl = ut$unshTripl,
                             unshVect = ut$unshVect, conservative = conservative || maj.rule,
                             version.unf = c(1, 1), maj.rule = maj.rule, verbose = verbose)
    if (verbose) cat("\nDirect egdes:\n=============\nUsing rules:", which(rules), "\n")
    res <- pcalg::udag2apag(vs$amat, suffStat, indepTest, alpha, vs$sepset, rules = rules,
                            unfVect = vs$unfTripl, verbose = verbose)
    details <- NULL
  }
  amat <- res$graph
  colnames(amat) <- rownames(amat) <- lp$labels
  out <- methods::new("fciAlgo", amat = amat, call = cl, n = integer(0),
                      max.ord = as.integer(skel@max.ord), max.ordPDSEP = 0L,
                      n.edgetests = skel@n.edgetests, n.edgetestsPDSEP = 0,
                      sepset = res$sepset, pMax = skel@pMax, allPdsep = vector("list", p))
  record_stages(c(secs, orient_s = proc.time()[["elapsed"]] - t0), rfci = details)
  record_gc(clk)
  out
}

# pcalg's find.unsh.triple(), rfci.vStruc() and udag2apag() for a native test, in Rust
# (rs_rfci(): pc-core's fci/rfci.rs and fci/apag.rs, the tests one at a time in pcalg's order on
# the skeleton's kept test, on the CPU), the sepset writes repeated on the skeleton's list in
# pcalg's order. Returns udag2apag()'s list (graph, sepset) plus `details` for gpupc_last_run().
native_rfci <- function(skel, test, test_handle, alpha, rules, conservative, maj.rule, numCores) {
  p <- length(skel@graph@nodes)
  edges <- skeleton_edges(skel@graph)
  storage.mode(edges) <- "integer"
  data <- test$data
  data$test_handle <- test_handle
  hooks <- progress_hooks("gpupc rfci", "tests")
  on.exit(hooks$done())
  settings <- list(p = as.integer(p), alpha = as.double(alpha), conservative = conservative || maj.rule,
                   maj_rule = maj.rule, rules = rules, threads = as.integer(check_threads(numCores)),
                   hooks = hooks)
  res <- rs_rfci(edges, skel@sepset, test$kind, data, settings)
  hooks$done()
  # disCItest / binCItest calls warn as the skeleton's do
  if (isTRUE(res$small_n[1] > 0))
    warn_small_n_discrete(list(small_n_tests = res$small_n[1], small_n_min = res$small_n[2], n = res$small_n[3]))
  sepset <- skel@sepset
  for (k in seq_along(res$sep_x)) sepset[[res$sep_x[k]]][[res$sep_z[k]]] <- res$sep_sets[[k]]
  amat <- res$amat
  list(graph = amat, sepset = sepset,
       details = list(tests = res$tests_vstruc + res$tests_rules, tests_vstruc = res$tests_vstruc,
                      tests_rules = res$tests_rules, unfaithful = res$unfaithful,
                      evaluator = res$evaluator, phases = unlist(res$seconds)))
}

# The seconds of the stages after the skeleton, added to gpupc_last_run()$phases, and the
# Possible-D-SEP stage's, the triple checks' and RFCI's later stages' details.
record_stages <- function(secs, details = NULL, triples = NULL, rfci = NULL) {
  last <- .gpupc_state$last
  if (is.null(last)) return(invisible())
  last$phases <- c(last$phases, secs)
  if (!is.null(details)) last$pdsep <- details
  if (!is.null(triples)) last$triples <- triples
  if (!is.null(rfci)) last$rfci <- rfci
  .gpupc_state$last <- last
  invisible()
}

# How pcalg's biCC finds an edge's biconnected component: by as.numeric() of RBGL's node labels.
# Labels 1..p are the nodes' numbers ("components"); labels that are all not numbers give NA
# everywhere, so no component is found ("none": every edge's set is empty, with R's coercion
# warning, as pcalg); any other labels (numbers that are not 1..p) depend on RBGL's order of the
# components, so pcalg's pdsep() runs (NULL).
bicc_mode <- function(biCC, labels, warn = FALSE) {
  if (!biCC) return("off")
  num <- suppressWarnings(as.numeric(labels))
  if (identical(num, as.numeric(seq_along(labels)))) return("components")
  if (all(is.na(num))) {
    if (warn) warning("NAs introduced by coercion (biCC: the labels are not numbers, so, as in pcalg, no edge's biconnected component is found and no Possible-D-SEP test runs)", call. = FALSE)
    return("none")
  }
  NULL
}

# pcalg's test of contextVars, in its words; NULL and integer(0) pass as they are.
check_context_vars <- function(contextVars, p) {
  if (is.null(contextVars) || length(contextVars) == 0) return(contextVars)
  ok <- is.numeric(contextVars) && !anyNA(contextVars) && all(contextVars == as.integer(contextVars)) &&
    min(contextVars) >= 1 && max(contextVars) <= p
  if (!ok)
    abort_arg("contextVars", "has to be a vector of integers in {{1,2,..,p}}, where p is the number of variables (p = {p}).")
  contextVars
}

# udag2pag() / udag2apag() index `rules` 1 to 10 and test each with if().
check_rules <- function(rules) {
  if (!is.logical(rules) || length(rules) != 10 || anyNA(rules))
    abort_arg("rules", "must be 10 TRUE or FALSE values, one per orientation rule.")
  rules
}

# The stages after the skeleton call `indepTest(x, y, S, suffStat)` from R as pcalg does, so
# gaussCItest needs the correlation matrix itself.
check_r_stat <- function(suffStat, indepTest) {
  if (identical(indepTest, pcalg::gaussCItest) && is.list(suffStat) && is.null(suffStat$C) &&
      !is.null(suffStat$data))
    abort_arg("suffStat$data", "is not taken by gpu_fci() / gpu_rfci(): pass {.code list(C = cor(X), n = nrow(X))}, which pcalg's later stages call gaussCItest with.")
}
