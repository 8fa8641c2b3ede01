# Exact inference by junction tree (gRain's compile / setEvidence / querygrain, batched): the
# network becomes names, states, 0-based parents and CPTs in bnlearn's array order; Rust compiles
# and propagates (crate pc-jtree; the GPU kernels in pc-cuda's jtree module).

#' Compile a discrete Bayesian network into a junction tree
#'
#' Moralises, triangulates by a greedy elimination order, keeps the maximal cliques and joins
#' them by a maximum-weight spanning tree on separator sizes (a forest when the network is
#' disconnected). Clique sizes and table memory are checked before any table is allocated.
#'
#' @param x A bnlearn `bn.fit` of discrete nodes, a gRain `grain` object (through
#'   `bnlearn::as.bn.fit()`), the path of a BIF file (read with `bnlearn::read.bif()`; `.gz` is
#'   read through `gzfile()`), or a `pcAlgo` from [gpu_pc()] together with `data`: its CPDAG is
#'   extended to a DAG with `pcalg::pdag2dag()` and the parameters are estimated by
#'   `bnlearn::bn.fit(method = method, iss = iss)`, Bayesian by default so that no CPT cell is 0
#'   or undefined.
#' @param data For a `pcAlgo`: the data, a data.frame of factors (their levels are the states,
#'   seen in the data or not) or a matrix/data.frame of codes (each column becomes a factor of its
#'   sorted distinct values, so it must take at least two), columns named as the graph's nodes.
#' @param triangulation How the elimination order is chosen. `"auto"` (the default): the tree
#'   whose propagation moves the fewest table cells (every clique's table once, and each
#'   parent's once per child) among the orders of the three criteria below and 48 seeded,
#'   randomised variants of min-fill and weighted min-fill; the same tree on every run and every
#'   number of threads. On MUNIN it has 2.3x fewer such cells than min-fill's (largest clique
#'   784,000 cells against 2,744,000), on LINK 1.4x, on BARLEY 1.6x. `"minfill"` (fewest fill-in
#'   edges), `"minweight"` (smallest clique table) or `"wminfill"` (fill-in
#'   edges weighted by the product of their ends' numbers of states): that order alone. Every
#'   choice gives the same answers up to rounding.
#' @param method,iss Passed to `bnlearn::bn.fit()` for a `pcAlgo`.
#' @param backend `"auto"` (the GPU when [gpu_info()] finds one), `"cpu"` or `"cuda"`: where
#'   [gpu_query()] and [gpu_mpe()] propagate.
#' @param numCores CPU threads (NULL: as for [gpu_skeleton()], every core unless the
#'   `gpupc.threads` option or a core limit says otherwise); always a pool built for the call.
#' @param devices The GPUs a batch may use, as numbered by `gpu_info()$devices$device`; `NULL`
#'   (the default, or `getOption("gpupc.devices")`) uses every usable GPU for large batches (the
#'   evidence sets split into one block per device) and the first for small ones;
#'   [gpupc_last_run()] says which.
#' @param max.cells The clique tables of one evidence set may hold at most this many cells; a
#'   larger tree stops with an error before anything is allocated.
#' @return A `gpu_jtree` object: the compiled tree (an external pointer, not saved with the
#'   workspace), the nodes and their states, and `stats` (cliques, trees, depth, largest clique,
#'   table cells, bytes per evidence set). On a GPU, a query leaves the tree's potentials and
#'   index maps on each device it used (MUNIN: about 0.6 GB), so that the next query of the same
#'   tree there starts at once; a device keeps one tree, the last one queried there, and the
#'   memory is freed when another tree is queried on it or when the object is garbage
#'   collected (`rm(jt); gc()`). The buffers of a batch (MUNIN's 10,000 sets: 28 GB of clique
#'   tables) stay too, for the next batch of the same tree, where they take at most a quarter
#'   of the device's memory; they are given back as soon as any other GPU computation of the
#'   process plans its memory on that device, or when the object is collected.
#' @seealso [gpu_query()] for marginals, [gpu_mpe()] for most probable explanations.
#' @aliases print.gpu_jtree
#' @examplesIf requireNamespace("bnlearn", quietly = TRUE)
#' # gpu_jtree() reads networks with bnlearn
#' asia <- system.file("extdata", "networks", "asia.bif.gz", package = "gpupc")
#' jt <- gpu_jtree(asia, backend = "cpu", numCores = 2)
#' jt
#' gpu_query(jt, nodes = c("lung", "tub"), evidence = list(asia = "yes", xray = "yes"))
#'
#' # a network learned by gpu_pc() from discrete data, its parameters estimated from them
#' set.seed(1)
#' d <- bnlearn::rbn(bnlearn::read.bif(asia), n = 2000)
#' dm <- data.matrix(d) - 1L  # codes 0, 1, ... as disCItest wants them
#' fit <- gpu_pc(list(dm = dm, nlev = sapply(d, nlevels), adaptDF = FALSE),
#'               pcalg::disCItest, alpha = 0.01, labels = colnames(d),
#'               numCores = 2, backend = "cpu")
#' jt2 <- gpu_jtree(fit, data = d, backend = "cpu", numCores = 2)
#' gpu_query(jt2, nodes = "lung", evidence = list(smoke = "yes"))
#' @export
gpu_jtree <- function(x, data = NULL, triangulation = c("auto", "minfill", "minweight", "wminfill"), method = "bayes", iss = 1,
                      backend = c("auto", "cpu", "cuda"), numCores = NULL, max.cells = 2^31,
                      devices = getOption("gpupc.devices", NULL)) {
  tris <- c("auto", "minfill", "minweight", "wminfill")
  tri <- if (is.character(triangulation) && length(triangulation) >= 1) pmatch(triangulation[1], tris) else NA
  if (is.na(tri)) abort_arg("triangulation", "must be one of \"auto\", \"minfill\", \"minweight\" or \"wminfill\".")
  triangulation <- tris[tri]
  backend <- match.arg(backend)
  devices <- check_devices(devices, backend)
  if (!is.numeric(max.cells) || length(max.cells) != 1 || is.na(max.cells) || max.cells < 1)
    abort_arg("max.cells", "must be a single number >= 1.")
  threads <- jt_threads(numCores)
  fit <- as_discrete_fit(x, data, method, iss)
  jt_compiled(fit_to_lists(fit), triangulation, as.numeric(max.cells), threads, backend, devices)
}

