#' Skeleton of the PC algorithm, computed by gpupc: a drop-in for pcalg::skeleton()
#'
#' Takes exactly the arguments of [pcalg::skeleton()] and returns the same `pcAlgo` object:
#' graph, every `sepset[[i]][[j]]`, `n.edgetests` and `max.ord` are what pcalg returns, and `pMax`
#' too, to floating-point rounding (about 1e-13 relative; the tests check 1e-9),
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
#' seconds and backend), not pcalg's line per test. Whatever `verbose`, a level of more than a
#' few seconds shows a cli progress bar (cli's options govern it: `options(cli.progress_show_after
#' = Inf)` turns it off); Ctrl-C stops the run within a second with R's interrupt (not an error:
#' `try()` does not catch it) and leaves R working.
#'
#' @section GPU memory:
#' The CUDA backend keeps the correlation matrix on the device for the whole run (8 p^2 bytes:
#' 3.2 GB at p = 20000). Levels 0 and 1 run without any per-edge work on the host: the graph
#' stays on the device as a bit matrix (p^2 / 8 bytes), pMax as a p x p matrix (another
#' 8 p^2 bytes) and level 0's empty separating sets as a second bit matrix; level 1's neighbour
#' lists (4 bytes per remaining directed edge) are built on the device. Only pMax, the graph and
#' the separating sets come back, once, after level 1. Levels >= 2 run the cuPC-S kernels on
#' lists planned on the host (few edges remain by then). `method = "stable.fast"` runs the same
#' way with pcalg's C++ rules and test, and its levels >= 2 stay on the device as well (a warp
#' per edge walks its conditioning sets in pcalg's order; pMax comes back while they run, their
#' raises of it afterwards); a level whose largest neighbourhood would give one edge more than
#' 2^20 tests runs instead as rounds of tests spread over the whole device. Where its C++ test
#' needs what only the CPU code reproduces (a C with NA, or n so small that the test stops with
#' an error), those levels run on the CPU. When C and pMax do not both fit, levels 0 and 1 are
#' planned on the host as well; a run that does not fit at all stops with an error
#' before any work, saying how much it needs.
#'
#' For `disCItest` and `binCItest` the data go to the device once as one byte per value
#' (n p bytes: 1 GB for 10^6 rows of 1000 variables), so a variable may have at most 255
#' levels (`nlev`; more is an error naming `suffStat$nlev`, on every backend). Each block of
#' GPU threads builds one test's contingency table in shared memory, or, when the table is
#' larger than 4096 words (cells and margins), in its own slot of global memory (at most 0.9 n words of 4 bytes,
#' since a test only runs when n >= 10 df); when free memory would not hold a slot per block,
#' fewer blocks run at once. Both `method = "stable"` and `"stable.fast"` run on the GPU.
#'
#' With `backend = "auto"`, Gaussian data go to the GPU from p = 3000 on (either method),
#' discrete data when n p^2 / 2 >= 5e9 (LINK, 724 variables, at 20000 rows); smaller problems
#' finish on the CPU before a GPU would have started (the first CUDA call of an R process takes
#' seconds). An R-function `indepTest` always runs on the CPU.
#'
#' @section Host memory:
#' The result holds pMax (8 p^2 bytes: 3.2 GB at p = 20000, 24.7 GB at p = 55,572), written
#' directly into the matrix returned, whose cells gpupc holds outside R's heap (R reads, copies,
#' saves and changes it as any matrix; `gc()` does not count it); C is read where R holds it
#' (no copy). pcalg's `sepset` is a
#' list of p lists of p entries, another 8 p^2 bytes of pointers that R takes seconds to fill.
#' Above `getOption("gpupc.sepset_rows_p", 5000)` variables, gpupc returns `sepset` as a list of
#' p compact rows instead (class `gpupc_sepset_row`: level 0's empty sets as bits, p^2 / 8 bytes
#' in all, and the other sets listed). They read and write as pcalg's lists do:
#' `sepset[[x]][[y]]` is `NULL` or the set, `sepset[[x]][[y]] <- S` and `length()`, `lapply()`,
#' `as.list()` work, and pcalg's functions (`udag2pdagRelaxed()`, `pc.cons.intern()`, ...) give
#' the same answers; only `identical()` with a pcalg object needs [as_sepset_list()] first. Set
#' the option to `Inf` for pcalg's lists at any p, or to 0 for rows at any p.
#'
#' @section Data instead of C:
#' With `gaussCItest`, `suffStat = list(data = X)` (X: n x p numeric matrix or data frame, `n`
#' optional, default `nrow(X)`) replaces `list(C = cor(X), n = nrow(X))`, which pcalg needs
#' (`cor()` of 3189 x 55,572 is itself 25 GB). The backend computes the correlations itself: on
#' the GPU, C never exists on the host. Both backends compute each entry the same way (columns
#' centred and scaled, then one fused multiply-add chain over the rows), so the CPU and the GPU
#' give the same C, bit for bit; it differs from R's `cor()` by rounding (about 1e-16), so a test
#' whose p-value is within rounding of `alpha` may decide differently from pcalg on `cor(X)`.
#' X must be finite with no constant column (an error names `suffStat$data`); for NA handling
#' pass C as pcalg does. This is gpupc's addition: `pcalg::pc()` does not take it.
#'
#' @inheritParams pcalg::skeleton
#' @param numCores `NULL` (the default) uses every core; a number `> 0` runs `floor(numCores)`
#'   threads, at least 1 and at most the machine's cores. Unlike pcalg, this applies to every method.
#'   `NULL` means `getOption("gpupc.threads")` when set, else 2 under R CMD check's
#'   `_R_CHECK_LIMIT_CORES_`, else `OMP_THREAD_LIMIT` when set, else, in a process an MPI
#'   launcher started with other ranks on the same host, the cores divided by those ranks
#'   (`OMPI_COMM_WORLD_LOCAL_SIZE`, `MPI_LOCALNRANKS`, `MV2_COMM_WORLD_LOCAL_SIZE` or
#'   `SLURM_NTASKS_PER_NODE`), else every core.
#' @param backend `"auto"` (GPU when one is usable and the problem is large enough, else CPU),
#'   `"cpu"` or `"cuda"`. Defaults to `getOption("gpupc.backend", "auto")`.
#' @param devices the GPUs to use with the CUDA backend, as numbered by
#'   `gpu_info()$devices$device` (e.g. `c(0, 1)`); `NULL` (the default, or
#'   `getOption("gpupc.devices")`) uses the usable GPUs where the work gains from them:
#'   for `gaussCItest` the first runs the levels alone and the others join it at the first level
#'   of at least 4e9 tests (the levels that take seconds); `disCItest` / `binCItest` use every
#'   GPU from n p^2 / 2 >= 1e11, `cmiknnCItest` always. GPUs named here split every level from
#'   the start (Gaussian `method = "stable.fast"` and C computed from `suffStat$data` then run on
#'   the first of them). Results are identical to one GPU's in every case. With
#'   `backend = "auto"` a GPU that fails is left out and the run repeats on the others (on the
#'   CPU when none is left), with a message; [gpupc_last_run()] says which GPUs ran and why.
#' @param cluster `NULL` (the default: one process), or `"mpi"`: the call is one rank of an MPI
#'   job launched with every rank making the same call (`mpirun -np 4 Rscript script.R`, or
#'   `srun` under Slurm), and the ranks share each level's tests, exchanging only their outcomes
#'   through \pkg{Rmpi} (`MPI_COMM_WORLD`). Every rank returns the whole result, identical in every
#'   slot to the one-process call's. Each rank runs its share on its own backend (its own threads,
#'   `numCores`, or a GPU: without `devices`, the rank's place on its host modulo the usable GPUs).
#'   The ranks first compare digests of their inputs and all stop with an error naming `cluster`
#'   when they differ; a rank whose share fails stops every rank with its error ("rank 2: ...").
#'   gaussCItest's levels 0 and 1 run whole on every rank where every rank's engine is of one
#'   kind (the CPU, or one GPU model), and the ranks compare a fingerprint of their results
#'   (ranks whose results differ all stop with an error naming `cluster`; give every rank the
#'   same backend); else they are split like the later levels.
#'   Native tests only (an R-function `indepTest` or `method = "original"` is refused); needs
#'   \pkg{Rmpi}. [gpupc_last_run()]`$ranks` reports the bytes and seconds of the exchanges.
#' @return An object of class [pcalg::pcAlgo-class].
#' @seealso [gpu_pc()], which orients the skeleton; [gpupc_last_run()]; [as_sepset_list()].
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' sk <- gpu_skeleton(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01,
#'                    labels = colnames(X), numCores = 2, backend = "cpu")
#' sk
#' # pcalg's separating sets and maximal p-values
#' sk@sepset[[1]][[3]]
#' round(sk@pMax[1:4, 1:4], 3)
#'
#' # the data instead of C (gpupc's addition), and pcalg's C++ method
#' sk2 <- gpu_skeleton(list(data = X), gaussCItest, alpha = 0.01, labels = colnames(X),
#'                     method = "stable.fast", numCores = 2, backend = "cpu")
#' all.equal(as(sk2@graph, "matrix"), as(sk@graph, "matrix"))
#'
#' # discrete data: the G^2 test on pcalg's binary example
#' data(gmB, package = "pcalg")
#' skb <- gpu_skeleton(list(dm = gmB$x, adaptDF = FALSE), binCItest, alpha = 0.01,
#'                     p = ncol(gmB$x), numCores = 2, backend = "cpu")
#' skb
gpu_skeleton <- function(suffStat, indepTest, alpha, labels, p,
                         method = c("stable", "original", "stable.fast"), m.max = Inf,
                         fixedGaps = NULL, fixedEdges = NULL, NAdelete = TRUE,
                         numCores = NULL, verbose = FALSE,
                         backend = getOption("gpupc.backend", "auto"),
                         devices = getOption("gpupc.devices", NULL), cluster = NULL) {
  cl <- match.call()
  cluster <- cluster_first(cluster, list(
    suffStat = suffStat, indepTest = native_kind(indepTest), alpha = alpha,
    labels = if (missing(labels)) NULL else labels, p = if (missing(p)) NULL else p,
    method = method, m.max = m.max, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
    NAdelete = NAdelete))
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p))
  method <- match.arg(method)
  clk <- gc_clock()
  on.exit(gc_clock_stop(clk))
  out <- skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, lp$p, method, m.max, fixedGaps,
                       fixedEdges, NAdelete, numCores, verbose, backend, p_arg = lp$arg, devices = devices,
                       cluster = cluster)
  record_gc(clk)
  out
}

