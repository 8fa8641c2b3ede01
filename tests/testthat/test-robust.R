## Nothing a pcalg user passes breaks gpupc. Inputs pcalg takes give pcalg's result,
## an R indepTest is called exactly as pcalg calls it and its conditions reach the caller's
## handlers, memory that cannot be had is an R error, threads stay within the cores, and forked
## children keep working.

skip_if(selftest())

rob <- local({
  set.seed(13)
  g <- pcalg::randomDAG(7, 0.5)
  d <- pcalg::rmvDAG(150, g)
  list(d = d, C = stats::cor(d), n = 150L)
})
ss <- list(C = rob$C, n = rob$n)

both <- function(fun, ..., method = "stable") {
  ma <- if (fun == "pc") list(skel.method = method) else list(method = method)
  args <- c(list(...), ma)
  err <- function(e) structure(conditionMessage(e), class = "failed")
  list(got = tryCatch(quietly(do.call(under_test(fun), c(args, backend = "cpu"))), error = err),
       want = tryCatch(quietly(do.call(reference(fun), args)), error = err))
}

# pcalg's result, or an error from both
expect_pcalg <- function(label, ..., funs = c("skeleton", "pc"), methods = c("stable", "stable.fast")) {
  for (fun in funs) for (method in methods) {
    r <- both(fun, ..., method = method)
    lab <- sprintf("%s [%s, %s]", label, fun, method)
    if (inherits(r$got, "failed") || inherits(r$want, "failed")) {
      expect_identical(inherits(r$got, "failed"), inherits(r$want, "failed"),
                       label = paste(lab, "gpupc:", if (inherits(r$got, "failed")) r$got else "ok", "pcalg:", if (inherits(r$want, "failed")) r$want else "ok"))
    } else {
      expect_same_pcalgo(r$got, r$want, 0.05, lab, strict_type = method == "stable.fast")
    }
  }
}

test_that("inputs pcalg takes give pcalg's result", {
  expect_pcalg("C as a data frame", suffStat = list(C = as.data.frame(rob$C), n = rob$n),
               indepTest = pcalg::gaussCItest, alpha = 0.05, p = 7L, methods = "stable")
  skip_if_not_installed("Matrix")
  Cm <- Matrix::nearPD(rob$C, corr = TRUE)$mat
  got <- quietly(gpupc::gpu_pc(list(C = Cm, n = rob$n), pcalg::gaussCItest, 0.05, p = 7L, backend = "cpu"))
  want <- quietly(pcalg::pc(list(C = Cm, n = rob$n), pcalg::gaussCItest, 0.05, p = 7L))
  expect_same_pcalgo(got, want, 0.05, "C as a Matrix (nearPD)")
  Cn <- rob$C; Cn[2, ] <- Cn[, 2] <- NA; Cn[2, 2] <- 1   # cor() of a constant column
  expect_pcalg("NA in C", suffStat = list(C = Cn, n = rob$n), indepTest = pcalg::gaussCItest,
               alpha = 0.05, p = 7L, m.max = 1)
  for (n in list(Inf, 150.5, 0))
    expect_pcalg(paste("n =", n), suffStat = list(C = rob$C, n = n), indepTest = pcalg::gaussCItest,
                 alpha = 0.05, p = 7L, methods = if (is.finite(n)) c("stable", "stable.fast") else "stable")
  expect_pcalg("alpha = 1", suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 1, p = 7L)
  expect_pcalg("m.max = -1", suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 0.05, p = 7L, m.max = -1)
  expect_pcalg("m.max = 1.5", suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 0.05, p = 7L, m.max = 1.5)
  # pcalg's level loop reads m.max with `&&`: R 4.2 warns about a length > 1 there and uses
  # m.max[1], and R CMD check --as-cran turns that into an abort of R in any package
  # (_R_CHECK_LENGTH_1_LOGIC2_); here it aborts in gpupc's own code only ("package:" form)
  withr::with_envvar(c(`_R_CHECK_LENGTH_1_LOGIC2_` = "package:gpupc,abort,verbose"),
    expect_pcalg("m.max = c(1, 2)", suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 0.05, p = 7L,
                 m.max = c(1, 2), methods = "stable"))
  expect_error(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, p = 7L, m.max = c(1, 2), method = "stable.fast"),
               "m\\.max")
  expect_pcalg("fractional p", suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 0.05, p = 7.6)
  for (nc in list(0.5, 2000, 1e6, 1e10, Inf))
    expect_pcalg(paste("numCores =", nc), suffStat = ss, indepTest = pcalg::gaussCItest, alpha = 0.05,
                 p = 7L, numCores = nc, funs = "skeleton")
})

