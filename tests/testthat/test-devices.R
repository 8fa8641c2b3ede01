## devices = (several GPUs): gpu_info() lists them, bad values are refused naming the argument,
## and a run on every usable device equals one device's run and pcalg.

skip_if(selftest())

dv_suff <- local({
  set.seed(4242)
  g <- pcalg::randomDAG(30, 3 / 29)
  d <- pcalg::rmvDAG(400, g)
  list(C = stats::cor(d), n = 400L)
})

test_that("gpu_info() lists every usable device in a data frame", {
  info <- gpupc::gpu_info()
  if (!isTRUE(info$usable)) {
    expect_null(info$devices)
  } else {
    expect_s3_class(info$devices, "data.frame")
    expect_true(nrow(info$devices) >= 1)
    expect_true(all(c("device", "name", "memory_bytes", "free_bytes", "compute_capability",
                      "multiprocessors") %in% names(info$devices)))
    expect_false(anyDuplicated(info$devices$device) > 0)
  }
})

test_that("bad devices are refused with an error naming the argument", {
  bad <- list("a", -1, 1.5, c(0, 0), NA_real_, numeric(0), Inf, TRUE)
  for (d in bad) {
    expect_error(gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda", devices = d),
                 class = "gpupc_invalid_argument", info = deparse(d))
    expect_error(gpupc::gpu_pc(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda", devices = d),
                 "devices", info = deparse(d))
  }
  # devices with the CPU backend is a contradiction, not silently ignored
  expect_error(gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cpu", devices = 0),
               class = "gpupc_invalid_argument")
  # a device that does not exist (or no GPU at all) names it
  err <- tryCatch(gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda", devices = 977),
                  error = function(e) e)
  expect_s3_class(err, "gpupc_invalid_argument")
  expect_match(conditionMessage(err), "977")
})

test_that("the default (every usable device) keeps gpu_pc() a drop-in with pcalg's arguments", {
  want <- pcalg::pc(dv_suff, pcalg::gaussCItest, 0.01, p = 30)
  got <- gpupc::gpu_pc(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cpu")
  expect_same_pcalgo(got, want, 0.01, "devices default, cpu")
  expect_identical(names(formals(pcalg::pc)), names(formals(gpupc::gpu_pc))[seq_along(formals(pcalg::pc))])
})

test_that("every usable device gives one device's result, Gaussian and discrete", {
  info <- gpupc::gpu_info()
  skip_if_not(isTRUE(info$usable), "no usable GPU")
  all <- info$devices$device
  want <- pcalg::skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30)
  one <- gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda", devices = all[1])
  every <- gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda")
  expect_same_pcalgo(one, want, 0.01, "one device")
  expect_identical(every@pMax, one@pMax)
  expect_identical(every@sepset, one@sepset)
  expect_identical(every@n.edgetests, one@n.edgetests)
  # gaussCItest's other GPUs join only a large level: none here, and gpupc_last_run() says so
  lr <- gpupc::gpupc_last_run()
  expect_equal(lr$devices, all[1])
  if (length(all) > 1) expect_match(lr$devices_why, "not needed: no level was large enough")
  forced <- gpupc::gpu_skeleton(dv_suff, pcalg::gaussCItest, 0.01, p = 30, backend = "cuda", devices = all)
  expect_identical(forced@pMax, one@pMax)
  expect_identical(forced@sepset, one@sepset)
  expect_equal(gpupc::gpupc_last_run()$devices, all)
})

test_that("the default devices follow the work: one GPU for small work, every GPU for large", {
  two <- c(0L, 1L)
  pick <- function(...) gpupc:::choose_devices(NULL, ..., usable = two)
  # gaussCItest: every GPU, the others joining the first at a large level (its time is mostly
  # not the kernels' until then), and says so
  for (p in c(50, 20000, 60000)) {
    d <- pick("gauss", p)
    expect_equal(d$devices, two)
    expect_match(d$why, "^2 GPUs: the first runs the levels alone, the others join at the first level >= 2 of >= 4e\\+09 tests")
  }
  # G^2 tests by n p^2 / 2
  expect_equal(pick("dis", 1e9)$devices, 0L)
  expect_match(pick("bin", 1e9)$why, "small for several GPUs")
  expect_equal(pick("dis", 5.4e11)$devices, two)
  expect_equal(pick("dis", NA_real_)$devices, 0L)
  # CMI-kNN tests are compute-bound: every GPU
  expect_equal(pick("cmiknn", Inf)$devices, two)
  # junction-tree batches by evidence sets
  expect_equal(pick("jtree", 100)$devices, 0L)
  expect_equal(pick("jtree", 1e5)$devices, two)
  # named devices are used as given, checked against the usable ones
  expect_equal(gpupc:::choose_devices(c(1L, 0L), "gauss", 50, usable = two), list(devices = c(1L, 0L), why = "asked for"))
  expect_error(gpupc:::choose_devices(3L, "gauss", 50, usable = two), class = "gpupc_invalid_argument")
  # one usable GPU, or none
  expect_equal(gpupc:::choose_devices(NULL, "dis", 1e12, usable = 0L)$devices, 0L)
  expect_null(gpupc:::choose_devices(NULL, "dis", 1e12, usable = integer(0))$devices)
})
