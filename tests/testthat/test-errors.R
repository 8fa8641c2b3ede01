## One boundary: every Rust error reaches R as one classed condition, raised by rust_value()
## (R/errors.R) from the list of src/rust/crates/gpupc-r/src/rerror.rs, with the argument it names.

rust_err <- function(kind, message, arg = NULL) structure(list(kind = kind, message = message, arg = arg), class = "gpupc_rust_error")

test_that("a value passes through, an error list becomes the condition of its kind", {
  expect_identical(gpupc:::rust_value(list(a = 1)), list(a = 1))
  e <- tryCatch(gpupc:::rust_value(rust_err("invalid", "must be positive", "alpha")), error = function(e) e)
  expect_s3_class(e, "gpupc_invalid_argument")
  expect_s3_class(e, "gpupc_error")
  expect_match(conditionMessage(e), "alpha.*must be positive")
  e <- tryCatch(gpupc:::rust_value(rust_err("device_memory", "cannot allocate 3 GB on the GPU", "suffStat$C")), error = function(e) e)
  expect_true(all(c("gpupc_memory_error", "gpupc_cuda_error", "gpupc_device_memory_error") %in% class(e)))
  expect_match(conditionMessage(e), "suffStat\\$C.*cannot allocate")
  e <- tryCatch(gpupc:::rust_value(rust_err("cuda", "CUDA backend: GPU 1: launching k")), error = function(e) e)
  expect_s3_class(e, "gpupc_cuda_error")
  expect_match(conditionMessage(e), "GPU 1")
  e <- tryCatch(gpupc:::rust_value(rust_err("test", "boom")), error = function(e) e)
  expect_s3_class(e, "gpupc_test_error")
  expect_match(conditionMessage(e), "indepTest")
  # an interrupt (Ctrl-C in the native path) is R's interrupt, not an error: try() does not swallow it
  got <- tryCatch(gpupc:::rust_value(rust_err("interrupt", "interrupted by the user")),
                  interrupt = function(i) "interrupt", error = function(e) "error")
  expect_identical(got, "interrupt")
})

test_that("errors made in Rust carry their kind and argument", {
  ev <- list(hard = matrix(-1L, 1, 1), soft_col = -1L, soft = matrix(0, 1, 0), rows = 1L)
  query <- list(what = "marginal", backend = "cpu", threads = 1L, memory_gb = 4, devices = NULL, nodes = NULL, dimnames = NULL)
  e <- tryCatch(gpupc:::rs_jt_query(NULL, ev, query), error = function(e) e)
  expect_s3_class(e, "gpupc_invalid_argument")
  expect_match(conditionMessage(e), "jt.*not a compiled junction tree")
  e <- tryCatch(gpupc:::rs_device_plan("gauss", 55572, 0, 2^30), error = function(e) e)
  expect_s3_class(e, "gpupc_memory_error")
  expect_match(conditionMessage(e), "suffStat\\$C")
})

test_that("a call's settings list that lacks an element or has one of the wrong type is an internal error", {
  args <- gpupc:::skeleton_args(5, 0.05, NULL, NULL, FALSE, Inf, "stable", 1)
  data <- list(C = diag(5), n = 100)
  expect_identical(dim(gpupc:::rs_skeleton("gauss", data, args, "cpu", list())$pMax), c(5L, 5L))
  e <- tryCatch(gpupc:::rs_skeleton("gauss", data, args[names(args) != "alpha"], "cpu", list()), error = function(e) e)
  expect_s3_class(e, "gpupc_internal_error")
  expect_match(conditionMessage(e), "lack `alpha`")
  bad <- args
  bad$order <- 1
  e <- tryCatch(gpupc:::rs_skeleton("gauss", data, bad, "cpu", list()), error = function(e) e)
  expect_s3_class(e, "gpupc_internal_error")
  expect_match(conditionMessage(e), "`order` must be a string")
})

test_that("a GPU failure falls back to the CPU with a message only where asked", {
  run <- function(b, devices) if (b == "cuda") gpupc:::rust_value(rust_err("cuda", "GPU 0: failed")) else "cpu result"
  expect_message(got <- gpupc:::with_cpu_fallback(run, "cuda", fallback = TRUE), "GPU failed.*GPU 0.*running on the CPU instead")
  expect_identical(got, "cpu result")
  expect_error(gpupc:::with_cpu_fallback(run, "cuda", fallback = FALSE), class = "gpupc_cuda_error")
  # other errors are never retried on the CPU
  bad <- function(b, devices) gpupc:::rust_value(rust_err("invalid", "must be a matrix", "suffStat$C"))
  expect_error(gpupc:::with_cpu_fallback(bad, "cuda", fallback = TRUE), class = "gpupc_invalid_argument")
})

