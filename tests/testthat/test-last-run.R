test_that("gpupc_last_run() reports the backend, the levels and where the time went", {
  set.seed(3)
  d <- pcalg::rmvDAG(300, pcalg::randomDAG(12, 0.3))
  suff <- list(C = cor(d), n = nrow(d))
  sk <- gpu_skeleton(suff, pcalg::gaussCItest, 0.01, p = 12, backend = "cpu", numCores = 1)
  lr <- gpupc_last_run()
  expect_match(lr$backend, "^cpu")
  expect_identical(lr$levels$level, seq(0L, sk@max.ord))
  expect_identical(sum(lr$levels$tests), sum(sk@n.edgetests))
  expect_named(lr$phases, c("r_checks_s", "input_s", "setup_s", "search_s", "r_output_s", "graph_object_s", "sepset_s",
                           "r_gc_s"))
  expect_true(all(is.finite(lr$phases) & lr$phases >= 0))
  expect_gte(lr$phases[["search_s"]], sum(lr$levels$seconds) * 0.99)
})

test_that("r_gc_s leaves gc.time() switched as it was", {
  set.seed(4)
  d <- pcalg::rmvDAG(200, pcalg::randomDAG(10, 0.3))
  suff <- list(C = cor(d), n = nrow(d))
  call <- function() gpu_skeleton(suff, pcalg::gaussCItest, 0.01, p = 10, backend = "cpu", numCores = 1)
  # off before the call (its counts stopped where gpupc switched it off, or never started): off
  # after it, also after an error
  call()
  sk <- call()
  expect_true(gpupc_last_run()$phases[["r_gc_s"]] >= 0)
  invisible(gc())
  expect_identical(gc.time(FALSE), gpupc:::.gpupc_state$gc_off_at)
  expect_error(gpu_skeleton(suff, pcalg::gaussCItest, 2, p = 10, backend = "cpu"))
  invisible(gc())
  expect_identical(gc.time(FALSE), gpupc:::.gpupc_state$gc_off_at)
  # on before the call (and counting): still counting after it
  invisible(gc.time(TRUE))
  invisible(gc())
  start <- gc.time(TRUE)[[3]]
  sk <- call()
  expect_true("r_gc_s" %in% names(gpupc_last_run()$phases))
  for (i in 1:3) invisible(gc())
  counted <- gc.time(TRUE)[[3]] - start - gpupc_last_run()$phases[["r_gc_s"]]
  invisible(gc.time(FALSE))
  expect_gt(counted, 0)
})