# The tree compiled from `net` (fit_to_lists()), with what queries need: the network itself (for
# the trees of its relevant parts, jt_pruned()) and a cache of those trees.
jt_compiled <- function(net, triangulation, max.cells, threads, backend, devices) {
  res <- rs_jt_compile(net$names, net$states, net$parents, net$cpts, triangulation, max.cells, threads)
  # what the ranks of cluster = "mpi" compare: the tree itself is behind an external pointer
  digest <- rs_input_digest(list(net, triangulation, max.cells))
  forced <- backend == "cuda"
  # the engine as every skeleton's is chosen (pc-cuda's open.rs); the GPUs per batch, by its size
  choice <- resolve_backend(backend, "jtree", length(net$names), NA_real_, devices)
  structure(list(ptr = res$ptr, forced = forced, nodes = net$names, states = stats::setNames(net$states, net$names),
                 offsets = res$offsets, stats = res$stats, backend = choice$backend, why = choice$why,
                 threads = threads, devices = devices, triangulation = triangulation, digest = digest,
                 net = net, max.cells = max.cells, pruned = new.env(parent = emptyenv())),
            class = "gpu_jtree")
}

# The marginals of the nodes asked for, given one evidence set, depend only on them, the nodes
# the set observes and their ancestors: every other node is barren (summed out, it contributes a
# factor of 1, to P(evidence) too). So a batch runs on the tree of the nodes asked for, the nodes
# observed in any of its sets and their ancestors (for each set a part that holds its own),
# compiled once per such part and kept with the tree (`pruned`). Returns NULL where nothing
# would be left out (the batch then runs on the whole tree), else list(jt, ev, nodes) for that
# tree: `nodes`, the wanted nodes' 1-based places in it. options(gpupc.jtree_prune = FALSE)
# turns it off.
jt_pruned <- function(jt, ev, idx) {
  if (!isTRUE(getOption("gpupc.jtree_prune", TRUE)) || is.null(jt$net) || !is.environment(jt$pruned)) return(NULL)
  # every node asked for: nothing to leave out
  if (length(idx) == length(jt$nodes)) return(NULL)
  par <- jt$net$parents
  keep <- rep(FALSE, length(jt$nodes))
  todo <- c(idx, which(ev$seen > 0L | ev$soft_col >= 0L))
  while (length(todo)) {
    todo <- todo[!keep[todo]]
    keep[todo] <- TRUE
    todo <- unique(unlist(par[todo], use.names = FALSE) + 1L)
  }
  if (all(keep)) return(NULL)
  part <- which(keep)
  key <- paste(part, collapse = ",")
  sub <- jt$pruned[[key]]
  if (is.null(sub)) {
    # the ancestors of a kept node are kept: every parent is renumbered within the part
    net <- list(names = jt$net$names[part], states = jt$net$states[part],
                parents = lapply(par[part], function(pa) match(pa + 1L, part) - 1L), cpts = jt$net$cpts[part])
    sub <- jt_compiled(net, jt$triangulation, jt$max.cells, jt$threads, if (isTRUE(jt$forced)) "cuda" else jt$backend, jt$devices)
    sub$forced <- jt$forced
    sub$why <- jt$why
    assign(key, sub, envir = jt$pruned)
  }
  soft_col <- ev$soft_col[part]
  list(jt = sub, nodes = match(idx, part),
       ev = list(hard = ev$hard[, part, drop = FALSE], seen = ev$seen[part], soft_col = soft_col,
                 soft = ev$soft, rows = ev$rows, batch = ev$batch))
}