test_that("a failing GPU among several is left out, then the CPU runs", {
  tried <- list()
  # the device at place `attr(.., "device")` of the call's GPUs fails: GPU 3, then GPU 0
  run <- function(b, devices) {
    tried[[length(tried) + 1]] <<- list(b, devices)
    if (b == "cpu") return("cpu result")
    if (3 %in% devices) return(gpupc:::rust_value(structure(rust_err("cuda", "CUDA backend: GPU 3: broken"), device = match(3, devices))))
    if (length(devices) > 1) return(gpupc:::rust_value(structure(rust_err("cuda", "CUDA backend: GPU 0: broken"), device = 1L)))
    paste("ran on", devices)
  }
  msgs <- character(0)
  got <- withCallingHandlers(gpupc:::with_cpu_fallback(run, "cuda", TRUE, c(0, 3, 5)),
                             message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") })
  expect_identical(got, "ran on 5")
  expect_identical(lapply(tried, `[[`, 2), list(c(0, 3, 5), c(0, 5), 5))
  expect_match(msgs[1], "GPU 3: broken.*running on GPUs 0, 5 instead")
  expect_match(msgs[2], "GPU 0: broken.*running on GPU 5 instead")
  # the condition carries the device's place
  e <- tryCatch(run("cuda", c(3, 1)), error = identity)
  expect_identical(e$device, 1L)
  # the last GPU failing: the CPU
  tried <- list()
  expect_message(got <- gpupc:::with_cpu_fallback(run, "cuda", TRUE, 3), "running on the CPU instead")
  expect_identical(got, "cpu result")
})

test_that("a skeleton whose GPU fails under backend = 'auto' runs on the CPU, with the same message", {
  skip_if(isTRUE(gpupc::gpu_info()$usable), "a usable GPU does not fail")
  data <- list(C = diag(5), n = 100)
  hooks <- gpupc:::level_hooks(FALSE, "stable", "cuda")
  for (fallback in c(TRUE, FALSE)) {
    args <- gpupc:::skeleton_args(5, 0.05, NULL, NULL, FALSE, Inf, "stable", 1, fallback = fallback)
    if (fallback) {
      res <- gpupc:::rs_skeleton("gauss", data, args, "cuda", hooks)
      expect_match(res$backend, "^cpu")
      expect_identical(res$pMax, gpupc:::rs_skeleton("gauss", data, args, "cpu", hooks)$pMax)
      expect_length(res$gpu_failed, 1)
      expect_s3_class(res$gpu_failed[[1]]$failure, "gpupc_rust_error")
      expect_length(res$gpu_failed[[1]]$devices, 0)
      expect_null(res$devices_left)
      expect_message(gpupc:::gpu_fallback_messages(res$gpu_failed), "^gpupc: the GPU failed \\(gpupc: CUDA.*\\); running on the CPU instead")
    } else {
      expect_error(gpupc:::rs_skeleton("gauss", data, args, "cuda", hooks), class = "gpupc_cuda_error")
    }
  }
  dm <- matrix(c(0L, 1L), 40, 3)
  args <- gpupc:::skeleton_args(3, 0.05, NULL, NULL, FALSE, Inf, "stable", 1, fallback = TRUE)
  res <- gpupc:::rs_skeleton("dis", list(dm = dm, nlev = c(2L, 2L, 2L), adaptDF = FALSE), args, "cuda", hooks)
  expect_match(res$backend, "^cpu")
  expect_identical(res$gpu_failed[[1]]$failure$kind, "cuda")
})

test_that("no R code of the package reads an error list", {
  ns <- asNamespace("gpupc")
  src <- unlist(lapply(ls(ns, all.names = TRUE), function(n) {
    f <- get(n, ns)
    if (is.function(f)) deparse(f) else character(0)
  }))
  expect_false(any(grepl("$error", src, fixed = TRUE)))
  expect_false(any(grepl("sub(\"^invalid argument", src, fixed = TRUE)))
})