# R's collector time during a call (gpupc_last_run()$phases["r_gc_s"]). gc.time() counts only
# while switched on, and switching it is the only way to read it: R cannot say whether it is on.
# Counters that never moved, or have not moved since gpupc last switched them off, are taken for
# "off", and switched off again when the call ends (gc_clock_stop(), on exit); any others were
# counting for the user, and go on counting (also when the user has switched counting off again
# since: the counts cannot tell that apart). A clock started inside another's call is NULL: the
# outer call's counts.
gc_clock <- function() {
  if (isTRUE(.gpupc_state$gc_clock_on)) return(NULL)
  g <- gc.time(TRUE)
  .gpupc_state$gc_clock_on <- TRUE
  list(start = g[[3]], off = all(g == 0) || identical(g, .gpupc_state$gc_off_at),
       last = .gpupc_state$last)
}

gc_clock_stop <- function(clk) {
  if (is.null(clk)) return(invisible())
  .gpupc_state$gc_clock_on <- FALSE
  if (clk$off) .gpupc_state$gc_off_at <- gc.time(FALSE)
  invisible()
}

# The collector's seconds since `clk` started, as the `r_gc_s` phase of the run this call recorded
# (none when it recorded none: pcalg's own skeleton for method = "original").
record_gc <- function(clk) {
  last <- .gpupc_state$last
  if (is.null(clk) || is.null(last) || identical(last, clk$last)) return(invisible())
  last$phases["r_gc_s"] <- gc.time(TRUE)[[3]] - clk$start
  .gpupc_state$last <- last
  invisible()
}