test_that("unclear inputs get errors that name the argument", {
  e <- function(expr) tryCatch({ expr; "no error" }, error = conditionMessage)
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, labels = c(letters[1:6], "a"))), "labels.*unique")
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, labels = c(letters[1:6], NA))), "labels.*NA")
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, labels = c(letters[1:6], ""))), "labels.*empty")
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, p = 3e9)), "p.*2147483647")
  dm <- matrix(c(0, 1, 1, 0, Inf, 1), 3, 2)
  expect_match(e(gpupc::gpu_skeleton(list(dm = dm, adaptDF = FALSE), pcalg::disCItest, 0.05, p = 2)), "suffStat\\$dm.*Inf")
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, p = 7L, numCores = 0)), "numCores")
  expect_match(e(gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, p = 7L, numCores = NA)), "numCores")
})

test_that("a run that cannot fit in memory is an R error naming the argument, before any work", {
  never <- function(x, y, S, suffStat) stop("must not be called")
  # p = 50000 fits a machine of a few hundred GB, which would plan its 1.25e9 edges: only where
  # it does not fit is the refusal before any work checked
  avail <- gpupc:::rs_memory_plan(5e4, 0, 5e4 * (5e4 - 1) / 2, FALSE, gpupc:::use_sepset_rows(5e4))
  if (!is.na(avail$available) && avail$need > avail$available) {
    err <- tryCatch(gpupc::gpu_skeleton(list(), never, 0.05, labels = paste0("v", 1:50000), backend = "cpu"),
                    error = function(e) e)
    expect_s3_class(err, "gpupc_memory_error")
    expect_match(conditionMessage(err), "labels.*cannot allocate vector of size")
  }
  err <- tryCatch(gpupc::gpu_skeleton(list(), never, 0.05, p = 1e6, backend = "cpu"), error = function(e) e)
  expect_s3_class(err, "gpupc_memory_error")
  expect_match(conditionMessage(err), "`p`.*cannot allocate vector of size [0-9.]+ Tb")
  # binCItest on 3 x 50000 (a machine with the memory for it would run 1.25e9 tests: not here)
  if (!is.na(avail$available) && avail$need > avail$available) {
    err <- tryCatch(gpupc::gpu_skeleton(list(dm = matrix(0:1, 3, 50000), adaptDF = FALSE), pcalg::binCItest, 0.05,
                                        p = 50000, backend = "cpu"), error = function(e) e)
    expect_s3_class(err, "gpupc_memory_error")
    expect_match(conditionMessage(err), "`p`.*cannot allocate vector of size")
  }
  # the GPU's start planned against its free memory (pc-cuda's runtime/memplan.rs, no device needed): C
  # and its reserve, the dense levels beside it; the error names the argument and the bytes
  gb <- 2^30
  ok <- gpupc:::rs_device_plan("gauss", 20000, 0, 80 * gb)
  expect_identical(ok$need, 8 * 20000^2 + 2^29)
  expect_true(ok$dense)
  expect_false(gpupc:::rs_device_plan("gauss", 20000, 0, 4 * gb)$dense)
  expect_identical(gpupc:::rs_device_plan("dis", 724, 20000, 80 * gb)$need, 20000 * 724 + 4 * 724 + 2^26)
  for (case in list(list("gauss", 55572, 0, 16 * gb, "suffStat\\$C", "23.5 Gb", "16.0 Gb"),
                    list("dis", 20000, 1e6, 8 * gb, "suffStat\\$dm", "18.7 Gb", "8.0 Gb"))) {
    err <- tryCatch(do.call(gpupc:::rs_device_plan, case[1:4]), error = function(e) e)
    expect_s3_class(err, "gpupc_memory_error")
    expect_s3_class(err, "gpupc_cuda_error")
    expect_match(conditionMessage(err), paste0(case[[5]], ".*cannot allocate ", case[[6]], " on the GPU.*", case[[7]], " of GPU memory are free"))
  }
})

test_that("disCItest's n < n.min warning reaches the caller, as from pcalg", {
  set.seed(2)
  dm <- matrix(sample(0:3, 60 * 4, TRUE), 60, 4)
  st <- list(dm = dm, nlev = rep(4L, 4), adaptDF = FALSE)
  expect_warning(got <- gpupc::gpu_skeleton(st, pcalg::disCItest, 0.05, p = 4, backend = "cpu"), "n < n.min")
  want <- suppressWarnings(pcalg::skeleton(st, pcalg::disCItest, 0.05, p = 4))
  expect_same_pcalgo(got, want, 0.05, "disCItest with small n")
  # exactly when pcalg warns: same smallest n.min, and for a skeleton the same number of tests
  # (small-n-cases.R; bench/run parity small-n runs the same cases with backend = "cuda")
  check <- new.env()
  sys.source(test_path("small-n-cases.R"), envir = check)
  rows <- do.call(rbind, lapply(check$small_n_cases(), check$small_n_compare, backend = "cpu"))
  expect_gte(sum(rows$pcalg_tests > 0), 5)
  expect_gte(sum(rows$pcalg_tests == 0), 2)
  for (k in which(!rows$ok)) fail(paste(capture.output(print(rows[k, ], row.names = FALSE)), collapse = "\n"))
  expect_true(all(rows$ok))
})

