## Progress and interrupts of junction-tree batches and of the triple checks, on the CPU: the
## hooks Rust calls on R's thread between chunks get increasing counts up to the total, and a
## FALSE from them (what Ctrl-C does) stops the work with R's interrupt, which try() lets through.

# hooks that record every tick and answer FALSE at tick `stop_at`
recording_hooks <- function(stop_at = Inf) {
  seen <- new.env()
  seen$ticks <- matrix(numeric(0), 0, 2)
  list(tick = function(done, total) {
         seen$ticks <- rbind(seen$ticks, c(done, total))
         nrow(seen$ticks) < stop_at
       },
       done = function() NULL, seen = seen)
}

expect_counts_to_total <- function(ticks, total) {
  expect_gte(nrow(ticks), 2)
  expect_true(all(diff(ticks[, 1]) >= 0))
  expect_true(all(ticks[, 2] == total))
  expect_identical(ticks[nrow(ticks), 1], as.double(total))
}

expect_interrupt <- function(expr) {
  got <- tryCatch(try(expr, silent = TRUE), interrupt = function(i) "interrupt", error = function(e) "error")
  expect_identical(got, "interrupt")
}

test_that("a junction-tree batch reports its evidence sets between chunks and stops when asked", {
  skip_if_not_installed("bnlearn")
  jt <- gpu_jtree(jt_network_path("insurance"), backend = "cpu", numCores = 2)
  ev <- lapply(1:2, function(i) rep(c(jt$states[[i]], NA), length.out = 30))
  ev <- gpupc:::jt_evidence(jt, stats::setNames(data.frame(ev), jt$nodes[1:2]))
  # chunks of 7 evidence sets (of 0.5 MB: the query's memory is at least 1 MB)
  gb <- 7 * jt$stats$bytes_per_evidence_set / 1e9
  for (what in c("marginal", "mpe")) {
    h <- recording_hooks()
    got <- gpupc:::jt_run(jt, ev, what, "cpu", hooks = h, memory_gb = gb)
    expect_identical(h$seen$ticks[, 1], c(0, 7, 14, 21, 28, 30))
    expect_counts_to_total(h$seen$ticks, 30)
    want <- gpupc:::jt_run(jt, ev, what, "cpu")
    got$seconds <- want$seconds <- got$results_seconds <- want$results_seconds <- NULL
    expect_identical(got, want)
    expect_interrupt(gpupc:::jt_run(jt, ev, what, "cpu", hooks = recording_hooks(stop_at = 3), memory_gb = gb))
  }
})

test_that("the triple checks report their tests and stop when asked, natively and through pcalg", {
  skip_if_not_installed("pcalg")
  data("gmG", package = "pcalg", envir = environment())
  ss <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
  sk <- gpu_skeleton(ss, pcalg::gaussCItest, 0.01, labels = colnames(gmG8$x), backend = "cpu", numCores = 2)
  rtest <- function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat)
  for (test in list(pcalg::gaussCItest, rtest)) {
    h <- recording_hooks()
    got <- gpupc:::orient_pcalgo(sk, ss, test, 0.01, rule = "conservative", numCores = 2, hooks = h)
    want <- gpupc:::orient_pcalgo(sk, ss, test, 0.01, rule = "conservative", numCores = 2)
    expect_identical(got$pcalgo, want$pcalgo)
    ticks <- h$seen$ticks
    expect_counts_to_total(ticks, ticks[1, 2])
    # natively each distinct test runs once; pcalg runs every triple's
    if (!is.null(got$info$stats$tests) && got$info$stats$tests > 0) expect_identical(ticks[1, 2], got$info$stats$tests)
    expect_interrupt(gpupc:::orient_pcalgo(sk, ss, test, 0.01, rule = "conservative", numCores = 2,
                                           hooks = recording_hooks(stop_at = 2)))
  }
})
