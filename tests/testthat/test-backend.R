## Backends: "cpu", "cuda" (an error naming CUDA/GPU on a machine without one), "auto",
## options(gpupc.backend), verbose output.

skip_if(selftest())

be_suff <- local({
  set.seed(31337)
  g <- pcalg::randomDAG(25, 3 / 24)
  d <- pcalg::rmvDAG(500, g)
  list(C = stats::cor(d), n = 500L)
})

gpu_usable <- function() isTRUE(gpupc::gpu_info()$usable)

## stdout and messages of an expression, as one string, plus its value
capture_all <- function(expr) {
  msgs <- character(0)
  out <- utils::capture.output(val <- withCallingHandlers(expr, message = function(m) {
    msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage")
  }))
  list(value = val, text = paste(c(out, msgs), collapse = "\n"))
}

test_that("gpu_info() describes the GPU or says why none is usable", {
  info <- gpupc::gpu_info()
  expect_type(info, "list")
  expect_true(is.logical(info$usable) && length(info$usable) == 1 && !is.na(info$usable))
  if (!info$usable) {
    expect_true(is.character(info$reason) && length(info$reason) == 1 && nzchar(info$reason))
  } else {
    expect_true(is.character(info$name) && nzchar(info$name))
  }
})

test_that("backend = 'cpu' works and equals pcalg (Gaussian and discrete)", {
  for (m in c("stable", "stable.fast")) {
    want <- pcalg::skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m)
    got <- gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m, backend = "cpu")
    expect_same_pcalgo(got, want, 0.01, paste("backend cpu gauss", m), strict_type = m == "stable.fast")
    set.seed(9); want <- pcalg::pc(be_suff, pcalg::gaussCItest, 0.01, p = 25, skel.method = m)
    set.seed(9); got <- gpupc::gpu_pc(be_suff, pcalg::gaussCItest, 0.01, p = 25, skel.method = m, backend = "cpu")
    expect_same_pcalgo(got, want, 0.01, paste("backend cpu pc gauss", m), strict_type = m == "stable.fast")
  }
  o <- load_disc("survey", 2000)
  s <- list(dm = unname(o$dm), nlev = o$nlev, adaptDF = FALSE)
  want <- quietly(pcalg::skeleton(s, pcalg::disCItest, 0.05, p = 6, m.max = 4))
  got <- quietly(gpupc::gpu_skeleton(s, pcalg::disCItest, 0.05, p = 6, m.max = 4, backend = "cpu"))
  expect_same_pcalgo(got, want, 0.05, "backend cpu discrete")
})

test_that("backend = 'cuda' errors clearly without a usable GPU (and works with one)", {
  if (!gpu_usable()) {
    for (m in c("stable", "stable.fast")) {
      expect_error(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m, backend = "cuda"),
                   "CUDA|GPU|cuda|gpu")
      expect_error(gpupc::gpu_pc(be_suff, pcalg::gaussCItest, 0.01, p = 25, skel.method = m, backend = "cuda"),
                   "CUDA|GPU|cuda|gpu")
    }
    ## and R still works
    got <- gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = "cpu")
    expect_same_pcalgo(got, pcalg::skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25), 0.01,
                       "cpu after a cuda error")
  } else {
    for (cfg in list(c(25, 3, 500), c(120, 4, 1000), c(320, 2, 2000))) for (m in c("stable", "stable.fast")) {
      suff <- local({ set.seed(cfg[1]); g <- pcalg::randomDAG(cfg[1], cfg[2] / (cfg[1] - 1))
                      d <- pcalg::rmvDAG(cfg[3], g); list(C = stats::cor(d), n = cfg[3]) })
      want <- pcalg::skeleton(suff, pcalg::gaussCItest, 0.01, p = cfg[1], method = m)
      got <- gpupc::gpu_skeleton(suff, pcalg::gaussCItest, 0.01, p = cfg[1], method = m, backend = "cuda")
      expect_same_pcalgo(got, want, 0.01, paste("cuda p =", cfg[1], m), strict_type = m == "stable.fast",
                         rerun = function(a) pcalg::skeleton(suff, pcalg::gaussCItest, a, p = cfg[1], method = m))
    }
  }
})