## A stateful test: its p-values depend on how often and in which order it is called.
counting_test <- function() {
  calls <- character(0)
  f <- function(x, y, S, suffStat) {
    calls <<- c(calls, paste(x, y, paste(S, collapse = ",")))
    stats::runif(1) * 0.2 + pcalg::gaussCItest(x, y, S, suffStat) * 0.8
  }
  list(f = f, calls = function() calls)
}

test_that("an R indepTest is called exactly as pcalg calls it (same (x, y, S), same order)", {
  for (method in c("stable", "stable.fast")) {
    a <- counting_test(); b <- counting_test()
    set.seed(5); want <- pcalg::skeleton(ss, a$f, 0.05, p = 7L, method = method)
    set.seed(5); got <- gpupc::gpu_skeleton(ss, b$f, 0.05, p = 7L, method = method, backend = "cpu")
    expect_identical(b$calls(), a$calls(), label = paste("call sequence", method))
    expect_same_pcalgo(got, want, 0.05, paste("random test after set.seed()", method),
                       strict_type = method == "stable.fast")
  }
  # pcalg's R loop passes integer indices, its C++ doubles
  seen <- NULL
  ty <- function(x, y, S, suffStat) { seen <<- c(seen, typeof(x), typeof(S)); 0.5 }
  gpupc::gpu_skeleton(ss, ty, 0.05, p = 7L, backend = "cpu"); t1 <- unique(seen); seen <- NULL
  pcalg::skeleton(ss, ty, 0.05, p = 7L); expect_identical(t1, unique(seen)); seen <- NULL
  gpupc::gpu_skeleton(ss, ty, 0.05, p = 7L, method = "stable.fast", backend = "cpu"); t1 <- unique(seen); seen <- NULL
  pcalg::skeleton(ss, ty, 0.05, p = 7L, method = "stable.fast"); expect_identical(t1, unique(seen))
})

test_that("a logical or NA from an R indepTest counts as pcalg counts it", {
  lg <- function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat) > 0.05
  na <- function(x, y, S, suffStat) if ((x + y) %% 3 == 0) NA else pcalg::gaussCItest(x, y, S, suffStat)
  for (f in list(lg, na)) for (nad in c(TRUE, FALSE))
    expect_pcalg("logical / NA test", suffStat = ss, indepTest = f, alpha = 0.05, p = 7L, NAdelete = nad)
})

test_that("warnings, messages, errors and interrupts of an R indepTest reach the caller's handlers", {
  wm <- function(x, y, S, suffStat) {
    warning("w-13"); message("m-13")
    pcalg::gaussCItest(x, y, S, suffStat)
  }
  for (method in c("stable", "stable.fast")) {
    # suppressWarnings / suppressMessages muffle them: nothing is left over
    out <- testthat::capture_warnings(testthat::capture_messages(
      suppressWarnings(suppressMessages(gpupc::gpu_skeleton(ss, wm, 0.05, p = 7L, method = method, backend = "cpu")))))
    expect_length(out, 0)
    count <- function(f) {
      n <- c(w = 0, m = 0)
      withCallingHandlers(f(ss, wm, 0.05, p = 7L, method = method),
                          warning = function(w) { n[["w"]] <<- n[["w"]] + 1; invokeRestart("muffleWarning") },
                          message = function(m) { n[["m"]] <<- n[["m"]] + 1; invokeRestart("muffleMessage") })
      n
    }
    expect_identical(count(function(...) gpupc::gpu_skeleton(..., backend = "cpu")), count(pcalg::skeleton))
    # an exiting handler gets the test's own condition
    w <- tryCatch(gpupc::gpu_skeleton(ss, wm, 0.05, p = 7L, method = method, backend = "cpu"), warning = function(w) w)
    expect_identical(conditionMessage(w), "w-13")
    boom <- function(x, y, S, suffStat) stop(structure(class = c("my_error", "error", "condition"),
                                                       list(message = "boom-13", call = NULL)))
    e <- tryCatch(gpupc::gpu_skeleton(ss, boom, 0.05, p = 7L, method = method, backend = "cpu"), my_error = function(e) e)
    expect_s3_class(e, "my_error")
    expect_identical(conditionMessage(e), "boom-13")
    # an interrupt raised in the test reaches tryCatch(interrupt = )
    intr <- function(x, y, S, suffStat) {
      if (length(S) == 1) signalCondition(structure(class = c("interrupt", "condition"), list(message = "", call = NULL)))
      pcalg::gaussCItest(x, y, S, suffStat)
    }
    got <- tryCatch(gpupc::gpu_skeleton(ss, intr, 0.05, p = 7L, method = method, backend = "cpu"),
                    interrupt = function(i) "interrupted")
    expect_identical(got, "interrupted")
  }
  # R is fine afterwards, and the abandoned worker threads are gone
  expect_s4_class(gpupc::gpu_skeleton(ss, wm, 0.05, p = 7L, backend = "cpu") |> quietly(), "pcAlgo")
})

