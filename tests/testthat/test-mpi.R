## cluster = "mpi": the same gpu_pc() call on every rank of an MPI job gives, on every rank, the
## one-process call's object in every slot; ranks given different data, and a rank whose share
## fails, stop every rank with an error instead of leaving the others waiting. The ranks run
## under `mpirun` (Open MPI) in a child process with a time limit; the test skips without Rmpi or
## mpirun.

mpirun_path <- function() Sys.which("mpirun")[[1]]

## Rmpi installed, and not loaded here: loaded, it starts MPI in this process as a singleton,
## whose variables the launcher below must not inherit.
rmpi_installed <- function() nzchar(system.file(package = "Rmpi"))

## `sweep`: the test belongs to the extended mode; the others, having run in the test command,
## are not run again there (it adds only the long cases).
skip_without_mpi <- function(sweep = FALSE) {
  skip_on_cran()
  if (!sweep) skip_if_run_before()
  skip_if(!rmpi_installed(), "Rmpi is not installed")
  skip_if(!nzchar(mpirun_path()), "mpirun is not installed")
  skip_if(!nzchar(Sys.which("timeout")[[1]]), "timeout (coreutils) is not installed")
}

## Starts `np` ranks of mpi-rank.R on `mode`'s cases; returns each rank's saved list (NULL for a
## rank that saved nothing) and the launcher's exit status and output.
run_ranks <- function(np, mode, env = character(), limit = 120) {
  out <- tempfile("gpupc-mpi-")
  dir.create(out)
  log <- file.path(out, "mpirun.log")
  root <- identical(unname(Sys.info()[["effective_user"]]), "root")
  # Open MPI's job directory (ompi.HOST.UID) goes under TMPDIR: here, in this run's own
  # folder, removed with it, so that R CMD check finds nothing left in its temporary directory
  tmp <- file.path(out, "tmp")
  dir.create(tmp)
  pass <- c(R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep), TMPDIR = tmp, env)
  # an MPI singleton's variables, should this process hold any, would mislead the launcher; R CMD
  # check's R_TESTS names a startup file relative to its own folder
  drop <- grep("^(OMPI_|PMIX_|ORTE_|R_TESTS$)", names(Sys.getenv()), value = TRUE)
  args <- c(if (length(drop)) as.vector(rbind("-u", drop)), "timeout", as.character(limit),
            mpirun_path(), if (root) "--allow-run-as-root", "--oversubscribe", "-np", as.character(np), as.vector(rbind("-x", names(pass))),
            file.path(R.home("bin"), "Rscript"), "--vanilla", test_path("mpi-rank.R"), mode, out,
            normalizePath(test_path("mpi-cases.R")))
  status <- withr::with_envvar(pass, system2("env", args, stdout = log, stderr = log))
  ranks <- lapply(seq_len(np) - 1L, function(r) {
    f <- file.path(out, sprintf("rank%d.rds", r))
    if (file.exists(f)) readRDS(f) else NULL
  })
  res <- list(status = status, ranks = ranks, log = paste(readLines(log, warn = FALSE), collapse = "\n"))
  unlink(out, recursive = TRUE)
  res
}

`%||%` <- function(a, b) if (is.null(a)) b else a

## Every slot but the call, exactly (pMax bit for bit; the graph as its nodes, edge mode and
## adjacency; sepsets element by element).
expect_same_fit <- function(got, want, what) {
  expect_s4_class(got, class(want))
  for (s in setdiff(methods::slotNames(want), "call")) {
    a <- methods::slot(got, s)
    b <- methods::slot(want, s)
    if (methods::is(b, "graph")) {
      expect_identical(graph::nodes(a), graph::nodes(b), label = paste(what, s, "nodes"))
      expect_identical(graph::edgemode(a), graph::edgemode(b), label = paste(what, s, "edgemode"))
      expect_identical(as(a, "matrix"), as(b, "matrix"), label = paste(what, s, "adjacency"))
    } else {
      expect_identical(a, b, label = paste(what, "slot", s))
    }
  }
}