#' @export
print.gpu_jtree <- function(x, ...) {
  s <- x$stats
  cat(sprintf("gpu_jtree: %d nodes, %d cliques in %d tree(s), depth %d; largest clique %d variables / %.0f cells; %.0f cells in all (%.1f MB per evidence set); backend %s\n",
              length(x$nodes), s$cliques, s$trees, s$depth, s$max_clique_vars, s$max_clique_cells,
              s$total_clique_cells, s$bytes_per_evidence_set / 1e6, x$backend))
  invisible(x)
}

#' Marginals given evidence, for one evidence set or a batch
#'
#' Hugin propagation (collect, distribute) scheduled level by level over the tree's depths, every
#' evidence set of a batch propagating together, in double precision, on the CPU (a thread pool
#' built for the call) or the GPU; both give the same numbers, identical from run to run.
#'
#' A batch of more than a few seconds shows a progress bar (evidence sets done, and the time so
#' far) and stops at Ctrl-C between its chunks, as [gpu_skeleton()]'s levels do.
#'
#' Given an evidence set, the marginals of `nodes` depend only on them, the observed nodes and
#' their ancestors: every other node is barren (summed out, it contributes a factor of 1, to
#' P(evidence) too). So a query runs on the junction tree of `nodes`, the nodes observed in any
#' of its evidence sets and their ancestors, where that leaves nodes out (a few nodes asked for,
#' evidence on the same few columns); that tree is compiled at the first such query and kept
#' with `jt` for the next. The numbers equal the whole tree's to rounding (the sums run over
#' other cliques). [gpupc_last_run()]`$nodes_propagated` says how many nodes the tree had;
#' `options(gpupc.jtree_prune = FALSE)` always propagates the whole tree.
#'
#' @param jt A junction tree from [gpu_jtree()].
#' @param nodes Nodes whose marginals are wanted (default all), in any order; the result lists
#'   them in the network's order (gRain's `querygrain()` uses its own internal order).
#' @param evidence `NULL`; one evidence set as a named list (`list(asia = "yes")`: hard
#'   evidence; a numeric vector over a node's states: likelihood evidence, as gRain's
#'   `setEvidence()`); or a data.frame with one evidence set per row, columns named by nodes,
#'   states as character or factor and `NA` for unobserved.
#' @param type Only `"marginal"`.
#' @param exclude As in gRain's `querygrain()`: `TRUE` (the default) leaves out the nodes with
#'   evidence (for a batch, the nodes observed in every evidence set).
#' @param result `"array"` (gRain's default: a named 1-d array per node; for a batch a matrix per
#'   node) or `"data.frame"`: per node a data frame of the states and their probabilities `Freq`
#'   (`as.data.frame.table()` of the array); for a batch one column per state, one row per
#'   evidence set.
#' @param backend Overrides the tree's backend: `"cpu"`, `"cuda"`, or `"auto"` (the GPU when
#'   [gpu_info()] finds one; a GPU failure then reruns on the CPU with a message).
#' @param cluster `NULL` (the default: one process), or `"mpi"`: the call is one rank of an MPI
#'   job in which every rank makes the same call (as for [gpu_skeleton()]'s `cluster`): every rank
#'   holds the same tree (compiled by [gpu_jtree()] from the same network) and the same evidence.
#'   Each rank propagates one contiguous block of the evidence sets on its own backend (a GPU
#'   rank without the tree's `devices`: its place on its host modulo the usable GPUs), and the
#'   ranks exchange their answers through \pkg{Rmpi}, so that every rank returns the whole
#'   result, identical to the one-process call's. The ranks first compare digests of the tree and
#'   of the call's inputs (all but `backend`) and all stop with an error naming `cluster` when they
#'   differ; a rank that fails stops every rank with its error ("rank 2: ..."). Needs \pkg{Rmpi};
#'   [gpupc_last_run()]`$ranks` reports this rank's evidence sets, bytes and seconds.
#' @return One evidence set: gRain's shape, a named list of 1-d arrays (attribute `pEvidence`).
#'   A batch: a named list with a matrix per node (one row per evidence set, one column per
#'   state) and the attribute `pEvidence` (one value per row). An impossible evidence set
#'   (P = 0) gives NA with a warning.
#' @seealso [gpu_jtree()], [gpu_mpe()].
#' @examplesIf requireNamespace("bnlearn", quietly = TRUE)
#' jt <- gpu_jtree(system.file("extdata", "networks", "asia.bif.gz", package = "gpupc"),
#'                 backend = "cpu", numCores = 2)
#' # one evidence set: gRain's querygrain() shape
#' gpu_query(jt, nodes = c("lung", "tub"), evidence = list(asia = "yes", xray = "yes"))
#' # likelihood evidence on xray
#' gpu_query(jt, nodes = "lung", evidence = list(xray = c(yes = 0.8, no = 0.2)))
#' # a batch: one evidence set per row, NA unobserved
#' ev <- data.frame(smoke = c("yes", "no", NA), xray = c("yes", "yes", "no"))
#' q <- gpu_query(jt, nodes = c("lung", "bronc"), evidence = ev)
#' q$lung
#' attr(q, "pEvidence")
#' gpu_query(jt, nodes = "lung", evidence = ev, result = "data.frame")
#' @export
gpu_query <- function(jt, nodes = NULL, evidence = NULL, type = "marginal", exclude = TRUE,
                      result = c("array", "data.frame"), backend = NULL, cluster = NULL) {
  # first, before any check that could stop one rank alone while the others wait for it
  cluster <- check_cluster(cluster)
  agree_s <- jt_agree(cluster, jt, list(nodes = nodes, evidence = evidence, type = type,
                                        exclude = exclude, result = result))
  check_jt(jt)
  if (!identical(type, "marginal"))
    abort_arg("type", "must be \"marginal\" (gRain's \"joint\" and \"conditional\" are not supported).")
  if (!is.logical(exclude) || length(exclude) != 1 || is.na(exclude)) abort_arg("exclude", "must be TRUE or FALSE.")
  if (!is.character(result) || !all(result %in% c("array", "data.frame")))
    abort_arg("result", "must be \"array\" or \"data.frame\".")
  result <- result[1]
  if (is.null(nodes)) nodes <- jt$nodes
  if (!is.character(nodes) || anyNA(nodes)) abort_arg("nodes", "must be a character vector of node names.")
  bad <- setdiff(nodes, jt$nodes)
  if (length(bad)) abort_arg("nodes", "names unknown node{?s} {.val {bad}}.")
  ev <- jt_evidence(jt, evidence)
  keep <- jt$nodes[jt$nodes %in% nodes]
  if (exclude) {
    # `seen`: each node's sets with a state, counted as the evidence was coded
    observed <- ev$seen == ev$rows | ev$soft_col >= 0L
    keep <- setdiff(keep, jt$nodes[observed])
  }
  idx <- match(keep, jt$nodes)
  # one matrix per wanted node (evidence sets x states, NA where the evidence is impossible), on
  # the tree of the part of the network they depend on where the batch has one
  pr <- jt_pruned(jt, ev, idx)
  res <- if (is.null(pr)) {
    jt_run_ranks(cluster, agree_s, jt, ev, "marginal", backend, nodes = idx - 1L)
  } else {
    jt_run_ranks(cluster, agree_s, pr$jt, pr$ev, "marginal", backend, nodes = pr$nodes - 1L)
  }
  .gpupc_state$last$nodes_propagated <- if (is.null(pr)) length(jt$nodes) else length(pr$jt$nodes)
  imp <- which(!(res$pe > 0))
  if (length(imp))
    warning(sprintf("the evidence is impossible (probability 0) in %s: marginals are NA",
                    if (ev$batch) paste("row(s)", paste(imp[seq_len(min(10, length(imp)))], collapse = ", ")) else "this evidence set"),
            call. = FALSE)
  out <- lapply(seq_along(keep), function(k) {
    v <- keep[k]
    st <- jt$states[[idx[k]]]
    m <- res$values[[k]]
    if (ev$batch) {
      # named by Rust (jt_run's `dimnames`), which jt_whole() keeps
      if (result == "data.frame") as.data.frame(m, optional = TRUE) else m
    } else if (result == "data.frame") {
      stats::setNames(data.frame(factor(st, levels = st), m[1, ]), c(v, "Freq"))
    } else {
      array(m[1, ], dim = length(st), dimnames = stats::setNames(list(st), v))
    }
  })
  names(out) <- keep
  attr(out, "pEvidence") <- res$pe
  out
}