test_that("discrete tests on backend = 'cuda': a clear error without a GPU, pcalg's answer with one", {
  o <- load_disc("alarm", 2000)
  dm <- o$dm; dimnames(dm) <- NULL
  for (m in c("stable", "stable.fast")) {
    dis <- list(dm = dm, nlev = o$nlev, adaptDF = FALSE)
    bin <- list(dm = (dm > 0L) + 0L, adaptDF = TRUE)
    if (!gpu_usable()) {
      expect_error(gpupc::gpu_skeleton(dis, pcalg::disCItest, 0.01, p = ncol(dm), method = m, m.max = 3,
                                       backend = "cuda"), "CUDA|GPU|cuda|gpu")
      expect_error(gpupc::gpu_pc(bin, pcalg::binCItest, 0.01, p = ncol(dm), skel.method = m, m.max = 3,
                                 backend = "cuda"), "CUDA|GPU|cuda|gpu")
    } else {
      want <- pcalg::skeleton(dis, pcalg::disCItest, 0.01, p = ncol(dm), method = m, m.max = 3)
      got <- gpupc::gpu_skeleton(dis, pcalg::disCItest, 0.01, p = ncol(dm), method = m, m.max = 3, backend = "cuda")
      expect_same_pcalgo(got, want, 0.01, paste("cuda disCItest", m), strict_type = m == "stable.fast")
      want <- pcalg::skeleton(bin, pcalg::binCItest, 0.01, p = ncol(dm), method = m, m.max = 3)
      got <- gpupc::gpu_skeleton(bin, pcalg::binCItest, 0.01, p = ncol(dm), method = m, m.max = 3, backend = "cuda")
      expect_same_pcalgo(got, want, 0.01, paste("cuda binCItest", m), strict_type = m == "stable.fast")
    }
  }
  ## a user-supplied test never goes to the GPU: an error for "cuda", the CPU for "auto"
  wrap <- function(x, y, S, suffStat) pcalg::disCItest(x, y, S, suffStat)
  small <- list(dm = dm[1:300, 1:8], nlev = o$nlev[1:8], adaptDF = FALSE)
  expect_error(gpupc::gpu_skeleton(small, wrap, 0.01, p = 8, backend = "cuda"), "CUDA|GPU|cuda|gpu")
  r <- capture_all(gpupc::gpu_skeleton(small, wrap, 0.01, p = 8, backend = "auto", verbose = TRUE))
  expect_match(r$text, "user-supplied test runs on the CPU")
})

test_that("conservative / majority rule on discrete data with backend = 'cuda': the triple checks on the GPU, the CPU backend's answer", {
  skip_if_not(gpu_usable(), "no usable GPU")
  o <- load_disc("alarm", 2000)
  dm <- o$dm; dimnames(dm) <- NULL
  for (m in c("stable", "stable.fast")) {
    for (maj in c(FALSE, TRUE)) {
      for (ss in list(list(dm = dm, nlev = o$nlev, adaptDF = FALSE), list(dm = (dm > 0L) + 0L, adaptDF = TRUE))) {
        test <- if (is.null(ss$nlev)) pcalg::binCItest else pcalg::disCItest
        a <- list(ss, test, 0.05, p = ncol(dm), skel.method = m, m.max = 3, conservative = !maj, maj.rule = maj)
        got <- suppressWarnings(do.call(gpupc::gpu_pc, c(a, backend = "cuda")))
        ev <- gpupc::gpupc_last_run()$orient$stats
        expect_match(ev$evaluator, "^cuda")
        expect_gt(ev$tests, 0)
        # the skeleton's codes, still on its device, are what the checks ran on
        expect_true(ev$data_reused)
        cpu <- suppressWarnings(do.call(gpupc::gpu_pc, c(a, backend = "cpu")))
        expect_identical(got@graph, cpu@graph)
        expect_identical(gpupc::as_sepset_list(got), gpupc::as_sepset_list(cpu))
      }
    }
  }
})

test_that("conservative / majority rule on Gaussian data with backend = 'cuda': the skeleton's C reused, the CPU backend's answer", {
  skip_if_not(gpu_usable())
  set.seed(23)
  X <- pcalg::rmvDAG(400, pcalg::randomDAG(30, 0.15))
  for (ss in list(list(C = stats::cor(X), n = 400L), list(data = X))) {
    for (m in c("stable", "stable.fast")) for (maj in c(FALSE, TRUE)) {
      a <- list(ss, pcalg::gaussCItest, 0.05, p = ncol(X), skel.method = m, conservative = !maj, maj.rule = maj)
      got <- do.call(gpupc::gpu_pc, c(a, backend = "cuda"))
      ev <- gpupc::gpupc_last_run()$orient$stats
      expect_match(ev$evaluator, "^cuda")
      expect_true(ev$data_reused)
      cpu <- do.call(gpupc::gpu_pc, c(a, backend = "cpu"))
      expect_false(gpupc::gpupc_last_run()$orient$stats$data_reused)
      expect_identical(got@graph, cpu@graph)
      expect_identical(gpupc::as_sepset_list(got), gpupc::as_sepset_list(cpu))
    }
  }
})