# defer_sepsets = TRUE: returns list(pcalgo, sepsets, backend, test, edges, made); when the run
# left its sepsets in Rust, the pcAlgo's sepset slot is left empty and `sepsets` is their handle,
# so that gpu_pc() orients from the handle and makes the list once (attach_sepsets(), or the
# orientation itself); otherwise the slot is set and `sepsets` is NULL. `made`: the list's empty
# rows, which R allocated while the levels ran (NULL for the compact rows), for the handle's list
# to be written into. keep_test = TRUE: `test` is the handle of the
# native test the skeleton ran (NULL if none), which the triple checks then reuse.
# cluster = "mpi": the search runs over the MPI job's ranks (R/cluster.R); the callers compare
# the ranks' inputs first (cluster_first(), before their own checks), else it is done here.
skeleton_impl <- function(cl, suffStat, indepTest, alpha, labels, p, method, m.max, fixedGaps,
                          fixedEdges, NAdelete, numCores, verbose, backend, p_arg = "labels",
                          defer_sepsets = FALSE, devices = NULL, keep_test = FALSE, defer_graph = FALSE,
                          cluster = NULL) {
  # defer_graph (with defer_sepsets): the graph slot is a placeholder without edges and the list
  # returned holds the edges, from which the orientation builds the only graphNEL the user sees
  # first, before any check that could stop one rank alone while the others wait for it
  cluster <- check_cluster(cluster)
  agree_s <- cluster$agreed %||% 0
  if (!is.null(cluster) && is.null(cluster$agreed)) {
    agree_s <- cluster_agree(cluster, list(
      suffStat = suffStat, indepTest = native_kind(indepTest), alpha = alpha, labels = labels,
      p = p, method = method, m.max = m.max, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
      NAdelete = NAdelete))
  }
  alpha <- check_alpha(alpha)
  devices <- check_devices(devices, backend)
  m.max <- check_m_max(m.max, method)
  NAdelete <- check_flag(NAdelete, "NAdelete")
  verbose <- check_flag(as.logical(verbose), "verbose")
  threads <- check_threads(numCores)
  gaps <- check_fixed(fixedGaps, p, "fixedGaps")
  fixed <- check_fixed(fixedEdges, p, "fixedEdges")
  if (method == "original" && !is.null(cluster))
    abort_arg("cluster", "= \"mpi\" splits the levels of {.code method = \"stable\"} and {.code \"stable.fast\"}; {.code \"original\"} depends on the order edges are visited and runs in one process (cluster = NULL).")
  if (method == "original") {
    message("gpu_skeleton(): method = \"original\" depends on the order edges are visited; running pcalg::skeleton() itself")
    sk <- pcalg::skeleton(suffStat, indepTest, alpha, labels = labels, method = "original",
                          m.max = m.max, fixedGaps = fixedGaps, fixedEdges = fixedEdges,
                          NAdelete = NAdelete, numCores = 1, verbose = verbose)
    sk@call <- cl
    return(if (defer_sepsets) list(pcalgo = sk, sepsets = NULL, backend = "pcalg") else sk)
  }
  t0 <- proc.time()[["elapsed"]]
  test <- prepare_test(indepTest, suffStat, p)
  if (test$kind == "rfun" && !is.null(cluster))
    abort_arg("cluster", "= \"mpi\" runs the native tests (gaussCItest, disCItest, binCItest, cmiknnCItest); an R-function {.arg indepTest} is called from R in one process: use cluster = NULL.")
  choice <- cluster_step(cluster, resolve_backend(backend, test$kind, p,
                            n = if (is.null(test$data$dm)) NA_real_ else nrow(test$data$dm), devices = devices))
  if (!is.null(cluster) && is.null(devices) && choice$backend == "cuda")
    choice <- rank_device_choice(cluster, choice)
  # NULL: no gaps / no fixed edges (Rust starts from the complete / empty graph)
  start <- if (is.null(gaps)) NULL else `diag<-`(!gaps, FALSE)
  # gaussCItest's levels 0 and 1 run whole on either backend (no per-edge host structure); on
  # the GPU, C (or the data) stays where R holds it (read in place, uploaded once), while the
  # CPU's test holds a copy
  dense <- test$kind == "gauss"
  on_gpu <- dense && choice$backend == "cuda"
  # several ranks of one engine kind run them whole each, as one process does (pc-core's
  # ranks.rs); where the ranks' engines differ, each rank checks the planned levels' memory itself
  cluster_step(cluster, check_memory(p, if (on_gpu) 8 * as.double(length(test$data$data)) else test$bytes, if (is.null(start)) p * (p - 1) / 2 else sum(start) / 2,
               p_arg, dense = dense))
  # with backend = "auto", a GPU that fails runs the skeleton on the CPU instead (in Rust)
  args <- skeleton_args(p, alpha, start, fixed, NAdelete, m.max, method, threads, fallback = backend == "auto",
                        keep_test = keep_test, cluster = cluster)
  # pcalg's list of lists (not the compact rows): R allocates it while the levels run
  args$sepset_rows_beside <- !use_sepset_rows(p)
  hooks <- level_hooks(verbose, method, choice$backend)
  t1 <- proc.time()[["elapsed"]]
  res <- if (method == "stable" && m.max < 0) {
    no_levels(start, fixed, p, test)
  } else if (test$kind == "rfun") {
    run_rfun(indepTest, suffStat, args, hooks)
  } else {
    # devices_grow: chosen by the work, gaussCItest's GPUs after the first join at a large level
    rs_skeleton(test$kind, c(test$data, list(devices = choice$devices, devices_grow = is.null(devices))),
                args, choice$backend, hooks)
  }
  t2 <- proc.time()[["elapsed"]]
  dev <- if (startsWith(res$backend, "cuda")) choice else list(devices = NULL, devices_why = NULL)
  if (!is.null(res$gpu_failed)) {
    gpu_fallback_messages(res$gpu_failed)
    if (!is.null(res$devices_left))
      dev <- list(devices = res$devices_left, devices_why = "the others after a GPU failed")
  }
  # several GPUs of which only the first ran (none of the levels was large enough for the others)
  used <- res$extra$devices
  if (!is.null(used) && length(used) < length(dev$devices)) {
    dev$devices_why <- paste0(dev$devices_why, "; GPU ", paste(setdiff(dev$devices, used), collapse = ", "),
                              " not needed: no level was large enough")
    dev$devices <- used
  }
  if (verbose) cat(sprintf("gpupc: backend %s (%s)\n", res$backend, choice$why))
  if (test$kind == "gauss") warn_small_n(test$data$n, res$levels)
  if (!is.null(res$extra$small_n_tests)) warn_small_n_discrete(res$extra)
  out <- as_pcalgo(res, labels, cl, graph = !(defer_graph && defer_sepsets))
  t3 <- proc.time()[["elapsed"]]
  ph <- unlist(res$phases)
  .gpupc_state$last <- list(backend = res$backend, why = choice$why, devices = dev$devices,
                            devices_why = dev$devices_why, levels = res$levels,
                            details = res$extra, ranks = ranks_record(res$ranks, agree_s),
                            phases = c(r_checks_s = t1 - t0, ph,
                                       r_output_s = max(0, t2 - t1 - sum(ph)),
                                       graph_object_s = t3 - t2))
  if (defer_sepsets && !is.null(res$sepset_handle))
    return(list(pcalgo = out, sepsets = res$sepset_handle, backend = res$backend, test = res$test_handle,
                edges = res$edges, made = res$sepset_made))
  out <- attach_sepsets(out, if (is.null(res$sepset_handle)) res$sepset else res$sepset_handle, res$sepset_made)
  .gpupc_state$last$phases["sepset_s"] <- proc.time()[["elapsed"]] - t3
  # a list (no levels run, an R-function test) is set at once: only a handle is deferred
  if (defer_sepsets) list(pcalgo = out, sepsets = NULL, backend = res$backend, test = res$test_handle, edges = res$edges) else out
}