#' Most probable explanation per evidence set
#'
#' Max-product propagation (collect), then decoding from the roots down. Where several
#' configurations are equally probable, each clique takes its lowest cell (the lowest states of
#' the variables it decides, its first variable varying fastest), so results are deterministic.
#' A long batch shows its progress and stops at Ctrl-C as [gpu_query()]'s do.
#'
#' @inheritParams gpu_query
#' @return A data.frame with one row per evidence set and a factor column per node; attribute
#'   `prob`: P(explanation, evidence). Impossible evidence gives an NA row with a warning.
#' @seealso [gpu_jtree()], [gpu_query()].
#' @examplesIf requireNamespace("bnlearn", quietly = TRUE)
#' jt <- gpu_jtree(system.file("extdata", "networks", "asia.bif.gz", package = "gpupc"),
#'                 backend = "cpu", numCores = 2)
#' gpu_mpe(jt)  # the most probable configuration without evidence
#' ev <- data.frame(dysp = c("yes", "no"), xray = c("yes", NA))
#' m <- gpu_mpe(jt, evidence = ev)
#' m
#' attr(m, "prob")
#' @export
gpu_mpe <- function(jt, evidence = NULL, backend = NULL, cluster = NULL) {
  cluster <- check_cluster(cluster)
  agree_s <- jt_agree(cluster, jt, list(evidence = evidence))
  check_jt(jt)
  ev <- jt_evidence(jt, evidence)
  res <- jt_run_ranks(cluster, agree_s, jt, ev, "mpe", backend)
  if (any(!(res$prob > 0)))
    warning("the evidence is impossible (probability 0) in ", sum(!(res$prob > 0)), " evidence set(s): NA", call. = FALSE)
  df <- as.data.frame(lapply(seq_along(jt$nodes), function(i) factor(jt$states[[i]][res$states[, i]], levels = jt$states[[i]])))
  names(df) <- jt$nodes
  attr(df, "prob") <- res$prob
  df
}