plain_fits <- function(mode) {
  source(test_path("mpi-cases.R"), local = TRUE)
  lapply(mpi_cases(mode), function(f) f(NULL))
}

## `rounds`: the fewest rounds the exchanges of each case must have taken (at most one without
## GPUPC_MPI_ROUND_BYTES). Junction-tree cases (jt_*) are compared whole, with identical().
## `by_rows`: gaussCItest's "stable" levels >= 2 were split by rows (GPUPC_RANK_ROWS = 1).
check_ranks <- function(run, want, np, rounds = 0, by_rows = FALSE) {
  expect_equal(run$status, 0L, info = run$log)
  for (r in seq_len(np)) {
    got <- run$ranks[[r]]
    expect_false(is.null(got), info = paste("rank", r - 1, "saved nothing:", run$log))
    if (is.null(got)) next
    expect_identical(names(got), names(want))
    for (case in names(want)) {
      g <- got[[case]]
      expect_null(g$error, info = paste(case, "rank", r - 1))
      if (!is.null(g$error)) next
      what <- paste(case, "rank", r - 1, "of", np)
      expect_identical(c(g$ranks$rank, g$ranks$size), c(r - 1L, as.integer(np)))
      if (rounds > 0) expect_gte(g$rounds, rounds) else expect_lte(g$rounds, 1)
      if (startsWith(case, "boot_")) {
        expect_identical(g$fit, want[[case]], label = what)
        # this rank's block of the resamples: contiguous, in rank order, all of them once
        sizes <- vapply(run$ranks, function(x) x[[case]]$ranks$resamples %||% NA_integer_, 1L)
        expect_identical(sum(sizes), attr(want[[case]], "R"), label = what)
        expect_true(max(sizes) - min(sizes) <= 1 && all(diff(sizes) <= 0), label = what)
        expect_identical(g$ranks$first, 1L + sum(sizes[seq_len(r - 1)]), label = what)
        next
      }
      if (startsWith(case, "jt_")) {
        expect_identical(g$fit, want[[case]], label = what)
        # this rank's block of the evidence sets: contiguous, in rank order, all of them once
        sets <- length(attr(want[[case]], "pEvidence") %||% attr(want[[case]], "prob"))
        blocks <- vapply(run$ranks, function(x) c(x[[case]]$ranks$first_row %||% NA, x[[case]]$ranks$rows %||% NA), c(0, 0))
        expect_identical(sum(blocks[2, ]), as.double(sets), label = paste(what, "evidence sets"))
        expect_true(all(diff(blocks[2, ]) <= 0) && blocks[2, 1] - blocks[2, np] <= 1, label = what)
        if (g$ranks$rows > 0)
          expect_equal(g$ranks$first_row, 1 + sum(blocks[2, seq_len(r - 1)]), label = what)
        next
      }
      expect_same_fit(g$fit, want[[case]], what)
      lv <- g$ranks$levels
      # gaussCItest's levels 0 and 1 run whole on every rank (all on the CPU here), and only the
      # later levels are split and exchanged; the other tests split every level
      gauss <- grepl("gauss", case)
      expect_identical(g$ranks$dense_levels, if (gauss) "every rank" else "split", label = what)
      if (gauss) expect_true(all(lv$level >= 2), label = what) else expect_true(nrow(lv) >= 1)
      # each level's edges split over the ranks; only outcomes travel, a few bytes an edge
      rows <- lv$split == "rows"
      # (with several ranks the slices move as they run: 71 bytes a rank's progress, as its
      # grant nears its end while it runs and whenever it is idle, then the outcomes once)
      expect_true(all(lv$bytes_sent[!rows] >= 54 &
                        lv$bytes_sent[!rows] <= 54 + 71 * (lv$exchanges[!rows] - 1) + 30 * lv$local_edges[!rows]), label = what)
      expect_true(all(if (np == 1) lv$exchanges[!rows] == 1 else lv$exchanges[!rows] >= 2), label = what)
      # or its rows: keys travel while the ranks run (71 bytes and 12 a new key per exchange),
      # then once the largest failure of each edge the rank tested (34 bytes and 12 an edge)
      expect_identical(any(rows), by_rows && grepl("gauss_stable", case), label = paste(what, "split by rows"))
      least <- 71 * (lv$exchanges[rows] - 1) + 34
      expect_true(all(lv$exchanges[rows] >= 2 & lv$bytes_sent[rows] >= least &
                        lv$bytes_sent[rows] <= least + 12 * 3 * lv$edges[rows]), label = what)
      expect_true(all(lv$local_edges[rows] == lv$edges[rows]), label = what)
      # slices move between several ranks only
      expect_true(all(lv$slices_taken >= 0 & (np > 1 | lv$slices_taken == 0)), label = what)
      # every rank's seconds on its share travel too: this rank's lie between the extremes
      expect_true(all(lv$fastest_s <= lv$local_s & lv$local_s <= lv$slowest_s), label = what)
      # making the level ready is part of the share; making its outcomes follows the exchanges
      expect_true(all(lv$prepare_s >= 0 & lv$prepare_s <= lv$local_s & lv$finish_s >= 0), label = what)
      if (np == 1) expect_true(all(lv$bytes_received == 0 & lv$local_edges == lv$edges))
    }
  }
}