# `out` with its sepset slot set from `sepsets` (R's list, or the Rust-side handle). The list goes
# in last (its p^2 cells would make R's collector work during the graph's allocations). A handle's
# list is made and set in the slot by Rust (rs_sepsets() with the object): `@<-` walks a value
# that anything references, all p^2 cells, for a cycle back to the object.
attach_sepsets <- function(out, sepsets, made = NULL) {
  if (inherits(sepsets, "externalptr"))
    return(rs_sepsets(sepsets, use_sepset_rows(length(out@graph@nodes)), out, made))
  out@sepset <- sepsets
  out
}

.gpupc_state <- new.env(parent = emptyenv())

#' Details of the last gpupc run
#'
#' What the last [gpu_skeleton()] or [gpu_pc()] call (or [gpu_query()] / [gpu_mpe()] batch, or
#' [gpu_boot_strength()]) in this R process ran on, and where its time went, kept outside the
#' `pcAlgo` object so that the object stays identical to pcalg's.
#'
#' @return A list: `backend` (e.g. `"cpu (16 threads)"`), `why` (why that backend was chosen),
#'   `devices` and `devices_why` (with the GPU backend: the GPUs the run used, and why those: with
#'   `devices = NULL` every usable GPU where the work is large enough to gain from them, else the
#'   first) and
#'   `levels`, a data frame with one row per level: `level`, `edges` (at the level's start),
#'   `tests`, `removed`, `seconds` (the whole level), `plan_seconds` (listing each edge's
#'   tests) and `backend_seconds` (running them); and `details`, the backend's own figures (for
#'   the GPU, the same names for every test: `nvrtc_compile_s`, `nvrtc_cached`, `nvrtc_target`,
#'   `upload_s` (C, the data or the ranks), `setup_s` and `results_s` (the first levels' graph
#'   and pMax on the device), `kernel_s`, `transfer_s`, `host_s` (host work between launches,
#'   CMI-kNN's permutations), `launches`, `gpu_tests`, `pinv_fallbacks`, and with several GPUs
#'   `devices`, `merge_s` and how the levels were split); and
#'   `ranks` (with `cluster = "mpi"`, else `NULL`): this process's `rank` among `size` ranks,
#'   `check_s` (comparing the ranks' inputs), `allgather_s` (in the exchanges, waiting for the
#'   slowest rank included), `dense_levels`: `"every rank"` where levels 0 and 1 of gaussCItest
#'   ran whole on each rank (every rank's engine of one kind: the CPU, or one GPU model; their
#'   results are compared at the end of those levels, and `dense_check_s` is the seconds that
#'   took), else `"split"` (planned and exchanged like the later levels), and `levels`, per
#'   exchanged level its `edges`, this rank's
#'   `local_edges`, `bytes_sent` and `bytes_received` (the other ranks' outcomes), `local_s` (its
#'   share), `prepare_s` (of `local_s`, making the level ready before the share ran: split by
#'   rows, every rank makes the whole level's rows and keys), `allgather_s`, `finish_s` (the
#'   level's outcomes made from every rank's after the last exchange: by rows, for the whole
#'   level on every rank), and `slowest_s` / `fastest_s`, the slowest and the fastest rank's
#'   seconds on their share of the level (their gap is the time lost to load imbalance), `split` (`"edges"`,
#'   or `"rows"` where each rank ran some rows of a gaussCItest level on its GPU and the ranks
#'   exchanged their separating sets while they ran; `GPUPC_RANK_ROWS=0` turns that off, `1`
#'   splits by rows on the CPU as well), `exchanges` (that level's collectives) and
#'   `slices_taken` (the slices of the level this rank took over from ranks that were behind, as
#'   it ran: by rows, and by edges where every rank runs on the CPU; `GPUPC_RANK_MOVE=0` keeps
#'   every rank to the slices dealt to it, `1` moves them on GPUs' levels split by edges too); and
#'   `phases`, the call's wall seconds by part: `r_checks_s` (checking the arguments in R),
#'   `input_s` (reading them into the Rust core), `setup_s` (opening the backend: for the GPU,
#'   the device, NVRTC and the upload), `search_s` (the level loop; R allocates the rows of the
#'   `sepset` list while it runs, and where that outlasts the loop, the rest is here too),
#'   `r_output_s` (the result's R objects), `graph_object_s` (the graphNEL and the `pcAlgo`
#'   object) and `sepset_s` (filling the `sepset` list of lists; after [gpu_pc()] without triple
#'   checks it is filled during the orientation, inside `orient_s`); and last `r_gc_s`, the
#'   seconds R's garbage collector ran during the whole call, which are also inside the phases
#'   where the collections fell (most often `search_s`, while the list's rows are allocated).
#'   pMax's cells are held outside R's heap; the sepset list is p x p pointers of it (21.6 MB at
#'   p = 1643), so R collects its youngest objects about every other call, and now and then
#'   every generation, which walks everything the R process holds (with pcalg loaded, about 10^6
#'   objects of its packages): its cost is that of `gc()` in the same process. The
#'   timing uses [gc.time()], which R cannot query without switching it on: gpupc switches it off
#'   again after the call when its counts had not moved before it (never, or not since gpupc last
#'   switched it off), and leaves it on otherwise;
#'   after [gpu_pc()] also `orient_s` (the orientation, with the conservative / majority-rule triple
#'   checks), and `orient`: its counts (`stats`; `data_reused`: the GPU triple checks ran on the
#'   skeleton's data still on the device) and the seconds of its parts in Rust (`phases`).
#'   After [gpu_fci()] / [gpu_rfci()] also `pdsep_s` (the Possible-D-SEP stage) and `orient_s`
#'   (the checks and orientation after it), and `pdsep`: the stage's `tests`, `removed` edges,
#'   `evaluator` (where its tests ran) and, for a native test, the seconds of its parts in Rust
#'   (`phases`); with `conservative` or `maj.rule` and a native test, `triples`: the checks'
#'   counts (`stats`: `triples`, `tests`, `ambiguous`, `unfaithful`, `evaluator`, `data_reused`)
#'   and the seconds of their parts in Rust (`phases`).
#'   After a [gpu_query()] or [gpu_mpe()] batch: `backend`, `why`, `devices` and `devices_why`
#'   (as above), `query` (`"marginal"` or `"mpe"`), `evidence_sets` and `phases` (`query_s`, the
#'   propagation, each chunk's marginals normalised into the result's matrices as it ends; for
#'   marginals `results_s`, making and naming those matrices) and, for marginals,
#'   `nodes_propagated` (the nodes of the tree the batch ran on: fewer than the network's where
#'   [gpu_query()] left barren nodes out);
#'   with `cluster = "mpi"` also `ranks`: this process's `rank` among `size` ranks, `check_s`,
#'   `rows` (its evidence sets, from `first_row` on; a rank of none reports `backend` `"none"`),
#'   `bytes_sent`, `bytes_received`, `local_s` (its block) and `allgather_s` (the exchanges).
#'   After [gpu_boot_strength()]: the last resample's `backend`, `why`, `devices` and
#'   `devices_why`, `bootstrap` (`resamples`, `m`, `local`: the resamples this process ran, and
#'   their `seconds`), `phases` (`r_checks_s`, `resamples_s`, `allgather_s`, `strength_s`,
#'   `r_gc_s`) and with `cluster = "mpi"` `ranks` (see [gpu_boot_strength()]).
#'   `NULL` before the first run.
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' fit <- gpu_pc(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01,
#'               labels = colnames(X), numCores = 2, backend = "cpu")
#' run <- gpupc_last_run()
#' run$backend
#' run$levels
#' round(run$phases, 4)
gpupc_last_run <- function() {
  last <- .gpupc_state$last
  # a skeleton's levels are kept as Rust returned them and made a data frame here, on request
  # (as.data.frame() cost every p = 1643 call 0.3 ms)
  if (is.list(last$levels) && !is.data.frame(last$levels)) last$levels <- as.data.frame(last$levels)
  last
}