test_that("backend = 'auto' runs (on the CPU without a GPU) and says so when verbose", {
  want <- pcalg::skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25)
  r <- capture_all(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = "auto",
                                       verbose = TRUE))
  expect_same_pcalgo(r$value, want, 0.01, "backend auto")
  if (!gpu_usable()) expect_match(r$text, "cpu|CPU")
  ## above the size where auto would try the GPU: without one, it falls back to the CPU
  big <- local({ set.seed(4); g <- pcalg::randomDAG(320, 1.5 / 319); d <- pcalg::rmvDAG(400, g)
                 list(C = stats::cor(d), n = 400L) })
  r <- capture_all(gpupc::gpu_skeleton(big, pcalg::gaussCItest, 0.01, p = 320, backend = "auto",
                                       method = "stable.fast", verbose = TRUE))
  expect_same_pcalgo(r$value, pcalg::skeleton(big, pcalg::gaussCItest, 0.01, p = 320, method = "stable.fast"),
                     0.01, "backend auto p = 320", strict_type = TRUE)
  r <- capture_all(gpupc::gpu_skeleton(big, pcalg::gaussCItest, 0.01, p = 320, backend = "auto",
                                       verbose = TRUE))
  if (!gpu_usable()) expect_match(r$text, "cpu|CPU")
})

test_that("options(gpupc.backend) is honoured", {
  op <- options(gpupc.backend = "cpu")
  on.exit(options(op), add = TRUE)
  r <- capture_all(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, verbose = TRUE))
  expect_match(r$text, "cpu|CPU")
  expect_same_pcalgo(r$value, pcalg::skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25), 0.01,
                     "option cpu")
  if (!gpu_usable()) {
    options(gpupc.backend = "cuda")
    expect_error(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25), "CUDA|GPU|cuda|gpu")
    expect_error(gpupc::gpu_pc(be_suff, pcalg::gaussCItest, 0.01, p = 25), "CUDA|GPU|cuda|gpu")
    ## an explicit argument wins over the option
    expect_s4_class(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = "cpu"), "pcAlgo")
  }
})

test_that("an unknown backend is an error naming the argument", {
  expect_error(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = "tpu"), "backend")
  expect_error(gpupc::gpu_pc(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = 1), "backend")
})

test_that("verbose = TRUE prints per-level 'Order=' lines and the backend", {
  for (m in c("stable", "stable.fast")) {
    r <- capture_all(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m,
                                         backend = "cpu", verbose = TRUE))
    want <- pcalg::skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m)
    expect_same_pcalgo(r$value, want, 0.01, paste("verbose", m), strict_type = m == "stable.fast")
    ## one "Order=" line per level run, from 0 to the last one
    lv <- as.integer(sub("Order ?= ?", "", regmatches(r$text, gregexpr("Order ?= ?[0-9]+", r$text))[[1]]))
    expect_true(length(lv) >= 1, label = paste("Order lines printed,", m))
    expect_identical(lv, seq_along(lv) - 1L, label = paste("levels 0,1,2,... in order,", m))
    expect_match(r$text, "cpu|CPU", label = paste("backend named,", m))
    ## and quiet when not verbose
    q <- capture_all(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.01, p = 25, method = m,
                                         backend = "cpu"))
    expect_identical(q$text, "", label = paste("silent without verbose,", m))
  }
  r <- capture_all(gpupc::gpu_pc(be_suff, pcalg::gaussCItest, 0.01, p = 25, backend = "cpu", verbose = TRUE))
  expect_match(r$text, "Order ?= ?0")
})

test_that("numCores: NULL, 1 and 2 give identical results; bad values are errors naming it", {
  for (m in c("stable", "stable.fast")) {
    a <- gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.05, p = 25, method = m)
    b <- gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.05, p = 25, method = m, numCores = 1)
    c2 <- gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.05, p = 25, method = m, numCores = 2L)
    expect_identical_pcalgo(a, b, paste("numCores NULL vs 1,", m))
    expect_identical_pcalgo(b, c2, paste("numCores 1 vs 2,", m))
    # pcalg accepts any numCores > 0: a fractional one runs floor(numCores) threads, at least 1
    expect_identical_pcalgo(b, gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.05, p = 25, method = m, numCores = 1.5),
                            paste("numCores 1 vs 1.5,", m))
    for (bad in list(0, -1, NA_real_, "two"))
      expect_error(gpupc::gpu_skeleton(be_suff, pcalg::gaussCItest, 0.05, p = 25, method = m, numCores = bad),
                   "numCores")
  }
})

test_that("a run long enough to show progress prints no errors and equals pcalg", {
  ## an R indepTest that takes over 1 ms a call: ~2500 calls, > 3 s, past cli's progress delay (2 s)
  set.seed(4711)
  g <- pcalg::randomDAG(15, 4 / 14)
  suff <- list(C = stats::cor(pcalg::rmvDAG(1000, g)), n = 1000L)
  slow <- function(x, y, S, suffStat) { Sys.sleep(0.0012); pcalg::gaussCItest(x, y, S, suffStat) }
  msg <- utils::capture.output(out <- utils::capture.output(
    got <- gpupc::gpu_skeleton(suff, slow, 0.05, p = 15, backend = "cpu")), type = "message")
  expect_false(any(grepl("Error|error", c(out, msg))), label = paste(c(out, msg), collapse = "\n"))
  want <- pcalg::skeleton(suff, pcalg::gaussCItest, 0.05, p = 15)
  expect_same_pcalgo(got, want, 0.05, "long run with progress")
})