jt_threads <- function(numCores) {
  if (is.null(numCores)) return(min_threads(default_threads()))
  if (!is.numeric(numCores) || length(numCores) != 1 || is.na(numCores) || numCores < 1 || numCores != round(numCores))
    abort_arg("numCores", "must be NULL (all cores) or a whole number >= 1.")
  as.integer(numCores)
}

check_jt <- function(jt) {
  if (!inherits(jt, "gpu_jtree")) abort_arg("jt", "must be a junction tree from gpu_jtree().")
}

# `nodes`: the 0-based nodes whose marginals come back (NULL: all); unused for the MPE. `hooks`:
# the batch's progress (R/progress.R); `memory_gb`: the CPU's tables per chunk at most.
jt_run <- function(jt, ev, what, backend, nodes = NULL,
                   hooks = progress_hooks("gpupc jtree", "evidence sets"), memory_gb = 4, cluster = NULL) {
  check_jt_backend(backend)
  fallback <- (is.null(backend) && !isTRUE(jt$forced)) || identical(backend, "auto")
  why <- if (is.null(backend)) paste("the tree's backend:", jt$why %||% jt$backend) else "asked for"
  if (identical(backend, "auto")) {
    choice <- resolve_backend("auto", "jtree", length(jt$nodes), ev$rows, jt$devices)
    backend <- choice$backend
    why <- choice$why
  }
  backend <- backend %||% jt$backend
  dev <- list(devices = NULL, why = NULL)
  if (backend == "cuda") dev <- choose_devices(jt$devices, "jtree", ev$rows)
  # a rank of several, its tree without devices: one GPU by its place on its host
  if (backend == "cuda" && !is.null(cluster) && is.null(jt$devices)) {
    d <- rank_device_choice(cluster, list(devices = dev$devices, devices_why = dev$why))
    dev <- list(devices = d$devices, why = d$devices_why)
  }
  # the marginal matrices' dimnames, set in Rust as they are made (setting them here copied each)
  dn <- if (what == "marginal" && isTRUE(ev$batch))
    lapply(jt$states[if (is.null(nodes)) seq_along(jt$states) else nodes + 1L], function(st) list(NULL, st))
  # `devices`: the GPUs left (fewer than chosen after one failed)
  run <- function(b, devices) {
    backend <<- b
    if (b == "cpu") dev <<- list(devices = NULL, why = NULL)
    else if (!identical(devices, dev$devices)) dev <<- list(devices = devices, why = "the others after a GPU failed")
    query <- list(what = what, backend = b, threads = as.integer(jt$threads), memory_gb = memory_gb,
                  devices = dev$devices, nodes = if (is.null(nodes)) NULL else as.integer(nodes),
                  dimnames = dn)
    on.exit(hooks$done())
    rs_jt_query(jt$ptr, ev, query, hooks)
  }
  asked <- backend
  res <- with_cpu_fallback(run, backend, fallback, dev$devices)
  if (backend != asked) why <- "the GPU failed"
  .gpupc_state$last <- list(backend = backend, why = why,
                            devices = dev$devices, devices_why = dev$why, query = what,
                            evidence_sets = ev$rows, phases = c(query_s = res$seconds, results_s = res$results_seconds))
  res
}

