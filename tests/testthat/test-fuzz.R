## Fuzz: generated inputs across every argument and suffStat field (fuzz/generate.R), each run by
## pcalg and by gpupc in child R processes of about ten inputs each (fuzz/run-batch.R), under a
## time limit, so a crash or a hang is seen: a case with no verdict file crashed or hung its
## child. Every case must give pcalg's result (or an error from both), or, for gpupc's documented
## refusals, an error naming the argument (and where pcalg's C++ fails on a data-frame C, pcalg's
## result for as.matrix(C)). Crashes, hangs and silent differences must be 0.
## The default runs the first 80 of the 220 generated inputs, the extended mode the other 140 of
## the same stream (helper-extended.R); at least 100 in 220 must give pcalg's result and 10 in 220
## a refusal, in proportion for each part.

skip_if(selftest())
skip_on_os("windows")
skip_if(!nzchar(Sys.which("timeout")), "needs coreutils' timeout")

fuzz_ids <- sweep_cases(220, 80)
n_fuzz <- length(fuzz_ids)

test_that(sprintf("generated inputs (%s): no crash, no hang, no difference from pcalg", sweep_label(fuzz_ids, 220)), {
  here <- test_path("fuzz")
  source(file.path(here, "generate.R"), local = TRUE)
  cases <- fuzz_cases(max(fuzz_ids, 0))[fuzz_ids]
  dir <- tempfile("gpupc-fuzz-")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE))
  saveRDS(cases, file.path(dir, "cases.rds"))
  batches <- split(seq_along(cases), ceiling(seq_along(cases) / 10))
  # the children find this very gpupc (testthat may have loaded it from a temporary library)
  libs <- paste(unique(c(dirname(getNamespaceInfo("gpupc", "path")), .libPaths())), collapse = ":")
  rscript <- file.path(R.home("bin"), "Rscript")
  t0 <- Sys.time()
  status <- parallel::mclapply(batches, function(b) {
    system2("timeout", c("120", shQuote(rscript), "--vanilla", shQuote(file.path(here, "run-batch.R")),
                         file.path(dir, "cases.rds"), min(b), max(b), dir),
            env = paste0("R_LIBS=", libs), stdout = FALSE, stderr = FALSE)
  }, mc.cores = 2)
  secs <- as.numeric(Sys.time() - t0, units = "secs")
  verdicts <- vapply(seq_along(cases), function(id) {
    f <- file.path(dir, sprintf("%04d.rds", id))
    if (file.exists(f)) readRDS(f)$verdict else "crashed or hung"
  }, "")
  tab <- table(sub(":.*", "", verdicts))
  message(sprintf("fuzz: %d inputs in %.0f s: %s", length(cases), secs,
                  paste(names(tab), tab, sep = " = ", collapse = ", ")))
  ok <- verdicts %in% c("same", "both error", "refused")
  expect_gte(sum(verdicts == "same"), ceiling(100 * n_fuzz / 220))
  expect_gte(sum(verdicts == "refused"), ceiling(10 * n_fuzz / 220))
  for (id in which(!ok))
    fail(sprintf("fuzz case %d (%s, test %s, %s): %s", cases[[id]]$id, cases[[id]]$fun, cases[[id]]$test,
                 deparse1(cases[[id]]$args[setdiff(names(cases[[id]]$args), c("fixedGaps", "fixedEdges"))]),
                 verdicts[id]))
  expect_true(all(ok))
})