# pcalg's gSquareDis / gSquareBin warn for every test they answer p = 1 because n < n.min =
# 10 df; gpupc counts them and raises pcalg's warning once, for the smallest n.min.
warn_small_n_discrete <- function(extra) {
  warning(gettextf("n=%d is too small (n < n.min = %d ) for G^2 test (=> treated as independence)",
                   as.integer(extra$n), as.integer(extra$small_n_min)),
          sprintf(" [%.0f tests]", extra$small_n_tests), call. = FALSE, domain = NA)
}

# Stops a run that would not fit in memory before anything large is built, as pcalg's "cannot
# allocate vector of size" would, naming the argument that sets p.
check_memory <- function(p, test_bytes, start_edges, p_arg, dense = FALSE) {
  plan <- rs_memory_plan(as.double(p), as.double(test_bytes), as.double(start_edges), dense,
                         use_sepset_rows(p))
  if (!is.na(plan$available) && plan$need > plan$available)
    cli::cli_abort(c("{.arg {p_arg}}: cannot allocate vector of size {plan$need_text}: a skeleton of {p} variables needs about that much memory (pMax, sepsets, level 0's {format(start_edges, big.mark = ',')} edges), and {format(plan$available / 2^30, digits = 3)} Gb are available.",
                     i = "pcalg would fail alike (\"cannot allocate vector of size ...\")."),
                   class = c("gpupc_memory_error", "gpupc_error"), call = NULL)
  invisible(plan)
}