test_that("the ranks of an MPI job give the one-process object, Gaussian, discrete and CMI-kNN, both orders, FCI and RFCI, bootstrap strengths", {
  skip_without_mpi()
  want <- plain_fits("all")
  for (np in c(2, 3)) check_ranks(run_ranks(np, "all"), want, np)
  check_ranks(run_ranks(1, "gauss_stable,dis_fast"), want[c("gauss_stable", "dis_fast")], 1)
})

test_that("exchanges in several rounds give the one-process objects, skeletons and junction-tree batches; levels split by rows too", {
  skip_without_mpi()
  # test-only: GPUPC_MPI_ROUND_BYTES caps the bytes a rank sends per round (else 2^31 / ranks);
  # GPUPC_RANK_ROWS = 1 splits gaussCItest's "stable" levels >= 2 by rows on the CPU as well (the
  # twin of one GPU per rank), the ranks exchanging their keys while they run
  mode <- "gauss_stable,dis_fast,cmiknn_fast,jt_query,jt_mpe"
  want <- plain_fits(mode)
  for (np in c(2, 3))
    check_ranks(run_ranks(np, mode, env = c(GPUPC_MPI_ROUND_BYTES = "64", GPUPC_RANK_ROWS = "1")), want, np, rounds = 2,
                by_rows = TRUE)
})

test_that("a junction-tree batch split over 1 and 3 ranks gives the one-process result", {
  skip_without_mpi()
  skip_if_not_installed("bnlearn")
  want <- plain_fits("jtree")
  # two ranks split the batches of the rounds test above
  for (np in c(1, 3)) check_ranks(run_ranks(np, "jtree"), want, np)
})

