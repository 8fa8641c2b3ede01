# The kernel cache's folder and its management from R (the cache's own logic, with damaged and
# concurrent entries, a full disk and other versions, is tested in Rust: pc-cuda's kernel_cache).

test_that("the cache folder follows the option, then the environment, then R_user_dir", {
  dir_of <- gpupc:::kernel_cache_dir
  withr_opt <- function(value, code) {
    old <- options(gpupc.kernel_cache = value)
    on.exit(options(old))
    code
  }
  old_env <- Sys.getenv("GPUPC_KERNEL_CACHE", unset = NA)
  on.exit(if (is.na(old_env)) Sys.unsetenv("GPUPC_KERNEL_CACHE") else Sys.setenv(GPUPC_KERNEL_CACHE = old_env), add = TRUE)

  Sys.unsetenv("GPUPC_KERNEL_CACHE")
  expect_identical(withr_opt(NULL, dir_of()), tools::R_user_dir("gpupc", "cache"))
  Sys.setenv(GPUPC_KERNEL_CACHE = "/some/where")
  expect_identical(withr_opt(NULL, dir_of()), "/some/where")
  Sys.setenv(GPUPC_KERNEL_CACHE = "off")
  expect_identical(withr_opt(NULL, dir_of()), "")
  # the option wins over the environment
  expect_identical(withr_opt("/else/where", dir_of()), "/else/where")
  expect_identical(withr_opt("~/k", dir_of()), path.expand("~/k"))
  for (off in list(FALSE, "", "off")) expect_identical(withr_opt(off, dir_of()), "")
  for (bad in list(1, c("a", "b"), NA_character_, TRUE))
    expect_error(withr_opt(bad, dir_of()), "gpupc.kernel_cache", class = "gpupc_invalid_argument")
})

test_that("gpu_info() reports the cache and gpu_clear_cache() empties it of entries only", {
  dir <- file.path(tempfile("gpupc-kc-"), "nested")
  old <- options(gpupc.kernel_cache = dir)
  on.exit(options(old), add = TRUE)
  # not there yet: empty, and clearing it is harmless
  kc <- gpu_info()$kernel_cache
  expect_identical(kc$dir, dir)
  expect_equal(c(kc$entries, kc$bytes), c(0, 0))
  expect_identical(gpu_clear_cache(), 0L)

  dir.create(dir, recursive = TRUE)
  writeBin(as.raw(1:100), file.path(dir, "0.1.0-gauss-base-0123456789abcdef.kcache"))
  writeBin(as.raw(1:50), file.path(dir, "0.0.9-gsquare-0123456789abcdef.kcache"))
  writeLines("a file of the user's", file.path(dir, "notes.txt"))
  kc <- gpu_info()$kernel_cache
  expect_equal(c(kc$entries, kc$bytes), c(2, 150))
  expect_identical(gpu_clear_cache(), 2L)
  expect_equal(gpu_info()$kernel_cache$entries, 0)
  expect_true(file.exists(file.path(dir, "notes.txt")))

  options(gpupc.kernel_cache = FALSE)
  expect_identical(gpu_info()$kernel_cache$dir, "")
  expect_identical(gpu_clear_cache(), 0L)
})

test_that("a cache folder that cannot be created does not stop a run", {
  blocker <- tempfile("gpupc-kc-file-")
  writeLines("x", blocker)
  old <- options(gpupc.kernel_cache = file.path(blocker, "cache"))
  on.exit(options(old), add = TRUE)
  set.seed(1)
  X <- matrix(rnorm(200 * 5), 200)
  # the CPU backend compiles nothing; with a GPU the kernels are compiled in memory, with a message
  fit <- suppressMessages(gpu_pc(list(C = cor(X), n = 200), pcalg::gaussCItest, 0.05, p = 5, numCores = 1))
  ref <- pcalg::pc(list(C = cor(X), n = 200), pcalg::gaussCItest, 0.05, p = 5)
  expect_identical(as(fit@graph, "matrix"), as(ref@graph, "matrix"))
  expect_equal(gpu_info()$kernel_cache$entries, 0)
})