check_jt_backend <- function(backend) {
  if (!is.null(backend) && !(is.character(backend) && length(backend) == 1 && backend %in% c("auto", "cpu", "cuda")))
    abort_arg("backend", "must be \"auto\", \"cpu\" or \"cuda\".")
}

# cluster = "mpi": every rank's digests of the tree and of the call's other inputs (`parts`),
# compared before anything else (cluster_agree()). The tree is compared by what it was compiled
# from (`digest`), its nodes, states and shape (not its compile time).
jt_agree <- function(cluster, jt, parts) {
  if (is.null(cluster)) return(0)
  tree <- if (inherits(jt, "gpu_jtree")) {
    c(unclass(jt)[c("digest", "nodes", "states", "offsets")], list(stats = jt$stats[setdiff(names(jt$stats), "compile_s")]))
  } else jt
  cluster_agree(cluster, c(list(jt = tree), parts))
}

# The evidence sets (1-based rows) of rank `rank` of `size`: contiguous blocks in rank order, the
# first `rows %% size` ranks one set more.
jt_rank_rows <- function(rows, rank, size) {
  base <- rows %/% size
  extra <- rows %% size
  first <- rank * base + min(rank, extra)
  seq_len(base + (rank < extra)) + first
}

# The evidence sets `rows` of `ev` (jt_evidence()'s form).
jt_ev_rows <- function(ev, rows) {
  ev$hard <- ev$hard[rows, , drop = FALSE]
  ev$soft <- ev$soft[rows, , drop = FALSE]
  ev$rows <- length(rows)
  ev
}

# jt_run() over the ranks of `cluster` (NULL: jt_run() itself): each rank propagates its block of
# evidence sets on its own backend, the ranks say whether they got through (cluster_step(): a rank
# that failed raises its error, the others "rank r: ..."), then exchange their answers, which
# every rank writes into the whole batch's matrices in rank order. Each evidence set propagates
# alone in either engine, so the result is the one-process call's.
jt_run_ranks <- function(cluster, agree_s, jt, ev, what, backend, nodes = NULL) {
  if (is.null(cluster)) return(jt_run(jt, ev, what, backend, nodes))
  t0 <- proc.time()[["elapsed"]]
  rows <- jt_rank_rows(ev$rows, cluster$rank, cluster$size)
  local <- cluster_step(cluster, {
    check_jt_backend(backend)
    fail <- Sys.getenv("GPUPC_FAIL_RANK")
    # test-only: that rank fails in its block (rank:query)
    if (length(rows) && identical(fail, paste0(cluster$rank, ":query")))
      cli::cli_abort("gpupc: internal error: a failure injected in this rank's evidence sets",
                     class = c("gpupc_internal_error", "gpupc_error"), call = NULL)
    if (length(rows)) jt_run(jt, jt_ev_rows(ev, rows), what, backend, nodes, cluster = cluster)
  })
  t1 <- proc.time()[["elapsed"]]
  if (!is.null(local)) local$seconds <- local$results_seconds <- NULL
  mine <- if (is.null(local)) raw(0) else serialize(local, NULL, xdr = FALSE)
  sent <- length(mine)
  got <- if (cluster$size > 1L) cluster$allgather(mine) else list(mine)
  rm(mine)
  received <- sum(as.double(lengths(got))) - sent
  # the blocks written into matrices of all the rows, in rank order (rank 0 always holds one),
  # each rank's bytes dropped once read (here, where `got` is the only reference to them)
  res <- NULL
  for (r in seq_len(cluster$size)) {
    if (!length(got[[r]])) next
    blk <- if (r == cluster$rank + 1L) local else unserialize(got[[r]])
    got[r] <- list(NULL)
    at <- jt_rank_rows(ev$rows, r - 1L, cluster$size)
    if (is.null(res)) res <- jt_whole(blk, ev$rows)
    for (k in names(blk)) {
      if (k == "values") {
        for (j in seq_along(blk$values)) res$values[[j]][at, ] <- blk$values[[j]]
      } else if (is.matrix(blk[[k]])) {
        res[[k]][at, ] <- blk[[k]]
      } else {
        res[[k]][at] <- blk[[k]]
      }
    }
  }
  rm(got, blk)
  t2 <- proc.time()[["elapsed"]]
  if (is.null(local)) {
    # this rank propagated nothing
    .gpupc_state$last <- list(backend = "none", why = "no evidence sets on this rank", devices = NULL,
                              devices_why = NULL, query = what, evidence_sets = ev$rows,
                              phases = c(query_s = 0))
  }
  .gpupc_state$last$evidence_sets <- ev$rows
  .gpupc_state$last$ranks <- list(rank = cluster$rank, size = cluster$size, check_s = agree_s,
                                  allgather_s = t2 - t1, rows = length(rows),
                                  first_row = if (length(rows)) rows[1] else NA_integer_,
                                  bytes_sent = sent, bytes_received = received, local_s = t1 - t0)
  res
}