test_that("junction-tree batches: different evidence is refused, a failing rank stops all, no hang", {
  skip_without_mpi()
  skip_if_not_installed("bnlearn")
  run <- run_ranks(3, "jtree_bad", limit = 60)
  expect_equal(run$status, 0L, info = run$log)
  after <- plain_fits("jtree_bad")$jt_after
  for (r in 1:3) {
    e <- run$ranks[[r]]$jt_mismatch
    expect_false(is.null(e$error), info = run$log)
    expect_match(e$error, "rank 1's call differs from rank 0's in `evidence`", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    # rank 2's own `backend` fails its check: rank 2 raises it, the others name rank 2
    e <- run$ranks[[r]]$jt_badarg
    expect_match(e$error, paste0(if (r != 3) "rank 2: ", "`backend` must be"), info = run$log)
    expect_true((if (r != 3) "gpupc_rank_error" else "gpupc_invalid_argument") %in% e$class)
    expect_null(run$ranks[[r]]$jt_after$error)
    expect_identical(run$ranks[[r]]$jt_after$fit, after, label = paste("after, rank", r - 1))
  }
  # test-only: GPUPC_FAIL_RANK=rank:query makes that rank fail in its evidence sets
  run <- run_ranks(3, "jtree_fail", env = c(GPUPC_FAIL_RANK = "1:query"), limit = 60)
  expect_equal(run$status, 0L, info = run$log)
  for (r in 1:3) {
    e <- run$ranks[[r]]$jt_fail
    expect_false(is.null(e$error), info = run$log)
    expect_match(gsub("\\s+", " ", e$error),
                 paste0(if (r != 2) "gpupc: rank 1: ", "internal error: a failure injected in this rank's evidence sets"),
                 fixed = TRUE)
    expect_true((if (r != 2) "gpupc_rank_error" else "gpupc_internal_error") %in% e$class)
    # one evidence set: rank 1 has none to fail on, and the ranks are still in step
    expect_null(run$ranks[[r]]$jt_after$error)
    expect_identical(run$ranks[[r]]$jt_after$fit, after, label = paste("after the failure, rank", r - 1))
  }
})

test_that("ranks given different data all stop with an error naming the input; R-function tests are refused", {
  skip_without_mpi()
  run <- run_ranks(2, "mismatch", limit = 60)
  same <- plain_fits("mismatch")$same
  expect_equal(run$status, 0L, info = run$log)
  for (r in 1:2) {
    e <- run$ranks[[r]]$gauss
    expect_false(is.null(e$error), info = run$log)
    expect_match(e$error, "rank 1's call differs from rank 0's in `suffStat`", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    e <- run$ranks[[r]]$rfun
    expect_match(e$error, "R-function", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    # a host's own failure before the search: rank 1 raises it, rank 0 names rank 1
    e <- run$ranks[[r]]$step
    expect_match(e$error, if (r == 2) "^no room on this host$" else "rank 1: no room on this host")
    if (r == 1) expect_true("gpupc_rank_error" %in% e$class)
    e <- run$ranks[[r]]$fci
    expect_match(e$error, "rank 1's call differs from rank 0's in `pdsep.max`", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    # compared before gpu_pc()'s own checks, which would stop rank 1 alone
    e <- run$ranks[[r]]$badflag
    expect_match(e$error, "rank 1's call differs from rank 0's in `solve.confl`", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    # bootstrap resamples drawn after another seed on rank 1
    e <- run$ranks[[r]]$boot
    expect_match(e$error, "rank 1's call differs from rank 0's in `resamples`", fixed = TRUE)
    expect_match(e$error, "`cluster`", fixed = TRUE)
    expect_true("gpupc_invalid_argument" %in% e$class)
    # and the ranks are still in step
    expect_null(run$ranks[[r]]$same$error)
    if (is.null(run$ranks[[r]]$same$error))
      expect_same_fit(run$ranks[[r]]$same$fit, same, paste("same, rank", r - 1))
  }
})

test_that("a rank that fails before the first level (or resample) stops the others there", {
  skip_without_mpi()
  # test-only: GPUPC_FAIL_RANK=rank:start makes that rank fail after reading its inputs
  run <- run_ranks(3, "start", env = c(GPUPC_FAIL_RANK = "2:start"), limit = 60)
  expect_equal(run$status, 0L, info = run$log)
  for (r in 1:3) {
    e <- run$ranks[[r]]$gauss
    expect_false(is.null(e$error), info = run$log)
    expect_match(e$error, paste0(if (r < 3) "rank 2: ", "internal error: a failure injected before the first level"),
                 fixed = TRUE)
    expect_true((if (r < 3) "gpupc_rank_error" else "gpupc_internal_error") %in% e$class)
    # and before its first bootstrap resample
    e <- run$ranks[[r]]$boot
    expect_false(is.null(e$error), info = run$log)
    expect_match(gsub("\\s+", " ", e$error), paste0(if (r < 3) "rank 2: ", "internal error: a failure injected before the first resample"),
                 fixed = TRUE)
    expect_true((if (r < 3) "gpupc_rank_error" else "gpupc_internal_error") %in% e$class)
  }
})

## Every rank of `run` stopped `cases` with the error of rank `failing` at `level`.
expect_rank_failure <- function(run, np, failing, level, cases) {
  expect_equal(run$status, 0L, info = run$log)
  for (r in seq_len(np)) {
    for (case in cases) {
      e <- run$ranks[[r]][[case]]
      expect_false(is.null(e$error), info = paste(case, "rank", r - 1, run$log))
      expect_match(e$error, sprintf("rank %d: internal error: a failure injected at level %d", failing, level),
                   fixed = TRUE)
      expect_true("gpupc_rank_error" %in% e$class)
    }
  }
}

test_that("a rank whose share fails stops every rank with its error, and the next call works", {
  skip_without_mpi()
  # test-only: GPUPC_FAIL_RANK=rank:level makes that rank's share of that level fail (its block, or
  # gaussCItest's dense level 1, which every rank runs whole)
  run <- run_ranks(3, "fail", env = c(GPUPC_FAIL_RANK = "1:1"), limit = 60)
  expect_rank_failure(run, 3, 1, 1, c("gauss", "dis"))
  after <- plain_fits("fail")$after
  for (r in 1:3) {
    # the ranks stayed in step: a call that ends before the failing level runs as one process
    expect_null(run$ranks[[r]]$after$error)
    if (is.null(run$ranks[[r]]$after$error))
      expect_same_fit(run$ranks[[r]]$after$fit, after, paste("after, rank", r - 1))
  }
})

test_that("ranks whose levels 0-1 differ all stop with an error naming the cluster, and the next call works", {
  skip_without_mpi()
  # test-only: GPUPC_FAIL_RANK=rank:dense alters that rank's fingerprint of levels 0-1, as an
  # engine that rounds differently would
  run <- run_ranks(3, "dense", env = c(GPUPC_FAIL_RANK = "2:dense"), limit = 60)
  expect_equal(run$status, 0L, info = run$log)
  after <- plain_fits("dense")$after
  for (r in 1:3) {
    for (case in c("gauss", "gauss_fast")) {
      e <- run$ranks[[r]][[case]]
      expect_false(is.null(e$error), info = paste(case, "rank", r - 1, run$log))
      expect_match(e$error, "rank 2's levels 0-1 differ from rank 0's", fixed = TRUE)
      expect_true("gpupc_invalid_argument" %in% e$class)
    }
    # a test without dense levels is split as before, and the ranks are still in step
    expect_null(run$ranks[[r]]$after$error)
    if (is.null(run$ranks[[r]]$after$error))
      expect_same_fit(run$ranks[[r]]$after$fit, after, paste("after, rank", r - 1))
  }
})

test_that("four ranks (some with no edges at a level), and a failure at level 0", {
  skip_without_mpi(sweep = TRUE)
  skip_if_not(extended_mode(), "extended mode only")
  want <- plain_fits("all")
  check_ranks(run_ranks(4, "all", limit = 300), want, 4)
  run <- run_ranks(2, "fail", env = c(GPUPC_FAIL_RANK = "0:0"), limit = 60)
  expect_rank_failure(run, 2, 0, 0, c("gauss", "dis", "after"))
})

test_that("cluster is refused outside an MPI job and for values other than \"mpi\"", {
  data(gmG, package = "pcalg", envir = environment())
  st <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
  expect_error(gpu_skeleton(st, pcalg::gaussCItest, alpha = 0.01, p = 8, backend = "cpu", cluster = "pvm"),
               class = "gpupc_invalid_argument", regexp = "cluster")
  expect_error(gpu_fci(st, pcalg::gaussCItest, alpha = 0.01, p = 8, backend = "cpu", cluster = 1),
               class = "gpupc_invalid_argument", regexp = "cluster")
  expect_error(gpu_rfci(st, pcalg::gaussCItest, alpha = 0.01, p = 8, backend = "cpu", cluster = "pvm"),
               class = "gpupc_invalid_argument", regexp = "cluster")
  skip_if(!rmpi_installed(), "Rmpi is not installed")
  skip_if(gpupc:::under_mpi_launcher(), "this process runs under an MPI launcher")
  expect_error(gpu_skeleton(st, pcalg::gaussCItest, alpha = 0.01, p = 8, backend = "cpu", cluster = "mpi"),
               class = "gpupc_invalid_argument", regexp = "MPI launcher")
})

test_that("gpu_query() and gpu_mpe() check cluster as gpu_pc() does", {
  skip_if_not_installed("bnlearn")
  jt <- gpu_jtree(system.file("extdata", "networks", "asia.bif.gz", package = "gpupc"), backend = "cpu", numCores = 1)
  expect_error(gpu_query(jt, cluster = "pvm"), class = "gpupc_invalid_argument", regexp = "cluster")
  expect_error(gpu_mpe(jt, cluster = c("mpi", "mpi")), class = "gpupc_invalid_argument", regexp = "cluster")
  expect_identical(gpu_mpe(jt, cluster = NULL), gpu_mpe(jt))
  skip_if(!rmpi_installed(), "Rmpi is not installed")
  skip_if(gpupc:::under_mpi_launcher(), "this process runs under an MPI launcher")
  expect_error(gpu_query(jt, nodes = "lung", cluster = "mpi"), class = "gpupc_invalid_argument", regexp = "MPI launcher")
})

test_that("the ranks' input digest of large vectors: the same on any threads, changed by any element", {
  d <- gpupc:::rs_input_digest
  x <- sin(seq_len(3e6))
  dx <- d(x)
  expect_match(dx, "^[0-9a-f]{16}$")
  expect_identical(d(x), dx)
  expect_identical(d(x, threads = 1L), dx)
  expect_identical(d(x, threads = 2L), dx)
  for (i in c(1, 1.5e6, 3e6)) {
    y <- x
    y[i] <- y[i] * (1 + .Machine$double.eps)
    expect_false(identical(d(y), dx))
  }
  expect_false(identical(d(x[-3e6]), dx))
  expect_false(identical(d(c(x[1048577:2097152], x[1:1048576], x[-(1:2097152)])), dx))
  expect_false(identical(d(list(C = x, n = 10)), d(list(C = y, n = 10))))
  expect_false(identical(d(matrix(x, 1000)), dx))

  i <- seq_len(3e6) %% 1000L
  di <- d(i)
  expect_identical(d(i, threads = 1L), di)
  i[2e6] <- i[2e6] + 1L
  expect_false(identical(d(i), di))
  expect_false(identical(d(as.numeric(i)), d(i)))

  l <- seq_len(3e6) %% 3L == 0L
  l[5] <- NA
  dl <- d(l)
  expect_identical(d(l, threads = 1L), dl)
  l[5] <- TRUE
  expect_false(identical(d(l), dl))

  r <- as.raw(seq_len(2.5e7) %% 251L)
  dr <- d(r)
  expect_identical(d(r, threads = 1L), dr)
  r[2.5e7] <- as.raw(0)
  expect_false(identical(d(r), dr))

  withr::local_options(gpupc.threads = 1)
  expect_identical(gpupc:::digest_threads(), 1L)
  withr::local_options(gpupc.threads = "many")
  expect_identical(gpupc:::digest_threads(), 1L)
  expect_identical(d(x), dx)
})