# pcalg R's skeleton() with m.max < 0: its `while (... ord <= m.max)` never runs, so the start
# graph comes back untested.
no_levels <- function(start, fixed, p, test) {
  check_data_no_levels(test)
  G <- if (is.null(start)) `diag<-`(matrix(TRUE, p, p), FALSE) else start
  pMax <- matrix(-Inf, p, p)
  diag(pMax) <- 1
  list(edges = which(G & upper.tri(G), arr.ind = TRUE), sepset = lapply(seq_len(p), function(.) vector("list", p)),
       pMax = pMax, n.edgetests = 0, max.ord = -1L, backend = "none (m.max < 0)",
       levels = list(level = integer(0)), extra = list(), phases = list())
}

# The checks of the test's data that Rust makes while reading it, for a run that never gets there.
check_data_no_levels <- function(test) {
  d <- test$data
  if (test$kind == "gauss" && !is.null(d$C)) {
    C <- unname(d$C)
    if (!isTRUE(all(abs(C - t(C)) <= 1e-10 * (1 + pmax(abs(C), abs(t(C)))), na.rm = TRUE)))
      abort_arg("suffStat$C", "must be symmetric.")
    if (any(abs(C) > 1 + 1e-12, na.rm = TRUE)) abort_arg("suffStat$C", "must hold correlations in [-1, 1].")
  } else if (test$kind %in% c("dis", "bin")) {
    dm <- d$dm
    if (anyNA(dm)) abort_arg("suffStat$dm", "must not contain NA.")
    if (any(dm < 0 | dm > 254)) abort_arg("suffStat$dm", "codes must be whole numbers in 0..254.")
    if (!any(dm == 0)) abort_arg("suffStat$dm", "must have values in {{0,1,..}} with at least one 0 value.")
    if (test$kind == "bin" && any(dm > 1)) abort_arg("suffStat$dm", "must be binary, i.e. with values in {{0,1}}.")
    if (any(dm >= rep(d$nlev, each = nrow(dm)))) abort_arg("suffStat$dm", "a code is not below its variable's nlev.")
  }
}