# jt_run()'s answer for all `rows` evidence sets, shaped as block `blk` (its matrices, and the
# matrices of its lists, with `rows` rows; its vectors of length `rows`), to be filled in.
jt_whole <- function(blk, rows) {
  whole <- function(v) if (is.matrix(v)) {
    matrix(vector(typeof(v), rows * ncol(v)), rows, ncol(v), dimnames = if (!is.null(colnames(v))) list(NULL, colnames(v)))
  } else vector(typeof(v), rows)
  lapply(blk, function(v) if (is.list(v)) lapply(v, whole) else whole(v))
}

`%||%` <- function(a, b) if (is.null(a)) b else a

# Evidence in any accepted form -> hard (rows x n, -1 unobserved), likelihood columns, batch flag.
jt_evidence <- function(jt, evidence) {
  n <- length(jt$nodes)
  none <- list(hard = matrix(-1L, 1, n), seen = integer(n), soft_col = rep(-1L, n), soft = matrix(0, 1, 0), rows = 1L, batch = FALSE)
  if (is.null(evidence) || length(evidence) == 0) return(none)
  nm <- names(evidence)
  if (is.null(nm) || any(nm == "") || anyDuplicated(nm))
    abort_arg("evidence", "must be named by nodes (each at most once).")
  bad <- setdiff(nm, jt$nodes)
  if (length(bad)) abort_arg("evidence", "names unknown node{?s} {.val {bad}}.")
  # 1-based state numbers of x among node v's states (NA where x is NA); a factor's levels are
  # matched once, not its every value
  state_index <- function(v, x) {
    st <- jt$states[[v]]
    k <- if (is.factor(x)) match(levels(x), st)[as.integer(x)] else match(as.character(x), st)
    bad <- is.na(k) & !is.na(x)
    if (any(bad)) {
      wrong <- unique(as.character(x[bad]))
      abort_arg("evidence", "gives {.val {wrong}} for node {.val {v}}, whose states are {.val {st}}.")
    }
    k
  }
  if (is.data.frame(evidence)) {
    rows <- nrow(evidence)
    if (rows == 0) abort_arg("evidence", "has no rows.")
    cols <- match(nm, jt$nodes)
    # character and factor columns coded in Rust (a value's string compared with the states',
    # a factor's levels matched once: R's match() over every value took most of a large batch's
    # time on R's side); a column with a value that is no state, and any other column, go
    # through state_index() below
    fast <- vapply(evidence, function(x) is.character(x) || is.factor(x), TRUE)
    maps <- lapply(which(fast), function(j) {
      x <- evidence[[j]]
      if (is.factor(x)) { k <- match(levels(x), jt$states[[cols[j]]]) - 1L; k[is.na(k)] <- -2L; k }
    })
    coded <- rs_jt_codes(unname(as.list(evidence)[fast]), unname(jt$states[cols[fast]]), unname(maps),
                         cols[fast] - 1L, rows, n)
    hard <- coded$hard
    seen <- coded$seen
    done <- fast
    done[fast] <- !coded$redo
    for (j in which(!done)) {
      col <- evidence[[j]]
      if (!(is.factor(col) || is.character(col) || all(is.na(col))))
        abort_arg("evidence", "column {.val {nm[j]}} must hold states (character or factor).")
      k <- state_index(nm[j], col) - 1L
      k[is.na(k)] <- -1L
      hard[, cols[j]] <- k
      seen[cols[j]] <- sum(k >= 0L)
    }
    return(list(hard = hard, seen = seen, soft_col = rep(-1L, n), soft = matrix(0, rows, 0), rows = rows, batch = TRUE))
  }
  if (!is.list(evidence)) evidence <- as.list(evidence)
  hard <- matrix(-1L, 1, n)
  soft_col <- rep(-1L, n)
  soft <- numeric(0)
  for (v in nm) {
    x <- evidence[[v]]
    i <- match(v, jt$nodes)
    st <- jt$states[[v]]
    if (is.character(x) || is.factor(x)) {
      if (length(x) != 1) abort_arg("evidence", "for node {.val {v}} must be one state (or a likelihood vector of length {length(st)}).")
      hard[1, i] <- state_index(v, x) - 1L
    } else if (is.numeric(x) && length(x) == length(st) && all(is.finite(x)) && all(x >= 0)) {
      soft_col[i] <- length(soft)
      soft <- c(soft, x)
    } else {
      abort_arg("evidence", "for node {.val {v}} must be a state name or a non-negative likelihood vector of length {length(st)}.")
    }
  }
  list(hard = hard, seen = as.integer(hard[1, ] >= 0L), soft_col = as.integer(soft_col), soft = matrix(soft, 1), rows = 1L, batch = FALSE)
}

