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
  e <- tryCatch(gpupc:::rs_jt_query(NULL, matrix(-1L, 1, 1), -1L, matrix(0, 1, 0), 1L, "marginal", "cpu", 1L, 4, NULL, NULL),
                error = function(e) e)
  expect_s3_class(e, "gpupc_invalid_argument")
  expect_match(conditionMessage(e), "jt.*not a compiled junction tree")
  e <- tryCatch(gpupc:::rs_device_plan("gauss", 55572, 0, 2^30), error = function(e) e)
  expect_s3_class(e, "gpupc_memory_error")
  expect_match(conditionMessage(e), "suffStat\\$C")
})

test_that("a GPU failure falls back to the CPU with a message only where asked", {
  run <- function(b) if (b == "cuda") gpupc:::rust_value(rust_err("cuda", "GPU 0: failed")) else "cpu result"
  expect_message(got <- gpupc:::with_cpu_fallback(run, "cuda", fallback = TRUE), "GPU failed.*GPU 0")
  expect_identical(got, "cpu result")
  expect_error(gpupc:::with_cpu_fallback(run, "cuda", fallback = FALSE), class = "gpupc_cuda_error")
  # other errors are never retried on the CPU
  bad <- function(b) gpupc:::rust_value(rust_err("invalid", "must be a matrix", "suffStat$C"))
  expect_error(gpupc:::with_cpu_fallback(bad, "cuda", fallback = TRUE), class = "gpupc_invalid_argument")
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