warn_small_n <- function(n, levels) {
  hit <- levels$level[levels$level >= n - 3 & levels$tests > 0]
  if (length(hit))
    cli::cli_warn(c("{.arg suffStat$n} = {n} is too small for conditioning sets of size >= {min(hit)}:",
                    i = "gaussCItest gives z = 0 (p = 1) there, as in pcalg, so those tests remove edges."))
}

# The R callbacks the Rust level loop calls on the main thread: verbose lines and a cli
# progress bar (R/progress.R) for levels that take a while.
level_hooks <- function(verbose, method, backend) {
  state <- new.env()
  state$bar <- progress_hooks("gpupc")
  list(
    level_start = function(level, edges, planned) {
      state$bar <- progress_hooks(sprintf("gpupc level %d", level))
      if (verbose) {
        if (method == "stable") cat("Order=", level, "; remaining edges:", 2 * edges, "\n", sep = "")
        else cat("Order = ", level, "; remaining edges: ", edges, "\n", sep = "")
      }
    },
    tick = function(done, total) state$bar$tick(done, total),
    # the GPU failed under backend = "auto": the levels run again on the CPU
    gpu_failed = function() backend <<- "cpu",
    level_end = function(level, tests, removed, seconds) {
      state$bar$done()
      if (verbose) cat(sprintf("  level %d: %.0f tests, %.0f edges removed, %.3f s (%s)\n",
                               level, tests, removed, seconds, backend))
    }
  )
}