as_discrete_fit <- function(x, data, method, iss) {
  if (!requireNamespace("bnlearn", quietly = TRUE))
    cli::cli_abort("gpu_jtree() needs the bnlearn package to read networks.", class = "gpupc_error", call = NULL)
  if (inherits(x, "bn.fit")) return(x)
  if (inherits(x, "grain")) return(bnlearn::as.bn.fit(x))
  if (is.character(x) && length(x) == 1) {
    if (!file.exists(x)) abort_arg("x", "is not an existing file: {.file {x}}.")
    fit <- tryCatch(bnlearn::read.bif(plain_bif(x)), error = function(e) abort_arg("x", "could not be read as BIF: {conditionMessage(e)}"))
    return(fit)
  }
  if (inherits(x, "pcAlgo")) {
    if (is.null(data)) abort_arg("data", "is needed to estimate the parameters of a pcAlgo.")
    nodes <- graph::nodes(x@graph)
    data <- as.data.frame(data)
    if (is.null(colnames(data)) || !all(nodes %in% colnames(data)))
      abort_arg("data", "must have a column for each node of the graph ({.val {nodes[seq_len(min(5, length(nodes)))]}}...).")
    data <- data[nodes]
    # a factor keeps its levels (states never seen in a sample stay states, estimated from the
    # prior); codes become the values they take, so a constant column of codes has one state,
    # which bn.fit refuses: say which
    data[] <- lapply(data, function(col) if (is.factor(col)) col else factor(col, levels = sort(unique(col))))
    if (anyNA(data)) abort_arg("data", "must not contain NA.")
    one <- names(data)[vapply(data, nlevels, 1L) < 2]
    if (length(one))
      abort_arg("data", "has a single state in column{?s} {.val {one}}: pass factors with all their states (bnlearn needs at least two).")
    ext <- pcalg::pdag2dag(x@graph)
    if (!isTRUE(ext$success))
      abort_arg("x", "has a CPDAG that pcalg::pdag2dag() cannot extend to a DAG (conflicting orientations).")
    amat <- methods::as(ext$graph, "matrix")
    amat <- (amat != 0) * 1
    dimnames(amat) <- list(nodes, nodes)
    bn <- bnlearn::empty.graph(nodes)
    bnlearn::amat(bn) <- amat
    return(bnlearn::bn.fit(bn, data, method = method, iss = iss))
  }
  abort_arg("x", "must be a bn.fit of discrete nodes, a grain object, a BIF file or a pcAlgo (with data).")
}

fit_to_lists <- function(fit) {
  nodes <- names(fit)
  states <- vector("list", length(nodes))
  parents <- vector("list", length(nodes))
  cpts <- vector("list", length(nodes))
  for (i in seq_along(nodes)) {
    nd <- fit[[i]]
    if (!inherits(nd, c("bn.fit.dnode", "bn.fit.onode")))
      abort_arg("x", "has node {.val {nodes[i]}}, which is not discrete ({class(nd)[1]}); only discrete networks are supported.")
    pa <- nd$parents
    p <- nd$prob
    dn <- names(dimnames(p))
    if (length(dim(p)) > 1 && !identical(dn, c(nodes[i], pa))) p <- aperm(p, c(nodes[i], pa))
    v <- as.numeric(p)
    if (anyNA(v))
      abort_arg("x", "has NaN in the CPT of {.val {nodes[i]}} (parent configurations never seen in the data; fit with method = \"bayes\").")
    states[[i]] <- dimnames(p)[[1]]
    parents[[i]] <- match(pa, nodes) - 1L
    cpts[[i]] <- v
  }
  list(names = nodes, states = states, parents = parents, cpts = cpts)
}

# bnlearn's read.bif() leaves a gzfile() connection open: read a .gz into a temporary file.
plain_bif <- function(path) {
  if (!grepl("\\.gz$", path)) return(path)
  tmp <- tempfile(fileext = ".bif")
  writeLines(readLines(path), tmp)
  tmp
}