test_that("gpupc works in forked children after the parent used it, with every argument", {
  skip_on_os("windows")
  fg <- matrix(FALSE, 7, 7); fg[1, 7] <- fg[7, 1] <- TRUE
  fe <- matrix(FALSE, 7, 7); fe[2, 3] <- fe[3, 2] <- TRUE
  dis <- local({ set.seed(4); dm <- matrix(sample(0:2, 400 * 5, TRUE), 400, 5); list(dm = dm, nlev = rep(3L, 5), adaptDF = FALSE) })
  calls <- list(
    function() gpupc::gpu_skeleton(ss, pcalg::gaussCItest, 0.05, p = 7L, fixedGaps = fg, fixedEdges = fe, numCores = 2, backend = "cpu"),
    function() gpupc::gpu_pc(ss, pcalg::gaussCItest, 0.05, p = 7L, fixedGaps = fg, fixedEdges = fe, skel.method = "stable.fast",
                             m.max = 2, NAdelete = FALSE, u2pd = "relaxed", conservative = TRUE, backend = "cpu"),
    function() gpupc::gpu_pc(ss, function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat), 0.05, p = 7L,
                             fixedGaps = fg, fixedEdges = fe, maj.rule = TRUE, backend = "cpu"),
    function() gpupc::gpu_skeleton(dis, pcalg::disCItest, 0.05, p = 5L, fixedEdges = fe[1:5, 1:5], backend = "cpu")
  )
  want <- lapply(calls, function(f) quietly(f()))   # the parent uses every path first
  # mclapply's children, themselves in a forked job with a time limit: a deadlocked child
  # (rayon's global pool has no threads after a fork) fails the test instead of hanging it
  job <- parallel::mcparallel(parallel::mclapply(seq_along(calls), function(k) quietly(calls[[k]]()), mc.cores = 2))
  got <- parallel::mccollect(job, wait = FALSE, timeout = 120)
  if (is.null(got)) {
    tools::pskill(job$pid)
    parallel::mccollect(job, wait = FALSE)
    fail("the forked children did not finish within 120 s")
    return()
  }
  got <- got[[1]]
  for (k in seq_along(calls)) {
    expect_false(inherits(got[[k]], "try-error"), label = paste("child", k))
    if (!inherits(got[[k]], "try-error")) expect_same_pcalgo(got[[k]], want[[k]], 0.05, paste("forked child", k))
  }
})

test_that("the junction tree's CPU engine works in forked children after the parent used it", {
  skip_on_os("windows")
  skip_if_not_installed("bnlearn")
  fit <- jt_read_fit("alarm")
  jt <- gpu_jtree(fit, backend = "cpu", numCores = 2)
  # 3000 evidence sets: buffers large enough that filling them is split among threads
  ev <- jt_sample_evidence(fit, 3000, 0.1, seed = 3)
  calls <- list(function() gpu_query(jt, evidence = ev), function() gpu_mpe(jt, evidence = ev))
  want <- lapply(calls, function(f) f())   # the parent uses both first
  # each call in a child of its own, killed if it has not answered within 120 s (a deadlocked
  # child fails the test instead of hanging it)
  jobs <- lapply(calls, function(f) parallel::mcparallel(f()))
  pids <- as.character(vapply(jobs, function(j) j$pid, 0))
  got <- list()
  pending <- jobs
  deadline <- Sys.time() + 120
  while (length(pending) && Sys.time() < deadline) {
    r <- parallel::mccollect(pending, wait = FALSE, timeout = 1)
    if (!is.null(r)) got[names(r)] <- r
    pending <- Filter(function(j) !(as.character(j$pid) %in% names(got)), pending)
  }
  for (j in pending) tools::pskill(j$pid)
  if (length(pending)) parallel::mccollect(pending, wait = FALSE, timeout = 5)
  for (k in seq_along(calls)) {
    expect_true(pids[k] %in% names(got), label = paste("forked child", k, "answered within 120 s"))
    if (pids[k] %in% names(got)) expect_identical(got[[pids[k]]], want[[k]], label = paste("forked child", k))
  }
})