as_pcalgo <- function(res, labels, cl, graph = TRUE) {
  Gobject <- if (!graph) empty_graphnel(labels, "undirected") else skeleton_graphnel(res$edges, labels)
  out <- new("pcAlgo", graph = Gobject, call = cl, n = integer(0), max.ord = as.integer(res$max.ord),
             n.edgetests = res$n.edgetests, pMax = res$pMax, zMin = matrix(NA, 1, 1))
  out
}

# The level loop's parameters as they cross to Rust: one named list of fixed types, converted in
# one place (skeleton_params() in src/rust/crates/gpupc-r/src/params.rs). `start` is !fixedGaps
# and `fixed` fixedEdges (NULL: none); `m.max` may be Inf; `threads` 0 means every core;
# `fallback`: a GPU failure reruns on the CPU; `keep_test`: the result holds the native test's
# handle (`test_handle`) for the triple checks; `cluster`: NULL, or the ranks of check_cluster()
# (rank, size, and the allgather Rust calls once per level).
skeleton_args <- function(p, alpha, start, fixed, NAdelete, m.max, method, threads, fallback = FALSE,
                          keep_test = FALSE, cluster = NULL) {
  list(p = as.integer(p), alpha = as.double(alpha), start = start, fixed_edges = fixed,
       na_delete = isTRUE(NAdelete), m_max = as.double(m.max), order = as.character(method),
       threads = as.integer(threads), fallback = isTRUE(fallback), keep_test = isTRUE(keep_test),
       cluster = if (is.null(cluster)) NULL else cluster[c("rank", "size", "allgather")])
}
